/*
 * spmd_check.c - the agreement check every collective starts with
 * (spmd_check.h says why).
 */
#include "core/spmd_check.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

#define DESC_MAGIC 0x444c4143u /* "DLAC" */

static const char *kind_name(int32_t kind)
{
    switch (kind) {
    case DLA__COLL_ALLREDUCE: return "dla_allreduce";
    case DLA__COLL_BROADCAST: return "dla_broadcast";
    case DLA__COLL_ALLGATHER: return "dla_allgather";
    case DLA__COLL_ALL: return "dla_spmd_all";
    case DLA__COLL_ANY: return "dla_spmd_any";
    case DLA__COLL_BARRIER: return "dla_spmd_barrier";
    case DLA__COLL_QUEUE_CREATE: return "dla_dataqueue_create";
    case DLA__COLL_QUEUE_FREE: return "dla_dataqueue_free";
    case DLA__COLL_ALLREDUCE_START: return "dla_allreduce_start";
    case DLA__COLL_DEVICE_JOIN: return "the join of a device's collectives";
    default: return "an unknown collective";
    }
}

static const char *op_name(int32_t op)
{
    static const char *const names[] = {
#define DLA__NAME(name, str) str,
        DLA_REDUCE_LIST(DLA__NAME)
#undef DLA__NAME
    };
    return op >= 0 && op < DLA_REDUCE_COUNT ? names[op] : "?";
}

void dla__coll_rec_of(const dla_tensor *t, int with_format, dla__coll_rec *r)
{
    memset(r, 0, sizeof *r);
    r->dtype = (int32_t)t->dtype;
    int nd = t->ndims;
    while (nd > 0 && t->dims[nd - 1] == 1)
        nd--;
    r->ndims = nd;
    for (int i = 0; i < nd; i++)
        r->dims[i] = t->dims[i];
    /* The labels of the dims compared: "CB" of 10x1 is "C", as the
     * sizes are 10. */
    for (int i = 0; with_format && i < nd && t->format[i]; i++)
        r->format[i] = t->format[i];
}

void dla__coll_local_error(dla__coll_desc *mine)
{
    mine->local_error = (int32_t)dla_last_status();
    if (mine->local_error == DLA_OK)
        mine->local_error = DLA_ERR_INVALID_ARGUMENT;
    snprintf(mine->why, sizeof mine->why, "%s", dla_last_error());
}

/* FNV-1a of bytes after h. */
#define FNV_START 1469598103934665603ull
static uint64_t fnv(uint64_t h, const void *bytes, size_t size)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < size; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Over the records: equal records, equal digests. */
static uint64_t digest_of(const dla__coll_rec *recs, int n)
{
    return fnv(FNV_START, recs, (size_t)n * sizeof *recs);
}

/* "single 1000x3", with its labels when with_format ("single 3x2
 * (format CB)", "single 3x2 (unformatted)"). */
static void rec_str(const dla__coll_rec *r, int with_format, char *buf, size_t size)
{
    char dims[DLA__DIMS_BUF];
    int64_t d[DLA_MAX_DIMS];
    int nd = r->ndims;
    for (int i = 0; i < nd; i++)
        d[i] = r->dims[i];
    if (nd == 0) {
        d[0] = 1;
        nd = 1;
    }
    char fmt[DLA_MAX_DIMS + 1] = "";
    memcpy(fmt, r->format, sizeof r->format);
    snprintf(buf, size, "%s %s%s%s%s", dla_dtype_name((dla_dtype)r->dtype),
             dla__dims_str(dims, sizeof dims, nd, d), !with_format ? "" : *fmt ? " (format " : " (unformatted",
             with_format ? fmt : "", with_format ? ")" : "");
}

/* The message of tensor k differing between rank r (b) and rank 0 (a):
 * their formats are named when that is where they differ. */
static dla_status tensor_differs(const char *op, int k, int r, const dla__coll_rec *a,
                                 const dla__coll_rec *b)
{
    char sa[DLA__DIMS_BUF + 48], sb[DLA__DIMS_BUF + 48];
    const int formats = memcmp(a->format, b->format, sizeof a->format) != 0;
    rec_str(a, formats, sa, sizeof sa);
    rec_str(b, formats, sb, sizeof sb);
    return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                     "%s: tensor %d differs across ranks: rank %d passed %s where rank 0 "
                     "passed %s (every rank passes the same count, dtypes, sizes and formats)",
                     op, k, r, sb, sa);
}

/* The records of every rank, to name the tensor that differs (only on
 * the error path: every rank gets here together, as every rank saw the
 * same digests). */
static dla_status name_the_tensor(dla__spmd *w, const char *op, const dla__coll_rec *recs,
                                  int count)
{
    int size = w->world.size;
    dla__coll_rec *all = dla__calloc((size_t)size * (size_t)count, sizeof *all);
    if (!all)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY,
                         "%s: the ranks passed different tensors (out of memory naming which)", op);
    dla_comm_req req;
    dla_status st = w->p->allgather(w->ctx, recs, (size_t)count * sizeof *recs, all, 0, &req);
    if (st == DLA_OK)
        st = dla__spmd_wait(w, op, req, 1);
    if (st != DLA_OK) {
        if (!w->broken)
            dla__free(all);
        else if (w->abandoned_req && !w->abandoned_buf)
            w->abandoned_buf = all; /* still the transport's to write */
        return st;
    }
    for (int r = 1; r < size; r++)
        for (int k = 0; k < count; k++) {
            const dla__coll_rec *a = &all[k], *b = &all[(size_t)r * (size_t)count + (size_t)k];
            if (!memcmp(a, b, sizeof *a))
                continue;
            dla__coll_rec ra = *a, rb = *b;
            dla__free(all);
            return tensor_differs(op, k, r, &ra, &rb);
        }
    dla__free(all);
    return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: the ranks passed different tensors", op);
}

/* Taken by the next descriptor this thread prepares. */
static _Thread_local uint64_t next_layout;

void dla__spmd_note_layout(int n, dla_tensor *const *x, int64_t whole)
{
    uint64_t h = fnv(FNV_START, &whole, sizeof whole);
    for (int i = 0; i < n; i++) {
        dla__coll_rec r;
        dla__coll_rec_of(x[i], 1, &r);
        h = fnv(h, &r, sizeof r);
    }
    next_layout = h | 1; /* 0 is a plain collective's */
}

void dla__coll_prepare(dla__spmd *w, dla__coll_desc *mine, const dla__coll_rec *recs)
{
    w->seq++;
    mine->layout = next_layout;
    next_layout = 0;
    mine->magic = DESC_MAGIC;
    mine->seq = w->seq;
    mine->digest = mine->local_error || !recs ? 0 : digest_of(recs, mine->count);
    memset(mine->recs, 0, sizeof mine->recs);
    for (int k = 0; !mine->local_error && recs && k < mine->count && k < DLA__COLL_RECS; k++)
        mine->recs[k] = recs[k];
}

/* Every rank's descriptor against rank 0's; *differ: the digests differ
 * (the tensors), everything else agreeing. */
static dla_status compare(dla__spmd *w, const char *op, const dla__coll_desc *all, int *differ)
{
    int size = w->world.size;
    dla_status st = DLA_OK;
    *differ = 0;
    /* Compared in rank order against rank 0, so every rank finds the same
     * first difference. */
    const dla__coll_desc *z = &all[0];
    for (int r = 0; r < size && st == DLA_OK; r++) {
        const dla__coll_desc *d = &all[r];
        if (d->magic != DESC_MAGIC)
            st = dla__fail(DLA_ERR_STATE, "%s: rank %d sent no collective descriptor (is it "
                                          "another program's MPI traffic?)", op, r);
        else if (d->local_error)
            st = dla__fail((dla_status)d->local_error, "%s: rank %d refused its arguments: %.200s",
                           op, r, d->why);
    }
    for (int r = 1; r < size && st == DLA_OK; r++) {
        const dla__coll_desc *d = &all[r];
        if (d->seq != z->seq || d->kind != z->kind)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: rank %d called %s as its collective #%llu where rank 0 called %s "
                           "as its #%llu (every rank calls the same collectives in the same order)",
                           op, r, kind_name(d->kind), (unsigned long long)d->seq,
                           kind_name(z->kind), (unsigned long long)z->seq);
        else if (d->count != z->count)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: rank %d passed %d tensor(s) where rank 0 passed %d", op, r,
                           d->count, z->count);
        else if (d->op != z->op)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: rank %d asked for %s where rank 0 asked for %s", op, r,
                           op_name(d->op), op_name(z->op));
        else if (d->root != z->root)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: rank %d named root %d where rank 0 named root %d", op, r, d->root,
                           z->root);
        else if (d->layout != z->layout)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: rank %d packed tensors of other sizes or formats or in another "
                           "order than rank 0 into this reduction, or passed another number of "
                           "tensors to the call (dla_spmd_combine and trainnet's gradients: every "
                           "rank passes the same tensors, dtypes, sizes and formats, in the same "
                           "order)", op, r);
    }
    for (int r = 1; r < size && st == DLA_OK; r++)
        *differ |= all[r].digest != z->digest;
    return st;
}

dla_status dla__coll_judge(dla__spmd *w, const char *op, const dla__coll_desc *all)
{
    int differ = 0;
    dla_status st = compare(w, op, all, &differ);
    if (st != DLA_OK || !differ)
        return st;
    const dla__coll_desc *z = &all[0];
    for (int r = 1; r < w->world.size; r++) {
        if (all[r].digest == z->digest)
            continue;
        for (int k = 0; k < z->count && k < DLA__COLL_RECS; k++)
            if (memcmp(&z->recs[k], &all[r].recs[k], sizeof z->recs[k]))
                return tensor_differs(op, k, r, &z->recs[k], &all[r].recs[k]);
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: rank %d passed tensors whose dtypes, sizes or formats differ from "
                         "rank 0's past the first %d (every rank passes the same count, dtypes, "
                         "sizes and formats)",
                         op, r, DLA__COLL_RECS);
    }
    return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: the ranks passed different tensors", op);
}

dla_status dla__coll_enter(dla__spmd *w, const char *op, dla__coll_desc *mine,
                           const dla__coll_rec *recs, dla__coll_desc **all_out)
{
    if (all_out)
        *all_out = NULL;
    dla_status st = dla__spmd_check_broken(w, op);
    if (st != DLA_OK)
        return st;
    dla__coll_prepare(w, mine, recs);
    int size = w->world.size;
    dla__coll_desc *all = dla__calloc((size_t)size, sizeof *all);
    if (!all && !mine->local_error) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for the argument check", op);
        dla__coll_local_error(mine);
    }
    if (!w->p) {
        if (mine->local_error) {
            dla__free(all);
            return (dla_status)mine->local_error; /* its message is the last error */
        }
        all[0] = *mine;
        if (all_out)
            *all_out = all;
        else
            dla__free(all);
        return DLA_OK;
    }
    if (!all) {
        /* Without room for the answers this rank cannot take part; the
         * others then wait for it, and their timeout names it. */
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for the argument check", op);
    }
    dla_comm_req req;
    st = w->p->allgather(w->ctx, mine, sizeof *mine, all, 0, &req);
    if (st == DLA_OK)
        st = dla__spmd_wait(w, op, req, 0);
    if (st != DLA_OK) {
        if (!w->broken)
            dla__free(all);
        else if (w->abandoned_req && !w->abandoned_buf)
            w->abandoned_buf = all; /* still the transport's to write */
        return st;
    }
    int differ = 0;
    st = compare(w, op, all, &differ);
    if (st == DLA_OK && differ)
        st = name_the_tensor(w, op, recs, mine->count);
    if (st != DLA_OK || !all_out)
        dla__free(all);
    else
        *all_out = all;
    return st;
}

/*
 * spmd_coll.c - the collectives on tensors (dlaccel/parallel.h).
 *
 * The communicator works on host buffers. A dense tensor on a device
 * whose memory the host addresses (the cpu plugin: host_addressable) is
 * handed over as it is, so a gradient is reduced in place with no copy;
 * any other tensor (a view, or memory of a device such as opencl) is
 * copied into a host buffer (the stage), reduced there, and written back.
 * Either way each tensor is its own transfer, in tensor order, so ranks
 * that lay the same tensors out otherwise still pair them. Every collective first checks that the ranks agree
 * (spmd_check.c); a rank whose own arguments are wrong still takes part
 * in that check, so every rank fails together instead of the others
 * waiting for it.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/spmd_coll.h"
#include "core/spmd_device.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdio.h>
#include <string.h>


/* The tensor's memory as a host pointer, when the device lets the host
 * address it and the view is dense; NULL otherwise. */
static void *direct_pointer(const dla_tensor *t)
{
    dla_device *dev = t->storage->device;
    if (!dev->info.host_addressable || !dla__is_dense(t) || !t->storage->mem)
        return NULL;
    if (dla_device_sync(dev) != DLA_OK) {
        dla_clear_error();
        return NULL;
    }
    return (char *)t->storage->mem + (size_t)t->offset * dla_dtype_size(t->dtype);
}

static size_t tensor_bytes(const dla_tensor *t)
{
    return (size_t)dla__numel(t->ndims, t->dims) * dla_dtype_size(t->dtype);
}

/* The checks of one rank's own arguments. writes: the tensors are written
 * in place (no element may alias another, nor two tensors overlap). */
dla_status dla__coll_check_tensors(const char *op, int n, dla_tensor *const *t, int writes)
{
    if (n < 0)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument n: %d is negative", op, n);
    if (n > 0 && !t)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument t: NULL with n = %d", op, n);
    if (dla__trace_recording())
        return dla__fail(DLA_ERR_UNSUPPORTED,
                         "%s: a collective cannot be recorded in a trace (call it outside the "
                         "accelerated function)", op);
    for (int k = 0; k < n; k++) {
        if (!t[k])
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument t[%d]: NULL", op, k);
        if (!dla__tensor_check(t[k], op))
            return dla_last_status();
        if (t[k]->status != DLA_OK)
            return dla__fail(t[k]->status, "%s: argument t[%d] is an error tensor: %s", op, k,
                             t[k]->message ? t[k]->message : "");
        if (!writes || tensor_bytes(t[k]) == 0)
            continue;
        for (int i = 0; i < t[k]->ndims; i++)
            if (t[k]->dims[i] > 1 && t[k]->strides[i] == 0) {
                char dims[DLA__DIMS_BUF];
                return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: argument t[%d] (%s) is a view whose elements share memory "
                                 "(stride 0 on dim %d): it cannot be written in place",
                                 op, k, dla__tensor_dims_str(t[k], dims, sizeof dims), i);
            }
        for (int j = 0; j < k; j++) {
            if (dla__tensors_overlap(t[j], t[k]))
                return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: arguments t[%d] and t[%d] share memory: each tensor is "
                                 "written in place, so each may be passed once", op, j, k);
        }
    }
    return DLA_OK;
}

/* Copies host (the tensor's bytes, dense) into t on its device. */
dla_status dla__coll_write_back(const char *op, dla_tensor *t, const void *host)
{
    size_t bytes = tensor_bytes(t);
    if (bytes == 0)
        return DLA_OK;
    dla_device *dev = t->storage->device;
    dla_status st;
    if (dla__is_dense(t)) {
        st = dla__k_upload(dev, t->storage->mem, (size_t)t->offset * dla_dtype_size(t->dtype),
                           host, bytes);
    } else {
        dla_tensor *d = dla__tensor_alloc(op, dev, t->dtype, "", t->ndims, t->dims);
        if (!d)
            return dla_last_status();
        st = dla__k_upload(dev, d->storage->mem, 0, host, bytes);
        if (st == DLA_OK) {
            dla_view y, x;
            dla__view_of(t, &y);
            dla__view_of(d, &x);
            st = dla__k_copy(dev, &y, &x);
        }
        dla_tensor_release(d);
    }
    if (st != DLA_OK)
        dla__error_prefix(op);
    dla__storage_written(t->storage);
    return st;
}

/* Lays the tensors out: direct ones point at their memory, the others get
 * a place in one stage, in call order (each one its own transfer, each
 * place aligned to 64 bytes), and are copied there when fill. *stage is
 * NULL when none is staged. */
dla_status dla__coll_lay_out(const char *op, int n, dla_tensor *const *t, dla__coll_slot *s, int fill,
                          unsigned char **stage)
{
    size_t off = 0;
    *stage = NULL;
    for (int k = 0; k < n; k++) {
        s[k].bytes = tensor_bytes(t[k]);
        s[k].host = direct_pointer(t[k]);
        s[k].direct = s[k].host != NULL;
        if (!s[k].direct) {
            s[k].host = (void *)(uintptr_t)off; /* an offset until the stage exists */
            off = (off + s[k].bytes + 63) & ~(size_t)63;
        }
    }
    if (off == 0)
        return DLA_OK;
    *stage = dla__malloc_aligned(off, 64);
    if (!*stage)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes of host memory to stage tensors", op,
                         off);
    for (int k = 0; k < n; k++) {
        if (s[k].direct)
            continue;
        s[k].host = *stage + (size_t)(uintptr_t)s[k].host;
        if (fill && s[k].bytes) {
            dla_status st = dla_tensor_to_host(t[k], s[k].host, s[k].bytes);
            if (st != DLA_OK) {
                dla__error_prefix(op);
                return st;
            }
        }
    }
    return DLA_OK;
}

/* Waits for every started request in order (a failure breaks the world:
 * the rest stay in flight, and their buffers with them). */
static dla_status wait_each(dla__spmd *w, const char *op, dla_comm_req *req, int nreq)
{
    for (int i = 0; i < nreq; i++) {
        dla_status st = dla__spmd_wait(w, op, req[i], 1);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

/* Frees the stage, unless a broken world may still write into it. */
/* The end of one transfer started under the watchdog: a plugin that
 * refused to start it leaves the ranks disagreeing on what is in flight
 * (the world breaks); a started one is waited for. */
static dla_status finish_blocking(dla__spmd *w, const char *name, dla_status started,
                                  dla_comm_req req)
{
    if (started != DLA_OK) {
        dla__error_prefix(name);
        dla__spmd_break(w);
        return started;
    }
    return dla__spmd_wait(w, name, req, 1);
}

static void stage_free(dla__spmd *w, unsigned char *stage)
{
    if (!w->broken)
        dla__free_aligned(stage);
}

const char *const dla__coll_op_names[] = {
#define DLA__NAME(name, str) str,
    DLA_REDUCE_LIST(DLA__NAME)
#undef DLA__NAME
};

int dla__coll_op_supports(dla_reduce_op op, dla_dtype dtype)
{
    switch (dtype) {
    case DLA_F32:
    case DLA_F64: return 1;
    case DLA_I32:
    case DLA_U8: return op != DLA_REDUCE_MEAN;
    case DLA_BOOL: return op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
    default: return 0;
    }
}

dla_status dla__coll_check_reduce(const char *name, int n, dla_tensor *const *t, dla_reduce_op op)
{
    dla_status st = dla__coll_check_tensors(name, n, t, 1);
    if (st == DLA_OK && ((unsigned)op >= DLA_REDUCE_COUNT))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument op: %d is not a dla_reduce_op", name,
                       (int)op);
    for (int k = 0; k < n && st == DLA_OK; k++)
        if (!dla__coll_op_supports(op, t[k]->dtype))
            st = dla__fail(DLA_ERR_DTYPE, "%s: argument t[%d]: %s of %s is not supported", name, k,
                           dla__coll_op_names[op], dla_dtype_name(t[k]->dtype));
    return st;
}

int dla__coll_wide(dla_reduce_op op, dla_dtype dtype)
{
    return op == DLA_REDUCE_SUM && (dtype == DLA_I32 || dtype == DLA_U8);
}

dla_status dla__coll_widen(const char *op, dla__coll_slot *s, dla_dtype dtype)
{
    const size_t n = s->bytes / dla_dtype_size(dtype);
    s->wide = dla__malloc(sizeof *s->wide * (n ? n : 1));
    if (!s->wide)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %zu sums", op, n);
    for (size_t i = 0; i < n; i++)
        s->wide[i] = dtype == DLA_I32 ? (double)((const int32_t *)s->host)[i]
                                      : (double)((const uint8_t *)s->host)[i];
    return DLA_OK;
}

void dla__coll_narrow(dla__coll_slot *s, dla_dtype dtype)
{
    if (!s->wide)
        return;
    const size_t n = s->bytes / dla_dtype_size(dtype);
    const double lo = dtype == DLA_I32 ? (double)INT32_MIN : 0.0;
    const double hi = dtype == DLA_I32 ? (double)INT32_MAX : 255.0;
    for (size_t i = 0; i < n; i++) {
        const double v = s->wide[i] < lo ? lo : s->wide[i] > hi ? hi : s->wide[i];
        if (dtype == DLA_I32)
            ((int32_t *)s->host)[i] = (int32_t)v;
        else
            ((uint8_t *)s->host)[i] = (uint8_t)v;
    }
    dla__free(s->wide);
    s->wide = NULL;
}

void *dla__coll_wire_buf(const dla__coll_slot *s) { return s->wide ? (void *)s->wide : s->host; }

size_t dla__coll_wire_count(const dla__coll_slot *s, dla_dtype dtype)
{
    return s->bytes / dla_dtype_size(dtype);
}

dla_dtype dla__coll_wire_dtype(const dla__coll_slot *s, dla_dtype dtype)
{
    return s->wide ? DLA_F64 : dtype;
}

void dla__coll_divide(void *host, size_t bytes, dla_dtype dtype, int size)
{
    if (dtype == DLA_F32) {
        float *p = host;
        for (size_t i = 0; i < bytes / sizeof *p; i++)
            p[i] /= (float)size;
    } else if (dtype == DLA_F64) {
        double *p = host;
        for (size_t i = 0; i < bytes / sizeof *p; i++)
            p[i] /= (double)size;
    }
}

/* After the argument check of a collective whose tensors this rank could
 * reduce on their device (mine.device_path): on the device when every rank
 * can (*handled, all freed), else the host path's stage, laid out now. op
 * DLA_REDUCE_COUNT: a broadcast from root. A failure after the check
 * breaks the world: the other ranks have gone on to the transfer. */
static dla_status device_or_stage(dla__spmd *w, const char *name, dla__coll_desc *all, int n,
                                  dla_tensor *const *t, dla__coll_slot *s, int fill,
                                  unsigned char **stage, int *handled, dla_reduce_op op,
                                  int root)
{
    dla_device *dev = t[0]->storage->device;
    void *grp = NULL;
    dla_status st = DLA_OK;
    *handled = 0;
    if (dla__spmd_device_agreed(w, all))
        st = dla__spmd_device_group(w, name, dev, &grp);
    dla__free(all);
    if (st != DLA_OK)
        return st;
    if (grp) {
        uint64_t ticket = 0;
        *handled = 1;
        st = op == DLA_REDUCE_COUNT ? dla__spmd_device_broadcast(w, name, grp, n, t, root, &ticket)
                                    : dla__spmd_device_allreduce(w, name, grp, n, t, op, &ticket);
        if (st == DLA_OK)
            st = dla__spmd_device_wait(w, name, dev, grp, ticket);
        for (int k = 0; k < n && st == DLA_OK; k++)
            dla__storage_written(t[k]->storage);
        return st;
    }
    if (w->world.size == 1)
        return DLA_OK;
    st = dla__coll_lay_out(name, n, t, s, fill, stage);
    if (st != DLA_OK)
        dla__spmd_break(w);
    return st;
}

DLA_API dla_status dla_allreduce(int n, dla_tensor *const *t, dla_reduce_op op)
{
    static const char name[] = "dla_allreduce";
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = DLA__COLL_ALLREDUCE, .count = n, .op = (int32_t)op};
    dla__coll_rec *recs = NULL;
    dla__coll_slot *s = NULL;
    dla_comm_req *reqs = NULL;
    unsigned char *stage = NULL;
    int size = w->world.size;
    dla_status st = dla__coll_check_reduce(name, n, t, op);
    if (st == DLA_OK && n > 0) {
        recs = dla__calloc((size_t)n, sizeof *recs);
        s = dla__calloc((size_t)n, sizeof *s);
        reqs = dla__calloc((size_t)n, sizeof *reqs);
        if (!recs || !s || !reqs)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors", name, n);
    }
    for (int k = 0; k < n && st == DLA_OK; k++)
        dla__coll_rec_of(t[k], 1, &recs[k]);
    /* An integer sum is widened on the host (dla__coll_widen). */
    int wide = 0;
    for (int k = 0; k < n && st == DLA_OK; k++)
        wide |= dla__coll_wide(op, t[k]->dtype);
    mine.device_path = st == DLA_OK && !wide ? dla__spmd_device_path(w, n, t) : 0;
    if (st == DLA_OK && size > 1 && !mine.device_path)
        st = dla__coll_lay_out(name, n, t, s, 1, &stage);
    if (st != DLA_OK)
        dla__coll_local_error(&mine);
    dla__coll_desc *all = NULL;
    dla_status cst = dla__coll_enter(w, name, &mine, st == DLA_OK ? recs : NULL,
                                     mine.device_path ? &all : NULL);
    if (st == DLA_OK)
        st = cst;
    if (st == DLA_OK && mine.device_path) {
        int handled = 0;
        st = device_or_stage(w, name, all, n, t, s, 1, &stage, &handled, op, -1);
        all = NULL; /* freed there */
        if (handled || st != DLA_OK)
            goto done;
    }
    dla__free(all);
    if (st != DLA_OK || size == 1)
        goto done;

    /* One reduction per tensor, in tensor order, wherever it lies (its own
     * memory or the stage). Whether a tensor is direct follows this rank's
     * layout of it (dense, on a device the host addresses), which another
     * rank's need not share: when the staged tensors went as one reduction
     * per dtype after the direct ones, ranks of other layouts paired other
     * buffers in their transfers, and every rank returned sums of the
     * wrong tensors with DLA_OK (found by a review, 2026-11-27). Every
     * rank is known to be here, so the plugin may block in each (the
     * watchdog covers a transfer that never ends). */
    int nreq = 0;
    dla_reduce_op wire = op == DLA_REDUCE_MEAN ? DLA_REDUCE_SUM : op;
    dla__spmd_watch_begin(w, name);
    for (int k = 0; k < n && st == DLA_OK; k++) {
        if (s[k].bytes == 0)
            continue;
        if (dla__coll_wide(op, t[k]->dtype))
            st = dla__coll_widen(name, &s[k], t[k]->dtype);
        if (st == DLA_OK)
            st = w->p->allreduce(w->ctx, dla__coll_wire_buf(&s[k]),
                                 dla__coll_wire_count(&s[k], t[k]->dtype),
                                 dla__coll_wire_dtype(&s[k], t[k]->dtype), wire,
                                 DLA_COMM_MAY_BLOCK, &reqs[nreq]);
        nreq += st == DLA_OK;
    }
    if (st != DLA_OK) {
        /* The plugin refused to start one: the ranks now disagree on
         * what is in flight. */
        dla__error_prefix(name);
        dla__spmd_break(w);
    } else {
        st = wait_each(w, name, reqs, nreq);
    }
    dla__spmd_watch_end();
    for (int k = 0; k < n && st == DLA_OK; k++) {
        dla__coll_narrow(&s[k], t[k]->dtype);
        if (op == DLA_REDUCE_MEAN)
            dla__coll_divide(s[k].host, s[k].bytes, t[k]->dtype, size);
        if (s[k].direct)
            dla__storage_written(t[k]->storage);
        else
            st = dla__coll_write_back(name, t[k], s[k].host);
    }
done:
    stage_free(w, stage);
    /* Widened sums left by a failure; kept, as the stage, when the world
     * broke (a transfer given up may still write them). */
    for (int k = 0; s && k < n && !w->broken; k++)
        dla__free(s[k].wide);
    dla__free(reqs);
    dla__free(recs);
    dla__free(s);
    return st;
}

DLA_API dla_status dla_broadcast(int n, dla_tensor *const *t, int root)
{
    static const char name[] = "dla_broadcast";
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = DLA__COLL_BROADCAST, .count = n, .root = root};
    dla__coll_rec *recs = NULL;
    dla__coll_slot *s = NULL;
    unsigned char *stage = NULL;
    int size = w->world.size, me = w->world.rank;
    dla_status st = dla__coll_check_tensors(name, n, t, 1);
    if (st == DLA_OK && (root < 0 || root >= size))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument root: %d is not a rank of 0..%d",
                       name, root, size - 1);
    if (st == DLA_OK && n > 0) {
        recs = dla__calloc((size_t)n, sizeof *recs);
        s = dla__calloc((size_t)n, sizeof *s);
        if (!recs || !s)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors", name, n);
    }
    for (int k = 0; k < n && st == DLA_OK; k++)
        dla__coll_rec_of(t[k], 0, &recs[k]);
    mine.device_path = st == DLA_OK ? dla__spmd_device_path(w, n, t) : 0;
    if (st == DLA_OK && size > 1 && !mine.device_path)
        st = dla__coll_lay_out(name, n, t, s, me == root, &stage);
    if (st != DLA_OK)
        dla__coll_local_error(&mine);
    dla__coll_desc *all = NULL;
    dla_status cst = dla__coll_enter(w, name, &mine, st == DLA_OK ? recs : NULL,
                                     mine.device_path ? &all : NULL);
    if (st == DLA_OK)
        st = cst;
    if (st == DLA_OK && mine.device_path) {
        int handled = 0;
        st = device_or_stage(w, name, all, n, t, s, me == root, &stage, &handled,
                             DLA_REDUCE_COUNT, root);
        all = NULL; /* freed there */
        if (handled || st != DLA_OK)
            goto done;
    }
    dla__free(all);
    if (st != DLA_OK || size == 1)
        goto done;
    /* One message per tensor, in tensor order, wherever it lies: as for
     * dla_allreduce, a rank's direct or staged choice is its own, so the
     * messages must not depend on it (a broadcast is rarely on the hot
     * path: the initial learnables). */
    for (int k = 0; k < n && st == DLA_OK; k++) {
        if (s[k].bytes == 0)
            continue;
        dla_comm_req req;
        dla__spmd_watch_begin(w, name);
        st = w->p->broadcast(w->ctx, s[k].host, s[k].bytes, root, DLA_COMM_MAY_BLOCK, &req);
        dla__spmd_watch_end();
        st = finish_blocking(w, name, st, req);
        if (st == DLA_OK && s[k].direct)
            dla__storage_written(t[k]->storage);
    }
    for (int k = 0; k < n && st == DLA_OK; k++)
        if (!s[k].direct && me != root)
            st = dla__coll_write_back(name, t[k], s[k].host);
done:
    stage_free(w, stage);
    dla__free(recs);
    dla__free(s);
    return st;
}

/* The host buffers of an allgather: x's bytes (its memory, or a copy) and
 * the result's room (res's memory, or a stage). */
static dla_status allgather_stage(const char *name, const dla_tensor *x, dla_tensor *res,
                                  size_t bytes, int size, const void **send,
                                  unsigned char **send_stage, void **recv,
                                  unsigned char **recv_stage)
{
    dla_status st = DLA_OK;
    *send = direct_pointer(x);
    if (!*send && bytes) {
        *send_stage = dla__malloc_aligned(bytes, 64);
        if (!*send_stage)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes of host memory", name, bytes);
        else if ((st = dla_tensor_to_host(x, *send_stage, bytes)) != DLA_OK)
            dla__error_prefix(name);
        *send = *send_stage;
    }
    *recv = bytes ? direct_pointer(res) : NULL;
    if (st == DLA_OK && !*recv && bytes) {
        *recv_stage = dla__malloc_aligned(bytes * (size_t)size, 64);
        if (!*recv_stage)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes of host memory", name,
                           bytes * (size_t)size);
        *recv = *recv_stage;
    }
    return st;
}

DLA_API dla_status dla_allgather(const dla_tensor *x, dla_tensor **out)
{
    static const char name[] = "dla_allgather";
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = DLA__COLL_ALLGATHER, .count = 1};
    dla__coll_rec rec;
    int size = w->world.size;
    dla_tensor *res = NULL;
    unsigned char *send_stage = NULL, *recv_stage = NULL;
    const void *send = NULL;
    void *recv = NULL;
    size_t bytes = 0;
    dla_status st = DLA_OK;
    if (!out)
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out: NULL", name);
    else
        *out = NULL;
    dla_tensor *xs = (dla_tensor *)x;
    if (st == DLA_OK)
        st = dla__coll_check_tensors(name, 1, &xs, 0);
    if (st == DLA_OK && x->ndims >= DLA_MAX_DIMS)
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument x has %d dims: the ranks' dim would be one past the %d a "
                       "tensor may have", name, x->ndims, DLA_MAX_DIMS);
    if (st == DLA_OK) {
        dla__coll_rec_of(x, 1, &rec);
        int64_t dims[DLA_MAX_DIMS];
        for (int i = 0; i < x->ndims; i++)
            dims[i] = x->dims[i];
        dims[x->ndims] = size;
        res = dla__tensor_alloc(name, x->storage->device, x->dtype, "", x->ndims + 1, dims);
        if (!res)
            st = dla_last_status();
    }
    if (st == DLA_OK) {
        bytes = tensor_bytes(x);
        mine.device_path = dla__spmd_device_path(w, 1, &xs);
    }
    if (st == DLA_OK && !mine.device_path)
        st = allgather_stage(name, x, res, bytes, size, &send, &send_stage, &recv, &recv_stage);
    if (st != DLA_OK)
        dla__coll_local_error(&mine);
    dla__coll_desc *all = NULL;
    dla_status cst = dla__coll_enter(w, name, &mine, st == DLA_OK ? &rec : NULL,
                                     mine.device_path ? &all : NULL);
    if (st == DLA_OK)
        st = cst;
    if (st == DLA_OK && mine.device_path) {
        /* On the device when every rank can; else staged now. */
        void *grp = NULL;
        if (dla__spmd_device_agreed(w, all))
            st = dla__spmd_device_group(w, name, x->storage->device, &grp);
        if (st == DLA_OK && grp) {
            uint64_t ticket = 0;
            st = dla__spmd_device_allgather(w, name, grp, x, res, &ticket);
            if (st == DLA_OK)
                st = dla__spmd_device_wait(w, name, x->storage->device, grp, ticket);
            if (st == DLA_OK)
                dla__storage_written(res->storage);
            bytes = 0; /* done */
        } else if (st == DLA_OK) {
            st = allgather_stage(name, x, res, bytes, size, &send, &send_stage, &recv, &recv_stage);
            if (st != DLA_OK)
                dla__spmd_break(w);
        }
    }
    dla__free(all);
    if (st == DLA_OK && bytes) {
        if (size == 1) {
            memcpy(recv, send, bytes);
        } else {
            dla_comm_req req;
            dla__spmd_watch_begin(w, name);
            st = w->p->allgather(w->ctx, send, bytes, recv, DLA_COMM_MAY_BLOCK, &req);
            dla__spmd_watch_end();
            st = finish_blocking(w, name, st, req);
        }
        if (st == DLA_OK && recv_stage)
            st = dla__coll_write_back(name, res, recv_stage);
        else if (st == DLA_OK)
            dla__storage_written(res->storage);
    }
    if (!w->broken) {
        dla__free_aligned(send_stage);
        dla__free_aligned(recv_stage);
    }
    if (st != DLA_OK) {
        if (res && !w->broken)
            dla_tensor_release(res);
        return st;
    }
    *out = dla__return(res);
    return dla_tensor_status(*out);
}

/* arg: the result's name in the public signature ("all", "any"); the
 * message said "argument result", which neither function has. */
static dla_status flag_collective(const char *name, const char *arg, dla__coll_kind kind,
                                  bool flag, bool *result)
{
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = kind, .value = flag ? 1 : 0};
    if (!result) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s: NULL", name, arg);
        dla__coll_local_error(&mine);
    }
    /* The flags travel in the descriptors: one exchange is the whole
     * collective. */
    dla__coll_desc *all = NULL;
    dla_status st = dla__coll_enter(w, name, &mine, NULL, &all);
    if (st != DLA_OK)
        return st;
    bool r = kind == DLA__COLL_ALL;
    for (int i = 0; i < w->world.size; i++)
        r = kind == DLA__COLL_ALL ? r && all[i].value : r || all[i].value;
    dla__free(all);
    *result = r;
    return DLA_OK;
}

DLA_API dla_status dla_spmd_all(bool flag, bool *all)
{
    return flag_collective("dla_spmd_all", "all", DLA__COLL_ALL, flag, all);
}

DLA_API dla_status dla_spmd_any(bool flag, bool *any)
{
    return flag_collective("dla_spmd_any", "any", DLA__COLL_ANY, flag, any);
}

DLA_API dla_status dla_spmd_barrier(void)
{
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = DLA__COLL_BARRIER};
    /* An allgather completes on a rank only once every rank has sent. */
    return dla__coll_enter(w, "dla_spmd_barrier", &mine, NULL, NULL);
}

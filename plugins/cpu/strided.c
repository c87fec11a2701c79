/*
 * strided.c - view checks and the coalesced, threaded walk over strided
 * views (see strided.h).
 */
#include "plugins/cpu/strided.h"

#include <omp.h>
#include <stdio.h>

static const size_t dtype_sizes[] = {
#define DLA__CPU_DTYPE_SIZE(name, str, size) size,
    DLA_DTYPE_LIST(DLA__CPU_DTYPE_SIZE)
#undef DLA__CPU_DTYPE_SIZE
};
static const char *const dtype_names[] = {
#define DLA__CPU_DTYPE_NAME(name, str, size) str,
    DLA_DTYPE_LIST(DLA__CPU_DTYPE_NAME)
#undef DLA__CPU_DTYPE_NAME
};
_Static_assert(sizeof dtype_sizes / sizeof dtype_sizes[0] == DLA_DTYPE_COUNT,
               "dtype sizes out of step with DLA_DTYPE_LIST");

size_t dla__cpu_dtype_size(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *dla__cpu_dtype_name(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_names[dtype] : "unknown";
}

const char *dla__cpu_dims_str(char *buf, size_t size, int ndims, const int64_t *dims)
{
    if (ndims <= 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndims && used < size; d++) {
        int n = snprintf(buf + used, size - used, d ? "x%lld" : "%lld", (long long)dims[d]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

int64_t dla__cpu_numel(const dla_view *v)
{
    /* An empty view may have other dims whose product alone overflows
     * (2^32 x 2^32 x 0): a zero dim is looked for first. */
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 0;
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

dla_status dla__cpu_check_view(const char *kernel, const char *arg, const dla_view *v)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (v->struct_size < sizeof(dla_view))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: argument %s: view struct_size %zu is smaller than ABI 1.0's %zu",
                        kernel, arg, v->struct_size, sizeof(dla_view));
    if (v->ndims < 0 || v->ndims > DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument %s: ndims %d outside 0..%d",
                        kernel, arg, (int)v->ndims, DLA_MAX_DIMS);
    if ((unsigned)v->dtype >= DLA_DTYPE_COUNT)
        return h->error(DLA_ERR_DTYPE, "cpu %s: argument %s: unknown dtype %d", kernel, arg,
                        (int)v->dtype);
    char buf[DLA__CPU_DIMS_BUF];
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument %s: negative dim in %s",
                            kernel, arg, dla__cpu_dims_str(buf, sizeof buf, v->ndims, v->dims));
        if (v->strides[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "cpu %s: argument %s (dims %s): stride %lld of dim %d is negative",
                            kernel, arg, dla__cpu_dims_str(buf, sizeof buf, v->ndims, v->dims),
                            (long long)v->strides[d], d + 1);
    }
    if (v->offset < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument %s: negative offset %lld",
                        kernel, arg, (long long)v->offset);
    if (dla__cpu_numel(v) == 0)
        return DLA_OK;
    if (v->mem == NULL)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument %s (dims %s): no memory handle",
                        kernel, arg, dla__cpu_dims_str(buf, sizeof buf, v->ndims, v->dims));
    /* The last element the view reaches must lie inside its memory. */
    int64_t last = v->offset, step;
    int overflow = 0;
    for (int d = 0; d < v->ndims; d++) {
        overflow |= __builtin_mul_overflow(v->dims[d] - 1, v->strides[d], &step);
        overflow |= __builtin_add_overflow(last, step, &last);
    }
    const int64_t room = (int64_t)(dla__cpu_mem_bytes(v->mem) / dla__cpu_dtype_size(v->dtype));
    if (overflow || last >= room)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: argument %s (dims %s, offset %lld): reaches past the %lld %s "
                        "elements of its memory",
                        kernel, arg, dla__cpu_dims_str(buf, sizeof buf, v->ndims, v->dims),
                        (long long)v->offset, (long long)room, dla__cpu_dtype_name(v->dtype));
    return DLA_OK;
}

dla_status dla__cpu_check_same_dims(const char *kernel, const char *arg, const dla_view *v,
                                    const char *ref_arg, const dla_view *ref)
{
    int same = v->ndims == ref->ndims;
    for (int d = 0; same && d < v->ndims; d++)
        same = v->dims[d] == ref->dims[d];
    if (same)
        return DLA_OK;
    char a[DLA__CPU_DIMS_BUF], b[DLA__CPU_DIMS_BUF];
    return dla__cpu_host->error(DLA_ERR_SHAPE, "cpu %s: argument %s: dims %s differ from %s's %s",
                                kernel, arg, dla__cpu_dims_str(a, sizeof a, v->ndims, v->dims),
                                ref_arg, dla__cpu_dims_str(b, sizeof b, ref->ndims, ref->dims));
}

dla_status dla__cpu_check_float(const char *kernel, const char *arg, const dla_view *v)
{
    if (v->dtype == DLA_F32 || v->dtype == DLA_F64)
        return DLA_OK;
    char buf[DLA__CPU_DIMS_BUF];
    return dla__cpu_host->error(DLA_ERR_DTYPE,
                                "cpu %s: argument %s (dims %s): dtype %s is not supported "
                                "(single or double)",
                                kernel, arg, dla__cpu_dims_str(buf, sizeof buf, v->ndims, v->dims),
                                dla__cpu_dtype_name(v->dtype));
}

int dla__cpu_views_overlap(const dla_view *p, const dla_view *q)
{
    if (p->mem != q->mem || dla__cpu_numel(p) == 0 || dla__cpu_numel(q) == 0)
        return 0;
    int64_t plast = p->offset, qlast = q->offset;
    for (int d = 0; d < p->ndims; d++)
        plast += (p->dims[d] - 1) * p->strides[d];
    for (int d = 0; d < q->ndims; d++)
        qlast += (q->dims[d] - 1) * q->strides[d];
    const int64_t ps = (int64_t)dla__cpu_dtype_size(p->dtype);
    const int64_t qs = (int64_t)dla__cpu_dtype_size(q->dtype);
    return p->offset * ps < (qlast + 1) * qs && q->offset * qs < (plast + 1) * ps;
}

void dla__cpu_iter_init(dla__cpu_iter *it, int nops, const dla_view *const *views)
{
    const dla_view *shape = views[0];
    it->nops = nops;
    it->ndims = 0;
    it->numel = 1;
    for (int op = 0; op < nops; op++)
        it->offset[op] = views[op]->offset;
    /* Empty: walked as the one-dim view of length 0 it is; its other dims
     * may overflow together (2^32 x 2^32 x 0), so they are not merged. */
    for (int d = 0; d < shape->ndims; d++)
        if (shape->dims[d] == 0) {
            it->numel = 0;
            it->dims[0] = 0;
            for (int op = 0; op < nops; op++)
                it->strides[op][0] = 1;
            it->ndims = 1;
            return;
        }
    for (int d = 0; d < shape->ndims; d++) {
        int64_t n = shape->dims[d];
        it->numel *= n;
        if (n == 1)
            continue; /* a dim of 1 never moves, whatever its stride */
        int merge = it->ndims > 0;
        for (int op = 0; merge && op < nops; op++) {
            int j = it->ndims - 1;
            merge = views[op]->strides[d] == it->strides[op][j] * it->dims[j];
        }
        if (merge) {
            it->dims[it->ndims - 1] *= n;
            continue;
        }
        for (int op = 0; op < nops; op++)
            it->strides[op][it->ndims] = views[op]->strides[d];
        it->dims[it->ndims++] = n;
    }
    if (it->ndims == 0) { /* a scalar, or every dim 1 */
        it->dims[0] = 1;
        for (int op = 0; op < nops; op++)
            it->strides[op][0] = 1;
        it->ndims = 1;
    }
}

/* Walks units [u0, u1) where unit u is piece u % pieces of row u / pieces. */
static void walk(const dla__cpu_iter *it, int64_t pieces, int64_t piece_len, int64_t u0, int64_t u1,
                 dla__cpu_row_fn fn, void *ctx)
{
    const int nops = it->nops;
    int64_t idx[DLA_MAX_DIMS] = {0};
    int64_t row_off[DLA__CPU_MAX_OPS];
    int64_t step[DLA__CPU_MAX_OPS];
    int64_t row = u0 / pieces, piece = u0 % pieces;
    for (int op = 0; op < nops; op++) {
        row_off[op] = it->offset[op];
        step[op] = it->strides[op][0];
    }
    for (int d = 1; d < it->ndims; d++) {
        idx[d] = row % it->dims[d];
        row /= it->dims[d];
        for (int op = 0; op < nops; op++)
            row_off[op] += idx[d] * it->strides[op][d];
    }
    const int64_t inner = it->dims[0];
    for (int64_t u = u0; u < u1; u++) {
        int64_t col = piece * piece_len;
        int64_t n = inner - col < piece_len ? inner - col : piece_len;
        int64_t off[DLA__CPU_MAX_OPS];
        for (int op = 0; op < nops; op++)
            off[op] = row_off[op] + col * step[op];
        fn(ctx, n, off, step);
        if (++piece < pieces)
            continue;
        piece = 0;
        for (int d = 1; d < it->ndims; d++) { /* odometer over the outer dims */
            for (int op = 0; op < nops; op++)
                row_off[op] += it->strides[op][d];
            if (++idx[d] < it->dims[d])
                break;
            for (int op = 0; op < nops; op++)
                row_off[op] -= idx[d] * it->strides[op][d];
            idx[d] = 0;
        }
    }
}

/* How the space is cut for threads: units of whole rows or row pieces. */
typedef struct plan {
    int64_t pieces, piece_len, units;
} plan;

static plan make_plan(const dla__cpu_iter *it, int threads)
{
    const int64_t inner = it->dims[0];
    const int64_t rows = it->numel / inner;
    /* Few long rows: cut each into pieces (of whole cache lines) so every
     * thread gets several; many rows: one piece per row. */
    int64_t pieces = 1;
    if (threads > 1 && rows < 4 * (int64_t)threads) {
        pieces = (4 * (int64_t)threads + rows - 1) / rows;
        int64_t most = inner / 4096 > 1 ? inner / 4096 : 1;
        if (pieces > most)
            pieces = most;
    }
    int64_t piece_len = (inner + pieces - 1) / pieces;
    piece_len = (piece_len + 15) & ~(int64_t)15;
    pieces = (inner + piece_len - 1) / piece_len;
    return (plan){pieces, piece_len, rows * pieces};
}

int64_t dla__cpu_iter_units(const dla__cpu_iter *it, int parts)
{
    return it->numel == 0 ? 0 : make_plan(it, parts).units;
}

void dla__cpu_iter_run_part(const dla__cpu_iter *it, int part, int parts, dla__cpu_row_fn fn,
                            void *ctx)
{
    if (it->numel == 0)
        return;
    const plan p = make_plan(it, parts);
    const int64_t u0 = p.units * part / parts, u1 = p.units * (part + 1) / parts;
    if (u0 < u1)
        walk(it, p.pieces, p.piece_len, u0, u1, fn, ctx);
}

void dla__cpu_iter_run(const dla__cpu_iter *it, dla__cpu_row_fn fn, void *ctx)
{
    if (it->numel == 0)
        return;
    int threads = it->numel >= DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1 || make_plan(it, threads).units == 1) {
        dla__cpu_iter_run_part(it, 0, 1, fn, ctx);
        return;
    }
#pragma omp parallel num_threads(threads)
    dla__cpu_iter_run_part(it, omp_get_thread_num(), omp_get_num_threads(), fn, ctx);
}

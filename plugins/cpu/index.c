/*
 * index.c - gather and scatter_add along one dim, with an int32 index
 * vector.
 *
 * Both see their operands as slices: fixing position i along dim leaves a
 * view of the other dims, the same shape in x and y, which the strided walk
 * coalesces like any elementwise pair. Gather copies slice index[i] of x to
 * slice i of y for every i; each y slice is written once, so the slices go
 * over the team (or, when one slice is large, each slice's own walk does).
 *
 * scatter_add adds slice i of x into slice index[i] of y, and repeated
 * positions make two i write one y slice: splitting over i would race. The
 * team splits what two i never share instead: the slice's elements (each
 * thread walks its own share of every slice, all i in order), or, when the
 * slice is too small to share, the positions along dim (each thread takes
 * the i whose index falls in its range). Either way each y element has one
 * writer and receives its additions in index order, so results do not
 * depend on the thread count.
 */
#include "plugins/cpu/strided.h"

#include <omp.h>
#include <string.h>

/* ----------------------------------------------------------- the rows */

typedef struct index_ctx {
    char *y;
    const char *x;
} index_ctx;

#define DEFINE_COPY_ROW(T, sfx)                                                                    \
    static void copy_row_##sfx(void *ctx, int64_t n, const int64_t *off, const int64_t *step)      \
    {                                                                                              \
        const index_ctx *c = ctx;                                                                  \
        T *y = (T *)c->y + off[0];                                                                 \
        const T *x = (const T *)c->x + off[1];                                                     \
        const int64_t sy = step[0], sx = step[1];                                                  \
        if (sy == 1 && sx == 1)                                                                    \
            memcpy(y, x, (size_t)n * sizeof(T));                                                   \
        else                                                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * sy] = x[i * sx];                                                             \
    }
DEFINE_COPY_ROW(uint8_t, 1)
DEFINE_COPY_ROW(uint32_t, 4)
DEFINE_COPY_ROW(uint64_t, 8)

#define DEFINE_ADD_ROW(T, sfx)                                                                     \
    static void add_row_##sfx(void *ctx, int64_t n, const int64_t *off, const int64_t *step)       \
    {                                                                                              \
        const index_ctx *c = ctx;                                                                  \
        T *y = (T *)c->y + off[0];                                                                 \
        const T *x = (const T *)c->x + off[1];                                                     \
        const int64_t sy = step[0], sx = step[1];                                                  \
        if (sy == 1 && sx == 1) {                                                                  \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] += x[i];                                                                      \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * sy] += x[i * sx];                                                            \
        }                                                                                          \
    }
DEFINE_ADD_ROW(float, f32)
DEFINE_ADD_ROW(double, f64)

/* ------------------------------------------------------------ the setup */

/* A checked call: the slice space (x's slice then y's, at position 0),
 * what one step along dim moves in each, and the index vector. */
typedef struct index_plan {
    dla__cpu_iter slice;
    int64_t ystep, xstep;
    int64_t len;          /* positions in index */
    int64_t target;       /* extent of dim in the operand index points into */
    const int32_t *index; /* element 0 */
    int64_t istep;
} index_plan;

/* The one dim of v longer than 1 (its length and stride), or 1 and 0 when
 * there is none; -1 when there are two. */
static int vector_of(const dla_view *v, int64_t *len, int64_t *stride)
{
    *len = 1, *stride = 0;
    int found = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] == 1)
            continue;
        if (found++)
            return -1;
        *len = v->dims[d], *stride = v->strides[d];
    }
    return 0;
}

static dla_status index_setup(const char *kernel, const dla_index_args *a, int scatter,
                              index_plan *p)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (a->struct_size < sizeof(dla_index_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: args struct_size %zu is smaller than ABI 1.1's %zu", kernel,
                        a->struct_size, sizeof(dla_index_args));
    const dla_view *y = &a->y, *x = &a->x, *ix = &a->index;
    dla_status s;
    if ((s = dla__cpu_check_view(kernel, "y", y)) != DLA_OK ||
        (s = dla__cpu_check_view(kernel, "x", x)) != DLA_OK ||
        (s = dla__cpu_check_view(kernel, "index", ix)) != DLA_OK)
        return s;
    char bx[DLA__CPU_DIMS_BUF], by[DLA__CPU_DIMS_BUF];
    const int dim = a->dim;
    if (dim < 0 || dim >= DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument dim: %d outside 0..%d", kernel,
                        dim, DLA_MAX_DIMS - 1);
    if (scatter && (s = dla__cpu_check_float(kernel, "y", y)) != DLA_OK)
        return s;
    if (x->dtype != y->dtype)
        return h->error(DLA_ERR_DTYPE, "cpu %s: argument x (dims %s): dtype %s differs from y's %s",
                        kernel, dla__cpu_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla__cpu_dtype_name(x->dtype), dla__cpu_dtype_name(y->dtype));
    if (ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE, "cpu %s: argument index (dims %s): dtype %s, expected int32",
                        kernel, dla__cpu_dims_str(bx, sizeof bx, ix->ndims, ix->dims),
                        dla__cpu_dtype_name(ix->dtype));
    if (vector_of(ix, &p->len, &p->istep) != 0)
        return h->error(DLA_ERR_SHAPE, "cpu %s: argument index: dims %s, expected a vector",
                        kernel, dla__cpu_dims_str(bx, sizeof bx, ix->ndims, ix->dims));
    if (dla__cpu_numel(ix) == 0)
        p->len = 0;

    /* Both operands with dim + 1 dims at least (trailing dims are 1). */
    const int nd = x->ndims > y->ndims ? (x->ndims > dim ? x->ndims : dim + 1)
                                       : (y->ndims > dim ? y->ndims : dim + 1);
    dla_view xs = *x, ys = *y;
    for (int d = 0; d < nd; d++) {
        if (d >= x->ndims)
            xs.dims[d] = 1, xs.strides[d] = 0;
        if (d >= y->ndims)
            ys.dims[d] = 1, ys.strides[d] = 0;
    }
    xs.ndims = ys.ndims = nd;
    const dla_view *sliced = scatter ? &xs : &ys; /* the one whose dim is len(index) */
    int ok = sliced->dims[dim] == p->len;
    for (int d = 0; d < nd; d++)
        ok &= d == dim || xs.dims[d] == ys.dims[d];
    if (!ok)
        return h->error(DLA_ERR_SHAPE,
                        "cpu %s: arguments x (dims %s) and y (dims %s) along dim %d (0-based) "
                        "with %lld indices: %s must have the index's length along dim and both "
                        "the same other dims",
                        kernel, dla__cpu_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla__cpu_dims_str(by, sizeof by, y->ndims, y->dims), dim,
                        (long long)p->len, scatter ? "x" : "y");
    if (scatter && dla__cpu_numel(y) > 0)
        for (int d = 0; d < nd; d++)
            if (ys.dims[d] > 1 && ys.strides[d] == 0)
                return h->error(DLA_ERR_INVALID_ARGUMENT,
                                "cpu %s: argument y (dims %s): dim %d has stride 0; a sum "
                                "cannot land on a repeated element",
                                kernel, dla__cpu_dims_str(by, sizeof by, y->ndims, y->dims), d + 1);
    if (dla__cpu_views_overlap(y, x) || dla__cpu_views_overlap(y, ix))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: argument y (dims %s): shares memory with %s", kernel,
                        dla__cpu_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla__cpu_views_overlap(y, x) ? "x" : "index");

    p->target = scatter ? ys.dims[dim] : xs.dims[dim];
    p->index = p->len > 0 ? (const int32_t *)ix->mem + ix->offset : NULL;
    for (int64_t i = 0; i < p->len; i++) {
        const int32_t v = p->index[i * p->istep];
        if (v < 0 || v >= p->target)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "cpu %s: argument index: element %lld is %d, outside 0..%lld (dim %d "
                            "(0-based) of %s, dims %s)",
                            kernel, (long long)i, (int)v, (long long)p->target - 1, dim,
                            scatter ? "y" : "x",
                            scatter ? dla__cpu_dims_str(by, sizeof by, y->ndims, y->dims)
                                    : dla__cpu_dims_str(bx, sizeof bx, x->ndims, x->dims));
    }

    p->ystep = ys.strides[dim], p->xstep = xs.strides[dim];
    xs.dims[dim] = ys.dims[dim] = 1;
    const dla_view *views[] = {&ys, &xs};
    dla__cpu_iter_init(&p->slice, 2, views);
    return DLA_OK;
}

/* The slice space moved to position yi of y and xi of x. */
static inline dla__cpu_iter at_slices(const index_plan *p, int64_t yi, int64_t xi)
{
    dla__cpu_iter it = p->slice;
    it.offset[0] += yi * p->ystep;
    it.offset[1] += xi * p->xstep;
    return it;
}

/* Walks the slices at yi and xi on the calling thread. A slice that is one
 * run (a column, a vector's element) is a single row call: with many short
 * slices, setting up a walk for each would cost more than the work. */
static inline void walk_slices(const index_plan *p, int64_t yi, int64_t xi, dla__cpu_row_fn row,
                               void *ctx)
{
    const dla__cpu_iter *s = &p->slice;
    if (s->ndims == 1) {
        const int64_t off[2] = {s->offset[0] + yi * p->ystep, s->offset[1] + xi * p->xstep};
        const int64_t step[2] = {s->strides[0][0], s->strides[1][0]};
        row(ctx, s->dims[0], off, step);
        return;
    }
    const dla__cpu_iter it = at_slices(p, yi, xi);
    dla__cpu_iter_run_part(&it, 0, 1, row, ctx);
}

/* ----------------------------------------------------------- the kernels */

dla_status dla__cpu_gather(void *dev, const dla_index_args *args)
{
    index_plan p;
    dla_status s = index_setup("gather", args, 0, &p);
    if (s != DLA_OK)
        return s;
    const int64_t slice = p.slice.numel;
    if (slice == 0 || p.len == 0)
        return DLA_OK;
    const size_t es = dla__cpu_dtype_size(args->y.dtype);
    const dla__cpu_row_fn row = es == 1 ? copy_row_1 : es == 4 ? copy_row_4 : copy_row_8;
    index_ctx c = {(char *)args->y.mem, (const char *)args->x.mem};
    if (slice >= DLA__CPU_PAR_MIN) {
        for (int64_t i = 0; i < p.len; i++) {
            const dla__cpu_iter it = at_slices(&p, i, p.index[i * p.istep]);
            dla__cpu_iter_run(&it, row, &c);
        }
        return DLA_OK;
    }
    const int64_t total = slice * p.len;
#pragma omp parallel for schedule(static) if (total >= DLA__CPU_PAR_MIN)
    for (int64_t i = 0; i < p.len; i++)
        walk_slices(&p, i, p.index[i * p.istep], row, &c);
    return DLA_OK;
}

dla_status dla__cpu_scatter_add(void *dev, const dla_index_args *args)
{
    index_plan p;
    dla_status s = index_setup("scatter_add", args, 1, &p);
    if (s != DLA_OK)
        return s;
    const int64_t slice = p.slice.numel;
    if (slice == 0 || p.len == 0)
        return DLA_OK;
    const dla__cpu_row_fn row = args->y.dtype == DLA_F32 ? add_row_f32 : add_row_f64;
    index_ctx c = {(char *)args->y.mem, (const char *)args->x.mem};
    const int threads = slice * p.len >= DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1) {
        for (int64_t i = 0; i < p.len; i++)
            walk_slices(&p, p.index[i * p.istep], i, row, &c);
        return DLA_OK;
    }
    if (dla__cpu_iter_units(&p.slice, threads) >= threads) {
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            for (int64_t i = 0; i < p.len; i++) {
                const dla__cpu_iter it = at_slices(&p, p.index[i * p.istep], i);
                dla__cpu_iter_run_part(&it, t, nt, row, &c);
            }
        }
        return DLA_OK;
    }
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t lo = p.target * t / nt, hi = p.target * (t + 1) / nt;
        for (int64_t i = 0; i < p.len; i++) {
            const int64_t at = p.index[i * p.istep];
            if (at < lo || at >= hi)
                continue;
            walk_slices(&p, at, i, row, &c);
        }
    }
    return DLA_OK;
}

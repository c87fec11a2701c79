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

/* A checked call: the kit's geometry (ys and xs cut to their slices at
 * position 0), the slice space walked over them, and the index vector. */
typedef struct index_plan {
    dla_kit_index k;
    dla__cpu_iter slice;
    const int32_t *index; /* element 0 */
} index_plan;

static dla_status index_setup(const char *kernel, const dla_index_args *a, int scatter,
                              index_plan *p)
{
    dla_status s = dla_kit_index_prepare(&dla__cpu_kit, kernel, a, scatter, &p->k);
    if (s != DLA_OK)
        return s;
    p->index = p->k.len > 0 ? (const int32_t *)a->index.mem + a->index.offset : NULL;
    if ((s = dla_kit_index_check_values(&dla__cpu_kit, kernel, a, scatter, &p->k, p->index)) !=
        DLA_OK)
        return s;
    const dla_view *views[] = {&p->k.ys, &p->k.xs};
    dla__cpu_iter_init(&p->slice, 2, views);
    return DLA_OK;
}

/* The slice space moved to position yi of y and xi of x. */
static inline dla__cpu_iter at_slices(const index_plan *p, int64_t yi, int64_t xi)
{
    dla__cpu_iter it = p->slice;
    it.offset[0] += yi * p->k.ystep;
    it.offset[1] += xi * p->k.xstep;
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
        const int64_t off[2] = {s->offset[0] + yi * p->k.ystep, s->offset[1] + xi * p->k.xstep};
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
    if (slice == 0 || p.k.len == 0)
        return DLA_OK;
    const size_t es = dla_kit_dtype_size(args->y.dtype);
    const dla__cpu_row_fn row = es == 1 ? copy_row_1 : es == 4 ? copy_row_4 : copy_row_8;
    index_ctx c = {(char *)args->y.mem, (const char *)args->x.mem};
    if (slice >= DLA__CPU_PAR_MIN) {
        for (int64_t i = 0; i < p.k.len; i++) {
            const dla__cpu_iter it = at_slices(&p, i, p.index[i * p.k.istep]);
            dla__cpu_iter_run(&it, row, &c);
        }
        return DLA_OK;
    }
    const int64_t total = slice * p.k.len;
#pragma omp parallel for schedule(static) if (total >= DLA__CPU_PAR_MIN)
    for (int64_t i = 0; i < p.k.len; i++)
        walk_slices(&p, i, p.index[i * p.k.istep], row, &c);
    return DLA_OK;
}

dla_status dla__cpu_scatter_add(void *dev, const dla_index_args *args)
{
    index_plan p;
    dla_status s = index_setup("scatter_add", args, 1, &p);
    if (s != DLA_OK)
        return s;
    const int64_t slice = p.slice.numel;
    if (slice == 0 || p.k.len == 0)
        return DLA_OK;
    const dla__cpu_row_fn row = args->y.dtype == DLA_F32 ? add_row_f32 : add_row_f64;
    index_ctx c = {(char *)args->y.mem, (const char *)args->x.mem};
    const int threads = slice * p.k.len >= DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1) {
        for (int64_t i = 0; i < p.k.len; i++)
            walk_slices(&p, p.index[i * p.k.istep], i, row, &c);
        return DLA_OK;
    }
    if (dla__cpu_iter_units(&p.slice, threads) >= threads) {
#pragma omp parallel num_threads(threads)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            for (int64_t i = 0; i < p.k.len; i++) {
                const dla__cpu_iter it = at_slices(&p, p.index[i * p.k.istep], i);
                dla__cpu_iter_run_part(&it, t, nt, row, &c);
            }
        }
        return DLA_OK;
    }
#pragma omp parallel num_threads(threads)
    {
        const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t lo = p.k.target * t / nt, hi = p.k.target * (t + 1) / nt;
        for (int64_t i = 0; i < p.k.len; i++) {
            const int64_t at = p.index[i * p.k.istep];
            if (at < lo || at >= hi)
                continue;
            walk_slices(&p, at, i, row, &c);
        }
    }
    return DLA_OK;
}

/*
 * reduce.c - sum, mean, max and min over the dims where y's dim is 1, with
 * the optional int32 position of the max/min within the reduced block.
 *
 * The dims of x split into kept ones (y's dim equals x's) and reduced ones;
 * each list is coalesced. The work is cut into groups of outputs, reduced
 * in one of two layouts:
 * - runs: the innermost reduced dim is the most contiguous, so one output
 *   reduces runs of memory (vectorized sum, or max with a NaN flag), and a
 *   group is one output;
 * - lanes: a kept dim is more contiguous (or the runs would be short), so a
 *   group is up to LANES outputs side by side along that dim, each reduced
 *   position updates all of them in one vector loop.
 * With one reduced dim and no positions wanted, lanes (and sums over runs
 * of at most BLOCK, one kept dim) go to reduce_lanes.c's vector loops,
 * which keep this file's order of operations and so its bits.
 * Groups go over the OpenMP team; when there are few groups (fewer than
 * PARTS_MAX: a full sum), each group's reduced range is cut into parts
 * whose partial results are combined in order, so ties still go to the
 * first position. How many parts follows the work, not the thread count:
 * the bits are the same with any OMP_NUM_THREADS.
 *
 * Accuracy: partial sums are kept in double for both dtypes, and summed in
 * blocks of BLOCK positions that are then added up, so single results carry
 * one rounding and double results an error that grows with BLOCK + n/BLOCK,
 * not with n.
 */
#include "plugins/cpu/strided.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#define LANES 256
#define BLOCK 1024
/* Most parts one group of a long reduction is cut in (dla__cpu_reduce). */
#define PARTS_MAX 32

typedef struct plan {
    dla_reduce_op op;
    int want_index;
    int lanes; /* layout: 1 lanes, 0 runs */
    /* kept dims; with lanes, dim 0 is the lane dim */
    int nk;
    int64_t kdims[DLA_MAX_DIMS], kx[DLA_MAX_DIMS], ky[DLA_MAX_DIMS], ki[DLA_MAX_DIMS];
    /* reduced dims, column-major order kept (the index counts in it) */
    int nr;
    int64_t rdims[DLA_MAX_DIMS], rx[DLA_MAX_DIMS];
    int64_t nred;
    const char *x;
    char *y;
    int32_t *index;
    int64_t xoff, yoff, ioff;
    int64_t chunks; /* lane groups along kept dim 0 */
    int64_t groups;
} plan;

/* Where group g reads and writes, and how many outputs it has. */
static int64_t group_at(const plan *p, int64_t g, int64_t *xo, int64_t *yo, int64_t *io)
{
    int64_t w = 1, first = 0;
    *xo = p->xoff, *yo = p->yoff, *io = p->ioff;
    if (p->lanes) {
        int64_t c = g % p->chunks;
        g /= p->chunks;
        *xo += c * LANES * p->kx[0], *yo += c * LANES * p->ky[0], *io += c * LANES * p->ki[0];
        w = p->kdims[0] - c * LANES < LANES ? p->kdims[0] - c * LANES : LANES;
        first = 1;
    }
    for (int d = first; d < p->nk; d++) {
        int64_t i = g % p->kdims[d];
        g /= p->kdims[d];
        *xo += i * p->kx[d], *yo += i * p->ky[d], *io += i * p->ki[d];
    }
    return w;
}

/* The position r of the reduced block as an element offset into x. */
static int64_t reduced_at(const plan *p, int64_t r, int64_t *idx)
{
    int64_t off = 0;
    for (int d = 0; d < p->nr; d++) {
        idx[d] = r % p->rdims[d];
        r /= p->rdims[d];
        off += idx[d] * p->rx[d];
    }
    return off;
}

/* Advances the reduced multi-index idx from dim `from` on; returns the
 * change of the x offset. */
static int64_t reduced_next(const plan *p, int64_t *idx, int from)
{
    int64_t delta = 0;
    for (int d = from; d < p->nr; d++) {
        delta += p->rx[d];
        if (++idx[d] < p->rdims[d])
            return delta;
        delta -= idx[d] * p->rx[d];
        idx[d] = 0;
    }
    return delta;
}

/* Merges the partial result of a later range (v1, i1) into an earlier one
 * (v0, i0): NaN wins, then the strictly better, else the earlier stays. */
static void combine(dla_reduce_op op, double *v0, int64_t *i0, double v1, int64_t i1)
{
    if (op == DLA_REDUCE_SUM || op == DLA_REDUCE_MEAN) {
        *v0 += v1;
        return;
    }
    if (isnan(*v0))
        return;
    if (isnan(v1) || (op == DLA_REDUCE_MAX ? v1 > *v0 : v1 < *v0))
        *v0 = v1, *i0 = i1;
}

#define DO_PRAGMA(x) _Pragma(#x)
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))

#define DEFINE_SEG_EXTREME(T, sfx, name, CMP, RED)                                                 \
    /* The extreme of x[0..m) at stride s (NaN ignored) and whether a NaN is                       \
     * there. Not inlined: GCC 12 leaves this omp simd reduction scalar once                       \
     * it sits inside the caller's block loop; a call per block costs nothing. */                  \
    __attribute__((noinline)) static T block_##name##_##sfx(const T *x, int64_t m, int64_t s,      \
                                                            int *has_nan)                          \
    {                                                                                              \
        if (s == 1) {                                                                              \
            T best = x[0];                                                                         \
            int nan = 0;                                                                           \
            DO_PRAGMA(omp simd reduction(RED : best) reduction(| : nan))                           \
            for (int64_t i = 0; i < m; i++) {                                                      \
                const T v = x[i];                                                                  \
                best = CMP(v, best) ? v : best;                                                    \
                nan |= v != v;                                                                     \
            }                                                                                      \
            *has_nan = nan;                                                                        \
            return best;                                                                           \
        }                                                                                          \
        T best = x[0];                                                                             \
        int nan = 0;                                                                               \
        for (int64_t i = 0; i < m; i++) {                                                          \
            const T v = x[i * s];                                                                  \
            best = CMP(v, best) ? v : best;                                                        \
            nan |= v != v;                                                                         \
        }                                                                                          \
        *has_nan = nan;                                                                            \
        return best;                                                                               \
    }                                                                                              \
                                                                                                   \
    /* Folds x[0..n) at stride s (positions pos0...) into (*best, *at); returns                    \
     * 1 once a NaN is taken, which is final. *at < 0: nothing seen yet. */                        \
    static int seg_##name##_##sfx(const T *x, int64_t n, int64_t s, int64_t pos0, int want_index,  \
                                  double *best, int64_t *at)                                       \
    {                                                                                              \
        const T *win = NULL; /* the block that holds the best so far */                            \
        for (int64_t b0 = 0; b0 < n; b0 += BLOCK) {                                                \
            const int64_t m = n - b0 < BLOCK ? n - b0 : BLOCK;                                     \
            const T *xb = x + b0 * s;                                                              \
            int nan;                                                                               \
            const T bm = block_##name##_##sfx(xb, m, s, &nan);                                     \
            if (nan) {                                                                             \
                int64_t j = 0;                                                                     \
                while (xb[j * s] == xb[j * s])                                                     \
                    j++;                                                                           \
                *best = NAN, *at = pos0 + b0 + j;                                                  \
                return 1;                                                                          \
            }                                                                                      \
            if (*at < 0 || CMP((double)bm, *best))                                                 \
                *best = bm, *at = pos0 + b0, win = xb;                                             \
        }                                                                                          \
        /* Only the winning block is searched for the position. */                                 \
        if (want_index && win != NULL) {                                                           \
            const T bm = (T)*best;                                                                 \
            int64_t j = 0;                                                                         \
            while (win[j * s] != bm)                                                               \
                j++;                                                                               \
            *at += j;                                                                              \
        }                                                                                          \
        return 0;                                                                                  \
    }

#define DEFINE_REDUCE(T, sfx)                                                                      \
    static double seg_sum_##sfx(const T *x, int64_t n, int64_t s)                                  \
    {                                                                                              \
        double total = 0;                                                                          \
        for (int64_t b0 = 0; b0 < n; b0 += BLOCK) {                                                \
            const int64_t m = n - b0 < BLOCK ? n - b0 : BLOCK;                                     \
            const T *xb = x + b0 * s;                                                              \
            double part = 0;                                                                       \
            if (s == 1) {                                                                          \
                part = dla__cpu_sum_##sfx(xb, m);                                                  \
            } else {                                                                               \
                _Pragma("omp simd reduction(+:part)")                                              \
                for (int64_t i = 0; i < m; i++)                                                    \
                    part += xb[i * s];                                                             \
            }                                                                                      \
            total += part;                                                                         \
        }                                                                                          \
        return total;                                                                              \
    }                                                                                              \
    DEFINE_SEG_EXTREME(T, sfx, max, GT, max)                                                       \
    DEFINE_SEG_EXTREME(T, sfx, min, LT, min)                                                       \
                                                                                                   \
    /* runs layout: one output, reduced positions [lo, hi). */                                     \
    static void range_runs_##sfx(const plan *p, const T *x, int64_t lo, int64_t hi, double *val,   \
                                 int64_t *at)                                                      \
    {                                                                                              \
        int64_t idx[DLA_MAX_DIMS];                                                                 \
        int64_t off = reduced_at(p, lo, idx);                                                      \
        const int64_t n0 = p->rdims[0], s0 = p->rx[0];                                             \
        for (int64_t pos = lo; pos < hi;) {                                                        \
            const int64_t n = n0 - idx[0] < hi - pos ? n0 - idx[0] : hi - pos;                     \
            const T *run = x + off;                                                                \
            switch (p->op) {                                                                       \
            case DLA_REDUCE_MAX:                                                                   \
                if (seg_max_##sfx(run, n, s0, pos, p->want_index, val, at))                        \
                    return;                                                                        \
                break;                                                                             \
            case DLA_REDUCE_MIN:                                                                   \
                if (seg_min_##sfx(run, n, s0, pos, p->want_index, val, at))                        \
                    return;                                                                        \
                break;                                                                             \
            default: *val += seg_sum_##sfx(run, n, s0); break;                                     \
            }                                                                                      \
            pos += n;                                                                              \
            off -= idx[0] * s0;                                                                    \
            idx[0] = 0;                                                                            \
            off += reduced_next(p, idx, 1);                                                        \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* lanes layout: w outputs along kept dim 0, reduced positions [lo, hi). */                    \
    static void range_lanes_##sfx(const plan *p, const T *x, int64_t w, int64_t lo, int64_t hi,    \
                                  double *val, int64_t *at)                                        \
    {                                                                                              \
        int64_t idx[DLA_MAX_DIMS];                                                                 \
        int64_t off = reduced_at(p, lo, idx);                                                      \
        const int64_t sl = p->kx[0];                                                               \
        /* One reduced dim, no positions wanted: reduce_lanes.c's vector                           \
         * loops (the same order and bits; outputs apart in memory too). */                        \
        if (p->nr == 1 && !p->want_index &&                                                        \
            (hi - lo <= BLOCK || (p->op != DLA_REDUCE_SUM && p->op != DLA_REDUCE_MEAN))) {         \
            dla__cpu_reduce_lanes_##sfx(x + off, w, sl, hi - lo, p->rx[0], p->op, val);            \
            return;                                                                                \
        }                                                                                          \
        if (p->op == DLA_REDUCE_SUM || p->op == DLA_REDUCE_MEAN) {                                 \
            double part[LANES];                                                                    \
            for (int64_t pos = lo; pos < hi;) {                                                    \
                const int64_t end = hi - pos < BLOCK ? hi : pos + BLOCK;                           \
                for (int64_t i = 0; i < w; i++)                                                    \
                    part[i] = 0;                                                                   \
                for (; pos < end; pos++) {                                                         \
                    const T *xr = x + off;                                                         \
                    if (sl == 1) {                                                                 \
                        _Pragma("omp simd")                                                        \
                        for (int64_t i = 0; i < w; i++)                                            \
                            part[i] += xr[i];                                                      \
                    } else {                                                                       \
                        for (int64_t i = 0; i < w; i++)                                            \
                            part[i] += xr[i * sl];                                                 \
                    }                                                                              \
                    off += reduced_next(p, idx, 0);                                                \
                }                                                                                  \
                for (int64_t i = 0; i < w; i++)                                                    \
                    val[i] += part[i];                                                             \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        const int is_max = p->op == DLA_REDUCE_MAX;                                                \
        for (int64_t pos = lo; pos < hi; pos++) {                                                  \
            const T *xr = x + off;                                                                 \
            if (pos == lo) {                                                                       \
                for (int64_t i = 0; i < w; i++)                                                    \
                    val[i] = xr[i * sl], at[i] = pos;                                              \
            } else if (is_max) {                                                                   \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < w; i++) {                                                  \
                    const double v = xr[i * sl], b = val[i];                                       \
                    const int take = v > b || (v != v && b == b);                                  \
                    val[i] = take ? v : b;                                                         \
                    at[i] = take ? pos : at[i];                                                    \
                }                                                                                  \
            } else {                                                                               \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < w; i++) {                                                  \
                    const double v = xr[i * sl], b = val[i];                                       \
                    const int take = v < b || (v != v && b == b);                                  \
                    val[i] = take ? v : b;                                                         \
                    at[i] = take ? pos : at[i];                                                    \
                }                                                                                  \
            }                                                                                      \
            off += reduced_next(p, idx, 0);                                                        \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Reduces positions [lo, hi) of group g into val/at (w entries). */                           \
    static int64_t group_reduce_##sfx(const plan *p, int64_t g, int64_t lo, int64_t hi,            \
                                      double *val, int64_t *at)                                    \
    {                                                                                              \
        int64_t xo, yo, io;                                                                        \
        const int64_t w = group_at(p, g, &xo, &yo, &io);                                           \
        for (int64_t i = 0; i < w; i++)                                                            \
            val[i] = 0, at[i] = -1;                                                                \
        const T *x = (const T *)p->x + xo;                                                         \
        if (lo >= hi) /* an empty block (a dim of 0) sums to 0 */                                  \
            return w;                                                                              \
        if (p->lanes)                                                                              \
            range_lanes_##sfx(p, x, w, lo, hi, val, at);                                           \
        else                                                                                       \
            range_runs_##sfx(p, x, lo, hi, val, at);                                               \
        return w;                                                                                  \
    }                                                                                              \
                                                                                                   \
    static void group_write_##sfx(const plan *p, int64_t g, const double *val, const int64_t *at)  \
    {                                                                                              \
        int64_t xo, yo, io;                                                                        \
        const int64_t w = group_at(p, g, &xo, &yo, &io);                                           \
        const int64_t sy = p->lanes ? p->ky[0] : 0, si = p->lanes ? p->ki[0] : 0;                  \
        T *y = (T *)p->y + yo;                                                                     \
        /* A divide, not a product with 1/n: rounded once, as the sum                              \
         * of blocks (fused.c) divides, so a mean has the same bits                                \
         * whichever path the layout takes. */                                                     \
        const double nred = (double)p->nred;                                                       \
        for (int64_t i = 0; i < w; i++)                                                            \
            y[i * sy] = (T)(p->op == DLA_REDUCE_MEAN ? val[i] / nred : val[i]);                    \
        if (p->want_index)                                                                         \
            for (int64_t i = 0; i < w; i++)                                                        \
                p->index[io + i * si] = (int32_t)at[i];                                            \
    }

DEFINE_REDUCE(float, f32)
DEFINE_REDUCE(double, f64)

/* Splits x's dims into coalesced kept and reduced lists and picks the
 * layout. Returns the number of outputs. */
static int64_t make_plan(plan *p, const dla_reduce_args *a)
{
    const dla_view *x = &a->x, *y = &a->y, *ix = &a->index;
    p->op = a->op;
    p->want_index = ix->mem != NULL;
    /* The kit's split, in this file's own layout (int counts, the
     * lanes' swap below). */
    dla_kit_reduce r;
    dla_kit_reduce_split(a, &r);
    const int64_t outputs = r.outputs;
    p->nk = (int)r.nk, p->nr = (int)r.nr, p->nred = r.nred;
    memcpy(p->kdims, r.kd, sizeof r.kd), memcpy(p->kx, r.kx, sizeof r.kx);
    memcpy(p->ky, r.ky, sizeof r.ky), memcpy(p->ki, r.ki, sizeof r.ki);
    memcpy(p->rdims, r.rd, sizeof r.rd), memcpy(p->rx, r.rx, sizeof r.rx);
    if (p->nk == 0)
        p->nk = 1, p->kdims[0] = 1, p->kx[0] = p->ky[0] = p->ki[0] = 0;

    /* Lanes along the kept dim that is most contiguous in x, when it beats
     * the runs along the innermost reduced dim (or those runs are short). */
    int best = 0;
    for (int d = 1; d < p->nk; d++)
        if (p->kx[d] < p->kx[best])
            best = d;
    p->lanes = p->kdims[best] > 1 && (p->kx[best] < p->rx[0] || p->rdims[0] < 32);
    if (p->lanes && best != 0) {
        int64_t t;
#define SWAP(arr) (t = arr[0], arr[0] = arr[best], arr[best] = t)
        SWAP(p->kdims), SWAP(p->kx), SWAP(p->ky), SWAP(p->ki);
#undef SWAP
    }
    p->x = (const char *)x->mem;
    p->y = (char *)y->mem;
    p->index = (int32_t *)ix->mem;
    p->xoff = x->offset, p->yoff = y->offset, p->ioff = p->want_index ? ix->offset : 0;
    p->chunks = p->lanes ? (p->kdims[0] + LANES - 1) / LANES : 1;
    p->groups = p->lanes ? outputs / p->kdims[0] * p->chunks : outputs;
    return outputs;
}

/* Sums over short contiguous runs, one coalesced kept dim (reduce_lanes.c),
 * LANES outputs a chunk. */
static void short_runs_chunk(const plan *p, int64_t c, int f64)
{
    double val[LANES];
    const int64_t i0 = c * LANES, w = p->kdims[0] - i0 < LANES ? p->kdims[0] - i0 : LANES;
    const int64_t xo = p->xoff + i0 * p->kx[0];
    if (f64)
        dla__cpu_reduce_runs_f64((const double *)p->x + xo, w, p->kx[0], p->nred, val);
    else
        dla__cpu_reduce_runs_f32((const float *)p->x + xo, w, p->kx[0], p->nred, val);
    const double nred = (double)p->nred;
    for (int64_t i = 0; i < w; i++) {
        /* A divide, as group_write's. */
        const double v = p->op == DLA_REDUCE_MEAN ? val[i] / nred : val[i];
        const int64_t yo = p->yoff + (i0 + i) * p->ky[0];
        if (f64)
            ((double *)p->y)[yo] = v;
        else
            ((float *)p->y)[yo] = (float)v;
    }
}

/* Group g reduced over its whole range and written. */
static void whole_group(const plan *p, int64_t g, int f64)
{
    double val[LANES];
    int64_t at[LANES];
    if (f64) {
        group_reduce_f64(p, g, 0, p->nred, val, at);
        group_write_f64(p, g, val, at);
    } else {
        group_reduce_f32(p, g, 0, p->nred, val, at);
        group_write_f32(p, g, val, at);
    }
}

dla_status dla__cpu_reduce(void *dev, const dla_reduce_args *args)
{
    const dla_plugin_host *h = dla__cpu_host;
    dla_status s = dla_kit_check_reduce(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    plan p;
    const int64_t outputs = make_plan(&p, args);
    if (outputs == 0)
        return DLA_OK;
    char bx[DLA_KIT_DIMS_BUF];
    if (p.nred == 0 && (p.op == DLA_REDUCE_MAX || p.op == DLA_REDUCE_MIN))
        return h->error(DLA_ERR_SHAPE,
                        "cpu reduce: argument x: dims %s leave nothing to take the %s of",
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims),
                        p.op == DLA_REDUCE_MAX ? "max" : "min");
    if (p.want_index && p.nred > INT32_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu reduce: argument index: %lld reduced elements of x (%s) exceed int32",
                        (long long)p.nred,
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims));
    /* A sum whose positions come in runs spread over x (a batch's channel
     * statistics: 576 positions of a channel in each of 128 images) streams
     * x in memory order into an accumulator per output (fused.c), rather
     * than walking all of x once per output, which defeats the prefetcher:
     * twice as fast for batchnorm's shapes. */
    if ((p.op == DLA_REDUCE_SUM || p.op == DLA_REDUCE_MEAN) && !p.want_index && !p.lanes &&
        p.nr >= 2)
        return dla__cpu_sum_blocks(&args->y, &args->x, p.op == DLA_REDUCE_MEAN);
    const int f64 = args->x.dtype == DLA_F64;
    const int64_t total = outputs * p.nred;
    const int threads = total >= DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    /* Sums of short contiguous runs, one kept dim: side by side
     * (reduce_lanes.c), with the bits of whole_group's one at a time. */
    if ((p.op == DLA_REDUCE_SUM || p.op == DLA_REDUCE_MEAN) && !p.want_index && !p.lanes &&
        p.nr == 1 && p.nk == 1 && p.rx[0] == 1 && p.nred <= BLOCK) {
        const int64_t chunks = (p.kdims[0] + LANES - 1) / LANES;
        if (threads > 1 && chunks > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (int64_t c = 0; c < chunks; c++)
                short_runs_chunk(&p, c, f64);
        } else {
            for (int64_t c = 0; c < chunks; c++)
                short_runs_chunk(&p, c, f64);
        }
        return DLA_OK;
    }

    /* Few groups, long ranges: each group cut in parts of at least 4,096
     * elements, at most PARTS_MAX. The parts follow the work alone, not
     * the thread count, so that a sum's bits are the same with any
     * OMP_NUM_THREADS. */
    int64_t parts = 1;
    if (total >= DLA__CPU_PAR_MIN && p.groups < PARTS_MAX) {
        parts = p.nred / 4096 > PARTS_MAX ? PARTS_MAX : p.nred / 4096;
        if (parts < 1)
            parts = 1;
    }
    const int64_t groups = p.groups;
    if (parts == 1) {
        /* Not even an inactive parallel region for small work: entering one
         * costs more than a small reduction. */
        if (threads > 1 && groups > 1) {
#pragma omp parallel for schedule(static) num_threads(threads)
            for (int64_t g = 0; g < groups; g++)
                whole_group(&p, g, f64);
        } else {
            for (int64_t g = 0; g < groups; g++)
                whole_group(&p, g, f64);
        }
        return DLA_OK;
    }

    /* Few groups, long ranges: each part of each group into its own slot. */
    const size_t slots = (size_t)(groups * parts * LANES);
    double *val = h->alloc(slots * sizeof *val, DLA__CPU_ALIGN);
    int64_t *at = h->alloc(slots * sizeof *at, DLA__CPU_ALIGN);
    if (val == NULL || at == NULL) {
        h->free(val);
        h->free(at);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu reduce: partial results of x (%s)",
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims));
    }
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
    for (int64_t g = 0; g < groups; g++)
        for (int64_t part = 0; part < parts; part++) {
            const int64_t lo = p.nred * part / parts, hi = p.nred * (part + 1) / parts;
            const size_t slot = (size_t)((g * parts + part) * LANES);
            if (f64)
                group_reduce_f64(&p, g, lo, hi, val + slot, at + slot);
            else
                group_reduce_f32(&p, g, lo, hi, val + slot, at + slot);
        }
    for (int64_t g = 0; g < groups; g++) {
        double *v0 = val + g * parts * LANES;
        int64_t *a0 = at + g * parts * LANES;
        int64_t xo, yo, io;
        const int64_t w = group_at(&p, g, &xo, &yo, &io);
        for (int64_t part = 1; part < parts; part++)
            for (int64_t i = 0; i < w; i++)
                combine(p.op, &v0[i], &a0[i], v0[part * LANES + i], a0[part * LANES + i]);
        if (f64)
            group_write_f64(&p, g, v0, a0);
        else
            group_write_f32(&p, g, v0, a0);
    }
    h->free(val);
    h->free(at);
    return DLA_OK;
}

/*
 * pool.cl - max and average pooling over 1 to 3 spatial dims, forward and
 * backward.
 *
 * Operands are five logical dims (s0 s1 s2 channels batch) with the
 * strides of their views; a plane is one (channel, batch) pair. Forward is
 * one work-item per y element. Backward is one work-item per x element,
 * which gathers from the windows that cover it (adding in T, in
 * increasing output order, averages as dy / count: the cpu plugin's order
 * and rounding), so overlapping windows need no atomics. A max index
 * that does not name this element adds nothing; the forward never writes
 * such an index.
 */
/* The plugin kit's dla_kit_pool (dlaccel/plugin_kit_geom.h), member for
 * member. */
typedef struct dla_pool {
    long in[3], out[3], win[3], stride[3], pad[3];
    long channels, planes, exclude_pad, full;
    long xs[5], ys[5], is[5];
    long xoff, yoff, ioff;
    long x_spatial_dense;
} dla_pool;

#ifdef DLA_FP64
#define PACC double
#else
#define PACC float
#endif

static long plane_off(const dla_pool *g, const long *s, long p)
{
    return (p % g->channels) * s[3] + (p / g->channels) * s[4];
}

/* Inputs [*lo, *hi) under the window at output o along dim d. */
static void window_range(const dla_pool *g, int d, long o, long *lo, long *hi)
{
    const long start = o * g->stride[d] - g->pad[d];
    *lo = start > 0 ? start : 0;
    *hi = start + g->win[d] < g->in[d] ? start + g->win[d] : g->in[d];
}

/* Outputs [*lo, *hi) whose windows cover input i along dim d. */
static void cover_range(const dla_pool *g, int d, long i, long *lo, long *hi)
{
    const long p = i + g->pad[d], s = g->stride[d];
    const long first = p - g->win[d] + 1 <= 0 ? 0 : (p - g->win[d] + 1 + s - 1) / s;
    const long last = p / s + 1;
    *lo = first;
    *hi = last < g->out[d] ? last : g->out[d];
}

static long window_count(const dla_pool *g, long o0, long o1, long o2)
{
    if (!g->exclude_pad)
        return g->full;
    long a0, b0, a1, b1, a2, b2;
    window_range(g, 0, o0, &a0, &b0);
    window_range(g, 1, o1, &a1, &b1);
    window_range(g, 2, o2, &a2, &b2);
    return (b0 - a0) * (b1 - a1) * (b2 - a2);
}

#define DEF_POOL(T)                                                            \
    __kernel void pool_max_##T(dla_pool g, int want_index, __global T *y,      \
                               __global const T *x, __global int *index)       \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        const long total = g.planes * g.out[0] * g.out[1] * g.out[2];          \
        if (gid >= total)                                                      \
            return;                                                            \
        const long o0 = gid % g.out[0], o1 = gid / g.out[0] % g.out[1];        \
        const long o2 = gid / (g.out[0] * g.out[1]) % g.out[2];                \
        const long p = gid / (g.out[0] * g.out[1] * g.out[2]);                 \
        long lo0, hi0, lo1, hi1, lo2, hi2;                                     \
        window_range(&g, 0, o0, &lo0, &hi0);                                   \
        window_range(&g, 1, o1, &lo1, &hi1);                                   \
        window_range(&g, 2, o2, &lo2, &hi2);                                   \
        const long xb = g.xoff + plane_off(&g, g.xs, p);                       \
        T best = 0;                                                            \
        long pos = -1;                                                         \
        for (long i2 = lo2; i2 < hi2; i2++)                                    \
            for (long i1 = lo1; i1 < hi1; i1++)                                \
                for (long i0 = lo0; i0 < hi0; i0++) {                          \
                    const T v = x[xb + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]]; \
                    if (pos < 0 || v > best || (isnan(v) && !isnan(best))) {   \
                        best = v;                                              \
                        pos = (i2 * g.in[1] + i1) * g.in[0] + i0;              \
                    }                                                          \
                }                                                              \
        y[g.yoff + plane_off(&g, g.ys, p) + o0 * g.ys[0] + o1 * g.ys[1] +      \
          o2 * g.ys[2]] = best;                                                \
        if (want_index)                                                        \
            index[g.ioff + plane_off(&g, g.is, p) + o0 * g.is[0] +             \
                  o1 * g.is[1] + o2 * g.is[2]] = (int)pos;                     \
    }                                                                          \
                                                                               \
    __kernel void pool_avg_##T(dla_pool g, __global T *y, __global const T *x) \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        const long total = g.planes * g.out[0] * g.out[1] * g.out[2];          \
        if (gid >= total)                                                      \
            return;                                                            \
        const long o0 = gid % g.out[0], o1 = gid / g.out[0] % g.out[1];        \
        const long o2 = gid / (g.out[0] * g.out[1]) % g.out[2];                \
        const long p = gid / (g.out[0] * g.out[1] * g.out[2]);                 \
        long lo0, hi0, lo1, hi1, lo2, hi2;                                     \
        window_range(&g, 0, o0, &lo0, &hi0);                                   \
        window_range(&g, 1, o1, &lo1, &hi1);                                   \
        window_range(&g, 2, o2, &lo2, &hi2);                                   \
        const long xb = g.xoff + plane_off(&g, g.xs, p);                       \
        PACC sum = 0;                                                          \
        for (long i2 = lo2; i2 < hi2; i2++)                                    \
            for (long i1 = lo1; i1 < hi1; i1++)                                \
                for (long i0 = lo0; i0 < hi0; i0++)                            \
                    sum += x[xb + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]]; \
        const long count = g.exclude_pad                                       \
                               ? (hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2)       \
                               : g.full;                                       \
        y[g.yoff + plane_off(&g, g.ys, p) + o0 * g.ys[0] + o1 * g.ys[1] +      \
          o2 * g.ys[2]] = (T)(count > 0 ? sum / (PACC)count : 0);              \
    }                                                                          \
                                                                               \
    __kernel void pool_back_##T(dla_pool g, int is_max, __global T *x,         \
                                __global const T *y, __global const int *index) \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        const long total = g.planes * g.in[0] * g.in[1] * g.in[2];             \
        if (gid >= total)                                                      \
            return;                                                            \
        const long i0 = gid % g.in[0], i1 = gid / g.in[0] % g.in[1];           \
        const long i2 = gid / (g.in[0] * g.in[1]) % g.in[2];                   \
        const long p = gid / (g.in[0] * g.in[1] * g.in[2]);                    \
        long lo0, hi0, lo1, hi1, lo2, hi2;                                     \
        cover_range(&g, 0, i0, &lo0, &hi0);                                    \
        cover_range(&g, 1, i1, &lo1, &hi1);                                    \
        cover_range(&g, 2, i2, &lo2, &hi2);                                    \
        const long here = (i2 * g.in[1] + i1) * g.in[0] + i0;                  \
        const long yb = g.yoff + plane_off(&g, g.ys, p);                       \
        const long ib = g.ioff + plane_off(&g, g.is, p);                       \
        T sum = 0;                                                             \
        for (long o2 = lo2; o2 < hi2; o2++)                                    \
            for (long o1 = lo1; o1 < hi1; o1++)                                \
                for (long o0 = lo0; o0 < hi0; o0++) {                          \
                    const T dy = y[yb + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2]]; \
                    if (is_max) {                                              \
                        if (index[ib + o0 * g.is[0] + o1 * g.is[1] +           \
                                  o2 * g.is[2]] == here)                       \
                            sum += dy;                                         \
                    } else {                                                   \
                        sum += dy / (T)window_count(&g, o0, o1, o2);           \
                    }                                                          \
                }                                                              \
        x[g.xoff + plane_off(&g, g.xs, p) + i0 * g.xs[0] + i1 * g.xs[1] +      \
          i2 * g.xs[2]] = sum;                                                 \
    }

DEF_POOL(float)
#ifdef DLA_FP64
DEF_POOL(double)
#endif

/*
 * conv.cl - direct convolution kernels: forward, backward data and
 * backward filter, 1 to 3 spatial dims with stride, dilation, padding
 * (negative too: cropping) and groups, every operand addressed through the
 * strides of its view (dla_conv).
 *
 * forward:         work-item (o0, o1 + o2 out1, f + b F) sums its taps and
 *                  channels; the taps that land inside x are worked out
 *                  per dim first, so the inner loops test nothing;
 * backward data:   work-item (i0, i1 + i2 in1, c + b C) sums, over its
 *                  group's filters, the taps whose output position is
 *                  whole and inside y (no division when every stride is
 *                  1, the common case);
 * backward filter: work-item (w element, part) sums over the images of
 *                  its part (a contiguous share of the batch) and the
 *                  output positions whose input lands inside x (again
 *                  worked out per dim); with several parts conv_wsum adds
 *                  the partial sums in part order.
 * Each work-item writes only its own element, so nothing races, and the
 * outputs are written, not added to. Sums are kept in T. Spatial
 * coordinates are ints (the host keeps every size within int32): 64-bit
 * division costs several times more on every device.
 */
/* The plugin kit's dla_kit_conv (dlaccel/plugin_kit_geom.h), member for
 * member, then conv.c's parts. */
typedef struct dla_conv {
    long in[3], out[3], fs[3], st[3], dl[3], pb[3];
    long batch, C, F, G, Cg, Fg, ntaps, in_px, out_px;
    long xs[3], xc, xb, xoff;
    long ws[3], wc, wf, wg, woff;
    long ys[3], yf, yb, yoff;
    long bs, boff, has_bias;
    long nspatial;
    long parts;
} dla_conv;

/* The taps [*lo, *hi) of dim d whose input o st - pb + k dl lies in x. */
static void conv_taps(const dla_conv *g, int d, long o, int *lo, int *hi)
{
    const long s = o * g->st[d] - g->pb[d], dl = g->dl[d];
    const long first = s < 0 ? (-s + dl - 1) / dl : 0;
    const long last = g->in[d] - 1 - s >= 0 ? (g->in[d] - 1 - s) / dl + 1 : 0;
    *lo = (int)first;
    *hi = (int)(last < g->fs[d] ? last : g->fs[d]);
}

/* The outputs [*lo, *hi) of dim d whose input o st - pb + k dl (tap k)
 * lies in x. */
static void conv_outs(const dla_conv *g, int d, long k, int *lo, int *hi)
{
    const long a = g->pb[d] - k * g->dl[d], st = g->st[d];
    const long first = a > 0 ? (a + st - 1) / st : 0;
    const long top = g->in[d] - 1 + a;
    const long last = top >= 0 ? top / st + 1 : 0;
    *lo = (int)first;
    *hi = (int)(last < g->out[d] ? last : g->out[d]);
}

#define DEF_CONV(T)                                                            \
    __kernel void conv_fwd_##T(dla_conv g, int has_bias, __global T *y,       \
                               __global const T *x, __global const T *w,      \
                               __global const T *bias)                        \
    {                                                                          \
        /* g1 and g2 run to out1 x out2 and F x batch: past int range on a \
         * large layer, while each index they hold fits an int. */         \
        const int o0 = get_global_id(0);                                       \
        const long g1 = get_global_id(1), g2 = get_global_id(2);               \
        if (o0 >= g.out[0] || g1 >= g.out[1] * g.out[2])                       \
            return;                                                            \
        const int o1 = (int)(g1 % g.out[1]), o2 = (int)(g1 / g.out[1]);        \
        const int f = (int)(g2 % g.F), b = (int)(g2 / g.F);                    \
        const int grp = f / (int)g.Fg, fl = f % (int)g.Fg;                     \
        int lo0, hi0, lo1, hi1, lo2, hi2;                                      \
        conv_taps(&g, 0, o0, &lo0, &hi0);                                      \
        conv_taps(&g, 1, o1, &lo1, &hi1);                                      \
        conv_taps(&g, 2, o2, &lo2, &hi2);                                      \
        const long s0 = o0 * g.st[0] - g.pb[0], s1 = o1 * g.st[1] - g.pb[1];   \
        const long s2 = o2 * g.st[2] - g.pb[2];                                \
        T acc = 0;                                                             \
        for (int cl = 0; cl < g.Cg; cl++) {                                    \
            const long xc = g.xoff + (grp * g.Cg + cl) * g.xc + b * g.xb;      \
            const long wc = g.woff + cl * g.wc + fl * g.wf + grp * g.wg;       \
            for (int k2 = lo2; k2 < hi2; k2++)                                 \
                for (int k1 = lo1; k1 < hi1; k1++) {                           \
                    const long xr = xc + (s2 + k2 * g.dl[2]) * g.xs[2] +       \
                                    (s1 + k1 * g.dl[1]) * g.xs[1];             \
                    const long wr = wc + k2 * g.ws[2] + k1 * g.ws[1];          \
                    for (int k0 = lo0; k0 < hi0; k0++)                         \
                        acc += w[wr + k0 * g.ws[0]] *                          \
                               x[xr + (s0 + k0 * g.dl[0]) * g.xs[0]];          \
                }                                                              \
        }                                                                      \
        if (has_bias)                                                          \
            acc += bias[g.boff + f * g.bs];                                    \
        y[g.yoff + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2] + f * g.yf +     \
          b * g.yb] = acc;                                                     \
    }                                                                          \
                                                                               \
    /* ST1: every stride is 1, so an output position needs no division. */ \
    __kernel void conv_bwd_data_##T(dla_conv g, int st1, __global T *x,        \
                                    __global const T *y, __global const T *w)  \
    {                                                                          \
        const int i0 = get_global_id(0);                                       \
        const long g1 = get_global_id(1), g2 = get_global_id(2);               \
        if (i0 >= g.in[0] || g1 >= g.in[1] * g.in[2])                          \
            return;                                                            \
        const int i[3] = {i0, (int)(g1 % g.in[1]), (int)(g1 / g.in[1])};       \
        const int c = (int)(g2 % g.C), b = (int)(g2 / g.C);                    \
        const int grp = c / (int)g.Cg, cl = c % (int)g.Cg;                     \
        const int a0 = i[0] + (int)g.pb[0], a1 = i[1] + (int)g.pb[1];          \
        const int a2 = i[2] + (int)g.pb[2];                                    \
        const int st0 = g.st[0], st1d = g.st[1], st2 = g.st[2];                \
        const int dl0 = g.dl[0], dl1 = g.dl[1], dl2 = g.dl[2];                 \
        const int out0 = g.out[0], out1 = g.out[1], out2 = g.out[2];           \
        T acc = 0;                                                             \
        for (int fl = 0; fl < g.Fg; fl++) {                                    \
            const long yfb = g.yoff + (grp * g.Fg + fl) * g.yf + b * g.yb;     \
            const long wc = g.woff + cl * g.wc + fl * g.wf + grp * g.wg;       \
            for (int k2 = 0; k2 < g.fs[2]; k2++) {                             \
                int t2 = a2 - k2 * dl2;                                        \
                if (t2 < 0 || (!st1 && t2 % st2))                              \
                    continue;                                                  \
                t2 = st1 ? t2 : t2 / st2;                                      \
                if (t2 >= out2)                                                \
                    continue;                                                  \
                for (int k1 = 0; k1 < g.fs[1]; k1++) {                         \
                    int t1 = a1 - k1 * dl1;                                    \
                    if (t1 < 0 || (!st1 && t1 % st1d))                         \
                        continue;                                              \
                    t1 = st1 ? t1 : t1 / st1d;                                 \
                    if (t1 >= out1)                                            \
                        continue;                                              \
                    const long yr = yfb + t2 * g.ys[2] + t1 * g.ys[1];         \
                    const long wr = wc + k2 * g.ws[2] + k1 * g.ws[1];          \
                    for (int k0 = 0; k0 < g.fs[0]; k0++) {                     \
                        int t0 = a0 - k0 * dl0;                                \
                        if (t0 < 0 || (!st1 && t0 % st0))                      \
                            continue;                                          \
                        t0 = st1 ? t0 : t0 / st0;                              \
                        if (t0 >= out0)                                        \
                            continue;                                          \
                        acc += w[wr + k0 * g.ws[0]] * y[yr + t0 * g.ys[0]];    \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
        x[g.xoff + i[0] * g.xs[0] + i[1] * g.xs[1] + i[2] * g.xs[2] +          \
          c * g.xc + b * g.xb] = acc;                                          \
    }                                                                          \
                                                                               \
    static long w_at_##T(const dla_conv *g, long e, int *k, int *cl, int *fl,  \
                         int *grp)                                             \
    {                                                                          \
        k[0] = e % g->fs[0];                                                   \
        k[1] = e / g->fs[0] % g->fs[1];                                        \
        k[2] = e / (g->fs[0] * g->fs[1]) % g->fs[2];                           \
        *cl = e / g->ntaps % g->Cg;                                            \
        *fl = e / (g->ntaps * g->Cg) % g->Fg;                                  \
        *grp = e / (g->ntaps * g->Cg * g->Fg);                                 \
        return g->woff + k[0] * g->ws[0] + k[1] * g->ws[1] + k[2] * g->ws[2] + \
               *cl * g->wc + *fl * g->wf + *grp * g->wg;                       \
    }                                                                          \
                                                                               \
    __kernel void conv_bwd_filter_##T(dla_conv g, __global T *w,               \
                                      __global const T *x,                     \
                                      __global const T *y, __global T *part_v) \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        const long nw = g.ntaps * g.Cg * g.Fg * g.G;                           \
        if (gid >= nw * g.parts)                                               \
            return;                                                            \
        const long e = gid / g.parts, part = gid % g.parts;                    \
        int k[3], cl, fl, grp;                                                 \
        const long wat = w_at_##T(&g, e, k, &cl, &fl, &grp);                   \
        int lo0, hi0, lo1, hi1, lo2, hi2;                                      \
        conv_outs(&g, 0, k[0], &lo0, &hi0);                                    \
        conv_outs(&g, 1, k[1], &lo1, &hi1);                                    \
        conv_outs(&g, 2, k[2], &lo2, &hi2);                                    \
        const long xbase = g.xoff + (grp * g.Cg + cl) * g.xc +                 \
                           (k[0] * g.dl[0] - g.pb[0]) * g.xs[0] +              \
                           (k[1] * g.dl[1] - g.pb[1]) * g.xs[1] +              \
                           (k[2] * g.dl[2] - g.pb[2]) * g.xs[2];               \
        const long ybase = g.yoff + (grp * g.Fg + fl) * g.yf;                  \
        const long xs0 = g.st[0] * g.xs[0], xs1 = g.st[1] * g.xs[1];           \
        const long xs2 = g.st[2] * g.xs[2];                                    \
        const int b0 = g.batch * part / g.parts;                               \
        const int b1 = g.batch * (part + 1) / g.parts;                         \
        T acc = 0;                                                             \
        for (int b = b0; b < b1; b++)                                          \
            for (int o2 = lo2; o2 < hi2; o2++)                                 \
                for (int o1 = lo1; o1 < hi1; o1++) {                           \
                    const long xr = xbase + b * g.xb + o2 * xs2 + o1 * xs1;    \
                    const long yr = ybase + b * g.yb + o2 * g.ys[2] +          \
                                    o1 * g.ys[1];                              \
                    for (int o0 = lo0; o0 < hi0; o0++)                         \
                        acc += x[xr + o0 * xs0] * y[yr + o0 * g.ys[0]];        \
                }                                                              \
        if (g.parts > 1)                                                       \
            part_v[gid] = acc;                                                 \
        else                                                                   \
            w[wat] = acc;                                                      \
    }                                                                          \
                                                                               \
    __kernel void conv_wsum_##T(dla_conv g, __global T *w,                     \
                                __global const T *part_v)                      \
    {                                                                          \
        const long e = get_global_id(0);                                       \
        if (e >= g.ntaps * g.Cg * g.Fg * g.G)                                  \
            return;                                                            \
        int k[3], cl, fl, grp;                                                 \
        const long wat = w_at_##T(&g, e, k, &cl, &fl, &grp);                   \
        T acc = 0;                                                             \
        for (long part = 0; part < g.parts; part++)                            \
            acc += part_v[e * g.parts + part];                                 \
        w[wat] = acc;                                                          \
    }

DEF_CONV(float)
#ifdef DLA_FP64
DEF_CONV(double)
#endif

/*
 * conv.cl - direct convolution kernels: forward, backward data and
 * backward filter, 1 to 3 spatial dims with stride, dilation, padding
 * (negative too: cropping) and groups, every operand addressed through the
 * strides of its view (dla_conv).
 *
 * forward:         one work-item per y element sums its taps and channels;
 * backward data:   one work-item per x element sums, over its group's
 *                  filters, the taps whose output position is whole and
 *                  inside y;
 * backward filter: work-item (w element, part) sums over part's share of
 *                  the (image, output position) pairs, interleaved on a
 *                  GPU and a contiguous run on a CPU, as the reduce kernel
 *                  deals them; with several parts conv_wsum adds the
 *                  partial sums in part order.
 * Each work-item writes only its own element, so nothing races, and the
 * outputs are written, not added to. Sums are kept in T.
 */
typedef struct dla_conv {
    long in[3], out[3], fs[3], st[3], dl[3], pb[3];
    long batch, C, F, G, Cg, Fg, ntaps, in_px, out_px, parts, chunked;
    long xs[3], xc, xb, xoff;
    long ws[3], wc, wf, wg, woff;
    long ys[3], yf, yb, yoff;
    long bs, boff;
} dla_conv;

#define DEF_CONV(T)                                                            \
    __kernel void conv_fwd_##T(dla_conv g, int has_bias, __global T *y,       \
                               __global const T *x, __global const T *w,      \
                               __global const T *bias)                        \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        if (gid >= g.out_px * g.F * g.batch)                                   \
            return;                                                            \
        const long o0 = gid % g.out[0], o1 = gid / g.out[0] % g.out[1];        \
        const long o2 = gid / (g.out[0] * g.out[1]) % g.out[2];                \
        const long f = gid / g.out_px % g.F, b = gid / (g.out_px * g.F);       \
        const long grp = f / g.Fg, fl = f % g.Fg;                              \
        const long s0 = o0 * g.st[0] - g.pb[0], s1 = o1 * g.st[1] - g.pb[1];   \
        const long s2 = o2 * g.st[2] - g.pb[2];                                \
        T acc = 0;                                                             \
        for (long cl = 0; cl < g.Cg; cl++) {                                   \
            const long xc = g.xoff + (grp * g.Cg + cl) * g.xc + b * g.xb;      \
            const long wc = g.woff + cl * g.wc + fl * g.wf + grp * g.wg;       \
            for (long k2 = 0; k2 < g.fs[2]; k2++) {                            \
                const long i2 = s2 + k2 * g.dl[2];                             \
                if (i2 < 0 || i2 >= g.in[2])                                   \
                    continue;                                                  \
                for (long k1 = 0; k1 < g.fs[1]; k1++) {                        \
                    const long i1 = s1 + k1 * g.dl[1];                         \
                    if (i1 < 0 || i1 >= g.in[1])                               \
                        continue;                                              \
                    for (long k0 = 0; k0 < g.fs[0]; k0++) {                    \
                        const long i0 = s0 + k0 * g.dl[0];                     \
                        if (i0 < 0 || i0 >= g.in[0])                           \
                            continue;                                          \
                        acc += w[wc + k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2]] * \
                               x[xc + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]]; \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
        if (has_bias)                                                          \
            acc += bias[g.boff + f * g.bs];                                    \
        y[g.yoff + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2] + f * g.yf +     \
          b * g.yb] = acc;                                                     \
    }                                                                          \
                                                                               \
    __kernel void conv_bwd_data_##T(dla_conv g, __global T *x,                 \
                                    __global const T *y, __global const T *w)  \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        if (gid >= g.in_px * g.C * g.batch)                                    \
            return;                                                            \
        const long i[3] = {gid % g.in[0], gid / g.in[0] % g.in[1],             \
                           gid / (g.in[0] * g.in[1]) % g.in[2]};               \
        const long c = gid / g.in_px % g.C, b = gid / (g.in_px * g.C);         \
        const long grp = c / g.Cg, cl = c % g.Cg;                              \
        T acc = 0;                                                             \
        for (long fl = 0; fl < g.Fg; fl++) {                                   \
            const long f = grp * g.Fg + fl;                                    \
            const long yfb = g.yoff + f * g.yf + b * g.yb;                     \
            const long wc = g.woff + cl * g.wc + fl * g.wf + grp * g.wg;       \
            for (long k2 = 0; k2 < g.fs[2]; k2++) {                            \
                const long t2 = i[2] + g.pb[2] - k2 * g.dl[2];                 \
                if (t2 < 0 || t2 % g.st[2] || t2 / g.st[2] >= g.out[2])        \
                    continue;                                                  \
                for (long k1 = 0; k1 < g.fs[1]; k1++) {                        \
                    const long t1 = i[1] + g.pb[1] - k1 * g.dl[1];             \
                    if (t1 < 0 || t1 % g.st[1] || t1 / g.st[1] >= g.out[1])    \
                        continue;                                              \
                    for (long k0 = 0; k0 < g.fs[0]; k0++) {                    \
                        const long t0 = i[0] + g.pb[0] - k0 * g.dl[0];         \
                        if (t0 < 0 || t0 % g.st[0] || t0 / g.st[0] >= g.out[0]) \
                            continue;                                          \
                        acc += w[wc + k0 * g.ws[0] + k1 * g.ws[1] + k2 * g.ws[2]] * \
                               y[yfb + t0 / g.st[0] * g.ys[0] +                \
                                 t1 / g.st[1] * g.ys[1] + t2 / g.st[2] * g.ys[2]]; \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
        x[g.xoff + i[0] * g.xs[0] + i[1] * g.xs[1] + i[2] * g.xs[2] +          \
          c * g.xc + b * g.xb] = acc;                                          \
    }                                                                          \
                                                                               \
    static long w_at_##T(const dla_conv *g, long e, long *k, long *cl,         \
                         long *fl, long *grp)                                  \
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
        long k[3], cl, fl, grp;                                                \
        const long wat = w_at_##T(&g, e, k, &cl, &fl, &grp);                   \
        const long c = grp * g.Cg + cl, f = grp * g.Fg + fl;                   \
        T acc = 0;                                                             \
        const long total = g.batch * g.out_px;                                 \
        const long q0 = g.chunked ? total * part / g.parts : part;             \
        const long q1 = g.chunked ? total * (part + 1) / g.parts : total;      \
        for (long q = q0; q < q1; q += g.chunked ? 1 : g.parts) {              \
            const long o0 = q % g.out[0], o1 = q / g.out[0] % g.out[1];        \
            const long o2 = q / (g.out[0] * g.out[1]) % g.out[2];              \
            const long b = q / g.out_px;                                       \
            const long i0 = o0 * g.st[0] - g.pb[0] + k[0] * g.dl[0];           \
            const long i1 = o1 * g.st[1] - g.pb[1] + k[1] * g.dl[1];           \
            const long i2 = o2 * g.st[2] - g.pb[2] + k[2] * g.dl[2];           \
            if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1] || i2 < 0 || \
                i2 >= g.in[2])                                                 \
                continue;                                                      \
            acc += x[g.xoff + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2] +     \
                     c * g.xc + b * g.xb] *                                    \
                   y[g.yoff + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2] +     \
                     f * g.yf + b * g.yb];                                     \
        }                                                                      \
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
        long k[3], cl, fl, grp;                                                \
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

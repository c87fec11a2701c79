/*
 * conv_direct_body.h - direct convolution, stride 1, written once over a
 * vector width and an element type (conv_vec.h, conv_direct.h) and
 * compiled by conv_avx512.c and conv_avx2.c (float) and conv_avx2_f64.c
 * (double).
 *
 * Why not im2col: the channel counts of small image models (1-64) give
 * GEMMs with one dimension of 20 or so, where OpenBLAS reaches 15-35% of
 * the FMA peak (docs/convolution.md). These kernels keep a block of
 * outputs in registers and stream the input straight from a padded copy.
 *
 * The "wide" layout: one image's channel is copied into a zero-padded
 * buffer of Pb[d] = out[d] + (fs[d] - 1) * dilation[d] per spatial dim, so
 * output position p = o0 + o1*Pb0 + o2*Pb0*Pb1 reads tap t at p + off[t],
 * a constant offset for every output. Outputs are then computed for every
 * p of the flattened range, rows' tails included (those land in columns
 * past out[0] and are dropped when copied out): each tap is one unaligned
 * vector load per VL outputs, whatever the filter size, dilation or
 * number of spatial dims. The buffer's zeros are written once per call;
 * each image overwrites the same interior.
 *
 * forward:         y[f] = sum_c,t w[t,c,f] * xpad[c][p + off[t]]
 * backward data:   the same pass on dY, with the taps flipped, the roles of
 *                  C and F swapped and pad (fs-1)*dilation - pad_begin
 * backward filter: dW[t,c,f] = sum_p xpad[c][p + off[t]] * dYwide[f][p],
 *                  dY copied into the wide layout with zeros in the
 *                  dropped columns; VL-lane partial sums per thread in
 *                  memory, added up in a fixed order at the end (or, for
 *                  a few images, per register block across all of them);
 *                  a dW with Inf or NaN goes to im2col (dw_finite).
 * Register blocks: forward PV vectors of outputs x NF filters, backward
 * filter NT taps x NF filters; the shapes are the includer's, chosen by
 * measurement (docs/convolution.md).
 *
 * Not a normal header: besides conv_vec.h's macros, the includer defines
 * FWD_FNS (its forward kernels by filter count, 1..FWD_MAX_NF), FWD_PV(n)
 * (vectors of outputs of kernel n: 1, 2 or 4), bwf_fns[tn][fn] (1..
 * BWF_MAX_NT taps x 1..BWF_MAX_NF filters), DIRECT_WINOGRAD(q, k) (its
 * Winograd pass, or DLA_ERR_UNSUPPORTED), optionally
 * DIRECT_WINOGRAD_FILTER(p) (its Winograd backward filter, the same), and
 * DIRECT_ENTRY (the name of
 * the entry point, declared in conv_impl.h); BWF_FILTERS_OUTER, if
 * defined, orders the backward-filter blocks filters first.
 */
#include <omp.h>
#include <string.h>

/* Outputs per strip of the forward pass: 4 vectors. */
#define STRIP (4 * VL)

/* ------------------------------------------------------------ the wide layout */

typedef struct wide {
    int64_t Pb[3];   /* padded buffer dims */
    int64_t w1, w2;  /* its strides along dims 1 and 2 */
    int64_t span;    /* outputs computed: up to the last real one */
    int64_t span_r;  /* span rounded up to a whole strip */
    int64_t cs;      /* elements per channel buffer */
    /* Strided forward passes only (wide_init_phased): each channel buffer
     * holds ph[0] x ph[1] x ph[2] phase planes of `plane` elements. */
    int64_t ph[3], plane;
} wide;

static void wide_init(wide *g, const int64_t *out, const int64_t *fs, const int64_t *dl)
{
    for (int d = 0; d < 3; d++)
        g->Pb[d] = out[d] + (fs[d] - 1) * dl[d];
    g->w1 = g->Pb[0], g->w2 = g->Pb[0] * g->Pb[1];
    g->span = (out[0] - 1) + (out[1] - 1) * g->w1 + (out[2] - 1) * g->w2 + 1;
    g->span_r = (g->span + STRIP - 1) / STRIP * STRIP;
    /* The last strip reads up to span_r - span past the buffer's end. */
    const int64_t total = g->Pb[0] * g->Pb[1] * g->Pb[2] + (g->span_r - g->span);
    g->cs = DLA__CONV_LINE(total, sizeof(FT)); /* whole 64-byte lines */
}

/* Offset of each tap (filter element, dim 0 fastest) in the wide layout. */
static void tap_offsets(const wide *g, const int64_t *fs, const int64_t *dl, int64_t *toff)
{
    int64_t t = 0;
    for (int64_t t2 = 0; t2 < fs[2]; t2++)
        for (int64_t t1 = 0; t1 < fs[1]; t1++)
            for (int64_t t0 = 0; t0 < fs[0]; t0++, t++)
                toff[t] = t0 * dl[0] + t1 * dl[1] * g->w1 + t2 * dl[2] * g->w2;
}

/* A strided pass (stride st[d] > 1 somewhere, dilation 1) as a stride-1
 * one: padded input index s o + k of dim d (output o, tap k) is element
 * o + k / s of phase plane k % s, the plane of the padded indices
 * congruent to k % s. Each channel buffer holds the phase planes the taps
 * use (min(s, fs) a dim) one after another, each Pb[d] = out[d] +
 * (fs[d] - 1) / s long, so every tap is again one constant offset for
 * all outputs: the forward kernels run unchanged, with as many products
 * as the convolution has (im2col + OpenBLAS took 1.5-2x the time on
 * ResNet-20's downsampling layers; docs/convolution.md). */
static int pass_phased(const pass *q)
{
    return q->st[0] > 1 || q->st[1] > 1 || q->st[2] > 1;
}

static int64_t stride_of(const int64_t *st, int d)
{
    return st[d] > 1 ? st[d] : 1;
}

static void wide_init_phased(wide *g, const int64_t *out, const int64_t *fs, const int64_t *st)
{
    int64_t nph = 1;
    for (int d = 0; d < 3; d++) {
        const int64_t s = stride_of(st, d);
        g->Pb[d] = out[d] + (fs[d] - 1) / s;
        g->ph[d] = fs[d] < s ? fs[d] : s;
        nph *= g->ph[d];
    }
    g->w1 = g->Pb[0], g->w2 = g->Pb[0] * g->Pb[1];
    g->plane = g->Pb[0] * g->Pb[1] * g->Pb[2];
    g->span = (out[0] - 1) + (out[1] - 1) * g->w1 + (out[2] - 1) * g->w2 + 1;
    g->span_r = (g->span + STRIP - 1) / STRIP * STRIP;
    /* The last strip of the last plane reads up to span_r - span past it;
     * those of the others read into the next plane (dropped columns). */
    g->cs = DLA__CONV_LINE(nph * g->plane + (g->span_r - g->span), sizeof(FT));
}

static void tap_offsets_phased(const wide *g, const int64_t *fs, const int64_t *st, int64_t *toff)
{
    const int64_t s0 = stride_of(st, 0), s1 = stride_of(st, 1), s2 = stride_of(st, 2);
    int64_t t = 0;
    for (int64_t t2 = 0; t2 < fs[2]; t2++)
        for (int64_t t1 = 0; t1 < fs[1]; t1++)
            for (int64_t t0 = 0; t0 < fs[0]; t0++, t++) {
                const int64_t phase = t0 % s0 + g->ph[0] * (t1 % s1 + g->ph[1] * (t2 % s2));
                toff[t] = phase * g->plane + t0 / s0 + t1 / s1 * g->w1 + t2 / s2 * g->w2;
            }
}

/* Copies nch channels of a source image (strides ss[3], channel sc) into
 * channel buffers buf[ch * cs], source index i at buffer index i + pb;
 * what falls outside the buffer is cropped. */
static TGT void pack(const wide *g, const FT *src, const int64_t *in, const int64_t *ss,
                     int64_t sc, int64_t nch, const int64_t *pb, FT *buf)
{
    int64_t lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = pb[d] < 0 ? -pb[d] : 0;
        hi[d] = g->Pb[d] - pb[d] < in[d] ? g->Pb[d] - pb[d] : in[d];
        if (hi[d] <= lo[d])
            return;
    }
    for (int64_t ch = 0; ch < nch; ch++)
        for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
            for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
                const FT *s = src + ch * sc + i1 * ss[1] + i2 * ss[2];
                FT *b = buf + ch * g->cs + pb[0] + (i1 + pb[1]) * g->w1 + (i2 + pb[2]) * g->w2;
                if (ss[0] == 1)
                    row_copy(b + lo[0], s + lo[0], hi[0] - lo[0], 0);
                else if (ss[0] == 2 && sizeof(FT) == sizeof(float))
                    /* A stride-2 pass's phase planes (vector permutes; GCC
                     * keeps the loop below scalar). */
                    dla__cpu_every_other_f32((float *)(b + lo[0]), (const float *)(s + 2 * lo[0]),
                                             hi[0] - lo[0]);
                else
                    for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
                        b[i0] = s[i0 * ss[0]];
            }
}

/* pack for a strided pass (stride st): each phase plane of each channel
 * is the source seen with stride s from its first index of the phase's
 * congruence class, packed by pack into its plane. */
static TGT void pack_phased(const wide *g, const FT *src, const int64_t *in, const int64_t *ss,
                            int64_t sc, int64_t nch, const int64_t *pb, const int64_t *st,
                            FT *buf)
{
    for (int64_t r2 = 0; r2 < g->ph[2]; r2++)
        for (int64_t r1 = 0; r1 < g->ph[1]; r1++)
            for (int64_t r0 = 0; r0 < g->ph[0]; r0++) {
                const int64_t r[3] = {r0, r1, r2};
                int64_t pin[3], pss[3], ppb[3], first = 0;
                for (int d = 0; d < 3; d++) {
                    const int64_t s = stride_of(st, d);
                    /* The first source index i >= 0 with i + pb = r (mod s),
                     * at plane index (i + pb - r) / s. */
                    const int64_t i0 = ((r[d] - pb[d]) % s + s) % s;
                    pin[d] = in[d] > i0 ? (in[d] - i0 + s - 1) / s : 0;
                    pss[d] = ss[d] * s;
                    ppb[d] = (i0 + pb[d] - r[d]) / s;
                    first += i0 * ss[d];
                }
                const int64_t phase = r0 + g->ph[0] * (r1 + g->ph[1] * r2);
                pack(g, src + first, pin, pss, sc, nch, ppb, buf + phase * g->plane);
            }
}

/* The real outputs of nch wide channels (ybuf[ch * ystride]) into dst
 * (strides ds[3], channel dc), plus bias[ch * bs] when bias is given. */
static TGT void unpack(const wide *g, const FT *ybuf, int64_t ystride, int64_t nch,
                       const int64_t *out, FT *dst, const int64_t *ds, int64_t dc,
                       const FT *bias, int64_t bs)
{
    for (int64_t ch = 0; ch < nch; ch++) {
        const FT b = bias ? bias[ch * bs] : 0;
        for (int64_t o2 = 0; o2 < out[2]; o2++)
            for (int64_t o1 = 0; o1 < out[1]; o1++) {
                const FT *s = ybuf + ch * ystride + o1 * g->w1 + o2 * g->w2;
                FT *d = dst + ch * dc + o1 * ds[1] + o2 * ds[2];
                if (ds[0] == 1)
                    row_copy(d, s, out[0], b);
                else
                    for (int64_t o0 = 0; o0 < out[0]; o0++)
                        d[o0 * ds[0]] = s[o0] + b;
            }
    }
}

/* ------------------------------------------------ forward and backward data */

/* Outputs p0..p1-1 (whole strips) of every filter of one group: x holds
 * the group's padded input channels, y receives the wide outputs. */
static void pass_strips(const wide *g, const pass *q, const FT *x, FT *y, const int64_t *toff,
                        int64_t ntaps, const FT *wg, int64_t p0, int64_t p1)
{
    const int64_t nf = q->nf;
    for (int64_t p = p0; p < p1; p += STRIP)
        for (int64_t f0 = 0; f0 < q->nco; f0 += nf) {
            const int64_t n = f0 + nf <= q->nco ? nf : q->nco - f0;
            const FT *wp = wg + f0 * q->nci * ntaps;
            const dla__cpu_conv_fwd_fn fn = FWD_FNS[n];
            /* Blocks of fewer than 4 vectors of outputs: the strip in parts. */
            for (int64_t s = 0; s < STRIP; s += FWD_PV(n) * VL)
                fn(x + p + s, g->cs, q->nci, toff, ntaps, wp, y + f0 * g->span_r + p + s,
                   g->span_r);
        }
}

/* Image b, group by group: pack, convolve, unpack; the strips over a team
 * of `team` threads (1: the calling thread). */
static void pass_image(const wide *g, const pass *q, const int64_t *toff, int64_t ntaps, int64_t b,
                       FT *x, FT *y, int team)
{
    const int64_t nstrips = g->span_r / STRIP;
    for (int64_t grp = 0; grp < q->G; grp++) {
        const FT *src = q->src + b * q->sb + grp * q->nci * q->sc;
        if (pass_phased(q))
            pack_phased(g, src, q->in, q->ss, q->sc, q->nci, q->pb, q->st, x);
        else
            pack(g, src, q->in, q->ss, q->sc, q->nci, q->pb, x);
        const FT *wg = q->wpack + grp * q->nci * ntaps * q->nco;
        if (team > 1) {
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
            for (int64_t st = 0; st < nstrips; st++)
                pass_strips(g, q, x, y, toff, ntaps, wg, st * STRIP, (st + 1) * STRIP);
        } else {
            pass_strips(g, q, x, y, toff, ntaps, wg, 0, g->span_r);
        }
        unpack(g, y, g->span_r, q->nco, q->out, q->dst + b * q->db + grp * q->nco * q->dc, q->ds,
               q->dc, q->bias ? q->bias + grp * q->nco * q->bs : NULL, q->bs);
    }
    dla__cpu_conv_epilogue(q->epi, b, 1);
}

static dla_status run_pass(const pass *q, int64_t ntaps)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (q->out[0] * q->out[1] * q->out[2] == 0 || q->B == 0)
        return DLA_OK;
    wide g;
    if (pass_phased(q))
        wide_init_phased(&g, q->out, q->fs, q->st);
    else
        wide_init(&g, q->out, q->fs, q->dl);
    const int64_t xelems = q->nci * g.cs, yelems = q->nco * g.span_r;
    if ((xelems + yelems) * (int64_t)sizeof(FT) > MAX_THREAD_BYTES)
        return DLA_ERR_UNSUPPORTED;
    /* Images over the team, each thread with its own buffers; with fewer
     * images than threads, one image at a time with its strips over the
     * team instead. */
    const int team = omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS;
    const int by_strip = q->B < team;
    const int threads = by_strip ? 1 : team;
    int64_t *toff = h->alloc((size_t)ntaps * sizeof(int64_t), 0);
    FT *xb[MAX_THREADS] = {0}, *yb[MAX_THREADS] = {0};
    const int64_t per = DLA__CONV_LINE(xelems, sizeof(FT)) + DLA__CONV_LINE(yelems, sizeof(FT));
    dla_mem mem = NULL;
    FT *scratch = toff ? dla__cpu_conv_scratch((size_t)(per * threads) * sizeof(FT), &mem) : NULL;
    const int failed = !scratch;
    for (int i = 0; i < threads && !failed; i++) {
        xb[i] = scratch + i * per;
        yb[i] = xb[i] + DLA__CONV_LINE(xelems, sizeof(FT));
        memset(xb[i], 0, (size_t)xelems * sizeof(FT));
    }
    if (!failed) {
        if (pass_phased(q))
            tap_offsets_phased(&g, q->fs, q->st, toff);
        else
            tap_offsets(&g, q->fs, q->dl, toff);
        if (!by_strip) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
            for (int64_t b = 0; b < q->B; b++) {
                const int me = omp_get_thread_num();
                pass_image(&g, q, toff, ntaps, b, xb[me], yb[me], 1);
            }
        } else {
            for (int64_t b = 0; b < q->B; b++)
                pass_image(&g, q, toff, ntaps, b, xb[0], yb[0], team);
        }
    }
    dla__cpu_conv_scratch_free(mem);
    h->free(toff);
    if (failed)
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the padded buffers of %d threads", threads);
    return DLA_OK;
}

/* Filters per register block of the forward pass. */
static int64_t fwd_nf(int64_t nco)
{
    return block_of(nco, FWD_MAX_NF);
}

/* Packs the weights of pass q for its register blocks (pass.wpack) and
 * runs it: pass input channel ci to output channel co of group g is
 * w[g * wg + ci * sci + co * sco + taps], the taps read backwards when
 * flip (backward data's flipped filter). */
static dla_status pack_and_run(const dla__cpu_conv *p, pass *q, int64_t sci, int64_t sco, int flip)
{
    const dla_plugin_host *h = dla__cpu_host;
    const int64_t nw = p->g.ntaps * p->g.Cg * p->g.F;
    FT *wp = h->alloc((size_t)(nw > 0 ? nw : 1) * sizeof(FT), DLA__CPU_ALIGN);
    if (!wp)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate %lld weights",
                        (long long)nw);
    const FT *w = (const FT *)p->w;
    const int64_t *fs = p->g.fs;
    FT *o = wp;
    for (int64_t g = 0; g < p->g.G; g++)
        for (int64_t co0 = 0; co0 < q->nco; co0 += q->nf) {
            const int64_t n = co0 + q->nf <= q->nco ? q->nf : q->nco - co0;
            for (int64_t ci = 0; ci < q->nci; ci++)
                for (int64_t t2 = 0; t2 < fs[2]; t2++)
                    for (int64_t t1 = 0; t1 < fs[1]; t1++)
                        for (int64_t t0 = 0; t0 < fs[0]; t0++) {
                            const int64_t k0 = flip ? fs[0] - 1 - t0 : t0,
                                          k1 = flip ? fs[1] - 1 - t1 : t1,
                                          k2 = flip ? fs[2] - 1 - t2 : t2;
                            const FT *wt = w + g * p->g.wg + ci * sci + k0 * p->g.ws[0] +
                                              k1 * p->g.ws[1] + k2 * p->g.ws[2];
                            for (int64_t co = co0; co < co0 + n; co++)
                                *o++ = wt[co * sco];
                        }
        }
    q->wpack = wp;
    dla_status s = run_pass(q, p->g.ntaps);
    h->free(wp);
    return s;
}

static dla_status direct_forward(const dla__cpu_conv *p)
{
    pass q = {.B = p->g.batch, .G = p->g.G, .nci = p->g.Cg, .nco = p->g.Fg};
    for (int d = 0; d < 3; d++) {
        q.in[d] = p->g.in[d], q.out[d] = p->g.out[d], q.fs[d] = p->g.fs[d];
        q.dl[d] = p->g.dl[d], q.pb[d] = p->g.pb[d], q.st[d] = p->g.st[d];
        q.ss[d] = p->g.xs[d], q.ds[d] = p->g.ys[d];
    }
    q.src = (const FT *)p->x, q.sc = p->g.xc, q.sb = p->g.xb;
    q.dst = (FT *)p->y, q.dc = p->g.yf, q.db = p->g.yb;
    q.bias = (const FT *)p->bias, q.bs = p->g.bs;
    q.epi = p->epi;
    q.nf = fwd_nf(p->g.Fg);
    const dla__cpu_conv_taps k = {.w = (const FT *)p->w, .sg = p->g.wg, .sci = p->g.wc,
                                  .sco = p->g.wf, .s0 = p->g.ws[0], .s1 = p->g.ws[1]};
    dla_status ws = pass_phased(&q) ? DLA_ERR_UNSUPPORTED : DIRECT_WINOGRAD(&q, &k);
    if (ws != DLA_ERR_UNSUPPORTED)
        return ws;
    return pack_and_run(p, &q, p->g.wc, p->g.wf, 0);
}

static dla_status direct_backward_data(const dla__cpu_conv *p)
{
    /* dX[i] = sum_k w[k] dY[i + pb - k*dl] = sum_k' w[fs-1-k'] dY[i - pb' + k'*dl]. */
    pass q = {.B = p->g.batch, .G = p->g.G, .nci = p->g.Fg, .nco = p->g.Cg};
    for (int d = 0; d < 3; d++) {
        q.in[d] = p->g.out[d], q.out[d] = p->g.in[d], q.fs[d] = p->g.fs[d], q.dl[d] = p->g.dl[d];
        q.pb[d] = (p->g.fs[d] - 1) * p->g.dl[d] - p->g.pb[d];
        q.ss[d] = p->g.ys[d], q.ds[d] = p->g.xs[d];
    }
    q.src = (const FT *)p->y, q.sc = p->g.yf, q.sb = p->g.yb;
    q.dst = (FT *)p->x, q.dc = p->g.xc, q.db = p->g.xb;
    q.epi = p->epi;
    q.nf = fwd_nf(p->g.Cg);
    if (p->g.in_px == 0 || p->g.batch == 0)
        return DLA_OK;
    if (p->g.out_px == 0)
        return DLA_ERR_UNSUPPORTED; /* dX = 0: left to im2col, which zeroes */
    /* The flipped filter: taps read backwards from the last one. */
    const FT *last = (const FT *)p->w + (p->g.fs[0] - 1) * p->g.ws[0] +
                        (p->g.fs[1] - 1) * p->g.ws[1] + (p->g.fs[2] - 1) * p->g.ws[2];
    const dla__cpu_conv_taps k = {.w = last, .sg = p->g.wg, .sci = p->g.wf, .sco = p->g.wc,
                                  .s0 = -p->g.ws[0], .s1 = -p->g.ws[1]};
    dla_status ws = pass_phased(&q) ? DLA_ERR_UNSUPPORTED : DIRECT_WINOGRAD(&q, &k);
    if (ws != DLA_ERR_UNSUPPORTED)
        return ws;
    return pack_and_run(p, &q, p->g.wf, p->g.wc, 1);
}

/* ------------------------------------------------------- backward filter */

/* Filters f_lo .. f_hi - 1 of group grp of image b's dY into the wide
 * layout at dst (filter f at f * fstride): the real outputs only, the
 * dropped columns stay 0. */
static TGT void dy_wide(const wide *g, const dla__cpu_conv *p, int64_t b, int64_t grp,
                        int64_t f_lo, int64_t f_hi, FT *dst, int64_t fstride)
{
    const FT *ys = (const FT *)p->y + b * p->g.yb + grp * p->g.Fg * p->g.yf;
    for (int64_t f = f_lo; f < f_hi; f++)
        for (int64_t o2 = 0; o2 < p->g.out[2]; o2++)
            for (int64_t o1 = 0; o1 < p->g.out[1]; o1++) {
                const FT *s = ys + f * p->g.yf + o1 * p->g.ys[1] + o2 * p->g.ys[2];
                FT *d = dst + f * fstride + o1 * g->w1 + o2 * g->w2;
                if (p->g.ys[0] == 1)
                    row_copy(d, s, p->g.out[0], 0);
                else
                    for (int64_t o0 = 0; o0 < p->g.out[0]; o0++)
                        d[o0] = s[o0 * p->g.ys[0]];
            }
}

/* The register blocks of backward filter: taps t0.., filters f0.. of one
 * channel, from a block index over (channel, tap block, filter block). */
typedef struct bwf_blocks {
    int64_t ntb, nfb, tblocks, fblocks;
} bwf_blocks;

static bwf_blocks bwf_blocks_of(const dla__cpu_conv *p)
{
    bwf_blocks k;
    k.ntb = block_of(p->g.ntaps, BWF_MAX_NT), k.nfb = block_of(p->g.Fg, BWF_MAX_NF);
    k.tblocks = (p->g.ntaps + k.ntb - 1) / k.ntb, k.fblocks = (p->g.Fg + k.nfb - 1) / k.nfb;
    return k;
}

static void bwf_block_at(const bwf_blocks *k, const dla__cpu_conv *p, int64_t it, int64_t *c,
                         int64_t *t0, int64_t *tn, int64_t *f0, int64_t *fn)
{
#ifdef BWF_FILTERS_OUTER
    /* A block of dY rows stays in L1 while the channels pass: one input
     * channel row per block from L2 instead of NF rows of dY. */
    *f0 = it / (k->tblocks * p->g.Cg) * k->nfb;
    *c = (it / k->tblocks) % p->g.Cg;
    *t0 = it % k->tblocks * k->ntb;
#else
    *c = it / (k->tblocks * k->fblocks);
    *t0 = (it / k->fblocks) % k->tblocks * k->ntb;
    *f0 = it % k->fblocks * k->nfb;
#endif
    *tn = *t0 + k->ntb <= p->g.ntaps ? k->ntb : p->g.ntaps - *t0;
    *fn = *f0 + k->nfb <= p->g.Fg ? k->nfb : p->g.Fg - *f0;
}

/* Small images stacked for backward filter (bwf_by_image). A block loads
 * and stores its NT x NF sums around each call; on a small image that
 * costs as much as the loop (ResNet-20's 8x8 stage: 8 vectors an image
 * with AVX-512, the block at 40 GFLOP/s, against 170 on its 32x32
 * stage). So images shorter than BWF_SHORT vectors go k to a call, their
 * padded planes istride apart (the plane rounded up to a vector, not the
 * channel buffer cs: the rows of padding and the strip's slack are not
 * run through again), enough of them for BWF_RUN vectors, at most
 * BWF_MAX_STACK. Image j's dY sits at j * istride in its filter's run,
 * zero past its last output, so a block's loop runs on through the next
 * image's plane; its x reads end inside image j's plane (the last
 * output plus the last tap is the plane's last element), and the last
 * image's strip slack is the channel buffer's. A function of the shape
 * alone: the bits do not follow the team. */
#define BWF_SHORT 32
#define BWF_RUN 56
#define BWF_MAX_STACK 8
typedef struct bwf_stacking {
    int64_t k;       /* images a call runs through, at most */
    int64_t istride; /* from one image's plane to the next */
    int64_t cstride; /* from one channel's (filter's) run to the next */
} bwf_stacking;

static bwf_stacking bwf_stacking_of(const wide *g, int64_t k_most)
{
    bwf_stacking st = {1, g->cs, g->cs};
    const int64_t plane = g->Pb[0] * g->Pb[1] * g->Pb[2];
    const int64_t istride = (plane + VL - 1) / VL * VL, per = istride / VL;
    if (per >= BWF_SHORT)
        return st;
    int64_t k = (BWF_RUN + per - 1) / per;
    k = k > BWF_MAX_STACK ? BWF_MAX_STACK : k;
    k = k > k_most ? k_most : k;
    if (k > 1)
        st.k = k, st.istride = istride,
        st.cstride = DLA__CONV_LINE((k - 1) * istride + g->cs, sizeof(FT));
    return st;
}

/* a[0..n-1] += b[0..n-1], n a multiple of VL, both aligned to a vector. */
static TGT void add_into(FT *a, const FT *b, int64_t n)
{
    for (int64_t i = 0; i < n; i += VL)
        VF_STORE(a + i, VF_ADD(VF_LOAD(a + i), VF_LOAD(b + i)));
}

/* The sum of VL lanes, added in double. */
static double lanes_sum(const FT *v)
{
    double s = 0;
    for (int l = 0; l < VL; l++)
        s += v[l];
    return s;
}

/* Writes dW[t, c, f] of group grp. */
static void put_dw(const dla__cpu_conv *p, int64_t grp, int64_t f, int64_t c, int64_t t, double v)
{
    const int64_t t0 = t % p->g.fs[0], t1 = (t / p->g.fs[0]) % p->g.fs[1],
                  t2 = t / (p->g.fs[0] * p->g.fs[1]);
    ((FT *)p->w)[grp * p->g.wg + f * p->g.wf + c * p->g.wc + t0 * p->g.ws[0] + t1 * p->g.ws[1] +
                    t2 * p->g.ws[2]] = (FT)v;
}

/* The parts of the batch for bwf_by_image: a power of two up to
 * DLA__CONV_BATCH_PARTS whose VL-lane sums together take at most
 * BWF_PARTS_BYTES. Each part's sums are zeroed, read and written by every
 * block, and added at the end: on ResNet-20's 64 -> 64 layer (2.4 MB of
 * sums a part) 16 parts made backward filter bound by that memory
 * traffic (15 ms, against 7 with 3 parts). A power of two shares out
 * evenly over 2, 4, 8 threads. */
#define BWF_PARTS_BYTES ((int64_t)8 << 20)
/* Tasks per thread of the team: a part's blocks are shared out over
 * enough tasks that every thread has BWF_TASKS_PER_THREAD, each task
 * running all of the part's images for its own blocks (and packing them:
 * more tasks than that would pack the same images again). How the blocks
 * are shared out changes no sum, so this may follow the team. */
#define BWF_TASKS_PER_THREAD 2
static int bwf_parts(int64_t batch, int64_t acc_bytes)
{
    int parts = DLA__CONV_BATCH_PARTS;
    while (parts > 1 && (parts > batch || parts * acc_bytes > BWF_PARTS_BYTES))
        parts /= 2;
    return parts;
}

/* Many images: the batch in parts of consecutive images (bwf_parts); each
 * part adds its images' terms to its own VL-lane sums in memory (layout
 * [g][f][c][t][VL]), and the parts' sums are added in order at the end.
 * The work goes over the team in tasks of (part, a range of the register
 * blocks), each packing its part's images into the buffers of the thread
 * that runs it: every sum still takes its part's images in order, so the
 * bits are the same with any number of threads. */
static dla_status bwf_by_image(const dla__cpu_conv *p, const wide *g, const int64_t *toff,
                               int team)
{
    const dla_plugin_host *h = dla__cpu_host;
    const int64_t nt = p->g.ntaps, nacc = p->g.G * p->g.Fg * p->g.Cg * nt * VL;
    /* Small images stacked (bwf_stacking_of), fewer where the buffers
     * would not fit. */
    bwf_stacking st = bwf_stacking_of(g, BWF_MAX_STACK);
    while (st.k > 1 &&
           ((p->g.Cg + p->g.Fg) * st.cstride + nacc) * (int64_t)sizeof(FT) > MAX_THREAD_BYTES)
        st = bwf_stacking_of(g, st.k - 1);
    const int64_t xelems = p->g.Cg * st.cstride, yelems = p->g.Fg * st.cstride;
    if ((xelems + yelems + nacc) * (int64_t)sizeof(FT) > MAX_THREAD_BYTES)
        return DLA_ERR_UNSUPPORTED;
    const int parts = bwf_parts(p->g.batch, nacc * (int64_t)sizeof(FT));
    const int want = BWF_TASKS_PER_THREAD * team,
              splits = want > parts ? (want + parts - 1) / parts : 1, tasks = parts * splits;
    const int threads = team < tasks ? team : tasks;
    FT *xb[MAX_THREADS] = {0}, *yb[MAX_THREADS] = {0}, *acc[DLA__CONV_BATCH_PARTS] = {0};
    const int64_t per = DLA__CONV_LINE(xelems, sizeof(FT)) + DLA__CONV_LINE(yelems, sizeof(FT)),
                  all = per * threads + nacc * parts;
    dla_mem mem = NULL;
    FT *scratch = dla__cpu_conv_scratch((size_t)all * sizeof(FT), &mem);
    const int failed = !scratch;
    if (!failed) {
        memset(scratch, 0, (size_t)all * sizeof(FT));
        for (int i = 0; i < threads; i++) {
            xb[i] = scratch + i * per;
            yb[i] = xb[i] + DLA__CONV_LINE(xelems, sizeof(FT));
        }
        for (int k = 0; k < parts; k++)
            acc[k] = scratch + per * threads + k * nacc;
    }
    if (!failed) {
        const bwf_blocks bk = bwf_blocks_of(p);
        const int64_t items = p->g.Cg * bk.tblocks * bk.fblocks;
        /* pack's channel buffers a run apart. */
        wide gk = *g;
        gk.cs = st.cstride;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int task = 0; task < tasks; task++) {
            const int me = omp_get_thread_num(), part = task / splits, split = task % splits;
            const int64_t b0 = p->g.batch * part / parts, b1 = p->g.batch * (part + 1) / parts;
            const int64_t it0 = items * split / splits, it1 = items * (split + 1) / splits;
            /* The channels and filters its blocks read: only those are
             * packed (a part's images go through 16 / parts tasks). */
            int64_t c_lo = p->g.Cg, c_hi = 0, f_lo = p->g.Fg, f_hi = 0;
            for (int64_t it = it0; it < it1; it++) {
                int64_t c, t0, tn, f0, fn;
                bwf_block_at(&bk, p, it, &c, &t0, &tn, &f0, &fn);
                c_lo = c < c_lo ? c : c_lo, c_hi = c + 1 > c_hi ? c + 1 : c_hi;
                f_lo = f0 < f_lo ? f0 : f_lo, f_hi = f0 + fn > f_hi ? f0 + fn : f_hi;
            }
            /* The part's images in runs of as even a size as k allows,
             * each run one call of every block. */
            const int64_t runs = (b1 - b0 + st.k - 1) / st.k;
            for (int64_t r = 0; r < runs; r++)
                for (int64_t grp = 0; grp < p->g.G; grp++) {
                    const int64_t b = b0 + (b1 - b0) * r / runs,
                                  n = b0 + (b1 - b0) * (r + 1) / runs - b;
                    for (int64_t j = 0; j < n && c_lo < c_hi; j++) {
                        pack(&gk,
                             (const FT *)p->x + (b + j) * p->g.xb +
                                 (grp * p->g.Cg + c_lo) * p->g.xc,
                             p->g.in, p->g.xs, p->g.xc, c_hi - c_lo, p->g.pb,
                             xb[me] + c_lo * st.cstride + j * st.istride);
                        dy_wide(g, p, b + j, grp, f_lo, f_hi, yb[me] + j * st.istride,
                                st.cstride);
                    }
                    /* Up to the last image's last output, not its
                     * whole strip: past that lie the next slot's image,
                     * stale when this run is shorter than the one
                     * before (runs differ by one), whose x and dY were
                     * added in as well until 2026-11-28. Its own zeros
                     * up to the vector's end are within its plane. */
                    const int64_t nvec = ((n - 1) * st.istride + g->span + VL - 1) / VL;
                    FT *ag = acc[part] + grp * p->g.Fg * p->g.Cg * nt * VL;
                    for (int64_t it = it0; it < it1; it++) {
                        int64_t c, t0, tn, f0, fn;
                        bwf_block_at(&bk, p, it, &c, &t0, &tn, &f0, &fn);
                        bwf_fns[tn][fn](xb[me] + c * st.cstride, toff + t0,
                                        yb[me] + f0 * st.cstride, st.cstride, nvec,
                                        ag + ((f0 * p->g.Cg + c) * nt + t0) * VL, p->g.Cg * nt);
                    }
                }
        }
        for (int i = 1; i < parts; i++)
            add_into(acc[0], acc[i], nacc);
        for (int64_t grp = 0; grp < p->g.G; grp++)
            for (int64_t f = 0; f < p->g.Fg; f++)
                for (int64_t c = 0; c < p->g.Cg; c++)
                    for (int64_t t = 0; t < nt; t++)
                        put_dw(p, grp, f, c, t,
                               lanes_sum(acc[0] +
                                         (((grp * p->g.Fg + f) * p->g.Cg + c) * nt + t) * VL));
    }
    dla__cpu_conv_scratch_free(mem);
    if (failed)
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the padded buffers of %d threads and the "
                        "sums of %d parts of the batch", threads, parts);
    return DLA_OK;
}

/* Few images: all of them padded at once, then the register blocks over
 * the team, each block running through every image with its sums in
 * registers (and a small stack buffer between images), then writing its
 * own dW elements: no per-thread sums to zero and add up. */
static dla_status bwf_by_block(const dla__cpu_conv *p, const wide *g, const int64_t *toff,
                               int team)
{
    const dla_plugin_host *h = dla__cpu_host;
    const int64_t xelems = p->g.C * g->cs, yelems = p->g.F * g->span_r;
    if ((xelems + yelems) * p->g.batch * (int64_t)sizeof(FT) > MAX_THREAD_BYTES)
        return DLA_ERR_UNSUPPORTED;
    const int64_t xall = DLA__CONV_LINE(xelems * p->g.batch, sizeof(FT)),
                  yall = yelems * p->g.batch;
    dla_mem mem = NULL;
    FT *xa = dla__cpu_conv_scratch((size_t)(xall + yall) * sizeof(FT), &mem);
    FT *ya = xa ? xa + xall : NULL;
    if (!xa) {
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the padded inputs of %lld images",
                        (long long)p->g.batch);
    }
    memset(xa, 0, (size_t)(xall + yall) * sizeof(FT));
    const int64_t packs = p->g.batch * p->g.G;
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
    for (int64_t i = 0; i < packs; i++) {
        const int64_t b = i / p->g.G, grp = i % p->g.G;
        pack(g, (const FT *)p->x + b * p->g.xb + grp * p->g.Cg * p->g.xc, p->g.in, p->g.xs,
             p->g.xc, p->g.Cg, p->g.pb, xa + b * xelems + grp * p->g.Cg * g->cs);
        dy_wide(g, p, b, grp, 0, p->g.Fg, ya + b * yelems + grp * p->g.Fg * g->span_r,
                g->span_r);
    }
    const bwf_blocks k = bwf_blocks_of(p);
    const int64_t per_group = p->g.Cg * k.tblocks * k.fblocks;
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
    for (int64_t i = 0; i < p->g.G * per_group; i++) {
        const int64_t grp = i / per_group;
        int64_t c, t0, tn, f0, fn;
        bwf_block_at(&k, p, i % per_group, &c, &t0, &tn, &f0, &fn);
        FT acc[BWF_MAX_NT * BWF_MAX_NF * VL] __attribute__((aligned(64)));
        memset(acc, 0, sizeof acc);
        for (int64_t b = 0; b < p->g.batch; b++)
            bwf_fns[tn][fn](xa + b * xelems + (grp * p->g.Cg + c) * g->cs, toff + t0,
                            ya + b * yelems + (grp * p->g.Fg + f0) * g->span_r, g->span_r,
                            g->span_r / VL, acc, BWF_MAX_NT);
        for (int64_t f = 0; f < fn; f++)
            for (int64_t t = 0; t < tn; t++)
                put_dw(p, grp, f0 + f, c, t0 + t, lanes_sum(acc + (f * BWF_MAX_NT + t) * VL));
    }
    dla__cpu_conv_scratch_free(mem);
    return DLA_OK;
}

/* Whether every element of dW is finite. The sums run over every column
 * of the wide rows, the discarded ones too, whose dY is 0 but whose x
 * reads reach into the next row (or past the last output): an Inf or NaN
 * there adds 0 * Inf = NaN to taps whose true sums never meet it, while
 * an added 0 * finite changes nothing. So a finite dW is exact, and a
 * non-finite one is left to im2col, which sums the real outputs only (a
 * scan of dW, not of x: nothing on the common path). */
static int dw_finite(const dla__cpu_conv *p)
{
    const FT *w = (const FT *)p->w;
    int ok = 1;
    for (int64_t grp = 0; grp < p->g.G; grp++)
        for (int64_t f = 0; f < p->g.Fg; f++)
            for (int64_t c = 0; c < p->g.Cg; c++)
                for (int64_t t2 = 0; t2 < p->g.fs[2]; t2++)
                    for (int64_t t1 = 0; t1 < p->g.fs[1]; t1++)
                        for (int64_t t0 = 0; t0 < p->g.fs[0]; t0++) {
                            const FT v = w[grp * p->g.wg + f * p->g.wf + c * p->g.wc +
                                           t0 * p->g.ws[0] + t1 * p->g.ws[1] + t2 * p->g.ws[2]];
                            ok &= v - v == 0; /* false for Inf and NaN */
                        }
    return ok;
}

static dla_status direct_backward_filter(const dla__cpu_conv *p)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (p->g.out_px == 0 || p->g.batch == 0)
        return DLA_ERR_UNSUPPORTED; /* dW = 0: left to im2col */
#ifdef DIRECT_WINOGRAD_FILTER
    const dla_status ws = DIRECT_WINOGRAD_FILTER(p);
    if (ws != DLA_ERR_UNSUPPORTED)
        return ws;
#endif
    wide g;
    wide_init(&g, p->g.out, p->g.fs, p->g.dl);
    int64_t *toff = h->alloc((size_t)p->g.ntaps * sizeof(int64_t), 0);
    if (!toff)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate %lld tap offsets",
                        (long long)p->g.ntaps);
    tap_offsets(&g, p->g.fs, p->g.dl, toff);
    const int team = omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS;
    /* The parts' sums pay off once each part has a few images to add.
     * Which way is taken follows the batch alone (BWF_BY_IMAGE_MIN), not
     * the team, as the two add dW's terms in different orders. */
    const int few = p->g.batch < BWF_BY_IMAGE_MIN;
    dla_status s = few ? bwf_by_block(p, &g, toff, team) : bwf_by_image(p, &g, toff, team);
    if (s == DLA_ERR_UNSUPPORTED && few)
        s = bwf_by_image(p, &g, toff, team);
    h->free(toff);
    /* Written, to be written again by im2col (dw_finite). */
    if (s == DLA_OK && !dw_finite(p))
        return DLA_ERR_UNSUPPORTED;
    return s;
}

dla_status DIRECT_ENTRY(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    if (p->dtype != FT_DTYPE)
        return DLA_ERR_UNSUPPORTED;
    if (p->g.st[0] != 1 || p->g.st[1] != 1 || p->g.st[2] != 1) {
        /* Strides: the forward pass by phase planes (pack_phased), where
         * the includer measured it faster than im2col, with dilation 1. */
#ifdef DIRECT_STRIDED
        if (dir == DLA__CONV_FORWARD && p->g.dl[0] == 1 && p->g.dl[1] == 1 && p->g.dl[2] == 1)
            return direct_forward(p);
#endif
        return DLA_ERR_UNSUPPORTED;
    }
    switch (dir) {
    case DLA__CONV_FORWARD: return direct_forward(p);
    case DLA__CONV_BACKWARD_DATA: return direct_backward_data(p);
    case DLA__CONV_BACKWARD_FILTER: return direct_backward_filter(p);
    }
    return DLA_ERR_UNSUPPORTED;
}


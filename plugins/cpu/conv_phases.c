/*
 * conv_phases.c - the backward passes of strided convolutions as
 * stride-1 ones, one per phase, run by the direct kernels.
 *
 * With stride s along a dim (dilation 1), output o reads input index
 * i = s o + k - pb through tap k. Split the taps by k mod s = r and the
 * inputs by (i + pb) mod s: tap k = s j + r meets only the inputs with
 * (i + pb) mod s = r, i = i0 + s m (i0 the first such index, 0 <= i0 <
 * s), and there m = o + j - pb' with pb' = (i0 + pb - r) / s. So each
 * phase r (one per dim, up to min(s, fs) of them) is a stride-1
 * convolution of its own: the inputs of phase r (a view with stride s
 * xs), the taps of phase r (fs' = ceil((fs - r) / s) taps, a view with
 * stride s ws), padding pb', and all of dY:
 *
 *   backward data:   dX's elements of phase r = the stride-1 backward
 *                    data of dY with phase r's taps; elements of a phase
 *                    with no tap (r >= fs: a 1x1 filter's odd rows and
 *                    columns) are 0;
 *   backward filter: dW's taps of phase r = the stride-1 backward filter
 *                    of x's elements of phase r with dY.
 *
 * Every element of dX, and every tap of dW, belongs to exactly one phase
 * and is written once, by one sub-call; each sub-call is a plain call of
 * the direct kernels (conv_direct_body.h, Winograd where a phase's filter
 * is 3x3), with as many products as the convolution has. im2col + OpenBLAS
 * (the path before) took 1.7-3.5x the time for backward data, 1.04-2x for
 * backward filter, on ResNet-20's downsampling layers
 * (docs/performance.md). The direct kernels are deterministic, so the bits
 * are the same with any thread count; they differ from im2col's (another
 * order of the same terms). conv.c sends these calls here with the float
 * AVX-512 kernels only (phases_pay: measured; the double AVX2 kernels
 * were no faster than im2col on them).
 *
 * DLACCEL_CPU_CONV_PHASES=off keeps im2col for these calls.
 */
#define _GNU_SOURCE /* secure_getenv, through env_choice.h */
#include "core/env_choice.h"
#include "plugins/cpu/conv_impl.h"

#include <string.h>

/* DLACCEL_CPU_CONV_PHASES: 1 for off, else on. */
static int phases_off(void)
{
    static const char *const values[] = {"on", "off", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_CPU_CONV_PHASES", values, &warned, dla__cpu_host->log) == 1;
}

static int64_t stride_of(const dla__cpu_conv *p, int d)
{
    return p->g.st[d] > 1 ? p->g.st[d] : 1;
}

/* The phases of p with taps along each dim: min(s, fs). */
static void phase_counts(const dla__cpu_conv *p, int64_t *ph)
{
    for (int d = 0; d < 3; d++) {
        const int64_t s = stride_of(p, d);
        ph[d] = p->g.fs[d] < s ? p->g.fs[d] : s;
    }
}

/* Phase r of p as a stride-1 convolution (sub). Returns 0 when the phase
 * has no input element (nothing to write in dX; dW's taps are then 0). */
static int phase_of(const dla__cpu_conv *p, const int64_t *r, dla__cpu_conv *sub)
{
    *sub = *p;
    sub->bias = NULL, sub->g.has_bias = 0, sub->epi = NULL;
    const int64_t size = (int64_t)(p->dtype == DLA_F64 ? sizeof(double) : sizeof(float));
    int64_t xfirst = 0, wfirst = 0, ntaps = 1, in_px = 1;
    int any = 1;
    for (int d = 0; d < 3; d++) {
        const int64_t s = stride_of(p, d);
        const int64_t i0 = ((r[d] - p->g.pb[d]) % s + s) % s;
        sub->g.in[d] = p->g.in[d] > i0 ? (p->g.in[d] - i0 + s - 1) / s : 0;
        sub->g.xs[d] = p->g.xs[d] * s;
        sub->g.pb[d] = (i0 + p->g.pb[d] - r[d]) / s;
        sub->g.fs[d] = (p->g.fs[d] - r[d] + s - 1) / s;
        sub->g.ws[d] = p->g.ws[d] * s;
        sub->g.st[d] = 1;
        xfirst += i0 * p->g.xs[d];
        wfirst += r[d] * p->g.ws[d];
        ntaps *= sub->g.fs[d], in_px *= sub->g.in[d];
        any = any && sub->g.in[d] > 0;
    }
    sub->g.ntaps = ntaps, sub->g.in_px = in_px;
    sub->x = p->x + xfirst * size;
    sub->w = p->w + wfirst * size;
    return any;
}

/* Zeroes all of dX's view (before the phases with taps write theirs,
 * where some phase has none: a 1x1 filter's odd rows and columns): rows
 * at a time where they are dense, image by image over the team. */
static void zero_dx(const dla__cpu_conv *p)
{
    const int64_t size = (int64_t)(p->dtype == DLA_F64 ? sizeof(double) : sizeof(float));
    const dla_kit_conv *g = &p->g;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < g->batch; b++)
        for (int64_t c = 0; c < g->C; c++)
            for (int64_t i2 = 0; i2 < g->in[2]; i2++)
                for (int64_t i1 = 0; i1 < g->in[1]; i1++) {
                    char *row = p->x + (b * g->xb + c * g->xc + i1 * g->xs[1] + i2 * g->xs[2]) *
                                           size;
                    if (g->xs[0] == 1)
                        memset(row, 0, (size_t)(g->in[0] * size));
                    else
                        for (int64_t i0 = 0; i0 < g->in[0]; i0++)
                            memset(row + i0 * g->xs[0] * size, 0, (size_t)size);
                }
}

dla_status dla__cpu_conv_phases(const dla__cpu_conv *p, dla__cpu_conv_dir dir,
                                dla_status (*direct)(const dla__cpu_conv *, dla__cpu_conv_dir))
{
    if (dir == DLA__CONV_FORWARD || !direct)
        return DLA_ERR_UNSUPPORTED;
    if (p->g.st[0] <= 1 && p->g.st[1] <= 1 && p->g.st[2] <= 1)
        return DLA_ERR_UNSUPPORTED;
    if (p->g.dl[0] != 1 || p->g.dl[1] != 1 || p->g.dl[2] != 1)
        return DLA_ERR_UNSUPPORTED;
    /* Empty calls are im2col's (it writes the zeros of an empty sum). */
    if (p->g.batch == 0 || p->g.in_px == 0 || p->g.out_px == 0 || p->g.ntaps == 0)
        return DLA_ERR_UNSUPPORTED;
    if (phases_off())
        return DLA_ERR_UNSUPPORTED;
    int64_t ph[3];
    phase_counts(p, ph);
    /* Phases past the filter's taps (r >= fs along some dim: a 1x1
     * filter's odd rows and columns) hold no tap of dW and zeros of dX. */
    if (dir == DLA__CONV_BACKWARD_DATA &&
        ph[0] * ph[1] * ph[2] < stride_of(p, 0) * stride_of(p, 1) * stride_of(p, 2))
        zero_dx(p);
    /* The phases with taps. A sub-call that declines (buffers past the
     * direct kernels' limit) sends the whole call to im2col, which writes
     * all of dX or dW again. */
    for (int64_t r2 = 0; r2 < ph[2]; r2++)
        for (int64_t r1 = 0; r1 < ph[1]; r1++)
            for (int64_t r0 = 0; r0 < ph[0]; r0++) {
                const int64_t r[3] = {r0, r1, r2};
                dla__cpu_conv sub;
                if (!phase_of(p, r, &sub)) {
                    if (dir == DLA__CONV_BACKWARD_DATA)
                        continue; /* no element of dX in this phase */
                    /* dW's taps of this phase see no input (0): left to
                     * im2col, as the direct kernels leave empty sums. */
                    return DLA_ERR_UNSUPPORTED;
                }
                const dla_status s = direct(&sub, dir);
                if (s != DLA_OK)
                    return s;
            }
    if (p->epi && dir == DLA__CONV_BACKWARD_DATA) {
        /* The epilogue once all phases of an image are written. */
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t b = 0; b < p->g.batch; b++)
            dla__cpu_conv_epilogue(p->epi, b, 1);
    }
    return DLA_OK;
}

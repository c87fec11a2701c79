/*
 * conv_avx512.h - what the two AVX-512 convolution files share: the
 * forward register-blocked micro-kernel, the row copy, the description of
 * a forward or backward-data pass, and the Winograd entry point.
 *
 * conv_avx512.c runs every stride-1 float32 convolution directly;
 * conv_winograd.c takes the 3x3 forward and backward-data passes with
 * enough channels, and uses the same micro-kernel for its 16 small GEMMs
 * (one tap, the tiles as the outputs).
 */
#ifndef DLA_PLUGIN_CPU_CONV_AVX512_H
#define DLA_PLUGIN_CPU_CONV_AVX512_H

#include "plugins/cpu/conv_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define INLINE static inline __attribute__((always_inline))

/* Buffers one thread of a call keeps: at most this many bytes, else the
 * call goes to im2col (which works in bounded chunks). */
#define MAX_THREAD_BYTES ((int64_t)64 << 20)
#define MAX_THREADS 256

/* n split into the fewest blocks of at most max, of nearly equal sizes:
 * the size of the first (later ones are the same or one smaller). */
static inline int64_t block_of(int64_t n, int64_t max)
{
    int64_t blocks = (n + max - 1) / max;
    return (n + blocks - 1) / blocks;
}

/* d[0..n-1] = s[0..n-1] + b: whole vectors of 16, then of 8 and 4, then
 * single floats. Rows are short (24 in the digit CNN), so a library loop
 * would cost as much as the convolution's own stores; and the tail takes
 * no masked loads or stores, which some AVX-512 CPUs (AMD's) run many
 * times slower than plain ones (measured: the packing took twice as long
 * with a masked tail). */
INLINE TGT void row_copy(float *d, const float *s, int64_t n, float b)
{
    const __m512 vb = _mm512_set1_ps(b);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i, _mm512_add_ps(_mm512_loadu_ps(s + i), vb));
    if (i + 8 <= n) {
        _mm256_storeu_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(s + i), _mm512_castps512_ps256(vb)));
        i += 8;
    }
    if (i + 4 <= n) {
        _mm_storeu_ps(d + i, _mm_add_ps(_mm_loadu_ps(s + i), _mm512_castps512_ps128(vb)));
        i += 4;
    }
    for (; i < n; i++)
        d[i] = s[i] + b;
}

/* yb[f * ys + p ..] = sum over c < cg, t < nt of wp[(c, t, f)] * xb[c * cs + toff[t] + p ..]
 * for PV vectors of 16 outputs and NF filters (yb 64-byte aligned). */
INLINE TGT void fwd_block(const float *xb, int64_t cs, int64_t cg, const int64_t *toff, int64_t nt,
                          const float *wp, float *yb, int64_t ys, const int PV, const int NF)
{
    __m512 acc[4][12];
#pragma GCC unroll 4
    for (int i = 0; i < PV; i++)
#pragma GCC unroll 12
        for (int f = 0; f < NF; f++)
            acc[i][f] = _mm512_setzero_ps();
    for (int64_t c = 0; c < cg; c++) {
        const float *xc = xb + c * cs;
        for (int64_t t = 0; t < nt; t++, wp += NF) {
            const float *xt = xc + toff[t];
            __m512 xv[4];
#pragma GCC unroll 4
            for (int i = 0; i < PV; i++)
                xv[i] = _mm512_loadu_ps(xt + 16 * i);
#pragma GCC unroll 12
            for (int f = 0; f < NF; f++) {
                const __m512 wv = _mm512_set1_ps(wp[f]);
#pragma GCC unroll 4
                for (int i = 0; i < PV; i++)
                    acc[i][f] = _mm512_fmadd_ps(xv[i], wv, acc[i][f]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < PV; i++)
#pragma GCC unroll 12
        for (int f = 0; f < NF; f++)
            _mm512_store_ps(yb + f * ys + 16 * i, acc[i][f]);
}

/* fwd_block for NF = 1..12 filters: 1-6 take 4 vectors of outputs, 7-12
 * two (conv_avx512.c). */
typedef void (*dla__cpu_conv_fwd_fn)(const float *xb, int64_t cs, int64_t cg, const int64_t *toff,
                                     int64_t nt, const float *wp, float *yb, int64_t ys);
#define DLA__CONV_FWD_MAX_NF 12
extern const dla__cpu_conv_fwd_fn dla__cpu_conv_fwd_fns[DLA__CONV_FWD_MAX_NF + 1];

#endif /* x86-64 */

/* One pass of y = conv(x, w), for forward (x, w, y as given) and backward
 * data (dY as the source, flipped weights, dX as the destination). */
typedef struct pass {
    int64_t B, G, nci, nco; /* images, groups, channels per group in and out */
    int64_t in[3], out[3], fs[3], dl[3], pb[3];
    const float *src;
    int64_t ss[3], sc, sb;
    float *dst;
    int64_t ds[3], dc, db;
    const float *bias;
    int64_t bs;
    /* Direct only: per group g, per block of nf filters from f0:
     * [c][t][nf] at wpack + g * nci * ntaps * nco + f0 * nci * ntaps. */
    const float *wpack;
    int64_t nf; /* filters per block */
} pass;

/* The 3x3 filters of a pass as Winograd reads them: tap (k0, k1) (dim 0
 * first) from pass input channel ci to output channel co of group g is
 * w[g * sg + ci * sci + co * sco + k0 * s0 + k1 * s1]; backward data
 * points w at the last tap and gives negative s0, s1 (the flip). */
typedef struct dla__cpu_conv_taps {
    const float *w;
    int64_t sg, sci, sco, s0, s1;
} dla__cpu_conv_taps;

/* The pass by Winograd's F(2x2, 3x3) (conv_winograd.c). DLA_ERR_UNSUPPORTED
 * (without a message) when it does not apply or would not pay: filters
 * other than 3x3 with dilation 1 over 2 spatial dims, fewer than 8
 * channels in or out, fewer images than threads, or
 * DLACCEL_CPU_CONV=direct. */
dla_status dla__cpu_conv_winograd(const pass *q, const dla__cpu_conv_taps *k);

#endif

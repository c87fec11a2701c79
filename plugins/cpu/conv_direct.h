/*
 * conv_direct.h - what the direct convolution files share, whatever the
 * vector width: the description of a forward or backward-data pass, the
 * block and buffer limits, the micro-kernels' signatures and the Winograd
 * entry point.
 *
 * The direct algorithm is written once (conv_direct_body.h) over the
 * vector operations of conv_vec.h, and compiled three times:
 * conv_avx512.c with 16-lane AVX-512 float vectors, conv_avx2.c with
 * 8-lane AVX2 + FMA float vectors, conv_avx2_f64.c with 4-lane AVX2 + FMA
 * double vectors. Only the register block shapes differ between the ISAs
 * (each set fits its ISA's registers: 32 zmm, 16 ymm).
 *
 * The element type is float, or double where the includer defines
 * DLA__CONV_F64 to 1 first (conv_avx2_f64.c): one translation unit holds
 * one element type, so the same static names serve both, and the block
 * shapes stay (a vector holds half as many doubles, in as many registers).
 */
#ifndef DLA_PLUGIN_CPU_CONV_DIRECT_H
#define DLA_PLUGIN_CPU_CONV_DIRECT_H

#include "plugins/cpu/conv_impl.h"

#ifndef DLA__CONV_F64
#define DLA__CONV_F64 0
#endif
/* FT: the element type; FT_DTYPE its dtype; FT_BITS its width; FT_SFX and
 * FT_VSFX the suffixes of its intrinsics (_mm256_add_ps) and vector types
 * (__m256d); FT_NAME(n) the external name n of this element type. */
#if DLA__CONV_F64
#define FT double
#define FT_DTYPE DLA_F64
#define FT_BITS 64
#define FT_SFX _pd
#define FT_VSFX d
#define FT_NAME(n) n##_f64
#else
#define FT float
#define FT_DTYPE DLA_F32
#define FT_BITS 32
#define FT_SFX _ps
#define FT_VSFX
#define FT_NAME(n) n
#endif

#define INLINE static inline __attribute__((always_inline))

/* Buffers one thread of a call keeps: at most this many bytes, else the
 * call goes to im2col (which works in bounded chunks). */
#define MAX_THREAD_BYTES ((int64_t)64 << 20)
#define MAX_THREADS 256
/* Backward filter with at least this many images sums them in parts of
 * the batch (bwf_by_image), with fewer each register block runs through
 * every image (bwf_by_block). */
#define BWF_BY_IMAGE_MIN 32

/* n split into the fewest blocks of at most max, of nearly equal sizes:
 * the size of the first (later ones are the same or one smaller). */
static inline int64_t block_of(int64_t n, int64_t max)
{
    int64_t blocks = (n + max - 1) / max;
    return (n + blocks - 1) / blocks;
}

/* The forward micro-kernel: yb[f * ys + p ..] = sum over c < cg, t < nt
 * of wp[(c, t, f)] * xb[c * cs + toff[t] + p ..] for one register block
 * of outputs (PV vectors) x filters (yb aligned to a vector). */
typedef void (*dla__cpu_conv_fwd_fn)(const FT *xb, int64_t cs, int64_t cg, const int64_t *toff,
                                     int64_t nt, const FT *wp, FT *yb, int64_t ys);
/* The backward-filter micro-kernel: acc[(f * af + t) * VL ..] += sum over
 * nvec vectors v of xc[toff[t] + VL v ..] * dy[f * ds + VL v ..]. */
typedef void (*dla__cpu_conv_bwf_fn)(const FT *xc, const int64_t *toff, const FT *dy,
                                     int64_t ds, int64_t nvec, FT *acc, int64_t af);

/* One pass of y = conv(x, w), for forward (x, w, y as given) and backward
 * data (dY as the source, flipped weights, dX as the destination). */
typedef struct pass {
    int64_t B, G, nci, nco; /* images, groups, channels per group in and out */
    int64_t in[3], out[3], fs[3], dl[3], pb[3];
    /* Strides (0 or 1: none); a strided pass has dilation 1 and runs on
     * phase planes (conv_direct_body.h, pack_phased). */
    int64_t st[3];
    const FT *src;
    int64_t ss[3], sc, sb;
    FT *dst;
    int64_t ds[3], dc, db;
    const FT *bias;
    int64_t bs;
    /* The pass's epilogue (dla__cpu_conv.epi), run on each image of dst
     * once written; NULL: none. */
    const dla_fused_args *epi;
    /* Direct only: per group g, per block of nf filters from f0:
     * [c][t][nf] at wpack + g * nci * ntaps * nco + f0 * nci * ntaps. */
    const FT *wpack;
    int64_t nf; /* filters per block */
} pass;

/* The 3x3 filters of a pass as Winograd reads them: tap (k0, k1) (dim 0
 * first) from pass input channel ci to output channel co of group g is
 * w[g * sg + ci * sci + co * sco + k0 * s0 + k1 * s1]; backward data
 * points w at the last tap and gives negative s0, s1 (the flip). */
typedef struct dla__cpu_conv_taps {
    const FT *w;
    int64_t sg, sci, sco, s0, s1;
} dla__cpu_conv_taps;

/* The pass by Winograd's F(2x2, 3x3) with AVX-512 (conv_winograd.c).
 * DLA_ERR_UNSUPPORTED (without a message) when it does not apply or would
 * not pay: filters other than 3x3 with dilation 1 over 2 spatial dims,
 * fewer than 8 channels in or out, fewer than 8 images, filters large
 * enough to overflow its transforms (Inf or NaN among them), or
 * DLACCEL_CPU_CONV=direct. Images whose inputs could overflow the
 * transforms get their outputs from direct sums (conv_winograd.c's range
 * section). Float only. */
#if !DLA__CONV_F64
dla_status dla__cpu_conv_winograd(const pass *q, const dla__cpu_conv_taps *k);
/* Backward filter of the same 3x3 layers by F(2x2, 3x3) (conv_winograd.c),
 * on the same conditions; also DLA_ERR_UNSUPPORTED, dW written but to be
 * written again, when its sums hold Inf or NaN (Inf or NaN in x or dY, or
 * values near FLT_MAX that overflowed). */
dla_status dla__cpu_conv_winograd_filter(const dla__cpu_conv *p);
#endif

#endif

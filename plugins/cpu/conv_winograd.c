/*
 * conv_winograd.c - 3x3 float32 convolutions, forward and backward data,
 * by Winograd's minimal filtering F(2x2, 3x3) with AVX-512.
 *
 * The algorithm is conv_winograd_body.h, compiled here for AVX-512 and in
 * conv_winograd_avx2.c for AVX2 + FMA; this file adds AVX-512's plane
 * split and interleave.
 *
 * Why: the direct kernels (conv_avx512.c) already run the 3x3 layers of
 * the digit CNN near the FMA peak, so only fewer multiplications can make
 * them faster. F(2x2, 3x3) computes a 2x2 block of outputs from a 4x4
 * block of inputs with 16 products per pair of channels instead of 36:
 *
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A        (Lavin and Gray, 2016)
 *
 * with the transforms below (adds and halvings only). Summed over the
 * input channels, the 16 elementwise products become 16 small GEMMs,
 * tiles x in-channels times in-channels x out-channels, run on the direct
 * forward's register-blocked micro-kernel with a single tap. The
 * transforms cost adds per tile and channel, so the path is taken only
 * with 8 or more channels in and out (docs/convolution.md has the
 * figures). Its rounding differs from the direct sum's by a few units of
 * the last place, within the conformance suite's bound.
 *
 * The layout. Tile (ty, tx) covers output rows 2ty, 2ty+1 and columns
 * 2tx, 2tx+1 (dim 0 is the column) and reads the padded input P[2ty+i]
 * [2tx+j], i, j < 4. Each padded input channel is split into four
 * polyphase planes, plane (R&1)*2 + (C&1) holding P[R][C] at
 * (R>>1)*L + (C>>1), with L = Tx + 1. Then tile p = ty*L + tx finds its
 * element (i, j) at p + (i>>1)*L + (j>>1) of plane (i&1)*2 + (j&1): one
 * offset for every tile, so 16 tiles are one vector load per element. The
 * column tx = Tx is computed and dropped, as the wide layout's row tails
 * are. The outputs come back as four planes the same way and are
 * interleaved into rows.
 */
#include "plugins/cpu/conv_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* row[0..31] into e[0..15] (even elements) and o[0..15] (odd): two
 * two-source permutes. */
INLINE TGT void split32(const float *row, float *e, float *o)
{
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512 a = _mm512_load_ps(row), b = _mm512_load_ps(row + 16);
    _mm512_storeu_ps(e, _mm512_permutex2var_ps(a, even, b));
    _mm512_storeu_ps(o, _mm512_permutex2var_ps(a, odd, b));
}

/* d[2i] = a[i], d[2i + 1] = b[i] for i < 16 (d 64-byte aligned). */
INLINE TGT void zip32(const float *a, const float *b, float *d)
{
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi =
        _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __m512 x0 = _mm512_loadu_ps(a), x1 = _mm512_loadu_ps(b);
    _mm512_store_ps(d, _mm512_permutex2var_ps(x0, lo, x1));
    _mm512_store_ps(d + 16, _mm512_permutex2var_ps(x0, hi, x1));
}

#define WINOGRAD_ENTRY dla__cpu_conv_winograd
#include "plugins/cpu/conv_winograd_body.h"

#endif /* not x86-64 with GCC or Clang: nothing calls it */

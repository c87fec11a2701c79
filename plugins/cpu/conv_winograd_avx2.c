/*
 * conv_winograd_avx2.c - Winograd F(2x2, 3x3) for the 3x3 forward and
 * backward-data passes with AVX2 + FMA: conv_winograd_body.h (described
 * in conv_winograd.c) with 8-lane vectors and the AVX2 forward
 * micro-kernels (conv_avx2.c) for its GEMMs. What AVX2 lacks is the
 * two-source permute of AVX-512, so the plane split and interleave below
 * take in-lane shuffles and a cross-lane permute per vector instead.
 *
 * Compiled for any x86-64: only these functions carry
 * target("avx2,fma"), and only conv_avx2.c's direct kernels call it.
 */
#include "plugins/cpu/conv_avx2.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* 16 floats s[0..15] into their 8 even ones at e and 8 odd ones at o:
 * shuffle_ps picks pairs within each 128-bit half ([s0 s2 s8 s10 | s4 s6
 * s12 s14]), then a 64-bit permute puts the halves in order. */
INLINE TGT void split16(const float *s, float *e, float *o)
{
    const __m256 a = _mm256_loadu_ps(s), b = _mm256_loadu_ps(s + 8);
    const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    _mm256_storeu_ps(e, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8)));
    _mm256_storeu_ps(o, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), 0xD8)));
}

/* row[0..31] into e[0..15] (even elements) and o[0..15] (odd). */
INLINE TGT void split32(const float *row, float *e, float *o)
{
    split16(row, e, o);
    split16(row + 16, e + 8, o + 8);
}

/* d[2i] = a[i], d[2i + 1] = b[i] for i < 8: unpack within the 128-bit
 * halves, then the halves regrouped. */
INLINE TGT void zip16(const float *a, const float *b, float *d)
{
    const __m256 x0 = _mm256_loadu_ps(a), x1 = _mm256_loadu_ps(b);
    const __m256 lo = _mm256_unpacklo_ps(x0, x1), hi = _mm256_unpackhi_ps(x0, x1);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(lo, hi, 0x20));
    _mm256_storeu_ps(d + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* d[2i] = a[i], d[2i + 1] = b[i] for i < 16. */
INLINE TGT void zip32(const float *a, const float *b, float *d)
{
    zip16(a, b, d);
    zip16(a + 8, b + 8, d + 16);
}

#define WINOGRAD_ENTRY dla__cpu_conv_winograd_avx2
#include "plugins/cpu/conv_winograd_body.h"

#endif /* not x86-64 with GCC or Clang: nothing calls it */

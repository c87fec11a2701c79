/*
 * dlaccel/plugin_philox.h - the definition of the library's random stream
 * (part of the plugin kit), as code that is both C11 and OpenCL C:
 * Philox4x32-10 blocks, the uniform maps, and the Box-Muller normals with
 * their own logarithm, sine and cosine. dla_random_args in
 * dlaccel/plugin.h says which block and word each element takes; these
 * functions give the bits.
 *
 * The host (core/philox.c) and the cpu plugin compile it, and the opencl
 * plugin compiles the very same text into its random program, so they
 * cannot drift apart; a third-party plugin that includes it (or feeds its
 * text to its device compiler) draws the same bits. The transcendental
 * functions are written here, not taken from libm or the OpenCL builtins,
 * because those differ by an ulp from one library or driver to the next,
 * and a normal's bits must not. What is left is +, -, *, / and sqrt in
 * double, which IEEE 754 (and OpenCL for double) rounds correctly; every
 * includer must compile it without contraction into fma (gcc and clang:
 * -ffp-contract=off; OpenCL programs: #pragma OPENCL FP_CONTRACT OFF).
 * Accuracy is a few ulps, far below what a sample of normals can show.
 *
 * In C it includes <stdint.h> and <math.h> (link with -lm for sqrt); in
 * OpenCL C the types are defined here and sqrt is built in, and the
 * double functions (dla_px_u53 and the normals) exist only where
 * DLA_FP64 is defined (the device has cl_khr_fp64). CUDA C++ compiles it
 * too: under nvcc as C; under NVRTC (__CUDACC_RTC__) it includes nothing,
 * sqrt is built in and uint32_t / uint64_t are defined here unless the
 * includer defines DLA_PHILOX_HAVE_STDINT (it has them already). CUDA
 * code is compiled with --fmad=false (nvcc and NVRTC alike). An includer
 * may define DLA_PHILOX_FN (default: static inline; static __host__
 * __device__ inline under CUDA).
 *
 * The functions:
 *   dla_px_block(seed, index, out[4])  block index of the stream under
 *                                      key seed: four 32-bit words;
 *   dla_px_u24(w)                      a single in [0, 1), exact;
 *   dla_px_u53(hi, lo)                 a double in [0, 1), exact;
 *   dla_px_normal_pair(r[4], &z0, &z1) the two normals of one block;
 *   dla_px_log, dla_px_cos_sin_2pi     the stream's own ln and cos/sin.
 */
#ifndef DLA_PHILOX_STREAM_H
#define DLA_PHILOX_STREAM_H

#if defined(__OPENCL_VERSION__)
typedef uint uint32_t;
typedef ulong uint64_t;
#elif defined(__CUDACC_RTC__)
#ifndef DLA_PHILOX_HAVE_STDINT
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif
#else
#include <math.h>
#include <stdint.h>
#endif

#ifndef DLA_PHILOX_FN
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DLA_PHILOX_FN static __host__ __device__ inline
#else
#define DLA_PHILOX_FN static inline
#endif
#endif

/* Block index of the stream under seed: Philox4x32-10 of the counter
 * (index low word, high word, 0, 0) under the key (seed low, seed high). */
DLA_PHILOX_FN void dla_px_block(uint64_t seed, uint64_t index, uint32_t *out)
{
    uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int i = 0; i < 10; i++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        const uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        const uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* A single in [0, 1) from the top 24 bits of a word: exact. */
DLA_PHILOX_FN float dla_px_u24(uint32_t w)
{
    return (float)(w >> 8) * (1.0f / 16777216.0f);
}

#if !defined(__OPENCL_VERSION__) || defined(DLA_FP64)

/* A double in [0, 1) from 53 bits of two words (27 of hi, 26 of lo): exact. */
DLA_PHILOX_FN double dla_px_u53(uint32_t hi, uint32_t lo)
{
    return (double)(((uint64_t)(hi >> 5) << 26) | (uint64_t)(lo >> 6)) *
           (1.0 / 9007199254740992.0);
}

/* ln x for x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (the
 * scaling by 2 is exact), ln m = 2 atanh(s) with s = (m - 1) / (m + 1),
 * |s| < 0.1716, as the odd series 2 s (1 + s^2/3 + ... + s^20/21), whose
 * next term is below 2^-55 of the sum; ln 2 in two parts so e ln 2 keeps
 * its bits (the upper part has 32 significant bits, |e| <= 53). */
DLA_PHILOX_FN double dla_px_log(double x)
{
    double e = 0.0;
    while (x < 0.70710678118654752440) {
        x *= 2.0;
        e -= 1.0;
    }
    const double s = (x - 1.0) / (x + 1.0), z = s * s;
    double p = 0x1.8618618618618p-5; /* 1/21 */
    p = p * z + 0x1.af286bca1af28p-5; /* 1/19 */
    p = p * z + 0x1.e1e1e1e1e1e1ep-5; /* 1/17 */
    p = p * z + 0x1.1111111111111p-4; /* 1/15 */
    p = p * z + 0x1.3b13b13b13b14p-4; /* 1/13 */
    p = p * z + 0x1.745d1745d1746p-4; /* 1/11 */
    p = p * z + 0x1.c71c71c71c71cp-4; /* 1/9 */
    p = p * z + 0x1.2492492492492p-3; /* 1/7 */
    p = p * z + 0x1.999999999999ap-3; /* 1/5 */
    p = p * z + 0x1.5555555555555p-2; /* 1/3 */
    p = p * z + 1.0;
    const double ln2_hi = 0x1.62e42feep-1, ln2_lo = 0x1.a39ef35793c76p-33;
    return e * ln2_hi + (e * ln2_lo + (2.0 * s) * p);
}

/* cos and sin of 2 pi u for u in [0, 1): 4u = n + f exactly, with n whole
 * and f in [-1/2, 1/2], so 2 pi u = n pi/2 + a with a = f pi/2 in
 * [-pi/4, pi/4], where Taylor polynomials to a^18 (cos) and a^19 (sin)
 * leave less than 2^-54; the quadrant n only swaps and negates them. */
DLA_PHILOX_FN void dla_px_cos_sin_2pi(double u, double *c, double *s)
{
    const double t = 4.0 * u;
    double n = (double)(int)t;
    double f = t - n;
    if (f > 0.5) {
        f -= 1.0;
        n += 1.0;
    }
    const double pio2_hi = 0x1.921fb544p+0, pio2_lo = 0x1.0b4611a626331p-34;
    const double a = f * pio2_hi + f * pio2_lo, z = a * a;
    double ps = -0x1.2f49b46814157p-57; /* -1/19! */
    ps = ps * z + 0x1.952c77030ad4ap-49; /* 1/17! */
    ps = ps * z - 0x1.ae7f3e733b81fp-41; /* -1/15! */
    ps = ps * z + 0x1.6124613a86d09p-33; /* 1/13! */
    ps = ps * z - 0x1.ae64567f544e4p-26; /* -1/11! */
    ps = ps * z + 0x1.71de3a556c734p-19; /* 1/9! */
    ps = ps * z - 0x1.a01a01a01a01ap-13; /* -1/7! */
    ps = ps * z + 0x1.1111111111111p-7; /* 1/5! */
    ps = ps * z - 0x1.5555555555555p-3; /* -1/3! */
    const double sa = a + (a * z) * ps;
    double pc = -0x1.6827863b97d97p-53; /* -1/18! */
    pc = pc * z + 0x1.ae7f3e733b81fp-45; /* 1/16! */
    pc = pc * z - 0x1.93974a8c07c9dp-37; /* -1/14! */
    pc = pc * z + 0x1.1eed8eff8d898p-29; /* 1/12! */
    pc = pc * z - 0x1.27e4fb7789f5cp-22; /* -1/10! */
    pc = pc * z + 0x1.a01a01a01a01ap-16; /* 1/8! */
    pc = pc * z - 0x1.6c16c16c16c17p-10; /* -1/6! */
    pc = pc * z + 0x1.5555555555555p-5; /* 1/4! */
    pc = pc * z - 0.5;
    const double ca = 1.0 + z * pc;
    const int q = (int)n & 3;
    *c = q == 0 ? ca : q == 1 ? -sa : q == 2 ? -ca : sa;
    *s = q == 0 ? sa : q == 1 ? ca : q == 2 ? -sa : -ca;
}

/* The pair of standard normals of one block (Box-Muller): u1 in (0, 1] so
 * the logarithm never sees 0. */
DLA_PHILOX_FN void dla_px_normal_pair(const uint32_t *r, double *z0, double *z1)
{
    const double u1 = 1.0 - dla_px_u53(r[0], r[1]);
    const double u2 = dla_px_u53(r[2], r[3]);
    const double rad = sqrt(-2.0 * dla_px_log(u1));
    double c, s;
    dla_px_cos_sin_2pi(u2, &c, &s);
    *z0 = rad * c;
    *z1 = rad * s;
}

#endif /* double */

#endif

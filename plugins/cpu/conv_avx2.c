/*
 * conv_avx2.c - direct float32 convolution with AVX2 and FMA, stride 1:
 * the algorithm of conv_direct_body.h with 8-lane vectors, for x86-64
 * CPUs without AVX-512 (AMD before Zen 4, Intel's desktop parts).
 * conv_avx2_f64.c compiles this file again for double (4 lanes, the same
 * register blocks), the double kernels of every CPU with AVX2 and FMA.
 *
 * Register blocks fit AVX2's 16 ymm registers: the accumulators plus the
 * vectors loaded per step and one broadcast weight or dY vector (the
 * shapes measured are below and in docs/convolution.md).
 * There is no AVX2 Winograd: its planes are split and interleaved with
 * AVX-512's two-source permutes (conv_winograd.c).
 *
 * Compiled for any x86-64: only these functions carry
 * target("avx2,fma"), and conv.c calls them after a runtime CPU check.
 */
#include "plugins/cpu/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma")))
#define VBITS 256
#define VF_REG "+x" /* one of the 16 ymm registers */
#include "plugins/cpu/conv_vec.h"

/* ------------------------------------------------------- micro-kernels */

/* Forward: 4 vectors of outputs x 1-2 filters, 2 x 3-6 (at most 12
 * accumulators, the vectors of inputs and the broadcast weight). Measured
 * against 4 x 1-3 (4 x 3 needs 17 registers: 20-45% slower) and 1 x
 * 7-12 (fewer loads per FMA: 12-25% slower on the digit CNN's layers). */
VEC_FWD(4, 1) VEC_FWD(4, 2) VEC_FWD(2, 3) VEC_FWD(2, 4) VEC_FWD(2, 5) VEC_FWD(2, 6)
#define FWD_MAX_NF 6
#define FWD_PV(n) ((n) > 2 ? 2 : 4)
static const dla__cpu_conv_fwd_fn fwd_fns[FWD_MAX_NF + 1] = {
    NULL, fwd_4_1, fwd_4_2, fwd_2_3, fwd_2_4, fwd_2_5, fwd_2_6};
#define FWD_FNS fwd_fns

/* Backward filter: 3 taps x 4 filters (12 accumulators, 3 vectors of
 * inputs, one of dY); 2 x 6 measured 20-40% slower. */
#define BWF_MAX_NT 3
#define BWF_MAX_NF 4
#define BWF_ROW(NT) VEC_BWF(NT, 1) VEC_BWF(NT, 2) VEC_BWF(NT, 3) VEC_BWF(NT, 4)
BWF_ROW(1) BWF_ROW(2) BWF_ROW(3)
#undef BWF_ROW
#define BWF_ENTRY(NT) {NULL, bwf_##NT##_1, bwf_##NT##_2, bwf_##NT##_3, bwf_##NT##_4}
static const dla__cpu_conv_bwf_fn bwf_fns[BWF_MAX_NT + 1][BWF_MAX_NF + 1] = {
    {NULL}, BWF_ENTRY(1), BWF_ENTRY(2), BWF_ENTRY(3)};
#undef BWF_ENTRY
/* Blocks of filters outermost: on this CPU's 512 KiB L2 the channels-first
 * order was L2-bound on long rows (1-D, 1000 samples, 32 channels: 0.54x
 * of im2col's speed, 1.5x after) and on many channels (16x16, 64 -> 64,
 * 5x5: 0.72x, 1.1x after); the AVX-512 path orders them so too. */
#define BWF_FILTERS_OUTER

#define DIRECT_WINOGRAD(q, k) ((void)(q), (void)(k), DLA_ERR_UNSUPPORTED)
#define DIRECT_ENTRY FT_NAME(dla__cpu_conv_direct_avx2)
#include "plugins/cpu/conv_direct_body.h"

#endif /* not x86-64 with GCC or Clang: conv.c never calls it */

/*
 * conv_avx512.c - direct float32 convolution with AVX-512, stride 1: the
 * algorithm of conv_direct_body.h with 16-lane vectors.
 *
 * Register blocks (32 zmm registers; docs/convolution.md has the
 * measurements): forward 4 vectors of outputs x 1-6 filters or 2 x 7-12;
 * backward filter up to 4 taps x 6 filters. The 3x3 layers with 8+
 * channels go to Winograd (conv_winograd.c), all three directions.
 *
 * Compiled for any x86-64: only these functions carry target("avx512f"),
 * and conv.c calls them after a runtime CPU check.
 */
#include "plugins/cpu/conv_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)

/* ------------------------------------------------------- micro-kernels */

VEC_FWD(4, 1) VEC_FWD(4, 2) VEC_FWD(4, 3) VEC_FWD(4, 4) VEC_FWD(4, 5) VEC_FWD(4, 6)
VEC_FWD(2, 7) VEC_FWD(2, 8) VEC_FWD(2, 9) VEC_FWD(2, 10) VEC_FWD(2, 11) VEC_FWD(2, 12)
const dla__cpu_conv_fwd_fn dla__cpu_conv_fwd_fns[FWD_MAX_NF + 1] = {
    NULL, fwd_4_1, fwd_4_2, fwd_4_3, fwd_4_4, fwd_4_5, fwd_4_6,
    fwd_2_7, fwd_2_8, fwd_2_9, fwd_2_10, fwd_2_11, fwd_2_12};
#define FWD_FNS dla__cpu_conv_fwd_fns

#define BWF_ROW(NT) VEC_BWF(NT, 1) VEC_BWF(NT, 2) VEC_BWF(NT, 3) VEC_BWF(NT, 4) VEC_BWF(NT, 5) VEC_BWF(NT, 6)
BWF_ROW(1) BWF_ROW(2) BWF_ROW(3) BWF_ROW(4)
#undef BWF_ROW
#define BWF_ENTRY(NT) {NULL, bwf_##NT##_1, bwf_##NT##_2, bwf_##NT##_3, bwf_##NT##_4, bwf_##NT##_5, bwf_##NT##_6}
const dla__cpu_conv_bwf_fn dla__cpu_conv_bwf_fns[BWF_MAX_NT + 1][BWF_MAX_NF + 1] = {
    {NULL}, BWF_ENTRY(1), BWF_ENTRY(2), BWF_ENTRY(3), BWF_ENTRY(4),
};
#undef BWF_ENTRY
#define bwf_fns dla__cpu_conv_bwf_fns

/* Blocks of filters outermost, as on the AVX2 path: a block of dY rows
 * stays in L1 while the channels pass. On an Intel Xeon (2 MiB L2),
 * three alternating rounds, backward filter of the digit CNN's 20 -> 20
 * layer 3.17 against 3.63 ms channels first, ResNet-20's 32 -> 32 on
 * 16x16 4.2 against 4.6, 64 -> 64 on 8x8 6.5 against 7.1 (the order
 * changes no sum: each block's sums are its own). */
#define BWF_FILTERS_OUTER

/* Strided forward passes on phase planes: ResNet-20's downsampling
 * layers at batch 128 (dlaccel-bench conv9-conv12) took 0.30-0.61x the
 * time of im2col + OpenBLAS (docs/convolution.md). The AVX2 kernels were
 * not measured on them and keep im2col. */
#define DIRECT_STRIDED
#define DIRECT_WINOGRAD(q, k) dla__cpu_conv_winograd(q, k)
#define DIRECT_WINOGRAD_FILTER(p) dla__cpu_conv_winograd_filter(p)
#define DIRECT_ENTRY dla__cpu_conv_direct_avx512
#include "plugins/cpu/conv_direct_body.h"

#endif /* not x86-64 with GCC or Clang: conv.c never calls it */

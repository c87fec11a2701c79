/*
 * conv_avx512.h - what the two AVX-512 convolution files share: the
 * vector kernels of conv_vec.h at 16 lanes (the forward register-blocked
 * micro-kernel, the row copy) and the forward and backward-filter
 * kernels' tables.
 *
 * conv_avx512.c runs every stride-1 float32 convolution directly;
 * conv_winograd.c takes the 3x3 forward and backward-data passes with
 * enough channels, and uses the same micro-kernels for its 16 small GEMMs
 * (one tap, the tiles as the outputs).
 */
#ifndef DLA_PLUGIN_CPU_CONV_AVX512_H
#define DLA_PLUGIN_CPU_CONV_AVX512_H

#include "plugins/cpu/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))
#define VBITS 512
#define VF_REG "+v" /* any of the 32 vector registers */
#include "plugins/cpu/conv_vec.h"

/* The forward micro-kernels for NF = 1..12 filters: 1-6 take 4 vectors of
 * outputs, 7-12 two (conv_avx512.c). */
#define FWD_MAX_NF 12
#define FWD_PV(n) ((n) > 6 ? 2 : 4)
extern const dla__cpu_conv_fwd_fn dla__cpu_conv_fwd_fns[FWD_MAX_NF + 1];
/* The backward-filter micro-kernels for 1..4 taps x 1..6 filters. */
#define BWF_MAX_NT 4
#define BWF_MAX_NF 6
extern const dla__cpu_conv_bwf_fn dla__cpu_conv_bwf_fns[BWF_MAX_NT + 1][BWF_MAX_NF + 1];

/* The Winograd backward filter's products (conv_winograd_nt.c): C (m x n,
 * rows ldc apart) = A B^T, or C + A B^T with add, A m x k and B n x k with
 * rows lda and ldb apart, each contiguous along k. Whether they run there
 * (DLACCEL_CPU_WINOGRAD_GEMM unset or own) or by OpenBLAS (openblas). */
void dla__cpu_winograd_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                          const float *B, int64_t ldb, int add, float *C, int64_t ldc);
int dla__cpu_winograd_nt_on(void);

#endif /* x86-64 */

#endif

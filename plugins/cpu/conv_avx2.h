/*
 * conv_avx2.h - what the two AVX2 + FMA convolution files share: the
 * vector kernels of conv_vec.h at 8 lanes and the forward kernels' table
 * (conv_avx2.c), which conv_winograd_avx2.c uses for its GEMMs.
 */
#ifndef DLA_PLUGIN_CPU_CONV_AVX2_H
#define DLA_PLUGIN_CPU_CONV_AVX2_H

#include "plugins/cpu/conv_direct.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#define TGT __attribute__((target("avx2,fma")))
#define VL 8
#define vf __m256
#define VF_LOAD _mm256_load_ps
#define VF_LOADU _mm256_loadu_ps
#define VF_STORE _mm256_store_ps
#define VF_STOREU _mm256_storeu_ps
#define VF_SET1 _mm256_set1_ps
#define VF_ZERO _mm256_setzero_ps
#define VF_ADD _mm256_add_ps
#define VF_SUB _mm256_sub_ps
#define VF_FMA _mm256_fmadd_ps
#define VF_REG "+x" /* one of the 16 ymm registers */
#include "plugins/cpu/conv_vec.h"

/* The forward micro-kernels for NF = 1..6 filters: 1-2 take 4 vectors of
 * outputs, 3-6 two (conv_avx2.c). */
#define FWD_MAX_NF 6
#define FWD_PV(n) ((n) > 2 ? 2 : 4)
extern const dla__cpu_conv_fwd_fn dla__cpu_conv_fwd_fns_avx2[FWD_MAX_NF + 1];
#define FWD_FNS dla__cpu_conv_fwd_fns_avx2

#endif /* x86-64 */

#endif

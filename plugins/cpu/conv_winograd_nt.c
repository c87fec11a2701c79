/*
 * conv_winograd_nt.c - the products of the Winograd backward filter,
 * C (m x n) = A B^T (or C + A B^T), A m x k and B n x k with each row
 * contiguous along k, by AVX-512 without packing.
 *
 * Why not OpenBLAS: its sgemm (the Haswell kernels on this build) packed
 * both operands of each of the 16 products of a run (16-64 channels by
 * ~512 tiles) and ran 8-wide FMAs; the packing alone was about 6% of
 * ResNet-20's train step. Here each output of a 4 x 4 block has a vector
 * of 16 partial sums along k, and the block's 16 vectors are folded into
 * one by a fixed tree of shuffles at the end: each output the same sum in
 * the same order whoever runs it (the bits follow the shape, never the
 * team). DLACCEL_CPU_WINOGRAD_GEMM=openblas keeps OpenBLAS's products.
 */
#define _GNU_SOURCE /* secure_getenv, through env_choice.h */
#include "core/env_choice.h"
#include "plugins/cpu/conv_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <stdatomic.h>

int dla__cpu_winograd_nt_on(void)
{
    static const char *const values[] = {"own", "openblas", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_CPU_WINOGRAD_GEMM", values, &warned, dla__cpu_host->log) !=
           1;
}

/* The 16 vectors s[0..15] folded into one: lane 4c + r holds the sum of
 * s[4r + c]'s lanes. */
static TGT __m512 fold16(const __m512 s[16])
{
    __m512 t1[8], t2[4], t3[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        t1[j] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * j], s[2 * j + 1], 0x44),
                              _mm512_shuffle_f32x4(s[2 * j], s[2 * j + 1], 0xEE));
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        t2[j] = _mm512_add_ps(
            _mm512_shuffle_f32x4(t1[2 * j], t1[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
            _mm512_shuffle_f32x4(t1[2 * j], t1[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++)
        t3[j] = _mm512_add_ps(_mm512_shuffle_ps(t2[2 * j], t2[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_ps(t2[2 * j], t2[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm512_add_ps(_mm512_shuffle_ps(t3[0], t3[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(t3[0], t3[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Rows i..i+3 of A against rows j..j+3 of B. Every loop over the block
 * unrolled: otherwise GCC keeps the 16 sums on the stack. */
static TGT void block4x4(int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb,
                         int add, float *C, int64_t ldc)
{
    __m512 s[16];
#pragma GCC unroll 16
    for (int q = 0; q < 16; q++)
        s[q] = _mm512_setzero_ps();
    const int64_t kv = k / 16 * 16;
    for (int64_t t = 0; t < kv; t += 16) {
        __m512 a[4];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            a[r] = _mm512_loadu_ps(A + r * lda + t);
        #pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m512 b = _mm512_loadu_ps(B + c * ldb + t);
            #pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                s[4 * r + c] = _mm512_fmadd_ps(a[r], b, s[4 * r + c]);
        }
    }
    if (kv < k) {
        /* The last partial vector, its lanes past k zero (never read). */
        const __mmask16 m = (__mmask16)((1u << (k - kv)) - 1);
        __m512 a[4];
        #pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            a[r] = _mm512_maskz_loadu_ps(m, A + r * lda + kv);
        #pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const __m512 b = _mm512_maskz_loadu_ps(m, B + c * ldb + kv);
            #pragma GCC unroll 4
            for (int r = 0; r < 4; r++)
                s[4 * r + c] = _mm512_fmadd_ps(a[r], b, s[4 * r + c]);
        }
    }
    float out[16];
    _mm512_storeu_ps(out, fold16(s));
    #pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
        #pragma GCC unroll 4
        for (int c = 0; c < 4; c++)
            C[r * ldc + c] = add ? C[r * ldc + c] + out[4 * c + r] : out[4 * c + r];
}

/* One output: row a of A against row b of B. */
static TGT float dot1(int64_t k, const float *a, const float *b)
{
    __m512 s = _mm512_setzero_ps();
    const int64_t kv = k / 16 * 16;
    for (int64_t t = 0; t < kv; t += 16)
        s = _mm512_fmadd_ps(_mm512_loadu_ps(a + t), _mm512_loadu_ps(b + t), s);
    if (kv < k) {
        const __mmask16 m = (__mmask16)((1u << (k - kv)) - 1);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + kv), _mm512_maskz_loadu_ps(m, b + kv), s);
    }
    return _mm512_reduce_add_ps(s);
}

void dla__cpu_winograd_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                          const float *B, int64_t ldb, int add, float *C, int64_t ldc)
{
    const int64_t m4 = m / 4 * 4, n4 = n / 4 * 4;
    for (int64_t i = 0; i < m4; i += 4)
        for (int64_t j = 0; j < n4; j += 4)
            block4x4(k, A + i * lda, lda, B + j * ldb, ldb, add, C + i * ldc + j, ldc);
    /* The edges (channel counts not a multiple of 4) one output at a time. */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i < m4 ? n4 : 0; j < n; j++) {
            const float v = dot1(k, A + i * lda, B + j * ldb);
            C[i * ldc + j] = add ? C[i * ldc + j] + v : v;
        }
}

#endif /* x86-64 */

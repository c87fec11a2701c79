/*
 * vmath.c - exp, log, tanh, sigmoid and erf over arrays through glibc's
 * vector math library (libmvec), for the unary kernel and the fused
 * programs.
 *
 * Why: glibc's scalar tanhf takes about 11 ns an element here and expf 3;
 * libmvec's AVX-512 versions take 0.4 and 0.3 (8192 elements, one thread).
 * An LSTM's gates (three sigmoids and two tanh a step) spent most of their
 * fused launch in them. The scalar functions are used only in the
 * elementwise expressions (elementwise_ops.h) of the ops not listed here.
 *
 * Every element goes through the same vector function whatever its place:
 * a run's last partial vector is loaded masked (zeros in the lanes past
 * it), and a strided run is gathered into a vector first. So an element's
 * bits do not depend on where a thread's share or a fused block begins,
 * on the strides, or on the thread count, and the one-op kernels and the
 * fused programs (which both call here) agree bit for bit. Against the
 * scalar functions the results differ by at most a few units in the last
 * place (glibc documents 4 ulp for libmvec); special values (NaN, the
 * infinities, signed zeros, overflow and underflow) come out as the
 * scalar functions give them.
 *
 * Chosen once: the AVX-512 versions (16 floats, 8 doubles a call) where
 * the CPU has AVX-512F, the AVX2 ones (8 and 4) where it has AVX2 and FMA,
 * none otherwise (the scalar expressions run) or when
 * DLACCEL_CPU_VMATH=off. sigmoid is 1 / (1 + exp(-x)) as its scalar
 * expression, with the vector exp.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "plugins/cpu/vmath.h"

#include "core/env_choice.h"
#include "plugins/cpu/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(DLA_HAVE_LIBMVEC) && defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* libmvec's entry points (the x86-64 vector function ABI names: e = AVX-512,
 * d = AVX2; N16v = 16 lanes, one vector argument). */
__m512 _ZGVeN16v_expf(__m512);
__m512 _ZGVeN16v_logf(__m512);
__m512 _ZGVeN16v_tanhf(__m512);
__m512 _ZGVeN16v_erff(__m512);
__m512d _ZGVeN8v_exp(__m512d);
__m512d _ZGVeN8v_log(__m512d);
__m512d _ZGVeN8v_tanh(__m512d);
__m512d _ZGVeN8v_erf(__m512d);
__m256 _ZGVdN8v_expf(__m256);
__m256 _ZGVdN8v_logf(__m256);
__m256 _ZGVdN8v_tanhf(__m256);
__m256 _ZGVdN8v_erff(__m256);
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m256d _ZGVdN4v_tanh(__m256d);
__m256d _ZGVdN4v_erf(__m256d);

#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))

/* sigmoid: 1 / (1 + exp(-x)), each operation rounded once as the scalar
 * expression's. */
AVX512 static __m512 sigmoid_e16(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 e = _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(one, _mm512_add_ps(one, e));
}
AVX512 static __m512d sigmoid_e8(__m512d x)
{
    const __m512d one = _mm512_set1_pd(1.0);
    __m512d e = _ZGVeN8v_exp(_mm512_sub_pd(_mm512_setzero_pd(), x));
    return _mm512_div_pd(one, _mm512_add_pd(one, e));
}
AVX2 static __m256 sigmoid_d8(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 e = _ZGVdN8v_expf(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(one, _mm256_add_ps(one, e));
}
AVX2 static __m256d sigmoid_d4(__m256d x)
{
    const __m256d one = _mm256_set1_pd(1.0);
    __m256d e = _ZGVdN4v_exp(_mm256_sub_pd(_mm256_setzero_pd(), x));
    return _mm256_div_pd(one, _mm256_add_pd(one, e));
}

/* apply_<isa><type>(f, y, sy, x, sx, n): y[i sy] = f(x[i sx]), i < n, a
 * vector of LANES at a time; the last partial one masked (dense) or through
 * a buffer (strided), zeros in its unused lanes. In place (y == x, sy ==
 * sx) is fine: a vector is read whole before it is written. */
#define DEFINE_APPLY(NAME, ATTR, T, V, LANES, LOAD, STORE, MLOAD, MSTORE, MASK)                    \
    ATTR static void NAME(V (*f)(V), T *y, int64_t sy, const T *x, int64_t sx, int64_t n)       \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        if (sy == 1 && sx == 1) {                                                                  \
            for (; i + LANES <= n; i += LANES)                                                     \
                STORE(y + i, f(LOAD(x + i)));                                                      \
            if (i < n) {                                                                           \
                MASK(n - i);                                                                       \
                MSTORE(y + i, f(MLOAD(x + i)));                                                    \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        T buf[LANES];                                                                              \
        for (; i < n; i += LANES) {                                                                \
            const int k = n - i < LANES ? (int)(n - i) : LANES;                                    \
            for (int j = 0; j < LANES; j++)                                                        \
                buf[j] = j < k ? x[(i + j) * sx] : (T)0;                                           \
            STORE(buf, f(LOAD(buf)));                                                              \
            for (int j = 0; j < k; j++)                                                            \
                y[(i + j) * sy] = buf[j];                                                          \
        }                                                                                          \
    }

#define MASK16(r) const __mmask16 m_ = (__mmask16)((1u << (r)) - 1)
#define MASK8(r) const __mmask8 m_ = (__mmask8)((1u << (r)) - 1)
#define E16_MLOAD(p) _mm512_maskz_loadu_ps(m_, p)
#define E16_MSTORE(p, v) _mm512_mask_storeu_ps(p, m_, v)
#define E8_MLOAD(p) _mm512_maskz_loadu_pd(m_, p)
#define E8_MSTORE(p, v) _mm512_mask_storeu_pd(p, m_, v)
DEFINE_APPLY(apply_e_f32, AVX512, float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps,
             E16_MLOAD, E16_MSTORE, MASK16)
DEFINE_APPLY(apply_e_f64, AVX512, double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd,
             E8_MLOAD, E8_MSTORE, MASK8)

/* AVX2 has masked loads and stores by a vector of lane masks. */
#define MASK_D8(r) const __m256i m_ = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(r)), \
                                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define MASK_D4(r) const __m256i m_ = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(r)), \
                                                         _mm256_setr_epi64x(0, 1, 2, 3))
#define D8_MLOAD(p) _mm256_maskload_ps(p, m_)
#define D8_MSTORE(p, v) _mm256_maskstore_ps(p, m_, v)
#define D4_MLOAD(p) _mm256_maskload_pd(p, m_)
#define D4_MSTORE(p, v) _mm256_maskstore_pd(p, m_, v)
DEFINE_APPLY(apply_d_f32, AVX2, float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, D8_MLOAD,
             D8_MSTORE, MASK_D8)
DEFINE_APPLY(apply_d_f64, AVX2, double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, D4_MLOAD,
             D4_MSTORE, MASK_D4)

/* One kernel per (ISA, op, type): the apply loop with its function. */
#define DEFINE_OP(isa, op, f32fn, f64fn)                                                           \
    static void isa##_##op##_f32(float *y, int64_t sy, const float *x, int64_t sx, int64_t n)     \
    {                                                                                              \
        apply_##isa##_f32(f32fn, y, sy, x, sx, n);                                                 \
    }                                                                                              \
    static void isa##_##op##_f64(double *y, int64_t sy, const double *x, int64_t sx, int64_t n)   \
    {                                                                                              \
        apply_##isa##_f64(f64fn, y, sy, x, sx, n);                                                 \
    }
DEFINE_OP(e, exp, _ZGVeN16v_expf, _ZGVeN8v_exp)
DEFINE_OP(e, log, _ZGVeN16v_logf, _ZGVeN8v_log)
DEFINE_OP(e, tanh, _ZGVeN16v_tanhf, _ZGVeN8v_tanh)
DEFINE_OP(e, erf, _ZGVeN16v_erff, _ZGVeN8v_erf)
DEFINE_OP(e, sigmoid, sigmoid_e16, sigmoid_e8)
DEFINE_OP(d, exp, _ZGVdN8v_expf, _ZGVdN4v_exp)
DEFINE_OP(d, log, _ZGVdN8v_logf, _ZGVdN4v_log)
DEFINE_OP(d, tanh, _ZGVdN8v_tanhf, _ZGVdN4v_tanh)
DEFINE_OP(d, erf, _ZGVdN8v_erff, _ZGVdN4v_erf)
DEFINE_OP(d, sigmoid, sigmoid_d8, sigmoid_d4)
#define HAVE_VMATH 1
#endif

static dla__cpu_vmath_f32_fn f32_of[DLA_UNARY_COUNT];
static dla__cpu_vmath_f64_fn f64_of[DLA_UNARY_COUNT];
static const char *chosen = "none";
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    static const char *const values[] = {"on", "off", NULL};
    static atomic_int warned;
    if (dla__env_choice("DLACCEL_CPU_VMATH", values, &warned, dla__cpu_host->log) == 1) {
        chosen = "off (DLACCEL_CPU_VMATH)";
        return;
    }
#ifdef HAVE_VMATH
    __builtin_cpu_init();
#define SET(isa, OP, op)                                                                           \
    f32_of[DLA_UNARY_##OP] = isa##_##op##_f32, f64_of[DLA_UNARY_##OP] = isa##_##op##_f64
    if (__builtin_cpu_supports("avx512f")) {
        SET(e, EXP, exp);
        SET(e, LOG, log);
        SET(e, TANH, tanh);
        SET(e, ERF, erf);
        SET(e, SIGMOID, sigmoid);
        chosen = "libmvec AVX-512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        SET(d, EXP, exp);
        SET(d, LOG, log);
        SET(d, TANH, tanh);
        SET(d, ERF, erf);
        SET(d, SIGMOID, sigmoid);
        chosen = "libmvec AVX2";
    }
#undef SET
#endif
}

dla__cpu_vmath_f32_fn dla__cpu_vmath_f32(int op)
{
    pthread_once(&once, choose);
    return op >= 0 && op < DLA_UNARY_COUNT ? f32_of[op] : NULL;
}

dla__cpu_vmath_f64_fn dla__cpu_vmath_f64(int op)
{
    pthread_once(&once, choose);
    return op >= 0 && op < DLA_UNARY_COUNT ? f64_of[op] : NULL;
}

const char *dla__cpu_vmath_name(void)
{
    pthread_once(&once, choose);
    return chosen;
}

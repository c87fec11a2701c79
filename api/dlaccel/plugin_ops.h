/*
 * dlaccel/plugin_ops.h - the arithmetic of every unary and binary op of
 * the ABI (dlaccel/plugin.h's DLA_UNARY_LIST and DLA_BINARY_LIST), part of
 * the plugin kit, written once as code that C11, CUDA C++ (nvcc) and
 * NVRTC all compile, so that a device's kernels, its fused programs and
 * the cpu plugin's reference (plugins/cpu/elementwise_ops.h, whose
 * expressions these are, test_plugin_ops checks the bits) agree.
 *
 *   dla_ops_unary_f32(op, x, alpha, beta)   op is a dla_unary_op; alpha
 *   dla_ops_unary_f64(op, x, alpha, beta)   and beta already in the type
 *   dla_ops_binary_f32(op, a, b)            op is a dla_binary_op; the
 *   dla_ops_binary_f64(op, a, b)            comparisons give 1 or 0
 *   dla_ops_binary_is_cmp(op)               nonzero for the comparisons
 *                                           (they write DLA_BOOL)
 *   dla_ops_to_i32(v), dla_ops_to_u8(v)     a double as fill and cast
 *                                           store it in int32 and uint8
 *
 * Exact where the ABI says so (neg, abs, relu with relu(NaN) = 0, sign
 * with NaN kept and 0 for either zero, step, square, leaky_relu, max/min
 * ignoring a NaN operand, IEEE comparisons); the library functions are the
 * type's own (expf for float, exp for double, expm1 for elu), so their
 * bits are the math library's of the compiler at hand. affine is x * alpha
 * + beta with two roundings: on a CUDA device the product goes through
 * __fmul_rn / __dmul_rn, which no compiler contracts into an fma; a C
 * includer compiles without contraction (-ffp-contract=off).
 *
 * In C it includes <math.h> (link with -lm); under nvcc the CUDA math
 * functions are there already, and under NVRTC (__CUDACC_RTC__) it
 * includes nothing: they are builtins. An unknown op gives NaN.
 *
 * DLA_OPS_FN (define it before including to change it) is static inline
 * in C and static __host__ __device__ __forceinline__ under CUDA.
 */
#ifndef DLA_PLUGIN_OPS_H
#define DLA_PLUGIN_OPS_H

#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__)
#include <math.h>
#endif

#ifndef DLA_OPS_FN
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DLA_OPS_FN static __host__ __device__ __forceinline__
#else
#define DLA_OPS_FN static inline
#endif
#endif

/* A product that is never contracted with a following add. */
#if defined(__CUDA_ARCH__)
#define DLA__OPS_MULF(a, b) __fmul_rn((a), (b))
#define DLA__OPS_MULD(a, b) __dmul_rn((a), (b))
#else
#define DLA__OPS_MULF(a, b) ((a) * (b))
#define DLA__OPS_MULD(a, b) ((a) * (b))
#endif

/* The op numbers: DLA_UNARY_LIST's and DLA_BINARY_LIST's order (the test
 * checks them against the enums; NVRTC code has no dlaccel/plugin.h). */
#define DLA_OPS_U_NEG 0
#define DLA_OPS_U_EXP 1
#define DLA_OPS_U_LOG 2
#define DLA_OPS_U_SQRT 3
#define DLA_OPS_U_ABS 4
#define DLA_OPS_U_SIN 5
#define DLA_OPS_U_COS 6
#define DLA_OPS_U_TANH 7
#define DLA_OPS_U_SIGMOID 8
#define DLA_OPS_U_RELU 9
#define DLA_OPS_U_AFFINE 10
#define DLA_OPS_U_ERF 11
#define DLA_OPS_U_SIGN 12
#define DLA_OPS_U_POWS 13
#define DLA_OPS_U_LEAKY_RELU 14
#define DLA_OPS_U_ELU 15
#define DLA_OPS_U_STEP 16
#define DLA_OPS_U_RECIPROCAL 17
#define DLA_OPS_U_SQUARE 18
#define DLA_OPS_U_COUNT 19

#define DLA_OPS_B_ADD 0
#define DLA_OPS_B_SUB 1
#define DLA_OPS_B_MUL 2
#define DLA_OPS_B_DIV 3
#define DLA_OPS_B_MAX 4
#define DLA_OPS_B_MIN 5
#define DLA_OPS_B_POW 6
#define DLA_OPS_B_EQ 7
#define DLA_OPS_B_NE 8
#define DLA_OPS_B_LT 9
#define DLA_OPS_B_LE 10
#define DLA_OPS_B_GT 11
#define DLA_OPS_B_GE 12
#define DLA_OPS_B_COUNT 13

DLA_OPS_FN int dla_ops_binary_is_cmp(int op)
{
    return op >= DLA_OPS_B_EQ && op <= DLA_OPS_B_GE;
}

/* Each function is written once for both float types: T is the type, SUF
 * its suffix in the names (f32, f64), and DLA__OPS_LIB_<SUF>(exp) the math
 * library function of that type (expf, exp). */
#define DLA__OPS_LIB_f32(name) name##f
#define DLA__OPS_LIB_f64(name) name
#define DLA__OPS_MUL_f32 DLA__OPS_MULF
#define DLA__OPS_MUL_f64 DLA__OPS_MULD

/* relu(NaN) = 0 and relu(-0) = 0; sign keeps NaN and gives 0 for either
 * zero; an unknown op gives NaN (0/0 of the operand's own zero). */
#define DLA__OPS_UNARY(SUF, T)                                                                     \
    DLA_OPS_FN T dla_ops_unary_##SUF(int op, T x, T al, T be)                                      \
    {                                                                                              \
        switch (op) {                                                                              \
        case DLA_OPS_U_NEG: return -x;                                                             \
        case DLA_OPS_U_EXP: return DLA__OPS_LIB_##SUF(exp)(x);                                     \
        case DLA_OPS_U_LOG: return DLA__OPS_LIB_##SUF(log)(x);                                     \
        case DLA_OPS_U_SQRT: return DLA__OPS_LIB_##SUF(sqrt)(x);                                   \
        case DLA_OPS_U_ABS: return DLA__OPS_LIB_##SUF(fabs)(x);                                    \
        case DLA_OPS_U_SIN: return DLA__OPS_LIB_##SUF(sin)(x);                                     \
        case DLA_OPS_U_COS: return DLA__OPS_LIB_##SUF(cos)(x);                                     \
        case DLA_OPS_U_TANH: return DLA__OPS_LIB_##SUF(tanh)(x);                                   \
        case DLA_OPS_U_SIGMOID: return (T)1 / ((T)1 + DLA__OPS_LIB_##SUF(exp)(-x));                \
        case DLA_OPS_U_RELU: return x > (T)0 ? x : (T)0;                                           \
        case DLA_OPS_U_AFFINE: return DLA__OPS_MUL_##SUF(x, al) + be;                              \
        case DLA_OPS_U_ERF: return DLA__OPS_LIB_##SUF(erf)(x);                                     \
        case DLA_OPS_U_SIGN: return x > (T)0 ? (T)1 : x < (T)0 ? (T)-1 : x == (T)0 ? (T)0 : x;     \
        case DLA_OPS_U_POWS: return DLA__OPS_LIB_##SUF(pow)(x, al);                                \
        case DLA_OPS_U_LEAKY_RELU: return x > (T)0 ? x : al * x;                                   \
        case DLA_OPS_U_ELU: return x > (T)0 ? x : al * DLA__OPS_LIB_##SUF(expm1)(x);               \
        case DLA_OPS_U_STEP: return x > al ? (T)1 : (T)0;                                          \
        case DLA_OPS_U_RECIPROCAL: return (T)1 / x;                                                \
        case DLA_OPS_U_SQUARE: return x * x;                                                       \
        default: {                                                                                 \
            const T z = x - x;                                                                     \
            return z / z;                                                                          \
        }                                                                                          \
        }                                                                                          \
    }

/* max and min ignore a NaN operand (MATLAB's max(a, b)); both NaN: NaN. */
#define DLA__OPS_BINARY(SUF, T)                                                                    \
    DLA_OPS_FN T dla_ops_binary_##SUF(int op, T a, T b)                                            \
    {                                                                                              \
        switch (op) {                                                                              \
        case DLA_OPS_B_ADD: return a + b;                                                          \
        case DLA_OPS_B_SUB: return a - b;                                                          \
        case DLA_OPS_B_MUL: return a * b;                                                          \
        case DLA_OPS_B_DIV: return a / b;                                                          \
        case DLA_OPS_B_MAX: return a > b || b != b ? a : b;                                        \
        case DLA_OPS_B_MIN: return a < b || b != b ? a : b;                                        \
        case DLA_OPS_B_POW: return DLA__OPS_LIB_##SUF(pow)(a, b);                                  \
        case DLA_OPS_B_EQ: return a == b ? (T)1 : (T)0;                                            \
        case DLA_OPS_B_NE: return a != b ? (T)1 : (T)0;                                            \
        case DLA_OPS_B_LT: return a < b ? (T)1 : (T)0;                                             \
        case DLA_OPS_B_LE: return a <= b ? (T)1 : (T)0;                                            \
        case DLA_OPS_B_GT: return a > b ? (T)1 : (T)0;                                             \
        case DLA_OPS_B_GE: return a >= b ? (T)1 : (T)0;                                            \
        default: {                                                                                 \
            const T z = a - a;                                                                     \
            return z / z;                                                                          \
        }                                                                                          \
        }                                                                                          \
    }

/* A value converted to int32 and uint8 as fill and cast convert (MATLAB's
 * rules where C leaves it undefined): NaN to 0, saturating at the ends,
 * truncating toward zero. int is 32 bits on every target this builds for
 * (NVRTC code has no <stdint.h>). */
DLA_OPS_FN int dla_ops_to_i32(double v)
{
    if (v != v)
        return 0;
    if (v >= 2147483647.0)
        return 2147483647;
    if (v <= -2147483648.0)
        return -2147483647 - 1;
    return (int)v;
}

DLA_OPS_FN unsigned char dla_ops_to_u8(double v)
{
    if (v != v || v <= 0.0)
        return 0;
    if (v >= 255.0)
        return 255;
    return (unsigned char)v;
}

DLA__OPS_UNARY(f32, float)
DLA__OPS_UNARY(f64, double)
DLA__OPS_BINARY(f32, float)
DLA__OPS_BINARY(f64, double)

#endif

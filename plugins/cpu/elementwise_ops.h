/*
 * elementwise_ops.h - what each unary and binary op computes, as one
 * expression per op, for the kernels that apply them (elementwise.c, one op
 * per launch, and fused.c, a program of them per pass). Sharing the
 * expressions is what makes a fused program give the same bits as its
 * steps launched one by one.
 *
 * exp, log, tanh, sigmoid and erf run through glibc's vector functions
 * instead, where the plugin has them (vmath.c); their expressions here are
 * what runs without (DLACCEL_CPU_VMATH=off, no libmvec, no AVX2) and what
 * dlaccel/plugin_ops.h is checked against.
 *
 * Each expression is written once for both float types: T is the element
 * type of the operands, and an expression's value is converted to T (or to
 * a logical byte for the comparisons) where it is stored.
 */
#ifndef DLA_PLUGIN_CPU_ELEMENTWISE_OPS_H
#define DLA_PLUGIN_CPU_ELEMENTWISE_OPS_H

#include <math.h>

/* The libm function of x's type: FN(exp, x) is expf(x) for a float x. */
#define FN(name, x) _Generic((x), float : name##f, default : name)(x)
#define FN2(name, x, y) _Generic((x), float : name##f, default : name)(x, y)

/* -------------------------------------------------------------- unary */

/* x is the operand, al and be the op's alpha and beta converted to T. */
#define U_NEG(x, al, be) (-(x))
#define U_EXP(x, al, be) FN(exp, x)
#define U_LOG(x, al, be) FN(log, x)
#define U_SQRT(x, al, be) FN(sqrt, x)
#define U_ABS(x, al, be) FN(fabs, x)
#define U_SIN(x, al, be) FN(sin, x)
#define U_COS(x, al, be) FN(cos, x)
#define U_TANH(x, al, be) FN(tanh, x)
#define U_SIGMOID(x, al, be) (1 / (1 + FN(exp, -(x))))
#define U_RELU(x, al, be) ((x) > 0 ? (x) : 0)
#define U_AFFINE(x, al, be) ((x) * (al) + (be))
#define U_ERF(x, al, be) FN(erf, x)
/* 0 for either zero (never -0), and NaN through the last arm. */
#define U_SIGN(x, al, be) ((x) > 0 ? 1 : (x) < 0 ? -1 : (x) == 0 ? 0 : (x))
#define U_POWS(x, al, be) FN2(pow, x, al)
#define U_LEAKY_RELU(x, al, be) ((x) > 0 ? (x) : (al) * (x))
/* expm1 keeps the digits of small negative x that exp(x) - 1 cancels. */
#define U_ELU(x, al, be) ((x) > 0 ? (x) : (al) * FN(expm1, x))
#define U_STEP(x, al, be) ((x) > (al) ? 1 : 0)
#define U_RECIPROCAL(x, al, be) (1 / (x))
#define U_SQUARE(x, al, be) ((x) * (x))

/* In DLA_UNARY_LIST order. */
#define UNARY_OPS(X)                                                                               \
    X(neg, U_NEG)                                                                                  \
    X(exp, U_EXP)                                                                                  \
    X(log, U_LOG)                                                                                  \
    X(sqrt, U_SQRT)                                                                                \
    X(abs, U_ABS)                                                                                  \
    X(sin, U_SIN)                                                                                  \
    X(cos, U_COS)                                                                                  \
    X(tanh, U_TANH)                                                                                \
    X(sigmoid, U_SIGMOID)                                                                          \
    X(relu, U_RELU)                                                                                \
    X(affine, U_AFFINE)                                                                            \
    X(erf, U_ERF)                                                                                  \
    X(sign, U_SIGN)                                                                                \
    X(pows, U_POWS)                                                                                \
    X(leaky_relu, U_LEAKY_RELU)                                                                    \
    X(elu, U_ELU)                                                                                  \
    X(step, U_STEP)                                                                                \
    X(reciprocal, U_RECIPROCAL)                                                                    \
    X(square, U_SQUARE)

/* ------------------------------------------------------------- binary */

/* max and min ignore a NaN operand, as MATLAB's max(a, b) does. */
#define B_ADD(a, b) ((a) + (b))
#define B_SUB(a, b) ((a) - (b))
#define B_MUL(a, b) ((a) * (b))
#define B_DIV(a, b) ((a) / (b))
#define B_MAX(a, b) ((a) > (b) || (b) != (b) ? (a) : (b))
#define B_MIN(a, b) ((a) < (b) || (b) != (b) ? (a) : (b))
#define B_POW(a, b) FN2(pow, a, b)
/* C's comparisons are IEEE's: false with a NaN operand, except !=. */
#define B_EQ(a, b) ((a) == (b))
#define B_NE(a, b) ((a) != (b))
#define B_LT(a, b) ((a) < (b))
#define B_LE(a, b) ((a) <= (b))
#define B_GT(a, b) ((a) > (b))
#define B_GE(a, b) ((a) >= (b))

/* In DLA_BINARY_LIST order; ARITH writes T, CMP a logical byte. */
#define BINARY_OPS(X)                                                                              \
    X(add, B_ADD, ARITH)                                                                           \
    X(sub, B_SUB, ARITH)                                                                           \
    X(mul, B_MUL, ARITH)                                                                           \
    X(div, B_DIV, ARITH)                                                                           \
    X(max, B_MAX, ARITH)                                                                           \
    X(min, B_MIN, ARITH)                                                                           \
    X(pow, B_POW, ARITH)                                                                           \
    X(eq, B_EQ, CMP)                                                                               \
    X(ne, B_NE, CMP)                                                                               \
    X(lt, B_LT, CMP)                                                                               \
    X(le, B_LE, CMP)                                                                               \
    X(gt, B_GT, CMP)                                                                               \
    X(ge, B_GE, CMP)

#endif

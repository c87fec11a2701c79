/*
 * vmath.h - exp, log, tanh, sigmoid and erf over arrays through glibc's
 * vector math library, where the build found it and the CPU runs it
 * (vmath.c says why and what the bits are).
 */
#ifndef DLA_PLUGIN_CPU_VMATH_H
#define DLA_PLUGIN_CPU_VMATH_H

#include <dlaccel/plugin.h>

#include <stdint.h>

/* y[i * sy] = op(x[i * sx]) for 0 <= i < n; y == x with sy == sx is fine. */
typedef void (*dla__cpu_vmath_f32_fn)(float *y, int64_t sy, const float *x, int64_t sx,
                                      int64_t n);
typedef void (*dla__cpu_vmath_f64_fn)(double *y, int64_t sy, const double *x, int64_t sx,
                                      int64_t n);

/* The vector kernel of unary op (a dla_unary_op); NULL when it has none
 * here, and the scalar expression of elementwise_ops.h runs. Every caller
 * of an op must take the same choice, so that the one-op kernel and a
 * fused program give the same bits: both ask here. */
dla__cpu_vmath_f32_fn dla__cpu_vmath_f32(int op);
dla__cpu_vmath_f64_fn dla__cpu_vmath_f64(int op);

/* What was chosen, for the plugin's description: "libmvec AVX-512",
 * "libmvec AVX2", "none", "off (DLACCEL_CPU_VMATH)". */
const char *dla__cpu_vmath_name(void);

#endif

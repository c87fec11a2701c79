/*
 * sum.c - the sum in double of a contiguous run of floats or doubles: the
 * inner loop of the reduce and fused_reduce kernels.
 *
 * The plugin is built for baseline x86-64 (no -march: it must run on any
 * machine and under valgrind), where this loop converts and adds two
 * floats at a time and the reductions of a batchnorm become compute-bound.
 * So it alone is built three ways and picked when the plugin loads
 * (target_clones): AVX-512, AVX2, and the baseline. Several independent
 * partial sums hide the latency of the additions; each is a double, so the
 * result carries the same accuracy whichever is picked (the order of the
 * additions differs, within the reduce kernel's stated bound).
 */
#include "plugins/cpu/cpu.h"

#define PARTS 16

#if defined(__x86_64__) && defined(__GNUC__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

/* The clones are static and reached through a plain function: clang 14
 * names the ifunc of an external target_clones function "NAME.ifunc" and
 * leaves NAME itself undefined for the other files' calls, so a clang
 * build of the plugin would not load. One direct call per run costs
 * nothing beside the run. */
#define DEFINE_SUM(T, sfx)                                                                         \
    CLONES static double sum_##sfx(const T *x, int64_t n)                                          \
    {                                                                                              \
        double part[PARTS] = {0};                                                                  \
        int64_t i = 0;                                                                             \
        for (; i + PARTS <= n; i += PARTS) {                                                       \
            _Pragma("omp simd")                                                                    \
            for (int k = 0; k < PARTS; k++)                                                        \
                part[k] += (double)x[i + k];                                                       \
        }                                                                                          \
        double total = 0.0;                                                                        \
        for (int k = 0; k < PARTS; k++)                                                            \
            total += part[k];                                                                      \
        for (; i < n; i++)                                                                         \
            total += (double)x[i];                                                                 \
        return total;                                                                              \
    }                                                                                              \
    double dla__cpu_sum_##sfx(const T *x, int64_t n) { return sum_##sfx(x, n); }
DEFINE_SUM(float, f32)
DEFINE_SUM(double, f64)

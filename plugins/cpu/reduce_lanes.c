/*
 * reduce_lanes.c - the reduce kernel's lanes whose outputs lie apart in
 * memory: a softmax's max and sum over the 24 keys of an attention's
 * scores (24 x 24 x heads x batch, reduced along dim 1), where each output
 * is a short contiguous run and neighbouring outputs are a run apart.
 *
 * reduce.c's generic lanes loop is built for the baseline (SSE2) and keeps
 * each lane in double with its position: at a stride it ran scalar, 3 ns
 * an element, the largest step of a transformer's train step. Here blocks
 * of LANE_BLOCK outputs are reduced side by side, built three ways and
 * picked at load (target_clones, as sum.c), so AVX-512 and AVX2 gather a
 * position of every output in one instruction. The order of the
 * operations is reduce.c's: each output's sum starts at 0 and adds its
 * positions one after another in double; its max (min) starts at the
 * first position and takes a later one when it is strictly greater
 * (smaller) or the first NaN. So the bits are those of the generic loop.
 *
 * The same blocks take sums over short contiguous runs whose outputs are a
 * run apart (a layer normalization's backward: 32 channels of each of 768
 * positions), which reduce.c summed one output at a time, a call of
 * sum.c's each: here in sum.c's order of additions, so with its bits.
 */
#include "plugins/cpu/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CLONES
#endif

#define LANE_BLOCK 16
/* sum.c's number of partial sums. */
#define SUM_PARTS 16

#define DEFINE_LANES(T, sfx)                                                                       \
    CLONES static void sum_##sfx(const T *x, int64_t w, int64_t sl, int64_t n, int64_t sr,          \
                                 double *val)                                                      \
    {                                                                                              \
        int64_t i0 = 0;                                                                            \
        for (; i0 + LANE_BLOCK <= w; i0 += LANE_BLOCK) {                                           \
            double acc[LANE_BLOCK] = {0};                                                          \
            const T *xb = x + i0 * sl;                                                             \
            for (int64_t j = 0; j < n; j++) {                                                      \
                const T *xr = xb + j * sr;                                                         \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < LANE_BLOCK; i++)                                           \
                    acc[i] += (double)xr[i * sl];                                                  \
            }                                                                                      \
            for (int64_t i = 0; i < LANE_BLOCK; i++)                                               \
                val[i0 + i] = acc[i];                                                              \
        }                                                                                          \
        for (; i0 < w; i0++) {                                                                     \
            double acc = 0;                                                                        \
            for (int64_t j = 0; j < n; j++)                                                        \
                acc += (double)x[i0 * sl + j * sr];                                                \
            val[i0] = acc;                                                                         \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* is_max: max, else min. A NaN, once taken, stays: nothing compares                          \
     * greater or smaller than it and b == b fails. */                                             \
    CLONES static void extreme_##sfx(const T *x, int64_t w, int64_t sl, int64_t n, int64_t sr,      \
                                     int is_max, double *val)                                      \
    {                                                                                              \
        int64_t i0 = 0;                                                                            \
        for (; i0 + LANE_BLOCK <= w; i0 += LANE_BLOCK) {                                           \
            T acc[LANE_BLOCK];                                                                     \
            const T *xb = x + i0 * sl;                                                             \
            for (int64_t i = 0; i < LANE_BLOCK; i++)                                               \
                acc[i] = xb[i * sl];                                                               \
            for (int64_t j = 1; j < n; j++) {                                                      \
                const T *xr = xb + j * sr;                                                         \
                if (is_max) {                                                                      \
                    _Pragma("omp simd")                                                            \
                    for (int64_t i = 0; i < LANE_BLOCK; i++) {                                     \
                        const T v = xr[i * sl], b = acc[i];                                        \
                        acc[i] = (v > b || (v != v && b == b)) ? v : b;                            \
                    }                                                                              \
                } else {                                                                           \
                    _Pragma("omp simd")                                                            \
                    for (int64_t i = 0; i < LANE_BLOCK; i++) {                                     \
                        const T v = xr[i * sl], b = acc[i];                                        \
                        acc[i] = (v < b || (v != v && b == b)) ? v : b;                            \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            for (int64_t i = 0; i < LANE_BLOCK; i++)                                               \
                val[i0 + i] = acc[i];                                                              \
        }                                                                                          \
        for (; i0 < w; i0++) {                                                                     \
            T b = x[i0 * sl];                                                                      \
            for (int64_t j = 1; j < n; j++) {                                                      \
                const T v = x[i0 * sl + j * sr];                                                   \
                const int take = is_max ? v > b : v < b;                                           \
                b = (take || (v != v && b == b)) ? v : b;                                          \
            }                                                                                      \
            val[i0] = b;                                                                           \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Each output the sum of a contiguous run of n, in sum.c's order: 16                          \
     * partial sums over the whole blocks of 16, added up in order, then the                       \
     * rest one by one (so the bits of dla__cpu_sum_##sfx). */                                     \
    CLONES static void runs_##sfx(const T *x, int64_t w, int64_t sl, int64_t n, double *val)       \
    {                                                                                              \
        const int64_t whole = n / SUM_PARTS * SUM_PARTS;                                           \
        int64_t i0 = 0;                                                                            \
        for (; i0 + LANE_BLOCK <= w; i0 += LANE_BLOCK) {                                           \
            double total[LANE_BLOCK] = {0};                                                        \
            const T *xb = x + i0 * sl;                                                             \
            for (int64_t k = 0; whole > 0 && k < SUM_PARTS; k++) {                                 \
                double part[LANE_BLOCK] = {0};                                                     \
                for (int64_t b = 0; b < whole; b += SUM_PARTS) {                                   \
                    _Pragma("omp simd")                                                            \
                    for (int64_t i = 0; i < LANE_BLOCK; i++)                                       \
                        part[i] += (double)xb[i * sl + b + k];                                     \
                }                                                                                  \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < LANE_BLOCK; i++)                                           \
                    total[i] += part[i];                                                           \
            }                                                                                      \
            for (int64_t j = whole; j < n; j++) {                                                  \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < LANE_BLOCK; i++)                                           \
                    total[i] += (double)xb[i * sl + j];                                            \
            }                                                                                      \
            for (int64_t i = 0; i < LANE_BLOCK; i++)                                               \
                val[i0 + i] = total[i];                                                            \
        }                                                                                          \
        for (; i0 < w; i0++)                                                                       \
            val[i0] = dla__cpu_sum_##sfx(x + i0 * sl, n);                                          \
    }                                                                                              \
                                                                                                   \
    void dla__cpu_reduce_runs_##sfx(const T *x, int64_t w, int64_t sl, int64_t n, double *val)     \
    {                                                                                              \
        runs_##sfx(x, w, sl, n, val);                                                              \
    }                                                                                              \
                                                                                                   \
    void dla__cpu_reduce_lanes_##sfx(const T *x, int64_t w, int64_t sl, int64_t n, int64_t sr,     \
                                     dla_reduce_op op, double *val)                                \
    {                                                                                              \
        if (op == DLA_REDUCE_SUM || op == DLA_REDUCE_MEAN)                                         \
            sum_##sfx(x, w, sl, n, sr, val);                                                       \
        else                                                                                       \
            extreme_##sfx(x, w, sl, n, sr, op == DLA_REDUCE_MAX, val);                             \
    }

DEFINE_LANES(float, f32)
DEFINE_LANES(double, f64)

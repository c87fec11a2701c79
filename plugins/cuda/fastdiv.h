/*
 * fastdiv.h - division of 32-bit positions by a dim of the space without a
 * divide instruction (GPUs have none: a 32-bit unsigned division is a
 * software sequence of some twenty instructions), as a multiply-high, an
 * add and a shift with constants the host works out once per call.
 *
 * For a divisor n in [1, 2^31) let s = ceil(log2 n) and
 * m = floor(2^32 (2^s - n) / n) + 1, which fits in 32 bits. Then for every
 * dividend u in [0, 2^31):
 *
 *     u / n == (umulhi(u, m) + u) >> s        (umulhi: the high 32 bits
 *                                               of the 64-bit product)
 *
 * (the round-up reciprocal method of Granlund and Montgomery; u + umulhi
 * cannot overflow since umulhi(u, m) <= u < 2^31). The kernels use it only
 * where the space's positions fit in 31 bits; tests/cuda_fastdiv.c checks
 * the identity here for many divisors and dividends, the edges included.
 * Plain C (host and test); the device side is one line in kern.cuh and
 * fused_kern.h.
 */
#ifndef DLA_PLUGIN_CUDA_FASTDIV_H
#define DLA_PLUGIN_CUDA_FASTDIV_H

#include <stdint.h>

/* The constants of divisor n (1 <= n < 2^31; anything else gets those of
 * 1, which the kernels never use: they check the space's size first). */
static inline void dla__cu_fastdiv_make(int64_t n, uint32_t *mul, int32_t *shift)
{
    if (n < 1 || n >= ((int64_t)1 << 31)) {
        *mul = 1;
        *shift = 0;
        return;
    }
    int32_t s = 0;
    while (((int64_t)1 << s) < n)
        s++;
    const uint64_t m = ((((uint64_t)1 << s) - (uint64_t)n) << 32) / (uint64_t)n + 1;
    *mul = (uint32_t)m;
    *shift = s;
}

/* The device's sequence on the host (the test's). */
static inline uint32_t dla__cu_fastdiv_host(uint32_t u, uint32_t mul, int32_t shift)
{
    const uint32_t hi = (uint32_t)(((uint64_t)u * mul) >> 32);
    return (hi + u) >> shift;
}

#endif

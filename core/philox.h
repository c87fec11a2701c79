/*
 * philox.h - Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11), the counter-based generator behind every random op:
 * the same (key, counter) gives the same numbers on every device.
 */
#ifndef DLA_CORE_PHILOX_H
#define DLA_CORE_PHILOX_H

#include <stdint.h>

/* One block: four 32-bit outputs for a 128-bit counter and a 64-bit key. */
void dla__philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Fills n floats/doubles with uniform [0,1) or standard normal numbers from
 * seed, starting at block `counter`; returns the number of blocks used, so a
 * stream can advance its counter by it. Element i comes from block
 * counter + i/4 (uniform) or counter + i/2 (normal: Box-Muller on a pair). */
uint64_t dla__philox_uniform_f32(uint64_t seed, uint64_t counter, float *out, int64_t n);
uint64_t dla__philox_uniform_f64(uint64_t seed, uint64_t counter, double *out, int64_t n);
uint64_t dla__philox_normal_f32(uint64_t seed, uint64_t counter, float *out, int64_t n);
uint64_t dla__philox_normal_f64(uint64_t seed, uint64_t counter, double *out, int64_t n);

#endif

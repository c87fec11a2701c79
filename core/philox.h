/*
 * philox.h - Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC'11), the counter-based generator behind every random op:
 * the same (key, counter) gives the same numbers on every device.
 *
 * The stream itself is defined in core/philox_stream.h (C and OpenCL C);
 * these are the host's loops over it. The cpu plugin compiles philox.c in
 * as its random kernel, so it is the reference by construction.
 */
#ifndef DLA_CORE_PHILOX_H
#define DLA_CORE_PHILOX_H

#include <stdint.h>

/* Block `index` of the stream of seed: four 32-bit words. */
void dla__philox_block(uint64_t seed, uint64_t index, uint32_t out[4]);

/* Fills n floats/doubles with uniform [0,1) or standard normal numbers from
 * seed, starting at block `counter`; returns the number of blocks used, so a
 * stream can advance its counter by it. Element i comes from block
 * counter + i/4 (uniform single), counter + i/2 (uniform double: two words
 * each; normal: Box-Muller on a pair). */
uint64_t dla__philox_uniform_f32(uint64_t seed, uint64_t counter, float *out, int64_t n);
uint64_t dla__philox_uniform_f64(uint64_t seed, uint64_t counter, double *out, int64_t n);
uint64_t dla__philox_normal_f32(uint64_t seed, uint64_t counter, float *out, int64_t n);
uint64_t dla__philox_normal_f64(uint64_t seed, uint64_t counter, double *out, int64_t n);

/* The blocks a draw of n elements takes: the amount the stream advances. */
uint64_t dla__philox_blocks(int normal, int f64, int64_t n);

/* Writes element i (column-major over dims) of the draw to
 * base + sum(index_d * strides[d]) elements of its dtype (single when
 * f64 is 0): the same numbers as the dense fills, for any view. */
void dla__philox_strided(uint64_t seed, uint64_t counter, int normal, int f64, void *base,
                         int ndims, const int64_t *dims, const int64_t *strides);

#endif

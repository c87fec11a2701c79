/*
 * data_rng.h - the host random stream of the data pipeline (shuffling,
 * synthetic data), separate from the tensors' Philox stream.
 *
 * It draws what numpy's np.random.default_rng(seed) draws (PCG64 seeded
 * through SeedSequence, Lemire's bounded integers, masked draws for
 * shuffles, the 256-layer ziggurat for normals), so a pipeline written
 * against numpy, such as the PyTorch reference in shared/peers, can be
 * reproduced sample for sample: integers, uniforms and permutations bit for
 * bit; normals to within a few units of 1e-15 (the ziggurat's tables are
 * computed here, and numpy's stored ones differ in the last bits of some
 * entries), which leaves data rounded to single unchanged.
 */
#ifndef DLA_NN_DATA_RNG_H
#define DLA_NN_DATA_RNG_H

#include <stdint.h>

typedef struct dla__data_rng {
    uint64_t state[2], inc[2]; /* 128-bit LCG state and increment: [0] high, [1] low */
    int has32;                 /* numpy keeps the high half of a 64-bit draw */
    uint32_t buf32;            /* for the next 32-bit draw */
} dla__data_rng;

/* np.random.default_rng(seed). */
void dla__data_rng_seed(dla__data_rng *r, uint64_t seed);
/* The same generator with a SeedSequence of several words (numpy's
 * default_rng([w0, w1, ...]) with each word below 2^32). */
void dla__data_rng_seed_words(dla__data_rng *r, int n, const uint32_t *words);

uint64_t dla__data_rng_u64(dla__data_rng *r);
uint32_t dla__data_rng_u32(dla__data_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double dla__data_rng_double(dla__data_rng *r);
/* rng.uniform(lo, hi). */
double dla__data_rng_uniform(dla__data_rng *r, double lo, double hi);
/* Uniform integer in [0, max] (max inclusive), Lemire's method as numpy. */
uint64_t dla__data_rng_bounded(dla__data_rng *r, uint64_t max);
/* rng.integers(lo, hi): uniform in [lo, hi) (hi > lo). */
int64_t dla__data_rng_integers(dla__data_rng *r, int64_t lo, int64_t hi);
/* rng.standard_normal(). */
double dla__data_rng_normal(dla__data_rng *r);
/* rng.choice(n, p=p): an index drawn with probabilities p[0..n-1] (which
 * need not be normalized; numpy divides by their sum). */
int dla__data_rng_choice(dla__data_rng *r, int n, const double *p);
/* rng.shuffle(x) of x[0..n-1] in place. */
void dla__data_rng_shuffle(dla__data_rng *r, int64_t n, int64_t *x);

#endif

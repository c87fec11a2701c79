/*
 * philox.c - the host's loops over the random stream of
 * core/philox_stream.h: dense fills (dla_rand and friends on a device
 * without the random kernel) and strided ones (the cpu plugin's random
 * kernel, which compiles this file in).
 *
 * Uniform floats use the top 24 bits (doubles: 53 bits from two words) so
 * every value is exactly representable and lies in [0, 1). Normals use
 * Box-Muller on a pair of uniforms, u1 in (0, 1] so the logarithm never
 * sees 0, with the stream's own ln, cos and sin (philox_stream.h says why).
 */
#include "core/philox.h"

#include <math.h>

#include "core/philox_stream.h"

void dla__philox_block(uint64_t seed, uint64_t index, uint32_t out[4])
{
    dla_px_block(seed, index, out);
}

uint64_t dla__philox_blocks(int normal, int f64, int64_t n)
{
    if (n <= 0)
        return 0;
    return normal || f64 ? (uint64_t)(n + 1) / 2 : (uint64_t)(n + 3) / 4;
}

/* The values of block b of a draw: 4 (uniform single) or 2, as doubles
 * (a single is exact in a double, and a normal rounds once from it). */
static int block_values(uint64_t seed, uint64_t counter, int normal, int f64, uint64_t b,
                        double v[4])
{
    uint32_t r[4];
    dla_px_block(seed, counter + b, r);
    if (normal) {
        dla_px_normal_pair(r, &v[0], &v[1]);
        return 2;
    }
    if (f64) {
        v[0] = dla_px_u53(r[0], r[1]);
        v[1] = dla_px_u53(r[2], r[3]);
        return 2;
    }
    for (int j = 0; j < 4; j++)
        v[j] = dla_px_u24(r[j]);
    return 4;
}

static uint64_t dense(uint64_t seed, uint64_t counter, int normal, int f64, void *out, int64_t n)
{
    const uint64_t blocks = dla__philox_blocks(normal, f64, n);
#ifdef _OPENMP /* the cpu plugin's copy; libdlaccel has no OpenMP */
    #pragma omp parallel for if (n > 65536)
#endif
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        double v[4];
        const int per = block_values(seed, counter, normal, f64, (uint64_t)b, v);
        for (int j = 0; j < per && b * per + j < n; j++) {
            if (f64)
                ((double *)out)[b * per + j] = v[j];
            else
                ((float *)out)[b * per + j] = (float)v[j];
        }
    }
    return blocks;
}

uint64_t dla__philox_uniform_f32(uint64_t seed, uint64_t counter, float *out, int64_t n)
{
    return dense(seed, counter, 0, 0, out, n);
}

uint64_t dla__philox_uniform_f64(uint64_t seed, uint64_t counter, double *out, int64_t n)
{
    return dense(seed, counter, 0, 1, out, n);
}

uint64_t dla__philox_normal_f32(uint64_t seed, uint64_t counter, float *out, int64_t n)
{
    return dense(seed, counter, 1, 0, out, n);
}

uint64_t dla__philox_normal_f64(uint64_t seed, uint64_t counter, double *out, int64_t n)
{
    return dense(seed, counter, 1, 1, out, n);
}

void dla__philox_strided(uint64_t seed, uint64_t counter, int normal, int f64, void *base,
                         int ndims, const int64_t *dims, const int64_t *strides)
{
    int64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    const uint64_t blocks = dla__philox_blocks(normal, f64, n);
#ifdef _OPENMP /* the cpu plugin's copy; libdlaccel has no OpenMP */
    #pragma omp parallel for if (n > 65536)
#endif
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        double v[4];
        const int per = block_values(seed, counter, normal, f64, (uint64_t)b, v);
        for (int j = 0; j < per && b * per + j < n; j++) {
            /* Element i's place: its column-major index split over dims. */
            int64_t i = b * per + j, off = 0;
            for (int d = 0; d < ndims; d++) {
                off += (i % dims[d]) * strides[d];
                i /= dims[d];
            }
            if (f64)
                ((double *)base)[off] = v[j];
            else
                ((float *)base)[off] = (float)v[j];
        }
    }
}

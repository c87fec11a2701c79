/*
 * philox.c - Philox4x32-10 and the uniform/normal transforms on top of it.
 *
 * Uniform floats use the top 24 bits (doubles: 53 bits from two words) so
 * every value is exactly representable and lies in [0, 1). Normals use
 * Box-Muller on a pair of uniforms in (0, 1] so log() never sees 0.
 */
#include "core/philox.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void dla__philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

static void block(uint64_t seed, uint64_t index, uint32_t out[4])
{
    const uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    dla__philox4x32_10(ctr, key, out);
}

static float u24(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }
static double u53(uint32_t hi, uint32_t lo)
{
    return (double)(((uint64_t)(hi >> 5) << 26) | (lo >> 6)) * (1.0 / 9007199254740992.0);
}

uint64_t dla__philox_uniform_f32(uint64_t seed, uint64_t counter, float *out, int64_t n)
{
    uint64_t blocks = (uint64_t)(n + 3) / 4;
    #pragma omp parallel for if (n > 65536)
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        uint32_t r[4];
        block(seed, counter + (uint64_t)b, r);
        for (int j = 0; j < 4 && b * 4 + j < n; j++)
            out[b * 4 + j] = u24(r[j]);
    }
    return blocks;
}

uint64_t dla__philox_uniform_f64(uint64_t seed, uint64_t counter, double *out, int64_t n)
{
    uint64_t blocks = (uint64_t)(n + 1) / 2;
    #pragma omp parallel for if (n > 65536)
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        uint32_t r[4];
        block(seed, counter + (uint64_t)b, r);
        for (int j = 0; j < 2 && b * 2 + j < n; j++)
            out[b * 2 + j] = u53(r[2 * j], r[2 * j + 1]);
    }
    return blocks;
}

/* A pair of standard normals from one block (Box-Muller). */
static void normal_pair(const uint32_t r[4], double *z0, double *z1)
{
    double u1 = 1.0 - u53(r[0], r[1]); /* (0, 1] */
    double u2 = u53(r[2], r[3]);
    double rad = sqrt(-2.0 * log(u1));
    double th = 6.283185307179586476925 * u2;
    *z0 = rad * cos(th);
    *z1 = rad * sin(th);
}

uint64_t dla__philox_normal_f32(uint64_t seed, uint64_t counter, float *out, int64_t n)
{
    uint64_t blocks = (uint64_t)(n + 1) / 2;
    #pragma omp parallel for if (n > 65536)
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        uint32_t r[4];
        double z0, z1;
        block(seed, counter + (uint64_t)b, r);
        normal_pair(r, &z0, &z1);
        out[b * 2] = (float)z0;
        if (b * 2 + 1 < n)
            out[b * 2 + 1] = (float)z1;
    }
    return blocks;
}

uint64_t dla__philox_normal_f64(uint64_t seed, uint64_t counter, double *out, int64_t n)
{
    uint64_t blocks = (uint64_t)(n + 1) / 2;
    #pragma omp parallel for if (n > 65536)
    for (int64_t b = 0; b < (int64_t)blocks; b++) {
        uint32_t r[4];
        double z0, z1;
        block(seed, counter + (uint64_t)b, r);
        normal_pair(r, &z0, &z1);
        out[b * 2] = z0;
        if (b * 2 + 1 < n)
            out[b * 2 + 1] = z1;
    }
    return blocks;
}

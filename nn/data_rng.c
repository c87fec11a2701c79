/*
 * data_rng.c - numpy's default_rng on the host: SeedSequence, PCG64 (XSL-RR
 * output of a 128-bit LCG), Lemire's bounded integers and the ziggurat.
 *
 * Each algorithm follows numpy's published definition closely enough to give
 * the same bits: the order of draws, numpy's habit of keeping the high half
 * of a 64-bit draw for the next 32-bit one, rejection by a bit mask (not
 * Lemire's method) in shuffles. The ziggurat's tables are built here from
 * the 256-layer construction (Marsaglia and Tsang) the first time a normal
 * is drawn; they are not numpy's to the last bit, so a normal may differ
 * from numpy's by about 1e-15 (see data_rng.h).
 */
#include "nn/data_rng.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>

__extension__ typedef unsigned __int128 u128;

/* ------------------------------------------------------------ SeedSequence */

/* The hash constants of numpy's SeedSequence (O'Neill's seed_seq_fe). */
enum {
    POOL_SIZE = 4,
    XSHIFT = 16,
};
static const uint32_t INIT_A = 0x43b0d7e5u, MULT_A = 0x931e8875u;
static const uint32_t INIT_B = 0x8b51f9ddu, MULT_B = 0x58f38dedu;
static const uint32_t MIX_MULT_L = 0xca01f9ddu, MIX_MULT_R = 0x4973f715u;

static uint32_t hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= MULT_A;
    value *= *hash_const;
    value ^= value >> XSHIFT;
    return value;
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t result = MIX_MULT_L * x - MIX_MULT_R * y;
    result ^= result >> XSHIFT;
    return result;
}

static void seed_sequence_state(int n, const uint32_t *entropy, int nwords, uint32_t *out)
{
    uint32_t pool[POOL_SIZE], hc = INIT_A;
    for (int i = 0; i < POOL_SIZE; i++)
        pool[i] = hashmix(i < n ? entropy[i] : 0, &hc);
    for (int src = 0; src < POOL_SIZE; src++)
        for (int dst = 0; dst < POOL_SIZE; dst++)
            if (src != dst)
                pool[dst] = mix(pool[dst], hashmix(pool[src], &hc));
    for (int src = POOL_SIZE; src < n; src++)
        for (int dst = 0; dst < POOL_SIZE; dst++)
            pool[dst] = mix(pool[dst], hashmix(entropy[src], &hc));
    uint32_t hb = INIT_B;
    for (int i = 0; i < nwords; i++) {
        uint32_t v = pool[i % POOL_SIZE];
        v ^= hb;
        hb *= MULT_B;
        v *= hb;
        v ^= v >> XSHIFT;
        out[i] = v;
    }
}

/* ------------------------------------------------------------------ PCG64 */

static const u128 PCG_MULT = ((u128)2549297995355413924ull << 64) | 4865540595714422341ull;

static u128 get128(const uint64_t w[2]) { return ((u128)w[0] << 64) | w[1]; }
static void put128(uint64_t w[2], u128 v)
{
    w[0] = (uint64_t)(v >> 64);
    w[1] = (uint64_t)v;
}

static void pcg_step(dla__data_rng *r) { put128(r->state, get128(r->state) * PCG_MULT + get128(r->inc)); }

void dla__data_rng_seed_words(dla__data_rng *r, int n, const uint32_t *words)
{
    /* generate_state(4, uint64): eight 32-bit words, paired little end first. */
    uint32_t w[8];
    seed_sequence_state(n, words, 8, w);
    uint64_t s[4];
    for (int i = 0; i < 4; i++)
        s[i] = (uint64_t)w[2 * i] | (uint64_t)w[2 * i + 1] << 32;
    u128 initstate = ((u128)s[0] << 64) | s[1], initseq = ((u128)s[2] << 64) | s[3];
    put128(r->state, 0);
    put128(r->inc, (initseq << 1) | 1);
    pcg_step(r);
    put128(r->state, get128(r->state) + initstate);
    pcg_step(r);
    r->has32 = 0;
    r->buf32 = 0;
}

void dla__data_rng_seed(dla__data_rng *r, uint64_t seed)
{
    /* numpy splits an integer seed into 32-bit words, low first; 0 is [0]. */
    uint32_t words[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    dla__data_rng_seed_words(r, seed >> 32 ? 2 : 1, words);
}

uint64_t dla__data_rng_u64(dla__data_rng *r)
{
    pcg_step(r);
    uint64_t hi = r->state[0], lo = r->state[1];
    unsigned rot = (unsigned)(hi >> 58);
    uint64_t x = hi ^ lo;
    return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t dla__data_rng_u32(dla__data_rng *r)
{
    if (r->has32) {
        r->has32 = 0;
        return r->buf32;
    }
    uint64_t v = dla__data_rng_u64(r);
    r->has32 = 1;
    r->buf32 = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

double dla__data_rng_double(dla__data_rng *r)
{
    return (double)(dla__data_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

double dla__data_rng_uniform(dla__data_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * dla__data_rng_double(r);
}

/* ------------------------------------------------------- bounded integers */

static uint32_t lemire32(dla__data_rng *r, uint32_t max)
{
    const uint32_t excl = max + 1;
    uint64_t m = (uint64_t)dla__data_rng_u32(r) * excl;
    uint32_t left = (uint32_t)m;
    if (left < excl) {
        const uint32_t threshold = (UINT32_MAX - max) % excl;
        while (left < threshold) {
            m = (uint64_t)dla__data_rng_u32(r) * excl;
            left = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

static uint64_t lemire64(dla__data_rng *r, uint64_t max)
{
    const uint64_t excl = max + 1;
    u128 m = (u128)dla__data_rng_u64(r) * excl;
    uint64_t left = (uint64_t)m;
    if (left < excl) {
        const uint64_t threshold = (UINT64_MAX - max) % excl;
        while (left < threshold) {
            m = (u128)dla__data_rng_u64(r) * excl;
            left = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

uint64_t dla__data_rng_bounded(dla__data_rng *r, uint64_t max)
{
    if (max == 0)
        return 0;
    if (max < UINT32_MAX)
        return lemire32(r, (uint32_t)max);
    if (max == UINT32_MAX)
        return dla__data_rng_u32(r);
    if (max == UINT64_MAX)
        return dla__data_rng_u64(r);
    return lemire64(r, max);
}

int64_t dla__data_rng_integers(dla__data_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)dla__data_rng_bounded(r, (uint64_t)(hi - 1 - lo));
}

/* ---------------------------------------------------------------- ziggurat */

#define ZIG_N 256
static const double ZIG_R = 3.6541528853610087963519472518;
static const double ZIG_INV_R = 0.27366123732975827203338247596;
/* The area of each layer under exp(-x^2/2) for 256 layers with base r. */
static const double ZIG_V = 0.00492867323397465524494;

static uint64_t zig_k[ZIG_N];
static double zig_w[ZIG_N], zig_f[ZIG_N];
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

/* Layer i spans [0, x_i] with x_255 = r and x decreasing to the top; layer
 * 0 is the base strip, which holds the tail. k_i = 2^52 x_{i-1} / x_i is the
 * quick-accept bound, w_i = x_i / 2^52 scales a 52-bit integer, f_i =
 * exp(-x_i^2 / 2). */
static void zig_build(void)
{
    const double m = 4503599627370496.0; /* 2^52 */
    double dn = ZIG_R, tn = dn;
    double q = ZIG_V / exp(-0.5 * dn * dn);
    zig_k[0] = (uint64_t)((dn / q) * m);
    zig_k[1] = 0;
    zig_w[0] = q / m;
    zig_w[ZIG_N - 1] = dn / m;
    zig_f[0] = 1.0;
    zig_f[ZIG_N - 1] = exp(-0.5 * dn * dn);
    for (int i = ZIG_N - 2; i >= 1; i--) {
        dn = sqrt(-2.0 * log(ZIG_V / dn + exp(-0.5 * dn * dn)));
        zig_k[i + 1] = (uint64_t)((dn / tn) * m);
        tn = dn;
        zig_f[i] = exp(-0.5 * dn * dn);
        zig_w[i] = dn / m;
    }
}

double dla__data_rng_normal(dla__data_rng *r)
{
    pthread_once(&zig_once, zig_build);
    for (;;) {
        uint64_t u = dla__data_rng_u64(r);
        int idx = (int)(u & 0xff);
        u >>= 8;
        int sign = (int)(u & 1);
        uint64_t rabs = (u >> 1) & 0x000fffffffffffffull;
        double x = (double)rabs * zig_w[idx];
        if (sign)
            x = -x;
        if (rabs < zig_k[idx])
            return x;
        if (idx == 0) {
            /* The tail beyond r, by Marsaglia's exponential method. */
            for (;;) {
                double xx = -ZIG_INV_R * log1p(-dla__data_rng_double(r));
                double yy = -log1p(-dla__data_rng_double(r));
                if (yy + yy > xx * xx)
                    return (rabs >> 8) & 1 ? -(ZIG_R + xx) : ZIG_R + xx;
            }
        }
        if ((zig_f[idx - 1] - zig_f[idx]) * dla__data_rng_double(r) + zig_f[idx] <
            exp(-0.5 * x * x))
            return x;
    }
}

/* ------------------------------------------------------ choice and shuffle */

int dla__data_rng_choice(dla__data_rng *r, int n, const double *p)
{
    /* numpy: cdf = cumsum(p); cdf /= cdf[-1]; searchsorted(cdf, u, 'right'),
     * with the same sums in the same order. */
    double total = 0;
    for (int i = 0; i < n; i++)
        total += p[i];
    double u = dla__data_rng_double(r), c = 0;
    for (int k = 0; k < n - 1; k++) {
        c += p[k];
        if (u < c / total)
            return k;
    }
    return n - 1;
}

/* numpy's random_interval: the smallest all-ones mask covering max, and
 * 32-bit draws under it until one is at most max. Generator.shuffle uses it
 * (not Lemire's method), so permutations match numpy's only with it. */
static uint64_t interval(dla__data_rng *r, uint64_t max)
{
    if (max == 0)
        return 0;
    uint64_t mask = max;
    for (int s = 1; s < 64; s *= 2)
        mask |= mask >> s;
    uint64_t v;
    if (max <= UINT32_MAX)
        while ((v = dla__data_rng_u32(r) & mask) > max)
            ;
    else
        while ((v = dla__data_rng_u64(r) & mask) > max)
            ;
    return v;
}

void dla__data_rng_shuffle(dla__data_rng *r, int64_t n, int64_t *x)
{
    for (int64_t i = n - 1; i >= 1; i--) {
        int64_t j = (int64_t)interval(r, (uint64_t)i);
        int64_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

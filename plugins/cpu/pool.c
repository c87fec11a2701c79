/*
 * pool.c - max and average pooling over 1 to 3 spatial dims, forward and
 * backward, in single and double.
 *
 * Every operand is seen as five logical dims (s0 s1 s2 channels batch),
 * spatial dims past nspatial being 1, with whatever strides its view has;
 * a plane is one (channel, batch) pair.
 *
 * Forward goes parallel over the rows of y (a plane and every output index
 * but the first); 1-D windows along a strided dim with dense planes (time
 * pooling of "CBT") go over blocks of planes instead (along_planes). Backward never lets two threads add into one x element:
 * with enough planes each thread scatters whole planes; with fewer planes
 * than threads each x element gathers from the windows that cover it, rows
 * of x over the team (see DEFINE_POOL_BACKWARD). The gather equals the
 * scatter because a max index is first checked to lie in its own window.
 *
 * A max pool lets NaN win (the first one), as the max reduction does.
 * Average windows sum in double forward; backward adds in the dtype, in one
 * fixed order whichever way it runs.
 */
#include "plugins/cpu/strided.h"

#include <math.h>
#include <omp.h>

/* The kit's checked geometry: sizes, and each operand's strides in the
 * five logical dims (s0 s1 s2 channels batch). */
typedef dla_kit_pool pool_geom;

/* Range [*lo, *hi) of the input a window at output o covers along one dim. */
static inline void window_range(const pool_geom *g, int d, int64_t o, int64_t *lo, int64_t *hi)
{
    const int64_t start = o * g->stride[d] - g->pad[d];
    *lo = start > 0 ? start : 0;
    *hi = start + g->win[d] < g->in[d] ? start + g->win[d] : g->in[d];
}

/* Outputs [*lo, *hi) whose windows cover input i along one dim. */
static inline void cover_range(const pool_geom *g, int d, int64_t i, int64_t *lo, int64_t *hi)
{
    const int64_t p = i + g->pad[d], s = g->stride[d];
    /* o*s <= p and o*s + win > p, i.e. o in (p - win) / s exclusive .. p / s */
    const int64_t first = p - g->win[d] + 1 <= 0 ? 0 : (p - g->win[d] + 1 + s - 1) / s;
    const int64_t last = p / s + 1;
    *lo = first;
    *hi = last < g->out[d] ? last : g->out[d];
}

/* Element offsets of plane p (channel + channels * batch index). */
static inline int64_t plane_off(const pool_geom *g, const int64_t *strides, int64_t p)
{
    return (p % g->channels) * strides[3] + (p / g->channels) * strides[4];
}

static inline int any_zero(const int64_t *v) { return v[0] == 0 || v[1] == 0 || v[2] == 0; }

/* Spatial coordinates of a max index v (0 <= v < in[0] * in[1] * in[2],
 * which the setup keeps within int32): two 32-bit divisions, not four
 * 64-bit ones, as this runs once per output. */
static inline void decode(const pool_geom *g, int64_t v, int64_t *i0, int64_t *i1, int64_t *i2)
{
    const uint32_t u = (uint32_t)v, in0 = (uint32_t)g->in[0], in1 = (uint32_t)g->in[1];
    const uint32_t q = u / in0;
    *i0 = u - q * in0;
    *i1 = q % in1;
    *i2 = q / in1;
}

/* ---------------------------------------------------------------- forward */

#define DEFINE_POOL_FORWARD(T, sfx)                                                                \
    static void pool_forward_##sfx(const pool_geom *g, int mode, T *xm, T *ym, int32_t *im)       \
    {                                                                                              \
        const int64_t rows = g->planes * g->out[1] * g->out[2];                                    \
        /* In double: a window's elements times the outputs pass 2^63 for a                        \
         * window as large as the dims allow (it is clipped to x as it runs). */                   \
        const double work = (double)rows * (double)g->out[0] * (double)g->full;                    \
        _Pragma("omp parallel for schedule(static) if(work >= (double)DLA__CPU_PAR_MIN)")          \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const int64_t o1 = r % g->out[1], o2 = r / g->out[1] % g->out[2];                      \
            const int64_t p = r / (g->out[1] * g->out[2]);                                         \
            const T *x = xm + g->xoff + plane_off(g, g->xs, p);                                    \
            T *y = ym + g->yoff + plane_off(g, g->ys, p) + o1 * g->ys[1] + o2 * g->ys[2];          \
            int32_t *ix = im ? im + g->ioff + plane_off(g, g->is, p) + o1 * g->is[1] +             \
                                   o2 * g->is[2]                                                   \
                             : NULL;                                                               \
            int64_t lo1, hi1, lo2, hi2;                                                            \
            window_range(g, 1, o1, &lo1, &hi1);                                                    \
            window_range(g, 2, o2, &lo2, &hi2);                                                    \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                           \
                int64_t lo0, hi0;                                                                  \
                window_range(g, 0, o0, &lo0, &hi0);                                                \
                if (mode == DLA_POOL_MAX) {                                                        \
                    T best = 0;                                                                    \
                    int64_t pos = -1;                                                              \
                    for (int64_t i2 = lo2; i2 < hi2; i2++)                                         \
                        for (int64_t i1 = lo1; i1 < hi1; i1++) {                                   \
                            const T *xr = x + i2 * g->xs[2] + i1 * g->xs[1];                       \
                            for (int64_t i0 = lo0; i0 < hi0; i0++) {                               \
                                const T v = xr[i0 * g->xs[0]];                                     \
                                if (pos < 0 || v > best || (v != v && best == best)) {             \
                                    best = v;                                                      \
                                    pos = (i2 * g->in[1] + i1) * g->in[0] + i0;                    \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                    y[o0 * g->ys[0]] = best;                                                       \
                    if (ix)                                                                        \
                        ix[o0 * g->is[0]] = (int32_t)pos;                                          \
                } else {                                                                           \
                    double sum = 0;                                                                \
                    for (int64_t i2 = lo2; i2 < hi2; i2++)                                         \
                        for (int64_t i1 = lo1; i1 < hi1; i1++) {                                   \
                            const T *xr = x + i2 * g->xs[2] + i1 * g->xs[1];                       \
                            for (int64_t i0 = lo0; i0 < hi0; i0++)                                 \
                                sum += xr[i0 * g->xs[0]];                                          \
                        }                                                                          \
                    const double count =                                                           \
                        g->exclude_pad ? (double)((hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2))         \
                                       : (double)g->full;                                          \
                    y[o0 * g->ys[0]] = (T)(count > 0 ? sum / count : 0);                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_POOL_FORWARD(float, f32)
DEFINE_POOL_FORWARD(double, f64)

/* 1-D windows along dim 0 when that dim is strided and the planes are
 * dense in memory (the "T" of "CBT" sequences: channels, then batch,
 * adjacent; the steps C*B apart): the general kernel walks each output's
 * window down the strided dim alone, every element 4 KiB apart for 1024
 * planes (66 us for the 24 x 32 x 32 global max pooling over time of
 * examples/tokens). Here a block of neighbouring planes goes along each
 * window together, reading rows of memory (8 us; omp simd, as -O2 left
 * the block loops scalar at 55 us). Per output the same elements in the
 * same order under the same rule give the same maximum, index and sum.
 * Few planes stay on the general kernels (their strides are short). */
#define POOL_PLANE_CHUNK 256
#define POOL_PLANES_MIN 8

static int planes_dense(const pool_geom *g, const int64_t *s)
{
    return s[3] == 1 && (g->planes == g->channels || s[4] == g->channels);
}

static int along_planes(const pool_geom *g, int with_index)
{
    return g->planes >= POOL_PLANES_MIN && g->in[1] == 1 && g->in[2] == 1 && g->win[1] == 1 &&
           g->win[2] == 1 && g->pad[1] == 0 && g->pad[2] == 0 && g->out[1] == 1 &&
           g->out[2] == 1 && planes_dense(g, g->xs) && planes_dense(g, g->ys) &&
           (!with_index || planes_dense(g, g->is));
}

#define DEFINE_POOL_FORWARD_PLANES(T, sfx)                                                         \
    static void pool_forward_planes_##sfx(const pool_geom *g, int mode, T *xm, T *ym,             \
                                          int32_t *im)                                             \
    {                                                                                              \
        const int64_t chunks = (g->planes + POOL_PLANE_CHUNK - 1) / POOL_PLANE_CHUNK;              \
        const double work = (double)g->planes * (double)g->out[0] * (double)g->full;               \
        _Pragma("omp parallel for schedule(static) if(work >= (double)DLA__CPU_PAR_MIN)")          \
        for (int64_t c = 0; c < chunks; c++) {                                                     \
            const int64_t p0 = c * POOL_PLANE_CHUNK;                                               \
            const int64_t m =                                                                      \
                g->planes - p0 < POOL_PLANE_CHUNK ? g->planes - p0 : POOL_PLANE_CHUNK;             \
            const T *x = xm + g->xoff + p0;                                                        \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                           \
                int64_t lo0, hi0;                                                                  \
                window_range(g, 0, o0, &lo0, &hi0);                                                \
                T *y = ym + g->yoff + p0 + o0 * g->ys[0];                                          \
                if (mode == DLA_POOL_MAX) {                                                        \
                    T best[POOL_PLANE_CHUNK];                                                      \
                    int32_t pos[POOL_PLANE_CHUNK];                                                 \
                    for (int64_t k = 0; k < m; k++)                                                \
                        best[k] = lo0 < hi0 ? x[lo0 * g->xs[0] + k] : 0;                           \
                    for (int64_t k = 0; k < m; k++)                                                \
                        pos[k] = lo0 < hi0 ? (int32_t)lo0 : -1;                                    \
                    for (int64_t i0 = lo0 + 1; i0 < hi0; i0++) {                                   \
                        const T *xr = x + i0 * g->xs[0];                                           \
                        _Pragma("omp simd")                                                        \
                        for (int64_t k = 0; k < m; k++) {                                          \
                            const T v = xr[k], b = best[k];                                        \
                            const int take = (v > b) | ((v != v) & (b == b));                      \
                            best[k] = take ? v : b;                                                \
                            pos[k] = take ? (int32_t)i0 : pos[k];                                  \
                        }                                                                          \
                    }                                                                              \
                    for (int64_t k = 0; k < m; k++)                                                \
                        y[k] = best[k];                                                            \
                    if (im) {                                                                      \
                        int32_t *ix = im + g->ioff + p0 + o0 * g->is[0];                           \
                        for (int64_t k = 0; k < m; k++)                                            \
                            ix[k] = pos[k];                                                        \
                    }                                                                              \
                } else {                                                                           \
                    double sum[POOL_PLANE_CHUNK];                                                  \
                    for (int64_t k = 0; k < m; k++)                                                \
                        sum[k] = 0;                                                                \
                    for (int64_t i0 = lo0; i0 < hi0; i0++) {                                       \
                        const T *xr = x + i0 * g->xs[0];                                           \
                        _Pragma("omp simd")                                                        \
                        for (int64_t k = 0; k < m; k++)                                            \
                            sum[k] += xr[k];                                                       \
                    }                                                                              \
                    const double count = g->exclude_pad ? (double)(hi0 - lo0) : (double)g->full;   \
                    for (int64_t k = 0; k < m; k++)                                                \
                        y[k] = (T)(count > 0 ? sum[k] / count : 0);                                \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_POOL_FORWARD_PLANES(float, f32)
DEFINE_POOL_FORWARD_PLANES(double, f64)

/* Windows of 2 with stride 2 along a dense dim 0 and no padding there
 * (maxPooling 2x2 and 2x2x2, the common layers): a row of outputs takes
 * its windows' rows of x one after the other, each a loop over pairs of
 * elements that vectorizes, where the general kernel walked each output's
 * few elements alone (2.4 ms for the 16^3 x 8 x 32 volumes of
 * examples/volumes, 0.4 GB/s). The same elements in the same order per
 * output (rows of the window in column-major order, then the pair), and
 * the same rule (larger, or NaN over a number, replaces), give the same
 * maximum and index; averages add in the same order in double. */
#define POOL_PAIR_CHUNK 256

static int pairs_along_dim0(const pool_geom *g)
{
    return g->xs[0] == 1 && g->ys[0] == 1 && g->win[0] == 2 && g->stride[0] == 2 &&
           g->pad[0] == 0 && 2 * g->out[0] <= g->in[0];
}

/* One row of x for up to POOL_PAIR_CHUNK single-precision max windows
 * (the pairs kernel's f32 inner loops) in AVX-512: sixteen windows a
 * vector, their pairs split by two permutes, the selects by masks. The
 * rows of the 16^3 volumes hold 8 windows, fewer than the compiler's vector
 * loops take, so those loops ran scalar. The rule and order are the scalar
 * loops' (the first element, or a larger one, or NaN over a number). */
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static void max_pairs_row_avx512(const float *xr, int32_t base,
                                                                     int64_t m, int first,
                                                                     float *best, int32_t *pos)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t k = 0; k < m; k += 16) {
        const int64_t r = m - k < 16 ? m - k : 16, need = 2 * r;
        const __mmask16 mk = (__mmask16)(r == 16 ? 0xFFFF : (1u << r) - 1);
        const __mmask16 lo = (__mmask16)(need >= 16 ? 0xFFFF : (1u << need) - 1);
        const __mmask16 hi = (__mmask16)(need > 16 ? (1u << (need - 16)) - 1 : 0);
        const __m512 v0 = _mm512_maskz_loadu_ps(lo, xr + 2 * k);
        const __m512 v1 = _mm512_maskz_loadu_ps(hi, xr + 2 * k + 16);
        const __m512 a = _mm512_permutex2var_ps(v0, even, v1);
        const __m512 b = _mm512_permutex2var_ps(v0, odd, v1);
        const __m512i ia = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * (int32_t)k), even);
        __m512 bv = a;
        __m512i bp = ia;
        if (!first) {
            bv = _mm512_maskz_loadu_ps(mk, best + k);
            bp = _mm512_maskz_loadu_epi32(mk, pos + k);
            const __mmask16 take = _mm512_cmp_ps_mask(a, bv, _CMP_GT_OQ) |
                                   (_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q) &
                                    _mm512_cmp_ps_mask(bv, bv, _CMP_ORD_Q));
            bv = _mm512_mask_blend_ps(take, bv, a);
            bp = _mm512_mask_blend_epi32(take, bp, ia);
        }
        const __mmask16 take = _mm512_cmp_ps_mask(b, bv, _CMP_GT_OQ) |
                               (_mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q) &
                                _mm512_cmp_ps_mask(bv, bv, _CMP_ORD_Q));
        bv = _mm512_mask_blend_ps(take, bv, b);
        bp = _mm512_mask_blend_epi32(take, bp, _mm512_add_epi32(ia, _mm512_set1_epi32(1)));
        _mm512_mask_storeu_ps(best + k, mk, bv);
        _mm512_mask_storeu_epi32(pos + k, mk, bp);
    }
}

/* The gradient of one row of x under n single-precision max windows of 2
 * with stride 2 that tile it: each element is 0 + dy where it is its
 * window's maximum (as the scatter into a cleared x gives, -0 included),
 * else 0; the two halves of each window interleaved by two permutes. */
__attribute__((target("avx512f"))) static void max_pairs_back_row_avx512(float *x, const float *y,
                                                                          const int32_t *ix,
                                                                          int32_t here, int64_t n)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i lo_order = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi_order = _mm512_add_epi32(lo_order, _mm512_set1_epi32(8));
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t k = 0; k < n; k += 16) {
        const int64_t r = n - k < 16 ? n - k : 16, need = 2 * r;
        const __mmask16 mk = (__mmask16)(r == 16 ? 0xFFFF : (1u << r) - 1);
        const __mmask16 lo = (__mmask16)(need >= 16 ? 0xFFFF : (1u << need) - 1);
        const __mmask16 hi = (__mmask16)(need > 16 ? (1u << (need - 16)) - 1 : 0);
        const __m512 dy = _mm512_maskz_loadu_ps(mk, y + k);
        const __m512i at = _mm512_maskz_loadu_epi32(mk, ix + k);
        const __m512i first = _mm512_add_epi32(_mm512_set1_epi32(here + 2 * (int32_t)k), even);
        const __mmask16 is_first = _mm512_cmpeq_epi32_mask(at, first);
        const __mmask16 is_second =
            _mm512_cmpeq_epi32_mask(at, _mm512_add_epi32(first, _mm512_set1_epi32(1)));
        const __m512 a = _mm512_maskz_add_ps(is_first, zero, dy);
        const __m512 b = _mm512_maskz_add_ps(is_second, zero, dy);
        _mm512_mask_storeu_ps(x + 2 * k, lo, _mm512_permutex2var_ps(a, lo_order, b));
        _mm512_mask_storeu_ps(x + 2 * k + 16, hi, _mm512_permutex2var_ps(a, hi_order, b));
    }
}

static int pool_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
#else
static void max_pairs_back_row_avx512(float *x, const float *y, const int32_t *ix, int32_t here,
                                      int64_t n)
{
    (void)x, (void)y, (void)ix, (void)here, (void)n;
}
static void max_pairs_row_avx512(const float *xr, int32_t base, int64_t m, int first, float *best,
                                 int32_t *pos)
{
    (void)xr, (void)base, (void)m, (void)first, (void)best, (void)pos;
}
static int pool_avx512(void) { return 0; }
#endif

#define DEFINE_POOL_FORWARD_PAIRS(T, sfx)                                                          \
    static void pool_forward_pairs_##sfx(const pool_geom *g, int mode, T *xm, T *ym,              \
                                         int32_t *im)                                              \
    {                                                                                              \
        const int64_t rows = g->planes * g->out[1] * g->out[2];                                    \
        const double work = (double)rows * (double)g->out[0] * (double)g->full;                    \
        const int wide = sizeof(T) == sizeof(float) && mode == DLA_POOL_MAX && pool_avx512();      \
        _Pragma("omp parallel for schedule(static) if(work >= (double)DLA__CPU_PAR_MIN)")          \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const int64_t o1 = r % g->out[1], o2 = r / g->out[1] % g->out[2];                      \
            const int64_t p = r / (g->out[1] * g->out[2]);                                         \
            const T *x = xm + g->xoff + plane_off(g, g->xs, p);                                    \
            T *y = ym + g->yoff + plane_off(g, g->ys, p) + o1 * g->ys[1] + o2 * g->ys[2];          \
            int32_t *ix = im ? im + g->ioff + plane_off(g, g->is, p) + o1 * g->is[1] +             \
                                   o2 * g->is[2]                                                   \
                             : NULL;                                                               \
            int64_t lo1, hi1, lo2, hi2;                                                            \
            window_range(g, 1, o1, &lo1, &hi1);                                                    \
            window_range(g, 2, o2, &lo2, &hi2);                                                    \
            const int64_t n = g->out[0];                                                           \
            for (int64_t c0 = 0; c0 < n; c0 += POOL_PAIR_CHUNK) {                                  \
                const int64_t m = n - c0 < POOL_PAIR_CHUNK ? n - c0 : POOL_PAIR_CHUNK;             \
                T best[POOL_PAIR_CHUNK];                                                           \
                int32_t pos[POOL_PAIR_CHUNK];                                                      \
                double sum[POOL_PAIR_CHUNK];                                                       \
                int first = 1;                                                                     \
                for (int64_t i2 = lo2; i2 < hi2; i2++)                                             \
                    for (int64_t i1 = lo1; i1 < hi1; i1++) {                                       \
                        const T *xr = x + i2 * g->xs[2] + i1 * g->xs[1] + 2 * c0;                  \
                        const int32_t base = (int32_t)((i2 * g->in[1] + i1) * g->in[0] + 2 * c0);  \
                        if (wide) {                                                                \
                            max_pairs_row_avx512((const float *)(const void *)xr, base, m, first,  \
                                                 (float *)(void *)best, pos);                      \
                        } else if (mode != DLA_POOL_MAX) {                                         \
                            if (first)                                                             \
                                for (int64_t k = 0; k < m; k++)                                    \
                                    sum[k] = (double)xr[2 * k] + (double)xr[2 * k + 1];            \
                            else                                                                   \
                                for (int64_t k = 0; k < m; k++)                                    \
                                    sum[k] = sum[k] + (double)xr[2 * k] + (double)xr[2 * k + 1];   \
                        } else if (first) {                                                        \
                            for (int64_t k = 0; k < m; k++) {                                      \
                                const T a = xr[2 * k], b = xr[2 * k + 1];                          \
                                const int take = (b > a) | ((b != b) & (a == a));                  \
                                best[k] = take ? b : a;                                            \
                                pos[k] = base + 2 * (int32_t)k + take;                             \
                            }                                                                      \
                        } else {                                                                   \
                            for (int64_t k = 0; k < m; k++) {                                      \
                                const T a = xr[2 * k], b = xr[2 * k + 1];                          \
                                T v = best[k];                                                     \
                                int32_t q = pos[k];                                                \
                                int take = (a > v) | ((a != a) & (v == v));                        \
                                v = take ? a : v;                                                  \
                                q = take ? base + 2 * (int32_t)k : q;                              \
                                take = (b > v) | ((b != b) & (v == v));                            \
                                best[k] = take ? b : v;                                            \
                                pos[k] = take ? base + 2 * (int32_t)k + 1 : q;                     \
                            }                                                                      \
                        }                                                                          \
                        first = 0;                                                                 \
                    }                                                                              \
                if (mode == DLA_POOL_MAX) {                                                        \
                    for (int64_t k = 0; k < m; k++)                                                \
                        y[c0 + k] = best[k];                                                       \
                    for (int64_t k = 0; ix && k < m; k++)                                          \
                        ix[(c0 + k) * g->is[0]] = pos[k];                                          \
                } else {                                                                           \
                    /* Padding along dims 1 and 2 only: dim 0's windows are whole. */              \
                    const double count = g->exclude_pad ? (double)(2 * (hi1 - lo1) * (hi2 - lo2))  \
                                                        : (double)g->full;                         \
                    for (int64_t k = 0; k < m; k++)                                                \
                        y[c0 + k] = (T)(count > 0 ? sum[k] / count : 0);                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_POOL_FORWARD_PAIRS(float, f32)
DEFINE_POOL_FORWARD_PAIRS(double, f64)

dla_status dla__cpu_pool_forward(void *dev, const dla_pool_args *args)
{
    pool_geom g;
    dla_status s = dla_kit_pool_prepare(&dla__cpu_kit, "pool_forward", args, 0, &g);
    if (s != DLA_OK)
        return s;
    if (g.planes == 0 || any_zero(g.out))
        return DLA_OK;
    int32_t *im = args->index.mem ? (int32_t *)args->index.mem : NULL;
    /* An empty window row (padding past x along dim 1 or 2) has no
     * first element to start from: the general kernel takes those. */
    const int whole = g.pad[1] < g.win[1] && g.pad[2] < g.win[2];
    if (pairs_along_dim0(&g) && whole) {
        if (args->dtype == DLA_F32)
            pool_forward_pairs_f32(&g, args->mode, (float *)args->x.mem, (float *)args->y.mem, im);
        else
            pool_forward_pairs_f64(&g, args->mode, (double *)args->x.mem, (double *)args->y.mem,
                                   im);
        return DLA_OK;
    }
    if (along_planes(&g, im != NULL)) {
        if (args->dtype == DLA_F32)
            pool_forward_planes_f32(&g, args->mode, (float *)args->x.mem, (float *)args->y.mem,
                                    im);
        else
            pool_forward_planes_f64(&g, args->mode, (double *)args->x.mem, (double *)args->y.mem,
                                    im);
        return DLA_OK;
    }
    if (args->dtype == DLA_F32)
        pool_forward_f32(&g, args->mode, (float *)args->x.mem, (float *)args->y.mem, im);
    else
        pool_forward_f64(&g, args->mode, (double *)args->x.mem, (double *)args->y.mem, im);
    return DLA_OK;
}

/* --------------------------------------------------------------- backward */

/* Checks that every index lies in its own window (which also keeps it in
 * x), so that the gathering backward adds what a scatter would. Returns
 * the flat position within y of the first bad one, or -1. */
static int64_t bad_index(const pool_geom *g, const int32_t *im)
{
    const int64_t rows = g->planes * g->out[1] * g->out[2];
    int64_t bad = INT64_MAX;
    const int64_t n = rows * g->out[0];
#pragma omp parallel for schedule(static) reduction(min : bad) if (n >= DLA__CPU_PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t o1 = r % g->out[1], o2 = r / g->out[1] % g->out[2];
        const int64_t p = r / (g->out[1] * g->out[2]);
        const int32_t *ix = im + g->ioff + plane_off(g, g->is, p) + o1 * g->is[1] + o2 * g->is[2];
        int64_t lo1, hi1, lo2, hi2;
        window_range(g, 1, o1, &lo1, &hi1);
        window_range(g, 2, o2, &lo2, &hi2);
        for (int64_t o0 = 0; o0 < g->out[0]; o0++) {
            const int64_t v = ix[o0 * g->is[0]];
            int64_t lo0, hi0, i0, i1, i2;
            window_range(g, 0, o0, &lo0, &hi0);
            decode(g, v, &i0, &i1, &i2);
            if (v < 0 || i0 < lo0 || i0 >= hi0 || i1 < lo1 || i1 >= hi1 || i2 < lo2 || i2 >= hi2) {
                const int64_t flat = r * g->out[0] + o0;
                bad = flat < bad ? flat : bad;
            }
        }
    }
    return bad == INT64_MAX ? -1 : bad;
}

/* What an average window at (o0, o1, o2) divides by. */
static inline int64_t window_count(const pool_geom *g, int64_t o0, int64_t o1, int64_t o2)
{
    if (!g->exclude_pad)
        return g->win[0] * g->win[1] * g->win[2];
    int64_t a0, b0, a1, b1, a2, b2;
    window_range(g, 0, o0, &a0, &b0);
    window_range(g, 1, o1, &a1, &b1);
    window_range(g, 2, o2, &a2, &b2);
    return (b0 - a0) * (b1 - a1) * (b2 - a2);
}

/* Two ways to one result: every x element is 0 plus the contributions of
 * the windows covering it, added in T in increasing output order (average
 * ones as dy / count in T). Planes scatters window by window into a cleared
 * plane, one plane per thread: the fast way when planes keep the team
 * busy. Rows gathers for each x element from its covering windows, with
 * rows of x over the team: the way when planes are fewer than threads.
 * Equal order and rounding keep the result independent of the way. */
#define DEFINE_POOL_BACKWARD(T, sfx)                                                               \
    static void pool_backward_planes_##sfx(const pool_geom *g, int mode, T *xm, const T *ym,      \
                                           const int32_t *im, int threads)                         \
    {                                                                                              \
        _Pragma("omp parallel for schedule(static) num_threads(threads)")                          \
        for (int64_t p = 0; p < g->planes; p++) {                                                  \
            T *x = xm + g->xoff + plane_off(g, g->xs, p);                                          \
            const T *y = ym + g->yoff + plane_off(g, g->ys, p);                                    \
            const int32_t *ix = im ? im + g->ioff + plane_off(g, g->is, p) : NULL;                 \
            for (int64_t i2 = 0; i2 < g->in[2]; i2++)                                              \
                for (int64_t i1 = 0; i1 < g->in[1]; i1++) {                                        \
                    T *xr = x + i2 * g->xs[2] + i1 * g->xs[1];                                     \
                    for (int64_t i0 = 0; i0 < g->in[0]; i0++)                                      \
                        xr[i0 * g->xs[0]] = 0;                                                     \
                }                                                                                  \
            for (int64_t o2 = 0; o2 < g->out[2]; o2++)                                             \
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)                                         \
                    for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                   \
                        const T dy = y[o0 * g->ys[0] + o1 * g->ys[1] + o2 * g->ys[2]];             \
                        if (mode == DLA_POOL_MAX) {                                                \
                            const int64_t v = ix[o0 * g->is[0] + o1 * g->is[1] + o2 * g->is[2]];   \
                            if (g->x_spatial_dense) {                                              \
                                x[v * g->xs[0]] += dy;                                             \
                                continue;                                                          \
                            }                                                                      \
                            int64_t i0, i1, i2;                                                    \
                            decode(g, v, &i0, &i1, &i2);                                           \
                            x[i0 * g->xs[0] + i1 * g->xs[1] + i2 * g->xs[2]] += dy;                \
                            continue;                                                              \
                        }                                                                          \
                        const T share = dy / (T)window_count(g, o0, o1, o2);                       \
                        int64_t lo0, hi0, lo1, hi1, lo2, hi2;                                      \
                        window_range(g, 0, o0, &lo0, &hi0);                                        \
                        window_range(g, 1, o1, &lo1, &hi1);                                        \
                        window_range(g, 2, o2, &lo2, &hi2);                                        \
                        for (int64_t i2 = lo2; i2 < hi2; i2++)                                     \
                            for (int64_t i1 = lo1; i1 < hi1; i1++) {                               \
                                T *xr = x + i2 * g->xs[2] + i1 * g->xs[1];                         \
                                for (int64_t i0 = lo0; i0 < hi0; i0++)                             \
                                    xr[i0 * g->xs[0]] += share;                                    \
                            }                                                                      \
                    }                                                                              \
        }                                                                                          \
    }                                                                                              \
    static void pool_backward_rows_##sfx(const pool_geom *g, int mode, T *xm, const T *ym,        \
                                         const int32_t *im, int threads)                           \
    {                                                                                              \
        const int64_t rows = g->planes * g->in[1] * g->in[2];                                      \
        _Pragma("omp parallel for schedule(static) num_threads(threads)")                          \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const int64_t i1 = r % g->in[1], i2 = r / g->in[1] % g->in[2];                         \
            const int64_t p = r / (g->in[1] * g->in[2]);                                           \
            T *x = xm + g->xoff + plane_off(g, g->xs, p) + i1 * g->xs[1] + i2 * g->xs[2];          \
            const T *y = ym + g->yoff + plane_off(g, g->ys, p);                                    \
            const int32_t *ix = im ? im + g->ioff + plane_off(g, g->is, p) : NULL;                 \
            int64_t lo1, hi1, lo2, hi2;                                                            \
            cover_range(g, 1, i1, &lo1, &hi1);                                                     \
            cover_range(g, 2, i2, &lo2, &hi2);                                                     \
            for (int64_t i0 = 0; i0 < g->in[0]; i0++) {                                            \
                int64_t lo0, hi0;                                                                  \
                cover_range(g, 0, i0, &lo0, &hi0);                                                 \
                const int64_t here = (i2 * g->in[1] + i1) * g->in[0] + i0;                         \
                T sum = 0;                                                                         \
                for (int64_t o2 = lo2; o2 < hi2; o2++)                                             \
                    for (int64_t o1 = lo1; o1 < hi1; o1++)                                         \
                        for (int64_t o0 = lo0; o0 < hi0; o0++) {                                   \
                            const T dy = y[o0 * g->ys[0] + o1 * g->ys[1] + o2 * g->ys[2]];         \
                            if (mode == DLA_POOL_MAX) {                                            \
                                if (ix[o0 * g->is[0] + o1 * g->is[1] + o2 * g->is[2]] == here)     \
                                    sum += dy;                                                     \
                            } else {                                                               \
                                sum += dy / (T)window_count(g, o0, o1, o2);                        \
                            }                                                                      \
                        }                                                                          \
                x[i0 * g->xs[0]] = sum;                                                            \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_POOL_BACKWARD(float, f32)
DEFINE_POOL_BACKWARD(double, f64)

/* The backward of along_planes's windows: a block of neighbouring planes
 * clears its rows of x and adds each output's gradient, outputs in
 * increasing order, as the planes' way does element by element (the same
 * sums in the same order: the same bits). */
#define DEFINE_POOL_BACKWARD_PLANES(T, sfx)                                                        \
    static void pool_backward_along_##sfx(const pool_geom *g, int mode, T *xm, const T *ym,       \
                                          const int32_t *im, int threads)                          \
    {                                                                                              \
        const int64_t chunks = (g->planes + POOL_PLANE_CHUNK - 1) / POOL_PLANE_CHUNK;              \
        _Pragma("omp parallel for schedule(static) num_threads(threads)")                          \
        for (int64_t c = 0; c < chunks; c++) {                                                     \
            const int64_t p0 = c * POOL_PLANE_CHUNK;                                               \
            const int64_t m =                                                                      \
                g->planes - p0 < POOL_PLANE_CHUNK ? g->planes - p0 : POOL_PLANE_CHUNK;             \
            T *x = xm + g->xoff + p0;                                                              \
            for (int64_t i0 = 0; i0 < g->in[0]; i0++)                                              \
                for (int64_t k = 0; k < m; k++)                                                    \
                    x[i0 * g->xs[0] + k] = 0;                                                      \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                           \
                const T *y = ym + g->yoff + p0 + o0 * g->ys[0];                                    \
                if (mode == DLA_POOL_MAX) {                                                        \
                    const int32_t *ix = im + g->ioff + p0 + o0 * g->is[0];                         \
                    for (int64_t k = 0; k < m; k++)                                                \
                        x[ix[k] * g->xs[0] + k] += y[k];                                           \
                    continue;                                                                      \
                }                                                                                  \
                int64_t lo0, hi0;                                                                  \
                window_range(g, 0, o0, &lo0, &hi0);                                                \
                const T count = (T)window_count(g, o0, 0, 0);                                      \
                for (int64_t i0 = lo0; i0 < hi0; i0++)                                             \
                    for (int64_t k = 0; k < m; k++)                                                \
                        x[i0 * g->xs[0] + k] += y[k] / count;                                      \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_POOL_BACKWARD_PLANES(float, f32)
DEFINE_POOL_BACKWARD_PLANES(double, f64)

/* Single-precision max windows of 2 with stride 2 along a dense dim 0 that
 * tile x (each dim: window = stride, no padding, x exactly out x window
 * long), on AVX-512: every element of x lies in one window, so its
 * gradient is written once, row by row of x over the team, where the
 * planes' way clears x and then adds element by element (1.3 ms for the
 * 16^3 x 8 x 32 volumes of examples/volumes). A scalar version of this was
 * slower than the planes' way and is not kept. */
static int tiles_x(const pool_geom *g)
{
    for (int d = 0; d < 3; d++)
        if (g->win[d] != g->stride[d] || g->pad[d] != 0 || g->in[d] != g->out[d] * g->win[d])
            return 0;
    return g->xs[0] == 1 && g->ys[0] == 1 && g->is[0] == 1 && g->win[0] == 2;
}

static void pool_backward_tiles_f32(const pool_geom *g, float *xm, const float *ym,
                                    const int32_t *im, int threads)
{
    const int64_t rows = g->planes * g->in[1] * g->in[2];
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i1 = r % g->in[1], i2 = r / g->in[1] % g->in[2];
        const int64_t p = r / (g->in[1] * g->in[2]);
        const int64_t o1 = i1 / g->win[1], o2 = i2 / g->win[2];
        max_pairs_back_row_avx512(
            xm + g->xoff + plane_off(g, g->xs, p) + i1 * g->xs[1] + i2 * g->xs[2],
            ym + g->yoff + plane_off(g, g->ys, p) + o1 * g->ys[1] + o2 * g->ys[2],
            im + g->ioff + plane_off(g, g->is, p) + o1 * g->is[1] + o2 * g->is[2],
            (int32_t)((i2 * g->in[1] + i1) * g->in[0]), g->out[0]);
    }
}

dla_status dla__cpu_pool_backward(void *dev, const dla_pool_args *args)
{
    pool_geom g;
    dla_status s = dla_kit_pool_prepare(&dla__cpu_kit, "pool_backward", args, 1, &g);
    if (s != DLA_OK)
        return s;
    if (g.planes == 0 || any_zero(g.in))
        return DLA_OK;
    const int32_t *im = args->mode == DLA_POOL_MAX ? (const int32_t *)args->index.mem : NULL;
    if (im != NULL && !any_zero(g.out)) {
        const int64_t bad = bad_index(&g, im);
        if (bad >= 0) {
            /* Read once more on one thread for the message. */
            const int64_t o0 = bad % g.out[0], r = bad / g.out[0];
            const int64_t o1 = r % g.out[1], o2 = r / g.out[1] % g.out[2];
            const int64_t p = r / (g.out[1] * g.out[2]);
            const int32_t v = im[g.ioff + plane_off(&g, g.is, p) + o0 * g.is[0] + o1 * g.is[1] +
                                 o2 * g.is[2]];
            return dla__cpu_host->error(
                DLA_ERR_INVALID_ARGUMENT,
                "cpu pool_backward: argument index: %d at output (%lld,%lld,%lld) of plane %lld "
                "lies outside that output's window of x (spatial %lldx%lldx%lld)",
                (int)v, (long long)o0 + 1, (long long)o1 + 1, (long long)o2 + 1, (long long)p + 1,
                (long long)g.in[0], (long long)g.in[1], (long long)g.in[2]);
        }
    }
    /* In double, as the forward's (the windows' elements may pass 2^63). */
    const double work = (double)g.planes * ((double)(g.in[0] * g.in[1] * g.in[2]) +
                                            (double)(g.out[0] * g.out[1] * g.out[2]) *
                                                (double)g.full);
    const int threads = work >= (double)DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    float *xf = (float *)args->x.mem;
    double *xd = (double *)args->x.mem;
    const float *yf = (const float *)args->y.mem;
    const double *yd = (const double *)args->y.mem;
    const int f32 = args->dtype == DLA_F32;
    if (f32 && im && tiles_x(&g) && pool_avx512())
        pool_backward_tiles_f32(&g, xf, yf, im, threads);
    else if (along_planes(&g, im != NULL)) {
        if (f32)
            pool_backward_along_f32(&g, args->mode, xf, yf, im, threads);
        else
            pool_backward_along_f64(&g, args->mode, xd, yd, im, threads);
    } else if (g.planes >= threads) {
        if (f32)
            pool_backward_planes_f32(&g, args->mode, xf, yf, im, threads);
        else
            pool_backward_planes_f64(&g, args->mode, xd, yd, im, threads);
    } else {
        if (f32)
            pool_backward_rows_f32(&g, args->mode, xf, yf, im, threads);
        else
            pool_backward_rows_f64(&g, args->mode, xd, yd, im, threads);
    }
    return DLA_OK;
}

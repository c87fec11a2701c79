/*
 * conv_depthwise.c - depthwise convolutions (one channel a group, one
 * filter a group: MATLAB's groupedConvolution2dLayer with NumGroups
 * "channel-wise") over one or two spatial dims, any stride, dilation and
 * padding, all three directions, float and double.
 *
 * Why a path of their own: the direct kernels take stride 1 only, and
 * im2col turns a strided depthwise layer into one GEMM per channel of 1
 * filter x 9 taps, where OpenBLAS spends its time packing: the stride-2
 * depthwise layers of `cnn_fmnist --mobile` took a third of its train step
 * that way (docs/performance.md). Here each image plane is convolved on
 * its own. conv.c sends strided depthwise calls here; with stride 1 the
 * direct kernels stay faster.
 *
 * The plane is first copied, zero-padded, into a buffer whose rows (dim
 * 0) are dealt into `stride` phases: padded row r is element r / s of
 * phase r % s. Output row i of tap k then reads padded row i s + k d,
 * which is element i + (k d) / s of phase (k d) % s: for a fixed tap the
 * rows of a column are consecutive, so every tap is one vector loop over
 * a column, whatever the stride. The backward pass of the data adds into
 * the same layout and deals it back.
 *
 * Sums: forward and backward data add the taps in a fixed order (dim 1
 * outer, dim 0 inner) with fused multiply-adds, the bias first; backward
 * filter sums each plane's products in T, and the planes in double, in
 * parts of the batch whose count depends on the shape alone
 * (dla__conv_batch_parts), added in order: the bits never depend on the
 * thread count.
 */
#include "plugins/cpu/conv_impl.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The padded, phased plane of one pass: rows 0 .. rows - 1 and columns
 * 0 .. cols - 1 of the padded input (output dims, taps, strides and
 * dilations reach no further), phase length len, element (r, c) at
 * (c * s + r % s) * len + r / s. */
typedef struct phased {
    int64_t rows, cols, s, len, elems;
} phased;

static void phased_init(phased *f, const dla_kit_conv *g)
{
    f->s = g->st[0];
    f->rows = (g->out[0] - 1) * g->st[0] + (g->fs[0] - 1) * g->dl[0] + 1;
    f->cols = (g->out[1] - 1) * g->st[1] + (g->fs[1] - 1) * g->dl[1] + 1;
    f->len = (f->rows + f->s - 1) / f->s;
    f->elems = f->cols * f->s * f->len;
}

/* The elements q in [0, len) of a phase whose element q is x's row
 * q s + x0 that fall inside x's n rows: [*qa, *qb) (empty: *qb <= *qa). */
static inline void phase_range(int64_t s, int64_t x0, int64_t n, int64_t len, int64_t *qa,
                               int64_t *qb)
{
    /* q s + x0 >= 0: q >= ceil(-x0 / s); q s + x0 < n: q < ceil((n - x0) / s). */
    int64_t a = x0 >= 0 ? 0 : (-x0 + s - 1) / s;
    int64_t b = n - x0 <= 0 ? 0 : (n - x0 + s - 1) / s;
    *qa = a < len ? a : len;
    *qb = b < len ? b : len;
    if (*qb < *qa)
        *qb = *qa;
}

/* A depthwise call this file takes: one channel and one filter a group, at
 * most two spatial dims. A third dim of one element with padding before
 * it (a stride past the padding keeps one output) reads only padding
 * there, zeros, which the planes here never see: im2col takes it. */
static int depthwise(const dla_kit_conv *g)
{
    return g->Cg == 1 && g->Fg == 1 && g->in[2] == 1 && g->out[2] == 1 && g->fs[2] == 1 &&
           g->pb[2] == 0;
}

/* The plane functions of one element type and instruction set. */
typedef struct planes {
    void (*forward)(const dla_kit_conv *g, const phased *f, const void *x, const void *w,
                    double bias, void *y, void *buf, void *col);
    void (*backward)(const dla_kit_conv *g, const phased *f, const void *dy, const void *w,
                     void *dx, void *buf, void *col);
    void (*filter)(const dla_kit_conv *g, const phased *f, const void *x, const void *dy,
                   void *buf, void *col, double *acc);
} planes;

/* The vector loops, over the few outputs of a column (14 or 7 in a
 * MobileNet's layers: fewer than a vector, so the compiler's loops, whose
 * vector part needs a whole one, ran scalar): y[i] = fma(a, x[i], y[i])
 * (axpy), y[i] = fma(x[i], z[i], y[i]) (vfma), y[i] = v (set). Each
 * element is one fused multiply-add, correctly rounded, in every version,
 * so they all give the same bits. */
#define SCALAR_PRIMS(T, SFX, FMA)                                                                  \
    static inline void axpy_##SFX(int64_t n, T a, const T *x, T *y)                               \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = FMA(a, x[i], y[i]);                                                             \
    }                                                                                              \
    static inline void vfma_##SFX(int64_t n, const T *x, const T *z, T *y)                        \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = FMA(x[i], z[i], y[i]);                                                          \
    }                                                                                              \
    static inline void set_##SFX(int64_t n, T v, T *y)                                            \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = v;                                                                              \
    }                                                                                              \
    static inline void every2_##SFX(int64_t n, const T *x, T *y)                                  \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = x[2 * i];                                                                       \
    }
SCALAR_PRIMS(float, f32, fmaf)
SCALAR_PRIMS(double, f64, fma)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))

/* AVX-512: whole vectors, then the rest under a mask. */
#define AVX512_PRIMS(T, SFX, VT, W, MT, SUF)                                                       \
    AVX512 static inline void axpy_##SFX(int64_t n, T a, const T *x, T *y)                        \
    {                                                                                              \
        const VT va = _mm512_set1_##SUF(a);                                                        \
        int64_t i = 0;                                                                             \
        for (; i + W <= n; i += W)                                                                 \
            _mm512_storeu_##SUF(y + i, _mm512_fmadd_##SUF(va, _mm512_loadu_##SUF(x + i),          \
                                                          _mm512_loadu_##SUF(y + i)));             \
        if (i < n) {                                                                               \
            const MT m = (MT)((1u << (n - i)) - 1);                                                \
            _mm512_mask_storeu_##SUF(y + i, m,                                                     \
                                     _mm512_fmadd_##SUF(va, _mm512_maskz_loadu_##SUF(m, x + i),    \
                                                        _mm512_maskz_loadu_##SUF(m, y + i)));      \
        }                                                                                          \
    }                                                                                              \
    AVX512 static inline void vfma_##SFX(int64_t n, const T *x, const T *z, T *y)                 \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        for (; i + W <= n; i += W)                                                                 \
            _mm512_storeu_##SUF(y + i, _mm512_fmadd_##SUF(_mm512_loadu_##SUF(x + i),               \
                                                          _mm512_loadu_##SUF(z + i),               \
                                                          _mm512_loadu_##SUF(y + i)));             \
        if (i < n) {                                                                               \
            const MT m = (MT)((1u << (n - i)) - 1);                                                \
            _mm512_mask_storeu_##SUF(y + i, m,                                                     \
                                     _mm512_fmadd_##SUF(_mm512_maskz_loadu_##SUF(m, x + i),        \
                                                        _mm512_maskz_loadu_##SUF(m, z + i),        \
                                                        _mm512_maskz_loadu_##SUF(m, y + i)));      \
        }                                                                                          \
    }                                                                                              \
    AVX512 static inline void set_##SFX(int64_t n, T v, T *y)                                     \
    {                                                                                              \
        const VT vv = _mm512_set1_##SUF(v);                                                        \
        int64_t i = 0;                                                                             \
        for (; i + W <= n; i += W)                                                                 \
            _mm512_storeu_##SUF(y + i, vv);                                                        \
        if (i < n)                                                                                 \
            _mm512_mask_storeu_##SUF(y + i, (MT)((1u << (n - i)) - 1), vv);                        \
    }
AVX512_PRIMS(float, f32_avx512, __m512, 16, __mmask16, ps)
AVX512_PRIMS(double, f64_avx512, __m512d, 8, __mmask8, pd)

/* y[i] = x[2 i], i < n (a stride-2 layer's phases): conv.c's for floats;
 * for doubles whole vectors loaded and the even lanes picked, the last
 * vector under masks, reading up to x[2 n - 2] and no further. */
AVX512 static inline void every2_f32_avx512(int64_t n, const float *x, float *y)
{
    dla__cpu_every_other_f32(y, x, n);
}

AVX512 static inline void every2_f64_avx512(int64_t n, const double *x, double *y)
{
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(y + i, _mm512_permutex2var_pd(_mm512_loadu_pd(x + 2 * i), even,
                                                       _mm512_loadu_pd(x + 2 * i + 8)));
    const int64_t m = n - i, need = 2 * m - 1;
    if (m <= 0)
        return;
    const __mmask8 lo = (__mmask8)(need >= 8 ? 0xFF : (1u << need) - 1);
    const __mmask8 hi = (__mmask8)(need > 8 ? (1u << (need - 8)) - 1 : 0);
    _mm512_mask_storeu_pd(y + i, (__mmask8)((1u << m) - 1),
                          _mm512_permutex2var_pd(_mm512_maskz_loadu_pd(lo, x + 2 * i), even,
                                                 _mm512_maskz_loadu_pd(hi, x + 2 * i + 8)));
}

/* AVX2 with FMA: whole vectors, then the rest element by element (the
 * same fused multiply-add as the vector lanes). */
#define AVX2_PRIMS(T, SFX, VT, W, SUF, FMA)                                                        \
    AVX2 static inline void axpy_##SFX(int64_t n, T a, const T *x, T *y)                          \
    {                                                                                              \
        const VT va = _mm256_set1_##SUF(a);                                                        \
        int64_t i = 0;                                                                             \
        for (; i + W <= n; i += W)                                                                 \
            _mm256_storeu_##SUF(y + i, _mm256_fmadd_##SUF(va, _mm256_loadu_##SUF(x + i),          \
                                                          _mm256_loadu_##SUF(y + i)));             \
        for (; i < n; i++)                                                                         \
            y[i] = FMA(a, x[i], y[i]);                                                             \
    }                                                                                              \
    AVX2 static inline void vfma_##SFX(int64_t n, const T *x, const T *z, T *y)                   \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        for (; i + W <= n; i += W)                                                                 \
            _mm256_storeu_##SUF(y + i, _mm256_fmadd_##SUF(_mm256_loadu_##SUF(x + i),               \
                                                          _mm256_loadu_##SUF(z + i),               \
                                                          _mm256_loadu_##SUF(y + i)));             \
        for (; i < n; i++)                                                                         \
            y[i] = FMA(x[i], z[i], y[i]);                                                          \
    }                                                                                              \
    AVX2 static inline void set_##SFX(int64_t n, T v, T *y)                                       \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = v;                                                                              \
    }                                                                                              \
    AVX2 static inline void every2_##SFX(int64_t n, const T *x, T *y)                             \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = x[2 * i];                                                                       \
    }
AVX2_PRIMS(float, f32_avx2, __m256, 8, ps, fmaf)
AVX2_PRIMS(double, f64_avx2, __m256d, 4, pd, fma)
#endif

/* Plane (c, b) of x at base into f's layout: zeros where the padded
 * position falls outside x. */
#define DEFINE_PLANES(T, SFX, PSFX, ATTR)                                                           \
    ATTR static void load_##SFX(const dla_kit_conv *g, const phased *f, const T *base, T *buf)     \
    {                                                                                              \
        for (int64_t c = 0; c < f->cols; c++) {                                                    \
            const int64_t i1 = c - g->pb[1];                                                       \
            T *dst = buf + c * f->s * f->len;                                                      \
            if (i1 < 0 || i1 >= g->in[1]) {                                                        \
                memset(dst, 0, (size_t)(f->s * f->len) * sizeof(T));                               \
                continue;                                                                          \
            }                                                                                      \
            const T *col = base + i1 * g->xs[1];                                                   \
            /* Phase p's element q is padded row q s + p, x's row q s + p - pb:  \
             * inside x for q in [qa, qb). */                                     \
            for (int64_t ph = 0; ph < f->s; ph++, dst += f->len) {                                 \
                int64_t qa, qb;                                                                    \
                phase_range(f->s, ph - g->pb[0], g->in[0], f->len, &qa, &qb);                      \
                const int64_t step = f->s * g->xs[0];                                              \
                const T *from = col + (qa * f->s + ph - g->pb[0]) * g->xs[0];                      \
                for (int64_t q = 0; q < qa; q++)                                                   \
                    dst[q] = 0;                                                                    \
                if (step == 1)                                                                     \
                    memcpy(dst + qa, from, (size_t)(qb - qa) * sizeof(T));                         \
                else if (step == 2)                                                                \
                    every2_##PSFX(qb - qa, from, dst + qa);                                        \
                else                                                                               \
                    for (int64_t q = qa; q < qb; q++, from += step)                                \
                        dst[q] = *from;                                                            \
                for (int64_t q = qb; q < f->len; q++)                                              \
                    dst[q] = 0;                                                                    \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* One output plane: y(o0, o1) = bias + the taps' w x, tap by tap (dim 1 \
     * outer), each tap over every column before the next: a column's sums   \
     * are not read back right after their masked store (a stall of a        \
     * masked store forwarding to the next load), and each output's sum still \
     * adds its taps in order. acc: the plane, column stride lc. */           \
    ATTR static void forward_##SFX(const dla_kit_conv *g, const phased *f, const void *xv,         \
                                   const void *wv, double bias, void *yv, void *bufv, void *accv)  \
    {                                                                                              \
        const T *w = wv;                                                                           \
        T *y = yv, *buf = bufv, *acc = accv;                                                       \
        load_##SFX(g, f, xv, buf);                                                                 \
        const int64_t ho = g->out[0], wo = g->out[1], lc = DLA__CONV_LINE(ho, sizeof(T));          \
        for (int64_t j = 0; j < wo; j++)                                                           \
            set_##PSFX(ho, (T)bias, acc + j * lc);                                                 \
        for (int64_t k1 = 0; k1 < g->fs[1]; k1++)                                                  \
            for (int64_t k0 = 0; k0 < g->fs[0]; k0++) {                                            \
                const int64_t o = k0 * g->dl[0];                                                   \
                const T t = w[k0 * g->ws[0] + k1 * g->ws[1]];                                      \
                const T *src = buf + (o % f->s) * f->len + o / f->s;                               \
                for (int64_t j = 0; j < wo; j++)                                                   \
                    axpy_##PSFX(ho, t, src + (j * g->st[1] + k1 * g->dl[1]) * f->s * f->len,       \
                                acc + j * lc);                                                     \
            }                                                                                      \
        for (int64_t j = 0; j < wo; j++) {                                                         \
            T *ycol = y + j * g->ys[1];                                                            \
            if (g->ys[0] == 1)                                                                     \
                memcpy(ycol, acc + j * lc, (size_t)ho * sizeof(T));                                \
            else                                                                                   \
                for (int64_t i = 0; i < ho; i++)                                                   \
                    ycol[i * g->ys[0]] = acc[j * lc + i];                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* One plane of dX from dY: each output's gradient times each tap added   \
     * where the forward pass read it (tap by tap, every column in turn, as   \
     * forward), then dealt back into dX (zero where no window reads). dyp:   \
     * dY's plane gathered, column stride lc. */                              \
    ATTR static void backward_##SFX(const dla_kit_conv *g, const phased *f, const void *dyv,       \
                                    const void *wv, void *dxv, void *bufv, void *dypv)             \
    {                                                                                              \
        const T *dy = dyv, *w = wv;                                                                \
        T *dx = dxv, *buf = bufv, *dyp = dypv;                                                     \
        const int64_t ho = g->out[0], wo = g->out[1], lc = DLA__CONV_LINE(ho, sizeof(T));          \
        memset(buf, 0, (size_t)f->elems * sizeof(T));                                              \
        for (int64_t j = 0; j < wo; j++) {                                                         \
            const T *dcol = dy + j * g->ys[1];                                                     \
            if (g->ys[0] == 1)                                                                     \
                memcpy(dyp + j * lc, dcol, (size_t)ho * sizeof(T));                                \
            else                                                                                   \
                for (int64_t i = 0; i < ho; i++)                                                   \
                    dyp[j * lc + i] = dcol[i * g->ys[0]];                                          \
        }                                                                                          \
        for (int64_t k1 = 0; k1 < g->fs[1]; k1++)                                                  \
            for (int64_t k0 = 0; k0 < g->fs[0]; k0++) {                                            \
                const int64_t o = k0 * g->dl[0];                                                   \
                const T t = w[k0 * g->ws[0] + k1 * g->ws[1]];                                      \
                T *dst = buf + (o % f->s) * f->len + o / f->s;                                     \
                for (int64_t j = 0; j < wo; j++)                                                   \
                    axpy_##PSFX(ho, t, dyp + j * lc,                                               \
                                dst + (j * g->st[1] + k1 * g->dl[1]) * f->s * f->len);             \
            }                                                                                      \
        for (int64_t i1 = 0; i1 < g->in[1]; i1++) {                                                \
            const int64_t c = i1 + g->pb[1];                                                       \
            T *xcol = dx + i1 * g->xs[1];                                                          \
            for (int64_t i0 = 0; i0 < g->in[0]; i0++)                                              \
                xcol[i0 * g->xs[0]] = 0;                                                           \
            if (c < 0 || c >= f->cols)                                                             \
                continue;                                                                          \
            /* Phase p's element q is padded row q s + p, dX's row q s + p - pb: \
             * inside dX, and a row some window reads, for q in [qa, qb). */      \
            const T *src = buf + c * f->s * f->len;                                                \
            for (int64_t ph = 0; ph < f->s; ph++, src += f->len) {                                 \
                int64_t qa, qb;                                                                    \
                phase_range(f->s, ph - g->pb[0], g->in[0], (f->rows - ph + f->s - 1) / f->s, &qa,  \
                            &qb);                                                                  \
                const int64_t step = f->s * g->xs[0];                                              \
                T *to = xcol + (qa * f->s + ph - g->pb[0]) * g->xs[0];                             \
                for (int64_t q = qa; q < qb; q++, to += step)                                      \
                    *to = src[q];                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* acc[k0 + k1 fs0] += the plane's sum over outputs of dY x the padded x  \
     * it read: lane i of tap t's sums (sums + t lc) adds each column's       \
     * product in turn, columns outer and taps inner (no sums read back right \
     * after their store), then a tap's lanes are added in order, in T, and   \
     * the plane's sum goes to acc in double. dyp: dY's plane gathered. */    \
    ATTR static void filter_##SFX(const dla_kit_conv *g, const phased *f, const void *xv,          \
                                  const void *dyv, void *bufv, void *dypv, double *acc)            \
    {                                                                                              \
        const T *dy = dyv;                                                                         \
        T *buf = bufv, *dyp = dypv;                                                                \
        const int64_t ho = g->out[0], wo = g->out[1], lc = DLA__CONV_LINE(ho, sizeof(T));          \
        const int64_t nt = g->fs[0] * g->fs[1];                                                    \
        T *sums = dyp + wo * lc;                                                                   \
        load_##SFX(g, f, xv, buf);                                                                 \
        for (int64_t t = 0; t < nt; t++)                                                           \
            set_##PSFX(ho, (T)0, sums + t * lc);                                                   \
        for (int64_t j = 0; j < wo; j++) {                                                         \
            const T *d = dy + j * g->ys[1];                                                        \
            if (g->ys[0] != 1) {                                                                   \
                for (int64_t i = 0; i < ho; i++)                                                   \
                    dyp[i] = d[i * g->ys[0]];                                                      \
                d = dyp;                                                                           \
            }                                                                                      \
            for (int64_t k1 = 0; k1 < g->fs[1]; k1++) {                                            \
                const T *colx = buf + (j * g->st[1] + k1 * g->dl[1]) * f->s * f->len;              \
                for (int64_t k0 = 0; k0 < g->fs[0]; k0++) {                                        \
                    const int64_t o = k0 * g->dl[0];                                               \
                    vfma_##PSFX(ho, d, colx + (o % f->s) * f->len + o / f->s,                      \
                                sums + (k0 + k1 * g->fs[0]) * lc);                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (int64_t t = 0; t < nt; t++) {                                                         \
            T s = 0;                                                                               \
            for (int64_t i = 0; i < ho; i++)                                                       \
                s += sums[t * lc + i];                                                             \
            acc[t] += (double)s;                                                                   \
        }                                                                                          \
    }                                                                                              \
    static const planes planes_##SFX = {forward_##SFX, backward_##SFX, filter_##SFX};

DEFINE_PLANES(float, f32, f32, )
DEFINE_PLANES(double, f64, f64, )
#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_PLANES(float, f32_avx512, f32_avx512, AVX512)
DEFINE_PLANES(double, f64_avx512, f64_avx512, AVX512)
DEFINE_PLANES(float, f32_avx2, f32_avx2, AVX2)
DEFINE_PLANES(double, f64_avx2, f64_avx2, AVX2)
#endif

/* The plane functions for p's dtype and this CPU. */
static const planes *planes_for(const dla__cpu_conv *p)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return p->dtype == DLA_F64 ? &planes_f64_avx512 : &planes_f32_avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return p->dtype == DLA_F64 ? &planes_f64_avx2 : &planes_f32_avx2;
#endif
    return p->dtype == DLA_F64 ? &planes_f64 : &planes_f32;
}

/* dW: part of the batch x channel a task, each its own accumulators,
 * added part by part in order at the end. */
static dla_status backward_filter(const dla__cpu_conv *p, const planes *pl, const phased *f,
                                  int team, int64_t per, size_t size)
{
    const dla_kit_conv *g = &p->g;
    const int64_t C = g->C, nt = g->fs[0] * g->fs[1];
    const int parts = dla__conv_batch_parts(g->batch, C * nt * (int64_t)sizeof(double));
    const int64_t tasks = (int64_t)parts * C;
    dla_mem sm;
    char *s = dla__cpu_conv_scratch((size_t)team * (size_t)per * size +
                                        (size_t)(tasks * nt) * sizeof(double),
                                    &sm);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    double *acc = (double *)(s + (size_t)team * (size_t)per * size);
    memset(acc, 0, (size_t)(tasks * nt) * sizeof(double));
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; t++) {
        char *buf = s + (size_t)omp_get_thread_num() * (size_t)per * size;
        char *col = buf + (size_t)DLA__CONV_LINE(f->elems, size) * size;
        const int part = (int)(t / C);
        const int64_t c = t % C;
        const int64_t b0 = g->batch * part / parts, b1 = g->batch * (part + 1) / parts;
        for (int64_t b = b0; b < b1; b++)
            pl->filter(g, f, p->x + (size_t)(c * g->xc + b * g->xb) * size,
                       p->y + (size_t)(c * g->yf + b * g->yb) * size, buf, col, acc + t * nt);
    }
    for (int64_t c = 0; c < C; c++)
        for (int64_t k = 0; k < nt; k++) {
            double sum = 0;
            for (int part = 0; part < parts; part++)
                sum += acc[((int64_t)part * C + c) * nt + k];
            const int64_t at = (k % g->fs[0]) * g->ws[0] + (k / g->fs[0]) * g->ws[1] + c * g->wg;
            if (p->dtype == DLA_F64)
                ((double *)p->w)[at] = sum;
            else
                ((float *)p->w)[at] = (float)sum;
        }
    dla__cpu_conv_scratch_free(sm);
    dla__cpu_team_used();
    return DLA_OK;
}

/* Forward or backward data: whole images a task, so that each is its
 * epilogue's as soon as written, on the thread that wrote it. */
static dla_status pass(const dla__cpu_conv *p, dla__cpu_conv_dir dir, const planes *pl,
                       const phased *f, int team, int64_t per, size_t size)
{
    const dla_kit_conv *g = &p->g;
    dla_mem sm;
    char *s = dla__cpu_conv_scratch((size_t)team * (size_t)per * size, &sm);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
    for (int64_t b = 0; b < g->batch; b++) {
        char *buf = s + (size_t)omp_get_thread_num() * (size_t)per * size;
        char *col = buf + (size_t)DLA__CONV_LINE(f->elems, size) * size;
        for (int64_t c = 0; c < g->C; c++) {
            const char *w = p->w + (size_t)(c * g->wg) * size;
            char *x = p->x + (size_t)(c * g->xc + b * g->xb) * size;
            char *y = p->y + (size_t)(c * g->yf + b * g->yb) * size;
            if (dir == DLA__CONV_FORWARD) {
                double bias = 0;
                if (p->bias)
                    bias = p->dtype == DLA_F64 ? ((const double *)p->bias)[c * g->bs]
                                               : (double)((const float *)p->bias)[c * g->bs];
                pl->forward(g, f, x, w, bias, y, buf, col);
            } else {
                pl->backward(g, f, y, w, x, buf, col);
            }
        }
        dla__cpu_conv_epilogue(p->epi, b, 1);
    }
    dla__cpu_conv_scratch_free(sm);
    dla__cpu_team_used();
    return DLA_OK;
}

/* Strided ones only: with stride 1 the direct kernels (conv_direct_body.h)
 * were faster on the 256x256 planes of conv3 of dlaccel-bench (41-45 ms
 * against 60-80 in single). */
int dla__cpu_conv_depthwise_takes(const dla__cpu_conv *p)
{
    /* Empty outputs or batches (zero gradients) stay with im2col, whose
     * zeroing handles them. */
    const dla_kit_conv *g = &p->g;
    return depthwise(g) && (g->st[0] > 1 || g->st[1] > 1) && g->out[0] > 0 && g->out[1] > 0 &&
           g->batch > 0 && dla__cpu_conv_env() < 0;
}

dla_status dla__cpu_conv_depthwise(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    phased f;
    phased_init(&f, &p->g);
    const size_t size = p->dtype == DLA_F64 ? sizeof(double) : sizeof(float);
    const int team = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    /* A thread's padded plane, then a plane of outputs (forward), of dY
     * (backward) or one column of dY and a column of sums a tap (filter). */
    const int64_t lc = DLA__CONV_LINE(p->g.out[0], size);
    const int64_t per = DLA__CONV_LINE(f.elems, size) +
                        (p->g.out[1] + p->g.fs[0] * p->g.fs[1]) * lc;
    const planes *pl = planes_for(p);
    return dir == DLA__CONV_BACKWARD_FILTER ? backward_filter(p, pl, &f, team, per, size)
                                            : pass(p, dir, pl, &f, team, per, size);
}

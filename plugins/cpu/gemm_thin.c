/*
 * gemm_thin.c - single-precision GEMM where one of m and k is at most 16:
 * a fully connected layer's three products (10 outputs by 11520 inputs by
 * a batch of 128 in the digit CNN), which OpenBLAS runs at a tenth to a
 * quarter of the machine's peak (BASELINE.md: 12-27%) because its kernels
 * block for square-ish shapes.
 *
 * Such a product is bound by reading the large operand once, so each
 * kernel streams it once and keeps the thin one in registers or L1:
 * - m <= 16: op(A)'s columns are packed as 16-float vectors (zeros past
 *   m). With op(B) column-major (trans_b 0), each vector of A meets one
 *   broadcast element of 8 columns of B at a time; with op(B) transposed,
 *   16 columns of C are one vector of B's row times a broadcast of A, and
 *   the m x 16 tile is transposed on its way to C.
 * - k <= 16: op(A) as an m x k column-major block (packed when A is
 *   transposed), 16 rows of C at a time against broadcasts of op(B)'s
 *   column.
 * Sums are single-precision like OpenBLAS's. Built for AVX-512 only (the
 * caller checks the CPU once); other CPUs stay with OpenBLAS.
 */
#include "plugins/cpu/cpu.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>
#include <omp.h>

#define TGT __attribute__((target("avx512f")))
#define THIN 16
/* Products of fewer multiply-adds are too small for the packing to pay:
 * they stay with OpenBLAS. */
#define THIN_MIN ((int64_t)1 << 15)
/* Rows of C a thread takes at once in the small-k kernel. */
#define ROWS_CHUNK 256

/* C element (i, j) = alpha * v + beta * C, C not read when beta is 0. */
static inline void put(float *c, float v, float alpha, float beta)
{
    *c = beta == 0.0f ? alpha * v : alpha * v + beta * *c;
}

/* ------------------------------------------------------------ m <= 16 */

/* op(A) as k vectors of 16 floats (rows past m zero). */
static void pack_a_rows(const dla_gemm_args *g, const float *a, float *ap)
{
    for (int64_t l = 0; l < g->k; l++)
        for (int64_t r = 0; r < THIN; r++)
            ap[l * THIN + r] = r >= g->m ? 0.0f
                               : g->trans_a ? a[l + r * g->a.ld]
                                            : a[r + l * g->a.ld];
}

/* op(B) column-major: C(:, j0..j0+nc-1), nc <= 8. */
static TGT void small_m_cols(const dla_gemm_args *g, const float *ap, const float *b, float *c,
                             int64_t j0, int nc, float alpha, float beta)
{
    __m512 acc[8];
    for (int q = 0; q < 8; q++)
        acc[q] = _mm512_setzero_ps();
    const float *col[8];
    for (int q = 0; q < 8; q++)
        col[q] = b + (j0 + (q < nc ? q : 0)) * g->b.ld;
    if (nc == 8) {
        for (int64_t l = 0; l < g->k; l++) {
            const __m512 av = _mm512_load_ps(ap + l * THIN);
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++)
                acc[q] = _mm512_fmadd_ps(av, _mm512_set1_ps(col[q][l]), acc[q]);
        }
    } else {
        for (int64_t l = 0; l < g->k; l++) {
            const __m512 av = _mm512_load_ps(ap + l * THIN);
            for (int q = 0; q < nc; q++)
                acc[q] = _mm512_fmadd_ps(av, _mm512_set1_ps(col[q][l]), acc[q]);
        }
    }
    _Alignas(64) float tile[THIN];
    for (int q = 0; q < nc; q++) {
        _mm512_store_ps(tile, acc[q]);
        float *cj = c + (j0 + q) * g->c.ld;
        for (int64_t r = 0; r < g->m; r++)
            put(cj + r, tile[r], alpha, beta);
    }
}

/* op(B) transposed (B is n x k as stored): C(:, j0..j0+15) as m vectors
 * along j, all 16 columns present. */
static TGT void small_m_rows(const dla_gemm_args *g, const float *ap, const float *b, float *c,
                             int64_t j0, float alpha, float beta)
{
    __m512 acc[THIN];
    for (int r = 0; r < THIN; r++)
        acc[r] = _mm512_setzero_ps();
    const int m = (int)g->m;
    /* Unrolled to the constant 16 with the rows past m skipped, so the
     * accumulators stay in registers. */
    for (int64_t l = 0; l < g->k; l++) {
        const __m512 bv = _mm512_loadu_ps(b + j0 + l * g->b.ld);
        const float *al = ap + l * THIN;
#pragma GCC unroll 16
        for (int r = 0; r < THIN; r++)
            if (r < m)
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(al[r]), bv, acc[r]);
    }
    _Alignas(64) float tile[THIN][THIN];
#pragma GCC unroll 16
    for (int r = 0; r < THIN; r++)
        _mm512_store_ps(tile[r], acc[r]);
    for (int q = 0; q < THIN; q++) {
        float *cj = c + (j0 + q) * g->c.ld;
        for (int r = 0; r < m; r++)
            put(cj + r, tile[r][q], alpha, beta);
    }
}

/* op(B) transposed, the columns past the last whole 16: plain loops. */
static void small_m_rows_tail(const dla_gemm_args *g, const float *ap, const float *b, float *c,
                              int64_t j0, float alpha, float beta)
{
    for (int64_t j = j0; j < g->n; j++)
        for (int64_t r = 0; r < g->m; r++) {
            float s = 0.0f;
            for (int64_t l = 0; l < g->k; l++)
                s += ap[l * THIN + r] * b[j + l * g->b.ld];
            put(c + r + j * g->c.ld, s, alpha, beta);
        }
}

static dla_status small_m(const dla_gemm_args *g, const float *a, const float *b, float *c)
{
    const dla_plugin_host *h = dla__cpu_host;
    float *ap = h->alloc((size_t)g->k * THIN * sizeof(float), 64);
    if (!ap)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu gemm: %lld floats to pack A (m=%lld k=%lld)",
                        (long long)(g->k * THIN), (long long)g->m, (long long)g->k);
    pack_a_rows(g, a, ap);
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    if (!g->trans_b) {
        const int64_t blocks = (g->n + 7) / 8;
#pragma omp parallel for schedule(static)
        for (int64_t u = 0; u < blocks; u++) {
            const int64_t j0 = u * 8;
            small_m_cols(g, ap, b, c, j0, (int)(g->n - j0 < 8 ? g->n - j0 : 8), alpha, beta);
        }
    } else {
        const int64_t blocks = g->n / THIN;
#pragma omp parallel for schedule(static)
        for (int64_t u = 0; u < blocks; u++)
            small_m_rows(g, ap, b, c, u * THIN, alpha, beta);
        small_m_rows_tail(g, ap, b, c, blocks * THIN, alpha, beta);
    }
    h->free(ap);
    return DLA_OK;
}

/* ------------------------------------------------------------ k <= 16 */

/* C(i0..i0+15, j0..j0+nc-1) from the m x k block at (column-major, ld),
 * nc <= 4; a row range past m is never asked for. */
static TGT void small_k_tile(const dla_gemm_args *g, const float *at, int64_t ld, const float *b,
                             float *c, int64_t i0, int64_t j0, int nc, float alpha, float beta)
{
    __m512 acc[4];
    for (int q = 0; q < 4; q++)
        acc[q] = _mm512_setzero_ps();
    const int64_t k = g->k;
    for (int64_t l = 0; l < k; l++) {
        const __m512 av = _mm512_loadu_ps(at + i0 + l * ld);
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++)
            if (q < nc) {
                const float bl =
                    g->trans_b ? b[(j0 + q) + l * g->b.ld] : b[l + (j0 + q) * g->b.ld];
                acc[q] = _mm512_fmadd_ps(av, _mm512_set1_ps(bl), acc[q]);
            }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int q = 0; q < nc; q++) {
        float *cp = c + i0 + (j0 + q) * g->c.ld;
        __m512 v = _mm512_mul_ps(va, acc[q]);
        if (beta != 0.0f)
            v = _mm512_add_ps(v, _mm512_mul_ps(vb, _mm512_loadu_ps(cp)));
        _mm512_storeu_ps(cp, v);
    }
}

static dla_status small_k(const dla_gemm_args *g, const float *a, const float *b, float *c)
{
    const dla_plugin_host *h = dla__cpu_host;
    const float *at = a;
    int64_t ld = g->a.ld;
    float *packed = NULL;
    if (g->trans_a) { /* A is k x m as stored: make op(A) column-major */
        packed = h->alloc((size_t)(g->m * g->k) * sizeof(float), 64);
        if (!packed)
            return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu gemm: %lld floats to pack A (m=%lld "
                            "k=%lld)", (long long)(g->m * g->k), (long long)g->m,
                            (long long)g->k);
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t l = 0; l < g->k; l++)
                packed[i + l * g->m] = a[l + i * g->a.ld];
        at = packed, ld = g->m;
    }
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    const int64_t whole = g->m / THIN * THIN, chunks = (whole + ROWS_CHUNK - 1) / ROWS_CHUNK;
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < chunks; u++) {
        const int64_t i1 = (u + 1) * ROWS_CHUNK < whole ? (u + 1) * ROWS_CHUNK : whole;
        for (int64_t j0 = 0; j0 < g->n; j0 += 4)
            for (int64_t i0 = u * ROWS_CHUNK; i0 < i1; i0 += THIN)
                small_k_tile(g, at, ld, b, c, i0, j0, (int)(g->n - j0 < 4 ? g->n - j0 : 4), alpha,
                             beta);
    }
    for (int64_t j = 0; j < g->n; j++) /* the rows past the last whole 16 */
        for (int64_t i = whole; i < g->m; i++) {
            float s = 0.0f;
            for (int64_t l = 0; l < g->k; l++)
                s += at[i + l * ld] * (g->trans_b ? b[j + l * g->b.ld] : b[l + j * g->b.ld]);
            put(c + i + j * g->c.ld, s, alpha, beta);
        }
    h->free(packed);
    return DLA_OK;
}

/* ------------------------------------------------------------ dispatch */

static int have_avx512(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512f") != 0;
    }
    return known;
}

int dla__cpu_gemm_thin(const dla_gemm_args *g, dla_status *status)
{
    if (g->dtype != DLA_F32 || g->batch != 1 || g->alpha == 0.0 || g->k == 0 ||
        (g->m > THIN && g->k > THIN) || (double)g->m * (double)g->n * (double)g->k < THIN_MIN ||
        !have_avx512())
        return 0;
    const float *a = (const float *)g->a.mem + g->a.offset;
    const float *b = (const float *)g->b.mem + g->b.offset;
    float *c = (float *)g->c.mem + g->c.offset;
    *status = g->m <= THIN ? small_m(g, a, b, c) : small_k(g, a, b, c);
    return 1;
}

#else

int dla__cpu_gemm_thin(const dla_gemm_args *g, dla_status *status)
{
    (void)g, (void)status;
    return 0;
}

#endif

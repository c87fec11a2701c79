/*
 * gemm_direct.c - single-precision products whose A (not transposed) fits
 * in a core's L2, by AVX-512 micro-tiles that read A and B where they lie:
 * an LSTM's step, [W R b] (512 x 132) times [x_t; h; 1] (132 x 64), 99
 * times an inference.
 *
 * Why not OpenBLAS: Debian 12's OpenBLAS 0.3.21 on an AVX-512 machine
 * runs its Haswell (AVX2) kernels whenever OPENBLAS_CORETYPE says so (a
 * user's or a site's setting wins over dlaccel's, core/blas_defaults.c),
 * at 115 GFLOP/s a core on the Zen 5 here for that step's shape; this
 * kernel takes 250, and OpenBLAS's own SkylakeX kernels 214 (it packs A
 * and B on every call; these tiles do not pack: A's column of 48 rows is
 * three loads, B's elements are broadcasts, and an A of at most 1 MiB
 * stays in L2 between the passes over B's columns).
 *
 * Each element of C is one sum over l = 0 .. k-1 in that order, in one
 * accumulator, whatever the tile, the thread or the thread count: the
 * same bits with any OMP_NUM_THREADS (tests/test_thread_bits), and the
 * same as OpenBLAS's SkylakeX kernels give (they sum in that order too).
 * Built for AVX-512 only (the caller checks the CPU once); other CPUs and
 * other shapes stay with OpenBLAS (gemm_tiles.c) or gemm_thin.c.
 *
 * A transposed A of at most 4,096 floats (a fully connected layer's W' dY)
 * is packed once into A's layout; batches of small pages (an attention's
 * 24 x 24 x 8 heads, which OpenBLAS took 1-2 us a page to call and pack)
 * run page by page through the same tiles, shared out over the threads by
 * pages. DLACCEL_CPU_GEMM_DIRECT=off sends all of these back to OpenBLAS.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "plugins/cpu/cpu.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/env_choice.h"
#include "plugins/cpu/share.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>
#include <omp.h>

#define TGT __attribute__((target("avx512f")))
#define INLINE __attribute__((always_inline)) inline
/* Columns of C a micro-tile: 3 x 8 accumulators, 3 loads of A and 8
 * broadcasts of B a step of l (28 of the 32 registers). */
#define NR 8
/* Rows of C a micro-tile at most: three vectors of 16. */
#define MR 48
/* A of at most this many floats (1 MiB): it is read again for each 8
 * columns of C, so it must stay in a core's L2 (1 MiB on Zen 5, 1-2 MiB on
 * AVX-512 Xeons); a larger one is OpenBLAS's, which packs it. */
#define A_MAX ((int64_t)1 << 18)
/* Products of fewer multiply-adds stay with OpenBLAS (they take a few
 * microseconds either way), and of fewer than SHARE_MIN run on the calling
 * thread, as gemm_tiles.c's (OpenBLAS's single-threaded size). */
#define DIRECT_MIN ((int64_t)1 << 15)
#define SHARE_MIN 65536.0

typedef struct direct_args {
    int64_t k;
    const float *a, *b;
    int64_t lda, bl, bj; /* B(l, j) at b[l * bl + j * bj] */
    float *c;
    int64_t ldc;
    float alpha, beta;
} direct_args;

/* C(i0 .. i0 + 16 mv - 1, j0 .. j0 + nc - 1), the last of the mv vectors
 * of rows masked by last; mv and nc are constants where this is inlined
 * (nc a variable for the last columns), so the accumulators stay in
 * registers. */
static INLINE TGT void tile(const direct_args *d, int mv, __mmask16 last, int nc, int64_t i0,
                            int64_t j0)
{
    __m512 acc[3][NR];
#pragma GCC unroll 3
    for (int v = 0; v < 3; v++)
#pragma GCC unroll 8
        for (int q = 0; q < NR; q++)
            acc[v][q] = _mm512_setzero_ps();
    const float *ap = d->a + i0;
    const float *bp[NR];
#pragma GCC unroll 8
    for (int q = 0; q < NR; q++)
        bp[q] = d->b + (j0 + (q < nc ? q : 0)) * d->bj;
    for (int64_t l = 0; l < d->k; l++) {
        const float *al = ap + l * d->lda;
        __m512 av[3];
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            if (v < mv)
                av[v] = v == mv - 1 ? _mm512_maskz_loadu_ps(last, al + 16 * v)
                                    : _mm512_loadu_ps(al + 16 * v);
#pragma GCC unroll 8
        for (int q = 0; q < NR; q++)
            if (q < nc) {
                const __m512 bv = _mm512_set1_ps(bp[q][l * d->bl]);
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++)
                    if (v < mv)
                        acc[v][q] = _mm512_fmadd_ps(av[v], bv, acc[v][q]);
            }
    }
    const __m512 va = _mm512_set1_ps(d->alpha), vb = _mm512_set1_ps(d->beta);
#pragma GCC unroll 8
    for (int q = 0; q < NR; q++)
        if (q < nc) {
            float *cq = d->c + i0 + (j0 + q) * d->ldc;
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++)
                if (v < mv) {
                    const __mmask16 mk = v == mv - 1 ? last : (__mmask16)0xffff;
                    __m512 r = _mm512_mul_ps(va, acc[v][q]);
                    /* C is not read when beta is 0 (it may hold anything). */
                    if (d->beta != 0.0f)
                        r = _mm512_add_ps(r, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(mk, cq + 16 * v)));
                    _mm512_mask_storeu_ps(cq + 16 * v, mk, r);
                }
        }
}

/* Rows i0 .. i0 + rows - 1 (1 to 48) of columns j0 .. j0 + nc - 1. */
static TGT void block(const direct_args *d, int64_t rows, int nc, int64_t i0, int64_t j0)
{
    const int mv = (int)((rows + 15) / 16);
    const __mmask16 last = (__mmask16)((1u << (rows - 16 * (mv - 1))) - 1u);
    if (nc == NR) {
        if (mv == 3)
            tile(d, 3, last, NR, i0, j0);
        else if (mv == 2)
            tile(d, 2, last, NR, i0, j0);
        else
            tile(d, 1, last, NR, i0, j0);
    } else {
        if (mv == 3)
            tile(d, 3, last, nc, i0, j0);
        else if (mv == 2)
            tile(d, 2, last, nc, i0, j0);
        else
            tile(d, 1, last, nc, i0, j0);
    }
}

/* Rows r0 .. r1 - 1 of C's columns c0 .. c1 - 1: for each 8 columns (B's
 * in L1), the rows 48 at a time (A's from L2). */
static void part_of(const direct_args *d, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    for (int64_t j0 = c0; j0 < c1; j0 += NR) {
        const int nc = (int)(c1 - j0 < NR ? c1 - j0 : NR);
        for (int64_t i0 = r0; i0 < r1; i0 += MR)
            block(d, r1 - i0 < MR ? r1 - i0 : MR, nc, i0, j0);
    }
}

/* Multiply-adds an item of a shared product, at most about: 0.8 us on a
 * core here, against some 0.1 us to claim it. */
#define ITEM_WORK 262144.0

typedef struct share_args {
    const direct_args *d;
    int64_t m, n, rows, width;
} share_args;

/* Item it: rows 48 (it % rows) on, of the run of columns it / rows; the
 * runs of rows of one run of columns go together (B's columns in L1). */
static void share_item(void *arg, int64_t it)
{
    const share_args *s = arg;
    const int64_t r0 = MR * (it % s->rows), c0 = s->width * (it / s->rows);
    const int64_t r1 = r0 + MR < s->m ? r0 + MR : s->m, c1 = c0 + s->width < s->n ? c0 + s->width : s->n;
    part_of(s->d, r0, r1, c0, c1);
}

static int use_direct;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* On a CPU with AVX-512 unless DLACCEL_CPU_GEMM_DIRECT=off (OpenBLAS for
 * every such product: the comparison's other side). */
static void choose(void)
{
    static const char *const values[] = {"on", "off", NULL};
    static atomic_int warned;
    if (dla__env_choice("DLACCEL_CPU_GEMM_DIRECT", values, &warned, dla__cpu_host->log) == 1)
        return;
    __builtin_cpu_init();
    use_direct = __builtin_cpu_supports("avx512f") != 0;
}

/* Pages of at most this many floats of op(A) are packed when A is
 * transposed (on the stack: 16 KiB). */
#define PAGE_A_MAX 4096
/* Pages of at most this many multiply-adds go through pages() (gemm.c's
 * SMALL_PAGE: larger ones are shared out one at a time), at least
 * PAGES_MIN in the whole batch. */
#define PAGE_WORK_MAX ((int64_t)1 << 21)
#define PAGES_MIN ((int64_t)1 << 15)

/* Page p of a batch: op(A) packed column-major (m x k, leading dim m)
 * when A is transposed, then the tiles as for a single product. */
/* A as the tiles read it: a itself (leading dim *lda), or a transposed A
 * (at most PAGE_A_MAX floats) packed into packed, m x k. */
static const float *a_of(const dla_gemm_args *g, const float *a, float *packed, int64_t *lda)
{
    *lda = g->a.ld;
    if (!g->trans_a)
        return a;
    for (int64_t l = 0; l < g->k; l++)
        for (int64_t i = 0; i < g->m; i++)
            packed[i + l * g->m] = a[l + i * g->a.ld];
    *lda = g->m;
    return packed;
}

static TGT void page_of(const dla_gemm_args *g, int64_t p)
{
    float packed[PAGE_A_MAX];
    int64_t lda;
    const float *a = a_of(g, (const float *)g->a.mem + g->a.offset + p * g->a.batch_stride,
                          packed, &lda);
    direct_args d = {
        .k = g->k,
        .a = a,
        .lda = lda,
        .b = (const float *)g->b.mem + g->b.offset + p * g->b.batch_stride,
        .bl = g->trans_b ? g->b.ld : 1,
        .bj = g->trans_b ? 1 : g->b.ld,
        .c = (float *)g->c.mem + g->c.offset + p * g->c.batch_stride,
        .ldc = g->c.ld,
        .alpha = (float)g->alpha,
        .beta = (float)g->beta,
    };
    part_of(&d, 0, g->m, 0, g->n);
}

/* A batch of small pages (an attention's scores and weighted values, 24 x
 * 24 x 8 a head): OpenBLAS took 1-2 us a page in its calls and packing,
 * 5-10x the page's arithmetic. Each element is the same one sum as for a
 * single product, so the bits do not depend on the thread count or on
 * which thread ran the page. */
static void pages(const dla_gemm_args *g)
{
    const int64_t batch = g->batch;
    const double work = (double)g->m * (double)g->n * (double)g->k;
    const int64_t c_extent = (g->n - 1) * g->c.ld + g->m;
    const int disjoint = g->c.batch_stride >= c_extent;
    const int threads = omp_get_max_threads();
    if (!disjoint || threads < 2 || work * (double)batch <= SHARE_MIN) {
        for (int64_t p = 0; p < batch; p++)
            page_of(g, p);
        return;
    }
    const int64_t chunk = dla__cpu_page_chunk(work, batch, threads);
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
    for (int64_t p = 0; p < batch; p++)
        page_of(g, p);
    dla__cpu_team_used();
}

int dla__cpu_gemm_direct(const dla_gemm_args *g, dla_status *status)
{
    if (g->dtype == DLA_F32 && g->batch > 1 && g->alpha != 0.0 && g->k > 0 &&
        (double)g->m * (double)g->k <= (g->trans_a ? (double)PAGE_A_MAX : (double)A_MAX) &&
        (double)g->m * (double)g->n * (double)g->k <= (double)PAGE_WORK_MAX &&
        (double)g->m * (double)g->n * (double)g->k * (double)g->batch >= (double)PAGES_MIN &&
        (pthread_once(&once, choose), use_direct)) {
        pages(g);
        *status = DLA_OK;
        return 1;
    }
    if (g->dtype != DLA_F32 || g->batch != 1 || g->alpha == 0.0 || g->k == 0 || g->m < 16 ||
        (double)g->m * (double)g->k > (g->trans_a ? (double)PAGE_A_MAX : (double)A_MAX) ||
        (double)g->m * (double)g->n * (double)g->k < (double)DIRECT_MIN ||
        (pthread_once(&once, choose), !use_direct))
        return 0;
    /* A small transposed A (a fully connected layer's W' dY) packed once,
     * read by every thread's tiles. */
    float packed[PAGE_A_MAX];
    int64_t lda;
    const float *a = a_of(g, (const float *)g->a.mem + g->a.offset, packed, &lda);
    direct_args d = {
        .k = g->k,
        .a = a,
        .lda = lda,
        .b = (const float *)g->b.mem + g->b.offset,
        .bl = g->trans_b ? g->b.ld : 1,
        .bj = g->trans_b ? 1 : g->b.ld,
        .c = (float *)g->c.mem + g->c.offset,
        .ldc = g->c.ld,
        .alpha = (float)g->alpha,
        .beta = (float)g->beta,
    };
    /* One part a thread: runs of whole 16-row vectors, at least 48 rows
     * each, and when the rows run out first, runs of whole 8 columns (an
     * A of 48 rows by a long B). Where C is cut changes which tile
     * computes an element, never its sum. */
    const int64_t vecs = (g->m + 15) / 16, cols = (g->n + NR - 1) / NR, n = g->n, m = g->m;
    const int64_t threads = omp_get_max_threads();
    int64_t rt = threads < (vecs + 2) / 3 ? threads : (vecs + 2) / 3;
    if (rt < 1)
        rt = 1;
    int64_t ct = threads / rt < cols ? threads / rt : cols;
    if (ct < 1)
        ct = 1;
    const int64_t team = rt * ct;
    if ((double)g->m * (double)g->n * (double)g->k <= SHARE_MIN || team < 2) {
        part_of(&d, 0, m, 0, n);
    } else if (dla__cpu_share_wanted()) {
        /* Items of 48 rows by runs of whole 8 columns, about ITEM_WORK
         * multiply-adds each, claimed as threads come (share.c): a
         * teammate that is late no longer holds a fixed half. */
        const int64_t rows = (m + MR - 1) / MR;
        int64_t runs = (int64_t)ceil((double)MR * (double)n * (double)g->k / ITEM_WORK);
        if (runs < 1)
            runs = 1;
        if (runs > cols)
            runs = cols;
        int64_t width = NR * ((cols + runs - 1) / runs);
        runs = (n + width - 1) / width;
        share_args s = {.d = &d, .m = m, .n = n, .rows = rows, .width = width};
        dla__cpu_share(rows * runs, share_item, &s);
    } else {
#pragma omp parallel for schedule(static, 1) num_threads((int)team)
        for (int64_t t = 0; t < team; t++) {
            const int64_t i = t % rt, j = t / rt;
            const int64_t r0 = 16 * (vecs * i / rt), r1 = 16 * (vecs * (i + 1) / rt);
            const int64_t c0 = NR * (cols * j / ct), c1 = NR * (cols * (j + 1) / ct);
            part_of(&d, r0, r1 < m ? r1 : m, c0, c1 < n ? c1 : n);
        }
        dla__cpu_team_used();
    }
    *status = DLA_OK;
    return 1;
}

#else

int dla__cpu_gemm_direct(const dla_gemm_args *g, dla_status *status)
{
    (void)g, (void)status;
    return 0;
}

#endif

/*
 * gemm.c - batched, column-major GEMM through OpenBLAS (cblas_sgemm and
 * cblas_dgemm), except single products with m or k at most 16, which
 * gemm_thin.c runs (OpenBLAS reaches a tenth of peak on those), and, on a
 * CPU with AVX-512, single products with an A of at most 1 MiB (16 KiB when
 * transposed) and batches of small pages, which gemm_direct.c runs (an
 * LSTM's step, a fully connected layer's products, an attention's heads).
 *
 * One page is shared out over the threads in tiles of C that follow its
 * shape (gemm_tiles.c: OpenBLAS's own threading gives other bits with
 * other thread counts). Several pages either go one after the other, each
 * in its tiles, or, when pages are small, over an OpenMP loop with one
 * page per iteration: the OpenMP build of OpenBLAS sees that it runs
 * inside a parallel region and stays on the calling thread, and the page's
 * tiles run there one after the other, as the same calls. Pages are handed
 * out in small chunks, so a thread that the OS preempts (a busy machine)
 * holds up only its own chunk.
 */
#include "plugins/cpu/cpu.h"

#include <cblas.h>
#include <limits.h>
#include <omp.h>

/* Pages of at most this many multiply-adds (m*n*k) run one per thread. */
#define SMALL_PAGE ((int64_t)1 << 21)

#define DEFINE_PAGE(T, sfx)                                                            \
    /* Page p; C = beta * C alone when op(A) op(B) contributes nothing. */                         \
    static void page_##sfx(const dla_gemm_args *g, int64_t p)                                      \
    {                                                                                              \
        T *c = (T *)g->c.mem + g->c.offset + p * g->c.batch_stride;                                \
        const T beta = (T)g->beta;                                                                 \
        if (g->k == 0 || g->alpha == 0.0) {                                                        \
            for (int64_t j = 0; j < g->n; j++)                                                     \
                for (int64_t i = 0; i < g->m; i++)                                                 \
                    c[i + j * g->c.ld] = beta == 0 ? 0 : beta * c[i + j * g->c.ld];                \
            return;                                                                                \
        }                                                                                          \
        const T *a = (const T *)g->a.mem + g->a.offset + p * g->a.batch_stride;                    \
        const T *b = (const T *)g->b.mem + g->b.offset + p * g->b.batch_stride;                    \
        dla__cpu_gemm_tiled_##sfx(g->trans_a, g->trans_b, g->m, g->n, g->k, (T)g->alpha, a,         \
                                  g->a.ld, b, g->b.ld, beta, c, g->c.ld);                          \
    }
DEFINE_PAGE(float, f32)
DEFINE_PAGE(double, f64)

dla_status dla__cpu_gemm(void *dev, const dla_gemm_args *g)
{
    dla_status s = dla_kit_check_gemm(&dla__cpu_kit, g);
    if (s != DLA_OK)
        return s;
    if (g->m == 0 || g->n == 0 || g->batch == 0)
        return DLA_OK;
    if (dla__cpu_gemm_thin(g, &s) || dla__cpu_gemm_direct(g, &s))
        return s;
    void (*page)(const dla_gemm_args *, int64_t) = g->dtype == DLA_F64 ? page_f64 : page_f32;
    if (g->batch == 1) {
        page(g, 0);
        return DLA_OK;
    }
    /* Pages run concurrently only when their C blocks cannot overlap. */
    const int64_t c_extent = (g->n - 1) * g->c.ld + g->m;
    const int disjoint = g->c.batch_stride >= c_extent;
    const int small = (double)g->m * (double)g->n * (double)g->k <= (double)SMALL_PAGE;
    const int threads = omp_get_max_threads();
    if (disjoint && small && threads > 1) {
        const int64_t batch = g->batch;
        const double work = (double)g->m * (double)g->n * (double)(g->k > 0 ? g->k : 1);
        const int64_t chunk = dla__cpu_page_chunk(work, batch, threads);
#pragma omp parallel for schedule(dynamic, chunk) num_threads(threads)
        for (int64_t p = 0; p < batch; p++)
            page(g, p);
        return DLA_OK;
    }
    for (int64_t p = 0; p < g->batch; p++)
        page(g, p);
    return DLA_OK;
}

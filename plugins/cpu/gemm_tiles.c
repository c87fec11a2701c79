/*
 * gemm_tiles.c - one OpenBLAS product shared out by the plugin, in tiles
 * of C that follow the shape alone, so that its bits are the same with any
 * number of threads.
 *
 * Why not let OpenBLAS thread it: its result depends on how many threads
 * share the product. Each thread's part of C has its own edge, and edge
 * blocks take other micro-kernels, which add a column's k terms in
 * another order: OpenBLAS 0.3.21 (Debian 12) gives other bits for a
 * 256x256x256 sgemm with 3 threads than with 1 or 2. The cpu device is the
 * reference every device and machine is compared with, and a seed should
 * train the same on 2 cores as on 64.
 *
 * So C is cut into tiles (blocks of rows and columns, square-ish) whose
 * count and edges depend on m, n and k only, and every tile is one
 * single-threaded OpenBLAS call: inside an active parallel region the
 * OpenMP build of OpenBLAS stays on the calling thread, and a product of
 * at most OPENBLAS_ALONE multiply-adds it never threads (0.3.21 threads
 * none up to 262,144; such a product is called directly, whole). With
 * one thread (OMP_NUM_THREADS=1) the tiles run one after the other,
 * through the same single-threaded calls. tests/test_thread_bits holds the
 * plugin to it.
 */
#include "plugins/cpu/cpu.h"

#include <cblas.h>
#include <omp.h>

/* Products of at most this many multiply-adds run on one thread inside
 * OpenBLAS whatever the thread count. */
#define OPENBLAS_ALONE 65536.0
/* About this many multiply-adds a tile (a tenth of a millisecond on a
 * core), at most MAX_TILES tiles. */
#define TILE_WORK 4194304.0
#define MAX_TILES 16
/* Tiles are cut by halving the longer edge while it stays at least
 * MIN_EDGE long. Each tile packs its rows of op(A) and columns of op(B)
 * itself, where OpenBLAS's threads share one packing: on 2 cores a
 * 2048^3 sgemm took 40% longer in 64 tiles of 32 columns, about 10%
 * longer in 8 x 8 tiles, about 5% in 4 x 4 and the same in 2 x 2, against
 * OpenBLAS's own threading. With these edges (1024^3 in 2 x 2 tiles,
 * 2048^3 in 4 x 4) dlaccel-bench's sgemm1024 and sgemm2048 took 7.5% and
 * 4.4% longer than before (medians of 8 alternating rounds, loaded).
 * The price of the same bits everywhere is that one product uses at most
 * 16 threads. */
#define MIN_EDGE 512

/* The tiles of an m x n x k product: C cut into tm row blocks and tn
 * column blocks. */
static void tiles_of(int64_t m, int64_t n, int64_t k, int64_t *tm, int64_t *tn)
{
    *tm = *tn = 1;
    const double work = (double)m * (double)n * (double)k;
    if (work <= OPENBLAS_ALONE)
        return;
    double want = work / TILE_WORK;
    if (want > MAX_TILES)
        want = MAX_TILES;
    while ((double)(*tm * *tn) < want) {
        const int64_t em = m / *tm, en = n / *tn;
        if (em >= en && em / 2 >= MIN_EDGE)
            *tm *= 2;
        else if (en / 2 >= MIN_EDGE)
            *tn *= 2;
        else if (em / 2 >= MIN_EDGE)
            *tm *= 2;
        else
            break;
    }
    /* A product too thin to cut so is still shared out in two, along its
     * longer side, where it has one. */
    if (*tm * *tn == 1) {
        if (n >= m && n >= 2)
            *tn = 2;
        else if (m >= 2)
            *tm = 2;
    }
}

#define DEFINE_TILED(T, sfx, cblas_gemm)                                                           \
    void dla__cpu_gemm_tiled_##sfx(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,      \
                                   T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,      \
                                   T beta, T *c, int64_t ldc)                                      \
    {                                                                                              \
        const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans,                       \
                                   tb = trans_b ? CblasTrans : CblasNoTrans;                       \
        int64_t tm, tn;                                                                            \
        tiles_of(m, n, k, &tm, &tn);                                                               \
        const double work = (double)m * (double)n * (double)k;                                     \
        if (work <= OPENBLAS_ALONE) {                                                              \
            cblas_gemm(CblasColMajor, ta, tb, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,       \
                       (int)ldb, beta, c, (int)ldc);                                               \
            return;                                                                                \
        }                                                                                          \
        const int64_t tiles = tm * tn;                                                             \
        /* One thread: the tiles one after the other (OpenBLAS, told one                          \
         * thread, runs each alone). Otherwise a region of at least two                            \
         * threads, so that it is active even for one tile (a 1 x 1 x k                            \
         * product). */                                                                            \
        int team = omp_get_max_threads();                                                          \
        if (team > tiles)                                                                          \
            team = tiles > 1 ? (int)tiles : 2;                                                     \
        _Pragma("omp parallel for schedule(dynamic, 1) num_threads(team) if (team > 1)")           \
        for (int64_t t = 0; t < tiles; t++) {                                                      \
            const int64_t i = t % tm, j = t / tm;                                                  \
            const int64_t r0 = m * i / tm, rows = m * (i + 1) / tm - r0;                           \
            const int64_t c0 = n * j / tn, cols = n * (j + 1) / tn - c0;                           \
            cblas_gemm(CblasColMajor, ta, tb, (int)rows, (int)cols, (int)k, alpha,                 \
                       a + (trans_a ? r0 * lda : r0), (int)lda, b + (trans_b ? c0 : c0 * ldb),     \
                       (int)ldb, beta, c + r0 + c0 * ldc, (int)ldc);                               \
        }                                                                                          \
        if (team > 1)                                                                              \
            dla__cpu_team_used();                                                                  \
    }
DEFINE_TILED(float, f32, cblas_sgemm)
DEFINE_TILED(double, f64, cblas_dgemm)

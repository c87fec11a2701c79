/*
 * gemm.c - batched column-major GEMM through cuBLAS
 * (cublas{S,D}gemmStridedBatched on d->stream, exact float32 unless
 * DLACCEL_CUDA_TF32=1; see libs.c).
 *
 * cuBLAS's column-major convention is the ABI's, so the operands pass as
 * they are: page p of X at X.offset + p * X.batch_stride (0 broadcasts a
 * page). beta == 0 writes C without reading it (cuBLAS's documented
 * behaviour), so a NaN in C does not propagate. Where A and B take no part
 * (k == 0 or alpha == 0, when they may have no memory) C = beta C runs on
 * the plugin's own kernel. Pages whose C blocks may overlap (c's
 * batch_stride 0 with batch > 1, or less than a page) run one call each,
 * in order, as the ABI's sequential definition requires.
 *
 * A problem too small for cuBLAS's fixed cost (k and m n k batch within
 * onekern_kern.h's limits, the tiny MLP's) runs on the plugin's small
 * kernel instead, one thread per element of C, which is also a step of a
 * one-kernel replay (onekern.c): a plain launch and the replay's step
 * then give the same bits. DLACCEL_CUDA_ONE_KERNEL=0 sends every problem
 * to cuBLAS.
 */
#include "plugins/cuda/conv_kern.h"
#include "plugins/cuda/libs.h"
#include "plugins/cuda/onekern_kern.h"

#include <limits.h>
#include <string.h>

/* Element address of a gemm operand's first page. */
static char *op_base(const dla_gemm_operand *o, size_t esz)
{
    return dla__cu_ptr(o->mem) + (size_t)o->offset * esz;
}

/* Whether m n k batch is within the small kernel's limits (each factor
 * checked before it multiplies: no overflow). */
static int small_enough(const dla_gemm_args *g)
{
    if (g->k > DLA__CU_SGEMM_MAX_K)
        return 0;
    const int64_t f[4] = {g->m, g->n, g->k, g->batch};
    int64_t w = 1;
    for (int i = 0; i < 4; i++) {
        if (f[i] > DLA__CU_SGEMM_MAX_WORK)
            return 0;
        w *= f[i];
        if (w > DLA__CU_SGEMM_MAX_WORK)
            return 0;
    }
    return 1;
}

/* The small kernel (onekern_kernels.cu) on g, recorded as a step of the
 * capture in progress. */
static dla_status small(dla__cu_device *d, const dla_gemm_args *g, int f64, char *c)
{
    const size_t esz = f64 ? 8 : 4;
    dla__cu_k1_step st;
    memset(&st, 0, sizeof st);
    st.kind = DLA__CU_K1_GEMM;
    st.f64 = f64;
    dla__cu_sgemm *k = &st.u.gemm;
    k->f64 = f64;
    k->trans_a = g->trans_a != 0;
    k->trans_b = g->trans_b != 0;
    k->m = g->m, k->n = g->n, k->k = g->k, k->batch = g->batch;
    k->a = op_base(&g->a, esz), k->b = op_base(&g->b, esz), k->c = c;
    k->lda = g->a.ld, k->ldb = g->b.ld, k->ldc = g->c.ld;
    k->sa = g->a.batch_stride, k->sb = g->b.batch_stride, k->sc = g->c.batch_stride;
    k->alpha = g->alpha, k->beta = g->beta;
    dla_status s = dla__cu_err(
        dla__cu_sgemm_launch(d->stream, dla__cu_blocks(d, g->m * g->n * g->batch), k), "gemm");
    if (s == DLA_OK)
        dla__cu_k1_note(d, &st, g->m * g->n * g->k * g->batch);
    return s;
}

dla_status dla__cu_gemm(void *dev, const dla_gemm_args *g)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "gemm");
    if (s != DLA_OK)
        return s;
    if ((s = dla_kit_check_gemm(&d->kit, g)) != DLA_OK)
        return s;
    if (g->m == 0 || g->n == 0 || g->batch == 0)
        return DLA_OK;
    const int f64 = g->dtype == DLA_F64;
    const size_t esz = f64 ? 8 : 4;
    const int64_t c_extent = (g->n - 1) * g->c.ld + g->m;
    const int sequential = g->batch > 1 && g->c.batch_stride < c_extent;
    char *c = op_base(&g->c, esz);

    if (g->k == 0 || g->alpha == 0.0) {
        /* C = beta C page by page, in order (overlapping pages scale in
         * turn). */
        const unsigned blocks = dla__cu_blocks(d, g->m * g->n);
        for (int64_t p = 0; p < g->batch; p++) {
            dla__cu_gemm_scale_launch(d->stream, blocks, f64,
                                      c + (size_t)(p * g->c.batch_stride) * esz, g->m, g->n,
                                      g->c.ld, g->beta);
            if ((s = dla__cu_launched("gemm: scaling C")) != DLA_OK)
                return s;
        }
        return DLA_OK;
    }

    if (!sequential && !d->onekern_off && small_enough(g))
        return small(d, g, f64, c);

    /* Creating the cuBLAS handle ends a capture in progress, which drops
     * the graph's buffers and their redirection: C's address again after
     * it, as A's and B's are taken. */
    dla__cu_blas_state *bs = dla__cu_blas_of(d, "gemm", &s);
    if (!bs)
        return s;
    c = op_base(&g->c, esz);
    const dla__cu_blas *L = dla__cu_blas_lib(&(const char *){NULL});
    const cublasOperation_t ta = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    const int lda = (int)g->a.ld, ldb = (int)g->b.ld, ldc = (int)g->c.ld;
    const char *a = op_base(&g->a, esz), *b = op_base(&g->b, esz);
    const double alpha = g->alpha, beta = g->beta;
    const float alpha_f = (float)g->alpha, beta_f = (float)g->beta;
    cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
    pthread_mutex_lock(&d->lock);
    /* One call for all pages (in chunks of at most INT_MAX), or one per
     * page in order. */
    const int64_t per_call = sequential ? 1 : INT_MAX;
    for (int64_t p = 0; p < g->batch && cs == CUBLAS_STATUS_SUCCESS; p += per_call) {
        const int64_t left = g->batch - p;
        const int count = (int)(left < per_call ? left : per_call);
        const char *pa = a + (size_t)(p * g->a.batch_stride) * esz;
        const char *pb = b + (size_t)(p * g->b.batch_stride) * esz;
        char *pc = c + (size_t)(p * g->c.batch_stride) * esz;
        if (f64)
            cs = L->dgemm_strided_batched(bs->handle, ta, tb, m, n, k, &alpha, (const double *)pa,
                                          lda, g->a.batch_stride, (const double *)pb, ldb,
                                          g->b.batch_stride, &beta, (double *)pc, ldc,
                                          g->c.batch_stride, count);
        else
            cs = L->sgemm_strided_batched(bs->handle, ta, tb, m, n, k, &alpha_f, (const float *)pa,
                                          lda, g->a.batch_stride, (const float *)pb, ldb,
                                          g->b.batch_stride, &beta_f, (float *)pc, ldc,
                                          g->c.batch_stride, count);
    }
    pthread_mutex_unlock(&d->lock);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        cudaGetLastError();
        return dla__cu_host->error(DLA_ERR_DEVICE,
                                   "cuda gemm: cublas%cgemmStridedBatched (m=%lld n=%lld k=%lld "
                                   "batch=%lld trans %d%d): %s",
                                   f64 ? 'D' : 'S', (long long)g->m, (long long)g->n,
                                   (long long)g->k, (long long)g->batch, g->trans_a ? 1 : 0,
                                   g->trans_b ? 1 : 0, dla__cu_blas_msg(cs));
    }
    return dla__cu_launched("gemm");
}

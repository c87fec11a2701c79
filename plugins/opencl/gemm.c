/*
 * gemm.c - batched column-major GEMM on OpenCL devices: large pages
 * through CLBlast when it is installed (clblast.c says when and why), the
 * rest with the plugin's own kernel (gemm.cl), one launch for all pages.
 *
 * Pages whose C blocks may overlap (batch_stride 0 for C: pages add into
 * one C with beta) run one launch each, in order, as the ABI's sequential
 * definition requires; others run as one 3-d launch.
 */
#include "plugins/opencl/ocl.h"

#include <limits.h>

/* Rows and columns of C per work-item: gemm.cl's GEMM_WM and GEMM_WN. */
#define WM 4
#define WN 8

dla_status dla__ocl_gemm(void *dev, const dla_gemm_args *g)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_gemm(&d->kit, g);
    if (s != DLA_OK || g->m == 0 || g->n == 0 || g->batch == 0)
        return s;
    const int f64 = g->dtype == DLA_F64;
    const int trans = (g->trans_a ? 1 : 0) + (g->trans_b ? 2 : 0);
    static const char *const names[] = {"nn", "tn", "nt", "tt"};
    const cl_int ab = g->k > 0 && g->alpha != 0.0;
    const cl_mem c = dla__ocl_buf(g->c.mem);
    const cl_mem a = ab ? dla__ocl_buf(g->a.mem) : c, b = ab ? dla__ocl_buf(g->b.mem) : c;
    const cl_long m = g->m, n = g->n, k = g->k;
    cl_long ao = g->a.offset, lda = g->a.ld, abs_ = g->a.batch_stride;
    cl_long bo = g->b.offset, ldb = g->b.ld, bbs = g->b.batch_stride;
    cl_long co = g->c.offset, ldc = g->c.ld, cbs = g->c.batch_stride;
    const int64_t c_extent = (g->n - 1) * g->c.ld + g->m;
    const int one_launch = g->batch == 1 || g->c.batch_stride >= c_extent;
    if (dla__ocl_clblast_wants(d, g)) {
        pthread_mutex_lock(&d->lock);
        s = dla__ocl_clblast_gemm(d, g, one_launch);
        pthread_mutex_unlock(&d->lock);
        if (s != DLA_ERR_UNSUPPORTED)
            return s;
    }

    /* Rows of C per work-group along 0: enough work-items to cover m, at
     * most 64 (and within the device's limit). */
    const size_t rows = (size_t)((g->m + WM - 1) / WM);
    size_t l0 = 1;
    while (l0 < rows && l0 < 64 && l0 < d->local)
        l0 *= 2;
    const size_t global[3] = {(rows + l0 - 1) / l0 * l0, (size_t)((g->n + WN - 1) / WN),
                              one_launch ? (size_t)g->batch : 1};
    const size_t local[3] = {l0, 1, 1};

    pthread_mutex_lock(&d->lock);
    cl_kernel kern;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_GEMM, DLA__OCL_K_GEMM + 2 * trans + f64, &kern,
                        "gemm_%s_%s", names[trans], f64 ? "double" : "float");
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = dla__ocl_args(kern, "gemm", 0, A(m), A(n), A(k), A(ab), DLA__OCL_END);
    if (s == DLA_OK && f64) {
        const cl_double al = g->alpha, be = g->beta;
        s = dla__ocl_args(kern, "gemm", 4, A(al), A(be), DLA__OCL_END);
    } else if (s == DLA_OK) {
        const cl_float al = (cl_float)g->alpha, be = (cl_float)g->beta;
        s = dla__ocl_args(kern, "gemm", 4, A(al), A(be), DLA__OCL_END);
    }
    if (s == DLA_OK)
        s = dla__ocl_args(kern, "gemm", 6, A(a), A(ao), A(lda), A(abs_), A(b), A(bo), A(ldb),
                          A(bbs), A(c), A(co), A(ldc), A(cbs), DLA__OCL_END);
    for (int64_t p = 0; s == DLA_OK && p < (one_launch ? 1 : g->batch); p++) {
        if (!one_launch) {
            const cl_long pa = ao + p * abs_, pb = bo + p * bbs, pc = co + p * cbs;
            s = dla__ocl_args(kern, "gemm", 7, A(pa), DLA__OCL_END);
            if (s == DLA_OK)
                s = dla__ocl_args(kern, "gemm", 11, A(pb), DLA__OCL_END);
            if (s == DLA_OK)
                s = dla__ocl_args(kern, "gemm", 15, A(pc), DLA__OCL_END);
            if (s != DLA_OK)
                break;
        }
        cl_uint nwait;
        const cl_event *wait;
        cl_event *ev = dla__ocl_plan_event(d, "gemm", &nwait, &wait);
        cl_int err = clEnqueueNDRangeKernel(d->queue, kern, 3, NULL, global, local, nwait, wait,
                                            ev);
        dla__ocl_plan_enqueued(d, err);
        if (err != CL_SUCCESS)
            s = dla__ocl_host->error(DLA_ERR_DEVICE,
                                     "opencl gemm: clEnqueueNDRangeKernel (m=%lld n=%lld k=%lld "
                                     "batch=%lld): %s",
                                     (long long)g->m, (long long)g->n, (long long)g->k,
                                     (long long)g->batch, DLA__OCL_ERR(err));
    }
#undef A
    pthread_mutex_unlock(&d->lock);
    return s;
}

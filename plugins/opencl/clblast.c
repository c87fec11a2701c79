/*
 * clblast.c - large GEMMs through CLBlast, loaded at run time.
 *
 * CLBlast (Debian libclblast1) is a tuned BLAS for OpenCL. Measured on
 * PoCL on this project's 2-core test machine it ran SGEMM about twice as
 * fast as the plugin's own kernel from 128^3 on (10.6 against 6.1
 * GFLOP/s at 128, 8.2 against 3.5 at 1024; docs/plugins.md has the
 * table), and on GPUs its tuned kernels are far ahead of a simple one. But
 * it compiles its kernels on a process's first call of each kind (28 s on
 * PoCL for the three it needs, before PoCL's own cache holds them), which
 * small GEMMs never repay. So the plugin uses it for pages of at least
 * CLBLAST_MIN multiply-adds and runs its own kernel below that, or when
 * CLBlast is not installed, or refuses a call (then for the rest of the
 * process on that device, said once in the log).
 *
 * It is opened with dlopen rather than linked: the plugin builds and runs
 * without it, and picks it up when it is there. DLACCEL_OPENCL_GEMM=own
 * never uses it, =clblast uses it for every GEMM it can take.
 *
 * CLBlast keeps beta == 0 from reading C (checked: NaN in C does not come
 * through) and takes batch stride 0 for A and B; pages that add into one
 * C (its batch stride 0) go one call after the other, in order. Calls
 * enqueue on the device's queue like every kernel of the plugin.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/env_choice.h"
#include "plugins/opencl/ocl.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

/* Multiply-adds (m n k) of a page from which CLBlast is used. */
#define CLBLAST_MIN ((int64_t)1 << 21)

/* CLBlast's C API, as clblast_c.h declares it (its enums are ints). */
enum { COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112 };
typedef int (*sgemm_fn)(int, int, int, size_t, size_t, size_t, float, cl_mem, size_t, size_t,
                        cl_mem, size_t, size_t, float, cl_mem, size_t, size_t, cl_command_queue *,
                        cl_event *);
typedef int (*dgemm_fn)(int, int, int, size_t, size_t, size_t, double, cl_mem, size_t, size_t,
                        cl_mem, size_t, size_t, double, cl_mem, size_t, size_t, cl_command_queue *,
                        cl_event *);
typedef int (*sbatch_fn)(int, int, int, size_t, size_t, size_t, float, cl_mem, size_t, size_t,
                         size_t, cl_mem, size_t, size_t, size_t, float, cl_mem, size_t, size_t,
                         size_t, size_t, cl_command_queue *, cl_event *);
typedef int (*dbatch_fn)(int, int, int, size_t, size_t, size_t, double, cl_mem, size_t, size_t,
                         size_t, cl_mem, size_t, size_t, size_t, double, cl_mem, size_t, size_t,
                         size_t, size_t, cl_command_queue *, cl_event *);

static struct {
    pthread_once_t once;
    void *lib;
    sgemm_fn sgemm;
    dgemm_fn dgemm;
    sbatch_fn sbatch;
    dbatch_fn dbatch;
} clblast = {.once = PTHREAD_ONCE_INIT};

static void load(void)
{
    static const char *const names[] = {"libclblast.so.1", "libclblast.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !clblast.lib; i++)
        clblast.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!clblast.lib) {
        dla__ocl_host->log(DLA_LOG_DEBUG, "opencl: no CLBlast (%s): GEMM on the plugin's kernel",
                           dlerror());
        return;
    }
    /* Function pointers from dlsym, through memcpy (ISO C has no cast
     * between object and function pointers). */
    void *p[4] = {dlsym(clblast.lib, "CLBlastSgemm"), dlsym(clblast.lib, "CLBlastDgemm"),
                  dlsym(clblast.lib, "CLBlastSgemmStridedBatched"),
                  dlsym(clblast.lib, "CLBlastDgemmStridedBatched")};
    if (!p[0] || !p[1] || !p[2] || !p[3]) {
        dla__ocl_host->log(DLA_LOG_INFO, "opencl: CLBlast lacks its GEMM functions; not used");
        dlclose(clblast.lib);
        clblast.lib = NULL;
        return;
    }
    memcpy(&clblast.sgemm, &p[0], sizeof p[0]);
    memcpy(&clblast.dgemm, &p[1], sizeof p[1]);
    memcpy(&clblast.sbatch, &p[2], sizeof p[2]);
    memcpy(&clblast.dbatch, &p[3], sizeof p[3]);
    dla__ocl_host->log(DLA_LOG_DEBUG, "opencl: CLBlast loaded for GEMMs of %lld multiply-adds "
                       "and more", (long long)CLBLAST_MIN);
}

int dla__ocl_clblast_available(void)
{
    pthread_once(&clblast.once, load);
    return clblast.lib != NULL;
}

int dla__ocl_clblast_wants(const dla__ocl_device *d, const dla_gemm_args *g)
{
    static const char *const values[] = {"own", "clblast", NULL};
    static atomic_int warned;
    const int policy = dla__env_choice("DLACCEL_OPENCL_GEMM", values, &warned, dla__ocl_host->log);
    if (d->clblast_off || policy == 0 || g->m == 0 || g->n == 0 || g->k == 0 || g->alpha == 0.0 ||
        !dla__ocl_clblast_available())
        return 0;
    if (policy == 1)
        return 1;
    return (double)g->m * (double)g->n * (double)g->k >= (double)CLBLAST_MIN;
}

/* The CLBlast function for g's dtype and page count; ev: where its event
 * goes (NULL: none). */
static int call_blas(dla__ocl_device *d, const dla_gemm_args *g, int64_t p, int64_t count,
                     cl_event *ev)
{
    const int ta = g->trans_a ? TRANS : NO_TRANS, tb = g->trans_b ? TRANS : NO_TRANS;
    const cl_mem a = dla__ocl_buf(g->a.mem), b = dla__ocl_buf(g->b.mem), c = dla__ocl_buf(g->c.mem);
    const size_t ao = (size_t)(g->a.offset + p * g->a.batch_stride);
    const size_t bo = (size_t)(g->b.offset + p * g->b.batch_stride);
    const size_t co = (size_t)(g->c.offset + p * g->c.batch_stride);
    const size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
    const size_t lda = (size_t)g->a.ld, ldb = (size_t)g->b.ld, ldc = (size_t)g->c.ld;
    if (g->dtype == DLA_F64) {
        if (count == 1)
            return clblast.dgemm(COL_MAJOR, ta, tb, m, n, k, g->alpha, a, ao, lda, b, bo, ldb,
                                 g->beta, c, co, ldc, &d->queue, ev);
        return clblast.dbatch(COL_MAJOR, ta, tb, m, n, k, g->alpha, a, ao, lda,
                              (size_t)g->a.batch_stride, b, bo, ldb, (size_t)g->b.batch_stride,
                              g->beta, c, co, ldc, (size_t)g->c.batch_stride, (size_t)count,
                              &d->queue, ev);
    }
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    if (count == 1)
        return clblast.sgemm(COL_MAJOR, ta, tb, m, n, k, alpha, a, ao, lda, b, bo, ldb, beta, c,
                             co, ldc, &d->queue, ev);
    return clblast.sbatch(COL_MAJOR, ta, tb, m, n, k, alpha, a, ao, lda, (size_t)g->a.batch_stride,
                          b, bo, ldb, (size_t)g->b.batch_stride, beta, c, co, ldc,
                          (size_t)g->c.batch_stride, (size_t)count, &d->queue, ev);
}

/* One CLBlast call for pages [p, p + count) (count 1: a plain GEMM).
 * Inside a plan its event joins the chain (CLBlast takes no wait list; the
 * in-order queue orders it). */
static int call(dla__ocl_device *d, const dla_gemm_args *g, int64_t p, int64_t count)
{
    cl_uint nwait;
    const cl_event *wait;
    cl_event *ev = dla__ocl_plan_event(d, "gemm (CLBlast)", &nwait, &wait);
    const int status = call_blas(d, g, p, count, ev);
    dla__ocl_plan_enqueued(d, status == 0 ? CL_SUCCESS : CL_INVALID_OPERATION);
    return status;
}

dla_status dla__ocl_clblast_gemm(dla__ocl_device *d, const dla_gemm_args *g, int one_launch)
{
    int status = 0;
    if (one_launch) {
        status = call(d, g, 0, g->batch);
    } else {
        for (int64_t p = 0; p < g->batch && status == 0; p++)
            status = call(d, g, p, 1);
    }
    if (status == 0)
        return DLA_OK;
    /* A page CLBlast has already enqueued is the same product the own
     * kernel makes of it, except with beta: then C has moved on, and the
     * result would add beta twice. */
    d->clblast_off = 1;
    dla__ocl_host->log(DLA_LOG_WARN,
                       "opencl:%d: CLBlast refused a GEMM (status %d, m=%lld n=%lld k=%lld "
                       "batch=%lld); GEMMs run on the plugin's own kernel from now on",
                       d->index, status, (long long)g->m, (long long)g->n, (long long)g->k,
                       (long long)g->batch);
    return one_launch || g->beta == 0.0
               ? DLA_ERR_UNSUPPORTED
               : dla__ocl_host->error(DLA_ERR_DEVICE,
                                      "opencl gemm: CLBlast failed (status %d) on a GEMM whose "
                                      "pages add into one C (m=%lld n=%lld k=%lld batch=%lld)",
                                      status, (long long)g->m, (long long)g->n, (long long)g->k,
                                      (long long)g->batch);
}

/*
 * libs.c - cuBLAS and cuDNN opened with dlopen on first use, their entry
 * points resolved with dlsym, and the per-device handles (see libs.h).
 *
 * Math: float32 is exact by default: cuBLAS in CUBLAS_DEFAULT_MATH (which
 * since cuBLAS 11 does not use TF32: that takes CUBLAS_TF32_TENSOR_OP_MATH)
 * and cuDNN convolutions in CUDNN_FMA_MATH (conv.c). DLACCEL_CUDA_TF32=1
 * (d->tf32) allows TF32 tensor cores in both.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "plugins/cuda/libs.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cuBLAS workspace: what cuBLAS asks for on Hopper (32 MiB); with a
 * workspace of its own it allocates nothing during a graph capture. */
#define BLAS_WORKSPACE ((size_t)32 << 20)

static pthread_once_t blas_once = PTHREAD_ONCE_INIT, dnn_once = PTHREAD_ONCE_INIT;
static dla__cu_blas blas;
static dla__cu_dnn dnn;
static int blas_ok, dnn_ok;
static char blas_why[512], dnn_why[512];

/* Opens the first of names that loads: plain (the loader's search), then
 * in $DLACCEL_CUDA_LIBDIR, then in the toolkit's folder of the build. why
 * gets the first failure's message (the most telling: the plain name). */
void *dla__cu_open_lib(const char *const *names, int nnames, char *why, size_t whysz)
{
    why[0] = 0;
    const char *dirs[3] = {NULL, secure_getenv("DLACCEL_CUDA_LIBDIR"), NULL};
#ifdef DLA_CUDA_LIBDIR
    dirs[2] = DLA_CUDA_LIBDIR;
#endif
    for (int di = 0; di < 3; di++) {
        if (di > 0 && (!dirs[di] || !dirs[di][0]))
            continue;
        for (int i = 0; i < nnames; i++) {
            char path[4096];
            if (di == 0)
                snprintf(path, sizeof path, "%s", names[i]);
            else if (snprintf(path, sizeof path, "%s/%s", dirs[di], names[i]) >=
                     (int)sizeof path)
                continue;
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (h)
                return h;
            const char *e = dlerror();
            if (!why[0]) {
                const char *m = e ? e : names[i];
                size_t len = strlen(m);
                if (len >= whysz)
                    len = whysz - 1;
                memcpy(why, m, len);
                why[len] = 0;
            }
        }
    }
    return NULL;
}

/* Resolves name into *slot; 0 (why set) when missing. */
int dla__cu_sym(void *lib, const char *libname, const char *name, void *slot, char *why,
                size_t whysz)
{
    dlerror();
    void *p = dlsym(lib, name);
    if (!p) {
        const char *e = dlerror();
        snprintf(why, whysz, "%s: symbol %s not found%s%s", libname, name, e ? ": " : "",
                 e ? e : "");
        return 0;
    }
    memcpy(slot, &p, sizeof p);
    return 1;
}

static void load_blas(void)
{
    static const char *const names[] = {"libcublas.so.13", "libcublas.so.12"};
    void *lib = dla__cu_open_lib(names, 2, blas_why, sizeof blas_why);
    if (!lib)
        return;
    const char *n = "libcublas";
    int ok = 1;
#define S(field, name) ok = ok && dla__cu_sym(lib, n, name, &blas.field, blas_why, sizeof blas_why)
    S(create, "cublasCreate_v2");
    S(destroy, "cublasDestroy_v2");
    S(set_stream, "cublasSetStream_v2");
    S(set_workspace, "cublasSetWorkspace_v2");
    S(set_math_mode, "cublasSetMathMode");
    S(set_pointer_mode, "cublasSetPointerMode_v2");
    S(status_string, "cublasGetStatusString");
    S(sgemm_strided_batched, "cublasSgemmStridedBatched");
    S(dgemm_strided_batched, "cublasDgemmStridedBatched");
#undef S
    if (!ok) {
        dlclose(lib);
        return;
    }
    /* The library stays open for the process's life. */
    blas_ok = 1;
}

static void load_dnn(void)
{
    static const char *const names[] = {"libcudnn.so.9"};
    void *lib = dla__cu_open_lib(names, 1, dnn_why, sizeof dnn_why);
    if (!lib)
        return;
    const char *n = "libcudnn.so.9";
    int ok = 1;
#define S(field, name) ok = ok && dla__cu_sym(lib, n, name, &dnn.field, dnn_why, sizeof dnn_why)
    S(get_version, "cudnnGetVersion");
    S(create, "cudnnCreate");
    S(destroy, "cudnnDestroy");
    S(set_stream, "cudnnSetStream");
    S(error_string, "cudnnGetErrorString");
    S(create_tensor, "cudnnCreateTensorDescriptor");
    S(set_tensor_nd, "cudnnSetTensorNdDescriptor");
    S(destroy_tensor, "cudnnDestroyTensorDescriptor");
    S(create_filter, "cudnnCreateFilterDescriptor");
    S(set_filter_nd, "cudnnSetFilterNdDescriptor");
    S(destroy_filter, "cudnnDestroyFilterDescriptor");
    S(create_conv, "cudnnCreateConvolutionDescriptor");
    S(set_conv_nd, "cudnnSetConvolutionNdDescriptor");
    S(set_conv_groups, "cudnnSetConvolutionGroupCount");
    S(set_conv_math, "cudnnSetConvolutionMathType");
    S(conv_out_dim, "cudnnGetConvolutionNdForwardOutputDim");
    S(destroy_conv, "cudnnDestroyConvolutionDescriptor");
    S(find_fwd, "cudnnFindConvolutionForwardAlgorithmEx");
    S(find_bwd_data, "cudnnFindConvolutionBackwardDataAlgorithmEx");
    S(find_bwd_filter, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    S(get_fwd, "cudnnGetConvolutionForwardAlgorithm_v7");
    S(get_bwd_data, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    S(get_bwd_filter, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    S(fwd, "cudnnConvolutionForward");
    S(bwd_data, "cudnnConvolutionBackwardData");
    S(bwd_filter, "cudnnConvolutionBackwardFilter");
#undef S
    /* Optional: without them the engines of the graph API are not tried. */
    if (ok) {
        char unused[256];
        int be = 1;
#define O(field, name) be = be && dla__cu_sym(lib, n, name, &dnn.field, unused, sizeof unused)
        O(be_create, "cudnnBackendCreateDescriptor");
        O(be_destroy, "cudnnBackendDestroyDescriptor");
        O(be_set, "cudnnBackendSetAttribute");
        O(be_get, "cudnnBackendGetAttribute");
        O(be_finalize, "cudnnBackendFinalize");
        O(be_execute, "cudnnBackendExecute");
#undef O
        if (!be)
            dnn.be_create = NULL;
    }
    if (ok && dnn.get_version() / 10000 < 9) {
        snprintf(dnn_why, sizeof dnn_why, "libcudnn.so.9 reports version %zu, not 9.x",
                 dnn.get_version());
        ok = 0;
    }
    if (!ok) {
        dlclose(lib);
        return;
    }
    dnn_ok = 1;
}

const dla__cu_blas *dla__cu_blas_lib(const char **why)
{
    pthread_once(&blas_once, load_blas);
    if (!blas_ok) {
        *why = blas_why[0] ? blas_why : "libcublas could not be opened";
        return NULL;
    }
    return &blas;
}

const dla__cu_dnn *dla__cu_dnn_lib(const char **why)
{
    pthread_once(&dnn_once, load_dnn);
    if (!dnn_ok) {
        *why = dnn_why[0] ? dnn_why : "libcudnn could not be opened";
        return NULL;
    }
    return &dnn;
}

const char *dla__cu_blas_msg(cublasStatus_t st)
{
    return blas_ok ? blas.status_string(st) : "cuBLAS not loaded";
}

const char *dla__cu_dnn_msg(cudnnStatus_t st)
{
    return dnn_ok ? dnn.error_string(st) : "cuDNN not loaded";
}

dla__cu_blas_state *dla__cu_blas_of(dla__cu_device *d, const char *member, dla_status *st)
{
    const dla_plugin_host *h = dla__cu_host;
    pthread_mutex_lock(&d->lock);
    dla__cu_blas_state *b = d->cublas;
    pthread_mutex_unlock(&d->lock);
    if (b)
        return b;
    const char *why = NULL;
    const dla__cu_blas *L = dla__cu_blas_lib(&why);
    if (!L) {
        *st = h->error(DLA_ERR_DEVICE, "cuda %s: cuBLAS not available: %s", member, why);
        return NULL;
    }
    /* Creating a handle allocates and may synchronize, which a CUDA graph
     * capture cannot hold: end a capture in progress first (once). */
    if ((*st = dla__cu_plan_flush(d, "creating the cuBLAS handle")) != DLA_OK)
        return NULL;
    /* The workspace first: the pool takes d->lock itself. */
    dla_mem ws = NULL;
    if ((*st = dla__cu_mem_alloc(d, BLAS_WORKSPACE, &ws)) != DLA_OK)
        return NULL;
    pthread_mutex_lock(&d->lock);
    if (d->cublas) { /* another thread made it meanwhile */
        b = d->cublas;
        pthread_mutex_unlock(&d->lock);
        dla__cu_mem_free(d, ws);
        return b;
    }
    b = dla__cu_host->alloc(sizeof *b, 0);
    if (!b) {
        pthread_mutex_unlock(&d->lock);
        dla__cu_mem_free(d, ws);
        *st = h->error(DLA_ERR_OUT_OF_MEMORY, "cuda %s: the cuBLAS state", member);
        return NULL;
    }
    memset(b, 0, sizeof *b);
    const char *step = "cublasCreate";
    cublasStatus_t cs = L->create(&b->handle);
    if (cs == CUBLAS_STATUS_SUCCESS)
        step = "cublasSetStream", cs = L->set_stream(b->handle, d->stream);
    if (cs == CUBLAS_STATUS_SUCCESS)
        step = "cublasSetWorkspace",
        cs = L->set_workspace(b->handle, dla__cu_ptr(ws), BLAS_WORKSPACE);
    if (cs == CUBLAS_STATUS_SUCCESS)
        step = "cublasSetPointerMode",
        cs = L->set_pointer_mode(b->handle, CUBLAS_POINTER_MODE_HOST);
    if (cs == CUBLAS_STATUS_SUCCESS)
        step = "cublasSetMathMode",
        cs = L->set_math_mode(b->handle, d->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                 : CUBLAS_DEFAULT_MATH);
    if (cs != CUBLAS_STATUS_SUCCESS) {
        if (b->handle)
            L->destroy(b->handle);
        pthread_mutex_unlock(&d->lock);
        h->free(b);
        dla__cu_mem_free(d, ws);
        cudaGetLastError();
        *st = h->error(DLA_ERR_DEVICE, "cuda %s: %s: %s", member, step, L->status_string(cs));
        return NULL;
    }
    b->workspace = ws;
    d->cublas = b;
    pthread_mutex_unlock(&d->lock);
    *st = DLA_OK;
    return b;
}

cudnnHandle_t dla__cu_dnn_of(dla__cu_device *d)
{
    const dla_plugin_host *h = dla__cu_host;
    pthread_mutex_lock(&d->lock);
    cudnnHandle_t c = d->cudnn;
    const int off = d->cudnn_off;
    pthread_mutex_unlock(&d->lock);
    if (c || off)
        return c;
    const char *why = NULL;
    const dla__cu_dnn *L = dla__cu_dnn_lib(&why);
    pthread_mutex_lock(&d->lock);
    if (d->cudnn || d->cudnn_off) {
        c = d->cudnn;
        pthread_mutex_unlock(&d->lock);
        return c;
    }
    if (!L) {
        d->cudnn_off = 1;
        pthread_mutex_unlock(&d->lock);
        h->log(DLA_LOG_WARN, "cuda:%d: cuDNN not available (%s): convolutions run on the "
                             "plugin's own kernels",
               d->index, why);
        return NULL;
    }
    cudnnStatus_t ds = L->create(&c);
    const char *step = "cudnnCreate";
    if (ds == CUDNN_STATUS_SUCCESS)
        step = "cudnnSetStream", ds = L->set_stream(c, d->stream);
    if (ds != CUDNN_STATUS_SUCCESS) {
        if (c)
            L->destroy(c);
        c = NULL;
        d->cudnn_off = 1;
        pthread_mutex_unlock(&d->lock);
        cudaGetLastError();
        h->log(DLA_LOG_WARN, "cuda:%d: %s: %s: convolutions run on the plugin's own kernels",
               d->index, step, L->error_string(ds));
        return NULL;
    }
    d->cudnn = c;
    pthread_mutex_unlock(&d->lock);
    h->log(DLA_LOG_DEBUG, "cuda:%d: cuDNN %zu for convolutions (%s)", d->index, L->get_version(),
           d->tf32 ? "TF32 tensor cores allowed" : "exact float32");
    return c;
}

void dla__cu_libs_release(dla__cu_device *d)
{
    dla__cu_blas_state *b = d->cublas;
    if (b) {
        if (blas_ok && b->handle)
            blas.destroy(b->handle);
        if (b->workspace)
            dla__cu_mem_free(d, b->workspace);
        dla__cu_host->free(b);
        d->cublas = NULL;
    }
    if (d->cudnn) {
        if (dnn_ok)
            dnn.destroy((cudnnHandle_t)d->cudnn);
        d->cudnn = NULL;
    }
    cudaGetLastError();
}

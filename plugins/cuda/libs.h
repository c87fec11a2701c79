/*
 * libs.h - cuBLAS and cuDNN, opened at run time (libs.c).
 *
 * The plugin links no CUDA library but the static cudart: libcublas and
 * libcudnn are opened with dlopen the first time a gemm or a convolution
 * needs them (libcublas.so.13, then .so.12; libcudnn.so.9), first by the
 * loader's search, then in $DLACCEL_CUDA_LIBDIR, then in the toolkit's
 * library folder configure found (-DDLA_CUDA_LIBDIR="..."), and the entry
 * points used are resolved into a table. The attempt is made once per
 * process: a missing library or symbol is remembered with its message.
 *
 * Handles are per device, created lazily under d->lock and bound to
 * d->stream: d->cublas holds a dla__cu_blas_state (the handle and the pool
 * block set as its workspace, so that its calls can be captured in a CUDA
 * graph), d->cudnn a cudnnHandle_t.
 */
#ifndef DLA_PLUGIN_CUDA_LIBS_H
#define DLA_PLUGIN_CUDA_LIBS_H

#include "plugins/cuda/cu.h"

#include <cublas_v2.h>
#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLAS's entry points (the exported names: cublas_v2.h maps several of
 * these names to their _v2 symbols, which is what is looked up). */
typedef struct dla__cu_blas {
    __typeof__(&cublasCreate) create;
    __typeof__(&cublasDestroy) destroy;
    __typeof__(&cublasSetStream) set_stream;
    __typeof__(&cublasSetWorkspace) set_workspace;
    __typeof__(&cublasSetMathMode) set_math_mode;
    __typeof__(&cublasSetPointerMode) set_pointer_mode;
    __typeof__(&cublasGetStatusString) status_string;
    __typeof__(&cublasSgemmStridedBatched) sgemm_strided_batched;
    __typeof__(&cublasDgemmStridedBatched) dgemm_strided_batched;
} dla__cu_blas;

/* cuDNN's entry points (the legacy convolution API of cuDNN 9). */
typedef struct dla__cu_dnn {
    __typeof__(&cudnnGetVersion) get_version;
    __typeof__(&cudnnCreate) create;
    __typeof__(&cudnnDestroy) destroy;
    __typeof__(&cudnnSetStream) set_stream;
    __typeof__(&cudnnGetErrorString) error_string;
    __typeof__(&cudnnCreateTensorDescriptor) create_tensor;
    __typeof__(&cudnnSetTensorNdDescriptor) set_tensor_nd;
    __typeof__(&cudnnDestroyTensorDescriptor) destroy_tensor;
    __typeof__(&cudnnCreateFilterDescriptor) create_filter;
    __typeof__(&cudnnSetFilterNdDescriptor) set_filter_nd;
    __typeof__(&cudnnDestroyFilterDescriptor) destroy_filter;
    __typeof__(&cudnnCreateConvolutionDescriptor) create_conv;
    __typeof__(&cudnnSetConvolutionNdDescriptor) set_conv_nd;
    __typeof__(&cudnnSetConvolutionGroupCount) set_conv_groups;
    __typeof__(&cudnnSetConvolutionMathType) set_conv_math;
    __typeof__(&cudnnGetConvolutionNdForwardOutputDim) conv_out_dim;
    __typeof__(&cudnnDestroyConvolutionDescriptor) destroy_conv;
    __typeof__(&cudnnFindConvolutionForwardAlgorithmEx) find_fwd;
    __typeof__(&cudnnFindConvolutionBackwardDataAlgorithmEx) find_bwd_data;
    __typeof__(&cudnnFindConvolutionBackwardFilterAlgorithmEx) find_bwd_filter;
    __typeof__(&cudnnGetConvolutionForwardAlgorithm_v7) get_fwd;
    __typeof__(&cudnnGetConvolutionBackwardDataAlgorithm_v7) get_bwd_data;
    __typeof__(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) get_bwd_filter;
    __typeof__(&cudnnConvolutionForward) fwd;
    __typeof__(&cudnnConvolutionBackwardData) bwd_data;
    __typeof__(&cudnnConvolutionBackwardFilter) bwd_filter;
    /* The graph (backend) API, for conv_engine.c; NULL when the library
     * lacks it (then only the legacy algorithms run). */
    __typeof__(&cudnnBackendCreateDescriptor) be_create;
    __typeof__(&cudnnBackendDestroyDescriptor) be_destroy;
    __typeof__(&cudnnBackendSetAttribute) be_set;
    __typeof__(&cudnnBackendGetAttribute) be_get;
    __typeof__(&cudnnBackendFinalize) be_finalize;
    __typeof__(&cudnnBackendExecute) be_execute;
} dla__cu_dnn;

/* What d->cublas points to. */
typedef struct dla__cu_blas_state {
    cublasHandle_t handle;
    dla_mem workspace; /* a pool block, kept for the device's life */
} dla__cu_blas_state;

/* The loaded tables, or NULL with why set to the reason (a static text,
 * e.g. "libcublas.so.13: cannot open shared object file: No such file or
 * directory"). Thread-safe; the libraries are opened once per process. */
const dla__cu_blas *dla__cu_blas_lib(const char **why);
const dla__cu_dnn *dla__cu_dnn_lib(const char **why);

/* d's cuBLAS state, created (handle on d->stream, math mode, workspace) on
 * first use. Call WITHOUT d->lock held (it allocates from the pool, which
 * takes the lock); use the handle with d->lock held. NULL: error set
 * (DLA_ERR_DEVICE), *st the status to return. */
dla__cu_blas_state *dla__cu_blas_of(dla__cu_device *d, const char *member, dla_status *st);

/* d's cuDNN handle on d->stream, created on first use; call without
 * d->lock held. NULL when cuDNN cannot be had: d->cudnn_off is then set
 * and the reason logged once (not an error: the own kernels run). */
cudnnHandle_t dla__cu_dnn_of(dla__cu_device *d);

/* Opens the first of names that loads: plain (the loader's search), then
 * in $DLACCEL_CUDA_LIBDIR, then in the toolkit's folder of the build; NULL
 * with why set to the first failure's message. */
void *dla__cu_open_lib(const char *const *names, int nnames, char *why, size_t whysz);
/* Resolves name in lib into *slot (a function pointer's address); 0 with
 * why set when missing. */
int dla__cu_sym(void *lib, const char *libname, const char *name, void *slot, char *why,
                size_t whysz);

/* "cuBLAS error message (name)" of a status. */
const char *dla__cu_blas_msg(cublasStatus_t st);
const char *dla__cu_dnn_msg(cudnnStatus_t st);

#ifdef __cplusplus
}
#endif
#endif

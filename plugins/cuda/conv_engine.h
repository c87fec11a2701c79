/*
 * conv_engine.h - a convolution through cuDNN's graph (backend) API: the
 * engines its heuristics offer, measured beside the legacy algorithms
 * (conv.c), kept per shape when one is faster.
 *
 * Why: the legacy cudnnFind*AlgorithmEx tries the eight algorithms of the
 * legacy API only. On an H200 the digit CNN's 3x3 20->20 forward at batch
 * 128 took 78 us on the best of them and 40 us on the engine PyTorch's
 * cuDNN frontend picks (sm80_xmma_fprop_implicit_gemm, float32, no TF32).
 */
#ifndef DLA_PLUGIN_CUDA_CONV_ENGINE_H
#define DLA_PLUGIN_CUDA_CONV_ENGINE_H

#include "plugins/cuda/libs.h"

#include <dlaccel/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tensors and convolution as cuDNN's descriptors take them: row-major
 * dims and strides of x, w and y (nd of each), and the convolution's ns
 * spatial paddings, strides and dilations. */
typedef struct dla__cu_conv_shape {
    int nd, ns;
    int64_t x[5], xs[5], w[5], ws[5], y[5], ys[5];
    int64_t pad[3], stride[3], dil[3];
} dla__cu_conv_shape;

/* An execution plan kept for a shape. */
typedef struct dla__cu_conv_plan {
    cudnnBackendDescriptor_t plan;
    size_t workspace;
    int64_t align; /* the byte alignment its tensors were declared with */
    int64_t engine; /* the engine's global index, for the log */
    /* The descriptors the plan was made from (tensors, convolution,
     * operation, graph, heuristics, configurations), kept as long as it:
     * the backend API does not say a plan outlives them. */
    cudnnBackendDescriptor_t owned[20];
} dla__cu_conv_plan;

/* Builds the graph of one convolution (dir: 0 forward, 1 backward data,
 * 2 backward filter; dtype's data, float or double), asks the heuristics
 * for engines, and times each one that keeps the legacy path's arithmetic
 * (no tensor cores unless tf32; deterministic only; workspace within
 * ws_bytes) over x, w and y on stream. *best: the fastest, when it beats
 * beat_ms (a negative beat_ms: any), else NULL; *best_ms its time. A
 * failure is no error: the legacy algorithm runs. */
void dla__cu_conv_engine_find(const dla__cu_dnn *L, cudnnHandle_t h, cudaStream_t stream, int dir,
                              dla_dtype dtype, const dla__cu_conv_shape *g, int tf32, char *x,
                              char *w, char *y, void *ws, size_t ws_bytes, float beat_ms,
                              int device, dla__cu_conv_plan **best, float *best_ms);

/* Whether plan may run on these addresses (their alignment). */
int dla__cu_conv_engine_fits(const dla__cu_conv_plan *pl, const char *x, const char *w,
                             const char *y);

/* Runs pl over x, w and y with workspace ws (pl->workspace bytes). */
cudnnStatus_t dla__cu_conv_engine_run(const dla__cu_dnn *L, cudnnHandle_t h,
                                      const dla__cu_conv_plan *pl, char *x, char *w, char *y,
                                      void *ws);

void dla__cu_conv_engine_free(const dla__cu_dnn *L, dla__cu_conv_plan *pl);

#ifdef __cplusplus
}
#endif

#endif

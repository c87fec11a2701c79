/*
 * conv_kern.h - the cuda plugin's own convolution kernels (conv_kernels.cu):
 * the direct kernels every convolution can run on (those cuDNN cannot
 * express, or all when cuDNN is missing), the bias add after a cuDNN
 * forward, and gemm's scaling of C when A and B take no part.
 *
 * Plain C structs only (the plugin kit stays in the .c files): conv.c
 * copies the kit's checked geometry (dla_kit_conv) into dla__cu_conv_geom.
 * Results are deterministic: every element is one thread's (or for
 * backward filter one block's) sum, in a fixed order, without atomics.
 */
#ifndef DLA_PLUGIN_CUDA_CONV_KERN_H
#define DLA_PLUGIN_CUDA_CONV_KERN_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The geometry of dla_kit_conv (element strides; spatial dims past
 * nspatial have size 1), the operands' bases already at their offsets. */
typedef struct dla__cu_conv_geom {
    int64_t in[3], out[3], fs[3], st[3], dl[3], pb[3];
    int64_t batch, C, F, G, Cg, Fg;
    int64_t ntaps, in_px, out_px;
    int64_t xs[3], xc, xb;
    int64_t ws[3], wc, wf, wg;
    int64_t ys[3], yf, yb;
    int64_t bs; /* the bias' stride */
} dla__cu_conv_geom;

/* Threads per block of the backward-filter reduction. */
#define DLA__CU_CONV_RED_THREADS 256

/* y = conv(x, w) (+ bias[f] when bias is not NULL): one thread per y
 * element, blocks of 256 threads, a grid-stride loop. */
void dla__cu_conv_fwd_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                             void *y, const void *x, const void *w, const void *bias);
/* x = dL/dx: one thread per x element summing the (output, tap) pairs
 * that read it. */
void dla__cu_conv_bwd_data_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                                  void *x, const void *y, const void *w);
/* w = dL/dw: one block per weight element (grid-stride over them) of
 * DLA__CU_CONV_RED_THREADS threads reducing over batch and outputs. */
void dla__cu_conv_bwd_filter_launch(cudaStream_t s, unsigned blocks, int f64,
                                    dla__cu_conv_geom g, void *w, const void *x, const void *y);
/* y[.., f, b] += bias[f * g.bs] over y (cuDNN's forward then the bias). */
void dla__cu_conv_bias_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                              void *y, const void *bias);

/* One m x n page of C (leading dimension ldc): C = beta * C, or 0 where
 * beta == 0 (C not read). */
void dla__cu_gemm_scale_launch(cudaStream_t s, unsigned blocks, int f64, void *c, int64_t m,
                               int64_t n, int64_t ldc, double beta);

#ifdef __cplusplus
}
#endif
#endif

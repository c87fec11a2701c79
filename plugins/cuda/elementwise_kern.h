/*
 * elementwise_kern.h - the launchers of elementwise_kernels.cu (unary, binary,
 * ternary where), which elementwise.c calls once the kit has checked the
 * arguments
 * (C linkage). Each takes the coalesced space and its views
 * (dla__cu_space_of, cu.h) by value, enqueues on stream and returns the
 * launch's error (cudaGetLastError); nothing is launched for an empty
 * space.
 */
#ifndef DLA_PLUGIN_CUDA_ELEMENTWISE_KERN_H
#define DLA_PLUGIN_CUDA_ELEMENTWISE_KERN_H

#include "plugins/cuda/cu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = op(x) (dla_unary_op; f64 nonzero for
 * double, alpha and beta rounded to the type there). */
cudaError_t dla__cu_launch_unary(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                 const dla__cu_vw *y, const dla__cu_vw *x, int op, int f64,
                                 double alpha, double beta);

/* z = op(a, b) (dla_binary_op); a comparison writes z as bytes 0/1. */
cudaError_t dla__cu_launch_binary(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                  const dla__cu_vw *z, const dla__cu_vw *a, const dla__cu_vw *b,
                                  int op, int f64);

/* z = cond ? a : b, cond bytes (nonzero true). */
cudaError_t dla__cu_launch_where(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                 const dla__cu_vw *z, const dla__cu_vw *cond, const dla__cu_vw *a,
                                 const dla__cu_vw *b, int f64);

#ifdef __cplusplus
}
#endif
#endif

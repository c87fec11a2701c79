/*
 * elementwise_kern.h - the launchers of copy_kernels.cu,
 * elementwise_kernels.cu and random_kernels.cu (C linkage), which the C
 * files copy.c, elementwise.c and random.c call once the kit has checked
 * the arguments. Each takes the coalesced space and its views
 * (dla__cu_space_of, cu.h) by value, enqueues on stream and returns the
 * launch's error (cudaGetLastError) as a cudaError_t; nothing is launched
 * for an empty space.
 */
#ifndef DLA_PLUGIN_CUDA_ELEMENTWISE_KERN_H
#define DLA_PLUGIN_CUDA_ELEMENTWISE_KERN_H

#include "plugins/cuda/cu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* copy_kernels.cu: every element of vw[0] set to the bit pattern bits
 * (esize 1, 4 or 8 bytes, the low bytes of bits). */
cudaError_t dla__cu_launch_fill(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, int esize, uint64_t bits);

/* y = x, elements of esize 1, 4 or 8 bytes. */
cudaError_t dla__cu_launch_copy(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, const dla__cu_vw *x, int esize);

/* y = (to) x, from and to dla_dtype values (F32 F64 I32 U8 BOOL) with the
 * ABI's rules; cudaErrorInvalidValue for a pair it does not know. */
cudaError_t dla__cu_launch_cast(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, const dla__cu_vw *x, int to, int from);

/* elementwise_kernels.cu: y = op(x) (dla_unary_op; f64 nonzero for
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

/* random_kernels.cu: element i of the space (its column-major position
 * over y's dims) from the Philox stream (seed, counter), as
 * dla_random_args says; normal nonzero for the normals. */
cudaError_t dla__cu_launch_random(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                  const dla__cu_vw *y, int normal, int f64, uint64_t seed,
                                  uint64_t counter);

#ifdef __cplusplus
}
#endif
#endif

/*
 * random_kern.h - the launcher of random_kernels.cu, which random.c calls once
 * the kit has checked the arguments
 * (C linkage). Each takes the coalesced space and its views
 * (dla__cu_space_of, cu.h) by value, enqueues on stream and returns the
 * launch's error (cudaGetLastError); nothing is launched for an empty
 * space.
 */
#ifndef DLA_PLUGIN_CUDA_RANDOM_KERN_H
#define DLA_PLUGIN_CUDA_RANDOM_KERN_H

#include "plugins/cuda/cu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element i of the space (its column-major position over y's dims) from
 * the Philox stream (seed, counter), as dla_random_args says; normal
 * nonzero for the normals. One thread per block of the stream (4 elements
 * for uniform single, else 2): blocks is the grid for that many. */
cudaError_t dla__cu_launch_random(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                  const dla__cu_vw *y, int normal, int f64, uint64_t seed,
                                  uint64_t counter);

#ifdef __cplusplus
}
#endif
#endif

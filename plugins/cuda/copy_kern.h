/*
 * copy_kern.h - the launchers of copy_kernels.cu (fill, strided copy, cast),
 * which copy.c calls once the kit has checked the arguments
 * (C linkage). Each takes the coalesced space and its views
 * (dla__cu_space_of, cu.h) by value, enqueues on stream and returns the
 * launch's error (cudaGetLastError); nothing is launched for an empty
 * space.
 */
#ifndef DLA_PLUGIN_CUDA_COPY_KERN_H
#define DLA_PLUGIN_CUDA_COPY_KERN_H

#include "plugins/cuda/cu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every element of y set to the bit pattern bits (esize 1, 4 or 8
 * bytes, the low bytes of bits). */
cudaError_t dla__cu_launch_fill(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, int esize, uint64_t bits);

/* y = x, elements of esize 1, 4 or 8 bytes. */
cudaError_t dla__cu_launch_copy(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, const dla__cu_vw *x, int esize);

/* y = (to) x, from and to dla_dtype values (F32 F64 I32 U8 BOOL) with the
 * ABI's rules; cudaErrorInvalidValue for a pair it does not know. */
cudaError_t dla__cu_launch_cast(cudaStream_t stream, unsigned blocks, const dla__cu_space *sp,
                                const dla__cu_vw *y, const dla__cu_vw *x, int to, int from);

/* Byte copies of up to DLA__CU_COPIES regions in one launch (a planned
 * replay's inputs into its graph's memory, and its results out: plan.c).
 * Regions do not overlap each other's destinations. */
#define DLA__CU_COPIES 64
typedef struct dla__cu_copies {
    int32_t n;
    const char *src[DLA__CU_COPIES];
    char *dst[DLA__CU_COPIES];
    int64_t bytes[DLA__CU_COPIES];
} dla__cu_copies;
cudaError_t dla__cu_launch_copies(cudaStream_t stream, unsigned blocks, const dla__cu_copies *c);

#ifdef __cplusplus
}
#endif
#endif

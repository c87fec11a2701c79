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

/* The block's byte copies, written once as device code in a macro (no
 * directive in its text: _Pragma): kern.cuh expands it for the plugin's
 * kernels, and onekern_source.c stringifies it into a compiled one
 * kernel's source, so both copy with the same loops.
 *
 * dla__cu_copy_units: units first, first + stride, ... of a copy of n
 * units of type U, four of a thread's loaded before the first is stored:
 * a copy's time is the loads' latency (a few hundred cycles each), and a
 * thread that stored each unit before loading the next would wait for
 * every one in turn. dla__cu_copy_region: a byte copy by threads first,
 * first + stride, ...: 16 bytes a unit where source, destination and size
 * allow it, else 4, else 1. dla__cu_deal_regions: the block's share of
 * the regions of copies c (n, bytes[]): a region of at most small bytes
 * is one group's of lanes threads (the small ones dealt round the groups
 * in turn), a larger one the whole block's, after them; region(r, first,
 * stride) copies region r by those threads. Region by region, each small
 * one would cost the block a load's latency (the tiny MLP's step has
 * eleven); so they are all in flight at once. */
#define DLA__CU_COPY_ID(...) __VA_ARGS__
#define DLA__CU_COPY_FRAME(X)                                                                      \
    X(template <typename U> __device__ __forceinline__ void dla__cu_copy_units(                   \
          char *dst, const char *src, long long n, long long first, long long stride) {            \
        for (long long i = first; i < n; i += 4 * stride) {                                        \
            U v[4];                                                                                \
            _Pragma("unroll") for (int k = 0; k < 4; k++) if (i + k * stride < n) v[k] =           \
                ((const U *)src)[i + k * stride];                                                  \
            _Pragma("unroll") for (int k = 0; k < 4; k++) if (i + k * stride < n)(                 \
                (U *)dst)[i + k * stride] = v[k];                                                  \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
      __device__ __forceinline__ void dla__cu_copy_region(char *dst, const char *src,              \
                                                          long long bytes, long long first,        \
                                                          long long stride) {                      \
          const unsigned long long align = (unsigned long long)src | (unsigned long long)dst |     \
                                           (unsigned long long)bytes;                              \
          if (align % 16 == 0)                                                                     \
              dla__cu_copy_units<int4>(dst, src, bytes / 16, first, stride);                       \
          else if (align % 4 == 0)                                                                 \
              dla__cu_copy_units<int>(dst, src, bytes / 4, first, stride);                         \
          else                                                                                     \
              dla__cu_copy_units<char>(dst, src, bytes, first, stride);                            \
      }                                                                                            \
                                                                                                   \
      template <class C, class F>                                                                  \
      __device__ __forceinline__ void dla__cu_deal_regions(const C &c, unsigned lanes,             \
                                                           long long small, F region) {            \
          const unsigned group = threadIdx.x / lanes, groups = blockDim.x / lanes;                 \
          unsigned nsmall = 0;                                                                     \
          for (int r = 0; r < c.n; r++)                                                            \
              if (c.bytes[r] <= small && nsmall++ % groups == group)                               \
                  region(r, (long long)(threadIdx.x % lanes), (long long)lanes);                   \
          for (int r = 0; r < c.n; r++)                                                            \
              if (c.bytes[r] > small)                                                              \
                  region(r, (long long)threadIdx.x, (long long)blockDim.x);                        \
      })

#endif

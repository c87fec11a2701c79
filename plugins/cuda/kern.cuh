/*
 * kern.cuh - what the cuda plugin's kernels share (CUDA C++ only): the
 * grid-stride loop and the walk from a linear position of a coalesced
 * space (cu.h's dla__cu_space) to each view's element offset.
 *
 * Positions and offsets are 64-bit: a view may address more than 2^31
 * elements. The walk divides once per coalesced dim, and dense views of
 * one layout coalesce to one dim, so the common case costs one division.
 */
#ifndef DLA_PLUGIN_CUDA_KERN_CUH
#define DLA_PLUGIN_CUDA_KERN_CUH

#include "plugins/cuda/copy_kern.h"
#include "plugins/cuda/cu.h"

/* The space and N views over it, passed by value as one kernel argument. */
template <int N> struct dla__cu_views {
    dla__cu_space sp;
    dla__cu_vw v[N];
};

/* Grid-stride loop over 0 .. n-1. */
#define DLA__CU_FOR(i, n)                                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n);             \
         i += (int64_t)gridDim.x * blockDim.x)

/* off[k] = element offset of position i in view k (column-major over the
 * space's dims). */
template <int N>
__device__ __forceinline__ void dla__cu_locate(const dla__cu_views<N> &a, int64_t i, int64_t *off)
{
#pragma unroll
    for (int k = 0; k < N; k++)
        off[k] = 0;
    if (a.sp.nd == 1) {
#pragma unroll
        for (int k = 0; k < N; k++)
            off[k] = i * a.v[k].st[0];
        return;
    }
    /* 32-bit division where the space allows it (several times cheaper
     * than 64-bit on the GPU), and none for the last dim. The dims are
     * walked with constant indices (unrolled, each guarded), so the
     * space's constants are operands read from the parameter bank: an
     * index known only at run time makes each one a load of its own. */
    const int last = a.sp.nd - 1;
    if (a.sp.n <= 0x7fffffffLL) {
        unsigned u = (unsigned)i;
#pragma unroll
        for (int d = 0; d < DLA__CU_MAXD; d++) {
            if (d < last) {
                /* u / n as fastdiv.h's multiply-high and shift */
                const unsigned n = (unsigned)a.sp.dims[d];
                const unsigned q = (__umulhi(u, a.sp.mul[d]) + u) >> a.sp.shift[d], r = u - q * n;
                u = q;
#pragma unroll
                for (int k = 0; k < N; k++)
                    off[k] += (int64_t)r * a.v[k].st[d];
            } else if (d == last) {
#pragma unroll
                for (int k = 0; k < N; k++)
                    off[k] += (int64_t)u * a.v[k].st[d];
            }
        }
        return;
    }
#pragma unroll
    for (int d = 0; d < DLA__CU_MAXD; d++) {
        if (d < last) {
            const int64_t n = a.sp.dims[d];
            const int64_t q = i / n, r = i - q * n;
            i = q;
#pragma unroll
            for (int k = 0; k < N; k++)
                off[k] += r * a.v[k].st[d];
        } else if (d == last) {
#pragma unroll
            for (int k = 0; k < N; k++)
                off[k] += i * a.v[k].st[d];
        }
    }
}

/* Element k of view v of type T at offset off. */
template <typename T> __device__ __forceinline__ T *dla__cu_elem(const dla__cu_vw &v, int64_t off)
{
    return (T *)v.base + off;
}

/* dla__cu_copy_units and dla__cu_copy_region (copy_kern.h). */
DLA__CU_COPY_FRAME(DLA__CU_COPY_ID)

/* The grid's share of a byte copy (a planned replay's regions in and out:
 * copy_kernels.cu). */
__device__ __forceinline__ void dla__cu_copy_bytes(char *dst, const char *src, int64_t bytes)
{
    dla__cu_copy_region(dst, src, bytes, (int64_t)blockIdx.x * blockDim.x + threadIdx.x,
                        (int64_t)gridDim.x * blockDim.x);
}

#endif

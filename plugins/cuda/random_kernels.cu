/*
 * random_kernels.cu - the Philox stream (dlaccel/plugin_philox.h, the
 * text the cpu plugin and the host compile) on the GPU: one thread per
 * block of the stream, writing the 4 (uniform single) or 2 elements that
 * block gives. Element i is the i-th position of the coalesced space,
 * which is its column-major position over y's dims (coalescing only drops
 * dims of 1 and merges neighbours, never reorders), whatever the memory
 * order. Built with --fmad=false: the normals' polynomials must round
 * every operation once, as on the host.
 */
#include "plugins/cuda/random_kern.h"
#include "plugins/cuda/kern.cuh"

#include <stdint.h>

#define DLA_PHILOX_FN static __device__ __forceinline__
#include <dlaccel/plugin_philox.h>

namespace {

/* NORMAL: the Box-Muller pair; else the uniforms of T. */
template <typename T, int NORMAL>
__global__ void random_k(dla__cu_views<1> a, int64_t nblocks, uint64_t seed, uint64_t counter)
{
    const int per = NORMAL || sizeof(T) == 8 ? 2 : 4;
    DLA__CU_FOR(b, nblocks)
    {
        uint32_t r[4];
        dla_px_block(seed, counter + (uint64_t)b, r);
        T v[4];
        if (NORMAL) {
            double z0, z1;
            dla_px_normal_pair(r, &z0, &z1);
            v[0] = (T)z0;
            v[1] = (T)z1;
        } else if (sizeof(T) == 8) {
            v[0] = (T)dla_px_u53(r[0], r[1]);
            v[1] = (T)dla_px_u53(r[2], r[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                v[j] = (T)dla_px_u24(r[j]);
        }
        for (int j = 0; j < per; j++) {
            const int64_t i = b * per + j;
            if (i >= a.sp.n)
                break;
            int64_t off[1];
            dla__cu_locate<1>(a, i, off);
            *dla__cu_elem<T>(a.v[0], off[0]) = v[j];
        }
    }
}

} // namespace

extern "C" cudaError_t dla__cu_launch_random(cudaStream_t stream, unsigned blocks,
                                             const dla__cu_space *sp, const dla__cu_vw *y,
                                             int normal, int f64, uint64_t seed, uint64_t counter)
{
    if (sp->n <= 0)
        return cudaSuccess;
    dla__cu_views<1> a;
    a.sp = *sp;
    a.v[0] = *y;
    const int per = normal || f64 ? 2 : 4;
    const int64_t nblocks = (sp->n + per - 1) / per;
    if (normal && f64)
        random_k<double, 1><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, nblocks, seed, counter);
    else if (normal)
        random_k<float, 1><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, nblocks, seed, counter);
    else if (f64)
        random_k<double, 0><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, nblocks, seed, counter);
    else
        random_k<float, 0><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, nblocks, seed, counter);
    return cudaGetLastError();
}

/*
 * index_kernels.cu - gather and scatter_add along one dim.
 *
 * The slice (y and x with the dim cut to 1) is a coalesced space of
 * index.c's making; a step along the dim is ystep in y, xstep in x.
 * gather: one thread per (slice element, position i), neighbouring threads
 * on neighbouring slice elements; it moves the element's bytes (1, 4 or
 * 8), so every dtype goes. scatter_add: one thread per (slice element,
 * target group); a group is a target and its positions in increasing
 * order (index.c groups them on the host), so repeated positions add up
 * in order of i without atomics, in the dtype, as the cpu plugin adds.
 * Both skip a position outside the target dim (index.c refuses those
 * before launching; the kernels never address outside the operands).
 */
#include "plugins/cuda/index_kern.h"

#include <cuda_runtime.h>
#include <stdint.h>

#define INDEX_THREADS 256

#define INDEX_FOR(i, n)                                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n);             \
         i += (int64_t)gridDim.x * blockDim.x)

/* Offsets in y and x of slice element s. */
__device__ __forceinline__ void slice_locate(const dla__cu_index_geom &g, int64_t s, int64_t *yo,
                                             int64_t *xo)
{
    if (g.nd == 1) {
        *yo = s * g.yst[0], *xo = s * g.xst[0];
        return;
    }
    int64_t a = 0, b = 0;
    for (int d = 0; d < g.nd; d++) {
        const int64_t n = g.dims[d];
        const int64_t q = s / n, r = s - q * n;
        s = q;
        a += r * g.yst[d], b += r * g.xst[d];
    }
    *yo = a, *xo = b;
}

template <typename E>
__global__ void gather_kernel(const dla__cu_index_geom g, E *y, const E *x, const int32_t *idx,
                              int64_t istep)
{
    INDEX_FOR(t, g.n * g.len)
    {
        const int64_t i = t / g.n, s = t - i * g.n;
        const int32_t at = idx[i * istep];
        if (at < 0 || (int64_t)at >= g.target)
            continue;
        int64_t yo, xo;
        slice_locate(g, s, &yo, &xo);
        y[yo + i * g.ystep] = x[xo + (int64_t)at * g.xstep];
    }
}

template <typename T>
__global__ void scatter_kernel(const dla__cu_index_geom g, T *y, const T *x,
                               const int32_t *targets, const int32_t *start, const int32_t *list,
                               int64_t groups)
{
    INDEX_FOR(t, g.n * groups)
    {
        const int64_t u = t / g.n, s = t - u * g.n;
        const int32_t at = targets[u];
        if (at < 0 || (int64_t)at >= g.target)
            continue;
        int64_t yo, xo;
        slice_locate(g, s, &yo, &xo);
        T *dst = y + yo + (int64_t)at * g.ystep;
        T acc = *dst;
        for (int32_t j = start[u]; j < start[u + 1]; j++)
            acc = acc + x[xo + (int64_t)list[j] * g.xstep];
        *dst = acc;
    }
}

extern "C" cudaError_t dla__cu_gather_launch(const dla__cu_index_geom *g, char *y, const char *x,
                                             const int32_t *idx, int64_t istep, unsigned grid,
                                             cudaStream_t stream)
{
    switch (g->elem) {
    case 1:
        gather_kernel<uint8_t><<<grid, INDEX_THREADS, 0, stream>>>(*g, (uint8_t *)y,
                                                                   (const uint8_t *)x, idx, istep);
        break;
    case 2:
        gather_kernel<uint16_t><<<grid, INDEX_THREADS, 0, stream>>>(
            *g, (uint16_t *)y, (const uint16_t *)x, idx, istep);
        break;
    case 4:
        gather_kernel<uint32_t><<<grid, INDEX_THREADS, 0, stream>>>(
            *g, (uint32_t *)y, (const uint32_t *)x, idx, istep);
        break;
    case 8:
        gather_kernel<uint64_t><<<grid, INDEX_THREADS, 0, stream>>>(
            *g, (uint64_t *)y, (const uint64_t *)x, idx, istep);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_scatter_add_launch(const dla__cu_index_geom *g, int f64, char *y,
                                                  const char *x, const int32_t *targets,
                                                  const int32_t *start, const int32_t *list,
                                                  int64_t groups, unsigned grid,
                                                  cudaStream_t stream)
{
    if (f64)
        scatter_kernel<double><<<grid, INDEX_THREADS, 0, stream>>>(
            *g, (double *)y, (const double *)x, targets, start, list, groups);
    else
        scatter_kernel<float><<<grid, INDEX_THREADS, 0, stream>>>(
            *g, (float *)y, (const float *)x, targets, start, list, groups);
    return cudaGetLastError();
}

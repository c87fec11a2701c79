/*
 * pool_kernels.cu - max and average pooling over 1 to 3 spatial dims,
 * forward and backward.
 *
 * Operands are five logical dims (s0 s1 s2 channels batch) with the
 * strides of their views (the plugin kit's dla_kit_pool); a plane is one
 * (channel, batch) pair. Forward is one thread per y element. Backward is
 * one thread per x element, which gathers from the windows that cover it
 * (in increasing output order; averages as dy / count, the cpu plugin's
 * rounding), so overlapping windows need no atomics and the result is the
 * same on every run. A max index that does not name this element adds
 * nothing; the forward never writes such an index.
 */
#include "plugins/cuda/pool_kern.h"

#include <cuda_runtime.h>
#include <stdint.h>

#define POOL_THREADS 256

__device__ __forceinline__ int64_t plane_off(const dla__cu_pool_geom &g, const int64_t *s,
                                             int64_t p)
{
    const int64_t b = p / g.channels;
    return (p - b * g.channels) * s[3] + b * s[4];
}

/* Inputs [*lo, *hi) under the window at output o along dim d. */
__device__ __forceinline__ void window_range(const dla__cu_pool_geom &g, int d, int64_t o,
                                             int64_t *lo, int64_t *hi)
{
    const int64_t start = o * g.stride[d] - g.pad[d];
    *lo = start > 0 ? start : 0;
    *hi = start + g.win[d] < g.in[d] ? start + g.win[d] : g.in[d];
}

/* Outputs [*lo, *hi) whose windows cover input i along dim d. */
__device__ __forceinline__ void cover_range(const dla__cu_pool_geom &g, int d, int64_t i,
                                            int64_t *lo, int64_t *hi)
{
    const int64_t p = i + g.pad[d], s = g.stride[d];
    const int64_t first = p - g.win[d] + 1 <= 0 ? 0 : (p - g.win[d] + 1 + s - 1) / s;
    const int64_t last = p / s + 1;
    *lo = first;
    *hi = last < g.out[d] ? last : g.out[d];
}

__device__ __forceinline__ int64_t window_count(const dla__cu_pool_geom &g, int64_t o0,
                                                int64_t o1, int64_t o2)
{
    if (!g.exclude_pad)
        return g.full;
    int64_t a0, b0, a1, b1, a2, b2;
    window_range(g, 0, o0, &a0, &b0);
    window_range(g, 1, o1, &a1, &b1);
    window_range(g, 2, o2, &a2, &b2);
    return (b0 - a0) * (b1 - a1) * (b2 - a2);
}

#define POOL_FOR(i, n)                                                                             \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)(n);             \
         i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ void pool_max(const dla__cu_pool_geom g, T *y, const T *x, int32_t *index)
{
    const int64_t opx = g.out[0] * g.out[1] * g.out[2];
    POOL_FOR(gid, g.planes * opx)
    {
        const int64_t p = gid / opx, r = gid - p * opx;
        const int64_t o0 = r % g.out[0], o1 = r / g.out[0] % g.out[1];
        const int64_t o2 = r / (g.out[0] * g.out[1]);
        int64_t lo0, hi0, lo1, hi1, lo2, hi2;
        window_range(g, 0, o0, &lo0, &hi0);
        window_range(g, 1, o1, &lo1, &hi1);
        window_range(g, 2, o2, &lo2, &hi2);
        const T *xb = x + g.xoff + plane_off(g, g.xs, p);
        T best = 0;
        int64_t pos = -1;
        for (int64_t i2 = lo2; i2 < hi2; i2++)
            for (int64_t i1 = lo1; i1 < hi1; i1++)
                for (int64_t i0 = lo0; i0 < hi0; i0++) {
                    const T v = xb[i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]];
                    if (pos < 0 || v > best || (isnan(v) && !isnan(best))) {
                        best = v;
                        pos = (i2 * g.in[1] + i1) * g.in[0] + i0;
                    }
                }
        y[g.yoff + plane_off(g, g.ys, p) + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2]] = best;
        if (index)
            index[g.ioff + plane_off(g, g.is, p) + o0 * g.is[0] + o1 * g.is[1] + o2 * g.is[2]] =
                (int32_t)pos;
    }
}

template <typename T> __global__ void pool_avg(const dla__cu_pool_geom g, T *y, const T *x)
{
    const int64_t opx = g.out[0] * g.out[1] * g.out[2];
    POOL_FOR(gid, g.planes * opx)
    {
        const int64_t p = gid / opx, r = gid - p * opx;
        const int64_t o0 = r % g.out[0], o1 = r / g.out[0] % g.out[1];
        const int64_t o2 = r / (g.out[0] * g.out[1]);
        int64_t lo0, hi0, lo1, hi1, lo2, hi2;
        window_range(g, 0, o0, &lo0, &hi0);
        window_range(g, 1, o1, &lo1, &hi1);
        window_range(g, 2, o2, &lo2, &hi2);
        const T *xb = x + g.xoff + plane_off(g, g.xs, p);
        double sum = 0;
        for (int64_t i2 = lo2; i2 < hi2; i2++)
            for (int64_t i1 = lo1; i1 < hi1; i1++)
                for (int64_t i0 = lo0; i0 < hi0; i0++)
                    sum += (double)xb[i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]];
        const int64_t count = g.exclude_pad ? (hi0 > lo0 ? hi0 - lo0 : 0) *
                                                  (hi1 > lo1 ? hi1 - lo1 : 0) *
                                                  (hi2 > lo2 ? hi2 - lo2 : 0)
                                            : g.full;
        y[g.yoff + plane_off(g, g.ys, p) + o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2]] =
            (T)(count > 0 ? sum / (double)count : 0.0);
    }
}

template <typename T>
__global__ void pool_back(const dla__cu_pool_geom g, int is_max, T *x, const T *y,
                          const int32_t *index)
{
    const int64_t ipx = g.in[0] * g.in[1] * g.in[2];
    POOL_FOR(gid, g.planes * ipx)
    {
        const int64_t p = gid / ipx, r = gid - p * ipx;
        const int64_t i0 = r % g.in[0], i1 = r / g.in[0] % g.in[1];
        const int64_t i2 = r / (g.in[0] * g.in[1]);
        int64_t lo0, hi0, lo1, hi1, lo2, hi2;
        cover_range(g, 0, i0, &lo0, &hi0);
        cover_range(g, 1, i1, &lo1, &hi1);
        cover_range(g, 2, i2, &lo2, &hi2);
        const int64_t here = r; /* (i2 in1 + i1) in0 + i0 */
        const T *yb = y ? y + g.yoff + plane_off(g, g.ys, p) : y;
        const int32_t *ib = index ? index + g.ioff + plane_off(g, g.is, p) : index;
        T sum = 0;
        for (int64_t o2 = lo2; o2 < hi2; o2++)
            for (int64_t o1 = lo1; o1 < hi1; o1++)
                for (int64_t o0 = lo0; o0 < hi0; o0++) {
                    if (is_max) {
                        if ((int64_t)ib[o0 * g.is[0] + o1 * g.is[1] + o2 * g.is[2]] == here)
                            sum += yb[o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2]];
                    } else {
                        sum += yb[o0 * g.ys[0] + o1 * g.ys[1] + o2 * g.ys[2]] /
                               (T)window_count(g, o0, o1, o2);
                    }
                }
        x[g.xoff + plane_off(g, g.xs, p) + i0 * g.xs[0] + i1 * g.xs[1] + i2 * g.xs[2]] = sum;
    }
}

extern "C" cudaError_t dla__cu_pool_forward_launch(const dla__cu_pool_geom *g, int is_max,
                                                   int f64, char *y, const char *x,
                                                   int32_t *index, unsigned grid,
                                                   cudaStream_t stream)
{
    if (is_max) {
        if (f64)
            pool_max<double><<<grid, POOL_THREADS, 0, stream>>>(*g, (double *)y,
                                                               (const double *)x, index);
        else
            pool_max<float><<<grid, POOL_THREADS, 0, stream>>>(*g, (float *)y, (const float *)x,
                                                              index);
    } else {
        if (f64)
            pool_avg<double><<<grid, POOL_THREADS, 0, stream>>>(*g, (double *)y,
                                                               (const double *)x);
        else
            pool_avg<float><<<grid, POOL_THREADS, 0, stream>>>(*g, (float *)y, (const float *)x);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_pool_backward_launch(const dla__cu_pool_geom *g, int is_max,
                                                    int f64, char *x, const char *y,
                                                    const int32_t *index, unsigned grid,
                                                    cudaStream_t stream)
{
    if (f64)
        pool_back<double><<<grid, POOL_THREADS, 0, stream>>>(*g, is_max, (double *)x,
                                                            (const double *)y, index);
    else
        pool_back<float><<<grid, POOL_THREADS, 0, stream>>>(*g, is_max, (float *)x,
                                                           (const float *)y, index);
    return cudaGetLastError();
}

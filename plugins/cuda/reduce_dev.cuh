/*
 * reduce_dev.cuh - the reduce kernels' device code (CUDA C++ only): the
 * walk from an output to its offsets and from a reduced position to its
 * element, the parts, the NaN-aware comparison, and every kernel's body:
 * reduce_kernels.cu launches them, onekern_kernels.cu runs shape 1's as
 * steps of a one-kernel replay with the same bits, and
 * tests/cuda_fused_emu runs them all on the CPU.
 */
#ifndef DLA_PLUGIN_CUDA_REDUCE_DEV_CUH
#define DLA_PLUGIN_CUDA_REDUCE_DEV_CUH

#include "plugins/cuda/reduce_kern.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Offsets in x, y and index of output o. */
__device__ __forceinline__ void red_output(const dla__cu_red_geom &g, int64_t o, int64_t *xo,
                                           int64_t *yo, int64_t *io)
{
    int64_t a = g.xoff, b = g.yoff, c = g.ioff;
    /* Constant dim indices (unrolled, guarded): the geometry's values are
     * then operands from the parameter bank, not a load each. */
#pragma unroll
    for (int d = 0; d < DLA__CU_RD; d++)
        if (d < g.nk) {
            const int64_t n = g.kd[d];
            const int64_t q = o / n, i = o - q * n;
            o = q;
            a += i * g.kx[d], b += i * g.ky[d], c += i * g.ki[d];
        }
    *xo = a, *yo = b, *io = c;
}

/* Offset in x of reduced position p, from the output's offset. */
__device__ __forceinline__ int64_t red_pos(const dla__cu_red_launch &l, int64_t p)
{
    const dla__cu_red_geom &g = l.g;
    if (g.nr == 1)
        return p * g.rx[0];
    int64_t off = 0;
    if (l.rfast) {
        /* Positions in 31 bits: a multiply-high and a shift a dim. */
        unsigned u = (unsigned)p;
#pragma unroll
        for (int d = 0; d < DLA__CU_RD; d++)
            if (d < g.nr) {
                const unsigned n = (unsigned)g.rd[d];
                const unsigned q = (__umulhi(u, l.rmul[d]) + u) >> l.rshift[d];
                off += (int64_t)(u - q * n) * g.rx[d];
                u = q;
            }
        return off;
    }
    if (p <= 0xffffffffLL && g.nred <= 0xffffffffLL) {
        /* 32-bit division where it fits: several times cheaper. */
        unsigned u = (unsigned)p;
#pragma unroll
        for (int d = 0; d < DLA__CU_RD; d++)
            if (d < g.nr) {
                const unsigned n = (unsigned)g.rd[d], q = u / n;
                off += (int64_t)(u - q * n) * g.rx[d];
                u = q;
            }
        return off;
    }
#pragma unroll
    for (int d = 0; d < DLA__CU_RD; d++)
        if (d < g.nr) {
            const int64_t n = g.rd[d];
            const int64_t q = p / n;
            off += (p - q * n) * g.rx[d];
            p = q;
        }
    return off;
}

/* Positions [*p0, *p1) of part k of parts (contiguous runs, sizes differing
 * by at most one). */
__device__ __forceinline__ void red_part(int64_t nred, int64_t parts, int64_t k, int64_t *p0,
                                         int64_t *p1)
{
    const int64_t q = nred / parts, r = nred % parts;
    *p0 = k * q + (k < r ? k : r);
    *p1 = *p0 + q + (k < r ? 1 : 0);
}

/* red_takes (reduce_kern.h's frame, which a compiled one kernel's source
 * holds too). */
DLA__CU_RED_TAKES_FRAME(DLA__CU_RED_ID)

template <typename T> __device__ __forceinline__ void red_write_sum(const dla__cu_red_launch &l,
                                                                   int64_t yo, double s)
{
    const int mean = l.op == 1;
    ((T *)l.y)[yo] = mean ? (T)(s / (double)l.g.nred) : (T)s;
}

/* Shape 1: one thread per (output, part), each walking its part in order
 * (a grid-stride loop: with one block, as onekern_kernels.cu runs it, a
 * block-stride one). f(o, k, xo, yo, io, p0, p1) takes part k of output
 * o: positions p0 .. p1-1, x's, y's and the index's offsets. */
template <typename F>
__device__ __forceinline__ void red_each_thread_part(const dla__cu_red_launch &l, F f)
{
    const dla__cu_red_geom &g = l.g;
    const int64_t total = g.outputs * l.parts;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = i / g.outputs, o = i - k * g.outputs;
        int64_t xo, yo, io, p0, p1;
        red_output(g, o, &xo, &yo, &io);
        red_part(g.nred, l.parts, k, &p0, &p1);
        f(o, k, xo, yo, io, p0, p1);
    }
}

template <typename T>
__device__ __forceinline__ void red_sum_thread_body(const dla__cu_red_launch &l)
{
    const T *x = (const T *)l.x;
    red_each_thread_part(l, [&](int64_t o, int64_t k, int64_t xo, int64_t yo, int64_t io,
                                int64_t p0, int64_t p1) {
        (void)io;
        double s = 0;
        for (int64_t p = p0; p < p1; p++)
            s += (double)x[xo + red_pos(l, p)];
        if (l.parts > 1)
            ((double *)l.part_v)[o * l.parts + k] = s;
        else
            red_write_sum<T>(l, yo, s);
    });
}

template <bool MAX, typename T>
__device__ __forceinline__ void red_ext_thread_body(const dla__cu_red_launch &l)
{
    const T *x = (const T *)l.x;
    red_each_thread_part(l, [&](int64_t o, int64_t k, int64_t xo, int64_t yo, int64_t io,
                                int64_t p0, int64_t p1) {
        T best = 0;
        int64_t pos = -1;
        for (int64_t p = p0; p < p1; p++) {
            const T v = x[xo + red_pos(l, p)];
            if (red_takes<MAX>(v, p, best, pos))
                best = v, pos = p;
        }
        if (l.parts > 1) {
            ((T *)l.part_v)[o * l.parts + k] = best;
            l.part_i[o * l.parts + k] = pos;
        } else {
            ((T *)l.y)[yo] = best;
            if (l.index)
                l.index[io] = (int32_t)pos;
        }
    });
}

/* Shape 0: one block of THREADS threads per (output, part), striding over
 * the part's positions, four loads in flight a thread (added in the same
 * order), then a tree in sh (THREADS doubles of the block's shared
 * memory). */
template <typename T, int THREADS>
__device__ __forceinline__ void red_sum_block_body(const dla__cu_red_launch &l, double *sh)
{
    const dla__cu_red_geom &g = l.g;
    const T *x = (const T *)l.x;
    const int t = threadIdx.x;
    const int64_t total = g.outputs * l.parts;
    for (int64_t b = blockIdx.x; b < total; b += gridDim.x) {
        const int64_t o = b / l.parts, k = b - o * l.parts;
        int64_t xo, yo, io, p0, p1;
        red_output(g, o, &xo, &yo, &io);
        red_part(g.nred, l.parts, k, &p0, &p1);
        double s = 0;
        int64_t p = p0 + t;
        for (; p + 3 * THREADS < p1; p += 4 * THREADS) {
            const T v0 = x[xo + red_pos(l, p)], v1 = x[xo + red_pos(l, p + THREADS)],
                    v2 = x[xo + red_pos(l, p + 2 * THREADS)],
                    v3 = x[xo + red_pos(l, p + 3 * THREADS)];
            s += (double)v0;
            s += (double)v1;
            s += (double)v2;
            s += (double)v3;
        }
        for (; p < p1; p += THREADS)
            s += (double)x[xo + red_pos(l, p)];
        sh[t] = s;
        __syncthreads();
        for (int w = THREADS / 2; w > 0; w >>= 1) {
            if (t < w)
                sh[t] = sh[t] + sh[t + w];
            __syncthreads();
        }
        if (t == 0) {
            if (l.parts > 1)
                ((double *)l.part_v)[b] = sh[0];
            else
                red_write_sum<T>(l, yo, sh[0]);
        }
        __syncthreads(); /* sh is reused by the next output */
    }
}

/* Shape 0's max / min: the same walk, the tree keeping the first position
 * on ties (shv, shp: THREADS each). */
template <bool MAX, typename T, int THREADS>
__device__ __forceinline__ void red_ext_block_body(const dla__cu_red_launch &l, T *shv,
                                                   int64_t *shp)
{
    const dla__cu_red_geom &g = l.g;
    const T *x = (const T *)l.x;
    const int t = threadIdx.x;
    const int64_t total = g.outputs * l.parts;
    for (int64_t b = blockIdx.x; b < total; b += gridDim.x) {
        const int64_t o = b / l.parts, k = b - o * l.parts;
        int64_t xo, yo, io, p0, p1;
        red_output(g, o, &xo, &yo, &io);
        red_part(g.nred, l.parts, k, &p0, &p1);
        T best = 0;
        int64_t pos = -1;
        for (int64_t p = p0 + t; p < p1; p += THREADS) {
            const T v = x[xo + red_pos(l, p)];
            if (red_takes<MAX>(v, p, best, pos))
                best = v, pos = p;
        }
        shv[t] = best, shp[t] = pos;
        __syncthreads();
        for (int w = THREADS / 2; w > 0; w >>= 1) {
            if (t < w && red_takes<MAX>(shv[t + w], shp[t + w], shv[t], shp[t]))
                shv[t] = shv[t + w], shp[t] = shp[t + w];
            __syncthreads();
        }
        if (t == 0) {
            if (l.parts > 1) {
                ((T *)l.part_v)[b] = shv[0];
                l.part_i[b] = shp[0];
            } else {
                ((T *)l.y)[yo] = shv[0];
                if (l.index)
                    l.index[io] = (int32_t)shp[0];
            }
        }
        __syncthreads();
    }
}

/* parts > 1: each output's parts merged in part order, a thread per
 * output. */
template <typename T> __device__ __forceinline__ void red_sum_combine_body(const dla__cu_red_launch &l)
{
    const dla__cu_red_geom &g = l.g;
    const double *pv = (const double *)l.part_v;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.outputs;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, io;
        red_output(g, o, &xo, &yo, &io);
        double s = 0;
        for (int64_t k = 0; k < l.parts; k++)
            s += pv[o * l.parts + k];
        red_write_sum<T>(l, yo, s);
    }
}

template <bool MAX, typename T>
__device__ __forceinline__ void red_ext_combine_body(const dla__cu_red_launch &l)
{
    const dla__cu_red_geom &g = l.g;
    const T *pv = (const T *)l.part_v;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < g.outputs;
         o += (int64_t)gridDim.x * blockDim.x) {
        int64_t xo, yo, io;
        red_output(g, o, &xo, &yo, &io);
        T best = 0;
        int64_t pos = -1;
        for (int64_t k = 0; k < l.parts; k++) {
            const T v = pv[o * l.parts + k];
            const int64_t at = l.part_i[o * l.parts + k];
            if (red_takes<MAX>(v, at, best, pos))
                best = v, pos = at;
        }
        ((T *)l.y)[yo] = best;
        if (l.index)
            l.index[io] = (int32_t)pos;
    }
}

#endif

/*
 * reduce_kernels.cu - sum, mean, max and min over the reduced dims, with
 * the int32 position of max/min within the reduced block.
 *
 * reduce.c splits x's dims (the plugin kit's dla_kit_reduce) and picks a
 * shape:
 *   shape 0: one block of RED_THREADS threads per (output, part); the
 *     threads stride over the part's positions (neighbouring threads on
 *     neighbouring positions: coalesced when the reduced dims are the fast
 *     ones) and a shared-memory tree merges them;
 *   shape 1: one thread per (output, part), neighbouring threads on
 *     neighbouring outputs (coalesced when the kept dims are the fast
 *     ones), each looping over its part's positions in order.
 * A part is a contiguous run of an output's positions; with parts > 1 the
 * first kernel writes partial results to scratch (output o's part k at o *
 * parts + k) and red_combine merges them in part order.
 *
 * Sums are kept in double (float and double data); the order of additions
 * is fixed by the launch shape, so a result is the same on every run.
 * max/min: the first NaN wins, else the largest (smallest) value at its
 * first position; every merge (tree, parts) compares positions on ties,
 * so the position reported is the first one whatever the shape.
 */
#include "plugins/cuda/reduce_dev.cuh"

#define RED_THREADS 256

/* ------------------------------------------------------------ shape 0 */

template <typename T> __global__ void __launch_bounds__(RED_THREADS)
    red_sum_block(const dla__cu_red_launch l)
{
    __shared__ double sh[RED_THREADS];
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
        /* Four loads in flight a thread, added in the same order. */
        for (; p + 3 * RED_THREADS < p1; p += 4 * RED_THREADS) {
            const T v0 = x[xo + red_pos(l, p)], v1 = x[xo + red_pos(l, p + RED_THREADS)],
                    v2 = x[xo + red_pos(l, p + 2 * RED_THREADS)],
                    v3 = x[xo + red_pos(l, p + 3 * RED_THREADS)];
            s += (double)v0;
            s += (double)v1;
            s += (double)v2;
            s += (double)v3;
        }
        for (; p < p1; p += RED_THREADS)
            s += (double)x[xo + red_pos(l, p)];
        sh[t] = s;
        __syncthreads();
        for (int w = RED_THREADS / 2; w > 0; w >>= 1) {
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

template <bool MAX, typename T> __global__ void __launch_bounds__(RED_THREADS)
    red_ext_block(const dla__cu_red_launch l)
{
    __shared__ T shv[RED_THREADS];
    __shared__ int64_t shp[RED_THREADS];
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
        for (int64_t p = p0 + t; p < p1; p += RED_THREADS) {
            const T v = x[xo + red_pos(l, p)];
            if (red_takes<MAX>(v, p, best, pos))
                best = v, pos = p;
        }
        shv[t] = best, shp[t] = pos;
        __syncthreads();
        for (int w = RED_THREADS / 2; w > 0; w >>= 1) {
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

/* ------------------------------------------------------------ shape 1 */

template <typename T> __global__ void red_sum_thread(const dla__cu_red_launch l)
{
    red_sum_thread_body<T>(l);
}

template <bool MAX, typename T> __global__ void red_ext_thread(const dla__cu_red_launch l)
{
    red_ext_thread_body<MAX, T>(l);
}

/* ------------------------------------------------------------ combine */

template <typename T> __global__ void red_sum_combine(const dla__cu_red_launch l)
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

template <bool MAX, typename T> __global__ void red_ext_combine(const dla__cu_red_launch l)
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

/* ------------------------------------------------------------ launch */

template <typename T> static cudaError_t red_launch_sum(const dla__cu_red_launch *l,
                                                       cudaStream_t st)
{
    if (l->shape == 0)
        red_sum_block<T><<<l->grid, RED_THREADS, 0, st>>>(*l);
    else
        red_sum_thread<T><<<l->grid, RED_THREADS, 0, st>>>(*l);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || l->parts <= 1)
        return e;
    red_sum_combine<T><<<l->combine_grid, RED_THREADS, 0, st>>>(*l);
    return cudaGetLastError();
}

template <bool MAX, typename T>
static cudaError_t red_launch_ext(const dla__cu_red_launch *l, cudaStream_t st)
{
    if (l->shape == 0)
        red_ext_block<MAX, T><<<l->grid, RED_THREADS, 0, st>>>(*l);
    else
        red_ext_thread<MAX, T><<<l->grid, RED_THREADS, 0, st>>>(*l);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || l->parts <= 1)
        return e;
    red_ext_combine<MAX, T><<<l->combine_grid, RED_THREADS, 0, st>>>(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_reduce_launch(const dla__cu_red_launch *l, cudaStream_t stream)
{
    switch (l->op) {
    case 0:
    case 1:
        return l->f64 ? red_launch_sum<double>(l, stream) : red_launch_sum<float>(l, stream);
    case 2:
        return l->f64 ? red_launch_ext<true, double>(l, stream)
                      : red_launch_ext<true, float>(l, stream);
    case 3:
        return l->f64 ? red_launch_ext<false, double>(l, stream)
                      : red_launch_ext<false, float>(l, stream);
    default:
        return cudaErrorInvalidValue;
    }
}

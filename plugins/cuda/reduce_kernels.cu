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

/* ------------------------------------------------------------ kernels
 * (their bodies are reduce_dev.cuh's, which tests/cuda_fused_emu also
 * runs on the CPU, with blocks of fewer threads) */

template <typename T> __global__ void __launch_bounds__(RED_THREADS)
    red_sum_block(const dla__cu_red_launch l)
{
    __shared__ double sh[RED_THREADS];
    red_sum_block_body<T, RED_THREADS>(l, sh);
}

template <bool MAX, typename T> __global__ void __launch_bounds__(RED_THREADS)
    red_ext_block(const dla__cu_red_launch l)
{
    __shared__ T shv[RED_THREADS];
    __shared__ int64_t shp[RED_THREADS];
    red_ext_block_body<MAX, T, RED_THREADS>(l, shv, shp);
}

template <typename T> __global__ void red_sum_thread(const dla__cu_red_launch l)
{
    red_sum_thread_body<T>(l);
}

template <bool MAX, typename T> __global__ void red_ext_thread(const dla__cu_red_launch l)
{
    red_ext_thread_body<MAX, T>(l);
}

template <typename T> __global__ void red_sum_combine(const dla__cu_red_launch l)
{
    red_sum_combine_body<T>(l);
}

template <bool MAX, typename T> __global__ void red_ext_combine(const dla__cu_red_launch l)
{
    red_ext_combine_body<MAX, T>(l);
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

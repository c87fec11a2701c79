/*
 * fused_kernels.cu - the interpreted fused, fused_multi and fused_reduce
 * kernels of the cuda plugin (the frames of fused_kern.h with the
 * interpreter as their evaluator), the parts' combine, and the launchers,
 * which also launch a compiled program's kernels (nvrtc.c) with the same
 * arguments.
 *
 * The interpreter walks the instruction list per element with registers in
 * a small array; every step is a call of plugin_ops.h, the functions the
 * unary, binary and ternary kernels call, and every result is held in T,
 * so a program gives the bits of its steps launched one by one (the
 * whole plugin is compiled with --fmad=false).
 */
#include "plugins/cuda/fused_kern.h"
#include "plugins/cuda/kern.cuh"

#include <dlaccel/plugin_ops.h>

DLA__CU_FUSED_FRAME(DLA__CU_ID)
DLA__CU_FMULTI_FRAME(DLA__CU_ID)

static_assert(sizeof(dla_fviews) == sizeof(dla__cu_views<DLA__CU_FOPS>),
              "dla_fviews is kern.cuh's dla__cu_views<9>");
static_assert(sizeof(dla_fsp) == sizeof(dla__cu_space), "dla_fsp is cu.h's dla__cu_space");
static_assert(sizeof(dla_fvw) == sizeof(dla__cu_vw), "dla_fvw is cu.h's dla__cu_vw");
/* A fused_multi kernel's whole parameter block (the launch's limit is 4
 * KiB on every architecture the plugin is built for). */
static_assert(sizeof(dla_fmviews) + sizeof(dla_fprog) < 4096,
              "a fused_multi kernel's parameters fit in 4 KiB");
static_assert(sizeof(dla_fmviews) == 1328 && sizeof(dla_fprog) == 304,
              "the layouts fused_kern.h describes (1632 bytes of parameters)");
static_assert(DLA__CU_FMOPS == 16 && DLA__CU_FM_X0 == 9 &&
                  DLA__CU_FM_X0 + DLA_FUSED_MAX_EXTRA == DLA__CU_FMOPS &&
                  1 + DLA_FUSED_MAX_INPUTS == DLA__CU_FM_X0,
              "the slots of dla_fmviews: y, 8 inputs, 7 extras");

namespace {

/* The interpreter (fused_kern.h, where a host test expands it too). */
DLA__CU_FUSED_INTERP(DLA__CU_ID)

template <typename T> __global__ void fused_k(dla_fviews a, dla_fprog p)
{
    dla_fused_body<T, interp, 8>(a, p);
}

/* fused_multi, interpreted: every input slot and every extra slot. */
template <typename T> __global__ void fused_multi_k(dla_fmviews a, dla_fprog p)
{
    dla_fused_multi_body<T, interp, 8, 7>(a, p);
}

template <typename T, int PAIR> __global__ void fr_block_k(dla_fr f, dla_fprog p)
{
    dla_fr_block_body<T, interp, 8, PAIR>(f, p);
}

template <typename T, int PAIR> __global__ void fr_thread_k(dla_fr f, dla_fprog p)
{
    dla_fr_thread_body<T, interp, 8, PAIR>(f, p);
}

template <typename T> __global__ void fr_combine_k(dla_fr f, int pair)
{
    if (pair)
        dla_fr_combine_body<T, 1>(f);
    else
        dla_fr_combine_body<T, 0>(f);
}

cudaError_t launch_compiled(const void *kernel, unsigned grid, unsigned block, size_t smem,
                            cudaStream_t st, void *a0, void *a1)
{
    void *args[2] = {a0, a1};
    cudaError_t e = cudaLaunchKernel(kernel, dim3(grid), dim3(block), args, smem, st);
    const cudaError_t last = cudaGetLastError(); /* clears it either way */
    return e != cudaSuccess ? e : last;
}

} // namespace

extern "C" cudaError_t dla__cu_fused_launch(cudaStream_t st, unsigned grid, int f64,
                                            const dla_fviews *a, const dla_fprog *p,
                                            const void *kernel)
{
    dla_fviews av = *a;
    dla_fprog pv = *p;
    if (kernel)
        return launch_compiled(kernel, grid, DLA__CU_THREADS, 0, st, &av, &pv);
    if (f64)
        fused_k<double><<<grid, DLA__CU_THREADS, 0, st>>>(av, pv);
    else
        fused_k<float><<<grid, DLA__CU_THREADS, 0, st>>>(av, pv);
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_fused_multi_launch(cudaStream_t st, unsigned grid, int f64,
                                                  const dla_fmviews *a, const dla_fprog *p,
                                                  const void *kernel)
{
    dla_fmviews av = *a;
    dla_fprog pv = *p;
    if (kernel)
        return launch_compiled(kernel, grid, DLA__CU_THREADS, 0, st, &av, &pv);
    if (f64)
        fused_multi_k<double><<<grid, DLA__CU_THREADS, 0, st>>>(av, pv);
    else
        fused_multi_k<float><<<grid, DLA__CU_THREADS, 0, st>>>(av, pv);
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_fr_launch(cudaStream_t st, int thread, unsigned grid,
                                         unsigned block, int f64, int pair, const dla_fr *f,
                                         const dla_fprog *p, const void *kernel)
{
    dla_fr fv = *f;
    dla_fprog pv = *p;
    if (thread)
        block = DLA__CU_THREADS;
    const size_t smem = thread ? 0 : (size_t)block * sizeof(double) * (pair ? 2 : 1);
    if (kernel)
        return launch_compiled(kernel, grid, block, smem, st, &fv, &pv);
    if (thread) {
        if (f64)
            pair ? fr_thread_k<double, 1><<<grid, block, 0, st>>>(fv, pv)
                 : fr_thread_k<double, 0><<<grid, block, 0, st>>>(fv, pv);
        else
            pair ? fr_thread_k<float, 1><<<grid, block, 0, st>>>(fv, pv)
                 : fr_thread_k<float, 0><<<grid, block, 0, st>>>(fv, pv);
    } else {
        if (f64)
            pair ? fr_block_k<double, 1><<<grid, block, smem, st>>>(fv, pv)
                 : fr_block_k<double, 0><<<grid, block, smem, st>>>(fv, pv);
        else
            pair ? fr_block_k<float, 1><<<grid, block, smem, st>>>(fv, pv)
                 : fr_block_k<float, 0><<<grid, block, smem, st>>>(fv, pv);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_fr_combine(cudaStream_t st, unsigned grid, int f64, int pair,
                                          const dla_fr *f)
{
    dla_fr fv = *f;
    if (f64)
        fr_combine_k<double><<<grid, DLA__CU_THREADS, 0, st>>>(fv, pair);
    else
        fr_combine_k<float><<<grid, DLA__CU_THREADS, 0, st>>>(fv, pair);
    return cudaGetLastError();
}

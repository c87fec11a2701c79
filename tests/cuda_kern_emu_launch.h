/*
 * cuda_kern_emu_launch.h - the plugin's kernel files (plugins/cuda/
 * *_kernels.cu) compiled by the host's C++ compiler, launches and all
 * (tests/cuda_kernels_emu.cpp says which and why). nvcc's launch
 * `k<<<grid, threads, smem, stream>>>(args)` is no C++; tests/cuda.mk
 * copies each such file with the launch written as
 *
 *     k | emu_cfg(grid, threads, smem, stream) | emu_args(args)
 *
 * (a sed of `<<<` and `>>>(`, every launch having them on one line), and
 * the two operators here run it: k called as every thread of every block
 * in turn, blockIdx and threadIdx set (cuda_fused_emu_shim.h), the
 * arguments converted to k's parameters as the launch converts them. So
 * the kernels' bodies and their launchers' choices (which instance, what
 * grid, what is skipped) are the plugin's own text. A kernel with
 * barriers cannot run thread by thread: a file that calls __syncthreads
 * (conv_kernels.cu: the filter gradient's sum over a block) is copied
 * with DLA_EMU_AT_ONCE defined, and its launches run each block's
 * threads at once, one host thread each (emu_run_at_once), meeting at
 * the barriers. A block's __shared__ array is one static array of the
 * kernel's, which its threads share (blocks run one after another). This
 * header comes first in each copied file; its operators are the file's
 * own (an unnamed namespace), so the two ways of running never meet.
 */
#ifndef DLA_TESTS_CUDA_KERN_EMU_LAUNCH_H
#define DLA_TESTS_CUDA_KERN_EMU_LAUNCH_H

#include <cuda_runtime.h>

#include "tests/cuda_fused_emu_shim.h"

#include <cmath>
#include <cstddef>
#include <functional>
#include <tuple>

#undef __shared__
#define __shared__ static

using std::isnan;

/* The launches run since the program started, and the last one's grid
 * and block (tests/cuda_kernels_emu.cpp checks that a case launched). */
extern "C" long emu_kern_launches;
extern "C" unsigned emu_kern_grid, emu_kern_threads;
/* Nonzero: a launch runs its threads in reverse order (the last block's
 * last thread first), which no kernel's result may depend on. */
extern "C" int emu_kern_reverse;

/* Blocks gx x gy of threads threads: each block's threads at once
 * (tests/cuda_kernels_emu.cpp). */
void emu_run_at_once(unsigned gx, unsigned gy, unsigned threads, const std::function<void()> &one);

namespace {

/* <<<grid, threads, smem, stream>>> */
struct emu_cfg {
    dim3 grid;
    unsigned threads;
    emu_cfg(dim3 g, unsigned t, size_t smem = 0, cudaStream_t stream = 0)
        : grid(g), threads(t)
    {
        (void)smem, (void)stream;
    }
};

template <typename... P> struct emu_bound {
    void (*k)(P...);
    emu_cfg c;
};

/* k's parameters come from the kernel's declaration (a template kernel
 * is named with all its arguments at every launch). */
template <typename... P> emu_bound<P...> operator|(void (*k)(P...), const emu_cfg &c)
{
    return emu_bound<P...>{k, c};
}

template <typename... A> struct emu_pack {
    std::tuple<A...> t;
};

template <typename... A> emu_pack<A...> emu_args(A... a)
{
    return emu_pack<A...>{std::tuple<A...>(a...)};
}

/* The launch: blocks in order (rows of blocks, then blocks), each
 * block's threads in order; or all of that reversed. */
template <typename... P, typename... A>
void operator|(const emu_bound<P...> &b, const emu_pack<A...> &a)
{
    emu_kern_launches++;
    emu_kern_grid = b.c.grid.x * b.c.grid.y;
    emu_kern_threads = b.c.threads;
#ifdef DLA_EMU_AT_ONCE
    emu_run_at_once(b.c.grid.x, b.c.grid.y, b.c.threads,
                    [&] { std::apply([&](const A &...v) { b.k(v...); }, a.t); });
    return;
#endif
    gridDim.x = b.c.grid.x;
    gridDim.y = b.c.grid.y;
    blockDim.x = b.c.threads;
    const unsigned long long per_row = (unsigned long long)b.c.grid.x * b.c.threads,
                             all = per_row * b.c.grid.y;
    for (unsigned long long j = 0; j < all; j++) {
        const unsigned long long i = emu_kern_reverse ? all - 1 - j : j;
        blockIdx.y = (unsigned)(i / per_row);
        blockIdx.x = (unsigned)(i % per_row / b.c.threads);
        threadIdx.x = (unsigned)(i % b.c.threads);
        std::apply([&](const A &...v) { b.k(v...); }, a.t);
    }
    gridDim.y = blockIdx.y = 0;
}

} // namespace

#endif

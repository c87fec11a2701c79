/*
 * cuda_fused_emu_shim.h - what CUDA device code takes from nvcc, for the
 * host compiler (tests/cuda_fused_emu.cpp): the qualifiers as nothing, the
 * thread's coordinates as globals the harness sets before it calls a
 * kernel as one thread, and the intrinsics the kernels use. With it the
 * frames of plugins/cuda/fused_kern.h, its interpreter and the compiled
 * programs' source (plugins/cuda/fused_source.c) compile as C++ for the
 * CPU, unchanged. Include it after any CUDA header (they define the
 * qualifiers their own way).
 */
#ifndef DLA_TESTS_CUDA_FUSED_EMU_SHIM_H
#define DLA_TESTS_CUDA_FUSED_EMU_SHIM_H

#ifndef __cplusplus
#error "cuda_fused_emu_shim.h is C++"
#endif

#undef __device__
#undef __global__
#undef __forceinline__
#undef __noinline__
#undef __host__
#undef __shared__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __global__
#define __forceinline__ inline
#define __shared__
#define __launch_bounds__(...)

struct emu_dim {
    unsigned x, y; /* y: a grid of rows of blocks (copy_kernels.cu's copies_k) */
};
/* threadIdx is each thread's own: a block whose kernel has barriers runs
 * its threads at once (cuda_fused_emu.cpp, emu_run_blocks). __thread, not
 * thread_local: C++'s extern thread_local goes through a wrapper function
 * per translation unit, which gcc 12's UBSan build saw return null. */
extern emu_dim blockIdx, blockDim, gridDim;
extern __thread emu_dim threadIdx;

/* A kernel launch: one() called as each thread of a grid of grid blocks
 * of threads threads in turn. */
template <typename F> void emu_run_grid(unsigned grid, unsigned threads, F one)
{
    gridDim.x = grid;
    blockDim.x = threads;
    for (unsigned b = 0; b < grid; b++)
        for (unsigned t = 0; t < threads; t++) {
            blockIdx.x = b;
            threadIdx.x = t;
            one();
        }
}

static inline unsigned __umulhi(unsigned a, unsigned b)
{
    return (unsigned)(((unsigned long long)a * b) >> 32);
}

/* A barrier of the block's threads when they run at once
 * (emu_run_blocks), else nothing: a grid run thread by thread
 * (emu_run_grid) has no kernel with barriers. tests/cuda_fused_emu.cpp
 * defines it. */
void __syncthreads(void);

#include <dlaccel/plugin_ops.h>

#endif

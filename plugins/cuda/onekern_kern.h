/*
 * onekern_kern.h - the one-kernel replay of a small plan and the small
 * GEMM kernel (onekern_kernels.cu; C linkage).
 *
 * A CUDA graph's kernel node costs a few microseconds however little it
 * does, so a replay of ten tiny launches (the tiny MLP's step) costs ten
 * of them. A plan whose every launch is small and is one of the kinds
 * below runs instead as one kernel of one block: the run's inputs copied
 * into the graph's roles, each recorded step over the block with a
 * barrier after it, the results copied out (onekern.c records the steps
 * during the capture, plan.c launches it). Each step is the device code
 * its own kernel runs, so a replay gives the bits of the launches:
 *   - fused and fused_multi: the frames of fused_kern.h with the
 *     interpreter (a fused program as a fused_multi with no extras);
 *   - reduce of launch shape 1 in one part (reduce_dev.cuh);
 *   - GEMM of the small kernel, which gemm.c also runs, instead of cuBLAS,
 *     for every problem this small, so that a plain launch and a step of
 *     the one kernel give the same bits.
 */
#ifndef DLA_PLUGIN_CUDA_ONEKERN_KERN_H
#define DLA_PLUGIN_CUDA_ONEKERN_KERN_H

#include "plugins/cuda/copy_kern.h"
#include "plugins/cuda/fused_kern.h"
#include "plugins/cuda/reduce_kern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A GEMM too small for cuBLAS to pay its fixed cost: one thread per
 * element of C, the k products added in order (no contraction: the
 * plugin is built with --fmad=false). Column-major as the ABI's: page p of
 * an operand starts at its pointer plus p times its page stride (elements,
 * 0 broadcasts a page); beta == 0 writes C without reading it, as cuBLAS
 * does. The pages' C blocks do not overlap (gemm.c sends overlapping ones
 * to cuBLAS one page at a time). */
typedef struct dla__cu_sgemm {
    int32_t f64, trans_a, trans_b, pad;
    int64_t m, n, k, batch;
    const char *a, *b;
    char *c;
    int64_t lda, ldb, ldc, sa, sb, sc;
    double alpha, beta;
} dla__cu_sgemm;

/* What the small kernel takes: k at most SGEMM_MAX_K products a thread,
 * m n k batch at most SGEMM_MAX_WORK in all. */
#define DLA__CU_SGEMM_MAX_K 64
#define DLA__CU_SGEMM_MAX_WORK 65536

cudaError_t dla__cu_sgemm_launch(cudaStream_t stream, unsigned blocks, const dla__cu_sgemm *g);

/* One step of a one-kernel replay. */
enum { DLA__CU_K1_FUSED = 1, DLA__CU_K1_REDUCE = 2, DLA__CU_K1_GEMM = 3 };
typedef struct dla__cu_k1_step {
    int32_t kind;
    int32_t f64;
    union {
        struct {
            dla_fmviews v; /* nextra 0 for a fused launch */
            dla_fprog p;
        } fused;
        dla__cu_red_launch red; /* shape 1, parts 1 */
        dla__cu_sgemm gemm;
    } u;
} dla__cu_k1_step;

/* A replay runs as one kernel only if its regions are at most
 * DLA__CU_COPIES each way and K1_MAX_COPY bytes in all: one block copies
 * them. */
#define DLA__CU_K1_MAX_COPY 65536

/* The one kernel, one block: the copies in, steps[0 .. n-1] (device
 * memory) with a barrier after each, the copies out. */
cudaError_t dla__cu_k1_launch(cudaStream_t stream, const dla__cu_k1_step *steps, int32_t n,
                              const dla__cu_copies *in, const dla__cu_copies *out);

#ifdef __cplusplus
}
#endif
#endif

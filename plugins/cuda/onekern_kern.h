/*
 * onekern_kern.h - the one-kernel replay of a small plan and the small
 * GEMM kernel (onekern_kernels.cu; C linkage).
 *
 * A CUDA graph's kernel node costs a few microseconds however little it
 * does, so a replay of ten tiny launches (the tiny MLP's step) costs ten
 * of them. A plan whose every launch is small and is one of the kinds
 * below runs instead as one kernel of one block: the run's inputs copied
 * into the graph's roles, each recorded step over the block with a
 * barrier after it (after each phase of independent steps with
 * DLACCEL_CUDA_K1_JOIN), the results copied out (onekern.c records the steps
 * during the capture, plan.c launches it). Each step is the device code
 * its own kernel runs, so a replay gives the bits of the launches:
 *   - fused and fused_multi: the frames of fused_kern.h with the
 *     interpreter (a fused program as a fused_multi with no extras), and
 *     unary and binary (not a comparison) as programs of one step, whose
 *     interpreter calls the plugin_ops.h function their kernels call;
 *   - fill and strided copy: the bit patterns copy_kernels.cu moves;
 *   - reduce of launch shape 1 in one part (reduce_dev.cuh), which
 *     reduce.c takes for every small reduce (DLA__CU_K1_SMALL_REDUCE);
 *   - GEMM of the small kernel, which gemm.c also runs, instead of cuBLAS,
 *     for every problem this small, so that a plain launch and a step of
 *     the one kernel give the same bits.
 * That kernel interprets its steps; by default each plan's one kernel is
 * also compiled for it (DLACCEL_CUDA_K1_COMPILE, onekern_source.c), the
 * same steps written out with their values as constants, and replays
 * launch that one (on the H200, the MLP's replay 5.4 us against 15.1).
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

/* A step's work at most: elements, or a GEMM's multiply-adds (one block
 * does every step in turn, which beats a graph's node per launch only
 * while each is small). */
#define DLA__CU_K1_STEP_WORK 65536

/* A reduce whose outputs reduce at most this many positions each, and
 * which is a step's work at most, runs as one thread per output in one
 * part: each thread's additions in turn take a microsecond or two, where
 * a tree of threads or parts costs a launch more. */
#define DLA__CU_K1_SMALL_REDUCE 512

/* A fill (v[0] set to the esize-byte pattern bits) or a strided copy
 * (v[0] = v[1], esize-byte elements) over a coalesced space: the layout
 * of kern.cuh's dla__cu_views<2> followed by the element. */
typedef struct dla__cu_k1_move {
    dla__cu_space sp;
    dla__cu_vw v[2];
    int32_t esize, pad;
    uint64_t bits;
} dla__cu_k1_move;

/* One step of a one-kernel replay. */
enum {
    DLA__CU_K1_FUSED = 1,
    DLA__CU_K1_REDUCE = 2,
    DLA__CU_K1_GEMM = 3,
    DLA__CU_K1_FILL = 4,
    DLA__CU_K1_COPY = 5
};
/* join (DLACCEL_CUDA_K1_JOIN=1, dla__cu_k1_join): the step runs in the
 * phase of the one before it, with no barrier between them: it touches
 * none of the bytes that phase's steps write, and writes none they read. */
typedef struct dla__cu_k1_step {
    int32_t kind;
    int16_t f64;
    int16_t join;
    union {
        struct {
            dla_fmviews v; /* nextra 0 for a fused launch */
            dla_fprog p;
        } fused;
        dla__cu_red_launch red; /* shape 1, parts 1 */
        dla__cu_sgemm gemm;
        dla__cu_k1_move move; /* fill, copy */
    } u;
} dla__cu_k1_step;

/* Records an elementwise launch over the coalesced space sp as a step:
 * kind DLA_FUSED_UNARY (views y, x) or DLA_FUSED_BINARY (z, a, b) with its
 * op, alpha and beta (elementwise.c). */
void dla__cu_k1_note_elementwise(dla__cu_device *d, const dla__cu_space *sp,
                                 const dla__cu_vw *vw, int kind, int op, dla_dtype dtype,
                                 double alpha, double beta);
/* Records a fill (kind DLA__CU_K1_FILL, vw[0], bits) or a strided copy
 * (DLA__CU_K1_COPY, vw[0] = vw[1]) of esize-byte elements (copy.c). */
void dla__cu_k1_note_move(dla__cu_device *d, int kind, const dla__cu_space *sp,
                          const dla__cu_vw *vw, int esize, uint64_t bits);

/* A region copied in or out by one group of lanes threads (its small
 * regions, dealt round the groups) is at most this many bytes: each
 * thread's four 16-byte units in flight; a larger one is the whole
 * block's (dla__cu_deal_regions). */
#define DLA__CU_K1_GROUP_BYTES(lanes) ((lanes) * 4 * 16)

/* A replay runs as one kernel only if its regions are at most
 * DLA__CU_COPIES each way and K1_MAX_COPY bytes in all: one block copies
 * them. */
#define DLA__CU_K1_MAX_COPY 65536

/* DLACCEL_CUDA_K1_PROFILE=1: the block's first thread adds the SM clock
 * cycles of each phase of the one kernel to a device buffer of these
 * slots: the staging, the wait for the kernel before (a programmatic
 * dependent launch's) and the copies in, each step (up to 64), the copies
 * out; the last slot counts the launches. The plugin logs their means
 * (info) as the launches reach 1,024, 2,048, 4,096, ... and when the
 * device closes (onekern.c). The profiled kernel is one of its own: a
 * barrier more, and a few registers spilled where the plain one spills
 * none (tests/cuda_onekern_spills.sh), so its phases run a little slower. */
#define DLA__CU_K1_PROF_STEPS 64
#define DLA__CU_K1_PROF_OUT (1 + DLA__CU_K1_PROF_STEPS)
#define DLA__CU_K1_PROF_LAUNCHES (DLA__CU_K1_PROF_OUT + 1)
#define DLA__CU_K1_PROF_SLOTS (DLA__CU_K1_PROF_LAUNCHES + 1)

/* DLACCEL_CUDA_K1_SHARED=1: a replay's data in shared memory while its
 * steps run. Each region copied in or out (a role: the graph's buffer of
 * it) has a window there, laid out in the copies' order (in, then out);
 * so does each intermediate: a run of bytes outside the roles that the
 * steps write before any of them reads it (a value the plan's arena
 * holds between two steps). Windows follow each other, each at its
 * global address's offset past a 16-byte boundary (dla__cu_k1_window_at:
 * a view keeps its alignment, and its vector loads). Each relocation
 * moves a pointer field of a step (field: the slot of a fused step; y, x,
 * index of a reduce; a, b, c of a GEMM; the views of a fill or copy) whose
 * every access lies in the run [lo, ...) to window off: the field becomes
 * windows + off + (field - lo), where the field itself may lie outside the
 * run (a reduce's operands are their memory's element 0, with offsets). */
typedef struct dla__cu_k1_reloc {
    int32_t step, field;
    int64_t lo, off;
} dla__cu_k1_reloc;

/* The windows of a launch: the relocations (device memory, after the
 * steps) and the bytes the windows take after the staged steps. */
typedef struct dla__cu_k1_win {
    const dla__cu_k1_reloc *rel;
    int32_t nrel;
    int64_t bytes;
} dla__cu_k1_win;

#ifdef __CUDACC__
#define DLA__CU_K1_HD __host__ __device__
#else
#define DLA__CU_K1_HD
#endif
/* The offset of the window of a run at address lo, after windows of at
 * bytes. */
static inline DLA__CU_K1_HD int64_t dla__cu_k1_window_at(int64_t at, uint64_t lo)
{
    return (at + 15) / 16 * 16 + (int64_t)(lo % 16);
}

/* The windows of steps[0 .. n-1] given the roles (role_lo[r], role_bytes[r]
 * in the copies' order) within budget bytes: the relocations in rel (at
 * most n * 16), their count returned, and the windows' bytes in *bytes.
 * Every pointer into a role is moved (-1, no windows, when the roles do
 * not fit, or an access overlaps a role without lying in it); an
 * intermediate is moved while the budget lasts, and a run of bytes the
 * steps read before they write it (a constant, a value kept between
 * replays) stays where it is. */
int32_t dla__cu_k1_windows(const dla__cu_k1_step *steps, int32_t n, const char *const *role_lo,
                           const int64_t *role_bytes, int32_t nroles, int64_t budget,
                           dla__cu_k1_reloc *rel, int64_t *bytes);

/* Sets each step's join (DLACCEL_CUDA_K1_JOIN): greedily, a step joins
 * the phase of the steps before it when the bytes its pointer fields reach
 * (dla__cu_k1_windows's spans) overlap none that phase writes, and it
 * writes none that phase reads; otherwise a barrier starts a phase. The
 * steps' number of phases. */
int32_t dla__cu_k1_join(dla__cu_k1_step *steps, int32_t n);

/* The one kernel, one block: the copies in, steps[0 .. n-1] (device
 * memory) with a barrier after each, the copies out. prof: NULL, or the
 * DLA__CU_K1_PROF_SLOTS counters the phases' cycles are added to. how:
 * DLA__CU_K1_EARLY, launched as a programmatic dependent launch
 * (DLACCEL_CUDA_K1_PDL; compute capability 9.0 on), which may start, and
 * stage its steps, while the kernel before it on the stream ends. win:
 * NULL, or the windows (DLACCEL_CUDA_K1_SHARED) the steps' data move to
 * while they run, when every step is staged and the windows fit beside
 * them in 48 KiB (onekern_kernels.cu). */
#define DLA__CU_K1_EARLY 1
cudaError_t dla__cu_k1_launch(cudaStream_t stream, const dla__cu_k1_step *steps, int32_t n,
                              const dla__cu_copies *in, const dla__cu_copies *out,
                              unsigned long long *prof, int how, const dla__cu_k1_win *win);

/* The one kernel over steps[0 .. n-1] (device memory) without copies, as
 * a kernel node of graph after deps[0 .. ndeps-1] (segment.c). */
cudaError_t dla__cu_k1_node(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                            const dla__cu_k1_step *steps, int32_t n, cudaGraphNode_t *node);

/* DLACCEL_CUDA_K1_COMPILE (on unless 0): a plan's one kernel compiled for
 * it with NVRTC (onekern_source.c), its steps written out with their
 * dims, strides, addresses and programs as constants, so that no step is
 * interpreted; the same bits as the interpreted kernel. Its arguments:
 * the copies in and out (dla__cu_copies' layout), the profile's counters
 * or NULL, and DLA_UNARY_NEG (the op a compiled program reads at run
 * time). dla__cu_k1_source: its source, in src (size bytes; the length it
 * needs returned, >= size: cut), for steps[0 .. nsteps-1], with the
 * profile's laps when prof; 0 when a step is not one it writes (a reduce
 * of another launch shape than the one kernel's). It follows
 * plugin_ops.h's text. */
#define DLA__CU_K_K1C "dla_k1c"
size_t dla__cu_k1_source(const dla__cu_k1_step *steps, int32_t nsteps, int prof, char *src,
                         size_t size);

/* A compiled one kernel (onekern.c): its library and kernel. */
typedef struct dla__cu_k1c {
    cudaLibrary_t lib; /* NULL: none */
    cudaKernel_t kernel;
} dla__cu_k1c;

/* The compiled one kernel of d's steps just uploaded (dla__cu_k1_upload)
 * into *c; 0 when there is none (DLACCEL_CUDA_K1_COMPILE=0, a step it
 * does not write, NVRTC missing or failing: logged; after a failure the
 * device compiles no more). dla__cu_k1c_unload frees one. */
int dla__cu_k1_compile(dla__cu_device *d, dla__cu_k1c *c);
void dla__cu_k1c_unload(dla__cu_k1c *c);

/* Launches compiled one kernel c with copies in and out, prof as
 * dla__cu_k1_launch's, how DLA__CU_K1_EARLY or 0. */
cudaError_t dla__cu_k1c_launch(cudaStream_t stream, const dla__cu_k1c *c,
                               const dla__cu_copies *in, const dla__cu_copies *out,
                               unsigned long long *prof, int how);

#ifdef __cplusplus
}
#endif
#endif

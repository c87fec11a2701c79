/*
 * cu.h - what the cuda plugin's files share: the device context, the
 * memory handle, the coalesced views kernels take, the launch and error
 * helpers, and the table members each file defines.
 *
 * The plugin is C (host logic, through the plugin kit) plus CUDA C++ (.cu:
 * the kernels and a launcher per kernel family, declared here with C
 * linkage). It links libcudart statically and no other CUDA library:
 * cuBLAS, cuDNN and NVRTC are opened with dlopen when a device is opened
 * (libs.c), so on a machine without a driver or without those libraries
 * the plugin still loads, reports no device with the reason, and the other
 * plugins go on.
 *
 * Execution model: one stream per device (created non-blocking); every
 * kernel and copy is enqueued on it in order, copy_to_host waits for it.
 * The host may call members from several threads: each member first makes
 * the device current on the calling thread (dla__cu_enter), and d->lock
 * serializes what the device shares (the pool, the caches, a capture).
 */
#ifndef DLA_PLUGIN_CUDA_CU_H
#define DLA_PLUGIN_CUDA_CU_H

#include <cuda_runtime_api.h>
#include <dlaccel/plugin.h>
#include <dlaccel/plugin_kit.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Set once by dlaccel_plugin_init; valid until the process ends. */
extern const dla_plugin_host *dla__cu_host;
/* The kit's context: "cuda" first in messages, bounds from the handle. */
extern dla_kit dla__cu_kit;

/* ---------------------------------------------------------------- memory */

/* A dla_mem of this plugin. Blocks come from the device's pool (memory.c):
 * cap is the size class actually reserved, bytes what was asked. */
typedef struct dla__cu_mem {
    char *ptr;
    size_t bytes;
    size_t cap;
    struct dla__cu_mem *next; /* in a free list of the pool */
} dla__cu_mem;

/* plan.c: while a planned replay is captured into a CUDA graph, the
 * memory of the run's inputs and results stands, on the capturing
 * thread, for the graph's own copies of it (dla__cu_remapped); NULL
 * otherwise. */
extern __thread const struct dla__cu_graph *dla__cu_remap;
char *dla__cu_remapped(dla_mem m);

/* The device address of a handle (every member takes its addresses so). */
static inline char *dla__cu_ptr(dla_mem m)
{
    if (__builtin_expect(dla__cu_remap != NULL, 0))
        return dla__cu_remapped(m);
    return ((dla__cu_mem *)m)->ptr;
}

/* Bytes of a handle (the kit's bounds checks). */
size_t dla__cu_mem_bytes(dla_mem mem);

/* ------------------------------------------------- views for the kernels */

#define DLA__CU_MAXD DLA_MAX_DIMS

/* The space a kernel runs over: nd coalesced dims (dim 0 fastest; nd 0 is
 * one element) and n, their product; mul and shift divide a position by
 * each dim (fastdiv.h; used where n < 2^31). */
typedef struct dla__cu_space {
    int32_t nd;
    int64_t n;
    int64_t dims[DLA__CU_MAXD];
    uint32_t mul[DLA__CU_MAXD];
    int32_t shift[DLA__CU_MAXD];
} dla__cu_space;

/* One view over that space: the address of its first element and its
 * strides in elements along the coalesced dims. */
typedef struct dla__cu_vw {
    char *base;
    int64_t st[DLA__CU_MAXD];
} dla__cu_vw;

/* Coalesces the space of nops views (views[0]'s dims; every view has
 * them): dims of 1 dropped, neighbours merged where every view's strides
 * allow, so dense views of one layout become one dim. Fills sp and vw[0 ..
 * nops-1]. */
void dla__cu_space_of(int nops, const dla_view *const *views, dla__cu_space *sp,
                      dla__cu_vw *vw);

/* ---------------------------------------------------------------- device */

struct dla__cu_libs;        /* libs.c: cuBLAS, cuDNN, NVRTC entry points */
struct dla__cu_conv_entry;  /* conv.c: measured algorithms per shape */
struct dla__cu_fused_entry; /* fused.c: compiled programs */
struct dla__cu_graph;       /* plan.c: the captured replays */

#define DLA__CU_POOL_CLASSES 192
#define DLA__CU_STAGING_SLOTS 4

typedef struct dla__cu_device {
    int index; /* cuda:index is CUDA device ordinal index */
    cudaStream_t stream;
    dla_kit kit;
    int sms;              /* multiprocessors */
    int cc_major, cc_minor;
    size_t smem_per_block; /* shared memory a block may use */
    char name[128];
    pthread_mutex_t lock;

    /* memory.c: the pool of freed blocks by size class, and the pinned
     * staging buffer of host copies. */
    dla__cu_mem *free_list[DLA__CU_POOL_CLASSES];
    size_t pool_held;     /* bytes in the free lists */
    size_t pool_reserved; /* bytes taken from the driver */
    /* DLA__CU_STAGING_SLOTS pinned slots of staging_bytes each, used in
     * turn by small copies to the device, each with the event of its
     * last copy, so a copy waits only for the one that used its slot
     * DLA__CU_STAGING_SLOTS copies ago. */
    void *staging; /* cudaMallocHost, slots end to end */
    size_t staging_bytes;
    cudaEvent_t staging_done[4];
    int staging_next;

    /* libs.c */
    void *cublas;      /* cublasHandle_t, NULL until the first gemm */
    void *cudnn;       /* cudnnHandle_t, NULL until the first conv */
    int cudnn_off;     /* cuDNN could not be had: own kernels */
    int tf32;          /* DLACCEL_CUDA_TF32=1: tensor cores on float32 */
    int deterministic; /* DLACCEL_CUDA_DETERMINISTIC=1: deterministic cuDNN algorithms only */
    int fused_off32;   /* fused: 32-bit indexing where it fits (DLACCEL_CUDA_FUSED_OFF32) */
    int fused_layout;  /* there, the layout compiled in (DLACCEL_CUDA_FUSED_LAYOUT) */
    int fr_rows;       /* fused_reduce: positions as rows, 4 loads a round (DLACCEL_CUDA_FR_ROWS) */
    int engines_off;   /* conv: the legacy algorithms only (DLACCEL_CUDA_CONV_ENGINES=0) */

    struct dla__cu_conv_entry *conv;   /* conv.c */
    struct dla__cu_fused_entry *fused; /* fused.c */

    /* space.c (dla__cu_enter): the first thread that called a member
     * (the address of a thread-local, through GCC's __atomic builtins, as
     * C and C++ both include this), and whether another has since. A
     * capture takes the stream as a whole, so graphs are made only on a
     * device one thread uses; a capturing plan holds gate from plan_begin
     * to plan_end, and a second thread passes through it, so nothing of
     * theirs lands in a capture. */
    uintptr_t user;
    int multi;
    pthread_mutex_t gate;

    /* plan.c: state of a planned replay on this device (which thread runs
     * it is dla__cu_planning_here's, a thread-local). */
    int capturing;                 /* the stream is being captured now */
    int keep;                      /* ... and the capture may be kept */
    int gated;                     /* the plan thread holds gate */
    int32_t plan_launches;
    struct dla__cu_graph *graphs;  /* plans seen and captured, most recent first */
    struct dla__cu_graph *pending; /* the one being captured */
    dla__cu_mem *held;             /* scratch of the capture in progress */
    dla__cu_mem *scratch_free;     /* of it, what later members may take again */
    dla__cu_mem *taken;            /* what the host took during it, not yet given back */
    int graphs_off;                /* DLACCEL_CUDA_GRAPHS=0, or a capture failed */
    double capture_ms;             /* when the capture began (for the debug log) */
    long graph_launches;           /* replays run as a graph launch */
    int plan_wait;                 /* DLACCEL_CUDA_PLAN_WAIT=1: plan_end waits for the replay */

    /* onekern.c: the steps of the capture in progress, recorded for a
     * one-kernel replay (k1_n of them; k1_calls the members called during
     * the capture, which must all have recorded one). */
    int onekern_off; /* DLACCEL_CUDA_ONE_KERNEL=0: no small GEMM kernel, no one-kernel replays */
    int k1_refused;  /* a one kernel's launch was refused: no more one-kernel replays */
    int k1_pdl;      /* DLACCEL_CUDA_K1_PDL=1 and compute capability 9+: launched early */
    int k1_shared;   /* DLACCEL_CUDA_K1_SHARED=1: the data in shared memory */
    int k1_join;     /* DLACCEL_CUDA_K1_JOIN=1: independent steps share a phase */
    int k1_compile;  /* DLACCEL_CUDA_K1_COMPILE=1: each plan's one kernel compiled (NVRTC) */
    int k1c_refused; /* a compile or launch of one failed: interpreted from now on */
    struct dla__cu_k1_step *k1_steps;
    int32_t k1_n, k1_calls;
    int k1_spoiled;
    const char *k1_member; /* the member counted last */
    char k1_why[80];       /* why the capture is not one kernel (the debug log) */
    long onekern_launches; /* replays run as one kernel */
    /* DLACCEL_CUDA_K1_PROFILE=1: the one kernel's phase counters
     * (onekern_kern.h), and the kinds of the steps uploaded last. */
    int k1_profile;
    int clock_khz; /* the SM's rated clock (the profile's microseconds) */
    struct dla__cu_mem *k1_prof;
    int32_t k1_prof_n;
    int8_t k1_prof_kinds[64];

    /* segment.c: every step the capture in progress recorded, with the
     * node it made, for runs of them as one kernel node each. */
    int seg_off; /* DLACCEL_CUDA_SEGMENTS=0 */
    struct dla__cu_seg_rec *seg;
    int32_t seg_n, seg_cap;
    int seg_pending;            /* the last record's node is the next member's leaf */
    cudaGraphNode_t seg_entry;  /* the capture's leaf when the member now called entered */
    int seg_entry_n;            /* 0 or 1 leaves; -1: several */
} dla__cu_device;

/* Makes d's GPU current on the calling thread (every member calls it
 * first: the host may call from any thread), and holds a thread other
 * than d's plan thread until a plan in progress has ended. */
dla_status dla__cu_enter(dla__cu_device *d, const char *member);
/* The plan thread's side of the gate (plan.c): whether this thread runs a
 * plan on d now, and setting it. */
int dla__cu_planning_here(const dla__cu_device *d);
void dla__cu_set_planning_here(const dla__cu_device *d);

/* DLA_OK for cudaSuccess, else DLA_ERR_DEVICE (DLA_ERR_OUT_OF_MEMORY for
 * cudaErrorMemoryAllocation) with "cuda <what>: <CUDA's message>
 * (<error name>)", and for the errors of a kernel that failed while
 * running (sticky: any later call returns them) the note that it may be a
 * kernel queued before this call. */
dla_status dla__cu_err(cudaError_t e, const char *what);

/* As dla__cu_err, for a wait on the stream (sync, copy_to_host, plan_end):
 * an error there may be a kernel queued before the call that failed
 * while running, which the message says, with how to have it named. */
dla_status dla__cu_wait_err(cudaError_t e, const char *what);

/* The error of the last launch on this thread (cudaGetLastError) as
 * dla__cu_err reports it; call after each <<<>>> launch. */
dla_status dla__cu_launched(const char *what);

/* Threads per block of the 1-d launches, and the grid that covers n
 * elements with a grid-stride loop (capped so a grid stays a few waves). */
#define DLA__CU_THREADS 256
unsigned dla__cu_blocks(const dla__cu_device *d, int64_t n);

/* Device scratch for one launch sequence: a block of the pool, given back
 * with dla__cu_scratch_done once enqueued (the stream orders its reuse
 * after the work that reads it). NULL with the message set. */
dla__cu_mem *dla__cu_scratch(dla__cu_device *d, size_t bytes, const char *what);
/* (plan.c) Gives scratch back to the pool; during a capture that may be
 * kept, the graph holds it instead (its launches write it again). */
void dla__cu_scratch_done(dla__cu_device *d, dla__cu_mem *m);

/* ---- memory.c (table members) ---- */
/* The pool, as the plugin's own code uses it; the table's mem_alloc and
 * mem_free are dla__cu_host_mem_alloc and _free, which also tell a
 * capture in progress that the host's memory changed. */
dla_status dla__cu_mem_alloc(void *dev, size_t bytes, dla_mem *out);
void dla__cu_mem_free(void *dev, dla_mem mem);
dla_status dla__cu_host_mem_alloc(void *dev, size_t bytes, dla_mem *out);
void dla__cu_host_mem_free(void *dev, dla_mem mem);
dla_status dla__cu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                  size_t bytes);
dla_status dla__cu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                size_t bytes);
dla_status dla__cu_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                  size_t src_offset_bytes, size_t bytes);
dla_status dla__cu_sync(void *dev);
/* Gives every pooled block back to the driver (device_close, and once
 * before an allocation fails). */
void dla__cu_pool_release(dla__cu_device *d);
/* mem_trim (ABI 1.7): the pool back to the driver, as pool_release. */
dla_status dla__cu_mem_trim(void *dev, size_t *released);

/* ---- copy.c / copy_kernels.cu ---- */
dla_status dla__cu_fill(void *dev, const dla_view *y, double value);
dla_status dla__cu_strided_copy(void *dev, const dla_view *y, const dla_view *x);
dla_status dla__cu_cast(void *dev, const dla_view *y, const dla_view *x);

/* ---- elementwise.c / elementwise_kernels.cu ---- */
dla_status dla__cu_unary(void *dev, const dla_unary_args *args);
dla_status dla__cu_binary(void *dev, const dla_binary_args *args);
dla_status dla__cu_ternary(void *dev, const dla_ternary_args *args);

/* ---- random.c / random_kernels.cu ---- */
dla_status dla__cu_random(void *dev, const dla_random_args *args);

/* ---- reduce.c, index.c, pool.c (+ their _kernels.cu) ---- */
dla_status dla__cu_reduce(void *dev, const dla_reduce_args *args);
dla_status dla__cu_gather(void *dev, const dla_index_args *args);
dla_status dla__cu_scatter_add(void *dev, const dla_index_args *args);
dla_status dla__cu_pool_forward(void *dev, const dla_pool_args *args);
dla_status dla__cu_pool_backward(void *dev, const dla_pool_args *args);

/* ---- gemm.c, conv.c (cuBLAS, cuDNN; conv_kernels.cu the fallback) ---- */
dla_status dla__cu_gemm(void *dev, const dla_gemm_args *args);
dla_status dla__cu_conv_forward(void *dev, const dla_conv_args *args);
dla_status dla__cu_conv_backward_data(void *dev, const dla_conv_args *args);
dla_status dla__cu_conv_backward_filter(void *dev, const dla_conv_args *args);
void dla__cu_conv_release(dla__cu_device *d);

/* ---- fused.c, fused_reduce.c (+ fused_kernels.cu, NVRTC) ---- */
dla_status dla__cu_fused(void *dev, const dla_fused_args *args);
dla_status dla__cu_fused_multi(void *dev, const dla_fused_multi_args *args); /* ABI 1.8 */
dla_status dla__cu_fused_reduce(void *dev, const dla_fused_reduce_args *args);
void dla__cu_fused_release(dla__cu_device *d);

/* ---- profile.c: DLACCEL_CUDA_PROFILE=1, GPU time per kernel member ---- */
int dla__cu_profiling(void);
void dla__cu_profile_table(dla_plugin *t);
/* ---- coll.c: the ABI 1.6 collectives over NCCL (left NULL without nccl.h) ---- */
void dla__cu_coll_table(dla_plugin *t);

/* ---- libs.c ---- */
void dla__cu_libs_release(dla__cu_device *d);

/* ---- onekern.c: one-kernel replays of small plans (onekern_kern.h) ---- */
struct dla__cu_k1_step;
/* The capture in progress is recorded for one (capture starts). */
void dla__cu_k1_begin(dla__cu_device *d);
/* dla__cu_enter: a member was called on the thread of the capture. */
void dla__cu_k1_count(dla__cu_device *d, const char *member);
/* Whether a member called now should record its launch (dla__cu_k1_note):
 * a capture on this thread that can still become one kernel. */
int dla__cu_k1_recording(const dla__cu_device *d);
/* The member's launch as a step, of work elements or multiply-adds; too
 * much work, or too many steps, and the plan keeps its graph. */
void dla__cu_k1_note(dla__cu_device *d, const struct dla__cu_k1_step *step, int64_t work);
/* After a capture that is kept: the recorded steps in device memory
 * (*n of them), or NULL when the capture cannot run as one kernel
 * (d->k1_why says why). With DLACCEL_CUDA_K1_SHARED, the windows of the
 * roles (role_lo, role_bytes: nroles, in the copies' order) and of the
 * intermediates in *win (onekern_kern.h), their relocations after the
 * steps; win->nrel -1: none. */
struct dla__cu_k1_win;
dla__cu_mem *dla__cu_k1_upload(dla__cu_device *d, int32_t *n, const char *const *role_lo,
                               const int64_t *role_bytes, int32_t nroles,
                               struct dla__cu_k1_win *win);
/* The capture is not one kernel, for the reason given (printf-style). */
void dla__cu_k1_spoil(dla__cu_device *d, const char *fmt, ...);
void dla__cu_k1_release(dla__cu_device *d);
/* The profile's counters for the next one-kernel launch: NULL unless
 * DLACCEL_CUDA_K1_PROFILE=1 (made and zeroed on first use). */
unsigned long long *dla__cu_k1_profile(dla__cu_device *d);

/* ---- segment.c: runs of small launches as one kernel node each ---- */
/* The capture starts. */
void dla__cu_seg_begin(dla__cu_device *d);
/* dla__cu_enter during the capture (and plan.c before it ends): a member
 * was called; the previous one's node is the leaf now. */
void dla__cu_seg_enter(dla__cu_device *d);
/* dla__cu_k1_note: the member's launch as a step of work elements. */
void dla__cu_seg_note(dla__cu_device *d, const struct dla__cu_k1_step *step, int64_t work);
/* After the capture ended, before instantiation: in *out a copy of graph
 * with the runs made one node each (NULL when there is none), their
 * steps in device memory chained to *held; graph is left as it is.
 * Returns how many nodes fewer the copy has. */
int dla__cu_seg_apply(dla__cu_device *d, cudaGraph_t graph, cudaGraph_t *out,
                      dla__cu_mem **held);
void dla__cu_seg_release(dla__cu_device *d);

/* ---- plan.c (ABI 1.3, 1.5): planned replays, CUDA graphs ---- */
dla_status dla__cu_plan_begin(void *dev, int32_t nlaunches);
dla_status dla__cu_plan_replay(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                               const dla_plan_mem *mems, int32_t *ran);
dla_status dla__cu_plan_end(void *dev);
/* A member about to wait for the stream from the host (copy_to_host,
 * sync) or to do what a capture cannot hold: ends a capture in progress
 * and launches what it holds (not kept), so that the work before it is
 * done in order; the rest of the replay is plain launches. */
dla_status dla__cu_plan_flush(dla__cu_device *d, const char *why);
/* The table's mem_alloc gave the host m: during a capture, the graph
 * keeps it if the host gives it back before the capture ends. */
void dla__cu_plan_host_alloc(dla__cu_device *d, dla__cu_mem *m);
/* The host gives m back: 1 when a capture in progress holds it from now
 * on (it was taken during the capture), else 0 (and a capture in
 * progress is not kept: the host's memory changed under it). */
int dla__cu_plan_host_free(dla__cu_device *d, dla__cu_mem *m);
void dla__cu_plan_release(dla__cu_device *d);

#ifdef __cplusplus
}
#endif
#endif

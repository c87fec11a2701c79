/*
 * ocl.h - what the opencl plugin's files share: the device context, the
 * memory handle, the program and kernel cache, the launch helpers and the
 * table members each file defines.
 *
 * A dla_mem of this plugin points to a dla__ocl_mem: the cl_mem buffer and
 * its size, so that every kernel checks that a view stays inside its
 * buffer before the device could fault. Kernels address elements as
 * (buffer, element offset, strides), as the ABI does.
 *
 * Locking: OpenCL calls are thread-safe except that setting a kernel's
 * arguments and enqueueing it must not interleave with another thread
 * doing the same to that kernel object. Each device has one mutex, held
 * from the first clSetKernelArg to the enqueue (and while programs are
 * built), so the host may call members from several threads.
 */
#ifndef DLA_PLUGIN_OPENCL_OCL_H
#define DLA_PLUGIN_OPENCL_OCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlaccel/plugin.h>
#include <dlaccel/plugin_kit.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Set once by dlaccel_plugin_init; valid until the process ends. */
extern const dla_plugin_host *dla__ocl_host;
/* The plugin kit's context (dlaccel/plugin_kit.h) for checks that need no
 * device: "opencl" first in messages, bounds from dla__ocl_mem's bytes.
 * Each device has its own (dla__ocl_device.kit), which also knows whether
 * the device runs double. */
extern dla_kit dla__ocl_kit;

/* ---------------------------------------------------------------- memory */

typedef struct dla__ocl_mem {
    cl_mem buf;
    size_t bytes;
} dla__ocl_mem;

static inline cl_mem dla__ocl_buf(dla_mem m)
{
    return ((dla__ocl_mem *)m)->buf;
}

/* -------------------------------------------------------------- programs */

/* The programs, each built on first use from common.cl (and ops.cl where
 * noted) followed by its own source; see program.c. */
typedef enum dla__ocl_prog {
    DLA__OCL_PROG_COPY,
    DLA__OCL_PROG_ELEMENTWISE, /* + ops.cl */
    DLA__OCL_PROG_FUSED,       /* + ops.cl */
    DLA__OCL_PROG_FUSED_REDUCE, /* + ops.cl, fused.cl's interpreter */
    DLA__OCL_PROG_REDUCE,
    DLA__OCL_PROG_GEMM,
    DLA__OCL_PROG_CONV,
    DLA__OCL_PROG_POOL,
    DLA__OCL_PROG_INDEX,
    DLA__OCL_PROG_RANDOM,      /* + dlaccel/plugin_philox.h */
    DLA__OCL_PROG_COUNT
} dla__ocl_prog;

/* Kernel slots of a device, one per kernel the plugin may ask for. */
enum {
    DLA__OCL_K_FILL = 0,                                    /* [size class] */
    DLA__OCL_K_COPY = DLA__OCL_K_FILL + 3,                  /* [size class] */
    DLA__OCL_K_CAST = DLA__OCL_K_COPY + 3,                  /* [from][to] */
    DLA__OCL_K_UNARY = DLA__OCL_K_CAST + DLA_DTYPE_COUNT * DLA_DTYPE_COUNT, /* [op][f64] */
    DLA__OCL_K_BINARY = DLA__OCL_K_UNARY + 2 * DLA_UNARY_COUNT,             /* [op][f64] */
    DLA__OCL_K_WHERE = DLA__OCL_K_BINARY + 2 * DLA_BINARY_COUNT,            /* [f64] */
    DLA__OCL_K_FUSED = DLA__OCL_K_WHERE + 2,                                /* [f64] */
    DLA__OCL_K_REDUCE = DLA__OCL_K_FUSED + 2,       /* [sum,max,min][stage][f64] */
    DLA__OCL_K_GEMM = DLA__OCL_K_REDUCE + 12,       /* [trans pair][f64] */
    DLA__OCL_K_CONV = DLA__OCL_K_GEMM + 8,          /* [fwd,data,filter,wsum][f64] */
    DLA__OCL_K_POOL = DLA__OCL_K_CONV + 8,          /* [max,avg,back][f64] */
    DLA__OCL_K_GATHER = DLA__OCL_K_POOL + 6,        /* [size class] */
    DLA__OCL_K_SCATTER = DLA__OCL_K_GATHER + 3,     /* [f64] */
    DLA__OCL_K_RANDOM = DLA__OCL_K_SCATTER + 2,     /* [uniform,normal][f64] */
    DLA__OCL_K_FUSED_REDUCE = DLA__OCL_K_RANDOM + 4, /* [sum,combine,pair][f64] */
    DLA__OCL_K_FUSED_MULTI = DLA__OCL_K_FUSED_REDUCE + 6, /* [f64] */
    DLA__OCL_K_COUNT = DLA__OCL_K_FUSED_MULTI + 2
};

/* A program of the fused (or fused_multi) kernel compiled for one
 * instruction list (see fused.c), kept per device. */
typedef struct dla__ocl_fused_entry dla__ocl_fused_entry;

/* ---------------------------------------------------------------- device */

typedef struct dla__ocl_device {
    int index; /* opencl:index */
    cl_platform_id platform;
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue;
    int fp64;      /* cl_khr_fp64: double kernels exist */
    dla_kit kit;   /* dla__ocl_kit, with no_f64 set when !fp64 */
    int cpu;       /* a CPU device: work-items are loops on its cores */
    int units;     /* compute units */
    int clblast_off; /* CLBlast refused a call: own GEMM kernel only */
    size_t local;  /* work-group size of 1-d launches */
    cl_ulong max_alloc;
    char options[160]; /* clBuildProgram options */
    pthread_mutex_t lock;
    cl_program programs[DLA__OCL_PROG_COUNT];
    cl_kernel kernels[DLA__OCL_K_COUNT];
    dla__ocl_fused_entry *fused; /* compiled programs, most recent first */
} dla__ocl_device;

/* The kernel in slot, from program prog, named by the printf-style fmt;
 * the program is built (once per device) and the kernel created on first
 * use. A build failure returns DLA_ERR_DEVICE with the build log in the
 * message. Call with d->lock held. */
dla_status dla__ocl_kernel(dla__ocl_device *d, dla__ocl_prog prog, int slot, cl_kernel *out,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Builds a program from the given sources (common.cl is put first) with
 * the device's options; a failure returns DLA_ERR_DEVICE naming what and
 * quoting the build log. */
dla_status dla__ocl_build(dla__ocl_device *d, const char *what, int nsources,
                          const char *const *sources, cl_program *out);

/* Releases every program and kernel of d. */
void dla__ocl_programs_release(dla__ocl_device *d);

/* Embedded OpenCL C sources (cl_sources.c, made from cl/ at build time). */
extern const char dla__ocl_src_common[], dla__ocl_src_ops[], dla__ocl_src_copy[],
    dla__ocl_src_elementwise[], dla__ocl_src_fused[], dla__ocl_src_reduce[],
    dla__ocl_src_gemm[], dla__ocl_src_conv[], dla__ocl_src_pool[], dla__ocl_src_index[],
    dla__ocl_src_random[], dla__ocl_src_plugin_philox[], dla__ocl_src_fused_reduce[];

/* ------------------------------------------------------- launch helpers */

/* The space of common.cl: at most DLA__OCL_KD dims per launch. */
#define DLA__OCL_KD 3

typedef struct dla__ocl_shape {
    cl_long dims[DLA__OCL_KD];
} dla__ocl_shape;

typedef struct dla__ocl_vw {
    cl_long off;
    cl_long st[DLA__OCL_KD];
} dla__ocl_vw;

/* Sets argument i of k (size bytes at p); DLA_ERR_DEVICE naming kernel. */
dla_status dla__ocl_arg(cl_kernel k, cl_uint i, size_t size, const void *p, const char *kernel);
#define DLA__OCL_ARG(k, i, v, kernel) dla__ocl_arg((k), (i), sizeof(v), &(v), (kernel))
/* Sets arguments first, first + 1, ... of k from DLA__OCL_A(variable)
 * pairs, the list closed by DLA__OCL_END; stops at the first failure. */
dla_status dla__ocl_args(cl_kernel k, const char *kernel, cl_uint first, ...);
#define DLA__OCL_A(v) sizeof(v), (const void *)&(v)
#define DLA__OCL_END ((size_t)0)

/* Enqueues k over a 1-d range of n work-items (rounded up to the device's
 * work-group size; kernels check their bound). n == 0 does nothing. */
dla_status dla__ocl_launch1(dla__ocl_device *d, cl_kernel k, size_t n, const char *kernel);

/* Enqueues k as groups work-groups of group work-items each (1-d), for
 * kernels that work in local memory. */
dla_status dla__ocl_launch_groups(dla__ocl_device *d, cl_kernel k, size_t groups, size_t group,
                                  const char *kernel);

/* Enqueues k over a 3-d range of n[0] x n[1] x n[2] work-items, the
 * first two rounded up to the work-group (kernels check those bounds),
 * as dla__ocl_run_space launches. */
dla_status dla__ocl_launch3(dla__ocl_device *d, cl_kernel k, const int64_t *n, const char *kernel);

/* Runs an elementwise kernel over the space of nops views (at most
 * 1 + DLA_FUSED_MAX_EXTRA + DLA_FUSED_MAX_INPUTS: fused_multi's; views[0]'s
 * dims): the views' dims are coalesced, and the kernel gets argument 0 the
 * dla__ocl_shape, then for view i the buffer (argument 1 + 2i) and its
 * dla__ocl_vw (2 + 2i); the caller sets the arguments after those first.
 * The launch is an NDRange over the space's dims; a space of more dims
 * than that runs as one launch per index of its outer dims. rows > 0
 * keeps the third dim of the launch for the caller (rows work-items,
 * get_global_id(2), the views' stride 0 there) and the space to two;
 * rows == 0 gives the space all three. */
dla_status dla__ocl_run_space(dla__ocl_device *d, cl_kernel k, int nops,
                              const dla_view *const *views, size_t rows, const char *kernel);

/* Nonzero when the nops views coalesce to one run, unit stride in each:
 * dense and of one layout (a buffer copy or fill does then). */
int dla__ocl_flat(int nops, const dla_view *const *views);

/* A scratch buffer of bytes (at least 1) for one launch; released with
 * clReleaseMemObject once enqueued (OpenCL keeps it until the work that
 * uses it is done). NULL with the message set. */
cl_mem dla__ocl_scratch(dla__ocl_device *d, size_t bytes, const void *init, const char *kernel);

/* --------------------------------------------------------------- errors */

/* Bytes of a dla_mem of this plugin (the kit's bounds checks). */
size_t dla__ocl_mem_bytes(dla_mem mem);
/* "CL_OUT_OF_RESOURCES (-5)" for messages. */
const char *dla__ocl_err_str(cl_int err, char *buf, size_t size);
#define DLA__OCL_ERR(err) dla__ocl_err_str((err), (char[48]){0}, 48)

/* ------------------------------------------------ plans (plan.c, ABI 1.3) */

/* Between plan_begin and plan_end on the calling thread, every command the
 * thread enqueues on d is one sequence: each waits for the event of the one
 * before (the queue is in order, so the list costs nothing and states the
 * order), its own event is kept with what it is, and plan_end waits once
 * for the last and reports the first that failed. Outside a plan these
 * return no event and no wait list. Call around each enqueue:
 *
 *     cl_uint nwait; const cl_event *wait;
 *     cl_event *ev = dla__ocl_plan_event(d, "gemm", &nwait, &wait);
 *     err = clEnqueue...(d->queue, ..., nwait, wait, ev);
 *     dla__ocl_plan_enqueued(d, err);
 */
cl_event *dla__ocl_plan_event(dla__ocl_device *d, const char *what, cl_uint *nwait,
                              const cl_event **wait);
void dla__ocl_plan_enqueued(dla__ocl_device *d, cl_int err);
/* A blocking call on d (a copy to or from the host, clFinish): counted as
 * a host wait while a plan runs (the debug log of plan_end shows them). */
void dla__ocl_plan_waited(dla__ocl_device *d);
dla_status dla__ocl_plan_begin(void *dev, int32_t nlaunches);
dla_status dla__ocl_plan_end(void *dev);

/* ---- random.c (ABI 1.3) ---- */
dla_status dla__ocl_random(void *dev, const dla_random_args *args);

/* ---- table members: memory.c ---- */
dla_status dla__ocl_mem_alloc(void *dev, size_t bytes, dla_mem *out);
void dla__ocl_mem_free(void *dev, dla_mem mem);
dla_status dla__ocl_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                   size_t bytes);
dla_status dla__ocl_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                 size_t bytes);
dla_status dla__ocl_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                   size_t src_offset_bytes, size_t bytes);
dla_status dla__ocl_sync(void *dev);

/* ---- copy.c ---- */
dla_status dla__ocl_fill(void *dev, const dla_view *y, double value);
dla_status dla__ocl_strided_copy(void *dev, const dla_view *y, const dla_view *x);
dla_status dla__ocl_cast(void *dev, const dla_view *y, const dla_view *x);

/* ---- elementwise.c ---- */
dla_status dla__ocl_unary(void *dev, const dla_unary_args *args);
dla_status dla__ocl_binary(void *dev, const dla_binary_args *args);
dla_status dla__ocl_ternary(void *dev, const dla_ternary_args *args);

/* ---- fused.c (fused_multi: ABI 1.8) ---- */
dla_status dla__ocl_fused(void *dev, const dla_fused_args *args);
dla_status dla__ocl_fused_multi(void *dev, const dla_fused_multi_args *args);
void dla__ocl_fused_release(dla__ocl_device *d);
/* The compiled kernel of a's instruction list, as the elementwise kernel
 * (reduce 0) or fused_reduce.cl's sum (1; reg2 >= 0: the pair's, which
 * also sums register reg2), or NULL while it is to be interpreted; the
 * cache and the compile policy are the same for all. Called with d->lock
 * held. */
cl_kernel dla__ocl_fused_compiled(dla__ocl_device *d, const dla_fused_args *a, int reduce,
                                  int reg2);
/* Sets argument index of kern to a's program as fused.cl's dla_prog_T. */
dla_status dla__ocl_fused_prog_arg(cl_kernel kern, cl_uint index, const dla_fused_args *a,
                                   const char *kernel);

/* ---- fused_reduce.c (ABI 1.3; its pair form 1.4) ---- */
dla_status dla__ocl_fused_reduce(void *dev, const dla_fused_reduce_args *args);

/* ---- clblast.c: large GEMMs through CLBlast when it is installed ---- */
int dla__ocl_clblast_available(void);
/* Nonzero when g should go to CLBlast (policy, size, availability). */
int dla__ocl_clblast_wants(const dla__ocl_device *d, const dla_gemm_args *g);
/* g through CLBlast (one batched call when its C pages are apart, else a
 * call per page); DLA_ERR_UNSUPPORTED without a message when CLBlast
 * refused and the own kernel should run it. Called with d->lock held. */
dla_status dla__ocl_clblast_gemm(dla__ocl_device *d, const dla_gemm_args *g, int one_launch);

/* ---- reduce.c, gemm.c, conv.c, pool.c, index.c ---- */
dla_status dla__ocl_reduce(void *dev, const dla_reduce_args *args);
dla_status dla__ocl_gemm(void *dev, const dla_gemm_args *args);
dla_status dla__ocl_conv_forward(void *dev, const dla_conv_args *args);
dla_status dla__ocl_conv_backward_data(void *dev, const dla_conv_args *args);
dla_status dla__ocl_conv_backward_filter(void *dev, const dla_conv_args *args);
dla_status dla__ocl_pool_forward(void *dev, const dla_pool_args *args);
dla_status dla__ocl_pool_backward(void *dev, const dla_pool_args *args);
dla_status dla__ocl_gather(void *dev, const dla_index_args *args);
dla_status dla__ocl_scatter_add(void *dev, const dla_index_args *args);

#endif

/*
 * plugin.c - the opencl plugin's entry point: ABI negotiation, the devices
 * of every OpenCL platform the ICD loader finds (opencl:0, opencl:1, ...),
 * and the table that points at the kernels in the other files.
 *
 * opencl plugin: design choices
 * -----------------------------
 * - Devices: every device of every platform, GPUs and accelerators first
 *   (so "opencl", which names a plugin's first device, is a GPU when there
 *   is one), then CPU devices such as PoCL's; within a class in platform
 *   and device order. No platform (the ICD loader finds no vendor file) or
 *   no device is device_count 0: the registry then skips the plugin and the
 *   others load as usual. The manifest ranks devices by type
 *   (priority_by_type): a GPU or accelerator 150, above the cpu plugin's
 *   100, a CPU device such as PoCL's 50, below it, so a CPU device serves
 *   only when asked for (DLACCEL_DEVICE); see docs/plugins.md, "The opencl
 *   plugin".
 * - One context and one in-order command queue per device. Kernels are
 *   enqueued and return; copy_to_device and copy_to_host block (the host
 *   memory is free or filled when they return), sync is clFinish, and
 *   mem_free is clReleaseMemObject, which OpenCL defers until the queued
 *   work on the buffer is done.
 * - Kernels are OpenCL C in plugins/opencl/cl/ (one .cl file per program), embedded as strings at
 *   build time (cl_sources.c) and compiled per device on first use, one
 *   program per kernel family (program.c). FP_CONTRACT is off, and division
 *   and sqrt are correctly rounded where the device offers it, so the
 *   elementwise ops round as the cpu plugin's do; the transcendental
 *   functions are the device's own (OpenCL allows them a few ulp).
 * - float32 everywhere; float64 where the device reports cl_khr_fp64,
 *   otherwise supports() says no and the core runs those ops on the cpu
 *   plugin. Fill, copy and gather move bit patterns, so they take every
 *   dtype on every device.
 * - GEMM is CLBlast's for large pages when it is installed (loaded with
 *   dlopen: not a build dependency), else the plugin's own kernel
 *   (gemm.cl; clblast.c has the measurements), convolutions are direct
 *   kernels, reductions and the backward filter split long sums into
 *   interleaved parts merged in a second kernel, scatter_add groups the
 *   positions by target on the host so no two work-items add into one
 *   element (no atomics, the cpu plugin's order of additions). The fused
 *   program is interpreted per element, and compiled into a kernel of its
 *   own once the same program comes back (fused.c). A fused program summed
 *   over some dims (fused_reduce, ABI 1.3) runs on the same interpreter,
 *   compiler and cache: a work-group per output (or per part of one, when
 *   the outputs are too few for the device) evaluates the program where it
 *   reads the inputs and sums in local memory, in double where the device
 *   has it; its work-items sum runs of consecutive positions on a CPU
 *   device and lie across the rows on a GPU (fused_reduce.c). A fused
 *   program that also stores some earlier registers (fused_multi, ABI
 *   1.8) is the fused kernel with extra results, on the same interpreter,
 *   compiler and cache (fused.c).
 * - ABI 1.8, without the optional members of 1.5 to 1.7 (plan_replay,
 *   the coll_* collectives, mem_trim: NULL, their documented defaults);
 *   1.6 to 1.8 appended no op values. mem_alloc is clCreateBuffer and
 *   mem_free clReleaseMemObject: the plugin keeps no memory to trim.
 * - Random numbers (ABI 1.3) are drawn in place by random.cl, compiled
 *   from the stream's shared definition (dlaccel/plugin_philox.h), so they
 *   are the cpu plugin's bits; normals and doubles need cl_khr_fp64.
 * - Plans (ABI 1.3, plan.c): a planned replay's commands are one sequence
 *   chained by events on the in-order queue, with one host wait at its end
 *   that also names a command that failed while running.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "plugins/opencl/ocl.h"

#include "core/env_choice.h"
#include <stdio.h>
#include <string.h>

const dla_plugin_host *dla__ocl_host;
dla_kit dla__ocl_kit;

#define MAX_DEVICES 64

/* What device_count found: platform and device of opencl:i. */
static struct {
    int scanned;
    int count;
    cl_platform_id platform[MAX_DEVICES];
    cl_device_id device[MAX_DEVICES];
} found;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

/* Lists the devices of every platform, GPUs and accelerators first. */
static void scan(void)
{
    const dla_plugin_host *h = dla__ocl_host;
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        h->log(DLA_LOG_INFO, "opencl: no OpenCL platform (clGetPlatformIDs: %s)",
               err == CL_SUCCESS ? "0 platforms" : DLA__OCL_ERR(err));
        return;
    }
    cl_platform_id platforms[16];
    if (np > 16)
        np = 16;
    if ((err = clGetPlatformIDs(np, platforms, NULL)) != CL_SUCCESS) {
        h->log(DLA_LOG_WARN, "opencl: clGetPlatformIDs: %s", DLA__OCL_ERR(err));
        return;
    }
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < np; p++) {
            cl_device_id ids[MAX_DEVICES];
            cl_uint nd = 0;
            err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ids, &nd);
            if (err != CL_SUCCESS) {
                if (pass == 0)
                    h->log(DLA_LOG_INFO, "opencl: platform %u: clGetDeviceIDs: %s", p,
                           DLA__OCL_ERR(err));
                continue;
            }
            for (cl_uint i = 0; i < nd && i < MAX_DEVICES && found.count < MAX_DEVICES; i++) {
                cl_device_type type = 0;
                clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
                const int fast = (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR)) != 0;
                if (fast != (pass == 0))
                    continue;
                found.platform[found.count] = platforms[p];
                found.device[found.count] = ids[i];
                found.count++;
            }
        }
}

static dla_status device_count(int *count)
{
    pthread_mutex_lock(&scan_lock);
    if (!found.scanned) {
        scan();
        found.scanned = 1;
    }
    *count = found.count;
    pthread_mutex_unlock(&scan_lock);
    return DLA_OK;
}

static dla_status check_index(const char *member, int index)
{
    int n;
    device_count(&n);
    if (index < 0 || index >= n)
        return dla__ocl_host->error(DLA_ERR_INVALID_ARGUMENT,
                                    "opencl %s: argument index: %d, the plugin has %d device%s",
                                    member, index, n, n == 1 ? "" : "s");
    return DLA_OK;
}

/* A string property of a device, cut to size (OpenCL refuses a buffer
 * shorter than the whole string). */
static void device_string(cl_device_id id, cl_device_info what, char *buf, size_t size)
{
    char all[1024];
    if (clGetDeviceInfo(id, what, sizeof all, all, NULL) != CL_SUCCESS)
        all[0] = '\0';
    all[sizeof all - 1] = '\0';
    snprintf(buf, size, "%s", all);
}

/* Whether the device has cl_khr_fp64. DLACCEL_OPENCL_FP64=off answers no
 * for every device: the plugin then runs as on a device without it (float
 * sums compensated instead of kept in double, no double kernels: the core
 * runs those on the cpu plugin), which the tests cover on PoCL, a device
 * that has it. */
static int has_fp64(cl_device_id id)
{
    static const char *const values[] = {"off", "on", NULL};
    static atomic_int warned;
    if (dla__env_choice("DLACCEL_OPENCL_FP64", values, &warned, dla__ocl_host->log) == 0)
        return 0;
    cl_device_fp_config cfg = 0;
    return clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof cfg, &cfg, NULL) == CL_SUCCESS &&
           cfg != 0;
}

static dla_status device_info(int index, dla_plugin_device_info *info)
{
    dla_status s = check_index("device_info", index);
    if (s != DLA_OK)
        return s;
    cl_device_id id = found.device[index];
    dla_plugin_device_info mine;
    memset(&mine, 0, sizeof mine);
    device_string(id, CL_DEVICE_NAME, mine.description, sizeof mine.description);
    cl_device_type type = 0;
    clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    snprintf(mine.type, sizeof mine.type, "%s",
             type & CL_DEVICE_TYPE_GPU           ? "gpu"
             : type & CL_DEVICE_TYPE_ACCELERATOR ? "accelerator"
             : type & CL_DEVICE_TYPE_CPU         ? "cpu"
                                                 : "accelerator");
    cl_ulong mem = 0;
    cl_uint units = 0;
    clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    mine.memory_bytes = mem;
    mine.compute_units = (int32_t)units;
    mine.host_addressable = 0;
    char platform[64] = "", version[64] = "", driver[32] = "", all[1024] = "";
    if (clGetPlatformInfo(found.platform[index], CL_PLATFORM_NAME, sizeof all, all, NULL) ==
        CL_SUCCESS)
        snprintf(platform, sizeof platform, "%s", all);
    device_string(id, CL_DEVICE_VERSION, version, sizeof version);
    device_string(id, CL_DRIVER_VERSION, driver, sizeof driver);
    snprintf(mine.properties, sizeof mine.properties,
             "platform=%s; version=%s; driver=%s; fp64=%s; gemm=%s", platform, version, driver,
             has_fp64(id) ? "yes" : "no",
             dla__ocl_clblast_available() ? "CLBlast (large), own kernel" : "own kernel");
    size_t size = info->struct_size < sizeof mine ? info->struct_size : sizeof mine;
    mine.struct_size = info->struct_size;
    memcpy(info, &mine, size);
    return DLA_OK;
}

static dla_status device_open(int index, void **out)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla_status s = check_index("device_open", index);
    if (s != DLA_OK)
        return s;
    dla__ocl_device *d = h->alloc(sizeof *d, 0);
    if (!d)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl device_open: the device context");
    memset(d, 0, sizeof *d);
    d->index = index;
    d->platform = found.platform[index];
    d->id = found.device[index];
    cl_int err;
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform,
                                           0};
    d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        h->free(d);
        return h->error(DLA_ERR_DEVICE, "opencl device_open %d: clCreateContext: %s", index,
                        DLA__OCL_ERR(err));
    }
    d->queue = clCreateCommandQueue(d->ctx, d->id, 0, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(d->ctx);
        h->free(d);
        return h->error(DLA_ERR_DEVICE, "opencl device_open %d: clCreateCommandQueue: %s", index,
                        DLA__OCL_ERR(err));
    }
    d->fp64 = has_fp64(d->id);
    d->kit = dla__ocl_kit;
    if (!d->fp64)
        d->kit.no_f64 = "the device has no cl_khr_fp64";
    cl_device_fp_config single = 0, dbl = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof single, &single, NULL);
    if (d->fp64)
        clGetDeviceInfo(d->id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof dbl, &dbl, NULL);
    /* DLA_FMA_F32/F64: the device has fused multiply-add in hardware, so
     * gemm.cl adds its products with fma, as the cpu plugin's BLAS and
     * CLBlast do (FP_FAST_FMAF, which would say so, PoCL leaves
     * undefined); without it fma would be emulated, slowly. */
    snprintf(d->options, sizeof d->options, "%s%s%s%s",
             d->fp64 ? "-DDLA_FP64=1 " : "",
             (single & CL_FP_FMA) ? "-DDLA_FMA_F32=1 " : "",
             (dbl & CL_FP_FMA) ? "-DDLA_FMA_F64=1 " : "",
             single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT
                 ? "-cl-fp32-correctly-rounded-divide-sqrt"
                 : "");
    size_t max_wg = 64;
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_wg, &max_wg, NULL);
    cl_device_type type = 0;
    clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    /* A CPU runs a work-group as a loop: large groups amortize the cost of
     * handing one to a thread. A GPU wants several groups per unit. */
    d->cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    cl_uint units = 1;
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    d->units = units > 0 ? (int)units : 1;
    d->local = d->cpu ? 1024 : 256;
    while (d->local > max_wg)
        d->local /= 2;
    if (d->local == 0)
        d->local = 1;
    clGetDeviceInfo(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof d->max_alloc, &d->max_alloc, NULL);
    pthread_mutex_init(&d->lock, NULL);
    char name[128];
    device_string(d->id, CL_DEVICE_NAME, name, sizeof name);
    h->log(DLA_LOG_INFO, "opencl:%d: %s, fp64 %s, work-groups of %zu, build options \"%s\"",
           index, name, d->fp64 ? "yes" : "no", d->local, d->options);
    *out = d;
    return DLA_OK;
}

static void device_close(void *dev)
{
    dla__ocl_device *d = dev;
    clFinish(d->queue);
    dla__ocl_fused_release(d);
    dla__ocl_programs_release(d);
    clReleaseCommandQueue(d->queue);
    clReleaseContext(d->ctx);
    pthread_mutex_destroy(&d->lock);
    dla__ocl_host->free(d);
}

static int supports(void *dev, dla_kernel kernel, dla_dtype dtype)
{
    const dla__ocl_device *d = dev;
    if ((unsigned)dtype >= DLA_DTYPE_COUNT)
        return 0;
    switch (kernel) {
    /* Bit patterns: no double arithmetic needed. */
    case DLA_KERNEL_FILL:
    case DLA_KERNEL_STRIDED_COPY:
    case DLA_KERNEL_GATHER: return 1;
    case DLA_KERNEL_CAST: return dtype != DLA_F64 || d->fp64;
    case DLA_KERNEL_UNARY:
    case DLA_KERNEL_BINARY:
    case DLA_KERNEL_REDUCE:
    case DLA_KERNEL_GEMM:
    case DLA_KERNEL_TERNARY:
    case DLA_KERNEL_CONV_FORWARD:
    case DLA_KERNEL_CONV_BACKWARD_DATA:
    case DLA_KERNEL_CONV_BACKWARD_FILTER:
    case DLA_KERNEL_POOL_FORWARD:
    case DLA_KERNEL_POOL_BACKWARD:
    case DLA_KERNEL_SCATTER_ADD:
    case DLA_KERNEL_FUSED:
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR:
    case DLA_KERNEL_FUSED_MULTI: return dtype == DLA_F32 || (dtype == DLA_F64 && d->fp64);
    /* Uniform singles are integer work; doubles and every normal (whose
     * transform is defined in double) need cl_khr_fp64. */
    case DLA_KERNEL_RANDOM_UNIFORM: return dtype == DLA_F32 || (dtype == DLA_F64 && d->fp64);
    case DLA_KERNEL_RANDOM_NORMAL: return (dtype == DLA_F32 || dtype == DLA_F64) && d->fp64;
    default: return 0;
    }
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *host, dla_plugin *table)
{
    dla_status s = dla_kit_check_init(host, table, "opencl");
    if (s != DLA_OK || host->log == NULL) /* opencl logs what it finds */
        return s != DLA_OK ? s : DLA_ERR_PLUGIN;
    dla__ocl_host = host;
    dla__ocl_kit = (dla_kit){.host = host, .name = "opencl", .mem_bytes = dla__ocl_mem_bytes};
    const size_t size = dla_kit_table_size(table);
    const dla_plugin mine = {
        .struct_size = size,
        .abi_major = DLA_PLUGIN_ABI_MAJOR,
        .abi_minor = 8, /* the minor this plugin implements (docs/plugins.md §3), not the header's */
        .device_count = device_count,
        .device_info = device_info,
        .device_open = device_open,
        .device_close = device_close,
        .mem_alloc = dla__ocl_mem_alloc,
        .mem_free = dla__ocl_mem_free,
        .copy_to_device = dla__ocl_copy_to_device,
        .copy_to_host = dla__ocl_copy_to_host,
        .copy_on_device = dla__ocl_copy_on_device,
        .sync = dla__ocl_sync,
        .supports = supports,
        .fill = dla__ocl_fill,
        .strided_copy = dla__ocl_strided_copy,
        .unary = dla__ocl_unary,
        .binary = dla__ocl_binary,
        .reduce = dla__ocl_reduce,
        .gemm = dla__ocl_gemm,
        .cast = dla__ocl_cast,
        .ternary = dla__ocl_ternary,
        .conv_forward = dla__ocl_conv_forward,
        .conv_backward_data = dla__ocl_conv_backward_data,
        .conv_backward_filter = dla__ocl_conv_backward_filter,
        .pool_forward = dla__ocl_pool_forward,
        .pool_backward = dla__ocl_pool_backward,
        .gather = dla__ocl_gather,
        .scatter_add = dla__ocl_scatter_add,
        .fused = dla__ocl_fused,
        .fused_reduce = dla__ocl_fused_reduce,
        .random = dla__ocl_random,
        .plan_begin = dla__ocl_plan_begin,
        .plan_end = dla__ocl_plan_end,
        /* plan_replay (1.5), coll_* (1.6) and mem_trim (1.7) stay NULL:
         * their documented defaults. */
        .fused_multi = dla__ocl_fused_multi,
    };
    memcpy(table, &mine, size);
    return DLA_OK;
}

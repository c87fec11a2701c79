/*
 * plugin.c - the cuda plugin's entry point: ABI negotiation, the GPUs the
 * CUDA driver shows (cuda:0, cuda:1, ...), device contexts, and the table
 * that points at the kernels in the other files.
 *
 * cuda plugin: design choices
 * ---------------------------
 * - No driver, no device, no failure: the plugin links only the static
 *   CUDA runtime, which opens the driver (libcuda.so.1) itself. Before
 *   asking it, device_count looks for the driver with dlopen, so a machine
 *   without one gets "no CUDA driver: libcuda.so.1 not found" rather than
 *   the runtime's "driver version is insufficient", and the registry goes
 *   on with the other plugins.
 * - One non-blocking stream per device; kernels, device copies and the
 *   libraries' calls are enqueued on it. copy_to_host and sync wait for it;
 *   a small copy_to_device goes through pinned staging slots and does
 *   not (memory.c).
 * - Memory: a pool of device blocks in size classes (memory.c), so a
 *   training step allocates nothing from the driver after the first.
 * - GEMM through cuBLAS and convolutions through cuDNN, both opened with
 *   dlopen when first needed (libs.c), exact float32 unless
 *   DLACCEL_CUDA_TF32=1; convolutions cuDNN cannot express (asymmetric
 *   padding) and every other kernel are the plugin's own (*_kernels.cu).
 * - Fused programs (fused, fused_reduce, and since ABI 1.8 fused_multi,
 *   which also stores earlier registers) are interpreted by one kernel,
 *   and compiled with NVRTC into their own kernel when they come back
 *   (fused.c, nvrtc.c).
 * - A planned replay that recurs with the same memory is captured into a
 *   CUDA graph and then launched as one (plan.c, ABI 1.5 plan_replay;
 *   DLACCEL_CUDA_GRAPHS=0 turns that off); other replays are plain
 *   launches with one wait at the end.
 * - float32 and float64 everywhere (every CUDA GPU has double); fill,
 *   copy and gather move the bits of any dtype.
 */
#include "plugins/cuda/cu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const dla_plugin_host *dla__cu_host;
dla_kit dla__cu_kit;

/* Pinned bytes per staging slot (DLA__CU_STAGING_SLOTS of them): a
 * mini-batch of 1024 28x28 single images (3.2 MB) is a small copy. */
#define DLA__CU_STAGING (4u << 20)

static struct {
    int scanned;
    int count;
    char why[256]; /* why there is no device */
} found;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

static void scan(void)
{
    /* The runtime would open the driver itself; looking first gives the
     * plain reason on a machine that has none. */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        snprintf(found.why, sizeof found.why, "no CUDA driver: libcuda.so.1 not found");
        return;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(found.why, sizeof found.why, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        cudaGetLastError();
        n = 0;
    } else if (n == 0) {
        snprintf(found.why, sizeof found.why, "the CUDA driver shows no GPU");
    }
    /* The driver stays loaded: the runtime holds it too. */
    found.count = n;
}

static dla_status device_count(int *count)
{
    pthread_mutex_lock(&scan_lock);
    if (!found.scanned) {
        scan();
        found.scanned = 1;
        if (found.count == 0)
            dla__cu_host->log(DLA_LOG_INFO, "%s", found.why);
    }
    *count = found.count;
    pthread_mutex_unlock(&scan_lock);
    /* The registry shows the message of a plugin with no device. */
    if (*count == 0)
        dla__cu_host->error(DLA_ERR_DEVICE, "cuda: %s", found.why);
    return DLA_OK;
}

static dla_status check_index(const char *member, int index)
{
    int n;
    device_count(&n);
    if (index < 0 || index >= n)
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT,
                                   "cuda %s: argument index: %d, the plugin has %d device%s%s%s",
                                   member, index, n, n == 1 ? "" : "s", n == 0 ? ": " : "",
                                   n == 0 ? found.why : "");
    return DLA_OK;
}

static int attr(enum cudaDeviceAttr a, int index)
{
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, index) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}

static int env_flag(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    return strcmp(v, "0") != 0;
}

static dla_status device_info(int index, dla_plugin_device_info *info)
{
    dla_status s = check_index("device_info", index);
    if (s != DLA_OK)
        return s;
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaError_t e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess)
        return dla__cu_err(e, "device_info: cudaGetDeviceProperties");
    dla_plugin_device_info mine;
    memset(&mine, 0, sizeof mine);
    snprintf(mine.description, sizeof mine.description, "%.127s", prop.name);
    snprintf(mine.type, sizeof mine.type, "gpu");
    mine.memory_bytes = prop.totalGlobalMem;
    mine.compute_units = prop.multiProcessorCount;
    mine.host_addressable = 0;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    /* As device_open decides: profiling waits after each kernel, which a
     * capture cannot hold, so it takes graphs (and one kernels) off too. */
    const int graphs = env_flag("DLACCEL_CUDA_GRAPHS", 1) && !dla__cu_profiling();
    const int one_kernel = env_flag("DLACCEL_CUDA_ONE_KERNEL", 1);
    const int plan_wait = env_flag("DLACCEL_CUDA_PLAN_WAIT", 0);
    snprintf(mine.properties, sizeof mine.properties,
             "compute capability=%d.%d; driver=%d.%d; runtime=%d.%d; gemm=cuBLAS%s; conv=cuDNN "
             "(own kernels when it cannot); graphs=%s; one-kernel replays=%s; replays %s",
             prop.major, prop.minor, driver / 1000, driver % 1000 / 10, runtime / 1000,
             runtime % 1000 / 10, one_kernel ? " (small ones: own kernel)" : "",
             graphs ? "on" : "off", graphs && one_kernel ? "on" : "off",
             plan_wait ? "wait (DLACCEL_CUDA_PLAN_WAIT=1)" : "queue, as launches do");
    size_t size = info->struct_size < sizeof mine ? info->struct_size : sizeof mine;
    mine.struct_size = info->struct_size;
    memcpy(info, &mine, size);
    return DLA_OK;
}


static void device_free(dla__cu_device *d)
{
    if (d->staging)
        cudaFreeHost(d->staging);
    for (int i = 0; i < DLA__CU_STAGING_SLOTS; i++)
        if (d->staging_done[i])
            cudaEventDestroy(d->staging_done[i]);
    if (d->stream)
        cudaStreamDestroy(d->stream);
    cudaGetLastError();
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->gate);
    dla__cu_host->free(d);
}

static dla_status device_open(int index, void **out)
{
    const dla_plugin_host *h = dla__cu_host;
    dla_status s = check_index("device_open", index);
    if (s != DLA_OK)
        return s;
    dla__cu_device *d = h->alloc(sizeof *d, 0);
    if (!d)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cuda device_open: the device context");
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->gate, NULL);
    d->index = index;
    d->kit = dla__cu_kit;
    d->tf32 = env_flag("DLACCEL_CUDA_TF32", 0);
    d->deterministic = env_flag("DLACCEL_CUDA_DETERMINISTIC", 0);
    d->engines_off = !env_flag("DLACCEL_CUDA_CONV_ENGINES", 1);
    d->fused_off32 = env_flag("DLACCEL_CUDA_FUSED_OFF32", 1);
    d->fused_layout = env_flag("DLACCEL_CUDA_FUSED_LAYOUT", 1);
    d->fr_rows = env_flag("DLACCEL_CUDA_FR_ROWS", 1);
    d->onekern_off = !env_flag("DLACCEL_CUDA_ONE_KERNEL", 1);
    /* Off by default: on the H100 (2026-11-27) the graphs with runs of
     * small launches as one node replayed slower (digit CNN step at batch
     * 128 0.824 against 0.668 ms, inference 0.164 against 0.146 ms): one
     * block walking a run costs more than the nodes it replaces. */
    d->seg_off = d->onekern_off || !env_flag("DLACCEL_CUDA_SEGMENTS", 0);
    d->plan_wait = env_flag("DLACCEL_CUDA_PLAN_WAIT", 0);
    d->k1_profile = env_flag("DLACCEL_CUDA_K1_PROFILE", 0);
    /* Profiling waits after each kernel, which a capture cannot hold. */
    d->graphs_off = !env_flag("DLACCEL_CUDA_GRAPHS", 1) || dla__cu_profiling();
    char what[64];
    snprintf(what, sizeof what, "device_open %d", index);
    cudaError_t e = cudaSetDevice(index);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    for (int i = 0; i < DLA__CU_STAGING_SLOTS && e == cudaSuccess; i++) {
        e = cudaEventCreateWithFlags(&d->staging_done[i], cudaEventDisableTiming);
        if (e == cudaSuccess)
            e = cudaEventRecord(d->staging_done[i], d->stream);
    }
    if (e == cudaSuccess &&
        cudaMallocHost(&d->staging, (size_t)DLA__CU_STAGING * DLA__CU_STAGING_SLOTS) == cudaSuccess)
        d->staging_bytes = DLA__CU_STAGING;
    else if (e == cudaSuccess)
        cudaGetLastError(); /* no pinned memory: every copy goes direct */
    if (e != cudaSuccess) {
        s = dla__cu_err(e, what);
        cudaGetLastError();
        device_free(d);
        return s;
    }
    d->sms = attr(cudaDevAttrMultiProcessorCount, index);
    d->cc_major = attr(cudaDevAttrComputeCapabilityMajor, index);
    d->cc_minor = attr(cudaDevAttrComputeCapabilityMinor, index);
    d->smem_per_block = (size_t)attr(cudaDevAttrMaxSharedMemoryPerBlock, index);
    d->clock_khz = attr(cudaDevAttrClockRate, index);
    /* The compiled one kernel is on by default since an H200 measured it
     * (2026-11-27, 30 replays to a sync: the tiny MLP's 15.1 us
     * interpreted, 5.4-5.6 compiled; the cross-entropy's 62 against
     * 10.8). Launched early (programmatic dependent launch, compute
     * capability 9.0 on) it gave the interpreted kernel 0.8 us, but the
     * compiled one 0.1-0.5 us on the MLP and -0.6 on the cross-entropy:
     * off. The data in shared memory and the joined steps measured no
     * faster either (docs/environment.md). */
    d->k1_pdl = d->cc_major >= 9 && env_flag("DLACCEL_CUDA_K1_PDL", 0);
    d->k1_shared = env_flag("DLACCEL_CUDA_K1_SHARED", 0);
    d->k1_join = env_flag("DLACCEL_CUDA_K1_JOIN", 0);
    d->k1_compile = env_flag("DLACCEL_CUDA_K1_COMPILE", 1);
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    if (cudaGetDeviceProperties(&prop, index) == cudaSuccess)
        snprintf(d->name, sizeof d->name, "%.127s", prop.name);
    /* The one kernel's variants that are on (docs/environment.md), as
     * " (a, b)". */
    char k1_how[128] = "";
    const char *const k1_names[4] = {"compiled", "launched early", "data in shared memory",
                                     "independent steps joined"};
    const int k1_on[4] = {d->k1_compile, d->k1_pdl, d->k1_shared, d->k1_join};
    for (int i = 0, any = 0; i < 4; i++)
        if (k1_on[i]) {
            const size_t at = strlen(k1_how);
            snprintf(k1_how + at, sizeof k1_how - at, "%s%s", any++ ? ", " : " (", k1_names[i]);
        }
    if (k1_how[0])
        snprintf(k1_how + strlen(k1_how), sizeof k1_how - strlen(k1_how), ")");
    h->log(DLA_LOG_INFO, "cuda:%d: %s, compute capability %d.%d, %d multiprocessors, graphs %s, "
                         "one-kernel replays %s%s, runs of small launches as one node %s, "
                         "replays %s, float32 %s",
           index, d->name, d->cc_major, d->cc_minor, d->sms, d->graphs_off ? "off" : "on",
           d->graphs_off || d->onekern_off ? "off" : "on",
           d->graphs_off || d->onekern_off ? "" : k1_how,
           d->graphs_off || d->seg_off ? "off" : "on",
           d->plan_wait ? "waited for" : "queued", d->tf32 ? "with TF32 tensor cores" : "exact");
    *out = d;
    return DLA_OK;
}

static void device_close(void *dev)
{
    dla__cu_device *d = dev;
    if (cudaSetDevice(d->index) == cudaSuccess)
        cudaStreamSynchronize(d->stream);
    cudaGetLastError();
    dla__cu_plan_release(d);
    dla__cu_k1_release(d);
    dla__cu_seg_release(d);
    dla__cu_fused_release(d);
    dla__cu_conv_release(d);
    dla__cu_libs_release(d);
    dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: closing; the pool held %zu bytes from the driver",
                      d->index, d->pool_reserved);
    dla__cu_pool_release(d);
    device_free(d);
}

static int supports(void *dev, dla_kernel kernel, dla_dtype dtype)
{
    (void)dev;
    if ((unsigned)dtype >= DLA_DTYPE_COUNT)
        return 0;
    const int flt = dtype == DLA_F32 || dtype == DLA_F64;
    switch (kernel) {
    /* Bit patterns, or conversions between every pair. */
    case DLA_KERNEL_FILL:
    case DLA_KERNEL_STRIDED_COPY:
    case DLA_KERNEL_GATHER:
    case DLA_KERNEL_CAST: return 1;
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
    case DLA_KERNEL_FUSED_MULTI:
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR:
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: return flt;
    default: return 0;
    }
}

static void shutdown_plugin(void)
{
    /* Nothing: the runtime tears itself down at exit. */
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *host, dla_plugin *table)
{
    dla_status s = dla_kit_check_init(host, table, "cuda");
    if (s != DLA_OK || host->log == NULL) /* cuda logs what it finds */
        return s != DLA_OK ? s : DLA_ERR_PLUGIN;
    dla__cu_host = host;
    dla__cu_kit = (dla_kit){.host = host, .name = "cuda", .mem_bytes = dla__cu_mem_bytes};
    const size_t size = dla_kit_table_size(table);
    dla_plugin mine = {
        .struct_size = size,
        .abi_major = DLA_PLUGIN_ABI_MAJOR,
        .abi_minor = 8, /* the minor this plugin implements (docs/plugins.md §3), not the header's */
        .device_count = device_count,
        .device_info = device_info,
        .device_open = device_open,
        .device_close = device_close,
        .shutdown = shutdown_plugin,
        .mem_alloc = dla__cu_host_mem_alloc,
        .mem_free = dla__cu_host_mem_free,
        .copy_to_device = dla__cu_copy_to_device,
        .copy_to_host = dla__cu_copy_to_host,
        .copy_on_device = dla__cu_copy_on_device,
        .sync = dla__cu_sync,
        .supports = supports,
        .fill = dla__cu_fill,
        .strided_copy = dla__cu_strided_copy,
        .unary = dla__cu_unary,
        .binary = dla__cu_binary,
        .reduce = dla__cu_reduce,
        .gemm = dla__cu_gemm,
        .cast = dla__cu_cast,
        .ternary = dla__cu_ternary,
        .conv_forward = dla__cu_conv_forward,
        .conv_backward_data = dla__cu_conv_backward_data,
        .conv_backward_filter = dla__cu_conv_backward_filter,
        .pool_forward = dla__cu_pool_forward,
        .pool_backward = dla__cu_pool_backward,
        .gather = dla__cu_gather,
        .scatter_add = dla__cu_scatter_add,
        .fused = dla__cu_fused,
        .fused_reduce = dla__cu_fused_reduce,
        .random = dla__cu_random,
        .plan_begin = dla__cu_plan_begin,
        .plan_end = dla__cu_plan_end,
        .plan_replay = dla__cu_plan_replay,
        .mem_trim = dla__cu_mem_trim,
        .fused_multi = dla__cu_fused_multi,
    };
    dla__cu_coll_table(&mine);
    if (dla__cu_profiling())
        dla__cu_profile_table(&mine);
    memcpy(table, &mine, size);
    return DLA_OK;
}

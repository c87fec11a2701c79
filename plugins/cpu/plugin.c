/*
 * plugin.c - the cpu plugin's entry point: ABI negotiation, its one device
 * "cpu:0", and the table that points at the kernels in the other files.
 *
 * cpu plugin: design choices
 * --------------------------
 * - Memory is host memory from host->alloc, 64-byte aligned; a dla_mem is
 *   the pointer. Work runs on the calling thread (the queue is synchronous),
 *   so sync is NULL and copies are memcpy. Freed blocks of 1 MiB and more
 *   are kept in a small bounded cache for the next request of their size
 *   class: first-touch page faults on a fresh 64 MiB result cost more than
 *   the kernel that fills it (memory.c).
 * - Threading is OpenMP (omp_get_max_threads, i.e. OMP_NUM_THREADS), but
 *   for small kernels (an LSTM step's product, gate program and gradient
 *   sums), whose items go to share.c's helpers, never waited for unless
 *   they took one: as many threads, no barrier of the team.
 *   Kernels under DLA__CPU_PAR_MIN elements stay on the calling thread.
 *   Elementwise kernels first coalesce the views' dims; dense operands of
 *   one layout take a single flat `omp parallel for simd` loop, anything
 *   else (strides, broadcast through stride 0) runs along the innermost dim
 *   as a contiguous inner loop, with the rows split over the team (and long
 *   rows cut into pieces when rows are fewer than threads).
 * - Reductions go parallel over groups of outputs, or, when outputs are
 *   few (a full sum), over parts of the reduced range whose partials are
 *   combined in order (ties keep the first position, NaN wins).
 *   Sums are accumulated in double for both dtypes, in blocks of 1024 added
 *   up afterwards: a single result is rounded once, a double one carries an
 *   error that grows with the block and block count, not with n.
 * - GEMM is OpenBLAS's cblas_sgemm/dgemm on the OpenMP build. One page is
 *   shared out in tiles of C that follow its shape, each a single-threaded
 *   OpenBLAS call (gemm_tiles.c: OpenBLAS's own threading gives other bits
 *   with other thread counts); several small pages (m*n*k <= 2^21) with
 *   disjoint C go over an OpenMP loop (dynamic chunks, one thread per page:
 *   OpenBLAS stays single-threaded inside a parallel region), larger ones
 *   one after the other, each in its tiles.
 * - Results have the same bits with any OMP_NUM_THREADS: wherever a sum is
 *   shared out (reductions, fused sums, a convolution's filter gradient
 *   over the batch, GEMM tiles), its pieces follow the work, never the
 *   thread count (tests/test_thread_bits).
 * - Casts and fills saturate out-of-range values and map NaN to 0 where the
 *   ABI leaves it open (see copy.c); binary max/min ignore a NaN operand
 *   as MATLAB does.
 * - ABI 1.1: comparisons and where are elementwise bodies like the others,
 *   with a logical (one byte) z or cond; a logical z may not share memory
 *   with its float operands. Pooling (pool.c) goes parallel over rows of
 *   its output, and its backward gathers into each x element from the
 *   windows that cover it, so overlapping windows need no atomics.
 *   scatter_add (index.c) splits the slice or the target positions over
 *   the team, never the index, so repeated positions add race-free and in
 *   index order. Gather takes every dtype; the rest single and double.
 *   An op or mode value this build does not know is DLA_ERR_UNSUPPORTED.
 * - ABI 1.2: fused programs (fused.c) run in blocks of 512 elements, the
 *   program interpreted once per block with each step a vector loop over
 *   it, intermediates in per-thread stack registers; the op expressions are
 *   elementwise.c's own (elementwise_ops.h), so a program gives the bits of
 *   its steps launched one by one.
 * - ABI 1.3: fused_reduce runs the same blocks and adds each block's
 *   values into per-thread double accumulators, so its sums carry one
 *   rounding, as the reduce kernel's do.
 * - ABI 1.3: the random kernel is core/philox.c compiled in (random.c), the
 *   reference for every other plugin's; the plan hooks are left NULL, as
 *   a synchronous device has nothing to batch or wait for.
 * - ABI 1.8: fused_multi is the fused interpreter storing, besides y, the
 *   registers asked for into their extra results block by block (copied
 *   where laid out as the space, else scattered), so each gets the bits of
 *   the steps launched one by one.
 * - ABI 1.9: conv_forward_fused and conv_backward_data_fused run the
 *   pass's own paths (Winograd, direct, im2col), each calling the fused
 *   interpreter on the images it has just written, on the same thread,
 *   while they are in its cache (conv.c, dla__cpu_fused_images).
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/share.h"
#include "plugins/cpu/vmath.h"

#include "core/openblas_core.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const dla_plugin_host *dla__cpu_host;
dla_kit dla__cpu_kit;

/* The device context: there is one device and nothing to keep per open. */
static struct cpu_device {
    int index;
} the_device;

static dla_status device_count(int *count)
{
    *count = 1;
    return DLA_OK;
}

/* The CPU's model name from /proc/cpuinfo into buf; "cpu" when not found. */
static void cpu_model(char *buf, size_t size)
{
    static const char *const keys[] = {"model name", "Model", "Hardware", "cpu model"};
    snprintf(buf, size, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t n = strlen(keys[k]);
            char *colon = strchr(line, ':');
            if (strncmp(line, keys[k], n) != 0 || colon == NULL)
                continue;
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            v[strcspn(v, "\n")] = '\0';
            if (*v) {
                snprintf(buf, size, "%s", v);
                found = 1;
            }
            break;
        }
    }
    fclose(f);
}

/* The widest vector extension the kernels run with on this CPU. The
 * plugin is compiled for the baseline (no -march), and its AVX-512 and
 * AVX2 kernels (convolutions, thin GEMM, fused programs, sums) are picked
 * at run time, so the compile-time macros alone said "sse2" while
 * AVX-512 kernels ran. */
static const char *simd_name(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return "avx512f";
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
#endif
#if defined(__AVX512F__)
    return "avx512f";
#elif defined(__AVX2__)
    return "avx2";
#elif defined(__AVX__)
    return "avx";
#elif defined(__SSE4_2__)
    return "sse4.2";
#elif defined(__SSE2__)
    return "sse2";
#elif defined(__ARM_FEATURE_SVE)
    return "sve";
#elif defined(__ARM_NEON)
    return "neon";
#else
    return "none";
#endif
}

static dla_status device_info(int index, dla_plugin_device_info *info)
{
    if (index != 0)
        return dla__cpu_host->error(
            DLA_ERR_INVALID_ARGUMENT,
            "cpu device_info: argument index: %d, the plugin has device 0 only", index);
    dla__cpu_threads_check();
    dla_plugin_device_info mine;
    memset(&mine, 0, sizeof mine);
    cpu_model(mine.description, sizeof mine.description);
    snprintf(mine.type, sizeof mine.type, "cpu");
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    mine.memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    mine.compute_units = omp_get_max_threads();
    mine.host_addressable = 1;

    /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21". */
    char blas[64] = "OpenBLAS";
    const char *config = openblas_get_config();
    if (config != NULL) {
        size_t words = 0, n = 0;
        while (config[n] && n < sizeof blas - 1 && !(config[n] == ' ' && ++words == 2))
            n++;
        memcpy(blas, config, n);
        blas[n] = '\0';
    }
    const char *core = openblas_get_corename();
    snprintf(mine.properties, sizeof mine.properties,
             "simd=%s; blas=%s%s%s%s; threads=%d; vmath=%s", simd_name(), blas, core ? " (" : "",
             core ? core : "", core ? ")" : "", omp_get_max_threads(), dla__cpu_vmath_name());

    /* Only what lies within the host's struct. */
    size_t size = info->struct_size < sizeof mine ? info->struct_size : sizeof mine;
    mine.struct_size = info->struct_size;
    memcpy(info, &mine, size);
    return DLA_OK;
}

static dla_status device_open(int index, void **dev)
{
    if (index != 0)
        return dla__cpu_host->error(
            DLA_ERR_INVALID_ARGUMENT,
            "cpu device_open: argument index: %d, the plugin has device 0 only", index);
    the_device.index = index;
    *dev = &the_device;
    return DLA_OK;
}

static void device_close(void *dev)
{
    dla__cpu_cache_flush();
}

static int supports(void *dev, dla_kernel kernel, dla_dtype dtype)
{
    if ((unsigned)dtype >= DLA_DTYPE_COUNT)
        return 0;
    switch (kernel) {
    case DLA_KERNEL_FILL:
    case DLA_KERNEL_STRIDED_COPY:
    case DLA_KERNEL_CAST: return 1;
    case DLA_KERNEL_UNARY:
    case DLA_KERNEL_BINARY:
    case DLA_KERNEL_REDUCE:
    case DLA_KERNEL_GEMM:
    case DLA_KERNEL_TERNARY:
    case DLA_KERNEL_POOL_FORWARD:
    case DLA_KERNEL_POOL_BACKWARD:
    case DLA_KERNEL_SCATTER_ADD:
    case DLA_KERNEL_CONV_FORWARD:
    case DLA_KERNEL_CONV_FORWARD_FUSED:
    case DLA_KERNEL_CONV_BACKWARD_DATA_FUSED:
    case DLA_KERNEL_CONV_BACKWARD_DATA:
    case DLA_KERNEL_CONV_BACKWARD_FILTER:
    case DLA_KERNEL_FUSED:
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR:
    case DLA_KERNEL_FUSED_MULTI: return dtype == DLA_F32 || dtype == DLA_F64;
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: return dtype == DLA_F32 || dtype == DLA_F64;
    /* Gathering moves elements without reading them as numbers. */
    case DLA_KERNEL_GATHER: return 1;
    default: return 0;
    }
}

/* Every entry point that may start an OpenMP team first makes sure the
 * calling thread's team size is within the limit (threads.c). */
#define CHECKED(name, params, args)                                                                \
    static dla_status checked_##name params                                                        \
    {                                                                                              \
        dla__cpu_threads_check();                                                                  \
        return dla__cpu_##name args;                                                               \
    }
CHECKED(copy_to_device, (void *dev, dla_mem dst, size_t off, const void *src, size_t bytes),
        (dev, dst, off, src, bytes))
CHECKED(copy_to_host, (void *dev, void *dst, dla_mem src, size_t off, size_t bytes),
        (dev, dst, src, off, bytes))
CHECKED(copy_on_device, (void *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff, size_t bytes),
        (dev, dst, doff, src, soff, bytes))
CHECKED(fill, (void *dev, const dla_view *y, double value), (dev, y, value))
CHECKED(strided_copy, (void *dev, const dla_view *y, const dla_view *x), (dev, y, x))
CHECKED(cast, (void *dev, const dla_view *y, const dla_view *x), (dev, y, x))
CHECKED(unary, (void *dev, const dla_unary_args *a), (dev, a))
CHECKED(binary, (void *dev, const dla_binary_args *a), (dev, a))
CHECKED(ternary, (void *dev, const dla_ternary_args *a), (dev, a))
CHECKED(reduce, (void *dev, const dla_reduce_args *a), (dev, a))
CHECKED(gemm, (void *dev, const dla_gemm_args *a), (dev, a))
CHECKED(pool_forward, (void *dev, const dla_pool_args *a), (dev, a))
CHECKED(pool_backward, (void *dev, const dla_pool_args *a), (dev, a))
CHECKED(gather, (void *dev, const dla_index_args *a), (dev, a))
CHECKED(scatter_add, (void *dev, const dla_index_args *a), (dev, a))
CHECKED(conv_forward, (void *dev, const dla_conv_args *a), (dev, a))
CHECKED(conv_backward_data, (void *dev, const dla_conv_args *a), (dev, a))
CHECKED(conv_backward_filter, (void *dev, const dla_conv_args *a), (dev, a))
CHECKED(fused, (void *dev, const dla_fused_args *a), (dev, a))
CHECKED(fused_reduce, (void *dev, const dla_fused_reduce_args *a), (dev, a))
CHECKED(random, (void *dev, const dla_random_args *a), (dev, a))
CHECKED(fused_multi, (void *dev, const dla_fused_multi_args *a), (dev, a))
CHECKED(conv_forward_fused, (void *dev, const dla_conv_fused_args *a), (dev, a))
CHECKED(conv_backward_data_fused, (void *dev, const dla_conv_fused_args *a), (dev, a))
#undef CHECKED

/* OpenBLAS's kernels against the CPU's instruction set, once at load: a
 * set below it runs GEMM at a fraction of its speed (a quarter on an
 * AVX-512 Xeon OpenBLAS 0.3.21 does not know: core/blas_defaults.c). The
 * library sets OPENBLAS_CORETYPE before it loads this plugin, so this
 * happens where it could not: the program loaded OpenBLAS itself. A set
 * the user named (OPENBLAS_CORETYPE, DLACCEL_OPENBLAS_CORE=off) is theirs:
 * said at info. */
static void blas_check(void)
{
    const char *core = openblas_get_corename(), *fit = dla__openblas_core_for_cpu();
    if (!dla__openblas_core_below(core, fit) || !dla__cpu_host->log)
        return;
    static atomic_int warned; /* the core names a bad value */
    const int chosen = dla__openblas_core_user_set() || dla__openblas_core_off(&warned, NULL);
    dla__cpu_host->log(chosen ? DLA_LOG_INFO : DLA_LOG_WARN,
                       "OpenBLAS runs its %s kernels on a CPU with %s, where its %s kernels are "
                       "several times faster%s",
                       core, dla__openblas_core_isa(fit), fit,
                       chosen ? " (as OPENBLAS_CORETYPE or DLACCEL_OPENBLAS_CORE=off asked)"
                              : ": the program loaded OpenBLAS before dlaccel could choose; set "
                                "OPENBLAS_CORETYPE before it starts (docs/environment.md)");
}

/* The share helpers run this library's code: they end before the
 * registry's dlclose can unmap it. */
static void shutdown_plugin(void)
{
    dla__cpu_share_stop();
    dla__cpu_cache_flush();
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *host, dla_plugin *table)
{
    const dla_status s = dla_kit_check_init(host, table, "cpu");
    if (s != DLA_OK)
        return s;
    dla__cpu_host = host;
    dla__cpu_kit = (dla_kit){.host = host, .name = "cpu", .mem_bytes = dla__cpu_mem_bytes};
    dla__cpu_threads_init();
    blas_check();

    const size_t size = dla_kit_table_size(table);
    const dla_plugin mine = {
        .struct_size = size,
        .abi_major = DLA_PLUGIN_ABI_MAJOR,
        .abi_minor = 9, /* the minor this plugin implements (docs/plugins.md §3), not the header's */
        .device_count = device_count,
        .device_info = device_info,
        .device_open = device_open,
        .device_close = device_close,
        .shutdown = shutdown_plugin,
        .mem_alloc = dla__cpu_mem_alloc,
        .mem_free = dla__cpu_mem_free,
        .copy_to_device = checked_copy_to_device,
        .copy_to_host = checked_copy_to_host,
        .copy_on_device = checked_copy_on_device,
        .sync = NULL,
        .supports = supports,
        .fill = checked_fill,
        .strided_copy = checked_strided_copy,
        .unary = checked_unary,
        .binary = checked_binary,
        .reduce = checked_reduce,
        .gemm = checked_gemm,
        .cast = checked_cast,
        .ternary = checked_ternary,
        .pool_forward = checked_pool_forward,
        .pool_backward = checked_pool_backward,
        .gather = checked_gather,
        .scatter_add = checked_scatter_add,
        .conv_forward = checked_conv_forward,
        .conv_backward_data = checked_conv_backward_data,
        .conv_backward_filter = checked_conv_backward_filter,
        .fused = checked_fused,
        .fused_reduce = checked_fused_reduce,
        /* ABI 1.3: no plan hooks (plan_begin, plan_end NULL): every call
         * already finishes before it returns, so a plan has nothing to
         * wait for at its end. */
        .random = checked_random,
        /* ABI 1.6: no collectives of its own (host memory goes over the
         * communicator plugin as it is). */
        .mem_trim = dla__cpu_mem_trim,
        /* ABI 1.8: the fused interpreter with extra results (fused.c). */
        .fused_multi = checked_fused_multi,
        /* ABI 1.9: the epilogue of each image (or run of images) runs on
         * the thread that convolved it, as soon as it is written (conv.c). */
        .conv_forward_fused = checked_conv_forward_fused,
        .conv_backward_data_fused = checked_conv_backward_data_fused,
    };
    /* Members past the host's struct_size are not there to be written. */
    memcpy(table, &mine, size);
    return DLA_OK;
}

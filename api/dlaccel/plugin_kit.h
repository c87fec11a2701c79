/*
 * dlaccel/plugin_kit.h - the plugin kit: the argument checks and the
 * geometry every device plugin needs, as static inline functions.
 *
 * A plugin includes this header beside dlaccel/plugin.h and still links
 * nothing of libdlaccel: every function here is inline and reaches the
 * host only through the dla_plugin_host table the plugin was given. The
 * in-tree cpu and opencl plugins use it for all of their checks, so a
 * plugin built on it refuses what they refuse, with the same statuses and
 * messages (its own name first).
 *
 * What is here (each function is documented where it is defined):
 * - this header: the kit context (dla_kit), dtype sizes and names, dims
 *   as text, element counts, and the checks of one view (in bounds,
 *   equal dims, float dtype), overlaps between views;
 * - dlaccel/plugin_kit_args.h (included below): the whole argument check
 *   of each kernel whose arguments need no geometry (fill, strided_copy,
 *   cast, unary, binary, ternary, reduce, gemm, fused, fused_reduce,
 *   random) and of the memory members' copies;
 * - dlaccel/plugin_kit_geom.h (included below): convolution, pooling and
 *   gather/scatter_add arguments checked and reduced to plain geometry
 *   (sizes, strides, offsets) a kernel loops over.
 * The random stream's definition, to the bit, is dlaccel/plugin_philox.h.
 *
 * Conventions of every check: it returns DLA_OK, or the status the ABI
 * names with a message through host->error() that starts with the
 * plugin's name and the kernel ("cpu gemm: argument a (...): ..."). Views
 * are checked before anything reads their members beyond struct_size.
 * A kit function never allocates, never prints and never reads device
 * memory.
 */
#ifndef DLACCEL_PLUGIN_KIT_H
#define DLACCEL_PLUGIN_KIT_H

#include <dlaccel/plugin.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
#define DLA__KIT_STATIC_ASSERT static_assert
extern "C" {
#else
#define DLA__KIT_STATIC_ASSERT _Static_assert
#endif

/* What the kit needs of the plugin that uses it. Fill one at init (a
 * static one is fine: the host table lives until the process ends). */
typedef struct dla_kit {
    /* The host table dlaccel_plugin_init received: errors go through it. */
    const dla_plugin_host *host;
    /* The plugin's name, the first word of every message ("cpu"). */
    const char *name;
    /* Bytes of device memory behind a handle, so that a view reaching
     * past them is refused before a kernel touches it. NULL: the bounds
     * are not checked (a plugin that cannot tell). */
    size_t (*mem_bytes)(dla_mem mem);
    /* Why the device has no double kernels, as a message ends ("the
     * device has no cl_khr_fp64"); NULL: single and double both run.
     * Every check that takes a float dtype reads it. */
    const char *no_f64;
} dla_kit;

/* ------------------------------------------------------------- dtypes */

/* Bytes per element of dtype; 0 for a value outside DLA_DTYPE_LIST (a
 * plugin cannot call dla_dtype_size, which lives in libdlaccel). */
static inline size_t dla_kit_dtype_size(dla_dtype dtype)
{
    static const size_t sizes[] = {
#define DLA__KIT_DTYPE_SIZE(name, str, size) size,
        DLA_DTYPE_LIST(DLA__KIT_DTYPE_SIZE)
#undef DLA__KIT_DTYPE_SIZE
    };
    DLA__KIT_STATIC_ASSERT(sizeof sizes / sizeof sizes[0] == DLA_DTYPE_COUNT, "a size per dtype");
    return (unsigned)dtype < DLA_DTYPE_COUNT ? sizes[dtype] : 0;
}

/* MATLAB's class name of dtype ("single"), "unknown" outside the list. */
static inline const char *dla_kit_dtype_name(dla_dtype dtype)
{
    static const char *const names[] = {
#define DLA__KIT_DTYPE_NAME(name, str, size) str,
        DLA_DTYPE_LIST(DLA__KIT_DTYPE_NAME)
#undef DLA__KIT_DTYPE_NAME
    };
    return (unsigned)dtype < DLA_DTYPE_COUNT ? names[dtype] : "unknown";
}

/* Nonzero when dtype runs on this plugin's float kernels: single always,
 * double unless kit->no_f64 says why not. */
static inline int dla_kit_float_ok(const dla_kit *kit, dla_dtype dtype)
{
    return dtype == DLA_F32 || (dtype == DLA_F64 && kit->no_f64 == NULL);
}

/* ---------------------------------------------------------- dims, views */

/* Room for any dims as text. */
#define DLA_KIT_DIMS_BUF 160

/* dims as "3x4" ("scalar" for none) into buf, which it returns. */
static inline const char *dla_kit_dims_str(char *buf, size_t size, int ndims,
                                           const int64_t *dims)
{
    if (ndims <= 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < ndims && used < size; d++) {
        int n = snprintf(buf + used, size - used, d ? "x%lld" : "%lld", (long long)dims[d]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return buf;
}

/* Elements of a view whose dims are checked (>= 0, and their product
 * within int64 unless one is 0: dla_kit_check_view). A zero dim is looked
 * for first: an empty view's other dims may overflow together
 * (2^32 x 2^32 x 0). */
static inline int64_t dla_kit_numel(const dla_view *v)
{
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 0;
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

/* Size of dim i of v, 1 past its ndims; its stride, 0 past its ndims. */
static inline int64_t dla_kit_dim(const dla_view *v, int i)
{
    return i < v->ndims ? v->dims[i] : 1;
}
static inline int64_t dla_kit_stride(const dla_view *v, int i)
{
    return i < v->ndims ? v->strides[i] : 0;
}

/* Checks view argument arg of kernel: struct_size, ndims, dtype, dims and
 * strides >= 0, offset >= 0, at most INT64_MAX elements (empty views
 * aside), and, when it has elements, a memory handle
 * and its last element inside the handle's bytes (kit->mem_bytes).
 * DLA_ERR_INVALID_ARGUMENT (DLA_ERR_DTYPE for an unknown dtype). */
static inline dla_status dla_kit_check_view(const dla_kit *kit, const char *kernel,
                                            const char *arg, const dla_view *v)
{
    const dla_plugin_host *h = kit->host;
    const char *p = kit->name;
    if (v->struct_size < sizeof(dla_view))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument %s: view struct_size %zu is smaller than ABI 1.0's %zu",
                        p, kernel, arg, v->struct_size, sizeof(dla_view));
    if (v->ndims < 0 || v->ndims > DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument %s: ndims %d outside 0..%d", p,
                        kernel, arg, (int)v->ndims, DLA_MAX_DIMS);
    if ((unsigned)v->dtype >= DLA_DTYPE_COUNT)
        return h->error(DLA_ERR_DTYPE, "%s %s: argument %s: unknown dtype %d", p, kernel, arg,
                        (int)v->dtype);
    char buf[DLA_KIT_DIMS_BUF];
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument %s: negative dim in %s", p,
                            kernel, arg, dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims));
        if (v->strides[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: argument %s (dims %s): stride %lld of dim %d is negative", p,
                            kernel, arg, dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims),
                            (long long)v->strides[d], d + 1);
    }
    if (v->offset < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument %s: negative offset %lld", p,
                        kernel, arg, (long long)v->offset);
    /* Dims of stride 0 take no memory, so a view may have more elements
     * than an int64 counts (2^32 x 2^32 of one value): every count taken
     * from its dims would wrap (a sum of 2^64 ones came out 0, its mean
     * NaN). An empty view's other dims may overflow together. */
    int64_t count = 1;
    int empty = 0, past = 0;
    for (int d = 0; d < v->ndims; d++) {
        empty |= v->dims[d] == 0;
        past |= __builtin_mul_overflow(count, v->dims[d], &count);
    }
    if (past && !empty)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument %s (dims %s): more elements than an int64 counts", p,
                        kernel, arg, dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims));
    if (dla_kit_numel(v) == 0)
        return DLA_OK;
    if (v->mem == NULL)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument %s (dims %s): no memory handle",
                        p, kernel, arg, dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims));
    if (kit->mem_bytes == NULL)
        return DLA_OK;
    /* The last element the view reaches must lie inside its memory. */
    int64_t last = v->offset, step;
    int overflow = 0;
    for (int d = 0; d < v->ndims; d++) {
        overflow |= __builtin_mul_overflow(v->dims[d] - 1, v->strides[d], &step);
        overflow |= __builtin_add_overflow(last, step, &last);
    }
    const int64_t room = (int64_t)(kit->mem_bytes(v->mem) / dla_kit_dtype_size(v->dtype));
    if (overflow || last >= room)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument %s (dims %s, offset %lld): reaches past the %lld %s "
                        "elements of its memory",
                        p, kernel, arg, dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims),
                        (long long)v->offset, (long long)room, dla_kit_dtype_name(v->dtype));
    return DLA_OK;
}

/* Checks that view arg has the ndims and dims of view ref_arg
 * (DLA_ERR_SHAPE). */
static inline dla_status dla_kit_check_same_dims(const dla_kit *kit, const char *kernel,
                                                 const char *arg, const dla_view *v,
                                                 const char *ref_arg, const dla_view *ref)
{
    int same = v->ndims == ref->ndims;
    for (int d = 0; same && d < v->ndims; d++)
        same = v->dims[d] == ref->dims[d];
    if (same)
        return DLA_OK;
    char a[DLA_KIT_DIMS_BUF], b[DLA_KIT_DIMS_BUF];
    return kit->host->error(DLA_ERR_SHAPE, "%s %s: argument %s: dims %s differ from %s's %s",
                            kit->name, kernel, arg,
                            dla_kit_dims_str(a, sizeof a, v->ndims, v->dims), ref_arg,
                            dla_kit_dims_str(b, sizeof b, ref->ndims, ref->dims));
}

/* Checks that view arg is single, or double where the kit allows it
 * (DLA_ERR_DTYPE). */
static inline dla_status dla_kit_check_float(const dla_kit *kit, const char *kernel,
                                             const char *arg, const dla_view *v)
{
    if (dla_kit_float_ok(kit, v->dtype))
        return DLA_OK;
    char buf[DLA_KIT_DIMS_BUF];
    return kit->host->error(DLA_ERR_DTYPE,
                            "%s %s: argument %s (dims %s): dtype %s is not supported (single%s%s)",
                            kit->name, kernel, arg,
                            dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims),
                            dla_kit_dtype_name(v->dtype), kit->no_f64 ? "; " : " or double",
                            kit->no_f64 ? kit->no_f64 : "");
}

/* Checks that a call's dtype (a member of the args, not a view's) is a
 * float the plugin runs (DLA_ERR_DTYPE): "argument <arg>: <dtype> is not
 * single or double" (or "is not single (<why>)" without double). */
static inline dla_status dla_kit_check_float_dtype(const dla_kit *kit, const char *kernel,
                                                   const char *arg, dla_dtype dtype)
{
    if (dla_kit_float_ok(kit, dtype))
        return DLA_OK;
    return kit->host->error(DLA_ERR_DTYPE, "%s %s: argument %s: %s is not single%s%s%s",
                            kit->name, kernel, arg, dla_kit_dtype_name(dtype),
                            kit->no_f64 ? " (" : " or double", kit->no_f64 ? kit->no_f64 : "",
                            kit->no_f64 ? ")" : "");
}

/* Checks that an argument struct reaches the end of the ABI minor that
 * defined it: struct_size >= need (DLA_ERR_INVALID_ARGUMENT). */
static inline dla_status dla_kit_check_args_size(const dla_kit *kit, const char *kernel,
                                                 size_t struct_size, size_t need,
                                                 const char *abi)
{
    if (struct_size >= need)
        return DLA_OK;
    return kit->host->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: args struct_size %zu is smaller than ABI %s's %zu", kit->name,
                            kernel, struct_size, abi, need);
}

/* Byte span [*lo, *hi) of a checked view with elements. */
static inline void dla_kit_span(const dla_view *v, int64_t *lo, int64_t *hi)
{
    int64_t last = v->offset;
    for (int d = 0; d < v->ndims; d++)
        last += (v->dims[d] - 1) * v->strides[d];
    const int64_t es = (int64_t)dla_kit_dtype_size(v->dtype);
    *lo = v->offset * es;
    *hi = (last + 1) * es;
}

/* Nonzero when checked views p and q have elements in one memory and
 * their byte spans, first to last element, intersect (interleaved views
 * count as overlapping: the test is cheap and errs on the safe side). */
static inline int dla_kit_views_overlap(const dla_view *p, const dla_view *q)
{
    if (p->mem == NULL || p->mem != q->mem || dla_kit_numel(p) == 0 || dla_kit_numel(q) == 0)
        return 0;
    int64_t a0, a1, b0, b1;
    dla_kit_span(p, &a0, &a1);
    dla_kit_span(q, &b0, &b1);
    return a0 < b1 && b0 < a1;
}

/* Nonzero when p and q are the same elements in the same order (same
 * memory, offset and strides, a stride of a dim of 1 not counting): the
 * exact aliasing that elementwise kernels allow. */
static inline int dla_kit_same_view(const dla_view *p, const dla_view *q)
{
    if (p->mem != q->mem || p->offset != q->offset || p->ndims != q->ndims)
        return 0;
    for (int d = 0; d < p->ndims; d++)
        if (p->strides[d] != q->strides[d] && p->dims[d] != 1)
            return 0;
    return 1;
}

/* ------------------------------------------------------------- init */

/* The checks dlaccel_plugin_init starts with (name: "cpu"): a host table
 * with the ABI 1.0 members (else DLA_ERR_PLUGIN without a message: there
 * is no way to say why), the host's major equal to this header's, and a
 * table whose struct_size reaches the version fields. */
static inline dla_status dla_kit_check_init(const dla_plugin_host *host, const dla_plugin *table,
                                            const char *name)
{
    if (host == NULL || table == NULL || host->struct_size < sizeof(dla_plugin_host) ||
        host->error == NULL || host->alloc == NULL || host->free == NULL)
        return DLA_ERR_PLUGIN;
    if (host->abi_major != DLA_PLUGIN_ABI_MAJOR)
        return host->error(DLA_ERR_PLUGIN,
                           "%s plugin: speaks ABI %d.%d, the host %u.%u (the major must match)",
                           name, DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR,
                           (unsigned)host->abi_major, (unsigned)host->abi_minor);
    if (table->struct_size < offsetof(dla_plugin, device_count))
        return host->error(DLA_ERR_PLUGIN,
                           "%s plugin: argument table: struct_size %zu cannot hold the ABI "
                           "version",
                           name, table->struct_size);
    return DLA_OK;
}

/* The struct_size a plugin answers: the host's, or its own sizeof when
 * smaller. Copy that many bytes of its table into the host's: members
 * past the host's struct_size are not there to be written. */
static inline size_t dla_kit_table_size(const dla_plugin *table)
{
    return table->struct_size < sizeof(dla_plugin) ? table->struct_size : sizeof(dla_plugin);
}

#ifdef __cplusplus
}
#endif

#include <dlaccel/plugin_kit_args.h>
#include <dlaccel/plugin_kit_geom.h>

#endif /* DLACCEL_PLUGIN_KIT_H */

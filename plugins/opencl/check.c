/*
 * check.c - the argument checks every kernel of the opencl plugin starts
 * with, and the names that go into its messages.
 *
 * A view that reaches past its buffer is refused here, before the device
 * could read or write outside it: unlike the cpu plugin's, a mistake here
 * is a device fault or silent corruption, not a segfault in a debugger.
 */
#include "plugins/opencl/ocl.h"

#include <stdio.h>

static const size_t dtype_sizes[] = {
#define DLA__OCL_DTYPE_SIZE(name, str, size) size,
    DLA_DTYPE_LIST(DLA__OCL_DTYPE_SIZE)
#undef DLA__OCL_DTYPE_SIZE
};
static const char *const dtype_names[] = {
#define DLA__OCL_DTYPE_NAME(name, str, size) str,
    DLA_DTYPE_LIST(DLA__OCL_DTYPE_NAME)
#undef DLA__OCL_DTYPE_NAME
};
_Static_assert(sizeof dtype_sizes / sizeof dtype_sizes[0] == DLA_DTYPE_COUNT,
               "dtype sizes out of step with DLA_DTYPE_LIST");

size_t dla__ocl_dtype_size(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *dla__ocl_dtype_name(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_names[dtype] : "unknown";
}

const char *dla__ocl_dims_str(char *buf, size_t size, int ndims, const int64_t *dims)
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

int64_t dla__ocl_numel(const dla_view *v)
{
    /* As the cpu plugin's: a zero dim first, so an empty view whose other
     * dims overflow together (2^32 x 2^32 x 0) counts 0. */
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 0;
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

dla_status dla__ocl_check_view(const char *kernel, const char *arg, const dla_view *v)
{
    const dla_plugin_host *h = dla__ocl_host;
    if (v->struct_size < sizeof(dla_view))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument %s: view struct_size %zu is smaller than ABI 1.0's "
                        "%zu",
                        kernel, arg, v->struct_size, sizeof(dla_view));
    if (v->ndims < 0 || v->ndims > DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument %s: ndims %d outside 0..%d",
                        kernel, arg, (int)v->ndims, DLA_MAX_DIMS);
    if ((unsigned)v->dtype >= DLA_DTYPE_COUNT)
        return h->error(DLA_ERR_DTYPE, "opencl %s: argument %s: unknown dtype %d", kernel, arg,
                        (int)v->dtype);
    char buf[DLA__OCL_DIMS_BUF];
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument %s: negative dim in %s",
                            kernel, arg, dla__ocl_dims_str(buf, sizeof buf, v->ndims, v->dims));
        if (v->strides[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "opencl %s: argument %s (dims %s): stride %lld of dim %d is negative",
                            kernel, arg, dla__ocl_dims_str(buf, sizeof buf, v->ndims, v->dims),
                            (long long)v->strides[d], d + 1);
    }
    if (v->offset < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument %s: negative offset %lld",
                        kernel, arg, (long long)v->offset);
    if (dla__ocl_numel(v) == 0)
        return DLA_OK;
    if (v->mem == NULL)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument %s (dims %s): no memory handle", kernel, arg,
                        dla__ocl_dims_str(buf, sizeof buf, v->ndims, v->dims));
    int64_t last = v->offset, step;
    int overflow = 0;
    for (int d = 0; d < v->ndims; d++) {
        overflow |= __builtin_mul_overflow(v->dims[d] - 1, v->strides[d], &step);
        overflow |= __builtin_add_overflow(last, step, &last);
    }
    const dla__ocl_mem *m = (const dla__ocl_mem *)v->mem;
    const int64_t room = (int64_t)(m->bytes / dla__ocl_dtype_size(v->dtype));
    if (overflow || last >= room)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument %s (dims %s, offset %lld): reaches past the %lld %s "
                        "elements of its memory",
                        kernel, arg, dla__ocl_dims_str(buf, sizeof buf, v->ndims, v->dims),
                        (long long)v->offset, (long long)room, dla__ocl_dtype_name(v->dtype));
    return DLA_OK;
}

dla_status dla__ocl_check_same_dims(const char *kernel, const char *arg, const dla_view *v,
                                    const char *ref_arg, const dla_view *ref)
{
    int same = v->ndims == ref->ndims;
    for (int d = 0; same && d < v->ndims; d++)
        same = v->dims[d] == ref->dims[d];
    if (same)
        return DLA_OK;
    char a[DLA__OCL_DIMS_BUF], b[DLA__OCL_DIMS_BUF];
    return dla__ocl_host->error(DLA_ERR_SHAPE,
                                "opencl %s: argument %s: dims %s differ from %s's %s", kernel, arg,
                                dla__ocl_dims_str(a, sizeof a, v->ndims, v->dims), ref_arg,
                                dla__ocl_dims_str(b, sizeof b, ref->ndims, ref->dims));
}

dla_status dla__ocl_check_float(const dla__ocl_device *d, const char *kernel, const char *arg,
                                const dla_view *v)
{
    if (v->dtype == DLA_F32 || (v->dtype == DLA_F64 && d->fp64))
        return DLA_OK;
    char buf[DLA__OCL_DIMS_BUF];
    return dla__ocl_host->error(DLA_ERR_DTYPE,
                                "opencl %s: argument %s (dims %s): dtype %s is not supported "
                                "(single%s)",
                                kernel, arg, dla__ocl_dims_str(buf, sizeof buf, v->ndims, v->dims),
                                dla__ocl_dtype_name(v->dtype),
                                d->fp64 ? " or double" : "; the device has no cl_khr_fp64");
}

/* Byte span [*lo, *hi) of a checked view with elements. */
static void span(const dla_view *v, int64_t *lo, int64_t *hi)
{
    int64_t last = v->offset;
    for (int d = 0; d < v->ndims; d++)
        last += (v->dims[d] - 1) * v->strides[d];
    const int64_t es = (int64_t)dla__ocl_dtype_size(v->dtype);
    *lo = v->offset * es;
    *hi = (last + 1) * es;
}

int dla__ocl_views_overlap(const dla_view *p, const dla_view *q)
{
    if (p->mem == NULL || p->mem != q->mem || dla__ocl_numel(p) == 0 || dla__ocl_numel(q) == 0)
        return 0;
    int64_t a0, a1, b0, b1;
    span(p, &a0, &a1);
    span(q, &b0, &b1);
    return a0 < b1 && b0 < a1;
}

const char *dla__ocl_err_str(cl_int err, char *buf, size_t size)
{
    const char *name;
    switch (err) {
#define E(c)                                                                                       \
    case c: name = #c; break;
        E(CL_DEVICE_NOT_FOUND)
        E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE)
        E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E(CL_OUT_OF_RESOURCES)
        E(CL_OUT_OF_HOST_MEMORY)
        E(CL_BUILD_PROGRAM_FAILURE)
        E(CL_INVALID_VALUE)
        E(CL_INVALID_DEVICE)
        E(CL_INVALID_CONTEXT)
        E(CL_INVALID_COMMAND_QUEUE)
        E(CL_INVALID_MEM_OBJECT)
        E(CL_INVALID_BUILD_OPTIONS)
        E(CL_INVALID_PROGRAM)
        E(CL_INVALID_PROGRAM_EXECUTABLE)
        E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL)
        E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE)
        E(CL_INVALID_ARG_SIZE)
        E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION)
        E(CL_INVALID_WORK_GROUP_SIZE)
        E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_OFFSET)
        E(CL_INVALID_EVENT_WAIT_LIST)
        E(CL_INVALID_OPERATION)
        E(CL_INVALID_BUFFER_SIZE)
        E(CL_INVALID_GLOBAL_WORK_SIZE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef E
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;
    default: name = "OpenCL error"; break;
    }
    snprintf(buf, size, "%s (%d)", name, (int)err);
    return buf;
}

/*
 * program.c - the opencl plugin's programs and kernels, built once per
 * device on first use, and the helpers every kernel file launches with.
 *
 * Programs are split by kernel family (copy, elementwise, reduce, ...) so
 * that a process pays the compiler only for what it runs: on PoCL a build
 * takes from a tenth of a second to a second (PoCL keeps the binaries in
 * its own cache across processes, so that is paid once per machine). A
 * failed build is not kept: the next call that needs the program builds
 * it again, and fails again with its log (a build fails on a broken
 * driver or source, where every call failing with the reason is what is
 * wanted).
 */
#include "plugins/opencl/ocl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ sources */

/* fused_reduce's program takes fused.cl's interpreter, not its kernels. */
static const char fused_no_kernel[] = "#define DLA_FUSED_NO_KERNEL 1\n";

/* Each program's source, after common.cl and the sources it needs first
 * (ops.cl's op expressions, the fused interpreter, or the random stream's
 * definition). */
static const struct {
    const char *name;
    const char *first[3]; /* NULL-terminated when shorter */
    const char *source;
} programs[DLA__OCL_PROG_COUNT] = {
    [DLA__OCL_PROG_COPY] = {"copy", {NULL}, dla__ocl_src_copy},
    [DLA__OCL_PROG_ELEMENTWISE] = {"elementwise", {dla__ocl_src_ops}, dla__ocl_src_elementwise},
    [DLA__OCL_PROG_FUSED] = {"fused", {dla__ocl_src_ops}, dla__ocl_src_fused},
    [DLA__OCL_PROG_FUSED_REDUCE] = {"fused_reduce",
                                    {dla__ocl_src_ops, fused_no_kernel, dla__ocl_src_fused},
                                    dla__ocl_src_fused_reduce},
    [DLA__OCL_PROG_REDUCE] = {"reduce", {NULL}, dla__ocl_src_reduce},
    [DLA__OCL_PROG_GEMM] = {"gemm", {NULL}, dla__ocl_src_gemm},
    [DLA__OCL_PROG_CONV] = {"conv", {NULL}, dla__ocl_src_conv},
    [DLA__OCL_PROG_POOL] = {"pool", {NULL}, dla__ocl_src_pool},
    [DLA__OCL_PROG_INDEX] = {"index", {NULL}, dla__ocl_src_index},
    [DLA__OCL_PROG_RANDOM] = {"random", {dla__ocl_src_plugin_philox}, dla__ocl_src_random},
};

/* Keeps the end of a long build log: the first error is usually near the
 * top, but a log can run to megabytes of warnings. */
#define LOG_MAX 2000

dla_status dla__ocl_build(dla__ocl_device *d, const char *what, int nsources,
                          const char *const *sources, cl_program *out)
{
    const dla_plugin_host *h = dla__ocl_host;
    const char *all[8];
    if (nsources > 7)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl build %s: %d sources", what, nsources);
    all[0] = dla__ocl_src_common;
    memcpy(all + 1, sources, (size_t)nsources * sizeof all[0]);
    cl_int err;
    cl_program p = clCreateProgramWithSource(d->ctx, (cl_uint)nsources + 1, all, NULL, &err);
    if (err != CL_SUCCESS)
        return h->error(DLA_ERR_DEVICE, "opencl build %s: clCreateProgramWithSource: %s", what,
                        DLA__OCL_ERR(err));
    err = clBuildProgram(p, 1, &d->id, d->options, NULL, NULL);
    if (err == CL_SUCCESS) {
        h->log(DLA_LOG_DEBUG, "opencl:%d: built program %s", d->index, what);
        *out = p;
        return DLA_OK;
    }
    size_t size = 0;
    clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
    char *log = size ? h->alloc(size + 1, 0) : NULL;
    const char *text = "(no build log)";
    if (log && clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
                   CL_SUCCESS) {
        log[size] = '\0';
        text = log;
    }
    size_t n = strlen(text);
    h->log(DLA_LOG_DEBUG, "opencl:%d: program %s does not build: %s", d->index, what,
           n > LOG_MAX ? text + n - LOG_MAX : text);
    dla_status s = h->error(DLA_ERR_DEVICE,
                            "opencl build %s: clBuildProgram: %s (options \"%s\"); build log%s: %s",
                            what, DLA__OCL_ERR(err), d->options,
                            n > LOG_MAX ? " (its end)" : "", n > LOG_MAX ? text + n - LOG_MAX : text);
    h->free(log);
    clReleaseProgram(p);
    return s;
}

dla_status dla__ocl_kernel(dla__ocl_device *d, dla__ocl_prog prog, int slot, cl_kernel *out,
                           const char *fmt, ...)
{
    if (d->kernels[slot]) {
        *out = d->kernels[slot];
        return DLA_OK;
    }
    const dla_plugin_host *h = dla__ocl_host;
    if (!d->programs[prog]) {
        const char *src[4];
        int n = 0;
        for (int i = 0; i < 3 && programs[prog].first[i]; i++)
            src[n++] = programs[prog].first[i];
        src[n++] = programs[prog].source;
        dla_status s = dla__ocl_build(d, programs[prog].name, n, src, &d->programs[prog]);
        if (s != DLA_OK)
            return s;
    }
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    cl_int err;
    cl_kernel k = clCreateKernel(d->programs[prog], name, &err);
    if (err != CL_SUCCESS)
        return h->error(DLA_ERR_DEVICE, "opencl: clCreateKernel %s of program %s: %s", name,
                        programs[prog].name, DLA__OCL_ERR(err));
    /* A kernel that needs many registers may allow smaller work-groups
     * than the device: every 1-d launch then uses the smaller size. */
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) ==
            CL_SUCCESS &&
        wg > 0)
        while (d->local > wg)
            d->local /= 2;
    d->kernels[slot] = k;
    *out = k;
    return DLA_OK;
}

void dla__ocl_programs_release(dla__ocl_device *d)
{
    for (int i = 0; i < DLA__OCL_K_COUNT; i++)
        if (d->kernels[i]) {
            clReleaseKernel(d->kernels[i]);
            d->kernels[i] = NULL;
        }
    for (int i = 0; i < DLA__OCL_PROG_COUNT; i++)
        if (d->programs[i]) {
            clReleaseProgram(d->programs[i]);
            d->programs[i] = NULL;
        }
}

/* ------------------------------------------------------------ launches */

dla_status dla__ocl_arg(cl_kernel k, cl_uint i, size_t size, const void *p, const char *kernel)
{
    cl_int err = clSetKernelArg(k, i, size, p);
    if (err != CL_SUCCESS)
        return dla__ocl_host->error(DLA_ERR_DEVICE, "opencl %s: clSetKernelArg %u (%zu bytes): %s",
                                    kernel, (unsigned)i, size, DLA__OCL_ERR(err));
    return DLA_OK;
}

dla_status dla__ocl_args(cl_kernel k, const char *kernel, cl_uint first, ...)
{
    va_list ap;
    va_start(ap, first);
    dla_status s = DLA_OK;
    for (cl_uint i = first; s == DLA_OK; i++) {
        const size_t size = va_arg(ap, size_t);
        if (size == 0)
            break;
        const void *p = va_arg(ap, const void *);
        s = dla__ocl_arg(k, i, size, p, kernel);
    }
    va_end(ap);
    return s;
}

static dla_status enqueue(dla__ocl_device *d, cl_kernel k, cl_uint dims, const size_t *global,
                          const size_t *local, const char *kernel)
{
    cl_uint nwait;
    const cl_event *wait;
    cl_event *ev = dla__ocl_plan_event(d, kernel, &nwait, &wait);
    cl_int err = clEnqueueNDRangeKernel(d->queue, k, dims, NULL, global, local, nwait, wait, ev);
    dla__ocl_plan_enqueued(d, err);
    if (err == CL_SUCCESS)
        return DLA_OK;
    dla_status s = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                           err == CL_OUT_OF_HOST_MEMORY
                       ? DLA_ERR_OUT_OF_MEMORY
                       : DLA_ERR_DEVICE;
    return dla__ocl_host->error(s, "opencl %s: clEnqueueNDRangeKernel of %zu x %zu work-items: %s",
                                kernel, global[0], dims > 1 ? global[1] : 1, DLA__OCL_ERR(err));
}

dla_status dla__ocl_launch1(dla__ocl_device *d, cl_kernel k, size_t n, const char *kernel)
{
    if (n == 0)
        return DLA_OK;
    const size_t local = d->local;
    const size_t global = (n + local - 1) / local * local;
    return enqueue(d, k, 1, &global, &local, kernel);
}

dla_status dla__ocl_launch_groups(dla__ocl_device *d, cl_kernel k, size_t groups, size_t group,
                                  const char *kernel)
{
    if (groups == 0)
        return DLA_OK;
    const size_t global = groups * group;
    return enqueue(d, k, 1, &global, &group, kernel);
}

/* The coalesced space of nops views: dims of 1 dropped, neighbours merged
 * where every view's strides allow it. Returns ndims (>= 1). */
static int coalesce(int nops, const dla_view *const *v, int64_t *dims, int64_t (*st)[DLA_MAX_DIMS])
{
    const dla_view *y = v[0];
    int n = 0;
    for (int d = 0; d < y->ndims; d++) {
        if (y->dims[d] == 1)
            continue;
        int merge = n > 0;
        for (int op = 0; op < nops && merge; op++)
            merge = v[op]->strides[d] == st[op][n - 1] * dims[n - 1];
        if (merge) {
            dims[n - 1] *= y->dims[d];
            continue;
        }
        dims[n] = y->dims[d];
        for (int op = 0; op < nops; op++)
            st[op][n] = v[op]->strides[d];
        n++;
    }
    if (n == 0) {
        dims[0] = 1;
        for (int op = 0; op < nops; op++)
            st[op][0] = 0;
        n = 1;
    }
    return n;
}

int dla__ocl_flat(int nops, const dla_view *const *views)
{
    enum { MAX_OPS = 1 + DLA_FUSED_MAX_INPUTS };
    int64_t dims[DLA_MAX_DIMS], st[MAX_OPS][DLA_MAX_DIMS];
    if (coalesce(nops, views, dims, st) != 1)
        return 0;
    for (int op = 0; op < nops; op++)
        if (st[op][0] != 1 && dims[0] != 1)
            return 0;
    return 1;
}

/* The work-group size along a launch dim of n work-items, at most room:
 * the whole group along dim 0 when the run is long, else the smallest
 * power of two that covers it (at least 8), the rest going to dim 1. */
static size_t group_along(int64_t n, size_t room, size_t least)
{
    size_t l = least;
    while (l < room && (int64_t)l < n)
        l *= 2;
    return l < room ? l : room;
}

dla_status dla__ocl_launch3(dla__ocl_device *d, cl_kernel k, const int64_t *n, const char *kernel)
{
    if (n[0] == 0 || n[1] == 0 || n[2] == 0)
        return DLA_OK;
    size_t local[3], global[3];
    local[0] = group_along(n[0], d->local, 8);
    local[1] = group_along(n[1], d->local / local[0], 1);
    local[2] = 1;
    for (int i = 0; i < 3; i++)
        global[i] = ((size_t)n[i] + local[i] - 1) / local[i] * local[i];
    return enqueue(d, k, 3, global, local, kernel);
}

dla_status dla__ocl_run_space(dla__ocl_device *d, cl_kernel k, int nops,
                              const dla_view *const *views, size_t rows, const char *kernel)
{
    enum { MAX_OPS = 1 + DLA_FUSED_MAX_EXTRA + DLA_FUSED_MAX_INPUTS };
    if (dla_kit_numel(views[0]) == 0)
        return DLA_OK;
    int64_t dims[DLA_MAX_DIMS], st[MAX_OPS][DLA_MAX_DIMS];
    const int nd = coalesce(nops, views, dims, st);
    const int room = rows ? DLA__OCL_KD - 1 : DLA__OCL_KD;
    const int inner = nd < room ? nd : room;
    dla__ocl_shape sh;
    for (int i = 0; i < DLA__OCL_KD; i++)
        sh.dims[i] = i < inner ? dims[i] : 1;
    if (rows)
        sh.dims[DLA__OCL_KD - 1] = (cl_long)rows;
    dla_status s = DLA__OCL_ARG(k, 0, sh, kernel);
    for (int op = 0; op < nops && s == DLA_OK; op++) {
        cl_mem b = dla__ocl_buf(views[op]->mem);
        s = DLA__OCL_ARG(k, (cl_uint)(1 + 2 * op), b, kernel);
    }
    if (s != DLA_OK)
        return s;
    size_t local[3], global[3];
    local[0] = group_along(sh.dims[0], d->local, 8);
    local[1] = group_along(sh.dims[1], d->local / local[0], 1);
    local[2] = 1;
    for (int i = 0; i < 3; i++)
        global[i] = ((size_t)sh.dims[i] + local[i] - 1) / local[i] * local[i];
    /* The outer dims (past the launch's) one launch per index. */
    int64_t outer = 1, idx[DLA_MAX_DIMS] = {0};
    for (int i = inner; i < nd; i++)
        outer *= dims[i];
    for (int64_t o = 0; o < outer; o++) {
        for (int op = 0; op < nops; op++) {
            dla__ocl_vw vw = {.off = views[op]->offset};
            for (int i = 0; i < DLA__OCL_KD; i++)
                vw.st[i] = i < inner ? st[op][i] : 0;
            for (int i = inner; i < nd; i++)
                vw.off += idx[i] * st[op][i];
            if ((s = DLA__OCL_ARG(k, (cl_uint)(2 + 2 * op), vw, kernel)) != DLA_OK)
                return s;
        }
        if ((s = enqueue(d, k, 3, global, local, kernel)) != DLA_OK)
            return s;
        for (int i = inner; i < nd && ++idx[i] == dims[i]; i++)
            idx[i] = 0;
    }
    return DLA_OK;
}

cl_mem dla__ocl_scratch(dla__ocl_device *d, size_t bytes, const void *init, const char *kernel)
{
    cl_int err;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes ? bytes : 1, (void *)init, &err);
    if (err != CL_SUCCESS) {
        dla__ocl_host->error(DLA_ERR_OUT_OF_MEMORY, "opencl %s: %zu bytes of scratch memory: %s",
                             kernel, bytes, DLA__OCL_ERR(err));
        return NULL;
    }
    return m;
}

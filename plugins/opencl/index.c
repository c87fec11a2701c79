/*
 * index.c - gather and scatter_add on OpenCL devices (kernels in index.cl).
 *
 * Both read the index vector back first (a blocking read, usually of a few
 * hundred bytes): the ABI makes a position outside the target dim an
 * error the call returns, which the host can only know by looking, and
 * scatter_add needs the positions anyway to group them by target. The
 * groups (targets in increasing order, each with its positions in index
 * order) go to the device as three small buffers; work-item (slice
 * element, target) then adds its positions in order, so repeated
 * positions add without atomics and in the cpu plugin's order.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

/* The kit's checked geometry, and the index read back. */
typedef struct index_plan {
    dla_kit_index k;
    int32_t *host; /* the index, read back (len entries) */
} index_plan;

static dla_status setup(dla__ocl_device *d, const char *kernel, const dla_index_args *a,
                        int scatter, index_plan *p)
{
    const dla_plugin_host *h = dla__ocl_host;
    p->host = NULL;
    dla_status s = dla_kit_index_prepare(&d->kit, kernel, a, scatter, &p->k);
    if (s != DLA_OK || p->k.len == 0)
        return s;
    /* The index, read back: the span it covers, then its elements. */
    const int64_t len = p->k.len, istep = p->k.istep;
    /* scatter_add's groups list positions along the index as int32 (the
     * kernel's start and list): past INT32_MAX they would wrap negative
     * and the kernel read before x. Refused before the host copy, as the
     * cuda plugin refuses it (gather's positions along the index are
     * work-item ids, of any size). */
    if (scatter && len > INT32_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument index: %lld positions exceed int32", kernel,
                        (long long)len);
    const size_t span = (size_t)((len - 1) * istep + 1);
    int32_t *raw = h->alloc(span * sizeof *raw, 0);
    p->host = h->alloc((size_t)len * sizeof *p->host, 0);
    if (!raw || !p->host) {
        h->free(raw);
        h->free(p->host);
        p->host = NULL;
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl %s: a host copy of %lld indices", kernel,
                        (long long)len);
    }
    s = dla__ocl_copy_to_host(d, raw, a->index.mem, (size_t)a->index.offset * sizeof *raw,
                              span * sizeof *raw);
    if (s == DLA_OK)
        s = dla_kit_index_check_values(&d->kit, kernel, a, scatter, &p->k, raw);
    for (int64_t i = 0; s == DLA_OK && i < len; i++)
        p->host[i] = raw[i * istep];
    h->free(raw);
    if (s != DLA_OK) {
        h->free(p->host);
        p->host = NULL;
    }
    return s;
}

static int size_class(dla_dtype t)
{
    const size_t s = dla_kit_dtype_size(t);
    return s == 1 ? 0 : s == 4 ? 1 : 2;
}

dla_status dla__ocl_gather(void *dev, const dla_index_args *args)
{
    dla__ocl_device *d = dev;
    index_plan p;
    dla_status s = setup(d, "gather", args, 0, &p);
    if (s != DLA_OK)
        return s;
    dla__ocl_host->free(p.host);
    if (p.k.len == 0 || dla_kit_numel(&p.k.ys) == 0)
        return DLA_OK;
    const int sc = size_class(args->y.dtype);
    static const char *const names[] = {"gather_1", "gather_4", "gather_8"};
    const cl_long ystep = p.k.ystep, xstep = p.k.xstep, ioff = args->index.offset,
                  istep = p.k.istep;
    const cl_mem ib = dla__ocl_buf(args->index.mem);
    const dla_view *views[] = {&p.k.ys, &p.k.xs};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_INDEX, DLA__OCL_K_GATHER + sc, &k, "%s", names[sc]);
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = dla__ocl_args(k, "gather", 5, A(ystep), A(xstep), A(ib), A(ioff), A(istep),
                          DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, (size_t)p.k.len, "gather");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_scatter_add(void *dev, const dla_index_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    index_plan p;
    dla_status s = setup(d, "scatter_add", args, 1, &p);
    if (s != DLA_OK)
        return s;
    if (p.k.len == 0 || dla_kit_numel(&p.k.xs) == 0) {
        h->free(p.host);
        return DLA_OK;
    }
    int32_t *list = h->alloc((size_t)p.k.len * sizeof *list, 0);
    int32_t *targets = h->alloc((size_t)p.k.len * sizeof *targets, 0);
    int32_t *start = h->alloc((size_t)(p.k.len + 1) * sizeof *start, 0);
    int64_t groups = -1;
    if (list && targets && start)
        groups = dla_kit_index_groups(&d->kit, p.host, p.k.len, p.k.target, targets, start, list);
    h->free(p.host);
    if (groups < 0) {
        h->free(list), h->free(targets), h->free(start);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl scatter_add: grouping %lld indices",
                        (long long)p.k.len);
    }
    cl_mem tb = dla__ocl_scratch(d, (size_t)groups * sizeof *targets, targets, "scatter_add");
    cl_mem sb = tb ? dla__ocl_scratch(d, (size_t)(groups + 1) * sizeof *start, start,
                                      "scatter_add")
                   : NULL;
    cl_mem lb =
        sb ? dla__ocl_scratch(d, (size_t)p.k.len * sizeof *list, list, "scatter_add") : NULL;
    h->free(list), h->free(targets), h->free(start);
    if (!lb) {
        if (tb)
            clReleaseMemObject(tb);
        if (sb)
            clReleaseMemObject(sb);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    const int f64 = args->y.dtype == DLA_F64;
    const cl_long ystep = p.k.ystep, xstep = p.k.xstep;
    const dla_view *views[] = {&p.k.ys, &p.k.xs};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_INDEX, DLA__OCL_K_SCATTER + f64, &k, "scatter_add_%s",
                        f64 ? "double" : "float");
    if (s == DLA_OK)
        s = dla__ocl_args(k, "scatter_add", 5, A(ystep), A(xstep), A(tb), A(sb), A(lb),
                          DLA__OCL_END);
#undef A
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, (size_t)groups, "scatter_add");
    pthread_mutex_unlock(&d->lock);
    clReleaseMemObject(tb);
    clReleaseMemObject(sb);
    clReleaseMemObject(lb);
    return s;
}

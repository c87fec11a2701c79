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

typedef struct index_plan {
    dla_view ys, xs; /* the operands with the indexed dim cut to 1 */
    int64_t ystep, xstep;
    int64_t len, target, istep;
    int32_t *host; /* the index, read back (len entries) */
} index_plan;

/* The one dim of v longer than 1 (its length and stride), or 1 and 0;
 * -1 when there are two. */
static int vector_of(const dla_view *v, int64_t *len, int64_t *stride)
{
    *len = 1, *stride = 0;
    int found = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] == 1)
            continue;
        if (found++)
            return -1;
        *len = v->dims[d], *stride = v->strides[d];
    }
    return 0;
}

static dla_status setup(dla__ocl_device *d, const char *kernel, const dla_index_args *a,
                        int scatter, index_plan *p)
{
    const dla_plugin_host *h = dla__ocl_host;
    p->host = NULL;
    if (a->struct_size < sizeof(dla_index_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: args struct_size %zu is smaller than ABI 1.1's %zu", kernel,
                        a->struct_size, sizeof(dla_index_args));
    const dla_view *y = &a->y, *x = &a->x, *ix = &a->index;
    dla_status s;
    if ((s = dla__ocl_check_view(kernel, "y", y)) != DLA_OK ||
        (s = dla__ocl_check_view(kernel, "x", x)) != DLA_OK ||
        (s = dla__ocl_check_view(kernel, "index", ix)) != DLA_OK)
        return s;
    char bx[DLA__OCL_DIMS_BUF], by[DLA__OCL_DIMS_BUF];
    const int dim = a->dim;
    if (dim < 0 || dim >= DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument dim: %d outside 0..%d",
                        kernel, dim, DLA_MAX_DIMS - 1);
    if (scatter && (s = dla__ocl_check_float(d, kernel, "y", y)) != DLA_OK)
        return s;
    if (x->dtype != y->dtype)
        return h->error(DLA_ERR_DTYPE,
                        "opencl %s: argument x (dims %s): dtype %s differs from y's %s", kernel,
                        dla__ocl_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla__ocl_dtype_name(x->dtype), dla__ocl_dtype_name(y->dtype));
    if (ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE,
                        "opencl %s: argument index (dims %s): dtype %s, expected int32", kernel,
                        dla__ocl_dims_str(bx, sizeof bx, ix->ndims, ix->dims),
                        dla__ocl_dtype_name(ix->dtype));
    if (vector_of(ix, &p->len, &p->istep) != 0)
        return h->error(DLA_ERR_SHAPE, "opencl %s: argument index: dims %s, expected a vector",
                        kernel, dla__ocl_dims_str(bx, sizeof bx, ix->ndims, ix->dims));
    if (dla__ocl_numel(ix) == 0)
        p->len = 0;
    const int nd = x->ndims > y->ndims ? (x->ndims > dim ? x->ndims : dim + 1)
                                       : (y->ndims > dim ? y->ndims : dim + 1);
    p->xs = *x, p->ys = *y;
    for (int i = 0; i < nd; i++) {
        if (i >= x->ndims)
            p->xs.dims[i] = 1, p->xs.strides[i] = 0;
        if (i >= y->ndims)
            p->ys.dims[i] = 1, p->ys.strides[i] = 0;
    }
    p->xs.ndims = p->ys.ndims = nd;
    const dla_view *sliced = scatter ? &p->xs : &p->ys;
    int ok = sliced->dims[dim] == p->len;
    for (int i = 0; i < nd; i++)
        ok &= i == dim || p->xs.dims[i] == p->ys.dims[i];
    if (!ok)
        return h->error(DLA_ERR_SHAPE,
                        "opencl %s: arguments x (dims %s) and y (dims %s) along dim %d (0-based) "
                        "with %lld indices: %s must have the index's length along dim and both "
                        "the same other dims",
                        kernel, dla__ocl_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla__ocl_dims_str(by, sizeof by, y->ndims, y->dims), dim,
                        (long long)p->len, scatter ? "x" : "y");
    if (scatter && dla__ocl_numel(y) > 0)
        for (int i = 0; i < nd; i++)
            if (p->ys.dims[i] > 1 && p->ys.strides[i] == 0)
                return h->error(DLA_ERR_INVALID_ARGUMENT,
                                "opencl %s: argument y (dims %s): dim %d has stride 0; a sum "
                                "cannot land on a repeated element",
                                kernel, dla__ocl_dims_str(by, sizeof by, y->ndims, y->dims), i + 1);
    if (dla__ocl_views_overlap(y, x) || dla__ocl_views_overlap(y, ix))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument y (dims %s): shares memory with %s", kernel,
                        dla__ocl_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla__ocl_views_overlap(y, x) ? "x" : "index");
    p->target = scatter ? p->ys.dims[dim] : p->xs.dims[dim];
    p->ystep = p->ys.strides[dim], p->xstep = p->xs.strides[dim];
    p->xs.dims[dim] = p->ys.dims[dim] = 1;
    if (p->len == 0)
        return DLA_OK;

    /* The index, read back: the span it covers, then its elements. */
    const size_t span = (size_t)((p->len - 1) * p->istep + 1);
    int32_t *raw = h->alloc(span * sizeof *raw, 0);
    p->host = h->alloc((size_t)p->len * sizeof *p->host, 0);
    if (!raw || !p->host) {
        h->free(raw);
        h->free(p->host);
        p->host = NULL;
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl %s: a host copy of %lld indices", kernel,
                        (long long)p->len);
    }
    s = dla__ocl_copy_to_host(d, raw, ix->mem, (size_t)ix->offset * sizeof *raw,
                              span * sizeof *raw);
    for (int64_t i = 0; s == DLA_OK && i < p->len; i++) {
        const int32_t v = raw[i * p->istep];
        p->host[i] = v;
        if (v < 0 || v >= p->target)
            s = h->error(DLA_ERR_INVALID_ARGUMENT,
                         "opencl %s: argument index: element %lld is %d, outside 0..%lld (dim %d "
                         "(0-based) of %s, dims %s)",
                         kernel, (long long)i, (int)v, (long long)p->target - 1, dim,
                         scatter ? "y" : "x",
                         scatter ? dla__ocl_dims_str(by, sizeof by, y->ndims, y->dims)
                                 : dla__ocl_dims_str(bx, sizeof bx, x->ndims, x->dims));
    }
    h->free(raw);
    if (s != DLA_OK) {
        h->free(p->host);
        p->host = NULL;
    }
    return s;
}

static int size_class(dla_dtype t)
{
    const size_t s = dla__ocl_dtype_size(t);
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
    if (p.len == 0 || dla__ocl_numel(&p.ys) == 0)
        return DLA_OK;
    const int sc = size_class(args->y.dtype);
    static const char *const names[] = {"gather_1", "gather_4", "gather_8"};
    const cl_long ystep = p.ystep, xstep = p.xstep, ioff = args->index.offset, istep = p.istep;
    const cl_mem ib = dla__ocl_buf(args->index.mem);
    const dla_view *views[] = {&p.ys, &p.xs};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_INDEX, DLA__OCL_K_GATHER + sc, &k, "%s", names[sc]);
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = dla__ocl_args(k, "gather", 5, A(ystep), A(xstep), A(ib), A(ioff), A(istep),
                          DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, (size_t)p.len, "gather");
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
    if (p.len == 0 || dla__ocl_numel(&p.xs) == 0) {
        h->free(p.host);
        return DLA_OK;
    }
    /* Counting sort of the positions by target. */
    int32_t *count = h->alloc((size_t)(p.target + 1) * sizeof *count, 0);
    int32_t *list = h->alloc((size_t)p.len * sizeof *list, 0);
    int32_t *targets = h->alloc((size_t)p.len * sizeof *targets, 0);
    int32_t *start = h->alloc((size_t)(p.len + 1) * sizeof *start, 0);
    if (!count || !list || !targets || !start) {
        h->free(count), h->free(list), h->free(targets), h->free(start), h->free(p.host);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl scatter_add: grouping %lld indices",
                        (long long)p.len);
    }
    memset(count, 0, (size_t)(p.target + 1) * sizeof *count);
    for (int64_t i = 0; i < p.len; i++)
        count[p.host[i] + 1]++;
    int64_t groups = 0;
    for (int64_t t = 0; t < p.target; t++) {
        if (count[t + 1]) {
            targets[groups] = (int32_t)t;
            start[groups + 1] = count[t + 1];
            groups++;
        }
        count[t + 1] += count[t]; /* now: where target t's positions start */
    }
    start[0] = 0;
    for (int64_t u = 0; u < groups; u++)
        start[u + 1] += start[u];
    for (int64_t i = 0; i < p.len; i++)
        list[count[p.host[i]]++] = (int32_t)i;
    h->free(p.host);
    h->free(count);
    cl_mem tb = dla__ocl_scratch(d, (size_t)groups * sizeof *targets, targets, "scatter_add");
    cl_mem sb = tb ? dla__ocl_scratch(d, (size_t)(groups + 1) * sizeof *start, start,
                                      "scatter_add")
                   : NULL;
    cl_mem lb = sb ? dla__ocl_scratch(d, (size_t)p.len * sizeof *list, list, "scatter_add") : NULL;
    h->free(list), h->free(targets), h->free(start);
    if (!lb) {
        if (tb)
            clReleaseMemObject(tb);
        if (sb)
            clReleaseMemObject(sb);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    const int f64 = args->y.dtype == DLA_F64;
    const cl_long ystep = p.ystep, xstep = p.xstep;
    const dla_view *views[] = {&p.ys, &p.xs};
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

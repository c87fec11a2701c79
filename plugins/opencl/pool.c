/*
 * pool.c - max and average pooling on OpenCL devices (kernels in pool.cl).
 *
 * The arguments are checked with the cpu plugin's rules and mapped onto
 * five logical dims (s0 s1 s2 channels batch) with each operand's strides;
 * forward runs one work-item per y element, backward one per x element.
 * Backward does not read the max index back to check it (that would stall
 * the queue on every call): an index outside its window adds nothing, and
 * the forward never writes one.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

#define NLOG 5

typedef struct pool {
    cl_long in[3], out[3], win[3], stride[3], pad[3];
    cl_long channels, planes, exclude_pad, full;
    cl_long xs[NLOG], ys[NLOG], is[NLOG];
    cl_long xoff, yoff, ioff;
} pool;

/* Maps view v onto the logical dims want: its dims must be those (trailing
 * dims of 1 optional or extra). */
static dla_status map_view(const char *kernel, const char *arg, const dla_view *v,
                           const int64_t *want, int64_t *strides)
{
    int ok = 1;
    for (int d = 0; d < NLOG; d++) {
        const int64_t n = d < v->ndims ? v->dims[d] : 1;
        ok &= n == want[d];
        strides[d] = d < v->ndims ? v->strides[d] : 0;
    }
    for (int d = NLOG; d < v->ndims; d++)
        ok &= v->dims[d] == 1;
    if (ok)
        return DLA_OK;
    char got[DLA__OCL_DIMS_BUF], exp[DLA__OCL_DIMS_BUF];
    return dla__ocl_host->error(DLA_ERR_SHAPE,
                                "opencl %s: argument %s: dims %s, expected %s (spatial x channels "
                                "x batch)",
                                kernel, arg, dla__ocl_dims_str(got, sizeof got, v->ndims, v->dims),
                                dla__ocl_dims_str(exp, sizeof exp, NLOG, want));
}

static dla_status setup(dla__ocl_device *d, const char *kernel, const dla_pool_args *a,
                        int backward, pool *g)
{
    const dla_plugin_host *h = dla__ocl_host;
    if (a->struct_size < sizeof(dla_pool_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: args struct_size %zu is smaller than ABI 1.1's %zu", kernel,
                        a->struct_size, sizeof(dla_pool_args));
    if ((unsigned)a->mode >= DLA_POOL_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "opencl %s: argument mode: unknown mode %d", kernel,
                        (int)a->mode);
    if (a->dtype != DLA_F32 && (a->dtype != DLA_F64 || !d->fp64))
        return h->error(DLA_ERR_DTYPE, "opencl %s: argument dtype: %s is not supported", kernel,
                        dla__ocl_dtype_name(a->dtype));
    const int n = a->nspatial;
    if (n < 1 || n > 3)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument nspatial: %d outside 1..3",
                        kernel, n);
    if (a->channels < 0 || a->batch < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument channels/batch: %lld x %lld, negative", kernel,
                        (long long)a->channels, (long long)a->batch);
    memset(g, 0, sizeof *g);
    for (int i = 0; i < 3; i++) {
        const int used = i < n;
        g->in[i] = used ? a->in_size[i] : 1;
        g->out[i] = used ? a->out_size[i] : 1;
        g->win[i] = used ? a->window[i] : 1;
        g->stride[i] = used ? a->stride[i] : 1;
        g->pad[i] = used ? a->pad_begin[i] : 0;
        if (g->in[i] < 0 || g->out[i] < 0 || g->win[i] < 1 || g->stride[i] < 1 || g->pad[i] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "opencl %s: spatial dim %d: in %lld, out %lld, window %lld, stride "
                            "%lld, pad %lld (need in, out, pad >= 0 and window, stride >= 1)",
                            kernel, i + 1, (long long)g->in[i], (long long)g->out[i],
                            (long long)g->win[i], (long long)g->stride[i], (long long)g->pad[i]);
        if (a->mode == DLA_POOL_MAX && g->out[i] > 0 &&
            (g->pad[i] >= g->win[i] || (g->out[i] - 1) * g->stride[i] - g->pad[i] >= g->in[i]))
            return h->error(DLA_ERR_SHAPE,
                            "opencl %s: spatial dim %d: in %lld, out %lld, window %lld, stride "
                            "%lld, pad %lld leave a max window with no input element",
                            kernel, i + 1, (long long)g->in[i], (long long)g->out[i],
                            (long long)g->win[i], (long long)g->stride[i], (long long)g->pad[i]);
    }
    g->channels = a->channels;
    g->planes = a->channels * a->batch;
    g->full = g->win[0] * g->win[1] * g->win[2];
    g->exclude_pad = a->avg_exclude_pad != 0;

    const dla_view *x = &a->x, *y = &a->y, *ix = &a->index;
    const int have_index = ix->mem != NULL;
    const int64_t xdims[NLOG] = {g->in[0], g->in[1], g->in[2], a->channels, a->batch};
    const int64_t ydims[NLOG] = {g->out[0], g->out[1], g->out[2], a->channels, a->batch};
    int64_t xw[NLOG], yw[NLOG];
    for (int i = 0, k = 0; i < NLOG; i++) {
        if (i >= n && i < 3)
            continue;
        xw[k] = xdims[i], yw[k] = ydims[i], k++;
    }
    for (int k = n + 2; k < NLOG; k++)
        xw[k] = yw[k] = 1;
    int64_t xs[NLOG], ys[NLOG], is[NLOG] = {0};
    dla_status s;
    if ((s = dla__ocl_check_view(kernel, "x", x)) != DLA_OK ||
        (s = dla__ocl_check_view(kernel, "y", y)) != DLA_OK ||
        (have_index && (s = dla__ocl_check_view(kernel, "index", ix)) != DLA_OK) ||
        (s = map_view(kernel, "x", x, xw, xs)) != DLA_OK ||
        (s = map_view(kernel, "y", y, yw, ys)) != DLA_OK ||
        (have_index && (s = map_view(kernel, "index", ix, yw, is)) != DLA_OK))
        return s;
    char buf[DLA__OCL_DIMS_BUF];
    if (x->dtype != a->dtype || y->dtype != a->dtype) {
        const dla_view *odd = x->dtype != a->dtype ? x : y;
        return h->error(DLA_ERR_DTYPE, "opencl %s: argument %s (dims %s): dtype %s, expected %s",
                        kernel, odd == x ? "x" : "y",
                        dla__ocl_dims_str(buf, sizeof buf, odd->ndims, odd->dims),
                        dla__ocl_dtype_name(odd->dtype), dla__ocl_dtype_name(a->dtype));
    }
    if (have_index && a->mode != DLA_POOL_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument index (dims %s): only a max pool has an index",
                        kernel, dla__ocl_dims_str(buf, sizeof buf, ix->ndims, ix->dims));
    if (have_index && ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE,
                        "opencl %s: argument index (dims %s): dtype %s, expected int32", kernel,
                        dla__ocl_dims_str(buf, sizeof buf, ix->ndims, ix->dims),
                        dla__ocl_dtype_name(ix->dtype));
    if (backward && a->mode == DLA_POOL_MAX && !have_index)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument index: a max pool's backward needs the forward's "
                        "index",
                        kernel);
    if (g->in[0] * g->in[1] * g->in[2] > INT32_MAX && have_index)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: argument index: %lld spatial positions do not fit in int32",
                        kernel, (long long)(g->in[0] * g->in[1] * g->in[2]));
    const char *clash = dla__ocl_views_overlap(x, y)                          ? "x and y"
                        : have_index && dla__ocl_views_overlap(ix, x)         ? "index and x"
                        : have_index && !backward && dla__ocl_views_overlap(ix, y) ? "index and y"
                                                                              : NULL;
    if (clash)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: arguments %s share memory", kernel,
                        clash);
    for (int i = 0, k = 0; i < NLOG; i++) {
        if (i >= n && i < 3)
            continue;
        g->xs[i] = xs[k], g->ys[i] = ys[k], g->is[i] = is[k], k++;
    }
    g->xoff = x->offset, g->yoff = y->offset, g->ioff = have_index ? ix->offset : 0;
    return DLA_OK;
}

dla_status dla__ocl_pool_forward(void *dev, const dla_pool_args *args)
{
    dla__ocl_device *d = dev;
    pool g;
    dla_status s = setup(d, "pool_forward", args, 0, &g);
    const size_t n = (size_t)(g.planes * g.out[0] * g.out[1] * g.out[2]);
    if (s != DLA_OK || n == 0)
        return s;
    const int f64 = args->dtype == DLA_F64, is_max = args->mode == DLA_POOL_MAX;
    const cl_mem x = dla__ocl_buf(args->x.mem), y = dla__ocl_buf(args->y.mem);
    const cl_int want_index = args->index.mem != NULL;
    const cl_mem ix = want_index ? dla__ocl_buf(args->index.mem) : y;
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_POOL, DLA__OCL_K_POOL + (is_max ? 0 : 2) + f64, &k,
                        "pool_%s_%s", is_max ? "max" : "avg", f64 ? "double" : "float");
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = is_max ? dla__ocl_args(k, "pool_forward", 0, A(g), A(want_index), A(y), A(x), A(ix),
                                   DLA__OCL_END)
                   : dla__ocl_args(k, "pool_forward", 0, A(g), A(y), A(x), DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_launch1(d, k, n, "pool_forward");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_pool_backward(void *dev, const dla_pool_args *args)
{
    dla__ocl_device *d = dev;
    pool g;
    dla_status s = setup(d, "pool_backward", args, 1, &g);
    const size_t n = (size_t)(g.planes * g.in[0] * g.in[1] * g.in[2]);
    if (s != DLA_OK || n == 0)
        return s;
    const int f64 = args->dtype == DLA_F64;
    const cl_int is_max = args->mode == DLA_POOL_MAX;
    const cl_mem x = dla__ocl_buf(args->x.mem);
    /* With no output there is nothing to read: x becomes zeros. */
    const int empty = g.out[0] * g.out[1] * g.out[2] == 0;
    const cl_mem y = empty ? x : dla__ocl_buf(args->y.mem);
    const cl_mem ix = is_max && !empty ? dla__ocl_buf(args->index.mem) : y;
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_POOL, DLA__OCL_K_POOL + 4 + f64, &k, "pool_back_%s",
                        f64 ? "double" : "float");
    if (s == DLA_OK)
        s = dla__ocl_args(k, "pool_backward", 0, A(g), A(is_max), A(x), A(y), A(ix),
                          DLA__OCL_END);
#undef A
    if (s == DLA_OK)
        s = dla__ocl_launch1(d, k, n, "pool_backward");
    pthread_mutex_unlock(&d->lock);
    return s;
}

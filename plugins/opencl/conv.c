/*
 * conv.c - convolution forward, backward data and backward filter on
 * OpenCL devices: the cpu plugin's argument rules, then the direct kernels
 * of conv.cl, which read and write every operand through its view's
 * strides (so no view is declined and nothing is copied dense first).
 *
 * Backward filter sums over every (image, output position) pair for each
 * weight: with few weights that is a long sum, so the batch is dealt to
 * parts, and conv_wsum adds the parts in order.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

#define TARGET_ITEMS 16384

typedef struct conv {
    cl_long in[3], out[3], fs[3], st[3], dl[3], pb[3];
    cl_long batch, C, F, G, Cg, Fg, ntaps, in_px, out_px, parts;
    cl_long xs[3], xc, xb, xoff;
    cl_long ws[3], wc, wf, wg, woff;
    cl_long ys[3], yf, yb, yoff;
    cl_long bs, boff;
} conv;

enum { FORWARD, BACKWARD_DATA, BACKWARD_FILTER };
static const char *const kernel_names[] = {"conv_forward", "conv_backward_data",
                                           "conv_backward_filter"};

static int64_t dim_of(const dla_view *v, int i)
{
    return i < v->ndims ? v->dims[i] : 1;
}
static int64_t stride_of(const dla_view *v, int i)
{
    return i < v->ndims ? v->strides[i] : 0;
}

static dla_status check_dims(const char *k, const char *arg, const dla_view *v, int n,
                             const int64_t *want, const char *meaning)
{
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= dim_of(v, i) == want[i];
    for (int i = n; i < v->ndims; i++)
        ok &= v->dims[i] == 1;
    if (ok)
        return DLA_OK;
    char got[DLA__OCL_DIMS_BUF], exp[DLA__OCL_DIMS_BUF];
    return dla__ocl_host->error(DLA_ERR_SHAPE, "opencl %s: argument %s: dims %s, expected %s (%s)",
                                k, arg, dla__ocl_dims_str(got, sizeof got, v->ndims, v->dims),
                                dla__ocl_dims_str(exp, sizeof exp, n, want), meaning);
}

static dla_status check_operand(const char *k, const char *arg, const dla_view *v, dla_dtype t)
{
    dla_status s = dla__ocl_check_view(k, arg, v);
    if (s != DLA_OK)
        return s;
    if (v->dtype != t)
        return dla__ocl_host->error(DLA_ERR_DTYPE, "opencl %s: argument %s: %s, the call's dtype "
                                    "is %s", k, arg, dla__ocl_dtype_name(v->dtype),
                                    dla__ocl_dtype_name(t));
    return DLA_OK;
}

static dla_status prepare(dla__ocl_device *d, const dla_conv_args *a, int dir, conv *p)
{
    const dla_plugin_host *h = dla__ocl_host;
    const char *k = kernel_names[dir];
    if (a->struct_size < sizeof(dla_conv_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: args struct_size %zu is smaller than ABI 1.1's %zu", k,
                        a->struct_size, sizeof(dla_conv_args));
    if (a->dtype != DLA_F32 && (a->dtype != DLA_F64 || !d->fp64))
        return h->error(DLA_ERR_DTYPE, "opencl %s: argument dtype: %s is not supported", k,
                        dla__ocl_dtype_name(a->dtype));
    if (a->nspatial < 1 || a->nspatial > 3)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl %s: argument nspatial: %d outside 1..3",
                        k, (int)a->nspatial);
    const int64_t big = INT32_MAX;
    if (a->batch < 0 || a->batch > big || a->in_channels < 1 || a->in_channels > big ||
        a->out_channels < 1 || a->out_channels > big || a->groups < 1 ||
        a->in_channels % a->groups || a->out_channels % a->groups)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: arguments batch=%lld in_channels=%lld out_channels=%lld "
                        "groups=%lld: channels must be positive multiples of groups",
                        k, (long long)a->batch, (long long)a->in_channels,
                        (long long)a->out_channels, (long long)a->groups);
    memset(p, 0, sizeof *p);
    const int n = a->nspatial;
    p->batch = a->batch;
    p->C = a->in_channels, p->F = a->out_channels, p->G = a->groups;
    p->Cg = p->C / p->G, p->Fg = p->F / p->G;
    for (int i = 0; i < 3; i++) {
        if (i >= n) {
            p->in[i] = p->out[i] = p->fs[i] = p->st[i] = p->dl[i] = 1;
            continue;
        }
        if (a->in_size[i] < 0 || a->in_size[i] > big || a->out_size[i] < 0 ||
            a->out_size[i] > big || a->filter_size[i] < 1 || a->filter_size[i] > big ||
            a->stride[i] < 1 || a->stride[i] > big || a->dilation[i] < 1 ||
            a->dilation[i] > big || a->pad_begin[i] < -big || a->pad_begin[i] > big)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "opencl %s: spatial dim %d: in_size %lld, out_size %lld, filter_size "
                            "%lld, stride %lld, dilation %lld, pad_begin %lld: sizes must be >= 0, "
                            "filter, stride and dilation >= 1",
                            k, i + 1, (long long)a->in_size[i], (long long)a->out_size[i],
                            (long long)a->filter_size[i], (long long)a->stride[i],
                            (long long)a->dilation[i], (long long)a->pad_begin[i]);
        p->in[i] = a->in_size[i], p->out[i] = a->out_size[i], p->fs[i] = a->filter_size[i];
        p->st[i] = a->stride[i], p->dl[i] = a->dilation[i], p->pb[i] = a->pad_begin[i];
    }
    p->ntaps = p->fs[0] * p->fs[1] * p->fs[2];
    p->in_px = p->in[0] * p->in[1] * p->in[2];
    p->out_px = p->out[0] * p->out[1] * p->out[2];
    dla_status s;
    int64_t want[6];
    if ((s = check_operand(k, "x", &a->x, a->dtype)) != DLA_OK ||
        (s = check_operand(k, "w", &a->w, a->dtype)) != DLA_OK ||
        (s = check_operand(k, "y", &a->y, a->dtype)) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->in[i];
    want[n] = p->C, want[n + 1] = p->batch;
    if ((s = check_dims(k, "x", &a->x, n + 2, want, "in_size x C x batch")) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->fs[i];
    want[n] = p->Cg, want[n + 1] = p->Fg, want[n + 2] = p->G;
    if ((s = check_dims(k, "w", &a->w, n + 3, want, "filter_size x C/G x F/G x G")) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->out[i];
    want[n] = p->F, want[n + 1] = p->batch;
    if ((s = check_dims(k, "y", &a->y, n + 2, want, "out_size x F x batch")) != DLA_OK)
        return s;
    /* The written operand shares memory with neither of the others. */
    const dla_view *out = dir == FORWARD ? &a->y : dir == BACKWARD_DATA ? &a->x : &a->w;
    const dla_view *in1 = dir == FORWARD ? &a->x : &a->y, *in2 = dir == BACKWARD_FILTER ? &a->x
                                                                                         : &a->w;
    if (dla__ocl_views_overlap(out, in1) || dla__ocl_views_overlap(out, in2))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl %s: the written operand shares memory with an operand it reads",
                        k);
    p->xoff = a->x.offset, p->woff = a->w.offset, p->yoff = a->y.offset;
    for (int i = 0; i < 3; i++) {
        p->xs[i] = i < n ? stride_of(&a->x, i) : 0;
        p->ws[i] = i < n ? stride_of(&a->w, i) : 0;
        p->ys[i] = i < n ? stride_of(&a->y, i) : 0;
    }
    p->xc = stride_of(&a->x, n), p->xb = stride_of(&a->x, n + 1);
    p->wc = stride_of(&a->w, n), p->wf = stride_of(&a->w, n + 1), p->wg = stride_of(&a->w, n + 2);
    p->yf = stride_of(&a->y, n), p->yb = stride_of(&a->y, n + 1);
    if (dir == FORWARD && a->bias.mem != NULL) {
        if ((s = check_operand(k, "bias", &a->bias, a->dtype)) != DLA_OK)
            return s;
        int along = -1, others = 0;
        for (int i = 0; i < a->bias.ndims; i++)
            if (a->bias.dims[i] != 1) {
                others += along >= 0;
                along = i;
            }
        if (dla__ocl_numel(&a->bias) != p->F || others) {
            char got[DLA__OCL_DIMS_BUF];
            return h->error(DLA_ERR_SHAPE,
                            "opencl %s: argument bias: dims %s, expected a vector of %lld "
                            "elements",
                            k, dla__ocl_dims_str(got, sizeof got, a->bias.ndims, a->bias.dims),
                            (long long)p->F);
        }
        p->boff = a->bias.offset;
        p->bs = along >= 0 ? a->bias.strides[along] : 0;
    }
    p->parts = 1;
    return DLA_OK;
}

static dla_status run(void *dev, const dla_conv_args *a, int dir)
{
    dla__ocl_device *d = dev;
    conv p;
    dla_status s = prepare(d, a, dir, &p);
    if (s != DLA_OK)
        return s;
    const char *kn = kernel_names[dir];
    const int f64 = a->dtype == DLA_F64;
    const char *T = f64 ? "double" : "float";
    const int64_t nw = p.ntaps * p.Cg * p.Fg * p.G;
    const int64_t items = dir == FORWARD         ? p.out_px * p.F * p.batch
                          : dir == BACKWARD_DATA ? p.in_px * p.C * p.batch
                                                 : nw;
    if (items == 0)
        return DLA_OK;
    const cl_mem w = dla__ocl_buf(a->w.mem);
    /* x may have no elements (an input of size 0 that padding turns into
     * outputs): nothing then reads it. */
    const cl_mem x = dla__ocl_numel(&a->x) ? dla__ocl_buf(a->x.mem) : w;
    /* y is not read when it has no elements (an empty batch or output). */
    const int64_t ny = p.out_px * p.F * p.batch;
    const cl_mem y = ny ? dla__ocl_buf(a->y.mem) : dir == BACKWARD_DATA ? x : w;
    cl_mem part_v = NULL;
    if (dir == BACKWARD_FILTER && p.batch > 1) {
        /* Few weights: their sums over the batch dealt to parts, each a
         * run of images. */
        const int64_t target = d->cpu ? 8 * (int64_t)d->units : TARGET_ITEMS;
        int64_t parts = nw < target ? target / nw : 1;
        if (parts > p.batch)
            parts = p.batch;
        p.parts = parts > 1 ? parts : 1;
        if (p.parts > 1 &&
            !(part_v = dla__ocl_scratch(d, (size_t)(nw * p.parts) * (f64 ? 8 : 4), NULL, kn)))
            return DLA_ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&d->lock);
    cl_kernel k, k2 = NULL;
    static const char *const names[] = {"conv_fwd", "conv_bwd_data", "conv_bwd_filter"};
    s = dla__ocl_kernel(d, DLA__OCL_PROG_CONV, DLA__OCL_K_CONV + 2 * dir + f64, &k, "%s_%s",
                        names[dir], T);
    if (s == DLA_OK && part_v)
        s = dla__ocl_kernel(d, DLA__OCL_PROG_CONV, DLA__OCL_K_CONV + 6 + f64, &k2, "conv_wsum_%s",
                            T);
#define A DLA__OCL_A
    if (s == DLA_OK && dir == FORWARD) {
        const cl_int has_bias = a->bias.mem != NULL;
        const cl_mem b = has_bias ? dla__ocl_buf(a->bias.mem) : y;
        s = dla__ocl_args(k, kn, 0, A(p), A(has_bias), A(y), A(x), A(w), A(b), DLA__OCL_END);
    } else if (s == DLA_OK && dir == BACKWARD_DATA) {
        const cl_int st1 = p.st[0] == 1 && p.st[1] == 1 && p.st[2] == 1;
        s = dla__ocl_args(k, kn, 0, A(p), A(st1), A(x), A(y), A(w), DLA__OCL_END);
    } else if (s == DLA_OK) {
        const cl_mem pv = part_v ? part_v : w;
        s = dla__ocl_args(k, kn, 0, A(p), A(w), A(x), A(y), A(pv), DLA__OCL_END);
    }
    if (s == DLA_OK && dir == BACKWARD_FILTER) {
        s = dla__ocl_launch1(d, k, (size_t)(items * p.parts), kn);
    } else if (s == DLA_OK) {
        const int64_t range[3] = {dir == FORWARD ? p.out[0] : p.in[0],
                                  dir == FORWARD ? p.out[1] * p.out[2] : p.in[1] * p.in[2],
                                  (dir == FORWARD ? p.F : p.C) * p.batch};
        s = dla__ocl_launch3(d, k, range, kn);
    }
    if (s == DLA_OK && k2)
        s = dla__ocl_args(k2, kn, 0, A(p), A(w), A(part_v), DLA__OCL_END);
#undef A
    if (s == DLA_OK && k2)
        s = dla__ocl_launch1(d, k2, (size_t)nw, kn);
    pthread_mutex_unlock(&d->lock);
    if (part_v)
        clReleaseMemObject(part_v);
    return s;
}

dla_status dla__ocl_conv_forward(void *dev, const dla_conv_args *args)
{
    return run(dev, args, FORWARD);
}

dla_status dla__ocl_conv_backward_data(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BACKWARD_DATA);
}

dla_status dla__ocl_conv_backward_filter(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BACKWARD_FILTER);
}

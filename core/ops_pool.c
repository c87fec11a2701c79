/*
 * ops_pool.c - max and average pooling (windowed and global).
 *
 * Windowed pooling runs on the pool_forward / pool_backward kernels, which
 * see x as [pooled dims..., channels, batch]. With S dims that is x's own
 * dense layout (S..., C, then B, T and U merged into the batch). A "CBT"
 * sequence pools over T, the last dim: the kernel then gets a strided view
 * [T, C*B, rest] of the same memory, so no transpose is made.
 *
 * The backward is an op of its own (pool_grad) so that gradients can be
 * recorded too: its own backward for average pooling is the average pool
 * again (the operation is linear and its adjoint's adjoint is itself).
 * Global max pooling is one window over the pooled dims (so ties go where
 * windowed pooling sends them); global average pooling is a mean.
 */
#include "core/alloc.h"
#include "core/op.h"
#include "core/ops_nn.h"

#include <stdint.h>
#include <string.h>

/* What the public function was given. */
typedef struct pool_attrs {
    dla_pool_mode mode;
    int npool;
    int64_t pool[3];
    int64_t stride[3];
    int64_t padding[2][3];
    int same;
    int exclude_pad;
} pool_attrs;

/* The pooling worked out for one x: the kernel's arguments and the dims to
 * rebuild x and y with. */
typedef struct pool_geom {
    dla_pool_mode mode;
    int exclude_pad;
    int nsp;       /* pooled dims */
    int tdim;      /* 0: pooled dims are x's first ones (S); else the 1-based T dim */
    int64_t in[3], out[3], win[3], stride[3], pad[3];
    int64_t channels, batch;
    dla_dtype dtype;
    int ndims;
    int64_t xdims[DLA_MAX_DIMS], ydims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} pool_geom;

static const char *pool_name(dla_pool_mode m) { return m == DLA_POOL_MAX ? "dla_maxpool" : "dla_avgpool"; }

/* The dims pooling runs over: the S dims, else the T dim. Returns the count
 * (0 with the error set) and the 1-based T dim in *tdim when pooling T. */
static int pooled_dims(const char *op, const dla_tensor *x, int *tdim)
{
    char buf[DLA__DIMS_BUF];
    int ns = 0;
    for (int i = 0; x->format[i]; i++)
        ns += x->format[i] == 'S';
    *tdim = 0;
    if (ns > 3) {
        dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s %s) has %d \"S\" dims; pooling takes 1 to 3",
                  op, dla__tensor_dims_str(x, buf, sizeof buf), x->format, ns);
        return 0;
    }
    if (ns)
        return ns;
    if ((*tdim = dla_tensor_find_dim(x, 'T')))
        return 1;
    dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s %s) has no \"S\" or \"T\" dim to pool over", op,
              dla__tensor_dims_str(x, buf, sizeof buf), x->format[0] ? x->format : "unformatted");
    return 0;
}

static dla_status geometry(const pool_attrs *a, const dla_tensor *x, pool_geom *g)
{
    const char *op = pool_name(a->mode);
    char buf[DLA__DIMS_BUF];
    if (!dla__nn_is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                         dla_dtype_name(x->dtype));
    memset(g, 0, sizeof *g);
    int n = pooled_dims(op, x, &g->tdim);
    if (!n)
        return dla_last_status();
    if (a->npool != 1 && a->npool != n)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument pool_size: %d entr%s for the %d "
                         "pooled dim%s of x (%s %s); give one per dim or one for all", op,
                         a->npool, a->npool == 1 ? "y" : "ies", n, n == 1 ? "" : "s",
                         dla__tensor_dims_str(x, buf, sizeof buf), x->format);
    g->mode = a->mode;
    g->exclude_pad = a->exclude_pad;
    g->nsp = n;
    g->dtype = x->dtype;
    g->ndims = x->ndims;
    memcpy(g->xdims, x->dims, sizeof g->xdims);
    memcpy(g->ydims, x->dims, sizeof g->ydims);
    strcpy(g->format, x->format);
    int64_t full = 1;
    for (int i = 0; i < n; i++) {
        int xd = g->tdim ? g->tdim - 1 : i;
        int64_t in = x->dims[xd], w = a->pool[a->npool == 1 ? 0 : i];
        int64_t s = a->stride[i] ? a->stride[i] : 1, pb = a->padding[0][i], pe = a->padding[1][i];
        if (w < 1 || w > INT32_MAX)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument pool_size: %lld along pooled "
                             "dim %d; needs 1 to 2^31-1", op, (long long)w, i + 1);
        if (s < 1 || s > INT32_MAX)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option stride: %lld along pooled dim "
                             "%d; needs 1 to 2^31-1", op, (long long)s, i + 1);
        if (pb < 0 || pe < 0 || (a->same && (pb || pe)))
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option padding: %lld before, %lld "
                             "after pooled dim %d; %s", op, (long long)pb, (long long)pe, i + 1,
                             a->same ? "padding_mode \"same\" takes no numbers"
                                     : "needs 0 or more");
        if (a->same) {
            int64_t out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + w - in;
            if (total < 0)
                total = 0;
            pb = total / 2;
            pe = total - pb;
        }
        if (pb >= w || pe >= w)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option padding: %lld before, %lld "
                             "after pooled dim %d; must be smaller than the window (%lld)", op,
                             (long long)pb, (long long)pe, i + 1, (long long)w);
        if (in + pb + pe < w)
            return dla__fail(DLA_ERR_SHAPE, "%s: argument x (%s %s): pooled dim %d has %lld "
                             "elements (%lld padded), fewer than the window (%lld)", op,
                             dla__tensor_dims_str(x, buf, sizeof buf), x->format, i + 1,
                             (long long)in, (long long)(in + pb + pe), (long long)w);
        g->in[i] = in;
        g->win[i] = w;
        g->stride[i] = s;
        g->pad[i] = pb;
        g->out[i] = (in + pb + pe - w) / s + 1;
        g->ydims[xd] = g->out[i];
        /* The kernels count a window's elements in int64 (the sizes are
         * int32 each, three of them are not). */
        if (__builtin_mul_overflow(full, w, &full))
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument pool_size: a window of more "
                             "than 2^63 elements", op);
    }
    /* channels and batch: what lies after the pooled dims, split at C (S
     * pooling) or everything before T and after it (T pooling). */
    if (!g->tdim) {
        int c = dla_tensor_find_dim(x, 'C');
        g->channels = c ? x->dims[c - 1] : 1;
        g->batch = 1;
        for (int i = c ? c : n; i < x->ndims; i++)
            g->batch *= x->dims[i];
    } else {
        g->channels = g->batch = 1;
        for (int i = 0; i < g->tdim - 1; i++)
            g->channels *= x->dims[i];
        for (int i = g->tdim; i < x->ndims; i++)
            g->batch *= x->dims[i];
    }
    return DLA_OK;
}

/* The kernel's view of dense t, whose pooled dims have sizes sp. */
static void kernel_view(const pool_geom *g, const dla_tensor *t, const int64_t *sp, dla_view *v)
{
    dla__view_of(t, v);
    int n = g->nsp;
    v->ndims = n + 2;
    if (!g->tdim) {
        int64_t s = 1;
        for (int i = 0; i < n; i++) {
            v->dims[i] = sp[i];
            v->strides[i] = s;
            s *= sp[i];
        }
        v->dims[n] = g->channels;
        v->strides[n] = s;
        v->dims[n + 1] = g->batch;
        v->strides[n + 1] = s * g->channels;
    } else { /* [T, everything before T, everything after] */
        v->dims[0] = sp[0];
        v->strides[0] = g->channels;
        v->dims[1] = g->channels;
        v->strides[1] = 1;
        v->dims[2] = g->batch;
        v->strides[2] = g->channels * sp[0];
    }
}

static void kernel_args(const pool_geom *g, dla_pool_args *k)
{
    memset(k, 0, sizeof *k);
    k->struct_size = sizeof *k;
    k->mode = g->mode;
    k->dtype = g->dtype;
    k->nspatial = g->nsp;
    k->avg_exclude_pad = g->exclude_pad;
    k->channels = g->channels;
    k->batch = g->batch;
    for (int i = 0; i < g->nsp; i++) {
        k->in_size[i] = g->in[i];
        k->out_size[i] = g->out[i];
        k->window[i] = g->win[i];
        k->stride[i] = g->stride[i];
        k->pad_begin[i] = g->pad[i];
    }
    k->index.struct_size = sizeof k->index;
}

/* ------------------------------------------------------------- backward */

static dla_tensor *pool_apply(const pool_attrs *a, dla_tensor *x);

/* dx from dy (and the max pool's index): in = {dy[, index]}. */
static dla_status grad_forward(const void *attrs, dla_tensor *const *in, int nin,
                               dla_tensor **out, dla_tensor **saved)
{
    (void)saved;
    const pool_geom *g = attrs;
    const char *op = pool_name(g->mode);
    dla_device *dev = in[0]->storage->device;
    dla_tensor *dy = dla__nn_dense(op, in[0]);
    dla_tensor *idx = nin > 1 ? dla__nn_dense(op, in[1]) : NULL;
    dla_tensor *dx = dla__tensor_alloc(op, dev, g->dtype, g->format, g->ndims, g->xdims);
    dla_status st = dy && dx && (nin == 1 || idx) ? DLA_OK : dla_last_status();
    if (st == DLA_OK) {
        dla_pool_args k;
        kernel_args(g, &k);
        kernel_view(g, dx, g->in, &k.x);
        kernel_view(g, dy, g->out, &k.y);
        if (idx)
            kernel_view(g, idx, g->out, &k.index);
        st = dla__k_pool(dev, DLA_KERNEL_POOL_BACKWARD, &k);
    }
    dla_tensor_release(dy);
    dla_tensor_release(idx);
    if (st != DLA_OK) {
        dla_tensor_release(dx);
        return st;
    }
    out[0] = dx;
    return DLA_OK;
}

/* Attributes that make geometry g again on its x: g's window, stride,
 * padding before and mode, and the least padding after that gives g's
 * output size (INT64_MAX when g's sizes overflow it, which geometry
 * refuses: a loaded g is any bytes). */
static void attrs_of_geom(const pool_geom *g, pool_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->mode = g->mode;
    a->npool = g->nsp;
    a->exclude_pad = g->exclude_pad;
    for (int i = 0; i < g->nsp; i++) {
        a->pool[i] = g->win[i];
        a->stride[i] = g->stride[i];
        a->padding[0][i] = g->pad[i];
        int64_t p;
        if (__builtin_sub_overflow(g->out[i], 1, &p) || __builtin_mul_overflow(p, g->stride[i], &p) ||
            __builtin_add_overflow(p, g->win[i], &p) || __builtin_sub_overflow(p, g->in[i], &p) ||
            __builtin_sub_overflow(p, g->pad[i], &p))
            p = INT64_MAX;
        a->padding[1][i] = p > 0 ? p : 0;
    }
}

/* The gradient of dx with respect to dy: average pooling is linear, and
 * this pool_grad is its adjoint, so the adjoint of pool_grad is the average
 * pool itself, with the same window, stride and padding. */
static dla_status grad_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    pool_attrs a;
    attrs_of_geom(n->attrs, &a);
    a.mode = DLA_POOL_AVG;
    gin[0] = pool_apply(&a, gout[0]);
    return DLA_OK;
}

/* grad_forward makes dx of the geometry's x and reads dy (and the max
 * index) through its kernel views of the geometry's sizes: the geometry
 * must be the one its x makes (geometry's own checks, on attributes
 * rebuilt from it), and dy and the index must have its y's dims. */
static dla_status grad_infer(dla_pool_mode mode, const void *attrs, int nin,
                             const dla__vshape *in, dla__vshape *out)
{
    const pool_geom *g = attrs;
    const char *op = pool_name(mode);
    char buf[DLA__DIMS_BUF], yd[DLA__DIMS_BUF];
    int64_t numel;
    if (g->mode != mode || (unsigned)g->exclude_pad > 1 || g->nsp < 1 || g->nsp > 3 ||
        g->ndims < 0 || g->ndims > DLA_MAX_DIMS || (unsigned)g->dtype >= DLA_DTYPE_COUNT ||
        !dla__attr_str_ok(g->format, sizeof g->format) ||
        dla__numel_checked(op, g->ndims, g->xdims, g->dtype, &numel) != DLA_OK)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s backward: attributes mode %d, %d pooled "
                         "dims of %d, x dims or format do not hold together", op, (int)g->mode,
                         g->nsp, g->ndims);
    dla__vshape xs = {.dtype = g->dtype, .ndims = g->ndims};
    memcpy(xs.dims, g->xdims, sizeof xs.dims);
    memcpy(xs.format, g->format, sizeof xs.format);
    dla_tensor x;
    dla__tensor_of_shape(&xs, &x);
    pool_attrs a;
    attrs_of_geom(g, &a);
    pool_geom again;
    char why[512] = "";
    if (geometry(&a, &x, &again) != DLA_OK)
        snprintf(why, sizeof why, " (%s)", dla_last_error());
    if (why[0] || memcmp(&again, g, sizeof again) != 0)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s backward: attributes: the geometry is not "
                         "the one its x (%s \"%s\") makes%s", op,
                         dla__dims_str(buf, sizeof buf, g->ndims, g->xdims), g->format, why);
    for (int i = 0; i < nin; i++)
        if (in[i].dtype != (i ? DLA_I32 : g->dtype) || !dla__shape_fits(&in[i], g->ndims, g->ydims))
            return dla__fail(DLA_ERR_SHAPE, "%s backward: argument %s (%s %s) is not the %s of its "
                             "y (%s)", op, i ? "index" : "dy",
                             dla__dims_str(buf, sizeof buf, in[i].ndims, in[i].dims),
                             dla_dtype_name(in[i].dtype), i ? "int32 index" : "gradient",
                             dla__dims_str(yd, sizeof yd, g->ndims, g->ydims));
    out[0] = xs;
    return DLA_OK;
}
static dla_status avg_grad_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    return grad_infer(DLA_POOL_AVG, attrs, nin, in, out);
}
static dla_status max_grad_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    return grad_infer(DLA_POOL_MAX, attrs, nin, in, out);
}

static const dla__op avg_grad_op = {
    .name = "dla_avgpool", .nin = 1, .nout = 1, .forward = grad_forward,
    .backward = grad_backward, .infer = avg_grad_infer,
};
DLA__OP_REGISTER_AS(avg_grad_op, "dla_avgpool backward", sizeof(pool_geom));
/* The derivative of max pooling's backward in dy (second derivatives):
 * each dy went to its window's maximum, so the result's gradient is read
 * back from there. x's gradient, flattened, is gathered (dla_index) at
 * each y's maximum: base + step * index, where index is the maximum's
 * position in its spatial block, base the block's first element of x and
 * step the block's stride (1 for S pooling, the channels for T pooling,
 * kernel_view's layouts). The positions depend on nothing but the
 * geometry and the index, so base is made on the host. */
static dla_status max_grad_backward(const dla__node *n, dla_tensor *const *gout,
                                    dla_tensor **gin)
{
    const pool_geom *g = n->attrs;
    dla_tensor *dy = n->in[0], *idx = n->in[1];
    int64_t nx = 1, ny = 1, sin = 1, sout = 1;
    for (int i = 0; i < g->ndims; i++) {
        nx *= g->xdims[i];
        ny *= g->ydims[i];
    }
    for (int i = 0; i < g->nsp; i++) {
        sin *= g->in[i];
        sout *= g->out[i];
    }
    if (nx > INT32_MAX)
        return dla__fail(DLA_ERR_UNSUPPORTED, "dla_maxpool: the second derivative of a max pool "
                         "of %lld elements (more than 2^31-1) is not supported", (long long)nx);
    double *base = dla__malloc(sizeof *base * (size_t)(ny ? ny : 1));
    if (!base)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_maxpool: the second derivative: %lld "
                         "positions", (long long)ny);
    const int64_t c = g->channels;
    for (int64_t o = 0; o < ny; o++)
        base[o] = g->tdim ? (double)(o % c + c * sin * (o / (c * sout)))
                          : (double)(sin * (o / sout));
    const int64_t dny[1] = {ny}, dnx[1] = {nx};
    dla_tensor *b = dla_tensor_from_host(base, DLA_F64, "", 1, dny);
    dla__free(base);
    if (dla_tensor_device(b) != dla_tensor_device(idx))
        b = dla_tensor_to_device(b, dla_tensor_device(idx));
    dla_tensor *step = dla_affine(dla_cast(dla_reshape(idx, "", 1, dny), DLA_F64),
                                  g->tdim ? (double)c : 1.0, 0.0);
    dla_tensor *pos = dla_cast(dla_add(b, step), DLA_I32);
    dla_tensor *v = dla_index(dla_reshape(gout[0], "", 1, dnx), 1, pos);
    gin[0] = dla_reshape(v, dy->format, dy->ndims, dy->dims);
    return DLA_OK;
}

static const dla__op max_grad_op = {
    .name = "dla_maxpool", .nin = 2, .nout = 1, .forward = grad_forward, .infer = max_grad_infer,
    .backward = max_grad_backward,
};
DLA__OP_REGISTER_AS(max_grad_op, "dla_maxpool backward", sizeof(pool_geom));

/* -------------------------------------------------------------- forward */

static dla_status pool_forward(const void *attrs, dla_tensor *const *in, int nin,
                               dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    const pool_attrs *a = attrs;
    const char *op = pool_name(a->mode);
    dla_tensor *x = in[0];
    pool_geom g;
    dla_status st = geometry(a, x, &g);
    if (st != DLA_OK)
        return st;
    dla_device *dev = x->storage->device;
    dla_tensor *xd = dla__nn_dense(op, x);
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, g.ydims);
    dla_tensor *idx = a->mode == DLA_POOL_MAX
                          ? dla__tensor_alloc(op, dev, DLA_I32, "", x->ndims, g.ydims)
                          : NULL;
    if (!xd || !y || (a->mode == DLA_POOL_MAX && !idx))
        st = dla_last_status();
    if (st == DLA_OK) {
        dla_pool_args k;
        kernel_args(&g, &k);
        kernel_view(&g, xd, g.in, &k.x);
        kernel_view(&g, y, g.out, &k.y);
        if (idx)
            kernel_view(&g, idx, g.out, &k.index);
        st = dla__k_pool(dev, DLA_KERNEL_POOL_FORWARD, &k);
    }
    dla_tensor_release(xd);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        dla_tensor_release(idx);
        return st;
    }
    out[0] = y;
    if (idx)
        saved[0] = idx;
    return DLA_OK;
}

static dla_status pool_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const pool_attrs *a = n->attrs;
    pool_geom g;
    dla_status st = geometry(a, n->in[0], &g);
    if (st != DLA_OK)
        return st;
    if (a->mode == DLA_POOL_MAX)
        gin[0] = dla__apply(&max_grad_op, &g, sizeof g, 2, (dla_tensor *[]){gout[0], n->saved[0]});
    else
        gin[0] = dla__apply(&avg_grad_op, &g, sizeof g, 1, &gout[0]);
    return DLA_OK;
}

/* pool_forward runs geometry on x, which indexes the attributes' arrays
 * by its own count of pooled dims and bounds every size: the same checks
 * on the recorded x, and its y dims are the result's (and the max
 * index's, int32 and unformatted). */
static dla_status pool_infer(dla_pool_mode mode, const void *attrs, const dla__vshape *in,
                             dla__vshape *out)
{
    const pool_attrs *a = attrs;
    if (a->mode != mode || (unsigned)a->same > 1 || (unsigned)a->exclude_pad > 1)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attributes mode %d, same %d, exclude_pad "
                         "%d: not this op's", pool_name(mode), (int)a->mode, a->same,
                         a->exclude_pad);
    dla_tensor x;
    dla__tensor_of_shape(&in[0], &x);
    pool_geom g;
    dla_status st = geometry(a, &x, &g);
    if (st != DLA_OK)
        return st;
    out[0] = in[0];
    memcpy(out[0].dims, g.ydims, sizeof out[0].dims);
    if (mode == DLA_POOL_MAX) {
        out[1] = out[0];
        out[1].dtype = DLA_I32;
        memset(out[1].format, 0, sizeof out[1].format);
    }
    return DLA_OK;
}
static dla_status maxpool_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    return pool_infer(DLA_POOL_MAX, attrs, in, out);
}
static dla_status avgpool_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    return pool_infer(DLA_POOL_AVG, attrs, in, out);
}

static const char *const x_only[] = {"x", NULL};

static const dla__op maxpool_op = {
    .name = "dla_maxpool", .nin = 1, .nout = 1, .nsaved = 1, .forward = pool_forward,
    .saved_constant = 1, /* the index */
    .backward = pool_backward, .infer = maxpool_infer, .arg_names = x_only,
};
DLA__OP_REGISTER(maxpool_op, sizeof(pool_attrs));
static const dla__op avgpool_op = {
    .name = "dla_avgpool", .nin = 1, .nout = 1, .forward = pool_forward,
    .backward = pool_backward, .infer = avgpool_infer, .arg_names = x_only,
};
DLA__OP_REGISTER(avgpool_op, sizeof(pool_attrs));

static dla_tensor *pool_apply(const pool_attrs *a, dla_tensor *x)
{
    return dla__apply(a->mode == DLA_POOL_MAX ? &maxpool_op : &avgpool_op, a, sizeof *a, 1, &x);
}

static dla_tensor *pool(dla_pool_mode mode, dla_tensor *x, int npool, const int64_t *pool_size,
                        const dla_pool_options *opts)
{
    const char *op = pool_name(mode);
    pool_attrs a = {.mode = mode, .npool = npool};
    if (npool < 1 || npool > 3)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument pool_size: %d entries; give 1 "
                          "to 3", op, npool);
    /* Named apart: a NULL pool_size read "1 entries; give 1 to 3". */
    if (!pool_size)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument pool_size is NULL, for npool "
                          "%d", op, npool);
    memcpy(a.pool, pool_size, (size_t)npool * sizeof *pool_size);
    if (opts) {
        memcpy(a.stride, opts->stride, sizeof a.stride);
        memcpy(a.padding, opts->padding, sizeof a.padding);
        const char *pm = opts->padding_mode, *pv = opts->padding_value;
        if (pm && !strcmp(pm, "same"))
            a.same = 1;
        else if (pm)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option padding_mode: \"%s\"; use "
                              "\"same\" or NULL (the padding numbers)", op, pm);
        if (pv && mode == DLA_POOL_MAX)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option padding_value: \"%s\"; max "
                              "pooling never takes padding, so it has no padding value", op, pv);
        if (pv && !strcmp(pv, "mean"))
            a.exclude_pad = 1;
        else if (pv && strcmp(pv, "zero") != 0)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option padding_value: \"%s\"; use "
                              "\"zero\" (the default) or \"mean\"", op, pv);
    }
    return pool_apply(&a, x);
}

DLA_API dla_tensor *dla_maxpool(dla_tensor *x, int npool, const int64_t *pool_size,
                                const dla_pool_options *opts)
{
    return pool(DLA_POOL_MAX, x, npool, pool_size, opts);
}

DLA_API dla_tensor *dla_avgpool(dla_tensor *x, int npool, const int64_t *pool_size,
                                const dla_pool_options *opts)
{
    return pool(DLA_POOL_AVG, x, npool, pool_size, opts);
}

/* --------------------------------------------------------------- global */

static dla_tensor *global(const char *op, int max, dla_tensor *x)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    if (!dla__nn_is_float(x->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                          dla_dtype_name(x->dtype));
    int tdim, n = pooled_dims(op, x, &tdim);
    if (!n)
        return dla__return(dla__error_tensor());
    if (!max) {
        int64_t dims[3];
        for (int i = 0; i < n; i++)
            dims[i] = tdim ? tdim : i + 1;
        return dla_mean(x, n, dims);
    }
    /* One window over everything: the gradient goes to the first maximum,
     * as in windowed max pooling. */
    pool_attrs a = {.mode = DLA_POOL_MAX, .npool = n};
    for (int i = 0; i < n; i++) {
        a.pool[i] = x->dims[tdim ? tdim - 1 : i];
        /* An empty pooled dim has no maximum. Said here, in the caller's
         * terms: the window of size 0 made from it was refused as
         * "dla_maxpool: argument pool_size", neither of which the caller
         * gave. (The average of nothing is NaN, as dla_mean's.) */
        if (a.pool[i] == 0) {
            char buf[DLA__DIMS_BUF];
            return dla__error(DLA_ERR_SHAPE, "%s: argument x (%s %s): pooled dim %d is empty, "
                              "so it has no maximum to take", op,
                              dla__tensor_dims_str(x, buf, sizeof buf), x->format, i + 1);
        }
    }
    return pool_apply(&a, x);
}

DLA_API dla_tensor *dla_global_maxpool(dla_tensor *x) { return global("dla_global_maxpool", 1, x); }
DLA_API dla_tensor *dla_global_avgpool(dla_tensor *x) { return global("dla_global_avgpool", 0, x); }

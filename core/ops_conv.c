/*
 * ops_conv.c - dla_conv and dla_transpconv (MATLAB dlconv, dltranspconv)
 * and their gradients.
 *
 * One convolution geometry (conv_geom) links three spaces: the x-space
 * (the input of a convolution), the y-space (its output) and the w-space
 * (its filters, MATLAB's layout). Three ops move between them, one per
 * kernel of the plugin ABI, and each one's gradient is made of the other
 * two, so every derivative is again a convolution:
 *   conv   (x, w [, b]) -> y   dx = data(dy, w), dw = filter(x, dy), db = sum(dy)
 *   data   (y, w)       -> x   dy = conv(dx, w), dw = filter(dx, y)
 *   filter (x, y)       -> w   dx = data(y, dw), dy = conv(x, dw)
 * dla_conv is the conv op; dla_transpconv is the data op (MATLAB's
 * transposed filter layout is the conv layout of the reverse direction)
 * plus a broadcast add of the bias.
 *
 * The x- and y-spaces share dim order and labels: the kernel sees the
 * convolved dims, "C" and "B" of a tensor through strides, wherever they
 * lie ("SSCB", a "CBT" sequence convolved along "T", an unformatted x in
 * any DataFormat order).
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct conv_geom {
    int nsp;                        /* convolved dims, 1..3 */
    int ndims;                      /* of x- and y-space tensors */
    int formatted;                  /* results carry labels */
    char labels[DLA_MAX_DIMS + 1];  /* one per dim, even when unformatted */
    int sp[3], cpos, bpos;          /* 0-based dims; bpos -1: no batch dim */
    int64_t C, F, G;                /* x-space and y-space channels, groups */
    int64_t fs[3], st[3], dl[3], pb[3];
    int64_t xdims[DLA_MAX_DIMS], ydims[DLA_MAX_DIMS];
    int wndims;
    int64_t wdims[DLA_MAX_DIMS];
    char wformat[DLA_MAX_DIMS + 1];
} conv_geom;

/* Dim i of t, 1 past its ndims; the stride there, 0 past its ndims. */
static int64_t tdim(const dla_tensor *t, int i)
{
    return i < t->ndims ? t->dims[i] : 1;
}
static int64_t tstride(const dla_tensor *t, int i)
{
    return i < t->ndims ? t->strides[i] : 0;
}

/* A dim of one element is never stepped over, so its stride is free: it
 * gets the dense one (the product of the dims before it). Without this a
 * dense weight's view, whose group dim lies past the tensor's dims, had
 * stride 0 there, was not dense by plugin.h's rule, and a plugin with a
 * dense-only path (cuDNN's) declined every call and was handed copies. */
static void ones_dense(dla_view *v)
{
    int64_t s = 1;
    for (int i = 0; i < v->ndims; i++) {
        if (v->dims[i] == 1)
            v->strides[i] = s;
        s *= v->dims[i];
    }
}

/* Kernel view of an x- or y-space tensor: convolved dims, C, B. */
static void space_view(const conv_geom *g, const dla_tensor *t, dla_view *v)
{
    dla__view_of(t, v);
    const int n = g->nsp;
    v->ndims = n + 2;
    for (int i = 0; i < n; i++)
        v->dims[i] = tdim(t, g->sp[i]), v->strides[i] = tstride(t, g->sp[i]);
    v->dims[n] = tdim(t, g->cpos), v->strides[n] = tstride(t, g->cpos);
    v->dims[n + 1] = g->bpos >= 0 ? tdim(t, g->bpos) : 1;
    v->strides[n + 1] = g->bpos >= 0 ? tstride(t, g->bpos) : 0;
    for (int i = n + 2; i < DLA_MAX_DIMS; i++)
        v->dims[i] = 0, v->strides[i] = 0;
    ones_dense(v);
}

/* Kernel view of the filters: filter dims, C/G, F/G, G. */
static void weight_view(const conv_geom *g, const dla_tensor *t, dla_view *v)
{
    dla__view_of(t, v);
    v->ndims = g->nsp + 3;
    for (int i = 0; i < g->nsp + 3; i++)
        v->dims[i] = tdim(t, i), v->strides[i] = tstride(t, i);
    for (int i = g->nsp + 3; i < DLA_MAX_DIMS; i++)
        v->dims[i] = 0, v->strides[i] = 0;
    ones_dense(v);
}

/* Kernel view of a bias of F elements (or one, repeated). */
static void bias_view(int64_t F, const dla_tensor *b, dla_view *v)
{
    dla__view_of(b, v);
    v->ndims = 1;
    v->dims[0] = F;
    v->strides[0] = 0;
    for (int i = 0; i < b->ndims; i++)
        if (b->dims[i] != 1)
            v->strides[0] = b->strides[i];
    for (int i = 1; i < DLA_MAX_DIMS; i++)
        v->dims[i] = 0, v->strides[i] = 0;
}

/* Runs kernel `which` writing `out` from the two operands a and b (and
 * bias) in their roles. The views are the tensors' own, permuted into the
 * kernel's layout (a CBT input reaches a 1-d convolution with x strides
 * like 6,1,3); a device that declines such views gets dense copies from
 * the launch itself (launch_dense.c), in plain runs and replays alike. */
static dla_status launch(const char *op, const conv_geom *g, dla_kernel which, dla_tensor *out,
                         dla_tensor *a, dla_tensor *b, dla_tensor *bias)
{
    dla_device *dev = out->storage->device;
    dla_conv_args k = {.struct_size = sizeof k, .dtype = out->dtype, .nspatial = g->nsp,
                       .in_channels = g->C, .out_channels = g->F, .groups = g->G};
    k.batch = g->bpos >= 0 ? g->xdims[g->bpos] : 1;
    for (int i = 0; i < g->nsp; i++) {
        k.in_size[i] = g->xdims[g->sp[i]], k.out_size[i] = g->ydims[g->sp[i]];
        k.filter_size[i] = g->fs[i], k.stride[i] = g->st[i], k.dilation[i] = g->dl[i];
        k.pad_begin[i] = g->pb[i];
    }
    /* The roles: forward (x, w) -> y, data (y, w) -> x, filter (x, y) -> w. */
    dla_tensor *x = which == DLA_KERNEL_CONV_BACKWARD_DATA ? out : a;
    dla_tensor *y = which == DLA_KERNEL_CONV_FORWARD ? out
                    : which == DLA_KERNEL_CONV_BACKWARD_DATA ? a
                                                             : b;
    dla_tensor *w = which == DLA_KERNEL_CONV_BACKWARD_FILTER ? out : b;
    space_view(g, x, &k.x);
    space_view(g, y, &k.y);
    weight_view(g, w, &k.w);
    if (bias)
        bias_view(g->F, bias, &k.bias);
    else
        memset(&k.bias, 0, sizeof k.bias), k.bias.struct_size = sizeof k.bias;
    dla_status st = dla__k_conv(dev, which, &k);
    if (st != DLA_OK)
        dla__error_prefix(op);
    return st;
}

static const char *space_format(const conv_geom *g)
{
    return g->formatted ? g->labels : "";
}

/* ---------------------------------------------------------------- the ops */

static const dla__op conv_op, data_op, filter_op;

static dla_tensor *apply2(const dla__op *op, const conv_geom *g, dla_tensor *a, dla_tensor *b)
{
    return dla__apply(op, g, sizeof *g, 2, (dla_tensor *[]){a, b});
}

/* conv: in = x, w [, bias]; out = y. */
static dla_status conv_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    (void)saved;
    const conv_geom *g = attrs;
    dla_tensor *y = dla__tensor_alloc("dla_conv", in[0]->storage->device, in[0]->dtype,
                                      space_format(g), g->ndims, g->ydims);
    if (!y)
        return dla_last_status();
    dla_status st = launch("dla_conv", g, DLA_KERNEL_CONV_FORWARD, y, in[0], in[1],
                           nin > 2 ? in[2] : NULL);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

/* t (of the geometry's dims) with input x's dims: a data_format longer
 * than x's dims (MATLAB's trailing singleton B) gave the gradient a dim x
 * does not have. */
static dla_tensor *like_input(dla_tensor *t, const dla_tensor *x)
{
    if (!t || dla_tensor_status(t) != DLA_OK || t->ndims == x->ndims)
        return t;
    return dla_reshape(t, x->format, x->ndims, x->dims);
}

static dla_status conv_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const conv_geom *g = n->attrs;
    dla_tensor *dy = gout[0];
    if (n->need[0])
        gin[0] = like_input(apply2(&data_op, g, dy, n->in[1]), n->in[0]);
    if (n->need[1])
        gin[1] = apply2(&filter_op, g, n->in[0], dy);
    if (n->nin > 2 && n->need[2]) {
        /* Sum over everything but "C" (or everything, for one bias value). */
        dla_tensor *b = n->in[2];
        int64_t dims[DLA_MAX_DIMS];
        int nd = 0;
        if (dla_tensor_numel(b) == g->F)
            for (int i = 0; i < g->ndims; i++)
                if (i != g->cpos)
                    dims[nd++] = i + 1;
        dla_tensor *s = dla_sum(dy, nd, dims);
        gin[2] = dla_reshape(s, b->format, b->ndims, b->dims);
    }
    return DLA_OK;
}

/* data: in = y-space, w; out = x-space. */
static dla_status data_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    (void)nin, (void)saved;
    const conv_geom *g = attrs;
    dla_tensor *x = dla__tensor_alloc("dla_transpconv", in[0]->storage->device, in[0]->dtype,
                                      space_format(g), g->ndims, g->xdims);
    if (!x)
        return dla_last_status();
    dla_status st =
        launch("dla_transpconv", g, DLA_KERNEL_CONV_BACKWARD_DATA, x, in[0], in[1], NULL);
    if (st != DLA_OK) {
        dla_tensor_release(x);
        return st;
    }
    out[0] = x;
    return DLA_OK;
}

static dla_status data_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const conv_geom *g = n->attrs;
    dla_tensor *gx = gout[0];
    if (n->need[0])
        gin[0] = like_input(apply2(&conv_op, g, gx, n->in[1]), n->in[0]);
    if (n->need[1])
        gin[1] = apply2(&filter_op, g, gx, n->in[0]);
    return DLA_OK;
}

/* filter: in = x-space, y-space; out = w-space. */
static dla_status filter_forward(const void *attrs, dla_tensor *const *in, int nin,
                                 dla_tensor **out, dla_tensor **saved)
{
    (void)nin, (void)saved;
    const conv_geom *g = attrs;
    dla_tensor *w = dla__tensor_alloc("dla_conv", in[0]->storage->device, in[0]->dtype,
                                      g->wformat, g->wndims, g->wdims);
    if (!w)
        return dla_last_status();
    dla_status st = launch("dla_conv", g, DLA_KERNEL_CONV_BACKWARD_FILTER, w, in[0], in[1], NULL);
    if (st != DLA_OK) {
        dla_tensor_release(w);
        return st;
    }
    out[0] = w;
    return DLA_OK;
}

static dla_status filter_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const conv_geom *g = n->attrs;
    dla_tensor *gw = gout[0];
    if (n->need[0])
        gin[0] = apply2(&data_op, g, n->in[1], gw);
    if (n->need[1])
        gin[1] = apply2(&conv_op, g, n->in[0], gw);
    return DLA_OK;
}

static int takes_x_w_and_bias(const void *attrs, int nin)
{
    (void)attrs;
    return nin == 2 || nin == 3;
}

static int in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

/* The geometry on its own: positions inside the dims, strings that end,
 * channels, groups and filters that agree, so the kernel's loops stay in
 * the tensors the geometry describes. */
static int geom_ok(const conv_geom *g)
{
    const int64_t big = (int64_t)1 << 31;
    int ok = in_range(g->nsp, 1, 3) && in_range(g->ndims, g->nsp + 1, DLA_MAX_DIMS) &&
             in_range(g->wndims, 0, DLA_MAX_DIMS) && in_range(g->cpos, 0, g->ndims - 1) &&
             in_range(g->bpos, -1, g->ndims - 1) && dla__attr_str_ok(g->labels, sizeof g->labels) &&
             dla__attr_str_ok(g->wformat, sizeof g->wformat) && in_range(g->G, 1, big) &&
             in_range(g->C, 1, big) && in_range(g->F, 1, big);
    ok = ok && g->C % g->G == 0 && g->F % g->G == 0 && g->xdims[g->cpos] == g->C &&
         g->ydims[g->cpos] == g->F;
    for (int i = 0; ok && i < g->nsp; i++)
        ok = in_range(g->sp[i], 0, g->ndims - 1) && g->sp[i] != g->cpos && in_range(g->fs[i], 1, big) &&
             in_range(g->st[i], 1, big) && in_range(g->dl[i], 1, big) && in_range(g->pb[i], 0, big);
    for (int i = 0; ok && i < g->ndims; i++)
        ok = in_range(g->xdims[i], 0, big) && in_range(g->ydims[i], 0, big);
    if (!ok)
        return 0;
    int64_t w[DLA_MAX_DIMS];
    for (int i = 0; i < g->nsp; i++)
        w[i] = g->fs[i];
    w[g->nsp] = g->C / g->G, w[g->nsp + 1] = g->F / g->G, w[g->nsp + 2] = g->G;
    dla__vshape ws = {.ndims = g->wndims};
    memcpy(ws.dims, g->wdims, sizeof ws.dims);
    return dla__shape_fits(&ws, g->nsp + 3, w);
}

/* The operands' recorded shapes against the geometry, in the roles of
 * launch(): a and b are what op reads (x, w / y, w / x, y), r what it
 * makes. */
static dla_status geom_infer(const char *op, const conv_geom *g, dla_kernel which, int nin,
                             const dla__vshape *in, dla__vshape *out)
{
    if (!geom_ok(g))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: its geometry (%d convolved of %d dims, "
                         "C %lld, F %lld, G %lld) does not hold together", op, g->nsp, g->ndims,
                         (long long)g->C, (long long)g->F, (long long)g->G);
    const int64_t *a = which == DLA_KERNEL_CONV_BACKWARD_DATA ? g->ydims : g->xdims;
    const int64_t *b = which == DLA_KERNEL_CONV_BACKWARD_FILTER ? g->ydims : g->wdims;
    int bnd = which == DLA_KERNEL_CONV_BACKWARD_FILTER ? g->ndims : g->wndims;
    char ad[DLA__DIMS_BUF], bd[DLA__DIMS_BUF];
    if (!dla__shape_fits(&in[0], g->ndims, a) || !dla__shape_fits(&in[1], bnd, b))
        return dla__fail(DLA_ERR_SHAPE, "%s: arguments (%s) and (%s) are not the ones its "
                         "geometry was made for", op,
                         dla__dims_str(ad, sizeof ad, in[0].ndims, in[0].dims),
                         dla__dims_str(bd, sizeof bd, in[1].ndims, in[1].dims));
    if (nin > 2) {
        int64_t n = dla__numel(in[2].ndims, in[2].dims);
        if (n != 1 && n != g->F)
            return dla__fail(DLA_ERR_SHAPE, "%s: argument bias (%s) has neither 1 nor F (%lld) "
                             "elements", op, dla__dims_str(ad, sizeof ad, in[2].ndims, in[2].dims),
                             (long long)g->F);
    }
    out[0].dtype = in[0].dtype;
    snprintf(out[0].format, sizeof out[0].format, "%s",
             which == DLA_KERNEL_CONV_BACKWARD_FILTER ? g->wformat : space_format(g));
    out[0].ndims = which == DLA_KERNEL_CONV_BACKWARD_FILTER ? g->wndims : g->ndims;
    memcpy(out[0].dims, which == DLA_KERNEL_CONV_FORWARD ? g->ydims
                        : which == DLA_KERNEL_CONV_BACKWARD_DATA ? g->xdims
                                                                 : g->wdims,
           sizeof out[0].dims);
    return DLA_OK;
}

static dla_status conv_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    return geom_infer("dla_conv", attrs, DLA_KERNEL_CONV_FORWARD, nin, in, out);
}
static dla_status data_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    return geom_infer("dla_transpconv", attrs, DLA_KERNEL_CONV_BACKWARD_DATA, nin, in, out);
}
static dla_status filter_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    return geom_infer("dla_conv filter gradient", attrs, DLA_KERNEL_CONV_BACKWARD_FILTER, nin, in,
                      out);
}

static const dla__op conv_op = {.name = "dla_conv", .nin = -1, .nout = 1, .takes = takes_x_w_and_bias,
                                .forward = conv_forward, .backward = conv_backward, .infer = conv_infer};
DLA__OP_REGISTER(conv_op, sizeof(conv_geom));
static const dla__op data_op = {.name = "dla_transpconv", .nin = 2, .nout = 1,
                                .forward = data_forward, .backward = data_backward, .infer = data_infer};
DLA__OP_REGISTER(data_op, sizeof(conv_geom));
static const dla__op filter_op = {.name = "dla_conv filter gradient", .nin = 2, .nout = 1,
                                  .forward = filter_forward, .backward = filter_backward, .infer = filter_infer};
DLA__OP_REGISTER(filter_op, sizeof(conv_geom));

/* ------------------------------------------------------------ validation */

static int is_float(dla_dtype d)
{
    return d == DLA_F32 || d == DLA_F64;
}

/* "28x28x1x128 SSCB" (or "... unformatted") of t into buf. */
static const char *describe(const dla_tensor *t, const char *labels, char *buf, size_t size)
{
    char d[DLA__DIMS_BUF];
    snprintf(buf, size, "%s %s", dla__tensor_dims_str(t, d, sizeof d),
             t->format[0] ? t->format : labels && labels[0] ? labels : "unformatted");
    return buf;
}

/* Checks an operand; NULL when fine, else the error tensor to return. */
static dla_tensor *check_operand(const char *op, const char *name, dla_tensor *t, dla_tensor *x)
{
    if (!t || t->status != DLA_OK)
        return dla__pass_arg(op, name, t);
    if (!is_float(t->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument %s: %s; convolution needs single or double",
                          op, name, dla_dtype_name(t->dtype));
    if (x && t->dtype != x->dtype)
        return dla__error(DLA_ERR_DTYPE, "%s: argument %s is %s but x is %s", op, name,
                          dla_dtype_name(t->dtype), dla_dtype_name(x->dtype));
    if (x && t->storage->device != x->storage->device)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument %s is on %s but x is on %s; move one with "
                          "dla_tensor_to_device",
                          op, name, t->storage->device->name, x->storage->device->name);
    return NULL;
}

/* Fills the labels and dim positions of g from x and the options. */
static dla_tensor *read_labels(const char *op, dla_tensor *x, const char *data_format,
                               conv_geom *g)
{
    char xd[DLA__DIMS_BUF + 16];
    const int has_df = data_format && data_format[0];
    const char *fmt = x->format[0] ? x->format : data_format;
    if (x->format[0] && has_df && strcmp(x->format, data_format) != 0)
        return dla__error(DLA_ERR_FORMAT,
                          "%s: argument x (%s) is formatted; opts->data_format \"%s\" is for "
                          "unformatted x only",
                          op, describe(x, NULL, xd, sizeof xd), data_format);
    if (!fmt || !fmt[0])
        return dla__error(DLA_ERR_FORMAT,
                          "%s: argument x (%s): label its dims with a format or "
                          "opts->data_format (\"SSCB\")",
                          op, describe(x, NULL, xd, sizeof xd));
    const size_t L = strlen(fmt);
    /* Dims of 1 past the labels are trailing singletons, as in MATLAB: an
     * unformatted 3x3x1x1x1 with data_format "SSCB" was refused, saying
     * only "data_format "SSCB" has 4 labels". */
    int past = 0;
    for (int i = (int)L; i < x->ndims; i++)
        past |= x->dims[i] != 1;
    if (L > DLA_MAX_DIMS || past)
        return dla__error(DLA_ERR_FORMAT, "%s: argument x (%s): data_format \"%s\" has %zu labels "
                          "for its %d dims (dims past the labels must be 1)",
                          op, describe(x, NULL, xd, sizeof xd), fmt, L, x->ndims);
    int ns = 0, nc = 0, nb = 0, nt = 0, tpos = -1;
    g->bpos = -1;
    for (size_t i = 0; i < L; i++) {
        switch (fmt[i]) {
        case 'S':
            if (ns < 3)
                g->sp[ns] = (int)i;
            ns++;
            break;
        case 'C': nc++, g->cpos = (int)i; break;
        case 'B': nb++, g->bpos = (int)i; break;
        case 'T': nt++, tpos = (int)i; break;
        default:
            return dla__error(DLA_ERR_FORMAT,
                              "%s: argument x (%s): label '%c'; convolution takes S (or T), C "
                              "and B dims",
                              op, describe(x, fmt, xd, sizeof xd), fmt[i]);
        }
    }
    if (nc != 1 || nb > 1 || nt > 1 || ns > 3 || (ns == 0 && nt == 0) || (ns > 0 && nt > 0))
        return dla__error(DLA_ERR_FORMAT,
                          "%s: argument x (%s): needs one C dim, at most one B dim and 1-3 S "
                          "dims (or one T dim without S)",
                          op, describe(x, fmt, xd, sizeof xd));
    if (ns == 0)
        g->sp[ns++] = tpos;
    g->nsp = ns;
    g->ndims = (int)L;
    g->formatted = x->format[0] != 0;
    memcpy(g->labels, fmt, L + 1);
    return NULL;
}

/* The shared front of dla_conv and dla_transpconv: checks, the geometry
 * and the op. */
static dla_tensor *convolve(const char *op, int transposed, dla_tensor *x, dla_tensor *w,
                            dla_tensor *b, const dla_conv_options *opts)
{
    dla_tensor *e;
    if ((e = check_operand(op, "x", x, NULL)) || (e = check_operand(op, "weights", w, x)) ||
        (b && (e = check_operand(op, "bias", b, x))))
        return e;
    static const dla_conv_options defaults;
    if (!opts)
        opts = &defaults;
    conv_geom g;
    memset(&g, 0, sizeof g);
    if ((e = read_labels(op, x, opts->data_format, &g)))
        return e;
    const int n = g.nsp;
    char xd[DLA__DIMS_BUF + 16], wd[DLA__DIMS_BUF];
    describe(x, g.labels, xd, sizeof xd);
    dla__tensor_dims_str(w, wd, sizeof wd);

    /* Filters: fs..., then (conv) C/G, F/G, G or (transposed) F/G, C/G, G. */
    for (int i = n + 3; i < w->ndims; i++)
        if (w->dims[i] != 1)
            return dla__error(DLA_ERR_SHAPE,
                              "%s: argument weights (%s): %d dims for %d convolved dims; expected "
                              "filterSize x %s x G",
                              op, wd, w->ndims, n,
                              transposed ? "filters/G x channels/G" : "channels/G x filters/G");
    const int64_t per_in = tdim(w, transposed ? n + 1 : n), per_out = tdim(w, transposed ? n : n + 1);
    g.G = tdim(w, n + 2);
    const int64_t xc = tdim(x, g.cpos);
    if (per_in * g.G != xc || g.G < 1)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: argument weights: %s expects %lld channels per group x %lld "
                          "group%s = %lld input channels, but x (%s) has %lld",
                          op, wd, (long long)per_in, (long long)g.G, g.G == 1 ? "" : "s",
                          (long long)(per_in * g.G), xd, (long long)xc);
    if (per_out < 1)
        return dla__error(DLA_ERR_SHAPE, "%s: argument weights (%s): no filters", op, wd);
    /* Refused here, as no filters is: the kernels refused it in their own
     * words ("cpu conv_forward: arguments batch=2 in_channels=0
     * out_channels=2 groups=1: channels must be positive multiples of
     * groups"), naming neither argument. */
    if (xc < 1)
        return dla__error(DLA_ERR_SHAPE, "%s: argument x (%s): no channels (a C dim of 0)", op,
                          xd);
    /* In the geometry, x-space is dla_conv's input, or dla_transpconv's output. */
    g.C = transposed ? per_out * g.G : xc;
    g.F = transposed ? xc : per_out * g.G;
    const int64_t fout = per_out * g.G;
    if (b && dla_tensor_numel(b) != fout && dla_tensor_numel(b) != 1) {
        char bd[DLA__DIMS_BUF];
        return dla__error(DLA_ERR_SHAPE,
                          "%s: argument bias (%s): expected %lld elements (one per filter) or one",
                          op, dla__tensor_dims_str(b, bd, sizeof bd), (long long)fout);
    }

    int same = 0;
    if (opts->padding_mode) {
        if (strcasecmp(opts->padding_mode, "same") != 0)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: opts->padding_mode \"%s\": expected \"same\" or NULL", op,
                              opts->padding_mode);
        same = 1;
    }
    memcpy(g.xdims, x->dims, sizeof g.xdims);
    for (int i = x->ndims; i < DLA_MAX_DIMS; i++)
        g.xdims[i] = 1;
    memcpy(g.ydims, g.xdims, sizeof g.ydims);
    for (int i = 0; i < n; i++) {
        const int64_t fs = tdim(w, i), s = opts->stride[i] ? opts->stride[i] : 1,
                      d = opts->dilation[i] ? opts->dilation[i] : 1;
        int64_t p0 = opts->padding[0][i], p1 = opts->padding[1][i];
        /* At most 2^31-1 each, as the kernels take them: a stride of 2^31
         * was refused by the plugin in words its value met ("stride ...
         * must be >= 1"), and a dilation near 2^63 wrapped the span below
         * to a negative size. */
        const int64_t big = INT32_MAX;
        if (fs < 1 || s < 1 || d < 1 || p0 < 0 || p1 < 0 || (same && (p0 || p1)) || fs > big ||
            s > big || d > big || p0 > big || p1 > big)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: spatial dim %d: filter %lld, stride %lld, dilation %lld, %s "
                              "%lld and %lld: filter, stride and dilation must be 1 to 2^31-1 "
                              "and the %s 0 to 2^31-1 (zero with padding_mode \"same\")",
                              op, i + 1, (long long)fs, (long long)s, (long long)d,
                              transposed ? "cropping" : "padding", (long long)p0, (long long)p1,
                              transposed ? "cropping" : "padding");
        const int64_t span = d * (fs - 1) + 1, in = g.xdims[g.sp[i]];
        if (in > big)
            return dla__error(DLA_ERR_SHAPE,
                              "%s: argument x (%s): spatial dim %d has %lld elements; convolution "
                              "takes at most 2^31-1 along a dim",
                              op, xd, i + 1, (long long)in);
        int64_t out;
        if (!transposed) {
            if (same) {
                const int64_t want = (in + s - 1) / s, total = (want - 1) * s + span - in;
                p0 = total > 0 ? total / 2 : 0;
                p1 = total > 0 ? total - p0 : 0;
            }
            const int64_t room = in + p0 + p1 - span;
            if (room < 0)
                return dla__error(DLA_ERR_SHAPE,
                                  "%s: argument weights (%s): spatial dim %d: a filter spanning "
                                  "%lld elements does not fit in %lld + %lld + %lld of padded x "
                                  "(%s)",
                                  op, wd, i + 1, (long long)span, (long long)p0, (long long)in,
                                  (long long)p1, xd);
            out = room / s + 1;
            g.pb[i] = p0;
        } else {
            if (same) {
                const int64_t total = span - s; /* output = in * stride */
                p0 = total > 0 ? total / 2 : 0;
                p1 = total - p0;
            }
            out = (in - 1) * s + span - p0 - p1;
            if (out < 1 && in > 0)
                return dla__error(DLA_ERR_SHAPE,
                                  "%s: spatial dim %d: cropping %lld + %lld leaves no output of "
                                  "the %lld elements that %lld inputs give (%s)",
                                  op, i + 1, (long long)p0, (long long)p1,
                                  (long long)((in - 1) * s + span), (long long)in, xd);
            if (in == 0)
                out = 0;
            g.pb[i] = p0;
        }
        if (out > big)
            return dla__error(DLA_ERR_SHAPE,
                              "%s: spatial dim %d: %lld elements of x (%s) give %lld; convolution "
                              "takes at most 2^31-1 along a dim",
                              op, i + 1, (long long)in, xd, (long long)out);
        g.fs[i] = fs, g.st[i] = s, g.dl[i] = d;
        if (transposed) {
            g.ydims[g.sp[i]] = in;
            g.xdims[g.sp[i]] = out;
        } else {
            g.ydims[g.sp[i]] = out;
        }
    }
    g.xdims[g.cpos] = g.C;
    g.ydims[g.cpos] = g.F;
    g.wndims = w->ndims;
    memcpy(g.wdims, w->dims, sizeof g.wdims);
    memcpy(g.wformat, w->format, sizeof g.wformat);

    if (!transposed) {
        /* The kernel reads a bias along one stride: a bias holding its F
         * values in several dims (2x5 for 10 filters) goes in as a vector
         * of them in column-major order, a view where its layout allows. */
        int spread = 0;
        for (int i = 0; b && i < b->ndims; i++)
            spread += b->dims[i] > 1;
        if (spread > 1)
            b = dla_reshape(b, "", 1, (int64_t[]){dla_tensor_numel(b)});
        return dla__apply(&conv_op, &g, sizeof g, b ? 3 : 2, (dla_tensor *[]){x, w, b});
    }
    if (!b)
        return apply2(&data_op, &g, x, w);
    /* The bias along the output's "C" dim, broadcast by dla_add; the
     * temporaries die with this scope, the result moves to the caller's. */
    int64_t bdims[DLA_MAX_DIMS];
    for (int i = 0; i < g.ndims; i++)
        bdims[i] = i == g.cpos ? dla_tensor_numel(b) : 1;
    dla_scope_begin();
    dla_tensor *z = dla_add(apply2(&data_op, &g, x, w), dla_reshape(b, "", g.ndims, bdims));
    dla_keep(z);
    dla_scope_end();
    return z;
}

DLA_API dla_tensor *dla_conv(dla_tensor *x, dla_tensor *weights, dla_tensor *bias,
                             const dla_conv_options *opts)
{
    return convolve("dla_conv", 0, x, weights, bias, opts);
}

DLA_API dla_tensor *dla_transpconv(dla_tensor *x, dla_tensor *weights, dla_tensor *bias,
                                   const dla_conv_options *opts)
{
    return convolve("dla_transpconv", 1, x, weights, bias, opts);
}

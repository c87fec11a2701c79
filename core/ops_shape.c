/*
 * ops_shape.c - concatenation, padding and indexing along one dim.
 *
 * cat and pad copy their inputs into one new buffer with strided copies
 * (no per-element index math), and their gradients are slices of the
 * result's gradient: views, never copies. dla_index gathers along a dim with
 * an int32 position list; its gradient scatter-adds into a zeroed buffer,
 * an op of its own (internal) whose gradient is dla_index again, so the
 * rules compose for higher derivatives.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

/* x as a view with nd dims (extra dims of size 1), for kernels that want
 * equal ndims. */
static void view_nd(const dla_tensor *x, int nd, dla_view *v)
{
    dla__view_of(x, v);
    for (int d = x->ndims; d < nd; d++) {
        v->dims[d] = 1;
        v->strides[d] = 0;
    }
    v->ndims = nd;
}

/* g reshaped to like's dims when a trailing singleton is all that differs
 * (the gradient of an input with fewer dims than the result). */
static dla_tensor *like_dims(dla_tensor *g, const dla_tensor *like)
{
    if (dla_tensor_ndims(g) == like->ndims)
        return g;
    return dla_reshape(g, like->format, like->ndims, like->dims);
}

/* -------------------------------------------------------------------- cat */

typedef struct cat_attrs {
    int dim; /* 0-based */
} cat_attrs;

static dla_status cat_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                              dla_tensor **saved)
{
    (void)saved;
    const cat_attrs *a = attrs;
    int nd = a->dim + 1;
    for (int i = 0; i < nin; i++)
        if (in[i]->ndims > nd)
            nd = in[i]->ndims;
    int64_t dims[DLA_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = d < in[0]->ndims ? in[0]->dims[d] : 1;
    dims[a->dim] = 0;
    for (int i = 0; i < nin; i++)
        dims[a->dim] += a->dim < in[i]->ndims ? in[i]->dims[a->dim] : 1;
    dla_device *dev = in[0]->storage->device;
    dla_tensor *z = dla__tensor_alloc("dla_cat", dev, in[0]->dtype, in[0]->format, nd, dims);
    if (!z)
        return dla_last_status();
    int64_t at = 0;
    for (int i = 0; i < nin; i++) {
        dla_view zv, xv;
        view_nd(in[i], nd, &xv);
        int64_t len = xv.dims[a->dim];
        dla__view_of(z, &zv);
        zv.offset += at * z->strides[a->dim];
        zv.dims[a->dim] = len;
        at += len;
        if (dla__numel(nd, xv.dims) == 0)
            continue;
        dla_status st = dla__k_copy(dev, &zv, &xv);
        if (st != DLA_OK) {
            dla_tensor_release(z);
            return st;
        }
    }
    out[0] = z;
    return DLA_OK;
}

static dla_status cat_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const cat_attrs *a = node->attrs;
    int64_t at = 0;
    for (int i = 0; i < node->nin; i++) {
        const dla_tensor *x = node->in[i];
        int64_t len = a->dim < x->ndims ? x->dims[a->dim] : 1;
        if (node->need[i])
            gin[i] = like_dims(dla_slice(gout[0], a->dim + 1, at, 1, at + len), x);
        at += len;
    }
    return DLA_OK;
}

/* cat_forward indexes dims with its dim and copies every input into a
 * result of in[0]'s other dims: they must agree, as dla_cat checks. */
static dla_status cat_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    const cat_attrs *a = attrs;
    if (a->dim < 0 || a->dim >= DLA_MAX_DIMS)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_cat: attribute dim is %lld",
                         (long long)a->dim + 1);
    out[0] = in[0];
    out[0].ndims = a->dim + 1 > in[0].ndims ? a->dim + 1 : in[0].ndims;
    for (int i = 1; i < nin; i++)
        if (in[i].ndims > out[0].ndims)
            out[0].ndims = in[i].ndims;
    for (int d = 0; d < out[0].ndims; d++)
        out[0].dims[d] = d < in[0].ndims ? in[0].dims[d] : 1;
    out[0].dims[a->dim] = 0;
    char ad[DLA__DIMS_BUF], bd[DLA__DIMS_BUF];
    for (int i = 0; i < nin; i++) {
        const int64_t len = a->dim < in[i].ndims ? in[i].dims[a->dim] : 1;
        if (len > INT64_MAX - out[0].dims[a->dim])
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_cat: argument %d (%s) makes attribute "
                             "dim %d a size past 2^63", i + 1,
                             dla__dims_str(bd, sizeof bd, in[i].ndims, in[i].dims), a->dim + 1);
        for (int d = 0; d < out[0].ndims; d++) {
            int64_t x = d < in[i].ndims ? in[i].dims[d] : 1;
            if (d != a->dim && x != out[0].dims[d])
                return dla__fail(DLA_ERR_SHAPE, "dla_cat: arguments 1 (%s) and %d (%s) differ "
                                 "beyond attribute dim %d",
                                 dla__dims_str(ad, sizeof ad, in[0].ndims, in[0].dims), i + 1,
                                 dla__dims_str(bd, sizeof bd, in[i].ndims, in[i].dims), a->dim + 1);
        }
        out[0].dims[a->dim] += len;
    }
    return DLA_OK;
}

static const dla__op cat_op = {.name = "dla_cat", .nin = -1, .nout = 1, .forward = cat_forward,
                               .backward = cat_backward, .infer = cat_infer};
DLA__OP_REGISTER(cat_op, sizeof(cat_attrs));

/* MATLAB's [], which concatenation skips: 0x0 and unformatted (a
 * formatted tensor's dims have labels, and an empty one of them is not
 * skipped). */
static int is_matlab_empty(const dla_tensor *t)
{
    return !t->format[0] && t->ndims == 2 && t->dims[0] == 0 && t->dims[1] == 0;
}

/* dla_cat of the m tensors that are not [], checked already. */
static dla_tensor *cat_kept(int dim, int n, dla_tensor *const *tensors, int m)
{
    dla_tensor **kept = dla__malloc(sizeof *kept * (size_t)m);
    if (!kept)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "dla_cat: no memory for %d tensors", m);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!is_matlab_empty(tensors[i]))
            kept[k++] = tensors[i];
    dla_tensor *r = dla_cat(dim, m, kept);
    dla__free(kept);
    return r;
}

DLA_API dla_tensor *dla_cat(int dim, int n, dla_tensor *const *tensors)
{
    static const char op[] = "dla_cat";
    if (n < 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument n: %d tensors; at least 1 is needed",
                          op, n);
    /* Named apart: a NULL array read "argument n: 2 tensors; at least 1
     * is needed". */
    if (!tensors)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument tensors is NULL, for n %d", op,
                          n);
    for (int i = 0; i < n; i++)
        if (!tensors[i] || tensors[i]->status != DLA_OK) {
            char arg[32];
            snprintf(arg, sizeof arg, "tensors[%d]", i);
            return dla__pass_arg(op, arg, tensors[i]);
        }
    /* MATLAB's concatenation skips [] (an unformatted 0x0) among other
     * arrays: cat(3, [], A) is A, which starts a loop growing its result
     * (Y = []; Y = cat(3, Y, y)). Here it was refused, "dim 1 differs".
     * The others are checked against the first of them, f, and joined. */
    int empties = 0;
    for (int i = 0; i < n; i++)
        empties += is_matlab_empty(tensors[i]);
    const int skip = empties > 0 && empties < n;
    int f = 0;
    while (skip && is_matlab_empty(tensors[f]))
        f++;
    const dla_tensor *t0 = tensors[f];
    if (dim < 1 || dim > DLA_MAX_DIMS)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dim: %d is outside 1..%d", op, dim,
                          DLA_MAX_DIMS);
    char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
    if (t0->format[0] && dim > t0->ndims)
        return dla__error(DLA_ERR_FORMAT,
                          "%s: argument dim: %d is past the labels of tensors[%d] (%s \"%s\"); a "
                          "formatted result needs a label there",
                          op, dim, f, dla__tensor_dims_str(t0, a, sizeof a), t0->format);
    /* The joined dim must stay a size: inputs that are empty elsewhere
     * (0 x 2^62) hold no elements, so their sizes along dim are bounded
     * by nothing, and their sum wrapped to a negative dim (0x-2). */
    int64_t along = dim <= t0->ndims ? t0->dims[dim - 1] : 1;
    for (int i = f + 1; i < n; i++) {
        const dla_tensor *t = tensors[i];
        if (skip && is_matlab_empty(t))
            continue;
        const int64_t len = dim <= t->ndims ? t->dims[dim - 1] : 1;
        if (len > INT64_MAX - along)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument tensors[%d] (%s): joined along dim %d to the %lld "
                              "elements before it, it makes a size past 2^63",
                              op, i, dla__tensor_dims_str(t, a, sizeof a), dim, (long long)along);
        along += len;
        if (t->dtype != t0->dtype)
            return dla__error(DLA_ERR_DTYPE, "%s: argument tensors[%d]: %s, but tensors[%d] is %s",
                              op, i, dla_dtype_name(t->dtype), f, dla_dtype_name(t0->dtype));
        if (t->storage->device != t0->storage->device)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument tensors[%d] is on %s, but tensors[%d] is on %s", op, i,
                              t->storage->device->name, f, t0->storage->device->name);
        if (strcmp(t->format, t0->format) != 0)
            return dla__error(DLA_ERR_FORMAT,
                              "%s: argument tensors[%d]: format \"%s\" differs from tensors[%d]'s "
                              "\"%s\"",
                              op, i, t->format, f, t0->format);
        int nd = t->ndims > t0->ndims ? t->ndims : t0->ndims;
        for (int d = 0; d < nd; d++) {
            int64_t x = d < t->ndims ? t->dims[d] : 1, y = d < t0->ndims ? t0->dims[d] : 1;
            if (d != dim - 1 && x != y)
                return dla__error(DLA_ERR_SHAPE,
                                  "%s: argument tensors[%d]: %s against tensors[%d]'s %s: dim %d "
                                  "differs (only dim %d may)",
                                  op, i, dla__tensor_dims_str(t, a, sizeof a), f,
                                  dla__tensor_dims_str(t0, b, sizeof b), d + 1, dim);
        }
    }
    if (skip)
        return cat_kept(dim, n, tensors, n - empties);
    cat_attrs at = {dim - 1};
    if (n <= DLA__OP_MAX_IO)
        return dla__apply(&cat_op, &at, sizeof at, n, tensors);
    /* A node holds at most DLA__OP_MAX_IO inputs: join in a tree, groups
     * of them, then groups of those, so each element is copied about
     * log8(n) times. A chain, each run starting from the result so far,
     * copied the growing front again and again: n^2/14 slices in all, an
     * LSTM's 99 steps each copied 7 times on average, 1000 steps 71. */
    dla_tensor **level = dla__malloc(sizeof *level * (size_t)n);
    if (!level)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: no memory for %d tensors", op, n);
    memcpy(level, tensors, sizeof *level * (size_t)n);
    dla_scope_begin();
    for (int m = n; m > 1;) {
        int k = 0;
        /* level[k] is written after level[i..] is read, and k <= i. */
        for (int i = 0; i < m; i += DLA__OP_MAX_IO) {
            int g = m - i < DLA__OP_MAX_IO ? m - i : DLA__OP_MAX_IO;
            level[k++] = g == 1 ? level[i] : dla__apply(&cat_op, &at, sizeof at, g, level + i);
        }
        m = k;
    }
    dla_tensor *acc = dla_tensor_retain(level[0]);
    dla_scope_end();
    dla__free(level);
    return dla__return(acc);
}

/* -------------------------------------------------------------------- pad */

typedef struct pad_attrs {
    int nd;
    int64_t before[DLA_MAX_DIMS], after[DLA_MAX_DIMS];
    double value;
} pad_attrs;

/* The padding a against x: ndims within dims, labels for every padded
 * dim of a formatted x, no negative padding, sizes within int64 (forward
 * makes and fills a result of x's dims plus the padding). */
static dla_status pad_check(const dla_tensor *x, const pad_attrs *a)
{
    static const char op[] = "dla_pad";
    char buf[DLA__DIMS_BUF];
    if (a->nd < 0 || a->nd > DLA_MAX_DIMS)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument ndims: %d is outside 0..%d", op,
                         a->nd, DLA_MAX_DIMS);
    if (x->format[0] && a->nd > x->ndims)
        return dla__fail(DLA_ERR_FORMAT,
                         "%s: argument ndims: %d dims to pad, but x (%s \"%s\") has labels for %d",
                         op, a->nd, dla__tensor_dims_str(x, buf, sizeof buf), x->format, x->ndims);
    for (int d = 0; d < a->nd; d++) {
        if (a->before[d] < 0 || a->after[d] < 0)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                             "%s: dim %d of x (%s): padding %lld before and %lld after; padding "
                             "cannot be negative",
                             op, d + 1, dla__tensor_dims_str(x, buf, sizeof buf),
                             (long long)a->before[d], (long long)a->after[d]);
        /* The padded size must be a size (the sum wrapped past INT64_MAX). */
        const int64_t n = d < x->ndims ? x->dims[d] : 1;
        if (a->before[d] > INT64_MAX - n || a->after[d] > INT64_MAX - n - a->before[d])
            return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                             "%s: dim %d of x (%s): padding %lld before and %lld after makes a "
                             "size past 2^63",
                             op, d + 1, dla__tensor_dims_str(x, buf, sizeof buf),
                             (long long)a->before[d], (long long)a->after[d]);
    }
    return DLA_OK;
}

/* The padded dims (nd of them). */
static int pad_dims(const dla_tensor *x, const pad_attrs *a, int64_t *dims)
{
    int nd = a->nd > x->ndims ? a->nd : x->ndims;
    for (int d = 0; d < nd; d++)
        dims[d] = (d < x->ndims ? x->dims[d] : 1) + (d < a->nd ? a->before[d] + a->after[d] : 0);
    return nd;
}

static dla_status pad_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                              dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const pad_attrs *a = attrs;
    dla_tensor *x = in[0];
    int64_t dims[DLA_MAX_DIMS];
    int nd = pad_dims(x, a, dims);
    dla_device *dev = x->storage->device;
    dla_tensor *z = dla__tensor_alloc("dla_pad", dev, x->dtype, x->format, nd, dims);
    if (!z)
        return dla_last_status();
    dla_view zv, xv;
    dla__view_of(z, &zv);
    dla_status st = dla__k_fill(dev, &zv, a->value);
    view_nd(x, nd, &xv);
    for (int d = 0; d < nd; d++) {
        zv.offset += (d < a->nd ? a->before[d] : 0) * zv.strides[d];
        zv.dims[d] = xv.dims[d];
    }
    if (st == DLA_OK && dla__numel(nd, xv.dims) > 0)
        st = dla__k_copy(dev, &zv, &xv);
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

static dla_status pad_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const pad_attrs *a = node->attrs;
    const dla_tensor *x = node->in[0];
    dla_tensor *g = gout[0];
    for (int d = 0; d < a->nd; d++)
        if (a->before[d] || a->after[d]) {
            int64_t len = d < x->ndims ? x->dims[d] : 1;
            g = dla_slice(g, d + 1, a->before[d], 1, a->before[d] + len);
        }
    gin[0] = like_dims(g, x);
    return DLA_OK;
}

/* dla_pad's checks on the recorded x; the padded dims, x's format. */
static dla_status pad_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_tensor x;
    dla__tensor_of_shape(&in[0], &x);
    dla_status st = pad_check(&x, attrs);
    if (st != DLA_OK)
        return st;
    out[0] = in[0];
    out[0].ndims = pad_dims(&x, attrs, out[0].dims);
    return DLA_OK;
}

static const dla__op pad_op = {.name = "dla_pad", .nin = 1, .nout = 1, .forward = pad_forward,
                               .backward = pad_backward, .infer = pad_infer};
DLA__OP_REGISTER(pad_op, sizeof(pad_attrs));

DLA_API dla_tensor *dla_pad(dla_tensor *x, int ndims, const int64_t *before, const int64_t *after,
                            double value)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg("dla_pad", "x", x);
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    pad_attrs a;
    memset(&a, 0, sizeof a);
    a.nd = ndims;
    a.value = value;
    for (int d = 0; d < ndims && d < DLA_MAX_DIMS; d++) {
        a.before[d] = before ? before[d] : 0;
        a.after[d] = after ? after[d] : 0;
    }
    if (pad_check(x, &a) != DLA_OK)
        return dla__return(dla__error_tensor());
    return dla__apply(&pad_op, &a, sizeof a, 1, &x);
}

/* ------------------------------------------------------------------ index */

typedef struct index_attrs {
    int dim; /* 0-based */
} index_attrs;

/* t itself (retained) when dense, else a dense copy: a +1 reference of
 * ours, NULL with the failure set. */
static dla_tensor *dense_of(dla_tensor *t)
{
    if (dla__is_dense(t))
        return dla_tensor_retain(t);
    dla_tensor *d = dla__tensor_alloc("dla_index", t->storage->device, t->dtype, "", t->ndims,
                                      t->dims);
    if (!d)
        return NULL;
    dla_view y, x;
    dla__view_of(d, &y);
    dla__view_of(t, &x);
    if (dla__k_copy(d->storage->device, &y, &x) != DLA_OK) {
        dla_tensor_release(d);
        return NULL;
    }
    return d;
}

/* The position list as the kernels want it: a dense int32 vector view. */
static void index_view(const dla_tensor *index, dla_view *v)
{
    dla__view_of(index, v);
    v->ndims = 1;
    v->dims[0] = dla__numel(index->ndims, index->dims);
    v->strides[0] = 1;
}

/* dim (1-based) must be one of x's and index int32 positions on x's
 * device: forward gathers along x's dim with them. */
static dla_status index_check(const dla_tensor *x, int64_t dim, const dla_tensor *index)
{
    static const char op[] = "dla_index";
    char buf[DLA__DIMS_BUF];
    if (dim < 1 || dim > x->ndims)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument dim: %lld is outside 1..%d of x "
                         "(%s)", op, (long long)dim, x->ndims,
                         dla__tensor_dims_str(x, buf, sizeof buf));
    if (index->dtype != DLA_I32)
        return dla__fail(DLA_ERR_DTYPE,
                         "%s: argument index: %s; positions are int32 (0-based), convert with "
                         "dla_cast",
                         op, dla_dtype_name(index->dtype));
    if (index->storage->device != x->storage->device)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: argument index is on %s, but x is on %s; move it with "
                         "dla_tensor_to_device",
                         op, index->storage->device->name, x->storage->device->name);
    return DLA_OK;
}

/* The gathered result: x's shape with the index's count along dim
 * (0-based). */
static void index_shape(const dla__vshape *x, int dim, const dla__vshape *index, dla__vshape *out)
{
    *out = *x;
    out->dims[dim] = dla__numel(index->ndims, index->dims);
}

/* The positions of a gather with an empty result (x empty along another
 * dim): the kernel, which checks them, is not launched for no elements,
 * and an index of 5 into 3 rows of a 3 x 0 x passed, where MATLAB's
 * x(5, :) fails. Read on the host here; while a trace records, this is
 * the recording call's check only (a replay runs no op code). */
static dla_status index_check_on_host(const dla_tensor *x, int dim, dla_tensor *idx, int64_t npos)
{
    int32_t *v = dla__malloc(sizeof *v * (size_t)npos);
    if (!v)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_index: no memory to check %lld positions",
                         (long long)npos);
    dla_status st = dla_tensor_to_host(idx, v, sizeof *v * (size_t)npos);
    for (int64_t i = 0; st == DLA_OK && i < npos; i++)
        if (v[i] < 0 || v[i] >= x->dims[dim]) {
            char buf[DLA__DIMS_BUF];
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_index: argument index: element %lld is "
                           "%d, outside 0..%lld (dim %d of x, %s)", (long long)i, (int)v[i],
                           (long long)x->dims[dim] - 1, dim + 1,
                           dla__tensor_dims_str(x, buf, sizeof buf));
        }
    dla__free(v);
    return st;
}

static dla_status index_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const index_attrs *a = attrs;
    dla_tensor *x = in[0];
    dla_tensor *idx = dense_of(in[1]);
    if (!idx)
        return dla_last_status();
    int64_t dims[DLA_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    dims[a->dim] = dla__numel(idx->ndims, idx->dims);
    dla_device *dev = x->storage->device;
    dla_tensor *z = dla__tensor_alloc("dla_index", dev, x->dtype, x->format, x->ndims, dims);
    dla_status st = z ? DLA_OK : dla_last_status();
    const int64_t npos = dla__numel(idx->ndims, idx->dims);
    if (st == DLA_OK && dla__numel(x->ndims, dims) == 0 && npos > 0)
        st = index_check_on_host(x, a->dim, idx, npos);
    if (st == DLA_OK && dla__numel(x->ndims, dims) > 0) {
        dla_index_args g = {.struct_size = sizeof g, .dim = a->dim};
        dla__view_of(z, &g.y);
        dla__view_of(x, &g.x);
        index_view(idx, &g.index);
        st = dla__k_index(dev, DLA_KERNEL_GATHER, &g);
    }
    dla_tensor_release(idx);
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

/* The gradient of dla_index: g scatter-added into zeros of x's dims. */
typedef struct scatter_attrs {
    int dim; /* 0-based */
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} scatter_attrs;

static dla_status scatter_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const scatter_attrs *a = attrs;
    dla_tensor *g = in[0];
    dla_tensor *idx = dense_of(in[1]);
    if (!idx)
        return dla_last_status();
    dla_device *dev = g->storage->device;
    dla_tensor *z = dla__tensor_alloc("dla_index", dev, g->dtype, a->format, a->ndims, a->dims);
    dla_status st = z ? DLA_OK : dla_last_status();
    if (st == DLA_OK) {
        dla_view zv;
        dla__view_of(z, &zv);
        st = dla__k_fill(dev, &zv, 0.0);
    }
    if (st == DLA_OK && dla__numel(g->ndims, g->dims) > 0) {
        dla_index_args s = {.struct_size = sizeof s, .dim = a->dim};
        dla__view_of(z, &s.y);
        dla__view_of(g, &s.x);
        index_view(idx, &s.index);
        st = dla__k_index(dev, DLA_KERNEL_SCATTER_ADD, &s);
    }
    dla_tensor_release(idx);
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

static dla_status scatter_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const scatter_attrs *a = node->attrs;
    gin[0] = dla_index(gout[0], a->dim + 1, node->in[1]);
    return DLA_OK;
}

/* scatter_forward makes zeros of its attributes' dims and format and
 * adds g into them along dim through the index: they must be the x that
 * dla_index gathered g from (index_check's dim and dtype, g x's gathered
 * shape); the result is that x. */
static dla_status scatter_infer(const void *attrs, int nin, const dla__vshape *in,
                                dla__vshape *out)
{
    (void)nin;
    const scatter_attrs *a = attrs;
    if (a->ndims < 0 || a->ndims > DLA_MAX_DIMS || !dla__attr_str_ok(a->format, sizeof a->format))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_index (gradient): attribute ndims is %d, "
                         "or its format does not end", a->ndims);
    dla__vshape xs = {.dtype = in[0].dtype, .ndims = a->ndims}, want;
    memcpy(xs.dims, a->dims, sizeof xs.dims);
    memcpy(xs.format, a->format, sizeof xs.format);
    dla_tensor x, index;
    dla__tensor_of_shape(&xs, &x);
    dla__tensor_of_shape(&in[1], &index);
    dla_status st = index_check(&x, (int64_t)a->dim + 1, &index);
    if (st != DLA_OK)
        return st;
    index_shape(&xs, a->dim, &in[1], &want);
    char gd[DLA__DIMS_BUF], ad[DLA__DIMS_BUF], wd[DLA__DIMS_BUF];
    if (!dla__shape_fits(&in[0], want.ndims, want.dims))
        return dla__fail(DLA_ERR_SHAPE, "dla_index (gradient): argument g (%s) is not what "
                         "attribute dims %s gather to (%s)",
                         dla__dims_str(gd, sizeof gd, in[0].ndims, in[0].dims),
                         dla__dims_str(ad, sizeof ad, a->ndims, a->dims),
                         dla__dims_str(wd, sizeof wd, want.ndims, want.dims));
    out[0] = xs;
    return DLA_OK;
}

static const dla__op scatter_op = {.name = "dla_index (gradient)", .nin = 2, .nout = 1,
                                   .forward = scatter_forward, .backward = scatter_backward,
                                   .infer = scatter_infer};
DLA__OP_REGISTER(scatter_op, sizeof(scatter_attrs));

static dla_status index_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const index_attrs *ia = node->attrs;
    const dla_tensor *x = node->in[0];
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    scatter_attrs a;
    memset(&a, 0, sizeof a);
    a.dim = ia->dim;
    a.ndims = x->ndims;
    memcpy(a.dims, x->dims, sizeof a.dims);
    memcpy(a.format, x->format, sizeof a.format);
    gin[0] = dla__apply(&scatter_op, &a, sizeof a, 2, (dla_tensor *[]){gout[0], node->in[1]});
    return DLA_OK;
}

/* dla_index's checks on the recorded x and index; x gathered. */
static dla_status index_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    int dim = ((const index_attrs *)attrs)->dim;
    dla_tensor x, index;
    dla__tensor_of_shape(&in[0], &x);
    dla__tensor_of_shape(&in[1], &index);
    dla_status st = index_check(&x, (int64_t)dim + 1, &index);
    if (st == DLA_OK)
        index_shape(&in[0], dim, &in[1], out);
    return st;
}

static const dla__op index_op = {.name = "dla_index", .nin = 2, .nout = 1,
                                 .forward = index_forward, .backward = index_backward,
                                 .infer = index_infer};
DLA__OP_REGISTER(index_op, sizeof(index_attrs));

DLA_API dla_tensor *dla_index(dla_tensor *x, int dim, dla_tensor *index)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg("dla_index", "x", x);
    if (!index || index->status != DLA_OK)
        return dla__pass_arg("dla_index", "index", index);
    /* A dim past an unformatted x's is of size 1, as in MATLAB (x(:, :,
     * [1 1]) of a matrix stacks it twice); it was refused. */
    if (dim > x->ndims && dim <= DLA_MAX_DIMS && !x->format[0]) {
        dla_scope_begin();
        dla_tensor *r = dla_tensor_retain(dla_index(dla__with_trailing_dims(x, dim), dim, index));
        dla_scope_end();
        return dla__return(r);
    }
    if (index_check(x, dim, index) != DLA_OK)
        return dla__return(dla__error_tensor());
    index_attrs a = {dim - 1};
    return dla__apply(&index_op, &a, sizeof a, 2, (dla_tensor *[]){x, index});
}

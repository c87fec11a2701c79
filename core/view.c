/*
 * view.c - reshape, permute, squeeze and slice as views.
 *
 * Views share storage and differ only in dims, strides and offset, so the
 * forward pass never copies and a later backward can write each gradient
 * element once through the same strides. reshape is the one exception: when
 * the strides cannot express the new dims it copies (as MATLAB must too).
 *
 * All four are view ops of the op contract: their gradient is accumulated
 * straight into the same view of the input's gradient buffer, so the
 * backward of slicing writes each element of dX once (core/gradient.c).
 */
#include "core/error.h"
#include "core/format.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

/* Strides for new dims over t's elements in column-major order, when t's
 * strides allow it without a copy: each group of old dims that multiplies
 * to a group of new dims must itself be laid out contiguously. */
static int reshape_strides(const dla_tensor *t, int ndims, const int64_t *dims, int64_t *strides)
{
    int64_t od[DLA_MAX_DIMS], os[DLA_MAX_DIMS];
    int on = 0;
    for (int i = 0; i < t->ndims; i++) {
        if (t->dims[i] == 0) {
            dla__dense_strides(ndims, dims, strides);
            return 1;
        }
        if (t->dims[i] != 1) {
            od[on] = t->dims[i];
            os[on] = t->strides[i];
            on++;
        }
    }
    int oi = 0, ni = 0;
    while (ni < ndims && oi < on) {
        int64_t np = dims[ni], op = od[oi];
        int nj = ni + 1, oj = oi + 1;
        while (np != op) {
            if (np < op)
                np *= dims[nj++];
            else
                op *= od[oj++];
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k + 1] != os[k] * od[k])
                return 0;
        strides[ni] = os[oi];
        for (int k = ni + 1; k < nj; k++)
            strides[k] = strides[k - 1] * dims[k - 1];
        ni = nj;
        oi = oj;
    }
    for (; ni < ndims; ni++) /* trailing singletons */
        strides[ni] = ni ? strides[ni - 1] * dims[ni - 1] : 1;
    return 1;
}


/* ---------------------------------------------------------------- reshape */

typedef struct reshape_attrs {
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} reshape_attrs;

static dla_status reshape_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    static const char op[] = "dla_reshape";
    const reshape_attrs *a = attrs;
    dla_tensor *t = in[0];
    char ad[DLA__DIMS_BUF], bd[DLA__DIMS_BUF];
    int64_t numel = dla__numel(t->ndims, t->dims);
    if (dla__numel(a->ndims, a->dims) != numel)
        return dla__fail(DLA_ERR_SHAPE, "%s: cannot reshape %s (%lld elements) to %s", op,
                         dla__tensor_dims_str(t, ad, sizeof ad), (long long)numel,
                         dla__dims_str(bd, sizeof bd, a->ndims, a->dims));
    int64_t st[DLA_MAX_DIMS];
    dla_tensor *v;
    if (reshape_strides(t, a->ndims, a->dims, st)) {
        v = dla__tensor_view(op, t);
        if (!v)
            return dla_last_status();
        memcpy(v->strides, st, sizeof st);
    } else {
        v = dla__tensor_alloc(op, t->storage->device, t->dtype, "", a->ndims, a->dims);
        if (!v)
            return dla_last_status();
        dla_view y, x;
        dla__view_of(v, &y);
        dla__view_of(t, &x);
        /* Gather t in column-major element order into v's dense layout. */
        y.ndims = x.ndims;
        memcpy(y.dims, x.dims, sizeof x.dims);
        dla__dense_strides(t->ndims, t->dims, y.strides);
        dla_status s = dla__k_copy(t->storage->device, &y, &x);
        if (s != DLA_OK) {
            dla_tensor_release(v);
            return s;
        }
    }
    v->ndims = a->ndims;
    memcpy(v->dims, a->dims, sizeof a->dims);
    memcpy(v->format, a->format, sizeof a->format);
    out[0] = v;
    return DLA_OK;
}

/* reshape_forward copies dims and format from its attributes: they must
 * be dims of x's element count and a format that ends. */
static dla_status reshape_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const reshape_attrs *a = attrs;
    if (a->ndims < 0 || a->ndims > DLA_MAX_DIMS || !dla__attr_str_ok(a->format, sizeof a->format))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_reshape: attribute ndims is %d, or its "
                         "format does not end", a->ndims);
    int64_t n = 1, want = dla__numel(in[0].ndims, in[0].dims);
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] < 0 || __builtin_mul_overflow(n, a->dims[i], &n))
            n = -1;
    char ad[DLA__DIMS_BUF], bd[DLA__DIMS_BUF];
    if (n != want)
        return dla__fail(DLA_ERR_SHAPE, "dla_reshape: argument x (%s) cannot take attribute "
                         "dims %s", dla__dims_str(ad, sizeof ad, in[0].ndims, in[0].dims),
                         dla__dims_str(bd, sizeof bd, a->ndims, a->dims));
    out[0] = in[0];
    out[0].ndims = a->ndims;
    memcpy(out[0].dims, a->dims, sizeof a->dims);
    memcpy(out[0].format, a->format, sizeof a->format);
    return DLA_OK;
}

static dla_tensor *reshape_view(const void *attrs, dla_tensor *base)
{
    const reshape_attrs *a = attrs;
    return dla_reshape(base, a->format, a->ndims, a->dims);
}

static const dla__op reshape_op = {
    .name = "dla_reshape", .nin = 1, .nout = 1, .forward = reshape_forward, .view = reshape_view,
    .infer = reshape_infer,
};
DLA__OP_REGISTER(reshape_op, sizeof(reshape_attrs));

DLA_API dla_tensor *dla_reshape(dla_tensor *t, const char *format, int ndims, const int64_t *dims)
{
    static const char op[] = "dla_reshape";
    if (!t || t->status != DLA_OK)
        return dla__pass_arg(op, "t", t);
    if (ndims < 0 || ndims > DLA_MAX_DIMS)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument ndims: %d is outside 0..%d", op,
                          ndims, DLA_MAX_DIMS);
    /* Named apart: a NULL dims read "argument ndims: 2 is outside 0..8". */
    if (ndims && !dims)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims is NULL, for ndims %d", op,
                          ndims);
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    reshape_attrs a;
    memset(&a, 0, sizeof a);
    int infer = -1;
    int64_t known = 1, numel = dla__numel(t->ndims, t->dims);
    for (int i = 0; i < ndims; i++) {
        a.dims[i] = dims[i];
        if (dims[i] == -1) {
            if (infer >= 0)
                return dla__error(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument dims: more than one dim is -1", op);
            infer = i;
        } else if (dims[i] < 0) {
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: dim %d is %lld", op,
                              i + 1, (long long)dims[i]);
        } else {
            if (__builtin_mul_overflow(known, dims[i], &known))
                known = INT64_MAX; /* refused below, with the dims */
        }
    }
    if (infer >= 0)
        a.dims[infer] = 1;
    /* The product above may have wrapped: check the dims asked for (an
     * inferred dim counted as 1) before dividing by it. */
    if (dla__numel_checked(op, ndims, a.dims, t->dtype, &known) != DLA_OK)
        return dla__return(dla__error_tensor());
    /* No size fits the -1 when the other dims do not divide the element
     * count: the quotient rounded down was taken, and the error named dims
     * never asked for ("cannot reshape 2x2 (4 elements) to 3x1"). */
    if (infer >= 0 && (known ? numel % known != 0 : numel != 0)) {
        char td[DLA__DIMS_BUF], ad[DLA__DIMS_BUF], why[96];
        if (known)
            snprintf(why, sizeof why, "the other dims' product, %lld, does not divide %lld",
                     (long long)known, (long long)numel);
        else
            snprintf(why, sizeof why, "the other dims' product is 0");
        return dla__error(DLA_ERR_SHAPE, "%s: cannot reshape %s (%lld elements) to %s: %s, so no "
                          "size fits the -1 (dim %d)", op, dla__tensor_dims_str(t, td, sizeof td),
                          (long long)numel, dla__dims_str(ad, sizeof ad, ndims, dims), why,
                          infer + 1);
    }
    if (infer >= 0)
        a.dims[infer] = known ? numel / known : 0;
    dla__format f;
    if (dla__format_parse(op, format, ndims, a.dims, &f, &a.ndims) != DLA_OK)
        return dla__return(dla__error_tensor());
    if (!f.is_canonical)
        return dla__error(DLA_ERR_FORMAT, "%s: argument format: \"%s\" is not in canonical order "
                          "(S, C, B, T, U); reshape cannot reorder data", op, format);
    for (int i = ndims; i < a.ndims; i++)
        a.dims[i] = 1;
    memcpy(a.format, f.canon, sizeof a.format);
    return dla__apply(&reshape_op, &a, sizeof a, 1, &t);
}

/* ---------------------------------------------------------------- permute */

/* The dims permute must be given an order for: all of a formatted
 * tensor's (each has a label), an unformatted one's but its trailing
 * singletons, which MATLAB does not count (sum(X, 3) of a 3-D X is 3x4 to
 * permute(.., [2 1]); here it is 3x4x1, and the order [2 1] was refused,
 * "2 entries for a tensor with 3 dims"). */
static int permute_min_ndims(int ndims, const int64_t *dims, const char *format)
{
    if (!format[0])
        while (ndims > 0 && dims[ndims - 1] == 1)
            ndims--;
    return ndims;
}

typedef struct permute_attrs {
    int ndims;
    int64_t order[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} permute_attrs;

static dla_status permute_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    const permute_attrs *a = attrs;
    dla_tensor *t = in[0];
    dla_tensor *v = dla__tensor_view("dla_permute", t);
    if (!v)
        return dla_last_status();
    for (int i = 0; i < a->ndims; i++) {
        int src = (int)a->order[i] - 1;
        v->dims[i] = src < t->ndims ? t->dims[src] : 1;
        v->strides[i] = src < t->ndims ? t->strides[src] : 0;
    }
    v->ndims = a->ndims;
    memcpy(v->format, a->format, sizeof a->format);
    out[0] = v;
    return DLA_OK;
}

/* permute_forward reads x's dim order[i] - 1 for each i: order must be a
 * permutation of 1..ndims, as dla_permute checks, and the format end. */
static dla_status permute_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const permute_attrs *a = attrs;
    if (a->ndims < permute_min_ndims(in[0].ndims, in[0].dims, in[0].format) ||
        a->ndims > DLA_MAX_DIMS ||
        !dla__attr_str_ok(a->format, sizeof a->format))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_permute: attribute ndims is %d for an "
                         "argument x of %d dims, or its format does not end", a->ndims,
                         in[0].ndims);
    int seen[DLA_MAX_DIMS] = {0};
    out[0] = in[0];
    out[0].ndims = a->ndims;
    memcpy(out[0].format, a->format, sizeof a->format);
    for (int i = 0; i < a->ndims; i++) {
        int64_t o = a->order[i];
        if (o < 1 || o > a->ndims || seen[o - 1]++)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_permute: attribute order: entry %d "
                             "(%lld) makes it no permutation of 1..%d", i + 1, (long long)o,
                             a->ndims);
        out[0].dims[i] = o <= in[0].ndims ? in[0].dims[o - 1] : 1;
    }
    return DLA_OK;
}

static dla_tensor *permute_view(const void *attrs, dla_tensor *base)
{
    const permute_attrs *a = attrs;
    return dla_permute(base, a->ndims, a->order);
}

static const dla__op permute_op = {
    .name = "dla_permute", .nin = 1, .nout = 1, .forward = permute_forward, .view = permute_view,
    .infer = permute_infer,
};
DLA__OP_REGISTER(permute_op, sizeof(permute_attrs));

DLA_API dla_tensor *dla_permute(dla_tensor *t, int ndims, const int64_t *order)
{
    static const char op[] = "dla_permute";
    if (!t || t->status != DLA_OK)
        return dla__pass_arg(op, "t", t);
    /* A NULL order is named as such: it read "argument order: 4 entries for
     * a tensor with 4 dims", as if the count were wrong. */
    if (ndims && !order)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument order is NULL, for ndims %d",
                          op, ndims);
    if (ndims < permute_min_ndims(t->ndims, t->dims, t->format) || ndims > DLA_MAX_DIMS) {
        char buf[DLA__DIMS_BUF];
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument order: %d entries for a tensor with %d dims (%s)", op,
                          ndims, t->ndims, dla__tensor_dims_str(t, buf, sizeof buf));
    }
    int seen[DLA_MAX_DIMS] = {0};
    for (int i = 0; i < ndims; i++) {
        if (order[i] < 1 || order[i] > ndims || seen[order[i] - 1]++)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument order: entry %d (%lld) makes it no permutation of 1..%d",
                              op, i + 1, (long long)order[i], ndims);
    }
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    permute_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = ndims;
    memcpy(a.order, order, (size_t)ndims * sizeof *order);
    if (t->format[0]) {
        for (int i = 0; i < ndims; i++) {
            if (order[i] > t->ndims)
                return dla__error(DLA_ERR_FORMAT,
                                  "%s: argument order: dim %lld does not exist in format \"%s\"",
                                  op, (long long)order[i], t->format);
            a.format[i] = t->format[order[i] - 1];
        }
        if (!dla__format_is_canonical(a.format, ndims))
            return dla__error(DLA_ERR_FORMAT,
                              "%s: argument order: it turns format \"%s\" into \"%s\", which is not "
                              "in canonical order (S, C, B, T, U)",
                              op, t->format, a.format);
    }
    return dla__apply(&permute_op, &a, sizeof a, 1, &t);
}

/* ---------------------------------------------------------------- squeeze */

/* How many leading dims of an unformatted x squeeze keeps whole, as
 * MATLAB's squeeze, which returns a matrix unchanged: with at most two
 * dims before its trailing singletons (a row vector, a column, a scalar),
 * those dims stay, so a 1 x N row stays a row. Dropping its 1 made an N
 * (N x 1) column of it: a silent transpose, and a 1 x 0 became 0 x 1.
 * 0: squeeze drops every dim of size 1 (more dims, or a formatted x,
 * whose labels say which dim is which). */
static int squeeze_kept(int ndims, const int64_t *dims, const char *format)
{
    if (format[0])
        return 0;
    while (ndims > 0 && dims[ndims - 1] == 1)
        ndims--;
    return ndims == 2 ? 2 : 0;
}

static dla_status squeeze_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    dla_tensor *t = in[0];
    dla_tensor *v = dla__tensor_view("dla_squeeze", t);
    if (!v)
        return dla_last_status();
    const int kept = squeeze_kept(t->ndims, t->dims, t->format);
    int n = 0;
    for (int i = 0; i < t->ndims; i++) {
        if (t->dims[i] == 1 && i >= kept)
            continue;
        v->dims[n] = t->dims[i];
        v->strides[n] = t->strides[i];
        if (t->format[0])
            v->format[n] = t->format[i];
        n++;
    }
    v->ndims = n;
    v->format[t->format[0] ? n : 0] = '\0';
    out[0] = v;
    return DLA_OK;
}

/* No attributes: here for the view chains of accumulate, which infer
 * their views' shapes one after the other. */
static dla_status squeeze_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)attrs, (void)nin;
    out[0] = in[0];
    out[0].ndims = 0;
    const int kept = squeeze_kept(in[0].ndims, in[0].dims, in[0].format);
    for (int i = 0; i < in[0].ndims; i++) {
        if (in[0].dims[i] == 1 && i >= kept)
            continue;
        if (in[0].format[0])
            out[0].format[out[0].ndims] = in[0].format[i];
        out[0].dims[out[0].ndims++] = in[0].dims[i];
    }
    out[0].format[in[0].format[0] ? out[0].ndims : 0] = '\0';
    return DLA_OK;
}

static dla_tensor *squeeze_view(const void *attrs, dla_tensor *base) { return dla_squeeze(base); }

static const dla__op squeeze_op = {
    .name = "dla_squeeze", .nin = 1, .nout = 1, .forward = squeeze_forward, .view = squeeze_view,
    .infer = squeeze_infer,
};
DLA__OP_REGISTER(squeeze_op, 0);

DLA_API dla_tensor *dla_squeeze(dla_tensor *t)
{
    return dla__apply(&squeeze_op, NULL, 0, 1, &t);
}

/* ------------------------------------------------------------------ slice */

typedef struct slice_attrs {
    int dim;
    int64_t start, step, stop;
} slice_attrs;

/* The elements a slice takes (step >= 1). Not (stop - start + step - 1) /
 * step: a step near INT64_MAX wraps it. */
static int64_t slice_count(const slice_attrs *a)
{
    return a->stop > a->start ? 1 + (a->stop - a->start - 1) / a->step : 0;
}

static dla_status slice_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    const slice_attrs *a = attrs;
    dla_tensor *t = in[0];
    const int64_t count = slice_count(a);
    dla_tensor *v = dla__tensor_view("dla_slice", t);
    if (!v)
        return dla_last_status();
    v->offset += a->start * t->strides[a->dim - 1];
    v->dims[a->dim - 1] = count;
    /* One element or none: the step says nothing (and stride times a huge
     * step would overflow). */
    v->strides[a->dim - 1] = count > 1 ? t->strides[a->dim - 1] * a->step : t->strides[a->dim - 1];
    out[0] = v;
    return DLA_OK;
}

/* slice_forward offsets x's view by start along dim and divides by step:
 * the range must lie in x as dla_slice makes it. */
static dla_status slice_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const slice_attrs *a = attrs;
    char buf[DLA__DIMS_BUF];
    int64_t n = a->dim >= 1 && a->dim <= in[0].ndims ? in[0].dims[a->dim - 1] : -1;
    if (n < 0 || a->step < 1 || a->start < 0 || a->start > n || a->stop > n)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_slice: attributes dim %d, start %lld, "
                         "step %lld, stop %lld do not fit argument x (%s)", a->dim,
                         (long long)a->start, (long long)a->step, (long long)a->stop,
                         dla__dims_str(buf, sizeof buf, in[0].ndims, in[0].dims));
    out[0] = in[0];
    out[0].dims[a->dim - 1] = slice_count(a);
    return DLA_OK;
}

static dla_tensor *slice_view(const void *attrs, dla_tensor *base)
{
    const slice_attrs *a = attrs;
    return dla_slice(base, a->dim, a->start, a->step, a->stop);
}

static const dla__op slice_op = {
    .name = "dla_slice", .nin = 1, .nout = 1, .forward = slice_forward, .view = slice_view,
    .infer = slice_infer,
};
DLA__OP_REGISTER(slice_op, sizeof(slice_attrs));

/* The trailing singletons MATLAB counts on any array (X(:, :, 1) of a
 * matrix is the matrix), as a reshape view. */
dla_tensor *dla__with_trailing_dims(dla_tensor *t, int dim)
{
    int64_t dims[DLA_MAX_DIMS];
    for (int i = 0; i < dim; i++)
        dims[i] = i < t->ndims ? t->dims[i] : 1;
    return dla_reshape(t, "", dim, dims);
}

/* dla_slice along a dim past an unformatted t's: of size 1, as MATLAB
 * has it (a dim of size 1 takes the start 0 or 1). It was refused, "dim 3
 * is outside 1..2", where MATLAB's X(:, :, 1) of a matrix works. */
static dla_tensor *slice_past_dims(dla_tensor *t, int dim, int64_t start, int64_t step,
                                   int64_t stop)
{
    dla_scope_begin();
    dla_tensor *r =
        dla_tensor_retain(dla_slice(dla__with_trailing_dims(t, dim), dim, start, step, stop));
    dla_scope_end();
    return dla__return(r);
}

DLA_API dla_tensor *dla_slice(dla_tensor *t, int dim, int64_t start, int64_t step, int64_t stop)
{
    static const char op[] = "dla_slice";
    if (!t || t->status != DLA_OK)
        return dla__pass_arg(op, "t", t);
    char buf[DLA__DIMS_BUF];
    if (dim > t->ndims && dim <= DLA_MAX_DIMS && !t->format[0])
        return slice_past_dims(t, dim, start, step, stop);
    if (dim < 1 || dim > t->ndims)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dim: %d is outside 1..%d of %s%s",
                          op, dim, t->ndims, dla__tensor_dims_str(t, buf, sizeof buf),
                          t->format[0] && dim > t->ndims ? " (a formatted tensor has no dims "
                                                           "past its labels)" : "");
    if (step < 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument step: %lld; it must be >= 1", op,
                          (long long)step);
    int64_t n = t->dims[dim - 1];
    if (start < 0 || start > n)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument start: %lld is outside 0..%lld of dim %d (%s)", op,
                          (long long)start, (long long)n, dim,
                          dla__tensor_dims_str(t, buf, sizeof buf));
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    slice_attrs a;
    memset(&a, 0, sizeof a);
    a.dim = dim;
    a.start = start;
    a.step = step;
    a.stop = stop > n ? n : stop;
    return dla__apply(&slice_op, &a, sizeof a, 1, &t);
}

/*
 * view.c - reshape, permute, squeeze and slice as views.
 *
 * Views share storage and differ only in dims, strides and offset, so the
 * forward pass never copies and a later backward can write each gradient
 * element once through the same strides. reshape is the one exception: when
 * the strides cannot express the new dims it copies (as MATLAB must too).
 */
#include "core/error.h"
#include "core/format.h"
#include "core/tensor.h"

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

DLA_API dla_tensor *dla_reshape(dla_tensor *t, const char *format, int ndims, const int64_t *dims)
{
    static const char op[] = "dla_reshape";
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    if (ndims < 0 || ndims > DLA_MAX_DIMS || (ndims && !dims))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument ndims: %d is outside 0..%d", op,
                          ndims, DLA_MAX_DIMS);
    int64_t nd[DLA_MAX_DIMS];
    int infer = -1;
    int64_t known = 1, numel = dla__numel(t->ndims, t->dims);
    for (int i = 0; i < ndims; i++) {
        nd[i] = dims[i];
        if (dims[i] == -1) {
            if (infer >= 0)
                return dla__error(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument dims: more than one dim is -1", op);
            infer = i;
        } else if (dims[i] < 0) {
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: dim %d is %lld", op,
                              i + 1, (long long)dims[i]);
        } else {
            known *= dims[i];
        }
    }
    if (infer >= 0)
        nd[infer] = known ? numel / known : 0;
    char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
    if (dla__numel(ndims, nd) != numel)
        return dla__error(DLA_ERR_SHAPE, "%s: cannot reshape %s (%lld elements) to %s", op,
                          dla__tensor_dims_str(t, a, sizeof a), (long long)numel,
                          dla__dims_str(b, sizeof b, ndims, nd));
    dla__format f;
    int tnd;
    if (dla__format_parse(op, format, ndims, nd, &f, &tnd) != DLA_OK)
        return dla__return(dla__error_tensor());
    if (!f.is_canonical)
        return dla__error(DLA_ERR_FORMAT, "%s: argument format: \"%s\" is not in canonical order "
                          "(S, C, B, T, U); reshape cannot reorder data", op, format);
    for (int i = ndims; i < tnd; i++)
        nd[i] = 1;
    int64_t st[DLA_MAX_DIMS];
    dla_tensor *v;
    if (reshape_strides(t, tnd, nd, st)) {
        v = dla__tensor_view(op, t);
        if (!v)
            return dla__return(dla__error_tensor());
        memcpy(v->strides, st, sizeof st);
    } else {
        dla_tensor *d = dla_contiguous(t);
        dla_keep(d);
        if (d->status != DLA_OK)
            return dla__return(d);
        v = dla__tensor_view(op, d);
        dla_tensor_release(d);
        if (!v)
            return dla__return(dla__error_tensor());
        dla__dense_strides(tnd, nd, v->strides);
    }
    v->ndims = tnd;
    memcpy(v->dims, nd, sizeof nd);
    snprintf(v->format, sizeof v->format, "%s", f.canon);
    return dla__return(v);
}

DLA_API dla_tensor *dla_permute(dla_tensor *t, int ndims, const int64_t *order)
{
    static const char op[] = "dla_permute";
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    if (ndims < t->ndims || ndims > DLA_MAX_DIMS || (ndims && !order))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument order: %d entries for a tensor with %d dims", op, ndims,
                          t->ndims);
    int seen[DLA_MAX_DIMS] = {0};
    for (int i = 0; i < ndims; i++) {
        if (order[i] < 1 || order[i] > ndims || seen[order[i] - 1]++)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument order: entry %d (%lld) makes it no permutation of 1..%d",
                              op, i + 1, (long long)order[i], ndims);
    }
    char fmt[DLA_MAX_DIMS + 1] = "";
    if (t->format[0]) {
        for (int i = 0; i < ndims; i++) {
            if (order[i] > t->ndims)
                return dla__error(DLA_ERR_FORMAT,
                                  "%s: argument order: dim %lld does not exist in format \"%s\"",
                                  op, (long long)order[i], t->format);
            fmt[i] = t->format[order[i] - 1];
        }
        fmt[ndims] = '\0';
        if (!dla__format_is_canonical(fmt, ndims))
            return dla__error(DLA_ERR_FORMAT,
                              "%s: argument order: it turns format \"%s\" into \"%s\", which is not "
                              "in canonical order (S, C, B, T, U)",
                              op, t->format, fmt);
    }
    dla_tensor *v = dla__tensor_view(op, t);
    if (!v)
        return dla__return(dla__error_tensor());
    for (int i = 0; i < ndims; i++) {
        int src = (int)order[i] - 1;
        v->dims[i] = src < t->ndims ? t->dims[src] : 1;
        v->strides[i] = src < t->ndims ? t->strides[src] : 0;
    }
    v->ndims = ndims;
    memcpy(v->format, fmt, sizeof fmt);
    return dla__return(v);
}

DLA_API dla_tensor *dla_squeeze(dla_tensor *t)
{
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    dla_tensor *v = dla__tensor_view("dla_squeeze", t);
    if (!v)
        return dla__return(dla__error_tensor());
    int n = 0;
    for (int i = 0; i < t->ndims; i++) {
        if (t->dims[i] == 1)
            continue;
        v->dims[n] = t->dims[i];
        v->strides[n] = t->strides[i];
        if (t->format[0])
            v->format[n] = t->format[i];
        n++;
    }
    v->ndims = n;
    v->format[t->format[0] ? n : 0] = '\0';
    return dla__return(v);
}

DLA_API dla_tensor *dla_slice(dla_tensor *t, int dim, int64_t start, int64_t step, int64_t stop)
{
    static const char op[] = "dla_slice";
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    char buf[DLA__DIMS_BUF];
    if (dim < 1 || dim > t->ndims)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dim: %d is outside 1..%d of %s", op,
                          dim, t->ndims, dla__tensor_dims_str(t, buf, sizeof buf));
    if (step < 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument step: %lld; it must be >= 1", op,
                          (long long)step);
    int64_t n = t->dims[dim - 1];
    if (start < 0 || start > n)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument start: %lld is outside 0..%lld of dim %d (%s)", op,
                          (long long)start, (long long)n, dim,
                          dla__tensor_dims_str(t, buf, sizeof buf));
    if (stop > n)
        stop = n;
    int64_t count = stop > start ? (stop - start + step - 1) / step : 0;
    dla_tensor *v = dla__tensor_view(op, t);
    if (!v)
        return dla__return(dla__error_tensor());
    v->offset += start * t->strides[dim - 1];
    v->dims[dim - 1] = count;
    v->strides[dim - 1] = t->strides[dim - 1] * step;
    return dla__return(v);
}

/*
 * ops_embed.c - MATLAB's embed: numeric indices (words, categories) to
 * the columns of an embedding matrix.
 *
 * Written with the public ops, so that it records, replays and
 * differentiates as they do: the indices become 0-based int32 positions on
 * the device (comparisons and a where, no host read, so a trace does not
 * freeze one call's tokens), and dla_index gathers the columns, whose
 * backward adds each output column's gradient into the column it came
 * from. MATLAB's indices are 1-based and 0 is doc2sequence's padding:
 * 1..V pick columns 1..V, and anything else (0, NaN, a fraction, past V)
 * picks the last column, MATLAB's out-of-vocabulary vector.
 */
#include "core/error.h"
#include "core/tensor.h"

#include <dlaccel/loss.h>

#include <string.h>

static const char op[] = "dla_embed";

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* The checks: a formatted x of indices whose "C" (if any) is 1; a float
 * matrix of weights on x's device. */
static dla_status check(const dla_tensor *x, const dla_tensor *w)
{
    char xd[DLA__DIMS_BUF], wd[DLA__DIMS_BUF];
    dla__tensor_dims_str(x, xd, sizeof xd);
    dla__tensor_dims_str(w, wd, sizeof wd);
    if (!x->format[0])
        return dla__fail(DLA_ERR_FORMAT, "%s: x (%s) is unformatted; give its labels (\"BT\" or "
                         "\"CBT\" for token sequences, \"CB\" or \"B\" for one index an "
                         "observation) with dla_tensor_set_format", op, xd);
    const char *c = strchr(x->format, 'C');
    if (c && x->dims[c - x->format] != 1)
        return dla__fail(DLA_ERR_SHAPE, "%s: x is %s \"%s\": its \"C\" dim must be 1 (one index "
                         "an element; the embedding dimension takes its place)", op, xd, x->format);
    if (x->dtype == DLA_BOOL)
        return dla__fail(DLA_ERR_DTYPE, "%s: x is logical; indices are numbers 1..V", op);
    if (!is_float(w->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: weights are %s; they must be single or double", op,
                         dla_dtype_name(w->dtype));
    for (int d = 2; d < w->ndims; d++)
        if (w->dims[d] != 1)
            return dla__fail(DLA_ERR_SHAPE, "%s: weights are %s; they must be a matrix, "
                             "embedding dimension x vocabulary", op, wd);
    if (w->ndims < 2 || w->dims[0] < 1 || w->dims[1] < 1)
        return dla__fail(DLA_ERR_SHAPE, "%s: weights are %s; they need at least one row and one "
                         "column (the out-of-vocabulary one)", op, wd);
    if (dla_tensor_device(x) != dla_tensor_device(w))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: x is on %s but weights are on %s; move one "
                         "with dla_tensor_to_device", op, dla_device_name(dla_tensor_device(x)),
                         dla_device_name(dla_tensor_device(w)));
    return DLA_OK;
}

/* A scalar of value in dtype on dev (the current device is put back). */
static dla_tensor *scalar_on(dla_device *dev, double value, dla_dtype dtype)
{
    dla_device *prev = dla_device_current();
    if (dev != prev)
        dla_device_set_current(dev);
    dla_tensor *s = dla_full(value, dtype, "", 2, (const int64_t[]){1, 1});
    if (dev != prev)
        dla_device_set_current(prev);
    return s;
}

DLA_API dla_tensor *dla_embed(dla_tensor *x, dla_tensor *weights)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    if (!weights || weights->status != DLA_OK)
        return dla__pass_arg(op, "weights", weights);
    if (check(x, weights) != DLA_OK)
        return dla__return(dla__error_tensor());
    const int64_t d = weights->dims[0], v = weights->dims[1];
    dla_device *dev = dla_tensor_device(x);
    /* The output: x's labels with "C" of d (inserted after the "S" dims
     * when x has none), the embedding the fastest dim before the move. */
    char format[DLA_MAX_DIMS + 2];
    int64_t dims[DLA_MAX_DIMS + 1], flat[DLA_MAX_DIMS + 1];
    int nd = 0, ns = 0, has_c = strchr(x->format, 'C') != NULL;
    for (int i = 0; i < x->ndims && x->format[i] == 'S'; i++)
        ns++;
    if (!has_c && x->ndims + 1 > DLA_MAX_DIMS) {
        dla__fail(DLA_ERR_SHAPE, "%s: x has %d dims; with the embedding dim that is more than %d",
                  op, x->ndims, DLA_MAX_DIMS);
        return dla__return(dla__error_tensor());
    }
    /* flat: d, then x's dims but its "C" of 1 (the gather's layout). */
    int nflat = 1;
    flat[0] = d;
    for (int i = 0; i < x->ndims; i++) {
        if (i == ns && !has_c) {
            format[nd] = 'C';
            dims[nd++] = d;
        }
        format[nd] = x->format[i];
        dims[nd++] = x->format[i] == 'C' ? d : x->dims[i];
        if (x->format[i] != 'C')
            flat[nflat++] = x->dims[i];
    }
    if (!has_c && ns == x->ndims) {
        format[nd] = 'C';
        dims[nd++] = d;
    }
    format[nd] = '\0';

    dla_scope_begin();
    dla_tensor *xd = dla_cast(x, DLA_F64);
    /* 1..V, whole: the rest take the last column. */
    dla_tensor *whole = dla_eq(dla_cast(dla_cast(xd, DLA_I32), DLA_F64), xd);
    dla_tensor *in_range = dla_mul(dla_cast(dla_ge(xd, scalar_on(dev, 1, DLA_F64)), DLA_F64),
                                   dla_cast(dla_le(xd, scalar_on(dev, (double)v, DLA_F64)), DLA_F64));
    dla_tensor *valid = dla_mul(in_range, dla_cast(whole, DLA_F64));
    dla_tensor *pos = dla_cast(dla_where(valid, dla_affine(xd, 1, -1),
                                         scalar_on(dev, (double)(v - 1), DLA_F64)), DLA_I32);
    dla_tensor *cols = dla_index(dla_reshape(weights, "", 2, (const int64_t[]){d, v}), 2,
                                 dla_reshape(pos, "", 2, (const int64_t[]){1, dla_tensor_numel(x)}));
    /* d x (x's elements), x's order: the embedding moves after the "S"
     * dims, where the labels keep it. */
    dla_tensor *y = dla_reshape(cols, "", nflat, flat);
    if (ns > 0) {
        int64_t order[DLA_MAX_DIMS + 1];
        int k = 0;
        for (int i = 2; i <= ns + 1; i++)
            order[k++] = i;
        order[k++] = 1;
        for (int i = ns + 2; i <= nflat; i++)
            order[k++] = i;
        y = dla_permute(y, k, order);
    }
    dla_tensor *r = dla_tensor_retain(dla_reshape(y, format, nd, dims));
    dla_scope_end();
    return dla__return(r);
}

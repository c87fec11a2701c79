/*
 * ops_reduce.c - sum, mean, max and min over a set of dims.
 *
 * Reduced dims stay with size 1 and keep their labels (MATLAB's rule), so a
 * result still broadcasts against its input.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <math.h>

typedef struct reduce_attrs {
    dla_reduce_op op;
    int ndims;           /* 0: all dims */
    int64_t dims[DLA_MAX_DIMS];
} reduce_attrs;

#define DLA__REDUCE_PUBLIC(name, str) "dla_" str,
static const char *const reduce_names[] = {DLA_REDUCE_LIST(DLA__REDUCE_PUBLIC)};

/* MATLAB's max and min over a dim of no elements give an empty array,
 * of size 0 along that dim (max(zeros(0, 3)) is 0x3, as the sum is 1x3
 * zeros and the mean 1x3 NaN): there is no value to give. They were
 * refused here ("has no elements along dim 1"), so a max over an empty
 * batch failed where MATLAB's runs. dims holds the result's dims with 1
 * for each reduced dim. */
static void empty_extremes(dla_reduce_op op, int ndims, const int64_t *xdims, int64_t *dims)
{
    if (op != DLA_REDUCE_MAX && op != DLA_REDUCE_MIN)
        return;
    for (int i = 0; i < ndims; i++)
        if (xdims[i] == 0)
            dims[i] = 0;
}

static dla_status reduce_forward(const void *attrs, dla_tensor *const *in, int nin,
                                 dla_tensor **out, dla_tensor **saved)
{
    const reduce_attrs *a = attrs;
    const char *op = reduce_names[a->op];
    dla_tensor *x = in[0];
    /* MATLAB sums a logical array to a double (sum(x > 0), an accuracy's
     * mean(pred == labels)): say how to get that here. */
    if (x->dtype != DLA_F32 && x->dtype != DLA_F64)
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; reductions need single or double: "
                         "cast x first (dla_cast(x, DLA_F64))", op, dla_dtype_name(x->dtype));
    int64_t dims[DLA_MAX_DIMS];
    for (int i = 0; i < x->ndims; i++)
        dims[i] = a->ndims ? x->dims[i] : 1;
    for (int i = 0; i < a->ndims; i++)
        if (a->dims[i] <= x->ndims) /* past ndims: a singleton, nothing to do */
            dims[a->dims[i] - 1] = 1;
    empty_extremes(a->op, x->ndims, x->dims, dims);
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, dims);
    if (!y)
        return dla_last_status();
    dla_reduce_args args = {.struct_size = sizeof args, .op = a->op};
    dla__view_of(y, &args.y);
    dla__view_of(x, &args.x);
    args.index.struct_size = sizeof args.index;
    dla_status st = dla__k_reduce(dev, &args);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_status reduce_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const reduce_attrs *a = n->attrs;
    dla_tensor *x = n->in[0], *y = n->out[0], *g = gout[0];
    switch (a->op) {
    case DLA_REDUCE_SUM: gin[0] = dla__expand(g, x); break;
    case DLA_REDUCE_MEAN: {
        double count = (double)dla__numel(x->ndims, x->dims) / (double)dla__numel(y->ndims, y->dims);
        gin[0] = dla__expand(dla_affine(g, count > 0 ? 1.0 / count : 0.0, 0.0), x);
        break;
    }
    default: { /* max, min: shared evenly among the elements that attain it */
        dla_tensor *hit = dla__compare(DLA_BINARY_EQ, x, y);
        dla_tensor *count = dla_sum(dla_cast(hit, x->dtype), a->ndims, a->dims);
        dla_tensor *share = dla_div(g, count);
        /* Picked, not hit .* share: an infinite g (sqrt of a max that is
         * 0) made Inf * 0, NaN, for the elements the result does not
         * depend on, whose gradient is 0. The other side is 0 / count
         * (step over +Inf is 0 for any count): 0, and NaN throughout a
         * slice whose result is NaN (no hit). */
        gin[0] = dla_where(hit, share,
                           dla_div(dla__unary(DLA_UNARY_STEP, count, INFINITY, 0.0), count));
        break;
    }
    }
    return DLA_OK;
}

/* reduce_forward's op names an entry of reduce_names and the kernel's
 * table, and each of its dims (1-based) indexes x's dims. */
static dla_status reduce_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const reduce_attrs *a = attrs;
    if ((unsigned)a->op >= sizeof reduce_names / sizeof *reduce_names || a->ndims < 0 ||
        a->ndims > DLA_MAX_DIMS)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "reduce: attribute op is %d, ndims %d",
                         (int)a->op, a->ndims);
    out[0] = in[0];
    for (int i = 0; i < in[0].ndims; i++)
        out[0].dims[i] = a->ndims ? in[0].dims[i] : 1;
    for (int i = 0; i < a->ndims; i++) {
        if (a->dims[i] < 1)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attribute dims: entry %d is %lld; "
                             "dims are 1-based", reduce_names[a->op], i + 1, (long long)a->dims[i]);
        if (a->dims[i] <= in[0].ndims)
            out[0].dims[a->dims[i] - 1] = 1;
    }
    empty_extremes(a->op, in[0].ndims, in[0].dims, out[0].dims);
    return DLA_OK;
}

static const dla__op reduce_op = {
    .name = "reduce", .nin = 1, .nout = 1, .forward = reduce_forward, .backward = reduce_backward,
    .infer = reduce_infer,
};
DLA__OP_REGISTER(reduce_op, sizeof(reduce_attrs));

static dla_tensor *reduce(const char *op, dla_reduce_op kop, dla_tensor *x, int ndims,
                          const int64_t *dims)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    if (ndims < 0 || ndims > DLA_MAX_DIMS)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: %d entries", op, ndims);
    /* Named apart: a NULL dims read "argument dims: 2 entries". */
    if (ndims && !dims)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims is NULL, for ndims %d", op,
                          ndims);
    reduce_attrs a = {.op = kop, .ndims = ndims};
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 1)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: entry %d is %lld; dims "
                              "are 1-based", op, i + 1, (long long)dims[i]);
        a.dims[i] = dims[i];
    }
    return dla__apply(&reduce_op, &a, sizeof a, 1, &x);
}

DLA_API dla_tensor *dla_sum(dla_tensor *x, int ndims, const int64_t *dims)
{
    return reduce("dla_sum", DLA_REDUCE_SUM, x, ndims, dims);
}
DLA_API dla_tensor *dla_mean(dla_tensor *x, int ndims, const int64_t *dims)
{
    return reduce("dla_mean", DLA_REDUCE_MEAN, x, ndims, dims);
}
DLA_API dla_tensor *dla_max(dla_tensor *x, int ndims, const int64_t *dims)
{
    return reduce("dla_max", DLA_REDUCE_MAX, x, ndims, dims);
}
DLA_API dla_tensor *dla_min(dla_tensor *x, int ndims, const int64_t *dims)
{
    return reduce("dla_min", DLA_REDUCE_MIN, x, ndims, dims);
}

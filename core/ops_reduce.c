/*
 * ops_reduce.c - sum, mean, max and min over a set of dims.
 *
 * Reduced dims stay with size 1 and keep their labels (MATLAB's rule), so a
 * result still broadcasts against its input.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/tensor.h"

static dla_tensor *reduce(const char *op, dla_reduce_op kop, dla_tensor *x, int ndims,
                          const int64_t *dims)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_error(x);
    if (x->dtype != DLA_F32 && x->dtype != DLA_F64)
        return dla__error(DLA_ERR_DTYPE, "%s: argument x: %s; reductions need single or double", op,
                          dla_dtype_name(x->dtype));
    if (ndims < 0 || (ndims && !dims))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: %d entries", op, ndims);
    int64_t out[DLA_MAX_DIMS];
    for (int i = 0; i < x->ndims; i++)
        out[i] = ndims ? x->dims[i] : 1;
    char buf[DLA__DIMS_BUF];
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 1)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: entry %d is %lld; dims "
                              "are 1-based", op, i + 1, (long long)dims[i]);
        if (dims[i] <= x->ndims) /* past ndims: a singleton, nothing to do */
            out[dims[i] - 1] = 1;
    }
    for (int i = 0; i < x->ndims; i++)
        if (x->dims[i] == 0 && out[i] == 1 && (kop == DLA_REDUCE_MAX || kop == DLA_REDUCE_MIN))
            return dla__error(DLA_ERR_SHAPE, "%s: argument x: %s has no elements along dim %d to "
                              "take the %s of", op, dla__tensor_dims_str(x, buf, sizeof buf), i + 1,
                              kop == DLA_REDUCE_MAX ? "max" : "min");
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, out);
    if (!y)
        return dla__return(dla__error_tensor());
    dla_reduce_args args = {.struct_size = sizeof args, .op = kop};
    dla__view_of(y, &args.y);
    dla__view_of(x, &args.x);
    args.index.struct_size = sizeof args.index;
    if (dla__k_reduce(dev, &args) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(y);
        return dla__return(dla__error_tensor());
    }
    return dla__return(y);
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

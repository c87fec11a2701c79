/*
 * datastore_array.c - MATLAB's arrayDatastore: observation i of a tensor
 * is its slice i along the iteration dimension; a read of several is one
 * gather (a view when they run in a row).
 */
#include "nn/data_util.h"
#include "nn/datastore.h"

typedef struct array_ds {
    dla_tensor *data; /* held */
    int dim;          /* the iteration dimension, 1-based */
} array_ds;

static dla_status array_read_batch(dla_datastore *ds, int64_t n, const int64_t *idx,
                                   dla_tensor **out, const char *op)
{
    const array_ds *a = ds->state;
    out[0] = NULL;
    int consecutive = 1;
    for (int64_t k = 1; k < n && consecutive; k++)
        consecutive = idx[k] == idx[0] + k;
    dla_scope_begin();
    dla_tensor *t;
    if (consecutive) {
        t = dla_slice(a->data, a->dim, idx[0], 1, idx[0] + n);
    } else {
        int32_t *i32 = dla__data_malloc((size_t)n * sizeof *i32);
        if (!i32) {
            dla_scope_end();
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld indices", op,
                                  (long long)n);
        }
        for (int64_t k = 0; k < n; k++)
            i32[k] = (int32_t)idx[k];
        dla_tensor *it = dla__data_from_host(dla_tensor_device(a->data), i32, DLA_I32, "",
                                             DLA_DIMS(n));
        dla__data_free(i32);
        t = dla_index(a->data, a->dim, it);
        dla_tensor_release(it);
    }
    dla_status st = dla_tensor_status(t);
    if (st != DLA_OK)
        dla__data_fail(st, "%s: arrayDatastore: %s", op, dla_tensor_error(t));
    else
        out[0] = dla__data_hold(t);
    dla_scope_end();
    return st;
}

static dla_status array_read_at(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    return array_read_batch(ds, 1, &i, out, op);
}

static void array_destroy(dla_datastore *ds)
{
    array_ds *a = ds->state;
    dla_tensor_release(a->data);
    dla__data_free(a);
}

static const dla__ds_kind array_kind = {
    .name = "arrayDatastore",
    .read_at = array_read_at,
    .read_batch = array_read_batch,
    .destroy = array_destroy,
};

DLA_API dla_status dla_array_datastore(dla_tensor *data, const dla_array_datastore_options *opts,
                                       dla_datastore **out)
{
    static const char op[] = "dla_array_datastore";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!data)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument data is NULL", op);
    if (dla_tensor_status(data) != DLA_OK)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument data: an error tensor: %s",
                              op, dla_tensor_error(data));
    const dla_array_datastore_options o = opts ? *opts : (dla_array_datastore_options){0};
    const int nd = dla_tensor_ndims(data);
    const int b = dla_tensor_find_dim(data, 'B');
    const char *fmt = dla_tensor_format(data);
    if (nd < 1)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument data: a scalar holds no observations", op);
    if (o.read_size < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument opts: read_size %lld < 0",
                              op, (long long)o.read_size);
    int dim = o.iteration_dimension ? o.iteration_dimension : fmt[0] ? b : nd;
    if (fmt[0] && !b && !o.iteration_dimension)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument data: format \"%s\" has no B dim to iterate along",
                              op, fmt);
    if (dim < 1 || dim > nd)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: iteration_dimension %d outside 1..%d, the dims "
                              "of data",
                              op, dim, nd);
    if (fmt[0] && dim != b)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: iteration_dimension %d of data formatted \"%s\"; "
                              "a formatted array's observations lie along its B dim (%d)",
                              op, dim, fmt, b);
    if (dla_tensor_dim(data, dim) > INT32_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %lld observations; at most 2^31-1",
                              op, (long long)dla_tensor_dim(data, dim));
    array_ds *a = dla__data_calloc(1, sizeof *a);
    if (!a)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    dla_datastore *ds = dla__ds_new(&array_kind, 1, dla_tensor_dim(data, dim), a, op);
    if (!ds) {
        dla__data_free(a);
        return dla_last_status();
    }
    a->data = dla_tensor_retain(data);
    a->dim = dim;
    ds->obs_dim[0] = dim;
    ds->read_size = o.read_size ? o.read_size : 1;
    *out = ds;
    return DLA_OK;
}

/*
 * transfer.c - moving data: to the host, to another device, into dense
 * layout, into another dtype.
 *
 * The core never touches device memory: a view is first made dense on its
 * own device (strided_copy), then moved with the plugins' copy functions.
 * Between two devices the data goes through a host buffer, which works for
 * any pair of plugins.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/tensor.h"

#include <string.h>

/* A dense copy of t on its own device (t retained when already dense). */
static dla_tensor *dense(const char *op, dla_tensor *t)
{
    if (dla__is_dense(t))
        return dla_tensor_retain(t);
    dla_tensor *d = dla__tensor_alloc(op, t->storage->device, t->dtype, t->format, t->ndims, t->dims);
    if (!d)
        return NULL;
    dla_view y, x;
    dla__view_of(d, &y);
    dla__view_of(t, &x);
    if (dla__k_copy(t->storage->device, &y, &x) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(d);
        return NULL;
    }
    return d;
}

static size_t nbytes(const dla_tensor *t)
{
    return (size_t)dla__numel(t->ndims, t->dims) * dla_dtype_size(t->dtype);
}

DLA_API dla_status dla_tensor_to_host(const dla_tensor *t, void *dst, size_t bytes)
{
    static const char op[] = "dla_tensor_to_host";
    if (!t)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument t is NULL", op);
    if (t->status != DLA_OK)
        return dla__fail(t->status, "%s", t->message);
    size_t need = nbytes(t);
    if (bytes < need || (need && !dst)) {
        char buf[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: argument bytes: %zu is less than the %zu bytes of %s %s", op, bytes,
                         need, dla__tensor_dims_str(t, buf, sizeof buf), dla_dtype_name(t->dtype));
    }
    if (need == 0)
        return DLA_OK;
    dla_tensor *d = dense(op, (dla_tensor *)t);
    if (!d)
        return dla_last_status();
    dla_device *dev = d->storage->device;
    dla_status st = dev->table->copy_to_host(dev->ctx, dst, d->storage->mem,
                                             (size_t)d->offset * dla_dtype_size(d->dtype), need);
    dla_tensor_release(d);
    return st;
}

DLA_API double dla_tensor_item(const dla_tensor *t, int64_t index)
{
    if (!t || t->status != DLA_OK || index < 0 || index >= dla__numel(t->ndims, t->dims))
        return 0.0 / 0.0;
    int64_t off = t->offset, rem = index;
    for (int i = 0; i < t->ndims; i++) {
        off += (rem % t->dims[i]) * t->strides[i];
        rem /= t->dims[i];
    }
    unsigned char raw[8];
    dla_device *dev = t->storage->device;
    size_t es = dla_dtype_size(t->dtype);
    if (dev->table->copy_to_host(dev->ctx, raw, t->storage->mem, (size_t)off * es, es) != DLA_OK)
        return 0.0 / 0.0;
    switch (t->dtype) {
    case DLA_F32: { float v; memcpy(&v, raw, 4); return v; }
    case DLA_F64: { double v; memcpy(&v, raw, 8); return v; }
    case DLA_I32: { int32_t v; memcpy(&v, raw, 4); return v; }
    default: return raw[0];
    }
}

DLA_API dla_tensor *dla_contiguous(dla_tensor *t)
{
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    dla_tensor *d = dense("dla_contiguous", t);
    return dla__return(d ? d : dla__error_tensor());
}

DLA_API dla_tensor *dla_tensor_to_device(dla_tensor *t, dla_device *dev)
{
    static const char op[] = "dla_tensor_to_device";
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    if (!dev && !(dev = dla__current_device(op)))
        return dla__return(dla__error_tensor());
    dla_device *src_dev = t->storage->device;
    dla_tensor *d = dense(op, t);
    if (!d)
        return dla__return(dla__error_tensor());
    if (src_dev == dev && d != t)
        return dla__return(d);
    dla_tensor *out = dla__tensor_alloc(op, dev, t->dtype, t->format, t->ndims, t->dims);
    dla_status st = out ? DLA_OK : dla_last_status();
    size_t bytes = nbytes(t), es = dla_dtype_size(t->dtype);
    if (st == DLA_OK && bytes) {
        if (src_dev == dev) {
            st = dla__k_copy_bytes(dev, out->storage->mem, 0, d->storage->mem,
                                   (size_t)d->offset * es, bytes);
        } else {
            void *stage = dla__malloc(bytes);
            if (!stage)
                st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot stage %zu bytes on the host", op,
                               bytes);
            if (stage)
                st = src_dev->table->copy_to_host(src_dev->ctx, stage, d->storage->mem,
                                                  (size_t)d->offset * es, bytes);
            if (stage && st == DLA_OK)
                st = dev->table->copy_to_device(dev->ctx, out->storage->mem, 0, stage, bytes);
            dla__free(stage);
        }
    }
    dla_tensor_release(d);
    if (st != DLA_OK) {
        dla_tensor_release(out);
        return dla__return(dla__error_tensor());
    }
    return dla__return(out);
}

DLA_API dla_tensor *dla_cast(dla_tensor *t, dla_dtype dtype)
{
    static const char op[] = "dla_cast";
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    if ((unsigned)dtype >= DLA_DTYPE_COUNT)
        return dla__error(DLA_ERR_DTYPE, "%s: argument dtype: %d is not a dla_dtype", op, (int)dtype);
    dla_tensor *out = dla__tensor_alloc(op, t->storage->device, dtype, t->format, t->ndims, t->dims);
    if (!out)
        return dla__return(dla__error_tensor());
    dla_view y, x;
    dla__view_of(out, &y);
    dla__view_of(t, &x);
    if (dla__k_cast(t->storage->device, &y, &x) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(out);
        return dla__return(dla__error_tensor());
    }
    return dla__return(out);
}

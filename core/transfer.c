/*
 * transfer.c - moving data: to the host, to another device, into dense
 * layout, into another dtype.
 *
 * The core never touches device memory: a view is first made dense on its
 * own device (strided_copy), then moved with the plugins' copy functions.
 * Between two devices the data goes through a host buffer, which works for
 * any pair of plugins. dla_contiguous, dla_cast and dla_tensor_to_device
 * are ops with gradients, so a model can move data inside dla_feval.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/hooks.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <string.h>

dla_tensor *dla__dense(const char *op, dla_tensor *t)
{
    return dla__is_dense(t) ? dla_tensor_retain(t) : dla__copy(op, t);
}

dla_tensor *dla__copy(const char *op, dla_tensor *t)
{
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
    /* A NULL dst is named as such: it read "argument bytes: 64 is less
     * than the 64 bytes of 4x4 single". */
    if (need && !dst)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument dst is NULL, for %zu bytes", op,
                         need);
    if (bytes < need) {
        char buf[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: argument bytes: %zu is less than the %zu bytes of %s %s", op, bytes,
                         need, dla__tensor_dims_str(t, buf, sizeof buf), dla_dtype_name(t->dtype));
    }
    if (need == 0)
        return DLA_OK;
    if (dla__hooks_hear(DLA__HEAR_HOST_READ) && !dla__in_forward())
        dla__hooks_host_read(t);
    dla_tensor *d = dla__dense(op, (dla_tensor *)t);
    if (!d)
        return dla_last_status();
    dla_device *dev = d->storage->device;
    dla_status st = dla__k_download(dev, dst, d->storage->mem,
                                    (size_t)d->offset * dla_dtype_size(d->dtype), need);
    dla_tensor_release(d);
    return st;
}

DLA_API double dla_tensor_item(const dla_tensor *t, int64_t index)
{
    static const char op[] = "dla_tensor_item";
    /* The NaN returned for no element is also a value an element may
     * hold (the mean of an empty tensor): the last error says which,
     * as dla_tensor_to_host's status does. */
    if (!t) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument t is NULL", op);
        return 0.0 / 0.0;
    }
    if (t->status != DLA_OK) {
        dla__fail(t->status, "%s", t->message);
        return 0.0 / 0.0;
    }
    const int64_t n = dla__numel(t->ndims, t->dims);
    if (index < 0 || index >= n) {
        char buf[DLA__DIMS_BUF];
        if (n == 0)
            dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument index: %lld, but t (%s) has no "
                      "elements", op, (long long)index, dla__tensor_dims_str(t, buf, sizeof buf));
        else
            dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument index: %lld is outside 0..%lld "
                      "of t (%s)", op, (long long)index, (long long)(n - 1),
                      dla__tensor_dims_str(t, buf, sizeof buf));
        return 0.0 / 0.0;
    }
    int64_t off = t->offset, rem = index;
    for (int i = 0; i < t->ndims; i++) {
        off += (rem % t->dims[i]) * t->strides[i];
        rem /= t->dims[i];
    }
    if (dla__hooks_hear(DLA__HEAR_HOST_READ) && !dla__in_forward())
        dla__hooks_host_read(t);
    unsigned char raw[8];
    dla_device *dev = t->storage->device;
    size_t es = dla_dtype_size(t->dtype);
    if (dla__k_download(dev, raw, t->storage->mem, (size_t)off * es, es) != DLA_OK)
        return 0.0 / 0.0;
    switch (t->dtype) {
    case DLA_F32: { float v; memcpy(&v, raw, 4); return v; }
    case DLA_F64: { double v; memcpy(&v, raw, 8); return v; }
    case DLA_I32: { int32_t v; memcpy(&v, raw, 4); return v; }
    default: return raw[0];
    }
}

static dla_status contiguous_forward(const void *attrs, dla_tensor *const *in, int nin,
                                     dla_tensor **out, dla_tensor **saved)
{
    /* A dense input gets a header of its own on the same memory, never
     * the input itself: a tape node whose output is its input added the
     * gradient into its own slot (identity backward), doubling it. */
    out[0] = dla__is_dense(in[0]) ? dla__tensor_view("dla_contiguous", in[0])
                                  : dla__copy("dla_contiguous", in[0]);
    return out[0] ? DLA_OK : dla_last_status();
}

static dla_status identity_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    gin[0] = gout[0];
    return DLA_OK;
}

/* The public functions' name for their tensor, in messages. */
static const char *const t_only[] = {"t", NULL};

static const dla__op contiguous_op = {
    .name = "dla_contiguous", .nin = 1, .nout = 1, .forward = contiguous_forward,
    .backward = identity_backward, .arg_names = t_only,
};
DLA__OP_REGISTER(contiguous_op, 0);

DLA_API dla_tensor *dla_contiguous(dla_tensor *t)
{
    return dla__apply(&contiguous_op, NULL, 0, 1, &t);
}

/* dev NULL only in a loaded trace: "the replay device" (op.h). */
typedef struct device_attrs {
    dla_device *dev;
} device_attrs;

static dla_status to_device_forward(const void *attrs, dla_tensor *const *in, int nin,
                                    dla_tensor **out, dla_tensor **saved)
{
    static const char op[] = "dla_tensor_to_device";
    dla_device *dev = ((const device_attrs *)attrs)->dev;
    /* A trace replayed on another device than it was recorded on moves to
     * the replay's device what it moved to its own, as a saved trace does
     * (a device-agnostic dla_tensor_to_device(c, dla_tensor_device(x)));
     * until 2026-11-29 it moved there only when loaded from a file, and in
     * memory the replay failed, "dla_add: arguments a and b are on
     * testmem:0 and cpu:0". */
    if (dev && dev == dla__replay_from() && dla__replay_device())
        dev = dla__replay_device();
    if (!dev && !(dev = dla__replay_device()) && !(dev = dla__current_device(op)))
        return dla_last_status();
    dla_tensor *t = in[0];
    dla_device *src_dev = t->storage->device;
    dla_tensor *d = dla__dense(op, t);
    if (!d)
        return dla_last_status();
    if (src_dev == dev && d != t) {
        out[0] = d;
        return DLA_OK;
    }
    dla_tensor *res = dla__tensor_alloc(op, dev, t->dtype, t->format, t->ndims, t->dims);
    dla_status st = res ? DLA_OK : dla_last_status();
    size_t bytes = nbytes(t), es = dla_dtype_size(t->dtype);
    if (st == DLA_OK && bytes) {
        if (src_dev == dev) {
            st = dla__k_copy_bytes(dev, res->storage->mem, 0, d->storage->mem,
                                   (size_t)d->offset * es, bytes);
        } else {
            void *stage = dla__malloc(bytes);
            if (!stage)
                st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot stage %zu bytes on the host", op,
                               bytes);
            if (stage)
                st = dla__k_download(src_dev, stage, d->storage->mem, (size_t)d->offset * es, bytes);
            if (stage && st == DLA_OK)
                st = dla__k_upload(dev, res->storage->mem, 0, stage, bytes);
            dla__free(stage);
        }
    }
    dla_tensor_release(d);
    if (st != DLA_OK) {
        dla_tensor_release(res);
        return st;
    }
    out[0] = res;
    return DLA_OK;
}

static dla_status to_device_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    gin[0] = dla_tensor_to_device(gout[0], n->in[0]->storage->device);
    return DLA_OK;
}

/* In a trace file the device is its name, or "" for the device the trace
 * was recorded on, which a loaded trace reads as the replay device: a trace
 * that moved a host-made tensor to its inputs' device keeps doing so on
 * whichever device it replays. */
static dla_status to_device_encode(const dla__attrs_io *io, const void *attrs, size_t attrs_size,
                                   unsigned char *buf, size_t cap, size_t *len)
{
    const dla_device *dev = ((const device_attrs *)attrs)->dev;
    const char *name = !dev || dev == io->recording_device ? "" : dev->name;
    *len = strlen(name);
    if (*len && *len <= cap) /* buf is NULL when the caller asks the length */
        memcpy(buf, name, *len);
    return DLA_OK;
}

static dla_status to_device_decode(const dla__attrs_io *io, const unsigned char *buf, size_t size,
                                   void *attrs, size_t attrs_size)
{
    device_attrs *a = attrs;
    char name[sizeof a->dev->name];
    if (size >= sizeof name || memchr(buf, '\0', size))
        return dla__fail(DLA_ERR_IO, "dla_tensor_to_device: a device name of %zu bytes", size);
    memcpy(name, buf, size);
    name[size] = '\0';
    if (!size) {
        a->dev = NULL;
        return DLA_OK;
    }
    a->dev = dla_device_get(name);
    if (a->dev)
        return DLA_OK;
    char why[256];
    snprintf(why, sizeof why, "%s", dla_last_error());
    return dla__fail(DLA_ERR_NO_DEVICE, "dla_tensor_to_device: the trace moves data to device "
                     "\"%s\", which cannot be had here (%s)", name, why);
}

dla_status dla__infer_like_input(const void *attrs, int nin, const dla__vshape *in,
                                 dla__vshape *out)
{
    (void)attrs, (void)nin;
    out[0] = in[0];
    return DLA_OK;
}

static const dla__op to_device_op = {
    .name = "dla_tensor_to_device", .nin = 1, .nout = 1, .forward = to_device_forward,
    .backward = to_device_backward, .encode_attrs = to_device_encode,
    .decode_attrs = to_device_decode,
    /* The device is a name the decoder found, not bytes; the shape stays. */
    .infer = dla__infer_like_input,
};
DLA__OP_REGISTER(to_device_op, sizeof(device_attrs));

DLA_API dla_tensor *dla_tensor_to_device(dla_tensor *t, dla_device *dev)
{
    if (!t || t->status != DLA_OK)
        return dla__pass_arg("dla_tensor_to_device", "t", t);
    if (!dev && !(dev = dla__current_device("dla_tensor_to_device")))
        return dla__return(dla__error_tensor());
    device_attrs a = {dev};
    return dla__apply(&to_device_op, &a, sizeof a, 1, &t);
}

typedef struct cast_attrs {
    dla_dtype dtype;
} cast_attrs;

static dla_status cast_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    dla_dtype dtype = ((const cast_attrs *)attrs)->dtype;
    dla_tensor *t = in[0];
    dla_tensor *res = dla__tensor_alloc("dla_cast", t->storage->device, dtype, t->format, t->ndims,
                                        t->dims);
    if (!res)
        return dla_last_status();
    dla_view y, x;
    dla__view_of(res, &y);
    dla__view_of(t, &x);
    dla_status st = dla__k_cast(t->storage->device, &y, &x);
    if (st != DLA_OK) {
        dla_tensor_release(res);
        return st;
    }
    out[0] = res;
    return DLA_OK;
}

static dla_status cast_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    dla_dtype from = n->in[0]->dtype;
    /* Only between float types is there a gradient; integers stop it. */
    if ((from == DLA_F32 || from == DLA_F64) && (gout[0]->dtype == DLA_F32 || gout[0]->dtype == DLA_F64))
        gin[0] = dla_cast(gout[0], from);
    return DLA_OK;
}

/* forward allocates and converts to dtype: one of dla_dtype. */
static dla_status cast_check(dla_dtype dtype)
{
    if ((unsigned)dtype >= DLA_DTYPE_COUNT)
        return dla__fail(DLA_ERR_DTYPE, "dla_cast: argument dtype: %d is not a dla_dtype",
                         (int)dtype);
    return DLA_OK;
}

/* The input's shape in dtype. */
static dla_status cast_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_dtype dtype = ((const cast_attrs *)attrs)->dtype;
    dla_status st = cast_check(dtype);
    out[0] = in[0];
    out[0].dtype = dtype;
    return st;
}

static const dla__op cast_op = {
    .name = "dla_cast", .nin = 1, .nout = 1, .forward = cast_forward, .backward = cast_backward,
    .infer = cast_infer, .arg_names = t_only,
};
DLA__OP_REGISTER(cast_op, sizeof(cast_attrs));

DLA_API dla_tensor *dla_cast(dla_tensor *t, dla_dtype dtype)
{
    if (cast_check(dtype) != DLA_OK)
        return dla__return(dla__error_tensor());
    cast_attrs a = {dtype};
    return dla__apply(&cast_op, &a, sizeof a, 1, &t);
}

/*
 * create.c - making tensors: from host data, constants and random numbers.
 *
 * Random numbers come from the thread's Philox stream: the device's random
 * kernel (ABI 1.3) draws them in place, or the host draws them and uploads
 * where the device has none; the stream advances by the blocks used, so the
 * same seed gives the same tensors, to the bit, on every device.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/format.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/philox.h"
#include "core/tensor.h"

#include <string.h>

static _Thread_local uint64_t rng_seed, rng_counter;

DLA_API void dla_rng_seed(uint64_t seed)
{
    rng_seed = seed;
    rng_counter = 0;
}

DLA_API void dla_rng_get(uint64_t *seed, uint64_t *counter)
{
    if (seed)
        *seed = rng_seed;
    if (counter)
        *counter = rng_counter;
}

DLA_API void dla_rng_set(uint64_t seed, uint64_t counter)
{
    rng_seed = seed;
    rng_counter = counter;
}

/* Validates (dtype, format, dims) and allocates. *fmt_out says whether the
 * caller's data must be permuted into canonical order. */
static dla_tensor *make(const char *op, dla_dtype dtype, const char *format, int ndims,
                        const int64_t *dims, dla__format *fmt_out)
{
    if ((unsigned)dtype >= DLA_DTYPE_COUNT) {
        dla__fail(DLA_ERR_DTYPE, "%s: argument dtype: %d is not a dla_dtype", op, (int)dtype);
        return NULL;
    }
    if (ndims < 0 || ndims > DLA_MAX_DIMS) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument ndims: %d is outside 0..%d", op, ndims,
                  DLA_MAX_DIMS);
        return NULL;
    }
    /* Named apart: a NULL dims read "argument ndims: 2 is outside 0..8". */
    if (ndims && !dims) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims is NULL, for ndims %d", op, ndims);
        return NULL;
    }
    for (int i = 0; i < ndims; i++)
        if (dims[i] < 0) {
            dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument dims: dim %d is %lld (negative)", op,
                      i + 1, (long long)dims[i]);
            return NULL;
        }
    int64_t numel; /* dims whose count overflows are refused here, by name */
    if (dla__numel_checked(op, ndims, dims, dtype, &numel) != DLA_OK)
        return NULL;
    int tndims;
    if (dla__format_parse(op, format, ndims, dims, fmt_out, &tndims) != DLA_OK)
        return NULL;
    int64_t full[DLA_MAX_DIMS], canon[DLA_MAX_DIMS];
    for (int i = 0; i < tndims; i++)
        full[i] = i < ndims ? dims[i] : 1;
    for (int i = 0; i < tndims; i++)
        canon[i] = fmt_out->nlabels ? full[fmt_out->perm[i]] : full[i];
    dla_device *dev = dla__current_device(op);
    if (!dev)
        return NULL;
    return dla__tensor_alloc(op, dev, dtype, fmt_out->canon, tndims, canon);
}

static dla_tensor *make_filled(const char *op, double value, dla_dtype dtype, const char *format,
                               int ndims, const int64_t *dims)
{
    dla__format f;
    dla_tensor *t = make(op, dtype, format, ndims, dims, &f);
    if (!t)
        return dla__return(dla__error_tensor());
    dla_view v;
    dla__view_of(t, &v);
    if (dla__k_fill(t->storage->device, &v, value) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(t);
        return dla__return(dla__error_tensor());
    }
    return dla__return(t);
}

DLA_API dla_tensor *dla_zeros(dla_dtype dtype, const char *format, int ndims, const int64_t *dims)
{
    return make_filled("dla_zeros", 0.0, dtype, format, ndims, dims);
}

DLA_API dla_tensor *dla_ones(dla_dtype dtype, const char *format, int ndims, const int64_t *dims)
{
    return make_filled("dla_ones", 1.0, dtype, format, ndims, dims);
}

DLA_API dla_tensor *dla_full(double value, dla_dtype dtype, const char *format, int ndims,
                             const int64_t *dims)
{
    return make_filled("dla_full", value, dtype, format, ndims, dims);
}

/* Uploads dense host data laid out in the caller's dim order into t, whose
 * dims are in canonical order (f.perm maps them back). */
static dla_status upload(const char *op, dla_tensor *t, const dla__format *f, const void *data)
{
    dla_device *dev = t->storage->device;
    size_t bytes = t->storage->bytes;
    if (f->is_canonical)
        return dla__k_upload(dev, t->storage->mem, 0, data, bytes);
    /* Upload as given, then gather into canonical order with one strided
     * copy: view the staging buffer with the caller's strides permuted. */
    int64_t user_dims[DLA_MAX_DIMS], user_strides[DLA_MAX_DIMS];
    for (int i = 0; i < t->ndims; i++)
        user_dims[f->perm[i]] = t->dims[i];
    dla__dense_strides(t->ndims, user_dims, user_strides);
    dla_tensor *stage = dla__tensor_alloc(op, dev, t->dtype, "", t->ndims, user_dims);
    if (!stage)
        return dla_last_status();
    dla_status st = dla__k_upload(dev, stage->storage->mem, 0, data, bytes);
    if (st == DLA_OK) {
        dla_view y, x;
        dla__view_of(t, &y);
        dla__view_of(stage, &x);
        for (int i = 0; i < t->ndims; i++) {
            x.dims[i] = t->dims[i];
            x.strides[i] = user_strides[f->perm[i]];
        }
        st = dla__k_copy(dev, &y, &x);
    }
    dla_tensor_release(stage);
    return st;
}

DLA_API dla_tensor *dla_tensor_from_host(const void *data, dla_dtype dtype, const char *format,
                                         int ndims, const int64_t *dims)
{
    static const char op[] = "dla_tensor_from_host";
    if (!data && dla__numel(ndims > 0 && dims ? ndims : 0, dims) != 0)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument data is NULL", op);
    dla__format f;
    dla_tensor *t = make(op, dtype, format, ndims, dims, &f);
    if (!t)
        return dla__return(dla__error_tensor());
    /* Logical values are 0 and 1 (MATLAB's logical of any nonzero is
     * true): bytes 2 or 255 would cast to 2 or 255 and compare unequal to
     * another true. */
    unsigned char *truth = NULL;
    const size_t n = (size_t)dla__numel(t->ndims, t->dims);
    if (dtype == DLA_BOOL && n) {
        truth = dla__malloc(n);
        if (!truth) {
            dla_tensor_release(t);
            return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes of logical values", op, n);
        }
        for (size_t i = 0; i < n; i++)
            truth[i] = ((const unsigned char *)data)[i] != 0;
        data = truth;
    }
    dla_status st = t->storage->bytes ? upload(op, t, &f, data) : DLA_OK;
    dla__free(truth);
    if (st != DLA_OK) {
        dla_tensor_release(t);
        return dla__return(dla__error_tensor());
    }
    return dla__return(t);
}

/* Fills t (dense, fresh) from the thread's stream and moves the stream on
 * past the blocks used; the device's random kernel does it where there is
 * one (launch.c), so a planned replay draws on the device. */
static dla_status draw(dla_tensor *t, int normal)
{
    int64_t n = dla__numel(t->ndims, t->dims);
    if (n == 0)
        return DLA_OK;
    dla_random_args a = {.struct_size = sizeof a,
                         .dist = normal ? DLA_RANDOM_NORMAL : DLA_RANDOM_UNIFORM,
                         .seed = rng_seed,
                         .counter = rng_counter};
    dla__view_of(t, &a.y);
    dla_status st = dla__k_random(t->storage->device, &a);
    if (st == DLA_OK)
        rng_counter += dla__philox_blocks(normal, t->dtype == DLA_F64, n);
    return st;
}

static dla_tensor *make_random(const char *op, int normal, dla_dtype dtype, const char *format,
                               int ndims, const int64_t *dims)
{
    if (dtype != DLA_F32 && dtype != DLA_F64)
        return dla__error(DLA_ERR_DTYPE, "%s: argument dtype: %s; random numbers need single or double",
                          op, dla_dtype_name(dtype));
    dla__format f;
    dla_tensor *t = make(op, dtype, format, ndims, dims, &f);
    if (!t)
        return dla__return(dla__error_tensor());
    /* Numbers are drawn in canonical order: the tensor's own layout. */
    if (draw(t, normal) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(t);
        return dla__return(dla__error_tensor());
    }
    return dla__return(t);
}

DLA_API dla_tensor *dla_rand(dla_dtype dtype, const char *format, int ndims, const int64_t *dims)
{
    return make_random("dla_rand", 0, dtype, format, ndims, dims);
}

DLA_API dla_tensor *dla_randn(dla_dtype dtype, const char *format, int ndims, const int64_t *dims)
{
    return make_random("dla_randn", 1, dtype, format, ndims, dims);
}

/* ------------------------------------------------------------ rand like x */

/* Draws from the thread's stream at forward time, not at call time, so a
 * trace replaying this op draws new numbers each time: an RNG slot. */
typedef struct rand_like_attrs {
    int normal;
} rand_like_attrs;

/* x must be single or double: the numbers are drawn in its dtype. */
static dla_status rand_like_check(const char *op, dla_dtype dtype)
{
    if (dtype != DLA_F32 && dtype != DLA_F64)
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; random numbers need single or double",
                         op, dla_dtype_name(dtype));
    return DLA_OK;
}

static dla_status rand_like_forward(const void *attrs, dla_tensor *const *in, int nin,
                                    dla_tensor **out, dla_tensor **saved)
{
    int normal = ((const rand_like_attrs *)attrs)->normal;
    const char *op = normal ? "dla_randn_like" : "dla_rand_like";
    dla_tensor *x = in[0];
    dla_status st = rand_like_check(op, x->dtype);
    if (st != DLA_OK)
        return st;
    dla_tensor *t = dla__tensor_alloc(op, x->storage->device, x->dtype, x->format, x->ndims, x->dims);
    if (!t)
        return dla_last_status();
    st = draw(t, normal);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(t);
        return st;
    }
    out[0] = t;
    return DLA_OK;
}

/* normal picks the distribution (dla_rand_like 0, dla_randn_like 1);
 * x's shape. */
static dla_status rand_like_infer(const void *attrs, int nin, const dla__vshape *in,
                                  dla__vshape *out)
{
    (void)nin;
    int normal = ((const rand_like_attrs *)attrs)->normal;
    if (normal != 0 && normal != 1)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "rand_like: attribute normal is %d, no flag",
                         normal);
    out[0] = in[0];
    return rand_like_check(normal ? "dla_randn_like" : "dla_rand_like", in[0].dtype);
}

static const dla__op rand_like_op = {
    .name = "rand_like", .nin = 1, .nout = 1, .forward = rand_like_forward, .random = 1,
    .constant = 1,
    .infer = rand_like_infer,
};
DLA__OP_REGISTER(rand_like_op, sizeof(rand_like_attrs));

DLA_API dla_tensor *dla_rand_like(dla_tensor *x)
{
    rand_like_attrs a = {0};
    return dla__apply(&rand_like_op, &a, sizeof a, 1, &x);
}

DLA_API dla_tensor *dla_randn_like(dla_tensor *x)
{
    rand_like_attrs a = {1};
    return dla__apply(&rand_like_op, &a, sizeof a, 1, &x);
}

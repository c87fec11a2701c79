/*
 * tensor.c - tensor lifecycle, error tensors and queries.
 *
 * Sticky errors (cairo's pattern): a failing op returns a tensor whose
 * status is the error; every op checks its inputs' status first and returns
 * the same handle. The out-of-memory tensor is static, so reporting an
 * allocation failure never needs an allocation.
 */
#include "core/tensor.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/handle.h"
#include "core/hooks.h"
#include "core/op.h"
#include "core/scope.h"

#include <stdio.h>
#include <string.h>

static atomic_uint_fast64_t serials;

uint64_t dla__tensor_serial_next(void) { return atomic_load(&serials); }

static dla_tensor oom_tensor = {
    .refcount = -1,
    .magic = DLA__HANDLE_TENSOR,
    .status = DLA_ERR_OUT_OF_MEMORY,
    .message = (char *)"out of memory",
};

dla_tensor *dla__error_tensor(void)
{
    dla_status st = dla_last_status();
    if (st == DLA_OK)
        st = DLA_ERR_STATE;
    /* Out of memory too carries its message (the op, the bytes, the dims)
     * when the few bytes for it can be had: the refused request is as a
     * rule a large one (a 4 TiB result), and the tensor said only "out of
     * memory". The static tensor is for when they cannot. */
    dla_tensor *t = dla__calloc(1, sizeof *t);
    char *msg = t ? dla__strdup(dla_last_error()) : NULL;
    if (!msg) {
        dla__free(t);
        return &oom_tensor;
    }
    atomic_init(&t->refcount, 1);
    t->magic = DLA__HANDLE_TENSOR;
    t->status = st;
    t->message = msg;
    return t;
}

dla_tensor *dla__error(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return dla__return(dla__error_tensor());
}

dla_tensor *dla__return(dla_tensor *t)
{
    if (!dla__scope_active() || atomic_load(&t->refcount) < 0)
        return t;
    if (dla__scope_adopt(t) != DLA_OK) {
        dla_tensor_release(t);
        return &oom_tensor;
    }
    return t;
}

/* What a released tensor reads as (handle checks, below). */
static const char released_message[] =
    "use of a released tensor: an argument was released (dla_tensor_release, or the end of "
    "the scope that owned it) before this call";

dla_tensor *dla__pass_arg(const char *op, const char *arg, dla_tensor *t)
{
    if (!t) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op, arg);
        return dla__return(dla__error_tensor());
    }
    return dla__pass_error(t);
}

dla_tensor *dla__pass_error(dla_tensor *t)
{
    if (!t) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "tensor argument is NULL");
        return dla__return(dla__error_tensor());
    }
    if (t->magic != DLA__HANDLE_TENSOR) {
        /* A released handle reads as an error tensor (poisoned), but it is
         * not the caller's to hand on: a fresh error tensor says what
         * happened. */
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s", released_message);
        return dla__return(dla__error_tensor());
    }
    /* Re-state the error for this thread: the caller reads dla_last_error
     * after a chain of ops, and it must describe the tensor it holds. */
    dla__fail(t->status, "%s", t->message ? t->message : dla_status_str(t->status));
    return dla__return(dla_tensor_retain(t));
}

void dla__dense_strides(int ndims, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = 0; i < ndims; i++) {
        strides[i] = s;
        /* Saturated, not wrapped: dims whose count overflows are refused
         * by dla__numel_checked, and signed overflow is undefined. */
        if (__builtin_mul_overflow(s, dims[i], &s))
            s = INT64_MAX;
    }
}

int64_t dla__numel(int ndims, const int64_t *dims)
{
    /* Dims that made a tensor passed dla__numel_checked, but an empty one
     * may hold others whose product alone overflows (2^32 x 2^32 x 0). */
    for (int i = 0; i < ndims; i++)
        if (dims[i] == 0)
            return 0;
    int64_t n = 1;
    for (int i = 0; i < ndims; i++)
        n *= dims[i];
    return n;
}

/* ------------------------------------------- element counts that overflow
 * (issue 17): every new tensor's dims go through dla__numel_checked, so a
 * count past int64 is an error naming the op and the dims, never a wrapped
 * count (0, or negative) that a later kernel reads past. */

dla_status dla__numel_checked(const char *op, int ndims, const int64_t *dims, dla_dtype dtype,
                              int64_t *numel)
{
    char buf[DLA__DIMS_BUF];
    int64_t n = 1;
    int over = 0;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: dims %s: dim %d is negative", op,
                             dla__dims_str(buf, sizeof buf, ndims, dims), i + 1);
        if (dims[i] == 0) {
            n = 0; /* zero elements, however large the other dims */
            over = 0;
            break;
        }
        if (!over && __builtin_mul_overflow(n, dims[i], &n))
            over = 1;
    }
    if (over)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: dims %s: too many elements (more than "
                         "%lld, the most an int64 count holds)", op,
                         dla__dims_str(buf, sizeof buf, ndims, dims), (long long)INT64_MAX);
    size_t elsize = dla_dtype_size(dtype);
    if (elsize && (uint64_t)n > SIZE_MAX / elsize)
        /* Not DLA_ERR_OUT_OF_MEMORY: that status reports through the static
         * tensor, whose message could not name the dims. */
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: dims %s: %lld elements of %s are more "
                         "bytes than memory can address", op,
                         dla__dims_str(buf, sizeof buf, ndims, dims), (long long)n,
                         dla_dtype_name(dtype));
    *numel = n;
    return DLA_OK;
}

/* ------------------------------------------------------------------------ */

int dla__is_dense(const dla_tensor *t)
{
    int64_t s = 1;
    for (int i = 0; i < t->ndims; i++) {
        if (t->dims[i] != 1 && t->strides[i] != s)
            return 0;
        s *= t->dims[i];
    }
    return 1;
}

int dla__tensors_overlap(const dla_tensor *a, const dla_tensor *b)
{
    if (!a->storage || a->storage != b->storage || dla__numel(a->ndims, a->dims) == 0 ||
        dla__numel(b->ndims, b->dims) == 0)
        return 0;
    size_t alo, ahi, blo, bhi;
    dla__tensor_span(a, &alo, &ahi);
    dla__tensor_span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

void dla__tensor_span(const dla_tensor *t, size_t *lo, size_t *hi)
{
    int64_t last = t->offset;
    for (int i = 0; i < t->ndims; i++)
        if (t->dims[i] > 0)
            last += (t->dims[i] - 1) * t->strides[i];
    size_t es = dla_dtype_size(t->dtype);
    *lo = (size_t)t->offset * es;
    *hi = ((size_t)last + 1) * es;
}

void dla__view_of(const dla_tensor *t, dla_view *v)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->mem = t->storage ? t->storage->mem : NULL;
    v->dtype = t->dtype;
    v->ndims = t->ndims;
    v->offset = t->offset;
    for (int i = 0; i < t->ndims; i++) {
        v->dims[i] = t->dims[i];
        v->strides[i] = t->strides[i];
    }
}

const char *dla__tensor_dims_str(const dla_tensor *t, char *buf, size_t size)
{
    return dla__dims_str(buf, size, t->ndims, t->dims);
}

dla_device *dla__current_device(const char *op)
{
    dla_device *dev = dla_device_current();
    if (!dev) {
        char why[512];
        snprintf(why, sizeof why, "%s", dla_last_error());
        dla__fail(DLA_ERR_NO_DEVICE, "%s: no device to create the tensor on: %s", op, why);
    }
    return dev;
}

dla_tensor *dla__tensor_alloc(const char *op, dla_device *dev, dla_dtype dtype, const char *format,
                              int ndims, const int64_t *dims)
{
    int64_t numel;
    if (dla__numel_checked(op, ndims, dims, dtype, &numel) != DLA_OK)
        return NULL;
    size_t elsize = dla_dtype_size(dtype);
    dla_tensor *t = dla__calloc(1, sizeof *t);
    dla__storage *st = dla__calloc(1, sizeof *st);
    if (!t || !st) {
        dla__free(t);
        dla__free(st);
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot allocate the tensor header", op);
        return NULL;
    }
    st->bytes = (size_t)numel * elsize;
    st->device = dev;
    /* Zero-size tensors get a one-byte block so every tensor has memory. */
    dla_status s = dev->table->mem_alloc(dev->ctx, st->bytes ? st->bytes : 1, &st->mem);
    if (s != DLA_OK) {
        char buf[DLA__DIMS_BUF];
        char why[512];
        snprintf(why, sizeof why, "%s", dla_last_error());
        dla__fail(s, "%s: cannot allocate %zu bytes for %s %s on %s: %s", op, st->bytes,
                  dla__dims_str(buf, sizeof buf, ndims, dims), dla_dtype_name(dtype), dev->name,
                  why);
        dla__free(t);
        dla__free(st);
        return NULL;
    }
    atomic_init(&st->refcount, 1);
    if (dla__hooks_hear(DLA__HEAR_STORAGE))
        dla__hooks_storage_made(st);
    atomic_init(&t->refcount, 1);
    t->magic = DLA__HANDLE_TENSOR;
    t->serial = atomic_fetch_add(&serials, 1);
    t->status = DLA_OK;
    t->dtype = dtype;
    t->ndims = ndims;
    memcpy(t->dims, dims, (size_t)ndims * sizeof *dims);
    dla__dense_strides(ndims, t->dims, t->strides);
    /* A plain copy: this runs for every op result, printf would show. */
    for (size_t i = 0; format && i < DLA_MAX_DIMS && format[i]; i++)
        t->format[i] = format[i];
    t->storage = st;
    return t;
}

/* The storage of every header dla__tensor_of_shape makes: no device, no
 * memory. Nothing writes it (the headers are immortal). */
static dla__storage no_storage;

void dla__tensor_of_shape(const dla__vshape *s, dla_tensor *t)
{
    memset(t, 0, sizeof *t);
    atomic_init(&t->refcount, -1);
    t->magic = DLA__HANDLE_TENSOR;
    t->status = DLA_OK;
    t->dtype = s->dtype;
    t->ndims = s->ndims;
    memcpy(t->dims, s->dims, sizeof t->dims);
    dla__dense_strides(s->ndims, t->dims, t->strides);
    memcpy(t->format, s->format, sizeof t->format);
    t->format[DLA_MAX_DIMS] = '\0';
    t->storage = &no_storage;
}

dla_tensor *dla__tensor_view(const char *op, const dla_tensor *t)
{
    dla_tensor *v = dla__calloc(1, sizeof *v);
    if (!v) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot allocate the view header", op);
        return NULL;
    }
    /* Field by field, not `*v = *t`: other threads may retain or release
     * t meanwhile, and a struct copy would read its reference counts
     * without atomics (a data race, issue 17). The counts start afresh. */
    atomic_init(&v->refcount, 1);
    atomic_init(&v->scoped, 0);
    v->magic = DLA__HANDLE_TENSOR;
    v->status = t->status;
    v->message = NULL;
    v->dtype = t->dtype;
    v->ndims = t->ndims;
    memcpy(v->dims, t->dims, sizeof v->dims);
    memcpy(v->strides, t->strides, sizeof v->strides);
    v->offset = t->offset;
    memcpy(v->format, t->format, sizeof v->format);
    v->storage = t->storage;
    /* Its own serial: a trace recorder tells headers apart by it. */
    v->serial = atomic_fetch_add(&serials, 1);
    atomic_fetch_add(&t->storage->refcount, 1);
    return v;
}

dla__storage *dla__storage_alloc(const char *op, dla_device *dev, size_t bytes)
{
    dla__storage *st = dla__calloc(1, sizeof *st);
    if (!st) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot allocate a storage header", op);
        return NULL;
    }
    st->bytes = bytes;
    st->device = dev;
    dla_status s = dev->table->mem_alloc(dev->ctx, bytes ? bytes : 1, &st->mem);
    if (s != DLA_OK) {
        dla__free(st);
        char why[512];
        snprintf(why, sizeof why, "%s", dla_last_error());
        dla__fail(s, "%s: cannot allocate %zu bytes on %s: %s", op, bytes, dev->name, why);
        return NULL;
    }
    atomic_init(&st->refcount, 1);
    return st;
}

void dla__storage_release(dla__storage *st)
{
    if (!st || atomic_fetch_sub(&st->refcount, 1) != 1)
        return;
    if (dla__hooks_hear(DLA__HEAR_STORAGE))
        dla__hooks_storage_freed(st);
    st->device->table->mem_free(st->device->ctx, st->mem);
    dla__free(st);
}

dla_tensor *dla__tensor_on_storage(const char *op, dla__storage *st, dla_dtype dtype, int ndims,
                                   const int64_t *dims, const int64_t *strides, int64_t offset,
                                   const char *format)
{
    dla_tensor *t = dla__calloc(1, sizeof *t);
    if (!t) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot allocate the tensor header", op);
        return NULL;
    }
    atomic_init(&t->refcount, 1);
    t->magic = DLA__HANDLE_TENSOR;
    t->serial = atomic_fetch_add(&serials, 1);
    t->dtype = dtype;
    t->ndims = ndims;
    memcpy(t->dims, dims, (size_t)ndims * sizeof *dims);
    memcpy(t->strides, strides, (size_t)ndims * sizeof *strides);
    t->offset = offset;
    memcpy(t->format, format, sizeof t->format);
    atomic_fetch_add(&st->refcount, 1);
    t->storage = st;
    return t;
}

/* ------------------------------------------------------------ handle checks
 * (docs/checks.md). A released header is poisoned and parked in the
 * quarantine (core/handle.c) instead of freed: its magic word reads dead,
 * and it reads as an error tensor, so every op's status check (sticky
 * errors) refuses it with no check of its own on the fast path. */

int dla__tensor_check(const dla_tensor *t, const char *op)
{
    if (t->magic == DLA__HANDLE_TENSOR)
        return 1;
    if (t->magic == DLA__HANDLE_DEAD)
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: the tensor %p was released already (released "
                    "twice, used after release, or used after the scope that owned it ended)",
                    op, (const void *)t);
    else
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is not a tensor handle (a pointer to "
                    "something else, or to a tensor released long ago)", op, (const void *)t);
    return 0;
}

/* Drops one reference; the last one frees the storage and parks the header. */
static void drop(dla_tensor *t)
{
    if (atomic_fetch_sub(&t->refcount, 1) != 1)
        return;
    if (t->storage)
        dla__storage_release(t->storage);
    dla__free(t->message);
    t->magic = DLA__HANDLE_DEAD;
    t->status = DLA_ERR_INVALID_ARGUMENT;
    t->message = (char *)released_message;
    t->storage = NULL;
    t->ndims = 0;
    dla__quarantine(DLA__RING_TENSORS, t);
}

void dla__tensor_scope_took(dla_tensor *t) { atomic_fetch_add(&t->scoped, 1); }
void dla__tensor_scope_gave(dla_tensor *t) { atomic_fetch_sub(&t->scoped, 1); }

void dla__tensor_scope_release(dla_tensor *t)
{
    if (!dla__tensor_check(t, "dla_scope_end"))
        return;
    atomic_fetch_sub(&t->scoped, 1);
    drop(t);
}

DLA_API dla_tensor *dla_tensor_retain(dla_tensor *t)
{
    if (!t || !dla__tensor_check(t, "dla_tensor_retain"))
        return t;
    if (atomic_load(&t->refcount) >= 0)
        atomic_fetch_add(&t->refcount, 1);
    return t;
}

DLA_API void dla_tensor_release(dla_tensor *t)
{
    if (!t || !dla__tensor_check(t, "dla_tensor_release"))
        return;
    int refs = atomic_load(&t->refcount);
    if (refs < 0)
        return;
    if (refs <= atomic_load(&t->scoped)) {
        /* Every reference left is a scope's: releasing one here would leave
         * the scope releasing a freed tensor at its end. */
        char buf[DLA__DIMS_BUF];
        const char *what =
            t->status == DLA_OK ? dla__tensor_dims_str(t, buf, sizeof buf) : "error tensor";
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "dla_tensor_release: the tensor %p (%s) belongs to "
                    "a scope, which releases it at dla_scope_end; dla_keep() it first to release "
                    "it yourself", (const void *)t, what);
        return;
    }
    drop(t);
}

/* ------------------------------------------------------------------------ */

/* ---------------------------------------------------------------- queries */

DLA_API dla_status dla_tensor_status(const dla_tensor *t)
{
    return t ? t->status : DLA_ERR_INVALID_ARGUMENT;
}

DLA_API const char *dla_tensor_error(const dla_tensor *t)
{
    if (!t)
        return "tensor is NULL";
    return t->status == DLA_OK ? "" : t->message;
}

DLA_API dla_dtype dla_tensor_dtype(const dla_tensor *t) { return t ? t->dtype : DLA_F32; }
DLA_API int dla_tensor_ndims(const dla_tensor *t) { return t && t->status == DLA_OK ? t->ndims : 0; }

DLA_API int64_t dla_tensor_dim(const dla_tensor *t, int dim)
{
    if (!t || t->status != DLA_OK || dim < 1)
        return 0;
    return dim <= t->ndims ? t->dims[dim - 1] : 1;
}

DLA_API int dla_tensor_dims(const dla_tensor *t, int64_t *dims)
{
    if (!t || t->status != DLA_OK)
        return 0;
    /* A NULL dims asks the count alone; it was a memcpy to NULL, a crash. */
    if (dims)
        memcpy(dims, t->dims, (size_t)t->ndims * sizeof *dims);
    return t->ndims;
}

DLA_API int64_t dla_tensor_numel(const dla_tensor *t)
{
    return t && t->status == DLA_OK ? dla__numel(t->ndims, t->dims) : 0;
}

DLA_API const char *dla_tensor_format(const dla_tensor *t)
{
    return t && t->status == DLA_OK ? t->format : "";
}

DLA_API int dla_tensor_find_dim(const dla_tensor *t, char label)
{
    if (!t || t->status != DLA_OK)
        return 0;
    const char *p = strchr(t->format, label);
    return p && label ? (int)(p - t->format) + 1 : 0;
}

DLA_API dla_device *dla_tensor_device(const dla_tensor *t)
{
    return t && t->storage ? t->storage->device : NULL;
}

DLA_API int dla_tensor_is_contiguous(const dla_tensor *t)
{
    return t && t->status == DLA_OK && dla__is_dense(t);
}

DLA_API int dla_tensor_describe(const dla_tensor *t, char *buf, size_t size)
{
    if (!t)
        return snprintf(buf, size, "(null tensor)");
    if (t->status != DLA_OK)
        return snprintf(buf, size, "error tensor (%s): %s", dla_status_str(t->status),
                        t->message);
    char dims[DLA__DIMS_BUF];
    return snprintf(buf, size, "%s %s%s%s on %s", dla__tensor_dims_str(t, dims, sizeof dims),
                    dla_dtype_name(t->dtype), t->format[0] ? " " : "", t->format,
                    t->storage->device->name);
}

/* ----------------------------------------------------------------- dtypes */

#define DLA__DTYPE_NAME(name, str, size) str,
#define DLA__DTYPE_SIZE(name, str, size) size,
static const char *const dtype_names[] = {DLA_DTYPE_LIST(DLA__DTYPE_NAME)};
static const size_t dtype_sizes[] = {DLA_DTYPE_LIST(DLA__DTYPE_SIZE)};
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == DLA_DTYPE_COUNT,
               "dtype names out of step with DLA_DTYPE_LIST");

DLA_API const char *dla_dtype_name(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_names[dtype] : "unknown";
}

DLA_API size_t dla_dtype_size(dla_dtype dtype)
{
    return (unsigned)dtype < DLA_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

DLA_API dla_tensor *dla_error_tensor(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status == DLA_OK ? DLA_ERR_STATE : status, fmt, ap);
    va_end(ap);
    return dla__return(dla__error_tensor());
}

DLA_API dla_tensor *dla_scope_adopt(dla_tensor *t) { return t ? dla__return(t) : NULL; }

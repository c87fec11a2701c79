/*
 * tensor.h - the tensor handle and its storage, as the core sees them.
 *
 * A tensor is a view (dims, strides, offset, format) on a reference-counted
 * storage (one device allocation). Error tensors carry a status and message
 * and no storage; ops hand them through unchanged (sticky errors).
 */
#ifndef DLA_CORE_TENSOR_H
#define DLA_CORE_TENSOR_H

#include "core/device.h"

#include <dlaccel.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct dla__storage {
    atomic_int refcount;
    dla_device *device;
    dla_mem mem;
    size_t bytes;
    /* For dla_accelerate's stale-constant check (core/accel.c): bumped by
     * every write into this storage after it was made (dla__storage_written),
     * and the number of private headers traces keep on it as constants. */
    atomic_uint_fast64_t writes;
    atomic_int trace_views;
} dla__storage;

/* Call on any path that writes into an existing storage (in place), so a
 * trace that baked it as a constant sees the change. */
static inline void dla__storage_written(dla__storage *st)
{
    atomic_fetch_add_explicit(&st->writes, 1, memory_order_relaxed);
}

struct dla_tensor {
    atomic_int refcount; /* < 0: immortal (the static out-of-memory tensor) */
    /* Handle checks (core/handle.h, docs/checks.md): DLA__HANDLE_TENSOR
     * while live, DLA__HANDLE_DEAD once released; and how many of the
     * references are held by scopes, so a release of one a scope owns is
     * refused instead of leaving the scope a dangling pointer. */
    uint32_t magic;
    atomic_int scoped;
    dla_status status;
    char *message; /* error tensors only */
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    int64_t strides[DLA_MAX_DIMS]; /* elements */
    int64_t offset;                /* elements */
    char format[DLA_MAX_DIMS + 1];
    dla__storage *storage;
    /* When this header was made (a per-process counter; views get their
     * own): a trace tells the constants made inside the recorded function
     * from those it was given, and its recorder tells a tensor from a later
     * one at the same address. */
    uint64_t serial;
    /* A trace's own header on a tensor made before its recording
     * (trace_record.c): a replay on a tape reads it in place of the
     * caller's tensor, which that tape never sees, so dla_gradient
     * refuses to differentiate through it (gradient.c). */
    unsigned char trace_outer;
};

/* Nonzero when a and b have the same dims but for trailing ones (a 10x1
 * and a 10 are the same data). */
static inline int dla__same_but_trailing_ones(const dla_tensor *a, const dla_tensor *b)
{
    const int n = a->ndims > b->ndims ? a->ndims : b->ndims;
    for (int i = 0; i < n; i++)
        if ((i < a->ndims ? a->dims[i] : 1) != (i < b->ndims ? b->dims[i] : 1))
            return 0;
    return 1;
}

/* The serial the next tensor will get. */
uint64_t dla__tensor_serial_next(void);

/* An error tensor for the thread's last error (status and message), owned
 * by the caller, or the static out-of-memory tensor when even that fails. */
dla_tensor *dla__error_tensor(void);
/* Records the failure and returns its error tensor: the one-line exit of an
 * op, `return dla__error(DLA_ERR_SHAPE, "dla_add: ...")`. */
dla_tensor *dla__error(dla_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A new dense tensor on dev with uninitialized storage (dims past ndims
 * are not used; format "" or canonical labels, already validated). */
dla_tensor *dla__tensor_alloc(const char *op, dla_device *dev, dla_dtype dtype, const char *format,
                              int ndims, const int64_t *dims);
/* A view header sharing t's storage (storage retained), dims/strides to be
 * filled by the caller. NULL on out of memory (message set). */
dla_tensor *dla__tensor_view(const char *op, const dla_tensor *t);

/* A storage of bytes on dev outside any tensor (reference count 1): the
 * replay plans' arenas and output buffers. NULL with the message set. */
dla__storage *dla__storage_alloc(const char *op, dla_device *dev, size_t bytes);
/* Drops a reference; the memory goes back to the device with the last. */
void dla__storage_release(dla__storage *st);
/* A tensor header on st (a new reference to it) with this layout; format
 * is DLA_MAX_DIMS + 1 bytes. NULL on out of memory (message set). */
dla_tensor *dla__tensor_on_storage(const char *op, dla__storage *st, dla_dtype dtype, int ndims,
                                   const int64_t *dims, const int64_t *strides, int64_t offset,
                                   const char *format);

/* Column-major dense strides for dims. */
void dla__dense_strides(int ndims, const int64_t *dims, int64_t *strides);
int64_t dla__numel(int ndims, const int64_t *dims);
int dla__is_dense(const dla_tensor *t);
/* The bytes of t's storage its elements lie in (strides >= 0): [*lo, *hi). */
void dla__tensor_span(const dla_tensor *t, size_t *lo, size_t *hi);
/* Nonzero when a and b, neither empty, have elements in the same span of
 * one storage (interleaved views count: the test is on the spans). */
int dla__tensors_overlap(const dla_tensor *a, const dla_tensor *b);
/* Fills a kernel view of t. */
void dla__view_of(const dla_tensor *t, dla_view *v);
/* "28x28x1x128" of t into buf. */
const char *dla__tensor_dims_str(const dla_tensor *t, char *buf, size_t size);

/* Hands a new tensor to the caller: adopted by the innermost scope when one
 * is open. Returns t, or the out-of-memory tensor if the scope cannot grow
 * (t is released then). Every public op returns through this. */
dla_tensor *dla__return(dla_tensor *t);
/* For an op given an error tensor: the same handle, with a reference for the
 * caller (through dla__return). */
dla_tensor *dla__pass_error(dla_tensor *t);
/* The same for argument arg of public function op, which may be NULL:
 * then a new error tensor, "op: argument arg is NULL". */
dla_tensor *dla__pass_arg(const char *op, const char *arg, dla_tensor *t);

/* Handle checks (docs/checks.md). */
/* Nonzero when t is a live tensor; otherwise reports it for op (the
 * thread's last error, and the log) and returns 0. */
int dla__tensor_check(const dla_tensor *t, const char *op);
/* The scope's side of the references (core/scope.c): a scope took one,
 * handed one on to the caller (dla_keep at the outermost scope), or
 * releases its own. */
void dla__tensor_scope_took(dla_tensor *t);
void dla__tensor_scope_gave(dla_tensor *t);
void dla__tensor_scope_release(dla_tensor *t);

/* numel of dims and its size in bytes for dtype, or an error naming op and
 * the dims when either does not fit (int64 elements, size_t bytes). */
dla_status dla__numel_checked(const char *op, int ndims, const int64_t *dims, dla_dtype dtype,
                              int64_t *numel);

/* The device of new tensors, or an error with the reason. */
dla_device *dla__current_device(const char *op);

#endif

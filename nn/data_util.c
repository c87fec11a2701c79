/*
 * data_util.c - memory, errors and host-to-device helpers of the data files.
 *
 * The public API has no door to the allocation hook or to the thread's
 * error message, yet the data pipeline must honour the first (tests refuse
 * the Nth allocation) and report file problems through the second. Until
 * dlaccel.h offers both (a dla_error_set and a dla_malloc family), these
 * few lines reach the core's two functions by name, and nothing else in nn
 * does: this file is the one place to change then.
 */
#include "nn/data_util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The core's allocation door and error setter (core/alloc.h, core/error.h). */
void *dla__malloc(size_t size);
void *dla__realloc(void *ptr, size_t size);
void dla__free(void *ptr);
dla_status dla__failv(dla_status status, const char *fmt, va_list ap);

void *dla__data_malloc(size_t size) { return dla__malloc(size); }

void *dla__data_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = dla__malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *dla__data_realloc(void *ptr, size_t size) { return dla__realloc(ptr, size); }

void dla__data_free(void *ptr) { dla__free(ptr); }

dla_status dla__data_fail(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

const char *dla__data_dims_str(char *buf, int ndims, const int64_t *dims)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndims && at < DLA__DATA_DIMS_BUF; i++)
        at += (size_t)snprintf(buf + at, DLA__DATA_DIMS_BUF - at, "%s%lld", i ? "x" : "",
                               (long long)dims[i]);
    return buf;
}

dla_tensor *dla__data_hold(dla_tensor *t) { return dla_tensor_retain(t); }

dla_tensor *dla__data_deliver(dla_tensor *t)
{
    if (!t || dla_tensor_status(t) != DLA_OK)
        return t;
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(t, dims);
    dla_tensor *v = dla_reshape(t, dla_tensor_format(t), nd, dims);
    dla_tensor_release(t);
    return v;
}

dla_tensor *dla__data_from_host(dla_device *dev, const void *data, dla_dtype dtype,
                                const char *format, int ndims, const int64_t *dims)
{
    dla_device *was = dla_device_current();
    if (dev && dev != was)
        dla_device_set_current(dev);
    dla_scope_begin();
    dla_tensor *t = dla__data_hold(dla_tensor_from_host(data, dtype, format, ndims, dims));
    dla_scope_end();
    if (dev && dev != was)
        dla_device_set_current(was);
    return t;
}

int dla__data_dtype_by_name(const char *name)
{
    for (int d = 0; d < DLA_DTYPE_COUNT; d++)
        if (strcmp(name, dla_dtype_name((dla_dtype)d)) == 0)
            return d;
    return -1;
}

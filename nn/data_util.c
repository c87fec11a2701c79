/*
 * data_util.c - memory, errors and hand-over helpers of the data files.
 *
 * The data pipeline honours the allocation hook (tests refuse the Nth
 * allocation), reports file problems as the thread's last error, and gives
 * the caller's scope the batches a dispatch thread made, all through the
 * public API (dla_malloc, dla_set_error, dla_scope_adopt).
 */
#include "nn/data_util.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void *dla__data_malloc(size_t size) { return dla_malloc(size); }

void *dla__data_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = dla_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *dla__data_realloc(void *ptr, size_t size) { return dla_realloc(ptr, size); }

void dla__data_free(void *ptr) { dla_free(ptr); }

dla_status dla__data_fail(dla_status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dla_set_error(status, "%s", msg);
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

dla_tensor *dla__data_deliver(dla_tensor *t) { return dla_scope_adopt(t); }

dla_status dla__data_deliver_all(int n, dla_tensor **ts, const char *op)
{
    dla_status st = DLA_OK;
    for (int i = 0; i < n; i++) {
        ts[i] = dla__data_deliver(ts[i]);
        if (ts[i] && dla_tensor_status(ts[i]) != DLA_OK && st == DLA_OK)
            st = dla__data_fail(dla_tensor_status(ts[i]), "%s: %s", op,
                                dla_tensor_error(ts[i]));
    }
    if (st != DLA_OK)
        for (int i = 0; i < n; i++)
            ts[i] = NULL;
    return st;
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

char *dla__data_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = dla__data_malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

int dla__data_path_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

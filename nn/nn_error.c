/*
 * nn_error.c - errors and host memory for nn/, through the public API:
 * nn reports its own failures (a layer's bad option, a corrupt network
 * file) as the library's functions do, as the thread's last error and as
 * error tensors, and allocates through the installed hook, so a test's
 * counting allocator sees and can refuse nn's blocks too.
 */
#include "nn/nn.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

dla_status dla__nn_fail(dla_status status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dla_set_error(status, "%s", msg);
}

dla_tensor *dla__nn_error_tensor(void)
{
    /* Copied first: the message lives in the buffer the call rewrites. */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    dla_status st = dla_last_status();
    return dla_error_tensor(st != DLA_OK ? st : DLA_ERR_STATE, "%s", msg);
}

dla_tensor *dla__nn_return(dla_tensor *t) { return dla_scope_adopt(t); }

void *dla__nn_malloc(size_t size) { return dla_malloc(size); }

void *dla__nn_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    void *p = dla_malloc(count * size);
    if (p)
        memset(p, 0, count * size);
    return p;
}

void *dla__nn_realloc(void *p, size_t size) { return dla_realloc(p, size); }
void dla__nn_free(void *p) { dla_free(p); }

dla_device *dla__nn_device_use(dla_device *dev)
{
    dla_device *prev = dla_device_current();
    if (dev && dev != prev)
        dla_device_set_current(dev);
    return prev;
}

void dla__nn_device_restore(dla_device *prev)
{
    if (prev && prev != dla_device_current())
        dla_device_set_current(prev);
}

int dla__nn_folder_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    const size_t n = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    if (n >= size)
        return 0;
    snprintf(buf, size, "%.*s", (int)n, !slash ? "." : slash == path ? "/" : path);
    return 1;
}

char *dla__nn_strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = dla__nn_malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

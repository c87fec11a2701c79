/*
 * nn_error.c - errors and host memory for nn/.
 *
 * The public API lets a caller read the thread's last error but not set
 * it, nor make an error tensor; nn reports its own errors (a layer's bad
 * option, a corrupt network file) the way ops do, so this file declares
 * the three core functions that do that. It is the only place nn/ reaches
 * below the public API.
 */
#include "nn/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* core/error.h and core/tensor.h: the thread's last error, error tensors
 * and the hand-over of a new reference to the open scope. */
dla_status dla__failv(dla_status status, const char *fmt, va_list ap);
dla_tensor *dla__error_tensor(void);
dla_tensor *dla__return(dla_tensor *t);

dla_status dla__nn_fail(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    return status;
}

dla_tensor *dla__nn_error_tensor(void) { return dla__return(dla__error_tensor()); }

dla_tensor *dla__nn_return(dla_tensor *t) { return dla__return(t); }

/* Host memory: plain malloc. The library's allocation hook is not part of
 * the public API, so nn's bookkeeping (small: names, tables, the graph)
 * cannot go through it. */
void *dla__nn_malloc(size_t size) { return malloc(size ? size : 1); }
void *dla__nn_calloc(size_t count, size_t size) { return calloc(count ? count : 1, size ? size : 1); }
void *dla__nn_realloc(void *p, size_t size) { return realloc(p, size ? size : 1); }
void dla__nn_free(void *p) { free(p); }

char *dla__nn_strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *d = dla__nn_malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

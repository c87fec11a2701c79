/*
 * shape.c - activation shapes (dims and format labels) as nn/ describes
 * them: MATLAB's "24(S) x 24(S) x 20(C) x 1(B)".
 */
#include "nn/nn.h"

#include <stdio.h>
#include <string.h>

void dla__shape_of(const dla_tensor *t, dla__shape *s)
{
    memset(s, 0, sizeof *s);
    s->ndims = dla_tensor_dims(t, s->dims);
    snprintf(s->format, sizeof s->format, "%s", dla_tensor_format(t));
    /* A formatted tensor has a label per dim: trailing singletons count. */
    int nf = (int)strlen(s->format);
    for (int i = s->ndims; i < nf; i++)
        s->dims[i] = 1;
    if (nf > s->ndims)
        s->ndims = nf;
}

int64_t dla__shape_dim(const dla__shape *s, char c)
{
    for (int i = 0; s->format[i]; i++)
        if (s->format[i] == c)
            return i < s->ndims ? s->dims[i] : 1;
    return 0;
}

int dla__shape_count(const dla__shape *s, char c)
{
    int n = 0;
    for (int i = 0; s->format[i]; i++)
        n += s->format[i] == c;
    return n;
}

void dla__shape_str(const dla__shape *s, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->ndims && at < size; i++) {
        char label = s->format[i] ? s->format[i] : 'U';
        int n = snprintf(buf + at, size - at, "%s%lld(%c)", i ? " x " : "", (long long)s->dims[i],
                         label);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

void dla__dims_text(int ndims, const int64_t *dims, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    if (ndims == 0)
        snprintf(buf, size, "1x1");
    for (int i = 0; i < ndims && at < size; i++) {
        int n = dims[i] < 0 /* any size (dla__param_add_batched) */
                    ? snprintf(buf + at, size - at, "%sN", i ? "x" : "")
                    : snprintf(buf + at, size - at, "%s%lld", i ? "x" : "", (long long)dims[i]);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

void dla__list_text(int n, const int64_t *v, int bracket, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    int k = bracket ? snprintf(buf, size, "[") : 0;
    at = k > 0 ? (size_t)k : 0;
    for (int i = 0; i < n && at < size; i++) {
        k = snprintf(buf + at, size - at, "%s%lld", i ? " " : "", (long long)v[i]);
        if (k < 0)
            return;
        at += (size_t)k;
    }
    if (bracket && at < size)
        snprintf(buf + at, size - at, "]");
}

int dla__same_dims(const dla_tensor *a, const dla_tensor *b)
{
    int n = dla_tensor_ndims(a) > dla_tensor_ndims(b) ? dla_tensor_ndims(a) : dla_tensor_ndims(b);
    for (int d = 1; d <= n; d++)
        if (dla_tensor_dim(a, d) != dla_tensor_dim(b, d))
            return 0;
    return 1;
}

int dla__text_columns(const char *s, size_t n)
{
    int c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

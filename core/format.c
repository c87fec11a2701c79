/*
 * format.c - MATLAB format labels.
 *
 * dlarray accepts labels in any order and permutes the data so they read
 * S..., C, B, T, U; we do the same, so every op can find C, B and T by label
 * and the layout of a formatted tensor is predictable.
 */
#include "core/format.h"

#include "core/error.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

static int label_rank(char c)
{
    switch (c) {
    case 'S': return 0;
    case 'C': return 1;
    case 'B': return 2;
    case 'T': return 3;
    case 'U': return 4;
    default: return -1;
    }
}

int dla__format_is_canonical(const char *labels, int n)
{
    for (int i = 1; i < n; i++)
        if (label_rank(labels[i]) < label_rank(labels[i - 1]))
            return 0;
    return 1;
}

dla_status dla__format_parse(const char *op, const char *fmt, int ndims, const int64_t *dims,
                             dla__format *out, int *out_ndims)
{
    memset(out, 0, sizeof *out);
    out->is_canonical = 1;
    if (!fmt || !*fmt) {
        *out_ndims = ndims;
        return DLA_OK;
    }
    size_t n = strlen(fmt);
    if (n > DLA_MAX_DIMS)
        return dla__fail(DLA_ERR_FORMAT, "%s: format \"%s\" has %zu labels; at most %d are allowed",
                         op, fmt, n, DLA_MAX_DIMS);
    int counts[5] = {0};
    for (size_t i = 0; i < n; i++) {
        int r = label_rank(fmt[i]);
        if (r < 0)
            return dla__fail(DLA_ERR_FORMAT,
                             "%s: format \"%s\": unknown label '%c' at position %zu (use S, C, B, T "
                             "or U)",
                             op, fmt, fmt[i], i + 1);
        counts[r]++;
    }
    static const char single[] = {'C', 'B', 'T'};
    for (int k = 0; k < 3; k++)
        if (counts[k + 1] > 1)
            return dla__fail(DLA_ERR_FORMAT, "%s: format \"%s\" has %d '%c' labels; at most one is allowed",
                             op, fmt, counts[k + 1], single[k]);
    for (int d = (int)n; d < ndims; d++)
        if (dims[d] != 1) {
            char buf[DLA__DIMS_BUF];
            return dla__fail(DLA_ERR_FORMAT,
                             "%s: format \"%s\" has %zu labels but the data has %d dims (%s); dim %d "
                             "is not a trailing singleton",
                             op, fmt, n, ndims, dla__dims_str(buf, sizeof buf, ndims, dims), d + 1);
        }
    /* Stable order by rank: S dims keep their relative order, as U dims do. */
    int k = 0;
    for (int r = 0; r < 5; r++)
        for (size_t i = 0; i < n; i++)
            if (label_rank(fmt[i]) == r) {
                out->canon[k] = fmt[i];
                out->perm[k] = (int)i;
                if ((int)i != k)
                    out->is_canonical = 0;
                k++;
            }
    out->canon[n] = '\0';
    out->nlabels = (int)n;
    *out_ndims = (int)n;
    return DLA_OK;
}

dla_status dla__format_check_labels(const char *op, const char *arg, const char *optname,
                                    const dla_tensor *t, const char *fmt)
{
    dla__format f;
    int nd;
    if (dla__format_parse(op, fmt, t->ndims, t->dims, &f, &nd) != DLA_OK) {
        char ts[DLA__DIMS_BUF];
        /* Say which option the labels came from, and for what. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla__fail(dla_last_status(), "%s (argument %s: %s, labelled by %s)", msg, arg,
                         dla__tensor_dims_str(t, ts, sizeof ts), optname);
    }
    return DLA_OK;
}

const char *dla__format_of_arg(const char *op, const char *arg, const dla_tensor *t,
                               const char *data_format, const char *hint)
{
    char ts[DLA__DIMS_BUF];
    const int given = data_format && data_format[0];
    if (t->format[0] && given) {
        dla__fail(DLA_ERR_FORMAT, "%s: option data_format: \"%s\" given, but %s (%s) is "
                  "formatted \"%s\"", op, data_format, arg,
                  dla__tensor_dims_str(t, ts, sizeof ts), t->format);
        return NULL;
    }
    if (t->format[0])
        return t->format;
    if (!given) {
        dla__fail(DLA_ERR_FORMAT, "%s: argument %s: %s is unformatted; give it labels or set "
                  "data_format (%s)", op, arg, dla__tensor_dims_str(t, ts, sizeof ts), hint);
        return NULL;
    }
    return dla__format_check_labels(op, arg, "data_format", t, data_format) == DLA_OK ? data_format
                                                                                     : NULL;
}

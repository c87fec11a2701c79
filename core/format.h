/*
 * format.h - MATLAB dimension labels ("SSCB"): parsing, validation and the
 * canonical order S..., C, B, T, U.
 */
#ifndef DLA_CORE_FORMAT_H
#define DLA_CORE_FORMAT_H

#include <dlaccel.h>

typedef struct dla__format {
    int nlabels;                 /* 0: unformatted */
    char canon[DLA_MAX_DIMS + 1]; /* labels in canonical order */
    /* canonical position i holds the user's dim perm[i] (0-based). */
    int perm[DLA_MAX_DIMS];
    int is_canonical;            /* perm is the identity */
} dla__format;

/* Parses fmt (NULL or "" = unformatted) for data with ndims dims. Dims past
 * ndims count as 1; dims past the labels must be 1 (MATLAB's trailing
 * singletons). On success *out_ndims is the tensor's dim count: the label
 * count when formatted, ndims otherwise. op names the caller in messages. */
dla_status dla__format_parse(const char *op, const char *fmt, int ndims, const int64_t *dims,
                             dla__format *out, int *out_ndims);

/* fmt as the labels of the unformatted argument arg (t) of op, named by
 * option optname: dla__format_parse against t's dims, its message saying
 * which argument and option. */
dla_status dla__format_check_labels(const char *op, const char *arg, const char *optname,
                                    const dla_tensor *t, const char *fmt);
/* The labels op reads argument arg (t) by, MATLAB's DataFormat rule: t's
 * own, or for an unformatted t the option data_format, checked against its
 * dims. Both given, or neither, is DLA_ERR_FORMAT (hint lists the formats
 * the op takes, for the message); NULL then, with the error set. */
const char *dla__format_of_arg(const char *op, const char *arg, const dla_tensor *t,
                               const char *data_format, const char *hint);

/* Nonzero when labels (length n) are in canonical order. */
int dla__format_is_canonical(const char *labels, int n);

#endif

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

/* Nonzero when labels (length n) are in canonical order. */
int dla__format_is_canonical(const char *labels, int n);

#endif

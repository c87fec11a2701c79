/*
 * train_impl.h - what the files of trainnet share: the parsed metrics and
 * sequence length of resolved options, and the iteration table.
 */
#ifndef DLA_NN_TRAIN_IMPL_H
#define DLA_NN_TRAIN_IMPL_H

#include <dlaccel.h>
#include <stdio.h>

/* Metrics named in trainingOptions Metrics. */
enum { DLA__METRIC_ACCURACY = 1, DLA__METRIC_RMSE = 2 };

/* The metrics of a Metrics string ("accuracy,rmse") as DLA__METRIC_* bits;
 * -1 for a name that is not one of them. NULL or "" is 0. */
int dla__train_parse_metrics(const char *metrics);
/* SequenceLength: 0 for "longest", -1 for "shortest", the number of steps
 * for a number; -2 when it is none of these. NULL is "longest". */
int64_t dla__train_parse_sequence_length(const char *s);

/* The iteration table: which columns it has. */
typedef struct dla__train_table {
    int accuracy, rmse, validation;
} dla__train_table;

/* Writes the table's header (with its top and middle rules) or its bottom
 * rule into buf; returns the length (snprintf rules). */
int dla__train_table_header(const dla__train_table *t, char *buf, size_t size);
int dla__train_table_rule(const dla__train_table *t, char *buf, size_t size);
/* One row; NaN figures leave their cells blank (a validation that did not
 * run at this iteration). */
int dla__train_table_row(const dla__train_table *t, const dla_training_state *s, char *buf,
                         size_t size);

#endif

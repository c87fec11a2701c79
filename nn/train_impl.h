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

/* The iteration table: which columns it has. lbfgs: no epoch (each
 * iteration is one), "Training Loss" for the whole batch, and the gradient
 * and step norms instead of the learning rate. */
typedef struct dla__train_table {
    int accuracy, rmse, validation, lbfgs;
} dla__train_table;

/* Writes the table's header (with its top and middle rules) or its bottom
 * rule into buf; returns the length (snprintf rules). */
int dla__train_table_header(const dla__train_table *t, char *buf, size_t size);
int dla__train_table_rule(const dla__train_table *t, char *buf, size_t size);
/* One row. The validation cells are blank unless validated (a validation
 * ran at this iteration); any other NaN figure, or a validation's, is
 * written "NaN" (a diverged loss must not look like one not computed). */
int dla__train_table_row(const dla__train_table *t, const dla_training_state *s, int validated,
                         char *buf, size_t size);

/* Checks made before the first iteration (train_check.c). */
/* The folders trainnet writes in: CheckpointPath, and the chart's when
 * Plots is "training-progress": DLA_ERR_IO naming the option and the
 * user's path when one is missing, not a folder or not writable. */
dla_status dla__train_check_paths(const dla_training_options *o);
/* Predictors x (a tensor; formatted, or read in the input's format when
 * unformatted) whose dims other than "B" and "T" are the network input's
 * (in_format, in_nd, in_dims, dla_net_input_activation's): DLA_ERR_SHAPE
 * naming fn, what, both sizes and, unformatted, MATLAB's N-by-numFeatures
 * layout. Checked before the targets, whose own messages would otherwise
 * speak of class counts for predictors laid out the other way. */
dla_status dla__train_check_predictors(const char *fn, const char *what, dla_tensor *x,
                                       const char *in_format, int in_nd, const int64_t *in_dims);
/* int32 class numbers in 0..k-1: DLA_ERR_INVALID_ARGUMENT naming what
 * ("data", "ValidationData"), the first bad value and its index, the range
 * and, when they look 1-based, MATLAB's numbering. */
dla_status dla__train_check_classes(const char *what, dla_tensor *targets, int64_t k);
/* A datastore's padded batch of class numbers per step (1 x B x T "CBT",
 * any real dtype), m its steps' mask (NULL where it has none or the
 * network's output has other steps than its input, whose mask does not
 * fit: the queue then pads them with NaN, and NaN steps are padding):
 * each step that holds data a whole number in 0..k-1, or
 * DLA_ERR_INVALID_ARGUMENT naming what, the observation of the batch, the
 * step and the value. */
dla_status dla__train_check_step_classes(const char *what, dla_tensor *t, dla_tensor *m,
                                         int64_t k);
/* Targets with a C dim (theirs, or out_format's when unformatted) of the
 * network output's channel count: DLA_ERR_SHAPE naming both counts, and
 * what the targets look like when n (their observations; 0: unknown)
 * says so: one row per observation, or class numbers not given as int32. */
dla_status dla__train_check_channels(const char *what, dla_tensor *targets, const char *out_format,
                                     int64_t channels, int64_t n);
/* Sequence targets (train_seqtarget.c): whether t holds class numbers for
 * an output of k channels (one channel, k > 1); and the check of t against
 * the predictor sequences x: their count, each length, the channels (k or
 * class numbers), an output with T and C, class numbers whole and in
 * 0..k-1. Errors name fn and what ("data", "ValidationData"). */
int dla__train_seq_targets_are_classes(const dla_seqlist *t, int64_t k);
dla_status dla__train_check_target_sequences(const char *fn, const char *what, const dla_seqlist *x,
                                             const dla_seqlist *t, const char *out_format,
                                             int64_t k);

/* BatchNormalizationStatistics "population" (train_population.c): one
 * pass over q (the training data, this rank's part with parallel set,
 * then summed over the ranks; collective) in training mode, every
 * observation (a partial last mini-batch too, whatever PartialMiniBatch
 * says), and each
 * batch normalization layer's TrainedMean and TrainedVariance set to its
 * input's pooled statistics. *computed: 1 when the network has such
 * layers and they were set. */
struct dla_mbq;
dla_status dla__train_population_statistics(dla_net *net, struct dla_mbq *q, int parallel,
                                            int *computed);
/* Whether q's passes drop their last partial mini-batch (data_mbq.c);
 * starts a new pass and returns the previous setting. */
int dla__mbq_set_discard(struct dla_mbq *q, int discard);

#endif

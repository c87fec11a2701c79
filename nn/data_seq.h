/*
 * data_seq.h - the padding rules of data_seq.c, parsed once, for the
 * mini-batch queue to apply per batch.
 */
#ifndef DLA_NN_DATA_SEQ_H
#define DLA_NN_DATA_SEQ_H

#include <dlaccel.h>

typedef enum dla__seq_mode { DLA__SEQ_LONGEST, DLA__SEQ_SHORTEST, DLA__SEQ_FIXED } dla__seq_mode;

typedef struct dla__seq_rule {
    dla__seq_mode mode;
    int64_t fixed;        /* steps, for DLA__SEQ_FIXED */
    double padding_value;
    int left;             /* pad and truncate at the start */
} dla__seq_rule;

/* opts (NULL: defaults) as a rule; DLA_ERR_INVALID_ARGUMENT naming op. */
dla_status dla__seq_parse(const dla_sequence_options *opts, dla__seq_rule *rule, const char *op);

/* The steps T of a batch of sequences idx[0..n-1] (NULL: 0..n-1). */
int64_t dla__seq_steps(const dla_seqlist *s, int64_t n, const int64_t *idx,
                       const dla__seq_rule *rule);

/* The C x n x T "CBT" single batch and (mask not NULL) its 1 x n x T
 * logical mask, held (data_util.h), made on dev (NULL: current). The
 * indices must be valid and n >= 1. On failure both are NULL. */
dla_status dla__seq_pad(const dla_seqlist *s, int64_t n, const int64_t *idx,
                        const dla__seq_rule *rule, dla_device *dev, const char *op,
                        dla_tensor **x, dla_tensor **mask);

#endif

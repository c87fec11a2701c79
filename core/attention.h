/*
 * attention.h - dla_attention with the dropout of its weights given by
 * the caller: selfAttentionLayer draws it as for the whole mini-batch
 * when trainnet "parallel" runs a worker's share (nn/batch_share.c).
 */
#ifndef DLA_CORE_ATTENTION_H
#define DLA_CORE_ATTENTION_H

#include <dlaccel.h>
#include <dlaccel/nnops.h>

/* Drops the weights (Lk x Lq x h x B, unformatted, B along dim 4) with
 * probability prob, as dla_dropout does. */
typedef dla_tensor *(*dla__attention_drop)(dla_tensor *weights, double prob);

/* dla_attention, with drop (NULL: dla_dropout) applied to the weights
 * when opts->dropout_probability is above 0. */
dla_tensor *dla__attention_with(dla_tensor *queries, dla_tensor *keys, dla_tensor *values,
                                int64_t num_heads, const dla_attention_options *opts,
                                dla_tensor **weights, dla__attention_drop drop);

#endif

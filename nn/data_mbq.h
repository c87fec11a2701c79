/*
 * data_mbq.h - what trainnet "parallel" asks of the mini-batch queue
 * beyond its public API (nn/data_mbq.c).
 */
#ifndef DLA_NN_DATA_MBQ_H
#define DLA_NN_DATA_MBQ_H

#include <dlaccel.h>

/* Makes q a worker's view, and goes back to the start of the data: q
 * passes over all its observations in its mini-batches, in its order, as
 * before (every worker's queue has the same order: the same seed), but
 * dla_mbq_next hands out only this worker's share of each batch: the
 * batch's observations divided among workers as dla_spmd_shares divides
 * them (the first workers take the remainder), a contiguous run each, in
 * rank order. So the workers' shares of an iteration are one process's
 * mini-batch, the partial last one included, and every worker has as many
 * batches as one process. A worker whose share of a batch is empty (fewer
 * observations than workers) gets the batch's first observation, for the
 * shapes, and dla__mbq_last_empty says so. Sequences are padded or
 * truncated to the length the whole batch's rule gives; an augmented
 * datastore's transforms are drawn for the whole batch, each image getting
 * those of one process. workers 1 is the plain queue. */
dla_status dla__mbq_set_worker(dla_mbq *q, int workers, int worker);
/* dla_mbq_create for trainnet, testnet and minibatchpredict, which have
 * just learned the count of a datastore of unknown count (it is not read
 * through again). With align_steps, for sequence-to-sequence targets in a
 * datastore: each observation's sequence outputs must have the same
 * number of steps (a target sequence a step short of its predictors,
 * padded to the batch's longest, would line up with other steps, or with
 * none), checked as each is joined: DLA_ERR_SHAPE from dla_mbq_next naming
 * the observation. With nan_pad_targets, a datastore's sequence outputs
 * after its first (the targets, cast to single or double) are padded with
 * NaN, not the padding value: class numbers or responses per step whose
 * steps are not their predictors', which the predictors' mask does not
 * cover, so that a padded step is no class, and no target, whatever
 * SequencePaddingValue is. */
dla_status dla__mbq_create_counted(int ninputs, const dla_mbq_input *inputs,
                                   const dla_mbq_options *opts, int align_steps,
                                   int nan_pad_targets, dla_mbq **out);
/* 1 when the last batch dla_mbq_next handed out was a worker's
 * placeholder, holding no observation of its own (it weighs 0). */
int dla__mbq_last_empty(const dla_mbq *q);
/* Where the last batch handed out lies in the whole batch: *before
 * observations of it come before this worker's share (0 for a
 * placeholder: the batch's first), of *whole. */
void dla__mbq_last_share(const dla_mbq *q, int64_t *before, int64_t *whole);

#endif

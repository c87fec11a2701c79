/*
 * spmd_impl.h - what the parallel training files of nn/ share.
 */
#ifndef DLA_SPMD_IMPL_H
#define DLA_SPMD_IMPL_H

#include <dlaccel.h>
#include <stddef.h>

/* The bucket size of dla_spmd_combine in bytes: DLACCEL_BUCKET_MIB MiB
 * (4 when unset or not a positive number). */
size_t dla__spmd_bucket_bytes(void);
/* Seconds this thread has spent inside the allreduces of
 * dla_spmd_combine (all of it exposed: see docs/parallel.md, "Reduction
 * cost"). */
double dla__spmd_reduce_seconds(void);

/* This rank failed with st (the last error says why) before a collective
 * the other ranks make (an allreduce when root < 0, else a broadcast from
 * root): it takes part in it with an error tensor carrying that reason, so
 * that every rank fails there, naming this one, instead of waiting for it.
 * Returns st, the last error restored. The identity in a world of one. */
dla_status dla__spmd_take_part_failed(dla_status st, int root);

/* The buckets of dla_spmd_combine, shared with trainnet's overlapped
 * reduction (spmd_overlap.c), so that both fill the same buckets with the
 * same bits. count: how many of x[first..n-1] go into the bucket that
 * starts at first (one dtype, at most cap bytes unless one tensor is
 * larger). fill: x[0..count-1] flattened, times weight (zeros for 0), in
 * one new tensor of the open scope (NULL or an error tensor on failure).
 * unpack: out[i] the views of bucket shaped as x[i]. */
int dla__spmd_bucket_count(int n, dla_tensor *const *x, int first, size_t cap);
dla_tensor *dla__spmd_bucket_fill(int count, dla_tensor *const *x, double weight, int64_t whole);
dla_status dla__spmd_bucket_unpack(dla_tensor *bucket, int count, dla_tensor *const *x,
                                   dla_tensor **out);

/* trainnet's reduction of one step's loss and gradients overlapped with
 * the backward pass (spmd_overlap.c): begin plans the buckets of n tensors
 * shaped as like (dla_spmd_combine's, weighted by weight); ready hands
 * tensor i over (a reference is taken) and starts every bucket it
 * completes, from the last bucket down; tick tests the reductions in
 * flight (and starts the buckets ready: between two steps of the sweep);
 * flush, once the backward has ended with this rank's status st, reduces
 * the buckets left at once, blocking (taking what the sweep did not hand
 * over from x; a rank that failed takes part in each with an error); end
 * waits for every bucket, sets out (which may be x) to the combined
 * tensors and fills *times. Returns st, else the reductions' status.
 * free releases o (any time: after end, or instead of it). */
typedef struct dla__overlap dla__overlap;
typedef struct dla__overlap_times {
    double flight;     /* first bucket started .. last one ended */
    double after;      /* flush called (the backward's end) .. every bucket ended */
    int buckets, started_early; /* of them: started during the backward */
} dla__overlap_times;
dla__overlap *dla__overlap_begin(int n, dla_tensor *const *like, double weight);
/* The weight of this rank's tensors, until the first is handed over (the
 * loss tells whether it is a mean over valid steps or observations). */
void dla__overlap_set_weight(dla__overlap *o, double weight);
void dla__overlap_ready(dla__overlap *o, int i, dla_tensor *g);
void dla__overlap_tick(dla__overlap *o);
void dla__overlap_flush(dla__overlap *o, dla_status st, dla_tensor *const *x);
/* Room for n tensor pointers, owned by o (for end's x and out). */
dla_tensor **dla__overlap_io(dla__overlap *o);
void dla__overlap_free(dla__overlap *o);
dla_status dla__overlap_end(dla__overlap *o, dla_status st, dla_tensor *const *x, dla_tensor **out,
                            dla__overlap_times *times);

#endif

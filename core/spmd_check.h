/*
 * spmd_check.h - the agreement check every collective starts with.
 *
 * MPI does not check that the ranks passed the same arguments: a rank that
 * passed 1001 floats where the others passed 1000 got status 0 and an
 * unreduced element. So each collective first gathers a small descriptor
 * from every rank (which collective, its count, op and root, a digest of
 * the tensors' dtypes and sizes, and whether the rank's own arguments were
 * valid) and compares; only when they differ does it gather the tensors'
 * records to name the one that differs. Every rank compares the same data,
 * so every rank fails, with the same message.
 */
#ifndef DLA_CORE_SPMD_CHECK_H
#define DLA_CORE_SPMD_CHECK_H

#include "core/spmd.h"

typedef enum dla__coll_kind {
    DLA__COLL_ALLREDUCE = 1,
    DLA__COLL_BROADCAST,
    DLA__COLL_ALLGATHER,
    DLA__COLL_ALL,
    DLA__COLL_ANY,
    DLA__COLL_BARRIER,
    DLA__COLL_QUEUE_CREATE,
    DLA__COLL_QUEUE_FREE,
    DLA__COLL_ALLREDUCE_START,
    DLA__COLL_DEVICE_JOIN, /* spmd_device.c: whether every rank joined the device's group */
} dla__coll_kind;

/* One tensor as the ranks compare it: dtype and dims without trailing
 * singletons (a 10x1 and a 10 are the same data), and the format's labels
 * of those dims (zeros for an unformatted tensor, and where the format is
 * not compared: a broadcast). */
typedef struct dla__coll_rec {
    int32_t dtype;
    int32_t ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS];
} dla__coll_rec;

/* The records every descriptor carries (the first tensors'), so that a
 * non-blocking collective names the tensor that differs without a second
 * exchange (spmd_async.c: it could not place one in the same order on every
 * rank). */
#define DLA__COLL_RECS 2

typedef struct dla__coll_desc {
    uint32_t magic;
    int32_t kind;
    uint64_t seq;
    int32_t count, op, root;
    int32_t local_error; /* this rank's own arguments were refused */
    uint64_t digest;     /* of the records */
    /* Carried, not compared: a flag (all/any), a message count (queues). */
    int64_t value;
    /* Carried, not compared: the device transport this rank could use for
     * the collective (spmd_device.h), 0 for none; it is used when every
     * rank's is the same. */
    uint64_t device_path;
    /* Compared: what a reduced bucket packs (dla__spmd_note_layout), 0
     * for a plain collective. */
    uint64_t layout;
    char why[200]; /* the local error's message, cut */
    dla__coll_rec recs[DLA__COLL_RECS]; /* the first count records */
} dla__coll_desc;

/* The next collective this thread enters carries a digest of the records
 * of x[0..n-1], the tensors packed into the one tensor it reduces (the
 * buckets of dla_spmd_combine and trainnet's overlapped reduction): the
 * bucket's own size is all its record says, so ranks that packed other
 * tensors of the same total size (a 3- and a 7-vector against a 7 and a
 * 3) would be summed element by element, and their results unpacked
 * into the wrong tensors, in silence. whole: how many tensors the call
 * packs into all its buckets, digested too, so that ranks passing more
 * tensors than others fail at the first bucket rather than leaving the
 * others in a bucket of their own. */
void dla__spmd_note_layout(int n, dla_tensor *const *x, int64_t whole);

/* A record of t (valid, live); with_format: its labels count too. An
 * element-wise reduction or a gather of tensors that hold the same sizes
 * under other labels ("CB" on one rank, "SB" on another) sums or stacks
 * different things, so those compare formats; a broadcast copies root's
 * values into each rank's own tensor and does not. */
void dla__coll_rec_of(const dla_tensor *t, int with_format, dla__coll_rec *r);

/* Enters a collective (w->seq + 1) and checks the ranks agree. mine has
 * kind, count, op, root and value set (local_error and why when the
 * caller's own checks failed: then the result is an error on every rank);
 * recs are its count records (NULL when count is 0 or on a local error).
 * On DLA_OK, *all (when not NULL) receives every rank's descriptor (freed
 * with dla__free). On disagreement, DLA_ERR_INVALID_ARGUMENT with a message
 * naming the rank and the tensor, the same on every rank. */
dla_status dla__coll_enter(dla__spmd *w, const char *op, dla__coll_desc *mine,
                           const dla__coll_rec *recs, dla__coll_desc **all);

/* The two halves of dla__coll_enter, for a collective that does not wait
 * (spmd_async.c). prepare enters the collective (w->seq + 1) and fills
 * mine's seq, digest and records; judge compares every rank's descriptors
 * (all, from an exchange of mine) and fails as dla__coll_enter does,
 * naming a tensor that differs from the records the descriptors carry. */
void dla__coll_prepare(dla__spmd *w, dla__coll_desc *mine, const dla__coll_rec *recs);
dla_status dla__coll_judge(dla__spmd *w, const char *op, const dla__coll_desc *all);

/* A local refusal of op's arguments for mine (the thread's last error). */
void dla__coll_local_error(dla__coll_desc *mine);

#endif

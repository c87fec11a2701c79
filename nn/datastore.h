/*
 * datastore.h - what the generic datastores share (MATLAB's arrayDatastore,
 * fileDatastore, transform, combine, custom datastores and the subsets of
 * any of them; api/dlaccel/data.h), and what the mini-batch queue reads
 * them through.
 *
 * A datastore is a kind (a table of functions) and the kind's state. An
 * indexed kind reads observation i of 0..count-1 (read_at) without
 * touching any state, so queues and their partitions may read one on
 * several threads; the read position (pos) is the handle's, used only by
 * dla_datastore_read. A kind read in order has read_next, hasdata and reset
 * instead, and its position is its own.
 *
 * Tensors the kinds hand back are held (data_util.h), not owned by any
 * scope.
 */
#ifndef DLA_NN_DATASTORE_H
#define DLA_NN_DATASTORE_H

#include <dlaccel.h>

#include "nn/data_seq.h"

#include <stdatomic.h>

#define DLA__DS_MAX DLA_DATASTORE_MAX_OUTPUTS

typedef struct dla__ds_kind {
    const char *name; /* MATLAB's name, for messages: "arrayDatastore" */
    /* Observation i as nout held outputs; NULL for a kind read in order. */
    dla_status (*read_at)(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op);
    /* Optional: observations idx[0..n-1] joined along obs_dim (held), for
     * kinds that can do better than one read_at each (an array's gather). */
    dla_status (*read_batch)(dla_datastore *ds, int64_t n, const int64_t *idx, dla_tensor **out,
                             const char *op);
    /* Kinds read in order: the next observation (only while hasdata). */
    dla_status (*read_next)(dla_datastore *ds, dla_tensor **out, const char *op);
    int (*hasdata)(dla_datastore *ds);
    void (*reset)(dla_datastore *ds);
    /* Frees the kind's state (and drops what it holds). */
    void (*destroy)(dla_datastore *ds);
    /* Optional: the datastores it reads (a transform's, a combination's)
     * into in[0..DLA__DS_MAX-1]; returns their count. */
    int (*inputs)(const dla_datastore *ds, dla_datastore **in);
} dla__ds_kind;

struct dla_datastore {
    uint32_t magic;        /* DLA__HANDLE_DATASTORE; DEAD once gone (docs/checks.md) */
    atomic_int refs;       /* holders, the caller's handle counting one until freed */
    atomic_int user_freed; /* the caller freed its handle (a second free is misuse) */
    const dla__ds_kind *kind;
    int nout;
    /* Per output, the 1-based dim observations are joined along; 0: the
     * output's B dim when it has one, else the dim after its last. */
    int obs_dim[DLA__DS_MAX];
    int64_t count; /* observations; -1 unknown (kinds read in order only) */
    /* count was learned by reading ds through (dla__ds_learn_count): the
     * source did not give it, and it may have changed since. */
    int count_learned;
    int64_t pos;   /* indexed kinds: observations read by dla_datastore_read */
    int64_t read_size;
    void *state; /* the kind's */
};

/* A new handle of kind (refs 1, the caller's), its outputs' obs_dim 0;
 * NULL after setting the error, naming op. */
dla_datastore *dla__ds_new(const dla__ds_kind *kind, int nout, int64_t count, void *state,
                           const char *op);
/* Holds ds for a datastore or queue made from it; drops such a hold. */
dla_datastore *dla__ds_retain(dla_datastore *ds);
void dla__ds_release(dla_datastore *ds);
/* Nonzero when ds is a live datastore; else sets the error (and logs a
 * freed one) naming op and arg. NULL is refused too. */
int dla__ds_live(const dla_datastore *ds, const char *op, const char *arg);
static inline int dla__ds_indexed(const dla_datastore *ds) { return ds->kind->read_at != NULL; }

/* One observation: i of an indexed ds, or the next of one read in order
 * (for an indexed one, the next of its position, which it moves). */
dla_status dla__ds_obs(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op);
dla_status dla__ds_next_obs(dla_datastore *ds, dla_tensor **out, const char *op);
/* The count of a datastore read in order that does not know it, learned by
 * reading it through from its start (MATLAB reads such a datastore until
 * hasdata is false); with again, a count learned before is learned afresh.
 * Leaves ds reset. Does nothing to a datastore that knows its count. */
dla_status dla__ds_learn_count(dla_datastore *ds, int again, const char *op);
int dla__ds_has_next(dla_datastore *ds);
void dla__ds_rewind(dla_datastore *ds);

/* How a mini-batch queue joins a batch's observations; NULL: each output
 * along the datastore's rule, every observation of one shape. */
typedef struct dla__ds_how {
    /* The dim a queue's format asks output j's observations to be joined
     * along (0: the datastore's rule). */
    int at[DLA__DS_MAX];
    /* Nonzero for an output of sequences: the dim of their time steps,
     * along which observations may differ, each padded or truncated by
     * rule to the batch's length (data_seq.h) before they are joined. */
    int tdim[DLA__DS_MAX];
    const dla__seq_rule *rule;
    /* For an output of sequences: 1 + the dla_dtype its observations are
     * cast to before they are padded (0: kept), so that the padding value
     * is one of the cast's (0.5 padded int32 data with 0, then cast). */
    int pad_as[DLA__DS_MAX];
    /* Where masks[j] is not NULL (masks itself may be), *masks[j] gets
     * sequence output j's 1 x b x T logical "CBT" mask of the steps that
     * hold data (held), b the observations joined. */
    dla_tensor **masks[DLA__DS_MAX];
    /* Only observations lo..hi-1 of those read are joined (hi 0: all),
     * padded to the length the rule gives all of them: a worker's share
     * of a batch, padded as the whole batch is in one process. */
    int64_t lo, hi;
    /* Every observation's sequence outputs have the same number of steps
     * (sequence-to-sequence targets and their predictors), or the join
     * fails naming it. */
    int align_steps;
    /* Nonzero for a sequence output padded with NaN rather than the rule's
     * value (cast to single or double first): trainnet's class numbers per
     * step whose steps are not their predictors', which no mask covers, so
     * that a padded step is no class (a padding value of 0 was class 0). */
    unsigned char nan_pad[DLA__DS_MAX];
} dla__ds_how;

/* Observations idx[0..n-1] of an indexed ds joined, n >= 1, held, on the
 * current device, as how says (NULL: the datastore's rule). */
dla_status dla__ds_gather(dla_datastore *ds, int64_t n, const int64_t *idx,
                          const dla__ds_how *how, dla_tensor **out, const char *op);
/* Joins n observations (obs[k * nout + j]: observation k's output j, held)
 * along each output's dim, into out (held, on the current device). nums
 * (NULL: 0..n-1) are their numbers, for messages. Does not consume obs. */
dla_status dla__ds_join(const dla_datastore *ds, int64_t n, dla_tensor **obs,
                        const int64_t *nums, const dla__ds_how *how, dla_tensor **out,
                        const char *op);
/* Up to n next observations of ds (in order) joined; *got is how many
 * were read (0 with no data left: DLA_ERR_STATE), on failure too, a read
 * that failed counted among them (the source moved past it). */
dla_status dla__ds_read_next_n(dla_datastore *ds, int64_t n, const dla__ds_how *how,
                               dla_tensor **out, int64_t *got, const char *op);

/* Observations first..first+n-1 of ds joined as how says (n >= 1): by
 * number from an indexed ds; from one read in order, from its start when
 * first is 0, else on from where it is, so that a loop over consecutive
 * spans reads it once, in order (DLA_ERR_STATE when it runs out). */
dla_status dla__ds_read_span(dla_datastore *ds, int64_t first, int64_t n, const dla__ds_how *how,
                             dla_tensor **out, const char *op);
/* Observation 0 as the datastore gives it (held): one read in order is
 * read from its start (and left after it). */
dla_status dla__ds_first_obs(dla_datastore *ds, dla_tensor **out, const char *op);

/* Calls a user's callback: fn(ctx, arg) in a scope of its own, its nout
 * outputs checked (set, not error tensors) and held into out; a failure's
 * message is prefixed with op and what ("read_fn on \"x.txt\""). */
typedef dla_status (*dla__ds_call)(void *ctx, void *arg, int nout, dla_tensor **out);
dla_status dla__ds_call_user(dla__ds_call fn, void *ctx, void *arg, int nout, dla_tensor **out,
                             const char *op, const char *what);

/* Nonzero when a and b, both read in order, would move one position: a
 * source read in order (a custom datastore's, or an indexed datastore's
 * own position, read through a kind read in order) that both read. Two
 * such datastores read side by side (combine, a queue's inputs) would
 * each take the other's observations, pairing observation i of one with
 * i + 1 of the other. */
int dla__ds_share_position(const dla_datastore *a, const dla_datastore *b);

/* The dim a format's B lands on once its labels are in canonical order
 * (S..., C, B, T, U): 1 + its S and C labels. */
int dla__ds_format_b_dim(const char *format);

/* Releases out[0..n-1] and sets them NULL. */
void dla__ds_drop(int n, dla_tensor **out);

/* The file datastore under ds (through subsets) and ds's observation i's
 * number in it (dla_file_datastore_path). */
const char *dla__ds_file_path(const dla_datastore *ds, int64_t i);
extern const dla__ds_kind dla__ds_subset_kind;
extern const dla__ds_kind dla__ds_file_kind;
/* A subset's parent and index list (for dla_file_datastore_path). */
dla_datastore *dla__ds_subset_parent(const dla_datastore *ds, const int64_t **idx);

#endif

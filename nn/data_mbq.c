/*
 * data_mbq.c - the mini-batch queue (MATLAB's minibatchqueue) over data in
 * memory, with background dispatch.
 *
 * A queue is an order of observation numbers and a position in it. A batch
 * is the next mini_batch_size numbers: a gather of each tensor input along
 * its B dim (a view when the numbers run in a row), or the padded sequences,
 * then the cast, the relabeling and the MiniBatchFcn.
 *
 * With background dispatch one thread per queue makes batches ahead, up to
 * `prefetch` of them, in the order the caller takes them. The order and the
 * position change only while that thread is not reading them: reset,
 * shuffle and a new batch size bump a generation number, wait until the
 * thread is idle, drop what it made ahead and start it again; a batch made
 * for an older generation is dropped when it arrives. So the batches are the
 * same, in the same order, with or without the thread.
 *
 * The transforms of an augmented datastore are drawn from a stream of the
 * queue's own (not the datastore's, which other readers share), and the
 * stream is rewound with the position: every batch keeps the stream's
 * state after its draws, and dropping the batches made ahead puts the
 * stream back where the last batch handed out left it. So the draws depend
 * only on the batches handed out, never on how far ahead the thread was
 * (a shuffle right after dla_mbq_create used to lose the draws of the
 * batches the thread had made by then).
 *
 * Batches are held references (data_util.h), not owned by any scope, until
 * dla_mbq_next delivers them to the caller (into the caller's open scope).
 */
#include "core/format.h" /* dla__format_parse */
#include "core/handle.h" /* the handle checks (docs/checks.md) */
#include "nn/data_image.h"
#include "nn/data_mbq.h"
#include "core/omp_defaults.h"
#include "core/scope.h"
#include "nn/data_rng.h"
#include "nn/data_seq.h"
#include "nn/data_util.h"
#include "nn/datastore.h"

#include <pthread.h>

#include <stdio.h>
#include <string.h>

#define MAX_INPUTS 16
#define MAX_OUTPUTS (2 * MAX_INPUTS)
#define MAX_SEED_WORDS 16

typedef struct mbq_input {
    dla_tensor *tensor;         /* held */
    int bdim;                   /* 1-based observation dim of tensor */
    const dla_seqlist *seqs;
    dla_imds *imds;             /* a frozen copy of the datastore, held */
    /* A generic datastore's output ds_out (held by every input it feeds);
     * the first of them reads the batch. A datastore read in order is at
     * observation ds_pos (INT64_MAX: unknown, after a failed read). */
    dla_datastore *ds;
    int ds_out;
    int64_t ds_pos;
    int at;                     /* the dim its format puts B at; 0: none */
    int tdim;                   /* a datastore's: the dim its format puts T at; 0: none */
    char format[DLA_MAX_DIMS + 1];
    int has_format;
    int cast;                   /* a dla_dtype, or -1 */
    int mask;
} mbq_input;

typedef struct batch {
    dla_tensor *out[MAX_OUTPUTS]; /* held */
    int64_t count;                /* observations of the pass it takes */
    int empty;                    /* a worker's placeholder (dla__mbq_last_empty) */
    int64_t before, whole;        /* a worker's: observations before its share, the batch's */
    dla__data_rng aug_after;      /* the augmentation stream after its draws */
    uint64_t fn_after;            /* the functions' stream's counter after its draws */
    dla_status status;
    char message[1024];
} batch;

struct dla_mbq {
    uint32_t magic; /* DLA__HANDLE_MBQ; DEAD once freed (docs/checks.md) */
    int nin, nout;
    mbq_input in[MAX_OUTPUTS];  /* a datastore input takes one per output */
    int64_t n;                  /* observations of this queue */
    int64_t *base;              /* its n observation numbers, as made */
    int64_t *order;             /* the same in the current order */
    int imds_input;             /* the image datastore's slot in in[], or -1 */
    int imds_arg;               /* its number among dla_mbq_create's inputs */
    int in_order;               /* a generic datastore input is read in order */
    /* A datastore's sequence outputs have each observation's steps alike
     * (dla__mbq_create_counted). */
    int align_steps;
    /* A datastore's sequence outputs after its first are padded with NaN
     * (dla__mbq_create_counted). */
    int nan_pad_targets;
    /* A datastore's count learned before is learned again (dla_mbq_create;
     * not for trainnet's, which learned it just before). */
    int recount;
    int64_t mbs;
    int discard;
    dla__seq_rule rule;
    dla_mbq_fn fn;
    void *fn_ctx;
    dla_device *device;
    uint32_t seed_words[MAX_SEED_WORDS];
    int nseed_words;
    dla__data_rng rng;
    int64_t pos;                /* observations handed out in this pass */
    /* A worker's view (dla__mbq_set_worker): of each batch of the pass,
     * worker's share among workers; 1 and 0 for a plain queue. */
    int workers, worker;
    int last_empty;             /* the last batch handed out was a placeholder */
    int64_t last_before, last_whole; /* its place in the whole batch (dla__mbq_last_share) */
    /* An augmented datastore input's stream: seeded from the augmentation's
     * seed (and a partition's indices), drawn by whoever makes batches;
     * aug_at_pos is its state after the last batch handed out. */
    int has_aug;
    uint32_t aug_words[MAX_SEED_WORDS];
    int naug_words;
    dla__data_rng aug_rng, aug_at_pos;
    /* The Philox stream (dla_rand, dla_randn, dropout) of the functions a
     * batch calls: the datastores' callbacks and the mini-batch function.
     * The queue's own, current on whichever thread makes the batch, so
     * that a function that draws gives the same batches with background
     * dispatch as without (the dispatch thread's own stream is seed 0 from
     * its start, whatever dla_rng_seed the caller set), and the caller's
     * stream is left as it was. Seeded from the creating thread's stream,
     * so that dla_rng_seed makes the draws reproducible; fn_at_pos is the
     * counter after the last batch handed out, as aug_at_pos. */
    uint64_t fn_seed, fn_counter, fn_at_pos;

    /* Background dispatch; all below under lock. */
    int background, depth;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;        /* any change: broadcast, everyone rechecks */
    int stop, busy;
    unsigned gen;
    int64_t made;               /* observations made (or being made) ahead */
    batch *ring;                /* depth slots */
    int head, count;
    batch work;                 /* the thread's batch in the making */
};

/* ---------------------------------------------------------------- batches */

/* SplitMix64's finalizer: the seed of the functions' stream from the
 * creating thread's stream position (a queue made at another position, or
 * after another dla_rng_seed, draws other numbers). */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t end_of_pass(const dla_mbq *q) { return q->discard ? q->n - q->n % q->mbs : q->n; }

static int64_t batch_size_at(const dla_mbq *q, int64_t start)
{
    return q->n - start < q->mbs ? q->n - start : q->mbs;
}

static void batch_clear(batch *b)
{
    for (int i = 0; i < MAX_OUTPUTS; i++) {
        dla_tensor_release(b->out[i]);
        b->out[i] = NULL;
    }
    b->count = 0;
    b->empty = 0;
    b->before = b->whole = 0;
    b->status = DLA_OK;
    b->message[0] = '\0';
}

/* The observations obs[0..count-1] of a tensor along bdim, on the source's
 * device: a view when they are consecutive, a gather otherwise. */
static dla_tensor *gather(dla_tensor *src, int bdim, const int64_t *obs, int64_t count)
{
    int consecutive = 1;
    for (int64_t k = 1; k < count && consecutive; k++)
        consecutive = obs[k] == obs[0] + k;
    if (consecutive)
        return dla_contiguous(dla_slice(src, bdim, obs[0], 1, obs[0] + count));
    int32_t small[512], *idx = count <= 512 ? small : dla__data_malloc((size_t)count * 4);
    if (!idx) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "dla_mbq_next: cannot hold %lld indices",
                       (long long)count);
        return NULL;
    }
    for (int64_t k = 0; k < count; k++)
        idx[k] = (int32_t)obs[k];
    dla_tensor *it = dla__data_from_host(dla_tensor_device(src), idx, DLA_I32, "",
                                         DLA_DIMS(count));
    if (idx != small)
        dla__data_free(idx);
    dla_tensor *t = dla_index(src, bdim, it);
    dla_tensor_release(it);
    return t;
}

/* The first failing output, its message kept in b. */
static int first_error(batch *b, dla_tensor **out, int nout)
{
    for (int i = 0; i < nout; i++) {
        if (!out[i]) {
            b->status = dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_INVALID_ARGUMENT;
            snprintf(b->message, sizeof b->message, "%s",
                     dla_last_status() != DLA_OK ? dla_last_error()
                                                 : "dla_mbq_next: output left NULL");
            return 1;
        }
        if (dla_tensor_status(out[i]) != DLA_OK) {
            b->status = dla_tensor_status(out[i]);
            snprintf(b->message, sizeof b->message, "%s", dla_tensor_error(out[i]));
            return 1;
        }
    }
    return 0;
}

/* A datastore read in order brought to observation to: read on, or reset
 * and read from the start, dropping what is read. */
static dla_status seek_in_order(mbq_input *in, int64_t to, const char *op)
{
    if (to < in->ds_pos) {
        dla__ds_rewind(in->ds);
        in->ds_pos = 0;
    }
    dla_tensor *skip[DLA_DATASTORE_MAX_OUTPUTS];
    while (in->ds_pos < to) {
        /* What is skipped belongs to batches before: its failure is not
         * this batch's (the source moved past it all the same). Stopping
         * here failed this batch with an observation outside it, and
         * every later batch of the pass, reading from the start, again. */
        if (!dla__ds_has_next(in->ds))
            return dla__data_fail(DLA_ERR_STATE,
                                  "%s: inputs: the %s ran out of data after %lld observations, "
                                  "but its count is %lld",
                                  op, in->ds->kind->name, (long long)in->ds_pos,
                                  (long long)in->ds->count);
        if (dla__ds_next_obs(in->ds, skip, op) == DLA_OK)
            dla__ds_drop(in->ds->nout, skip);
        in->ds_pos++;
    }
    return DLA_OK;
}

/* The batch of the datastore whose first output is input i, observations
 * obs[0..count-1], into out[0..nout-1] (held), the masks of its sequence
 * outputs that ask for one into masks; a failure is b's. Of a worker's
 * share (lo..hi-1 of the whole batch obs[0..count-1]; hi 0: not one) only
 * that share is joined, its sequences padded as the whole batch's are. */
static void read_datastore(dla_mbq *q, int i, const int64_t *obs, int64_t count, int64_t lo,
                           int64_t hi, dla_tensor **out, dla_tensor **masks, batch *b)
{
    static const char op[] = "dla_mbq_next";
    mbq_input *in = &q->in[i];
    dla__ds_how how = {.lo = lo, .hi = hi, .align_steps = q->align_steps};
    for (int j = 0, seen = 0; j < in->ds->nout; j++) {
        how.at[j] = q->in[i + j].at;
        how.tdim[j] = q->in[i + j].tdim;
        how.nan_pad[j] = how.tdim[j] && seen && q->nan_pad_targets;
        seen += how.tdim[j] != 0;
        how.pad_as[j] = q->in[i + j].cast >= 0 ? q->in[i + j].cast + 1 : 0;
        how.masks[j] = q->in[i + j].mask ? masks + j : NULL;
        if (how.tdim[j])
            how.rule = &q->rule;
    }
    dla_status st;
    if (dla__ds_indexed(in->ds)) {
        st = dla__ds_gather(in->ds, count, obs, &how, out, op);
    } else {
        /* In order, the batch's numbers run in a row (a queue over a
         * datastore read in order is never shuffled nor partitioned). */
        int64_t got = 0;
        st = seek_in_order(in, obs[0], op);
        if (st == DLA_OK) {
            st = dla__ds_read_next_n(in->ds, count, &how, out, &got, op);
            /* A batch that failed is passed over as the batches of an
             * indexed datastore are: the next one reads on after it. */
            in->ds_pos += got;
        } else {
            in->ds_pos = INT64_MAX; /* where the skipping stopped is unknown: start again */
        }
        if (st == DLA_OK && got < count) {
            dla__ds_drop(in->ds->nout, out);
            dla__ds_drop(in->ds->nout, masks);
            st = dla__data_fail(DLA_ERR_STATE,
                                "%s: inputs: the %s ran out of data after %lld observations, but "
                                "its count is %lld",
                                op, in->ds->kind->name, (long long)in->ds_pos,
                                (long long)in->ds->count);
        }
    }
    if (st != DLA_OK) {
        b->status = st;
        snprintf(b->message, sizeof b->message, "%s", dla_last_error());
    }
}

/* Makes the batch of observations order[start..start+count) into b, held,
 * with q's device current on the calling thread meanwhile; a worker's view
 * makes its share of them (dla__mbq_set_worker). */
static void make_batch(dla_mbq *q, int64_t start, int64_t count, batch *b)
{
    batch_clear(b);
    b->count = count;
    const int64_t *obs = q->order + start, *whole = obs;
    const int64_t whole_count = count;
    /* A worker's share: shares differ by one, the first workers taking
     * the remainder (dla_spmd_shares), each a run of the batch in rank
     * order; with none, the batch's first observation, for the shapes. */
    int64_t before = 0, after = 0;
    if (q->workers > 1) {
        const int64_t base = count / q->workers, extra = count % q->workers;
        const int64_t mine = base + (q->worker < extra);
        const int64_t off = q->worker * base + (q->worker < extra ? q->worker : extra);
        b->empty = mine == 0;
        before = mine ? off : 0;
        after = count - before - (mine ? mine : 1);
        obs += before;
        count = mine ? mine : 1;
    }
    b->before = before;
    b->whole = whole_count;
    uint64_t caller_seed, caller_counter;
    dla_rng_get(&caller_seed, &caller_counter);
    dla_rng_set(q->fn_seed, q->fn_counter);
    dla_device *was = dla_device_current();
    dla_device_set_current(q->device);
    dla_tensor *out[MAX_OUTPUTS] = {0}, *held[3 * MAX_OUTPUTS + 1];
    int nheld = 0;
    /* The datastore's images first: the files it skips as corrupt leave
     * their observations out of every other input too, so that images and
     * labels stay paired. */
    dla_tensor *images = NULL;
    int64_t *kept_obs = NULL;
    if (q->imds_input >= 0) {
        int64_t *kept = dla__data_malloc(sizeof *kept * (size_t)count);
        kept_obs = dla__data_malloc(sizeof *kept_obs * (size_t)count);
        int64_t nkept = 0;
        /* A worker draws the other workers' transforms too, and drops
         * them: every image gets the draws it gets in one process. */
        if (q->has_aug)
            dla__imds_augment_skip(q->in[q->imds_input].imds, &q->aug_rng, before);
        if (kept && kept_obs)
            images = dla__imds_batch(q->in[q->imds_input].imds, obs, count,
                                     q->has_aug ? &q->aug_rng : NULL, q->device, kept, &nkept,
                                     "dla_mbq_next");
        else
            dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "dla_mbq_next: out of memory");
        if (q->has_aug)
            dla__imds_augment_skip(q->in[q->imds_input].imds, &q->aug_rng, after);
        if (images) {
            held[nheld++] = images;
            for (int64_t k = 0; k < nkept; k++)
                kept_obs[k] = obs[kept[k]];
            obs = kept_obs;
            count = nkept;
        }
        dla__data_free(kept);
    }
    /* Each generic datastore's outputs, read once by its first input. A
     * worker's sequences are padded to the length the rule gives the
     * whole batch (as a sequence list's are below): it reads the whole
     * batch and joins its share (without images, which may leave some
     * out, the only way a worker's queue is made). */
    dla_tensor *from_ds[MAX_OUTPUTS] = {0}, *ds_mask[MAX_OUTPUTS] = {0};
    for (int i = 0; i < q->nin && b->status == DLA_OK; i++) {
        if (!q->in[i].ds || q->in[i].ds_out != 0 || (q->imds_input >= 0 && !images) || count < 1)
            continue;
        int sequences = 0;
        for (int j = 0; j < q->in[i].ds->nout; j++)
            sequences |= q->in[i + j].tdim != 0;
        const int whole_read = sequences && q->workers > 1 && q->rule.mode != DLA__SEQ_FIXED &&
                               q->imds_input < 0;
        if (whole_read)
            read_datastore(q, i, whole, whole_count, before, before + count, from_ds + i,
                           ds_mask + i, b);
        else
            read_datastore(q, i, obs, count, 0, 0, from_ds + i, ds_mask + i, b);
    }
    for (int i = 0; i < q->nin; i++) {
        if (from_ds[i])
            held[nheld++] = from_ds[i];
        if (ds_mask[i])
            held[nheld++] = ds_mask[i];
    }
    /* Guarded: one dla_scope_end too many in mini_batch_fcn released the
     * batch, then closed the scope of the thread making it. */
    const int mark = dla__scope_open_guarded(NULL);
    int o = 0;
    for (int i = 0; i < q->nin; i++) {
        const mbq_input *in = &q->in[i];
        dla_tensor *t = NULL, *m = NULL;
        /* A worker pads (or truncates) its sequences to the length the
         * rule gives the whole batch, so that its rows are those of the
         * batch one process makes. */
        dla__seq_rule rule = q->rule;
        if (in->seqs && q->workers > 1 && rule.mode != DLA__SEQ_FIXED) {
            rule.fixed = dla__seq_steps(in->seqs, whole_count, whole, &q->rule);
            rule.mode = DLA__SEQ_FIXED;
        }
        if (in->imds) {
            t = images;
        } else if (in->ds) {
            t = from_ds[i];
            m = ds_mask[i];
        } else if (q->imds_input >= 0 && !images) {
            t = NULL; /* the images failed: their error is the batch's */
        } else if (in->tensor) {
            t = gather(in->tensor, in->bdim, obs, count);
            if (t && dla_tensor_device(t) != q->device)
                t = dla_tensor_to_device(t, q->device);
        } else if (dla__seq_pad(in->seqs, count, obs, &rule, q->device, "dla_mbq_next", &t,
                                in->mask ? &m : NULL) == DLA_OK) {
            /* Held, not in this scope: dropped after the outputs are held. */
            held[nheld++] = t;
            if (m)
                held[nheld++] = m;
        }
        if (t && in->cast >= 0 && dla_tensor_dtype(t) != (dla_dtype)in->cast)
            t = dla_cast(t, (dla_dtype)in->cast);
        if (t && in->has_format) {
            int64_t dims[DLA_MAX_DIMS];
            int nd = dla_tensor_dims(t, dims);
            t = dla_reshape(t, in->format, nd, dims);
        }
        out[o++] = t;
        if (in->mask)
            out[o++] = m;
    }
    if (b->status == DLA_OK && !first_error(b, out, o) && q->fn) {
        /* A stale message must not be taken for the function's. */
        dla_clear_error();
        dla_status st = q->fn(q->fn_ctx, o, out);
        const int imbalance = dla__scope_guarded_imbalance(mark);
        if (st == DLA_OK && imbalance) {
            char why[120];
            b->status = DLA_ERR_STATE;
            snprintf(b->message, sizeof b->message, "dla_mbq_next: mini_batch_fcn: %s",
                     dla__scope_imbalance_str(imbalance, why, sizeof why));
        } else if (st != DLA_OK) {
            b->status = st;
            snprintf(b->message, sizeof b->message, "dla_mbq_next: mini_batch_fcn: %s",
                     dla_last_status() != DLA_OK ? dla_last_error() : dla_status_str(st));
        } else {
            first_error(b, out, o);
        }
    }
    if (b->status == DLA_OK)
        for (int i = 0; i < o; i++)
            b->out[i] = dla__data_hold(out[i]);
    dla__scope_close_guarded(mark);
    for (int i = 0; i < nheld; i++)
        dla_tensor_release(held[i]);
    dla__data_free(kept_obs);
    b->aug_after = q->aug_rng;
    dla_rng_get(NULL, &q->fn_counter);
    b->fn_after = q->fn_counter;
    dla_rng_set(caller_seed, caller_counter);
    dla_device_set_current(was);
}

/* ------------------------------------------------------ background dispatch */

static void *dispatch_main(void *arg)
{
    dla_mbq *q = arg;
    dla_device_set_current(q->device);
    /* A batch is small work beside a training step. Left at the default,
     * its kernels would start a second OpenMP team on this thread; with
     * more OpenMP threads than cores libgomp stops spin-waiting, so every
     * parallel region of the training step would then sleep and wake its
     * threads through the kernel (measured: 6% of an epoch of the digit
     * CNN). One thread here keeps the step's team alone on the cores. */
    dla__omp_set_num_threads(1);
    pthread_mutex_lock(&q->lock);
    while (!q->stop) {
        if (q->count < q->depth && q->made < end_of_pass(q)) {
            int64_t start = q->made, count = batch_size_at(q, start);
            unsigned gen = q->gen;
            q->made += count;
            q->busy = 1;
            pthread_mutex_unlock(&q->lock);
            make_batch(q, start, count, &q->work);
            pthread_mutex_lock(&q->lock);
            q->busy = 0;
            if (gen == q->gen && !q->stop) {
                batch *slot = &q->ring[(q->head + q->count) % q->depth];
                *slot = q->work;
                memset(q->work.out, 0, sizeof q->work.out);
                q->count++;
            } else {
                batch_clear(&q->work);
            }
            pthread_cond_broadcast(&q->cond);
            continue;
        }
        pthread_cond_wait(&q->cond, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* Runs change(q) with the dispatch thread idle and its batches made ahead
 * dropped; it then starts again from q->pos. */
static void with_dispatch_idle(dla_mbq *q, void (*change)(dla_mbq *q, int64_t arg), int64_t arg)
{
    if (!q->background) {
        change(q, arg);
        return;
    }
    pthread_mutex_lock(&q->lock);
    q->gen++;
    while (q->busy)
        pthread_cond_wait(&q->cond, &q->lock);
    for (; q->count; q->count--, q->head = (q->head + 1) % q->depth)
        batch_clear(&q->ring[q->head]);
    q->head = 0;
    /* The dropped batches' draws are drawn again by the batches that
     * replace them, as they would be without the thread. */
    q->aug_rng = q->aug_at_pos;
    q->fn_counter = q->fn_at_pos;
    change(q, arg);
    q->made = q->pos;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

/* ------------------------------------------------------------- the queue */

static void queue_free(dla_mbq *q)
{
    if (!q)
        return;
    if (q->background) {
        pthread_mutex_lock(&q->lock);
        q->stop = 1;
        q->gen++;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->thread, NULL);
        for (int i = 0; i < q->depth; i++)
            batch_clear(&q->ring[i]);
        batch_clear(&q->work);
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
    }
    for (int i = 0; i < q->nin; i++) {
        dla_tensor_release(q->in[i].tensor);
        dla__imds_release(q->in[i].imds);
        dla__ds_release(q->in[i].ds);
    }
    dla__data_free(q->ring);
    dla__data_free(q->base);
    dla__data_free(q->order);
    q->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    q->background = 0;
    q->nin = q->nout = 0;
    dla__quarantine(DLA__RING_OBJECTS, q);
}

/* Nonzero when q is a live queue; else logs why for op. */
static int mbq_live(const dla_mbq *q, const char *op)
{
    if (q->magic == DLA__HANDLE_MBQ)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)q,
                q->magic == DLA__HANDLE_DEAD ? "a mini-batch queue freed already (freed twice, or "
                "used after dla_mbq_free)" : "not a mini-batch queue handle");
    return 0;
}

DLA_API void dla_mbq_free(dla_mbq *q)
{
    if (q && mbq_live(q, "dla_mbq_free"))
        queue_free(q);
}

/* Starts the dispatch thread of a queue whose fields are all set. */
static dla_status start_dispatch(dla_mbq *q, const char *op)
{
    q->ring = dla__data_calloc((size_t)q->depth, sizeof *q->ring);
    if (!q->ring)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %d batches", op, q->depth);
    if (pthread_mutex_init(&q->lock, NULL) != 0)
        return dla__data_fail(DLA_ERR_STATE, "%s: cannot make the dispatch lock", op);
    if (pthread_cond_init(&q->cond, NULL) != 0) {
        pthread_mutex_destroy(&q->lock);
        return dla__data_fail(DLA_ERR_STATE, "%s: cannot make the dispatch condition", op);
    }
    int err = pthread_create(&q->thread, NULL, dispatch_main, q);
    if (err) {
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->lock);
        return dla__data_fail(DLA_ERR_STATE, "%s: cannot start the dispatch thread: %s", op,
                              strerror(err));
    }
    q->background = 1;
    return DLA_OK;
}

static dla_status check_format(const mbq_input *in, int i, const char *op)
{
    if (!in->has_format)
        return DLA_OK;
    if (in->seqs) {
        if (strcmp(in->format, "CBT") != 0)
            return dla__data_fail(DLA_ERR_FORMAT,
                                  "%s: argument inputs[%d]: format \"%s\"; sequence batches are "
                                  "\"CBT\"",
                                  op, i, in->format);
        return DLA_OK;
    }
    /* Relabel an empty batch of the same shape to see whether it fits. */
    int64_t dims[DLA_MAX_DIMS];
    int nd;
    dla_dtype dt;
    if (in->imds) {
        int h, w, c;
        dla__imds_out_size(in->imds, &h, &w, &c);
        nd = 4;
        dims[0] = h, dims[1] = w, dims[2] = c;
        dt = in->imds->dtype;
    } else {
        nd = dla_tensor_dims(in->tensor, dims);
        dt = dla_tensor_dtype(in->tensor);
    }
    dims[in->bdim - 1] = 0;
    dla_scope_begin();
    dla_tensor *z = dla_zeros(dt, "", nd, dims);
    dla_tensor *r = dla_reshape(z, in->format, nd, dims);
    dla_status st = dla_tensor_status(r);
    if (st != DLA_OK)
        st = dla__data_fail(st, "%s: argument inputs[%d]: %s", op, i, dla_tensor_error(r));
    else if (dla_tensor_find_dim(r, 'B') != in->bdim)
        st = dla__data_fail(DLA_ERR_FORMAT,
                            "%s: argument inputs[%d]: format \"%s\" puts B at dim %d, but the "
                            "observations lie along dim %d",
                            op, i, in->format, dla_tensor_find_dim(r, 'B'), in->bdim);
    dla_scope_end();
    return st;
}

/* The output cast and format of a datastore's output j: casts[j] and
 * formats[j] when given, else cast and format. */
static int datastore_output(mbq_input *in, int i, int j, const dla_mbq_input *src,
                            const char *op)
{
    const char *cast = src->casts && src->casts[j] ? src->casts[j] : src->cast;
    const char *format = src->formats && src->formats[j] ? src->formats[j] : src->format;
    in->cast = -1;
    if (cast && cast[0] && (in->cast = dla__data_dtype_by_name(cast)) < 0) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: cast \"%s\" of output %d; \"single\", "
                       "\"double\", \"int32\", \"uint8\" or \"logical\"",
                       op, i, cast, j + 1);
        return -1;
    }
    if (format) {
        if (strlen(format) > DLA_MAX_DIMS || strspn(format, "SCBTU") != strlen(format) ||
            !strchr(format, 'B')) {
            dla__data_fail(DLA_ERR_FORMAT,
                           "%s: argument inputs[%d]: format \"%s\" of output %d; labels S, C, B, "
                           "T, U with a B for the observations",
                           op, i, format, j + 1);
            return -1;
        }
        /* Its labels' order is checked here (the fit of its dims is a
         * batch's): a relabeling cannot reorder, so "BC" failed every batch. */
        const int64_t ones[DLA_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
        dla__format f;
        int nd;
        char why[512];
        if (dla__format_parse(op, format, (int)strlen(format), ones, &f, &nd) != DLA_OK)
            snprintf(why, sizeof why, "%s", dla_last_error());
        else if (!f.is_canonical)
            snprintf(why, sizeof why, "not in canonical order (S, C, B, T, U); a relabeling "
                                      "cannot reorder data");
        else
            why[0] = '\0';
        if (why[0]) {
            dla__data_fail(DLA_ERR_FORMAT, "%s: argument inputs[%d]: format \"%s\" of output %d: %s",
                           op, i, format, j + 1, why);
            return -1;
        }
        snprintf(in->format, sizeof in->format, "%s", format);
        in->has_format = 1;
        /* B's dim: the labels are in canonical order (S..., C, B, T, U),
         * and so is T's: the steps of sequences, padded per batch. */
        in->at = dla__ds_format_b_dim(format);
        const char *steps = strchr(format, 'T');
        in->tdim = steps ? (int)(steps - format) + 1 : 0;
    }
    return 0;
}

/* A generic datastore input: one queue input per output, the first of
 * them q->in[q->nin - 1]; returns its observation count or -1. */
static int64_t take_datastore(dla_mbq *q, int i, const dla_mbq_input *src, const char *op)
{
    char arg[40];
    snprintf(arg, sizeof arg, "inputs[%d].datastore", i);
    if (!dla__ds_live(src->datastore, op, arg))
        return -1;
    dla_datastore *ds = src->datastore;
    /* Each input read in order is read by the position of what it reads:
     * two that move one (one datastore twice, or a datastore and a
     * transform of it) would take each other's observations. */
    for (int k = 0; k < q->nin - 1 && !dla__ds_indexed(ds); k++)
        if (q->in[k].ds && q->in[k].ds_out == 0 && !dla__ds_indexed(q->in[k].ds) &&
            dla__ds_share_position(q->in[k].ds, ds)) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument inputs[%d].datastore reads, in order, a datastore an "
                           "input before it reads too (the same one, or one made of the other): "
                           "each would take the other's observations; give one datastore of both "
                           "outputs (a transform with two), or one read by number",
                           op, i);
            return -1;
        }
    /* A count learned before (by trainnet, or an earlier queue) is
     * learned again, the datastore may have changed since; trainnet,
     * testnet and minibatchpredict learn it first and make their queues
     * counted (dla__mbq_create_counted). */
    if (dla__ds_learn_count(ds, q->recount, op) != DLA_OK)
        return -1;
    /* Inputs before it have at least an output each: this bounds both. */
    if (q->nout + ds->nout > MAX_OUTPUTS) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: %d more outputs; a queue has at most %d", op, i,
                       ds->nout, MAX_OUTPUTS);
        return -1;
    }
    const int first = q->nin - 1;
    q->nin += ds->nout - 1;
    for (int j = 0; j < ds->nout; j++) {
        mbq_input *in = &q->in[first + j];
        in->ds = dla__ds_retain(ds);
        in->ds_out = j;
        in->ds_pos = INT64_MAX;
        if (datastore_output(in, i, j, src, op) < 0)
            return -1;
    }
    /* The mask of its first sequence output follows that output. */
    int masked = 0;
    for (int j = 0; j < ds->nout && src->mask && !masked; j++)
        masked = q->in[first + j].mask = q->in[first + j].tdim != 0;
    if (src->mask && !masked) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: mask, but no output of the %s is a sequence "
                       "(give it a format with a T label: formats)",
                       op, i, ds->kind->name);
        return -1;
    }
    if (q->nout + ds->nout + masked > MAX_OUTPUTS) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: %d more outputs, its mask counted; a queue has "
                       "at most %d",
                       op, i, ds->nout + masked, MAX_OUTPUTS);
        return -1;
    }
    if (!dla__ds_indexed(ds)) {
        q->in_order = 1;
        /* Read by the queue from its start. */
        dla__ds_rewind(ds);
        q->in[first].ds_pos = 0;
    }
    q->nout += ds->nout + masked;
    return ds->count;
}

/* Reads and checks inputs[i] into q->in[q->nin] (a datastore's into one
 * each of its outputs); returns its observation count (or -1 after setting
 * the error). */
static int64_t take_input(dla_mbq *q, int i, const dla_mbq_input *src, const char *op)
{
    /* A datastore's outputs fill the slots 16 inputs with masks would. */
    if (q->nout + 1 + (src->mask != 0) > MAX_OUTPUTS) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: more than %d outputs in all (the datastores' "
                       "outputs and masks counted)",
                       op, i, MAX_OUTPUTS);
        return -1;
    }
    mbq_input *in = &q->in[q->nin++];
    if ((src->tensor != NULL) + (src->sequences != NULL) + (src->images != NULL) +
            (src->datastore != NULL) !=
        1) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: set exactly one of tensor, sequences, images and "
                       "datastore",
                       op, i);
        return -1;
    }
    if (src->datastore)
        return take_datastore(q, i, src, op);
    if (src->formats || src->casts) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                       "%s: argument inputs[%d]: formats and casts are for datastore inputs", op,
                       i);
        return -1;
    }
    in->cast = -1;
    if (src->cast && src->cast[0]) {
        in->cast = dla__data_dtype_by_name(src->cast);
        if (in->cast < 0) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument inputs[%d]: cast \"%s\"; \"single\", \"double\", "
                           "\"int32\", \"uint8\" or \"logical\"",
                           op, i, src->cast);
            return -1;
        }
    }
    if (src->format) {
        if (strlen(src->format) > DLA_MAX_DIMS) {
            dla__data_fail(DLA_ERR_FORMAT, "%s: argument inputs[%d]: format \"%s\" is too long",
                           op, i, src->format);
            return -1;
        }
        snprintf(in->format, sizeof in->format, "%s", src->format);
        in->has_format = 1;
    }
    in->mask = src->mask != 0;
    int64_t count;
    if (src->images) {
        if (q->imds_input >= 0) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument inputs[%d]: a second datastore input (inputs[%d] is one); "
                           "a queue reads one datastore",
                           op, i, q->imds_arg);
            return -1;
        }
        if (in->mask) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument inputs[%d]: mask is for sequence inputs", op, i);
            return -1;
        }
        if (!(in->imds = dla__imds_snapshot(src->images, op)))
            return -1;
        /* Its slot: a generic datastore before it took one per output. */
        q->imds_input = (int)(in - q->in);
        q->imds_arg = i;
        in->bdim = 4;
        count = dla__imds_count(in->imds);
    } else if (src->sequences) {
        in->seqs = src->sequences;
        count = dla_seqlist_count(src->sequences);
    } else {
        if (dla_tensor_status(src->tensor) != DLA_OK) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument inputs[%d]: an error tensor: %s",
                           op, i, dla_tensor_error(src->tensor));
            return -1;
        }
        if (in->mask) {
            dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                           "%s: argument inputs[%d]: mask is for sequence inputs", op, i);
            return -1;
        }
        const char *fmt = dla_tensor_format(src->tensor);
        if (fmt[0]) {
            in->bdim = dla_tensor_find_dim(src->tensor, 'B');
            if (!in->bdim) {
                dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                               "%s: argument inputs[%d]: format \"%s\" has no B dim to take "
                               "observations along",
                               op, i, fmt);
                return -1;
            }
        } else {
            in->bdim = dla_tensor_ndims(src->tensor);
            if (in->bdim < 1) {
                dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                               "%s: argument inputs[%d]: a scalar holds no observations", op, i);
                return -1;
            }
        }
        in->tensor = dla_tensor_retain(src->tensor);
        count = dla_tensor_dim(src->tensor, in->bdim);
    }
    if (check_format(in, i, op) != DLA_OK)
        return -1;
    q->nout += 1 + in->mask;
    return count;
}

static dla_status parse_options(dla_mbq *q, const dla_mbq_options *opts, const char *op)
{
    const dla_mbq_options o = opts ? *opts : (dla_mbq_options){0};
    if (o.mini_batch_size < 0 || o.prefetch < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument opts: %s %lld < 0", op,
                              o.prefetch < 0 ? "prefetch" : "mini_batch_size",
                              (long long)(o.prefetch < 0 ? o.prefetch : o.mini_batch_size));
    q->mbs = o.mini_batch_size ? o.mini_batch_size : 128;
    q->depth = o.prefetch ? o.prefetch : 2;
    if (!o.partial_mini_batch || !o.partial_mini_batch[0] ||
        strcmp(o.partial_mini_batch, "return") == 0)
        q->discard = 0;
    else if (strcmp(o.partial_mini_batch, "discard") == 0)
        q->discard = 1;
    else
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: partial_mini_batch \"%s\"; \"return\" or "
                              "\"discard\"",
                              op, o.partial_mini_batch);
    dla_status st = dla__seq_parse(&o.sequence, &q->rule, op);
    if (st != DLA_OK)
        return st;
    q->fn = o.mini_batch_fcn;
    q->fn_ctx = o.mini_batch_ctx;
    q->device = o.device ? o.device : dla_device_current();
    if (!q->device)
        return dla__data_fail(DLA_ERR_NO_DEVICE, "%s: no device to make batches on: %s", op,
                              dla_last_error());
    q->seed_words[0] = (uint32_t)o.seed;
    q->seed_words[1] = (uint32_t)(o.seed >> 32);
    q->nseed_words = o.seed >> 32 ? 2 : 1;
    q->background = 0;
    return DLA_OK;
}

/* base and order, both holding first[0..n-1] (NULL: 0..n-1). */
static dla_status make_order(dla_mbq *q, const int64_t *first, const char *op)
{
    size_t bytes = (size_t)(q->n ? q->n : 1) * sizeof(int64_t);
    q->base = dla__data_malloc(bytes);
    q->order = dla__data_malloc(bytes);
    if (!q->base || !q->order)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld observation numbers",
                              op, (long long)q->n);
    for (int64_t i = 0; i < q->n; i++)
        q->base[i] = q->order[i] = first ? first[i] : i;
    return DLA_OK;
}

static dla_status create_queue(int ninputs, const dla_mbq_input *inputs,
                               const dla_mbq_options *opts, int recount, int align_steps,
                               int nan_pad_targets, dla_mbq **out)
{
    static const char op[] = "dla_mbq_create";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (ninputs < 1 || ninputs > MAX_INPUTS || !inputs)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument ninputs: %d; 1..%d inputs are taken", op, ninputs,
                              MAX_INPUTS);
    dla_mbq *q = dla__data_calloc(1, sizeof *q);
    if (!q)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    q->magic = DLA__HANDLE_MBQ;
    q->imds_input = -1;
    q->recount = recount;
    dla_status st = parse_options(q, opts, op);
    for (int i = 0; i < ninputs && st == DLA_OK; i++) {
        int64_t count = take_input(q, i, &inputs[i], op);
        if (count < 0) {
            st = dla_last_status();
        } else if (i > 0 && count != q->n) {
            st = dla__data_fail(DLA_ERR_SHAPE,
                                "%s: argument inputs[%d]: %lld observations, but inputs[0] has "
                                "%lld",
                                op, i, (long long)count, (long long)q->n);
        } else {
            q->n = count;
        }
    }
    if (st == DLA_OK && q->in_order && q->imds_input >= 0)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                            "%s: argument inputs: a datastore read in order beside an image "
                            "datastore (whose skipped files would break the order)",
                            op);
    if (st == DLA_OK && q->n > INT32_MAX)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %lld observations; at most 2^31-1", op,
                            (long long)q->n);
    if (st == DLA_OK)
        st = make_order(q, NULL, op);
    if (st == DLA_OK && q->imds_input >= 0 && q->in[q->imds_input].imds->augment) {
        /* np.random.default_rng(seed), as the augmented datastore's own. */
        uint64_t s = q->in[q->imds_input].imds->augment->seed;
        q->has_aug = 1;
        q->aug_words[0] = (uint32_t)s;
        q->aug_words[1] = (uint32_t)(s >> 32);
        q->naug_words = s >> 32 ? 2 : 1;
        dla__data_rng_seed_words(&q->aug_rng, q->naug_words, q->aug_words);
        q->aug_at_pos = q->aug_rng;
    }
    q->align_steps = align_steps;
    q->nan_pad_targets = nan_pad_targets;
    if (st == DLA_OK) {
        dla__data_rng_seed_words(&q->rng, q->nseed_words, q->seed_words);
        uint64_t seed, counter;
        dla_rng_get(&seed, &counter);
        q->fn_seed = mix64(seed ^ mix64(counter ^ 0x6d62712d666e7321ull)); /* "mbq-fns!" */
        if (opts && opts->dispatch_in_background)
            st = start_dispatch(q, op);
    }
    if (st != DLA_OK) {
        queue_free(q);
        return st;
    }
    *out = q;
    return DLA_OK;
}

DLA_API dla_status dla_mbq_create(int ninputs, const dla_mbq_input *inputs,
                                  const dla_mbq_options *opts, dla_mbq **out)
{
    return create_queue(ninputs, inputs, opts, 1, 0, 0, out);
}

dla_status dla__mbq_create_counted(int ninputs, const dla_mbq_input *inputs,
                                   const dla_mbq_options *opts, int align_steps,
                                   int nan_pad_targets, dla_mbq **out)
{
    return create_queue(ninputs, inputs, opts, 0, align_steps, nan_pad_targets, out);
}

DLA_API dla_status dla_mbq_partition(dla_mbq *q, int n, int index, dla_mbq **out)
{
    static const char op[] = "dla_mbq_partition";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!q)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument q is NULL", op);
    if (!mbq_live(q, op))
        return dla_last_status();
    if (n < 1 || index < 0 || index >= n)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument %s: %d; parts n >= 1, index in 0..n-1", op,
                              n < 1 ? "n" : "index", n < 1 ? n : index);
    if (q->in_order)
        return dla__data_fail(DLA_ERR_STATE,
                              "%s: argument q: its datastore is read in order and cannot be "
                              "partitioned (a custom datastore with read_at can)",
                              op);
    dla_mbq *p = dla__data_calloc(1, sizeof *p);
    if (!p)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    p->magic = DLA__HANDLE_MBQ;
    p->nin = q->nin;
    p->nout = q->nout;
    memcpy(p->in, q->in, sizeof p->in);
    for (int i = 0; i < p->nin; i++) {
        dla_tensor_retain(p->in[i].tensor);
        if (p->in[i].imds)
            dla__imds_retain(p->in[i].imds);
        dla__ds_retain(p->in[i].ds);
    }
    p->imds_input = q->imds_input;
    p->imds_arg = q->imds_arg;
    p->mbs = q->mbs;
    p->discard = q->discard;
    p->rule = q->rule;
    p->align_steps = q->align_steps;
    p->nan_pad_targets = q->nan_pad_targets;
    p->fn = q->fn;
    p->fn_ctx = q->fn_ctx;
    p->device = q->device;
    p->depth = q->depth;
    /* The parent's seed words and the index: a stream of the part's own. */
    memcpy(p->seed_words, q->seed_words, sizeof p->seed_words);
    p->nseed_words = q->nseed_words < MAX_SEED_WORDS ? q->nseed_words + 1 : MAX_SEED_WORDS;
    p->seed_words[p->nseed_words - 1] = (uint32_t)index;
    dla__data_rng_seed_words(&p->rng, p->nseed_words, p->seed_words);
    /* A stream of the part's own for its functions too, from the parent's
     * seed and the index (the parent's counter is its own business). */
    p->fn_seed = mix64(q->fn_seed ^ mix64((uint64_t)index + 1));
    /* The same for the augmentation's stream: parts draw their own. */
    if (q->has_aug) {
        p->has_aug = 1;
        memcpy(p->aug_words, q->aug_words, sizeof p->aug_words);
        p->naug_words = q->naug_words < MAX_SEED_WORDS ? q->naug_words + 1 : MAX_SEED_WORDS;
        p->aug_words[p->naug_words - 1] = (uint32_t)index;
        dla__data_rng_seed_words(&p->aug_rng, p->naug_words, p->aug_words);
        p->aug_at_pos = p->aug_rng;
    }
    /* Part sizes differ by at most one; the first parts take the remainder. */
    int64_t base = q->n / n, extra = q->n % n;
    int64_t start = index * base + (index < extra ? index : extra);
    p->n = base + (index < extra);
    dla_status st = make_order(p, q->order + start, op);
    if (st == DLA_OK && q->background)
        st = start_dispatch(p, op);
    if (st != DLA_OK) {
        queue_free(p);
        return st;
    }
    *out = p;
    return DLA_OK;
}

/* ---------------------------------------------------------------- passes */

DLA_API int dla_mbq_hasdata(dla_mbq *q)
{
    if (!q || !mbq_live(q, "dla_mbq_hasdata"))
        return 0;
    if (q->background)
        pthread_mutex_lock(&q->lock);
    int has = q->pos < end_of_pass(q);
    if (q->background)
        pthread_mutex_unlock(&q->lock);
    return has;
}

DLA_API dla_status dla_mbq_next(dla_mbq *q, int n, dla_tensor **outputs)
{
    static const char op[] = "dla_mbq_next";
    if (outputs)
        for (int i = 0; i < n; i++)
            outputs[i] = NULL;
    if (!q || !outputs)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op,
                              q ? "outputs" : "q");
    if (!mbq_live(q, op))
        return dla_last_status();
    if (n != q->nout)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument n: %d, but the queue has %d output%s", op, n,
                              q->nout, q->nout == 1 ? "" : "s");
    batch b;
    memset(&b, 0, sizeof b);
    if (!q->background) {
        if (q->pos >= end_of_pass(q))
            return dla__data_fail(DLA_ERR_STATE,
                                  "%s: no mini-batch left in this pass of %lld observations; call "
                                  "dla_mbq_reset or dla_mbq_shuffle",
                                  op, (long long)q->n);
        make_batch(q, q->pos, batch_size_at(q, q->pos), &b);
        q->pos += b.count;
        q->aug_at_pos = b.aug_after;
        q->fn_at_pos = b.fn_after;
        q->last_empty = b.empty;
        q->last_before = b.before;
        q->last_whole = b.whole;
    } else {
        pthread_mutex_lock(&q->lock);
        if (q->pos >= end_of_pass(q)) {
            pthread_mutex_unlock(&q->lock);
            return dla__data_fail(DLA_ERR_STATE,
                                  "%s: no mini-batch left in this pass of %lld observations; call "
                                  "dla_mbq_reset or dla_mbq_shuffle",
                                  op, (long long)q->n);
        }
        while (q->count == 0)
            pthread_cond_wait(&q->cond, &q->lock);
        b = q->ring[q->head];
        memset(q->ring[q->head].out, 0, sizeof q->ring[q->head].out);
        q->head = (q->head + 1) % q->depth;
        q->count--;
        q->pos += b.count;
        q->aug_at_pos = b.aug_after;
        q->fn_at_pos = b.fn_after;
        q->last_empty = b.empty;
        q->last_before = b.before;
        q->last_whole = b.whole;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
    }
    if (b.status != DLA_OK) {
        dla_status st = b.status;
        dla__data_fail(st, "%s", b.message);
        batch_clear(&b);
        return st;
    }
    memcpy(outputs, b.out, (size_t)n * sizeof *outputs);
    return dla__data_deliver_all(n, outputs, op);
}

static void change_reset(dla_mbq *q, int64_t arg)
{
    (void)arg;
    q->pos = 0;
}

static void change_shuffle(dla_mbq *q, int64_t arg)
{
    (void)arg;
    /* numpy's permutation(n): shuffle 0..n-1 afresh and read this queue's
     * observation numbers through it. */
    for (int64_t i = 0; i < q->n; i++)
        q->order[i] = i;
    dla__data_rng_shuffle(&q->rng, q->n, q->order);
    for (int64_t i = 0; i < q->n; i++)
        q->order[i] = q->base[q->order[i]];
    q->pos = 0;
}

static void change_batch_size(dla_mbq *q, int64_t size)
{
    q->mbs = size;
    q->pos = 0;
}

static void change_discard(dla_mbq *q, int64_t discard)
{
    q->discard = (int)discard;
    q->pos = 0;
}

/* Sets whether a pass drops the last partial mini-batch (trainnet's
 * population statistics read every observation of a queue made with
 * "discard") and starts a new pass; returns the previous setting. */
int dla__mbq_set_discard(dla_mbq *q, int discard)
{
    const int was = q->discard;
    with_dispatch_idle(q, change_discard, discard != 0);
    return was;
}

/* The calls below check the handle as next and hasdata do: on a freed
 * queue they wrote (reset, shuffle: its freed order) or read freed memory. */
DLA_API void dla_mbq_reset(dla_mbq *q)
{
    if (q && mbq_live(q, "dla_mbq_reset"))
        with_dispatch_idle(q, change_reset, 0);
}

DLA_API void dla_mbq_shuffle(dla_mbq *q)
{
    if (!q || !mbq_live(q, "dla_mbq_shuffle"))
        return;
    if (q->in_order) {
        dla__data_fail(DLA_ERR_STATE,
                       "dla_mbq_shuffle: argument q: its datastore is read in order and cannot "
                       "be shuffled (a custom datastore with read_at can); the order is kept");
        return;
    }
    with_dispatch_idle(q, change_shuffle, 0);
}

static void change_worker(dla_mbq *q, int64_t arg)
{
    q->workers = (int)(arg >> 32);
    q->worker = (int)(arg & 0xffffffff);
    q->pos = 0;
}

dla_status dla__mbq_set_worker(dla_mbq *q, int workers, int worker)
{
    static const char op[] = "dla__mbq_set_worker";
    if (!q || !mbq_live(q, op))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument q", op);
    if (workers < 1 || worker < 0 || worker >= workers)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: worker %d of %d; workers >= 1, worker in 0..workers-1", op,
                              worker, workers);
    with_dispatch_idle(q, change_worker, ((int64_t)workers << 32) | (int64_t)worker);
    return DLA_OK;
}

int dla__mbq_last_empty(const dla_mbq *q)
{
    return q && q->magic == DLA__HANDLE_MBQ && q->last_empty;
}

void dla__mbq_last_share(const dla_mbq *q, int64_t *before, int64_t *whole)
{
    const int ok = q && q->magic == DLA__HANDLE_MBQ;
    *before = ok ? q->last_before : 0;
    *whole = ok ? q->last_whole : 0;
}

DLA_API dla_status dla_mbq_set_mini_batch_size(dla_mbq *q, int64_t size)
{
    static const char op[] = "dla_mbq_set_mini_batch_size";
    if (q && !mbq_live(q, op))
        return dla_last_status();
    if (!q || size < 1)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s", op,
                              q ? "size < 1" : "q is NULL");
    with_dispatch_idle(q, change_batch_size, size);
    return DLA_OK;
}

DLA_API int dla_mbq_num_outputs(const dla_mbq *q)
{
    return q && mbq_live(q, "dla_mbq_num_outputs") ? q->nout : 0;
}

DLA_API int64_t dla_mbq_num_observations(const dla_mbq *q)
{
    return q && mbq_live(q, "dla_mbq_num_observations") ? q->n : 0;
}

DLA_API int64_t dla_mbq_num_batches(const dla_mbq *q)
{
    if (!q || !mbq_live(q, "dla_mbq_num_batches"))
        return 0;
    /* Not (n + mbs - 1) / mbs: that overflows for a batch size near
     * INT64_MAX ("all at once") and counted no batch. */
    return q->n / q->mbs + (!q->discard && q->n % q->mbs != 0);
}

DLA_API dla_status dla_mbq_order(const dla_mbq *q, int64_t *order, int64_t count)
{
    if (q && !mbq_live(q, "dla_mbq_order"))
        return dla_last_status();
    if (!q || !order || count != q->n)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "dla_mbq_order: argument %s", !q ? "q is NULL"
                                                            : !order ? "order is NULL"
                                                                     : "count is not the queue's "
                                                                       "observation count");
    memcpy(order, q->order, (size_t)count * sizeof *order);
    return DLA_OK;
}

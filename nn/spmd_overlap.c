/*
 * spmd_overlap.c - trainnet's gradient reduction overlapped with the
 * backward pass (docs/parallel.md, "Reduction cost").
 *
 * The buckets are dla_spmd_combine's, filled with the same ops (so the
 * same bits go in), but each is started with dla_allreduce_start as soon
 * as the backward sweep has handed over its last tensor
 * (dla_gradient_hooked), instead of all of them after the sweep. The
 * backward finishes the last learnables first, so the buckets start from
 * the last one down: bucket b starts, between two steps of the sweep, once
 * it is complete and every bucket after it has started. That order is
 * fixed by the buckets alone, the same on every rank, as the order of
 * collectives must be. Between the sweep's steps the requests in flight
 * are tested, which is what moves an MPI reduction on. The buckets the
 * sweep's last step completes are reduced after it, blocking.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include "nn/spmd_impl.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

struct dla__overlap {
    int n, nb;
    double weight;
    dla_dtype *dtype;        /* each tensor's, as planned */
    int *first, *count;      /* bucket b: tensors first[b] .. + count[b] - 1 */
    int *bucket_of;
    int *missing;            /* tensors of each bucket not handed over yet */
    dla_tensor **got;        /* the handed-over tensors (references) */
    dla_tensor **buf;        /* each started bucket (a reference) */
    dla_spmd_request **req;  /* NULL once ended */
    dla_status *st;          /* each bucket's result once ended */
    char (*msg)[512];
    double *t_start, *t_end;
    int next;                /* the next bucket to start; -1: all started */
    int failed;              /* a start failed without taking part */
    double t_backward;       /* when flush was called: the backward's end */
    dla_tensor **io;         /* room for the caller's n tensors (end's x and out) */
    int early;               /* buckets started during the backward */
};

static double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void dla__overlap_free(dla__overlap *o)
{
    if (!o)
        return;
    for (int i = 0; o->got && i < o->n; i++)
        dla_tensor_release(o->got[i]);
    for (int b = 0; o->buf && b < o->nb; b++)
        dla_tensor_release(o->buf[b]);
    dla_free(o->dtype);
    dla_free(o->first);
    dla_free(o->count);
    dla_free(o->bucket_of);
    dla_free(o->missing);
    dla_free(o->got);
    dla_free(o->buf);
    dla_free(o->req);
    dla_free(o->st);
    dla_free(o->msg);
    dla_free(o->t_start);
    dla_free(o->t_end);
    dla_free(o->io);
    dla_free(o);
}

dla__overlap *dla__overlap_begin(int n, dla_tensor *const *like, double weight)
{
    dla__overlap *o = dla_malloc(sizeof *o);
    if (!o) {
        dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        return NULL;
    }
    memset(o, 0, sizeof *o);
    o->n = n;
    o->weight = weight;
    size_t k = (size_t)(n ? n : 1);
    o->dtype = dla_malloc(sizeof *o->dtype * k);
    o->first = dla_malloc(sizeof *o->first * k);
    o->count = dla_malloc(sizeof *o->count * k);
    o->bucket_of = dla_malloc(sizeof *o->bucket_of * k);
    o->missing = dla_malloc(sizeof *o->missing * k);
    o->got = dla_malloc(sizeof *o->got * k);
    o->buf = dla_malloc(sizeof *o->buf * k);
    o->req = dla_malloc(sizeof *o->req * k);
    o->st = dla_malloc(sizeof *o->st * k);
    o->msg = dla_malloc(sizeof *o->msg * k);
    o->t_start = dla_malloc(sizeof *o->t_start * k);
    o->t_end = dla_malloc(sizeof *o->t_end * k);
    o->io = dla_malloc(sizeof *o->io * k);
    if (!o->io || !o->dtype || !o->first || !o->count || !o->bucket_of || !o->missing || !o->got ||
        !o->buf || !o->req || !o->st || !o->msg || !o->t_start || !o->t_end) {
        o->n = 0; /* nothing to release in got[] and buf[] */
        dla__overlap_free(o);
        dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        return NULL;
    }
    size_t cap = dla__spmd_bucket_bytes();
    for (int first = 0; first < n;) {
        int count = dla__spmd_bucket_count(n, like, first, cap);
        o->first[o->nb] = first;
        o->count[o->nb] = count;
        o->missing[o->nb] = count;
        for (int i = first; i < first + count; i++)
            o->bucket_of[i] = o->nb;
        o->nb++;
        first += count;
    }
    for (int i = 0; i < n; i++) {
        o->dtype[i] = dla_tensor_dtype(like[i]);
        o->got[i] = NULL;
    }
    for (int b = 0; b < o->nb; b++) {
        o->buf[b] = NULL;
        o->req[b] = NULL;
        o->st[b] = DLA_OK;
        o->msg[b][0] = '\0';
        o->t_start[b] = o->t_end[b] = 0;
    }
    o->next = o->nb - 1;
    return o;
}

void dla__overlap_set_weight(dla__overlap *o, double weight)
{
    o->weight = weight;
}

/* Bucket b's request ended with st (its message the last error). */
static void ended(dla__overlap *o, int b, dla_status st)
{
    o->req[b] = NULL;
    o->st[b] = st;
    o->t_end[b] = clock_now();
    if (st != DLA_OK)
        snprintf(o->msg[b], sizeof o->msg[b], "%s", dla_last_error());
}

/* Starts bucket b (complete), filled from the handed-over tensors. A fill
 * that fails still takes part, with no tensor: the ranks' argument check
 * then fails on every rank. */
static void start(dla__overlap *o, int b)
{
    dla_tensor *bucket = NULL;
    dla_scope_begin();
    bucket = dla__spmd_bucket_fill(o->count[b], o->got + o->first[b], o->weight, o->n);
    if (bucket && dla_tensor_status(bucket) == DLA_OK)
        dla_tensor_retain(bucket);
    else
        bucket = NULL;
    dla_scope_end();
    o->buf[b] = bucket;
    o->t_start[b] = clock_now();
    dla_status st = dla_allreduce_start(1, &o->buf[b], DLA_REDUCE_SUM, &o->req[b]);
    if (st != DLA_OK) {
        /* Not even taking part (a broken world): nothing more can meet. */
        o->failed = 1;
        ended(o, b, st);
    }
}

/* Starts, from the last bucket down, each one whose tensors are all in. */
static void start_ready(dla__overlap *o)
{
    while (o->next >= 0 && o->missing[o->next] == 0 && !o->failed)
        start(o, o->next--);
}

void dla__overlap_ready(dla__overlap *o, int i, dla_tensor *g)
{
    if (!o || i < 0 || i >= o->n || o->got[i])
        return;
    if (dla_tensor_dtype(g) != o->dtype[i]) {
        /* A loss of another dtype than planned (a custom loss): cast, as the
         * bucket holds one dtype. */
        dla_scope_begin();
        g = dla_cast(g, o->dtype[i]);
        dla_tensor_retain(g);
        dla_scope_end();
    } else {
        dla_tensor_retain(g);
    }
    o->got[i] = g;
    o->missing[o->bucket_of[i]]--;
}

void dla__overlap_tick(dla__overlap *o)
{
    if (!o)
        return;
    /* Buckets are started here, between two steps of the sweep, not in
     * ready: those completed by the sweep's last step are left to end,
     * which reduces them at once, with the blocking reduction (faster than
     * MPI's non-blocking one, and nothing is left to overlap them with). */
    start_ready(o);
    int any = 0;
    for (int b = o->nb - 1; b > o->next; b--) {
        if (!o->req[b])
            continue;
        bool done = false;
        dla_status st = dla_spmd_test(o->req[b], &done);
        any = 1;
        if (done)
            ended(o, b, st);
    }
    (void)any;
}

dla_tensor **dla__overlap_io(dla__overlap *o) { return o->io; }

/* Bucket b reduced now, blocking. Without all of its tensors (this rank
 * failed) it still takes part, with no tensor: the ranks' check then fails
 * on every rank. */
static void reduce_now(dla__overlap *o, int b)
{
    dla_status st = DLA_OK;
    dla_scope_begin();
    if (o->missing[b] == 0) {
        dla_tensor *bucket =
            dla__spmd_bucket_fill(o->count[b], o->got + o->first[b], o->weight, o->n);
        st = bucket ? dla_tensor_status(bucket) : dla_last_status();
        if (st == DLA_OK)
            o->buf[b] = dla_tensor_retain(bucket);
    }
    o->t_start[b] = clock_now();
    st = dla_allreduce(1, &o->buf[b], DLA_REDUCE_SUM);
    dla_scope_end();
    ended(o, b, st);
}

void dla__overlap_flush(dla__overlap *o, dla_status st, dla_tensor *const *x)
{
    o->t_backward = clock_now();
    o->early = o->nb - 1 - o->next;
    /* What the sweep did not hand over (a recording) comes from the
     * outputs; then the buckets left are reduced at once, blocking: the
     * sweep has ended, there is nothing left to overlap them with, and
     * MPI's blocking reduction is the faster. A rank that failed takes
     * part in each of them, and (knowing not which of its buckets the
     * others started during their backward) in every bucket it had not
     * started: each meets one collective of every other rank, a reduction
     * started or blocking, and fails with it, so every rank makes the same
     * number of collectives. */
    for (int i = 0; st == DLA_OK && i < o->n; i++)
        if (!o->got[i])
            dla__overlap_ready(o, i, x[i]);
    for (; o->next >= 0; o->next--)
        reduce_now(o, o->next);
}

dla_status dla__overlap_end(dla__overlap *o, dla_status st, dla_tensor *const *x, dla_tensor **out,
                            dla__overlap_times *times)
{
    if (o->t_backward == 0)
        dla__overlap_flush(o, st, x);
    double t_backward = o->t_backward;
    dla_status red = DLA_OK;
    char msg[512] = "";
    for (int b = o->nb - 1; b >= 0; b--) {
        if (o->req[b]) {
            dla_status s = dla_spmd_wait(o->req[b]);
            ended(o, b, s);
        }
        if (o->st[b] != DLA_OK && red == DLA_OK) {
            red = o->st[b];
            snprintf(msg, sizeof msg, "the bucket of x[%d..%d]: %s", o->first[b],
                     o->first[b] + o->count[b] - 1, o->msg[b]);
        }
    }
    double t_done = clock_now();
    if (times) {
        double first = t_done, last = t_backward;
        for (int b = 0; b < o->nb; b++) {
            if (o->t_start[b] > 0 && o->t_start[b] < first)
                first = o->t_start[b];
            if (o->t_end[b] > last)
                last = o->t_end[b];
        }
        times->flight = last > first ? last - first : 0;
        times->after = t_done - t_backward;
        times->buckets = o->nb;
        times->started_early = o->early;
    }
    for (int b = 0; st == DLA_OK && red == DLA_OK && b < o->nb; b++)
        red = dla__spmd_bucket_unpack(o->buf[b], o->count[b], x + o->first[b], out + o->first[b]);
    if (st != DLA_OK)
        return st;
    if (red != DLA_OK && msg[0])
        dla_set_error(red, "dla_spmd_combine (overlapped): %s", msg);
    return red;
}

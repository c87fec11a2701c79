/*
 * spmd_wait.c - waiting on a collective, and saying who is missing.
 *
 * MPI alone cannot say which ranks a collective waits for, and a blocking
 * call cannot give up. So every collective is non-blocking and polled here;
 * while it waits, a rank answers the others' "which collective are you
 * in?" queries. When its own wait passes DLACCEL_COLLECTIVE_TIMEOUT, a rank
 * asks every other rank: those in the same collective answer at once (they
 * poll too), a rank in another collective answers with its number, and a
 * rank that computes, hangs or died does not answer. The ranks that did
 * not answer "here" are the missing ones, named in a warning; past
 * DLACCEL_COLLECTIVE_FAIL_AFTER the wait ends with that list as the error.
 *
 * Polling spins for the first milliseconds (a collective between ranks
 * that arrive together completes then, at full speed), then sleeps between
 * polls so that a rank waiting for a slow one leaves it the cores. Once the
 * argument check has shown every rank there, the transfer is polled
 * without sleeping: a non-blocking collective progresses only inside the
 * polls (a 64 MiB reduction ran at half of MPI_Allreduce's speed with
 * pauses).
 */
#define _GNU_SOURCE
#include "core/spmd.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct query_msg {
    uint32_t id;
    uint32_t pad;
    uint64_t seq;
} query_msg;

typedef struct answer_msg {
    uint32_t id;
    int32_t in_collective;
    uint64_t seq;
    char op[40];
} answer_msg;

/* Sends in flight (answers and queries) with their buffers; a full table
 * drops an answer rather than wait (the asker then names that rank
 * missing, which only ever over-reports). */
#define PENDING 64
static struct {
    dla_comm_req req;
    union {
        query_msg q;
        answer_msg a;
    } msg;
} pending[PENDING];

static int send_small(dla__spmd *w, int dest, int tag, const void *msg, size_t size)
{
    for (int i = 0; i < PENDING; i++) {
        if (pending[i].req)
            continue;
        memcpy(&pending[i].msg, msg, size);
        if (w->p->send(w->ctx, dest, tag, &pending[i].msg, size, &pending[i].req) != DLA_OK) {
            pending[i].req = NULL;
            return 0;
        }
        return 1;
    }
    return 0;
}

void dla__spmd_service(dla__spmd *w)
{
    if (!w->p)
        return;
    for (int i = 0; i < PENDING; i++) {
        int done = 0;
        if (pending[i].req && (w->p->test(w->ctx, pending[i].req, &done) != DLA_OK || done))
            pending[i].req = NULL;
    }
    for (;;) {
        int found = 0, from = 0;
        size_t bytes = 0;
        if (w->p->probe(w->ctx, DLA__SPMD_TAG_QUERY, &found, &from, &bytes) != DLA_OK || !found)
            break;
        query_msg q = {0};
        if (bytes != sizeof q) {
            /* Not ours to read as a query; take it off the channel. */
            unsigned char junk[256];
            if (bytes > sizeof junk ||
                w->p->recv(w->ctx, from, DLA__SPMD_TAG_QUERY, junk, bytes) != DLA_OK)
                break;
            continue;
        }
        if (w->p->recv(w->ctx, from, DLA__SPMD_TAG_QUERY, &q, sizeof q) != DLA_OK)
            break;
        answer_msg a = {.id = q.id, .in_collective = w->current_op != NULL, .seq = w->seq};
        snprintf(a.op, sizeof a.op, "%s", w->current_op ? w->current_op : "");
        send_small(w, from, DLA__SPMD_TAG_ANSWER, &a, sizeof a);
    }
    dla_clear_error();
}

/* Seconds from a variable: a positive number, or 0 where zero_ok (never);
 * anything else warns once and gives dflt. */
static double env_seconds(const char *name, double dflt, int zero_ok, atomic_int *warned)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    double s = strtod(v, &end);
    if (*end == '\0' && isfinite(s) && (s > 0 || (zero_ok && s == 0)))
        return s;
    if (!atomic_exchange(warned, 1))
        dla__log(DLA_LOG_WARN, "%s=%.64s is not a number of seconds%s; %g applies", name, v,
                 zero_ok ? " (0: never)" : " above 0", dflt);
    return dflt;
}

typedef struct asking {
    uint32_t id;
    double since;
    int active, final;
    int answered, count;
    answer_msg *ans; /* per rank; id 0: no answer */
} asking;

static void ask_all(dla__spmd *w, asking *a, double now, int final)
{
    static uint32_t next_id;
    a->id = ++next_id ? next_id : ++next_id;
    a->since = now;
    a->active = 1;
    a->final = final;
    a->answered = 0;
    if (a->ans)
        memset(a->ans, 0, (size_t)w->world.size * sizeof *a->ans);
    query_msg q = {.id = a->id, .seq = w->seq};
    for (int r = 0; r < w->world.size; r++)
        if (r != w->world.rank)
            send_small(w, r, DLA__SPMD_TAG_QUERY, &q, sizeof q);
}

static void collect_answers(dla__spmd *w, asking *a)
{
    for (;;) {
        int found = 0, from = 0;
        size_t bytes = 0;
        if (w->p->probe(w->ctx, DLA__SPMD_TAG_ANSWER, &found, &from, &bytes) != DLA_OK || !found)
            break;
        answer_msg m;
        unsigned char junk[256];
        void *dst = bytes == sizeof m ? (void *)&m : junk;
        if (bytes > sizeof junk || w->p->recv(w->ctx, from, DLA__SPMD_TAG_ANSWER, dst, bytes) != DLA_OK)
            break;
        /* Answers to an earlier query (a late rank) are stale: dropped. */
        if (dst != &m || !a->active || m.id != a->id || from < 0 || from >= w->world.size ||
            !a->ans || a->ans[from].id == a->id)
            continue;
        m.op[sizeof m.op - 1] = '\0';
        a->ans[from] = m;
        a->answered++;
    }
    dla_clear_error();
}

/* "rank 1 (no answer: computing elsewhere, hung or dead), rank 3 (in
 * collective #11, dla_broadcast)" into buf; the number of ranks named. */
static int missing_list(const dla__spmd *w, const asking *a, char *buf, size_t size)
{
    size_t n = 0;
    int count = 0;
    buf[0] = '\0';
    for (int r = 0; r < w->world.size; r++) {
        if (r == w->world.rank)
            continue;
        const answer_msg *m = a->ans ? &a->ans[r] : NULL;
        if (m && m->id == a->id && m->in_collective && m->seq == w->seq)
            continue; /* here */
        char what[96];
        if (!m || m->id != a->id)
            snprintf(what, sizeof what, "no answer: computing elsewhere, hung or dead");
        else if (m->in_collective)
            snprintf(what, sizeof what, "in collective #%llu, %s", (unsigned long long)m->seq,
                     m->op);
        else
            snprintf(what, sizeof what, "in no collective; it entered %llu",
                     (unsigned long long)m->seq);
        if (n < size)
            n += (size_t)snprintf(buf + n, size - n, "%srank %d (%s)", count ? ", " : "", r, what);
        count++;
    }
    return count;
}

static void pause_for(double elapsed)
{
    if (elapsed < 0.02)
        return;
    struct timespec ts = {0, elapsed < 1.0 ? 100000 : 1000000};
    nanosleep(&ts, NULL);
}

void dla__spmd_limits(double *timeout, double *fail_after)
{
    static atomic_int warned_timeout, warned_fail;
    *timeout = env_seconds("DLACCEL_COLLECTIVE_TIMEOUT", 60.0, 0, &warned_timeout);
    *fail_after = env_seconds("DLACCEL_COLLECTIVE_FAIL_AFTER", 10.0 * *timeout, 1, &warned_fail);
}

static dla_status comm_poll(void *arg, int *done)
{
    dla__spmd *w = dla__spmd_get();
    return w->p->test(w->ctx, (dla_comm_req)arg, done);
}

dla_status dla__spmd_wait(dla__spmd *w, const char *op, dla_comm_req req, int arrived)
{
    int gave_up = 0;
    dla_status st = dla__spmd_wait_poll(w, op, comm_poll, req, arrived, &gave_up);
    if (gave_up)
        w->abandoned_req = req;
    return st;
}

dla_status dla__spmd_wait_poll(dla__spmd *w, const char *op, dla__spmd_poll_fn poll, void *arg,
                               int arrived, int *gave_up)
{
    *gave_up = 0;
    double timeout, fail_after;
    dla__spmd_limits(&timeout, &fail_after);
    /* How long the answers of the ranks that are there may take. */
    double grace = fmin(1.0, timeout / 4);
    double t0 = dla__spmd_now(), last_service = t0;
    double next_ask = t0 + timeout;
    double final_ask = fail_after > 0 ? t0 + fmax(0.0, fail_after - grace) : INFINITY;
    asking a = {0};
    a.ans = dla__calloc((size_t)w->world.size, sizeof *a.ans);
    w->current_op = op;
    dla_status st = DLA_OK;
    for (;;) {
        int done = 0;
        if ((st = poll(arg, &done)) != DLA_OK) {
            dla__error_prefix(op);
            dla__spmd_break(w);
            break;
        }
        if (done)
            break;
        double now = dla__spmd_now();
        if (!w->p) {
            /* A world of one waiting on its device's own collective
             * (DLACCEL_DEVICE_COLLECTIVES=force): nobody to ask. */
            if (fail_after > 0 && now - t0 >= fail_after) {
                st = dla__fail(DLA_ERR_STATE,
                               "%s: gave up after %.3g s (DLACCEL_COLLECTIVE_FAIL_AFTER): the "
                               "device's collective did not complete", op, now - t0);
                dla__spmd_break(w);
                *gave_up = 1;
                break;
            }
            pause_for(now - t0);
            continue;
        }
        /* Queries matter only to a rank that waited seconds: answered every
         * millisecond, they cost the fast path nothing (each MPI call may
         * yield the core when oversubscribed). */
        if (now - last_service >= 1e-3) {
            dla__spmd_service(w);
            last_service = now;
        }
        if (!a.active && (now >= next_ask || now >= final_ask))
            ask_all(w, &a, now, now >= final_ask);
        if (a.active) {
            collect_answers(w, &a);
            if (a.answered >= w->world.size - 1 || now >= a.since + grace) {
                char list[1024];
                int n = missing_list(w, &a, list, sizeof list);
                a.active = 0;
                if (a.final) {
                    st = dla__fail(DLA_ERR_STATE,
                                   "%s (collective #%llu, rank %d of %d): gave up after %.3g s "
                                   "(DLACCEL_COLLECTIVE_FAIL_AFTER) waiting for %s",
                                   op, (unsigned long long)w->seq, w->world.rank, w->world.size,
                                   now - t0, n ? list : "no rank named: every rank is here but "
                                                        "the transport did not complete");
                    dla__spmd_break(w);
                    *gave_up = 1;
                    break;
                }
                dla__log(DLA_LOG_WARN,
                         "%s (collective #%llu, rank %d of %d): waiting for %.3g s "
                         "(DLACCEL_COLLECTIVE_TIMEOUT=%g) for %s",
                         op, (unsigned long long)w->seq, w->world.rank, w->world.size, now - t0,
                         timeout, n ? list : "no rank named: every rank is here");
                next_ask = a.since + timeout;
            }
        }
        if (!arrived)
            pause_for(now - t0);
    }
    w->current_op = NULL;
    dla__free(a.ans);
    return st;
}

/*
 * spmd_queue.c - MATLAB's DataQueue from the workers to rank 0.
 *
 * A worker's message is copied and sent without waiting for rank 0 (a
 * non-blocking send on the library's own channel, one tag per queue:
 * queues are made collectively in the same order, so the number agrees);
 * rank 0 polls with a probe, so nobody waits on anybody. Rank 0's own
 * messages go to a local list. Freeing is collective: every rank says how
 * many messages it sent, and rank 0 takes (and drops) what was not polled
 * before anyone leaves, so no message is left in flight.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "core/spmd_check.h"

#include <stdio.h>
#include <string.h>

#define QUEUE_MAX_MESSAGE 4096

typedef struct local_msg {
    struct local_msg *next;
    size_t size;
    unsigned char data[];
} local_msg;

typedef struct sent_msg {
    dla_comm_req req; /* NULL once complete */
    void *buf;
} sent_msg;

struct dla_dataqueue {
    int tag;
    int64_t sent;     /* to rank 0, by this rank (not rank 0) */
    int64_t received; /* by rank 0 from the others */
    local_msg *head, *tail;
    sent_msg *inflight;
    int ninflight, cap;
};

/* Completes finished sends, frees their buffers, compacts the list. */
static void reap(dla__spmd *w, dla_dataqueue *q)
{
    int j = 0;
    for (int i = 0; i < q->ninflight; i++) {
        int done = 0;
        if (q->inflight[i].req && w->p->test(w->ctx, q->inflight[i].req, &done) != DLA_OK)
            done = 1; /* the request is released either way */
        if (done) {
            dla__free(q->inflight[i].buf);
            continue;
        }
        q->inflight[j++] = q->inflight[i];
    }
    q->ninflight = j;
    dla_clear_error();
}

DLA_API dla_status dla_dataqueue_create(dla_dataqueue **qp)
{
    static const char name[] = "dla_dataqueue_create";
    dla__spmd *w = dla__spmd_get();
    dla__coll_desc mine = {.kind = DLA__COLL_QUEUE_CREATE};
    dla_dataqueue *q = NULL;
    if (!qp) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument q: NULL", name);
        dla__coll_local_error(&mine);
    } else {
        *qp = NULL;
        q = dla__calloc(1, sizeof *q);
        if (!q) {
            dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
            dla__coll_local_error(&mine);
        }
    }
    dla_status st = dla__coll_enter(w, name, &mine, NULL, NULL);
    if (st != DLA_OK) {
        dla__free(q);
        return st;
    }
    q->tag = DLA__SPMD_TAG_QUEUE + w->queues++;
    *qp = q;
    return DLA_OK;
}

DLA_API dla_status dla_dataqueue_send(dla_dataqueue *q, const void *data, size_t size)
{
    static const char name[] = "dla_dataqueue_send";
    dla__spmd *w = dla__spmd_get();
    if (!q)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument q: NULL", name);
    if (size > QUEUE_MAX_MESSAGE)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument size: %zu bytes (at most %d)",
                         name, size, QUEUE_MAX_MESSAGE);
    if (size && !data)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument data: NULL with size %zu", name,
                         size);
    dla_status st = dla__spmd_check_broken(w, name);
    if (st != DLA_OK)
        return st;
    if (w->world.rank == 0) {
        local_msg *m = dla__malloc(sizeof *m + size);
        if (!m)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", name, size);
        m->next = NULL;
        m->size = size;
        if (size)
            memcpy(m->data, data, size);
        if (q->tail)
            q->tail->next = m;
        else
            q->head = m;
        q->tail = m;
        return DLA_OK;
    }
    reap(w, q);
    if (q->ninflight == q->cap) {
        int cap = q->cap ? 2 * q->cap : 16;
        sent_msg *grown = dla__realloc(q->inflight, (size_t)cap * sizeof *grown);
        if (!grown)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        q->inflight = grown;
        q->cap = cap;
    }
    sent_msg *s = &q->inflight[q->ninflight];
    s->buf = dla__malloc(size ? size : 1);
    if (!s->buf)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", name, size);
    if (size)
        memcpy(s->buf, data, size);
    st = w->p->send(w->ctx, 0, q->tag, s->buf, size, &s->req);
    if (st != DLA_OK) {
        dla__free(s->buf);
        dla__error_prefix(name);
        return st;
    }
    q->ninflight++;
    q->sent++;
    /* Answers any query a waiting rank sent this one meanwhile. */
    dla__spmd_service(w);
    return DLA_OK;
}

DLA_API int dla_dataqueue_poll(dla_dataqueue *q, void *buf, size_t cap, int *from, size_t *size)
{
    static const char name[] = "dla_dataqueue_poll";
    dla__spmd *w = dla__spmd_get();
    if (!q || !from || !size || (cap && !buf)) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s: NULL", name,
                  !q ? "q" : !from ? "from" : !size ? "size" : "buf");
        return -1;
    }
    if (w->world.rank != 0)
        return 0;
    if (q->head) {
        local_msg *m = q->head;
        if (m->size > cap) {
            dla__fail(DLA_ERR_INVALID_ARGUMENT,
                      "%s: argument cap: %zu bytes is less than the %zu of the waiting message",
                      name, cap, m->size);
            return -1;
        }
        if (m->size)
            memcpy(buf, m->data, m->size);
        *from = 0;
        *size = m->size;
        q->head = m->next;
        if (!q->head)
            q->tail = NULL;
        dla__free(m);
        return 1;
    }
    if (!w->p || w->broken)
        return 0;
    dla__spmd_service(w);
    int found = 0, src = 0;
    size_t bytes = 0;
    if (w->p->probe(w->ctx, q->tag, &found, &src, &bytes) != DLA_OK) {
        dla__error_prefix(name);
        return -1;
    }
    if (!found)
        return 0;
    if (bytes > cap) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT,
                  "%s: argument cap: %zu bytes is less than the %zu of the message from rank %d",
                  name, cap, bytes, src);
        return -1;
    }
    unsigned char none;
    if (w->p->recv(w->ctx, src, q->tag, bytes ? buf : &none, bytes) != DLA_OK) {
        dla__error_prefix(name);
        return -1;
    }
    q->received++;
    *from = src;
    *size = bytes;
    return 1;
}

/* Rank 0: takes every message still to come (expected in all) and drops
 * it; the others: waits for its sends to complete. Polls with the
 * service, so a rank waiting in a collective meanwhile is answered. */
static dla_status drain(dla__spmd *w, dla_dataqueue *q, int64_t expected)
{
    static unsigned char junk[QUEUE_MAX_MESSAGE];
    double t0 = dla__spmd_now();
    while (q->ninflight > 0 || (w->world.rank == 0 && q->received < expected)) {
        reap(w, q);
        if (w->world.rank == 0 && q->received < expected) {
            int from;
            size_t size;
            if (dla_dataqueue_poll(q, junk, sizeof junk, &from, &size) < 0)
                return dla_last_status();
        }
        dla__spmd_service(w);
        if (dla__spmd_now() - t0 > 600)
            return dla__fail(DLA_ERR_STATE,
                             "dla_dataqueue_free: rank %d: %lld message(s) still not delivered "
                             "after 600 s", w->world.rank,
                             (long long)(w->world.rank == 0 ? expected - q->received
                                                            : q->ninflight));
    }
    return DLA_OK;
}

DLA_API void dla_dataqueue_free(dla_dataqueue *q)
{
    static const char name[] = "dla_dataqueue_free";
    dla__spmd *w = dla__spmd_get();
    if (!q)
        return;
    dla__coll_desc mine = {.kind = DLA__COLL_QUEUE_FREE, .value = q->sent};
    dla__coll_desc *all = NULL;
    dla_status st = dla__coll_enter(w, name, &mine, NULL, &all);
    if (st == DLA_OK && w->p) {
        int64_t expected = 0;
        for (int r = 1; r < w->world.size; r++)
            expected += all[r].value;
        st = drain(w, q, expected);
        dla__free(all);
        /* Nobody leaves before rank 0 holds every message. */
        dla__coll_desc again = {.kind = DLA__COLL_QUEUE_FREE};
        if (st != DLA_OK)
            dla__coll_local_error(&again);
        st = dla__coll_enter(w, name, &again, NULL, NULL);
    } else {
        dla__free(all);
    }
    if (st != DLA_OK)
        dla__log(DLA_LOG_WARN, "%s", dla_last_error());
    while (q->head) {
        local_msg *m = q->head;
        q->head = m->next;
        dla__free(m);
    }
    /* Buffers of sends that may still be in flight stay allocated. */
    if (st == DLA_OK) {
        for (int i = 0; i < q->ninflight; i++)
            dla__free(q->inflight[i].buf);
        dla__free(q->inflight);
        dla__free(q);
    }
}

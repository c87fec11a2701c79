/*
 * spmd_async.c - the allreduce that does not wait (dla_allreduce_start,
 * dlaccel/parallel.h).
 *
 * A request goes through three steps. Start checks this rank's own
 * arguments, enters the collective (its number is the same on every rank)
 * and posts the argument check, an exchange of descriptors, without
 * waiting. Once the exchange is in, every rank judges the same
 * descriptors: a disagreement ends the request with the named error on
 * every rank, and nothing else is sent. Otherwise the reduction itself is
 * posted on the plugin's channel for such reductions (DLA_COMM_ASYNC).
 *
 * Order: MPI matches collectives on a communicator by the order in which
 * each rank starts them. The checks go on the usual channel, posted at
 * start, so in program order among the blocking collectives. A reduction
 * can be posted only when its check is in, which each rank sees at another
 * moment, so the reductions have a channel of their own, and are posted
 * strictly in the order of their starts (a request whose check is in waits
 * for every older one to be posted): the same order on every rank, and
 * never among the blocking collectives.
 *
 * Progress: MPI moves a non-blocking collective only inside its calls;
 * every test, wait and dla_spmd_progress tests each request in flight.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/spmd_coll.h"
#include "core/spmd_device.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdio.h>
#include <string.h>

/* ON_DEVICE: enqueued on the tensors' device's own transport
 * (spmd_device.h), waiting for its ticket. */
enum { CHECKING, READY, REDUCING, ON_DEVICE, DONE };

struct dla_spmd_request {
    struct dla_spmd_request *next;
    int phase;
    int n;
    dla_tensor **t;     /* references held until the end */
    dla_reduce_op op;
    dla__coll_slot *s;
    unsigned char *stage;
    dla__coll_desc mine, *all;
    dla_comm_req check;   /* the descriptors' exchange, NULL once in */
    dla_comm_req *pay;    /* the reductions, NULL each once done */
    int npay;
    dla_device *dev;      /* ON_DEVICE: the device, its group and the ticket */
    void *dgroup;
    uint64_t ticket;
    dla_status st;        /* the result, once DONE */
    char msg[1024];       /* its message */
};

static const char name[] = "dla_allreduce_start";

static int async_capable(const dla__spmd *w)
{
    return w->p && w->p->abi_minor >= 1 && w->world.size > 1;
}

DLA_API int dla_spmd_overlaps(void)
{
    return async_capable(dla__spmd_get());
}

/* Ends r with st (the thread's last error says why when not DLA_OK). */
static void finish(dla__spmd *w, dla_spmd_request *r, dla_status st)
{
    r->phase = DONE;
    r->st = st;
    if (st != DLA_OK)
        snprintf(r->msg, sizeof r->msg, "%s", dla_last_error());
    (void)w;
}

/* The end of every request in flight, once the world broke: none can
 * complete any more. */
static void fail_all(dla__spmd *w)
{
    for (dla_spmd_request *r = w->async_head; r; r = r->next)
        if (r->phase != DONE) {
            r->phase = DONE;
            r->st = DLA_ERR_STATE;
            snprintf(r->msg, sizeof r->msg, "%s: %s", name, w->broken_why);
        }
}

static void unlink_req(dla__spmd *w, dla_spmd_request *r)
{
    dla_spmd_request **p = &w->async_head, *prev = NULL;
    while (*p && *p != r) {
        prev = *p;
        p = &(*p)->next;
    }
    if (!*p)
        return;
    *p = r->next;
    if (w->async_tail == r)
        w->async_tail = prev;
}

/* Appends r to the world's requests, in start order. */
static void enqueue(dla__spmd *w, dla_spmd_request *r)
{
    if (w->async_tail)
        w->async_tail->next = r;
    else
        w->async_head = r;
    w->async_tail = r;
}

/* r's tensors, buffers and r itself (not linked in the world's list). */
static void free_request(dla_spmd_request *r)
{
    for (int k = 0; k < r->n; k++) {
        dla_tensor_release(r->t[k]);
        if (r->s)
            dla__free(r->s[k].wide);
    }
    dla__free_aligned(r->stage);
    dla__free(r->all);
    dla__free(r->pay);
    dla__free(r->t);
    dla__free(r->s);
    dla__free(r);
}

/* Frees r; buffers the transport may still write (a broken world) are
 * kept, as the blocking collectives keep theirs. */
static void release(dla__spmd *w, dla_spmd_request *r)
{
    if (!w->broken) {
        unlink_req(w, r);
        free_request(r);
        return;
    }
    /* A request in a broken world stays in the world's list, with its
     * tensors and buffers: a reduction in place may still write into them,
     * and so they stay reachable rather than lost (as abandoned_req). */
}

/* The check is in: judge it, and on agreement make the request READY. */
static void judged(dla__spmd *w, dla_spmd_request *r)
{
    dla_status st = dla__coll_judge(w, name, r->all);
    if (st != DLA_OK)
        finish(w, r, st);
    else
        r->phase = READY;
}

/* Posts r's reductions: one per tensor, in tensor order, wherever it lies
 * (its own memory or the stage). Whether a tensor is direct follows this
 * rank's layout of it, which another rank's may not share: grouping the
 * staged ones by dtype made ranks of other layouts pair other buffers in
 * their transfers (spmd_coll.c says more). */
static void post(dla__spmd *w, dla_spmd_request *r)
{
    dla_reduce_op wire = r->op == DLA_REDUCE_MEAN ? DLA_REDUCE_SUM : r->op;
    dla_status st = DLA_OK;
    r->npay = 0;
    for (int k = 0; k < r->n && st == DLA_OK; k++) {
        if (r->s[k].bytes == 0)
            continue;
        if (dla__coll_wide(r->op, r->t[k]->dtype))
            st = dla__coll_widen(name, &r->s[k], r->t[k]->dtype);
        if (st == DLA_OK)
            st = w->p->allreduce(w->ctx, dla__coll_wire_buf(&r->s[k]),
                                 dla__coll_wire_count(&r->s[k], r->t[k]->dtype),
                                 dla__coll_wire_dtype(&r->s[k], r->t[k]->dtype), wire,
                                 DLA_COMM_ASYNC, &r->pay[r->npay]);
        r->npay += st == DLA_OK;
    }
    if (st != DLA_OK) {
        /* The ranks now disagree on what is in flight. */
        dla__error_prefix(name);
        dla__spmd_break(w);
        finish(w, r, st);
        fail_all(w);
        return;
    }
    r->phase = REDUCING;
}

/* Every reduction of r is in: the mean's division, the staged tensors
 * copied back, the storages marked written. */
static void reduced(dla__spmd *w, dla_spmd_request *r)
{
    dla_status st = DLA_OK;
    for (int k = 0; k < r->n && st == DLA_OK; k++) {
        dla__coll_narrow(&r->s[k], r->t[k]->dtype);
        if (r->op == DLA_REDUCE_MEAN)
            dla__coll_divide(r->s[k].host, r->s[k].bytes, r->t[k]->dtype, w->world.size);
        if (r->s[k].direct)
            dla__storage_written(r->t[k]->storage);
        else
            st = dla__coll_write_back(name, r->t[k], r->s[k].host);
    }
    finish(w, r, st);
}

/* A test of one plugin request: 1 when done (the plugin released it). On
 * a transport error the world breaks and every request fails. */
static int test_one(dla__spmd *w, dla_comm_req *q)
{
    int done = 0;
    if (w->p->test(w->ctx, *q, &done) != DLA_OK) {
        *q = NULL;
        dla__error_prefix(name);
        dla__spmd_break(w);
        fail_all(w);
        return 1;
    }
    if (done)
        *q = NULL;
    return done;
}

/* r's reduction on the device completed. */
static void device_done(dla_spmd_request *r)
{
    for (int k = 0; k < r->n; k++)
        dla__storage_written(r->t[k]->storage);
    r->phase = DONE;
    r->st = DLA_OK;
}

/* A request this rank could reduce on its device: its check waited for at
 * once (so that the device's operations go in program order, the same on
 * every rank, as its transport requires), then enqueued there when every
 * rank can; otherwise laid out for the host path and left READY. */
static void start_on_device(dla__spmd *w, dla_spmd_request *r)
{
    dla_comm_req check = r->check;
    r->check = NULL;
    dla_status st = dla__spmd_wait(w, name, check, 0);
    if (st != DLA_OK) {
        finish(w, r, st);
        fail_all(w);
        return;
    }
    judged(w, r);
    if (r->phase != READY)
        return;
    dla_device *dev = r->t[0]->storage->device;
    void *grp = NULL;
    if (dla__spmd_device_agreed(w, r->all))
        st = dla__spmd_device_group(w, name, dev, &grp);
    if (st == DLA_OK && grp) {
        r->dev = dev;
        r->dgroup = grp;
        st = dla__spmd_device_allreduce(w, name, grp, r->n, r->t, r->op, &r->ticket);
        if (st == DLA_OK)
            r->phase = ON_DEVICE;
    } else if (st == DLA_OK) {
        st = dla__coll_lay_out(name, r->n, r->t, r->s, 1, &r->stage);
        if (st != DLA_OK)
            dla__spmd_break(w); /* the others go on to the reduction */
    }
    if (st != DLA_OK) {
        finish(w, r, st);
        fail_all(w);
    }
}

/* One pass over the requests in flight, oldest first. */
static void advance(dla__spmd *w)
{
    int may_post = 1;
    for (dla_spmd_request *r = w->async_head; r && !w->broken; r = r->next) {
        if (r->phase == CHECKING && r->check && test_one(w, &r->check) && !w->broken)
            judged(w, r);
        if (w->broken)
            break;
        if (r->phase == CHECKING) {
            may_post = 0;
            continue;
        }
        if (r->phase == READY && may_post)
            post(w, r);
        if (r->phase == READY)
            may_post = 0;
        if (r->phase == ON_DEVICE) {
            int done = 0;
            dla_status st = dla__spmd_device_test(w, name, r->dev, r->dgroup, r->ticket, &done);
            if (st != DLA_OK) {
                finish(w, r, st);
                fail_all(w);
                break;
            }
            if (done)
                device_done(r);
        }
        if (r->phase == REDUCING) {
            int left = 0;
            for (int i = 0; i < r->npay && !w->broken; i++)
                if (r->pay[i] && !test_one(w, &r->pay[i]))
                    left++;
            if (!w->broken && !left)
                reduced(w, r);
        }
    }
}

DLA_API dla_status dla_allreduce_start(int n, dla_tensor *const *t, dla_reduce_op op,
                                       dla_spmd_request **req)
{
    if (!req)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument req: NULL", name);
    *req = NULL;
    dla__spmd *w = dla__spmd_get();
    dla_status st = dla__spmd_check_broken(w, name);
    if (st != DLA_OK)
        return st;
    dla_spmd_request *r = dla__calloc(1, sizeof *r);
    if (!r)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for a request", name);
    r->op = op;
    if (!async_capable(w)) {
        /* A world of one, or a plugin without non-blocking reductions: the
         * whole reduction now, the request done at once. */
        finish(w, r, dla_allreduce(n, t, op));
        r->phase = DONE;
        enqueue(w, r);
        *req = r;
        return DLA_OK;
    }
    r->mine = (dla__coll_desc){.kind = DLA__COLL_ALLREDUCE_START, .count = n, .op = (int32_t)op};
    dla__coll_rec *recs = NULL;
    st = dla__coll_check_reduce(name, n, t, op);
    if (st == DLA_OK && n > 0) {
        recs = dla__calloc((size_t)n, sizeof *recs);
        r->t = dla__calloc((size_t)n, sizeof *r->t);
        r->s = dla__calloc((size_t)n, sizeof *r->s);
        r->pay = dla__calloc((size_t)n, sizeof *r->pay);
        if (!recs || !r->t || !r->s || !r->pay)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %d tensors", name, n);
    }
    for (int k = 0; k < n && st == DLA_OK; k++) {
        dla__coll_rec_of(t[k], 1, &recs[k]);
        r->t[k] = dla_tensor_retain(t[k]);
        r->n = k + 1;
    }
    /* An integer sum is widened on the host (dla__coll_widen). */
    int wide = 0;
    for (int k = 0; k < n && st == DLA_OK; k++)
        wide |= dla__coll_wide(op, t[k]->dtype);
    if (st == DLA_OK && !wide)
        r->mine.device_path = dla__spmd_device_path(w, n, t);
    if (st == DLA_OK && !r->mine.device_path)
        st = dla__coll_lay_out(name, n, t, r->s, 1, &r->stage);
    if (st != DLA_OK)
        dla__coll_local_error(&r->mine);
    /* Taking part even with refused arguments: the others then fail with
     * this rank's reason instead of waiting for it. */
    dla__coll_prepare(w, &r->mine, st == DLA_OK ? recs : NULL);
    dla__free(recs);
    r->all = dla__calloc((size_t)w->world.size, sizeof *r->all);
    dla_status pst = r->all ? w->p->allgather(w->ctx, &r->mine, sizeof r->mine, r->all, 0, &r->check)
                            : dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for the argument "
                                        "check", name);
    if (pst != DLA_OK) {
        /* Not taking part: the others' timeout names this rank. */
        dla__error_prefix(name);
        free_request(r);
        return pst;
    }
    r->phase = CHECKING;
    enqueue(w, r);
    *req = r;
    if (r->mine.device_path)
        start_on_device(w, r);
    return DLA_OK;
}

DLA_API void dla_spmd_progress(void)
{
    dla__spmd *w = dla__spmd_get();
    if (w->async_head && w->p)
        advance(w);
}

/* r's result as the call's status, and r released. */
static dla_status result(dla__spmd *w, dla_spmd_request *r)
{
    dla_status st = r->st;
    if (st != DLA_OK)
        dla__fail(st, "%s", r->msg);
    release(w, r);
    return st;
}

DLA_API dla_status dla_spmd_test(dla_spmd_request *req, bool *done)
{
    if (!req || !done)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_spmd_test: argument %s: NULL",
                         !req ? "req" : "done");
    dla__spmd *w = dla__spmd_get();
    if (req->phase != DONE && w->p)
        advance(w);
    *done = req->phase == DONE;
    return *done ? result(w, req) : DLA_OK;
}

DLA_API dla_status dla_spmd_wait(dla_spmd_request *req)
{
    if (!req)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_spmd_wait: argument req: NULL");
    dla__spmd *w = dla__spmd_get();
    while (req->phase != DONE) {
        advance(w);
        if (req->phase == DONE)
            break;
        if (req->phase == ON_DEVICE) {
            dla_status st = dla__spmd_device_wait(w, name, req->dev, req->dgroup, req->ticket);
            if (st != DLA_OK) {
                fail_all(w);
                snprintf(req->msg, sizeof req->msg, "%s", dla_last_error());
                req->st = st;
                break;
            }
            device_done(req);
            break;
        }
        /* What holds req up: the oldest check not in yet (req's own, or
         * an older request's that keeps req from being posted), else one
         * of req's reductions. Waited on with the timeouts; the wait
         * completes it, and the next pass takes it from there. */
        dla_comm_req *q = NULL;
        int arrived = 0;
        for (dla_spmd_request *r = w->async_head; r && !q; r = r->next) {
            if (r->phase == CHECKING && r->check)
                q = &r->check;
            if (r == req)
                break;
        }
        for (int i = 0; !q && req->phase == REDUCING && i < req->npay; i++)
            if (req->pay[i]) {
                q = &req->pay[i];
                arrived = 1;
            }
        if (!q)
            continue;
        dla_comm_req held = *q;
        dla_status st = dla__spmd_wait(w, name, held, arrived);
        *q = NULL;
        if (st != DLA_OK) {
            fail_all(w);
            /* The named reason of the give-up, rather than the world's. */
            snprintf(req->msg, sizeof req->msg, "%s", dla_last_error());
            req->st = st;
            break;
        }
        /* A check waited on here is judged now (advance sees it as in). */
        for (dla_spmd_request *r = w->async_head; r; r = r->next)
            if (r->phase == CHECKING && !r->check)
                judged(w, r);
    }
    return result(w, req);
}

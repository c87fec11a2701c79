/*
 * spmd.h - the spmd world as the core sees it (dlaccel/parallel.h).
 *
 * spmd.c finds and loads the communicator plugin on first use (or settles
 * on a world of one), spmd_wait.c waits on its requests with the timeouts
 * and the "which ranks are missing" queries, spmd_coll.c runs the tensor
 * collectives and spmd_queue.c the DataQueue.
 */
#ifndef DLA_CORE_SPMD_H
#define DLA_CORE_SPMD_H

#include <dlaccel.h>
#include <dlaccel/comm_plugin.h>
#include <stdint.h>

/* Point-to-point tags of the library's own channel. */
enum {
    DLA__SPMD_TAG_QUERY = 101,  /* "which collective are you in?" */
    DLA__SPMD_TAG_ANSWER = 102, /* its answer */
    DLA__SPMD_TAG_QUEUE = 1000, /* + the DataQueue's number */
};

typedef struct dla__spmd {
    const dla_comm_plugin *p; /* NULL: a world of one */
    void *ctx;
    dla_comm_world world;
    char backend[48]; /* the plugin's name ("mpi") */
    /* Collectives entered so far (the same count on every rank of a
     * correct program), and the one being waited on. */
    uint64_t seq;
    const char *current_op; /* NULL outside a collective */
    /* Set once a collective gave up or failed inside the transport: the
     * ranks no longer agree where they are, so every later collective
     * fails at once, and exit does not finalize (it would wait forever
     * for the missing ranks). */
    int broken;
    char broken_why[256];
    /* The request of the collective that gave up, and the buffer it
     * receives into: still in flight in the transport (a late rank may
     * yet complete it, and MPI forbids freeing a collective's request), so
     * neither can be released; held here so that they stay reachable
     * rather than lost (LeakSanitizer counted the request as a leak). */
    dla_comm_req abandoned_req;
    void *abandoned_buf;
    /* DataQueues made so far (their tags). */
    int queues;
    /* The non-blocking reductions in flight, oldest first (spmd_async.c). */
    struct dla_spmd_request *async_head, *async_tail;
    /* The devices whose own collectives the world uses (spmd_device.c). */
    struct dla__spmd_dgroup *dgroups;
    int ndgroups;
} dla__spmd;

/* The world, set up on the first call (thread-safe). Never NULL. */
dla__spmd *dla__spmd_get(void);

/* Waits for req of the collective op (collective number w->seq), polling
 * the plugin and answering the other ranks' queries meanwhile. arrived:
 * every rank is known to have entered the collective (its argument check
 * passed), so the wait is the transfer itself: it polls without pausing,
 * since a non-blocking collective moves only inside the polls. After
 * DLACCEL_COLLECTIVE_TIMEOUT seconds it logs a warning naming the ranks
 * that are not in this collective; after DLACCEL_COLLECTIVE_FAIL_AFTER
 * (default ten timeouts) it gives up: the world is broken and the status is
 * DLA_ERR_STATE with the missing ranks in the message. */
dla_status dla__spmd_wait(dla__spmd *w, const char *op, dla_comm_req req, int arrived);
/* The same wait on anything that can be polled: poll(arg, &done) sets done
 * once complete, or fails (the world then breaks). *gave_up: the wait gave
 * up (DLACCEL_COLLECTIVE_FAIL_AFTER), the operation is still in flight. */
typedef dla_status (*dla__spmd_poll_fn)(void *arg, int *done);
dla_status dla__spmd_wait_poll(dla__spmd *w, const char *op, dla__spmd_poll_fn poll, void *arg,
                               int arrived, int *gave_up);

/* DLACCEL_COLLECTIVE_TIMEOUT and DLACCEL_COLLECTIVE_FAIL_AFTER in seconds
 * (fail_after 0: never). */
void dla__spmd_limits(double *timeout, double *fail_after);

/* The watchdog of a transfer the plugin may block in (DLA_COMM_MAY_BLOCK):
 * between begin and end, past the timeout it warns, and past fail_after it
 * logs the error and ends the process (exit status 1): a blocked call
 * cannot return one, and waiting forever is worse. */
void dla__spmd_watch_begin(dla__spmd *w, const char *op);
void dla__spmd_watch_end(void);

/* Answers waiting queries and completes finished sends, without waiting:
 * called from every poll loop (the DataQueue's too). */
void dla__spmd_service(dla__spmd *w);

/* Fails with op's name when the world is broken. */
dla_status dla__spmd_check_broken(dla__spmd *w, const char *op);
/* Marks the world broken with the thread's current message. */
void dla__spmd_break(dla__spmd *w);

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double dla__spmd_now(void);

#endif

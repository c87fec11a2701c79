/*
 * spmd_watch.c - the watchdog of a blocking transfer.
 *
 * Once the argument check has shown every rank in a collective, the
 * transfer goes through the plugin's blocking call (faster: Open MPI's
 * non-blocking reductions ran at about half the speed at 64 MiB). A rank
 * that dies or hangs in that window would leave the others blocked for
 * good, where no poll loop can give up; this thread watches the call: past
 * DLACCEL_COLLECTIVE_TIMEOUT it warns, past DLACCEL_COLLECTIVE_FAIL_AFTER
 * it logs the error and ends the process with status 1, which mpirun
 * reports and turns into the end of the job.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_REALTIME */
#include "core/spmd.h"

#include "core/log.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started, armed, idle;
static uint64_t generation;
static struct {
    const char *op;
    uint64_t seq;
    int rank, size;
    double since, timeout, fail_after;
} job;

static struct timespec at(double t)
{
    /* The condition waits on CLOCK_REALTIME: convert from the monotonic
     * clock of dla__spmd_now. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double d = t - dla__spmd_now();
    if (d < 0)
        d = 0;
    if (d > 1e6)
        d = 1e6;
    long long ns = (long long)now.tv_nsec + (long long)((d - (double)(long long)d) * 1e9);
    struct timespec ts = {now.tv_sec + (time_t)d + (time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    return ts;
}

static void *watch(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        idle = 1;
        while (!armed)
            pthread_cond_wait(&cv, &mu);
        idle = 0;
        uint64_t gen = generation;
        int warned = 0;
        while (armed && generation == gen) {
            double now = dla__spmd_now(), waited = now - job.since;
            if (job.fail_after > 0 && waited >= job.fail_after) {
                dla__log(DLA_LOG_ERROR,
                         "%s (collective #%llu, rank %d of %d): every rank entered it, but the "
                         "transfer has not completed after %.3g s (DLACCEL_COLLECTIVE_FAIL_AFTER): "
                         "a rank died or hung during it; ending this process",
                         job.op, (unsigned long long)job.seq, job.rank, job.size, waited);
                fflush(stderr);
                _exit(EXIT_FAILURE);
            }
            if (!warned && waited >= job.timeout) {
                warned = 1;
                dla__log(DLA_LOG_WARN,
                         "%s (collective #%llu, rank %d of %d): every rank entered it, but the "
                         "transfer has taken %.3g s (DLACCEL_COLLECTIVE_TIMEOUT=%g)",
                         job.op, (unsigned long long)job.seq, job.rank, job.size, waited,
                         job.timeout);
            }
            /* The earlier of the two deadlines still ahead: sleeping until
             * the warning alone ended a transfer past a FAIL_AFTER shorter
             * than the timeout only at the timeout (FAIL_AFTER=3 under the
             * default 60 ended the ranks after 60 s). */
            double next = now + 3600;
            if (!warned)
                next = fmin(next, job.since + job.timeout);
            if (job.fail_after > 0)
                next = fmin(next, job.since + job.fail_after);
            struct timespec ts = at(next);
            pthread_cond_timedwait(&cv, &mu, &ts);
        }
    }
    return NULL;
}

void dla__spmd_watch_begin(dla__spmd *w, const char *op)
{
    double timeout, fail_after;
    dla__spmd_limits(&timeout, &fail_after);
    pthread_mutex_lock(&mu);
    if (!started) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        /* Without the thread the transfer still runs, unwatched. */
        started = pthread_create(&t, &a, watch, NULL) == 0 ? 1 : -1;
        pthread_attr_destroy(&a);
        if (started < 0)
            dla__log(DLA_LOG_WARN, "%s: no watchdog thread: a transfer that never ends is not "
                                   "detected", op);
    }
    job.op = op;
    job.seq = w->seq;
    job.rank = w->world.rank;
    job.size = w->world.size;
    job.since = dla__spmd_now();
    job.timeout = timeout;
    job.fail_after = fail_after;
    armed = 1;
    generation++;
    /* A thread asleep until an earlier transfer's deadline wakes then and
     * finds this one (its deadline is later): only an idle one is woken, so
     * a collective costs no thread switch. */
    if (idle)
        pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

void dla__spmd_watch_end(void)
{
    pthread_mutex_lock(&mu);
    armed = 0;
    generation++;
    pthread_mutex_unlock(&mu);
}

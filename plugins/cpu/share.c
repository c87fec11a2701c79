/*
 * share.c - the items of one small kernel shared with helper threads that
 * the caller never waits for unless they took an item: an LSTM step's
 * product and gate program (20 and 8 us on two threads), 99 of each in a
 * row, each depending on the one before.
 *
 * Why not an OpenMP region: its end is a barrier of the whole team. A
 * teammate that is not running when the region starts (asleep after its
 * spin, or its core lent to another process) holds the caller at that
 * barrier until the scheduler runs it, however little work it had: the
 * LSTM inference took 2x its quiet time at load 0.6-2.5 on two cores and
 * 3.5-4x its one-thread time at load 3-4 (docs/performance.md). Here the
 * items are claimed one by one from a counter; the caller claims too, and
 * waits at the end only for the items a helper has begun. A helper that
 * comes late finds nothing left and goes back to waiting, so a job takes
 * at most about what the caller alone takes, plus one item.
 *
 * A helper descheduled while it holds an item still holds the caller (its
 * item is half written); after such a wait the next jobs run on the
 * caller alone for a while (WAIT_LONG_NS), as one thread would run them.
 *
 * Right after an OpenMP region (a train step's OpenBLAS products) the
 * next kernel keeps its own OpenMP region: that team still spins on the
 * cores the helpers would need (dla__cpu_share_wanted), and helpers yield
 * while they spin, for the same reason the other way round.
 *
 * One job at a time: a second caller (another host thread, or a caller
 * already inside a job) runs its items itself. The helpers spin about
 * SPIN_NS after their last item (the next step's kernel is a few
 * microseconds away), then sleep on a condition variable; the caller
 * signals it only when one sleeps.
 *
 * The job's ticket holds its epoch (high 32 bits) and the next item (low
 * 32 bits, CLOSED while the job's description is written). A helper reads
 * the ticket, then the description, and claims by a compare-and-swap of
 * the ticket it read: the caller closes the ticket before it writes a new
 * description, so a claim succeeds only on a description read whole.
 *
 * Which thread runs an item never changes its bits: the callers' items
 * write disjoint outputs, each computed as on one thread (test_thread_bits;
 * test_cpu_share checks that every item runs once).
 * DLACCEL_CPU_SHARE=off sends these kernels back to OpenMP regions.
 */
#define _GNU_SOURCE /* secure_getenv (env_choice.h) */
#include "plugins/cpu/share.h"
#include "plugins/cpu/cpu.h"

#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/env_choice.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RELAX() _mm_pause()
#else
#define RELAX() ((void)0)
#endif

/* Helpers at most (the caller is one more thread). */
#define MAX_HELPERS 63
/* How long a helper spins after its last item before it sleeps: libgomp's
 * GOMP_SPINCOUNT=1000 (dlaccel's default, core/omp_defaults.c) is 10-30 us. */
#define SPIN_NS 20000
#define CLOSED 0xffffffffu
/* A wait for the helpers' items longer than this (an item is at most a few
 * microseconds) means one of them was descheduled holding an item; the
 * jobs of the next BACKOFF_MIN_NS then run on the calling thread alone,
 * twice as long after each such wait in a row, up to BACKOFF_MAX_NS.
 * A helper preempted mid-item costs the caller up to a time slice of the
 * scheduler (milliseconds); while that recurs (a loaded machine), one
 * thread is the faster choice. */
#define WAIT_LONG_NS 50000
#define BACKOFF_MIN_NS 2000000LL
#define BACKOFF_MAX_NS 256000000LL

static _Atomic uint64_t ticket;
static _Atomic(dla__cpu_share_fn) job_fn;
static _Atomic(void *) job_arg;
static _Atomic uint32_t job_items, job_helpers, job_epoch;
static atomic_int done; /* items finished by helpers in this job */
static atomic_flag busy = ATOMIC_FLAG_INIT;

static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond = PTHREAD_COND_INITIALIZER;
static atomic_int sleepers;
static int started; /* helpers created; under start_lock */
static pthread_t helper_thread[MAX_HELPERS];
/* Set by dla__cpu_share_stop: the helpers return (the plugin's shutdown,
 * before dlclose unmaps the code they run). */
static atomic_int stopping;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* Jobs run alone until then (CLOCK_MONOTONIC ns); the next backoff. Only
 * the caller holding busy writes them. */
static _Atomic long long solo_until;
static long long backoff = BACKOFF_MIN_NS;

static int state = -1; /* 1 on, 0 off; -1 not read yet */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    static const char *const values[] = {"on", "off", NULL};
    static atomic_int warned;
    state = dla__env_choice("DLACCEL_CPU_SHARE", values, &warned, dla__cpu_host->log) != 1;
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* When the last job ended (CLOCK_MONOTONIC ns): its helpers spin SPIN_NS. */
static _Atomic long long share_left;

int dla__cpu_share_on(void)
{
    pthread_once(&once, choose);
    return state;
}

int dla__cpu_share_wanted(void)
{
    /* Right after an OpenMP region its team still spins on the cores the
     * helpers would need (libgomp's 1,000 rounds, 10-30 us): the next
     * kernel joins that team instead. Measured quiet on an LSTM's train
     * step, whose 99 input-gradient products are OpenBLAS's in OpenMP
     * regions: 15.5 ms before share.c, 18.2-19.2 with every small kernel
     * on the helpers after them. */
    return dla__cpu_share_on() && !dla__cpu_team_awake();
}

int dla__cpu_share_awake(void)
{
    return now_ns() - atomic_load_explicit(&share_left, memory_order_relaxed) < SPIN_NS / 2;
}

/* Claims the next item of the job in the ticket t it read for helper h
 * (the caller: h = -1); 1 with *fn, *arg, *item set, 0 when the job has
 * none left for it (or changed under it: *t is then reloaded). */
static int claim(int h, uint64_t *t, dla__cpu_share_fn *fn, void **arg, uint32_t *item)
{
    for (;;) {
        const uint32_t epoch = (uint32_t)(*t >> 32), next = (uint32_t)*t;
        if (next == CLOSED)
            return 0;
        *fn = atomic_load_explicit(&job_fn, memory_order_acquire);
        *arg = atomic_load_explicit(&job_arg, memory_order_acquire);
        const uint32_t n = atomic_load_explicit(&job_items, memory_order_acquire);
        const uint32_t helpers = atomic_load_explicit(&job_helpers, memory_order_acquire);
        if (atomic_load_explicit(&job_epoch, memory_order_acquire) != epoch || next >= n ||
            (h >= 0 && (uint32_t)h >= helpers))
            return 0;
        if (atomic_compare_exchange_weak_explicit(&ticket, t, *t + 1, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *t += 1;
            *item = next;
            return 1;
        }
        /* *t now holds the ticket as it is: try again on it. */
    }
}

static void *helper(void *p)
{
    const int h = (int)(intptr_t)p;
    for (;;) {
        /* Spin for work, then sleep until a caller signals. */
        long long since = now_ns();
        for (int round = 0;; round++) {
            uint64_t t = atomic_load_explicit(&ticket, memory_order_acquire);
            dla__cpu_share_fn fn;
            void *arg;
            uint32_t item;
            if (claim(h, &t, &fn, &arg, &item)) {
                fn(arg, item);
                atomic_fetch_add_explicit(&done, 1, memory_order_release);
                since = now_ns();
                round = 0;
                continue;
            }
            RELAX();
            /* Give the core to whatever else is ready on it (the OpenMP
             * team of the next kernel, a train step's OpenBLAS products):
             * spinning through its region held that region's barrier. */
            if ((round & 31) == 31)
                sched_yield();
            if ((round & 63) == 63 && now_ns() - since > SPIN_NS)
                break;
            if (atomic_load_explicit(&stopping, memory_order_relaxed))
                return NULL;
        }
        pthread_mutex_lock(&sleep_lock);
        atomic_fetch_add(&sleepers, 1); /* seq_cst: the caller's ticket store or this is seen */
        for (;;) {
            if (atomic_load(&stopping)) {
                atomic_fetch_sub(&sleepers, 1);
                pthread_mutex_unlock(&sleep_lock);
                return NULL;
            }
            uint64_t t = atomic_load(&ticket);
            const uint32_t next = (uint32_t)t;
            if (next != CLOSED && next < atomic_load(&job_items) &&
                atomic_load(&job_epoch) == (uint32_t)(t >> 32) &&
                (uint32_t)h < atomic_load(&job_helpers))
                break;
            pthread_cond_wait(&sleep_cond, &sleep_lock);
        }
        atomic_fetch_sub(&sleepers, 1);
        pthread_mutex_unlock(&sleep_lock);
    }
    return NULL;
}

/* Starts helpers up to want; the count running. */
static int start_helpers(int want)
{
    pthread_mutex_lock(&start_lock);
    while (started < want) {
        if (pthread_create(&helper_thread[started], NULL, helper, (void *)(intptr_t)started) != 0)
            break;
        started++;
    }
    const int n = started;
    pthread_mutex_unlock(&start_lock);
    return n;
}

void dla__cpu_share_stop(void)
{
    pthread_mutex_lock(&start_lock);
    atomic_store(&stopping, 1);
    pthread_mutex_lock(&sleep_lock);
    pthread_cond_broadcast(&sleep_cond);
    pthread_mutex_unlock(&sleep_lock);
    for (int i = 0; i < started; i++)
        pthread_join(helper_thread[i], NULL);
    started = 0;
    atomic_store(&stopping, 0);
    pthread_mutex_unlock(&start_lock);
}

void dla__cpu_share(int64_t items, dla__cpu_share_fn fn, void *arg)
{
    int threads = omp_get_max_threads();
    if (threads > MAX_HELPERS + 1)
        threads = MAX_HELPERS + 1;
    /* Inside an OpenMP region (a kernel called from one) the team is busy
     * already: the items run here, as its other kernels' would. */
    if (items < 2 || threads < 2 || items > (int64_t)CLOSED - 1 || omp_in_parallel() ||
        (atomic_load_explicit(&solo_until, memory_order_relaxed) &&
         now_ns() < atomic_load_explicit(&solo_until, memory_order_relaxed)) ||
        atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) {
        for (int64_t i = 0; i < items; i++)
            fn(arg, i);
        return;
    }
    int helpers = start_helpers(threads - 1);
    if (helpers > threads - 1)
        helpers = threads - 1;
    const uint32_t epoch = (uint32_t)(atomic_load_explicit(&ticket, memory_order_relaxed) >> 32) + 1;
    /* Closed first: a helper that read the last job's ticket cannot claim
     * against the description being written. */
    atomic_store(&ticket, (uint64_t)epoch << 32 | CLOSED);
    atomic_store_explicit(&job_fn, fn, memory_order_release);
    atomic_store_explicit(&job_arg, arg, memory_order_release);
    atomic_store_explicit(&job_items, (uint32_t)items, memory_order_release);
    atomic_store_explicit(&job_helpers, (uint32_t)helpers, memory_order_release);
    atomic_store_explicit(&job_epoch, epoch, memory_order_release);
    atomic_store_explicit(&done, 0, memory_order_relaxed);
    atomic_store(&ticket, (uint64_t)epoch << 32); /* seq_cst: or the sleeper's count is seen */
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&sleep_cond);
        pthread_mutex_unlock(&sleep_lock);
    }
    int mine = 0;
    uint64_t t = atomic_load_explicit(&ticket, memory_order_acquire);
    dla__cpu_share_fn f;
    void *a;
    uint32_t item;
    while (claim(-1, &t, &f, &a, &item)) {
        fn(arg, item);
        mine++;
    }
    /* Every item is claimed: wait for those the helpers run. */
    long long waited_from = 0;
    for (int round = 0; atomic_load_explicit(&done, memory_order_acquire) + mine < (int)items;
         round++) {
        RELAX();
        if ((round & 1023) == 1023) {
            if (!waited_from)
                waited_from = now_ns();
            sched_yield(); /* the helper may want this core back */
        }
    }
    if (waited_from && now_ns() - waited_from > WAIT_LONG_NS) {
        atomic_store_explicit(&solo_until, now_ns() + backoff, memory_order_relaxed);
        backoff = backoff * 2 < BACKOFF_MAX_NS ? backoff * 2 : BACKOFF_MAX_NS;
    } else {
        backoff = BACKOFF_MIN_NS;
    }
    atomic_store_explicit(&share_left, now_ns(), memory_order_relaxed);
    atomic_flag_clear_explicit(&busy, memory_order_release);
}

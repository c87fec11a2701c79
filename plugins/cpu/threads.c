/*
 * threads.c - the size of the cpu plugin's OpenMP teams, kept sane.
 *
 * Why: OMP_NUM_THREADS is read by the OpenMP runtime, not by us, and
 * libgomp takes any value: with OMP_NUM_THREADS=100000 the first parallel
 * region of a kernel crashes inside libgomp (its team set-up overruns the
 * stack), with nothing that names the cause. More threads than a few per
 * CPU only make each kernel wait for descheduled teammates anyway.
 *
 * The limit is four threads per CPU this process may run on, and never
 * less than MIN_LIMIT. omp_set_num_threads() sets the team size of the
 * calling thread only, so the plugin's entry points (plugin.c) call
 * dla__cpu_threads_check() first, which clamps each calling thread once
 * per change of the limit. Nothing is changed when the request is within
 * the limit.
 *
 * Shared CPUs: without OMP_NUM_THREADS, several MPI ranks on the machine
 * divide its CPUs among them (the launcher says how many), and so do
 * several dlaccel processes that know nothing of each other (peers.c
 * counts them; DLACCEL_SHARE_CORES=off keeps the whole count). Those
 * come and go, so the count is taken again at most once a second, at an
 * entry point, and each thread's team follows at its next entry.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT; secure_getenv (env_choice.h) */
#include "plugins/cpu/cpu.h"
#include "core/env_choice.h"

#include <omp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PER_CPU 4
#define MIN_LIMIT 64

int dla__cpu_threads_limit;
atomic_int dla__cpu_threads_gen = 1;
_Thread_local int dla__cpu_threads_done;
int dla__cpu_threads_sharing;

/* Sharing: the CPUs, the team size asked for (OpenMP's default), the
 * processes counted last, and when (CLOCK_MONOTONIC_COARSE seconds). */
static int share_cpus, share_asked;
static atomic_int share_count;
static atomic_llong share_at;

/* CPUs this process may run on (its affinity mask), else those online. */
static int cpus_available(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The ranks of this machine's part of an MPI job, from what the launcher
 * puts in the environment (Open MPI's, MPICH's and Slurm's); 1 outside
 * one. Read here, not asked of the communicator: the plugin knows nothing
 * of it, and the count must be set before the first kernel. */
static int local_ranks(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "SLURM_NTASKS_PER_NODE", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0 && n < (1 << 20))
            return (int)n;
    }
    return 1;
}

/* DLACCEL_SHARE_CORES: off, 0 or no keep the whole count; on, 1, yes or
 * unset share. Any other value is named once and sharing applies (it took
 * "of" or "false" for on without a word). */
static int share_wanted(void)
{
    static const char *const values[] = {"on", "1", "yes", "off", "0", "no", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_SHARE_CORES", values, &warned, dla__cpu_host->log) < 3;
}

/* A process's threads when n share the CPUs: at least 1, at most asked. */
static int share_of(int n)
{
    int t = share_cpus / (n > 0 ? n : 1);
    if (t < 1)
        t = 1;
    return t < share_asked ? t : share_asked;
}

static long long coarse_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (long long)ts.tv_sec;
}

void dla__cpu_threads_init(void)
{
    const int cpus = cpus_available();
    int limit = cpus > (1 << 20) / PER_CPU ? (1 << 20) : cpus * PER_CPU;
    if (limit < MIN_LIMIT)
        limit = MIN_LIMIT;
    const int asked = omp_get_max_threads();
    /* Read whatever OMP_NUM_THREADS says, so a misspelt value is named
     * even where it would not matter yet. */
    const int sharing_wanted = share_wanted();
    /* Several MPI ranks on this machine (parallel training) and no
     * OMP_NUM_THREADS: each takes its part of the CPUs, so that 2 ranks
     * on 2 cores do not run 4 threads that wait for each other. */
    const int ranks = local_ranks();
    if (ranks > 1 && !getenv("OMP_NUM_THREADS")) {
        if (sharing_wanted)
            dla__cpu_peers_join(); /* counted by the others; its own count is the launcher's */
        const int share = cpus / ranks > 0 ? cpus / ranks : 1;
        if (share < asked) {
            dla__cpu_threads_limit = share;
            if (dla__cpu_host->log)
                dla__cpu_host->log(DLA_LOG_INFO,
                                   "%d ranks run on this machine: %d thread%s each (%d CPU%s "
                                   "divided among them; OMP_NUM_THREADS sets another count)",
                                   ranks, share, share == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
            dla__cpu_threads_apply();
            return;
        }
    }
    if (ranks == 1 && !getenv("OMP_NUM_THREADS") && sharing_wanted && asked <= limit) {
        const int n = dla__cpu_peers_join();
        if (n > 0) {
            share_cpus = cpus;
            share_asked = asked;
            atomic_store(&share_count, n);
            atomic_store(&share_at, coarse_seconds());
            dla__cpu_threads_limit = share_of(n);
            dla__cpu_threads_sharing = 1;
            if (n > 1 && dla__cpu_threads_limit < asked && dla__cpu_host->log)
                dla__cpu_host->log(DLA_LOG_INFO,
                                   "%d dlaccel processes run on this machine: %d thread%s each "
                                   "(%d CPU%s divided among them; OMP_NUM_THREADS or "
                                   "DLACCEL_SHARE_CORES=off sets another count)",
                                   n, dla__cpu_threads_limit,
                                   dla__cpu_threads_limit == 1 ? "" : "s", cpus,
                                   cpus == 1 ? "" : "s");
            dla__cpu_threads_apply();
            return;
        }
    }
    if (asked <= limit) {
        dla__cpu_threads_limit = 0;
        return;
    }
    dla__cpu_threads_limit = limit;
    if (dla__cpu_host->log)
        dla__cpu_host->log(DLA_LOG_WARN,
                           "OMP_NUM_THREADS asks for %d threads; using %d (%d per CPU for the %d "
                           "CPU%s this process may use, at least %d): more crash the OpenMP "
                           "runtime or only wait for each other",
                           asked, limit, PER_CPU, cpus, cpus == 1 ? "" : "s", MIN_LIMIT);
    dla__cpu_threads_apply();
}

void dla__cpu_threads_apply(void)
{
    dla__cpu_threads_done = atomic_load(&dla__cpu_threads_gen);
    const int limit = __atomic_load_n(&dla__cpu_threads_limit, __ATOMIC_RELAXED);
    if (dla__cpu_threads_sharing) /* up again too, when a neighbour has gone */
        omp_set_num_threads(limit > 0 && limit < share_asked ? limit : share_asked);
    else if (limit > 0 && omp_get_max_threads() > limit)
        omp_set_num_threads(limit);
}

void dla__cpu_threads_poll(void)
{
    const long long now = coarse_seconds(), at = atomic_load_explicit(&share_at, memory_order_relaxed);
    long long seen = at;
    /* One thread a second counts; the others go on. */
    if (now <= at || !atomic_compare_exchange_strong(&share_at, &seen, now))
        return;
    const int n = dla__cpu_peers_count(), before = atomic_exchange(&share_count, n);
    if (n == before || share_of(n) == share_of(before))
        return;
    __atomic_store_n(&dla__cpu_threads_limit, share_of(n), __ATOMIC_RELAXED);
    atomic_fetch_add(&dla__cpu_threads_gen, 1);
    if (dla__cpu_host->log)
        dla__cpu_host->log(DLA_LOG_INFO, "%d dlaccel process%s on this machine now: %d thread%s "
                                         "each",
                           n, n == 1 ? "" : "es", share_of(n), share_of(n) == 1 ? "" : "s");
}

/* A team that left a region this recently still spins: libgomp's threads
 * spin GOMP_SPINCOUNT rounds (1000 by default here, core/omp_defaults.c:
 * 10 to 30 us) before they sleep; the gap between two launches of a
 * replay is a microsecond or two. */
#define AWAKE_NS 8000

static _Atomic long long team_left_ns;

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void dla__cpu_team_used(void)
{
    atomic_store_explicit(&team_left_ns, now_ns(), memory_order_relaxed);
}

int dla__cpu_team_awake(void)
{
    return now_ns() - atomic_load_explicit(&team_left_ns, memory_order_relaxed) < AWAKE_NS;
}

/*
 * omp_defaults.c - how the OpenMP runtime's idle threads wait, chosen
 * before the runtime is loaded.
 *
 * Why: the cpu plugin's kernels (and OpenBLAS under them) run OpenMP
 * parallel regions back to back. Between two regions libgomp's threads, by
 * default, spin for about 300,000 rounds before they sleep. On a machine of
 * its own that saves the few microseconds of a wake-up per region; beside
 * any other busy process it is a disaster: the spinning threads hold the
 * cores the neighbour wants, the scheduler takes turns, and a barrier then
 * waits for a teammate that is not running. Measured on 2 cores (issue 19):
 * the digit CNN train step took 2x to 10x longer by default than with
 * OMP_WAIT_POLICY=passive beside a busy loop, a second training job,
 * PyTorch or `make -j4`, while quiet, passive cost some per cent.
 *
 * A short spin keeps most of the quiet figure (the gap between two kernels
 * of a step is a few microseconds, shorter than the spin) and gives the
 * cores away at once when nothing follows. libgomp reads its settings
 * (OMP_WAIT_POLICY, GOMP_SPINCOUNT) once, when it is loaded; libdlaccel
 * does not link it, the cpu plugin does, so the library sets
 * GOMP_SPINCOUNT just before it loads the first plugin, and only when:
 *   - the user set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT (theirs win);
 *   - DLACCEL_OMP_SPIN is not "off";
 *   - libgomp is not loaded yet (a program that links OpenMP or OpenBLAS
 *     itself loaded it before main: then nothing can be changed from here,
 *     and the log says so at info level).
 * DLACCEL_OMP_SPIN=N sets another count (0 is libgomp's passive).
 * docs/environment.md and docs/performance.md give the figures.
 */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include "core/omp_defaults.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

/* Rounds of libgomp's spin loop (a pause instruction each) before a
 * waiting thread sleeps, against libgomp's 300,000: the count libgomp
 * itself falls back to when it has more threads than CPUs. Beside a
 * neighbour it measured as passive does (within noise), where 10,000
 * measured 25-60% slower. */
#define DEFAULT_SPIN "1000"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *outcome = "not yet decided (no plugin loaded)";
static char outcome_buf[160];

/* The OpenMP runtimes a process may hold: GCC's, and LLVM's (a build
 * with clang; Debian's OpenBLAS still brings GCC's, so both can be). */
static const char *const runtimes[] = {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"};
#define NRUNTIMES (sizeof runtimes / sizeof runtimes[0])

/* Runtime i of runtimes, when something in the process loaded it. */
static void *loaded(size_t i)
{
    return dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
}

/* An OpenMP runtime that something in the process loaded, or NULL. */
static void *loaded_runtime(void)
{
    for (size_t i = 0; i < NRUNTIMES; i++) {
        void *rt = loaded(i);
        if (rt)
            return rt;
    }
    return NULL;
}

static int valid_count(const char *s)
{
    if (!s || !*s)
        return 0;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    return errno == 0 && *end == '\0' && v >= 0;
}

static int user_set(void)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    return (policy && *policy) || (spin && *spin);
}

/* The count to set: DLACCEL_OMP_SPIN's when valid, else the default; NULL
 * for "off". warn: say so when DLACCEL_OMP_SPIN is not valid. */
static const char *count_to_set(int warn)
{
    const char *ours = getenv("DLACCEL_OMP_SPIN");
    if (ours && strcmp(ours, "off") == 0)
        return NULL;
    if (ours && *ours && !valid_count(ours)) {
        if (warn)
            dla__log(DLA_LOG_WARN,
                     "DLACCEL_OMP_SPIN='%s' is neither a count of spin rounds (0 or more) nor "
                     "'off'; using %s",
                     ours, DEFAULT_SPIN);
        return DEFAULT_SPIN;
    }
    return ours && *ours ? ours : DEFAULT_SPIN;
}

static void choose(void)
{
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    if (user_set()) {
        snprintf(outcome_buf, sizeof outcome_buf, "the user's (OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s)",
                 policy && *policy ? policy : "unset", spin && *spin ? spin : "unset");
        outcome = outcome_buf;
        return;
    }
    const char *value = count_to_set(1);
    if (!value) {
        outcome = "the OpenMP runtime's own (DLACCEL_OMP_SPIN=off)";
        return;
    }
    void *rt = loaded_runtime();
    if (rt) {
        dlclose(rt);
        outcome = "the OpenMP runtime's own: it was loaded before dlaccel's first plugin (the "
                  "program links OpenMP or OpenBLAS); set OMP_WAIT_POLICY=passive or "
                  "GOMP_SPINCOUNT yourself";
        dla__log(DLA_LOG_INFO, "OpenMP wait policy: %s", outcome);
        return;
    }
    /* Before any plugin thread exists; overwrite 0: only set when unset. */
    if (setenv("GOMP_SPINCOUNT", value, 0) != 0) {
        outcome = "the OpenMP runtime's own (setting GOMP_SPINCOUNT failed)";
        return;
    }
    const char *ours = getenv("DLACCEL_OMP_SPIN");
    snprintf(outcome_buf, sizeof outcome_buf, "dlaccel's (GOMP_SPINCOUNT=%s%s)", value,
             ours && strcmp(ours, value) == 0 ? ", from DLACCEL_OMP_SPIN" : ", the default");
    outcome = outcome_buf;
    dla__log(DLA_LOG_DEBUG, "OpenMP wait policy: %s", outcome);
}

void dla__omp_defaults(void)
{
    pthread_once(&once, choose);
}

DLA_API const char *dla_openmp_spin_count(void)
{
    return user_set() ? NULL : count_to_set(0);
}

DLA_API const char *dla_openmp_wait(void)
{
    return outcome;
}

void dla__omp_set_num_threads(int n)
{
    /* Each runtime loaded has this thread's count of its own: a kernel
     * compiled against either may start a team here. None loaded: no
     * team can start on this thread. */
    for (size_t i = 0; i < NRUNTIMES; i++) {
        void *rt = loaded(i);
        if (!rt)
            continue;
        void (*set)(int);
        *(void **)&set = dlsym(rt, "omp_set_num_threads");
        if (set)
            set(n);
        dlclose(rt);
    }
}

/*
 * timer.c - warm-up, choice of repetitions, per-call timing and the median.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench/timer.h"

#include <stdlib.h>
#include <time.h>

bench_plan bench_plan_default(void)
{
    return (bench_plan){.reps = 0, .target_s = 0.75, .min_reps = 5, .max_reps = 200000};
}

bench_plan bench_plan_quick(void)
{
    return (bench_plan){.reps = 0, .target_s = 0.05, .min_reps = 3, .max_reps = 1000};
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static dla_status timed_call(dla_status (*run)(void *), void *state, dla_device *dev,
                             double *seconds)
{
    double t0 = bench_now();
    dla_status st = run(state);
    /* Queued work is part of the call: an asynchronous device would
     * otherwise look as fast as its enqueue. */
    if (st == DLA_OK && dev)
        st = dla_device_sync(dev);
    *seconds = bench_now() - t0;
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether another call is due after done calls taking elapsed seconds. */
static int more_calls(const bench_plan *plan, int done, double elapsed)
{
    if (plan->reps > 0)
        return done < plan->reps;
    return done < plan->max_reps && (done < plan->min_reps || elapsed < plan->target_s);
}

dla_status bench_time(dla_status (*run)(void *state), void *state, dla_device *dev,
                      const bench_plan *plan, bench_stats *out)
{
    double elapsed = 0, *samples = NULL;
    int done = 0, room = 0;
    /* Warm-up: first-touch page faults, thread pools and kernel caches are
     * paid once by any real program, so they stay out of the figures. */
    dla_status st = timed_call(run, state, dev, &elapsed);
    elapsed = 0;
    /* A budget of time rather than a count estimated from one call: one
     * call slowed by the machine's other tenant must not decide the count. */
    while (st == DLA_OK && more_calls(plan, done, elapsed)) {
        if (done == room) {
            int grown = room ? 2 * room : 64;
            double *p = realloc(samples, (size_t)grown * sizeof *p);
            if (!p) {
                st = DLA_ERR_OUT_OF_MEMORY;
                break;
            }
            samples = p;
            room = grown;
        }
        st = timed_call(run, state, dev, &samples[done]);
        elapsed += samples[done++];
    }
    if (st == DLA_OK) {
        qsort(samples, (size_t)done, sizeof *samples, cmp_double);
        double mid = done % 2 ? samples[done / 2]
                              : 0.5 * (samples[done / 2 - 1] + samples[done / 2]);
        out->median_ms = 1e3 * mid;
        out->min_ms = 1e3 * samples[0];
        out->max_ms = 1e3 * samples[done - 1];
        out->reps = done;
    }
    free(samples);
    return st;
}

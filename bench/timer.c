/*
 * timer.c - warm-up, the interleaved timing loop, and the median.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench/timer.h"

#include <stdlib.h>
#include <time.h>

bench_plan bench_plan_default(void)
{
    return (bench_plan){
        .warmup = 6, .reps = 0, .target_s = 0.75, .min_reps = 5, .max_reps = 200000,
        .block_s = 0.05, .pipeline = 1};
}

bench_plan bench_plan_quick(void)
{
    return (bench_plan){
        .warmup = 1, .reps = 0, .target_s = 0.05, .min_reps = 3, .max_reps = 1000,
        .block_s = 0.01, .pipeline = 1};
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* calls calls of s and one sync; *seconds the time per call. */
static dla_status timed_call(const bench_subject *s, int calls, double *seconds)
{
    double t0 = bench_now();
    dla_status st = DLA_OK;
    for (int c = 0; c < calls && st == DLA_OK; c++)
        st = s->run(s->state);
    /* Queued work is part of the call: an asynchronous device would
     * otherwise look as fast as its enqueue. */
    if (st == DLA_OK && s->dev)
        st = dla_device_sync(s->dev);
    *seconds = (bench_now() - t0) / calls;
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The timed calls of one subject. */
typedef struct samples {
    double *t;
    int count, room;
    double total;
    double spent; /* seconds the samples took (total x calls a sample) */
} samples;

static int push(samples *s, double t)
{
    if (s->count == s->room) {
        int grown = s->room ? 2 * s->room : 64;
        double *p = realloc(s->t, (size_t)grown * sizeof *p);
        if (!p)
            return 0;
        s->t = p;
        s->room = grown;
    }
    s->t[s->count++] = t;
    s->total += t;
    return 1;
}

/* Whether the subject wants another call. */
static int wants_more(const bench_plan *plan, const samples *s)
{
    if (plan->reps > 0)
        return s->count < plan->reps;
    return s->count < plan->max_reps && (s->count < plan->min_reps || s->spent < plan->target_s);
}

static void summarise(samples *s, bench_stats *out)
{
    int n = s->count;
    qsort(s->t, (size_t)n, sizeof *s->t, cmp_double);
    double mid = n % 2 ? s->t[n / 2] : 0.5 * (s->t[n / 2 - 1] + s->t[n / 2]);
    *out = (bench_stats){.median_ms = 1e3 * mid,
                         .min_ms = 1e3 * s->t[0],
                         .max_ms = 1e3 * s->t[n - 1],
                         .reps = n};
}

dla_status bench_time(const bench_subject *subjects, int n, const bench_plan *plan,
                      bench_stats *stats, int *failed)
{
    samples *all = calloc((size_t)n, sizeof *all);
    dla_status st = all ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
    double t;
    const int calls = plan->pipeline > 1 ? plan->pipeline : 1;
    *failed = -1;
    /* Warm-up: first-touch page faults, thread pools and kernel caches are
     * paid once by any real program, so they stay out of the figures. */
    for (int w = 0; w < (plan->warmup > 0 ? plan->warmup : 1); w++)
        for (int i = 0; i < n && st == DLA_OK; i++)
            if ((st = timed_call(&subjects[i], 1, &t)) != DLA_OK)
                *failed = i;
    /* Rounds: each subject in turn runs calls for about block_s (at least
     * one), so all of them share the machine's good and bad moments, while
     * a block stays long enough to keep its own data in cache. */
    for (int busy = 1; busy && st == DLA_OK;) {
        busy = 0;
        for (int i = 0; i < n && st == DLA_OK; i++) {
            double block = 0;
            while (st == DLA_OK && wants_more(plan, &all[i]) &&
                   (block == 0 || block < plan->block_s)) {
                st = timed_call(&subjects[i], calls, &t);
                if (st != DLA_OK)
                    *failed = i;
                else if (!push(&all[i], t))
                    st = DLA_ERR_OUT_OF_MEMORY;
                all[i].spent += t * calls;
                block += t * calls;
                busy = 1;
            }
        }
    }
    for (int i = 0; i < n && st == DLA_OK; i++)
        summarise(&all[i], &stats[i]);
    for (int i = 0; all && i < n; i++)
        free(all[i].t);
    free(all);
    return st;
}

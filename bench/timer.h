/*
 * timer.h - timing workloads: warm-up calls, then timed calls, each closed
 * by a device sync, summarised as median, min and max.
 *
 * Each call is timed on its own (CLOCK_MONOTONIC) so the median shrugs off
 * the other tenants of a shared 2-core machine; the minimum says what the
 * hardware can do, the maximum how noisy the run was. A workload and its
 * reference are timed interleaved, in short alternating blocks, so a burst
 * of someone else's load hits both and their ratio stays meaningful.
 */
#ifndef DLA_BENCH_TIMER_H
#define DLA_BENCH_TIMER_H

#include <dlaccel.h>

/* How many calls to time. reps > 0 fixes the count; reps == 0 keeps calling
 * until the timed calls add up to target_s, at least min_reps and at most
 * max_reps of them. Interleaved subjects alternate every block_s. warmup
 * calls of each subject come first, untimed: a replay settles in over its
 * first calls (it records, plans, measures cuDNN's algorithms, compiles
 * its fused programs, and on the cuda plugin captures a CUDA graph on its
 * third planned run), which a training loop pays once. */
typedef struct bench_plan {
    int warmup;
    int reps;
    double target_s;
    int min_reps;
    int max_reps;
    double block_s;
    /* Calls per sample (--pipeline): 1 times each call up to its device
     * sync (the latency of a step whose result is read); N > 1 times N
     * calls and one sync at the end, each sample the time over N (the
     * throughput of steps that queue up, as PyTorch's references time
     * theirs: one synchronize per 20-50 steps). */
    int pipeline;
} bench_plan;

/* The default plan: 6 warm-up calls, then about 0.75 s a workload, at
 * least 5 calls. */
bench_plan bench_plan_default(void);
/* --quick: a smoke run, one warm-up call, about 0.05 s and at least 3
 * calls a workload. */
bench_plan bench_plan_quick(void);

/* One thing to time: run(state), then dla_device_sync(dev) (dev NULL:
 * nothing to wait for, a host reference). */
typedef struct bench_subject {
    dla_status (*run)(void *state);
    void *state;
    dla_device *dev;
} bench_subject;

typedef struct bench_stats {
    double median_ms;
    double min_ms;
    double max_ms;
    int reps;
} bench_stats;

/* Seconds from CLOCK_MONOTONIC. */
double bench_now(void);

/* Warms up each of the n subjects with one untimed call, then times them
 * interleaved as plan says, writing stats[i] for subject i. Stops at the
 * first failing call and returns its status with *failed set to the
 * subject's index (-1 otherwise); DLA_ERR_OUT_OF_MEMORY when the samples
 * cannot be stored. */
dla_status bench_time(const bench_subject *subjects, int n, const bench_plan *plan,
                      bench_stats *stats, int *failed);

#endif

/*
 * batch.h - running the workloads that take a batch at another one
 * (dlaccel-bench --batch N), for the sweep of how the cost grows with the
 * batch (bench/batch_sweep.sh, issue 19).
 *
 * A workload takes a batch when its table entry sets .batch (its setup
 * reads the batch from .size). At batch N it is a copy of the entry with
 * .size and .batch N, its work scaled by N / .batch, its name's "_bNNN"
 * suffix (if any) replaced by "_bN" and its label's "(batch NNN" by
 * "(batch N"; a reference that takes a batch is renamed the same way, so
 * the ratio line still finds it. Entries that differ only in their batch
 * (cnn_step_replay, cnn_step_replay_b1024) give the same copy: the
 * caller runs the first and skips the others (bench_batch_base_name).
 */
#ifndef DLA_BENCH_BATCH_H
#define DLA_BENCH_BATCH_H

#include "bench/workload.h"

#include <stddef.h>

/* The largest batch --batch takes: far above any size here, small enough
 * that a batch times an image's elements cannot overflow. */
#define BENCH_MAX_BATCH 65536

/* w at batch n: w itself when w takes no batch or n is 0, else a copy that
 * lives until bench_batch_release(); NULL when out of memory. */
const bench_workload *bench_at_batch(const bench_workload *w, int64_t n);

/* name without a trailing "_b<digits>", into buf: the family the entry
 * belongs to whatever its batch. */
void bench_batch_base_name(const char *name, char *buf, size_t size);

/* Frees every copy bench_at_batch made. */
void bench_batch_release(void);

#endif

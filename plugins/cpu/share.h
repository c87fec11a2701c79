/*
 * share.h - a small kernel's items shared with helper threads that are
 * never waited for unless they took an item (share.c says why).
 */
#ifndef DLA_PLUGIN_CPU_SHARE_H
#define DLA_PLUGIN_CPU_SHARE_H

#include <stdint.h>

typedef void (*dla__cpu_share_fn)(void *arg, int64_t item);

/* Whether kernels share their items this way (DLACCEL_CPU_SHARE, default
 * on); off: they keep their OpenMP regions. */
int dla__cpu_share_on(void);
/* Whether a kernel should share its items now: on, and no OpenMP team
 * awake from a region that just ended (it joins that team instead). */
int dla__cpu_share_wanted(void);
/* Whether a job ended within the helpers' spin: they join at once. */
int dla__cpu_share_awake(void);
/* Runs fn(arg, i) for i = 0 .. items - 1, each once, on the calling thread
 * and up to omp_get_max_threads() - 1 helpers; returns when all are done.
 * The items must write disjoint outputs. */
/* Ends the helper threads and waits for them (the plugin's shutdown: its
 * code is unmapped by the dlclose after it); no job may be running. The
 * next job starts new ones. */
void dla__cpu_share_stop(void);

void dla__cpu_share(int64_t items, dla__cpu_share_fn fn, void *arg);

#endif

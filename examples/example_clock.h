/*
 * example_clock.h - what the examples and benchmark programs measure
 * themselves with: wall time and the process's peak resident memory.
 * Header-only, so each example stays one program built from one file.
 */
#ifndef DLA_EXAMPLE_CLOCK_H
#define DLA_EXAMPLE_CLOCK_H

#include <stdio.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Peak resident memory of the process so far, MiB (VmHWM); 0 where
 * /proc/self/status cannot be read. */
static inline double peak_rss_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb / 1024.0;
}

#endif

/*
 * report.h - turning measurements into what a person reads (one line per
 * device and workload, then one line per comparison with its target) or
 * what a machine reads (--json: one document).
 */
#ifndef DLA_BENCH_REPORT_H
#define DLA_BENCH_REPORT_H

#include "bench/timer.h"
#include "bench/workload.h"

#include <stdio.h>

/* One (device, workload) measurement. */
typedef struct bench_record {
    const char *device; /* "cpu:0"; "host" for a reference workload */
    const bench_workload *workload;
    int is_reference;
    const char *against; /* a reference timed beside this device's workload */
    dla_status status;  /* DLA_OK: stats hold the figures */
    char error[256];    /* otherwise: why */
    bench_stats stats;
    char note[320]; /* the workload's note; "" for none */
} bench_record;

/* GFLOP/s or GB/s at the median time. */
double bench_rate(const bench_record *r);

/* Text: the column heads, then each record as it is measured. */
void bench_report_head(FILE *out);
void bench_report_line(FILE *out, const bench_record *r);
/* Text: each device workload's ratio to its reference, with the target.
 * Returns the number of ratio lines written. */
int bench_report_ratios(FILE *out, const bench_record *recs, size_t n);
/* Text: each workload's note, "label on device: note". */
void bench_report_notes(FILE *out, const bench_record *recs, size_t n);

/* --json: {"version", "threads", "records": [...], "ratios": [...],
 * "errors": [...]}, each record {device, workload, median_ms, min_ms,
 * max_ms, gflops or gbps, reps}, a reference record with "against": the
 * device whose workload it was timed beside, a record with a note "note",
 * one of a workload that takes a batch "batch". */
void bench_report_json(FILE *out, const bench_record *recs, size_t n);

#endif

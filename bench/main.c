/*
 * main.c - dlaccel-bench: the same workloads on every loaded device, then
 * the host references, then the ratios a person decides on.
 *
 *   dlaccel-bench [--json] [--device NAME] [--workload SUBSTR] [--reps N]
 *                 [--quick] [--list]
 *
 * Exit status: 0 when every selected workload ran, 1 when one failed (its
 * line says why), 2 for a usage error or a device that cannot be had.
 */
#define _GNU_SOURCE /* getopt_long */
#include "bench/report.h"
#include "bench/timer.h"
#include "bench/workload.h"

#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    int json;
    int list;
    const char *device;   /* NULL: every device */
    const char *workload; /* NULL: every workload */
    bench_plan plan;
} options;

static void usage(FILE *out)
{
    fputs("usage: dlaccel-bench [options]\n"
          "Runs each workload on every loaded device and prints median, min and max\n"
          "milliseconds and GFLOP/s or GB/s, then host references (OpenBLAS, memcpy)\n"
          "and the ratio of each device figure to its reference.\n"
          "\n"
          "  --json             one JSON document on stdout instead of the table\n"
          "  --device NAME      only this device (\"cpu\", \"cpu:0\")\n"
          "  --workload SUBSTR  only workloads whose name contains SUBSTR\n"
          "  --reps N           time N calls (default: enough for ~0.75 s, at least 5)\n"
          "  --quick            few calls per workload, for smoke tests\n"
          "  --list             list the workloads and exit\n"
          "  --help             this text\n",
          out);
}

/* Parses argv into opt; returns 0, or 2 after printing why. */
static int parse_options(int argc, char **argv, options *opt)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},    {"device", required_argument, NULL, 'd'},
        {"workload", required_argument, NULL, 'w'},
        {"reps", required_argument, NULL, 'r'}, {"quick", no_argument, NULL, 'q'},
        {"list", no_argument, NULL, 'l'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int reps = 0, quick = 0, c;
    char *end;
    *opt = (options){.plan = bench_plan_default()};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': opt->json = 1; break;
        case 'd': opt->device = optarg; break;
        case 'w': opt->workload = optarg; break;
        case 'q': quick = 1; break;
        case 'l': opt->list = 1; break;
        case 'r':
            reps = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || reps < 1 || reps > 1000000) {
                fprintf(stderr, "dlaccel-bench: --reps %s: want a count from 1 to 1000000\n",
                        optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "dlaccel-bench: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (quick)
        opt->plan = bench_plan_quick();
    if (reps)
        opt->plan.reps = reps;
    return 0;
}

static int matches(const options *opt, const bench_workload *w)
{
    return !opt->workload || strstr(w->name, opt->workload) != NULL;
}

/* A reference runs when its name matches, or when a selected device
 * workload is compared with it. */
static int reference_wanted(const options *opt, const bench_workload *ref)
{
    if (matches(opt, ref))
        return 1;
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            if (matches(opt, w) && w->reference && strcmp(w->reference, ref->name) == 0)
                return 1;
    return 0;
}

static void list_workloads(void)
{
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            printf("%-16s device     %s%s\n", w->name, w->reference ? "vs " : "",
                   w->reference ? w->reference : "");
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        printf("%-16s reference\n", w->name);
}

/* Sets up, times and tears down w on dev (NULL: a host reference). */
static void measure(const bench_workload *w, dla_device *dev, const bench_plan *plan,
                    bench_record *rec)
{
    void *state = NULL;
    *rec = (bench_record){.device = dev ? dla_device_name(dev) : "host",
                          .workload = w,
                          .is_reference = dev == NULL};
    dla_clear_error();
    dla_status st = w->setup(w, &state);
    if (st == DLA_OK)
        st = bench_time(w->run, state, dev, plan, &rec->stats);
    rec->status = st;
    if (st != DLA_OK)
        snprintf(rec->error, sizeof rec->error, "%s",
                 *dla_last_error() ? dla_last_error() : dla_status_str(st));
    w->teardown(state);
}

/* The devices to run on, into devs (room for count); returns how many, or
 * -1 after printing why none can be had. */
static int pick_devices(const options *opt, dla_device **devs, int count)
{
    if (opt->device) {
        dla_device *dev = dla_device_get(opt->device);
        if (!dev) {
            fprintf(stderr, "dlaccel-bench: --device %s: %s\n", opt->device, dla_last_error());
            return -1;
        }
        devs[0] = dev;
        return 1;
    }
    for (int i = 0; i < count; i++)
        devs[i] = dla_device_at(i);
    if (count == 0)
        fprintf(stderr, "dlaccel-bench: no device loaded: %s\n", dla_last_error());
    return count ? count : -1;
}

/* How many device workloads and references the options select. */
static void count_selected(const options *opt, size_t *device_wl, size_t *refs)
{
    *device_wl = *refs = 0;
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            *device_wl += (size_t)matches(opt, w);
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        *refs += (size_t)reference_wanted(opt, w);
}

static void text_banner(dla_device **devs, int ndevs)
{
    printf("dlaccel-bench %s: per call, after one warm-up call; rates at the median\n",
           dla_version_string());
    for (int i = 0; i < ndevs; i++)
        printf("  %-8s %s (%s plugin)\n", dla_device_name(devs[i]),
               dla_device_description(devs[i]), dla_device_plugin(devs[i]));
    printf("  %-8s references: OpenBLAS cblas_sgemm, memcpy on %d OpenMP threads\n\n", "host",
           omp_get_max_threads());
    bench_report_head(stdout);
}

/* The table line as soon as it is known; with --json only a failure, on
 * stderr, so a person watching sees it and stdout stays one document. */
static void show(const options *opt, const bench_record *r)
{
    if (!opt->json)
        bench_report_line(stdout, r);
    else if (r->status != DLA_OK)
        fprintf(stderr, "dlaccel-bench: %s %s failed: %s\n", r->device, r->workload->name,
                r->error);
}

int main(int argc, char **argv)
{
    options opt;
    if (parse_options(argc, argv, &opt) != 0)
        return 2;
    if (opt.list) {
        list_workloads();
        return 0;
    }

    size_t device_wl, refs;
    count_selected(&opt, &device_wl, &refs);
    if (device_wl + refs == 0) {
        fprintf(stderr, "dlaccel-bench: no workload matches '%s' (see --list)\n", opt.workload);
        return 2;
    }

    int count = opt.device ? 1 : dla_device_count();
    dla_device **devs = calloc((size_t)(count > 0 ? count : 1), sizeof *devs);
    bench_record *recs = calloc((size_t)(count > 0 ? count : 1) * device_wl + refs, sizeof *recs);
    if (!devs || !recs) {
        fputs("dlaccel-bench: out of memory\n", stderr);
        return 1;
    }
    int ndevs = pick_devices(&opt, devs, count);
    if (ndevs < 0)
        return 2;

    size_t n = 0;
    if (!opt.json)
        text_banner(devs, ndevs);
    for (int d = 0; d < ndevs; d++) {
        dla_device_set_current(devs[d]);
        for (const bench_workload *const *t = bench_device_tables; *t; t++)
            for (const bench_workload *w = *t; w->name; w++)
                if (matches(&opt, w)) {
                    measure(w, devs[d], &opt.plan, &recs[n]);
                    show(&opt, &recs[n++]);
                }
    }
    dla_device_set_current(NULL);
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        if (reference_wanted(&opt, w)) {
            measure(w, NULL, &opt.plan, &recs[n]);
            show(&opt, &recs[n++]);
        }

    if (opt.json) {
        bench_report_json(stdout, recs, n);
    } else {
        putchar('\n');
        bench_report_ratios(stdout, recs, n);
    }

    int failed = 0;
    for (size_t i = 0; i < n; i++)
        failed |= recs[i].status != DLA_OK;
    free(recs);
    free(devs);
    return failed ? 1 : 0;
}

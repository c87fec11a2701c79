/*
 * main.c - dlaccel-bench: the same workloads on every loaded device, then
 * the host references, then the ratios a person decides on.
 *
 *   dlaccel-bench [--json] [--device NAME] [--workload SUBSTR] [--reps N]
 *                 [--batch N] [--pipeline N] [--quick] [--list]
 *
 * Exit status: 0 when every selected workload ran, 1 when one failed (its
 * line says why), 2 for a usage error or a device that cannot be had.
 */
#define _GNU_SOURCE /* getopt_long */
#include "bench/batch.h"
#include "bench/report.h"
#include "bench/timer.h"
#include "bench/workload.h"

#include <getopt.h>
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct options {
    int json;
    int list;
    const char *device;   /* NULL: every device */
    const char *workload; /* NULL: every workload */
    int64_t batch;        /* 0: each workload's own; else only those taking one, at it */
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
          "  --workload SUBSTR  only workloads whose name contains SUBSTR (=NAME: that one)\n"
          "  --reps N           time N calls (default: enough for ~0.75 s, at least 5)\n"
          "  --batch N          only the workloads that take a batch (the digit CNN's and\n"
          "                     ResNet-20's train step and inference, eager and replayed),\n"
          "                     at batch N (1 to 65536), named NAME_bN; entries that differ\n"
          "                     only in their batch (cnn_step_replay, ..._b1024) run once;\n"
          "                     workloads without a batch (ops, convolutions, the tiny\n"
          "                     MLP, the loss functions) are left out\n"
          "  --pipeline N       time N calls and one device sync together, each sample\n"
          "                     their time over N: steps that queue up (throughput, as\n"
          "                     PyTorch's references time theirs); default 1, each call\n"
          "                     timed to its sync (the latency of a step that is read)\n"
          "  --quick            few calls per workload, for smoke tests\n"
          "  --print-plan       after each replayed workload, its trace and replay plan\n"
          "                     on stderr (dla_accel_print_trace); with\n"
          "                     DLACCEL_PLAN_PROFILE=1, each step's time\n"
          "  --list             list the workloads and exit\n"
          "  --help             this text\n",
          out);
}

/* --print-plan (bench_print_plan). */
static int print_plans;

void bench_print_plan(const dla_accel *af)
{
    if (!print_plans || !af || dla_accel_occupancy(af) < 1)
        return;
    if (dla_accel_print_trace(af, 0, stderr) != DLA_OK)
        fprintf(stderr, "dlaccel-bench: --print-plan: %s\n", dla_last_error());
}

/* Parses argv into opt; returns 0, or 2 after printing why. */
static int parse_options(int argc, char **argv, options *opt)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},    {"device", required_argument, NULL, 'd'},
        {"workload", required_argument, NULL, 'w'},
        {"reps", required_argument, NULL, 'r'}, {"quick", no_argument, NULL, 'q'},
        {"batch", required_argument, NULL, 'b'}, {"pipeline", required_argument, NULL, 'p'},
        {"list", no_argument, NULL, 'l'},    {"help", no_argument, NULL, 'h'},
        {"print-plan", no_argument, NULL, 'P'},
        {NULL, 0, NULL, 0},
    };
    int reps = 0, quick = 0, pipeline = 1, c;
    char *end;
    *opt = (options){.plan = bench_plan_default()};
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': opt->json = 1; break;
        case 'd': opt->device = optarg; break;
        case 'w': opt->workload = optarg; break;
        case 'q': quick = 1; break;
        case 'l': opt->list = 1; break;
        case 'P': print_plans = 1; break;
        case 'r':
            reps = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || reps < 1 || reps > 1000000) {
                fprintf(stderr, "dlaccel-bench: --reps %s: want a count from 1 to 1000000\n",
                        optarg);
                return 2;
            }
            break;
        case 'p':
            pipeline = (int)strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || pipeline < 1 || pipeline > 10000) {
                fprintf(stderr, "dlaccel-bench: --pipeline %s: want a count from 1 to 10000\n",
                        optarg);
                return 2;
            }
            break;
        case 'b': {
            long long n = strtoll(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || n < 1 || n > BENCH_MAX_BATCH) {
                fprintf(stderr, "dlaccel-bench: --batch %s: want a batch from 1 to %d\n", optarg,
                        BENCH_MAX_BATCH);
                return 2;
            }
            opt->batch = n;
            break;
        }
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
    opt->plan.pipeline = pipeline;
    return 0;
}

static int matches(const options *opt, const bench_workload *w)
{
    if (opt->batch && w->batch <= 0) /* --batch: only workloads that take one */
        return 0;
    if (opt->workload && opt->workload[0] == '=') /* "=NAME": that workload alone */
        return strcmp(w->name, opt->workload + 1) == 0;
    return !opt->workload || strstr(w->name, opt->workload) != NULL;
}

/* Whether a selected device workload is compared with ref: then ref is
 * timed beside it, on every device. */
static int paired(const options *opt, const bench_workload *ref)
{
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            if (matches(opt, w) && w->reference && strcmp(w->reference, ref->name) == 0)
                return 1;
    return 0;
}

/* With --batch, whether a selected device workload of the same family
 * (the same name but for a "_bNNN" suffix) comes before w: it runs at the
 * same batch under the same name, so w is not run again. */
static int earlier_at_batch(const options *opt, const bench_workload *w)
{
    char base[96], other[96];
    if (!opt->batch)
        return 0;
    bench_batch_base_name(w->name, base, sizeof base);
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *e = *t; e->name; e++) {
            if (e == w)
                return 0;
            bench_batch_base_name(e->name, other, sizeof other);
            if (matches(opt, e) && strcmp(base, other) == 0)
                return 1;
        }
    return 0;
}

static void list_workloads(void)
{
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            printf("%-16s device     %s%s%s%s\n", w->name, w->reference ? "vs " : "",
                   w->reference ? w->reference : "", w->reference && w->batch > 0 ? " " : "",
                   w->batch > 0 ? "(takes --batch)" : "");
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        printf("%-16s reference\n", w->name);
}

/* A record's error from status and the thread's last message. */
static void fail_record(bench_record *rec, dla_status st)
{
    rec->status = st;
    snprintf(rec->error, sizeof rec->error, "%s",
             *dla_last_error() ? dla_last_error() : dla_status_str(st));
}

/* Sets up, times and tears down the workloads ws[i] (n of them, 1 or 2),
 * ws[i] on devs[i] (NULL: a host reference), interleaved. A workload that
 * fails is reported and the others are timed again without it. */
static void measure(const bench_workload *const *ws, dla_device *const *devs, int n,
                    const bench_plan *plan, bench_record *recs)
{
    void *state[2] = {NULL, NULL};
    bench_subject subjects[2];
    bench_stats stats[2];
    int live[2], nlive = 0;
    for (int i = 0; i < n; i++) {
        recs[i] = (bench_record){.device = devs[i] ? dla_device_name(devs[i]) : "host",
                                 .workload = ws[i],
                                 .is_reference = devs[i] == NULL};
        if (!devs[i] && n > 1)
            recs[i].against = recs[0].device;
        dla_clear_error();
        dla_status st = ws[i]->setup(ws[i], &state[i]);
        if (st != DLA_OK)
            fail_record(&recs[i], st);
        else
            live[nlive++] = i;
    }
    while (nlive > 0) {
        for (int j = 0; j < nlive; j++)
            subjects[j] = (bench_subject){ws[live[j]]->run, state[live[j]], devs[live[j]]};
        int failed;
        dla_clear_error();
        dla_status st = bench_time(subjects, nlive, plan, stats, &failed);
        if (st == DLA_OK) {
            for (int j = 0; j < nlive; j++)
                recs[live[j]].stats = stats[j];
            break;
        }
        if (failed < 0) { /* the harness itself ran out of memory */
            for (int j = 0; j < nlive; j++)
                fail_record(&recs[live[j]], st);
            break;
        }
        fail_record(&recs[live[failed]], st);
        for (int j = failed; j + 1 < nlive; j++)
            live[j] = live[j + 1];
        nlive--;
    }
    for (int i = 0; i < n; i++) {
        if (ws[i]->note && recs[i].status == DLA_OK)
            ws[i]->note(state[i], recs[i].stats.median_ms, recs[i].note, sizeof recs[i].note);
        ws[i]->teardown(state[i]);
    }
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

/* The records one device needs (each workload, and its reference beside
 * it), and those of references timed alone. */
static void count_selected(const options *opt, size_t *per_device, size_t *alone)
{
    *per_device = *alone = 0;
    for (const bench_workload *const *t = bench_device_tables; *t; t++)
        for (const bench_workload *w = *t; w->name; w++)
            if (matches(opt, w))
                *per_device += bench_find_reference(w->reference) ? 2 : 1;
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        *alone += (size_t)(matches(opt, w) && !paired(opt, w));
}

/* What the figures ran with: a line for the banner. */
static const char *openmp_wait_line(void)
{
    static char line[160];
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    snprintf(line, sizeof line, "OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s%s",
             policy && *policy ? policy : "(unset)", spin && *spin ? spin : "(unset)",
             getenv("DLACCEL_BENCH_REEXEC") ? " (dlaccel's default, set on re-execution)" : "");
    return line;
}

static void text_banner(dla_device **devs, int ndevs, int64_t batch, int pipeline)
{
    printf("dlaccel-bench %s: per call, after warm-up calls (6; 1 with --quick); rates at the "
           "median\n",
           dla_version_string());
    for (int i = 0; i < ndevs; i++)
        printf("  %-8s %s (%s plugin)\n", dla_device_name(devs[i]),
               dla_device_description(devs[i]), dla_device_plugin(devs[i]));
    const char *core = openblas_get_corename();
    printf("  %-8s references: OpenBLAS cblas_sgemm (its %s kernels%s), memcpy on %d OpenMP\n"
           "           threads, each timed interleaved with the workload it is compared with\n",
           "host", core ? core : "?",
           getenv("DLACCEL_BENCH_REEXEC") && dla_openblas_coretype() ? ", dlaccel's choice" : "",
           omp_get_max_threads());
    printf("  %-8s OpenMP wait: %s\n", "openmp", openmp_wait_line());
    if (batch)
        printf("  %-8s --batch %lld: the workloads that take a batch, at it\n", "batch",
               (long long)batch);
    if (pipeline > 1)
        printf("  %-8s --pipeline %d: each figure is %d calls and one device sync, over %d\n",
               "pipeline", pipeline, pipeline, pipeline);
    putchar('\n');
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

/* This program links OpenMP and OpenBLAS (for the references), so both
 * were loaded before main, and dlaccel could choose neither how the OpenMP
 * threads wait (core/omp_defaults.c) nor which kernels OpenBLAS runs
 * (core/blas_defaults.c). Run again with dlaccel's choices in the
 * environment, so the figures are those of a program that links neither;
 * DLACCEL_OMP_SPIN=off (or OMP_WAIT_POLICY, GOMP_SPINCOUNT) keeps the
 * runtime's own wait, DLACCEL_OPENBLAS_CORE=off (or OPENBLAS_CORETYPE)
 * OpenBLAS's own kernels. */
static void reexec_with_dlaccel_defaults(char **argv)
{
    const char *count = dla_openmp_spin_count(), *core = dla_openblas_coretype();
    if ((!count && !core) || getenv("DLACCEL_BENCH_REEXEC"))
        return;
    if ((count && setenv("GOMP_SPINCOUNT", count, 0) != 0) ||
        (core && setenv("OPENBLAS_CORETYPE", core, 0) != 0) ||
        setenv("DLACCEL_BENCH_REEXEC", "1", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* Not re-executed: go on with the runtime's and OpenBLAS's own, and say so. */
    fprintf(stderr, "dlaccel-bench: could not re-execute with GOMP_SPINCOUNT=%s "
                    "OPENBLAS_CORETYPE=%s; timing with the OpenMP runtime's own wait policy and "
                    "OpenBLAS's own kernels\n",
            count ? count : "(unset)", core ? core : "(unset)");
    if (count)
        unsetenv("GOMP_SPINCOUNT");
    if (core)
        unsetenv("OPENBLAS_CORETYPE");
    unsetenv("DLACCEL_BENCH_REEXEC");
}

int main(int argc, char **argv)
{
    reexec_with_dlaccel_defaults(argv);
    options opt;
    if (parse_options(argc, argv, &opt) != 0)
        return 2;
    if (opt.list) {
        list_workloads();
        return 0;
    }

    size_t per_device, alone;
    count_selected(&opt, &per_device, &alone);
    if (per_device + alone == 0) {
        fprintf(stderr, "dlaccel-bench: no workload %s'%s' (see --list)\n",
                opt.batch ? "that takes a batch (--batch) matches " : "matches ",
                opt.workload ? opt.workload : "");
        return 2;
    }

    int count = opt.device ? 1 : dla_device_count();
    dla_device **devs = calloc((size_t)(count > 0 ? count : 1), sizeof *devs);
    bench_record *recs = calloc((size_t)(count > 0 ? count : 1) * per_device + alone, sizeof *recs);
    if (!devs || !recs) {
        fputs("dlaccel-bench: out of memory\n", stderr);
        free(recs);
        free(devs);
        return 1;
    }
    int ndevs = pick_devices(&opt, devs, count);
    if (ndevs < 0) {
        free(recs);
        free(devs);
        return 2;
    }

    size_t n = 0;
    int failed_setup = 0;
    if (!opt.json)
        text_banner(devs, ndevs, opt.batch, opt.plan.pipeline);
    for (int d = 0; d < ndevs; d++) {
        /* Tensors are made on the current device, the reference's buffers
         * on the host whatever is current. */
        dla_device_set_current(devs[d]);
        for (const bench_workload *const *t = bench_device_tables; *t; t++)
            for (const bench_workload *w = *t; w->name; w++) {
                if (!matches(&opt, w) || earlier_at_batch(&opt, w))
                    continue;
                const bench_workload *ws[2] = {bench_at_batch(w, opt.batch),
                                               bench_at_batch(bench_find_reference(w->reference),
                                                              opt.batch)};
                if (!ws[0] || (w->reference && bench_find_reference(w->reference) && !ws[1])) {
                    fputs("dlaccel-bench: out of memory\n", stderr);
                    failed_setup = 1;
                    continue;
                }
                dla_device *on[2] = {devs[d], NULL};
                int k = ws[1] ? 2 : 1;
                measure(ws, on, k, &opt.plan, &recs[n]);
                for (int i = 0; i < k; i++)
                    show(&opt, &recs[n++]);
            }
    }
    dla_device_set_current(NULL);
    /* References asked for by name whose workload was not: alone. */
    for (const bench_workload *w = bench_reference_workloads; w->name; w++)
        if (matches(&opt, w) && !paired(&opt, w)) {
            dla_device *host = NULL;
            measure(&w, &host, 1, &opt.plan, &recs[n]);
            show(&opt, &recs[n++]);
        }

    if (opt.json) {
        bench_report_json(stdout, recs, n);
    } else {
        putchar('\n');
        bench_report_ratios(stdout, recs, n);
        bench_report_notes(stdout, recs, n);
    }

    int failed = failed_setup;
    for (size_t i = 0; i < n; i++)
        failed |= recs[i].status != DLA_OK;
    free(recs);
    free(devs);
    bench_batch_release();
    return failed ? 1 : 0;
}

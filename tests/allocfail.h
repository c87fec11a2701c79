/*
 * allocfail.h - the allocation-failure loop the driver (test_alloc_fail.c)
 * and test_nnops_allocfail.c share: a workflow runs once to count its
 * allocations, then once per refused allocation; every run must end in
 * DLA_ERR_OUT_OF_MEMORY or in DLA_OK with the answer of a run refused
 * nothing, and leave the blocks it found. Include after testutil.h and
 * cmocka.h. Settings: test_alloc_fail.c's comment.
 */
#ifndef DLA_TESTS_ALLOCFAIL_H
#define DLA_TESTS_ALLOCFAIL_H

#include <stdio.h>
#include <string.h>

/* Adds the host copy of t to *digest (an answer to compare runs by). */
TU_UNUSED static dla_status digest_of(dla_tensor *t, double *digest)
{
    if (dla_tensor_status(t) != DLA_OK)
        return dla_tensor_status(t);
    int64_t n = dla_tensor_numel(t);
    double buf[256];
    if (n > 256)
        return DLA_ERR_SHAPE;
    /* Its own scope: the caller may or may not have one open. */
    if (dla_scope_begin() != DLA_OK)
        return DLA_ERR_STATE;
    dla_status st = dla_tensor_to_host(dla_cast(t, DLA_F64), buf, sizeof buf);
    dla_scope_end();
    for (int64_t i = 0; st == DLA_OK && i < n; i++)
        *digest += buf[i] * (double)(i % 7 + 1);
    return st;
}

typedef struct workflow {
    const char *name;
    dla_status (*run)(double *digest);
    int every; /* refuse every allocation in make check too */
} workflow;

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

/* Totals over every workflow, printed at the end. */
static long total_runs, total_recovered, total_leaks, total_wrong;

/* "name N runs recovered leaks wrong": the run under way and the counts
 * before it, for the script to add up when N crashes. */
static void note_progress(const char *name, long n, long runs, long recovered, long leaks,
                          long wrong)
{
    const char *file = getenv("DLA_ALLOCFAIL_PROGRESS");
    FILE *f = file && *file ? fopen(file, "w") : NULL;
    if (f) {
        fprintf(f, "%s %ld %ld %ld %ld %ld\n", name, n, runs, recovered, leaks, wrong);
        fclose(f);
    }
}

static void fail_every_allocation_in_turn(const workflow *w)
{
    const char *only = getenv("DLA_ALLOCFAIL_ONLY");
    if (only && *only && strcmp(only, w->name))
        skip();
    long start = only && *only ? env_long("DLA_ALLOCFAIL_FROM", 1) : 1;
    double want = 0, got;
    dla_status first = w->run(&want); /* loads plugins, fills caches: those stay */
    if (first != DLA_OK)
        fail_msg("%s: %s", w->name, dla_last_error());
    /* The same again: an answer that depends on nothing left behind. */
    got = 0;
    tu_calls = 0;
    long live = tu_live;
    assert_int_equal(w->run(&got), DLA_OK);
    long total = tu_calls;
    if (got != want)
        fail_msg("%s: runs differ without any refusal: %.17g, then %.17g", w->name, want, got);
    if (tu_live != live)
        fail_msg("%s: %ld blocks leaked without any refusal", w->name, tu_live - live);
    want = got;
    long runs_wanted = w->every ? 0 : env_long("DLA_ALLOCFAIL_RUNS", 300);
    long stride = runs_wanted > 0 && total > 2 * runs_wanted ? (total + runs_wanted - 1) / runs_wanted : 1;
    long runs = 0, recovered = 0, leaks = 0, wrong = 0, n;
    char first_problem[1200] = "";
    for (n = start;; n += stride) {
        note_progress(w->name, n, runs, recovered, leaks, wrong);
        got = 0;
        tu_calls = 0;
        tu_fail_at = n;
        dla_status st = w->run(&got);
        long calls = tu_calls;
        tu_fail_at = 0;
        char problem[1100] = "";
        if (calls < n) { /* nothing was refused: the whole workflow ran */
            if (st != DLA_OK || got != want)
                snprintf(problem, sizeof problem, "no refusal, yet status %d (%s)", st,
                         st ? dla_last_error() : "a different answer");
        } else {
            runs++;
            if (st == DLA_OK && got == want)
                recovered++;
            else if (st != DLA_ERR_OUT_OF_MEMORY) {
                wrong++;
                snprintf(problem, sizeof problem, "status %s: %s",
                         st == DLA_OK ? "OK with a wrong answer" : dla_status_str(st),
                         st == DLA_OK ? "" : dla_last_error());
            }
        }
        if (tu_live != live) {
            leaks++;
            snprintf(problem + strlen(problem), sizeof problem - strlen(problem), "%s%ld blocks leaked",
                     *problem ? "; " : "", tu_live - live);
            live = tu_live; /* count each leak once */
        }
        if (*problem && !*first_problem)
            snprintf(first_problem, sizeof first_problem, "refusing allocation %ld of %ld: %s", n,
                     total, problem);
        if (calls < n)
            break;
    }
    note_progress(w->name, 0, runs, recovered, leaks, wrong);
    print_message("# %s: %ld allocations, %ld refused one at a time (every %ld): %ld recovered, "
                  "%ld leaks, %ld wrong statuses\n", w->name, total, runs, stride, recovered, leaks,
                  wrong);
    total_runs += runs;
    total_recovered += recovered;
    total_leaks += leaks;
    total_wrong += wrong;
    if (*first_problem)
        fail_msg("%s: %ld leaks, %ld wrong statuses; the first: %s", w->name, leaks, wrong,
                 first_problem);
    assert_true(total > 10); /* the workflow does allocate */
}

#endif

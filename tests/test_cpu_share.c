/*
 * test_cpu_share.c - the cpu plugin's sharing of a kernel's items with
 * helper threads (plugins/cpu/share.c), compiled in from the plugin's
 * source: every item runs exactly once and the job is over when the call
 * returns, whatever the item count (0, 1, fewer than the threads, many),
 * the team size (1, 2, 3, 5), from two host threads at once, from inside
 * an item (a nested job runs on its caller) and from inside an OpenMP
 * region. The kernels' bits with any thread count are test_thread_bits's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/share.h"

/* What share.c takes from the rest of the plugin. */
static dla_plugin_host host;
const dla_plugin_host *dla__cpu_host = &host;
int dla__cpu_team_awake(void)
{
    return 0;
}

#define MAX_ITEMS 400

typedef struct job {
    atomic_int runs[MAX_ITEMS];
    int64_t n;
    int nested; /* item 0 starts a job of its own */
} job;

static void item(void *arg, int64_t i)
{
    job *j = arg;
    /* Items of different lengths, so that the threads interleave. */
    volatile int spin = 0;
    for (int k = 0; k < (int)(i % 5) * 200; k++)
        spin++;
    if (j->nested && i == 0) {
        job inner = {.n = 37};
        dla__cpu_share(inner.n, item, &inner);
        for (int64_t k = 0; k < inner.n; k++)
            assert_int_equal(atomic_load(&inner.runs[k]), 1);
    }
    atomic_fetch_add(&j->runs[i], 1);
}

/* Jobs of 0 .. MAX_ITEMS - 1 items in steps; each item once, all done. */
static void jobs(int step, int nested)
{
    static job j; /* one caller at a time uses it */
    for (int64_t n = 0; n < MAX_ITEMS; n += step) {
        memset(&j, 0, sizeof j);
        j.n = n;
        j.nested = nested;
        dla__cpu_share(n, item, &j);
        for (int64_t i = 0; i < n; i++)
            if (atomic_load(&j.runs[i]) != 1)
                fail_msg("%lld items: item %lld ran %d times", (long long)n, (long long)i,
                         atomic_load(&j.runs[i]));
    }
}

static void test_every_item_runs_once_with_any_team(void **state)
{
    (void)state;
    static const int teams[] = {1, 2, 3, 5};
    for (int t = 0; t < 4; t++) {
        omp_set_num_threads(teams[t]);
        for (int round = 0; round < 20; round++)
            jobs(1 + round % 7, 0);
    }
}

/* The process's threads now (Linux: /proc/self/task). */
static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The plugin's shutdown ends the helpers (dlclose unmaps the code they
 * spin in) and the next job starts new ones. */
static void test_stop_ends_the_helpers_and_jobs_go_on(void **state)
{
    (void)state;
    omp_set_num_threads(3);
    jobs(11, 0);
    const int with = threads_now();
    if (with < 0)
        skip();
    dla__cpu_share_stop();
    /* Earlier tests' teams of 5 may have started 4 helpers. */
    const int without = threads_now();
    if (!(without >= 1 && without <= with - 2))
        fail_msg("threads: %d with 2 helpers or more, %d after the stop", with, without);
    jobs(11, 0);
    if (threads_now() != without + 2)
        fail_msg("threads: %d after new jobs of a team of 3, %d without helpers",
                 threads_now(), without);
    dla__cpu_share_stop();
    dla__cpu_share_stop(); /* none running: nothing to do */
    jobs(17, 0);
}

static void test_a_job_inside_an_item_runs_on_its_caller(void **state)
{
    (void)state;
    omp_set_num_threads(3);
    jobs(13, 1);
}

static void test_inside_an_openmp_region(void **state)
{
    (void)state;
    omp_set_num_threads(2);
    int bad = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad)
    {
        job j = {.n = 100};
        dla__cpu_share(j.n, item, &j);
        for (int64_t i = 0; i < j.n; i++)
            bad += atomic_load(&j.runs[i]) != 1;
    }
    assert_int_equal(bad, 0);
}

static void *host_thread(void *arg)
{
    atomic_int *bad = arg;
    omp_set_num_threads(2);
    job *j = calloc(1, sizeof *j);
    for (int round = 0; round < 300 && j; round++) {
        memset(j, 0, sizeof *j);
        j->n = 1 + (round * 31) % (MAX_ITEMS - 1);
        dla__cpu_share(j->n, item, j);
        for (int64_t i = 0; i < j->n; i++)
            if (atomic_load(&j->runs[i]) != 1)
                atomic_fetch_add(bad, 1);
    }
    if (!j)
        atomic_fetch_add(bad, 1);
    free(j);
    return NULL;
}

static void test_two_host_threads_at_once(void **state)
{
    (void)state;
    atomic_int bad = 0;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, host_thread, &bad), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(atomic_load(&bad), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_item_runs_once_with_any_team),
        cmocka_unit_test(test_a_job_inside_an_item_runs_on_its_caller),
        cmocka_unit_test(test_inside_an_openmp_region),
        cmocka_unit_test(test_two_host_threads_at_once),
        cmocka_unit_test(test_stop_ends_the_helpers_and_jobs_go_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

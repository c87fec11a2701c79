/*
 * test_opencl_plan.c - the plan hooks (ABI 1.3) on the opencl plugin: a
 * planned replay is one enqueued sequence with one host wait at its end
 * (the plugin's debug line at plan_end says how many waits it made, and
 * this binary runs with DLACCEL_LOG=debug to read it), gives eager's bits,
 * and a launch that fails inside the plan comes back as the replay's error,
 * naming the launch, with the plan still usable afterwards.
 *
 * tests/opencl.mk runs it with the build tree's opencl manifest on the
 * path; without an OpenCL device every test is skipped, and says why.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static dla_device *ocl;

static int group_setup(void **state)
{
    ocl = dla_device_get("opencl");
    return 0;
}

static void need_opencl(void)
{
    if (!ocl) {
        print_message("no OpenCL device: %s\n", dla_last_error());
        skip();
    }
}

/* stderr into a temporary file while the library writes its log there. */
typedef struct capture {
    FILE *file;
    int saved;
} capture;

static void capture_start(capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->file), 2) >= 0);
}

/* The captured text (malloc'd), stderr restored. */
static char *capture_end(capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    long size = ftell(c->file);
    assert_true(size >= 0);
    char *text = malloc((size_t)size + 1);
    rewind(c->file);
    size_t got = fread(text, 1, (size_t)size, c->file);
    text[got] = '\0';
    fclose(c->file);
    return text;
}

static void assert_same_bits(dla_tensor *a, dla_tensor *b)
{
    assert_int_equal(dla_tensor_status(a), DLA_OK);
    assert_int_equal(dla_tensor_status(b), DLA_OK);
    const int64_t n = dla_tensor_numel(a);
    assert_int_equal(dla_tensor_numel(b), n);
    const size_t bytes = (size_t)n * dla_dtype_size(dla_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    assert_int_equal(dla_tensor_to_host(a, x, bytes), DLA_OK);
    assert_int_equal(dla_tensor_to_host(b, y, bytes), DLA_OK);
    assert_memory_equal(x, y, bytes);
    free(x);
    free(y);
}

/* A small training-like step: two layers, dropout, a loss and its
 * gradients: dozens of launches, random numbers among them. */
static dla_status step(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *h = dla_dropout(dla_relu(dla_add(dla_mtimes(in[0], in[1]), in[2])), 0.25);
    dla_tensor *y = dla_mtimes(in[3], h);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[4])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 3, (dla_tensor *[]){in[0], in[2], in[3]}, out + 1);
}

static void a_planned_replay_waits_once_and_gives_eager_bits(void **state)
{
    need_opencl();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(31);
    dla_tensor *in[5] = {dla_randn(DLA_F32, "", DLA_DIMS(16, 8)), dla_randn(DLA_F32, "", DLA_DIMS(8, 32)),
                         dla_randn(DLA_F32, "", DLA_DIMS(16, 1)), dla_randn(DLA_F32, "", DLA_DIMS(1, 16)),
                         dla_ones(DLA_F32, "", DLA_DIMS(1, 32))};
    dla_accel *af = dla_accelerate(step, NULL);
    for (int call = 0; call < 4; call++) {
        /* Call 1 records, call 2 plans; calls 3 and 4 run the plan. */
        dla_tensor *got[4], *want[4];
        dla_rng_seed(500 + (uint64_t)call);
        capture c;
        capture_start(&c);
        const dla_status st = dla_accel_feval(af, NULL, 5, in, 4, got);
        char *log = capture_end(&c);
        assert_int_equal(st, DLA_OK);
        dla_rng_seed(500 + (uint64_t)call);
        assert_int_equal(dla_feval(step, NULL, 5, in, 4, want), DLA_OK);
        for (int i = 0; i < 4; i++)
            assert_same_bits(got[i], want[i]);
        if (call >= 2) {
            /* "opencl:0: plan of L launches: C commands enqueued, W host wait(s)" */
            const char *line = strstr(log, "plan of ");
            int launches = 0, commands = 0;
            long waits = -1;
            if (!line || sscanf(line, "plan of %d launches: %d commands enqueued, %ld host wait",
                                &launches, &commands, &waits) != 3)
                fail_msg("no plan_end line in the log of call %d:\n%s", call + 1, log);
            assert_true(launches >= 10);
            assert_true(commands >= launches); /* each launch one command or more, none waited for */
            assert_int_equal(waits, 1);
            if (call == 3)
                print_message("%.*s\n", (int)strcspn(line, "\n"), line);
            assert_null(strstr(line + 1, "plan of ")); /* one plan per call */
        }
        free(log);
    }
    dla_accel_free(af);
    dla_device_set_current(NULL);
    dla_scope_end();
}

/* exp of rows of x picked by an index: the gather checks the positions. */
static dla_status pick(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_exp(dla_affine(dla_index(in[0], 1, in[1]), 0.5, 1.0));
    return DLA_OK;
}

static void a_launch_that_fails_inside_a_plan_is_the_replays_error_and_named(void **state)
{
    need_opencl();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(32);
    dla_tensor *x = dla_randn(DLA_F32, "", DLA_DIMS(5, 4));
    const int32_t good[3] = {4, 0, 2}, bad[3] = {1, 9, 0};
    dla_tensor *ig = dla_tensor_from_host(good, DLA_I32, "", DLA_DIMS(3, 1));
    dla_tensor *ib = dla_tensor_from_host(bad, DLA_I32, "", DLA_DIMS(3, 1));
    dla_accel *af = dla_accelerate(pick, NULL);
    dla_tensor *got, *want;
    for (int call = 0; call < 3; call++) /* record, plan, run */
        if (dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, ig}, 1, &got) != DLA_OK)
            fail_msg("call %d: %s", call + 1, dla_last_error());
    assert_int_equal(dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, ib}, 1, &got),
                     DLA_ERR_INVALID_ARGUMENT);
    const char *msg = dla_last_error();
    if (!strstr(msg, "dla_accelerate: launch ") || !strstr(msg, "gather") ||
        !strstr(msg, "on opencl"))
        fail_msg("the message does not name the launch: %s", msg);
    print_message("%s\n", msg);
    /* The plan is still good. */
    assert_int_equal(dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, ig}, 1, &got), DLA_OK);
    assert_int_equal(pick(NULL, 2, (dla_tensor *[]){x, ig}, 1, &want), DLA_OK);
    assert_same_bits(got, want);
    dla_accel_free(af);
    dla_device_set_current(NULL);
    dla_scope_end();
}

int main(void)
{
    /* The plugin's plan_end line is a debug line. */
    setenv("DLACCEL_LOG", "debug", 1);
    const struct CMUnitTest tests[] = {
        TU_TEST(a_planned_replay_waits_once_and_gives_eager_bits),
        TU_TEST(a_launch_that_fails_inside_a_plan_is_the_replays_error_and_named),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}

/*
 * test_accel.c - dla_accelerate: MATLAB's AcceleratedFunction behaviour.
 * Hits and misses with a reason for each key component, the properties,
 * eviction, replayed values against eager ones (gradients included), RNG
 * slots against baked randomness with CheckMode "tolerance", data-dependent
 * reads, nesting, threads, and a trace replayed on another device.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <pthread.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* ---------------------------------------------------------- functions */

typedef struct counter {
    int calls; /* how often the C function itself ran */
    double scale;
} counter;

/* out[0] = sum(in[0] .* scale); counts its own runs. */
static dla_status scaled_sum(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    counter *c = ctx;
    c->calls++;
    for (int i = 0; i < nout; i++)
        out[i] = dla_sum(dla_affine(in[0], c->scale, 0.0), 0, NULL);
    return DLA_OK;
}

static size_t scale_key(void *ctx, void *buf, size_t size)
{
    counter *c = ctx;
    if (size >= sizeof c->scale)
        memcpy(buf, &c->scale, sizeof c->scale);
    return sizeof c->scale;
}

/* A model loss with gradients: loss = sum((W2 tanh(W1 x + b1) - t).^2). */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    if (ctx)
        ((counter *)ctx)->calls++;
    dla_tensor *h = dla_tanh(dla_add(dla_mtimes(in[0], in[3]), in[1]));
    dla_tensor *y = dla_mtimes(in[2], h);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[4])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 3, in, out + 1);
}

/* MATLAB's examples: noise from the host (baked) and noise like x (RNG slot). */
static dla_status my_unsupported_fun(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(in[0], dims);
    dla_tensor *noise = dla_rand(dla_tensor_dtype(in[0]), "", nd, dims);
    out[0] = dla_add(in[0], noise);
    return DLA_OK;
}

static dla_status my_supported_fun(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    out[0] = dla_add(in[0], dla_rand_like(in[0]));
    return DLA_OK;
}

static dla_tensor *ones(int64_t r, int64_t c) { return dla_ones(DLA_F64, "", DLA_DIMS(r, c)); }

/* ----------------------------------------------------------- properties */

static void test_defaults_and_the_matlab_property_display(void **state)
{
    dla_accel *af = dla_accelerate(my_unsupported_fun, &(dla_accel_options){.name = "myUnsupportedFun"});
    assert_non_null(af);
    assert_int_equal(dla_accel_enabled(af), 1);
    assert_int_equal(dla_accel_cache_size(af), 50);
    assert_true(dla_accel_hit_rate(af) == 0.0);
    assert_int_equal(dla_accel_occupancy(af), 0);
    assert_string_equal(dla_accel_check_mode(af), "none");
    assert_true(dla_accel_check_tolerance(af) == 1e-4);
    char buf[512];
    dla_accel_describe(af, buf, sizeof buf);
    assert_non_null(strstr(buf, "AcceleratedFunction with properties:"));
    assert_non_null(strstr(buf, "Function: @myUnsupportedFun"));
    assert_non_null(strstr(buf, "CheckTolerance: 1.0000e-04"));
    assert_int_equal(dla_accel_set_check_mode(af, "sometimes"), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_accel_set_cache_size(af, 0), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_accel_set_check_tolerance(af, -1), DLA_ERR_INVALID_ARGUMENT);
    dla_accel_free(af);
}

static void test_second_call_hits_and_does_not_run_the_function(void **state)
{
    counter c = {0, 2.0};
    dla_accel *af = dla_accelerate(scaled_sum, NULL);
    dla_scope_begin();
    dla_tensor *x = ones(3, 4), *y1, *y2;
    assert_int_equal(dla_accel_call(af, &c, 1, &x, 1, &y1), DLA_OK);
    assert_string_equal(dla_accel_last_miss(af), "first call");
    assert_int_equal(dla_accel_call(af, &c, 1, &x, 1, &y2), DLA_OK);
    assert_string_equal(dla_accel_last_miss(af), "");
    assert_int_equal(c.calls, 1);
    assert_true(dla_tensor_item(y1, 0) == 24.0 && dla_tensor_item(y2, 0) == 24.0);
    assert_true(dla_accel_hit_rate(af) == 50.0);
    assert_int_equal(dla_accel_occupancy(af), 1);
    /* A new input of the same pattern replays with its own values. */
    dla_tensor *x2 = dla_full(0.5, DLA_F64, "", DLA_DIMS(3, 4)), *y3;
    assert_int_equal(dla_accel_call(af, &c, 1, &x2, 1, &y3), DLA_OK);
    assert_true(dla_tensor_item(y3, 0) == 12.0);
    assert_int_equal(c.calls, 1);
    dla_accel_clear(af);
    assert_int_equal(dla_accel_occupancy(af), 0);
    assert_true(dla_accel_hit_rate(af) == 0.0);
    dla_scope_end();
    dla_accel_free(af);
}

static void test_disabled_runs_the_function_every_time(void **state)
{
    counter c = {0, 1.0};
    dla_accel *af = dla_accelerate(scaled_sum, NULL);
    dla_accel_set_enabled(af, 0);
    dla_scope_begin();
    dla_tensor *x = ones(2, 2), *y;
    for (int i = 0; i < 3; i++)
        assert_int_equal(dla_accel_call(af, &c, 1, &x, 1, &y), DLA_OK);
    assert_int_equal(c.calls, 3);
    assert_int_equal(dla_accel_occupancy(af), 0);
    dla_scope_end();
    dla_accel_free(af);
}

/* One call with x, then one with a changed component: a miss whose reason
 * names it. */
static void expect_miss(dla_accel *af, void *ctx, int grad, dla_tensor *x, int nout,
                        const char *reason)
{
    dla_tensor *out[4];
    dla_status st = grad ? dla_accel_feval(af, ctx, 1, &x, nout, out)
                         : dla_accel_call(af, ctx, 1, &x, nout, out);
    assert_int_equal(st, DLA_OK);
    if (!strstr(dla_accel_last_miss(af), reason))
        fail_msg("miss reason \"%s\" does not say \"%s\"", dla_accel_last_miss(af), reason);
}

static void test_every_key_component_misses_with_its_reason(void **state)
{
    counter c = {0, 1.0};
    dla_accel *af = dla_accelerate(scaled_sum, &(dla_accel_options){.key = scale_key});
    dla_scope_begin();
    expect_miss(af, &c, 0, dla_ones(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 128)), 1, "first call");
    expect_miss(af, &c, 0, dla_ones(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 64)), 1,
                "input 1 dims 28x28x1x128 -> 28x28x1x64");
    expect_miss(af, &c, 0, dla_ones(DLA_F64, "SSCB", DLA_DIMS(28, 28, 1, 64)), 1,
                "input 1 dtype single -> double");
    expect_miss(af, &c, 0, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 1,
                "input 1 format \"SSCB\" -> \"SSSC\"");
    c.scale = 3.0; /* a non-tensor input, through the key function */
    expect_miss(af, &c, 0, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 1,
                "non-tensor input values changed");
    expect_miss(af, &c, 0, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 2,
                "number of outputs 1 -> 2");
    expect_miss(af, &c, 1, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 2,
                "gradient mode dla_accel_call -> dla_accel_feval");
    /* The device: every loaded device other than the first. */
    if (dla_device_count() > 1) {
        dla_device_set_current(dla_device_at(1));
        char want[64];
        snprintf(want, sizeof want, "input 1 device %s -> %s", dla_device_name(dla_device_at(0)),
                 dla_device_name(dla_device_at(1)));
        expect_miss(af, &c, 1, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 2, want);
        dla_device_set_current(NULL);
    }
    /* And nothing else: the same pattern again is a hit. */
    expect_miss(af, &c, 0, dla_ones(DLA_F64, "SSSC", DLA_DIMS(28, 28, 1, 64)), 2, "");
    assert_string_equal(dla_accel_last_miss(af), "");
    dla_scope_end();
    dla_accel_free(af);
}

static void test_without_a_key_function_the_ctx_pointer_is_the_key(void **state)
{
    counter a = {0, 1.0}, b = {0, 1.0};
    dla_accel *af = dla_accelerate(scaled_sum, NULL);
    dla_scope_begin();
    dla_tensor *x = ones(2, 2), *y;
    dla_accel_call(af, &a, 1, &x, 1, &y);
    dla_accel_call(af, &b, 1, &x, 1, &y);
    assert_non_null(strstr(dla_accel_last_miss(af), "the ctx pointer"));
    dla_scope_end();
    dla_accel_free(af);
}

static void test_a_full_cache_evicts_and_keeps_what_is_hit(void **state)
{
    counter c = {0, 1.0};
    dla_accel *af = dla_accelerate(scaled_sum, NULL);
    assert_int_equal(dla_accel_set_cache_size(af, 2), DLA_OK);
    dla_scope_begin();
    dla_tensor *a = ones(2, 2), *b = ones(3, 3), *d = ones(4, 4), *y;
    for (int i = 0; i < 30; i++) /* a is hit often */
        dla_accel_call(af, &c, 1, &a, 1, &y);
    dla_accel_call(af, &c, 1, &b, 1, &y);
    dla_accel_call(af, &c, 1, &d, 1, &y); /* evicts b, not a */
    assert_int_equal(dla_accel_occupancy(af), 2);
    int before = c.calls;
    dla_accel_call(af, &c, 1, &a, 1, &y);
    assert_int_equal(c.calls, before); /* still cached */
    dla_accel_call(af, &c, 1, &b, 1, &y);
    assert_int_equal(c.calls, before + 1);
    assert_non_null(strstr(dla_accel_last_miss(af), "input 1 dims"));
    /* Lowering the size evicts at once. */
    dla_accel_set_cache_size(af, 1);
    assert_int_equal(dla_accel_occupancy(af), 1);
    dla_scope_end();
    dla_accel_free(af);
}

/* Runs fn with stderr sent to a file; returns what was written (malloc'd). */
static char *stderr_of(void (*fn)(void *), void *arg)
{
    fflush(stderr);
    char path[] = "/tmp/dla_accel_logXXXXXX";
    int fd = mkstemp(path);
    int saved = dup(2);
    dup2(fd, 2);
    fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    return text;
}

static void changing_dims(void *arg)
{
    dla_accel *af = arg;
    counter c = {0, 1.0};
    dla_scope_begin();
    for (int64_t n = 1; n <= 12; n++) { /* a new batch size every call */
        dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(4, n)), *y;
        dla_accel_call(af, &c, 1, &x, 1, &y);
    }
    dla_scope_end();
}

static void test_a_run_of_misses_warns_once_with_the_most_frequent_reason(void **state)
{
    dla_accel *af = dla_accelerate(scaled_sum, &(dla_accel_options){.name = "lossFcn"});
    char *log = stderr_of(changing_dims, af);
    const char *w = strstr(log, "dla_accelerate: lossFcn: ");
    assert_non_null(w);
    assert_non_null(strstr(w, "of the last 10 calls missed the cache"));
    assert_non_null(strstr(w, "the most frequent reason is a change of input dims"));
    assert_non_null(strstr(w, "(last: input 1 dims 4x"));
    assert_null(strstr(w + 1, "dla_accelerate: lossFcn: ")); /* once */
    assert_true(dla_accel_hit_rate(af) == 0.0);
    free(log);
    dla_accel_free(af);
}

/* --------------------------------------------------- replayed values */

static void test_replayed_loss_and_gradients_equal_eager_ones_exactly(void **state)
{
    counter c = {0, 0};
    dla_scope_begin();
    dla_rng_seed(3);
    dla_tensor *in[5] = {dla_randn(DLA_F32, "", DLA_DIMS(8, 4)), dla_randn(DLA_F32, "", DLA_DIMS(8, 1)),
                         dla_randn(DLA_F32, "", DLA_DIMS(2, 8)), dla_randn(DLA_F32, "", DLA_DIMS(4, 16)),
                         dla_randn(DLA_F32, "", DLA_DIMS(2, 16))};
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *first[4], *again[4], *eager[4];
    assert_int_equal(dla_accel_feval(af, &c, 5, in, 4, first), DLA_OK);
    /* New weights, same pattern: a hit computing new values. */
    in[0] = dla_affine(in[0], 0.5, 0.1);
    assert_int_equal(dla_accel_feval(af, &c, 5, in, 4, again), DLA_OK);
    assert_int_equal(c.calls, 1);
    assert_int_equal(dla_feval(model_loss, NULL, 5, in, 4, eager), DLA_OK);
    for (int i = 0; i < 4; i++) {
        int64_t n = dla_tensor_numel(eager[i]);
        assert_int_equal(dla_tensor_numel(again[i]), n);
        float *a = malloc(sizeof(float) * (size_t)n), *b = malloc(sizeof(float) * (size_t)n);
        dla_tensor_to_host(again[i], a, sizeof(float) * (size_t)n);
        dla_tensor_to_host(eager[i], b, sizeof(float) * (size_t)n);
        assert_memory_equal(a, b, sizeof(float) * (size_t)n);
        free(a);
        free(b);
    }
    assert_true(dla_tensor_item(first[0], 0) != dla_tensor_item(again[0], 0));
    /* The trace holds forward and backward ops. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_accel_print_trace(af, 0, f), DLA_OK);
    fclose(f);
    assert_non_null(strstr(text, "trace: 5 inputs, 4 outputs"));
    assert_non_null(strstr(text, "accumulate") != NULL || strstr(text, "gemm") ? text : NULL);
    assert_non_null(strstr(text, "fill_like")); /* the seed of the backward sweep */
    free(text);
    dla_scope_end();
    dla_accel_free(af);
}

/* ----------------------------------------------------------- randomness */

static void test_noise_like_a_traced_tensor_is_an_rng_slot_equal_to_eager(void **state)
{
    dla_scope_begin();
    dla_tensor *x = ones(3, 3);
    dla_accel *af = dla_accelerate(my_supported_fun, &(dla_accel_options){.name = "mySupportedFun"});
    dla_accel_set_check_mode(af, "tolerance");
    dla_tensor *y0, *y1, *y2, *e;
    dla_accel_call(af, NULL, 1, &x, 1, &y0); /* records */
    dla_rng_seed(77);
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y1), DLA_OK); /* replays */
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y2), DLA_OK);
    assert_true(dla_accel_hit_rate(af) > 60.0);
    /* New numbers on every replay... */
    assert_true(dla_tensor_item(y1, 0) != dla_tensor_item(y2, 0));
    /* ...the same, bit for bit, as eager with the same seed. */
    dla_rng_seed(77);
    my_supported_fun(NULL, 1, &x, 1, &e);
    double a[9], b[9];
    dla_tensor_to_host(y1, a, sizeof a);
    dla_tensor_to_host(e, b, sizeof b);
    assert_memory_equal(a, b, sizeof a);
    assert_string_equal(dla_accel_last_check(af), ""); /* no warning */
    dla_scope_end();
    dla_accel_free(af);
}

static void test_noise_from_the_host_is_baked_and_tolerance_check_warns(void **state)
{
    dla_scope_begin();
    dla_tensor *x = ones(3, 3);
    dla_accel *af = dla_accelerate(my_unsupported_fun, &(dla_accel_options){.name = "myUnsupportedFun"});
    dla_accel_set_check_mode(af, "tolerance");
    dla_tensor *y1, *y2;
    dla_accel_call(af, NULL, 1, &x, 1, &y1);
    dla_accel_call(af, NULL, 1, &x, 1, &y2);
    /* Baked: the replay repeats the recorded noise. */
    assert_true(dla_tensor_item(y1, 4) == dla_tensor_item(y2, 4));
    const char *msg = dla_accel_last_check(af);
    assert_non_null(strstr(msg, "Accelerated outputs differ from underlying function outputs"));
    assert_non_null(strstr(msg, "output 1: largest absolute difference"));
    assert_non_null(strstr(msg, "largest relative difference"));
    assert_non_null(strstr(msg, "1 constant made inside the function"));
    dla_scope_end();
    dla_accel_free(af);
}

static dla_status reads_a_value(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *s = dla_sum(in[0], 0, NULL);
    double v = dla_tensor_item(s, 0); /* a host read of a traced value */
    out[0] = v > 0 ? dla_exp(in[0]) : dla_neg(in[0]);
    return DLA_OK;
}

static void test_a_host_read_while_recording_marks_the_trace_data_dependent(void **state)
{
    dla_scope_begin();
    dla_tensor *x = ones(2, 2), *y;
    dla_accel *af = dla_accelerate(reads_a_value, NULL);
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    dla_accel_print_trace(af, 0, f);
    fclose(f);
    assert_non_null(strstr(text, "data-dependent: the function read a traced value (1x1 double)"));
    free(text);
    dla_scope_end();
    dla_accel_free(af);
}

/* ------------------------------------------------- nesting, threads */

static dla_accel *inner_af;

static dla_status outer_fun(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *mid;
    dla_status st = dla_accel_call(inner_af, ctx, 1, in, 1, &mid);
    out[0] = dla_mul(mid, in[0]);
    return st;
}

static void test_an_accelerated_function_inside_another_works(void **state)
{
    counter c = {0, 2.0};
    inner_af = dla_accelerate(scaled_sum, NULL);
    dla_accel *outer = dla_accelerate(outer_fun, NULL);
    dla_scope_begin();
    dla_tensor *x = ones(2, 3), *y1, *y2;
    assert_int_equal(dla_accel_call(outer, &c, 1, &x, 1, &y1), DLA_OK);
    assert_int_equal(dla_accel_call(outer, &c, 1, &x, 1, &y2), DLA_OK);
    assert_true(dla_tensor_item(y1, 0) == 12.0 && dla_tensor_item(y2, 5) == 12.0);
    assert_int_equal(c.calls, 1); /* the inner ops were recorded into the outer trace */
    assert_true(dla_accel_hit_rate(outer) == 50.0);
    dla_scope_end();
    dla_accel_free(outer);
    dla_accel_free(inner_af);
}

typedef struct worker {
    dla_accel *af;
    int ok;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_tensor *in[5] = {dla_randn(DLA_F32, "", DLA_DIMS(8, 4)), dla_randn(DLA_F32, "", DLA_DIMS(8, 1)),
                         dla_randn(DLA_F32, "", DLA_DIMS(2, 8)), dla_randn(DLA_F32, "", DLA_DIMS(4, 16)),
                         dla_randn(DLA_F32, "", DLA_DIMS(2, 16))};
    dla_tensor *out[4], *ref[4];
    w->ok = dla_feval(model_loss, NULL, 5, in, 4, ref) == DLA_OK;
    for (int i = 0; i < 50 && w->ok; i++)
        w->ok = dla_accel_feval(w->af, NULL, 5, in, 4, out) == DLA_OK &&
                dla_tensor_item(out[0], 0) == dla_tensor_item(ref[0], 0);
    dla_scope_end();
    return NULL;
}

static void test_one_accelerated_function_serves_several_threads(void **state)
{
    dla_accel *af = dla_accelerate(model_loss, NULL);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){af, 0};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_true(w[i].ok);
    }
    assert_int_equal(dla_accel_occupancy(af), 1);
    assert_true(dla_accel_hit_rate(af) >= 90.0);
    dla_accel_free(af);
}

/* ------------------------------------------------------------- devices */

static void test_a_trace_recorded_on_one_device_replays_on_another(void **state)
{
    assert_true(dla_device_count() >= 2); /* main() adds the testmem plugin */
    dla_scope_begin();
    dla_rng_seed(4);
    dla_device_set_current(dla_device_at(0));
    dla_tensor *in[5] = {dla_randn(DLA_F64, "", DLA_DIMS(8, 4)), dla_randn(DLA_F64, "", DLA_DIMS(8, 1)),
                         dla_randn(DLA_F64, "", DLA_DIMS(2, 8)), dla_randn(DLA_F64, "", DLA_DIMS(4, 16)),
                         dla_randn(DLA_F64, "", DLA_DIMS(2, 16))};
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *ref[4], *got[4], *moved[5];
    assert_int_equal(dla_accel_feval(af, NULL, 5, in, 4, ref), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    for (int i = 0; i < 5; i++)
        moved[i] = dla_tensor_to_device(in[i], dla_device_at(1));
    assert_int_equal(dla_trace_replay(t, 5, moved, 4, got), DLA_OK);
    for (int i = 0; i < 4; i++) {
        assert_ptr_equal(dla_tensor_device(got[i]), dla_device_at(1));
        int64_t n = dla_tensor_numel(ref[i]);
        for (int64_t j = 0; j < n; j++)
            assert_true(tu_close(dla_tensor_item(got[i], j), dla_tensor_item(ref[i], j), 1e-12));
    }
    /* Inputs of another shape are refused with the reason. */
    dla_tensor *bad[5] = {moved[0], moved[1], moved[2], dla_tensor_to_device(ones(4, 3), dla_device_at(1)), moved[4]};
    assert_int_equal(dla_trace_replay(t, 5, bad, 4, got), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "input 4 is 4x3; the trace was recorded with 4x16"));
    dla_trace_release(t);
    dla_device_set_current(NULL);
    dla_scope_end();
    dla_accel_free(af);
}

int main(void)
{
    /* A second device with memory the host cannot address: the testmem
     * plugin of the build tree, after the default path (cpu stays first). */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_and_the_matlab_property_display),
        cmocka_unit_test(test_second_call_hits_and_does_not_run_the_function),
        cmocka_unit_test(test_disabled_runs_the_function_every_time),
        cmocka_unit_test(test_every_key_component_misses_with_its_reason),
        cmocka_unit_test(test_without_a_key_function_the_ctx_pointer_is_the_key),
        cmocka_unit_test(test_a_full_cache_evicts_and_keeps_what_is_hit),
        cmocka_unit_test(test_a_run_of_misses_warns_once_with_the_most_frequent_reason),
        cmocka_unit_test(test_replayed_loss_and_gradients_equal_eager_ones_exactly),
        cmocka_unit_test(test_noise_like_a_traced_tensor_is_an_rng_slot_equal_to_eager),
        cmocka_unit_test(test_noise_from_the_host_is_baked_and_tolerance_check_warns),
        cmocka_unit_test(test_a_host_read_while_recording_marks_the_trace_data_dependent),
        cmocka_unit_test(test_an_accelerated_function_inside_another_works),
        cmocka_unit_test(test_one_accelerated_function_serves_several_threads),
        cmocka_unit_test(test_a_trace_recorded_on_one_device_replays_on_another),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_higher.c - higher derivatives (dla_gradient_opts with
 * enable_higher_derivatives): derivatives of known functions, what a
 * gradient is to a later one without the option, a comparison on the
 * path, a network's gradient penalty against finite differences,
 * and the same computations accelerated: traced, replayed with eager's
 * bits, saved and loaded. Every op's second derivatives are checked in
 * its own suite (gc_check2, tests/gradcheck.h).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkstemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tu_assert.h"

#include "testutil.h"
#include "gradcheck.h"

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const dla_gradient_options higher = {.enable_higher_derivatives = 1};

static dla_tensor *sum_all(dla_tensor *t) { return dla_sum(t, 0, NULL); }

/* MATLAB's example: y = x^3, dy/dx recorded, then d2y/dx2 = 6x; and on to
 * x^4's third derivative, 24x, through two recorded sweeps. */
static dla_status cube(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *x = in[0], *y = dla_mul(x, dla_mul(x, x));
    dla_status st = dla_gradient_opts(sum_all(y), 1, &x, &out[0], &higher);
    return st != DLA_OK ? st : dla_gradient(sum_all(out[0]), 1, &x, &out[1]);
}

static dla_status fourth_power(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    dla_tensor *x = in[0], *y = dla_square(dla_square(x));
    dla_status st = dla_gradient_opts(sum_all(y), 1, &x, &out[0], &higher);
    if (st == DLA_OK)
        st = dla_gradient_opts(sum_all(out[0]), 1, &x, &out[1], &higher);
    return st != DLA_OK ? st : dla_gradient(sum_all(out[1]), 1, &x, &out[2]);
}

static void test_the_derivatives_of_powers_are_exact(void **state)
{
    (void)state;
    dla_scope_begin();
    const double v[4] = {5, -1, 0.5, 0};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(4));
    dla_tensor *out[3];
    assert_int_equal(dla_feval(cube, NULL, 1, &x, 2, out), DLA_OK);
    for (int i = 0; i < 4; i++) {
        assert_true(dla_tensor_item(out[0], i) == 3 * v[i] * v[i]);
        assert_true(dla_tensor_item(out[1], i) == 6 * v[i]);
    }
    assert_int_equal(dla_feval(fourth_power, NULL, 1, &x, 3, out), DLA_OK);
    for (int i = 0; i < 4; i++) {
        assert_true(tu_close(dla_tensor_item(out[0], i), 4 * v[i] * v[i] * v[i], 1e-14));
        assert_true(tu_close(dla_tensor_item(out[1], i), 12 * v[i] * v[i], 1e-14));
        assert_true(tu_close(dla_tensor_item(out[2], i), 24 * v[i], 1e-14));
    }
    dla_scope_end();
}

/* Hooks on a recorded sweep: ready hands each gradient over once, with
 * its final value, and the gradient still differentiates again. */
typedef struct ready_log {
    int calls;
    double first;
} ready_log;

static void on_ready(void *ctx, int index, dla_tensor *grad)
{
    ready_log *r = ctx;
    assert_int_equal(index, 0);
    r->calls++;
    r->first = dla_tensor_item(grad, 0);
}

static dla_status cube_hooked(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    dla_gradient_hooks hooks = {.ready = on_ready, .ctx = ctx};
    dla_tensor *x = in[0], *y = dla_mul(x, dla_mul(x, x));
    dla_status st = dla_gradient_opts(sum_all(y), 1, &x, &out[0],
                                      &(dla_gradient_options){.enable_higher_derivatives = 1,
                                                              .hooks = &hooks});
    return st != DLA_OK ? st : dla_gradient(sum_all(out[0]), 1, &x, &out[1]);
}

static void test_hooks_hand_over_a_recorded_sweeps_gradients(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((const double[]){2, -3}, DLA_F64, "", DLA_DIMS(2));
    dla_tensor *out[2];
    ready_log r = {0};
    assert_int_equal(dla_feval(cube_hooked, &r, 1, &x, 2, out), DLA_OK);
    assert_int_equal(r.calls, 1);
    assert_true(r.first == 12.0);
    assert_true(dla_tensor_item(out[1], 0) == 12.0 && dla_tensor_item(out[1], 1) == -18.0);
    dla_scope_end();
}

/* Without the option the first gradient is a constant to the second. */
static dla_status cube_plain(void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    dla_tensor *x = in[0], *y = dla_mul(x, dla_mul(x, x));
    dla_status st = dla_gradient(sum_all(y), 1, &x, &out[0]);
    return st != DLA_OK ? st : dla_gradient(sum_all(out[0]), 1, &x, &out[1]);
}

static void test_without_the_option_a_gradient_is_a_constant_and_the_error_says_so(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(3));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(cube_plain, NULL, 1, &x, 2, out), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "the loss does not depend on it"));
    assert_non_null(strstr(dla_last_error(), "enable_higher_derivatives"));
    dla_scope_end();
}

/* A comparison on the path (an op whose results have no derivative, its
 * constant flag) stops its gradient by design: the sweep goes on past it.
 * (An op with neither a rule nor that flag would be refused by name;
 * every op of the library has one or the other.) */
static dla_status through_a_mask(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    dla_tensor *x = in[0];
    dla_tensor *y = dla_mul(x, dla_cast(dla_gt(x, dla_zeros(DLA_F64, "", DLA_DIMS(1))), DLA_F64));
    out[0] = sum_all(y);
    return dla_gradient(out[0], 1, &x, &out[1]);
}

static void test_a_comparison_on_the_path_stops_its_gradient_by_design(void **state)
{
    (void)state;
    dla_scope_begin();
    const double v[3] = {-1, 2, 3};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(3));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(through_a_mask, NULL, 1, &x, 2, out), DLA_OK);
    for (int i = 0; i < 3; i++)
        assert_true(dla_tensor_item(out[1], i) == (v[i] > 0 ? 1.0 : 0.0));
    dla_scope_end();
}

/* in[0] x, in[1] w: G = d/dx sum(max2(x, 0) .* w) (min2 when ctx is set,
 * of -w) recorded, then out[1] = d/dw sum(sqrt(+-G)). */
static dla_status sqrt_of_a_picked_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                            dla_tensor **out)
{
    dla_tensor *x = in[0], *zero = dla_zeros(DLA_F64, "", DLA_DIMS(1));
    dla_tensor *y = ctx ? dla_min2(x, zero) : dla_max2(x, zero);
    dla_status st = dla_gradient_opts(sum_all(dla_mul(y, in[1])), 1, &x, &out[0], &higher);
    if (st != DLA_OK)
        return st;
    dla_tensor *l2 = sum_all(dla_sqrt(ctx ? dla_neg(out[0]) : out[0]));
    return dla_gradient(l2, 1, &in[1], &out[1]);
}

static void test_a_second_derivative_stays_off_the_flat_side_of_max2_and_min2(void **state)
{
    /* G = w where max2 picks x, 0 elsewhere, whatever w is: d sqrt(G)/dw
     * is 1/(2 sqrt(w)) there and 0 elsewhere. sqrt' is Inf at G = 0, and
     * max2's backward makes its 0 as step(g), whose own rule multiplied
     * by 0: Inf * 0, NaN (until 2026-11-30). */
    (void)state;
    const double x[4] = {-1, 4, -0.25, 2}, w[4] = {1, 4, 9, 16};
    for (int k = 0; k < 2; k++) {
        dla_scope_begin();
        const double s = k ? -1 : 1; /* min2 picks -x where max2 picks x */
        double xs[4], ws[4];
        for (int i = 0; i < 4; i++) {
            xs[i] = s * x[i];
            ws[i] = s * w[i];
        }
        dla_tensor *in[2] = {dla_tensor_from_host(xs, DLA_F64, "", DLA_DIMS(4)),
                             dla_tensor_from_host(ws, DLA_F64, "", DLA_DIMS(4))};
        dla_tensor *out[2];
        assert_int_equal(dla_feval(sqrt_of_a_picked_gradient, k ? (void *)in : NULL, 2, in, 2, out),
                         DLA_OK);
        for (int i = 0; i < 4; i++) {
            const double want = x[i] > 0 ? s / (2 * sqrt(w[i])) : 0.0;
            const double got = dla_tensor_item(out[1], i);
            if (!(fabs(got - want) <= 1e-15))
                fail_msg("%s: x = %g: d/dw %g (want %g)", k ? "min2" : "max2", xs[i], got, want);
        }
        dla_scope_end();
    }
}

/* Second derivatives of max2, min2 and the max and min reductions (over a
 * dim, several, all), away from ties: their backward picks with where. */
typedef struct pick_ctx {
    int which, nd;
    int64_t dims[2];
} pick_ctx;

static dla_tensor *picked(void *ctx, dla_tensor *const *in)
{
    const pick_ctx *c = ctx;
    switch (c->which) {
    case 0: return dla_mul(dla_max2(in[0], in[1]), in[1]);
    case 1: return dla_mul(dla_min2(in[0], in[1]), in[0]);
    case 2: return dla_square(dla_max(in[0], c->nd, c->dims));
    default: return dla_square(dla_min(in[0], c->nd, c->dims));
    }
}

static void test_max_and_min_have_the_second_derivatives_of_finite_differences(void **state)
{
    (void)state;
    const pick_ctx cases[] = {{0, 0, {0}}, {1, 0, {0}}, {2, 1, {2}}, {2, 2, {1, 3}},
                              {2, 0, {0}}, {3, 1, {1}}, {3, 2, {2, 3}}, {3, 0, {0}}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dla_scope_begin();
        dla_tensor *in[2] = {dla_randn(DLA_F64, "", DLA_DIMS(3, 4, 2)),
                             dla_randn(DLA_F64, "", DLA_DIMS(3, 1, 2))};
        const int binary = cases[k].which < 2;
        gc_check2(picked, (void *)&cases[k], binary ? 2 : 1, in, (const int[]){1, 1}, 1e-6);
        dla_scope_end();
    }
}

/* A critic's gradient penalty (WGAN-GP): y = net(x), P = mean((|dy/dx|
 * per observation - 1)^2), and L = sum(y) + P, for the first 5 of x's 6
 * observations (the sixth gets zero gradients). in[0] is x, in[1..] the
 * learnables: gc_check2 differentiates it once more, so the check covers
 * d/dtheta of dy/dx, the mixed second derivatives the penalty's gradient
 * needs, with acceleration on and off. */
typedef struct penalty_ctx {
    dla_net *net;
} penalty_ctx;

static dla_tensor *critic_with_penalty(void *ctx, dla_tensor *const *in)
{
    penalty_ctx *c = ctx;
    dla_tensor *x = in[0], *y, *gx;
    dla_net_forward_options o = {.learnables = in + 1};
    /* The first 5 observations of 6 (a view: a recorded sweep's rule for
     * it is an op of its own, unview). */
    dla_tensor *x5 = dla_slice(x, 4, 0, 1, 5);
    if (dla_net_forward(c->net, 1, &x5, 1, &y, NULL, &o) != DLA_OK)
        return y;
    dla_status st = dla_gradient_opts(sum_all(y), 1, &x, &gx, &higher);
    if (st != DLA_OK)
        return gx;
    /* |dy/dx| of each observation: x is SSCB, B is dim 4 */
    dla_tensor *norm = dla_sqrt(dla_affine(dla_sum(dla_square(gx), 3, (const int64_t[]){1, 2, 3}),
                                           1.0, 1e-12));
    dla_tensor *p = dla_mean(dla_square(dla_affine(norm, 1.0, -1.0)), 0, NULL);
    return dla_add(dla_reshape(sum_all(y), "", 1, (const int64_t[]){1}),
                   dla_reshape(p, "", 1, (const int64_t[]){1}));
}

static dla_status penalty_model(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    out[0] = critic_with_penalty(ctx, in);
    return dla_gradient(out[0], nin, in, out + 1);
}

static dla_net *small_critic(void)
{
    dla_layer *l[] = {
        dla_image_input_layer(5, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 3, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(NULL),
        dla_leakyrelu_layer(0.1, NULL),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_fc_layer(1, NULL),
    };
    dla_net *net = dla_net_create(sizeof l / sizeof l[0], l);
    assert_non_null(net);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    return net;
}

static void test_a_networks_gradient_penalty_has_the_derivatives_of_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(5);
    dla_net *net = small_critic();
    const int nl = dla_net_learnable_count(net);
    assert_true(nl + 1 <= GC_MAX_IN);
    dla_tensor *in[GC_MAX_IN];
    in[0] = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 4, 2, 6));
    int check[GC_MAX_IN];
    for (int i = 0; i < nl; i++) {
        in[1 + i] = dla_table_values(dla_net_learnables(net))[i];
        check[1 + i] = 1;
    }
    check[0] = 1;
    penalty_ctx c = {net};
    for (int accel = 1; accel >= 0; accel--) {
        dla_net_set_accelerate(net, accel);
        gc_check(critic_with_penalty, &c, 1 + nl, in, check, 1e-5);
    }
    dla_net_free(net);
    dla_scope_end();
}

/* The same penalty's step accelerated: the recorded sweeps are traced,
 * and every replay gives eager's bits; the trace survives a file. */
static void expect_same_bits(dla_tensor *a, dla_tensor *b, const char *what, int i)
{
    const int64_t n = dla_tensor_numel(a);
    assert_int_equal(dla_tensor_numel(b), n);
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_int_equal(dla_tensor_to_host(a, x, sizeof(double) * (size_t)n), DLA_OK);
    assert_int_equal(dla_tensor_to_host(b, y, sizeof(double) * (size_t)n), DLA_OK);
    if (memcmp(x, y, sizeof(double) * (size_t)n) != 0)
        fail_msg("%s, output %d: not eager's bits (%.17g and %.17g first)", what, i, x[0], y[0]);
    free(x);
    free(y);
}

static void test_an_accelerated_gradient_penalty_replays_with_eager_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(6);
    dla_net *net = small_critic();
    dla_net_set_accelerate(net, 0);
    const int nl = dla_net_learnable_count(net);
    dla_tensor *in[GC_MAX_IN], *acc[1 + GC_MAX_IN], *eager[1 + GC_MAX_IN];
    for (int i = 0; i < nl; i++)
        in[1 + i] = dla_table_values(dla_net_learnables(net))[i];
    penalty_ctx c = {net};
    dla_accel *af = dla_accelerate(penalty_model, NULL);
    assert_non_null(af);
    for (int call = 0; call < 3; call++) {
        in[0] = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 4, 2, 6));
        assert_int_equal(dla_accel_feval(af, &c, 1 + nl, in, 2 + nl, acc), DLA_OK);
        assert_int_equal(dla_feval(penalty_model, &c, 1 + nl, in, 2 + nl, eager), DLA_OK);
        for (int i = 0; i < 2 + nl; i++)
            expect_same_bits(acc[i], eager[i], "accelerated", i);
    }
    tu_assert_near(dla_accel_hit_rate(af), 100.0 * 2 / 3, 1e-9);
    /* The trace holds the recorded sweep's own op, and replays from a file. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_accel_print_trace(af, 0, f), DLA_OK);
    fclose(f);
    assert_non_null(strstr(text, "= unview("));
    free(text);
    char path[] = "/tmp/dla_test_higher_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    dla_trace *t = dla_accel_trace(af, 0), *loaded = NULL;
    assert_int_equal(dla_trace_save(t, path), DLA_OK);
    assert_int_equal(dla_trace_load(path, &loaded), DLA_OK);
    remove(path);
    dla_tensor *rep[1 + GC_MAX_IN];
    assert_int_equal(dla_trace_replay(loaded, 1 + nl, in, 2 + nl, rep), DLA_OK);
    for (int i = 0; i < 2 + nl; i++)
        expect_same_bits(rep[i], eager[i], "loaded", i);
    dla_trace_release(loaded);
    dla_trace_release(t);
    dla_accel_free(af);
    dla_net_free(net);
    dla_scope_end();
}

/* A critic step as a training loop writes it: the network is the
 * accelerated function's ctx (its learnables traced through the ctx
 * kind), the loss is the penalty's, and dla_net_gradient takes its
 * gradients: replays give eager's bits as the weights change. */
static dla_status critic_step(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    dla_net *net = ctx;
    dla_tensor *x = in[0], *y, *gx;
    dla_status st = dla_net_forward(net, 1, &x, 1, &y, NULL, NULL);
    if (st == DLA_OK)
        st = dla_gradient_opts(sum_all(y), 1, &x, &gx, &higher);
    if (st != DLA_OK)
        return st;
    dla_tensor *norm = dla_sqrt(dla_affine(dla_sum(dla_square(gx), 3, (const int64_t[]){1, 2, 3}),
                                           1.0, 1e-12));
    out[0] = dla_add(dla_reshape(dla_mean(y, 0, NULL), "", 1, (const int64_t[]){1}),
                     dla_reshape(dla_mean(dla_square(dla_affine(norm, 1.0, -1.0)), 0, NULL), "",
                                 1, (const int64_t[]){1}));
    return dla_net_gradient(net, out[0], out + 1);
}

static void test_a_critic_step_with_the_network_as_ctx_replays_with_eager_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(8);
    dla_net *net = small_critic();
    const int nl = dla_net_learnable_count(net);
    dla_accel *af = dla_accelerate(critic_step, &(dla_accel_options){
                                                    .ctx_kind = dla_net_accel_kind()});
    assert_non_null(af);
    dla_tensor *acc[1 + GC_MAX_IN], *eager[1 + GC_MAX_IN], *velocity[GC_MAX_IN] = {0};
    for (int call = 0; call < 3; call++) {
        dla_tensor *x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 4, 2, 4));
        assert_int_equal(dla_accel_feval(af, net, 1, &x, 1 + nl, acc), DLA_OK);
        assert_int_equal(dla_feval(critic_step, net, 1, &x, 1 + nl, eager), DLA_OK);
        for (int i = 0; i < 1 + nl; i++)
            expect_same_bits(acc[i], eager[i], "critic step", i);
        /* New weights for the next call: a step against the gradients. */
        assert_int_equal(dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), acc + 1,
                                        velocity, 0.1, 0.0),
                         DLA_OK);
    }
    dla_optim_free(nl, velocity);
    tu_assert_near(dla_accel_hit_rate(af), 100.0 * 2 / 3, 1e-9);
    dla_accel_free(af);
    dla_net_free(net);
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_the_derivatives_of_powers_are_exact),
        TU_TEST(test_hooks_hand_over_a_recorded_sweeps_gradients),
        TU_TEST(test_without_the_option_a_gradient_is_a_constant_and_the_error_says_so),
        TU_TEST(test_a_comparison_on_the_path_stops_its_gradient_by_design),
        TU_TEST(test_a_second_derivative_stays_off_the_flat_side_of_max2_and_min2),
        TU_TEST(test_max_and_min_have_the_second_derivatives_of_finite_differences),
        TU_TEST(test_a_networks_gradient_penalty_has_the_derivatives_of_finite_differences),
        TU_TEST(test_an_accelerated_gradient_penalty_replays_with_eager_bits),
        TU_TEST(test_a_critic_step_with_the_network_as_ctx_replays_with_eager_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_ode45.c - dla_ode45 (MATLAB's dlode45): solutions against closed
 * forms (decay, rotation, backwards in time), the error control meeting
 * its tolerances, formats of the result, direct gradients against closed
 * forms and finite differences, second derivatives, a replay with eager's
 * bits, solves that could not advance t (they end), and the errors.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "gradcheck.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* y' = a .* y, theta = {a} of y's dims (or one broadcast value). */
static dla_tensor *scaled(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta, void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    return dla_mul(theta[0], y);
}

/* y' = A y for y "CB" (2 x B): a rotation, y = [cos t, -sin t] from [1, 0]. */
static dla_tensor *rotation(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta,
                            void *ctx)
{
    (void)t, (void)ntheta, (void)theta, (void)ctx;
    const double a[4] = {0, -1, 1, 0}; /* column-major [0 1; -1 0] */
    dla_tensor *A = dla_cast(dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(2, 2)), dla_tensor_dtype(y));
    return dla_reshape(dla_mtimes(A, dla_reshape(y, "", DLA_DIMS(2, -1))), dla_tensor_format(y),
                       DLA_DIMS(2, -1));
}

static double at(dla_tensor *t, int64_t i) { return dla_tensor_item(t, i); }

static void test_decay_matches_exp_at_every_requested_time(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y0h[2] = {1, 2}, tspan[4] = {0, 0.5, 1, 2};
    dla_tensor *y0 = dla_tensor_from_host(y0h, DLA_F64, "", 2, (int64_t[]){2, 1});
    dla_tensor *a = dla_full(-1, DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_ode_stats st;
    dla_ode_options o = {.relative_tolerance = 1e-8, .absolute_tolerance = 1e-10, .stats = &st};
    dla_tensor *y = dla_ode45(scaled, NULL, 4, tspan, y0, 1, &a, &o);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_ndims(y), 3);
    assert_int_equal(dla_tensor_dim(y, 1), 2);
    assert_int_equal(dla_tensor_dim(y, 2), 1);
    assert_int_equal(dla_tensor_dim(y, 3), 3);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 2; i++) {
            const double want = y0h[i] * exp(-tspan[j + 1]);
            if (!(fabs(at(y, 2 * j + i) - want) <= 1e-7 * y0h[i]))
                fail_msg("t = %g, y(%d): %.12g, exp gives %.12g", tspan[j + 1], i,
                         at(y, 2 * j + i), want);
        }
    /* First Same As Last: one evaluation to start, six an attempt. */
    assert_true(st.steps >= 3);
    assert_int_equal(st.evaluations, 1 + 6 * (st.steps + st.failed));
    /* The times in between are read off the steps, which go to the last
     * time as they would with no others requested. */
    dla_ode_stats alone;
    o.stats = &alone;
    dla_tensor *end = dla_ode45(scaled, NULL, 2, (const double[]){0, 2}, y0, 1, &a, &o);
    assert_int_equal(alone.steps, st.steps);
    for (int i = 0; i < 2; i++)
        assert_true(at(end, i) == at(y, 4 + i));
    dla_scope_end();
}

/* y' = 0. */
static dla_tensor *still(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta, void *ctx)
{
    (void)t, (void)ntheta, (void)theta, (void)ctx;
    return dla_affine(y, 0, 0);
}

/* Without an initial step, the first is bounded by the distance to the
 * first requested time, |tspan[1] - tspan[0]|, as MathWorks' ode45.m
 * bounds it (odearguments' htspan), and by hmax, a tenth of the whole
 * interval. With a slope of 0 every step is accepted and the next is 5
 * times longer, up to hmax: over [0 1e-3 10], MATLAB's steps are 1e-3,
 * 5e-3, 0.025, 0.125, 0.625 and then 1, 15 in all; over [0 10], ten of 1.
 * The first step was bounded by the whole interval (ten steps either
 * way). */
static void test_first_step_is_bounded_by_the_first_interval(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y0 = dla_ones(DLA_F64, "", 2, (int64_t[]){2, 1});
    dla_ode_stats st;
    dla_tensor *y = dla_ode45(still, NULL, 3, (const double[]){0, 1e-3, 10}, y0, 0, NULL,
                              &(dla_ode_options){.stats = &st});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(st.steps, 15);
    assert_int_equal(st.failed, 0);
    tu_assert_near(at(y, 3), 1, 0);
    y = dla_ode45(still, NULL, 2, (const double[]){0, 10}, y0, 0, NULL,
                  &(dla_ode_options){.stats = &st});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(st.steps, 10);
    /* Backwards the same: [10 9.999 0]. */
    y = dla_ode45(still, NULL, 3, (const double[]){10, 9.999, 0}, y0, 0, NULL,
                  &(dla_ode_options){.stats = &st});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(st.steps, 15);
    dla_scope_end();
}

/* The default tolerances hold the error near 1e-3 relative; tighter ones
 * take more steps and give less. */
static void test_tighter_tolerances_take_more_steps_for_less_error(void **state)
{
    (void)state;
    dla_scope_begin();
    const double tspan[2] = {0, 5};
    dla_tensor *y0 = dla_ones(DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_tensor *a = dla_full(0.7, DLA_F64, "", 2, (int64_t[]){1, 1});
    const double exact = exp(0.7 * 5);
    double last_err = INFINITY;
    int64_t last_steps = 0;
    for (int k = 0; k < 3; k++) {
        dla_ode_stats st;
        dla_ode_options o = {.relative_tolerance = pow(10, -3 - 3 * k),
                             .absolute_tolerance = pow(10, -6 - 3 * k), .stats = &st};
        dla_tensor *y = dla_ode45(scaled, NULL, 2, tspan, y0, 1, &a, &o);
        assert_int_equal(dla_tensor_status(y), DLA_OK);
        const double err = fabs(at(y, 0) - exact) / exact;
        if (!(err < 20 * o.relative_tolerance))
            fail_msg("rtol %g: relative error %g", o.relative_tolerance, err);
        assert_true(err < last_err);
        assert_true(st.steps > last_steps);
        last_err = err, last_steps = st.steps;
    }
    dla_scope_end();
}

static void test_rotation_keeps_the_format_and_adds_t(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y0h[6] = {1, 0, 0, 1, 2, 0}, tspan[3] = {0, 1, 3};
    dla_tensor *y0 = dla_cast(dla_tensor_from_host(y0h, DLA_F64, "CB", 2, (int64_t[]){2, 3}), DLA_F32);
    dla_tensor *y = dla_ode45(rotation, NULL, 3, tspan, y0, 0, NULL, NULL);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dim(y, 3), 2);
    assert_int_equal(dla_tensor_dtype(y), DLA_F32);
    for (int j = 0; j < 2; j++) {
        const double t = tspan[j + 1], c = cos(t), s = sin(t);
        for (int b = 0; b < 3; b++) {
            /* y(t) = [c s; -s c] y0 */
            const double u = y0h[2 * b], v = y0h[2 * b + 1];
            const double want[2] = {c * u + s * v, -s * u + c * v};
            for (int i = 0; i < 2; i++) {
                const double got = at(y, 6 * j + 2 * b + i);
                if (!(fabs(got - want[i]) <= 5e-3 * (1 + fabs(u) + fabs(v))))
                    fail_msg("t = %g, observation %d, y(%d): %.6g, want %.6g", t, b, i, got,
                             want[i]);
            }
        }
    }
    /* Two times: y0's own format; "U" dims stay after the new "T". */
    dla_tensor *y2 = dla_ode45(rotation, NULL, 2, tspan, y0, 0, NULL, NULL);
    assert_string_equal(dla_tensor_format(y2), "CB");
    assert_int_equal(dla_tensor_ndims(y2), 2);
    dla_tensor *yu = dla_ode45(rotation, NULL, 3, tspan, dla_reshape(y0, "CU", 2, (int64_t[]){2, 3}),
                               0, NULL, NULL);
    assert_string_equal(dla_tensor_format(yu), "CTU");
    assert_int_equal(dla_tensor_dim(yu, 2), 2);
    assert_int_equal(dla_tensor_dim(yu, 3), 3);
    dla_scope_end();
}

/* y' = -y for a y of one dim, its slope returned as a column. */
static dla_tensor *column_slope(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p, (void)ctx;
    return dla_reshape(dla_neg(y), "", DLA_DIMS(dla_tensor_numel(y), 1));
}

/* Trailing ones do not make dims differ: a 5-vector's slope may be 5x1. */
static void test_a_slope_with_a_trailing_one_is_accepted(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y0 = dla_ones(DLA_F64, "", DLA_DIMS(5));
    dla_tensor *y = dla_ode45(column_slope, NULL, 2, (const double[]){0, 1}, y0, 0, NULL,
                              &(dla_ode_options){.relative_tolerance = 1e-8});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_numel(y), 5);
    for (int i = 0; i < 5; i++)
        assert_true(tu_close(at(y, i), exp(-1), 1e-7));
    dla_scope_end();
}

static void test_it_integrates_backwards_in_time(void **state)
{
    (void)state;
    dla_scope_begin();
    const double tspan[3] = {2, 1, 0};
    dla_tensor *y0 = dla_full(3, DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_tensor *a = dla_full(1, DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_ode_options o = {.relative_tolerance = 1e-9, .absolute_tolerance = 1e-12};
    dla_tensor *y = dla_ode45(scaled, NULL, 3, tspan, y0, 1, &a, &o);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_true(tu_close(at(y, 0), 3 * exp(-1), 1e-8));
    assert_true(tu_close(at(y, 1), 3 * exp(-2), 1e-8));
    dla_scope_end();
}

/* Before: solves that could not advance t never returned. Two times a
 * unit in the last place apart stepped by a tenth of their span, which
 * t + h rounded away; a max_step below 16 eps(t) did the same; times more
 * than DBL_MAX apart made every step inf. max_steps bounds the attempts
 * here, so that the old behaviour fails instead of hanging. */
static void test_solves_that_could_not_advance_end(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y0 = dla_full(3, DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_tensor *a = dla_full(-1, DLA_F64, "", 2, (int64_t[]){1, 1});
    const double starts[] = {1, 1e10, -0.5};
    for (int i = 0; i < 3; i++)
        for (int back = 0; back < 2; back++) {
            const double t0 = starts[i], tspan[2] = {t0, nextafter(t0, back ? -INFINITY : INFINITY)};
            dla_ode_stats st;
            dla_tensor *y = dla_ode45(scaled, NULL, 2, tspan, y0, 1, &a,
                                      &(dla_ode_options){.max_steps = 1000, .stats = &st});
            if (dla_tensor_status(y) != DLA_OK)
                fail_msg("from %.17g to %.17g: %s", tspan[0], tspan[1], dla_tensor_error(y));
            assert_true(st.steps <= 2);
            assert_true(tu_close(at(y, 0), 3 * exp(tspan[0] - tspan[1]), 1e-12));
        }
    dla_tensor *y = dla_ode45(scaled, NULL, 2, (const double[]){1, nextafter(1, 2)}, y0, 1, &a,
                              &(dla_ode_options){.max_steps = 1000, .gradient_mode = "adjoint"});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    tu_expect_error(dla_ode45(scaled, NULL, 2, (const double[]){1, 2}, y0, 1, &a,
                              &(dla_ode_options){.max_steps = 1000, .max_step = 1e-300}),
                    DLA_ERR_INVALID_ARGUMENT, "option max_step is 1e-300, below the smallest step");
    tu_expect_error(dla_ode45(scaled, NULL, 2, (const double[]){-1e308, 1e308}, y0, 1, &a,
                              &(dla_ode_options){.max_steps = 1000}),
                    DLA_ERR_INVALID_ARGUMENT, "further than the largest double");
    assert_int_equal(dla_tensor_status(dla_ode45(scaled, NULL, 2, (const double[]){-1e308, 0}, y0,
                                                 1, &a, &(dla_ode_options){.max_steps = 1000})),
                     DLA_ERR_STATE);
    dla_scope_end();
}

/* ------------------------------------------------------------ gradients */

/* loss = sum of w .* y(T) over the times, y' = a .* y: y = y0 e^(a t), so
 * dloss/da = sum w t y0 e^(a t) and dloss/dy0 = sum w e^(a t). */
static const double GT[3] = {0, 0.5, 1.5};
static dla_status decay_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_ode_options o = {.relative_tolerance = 1e-10, .absolute_tolerance = 1e-12,
                         .gradient_mode = ctx};
    dla_tensor *a = in[1];
    dla_tensor *y = dla_ode45(scaled, NULL, 3, GT, in[0], 1, &a, &o);
    out[0] = dla_sum(dla_mul(y, in[2]), 0, NULL);
    return dla_gradient(out[0], 2, in, out + 1);
}

static void decay_gradients(const char *mode)
{
    dla_scope_begin();
    const double y0h[2] = {1, -2}, ah[2] = {-0.5, 0.3}, wh[4] = {1, 2, -1, 0.5};
    dla_tensor *in[3] = {dla_tensor_from_host(y0h, DLA_F64, "", 2, (int64_t[]){2, 1}),
                         dla_tensor_from_host(ah, DLA_F64, "", 2, (int64_t[]){2, 1}),
                         dla_tensor_from_host(wh, DLA_F64, "", 3, (int64_t[]){2, 1, 2})};
    dla_tensor *out[3];
    assert_int_equal(dla_feval(decay_loss, (void *)mode, 3, in, 3, out), DLA_OK);
    for (int i = 0; i < 2; i++) {
        double gy0 = 0, ga = 0, loss = 0;
        for (int j = 0; j < 2; j++) {
            const double t = GT[j + 1], e = exp(ah[i] * t), w = wh[2 * j + i];
            gy0 += w * e, ga += w * t * y0h[i] * e, loss += w * y0h[i] * e;
        }
        (void)loss;
        if (!tu_close(at(out[1], i), gy0, 1e-7) || !tu_close(at(out[2], i), ga, 1e-7))
            fail_msg("%s, element %d: dy0 %.12g (want %.12g), da %.12g (want %.12g)", mode, i,
                     at(out[1], i), gy0, at(out[2], i), ga);
    }
    dla_scope_end();
}

static void test_direct_gradients_match_the_closed_form(void **state)
{
    (void)state;
    decay_gradients("direct");
}

/* The adjoint system solved backwards gives the same derivatives. */
static void test_adjoint_gradients_match_the_closed_form(void **state)
{
    (void)state;
    decay_gradients("adjoint");
}

/* A small tanh network as the dynamics, theta = {W1, b1, W2, b2}. */
static dla_tensor *network(double t, dla_tensor *y, int ntheta, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    return dla_fullyconnect(dla_tanh(dla_fullyconnect(y, p[0], p[1])), p[2], p[3]);
}

static dla_tensor *network_solution(void *ctx, dla_tensor *const *in)
{
    static const double tspan[3] = {0, 0.4, 1};
    dla_ode_options o = {.relative_tolerance = 1e-10, .absolute_tolerance = 1e-12,
                         .gradient_mode = ctx};
    return dla_ode45(network, NULL, 3, tspan, in[0], 4, in + 1, &o);
}

static void network_inputs(dla_tensor **in)
{
    dla_rng_seed(5);
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(2, 3));
    in[1] = dla_randn(DLA_F64, "", DLA_DIMS(5, 2));
    in[2] = dla_randn(DLA_F64, "", DLA_DIMS(5, 1));
    in[3] = dla_affine(dla_randn(DLA_F64, "", DLA_DIMS(2, 5)), 0.5, 0);
    in[4] = dla_randn(DLA_F64, "", DLA_DIMS(2, 1));
}

static void test_network_gradients_match_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[5];
    network_inputs(in);
    gc_check(network_solution, NULL, 5, in, (const int[]){1, 1, 1, 1, 1}, 1e-5);
    gc_check(network_solution, "adjoint", 5, in, (const int[]){1, 1, 1, 1, 1}, 1e-5);
    dla_scope_end();
}

/* ------------------------------------------------- a network as fn */

/* featureInput 2, fc 5, tanh, fc 2 in double: the network fn of the
 * tests above, its learnables set to p[0..3]. */
static dla_net *network_net(dla_tensor *const *p)
{
    dla_layer *layers[4] = {dla_feature_input_layer(2, NULL), dla_fc_layer(5, NULL),
                            dla_tanh_layer(NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(4, layers);
    assert_non_null(net);
    assert_int_equal(dla_net_learnable_count(net), 4);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_int_equal(dla_net_set_learnables(net, 4, p), DLA_OK);
    return net;
}

typedef struct net_case {
    dla_net *net;
    const char *mode;
} net_case;

/* in = {x0, W1, b1, W2, b2, w}: the loss sum(y .* w) and its gradients
 * with respect to the four parameters, through dla_ode45_net (net set)
 * or dla_ode45 on the same function (net NULL). */
static dla_status net_or_fn_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)nin, (void)nout;
    const net_case *c = ctx;
    static const double tspan[3] = {0, 0.4, 1};
    dla_ode_options o = {.relative_tolerance = 1e-10, .absolute_tolerance = 1e-12,
                         .gradient_mode = c->mode};
    dla_tensor *y = c->net ? dla_ode45_net(c->net, 3, tspan, in[0], &o)
                           : dla_ode45(network, NULL, 3, tspan, in[0], 4, in + 1, &o);
    out[0] = dla_sum(dla_mul(y, in[5]), 0, NULL);
    return c->net ? dla_net_gradient(c->net, out[0], out + 1)
                  : dla_gradient(out[0], 4, in + 1, out + 1);
}

/* MATLAB's dlode45(net, tspan, Y0): the same solution and gradients as
 * the function it computes, in both gradient modes. */
static void test_a_network_as_the_right_hand_side(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[6];
    network_inputs(in);
    in[5] = dla_randn(DLA_F64, "CBT", DLA_DIMS(2, 3, 2));
    dla_net *net = network_net(in + 1);
    const char *modes[2] = {"direct", "adjoint"};
    for (int m = 0; m < 2; m++) {
        dla_tensor *by_net[5], *by_fn[5];
        assert_int_equal(dla_feval(net_or_fn_loss, &(net_case){net, modes[m]}, 6, in, 5, by_net),
                         DLA_OK);
        assert_int_equal(dla_feval(net_or_fn_loss, &(net_case){NULL, modes[m]}, 6, in, 5, by_fn),
                         DLA_OK);
        for (int i = 0; i < 5; i++)
            for (int64_t e = 0; e < dla_tensor_numel(by_fn[i]); e++)
                if (!tu_close(at(by_net[i], e), at(by_fn[i], e), 1e-9))
                    fail_msg("%s, output %d, element %lld: network %.12g, function %.12g",
                             modes[m], i, (long long)e, at(by_net[i], e), at(by_fn[i], e));
    }
    dla_tensor *bad = dla_ode45_net(NULL, 2, (const double[]){0, 1}, in[0], NULL);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_INVALID_ARGUMENT);
    dla_net_free(net);
    dla_scope_end();
}

/* The same, "adjoint" first on a network of its own (each in a dla_feval
 * and plain). The network's forward runs through its own accelerated
 * function, here inside the adjoint op's forward, whose ops no recorder
 * hears: the first call recorded a trace without ops that baked that
 * call's slope as a constant, every later slope of the solve was that one,
 * and the network kept the trace: the solution and gradients were wrong,
 * and so were later "direct" solves of that network. The test above ran
 * "direct" first, whose trace the adjoint solve then replayed. */
static void test_an_adjoint_solve_first_on_a_network_is_the_functions(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[6];
    network_inputs(in);
    in[5] = dla_randn(DLA_F64, "CBT", DLA_DIMS(2, 3, 2));
    static const double tspan[2] = {0, 1};
    dla_tensor *want = dla_ode45(network, NULL, 2, tspan, in[0], 4, in + 1, NULL);
    dla_tensor *by_fn[5];
    assert_int_equal(dla_feval(net_or_fn_loss, &(net_case){NULL, "adjoint"}, 6, in, 5, by_fn),
                     DLA_OK);
    for (int k = 0; k < 2; k++) {
        dla_net *net = network_net(in + 1);
        dla_tensor *got[5];
        if (k == 0) {
            assert_int_equal(dla_feval(net_or_fn_loss, &(net_case){net, "adjoint"}, 6, in, 5, got),
                             DLA_OK);
            for (int i = 0; i < 5; i++)
                for (int64_t e = 0; e < dla_tensor_numel(by_fn[i]); e++)
                    if (!tu_close(at(got[i], e), at(by_fn[i], e), 1e-9))
                        fail_msg("in dla_feval, output %d, element %lld: network %.12g, "
                                 "function %.12g", i, (long long)e, at(got[i], e),
                                 at(by_fn[i], e));
        }
        const char *modes[2] = {"adjoint", "direct"}; /* direct: replays the network's trace */
        for (int m = 0; m < 2; m++) {
            dla_tensor *y = dla_ode45_net(net, 2, tspan, in[0],
                                          &(dla_ode_options){.gradient_mode = modes[m]});
            for (int64_t e = 0; e < dla_tensor_numel(want); e++)
                if (!tu_close(at(y, e), at(want, e), 1e-9))
                    fail_msg("network %d, plain %s solve, element %lld: %.12g, want %.12g", k,
                             modes[m], (long long)e, at(y, e), at(want, e));
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

/* Second derivatives through the recorded stages (the steps stay
 * constants): d2/da2 of y0 e^(a T) is T^2 y0 e^(a T). */
static dla_status second_derivative(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    static const double tspan[2] = {0, 1.5};
    dla_ode_options o = {.relative_tolerance = 1e-10, .absolute_tolerance = 1e-12};
    dla_tensor *a = in[1];
    dla_tensor *y = dla_ode45(scaled, NULL, 2, tspan, in[0], 1, &a, &o);
    dla_tensor *g;
    dla_gradient_options higher = {.enable_higher_derivatives = 1};
    dla_status st = dla_gradient_opts(dla_sum(y, 0, NULL), 1, &a, &g, &higher);
    if (st != DLA_OK)
        return st;
    out[0] = g;
    return dla_gradient(dla_sum(g, 0, NULL), 1, &a, out + 1);
}

/* y' = b, a constant slope that does not read y. */
static dla_tensor *constant_slope(double t, dla_tensor *y, int n, dla_tensor *const *theta,
                                  void *ctx)
{
    (void)t, (void)n, (void)ctx;
    int64_t dims[DLA_MAX_DIMS];
    const int nd = dla_tensor_dims(y, dims);
    return dla_mul(theta[0], dla_ones(dla_tensor_dtype(y), "", nd, dims));
}

static dla_status drift_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *b = in[1];
    dla_tensor *y = dla_ode45(constant_slope, NULL, 2, (const double[]){0, 2.5}, in[0], 1, &b,
                              &(dla_ode_options){.gradient_mode = "adjoint"});
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], 2, in, out + 1);
}

/* A slope that does not read y: its adjoint sweep finds no path to y,
 * and the derivatives are still right (dL/dy0 = 1, dL/db = T). */
static void test_adjoint_of_a_slope_that_ignores_y(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[2] = {dla_full(1, DLA_F64, "", 2, (int64_t[]){3, 1}),
                         dla_full(0.5, DLA_F64, "", 2, (int64_t[]){1, 1})};
    dla_tensor *out[3];
    assert_int_equal(dla_feval(drift_loss, NULL, 2, in, 3, out), DLA_OK);
    assert_true(tu_close(at(out[0], 0), 3 * (1 + 0.5 * 2.5), 1e-9));
    for (int i = 0; i < 3; i++)
        assert_true(tu_close(at(out[1], i), 1, 1e-9));
    assert_true(tu_close(at(out[2], 0), 3 * 2.5, 1e-8));
    dla_scope_end();
}

/* y' = theta[0] .* y + theta[1]. */
static dla_tensor *affine_slope(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta,
                                void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    return dla_add(dla_mul(theta[0], y), theta[1]);
}

static dla_status shared_theta_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *theta[2] = {in[1], in[1]}; /* one tensor in both slots */
    dla_tensor *y = dla_ode45(affine_slope, NULL, 2, (const double[]){0, 1}, in[0], 2, theta,
                              &(dla_ode_options){.gradient_mode = ctx,
                                                 .relative_tolerance = 1e-10,
                                                 .absolute_tolerance = 1e-12});
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], 2, in, out + 1);
}

/* theta = {a, a}: y' = a y + a, y(1) = (y0 + 1) e^a - 1, so dL/da =
 * sum(y0 + 1) e^a. The adjoint gave each slot the whole derivative, and
 * the tape added them: twice the answer, in silence. */
static void test_a_tensor_given_as_two_thetas_has_one_gradient(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y0h[2] = {1, 2}, a = -0.4;
    dla_tensor *in[2] = {dla_tensor_from_host(y0h, DLA_F64, "", 2, (int64_t[]){2, 1}),
                         dla_full(a, DLA_F64, "", 2, (int64_t[]){1, 1})};
    const char *modes[2] = {"direct", "adjoint"};
    for (int m = 0; m < 2; m++) {
        dla_tensor *out[3];
        assert_int_equal(dla_feval(shared_theta_loss, (void *)modes[m], 2, in, 3, out), DLA_OK);
        const double want = (y0h[0] + 1 + y0h[1] + 1) * exp(a);
        if (!tu_close(at(out[2], 0), want, 1e-8))
            fail_msg("%s: dL/da %.12g, want %.12g", modes[m], at(out[2], 0), want);
        for (int i = 0; i < 2; i++)
            assert_true(tu_close(at(out[1], i), exp(a), 1e-8));
    }
    dla_scope_end();
}

static dla_status adjoint_twice(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *a = in[1];
    dla_tensor *y = dla_ode45(scaled, NULL, 2, (const double[]){0, 1}, in[0], 1, &a,
                              &(dla_ode_options){.gradient_mode = "adjoint"});
    dla_gradient_options higher = {.enable_higher_derivatives = 1};
    return dla_gradient_opts(dla_sum(y, 0, NULL), 1, &a, out, &higher);
}

static void test_adjoint_refuses_higher_derivatives(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[2] = {dla_full(2, DLA_F64, "", 2, (int64_t[]){1, 1}),
                         dla_full(-0.4, DLA_F64, "", 2, (int64_t[]){1, 1})};
    dla_tensor *out[1];
    assert_int_equal(dla_feval(adjoint_twice, NULL, 2, in, 1, out), DLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(dla_last_error(), "first derivatives only"));
    dla_scope_end();
}

static void test_second_derivatives_through_the_stages(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[2] = {dla_full(2, DLA_F64, "", 2, (int64_t[]){1, 1}),
                         dla_full(-0.4, DLA_F64, "", 2, (int64_t[]){1, 1})};
    dla_tensor *out[2];
    assert_int_equal(dla_feval(second_derivative, NULL, 2, in, 2, out), DLA_OK);
    const double T = 1.5, e = exp(-0.4 * T);
    assert_true(tu_close(at(out[0], 0), T * 2 * e, 1e-7));
    assert_true(tu_close(at(out[1], 0), T * T * 2 * e, 1e-6));
    dla_scope_end();
}

/* ---------------------------------------------------------- accelerated */

static dla_status network_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    (void)nin, (void)nout;
    static const double tspan[3] = {0, 0.5, 1};
    dla_tensor *y = dla_ode45(network, NULL, 3, tspan, in[0], 4, in + 1,
                              &(dla_ode_options){.gradient_mode = ctx});
    out[0] = dla_mean(dla_square(y), 0, NULL);
    return dla_gradient(out[0], 4, in + 1, out + 1);
}

/* The trace holds the steps its recording chose (it is data-dependent:
 * the error norms were read on the host); replayed on the same values it
 * gives eager's bits. */
static void replay_gives_eager_bits(const char *mode)
{
    dla_scope_begin();
    dla_tensor *in[5];
    network_inputs(in);
    dla_accel *af = dla_accelerate(network_loss, NULL);
    assert_non_null(af);
    for (int call = 0; call < 2; call++) {
        tu_expect_replay_bits(af, network_loss, (void *)mode, 5, in, 5, mode ? mode : "direct",
                              call);
    }
    tu_assert_near(dla_accel_hit_rate(af), 50.0, 1e-9);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(dla_accel_print_trace(af, 0, f), DLA_OK);
    rewind(f);
    char line[512];
    int flagged = 0;
    while (fgets(line, sizeof line, f))
        flagged |= strncmp(line, "data-dependent", 14) == 0;
    fclose(f);
    assert_true(flagged);
    if (mode) {
        /* The adjoint op's function is C code: no file can hold it. */
        char path[] = "/tmp/dla-ode45-XXXXXX";
        const int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        dla_trace *t = dla_accel_trace(af, 0);
        assert_int_equal(dla_trace_save(t, path), DLA_ERR_UNSUPPORTED);
        assert_non_null(strstr(dla_last_error(), "cannot be saved"));
        dla_trace_release(t);
        unlink(path);
    }
    dla_accel_free(af);
    dla_scope_end();
}

static void test_a_replay_on_the_same_values_gives_eager_bits(void **state)
{
    (void)state;
    replay_gives_eager_bits(NULL);
    replay_gives_eager_bits("adjoint");
}

/* --------------------------------------------------------------- errors */

static dla_tensor *wrong_dims(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p, (void)ctx;
    return dla_cat(1, 2, (dla_tensor *[]){y, y});
}
static dla_tensor *wrong_dtype(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p, (void)ctx;
    return dla_cast(y, DLA_F32);
}
/* Same dims, other labels: "SB" for y's "CB". */
static dla_tensor *relabeled(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p, (void)ctx;
    return dla_reshape(dla_neg(y), "SB", DLA_DIMS(dla_tensor_dim(y, 1), dla_tensor_dim(y, 2)));
}
static dla_tensor *null_slope(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)y, (void)n, (void)p, (void)ctx;
    return NULL;
}
/* Fails at its third call, with its own message. */
static dla_tensor *fails_later(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p;
    int *calls = ctx;
    if (++*calls == 3)
        return dla_reshape(y, "", 1, (int64_t[]){7}); /* 2 elements as 7: its error */
    return dla_neg(y);
}
/* y' = y^2 from 1 blows up at t = 1. */
static dla_tensor *blows_up(double t, dla_tensor *y, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)p, (void)ctx;
    return dla_square(y);
}

static void test_the_errors_say_what_is_wrong(void **state)
{
    (void)state;
    dla_scope_begin();
    const double two[2] = {0, 1}, three[3] = {0, 1, 2};
    dla_tensor *y0 = dla_ones(DLA_F64, "", 2, (int64_t[]){2, 1});
    dla_tensor *a = dla_full(-1, DLA_F64, "", 2, (int64_t[]){1, 1});
    dla_tensor *ys = dla_ones(DLA_F64, "CT", 2, (int64_t[]){2, 4});
    tu_expect_error(dla_ode45(NULL, NULL, 2, two, y0, 1, &a, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "argument fn is NULL");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, NULL, 1, &a, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "argument y0 is NULL");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, NULL, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "argument theta");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, (dla_tensor *[]){NULL}, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "theta[0] is NULL");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, dla_cast(y0, DLA_I32), 1, &a, NULL),
                 DLA_ERR_DTYPE, "single or double");
    tu_expect_error(dla_ode45(scaled, NULL, 1, two, y0, 1, &a, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "at least two");
    tu_expect_error(dla_ode45(scaled, NULL, 3, (const double[]){0, 2, 1}, y0, 1, &a, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "strictly increasing or strictly decreasing");
    tu_expect_error(dla_ode45(scaled, NULL, 2, (const double[]){0, NAN}, y0, 1, &a, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "tspan[1] is nan");
    tu_expect_error(dla_ode45(scaled, NULL, 3, three, ys, 1, &a, NULL), DLA_ERR_FORMAT,
                 "has a \"T\" dim");
    /* Two times with a "T" dim in y0 are fine: the result is y0's shape. */
    assert_int_equal(dla_tensor_status(dla_ode45(scaled, NULL, 2, two, ys, 1, &a, NULL)), DLA_OK);
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, &a,
                           &(dla_ode_options){.relative_tolerance = -1}),
                 DLA_ERR_INVALID_ARGUMENT, "option relative_tolerance is -1");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, &a,
                           &(dla_ode_options){.max_step = INFINITY}),
                 DLA_ERR_INVALID_ARGUMENT, "option max_step is inf");
    dla_tensor *many[8] = {a, a, a, a, a, a, a, a};
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 8, many,
                           &(dla_ode_options){.gradient_mode = "adjoint"}),
                 DLA_ERR_INVALID_ARGUMENT, "takes at most 7");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, (dla_tensor *[]){dla_cast(a, DLA_F32)},
                           &(dla_ode_options){.gradient_mode = "adjoint"}),
                 DLA_ERR_DTYPE, "in one dtype");
    double times[300];
    for (int i = 0; i < 300; i++)
        times[i] = i;
    tu_expect_error(dla_ode45(scaled, NULL, 300, times, y0, 1, &a,
                           &(dla_ode_options){.gradient_mode = "adjoint"}),
                 DLA_ERR_INVALID_ARGUMENT, "takes at most 256");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, &a,
                           &(dla_ode_options){.gradient_mode = "backwards"}),
                 DLA_ERR_INVALID_ARGUMENT, "gradient_mode \"backwards\"");
    tu_expect_error(dla_ode45(wrong_dims, NULL, 2, two, y0, 0, NULL, NULL), DLA_ERR_SHAPE,
                 "returned 4x1 at t = 0, but y is 2x1");
    tu_expect_error(dla_ode45(wrong_dtype, NULL, 2, two, y0, 0, NULL, NULL), DLA_ERR_DTYPE,
                 "must have y's dtype");
    /* It failed in a stage's sum: 'dla_add: arguments a and b have
     * formats "CB" and "SB"'. Unlabeled, the slope takes y's labels. */
    dla_tensor *ycb = dla_ones(DLA_F64, "CB", 2, (int64_t[]){2, 3});
    for (int m = 0; m < 2; m++)
        tu_expect_error(dla_ode45(relabeled, NULL, 2, two, ycb, 0, NULL,
                                  &(dla_ode_options){.gradient_mode = m ? "adjoint" : NULL}),
                        DLA_ERR_FORMAT,
                        "dla_ode45: the function returned a slope formatted \"SB\" at t = 0, "
                        "but y is \"CB\"");
    tu_expect_error(dla_ode45(null_slope, NULL, 2, two, y0, 0, NULL, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "returned NULL");
    int calls = 0;
    dla_ode_stats st;
    tu_expect_error(dla_ode45(fails_later, &calls, 2, two, y0, 0, NULL,
                           &(dla_ode_options){.stats = &st}),
                 DLA_ERR_SHAPE, "dla_reshape");
    assert_int_equal(calls, 3);
    assert_int_equal(st.evaluations, 3);
    tu_expect_error(dla_ode45(blows_up, NULL, 2, (const double[]){0, 2}, dla_ones(DLA_F64, "", 2,
                                                                              (int64_t[]){1, 1}),
                           0, NULL, NULL),
                 DLA_ERR_STATE, "without meeting the tolerances");
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, y0, 1, &a, &(dla_ode_options){.max_steps = 2}),
                 DLA_ERR_STATE, "2 attempts (option max_steps)");
    /* Errors in, errors out: y0's own. */
    dla_tensor *bad = dla_reshape(y0, "", 1, (int64_t[]){5});
    tu_expect_error(dla_ode45(scaled, NULL, 2, two, bad, 1, &a, NULL), DLA_ERR_SHAPE, "dla_reshape");
    assert_int_equal(dla_scope_depth(), 1);
    dla_scope_end();
}

/* A batch of no observations: the error norm over no elements is 0 (as
 * MATLAB's norm([], inf)), so the solve ends with an empty result of the
 * right dims. It failed: the max of nothing read as NaN, and the step was
 * halved to 16 eps(0) = 7.9e-323 before "the solution or its slope is not
 * finite". */
static void test_an_empty_batch_solves_to_an_empty_result(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y0 = dla_zeros(DLA_F64, "CB", 2, (int64_t[]){2, 0});
    dla_tensor *a = dla_full(-1, DLA_F64, "", 2, (int64_t[]){1, 1});
    const char *modes[2] = {"direct", "adjoint"};
    for (int m = 0; m < 2; m++) {
        dla_ode_options o = {.gradient_mode = modes[m]};
        dla_tensor *y = dla_ode45(scaled, NULL, 3, (const double[]){0, 0.5, 1}, y0, 1, &a, &o);
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("%s: %s", modes[m], dla_tensor_error(y));
        assert_string_equal(dla_tensor_format(y), "CBT");
        assert_int_equal(dla_tensor_dim(y, 1), 2);
        assert_int_equal(dla_tensor_dim(y, 2), 0);
        assert_int_equal(dla_tensor_dim(y, 3), 2);
    }
    dla_scope_end();
}

/* A y0 (or theta) that is not finite, as after training diverged, fails at
 * once: no smaller step can help. The steps were halved down to 16 eps(t)
 * first: from t = 0 about 1070 attempts of six calls each, every one
 * recorded on the tape (3 GB and 12 s for a 256-wide network). */
static void test_a_y0_that_is_not_finite_fails_at_once(void **state)
{
    (void)state;
    dla_scope_begin();
    const double bad[3][2] = {{NAN, 1}, {INFINITY, 1}, {1, 2}};
    for (int c = 0; c < 3; c++) {
        dla_tensor *y0 = dla_tensor_from_host(bad[c], DLA_F64, "", 2, (int64_t[]){2, 1});
        /* The third case: y0 finite, theta NaN (the slope is not). */
        dla_tensor *a = dla_full(c == 2 ? NAN : -1, DLA_F64, "", 2, (int64_t[]){1, 1});
        dla_ode_stats st;
        tu_expect_error(dla_ode45(scaled, NULL, 2, (const double[]){0, 1}, y0, 1, &a,
                                  &(dla_ode_options){.stats = &st}),
                        DLA_ERR_STATE, "at t = 0 the solution or its slope is not finite");
        if (!(st.evaluations <= 7))
            fail_msg("case %d: %lld calls of fn before the error", c, (long long)st.evaluations);
    }
    dla_scope_end();
}

/* A slope that takes a gradient in a dla_feval of its own (a Hamiltonian
 * network's dH/dy): y' = -theta .* dH/dy with H = sum(y.^2)/2. The
 * "adjoint" forward solve is one op, and its forward ran fn with the
 * feval recording nothing (ops inside a forward belong to the op), so
 * the feval's dla_gradient failed with "called outside dla_feval", in
 * a plain solve and under a tape alike, where "direct" solved it. The
 * feval records its own ops now: both modes solve to y0 .* exp(-theta),
 * and give one gradient with respect to theta (the feval's result is a
 * constant to the outer tape in both: nested fevals, autodiff.h). */
static dla_status energy_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *h = dla_affine(dla_sum(dla_square(in[0]), 0, NULL), 0.5, 0.0);
    return dla_gradient(h, 1, in, out);
}

static dla_tensor *hamiltonian_slope(double t, dla_tensor *y, int ntheta,
                                     dla_tensor *const *theta, void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    dla_tensor *g;
    if (dla_feval(energy_gradient, NULL, 1, &y, 1, &g) != DLA_OK)
        return g;
    return dla_neg(dla_mul(theta[0], g));
}

static dla_status hamiltonian_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *y = dla_ode45(hamiltonian_slope, NULL, 2, (const double[]){0, 1}, in[0], 1,
                              &in[1], &(dla_ode_options){.gradient_mode = ctx});
    out[0] = dla_sum(dla_square(y), 0, NULL);
    return dla_gradient(out[0], 1, &in[1], out + 1);
}

static dla_tensor *direct_gradient_slope(double t, dla_tensor *y, int ntheta,
                                         dla_tensor *const *theta, void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    dla_tensor *g;
    dla_tensor *h = dla_affine(dla_sum(dla_square(y), 0, NULL), 0.5, 0.0);
    if (dla_gradient(h, 1, &y, &g) != DLA_OK)
        return g;
    return dla_neg(dla_mul(theta[0], g));
}

static dla_status direct_gradient_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                       dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_ode45(direct_gradient_slope, NULL, 2, (const double[]){0, 1}, in[0], 1, &in[1],
                       &(dla_ode_options){.gradient_mode = "adjoint"});
    out[1] = out[0];
    return dla_tensor_status(out[0]);
}

static void test_a_slope_with_a_feval_of_its_own_solves_in_both_modes(void **state)
{
    dla_scope_begin();
    dla_tensor *y0 = dla_tensor_from_host((double[]){1, 2}, DLA_F64, "", DLA_DIMS(2));
    dla_tensor *theta = dla_tensor_from_host((double[]){0.5, 1}, DLA_F64, "", DLA_DIMS(2));
    static const char *const modes[2] = {"direct", "adjoint"};
    double grad[2][2];
    for (int m = 0; m < 2; m++) {
        dla_tensor *y = dla_ode45(hamiltonian_slope, NULL, 2, (const double[]){0, 1}, y0, 1,
                                  &theta, &(dla_ode_options){.gradient_mode = modes[m]});
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("%s, plain: %s", modes[m], dla_tensor_error(y));
        tu_assert_near(dla_tensor_item(y, 0), exp(-0.5), 1e-3);
        tu_assert_near(dla_tensor_item(y, 1), 2 * exp(-1.0), 1e-3);
        dla_tensor *out[2];
        if (dla_feval(hamiltonian_loss, (void *)modes[m], 2, (dla_tensor *[]){y0, theta}, 2,
                      out) != DLA_OK)
            fail_msg("%s, in dla_feval: %s", modes[m], dla_last_error());
        for (int i = 0; i < 2; i++)
            grad[m][i] = dla_tensor_item(out[1], i);
    }
    for (int i = 0; i < 2; i++)
        tu_assert_near(grad[1][i], grad[0][i], 1e-3 * fabs(grad[0][i]));
    /* Without a feval of its own the slope's dla_gradient is refused in
     * the adjoint forward, saying where it is (it said "called outside
     * dla_feval" under the caller's tape). */
    dla_tensor *out[2];
    assert_int_equal(dla_feval(direct_gradient_loss, NULL, 2, (dla_tensor *[]){y0, theta}, 2,
                               out),
                     DLA_ERR_STATE);
    if (!strstr(dla_last_error(), "called inside the forward of an op"))
        fail_msg("the error says: %s", dla_last_error());
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_decay_matches_exp_at_every_requested_time),
        TU_TEST(test_first_step_is_bounded_by_the_first_interval),
        TU_TEST(test_tighter_tolerances_take_more_steps_for_less_error),
        TU_TEST(test_rotation_keeps_the_format_and_adds_t),
        TU_TEST(test_it_integrates_backwards_in_time),
        TU_TEST(test_solves_that_could_not_advance_end),
        TU_TEST(test_a_slope_with_a_trailing_one_is_accepted),
        TU_TEST(test_direct_gradients_match_the_closed_form),
        TU_TEST(test_adjoint_gradients_match_the_closed_form),
        TU_TEST(test_adjoint_refuses_higher_derivatives),
        TU_TEST(test_adjoint_of_a_slope_that_ignores_y),
        TU_TEST(test_a_slope_with_a_feval_of_its_own_solves_in_both_modes),
        TU_TEST(test_a_tensor_given_as_two_thetas_has_one_gradient),
        TU_TEST(test_a_network_as_the_right_hand_side),
        TU_TEST(test_an_adjoint_solve_first_on_a_network_is_the_functions),
        TU_TEST(test_network_gradients_match_finite_differences),
        TU_TEST(test_second_derivatives_through_the_stages),
        TU_TEST(test_a_replay_on_the_same_values_gives_eager_bits),
        TU_TEST(test_the_errors_say_what_is_wrong),
        TU_TEST(test_an_empty_batch_solves_to_an_empty_result),
        TU_TEST(test_a_y0_that_is_not_finite_fails_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

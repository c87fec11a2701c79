/*
 * test_optim.c - the optimizers against steps computed by hand with
 * MATLAB's formulas (sgdmupdate, adamupdate, rmspropupdate), dlupdate,
 * L2 regularization, gradient clipping by each method, learning-rate
 * schedules, updating a network through its Learnables table, and the
 * all-or-nothing rule on errors.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static dla_tensor *vec(int n, const double *v)
{
    return dla_keep(dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(n, 1)));
}

static void assert_vec(dla_tensor *t, int n, const double *want, double tol)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_numel(t), n);
    for (int i = 0; i < n; i++)
        if (!(fabs(dla_tensor_item(t, i) - want[i]) <= tol))
            fail_msg("element %d: %.12g, want %.12g", i, dla_tensor_item(t, i), want[i]);
}

/* A learning rate of 0 leaves the parameters and the state as they are,
 * as MathWorks' sgdmupdate.m, adamupdate.m and rmspropupdate.m
 * short-circuit it: a warm-up that starts at 0 must not put its first
 * gradient into Adam's averages, nor let a momentum decay the velocity.
 * Before, the state moved (Adam's average took (1 - 0.9) * g). An empty
 * state stays empty (NULL, zeros). */
static void a_zero_rate_leaves_the_state_as_matlab(void **state)
{
    (void)state;
    double p0[2] = {1, -2}, g1[2] = {0.5, -4}, g2[2] = {2, 3};
    dla_tensor *params[1] = {vec(2, p0)};
    dla_tensor *g[1] = {vec(2, g1)}, *h[1] = {vec(2, g2)};
    dla_tensor *s1[1] = {NULL}, *s2[1] = {NULL};
    /* Empty state: nothing is made. */
    assert_int_equal(dla_sgdmupdate(1, params, g, s1, 0, 0.9), DLA_OK);
    assert_int_equal(dla_adamupdate(1, params, g, s1, s2, 1, 0, 0.9, 0.999, 1e-8), DLA_OK);
    assert_int_equal(dla_rmspropupdate(1, params, g, s2, 0, 0.9, 1e-8), DLA_OK);
    assert_null(s1[0]);
    assert_null(s2[0]);
    assert_vec(params[0], 2, p0, 0);
    /* With a state: one step at a rate of 0.1, then one at 0, which
     * changes nothing. */
    for (int solver = 0; solver < 3; solver++) {
        double p[2], a[2], b[2];
        if (solver == 0)
            assert_int_equal(dla_sgdmupdate(1, params, g, s1, 0.1, 0.9), DLA_OK);
        else if (solver == 1)
            assert_int_equal(dla_adamupdate(1, params, g, s1, s2, 1, 0.1, 0.9, 0.999, 1e-8),
                             DLA_OK);
        else
            assert_int_equal(dla_rmspropupdate(1, params, g, s2, 0.1, 0.9, 1e-8), DLA_OK);
        for (int i = 0; i < 2; i++) {
            p[i] = dla_tensor_item(params[0], i);
            a[i] = s1[0] ? dla_tensor_item(s1[0], i) : 0;
            b[i] = s2[0] ? dla_tensor_item(s2[0], i) : 0;
        }
        if (solver == 0)
            assert_int_equal(dla_sgdmupdate(1, params, h, s1, 0, 0.9), DLA_OK);
        else if (solver == 1)
            assert_int_equal(dla_adamupdate(1, params, h, s1, s2, 2, 0, 0.9, 0.999, 1e-8), DLA_OK);
        else
            assert_int_equal(dla_rmspropupdate(1, params, h, s2, 0, 0.9, 1e-8), DLA_OK);
        assert_vec(params[0], 2, p, 0);
        if (s1[0])
            assert_vec(s1[0], 2, a, 0);
        if (s2[0])
            assert_vec(s2[0], 2, b, 0);
        dla_optim_free(1, s1);
        dla_optim_free(1, s2);
        s1[0] = s2[0] = NULL;
    }
    /* Bad arguments are still refused at a rate of 0. */
    assert_int_equal(dla_sgdmupdate(1, params, g, s1, 0, 2), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_adamupdate(1, params, g, s1, s2, 0, 0, 0.9, 0.999, 1e-8),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_rmspropupdate(1, params, g, s2, 0, 0.9, 0), DLA_ERR_INVALID_ARGUMENT);
    dla_optim_free(1, params);
    dla_optim_free(1, g);
    dla_optim_free(1, h);
}

static void sgdm_steps_as_matlab_computes_them(void **state)
{
    (void)state;
    double p0[3] = {1, -2, 0.5}, g1[3] = {0.1, -0.4, 2}, g2[3] = {-1, 0.3, 0.2};
    dla_tensor *params[2] = {vec(3, p0), vec(1, (double[]){4})};
    dla_tensor *vel[2] = {NULL, NULL};
    dla_tensor *grads1[2] = {vec(3, g1), vec(1, (double[]){-1})};
    dla_tensor *grads2[2] = {vec(3, g2), vec(1, (double[]){0.5})};
    double lr = 0.01, mom = 0.9, v[3], p[3];
    assert_int_equal(dla_sgdmupdate(2, params, grads1, vel, lr, mom), DLA_OK);
    for (int i = 0; i < 3; i++) {
        v[i] = -lr * g1[i];
        p[i] = p0[i] + v[i];
    }
    assert_vec(params[0], 3, p, 1e-15);
    assert_vec(vel[0], 3, v, 1e-15);
    assert_int_equal(dla_sgdmupdate(2, params, grads2, vel, lr, mom), DLA_OK);
    for (int i = 0; i < 3; i++) {
        v[i] = mom * v[i] - lr * g2[i];
        p[i] += v[i];
    }
    assert_vec(params[0], 3, p, 1e-15);
    assert_vec(params[1], 1, (double[]){4 + 0.01 + (0.9 * 0.01 - 0.005)}, 1e-15);
    dla_optim_free(2, params);
    dla_optim_free(2, vel);
    assert_null(vel[0]);
    dla_optim_free(2, grads1);
    dla_optim_free(2, grads2);
}

static void adam_steps_with_bias_correction(void **state)
{
    (void)state;
    double p[2] = {0.3, -1.2}, g[3][2] = {{0.5, -0.1}, {0.2, 0.4}, {-0.3, 0.05}};
    dla_tensor *params[1] = {vec(2, p)}, *m[1] = {NULL}, *v[1] = {NULL};
    double mh[2] = {0}, vh[2] = {0};
    double lr = 0.05, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int t = 1; t <= 3; t++) {
        dla_tensor *gt[1] = {vec(2, g[t - 1])};
        assert_int_equal(dla_adamupdate(1, params, gt, m, v, t, lr, b1, b2, eps), DLA_OK);
        double step = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
        for (int i = 0; i < 2; i++) {
            mh[i] = b1 * mh[i] + (1 - b1) * g[t - 1][i];
            vh[i] = b2 * vh[i] + (1 - b2) * g[t - 1][i] * g[t - 1][i];
            p[i] -= step * mh[i] / (sqrt(vh[i]) + eps);
        }
        assert_vec(params[0], 2, p, 1e-13);
        assert_vec(m[0], 2, mh, 1e-15);
        assert_vec(v[0], 2, vh, 1e-15);
        dla_optim_free(1, gt);
    }
    assert_int_equal(dla_adamupdate(1, params, m, m, v, 0, lr, b1, b2, eps), DLA_ERR_INVALID_ARGUMENT);
    dla_optim_free(1, params);
    dla_optim_free(1, m);
    dla_optim_free(1, v);
}

static void rmsprop_steps_as_matlab_computes_them(void **state)
{
    (void)state;
    double p[2] = {1, 2}, g[2][2] = {{0.3, -0.6}, {0.1, 0.2}};
    dla_tensor *params[1] = {vec(2, p)}, *s[1] = {NULL};
    double sh[2] = {0}, lr = 0.001, d = 0.9, eps = 1e-8;
    for (int t = 0; t < 2; t++) {
        dla_tensor *gt[1] = {vec(2, g[t])};
        assert_int_equal(dla_rmspropupdate(1, params, gt, s, lr, d, eps), DLA_OK);
        for (int i = 0; i < 2; i++) {
            sh[i] = d * sh[i] + (1 - d) * g[t][i] * g[t][i];
            p[i] -= lr * g[t][i] / (sqrt(sh[i]) + eps);
        }
        assert_vec(params[0], 2, p, 1e-15);
        assert_vec(s[0], 2, sh, 1e-16);
        dla_optim_free(1, gt);
    }
    dla_optim_free(1, params);
    dla_optim_free(1, s);
}

static dla_tensor *axpy(void *ctx, int nargs, dla_tensor *const *args)
{
    double a = *(double *)ctx;
    assert_int_equal(nargs, 3);
    return dla_add(args[0], dla_affine(dla_mul(args[1], args[2]), a, 0));
}

static void dlupdate_applies_a_function_to_every_entry(void **state)
{
    (void)state;
    dla_tensor *p[2] = {vec(2, (double[]){1, 2}), vec(1, (double[]){3})};
    dla_tensor *x[2] = {vec(2, (double[]){2, 3}), vec(1, (double[]){4})};
    dla_tensor *y[2] = {vec(2, (double[]){5, 7}), vec(1, (double[]){-1})};
    double a = 0.5;
    assert_int_equal(dla_dlupdate(axpy, &a, 2, p, 2, (dla_tensor *const *[]){x, y}), DLA_OK);
    assert_vec(p[0], 2, (double[]){1 + 5, 2 + 10.5}, 0);
    assert_vec(p[1], 1, (double[]){3 - 2}, 0);
    dla_optim_free(2, p);
    dla_optim_free(2, x);
    dla_optim_free(2, y);
}

static void l2_and_clipping_treat_gradients_as_trainnet_does(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *g[2] = {dla_tensor_from_host((double[]){3, -4}, DLA_F64, "", DLA_DIMS(2, 1)),
                        dla_tensor_from_host((double[]){0.5, 0.5, 0.5}, DLA_F64, "", DLA_DIMS(3, 1))};
    dla_tensor *w[2] = {dla_tensor_from_host((double[]){1, 2}, DLA_F64, "", DLA_DIMS(2, 1)),
                        dla_tensor_from_host((double[]){10, 10, 10}, DLA_F64, "", DLA_DIMS(3, 1))};
    dla_tensor *out[2];
    /* L2 with a zero factor for the second (a bias). */
    assert_int_equal(dla_l2_regularize(2, g, w, 0.1, (double[]){1, 0}, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){3.1, -3.8}, 1e-15);
    assert_vec(out[1], 3, (double[]){0.5, 0.5, 0.5}, 0);
    /* A gradient of other dims than its parameter (the lists out of
     * order): the parameter was reshaped onto it and the wrong elements
     * added, silently; now refused as the optimizers refuse it. */
    dla_tensor *wt = dla_tensor_from_host((double[]){1, 2, 3, 4, 5, 6}, DLA_F64, "", DLA_DIMS(2, 3));
    dla_tensor *gt = dla_zeros(DLA_F64, "", DLA_DIMS(3, 2));
    assert_int_equal(dla_l2_regularize(1, &gt, &wt, 0.1, NULL, out), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_l2_regularize: entry 1: the parameter is 2x3, "
                                             "its gradient 3x2"));
    assert_int_equal(dla_tensor_status(out[0]), DLA_ERR_SHAPE);
    assert_int_equal(dla_l2_regularize(2, (dla_tensor *[]){g[0], NULL}, w, 0.1, NULL, out),
                     DLA_ERR_INVALID_ARGUMENT);
    /* An infinite factor made the gradients inf, and the bias's NaN
     * (inf * 0). */
    assert_int_equal(dla_l2_regularize(2, g, w, INFINITY, (double[]){1, 0}, out),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "factor inf (finite and >= 0)"));
    /* So do the entries' own factors. Before: a NaN one gave NaN
     * gradients, an infinite one inf, a negative one a push away from
     * zero, each with DLA_OK. */
    const double bad_factors[3] = {NAN, INFINITY, -1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(dla_l2_regularize(2, g, w, 0.1, (double[]){1, bad_factors[i]}, out),
                         DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "dla_l2_regularize: entry 2: l2_factors"));
        assert_int_equal(dla_tensor_status(out[0]), DLA_ERR_INVALID_ARGUMENT);
    }
    assert_int_equal(dla_tensor_status(out[1]), DLA_ERR_INVALID_ARGUMENT);
    /* Per-entry norm: |g0| = 5 is scaled to 2; |g1| = 0.866 stays. */
    assert_int_equal(dla_clip_gradients(2, g, NULL, 2, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){1.2, -1.6}, 1e-15);
    assert_vec(out[1], 3, (double[]){0.5, 0.5, 0.5}, 1e-15);
    /* Global norm sqrt(25 + 0.75) scaled to 2. */
    double s = 2 / sqrt(25.75);
    assert_int_equal(dla_clip_gradients(2, g, "global-l2norm", 2, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){3 * s, -4 * s}, 1e-15);
    assert_vec(out[1], 3, (double[]){0.5 * s, 0.5 * s, 0.5 * s}, 1e-15);
    assert_int_equal(dla_clip_gradients(2, g, "global-l2norm", 100, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){3, -4}, 0);
    /* Before: entries of single and double (a network with a double
     * learnable among single ones) failed with dla_add's dtype error. */
    dla_tensor *mixed[2] = {dla_cast(g[0], DLA_F32), g[1]};
    assert_int_equal(dla_clip_gradients(2, mixed, "global-l2norm", 2, out), DLA_OK);
    assert_int_equal(dla_tensor_dtype(out[0]), DLA_F32);
    assert_int_equal(dla_tensor_dtype(out[1]), DLA_F64);
    assert_vec(out[0], 2, (double[]){3 * s, -4 * s}, 1e-6);
    assert_vec(out[1], 3, (double[]){0.5 * s, 0.5 * s, 0.5 * s}, 1e-15);
    /* By value. */
    assert_int_equal(dla_clip_gradients(2, g, "absolute-value", 3.5, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){3, -3.5}, 0);
    /* A zero gradient stays zero (no 0/0). */
    dla_tensor *z = dla_zeros(DLA_F64, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &z, "l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0, 0}, 0);
    assert_int_equal(dla_clip_gradients(2, g, "l1norm", 1, out), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_tensor_status(out[0]), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
}

/* MATLAB's absolute-value clipping sets the elements beyond the threshold
 * to it. Before: a clamp written as g - relu(g - t) + relu(-g - t)
 * rounded in single: 1e10 clipped to 0.1 gave 0 (an exploding gradient,
 * the case clipping is for, became no step at all), 100 gave 0.0999985,
 * and Inf gave NaN. */
static void absolute_value_clipping_gives_the_threshold_itself(void **state)
{
    (void)state;
    dla_scope_begin();
    const float v[8] = {1e10f, -1e10f, 100.f, 1e-8f, -0.05f, INFINITY, -INFINITY, NAN};
    dla_tensor *g[2] = {dla_tensor_from_host(v, DLA_F32, "CB", DLA_DIMS(4, 2)),
                        dla_tensor_from_host((double[]){3e300, -0.25}, DLA_F64, "",
                                             DLA_DIMS(2, 1))};
    dla_tensor *out[2];
    assert_int_equal(dla_clip_gradients(2, g, "absolute-value", 0.1, out), DLA_OK);
    assert_int_equal(dla_tensor_dtype(out[0]), DLA_F32);
    assert_string_equal(dla_tensor_format(out[0]), "CB");
    const float t = 0.1f;
    const float want[7] = {t, -t, t, 1e-8f, -0.05f, t, -t};
    for (int i = 0; i < 7; i++)
        if (!((float)dla_tensor_item(out[0], i) == want[i]))
            fail_msg("element %d (%g): %.9g, want %.9g", i, (double)v[i],
                     dla_tensor_item(out[0], i), (double)want[i]);
    assert_true(isnan(dla_tensor_item(out[0], 7)));
    assert_vec(out[1], 2, (double[]){0.1, -0.1}, 0);
    dla_scope_end();
}

/* Norm clipping far above the threshold, and of single gradients whose
 * squares leave single's range. Before: [3e8 4e8] clipped to norm 1 gave
 * [0 0] (min(1, 2e-9) computed as 1 - relu(1 - 2e-9) rounded to 0);
 * [3e19 4e19] clipped to norm 1 gave [0 0] (the squares were Inf,
 * so the scale threshold / norm was 0), and [3e-25 4e-25] clipped to
 * 1e-26 stayed whole (the squares flushed to 0). Each as "l2norm" and as
 * "global-l2norm" over entries of single and double; an Inf element
 * still gives an Inf norm (the finite elements scaled to 0), a NaN leaves
 * the entry as it was, a zero gradient stays zero. */
static void norm_clipping_scales_huge_and_tiny_single_gradients(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *huge = dla_tensor_from_host((float[]){3e19f, 4e19f}, DLA_F32, "CB", DLA_DIMS(2, 1));
    dla_tensor *tiny = dla_tensor_from_host((float[]){3e-25f, -4e-25f}, DLA_F32, "", DLA_DIMS(2, 1));
    dla_tensor *out[2];
    /* a norm 5e8 times the threshold: the scale 2e-9 was rounded to 0 */
    dla_tensor *big = dla_tensor_from_host((float[]){3e8f, 4e8f}, DLA_F32, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &big, "l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-6);
    assert_int_equal(dla_clip_gradients(1, &big, "global-l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-6);
    assert_int_equal(dla_clip_gradients(1, &huge, "l2norm", 1, out), DLA_OK);
    assert_string_equal(dla_tensor_format(out[0]), "CB");
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-6);
    assert_int_equal(dla_clip_gradients(1, &tiny, "l2norm", 1e-26, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){6e-27, -8e-27}, 1e-32);
    /* global: L = 5e19 over [3e19 4e19] and [0 0] in double */
    dla_tensor *both[2] = {huge, dla_zeros(DLA_F64, "", DLA_DIMS(2, 1))};
    assert_int_equal(dla_clip_gradients(2, both, "global-l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-6);
    assert_vec(out[1], 2, (double[]){0, 0}, 0);
    both[1] = dla_tensor_from_host((double[]){0, 4e19}, DLA_F64, "", DLA_DIMS(2, 1));
    both[0] = dla_tensor_from_host((float[]){3e19f}, DLA_F32, "", DLA_DIMS(1, 1));
    assert_int_equal(dla_clip_gradients(2, both, "global-l2norm", 10, out), DLA_OK);
    assert_vec(out[0], 1, (double[]){6}, 1e-5);
    assert_vec(out[1], 2, (double[]){0, 8}, 1e-6); /* 3e19 in single is inexact */
    dla_tensor *inf = dla_tensor_from_host((float[]){INFINITY, 1}, DLA_F32, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &inf, "l2norm", 1, out), DLA_OK);
    assert_true(isnan(dla_tensor_item(out[0], 0)));
    assert_true(dla_tensor_item(out[0], 1) == 0);
    dla_tensor *nan = dla_tensor_from_host((float[]){NAN, 1e9f}, DLA_F32, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &nan, "l2norm", 1, out), DLA_OK);
    assert_true(isnan(dla_tensor_item(out[0], 0)));
    assert_true(dla_tensor_item(out[0], 1) == 1e9);
    dla_tensor *zero = dla_zeros(DLA_F32, "", DLA_DIMS(3, 1));
    assert_int_equal(dla_clip_gradients(1, &zero, "l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 3, (double[]){0, 0, 0}, 0);
    dla_tensor *none = dla_zeros(DLA_F32, "", DLA_DIMS(0, 3));
    assert_int_equal(dla_clip_gradients(1, &none, "global-l2norm", 1, out), DLA_OK);
    assert_int_equal(dla_tensor_numel(out[0]), 0);
    dla_scope_end();
}

/* The same in double, whose largest elements square past double's range:
 * "global-l2norm" of [3e200 4e200] gave [0 0] (the entry's sum of squares
 * was unscaled in double, Inf) where "l2norm" gave [0.6 0.8], and a norm
 * past the range itself ([1e308 1e308], norm 1.4e308) zeroed the entry
 * under both though every element is finite. */
static void norm_clipping_scales_huge_double_gradients(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *out[2];
    dla_tensor *huge = dla_tensor_from_host((double[]){3e200, 4e200}, DLA_F64, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &huge, "l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-12);
    assert_int_equal(dla_clip_gradients(1, &huge, "global-l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){0.6, 0.8}, 1e-12);
    /* global over a huge entry and a small one: L = 5e200 */
    dla_tensor *both[2] = {huge, dla_tensor_from_host((double[]){1, -2}, DLA_F64, "", DLA_DIMS(2, 1))};
    assert_int_equal(dla_clip_gradients(2, both, "global-l2norm", 10, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){6, 8}, 1e-12);
    assert_vec(out[1], 2, (double[]){2e-200, -4e-200}, 1e-212);
    dla_tensor *edge = dla_tensor_from_host((double[]){1e308, -1e308}, DLA_F64, "", DLA_DIMS(2, 1));
    const double r = sqrt(0.5);
    assert_int_equal(dla_clip_gradients(1, &edge, "l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){r, -r}, 1e-12);
    assert_int_equal(dla_clip_gradients(1, &edge, "global-l2norm", 1, out), DLA_OK);
    assert_vec(out[0], 2, (double[]){r, -r}, 1e-12);
    /* an Inf element still gives an Inf norm: the finite ones scale to 0 */
    dla_tensor *inf = dla_tensor_from_host((double[]){INFINITY, 1e300}, DLA_F64, "", DLA_DIMS(2, 1));
    assert_int_equal(dla_clip_gradients(1, &inf, "global-l2norm", 1, out), DLA_OK);
    assert_true(isnan(dla_tensor_item(out[0], 0)));
    assert_true(dla_tensor_item(out[0], 1) == 0);
    dla_scope_end();
}

/* Before: a gradient of another shape with as many elements was
 * reshaped, and a state entry of other dims broadcast, with DLA_OK. */
static void gradients_and_states_of_other_dims_are_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *p = dla_tensor_retain(dla_ones(DLA_F32, "", DLA_DIMS(3, 4))), *keep = p;
    dla_tensor *g = dla_ones(DLA_F32, "", DLA_DIMS(3, 4)), *g43 = dla_ones(DLA_F32, "", DLA_DIMS(4, 3));
    dla_tensor *v = NULL;
    assert_int_equal(dla_sgdmupdate(1, &p, &g43, &v, 0.1, 0.9), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_sgdmupdate: entry 1: the parameter is 3x4, its gradient 4x3"));
    assert_ptr_equal(p, keep);
    assert_null(v);
    dla_tensor *g64 = dla_ones(DLA_F64, "", DLA_DIMS(3, 4));
    assert_int_equal(dla_sgdmupdate(1, &p, &g64, &v, 0.1, 0.9), DLA_ERR_DTYPE);
    assert_non_null(strstr(dla_last_error(), "its gradient double"));
    /* A velocity, average or squared average that would broadcast. */
    dla_tensor *small = dla_tensor_retain(dla_ones(DLA_F32, "", DLA_DIMS(1, 1)));
    dla_tensor *col = dla_tensor_retain(dla_ones(DLA_F32, "", DLA_DIMS(3, 1)));
    v = small;
    assert_int_equal(dla_sgdmupdate(1, &p, &g, &v, 0.1, 0.9), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "entry 1: the parameter is 3x4, its velocity 1x1"));
    assert_ptr_equal(v, small);
    dla_tensor *m = col, *q = NULL;
    assert_int_equal(dla_adamupdate(1, &p, &g, &m, &q, 1, 0.1, 0.9, 0.999, 1e-8), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_adamupdate: entry 1: the parameter is 3x4, its avg_grad 3x1"));
    m = NULL;
    q = col;
    assert_int_equal(dla_adamupdate(1, &p, &g, &m, &q, 1, 0.1, 0.9, 0.999, 1e-8), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "its avg_sq_grad 3x1"));
    q = small;
    assert_int_equal(dla_rmspropupdate(1, &p, &g, &q, 0.1, 0.9, 1e-8), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_rmspropupdate: entry 1: the parameter is 3x4, its avg_sq_grad 1x1"));
    assert_ptr_equal(p, keep);
    /* Trailing singletons and other labels are the same dims. */
    dla_tensor *gt = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 4)), *v2 = NULL;
    assert_int_equal(dla_sgdmupdate(1, &p, &gt, &v2, 0.1, 0.9), DLA_OK);
    dla_tensor *p1 = dla_tensor_retain(dla_ones(DLA_F32, "", DLA_DIMS(3, 1))), *v3 = NULL;
    dla_tensor *g1 = dla_ones(DLA_F32, "", DLA_DIMS(3, 1, 1, 1));
    assert_int_equal(dla_sgdmupdate(1, &p1, &g1, &v3, 0.1, 0.9), DLA_OK);
    dla_scope_end();
    dla_tensor_release(small);
    dla_tensor_release(col);
    dla_optim_free(1, &p);
    dla_optim_free(1, &v2);
    dla_optim_free(1, &p1);
    dla_optim_free(1, &v3);
}

static void schedules_drop_piecewise_and_warm_up(void **state)
{
    (void)state;
    dla_learn_rate_schedule pw = {.method = "piecewise", .drop_factor = 0.5, .drop_period = 2};
    assert_true(dla_learn_rate_at(&pw, 0.1, 1, 1) == 0.1);
    assert_true(dla_learn_rate_at(&pw, 0.1, 2, 50) == 0.1);
    assert_true(fabs(dla_learn_rate_at(&pw, 0.1, 3, 60) - 0.05) < 1e-15);
    assert_true(fabs(dla_learn_rate_at(&pw, 0.1, 5, 90) - 0.025) < 1e-15);
    dla_learn_rate_schedule d = {.method = "piecewise"}; /* MATLAB: 0.1 every 10 epochs */
    assert_true(fabs(dla_learn_rate_at(&d, 1, 11, 1) - 0.1) < 1e-15);
    assert_true(dla_learn_rate_at(&d, 1, 10, 1) == 1);
    dla_learn_rate_schedule w = {.warmup_iterations = 4, .warmup_start_factor = 0.2};
    assert_true(fabs(dla_learn_rate_at(&w, 1, 1, 0) - 0.2) < 1e-15);
    assert_true(fabs(dla_learn_rate_at(&w, 1, 1, 2) - 0.6) < 1e-15);
    assert_true(dla_learn_rate_at(&w, 1, 1, 4) == 1);
    assert_true(dla_learn_rate_at(NULL, 0.3, 7, 7) == 0.3);
    assert_true(isnan(dla_learn_rate_at(&(dla_learn_rate_schedule){.method = "cosin"}, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "method \"cosin\"; use \"none\", \"piecewise\", "
                                             "\"exponential\", \"cosine\", \"polynomial\", "
                                             "\"cyclical\", \"warmup\" or \"custom\""));
    /* Before: a negative period grew the rate (0.5^-3 at epoch 4), and a
     * negative start factor gave a negative rate. */
    dla_learn_rate_schedule np = {.method = "piecewise", .drop_factor = 0.5, .drop_period = -1};
    assert_true(isnan(dla_learn_rate_at(&np, 0.01, 4, 10)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: drop_period -1"));
    dla_learn_rate_schedule nw = {.warmup_iterations = 5, .warmup_start_factor = -3};
    assert_true(isnan(dla_learn_rate_at(&nw, 0.01, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "warmup_start_factor -3"));
    /* Before: a NaN drop factor gave the full rate until the first drop,
     * then NaN with no error (a stale message); one above 1 grew the rate;
     * an infinite start factor gave an infinite rate. */
    dla_clear_error();
    dla_learn_rate_schedule nd = {.method = "piecewise", .drop_factor = NAN, .drop_period = 1};
    assert_true(isnan(dla_learn_rate_at(&nd, 0.01, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: drop_factor nan"));
    dla_clear_error();
    dla_learn_rate_schedule gd = {.method = "piecewise", .drop_factor = 2, .drop_period = 1};
    assert_true(isnan(dla_learn_rate_at(&gd, 0.01, 3, 3)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: drop_factor 2"));
    dla_clear_error();
    dla_learn_rate_schedule iw = {.warmup_iterations = 5, .warmup_start_factor = INFINITY};
    assert_true(isnan(dla_learn_rate_at(&iw, 0.01, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: warmup_start_factor inf"));
    /* A drop to 0 itself (MATLAB allows LearnRateDropFactor 0): negative,
     * since 0 is the default 0.1; resolve keeps it negative. */
    dla_learn_rate_schedule z = {.method = "piecewise", .drop_factor = -1, .drop_period = 2};
    assert_true(dla_learn_rate_at(&z, 0.1, 2, 5) == 0.1);
    assert_true(dla_learn_rate_at(&z, 0.1, 3, 9) == 0);
    dla_training_options o = {.learn_rate_schedule = z}, r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_true(dla_learn_rate_at(&r.learn_rate_schedule, 0.1, 3, 9) == 0);
    char text[4096];
    assert_true(dla_training_options_describe(&o, text, sizeof text) > 0);
    assert_non_null(strstr(text, "LearnRateDropFactor: 0\n"));
    o.learn_rate_schedule.drop_factor = 0;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_true(r.learn_rate_schedule.drop_factor == 0.1);
}

/* piecewiseLearnRate's and exponentialLearnRate's Period is `period` as
 * well as `drop_period` (the struct's field of every other schedule
 * object's Period). Before, `period` was ignored for them: Period 2 set
 * there dropped every 10 steps, in silence. */
static void piecewise_and_exponential_take_their_period_either_way(void **state)
{
    (void)state;
    dla_learn_rate_schedule pw = {.method = "piecewise", .drop_factor = 0.5, .period = 2};
    assert_true(dla_learn_rate_at(&pw, 0.1, 2, 9) == 0.1);
    tu_assert_near(dla_learn_rate_at(&pw, 0.1, 3, 9), 0.05, 1e-15);
    tu_assert_near(dla_learn_rate_at(&pw, 0.1, 5, 9), 0.025, 1e-15);
    dla_learn_rate_schedule ex = {.method = "exponential", .drop_factor = 0.25, .period = 2,
                                  .frequency_unit = "iteration"};
    tu_assert_near(dla_learn_rate_at(&ex, 1, 1, 2), 0.5, 1e-15);
    tu_assert_near(dla_learn_rate_at(&ex, 1, 1, 5), 0.0625, 1e-15);
    /* The same value in both is the same schedule; two values are refused. */
    pw.drop_period = 2;
    tu_assert_near(dla_learn_rate_at(&pw, 0.1, 3, 9), 0.05, 1e-15);
    pw.drop_period = 3;
    assert_true(isnan(dla_learn_rate_at(&pw, 0.1, 3, 9)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: method \"piecewise\": "
                                             "drop_period 3 and period 2"));
    /* trainingOptions: resolved to LearnRateDropPeriod 2, shown so, and
     * trained so. */
    dla_training_options o = {.learn_rate_schedule = {.method = "piecewise", .drop_factor = 0.5,
                                                      .period = 2}},
                         r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_int_equal(r.learn_rate_schedule.drop_period, 2);
    tu_assert_near(dla_learn_rate_at(&r.learn_rate_schedule, 0.1, 3, 9), 0.05, 1e-15);
    char text[4096];
    assert_true(dla_training_options_describe(&o, text, sizeof text) > 0);
    assert_non_null(strstr(text, "LearnRateDropPeriod: 2\n"));
    o.learn_rate_schedule.drop_period = 4;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "drop_period 4 and period 2"));
    /* Resolved options stay valid for the schedule code itself. */
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "piecewise", .drop_period = 3};
    o.max_epochs = 7;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    tu_assert_near(dla_learn_rate_at(&r.learn_rate_schedule, 1, 4, 1), 0.1, 1e-15);
}

/* A one-cycle schedule of one's own: up for two epochs, then down; NaN
 * from epoch ctx on. */
static double one_cycle(void *ctx, double initial, int epoch, int iteration)
{
    (void)iteration;
    if (epoch >= *(int *)ctx)
        return NAN;
    return epoch <= 2 ? initial * epoch : initial * 2 / (epoch - 1);
}

static void a_schedule_function_gives_the_rate(void **state)
{
    (void)state;
    int nan_from = 100;
    dla_learn_rate_schedule f = {.fn = one_cycle, .fn_ctx = &nan_from};
    assert_true(dla_learn_rate_at(&f, 0.1, 1, 1) == 0.1);
    assert_true(dla_learn_rate_at(&f, 0.1, 2, 9) == 0.2);
    assert_true(dla_learn_rate_at(&f, 0.1, 5, 30) == 0.05);
    f.warmup_iterations = 4; /* the warm-up multiplies it */
    assert_true(fabs(dla_learn_rate_at(&f, 0.1, 1, 2) - 0.05) < 1e-15);
    f.warmup_iterations = 0;
    nan_from = 3;
    assert_true(isnan(dla_learn_rate_at(&f, 0.1, 3, 12)));
    assert_non_null(strstr(dla_last_error(), "the schedule function gave nan at epoch 3, "
                                             "iteration 12"));
    f.method = "cosine";
    f.period = 4;
    assert_true(isnan(dla_learn_rate_at(&f, 0.1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "method \"cosine\" and a schedule function"));
    dla_learn_rate_schedule c = {.method = "custom"};
    assert_true(isnan(dla_learn_rate_at(&c, 0.1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "method \"custom\" needs fn"));
    dla_training_options o = {.learn_rate_schedule = c}, r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"custom\" needs its function"));
    o.learn_rate_schedule = (dla_learn_rate_schedule){.fn = one_cycle, .fn_ctx = &nan_from};
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_string_equal(r.learn_rate_schedule.method, "custom");
}

/* "exponential", "cosine" and "polynomial" against their formulas written
 * out; their parameters refused where they would divide by 0 or grow the
 * rate; trainnet's options fill in a period of MaxEpochs. */
static void decaying_schedules_follow_their_formulas(void **state)
{
    (void)state;
    const double pi = 3.14159265358979323846;
    dla_learn_rate_schedule ex = {.method = "exponential", .drop_factor = 0.5, .drop_period = 4};
    for (int e = 1; e <= 9; e++)
        assert_true(fabs(dla_learn_rate_at(&ex, 0.2, e, 7 * e) - 0.2 * pow(0.5, (e - 1) / 4.0)) <
                    1e-15);
    /* Between piecewise's drops: epoch 3 of a period of 4 is 0.5^(2/4). */
    assert_true(dla_learn_rate_at(&ex, 1, 3, 1) < 1 && dla_learn_rate_at(&ex, 1, 3, 1) > 0.5);
    dla_learn_rate_schedule co = {.method = "cosine", .period = 5, .final_factor = 0.1};
    for (int e = 1; e <= 12; e++) {
        const double t = ((e - 1) % 5) / 5.0;
        const double want = 0.3 * (0.1 + 0.9 * 0.5 * (1 + cos(pi * t)));
        assert_true(fabs(dla_learn_rate_at(&co, 0.3, e, e) - want) < 1e-15);
    }
    assert_true(dla_learn_rate_at(&co, 0.3, 1, 1) == 0.3);
    assert_true(dla_learn_rate_at(&co, 0.3, 6, 1) == 0.3); /* the warm restart */
    assert_true(dla_learn_rate_at(&co, 0.3, 5, 1) < 0.3 * 0.2);
    dla_learn_rate_schedule po = {.method = "polynomial", .period = 4, .power = 2};
    const double pw[] = {1, 0.5625, 0.25, 0.0625, 0, 0};
    for (int e = 1; e <= 6; e++)
        assert_true(fabs(dla_learn_rate_at(&po, 1, e, e) - pw[e - 1]) < 1e-15);
    po.power = 0; /* linear */
    po.final_factor = 0.2;
    assert_true(fabs(dla_learn_rate_at(&po, 1, 2, 2) - (0.2 + 0.8 * 0.75)) < 1e-15);
    assert_true(fabs(dla_learn_rate_at(&po, 1, 9, 9) - 0.2) < 1e-15);
    /* With a warm-up: the two factors multiply. */
    co.warmup_iterations = 10;
    co.warmup_start_factor = 0.5;
    assert_true(fabs(dla_learn_rate_at(&co, 1, 1, 5) - 0.75) < 1e-15);

    const struct {
        dla_learn_rate_schedule s;
        const char *msg;
    } bad[] = {
        {{.method = "cosine"}, "dla_learn_rate_at: period 0: \"cosine\" and \"polynomial\" need"},
        {{.method = "polynomial", .period = -2}, "period -2"},
        {{.method = "cosine", .period = 3, .final_factor = -0.5}, "final_factor -0.5: it must be"},
        {{.method = "cosine", .period = 3, .final_factor = INFINITY}, "final_factor inf"},
        {{.method = "cosine", .period = 3, .final_factor = NAN}, "final_factor nan"},
        {{.method = "polynomial", .period = 3, .power = -1}, "power -1"},
        {{.method = "polynomial", .period = 3, .power = INFINITY}, "power inf"},
        {{.method = "exponential", .drop_factor = 3}, "drop_factor 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dla_clear_error();
        assert_true(isnan(dla_learn_rate_at(&bad[i].s, 0.1, 2, 2)));
        if (!strstr(dla_last_error(), bad[i].msg))
            fail_msg("case %zu: %s", i, dla_last_error());
    }

    /* trainingOptions: "cosine" over MaxEpochs by default; bad values
     * refused by name; the description shows the object's parameters. */
    dla_training_options o = {.max_epochs = 8,
                              .learn_rate_schedule = {.method = "cosine", .final_factor = 0.05}};
    dla_training_options r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_int_equal(r.learn_rate_schedule.period, 8);
    char text[4096];
    assert_true(dla_training_options_describe(&o, text, sizeof text) > 0);
    assert_non_null(strstr(text, "Period: 8\n"));
    assert_non_null(strstr(text, "FinalFactor: 0.0500\n"));
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "polynomial", .power = -1};
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "learn-rate power -1"));
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "cosine", .final_factor = -2};
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "learn-rate final factor -2"));
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "step"};
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"polynomial\""));
    /* L-BFGS has no schedule: a period given with it is named. */
    dla_training_options lb = {.solver = "lbfgs", .learn_rate_schedule = {.period = 3}};
    assert_int_equal(dla_training_options_resolve(&lb, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "LearnRateSchedule"));
}

/* MATLAB's cyclicalLearnRate (R2024b): from the base rate up to MaxFactor
 * times it over StepRatio of a Period, back down over the rest, again each
 * period; its defaults MaxFactor 5, Period 10, StepRatio 0.5, a step an
 * epoch. The triangle written out, k the steps done. */
static double triangle(double top, int period, double ratio, int k)
{
    const double up = ratio * period, p = k % period;
    return p < up ? 1 + (top - 1) * p / up : top - (top - 1) * (p - up) / (period - up);
}

static void cyclical_rises_and_falls_each_period(void **state)
{
    (void)state;
    dla_learn_rate_schedule d = {.method = "cyclical"};
    for (int e = 1; e <= 25; e++)
        assert_true(fabs(dla_learn_rate_at(&d, 0.01, e, 3 * e) - 0.01 * triangle(5, 10, 0.5, e - 1)) <
                    1e-15);
    assert_true(dla_learn_rate_at(&d, 1, 1, 1) == 1);  /* the base rate first */
    assert_true(dla_learn_rate_at(&d, 1, 6, 1) == 5);  /* MaxFactor half way */
    assert_true(dla_learn_rate_at(&d, 1, 11, 1) == 1); /* and again */
    /* Counted in iterations, the epoch does not matter. */
    dla_learn_rate_schedule it = {.method = "cyclical", .max_factor = 3, .period = 4,
                                  .step_ratio = 0.25, .frequency_unit = "iteration"};
    const double want[] = {1, 3, 3 - 2.0 / 3, 3 - 4.0 / 3, 1, 3};
    for (int i = 1; i <= 6; i++) {
        assert_true(fabs(dla_learn_rate_at(&it, 0.1, 1, i) - 0.1 * want[i - 1]) < 1e-15);
        assert_true(dla_learn_rate_at(&it, 0.1, 1, i) == dla_learn_rate_at(&it, 0.1, 7, i));
    }
    const struct {
        dla_learn_rate_schedule s;
        const char *msg;
    } bad[] = {
        {{.method = "cyclical", .max_factor = -1}, "max_factor -1"},
        {{.method = "cyclical", .max_factor = INFINITY}, "max_factor inf"},
        {{.method = "cyclical", .step_ratio = 1}, "step_ratio 1: it must be in (0, 1)"},
        {{.method = "cyclical", .step_ratio = NAN}, "step_ratio nan"},
        {{.method = "cyclical", .frequency_unit = "epochs"}, "frequency_unit \"epochs\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dla_clear_error();
        assert_true(isnan(dla_learn_rate_at(&bad[i].s, 0.1, 2, 2)));
        if (!strstr(dla_last_error(), bad[i].msg))
            fail_msg("case %zu: %s", i, dla_last_error());
    }
    /* trainingOptions "cyclical": the defaults filled in and shown. */
    dla_training_options o = {.learn_rate_schedule = {.method = "cyclical"}}, r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_int_equal(r.learn_rate_schedule.period, 10);
    assert_true(r.learn_rate_schedule.max_factor == 5 && r.learn_rate_schedule.step_ratio == 0.5);
    assert_string_equal(r.learn_rate_schedule.frequency_unit, "epoch");
    char text[4096];
    assert_true(dla_training_options_describe(&o, text, sizeof text) > 0);
    assert_non_null(strstr(text, "MaxFactor: 5\n"));
    assert_non_null(strstr(text, "StepRatio: 0.5000\n"));
    o.learn_rate_schedule.step_ratio = 2;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_training_options: LearnRateSchedule: step_ratio 2"));
}

/* FrequencyUnit "iteration": every schedule steps each iteration, k the
 * iterations done; the cosine and polynomial InitialFactor and the cosine
 * PeriodGrowthFactor, against their formulas written out. */
static void schedules_step_by_iteration_and_take_matlabs_factors(void **state)
{
    (void)state;
    const double pi = 3.14159265358979323846;
    dla_learn_rate_schedule pw = {.method = "piecewise", .drop_factor = 0.5, .drop_period = 3,
                                  .frequency_unit = "iteration"};
    dla_learn_rate_schedule ex = {.method = "exponential", .drop_factor = 0.5, .drop_period = 3,
                                  .frequency_unit = "iteration"};
    for (int i = 1; i <= 10; i++) {
        assert_true(dla_learn_rate_at(&pw, 1, 1, i) == pow(0.5, (i - 1) / 3));
        assert_true(dla_learn_rate_at(&ex, 1, 1, i) == pow(0.5, (i - 1) / 3.0));
    }
    /* Periods of 2, 4, 8 steps: a restart at k = 2 and at k = 6. */
    dla_learn_rate_schedule co = {.method = "cosine", .period = 2, .period_growth_factor = 2,
                                  .initial_factor = 2, .final_factor = 0.5,
                                  .frequency_unit = "iteration"};
    const double t[] = {0, 0.5, 0, 0.25, 0.5, 0.75, 0, 0.125};
    for (int i = 1; i <= 8; i++) {
        const double want = 0.5 + (2 - 0.5) * 0.5 * (1 + cos(pi * t[i - 1]));
        assert_true(fabs(dla_learn_rate_at(&co, 1, 9, i) - want) < 1e-15);
    }
    co.frequency_unit = NULL; /* the same by epoch */
    for (int e = 1; e <= 8; e++)
        assert_true(fabs(dla_learn_rate_at(&co, 1, e, 100) -
                         (0.5 + 1.5 * 0.5 * (1 + cos(pi * t[e - 1])))) < 1e-15);
    /* Far into the training and with a growth just above 1 (a period at a
     * time would be slow there), the same periods, added up one by one. */
    const double growths[] = {1.5, 1 + 1e-9, 3};
    for (size_t g = 0; g < sizeof growths / sizeof growths[0]; g++) {
        dla_learn_rate_schedule cg = {.method = "cosine", .period = 7,
                                      .period_growth_factor = growths[g],
                                      .frequency_unit = "iteration"};
        const int at[] = {1, 7, 8, 18, 19, 100, 4321, 100000};
        for (size_t j = 0; j < sizeof at / sizeof at[0]; j++) {
            double left = at[j] - 1, len = 7;
            while (left >= len) {
                left -= len;
                len *= growths[g];
            }
            const double want = 0.5 * (1 + cos(pi * left / len));
            if (!(fabs(dla_learn_rate_at(&cg, 1, 1, at[j]) - want) <= 1e-9))
                fail_msg("growth %g, iteration %d: %.17g, not %.17g", growths[g], at[j],
                         dla_learn_rate_at(&cg, 1, 1, at[j]), want);
        }
    }
    /* A growth factor below 1 would shrink the periods toward none. */
    co.period_growth_factor = 0.5;
    assert_true(isnan(dla_learn_rate_at(&co, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "period_growth_factor 0.5"));
    /* Polynomial from InitialFactor to a FinalFactor above it (MATLAB's
     * factors are any positive numbers). */
    dla_learn_rate_schedule po = {.method = "polynomial", .period = 4, .power = 2,
                                  .initial_factor = 0.5, .final_factor = 1.5,
                                  .frequency_unit = "iteration"};
    for (int i = 1; i <= 6; i++) {
        const double left = i - 1 >= 4 ? 0 : 1 - (i - 1) / 4.0;
        assert_true(fabs(dla_learn_rate_at(&po, 2, 3, i) - 2 * (1.5 + (0.5 - 1.5) * left * left)) <
                    1e-15);
    }
    /* A period of 0 counted in iterations is the whole training: with the
     * iterations of an epoch and MaxEpochs, MaxEpochs x those. */
    dla_learn_rate_schedule whole = {.method = "polynomial", .frequency_unit = "iteration"};
    assert_true(isnan(dla_learn_rate_at(&whole, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "needs the iterations of an epoch"));
    assert_true(dla_learn_rate_in_training(&whole, 1, 2, 16, 5, 6) == 1 - 15 / 30.0);
}

/* MATLAB's warmupLearnRate ("warmup": 5 iterations from 0 to the full rate)
 * and lists of schedules, {s1, s2, ...}: a schedule that ends (warmup,
 * polynomial) hands over to the next, which counts its own steps from
 * there (polynomialLearnRate's page: with {"warmup", schedule}, training
 * iteration 15 is the schedule's 10th). */
static void warmup_and_lists_of_schedules_run_in_turn(void **state)
{
    (void)state;
    dla_learn_rate_schedule w = {.method = "warmup"};
    const double ramp[] = {0.2, 0.4, 0.6, 0.8, 1, 1, 1};
    for (int i = 1; i <= 7; i++)
        assert_true(fabs(dla_learn_rate_at(&w, 0.1, 1, i) - 0.1 * ramp[i - 1]) < 1e-15);
    /* The same bits as dlaccel's multiplying warm-up of 5 iterations. */
    dla_learn_rate_schedule old = {.warmup_iterations = 5};
    for (int i = 1; i <= 7; i++)
        assert_true(dla_learn_rate_at(&w, 0.1, 1, i) == dla_learn_rate_at(&old, 0.1, 1, i));
    dla_learn_rate_schedule wf = {.method = "warmup", .warmup_start_factor = 0.5,
                                  .final_factor = 2, .period = 2};
    assert_true(dla_learn_rate_at(&wf, 1, 1, 1) == 0.5 + 1.5 * 0.5);
    assert_true(dla_learn_rate_at(&wf, 1, 1, 2) == 2 && dla_learn_rate_at(&wf, 1, 1, 9) == 2);

    /* {"warmup", polynomial by iteration}: iteration 15 is k = 9, the 10th. */
    dla_learn_rate_schedule po = {.method = "polynomial", .period = 20,
                                  .frequency_unit = "iteration"};
    dla_learn_rate_schedule list = {.method = "warmup", .next = &po};
    assert_true(fabs(dla_learn_rate_at(&list, 1, 1, 5) - 1) < 1e-15);
    assert_true(dla_learn_rate_at(&list, 1, 1, 6) == 1);
    assert_true(dla_learn_rate_at(&list, 1, 2, 15) == 1 - 9 / 20.0);
    assert_true(dla_learn_rate_at(&list, 1, 9, 40) == 0); /* the last holds its end */
    /* By epoch: {warmupLearnRate(FrequencyUnit="epoch"), polynomial}:
     * epoch 15 is the polynomial's 10th. */
    dla_learn_rate_schedule pe = {.method = "polynomial", .period = 20};
    dla_learn_rate_schedule we = {.method = "warmup", .frequency_unit = "epoch", .next = &pe};
    assert_true(dla_learn_rate_at(&we, 1, 3, 100) == 0.6);
    assert_true(dla_learn_rate_at(&we, 1, 15, 1) == 1 - 9 / 20.0);
    /* A polynomial hands over too: {polynomial 2 epochs, cyclical}. */
    dla_learn_rate_schedule cy = {.method = "cyclical", .period = 2, .max_factor = 3};
    dla_learn_rate_schedule pc = {.method = "polynomial", .period = 2, .final_factor = 0.5,
                                  .next = &cy};
    const double pcw[] = {1, 0.75, 1, 3, 1, 3};
    for (int e = 1; e <= 6; e++)
        assert_true(dla_learn_rate_at(&pc, 1, e, e) == pcw[e - 1]);

    /* Units that change: {"warmup" (iterations), piecewise by epoch} with 4
     * iterations an epoch: the warm-up ends at iteration 5, in epoch 2,
     * which the piecewise schedule counts as its first. */
    dla_learn_rate_schedule pw = {.method = "piecewise", .drop_factor = 0.5, .drop_period = 1};
    dla_learn_rate_schedule wp = {.method = "warmup", .next = &pw};
    assert_true(dla_learn_rate_in_training(&wp, 1, 2, 5, 4, 0) == 1);
    assert_true(dla_learn_rate_in_training(&wp, 1, 2, 8, 4, 0) == 1);
    assert_true(dla_learn_rate_in_training(&wp, 1, 3, 9, 4, 0) == 0.5);
    assert_true(dla_learn_rate_in_training(&wp, 1, 5, 17, 4, 0) == 0.125);
    /* Without the iterations of an epoch, that is refused, not guessed. */
    assert_true(dla_learn_rate_at(&wp, 1, 1, 2) == 0.4); /* still the warm-up's turn */
    assert_true(isnan(dla_learn_rate_at(&wp, 1, 3, 9)));
    assert_non_null(strstr(dla_last_error(), "from counting iterations to counting epochs needs "
                                             "the iterations of an epoch"));
    /* Each function's errors name it (dla_learn_rate_in_training's said
     * "dla_learn_rate_at"). */
    assert_true(isnan(dla_learn_rate_in_training(&wp, 1, 3, 9, 0, 0)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_in_training: a list of schedules"));
    assert_true(isnan(dla_learn_rate_at(&wp, 1, 3, 9)));
    assert_non_null(strstr(dla_last_error(), "dla_learn_rate_at: a list of schedules"));

    /* Bad lists: a loop, a later schedule's multiplying warm-up, a bad
     * schedule anywhere in the list. */
    dla_learn_rate_schedule loop = {.method = "warmup"};
    loop.next = &loop;
    assert_true(isnan(dla_learn_rate_at(&loop, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "a list of more than 64 schedules"));
    dla_learn_rate_schedule late = {.method = "none", .warmup_iterations = 3};
    dla_learn_rate_schedule head = {.method = "warmup", .next = &late};
    assert_true(isnan(dla_learn_rate_at(&head, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "schedule 2 of the list has warmup_iterations 3"));
    dla_learn_rate_schedule twice = {.method = "warmup", .warmup_iterations = 3};
    assert_true(isnan(dla_learn_rate_at(&twice, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "give one warm-up"));
    dla_learn_rate_schedule badlast = {.method = "exponential", .drop_factor = 4};
    head.next = &badlast;
    assert_true(isnan(dla_learn_rate_at(&head, 1, 1, 1)));
    assert_non_null(strstr(dla_last_error(), "drop_factor 4"));

    /* trainingOptions: "warmup" resolves to 5 iterations up to 1; a list is
     * checked whole, its bad schedule named. */
    dla_training_options o = {.learn_rate_schedule = {.method = "warmup"}}, r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    assert_int_equal(r.learn_rate_schedule.period, 5);
    assert_true(r.learn_rate_schedule.final_factor == 1);
    assert_string_equal(r.learn_rate_schedule.frequency_unit, "iteration");
    char text[4096];
    assert_true(dla_training_options_describe(&o, text, sizeof text) > 0);
    assert_non_null(strstr(text, "NumSteps: 5\n"));
    assert_non_null(strstr(text, "FrequencyUnit: 'iteration'\n"));
    for (int i = 1; i <= 6; i++)
        assert_true(dla_learn_rate_at(&r.learn_rate_schedule, 0.1, 1, i) ==
                    dla_learn_rate_at(&w, 0.1, 1, i));
    o.learn_rate_schedule = head;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_training_options: LearnRateSchedule: drop_factor 4"));
    dla_training_options lb = {.solver = "lbfgs", .learn_rate_schedule = {.next = &pw}};
    assert_int_equal(dla_training_options_resolve(&lb, &r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "LearnRateSchedule"));
}

static void a_network_trains_through_its_learnables_table(void **state)
{
    (void)state;
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL), dla_fc_layer(1, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_tensor **values = dla_table_values(dla_net_learnables(net));
    dla_tensor *old = dla_tensor_retain(values[0]);
    dla_scope_begin();
    dla_tensor *g[2] = {dla_ones(DLA_F32, "", DLA_DIMS(1, 2)), dla_ones(DLA_F32, "", DLA_DIMS(1, 1))};
    dla_tensor *vel[2] = {NULL, NULL};
    assert_int_equal(dla_sgdmupdate(2, values, g, vel, 0.5, 0.9), DLA_OK);
    /* The network sees the new weights (old - 0.5). */
    dla_tensor *now = dla_net_get(net, "fc", "Weights");
    assert_true(now != old);
    assert_true(fabs(dla_tensor_item(now, 1) - (dla_tensor_item(old, 1) - 0.5)) < 1e-6);
    /* An error among the gradients changes nothing. */
    dla_tensor *bad[2] = {dla_ones(DLA_F32, "", DLA_DIMS(1, 2)),
                          dla_reshape(dla_ones(DLA_F32, "", DLA_DIMS(1, 1)), "", DLA_DIMS(3))};
    assert_int_equal(dla_tensor_status(bad[1]), DLA_ERR_SHAPE);
    dla_tensor *before = values[0];
    assert_int_equal(dla_sgdmupdate(2, values, bad, vel, 0.5, 0.9), DLA_ERR_SHAPE);
    assert_true(values[0] == before);
    assert_non_null(strstr(dla_last_error(), "dla_sgdmupdate: entry 2"));
    assert_int_equal(dla_sgdmupdate(2, values, (dla_tensor *[]){bad[0], dla_ones(DLA_F32, "", DLA_DIMS(2, 1))},
                                    vel, 0.5, 0.9), DLA_ERR_SHAPE);
    assert_int_equal(dla_sgdmupdate(2, values, g, vel, -1, 0.9), DLA_ERR_INVALID_ARGUMENT);
    /* An infinite learning rate (a schedule that divided by zero) made
     * every parameter inf or NaN and returned DLA_OK. */
    assert_int_equal(dla_sgdmupdate(2, values, g, vel, INFINITY, 0.9), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "learnRate inf must be finite and >= 0"));
    assert_true(values[0] == before);
    dla_tensor *avg[2] = {NULL, NULL}, *avg2[2] = {NULL, NULL};
    assert_int_equal(dla_adamupdate(2, values, g, avg, avg2, 1, INFINITY, 0.9, 0.999, 1e-8),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_rmspropupdate(2, values, g, avg2, INFINITY, 0.9, 1e-8),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_true(values[0] == before && !avg[0] && !avg2[0]);
    /* An infinite epsilon divided every step to 0: nothing moved, and the
     * update returned DLA_OK. */
    assert_int_equal(dla_adamupdate(2, values, g, avg, avg2, 1, 0.1, 0.9, 0.999, INFINITY),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "epsilon inf finite and > 0"));
    assert_int_equal(dla_rmspropupdate(2, values, g, avg2, 0.1, 0.9, INFINITY),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "epsilon inf finite and > 0"));
    assert_true(values[0] == before && !avg[0] && !avg2[0]);
    dla_scope_end();
    dla_optim_free(2, vel);
    dla_tensor_release(old);
    dla_net_free(net);
}

/* The testmem device (testutil.h); skips the test without it. */
static dla_device *testmem_or_skip(void)
{
    dla_device *d = tu_testmem_device();
    if (!d)
        skip();
    return d;
}

/* A state or gradient on another device than its parameter (a network
 * moved with dla_net_to_device in the middle of a loop, its velocity left
 * behind) is refused naming the entry, the list and both devices. Before:
 * "dla_sgdmupdate: entry 1: dla_sub: arguments a and b are on cpu:0 and
 * testmem:0", an op the caller never called, naming no list. */
static void a_state_on_another_device_is_refused_naming_it(void **state)
{
    (void)state;
    dla_device *tm = testmem_or_skip(), *cpu = dla_device_get("cpu:0");
    assert_non_null(cpu);
    dla_scope_begin();
    dla_tensor *p[1] = {dla_keep(dla_tensor_to_device(dla_ones(DLA_F32, "", DLA_DIMS(3, 1)), tm))};
    dla_tensor *g[1] = {dla_tensor_to_device(dla_ones(DLA_F32, "", DLA_DIMS(3, 1)), tm)};
    dla_tensor *v[1] = {dla_keep(dla_tensor_to_device(dla_ones(DLA_F32, "", DLA_DIMS(3, 1)), cpu))};
    dla_tensor *none[1] = {NULL}, *before = p[0];
    assert_int_equal(dla_sgdmupdate(1, p, g, v, 0.1, 0.9), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_sgdmupdate: entry 1: the parameter is on "
                                             "testmem:0, its velocity on cpu:0; move it with "
                                             "dla_tensor_to_device"));
    assert_int_equal(dla_adamupdate(1, p, g, none, v, 1, 0.1, 0.9, 0.999, 1e-8),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "its avg_sq_grad on cpu:0"));
    assert_int_equal(dla_rmspropupdate(1, p, g, v, 0.1, 0.9, 1e-8), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "its avg_sq_grad on cpu:0"));
    dla_tensor *gc[1] = {dla_tensor_to_device(g[0], cpu)};
    assert_int_equal(dla_sgdmupdate(1, p, gc, none, 0.1, 0.9), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "its gradient on cpu:0"));
    assert_true(p[0] == before && !none[0]);
    /* On one device, the step is taken there. */
    dla_tensor *vt[1] = {NULL};
    assert_int_equal(dla_sgdmupdate(1, p, g, vt, 0.1, 0.9), DLA_OK);
    assert_true(dla_tensor_device(p[0]) == tm && dla_tensor_device(vt[0]) == tm);
    assert_vec(p[0], 3, (double[]){0.9, 0.9, 0.9}, 1e-7);
    dla_scope_end();
    dla_optim_free(1, p);
    dla_optim_free(1, v);
    dla_optim_free(1, vt);
}

static dla_tensor *to_double(void *ctx, int nargs, dla_tensor *const *args)
{
    (void)ctx;
    (void)nargs;
    return dla_cast(args[0], DLA_F64);
}

/* MATLAB's net = dlupdate(@double, net), written as dla_dlupdate over the
 * Learnables' values, makes a double network: trainnet trains it in
 * double, and what it returns is double. Before: dla_net_copy (trainnet's
 * copy) initialized the copy with the dtype the network was made with,
 * casting every value back to single in silence, so the trained network
 * was single and its weights off by single's rounding; dla_net_save
 * refused the network ("double in a single network"). The trained
 * weights are checked against SGDM steps computed here in double, with
 * L2 regularization (weights only: a bias's L2 factor is 0), a bias
 * learn-rate factor of 2, per-entry norm clipping, a piecewise schedule
 * and a last partial mini-batch discarded (5 observations, batches of 2). */
static void a_network_cast_by_dlupdate_trains_in_double(void **state)
{
    (void)state;
    dla_layer *l[] = {dla_feature_input_layer(2, NULL),
                      dla_fc_layer(1, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_scope_begin();
    dla_tensor *ex = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 1));
    assert_int_equal(dla_net_init(net, 1, &ex), DLA_OK);
    dla_table *lt = dla_net_learnables(net);
    const int iw = dla_table_find(lt, "fc", "Weights"), ib = dla_table_find(lt, "fc", "Bias");
    assert_int_equal(dla_dlupdate(to_double, NULL, dla_table_count(lt), dla_table_values(lt), 0,
                                  NULL), DLA_OK);
    const double w0[3] = {0.3, -0.2, 0.1};
    assert_int_equal(dla_table_set_value(lt, iw, dla_tensor_from_host(w0, DLA_F64, "",
                                                                      DLA_DIMS(1, 2))), DLA_OK);
    assert_int_equal(dla_table_set_value(lt, ib, dla_tensor_from_host(w0 + 2, DLA_F64, "",
                                                                      DLA_DIMS(1, 1))), DLA_OK);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "fc", "Bias", 2), DLA_OK);
    dla_net *copy = dla_net_copy(net);
    assert_non_null(copy);
    assert_int_equal(dla_tensor_dtype(dla_net_get(copy, "fc", "Weights")), DLA_F64);
    dla_net_free(copy);

    enum { N = 5 };
    const double x[2 * N] = {1, 2, -1, 0.5, 0.3, -2, 2, 1, -0.7, 0.4};
    const double t[N] = {0.5, -1, 2, 1.5, 0};
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F64, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F64, "CB", DLA_DIMS(1, N))};
    const double lr0 = 0.05, l2 = 0.01, thr = 0.5, mom = 0.9;
    dla_training_options o = {
        .max_epochs = 3, .mini_batch_size = 2, .initial_learn_rate = lr0, .momentum = mom,
        .learn_rate_schedule = {.method = "piecewise", .drop_factor = 0.5, .drop_period = 1},
        .l2_regularization = l2, .gradient_threshold = thr, .shuffle = "never", .verbose = -1};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    assert_int_equal(dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 6);

    double p[3] = {w0[0], w0[1], w0[2]}, v[3] = {0, 0, 0};
    const double factor[3] = {1, 1, 2};
    for (int epoch = 1, it = 0; epoch <= 3; epoch++)
        for (int b = 0; b + 2 <= N; b += 2, it++) {
            /* mse: the mean of the squared errors of the batch's 2. */
            double g[3] = {0, 0, 0};
            for (int j = b; j < b + 2; j++) {
                const double r = p[0] * x[2 * j] + p[1] * x[2 * j + 1] + p[2] - t[j];
                g[0] += r * x[2 * j];
                g[1] += r * x[2 * j + 1];
                g[2] += r;
            }
            g[0] += l2 * p[0];
            g[1] += l2 * p[1];
            const double nw = sqrt(g[0] * g[0] + g[1] * g[1]), nb = fabs(g[2]);
            for (int i = 0; i < 2 && nw > thr; i++)
                g[i] *= thr / nw;
            if (nb > thr)
                g[2] *= thr / nb;
            const double lr = lr0 * pow(0.5, epoch - 1);
            tu_assert_near(info->learn_rate[it], lr, 1e-15);
            for (int i = 0; i < 3; i++) {
                v[i] = mom * v[i] - lr * factor[i] * g[i];
                p[i] += v[i];
            }
        }
    dla_tensor *w = dla_net_get(trained, "fc", "Weights"), *bias = dla_net_get(trained, "fc", "Bias");
    assert_int_equal(dla_tensor_dtype(w), DLA_F64);
    tu_assert_near(dla_tensor_item(w, 0), p[0], 1e-13);
    tu_assert_near(dla_tensor_item(w, 1), p[1], 1e-13);
    tu_assert_near(dla_tensor_item(bias, 0), p[2], 1e-13);
    char path[] = "/tmp/dla_test_optim_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(dla_net_save(net, path), DLA_OK);
    dla_net *loaded = NULL;
    assert_int_equal(dla_net_load(path, &loaded), DLA_OK);
    unlink(path);
    assert_int_equal(dla_tensor_dtype(dla_net_get(loaded, "fc", "Weights")), DLA_F64);
    dla_net_free(loaded);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_scope_end();
    dla_net_free(net);
}

int main(void)
{
    /* testmem as the second device, after the cpu. */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    const struct CMUnitTest tests[] = {
        TU_TEST(sgdm_steps_as_matlab_computes_them),
        TU_TEST(a_zero_rate_leaves_the_state_as_matlab),
        TU_TEST(adam_steps_with_bias_correction),
        TU_TEST(rmsprop_steps_as_matlab_computes_them),
        TU_TEST(dlupdate_applies_a_function_to_every_entry),
        TU_TEST(l2_and_clipping_treat_gradients_as_trainnet_does),
        TU_TEST(absolute_value_clipping_gives_the_threshold_itself),
        TU_TEST(norm_clipping_scales_huge_and_tiny_single_gradients),
        TU_TEST(norm_clipping_scales_huge_double_gradients),
        TU_TEST(gradients_and_states_of_other_dims_are_refused),
        TU_TEST(schedules_drop_piecewise_and_warm_up),
        TU_TEST(piecewise_and_exponential_take_their_period_either_way),
        TU_TEST(decaying_schedules_follow_their_formulas),
        TU_TEST(a_schedule_function_gives_the_rate),
        TU_TEST(cyclical_rises_and_falls_each_period),
        TU_TEST(schedules_step_by_iteration_and_take_matlabs_factors),
        TU_TEST(warmup_and_lists_of_schedules_run_in_turn),
        TU_TEST(a_network_trains_through_its_learnables_table),
        TU_TEST(a_network_cast_by_dlupdate_trains_in_double),
        TU_TEST(a_state_on_another_device_is_refused_naming_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

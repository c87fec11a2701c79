/*
 * test_nnops_act.c - leakyrelu, elu, gelu, softmax and logsoftmax: values
 * against the formulas evaluated on the host, finite-difference gradients
 * for every option and format, and the error messages.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"
#include "tu_assert.h"

static const double xs[8] = {-3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 4.0};

static void test_leakyrelu_and_elu_follow_matlab(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = nn_from(xs, "CB", DLA_DIMS(4, 2));
    double want[8];
    for (int i = 0; i < 8; i++)
        want[i] = xs[i] > 0 ? xs[i] : DLA_LEAKYRELU_SCALE * xs[i];
    nn_expect(dla_leakyrelu(x, DLA_LEAKYRELU_SCALE), "CB", DLA_DIMS(4, 2), want, 1e-15);
    for (int i = 0; i < 8; i++)
        want[i] = xs[i] > 0 ? xs[i] : 0.3 * xs[i];
    nn_expect(dla_leakyrelu(x, 0.3), "CB", DLA_DIMS(4, 2), want, 1e-15);
    for (int i = 0; i < 8; i++)
        want[i] = xs[i] > 0 ? xs[i] : expm1(xs[i]);
    nn_expect(dla_elu(x, DLA_ELU_ALPHA), "CB", DLA_DIMS(4, 2), want, 1e-14);
    for (int i = 0; i < 8; i++)
        want[i] = xs[i] > 0 ? xs[i] : 2.5 * expm1(xs[i]);
    nn_expect(dla_elu(x, 2.5), "CB", DLA_DIMS(4, 2), want, 1e-14);
    /* single precision goes through the same kernels */
    dla_tensor *xf = dla_cast(x, DLA_F32);
    dla_tensor *yf = dla_elu(xf, 1.0);
    assert_int_equal(dla_tensor_dtype(yf), DLA_F32);
    assert_true(fabs(dla_tensor_item(yf, 0) - expm1(-3.0)) < 1e-6);
    dla_scope_end();
}

static void test_gelu_uses_erf_by_default_and_tanh_on_request(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = nn_from(xs, "SSCB", DLA_DIMS(2, 2, 2, 1));
    double exact[8], approx[8];
    for (int i = 0; i < 8; i++) {
        double v = xs[i];
        exact[i] = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
        approx[i] = 0.5 * v * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    }
    nn_expect(dla_gelu(x, NULL), "SSCB", DLA_DIMS(2, 2, 2, 1), exact, 1e-14);
    nn_expect(dla_gelu(x, "none"), "SSCB", DLA_DIMS(2, 2, 2, 1), exact, 1e-14);
    nn_expect(dla_gelu(x, "tanh"), "SSCB", DLA_DIMS(2, 2, 2, 1), approx, 1e-14);
    /* the two differ, so the option really selects */
    assert_true(fabs(exact[0] - approx[0]) > 1e-5);
    dla_scope_end();
}

static dla_status gelu_tanh_grad(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_sum(dla_gelu(in[0], "tanh"), 0, NULL);
    return dla_gradient(out[0], 1, in, &out[1]);
}

/* Where x is negative, 1 + tanh(u) cancels: single precision gave
 * -2.98e-7 for -2.30e-7 at x = -5 (and the gradient 30% off), and a
 * device whose tanh stops at -0.99999994 (PoCL's) gave -3e-4 at x = -1e4
 * and a gradient of -6380 there. The tail follows x * sigmoid(2u). */
static void test_gelu_tanh_keeps_its_negative_tail_in_single(void **state)
{
    (void)state;
    dla_scope_begin();
    static const double tail[6] = {-1e4, -20.0, -9.0, -5.0, -3.0, 2.0};
    const double c = sqrt(2.0 / 3.14159265358979323846), k = 0.044715;
    dla_tensor *x = dla_cast(nn_from(tail, "CB", DLA_DIMS(3, 2)), DLA_F32);
    dla_tensor *y = dla_gelu(x, "tanh"), *out[2];
    assert_int_equal(dla_feval(gelu_tanh_grad, NULL, 1, &x, 2, out), DLA_OK);
    for (int i = 0; i < 6; i++) {
        const double v = (float)tail[i], u2 = 2.0 * c * v * (1.0 + k * v * v);
        const double sg = 1.0 / (1.0 + exp(-u2));
        const double want = v * sg, dwant = sg + v * sg * (1.0 - sg) * 2.0 * c * (1.0 + 3.0 * k * v * v);
        const double got = dla_tensor_item(y, i), dgot = dla_tensor_item(out[1], i);
        if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-30))
            fail_msg("gelu tanh(%g) is %.9g, want %.9g", v, got, want);
        if (!(fabs(dgot - dwant) <= 1e-5 * fabs(dwant) + 1e-30))
            fail_msg("its gradient at %g is %.9g, want %.9g", v, dgot, dwant);
    }
    dla_scope_end();
}

static dla_status elu_grad(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = dla_sum(dla_elu(in[0], *(const double *)ctx), 0, NULL);
    return dla_gradient(out[0], 1, in, &out[1]);
}

/* elu's slope is 1 wherever x > 0, +Inf included: the backward blended
 * the two pieces as step(x) + (1 - step(x)) .* (y + alpha), and at
 * x = +Inf that is 1 + 0 * Inf, NaN. */
static void test_elu_gradient_is_one_at_positive_infinity(void **state)
{
    (void)state;
    static const double v[6] = {INFINITY, 3.0, 0.0, -1.0, -INFINITY, 1e30};
    for (int t = 0; t < 2; t++) {
        dla_scope_begin();
        double alpha = 0.7;
        dla_tensor *x = dla_cast(nn_from(v, "CB", DLA_DIMS(2, 3)), t ? DLA_F64 : DLA_F32), *out[2];
        assert_int_equal(dla_feval(elu_grad, &alpha, 1, &x, 2, out), DLA_OK);
        for (int i = 0; i < 6; i++) {
            const double want = v[i] > 0 ? 1.0 : alpha * exp(v[i]);
            tu_assert_near(dla_tensor_item(out[1], i), want, 1e-6);
        }
        dla_scope_end();
    }
}

static dla_status gelu_grad(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = dla_sum(dla_gelu(in[0], ctx), 0, NULL);
    return dla_gradient(out[0], 1, in, &out[1]);
}

/* Far out gelu's slope is 1 (x > 0) or 0: with "tanh" the backward's
 * x s (1 - s) (2c + 6ck x^2) read 0 * Inf, NaN, once x^2 overflowed (|x|
 * past 1.8e19 in single, 1.3e154 in double), at finite x. */
static void test_gelu_gradient_is_finite_far_out(void **state)
{
    (void)state;
    static const double v[2][4] = {{1e20, -1e20, 3e38, -2.0}, {1e200, -1e200, 1e300, -2.0}};
    const char *approx[2] = {"tanh", "none"};
    for (int t = 0; t < 2; t++)
        for (int a = 0; a < 2; a++) {
            dla_scope_begin();
            dla_tensor *x = dla_cast(nn_from(v[t], "CB", DLA_DIMS(2, 2)), t ? DLA_F64 : DLA_F32);
            dla_tensor *out[2];
            assert_int_equal(dla_feval(gelu_grad, (void *)approx[a], 1, &x, 2, out), DLA_OK);
            for (int i = 0; i < 3; i++)
                if (!(dla_tensor_item(out[1], i) == (v[t][i] > 0 ? 1.0 : 0.0)))
                    fail_msg("%s gelu %s: gradient at %g is %g, want %g", t ? "double" : "single",
                             approx[a], v[t][i], dla_tensor_item(out[1], i), v[t][i] > 0 ? 1.0 : 0.0);
            /* and as before near 0: Phi(x) + x phi(x) at -2, within the approximation */
            tu_assert_near(dla_tensor_item(out[1], 3), -0.0853, 2e-3);
            dla_scope_end();
        }
}

/* softmax over C on the host for x with dims (before C) x C x (after C). */
static void host_softmax(const double *x, int64_t pre, int64_t c, int64_t post, int log_out,
                         double *y)
{
    for (int64_t q = 0; q < post; q++)
        for (int64_t p = 0; p < pre; p++) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < c; k++)
                m = fmax(m, x[p + pre * (k + c * q)]);
            for (int64_t k = 0; k < c; k++)
                s += exp(x[p + pre * (k + c * q)] - m);
            for (int64_t k = 0; k < c; k++) {
                double v = x[p + pre * (k + c * q)] - m;
                y[p + pre * (k + c * q)] = log_out ? v - log(s) : exp(v) / s;
            }
        }
}

static void test_softmax_normalizes_over_the_channel_dim_of_each_format(void **state)
{
    (void)state;
    dla_scope_begin();
    struct {
        const char *fmt;
        int nd;
        int64_t dims[4];
        int64_t pre, c, post;
    } cases[] = {
        {"CB", 2, {5, 3}, 1, 5, 3},
        {"SSCB", 4, {2, 3, 4, 2}, 6, 4, 2},
        {"CBT", 3, {3, 2, 4}, 1, 3, 8},
        {"SCBT", 4, {2, 3, 2, 2}, 2, 3, 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t n = cases[k].pre * cases[k].c * cases[k].post;
        double *v = nn_values(n), *want = malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            v[i] *= 3.0;
        dla_tensor *x = nn_from(v, cases[k].fmt, cases[k].nd, cases[k].dims);
        host_softmax(v, cases[k].pre, cases[k].c, cases[k].post, 0, want);
        nn_expect(dla_softmax(x), cases[k].fmt, cases[k].nd, cases[k].dims, want, 1e-14);
        host_softmax(v, cases[k].pre, cases[k].c, cases[k].post, 1, want);
        nn_expect(dla_logsoftmax(x), cases[k].fmt, cases[k].nd, cases[k].dims, want, 1e-13);
        free(v);
        free(want);
    }
    dla_scope_end();
}

static void test_softmax_stays_finite_for_large_inputs(void **state)
{
    (void)state;
    dla_scope_begin();
    const double v[3] = {1000.0, 999.0, -1000.0};
    dla_tensor *x = nn_from(v, "CB", DLA_DIMS(3, 1));
    double e1 = exp(-1.0), s = 1.0 + e1;
    nn_expect(dla_softmax(x), "CB", DLA_DIMS(3, 1), (double[]){1 / s, e1 / s, 0.0}, 1e-14);
    /* log-softmax keeps what softmax rounds to 0: -2000 - log(s) */
    nn_expect(dla_logsoftmax(x), "CB", DLA_DIMS(3, 1),
              (double[]){-log(s), -1.0 - log(s), -2000.0 - log(s)}, 1e-14);
    /* single precision: same, no inf or NaN */
    dla_tensor *y = dla_softmax(dla_cast(x, DLA_F32));
    assert_true(fabs(dla_tensor_item(y, 0) - 1 / s) < 1e-6);
    assert_true(dla_tensor_item(y, 2) == 0.0);
    dla_scope_end();
}

/* An x with no channels (C of 0) has an empty softmax, as MATLAB's
 * softmax of an empty dlarray; the channel maximum, a max over nothing,
 * made the reduce kernel refuse it ("dla_softmax: cpu reduce: argument x:
 * dims 0x3 leave nothing to take the max of"), and dla_attention of keys
 * of no length with it. Eagerly, replayed and through the gradient. */
static dla_status empty_softmax_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = *(const int *)ctx ? dla_logsoftmax(in[0]) : dla_softmax(in[0]);
    return dla_gradient(dla_sum(out[0], 0, NULL), 1, in, out + 1);
}

static void test_softmax_of_no_channels_is_empty(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 0 x 2^40 too: its per-column sums, 4 TiB, were allocated first,
     * and the answer was "out of memory". */
    static const char *const fmt[4] = {"CB", "SSCB", "CBT", "CB"};
    const int64_t dims[4][4] = {{0, 3}, {2, 2, 0, 2}, {0, 2, 3}, {0, (int64_t)1 << 40}};
    const int nd[4] = {2, 4, 3, 2};
    for (int f = 0; f < 4; f++)
        for (int log = 0; log < 2; log++) {
            dla_tensor *x = dla_zeros(DLA_F32, fmt[f], nd[f], dims[f]);
            nn_expect(log ? dla_logsoftmax(x) : dla_softmax(x), fmt[f], nd[f], dims[f], NULL, 0);
            dla_accel *af = dla_accelerate(empty_softmax_loss, NULL);
            for (int call = 0; call < 4; call++) {
                dla_tensor *out[2];
                dla_status st = call == 0 ? dla_feval(empty_softmax_loss, &log, 1, &x, 2, out)
                                          : dla_accel_feval(af, &log, 1, &x, 2, out);
                if (st != DLA_OK)
                    fail_msg("%s log %d call %d: %s", fmt[f], log, call, dla_last_error());
                assert_int_equal(dla_tensor_numel(out[0]), 0);
                assert_string_equal(dla_tensor_format(out[0]), fmt[f]);
                assert_int_equal(dla_tensor_numel(out[1]), 0);
            }
            dla_accel_free(af);
        }
    dla_scope_end();
}

/* --------------------------------------------------------------- gradients */

typedef struct act_case {
    int which; /* 0 leakyrelu, 1 elu, 2 gelu, 3 softmax, 4 logsoftmax */
    double p;
    const char *s;
} act_case;

static dla_tensor *act_fn(void *ctx, dla_tensor *const *in)
{
    const act_case *c = ctx;
    switch (c->which) {
    case 0: return dla_leakyrelu(in[0], c->p);
    case 1: return dla_elu(in[0], c->p);
    case 2: return dla_gelu(in[0], c->s);
    case 3: return dla_softmax(in[0]);
    default: return dla_logsoftmax(in[0]);
    }
}

static void test_activation_gradients_match_finite_differences(void **state)
{
    (void)state;
    act_case cases[] = {
        {0, DLA_LEAKYRELU_SCALE, NULL}, {0, 0.3, NULL}, {1, DLA_ELU_ALPHA, NULL}, {1, 0.5, NULL},
        {2, 0, NULL}, {2, 0, "none"}, {2, 0, "tanh"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dla_tensor *x = nn_rand("SSCB", DLA_DIMS(3, 2, 4, 2));
        gc_check(act_fn, &cases[k], 1, &x, (int[]){1}, 1e-6);
        gc_check2(act_fn, &cases[k], 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
    }
    const char *fmts[] = {"CB", "SSCB", "CBT"};
    const int64_t dims[][4] = {{5, 3}, {2, 3, 4, 2}, {4, 2, 3}};
    const int nds[] = {2, 4, 3};
    for (int f = 0; f < 3; f++)
        for (int which = 3; which <= 4; which++) {
            act_case c = {which, 0, NULL};
            dla_tensor *x = nn_rand(fmts[f], nds[f], dims[f]);
            gc_check(act_fn, &c, 1, &x, (int[]){1}, 1e-6);
            gc_check2(act_fn, &c, 1, &x, (int[]){1}, 1e-6);
            dla_tensor_release(x);
        }
}

/* ------------------------------------------------------------------ errors */

static void test_activation_errors_name_the_op_and_argument(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *plain = dla_ones(DLA_F64, "", DLA_DIMS(3, 4));
    nn_expect_error(dla_softmax(plain), DLA_ERR_FORMAT,
                    "dla_softmax: argument x (3x4, unformatted) has no \"C\" dim");
    dla_tensor *ssb = dla_ones(DLA_F64, "SSB", DLA_DIMS(2, 2, 3));
    nn_expect_error(dla_logsoftmax(ssb), DLA_ERR_FORMAT,
                    "dla_logsoftmax: argument x (2x2x3 SSB) has no \"C\" dim");
    dla_tensor *x = dla_ones(DLA_F64, "CB", DLA_DIMS(3, 2));
    nn_expect_error(dla_gelu(x, "erf"), DLA_ERR_INVALID_ARGUMENT,
                    "dla_gelu: argument approximation: \"erf\"; use \"none\" or \"tanh\"");
    nn_expect_error(dla_leakyrelu(x, NAN), DLA_ERR_INVALID_ARGUMENT,
                    "dla_leakyrelu: argument scale: nan is not finite");
    nn_expect_error(dla_elu(x, INFINITY), DLA_ERR_INVALID_ARGUMENT,
                    "dla_elu: argument alpha: inf is not finite");
    dla_tensor *ints = dla_ones(DLA_I32, "CB", DLA_DIMS(3, 2));
    nn_expect_error(dla_elu(ints, 1.0), DLA_ERR_DTYPE, "dla_elu: argument x: int32");
    nn_expect_error(dla_gelu(ints, NULL), DLA_ERR_DTYPE, "dla_gelu: argument x: int32");
    nn_expect_error(dla_softmax(ints), DLA_ERR_DTYPE, "dla_softmax: argument x: int32");
    /* sticky: an error in is the same error out */
    dla_tensor *e = dla_softmax(plain);
    assert_ptr_equal(dla_gelu(e, NULL), e);
    assert_ptr_equal(dla_leakyrelu(e, 0.1), e);
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_leakyrelu_and_elu_follow_matlab),
        TU_TEST(test_gelu_uses_erf_by_default_and_tanh_on_request),
        TU_TEST(test_gelu_tanh_keeps_its_negative_tail_in_single),
        TU_TEST(test_elu_gradient_is_one_at_positive_infinity),
        TU_TEST(test_gelu_gradient_is_finite_far_out),
        TU_TEST(test_softmax_normalizes_over_the_channel_dim_of_each_format),
        TU_TEST(test_softmax_stays_finite_for_large_inputs),
        TU_TEST(test_softmax_of_no_channels_is_empty),
        TU_TEST(test_activation_gradients_match_finite_differences),
        TU_TEST(test_activation_errors_name_the_op_and_argument),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

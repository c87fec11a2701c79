/*
 * test_nnops_fc.c - fullyconnect: values against a hand-worked case and a
 * naive host loop for "CB", "SSCB" (flattened S and C) and "CBT" inputs,
 * with and without bias; finite-difference gradients with respect to x,
 * weights and bias; error messages naming the shapes.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"

static void test_fullyconnect_by_hand(void **state)
{
    (void)state;
    dla_scope_begin();
    /* x: 3 channels, 2 observations; W: 2x3; b: 2 */
    dla_tensor *x = nn_from((double[]){1, 2, 3, -1, 0, 2}, "CB", DLA_DIMS(3, 2));
    dla_tensor *w = nn_from((double[]){1, 0, 2, -1, 0, 3}, "", DLA_DIMS(2, 3)); /* [1 2 0; 0 -1 3] */
    dla_tensor *b = nn_from((double[]){10, 20}, "", DLA_DIMS(2, 1));
    /* W x(:,1) = [1+4, -2+9] = [5, 7]; W x(:,2) = [-1, 6] */
    nn_expect(dla_fullyconnect(x, w, b), "CB", DLA_DIMS(2, 2), (double[]){15, 27, 9, 26}, 0);
    nn_expect(dla_fullyconnect(x, w, NULL), "CB", DLA_DIMS(2, 2), (double[]){5, 7, -1, 6}, 0);
    dla_scope_end();
}

/* y(o, n) = sum_k W(o, k) x(k, n) + b(o) for x as K x N. */
static void ref_fc(const double *w, const double *x, const double *b, int64_t o, int64_t k,
                   int64_t n, double *y)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < o; i++) {
            double s = b ? b[i] : 0.0;
            for (int64_t q = 0; q < k; q++)
                s += w[i + o * q] * x[q + k * j];
            y[i + o * j] = s;
        }
}

static void test_fullyconnect_flattens_space_and_channels_and_keeps_time(void **state)
{
    (void)state;
    dla_scope_begin();
    struct {
        const char *fmt;
        int nd;
        int64_t dims[4];
        int64_t k, n;
        const char *yfmt;
        int ynd;
        int64_t ydims[3];
    } cases[] = {
        {"SSCB", 4, {2, 3, 2, 4}, 12, 4, "CB", 2, {5, 4}},
        {"CBT", 3, {3, 2, 4}, 3, 8, "CBT", 3, {5, 2, 4}},
        {"SCBT", 4, {2, 3, 2, 3}, 6, 6, "CBT", 3, {5, 2, 3}},
        {"SSC", 3, {2, 2, 3}, 12, 1, "CB", 2, {5, 1}},
        {"CT", 2, {4, 3}, 4, 3, "CBT", 3, {5, 1, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t k = cases[c].k, n = cases[c].n;
        double *xv = nn_values(k * n), *wv = nn_values(5 * k), *bv = nn_values(5);
        double *want = malloc(sizeof(double) * (size_t)(5 * n));
        dla_tensor *x = nn_from(xv, cases[c].fmt, cases[c].nd, cases[c].dims);
        dla_tensor *w = nn_from(wv, "", DLA_DIMS(5, k)), *b = nn_from(bv, "", DLA_DIMS(5));
        ref_fc(wv, xv, bv, 5, k, n, want);
        nn_expect(dla_fullyconnect(x, w, b), cases[c].yfmt, cases[c].ynd, cases[c].ydims, want,
                  1e-13);
        ref_fc(wv, xv, NULL, 5, k, n, want);
        nn_expect(dla_fullyconnect(x, w, NULL), cases[c].yfmt, cases[c].ynd, cases[c].ydims, want,
                  1e-13);
        free(xv), free(wv), free(bv), free(want);
    }
    /* weights laid out OutputSize x S x S x C, and a strided x */
    double *xv = nn_values(2 * 4 * 3 * 2), *wv = nn_values(5 * 2 * 2 * 3), want[10];
    dla_tensor *x = nn_from(xv, "SSCB", DLA_DIMS(2, 4, 3, 2));
    dla_tensor *xs = dla_slice(x, 2, 1, 2, DLA_END); /* 2x2x3x2, columns 1 and 3 */
    double xsv[24];
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 3; c++)
            for (int j = 0; j < 2; j++)
                for (int i = 0; i < 2; i++)
                    xsv[i + 2 * (j + 2 * (c + 3 * b))] = xv[i + 2 * (2 * j + 1 + 4 * (c + 3 * b))];
    dla_tensor *w4 = nn_from(wv, "", DLA_DIMS(5, 2, 2, 3));
    ref_fc(wv, xsv, NULL, 5, 12, 2, want);
    nn_expect(dla_fullyconnect(xs, w4, NULL), "CB", DLA_DIMS(5, 2), want, 1e-13);
    free(xv), free(wv);
    dla_scope_end();
}

typedef struct fc_case {
    int bias;
} fc_case;

static dla_tensor *fc_fn(void *ctx, dla_tensor *const *in)
{
    const fc_case *c = ctx;
    return dla_fullyconnect(in[0], in[1], c->bias ? in[2] : NULL);
}

static void test_fullyconnect_gradients_match_finite_differences(void **state)
{
    (void)state;
    struct {
        const char *fmt;
        int nd;
        int64_t dims[4];
        int wnd;
        int64_t wdims[4];
    } cases[] = {
        {"CB", 2, {4, 3}, 2, {5, 4}},
        {"SSCB", 4, {2, 3, 2, 3}, 2, {5, 12}},
        {"SSCB", 4, {2, 3, 2, 3}, 4, {5, 2, 3, 2}},
        {"CBT", 3, {3, 2, 4}, 2, {5, 3}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int bias = 0; bias < 2; bias++) {
            fc_case c = {bias};
            dla_tensor *in[3] = {nn_rand(cases[k].fmt, cases[k].nd, cases[k].dims),
                                 nn_rand("", cases[k].wnd, cases[k].wdims),
                                 nn_rand("", DLA_DIMS(1, 5))};
            gc_check(fc_fn, &c, bias ? 3 : 2, in, (int[]){1, 1, 1}, 1e-6);
            gc_check2(fc_fn, &c, bias ? 3 : 2, in, (int[]){1, 1, 1}, 1e-6);
            for (int i = 0; i < 3; i++)
                dla_tensor_release(in[i]);
        }
}

static void test_fullyconnect_errors_name_both_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "SSCB", DLA_DIMS(28, 28, 1, 2));
    dla_tensor *w = dla_ones(DLA_F64, "", DLA_DIMS(10, 100));
    nn_expect_error(dla_fullyconnect(x, w, NULL), DLA_ERR_SHAPE,
                    "dla_fullyconnect: argument weights: 10x100 is OutputSize 10 x 100 inputs, but "
                    "x (28x28x1x2 SSCB) has 784 inputs (its S and C dims)");
    dla_tensor *w2 = dla_ones(DLA_F64, "", DLA_DIMS(10, 784));
    dla_tensor *b = dla_ones(DLA_F64, "", DLA_DIMS(9, 1));
    nn_expect_error(dla_fullyconnect(x, w2, b), DLA_ERR_SHAPE,
                    "dla_fullyconnect: argument bias: 9x1 has 9 elements, but weights (10x784) has "
                    "OutputSize 10");
    dla_tensor *plain = dla_ones(DLA_F64, "", DLA_DIMS(784, 2));
    nn_expect_error(dla_fullyconnect(plain, w2, NULL), DLA_ERR_FORMAT,
                    "dla_fullyconnect: argument x (784x2 unformatted) has no \"C\" dim");
    dla_tensor *u = dla_ones(DLA_F64, "CBU", DLA_DIMS(784, 2, 2));
    nn_expect_error(dla_fullyconnect(u, w2, NULL), DLA_ERR_FORMAT,
                    "dla_fullyconnect: argument x (784x2x2 CBU) has \"U\" dims");
    dla_tensor *wf = dla_ones(DLA_F32, "", DLA_DIMS(10, 784));
    nn_expect_error(dla_fullyconnect(x, wf, NULL), DLA_ERR_DTYPE,
                    "dla_fullyconnect: argument weights (10x784) is single, x is double");
    /* single precision end to end */
    dla_tensor *y = dla_fullyconnect(dla_cast(x, DLA_F32), wf, NULL);
    assert_int_equal(dla_tensor_dtype(y), DLA_F32);
    assert_true(dla_tensor_item(y, 0) == 784.0);
    dla_scope_end();
}

/* A small network of the nn ops, as a model loss: conv-free, but every
 * family (normalization with its statistics, activation, pooling,
 * fullyconnect, softmax) with its gradients. */
static dla_status net_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[0], *off = in[1], *sc = in[2], *w = in[3], *b = in[4], *rm = in[5], *rv = in[6];
    dla_tensor *y, *m, *v;
    dla_batchnorm_train(x, off, sc, rm, rv, NULL, &y, &m, &v);
    y = dla_maxpool(dla_gelu(y, "tanh"), DLA_DIMS(2), &(dla_pool_options){.stride = {2, 2}});
    y = dla_logsoftmax(dla_fullyconnect(dla_layernorm(y, off, sc, NULL), w, b));
    out[0] = dla_sum(y, 0, NULL);
    out[1] = m;
    out[2] = v;
    return dla_gradient(out[0], 5, in, out + 3);
}

static void test_the_nn_ops_replay_under_dla_accelerate_as_eager(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[7] = {nn_rand("SSCB", DLA_DIMS(4, 4, 3, 2)), nn_rand("", DLA_DIMS(3)),
                         nn_rand("", DLA_DIMS(3)), nn_rand("", DLA_DIMS(5, 12)),
                         nn_rand("", DLA_DIMS(5)), nn_rand("", DLA_DIMS(3)),
                         nn_rand_pos("", DLA_DIMS(3))};
    dla_accel *af = dla_accelerate(net_loss, NULL);
    dla_tensor *eager[8], *fast[8];
    assert_int_equal(dla_feval(net_loss, NULL, 7, in, 8, eager), DLA_OK);
    for (int call = 0; call < 3; call++) /* a recording, then replays */
        assert_int_equal(dla_accel_feval(af, NULL, 7, in, 8, fast), DLA_OK);
    assert_true(dla_accel_hit_rate(af) > 60.0);
    for (int i = 0; i < 8; i++) {
        int64_t dims[DLA_MAX_DIMS];
        int nd = dla_tensor_dims(eager[i], dims);
        double *want = nn_fetch(eager[i]);
        nn_expect(fast[i], dla_tensor_format(eager[i]), nd, dims, want, 1e-13);
        free(want);
    }
    dla_accel_free(af);
    for (int i = 0; i < 7; i++)
        dla_tensor_release(in[i]);
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_fullyconnect_by_hand),
        TU_TEST(test_fullyconnect_flattens_space_and_channels_and_keeps_time),
        TU_TEST(test_fullyconnect_gradients_match_finite_differences),
        TU_TEST(test_fullyconnect_errors_name_both_shapes),
        TU_TEST(test_the_nn_ops_replay_under_dla_accelerate_as_eager),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

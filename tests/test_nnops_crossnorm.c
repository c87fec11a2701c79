/*
 * test_nnops_crossnorm.c - crosschannelnorm (local response normalization):
 * values against MATLAB's formula written out as a host loop for every
 * window size (odd, even, one, wider than C, up to INT64_MAX) and format, the defaults,
 * an unformatted x with data_format, finite-difference first and second
 * derivatives, a replay against eager, and the refusals.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"
#include "tu_assert.h"

/* MATLAB's definition: x seen as inner x C x outer (C at dim cdim of dims),
 * ss over channels c - floor((w-1)/2) .. c + floor(w/2) within 0..C-1. */
static void ref_lrn(const double *x, int nd, const int64_t *dims, int cdim, int64_t w,
                    double alpha, double beta, double k, double *y)
{
    int64_t inner = 1, outer = 1, nc = dims[cdim];
    for (int i = 0; i < cdim; i++)
        inner *= dims[i];
    for (int i = cdim + 1; i < nd; i++)
        outer *= dims[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < nc; c++)
            for (int64_t i = 0; i < inner; i++) {
                double ss = 0;
                /* The window's channels within 0..C-1 (w may be INT64_MAX). */
                const int64_t lo = c - (w - 1) / 2 > 0 ? c - (w - 1) / 2 : 0;
                const int64_t hi = w / 2 < nc - 1 - c ? c + w / 2 : nc - 1;
                for (int64_t j = lo; j <= hi; j++)
                    if (j >= 0 && j < nc) {
                        double v = x[i + inner * (j + nc * o)];
                        ss += v * v;
                    }
                const int64_t at = i + inner * (c + nc * o);
                y[at] = x[at] / pow(k + alpha * ss / (double)w, beta);
            }
}

static void expect_formula(const char *fmt, const char *data_format, int nd, const int64_t *dims,
                           int cdim, int64_t w, const dla_crosschannelnorm_options *o)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    double *v = nn_values(n), *want = malloc(sizeof *want * (size_t)n);
    const double alpha = o && o->alpha ? o->alpha : 1e-4, beta = o && o->beta ? o->beta : 0.75,
                 k = o && o->k ? o->k : 2;
    /* Large values, so that alpha's term matters against K. */
    for (int64_t i = 0; i < n; i++)
        v[i] *= 40;
    ref_lrn(v, nd, dims, cdim, w, alpha, beta, k, want);
    dla_scope_begin();
    dla_crosschannelnorm_options oo = o ? *o : (dla_crosschannelnorm_options){0};
    oo.data_format = data_format;
    dla_tensor *y = dla_crosschannelnorm(nn_from(v, fmt, nd, dims), w, &oo);
    nn_expect(y, fmt, nd, dims, want, 1e-13);
    /* The window matters: with the values this large, a window of one more
     * channel gives other values (the check above can fail). */
    if (dims[cdim] > 1) {
        double *other = malloc(sizeof *other * (size_t)n);
        ref_lrn(v, nd, dims, cdim, w + 1, alpha, beta, k, other);
        double d = 0;
        for (int64_t i = 0; i < n; i++)
            d = tu_worse(d, fabs(other[i] - want[i]));
        assert_true(d > 1e-6);
        free(other);
    }
    dla_scope_end();
    free(v);
    free(want);
}

static void test_values_follow_matlabs_formula_and_window(void **state)
{
    (void)state;
    const dla_crosschannelnorm_options mine = {.alpha = 0.3, .beta = 1.5, .k = 0.5};
    for (int64_t w = 1; w <= 9; w++) {
        expect_formula("SSCB", NULL, DLA_DIMS(3, 2, 7, 2), 2, w, NULL);
        expect_formula("SSCB", NULL, DLA_DIMS(3, 2, 7, 2), 2, w, &mine);
        expect_formula("CB", NULL, DLA_DIMS(6, 3), 0, w, &mine);
        expect_formula("CBT", NULL, DLA_DIMS(5, 2, 3), 0, w, &mine);
        /* Unformatted, C first: MATLAB's DataFormat. */
        expect_formula("", "CSSB", DLA_DIMS(7, 3, 2, 2), 0, w, &mine);
    }
    /* A window wider than twice the channels: every channel in it. */
    expect_formula("SSCB", NULL, DLA_DIMS(2, 2, 3, 2), 2, 16, &mine);
}

static void test_one_channel_and_single_precision(void **state)
{
    (void)state;
    dla_scope_begin();
    /* One channel: ss is the element's own square. */
    const double x[3] = {3, -4, 0};
    dla_tensor *y = dla_crosschannelnorm(nn_from(x, "SSCB", DLA_DIMS(3, 1, 1, 1)), 5,
                                         &(dla_crosschannelnorm_options){.alpha = 5, .beta = 1,
                                                                          .k = 1});
    const double want[3] = {3 / (1 + 9.0), -4 / (1 + 16.0), 0};
    nn_expect(y, "SSCB", DLA_DIMS(3, 1, 1, 1), want, 1e-15);
    /* Single in, single out, close to double's. */
    const float xf[4] = {10, -20, 30, 40};
    dla_tensor *yf = dla_crosschannelnorm(
        dla_tensor_from_host(xf, DLA_F32, "CB", DLA_DIMS(4, 1)), 3,
        &(dla_crosschannelnorm_options){.alpha = 1});
    assert_int_equal(dla_tensor_dtype(yf), DLA_F32);
    double xd[4], wd[4];
    for (int i = 0; i < 4; i++)
        xd[i] = xf[i];
    ref_lrn(xd, DLA_DIMS(4, 1), 0, 3, 1, 0.75, 2, wd);
    nn_expect(yf, "CB", DLA_DIMS(4, 1), wd, 1e-6);
    dla_scope_end();
}

typedef struct lrn_case {
    int64_t w;
    dla_crosschannelnorm_options o;
} lrn_case;

static dla_tensor *lrn_fn(void *ctx, dla_tensor *const *in)
{
    const lrn_case *c = ctx;
    return dla_crosschannelnorm(in[0], c->w, &c->o);
}

/* A window wider than the channels (2C - 1 reach every channel) is
 * MATLAB's formula still, however wide: INT64_MAX looped for ever over
 * that many slices of padding, and 10^6 padded C by 10^6. alpha is the
 * window as a double, so alpha / window is 1 and every channel is divided
 * by (k + the sum of squares of all channels)^beta. */
static void test_windows_far_wider_than_the_channels_take_every_channel(void **state)
{
    (void)state;
    const int64_t dims[4] = {2, 3, 5, 2}, windows[3] = {INT64_MAX, 1000000, 12};
    double *x = nn_values(60), want[60];
    for (int w = 0; w < 3; w++) {
        const dla_crosschannelnorm_options o = {.alpha = (double)windows[w], .beta = 0.6,
                                                .k = 1.5};
        ref_lrn(x, 4, dims, 2, windows[w], o.alpha, o.beta, o.k, want);
        dla_scope_begin();
        dla_tensor *y = dla_crosschannelnorm(nn_from(x, "SSCB", 4, dims), windows[w], &o);
        nn_expect(y, "SSCB", 4, dims, want, 1e-13);
        dla_scope_end();
    }
    /* Its gradient too. */
    lrn_case c = {INT64_MAX, {.alpha = 9223372036854775807.0, .beta = 0.75, .k = 2}};
    dla_tensor *in[1] = {nn_rand("SSCB", DLA_DIMS(2, 2, 5, 2))};
    const int check[1] = {1};
    gc_check(lrn_fn, &c, 1, in, check, 1e-6);
    dla_tensor_release(in[0]);
    free(x);
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    const lrn_case cases[] = {
        {1, {.alpha = 0.5, .beta = 0.75, .k = 1}},
        {2, {.alpha = 0.5, .beta = 0.75, .k = 1}},
        {3, {.alpha = 0.2, .beta = 1.5, .k = 0.5}},
        {4, {.alpha = 1, .beta = 0.6, .k = 2}},
        {5, {.alpha = 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dla_tensor *in[1] = {nn_rand("SSCB", DLA_DIMS(2, 2, 5, 2))};
        const int check[1] = {1};
        gc_check(lrn_fn, (void *)&cases[k], 1, in, check, 1e-6);
        gc_check2(lrn_fn, (void *)&cases[k], 1, in, check, 1e-6);
        dla_tensor_release(in[0]);
    }
}

static dla_status lrn_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = dla_sum(dla_mul(lrn_fn(ctx, in), in[0]), 0, NULL);
    return dla_gradient(out[0], 1, &in[0], &out[1]);
}

static void test_a_replay_gives_eager_bits(void **state)
{
    (void)state;
    lrn_case c = {4, {.alpha = 0.5}};
    dla_accel *af = dla_accelerate(lrn_loss, NULL);
    dla_scope_begin();
    dla_tensor *x = nn_rand("SSCB", DLA_DIMS(3, 3, 6, 2));
    for (int call = 0; call < 3; call++)
        tu_expect_replay_bits(af, lrn_loss, &c, 1, &x, 2, "crosschannelnorm", call);
    dla_tensor_release(x);
    dla_scope_end();
    assert_true(dla_accel_hit_rate(af) > 0);
    dla_accel_free(af);
}

static void test_refusals_name_the_op_and_the_argument(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "SSCB", DLA_DIMS(2, 2, 3, 1));
    nn_expect_error(dla_crosschannelnorm(NULL, 3, NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_crosschannelnorm: argument x is NULL");
    nn_expect_error(dla_crosschannelnorm(x, 0, NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_crosschannelnorm: argument window: 0");
    nn_expect_error(dla_crosschannelnorm(x, 3, &(dla_crosschannelnorm_options){.beta = 0.001}),
                    DLA_ERR_INVALID_ARGUMENT, "option beta: 0.001; it must be finite and at least 0.01");
    nn_expect_error(dla_crosschannelnorm(x, 3, &(dla_crosschannelnorm_options){.k = -1}),
                    DLA_ERR_INVALID_ARGUMENT, "option k: -1");
    nn_expect_error(dla_crosschannelnorm(x, 3, &(dla_crosschannelnorm_options){.alpha = INFINITY}),
                    DLA_ERR_INVALID_ARGUMENT, "option alpha: inf is not finite");
    nn_expect_error(dla_crosschannelnorm(dla_ones(DLA_F64, "SSB", DLA_DIMS(2, 2, 3)), 3, NULL),
                    DLA_ERR_FORMAT, "argument x: 2x2x3 \"SSB\" has no channel (C) dim");
    nn_expect_error(dla_crosschannelnorm(dla_ones(DLA_F64, "", DLA_DIMS(2, 3)), 3, NULL),
                    DLA_ERR_FORMAT, "argument x: 2x3 is unformatted");
    nn_expect_error(dla_crosschannelnorm(x, 3, &(dla_crosschannelnorm_options){.data_format = "SSCB"}),
                    DLA_ERR_FORMAT, "option data_format: \"SSCB\" given, but x");
    nn_expect_error(dla_crosschannelnorm(dla_ones(DLA_F64, "", DLA_DIMS(2, 3)), 3,
                                         &(dla_crosschannelnorm_options){.data_format = "SQ"}),
                    DLA_ERR_FORMAT, "dla_crosschannelnorm");
    nn_expect_error(dla_crosschannelnorm(dla_ones(DLA_I32, "CB", DLA_DIMS(2, 3)), 3, NULL),
                    DLA_ERR_DTYPE, "dla_crosschannelnorm: argument x: int32; needs single or double");
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_values_follow_matlabs_formula_and_window),
        TU_TEST(test_one_channel_and_single_precision),
        TU_TEST(test_windows_far_wider_than_the_channels_take_every_channel),
        TU_TEST(test_gradients_match_finite_differences),
        TU_TEST(test_a_replay_gives_eager_bits),
        TU_TEST(test_refusals_name_the_op_and_the_argument),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

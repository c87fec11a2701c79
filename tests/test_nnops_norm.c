/*
 * test_nnops_norm.c - batchnorm (training with its running statistics, and
 * inference), layernorm in each operation dimension, groupnorm and
 * instancenorm: values against a hand-worked case and a naive host loop,
 * finite-difference gradients for every op, mode and format, and errors.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"

/* ------------------------------------------------------ the host reference */

/* Which elements share statistics, for x seen as S x C x B x R (the
 * products of its S dims, its channels, its batch, its T and U dims). */
typedef enum ref_mode {
    R_BATCH,    /* per channel */
    R_LAYER,    /* per observation */
    R_SPATIAL,  /* per observation and time step */
    R_CHANNEL,  /* per observation, time step and pixel */
    R_GROUP,    /* per observation and group */
    R_INSTANCE, /* per observation and channel */
} ref_mode;

typedef struct ref_shape {
    int64_t s, c, b, r;
} ref_shape;

static int64_t ref_key(ref_mode m, ref_shape d, int64_t groups, int64_t s, int64_t c, int64_t b,
                       int64_t r)
{
    switch (m) {
    case R_BATCH: return c;
    case R_LAYER: return b;
    case R_SPATIAL: return b + d.b * r;
    case R_CHANNEL: return s + d.s * (b + d.b * r);
    case R_GROUP: return c / (d.c / groups) + groups * b;
    default: return c + d.c * b;
    }
}

/* y = scale .* (x - mean) ./ sqrt(var + eps) + offset with the statistics
 * of each key (biased variance); mean/var out per key when not NULL. */
static void ref_norm(ref_mode m, ref_shape d, int64_t groups, const double *x, const double *off,
                     const double *sc, double eps, double *y, double *mean_out, double *var_out)
{
    int64_t n = d.s * d.c * d.b * d.r, nk = n; /* keys never outnumber elements */
    double *sum = calloc((size_t)nk, sizeof(double)), *sq = calloc((size_t)nk, sizeof(double));
    double *cnt = calloc((size_t)nk, sizeof(double));
    for (int pass = 0; pass < 2; pass++)
        for (int64_t r = 0; r < d.r; r++)
            for (int64_t b = 0; b < d.b; b++)
                for (int64_t c = 0; c < d.c; c++)
                    for (int64_t s = 0; s < d.s; s++) {
                        int64_t i = s + d.s * (c + d.c * (b + d.b * r));
                        int64_t k = ref_key(m, d, groups, s, c, b, r);
                        if (pass == 0) {
                            sum[k] += x[i];
                            cnt[k] += 1;
                        } else {
                            double mu = sum[k] / cnt[k];
                            sq[k] += (x[i] - mu) * (x[i] - mu);
                        }
                    }
    for (int64_t r = 0; r < d.r; r++)
        for (int64_t b = 0; b < d.b; b++)
            for (int64_t c = 0; c < d.c; c++)
                for (int64_t s = 0; s < d.s; s++) {
                    int64_t i = s + d.s * (c + d.c * (b + d.b * r));
                    int64_t k = ref_key(m, d, groups, s, c, b, r);
                    double mu = sum[k] / cnt[k], var = sq[k] / cnt[k];
                    y[i] = sc[c] * (x[i] - mu) / sqrt(var + eps) + off[c];
                    if (mean_out)
                        mean_out[k] = mu;
                    if (var_out)
                        var_out[k] = var;
                }
    free(sum);
    free(sq);
    free(cnt);
}

/* --------------------------------------------------------------- batchnorm */

static void test_batchnorm_training_updates_the_running_statistics_as_matlab(void **state)
{
    (void)state;
    dla_scope_begin();
    /* two channels, four observations */
    const double xv[8] = {1, 2, 2, 4, 3, 6, 4, 8};
    dla_tensor *x = nn_from(xv, "CB", DLA_DIMS(2, 4));
    dla_tensor *off = nn_from((double[]){0.5, -1}, "", DLA_DIMS(2, 1));
    dla_tensor *sc = nn_from((double[]){2, 3}, "", DLA_DIMS(2, 1));
    dla_tensor *rm = nn_from((double[]){0, 1}, "", DLA_DIMS(2, 1));
    dla_tensor *rv = nn_from((double[]){1, 2}, "", DLA_DIMS(2, 1));
    dla_tensor *y, *m, *v;
    assert_int_equal(dla_batchnorm_train(x, off, sc, rm, rv, NULL, &y, &m, &v), DLA_OK);
    /* channel means 2.5 and 5; biased variances 1.25 and 5; unbiased 5/3, 20/3 */
    const double mu[2] = {2.5, 5}, var[2] = {1.25, 5}, o[2] = {0.5, -1}, s[2] = {2, 3};
    double want[8];
    for (int i = 0; i < 8; i++)
        want[i] = s[i % 2] * (xv[i] - mu[i % 2]) / sqrt(var[i % 2] + 1e-5) + o[i % 2];
    nn_expect(y, "CB", DLA_DIMS(2, 4), want, 1e-14);
    /* MeanDecay = VarianceDecay = 0.1: 0.1 batch + 0.9 running, unbiased variance */
    nn_expect(m, "", DLA_DIMS(2, 1), (double[]){0.25, 0.5 + 0.9}, 1e-14);
    nn_expect(v, "", DLA_DIMS(2, 1), (double[]){0.5 / 3 + 0.9, 2.0 / 3 + 1.8}, 1e-14);

    /* other decays and epsilon */
    dla_batchnorm_options opt = {.epsilon = 1e-3, .mean_decay = 0.3, .variance_decay = 0.6};
    assert_int_equal(dla_batchnorm_train(x, off, sc, rm, rv, &opt, &y, &m, &v), DLA_OK);
    for (int i = 0; i < 8; i++)
        want[i] = s[i % 2] * (xv[i] - mu[i % 2]) / sqrt(var[i % 2] + 1e-3) + o[i % 2];
    nn_expect(y, "CB", DLA_DIMS(2, 4), want, 1e-14);
    nn_expect(m, "", DLA_DIMS(2, 1), (double[]){0.3 * 2.5, 0.3 * 5 + 0.7}, 1e-14);
    nn_expect(v, "", DLA_DIMS(2, 1), (double[]){0.6 * 5 / 3 + 0.4, 0.6 * 20 / 3 + 0.8}, 1e-14);

    /* no running statistics: the batch's own, biased, shaped like offset */
    assert_int_equal(dla_batchnorm_train(x, off, sc, NULL, NULL, NULL, &y, &m, &v), DLA_OK);
    nn_expect(m, "", DLA_DIMS(2, 1), mu, 1e-14);
    nn_expect(v, "", DLA_DIMS(2, 1), var, 1e-14);
    /* statistics not wanted */
    assert_int_equal(dla_batchnorm_train(x, off, sc, rm, rv, NULL, &y, NULL, NULL), DLA_OK);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    dla_scope_end();
}

/* Single precision, a channel whose mean is 1e5 times its spread and a
 * constant one: the statistics come from sums taken in one pass (with
 * fused_reduce_pair), and neither may cancel (E[x^2] - E[x]^2 in single
 * would leave no correct digit of the first variance) nor go below 0. */
static void test_batchnorm_statistics_keep_their_digits_in_single(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { S = 64, B = 16, N = S * 2 * B };
    float xv[N];
    double sum = 0, sq = 0;
    uint32_t r = 12345;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < S; i++) {
            r = r * 1664525u + 1013904223u;
            xv[b * 2 * S + i] = 1000.0f + 0.01f * ((float)(r >> 8) / 16777216.0f - 0.5f);
            xv[b * 2 * S + S + i] = 3.0f;
            sum += xv[b * 2 * S + i];
        }
    const double mu = sum / (S * B);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < S; i++)
            sq += (xv[b * 2 * S + i] - mu) * (xv[b * 2 * S + i] - mu);
    const double var = sq / (S * B);
    dla_tensor *x = dla_tensor_from_host(xv, DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, B));
    dla_tensor *off = dla_tensor_from_host((float[]){0.5f, -1.0f}, DLA_F32, "", DLA_DIMS(2, 1));
    dla_tensor *sc = dla_tensor_from_host((float[]){1.0f, 2.0f}, DLA_F32, "", DLA_DIMS(2, 1));
    dla_tensor *y, *m, *v;
    assert_int_equal(dla_batchnorm_train(x, off, sc, NULL, NULL, NULL, &y, &m, &v), DLA_OK);
    assert_true(fabs(dla_tensor_item(m, 0) - mu) <= 1e-7 * mu);
    assert_true(fabs(dla_tensor_item(v, 0) - var) <= 1e-3 * var);
    assert_true(dla_tensor_item(m, 1) == 3.0);
    assert_true(dla_tensor_item(v, 1) == 0.0);
    /* the constant channel normalizes to its offset, the other to unit spread */
    double ysq = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < S; i++) {
            assert_true(dla_tensor_item(y, b * 2 * S + S + i) == -1.0);
            const double d = dla_tensor_item(y, b * 2 * S + i) - 0.5;
            ysq += d * d;
        }
    assert_true(fabs(ysq / (S * B) - var / (var + 1e-5)) < 1e-3);
    /* a NaN in a channel makes its statistics NaN, not 0 */
    xv[5] = NAN;
    x = dla_tensor_from_host(xv, DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, B));
    assert_int_equal(dla_batchnorm_train(x, off, sc, NULL, NULL, NULL, &y, &m, &v), DLA_OK);
    assert_true(isnan(dla_tensor_item(m, 0)) && isnan(dla_tensor_item(v, 0)));
    assert_true(dla_tensor_item(m, 1) == 3.0 && dla_tensor_item(v, 1) == 0.0);
    /* an empty batch: no statistics (NaN), an empty result */
    x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, 0));
    assert_int_equal(dla_batchnorm_train(x, off, sc, NULL, NULL, NULL, &y, &m, &v), DLA_OK);
    assert_true(isnan(dla_tensor_item(m, 0)) && isnan(dla_tensor_item(v, 1)));
    assert_int_equal(dla_tensor_numel(y), 0);
    dla_scope_end();
}

/* layer, group and instance normalization of an empty batch: an empty
 * result, and gradients of zeros for offset and scale. They failed with
 * the kernel's "dims 1x3x1x0x1 differ from z's 1x3x1x1x1". */
static dla_status empty_norm_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    const int which = *(const int *)ctx;
    dla_tensor *y = which == 0   ? dla_layernorm(in[0], in[1], in[2], NULL)
                    : which == 1 ? dla_groupnorm(in[0], 3, in[1], in[2], NULL)
                                 : dla_instancenorm(in[0], in[1], in[2], NULL);
    out[0] = y;
    out[1] = dla_sum(y, 0, NULL);
    return dla_gradient(out[1], 2, in + 1, out + 2);
}

static void test_norms_of_an_empty_batch_are_empty(void **state)
{
    dla_scope_begin();
    dla_tensor *in[3] = {dla_zeros(DLA_F64, "SSCB", DLA_DIMS(4, 4, 3, 0)),
                         dla_zeros(DLA_F64, "", DLA_DIMS(3, 1)),
                         dla_ones(DLA_F64, "", DLA_DIMS(3, 1))};
    for (int which = 0; which < 3; which++) {
        dla_tensor *out[4];
        if (dla_feval(empty_norm_loss, &which, 3, in, 4, out) != DLA_OK)
            fail_msg("norm %d: %s", which, dla_last_error());
        assert_int_equal(dla_tensor_numel(out[0]), 0);
        assert_int_equal(dla_tensor_dim(out[0], 4), 0);
        assert_true(dla_tensor_item(out[1], 0) == 0.0);
        for (int k = 2; k < 4; k++)
            for (int c = 0; c < 3; c++)
                assert_true(dla_tensor_item(out[k], c) == 0.0);
    }
    dla_scope_end();
}

/* batchnorm in training mode on an empty batch (B or T of 0): the
 * gradients of offset and scale are sums over no elements, 0. The scale's
 * was NaN (istd .* (sum(g .* x) - mu .* sum(g)) with the NaN statistics
 * of an empty batch), and an optimizer step wrote the NaN into the
 * network's scale. In a replay too. */
static dla_status empty_bn_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y;
    dla_status st = dla_batchnorm_train(in[0], in[1], in[2], in[3], in[4], NULL, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    return dla_gradient(out[0], 2, in + 1, out + 1);
}

static void test_batchnorm_train_of_an_empty_batch_has_zero_gradients(void **state)
{
    (void)state;
    dla_scope_begin();
    static const char *const fmt[3] = {"SSCB", "CB", "CBT"};
    const int64_t dims[3][4] = {{4, 4, 3, 0}, {3, 0}, {3, 2, 0}};
    const int nd[3] = {4, 2, 3};
    for (int f = 0; f < 3; f++)
        for (int dt = 0; dt < 2; dt++) {
            const dla_dtype type = dt ? DLA_F64 : DLA_F32;
            dla_tensor *in[5] = {dla_zeros(type, fmt[f], nd[f], dims[f]),
                                 dla_full(0.5, type, "", DLA_DIMS(3, 1)),
                                 dla_full(2.0, type, "", DLA_DIMS(3, 1)),
                                 dla_zeros(type, "", DLA_DIMS(3, 1)),
                                 dla_ones(type, "", DLA_DIMS(3, 1))};
            dla_accel *af = dla_accelerate(empty_bn_loss, NULL);
            for (int call = 0; call < 4; call++) {
                dla_tensor *out[3];
                dla_status st = call == 0 ? dla_feval(empty_bn_loss, NULL, 5, in, 3, out)
                                          : dla_accel_feval(af, NULL, 5, in, 3, out);
                if (st != DLA_OK)
                    fail_msg("%s %s call %d: %s", fmt[f], dla_dtype_name(type), call,
                             dla_last_error());
                assert_true(dla_tensor_item(out[0], 0) == 0.0);
                for (int k = 1; k < 3; k++)
                    for (int c = 0; c < 3; c++)
                        if (dla_tensor_item(out[k], c) != 0.0)
                            fail_msg("%s %s call %d: gradient %d, channel %d: %g, not 0",
                                     fmt[f], dla_dtype_name(type), call, k, c,
                                     dla_tensor_item(out[k], c));
            }
            dla_accel_free(af);
        }
    dla_scope_end();
}

/* The same with higher derivatives: the first gradients (x's, offset's,
 * scale's) recorded, and the gradient of their sum with respect to offset
 * and scale taken through them: 0. The scale's was NaN: x's gradient, empty,
 * was made through istd .* scale, and the second sweep summed the empty
 * gradient (0) into that product and multiplied it by the NaN istd. */
static dla_status empty_bn_second(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y, *g[3];
    dla_status st = dla_batchnorm_train(in[0], in[1], in[2], in[3], in[4], NULL, &y, NULL, NULL);
    if (st == DLA_OK)
        st = dla_gradient_opts(dla_sum(dla_mul(y, y), 0, NULL), 3, in, g,
                               &(dla_gradient_options){.enable_higher_derivatives = 1});
    if (st != DLA_OK)
        return st;
    out[0] = dla_add(dla_add(dla_sum(g[0], 0, NULL), dla_sum(g[1], 0, NULL)),
                     dla_sum(g[2], 0, NULL));
    return dla_gradient(out[0], 2, in + 1, out + 1);
}

static void test_batchnorm_train_of_an_empty_batch_has_zero_second_derivatives(void **state)
{
    (void)state;
    dla_scope_begin();
    static const char *const fmt[2] = {"CB", "CBT"};
    const int64_t dims[2][3] = {{3, 0}, {3, 2, 0}};
    for (int f = 0; f < 2; f++) {
        dla_tensor *in[5] = {dla_zeros(DLA_F64, fmt[f], f + 2, dims[f]),
                             dla_full(0.5, DLA_F64, "", DLA_DIMS(3, 1)),
                             dla_full(2.0, DLA_F64, "", DLA_DIMS(3, 1)),
                             dla_zeros(DLA_F64, "", DLA_DIMS(3, 1)),
                             dla_ones(DLA_F64, "", DLA_DIMS(3, 1))};
        dla_accel *af = dla_accelerate(empty_bn_second, NULL);
        for (int call = 0; call < 3; call++) {
            dla_tensor *out[3];
            dla_status st = call == 0 ? dla_feval(empty_bn_second, NULL, 5, in, 3, out)
                                      : dla_accel_feval(af, NULL, 5, in, 3, out);
            if (st != DLA_OK)
                fail_msg("%s call %d: %s", fmt[f], call, dla_last_error());
            assert_true(dla_tensor_item(out[0], 0) == 0.0);
            for (int k = 1; k < 3; k++)
                for (int c = 0; c < 3; c++)
                    if (dla_tensor_item(out[k], c) != 0.0)
                        fail_msg("%s call %d: second derivative %d, channel %d: %g, not 0",
                                 fmt[f], call, k, c, dla_tensor_item(out[k], c));
        }
        dla_accel_free(af);
    }
    dla_scope_end();
}

/* batchnorm in training mode on an empty batch: the running statistics
 * come back as they went in. They were NaN (the decay times the NaN mean
 * of no elements), and a network whose state was set from them predicted
 * NaN from then on. In a replay too; without running statistics the
 * batch's own statistics of no elements stay NaN, as MATLAB's mean of
 * nothing is. */
static dla_status empty_bn_stats(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    return dla_batchnorm_train(in[0], in[1], in[2], in[3], in[4],
                               &(dla_batchnorm_options){.mean_decay = 0.3, .variance_decay = 0.6},
                               &out[0], &out[1], &out[2]);
}

static void test_batchnorm_train_of_an_empty_batch_keeps_the_running_statistics(void **state)
{
    (void)state;
    dla_scope_begin();
    static const char *const fmt[3] = {"SSCB", "CB", "CBT"};
    const int64_t dims[3][4] = {{4, 4, 3, 0}, {3, 0}, {3, 2, 0}};
    const int nd[3] = {4, 2, 3};
    const double mean[3] = {0.25, -1.5, 3.0}, var[3] = {0.5, 2.0, 7.0};
    for (int f = 0; f < 3; f++)
        for (int dt = 0; dt < 2; dt++) {
            const dla_dtype type = dt ? DLA_F64 : DLA_F32;
            dla_tensor *in[5] = {dla_zeros(type, fmt[f], nd[f], dims[f]),
                                 dla_zeros(type, "", DLA_DIMS(3, 1)),
                                 dla_ones(type, "", DLA_DIMS(3, 1)),
                                 dla_cast(dla_tensor_from_host(mean, DLA_F64, "", DLA_DIMS(3, 1)), type),
                                 dla_cast(dla_tensor_from_host(var, DLA_F64, "", DLA_DIMS(3, 1)), type)};
            dla_accel *af = dla_accelerate(empty_bn_stats, NULL);
            for (int call = 0; call < 3; call++) {
                dla_tensor *out[3];
                dla_status st = call == 0 ? dla_feval(empty_bn_stats, NULL, 5, in, 3, out)
                                          : dla_accel_feval(af, NULL, 5, in, 3, out);
                if (st != DLA_OK)
                    fail_msg("%s %s call %d: %s", fmt[f], dla_dtype_name(type), call,
                             dla_last_error());
                assert_int_equal(dla_tensor_numel(out[0]), 0);
                for (int c = 0; c < 3; c++)
                    if (dla_tensor_item(out[1], c) != mean[c] || dla_tensor_item(out[2], c) != var[c])
                        fail_msg("%s %s call %d: channel %d: running mean %g and variance %g, "
                                 "not %g and %g", fmt[f], dla_dtype_name(type), call, c,
                                 dla_tensor_item(out[1], c), dla_tensor_item(out[2], c),
                                 mean[c], var[c]);
            }
            dla_accel_free(af);
            dla_tensor *y, *m, *v;
            assert_int_equal(dla_batchnorm_train(in[0], in[1], in[2], NULL, NULL, NULL, &y, &m, &v),
                             DLA_OK);
            assert_true(isnan(dla_tensor_item(m, 0)) && isnan(dla_tensor_item(v, 0)));
        }
    dla_scope_end();
}

/* The statistics and the gradients' sums are taken by the OpenMP team,
 * whose threads take the work as they come; the same call still gives
 * the same bits every time, because the sums add fixed runs of the data
 * in a fixed order whoever ran them. Large enough for the team; in
 * double, where a sum added in another order shows in the last bits. */
static dla_tensor *bits_w; /* the loss's weights, one per element of y */

static dla_status bn_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y;
    dla_status st = dla_batchnorm_train(in[0], in[1], in[2], NULL, NULL, NULL, &y, &out[1], &out[2]);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, bits_w), 0, NULL);
    return dla_gradient(out[0], 3, in, out + 3);
}

static void test_batchnorm_sums_give_the_same_bits_on_every_call(void **state)
{
    (void)state;
    enum { C = 8, N = 24 * 24 * C * 64, CALLS = 6 };
    dla_rng_seed(7);
    dla_scope_begin(); /* the intermediates go with it, the kept four stay */
    dla_tensor *x = dla_keep(dla_affine(dla_randn(DLA_F64, "SSCB", DLA_DIMS(24, 24, C, 64)), 3.0, 5.0));
    dla_tensor *off = dla_keep(dla_zeros(DLA_F64, "", DLA_DIMS(C, 1)));
    dla_tensor *sc = dla_keep(dla_ones(DLA_F64, "", DLA_DIMS(C, 1)));
    bits_w = dla_keep(dla_randn(DLA_F64, "SSCB", DLA_DIMS(24, 24, C, 64)));
    dla_scope_end();
    /* mean, variance, d offset, d scale (C each), then dx (N) */
    static double first[4 * C + N], now[4 * C + N];
    for (int call = 0; call < CALLS; call++) {
        dla_scope_begin();
        dla_tensor *out[6];
        assert_int_equal(dla_feval(bn_loss, NULL, 3, (dla_tensor *[]){x, off, sc}, 6, out), DLA_OK);
        double *dst = call ? now : first;
        const int which[4] = {1, 2, 4, 5};
        for (int k = 0; k < 4; k++)
            assert_int_equal(dla_tensor_to_host(out[which[k]], dst + k * C, C * sizeof(double)),
                             DLA_OK);
        assert_int_equal(dla_tensor_to_host(out[3], dst + 4 * C, N * sizeof(double)), DLA_OK);
        if (call)
            assert_memory_equal(now, first, sizeof now);
        dla_scope_end();
    }
    dla_tensor_release(x);
    dla_tensor_release(off);
    dla_tensor_release(sc);
    dla_tensor_release(bits_w);
}

static void test_batchnorm_statistics_span_every_dim_but_channels(void **state)
{
    (void)state;
    dla_scope_begin();
    struct {
        const char *fmt;
        int nd;
        int64_t dims[5];
        ref_shape d;
    } cases[] = {
        {"SSCB", 4, {3, 2, 4, 5}, {6, 4, 5, 1}},
        {"CBT", 3, {3, 4, 5}, {1, 3, 4, 5}},
        {"SCBT", 4, {2, 3, 2, 3}, {2, 3, 2, 3}},
        {"SSSCB", 5, {2, 2, 2, 3, 2}, {8, 3, 2, 1}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ref_shape d = cases[k].d;
        int64_t n = d.s * d.c * d.b * d.r;
        double *xv = nn_values(n), *ov = nn_values(d.c), *sv = nn_values(d.c);
        double *rmv = nn_values(d.c), *rvv = nn_values(d.c);
        for (int64_t c = 0; c < d.c; c++)
            rvv[c] += 3.0;
        double *want = malloc(sizeof(double) * (size_t)n), mu[8], var[8];
        ref_norm(R_BATCH, d, 1, xv, ov, sv, 1e-5, want, mu, var);
        dla_tensor *x = nn_from(xv, cases[k].fmt, cases[k].nd, cases[k].dims);
        dla_tensor *off = nn_from(ov, "", DLA_DIMS(d.c)), *sc = nn_from(sv, "", DLA_DIMS(d.c));
        dla_tensor *rm = nn_from(rmv, "", DLA_DIMS(d.c)), *rv = nn_from(rvv, "", DLA_DIMS(d.c));
        dla_tensor *y, *m, *v;
        assert_int_equal(dla_batchnorm_train(x, off, sc, rm, rv, NULL, &y, &m, &v), DLA_OK);
        nn_expect(y, cases[k].fmt, cases[k].nd, cases[k].dims, want, 1e-12);
        double wm[8], wv[8], per = (double)(n / d.c);
        for (int64_t c = 0; c < d.c; c++) {
            wm[c] = 0.1 * mu[c] + 0.9 * rmv[c];
            wv[c] = 0.1 * var[c] * per / (per - 1) + 0.9 * rvv[c];
        }
        nn_expect(m, "", DLA_DIMS(d.c), wm, 1e-12);
        nn_expect(v, "", DLA_DIMS(d.c), wv, 1e-12);
        /* inference with the batch's own statistics gives the same y */
        dla_tensor *bm = nn_from(mu, "", DLA_DIMS(d.c)), *bv = nn_from(var, "", DLA_DIMS(d.c));
        nn_expect(dla_batchnorm(x, off, sc, bm, bv, NULL), cases[k].fmt, cases[k].nd,
                  cases[k].dims, want, 1e-12);
        free(xv), free(ov), free(sv), free(rmv), free(rvv), free(want);
    }
    dla_scope_end();
}

static void test_batchnorm_inference_uses_the_given_statistics(void **state)
{
    (void)state;
    dla_scope_begin();
    const double xv[6] = {1, -2, 3, 0.5, 4, -1};
    dla_tensor *x = nn_from(xv, "SCB", DLA_DIMS(1, 3, 2));
    /* statistics and parameters as 1x1x3 "SSC"-like vectors: any dims with C elements */
    const double m[3] = {0.5, -1, 2}, v[3] = {4, 0.25, 1}, o[3] = {1, 0, -1}, s[3] = {1, 2, 0.5};
    dla_tensor *tm = nn_from(m, "", DLA_DIMS(1, 1, 3)), *tv = nn_from(v, "", DLA_DIMS(1, 1, 3));
    dla_tensor *to = nn_from(o, "", DLA_DIMS(3, 1)), *ts = nn_from(s, "", DLA_DIMS(1, 3));
    double want[6];
    for (int i = 0; i < 6; i++)
        want[i] = s[i % 3] * (xv[i] - m[i % 3]) / sqrt(v[i % 3] + 0.01) + o[i % 3];
    nn_expect(dla_batchnorm(x, to, ts, tm, tv, &(dla_batchnorm_options){.epsilon = 0.01}), "SCB",
              DLA_DIMS(1, 3, 2), want, 1e-14);
    dla_scope_end();
}

/* ------------------------------------------- layer, group, instance norms */

static void test_layer_group_and_instance_norms_pick_their_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    struct {
        const char *fmt;
        int nd;
        int64_t dims[4];
        ref_shape d;
    } shapes[] = {
        {"SSCB", 4, {3, 2, 4, 3}, {6, 4, 3, 1}},
        {"CBT", 3, {4, 2, 3}, {1, 4, 2, 3}},
        {"CB", 2, {6, 3}, {1, 6, 3, 1}},
        {"SCBT", 4, {3, 4, 2, 2}, {3, 4, 2, 2}},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        ref_shape d = shapes[k].d;
        int64_t n = d.s * d.c * d.b * d.r;
        double *xv = nn_values(n), *ov = nn_values(d.c), *sv = nn_values(d.c);
        double *want = malloc(sizeof(double) * (size_t)n);
        dla_tensor *x = nn_from(xv, shapes[k].fmt, shapes[k].nd, shapes[k].dims);
        dla_tensor *off = nn_from(ov, "", DLA_DIMS(d.c)), *sc = nn_from(sv, "", DLA_DIMS(1, d.c));
        int has_t = strchr(shapes[k].fmt, 'T') != NULL;
        struct {
            const char *od;
            ref_mode m;
        } modes[] = {
            {NULL, R_LAYER}, {"batch-excluded", R_LAYER}, {"spatial-channel", R_SPATIAL},
            {"channel-only", R_CHANNEL}, {"auto", has_t ? R_CHANNEL : R_SPATIAL},
        };
        for (size_t j = 0; j < sizeof modes / sizeof modes[0]; j++) {
            ref_norm(modes[j].m, d, 1, xv, ov, sv, 1e-5, want, NULL, NULL);
            dla_norm_options o = {.operation_dimension = modes[j].od};
            nn_expect(dla_layernorm(x, off, sc, &o), shapes[k].fmt, shapes[k].nd, shapes[k].dims,
                      want, 1e-12);
        }
        ref_norm(R_GROUP, d, 2, xv, ov, sv, 1e-4, want, NULL, NULL);
        nn_expect(dla_groupnorm(x, 2, off, sc, &(dla_norm_options){.epsilon = 1e-4}),
                  shapes[k].fmt, shapes[k].nd, shapes[k].dims, want, 1e-12);
        ref_norm(R_INSTANCE, d, 1, xv, ov, sv, 1e-5, want, NULL, NULL);
        nn_expect(dla_instancenorm(x, off, sc, NULL), shapes[k].fmt, shapes[k].nd, shapes[k].dims,
                  want, 1e-12);
        /* groupnorm's two ends: one group per channel, one group in all */
        nn_expect(dla_groupnorm(x, d.c, off, sc, NULL), shapes[k].fmt, shapes[k].nd,
                  shapes[k].dims, want, 1e-12);
        ref_norm(R_LAYER, d, 1, xv, ov, sv, 1e-5, want, NULL, NULL);
        nn_expect(dla_groupnorm(x, 1, off, sc, NULL), shapes[k].fmt, shapes[k].nd, shapes[k].dims,
                  want, 1e-12);
        free(xv), free(ov), free(sv), free(want);
    }
    dla_scope_end();
}

/* --------------------------------------------------------------- gradients */

typedef struct norm_case {
    int which; /* 0 bn train, 1 bn inference, 2 layer, 3 group, 4 instance */
    const char *od;
    int64_t groups;
    double eps; /* 0: the default */
} norm_case;

static dla_tensor *norm_fn(void *ctx, dla_tensor *const *in)
{
    const norm_case *c = ctx;
    dla_batchnorm_options bo = {.epsilon = c->eps};
    dla_norm_options no = {.epsilon = c->eps, .operation_dimension = c->od};
    switch (c->which) {
    case 0: {
        dla_tensor *y, *m, *v;
        dla_batchnorm_train(in[0], in[1], in[2], in[3], in[4], &bo, &y, &m, &v);
        return y;
    }
    case 1: return dla_batchnorm(in[0], in[1], in[2], in[3], in[4], &bo);
    case 2: return dla_layernorm(in[0], in[1], in[2], &no);
    case 3: return dla_groupnorm(in[0], c->groups, in[1], in[2], &no);
    default: return dla_instancenorm(in[0], in[1], in[2], &no);
    }
}

static void test_normalization_gradients_match_finite_differences(void **state)
{
    (void)state;
    const char *fmts[] = {"CB", "SSCB", "CBT"};
    const int64_t dims[][4] = {{4, 5}, {3, 2, 4, 3}, {4, 3, 2}};
    const int nds[] = {2, 4, 3};
    norm_case cases[] = {
        {0, NULL, 0, 0},    {0, NULL, 0, 0.5},  {1, NULL, 0, 0},   {1, NULL, 0, 0.5},
        {2, NULL, 0, 0},    {2, "spatial-channel", 0, 0},          {2, "channel-only", 0, 0},
        {2, "auto", 0, 0.5}, {3, NULL, 2, 0},   {3, NULL, 4, 0.5}, {4, NULL, 0, 0},
    };
    for (int f = 0; f < 3; f++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            /* "CB" has nothing for instancenorm to normalize over but one element */
            if (cases[k].which == 4 && f == 0)
                continue;
            dla_tensor *in[5];
            in[0] = nn_rand(fmts[f], nds[f], dims[f]);
            in[1] = nn_rand("", DLA_DIMS(4));
            in[2] = nn_rand("", DLA_DIMS(1, 4));
            in[3] = nn_rand("", DLA_DIMS(4));
            in[4] = nn_rand_pos("", DLA_DIMS(4)); /* a variance */
            int check[5] = {1, 1, 1, cases[k].which == 1, cases[k].which == 1};
            gc_check(norm_fn, &cases[k], 5, in, check, 1e-6);
            gc_check2(norm_fn, &cases[k], 5, in, check, 1e-6);
            for (int i = 0; i < 5; i++)
                dla_tensor_release(in[i]);
        }
}

static dla_status stats_only_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y, *m, *v;
    dla_batchnorm_train(in[0], in[1], in[2], in[3], in[4], NULL, &y, &m, &v);
    dla_tensor *l = dla_sum(dla_add(m, v), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 1, &in[0], &out[1]);
}

static void test_running_statistics_carry_no_gradient(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[5] = {nn_rand("CB", DLA_DIMS(3, 4)), nn_rand("", DLA_DIMS(3)),
                         nn_rand("", DLA_DIMS(3)), nn_rand("", DLA_DIMS(3)),
                         dla_ones(DLA_F64, "", DLA_DIMS(3))};
    dla_tensor *out[2];
    /* the statistics depend on x only through values, not differentiably:
     * x's gradient is zeros (MATLAB's dlgradient of a traced loss that does
     * not reach x; it was the error "the loss does not depend on it") */
    if (dla_feval(stats_only_loss, NULL, 5, in, 2, out) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_tensor_numel(out[1]), 12);
    assert_string_equal(dla_tensor_format(out[1]), "CB");
    for (int64_t e = 0; e < 12; e++)
        assert_true(dla_tensor_item(out[1], e) == 0.0);
    for (int i = 0; i < 4; i++)
        dla_tensor_release(in[i]);
    dla_scope_end();
}

/* ------------------------------------------------------------------ errors */

static void test_normalization_errors_name_the_op_argument_and_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "SSCB", DLA_DIMS(4, 4, 6, 2));
    dla_tensor *c6 = dla_ones(DLA_F64, "", DLA_DIMS(6));
    dla_tensor *c5 = dla_ones(DLA_F64, "", DLA_DIMS(5, 1));
    dla_tensor *nochan = dla_ones(DLA_F64, "SSB", DLA_DIMS(4, 4, 2));
    nn_expect_error(dla_layernorm(nochan, c6, c6, NULL), DLA_ERR_FORMAT,
                    "dla_layernorm: argument x (4x4x2 SSB) has no \"C\" dim");
    nn_expect_error(dla_batchnorm(x, c6, c5, c6, c6, NULL), DLA_ERR_SHAPE,
                    "dla_batchnorm: argument scale: 5x1 has 5 elements, but x (4x4x6x2 SSCB) "
                    "has 6 channels");
    nn_expect_error(dla_batchnorm(x, c6, c6, c6, c5, NULL), DLA_ERR_SHAPE,
                    "dla_batchnorm: argument var: 5x1 has 5 elements");
    nn_expect_error(dla_groupnorm(x, 4, c6, c6, NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_groupnorm: argument num_groups: 4 does not divide the 6 channels of x "
                    "(4x4x6x2 SSCB)");
    nn_expect_error(dla_layernorm(x, c6, c6, &(dla_norm_options){.operation_dimension = "time"}),
                    DLA_ERR_INVALID_ARGUMENT,
                    "dla_layernorm: option operation_dimension: \"time\"");
    nn_expect_error(dla_instancenorm(x, c6, c6, &(dla_norm_options){.epsilon = -1}),
                    DLA_ERR_INVALID_ARGUMENT, "dla_instancenorm: option epsilon: -1");
    dla_tensor *c6f = dla_ones(DLA_F32, "", DLA_DIMS(6));
    nn_expect_error(dla_instancenorm(x, c6f, c6, NULL), DLA_ERR_DTYPE,
                    "dla_instancenorm: argument offset (6) is single, x is double");
    dla_tensor *y, *m, *v;
    assert_int_equal(dla_batchnorm_train(x, c6, c6, c6, NULL, NULL, &y, &m, &v),
                     DLA_ERR_INVALID_ARGUMENT);
    nn_expect_error(y, DLA_ERR_INVALID_ARGUMENT,
                    "dla_batchnorm_train: argument running_var is NULL but running_mean is not");
    nn_expect_error(m, DLA_ERR_INVALID_ARGUMENT, "running_var is NULL");
    assert_int_equal(dla_batchnorm_train(x, c6, c6, c6, c6,
                                         &(dla_batchnorm_options){.mean_decay = 1.5}, &y, &m, &v),
                     DLA_ERR_INVALID_ARGUMENT);
    nn_expect_error(v, DLA_ERR_INVALID_ARGUMENT,
                    "dla_batchnorm_train: option mean_decay: 1.5 is outside (0, 1]");
    assert_int_equal(dla_batchnorm_train(x, c5, c6, NULL, NULL, NULL, &y, &m, &v), DLA_ERR_SHAPE);
    nn_expect_error(y, DLA_ERR_SHAPE, "dla_batchnorm_train: argument offset: 5x1 has 5 elements");
    nn_expect_error(m, DLA_ERR_SHAPE, "argument offset");
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_batchnorm_training_updates_the_running_statistics_as_matlab),
        TU_TEST(test_batchnorm_statistics_keep_their_digits_in_single),
        TU_TEST(test_batchnorm_sums_give_the_same_bits_on_every_call),
        TU_TEST(test_batchnorm_statistics_span_every_dim_but_channels),
        TU_TEST(test_batchnorm_inference_uses_the_given_statistics),
        TU_TEST(test_layer_group_and_instance_norms_pick_their_dims),
        TU_TEST(test_normalization_gradients_match_finite_differences),
        TU_TEST(test_running_statistics_carry_no_gradient),
        TU_TEST(test_normalization_errors_name_the_op_argument_and_shapes),
        TU_TEST(test_norms_of_an_empty_batch_are_empty),
        TU_TEST(test_batchnorm_train_of_an_empty_batch_has_zero_gradients),
        TU_TEST(test_batchnorm_train_of_an_empty_batch_has_zero_second_derivatives),
        TU_TEST(test_batchnorm_train_of_an_empty_batch_keeps_the_running_statistics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

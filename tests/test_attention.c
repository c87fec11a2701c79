/*
 * test_attention.c - dla_attention: against a host reference of
 * multi-head scaled dot-product attention (and its weights), with the
 * causal mask, in every layout it takes, its first and second derivatives
 * against finite differences, a replay with eager's bits, and the errors.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "gradcheck.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <string.h>

enum { H = 2, DK = 2, DV = 3, C = H * DK, CV = H * DV, LQ = 3, LK = 5, B = 2 };

static double *host(dla_tensor *t)
{
    const int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    assert_int_equal(dla_tensor_to_host(t, h, sizeof(double) * (size_t)n), DLA_OK);
    return h;
}

/* The reference on "CBT" data: q[c + C*(b + B*t)]; y of CV x B x lq,
 * weights lk x lq x H x B. */
static void reference(const double *q, const double *k, const double *v, int lq, int lk,
                      int causal, const double *mask, double scale, double *y, double *w)
{
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int j = 0; j < lq; j++) {
                double s[16], top = -INFINITY, sum = 0;
                for (int i = 0; i < lk; i++) {
                    s[i] = 0;
                    for (int d = 0; d < DK; d++)
                        s[i] += k[h * DK + d + C * (b + B * i)] * q[h * DK + d + C * (b + B * j)];
                    const int hidden = (causal && i > j) || (mask && !mask[i + lk * (j + lq * b)]);
                    s[i] = hidden ? -INFINITY : scale * s[i];
                    top = fmax(top, s[i]);
                }
                for (int i = 0; i < lk; i++)
                    sum += (s[i] = exp(s[i] - top));
                for (int i = 0; i < lk; i++)
                    w[i + lk * (j + lq * (h + H * b))] = s[i] / sum;
                for (int d = 0; d < DV; d++) {
                    double acc = 0;
                    for (int i = 0; i < lk; i++)
                        acc += v[h * DV + d + CV * (b + B * i)] * s[i] / sum;
                    y[h * DV + d + CV * (b + B * j)] = acc;
                }
            }
}

static void check_against_reference(int causal, int lq, int lk)
{
    dla_scope_begin();
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, lq));
    dla_tensor *k = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, lk));
    dla_tensor *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, lk));
    dla_tensor *w = NULL;
    dla_tensor *y = dla_attention(q, k, v, H, &(dla_attention_options){
        .attention_mask = causal ? "causal" : NULL}, &w);
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("%s", dla_tensor_error(y));
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dim(y, 1), CV);
    assert_int_equal(dla_tensor_dim(y, 3), lq);
    assert_non_null(w);
    assert_int_equal(dla_tensor_dim(w, 1), lk);
    assert_int_equal(dla_tensor_dim(w, 3), H);
    double *hq = host(q), *hk = host(k), *hv = host(v), *hy = host(y), *hw = host(w);
    double ry[CV * B * 8], rw[8 * 8 * H * B];
    reference(hq, hk, hv, lq, lk, causal, NULL, 1 / sqrt(DK), ry, rw);
    for (int i = 0; i < CV * B * lq; i++)
        if (!tu_close(hy[i], ry[i], 1e-13))
            fail_msg("y[%d]: %.17g, reference %.17g", i, hy[i], ry[i]);
    for (int i = 0; i < lk * lq * H * B; i++) {
        if (!tu_close(hw[i], rw[i], 1e-13))
            fail_msg("weights[%d]: %.17g, reference %.17g", i, hw[i], rw[i]);
        if (causal && rw[i] == 0)
            assert_true(hw[i] == 0.0); /* masked keys weigh exactly nothing */
    }
    free(hq), free(hk), free(hv), free(hy), free(hw);
    dla_scope_end();
}

static void test_multi_head_attention_matches_the_reference(void **state)
{
    (void)state;
    dla_rng_seed(21);
    check_against_reference(0, LQ, LK);
    check_against_reference(0, 1, 1);
}

static void test_a_causal_mask_hides_later_keys(void **state)
{
    (void)state;
    dla_rng_seed(22);
    check_against_reference(1, 4, 4);
}

/* A mask per observation (a padding mask's shape), with the causal one
 * too; a mask of other dims is refused. */
static void test_a_mask_tensor_hides_the_keys_it_marks(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(26);
    enum { L = 4 };
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, L));
    dla_tensor *k = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, L));
    dla_tensor *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, L));
    /* Observation 0 sees every key but the last; observation 1 only the
     * first two, and every query sees key 0 (so none is left without). */
    double mh[L * L * B];
    for (int b = 0; b < B; b++)
        for (int j = 0; j < L; j++)
            for (int i = 0; i < L; i++)
                mh[i + L * (j + L * b)] = b == 0 ? i < L - 1 : i < 2;
    dla_tensor *m = dla_tensor_from_host(mh, DLA_F64, "", DLA_DIMS(L, L, 1, B));
    for (int causal = 0; causal < 2; causal++) {
        dla_tensor *w = NULL;
        dla_tensor *y = dla_attention(q, k, v, H, &(dla_attention_options){
            .mask = m, .attention_mask = causal ? "causal" : NULL}, &w);
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("%s", dla_tensor_error(y));
        double *hq = host(q), *hk = host(k), *hv = host(v), *hy = host(y), *hw = host(w);
        double ry[CV * B * L], rw[L * L * H * B];
        reference(hq, hk, hv, L, L, causal, mh, 1 / sqrt(DK), ry, rw);
        for (int i = 0; i < CV * B * L; i++)
            if (!tu_close(hy[i], ry[i], 1e-13))
                fail_msg("causal %d, y[%d]: %.17g, reference %.17g", causal, i, hy[i], ry[i]);
        for (int i = 0; i < L * L * H * B; i++)
            assert_true(rw[i] == 0 ? hw[i] == 0.0 : tu_close(hw[i], rw[i], 1e-13));
        free(hq), free(hk), free(hv), free(hy), free(hw);
    }
    /* One mask for every observation with trailing dims of 1 is the
     * L x L one (3x3x1 for two observations, 3x3x1x1x1, were refused). */
    double m0[L * L];
    for (int i = 0; i < L * L; i++)
        m0[i] = mh[i];
    dla_tensor *shared = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_tensor_from_host(m0, DLA_F64, "", DLA_DIMS(L, L))}, NULL);
    for (int nd = 3; nd <= 5; nd++) {
        const int64_t md[5] = {L, L, 1, 1, 1};
        dla_tensor *y = dla_attention(q, k, v, H, &(dla_attention_options){
            .mask = dla_tensor_from_host(m0, DLA_F64, "", nd, md)}, NULL);
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("a %d-dim mask: %s", nd, dla_tensor_error(y));
        assert_true(tu_same_bits(y, shared));
    }
    /* mh is a padding mask (the same keys for every query): given as one
     * column per observation, Lk x 1 x 1 x B, it is the same mask. */
    double col[L * B];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++)
            col[i + L * b] = mh[i + L * L * b];
    dla_tensor *full = dla_attention(q, k, v, H, &(dla_attention_options){.mask = m}, NULL);
    dla_tensor *padding = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_tensor_from_host(col, DLA_F64, "", DLA_DIMS(L, 1, 1, B))}, NULL);
    if (dla_tensor_status(padding) != DLA_OK)
        fail_msg("a padding mask: %s", dla_tensor_error(padding));
    assert_true(tu_same_bits(padding, full));
    /* MATLAB's layout of a mask per observation, Nk-by-Nq-by-numObservations
     * (L x L x B, and L x 1 x B for a padding mask), is the same mask: it
     * was refused, so a mask written for MATLAB's attention failed. */
    dla_tensor *matlab = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_tensor_from_host(mh, DLA_F64, "", DLA_DIMS(L, L, B))}, NULL);
    if (dla_tensor_status(matlab) != DLA_OK)
        fail_msg("an Lk x Lq x B mask: %s", dla_tensor_error(matlab));
    assert_true(tu_same_bits(matlab, full));
    dla_tensor *matlab_padding = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_tensor_from_host(col, DLA_F64, "", DLA_DIMS(L, 1, B)),
        .attention_mask = "causal"}, NULL);
    dla_tensor *causal_padding = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_tensor_from_host(col, DLA_F64, "", DLA_DIMS(L, 1, 1, B)),
        .attention_mask = "causal"}, NULL);
    if (dla_tensor_status(matlab_padding) != DLA_OK)
        fail_msg("an Lk x 1 x B mask: %s", dla_tensor_error(matlab_padding));
    assert_true(tu_same_bits(matlab_padding, causal_padding));
    dla_tensor *bad = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_ones(DLA_F64, "", DLA_DIMS(L, L, 1, 3))}, NULL);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(bad), "argument opts->mask: 4x4x1x3 \"\"; it must be "
                                                  "unformatted 4x4 (keys x queries; x1: the same "
                                                  "keys for every query), 4x4x2 or 4x4x1x2"));
    bad = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_ones(DLA_F64, "", DLA_DIMS(L, 2, 1, B))}, NULL);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    /* Observations along dim 3 and dim 4 at once, or a dim 3 that is not
     * the observations, are refused. */
    bad = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_ones(DLA_F64, "", DLA_DIMS(L, L, B, B))}, NULL);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    bad = dla_attention(q, k, v, H, &(dla_attention_options){
        .mask = dla_ones(DLA_F64, "", DLA_DIMS(L, L, 3))}, NULL);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    dla_scope_end();
}

/* A query the masks leave no key gets the mean of the values, with no
 * gradient into the queries and keys, the causal mask and a mask tensor
 * together too. Each mask added its own -1e30: where both hid a key its
 * score was -2e30, so query 1 below, whose only causal key the mask
 * hides, weighed keys 1 and 2 (each hidden by one mask) and not key 3
 * (hidden by both): the mean of two values; and the scores under -1e30
 * were rounded away in the forward while the backward sent gradients
 * into them (analytic -0.12 where the numeric derivative is 0). */
static dla_tensor *attend_masked(void *ctx, dla_tensor *const *in)
{
    dla_tensor *m = ctx;
    return dla_attention(in[0], in[1], in[2], H,
                         &(dla_attention_options){.attention_mask = "causal", .mask = m}, NULL);
}

static void test_a_query_the_masks_leave_no_key_gets_the_mean_of_the_values(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(27);
    enum { L = 3 };
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, L));
    dla_tensor *k = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, L));
    dla_tensor *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, L));
    /* Query 1 may see key 1 alone (causal), which the mask hides; the
     * mask lets it see key 2, which the causal mask hides, and hides key
     * 3, as the causal mask does. Queries 2 and 3 see key 1. */
    double mh[L * L];
    for (int j = 0; j < L; j++)
        for (int i = 0; i < L; i++)
            mh[i + L * j] = j == 0 ? i == 1 : i == 0;
    dla_tensor *m = dla_tensor_from_host(mh, DLA_F64, "", DLA_DIMS(L, L));
    dla_tensor *w = NULL;
    dla_tensor *y = attend_masked(m, (dla_tensor *[]){q, k, v});
    dla_attention(q, k, v, H, &(dla_attention_options){.attention_mask = "causal", .mask = m}, &w);
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("%s", dla_tensor_error(y));
    double *hy = host(y), *hv = host(v), *hw = host(w);
    for (int b = 0; b < B; b++)
        for (int c = 0; c < CV; c++) {
            double mean = 0;
            for (int i = 0; i < L; i++)
                mean += hv[c + CV * (b + B * i)] / L;
            if (!tu_close(hy[c + CV * b], mean, 1e-14))
                fail_msg("y(%d, %d, 1): %.17g, the mean of the values %.17g", c + 1, b + 1,
                         hy[c + CV * b], mean);
        }
    for (int hb = 0; hb < H * B; hb++)
        for (int i = 0; i < L; i++)
            assert_true(hw[i + L * L * hb] == 1.0 / L);
    free(hy), free(hv), free(hw);
    const int check[3] = {1, 1, 1};
    gc_check(attend_masked, m, 3, (dla_tensor *[]){q, k, v}, check, 1e-6);
    /* The mask alone hiding every key from query 1. */
    for (int i = 0; i < L; i++)
        mh[i] = 0;
    dla_tensor *m2 = dla_tensor_from_host(mh, DLA_F64, "", DLA_DIMS(L, L));
    gc_check(attend_masked, m2, 3, (dla_tensor *[]){q, k, v}, check, 1e-6);
    gc_check2(attend_masked, m2, 3, (dla_tensor *[]){q, k, v}, check, 1e-5);
    dla_scope_end();
}

/* Queries, keys, values and mask on another device than the current one
 * give that device's result there: the mask was compared with a zero made
 * on the current device ("dla_ne: arguments a and b are on testmem:0 and
 * cpu:0"). Operands on two devices are named (it was dla_pagemtimes's
 * "arguments a and b are on ..."). */
static void test_a_mask_on_another_device_than_the_current_one(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(31);
    enum { L = 4 };
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, L));
    dla_tensor *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, L));
    double mh[L * L];
    for (int i = 0; i < L * L; i++)
        mh[i] = i % 3 != 1;
    dla_tensor *m = dla_tensor_from_host(mh, DLA_F64, "", DLA_DIMS(L, L));
    dla_tensor *want = dla_attention(q, q, v, H, &(dla_attention_options){.mask = m}, NULL);
    assert_int_equal(dla_tensor_status(want), DLA_OK);
    dla_device *dev = tu_other_device(), *cur = dla_device_current();
    assert_non_null(dev);
    dla_tensor *qd = dla_tensor_to_device(q, dev), *vd = dla_tensor_to_device(v, dev);
    dla_tensor *md = dla_tensor_to_device(m, dev);
    dla_tensor *y = dla_attention(qd, qd, vd, H, &(dla_attention_options){.mask = md}, NULL);
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("%s", dla_tensor_error(y));
    assert_ptr_equal(dla_tensor_device(y), dev);
    assert_ptr_equal(dla_device_current(), cur);
    double *hy = host(y), *hw = host(want);
    for (int i = 0; i < CV * B * L; i++)
        if (!tu_close(hy[i], hw[i], 1e-13))
            fail_msg("y[%d]: %.17g on %s, %.17g on %s", i, hy[i], dla_device_name(dev), hw[i],
                     dla_device_name(cur));
    free(hy), free(hw);
    char want_msg[256];
    snprintf(want_msg, sizeof want_msg, "dla_attention: argument opts->mask is on %s, but queries "
             "are on %s; move it with dla_tensor_to_device", dla_device_name(cur),
             dla_device_name(dev));
    tu_expect_error(dla_attention(qd, qd, vd, H, &(dla_attention_options){.mask = m}, NULL),
                    DLA_ERR_INVALID_ARGUMENT, want_msg);
    snprintf(want_msg, sizeof want_msg, "dla_attention: argument values is on %s, but queries "
             "are on %s", dla_device_name(cur), dla_device_name(dev));
    tu_expect_error(dla_attention(qd, qd, v, H, NULL, NULL), DLA_ERR_INVALID_ARGUMENT, want_msg);
    dla_scope_end();
}

/* "SCB" and "CB" (a sequence of one) and "CT" (one observation): the same
 * numbers as the "CBT" layout of the same data. */
static void test_every_layout_gives_the_same_numbers(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(23);
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, LQ));
    dla_tensor *k = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, LK));
    dla_tensor *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, LK));
    dla_tensor *want = dla_attention(q, k, v, H, NULL, NULL);
    /* SCB: S is the sequence, in front. */
    const int64_t p[3] = {3, 1, 2};
    dla_tensor *qs = dla_reshape(dla_permute(dla_reshape(q, "", DLA_DIMS(C, B, LQ)), 3, p), "SCB",
                                 DLA_DIMS(LQ, C, B));
    dla_tensor *ks = dla_reshape(dla_permute(dla_reshape(k, "", DLA_DIMS(C, B, LK)), 3, p), "SCB",
                                 DLA_DIMS(LK, C, B));
    dla_tensor *vs = dla_reshape(dla_permute(dla_reshape(v, "", DLA_DIMS(CV, B, LK)), 3, p), "SCB",
                                 DLA_DIMS(LK, CV, B));
    dla_tensor *ys = dla_attention(qs, ks, vs, H, NULL, NULL);
    assert_string_equal(dla_tensor_format(ys), "SCB");
    dla_tensor *back = dla_reshape(dla_permute(dla_reshape(ys, "", DLA_DIMS(LQ, CV, B)), 3,
                                               (const int64_t[]){2, 3, 1}),
                                   "CBT", DLA_DIMS(CV, B, LQ));
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(back, want)), 0, NULL), 0) < 1e-14);
    /* CT: the first observation alone. */
    dla_tensor *q1 = dla_reshape(dla_slice(q, 2, 0, 1, 1), "CT", DLA_DIMS(C, LQ));
    dla_tensor *k1 = dla_reshape(dla_slice(k, 2, 0, 1, 1), "CT", DLA_DIMS(C, LK));
    dla_tensor *v1 = dla_reshape(dla_slice(v, 2, 0, 1, 1), "CT", DLA_DIMS(CV, LK));
    dla_tensor *y1 = dla_attention(q1, k1, v1, H, NULL, NULL);
    assert_string_equal(dla_tensor_format(y1), "CT");
    dla_tensor *w1 = dla_reshape(dla_slice(want, 2, 0, 1, 1), "CT", DLA_DIMS(CV, LQ));
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(y1, w1)), 0, NULL), 0) < 1e-14);
    /* CB: one step each; a single key gets all the weight. */
    dla_tensor *qb = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
    dla_tensor *vb = dla_randn(DLA_F64, "CB", DLA_DIMS(CV, B));
    dla_tensor *yb = dla_attention(qb, qb, vb, H, NULL, NULL);
    assert_string_equal(dla_tensor_format(yb), "CB");
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(yb, vb)), 0, NULL), 0) < 1e-15);
    dla_scope_end();
}

/* ------------------------------------------------------------ gradients */

typedef struct att_case {
    const char *mask;
} att_case;

static dla_tensor *attend(void *ctx, dla_tensor *const *in)
{
    const att_case *c = ctx;
    return dla_attention(in[0], in[1], in[2], H,
                         &(dla_attention_options){.attention_mask = c->mask, .scale = 0.7}, NULL);
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(24);
    dla_tensor *in[3] = {dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, 4)),
                         dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, 4)),
                         dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, 4))};
    const int check[3] = {1, 1, 1};
    att_case plain = {NULL}, causal = {"causal"};
    gc_check(attend, &plain, 3, in, check, 1e-6);
    gc_check(attend, &causal, 3, in, check, 1e-6);
    gc_check2(attend, &plain, 3, in, check, 1e-5);
    dla_scope_end();
}

/* ------------------------------------------------------------- dropout */

/* The same mask every call: the stream reseeded first. */
static dla_tensor *attend_dropped(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    dla_rng_seed(5);
    return dla_attention(in[0], in[1], in[2], H,
                         &(dla_attention_options){.scale = 0.7, .dropout_probability = 0.3},
                         NULL);
}

/* MATLAB's DropoutProbability: the weights dropped as dla_dropout drops
 * them (the same draws), the values weighted by what is left, gradients
 * through the same mask; 0 draws nothing. */
static void test_dropout_drops_the_weights(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(26);
    dla_tensor *q = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, LQ)),
               *k = dla_randn(DLA_F64, "CBT", DLA_DIMS(C, B, LK)),
               *v = dla_randn(DLA_F64, "CBT", DLA_DIMS(CV, B, LK));
    dla_tensor *w0, *w1;
    uint64_t seed, before, after;
    dla_rng_get(&seed, &before);
    assert_int_equal(dla_tensor_status(dla_attention(q, k, v, H, NULL, &w0)), DLA_OK);
    dla_rng_get(&seed, &after);
    assert_true(before == after);
    dla_rng_seed(9);
    dla_tensor *y = dla_attention(q, k, v, H, &(dla_attention_options){.dropout_probability = 0.4},
                                  &w1);
    dla_rng_seed(9);
    assert_true(tu_same_bits(w1, dla_dropout(w0, 0.4)));
    /* y = the values of each head weighted by the dropped weights. */
    double *hv = host(v), *hw = host(w1), *hy = host(y);
    int zeros = 0;
    for (int i = 0; i < LK * LQ * H * B; i++)
        zeros += hw[i] == 0;
    assert_true(zeros > 0);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < LQ; j++)
            for (int h = 0; h < H; h++)
                for (int c = 0; c < DV; c++) {
                    double want = 0;
                    for (int i = 0; i < LK; i++)
                        want += hv[h * DV + c + CV * (b + B * i)] *
                                hw[i + LK * (j + LQ * (h + H * b))];
                    tu_assert_near(hy[h * DV + c + CV * (b + B * j)], want, 1e-12);
                }
    free(hv);
    free(hw);
    free(hy);
    dla_tensor *in[3] = {q, k, v};
    const int check[3] = {1, 1, 1};
    gc_check(attend_dropped, NULL, 3, in, check, 1e-6);
    const double bad[] = {1, -0.1, NAN};
    for (int i = 0; i < 3; i++) {
        dla_tensor *r = dla_attention(q, k, v, H,
                                      &(dla_attention_options){.dropout_probability = bad[i]},
                                      NULL);
        assert_int_equal(dla_tensor_status(r), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_tensor_error(r), "option dropout_probability"));
    }
    dla_scope_end();
}

/* ---------------------------------------------------- accelerated: bits */

static dla_status attend_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    out[0] = dla_sum(dla_square(attend(ctx, in)), 0, NULL);
    return dla_gradient(out[0], 3, in, out + 1);
}

static void test_accelerated_it_replays_with_eager_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(25);
    att_case causal = {"causal"};
    dla_accel *af = dla_accelerate(attend_loss, NULL);
    assert_non_null(af);
    for (int call = 0; call < 3; call++) {
        dla_tensor *in[3] = {dla_randn(DLA_F32, "CBT", DLA_DIMS(C, B, 4)),
                             dla_randn(DLA_F32, "CBT", DLA_DIMS(C, B, 4)),
                             dla_randn(DLA_F32, "CBT", DLA_DIMS(CV, B, 4))};
        tu_expect_replay_bits(af, attend_loss, &causal, 3, in, 4, NULL, call);
    }
    tu_assert_near(dla_accel_hit_rate(af), 100.0 * 2 / 3, 1e-9);
    dla_accel_free(af);
    dla_scope_end();
}

/* --------------------------------------------------------------- errors */

static void test_bad_arguments_are_named(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *q = dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 2, 3));
    dla_tensor *k = dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 2, 5));
    dla_tensor *v = dla_zeros(DLA_F32, "CBT", DLA_DIMS(6, 2, 5));
    tu_expect_error(dla_attention(q, k, v, 4, NULL, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "dla_attention: argument num_heads: 4; it must divide the channels of the "
                 "queries and keys (4) and of the values (6)");
    tu_expect_error(dla_attention(q, k, dla_zeros(DLA_F32, "CBT", DLA_DIMS(6, 2, 4)), 2, NULL, NULL),
                 DLA_ERR_SHAPE, "dla_attention: queries 4x2x3, keys 4x2x5, values 6x2x4");
    tu_expect_error(dla_attention(q, k, v, 2, &(dla_attention_options){.attention_mask = "causal"},
                               NULL),
                 DLA_ERR_SHAPE, "a causal mask needs as many queries as keys (3 and 5");
    tu_expect_error(dla_attention(q, k, v, 2, &(dla_attention_options){.attention_mask = "future"},
                               NULL),
                 DLA_ERR_INVALID_ARGUMENT, "attention mask \"future\"; use \"none\" or \"causal\"");
    tu_expect_error(dla_attention(dla_zeros(DLA_F32, "", DLA_DIMS(4, 2, 3)), k, v, 2, NULL, NULL),
                 DLA_ERR_FORMAT, "dla_attention: argument queries (4x2x3 \"\"): it needs a \"C\" dim");
    tu_expect_error(dla_attention(dla_zeros(DLA_F32, "SCBT", DLA_DIMS(2, 4, 2, 3)), k, v, 2, NULL,
                               NULL),
                 DLA_ERR_FORMAT, "at most one sequence dim");
    tu_expect_error(dla_attention(q, dla_zeros(DLA_F32, "SCB", DLA_DIMS(5, 4, 2)), v, 2, NULL, NULL),
                 DLA_ERR_FORMAT, "one format for the three");
    tu_expect_error(dla_attention(q, NULL, v, 2, NULL, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "dla_attention: argument keys is NULL");
    /* Dtypes are named here (they were dla_pagemtimes's "arguments a
     * (double) and b (single)", a being the keys). */
    tu_expect_error(dla_attention(q, dla_zeros(DLA_F64, "CBT", DLA_DIMS(4, 2, 5)), v, 2, NULL,
                                  NULL),
                 DLA_ERR_DTYPE, "dla_attention: argument keys is double, but queries are single");
    tu_expect_error(dla_attention(dla_zeros(DLA_I32, "CBT", DLA_DIMS(4, 2, 3)), k, v, 2, NULL,
                                  NULL),
                 DLA_ERR_DTYPE, "dla_attention: argument queries: int32; attention needs single "
                 "or double");
    tu_expect_error(dla_attention(q, q, dla_zeros(DLA_F32, "CBT", DLA_DIMS(6, 2, 3)), 2,
                                  &(dla_attention_options){.scale = INFINITY}, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "dla_attention: option scale: inf is not finite");
    /* Queries and keys of no channels: the default scale 1/sqrt(0) is
     * what is wrong, and the message says so (it was "scale inf is not
     * finite", of a scale never given). With a scale given, every score
     * is 0 and each query gets the mean of the values. */
    dla_tensor *q00 = dla_zeros(DLA_F32, "CBT", DLA_DIMS(0, 2, 3));
    dla_tensor *v3 = dla_ones(DLA_F32, "CBT", DLA_DIMS(6, 2, 3));
    tu_expect_error(dla_attention(q00, q00, v3, 2, NULL, NULL), DLA_ERR_SHAPE,
                 "dla_attention: queries 0x2x3 and keys 0x2x3 have no channels, so the default "
                 "scale 1/sqrt(channels per head) is infinite; give opts->scale");
    dla_tensor *m = dla_attention(q00, q00, v3, 2, &(dla_attention_options){.scale = 1}, NULL);
    assert_int_equal(dla_tensor_status(m), DLA_OK);
    assert_true(dla_tensor_item(dla_sum(m, 0, NULL), 0) == 36);
    /* Keys of no length leave the queries nothing to attend to: named
     * here (it was the inner softmax's "dla_softmax: cpu reduce: argument
     * x: dims 0x3x1x2 leave nothing to take the max of", a softmax of no
     * channels is empty now, and the result would have been zeros). */
    dla_tensor *k0 = dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 2, 0));
    dla_tensor *v0 = dla_zeros(DLA_F32, "CBT", DLA_DIMS(6, 2, 0));
    tu_expect_error(dla_attention(q, k0, v0, 2, NULL, NULL), DLA_ERR_SHAPE,
                 "dla_attention: argument keys (4x2x0 \"CBT\"): a sequence of no keys, so the "
                 "queries (4x2x3, 3 along the sequence) have nothing to attend to");
    /* No queries, or no observations: nothing to weigh, an empty result. */
    dla_tensor *y = dla_attention(dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 2, 0)), k0, v0, 2, NULL,
                                  NULL);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 1), 6);
    assert_int_equal(dla_tensor_numel(y), 0);
    y = dla_attention(dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 0, 3)),
                      dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 0, 0)),
                      dla_zeros(DLA_F32, "CBT", DLA_DIMS(6, 0, 0)), 2, NULL, NULL);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_numel(y), 0);
    dla_scope_end();
}

int main(void)
{
    /* A second device: the testmem plugin of the build tree, after the
     * path the suite was given (its device stays the current one). */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_multi_head_attention_matches_the_reference),
        TU_TEST(test_a_causal_mask_hides_later_keys),
        TU_TEST(test_a_mask_tensor_hides_the_keys_it_marks),
        TU_TEST(test_a_query_the_masks_leave_no_key_gets_the_mean_of_the_values),
        TU_TEST(test_a_mask_on_another_device_than_the_current_one),
        TU_TEST(test_every_layout_gives_the_same_numbers),
        TU_TEST(test_gradients_match_finite_differences),
        TU_TEST(test_dropout_drops_the_weights),
        TU_TEST(test_accelerated_it_replays_with_eager_bits),
        TU_TEST(test_bad_arguments_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_ctc.c - dla_ctc, the connectionist temporal classification loss:
 * values against a brute-force sum over every alignment (all C^T paths,
 * collapsed) for tiny cases in double, with repeated labels, the blank
 * first and last, masks of different lengths per observation and garbage
 * in the padding, Reduction "none" and "mean"; a target too long for its
 * steps (Inf, finite gradients); finite-difference gradients; a replay of
 * an accelerated loss and gradient against eager, bit for bit; single
 * precision; targets and masks labelled "BT"; targets of no steps; a NaN
 * in Y; and the refusals.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"
#include "tu_assert.h"

#include <math.h>

/* A tiny CTC problem on the host: y is C x B x T (y[c + C*(b + B*t)]),
 * targets B x S (t[b + B*s]), masks B x T and B x S (1 included). */
typedef struct problem {
    int c, b, t, s, blank;
    double y[3 * 4 * 6];
    double tg[4 * 4];
    double ym[4 * 6];
    double tm[4 * 4];
} problem;

/* -log of the summed probability of the paths over observation b's
 * unmasked steps that collapse (repeats merged, blanks dropped) to its
 * unmasked targets: every path enumerated. */
static double brute_force(const problem *p, int b)
{
    int steps[8], n = 0, want[8], len = 0;
    for (int t = 0; t < p->t; t++)
        if (p->ym[b + p->b * t] != 0)
            steps[n++] = t;
    for (int s = 0; s < p->s; s++)
        if (p->tm[b + p->b * s] != 0)
            want[len++] = (int)p->tg[b + p->b * s];
    long paths = 1;
    for (int i = 0; i < n; i++)
        paths *= p->c;
    double total = 0;
    for (long k = 0; k < paths; k++) {
        int path[8], out[8], m = 0;
        long r = k;
        double prob = 1;
        for (int i = 0; i < n; i++) {
            path[i] = (int)(r % p->c);
            r /= p->c;
            prob *= p->y[path[i] + p->c * (b + p->b * steps[i])];
        }
        for (int i = 0; i < n; i++)
            if (path[i] != p->blank && (i == 0 || path[i] != path[i - 1]))
                out[m++] = path[i];
        int same = m == len;
        for (int i = 0; same && i < m; i++)
            same = out[i] == want[i];
        if (same)
            total += prob;
    }
    return -log(total);
}

/* Random probabilities: each (b, t) column positive, summing to 1. */
static void random_y(problem *p)
{
    for (int i = 0; i < p->b * p->t; i++) {
        double sum = 0;
        for (int c = 0; c < p->c; c++)
            sum += (p->y[c + p->c * i] = 0.05 + tu_unit());
        for (int c = 0; c < p->c; c++)
            p->y[c + p->c * i] /= sum;
    }
}

/* Observation b: its targets (len of them, padding -7 and 42 after),
 * and its first `steps` steps. */
static void set_obs(problem *p, int b, const int *targets, int len, int steps)
{
    for (int s = 0; s < p->s; s++) {
        p->tg[b + p->b * s] = s < len ? targets[s] : (s % 2 ? 42 : -7);
        p->tm[b + p->b * s] = s < len;
    }
    for (int t = 0; t < p->t; t++)
        p->ym[b + p->b * t] = t < steps;
}

static dla_tensor *y_of(const problem *p)
{
    return nn_from(p->y, "CBT", DLA_DIMS(p->c, p->b, p->t));
}
static dla_tensor *tg_of(const problem *p)
{
    return nn_from(p->tg, "", DLA_DIMS(p->b, p->s));
}
static dla_tensor *ym_of(const problem *p)
{
    return dla_cast(nn_from(p->ym, "", DLA_DIMS(p->b, p->t)), DLA_BOOL);
}
static dla_tensor *tm_of(const problem *p)
{
    return nn_from(p->tm, "", DLA_DIMS(p->b, p->s));
}

/* The loss of every observation ("none") and their mean against the
 * enumeration. */
static void expect_enumeration(const problem *p, const char *blank)
{
    dla_scope_begin();
    dla_tensor *none = dla_ctc(y_of(p), tg_of(p), ym_of(p), tm_of(p),
                               &(dla_ctc_options){.blank_index = blank, .reduction = "none"});
    double *got = nn_fetch(none);
    assert_int_equal(dla_tensor_dim(none, 1), 1);
    assert_int_equal(dla_tensor_dim(none, 2), p->b);
    assert_string_equal(dla_tensor_format(none), "CB");
    double mean = 0;
    for (int b = 0; b < p->b; b++) {
        const double want = brute_force(p, b);
        mean += want / p->b;
        if (isinf(want))
            assert_true(isinf(got[b]) && got[b] > 0);
        else
            tu_assert_near(got[b], want, 1e-12 * (1 + fabs(want)));
    }
    free(got);
    dla_tensor *m = dla_ctc(y_of(p), tg_of(p), ym_of(p), tm_of(p),
                            &(dla_ctc_options){.blank_index = blank});
    assert_int_equal(dla_tensor_numel(m), 1);
    if (isinf(mean))
        assert_true(isinf(dla_tensor_item(m, 0)));
    else
        tu_assert_near(dla_tensor_item(m, 0), mean, 1e-12 * (1 + fabs(mean)));
    dla_scope_end();
}

static void test_losses_match_every_alignment_blank_first(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 4, .t = 5, .s = 3, .blank = 0};
    for (int round = 0; round < 3; round++) {
        random_y(&p);
        set_obs(&p, 0, (const int[]){1, 1}, 2, 5);     /* a repeat: needs a blank between */
        set_obs(&p, 1, (const int[]){2, 1, 2}, 3, 4);  /* one padded step */
        set_obs(&p, 2, NULL, 0, 3);                    /* no targets: all blanks */
        set_obs(&p, 3, (const int[]){2, 2, 2}, 3, 5);  /* 2 b 2 b 2: exactly one way */
        expect_enumeration(&p, NULL);
        expect_enumeration(&p, "first");
    }
}

static void test_losses_match_every_alignment_blank_last(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 3, .t = 5, .s = 2, .blank = 2};
    for (int round = 0; round < 3; round++) {
        random_y(&p);
        set_obs(&p, 0, (const int[]){0, 1}, 2, 5);
        set_obs(&p, 1, (const int[]){0, 0}, 2, 3);
        set_obs(&p, 2, (const int[]){1}, 1, 1);
        expect_enumeration(&p, "last");
    }
}

static dla_status ctc_mean_and_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                        dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_ctc(in[0], in[1], in[2], in[3], NULL);
    return dla_gradient(out[0], 1, &in[0], &out[1]);
}

static void test_a_target_too_long_for_its_steps_is_inf(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 2, .t = 4, .s = 2, .blank = 0};
    random_y(&p);
    set_obs(&p, 0, (const int[]){1, 1}, 2, 2); /* 1 b 1 needs 3 steps */
    set_obs(&p, 1, (const int[]){1, 2}, 2, 4);
    expect_enumeration(&p, NULL);
    /* The gradient of the mean stays finite: the impossible observation
     * adds 0, the other its own. */
    dla_scope_begin();
    dla_tensor *in[4] = {y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)};
    dla_tensor *out[2];
    assert_int_equal(dla_feval(ctc_mean_and_gradient, NULL, 4, in, 2, out), DLA_OK);
    assert_true(isinf(dla_tensor_item(out[0], 0)));
    double *g = nn_fetch(out[1]);
    double left = 0, right = 0;
    for (int i = 0; i < 3 * 2 * 4; i++) {
        if (!isfinite(g[i]))
            fail_msg("gradient element %d is %g", i, g[i]);
        /* Element i is (c, b, t) with b = (i / 3) % 2. */
        if ((i / 3) % 2 == 0)
            left = tu_worse(left, fabs(g[i]));
        else
            right = tu_worse(right, fabs(g[i]));
    }
    tu_assert_near(left, 0, 0);
    assert_true(right > 0.01);
    free(g);
    dla_scope_end();
}

/* ctx: the targets and masks; in[0]: scores that a softmax makes Y of. */
typedef struct gc_case {
    dla_tensor *tg, *ym, *tm;
    dla_ctc_options o;
} gc_case;

static dla_tensor *ctc_of_scores(void *ctx, dla_tensor *const *in)
{
    gc_case *c = ctx;
    return dla_ctc(dla_softmax(in[0]), c->tg, c->ym, c->tm, &c->o);
}

static dla_tensor *ctc_of_probs(void *ctx, dla_tensor *const *in)
{
    gc_case *c = ctx;
    return dla_ctc(in[0], c->tg, c->ym, c->tm, &c->o);
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 3, .t = 5, .s = 2, .blank = 0};
    random_y(&p);
    set_obs(&p, 0, (const int[]){1, 1}, 2, 5);
    set_obs(&p, 1, (const int[]){2}, 1, 3);
    set_obs(&p, 2, (const int[]){1, 2}, 2, 4);
    const int check[1] = {1};
    static const char *const reductions[2] = {"none", "mean"};
    for (int r = 0; r < 2; r++) {
        dla_scope_begin();
        gc_case c = {tg_of(&p), ym_of(&p), tm_of(&p), {.reduction = reductions[r]}};
        dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(3, 3, 5)));
        gc_check(ctc_of_scores, &c, 1, &x, check, 1e-6);
        dla_tensor *y = y_of(&p);
        gc_check(ctc_of_probs, &c, 1, &y, check, 1e-6);
        dla_scope_end();
    }
}

static dla_status ctc_loss_and_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                        dla_tensor **out)
{
    (void)nin, (void)nout;
    const dla_ctc_options *o = ctx;
    out[0] = dla_ctc(dla_softmax(in[0]), in[1], in[2], in[3], o);
    return dla_gradient(out[0], 1, &in[0], &out[1]);
}

static void test_a_replay_gives_eager_bits(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 3, .t = 5, .s = 2, .blank = 2};
    random_y(&p);
    set_obs(&p, 0, (const int[]){0, 0}, 2, 5);
    set_obs(&p, 1, (const int[]){1}, 1, 2);
    set_obs(&p, 2, (const int[]){0, 1}, 2, 4);
    dla_ctc_options o = {.blank_index = "last"};
    dla_accel *af = dla_accelerate(ctc_loss_and_gradient, NULL);
    dla_scope_begin();
    dla_tensor *in[4] = {dla_log(y_of(&p)), tg_of(&p), ym_of(&p), tm_of(&p)};
    for (int call = 0; call < 3; call++)
        tu_expect_replay_bits(af, ctc_loss_and_gradient, &o, 4, in, 2, "ctc", call);
    /* Other data of the same shapes replays the same trace. */
    random_y(&p);
    set_obs(&p, 1, (const int[]){1, 0}, 2, 5);
    dla_tensor *in2[4] = {dla_log(y_of(&p)), tg_of(&p), ym_of(&p), tm_of(&p)};
    tu_expect_replay_bits(af, ctc_loss_and_gradient, &o, 4, in2, 2, "ctc, other data", 3);
    dla_scope_end();
    dla_accel_free(af);
}

static dla_status ctc_none(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_ctc(in[0], in[1], in[2], in[3], &(dla_ctc_options){.reduction = "none"});
    return dla_tensor_status(out[0]);
}

/* A replay reads nothing back, so the host's target checks do not run:
 * targets that are not labels (out of range, the blank, a fraction, a
 * hole in the mask) give their observation NaN, and the others their
 * losses. */
static void test_a_replay_with_bad_targets_gives_nan_not_a_wrong_loss(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 4, .t = 5, .s = 2, .blank = 0};
    random_y(&p);
    for (int b = 0; b < 4; b++)
        set_obs(&p, b, (const int[]){1, 2}, 2, 5);
    dla_accel *af = dla_accelerate(ctc_none, NULL);
    dla_scope_begin();
    dla_tensor *out;
    dla_tensor *in[4] = {y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)};
    assert_int_equal(dla_accel_feval(af, NULL, 4, in, 1, &out), DLA_OK);
    p.tg[0 + 4 * 1] = 3;   /* observation 0: past C - 1 (row 3 is observation 1's) */
    p.tg[1 + 4 * 0] = 0;   /* observation 1: the blank */
    p.tg[2 + 4 * 1] = 1.5; /* observation 2: a fraction */
    dla_tensor *in2[4] = {y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)};
    assert_int_equal(dla_accel_feval(af, NULL, 4, in2, 1, &out), DLA_OK);
    assert_true(dla_accel_hit_rate(af) > 0);
    double *got = nn_fetch(out);
    for (int b = 0; b < 3; b++)
        if (!isnan(got[b]))
            fail_msg("observation %d: %g, want NaN", b, got[b]);
    tu_assert_near(got[3], brute_force(&p, 3), 1e-12);
    free(got);
    /* A hole in the targets mask of observation 3. */
    p.tm[3 + 4 * 0] = 0;
    dla_tensor *in3[4] = {y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)};
    assert_int_equal(dla_accel_feval(af, NULL, 4, in3, 1, &out), DLA_OK);
    assert_true(isnan(dla_tensor_item(out, 3)));
    dla_scope_end();
    dla_accel_free(af);
}

static void test_single_precision_and_data_format(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 2, .t = 4, .s = 2, .blank = 0};
    random_y(&p);
    set_obs(&p, 0, (const int[]){1, 2}, 2, 4);
    set_obs(&p, 1, (const int[]){2}, 1, 3);
    dla_scope_begin();
    const double want = (brute_force(&p, 0) + brute_force(&p, 1)) / 2;
    dla_tensor *l32 = dla_ctc(dla_cast(y_of(&p), DLA_F32), dla_cast(tg_of(&p), DLA_I32),
                              ym_of(&p), tm_of(&p), NULL);
    assert_int_equal(dla_tensor_dtype(l32), DLA_F32);
    tu_assert_near(dla_tensor_item(l32, 0), want, 1e-5 * want);
    /* The same data unformatted as T x B x C, named by data_format. */
    dla_tensor *tbc = dla_permute(dla_reshape(y_of(&p), "", DLA_DIMS(3, 2, 4)), DLA_DIMS(3, 2, 1));
    dla_tensor *l = dla_ctc(tbc, tg_of(&p), ym_of(&p), tm_of(&p),
                            &(dla_ctc_options){.data_format = "TBC", .reduction = "none"});
    assert_string_equal(dla_tensor_format(l), "");
    tu_assert_near(dla_tensor_item(l, 0), brute_force(&p, 0), 1e-12);
    tu_assert_near(dla_tensor_item(l, 1), brute_force(&p, 1), 1e-12);
    /* Targets and masks labelled "BT", the masks int32. */
    dla_tensor *bt = dla_ctc(y_of(&p), dla_tensor_from_host(p.tg, DLA_F64, "BT", DLA_DIMS(2, 2)),
                             dla_cast(dla_tensor_from_host(p.ym, DLA_F64, "BT", DLA_DIMS(2, 4)),
                                      DLA_I32),
                             dla_cast(dla_tensor_from_host(p.tm, DLA_F64, "BT", DLA_DIMS(2, 2)),
                                      DLA_I32), NULL);
    tu_assert_near(dla_tensor_item(bt, 0), (brute_force(&p, 0) + brute_force(&p, 1)) / 2, 1e-12);
    /* No masks: every step and every target counts. */
    problem q = p;
    set_obs(&q, 0, (const int[]){1, 2}, 2, 4);
    set_obs(&q, 1, (const int[]){2, 2}, 2, 4);
    dla_tensor *all = dla_ctc(y_of(&q), tg_of(&q), NULL, NULL, &(dla_ctc_options){.reduction = "none"});
    tu_assert_near(dla_tensor_item(all, 0), brute_force(&q, 0), 1e-12);
    tu_assert_near(dla_tensor_item(all, 1), brute_force(&q, 1), 1e-12);
    dla_scope_end();
}

/* Targets of no steps (B x 0): every step must be the blank. */
static void test_no_targets_at_all(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 2, .t = 4, .s = 0, .blank = 2};
    random_y(&p);
    dla_scope_begin();
    dla_tensor *l = dla_ctc(y_of(&p), dla_zeros(DLA_I32, "", DLA_DIMS(2, 0)), NULL, NULL,
                            &(dla_ctc_options){.blank_index = "last", .reduction = "none"});
    for (int b = 0; b < 2; b++) {
        double want = 0;
        for (int t = 0; t < 4; t++)
            want -= log(p.y[2 + 3 * (b + 2 * t)]);
        tu_assert_near(dla_tensor_item(l, b), want, 1e-12);
    }
    dla_scope_end();
}

/* A NaN in Y on an alignment's path makes its observation's loss NaN
 * (as crossentropy's), in double and single, "none" and "mean": it was
 * taken for a probability of realmin (max2 drops a NaN), or its state for
 * an unreachable one, and the loss came out finite. The other
 * observation keeps its exact loss. */
static void test_a_nan_in_y_gives_a_nan_loss(void **state)
{
    (void)state;
    problem p = {.c = 3, .b = 2, .t = 4, .s = 1, .blank = 0};
    random_y(&p);
    set_obs(&p, 0, (const int[]){1}, 1, 4);
    set_obs(&p, 1, (const int[]){2}, 1, 4);
    const double want1 = brute_force(&p, 1);
    /* Observation 0, class 1 at step 1: neither the first step nor the
     * last, so the recursion itself must carry it. */
    p.y[1 + p.c * (0 + p.b * 1)] = NAN;
    dla_scope_begin();
    for (int single = 0; single < 2; single++) {
        dla_tensor *y = single ? dla_cast(y_of(&p), DLA_F32) : y_of(&p);
        dla_tensor *l = dla_ctc(y, tg_of(&p), NULL, NULL,
                                &(dla_ctc_options){.reduction = "none"});
        assert_true(isnan(dla_tensor_item(l, 0)));
        tu_assert_near(dla_tensor_item(l, 1), want1, single ? 1e-5 * want1 : 1e-12);
        assert_true(isnan(dla_tensor_item(dla_ctc(y, tg_of(&p), NULL, NULL, NULL), 0)));
    }
    dla_scope_end();
}

/* The loss and its gradient of Y, with Y's mask in[2] and the targets'
 * in[3]. */
static dla_status ctc_and_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_ctc(in[0], in[1], in[2], in[3], &(dla_ctc_options){.reduction = "none"});
    return dla_gradient(dla_sum(out[0], 0, NULL), 1, in, out + 1);
}

static void test_a_nan_in_the_padding_of_y_has_zero_gradients(void **state)
{
    /* A step YMask excludes is skipped, and the loss did not see it, but
     * the gradient there was 0 / Y: NaN for a NaN in Y's padding, which
     * an update spreads into every weight. It is 0, and the rest as with
     * finite padding. */
    (void)state;
    problem p = {.c = 3, .b = 2, .t = 4, .s = 2, .blank = 0};
    random_y(&p);
    set_obs(&p, 0, (const int[]){1, 2}, 2, 4);
    set_obs(&p, 1, (const int[]){2}, 1, 2);
    const double want1 = brute_force(&p, 1);
    dla_scope_begin();
    dla_tensor *finite[2], *nan[2];
    assert_int_equal(dla_feval(ctc_and_gradient, NULL, 4,
                               (dla_tensor *[]){y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)}, 2,
                               finite), DLA_OK);
    for (int t = 2; t < 4; t++)
        for (int c = 0; c < p.c; c++)
            p.y[c + p.c * (1 + p.b * t)] = NAN;
    assert_int_equal(dla_feval(ctc_and_gradient, NULL, 4,
                               (dla_tensor *[]){y_of(&p), tg_of(&p), ym_of(&p), tm_of(&p)}, 2,
                               nan), DLA_OK);
    tu_assert_near(dla_tensor_item(nan[0], 1), want1, 1e-12);
    for (int i = 0; i < p.c * p.b * p.t; i++) {
        const int padding = (i / p.c) % p.b == 1 && i / (p.c * p.b) >= 2;
        const double g = dla_tensor_item(nan[1], i), want = dla_tensor_item(finite[1], i);
        if (!(g == want) || (padding && !(g == 0)))
            fail_msg("element %d%s: gradient %g, with finite padding %g", i,
                     padding ? " (padding)" : "", g, want);
    }
    dla_scope_end();
}

static void test_refusals_name_the_argument(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y = dla_full(1.0 / 3, DLA_F64, "CBT", DLA_DIMS(3, 2, 4));
    const double tv[4] = {1, 2, 2, 1};
    dla_tensor *tg = nn_from(tv, "", DLA_DIMS(2, 2));
    nn_expect_error(dla_ctc(NULL, tg, NULL, NULL, NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_ctc: argument Y is NULL");
    nn_expect_error(dla_ctc(dla_full(0.5, DLA_F64, "SCB", DLA_DIMS(2, 3, 2)), tg, NULL, NULL,
                            NULL), DLA_ERR_FORMAT, "it must have exactly the labels C");
    nn_expect_error(dla_ctc(dla_full(0.5, DLA_F64, "", DLA_DIMS(3, 2, 4)), tg, NULL, NULL,
                            NULL), DLA_ERR_FORMAT, "argument Y: 3x2x4 is unformatted");
    nn_expect_error(dla_ctc(y, tg, NULL, NULL, &(dla_ctc_options){.data_format = "CBT"}),
                    DLA_ERR_FORMAT, "option data_format: \"CBT\" given, but Y");
    nn_expect_error(dla_ctc(dla_cast(y, DLA_I32), tg, NULL, NULL, NULL), DLA_ERR_DTYPE,
                    "argument Y: int32; needs single or double");
    nn_expect_error(dla_ctc(y, nn_from(tv, "", DLA_DIMS(1, 4)), NULL, NULL, NULL),
                    DLA_ERR_SHAPE, "argument targets: 1x4 has 1 rows, but Y has 2 observations");
    nn_expect_error(dla_ctc(y, nn_from(tv, "CB", DLA_DIMS(2, 2)), NULL, NULL, NULL),
                    DLA_ERR_FORMAT, "argument targets: 2x2 \"CB\"");
    const double big[4] = {1, 3, 2, 1};
    nn_expect_error(dla_ctc(y, nn_from(big, "", DLA_DIMS(2, 2)), NULL, NULL, NULL),
                    DLA_ERR_INVALID_ARGUMENT,
                    "targets(1, 0) is 3, which is not a class index in 0..2");
    const double blank[4] = {1, 0, 2, 1};
    nn_expect_error(dla_ctc(y, nn_from(blank, "", DLA_DIMS(2, 2)), NULL, NULL, NULL),
                    DLA_ERR_INVALID_ARGUMENT, "targets(1, 0) is 0, the blank (option blank_index "
                    "\"first\")");
    nn_expect_error(dla_ctc(y, tg, NULL, NULL, &(dla_ctc_options){.blank_index = "last"}),
                    DLA_ERR_INVALID_ARGUMENT, "targets(0, 1) is 2, the blank (option blank_index "
                    "\"last\")");
    const double frac[4] = {1, 1.5, 2, 1};
    nn_expect_error(dla_ctc(y, nn_from(frac, "", DLA_DIMS(2, 2)), NULL, NULL, NULL),
                    DLA_ERR_INVALID_ARGUMENT, "targets(1, 0) is 1.5");
    const double hole[4] = {0, 1, 1, 1};
    nn_expect_error(dla_ctc(y, tg, NULL, nn_from(hole, "", DLA_DIMS(2, 2)), NULL),
                    DLA_ERR_INVALID_ARGUMENT, "argument targetsMask: row 0 has a 0 before a "
                    "nonzero at column 1");
    nn_expect_error(dla_ctc(y, tg, dla_ones(DLA_BOOL, "", DLA_DIMS(2, 3)), NULL, NULL),
                    DLA_ERR_SHAPE, "argument YMask: 2x3; it must be B-by-T, 2x4 as Y");
    nn_expect_error(dla_ctc(y, tg, NULL, dla_ones(DLA_BOOL, "", DLA_DIMS(2, 3)), NULL),
                    DLA_ERR_SHAPE, "argument targetsMask: 2x3; it must be B-by-S, 2x2");
    nn_expect_error(dla_ctc(y, tg, NULL, NULL, &(dla_ctc_options){.blank_index = "middle"}),
                    DLA_ERR_INVALID_ARGUMENT, "option blank_index: \"middle\"");
    nn_expect_error(dla_ctc(y, tg, NULL, NULL, &(dla_ctc_options){.reduction = "sum"}),
                    DLA_ERR_INVALID_ARGUMENT, "option reduction: \"sum\"; it must be \"mean\"");
    nn_expect_error(dla_ctc(y, dla_ones(DLA_BOOL, "", DLA_DIMS(2, 2)), NULL, NULL, NULL),
                    DLA_ERR_DTYPE, "argument targets: logical");
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_losses_match_every_alignment_blank_first),
        TU_TEST(test_losses_match_every_alignment_blank_last),
        TU_TEST(test_a_target_too_long_for_its_steps_is_inf),
        TU_TEST(test_gradients_match_finite_differences),
        TU_TEST(test_a_replay_gives_eager_bits),
        TU_TEST(test_a_replay_with_bad_targets_gives_nan_not_a_wrong_loss),
        TU_TEST(test_single_precision_and_data_format),
        TU_TEST(test_no_targets_at_all),
        TU_TEST(test_a_nan_in_y_gives_a_nan_loss),
        TU_TEST(test_a_nan_in_the_padding_of_y_has_zero_gradients),
        TU_TEST(test_refusals_name_the_argument),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

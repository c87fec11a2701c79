/*
 * test_loss.c - the losses (crossentropy, binary cross-entropy, l1loss,
 * l2loss, mse, huber), one-hot encoding and decoding, comparisons and
 * where.
 *
 * Forward values are checked against hand-computed cases and against a
 * naive loop over every element that expands weights and mask itself, for
 * every combination of target categories, weights, mask, normalization
 * factor and reduction on "CB", "CBT" and "SSCB" data. Gradients are
 * checked against finite differences in float64 for the same combinations.
 */
#define _GNU_SOURCE /* open_memstream */
#include "testutil.h"

#include <float.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gradcheck.h"

/* The tensor's elements as doubles (column-major, dense); caller frees. */
static double *fetch(dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    dla_scope_begin();
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    assert_int_equal(dla_tensor_to_host(d, out, sizeof(double) * (size_t)n), DLA_OK);
    dla_scope_end();
    return out;
}

static dla_tensor *from(const double *v, const char *fmt, int nd, const int64_t *dims)
{
    return dla_tensor_from_host(v, DLA_F64, fmt, nd, dims);
}

static double *uniform(int64_t n, double lo, double hi)
{
    double *p = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * tu_unit();
    return p;
}

static int64_t numel(int nd, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    return n;
}

/* The coordinate along dim d of linear index i. */
static int64_t coord(int64_t i, int d, const int64_t *dims)
{
    for (int k = 0; k < d; k++)
        i /= dims[k];
    return i % dims[d];
}

static int label_pos(const char *fmt, char c)
{
    const char *p = strchr(fmt, c);
    return p ? (int)(p - fmt) : -1;
}

#define assert_error_says(t, status, text)                                                         \
    do {                                                                                           \
        assert_int_equal(dla_tensor_status(t), status);                                            \
        if (!strstr(dla_tensor_error(t), text))                                                    \
            fail_msg("error \"%s\" does not say \"%s\"", dla_tensor_error(t), text);               \
    } while (0)

/* ------------------------------------------------------ hand-computed */

static void test_crossentropy_of_a_small_batch_by_hand(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y[6] = {0.7, 0.2, 0.1, 0.1, 0.8, 0.1};
    const double t[6] = {1, 0, 0, 0, 0, 1};
    dla_tensor *ty = from(y, "CB", DLA_DIMS(3, 2)), *tt = from(t, "CB", DLA_DIMS(3, 2));
    dla_tensor *l = dla_crossentropy(ty, tt, NULL);
    assert_int_equal(dla_tensor_status(l), DLA_OK);
    assert_int_equal(dla_tensor_ndims(l), 2);
    assert_int_equal(dla_tensor_numel(l), 1);
    assert_string_equal(dla_tensor_format(l), "");
    assert_true(tu_close(dla_tensor_item(l, 0), -(log(0.7) + log(0.1)) / 2, 1e-15));
    /* Class weights 2, 1, 3 scale each observation by its true class. */
    const double w[3] = {2, 1, 3};
    l = dla_crossentropy(ty, tt, &(dla_crossentropy_options){.weights = from(w, "", DLA_DIMS(3))});
    assert_true(tu_close(dla_tensor_item(l, 0), -(2 * log(0.7) + 3 * log(0.1)) / 2, 1e-15));
    /* Independent: every class is a binary decision. */
    l = dla_crossentropy(ty, tt, &(dla_crossentropy_options){.target_categories = "independent"});
    double want = -(log(0.7) + log(0.8) + log(0.9) + log(0.9) + log(0.2) + log(0.1)) / 2;
    assert_true(tu_close(dla_tensor_item(l, 0), want, 1e-15));
    l = dla_binary_crossentropy(ty, tt, NULL);
    assert_true(tu_close(dla_tensor_item(l, 0), want, 1e-15));
    dla_scope_end();
}

static void test_regression_losses_by_hand(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y[4] = {1, 2, 3, 4}, t[4] = {0, 0, 1, 6};
    dla_tensor *ty = from(y, "CB", DLA_DIMS(2, 2)), *tt = from(t, "CB", DLA_DIMS(2, 2));
    /* mse: (1 + 4 + 4 + 4) / (2 * 2 observations) */
    assert_true(tu_close(dla_tensor_item(dla_mse(ty, tt, NULL), 0), 13.0 / 4, 1e-15));
    /* l2loss: (1 + 4 + 4 + 4) / 2 observations, not halved */
    assert_true(tu_close(dla_tensor_item(dla_l2loss(ty, tt, NULL), 0), 13.0 / 2, 1e-15));
    /* l1loss: (1 + 2 + 2 + 2) / 2 */
    assert_true(tu_close(dla_tensor_item(dla_l1loss(ty, tt, NULL), 0), 7.0 / 2, 1e-15));
    dla_tensor *l = dla_l1loss(ty, tt, &(dla_regression_loss_options){
        .normalization_factor = "all-elements"});
    assert_true(tu_close(dla_tensor_item(l, 0), 7.0 / 4, 1e-15));
    /* mse takes only data_format, as MATLAB's: another option was
     * ignored (a mask silently left padded elements in the loss); it is
     * refused by name, with the loss that has it. */
    l = dla_mse(ty, tt, &(dla_regression_loss_options){.data_format = NULL});
    assert_true(tu_close(dla_tensor_item(l, 0), 13.0 / 4, 1e-15));
    const dla_regression_loss_options set[] = {
        {.weights = ty}, {.weights_format = "CB"}, {.mask = ty}, {.normalization_factor = "none"},
        {.reduction = "none"}};
    const char *const named[] = {"option weights:", "option weights_format:", "option mask:",
                                 "option normalization_factor:", "option reduction:"};
    for (int i = 0; i < 5; i++) {
        l = dla_mse(ty, tt, &set[i]);
        assert_int_equal(dla_tensor_status(l), DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_tensor_error(l), named[i]) || !strstr(dla_tensor_error(l), "dla_l2loss"))
            fail_msg("%s", dla_tensor_error(l));
    }
    dla_scope_end();
}

/* huber with d = Y - T = 0.5 2 2 -2: the first inside the transition point
 * 1 (0.5^2 / 2 = 0.125), the others outside (2 - 1/2 = 1.5). */
static dla_status huber_grad(void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    return dla_gradient(dla_huber(in[0], in[1], NULL), 1, in, out);
}

static void test_huber_by_hand(void **state)
{
    (void)state;
    dla_scope_begin();
    const double y[4] = {0.5, 2, 3, 4}, t[4] = {0, 0, 1, 6};
    dla_tensor *ty = from(y, "CB", DLA_DIMS(2, 2)), *tt = from(t, "CB", DLA_DIMS(2, 2));
    /* batch-size (default): 4.625 / 2 observations */
    assert_true(tu_close(dla_tensor_item(dla_huber(ty, tt, NULL), 0), 4.625 / 2, 1e-15));
    dla_tensor *l = dla_huber(ty, tt, &(dla_huber_options){.normalization_factor = "all-elements"});
    assert_true(tu_close(dla_tensor_item(l, 0), 4.625 / 4, 1e-15));
    l = dla_huber(ty, tt, &(dla_huber_options){.normalization_factor = "none"});
    assert_true(tu_close(dla_tensor_item(l, 0), 4.625, 1e-15));
    /* mask-included: observation 1 keeps 1 of its 2 elements (0.125 / 1),
     * observation 2 both (3 / 2). */
    dla_tensor *m = from((const double[]){1, 0, 1, 1}, "CB", DLA_DIMS(2, 2));
    l = dla_huber(ty, tt, &(dla_huber_options){.mask = m, .normalization_factor = "mask-included"});
    assert_true(tu_close(dla_tensor_item(l, 0), 0.125 + 1.5, 1e-15));
    /* A transition point of 2.5 puts all four inside: (0.25 + 4 + 4 + 4) / 2 / 2. */
    l = dla_huber(ty, tt, &(dla_huber_options){.transition_point = 2.5});
    assert_true(tu_close(dla_tensor_item(l, 0), 12.25 / 4, 1e-15));
    /* 0.25 puts 0.5 outside too: 0.25 * 0.5 - 0.25^2 / 2 = 0.09375; the
     * others 0.25 * 2 - 0.03125 = 0.46875; unreduced. */
    l = dla_huber(ty, tt, &(dla_huber_options){.transition_point = 0.25, .reduction = "none"});
    assert_string_equal(dla_tensor_format(l), "CB");
    double *e = fetch(l);
    const double want[4] = {0.09375, 0.46875, 0.46875, 0.46875};
    for (int i = 0; i < 4; i++)
        assert_true(tu_close(e[i], want[i], 1e-15));
    free(e);
    /* The gradient is d inside and delta * sign(d) outside, over 2 observations. */
    dla_tensor *g;
    assert_int_equal(dla_feval(huber_grad, NULL, 2, (dla_tensor *[]){ty, tt}, 1, &g), DLA_OK);
    double *hg = fetch(g);
    const double want_g[4] = {0.25, 0.5, 0.5, -0.5};
    for (int i = 0; i < 4; i++)
        assert_true(tu_close(hg[i], want_g[i], 1e-15));
    free(hg);
    assert_error_says(dla_huber(ty, tt, &(dla_huber_options){.transition_point = -1}),
                      DLA_ERR_INVALID_ARGUMENT,
                      "dla_huber: option transition_point: -1; it must be positive and finite");
    assert_error_says(dla_huber(ty, tt, &(dla_huber_options){.transition_point = NAN}),
                      DLA_ERR_INVALID_ARGUMENT, "transition_point: nan");
    dla_scope_end();
}

static void test_a_zero_probability_gives_a_large_finite_loss_and_nan_stays_nan(void **state)
{
    (void)state;
    dla_scope_begin();
    const float y[2] = {0, 1}, t[2] = {1, 0};
    dla_tensor *ty = dla_tensor_from_host(y, DLA_F32, "CB", DLA_DIMS(2, 1));
    dla_tensor *tt = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(2, 1));
    double l = dla_tensor_item(dla_crossentropy(ty, tt, NULL), 0);
    assert_true(isfinite(l));
    assert_true(tu_close(l, -log((double)FLT_MIN), 1e-6));
    l = dla_tensor_item(dla_binary_crossentropy(ty, tt, NULL), 0);
    assert_true(tu_close(l, -2 * log((double)FLT_MIN), 1e-6));
    const float yn[2] = {NAN, 1};
    dla_tensor *tn = dla_tensor_from_host(yn, DLA_F32, "CB", DLA_DIMS(2, 1));
    assert_true(isnan(dla_tensor_item(dla_crossentropy(tn, tt, NULL), 0)));
    dla_scope_end();
}

/* L = scale * crossentropy(y, t) over the elements the mask m includes,
 * normalized by their count; the gradient of y. */
static dla_status scaled_masked_ce(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    dla_crossentropy_options o = {.mask = in[2], .normalization_factor = "mask-included"};
    out[0] = dla_affine(dla_crossentropy(in[0], in[1], &o), *(const double *)ctx, 0.0);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void test_an_observation_the_mask_leaves_empty_has_zero_gradients_at_any_scale(void **state)
{
    /* The second observation's mask is all 0: its count was clamped to
     * the least normal number, and the gradient divided by it overflowed
     * to inf for a loss scaled by more than about 2 (double) or 4
     * (single): inf times the mask's 0 gave NaN gradients, which an
     * optimizer step spreads into every weight. The first observation
     * counts 3 included elements (its mask of one step expands over the
     * 3 classes). */
    (void)state;
    const double y[6] = {0.2, 0.3, 0.5, 0.1, 0.6, 0.3}, t[6] = {0, 1, 0, 0, 0, 1}, m[2] = {1, 0};
    for (int dt = 0; dt < 2; dt++) {
        dla_scope_begin();
        const dla_dtype dtype = dt ? DLA_F64 : DLA_F32;
        dla_tensor *in[3] = {dla_cast(dla_tensor_from_host(y, DLA_F64, "CB", DLA_DIMS(3, 2)), dtype),
                             dla_cast(dla_tensor_from_host(t, DLA_F64, "CB", DLA_DIMS(3, 2)), dtype),
                             dla_cast(dla_tensor_from_host(m, DLA_F64, "CB", DLA_DIMS(1, 2)), dtype)};
        dla_tensor *one[2], *big[2];
        const double s1 = 1.0, s10 = 10.0;
        assert_int_equal(dla_feval(scaled_masked_ce, (void *)&s1, 3, in, 2, one), DLA_OK);
        assert_int_equal(dla_feval(scaled_masked_ce, (void *)&s10, 3, in, 2, big), DLA_OK);
        assert_true(tu_close(dla_tensor_item(big[0], 0), -10.0 * log(0.3) / 3.0, 1e-6));
        for (int i = 0; i < 6; i++) {
            const double g1 = dla_tensor_item(one[1], i), g10 = dla_tensor_item(big[1], i);
            const double want = i == 1 ? -1.0 / 0.3 / 3.0 : 0.0;
            if (!tu_close(g1, want, 1e-6) || !tu_close(g10, 10.0 * want, 1e-6))
                fail_msg("%s, element %d: gradients %g and %g (scaled by 10), want %g and %g",
                         dla_dtype_name(dtype), i, g1, g10, want, 10.0 * want);
        }
        dla_scope_end();
    }
}

/* A loss of kind k (crossentropy exclusive and independent, l2loss,
 * l1loss, huber) with weights in[2] and mask in[3] under the
 * normalization factor ctx; out: the loss and its gradients of y, the
 * targets and the weights. */
static dla_status masked_kind(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)nin, (void)nout;
    const int k = ((const int *)ctx)[0];
    static const char *const norms[] = {"batch-size", "all-elements", "mask-included", "none"};
    const char *nf = norms[((const int *)ctx)[1]];
    const dla_regression_loss_options r = {.weights = in[2], .mask = in[3],
                                           .normalization_factor = nf};
    switch (k) {
    case 0:
    case 1:
        out[0] = dla_crossentropy(in[0], in[1], &(dla_crossentropy_options){
                                                    .target_categories = k ? "independent" : NULL,
                                                    .weights = in[2], .mask = in[3],
                                                    .normalization_factor = nf});
        break;
    case 2: out[0] = dla_l2loss(in[0], in[1], &r); break;
    case 3: out[0] = dla_l1loss(in[0], in[1], &r); break;
    default:
        out[0] = dla_huber(in[0], in[1], &(dla_huber_options){.weights = in[2], .mask = in[3],
                                                              .normalization_factor = nf});
    }
    return dla_gradient(out[0], 3, in, out + 1);
}

static void test_a_nan_target_the_mask_excludes_adds_nothing(void **state)
{
    /* MATLAB's semantic segmentation example marks unlabeled pixels NaN in
     * the targets and masks them out (mask = ~isnan(T)); its loss function
     * leaves the NaN in T. The mask multiplied the elementwise loss, and
     * 0 * NaN made the loss and every gradient NaN. Masked elements now
     * add exactly 0: the loss and the included gradients are those of
     * targets with 0 there, and the excluded gradients are 0. */
    (void)state;
    enum { N = 2 * 2 * 3 * 2 };
    double y[N], t[N], tz[N], w[N], m[N];
    for (int i = 0; i < N; i++) {
        const int pixel = i % 4 + 4 * (i / 12), labeled = pixel != 1 && pixel != 6;
        y[i] = 0.1 + 0.8 * fabs(sin(i));
        w[i] = 1 + i % 5;
        m[i] = labeled;
        tz[i] = labeled ? (i % 3 == 0) : 0;
        t[i] = labeled ? tz[i] : NAN;
    }
    for (int k = 0; k < 5; k++)
        for (int nf = 0; nf < 4; nf++) {
            dla_scope_begin();
            const int ctx[2] = {k, nf};
            dla_tensor *o[4], *z[4];
            dla_tensor *yy = from(y, "SSCB", DLA_DIMS(2, 2, 3, 2)),
                       *ww = from(w, "SSCB", DLA_DIMS(2, 2, 3, 2)),
                       *mm = from(m, "SSCB", DLA_DIMS(2, 2, 3, 2));
            assert_int_equal(dla_feval(masked_kind, (void *)ctx, 4,
                                       (dla_tensor *[]){yy, from(t, "SSCB", DLA_DIMS(2, 2, 3, 2)),
                                                        ww, mm}, 4, o), DLA_OK);
            assert_int_equal(dla_feval(masked_kind, (void *)ctx, 4,
                                       (dla_tensor *[]){yy, from(tz, "SSCB", DLA_DIMS(2, 2, 3, 2)),
                                                        ww, mm}, 4, z), DLA_OK);
            const double l = dla_tensor_item(o[0], 0), lz = dla_tensor_item(z[0], 0);
            if (!tu_close(l, lz, 1e-12))
                fail_msg("kind %d, factor %d: loss %g, with zero targets %g", k, nf, l, lz);
            for (int g = 1; g < 4; g++)
                for (int i = 0; i < N; i++) {
                    const double a = dla_tensor_item(o[g], i), b = dla_tensor_item(z[g], i);
                    /* an excluded target's own gradient is 0; its others as with 0 */
                    const double want = !m[i] && g != 2 ? 0.0 : b;
                    if (!m[i] && g == 2 && !(a == 0.0))
                        fail_msg("kind %d, factor %d: excluded target %d has gradient %g", k, nf,
                                 i, a);
                    if (!(fabs(a - want) <= 1e-12 * (1 + fabs(want))))
                        fail_msg("kind %d, factor %d: gradient %d, element %d: %g, want %g", k,
                                 nf, g, i, a, want);
                }
            dla_scope_end();
        }
}

/* ------------------------------------------- every option, naive loops */

enum { K_EXCL, K_INDEP, K_L1, K_L2, K_MSE, K_HUBER };
/* Below most |Y - T| of the cases (in [0, 0.95]), so that both pieces of
 * huber are taken. */
#define HUBER_DELTA 0.3
enum { W_NONE, W_CLASS, W_OBS, W_FULL, W_FMT_STRING, W_COUNT };
enum { M_NONE, M_FULL_LOGICAL, M_PER_STEP, M_COUNT };
static const char *const norms[] = {"batch", "all-elements", "mask-included", "none"};

typedef struct shape {
    const char *fmt;
    int nd;
    int64_t dims[4];
} shape;

static const shape shapes[] = {
    {"CB", 2, {4, 5}},
    {"CBT", 3, {3, 4, 2}},
    {"SSCB", 4, {2, 3, 3, 2}},
};

typedef struct lcase {
    const shape *s;
    int kind, wmode, mmode, norm, unreduced;
    /* host data, Y's size unless noted */
    double *y, *t, *w, *m; /* w and m as stored (their own dims) */
    int64_t wdims[4], mdims[4];
    int wnd, mnd;
    const char *wfmt, *wfmt_opt, *mfmt;
} lcase;

static double elem(int kind, double y, double t)
{
    switch (kind) {
    case K_EXCL: return -t * log(y);
    case K_INDEP: return -(t * log(y) + (1 - t) * log(1 - y));
    case K_L1: return fabs(y - t);
    case K_L2: return (y - t) * (y - t);
    case K_HUBER:
        return fabs(y - t) <= HUBER_DELTA ? (y - t) * (y - t) / 2
                                          : HUBER_DELTA * fabs(y - t) - HUBER_DELTA * HUBER_DELTA / 2;
    default: return (y - t) * (y - t) / 2;
    }
}

/* Builds the weights and mask of c on the host, with their own dims. */
static void make_case_data(lcase *c)
{
    const shape *s = c->s;
    int64_t n = numel(s->nd, s->dims);
    int cd = label_pos(s->fmt, 'C'), bd = label_pos(s->fmt, 'B');
    c->y = uniform(n, 0.05, 0.95);
    c->t = uniform(n, 0.0, 1.0);
    c->w = c->m = NULL;
    c->wfmt = c->wfmt_opt = c->mfmt = "";
    switch (c->wmode) {
    case W_CLASS: /* unformatted vector of C values: class weights */
        c->wnd = 1;
        c->wdims[0] = s->dims[cd];
        break;
    case W_OBS: /* formatted "B" vector: per-observation weights */
        c->wnd = 1;
        c->wdims[0] = s->dims[bd];
        c->wfmt = "B";
        break;
    case W_FULL: /* formatted, Y's dims */
        c->wnd = s->nd;
        memcpy(c->wdims, s->dims, sizeof c->wdims);
        c->wfmt = s->fmt;
        break;
    case W_FMT_STRING: /* unformatted B x C labelled by weights_format "BC" */
        c->wnd = 2;
        c->wdims[0] = s->dims[bd];
        c->wdims[1] = s->dims[cd];
        c->wfmt_opt = "BC";
        break;
    }
    if (c->wmode != W_NONE)
        c->w = uniform(numel(c->wnd, c->wdims), 0.5, 2.0);
    switch (c->mmode) {
    case M_FULL_LOGICAL: /* unformatted, Y's layout and dims */
        c->mnd = s->nd;
        memcpy(c->mdims, s->dims, sizeof c->mdims);
        break;
    case M_PER_STEP: /* formatted with Y's labels, C of size 1 */
        c->mnd = s->nd;
        memcpy(c->mdims, s->dims, sizeof c->mdims);
        c->mdims[cd] = 1;
        c->mfmt = s->fmt;
        break;
    }
    if (c->mmode != M_NONE) {
        int64_t mn = numel(c->mnd, c->mdims);
        c->m = malloc(sizeof(double) * (size_t)mn);
        for (int64_t i = 0; i < mn; i++)
            c->m[i] = tu_unit() < 0.7;
        c->m[0] = 1; /* observation 0 is never empty; the last may be */
        if (c->mmode == M_PER_STEP)
            for (int64_t i = 0; i < mn; i++)
                if (coord(i, bd, c->mdims) == c->mdims[bd] - 1)
                    c->m[i] = 0;
    }
}

static void free_case_data(lcase *c)
{
    free(c->y);
    free(c->t);
    free(c->w);
    free(c->m);
}

/* The weight and mask of element i of Y, expanded by hand. */
static double weight_at(const lcase *c, int64_t i)
{
    const shape *s = c->s;
    int cd = label_pos(s->fmt, 'C'), bd = label_pos(s->fmt, 'B');
    switch (c->wmode) {
    case W_CLASS: return c->w[coord(i, cd, s->dims)];
    case W_OBS: return c->w[coord(i, bd, s->dims)];
    case W_FULL: return c->w[i];
    case W_FMT_STRING: return c->w[coord(i, bd, s->dims) + c->wdims[0] * coord(i, cd, s->dims)];
    default: return 1;
    }
}

static double mask_at(const lcase *c, int64_t i)
{
    const shape *s = c->s;
    if (c->mmode == M_NONE)
        return 1;
    if (c->mmode == M_FULL_LOGICAL)
        return c->m[i];
    int64_t j = 0, step = 1;
    for (int d = 0; d < s->nd; d++) {
        j += (c->mdims[d] == 1 ? 0 : coord(i, d, s->dims)) * step;
        step *= c->mdims[d];
    }
    return c->m[j];
}

/* The reference: the loss (or the unreduced loss into out). */
static double reference(const lcase *c, double *out)
{
    const shape *s = c->s;
    int64_t n = numel(s->nd, s->dims);
    int bd = label_pos(s->fmt, 'B');
    int64_t nb = bd >= 0 ? s->dims[bd] : 1;
    double total = 0, obs_sum[16] = {0}, obs_cnt[16] = {0};
    for (int64_t i = 0; i < n; i++) {
        double e = elem(c->kind, c->y[i], c->t[i]) * weight_at(c, i) * mask_at(c, i);
        if (out)
            out[i] = e;
        total += e;
        int64_t b = bd >= 0 ? coord(i, bd, s->dims) : 0;
        obs_sum[b] += e;
        obs_cnt[b] += mask_at(c, i);
    }
    switch (c->norm) {
    case 0: return total / (double)nb;
    case 1: return total / (double)n;
    case 2: {
        double r = 0;
        for (int64_t b = 0; b < nb; b++)
            r += obs_cnt[b] > 0 ? obs_sum[b] / obs_cnt[b] : 0;
        return r;
    }
    default: return total;
    }
}

typedef struct built {
    dla_tensor *w, *m;
} built;

static built build_wm(const lcase *c)
{
    built b = {NULL, NULL};
    if (c->w)
        b.w = from(c->w, c->wfmt, c->wnd, c->wdims);
    if (c->m) {
        dla_tensor *m = from(c->m, c->mfmt, c->mnd, c->mdims);
        b.m = c->mmode == M_FULL_LOGICAL ? dla_cast(m, DLA_BOOL) : m;
    }
    return b;
}

static dla_tensor *run_case(const lcase *c, dla_tensor *y, dla_tensor *t, dla_tensor *w,
                            dla_tensor *m)
{
    const char *red = c->unreduced ? "none" : "sum";
    if (c->kind == K_EXCL || c->kind == K_INDEP) {
        dla_crossentropy_options o = {
            .target_categories = c->kind == K_EXCL ? NULL : "independent",
            .weights = w,
            .weights_format = c->wfmt_opt,
            .mask = m,
            .normalization_factor = norms[c->norm],
            .reduction = red,
        };
        return dla_crossentropy(y, t, &o);
    }
    dla_regression_loss_options o = {
        .weights = w,
        .weights_format = c->wfmt_opt,
        .mask = m,
        .normalization_factor = c->norm == 0 ? "batch-size" : norms[c->norm],
        .reduction = red,
    };
    if (c->kind == K_HUBER)
        return dla_huber(y, t, &(dla_huber_options){
                                   .transition_point = HUBER_DELTA,
                                   .weights = o.weights,
                                   .weights_format = o.weights_format,
                                   .mask = o.mask,
                                   .normalization_factor = o.normalization_factor,
                                   .reduction = o.reduction,
                               });
    switch (c->kind) {
    case K_L1: return dla_l1loss(y, t, &o);
    case K_L2: return dla_l2loss(y, t, &o);
    default: return dla_mse(y, t, NULL); /* the default alone (it takes no other option) */
    }
}

/* Calls fn on every valid combination; mse has only the default. */
static void for_each_case(void (*fn)(lcase *c))
{
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int kind = K_EXCL; kind <= K_HUBER; kind++)
            for (int wm = 0; wm < W_COUNT; wm++)
                for (int mm = 0; mm < M_COUNT; mm++)
                    for (int norm = 0; norm < 4; norm++)
                        for (int unred = 0; unred < 2; unred++) {
                            if (kind == K_MSE && (wm || mm || norm || unred))
                                continue;
                            if (norm == 2 && mm == M_NONE)
                                continue;
                            if (unred && norm)
                                continue; /* the factor is not read then */
                            lcase c = {.s = &shapes[si], .kind = kind, .wmode = wm, .mmode = mm, .norm = norm,
                                       .unreduced = unred};
                            fn(&c);
                        }
}

static void check_forward(lcase *c)
{
    dla_scope_begin();
    make_case_data(c);
    const shape *s = c->s;
    dla_tensor *y = from(c->y, s->fmt, s->nd, s->dims), *t = from(c->t, s->fmt, s->nd, s->dims);
    built b = build_wm(c);
    dla_tensor *l = run_case(c, y, t, b.w, b.m);
    if (dla_tensor_status(l) != DLA_OK)
        fail_msg("kind %d weights %d mask %d norm %s on %s: %s", c->kind, c->wmode, c->mmode,
                 norms[c->norm], s->fmt, dla_tensor_error(l));
    int64_t n = numel(s->nd, s->dims);
    double *want = malloc(sizeof(double) * (size_t)n);
    double ref = reference(c, want);
    if (c->unreduced) {
        assert_string_equal(dla_tensor_format(l), s->fmt);
        assert_int_equal(dla_tensor_numel(l), n);
        double *got = fetch(l);
        for (int64_t i = 0; i < n; i++)
            if (!tu_close(got[i], want[i], 1e-12))
                fail_msg("kind %d weights %d mask %d unreduced on %s, element %lld: %g, want %g",
                         c->kind, c->wmode, c->mmode, s->fmt, (long long)i, got[i], want[i]);
        free(got);
    } else {
        assert_int_equal(dla_tensor_numel(l), 1);
        double got = dla_tensor_item(l, 0);
        if (!tu_close(got, ref, 1e-12))
            fail_msg("kind %d weights %d mask %d norm %s on %s: %.15g, want %.15g", c->kind,
                     c->wmode, c->mmode, norms[c->norm], s->fmt, got, ref);
    }
    free(want);
    free_case_data(c);
    dla_scope_end();
}

static void test_every_loss_option_matches_a_naive_loop(void **state)
{
    (void)state;
    for_each_case(check_forward);
}

/* ---------------------------------------------------------- gradients */

static dla_tensor *case_fn(void *ctx, dla_tensor *const *in)
{
    const lcase *c = ctx;
    dla_tensor *m = NULL;
    if (c->m) {
        m = from(c->m, c->mfmt, c->mnd, c->mdims);
        if (c->mmode == M_FULL_LOGICAL)
            m = dla_cast(m, DLA_BOOL);
    }
    return run_case(c, in[0], in[1], c->w ? in[2] : NULL, m);
}

static void check_gradient(lcase *c)
{
    /* Fewer shapes for speed: each gradient check runs the loss hundreds
     * of times. The forward test covers the rest. */
    if (c->s != &shapes[0] && c->s != &shapes[1])
        return;
    dla_scope_begin();
    make_case_data(c);
    const shape *s = c->s;
    dla_tensor *in[3] = {from(c->y, s->fmt, s->nd, s->dims), from(c->t, s->fmt, s->nd, s->dims)};
    int nin = 2;
    if (c->w)
        in[nin++] = from(c->w, c->wfmt, c->wnd, c->wdims);
    gc_check(case_fn, c, nin, in, (const int[]){1, 1, 1}, 1e-6);
    gc_check2(case_fn, c, nin, in, (const int[]){1, 1, 1}, 1e-6);
    free_case_data(c);
    dla_scope_end();
}

static void test_every_loss_option_has_the_finite_difference_gradient(void **state)
{
    (void)state;
    for_each_case(check_gradient);
}

/* A mask (not differentiable) reached through ctx; Y and T on "SSCB". */
static void test_loss_gradients_on_image_data_with_class_weights_and_mask(void **state)
{
    (void)state;
    lcase c = {.s = &shapes[2], .kind = K_EXCL, .wmode = W_CLASS, .mmode = M_PER_STEP, .norm = 2};
    check_forward(&c);
    c.s = &shapes[0]; /* check_gradient's shape filter; run it on SSCB below */
    dla_scope_begin();
    c.s = &shapes[2];
    make_case_data(&c);
    const shape *s = c.s;
    dla_tensor *in[3] = {from(c.y, s->fmt, s->nd, s->dims), from(c.t, s->fmt, s->nd, s->dims),
                         from(c.w, c.wfmt, c.wnd, c.wdims)};
    gc_check(case_fn, &c, 3, in, (const int[]){1, 1, 1}, 1e-6);
    gc_check2(case_fn, &c, 3, in, (const int[]){1, 1, 1}, 1e-6);
    free_case_data(&c);
    dla_scope_end();
}

/* --------------------------------------------------- formats and errors */

static dla_tensor *ce_data_format(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    return dla_crossentropy(in[0], in[1], &(dla_crossentropy_options){.data_format = "BC"});
}

static void test_data_format_labels_an_unformatted_y_in_any_order(void **state)
{
    (void)state;
    dla_scope_begin();
    /* Y as B x C = 3 x 4, unformatted; the same data as "CB" transposed. */
    double *y = uniform(12, 0.05, 0.95), *t = uniform(12, 0, 1), yt[12], tt[12];
    for (int b = 0; b < 3; b++)
        for (int c = 0; c < 4; c++) {
            yt[c + 4 * b] = y[b + 3 * c];
            tt[c + 4 * b] = t[b + 3 * c];
        }
    dla_tensor *uy = from(y, "", DLA_DIMS(3, 4)), *ut = from(t, "", DLA_DIMS(3, 4));
    dla_tensor *fy = from(yt, "CB", DLA_DIMS(4, 3)), *ft = from(tt, "CB", DLA_DIMS(4, 3));
    double a = dla_tensor_item(dla_crossentropy(uy, ut, &(dla_crossentropy_options){
                                                             .data_format = "BC"}),
                               0);
    double b = dla_tensor_item(dla_crossentropy(fy, ft, NULL), 0);
    assert_true(tu_close(a, b, 1e-14));
    /* Reduction "none" comes back unformatted, in Y's own layout. */
    dla_tensor *u = dla_l2loss(uy, ut, &(dla_regression_loss_options){.data_format = "BC",
                                                                       .reduction = "none"});
    assert_string_equal(dla_tensor_format(u), "");
    assert_int_equal(dla_tensor_dim(u, 1), 3);
    assert_int_equal(dla_tensor_dim(u, 2), 4);
    double *got = fetch(u);
    for (int i = 0; i < 12; i++)
        assert_true(tu_close(got[i], (y[i] - t[i]) * (y[i] - t[i]), 1e-14));
    free(got);
    gc_check(ce_data_format, NULL, 2, (dla_tensor *[]){uy, ut}, (const int[]){1, 1}, 1e-6);
    gc_check2(ce_data_format, NULL, 2, (dla_tensor *[]){uy, ut}, (const int[]){1, 1}, 1e-6);
    free(y);
    free(t);
    dla_scope_end();
}

/* A trailing dim of 1 past the labels (B x C x 1, as a sum over dim 3
 * leaves it) is MATLAB's trailing singleton: it failed saying y was a
 * "scalar" with no channel dim, since the reordering could not take the
 * extra dim. */
static void test_data_format_in_another_order_takes_trailing_singletons(void **state)
{
    (void)state;
    dla_scope_begin();
    double *y = uniform(12, 0.05, 0.95), *t = uniform(12, 0, 1);
    dla_tensor *uy = from(y, "", DLA_DIMS(3, 4, 1)), *ut = from(t, "", DLA_DIMS(3, 4, 1));
    dla_tensor *ry = from(y, "", DLA_DIMS(3, 4)), *rt = from(t, "", DLA_DIMS(3, 4));
    const dla_crossentropy_options bc = {.data_format = "BC"};
    dla_tensor *a = dla_crossentropy(uy, ut, &bc), *b = dla_crossentropy(ry, rt, &bc);
    assert_int_equal(dla_tensor_status(a), DLA_OK);
    assert_true(tu_close(dla_tensor_item(a, 0), dla_tensor_item(b, 0), 1e-14));
    dla_tensor *u = dla_l2loss(uy, ut, &(dla_regression_loss_options){.data_format = "BC",
                                                                       .reduction = "none"});
    assert_int_equal(dla_tensor_status(u), DLA_OK);
    assert_int_equal(dla_tensor_dim(u, 1), 3);
    assert_int_equal(dla_tensor_dim(u, 2), 4);
    double *got = fetch(u);
    for (int i = 0; i < 12; i++)
        assert_true(tu_close(got[i], (y[i] - t[i]) * (y[i] - t[i]), 1e-14));
    free(got);
    gc_check(ce_data_format, NULL, 2, (dla_tensor *[]){uy, ut}, (const int[]){1, 1}, 1e-6);
    free(y);
    free(t);
    dla_scope_end();
}

static void test_targets_of_another_dtype_are_converted(void **state)
{
    (void)state;
    dla_scope_begin();
    const float y[4] = {0.25f, 0.75f, 0.5f, 0.5f};
    const int32_t t[4] = {0, 1, 1, 0};
    dla_tensor *ty = dla_tensor_from_host(y, DLA_F32, "CB", DLA_DIMS(2, 2));
    dla_tensor *tt = dla_tensor_from_host(t, DLA_I32, "CB", DLA_DIMS(2, 2));
    dla_tensor *l = dla_crossentropy(ty, tt, NULL);
    assert_int_equal(dla_tensor_dtype(l), DLA_F32);
    assert_true(tu_close(dla_tensor_item(l, 0), -(log(0.75) + log(0.5)) / 2, 1e-6));
    dla_scope_end();
}

static void test_loss_errors_name_the_argument_and_the_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y = dla_ones(DLA_F64, "CB", DLA_DIMS(10, 4));
    dla_tensor *u = dla_ones(DLA_F64, "", DLA_DIMS(10, 4));
    assert_error_says(dla_crossentropy(u, u, NULL), DLA_ERR_FORMAT,
                      "dla_crossentropy: argument y: 10x4 is unformatted; give it labels or set "
                      "data_format");
    assert_error_says(dla_crossentropy(y, dla_ones(DLA_F64, "CB", DLA_DIMS(10, 5)), NULL),
                      DLA_ERR_SHAPE, "dla_crossentropy: argument targets: 10x5 does not match y's 10x4");
    assert_error_says(dla_crossentropy(y, dla_ones(DLA_F64, "CBT", DLA_DIMS(10, 4, 1)), NULL),
                      DLA_ERR_FORMAT, "argument targets: format \"CBT\" differs from y's \"CB\"");
    assert_error_says(dla_crossentropy(y, y, &(dla_crossentropy_options){
                                                 .weights = dla_ones(DLA_F64, "", DLA_DIMS(7))}),
                      DLA_ERR_SHAPE, "dla_crossentropy: argument weights: 7");
    assert_error_says(dla_crossentropy(y, y, &(dla_crossentropy_options){
                                                 .weights = dla_ones(DLA_F64, "T", DLA_DIMS(3))}),
                      DLA_ERR_FORMAT, "argument weights: 3 \"T\" has a 'T' dim of size 3 that y (10x4 \"CB\") lacks");
    assert_error_says(dla_crossentropy(y, y, &(dla_crossentropy_options){
                                                 .normalization_factor = "mean"}),
                      DLA_ERR_INVALID_ARGUMENT, "option normalization_factor: \"mean\"");
    assert_error_says(dla_crossentropy(y, y, &(dla_crossentropy_options){
                                                 .target_categories = "multi"}),
                      DLA_ERR_INVALID_ARGUMENT, "option target_categories: \"multi\"");
    assert_error_says(dla_l2loss(y, y, &(dla_regression_loss_options){
                                           .normalization_factor = "mask-included"}),
                      DLA_ERR_INVALID_ARGUMENT, "dla_l2loss: option normalization_factor: \"mask-included\" needs a mask");
    assert_error_says(dla_l1loss(y, y, &(dla_regression_loss_options){
                                           .mask = dla_ones(DLA_F64, "CB", DLA_DIMS(10, 3))}),
                      DLA_ERR_SHAPE, "dla_l1loss: argument mask: 10x3 \"CB\" does not broadcast against y (10x4 \"CB\")");
    assert_error_says(dla_crossentropy(dla_ones(DLA_F64, "SB", DLA_DIMS(3, 2)),
                                       dla_ones(DLA_F64, "SB", DLA_DIMS(3, 2)), NULL),
                      DLA_ERR_FORMAT, "has no channel (C) dim");
    assert_error_says(dla_mse(dla_ones(DLA_I32, "CB", DLA_DIMS(2, 2)), y, NULL), DLA_ERR_DTYPE,
                      "dla_mse: argument y: int32");
    assert_error_says(dla_crossentropy(u, u, &(dla_crossentropy_options){.data_format = "CX"}),
                      DLA_ERR_FORMAT, "unknown label 'X'");
    /* Sticky: an error tensor in is the same error out. */
    dla_tensor *bad = dla_reshape(y, "", DLA_DIMS(7));
    assert_int_equal(dla_tensor_status(dla_mse(bad, y, NULL)), DLA_ERR_SHAPE);
    dla_scope_end();
}

/* The docs' accelerated loss sets weights_format "C" on its class weights;
 * given weights already formatted "C" it must take them as they are, not
 * refuse them with a message that their format is the one asked for. A
 * weights_format that differs from the weights' own labels is refused,
 * naming both. */
static void test_weights_format_may_repeat_the_weights_own_format(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(3);
    dla_tensor *y = dla_softmax(dla_randn(DLA_F64, "CB", DLA_DIMS(4, 5)));
    dla_tensor *t = dla_onehotencode(
        dla_tensor_from_host((int32_t[]){0, 1, 2, 3, 1}, DLA_I32, "CB", DLA_DIMS(1, 5)), 4, NULL);
    const double w[4] = {1, 2, 3, 4};
    dla_tensor *wu = dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(4));
    dla_tensor *wc = dla_tensor_from_host(w, DLA_F64, "C", DLA_DIMS(4));
    dla_tensor *ref = dla_crossentropy(y, t, &(dla_crossentropy_options){.weights = wu,
                                                                         .weights_format = "C"});
    dla_tensor *same = dla_crossentropy(y, t, &(dla_crossentropy_options){.weights = wc,
                                                                          .weights_format = "C"});
    assert_int_equal(dla_tensor_status(ref), DLA_OK);
    assert_int_equal(dla_tensor_status(same), DLA_OK);
    assert_true(dla_tensor_item(ref, 0) == dla_tensor_item(same, 0));
    dla_tensor *wcb = dla_tensor_from_host(w, DLA_F64, "CB", DLA_DIMS(4, 1));
    assert_error_says(dla_l2loss(y, y, &(dla_regression_loss_options){.weights = wcb,
                                                                      .weights_format = "BC"}),
                      DLA_ERR_FORMAT,
                      "dla_l2loss: option weights_format: \"BC\" differs from the weights' own "
                      "format \"CB\"");
    dla_scope_end();
}

/* ------------------------------------------------------------- one-hot */

static void test_onehotencode_puts_each_label_on_its_class(void **state)
{
    (void)state;
    dla_scope_begin();
    const int32_t lab[4] = {2, 0, 1, 2};
    dla_tensor *l = dla_tensor_from_host(lab, DLA_I32, "CB", DLA_DIMS(1, 4));
    dla_tensor *e = dla_onehotencode(l, 3, NULL);
    assert_int_equal(dla_tensor_status(e), DLA_OK);
    assert_int_equal(dla_tensor_dtype(e), DLA_F32);
    assert_string_equal(dla_tensor_format(e), "CB");
    assert_int_equal(dla_tensor_dim(e, 1), 3);
    assert_int_equal(dla_tensor_dim(e, 2), 4);
    double *v = fetch(e);
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 3; k++)
            assert_true(v[k + 3 * b] == (k == lab[b]));
    free(v);
    /* Class values, an unformatted row (a label that is no class is an
     * error: test_onehotencode_refuses_labels_outside_the_classes). */
    const int32_t cls[3] = {10, 20, 30}, lab2[4] = {20, 30, 10, 20};
    dla_tensor *row = dla_tensor_from_host(lab2, DLA_I32, "", DLA_DIMS(1, 4));
    e = dla_onehotencode(row, 3, &(dla_onehot_options){.classes = cls, .dtype = DLA_F64});
    assert_int_equal(dla_tensor_dtype(e), DLA_F64);
    v = fetch(e);
    const double want[12] = {0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0};
    for (int i = 0; i < 12; i++)
        assert_true(v[i] == want[i]);
    free(v);
    /* Along dim 2 of a column. */
    dla_tensor *col = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(4, 1));
    e = dla_onehotencode(col, 3, &(dla_onehot_options){.feature_dim = 2});
    assert_int_equal(dla_tensor_dim(e, 1), 4);
    assert_int_equal(dla_tensor_dim(e, 2), 3);
    v = fetch(e);
    for (int b = 0; b < 4; b++)
        for (int k = 0; k < 3; k++)
            assert_true(v[b + 4 * k] == (k == lab[b]));
    free(v);
    assert_error_says(dla_onehotencode(col, 3, &(dla_onehot_options){.feature_dim = 1}),
                      DLA_ERR_INVALID_ARGUMENT,
                      "dla_onehotencode: argument labels: 4x1 has size 4 along the feature dim 1");
    assert_error_says(dla_onehotencode(l, 0, NULL), DLA_ERR_INVALID_ARGUMENT, "num_classes: 0");
    dla_scope_end();
}

/* A label outside the classes used to encode as a column of zeros: a
 * network trained on it learns nothing from that observation, silently. */
static void test_onehotencode_refuses_labels_outside_the_classes(void **state)
{
    (void)state;
    dla_scope_begin();
    /* The first bad label, its index, the range; no 1-based hint for a 7. */
    dla_tensor *l = dla_tensor_from_host((int32_t[]){0, 1, 7, 5}, DLA_I32, "CB", DLA_DIMS(1, 4));
    dla_tensor *e = dla_onehotencode(l, 3, NULL);
    assert_error_says(e, DLA_ERR_INVALID_ARGUMENT,
                      "dla_onehotencode: argument labels (1x4 int32): labels[2] is 7, which is not "
                      "a class number in 0..2 (num_classes 3)");
    assert_null(strstr(dla_tensor_error(e), "1-based"));
    /* MATLAB's 1..K labels: named as such. */
    l = dla_tensor_from_host((int32_t[]){1, 3, 2, 3}, DLA_I32, "CB", DLA_DIMS(1, 4));
    assert_error_says(dla_onehotencode(l, 3, NULL), DLA_ERR_INVALID_ARGUMENT,
                      "labels[1] is 3, which is not a class number in 0..2 (num_classes 3); the "
                      "labels look 1-based: MATLAB numbers categories from 1, dlaccel numbers "
                      "classes from 0 (subtract 1)");
    /* The bad value is K but a 0 is there too: K + 1 classes in 0..K, not
     * 1-based (the hint told the user to subtract 1, making the 0 a -1;
     * trainnet's check already said nothing there). */
    l = dla_tensor_from_host((int32_t[]){0, 2}, DLA_I32, "", DLA_DIMS(1, 2));
    e = dla_onehotencode(l, 2, NULL);
    assert_error_says(e, DLA_ERR_INVALID_ARGUMENT, "labels[1] is 2, which is not a class number");
    assert_null(strstr(dla_tensor_error(e), "1-based"));
    /* Negative, fractional, NaN labels and uint8 ones. */
    l = dla_tensor_from_host((int32_t[]){0, -1}, DLA_I32, "", DLA_DIMS(1, 2));
    assert_error_says(dla_onehotencode(l, 2, NULL), DLA_ERR_INVALID_ARGUMENT, "labels[1] is -1");
    l = dla_tensor_from_host((double[]){1, 0.5}, DLA_F64, "", DLA_DIMS(1, 2));
    assert_error_says(dla_onehotencode(l, 2, NULL), DLA_ERR_INVALID_ARGUMENT, "labels[1] is 0.5");
    l = dla_tensor_from_host((float[]){NAN, 0}, DLA_F32, "", DLA_DIMS(1, 2));
    assert_error_says(dla_onehotencode(l, 2, NULL), DLA_ERR_INVALID_ARGUMENT, "labels[0] is nan");
    l = dla_tensor_from_host((uint8_t[]){9, 10}, DLA_U8, "", DLA_DIMS(1, 2));
    assert_error_says(dla_onehotencode(l, 10, NULL), DLA_ERR_INVALID_ARGUMENT,
                      "labels[1] is 10, which is not a class number in 0..9 (num_classes 10); the "
                      "labels look 1-based");
    /* A view: the index is the view's own (first dim fastest). */
    dla_tensor *m = dla_tensor_from_host((int32_t[]){0, 1, 2, 1, 4, 0}, DLA_I32, "", DLA_DIMS(2, 3));
    dla_tensor *r = dla_slice(m, 1, 1, 1, 2); /* 1x3: 1, 1, 0 (second row) */
    assert_int_equal(dla_tensor_status(dla_onehotencode(r, 2, NULL)), DLA_OK);
    r = dla_slice(m, 1, 0, 1, 1); /* 1x3: 0, 2, 4 */
    assert_error_says(dla_onehotencode(r, 4, NULL), DLA_ERR_INVALID_ARGUMENT,
                      "argument labels (1x3 int32): labels[2] is 4");
    /* With class values: a label that is none of them. */
    const int32_t cls[3] = {10, 20, 30};
    l = dla_tensor_from_host((int32_t[]){20, 30, 10, 99}, DLA_I32, "", DLA_DIMS(1, 4));
    e = dla_onehotencode(l, 3, &(dla_onehot_options){.classes = cls});
    assert_error_says(e, DLA_ERR_INVALID_ARGUMENT,
                      "labels[3] is 99, which is not one of the 3 values of option classes");
    assert_null(strstr(dla_tensor_error(e), "1-based"));
    /* A class value listed twice: 20 was hot at positions 1 and 3. */
    const int32_t twice[4] = {10, 20, 30, 20};
    l = dla_tensor_from_host((int32_t[]){20, 30}, DLA_I32, "", DLA_DIMS(1, 2));
    assert_error_says(dla_onehotencode(l, 4, &(dla_onehot_options){.classes = twice}),
                      DLA_ERR_INVALID_ARGUMENT,
                      "dla_onehotencode: option classes: classes[1] and classes[3] are both 20");
    dla_onehot_options first3 = {.classes = twice};
    assert_int_equal(dla_tensor_status(dla_onehotencode(l, 3, &first3)), DLA_OK);
    dla_scope_end();
}

static dla_status encode_fn(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_onehotencode(in[0], 3, NULL);
    return dla_tensor_status(out[0]);
}

/* Inside an accelerated function the labels are a traced input: reading
 * them to check would make the trace data-dependent, so it is not done. */
static void test_onehotencode_keeps_an_accelerated_trace_free_of_host_reads(void **state)
{
    (void)state;
    dla_accel *af = dla_accelerate(encode_fn, NULL);
    for (int call = 0; call < 2; call++) {
        dla_scope_begin();
        dla_tensor *l = dla_tensor_from_host((int32_t[]){2, 0, 1, 2}, DLA_I32, "CB", DLA_DIMS(1, 4));
        dla_tensor *e;
        assert_int_equal(dla_accel_feval(af, NULL, 1, &l, 1, &e), DLA_OK);
        double *v = fetch(e);
        for (int b = 0; b < 4; b++)
            for (int k = 0; k < 3; k++)
                assert_true(v[k + 3 * b] == (k == (int[]){2, 0, 1, 2}[b]));
        free(v);
        dla_scope_end();
    }
    assert_true(dla_accel_hit_rate(af) > 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_accel_print_trace(af, 0, f), DLA_OK);
    fclose(f);
    assert_null(strstr(text, "data-dependent"));
    free(text);
    dla_accel_free(af);
}

/* Targets of another class count than y: named as such (trainnet's
 * 3-class targets for a 2-output network). */
static void test_crossentropy_names_a_class_count_mismatch(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *y = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 8));
    assert_error_says(dla_crossentropy(y, dla_ones(DLA_F32, "CB", DLA_DIMS(3, 8)), NULL),
                      DLA_ERR_SHAPE,
                      "dla_crossentropy: argument targets: 3 classes (the C dim of 3x8) where y "
                      "(2x8) has 2: the class counts of the targets and of y (the network's "
                      "output) differ");
    /* Unformatted targets read in y's layout; class numbers get a hint. */
    dla_tensor *e = dla_crossentropy(y, dla_zeros(DLA_I32, "", DLA_DIMS(1, 8)), NULL);
    assert_error_says(e, DLA_ERR_SHAPE, "1 classes (the C dim of 1x8) where y (2x8) has 2");
    assert_non_null(strstr(dla_tensor_error(e), "dla_onehotencode(targets, num_classes, NULL)"));
    assert_error_says(dla_binary_crossentropy(y, dla_ones(DLA_F32, "CB", DLA_DIMS(3, 8)), NULL),
                      DLA_ERR_SHAPE, "dla_binary_crossentropy: argument targets: 3 classes");
    assert_error_says(dla_l2loss(y, dla_ones(DLA_F32, "CB", DLA_DIMS(3, 8)), NULL), DLA_ERR_SHAPE,
                      "dla_l2loss: argument targets: 3 channels (the C dim of 3x8) where y (2x8) "
                      "has 2");
    dla_scope_end();
}

static void test_onehotdecode_takes_the_first_largest_and_round_trips(void **state)
{
    (void)state;
    dla_scope_begin();
    const double s[9] = {0.1, 0.7, 0.2, /**/ 0.5, 0.5, 0, /**/ 0, 0, 3};
    dla_tensor *ts = from(s, "CB", DLA_DIMS(3, 3));
    dla_tensor *d = dla_onehotdecode(ts, NULL);
    assert_int_equal(dla_tensor_dtype(d), DLA_I32);
    assert_string_equal(dla_tensor_format(d), "CB");
    assert_int_equal(dla_tensor_dim(d, 1), 1);
    assert_true(dla_tensor_item(d, 0) == 1 && dla_tensor_item(d, 1) == 0 &&
                dla_tensor_item(d, 2) == 2);
    const int32_t cls[3] = {7, 8, 9};
    d = dla_onehotdecode(ts, &(dla_onehot_options){.classes = cls});
    assert_true(dla_tensor_item(d, 0) == 8 && dla_tensor_item(d, 1) == 7 &&
                dla_tensor_item(d, 2) == 9);
    /* decode(encode(labels)) == labels, counted with dla_eq. */
    int32_t lab[50];
    for (int i = 0; i < 50; i++)
        lab[i] = (int32_t)tu_int(0, 9);
    dla_tensor *tl = dla_tensor_from_host(lab, DLA_I32, "CB", DLA_DIMS(1, 50));
    dla_tensor *hit = dla_eq(dla_onehotdecode(dla_onehotencode(tl, 10, NULL), NULL), tl);
    assert_int_equal(dla_tensor_dtype(hit), DLA_BOOL);
    assert_true(dla_tensor_item(dla_sum(dla_cast(hit, DLA_F64), 0, NULL), 0) == 50);
    assert_error_says(dla_onehotdecode(dla_ones(DLA_F64, "SB", DLA_DIMS(2, 2)), NULL),
                      DLA_ERR_INVALID_ARGUMENT, "0 means the C dim, but scores");
    dla_scope_end();
}

/* MATLAB's onehotdecode of a C x 0 batch is an empty 1 x 0 result; the
 * decode refused it, so classify/accuracy code failed on an empty batch. */
static void test_onehotdecode_of_an_empty_batch_is_empty(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *d = dla_onehotdecode(dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 0)), NULL);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    assert_int_equal(dla_tensor_dtype(d), DLA_I32);
    assert_string_equal(dla_tensor_format(d), "CB");
    assert_int_equal(dla_tensor_dim(d, 1), 1);
    assert_int_equal(dla_tensor_dim(d, 2), 0);
    const int32_t cls[3] = {7, 8, 9};
    d = dla_onehotdecode(dla_zeros(DLA_F64, "", DLA_DIMS(3, 0)),
                         &(dla_onehot_options){.classes = cls});
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    assert_int_equal(dla_tensor_numel(d), 0);
    /* The decode of an empty batch compares with empty labels. */
    dla_tensor *hit = dla_eq(dla_onehotdecode(dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 0)), NULL),
                             dla_zeros(DLA_I32, "CB", DLA_DIMS(1, 0)));
    assert_int_equal(dla_tensor_status(hit), DLA_OK);
    assert_int_equal(dla_tensor_numel(hit), 0);
    /* No classes to choose from has no answer. */
    assert_error_says(dla_onehotdecode(dla_zeros(DLA_F32, "CB", DLA_DIMS(0, 4)), NULL),
                      DLA_ERR_SHAPE, "dla_onehotdecode: argument scores: 0x4 has no classes");
    dla_scope_end();
}

/* --------------------------------------------------- comparisons, where */

static void test_comparisons_broadcast_and_compare_any_dtypes(void **state)
{
    (void)state;
    dla_scope_begin();
    double a[6], b[3] = {0.5, NAN, -1};
    for (int i = 0; i < 6; i++)
        a[i] = (double)tu_int(-2, 2) * 0.5;
    a[1] = 0.5;
    dla_tensor *ta = from(a, "CB", DLA_DIMS(3, 2)), *tb = from(b, "", DLA_DIMS(3, 1));
    dla_tensor *(*fn[6])(dla_tensor *, dla_tensor *) = {dla_eq, dla_ne, dla_lt,
                                                         dla_le, dla_gt, dla_ge};
    for (int k = 0; k < 6; k++) {
        dla_tensor *z = fn[k](ta, tb);
        assert_int_equal(dla_tensor_dtype(z), DLA_BOOL);
        assert_string_equal(dla_tensor_format(z), "CB");
        double *v = fetch(z);
        for (int i = 0; i < 6; i++) {
            double x = a[i], y = b[i % 3];
            int want = k == 0 ? x == y : k == 1 ? x != y : k == 2 ? x < y : k == 3 ? x <= y
                     : k == 4 ? x > y : x >= y;
            if (v[i] != want)
                fail_msg("comparison %d element %d: %g vs %g gave %g", k, i, x, y, v[i]);
        }
        free(v);
    }
    /* int32 against double, exactly. */
    const int32_t ia[3] = {1, 2, 16777217};
    const double da[3] = {1, 3, 16777217};
    dla_tensor *z = dla_eq(dla_tensor_from_host(ia, DLA_I32, "", DLA_DIMS(3)),
                           from(da, "", DLA_DIMS(3)));
    assert_true(dla_tensor_item(z, 0) == 1 && dla_tensor_item(z, 1) == 0 &&
                dla_tensor_item(z, 2) == 1);
    assert_error_says(dla_lt(ta, dla_ones(DLA_F64, "", DLA_DIMS(4))), DLA_ERR_SHAPE,
                      "dla_lt: arguments a (3x2) and b (4): dim 1 is 3 against 4");
    assert_error_says(dla_ge(ta, dla_ones(DLA_F64, "SB", DLA_DIMS(3, 2))), DLA_ERR_FORMAT,
                      "dla_ge: arguments a and b have formats \"CB\" and \"SB\"");
    dla_scope_end();
}

/* Bytes in blocks of 1 MiB or more that the library holds, and their
 * highest count since a test last set big_peak; counted on top of
 * tu_alloc, which still counts the blocks. */
static long long big_live, big_peak;

static void *bytes_alloc(void *user, void *ptr, size_t size)
{
    const size_t mib = (size_t)1 << 20;
    size_t old = ptr ? malloc_usable_size(ptr) : 0;
    void *p = tu_alloc(user, ptr, size);
    if (!size || p) {
        size_t now = p ? malloc_usable_size(p) : 0;
        big_live += (now >= mib ? (long long)now : 0) - (old >= mib ? (long long)old : 0);
        if (big_live > big_peak)
            big_peak = big_live;
    }
    return p;
}

/* Integer operands are compared exactly, and in memory of their own size:
 * every operand was widened to double first, so two uint8 images of N
 * bytes took 16N more (a 2 GiB image compared with another peaked near
 * 22 GiB). Now a large operand is converted a chunk at a time; the results
 * are the comparisons of the values, as before, through broadcasting,
 * views and chunks of the result that split a dim. */
static void test_comparisons_of_integers_are_exact_and_take_no_widened_copies(void **state)
{
    (void)state;
    dla_scope_begin();
    /* Exact at the ends of int32, which single cannot hold apart. */
    const int32_t ia[4] = {INT32_MAX, INT32_MAX - 1, INT32_MIN, 16777217};
    const int32_t ib[4] = {INT32_MAX - 1, INT32_MAX - 1, INT32_MIN + 1, 16777216};
    dla_tensor *ta = dla_tensor_from_host(ia, DLA_I32, "", DLA_DIMS(4));
    dla_tensor *tb = dla_tensor_from_host(ib, DLA_I32, "", DLA_DIMS(4));
    dla_tensor *z = dla_eq(ta, tb);
    assert_true(dla_tensor_item(z, 0) == 0 && dla_tensor_item(z, 1) == 1 &&
                dla_tensor_item(z, 2) == 0 && dla_tensor_item(z, 3) == 0);
    z = dla_gt(ta, tb);
    assert_true(dla_tensor_item(z, 0) == 1 && dla_tensor_item(z, 2) == 0 &&
                dla_tensor_item(z, 3) == 1);
    /* int32 against single: 16777217 is no single, and must not become one. */
    z = dla_ne(ta, dla_tensor_from_host((const float[]){2147483648.0f, 0, 0, 16777216.0f},
                                         DLA_F32, "", DLA_DIMS(4)));
    assert_true(dla_tensor_item(z, 0) == 1 && dla_tensor_item(z, 3) == 1);
    /* uint8 against single: 255 < 255.5. */
    z = dla_lt(dla_tensor_from_host((const uint8_t[]){255, 0}, DLA_U8, "", DLA_DIMS(2)),
               dla_tensor_from_host((const float[]){255.5f, -0.5f}, DLA_F32, "", DLA_DIMS(2)));
    assert_true(dla_tensor_item(z, 0) == 1 && dla_tensor_item(z, 1) == 0);

    /* Two uint8 images of 64 MiB: the result's 64 MiB, and chunks. */
    const int64_t n = (int64_t)1 << 26;
    uint8_t *ua = malloc((size_t)n), *ub = malloc((size_t)n), *got = malloc((size_t)n);
    assert_true(ua && ub && got);
    for (int64_t i = 0; i < n; i++) {
        ua[i] = (uint8_t)(i * 7 + (i >> 12));
        ub[i] = (uint8_t)(i * 3);
    }
    dla_tensor *a = dla_tensor_from_host(ua, DLA_U8, "SSCB", DLA_DIMS(1 << 12, 1 << 10, 4, 4));
    dla_tensor *b = dla_tensor_from_host(ub, DLA_U8, "SSCB", DLA_DIMS(1 << 12, 1 << 10, 4, 4));
    dla_set_allocator(bytes_alloc, NULL);
    big_live = big_peak = 0;
    z = dla_le(a, b);
    long long grown = big_peak;
    dla_set_allocator(tu_alloc, NULL);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    /* The result's n bytes and chunks of a few MiB (staged on the host as
     * well where the kernels run through the cpu fallback, as on testmem);
     * the two double copies alone were 16n. */
    if (grown > 3 * n)
        fail_msg("uint8 <= uint8 of %lld elements took %lld MiB more than its operands", (long long)n,
                 grown >> 20);
    assert_int_equal(dla_tensor_to_host(z, got, (size_t)n), DLA_OK);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != (ua[i] <= ub[i]))
            fail_msg("uint8 <= uint8: element %lld: %d <= %d gave %d", (long long)i, ua[i], ub[i],
                     got[i]);

    /* A chunk of the result smaller than one column: dim 0 of 2^22 + 3
     * against an int32 row (double), the uint8 operand read through a
     * permuted view. */
    const int64_t rows = ((int64_t)1 << 22) + 3;
    dla_tensor *col = dla_permute(dla_reshape(dla_slice(dla_reshape(a, "", DLA_DIMS(n)), 1, 0, 1, 3 * rows),
                                              "", DLA_DIMS(3, rows)),
                                  DLA_DIMS(2, 1)); /* element (r, c) is ua[3r + c] */
    const int32_t row[3] = {100, -1, 300};
    z = dla_ge(col, dla_tensor_from_host(row, DLA_I32, "", DLA_DIMS(1, 3)));
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_int_equal(dla_tensor_dim(z, 1), rows);
    assert_int_equal(dla_tensor_to_host(z, got, (size_t)(3 * rows)), DLA_OK);
    for (int64_t c = 0; c < 3; c++)
        for (int64_t r = 0; r < rows; r++)
            if (got[c * rows + r] != (ua[3 * r + c] >= row[c]))
                fail_msg("permuted uint8 >= int32 row: element (%lld, %lld) gave %d",
                         (long long)r, (long long)c, got[c * rows + r]);
    free(ua);
    free(ub);
    free(got);
    dla_scope_end();
}

static dla_tensor *where_fn(void *ctx, dla_tensor *const *in)
{
    return dla_where((dla_tensor *)ctx, in[0], in[1]);
}

static void test_where_picks_and_passes_gradients_to_the_picked_side(void **state)
{
    (void)state;
    dla_scope_begin();
    double c[6], a[6], b[2] = {-7, 9};
    for (int i = 0; i < 6; i++) {
        c[i] = tu_unit() < 0.5;
        a[i] = tu_unit();
    }
    dla_tensor *cond = dla_cast(from(c, "", DLA_DIMS(3, 2)), DLA_BOOL);
    dla_tensor *ta = from(a, "SB", DLA_DIMS(3, 2)), *tb = from(b, "SB", DLA_DIMS(1, 2));
    dla_tensor *z = dla_where(cond, ta, tb);
    assert_string_equal(dla_tensor_format(z), "SB");
    double *v = fetch(z);
    for (int i = 0; i < 6; i++)
        assert_true(v[i] == (c[i] ? a[i] : b[i / 3]));
    free(v);
    /* A numeric condition counts as nonzero. */
    z = dla_where(from(c, "", DLA_DIMS(3, 2)), ta, tb);
    v = fetch(z);
    for (int i = 0; i < 6; i++)
        assert_true(v[i] == (c[i] ? a[i] : b[i / 3]));
    free(v);
    gc_check(where_fn, cond, 2, (dla_tensor *[]){ta, tb}, (const int[]){1, 1}, 1e-8);
    gc_check2(where_fn, cond, 2, (dla_tensor *[]){ta, tb}, (const int[]){1, 1}, 1e-8);
    assert_error_says(dla_where(cond, ta, dla_ones(DLA_F32, "SB", DLA_DIMS(1, 2))), DLA_ERR_DTYPE,
                      "dla_where: arguments a (double) and b (single) must share a float dtype");
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    dla_rng_seed(3);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_crossentropy_of_a_small_batch_by_hand),
        TU_TEST(test_regression_losses_by_hand),
        TU_TEST(test_huber_by_hand),
        TU_TEST(test_a_zero_probability_gives_a_large_finite_loss_and_nan_stays_nan),
        TU_TEST(test_an_observation_the_mask_leaves_empty_has_zero_gradients_at_any_scale),
        TU_TEST(test_a_nan_target_the_mask_excludes_adds_nothing),
        TU_TEST(test_every_loss_option_matches_a_naive_loop),
        TU_TEST(test_every_loss_option_has_the_finite_difference_gradient),
        TU_TEST(test_loss_gradients_on_image_data_with_class_weights_and_mask),
        TU_TEST(test_data_format_labels_an_unformatted_y_in_any_order),
        TU_TEST(test_data_format_in_another_order_takes_trailing_singletons),
        TU_TEST(test_targets_of_another_dtype_are_converted),
        TU_TEST(test_loss_errors_name_the_argument_and_the_shapes),
        TU_TEST(test_weights_format_may_repeat_the_weights_own_format),
        TU_TEST(test_onehotencode_puts_each_label_on_its_class),
        TU_TEST(test_onehotencode_refuses_labels_outside_the_classes),
        TU_TEST(test_onehotencode_keeps_an_accelerated_trace_free_of_host_reads),
        TU_TEST(test_crossentropy_names_a_class_count_mismatch),
        TU_TEST(test_onehotdecode_takes_the_first_largest_and_round_trips),
        TU_TEST(test_onehotdecode_of_an_empty_batch_is_empty),
        TU_TEST(test_comparisons_broadcast_and_compare_any_dtypes),
        TU_TEST(test_comparisons_of_integers_are_exact_and_take_no_widened_copies),
        TU_TEST(test_where_picks_and_passes_gradients_to_the_picked_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

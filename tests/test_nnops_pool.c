/*
 * test_nnops_pool.c - max and average pooling, windowed and global: values
 * against hand-worked cases and a naive host loop (strides, overlapping
 * windows, asymmetric and "same" padding, padding in or out of the mean,
 * 1-D, 2-D, 3-D and time pooling, time pooling of many planes with ties
 * and a NaN), finite-difference gradients of each, and error messages.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"

/* ------------------------------------------------------ the host reference */

typedef struct pref {
    int n;
    int64_t in[3], win[3], stride[3], pb[3], pe[3];
    int64_t planes;
    int max, exclude;
} pref;

static int64_t ref_out(const pref *p, int d)
{
    return d < p->n ? (p->in[d] + p->pb[d] + p->pe[d] - p->win[d]) / p->stride[d] + 1 : 1;
}

/* x: in[0] x in[1] x in[2] x planes, column-major; y likewise with the
 * output sizes. */
static void ref_pool(const pref *p, const double *x, double *y)
{
    int64_t in[3], out[3], win[3], st[3], pb[3];
    for (int d = 0; d < 3; d++) {
        int used = d < p->n;
        in[d] = used ? p->in[d] : 1;
        out[d] = ref_out(p, d);
        win[d] = used ? p->win[d] : 1;
        st[d] = used ? p->stride[d] : 1;
        pb[d] = used ? p->pb[d] : 0;
    }
    int64_t xin = in[0] * in[1] * in[2], yout = out[0] * out[1] * out[2];
    for (int64_t q = 0; q < p->planes; q++)
        for (int64_t o2 = 0; o2 < out[2]; o2++)
            for (int64_t o1 = 0; o1 < out[1]; o1++)
                for (int64_t o0 = 0; o0 < out[0]; o0++) {
                    double acc = p->max ? -INFINITY : 0.0;
                    int64_t valid = 0;
                    for (int64_t k2 = 0; k2 < win[2]; k2++)
                        for (int64_t k1 = 0; k1 < win[1]; k1++)
                            for (int64_t k0 = 0; k0 < win[0]; k0++) {
                                int64_t i0 = o0 * st[0] - pb[0] + k0, i1 = o1 * st[1] - pb[1] + k1,
                                        i2 = o2 * st[2] - pb[2] + k2;
                                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 ||
                                    i2 >= in[2])
                                    continue;
                                double v = x[q * xin + i0 + in[0] * (i1 + in[1] * i2)];
                                acc = p->max ? fmax(acc, v) : acc + v;
                                valid++;
                            }
                    if (!p->max)
                        acc /= p->exclude ? (double)valid : (double)(win[0] * win[1] * win[2]);
                    y[q * yout + o0 + out[0] * (o1 + out[1] * o2)] = acc;
                }
}

/* ------------------------------------------------------- hand-worked cases */

static void test_one_dim_pooling_by_hand(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = nn_from((double[]){1, 5, 2, 4, 3}, "SCB", DLA_DIMS(5, 1, 1));
    nn_expect(dla_maxpool(x, DLA_DIMS(2), NULL), "SCB", DLA_DIMS(4, 1, 1),
              (double[]){5, 5, 4, 4}, 0);
    nn_expect(dla_avgpool(x, DLA_DIMS(2), NULL), "SCB", DLA_DIMS(4, 1, 1),
              (double[]){3, 3.5, 3, 3.5}, 1e-15);
    /* padding 1 on both sides, stride 2: windows [pad 1] [5 2] [4 3] */
    dla_pool_options o = {.stride = {2}, .padding = {{1}, {1}}};
    nn_expect(dla_avgpool(x, DLA_DIMS(2), &o), "SCB", DLA_DIMS(3, 1, 1),
              (double[]){0.5, 3.5, 3.5}, 1e-15);
    o.padding_value = "mean";
    nn_expect(dla_avgpool(x, DLA_DIMS(2), &o), "SCB", DLA_DIMS(3, 1, 1),
              (double[]){1, 3.5, 3.5}, 1e-15);
    o.padding_value = NULL;
    /* padding never wins a maximum, even against negative numbers */
    dla_tensor *neg = dla_affine(x, -1.0, 0.0);
    nn_expect(dla_maxpool(neg, DLA_DIMS(2), &o), "SCB", DLA_DIMS(3, 1, 1),
              (double[]){-1, -2, -3}, 0);
    /* "same", stride 2: ceil(5/2) = 3 outputs, padding 0 before, 1 after */
    nn_expect(dla_maxpool(x, DLA_DIMS(2), &(dla_pool_options){.stride = {2}, .padding_mode = "same"}),
              "SCB", DLA_DIMS(3, 1, 1), (double[]){5, 4, 3}, 0);
    dla_scope_end();
}

/* ------------------------------------------------------ against naive loops */

typedef struct pool_case {
    int64_t win[3], stride[3], pad[2][3];
    const char *mode, *value;
} pool_case;

/* Runs both pools on x (S dims first, nsp of them, then planes) for case c
 * and compares with the reference. */
static void check_case(dla_tensor *x, const double *xv, int nsp, int64_t planes,
                       const pool_case *c)
{
    pref p = {.n = nsp, .planes = planes};
    int64_t ydims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(x, ydims);
    for (int d = 0; d < nsp; d++) {
        p.in[d] = ydims[d];
        p.win[d] = c->win[d];
        p.stride[d] = c->stride[d] ? c->stride[d] : 1;
        p.pb[d] = c->pad[0][d];
        p.pe[d] = c->pad[1][d];
        if (c->mode) { /* same */
            int64_t out = (p.in[d] + p.stride[d] - 1) / p.stride[d];
            int64_t tot = (out - 1) * p.stride[d] + p.win[d] - p.in[d];
            tot = tot < 0 ? 0 : tot;
            p.pb[d] = tot / 2;
            p.pe[d] = tot - tot / 2;
        }
    }
    int64_t ny = planes;
    for (int d = 0; d < nsp; d++) {
        ydims[d] = ref_out(&p, d);
        ny *= ydims[d];
    }
    double *want = malloc(sizeof(double) * (size_t)ny);
    dla_pool_options o = {.padding_mode = c->mode};
    memcpy(o.stride, c->stride, sizeof o.stride);
    memcpy(o.padding, c->pad, sizeof o.padding);
    for (int max = 0; max < 2; max++) {
        p.max = max;
        p.exclude = !max && c->value != NULL;
        o.padding_value = max ? NULL : c->value;
        ref_pool(&p, xv, want);
        dla_tensor *y = max ? dla_maxpool(x, nsp, c->win, &o) : dla_avgpool(x, nsp, c->win, &o);
        nn_expect(y, dla_tensor_format(x), nd, ydims, want, 1e-13);
    }
    free(want);
}

static const pool_case cases2d[] = {
    {{2, 2}, {2, 2}, {{0}, {0}}, NULL, NULL},         /* plain, non-overlapping */
    {{3, 3}, {1, 1}, {{1, 1}, {1, 1}}, NULL, NULL},   /* overlapping, padded */
    {{3, 2}, {2, 1}, {{1, 0}, {2, 1}}, NULL, NULL},   /* asymmetric everything */
    {{3, 3}, {1, 1}, {{1, 1}, {1, 1}}, NULL, "mean"}, /* padding left out of the mean */
    {{3, 2}, {2, 3}, {{0}, {0}}, "same", NULL},       /* "same" with odd totals */
    {{2, 3}, {2, 2}, {{0}, {0}}, "same", "mean"},
    {{5, 6}, {1, 1}, {{0}, {0}}, NULL, NULL},         /* one window covers all */
    /* Pairs along dim 0 with padding along dim 1, in and out of the mean. */
    {{2, 3}, {2, 1}, {{0, 1}, {0, 1}}, NULL, "mean"},
    {{2, 3}, {2, 2}, {{0, 2}, {0, 1}}, NULL, NULL},
};

static void test_two_dim_pooling_matches_naive_loops(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t dims[4] = {5, 6, 2, 3};
    double *xv = nn_values(5 * 6 * 2 * 3);
    dla_tensor *x = nn_from(xv, "SSCB", 4, dims);
    for (size_t k = 0; k < sizeof cases2d / sizeof cases2d[0]; k++)
        check_case(x, xv, 2, 6, &cases2d[k]);
    /* a strided view as input: the same as its dense copy */
    dla_tensor *v = dla_slice(x, 2, 0, 2, DLA_END); /* 5x3x2x3 */
    dla_tensor *vd = dla_contiguous(v);
    double *vv = nn_fetch(vd);
    check_case(v, vv, 2, 6, &cases2d[1]);
    free(vv);
    free(xv);
    dla_scope_end();
}

static void test_one_and_three_dim_and_time_pooling_match_naive_loops(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 1-D: "SCB" */
    double *xv = nn_values(9 * 2 * 2);
    dla_tensor *x = nn_from(xv, "SCB", DLA_DIMS(9, 2, 2));
    pool_case c1[] = {{{3}, {2}, {{1}, {1}}, NULL, NULL}, {{4}, {3}, {{0}, {0}}, "same", "mean"}};
    for (int k = 0; k < 2; k++)
        check_case(x, xv, 1, 4, &c1[k]);
    free(xv);
    /* 3-D: "SSSCB" */
    xv = nn_values(4 * 5 * 3 * 2 * 2);
    x = nn_from(xv, "SSSCB", DLA_DIMS(4, 5, 3, 2, 2));
    pool_case c3[] = {{{2, 2, 2}, {2, 2, 1}, {{0}, {0}}, NULL, NULL},
                      {{3, 2, 2}, {1, 2, 2}, {{1, 0, 1}, {1, 1, 0}}, NULL, "mean"},
                      {{2, 3, 2}, {2, 2, 2}, {{0}, {0}}, "same", NULL},
                      {{2, 2, 2}, {2, 2, 2}, {{0, 1, 1}, {0, 0, 0}}, NULL, "mean"}};
    for (int k = 0; k < 4; k++)
        check_case(x, xv, 3, 4, &c3[k]);
    free(xv);
    /* time: "CBT" 3x2x7 pools over T; the reference sees T first */
    xv = nn_values(3 * 2 * 7);
    x = nn_from(xv, "CBT", DLA_DIMS(3, 2, 7));
    double tv[42];
    for (int t = 0; t < 7; t++)
        for (int q = 0; q < 6; q++)
            tv[t + 7 * q] = xv[q + 6 * t];
    pref p = {.n = 1, .in = {7}, .win = {3}, .stride = {2}, .pb = {1}, .pe = {1}, .planes = 6};
    double want[24], wt[24];
    for (int max = 0; max < 2; max++) {
        p.max = max;
        ref_pool(&p, tv, wt); /* 4 x 6 */
        for (int t = 0; t < 4; t++)
            for (int q = 0; q < 6; q++)
                want[q + 6 * t] = wt[t + 4 * q];
        dla_pool_options o = {.stride = {2}, .padding = {{1}, {1}}};
        dla_tensor *y = max ? dla_maxpool(x, DLA_DIMS(3), &o) : dla_avgpool(x, DLA_DIMS(3), &o);
        nn_expect(y, "CBT", DLA_DIMS(3, 2, 4), want, 1e-13);
    }
    free(xv);
    dla_scope_end();
}

static void test_global_pooling_reduces_space_or_time(void **state)
{
    (void)state;
    dla_scope_begin();
    double *xv = nn_values(3 * 4 * 2 * 2);
    dla_tensor *x = nn_from(xv, "SSCB", DLA_DIMS(3, 4, 2, 2));
    double wmax[4], wavg[4];
    for (int q = 0; q < 4; q++) {
        wmax[q] = -INFINITY;
        wavg[q] = 0;
        for (int i = 0; i < 12; i++) {
            wmax[q] = fmax(wmax[q], xv[q * 12 + i]);
            wavg[q] += xv[q * 12 + i] / 12;
        }
    }
    nn_expect(dla_global_maxpool(x), "SSCB", DLA_DIMS(1, 1, 2, 2), wmax, 0);
    nn_expect(dla_global_avgpool(x), "SSCB", DLA_DIMS(1, 1, 2, 2), wavg, 1e-14);
    free(xv);
    /* "CBT": over time */
    xv = nn_values(2 * 3 * 5);
    x = nn_from(xv, "CBT", DLA_DIMS(2, 3, 5));
    double tmax[6], tavg[6];
    for (int q = 0; q < 6; q++) {
        tmax[q] = -INFINITY;
        tavg[q] = 0;
        for (int t = 0; t < 5; t++) {
            tmax[q] = fmax(tmax[q], xv[q + 6 * t]);
            tavg[q] += xv[q + 6 * t] / 5;
        }
    }
    nn_expect(dla_global_maxpool(x), "CBT", DLA_DIMS(2, 3, 1), tmax, 0);
    nn_expect(dla_global_avgpool(x), "CBT", DLA_DIMS(2, 3, 1), tavg, 1e-14);
    free(xv);
    dla_scope_end();
}

/* --------------------------------------------------------------- gradients */

typedef struct pgc {
    int max, global;
    int nsp;
    const pool_case *c;
} pgc;

static dla_tensor *pool_fn(void *ctx, dla_tensor *const *in)
{
    const pgc *g = ctx;
    if (g->global)
        return g->max ? dla_global_maxpool(in[0]) : dla_global_avgpool(in[0]);
    dla_pool_options o = {.padding_mode = g->c->mode, .padding_value = g->max ? NULL : g->c->value};
    memcpy(o.stride, g->c->stride, sizeof o.stride);
    memcpy(o.padding, g->c->pad, sizeof o.padding);
    return g->max ? dla_maxpool(in[0], g->nsp, g->c->win, &o)
                  : dla_avgpool(in[0], g->nsp, g->c->win, &o);
}

static void test_pooling_gradients_match_finite_differences(void **state)
{
    (void)state;
    for (int max = 0; max < 2; max++) {
        for (size_t k = 0; k < sizeof cases2d / sizeof cases2d[0]; k++) {
            pgc g = {max, 0, 2, &cases2d[k]};
            dla_tensor *x = nn_rand("SSCB", DLA_DIMS(5, 6, 2, 2));
            gc_check(pool_fn, &g, 1, &x, (int[]){1}, 1e-6);
            gc_check2(pool_fn, &g, 1, &x, (int[]){1}, 1e-6);
            dla_tensor_release(x);
        }
        pool_case c3 = {{2, 3, 2}, {1, 2, 2}, {{1, 1, 0}, {0, 1, 1}}, NULL, "mean"};
        pgc g3 = {max, 0, 3, &c3};
        dla_tensor *x = nn_rand("SSSCB", DLA_DIMS(3, 4, 3, 2, 2));
        gc_check(pool_fn, &g3, 1, &x, (int[]){1}, 1e-6);
        gc_check2(pool_fn, &g3, 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
        pool_case ct = {{3}, {2}, {{1}, {0}}, NULL, NULL};
        pgc gt = {max, 0, 1, &ct};
        x = nn_rand("CBT", DLA_DIMS(3, 2, 6));
        gc_check(pool_fn, &gt, 1, &x, (int[]){1}, 1e-6);
        gc_check2(pool_fn, &gt, 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
        /* A dim after T: the kernel's batch, which max pooling's second
         * derivative offsets the index by. */
        x = nn_rand("CBTU", DLA_DIMS(3, 2, 6, 2));
        gc_check(pool_fn, &gt, 1, &x, (int[]){1}, 1e-6);
        gc_check2(pool_fn, &gt, 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
        pgc gg = {max, 1, 0, NULL};
        x = nn_rand("SSCB", DLA_DIMS(3, 3, 2, 2));
        gc_check(pool_fn, &gg, 1, &x, (int[]){1}, 1e-6);
        gc_check2(pool_fn, &gg, 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
        x = nn_rand("CBT", DLA_DIMS(2, 2, 4));
        gc_check(pool_fn, &gg, 1, &x, (int[]){1}, 1e-6);
        gc_check2(pool_fn, &gg, 1, &x, (int[]){1}, 1e-6);
        dla_tensor_release(x);
    }
}

static dla_status tie_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *l = dla_sum(dla_maxpool(in[0], DLA_DIMS(2), &(dla_pool_options){.stride = {2}}),
                            0, NULL);
    out[0] = l;
    return dla_gradient(l, 1, in, out + 1);
}

static dla_status global_tie_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *l = dla_sum(dla_global_maxpool(in[0]), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 1, in, out + 1);
}

static dla_status square_tie_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dla_maxpool(in[0], DLA_DIMS(2, 2), &(dla_pool_options){.stride = {2, 2}});
    dla_tensor *l = dla_sum(y, 0, NULL);
    out[0] = l;
    out[2] = y;
    return dla_gradient(l, 1, in, out + 1);
}

static dla_status wide_pool_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dla_maxpool(in[0], DLA_DIMS(2, 2, 2), &(dla_pool_options){.stride = {2, 2, 2}});
    out[0] = dla_sum(y, 0, NULL);
    out[2] = y;
    return dla_gradient(out[0], 1, in, out + 1);
}

/* 2x2x2 windows with stride 2 over rows of 35 windows (vectors of 16, a
 * part of one), single and double, values from {0, 1, 2} and NaN, so that
 * ties and NaNs fall in every lane: each window's first maximum in
 * column-major order (NaN over a number, the first NaN) against a loop
 * written out here, in value and in where the gradient goes. */
static void test_max_pool_first_maximum_in_wide_rows(void **state)
{
    (void)state;
    enum { N0 = 70, N1 = 4, N2 = 2, P = 3, O0 = 35, O1 = 2 };
    const int64_t n = (int64_t)N0 * N1 * N2 * P;
    double *xv = malloc(sizeof *xv * (size_t)n), *want_y = malloc(sizeof *want_y * O0 * O1 * P);
    double *want_dx = calloc((size_t)n, sizeof *want_dx);
    uint64_t r = 12345;
    for (int64_t i = 0; i < n; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const unsigned v = (unsigned)(r >> 59) % 7; /* 0..6: 0, 1, 2 thrice, NaN once */
        xv[i] = v == 6 ? NAN : (double)(v % 3);
    }
    for (int p = 0; p < P; p++)
        for (int o1 = 0; o1 < O1; o1++)
            for (int o0 = 0; o0 < O0; o0++) {
                int64_t at = -1;
                double best = 0;
                for (int k2 = 0; k2 < 2; k2++)
                    for (int k1 = 0; k1 < 2; k1++)
                        for (int k0 = 0; k0 < 2; k0++) {
                            const int64_t i = 2 * o0 + k0 + N0 * (2 * o1 + k1 + N1 * (k2 + N2 * p));
                            const double v = xv[i];
                            if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
                                best = v;
                                at = i;
                            }
                        }
                want_y[o0 + O0 * (o1 + O1 * p)] = best;
                want_dx[at] = 1;
            }
    for (int dbl = 0; dbl < 2; dbl++) {
        dla_scope_begin();
        dla_tensor *x = dla_tensor_from_host(xv, DLA_F64, "SSSCB", DLA_DIMS(N0, N1, N2, 1, P));
        if (!dbl)
            x = dla_cast(x, DLA_F32);
        dla_tensor *out[3];
        assert_int_equal(dla_feval(wide_pool_loss, NULL, 1, &x, 3, out), DLA_OK);
        double *y = nn_fetch(out[2]), *dx = nn_fetch(out[1]);
        for (int64_t i = 0; i < O0 * O1 * P; i++)
            if (!(y[i] == want_y[i] || (isnan(y[i]) && isnan(want_y[i]))))
                fail_msg("%s: y[%lld] = %g, want %g", dbl ? "double" : "single", (long long)i,
                         y[i], want_y[i]);
        for (int64_t i = 0; i < n; i++)
            if (dx[i] != want_dx[i])
                fail_msg("%s: dx[%lld] = %g, want %g", dbl ? "double" : "single", (long long)i,
                         dx[i], want_dx[i]);
        free(y);
        free(dx);
        dla_scope_end();
    }
    free(xv);
    free(want_y);
    free(want_dx);
}

static void test_max_pool_gradient_goes_to_the_first_maximum(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 2x2 windows with stride 2 (the cpu plugin's pair path): the first
     * maximum in column-major order across the window's rows, and the
     * first NaN over any number. Window 1 is x(1:2, 1:2) = {3 1; 3 3}
     * (column-major 3, 1, 3, 3), window 2 is {5 NaN; NaN 7}. */
    dla_tensor *sq = nn_from((double[]){3, 1, 5, NAN, 3, 3, NAN, 7}, "SSCB",
                             DLA_DIMS(4, 2, 1, 1));
    dla_tensor *sout[3];
    assert_int_equal(dla_feval(square_tie_loss, NULL, 1, &sq, 3, sout), DLA_OK);
    nn_expect(sout[1], "SSCB", DLA_DIMS(4, 2, 1, 1), (double[]){1, 0, 0, 1, 0, 0, 0, 0}, 0);
    assert_true(dla_tensor_item(sout[2], 0) == 3 && isnan(dla_tensor_item(sout[2], 1)));
    /* A NaN in the window's second row after a number in its first. */
    sq = nn_from((double[]){1, 2, 0, 0, NAN, 9, 0, 0}, "SSCB", DLA_DIMS(4, 2, 1, 1));
    assert_int_equal(dla_feval(square_tie_loss, NULL, 1, &sq, 3, sout), DLA_OK);
    nn_expect(sout[1], "SSCB", DLA_DIMS(4, 2, 1, 1), (double[]){0, 0, 1, 0, 1, 0, 0, 0}, 0);
    assert_true(isnan(dla_tensor_item(sout[2], 0)));
    dla_tensor *x = nn_from((double[]){2, 2, 1, 3, 3, 3}, "SCB", DLA_DIMS(6, 1, 1));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(tie_loss, NULL, 1, &x, 2, out), DLA_OK);
    nn_expect(out[1], "SCB", DLA_DIMS(6, 1, 1), (double[]){1, 0, 0, 1, 1, 0}, 0);
    /* global: the first 3 of each column-major plane (two planes, T pooling) */
    x = nn_from((double[]){1, 3, 3, 0, 2, 2}, "CBT", DLA_DIMS(2, 1, 3));
    assert_int_equal(dla_feval(global_tie_loss, NULL, 1, &x, 2, out), DLA_OK);
    nn_expect(out[1], "CBT", DLA_DIMS(2, 1, 3), (double[]){0, 1, 1, 0, 0, 0}, 0);
    dla_scope_end();
}

/* ------------------------------------------- time pooling of many planes */

/* Pooling over the "T" of "CBT" sequences with many channels x batch
 * (the cpu plugin takes a block of planes along each window there):
 * values, the first maximum (ties and a NaN), and gradients against a host
 * loop, for a global max and for windows of 3, stride 2, padding 1, in
 * double and single. x holds small integers, so ties are many. */
enum { TP_C = 4, TP_B = 5, TP_T = 9, TP_Q = TP_C * TP_B };

typedef struct tp_case {
    int max, global;
    dla_dtype dt;
} tp_case;

static dla_status tp_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const tp_case *c = ctx;
    dla_pool_options o = {.stride = {2}, .padding = {{1}, {1}}};
    dla_tensor *y = c->global ? dla_global_maxpool(in[0])
                    : c->max  ? dla_maxpool(in[0], DLA_DIMS(3), &o)
                              : dla_avgpool(in[0], DLA_DIMS(3), &o);
    out[0] = y;
    /* sum(y .* w), w = 1, 2, 3... over y's elements */
    const int64_t n = dla_tensor_numel(y);
    double w[TP_Q * TP_T];
    for (int64_t i = 0; i < n; i++)
        w[i] = (double)(i + 1);
    dla_tensor *wt = dla_cast(dla_tensor_from_host(w, DLA_F64, dla_tensor_format(y), 3,
                                                   (int64_t[]){dla_tensor_dim(y, 1),
                                                               dla_tensor_dim(y, 2),
                                                               dla_tensor_dim(y, 3)}),
                              c->dt);
    dla_tensor *l = dla_sum(dla_mul(y, wt), 0, NULL);
    return dla_gradient(l, 1, in, out + 1);
}

static void test_time_pooling_of_many_planes_matches_host_loops(void **state)
{
    (void)state;
    double xv[TP_Q * TP_T];
    for (int i = 0; i < TP_Q * TP_T; i++)
        xv[i] = (double)((i * 7 + i / 5) % 4);
    xv[3 + TP_Q * 2] = NAN; /* plane 3, step 3: wins every window it is in */
    /* Steps 2 and 6 of planes 0 and 1 lie in two windows each and are
     * their maximum in both: their gradients add. */
    xv[0 + TP_Q * 1] = 5;
    xv[1 + TP_Q * 5] = 5;
    const tp_case cases[] = {{1, 1, DLA_F64}, {1, 0, DLA_F64}, {0, 0, DLA_F64},
                             {1, 1, DLA_F32}, {1, 0, DLA_F32}, {0, 0, DLA_F32}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const tp_case *c = &cases[k];
        dla_scope_begin();
        dla_tensor *x = dla_cast(nn_from(xv, "CBT", DLA_DIMS(TP_C, TP_B, TP_T)), c->dt);
        dla_tensor *out[2];
        assert_int_equal(dla_feval(tp_loss, (void *)c, 1, &x, 2, out), DLA_OK);
        /* The host loop: windows [o*2-1, o*2+2) clipped, or all T. */
        const int nout = c->global ? 1 : 5;
        double want_y[TP_Q * 5], want_g[TP_Q * TP_T] = {0};
        for (int q = 0; q < TP_Q; q++)
            for (int o = 0; o < nout; o++) {
                const int lo = c->global ? 0 : (o * 2 - 1 < 0 ? 0 : o * 2 - 1);
                const int hi = c->global ? TP_T : (o * 2 + 2 > TP_T ? TP_T : o * 2 + 2);
                const double w = (double)(q + TP_Q * o + 1);
                double best = 0, sum = 0;
                int at = -1;
                for (int t = lo; t < hi; t++) {
                    const double v = xv[q + TP_Q * t];
                    if (at < 0 || v > best || (isnan(v) && !isnan(best)))
                        best = v, at = t;
                    sum += v;
                }
                if (c->max) {
                    want_y[q + TP_Q * o] = best;
                    want_g[q + TP_Q * at] += w;
                } else {
                    want_y[q + TP_Q * o] = sum / 3; /* padding counts: MATLAB's default */
                    for (int t = lo; t < hi; t++)
                        want_g[q + TP_Q * t] += w / 3;
                }
            }
        const double tol = c->dt == DLA_F32 ? 1e-5 : 1e-13;
        for (int i = 0; i < TP_Q * nout; i++) {
            const double got = dla_tensor_item(out[0], i);
            if (isnan(want_y[i]))
                assert_true(isnan(got));
            else
                assert_true(fabs(got - want_y[i]) <= tol * fmax(1, fabs(want_y[i])));
        }
        for (int i = 0; i < TP_Q * TP_T; i++)
            if (!(fabs(dla_tensor_item(out[1], i) - want_g[i]) <= tol * fmax(1, fabs(want_g[i])))) {
                fprintf(stderr, "case %zu: gradient %d is %g, want %g\n", k, i,
                        dla_tensor_item(out[1], i), want_g[i]);
                fail();
            }
        dla_scope_end();
    }
}

/* ------------------------------------------------------------------ errors */

static void test_pooling_errors_name_the_op_argument_and_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "SSCB", DLA_DIMS(4, 5, 2, 3));
    dla_tensor *cb = dla_ones(DLA_F64, "CB", DLA_DIMS(4, 3));
    nn_expect_error(dla_maxpool(cb, DLA_DIMS(2), NULL), DLA_ERR_FORMAT,
                    "dla_maxpool: argument x (4x3 CB) has no \"S\" or \"T\" dim to pool over");
    nn_expect_error(dla_global_avgpool(cb), DLA_ERR_FORMAT,
                    "dla_global_avgpool: argument x (4x3 CB) has no \"S\" or \"T\" dim");
    nn_expect_error(dla_avgpool(x, DLA_DIMS(2, 2, 2), NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_avgpool: argument pool_size: 3 entries for the 2 pooled dims of x "
                    "(4x5x2x3 SSCB)");
    nn_expect_error(dla_maxpool(x, DLA_DIMS(2, 6), NULL), DLA_ERR_SHAPE,
                    "dla_maxpool: argument x (4x5x2x3 SSCB): pooled dim 2 has 5 elements (5 "
                    "padded), fewer than the window (6)");
    nn_expect_error(dla_maxpool(x, DLA_DIMS(2), &(dla_pool_options){.padding = {{0, 2}}}),
                    DLA_ERR_INVALID_ARGUMENT,
                    "dla_maxpool: option padding: 2 before, 0 after pooled dim 2; must be smaller "
                    "than the window (2)");
    nn_expect_error(dla_maxpool(x, DLA_DIMS(2), &(dla_pool_options){.padding_value = "mean"}),
                    DLA_ERR_INVALID_ARGUMENT, "dla_maxpool: option padding_value: \"mean\"");
    nn_expect_error(dla_avgpool(x, DLA_DIMS(2), &(dla_pool_options){.padding_mode = "valid"}),
                    DLA_ERR_INVALID_ARGUMENT, "dla_avgpool: option padding_mode: \"valid\"");
    nn_expect_error(dla_avgpool(x, DLA_DIMS(0), NULL), DLA_ERR_INVALID_ARGUMENT,
                    "dla_avgpool: argument pool_size: 0 along pooled dim 1");
    nn_expect_error(dla_avgpool(x, DLA_DIMS(2), &(dla_pool_options){.stride = {1, -1}}),
                    DLA_ERR_INVALID_ARGUMENT, "dla_avgpool: option stride: -1 along pooled dim 2");
    nn_expect_error(dla_avgpool(x, DLA_DIMS(2), &(dla_pool_options){.padding_mode = "same",
                                                                   .padding = {{1}}}),
                    DLA_ERR_INVALID_ARGUMENT, "padding_mode \"same\" takes no numbers");
    dla_tensor *s4 = dla_ones(DLA_F64, "SSSSCB", DLA_DIMS(2, 2, 2, 2, 1, 1));
    nn_expect_error(dla_maxpool(s4, DLA_DIMS(2), NULL), DLA_ERR_FORMAT,
                    "dla_maxpool: argument x (2x2x2x2x1x1 SSSSCB) has 4 \"S\" dims");
    /* Global max pooling of an empty pooled dim: no maximum, said in the
     * caller's terms (it was "dla_maxpool: argument pool_size: 0 along
     * pooled dim 1", an op and an argument the caller never named). The
     * average of nothing is NaN, as dla_mean's. */
    dla_tensor *e = dla_ones(DLA_F64, "SSCB", DLA_DIMS(0, 5, 2, 3));
    nn_expect_error(dla_global_maxpool(e), DLA_ERR_SHAPE,
                    "dla_global_maxpool: argument x (0x5x2x3 SSCB): pooled dim 1 is empty, so it "
                    "has no maximum to take");
    nn_expect_error(dla_global_maxpool(dla_ones(DLA_F32, "CBT", DLA_DIMS(2, 3, 0))), DLA_ERR_SHAPE,
                    "dla_global_maxpool: argument x (2x3x0 CBT): pooled dim 1 is empty");
    dla_tensor *m = dla_global_avgpool(e);
    assert_int_equal(dla_tensor_numel(m), 6);
    assert_true(isnan(dla_tensor_item(m, 0)));
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_one_dim_pooling_by_hand),
        TU_TEST(test_two_dim_pooling_matches_naive_loops),
        TU_TEST(test_one_and_three_dim_and_time_pooling_match_naive_loops),
        TU_TEST(test_global_pooling_reduces_space_or_time),
        TU_TEST(test_pooling_gradients_match_finite_differences),
        TU_TEST(test_max_pool_gradient_goes_to_the_first_maximum),
        TU_TEST(test_max_pool_first_maximum_in_wide_rows),
        TU_TEST(test_time_pooling_of_many_planes_matches_host_loops),
        TU_TEST(test_pooling_errors_name_the_op_argument_and_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

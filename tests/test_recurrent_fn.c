/*
 * test_recurrent_fn.c - dla_lstm and dla_gru (MATLAB's lstm and gru
 * functions): values against the equations written out as host loops for
 * every reset-gate mode, formats ("CBT", "CT", "CB", unformatted with
 * data_format), initial states of one column or one per observation, the
 * same bits as the layers, finite-difference gradients in every argument,
 * sequences of no steps, and the refusals.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"
#include "tu_assert.h"

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* Row r of W (rows x cols, column-major) times v. */
static double rowdot(const double *w, int64_t rows, int64_t r, const double *v, int64_t n)
{
    double s = 0;
    for (int64_t k = 0; k < n; k++)
        s += w[r + rows * k] * v[k];
    return s;
}

/* MATLAB's LSTM: x C x B x T, h0/c0 H x (1 or B); y H x B x T, h, c H x B. */
static void ref_lstm(const double *x, int64_t nc, int64_t nb, int64_t nt, const double *w,
                     const double *r, const double *b, const double *h0, const double *c0,
                     int64_t s0cols, int64_t nh, double *y, double *h, double *c)
{
    for (int64_t j = 0; j < nb; j++)
        for (int64_t u = 0; u < nh; u++) {
            h[u + nh * j] = h0[u + nh * (s0cols > 1 ? j : 0)];
            c[u + nh * j] = c0[u + nh * (s0cols > 1 ? j : 0)];
        }
    double *hn = malloc(sizeof *hn * (size_t)(nh * nb));
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t j = 0; j < nb; j++) {
            const double *xt = x + nc * (j + nb * t);
            for (int64_t u = 0; u < nh; u++) {
                double z[4];
                for (int g = 0; g < 4; g++) {
                    const int64_t row = g * nh + u;
                    z[g] = rowdot(w, 4 * nh, row, xt, nc) + rowdot(r, 4 * nh, row, h + nh * j, nh) +
                           b[row];
                }
                const double cc = sig(z[1]) * c[u + nh * j] + sig(z[0]) * tanh(z[2]);
                c[u + nh * j] = cc;
                hn[u + nh * j] = sig(z[3]) * tanh(cc);
            }
        }
        memcpy(h, hn, sizeof *h * (size_t)(nh * nb));
        memcpy(y + nh * nb * t, h, sizeof *h * (size_t)(nh * nb));
    }
    free(hn);
}

/* MATLAB's GRU, mode 0 after-, 1 before-multiplication, 2 recurrent bias. */
static void ref_gru(int mode, const double *x, int64_t nc, int64_t nb, int64_t nt,
                    const double *w, const double *r, const double *b, const double *h0,
                    int64_t s0cols, int64_t nh, double *y, double *h)
{
    for (int64_t j = 0; j < nb; j++)
        for (int64_t u = 0; u < nh; u++)
            h[u + nh * j] = h0[u + nh * (s0cols > 1 ? j : 0)];
    double *hn = malloc(sizeof *hn * (size_t)(nh * nb)), *rh = malloc(sizeof *rh * (size_t)nh);
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t j = 0; j < nb; j++) {
            const double *xt = x + nc * (j + nb * t), *hj = h + nh * j;
            double rg[64];
            for (int64_t u = 0; u < nh; u++) {
                const double rb = mode == 2 ? b[3 * nh + u] : 0;
                rg[u] = sig(rowdot(w, 3 * nh, u, xt, nc) + b[u] + rowdot(r, 3 * nh, u, hj, nh) + rb);
            }
            for (int64_t u = 0; u < nh; u++)
                rh[u] = rg[u] * hj[u];
            for (int64_t u = 0; u < nh; u++) {
                const int64_t zr = nh + u, nr = 2 * nh + u;
                const double zb = mode == 2 ? b[3 * nh + zr] : 0, nb2 = mode == 2 ? b[3 * nh + nr] : 0;
                const double zg = sig(rowdot(w, 3 * nh, zr, xt, nc) + b[zr] +
                                      rowdot(r, 3 * nh, zr, hj, nh) + zb);
                const double inner = mode == 1 ? rowdot(r, 3 * nh, nr, rh, nh)
                                               : rg[u] * (rowdot(r, 3 * nh, nr, hj, nh) + nb2);
                const double n = tanh(rowdot(w, 3 * nh, nr, xt, nc) + b[nr] + inner);
                hn[u + nh * j] = (1 - zg) * n + zg * hj[u];
            }
        }
        memcpy(h, hn, sizeof *h * (size_t)(nh * nb));
        memcpy(y + nh * nb * t, h, sizeof *h * (size_t)(nh * nb));
    }
    free(hn);
    free(rh);
}

static double *vals(int64_t n)
{
    double *v = nn_values(n);
    return v;
}

static void test_lstm_follows_the_equations(void **state)
{
    (void)state;
    const int64_t nc = 3, nb = 2, nt = 4, nh = 5;
    double *x = vals(nc * nb * nt), *w = vals(4 * nh * nc), *r = vals(4 * nh * nh),
           *b = vals(4 * nh), *h0 = vals(nh * nb), *c0 = vals(nh * nb);
    double *y = malloc(sizeof *y * (size_t)(nh * nb * nt)), hw[10], cw[10];
    for (int cols = 1; cols <= 2; cols++) {
        ref_lstm(x, nc, nb, nt, w, r, b, h0, c0, cols, nh, y, hw, cw);
        for (int form = 0; form < 2; form++) {
            dla_scope_begin();
            dla_tensor *tx = nn_from(x, form ? "" : "CBT", DLA_DIMS(nc, nb, nt)), *ty, *th, *tc;
            /* Labels on the parameters, as MATLAB's example gives them. */
            assert_int_equal(dla_lstm(tx, nn_from(h0, "", DLA_DIMS(nh, cols)),
                                      nn_from(c0, "", DLA_DIMS(nh, cols)),
                                      nn_from(w, "CU", DLA_DIMS(4 * nh, nc)),
                                      nn_from(r, "CU", DLA_DIMS(4 * nh, nh)),
                                      nn_from(b, "C", DLA_DIMS(4 * nh)),
                                      &(dla_recurrent_options){.data_format = form ? "CBT" : NULL},
                                      &ty, &th, &tc),
                             DLA_OK);
            nn_expect(ty, form ? "" : "CBT", DLA_DIMS(nh, nb, nt), y, 1e-12);
            nn_expect(th, "", DLA_DIMS(nh, nb), hw, 1e-12);
            nn_expect(tc, "", DLA_DIMS(nh, nb), cw, 1e-12);
            dla_scope_end();
        }
    }
    /* "CB": one step, a "CB" result. */
    ref_lstm(x, nc, nb, 1, w, r, b, h0, c0, 1, nh, y, hw, cw);
    dla_scope_begin();
    dla_tensor *ty;
    assert_int_equal(dla_lstm(nn_from(x, "CB", DLA_DIMS(nc, nb)), nn_from(h0, "", DLA_DIMS(nh)),
                              nn_from(c0, "", DLA_DIMS(nh)), nn_from(w, "", DLA_DIMS(4 * nh, nc)),
                              nn_from(r, "", DLA_DIMS(4 * nh, nh)), nn_from(b, "", DLA_DIMS(4 * nh, 1)),
                              NULL, &ty, NULL, NULL),
                     DLA_OK);
    nn_expect(ty, "CB", DLA_DIMS(nh, nb), y, 1e-12);
    dla_scope_end();
    free(x), free(w), free(r), free(b), free(h0), free(c0), free(y);
}

static void test_gru_follows_the_equations_in_every_mode(void **state)
{
    (void)state;
    const int64_t nc = 2, nb = 3, nt = 5, nh = 4;
    static const char *const modes[3] = {NULL, "before-multiplication",
                                         "recurrent-bias-after-multiplication"};
    for (int m = 0; m < 3; m++) {
        const int64_t nbias = m == 2 ? 6 * nh : 3 * nh;
        double *x = vals(nc * nb * nt), *w = vals(3 * nh * nc), *r = vals(3 * nh * nh),
               *b = vals(nbias), *h0 = vals(nh * nb);
        double *y = malloc(sizeof *y * (size_t)(nh * nb * nt)), hw[12];
        for (int cols = 1; cols <= 3; cols += 2) {
            ref_gru(m, x, nc, nb, nt, w, r, b, h0, cols, nh, y, hw);
            dla_scope_begin();
            dla_tensor *ty, *th;
            assert_int_equal(dla_gru(nn_from(x, "CBT", DLA_DIMS(nc, nb, nt)),
                                     nn_from(h0, "", DLA_DIMS(nh, cols)),
                                     nn_from(w, "", DLA_DIMS(3 * nh, nc)),
                                     nn_from(r, "", DLA_DIMS(3 * nh, nh)),
                                     nn_from(b, "", DLA_DIMS(nbias, 1)),
                                     &(dla_recurrent_options){.reset_gate_mode = modes[m]}, &ty,
                                     &th),
                             DLA_OK);
            nn_expect(ty, "CBT", DLA_DIMS(nh, nb, nt), y, 1e-12);
            nn_expect(th, "", DLA_DIMS(nh, nb), hw, 1e-12);
            dla_scope_end();
        }
        free(x), free(w), free(r), free(b), free(h0), free(y);
    }
}

/* The function and the layer are one computation: the same bits. */
static void test_the_functions_give_the_layers_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *ll[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "l"})};
    dla_net *net = dla_net_create(2, ll);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 2, 6)), *yl, *yf, *hs, *cs;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &yl, NULL), DLA_OK);
    assert_int_equal(dla_lstm(x, dla_net_get(net, "l", "HiddenState"),
                              dla_net_get(net, "l", "CellState"),
                              dla_net_get(net, "l", "InputWeights"),
                              dla_net_get(net, "l", "RecurrentWeights"),
                              dla_net_get(net, "l", "Bias"), NULL, &yf, &hs, &cs),
                     DLA_OK);
    assert_true(tu_same_bits(yl, yf));
    dla_net_free(net);
    dla_layer *gl[] = {dla_sequence_input_layer(3, NULL),
                       dla_gru_layer(4, &(dla_gru_layer_options){
                           .name = "g", .reset_gate_mode = "recurrent-bias-after-multiplication",
                           .bias_initializer = "narrow-normal"})};
    net = dla_net_create(2, gl);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &yl, NULL), DLA_OK);
    assert_int_equal(dla_gru(x, dla_net_get(net, "g", "HiddenState"),
                             dla_net_get(net, "g", "InputWeights"),
                             dla_net_get(net, "g", "RecurrentWeights"), dla_net_get(net, "g", "Bias"),
                             &(dla_recurrent_options){
                                 .reset_gate_mode = "recurrent-bias-after-multiplication"},
                             &yf, NULL),
                     DLA_OK);
    assert_true(tu_same_bits(yl, yf));
    dla_net_free(net);
    dla_scope_end();
}

static dla_tensor *lstm_fn(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    dla_tensor *y, *h, *c;
    dla_lstm(in[0], in[1], in[2], in[3], in[4], in[5], NULL, &y, &h, &c);
    /* Every output counts. */
    return dla_add(dla_sum(y, 0, NULL), dla_add(dla_sum(dla_mul(h, h), 0, NULL),
                                               dla_sum(dla_mul(c, h), 0, NULL)));
}

static dla_tensor *gru_fn(void *ctx, dla_tensor *const *in)
{
    dla_tensor *y, *h;
    dla_gru(in[0], in[1], in[2], in[3], in[4], &(dla_recurrent_options){.reset_gate_mode = ctx},
            &y, &h);
    return dla_add(dla_sum(dla_mul(y, y), 0, NULL), dla_sum(h, 0, NULL));
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    const int64_t nc = 2, nb = 2, nt = 3, nh = 3;
    dla_tensor *in[6] = {nn_rand("CBT", DLA_DIMS(nc, nb, nt)), nn_rand("", DLA_DIMS(nh, nb)),
                         nn_rand("", DLA_DIMS(nh, 1)), nn_rand("", DLA_DIMS(4 * nh, nc)),
                         nn_rand("", DLA_DIMS(4 * nh, nh)), nn_rand("", DLA_DIMS(4 * nh, 1))};
    const int check[6] = {1, 1, 1, 1, 1, 1};
    gc_check(lstm_fn, NULL, 6, in, check, 1e-6);
    for (int i = 0; i < 6; i++)
        dla_tensor_release(in[i]);
    static const char *const modes[3] = {"after-multiplication", "before-multiplication",
                                         "recurrent-bias-after-multiplication"};
    for (int m = 0; m < 3; m++) {
        dla_tensor *g[5] = {nn_rand("CBT", DLA_DIMS(nc, nb, nt)), nn_rand("", DLA_DIMS(nh, 1)),
                            nn_rand("", DLA_DIMS(3 * nh, nc)), nn_rand("", DLA_DIMS(3 * nh, nh)),
                            nn_rand("", DLA_DIMS((m == 2 ? 6 : 3) * nh, 1))};
        gc_check(gru_fn, (void *)modes[m], 5, g, check, 1e-6);
        for (int i = 0; i < 5; i++)
            dla_tensor_release(g[i]);
    }
}

/* "CT", one sequence without a "B" dim (MATLAB's lstm and gru take it),
 * is the batch of one: the equations' values, given back as "CT" (H x T;
 * unformatted with data_format "CT"), and its gradients. It was refused
 * ("it takes \"CBT\" sequences, or \"CB\" for one step"). */
static void test_one_sequence_without_a_batch_dim(void **state)
{
    (void)state;
    const int64_t nc = 3, nt = 4, nh = 2;
    double *x = vals(nc * nt), *w = vals(4 * nh * nc), *r = vals(4 * nh * nh), *b = vals(4 * nh),
           *h0 = vals(nh), *c0 = vals(nh), *gw = vals(3 * nh * nc), *gr = vals(3 * nh * nh),
           *gb = vals(3 * nh);
    double y[8], hw[2], cw[2];
    ref_lstm(x, nc, 1, nt, w, r, b, h0, c0, 1, nh, y, hw, cw);
    for (int form = 0; form < 2; form++) {
        dla_scope_begin();
        dla_tensor *ty, *th, *tc;
        if (dla_lstm(nn_from(x, form ? "" : "CT", DLA_DIMS(nc, nt)),
                     nn_from(h0, "", DLA_DIMS(nh, 1)), nn_from(c0, "", DLA_DIMS(nh, 1)),
                     nn_from(w, "", DLA_DIMS(4 * nh, nc)),
                     nn_from(r, "", DLA_DIMS(4 * nh, nh)), nn_from(b, "", DLA_DIMS(4 * nh, 1)),
                     &(dla_recurrent_options){.data_format = form ? "CT" : NULL}, &ty, &th,
                     &tc) != DLA_OK)
            fail_msg("dla_lstm of \"CT\": %s", dla_last_error());
        nn_expect(ty, form ? "" : "CT", DLA_DIMS(nh, nt), y, 1e-12);
        nn_expect(th, "", DLA_DIMS(nh, 1), hw, 1e-12);
        nn_expect(tc, "", DLA_DIMS(nh, 1), cw, 1e-12);
        dla_scope_end();
    }
    ref_gru(0, x, nc, 1, nt, gw, gr, gb, h0, 1, nh, y, hw);
    dla_scope_begin();
    dla_tensor *ty, *th;
    if (dla_gru(nn_from(x, "CT", DLA_DIMS(nc, nt)), nn_from(h0, "", DLA_DIMS(nh, 1)),
                nn_from(gw, "", DLA_DIMS(3 * nh, nc)), nn_from(gr, "", DLA_DIMS(3 * nh, nh)),
                nn_from(gb, "", DLA_DIMS(3 * nh, 1)), NULL, &ty, &th) != DLA_OK)
        fail_msg("dla_gru of \"CT\": %s", dla_last_error());
    nn_expect(ty, "CT", DLA_DIMS(nh, nt), y, 1e-12);
    nn_expect(th, "", DLA_DIMS(nh, 1), hw, 1e-12);
    /* No steps: the empty "CT" sequence and the initial state. */
    assert_int_equal(dla_gru(nn_from(x, "CT", DLA_DIMS(nc, 0)), nn_from(h0, "", DLA_DIMS(nh, 1)),
                             nn_from(gw, "", DLA_DIMS(3 * nh, nc)),
                             nn_from(gr, "", DLA_DIMS(3 * nh, nh)),
                             nn_from(gb, "", DLA_DIMS(3 * nh, 1)), NULL, &ty, &th),
                     DLA_OK);
    nn_expect(ty, "CT", DLA_DIMS(nh, 0), y, 0);
    nn_expect(th, "", DLA_DIMS(nh, 1), h0, 0);
    dla_tensor *in[6] = {nn_from(x, "CT", DLA_DIMS(nc, nt)), nn_from(h0, "", DLA_DIMS(nh, 1)),
                         nn_from(c0, "", DLA_DIMS(nh, 1)), nn_from(w, "", DLA_DIMS(4 * nh, nc)),
                         nn_from(r, "", DLA_DIMS(4 * nh, nh)), nn_from(b, "", DLA_DIMS(4 * nh, 1))};
    gc_check(lstm_fn, NULL, 6, in, (const int[]){1, 1, 1, 1, 1, 1}, 1e-6);
    dla_scope_end();
    free(x), free(w), free(r), free(b), free(h0), free(c0), free(gw), free(gr), free(gb);
}

/* A sequence of no steps: y is H x B x 0 and the states are the initial
 * ones, H x B like after a step even from an H x 1 one (the LSTM gave its
 * hidden state H x B and its cell state H x 1, the GRU H x 1). */
static void test_no_steps_give_the_initial_states_for_every_observation(void **state)
{
    (void)state;
    const int64_t nc = 3, nb = 2, nh = 4;
    double *w = vals(4 * nh * nc), *r = vals(4 * nh * nh), *b = vals(6 * nh), *h0 = vals(nh),
           *c0 = vals(nh), hw[8], cw[8];
    for (int64_t j = 0; j < nb; j++)
        for (int64_t u = 0; u < nh; u++)
            hw[u + nh * j] = h0[u], cw[u + nh * j] = c0[u];
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F64, "CBT", DLA_DIMS(nc, nb, 0)), *y, *h, *c;
    assert_int_equal(dla_lstm(x, nn_from(h0, "", DLA_DIMS(nh, 1)), nn_from(c0, "", DLA_DIMS(nh, 1)),
                              nn_from(w, "", DLA_DIMS(4 * nh, nc)), nn_from(r, "", DLA_DIMS(4 * nh, nh)),
                              nn_from(b, "", DLA_DIMS(4 * nh, 1)), NULL, &y, &h, &c),
                     DLA_OK);
    assert_int_equal(dla_tensor_numel(y), 0);
    assert_int_equal(dla_tensor_dim(y, 1), nh);
    nn_expect(h, "", DLA_DIMS(nh, nb), hw, 0);
    nn_expect(c, "", DLA_DIMS(nh, nb), cw, 0);
    assert_int_equal(dla_gru(x, nn_from(h0, "", DLA_DIMS(nh, 1)), nn_from(w, "", DLA_DIMS(3 * nh, nc)),
                             nn_from(r, "", DLA_DIMS(3 * nh, nh)), nn_from(b, "", DLA_DIMS(3 * nh, 1)),
                             NULL, &y, &h),
                     DLA_OK);
    assert_int_equal(dla_tensor_numel(y), 0);
    nn_expect(h, "", DLA_DIMS(nh, nb), hw, 0);
    dla_scope_end();
    free(w), free(r), free(b), free(h0), free(c0);
}

/* The call's status and *y (read after the call: an argument list would
 * read y before it, in an order C leaves open). */
#define expect_refused(call, y, want, text)                                                        \
    do {                                                                                           \
        const dla_status got_ = (call);                                                            \
        assert_int_equal(got_, want);                                                              \
        nn_expect_error(y, want, text);                                                            \
    } while (0)

static void test_refusals_name_the_function_and_the_argument(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "CBT", DLA_DIMS(3, 2, 4)), *h = dla_zeros(DLA_F64, "", DLA_DIMS(5, 1));
    dla_tensor *w = dla_ones(DLA_F64, "", DLA_DIMS(20, 3)), *r = dla_ones(DLA_F64, "", DLA_DIMS(20, 5));
    dla_tensor *b = dla_ones(DLA_F64, "", DLA_DIMS(20, 1)), *y, *hs, *cs;
    expect_refused(dla_lstm(x, h, NULL, w, r, b, NULL, &y, &hs, &cs), y, DLA_ERR_INVALID_ARGUMENT,
                   "dla_lstm: argument c0 is NULL");
    assert_int_equal(dla_tensor_status(cs), DLA_ERR_INVALID_ARGUMENT);
    /* Without y, the states asked for are error tensors too (they were
     * left as they were: NULL here, garbage in a caller's locals). */
    hs = cs = NULL;
    assert_int_equal(dla_lstm(x, h, h, w, r, b, NULL, NULL, &hs, &cs), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(hs);
    assert_non_null(cs);
    nn_expect_error(hs, DLA_ERR_INVALID_ARGUMENT, "dla_lstm: argument y is NULL");
    nn_expect_error(cs, DLA_ERR_INVALID_ARGUMENT, "dla_lstm: argument y is NULL");
    hs = NULL;
    assert_int_equal(dla_gru(x, h, w, r, b, NULL, NULL, &hs), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(hs);
    nn_expect_error(hs, DLA_ERR_INVALID_ARGUMENT, "dla_gru: argument y is NULL");
    expect_refused(dla_lstm(x, h, h, dla_ones(DLA_F64, "", DLA_DIMS(20, 4)), r, b, NULL, &y, NULL, NULL),
                   y, DLA_ERR_SHAPE, "dla_lstm: argument weights: 20x4; want 20x3");
    expect_refused(dla_lstm(x, h, h, w, dla_ones(DLA_F64, "", DLA_DIMS(16, 5)), b, NULL, &y, NULL, NULL),
                   y, DLA_ERR_SHAPE, "dla_lstm: argument recurrent_weights: 16x5; want 4H x H");
    expect_refused(dla_lstm(x, h, h, w, r, dla_ones(DLA_F64, "", DLA_DIMS(19, 1)), NULL, &y, NULL, NULL),
                   y, DLA_ERR_SHAPE, "dla_lstm: argument bias: 19x1; want 20x1");
    expect_refused(dla_lstm(x, dla_zeros(DLA_F64, "", DLA_DIMS(5, 3)), h, w, r, b, NULL, &y, NULL, NULL),
                   y, DLA_ERR_SHAPE, "dla_lstm: argument h0: 5x3; want 5x1");
    expect_refused(dla_lstm(dla_ones(DLA_F64, "SSCB", DLA_DIMS(2, 2, 3, 2)), h, h, w, r, b, NULL, &y,
                            NULL, NULL),
                   y, DLA_ERR_FORMAT, "dla_lstm: argument x: 2x2x3x2 \"SSCB\"; it takes \"CBT\"");
    expect_refused(dla_lstm(dla_ones(DLA_F64, "", DLA_DIMS(3, 2, 4)), h, h, w, r, b, NULL, &y, NULL,
                            NULL),
                   y, DLA_ERR_FORMAT, "dla_lstm: argument x: 3x2x4 is unformatted");
    expect_refused(dla_lstm(x, h, h, dla_ones(DLA_F32, "", DLA_DIMS(20, 3)), r, b, NULL, &y, NULL, NULL),
                   y, DLA_ERR_DTYPE, "dla_lstm: argument weights is single, x is double");
    expect_refused(dla_lstm(x, h, h, w, r, b, &(dla_recurrent_options){.reset_gate_mode = "x"}, &y,
                            NULL, NULL),
                   y, DLA_ERR_INVALID_ARGUMENT, "reset_gate_mode is dla_gru's");
    dla_tensor *w3 = dla_ones(DLA_F64, "", DLA_DIMS(15, 3)), *r3 = dla_ones(DLA_F64, "", DLA_DIMS(15, 5));
    expect_refused(dla_gru(x, h, w3, r3, dla_ones(DLA_F64, "", DLA_DIMS(15, 1)),
                           &(dla_recurrent_options){.reset_gate_mode = "sideways"}, &y, &hs),
                   y, DLA_ERR_INVALID_ARGUMENT, "dla_gru: option reset_gate_mode \"sideways\"");
    expect_refused(dla_gru(x, h, w3, r3, dla_ones(DLA_F64, "", DLA_DIMS(15, 1)),
                           &(dla_recurrent_options){
                               .reset_gate_mode = "recurrent-bias-after-multiplication"},
                           &y, &hs),
                   y, DLA_ERR_SHAPE, "dla_gru: argument bias: 15x1; want 30x1");
    assert_int_equal(dla_gru(x, h, w3, r3, b, NULL, NULL, NULL), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_lstm_follows_the_equations),
        TU_TEST(test_gru_follows_the_equations_in_every_mode),
        TU_TEST(test_the_functions_give_the_layers_bits),
        TU_TEST(test_gradients_match_finite_differences),
        TU_TEST(test_one_sequence_without_a_batch_dim),
        TU_TEST(test_no_steps_give_the_initial_states_for_every_observation),
        TU_TEST(test_refusals_name_the_function_and_the_argument),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

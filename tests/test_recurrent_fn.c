/*
 * test_recurrent_fn.c - dla_lstm and dla_gru (MATLAB's lstm and gru
 * functions): values against the equations written out as host loops for
 * every reset-gate mode, formats ("CBT", "CT", "CB", unformatted with
 * data_format), initial states of one column or one per observation, the
 * same bits as the layers, finite-difference gradients in every argument,
 * sequences of no steps, and the refusals. Then the layers'
 * HasStateInputs and HasStateOutputs ports: the functions' bits through
 * them, their gradients, layers wired state to state, and their refusals.
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


/* ------------------------------------------------------ state ports */

/* A network of the one layer l, its free inputs fed by the n examples. */
static dla_net *ported(dla_layer *l, int n, dla_tensor *const *ex)
{
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    if (dla_net_init(net, n, ex) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    return net;
}

static void assert_names(const char *(*name)(const dla_net *, int), const dla_net *net, int n,
                         const char *const *want)
{
    for (int i = 0; i < n; i++)
        assert_string_equal(name(net, i), want[i]);
    assert_null(name(net, n));
}

/* HasStateInputs and HasStateOutputs: the network's inputs are "l/in",
 * "l/hidden", "l/cell", its outputs "l/out", "l/hidden", "l/cell", and
 * they give dla_lstm's and dla_gru's bits, in predict and in training;
 * the layer has no state of its own. OutputMode "last" changes "out"
 * alone. */
static void test_state_ports_give_the_functions_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 2, nt = 4, nh = 3;
    dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(nc, nb, nt)));
    dla_tensor *h0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(nh, nb)));
    dla_tensor *c0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(nh, nb)));
    for (int last = 0; last < 2; last++) {
        dla_net *net = ported(dla_lstm_layer(nh, &(dla_lstm_layer_options){
                                  .name = "l", .bias_initializer = "narrow-normal",
                                  .output_mode = last ? "last" : NULL, .has_state_inputs = 1,
                                  .has_state_outputs = 1}),
                              3, (dla_tensor *[]){x, h0, c0});
        assert_int_equal(dla_net_input_count(net), 3);
        assert_names(dla_net_input_name, net, 3, (const char *[]){"l/in", "l/hidden", "l/cell"});
        assert_int_equal(dla_net_output_count(net), 3);
        assert_names(dla_net_output_name, net, 3, (const char *[]){"l/out", "l/hidden", "l/cell"});
        assert_int_equal(dla_table_count(dla_net_state(net)), 0);
        /* a port it lacks names the ports it has (it was "no layer is
         * named 'l/state'") */
        dla_tensor *none;
        assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 1, &none,
                                         &(dla_net_forward_options){
                                             .outputs = (const char *const[]){"l/state"}}),
                         DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_last_error(), "no output is named 'l/state': layer 'l' (LSTM) has outputs "
                                      "\"l/out\", \"l/hidden\", \"l/cell\""))
            fail_msg("%s", dla_last_error());
        dla_tensor *y, *hs, *cs, *out[3];
        assert_int_equal(dla_lstm(x, h0, c0, dla_net_get(net, "l", "InputWeights"),
                                  dla_net_get(net, "l", "RecurrentWeights"),
                                  dla_net_get(net, "l", "Bias"), NULL, &y, &hs, &cs),
                         DLA_OK);
        for (int train = 0; train < 2; train++) {
            dla_status st = train ? dla_net_forward(net, 3, (dla_tensor *[]){x, h0, c0}, 3, out,
                                                    NULL, NULL)
                                  : dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 3, out,
                                                    NULL);
            if (st != DLA_OK)
                fail_msg("%s: %s", train ? "forward" : "predict", dla_last_error());
            assert_true(tu_same_bits(out[0], last ? hs : y));
            assert_string_equal(dla_tensor_format(out[0]), last ? "CB" : "CBT");
            assert_true(tu_same_bits(out[1], hs));
            assert_true(tu_same_bits(out[2], cs));
            assert_string_equal(dla_tensor_format(out[1]), "CB");
            assert_string_equal(dla_tensor_format(out[2]), "CB");
        }
        /* One output by name, as MATLAB's Outputs. */
        assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 1, out,
                                         &(dla_net_forward_options){
                                             .outputs = (const char *[]){"l/cell"}}),
                         DLA_OK);
        assert_true(tu_same_bits(out[0], cs));
        /* Another port of the same layer is another function (the
         * accelerated network's key has the ports). */
        assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 1, out,
                                         &(dla_net_forward_options){
                                             .outputs = (const char *[]){"l/hidden"}}),
                         DLA_OK);
        assert_true(tu_same_bits(out[0], hs));
        int64_t d[DLA_MAX_DIMS];
        char f[DLA_MAX_DIMS + 1];
        assert_int_equal(dla_net_activation(net, "l/hidden", d, f), 2);
        assert_string_equal(f, "CB");
        assert_true(d[0] == nh && d[1] == nb);
        char sum[4096];
        dla_net_summary(net, sum, sizeof sum);
        assert_non_null(strstr(sum, "Outputs: l/out l/hidden l/cell"));
        assert_non_null(strstr(sum, "HasStateInputs, HasStateOutputs"));
        dla_net_free(net);
    }
    /* The GRU: "in" and "hidden"; "out" and "hidden". */
    dla_net *net = ported(dla_gru_layer(nh, &(dla_gru_layer_options){
                              .name = "g", .bias_initializer = "narrow-normal",
                              .has_state_inputs = 1, .has_state_outputs = 1}),
                          2, (dla_tensor *[]){x, h0});
    assert_names(dla_net_input_name, net, 2, (const char *[]){"g/in", "g/hidden"});
    assert_names(dla_net_output_name, net, 2, (const char *[]){"g/out", "g/hidden"});
    dla_tensor *y, *hs, *out[2];
    assert_int_equal(dla_gru(x, h0, dla_net_get(net, "g", "InputWeights"),
                             dla_net_get(net, "g", "RecurrentWeights"),
                             dla_net_get(net, "g", "Bias"), NULL, &y, &hs),
                     DLA_OK);
    assert_int_equal(dla_net_forward(net, 2, (dla_tensor *[]){x, h0}, 2, out, NULL, NULL), DLA_OK);
    assert_true(tu_same_bits(out[0], y));
    assert_true(tu_same_bits(out[1], hs));
    /* One column of state for every observation, as dla_gru's h0. */
    dla_tensor *h1 = dla_slice(h0, 2, 0, 1, 1);
    assert_int_equal(dla_gru(x, h1, dla_net_get(net, "g", "InputWeights"),
                             dla_net_get(net, "g", "RecurrentWeights"),
                             dla_net_get(net, "g", "Bias"), NULL, &y, &hs),
                     DLA_OK);
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){x, h1}, 2, out, NULL), DLA_OK);
    assert_true(tu_same_bits(out[0], y));
    assert_true(tu_same_bits(out[1], hs));
    dla_net_free(net);
    /* HasStateOutputs alone: the layer keeps its state, and "hidden" is
     * the new state dla_net_forward hands back. */
    net = ported(dla_gru_layer(nh, &(dla_gru_layer_options){.name = "g",
                                                            .has_state_outputs = 1}),
                 1, &x);
    assert_int_equal(dla_table_count(dla_net_state(net)), 1);
    dla_tensor *st;
    assert_int_equal(dla_net_forward(net, 1, &x, 2, out, &st, NULL), DLA_OK);
    assert_true(tu_same_bits(out[1], st));
    dla_net_free(net);
    dla_scope_end();
}

/* A bilstm's state ports are 2H: the forward direction's rows, then the
 * backward one's, as its HiddenState and CellState, and give what the
 * layer gives from that state. */
static void test_bilstm_state_ports_are_its_state(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 2, nt = 3, nh = 2;
    dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(nc, nb, nt)));
    dla_tensor *h0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(2 * nh, nb)));
    dla_tensor *c0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(2 * nh, nb)));
    dla_net *net = ported(dla_bilstm_layer(nh, &(dla_lstm_layer_options){
                              .name = "b", .has_state_inputs = 1, .has_state_outputs = 1}),
                          3, (dla_tensor *[]){x, h0, c0});
    dla_net *plain = ported(dla_bilstm_layer(nh, &(dla_lstm_layer_options){.name = "b"}), 1, &x);
    const char *const learn[3] = {"InputWeights", "RecurrentWeights", "Bias"};
    for (int k = 0; k < 3; k++)
        assert_int_equal(dla_net_set(plain, "b", learn[k], dla_net_get(net, "b", learn[k])),
                         DLA_OK);
    dla_tensor *s0[2] = {dla_reshape(h0, "", DLA_DIMS(2 * nh, nb)),
                         dla_reshape(c0, "", DLA_DIMS(2 * nh, nb))};
    assert_int_equal(dla_net_set_state(plain, 2, s0), DLA_OK);
    dla_tensor *y, *s[2], *out[3];
    assert_int_equal(dla_net_predict_state(plain, 1, &x, 1, &y, s, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 3, out, NULL), DLA_OK);
    assert_true(tu_same_bits(out[0], y));
    assert_true(tu_same_bits(out[1], s[0]));
    assert_true(tu_same_bits(out[2], s[1]));
    assert_int_equal(dla_tensor_dim(out[1], 1), 2 * nh);
    dla_net_free(net);
    dla_net_free(plain);
    dla_scope_end();
}

/* The sum of t's elements, unlabelled (sums of "CBT" and "CB" add). */
static dla_tensor *total(dla_tensor *t)
{
    return dla_sum(dla_reshape(t, "", DLA_DIMS(dla_tensor_numel(t), 1)), 0, NULL);
}

static dla_tensor *ports_fn(void *ctx, dla_tensor *const *in)
{
    dla_net *net = ctx;
    dla_tensor *out[3];
    const int n = dla_net_input_count(net);
    if (dla_net_forward(net, n, in, dla_net_output_count(net), out, NULL, NULL) != DLA_OK)
        return dla_add(NULL, NULL);
    /* Every output counts, with a weight of its own. */
    dla_tensor *loss = total(out[0]);
    for (int k = 1; k < dla_net_output_count(net); k++)
        loss = dla_add(loss, total(dla_mul(out[k], out[k])));
    return loss;
}

/* The decoder's output alone as the loss, and the gradient of every
 * learnable (the encoder's reach the loss only through its states). */
static dla_status decoder_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, nin, in, 1, &y, NULL,
                                    &(dla_net_forward_options){
                                        .outputs = (const char *[]){"dec"}});
    if (st != DLA_OK)
        return st;
    out[0] = total(dla_mul(y, y));
    const int n = dla_table_count(dla_net_learnables(net));
    for (int i = 0; i < n; i++)
        out[1 + i] = NULL;
    return dla_net_gradient(net, out[0], out + 1);
}

/* Gradients flow into the state inputs and out of the state outputs
 * (central differences), and from one layer's state outputs into
 * another's state inputs: an encoder whose final states start a
 * decoder. */
static void test_state_port_gradients_match_finite_differences(void **state)
{
    (void)state;
    const int64_t nc = 2, nb = 2, nt = 3, nh = 3;
    dla_tensor *in[3] = {nn_rand("CBT", DLA_DIMS(nc, nb, nt)), nn_rand("CB", DLA_DIMS(nh, nb)),
                         nn_rand("CB", DLA_DIMS(nh, nb))};
    const int check[3] = {1, 1, 1};
    dla_net *net = ported(dla_lstm_layer(nh, &(dla_lstm_layer_options){
                              .name = "l", .bias_initializer = "narrow-normal",
                              .has_state_inputs = 1, .has_state_outputs = 1}),
                          3, in);
    gc_check(ports_fn, net, 3, in, check, 1e-6);
    dla_net_free(net);
    net = ported(dla_gru_layer(nh, &(dla_gru_layer_options){.name = "g", .has_state_inputs = 1,
                                                            .has_state_outputs = 1}),
                 2, in);
    gc_check(ports_fn, net, 2, in, check, 1e-6);
    dla_net_free(net);
    /* enc/hidden -> dec/hidden, enc/cell -> dec/cell; the loss reads the
     * decoder alone, so x1's gradient comes through the states. */
    dla_layer *l[2] = {dla_lstm_layer(nh, &(dla_lstm_layer_options){
                           .name = "enc", .output_mode = "last", .has_state_outputs = 1}),
                       dla_lstm_layer(nh, &(dla_lstm_layer_options){.name = "dec",
                                                                    .has_state_inputs = 1})};
    net = dla_net_create(2, l);
    assert_non_null(net);
    /* dla_net_create joined them "enc" -> "dec/in"; the decoder reads its
     * own sequence, the encoder's states. */
    assert_int_equal(dla_net_disconnect(net, "enc/out", "dec/in"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "enc/hidden", "dec/hidden"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "enc/cell", "dec/cell"), DLA_OK);
    dla_tensor *x2 = nn_rand("CBT", DLA_DIMS(nc, nb, nt + 1));
    if (dla_net_init(net, 2, (dla_tensor *[]){in[0], x2}) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    assert_names(dla_net_input_name, net, 2, (const char *[]){"enc", "dec/in"});
    assert_names(dla_net_output_name, net, 2, (const char *[]){"enc/out", "dec"});
    const char *src, *dst;
    assert_int_equal(dla_net_connection(net, 0, &src, &dst), DLA_OK);
    assert_string_equal(src, "enc/hidden");
    assert_string_equal(dst, "dec/hidden");
    /* The values: dla_lstm twice. */
    dla_scope_begin();
    dla_tensor *y, *hs, *cs, *out[2];
    dla_tensor *z = dla_zeros(DLA_F64, "", DLA_DIMS(nh, 1));
    assert_int_equal(dla_lstm(in[0], z, z, dla_net_get(net, "enc", "InputWeights"),
                              dla_net_get(net, "enc", "RecurrentWeights"),
                              dla_net_get(net, "enc", "Bias"), NULL, &y, &hs, &cs),
                     DLA_OK);
    assert_int_equal(dla_lstm(x2, hs, cs, dla_net_get(net, "dec", "InputWeights"),
                              dla_net_get(net, "dec", "RecurrentWeights"),
                              dla_net_get(net, "dec", "Bias"), NULL, &y, NULL, NULL),
                     DLA_OK);
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){in[0], x2}, 2, out, NULL), DLA_OK);
    assert_true(tu_same_bits(out[1], y));
    assert_true(tu_same_bits(out[0], hs));
    dla_scope_end();
    gc_check(ports_fn, net, 2, (dla_tensor *[]){in[0], x2}, check, 1e-6);
    /* dla_net_gradient reaches the encoder's learnables (it refuses a
     * learnable the loss does not depend on). */
    dla_scope_begin();
    dla_tensor *lg[7];
    assert_int_equal(dla_table_count(dla_net_learnables(net)), 6);
    if (dla_feval(decoder_loss, net, 2, (dla_tensor *[]){in[0], x2}, 7, lg) != DLA_OK)
        fail_msg("gradient: %s", dla_last_error());
    double gmax = 0;
    for (int64_t i = 0; i < dla_tensor_numel(lg[1]); i++)
        gmax = tu_worse(gmax, fabs(dla_tensor_item(lg[1], i))); /* enc's InputWeights */
    assert_true(gmax > 1e-6);
    dla_scope_end();
    dla_net_free(net);
    dla_tensor_release(x2);
    for (int i = 0; i < 3; i++)
        dla_tensor_release(in[i]);
}

static void expect_failed(dla_status got, dla_status want, const char *const *texts, int n)
{
    if (got != want)
        fail_msg("expected %s, got %s (%s)", dla_status_str(want), dla_status_str(got),
                 dla_last_error());
    for (int i = 0; i < n; i++)
        if (!strstr(dla_last_error(), texts[i]))
            fail_msg("the message \"%s\" does not contain \"%s\"", dla_last_error(), texts[i]);
}

/* A state input that does not fit is refused naming the layer, the
 * input and both shapes; ports that do not exist are refused naming
 * those that do. */
static void test_state_port_refusals_name_the_layer_and_the_input(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 2, nt = 3, nh = 3;
    dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(nc, nb, nt)));
    dla_tensor *h0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(nh, nb)));
    dla_lstm_layer_options o = {.name = "l", .has_state_inputs = 1, .has_state_outputs = 1};
    /* At initialization: the cell state's channels. */
    dla_layer *l = dla_lstm_layer(nh, &o);
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    expect_failed(dla_net_init(net, 3, (dla_tensor *[]){x, h0, dla_zeros(DLA_F64, "CB",
                                                                          DLA_DIMS(nh + 1, nb))}),
                  DLA_ERR_SHAPE, (const char *[]){"layer 'l'", "input \"cell\" is 4(C) x 2(B)",
                                                  "\"CB\" 3 x observations"}, 3);
    dla_net_free(net);
    net = ported(dla_lstm_layer(nh, &o), 3, (dla_tensor *[]){x, h0, h0});
    dla_tensor *y[3];
    /* At a run: another batch, another format, another type. */
    expect_failed(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, dla_zeros(DLA_F64, "CB",
                                                                             DLA_DIMS(nh, 3))},
                                  3, y, NULL),
                  DLA_ERR_SHAPE, (const char *[]){"layer 'l'", "input \"cell\" is 3x3 \"CB\"",
                                                  "it takes 3x2 \"CB\""}, 3);
    nn_expect_error(y[0], DLA_ERR_SHAPE, "input \"cell\"");
    expect_failed(dla_net_forward(net, 3, (dla_tensor *[]){x, dla_zeros(DLA_F64, "CBT",
                                                                         DLA_DIMS(nh, nb, 1)),
                                                          h0},
                                  3, y, NULL, NULL),
                  DLA_ERR_SHAPE, (const char *[]){"layer 'l'", "input \"hidden\" is 3x2x1 \"CBT\""},
                  2);
    dla_net_free(net);
    /* Ports by name. */
    dla_layer *two[2] = {dla_lstm_layer(nh, &(dla_lstm_layer_options){.name = "a"}),
                         dla_gru_layer(nh, &(dla_gru_layer_options){.name = "g",
                                                                    .has_state_inputs = 1})};
    net = dla_net_create(2, two);
    assert_non_null(net);
    expect_failed(dla_net_connect(net, "a/hidden", "g/hidden"), DLA_ERR_INVALID_ARGUMENT,
                  (const char *[]){"source \"a/hidden\": layer 'a' has one output"}, 1);
    expect_failed(dla_net_connect(net, "a", "g/cell"), DLA_ERR_INVALID_ARGUMENT,
                  (const char *[]){"layer 'g' has inputs \"in\" and \"hidden\"; name one"}, 1);
    expect_failed(dla_net_connect(net, "a", "g"), DLA_ERR_INVALID_ARGUMENT,
                  (const char *[]){"layer 'g' has inputs \"in\" and \"hidden\""}, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* trainnet's BatchNormalizationStatistics "population" over a batch
 * normalization fed by a state output ("l/cell"): its TrainedMean is the
 * mean of the cell state over the data (it was taken from "l", the
 * layer's first output, "out"). */
static void test_population_statistics_of_a_state_output(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 8, nt = 3, nh = 3;
    dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(nc, nb, nt)));
    int32_t lab[8] = {0, 1, 0, 1, 1, 0, 1, 0};
    dla_tensor *t = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, nb)); /* the scope's */
    dla_layer *l[6] = {
        dla_sequence_input_layer(nc, &(dla_sequence_input_options){.name = "in"}),
        dla_lstm_layer(nh, &(dla_lstm_layer_options){.name = "l", .output_mode = "last",
                                                     .has_state_outputs = 1}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
        dla_addition_layer(3, &(dla_layer_options){.name = "add"}),
        dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(6, l);
    assert_non_null(net);
    assert_int_equal(dla_net_disconnect(net, "l/out", "bn"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "l/cell", "bn"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "l/out", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "l/hidden", "add/in3"), DLA_OK);
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = {.solver = "adam", .max_epochs = 1, .mini_batch_size = 4,
                              .verbose = -1, .l2_regularization = -1,
                              .batch_normalization_statistics = "population"};
    dla_net *tr = NULL;
    dla_training_info *info = NULL;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &tr, &info) !=
        DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    dla_tensor *c;
    assert_int_equal(dla_net_predict(tr, 1, &x, 1, &c,
                                     &(dla_net_forward_options){
                                         .outputs = (const char *[]){"l/cell"}}),
                     DLA_OK);
    dla_tensor *mean = dla_net_get(tr, "bn", "TrainedMean");
    assert_int_equal(dla_tensor_numel(mean), nh);
    for (int64_t k = 0; k < nh; k++) {
        double m = 0;
        for (int64_t b = 0; b < nb; b++)
            m += dla_tensor_item(c, k + nh * b);
        tu_assert_near(dla_tensor_item(mean, k), m / (double)nb, 1e-5);
    }
    dla_training_info_free(info);
    dla_net_free(tr);
    dla_net_free(net);
    dla_scope_end();
}

/* A network of a sequence input layer and an LSTM whose states are
 * network inputs initializes from examples of the data (H x N states for
 * N sequences), as predict takes them: they were refused as not fitting
 * the input layer's trial of one observation. A state example of other
 * channels is still refused. */
static void test_state_inputs_initialize_from_examples_of_the_data(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 5, nt = 3, nh = 3;
    dla_tensor *x = dla_scope_adopt(nn_rand("CBT", DLA_DIMS(nc, nb, nt)));
    dla_tensor *h0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(nh, nb)));
    dla_tensor *c0 = dla_scope_adopt(nn_rand("CB", DLA_DIMS(nh, nb)));
    dla_layer *l[2] = {dla_sequence_input_layer(nc, &(dla_sequence_input_options){.name = "in"}),
                       dla_lstm_layer(nh, &(dla_lstm_layer_options){.name = "l",
                                                                    .has_state_inputs = 1})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    expect_failed(dla_net_init(net, 3, (dla_tensor *[]){x, h0, dla_zeros(DLA_F64, "CB",
                                                                          DLA_DIMS(nh + 1, nb))}),
                  DLA_ERR_SHAPE, (const char *[]){"layer 'l'", "input \"cell\" is 4(C) x 5(B)"},
                  2);
    if (dla_net_init(net, 3, (dla_tensor *[]){x, h0, c0}) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    dla_tensor *y, *want;
    assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 1, &y, NULL), DLA_OK);
    assert_int_equal(dla_lstm(x, h0, c0, dla_net_get(net, "l", "InputWeights"),
                              dla_net_get(net, "l", "RecurrentWeights"),
                              dla_net_get(net, "l", "Bias"), NULL, &want, NULL, NULL),
                     DLA_OK);
    assert_true(tu_same_bits(y, want));
    dla_net_free(net);
    dla_scope_end();
}

/* Beside a sequence input layer (whose trial at initialization is one
 * observation) the state inputs' examples may have the data's
 * observations, as networks.md says: H x N states with N-observation data
 * initialize, and the network then runs on them. They were refused as
 * not fitting the trial's 1 observation. */
static void test_state_examples_of_n_observations_beside_an_input_layer(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t nc = 2, nb = 2, nt = 4, nh = 3;
    dla_tensor *x = dla_rand(DLA_F32, "CBT", DLA_DIMS(nc, nb, nt));
    dla_tensor *h0 = dla_rand(DLA_F32, "CB", DLA_DIMS(nh, nb));
    dla_tensor *c0 = dla_rand(DLA_F32, "CB", DLA_DIMS(nh, nb));
    for (int with_x = 0; with_x < 2; with_x++) {
        dla_layer *l[2] = {dla_sequence_input_layer(nc, NULL),
                           dla_lstm_layer(nh, &(dla_lstm_layer_options){
                                                  .name = "l", .has_state_inputs = 1})};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        dla_status st = dla_net_init(net, 3, (dla_tensor *[]){with_x ? x : NULL, h0, c0});
        if (st != DLA_OK)
            fail_msg("%s", dla_last_error());
        dla_tensor *y;
        assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){x, h0, c0}, 1, &y, NULL),
                         DLA_OK);
        assert_int_equal(dla_tensor_dim(y, 2), nb);
        /* H is still checked. */
        dla_net_free(net);
        dla_layer *m[2] = {dla_sequence_input_layer(nc, NULL),
                           dla_lstm_layer(nh, &(dla_lstm_layer_options){
                                                  .name = "l", .has_state_inputs = 1})};
        net = dla_net_create(2, m);
        expect_failed(dla_net_init(net, 3, (dla_tensor *[]){with_x ? x : NULL, h0,
                                                           dla_zeros(DLA_F32, "CB",
                                                                     DLA_DIMS(nh + 1, nb))}),
                      DLA_ERR_SHAPE, (const char *[]){"layer 'l'", "input \"cell\" is 4(C)"}, 2);
        dla_net_free(net);
    }
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
        TU_TEST(test_state_ports_give_the_functions_bits),
        TU_TEST(test_state_examples_of_n_observations_beside_an_input_layer),
        TU_TEST(test_bilstm_state_ports_are_its_state),
        TU_TEST(test_state_port_gradients_match_finite_differences),
        TU_TEST(test_state_port_refusals_name_the_layer_and_the_input),
        TU_TEST(test_population_statistics_of_a_state_output),
        TU_TEST(test_state_inputs_initialize_from_examples_of_the_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_autodiff.c - dla_feval and dla_gradient: the tape's contract, its
 * errors, and a float64 finite-difference check of every op of the core
 * (elementwise with broadcasting, reductions, products, views, casts).
 */
#include "testutil.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tu_assert.h"

#include "gradcheck.h"

#include "core/tensor.h" /* a tensor's storage: whether two gradients share memory */

static dla_tensor *rnd(const char *fmt, int nd, const int64_t *dims)
{
    return dla_randn(DLA_F64, fmt, nd, dims); /* owned by the caller's scope */
}

/* Positive values, for log, sqrt, pow and division. */
static dla_tensor *pos(const char *fmt, int nd, const int64_t *dims)
{
    return dla_affine(dla_rand(DLA_F64, fmt, nd, dims), 1.5, 0.5);
}

/* ----------------------------------------------------------- the contract */

static dla_status square_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    /* L = sum(w .* x .^ 2): dL/dx = 2 w .* x, dL/dw = x .^ 2 */
    dla_tensor *l = dla_sum(dla_mul(in[0], dla_square(in[1])), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 2, (dla_tensor *[]){in[1], in[0]}, out + 1);
}

static void test_feval_returns_values_and_exact_gradients(void **state)
{
    double w[3] = {1, 2, 3}, x[3] = {4, -5, 6};
    dla_tensor *tw = dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(3));
    dla_tensor *tx = dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(3));
    dla_tensor *out[3];
    assert_int_equal(dla_feval(square_loss, NULL, 2, (dla_tensor *[]){tw, tx}, 3, out), DLA_OK);
    assert_true(dla_tensor_item(out[0], 0) == 16 + 50 + 108);
    for (int i = 0; i < 3; i++) {
        assert_true(dla_tensor_item(out[1], i) == 2 * w[i] * x[i]);
        assert_true(dla_tensor_item(out[2], i) == x[i] * x[i]);
    }
    for (int i = 0; i < 3; i++)
        dla_tensor_release(out[i]);
    dla_tensor_release(tw);
    dla_tensor_release(tx);
}

typedef struct held {
    dla_tensor *w; /* reached through ctx, not an input: a network's weights */
} held;

static dla_status two_gradients(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    held *h = ctx;
    dla_tensor *y = dla_mtimes(h->w, in[0]);
    dla_tensor *l1 = dla_sum(y, 0, NULL);
    dla_tensor *l2 = dla_sum(dla_square(y), 0, NULL);
    dla_status st = dla_gradient(l1, 1, &h->w, &out[0]);
    if (st == DLA_OK)
        st = dla_gradient(l2, 1, &h->w, &out[1]);
    return st;
}

static void test_several_gradients_in_one_feval_and_tensors_reached_through_ctx(void **state)
{
    dla_scope_begin();
    double w[4] = {1, 2, 3, 4}, x[2] = {1, -1}; /* W 2x2, x 2x1 */
    held h = {dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(2, 2))};
    dla_tensor *tx = dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(2, 1));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(two_gradients, &h, 1, &tx, 2, out), DLA_OK);
    /* y = W x = [1-3, 2-4] = [-2, -2]; dl1/dW = 1 x' ; dl2/dW = 2 y x' */
    const double g1[4] = {1, 1, -1, -1}, g2[4] = {-4, -4, 4, 4};
    for (int i = 0; i < 4; i++) {
        assert_true(dla_tensor_item(out[0], i) == g1[i]);
        assert_true(dla_tensor_item(out[1], i) == g2[i]);
    }
    dla_scope_end();
}

static dla_status not_scalar(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    return dla_gradient(dla_square(in[0]), 1, &in[0], &out[0]);
}

/* A loss of ctx alone, a tensor made before the call: not traced. */
static dla_status untraced(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    return dla_gradient(dla_sum(dla_square((dla_tensor *)ctx), 0, NULL), 1, in, out);
}

/* The loss of a single x and of an integer or logical tensor cast to x's
 * class: it depends on both, but only x has a gradient. */
static dla_status through_a_cast(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    dla_tensor *l = dla_sum(dla_mul(in[0], dla_cast(in[1], DLA_F32)), 0, NULL);
    return dla_gradient(l, 2, in, out);
}

static void test_gradient_errors_say_what_is_wrong(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(3, 2));
    dla_tensor *other = dla_ones(DLA_F64, "CB", DLA_DIMS(4, 5));
    /* Outside dla_feval. */
    dla_tensor *g;
    assert_int_equal(dla_gradient(dla_sum(x, 0, NULL), 1, &x, &g), DLA_ERR_STATE);
    assert_non_null(strstr(dla_last_error(), "dla_gradient: called outside dla_feval"));
    assert_int_equal(dla_tensor_status(g), DLA_ERR_STATE);
    /* A loss that is not a scalar. */
    dla_tensor *out[2];
    assert_int_equal(dla_feval(not_scalar, NULL, 1, &x, 1, out), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(out[0]), "argument loss: 3x2 double; it must be a real scalar"));
    /* A loss that is not traced: computed only from a tensor made before
     * the call (MATLAB: "Value to differentiate is not traced"). */
    assert_int_equal(dla_feval(untraced, other, 1, &x, 1, out), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_tensor_error(out[0]), "argument wrt[0] (3x2 double): the loss does not "
                                          "depend on it, nor on any other argument wrt or "
                                          "input of dla_feval"))
        fail_msg("%s", dla_tensor_error(out[0]));
    /* With respect to an integer or a logical tensor the loss was computed
     * from: it said "the loss does not depend on it", which was false. */
    dla_tensor *w = dla_ones(DLA_F32, "", DLA_DIMS(3, 1));
    dla_tensor *ints = dla_tensor_from_host((int32_t[]){1, 2, 3}, DLA_I32, "", DLA_DIMS(3, 1));
    dla_tensor *mask = dla_tensor_from_host((uint8_t[]){1, 0, 1}, DLA_BOOL, "", DLA_DIMS(3, 1));
    for (int k = 0; k < 2; k++) {
        assert_int_equal(dla_feval(through_a_cast, NULL, 2, (dla_tensor *[]){w, k ? mask : ints},
                                   2, out), DLA_ERR_DTYPE);
        char want[160];
        snprintf(want, sizeof want, "argument wrt[1] (3x1 %s): gradients are taken with respect "
                 "to single or double tensors", k ? "logical" : "int32");
        if (!strstr(dla_tensor_error(out[1]), want))
            fail_msg("%s", dla_tensor_error(out[1]));
    }
    dla_scope_end();
}

/* out = {d/d in[0], d/d in[1], d/d slice}: loss = sum(in[0] .^ 2), which
 * uses neither in[1] nor the slice of in[0] taken beside it. */
static dla_status unused_inputs(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *part = dla_slice(in[0], 1, 1, 1, 2);
    dla_tensor *wrt[3] = {in[0], in[1], part};
    return dla_gradient(dla_sum(dla_square(in[0]), 0, NULL), 3, wrt, out);
}

/* MATLAB's dlgradient gives zeros for a variable a traced loss does not
 * depend on (an unused input; x(i) where the loss was computed from x):
 * dla_gradient failed with "the loss does not depend on it", eagerly and
 * in an accelerated function's recording alike. The zeros have the
 * variable's dims, format and dtype, and replays give them too. */
static void test_an_unused_variable_gets_zeros_as_in_matlab(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((double[]){1, 2, 3, 4, 5, 6}, DLA_F64, "", DLA_DIMS(3, 2));
    dla_tensor *other = dla_ones(DLA_F32, "CB", DLA_DIMS(4, 5));
    dla_accel *af = dla_accelerate(unused_inputs, NULL);
    for (int call = 0; call < 3; call++) {
        dla_tensor *out[3];
        dla_status st = call == 0 ? dla_feval(unused_inputs, NULL, 2, (dla_tensor *[]){x, other}, 3, out)
                                  : dla_accel_feval(af, NULL, 2, (dla_tensor *[]){x, other}, 3, out);
        if (st != DLA_OK)
            fail_msg("call %d: %s", call, dla_last_error());
        for (int64_t e = 0; e < 6; e++)
            tu_assert_near(dla_tensor_item(out[0], e), 2.0 * (double)(e + 1), 1e-12);
        assert_int_equal(dla_tensor_dtype(out[1]), DLA_F32);
        assert_string_equal(dla_tensor_format(out[1]), "CB");
        assert_int_equal(dla_tensor_ndims(out[1]), 2);
        assert_int_equal(dla_tensor_dim(out[1], 1), 4);
        assert_int_equal(dla_tensor_dim(out[1], 2), 5);
        for (int64_t e = 0; e < 20; e++)
            assert_true(dla_tensor_item(out[1], e) == 0.0);
        assert_int_equal(dla_tensor_numel(out[2]), 2);
        assert_int_equal(dla_tensor_dtype(out[2]), DLA_F64);
        for (int64_t e = 0; e < 2; e++)
            assert_true(dla_tensor_item(out[2], e) == 0.0);
    }
    assert_true(dla_accel_hit_rate(af) > 0); /* the last call replayed */
    dla_accel_free(af);
    dla_scope_end();
}

/* in = {w, x}; loss = sum((w .* x) .^ 2), but w read through ctx (the
 * caller's tensor, also given as in[0]), as a model loss does that
 * forgets dla_net_forward_options.learnables. out = {loss, d/d in[0]}. */
static dla_status reads_ctx_not_input(void *ctx, int nin, dla_tensor *const *in, int nout,
                                      dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *w = ctx;
    out[0] = dla_sum(dla_square(dla_mul(w, in[1])), 0, NULL);
    return dla_gradient(out[0], 1, &in[0], &out[1]);
}

/* Eagerly in[0] is the caller's w and the gradient is right; an
 * accelerated function records with fresh handles for its inputs, so the
 * loss read w, not in[0], and the zeros MATLAB gives an unused variable
 * came back: every gradient zero, with DLA_OK, where the same function
 * eagerly gave 2 w x^2 (until 2026-11-30; before 2026-11-29 an error). */
static void test_a_loss_that_reads_an_inputs_memory_under_another_handle_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *w = dla_tensor_from_host((float[]){1, 2, 3}, DLA_F32, "", DLA_DIMS(3, 1));
    dla_tensor *x = dla_tensor_from_host((float[]){2, 1, 1}, DLA_F32, "", DLA_DIMS(3, 1));
    dla_tensor *out[2];
    if (dla_feval(reads_ctx_not_input, w, 2, (dla_tensor *[]){w, x}, 2, out) != DLA_OK)
        fail_msg("%s", dla_last_error());
    static const double want[3] = {8, 4, 6}; /* 2 w x^2 */
    for (int64_t e = 0; e < 3; e++)
        tu_assert_near(dla_tensor_item(out[1], e), want[e], 1e-6);
    dla_accel *af = dla_accelerate(reads_ctx_not_input, NULL);
    assert_int_equal(dla_accel_feval(af, w, 2, (dla_tensor *[]){w, x}, 2, out),
                     DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "argument wrt[0] (3x1 single): the loss does not depend on "
                                  "it, but reads its memory through another tensor (3x1 "
                                  "single) made before the call") ||
        !strstr(dla_last_error(), "dla_net_forward_options.learnables"))
        fail_msg("%s", dla_last_error());
    dla_accel_free(af);
    dla_scope_end();
}

static dla_status unset_output(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_exp(in[0]);
    return DLA_OK; /* out[1] left unset */
}

static void test_outputs_left_unset_are_error_tensors(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(2));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(unset_output, NULL, 1, &x, 2, out), DLA_ERR_STATE);
    assert_int_equal(dla_tensor_status(out[0]), DLA_OK);
    assert_non_null(strstr(dla_tensor_error(out[1]), "left output 2 unset"));
    dla_scope_end();
}

static dla_status inner(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *l = dla_sum(dla_exp(in[0]), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 1, in, &out[1]);
}

static dla_status outer(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *r[2];
    dla_status st = dla_feval(inner, NULL, 1, in, 2, r); /* its own tape */
    if (st != DLA_OK)
        return st;
    dla_tensor *l = dla_sum(dla_square(in[0]), 0, NULL);
    out[0] = r[1];
    return dla_gradient(l, 1, in, &out[1]);
}

static void test_fevals_nest_with_their_own_tapes(void **state)
{
    dla_scope_begin();
    double x[2] = {0.5, -1};
    dla_tensor *tx = dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(2));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(outer, NULL, 1, &tx, 2, out), DLA_OK);
    for (int i = 0; i < 2; i++) {
        assert_true(tu_close(dla_tensor_item(out[0], i), exp(x[i]), 1e-15));
        assert_true(dla_tensor_item(out[1], i) == 2 * x[i]);
    }
    dla_scope_end();
}

static void test_the_tape_is_freed_when_feval_returns(void **state)
{
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(50, 40));
    dla_tensor *out[2];
    /* Warm up (device buffers that the cpu plugin caches), then measure. */
    assert_int_equal(dla_feval(inner, NULL, 1, &x, 2, out), DLA_OK);
    dla_tensor_release(out[0]);
    dla_tensor_release(out[1]);
    long before = tu_live;
    assert_int_equal(dla_feval(inner, NULL, 1, &x, 2, out), DLA_OK);
    /* Only the two results remain: header + storage + memory block each. */
    assert_true(tu_live - before <= 6);
    dla_tensor_release(out[0]);
    dla_tensor_release(out[1]);
    assert_int_equal(tu_live, before);
    dla_tensor_release(x);
}

#define CHAIN 16
static long sweep_growth;

/* L = sum(sin(sin(...sin(x)))), CHAIN deep; records how many blocks the
 * sweep holds at its highest, over what the forward left live. */
static dla_status sin_chain(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *y = in[0];
    for (int i = 0; i < CHAIN; i++)
        y = dla_sin(y);
    out[0] = dla_sum(y, 0, NULL);
    long before = tu_live;
    tu_peak = tu_live;
    dla_status st = dla_gradient(out[0], 1, in, out + 1);
    sweep_growth = tu_peak - before;
    return st;
}

static void test_the_sweep_lets_go_of_gradients_it_has_passed(void **state)
{
    /* 8 KB per tensor: under the cpu plugin's cached sizes, so each
     * buffer is a host block of its own. */
    dla_scope_begin();
    dla_tensor *x = rnd("", DLA_DIMS(1000));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(sin_chain, NULL, 1, &x, 2, out), DLA_OK);
    /* The gradient is right (the product of the cosines down the chain). */
    double v = dla_tensor_item(x, 7), g = 1.0;
    for (int i = 0; i < CHAIN; i++) {
        g *= cos(v);
        v = sin(v);
    }
    assert_true(tu_close(dla_tensor_item(out[1], 7), g, 1e-12));
    /* Each link's gradient is a tensor of 3 blocks (header, storage,
     * memory) and the sweep's map takes 6 arrays; a sweep keeping every
     * gradient would hold 6 + 3 * CHAIN blocks at the end (54). Letting
     * each go once its producer has had its turn holds a few at a time
     * (the seed, the incoming and outgoing ones, the backward's
     * temporary): 16 here. */
    assert_true(sweep_growth > 0);
    if (sweep_growth > 6 + 5 * 3)
        fail_msg("the sweep held %ld blocks at its highest", sweep_growth);
    dla_scope_end();
}

/* --------------------------------------------- gradients handed over */

/* Three layers, the first one's weights used again by the last (shared
 * weights): l = sum(W1 tanh(W2 tanh(W1 x))) + sum(b .* b) with b a slice
 * of the last requested tensor, which is thus reached through a view. */
typedef struct hooked {
    dla_tensor *w[3]; /* W1, W2, V (V's slice b is used at the end) */
    int calls[3], order[3], ncalls;
    long between, between_at[3];
    double first_value[3]; /* element 0 of each gradient when handed over */
    dla_tensor *handed[3];
    const dla_gradient_hooks *hooks;
} hooked;

static void on_ready(void *ctx, int i, dla_tensor *g)
{
    hooked *h = ctx;
    h->calls[i]++;
    h->order[h->ncalls++] = i;
    h->between_at[i] = h->between;
    h->first_value[i] = dla_tensor_item(g, 0);
    h->handed[i] = g;
}

static void on_between(void *ctx) { ((hooked *)ctx)->between++; }

/* in: x, then W1, W2, V when nin is 4 (a trace's inputs), else the
 * weights come through ctx. */
static dla_status layered_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    hooked *h = ctx;
    dla_tensor *const *w = nin == 4 ? in + 1 : h->w;
    dla_tensor *a = dla_tanh(dla_mtimes(w[0], in[0]));
    dla_tensor *c = dla_tanh(dla_mtimes(w[1], a));
    dla_tensor *b = dla_slice(w[2], 1, 1, 1, 3);
    out[0] = dla_add(dla_sum(dla_mtimes(w[0], c), 0, NULL), dla_sum(dla_mul(b, b), 0, NULL));
    dla_status st = dla_gradient_hooked(out[0], 3, w, out + 1, h->hooks);
    /* What was handed over is what grads holds. */
    for (int i = 0; st == DLA_OK && i < 3; i++)
        if (h->handed[i] && h->handed[i] != out[1 + i])
            return DLA_ERR_STATE;
    return st;
}

static void test_gradients_are_handed_over_as_each_becomes_final(void **state)
{
    dla_scope_begin();
    hooked h = {.w = {rnd("", DLA_DIMS(4, 4)), rnd("", DLA_DIMS(4, 4)), rnd("", DLA_DIMS(4, 1))}};
    dla_gradient_hooks hooks = {.ready = on_ready, .between = on_between, .ctx = &h};
    h.hooks = &hooks;
    dla_tensor *x = rnd("", DLA_DIMS(4, 1)), *out[4], *plain[4];
    assert_int_equal(dla_feval(layered_loss, &h, 1, &x, 4, out), DLA_OK);
    /* Once each, in the order the sweep finishes them: V (used last, in
     * the slice), W2, then W1 (its first use is the first op). */
    for (int i = 0; i < 3; i++)
        assert_int_equal(h.calls[i], 1);
    assert_int_equal(h.order[0], 2);
    assert_int_equal(h.order[1], 1);
    assert_int_equal(h.order[2], 0);
    /* Before the sweep's end for all but W1, and each with its final value. */
    assert_true(h.between_at[2] < h.between_at[1] && h.between_at[1] < h.between_at[0]);
    assert_true(h.between_at[0] == h.between);
    for (int i = 0; i < 3; i++)
        assert_true(h.first_value[i] == dla_tensor_item(out[1 + i], 0));
    /* The same gradients as dla_gradient's. */
    h.hooks = NULL;
    memset(h.calls, 0, sizeof h.calls);
    memset(h.handed, 0, sizeof h.handed);
    assert_int_equal(dla_feval(layered_loss, &h, 1, &x, 4, plain), DLA_OK);
    for (int i = 1; i < 4; i++)
        for (int64_t k = 0; k < dla_tensor_numel(out[i]); k++)
            assert_true(dla_tensor_item(out[i], k) == dla_tensor_item(plain[i], k));
    assert_int_equal(h.calls[0] + h.calls[1] + h.calls[2], 0);
    dla_scope_end();
}

static void test_gradient_hooks_do_not_run_in_an_accelerated_function(void **state)
{
    dla_scope_begin();
    hooked h = {.w = {rnd("", DLA_DIMS(4, 4)), rnd("", DLA_DIMS(4, 4)), rnd("", DLA_DIMS(4, 1))}};
    dla_gradient_hooks hooks = {.ready = on_ready, .between = on_between, .ctx = &h};
    h.hooks = &hooks;
    dla_tensor *x = rnd("", DLA_DIMS(4, 1)), *out[4], *eager[4];
    assert_int_equal(dla_feval(layered_loss, &h, 1, &x, 4, eager), DLA_OK);
    memset(h.calls, 0, sizeof h.calls);
    memset(h.handed, 0, sizeof h.handed);
    h.between = 0;
    /* Recorded on the first call (the hooks' ops would join the trace), a
     * replay on the second: no sweep runs, nothing is handed over. The
     * weights are the trace's inputs here, not constants. */
    dla_accel *af = dla_accelerate(layered_loss, NULL);
    dla_tensor *in[4] = {x, h.w[0], h.w[1], h.w[2]};
    for (int call = 0; call < 2; call++) {
        assert_int_equal(dla_accel_feval(af, &h, 4, in, 4, out), DLA_OK);
        for (int i = 1; i < 4; i++)
            assert_true(tu_close(dla_tensor_item(out[i], 0), dla_tensor_item(eager[i], 0), 1e-12));
    }
    assert_int_equal(h.calls[0] + h.calls[1] + h.calls[2], 0);
    assert_int_equal(h.between, 0);
    assert_true(dla_accel_hit_rate(af) > 0); /* the second call replayed */
    dla_accel_free(af);
    dla_scope_end();
}

/* ------------------------------------------------ gradients of every op */

static dla_tensor *f_add(void *c, dla_tensor *const *in) { return dla_add(in[0], in[1]); }
static dla_tensor *f_sub(void *c, dla_tensor *const *in) { return dla_sub(in[0], in[1]); }
static dla_tensor *f_mul(void *c, dla_tensor *const *in) { return dla_mul(in[0], in[1]); }
static dla_tensor *f_div(void *c, dla_tensor *const *in) { return dla_div(in[0], in[1]); }
static dla_tensor *f_max2(void *c, dla_tensor *const *in) { return dla_max2(in[0], in[1]); }
static dla_tensor *f_min2(void *c, dla_tensor *const *in) { return dla_min2(in[0], in[1]); }
static dla_tensor *f_pow(void *c, dla_tensor *const *in) { return dla_pow(in[0], in[1]); }

static void test_binary_op_gradients_with_broadcasting(void **state)
{
    gc_fn fs[] = {f_add, f_sub, f_mul, f_div, f_max2, f_min2, f_pow};
    const int both[2] = {1, 1};
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
        dla_scope_begin();
        int positive = fs[k] == f_div || fs[k] == f_pow;
        /* a 4x3x2 against b 4x1x2 (expanded along dim 2) and a row 1x3. */
        dla_tensor *a = positive ? pos("", DLA_DIMS(4, 3, 2)) : rnd("", DLA_DIMS(4, 3, 2));
        dla_tensor *b = positive ? pos("", DLA_DIMS(4, 1, 2)) : rnd("", DLA_DIMS(4, 1, 2));
        dla_tensor *c = positive ? pos("", DLA_DIMS(1, 3)) : rnd("", DLA_DIMS(1, 3));
        gc_check(fs[k], NULL, 2, (dla_tensor *[]){a, b}, both, 1e-6);
        gc_check(fs[k], NULL, 2, (dla_tensor *[]){c, a}, both, 1e-6);
        dla_scope_end();
    }
}

static dla_tensor *f_neg(void *c, dla_tensor *const *in) { return dla_neg(in[0]); }
static dla_tensor *f_exp(void *c, dla_tensor *const *in) { return dla_exp(in[0]); }
static dla_tensor *f_log(void *c, dla_tensor *const *in) { return dla_log(in[0]); }
static dla_tensor *f_sqrt(void *c, dla_tensor *const *in) { return dla_sqrt(in[0]); }
static dla_tensor *f_abs(void *c, dla_tensor *const *in) { return dla_abs(in[0]); }
static dla_tensor *f_sin(void *c, dla_tensor *const *in) { return dla_sin(in[0]); }
static dla_tensor *f_cos(void *c, dla_tensor *const *in) { return dla_cos(in[0]); }
static dla_tensor *f_tanh(void *c, dla_tensor *const *in) { return dla_tanh(in[0]); }
static dla_tensor *f_sigmoid(void *c, dla_tensor *const *in) { return dla_sigmoid(in[0]); }
static dla_tensor *f_relu(void *c, dla_tensor *const *in) { return dla_relu(in[0]); }
static dla_tensor *f_square(void *c, dla_tensor *const *in) { return dla_square(in[0]); }
static dla_tensor *f_erf(void *c, dla_tensor *const *in) { return dla_erf(in[0]); }
static dla_tensor *f_pows(void *c, dla_tensor *const *in) { return dla_pows(in[0], 2.5); }
static dla_tensor *f_affine(void *c, dla_tensor *const *in) { return dla_affine(in[0], -3.0, 2.0); }

static void test_unary_op_gradients(void **state)
{
    gc_fn fs[] = {f_neg, f_exp, f_log, f_sqrt, f_abs, f_sin, f_cos, f_tanh,
                  f_sigmoid, f_relu, f_square, f_erf, f_pows, f_affine};
    const int one[1] = {1};
    for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
        dla_scope_begin();
        int positive = fs[k] == f_log || fs[k] == f_sqrt || fs[k] == f_pows;
        /* Values away from the kinks of abs and relu at 0. */
        dla_tensor *x = positive ? pos("SSC", DLA_DIMS(3, 4, 2))
                                 : dla_mul(rnd("SSC", DLA_DIMS(3, 4, 2)),
                                           dla_affine(dla_sign(rnd("", DLA_DIMS(1))), 0, 1));
        gc_check(fs[k], NULL, 1, &x, one, 1e-6);
        dla_scope_end();
    }
}

typedef struct red_ctx {
    int which, nd;
    int64_t dims[4];
} red_ctx;

static dla_tensor *f_reduce(void *c, dla_tensor *const *in)
{
    red_ctx *r = c;
    switch (r->which) {
    case 0: return dla_sum(in[0], r->nd, r->dims);
    case 1: return dla_mean(in[0], r->nd, r->dims);
    case 2: return dla_max(in[0], r->nd, r->dims);
    default: return dla_min(in[0], r->nd, r->dims);
    }
}

static void test_reduction_gradients_over_dim_sets(void **state)
{
    const int one[1] = {1};
    red_ctx cases[] = {
        {0, 1, {2}}, {0, 2, {1, 3}}, {0, 0, {0}}, {1, 1, {1}}, {1, 2, {2, 3}}, {1, 0, {0}},
        {2, 1, {2}}, {2, 0, {0}}, {3, 1, {3}}, {3, 2, {1, 2}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        dla_scope_begin();
        dla_tensor *x = rnd("SCB", DLA_DIMS(3, 4, 2));
        gc_check(f_reduce, &cases[k], 1, &x, one, 1e-6);
        dla_scope_end();
    }
}

typedef struct mm_ctx {
    const char *ta, *tb;
} mm_ctx;

static dla_tensor *f_mtimes(void *c, dla_tensor *const *in) { return dla_mtimes(in[0], in[1]); }
static dla_tensor *f_pagemtimes(void *c, dla_tensor *const *in)
{
    mm_ctx *m = c;
    return dla_pagemtimes(in[0], m->ta, in[1], m->tb);
}

static void test_matrix_product_gradients(void **state)
{
    const int both[2] = {1, 1};
    dla_scope_begin();
    gc_check(f_mtimes, NULL, 2, (dla_tensor *[]){rnd("", DLA_DIMS(3, 4)), rnd("", DLA_DIMS(4, 5))},
             both, 1e-6);
    const char *t[2] = {"none", "transpose"};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            mm_ctx m = {t[ta], t[tb]};
            /* a has 2x3 pages, b one page broadcast to all. */
            dla_tensor *a = ta ? rnd("", DLA_DIMS(4, 3, 2, 3)) : rnd("", DLA_DIMS(3, 4, 2, 3));
            dla_tensor *b = tb ? rnd("", DLA_DIMS(5, 4)) : rnd("", DLA_DIMS(4, 5));
            gc_check(f_pagemtimes, &m, 2, (dla_tensor *[]){a, b}, both, 1e-6);
            /* b with explicit singleton pages. */
            const int64_t bd[4] = {tb ? 5 : 4, tb ? 4 : 5, 1, 1};
            dla_tensor *b4 = dla_reshape(b, "", 4, bd);
            gc_check(f_pagemtimes, &m, 2, (dla_tensor *[]){a, b4}, both, 1e-6);
        }
    dla_scope_end();
}

static dla_tensor *f_views(void *c, dla_tensor *const *in)
{
    /* permute, slice with a step, reshape, squeeze: a chain of views. */
    dla_tensor *p = dla_permute(in[0], DLA_DIMS(2, 1, 3));       /* 5x4x3 */
    dla_tensor *s = dla_slice(p, 1, 1, 2, DLA_END);               /* 2x4x3 */
    dla_tensor *r = dla_reshape(s, "", DLA_DIMS(8, 1, 3));
    return dla_mul(dla_squeeze(r), dla_squeeze(r));
}

/* The MATLAB Answers layer in small: three slices of one tensor combined. */
static dla_tensor *f_three_slices(void *c, dla_tensor *const *in)
{
    dla_tensor *z = dla_reshape(in[0], "", DLA_DIMS(4, 3, 2, 3, 2));
    dla_tensor *z1 = dla_slice(z, 4, 0, 1, 1), *z2 = dla_slice(z, 4, 1, 1, 2),
               *z3 = dla_slice(z, 4, 2, 1, 3);
    return dla_add(dla_add(dla_square(dla_sub(z2, z1)), z2), dla_exp(dla_sub(z2, z3)));
}

static dla_tensor *f_moves(void *c, dla_tensor *const *in)
{
    dla_tensor *d = dla_tensor_to_device(dla_contiguous(dla_permute(in[0], DLA_DIMS(2, 1))),
                                         dla_device_at(dla_device_count() - 1));
    dla_tensor *back = dla_tensor_to_device(dla_cast(d, DLA_F64), dla_tensor_device(in[0]));
    return dla_mul(back, back);
}

/* dla_contiguous of a dense tensor (a no-op on the data): its gradient
 * was doubled, the tape node's output being its own input. */
static dla_tensor *f_dense_contiguous(void *c, dla_tensor *const *in)
{
    return dla_add(dla_square(dla_contiguous(in[0])), dla_contiguous(dla_contiguous(in[0])));
}

static void test_view_and_transfer_gradients(void **state)
{
    const int one[1] = {1};
    dla_scope_begin();
    gc_check(f_views, NULL, 1, (dla_tensor *[]){rnd("", DLA_DIMS(4, 5, 3))}, one, 1e-6);
    gc_check(f_three_slices, NULL, 1, (dla_tensor *[]){rnd("SSCB", DLA_DIMS(4, 3, 2, 6))}, one, 1e-6);
    gc_check(f_moves, NULL, 1, (dla_tensor *[]){rnd("", DLA_DIMS(3, 2))}, one, 1e-6);
    gc_check(f_dense_contiguous, NULL, 1, (dla_tensor *[]){rnd("", DLA_DIMS(3, 2))}, one, 1e-6);
    dla_scope_end();
}

static dla_status through_single(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *l = dla_sum(dla_affine(dla_cast(in[0], DLA_F32), 3.0, 0.0), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 1, in, &out[1]);
}

/* L = sum(a + b) + sum(c): add's backward hands one gradient to both
 * sides; wrt lists c twice. */
static dla_status shared_gradient_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                       dla_tensor **out)
{
    dla_tensor *l = dla_add(dla_sum(dla_add(in[0], in[1]), 0, NULL), dla_sum(in[2], 0, NULL));
    out[0] = l;
    return dla_gradient(l, 4, (dla_tensor *[]){in[0], in[1], in[2], in[2]}, out + 1);
}

static void test_every_gradient_has_memory_of_its_own(void **state)
{
    /* Two gradients that were one tensor: a collective summing each in
     * place (one call per gradient) summed the shared memory twice. */
    dla_accel *af = dla_accelerate(shared_gradient_loss, NULL);
    for (int call = 0; call < 3; call++) { /* eager, then recorded, then replayed */
        dla_scope_begin();
        dla_tensor *in[3] = {rnd("", DLA_DIMS(3, 2)), rnd("", DLA_DIMS(3, 2)), rnd("", DLA_DIMS(4))};
        dla_tensor *out[5];
        dla_status st = call == 0 ? dla_feval(shared_gradient_loss, NULL, 3, in, 5, out)
                                  : dla_accel_feval(af, NULL, 3, in, 5, out);
        assert_int_equal(st, DLA_OK);
        for (int i = 1; i < 5; i++) {
            for (int64_t k = 0; k < dla_tensor_numel(out[i]); k++)
                assert_true(dla_tensor_item(out[i], k) == 1.0);
            for (int j = 1; j < i; j++)
                if (out[i]->storage == out[j]->storage)
                    fail_msg("call %d: gradients %d and %d share memory", call, j, i);
        }
        dla_scope_end();
    }
    tu_assert_near(dla_accel_hit_rate(af), 50.0, 1e-9);
    dla_accel_free(af);
}

/* L = sum(a .^ p) + sum(x .^ 0) */
static dla_status pow_edges_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    dla_tensor *l = dla_add(dla_sum(dla_pow(in[0], in[1]), 0, NULL),
                            dla_sum(dla_pows(in[2], 0.0), 0, NULL));
    out[0] = l;
    return dla_gradient(l, 3, in, out + 1);
}

static void test_powers_of_zero_have_their_limits_as_gradients(void **state)
{
    /* d(a^p)/dp = a^p log(a) is 0 in the limit at a = 0, p >= 0, and
     * d(x^0)/dx = 0: both were NaN (0 * -inf, 0 * 0^-1). */
    dla_scope_begin();
    const double a[4] = {0, 0, 2, 0.5}, p[4] = {2, 0, 3, 1}, x[3] = {0, 1, -2};
    dla_tensor *in[3] = {dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(4)),
                         dla_tensor_from_host(p, DLA_F64, "", DLA_DIMS(4)),
                         dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(3))};
    dla_tensor *out[4];
    assert_int_equal(dla_feval(pow_edges_loss, NULL, 3, in, 4, out), DLA_OK);
    const double da[4] = {0, 0, 12, 1}, dp[4] = {0, 0, 8 * log(2.0), 0.5 * log(0.5)};
    for (int i = 0; i < 4; i++) { /* written so that NaN fails */
        double ga = dla_tensor_item(out[1], i), gp = dla_tensor_item(out[2], i);
        if (!(fabs(ga - da[i]) <= 1e-12) || !(fabs(gp - dp[i]) <= 1e-12))
            fail_msg("a = %g, p = %g: d/da %g (want %g), d/dp %g (want %g)", a[i], p[i], ga,
                     da[i], gp, dp[i]);
    }
    for (int i = 0; i < 3; i++)
        assert_true(dla_tensor_item(out[3], i) == 0.0);
    dla_scope_end();
}

/* L = sum(max2(a, b)) + 2 sum(min2(a, b)) */
static dla_status max_min_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *l = dla_add(dla_sum(dla_max2(in[0], in[1]), 0, NULL),
                            dla_affine(dla_sum(dla_min2(in[0], in[1]), 0, NULL), 2.0, 0.0));
    out[0] = l;
    return dla_gradient(l, 2, in, out + 1);
}

static void test_max_and_min_send_no_gradient_to_a_nan_they_skipped(void **state)
{
    /* max2(1, NaN) is 1 (NaN skipped, as MATLAB's max): its gradient went
     * to the NaN, since 1 >= NaN is false. */
    dla_scope_begin();
    const double a[4] = {1, 5, NAN, 2}, b[4] = {NAN, 3, 4, NAN};
    dla_tensor *in[2] = {dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(4)),
                         dla_tensor_from_host(b, DLA_F64, "", DLA_DIMS(4))};
    dla_tensor *out[3];
    assert_int_equal(dla_feval(max_min_loss, NULL, 2, in, 3, out), DLA_OK);
    /* max picks a, a, b, a; min picks a, b, b, a. */
    const double ga[4] = {1 + 2, 1, 0, 1 + 2}, gb[4] = {0, 2, 1 + 2, 0};
    for (int i = 0; i < 4; i++)
        if (dla_tensor_item(out[1], i) != ga[i] || dla_tensor_item(out[2], i) != gb[i])
            fail_msg("element %d: d/da %g (want %g), d/db %g (want %g)", i,
                     dla_tensor_item(out[1], i), ga[i], dla_tensor_item(out[2], i), gb[i]);
    dla_scope_end();
}

/* L = sum(sqrt(relu(x))) + sum(sqrt(max2(x, z1))) + sum(sqrt(-min2(-x, z2))),
 * z1 and z2 zeros */
static dla_status flat_side_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    dla_tensor *x = in[0];
    dla_tensor *l = dla_add(dla_add(dla_sum(dla_sqrt(dla_relu(x)), 0, NULL),
                                    dla_sum(dla_sqrt(dla_max2(x, in[1])), 0, NULL)),
                            dla_sum(dla_sqrt(dla_neg(dla_min2(dla_neg(x), in[2]))), 0, NULL));
    out[0] = l;
    return dla_gradient(l, 3, in, out + 1);
}

static void test_an_infinite_gradient_stays_off_the_flat_side_of_relu_max_and_min(void **state)
{
    /* sqrt(relu(x)) is 0 for every x < 0, so its gradient there is 0; but
     * sqrt' is Inf at 0, and relu, max2 and min2 multiplied it by their
     * 0/1 masks: Inf * 0, a NaN that a training step spreads to every
     * weight (the sqrt(max(d2, 0)) of a distance). They pick it instead. */
    dla_scope_begin();
    const double x[4] = {-1, 4, -0.25, 0};
    dla_tensor *in[3] = {dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(4)),
                         dla_zeros(DLA_F64, "", DLA_DIMS(4)), dla_zeros(DLA_F64, "", DLA_DIMS(4))};
    dla_tensor *out[4];
    assert_int_equal(dla_feval(flat_side_loss, NULL, 3, in, 4, out), DLA_OK);
    /* x = 4: 1/(2 sqrt(4)) from each of the three terms; x = 0: relu gives
     * 0 (relu' is 0 at 0), max2 and min2 pick x on the tie, Inf each. */
    const double want[3][4] = {{0, 0.75, 0, INFINITY},
                               {INFINITY, 0, INFINITY, 0},
                               {-INFINITY, 0, -INFINITY, 0}};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++) {
            double g = dla_tensor_item(out[1 + k], i);
            if (!(g == want[k][i]))
                fail_msg("x = %g: the gradient of input %d is %g (want %g)", x[i], k, g,
                         want[k][i]);
        }
    dla_scope_end();
}

/* L = sum(sqrt(max(x, [], 1))) + sum(sqrt(-min(-x, [], 1))) */
static dla_status flat_extremes_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    dla_tensor *x = in[0];
    dla_tensor *l = dla_add(dla_sum(dla_sqrt(dla_max(x, DLA_DIMS(1))), 0, NULL),
                            dla_sum(dla_sqrt(dla_neg(dla_min(dla_neg(x), DLA_DIMS(1)))), 0, NULL));
    out[0] = l;
    return dla_gradient(l, 1, in, out + 1);
}

static void test_an_infinite_gradient_of_max_and_min_goes_only_where_they_came_from(void **state)
{
    /* The max of the column [-1 0] is 0, where sqrt' is Inf: the -1
     * gets 0 (the result does not depend on it), not 0 * Inf = NaN; a
     * column whose max is NaN still gives NaN throughout. */
    dla_scope_begin();
    const double x[6] = {-1, 0, 4, -2, 1, NAN};
    dla_tensor *in = dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(2, 3));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(flat_extremes_loss, NULL, 1, &in, 2, out), DLA_OK);
    const double want[4] = {0, INFINITY, 0.5, 0};
    for (int i = 0; i < 4; i++) {
        double g = dla_tensor_item(out[1], i);
        if (!(g == want[i]))
            fail_msg("x = %g: d/dx %g (want %g)", x[i], g, want[i]);
    }
    assert_true(isnan(dla_tensor_item(out[1], 4)) && isnan(dla_tensor_item(out[1], 5)));
    dla_scope_end();
}

static void test_a_cast_to_single_passes_the_gradient_back_in_double(void **state)
{
    dla_scope_begin();
    dla_tensor *x = rnd("CB", DLA_DIMS(3, 2));
    dla_tensor *out[2];
    assert_int_equal(dla_feval(through_single, NULL, 1, &x, 2, out), DLA_OK);
    assert_int_equal(dla_tensor_dtype(out[0]), DLA_F32);
    assert_int_equal(dla_tensor_dtype(out[1]), DLA_F64);
    assert_string_equal(dla_tensor_format(out[1]), "CB");
    for (int i = 0; i < 6; i++)
        assert_true(dla_tensor_item(out[1], i) == 3.0);
    dla_scope_end();
}

/* ------------------------------------------- composed gradients, random */

/* Random graphs of smooth ops over 6x6 doubles: each op's gradient has
 * its own check, so what these test is composition, values read several
 * times, through views (slices, a transpose, a reshape), broadcast, and
 * into gradients that add up (a gather's repeats, a pad's interior), as
 * a model's code composes them. Smooth ops only, so that the central
 * differences never straddle a kink. */
#define RD_INPUTS 3
#define RD_OPS 10
#define RD_KINDS 19
typedef struct rd_graph {
    int kind[RD_OPS], a[RD_OPS], b[RD_OPS], keep;
    double alpha[RD_OPS];
} rd_graph;

static dla_tensor *rd_op(const rd_graph *g, int k, dla_tensor *a, dla_tensor *b)
{
    static const int64_t d66[2] = {6, 6};
    const double al = g->alpha[k];
    switch (g->kind[k]) {
    case 0: return dla_add(a, b);
    case 1: return dla_sub(a, dla_permute(b, 2, (const int64_t[]){2, 1}));
    case 2: return dla_mul(a, b);
    case 3: return dla_affine(a, al, 0.25);
    case 4: return dla_add(a, dla_square(b));
    case 5: return dla_add(a, dla_affine(dla_sum(b, 0, NULL), 0.05, 0.0)); /* broadcast */
    case 6: { /* an outer product of a column of a and a row of b, views into them */
        const int64_t c = ((int64_t)(al * 2.0) + 4) % 6;
        return dla_mtimes(dla_slice(a, 2, c, 1, c + 1), dla_slice(b, 1, c, 1, c + 1));
    }
    case 7: return dla_affine(al >= 0.0 ? dla_mtimes(a, b) : dla_pagemtimes(a, "transpose", b, "none"), 0.2, 0.0);
    case 8: return dla_sub(a, dla_affine(dla_sum(b, 1, (const int64_t[]){2}), 1.0 / 6.0, 0.0));
    case 9: return dla_cat(2, 2, (dla_tensor *[]){dla_slice(a, 2, 0, 1, 3), dla_slice(b, 2, 3, 1, 6)});
    case 10: { /* columns gathered with repeats */
        static const int32_t cols[6] = {5, 0, 5, 2, 2, 1};
        return dla_index(a, 2, dla_tensor_from_host(cols, DLA_I32, "", DLA_DIMS(1, 6)));
    }
    case 11: /* padded by al, and a window of it */
        return dla_slice(dla_slice(dla_pad(a, 2, (const int64_t[]){1, 0}, (const int64_t[]){0, 1}, al),
                                   1, 0, 1, 6),
                         2, 1, 1, 7);
    case 12:
        return dla_reshape(al >= 0.0 ? dla_softmax(dla_reshape(a, "CB", 2, d66))
                                     : dla_logsoftmax(dla_reshape(a, "CB", 2, d66)),
                           "", 2, d66);
    case 13: { /* overlapping 3x3 windows, averaged */
        dla_tensor *x = dla_reshape(a, "SSCB", 4, (const int64_t[]){6, 6, 1, 1});
        const dla_pool_options same = {.padding_mode = "same"};
        return dla_reshape(dla_avgpool(x, 2, (const int64_t[]){3, 3}, &same), "", 2, d66);
    }
    case 14: return dla_mul(dla_sigmoid(a), dla_tanh(b));
    case 15: /* a loss, bounded, scaling a */
        return dla_mul(a, dla_tanh(dla_mse(a, b, &(dla_regression_loss_options){.data_format = "CB"})));
    case 16: { /* 2 groups of 3 channels, with an offset and a scale that are b's */
        dla_tensor *off = dla_slice(b, 2, 0, 1, 1), *sc = dla_affine(dla_slice(b, 2, 1, 1, 2), 0.5, 1.0);
        return dla_reshape(dla_groupnorm(dla_reshape(a, "CB", 2, d66), 2, off, sc, NULL), "", 2, d66);
    }
    case 17: /* the same elements through other dims */
        return dla_reshape(dla_mul(dla_reshape(a, "", 2, (const int64_t[]){36, 1}),
                                   dla_reshape(b, "", 2, (const int64_t[]){36, 1})),
                           "", 2, d66);
    default: return dla_div(a, dla_affine(dla_square(b), 1.0, 1.0));
    }
}

static dla_tensor *rd_fn(void *ctx, dla_tensor *const *in)
{
    const rd_graph *g = ctx;
    dla_tensor *v[RD_INPUTS + RD_OPS];
    for (int i = 0; i < RD_INPUTS; i++)
        v[i] = in[i];
    for (int k = 0; k < RD_OPS; k++)
        v[RD_INPUTS + k] = rd_op(g, k, v[g->a[k]], v[g->b[k]]);
    /* The last value, an earlier one read once more, and the inputs'
     * product, so that the loss depends on every input. */
    dla_tensor *y = dla_add(v[RD_INPUTS + RD_OPS - 1], dla_affine(v[g->keep], 0.5, 0.0));
    return dla_add(y, dla_affine(dla_mul(in[0], dla_mul(in[1], in[2])), 0.1, 0.0));
}

/* Draws a graph from the xorshift state *r, counting its kinds. */
static void rd_draw(unsigned long long *r, rd_graph *g, int *drawn)
{
#define RD_NEXT(n) (*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17, (int)(*r % (unsigned long long)(n)))
    for (int k = 0; k < RD_OPS; k++) {
        const int nv = RD_INPUTS + k;
        g->kind[k] = RD_NEXT(RD_KINDS);
        g->a[k] = RD_NEXT(3) ? nv - 1 : RD_NEXT(nv);
        g->b[k] = RD_NEXT(nv);
        g->alpha[k] = (RD_NEXT(9) - 4) * 0.5;
        drawn[g->kind[k]]++;
    }
    g->keep = RD_NEXT(RD_INPUTS + RD_OPS - 1);
#undef RD_NEXT
}

/* rounds random graphs from seed through check (gc_check or gc_check2). */
static void rd_rounds(unsigned long long seed, int rounds,
                      void (*check)(gc_fn, void *, int, dla_tensor *const *, const int *, double))
{
    int drawn[RD_KINDS] = {0};
    for (int round = 0; round < rounds; round++) {
        rd_graph g;
        rd_draw(&seed, &g, drawn);
        dla_scope_begin();
        dla_tensor *in[RD_INPUTS];
        for (int i = 0; i < RD_INPUTS; i++)
            in[i] = dla_affine(rnd("", DLA_DIMS(6, 6)), 0.5, 0.0);
        check(rd_fn, &g, RD_INPUTS, in, (const int[]){1, 1, 1}, 1e-5);
        dla_scope_end();
    }
    for (int k = 0; k < RD_KINDS; k++)
        if (!drawn[k])
            fail_msg("op kind %d was never drawn", k);
}

static void test_random_compositions_have_the_gradients_of_central_differences(void **state)
{
    rd_rounds(0x6a09e667f3bcc909ULL, 30, gc_check);
}

/* The same graphs' Hessian-vector products: every backward rule above,
 * recorded and differentiated again (enable_higher_derivatives). */
static void test_random_compositions_have_the_second_derivatives_of_central_differences(void **state)
{
    rd_rounds(0xbb67ae8584caa73bULL, 20, gc_check2);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    dla_rng_seed(11);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_feval_returns_values_and_exact_gradients),
        TU_TEST(test_several_gradients_in_one_feval_and_tensors_reached_through_ctx),
        TU_TEST(test_gradient_errors_say_what_is_wrong),
        TU_TEST(test_an_unused_variable_gets_zeros_as_in_matlab),
        TU_TEST(test_a_loss_that_reads_an_inputs_memory_under_another_handle_is_refused),
        TU_TEST(test_outputs_left_unset_are_error_tensors),
        TU_TEST(test_fevals_nest_with_their_own_tapes),
        TU_TEST(test_the_tape_is_freed_when_feval_returns),
        TU_TEST(test_the_sweep_lets_go_of_gradients_it_has_passed),
        TU_TEST(test_gradients_are_handed_over_as_each_becomes_final),
        TU_TEST(test_gradient_hooks_do_not_run_in_an_accelerated_function),
        TU_TEST(test_binary_op_gradients_with_broadcasting),
        TU_TEST(test_unary_op_gradients),
        TU_TEST(test_reduction_gradients_over_dim_sets),
        TU_TEST(test_matrix_product_gradients),
        TU_TEST(test_view_and_transfer_gradients),
        TU_TEST(test_a_cast_to_single_passes_the_gradient_back_in_double),
        TU_TEST(test_random_compositions_have_the_gradients_of_central_differences),
        TU_TEST(test_random_compositions_have_the_second_derivatives_of_central_differences),
        TU_TEST(test_every_gradient_has_memory_of_its_own),
        TU_TEST(test_powers_of_zero_have_their_limits_as_gradients),
        TU_TEST(test_max_and_min_send_no_gradient_to_a_nan_they_skipped),
        TU_TEST(test_an_infinite_gradient_stays_off_the_flat_side_of_relu_max_and_min),
        TU_TEST(test_an_infinite_gradient_of_max_and_min_goes_only_where_they_came_from),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * recurrent_fn.c - MATLAB's lstm and gru functions (the recurrent steps of
 * model functions): the arguments are checked and put in the layers' form
 * (weights as gates*H x C, states as H x 1 or H x N), then lstmLayer's and
 * gruLayer's own forward runs on them, so the function and the layer are
 * one computation with the same bits, and its gradients come from the same
 * differentiable ops.
 */
#include "nn/nn.h"

#include <string.h>

typedef struct rnn_call {
    const char *op;
    const dla__layer_kind *kind;
    int gates;     /* weight rows a hidden unit: 4 (LSTM), 3 (GRU) */
    int bias_rows; /* bias rows a hidden unit: gates, or 6 (GRU's recurrent bias) */
    const char *reset_mode;
    dla_tensor *x, *w, *r, *b;
    int nstates;
    dla_tensor *s[2];
    const char *state_name[2];
    const char *data_format;
} rnn_call;

static const char *dims_of(dla_tensor *t, char *buf, size_t size)
{
    int64_t d[DLA_MAX_DIMS];
    dla__dims_text(dla_tensor_dims(t, d), d, buf, size);
    return buf;
}

static dla_status check_arg(const rnn_call *c, const char *name, dla_tensor *t)
{
    if (!t)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", c->op, name);
    if (dla_tensor_status(t) != DLA_OK)
        return dla__nn_fail(dla_tensor_status(t), "%s: argument %s: %s", c->op, name,
                            dla_tensor_error(t));
    const dla_dtype dt = dla_tensor_dtype(t);
    if (dt != DLA_F32 && dt != DLA_F64)
        return dla__nn_fail(DLA_ERR_DTYPE, "%s: argument %s: %s; needs single or double", c->op,
                            name, dla_dtype_name(dt));
    if (t != c->x && dt != dla_tensor_dtype(c->x))
        return dla__nn_fail(DLA_ERR_DTYPE, "%s: argument %s is %s, x is %s", c->op, name,
                            dla_dtype_name(dt), dla_dtype_name(dla_tensor_dtype(c->x)));
    return DLA_OK;
}

/* t's elements as an unlabelled rows x cols matrix (cols 0: as many
 * columns as its count makes, given 1 or nb); NULL with the error set when
 * t is not that. */
static dla_tensor *as_matrix(const rnn_call *c, const char *name, dla_tensor *t, int64_t rows,
                             int64_t cols, int64_t nb)
{
    char d[96];
    const int64_t n = dla_tensor_numel(t);
    const int state = cols == 0;
    if (state && n == rows * nb && dla_tensor_dim(t, 1) == rows)
        cols = nb;
    else if (state)
        cols = 1;
    if (n != rows * cols || (cols > 1 && dla_tensor_dim(t, 1) != rows)) {
        if (state)
            dla__nn_fail(DLA_ERR_SHAPE, "%s: argument %s: %s; want %lldx1 (one state for every "
                         "observation) or %lldx%lld (one each)", c->op, name,
                         dims_of(t, d, sizeof d), (long long)rows, (long long)rows, (long long)nb);
        else
            dla__nn_fail(DLA_ERR_SHAPE, "%s: argument %s: %s; want %lldx%lld", c->op, name,
                         dims_of(t, d, sizeof d), (long long)rows, (long long)cols);
        return NULL;
    }
    return dla_reshape(t, "", DLA_DIMS(rows, cols));
}

/* out[0] = y, out[1..nstates] the states after the last step: references
 * of the caller's, in no scope. */
static dla_status rnn_run(rnn_call *c, dla_tensor **out)
{
    static const char *const names[4] = {"x", "weights", "recurrent_weights", "bias"};
    dla_tensor *args[4] = {c->x, c->w, c->r, c->b};
    dla_status st = DLA_OK;
    for (int i = 0; i < 4 && st == DLA_OK; i++)
        st = check_arg(c, names[i], args[i]); /* x first: the others' dtypes are x's */
    for (int k = 0; k < c->nstates && st == DLA_OK; k++)
        st = check_arg(c, c->state_name[k], c->s[k]);
    if (st != DLA_OK)
        return st;
    char d[96];
    const char *fmt = dla_tensor_format(c->x), *given = c->data_format;
    const int has_given = given && given[0];
    if (fmt[0] && has_given)
        return dla__nn_fail(DLA_ERR_FORMAT, "%s: option data_format: \"%s\" given, but x (%s) "
                            "is formatted \"%s\"", c->op, given, dims_of(c->x, d, sizeof d), fmt);
    const char *f = fmt[0] ? fmt : has_given ? given : "";
    /* "CT": one sequence without a "B" dim (MATLAB's lstm and gru take
     * it), run as a batch of one and given back as "CT". */
    const int one_seq = !strcmp(f, "CT");
    if (strcmp(f, "CBT") && strcmp(f, "CB") && !one_seq) {
        if (!f[0])
            return dla__nn_fail(DLA_ERR_FORMAT, "%s: argument x: %s is unformatted; give it "
                                "labels or set data_format (\"CBT\", \"CT\" for one "
                                "sequence, or \"CB\" for one step)",
                                c->op, dims_of(c->x, d, sizeof d));
        return dla__nn_fail(DLA_ERR_FORMAT, "%s: argument x: %s \"%s\"; it takes \"CBT\" "
                            "sequences, \"CT\" for one sequence, or \"CB\" for one step",
                            c->op, dims_of(c->x, d, sizeof d), f);
    }
    if (!fmt[0] && dla_tensor_ndims(c->x) > (int)strlen(f))
        return dla__nn_fail(DLA_ERR_FORMAT, "%s: argument x: %s has more dims than data_format "
                            "\"%s\" labels", c->op, dims_of(c->x, d, sizeof d), f);
    const int64_t h = dla_tensor_dim(c->r, 2), ch = dla_tensor_dim(c->x, 1);
    const int64_t nb = one_seq ? 1 : dla_tensor_dim(c->x, 2);
    const int64_t nt = dla_tensor_dim(c->x, one_seq ? 2 : 3);
    if (dla_tensor_ndims(c->r) > 2 || h < 1 || dla_tensor_dim(c->r, 1) != c->gates * h)
        return dla__nn_fail(DLA_ERR_SHAPE, "%s: argument recurrent_weights: %s; want %dH x H "
                            "for H hidden units", c->op, dims_of(c->r, d, sizeof d), c->gates);

    dla_scope_begin();
    dla_tensor *p[5];
    p[0] = as_matrix(c, "weights", c->w, c->gates * h, ch, nb);
    p[1] = dla_reshape(c->r, "", DLA_DIMS(c->gates * h, h));
    p[2] = as_matrix(c, "bias", c->b, c->bias_rows * h, 1, nb);
    int ok = p[0] && p[2];
    for (int k = 0; k < c->nstates && ok; k++)
        ok = (p[3 + k] = as_matrix(c, c->state_name[k], c->s[k], h, 0, nb)) != NULL;
    if (!ok) {
        st = dla_last_status();
        dla_scope_end();
        return st;
    }
    /* The layers read a labelled input ("CT" as "CBT" of one). */
    const int nd = (int)strlen(f);
    dla_tensor *x = one_seq  ? dla_reshape(c->x, "CBT", DLA_DIMS(ch, 1, nt))
                    : fmt[0] ? c->x
                             : dla_reshape(c->x, f, nd, (const int64_t[]){ch, nb, nt});
    dla__props props = {0};
    props.count = h;
    strcpy(props.mode, "sequence");
    if (c->reset_mode)
        strcpy(props.option, c->reset_mode);
    dla__call call = {.training = 1, .nx = 1, .x = &x, .p = p};
    st = c->kind->forward(&props, &call);
    if (st == DLA_OK) {
        int64_t yd[DLA_MAX_DIMS];
        const int ynd = dla_tensor_dims(call.y, yd);
        if (one_seq)
            out[0] = dla_reshape(call.y, fmt[0] ? "CT" : "", DLA_DIMS(h, nt));
        else
            out[0] = fmt[0] ? call.y : dla_reshape(call.y, "", ynd, yd);
        /* H x B, even with no step (dla__recurrent_end widens them). */
        for (int k = 0; k < c->nstates; k++)
            out[1 + k] = call.new_state[k];
        for (int k = 0; k <= c->nstates && st == DLA_OK; k++)
            st = dla_tensor_status(out[k]);
    }
    if (st != DLA_OK) {
        /* The layer's words ("the input has 5 channels ...") with the op's name. */
        char msg[512];
        strncpy(msg, dla_last_error(), sizeof msg - 1);
        msg[sizeof msg - 1] = 0;
        dla_scope_end();
        return dla__nn_fail(st, "%s: %s", c->op, msg);
    }
    for (int k = 0; k <= c->nstates; k++)
        dla_tensor_retain(out[k]);
    dla_scope_end();
    return DLA_OK;
}

/* *dst = t, adopted by the caller's scope; t released when dst is NULL. */
static void deliver(dla_tensor **dst, dla_tensor *t)
{
    if (dst)
        *dst = dla__nn_return(t);
    else
        dla_tensor_release(t);
}

/* Every requested output an error tensor with the thread's error. */
static dla_status fail_outputs(dla_status st, dla_tensor **y, dla_tensor **s1, dla_tensor **s2)
{
    dla_tensor **outs[3] = {y, s1, s2};
    for (int i = 0; i < 3; i++)
        if (outs[i])
            *outs[i] = dla__nn_error_tensor();
    return st;
}

DLA_API dla_status dla_lstm(dla_tensor *x, dla_tensor *h0, dla_tensor *c0, dla_tensor *weights,
                            dla_tensor *recurrent_weights, dla_tensor *bias,
                            const dla_recurrent_options *opts, dla_tensor **y,
                            dla_tensor **hidden_state, dla_tensor **cell_state)
{
    if (!y)
        return fail_outputs(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_lstm: argument y is "
                                         "NULL"), NULL, hidden_state, cell_state);
    if (opts && opts->reset_gate_mode)
        return fail_outputs(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_lstm: option "
                                         "reset_gate_mode is dla_gru's"),
                            y, hidden_state, cell_state);
    rnn_call c = {"dla_lstm", &dla__kind_lstm, 4, 4, NULL, x, weights, recurrent_weights, bias,
                  2, {h0, c0}, {"h0", "c0"}, opts ? opts->data_format : NULL};
    dla_tensor *out[3];
    dla_status st = rnn_run(&c, out);
    if (st != DLA_OK)
        return fail_outputs(st, y, hidden_state, cell_state);
    deliver(y, out[0]);
    deliver(hidden_state, out[1]);
    deliver(cell_state, out[2]);
    return DLA_OK;
}

DLA_API dla_status dla_gru(dla_tensor *x, dla_tensor *h0, dla_tensor *weights,
                           dla_tensor *recurrent_weights, dla_tensor *bias,
                           const dla_recurrent_options *opts, dla_tensor **y,
                           dla_tensor **hidden_state)
{
    if (!y)
        return fail_outputs(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_gru: argument y is "
                                         "NULL"), NULL, hidden_state, NULL);
    const char *mode = opts && opts->reset_gate_mode ? opts->reset_gate_mode
                                                     : "after-multiplication";
    int bias_rows = 3;
    if (!strcmp(mode, "recurrent-bias-after-multiplication"))
        bias_rows = 6;
    else if (strcmp(mode, "after-multiplication") && strcmp(mode, "before-multiplication"))
        return fail_outputs(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_gru: option "
                                         "reset_gate_mode \"%s\"; use \"after-multiplication\", "
                                         "\"before-multiplication\" or "
                                         "\"recurrent-bias-after-multiplication\"", mode),
                            y, hidden_state, NULL);
    rnn_call c = {"dla_gru", &dla__kind_gru, 3, bias_rows, mode, x, weights, recurrent_weights,
                  bias, 1, {h0, NULL}, {"h0", NULL}, opts ? opts->data_format : NULL};
    dla_tensor *out[2];
    dla_status st = rnn_run(&c, out);
    if (st != DLA_OK)
        return fail_outputs(st, y, hidden_state, NULL);
    deliver(y, out[0]);
    deliver(hidden_state, out[1]);
    return DLA_OK;
}

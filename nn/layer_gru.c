/*
 * layer_gru.c - gruLayer in existing differentiable ops (the input
 * projection of every step and the run's end in layer_recurrent.c). Gate
 * order in the weights is MATLAB's: reset, update, candidate. With r, z
 * the reset and update gates and n the candidate,
 *
 *     h_t = (1 - z) .* n + z .* h_{t-1},  n = tanh(W_n x + r .* (R_n h) + b_n)
 *
 * for ResetGateMode "after-multiplication" (MATLAB's default and
 * cuDNN's); "before-multiplication" takes R_n (r .* h); and
 * "recurrent-bias-after-multiplication" has a bias of 6 x NumHiddenUnits,
 * the input's then the recurrent product's, the latter inside r .* ( ).
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields[] = {
    F("NumHiddenUnits", DLA__F_INT, count, 1),
    F("InputSize", DLA__F_INT, channels, 1),
    F("OutputMode", DLA__F_STRING, mode, 1),
    F("ResetGateMode", DLA__F_STRING, option, 1),
    F("InputWeightsInitializer", DLA__F_STRING, init[0], 1),
    F("RecurrentWeightsInitializer", DLA__F_STRING, init[1], 1),
    F("BiasInitializer", DLA__F_STRING, init[2], 1),
    F("HasStateInputs", DLA__F_INT, state_io[0], 1),
    F("HasStateOutputs", DLA__F_INT, state_io[1], 1),
    {NULL, 0, 0, 0},
};

enum { AFTER, BEFORE, RECURRENT_BIAS };

static int reset_mode(const dla__props *p)
{
    return !strcmp(p->option, "before-multiplication")                 ? BEFORE
           : !strcmp(p->option, "recurrent-bias-after-multiplication") ? RECURRENT_BIAS
                                                                        : AFTER;
}

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("gru", name, "NumHiddenUnits", p->count, 1, 1 << 20);
    if (st == DLA_OK)
        st = dla__layer_size("gru", name, "InputSize", p->channels, 0, 1 << 24);
    if (st == DLA_OK)
        st = dla__state_io_check("gru", p, name);
    if (st != DLA_OK)
        return st;
    if (strcmp(p->mode, "sequence") && strcmp(p->mode, "last"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "gru '%s': OutputMode \"%s\"; use "
                            "\"sequence\" or \"last\"", name, p->mode);
    if (strcmp(p->option, "after-multiplication") && strcmp(p->option, "before-multiplication") &&
        strcmp(p->option, "recurrent-bias-after-multiplication"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "gru '%s': ResetGateMode \"%s\"; use "
                            "\"after-multiplication\", \"before-multiplication\" or "
                            "\"recurrent-bias-after-multiplication\"", name, p->option);
    static const char *const what[3] = {"InputWeightsInitializer", "RecurrentWeightsInitializer",
                                        "BiasInitializer"};
    for (int k = 0; k < 3; k++)
        if (!dla__init_known(p->init[k], 0) && !(k < 2 && !strcmp(p->init[k], "orthogonal")))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "gru '%s': %s \"%s\" is unknown", name,
                                what[k], p->init[k]);
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const dla__props *p = &l->props;
    const int64_t c = dla__shape_dim(in, 'C');
    if (!c || dla__shape_count(in, 'S') || dla__shape_count(in, 'U'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; gru takes \"CBT\" sequences",
                            in->format);
    if (p->channels && p->channels != c)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, InputSize is %lld",
                            (long long)c, (long long)p->channels);
    dla_status st = dla__state_io_init(l, in, p->count);
    if (st != DLA_OK)
        return st;
    const int64_t h = p->count, nb = reset_mode(p) == RECURRENT_BIAS ? 6 * h : 3 * h;
    const int64_t wd[2] = {3 * h, c}, rd[2] = {3 * h, h}, bd[2] = {nb, 1}, sd[2] = {h, 1};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, (double)c, (double)(3 * h));
    st = dla__param_add(sink, "InputWeights", DLA__LEARNABLE, w, 2, wd, 1);
    if (st != DLA_OK)
        return st;
    dla_tensor *r = dla__init_tensor(p->init[1], sink, 2, rd, (double)h, (double)(3 * h));
    if ((st = dla__param_add(sink, "RecurrentWeights", DLA__LEARNABLE, r, 2, rd, 1)) != DLA_OK)
        return st;
    dla_tensor *b = dla__init_tensor(p->init[2], sink, 2, bd, (double)c, (double)(3 * h));
    if ((st = dla__param_add(sink, "Bias", DLA__LEARNABLE, b, 2, bd, 0)) != DLA_OK)
        return st;
    if (p->state_io[0]) /* stateless: each run starts from its "hidden" input */
        return DLA_OK;
    dla_tensor *s = dla__init_tensor("zeros", sink, 2, sd, 1, 1);
    /* H x 1, or H x N after a batch of N, as the LSTM's. */
    return dla__param_add_batched(sink, "HiddenState", DLA__STATE, s, 2, sd, 0);
}

static dla_status run_layer(const dla__props *p, dla__call *c)
{
    dla_tensor *rw = c->p[1], *bias = c->p[2];
    const int64_t h = p->count;
    const int mode = reset_mode(p);
    /* The recurrent product's own bias (recurrent-bias mode) goes inside
     * r .* ( ); the input's goes with the projection. */
    dla_tensor *rbias = mode == RECURRENT_BIAS ? dla_slice(bias, 1, 3 * h, 1, 6 * h) : NULL;
    dla_tensor *ibias = mode == RECURRENT_BIAS ? dla_slice(bias, 1, 0, 1, 3 * h) : bias;
    dla__recurrent run;
    dla_status st = dla__recurrent_begin("gru", c, 1, 3 * h, ibias, &run);
    if (st == DLA_OK)
        st = dla__recurrent_keep_steps("gru", p, c, &run);
    if (st != DLA_OK)
        return st;
    dla_tensor *r_rz = dla_slice(rw, 1, 0, 1, 2 * h), *r_n = dla_slice(rw, 1, 2 * h, 1, 3 * h);
    dla_tensor *ht = dla__recurrent_state(c, 0);
    for (int64_t t = 0; t < run.nt; t++) {
        dla_tensor *x = dla__recurrent_input(&run, t);
        dla_tensor *rh = mode == BEFORE ? dla_mtimes(r_rz, ht) : dla_mtimes(rw, ht);
        if (rbias)
            rh = dla_add(rh, rbias);
        dla_tensor *rg = dla_sigmoid(dla_add(dla__recurrent_gate(x, 0, h),
                                             dla__recurrent_gate(rh, 0, h)));
        dla_tensor *zg = dla_sigmoid(dla_add(dla__recurrent_gate(x, 1, h),
                                             dla__recurrent_gate(rh, 1, h)));
        dla_tensor *inner = mode == BEFORE ? dla_mtimes(r_n, dla_mul(rg, ht))
                                           : dla_mul(rg, dla__recurrent_gate(rh, 2, h));
        dla_tensor *n = dla_tanh(dla_add(dla__recurrent_gate(x, 2, h), inner));
        /* (1 - z) n + z h = n + z (h - n) */
        ht = dla_add(n, dla_mul(zg, dla_sub(ht, n)));
        if (run.steps)
            run.steps[t] = ht;
    }
    return dla__recurrent_end(p, c, &run, 1, &ht);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    return dla__state_io_forward("gru", p->count, p, c, run_layer);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "GRU with %lld hidden units (OutputMode '%s', ResetGateMode '%s'%s%s)",
             (long long)p->count, p->mode, p->option, p->state_io[0] ? ", HasStateInputs" : "",
             p->state_io[1] ? ", HasStateOutputs" : "");
}

const dla__layer_kind dla__kind_gru = {
    .type = "gru", .display = "GRU", .default_name = "gru", .fields = fields, .check = check,
    .init = init, .forward = forward, .describe = describe,
    .initial_state = dla__recurrent_initial_state, .state_ports = 1,
};

DLA_API dla_layer *dla_gru_layer(int64_t num_hidden_units, const dla_gru_layer_options *opts)
{
    dla_gru_layer_options o = opts ? *opts : (dla_gru_layer_options){0};
    dla__props p = {0};
    p.count = num_hidden_units;
    p.channels = o.input_size;
    dla_status st = dla__props_string(p.mode, o.output_mode, "sequence", "gru: OutputMode");
    if (st == DLA_OK)
        st = dla__props_string(p.option, o.reset_gate_mode, "after-multiplication",
                               "gru: ResetGateMode");
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.input_weights_initializer, "glorot",
                               "gru: InputWeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.recurrent_weights_initializer, "orthogonal",
                               "gru: RecurrentWeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[2], o.bias_initializer, "zeros", "gru: BiasInitializer");
    p.state_io[0] = o.has_state_inputs != 0;
    p.state_io[1] = o.has_state_outputs != 0;
    return dla__layer_new(&dla__kind_gru, o.name, dla__kind_inputs(&dla__kind_gru, &p), &p, st);
}

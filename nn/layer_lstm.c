/*
 * layer_lstm.c - lstmLayer, written in existing differentiable ops so its
 * gradient comes from theirs: the input projection of every time step in
 * one dla_mtimes (layer_recurrent.c), then per step the recurrent
 * product, the gates (dla_sigmoid, dla_tanh on row slices of z) and the
 * cell update. Gate order in the weights is MATLAB's: input, forget, cell
 * candidate, output.
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
    F("InputWeightsInitializer", DLA__F_STRING, init[0], 1),
    F("RecurrentWeightsInitializer", DLA__F_STRING, init[1], 1),
    F("BiasInitializer", DLA__F_STRING, init[2], 1),
    {NULL, 0, 0, 0},
};

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("lstm", name, "NumHiddenUnits", p->count, 1, 1 << 20);
    if (st == DLA_OK)
        st = dla__layer_size("lstm", name, "InputSize", p->channels, 0, 1 << 24);
    if (st != DLA_OK)
        return st;
    if (strcmp(p->mode, "sequence") && strcmp(p->mode, "last"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "lstm '%s': OutputMode \"%s\"; use "
                            "\"sequence\" or \"last\"", name, p->mode);
    static const char *const what[3] = {"InputWeightsInitializer", "RecurrentWeightsInitializer",
                                        "BiasInitializer"};
    for (int k = 0; k < 3; k++) {
        int ok = dla__init_known(p->init[k], 0) ||
                 (k < 2 && !strcmp(p->init[k], "orthogonal")) ||
                 (k == 2 && !strcmp(p->init[k], "unit-forget-gate"));
        if (!ok)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "lstm '%s': %s \"%s\" is unknown", name,
                                what[k], p->init[k]);
    }
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const dla__props *p = &l->props;
    int64_t c = dla__shape_dim(in, 'C');
    if (!c || dla__shape_count(in, 'S') || dla__shape_count(in, 'U'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; lstm takes \"CBT\" sequences",
                            in->format);
    if (p->channels && p->channels != c)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, InputSize is %lld",
                            (long long)c, (long long)p->channels);
    int64_t h = p->count;
    int64_t wd[2] = {4 * h, c}, rd[2] = {4 * h, h}, bd[2] = {4 * h, 1}, sd[2] = {h, 1};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, (double)c, (double)(4 * h));
    dla_status st = dla__param_add(sink, "InputWeights", DLA__LEARNABLE, w, 2, wd, 1);
    if (st != DLA_OK)
        return st;
    /* MATLAB's fan sizes for recurrent weights: NumHiddenUnits and 4x that. */
    dla_tensor *r = dla__init_tensor(p->init[1], sink, 2, rd, (double)h, (double)(4 * h));
    if ((st = dla__param_add(sink, "RecurrentWeights", DLA__LEARNABLE, r, 2, rd, 1)) != DLA_OK)
        return st;
    dla_tensor *b;
    if (!strcmp(p->init[2], "unit-forget-gate"))
        b = dla__param_loading(sink)
                ? NULL
                : dla_pad(dla_ones(dla__param_dtype(sink), "", DLA_DIMS(h, 1)), 1,
                          (const int64_t[]){h}, (const int64_t[]){2 * h}, 0);
    else
        b = dla__init_tensor(p->init[2], sink, 2, bd, (double)c, (double)(4 * h));
    if ((st = dla__param_add(sink, "Bias", DLA__LEARNABLE, b, 2, bd, 0)) != DLA_OK)
        return st;
    for (int k = 0; k < 2; k++) {
        dla_tensor *s = dla__init_tensor("zeros", sink, 2, sd, 1, 1);
        /* H x 1, or H x N after a batch of N (MATLAB keeps a state per
         * observation): batched, so copies and files keep N. */
        if ((st = dla__param_add_batched(sink, k ? "CellState" : "HiddenState", DLA__STATE, s, 2,
                                         sd, 0)) != DLA_OK)
            return st;
    }
    return DLA_OK;
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_tensor *r = c->p[1], *hs = c->p[3], *cs = c->p[4];
    const int64_t h = p->count;
    dla__recurrent run;
    dla_status st = dla__recurrent_begin("lstm", c, 2, 0, NULL, &run);
    if (st == DLA_OK)
        st = dla__recurrent_keep_steps("lstm", p, c, &run);
    if (st != DLA_OK)
        return st;
    /* z = W x_t + R h + b as one product a step, [W R b] times [x_t; h;
     * 1]: the inputs' projection of every step at once was a product
     * with an inner dim of C (3 for a waveform: 13 MB written for 64 x 99
     * steps, then a pass for the bias and one addition a step). */
    dla_tensor *x = c->x[0];
    const int64_t ch = dla_tensor_dim(x, 1);
    dla_device *dev = dla_tensor_device(x);
    const dla_dtype dt = dla_tensor_dtype(c->p[0]);
    dla_tensor *wrb = dla_cat(2, 3, (dla_tensor *[]){c->p[0], r, c->p[2]});
    dla_tensor *xs = dla_reshape(x, "", DLA_DIMS(ch, run.nb, run.nt));
    dla_tensor *ones = dla_tensor_to_device(dla_ones(dt, "", DLA_DIMS(1, run.nb)), dev);
    dla_tensor *ht = hs, *ct = cs;
    /* A state of one column (the initial one) goes to every observation. */
    if (dla_tensor_dim(ht, 2) != run.nb)
        ht = dla_add(ht, dla_tensor_to_device(dla_zeros(dt, "", DLA_DIMS(h, run.nb)), dev));
    for (int64_t t = 0; t < run.nt; t++) {
        dla_tensor *xt = dla_reshape(dla_slice(xs, 3, t, 1, t + 1), "", DLA_DIMS(ch, run.nb));
        dla_tensor *z = dla_mtimes(wrb, dla_cat(1, 3, (dla_tensor *[]){xt, ht, ones}));
        dla_tensor *ig = dla_sigmoid(dla__recurrent_gate(z, 0, h));
        dla_tensor *fg = dla_sigmoid(dla__recurrent_gate(z, 1, h));
        dla_tensor *gg = dla_tanh(dla__recurrent_gate(z, 2, h));
        dla_tensor *og = dla_sigmoid(dla__recurrent_gate(z, 3, h));
        ct = dla_add(dla_mul(fg, ct), dla_mul(ig, gg));
        ht = dla_mul(og, dla_tanh(ct));
        if (run.steps)
            run.steps[t] = ht;
    }
    return dla__recurrent_end(p, c, &run, 2, (dla_tensor *[]){ht, ct});
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "LSTM with %lld hidden units (OutputMode '%s')", (long long)p->count,
             p->mode);
}

const dla__layer_kind dla__kind_lstm = {
    .type = "lstm", .display = "LSTM", .default_name = "lstm", .fields = fields, .check = check,
    .init = init, .forward = forward, .describe = describe,
    .initial_state = dla__recurrent_initial_state,
};

DLA_API dla_layer *dla_lstm_layer(int64_t num_hidden_units, const dla_lstm_layer_options *opts)
{
    dla_lstm_layer_options o = opts ? *opts : (dla_lstm_layer_options){0};
    dla__props p = {0};
    p.count = num_hidden_units;
    p.channels = o.input_size;
    dla_status st = dla__props_string(p.mode, o.output_mode, "sequence", "lstm: OutputMode");
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.input_weights_initializer, "glorot",
                               "lstm: InputWeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.recurrent_weights_initializer, "orthogonal",
                               "lstm: RecurrentWeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[2], o.bias_initializer, "unit-forget-gate",
                               "lstm: BiasInitializer");
    return dla__layer_new(&dla__kind_lstm, o.name, 1, &p, st);
}

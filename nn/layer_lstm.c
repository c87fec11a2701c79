/*
 * layer_lstm.c - lstmLayer (and the two directions of bilstmLayer,
 * layer_bilstm.c), written in existing differentiable ops so its gradient
 * comes from theirs: per step one product [W R b] [x_t; h; 1], the gates
 * (dla_sigmoid, dla_tanh on row slices of it) and the cell update. Gate
 * order in the weights is MATLAB's: input, forget, cell candidate, output.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

const dla__field dla__lstm_fields[] = {
    F("NumHiddenUnits", DLA__F_INT, count, 1),
    F("InputSize", DLA__F_INT, channels, 1),
    F("OutputMode", DLA__F_STRING, mode, 1),
    F("InputWeightsInitializer", DLA__F_STRING, init[0], 1),
    F("RecurrentWeightsInitializer", DLA__F_STRING, init[1], 1),
    F("BiasInitializer", DLA__F_STRING, init[2], 1),
    F("HasStateInputs", DLA__F_INT, state_io[0], 1),
    F("HasStateOutputs", DLA__F_INT, state_io[1], 1),
    {NULL, 0, 0, 0},
};

dla_status dla__lstm_check(const char *type, const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size(type, name, "NumHiddenUnits", p->count, 1, 1 << 20);
    if (st == DLA_OK)
        st = dla__layer_size(type, name, "InputSize", p->channels, 0, 1 << 24);
    if (st == DLA_OK)
        st = dla__state_io_check(type, p, name);
    if (st != DLA_OK)
        return st;
    if (strcmp(p->mode, "sequence") && strcmp(p->mode, "last"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': OutputMode \"%s\"; use "
                            "\"sequence\" or \"last\"", type, name, p->mode);
    static const char *const what[3] = {"InputWeightsInitializer", "RecurrentWeightsInitializer",
                                        "BiasInitializer"};
    for (int k = 0; k < 3; k++) {
        int ok = dla__init_known(p->init[k], 0) ||
                 (k < 2 && !strcmp(p->init[k], "orthogonal")) ||
                 (k == 2 && !strcmp(p->init[k], "unit-forget-gate"));
        if (!ok)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s \"%s\" is unknown", type,
                                name, what[k], p->init[k]);
    }
    return DLA_OK;
}

static dla_status check(const dla__props *p, const char *name)
{
    return dla__lstm_check("lstm", p, name);
}

/* The bias of one direction for "unit-forget-gate": ones for the forget
 * gate's rows h..2h-1, zeros elsewhere. */
static dla_tensor *unit_forget_gate(dla_dtype dt, int64_t h)
{
    return dla_pad(dla_ones(dt, "", DLA_DIMS(h, 1)), 1, (const int64_t[]){h},
                   (const int64_t[]){2 * h}, 0);
}

dla_status dla__lstm_init(const char *type, int dirs, const dla_layer *l, const dla__shape *in,
                          dla__param_sink *sink)
{
    const dla__props *p = &l->props;
    int64_t c = dla__shape_dim(in, 'C');
    if (!c || dla__shape_count(in, 'S') || dla__shape_count(in, 'U'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences",
                            in->format, type);
    if (p->channels && p->channels != c)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, InputSize is %lld",
                            (long long)c, (long long)p->channels);
    dla_status st = dla__state_io_init(l, in, p->count * dirs);
    if (st != DLA_OK)
        return st;
    /* Each direction's rows one after the other (input, forget, cell
     * candidate, output; then the backward direction's), as MATLAB's
     * bilstmLayer stacks them; fan out 4H a direction, as MATLAB counts
     * it (8H for a bilstm). */
    const int64_t h = p->count, rows = 4 * h * dirs;
    int64_t wd[2] = {rows, c}, rd[2] = {rows, h}, bd[2] = {rows, 1}, sd[2] = {h * dirs, 1};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, (double)c, (double)rows);
    st = dla__param_add(sink, "InputWeights", DLA__LEARNABLE, w, 2, wd, 1);
    if (st != DLA_OK)
        return st;
    /* MATLAB's fan sizes for recurrent weights: NumHiddenUnits and the rows. */
    dla_tensor *r = dla__init_tensor(p->init[1], sink, 2, rd, (double)h, (double)rows);
    if ((st = dla__param_add(sink, "RecurrentWeights", DLA__LEARNABLE, r, 2, rd, 1)) != DLA_OK)
        return st;
    dla_tensor *b;
    const dla_dtype dt = dla__param_dtype(sink);
    if (!strcmp(p->init[2], "unit-forget-gate"))
        b = dla__param_loading(sink) ? NULL
            : dirs == 1             ? unit_forget_gate(dt, h)
                        : dla_cat(1, 2, (dla_tensor *[]){unit_forget_gate(dt, h),
                                                         unit_forget_gate(dt, h)});
    else
        b = dla__init_tensor(p->init[2], sink, 2, bd, (double)c, (double)rows);
    if ((st = dla__param_add(sink, "Bias", DLA__LEARNABLE, b, 2, bd, 0)) != DLA_OK)
        return st;
    /* With state inputs the layer is stateless (MATLAB's HiddenState and
     * CellState are empty then): each run starts from its inputs. */
    for (int k = 0; k < 2 && !p->state_io[0]; k++) {
        dla_tensor *s = dla__init_tensor("zeros", sink, 2, sd, 1, 1);
        /* H x 1, or H x N after a batch of N (MATLAB keeps a state per
         * observation): batched, so copies and files keep N. */
        if ((st = dla__param_add_batched(sink, k ? "CellState" : "HiddenState", DLA__STATE, s, 2,
                                         sd, 0)) != DLA_OK)
            return st;
    }
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return dla__lstm_init("lstm", 1, l, in, sink);
}

/* Rows d*n .. (d+1)*n - 1 of t: direction d's part (all of t for one). */
static dla_tensor *part(dla_tensor *t, int dirs, int d, int64_t n)
{
    return dirs == 1 ? t : dla_slice(t, 1, d * n, 1, (d + 1) * n);
}

/* One direction over the steps of xs (ch x nb x nt), from *ht and *ct (h
 * x nb), forward in time or (reverse) from the last step to the first:
 * z = W x_t + R h + b as one product a step, [W R b] times [x_t; h; 1]
 * (the inputs' projection of every step at once was a product with an
 * inner dim of C: 13 MB written for a waveform's 64 x 99 steps, then a
 * pass for the bias and one addition a step). steps[t]: the hidden
 * state after step t; *ht, *ct: the state after the last step taken. */
static void run_direction(dla_tensor *wrb, dla_tensor *xs, dla_tensor *ones, int64_t h,
                          int64_t nt, int reverse, dla_tensor **ht, dla_tensor **ct,
                          dla_tensor **steps)
{
    const int64_t ch = dla_tensor_dim(xs, 1), nb = dla_tensor_dim(xs, 2);
    for (int64_t k = 0; k < nt; k++) {
        const int64_t t = reverse ? nt - 1 - k : k;
        dla_tensor *xt = dla_reshape(dla_slice(xs, 3, t, 1, t + 1), "", DLA_DIMS(ch, nb));
        dla_tensor *z = dla_mtimes(wrb, dla_cat(1, 3, (dla_tensor *[]){xt, *ht, ones}));
        dla_tensor *ig = dla_sigmoid(dla__recurrent_gate(z, 0, h));
        dla_tensor *fg = dla_sigmoid(dla__recurrent_gate(z, 1, h));
        dla_tensor *gg = dla_tanh(dla__recurrent_gate(z, 2, h));
        dla_tensor *og = dla_sigmoid(dla__recurrent_gate(z, 3, h));
        *ct = dla_add(dla_mul(fg, *ct), dla_mul(ig, gg));
        *ht = dla_mul(og, dla_tanh(*ct));
        if (steps)
            steps[t] = *ht;
    }
}

dla_status dla__lstm_forward(const char *type, int dirs, const dla__props *p, dla__call *c)
{
    const int64_t h = p->count;
    dla__recurrent run;
    dla_status st = dla__recurrent_begin(type, c, 2, 0, NULL, &run);
    if (st == DLA_OK)
        st = dla__recurrent_keep_steps(type, p, c, &run);
    if (st != DLA_OK)
        return st;
    dla_tensor *x = c->x[0];
    const int64_t ch = dla_tensor_dim(x, 1);
    dla_device *dev = dla_tensor_device(x);
    const dla_dtype dt = dla_tensor_dtype(c->p[0]);
    dla_tensor *xs = dla_reshape(x, "", DLA_DIMS(ch, run.nb, run.nt));
    dla_tensor *ones = dla_tensor_to_device(dla_ones(dt, "", DLA_DIMS(1, run.nb)), dev);
    /* A bilstm's steps of each direction, joined at the end. Its output
     * in "last" mode is its state, as the LSTM's: each direction's final
     * hidden state, [h_f(T); h_b(1)], both having seen the whole sequence
     * (the last step of the joined sequence would give h_b(T), which has
     * seen x_T alone). */
    dla_tensor **both = NULL;
    if (dirs == 2 && run.steps) {
        both = dla__nn_malloc(sizeof *both * (size_t)(2 * run.nt + 1));
        if (!both) {
            dla__nn_free(run.steps);
            dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %lld time steps", type, (long long)run.nt);
            c->y = dla__nn_error_tensor();
            return DLA_ERR_OUT_OF_MEMORY;
        }
    }
    dla_tensor *fin[2][2];
    for (int d = 0; d < dirs; d++) {
        dla_tensor *wrb = dla_cat(2, 3, (dla_tensor *[]){part(c->p[0], dirs, d, 4 * h),
                                                          part(c->p[1], dirs, d, 4 * h),
                                                          part(c->p[2], dirs, d, 4 * h)});
        dla_tensor *ht = part(dla__recurrent_state(c, 0), dirs, d, h);
        dla_tensor *ct = part(dla__recurrent_state(c, 1), dirs, d, h);
        /* A state of one column (the initial one) goes to every observation. */
        if (dla_tensor_dim(ht, 2) != run.nb)
            ht = dla_add(ht, dla_tensor_to_device(dla_zeros(dt, "", DLA_DIMS(h, run.nb)), dev));
        run_direction(wrb, xs, ones, h, run.nt, d == 1, &ht, &ct,
                      dirs == 1 ? run.steps : both ? both + d * run.nt : NULL);
        fin[d][0] = ht;
        fin[d][1] = ct;
    }
    if (dirs == 1)
        return dla__recurrent_end(p, c, &run, 2, (dla_tensor *[]){fin[0][0], fin[0][1]});
    for (int64_t t = 0; both && t < run.nt; t++)
        run.steps[t] = dla_cat(1, 2, (dla_tensor *[]){both[t], both[run.nt + t]});
    dla__nn_free(both);
    dla_tensor *states[2];
    for (int k = 0; k < 2; k++)
        states[k] = dla_cat(1, 2, (dla_tensor *[]){fin[0][k], fin[1][k]});
    dla__props two = *p;
    two.count = 2 * h;
    return dla__recurrent_end(&two, c, &run, 2, states);
}

static dla_status run_layer(const dla__props *p, dla__call *c)
{
    return dla__lstm_forward("lstm", 1, p, c);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    return dla__state_io_forward("lstm", p->count, p, c, run_layer);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "LSTM with %lld hidden units (OutputMode '%s'%s%s)", (long long)p->count,
             p->mode, p->state_io[0] ? ", HasStateInputs" : "",
             p->state_io[1] ? ", HasStateOutputs" : "");
}

const dla__layer_kind dla__kind_lstm = {
    .type = "lstm", .display = "LSTM", .default_name = "lstm", .fields = dla__lstm_fields, .check = check,
    .init = init, .forward = forward, .describe = describe,
    .initial_state = dla__recurrent_initial_state, .state_ports = 2,
};

dla_layer *dla__lstm_new(const dla__layer_kind *kind, int64_t num_hidden_units,
                         const dla_lstm_layer_options *opts)
{
    dla_lstm_layer_options o = opts ? *opts : (dla_lstm_layer_options){0};
    dla__props p = {0};
    p.count = num_hidden_units;
    p.channels = o.input_size;
    char what[64];
    snprintf(what, sizeof what, "%s: OutputMode", kind->type);
    dla_status st = dla__props_string(p.mode, o.output_mode, "sequence", what);
    snprintf(what, sizeof what, "%s: InputWeightsInitializer", kind->type);
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.input_weights_initializer, "glorot", what);
    snprintf(what, sizeof what, "%s: RecurrentWeightsInitializer", kind->type);
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.recurrent_weights_initializer, "orthogonal", what);
    snprintf(what, sizeof what, "%s: BiasInitializer", kind->type);
    if (st == DLA_OK)
        st = dla__props_string(p.init[2], o.bias_initializer, "unit-forget-gate", what);
    p.state_io[0] = o.has_state_inputs != 0;
    p.state_io[1] = o.has_state_outputs != 0;
    return dla__layer_new(kind, o.name, dla__kind_inputs(kind, &p), &p, st);
}

DLA_API dla_layer *dla_lstm_layer(int64_t num_hidden_units, const dla_lstm_layer_options *opts)
{
    return dla__lstm_new(&dla__kind_lstm, num_hidden_units, opts);
}

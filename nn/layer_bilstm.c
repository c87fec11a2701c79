/*
 * layer_bilstm.c - bilstmLayer: two LSTMs over a sequence, one forward in
 * time and one backward, their hidden states joined (2H channels), as
 * MATLAB's layer concatenates them. The directions run in layer_lstm.c;
 * each direction's weights are its rows of the 8H-row learnables.
 */
#include "nn/nn.h"

#include <stdio.h>

static dla_status check(const dla__props *p, const char *name)
{
    return dla__lstm_check("bilstm", p, name);
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return dla__lstm_init("bilstm", 2, l, in, sink);
}

static dla_status run_layer(const dla__props *p, dla__call *c)
{
    return dla__lstm_forward("bilstm", 2, p, c);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    return dla__state_io_forward("bilstm", 2 * p->count, p, c, run_layer);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "BiLSTM with %lld hidden units (OutputMode '%s'%s%s)", (long long)p->count,
             p->mode, p->state_io[0] ? ", HasStateInputs" : "",
             p->state_io[1] ? ", HasStateOutputs" : "");
}

const dla__layer_kind dla__kind_bilstm = {
    .type = "bilstm", .display = "BiLSTM", .default_name = "bilstm", .fields = dla__lstm_fields,
    .check = check, .init = init, .forward = forward, .describe = describe,
    .initial_state = dla__recurrent_initial_state, .state_ports = 2,
};

DLA_API dla_layer *dla_bilstm_layer(int64_t num_hidden_units, const dla_lstm_layer_options *opts)
{
    return dla__lstm_new(&dla__kind_bilstm, num_hidden_units, opts);
}

/*
 * net_run.c - forward (training mode), predict (inference mode) and the
 * gradient with respect to the learnables.
 *
 * Both modes run one function over the graph, accelerated with the
 * network's own dla_accel: its tensor inputs are the network inputs, then
 * every learnable, state and fixed parameter (so new values never make a
 * trace stale); its non-tensor key is the architecture text with the
 * mode and the outputs asked for. Its outputs are the outputs asked for,
 * then (forward, dla_net_predict_state) one new value per State row.
 * Inside dla_feval a replay's ops go on the tape, so dla_gradient reaches
 * the learnables either way.
 */
#include "nn/nn.h"

#include "core/accel_advice.h"
#include "core/scope.h"
#include "core/tape.h"

#include <stdio.h>
#include <string.h>

#define MAX_OUTPUTS 64

typedef struct run_ctx {
    dla_net *net;
    int training;
    /* The new state is an output: always in training, in inference only
     * for dla_net_predict_state. */
    int with_state;
    int nout;
    int outs[MAX_OUTPUTS];
    int out_ports[MAX_OUTPUTS]; /* each output's port of its layer */
} run_ctx;

static dla_status layer_fail(const dla_layer *l, const char *fn, dla_status st)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    return dla__nn_fail(st, "%s: layer '%s' (%s): %s", fn, l->name, l->kind->display, msg);
}

/* The dla_function: in = [inputs, learnables, state, fixed]; out = [asked
 * outputs, new state (training, or predict with state)].
 *
 * Each layer runs in a scope of its own, and its result is held by this
 * function, not by a scope, until the last layer reading it has run: an
 * eager predict (the call that records the trace, or any call with
 * acceleration off) then holds the activations at hand instead of all of
 * them. In training the tape holds what the backward needs anyway. */
static dla_status run(void *ctxp, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    run_ctx *ctx = ctxp;
    dla_net *net = ctx->net;
    const char *fn = ctx->training     ? "dla_net_forward"
                     : ctx->with_state ? "dla_net_predict_state"
                                       : "dla_net_predict";
    int base[DLA__PARAM_KIND_COUNT];
    base[0] = net->ninputs;
    for (int k = 1; k < DLA__PARAM_KIND_COUNT; k++)
        base[k] = base[k - 1] + net->tables[k - 1].count;
    int nstate = net->tables[DLA__STATE].count;
    /* Each layer's output ports, DLA__MAX_OUTPUTS apart. */
    const int nact = net->nlayers * DLA__MAX_OUTPUTS;
    dla_tensor **act = dla__nn_calloc((size_t)nact, sizeof *act);
    dla_tensor **news = dla__nn_calloc((size_t)(nstate ? nstate : 1), sizeof *news);
    int *last = dla__nn_malloc(sizeof *last * (size_t)net->nlayers);
    unsigned char *needed = dla__nn_calloc((size_t)net->nlayers, 1);
    if (!act || !news || !last || !needed) {
        dla__nn_free(act);
        dla__nn_free(news);
        dla__nn_free(last);
        dla__nn_free(needed);
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        for (int i = 0; i < nout; i++)
            out[i] = dla__nn_error_tensor();
        return DLA_ERR_OUT_OF_MEMORY;
    }
    /* The layers that run: the outputs asked for, every layer with state
     * when the new state is an output (its rows are the state's), and
     * what they read; the rest are skipped (MATLAB's forward and predict
     * with Outputs compute what those outputs need: an early layer's
     * activation cost the whole network). */
    for (int i = 0; i < ctx->nout; i++)
        needed[ctx->outs[i]] = 1;
    for (int i = 0; ctx->with_state && i < net->nlayers; i++)
        for (int j = 0; j < net->layers[i]->nparams; j++)
            needed[i] |= net->layers[i]->param[j].kind == DLA__STATE;
    for (int k = net->nlayers - 1; k >= 0; k--) {
        int i = net->order[k];
        for (int q = 0; needed[i] && !net->layers[i]->kind->is_input && q < net->layers[i]->nin; q++)
            if (net->src[i][q] >= 0)
                needed[net->src[i][q]] = 1;
    }
    /* last[i]: the step (in run order) after which layer i's result is no
     * longer read; the outputs asked for stay to the end. */
    for (int k = 0; k < net->nlayers; k++) {
        int i = net->order[k];
        last[i] = k;
        if (!needed[i])
            continue;
        for (int q = 0; !net->layers[i]->kind->is_input && q < net->layers[i]->nin; q++)
            if (net->src[i][q] >= 0)
                last[net->src[i][q]] = k;
    }
    for (int i = 0; i < ctx->nout; i++)
        last[ctx->outs[i]] = net->nlayers;
    dla_status st = DLA_OK;
    for (int k = 0; k < net->nlayers && st == DLA_OK; k++) {
        int i = net->order[k];
        if (!needed[i])
            continue;
        dla_layer *l = net->layers[i];
        int nx = l->kind->is_input ? 1 : l->nin;
        dla_tensor *x[64], *p[DLA__MAX_PARAMS];
        for (int q = 0; q < nx; q++) {
            int src = l->kind->is_input ? -1 : net->src[i][q];
            if (src >= 0) {
                x[q] = act[src * DLA__MAX_OUTPUTS + net->src_port[i][q]];
                /* A padding mask port fed by an input layer reads the data
                 * as given, 0 at the padded steps: the layer's output is
                 * normalized ("zscore", "zerocenter"), where the padding
                 * is -Mean/StandardDeviation and a first channel of ones
                 * (docs/networks.md, "Padding masks") is 0 at the data
                 * steps, which hid every data step and kept the padding. */
                const char *port = dla__in_port(l, q);
                if (port && !strcmp(port, "mask") && !l->kind->custom &&
                    net->layers[src]->kind->is_input)
                    for (int j = 0; j < net->ninputs; j++)
                        if (net->inputs[j].layer == src && net->inputs[j].port == -1)
                            x[q] = in[j];
                continue;
            }
            for (int j = 0; j < net->ninputs; j++)
                if (net->inputs[j].layer == i && net->inputs[j].port == (l->kind->is_input ? -1 : q))
                    x[q] = in[j];
        }
        for (int j = 0; j < l->nparams; j++)
            p[j] = in[base[l->param[j].kind] + l->param[j].row];
        dla__call c = {.training = ctx->training, .nx = nx, .x = x, .p = p, .layer = l};
        /* Guarded: a custom layer's callback that ends one scope too many
         * must not close this one (its result) nor the caller's. */
        const int mark = dla__scope_open_guarded(NULL);
        st = l->kind->forward(&l->props, &c);
        if (st == DLA_OK && (!c.y || dla_tensor_status(c.y) != DLA_OK))
            st = c.y ? dla_tensor_status(c.y) : DLA_ERR_STATE;
        for (int q = 1; st == DLA_OK && q < l->nout; q++)
            if (!c.y_more[q - 1] || dla_tensor_status(c.y_more[q - 1]) != DLA_OK)
                st = c.y_more[q - 1] ? dla_tensor_status(c.y_more[q - 1]) : DLA_ERR_STATE;
        if (st == DLA_OK) {
            act[i * DLA__MAX_OUTPUTS] = dla_tensor_retain(c.y);
            for (int q = 1; q < l->nout; q++)
                act[i * DLA__MAX_OUTPUTS + q] = dla_tensor_retain(c.y_more[q - 1]);
            for (int j = 0, nst = 0; ctx->with_state && j < l->nparams; j++) {
                if (l->param[j].kind != DLA__STATE)
                    continue;
                if (c.new_state[nst])
                    news[l->param[j].row] = dla_tensor_retain(c.new_state[nst]);
                nst++;
            }
        } else {
            layer_fail(l, fn, st);
        }
        int imbalance = dla__scope_close_guarded(mark);
        if (imbalance && st == DLA_OK) {
            char why[120];
            /* Only a callback of the user's opens or ends scopes unpaired. */
            st = dla__nn_fail(DLA_ERR_STATE, "%s: layer '%s' (%s): its callback %s", fn,
                              l->name, l->kind->display,
                              dla__scope_imbalance_str(imbalance, why, sizeof why));
        }
        /* The results no later layer reads (every port of a layer). */
        for (int q = 0; q < nx; q++) {
            int src = l->kind->is_input ? -1 : net->src[i][q];
            for (int o = 0; src >= 0 && last[src] == k && o < DLA__MAX_OUTPUTS; o++) {
                dla_tensor_release(act[src * DLA__MAX_OUTPUTS + o]);
                act[src * DLA__MAX_OUTPUTS + o] = NULL;
            }
        }
        for (int o = 0; last[i] == k && o < DLA__MAX_OUTPUTS; o++) {
            dla_tensor_release(act[i * DLA__MAX_OUTPUTS + o]);
            act[i * DLA__MAX_OUTPUTS + o] = NULL;
        }
    }
    /* Handed over to the caller's scope, as results of ops are; state rows
     * no layer changed keep their input. */
    for (int i = 0; i < ctx->nout; i++)
        out[i] = st == DLA_OK ? dla_scope_adopt(dla_tensor_retain(
                                    act[ctx->outs[i] * DLA__MAX_OUTPUTS + ctx->out_ports[i]]))
                              : dla__nn_error_tensor();
    for (int r = 0; ctx->with_state && r < nstate; r++)
        out[ctx->nout + r] = st != DLA_OK ? dla__nn_error_tensor()
                             : news[r]     ? dla_scope_adopt(dla_tensor_retain(news[r]))
                                           : in[base[DLA__STATE] + r];
    for (int i = ctx->nout + (ctx->with_state ? nstate : 0); st != DLA_OK && i < nout; i++)
        out[i] = dla__nn_error_tensor();
    for (int i = 0; i < nact; i++)
        dla_tensor_release(act[i]);
    for (int r = 0; r < nstate; r++)
        dla_tensor_release(news[r]);
    dla__nn_free(act);
    dla__nn_free(news);
    dla__nn_free(last);
    dla__nn_free(needed);
    return st;
}

static size_t run_key(void *ctxp, void *buf, size_t size)
{
    const run_ctx *ctx = ctxp;
    size_t sig = ctx->net->signature_len;
    /* A worker's share of the batch (trainnet "parallel") is in the trace:
     * its dropout masks are sliced from the whole batch's. */
    const dla__batch_share *bs = dla__batch_share_get();
    const dla__batch_share share = bs && ctx->training ? *bs : (dla__batch_share){0, 0, 0};
    /* The outputs asked for, with their ports: "lstm/hidden" is another
     * function than "lstm/out". */
    size_t need = sig + sizeof(int) * (size_t)(3 + 2 * ctx->nout) + sizeof share;
    if (need <= size) {
        unsigned char *b = buf;
        memcpy(b, ctx->net->signature, sig);
        memcpy(b + sig, &ctx->training, sizeof(int));
        memcpy(b + sig + sizeof(int), &ctx->with_state, sizeof(int));
        memcpy(b + sig + 2 * sizeof(int), &ctx->nout, sizeof(int));
        memcpy(b + sig + 3 * sizeof(int), ctx->outs, sizeof(int) * (size_t)ctx->nout);
        memcpy(b + sig + sizeof(int) * (size_t)(3 + ctx->nout), ctx->out_ports,
               sizeof(int) * (size_t)ctx->nout);
        memcpy(b + sig + sizeof(int) * (size_t)(3 + 2 * ctx->nout), &share, sizeof share);
    }
    return need;
}

dla_accel *dla__net_make_accel(dla_net *net)
{
    dla_accel *af = dla_accelerate(run, &(dla_accel_options){.name = "dla_net", .key = run_key});
    if (af) {
        dla_accel_set_enabled(af, net->accelerate);
        /* The inputs are the caller's data (trainnet's mini-batches, padded
         * to each one's longest sequence) and the function is the
         * network's: the general remedy, to keep them fixed or call the
         * function itself, is none a caller can take. */
        dla__accel_set_miss_advice(af, "The network records a trace for each input size it is "
                                       "given (sequences padded to another length, a smaller "
                                       "last mini-batch): pad to a few lengths (trainnet's "
                                       "SequenceLength as a number), or run its layers without "
                                       "traces: dla_net_set_accelerate(net, 0)");
    }
    return af;
}

static dla_status fail_outputs(int n, dla_tensor **y, dla_status st)
{
    for (int i = 0; y && i < n; i++)
        y[i] = dla__nn_error_tensor();
    return st;
}

/* fn: the public function, which says the mode: forward (training, the
 * new state an output) or predict (inference; the new state an output
 * for dla_net_predict_state only). */
static dla_status run_net(dla_net *net, const char *fn, int nin, dla_tensor *const *x, int nout,
                          dla_tensor **y, dla_tensor **state, const dla_net_forward_options *opts)
{
    const int training = !strcmp(fn, "dla_net_forward");
    const int with_state = training || !strcmp(fn, "dla_net_predict_state");
    if (net && dla__net_check(net, fn) != DLA_OK) { /* freed: read nothing else of it */
        fail_outputs(nout, y, 0);
        return dla_last_status();
    }
    int nstate = net ? net->tables[DLA__STATE].count : 0;
    if (!net || nout < 0 || (nout && !y) || nin < 0 || (nin && !x)) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is invalid", fn,
                     !net ? "net" : (nout < 0 || (nout && !y)) ? "y" : "x");
        fail_outputs(nout, y, 0);
        fail_outputs(state ? nstate : 0, state, 0);
        return DLA_ERR_INVALID_ARGUMENT;
    }
    dla_status st = DLA_OK;
    if (!net->initialized)
        st = dla__nn_fail(DLA_ERR_STATE, "%s: the network is not initialized (dla_net_init)", fn);
    else if (nin != net->ninputs)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d input%s given; the network has %d",
                          fn, nin, nin == 1 ? "" : "s", net->ninputs);
    run_ctx ctx = {net, training, with_state, 0, {0}, {0}};
    if (st == DLA_OK) {
        int want = opts && opts->outputs ? nout : net->noutputs;
        /* Say which count is whose: "1 outputs asked for, room for 2"
         * read as if the caller had asked for one. */
        if (want > MAX_OUTPUTS)
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d outputs; at most %d are given "
                              "in one call (name the ones wanted in opts->outputs)", fn, want,
                              MAX_OUTPUTS);
        else if (want != nout)
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument nout: %d; the network has %d "
                              "output%s (%s%s)", fn, nout, want, want == 1 ? "" : "s",
                              want ? dla_net_output_name(net, 0) : "none",
                              want > 1 ? "..." : "");
        for (int i = 0; st == DLA_OK && i < want; i++) {
            ctx.out_ports[i] = opts && opts->outputs ? 0 : net->output_ports[i];
            ctx.outs[i] = opts && opts->outputs
                              ? dla__net_find_output(net, opts->outputs[i], &ctx.out_ports[i])
                              : net->outputs[i];
            if (ctx.outs[i] < 0)
                st = dla__net_output_unknown(net, opts->outputs[i], fn);
        }
        ctx.nout = want;
    }
    for (int i = 0; st == DLA_OK && i < nin; i++)
        if (!x[i] || dla_tensor_status(x[i]) != DLA_OK)
            st = x[i] ? dla__nn_fail(dla_tensor_status(x[i]), "%s", dla_tensor_error(x[i]))
                      : dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", fn, i + 1);
    if (st != DLA_OK) {
        fail_outputs(nout, y, st);
        fail_outputs(state ? nstate : 0, state, st);
        return st;
    }
    /* The function's inputs: network inputs, then the parameters. */
    int nparams = 0;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        nparams += net->tables[k].count;
    int total_in = nin + nparams, total_out = nout + (with_state ? nstate : 0);
    dla_tensor **in = dla__nn_malloc(sizeof *in * (size_t)total_in);
    dla_tensor **out = dla__nn_calloc((size_t)(total_out ? total_out : 1), sizeof *out);
    if (!in || !out) {
        dla__nn_free(in);
        dla__nn_free(out);
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        fail_outputs(nout, y, 0);
        fail_outputs(state ? nstate : 0, state, 0);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    memcpy(in, x, sizeof *in * (size_t)nin);
    int at = nin;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        dla_tensor *const *given = k == DLA__LEARNABLE && opts ? opts->learnables
                                   : k == DLA__STATE && opts ? opts->state
                                                             : NULL;
        for (int r = 0; r < net->tables[k].count; r++)
            in[at++] = given ? given[r] : net->tables[k].values[r];
    }
    for (int i = nin; st == DLA_OK && i < total_in; i++)
        if (!in[i] || dla_tensor_status(in[i]) != DLA_OK)
            st = dla__nn_fail(in[i] ? dla_tensor_status(in[i]) : DLA_ERR_INVALID_ARGUMENT,
                              "%s: a given learnable or state value (%d) is %s", fn, i - nin + 1,
                              in[i] ? dla_tensor_error(in[i]) : "NULL");
    /* The outputs this call hands over leave a scope of its own; the rest
     * (state not asked for) die with it. */
    dla_scope_begin();
    if (st == DLA_OK)
        st = dla_accel_call(net->accel, &ctx, total_in, in, total_out, out);
    /* Double data into a single network (MATLAB's default class into
     * dlaccel's default) failed deep inside, "layer 'input': dla_sub:
     * arguments a (double) and b (single) differ in type": say which
     * input and what to do. Only on failure: a custom layer may take
     * another dtype and cast it itself. */
    for (int i = 0; st == DLA_ERR_DTYPE && i < nin; i++)
        if (dla_tensor_dtype(x[i]) != dla__net_values_dtype(net)) {
            char msg[1024];
            const char *why = dla_last_error();
            const size_t n = strlen(fn);
            if (!strncmp(why, fn, n) && !strncmp(why + n, ": ", 2))
                why += n + 2; /* "fn: layer ..." once */
            snprintf(msg, sizeof msg, "%s", why);
            dla__nn_fail(st, "%s: input %d is %s but the network is %s: cast the input "
                         "(dla_cast) or the network (dla_net_cast); %s", fn, i + 1,
                         dla_dtype_name(dla_tensor_dtype(x[i])),
                         dla_dtype_name(dla__net_values_dtype(net)), msg);
            break;
        }
    /* Data on another device than the network's failed alike, "layer
     * 'input': dla_sub: arguments a and b are on cpu:0 and opencl:0", of
     * an op the caller never called: say which input and what to do. */
    const dla_tensor *first = st == DLA_ERR_INVALID_ARGUMENT ? dla__net_first_value(net) : NULL;
    for (int i = 0; first && i < nin; i++)
        if (dla_tensor_device(x[i]) != dla_tensor_device(first)) {
            char msg[1024];
            const char *why = dla_last_error();
            const size_t n = strlen(fn);
            if (!strncmp(why, fn, n) && !strncmp(why + n, ": ", 2))
                why += n + 2;
            snprintf(msg, sizeof msg, "%s", why);
            dla__nn_fail(st, "%s: input %d is on %s but the network is on %s: move the input "
                         "(dla_tensor_to_device) or the network (dla_net_to_device); %s", fn,
                         i + 1, dla_device_name(dla_tensor_device(x[i])),
                         dla_device_name(dla_tensor_device(first)), msg);
            break;
        }
    for (int i = 0; i < nout; i++)
        y[i] = st == DLA_OK ? dla_keep(out[i]) : NULL;
    for (int i = 0; state && i < nstate; i++)
        state[i] = st == DLA_OK ? dla_keep(out[nout + i]) : NULL;
    dla_scope_end();
    if (st != DLA_OK) {
        fail_outputs(nout, y, st);
        fail_outputs(state ? nstate : 0, state, st);
    }
    dla__nn_free(in);
    dla__nn_free(out);
    return st;
}

DLA_API dla_status dla_net_forward(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                   dla_tensor **y, dla_tensor **state,
                                   const dla_net_forward_options *opts)
{
    return run_net(net, "dla_net_forward", nin, x, nout, y, state, opts);
}

DLA_API dla_status dla_net_predict(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                   dla_tensor **y, const dla_net_forward_options *opts)
{
    return run_net(net, "dla_net_predict", nin, x, nout, y, NULL, opts);
}

DLA_API dla_status dla_net_predict_state(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                         dla_tensor **y, dla_tensor **state,
                                         const dla_net_forward_options *opts)
{
    return run_net(net, "dla_net_predict_state", nin, x, nout, y, state, opts);
}

DLA_API dla_status dla_net_gradient(dla_net *net, dla_tensor *loss, dla_tensor **grads)
{
    return dla_net_gradient_hooked(net, loss, grads, NULL);
}

/* Input port k of l is a "ref": read for its size only. */
static int by_size(const dla_layer *l, int k)
{
    const char *name = dla__in_port(l, k);
    return name && !strcmp(name, "ref");
}

/* Whether any layer of net has a "ref" input (most have none: then the
 * gradient call allocates nothing for them). */
static int has_ref_input(const dla_net *net)
{
    for (int l = 0; l < net->nlayers; l++)
        for (int k = 0; k < net->layers[l]->nin; k++)
            if (by_size(net->layers[l], k))
                return 1;
    return 0;
}

/* Layers every path of which to the network's outputs enters a crop or
 * resize layer by its "ref" input, which reads ref's size and never its
 * values: their learnables' gradient is zero, but no op on the tape links
 * them to the loss, and dla_gradient refused them ("the loss does not
 * depend on it"), so trainnet could not train such a network (a branch
 * that only sizes a crop). flags[l] is set for them; returns how many
 * there are. */
static int size_only_layers(const dla_net *net, char *flags)
{
    const int n = net->nlayers;
    char *live = dla__nn_calloc((size_t)(n ? n : 1), 1);
    if (!live)
        return 0; /* dla_gradient then names them as before */
    memset(flags, 0, (size_t)n);
    for (int k = 0; k < net->noutputs; k++)
        flags[net->outputs[k]] = live[net->outputs[k]] = 1;
    /* flags: reaches an output; live: reaches one through values. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int k = 0; k < net->nconn; k++) {
            const dla__conn *c = &net->conn[k];
            if (flags[c->dst] && !flags[c->src])
                flags[c->src] = 1, changed = 1;
            if (live[c->dst] && !by_size(net->layers[c->dst], c->port) && !live[c->src])
                live[c->src] = 1, changed = 1;
        }
    }
    int count = 0;
    for (int l = 0; l < n; l++) {
        flags[l] = flags[l] && !live[l];
        count += flags[l];
    }
    dla__nn_free(live);
    return count;
}

/* may_miss[i] for learnable row i of a size-only layer (NULL: none, or
 * no memory: dla_gradient then names them as before). */
static char *size_only_rows(const dla_net *net)
{
    const dla_table *t = &net->tables[DLA__LEARNABLE];
    if (!has_ref_input(net))
        return NULL;
    char *flags = dla__nn_calloc((size_t)(net->nlayers ? net->nlayers : 1), 1);
    char *rows = dla__nn_calloc((size_t)(t->count ? t->count : 1), 1);
    if (!flags || !rows || size_only_layers(net, flags) == 0) {
        dla__nn_free(flags);
        dla__nn_free(rows);
        return NULL;
    }
    for (int i = 0; i < t->count; i++)
        for (int l = 0; l < net->nlayers; l++)
            if (!strcmp(net->layers[l]->name, t->layer[i]))
                rows[i] = flags[l];
    dla__nn_free(flags);
    return rows;
}

DLA_API dla_status dla_net_gradient_hooked(dla_net *net, dla_tensor *loss, dla_tensor **grads,
                                           const dla_gradient_hooks *hooks)
{
    return dla__net_gradient_rows(net, loss, grads, hooks, NULL);
}

dla_status dla__net_gradient_rows(dla_net *net, dla_tensor *loss, dla_tensor **grads,
                                  const dla_gradient_hooks *hooks, const char *skip)
{
    if (net && dla__net_check(net, "dla_net_gradient") != DLA_OK)
        return dla_last_status();
    if (!net || !net->initialized || !grads) {
        dla_status st = dla__nn_fail(!net || !grads ? DLA_ERR_INVALID_ARGUMENT : DLA_ERR_STATE,
                                     "dla_net_gradient: %s", !net ? "argument net is NULL"
                                     : !grads ? "argument grads is NULL"
                                              : "the network is not initialized");
        int n = net ? net->tables[DLA__LEARNABLE].count : 0;
        for (int i = 0; grads && i < n; i++)
            grads[i] = dla__nn_error_tensor();
        return st;
    }
    const dla_table *t = &net->tables[DLA__LEARNABLE];
    char *may_miss = size_only_rows(net);
    /* Rows not asked for are 2 to dla__gradient_may_miss: no sweep goes
     * down to them (a frozen backbone's backward is skipped). Without
     * memory for the flags every row is asked for, as before. */
    if (skip) {
        if (!may_miss)
            may_miss = dla__nn_calloc((size_t)(t->count ? t->count : 1), 1);
        for (int i = 0; may_miss && i < t->count; i++)
            if (skip[i])
                may_miss[i] = 2;
    }
    dla_status st = dla__gradient_may_miss(loss, t->count, t->values, grads, hooks, may_miss);
    dla__nn_free(may_miss);
    /* A loss that reaches some learnables gives the others zeros
     * (MATLAB's dlgradient; an output left out of the loss); one that
     * reaches none fails, and dla_gradient names the first learnable by
     * its place in its list, "argument wrt[4] (2x4 single)", an argument
     * the caller never wrote: name its layer and parameter, and the usual
     * causes. */
    int row = -1, at = 0;
    const char *why = dla_last_error();
    if (st == DLA_ERR_INVALID_ARGUMENT && sscanf(why, "dla_gradient: argument wrt[%d] (%n", &row,
                                                 &at) == 1 &&
        at > 0 && row >= 0 && row < t->count &&
        strstr(why, "the loss does not depend on it, nor on any other")) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", why + at);
        char *close = strchr(msg, ')');
        if (close)
            *close = '\0';
        dla__nn_fail(st, "dla_net_gradient: the loss does not depend on learnable %d, %s/%s (%s), "
                     "nor on any other of the network's learnables: the forward call used "
                     "other values (dla_net_forward_options.learnables: take the gradient "
                     "with respect to those with dla_gradient), or the loss was not computed "
                     "from this network's outputs", row + 1, t->layer[row], t->param[row], msg);
    }
    return st;
}

DLA_API dla_table *dla_net_gradients(dla_net *net, dla_tensor *loss)
{
    int n = net ? net->tables[DLA__LEARNABLE].count : 0;
    dla_tensor **g = dla__nn_calloc((size_t)(n ? n : 1), sizeof *g);
    if (!g) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_gradients: out of memory");
        return NULL;
    }
    dla_table *t = NULL;
    dla_scope_begin();
    if (dla_net_gradient(net, loss, g) == DLA_OK)
        t = dla_table_like(&net->tables[DLA__LEARNABLE], g);
    dla_scope_end();
    dla__nn_free(g);
    return t;
}

DLA_API void dla_net_set_accelerate(dla_net *net, int enabled)
{
    if (!net)
        return;
    net->accelerate = enabled != 0;
    if (net->accel)
        dla_accel_set_enabled(net->accel, net->accelerate);
}

DLA_API int dla_net_accelerate_enabled(const dla_net *net) { return net && net->accelerate; }

DLA_API dla_accel *dla_net_accelerator(dla_net *net) { return net ? net->accel : NULL; }

DLA_API size_t dla_net_key(void *netp, void *buf, size_t size)
{
    const dla_net *net = netp;
    size_t n = net && net->signature ? net->signature_len : 0;
    if (n && n <= size)
        memcpy(buf, net->signature, n);
    return n;
}

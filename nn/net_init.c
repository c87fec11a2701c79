/*
 * net_init.c - initializing a network (MATLAB's initialize): the graph's
 * inputs, outputs and topological order, then each layer in that order
 * makes its parameters for the shapes that reach it and runs once in
 * inference mode on zeros (one observation of an input layer's size, or
 * an example's whole dims for an input given by example), which gives
 * the next layer's shapes and catches a size a layer cannot take, naming
 * it.
 */
#include "nn/nn.h"

#include "core/handle.h" /* DLA__HANDLE_TABLE (docs/checks.md) */
#include "core/scope.h"

#include <stdio.h>
#include <string.h>

struct dla__param_sink {
    dla_net *net;
    dla_layer *layer;
    dla_dtype dtype;
    dla__param_lookup lookup;
    void *ctx;
    /* Values from before: a learnable is kept (refused when its dims no
     * longer fit), a state kept where its dims still fit. */
    dla_table *old;
    int batched;    /* the parameter being added takes any number of columns */
};

int dla__param_loading(const dla__param_sink *sink) { return sink->lookup != NULL; }
const dla_table *dla__param_sink_table(const dla__param_sink *sink, dla__param_kind kind)
{
    return &sink->net->tables[kind];
}
dla_dtype dla__param_dtype(const dla__param_sink *sink) { return sink->dtype; }

/* A negative entry of dims matches any size (a batched parameter's
 * columns). */
static int same_dims(const dla_tensor *t, int ndims, const int64_t *dims)
{
    int n = dla_tensor_ndims(t) > ndims ? dla_tensor_ndims(t) : ndims;
    for (int d = 1; d <= n; d++)
        if (!(d <= ndims && dims[d - 1] < 0) && dla_tensor_dim(t, d) != (d <= ndims ? dims[d - 1] : 1))
            return 0;
    return 1;
}

dla_status dla__param_add(dla__param_sink *sink, const char *name, dla__param_kind kind,
                          dla_tensor *value, int ndims, const int64_t *dims, double l2_factor)
{
    dla_layer *l = sink->layer;
    if (l->nparams == (int)(sizeof l->param / sizeof l->param[0]))
        return dla__nn_fail(DLA_ERR_STATE, "layer '%s': too many parameters", l->name);
    dla_tensor *v = value;
    double lr_factor = 1;
    /* A batched parameter's kept or saved value may have any number of
     * columns: the dims it is matched against say so with -1. */
    int64_t want[DLA_MAX_DIMS];
    if (ndims < 2 || ndims > DLA_MAX_DIMS)
        sink->batched = 0;
    for (int d = 0; d < ndims && d < DLA_MAX_DIMS; d++)
        want[d] = d == 1 && sink->batched ? -1 : dims[d];
    if (sink->batched)
        dims = want;
    if (sink->lookup) {
        v = sink->lookup(sink->ctx, kind, l->name, name, ndims, dims);
        if (!v)
            return dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_IO;
    } else {
        int r = dla_table_find(&sink->old[kind], l->name, name);
        dla_tensor *o = r >= 0 ? sink->old[kind].values[r] : NULL;
        /* A kept value of the other float dtype is converted, never
         * replaced: the examples' dtype is the network's, and a single
         * network grown by a layer and initialized with double examples
         * (trainnet's double predictors do that) got fresh random values
         * for every layer it had, its trained weights gone in silence. */
        if (o && same_dims(o, ndims, dims))
            v = dla_tensor_dtype(o) == sink->dtype ? o : dla_cast(o, sink->dtype);
        /* A learnable the layer has, of other dims than its input now
         * makes (examples of another size after an edit): refused, as
         * MATLAB's initialize refuses a set Weights that does not fit.
         * Made afresh, the trained (even frozen) values were gone in
         * silence, the layer kept its factors, and training went on from
         * random weights. A state is made afresh: its dims follow the
         * batch (a recurrent layer's) and it has an initial value. */
        else if (o && kind == DLA__LEARNABLE) {
            char a[96], b[96];
            int64_t od[DLA_MAX_DIMS];
            dla__dims_text(dla_tensor_dims(o, od), od, a, sizeof a);
            dla__dims_text(ndims, dims, b, sizeof b);
            return dla__nn_fail(DLA_ERR_SHAPE, "learnable %s is %s, but the layer's input now "
                                "makes it %s: give examples of the size the network was "
                                "initialized for, or replace the layer (dla_net_replace_layer) "
                                "or remove it to start it afresh", name, a, b);
        }
        /* The factors are the layer's settings (MATLAB's
         * WeightLearnRateFactor...), not the value's: they stay whatever
         * the dims now are. A copy or a trainnet run that re-added them as
         * the defaults would train a frozen layer. */
        if (r >= 0) {
            lr_factor = sink->old[kind].lr_factor[r];
            l2_factor = sink->old[kind].l2_factor[r];
        }
    }
    if (!v || dla_tensor_status(v) != DLA_OK)
        return dla__nn_fail(v ? dla_tensor_status(v) : DLA_ERR_STATE, "parameter %s: %s", name,
                            v ? dla_tensor_error(v) : "no value");
    if (!same_dims(v, ndims, dims)) {
        char a[96], b[96];
        int64_t vd[DLA_MAX_DIMS];
        dla__dims_text(dla_tensor_dims(v, vd), vd, a, sizeof a);
        dla__dims_text(ndims, dims, b, sizeof b);
        return dla__nn_fail(DLA_ERR_SHAPE, "parameter %s is %s; the layer needs %s", name, a, b);
    }
    int row = dla__table_add(&sink->net->tables[kind], l->name, name, v, lr_factor, l2_factor);
    if (row < 0)
        return DLA_ERR_OUT_OF_MEMORY;
    l->param[l->nparams].kind = kind;
    l->param[l->nparams].row = row;
    l->nparams++;
    return DLA_OK;
}

dla_status dla__param_add_batched(dla__param_sink *sink, const char *name, dla__param_kind kind,
                                  dla_tensor *value, int ndims, const int64_t *dims, double l2_factor)
{
    sink->batched = 1;
    dla_status st = dla__param_add(sink, name, kind, value, ndims, dims, l2_factor);
    sink->batched = 0;
    return st;
}

/* Prefixes the thread's message with the function and the layer. */
static dla_status layer_fail(const char *fn, const dla_layer *l, dla_status st)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    return dla__nn_fail(st, "%s: layer '%s' (%s): %s", fn, l->name, l->kind->display, msg);
}

/* A layer's callback (a custom layer's initialize or predict) that ended
 * more scopes than it began, or left one open. */
static dla_status scope_fail(const char *which, int mark)
{
    char why[120];
    return dla__nn_fail(DLA_ERR_STATE, "its %s %s", which,
                        dla__scope_imbalance_str(dla__scope_guarded_imbalance(mark), why,
                                                 sizeof why));
}

/* A trial run that failed on sequences as short as a sequence input
 * layer's MinLength (dla_conv's "a filter spanning 3 elements does not
 * fit in 0 + 1 + 0", a pooling window longer than the steps) said nothing
 * of the option that sets that length: the hint names it. */
static dla_status min_length_fail(const dla_net *net, const char *fn, const dla_layer *l,
                                  int nx, const dla__shape *in, dla_status st)
{
    st = layer_fail(fn, l, st);
    /* Only the layers that slide a window along "T". */
    if (st != DLA_ERR_SHAPE || (l->kind != &dla__kind_conv1d && l->kind != &dla__kind_maxpool1d &&
                                l->kind != &dla__kind_avgpool1d))
        return st;
    for (int k = 0; k < net->ninputs; k++) {
        const dla_layer *s = net->layers[net->inputs[k].layer];
        if (s->kind != &dla__kind_sequence_input)
            continue;
        for (int p = 0; p < nx; p++)
            if (!dla__shape_count(&in[p], 'S') && dla__shape_dim(&in[p], 'T') == s->props.dim) {
                char msg[1536];
                snprintf(msg, sizeof msg, "%s", dla_last_error());
                return dla__nn_fail(st, "%s (initialization tries sequences of MinLength %lld "
                                    "step%s from '%s': set dla_sequence_input_options.min_length "
                                    "to the fewest steps the network takes)", msg,
                                    (long long)s->props.dim, s->props.dim == 1 ? "" : "s",
                                    s->name);
            }
    }
    return st;
}

/* A layer not done whose inputs are not all done has a source not done:
 * the first such source. */
static int pending_source(const dla_net *net, const int *done, int i)
{
    for (int p = 0; p < net->layers[i]->nin; p++)
        if (net->src[i][p] >= 0 && !done[net->src[i][p]])
            return net->src[i][p];
    return i; /* not reached: i would have been ready */
}

/* The error for a graph with a cycle, naming the layers on one in the
 * order the data flows ("add -> relu -> add"). It named the first layer
 * left over, which may only read from the cycle: a layer fed by one had
 * the cycle blamed on it. Stepping back from a pending layer to a
 * pending source nlayers times lands on a cycle. */
static dla_status cycle_fail(const dla_net *net, const int *done, const char *fn)
{
    int i = 0;
    while (done[i])
        i++;
    for (int k = 0; k < net->nlayers; k++)
        i = pending_source(net, done, i);
    char path[1024] = "";
    size_t at = 0;
    int len = 0;
    for (int j = i; len == 0 || j != i; j = pending_source(net, done, j))
        len++;
    /* Backwards from i are its sources: written from the end. */
    int *cyc = dla__nn_calloc((size_t)len + 1, sizeof *cyc);
    if (!cyc)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the connections form a cycle through "
                            "layer '%s'", fn, net->layers[i]->name);
    cyc[len] = i;
    for (int k = len - 1, j = i; k >= 0; k--)
        cyc[k] = j = pending_source(net, done, j);
    for (int k = 0; k <= len && at < sizeof path; k++) {
        int n = snprintf(path + at, sizeof path - at, "%s'%s'", k ? " -> " : "",
                         net->layers[cyc[k]]->name);
        at += n > 0 ? (size_t)n : 0;
    }
    dla__nn_free(cyc);
    return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the connections form a cycle through "
                        "layer '%s': %s%s", fn, net->layers[i]->name, path,
                        at >= sizeof path ? "..." : "");
}

/* Sources of every port, the inputs and the outputs. */
static dla_status wire(dla_net *net, const char *fn)
{
    int n = net->nlayers;
    net->src = dla__nn_calloc((size_t)n, sizeof *net->src);
    net->src_port = dla__nn_calloc((size_t)n, sizeof *net->src_port);
    if (!net->src || !net->src_port)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    int nin = 0, maxout = 0;
    for (int i = 0; i < n; i++) {
        dla_layer *l = net->layers[i];
        net->src[i] = dla__nn_calloc((size_t)(l->nin ? l->nin : 1), sizeof **net->src);
        net->src_port[i] = dla__nn_calloc((size_t)(l->nin ? l->nin : 1), sizeof **net->src_port);
        if (!net->src[i] || !net->src_port[i])
            return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        for (int p = 0; p < l->nin; p++)
            net->src[i][p] = -1;
        nin += l->kind->is_input;
        maxout += l->nout;
    }
    for (int k = 0; k < net->nconn; k++) {
        net->src[net->conn[k].dst][net->conn[k].port] = net->conn[k].src;
        net->src_port[net->conn[k].dst][net->conn[k].port] = net->conn[k].sport;
    }
    for (int i = 0; i < n; i++)
        for (int p = 0; p < net->layers[i]->nin; p++)
            nin += net->src[i][p] < 0;
    net->inputs = dla__nn_calloc((size_t)(nin ? nin : 1), sizeof *net->inputs);
    net->input_names = dla__nn_calloc((size_t)(nin ? nin : 1), sizeof *net->input_names);
    net->input_shapes = dla__nn_calloc((size_t)(nin ? nin : 1), sizeof *net->input_shapes);
    net->outputs = dla__nn_calloc((size_t)maxout, sizeof *net->outputs);
    net->output_ports = dla__nn_calloc((size_t)maxout, sizeof *net->output_ports);
    net->output_names = dla__nn_calloc((size_t)maxout, sizeof *net->output_names);
    net->order = dla__nn_calloc((size_t)n, sizeof *net->order);
    if (!net->inputs || !net->input_names || !net->input_shapes || !net->outputs ||
        !net->output_ports || !net->output_names || !net->order)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        dla_layer *l = net->layers[i];
        for (int p = -1; p < l->nin; p++) {
            if (p < 0 ? !l->kind->is_input : net->src[i][p] >= 0)
                continue;
            net->inputs[net->ninputs].layer = i;
            net->inputs[net->ninputs].port = p;
            /* Allocated to its length: a name has no length limit. */
            if (!(net->input_names[net->ninputs++] =
                      dla__net_port_name(l, p)))
                return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
        /* Each output port nothing reads (HasStateOutputs: "lstm/hidden"). */
        for (int q = 0; q < l->nout; q++) {
            int read = 0;
            for (int k = 0; k < net->nconn && !read; k++)
                read = net->conn[k].src == i && net->conn[k].sport == q;
            if (read)
                continue;
            net->outputs[net->noutputs] = i;
            net->output_ports[net->noutputs] = q;
            if (!(net->output_names[net->noutputs++] = dla__net_output_port_name(l, q)))
                return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
    }
    if (!net->ninputs)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the network has no input", fn);
    /* Kahn's order, taking the earliest added layer that is ready. */
    int *done = dla__nn_calloc((size_t)n, sizeof *done);
    if (!done)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int k = 0; k < n; k++) {
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++) {
            if (done[i])
                continue;
            int ready = 1;
            for (int p = 0; p < net->layers[i]->nin && ready; p++)
                ready = net->src[i][p] < 0 || done[net->src[i][p]];
            if (ready)
                pick = i;
        }
        if (pick < 0) {
            dla_status st = cycle_fail(net, done, fn);
            dla__nn_free(done);
            return st;
        }
        done[pick] = 1;
        net->order[k] = pick;
    }
    dla__nn_free(done);
    return DLA_OK;
}

/* The input index that feeds (layer, port); -1 when a layer does. */
static int input_of(const dla_net *net, int layer, int port)
{
    for (int k = 0; k < net->ninputs; k++)
        if (net->inputs[k].layer == layer && net->inputs[k].port == port)
            return k;
    return -1;
}

static dla_status init_layers(dla_net *net, int nexamples, dla_tensor *const *examples,
                              dla__param_sink *sink, const char *fn)
{
    /* The guarded scope dla__net_init_with opened (dla_scope_depth counts
     * it), which the layers' callbacks must leave as they found it. */
    const int mark = dla_scope_depth();
    /* Each layer's output ports, DLA__MAX_OUTPUTS apart. */
    dla_tensor **act = dla__nn_calloc((size_t)net->nlayers * DLA__MAX_OUTPUTS, sizeof *act);
    dla_tensor **xin = dla__nn_calloc((size_t)net->ninputs, sizeof *xin);
    if (!act || !xin) {
        dla__nn_free(act);
        dla__nn_free(xin);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    dla_status st = DLA_OK;
    for (int k = 0; k < net->ninputs && st == DLA_OK; k++) {
        dla__shape *s = &net->input_shapes[k];
        const dla_layer *l = net->layers[net->inputs[k].layer];
        if (net->inputs[k].port < 0)
            l->kind->example(&l->props, s);
        else if (k < nexamples)
            dla__shape_of(examples[k], s);
        if (net->inputs[k].port >= 0 && k >= nexamples) {
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: input '%s' is not an input layer; "
                              "pass an example tensor for each of the %d input%s", fn,
                              net->input_names[k], net->ninputs, net->ninputs == 1 ? "" : "s");
            break;
        }
        xin[k] = dla_zeros(sink->dtype, s->format, s->ndims, s->dims);
        if (dla_tensor_status(xin[k]) != DLA_OK)
            st = dla__nn_fail(dla_tensor_status(xin[k]), "%s: input '%s': %s", fn,
                              net->input_names[k], dla_tensor_error(xin[k]));
    }
    for (int k = 0; k < net->nlayers && st == DLA_OK; k++) {
        int i = net->order[k];
        dla_layer *l = net->layers[i];
        dla_tensor *x[64];
        dla__shape in[64];
        int nx = l->kind->is_input ? 1 : l->nin;
        for (int p = 0; p < nx; p++) {
            int src = l->kind->is_input ? -1 : net->src[i][p];
            x[p] = src >= 0 ? act[src * DLA__MAX_OUTPUTS + net->src_port[i][p]]
                            : xin[input_of(net, i, l->kind->is_input ? -1 : p)];
            dla__shape_of(x[p], &in[p]);
        }
        sink->layer = l;
        l->nparams = 0;
        st = l->kind->init(l, l->kind->is_input ? 0 : nx, in, sink);
        if (st == DLA_OK && dla__scope_guarded_imbalance(mark))
            st = scope_fail("initialize", mark);
        if (st != DLA_OK) {
            st = layer_fail(fn, l, st);
            break;
        }
        /* A mask port fed by a network input beside data from a layer: the
         * mask's example has the data's own observations and steps, the
         * input layer's trial one observation of MinLength steps, so the
         * trial takes a mask of the data's dims (init checked the format).
         * An example of 1 x 32 x 50 was refused as not fitting "in" of
         * 3 x 1 x 1, dims the caller never gave. */
        const char *last = nx > 1 ? dla__in_port(l, nx - 1) : NULL;
        const int mp = nx - 1, dp = l->kind->mask_of;
        if (last && !strcmp(last, "mask") && net->src[i][mp] < 0 && net->src[i][dp] >= 0) {
            int64_t dims[DLA_MAX_DIMS];
            for (int d = 0; d < in[dp].ndims; d++)
                dims[d] = in[dp].format[d] == 'C' ? dla__shape_dim(&in[mp], 'C') : in[dp].dims[d];
            x[mp] = dla_zeros(dla_tensor_dtype(x[mp]), in[dp].format, in[dp].ndims, dims);
        }
        /* State inputs (HasStateInputs) fed by network inputs beside data
         * from a layer alike: their examples have the data's observations
         * (H x N), the input layer's trial one, so the trial takes each as
         * H x 1 (init checked the format and channels). The examples of
         * the data itself, 3 x 8 "CB" for eight sequences, were refused as
         * not fitting "the input's 1 observations". */
        for (int q = 1; l->kind->state_ports && l->props.state_io[0] && q < nx; q++)
            if (net->src[i][q] < 0 && net->src[i][0] >= 0)
                x[q] = dla_zeros(dla_tensor_dtype(x[q]), "CB",
                                 DLA_DIMS(dla__shape_dim(&in[q], 'C'), 1));
        dla_tensor *p[DLA__MAX_PARAMS];
        for (int j = 0, k = 0; j < l->nparams; j++) {
            p[j] = net->tables[l->param[j].kind].values[l->param[j].row];
            /* The trial run's batch is not the last call's: a state kept
             * from a batch of N (an LSTM's H x N) would not fit it, so
             * the run takes the initial state; the table keeps the kept
             * one. */
            if (l->param[j].kind == DLA__STATE && l->kind->initial_state)
                p[j] = l->kind->initial_state(&l->props, k++, p[j]);
        }
        dla__call c = {.training = 0, .nx = nx, .x = x, .p = p, .layer = l};
        st = l->kind->forward(&l->props, &c);
        if (st == DLA_OK && dla__scope_guarded_imbalance(mark)) {
            st = layer_fail(fn, l, scope_fail("predict", mark));
            break;
        }
        if (st == DLA_OK && (!c.y || dla_tensor_status(c.y) != DLA_OK))
            st = c.y ? dla_tensor_status(c.y) : DLA_ERR_STATE;
        if (st != DLA_OK) {
            st = min_length_fail(net, fn, l, nx, in, st);
            break;
        }
        act[i * DLA__MAX_OUTPUTS] = c.y;
        dla__shape_of(c.y, &l->out);
        for (int q = 1; q < l->nout; q++) {
            dla_tensor *y = c.y_more[q - 1];
            st = y ? dla_tensor_status(y) : DLA_ERR_STATE;
            if (st != DLA_OK) {
                st = layer_fail(fn, l, st);
                break;
            }
            act[i * DLA__MAX_OUTPUTS + q] = y;
            dla__shape_of(y, &l->out_more[q - 1]);
        }
    }
    dla__nn_free(act);
    dla__nn_free(xin);
    return st;
}

/* An example given for an input layer's input must be what the layer
 * takes (any observations and steps): the layer sizes the network, so an
 * example of other channels or spatial sizes was ignored in silence, the
 * network built for sizes the caller had not given. */
static dla_status input_layer_example(const dla_net *net, int k, const dla_tensor *example,
                                      const char *fn)
{
    const dla_layer *l = net->layers[net->inputs[k].layer];
    dla__shape want, got;
    l->kind->example(&l->props, &want);
    dla__shape_of(example, &got);
    int same = !strcmp(want.format, got.format);
    int n = want.ndims > got.ndims ? want.ndims : got.ndims;
    for (int d = 0; same && d < n; d++) {
        char c = d < want.ndims ? want.format[d] : d < got.ndims ? got.format[d] : '\0';
        if (c != 'B' && c != 'T')
            same = (d < want.ndims ? want.dims[d] : 1) == (d < got.ndims ? got.dims[d] : 1);
    }
    if (same)
        return DLA_OK;
    char a[160], b[160];
    dla__shape_str(&got, a, sizeof a);
    dla__shape_str(&want, b, sizeof b);
    return dla__nn_fail(DLA_ERR_SHAPE, "%s: example %d is %s \"%s\", but input '%s' is a %s "
                        "layer, which takes %s \"%s\" (any observations%s); its example may be "
                        "NULL", fn, k + 1, a, got.format, l->name, l->kind->display, b,
                        want.format, strchr(want.format, 'T') ? " and steps" : "");
}

/* A built-in layer's "mask" port that reads, through other layers, the
 * output of an input layer with a Normalization: the mask is then
 * computed from normalized data, where the padding's 0 has become
 * -Mean/StandardDeviation and a first channel of ones 0 (docs/networks.md,
 * "Padding masks"), so it hides the data steps and keeps the padded ones.
 * An input layer connected to the port directly gives it the data as
 * given (net_run.c); through a layer (a pooling that takes the mask to
 * the steps of a downsampled map) there is no such data to give, and the
 * network is refused rather than masked wrongly.
 *
 * One pass in the topological order (wire's) gives each layer the first
 * normalizing input layer whose values it reads (by ports other than
 * "ref"): linear in the layers and connections, however many mask ports
 * there are. Until 2026-11-30 each such port walked up the network until
 * nothing changed, quadratic in the layers (a chain of 10,000 took 0.33 s
 * per port in dla_net_init, more than the rest of it). */
static int is_mask_port_through_a_layer(const dla_net *net, int i, int q)
{
    const dla_layer *l = net->layers[i];
    const char *port = dla__in_port(l, q);
    const int src = net->src[i][q];
    return !l->kind->is_input && !l->kind->custom && port && !strcmp(port, "mask") && src >= 0 &&
           !net->layers[src]->kind->is_input;
}

static dla_status mask_through_normalization(const dla_net *net, const char *fn)
{
    const int n = net->nlayers;
    int any = 0;
    for (int i = 0; i < n && !any; i++)
        for (int q = 0; q < net->layers[i]->nin && !any; q++)
            any = is_mask_port_through_a_layer(net, i, q);
    if (!any)
        return DLA_OK;
    /* from[k]: the lowest-numbered normalizing input layer k reads, -1
     * none. */
    int *from = dla__nn_calloc((size_t)n, sizeof *from);
    if (!from)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int o = 0; o < n; o++) {
        const int k = net->order[o];
        const dla_layer *d = net->layers[k];
        from[k] = -1;
        if (d->kind->is_input) {
            if (!d->kind->custom && strcmp(d->props.option, "none"))
                from[k] = k;
            continue;
        }
        for (int p = 0; p < d->nin; p++) {
            const char *name = dla__in_port(d, p);
            const int s = net->src[k][p];
            if (s >= 0 && !(name && !strcmp(name, "ref")) && from[s] >= 0 &&
                (from[k] < 0 || from[s] < from[k]))
                from[k] = from[s];
        }
    }
    dla_status st = DLA_OK;
    for (int i = 0; st == DLA_OK && i < n; i++) {
        const dla_layer *l = net->layers[i];
        for (int q = 0; st == DLA_OK && q < l->nin; q++) {
            if (!is_mask_port_through_a_layer(net, i, q))
                continue;
            const int src = net->src[i][q];
            if (from[src] < 0)
                continue;
            const dla_layer *in = net->layers[from[src]];
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: the padding mask input \"%s/mask\" reads input layer "
                              "\"%s\" through layer \"%s\", after its Normalization "
                              "\"%s\", which moves the padding's 0 (a mask of ones becomes "
                              "0 at the data steps): connect \"%s\" to \"%s/mask\" "
                              "directly (a mask port fed by an input layer reads the data "
                              "as given), or give \"%s\" Normalization \"none\" and "
                              "normalize the data before padding it (docs/networks.md, "
                              "\"Padding masks\")",
                              fn, l->name, in->name, net->layers[src]->name, in->props.option,
                              in->name, l->name, in->name);
        }
    }
    dla__nn_free(from);
    return st;
}

dla_status dla__net_init_with(dla_net *net, int nexamples, dla_tensor *const *examples,
                              dla__param_lookup lookup, void *ctx, dla_dtype dtype)
{
    static const char fn[] = "dla_net_init";
    if (net->initialized)
        return DLA_OK;
    if (!net->nlayers)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the network has no layers", fn);
    dla__net_uninit(net);
    dla_status st = wire(net, fn);
    if (st == DLA_OK)
        st = mask_through_normalization(net, fn);
    if (st == DLA_OK && nexamples && nexamples != net->ninputs)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d example tensor%s for %d input%s",
                          fn, nexamples, nexamples == 1 ? "" : "s", net->ninputs,
                          net->ninputs == 1 ? "" : "s");
    for (int k = 0; st == DLA_OK && k < nexamples; k++) {
        /* An input layer's input takes the layer's size: its example may
         * be NULL, as the whole list may for a network of input layers
         * (one with a free input too needs the list, and refused it). */
        if (!examples[k] && net->inputs[k].port < 0)
            continue;
        dla_status es = examples[k] ? dla_tensor_status(examples[k]) : DLA_ERR_INVALID_ARGUMENT;
        if (es != DLA_OK)
            st = dla__nn_fail(es, "%s: example %d: %s", fn, k + 1,
                              examples[k] ? dla_tensor_error(examples[k]) : "NULL");
        else if (dla_tensor_dtype(examples[k]) != DLA_F32 && dla_tensor_dtype(examples[k]) != DLA_F64)
            st = dla__nn_fail(DLA_ERR_DTYPE, "%s: example %d is %s; networks are single or double",
                              fn, k + 1, dla_dtype_name(dla_tensor_dtype(examples[k])));
        else if (net->inputs[k].port < 0)
            st = input_layer_example(net, k, examples[k], fn);
    }
    if (st != DLA_OK) {
        dla__net_uninit(net);
        return st;
    }
    for (int k = 0; k < nexamples; k++)
        if (examples[k]) {
            dtype = dla_tensor_dtype(examples[k]);
            break;
        }
    /* The old values wait in the sink; the tables fill anew in layer order. */
    dla_table old[DLA__PARAM_KIND_COUNT];
    memcpy(old, net->tables, sizeof old);
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        memset(&net->tables[k], 0, sizeof net->tables[k]);
        net->tables[k].magic = DLA__HANDLE_TABLE;
        net->tables[k].owned_by_net = 1;
    }
    dla__param_sink sink = {net, NULL, dtype, lookup, ctx, old, 0};
    /* On the device the kept values live on, whatever device is current:
     * a network moved with dla_net_to_device and grown with layers ran its
     * trial on zeros of the current device against its own weights, and
     * failed; its new parameters go with the old ones. */
    dla_device *prev = dla_device_current(), *home = NULL;
    for (int k = 0; !home && k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; !home && r < old[k].count; r++)
            if (old[k].values[r] && dla_tensor_status(old[k].values[r]) == DLA_OK)
                home = dla_tensor_device(old[k].values[r]);
    if (home && home != prev)
        dla_device_set_current(home);
    /* Guarded: a custom layer's initialize or predict that ends one scope
     * too many must not close this one (the trial's activations) nor the
     * caller's; init_layers names the layer. */
    const int mark = dla__scope_open_guarded(NULL);
    st = init_layers(net, nexamples, examples, &sink, fn);
    dla__scope_close_guarded(mark);
    if (home && home != prev)
        dla_device_set_current(prev);
    dla_table *keep = st == DLA_OK ? old : net->tables;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        keep[k].owned_by_net = 0;
        dla__table_clear(&keep[k]);
        keep[k].owned_by_net = 1;
    }
    if (st != DLA_OK) {
        memcpy(net->tables, old, sizeof old);
        dla__net_uninit(net);
        return st;
    }
    net->dtype = dtype;
    net->signature = dla__net_architecture(net, 1, &net->signature_len);
    if (!net->signature)
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot describe the architecture", fn);
    if (st == DLA_OK && !net->accel) {
        net->accel = dla__net_make_accel(net);
        if (!net->accel)
            st = dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_OUT_OF_MEMORY;
    }
    if (st != DLA_OK) {
        dla__net_uninit(net);
        return st;
    }
    net->initialized = 1;
    return DLA_OK;
}

DLA_API dla_status dla_net_init(dla_net *net, int nexamples, dla_tensor *const *examples)
{
    if (!net || nexamples < 0 || (nexamples && !examples))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_init: argument %s is invalid",
                            net ? "examples" : "net");
    return dla__net_init_with(net, nexamples, examples, NULL, NULL, net->dtype);
}

/*
 * net.c - the layer graph of a dla_net: adding layers (with MATLAB's
 * numbered default names), connecting and disconnecting them by name, and
 * the queries on layers, inputs, outputs and connections. Changing the
 * graph makes the network uninitialized; nn/net_init.c initializes it.
 */
#include "nn/nn.h"

#include "core/handle.h" /* the handle checks, shared with the core (docs/checks.md) */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const dla__param_kind_names[DLA__PARAM_KIND_COUNT] = {"learnables", "state", "fixed"};

int dla__net_find(const dla_net *net, const char *name)
{
    for (int i = 0; net && name && i < net->nlayers; i++)
        if (!strcmp(net->layers[i]->name, name))
            return i;
    return -1;
}

/* The layer named by the n characters at name (a name with "/in2" after
 * it); -1 when none. No copy into a buffer: a name has no length limit. */
static int find_n(const dla_net *net, const char *name, size_t n)
{
    for (int i = 0; i < net->nlayers; i++)
        if (strlen(net->layers[i]->name) == n && !strncmp(net->layers[i]->name, name, n))
            return i;
    return -1;
}

int dla__net_find_output(const dla_net *net, const char *name, int *port)
{
    int i = dla__net_find(net, name), p = 0;
    const char *slash = name && i < 0 ? strrchr(name, '/') : NULL;
    if (slash) {
        i = find_n(net, name, (size_t)(slash - name));
        p = -1;
        for (int k = 0; i >= 0 && k < net->layers[i]->nout; k++)
            if (!strcmp(slash + 1, dla__out_port(net->layers[i], k)))
                p = k;
        if (p < 0)
            i = -1;
    }
    if (port)
        *port = i < 0 ? 0 : p;
    return i;
}

dla_status dla__net_output_unknown(const dla_net *net, const char *name, const char *fn)
{
    const char *slash = name ? strrchr(name, '/') : NULL;
    int i = slash ? find_n(net, name, (size_t)(slash - name)) : -1;
    if (i < 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no layer is named '%.200s'", fn,
                            name ? name : "(null)");
    const dla_layer *l = net->layers[i];
    if (l->nout < 2)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no output is named '%.200s': layer "
                            "'%.200s' (%s) has one output, named '%.200s'", fn, name, l->name,
                            l->kind->display, l->name);
    char list[256] = "";
    size_t len = 0;
    for (int k = 0; k < l->nout && len < sizeof list; k++) {
        int w = snprintf(list + len, sizeof list - len, "%s\"%.100s/%s\"", k ? ", " : "",
                         l->name, dla__out_port(l, k));
        len += w > 0 ? (size_t)w : 0;
    }
    return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no output is named '%.200s': layer "
                        "'%.200s' (%s) has outputs %s", fn, name, l->name, l->kind->display, list);
}

char *dla__net_output_port_name(const dla_layer *l, int port)
{
    size_t n = strlen(l->name) + 16;
    char *s = dla__nn_malloc(n);
    if (!s)
        return NULL;
    /* MATLAB names a layer's one output by the layer alone, and each of
     * several by "layer/port". */
    if (l->nout > 1)
        snprintf(s, n, "%s/%s", l->name, dla__out_port(l, port));
    else
        snprintf(s, n, "%s", l->name);
    return s;
}

const char *dla__in_port(const dla_layer *l, int k)
{
    static const char *const mask[] = {"in", "mask"}, *const ref[] = {"in", "ref"};
    if (l->nin < 2 || k < 0 || k >= l->nin)
        return NULL;
    if (l->kind->in_names)
        return l->kind->in_names[k];
    if (l->kind->ref_port)
        return ref[k];
    if (l->kind->mask_port)
        return mask[k];
    return l->kind->state_ports ? dla__state_in_names[k] : NULL;
}

const char *dla__out_port(const dla_layer *l, int k)
{
    if (k < 0 || k >= l->nout)
        return NULL;
    return dla__state_out_names[k];
}

/* "\"in\", \"hidden\" and \"cell\"": the n port names of l (inputs or
 * outputs) for a message. */
static void port_list(const dla_layer *l, int outputs, int n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && len < size; k++) {
        const char *p = outputs ? dla__out_port(l, k) : dla__in_port(l, k);
        int w = snprintf(buf + len, size - len, "%s\"%s\"", !k ? "" : k == n - 1 ? " and " : ", ",
                         p ? p : "?");
        len += w > 0 ? (size_t)w : 0;
    }
}

char *dla__net_port_name(const dla_layer *l, int port)
{
    size_t n = strlen(l->name) + 16;
    char *s = dla__nn_malloc(n);
    if (!s)
        return NULL;
    if (port >= 0 && dla__in_port(l, port))
        snprintf(s, n, "%s/%s", l->name, dla__in_port(l, port));
    else if (port >= 0 && l->nin > 1)
        snprintf(s, n, "%s/in%d", l->name, port + 1);
    else
        snprintf(s, n, "%s", l->name);
    return s;
}

/* Forgets what initialization worked out (the parameters stay). */
static void uninit(dla_net *net)
{
    net->initialized = 0;
    dla__nn_free(net->order);
    net->order = NULL;
    if (net->src)
        for (int i = 0; i < net->nlayers; i++)
            dla__nn_free(net->src[i]);
    dla__nn_free(net->src);
    net->src = NULL;
    if (net->src_port)
        for (int i = 0; i < net->nlayers; i++)
            dla__nn_free(net->src_port[i]);
    dla__nn_free(net->src_port);
    net->src_port = NULL;
    for (int i = 0; i < net->ninputs; i++)
        dla__nn_free(net->input_names ? net->input_names[i] : NULL);
    dla__nn_free(net->input_names);
    net->input_names = NULL;
    dla__nn_free(net->inputs);
    net->inputs = NULL;
    dla__nn_free(net->input_shapes);
    net->input_shapes = NULL;
    net->ninputs = 0;
    for (int i = 0; net->output_names && i < net->noutputs; i++)
        dla__nn_free(net->output_names[i]);
    dla__nn_free(net->output_names);
    net->output_names = NULL;
    dla__nn_free(net->output_ports);
    net->output_ports = NULL;
    dla__nn_free(net->outputs);
    net->outputs = NULL;
    net->noutputs = 0;
    dla__nn_free(net->signature);
    net->signature = NULL;
    net->signature_len = 0;
    for (int i = 0; i < net->graph_ninputs; i++)
        dla__nn_free(net->graph_inputs[i]);
    dla__nn_free(net->graph_inputs);
    for (int i = 0; net->graph_output_names && i < net->graph_noutputs; i++)
        dla__nn_free(net->graph_output_names[i]);
    dla__nn_free(net->graph_output_names);
    dla__nn_free(net->graph_outputs);
    net->graph_inputs = NULL;
    net->graph_outputs = NULL;
    net->graph_output_names = NULL;
    net->graph_ninputs = net->graph_noutputs = net->graph_valid = 0;
}

void dla__net_uninit(dla_net *net) { uninit(net); }

/* Whether name is a layer's of the network or of the n layers being
 * added (unnamed ones have ""). */
static int name_taken(const dla_net *net, const char *name, int n, dla_layer *const *given)
{
    if (dla__net_find(net, name) >= 0)
        return 1;
    for (int j = 0; j < n; j++)
        if (!strcmp(given[j]->name, name))
            return 1;
    return 0;
}

/* Gives an unnamed layer MATLAB's default name: the bare name ("fc") when
 * it is the only unnamed layer of its kind in the call and no layer has
 * that name, else the name with the first free number ("fc_1", "fc_2"),
 * free among the network's layers and the ngiven given with it (two
 * unnamed "fc" beside one named "fc_1" take "fc_2" and "fc_3"). As
 * dlnetwork([... fc relu fc]) names them fc_1, relu, fc_2: numbering every
 * unnamed layer made MATLAB's lone "fc" "fc_1", and code naming it "fc"
 * failed. first_free is where the search
 * for a number starts: the number the previous layer of the kind in this
 * call took, plus one (starting at 1 each time made naming 3000 unnamed
 * layers cubic: 9 s). */
static dla_status name_layer(dla_net *net, dla_layer *l, int alone, int *first_free, int ngiven,
                             dla_layer *const *given)
{
    if (l->name[0]) {
        if (dla__net_find(net, l->name) >= 0)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net: two layers are named '%s'",
                                l->name);
        return DLA_OK;
    }
    /* Sized to the name: a custom type's name of 63 characters did not
     * fit 64 bytes with "_1", every number was cut off, and the second
     * unnamed layer of the type looked for a free name forever. */
    size_t size = strlen(l->kind->default_name) + 16;
    char *n = dla__nn_malloc(size);
    if (!n)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net: cannot name a layer");
    snprintf(n, size, "%s", l->kind->default_name);
    if (!alone || name_taken(net, n, ngiven, given))
        for (int k = *first_free;; k++) {
            snprintf(n, size, "%s_%d", l->kind->default_name, k);
            if (!name_taken(net, n, ngiven, given)) {
                *first_free = k + 1;
                break;
            }
        }
    dla__nn_free(l->name);
    l->name = n;
    return DLA_OK;
}

/* For each of the n layers given that is unnamed, the index of the first
 * unnamed one of its default name (kind[i] = i for that one; -1 for named
 * layers), and in count[first] how many unnamed ones have that name. */
static void group_unnamed(int n, dla_layer *const *layers, int *kind, int *count)
{
    for (int i = 0; i < n; i++) {
        count[i] = 0;
        kind[i] = -1;
        if (layers[i]->name[0])
            continue;
        kind[i] = i;
        for (int j = 0; j < i; j++)
            if (kind[j] == j && !strcmp(layers[j]->kind->default_name,
                                        layers[i]->kind->default_name)) {
                kind[i] = j;
                break;
            }
        count[kind[i]]++;
    }
}

/* The index of the first of layers[0..i-1] that is layers[i]; -1 if none. */
static int earlier_copy(dla_layer *const *layers, int i)
{
    for (int j = 0; j < i; j++)
        if (layers[j] == layers[i])
            return j;
    return -1;
}

/* Frees the layers given to a call that failed, except those it must not
 * touch: freed ones, another network's, and the second mention of one. */
static void free_given(int n, dla_layer *const *layers)
{
    for (int i = 0; layers && i < n; i++)
        if (layers[i] && layers[i]->magic == DLA__HANDLE_LAYER && !layers[i]->owned &&
            earlier_copy(layers, i) < 0)
            dla__layer_destroy(layers[i]);
}

/* A layer the network cannot take: freed, not a layer, another network's,
 * or given twice. DLA_OK when it can. */
static dla_status check_given(dla_layer *const *layers, int i, const char *fn)
{
    const dla_layer *l = layers[i];
    if (l->magic != DLA__HANDLE_LAYER)
        return dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: layer %d (%p) is %s", fn, i + 1,
                           (const void *)l, l->magic == DLA__HANDLE_DEAD ? "a layer freed already"
                           : "not a layer handle");
    if (l->owned)
        return dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: layer %d ('%s') already belongs to a "
                           "network; a layer goes into one network only (make another layer, or "
                           "dla_net_copy the network)", fn, i + 1, l->name);
    int j = earlier_copy(layers, i);
    if (j >= 0)
        return dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: layers %d and %d are the same layer "
                           "('%s'); a layer goes into a network once", fn, j + 1, i + 1,
                           l->name[0] ? l->name : "unnamed");
    return DLA_OK;
}

static dla_status connect_ports(dla_net *net, int s, int sp, int d, int dp, const char *fn);

/* Takes the layers over (frees them all when it fails, except those
 * free_given leaves alone). */
dla_status dla__net_check_given(int n, dla_layer *const *layers, const char *fn)
{
    dla_status st = DLA_OK;
    for (int i = 0; i < n && st == DLA_OK; i++) {
        if (!layers[i])
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: layer %d is NULL (its constructor ran out "
                              "of memory)", fn, i + 1);
        else if ((st = check_given(layers, i, fn)) != DLA_OK)
            ;
        else if (layers[i]->status != DLA_OK)
            st = dla__nn_fail(layers[i]->status, "%s: layer %d: %s", fn, i + 1,
                              layers[i]->message ? layers[i]->message : "");
    }
    return st;
}

void dla__net_free_given(int n, dla_layer *const *layers) { free_given(n, layers); }

static dla_status add_layers(dla_net *net, int n, dla_layer *const *layers, const char *fn)
{
    dla_status st = dla__net_check_given(n, layers, fn);
    if (st == DLA_OK && net->nlayers + n > net->cap) {
        int cap = net->nlayers + n + 8;
        dla_layer **grown = dla__nn_realloc(net->layers, (size_t)cap * sizeof *grown);
        if (!grown)
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot add %d layers", fn, n);
        else {
            net->layers = grown;
            net->cap = cap;
        }
    }
    int first = net->nlayers;
    /* kind, count, then the next number to try, per default name */
    int *groups = st == DLA_OK && n > 0 ? dla__nn_malloc(3 * (size_t)n * sizeof *groups) : NULL;
    if (st == DLA_OK && n > 0 && !groups)
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot name %d layers", fn, n);
    if (groups) {
        group_unnamed(n, layers, groups, groups + n);
        for (int i = 0; i < n; i++)
            groups[2 * n + i] = 1;
    }
    for (int i = 0; i < n && st == DLA_OK; i++) {
        int g = groups[i];
        st = name_layer(net, layers[i], g >= 0 && groups[n + g] == 1,
                        g >= 0 ? &groups[2 * n + g] : &groups[2 * n + i], n, layers);
        if (st == DLA_OK) {
            net->layers[net->nlayers++] = layers[i];
            layers[i]->owned = 1;
        }
    }
    dla__nn_free(groups);
    if (st != DLA_OK) {
        /* Take back the ones added, and free every layer given: the
         * network is as it was, initialized still if it was (MATLAB's
         * addLayers leaves it unchanged on an error). */
        for (int i = first; i < net->nlayers; i++)
            net->layers[i]->owned = 0;
        net->nlayers = first;
        free_given(n, layers);
        return st;
    }
    /* No layers, no change: an initialized network stayed so (it became
     * uninitialized, and its next predict failed). */
    if (n == 0)
        return DLA_OK;
    /* Forget the initialization, over the layers it was made for. */
    int added = net->nlayers;
    net->nlayers = first;
    uninit(net);
    net->nlayers = added;
    /* In sequence among themselves; a layer with several inputs takes the
     * previous one as in1. */
    for (int i = first + 1; i < net->nlayers && st == DLA_OK; i++)
        if (!net->layers[i]->kind->is_input)
            st = connect_ports(net, i - 1, 0, i, 0, "dla_net_connect");
    return st;
}

static int has_free_port(const dla_net *net)
{
    for (int i = 0; i < net->nlayers; i++)
        for (int p = 0; p < net->layers[i]->nin; p++) {
            int found = 0;
            for (int k = 0; k < net->nconn && !found; k++)
                found = net->conn[k].dst == i && net->conn[k].port == p;
            if (!found)
                return 1;
        }
    return 0;
}

dla_status dla__net_check(const dla_net *net, const char *fn)
{
    if (net->magic == DLA__HANDLE_NET)
        return DLA_OK;
    return dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", fn, (const void *)net,
                       net->magic == DLA__HANDLE_DEAD ? "a network freed already (freed twice, "
                       "or used after dla_net_free)" : "not a network handle");
}

DLA_API dla_net *dla_net_create(int n, dla_layer *const *layers)
{
    dla_net *net = dla__nn_calloc(1, sizeof *net);
    if (!net || n < 0 || (n && !layers)) {
        if (net)
            dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_create: %d layers at %p", n,
                         (const void *)layers);
        else
            dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_create: cannot allocate the network");
        free_given(n, layers);
        dla__nn_free(net);
        return NULL;
    }
    net->magic = DLA__HANDLE_NET;
    net->dtype = DLA_F32;
    net->accelerate = 1;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        net->tables[k].magic = DLA__HANDLE_TABLE;
        net->tables[k].owned_by_net = 1;
    }
    dla_status st = add_layers(net, n, layers, "dla_net_create");
    if (st == DLA_OK && n > 0 && !has_free_port(net))
        st = dla_net_init(net, 0, NULL);
    if (st != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

DLA_API void dla_net_free(dla_net *net)
{
    if (!net || dla__net_check(net, "dla_net_free") != DLA_OK)
        return;
    uninit(net);
    for (int i = 0; i < net->nlayers; i++)
        dla__layer_destroy(net->layers[i]);
    dla__nn_free(net->layers);
    for (int i = 0; i < net->nconn; i++) {
        dla__nn_free(net->conn[i].text[0]);
        dla__nn_free(net->conn[i].text[1]);
    }
    dla__nn_free(net->conn);
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        net->tables[k].owned_by_net = 0;
        dla__table_clear(&net->tables[k]);
        /* dla_net_learnables(net) kept past dla_net_free reads "dead" too */
        net->tables[k].magic = DLA__HANDLE_DEAD;
    }
    dla_accel_free(net->accel);
    /* Poisoned and parked, not freed: a stale pointer reads "dead". */
    net->magic = DLA__HANDLE_DEAD;
    net->nlayers = net->nconn = 0;
    net->layers = NULL;
    net->conn = NULL;
    net->accel = NULL;
    dla__quarantine(DLA__RING_OBJECTS, net);
}

dla_status dla__net_add_layers(dla_net *net, int n, dla_layer *const *layers, const char *fn)
{
    return add_layers(net, n, layers, fn);
}

dla_status dla__net_connect_ports(dla_net *net, int s, int sp, int d, int dp, const char *fn)
{
    return connect_ports(net, s, sp, d, dp, fn);
}

DLA_API dla_status dla_net_add_layers(dla_net *net, int n, dla_layer *const *layers)
{
    if (net && dla__net_check(net, "dla_net_add_layers") != DLA_OK)
        return dla_last_status(); /* a dead network: the layers stay the caller's */
    if (!net || n < 0 || (n && !layers)) {
        free_given(n, layers);
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_add_layers: argument %s is NULL",
                            net ? "layers" : "net");
    }
    return add_layers(net, n, layers, "dla_net_add_layers");
}

/* The option that gives l the named input port, when l's kind has it
 * but l has it off: "ref" without EnableReferenceInput, "mask" without
 * HasPaddingMaskInput, "hidden", "cell" without HasStateInputs. A
 * connection to it said "layer 'rs' has inputs in1..in1", which hid the
 * option to turn on. */
static const char *port_option(const dla_layer *l, const char *port)
{
    if (l->kind->ref_port && l->kind->optional_ref && !strcmp(port, "ref"))
        return "EnableReferenceInput";
    if (l->kind->mask_port && !strcmp(port, "mask"))
        return "HasPaddingMaskInput";
    if (l->kind->state_ports &&
        (!strcmp(port, "hidden") || (l->kind->state_ports > 1 && !strcmp(port, "cell"))))
        return "HasStateInputs";
    return NULL;
}

/* "name" or "name/inK" (or "name/in") into a layer and a 0-based port. */
static dla_status parse_end(const dla_net *net, const char *s, int dest, int *layer, int *port,
                            const char *fn)
{
    const char *slash = s ? strchr(s, '/') : NULL;
    size_t n = slash ? (size_t)(slash - s) : (s ? strlen(s) : 0);
    if (!s)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                            dest ? "destination" : "source");
    *layer = find_n(net, s, n);
    if (*layer < 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no layer is named '%.*s'", fn,
                            n > 1000 ? 1000 : (int)n, s);
    const dla_layer *l = net->layers[*layer];
    const char *name = l->name;
    *port = 0;
    char names[256];
    if (!dest) {
        /* Several outputs (HasStateOutputs: "out", "hidden", "cell"): the
         * name alone is the first, "out". */
        *port = slash ? -1 : 0;
        for (int k = 0; slash && k < l->nout; k++)
            if (!strcmp(slash + 1, dla__out_port(l, k)))
                *port = k;
        if (*port >= 0)
            return DLA_OK;
        if (l->nout > 1) {
            port_list(l, 1, l->nout, names, sizeof names);
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: source \"%s\": layer '%s' has "
                                "outputs %s", fn, s, name, names);
        }
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: source \"%s\": layer '%s' has one "
                            "output, \"out\"", fn, s, name);
    }
    if (l->nin == 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: layer '%s' is an input layer: nothing "
                            "connects into it", fn, name);
    if (dla__in_port(l, 0)) {
        /* Named inputs: HasPaddingMaskInput's "in" and "mask", crop's and
         * resize's "in" and "ref", HasStateInputs' "in", "hidden" (and
         * "cell"). */
        *port = -1;
        for (int k = 0; slash && k < l->nin; k++)
            if (!strcmp(slash + 1, dla__in_port(l, k)))
                *port = k;
        if (*port >= 0)
            return DLA_OK;
        port_list(l, 0, l->nin, names, sizeof names);
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: destination \"%s\": layer '%s' "
                            "has inputs %s; name one (\"%s/%s\")", fn, s, name, names, name,
                            dla__in_port(l, 0));
    }
    if (slash) {
        char *end = NULL;
        long k = 0;
        if (!strcmp(slash, "/in") && l->nin == 1)
            k = 1;
        /* Digits from 1 on: strtol alone took "in01", "in+1" and "in 1"
         * for in1, names MATLAB refuses. */
        else if (!strncmp(slash, "/in", 3) && slash[3] >= '1' && slash[3] <= '9')
            k = strtol(slash + 3, &end, 10);
        const char *option = k < 1 ? port_option(l, slash + 1) : NULL;
        if (option)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: destination \"%s\": layer '%s' "
                                "has no input \"%s\": its %s is off (its input is \"%s\")", fn,
                                s, name, slash + 1, option, name);
        if (k < 1 || k > l->nin || (end && *end))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: destination \"%s\": layer '%s' has "
                                "inputs in1..in%d", fn, s, name, l->nin);
        *port = (int)k - 1;
    } else if (l->nin > 1) {
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: layer '%s' has %d inputs; name one "
                            "(\"%s/in1\")", fn, name, l->nin, name);
    }
    return DLA_OK;
}

/* Connects output sp of layer s to input dp of layer d (both checked). */
static dla_status connect_ports(dla_net *net, int s, int sp, int d, int dp, const char *fn)
{
    for (int k = 0; k < net->nconn; k++)
        if (net->conn[k].dst == d && net->conn[k].port == dp)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d of layer '%s' is already "
                                "connected (from '%s')", fn, dp + 1, net->layers[d]->name,
                                net->layers[net->conn[k].src]->name);
    if (net->nconn == net->conn_cap) {
        int cap = net->conn_cap ? 2 * net->conn_cap : 16;
        dla__conn *grown = dla__nn_realloc(net->conn, (size_t)cap * sizeof *grown);
        if (!grown)
            return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot add a connection", fn);
        net->conn = grown;
        net->conn_cap = cap;
    }
    dla__conn c = {s, d, dp, sp, {dla__net_output_port_name(net->layers[s], sp),
                                  dla__net_port_name(net->layers[d], dp)}};
    if (!c.text[0] || !c.text[1]) {
        dla__nn_free(c.text[0]);
        dla__nn_free(c.text[1]);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot add a connection", fn);
    }
    net->conn[net->nconn++] = c;
    uninit(net);
    return DLA_OK;
}

/* The checked network and both ends of a connection named by the user:
 * layer s (its output) and input dp of layer d. */
static dla_status parse_ends(const dla_net *net, const char *source, const char *destination,
                             int *s, int *sp, int *d, int *dp, const char *fn)
{
    if (!net)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument net is NULL", fn);
    if (dla__net_check(net, fn) != DLA_OK)
        return dla_last_status();
    dla_status st = parse_end(net, source, 0, s, sp, fn);
    return st == DLA_OK ? parse_end(net, destination, 1, d, dp, fn) : st;
}

DLA_API dla_status dla_net_connect(dla_net *net, const char *source, const char *destination)
{
    static const char fn[] = "dla_net_connect";
    int s, sp, d, dp;
    dla_status st = parse_ends(net, source, destination, &s, &sp, &d, &dp, fn);
    return st == DLA_OK ? connect_ports(net, s, sp, d, dp, fn) : st;
}

void dla__net_drop_connection(dla_net *net, int k)
{
    dla__nn_free(net->conn[k].text[0]);
    dla__nn_free(net->conn[k].text[1]);
    memmove(&net->conn[k], &net->conn[k + 1], (size_t)(net->nconn - k - 1) * sizeof *net->conn);
    net->nconn--;
}

DLA_API dla_status dla_net_disconnect(dla_net *net, const char *source, const char *destination)
{
    static const char fn[] = "dla_net_disconnect";
    int s, sp, d, dp;
    dla_status st = parse_ends(net, source, destination, &s, &sp, &d, &dp, fn);
    if (st != DLA_OK)
        return st;
    for (int k = 0; k < net->nconn; k++)
        if (net->conn[k].src == s && net->conn[k].sport == sp && net->conn[k].dst == d &&
            net->conn[k].port == dp) {
            dla__net_drop_connection(net, k);
            uninit(net);
            return DLA_OK;
        }
    return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: \"%s\" is not connected to \"%s\"", fn,
                        source, destination);
}

DLA_API int dla_net_initialized(const dla_net *net) { return net && net->initialized; }

DLA_API int dla_net_layer_count(const dla_net *net) { return net ? net->nlayers : 0; }

DLA_API const char *dla_net_layer_name(const dla_net *net, int i)
{
    return net && i >= 0 && i < net->nlayers ? net->layers[i]->name : NULL;
}

DLA_API const char *dla_net_layer_type(const dla_net *net, int i)
{
    return net && i >= 0 && i < net->nlayers ? net->layers[i]->kind->type : NULL;
}

/* The inputs and outputs of an uninitialized network, in the order
 * initialization gives them (layers in the order added; an input layer,
 * then each free port of a layer), into net's graph_* cache. Returns 0
 * when out of memory (the cache then stays empty). The handle is const
 * to callers: the cache is what they would see anyway, worked out once. */
static int graph_ports(dla_net *net)
{
    if (net->graph_valid)
        return 1;
    int nin = 0, nout = 0, maxout = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        nin += l->kind->is_input;
        maxout += l->nout;
        for (int p = 0; p < l->nin; p++) {
            int fed = 0;
            for (int k = 0; k < net->nconn && !fed; k++)
                fed = net->conn[k].dst == i && net->conn[k].port == p;
            nin += !fed;
        }
    }
    net->graph_inputs = dla__nn_calloc((size_t)(nin ? nin : 1), sizeof *net->graph_inputs);
    net->graph_outputs = dla__nn_calloc((size_t)(maxout ? maxout : 1), sizeof *net->graph_outputs);
    net->graph_output_names = dla__nn_calloc((size_t)(maxout ? maxout : 1),
                                             sizeof *net->graph_output_names);
    int ok = net->graph_inputs && net->graph_outputs && net->graph_output_names;
    for (int i = 0; ok && i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        for (int p = -1; ok && p < l->nin; p++) {
            int fed = p < 0 ? !l->kind->is_input : 0;
            for (int k = 0; k < net->nconn && !fed && p >= 0; k++)
                fed = net->conn[k].dst == i && net->conn[k].port == p;
            if (fed)
                continue;
            char *name = dla__net_port_name(l, p);
            ok = name != NULL;
            if (ok)
                net->graph_inputs[net->graph_ninputs++] = name;
        }
        for (int q = 0; ok && q < l->nout; q++) {
            int read = 0;
            for (int k = 0; k < net->nconn && !read; k++)
                read = net->conn[k].src == i && net->conn[k].sport == q;
            if (read)
                continue;
            net->graph_outputs[nout] = i;
            ok = (net->graph_output_names[nout++] = dla__net_output_port_name(l, q)) != NULL;
        }
    }
    net->graph_noutputs = nout;
    if (!ok) {
        for (int i = 0; i < net->graph_ninputs; i++)
            dla__nn_free(net->graph_inputs[i]);
        dla__nn_free(net->graph_inputs);
        for (int i = 0; net->graph_output_names && i < nout; i++)
            dla__nn_free(net->graph_output_names[i]);
        dla__nn_free(net->graph_output_names);
        dla__nn_free(net->graph_outputs);
        net->graph_inputs = NULL;
        net->graph_outputs = NULL;
        net->graph_output_names = NULL;
        net->graph_ninputs = net->graph_noutputs = 0;
        return 0;
    }
    net->graph_valid = 1;
    return 1;
}

DLA_API int dla_net_input_count(const dla_net *net)
{
    if (!net)
        return 0;
    if (net->initialized)
        return net->ninputs;
    return graph_ports((dla_net *)net) ? net->graph_ninputs : 0;
}

DLA_API const char *dla_net_input_name(const dla_net *net, int i)
{
    if (!net || i < 0)
        return NULL;
    if (net->initialized)
        return i < net->ninputs ? net->input_names[i] : NULL;
    return graph_ports((dla_net *)net) && i < net->graph_ninputs ? net->graph_inputs[i] : NULL;
}

DLA_API int dla_net_output_count(const dla_net *net)
{
    if (!net)
        return 0;
    if (net->initialized)
        return net->noutputs;
    return graph_ports((dla_net *)net) ? net->graph_noutputs : 0;
}

DLA_API const char *dla_net_output_name(const dla_net *net, int i)
{
    if (!net || i < 0)
        return NULL;
    if (net->initialized)
        return i >= net->noutputs                        ? NULL
               : net->layers[net->outputs[i]]->nout > 1 ? net->output_names[i]
                                                        : net->layers[net->outputs[i]]->name;
    /* A layer of one output: its own name, valid as long as the layer (as
     * before layers had several), across initialization too. */
    if (!graph_ports((dla_net *)net) || i >= net->graph_noutputs)
        return NULL;
    return net->layers[net->graph_outputs[i]]->nout > 1 ? net->graph_output_names[i]
                                                        : net->layers[net->graph_outputs[i]]->name;
}

DLA_API int dla_net_connection_count(const dla_net *net) { return net ? net->nconn : 0; }

DLA_API dla_status dla_net_connection(const dla_net *net, int i, const char **source,
                                      const char **destination)
{
    if (!net || i < 0 || i >= net->nconn)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_connection: argument i: %d is "
                            "outside 0..%d", i, net ? net->nconn - 1 : -1);
    if (source)
        *source = net->conn[i].text[0];
    if (destination)
        *destination = net->conn[i].text[1];
    return DLA_OK;
}

static int shape_out(const dla__shape *s, int64_t *dims, char *format);

const dla__shape *dla__layer_out_shape(const dla_layer *l, int port)
{
    return port ? &l->out_more[port - 1] : &l->out;
}

static int shape_out(const dla__shape *s, int64_t *dims, char *format)
{
    if (dims)
        memcpy(dims, s->dims, sizeof s->dims[0] * (size_t)s->ndims);
    if (format)
        memcpy(format, s->format, sizeof s->format);
    return s->ndims;
}

DLA_API int dla_net_activation(const dla_net *net, const char *layer, int64_t *dims, char *format)
{
    int port = 0, i = net ? dla__net_find_output(net, layer, &port) : -1;
    if (i < 0 || !net->initialized)
        return -1;
    return shape_out(dla__layer_out_shape(net->layers[i], port), dims, format);
}

DLA_API int dla_net_input_activation(const dla_net *net, int i, int64_t *dims, char *format)
{
    if (!net || !net->initialized || i < 0 || i >= net->ninputs)
        return -1;
    return shape_out(&net->input_shapes[i], dims, format);
}

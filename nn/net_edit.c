/*
 * net_edit.c - changing a network's graph after it was built (MATLAB's
 * removeLayers and replaceLayer), the first step of transfer learning:
 * a trained network whose last layers are replaced for a new task keeps
 * every other layer's values, and dla_net_init makes the new layers'.
 *
 * Layers are referred to by index in net->layers and in the connections,
 * so taking one out shifts the indices above it. A removed or replaced
 * layer's rows leave the Learnables, State and statistics tables at once:
 * a new layer under the same name must start from its initializers, not
 * inherit the old one's weights because their dims happen to match.
 */
#include "nn/nn.h"

#include <string.h>

/* Moves indices of layers after a change of the layers array: an index in
 * [lo, hi) becomes index + by. */
static void shift_connections(dla_net *net, int lo, int hi, int by)
{
    for (int k = 0; k < net->nconn; k++) {
        if (net->conn[k].src >= lo && net->conn[k].src < hi)
            net->conn[k].src += by;
        if (net->conn[k].dst >= lo && net->conn[k].dst < hi)
            net->conn[k].dst += by;
    }
}

/* Takes layer i out of the array (not freed, its connections and rows
 * untouched): the layers after it move down one. */
static dla_layer *take_out(dla_net *net, int i)
{
    dla_layer *l = net->layers[i];
    memmove(&net->layers[i], &net->layers[i + 1], (size_t)(net->nlayers - i - 1) * sizeof *net->layers);
    net->nlayers--;
    shift_connections(net, i + 1, net->nlayers + 1, -1);
    return l;
}

/* Puts l back at index i (room is there: it was taken out). */
static void put_back(dla_net *net, int i, dla_layer *l)
{
    shift_connections(net, i, net->nlayers, 1);
    memmove(&net->layers[i + 1], &net->layers[i], (size_t)(net->nlayers - i) * sizeof *net->layers);
    net->layers[i] = l;
    net->nlayers++;
}

/* Removes every trace of the layer that was named name: its rows in the
 * tables, then the layer itself. */
static void destroy_removed(dla_net *net, dla_layer *l)
{
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        dla__table_drop_layer(&net->tables[k], l->name);
    dla__layer_destroy(l);
}

DLA_API dla_status dla_net_remove_layers(dla_net *net, int n, const char *const *names)
{
    static const char fn[] = "dla_net_remove_layers";
    if (!net)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument net is NULL", fn);
    if (dla__net_check(net, fn) != DLA_OK)
        return dla_last_status();
    if (n < 0 || (n && !names))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d names at %p", fn, n,
                            (const void *)names);
    /* Every name first: an unknown one removes nothing (MATLAB's
     * removeLayers leaves the network as it was on an error). */
    for (int i = 0; i < n; i++) {
        if (!names[i])
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: name %d is NULL", fn, i + 1);
        if (dla__net_find(net, names[i]) < 0)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no layer is named '%.200s'", fn,
                                names[i]);
    }
    if (n == 0)
        return DLA_OK;
    /* The layers by name before any goes: a name may be the network's own
     * (dla_net_layer_name), freed with its layer, so a name given twice
     * was read after the first removal freed it. */
    dla_layer **gone = dla__nn_calloc((size_t)n, sizeof *gone);
    if (!gone)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int i = 0; i < n; i++)
        gone[i] = net->layers[dla__net_find(net, names[i])];
    /* What initialization worked out is per layer index: forget it while
     * the indices are still those it was made for. */
    dla__net_uninit(net);
    for (int i = 0; i < n; i++) {
        int r = -1;
        for (int j = 0; j < net->nlayers && r < 0; j++)
            if (net->layers[j] == gone[i])
                r = j;
        if (r < 0)
            continue; /* named twice: gone already */
        for (int k = net->nconn - 1; k >= 0; k--)
            if (net->conn[k].src == r || net->conn[k].dst == r)
                dla__net_drop_connection(net, k);
        destroy_removed(net, take_out(net, r));
    }
    dla__nn_free(gone);
    return DLA_OK;
}

/* A port of the replaced layer that it fed itself. */
#define SELF (-2)

/* The connections into layer r, one per port (-1: none), into src[0..nin),
 * and the output port of each source into sport. */
static void inputs_of(const dla_net *net, int r, int *src, int *sport)
{
    for (int p = 0; p < net->layers[r]->nin; p++)
        src[p] = -1, sport[p] = 0;
    for (int k = 0; k < net->nconn; k++)
        if (net->conn[k].dst == r) {
            src[net->conn[k].port] = net->conn[k].src;
            sport[net->conn[k].port] = net->conn[k].sport;
        }
}

/* Refuses what would make dla__net_add_layers fail after the old layer is
 * out (besides running out of memory), so that the network is changed
 * only when the replacement can be made. */
static dla_status check_replacement(dla_net *net, int r, int n, dla_layer *const *layers,
                                    const int *src, const char *fn)
{
    dla_status st = dla__net_check_given(n, layers, fn);
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < n; i++) {
        const char *name = layers[i]->name;
        int at = name[0] ? dla__net_find(net, name) : -1;
        if (at >= 0 && at != r)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: new layer %d is named '%s', as a "
                                "layer of the network already is", fn, i + 1, name);
        for (int j = 0; j < i && name[0]; j++)
            if (!strcmp(layers[j]->name, name))
                return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: new layers %d and %d are both "
                                    "named '%s'", fn, j + 1, i + 1, name);
    }
    const dla_layer *old = net->layers[r], *first = layers[0];
    for (int p = 0; p < old->nin; p++)
        if (src[p] >= 0 && p >= first->nin)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d of '%s' is connected (from "
                                "'%s'), but the first new layer ('%s', %s) has %d input%s: the "
                                "inputs are reconnected by order", fn, p + 1, old->name,
                                net->layers[src[p]]->name, first->name[0] ? first->name : "unnamed",
                                first->kind->display, first->nin, first->nin == 1 ? "" : "s");
    /* Outputs are reconnected by order too: a state output read by a
     * layer needs one on the last new layer. */
    const dla_layer *last = layers[n - 1];
    for (int k = 0; k < net->nconn; k++)
        if (net->conn[k].src == r && net->conn[k].dst != r && net->conn[k].sport >= last->nout)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: output \"%s\" of '%s' is "
                                "connected (to \"%s\"), but the last new layer ('%s', %s) has "
                                "%d output%s: the outputs are reconnected by order", fn,
                                dla__out_port(old, net->conn[k].sport), old->name,
                                net->conn[k].text[1], last->name[0] ? last->name : "unnamed",
                                last->kind->display, last->nout, last->nout == 1 ? "" : "s");
    return DLA_OK;
}

DLA_API dla_status dla_net_replace_layer(dla_net *net, const char *name, int n,
                                         dla_layer *const *layers)
{
    static const char fn[] = "dla_net_replace_layer";
    if (net && dla__net_check(net, fn) != DLA_OK)
        return dla_last_status(); /* a dead network: the layers stay the caller's */
    if (!net || !name || n < 1 || !layers) {
        if (n > 0)
            dla__net_free_given(n, layers);
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                            !net ? "argument net is NULL" : !name ? "argument name is NULL"
                            : "no new layers (n must be at least 1, layers not NULL)");
    }
    int r = dla__net_find(net, name);
    if (r < 0) {
        dla__net_free_given(n, layers);
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no layer is named '%.200s'", fn, name);
    }
    int nin = net->layers[r]->nin, nout = 0;
    for (int k = 0; k < net->nconn; k++)
        nout += net->conn[k].src == r && net->conn[k].dst != r;
    /* src: the source of each input port of the old layer (-1: none);
     * dst: (layer, port) pairs its output went to; block: the new layers
     * on their way to its place. */
    int *src = dla__nn_calloc(2 * (size_t)nin + 1, sizeof *src), *sport = src ? src + nin : NULL;
    int *dst = dla__nn_calloc(3 * (size_t)nout + 1, sizeof *dst), *dport = dst ? dst + 2 * nout : NULL;
    dla_layer **block = dla__nn_calloc((size_t)n, sizeof *block);
    dla_status st = src && dst && block ? DLA_OK
                  : dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (st == DLA_OK) {
        inputs_of(net, r, src, sport);
        st = check_replacement(net, r, n, layers, src, fn);
    }
    if (st != DLA_OK) {
        dla__net_free_given(n, layers);
        goto done;
    }
    /* An input the old layer fed itself (a cycle through it) is fed by
     * the last new layer, which takes its output: kept as the index r it
     * was, it read as the layer after the new ones, past the end when the
     * old layer was the last (a crash, or a connection from a layer named
     * ""). */
    for (int p = 0; p < nin; p++)
        if (src[p] == r)
            src[p] = SELF;
    dla__net_uninit(net);
    for (int k = net->nconn - 1, o = 0; k >= 0; k--)
        if (net->conn[k].src == r || net->conn[k].dst == r) {
            if (net->conn[k].src == r && net->conn[k].dst != r) {
                dst[2 * o] = net->conn[k].dst;
                dst[2 * o + 1] = net->conn[k].port;
                dport[o] = net->conn[k].sport;
                o++;
            }
            dla__net_drop_connection(net, k);
        }
    /* Indices as they are once the old layer is out. */
    for (int p = 0; p < nin; p++)
        if (src[p] > r)
            src[p]--;
    for (int o = 0; o < nout; o++)
        if (dst[2 * o] > r)
            dst[2 * o]--;
    dla_layer *old = take_out(net, r);
    int first = net->nlayers;
    st = dla__net_add_layers(net, n, layers, fn);
    /* On failure (out of memory only: checked above) the old layer goes
     * back with its connections, the network uninitialized; otherwise the
     * new layers move from the end to its place (the network's inputs and
     * summary keep their order) and take its connections, by order. */
    int at = st == DLA_OK ? n : 1;
    if (st != DLA_OK)
        put_back(net, r, old);
    else {
        memcpy(block, &net->layers[first], (size_t)n * sizeof *block);
        memmove(&net->layers[r + n], &net->layers[r], (size_t)(first - r) * sizeof *net->layers);
        memcpy(&net->layers[r], block, (size_t)n * sizeof *block);
        for (int k = 0; k < net->nconn; k++)
            for (int e = 0; e < 2; e++) {
                int *i = e ? &net->conn[k].dst : &net->conn[k].src;
                *i = *i >= first ? *i - first + r : *i >= r ? *i + n : *i;
            }
    }
    dla_status cst = DLA_OK;
    for (int p = 0; p < nin && cst == DLA_OK; p++)
        if (src[p] >= 0 || src[p] == SELF)
            cst = dla__net_connect_ports(net, src[p] == SELF ? r + at - 1
                                              : src[p] >= r ? src[p] + at : src[p],
                                         src[p] == SELF ? 0 : sport[p], r, p, fn);
    for (int o = 0; o < nout && cst == DLA_OK; o++)
        cst = dla__net_connect_ports(net, r + at - 1, dport[o],
                                     dst[2 * o] >= r ? dst[2 * o] + at : dst[2 * o],
                                     dst[2 * o + 1], fn);
    if (st == DLA_OK) {
        destroy_removed(net, old);
        st = cst;
    }
done:
    dla__nn_free(src);
    dla__nn_free(dst);
    dla__nn_free(block);
    return st;
}

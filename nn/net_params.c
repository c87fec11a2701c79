/*
 * net_params.c - a network's values: the Learnables and State tables,
 * parameters by name, resetting state, copying, casting and moving a
 * network, and input normalization statistics computed from data.
 */
#include "core/tensor.h" /* dla__tensor_view: a header of the copy's own */
#include "core/log.h"    /* the warning for constant statistics */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

DLA_API dla_table *dla_net_learnables(dla_net *net)
{
    return net && net->initialized ? &net->tables[DLA__LEARNABLE] : NULL;
}

DLA_API dla_table *dla_net_state(dla_net *net)
{
    return net && net->initialized ? &net->tables[DLA__STATE] : NULL;
}

dla_device *dla__net_device(dla_net *net)
{
    dla_tensor *first = dla__net_first_value(net);
    return first ? dla_tensor_device(first) : dla_device_current();
}

const char *dla__net_cast_name(dla_net *net)
{
    dla_tensor *first = dla__net_first_value(net);
    return first && dla_tensor_dtype(first) == DLA_F64 ? "double" : "single";
}

DLA_API int dla_net_learnable_count(const dla_net *net)
{
    return net ? net->tables[DLA__LEARNABLE].count : 0;
}

DLA_API int dla_net_state_count(const dla_net *net) { return net ? net->tables[DLA__STATE].count : 0; }

static dla_status set_all(dla_net *net, dla__param_kind kind, int n, dla_tensor *const *values,
                          const char *fn)
{
    if (!net || !net->initialized)
        return dla__nn_fail(net ? DLA_ERR_STATE : DLA_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                            net ? "the network is not initialized" : "argument net is NULL");
    dla_table *t = &net->tables[kind];
    if (n != t->count || (n && !values))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d value%s for %d row%s", fn, n,
                            n == 1 ? "" : "s", t->count, t->count == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        dla_status st = dla__table_check(fn, t, i, values[i]);
        if (st == DLA_OK)
            st = dla__table_check_device(fn, t, i, values[i]);
        if (st != DLA_OK)
            return st;
    }
    for (int i = 0; i < n; i++) {
        dla_tensor_retain(values[i]);
        dla_tensor_release(t->values[i]);
        t->values[i] = values[i];
    }
    return DLA_OK;
}

DLA_API dla_status dla_net_set_learnables(dla_net *net, int n, dla_tensor *const *values)
{
    return set_all(net, DLA__LEARNABLE, n, values, "dla_net_set_learnables");
}

/* Whether v may replace state row i: its row's dims and dtype, except
 * that a recurrent layer's state takes any number of columns (H x 1, the
 * initial state of every observation, or H x N, one for each of a batch
 * of N: the state after such a batch, or a decoder's initial states). */
static dla_status state_check(const char *fn, const dla_net *net, const dla_table *t, int i,
                              const dla_tensor *v)
{
    if (v && dla_tensor_status(v) == DLA_OK && t->values[i]) {
        const int l = dla__net_find(net, t->layer[i]);
        if (l >= 0 && dla__kind_is_recurrent(net->layers[l]->kind) && dla_tensor_ndims(v) <= 2 &&
            dla_tensor_dtype(v) == dla_tensor_dtype(t->values[i]) &&
            dla_tensor_dim(v, 1) == dla_tensor_dim(t->values[i], 1))
            return DLA_OK;
    }
    return dla__table_check(fn, t, i, v);
}

DLA_API dla_status dla_net_set_state(dla_net *net, int n, dla_tensor *const *values)
{
    static const char fn[] = "dla_net_set_state";
    if (!net || !net->initialized)
        return dla__nn_fail(net ? DLA_ERR_STATE : DLA_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                            net ? "the network is not initialized" : "argument net is NULL");
    dla_table *t = &net->tables[DLA__STATE];
    if (n != t->count || (n && !values))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d value%s for %d row%s", fn, n,
                            n == 1 ? "" : "s", t->count, t->count == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        dla_status st = values[i] ? dla_tensor_status(values[i]) : DLA_ERR_INVALID_ARGUMENT;
        if (st != DLA_OK)
            return dla__nn_fail(st, "%s: %s/%s: %s", fn, t->layer[i], t->param[i],
                                values[i] ? dla_tensor_error(values[i]) : "NULL");
        if ((st = state_check(fn, net, t, i, values[i])) != DLA_OK)
            return st;
        if ((st = dla__table_check_device(fn, t, i, values[i])) != DLA_OK)
            return st;
    }
    for (int i = 0; i < n; i++) {
        dla_tensor_retain(values[i]);
        dla_tensor_release(t->values[i]);
        t->values[i] = values[i];
    }
    return DLA_OK;
}

DLA_API dla_status dla_net_reset_state(dla_net *net)
{
    if (!net || !net->initialized)
        return dla__nn_fail(net ? DLA_ERR_STATE : DLA_ERR_INVALID_ARGUMENT, "dla_net_reset_state: %s",
                            net ? "the network is not initialized" : "argument net is NULL");
    dla_status st = DLA_OK;
    dla_scope_begin();
    for (int i = 0; i < net->nlayers && st == DLA_OK; i++) {
        dla_layer *l = net->layers[i];
        if (!l->kind->initial_state)
            continue;
        int k = 0;
        for (int j = 0; j < l->nparams && st == DLA_OK; j++) {
            if (l->param[j].kind != DLA__STATE)
                continue;
            dla_tensor **slot = &net->tables[DLA__STATE].values[l->param[j].row];
            dla_tensor *v = l->kind->initial_state(&l->props, k++, *slot);
            st = dla_tensor_status(v);
            if (st == DLA_OK) {
                dla_tensor_retain(v);
                dla_tensor_release(*slot);
                *slot = v;
            }
        }
    }
    dla_scope_end();
    return st;
}

static int find_param(const dla_net *net, const char *layer, const char *param, int *kind)
{
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++) {
        int r = dla_table_find(&net->tables[k], layer, param);
        if (r >= 0) {
            *kind = k;
            return r;
        }
    }
    return -1;
}

dla_tensor *dla__net_first_value(const dla_net *net)
{
    for (int k = 0; net && k < DLA__PARAM_KIND_COUNT; k++)
        for (int i = 0; i < net->tables[k].count; i++)
            if (net->tables[k].values[i] && dla_tensor_status(net->tables[k].values[i]) == DLA_OK)
                return net->tables[k].values[i];
    return NULL;
}

/* The dtype the values of tables [k0, k1) share; -1 when they differ or
 * there are none. */
static int shared_dtype(const dla_net *net, int k0, int k1)
{
    int dt = -1;
    for (int k = k0; k < k1; k++)
        for (int i = 0; i < net->tables[k].count; i++) {
            const dla_tensor *v = net->tables[k].values[i];
            if (!v || dla_tensor_status(v) != DLA_OK)
                continue;
            if (dt >= 0 && (int)dla_tensor_dtype(v) != dt)
                return -1;
            dt = (int)dla_tensor_dtype(v);
        }
    return dt == DLA_F32 || dt == DLA_F64 ? dt : -1;
}

dla_dtype dla__net_values_dtype(const dla_net *net)
{
    if (!net)
        return DLA_F32;
    /* The Learnables first: dlupdate(@double, net) casts them alone. */
    int dt = shared_dtype(net, DLA__LEARNABLE, DLA__LEARNABLE + 1);
    if (dt < 0 && !net->tables[DLA__LEARNABLE].count)
        dt = shared_dtype(net, 0, DLA__PARAM_KIND_COUNT);
    return dt < 0 ? net->dtype : (dla_dtype)dt;
}

DLA_API dla_tensor *dla_net_get(const dla_net *net, const char *layer, const char *parameter)
{
    int kind = 0, r = net ? find_param(net, layer, parameter, &kind) : -1;
    if (r < 0) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_get: the network has no parameter %s/%s",
                     layer ? layer : "(null)", parameter ? parameter : "(null)");
        return NULL;
    }
    return net->tables[kind].values[r];
}

DLA_API dla_status dla_net_set(dla_net *net, const char *layer, const char *parameter,
                               dla_tensor *value)
{
    int kind = 0, r = net ? find_param(net, layer, parameter, &kind) : -1;
    if (r < 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_set: the network has no parameter "
                            "%s/%s", layer ? layer : "(null)", parameter ? parameter : "(null)");
    dla_table *t = &net->tables[kind];
    /* A recurrent layer's state as dla_net_set_state takes it: H x N was
     * refused here ("the value is 3x2, the parameter 3x1"), and so was H x
     * 1 once a batch had made it H x N. */
    dla_status st = kind == DLA__STATE ? state_check("dla_net_set", net, t, r, value)
                                       : dla__table_check("dla_net_set", t, r, value);
    if (st == DLA_OK)
        st = dla__table_check_device("dla_net_set", t, r, value);
    if (st != DLA_OK)
        return st;
    /* An input layer's divisor, as its options are checked. */
    if (kind == DLA__FIXED && !strcmp(parameter, "StandardDeviation")) {
        char who[300];
        snprintf(who, sizeof who, "dla_net_set: layer '%.200s'", layer);
        if ((st = dla__input_std_check(who, value)) != DLA_OK)
            return st;
    }
    dla_tensor_retain(value);
    dla_tensor_release(t->values[r]);
    t->values[r] = value;
    return DLA_OK;
}

DLA_API dla_net *dla_net_copy(const dla_net *net)
{
    if (!net) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_net_copy: argument net is NULL");
        return NULL;
    }
    if (dla__net_check(net, "dla_net_copy") != DLA_OK)
        return NULL;
    dla_layer **layers = dla__nn_calloc((size_t)(net->nlayers ? net->nlayers : 1), sizeof *layers);
    dla_net *c = layers ? dla_net_create(0, NULL) : NULL;
    dla_status st = c ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
    for (int i = 0; st == DLA_OK && i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        layers[i] = dla__layer_new(l->kind, l->name, l->nin, &l->props, DLA_OK);
        if (!layers[i])
            st = DLA_ERR_OUT_OF_MEMORY;
        else
            for (int k = 0; k < 2; k++)
                layers[i]->given[k] = dla_tensor_retain(l->given[k]);
    }
    if (st == DLA_OK) {
        st = dla_net_add_layers(c, net->nlayers, layers);
        /* add_layers connected them in sequence: the copy takes the original's. */
        while (st == DLA_OK && c->nconn)
            st = dla_net_disconnect(c, c->conn[0].text[0], c->conn[0].text[1]);
    } else if (layers) { /* the array itself may be what was refused */
        for (int i = 0; i < net->nlayers; i++)
            dla_layer_free(layers[i]);
    }
    dla__nn_free(layers);
    for (int k = 0; st == DLA_OK && k < net->nconn; k++)
        st = dla_net_connect(c, net->conn[k].text[0], net->conn[k].text[1]);
    for (int k = 0; st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        st = dla__table_copy(&c->tables[k], &net->tables[k]);
    /* The copy's values are tensors of its own on the same memory (values
     * never change in place): dla_net_gradient differentiates with respect
     * to its network's tensors, so a loss through both a network and its
     * copy (a target network) gave the original the copy's share too. */
    for (int k = 0; st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        for (int i = 0; st == DLA_OK && i < c->tables[k].count; i++) {
            dla_tensor *v = c->tables[k].values[i];
            if (!v || dla_tensor_status(v) != DLA_OK)
                continue;
            dla_tensor *own = dla__tensor_view("dla_net_copy", v);
            if (!own) {
                st = DLA_ERR_OUT_OF_MEMORY;
                break;
            }
            dla_tensor_release(v);
            c->tables[k].values[i] = own;
        }
    /* The values' dtype, not net->dtype alone: after dla_dlupdate(@double)
     * over the Learnables' values the copy (trainnet's) was initialized
     * as single, casting every double value back in silence. */
    const dla_dtype dtype = dla__net_values_dtype(net);
    if (st == DLA_OK && c) {
        c->dtype = dtype;
        c->accelerate = net->accelerate;
        if (net->initialized) {
            /* Initialization keeps the copied values: their dims fit. */
            int nex = 0;
            /* One a network input, however many (a list of 64 failed the
             * copy of a network of more: "64 example tensors for 65"). */
            dla_tensor **ex = dla__nn_calloc((size_t)(net->ninputs ? net->ninputs : 1), sizeof *ex);
            if (!ex)
                st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_copy: out of memory");
            /* The examples on the device the values live on, whatever
             * device is current (trainnet copies a host network with a
             * "gpu" device current). */
            dla_device *prev = dla_device_current(), *home = NULL;
            for (int k = 0; !home && k < DLA__PARAM_KIND_COUNT; k++)
                if (net->tables[k].count && net->tables[k].values[0])
                    home = dla_tensor_device(net->tables[k].values[0]);
            if (home && home != prev)
                dla_device_set_current(home);
            dla_scope_begin();
            for (int k = 0; ex && k < net->ninputs; k++) {
                const dla__shape *s = &net->input_shapes[k];
                ex[nex++] = dla_zeros(dtype, s->format, s->ndims, s->dims);
                /* An example refused memory would fail initialization as
                 * an input of the wrong format. */
                if (st == DLA_OK && (st = dla_tensor_status(ex[nex - 1])) != DLA_OK)
                    dla__nn_fail(st, "dla_net_copy: %s", dla_tensor_error(ex[nex - 1]));
            }
            if (st == DLA_OK)
                st = dla__net_init_with(c, nex, ex, NULL, NULL, dtype);
            dla_scope_end();
            dla__nn_free(ex);
            if (home && home != prev)
                dla_device_set_current(prev);
        }
    }
    if (st != DLA_OK) {
        dla_net_free(c);
        if (st == DLA_ERR_OUT_OF_MEMORY && dla_last_status() != DLA_ERR_OUT_OF_MEMORY)
            dla__nn_fail(st, "dla_net_copy: out of memory");
        return NULL;
    }
    return c;
}

/* Applies f to every value (cast or move), all or nothing. */
static dla_status map_values(dla_net *net, const char *fn, dla_dtype dtype, dla_device *dev, int cast)
{
    if (!net || !net->initialized)
        return dla__nn_fail(net ? DLA_ERR_STATE : DLA_ERR_INVALID_ARGUMENT, "%s: %s", fn,
                            net ? "the network is not initialized" : "argument net is NULL");
    if (cast && dtype != DLA_F32 && dtype != DLA_F64)
        return dla__nn_fail(DLA_ERR_DTYPE, "%s: networks are single or double, not %s", fn,
                            dla_dtype_name(dtype));
    int total = 0;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        total += net->tables[k].count;
    dla_tensor **next = dla__nn_calloc((size_t)(total ? total : 1), sizeof *next);
    if (!next)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    dla_status st = DLA_OK;
    int at = 0;
    dla_scope_begin();
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count && st == DLA_OK; r++) {
            dla_tensor *v = net->tables[k].values[r];
            dla_tensor *n = cast ? dla_cast(v, dtype) : dla_tensor_to_device(v, dev);
            st = dla_tensor_status(n);
            if (st != DLA_OK)
                dla__nn_fail(st, "%s: %s/%s: %s", fn, net->tables[k].layer[r],
                             net->tables[k].param[r], dla_tensor_error(n));
            next[at++] = dla_tensor_retain(n);
        }
    dla_scope_end();
    at = 0;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count; r++, at++) {
            if (st != DLA_OK) {
                dla_tensor_release(next[at]);
                continue;
            }
            dla_tensor_release(net->tables[k].values[r]);
            net->tables[k].values[r] = next[at];
        }
    dla__nn_free(next);
    if (st == DLA_OK && cast && net->dtype != dtype) {
        net->dtype = dtype;
        /* The parameters' dtypes are part of the architecture text. */
        dla__nn_free(net->signature);
        net->signature = dla__net_architecture(net, 1, &net->signature_len);
        if (!net->signature)
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    return st;
}

DLA_API dla_status dla_net_cast(dla_net *net, dla_dtype dtype)
{
    return map_values(net, "dla_net_cast", dtype, NULL, 1);
}

DLA_API dla_status dla_net_to_device(dla_net *net, dla_device *dev)
{
    return map_values(net, "dla_net_to_device", DLA_F32, dev, 0);
}

DLA_API dla_status dla_net_set_input_statistics(dla_net *net, const char *layer, int n,
                                                dla_tensor *const *data)
{
    static const char fn[] = "dla_net_set_input_statistics";
    int i = dla__net_find(net, layer);
    if (i < 0 || !net->initialized)
        return dla__nn_fail(i < 0 ? DLA_ERR_INVALID_ARGUMENT : DLA_ERR_STATE, "%s: %s", fn,
                            i < 0 ? "no such layer" : "the network is not initialized");
    dla_layer *l = net->layers[i];
    const dla__props *p = &l->props;
    if (!l->kind->is_input || !strcmp(p->option, "none"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: layer '%s' is %s", fn, layer,
                            l->kind->is_input ? "an input layer without normalization"
                                              : "not an input layer");
    if (n < 1 || !data)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: no data", fn);
    /* ns: an image input's spatial dims (InputSize is those and then the
     * channels). */
    const int ns = l->kind == &dla__kind_image_input ? 2 : l->kind == &dla__kind_image3d_input ? 3 : 0;
    int image = ns > 0, feature = l->kind == &dla__kind_feature_input;
    int all = !strcmp(p->option2, "all"), element = !strcmp(p->option2, "element");
    /* Reduced over batch (and time) always, and over space unless per
     * element, and over channels too for "all". */
    int64_t per_element = 1;
    for (int i = 0; i <= ns; i++)
        per_element *= p->size[i];
    int64_t m = all ? 1 : element ? per_element : image ? p->size[ns] : p->count;
    double *sum = dla__nn_calloc((size_t)m, sizeof *sum), *sq = dla__nn_calloc((size_t)m, sizeof *sq);
    double *host = dla__nn_malloc(sizeof *host * (size_t)m);
    double count = 0;
    dla_status st = sum && sq && host ? DLA_OK : dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s", fn);
    for (int k = 0; k < n && st == DLA_OK; k++) {
        dla_tensor *x = data[k];
        const char *want = ns == 3 ? "SSSCB" : image ? "SSCB" : feature ? "CB" : "CBT";
        if (x && dla_tensor_status(x) != DLA_OK) { /* an error tensor keeps its status */
            st = dla__nn_fail(dla_tensor_status(x), "%s: data %d: %s", fn, k + 1,
                              dla_tensor_error(x));
            break;
        }
        if (!x || strcmp(dla_tensor_format(x), want)) {
            st = dla__nn_fail(DLA_ERR_FORMAT, "%s: data %d is %s; the layer takes \"%s\"", fn, k + 1,
                              !x ? "NULL" : dla_tensor_status(x) != DLA_OK ? dla_tensor_error(x)
                                                                            : dla_tensor_format(x),
                              want);
            break;
        }
        /* The sizes the layer takes, not only their product: a transposed
         * image or a sequence of other channels would give statistics of
         * the right count and the wrong data. */
        int same = image || dla_tensor_dim(x, 1) == p->count;
        for (int d = 0; image && d <= ns; d++)
            same = same && dla_tensor_dim(x, d + 1) == p->size[d];
        if (!same) {
            char have[96], size[96];
            int64_t dims[DLA_MAX_DIMS];
            dla__dims_text(dla_tensor_dims(x, dims), dims, have, sizeof have);
            dla__dims_text(ns + 1, p->size, size, sizeof size);
            if (image)
                st = dla__nn_fail(DLA_ERR_SHAPE, "%s: data %d is %s \"%s\"; layer '%s' takes "
                                  "%s %s", fn, k + 1, have, want, layer, size,
                                  ns == 3 ? "volumes" : "images");
            else
                st = dla__nn_fail(DLA_ERR_SHAPE, "%s: data %d is %s \"%s\"; layer '%s' takes "
                                  "%lld channels", fn, k + 1, have, want, layer,
                                  (long long)p->count);
            break;
        }
        int64_t per = dla_tensor_numel(x) / (m ? m : 1);
        if (per == 0)
            continue;
        dla_scope_begin();
        dla_tensor *xd = dla_cast(x, DLA_F64);
        int64_t red[5];
        int nr = 0;
        if (image) {
            for (int d = 1; d <= ns && !element; d++)
                red[nr++] = d;
            if (all)
                red[nr++] = ns + 1;
            red[nr++] = ns + 2;
        } else {
            if (all)
                red[nr++] = 1;
            red[nr++] = 2;
            if (!feature)
                red[nr++] = 3;
        }
        /* Each tensor's mean and sum of squared deviations from it (M2),
         * merged into the running ones below (Chan et al.): the sum of
         * squares less the squared mean loses every digit of a small
         * spread on a large offset (1e5 + 0.002k gave a std 13% off). */
        dla_tensor *s1 = dla_sum(xd, nr, red);
        dla_tensor *s2 = dla_sum(dla_square(dla_sub(xd, dla_affine(s1, 1.0 / (double)per, 0))),
                                 nr, red);
        /* A sum refused memory is out of memory, not the wrong size. */
        if ((st = dla_tensor_status(s1)) != DLA_OK || (st = dla_tensor_status(s2)) != DLA_OK)
            dla__nn_fail(st, "%s: data %d: %s", fn, k + 1,
                         dla_tensor_error(dla_tensor_status(s1) != DLA_OK ? s1 : s2));
        else if (dla_tensor_numel(s1) != m)
            st = dla__nn_fail(DLA_ERR_SHAPE, "%s: data %d does not have the layer's input size", fn,
                              k + 1);
        /* sum[] holds the running means, sq[] the running M2. */
        const double nb = (double)per, total = count + nb;
        if (st == DLA_OK && (st = dla_tensor_to_host(s2, host, sizeof *host * (size_t)m)) == DLA_OK)
            for (int64_t j = 0; j < m; j++)
                sq[j] += host[j];
        if (st == DLA_OK && (st = dla_tensor_to_host(s1, host, sizeof *host * (size_t)m)) == DLA_OK)
            for (int64_t j = 0; j < m; j++) {
                const double delta = host[j] / nb - sum[j];
                sum[j] += delta * nb / total;
                sq[j] += delta * delta * count * nb / total;
            }
        dla_scope_end();
        count = total;
    }
    if (st == DLA_OK && count <= 0)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the data is empty", fn);
    if (st == DLA_OK) {
        dla_scope_begin();
        /* An element (channel...) constant over the data has no spread to
         * divide by: (x - Mean) ./ 0 is NaN on the data and +-Inf off it,
         * and one such pixel (the blank border of digit images, per
         * element) makes every output NaN. It is divided by 1 instead, so
         * it stays x - Mean; the log says how many. */
        int64_t constant = 0;
        for (int64_t j = 0; j < m; j++) {
            const double var = sq[j] / count;
            sq[j] = sqrt(var > 0 ? var : 0);
            if (!(sq[j] > 0) && !strcmp(p->option, "zscore")) {
                sq[j] = 1;
                constant++;
            }
        }
        if (constant)
            dla__log(DLA_LOG_WARN, "%s: layer '%s': %lld of %lld statistics have a standard "
                     "deviation of 0 in the data (constant there); StandardDeviation is 1 for "
                     "them", fn, layer, (long long)constant, (long long)m);
        for (int k = 0; k < l->nparams && st == DLA_OK; k++) {
            dla_table *t = &net->tables[l->param[k].kind];
            int r = l->param[k].row;
            int64_t dims[DLA_MAX_DIMS];
            int nd = dla_tensor_dims(t->values[r], dims);
            /* On the device of the value it replaces: made on the current
             * one, the statistics of a network moved with
             * dla_net_to_device could not meet its input. */
            dla_device *prev = dla__nn_device_use(dla_tensor_device(t->values[r]));
            dla_tensor *v = dla_cast(dla_tensor_from_host(k ? sq : sum, DLA_F64, "", nd, dims),
                                     dla_tensor_dtype(t->values[r]));
            dla__nn_device_restore(prev);
            st = dla_tensor_status(v);
            if (st == DLA_OK) {
                dla_tensor_retain(v);
                dla_tensor_release(t->values[r]);
                t->values[r] = v;
            }
        }
        dla_scope_end();
    }
    dla__nn_free(sum);
    dla__nn_free(sq);
    dla__nn_free(host);
    return st;
}

int dla__net_batchnorm_rows(const dla_net *net, int max, dla__bn_rows *out)
{
    int n = 0;
    for (int i = 0; net && net->initialized && i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        if (l->kind != &dla__kind_batchnorm)
            continue;
        /* Its State rows are its only ones, TrainedMean before
         * TrainedVariance (layer_batchnorm.c). */
        int rows[2], k = 0;
        for (int j = 0; j < l->nparams && k < 2; j++)
            if (l->param[j].kind == DLA__STATE)
                rows[k++] = l->param[j].row;
        /* The source as a connection names it: "lstm/cell" for a state
         * output (the layer's name alone is its first output, "out", whose
         * statistics were taken for the cell state's). */
        const char *source = NULL;
        for (int c = 0; c < net->nconn && !source; c++)
            if (net->conn[c].dst == i && net->conn[c].port == 0)
                source = net->conn[c].text[0];
        if (k == 2 && n < max)
            out[n] = (dla__bn_rows){rows[0], rows[1], source};
        n += k == 2;
    }
    return n;
}

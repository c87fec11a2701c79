/*
 * net_arch.c - a network's architecture as JSON text and back: the layers
 * with their options under MATLAB's property names, the connections, the
 * inputs' shapes and (for the acceleration key and the saved file) the
 * parameters' dims and dtypes. Reading checks every field: its type, its
 * range (through the kind's own check), and that nothing is missing or
 * unknown, so a corrupt file fails with the field it got wrong.
 */
#include "core/json_read.h"
#include "nn/nn.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* Every set and append is checked: a field dropped for want of memory
 * would make a different architecture (and a wrong acceleration key). */
static int set(int *ok, json_t *o, const char *key, json_t *v)
{
    if (!v || json_object_set_new(o, key, v))
        *ok = 0;
    return *ok;
}

static int append(int *ok, json_t *a, json_t *v)
{
    if (!v || json_array_append_new(a, v))
        *ok = 0;
    return *ok;
}

#define ARCH_FORMAT "dlaccel-net"
#define ARCH_VERSION "1.0"
#define MAX_LAYERS 100000

static json_t *dims_json(int *ok, int ndims, const int64_t *dims)
{
    json_t *a = json_array();
    if (!a)
        *ok = 0;
    for (int i = 0; a && i < ndims; i++)
        append(ok, a, json_integer(dims[i]));
    return a;
}

/* A field of several doubles (resize2dLayer's Scale) as a JSON array. */
static json_t *reals_json(int *ok, int n, const double *v)
{
    json_t *a = json_array();
    if (!a)
        *ok = 0;
    for (int i = 0; a && i < n; i++)
        append(ok, a, json_real(v[i]));
    return a;
}

static json_t *layer_json(int *ok, const dla_layer *l)
{
    json_t *o = json_object();
    if (!o) {
        *ok = 0;
        return NULL;
    }
    set(ok, o, "Name", json_string(l->name));
    set(ok, o, "Type", json_string(l->kind->type));
    for (const dla__field *f = l->kind->fields; f->key; f++) {
        const char *at = (const char *)&l->props + f->offset;
        json_t *v = NULL;
        if (f->type == DLA__F_INT)
            v = f->count == 1 ? json_integer(*(const int64_t *)at)
                              : dims_json(ok, f->count, (const int64_t *)at);
        else if (f->type == DLA__F_DOUBLE)
            v = f->count == 1 ? json_real(*(const double *)at)
                              : reals_json(ok, f->count, (const double *)at);
        else
            v = json_string(at);
        set(ok, o, f->key, v);
    }
    return o;
}

char *dla__net_architecture(const dla_net *net, int with_params, size_t *len)
{
    int ok = 1;
    json_t *root = json_object(), *layers = json_array(), *conns = json_array();
    if (!root || !layers || !conns) {
        json_decref(root);
        json_decref(layers);
        json_decref(conns);
        return NULL;
    }
    set(&ok, root, "Format", json_string(ARCH_FORMAT));
    set(&ok, root, "Version", json_string(ARCH_VERSION));
    set(&ok, root, "DataType", json_string(dla_dtype_name(dla__net_values_dtype(net))));
    for (int i = 0; i < net->nlayers; i++)
        append(&ok, layers, layer_json(&ok, net->layers[i]));
    set(&ok, root, "Layers", layers);
    for (int k = 0; k < net->nconn; k++) {
        json_t *c = json_object();
        if (c) {
            set(&ok, c, "Source", json_string(net->conn[k].text[0]));
            set(&ok, c, "Destination", json_string(net->conn[k].text[1]));
        }
        append(&ok, conns, c);
    }
    set(&ok, root, "Connections", conns);
    if (net->initialized || net->input_shapes) {
        json_t *inputs = json_array();
        for (int k = 0; inputs && k < net->ninputs; k++) {
            json_t *o = json_object();
            if (o) {
                set(&ok, o, "Name", json_string(net->input_names[k]));
                set(&ok, o, "Size", dims_json(&ok, net->input_shapes[k].ndims, net->input_shapes[k].dims));
                set(&ok, o, "Format", json_string(net->input_shapes[k].format));
            }
            append(&ok, inputs, o);
        }
        set(&ok, root, "Inputs", inputs);
    }
    if (with_params) {
        json_t *params = json_array();
        for (int k = 0; params && k < DLA__PARAM_KIND_COUNT; k++)
            for (int r = 0; r < net->tables[k].count; r++) {
                const dla_tensor *v = net->tables[k].values[r];
                int64_t dims[DLA_MAX_DIMS];
                int nd = dla_tensor_dims(v, dims);
                json_t *o = json_object();
                if (o) {
                    set(&ok, o, "Table", json_string(dla__param_kind_names[k]));
                    set(&ok, o, "Layer", json_string(net->tables[k].layer[r]));
                    set(&ok, o, "Parameter", json_string(net->tables[k].param[r]));
                    set(&ok, o, "Size", dims_json(&ok, nd, dims));
                    set(&ok, o, "DataType", json_string(dla_dtype_name(dla_tensor_dtype(v))));
                }
                append(&ok, params, o);
            }
        set(&ok, root, "Parameters", params);
    }
    size_t n = ok ? json_dumpb(root, NULL, 0, JSON_COMPACT | JSON_REAL_PRECISION(17)) : 0;
    char *text = n ? dla__nn_malloc(n + 1) : NULL;
    if (text && json_dumpb(root, text, n, JSON_COMPACT | JSON_REAL_PRECISION(17)) == n) {
        text[n] = '\0';
        if (len)
            *len = n;
    } else {
        dla__nn_free(text);
        text = NULL;
    }
    json_decref(root);
    return text;
}

/* Options added after network files were first written: a file that
 * lacks one was written before it existed, and reads it as 0 (a string
 * as "", which its kind reads as its default). */
static int added_later(const char *key)
{
    return !strcmp(key, "HasPaddingMaskInput") || !strcmp(key, "DropoutProbability") ||
           !strcmp(key, "HasStateInputs") || !strcmp(key, "HasStateOutputs") ||
           !strcmp(key, "EnableReferenceInput") || !strcmp(key, "Positions");
}

/* --------------------------------------------------------------- reading */

static dla_status bad(const char *what, const char *fmt, const char *a, const char *b)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a ? a : "", b ? b : "");
    return dla__nn_fail(DLA_ERR_IO, "%s: the architecture is corrupt: %s", what, msg);
}

static int get_int(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v))
        return 0;
    *out = (int64_t)json_integer_value(v);
    return 1;
}

static dla_status read_layer(const json_t *o, const char *what, dla_layer **out)
{
    *out = NULL;
    const json_t *name = json_object_get(o, "Name"), *type = json_object_get(o, "Type");
    if (!json_is_object(o) || !json_is_string(name) || !json_is_string(type))
        return bad(what, "a layer is not an object with a Name and a Type%s%s", NULL, NULL);
    const dla__layer_kind *kind = dla__layer_kind_find(json_string_value(type));
    if (!kind)
        return dla__nn_fail(DLA_ERR_UNSUPPORTED, "%s: layer '%s' has type \"%s\", which is "
                            "neither built in nor registered (a custom layer type is registered "
                            "with dla_layer_type_register before loading)", what,
                            json_string_value(name), json_string_value(type));
    dla__props p = {0};
    size_t nfields = 2;
    for (const dla__field *f = kind->fields; f->key; f++, nfields++) {
        const json_t *v = json_object_get(o, f->key);
        char *at = (char *)&p + f->offset;
        if (!v && added_later(f->key)) {
            nfields--;
            continue;
        }
        int ok = v != NULL;
        if (ok && f->type == DLA__F_INT && f->count == 1)
            ok = get_int(v, (int64_t *)at);
        else if (ok && f->type == DLA__F_INT)
            ok = json_is_array(v) && json_array_size(v) == (size_t)f->count;
        for (int k = 0; ok && f->type == DLA__F_INT && f->count > 1 && k < f->count; k++)
            ok = get_int(json_array_get(v, (size_t)k), (int64_t *)at + k);
        if (ok && f->type == DLA__F_DOUBLE && f->count == 1) {
            ok = json_is_number(v);
            if (ok)
                *(double *)at = json_number_value(v);
        }
        if (ok && f->type == DLA__F_DOUBLE && f->count > 1)
            ok = json_is_array(v) && json_array_size(v) == (size_t)f->count;
        for (int k = 0; ok && f->type == DLA__F_DOUBLE && f->count > 1 && k < f->count; k++) {
            const json_t *e = json_array_get(v, (size_t)k);
            ok = json_is_number(e);
            if (ok)
                ((double *)at)[k] = json_number_value(e);
        }
        if (ok && f->type == DLA__F_STRING) {
            ok = json_is_string(v) && strlen(json_string_value(v)) < DLA__STR;
            if (ok)
                snprintf(at, DLA__STR, "%s", json_string_value(v));
        }
        if (!ok)
            return bad(what, "layer '%s': option %s is missing or has the wrong type",
                       json_string_value(name), f->key);
    }
    if (json_object_size(o) != nfields)
        return bad(what, "layer '%s' has options its type (%s) does not have",
                   json_string_value(name), kind->type);
    int nin = dla__kind_inputs(kind, &p);
    dla_layer *l = dla__layer_new(kind, json_string_value(name), nin, &p, DLA_OK);
    if (!l)
        return DLA_ERR_OUT_OF_MEMORY;
    if (l->status == DLA_ERR_OUT_OF_MEMORY) {
        dla_layer_free(l);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: layer '%s': out of memory", what,
                            json_string_value(name));
    }
    if (l->status != DLA_OK) {
        dla_status st = dla__nn_fail(DLA_ERR_IO, "%s: the architecture is corrupt: %s", what,
                                     l->message ? l->message : "");
        dla_layer_free(l);
        return st;
    }
    *out = l;
    return DLA_OK;
}

dla_status dla__net_from_architecture(const char *text, size_t len, dla__param_lookup lookup,
                                      void *ctx, const char *what, dla_net **out)
{
    *out = NULL;
    char why[160];
    size_t at;
    json_t *root;
    dla_status rs = dla__json_read(text, len, &root, why, sizeof why, &at);
    if (rs == DLA_ERR_OUT_OF_MEMORY)
        return dla__nn_fail(rs, "%s: out of memory reading the architecture (%zu bytes)", what, len);
    if (rs != DLA_OK)
        return dla__nn_fail(DLA_ERR_IO, "%s: the architecture is not valid JSON: %s (at byte %zu)",
                            what, why, at);
    dla_status st = DLA_OK;
    const json_t *fmt = json_object_get(root, "Format"), *ver = json_object_get(root, "Version");
    const json_t *layers = json_object_get(root, "Layers"), *conns = json_object_get(root, "Connections");
    const json_t *dt = json_object_get(root, "DataType"), *inputs = json_object_get(root, "Inputs");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), ARCH_FORMAT))
        st = dla__nn_fail(DLA_ERR_UNSUPPORTED, "%s: the architecture's Format is not \"%s\"", what,
                          ARCH_FORMAT);
    else if (!json_is_string(ver) || strncmp(json_string_value(ver), "1.", 2))
        st = dla__nn_fail(DLA_ERR_UNSUPPORTED, "%s: architecture version \"%s\"; this library "
                          "reads 1.x", what, json_is_string(ver) ? json_string_value(ver) : "?");
    else if (!json_is_array(layers) || !json_array_size(layers) || json_array_size(layers) > MAX_LAYERS ||
             !json_is_array(conns) || !json_is_string(dt) || !json_is_array(inputs))
        st = bad(what, "Layers, Connections, Inputs or DataType is missing or wrong%s%s", NULL, NULL);
    dla_dtype dtype = DLA_F32;
    if (st == DLA_OK) {
        if (!strcmp(json_string_value(dt), "double"))
            dtype = DLA_F64;
        else if (strcmp(json_string_value(dt), "single"))
            st = bad(what, "DataType \"%s\"%s", json_string_value(dt), NULL);
    }
    size_t n = st == DLA_OK ? json_array_size(layers) : 0;
    dla_layer **ls = dla__nn_calloc(n ? n : 1, sizeof *ls);
    if (!ls && st == DLA_OK)
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    for (size_t i = 0; st == DLA_OK && i < n; i++)
        st = read_layer(json_array_get(layers, i), what, &ls[i]);
    dla_net *net = NULL;
    if (st == DLA_OK) {
        net = dla_net_create(0, NULL);
        if (!net)
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    if (st == DLA_OK) {
        /* Layers are added one by one: the file's connections are the only ones. */
        for (size_t i = 0; st == DLA_OK && i < n; i++) {
            st = dla_net_add_layers(net, 1, &ls[i]);
            ls[i] = NULL;
        }
        /* Two layers of one name: the file is corrupt (this said
         * DLA_ERR_INVALID_ARGUMENT, "dla_net: two layers are named ...",
         * without the file). */
        if (st != DLA_OK && st != DLA_ERR_OUT_OF_MEMORY) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            st = dla__nn_fail(DLA_ERR_IO, "%s: the architecture is corrupt: %s", what, msg);
        }
    }
    for (size_t i = 0; i < n && ls; i++)
        dla_layer_free(ls[i]);
    dla__nn_free(ls);
    for (size_t k = 0; st == DLA_OK && k < json_array_size(conns); k++) {
        const json_t *c = json_array_get(conns, k);
        const json_t *s = json_object_get(c, "Source"), *d = json_object_get(c, "Destination");
        if (!json_is_string(s) || !json_is_string(d))
            st = bad(what, "connection entry is not {Source, Destination}%s%s", NULL, NULL);
        else if ((st = dla_net_connect(net, json_string_value(s), json_string_value(d))) ==
                 DLA_ERR_OUT_OF_MEMORY)
            break;
        else if (st != DLA_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            st = dla__nn_fail(DLA_ERR_IO, "%s: the architecture is corrupt: %s", what, msg);
        }
    }
    /* Example inputs for networks whose inputs are not input layers. */
    size_t nex = st == DLA_OK ? json_array_size(inputs) : 0;
    int use_ex = 0;
    /* No more than the layers have ports (a list of 64 at most refused a
     * network of more inputs as "corrupt", one dla_net_save had written). */
    size_t ports = 0;
    for (int i = 0; st == DLA_OK && i < net->nlayers; i++)
        ports += (size_t)net->layers[i]->nin + 1;
    if (st == DLA_OK && nex > ports)
        st = bad(what, "more Inputs than the layers have ports%s%s", NULL, NULL);
    dla_tensor **ex = st == DLA_OK ? dla__nn_calloc(nex ? nex : 1, sizeof *ex) : NULL;
    if (st == DLA_OK && !ex)
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    dla_scope_begin();
    for (size_t k = 0; st == DLA_OK && k < nex; k++) {
        const json_t *o = json_array_get(inputs, k);
        const json_t *sz = json_object_get(o, "Size"), *f = json_object_get(o, "Format");
        int64_t dims[DLA_MAX_DIMS], numel = 1;
        size_t nd = json_array_size(sz);
        int ok = json_is_array(sz) && nd <= DLA_MAX_DIMS && json_is_string(f) &&
                 strlen(json_string_value(f)) <= DLA_MAX_DIMS;
        for (size_t i = 0; ok && i < nd; i++) {
            ok = get_int(json_array_get(sz, i), &dims[i]) && dims[i] >= 0 && dims[i] <= (1 << 30);
            numel *= ok ? dims[i] : 1;
            ok = ok && numel <= ((int64_t)1 << 30);
        }
        if (!ok) {
            st = bad(what, "an entry of Inputs is not {Size, Format} of a sensible size%s%s", NULL, NULL);
            break;
        }
        ex[k] = dla_zeros(dtype, json_string_value(f), (int)nd, dims);
        if (dla_tensor_status(ex[k]) == DLA_ERR_OUT_OF_MEMORY)
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: input %s: %s", what,
                              json_string_value(f), dla_tensor_error(ex[k]));
        else if (dla_tensor_status(ex[k]) != DLA_OK)
            st = bad(what, "input %s: %s", json_string_value(f), dla_tensor_error(ex[k]));
    }
    if (st == DLA_OK) {
        /* Input layers size themselves; examples are needed otherwise. */
        int free_port = 0;
        for (int i = 0; i < net->nlayers && !free_port; i++)
            for (int p = 0; p < net->layers[i]->nin && !free_port; p++) {
                int found = 0;
                for (int k = 0; k < net->nconn && !found; k++)
                    found = net->conn[k].dst == i && net->conn[k].port == p;
                free_port = !found;
            }
        use_ex = free_port;
        st = dla__net_init_with(net, use_ex ? (int)nex : 0, ex, lookup, ctx, dtype);
        /* Options that pass their own checks may still not fit together
         * (a flipped digit in a padding): the file is corrupt. */
        if (st != DLA_OK && st != DLA_ERR_OUT_OF_MEMORY && st != DLA_ERR_IO &&
            st != DLA_ERR_UNSUPPORTED) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            st = dla__nn_fail(DLA_ERR_IO, "%s: the architecture is corrupt: %s", what, msg);
        }
    }
    dla_scope_end();
    dla__nn_free(ex);
    json_decref(root);
    if (st != DLA_OK) {
        dla_net_free(net);
        return st;
    }
    *out = net;
    return DLA_OK;
}

/*
 * layer_custom.c - layer types defined by the user (MATLAB's classes
 * deriving from nnet.layer.Layer): the registry by type name, and the
 * layer kind each registration becomes.
 *
 * A registered type is a dla__layer_kind like the built-in ones, so the
 * network's machinery (graph, initialization, run, summary, architecture,
 * save and load) treats its layers as it treats any other: the kind's
 * fields point into dla__props.custom, where the property values live,
 * so the architecture writes and reads them under their names with the
 * same checks. Registrations are never removed: a layer, a network or a
 * trace may hold its kind for as long as the process runs.
 */
#include "nn/layer_custom.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 63

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static dla__custom_type *registry;

struct dla_layer_init {
    dla__param_sink *sink;
    const dla_layer *layer;
};

/* ------------------------------------------------------------- registry */

static int good_name(const char *s)
{
    if (!s || !*s || strlen(s) > NAME_MAX_LEN || isdigit((unsigned char)s[0]))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

static int same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Nonzero when t registers the same definition as the registration r. */
static int same_definition(const dla__custom_type *r, const dla_layer_type *t)
{
    const dla_layer_type *d = &r->def;
    if (!same_string(d->description, t->description) ||
        !same_string(d->default_name, t->default_name) ||
        d->num_inputs != (t->num_inputs ? t->num_inputs : 1) ||
        d->nproperties != t->nproperties || d->validate != t->validate ||
        d->initialize != t->initialize || d->predict != t->predict ||
        d->forward != t->forward || d->backward != t->backward || d->describe != t->describe)
        return 0;
    for (int i = 0; i < t->nproperties; i++)
        if (strcmp(d->properties[i].name, t->properties[i].name) ||
            memcmp(&d->properties[i].value, &t->properties[i].value, sizeof(double)))
            return 0;
    return 1;
}

static dla__custom_type *find_locked(const char *type)
{
    for (dla__custom_type *r = registry; r && type; r = r->next)
        if (!strcmp(r->def.type, type))
            return r;
    return NULL;
}

const dla__layer_kind *dla__custom_kind_find(const char *type)
{
    pthread_mutex_lock(&lock);
    dla__custom_type *r = find_locked(type);
    pthread_mutex_unlock(&lock);
    return r ? &r->kind : NULL;
}

const dla__custom_type *dla__custom_type_find(const char *name)
{
    const dla__layer_kind *k = dla__custom_kind_find(name);
    return k ? k->custom : NULL;
}

DLA_API int dla_layer_type_registered(const char *type)
{
    return type && dla__custom_kind_find(type) != NULL;
}

static dla_status check_definition(const dla_layer_type *t)
{
    static const char fn[] = "dla_layer_type_register";
    if (!t)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument type is NULL", fn);
    if (!good_name(t->type))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type name \"%.80s\" must be 1 to %d "
                            "letters, digits and '_', not starting with a digit", fn,
                            t->type ? t->type : "(null)", NAME_MAX_LEN);
    /* A layer name is made of it: one with '/' could not be connected
     * ("no layer is named 'a'" for "a/b_1"). */
    if (t->default_name && !good_name(t->default_name))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\": default name \"%.80s\" "
                            "must be 1 to %d letters, digits and '_', not starting with a digit",
                            fn, t->type, t->default_name, NAME_MAX_LEN);
    if (!t->predict)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\" has no predict", fn,
                            t->type);
    if (t->num_inputs < 0 || t->num_inputs > DLA_LAYER_MAX_INPUTS)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\": num_inputs %d must be in "
                            "0..%d", fn, t->type, t->num_inputs, DLA_LAYER_MAX_INPUTS);
    if (t->nproperties < 0 || t->nproperties > DLA_LAYER_MAX_PROPERTIES ||
        (t->nproperties && !t->properties))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\": %d properties (at most "
                            "%d, and the array given)", fn, t->type, t->nproperties,
                            DLA_LAYER_MAX_PROPERTIES);
    for (int i = 0; i < t->nproperties; i++) {
        const char *n = t->properties[i].name;
        if (!good_name(n) || !strcmp(n, "Name") || !strcmp(n, "Type"))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\": property %d's name "
                                "\"%.80s\" must be letters, digits and '_' (and not Name or Type)",
                                fn, t->type, i + 1, n ? n : "(null)");
        for (int j = 0; j < i; j++)
            if (!strcmp(n, t->properties[j].name))
                return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\": property \"%s\" "
                                    "is named twice", fn, t->type, n);
    }
    if (t->backward && (t->num_inputs ? t->num_inputs : 1) > DLA__CUSTOM_OP_MAX_IN)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: type \"%s\" has a backward of its own "
                            "and %d inputs; such a layer runs as one op of at most %d inputs, "
                            "learnables and state", fn, t->type, t->num_inputs,
                            DLA__CUSTOM_OP_MAX_IN);
    return DLA_OK;
}

static void type_free(dla__custom_type *r)
{
    if (!r)
        return;
    dla__nn_free(r->names);
    dla__nn_free(r);
}

/* Lays the registration out in one block of names: the copy of the
 * strings the caller may free. */
static dla__custom_type *type_new(const dla_layer_type *t)
{
    size_t need = strlen(t->type) + 1;
    need += t->description ? strlen(t->description) + 1 : 0;
    need += t->default_name ? strlen(t->default_name) + 1 : 0;
    for (int i = 0; i < t->nproperties; i++)
        need += strlen(t->properties[i].name) + 1;
    dla__custom_type *r = dla__nn_calloc(1, sizeof *r);
    char *names = r ? dla__nn_malloc(need) : NULL;
    if (!names) {
        dla__nn_free(r);
        return NULL;
    }
    r->names = names;
    char *at = names;
#define COPY(dst, s)                                                                               \
    do {                                                                                           \
        size_t n_ = strlen(s) + 1;                                                                 \
        memcpy(at, s, n_);                                                                         \
        (dst) = at;                                                                                \
        at += n_;                                                                                  \
    } while (0)
    r->def = *t;
    r->def.num_inputs = t->num_inputs ? t->num_inputs : 1;
    COPY(r->def.type, t->type);
    r->def.description = r->def.default_name = NULL;
    if (t->description)
        COPY(r->def.description, t->description);
    if (t->default_name)
        COPY(r->def.default_name, t->default_name);
    for (int i = 0; i < t->nproperties; i++) {
        COPY(r->props[i].name, t->properties[i].name);
        r->props[i].value = t->properties[i].value;
        r->fields[i] = (dla__field){r->props[i].name, DLA__F_DOUBLE,
                                    offsetof(dla__props, custom) + sizeof(double) * (size_t)i, 1};
    }
#undef COPY
    r->def.properties = r->props;
    r->fields[t->nproperties] = (dla__field){NULL, 0, 0, 0};
    r->kind = dla__custom_kind_template;
    r->kind.type = r->def.type;
    r->kind.display = r->def.description ? r->def.description : r->def.type;
    r->kind.default_name = r->def.default_name ? r->def.default_name : r->def.type;
    r->kind.fields = r->fields;
    r->kind.custom = r;
    return r;
}

DLA_API dla_status dla_layer_type_register(const dla_layer_type *type)
{
    dla_status st = check_definition(type);
    if (st != DLA_OK)
        return st;
    /* Built-in names are taken for good (looked up outside the lock: the
     * built-in table never changes). */
    const dla__layer_kind *k = dla__layer_kind_find(type->type);
    if (k && !k->custom)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_layer_type_register: \"%s\" is a "
                            "built-in layer type", type->type);
    dla__custom_type *fresh = type_new(type);
    if (!fresh)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_layer_type_register: type \"%s\": out "
                            "of memory", type->type);
    pthread_mutex_lock(&lock);
    dla__custom_type *old = find_locked(type->type);
    if (!old) {
        fresh->next = registry;
        registry = fresh;
        fresh = NULL;
    } else if (!same_definition(old, type)) {
        st = DLA_ERR_INVALID_ARGUMENT;
    }
    pthread_mutex_unlock(&lock);
    type_free(fresh);
    if (st != DLA_OK)
        return dla__nn_fail(st, "dla_layer_type_register: type \"%s\" is registered already, "
                            "with another definition", type->type);
    return DLA_OK;
}

/* ---------------------------------------------------------- the kind */

static const dla__custom_type *type_of(const dla__props *p) { return p->custom_type; }

dla_status dla__custom_check(const dla__props *p, const char *name)
{
    return dla__custom_check_values(type_of(p), p->custom, name);
}

dla_status dla__custom_check_values(const dla__custom_type *r, const double *custom,
                                    const char *name)
{
    for (int i = 0; i < r->def.nproperties; i++)
        if (!isfinite(custom[i]))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': property %s is %g; properties "
                                "are finite numbers", r->def.type, name, r->props[i].name,
                                custom[i]);
    if (!r->def.validate)
        return DLA_OK;
    dla_clear_error();
    dla_status st = r->def.validate(custom);
    if (st == DLA_OK)
        return DLA_OK;
    char msg[900];
    snprintf(msg, sizeof msg, "%s", dla_last_status() != DLA_OK ? dla_last_error()
                                                               : "its validate refused the values");
    return dla__nn_fail(st, "%s '%s': %s", r->def.type, name, msg);
}

static dla_status custom_init(const dla_layer *l, int nin, const dla__shape *in,
                              dla__param_sink *sink)
{
    const dla__custom_type *r = l->kind->custom;
    if (!r->def.initialize)
        return DLA_OK;
    dla_tensor *x[DLA_LAYER_MAX_INPUTS];
    for (int i = 0; i < nin; i++) {
        x[i] = dla_zeros(dla__param_dtype(sink), in[i].format, in[i].ndims, in[i].dims);
        if (dla_tensor_status(x[i]) != DLA_OK)
            return dla__nn_fail(dla_tensor_status(x[i]), "input %d: %s", i + 1,
                                dla_tensor_error(x[i]));
    }
    dla_layer_init init = {sink, l};
    dla_clear_error();
    dla_status st = r->def.initialize(l, &init, nin, x);
    if (st != DLA_OK)
        return dla_last_status() != DLA_OK ? dla_last_status()
                                           : dla__nn_fail(st, "its initialize failed (%s)",
                                                          dla_status_str(st));
    if (r->def.backward) {
        int nl = 0, ns = 0;
        for (int j = 0; j < l->nparams; j++) {
            if (l->param[j].kind == DLA__STATE)
                ns++;
            else
                nl++;
        }
        if (nin + nl + ns > DLA__CUSTOM_OP_MAX_IN || ns > DLA__CUSTOM_OP_MAX_STATE)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "a layer with a backward of its own "
                                "runs as one op: %d input%s, %d learnable%s and %d state are "
                                "more than it takes (%d in all, at most %d state)", nin,
                                nin == 1 ? "" : "s", nl, nl == 1 ? "" : "s", ns,
                                DLA__CUSTOM_OP_MAX_IN, DLA__CUSTOM_OP_MAX_STATE);
    }
    return DLA_OK;
}

void dla__custom_io(const dla_layer *l, const dla__call *c, dla_tensor **learn, dla_tensor **state,
                    dla_layer_io *io)
{
    int nl = 0, ns = 0;
    for (int j = 0; j < l->nparams; j++) {
        if (l->param[j].kind == DLA__STATE)
            state[ns++] = c->p[j];
        else
            learn[nl++] = c->p[j];
    }
    *io = (dla_layer_io){.training = c->training, .nx = c->nx, .x = c->x, .nlearnables = nl,
                         .learnables = learn, .nstate = ns, .state = state,
                         .properties = l->props.custom};
}

static dla_status custom_forward(const dla__props *p, dla__call *c)
{
    const dla__custom_type *r = type_of(p);
    if (r->def.backward)
        return dla__custom_op_run(r, c);
    dla_tensor *learn[DLA__MAX_PARAMS], *state[DLA__MAX_PARAMS];
    dla_layer_io io;
    dla__custom_io(c->layer, c, learn, state, &io);
    dla_status (*fn)(dla_layer_io *) = c->training && r->def.forward ? r->def.forward
                                                                      : r->def.predict;
    dla_clear_error();
    dla_status st = fn(&io);
    if (st == DLA_OK && !io.y)
        st = dla__nn_fail(DLA_ERR_STATE, "its %s set no output (io->y)",
                          fn == r->def.forward ? "forward" : "predict");
    else if (st == DLA_OK && dla_tensor_status(io.y) != DLA_OK)
        st = dla__nn_fail(dla_tensor_status(io.y), "%s", dla_tensor_error(io.y));
    else if (st != DLA_OK && dla_last_status() == DLA_OK)
        dla__nn_fail(st, "its %s failed (%s)", fn == r->def.forward ? "forward" : "predict",
                     dla_status_str(st));
    st = st == DLA_OK ? dla__custom_new_state_check(&io, fn == r->def.forward ? "forward"
                                                                              : "predict")
                      : st;
    for (int k = 0; st == DLA_OK && k < io.nstate; k++)
        if (io.new_state[k] && dla_tensor_status(io.new_state[k]) != DLA_OK)
            st = dla__nn_fail(dla_tensor_status(io.new_state[k]), "new state %d: %s", k + 1,
                              dla_tensor_error(io.new_state[k]));
    if (st != DLA_OK)
        return st;
    c->y = io.y;
    for (int k = 0; k < io.nstate; k++)
        c->new_state[k] = io.new_state[k];
    return DLA_OK;
}

dla_status dla__custom_new_state_check(const dla_layer_io *io, const char *which)
{
    /* A new state past the layer's was dropped in silence: a state the
     * type forgot to declare (dla_layer_add_state) kept its value, and
     * training went on as if the callback had never set it. */
    for (int k = io->nstate; k < DLA_LAYER_MAX_PARAMS; k++)
        if (io->new_state[k])
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "its %s set io->new_state[%d], but the "
                                "layer has %d state parameter%s (declared with "
                                "dla_layer_add_state in its initialize)", which, k, io->nstate,
                                io->nstate == 1 ? "" : "s");
    return DLA_OK;
}

static void custom_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    const dla__custom_type *r = type_of(p);
    if (r->def.describe) {
        if (size)
            buf[0] = '\0';
        r->def.describe(p->custom, buf, size);
        /* A describe that fills buf (strncpy of a long text) left it
         * unterminated, and the summary read on past it. */
        if (size)
            buf[size - 1] = '\0';
        return;
    }
    size_t at = 0;
    int n = snprintf(buf, size, "%s", r->kind.display);
    at = n > 0 ? (size_t)n : 0;
    for (int i = 0; i < r->def.nproperties && at < size; i++) {
        n = snprintf(buf + at, size - at, "%s %s %.6g", i ? "," : " with", r->props[i].name,
                     p->custom[i]);
        at += n > 0 ? (size_t)n : 0;
    }
}

const dla__layer_kind dla__custom_kind_template = {
    .check = dla__custom_check, .init = custom_init, .forward = custom_forward,
    .describe = custom_describe,
};

int dla__kind_inputs(const dla__layer_kind *kind, const dla__props *p)
{
    if (kind->is_input)
        return 0;
    if (kind->custom)
        return kind->custom->def.num_inputs;
    if (kind->count_inputs)
        return kind->count_inputs(p);
    if (kind->multi_input)
        return (int)(p->count >= 1 && p->count <= 64 ? p->count : 1);
    if (kind->mask_port)
        return p->dim ? 2 : 1;
    if (kind->ref_port)
        return kind->optional_ref && !p->dim ? 1 : 2;
    if (kind->state_ports && p->state_io[0])
        return 1 + kind->state_ports;
    return 1;
}

/* --------------------------------------------------------- the layers */

static const dla__field no_fields[] = {{NULL, 0, 0, 0}};

/* The kind of the error layer dla_custom_layer gives for an unknown type:
 * it never gets past dla__layer_new's error, so nothing else is called. */
static const dla__layer_kind unregistered_kind = {
    .type = "unregistered", .display = "Unregistered", .default_name = "unregistered",
    .fields = no_fields, .check = dla__custom_check, .init = custom_init,
    .forward = custom_forward, .describe = custom_describe,
};

DLA_API dla_layer *dla_custom_layer(const char *type, const double *properties,
                                    const dla_layer_options *opts)
{
    const dla__layer_kind *kind = dla__custom_kind_find(type);
    if (!kind) {
        /* An error layer, which a network refuses with this message. */
        dla_status st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_custom_layer: layer type "
                                     "\"%.80s\" is not registered (dla_layer_type_register)",
                                     type ? type : "(null)");
        dla__props p = {0};
        return dla__layer_new(&unregistered_kind, opts ? opts->name : NULL, 1, &p, st);
    }
    const dla__custom_type *r = kind->custom;
    dla__props p = {0};
    for (int i = 0; i < r->def.nproperties; i++)
        p.custom[i] = properties ? properties[i] : r->props[i].value;
    return dla__layer_new(kind, opts ? opts->name : NULL, r->def.num_inputs, &p, DLA_OK);
}

DLA_API const char *dla_layer_name(const dla_layer *layer)
{
    return dla__layer_live(layer) ? layer->name : NULL;
}

DLA_API const char *dla_layer_type_name(const dla_layer *layer)
{
    return dla__layer_live(layer) ? layer->kind->type : NULL;
}

DLA_API double dla_layer_property_value(const dla_layer *layer, const char *name)
{
    if (!dla__layer_live(layer) || !name || !layer->kind->custom)
        return NAN;
    const dla__custom_type *r = layer->kind->custom;
    for (int i = 0; i < r->def.nproperties; i++)
        if (!strcmp(r->props[i].name, name))
            return layer->props.custom[i];
    return NAN;
}

/* ------------------------------------------------- initialization calls */

/* Checks init and name for fn; DLA_OK or the error. */
static dla_status init_args(const char *fn, const dla_layer_init *init, const char *name,
                            int ndims, const int64_t *dims, int need_dims)
{
    if (!init || !init->sink)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument init is %s", fn,
                            init ? "not a live initialization" : "NULL");
    if (!good_name(name))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter name \"%.80s\" must be "
                            "letters, digits and '_'", fn, name ? name : "(null)");
    if (need_dims && (ndims < 1 || ndims > DLA_MAX_DIMS || !dims))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: ndims %d must be in "
                            "1..%d", fn, name, ndims, DLA_MAX_DIMS);
    int64_t numel = 1;
    for (int i = 0; need_dims && i < ndims; i++) {
        if (dims[i] < 0 || dims[i] > ((int64_t)1 << 40))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: dim %d is %lld", fn,
                                name, i + 1, (long long)dims[i]);
        numel = dims[i] && numel > ((int64_t)1 << 40) / dims[i] ? ((int64_t)1 << 41)
                                                                : numel * dims[i];
    }
    if (numel > ((int64_t)1 << 40))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s is too large", fn, name);
    for (int j = 0; j < init->layer->nparams; j++) {
        const dla_table *t = dla__param_sink_table(init->sink, init->layer->param[j].kind);
        if (!strcmp(t->param[init->layer->param[j].row], name))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s is declared twice",
                                fn, name);
    }
    return DLA_OK;
}

DLA_API dla_status dla_layer_add_learnable(dla_layer_init *init, const char *name, int ndims,
                                           const int64_t *dims, const char *initializer,
                                           double fan_in, double fan_out)
{
    static const char fn[] = "dla_layer_add_learnable";
    dla_status st = init_args(fn, init, name, ndims, dims, 1);
    if (st != DLA_OK)
        return st;
    const char *how = initializer ? initializer : "glorot";
    if (!dla__init_known(how, 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: initializer \"%.40s\" "
                            "is unknown; use \"glorot\", \"he\", \"narrow-normal\", \"zeros\", "
                            "\"ones\" or \"orthogonal\"", fn, name, how);
    /* A negative, NaN or infinite fan made the glorot bound sqrt(6 / 0)
     * or NaN, and every weight inf or NaN in silence ("he": sqrt of a
     * negative). */
    if (!(fan_in >= 0) || !(fan_out >= 0) || isinf(fan_in) || isinf(fan_out))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: fan_in %g and fan_out %g "
                            "must be finite and >= 0 (0: from the dims)", fn, name, fan_in,
                            fan_out);
    /* Said here, in the terms of this call: dla__init_tensor would call
     * the initializer unknown. */
    if (!strcmp(how, "orthogonal") && ndims != 2)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: initializer "
                            "\"orthogonal\" takes two dims (%d dims)", fn, name, ndims);
    if (!fan_in || !fan_out) {
        double in = 1, out = 1;
        if (ndims == 1) {
            in = out = (double)dims[0];
        } else if (ndims == 2) {
            in = (double)dims[1];
            out = (double)dims[0];
        } else {
            double area = 1;
            for (int i = 0; i < ndims - 2; i++)
                area *= (double)dims[i];
            in = area * (double)dims[ndims - 2];
            out = area * (double)dims[ndims - 1];
        }
        fan_in = fan_in ? fan_in : in;
        fan_out = fan_out ? fan_out : out;
    }
    dla_tensor *v = dla__init_tensor(how, init->sink, ndims, dims, fan_in, fan_out);
    if (v && dla_tensor_status(v) != DLA_OK)
        return dla__nn_fail(dla_tensor_status(v), "%s: parameter %s: %s", fn, name,
                            dla_tensor_error(v));
    return dla__param_add(init->sink, name, DLA__LEARNABLE, v, ndims, dims, 1);
}

DLA_API dla_status dla_layer_add_state(dla_layer_init *init, const char *name, int ndims,
                                       const int64_t *dims, const char *initializer)
{
    static const char fn[] = "dla_layer_add_state";
    dla_status st = init_args(fn, init, name, ndims, dims, 1);
    if (st != DLA_OK)
        return st;
    const char *how = initializer ? initializer : "zeros";
    if (strcmp(how, "zeros") && strcmp(how, "ones"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: state %s: initializer \"%.40s\"; "
                            "use \"zeros\" or \"ones\" (or dla_layer_add_value)", fn, name, how);
    dla_tensor *v = dla__init_tensor(how, init->sink, ndims, dims, 1, 1);
    return dla__param_add(init->sink, name, DLA__STATE, v, ndims, dims, 1);
}

DLA_API dla_status dla_layer_add_value(dla_layer_init *init, const char *name, int state,
                                       dla_tensor *value)
{
    static const char fn[] = "dla_layer_add_value";
    dla_status st = init_args(fn, init, name, 0, NULL, 0);
    if (st != DLA_OK)
        return st;
    if (!value)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: parameter %s: value is NULL", fn, name);
    if (dla_tensor_status(value) != DLA_OK)
        return dla__nn_fail(dla_tensor_status(value), "%s: parameter %s: %s", fn, name,
                            dla_tensor_error(value));
    if (dla_tensor_dtype(value) != dla__param_dtype(init->sink))
        return dla__nn_fail(DLA_ERR_DTYPE, "%s: parameter %s is %s; the network's parameters "
                            "are %s (dla_layer_init_dtype)", fn, name,
                            dla_dtype_name(dla_tensor_dtype(value)),
                            dla_dtype_name(dla__param_dtype(init->sink)));
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(value, dims);
    /* The table retains it; while loading the sink takes the saved one. */
    dla_tensor *v = dla__param_loading(init->sink) ? NULL : value;
    return dla__param_add(init->sink, name, state ? DLA__STATE : DLA__LEARNABLE, v, nd, dims, 1);
}

DLA_API int dla_layer_init_loading(const dla_layer_init *init)
{
    return init && init->sink && dla__param_loading(init->sink);
}

DLA_API dla_dtype dla_layer_init_dtype(const dla_layer_init *init)
{
    return init && init->sink ? dla__param_dtype(init->sink) : DLA_F32;
}

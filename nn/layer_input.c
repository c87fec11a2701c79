/*
 * layer_input.c - imageInputLayer, image3dInputLayer, sequenceInputLayer
 * and featureInputLayer: the network's entry points. They check what comes in
 * against their input size and apply the input normalization with the
 * statistics held as fixed parameters (Mean, StandardDeviation), which the
 * network passes to its accelerated function as tensor inputs like every
 * other parameter.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

/* "zerocenter", "zscore", "none". */
static int norm_ok(const char *s) { return !strcmp(s, "zerocenter") || !strcmp(s, "zscore") || !strcmp(s, "none"); }

static dla_status check_norm(const dla__props *p, const char *name, const char *type, int image)
{
    if (!norm_ok(p->option))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Normalization \"%s\"; use "
                            "\"zerocenter\", \"zscore\" or \"none\"", type, name, p->option);
    if (strcmp(p->option2, "channel") && strcmp(p->option2, "all") &&
        (!image || strcmp(p->option2, "element")))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': NormalizationDimension \"%s\"; "
                            "use \"auto\", \"channel\", \"all\"%s", type, name, p->option2,
                            image ? " or \"element\"" : "");
    return DLA_OK;
}

/* The statistics' dims for the layer's NormalizationDimension; ns is an
 * image input's spatial dims (2 or 3; InputSize is those and then the
 * channels), 0 for sequences and features. */
static int stat_dims(const dla__props *p, int ns, int64_t *dims)
{
    if (!strcmp(p->option2, "all")) {
        dims[0] = dims[1] = 1;
        return 2;
    }
    if (ns) {
        int element = !strcmp(p->option2, "element");
        for (int i = 0; i < ns; i++)
            dims[i] = element ? p->size[i] : 1;
        dims[ns] = p->size[ns];
        return ns + 1;
    }
    dims[0] = p->count;
    dims[1] = 1;
    return 2;
}

static dla_status init_stats(const dla_layer *l, dla__param_sink *sink, int ns)
{
    const dla__props *p = &l->props;
    if (!strcmp(p->option, "none"))
        return DLA_OK;
    int64_t dims[4];
    int nd = stat_dims(p, ns, dims);
    static const char *const names[2] = {"Mean", "StandardDeviation"};
    for (int k = 0; k < (strcmp(p->option, "zscore") ? 1 : 2); k++) {
        dla_tensor *v = NULL;
        if (!dla__param_loading(sink)) {
            dla_dtype dt = dla__param_dtype(sink);
            int64_t want = 1;
            for (int i = 0; i < nd; i++)
                want *= dims[i];
            if (l->given[k] && dla_tensor_numel(l->given[k]) != want) {
                char got[96], shape[96];
                int64_t gd[DLA_MAX_DIMS];
                dla__dims_text(dla_tensor_dims(l->given[k], gd), gd, got, sizeof got);
                dla__dims_text(nd, dims, shape, sizeof shape);
                return dla__nn_fail(DLA_ERR_SHAPE, "%s is %s; NormalizationDimension \"%s\" "
                                    "takes %s", names[k], got, p->option2, shape);
            }
            if (l->given[k])
                v = dla_cast(dla_reshape(l->given[k], "", nd, dims), dt);
            else
                v = k ? dla_ones(dt, "", nd, dims) : dla_zeros(dt, "", nd, dims);
        }
        dla_status st = dla__param_add(sink, names[k], DLA__FIXED, v, nd, dims, 0);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

/* y = x - Mean, or (x - Mean) ./ StandardDeviation. */
static dla_tensor *normalize(const dla__props *p, dla_tensor *x, dla_tensor *const *stats)
{
    if (!strcmp(p->option, "none"))
        return x;
    dla_tensor *y = dla_sub(x, stats[0]);
    return strcmp(p->option, "zscore") ? y : dla_div(y, stats[1]);
}

static void describe_norm(const dla__props *p, char *buf, size_t size)
{
    if (!strcmp(p->option, "none"))
        buf[0] = '\0';
    else
        snprintf(buf, size, " with '%s' normalization", p->option);
}

/* NormalizationDimension "auto" (or none given), as MATLAB reads it: with
 * statistics given, the dims they match (one value: "all"; one per
 * channel: "channel"; one per element of an image: "element"); else
 * "channel". per_element is 0 for sequences and features. */
static const char *auto_dimension(const char *given, dla_tensor *mean, dla_tensor *std,
                                  int64_t channels, int64_t per_element)
{
    if (given && strcmp(given, "auto"))
        return given;
    dla_tensor *stat = mean ? mean : std;
    if (!stat || dla_tensor_status(stat) != DLA_OK)
        return NULL;
    const int64_t n = dla_tensor_numel(stat);
    return n == 1 && channels != 1 ? "all" : n == channels ? NULL
           : per_element && n == per_element ? "element" : NULL;
}

/* ------------------------------------------------------------- imageInput */

static const dla__field image_fields[] = {
    F("InputSize", DLA__F_INT, size, 3),
    F("Normalization", DLA__F_STRING, option, 1),
    F("NormalizationDimension", DLA__F_STRING, option2, 1),
    {NULL, 0, 0, 0},
};

static const dla__field image3d_fields[] = {
    F("InputSize", DLA__F_INT, size, 4),
    F("Normalization", DLA__F_STRING, option, 1),
    F("NormalizationDimension", DLA__F_STRING, option2, 1),
    {NULL, 0, 0, 0},
};

static const char *image_type(int ns) { return ns == 3 ? "image3dInput" : "imageInput"; }

static dla_status image_check_n(const dla__props *p, const char *name, int ns)
{
    char text[128];
    dla__dims_text(ns + 1, p->size, text, sizeof text);
    int64_t numel = 1;
    for (int i = 0; i <= ns; i++) {
        if (p->size[i] < 1 || p->size[i] > (1 << 24))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': InputSize %s %s",
                                image_type(ns), name, text, p->size[i] < 1 ? "must be positive"
                                : "is too large (at most 16777216 per dim)");
        numel = numel > ((int64_t)1 << 30) ? numel : numel * p->size[i];
    }
    if (numel > ((int64_t)1 << 30))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': InputSize %s is larger than 2^30 "
                            "elements", image_type(ns), name, text);
    return check_norm(p, name, image_type(ns), 1);
}

static dla_status image_check(const dla__props *p, const char *name)
{
    return image_check_n(p, name, 2);
}

static dla_status image3d_check(const dla__props *p, const char *name)
{
    return image_check_n(p, name, 3);
}

static void image_example_n(const dla__props *p, dla__shape *s, int ns)
{
    memset(s, 0, sizeof *s);
    s->ndims = ns + 2;
    for (int i = 0; i <= ns; i++)
        s->dims[i] = p->size[i];
    s->dims[ns + 1] = 1;
    snprintf(s->format, sizeof s->format, "%s", ns == 3 ? "SSSCB" : "SSCB");
}

static void image_example(const dla__props *p, dla__shape *s) { image_example_n(p, s, 2); }
static void image3d_example(const dla__props *p, dla__shape *s) { image_example_n(p, s, 3); }

static dla_status image_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    (void)in;
    return init_stats(l, sink, 2);
}

static dla_status image3d_init(const dla_layer *l, int nin, const dla__shape *in,
                               dla__param_sink *sink)
{
    (void)nin;
    (void)in;
    return init_stats(l, sink, 3);
}

static dla_status image_forward_n(const dla__props *p, dla__call *c, int ns)
{
    dla_tensor *x = c->x[0];
    const char *format = ns == 3 ? "SSSCB" : "SSCB";
    int ok = !strcmp(dla_tensor_format(x), format);
    for (int i = 0; i <= ns && ok; i++)
        ok = dla_tensor_dim(x, i + 1) == p->size[i];
    if (!ok) {
        char d[96], want[128];
        int64_t dims[DLA_MAX_DIMS];
        dla__dims_text(dla_tensor_dims(x, dims), dims, d, sizeof d);
        dla__dims_text(ns + 1, p->size, want, sizeof want);
        dla__nn_fail(DLA_ERR_SHAPE, "the input is %s \"%s\"; the layer takes \"%s\" %s of %s", d,
                     dla_tensor_format(x), format, ns == 3 ? "volumes" : "images", want);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    c->y = normalize(p, x, c->p);
    return dla_tensor_status(c->y);
}

static dla_status image_forward(const dla__props *p, dla__call *c)
{
    return image_forward_n(p, c, 2);
}

static dla_status image3d_forward(const dla__props *p, dla__call *c)
{
    return image_forward_n(p, c, 3);
}

static void image_describe_n(const dla__props *p, char *buf, size_t size, int ns)
{
    char n[64], text[128];
    describe_norm(p, n, sizeof n);
    dla__dims_text(ns + 1, p->size, text, sizeof text);
    snprintf(buf, size, "%s %s%s", text, ns == 3 ? "volumes" : "images", n);
}

static void image_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    image_describe_n(p, buf, size, 2);
}

static void image3d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    image_describe_n(p, buf, size, 3);
}

const dla__layer_kind dla__kind_image_input = {
    .type = "imageInput", .display = "Image Input", .default_name = "imageinput",
    .fields = image_fields, .is_input = 1, .check = image_check, .init = image_init,
    .forward = image_forward, .describe = image_describe, .example = image_example,
};

const dla__layer_kind dla__kind_image3d_input = {
    .type = "image3dInput", .display = "3-D Image Input", .default_name = "image3dinput",
    .fields = image3d_fields, .is_input = 1, .check = image3d_check, .init = image3d_init,
    .forward = image3d_forward, .describe = image3d_describe, .example = image3d_example,
};

dla_status dla__input_std_check(const char *who, dla_tensor *std)
{
    const int64_t n = dla_tensor_numel(std);
    double *v = dla__nn_malloc(sizeof *v * (size_t)(n ? n : 1));
    /* In a scope of its own: dla_net_set's caller may have none open. */
    dla_scope_begin();
    dla_status st = v ? dla_tensor_to_host(dla_cast(std, DLA_F64), v, sizeof *v * (size_t)n)
                      : dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: StandardDeviation: out of memory", who);
    dla_scope_end();
    if (st != DLA_OK && v) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla__nn_fail(st, "%s: StandardDeviation could not be read: %s", who, msg);
    }
    for (int64_t i = 0; st == DLA_OK && i < n; i++)
        if (!(v[i] > 0) || !isfinite(v[i]))
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: StandardDeviation(%lld) is %g: each "
                              "must be positive and finite (it divides the input)", who,
                              (long long)i + 1, v[i]);
    dla__nn_free(v);
    return st;
}

/* Keeps the statistics given in the options (the caller calls this inside
 * a scope: retaining there leaves the layer its own reference). */
static dla_status set_stats(dla_layer *l, dla_tensor *mean, dla_tensor *std)
{
    dla_tensor *given[2] = {mean, std};
    for (int k = 0; k < 2; k++) {
        if (!given[k])
            continue;
        l->given[k] = dla_tensor_retain(dla_contiguous(given[k]));
        if (dla_tensor_status(l->given[k]) != DLA_OK && l->status == DLA_OK) {
            l->status = dla_tensor_status(l->given[k]);
            l->message = dla__nn_strdup(dla_tensor_error(l->given[k]));
        }
    }
    /* A divisor of 0, a negative or a non-finite one makes every output of
     * the element NaN or Inf, and the whole network with it: refused here,
     * where the user gave it. */
    if (l->status == DLA_OK && std && !strcmp(l->props.option, "zscore") &&
        dla__input_std_check(l->kind->type, l->given[1]) != DLA_OK) {
        l->status = dla_last_status();
        l->message = dla__nn_strdup(dla_last_error());
    }
    return l->status;
}

static dla_layer *image_new(const dla__layer_kind *kind, int ns, const int64_t *size,
                            const dla_image_input_options *opts)
{
    dla_image_input_options o = opts ? *opts : (dla_image_input_options){0};
    dla__props p = {0};
    for (int i = 0; i <= ns; i++)
        p.size[i] = size[i];
    char what[64];
    snprintf(what, sizeof what, "%s: Normalization", kind->type);
    dla_status st = dla__props_string(p.option, o.normalization, "zerocenter", what);
    snprintf(what, sizeof what, "%s: NormalizationDimension", kind->type);
    int64_t per_element = 1;
    for (int i = 0; i <= ns; i++)
        per_element *= size[i] > 0 ? size[i] : 1;
    if (st == DLA_OK)
        st = dla__props_string(p.option2, auto_dimension(o.normalization_dimension, o.mean,
                                                         o.standard_deviation, size[ns],
                                                         per_element),
                               "channel", what);
    dla_layer *l = dla__layer_new(kind, o.name, 0, &p, st);
    if (l) {
        dla_scope_begin();
        set_stats(l, o.mean, o.standard_deviation);
        dla_scope_end();
    }
    return l;
}

DLA_API dla_layer *dla_image_input_layer(int64_t height, int64_t width, int64_t channels,
                                         const dla_image_input_options *opts)
{
    return image_new(&dla__kind_image_input, 2, (const int64_t[]){height, width, channels}, opts);
}

DLA_API dla_layer *dla_image3d_input_layer(int64_t height, int64_t width, int64_t depth,
                                           int64_t channels, const dla_image_input_options *opts)
{
    return image_new(&dla__kind_image3d_input, 3,
                     (const int64_t[]){height, width, depth, channels}, opts);
}

/* ---------------------------------------------------------- sequenceInput */

static const dla__field seq_fields[] = {
    F("InputSize", DLA__F_INT, count, 1),
    F("MinLength", DLA__F_INT, dim, 1),
    F("Normalization", DLA__F_STRING, option, 1),
    F("NormalizationDimension", DLA__F_STRING, option2, 1),
    {NULL, 0, 0, 0},
};

static dla_status seq_check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("sequenceInput", name, "InputSize", p->count, 1, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size("sequenceInput", name, "MinLength", p->dim, 1, 1 << 24);
    if (st != DLA_OK)
        return st;
    return check_norm(p, name, "sequenceInput", 0);
}

static void seq_example(const dla__props *p, dla__shape *s)
{
    memset(s, 0, sizeof *s);
    s->ndims = 3;
    s->dims[0] = p->count;
    s->dims[1] = 1;
    s->dims[2] = p->dim;
    snprintf(s->format, sizeof s->format, "CBT");
}

static dla_status seq_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    (void)in;
    return init_stats(l, sink, 0);
}

static dla_status seq_forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    int64_t t = dla_tensor_dim(x, 3);
    if (strcmp(f, "CBT") || dla_tensor_dim(x, 1) != p->count || t < p->dim) {
        char d[96];
        int64_t dims[DLA_MAX_DIMS];
        dla__dims_text(dla_tensor_dims(x, dims), dims, d, sizeof d);
        if (!strcmp(f, "CBT") && dla_tensor_dim(x, 1) == p->count)
            dla__nn_fail(DLA_ERR_SHAPE, "the input %s \"CBT\" has %lld time steps, fewer than "
                         "MinLength %lld", d, (long long)t, (long long)p->dim);
        else
            dla__nn_fail(DLA_ERR_SHAPE, "the input is %s \"%s\"; the layer takes \"CBT\" sequences "
                         "of %lld channels", d, f, (long long)p->count);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    c->y = normalize(p, x, c->p);
    return dla_tensor_status(c->y);
}

static void seq_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    char n[64];
    describe_norm(p, n, sizeof n);
    snprintf(buf, size, "Sequence input with %lld dimensions%s", (long long)p->count, n);
}

const dla__layer_kind dla__kind_sequence_input = {
    .type = "sequenceInput", .display = "Sequence Input", .default_name = "sequenceinput",
    .fields = seq_fields, .is_input = 1, .check = seq_check, .init = seq_init,
    .forward = seq_forward, .describe = seq_describe, .example = seq_example,
};

DLA_API dla_layer *dla_sequence_input_layer(int64_t channels, const dla_sequence_input_options *opts)
{
    dla_sequence_input_options o = opts ? *opts : (dla_sequence_input_options){0};
    dla__props p = {0};
    p.count = channels;
    p.dim = o.min_length ? o.min_length : 1;
    dla_status st = dla__props_string(p.option, o.normalization, "none", "sequenceInput: Normalization");
    if (st == DLA_OK)
        st = dla__props_string(p.option2, auto_dimension(o.normalization_dimension, o.mean,
                                                         o.standard_deviation, channels, 0),
                               "channel", "sequenceInput: NormalizationDimension");
    dla_layer *l = dla__layer_new(&dla__kind_sequence_input, o.name, 0, &p, st);
    if (l) {
        dla_scope_begin();
        set_stats(l, o.mean, o.standard_deviation);
        dla_scope_end();
    }
    return l;
}

/* ----------------------------------------------------------- featureInput */

static const dla__field feature_fields[] = {
    F("InputSize", DLA__F_INT, count, 1),
    F("Normalization", DLA__F_STRING, option, 1),
    F("NormalizationDimension", DLA__F_STRING, option2, 1),
    {NULL, 0, 0, 0},
};

static dla_status feature_check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("featureInput", name, "InputSize", p->count, 1, 1 << 24);
    return st != DLA_OK ? st : check_norm(p, name, "featureInput", 0);
}

static void feature_example(const dla__props *p, dla__shape *s)
{
    memset(s, 0, sizeof *s);
    s->ndims = 2;
    s->dims[0] = p->count;
    s->dims[1] = 1;
    snprintf(s->format, sizeof s->format, "CB");
}

static dla_status feature_forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    if (strcmp(dla_tensor_format(x), "CB") || dla_tensor_dim(x, 1) != p->count) {
        char d[96];
        int64_t dims[DLA_MAX_DIMS];
        dla__dims_text(dla_tensor_dims(x, dims), dims, d, sizeof d);
        dla__nn_fail(DLA_ERR_SHAPE, "the input is %s \"%s\"; the layer takes \"CB\" data of "
                     "%lld features", d, dla_tensor_format(x), (long long)p->count);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    c->y = normalize(p, x, c->p);
    return dla_tensor_status(c->y);
}

static void feature_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    char n[64];
    describe_norm(p, n, sizeof n);
    snprintf(buf, size, "%lld features%s", (long long)p->count, n);
}

const dla__layer_kind dla__kind_feature_input = {
    .type = "featureInput", .display = "Feature Input", .default_name = "featureinput",
    .fields = feature_fields, .is_input = 1, .check = feature_check, .init = seq_init,
    .forward = feature_forward, .describe = feature_describe, .example = feature_example,
};

DLA_API dla_layer *dla_feature_input_layer(int64_t num_features,
                                           const dla_feature_input_options *opts)
{
    dla_feature_input_options o = opts ? *opts : (dla_feature_input_options){0};
    dla__props p = {0};
    p.count = num_features;
    dla_status st = dla__props_string(p.option, o.normalization, "none",
                                      "featureInput: Normalization");
    if (st == DLA_OK)
        st = dla__props_string(p.option2, auto_dimension(o.normalization_dimension, o.mean,
                                                         o.standard_deviation, num_features, 0),
                               "channel", "featureInput: NormalizationDimension");
    dla_layer *l = dla__layer_new(&dla__kind_feature_input, o.name, 0, &p, st);
    if (l) {
        dla_scope_begin();
        set_stats(l, o.mean, o.standard_deviation);
        dla_scope_end();
    }
    return l;
}

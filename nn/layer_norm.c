/*
 * layer_norm.c - layerNormalizationLayer, groupNormalizationLayer and
 * instanceNormalizationLayer: learnable Offset and Scale per channel (the
 * dims batchNormalizationLayer gives them), no state; each observation is
 * normalized by its own statistics, in training and prediction alike
 * (dla_layernorm, dla_groupnorm, dla_instancenorm).
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

/* The options all three share; layerNormalization adds its
 * OperationDimension, groupNormalization its NumGroups. */
#define COMMON_FIELDS                                                                              \
    F("Epsilon", DLA__F_DOUBLE, scale, 1), F("NumChannels", DLA__F_INT, channels, 1),             \
        F("OffsetInitializer", DLA__F_STRING, init[0], 1),                                         \
        F("ScaleInitializer", DLA__F_STRING, init[1], 1)

static const dla__field layer_fields[] = {
    COMMON_FIELDS, F("OperationDimension", DLA__F_STRING, mode, 1), {NULL, 0, 0, 0}};
static const dla__field group_fields[] = {
    COMMON_FIELDS, F("NumGroups", DLA__F_INT, count, 1), {NULL, 0, 0, 0}};
static const dla__field instance_fields[] = {COMMON_FIELDS, {NULL, 0, 0, 0}};

static dla_status check_common(const char *type, const dla__props *p, const char *name)
{
    if (!(p->scale > 0))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Epsilon %g must be positive",
                            type, name, p->scale);
    dla_status st = dla__layer_size(type, name, "NumChannels", p->channels, 0, 1 << 24);
    if (st != DLA_OK)
        return st;
    for (int k = 0; k < 2; k++)
        if (!dla__init_known(p->init[k], 0))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s \"%s\" is unknown", type,
                                name, k ? "ScaleInitializer" : "OffsetInitializer", p->init[k]);
    return DLA_OK;
}

static dla_status layer_check(const dla__props *p, const char *name)
{
    static const char *const dims[] = {"auto", "channel-only", "spatial-channel",
                                       "batch-excluded"};
    int known = 0;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        known |= !strcmp(p->mode, dims[i]);
    if (!known)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "layerNormalization '%s': "
                            "OperationDimension \"%s\"; use \"auto\", \"channel-only\", "
                            "\"spatial-channel\" or \"batch-excluded\"", name, p->mode);
    return check_common("layerNormalization", p, name);
}

/* NumGroups: a count, or DLA_CHANNEL_WISE (-1 in the architecture),
 * MATLAB's "channel-wise": one group a channel, however many the input
 * has. */
static int64_t groups_of(const dla__props *p, int64_t channels)
{
    return p->count == DLA_CHANNEL_WISE ? channels : p->count;
}

static dla_status group_check(const dla__props *p, const char *name)
{
    dla_status st = p->count == DLA_CHANNEL_WISE
                        ? DLA_OK
                        : dla__layer_size("groupNormalization", name, "NumGroups", p->count, 1,
                                          1 << 24);
    return st != DLA_OK ? st : check_common("groupNormalization", p, name);
}

static dla_status instance_check(const dla__props *p, const char *name)
{
    return check_common("instanceNormalization", p, name);
}

/* Offset and Scale, one per channel of the input. */
static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const int64_t c = dla__shape_dim(in, 'C'), groups = groups_of(&l->props, c);
    if (l->kind == &dla__kind_groupnorm && groups && c % groups != 0)
        return dla__nn_fail(DLA_ERR_SHAPE, "NumGroups %lld does not divide the input's %lld "
                            "channels", (long long)groups, (long long)c);
    /* Each channel of each observation is normalized over its S and T
     * dims: without any, every value is its own mean and the output is
     * Offset whatever the input (MATLAB's layer takes no "CB" data). */
    if (l->kind == &dla__kind_instancenorm && c &&
        dla__shape_count(in, 'S') + dla__shape_count(in, 'T') == 0)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; instance normalization needs "
                            "an \"S\" or \"T\" dim to normalize over", in->format);
    int64_t dims[4];
    int nd;
    return dla__norm_offset_scale(l, l->kind->display, in, sink, dims, &nd);
}

static dla_status layer_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_layernorm(c->x[0], c->p[0], c->p[1],
                         &(dla_norm_options){.epsilon = p->scale, .operation_dimension = p->mode});
    return dla_tensor_status(c->y);
}

static dla_status group_forward(const dla__props *p, dla__call *c)
{
    dla__shape in;
    dla__shape_of(c->x[0], &in);
    c->y = dla_groupnorm(c->x[0], groups_of(p, dla__shape_dim(&in, 'C')), c->p[0], c->p[1],
                         &(dla_norm_options){.epsilon = p->scale});
    return dla_tensor_status(c->y);
}

static dla_status instance_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_instancenorm(c->x[0], c->p[0], c->p[1], &(dla_norm_options){.epsilon = p->scale});
    return dla_tensor_status(c->y);
}

/* "Layer normalization with 20 channels" (the count once it is known). */
static void describe_with(const char *what, const dla__props *p, const dla__shape *in, char *buf,
                          size_t size)
{
    const int64_t c = p->channels ? p->channels : in ? dla__shape_dim(in, 'C') : 0;
    if (c)
        snprintf(buf, size, "%s with %lld channels", what, (long long)c);
    else
        snprintf(buf, size, "%s", what);
}

static void layer_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe_with("Layer normalization", p, in, buf, size);
}

static void group_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    char what[64];
    if (p->count == DLA_CHANNEL_WISE)
        snprintf(what, sizeof what, "Group normalization (channel-wise)");
    else
        snprintf(what, sizeof what, "Group normalization (%lld groups)", (long long)p->count);
    describe_with(what, p, in, buf, size);
}

static void instance_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe_with("Instance normalization", p, in, buf, size);
}

const dla__layer_kind dla__kind_layernorm = {
    .type = "layerNormalization", .display = "Layer Normalization", .default_name = "layernorm",
    .fields = layer_fields, .check = layer_check, .init = init, .forward = layer_forward,
    .describe = layer_describe,
};
const dla__layer_kind dla__kind_groupnorm = {
    .type = "groupNormalization", .display = "Group Normalization", .default_name = "groupnorm",
    .fields = group_fields, .check = group_check, .init = init, .forward = group_forward,
    .describe = group_describe,
};
const dla__layer_kind dla__kind_instancenorm = {
    .type = "instanceNormalization", .display = "Instance Normalization",
    .default_name = "instancenorm", .fields = instance_fields, .check = instance_check,
    .init = init, .forward = instance_forward, .describe = instance_describe,
};

/* The props of opts, MATLAB's defaults where they are zero. */
static dla_status props_of(const char *type, const dla_norm_layer_options *o, dla__props *p)
{
    char what[96];
    memset(p, 0, sizeof *p);
    p->scale = o->epsilon ? o->epsilon : 1e-5;
    p->channels = o->num_channels;
    snprintf(what, sizeof what, "%s: OffsetInitializer", type);
    dla_status st = dla__props_string(p->init[0], o->offset_initializer, "zeros", what);
    snprintf(what, sizeof what, "%s: ScaleInitializer", type);
    if (st == DLA_OK)
        st = dla__props_string(p->init[1], o->scale_initializer, "ones", what);
    return st;
}

DLA_API dla_layer *dla_layernorm_layer(const dla_norm_layer_options *opts)
{
    const dla_norm_layer_options o = opts ? *opts : (dla_norm_layer_options){0};
    dla__props p;
    dla_status st = props_of("layerNormalization", &o, &p);
    if (st == DLA_OK)
        st = dla__props_string(p.mode, o.operation_dimension, "auto",
                               "layerNormalization: OperationDimension");
    return dla__layer_new(&dla__kind_layernorm, o.name, 1, &p, st);
}

DLA_API dla_layer *dla_groupnorm_layer(int64_t num_groups, const dla_norm_layer_options *opts)
{
    const dla_norm_layer_options o = opts ? *opts : (dla_norm_layer_options){0};
    dla__props p;
    dla_status st = props_of("groupNormalization", &o, &p);
    p.count = num_groups;
    return dla__layer_new(&dla__kind_groupnorm, o.name, 1, &p, st);
}

DLA_API dla_layer *dla_instancenorm_layer(const dla_norm_layer_options *opts)
{
    const dla_norm_layer_options o = opts ? *opts : (dla_norm_layer_options){0};
    dla__props p;
    dla_status st = props_of("instanceNormalization", &o, &p);
    return dla__layer_new(&dla__kind_instancenorm, o.name, 1, &p, st);
}

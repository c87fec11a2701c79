/*
 * layer_activation.c - layers without learnables that map one input to
 * one output: relu, leakyRelu, clippedRelu, dropout, spatialDropout,
 * softmax and flatten.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field no_fields[] = {{NULL, 0, 0, 0}};
static const dla__field scale_fields[] = {F("Scale", DLA__F_DOUBLE, scale, 1), {NULL, 0, 0, 0}};
static const dla__field prob_fields[] = {F("Probability", DLA__F_DOUBLE, scale, 1), {NULL, 0, 0, 0}};

static dla_status check_none(const dla__props *p, const char *name)
{
    (void)p;
    (void)name;
    return DLA_OK;
}

static dla_status init_none(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)in;
    (void)sink;
    return DLA_OK;
}

static dla_layer *plain(const dla__layer_kind *kind, const dla__props *p, const dla_layer_options *opts)
{
    return dla__layer_new(kind, opts ? opts->name : NULL, 1, p, DLA_OK);
}

/* ------------------------------------------------------------------- relu */

static dla_status relu_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_relu(c->x[0]);
    return dla_tensor_status(c->y);
}

static void relu_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)p;
    (void)in;
    snprintf(buf, size, "ReLU");
}

const dla__layer_kind dla__kind_relu = {
    .type = "relu", .display = "ReLU", .default_name = "relu", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = relu_forward, .describe = relu_describe,
};

DLA_API dla_layer *dla_relu_layer(const dla_layer_options *opts)
{
    return plain(&dla__kind_relu, &(dla__props){0}, opts);
}

/* -------------------------------------------------------------- leakyRelu */

static dla_status leaky_check(const dla__props *p, const char *name)
{
    if (!isfinite(p->scale))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "leakyRelu '%s': Scale %g must be finite", name,
                            p->scale);
    return DLA_OK;
}

static dla_status leaky_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_leakyrelu(c->x[0], p->scale);
    return dla_tensor_status(c->y);
}

static void leaky_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Leaky ReLU with scale %g", p->scale);
}

const dla__layer_kind dla__kind_leakyrelu = {
    .type = "leakyRelu", .display = "Leaky ReLU", .default_name = "leakyrelu",
    .fields = scale_fields, .check = leaky_check, .init = init_none, .forward = leaky_forward,
    .describe = leaky_describe,
};

DLA_API dla_layer *dla_leakyrelu_layer(double scale, const dla_layer_options *opts)
{
    return plain(&dla__kind_leakyrelu, &(dla__props){.scale = scale}, opts);
}

/* ------------------------------------------------------------ clippedRelu */

static const dla__field ceiling_fields[] = {F("Ceiling", DLA__F_DOUBLE, scale, 1),
                                            {NULL, 0, 0, 0}};

static dla_status clipped_check(const dla__props *p, const char *name)
{
    if (!(p->scale > 0) || isinf(p->scale))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "clippedRelu '%s': Ceiling %g must be "
                            "positive and finite", name, p->scale);
    return DLA_OK;
}

/* min(relu(x), Ceiling): MATLAB's clippedReluLayer. The gradient is 1
 * strictly between 0 and the ceiling and 0 beyond either (dla_min2 gives
 * a tie at the ceiling to its first operand, relu's 1: MATLAB's derivative
 * there is not documented). */
static dla_status clipped_forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    /* A fill on x's device, which a replay's plan folds into the program
     * as one value (a copy to the device was a launch of its own, and the
     * min could not join the relu's program past it). */
    dla_tensor *ceil_t = dla_full(p->scale, dla_tensor_dtype(x), "", DLA_DIMS(1));
    if (dla_tensor_device(ceil_t) != dla_tensor_device(x))
        ceil_t = dla_tensor_to_device(ceil_t, dla_tensor_device(x));
    c->y = dla_min2(dla_relu(x), ceil_t);
    return dla_tensor_status(c->y);
}

static void clipped_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Clipped ReLU with ceiling %g", p->scale);
}

const dla__layer_kind dla__kind_clipped_relu = {
    .type = "clippedRelu", .display = "Clipped ReLU", .default_name = "clippedrelu",
    .fields = ceiling_fields, .check = clipped_check, .init = init_none,
    .forward = clipped_forward, .describe = clipped_describe,
};

DLA_API dla_layer *dla_clipped_relu_layer(double ceiling, const dla_layer_options *opts)
{
    return plain(&dla__kind_clipped_relu, &(dla__props){.scale = ceiling}, opts);
}

/* ---------------------------------------------------------------- dropout */

static dla_status probability_check(const char *type, const dla__props *p, const char *name)
{
    if (!(p->scale >= 0 && p->scale < 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Probability %g must be in "
                            "[0, 1)", type, name, p->scale);
    return DLA_OK;
}

static dla_status dropout_check(const dla__props *p, const char *name)
{
    return probability_check("dropout", p, name);
}

static dla_status dropout_forward(const dla__props *p, dla__call *c)
{
    c->y = c->training ? dla__share_dropout(c->x[0], p->scale) : c->x[0];
    return dla_tensor_status(c->y);
}

static void dropout_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "%g%% dropout", 100 * p->scale);
}

const dla__layer_kind dla__kind_dropout = {
    .type = "dropout", .display = "Dropout", .default_name = "dropout", .fields = prob_fields,
    .check = dropout_check, .init = init_none, .forward = dropout_forward,
    .describe = dropout_describe,
};

DLA_API dla_layer *dla_dropout_layer(double probability, const dla_layer_options *opts)
{
    return plain(&dla__kind_dropout, &(dla__props){.scale = probability}, opts);
}

/* --------------------------------------------------------- spatialDropout */

static dla_status spatial_check(const dla__props *p, const char *name)
{
    return probability_check("spatialDropout", p, name);
}

/* MATLAB's spatialDropoutLayer needs the channels to drop. */
static dla_status spatial_init(const dla_layer *l, int nin, const dla__shape *in,
                               dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)sink;
    if (!dla__shape_count(in, 'C'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; spatial dropout drops "
                            "channels, and it has no \"C\" dim", in->format);
    return DLA_OK;
}

/* In training, whole channels of each observation dropped: MATLAB draws
 * the mask as rand of x's size with every dim but "C" and "B" 1 and drops
 * where it is below Probability, which is dla_dropout of ones of that
 * size (the same draw, the kept ones scaled by 1 / (1 - Probability)),
 * broadcast over the rest. The gradient is multiplied by the same mask. */
static dla_status spatial_forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    if (!c->training) {
        c->y = x;
        return DLA_OK;
    }
    int64_t dims[DLA_MAX_DIMS];
    const int nd = dla_tensor_dims(x, dims);
    const char *f = dla_tensor_format(x);
    if (!strchr(f, 'C')) {
        c->y = dla__nn_error_tensor();
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; spatial dropout drops "
                            "channels, and it has no \"C\" dim", f);
    }
    for (int d = 0; d < nd; d++)
        if (f[d] != 'C' && f[d] != 'B')
            dims[d] = 1;
    dla_tensor *ones = dla_tensor_to_device(dla_ones(dla_tensor_dtype(x), f, nd, dims),
                                            dla_tensor_device(x));
    c->y = dla_mul(x, dla__share_dropout(ones, p->scale));
    return dla_tensor_status(c->y);
}

static void spatial_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "%g%% spatial dropout", 100 * p->scale);
}

const dla__layer_kind dla__kind_spatial_dropout = {
    .type = "spatialDropout", .display = "Spatial Dropout", .default_name = "spatialdrop",
    .fields = prob_fields, .check = spatial_check, .init = spatial_init,
    .forward = spatial_forward, .describe = spatial_describe,
};

DLA_API dla_layer *dla_spatial_dropout_layer(double probability, const dla_layer_options *opts)
{
    return plain(&dla__kind_spatial_dropout, &(dla__props){.scale = probability}, opts);
}

/* ---------------------------------------------------------------- softmax */

static dla_status softmax_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_softmax(c->x[0]);
    return dla_tensor_status(c->y);
}

static void softmax_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)p;
    (void)in;
    snprintf(buf, size, "softmax");
}

const dla__layer_kind dla__kind_softmax = {
    .type = "softmax", .display = "Softmax", .default_name = "softmax", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = softmax_forward,
    .describe = softmax_describe,
};

DLA_API dla_layer *dla_softmax_layer(const dla_layer_options *opts)
{
    return plain(&dla__kind_softmax, &(dla__props){0}, opts);
}

/* ---------------------------------------------------------------- flatten */

static dla_status flatten_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    if (!strchr(f, 'S')) {
        c->y = x;
        return dla_tensor_status(x);
    }
    /* Canonical order puts S..., C first: they are the leading dims. */
    int64_t inner = 1, b = 1, t = 1;
    int has_b = 0, has_t = 0;
    for (int i = 0; f[i]; i++) {
        int64_t n = dla_tensor_dim(x, i + 1);
        if (f[i] == 'S' || f[i] == 'C')
            inner *= n;
        else if (f[i] == 'B')
            b = n, has_b = 1;
        else if (f[i] == 'T')
            t = n, has_t = 1;
        else {
            dla__nn_fail(DLA_ERR_FORMAT, "flatten: the input \"%s\" has a \"%c\" dim", f, f[i]);
            c->y = dla__nn_error_tensor();
            return DLA_ERR_FORMAT;
        }
    }
    (void)has_b;
    c->y = has_t ? dla_reshape(x, "CBT", DLA_DIMS(inner, b, t)) : dla_reshape(x, "CB", DLA_DIMS(inner, b));
    return dla_tensor_status(c->y);
}

static void flatten_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)p;
    (void)in;
    snprintf(buf, size, "Flatten");
}

const dla__layer_kind dla__kind_flatten = {
    .type = "flatten", .display = "Flatten", .default_name = "flatten", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = flatten_forward,
    .describe = flatten_describe,
};

DLA_API dla_layer *dla_flatten_layer(const dla_layer_options *opts)
{
    return plain(&dla__kind_flatten, &(dla__props){0}, opts);
}

/*
 * layer_smooth.c - smooth activation layers, without learnables: tanh,
 * sigmoid, swish (x .* sigmoid(x)), elu and gelu. Smooth where relu is
 * not: their second derivatives are what a physics-informed loss or a
 * gradient penalty differentiates.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field no_fields[] = {{NULL, 0, 0, 0}};
static const dla__field alpha_fields[] = {F("Alpha", DLA__F_DOUBLE, scale, 1), {NULL, 0, 0, 0}};
static const dla__field gelu_fields[] = {F("Approximation", DLA__F_STRING, mode, 1),
                                         {NULL, 0, 0, 0}};

static dla_status check_none(const dla__props *p, const char *name)
{
    (void)p, (void)name;
    return DLA_OK;
}

static dla_status init_none(const dla_layer *l, int nin, const dla__shape *in,
                            dla__param_sink *sink)
{
    (void)l, (void)nin, (void)in, (void)sink;
    return DLA_OK;
}

/* The description of a layer that says only what it is. */
#define DESCRIBE_AS(fn, text)                                                                      \
    static void fn(const dla__props *p, const dla__shape *in, char *buf, size_t size)             \
    {                                                                                              \
        (void)p, (void)in;                                                                         \
        snprintf(buf, size, text);                                                                 \
    }

/* ------------------------------------------------------- tanh, sigmoid */

static dla_status tanh_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_tanh(c->x[0]);
    return dla_tensor_status(c->y);
}
DESCRIBE_AS(tanh_describe, "Hyperbolic tangent")

const dla__layer_kind dla__kind_tanh = {
    .type = "tanh", .display = "Tanh", .default_name = "tanh", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = tanh_forward, .describe = tanh_describe,
};

DLA_API dla_layer *dla_tanh_layer(const dla_layer_options *opts)
{
    return dla__layer_new(&dla__kind_tanh, opts ? opts->name : NULL, 1, &(dla__props){0}, DLA_OK);
}

static dla_status sigmoid_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_sigmoid(c->x[0]);
    return dla_tensor_status(c->y);
}
DESCRIBE_AS(sigmoid_describe, "sigmoid")

const dla__layer_kind dla__kind_sigmoid = {
    .type = "sigmoid", .display = "Sigmoid", .default_name = "sigmoid", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = sigmoid_forward,
    .describe = sigmoid_describe,
};

DLA_API dla_layer *dla_sigmoid_layer(const dla_layer_options *opts)
{
    return dla__layer_new(&dla__kind_sigmoid, opts ? opts->name : NULL, 1, &(dla__props){0},
                          DLA_OK);
}

/* ----------------------------------------------------------------- swish */

static dla_status swish_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_mul(c->x[0], dla_sigmoid(c->x[0]));
    return dla_tensor_status(c->y);
}
DESCRIBE_AS(swish_describe, "Swish")

const dla__layer_kind dla__kind_swish = {
    .type = "swish", .display = "Swish", .default_name = "swish", .fields = no_fields,
    .check = check_none, .init = init_none, .forward = swish_forward, .describe = swish_describe,
};

DLA_API dla_layer *dla_swish_layer(const dla_layer_options *opts)
{
    return dla__layer_new(&dla__kind_swish, opts ? opts->name : NULL, 1, &(dla__props){0},
                          DLA_OK);
}

/* ------------------------------------------------------------------- elu */

static dla_status elu_check(const dla__props *p, const char *name)
{
    if (!isfinite(p->scale))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "elu '%s': Alpha %g must be finite", name,
                            p->scale);
    return DLA_OK;
}

static dla_status elu_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_elu(c->x[0], p->scale);
    return dla_tensor_status(c->y);
}

static void elu_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "ELU with Alpha %g", p->scale);
}

const dla__layer_kind dla__kind_elu = {
    .type = "elu", .display = "ELU", .default_name = "elu", .fields = alpha_fields,
    .check = elu_check, .init = init_none, .forward = elu_forward, .describe = elu_describe,
};

DLA_API dla_layer *dla_elu_layer(double alpha, const dla_layer_options *opts)
{
    return dla__layer_new(&dla__kind_elu, opts ? opts->name : NULL, 1,
                          &(dla__props){.scale = alpha}, DLA_OK);
}

/* ------------------------------------------------------------------ gelu */

static dla_status gelu_check(const dla__props *p, const char *name)
{
    if (strcmp(p->mode, "none") != 0 && strcmp(p->mode, "tanh") != 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "gelu '%s': Approximation \"%s\"; use "
                            "\"none\" or \"tanh\"", name, p->mode);
    return DLA_OK;
}

static dla_status gelu_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_gelu(c->x[0], p->mode);
    return dla_tensor_status(c->y);
}

static void gelu_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "GELU (approximation %s)", p->mode);
}

const dla__layer_kind dla__kind_gelu = {
    .type = "gelu", .display = "GELU", .default_name = "gelu", .fields = gelu_fields,
    .check = gelu_check, .init = init_none, .forward = gelu_forward, .describe = gelu_describe,
};

DLA_API dla_layer *dla_gelu_layer(const char *approximation, const dla_layer_options *opts)
{
    dla__props p = {0};
    dla_status st = dla__props_string(p.mode, approximation, "none", "gelu: Approximation");
    return dla__layer_new(&dla__kind_gelu, opts ? opts->name : NULL, 1, &p, st);
}

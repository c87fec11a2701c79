/*
 * layer_fc.c - fullyConnectedLayer on dla_fullyconnect: Weights
 * OutputSize x InputSize, where InputSize is the product of the input's
 * "S" and "C" dims (images are flattened column-major, as MATLAB does).
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields[] = {
    F("OutputSize", DLA__F_INT, count, 1),
    F("InputSize", DLA__F_INT, channels, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("fullyConnected", name, "OutputSize", p->count, 1, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size("fullyConnected", name, "InputSize", p->channels, 0, (int64_t)1 << 30);
    if (st != DLA_OK)
        return st;
    for (int k = 0; k < 2; k++)
        if (!dla__init_known(p->init[k], 0))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "fullyConnected '%s': %s \"%s\" is unknown",
                                name, k ? "BiasInitializer" : "WeightsInitializer", p->init[k]);
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const dla__props *p = &l->props;
    int64_t c = dla__shape_dim(in, 'C');
    if (!c)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; fullyConnected needs a \"C\" dim",
                            in->format);
    int64_t n = 1;
    for (int i = 0; in->format[i]; i++)
        if (in->format[i] == 'S' || in->format[i] == 'C')
            n *= in->dims[i];
    if (p->channels && p->channels != n)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld values per observation, InputSize "
                            "is %lld", (long long)n, (long long)p->channels);
    int64_t wd[2] = {p->count, n}, bd[2] = {p->count, 1};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, (double)n, (double)p->count);
    dla_status st = dla__param_add(sink, "Weights", DLA__LEARNABLE, w, 2, wd, 1);
    if (st != DLA_OK)
        return st;
    dla_tensor *b = dla__init_tensor(p->init[1], sink, 2, bd, (double)n, (double)p->count);
    return dla__param_add(sink, "Bias", DLA__LEARNABLE, b, 2, bd, 0);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_fullyconnect(c->x[0], c->p[0], c->p[1]);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "%lld fully connected layer", (long long)p->count);
}

const dla__layer_kind dla__kind_fc = {
    .type = "fullyConnected", .display = "Fully Connected", .default_name = "fc",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_fc_layer(int64_t output_size, const dla_fc_layer_options *opts)
{
    dla_fc_layer_options o = opts ? *opts : (dla_fc_layer_options){0};
    dla__props p = {0};
    p.count = output_size;
    p.channels = o.input_size;
    dla_status st = dla__props_string(p.init[0], o.weights_initializer, "glorot",
                                      "fullyConnected: WeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.bias_initializer, "zeros",
                               "fullyConnected: BiasInitializer");
    return dla__layer_new(&dla__kind_fc, o.name, 1, &p, st);
}

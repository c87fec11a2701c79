/*
 * layer_batchnorm.c - batchNormalizationLayer: learnable Offset and Scale,
 * state TrainedMean and TrainedVariance. Forward normalizes with the
 * batch's statistics and hands back the running ones updated
 * (dla_batchnorm_train); predict normalizes with the stored ones.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields[] = {
    F("Epsilon", DLA__F_DOUBLE, scale, 1),
    F("MeanDecay", DLA__F_DOUBLE, decay[0], 1),
    F("VarianceDecay", DLA__F_DOUBLE, decay[1], 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("OffsetInitializer", DLA__F_STRING, init[0], 1),
    F("ScaleInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static dla_status check(const dla__props *p, const char *name)
{
    if (!(p->scale > 0) || !(p->decay[0] > 0 && p->decay[0] <= 1) ||
        !(p->decay[1] > 0 && p->decay[1] <= 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "batchNormalization '%s': Epsilon %g must be "
                            "positive, MeanDecay %g and VarianceDecay %g in (0, 1]", name, p->scale,
                            p->decay[0], p->decay[1]);
    dla_status st = dla__layer_size("batchNormalization", name, "NumChannels", p->channels, 0,
                                    1 << 24);
    if (st != DLA_OK)
        return st;
    for (int k = 0; k < 2; k++)
        if (!dla__init_known(p->init[k], 0))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "batchNormalization '%s': %s \"%s\" is "
                                "unknown", name, k ? "ScaleInitializer" : "OffsetInitializer",
                                p->init[k]);
    return DLA_OK;
}

int dla__channel_param_dims(const dla__shape *in, int64_t c, int64_t *dims)
{
    /* MATLAB's shapes: 1x1xC after two S dims, Cx1 without S dims. */
    int n = 0, ns = dla__shape_count(in, 'S');
    for (int i = 0; i < ns && n < 3; i++)
        dims[n++] = 1;
    dims[n++] = c;
    if (n == 1)
        dims[n++] = 1;
    return n;
}

dla_status dla__norm_offset_scale(const dla_layer *l, const char *what, const dla__shape *in,
                                  dla__param_sink *sink, int64_t *dims, int *nd)
{
    const dla__props *p = &l->props;
    const int64_t c = dla__shape_dim(in, 'C');
    if (!c)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s needs a \"C\" dim",
                            in->format, what);
    if (p->channels && p->channels != c)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, NumChannels is %lld",
                            (long long)c, (long long)p->channels);
    const int n = dla__channel_param_dims(in, c, dims);
    *nd = n;
    static const char *const names[2] = {"Offset", "Scale"};
    for (int k = 0; k < 2; k++) {
        dla_tensor *v = dla__init_tensor(p->init[k], sink, n, dims, (double)c, (double)c);
        dla_status st = dla__param_add(sink, names[k], DLA__LEARNABLE, v, n, dims, 1);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    int64_t dims[4];
    int nd;
    dla_status st = dla__norm_offset_scale(l, "batch normalization", in, sink, dims, &nd);
    static const char *const names[2] = {"TrainedMean", "TrainedVariance"};
    for (int k = 0; k < 2 && st == DLA_OK; k++)
        st = dla__param_add(sink, names[k], DLA__STATE,
                            dla__init_tensor(k ? "ones" : "zeros", sink, nd, dims, 1, 1), nd, dims,
                            1);
    return st;
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_batchnorm_options o = {.epsilon = p->scale, .mean_decay = p->decay[0],
                               .variance_decay = p->decay[1]};
    if (!c->training) {
        c->y = dla_batchnorm(c->x[0], c->p[0], c->p[1], c->p[2], c->p[3], &o);
        return dla_tensor_status(c->y);
    }
    return dla_batchnorm_train(c->x[0], c->p[0], c->p[1], c->p[2], c->p[3], &o, &c->y,
                               &c->new_state[0], &c->new_state[1]);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    int64_t c = p->channels ? p->channels : in ? dla__shape_dim(in, 'C') : 0;
    if (c)
        snprintf(buf, size, "Batch normalization with %lld channels", (long long)c);
    else
        snprintf(buf, size, "Batch normalization");
}

const dla__layer_kind dla__kind_batchnorm = {
    .type = "batchNormalization", .display = "Batch Normalization", .default_name = "batchnorm",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_batchnorm_layer(const dla_batchnorm_layer_options *opts)
{
    dla_batchnorm_layer_options o = opts ? *opts : (dla_batchnorm_layer_options){0};
    dla__props p = {0};
    p.scale = o.epsilon ? o.epsilon : 1e-5;
    p.decay[0] = o.mean_decay ? o.mean_decay : 0.1;
    p.decay[1] = o.variance_decay ? o.variance_decay : 0.1;
    p.channels = o.num_channels;
    dla_status st = dla__props_string(p.init[0], o.offset_initializer, "zeros",
                                      "batchNormalization: OffsetInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.scale_initializer, "ones",
                               "batchNormalization: ScaleInitializer");
    return dla__layer_new(&dla__kind_batchnorm, o.name, 1, &p, st);
}

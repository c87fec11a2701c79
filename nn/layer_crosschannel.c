/*
 * layer_crosschannel.c - MATLAB's crossChannelNormalizationLayer: local
 * response normalization along C (dla_crosschannelnorm), no parameters.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "crossChannelNormalization";

/* count: WindowChannelSize; scale: Alpha; decay: Beta, K. */
static const dla__field fields[] = {
    F("WindowChannelSize", DLA__F_INT, count, 1),
    F("Alpha", DLA__F_DOUBLE, scale, 1),
    F("Beta", DLA__F_DOUBLE, decay[0], 1),
    F("K", DLA__F_DOUBLE, decay[1], 1),
    {NULL, 0, 0, 0},
};

/* MATLAB's bounds: a window of at most 16 channels, Beta >= 0.01, K >= 1e-5. */
static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size(type, name, "WindowChannelSize", p->count, 1, 16);
    if (st != DLA_OK)
        return st;
    if (!isfinite(p->scale))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Alpha %g must be finite", type,
                            name, p->scale);
    if (!(p->decay[0] >= 0.01) || !isfinite(p->decay[0]))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Beta %g must be finite and at "
                            "least 0.01", type, name, p->decay[0]);
    if (!(p->decay[1] >= 1e-5) || !isfinite(p->decay[1]))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': K %g must be finite and at "
                            "least 1e-5", type, name, p->decay[1]);
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)nin, (void)sink;
    if (!dla__shape_dim(in, 'C'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; cross-channel normalization "
                            "needs a \"C\" dim", in->format);
    return DLA_OK;
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    const dla_crosschannelnorm_options o = {.alpha = p->scale, .beta = p->decay[0],
                                            .k = p->decay[1]};
    c->y = dla_crosschannelnorm(c->x[0], p->count, &o);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "cross channel normalization with %lld channels per element",
             (long long)p->count);
}

const dla__layer_kind dla__kind_crosschannel = {
    .type = type, .display = "Cross Channel Normalization", .default_name = "crossnorm",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_crosschannelnorm_layer(int64_t window_channel_size,
                                              const dla_crosschannelnorm_layer_options *opts)
{
    dla__props p = {0};
    p.count = window_channel_size;
    p.scale = opts && opts->alpha != 0 ? opts->alpha : DLA_CROSSCHANNELNORM_ALPHA;
    p.decay[0] = opts && opts->beta != 0 ? opts->beta : DLA_CROSSCHANNELNORM_BETA;
    p.decay[1] = opts && opts->k != 0 ? opts->k : DLA_CROSSCHANNELNORM_K;
    return dla__layer_new(&dla__kind_crosschannel, opts ? opts->name : NULL, 1, &p, DLA_OK);
}

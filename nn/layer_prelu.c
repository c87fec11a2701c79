/*
 * layer_prelu.c - MATLAB's preluLayer: max(x, 0) + Alpha .* min(x, 0)
 * with Alpha learned. MATLAB's default is one scalar Alpha of 0.25 for
 * every value; PerChannel gives one Alpha a channel instead, in the dims
 * batchNormalizationLayer gives its Offset (1x1xC after two "S" dims, Cx1
 * without any), so that it broadcasts against the data as MATLAB's
 * implicit expansion would.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "prelu";

/* scale: the initial Alpha; count: PerChannel (0 or 1). */
static const dla__field fields[] = {
    F("Alpha", DLA__F_DOUBLE, scale, 1),
    F("PerChannel", DLA__F_INT, count, 1),
    {NULL, 0, 0, 0},
};

static dla_status check(const dla__props *p, const char *name)
{
    if (!isfinite(p->scale))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Alpha %g must be finite", type,
                            name, p->scale);
    return dla__layer_size(type, name, "PerChannel", p->count, 0, 1);
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const dla__props *p = &l->props;
    int64_t dims[4] = {1, 1};
    int n = 2;
    if (p->count) {
        const int64_t c = dla__shape_dim(in, 'C');
        if (!c)
            return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; an Alpha per channel "
                                "needs a \"C\" dim", in->format);
        n = dla__channel_param_dims(in, c, dims);
    }
    dla_tensor *alpha = dla__param_loading(sink)
                            ? NULL
                            : dla_full(p->scale, dla__param_dtype(sink), "", n, dims);
    return dla__param_add(sink, "Alpha", DLA__LEARNABLE, alpha, n, dims, 1);
}

/* relu(x) - Alpha .* relu(-x): the negative part scaled, in ops autodiff
 * and the replay's fused programs know. */
static dla_status forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    c->y = dla_sub(dla_relu(x), dla_mul(c->p[0], dla_relu(dla_neg(x))));
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    const int64_t ch = in ? dla__shape_dim(in, 'C') : 0;
    if (p->count && ch)
        snprintf(buf, size, "PReLU with an Alpha for each of %lld channels", (long long)ch);
    else if (p->count)
        snprintf(buf, size, "PReLU with an Alpha a channel");
    else
        snprintf(buf, size, "PReLU");
}

const dla__layer_kind dla__kind_prelu = {
    .type = "prelu", .display = "PReLU", .default_name = "prelu", .fields = fields,
    .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_prelu_layer(double alpha, const dla_prelu_layer_options *opts)
{
    dla__props p = {0};
    p.scale = alpha;
    p.count = opts ? opts->per_channel : 0;
    return dla__layer_new(&dla__kind_prelu, opts ? opts->name : NULL, 1, &p, DLA_OK);
}

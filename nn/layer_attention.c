/*
 * layer_attention.c - selfAttentionLayer: the queries, keys and values
 * are fully connected projections of the input ("CBT" sequences, or "CB"
 * steps of one), dla_attention combines them over numHeads heads
 * (optionally causal), and a last projection gives OutputSize channels.
 * Learnables in MATLAB's names and dims: QueryWeights numKeyChannels x
 * InputSize, QueryBias numKeyChannels x 1, KeyWeights/KeyBias alike,
 * ValueWeights numValueChannels x InputSize, ValueBias, OutputWeights
 * OutputSize x numValueChannels, OutputBias. HasPaddingMaskInput adds a
 * second input, "mask" (nn/layer_mask.c): padded steps are no key of any
 * query, and enter the projections as 0 (their own outputs are made, from
 * those zeros, and are for later layers to leave out, as the masked
 * global poolings do).
 */
#include "nn/nn.h"
#include "core/attention.h"

#include <dlaccel/nnops.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

/* count: NumHeads; size: NumKeyChannels, NumValueChannels, OutputSize
 * (0: NumKeyChannels, and the input's channels); channels: InputSize;
 * dim: HasPaddingMaskInput; scale: DropoutProbability. */
static const dla__field fields[] = {
    F("NumHeads", DLA__F_INT, count, 1),
    F("NumKeyChannels", DLA__F_INT, size[0], 1),
    F("NumValueChannels", DLA__F_INT, size[1], 1),
    F("OutputSize", DLA__F_INT, size[2], 1),
    F("InputSize", DLA__F_INT, channels, 1),
    F("AttentionMask", DLA__F_STRING, mode, 1),
    {"HasPaddingMaskInput", DLA__F_INT, offsetof(dla__props, dim), 1},
    F("DropoutProbability", DLA__F_DOUBLE, scale, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const char TYPE[] = "selfAttention";

static int64_t value_channels(const dla__props *p) { return p->size[1] ? p->size[1] : p->size[0]; }

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size(TYPE, name, "NumHeads", p->count, 1, 1 << 16);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "NumKeyChannels", p->size[0], 1, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "NumValueChannels", p->size[1], 0, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "OutputSize", p->size[2], 0, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "InputSize", p->channels, 0, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "HasPaddingMaskInput", p->dim, 0, 1);
    if (st != DLA_OK)
        return st;
    if (!(p->scale >= 0 && p->scale < 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': DropoutProbability %g must be "
                            "in [0, 1)", TYPE, name, p->scale);
    if (p->size[0] % p->count || value_channels(p) % p->count)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': NumHeads %lld must divide "
                            "NumKeyChannels (%lld) and NumValueChannels (%lld)", TYPE, name,
                            (long long)p->count, (long long)p->size[0],
                            (long long)value_channels(p));
    if (strcmp(p->mode, "none") && strcmp(p->mode, "causal"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': AttentionMask \"%s\"; use "
                            "\"none\" or \"causal\"", TYPE, name, p->mode);
    for (int k = 0; k < 2; k++)
        if (!dla__init_known(p->init[k], 0))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s \"%s\" is unknown", TYPE,
                                name, k ? "BiasInitializer" : "WeightsInitializer", p->init[k]);
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const dla__props *p = &l->props;
    const int64_t c = dla__shape_dim(in, 'C');
    if (!c || dla__shape_count(in, 'S') || dla__shape_count(in, 'U'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences "
                            "(or \"CB\")", in->format, TYPE);
    if (p->channels && p->channels != c)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, InputSize is %lld",
                            (long long)c, (long long)p->channels);
    dla_status mst = dla__mask_check_init(l, in);
    if (mst != DLA_OK)
        return mst;
    const int64_t dk = p->size[0], dv = value_channels(p), out = p->size[2] ? p->size[2] : c;
    /* rows x columns of each projection: queries, keys, values, output */
    const int64_t shape[4][2] = {{dk, c}, {dk, c}, {dv, c}, {out, dv}};
    static const char *const names[4][2] = {{"QueryWeights", "QueryBias"},
                                            {"KeyWeights", "KeyBias"},
                                            {"ValueWeights", "ValueBias"},
                                            {"OutputWeights", "OutputBias"}};
    for (int k = 0; k < 4; k++) {
        const int64_t wd[2] = {shape[k][0], shape[k][1]}, bd[2] = {shape[k][0], 1};
        const double fan_in = (double)shape[k][1], fan_out = (double)shape[k][0];
        dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, fan_in, fan_out);
        dla_status st = dla__param_add(sink, names[k][0], DLA__LEARNABLE, w, 2, wd, 1);
        if (st != DLA_OK)
            return st;
        dla_tensor *b = dla__init_tensor(p->init[1], sink, 2, bd, fan_in, fan_out);
        if ((st = dla__param_add(sink, names[k][1], DLA__LEARNABLE, b, 2, bd, 0)) != DLA_OK)
            return st;
    }
    return DLA_OK;
}

/* The weights Lk x Lq x heads x B: their observations along dim 4. */
static dla_tensor *drop_weights(dla_tensor *a, double prob)
{
    return dla__share_dropout_along(a, prob, 4);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    if (strcmp(f, "CBT") && strcmp(f, "CB")) {
        dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences (or "
                     "\"CB\")", f, TYPE);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_FORMAT;
    }
    dla_tensor *keys = NULL; /* Lk x 1 x 1 x B: the same keys for every query */
    if (c->nx > 1) {
        dla_tensor *m = dla__mask_steps(c);
        if (dla_tensor_status(m) != DLA_OK) {
            c->y = m;
            return dla_tensor_status(m);
        }
        keys = dla__mask_keys(m);
        /* The padded steps as 0: a padded key weighs 0, but a NaN or Inf
         * held there still reached every query of its observation, as
         * 0 * NaN in the weighted values and as a NaN score, and the
         * gradients through the padded queries too. */
        x = dla__mask_zero_padding(m, x);
    }
    dla_tensor *q = dla_fullyconnect(x, c->p[0], c->p[1]);
    dla_tensor *k = dla_fullyconnect(x, c->p[2], c->p[3]);
    dla_tensor *v = dla_fullyconnect(x, c->p[4], c->p[5]);
    /* The attention weights' dropout is training's alone, as dropoutLayer's,
     * drawn for the whole mini-batch on a worker of trainnet "parallel". */
    dla_tensor *y = dla__attention_with(
        q, k, v, p->count,
        &(dla_attention_options){.attention_mask = p->mode, .mask = keys,
                                 .dropout_probability = c->training ? p->scale : 0},
        NULL, drop_weights);
    c->y = dla_fullyconnect(y, c->p[6], c->p[7]);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    char drop[48] = "";
    if (p->scale > 0)
        snprintf(drop, sizeof drop, ", dropout %g", p->scale);
    snprintf(buf, size, "%lld heads, %lld key and %lld value channels%s%s%s", (long long)p->count,
             (long long)p->size[0], (long long)value_channels(p),
             strcmp(p->mode, "causal") ? "" : ", causal", p->dim ? ", padding mask" : "", drop);
}

const dla__layer_kind dla__kind_self_attention = {
    .type = TYPE, .display = "Self-Attention", .default_name = "selfattention",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
    .mask_port = 1,
};

DLA_API dla_layer *dla_self_attention_layer(int64_t num_heads, int64_t num_key_channels,
                                            const dla_self_attention_layer_options *opts)
{
    dla_self_attention_layer_options o = opts ? *opts : (dla_self_attention_layer_options){0};
    dla__props p = {0};
    p.count = num_heads;
    p.size[0] = num_key_channels;
    p.size[1] = o.num_value_channels;
    p.size[2] = o.output_size;
    p.channels = o.input_size;
    p.dim = o.has_padding_mask_input;
    p.scale = o.dropout_probability;
    dla_status st = dla__props_string(p.mode, o.attention_mask, "none",
                                      "selfAttention: AttentionMask");
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.weights_initializer, "glorot",
                               "selfAttention: WeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.bias_initializer, "zeros",
                               "selfAttention: BiasInitializer");
    return dla__layer_new(&dla__kind_self_attention, o.name, p.dim ? 2 : 1, &p, st);
}

/*
 * layer_attention_cross.c - attentionLayer: dla_attention of three inputs,
 * "query", "key" and "value", over NumHeads heads, with no learnables (the
 * projections are the layers before it, as in MATLAB): cross-attention of
 * a decoder's queries over an encoder's keys and values, or self-attention
 * built by hand. HasPaddingMaskInput adds a fourth input, "mask", the
 * padding mask of the key sequence (nn/layer_mask.c): padded keys weigh 0
 * for every query and enter as zeros, as selfAttention's do.
 *
 * Options as MATLAB's properties: NumHeads, Scale (0: MATLAB's "auto",
 * 1/sqrt of the key channels per head), AttentionMask "none" or "causal",
 * HasPaddingMaskInput, DropoutProbability (of the attention weights, in
 * training). Not supported: HasScoresOutput.
 */
#include "nn/nn.h"
#include "core/attention.h"

#include <dlaccel/nnops.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields[] = {
    F("NumHeads", DLA__F_INT, count, 1),
    F("Scale", DLA__F_DOUBLE, decay[0], 1),
    F("AttentionMask", DLA__F_STRING, mode, 1),
    F("HasPaddingMaskInput", DLA__F_INT, dim, 1),
    F("DropoutProbability", DLA__F_DOUBLE, scale, 1),
    {NULL, 0, 0, 0},
};

static const char TYPE[] = "attention";
static const char *const ports[] = {"query", "key", "value", "mask"};

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size(TYPE, name, "NumHeads", p->count, 1, 1 << 16);
    if (st == DLA_OK)
        st = dla__layer_size(TYPE, name, "HasPaddingMaskInput", p->dim, 0, 1);
    if (st != DLA_OK)
        return st;
    if (!isfinite(p->decay[0]))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Scale %g must be finite (0: "
                            "\"auto\")", TYPE, name, p->decay[0]);
    if (!(p->scale >= 0 && p->scale < 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': DropoutProbability %g must be "
                            "in [0, 1)", TYPE, name, p->scale);
    if (strcmp(p->mode, "none") && strcmp(p->mode, "causal"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': AttentionMask \"%s\"; use "
                            "\"none\" or \"causal\"", TYPE, name, p->mode);
    return DLA_OK;
}

static int count_inputs(const dla__props *p)
{
    return p->dim ? 4 : 3;
}

/* The three of one format, "CBT" or "CB" (dla_attention checks the sizes
 * at the trial run that follows). */
static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)sink;
    for (int k = 0; k < 3; k++)
        if ((strcmp(in[k].format, "CBT") && strcmp(in[k].format, "CB")) ||
            strcmp(in[k].format, in[0].format))
            return dla__nn_fail(DLA_ERR_FORMAT, "the inputs are \"%s\" (query), \"%s\" (key) "
                                "and \"%s\" (value); %s takes three of one format, \"CBT\" "
                                "sequences (or \"CB\")", in[0].format, in[1].format,
                                in[2].format, TYPE);
    return nin > 3 ? dla__mask_check_formats(&in[1], &in[3], "key") : DLA_OK;
}

/* The weights Lk x Lq x heads x B: their observations along dim 4. */
static dla_tensor *drop_weights(dla_tensor *a, double prob)
{
    return dla__share_dropout_along(a, prob, 4);
}

/* Nonzero when a and b have the same dims but for the first ("C"). */
static int same_steps(const dla_tensor *a, const dla_tensor *b)
{
    const int na = dla_tensor_ndims(a), nb = dla_tensor_ndims(b);
    for (int d = 2; d <= (na > nb ? na : nb); d++)
        if (dla_tensor_dim(a, d) != dla_tensor_dim(b, d))
            return 0;
    return 1;
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_tensor *q = c->x[0], *k = c->x[1], *v = c->x[2];
    dla_tensor *keys = NULL; /* Lk x 1 x 1 x B: the same keys for every query */
    if (c->nx > 3) {
        dla_tensor *m = dla__mask_steps_of(k, c->x[3], "key");
        if (dla_tensor_status(m) != DLA_OK) {
            c->y = m;
            return dla_tensor_status(m);
        }
        keys = dla__mask_keys(m);
        /* Padded keys and values as 0, so that a NaN or Inf held there
         * reaches no query. Values of other observations or steps than the
         * keys are left for dla_attention to refuse: zeroing them with the
         * keys' mask broadcast a single step (or observation) of values
         * over every key, a network the same inputs without the mask
         * refuse. */
        k = dla__mask_zero_padding(m, k);
        if (same_steps(k, v))
            v = dla__mask_zero_padding(m, v);
    }
    /* The dropout is training's alone, as dropoutLayer's. */
    c->y = dla__attention_with(
        q, k, v, p->count,
        &(dla_attention_options){.scale = p->decay[0], .attention_mask = p->mode, .mask = keys,
                                 .dropout_probability = c->training ? p->scale : 0},
        NULL, drop_weights);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    char scale[48] = "", drop[48] = "";
    if (p->decay[0] != 0)
        snprintf(scale, sizeof scale, ", scale %g", p->decay[0]);
    if (p->scale > 0)
        snprintf(drop, sizeof drop, ", dropout %g", p->scale);
    snprintf(buf, size, "%lld-head attention%s%s%s%s", (long long)p->count, scale,
             strcmp(p->mode, "causal") ? "" : ", causal", p->dim ? ", padding mask" : "", drop);
}

const dla__layer_kind dla__kind_attention = {
    .type = TYPE, .display = "Attention", .default_name = "attention", .fields = fields,
    .in_names = ports, .mask_of = 1, .count_inputs = count_inputs, .check = check,
    .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_attention_layer(int64_t num_heads, const dla_attention_layer_options *opts)
{
    dla_attention_layer_options o = opts ? *opts : (dla_attention_layer_options){0};
    dla__props p = {0};
    p.count = num_heads;
    p.decay[0] = o.scale;
    p.dim = o.has_padding_mask_input;
    p.scale = o.dropout_probability;
    dla_status st = dla__props_string(p.mode, o.attention_mask, "none",
                                      "attention: AttentionMask");
    return dla__layer_new(&dla__kind_attention, o.name, count_inputs(&p), &p, st);
}

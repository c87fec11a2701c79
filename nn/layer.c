/*
 * layer.c - what every layer shares: construction from validated options
 * (an error layer when they are refused, so a constructor never needs
 * checking on its own), freeing, and the registry of kinds by type name
 * that loading uses.
 */
#include "nn/nn.h"

#include "core/handle.h" /* the handle checks, shared with the core (docs/checks.md) */

#include <stdio.h>
#include <string.h>

static const dla__layer_kind *const kinds[] = {
    &dla__kind_image_input, &dla__kind_sequence_input, &dla__kind_conv1d, &dla__kind_conv2d,
    &dla__kind_batchnorm, &dla__kind_relu, &dla__kind_leakyrelu, &dla__kind_dropout,
    &dla__kind_softmax, &dla__kind_flatten, &dla__kind_maxpool2d, &dla__kind_avgpool2d,
    &dla__kind_gmaxpool1d, &dla__kind_gavgpool1d, &dla__kind_gmaxpool2d, &dla__kind_gavgpool2d,
    &dla__kind_fc, &dla__kind_addition, &dla__kind_concatenation, &dla__kind_lstm,
    &dla__kind_tanh, &dla__kind_sigmoid, &dla__kind_swish, &dla__kind_elu, &dla__kind_gelu,
    &dla__kind_layernorm, &dla__kind_groupnorm, &dla__kind_instancenorm,
    &dla__kind_feature_input, &dla__kind_tconv1d, &dla__kind_tconv2d,
    &dla__kind_self_attention, &dla__kind_gru, &dla__kind_sinusoidal,
    &dla__kind_position_embedding, &dla__kind_resize2d, &dla__kind_bilstm,
    &dla__kind_maxpool1d, &dla__kind_avgpool1d, &dla__kind_gconv2d, &dla__kind_multiplication,
    &dla__kind_depth_concatenation, &dla__kind_clipped_relu, &dla__kind_spatial_dropout,
    &dla__kind_image3d_input, &dla__kind_conv3d, &dla__kind_tconv3d, &dla__kind_maxpool3d,
    &dla__kind_avgpool3d, &dla__kind_gmaxpool3d, &dla__kind_gavgpool3d, &dla__kind_word_embedding,
    &dla__kind_prelu, &dla__kind_indexing1d, &dla__kind_crosschannel, &dla__kind_crop2d,
    &dla__kind_depth_to_space2d, &dla__kind_space_to_depth, &dla__kind_resize3d,
    &dla__kind_crop3d, &dla__kind_attention,
};

const dla__layer_kind *dla__layer_kind_find(const char *type)
{
    for (size_t i = 0; type && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i]->type, type))
            return kinds[i];
    return dla__custom_kind_find(type);
}

int dla__layer_live(const dla_layer *layer)
{
    return layer && layer->magic == DLA__HANDLE_LAYER;
}

dla_status dla__props_string(char *dst, const char *s, const char *fallback, const char *what)
{
    if (!s || !*s)
        s = fallback ? fallback : "";
    if (strlen(s) >= DLA__STR)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: \"%.40s...\" is too long", what, s);
    snprintf(dst, DLA__STR, "%s", s);
    return DLA_OK;
}

dla_status dla__layer_size(const char *type, const char *name, const char *prop, int64_t v,
                           int64_t lo, int64_t hi)
{
    if (v < lo)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s %lld must be %s", type, name,
                            prop, (long long)v, lo == 1 ? "positive" : ">= 0");
    if (v > hi)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s %lld is too large (at most "
                            "%lld)", type, name, prop, (long long)v, (long long)hi);
    return DLA_OK;
}

/* Nonzero when s is UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). A network's architecture, in its files and its
 * signature, is JSON text, which holds nothing else. */
static int is_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++, n, cp;
        if (c < 0x80)
            continue;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3, cp = c & 0x07;
        else
            return 0;
        for (unsigned i = 0; i < n; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return 0; /* also the terminating NUL */
            cp = cp << 6 | (*p & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
    }
    return 1;
}

dla_layer *dla__layer_new(const dla__layer_kind *kind, const char *name, int nin,
                          const dla__props *props, dla_status pre)
{
    dla_layer *l = dla__nn_calloc(1, sizeof *l);
    if (!l) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s layer: out of memory", kind->type);
        return NULL;
    }
    l->magic = DLA__HANDLE_LAYER;
    l->kind = kind;
    l->nin = nin;
    l->nout = dla__kind_outputs(kind, props);
    l->props = *props;
    l->props.custom_type = kind->custom;
    l->name = dla__nn_strdup(name ? name : "");
    dla_status st = !l->name ? dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s layer: out of memory",
                                            kind->type)
                             : pre;
    /* Control characters (escape sequences among them) reached the
     * terminal as they were through dla_net_print and `dlaccel net` of a
     * crafted file; no name needs them. A tab is kept (names with tabs
     * went through files before), and UTF-8's C1 controls (U+0080 to
     * U+009F, CSI among them) go as the C0 ones. Checked first: the
     * messages below show the name. */
    for (const unsigned char *c = (const unsigned char *)l->name; st == DLA_OK && *c; c++) {
        const int c1 = c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f;
        if ((*c < 0x20 && *c != '\t') || *c == 0x7f || c1)
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s layer: the name has the control "
                              "character 0x%02x at byte %d; a layer name is printable text",
                              kind->type, c1 ? c[1] : *c,
                              (int)(c - (const unsigned char *)l->name) + 1);
    }
    if (st == DLA_OK && strchr(l->name, '/'))
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s layer '%s': a layer name may not contain "
                          "'/' (it separates a layer from its input in connections)", kind->type,
                          l->name);
    if (st == DLA_OK && !is_utf8(l->name))
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s layer '%s': the name is not UTF-8 text "
                          "(a network's architecture, as saved, is JSON, which holds only UTF-8)",
                          kind->type, l->name);
    if (st == DLA_OK)
        st = kind->check(&l->props, l->name);
    if (st != DLA_OK) {
        l->status = st;
        l->message = dla__nn_strdup(dla_last_error());
    }
    return l;
}

void dla__layer_destroy(dla_layer *layer)
{
    if (!layer)
        return;
    dla_tensor_release(layer->given[0]);
    dla_tensor_release(layer->given[1]);
    dla__nn_free(layer->name);
    dla__nn_free(layer->message);
    /* Poisoned and parked, not freed: a stale pointer reads "dead". */
    layer->magic = DLA__HANDLE_DEAD;
    layer->name = NULL;
    layer->message = NULL;
    layer->given[0] = layer->given[1] = NULL;
    dla__quarantine(DLA__RING_OBJECTS, layer);
}

/* Nonzero when layer is live; otherwise logs why for fn. */
static int layer_live(const dla_layer *layer, const char *fn)
{
    if (layer->magic == DLA__HANDLE_LAYER)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", fn, (const void *)layer,
                layer->magic == DLA__HANDLE_DEAD ? "a layer freed already (freed twice, or used "
                "after its network was freed)" : "not a layer handle");
    return 0;
}

DLA_API void dla_layer_free(dla_layer *layer)
{
    if (!layer || !layer_live(layer, "dla_layer_free"))
        return;
    if (layer->owned) {
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "dla_layer_free: layer '%s' belongs to a network, "
                    "which frees it (dla_net_free); it is left alone", layer->name);
        return;
    }
    dla__layer_destroy(layer);
}

DLA_API dla_status dla_layer_status(const dla_layer *layer)
{
    if (layer && layer->magic != DLA__HANDLE_LAYER)
        return DLA_ERR_INVALID_ARGUMENT;
    return layer ? layer->status : DLA_ERR_OUT_OF_MEMORY;
}

DLA_API const char *dla_layer_error(const dla_layer *layer)
{
    if (layer && layer->magic != DLA__HANDLE_LAYER)
        return "not a live layer (freed already, or not a layer handle)";
    return !layer ? "out of memory" : layer->message ? layer->message : "";
}

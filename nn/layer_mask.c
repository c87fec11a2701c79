/*
 * layer_mask.c - MATLAB's HasPaddingMaskInput: a layer with a second
 * input, "mask", that says which steps of its input "in" are data
 * (attentionLayer: a fourth, for its input "key")
 * (nonzero in the mask's first channel) and which are padding (0). The
 * mask has the input's layout: its format, observations and steps, any
 * number of channels. selfAttention gives padded keys no weight and the
 * 1-D global poolings leave padded steps out. The mask is a constant to
 * the gradient (a comparison).
 */
#include "nn/nn.h"

#include <dlaccel/loss.h>
#include <stdio.h>
#include <string.h>

/* Nonzero when a and b have the same format and dims, "C" aside. */
static int fits(const dla__shape *a, const dla__shape *b)
{
    if (a->ndims != b->ndims || strcmp(a->format, b->format))
        return 0;
    for (int i = 0; i < a->ndims; i++)
        if (a->format[i] != 'C' && a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

static dla_status misfit(const dla__shape *x, const dla__shape *m, const char *xname)
{
    char a[256], b[256];
    dla__shape_str(x, a, sizeof a);
    dla__shape_str(m, b, sizeof b);
    return dla__nn_fail(DLA_ERR_SHAPE, "input \"mask\" is %s \"%s\", input \"%s\" %s \"%s\"; "
                        "the padding mask needs the %s input's format, observations and steps "
                        "(any channels: the first is read, nonzero for data, 0 for padding)",
                        b, m->format, xname, a, x->format, xname);
}

dla_status dla__mask_check_formats(const dla__shape *x, const dla__shape *m, const char *xname)
{
    if (!dla__shape_dim(m, 'C') || strcmp(x->format, m->format))
        return misfit(x, m, xname);
    return DLA_OK;
}

/* At initialization the formats only: an input layer sizes itself (one
 * observation of MinLength steps) while an example given for an
 * unconnected mask port has its own dims. */
dla_status dla__mask_check_init(const dla_layer *l, const dla__shape *in)
{
    return l->nin < 2 ? DLA_OK : dla__mask_check_formats(&in[0], &in[1], "in");
}

dla_tensor *dla__mask_steps_of(dla_tensor *x, dla_tensor *m, const char *xname)
{
    dla__shape xs, ms;
    dla__shape_of(x, &xs);
    dla__shape_of(m, &ms);
    if (dla_tensor_status(m) != DLA_OK)
        return m;
    if (!dla__shape_dim(&ms, 'C') || !fits(&xs, &ms)) {
        misfit(&xs, &ms, xname);
        return dla__nn_error_tensor();
    }
    /* The first channel ("C" leads the canonical order), as 0/1. */
    const int cdim = (int)(strchr(ms.format, 'C') - ms.format) + 1;
    dla_tensor *first = dla_slice(m, cdim, 0, 1, 1);
    return dla_cast(dla_cast(first, DLA_BOOL), dla_tensor_dtype(x));
}

dla_tensor *dla__mask_steps(const dla__call *c)
{
    return dla__mask_steps_of(c->x[0], c->x[1], "in");
}

dla_tensor *dla__mask_keys(dla_tensor *m)
{
    const int64_t b = dla_tensor_dim(m, 2);
    const int64_t t = strchr(dla_tensor_format(m), 'T') ? dla_tensor_dim(m, 3) : 1;
    return dla_reshape(dla_permute(dla_reshape(m, "", DLA_DIMS(1, b, t)), 3,
                                   (const int64_t[]){3, 1, 2}),
                       "", DLA_DIMS(t, 1, 1, b));
}

dla_tensor *dla__mask_zero_padding(dla_tensor *m, dla_tensor *x)
{
    dla_device *prev = dla__nn_device_use(dla_tensor_device(x));
    dla_tensor *zero = dla_zeros(dla_tensor_dtype(x), "", 0, NULL);
    dla__nn_device_restore(prev);
    return dla_where(m, x, zero);
}

void dla__mask_unfed_hint(const dla_net *net, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < dla_net_input_count(net); i++) {
        const char *name = dla_net_input_name(net, i);
        const char *slash = name ? strrchr(name, '/') : NULL;
        if (!slash || strcmp(slash, "/mask"))
            continue;
        for (int k = 0; k < net->nlayers; k++) {
            const dla_layer *l = net->layers[k];
            const char *last = dla__in_port(l, l->nin - 1);
            if (last && !strcmp(last, "mask") && strlen(l->name) == (size_t)(slash - name) &&
                !strncmp(l->name, name, (size_t)(slash - name))) {
                snprintf(buf, size, "; the padding mask input \"%s\" is not connected: connect "
                         "a layer to it (dla_net_connect; the sequence input layer, for token "
                         "sequences padded with 0; docs/networks.md, \"Padding masks\")", name);
                return;
            }
        }
    }
    size_t len = 0;
    for (int io = 0; io < 2; io++) {
        const int n = io ? dla_net_output_count(net) : dla_net_input_count(net);
        for (int i = 0; i < n && len < size; i++) {
            const char *name = io ? dla_net_output_name(net, i) : dla_net_input_name(net, i);
            int w = snprintf(buf + len, size - len, "%s\"%s\"", i ? ", " : io ? "; outputs " : "; inputs ",
                             name ? name : "?");
            len += w > 0 ? (size_t)w : 0;
        }
    }
}

/*
 * layer_indexing.c - MATLAB's indexing1dLayer: the data at the first or
 * the last index of the one "T" dim (or the one "S" dim) of each
 * observation. "CBT" sequences and "SCB" 1-D images give "CB": a
 * sequence-to-label network's summary of each sequence, after a
 * self-attention or a convolution over time.
 *
 * Without a mask "last" is the last index of the mini-batch, padding
 * included: with sequences padded on the right ("right", the default) it
 * is the longest sequence's last step for every observation, so such a
 * network trains with SequencePaddingDirection "left", as MATLAB's
 * examples do with recurrent layers' OutputMode "last". With
 * HasPaddingMaskInput (MATLAB's; layer_mask.c) each observation's own
 * first or last data step is taken, wherever the padding is.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "indexing1d";

/* dim: HasPaddingMaskInput, as the other layers with a mask port. */
static const dla__field fields[] = {F("Index", DLA__F_STRING, mode, 1),
                                    F("HasPaddingMaskInput", DLA__F_INT, dim, 1),
                                    {NULL, 0, 0, 0}};

static dla_status check(const dla__props *p, const char *name)
{
    if (strcmp(p->mode, "first") && strcmp(p->mode, "last"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Index \"%s\"; use \"first\" or "
                            "\"last\"", type, name, p->mode);
    return dla__layer_size(type, name, "HasPaddingMaskInput", p->dim, 0, 1);
}

/* The one dim indexed: "T", or the one "S" of data without "T". */
static int indexed_dim(const char *format)
{
    int ns = 0;
    for (const char *f = format; *f; f++)
        ns += *f == 'S';
    const char *t = strchr(format, 'T');
    if (t && ns == 0)
        return (int)(t - format);
    if (!t && ns == 1)
        return (int)(strchr(format, 'S') - format);
    return -1;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)nin, (void)sink;
    const int d = indexed_dim(in->format);
    if (d < 0 || !strchr(in->format, 'C') || !strchr(in->format, 'B'))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 1-D indexing takes \"CBT\" "
                            "sequences or \"SCB\" 1-D images (one \"T\" or one \"S\" dim)",
                            in->format);
    return dla__mask_check_init(l, in);
}

/* With a padding mask: w, 1 at each observation's first or last data
 * step and 0 elsewhere (laid out as m: 1 x B x T, or S x 1 x B), and the
 * sum over the steps of x where w is 1, 0 elsewhere (a select, not x .*
 * w: a NaN or Inf at another step, padding included, must not reach the
 * sum as 0 * Inf). The step numbers (1..n for "last", n..1 for "first")
 * times m peak at that step; an observation with no data step gives 0. */
static dla_tensor *masked_pick(const dla__props *p, dla__call *c, int d, int64_t n)
{
    dla_tensor *x = c->x[0], *m = dla__mask_steps(c);
    if (dla_tensor_status(m) != DLA_OK)
        return m;
    double *steps = dla__nn_malloc(sizeof *steps * (size_t)n);
    if (!steps)
        return dla__nn_error_tensor();
    const int last = !strcmp(p->mode, "last");
    for (int64_t i = 0; i < n; i++)
        steps[i] = (double)(last ? i + 1 : n - i);
    int64_t dims[DLA_MAX_DIMS];
    for (int i = 0; i < d; i++)
        dims[i] = 1;
    dims[d] = n;
    /* The step numbers and the zero on x's device: made on the current
     * one, a network moved with dla_net_to_device (the current device
     * left as it was) failed in dla_mul across devices. */
    dla_device *prev = dla__nn_device_use(dla_tensor_device(x));
    dla_tensor *k = dla_cast(dla_tensor_from_host(steps, DLA_F64, "", d + 1, dims),
                             dla_tensor_dtype(x));
    dla_tensor *zero = dla_zeros(dla_tensor_dtype(x), "", 0, NULL);
    dla__nn_device_restore(prev);
    /* dla__nn_malloc's block goes back through the library's allocator
     * (free() handed a user allocator's block to libc). */
    dla__nn_free(steps);
    dla_tensor *score = dla_mul(m, k);
    const int64_t along = d + 1;
    dla_tensor *top = dla_max(score, 1, &along);
    dla_tensor *w = dla_mul(dla_cast(dla_eq(score, top), dla_tensor_dtype(x)), m);
    return dla_sum(dla_where(w, x, zero), 1, &along);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    const int d = indexed_dim(f);
    if (d < 0 || !strchr(f, 'C') || !strchr(f, 'B'))
        return dla_set_error(DLA_ERR_FORMAT, "indexing1d: the input is \"%s\"; 1-D indexing "
                             "takes \"CBT\" or \"SCB\" data", f);
    const int64_t n = dla_tensor_dim(x, d + 1);
    if (n == 0)
        return dla_set_error(DLA_ERR_SHAPE, "indexing1d: the input's %c dim is empty (%lld steps); "
                             "there is no %s index", f[d], (long long)n, p->mode);
    const int64_t at = strcmp(p->mode, "last") ? 0 : n - 1;
    /* "CBT" -> C x B x 1, "SCB" -> 1 x C x B: the remaining two dims, in
     * order, are the result's "C" and "B". */
    dla_tensor *one = c->nx > 1 ? masked_pick(p, c, d, n) : dla_slice(x, d + 1, at, 1, at + 1);
    const int64_t ch = dla_tensor_dim(x, (int)(strchr(f, 'C') - f) + 1);
    const int64_t b = dla_tensor_dim(x, (int)(strchr(f, 'B') - f) + 1);
    c->y = dla_reshape(one, "CB", DLA_DIMS(ch, b));
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "1-D indexing of the %s %s", p->mode,
             p->dim ? "data step (padding mask)" : "index");
}

const dla__layer_kind dla__kind_indexing1d = {
    .type = "indexing1d", .display = "1-D Indexing", .default_name = "index1d",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
    .mask_port = 1,
};

DLA_API dla_layer *dla_indexing1d_layer(const char *index, const dla_indexing1d_layer_options *opts)
{
    dla__props p = {0};
    dla_status st = dla__props_string(p.mode, index, "first", "indexing1d: Index");
    p.dim = opts ? opts->has_padding_mask_input : 0;
    return dla__layer_new(&dla__kind_indexing1d, opts ? opts->name : NULL, p.dim ? 2 : 1, &p, st);
}

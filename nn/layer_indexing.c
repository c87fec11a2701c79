/*
 * layer_indexing.c - MATLAB's indexing1dLayer: the data at the first or
 * the last index of the one "T" dim (or the one "S" dim) of each
 * observation. "CBT" sequences and "SCB" 1-D images give "CB": a
 * sequence-to-label network's summary of each sequence, after a
 * self-attention or a convolution over time.
 *
 * "last" is the last index of the mini-batch, padding included: with
 * sequences padded on the right ("right", the default) it is the longest
 * sequence's last step for every observation, so a network that reads
 * "last" trains with SequencePaddingDirection "left", as MATLAB's
 * examples do with recurrent layers' OutputMode "last".
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "indexing1d";

static const dla__field fields[] = {F("Index", DLA__F_STRING, mode, 1), {NULL, 0, 0, 0}};

static dla_status check(const dla__props *p, const char *name)
{
    if (strcmp(p->mode, "first") && strcmp(p->mode, "last"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Index \"%s\"; use \"first\" or "
                            "\"last\"", type, name, p->mode);
    return DLA_OK;
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
    return DLA_OK;
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
    dla_tensor *one = dla_slice(x, d + 1, at, 1, at + 1);
    const int64_t ch = dla_tensor_dim(x, (int)(strchr(f, 'C') - f) + 1);
    const int64_t b = dla_tensor_dim(x, (int)(strchr(f, 'B') - f) + 1);
    c->y = dla_reshape(one, "CB", DLA_DIMS(ch, b));
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "1-D indexing of the %s index", p->mode);
}

const dla__layer_kind dla__kind_indexing1d = {
    .type = "indexing1d", .display = "1-D Indexing", .default_name = "index1d",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_indexing1d_layer(const char *index, const dla_layer_options *opts)
{
    dla__props p = {0};
    dla_status st = dla__props_string(p.mode, index, "first", "indexing1d: Index");
    return dla__layer_new(&dla__kind_indexing1d, opts ? opts->name : NULL, 1, &p, st);
}

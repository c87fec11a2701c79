/*
 * layer_embedding.c - MATLAB's wordEmbeddingLayer(dimension, numWords):
 * token indices in, one learned vector each out (dla_embed). Weights are
 * dimension x (numWords + 1): words 1..numWords have their columns, and
 * everything else (0, the padding doc2sequence puts in, NaN, a number past
 * the vocabulary) the last one, as MATLAB's OOVMode "map-to-last".
 *
 * The input is any formatted data with a "C" of 1: "CBT" sequences of
 * tokens from a sequenceInputLayer(1), "CB" one token an observation from
 * a featureInputLayer(1); the output has its labels, "C" the dimension.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "wordEmbedding";

static const dla__field fields[] = {
    F("Dimension", DLA__F_INT, count, 1),
    F("NumWords", DLA__F_INT, dim, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    {NULL, 0, 0, 0},
};

static dla_status check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size(type, name, "Dimension", p->count, 1, 1 << 20);
    if (st == DLA_OK)
        st = dla__layer_size(type, name, "NumWords", p->dim, 1, 1 << 28);
    if (st == DLA_OK && !dla__init_known(p->init[0], 0))
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': WeightsInitializer \"%s\" is unknown",
                          type, name, p->init[0]);
    return st;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    const char *c = strchr(in->format, 'C');
    if (!in->format[0] || (c && in->dims[c - in->format] != 1))
        return dla__nn_fail(DLA_ERR_SHAPE, "the input is \"%s\" with %lld channels; %s takes one "
                            "token index an element (\"CBT\" from sequenceInputLayer(1), \"CB\" "
                            "from featureInputLayer(1))", in->format,
                            c ? (long long)in->dims[c - in->format] : 0LL, type);
    const dla__props *p = &l->props;
    const int64_t wd[2] = {p->count, p->dim + 1};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, 1, (double)p->count);
    return dla__param_add(sink, "Weights", DLA__LEARNABLE, w, 2, wd, 1);
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    (void)p;
    c->y = dla_embed(c->x[0], c->p[0]);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Word embedding layer with %lld dimensions and %lld unique words",
             (long long)p->count, (long long)p->dim);
}

const dla__layer_kind dla__kind_word_embedding = {
    .type = "wordEmbedding", .display = "Word Embedding Layer", .default_name = "embedding",
    .fields = fields, .check = check, .init = init, .forward = forward, .describe = describe,
};

DLA_API dla_layer *dla_word_embedding_layer(int64_t dimension, int64_t num_words,
                                            const dla_word_embedding_layer_options *opts)
{
    dla__props p = {0};
    p.count = dimension;
    p.dim = num_words;
    dla_status st = dla__props_string(p.init[0], opts ? opts->weights_initializer : NULL,
                                      "narrow-normal", "wordEmbedding: WeightsInitializer");
    return dla__layer_new(&dla__kind_word_embedding, opts ? opts->name : NULL, 1, &p, st);
}

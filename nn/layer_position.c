/*
 * layer_position.c - where a step is in its sequence, as channels that an
 * additionLayer adds to the step's own features before self-attention
 * (which otherwise sees the steps as an unordered set):
 *
 *   sinusoidalPositionEncodingLayer(outputSize): fixed, step t (0-based)
 *     gets sin(t / 10000^(2i/d)) in channel 2i and cos( ) in 2i + 1;
 *   positionEmbeddingLayer(outputSize, maxPosition): learned, step t gets
 *     column t of Weights (outputSize x maxPosition).
 *
 * Both take "CBT" sequences and give outputSize x B x T "CBT" (the same for
 * every observation); the input's values are not read.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field sinusoidal_fields[] = {
    F("OutputSize", DLA__F_INT, count, 1),
    {NULL, 0, 0, 0},
};

static const dla__field embedding_fields[] = {
    F("OutputSize", DLA__F_INT, count, 1),
    F("MaxPosition", DLA__F_INT, dim, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    {NULL, 0, 0, 0},
};

static dla_status sinusoidal_check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("sinusoidalPositionEncoding", name, "OutputSize", p->count, 1,
                                    1 << 20);
    if (st == DLA_OK && p->count % 2)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "sinusoidalPositionEncoding '%s': OutputSize "
                          "%lld must be even (a sine and a cosine a frequency)", name,
                          (long long)p->count);
    return st;
}

static dla_status embedding_check(const dla__props *p, const char *name)
{
    dla_status st = dla__layer_size("positionEmbedding", name, "OutputSize", p->count, 1, 1 << 20);
    if (st == DLA_OK)
        st = dla__layer_size("positionEmbedding", name, "MaxPosition", p->dim, 1, 1 << 24);
    if (st == DLA_OK && !dla__init_known(p->init[0], 0))
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "positionEmbedding '%s': WeightsInitializer "
                          "\"%s\" is unknown", name, p->init[0]);
    return st;
}

/* The input's steps, or the error (c->y set) when it is not "CBT". */
static dla_status sequence_of(const char *type, dla__call *c, int64_t *nb, int64_t *nt)
{
    const char *f = dla_tensor_format(c->x[0]);
    if (strcmp(f, "CBT")) {
        dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences", f, type);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_FORMAT;
    }
    *nb = dla_tensor_dim(c->x[0], 2);
    *nt = dla_tensor_dim(c->x[0], 3);
    return DLA_OK;
}

static dla_status shape_check(const char *type, const dla__shape *in)
{
    if (strcmp(in->format, "CBT"))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences",
                            in->format, type);
    return DLA_OK;
}

static dla_status sinusoidal_init(const dla_layer *l, int nin, const dla__shape *in,
                                  dla__param_sink *sink)
{
    (void)l, (void)nin, (void)sink;
    return shape_check("sinusoidalPositionEncoding", in);
}

static dla_status sinusoidal_forward(const dla__props *p, dla__call *c)
{
    int64_t nb, nt;
    dla_status st = sequence_of("sinusoidalPositionEncoding", c, &nb, &nt);
    if (st != DLA_OK)
        return st;
    const int64_t d = p->count, n = d * nb * nt;
    const dla_dtype dtype = dla_tensor_dtype(c->x[0]);
    double *v = dla__nn_malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "sinusoidalPositionEncoding: %lld values", (long long)n);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_OUT_OF_MEMORY;
    }
    for (int64_t t = 0; t < nt; t++)
        for (int64_t i = 0; i < d; i += 2) {
            const double angle = (double)t / pow(10000.0, (double)i / (double)d);
            for (int64_t b = 0; b < nb; b++) {
                v[i + d * (b + nb * t)] = sin(angle);
                v[i + 1 + d * (b + nb * t)] = cos(angle);
            }
        }
    /* Made on the host each call (a trace keeps it as a constant: its
     * sequence length is in the trace's key), on the input's device: made
     * on the current one, a network moved with dla_net_to_device could not
     * add it to its input. */
    dla_device *prev = dla__nn_device_use(dla_tensor_device(c->x[0]));
    c->y = dla_cast(dla_tensor_from_host(v, DLA_F64, "CBT", DLA_DIMS(d, nb, nt)), dtype);
    dla__nn_device_restore(prev);
    dla__nn_free(v);
    return dla_tensor_status(c->y);
}

static dla_status embedding_init(const dla_layer *l, int nin, const dla__shape *in,
                                 dla__param_sink *sink)
{
    (void)nin;
    dla_status st = shape_check("positionEmbedding", in);
    if (st != DLA_OK)
        return st;
    const dla__props *p = &l->props;
    const int64_t wd[2] = {p->count, p->dim};
    dla_tensor *w = dla__init_tensor(p->init[0], sink, 2, wd, (double)p->dim, (double)p->count);
    return dla__param_add(sink, "Weights", DLA__LEARNABLE, w, 2, wd, 1);
}

static dla_status embedding_forward(const dla__props *p, dla__call *c)
{
    int64_t nb, nt;
    dla_status st = sequence_of("positionEmbedding", c, &nb, &nt);
    if (st != DLA_OK)
        return st;
    if (nt > p->dim) {
        dla__nn_fail(DLA_ERR_SHAPE, "positionEmbedding: a sequence of %lld steps; MaxPosition is "
                     "%lld", (long long)nt, (long long)p->dim);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    /* Columns 1..T as d x 1 x T, the same for every observation: added to
     * zeros of d x B x T (whose gradient sums the observations'). */
    dla_tensor *w = dla_reshape(dla_slice(c->p[0], 2, 0, 1, nt), "", DLA_DIMS(p->count, 1, nt));
    /* The zeros on the weights' device, whichever device is current. */
    dla_device *prev = dla__nn_device_use(dla_tensor_device(c->p[0]));
    dla_tensor *z = dla_zeros(dla_tensor_dtype(c->p[0]), "", DLA_DIMS(p->count, nb, nt));
    dla__nn_device_restore(prev);
    c->y = dla_reshape(dla_add(w, z), "CBT", DLA_DIMS(p->count, nb, nt));
    return dla_tensor_status(c->y);
}

static void sinusoidal_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "%lld channels of sines and cosines of the step", (long long)p->count);
}

static void embedding_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "%lld channels for each of %lld positions", (long long)p->count,
             (long long)p->dim);
}

const dla__layer_kind dla__kind_sinusoidal = {
    .type = "sinusoidalPositionEncoding", .display = "Sinusoidal Position Encoding",
    .default_name = "sinusoidalencoding", .fields = sinusoidal_fields, .check = sinusoidal_check,
    .init = sinusoidal_init, .forward = sinusoidal_forward, .describe = sinusoidal_describe,
};

const dla__layer_kind dla__kind_position_embedding = {
    .type = "positionEmbedding", .display = "Position Embedding",
    .default_name = "positionembedding", .fields = embedding_fields, .check = embedding_check,
    .init = embedding_init, .forward = embedding_forward, .describe = embedding_describe,
};

DLA_API dla_layer *dla_sinusoidal_position_encoding_layer(int64_t output_size,
                                                          const dla_layer_options *opts)
{
    dla__props p = {0};
    p.count = output_size;
    return dla__layer_new(&dla__kind_sinusoidal, opts ? opts->name : NULL, 1, &p, DLA_OK);
}

DLA_API dla_layer *dla_position_embedding_layer(int64_t output_size, int64_t max_position,
                                                const dla_position_embedding_layer_options *opts)
{
    dla__props p = {0};
    p.count = output_size;
    p.dim = max_position;
    dla_status st = dla__props_string(p.init[0], opts ? opts->weights_initializer : NULL,
                                      "narrow-normal", "positionEmbedding: WeightsInitializer");
    return dla__layer_new(&dla__kind_position_embedding, opts ? opts->name : NULL, 1, &p, st);
}

/*
 * layer_position.c - where a step is in its sequence, as channels that an
 * additionLayer adds to the step's own features before self-attention
 * (which otherwise sees the steps as an unordered set):
 *
 *   sinusoidalPositionEncodingLayer(outputSize, Positions=...): fixed,
 *     position t gets sin(t / 10000^(2i/d)) in channel 2i and cos( ) in
 *     2i + 1 (0-based i, d = outputSize). Its Positions say what t is:
 *     "temporal-indices" the step of "CBT" sequences (0-based), the
 *     output d x B x T; "spatial-indices" the position along the S of
 *     "SCB" 1-D images (0-based), the output S x d x B; "data-values" the
 *     input's values (one channel: "CB" noise steps of a diffusion model
 *     from a featureInputLayer), the output d x B ("CB") or d x B x T; and
 *     "auto", MATLAB's default, the first for data with a "T" dim, the
 *     second for "SCB", the third otherwise;
 *   positionEmbeddingLayer(outputSize, maxPosition): learned, step t gets
 *     column t of Weights (outputSize x maxPosition).
 *
 * The index modes give the same values for every observation and do not
 * read the input's values; "data-values" is differentiable in them, so
 * learnables before the layer train through it.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

/* Positions in mode: "" in a file written before Positions existed (the
 * layer took "CBT" only then), read as "auto". */
static const dla__field sinusoidal_fields[] = {
    F("OutputSize", DLA__F_INT, count, 1),
    F("Positions", DLA__F_STRING, mode, 1),
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
    static const char *const modes[] = {"", "auto", "temporal-indices", "spatial-indices",
                                        "data-values"};
    int known = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        known |= !strcmp(p->mode, modes[i]);
    if (st == DLA_OK && !known)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "sinusoidalPositionEncoding '%s': Positions "
                          "\"%s\"; use \"auto\", \"temporal-indices\", \"spatial-indices\" or "
                          "\"data-values\"", name, p->mode);
    return st;
}

enum { BY_STEP, BY_SPACE, BY_VALUE };

/* What the positions of input format f are under Positions mode. */
static int resolve(const char *mode, const char *f)
{
    if (!strcmp(mode, "temporal-indices") || !strcmp(mode, "spatial-indices") ||
        !strcmp(mode, "data-values"))
        return mode[0] == 't' ? BY_STEP : mode[0] == 's' ? BY_SPACE : BY_VALUE;
    /* "auto" (MATLAB's rule) */
    return strchr(f, 'T') ? BY_STEP : !strcmp(f, "SCB") ? BY_SPACE : BY_VALUE;
}

/* resolve's answer, or -1 (with the message) when the layer cannot take
 * f that way. */
static int positions_of(const char *mode, const char *f, int64_t channels)
{
    const int by = resolve(mode, f);
    /* Under "auto" the user chose no kind of position: the refusal of a
     * format says which ones "auto" takes ("SSCB" images were told that
     * "data-values positions are "CB" or "CBT" data", values they never
     * asked for). */
    const char *why = strcmp(mode, "") && strcmp(mode, "auto")
                          ? ""
                          : " (Positions \"auto\" takes \"CBT\" sequences by their steps, "
                            "\"SCB\" 1-D images by their S positions, \"CB\" data of one "
                            "channel by its values)";
    if (by == BY_STEP && strcmp(f, "CBT"))
        dla__nn_fail(DLA_ERR_FORMAT, "sinusoidalPositionEncoding: the input is \"%s\"; "
                     "temporal-indices positions are the steps of \"CBT\" sequences%s", f, why);
    else if (by == BY_SPACE && strcmp(f, "SCB"))
        dla__nn_fail(DLA_ERR_FORMAT, "sinusoidalPositionEncoding: the input is \"%s\"; "
                     "spatial-indices positions are along the \"S\" of \"SCB\" 1-D images", f);
    else if (by == BY_VALUE && strcmp(f, "CB") && strcmp(f, "CBT"))
        dla__nn_fail(DLA_ERR_FORMAT, "sinusoidalPositionEncoding: the input is \"%s\"; "
                     "data-values positions are \"CB\" or \"CBT\" data of one channel%s", f,
                     why);
    else if (by == BY_VALUE && channels != 1)
        dla__nn_fail(DLA_ERR_SHAPE, "sinusoidalPositionEncoding: data-values positions are one "
                     "channel, the position; the input has %lld%s", (long long)channels, why);
    else
        return by;
    return -1;
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
    (void)nin, (void)sink;
    return positions_of(l->props.mode, in->format, dla__shape_dim(in, 'C')) < 0
               ? dla_last_status()
               : DLA_OK;
}

/* The divisor of channel i of d: 10000^(2k/d) for both channels 2k and
 * 2k + 1, a sine's and its cosine's. */
static double divisor(int64_t i, int64_t d)
{
    return pow(10000.0, (double)(i - i % 2) / (double)d);
}

/* "data-values": the input's values x (one channel) are the positions;
 * made of ops so that its gradient reaches what computed x. */
static dla_tensor *encode_values(int64_t d, dla_tensor *x)
{
    const char *f = dla_tensor_format(x);
    const int64_t nb = dla_tensor_dim(x, 2), nt = f[2] == 'T' ? dla_tensor_dim(x, 3) : 1;
    double *v = dla__nn_malloc(sizeof *v * (size_t)(3 * d));
    if (!v) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "sinusoidalPositionEncoding: %lld values",
                     (long long)(3 * d));
        return dla__nn_error_tensor();
    }
    for (int64_t i = 0; i < d; i++) {
        v[i] = divisor(i, d);
        v[d + i] = i % 2 == 0; /* where the sines go */
        v[2 * d + i] = i % 2;  /* and the cosines */
    }
    const dla_dtype dtype = dla_tensor_dtype(x);
    dla_device *prev = dla__nn_device_use(dla_tensor_device(x));
    dla_tensor *div = dla_cast(dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(d, 1)), dtype);
    dla_tensor *on_sin = dla_cast(dla_tensor_from_host(v + d, DLA_F64, "", DLA_DIMS(d, 1)), dtype);
    dla_tensor *on_cos = dla_cast(dla_tensor_from_host(v + 2 * d, DLA_F64, "", DLA_DIMS(d, 1)),
                                  dtype);
    dla__nn_device_restore(prev);
    dla__nn_free(v);
    /* 1 x n positions over d x 1 divisors: d x n angles. Selecting by
     * multiplying with 0 and 1 keeps each value the host's sin or cos. */
    dla_tensor *angle = dla_div(dla_reshape(x, "", DLA_DIMS(1, nb * nt)), div);
    dla_tensor *y = dla_add(dla_mul(dla_sin(angle), on_sin), dla_mul(dla_cos(angle), on_cos));
    return f[2] == 'T' ? dla_reshape(y, "CBT", DLA_DIMS(d, nb, nt))
                       : dla_reshape(y, "CB", DLA_DIMS(d, nb));
}

static dla_status sinusoidal_forward(const dla__props *p, dla__call *c)
{
    dla__shape in;
    dla__shape_of(c->x[0], &in);
    const int by = positions_of(p->mode, in.format, dla__shape_dim(&in, 'C'));
    if (by < 0) {
        c->y = dla__nn_error_tensor();
        return dla_last_status();
    }
    const int64_t d = p->count;
    if (by == BY_VALUE) {
        c->y = encode_values(d, c->x[0]);
        return dla_tensor_status(c->y);
    }
    /* "CBT": d x B x T, position t; "SCB": S x d x B, position s. */
    const int64_t np = dla_tensor_dim(c->x[0], by == BY_STEP ? 3 : 1);
    const int64_t nb = dla_tensor_dim(c->x[0], by == BY_STEP ? 2 : 3), n = d * nb * np;
    const dla_dtype dtype = dla_tensor_dtype(c->x[0]);
    double *v = dla__nn_malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "sinusoidalPositionEncoding: %lld values", (long long)n);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_OUT_OF_MEMORY;
    }
    for (int64_t t = 0; t < np; t++)
        for (int64_t i = 0; i < d; i++) {
            const double angle = (double)t / divisor(i, d);
            const double e = i % 2 ? cos(angle) : sin(angle);
            for (int64_t b = 0; b < nb; b++)
                v[by == BY_STEP ? i + d * (b + nb * t) : t + np * (i + d * b)] = e;
        }
    /* Made on the host each call (a trace keeps it as a constant: its
     * sequence length is in the trace's key), on the input's device: made
     * on the current one, a network moved with dla_net_to_device could not
     * add it to its input. */
    dla_device *prev = dla__nn_device_use(dla_tensor_device(c->x[0]));
    c->y = dla_cast(by == BY_STEP
                        ? dla_tensor_from_host(v, DLA_F64, "CBT", DLA_DIMS(d, nb, np))
                        : dla_tensor_from_host(v, DLA_F64, "SCB", DLA_DIMS(np, d, nb)),
                    dtype);
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
    static const char *const of[] = {"the step", "the position", "the input's values"};
    snprintf(buf, size, "%lld channels of sines and cosines of %s", (long long)p->count,
             in ? of[resolve(p->mode, in->format)] : "the position");
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

DLA_API dla_layer *dla_sinusoidal_position_encoding_layer(
    int64_t output_size, const dla_sinusoidal_position_encoding_layer_options *opts)
{
    dla__props p = {0};
    p.count = output_size;
    dla_status st = dla__props_string(p.mode, opts ? opts->positions : NULL, "auto",
                                      "sinusoidalPositionEncoding: Positions");
    return dla__layer_new(&dla__kind_sinusoidal, opts ? opts->name : NULL, 1, &p, st);
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

/*
 * layer_resize.c - resize2dLayer: dla_resize over the two "S" dims of
 * image data, by a scale factor or to an output size, with no learnables.
 *
 * The options are kept as MATLAB's properties: Scale [h w] (zeros when
 * OutputSize is used), OutputSize [h w] (zeros when Scale is used; -1
 * stands for NaN, "keep the aspect ratio", which JSON cannot hold),
 * Method "nearest" or "bilinear", GeometricTransformMode and
 * NearestRoundingMode.
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields[] = {
    F("Scale", DLA__F_DOUBLE, decay, 2),
    F("OutputSize", DLA__F_INT, size, 2),
    F("Method", DLA__F_STRING, mode, 1),
    F("GeometricTransformMode", DLA__F_STRING, option, 1),
    F("NearestRoundingMode", DLA__F_STRING, option2, 1),
    {NULL, 0, 0, 0},
};

#define KEEP_ASPECT (-1) /* an OutputSize entry given as NaN */
#define MAX_SIZE ((int64_t)1 << 30)

static int one_of(const char *s, const char *a, const char *b, const char *c)
{
    return !strcmp(s, a) || !strcmp(s, b) || (c && !strcmp(s, c));
}

static dla_status check(const dla__props *p, const char *name)
{
    const int by_scale = p->decay[0] != 0 || p->decay[1] != 0;
    const int by_size = p->size[0] != 0 || p->size[1] != 0;
    if (by_scale == by_size)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': give exactly one of Scale "
                            "and OutputSize (%s given)", name, by_scale ? "both" : "neither");
    for (int i = 0; by_scale && i < 2; i++)
        if (!(p->decay[i] > 0) || !isfinite(p->decay[i]))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': Scale [%g %g] must be "
                                "positive and finite", name, p->decay[0], p->decay[1]);
    for (int i = 0; by_size && i < 2; i++)
        if ((p->size[i] < 1 && p->size[i] != KEEP_ASPECT) || p->size[i] > MAX_SIZE ||
            (p->size[0] == KEEP_ASPECT && p->size[1] == KEEP_ASPECT))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': OutputSize entries "
                                "must be whole numbers from 1 to %lld, or one of them NaN", name,
                                (long long)MAX_SIZE);
    if (!one_of(p->mode, "nearest", "bilinear", NULL))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': Method \"%s\"; use "
                            "\"nearest\" or \"bilinear\"", name, p->mode);
    if (!one_of(p->option, "half-pixel", "asymmetric", NULL))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': GeometricTransformMode "
                            "\"%s\"; use \"half-pixel\" or \"asymmetric\"", name, p->option);
    if (!one_of(p->option2, "round", "floor", "onnx-10"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "resize2d '%s': NearestRoundingMode \"%s\"; "
                            "use \"round\", \"floor\" or \"onnx-10\"", name, p->option2);
    return DLA_OK;
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)nin, (void)sink;
    if (dla__shape_count(in, 'S') != 2)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; resize2dLayer needs two \"S\" "
                            "dims", in->format);
    return DLA_OK;
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_resize_options o = {
        .method = strcmp(p->mode, "bilinear") ? "nearest" : "linear",
        .geometric_transform_mode = p->option,
        .nearest_rounding_mode = p->option2,
    };
    if (p->decay[0] != 0) {
        o.scale[0] = p->decay[0];
        o.scale[1] = p->decay[1];
    } else {
        for (int i = 0; i < 2; i++)
            o.output_size[i] = p->size[i] == KEEP_ASPECT ? NAN : (double)p->size[i];
    }
    c->y = dla_resize(c->x[0], &o);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    if (p->decay[0] != 0)
        snprintf(buf, size, "%s resize with scale [%g %g]", p->mode, p->decay[0], p->decay[1]);
    else if (p->size[0] == KEEP_ASPECT)
        snprintf(buf, size, "%s resize to output size [NaN %lld]", p->mode, (long long)p->size[1]);
    else if (p->size[1] == KEEP_ASPECT)
        snprintf(buf, size, "%s resize to output size [%lld NaN]", p->mode, (long long)p->size[0]);
    else
        snprintf(buf, size, "%s resize to output size [%lld %lld]", p->mode,
                 (long long)p->size[0], (long long)p->size[1]);
}

const dla__layer_kind dla__kind_resize2d = {
    .type = "resize2d", .display = "2-D Resize", .default_name = "resize", .fields = fields,
    .check = check, .init = init, .forward = forward, .describe = describe,
};

/* A size the caller gave as a double: whole numbers kept, NaN marked, and
 * anything else made a value check() refuses (0.5 becomes 0, which with
 * the other entry set still reads as an OutputSize and fails its range). */
static int64_t size_of(double v)
{
    if (isnan(v))
        return KEEP_ASPECT;
    if (v != floor(v) || v < 1 || v > (double)MAX_SIZE)
        return v == 0 ? 0 : MAX_SIZE + 1;
    return (int64_t)v;
}

DLA_API dla_layer *dla_resize2d_layer(const dla_resize2d_layer_options *opts)
{
    static const dla_resize2d_layer_options none;
    const dla_resize2d_layer_options *o = opts ? opts : &none;
    dla__props p = {0};
    p.decay[0] = o->scale[0];
    /* A single scale is both (MATLAB's scalar Scale). */
    p.decay[1] = o->scale[1] != 0 ? o->scale[1] : o->scale[0];
    for (int i = 0; i < 2; i++)
        p.size[i] = size_of(o->output_size[i]);
    dla_status st = dla__props_string(p.mode, o->method, "nearest", "resize2d: Method");
    if (st == DLA_OK)
        st = dla__props_string(p.option, o->geometric_transform_mode, "half-pixel",
                               "resize2d: GeometricTransformMode");
    if (st == DLA_OK)
        st = dla__props_string(p.option2, o->nearest_rounding_mode, "round",
                               "resize2d: NearestRoundingMode");
    return dla__layer_new(&dla__kind_resize2d, o->name, 1, &p, st);
}

/*
 * layer_resize.c - resize2dLayer and resize3dLayer: dla_resize over the
 * two or three "S" dims of image data, by a scale factor, to an output
 * size, or to the size of a second input "ref" (EnableReferenceInput),
 * with no learnables.
 *
 * The options are kept as MATLAB's properties: Scale (zeros when another
 * way is used), OutputSize (zeros when another way is used; -1 stands for
 * NaN, "keep the aspect ratio", which JSON cannot hold), Method "nearest"
 * or "bilinear" ("trilinear" in 3-D), GeometricTransformMode,
 * NearestRoundingMode and EnableReferenceInput (0 or 1; a file written
 * before it reads 0).
 */
#include "nn/nn.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields2[] = {
    F("Scale", DLA__F_DOUBLE, decay, 2),
    F("OutputSize", DLA__F_INT, size, 2),
    F("Method", DLA__F_STRING, mode, 1),
    F("GeometricTransformMode", DLA__F_STRING, option, 1),
    F("NearestRoundingMode", DLA__F_STRING, option2, 1),
    F("EnableReferenceInput", DLA__F_INT, dim, 1),
    {NULL, 0, 0, 0},
};

static const dla__field fields3[] = {
    F("Scale", DLA__F_DOUBLE, decay, 3),
    F("OutputSize", DLA__F_INT, size, 3),
    F("Method", DLA__F_STRING, mode, 1),
    F("GeometricTransformMode", DLA__F_STRING, option, 1),
    F("NearestRoundingMode", DLA__F_STRING, option2, 1),
    F("EnableReferenceInput", DLA__F_INT, dim, 1),
    {NULL, 0, 0, 0},
};

#define KEEP_ASPECT (-1) /* an OutputSize entry given as NaN */
#define MAX_SIZE ((int64_t)1 << 30)

/* "resize2d" or "resize3d", and its interpolating Method's name. */
static const char *type_of(int nd)
{
    return nd == 2 ? "resize2d" : "resize3d";
}

static const char *linear_of(int nd)
{
    return nd == 2 ? "bilinear" : "trilinear";
}

static int one_of(const char *s, const char *a, const char *b, const char *c)
{
    return !strcmp(s, a) || !strcmp(s, b) || (c && !strcmp(s, c));
}

/* "[2 1.5]", "[NaN 5 5]": the nd entries of a Scale or an OutputSize. */
static void entries(int nd, const dla__props *p, int scale, char *buf, size_t size)
{
    size_t len = 0;
    for (int i = 0; i < nd && len < size; i++) {
        int w = scale ? snprintf(buf + len, size - len, "%s%g", i ? " " : "[", p->decay[i])
                : p->size[i] == KEEP_ASPECT ? snprintf(buf + len, size - len, "%sNaN", i ? " " : "[")
                : snprintf(buf + len, size - len, "%s%lld", i ? " " : "[", (long long)p->size[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    if (len < size)
        snprintf(buf + len, size - len, "]");
}

static dla_status check_for(int nd, const dla__props *p, const char *name)
{
    const char *type = type_of(nd);
    int by_scale = 0, by_size = 0, keep = 0;
    for (int i = 0; i < nd; i++) {
        by_scale |= p->decay[i] != 0;
        by_size |= p->size[i] != 0;
        keep += p->size[i] == KEEP_ASPECT;
    }
    if (p->dim != 0 && p->dim != 1)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': EnableReferenceInput %lld must "
                            "be 0 or 1", type, name, (long long)p->dim);
    if (p->dim && (by_scale || by_size))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': EnableReferenceInput takes the "
                            "output size from the input \"ref\"; give no %s", type, name,
                            by_scale ? "Scale" : "OutputSize");
    if (!p->dim && by_scale == by_size)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': give exactly one of Scale, "
                            "OutputSize and EnableReferenceInput (%s given)", type, name,
                            by_scale ? "Scale and OutputSize" : "none");
    for (int i = 0; by_scale && i < nd; i++)
        if (!(p->decay[i] > 0) || !isfinite(p->decay[i])) {
            char e[128];
            entries(nd, p, 1, e, sizeof e);
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Scale %s must be positive "
                                "and finite", type, name, e);
        }
    for (int i = 0; by_size && i < nd; i++)
        if ((p->size[i] < 1 && p->size[i] != KEEP_ASPECT) || p->size[i] > MAX_SIZE ||
            keep == nd)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': OutputSize entries "
                                "must be whole numbers from 1 to %lld, or some (not all) NaN",
                                type, name, (long long)MAX_SIZE);
    if (!one_of(p->mode, "nearest", linear_of(nd), NULL))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Method \"%s\"; use \"nearest\" "
                            "or \"%s\"", type, name, p->mode, linear_of(nd));
    if (!one_of(p->option, "half-pixel", "asymmetric", NULL))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': GeometricTransformMode "
                            "\"%s\"; use \"half-pixel\" or \"asymmetric\"", type, name, p->option);
    if (!one_of(p->option2, "round", "floor", "onnx-10"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': NearestRoundingMode \"%s\"; "
                            "use \"round\", \"floor\" or \"onnx-10\"", type, name, p->option2);
    return DLA_OK;
}

static dla_status check2(const dla__props *p, const char *name)
{
    return check_for(2, p, name);
}

static dla_status check3(const dla__props *p, const char *name)
{
    return check_for(3, p, name);
}

static dla_status init_for(int nd, int nin, const dla__shape *in)
{
    for (int k = 0; k < nin; k++)
        if (dla__shape_count(&in[k], 'S') != nd)
            return dla__nn_fail(DLA_ERR_FORMAT, "the input%s is \"%s\"; resize%ddLayer needs "
                                "%s \"S\" dims", k ? " \"ref\"" : "", in[k].format, nd,
                                nd == 2 ? "two" : "three");
    return DLA_OK;
}

static dla_status init2(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)sink;
    return init_for(2, nin, in);
}

static dla_status init3(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l, (void)sink;
    return init_for(3, nin, in);
}

static dla_status forward_for(int nd, const dla__props *p, dla__call *c)
{
    dla_resize_options o = {
        .method = strcmp(p->mode, "nearest") ? "linear" : "nearest",
        .geometric_transform_mode = p->option,
        .nearest_rounding_mode = p->option2,
    };
    if (p->dim) {
        /* The reference's "S" dims, in order (its other dims unread). */
        dla_tensor *ref = c->x[1];
        const char *f = dla_tensor_format(ref);
        int k = 0;
        for (int d = 0; f[d]; d++)
            if (f[d] == 'S' && k++ < nd)
                o.output_size[k - 1] = (double)dla_tensor_dim(ref, d + 1);
        if (k != nd)
            return dla_set_error(DLA_ERR_FORMAT, "%s: the input \"ref\" is \"%s\"; it needs "
                                 "%s \"S\" dims", type_of(nd), f, nd == 2 ? "two" : "three");
    } else if (p->decay[0] != 0) {
        for (int i = 0; i < nd; i++)
            o.scale[i] = p->decay[i];
    } else {
        for (int i = 0; i < nd; i++)
            o.output_size[i] = p->size[i] == KEEP_ASPECT ? NAN : (double)p->size[i];
    }
    c->y = dla_resize(c->x[0], &o);
    return dla_tensor_status(c->y);
}

static dla_status forward2(const dla__props *p, dla__call *c)
{
    return forward_for(2, p, c);
}

static dla_status forward3(const dla__props *p, dla__call *c)
{
    return forward_for(3, p, c);
}

static void describe_for(int nd, const dla__props *p, char *buf, size_t size)
{
    char e[128];
    if (p->dim) {
        snprintf(buf, size, "%s resize to the size of the input \"ref\"", p->mode);
        return;
    }
    entries(nd, p, p->decay[0] != 0, e, sizeof e);
    snprintf(buf, size, "%s resize %s %s", p->mode,
             p->decay[0] != 0 ? "with scale" : "to output size", e);
}

static void describe2(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_for(2, p, buf, size);
}

static void describe3(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_for(3, p, buf, size);
}

const dla__layer_kind dla__kind_resize2d = {
    .type = "resize2d", .display = "2-D Resize", .default_name = "resize", .fields = fields2,
    .ref_port = 1, .optional_ref = 1, .check = check2, .init = init2, .forward = forward2,
    .describe = describe2,
};

const dla__layer_kind dla__kind_resize3d = {
    .type = "resize3d", .display = "3-D Resize", .default_name = "resize", .fields = fields3,
    .ref_port = 1, .optional_ref = 1, .check = check3, .init = init3, .forward = forward3,
    .describe = describe3,
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

static dla_layer *resize_new(int nd, const dla__layer_kind *kind, const char *name,
                             const double *scale, const double *output_size, const char *method,
                             const char *gtm, const char *nrm, int reference)
{
    dla__props p = {0};
    /* A single scale is every dim's (MATLAB's scalar Scale); only when
     * the others are all 0: {2, 1} in 3-D was taken for [2 1 2], where
     * MATLAB refuses a Scale of two entries for three dims. */
    int scalar = 1;
    for (int i = 1; i < nd; i++)
        scalar &= scale[i] == 0;
    for (int i = 0; i < nd; i++)
        p.decay[i] = scalar ? scale[0] : scale[i];
    for (int i = 0; i < nd; i++)
        p.size[i] = size_of(output_size[i]);
    p.dim = reference;
    char what[64];
    snprintf(what, sizeof what, "%s: Method", type_of(nd));
    dla_status st = dla__props_string(p.mode, method, "nearest", what);
    if (st == DLA_OK) {
        snprintf(what, sizeof what, "%s: GeometricTransformMode", type_of(nd));
        st = dla__props_string(p.option, gtm, "half-pixel", what);
    }
    if (st == DLA_OK) {
        snprintf(what, sizeof what, "%s: NearestRoundingMode", type_of(nd));
        st = dla__props_string(p.option2, nrm, "round", what);
    }
    return dla__layer_new(kind, name, reference ? 2 : 1, &p, st);
}

DLA_API dla_layer *dla_resize2d_layer(const dla_resize2d_layer_options *opts)
{
    static const dla_resize2d_layer_options none;
    const dla_resize2d_layer_options *o = opts ? opts : &none;
    return resize_new(2, &dla__kind_resize2d, o->name, o->scale, o->output_size, o->method,
                      o->geometric_transform_mode, o->nearest_rounding_mode,
                      o->enable_reference_input);
}

DLA_API dla_layer *dla_resize3d_layer(const dla_resize3d_layer_options *opts)
{
    static const dla_resize3d_layer_options none;
    const dla_resize3d_layer_options *o = opts ? opts : &none;
    return resize_new(3, &dla__kind_resize3d, o->name, o->scale, o->output_size, o->method,
                      o->geometric_transform_mode, o->nearest_rounding_mode,
                      o->enable_reference_input);
}

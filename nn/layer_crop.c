/*
 * layer_crop.c - crop2dLayer and crop3dLayer: crop the two or three "S"
 * dims of the input "in" to the size of the second input "ref", at the
 * centre or at a given corner; no learnables. Only ref's size is read, so
 * no gradient flows into ref (MATLAB's layers alike).
 *
 * Options as MATLAB's properties: Mode "centercrop" or "custom", Location
 * [x y] ([x y z] in 3-D: 1-based column, row and depth of the window's
 * first corner; zeros with "centercrop", MATLAB's 'auto').
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field fields2[] = {
    F("Mode", DLA__F_STRING, mode, 1),
    F("Location", DLA__F_INT, size, 2),
    {NULL, 0, 0, 0},
};

static const dla__field fields3[] = {
    F("Mode", DLA__F_STRING, mode, 1),
    F("Location", DLA__F_INT, size, 3),
    {NULL, 0, 0, 0},
};

#define MAX_LOCATION ((int64_t)1 << 30)

static const char *type_of(int nd)
{
    return nd == 2 ? "crop2d" : "crop3d";
}

/* "[4 2]", "3 x 4 x 2": nd values with a separator, brackets or not. */
static void list(int nd, const int64_t *v, const char *sep, int brackets, char *buf, size_t size)
{
    size_t len = 0;
    for (int i = 0; i < nd && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%lld", i ? sep : brackets ? "[" : "",
                         (long long)v[i]);
        len += w > 0 ? (size_t)w : 0;
    }
    if (brackets && len < size)
        snprintf(buf + len, size - len, "]");
}

static dla_status check_for(int nd, const dla__props *p, const char *name)
{
    char at[96];
    list(nd, p->size, " ", 1, at, sizeof at);
    int given = 0;
    for (int i = 0; i < nd; i++)
        given |= p->size[i] != 0;
    if (!strcmp(p->mode, "centercrop")) {
        if (given)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Location %s with Mode "
                                "\"centercrop\"; give one or the other", type_of(nd), name, at);
        return DLA_OK;
    }
    if (strcmp(p->mode, "custom"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Mode \"%s\"; use \"centercrop\" "
                            "or \"custom\" (a Location)", type_of(nd), name, p->mode);
    for (int i = 0; i < nd; i++)
        if (p->size[i] < 1 || p->size[i] > MAX_LOCATION)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Location %s must be whole "
                                "numbers from 1 to %lld (the column, row%s of the window's "
                                "first corner)", type_of(nd), name, at, (long long)MAX_LOCATION,
                                nd == 3 ? " and depth" : "");
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

/* The window's first element along each "S" dim (0-based) in an input of
 * in[] for a reference of ref[], or an error naming both sizes. The
 * centre crop puts the input's centre element, floor(n/2) + 1 in MATLAB's
 * 1-based terms (n the input's size, m the reference's), on the window's
 * own, floor(m/2) + 1 (MATLAB's Crop2DCenterCropStrategy): with an odd
 * leftover the extra row is before the window for an even n, after it for
 * an odd n. Location is [x y (z)]: x the column (dim 2), y the row (dim
 * 1), z the depth (dim 3). */
static dla_status window(int nd, const dla__props *p, const int64_t *in, const int64_t *ref,
                         int64_t *start)
{
    int fits = 1;
    for (int i = 0; i < nd; i++) {
        const int64_t loc = i == 0 ? p->size[1] : i == 1 ? p->size[0] : p->size[i];
        start[i] = p->size[0] == 0 ? in[i] / 2 - ref[i] / 2 : loc - 1;
        fits = fits && ref[i] <= in[i] && start[i] + ref[i] <= in[i];
    }
    if (fits)
        return DLA_OK;
    char a[96], b[96], at[96];
    list(nd, ref, " x ", 0, a, sizeof a);
    list(nd, in, " x ", 0, b, sizeof b);
    if (p->size[0] == 0)
        return dla_set_error(DLA_ERR_SHAPE, "%s: the reference's %s does not fit in the "
                             "input's %s", type_of(nd), a, b);
    list(nd, p->size, " ", 1, at, sizeof at);
    return dla_set_error(DLA_ERR_SHAPE, "%s: a %s window at Location %s (column, row%s) does "
                         "not fit in the input's %s", type_of(nd), a, at,
                         nd == 3 ? ", depth" : "", b);
}

/* nd "S" dims first and no other. */
static int spatial_first(int nd, const char *format)
{
    for (int i = 0; i < nd; i++)
        if (format[i] != 'S')
            return 0;
    return !strchr(format + nd, 'S');
}

static dla_status init_for(int nd, const dla_layer *l, int nin, const dla__shape *in)
{
    for (int k = 0; k < nin; k++)
        if (!spatial_first(nd, in[k].format))
            return dla__nn_fail(DLA_ERR_FORMAT, "the input \"%s\" is \"%s\"; crop%ddLayer "
                                "needs %s \"S\" dims", k ? "ref" : "in", in[k].format, nd,
                                nd == 2 ? "two" : "three");
    int64_t start[3];
    dla_status st = window(nd, &l->props, in[0].dims, in[1].dims, start);
    return st == DLA_OK ? DLA_OK : dla__nn_fail(st, "%s", dla_last_error());
}

static dla_status init2(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)sink;
    return init_for(2, l, nin, in);
}

static dla_status init3(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)sink;
    return init_for(3, l, nin, in);
}

static dla_status forward_for(int nd, const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    const char *fx = dla_tensor_format(x), *fr = dla_tensor_format(c->x[1]);
    if (!spatial_first(nd, fx) || !spatial_first(nd, fr))
        return dla_set_error(DLA_ERR_FORMAT, "%s: the inputs are \"%s\" (in) and \"%s\" "
                             "(ref); both need %s \"S\" dims", type_of(nd), fx, fr,
                             nd == 2 ? "two" : "three");
    int64_t in[3], ref[3], start[3];
    for (int i = 0; i < nd; i++) {
        in[i] = dla_tensor_dim(x, i + 1);
        ref[i] = dla_tensor_dim(c->x[1], i + 1);
    }
    dla_status st = window(nd, p, in, ref, start);
    if (st != DLA_OK)
        return st;
    dla_tensor *y = x;
    for (int i = 0; i < nd; i++)
        y = dla_slice(y, i + 1, start[i], 1, start[i] + ref[i]);
    c->y = y;
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
    char at[96];
    list(nd, p->size, " ", 1, at, sizeof at);
    if (p->size[0] == 0)
        snprintf(buf, size, "center crop");
    else
        snprintf(buf, size, "crop at %s", at);
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

const dla__layer_kind dla__kind_crop2d = {
    .type = "crop2d", .display = "Crop 2D", .default_name = "crop", .fields = fields2,
    .ref_port = 1, .check = check2, .init = init2, .forward = forward2, .describe = describe2,
};

const dla__layer_kind dla__kind_crop3d = {
    .type = "crop3d", .display = "Crop 3D", .default_name = "crop", .fields = fields3,
    .ref_port = 1, .check = check3, .init = init3, .forward = forward3, .describe = describe3,
};

static dla_layer *crop_new(int nd, const dla__layer_kind *kind, const char *name,
                           const char *mode, const double *location)
{
    dla__props p = {0};
    int custom = 0;
    for (int i = 0; i < nd; i++)
        custom |= location[i] != 0;
    char what[32];
    snprintf(what, sizeof what, "%s: Mode", type_of(nd));
    dla_status st = dla__props_string(p.mode, mode, custom ? "custom" : "centercrop", what);
    for (int i = 0; custom && i < nd && st == DLA_OK; i++) {
        const double v = location[i];
        if (v >= 1 && v <= (double)MAX_LOCATION && v == (double)(int64_t)v) {
            p.size[i] = (int64_t)v;
            continue;
        }
        char at[96];
        if (nd == 3)
            snprintf(at, sizeof at, "[%g %g %g]", location[0], location[1], location[2]);
        else
            snprintf(at, sizeof at, "[%g %g]", location[0], location[1]);
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: Location %s must be whole numbers "
                          "from 1 to %lld (the column, row%s of the window's first corner)",
                          type_of(nd), at, (long long)MAX_LOCATION, nd == 3 ? " and depth" : "");
    }
    return dla__layer_new(kind, name, 2, &p, st);
}

DLA_API dla_layer *dla_crop2d_layer(const dla_crop2d_layer_options *opts)
{
    static const dla_crop2d_layer_options none;
    const dla_crop2d_layer_options *o = opts ? opts : &none;
    return crop_new(2, &dla__kind_crop2d, o->name, o->mode, o->location);
}

DLA_API dla_layer *dla_crop3d_layer(const dla_crop3d_layer_options *opts)
{
    static const dla_crop3d_layer_options none;
    const dla_crop3d_layer_options *o = opts ? opts : &none;
    return crop_new(3, &dla__kind_crop3d, o->name, o->mode, o->location);
}

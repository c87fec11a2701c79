/*
 * layer_crop.c - crop2dLayer: crops the two "S" dims of its input "in" to
 * the height and width of its second input "ref", at the centre or at a
 * given upper-left corner; no learnables. Only ref's size is read, so no
 * gradient flows into ref (MATLAB's layer alike).
 *
 * Options as MATLAB's properties: Mode "centercrop" or "custom", Location
 * [x y] (1-based column and row of the window's upper-left corner; 0 0
 * with "centercrop", MATLAB's 'auto').
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const char type[] = "crop2d";

static const dla__field fields[] = {
    F("Mode", DLA__F_STRING, mode, 1),
    F("Location", DLA__F_INT, size, 2),
    {NULL, 0, 0, 0},
};

#define MAX_LOCATION ((int64_t)1 << 30)

static dla_status check(const dla__props *p, const char *name)
{
    if (!strcmp(p->mode, "centercrop")) {
        if (p->size[0] != 0 || p->size[1] != 0)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Location [%lld %lld] with "
                                "Mode \"centercrop\"; give one or the other", type, name,
                                (long long)p->size[0], (long long)p->size[1]);
        return DLA_OK;
    }
    if (strcmp(p->mode, "custom"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Mode \"%s\"; use \"centercrop\" "
                            "or \"custom\" (a Location)", type, name, p->mode);
    for (int i = 0; i < 2; i++)
        if (p->size[i] < 1 || p->size[i] > MAX_LOCATION)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Location [%lld %lld] must "
                                "be whole numbers from 1 to %lld (the column and row of the "
                                "window's upper-left corner)", type, name, (long long)p->size[0],
                                (long long)p->size[1], (long long)MAX_LOCATION);
    return DLA_OK;
}

/* The window's first row and column (0-based) in an input of h x w for a
 * reference of rh x rw, or an error naming both sizes. The centre crop
 * puts the input's centre element, floor(n/2) + 1 in MATLAB's 1-based
 * terms, on the window's own: with an odd leftover the extra row is
 * above. */
static dla_status window(const dla__props *p, const int64_t in[2], const int64_t ref[2],
                         int64_t start[2])
{
    for (int i = 0; i < 2; i++) {
        /* Location is [x y]: x the column (dim 2), y the row (dim 1). */
        start[i] = p->size[0] == 0 ? in[i] / 2 - ref[i] / 2 : p->size[1 - i] - 1;
        if (ref[i] > in[i] || start[i] + ref[i] > in[i])
            break;
        if (i == 1)
            return DLA_OK;
    }
    if (p->size[0] == 0)
        return dla_set_error(DLA_ERR_SHAPE, "%s: the reference's %lld x %lld does not fit in the "
                             "input's %lld x %lld", type, (long long)ref[0], (long long)ref[1],
                             (long long)in[0], (long long)in[1]);
    return dla_set_error(DLA_ERR_SHAPE, "%s: a %lld x %lld window at Location [%lld %lld] "
                         "(column, row) does not fit in the input's %lld x %lld", type,
                         (long long)ref[0], (long long)ref[1], (long long)p->size[0],
                         (long long)p->size[1], (long long)in[0], (long long)in[1]);
}

static int spatial_first(const char *format)
{
    return format[0] == 'S' && format[1] == 'S' && !strchr(format + 2, 'S');
}

static dla_status init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)sink;
    for (int k = 0; k < nin; k++)
        if (!spatial_first(in[k].format))
            return dla__nn_fail(DLA_ERR_FORMAT, "the input \"%s\" is \"%s\"; crop2dLayer needs "
                                "two \"S\" dims", k ? "ref" : "in", in[k].format);
    int64_t start[2];
    dla_status st = window(&l->props, in[0].dims, in[1].dims, start);
    return st == DLA_OK ? DLA_OK : dla__nn_fail(st, "%s", dla_last_error());
}

static dla_status forward(const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    const char *fx = dla_tensor_format(x), *fr = dla_tensor_format(c->x[1]);
    if (!spatial_first(fx) || !spatial_first(fr))
        return dla_set_error(DLA_ERR_FORMAT, "%s: the inputs are \"%s\" (in) and \"%s\" (ref); "
                             "both need two \"S\" dims", type, fx, fr);
    const int64_t in[2] = {dla_tensor_dim(x, 1), dla_tensor_dim(x, 2)};
    const int64_t ref[2] = {dla_tensor_dim(c->x[1], 1), dla_tensor_dim(c->x[1], 2)};
    int64_t start[2];
    dla_status st = window(p, in, ref, start);
    if (st != DLA_OK)
        return st;
    dla_tensor *rows = dla_slice(x, 1, start[0], 1, start[0] + ref[0]);
    c->y = dla_slice(rows, 2, start[1], 1, start[1] + ref[1]);
    return dla_tensor_status(c->y);
}

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    if (p->size[0] == 0)
        snprintf(buf, size, "center crop");
    else
        snprintf(buf, size, "crop at [%lld %lld]", (long long)p->size[0], (long long)p->size[1]);
}

const dla__layer_kind dla__kind_crop2d = {
    .type = type, .display = "Crop 2D", .default_name = "crop", .fields = fields,
    .ref_port = 1, .check = check, .init = init, .forward = forward,
    .describe = describe,
};

DLA_API dla_layer *dla_crop2d_layer(const dla_crop2d_layer_options *opts)
{
    dla__props p = {0};
    const int custom = opts && (opts->location[0] != 0 || opts->location[1] != 0);
    dla_status st = dla__props_string(p.mode, opts ? opts->mode : NULL,
                                      custom ? "custom" : "centercrop", "crop2d: Mode");
    for (int i = 0; custom && i < 2 && st == DLA_OK; i++) {
        const double v = opts->location[i];
        if (!(v >= 1 && v <= (double)MAX_LOCATION) || v != (double)(int64_t)v)
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: Location [%g %g] must be whole "
                              "numbers from 1 to %lld (the column and row of the window's "
                              "upper-left corner)", type, opts->location[0], opts->location[1],
                              (long long)MAX_LOCATION);
        else
            p.size[i] = (int64_t)v;
    }
    return dla__layer_new(&dla__kind_crop2d, opts ? opts->name : NULL, 2, &p, st);
}

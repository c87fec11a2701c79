/*
 * dlaccel/plugin_kit_geom.h - the plugin kit's geometry: convolution,
 * pooling and gather/scatter_add arguments checked and reduced to the
 * sizes, strides and offsets a kernel loops over (included by
 * dlaccel/plugin_kit.h; include that).
 *
 * The geometry structs hold only int64_t members, so a device plugin may
 * hand one to its device code as it is (an OpenCL kernel argument of
 * longs in the same order, say), and a host plugin reads it directly.
 * Spatial dims past nspatial are filled with size 1, stride 1, dilation 1
 * and no padding, so every loop can run over three spatial dims.
 */
/* Before the guard: included first, this header still comes in dlaccel/plugin_kit.h's
 * order, after the declarations it uses. */
#include <dlaccel/plugin_kit.h>
#ifndef DLACCEL_PLUGIN_KIT_GEOM_H
#define DLACCEL_PLUGIN_KIT_GEOM_H

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------- convolution */

/* The three convolution kernels, in the order of the ABI's kernel ids. */
typedef enum dla_kit_conv_dir {
    DLA_KIT_CONV_FORWARD,
    DLA_KIT_CONV_BACKWARD_DATA,
    DLA_KIT_CONV_BACKWARD_FILTER
} dla_kit_conv_dir;

/* The kernel name of a direction ("conv_backward_data"). */
static inline const char *dla_kit_conv_name(dla_kit_conv_dir dir)
{
    return dir == DLA_KIT_CONV_FORWARD         ? "conv_forward"
           : dir == DLA_KIT_CONV_BACKWARD_DATA ? "conv_backward_data"
                                               : "conv_backward_filter";
}

/* One checked convolution (dla_conv_args' layouts, element units):
 *   x element (spatial i0 i1 i2, channel c, image b) at
 *     xoff + i0 xs[0] + i1 xs[1] + i2 xs[2] + c xc + b xb;
 *   w element (taps k0 k1 k2, channel in group c, filter in group f,
 *     group g) at woff + k.ws + c wc + f wf + g wg;
 *   y element (spatial, filter f, image b) at yoff + o.ys + f yf + b yb;
 *   bias element f at boff + f bs (has_bias 0: none).
 * Every size fits in int32 (the check refuses more), so device code may
 * index spatial positions with 32-bit ints. */
typedef struct dla_kit_conv {
    int64_t in[3], out[3], fs[3], st[3], dl[3], pb[3];
    int64_t batch, C, F, G, Cg, Fg; /* Cg = C / G, Fg = F / G */
    int64_t ntaps, in_px, out_px;   /* products of fs, in and out */
    int64_t xs[3], xc, xb, xoff;
    int64_t ws[3], wc, wf, wg, woff;
    int64_t ys[3], yf, yb, yoff;
    int64_t bs, boff, has_bias;
    int64_t nspatial;
} dla_kit_conv;

/* v must have dims want[0..n-1] (dims past its ndims count as 1, its dims
 * past n must be 1); meaning names the layout in the message. */
static inline dla_status dla_kit_check_layout(const dla_kit *kit, const char *kernel,
                                              const char *arg, const dla_view *v, int n,
                                              const int64_t *want, const char *meaning)
{
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= dla_kit_dim(v, i) == want[i];
    for (int i = n; i < v->ndims; i++)
        ok &= v->dims[i] == 1;
    if (ok)
        return DLA_OK;
    char got[DLA_KIT_DIMS_BUF], exp[DLA_KIT_DIMS_BUF];
    return kit->host->error(DLA_ERR_SHAPE, "%s %s: argument %s: dims %s, expected %s (%s)",
                            kit->name, kernel, arg,
                            dla_kit_dims_str(got, sizeof got, v->ndims, v->dims),
                            dla_kit_dims_str(exp, sizeof exp, n, want), meaning);
}

/* A view checked and of the call's dtype. */
static inline dla_status dla__kit_operand(const dla_kit *kit, const char *kernel, const char *arg,
                                          const dla_view *v, dla_dtype dtype)
{
    dla_status s = dla_kit_check_view(kit, kernel, arg, v);
    if (s != DLA_OK)
        return s;
    if (v->dtype != dtype)
        return kit->host->error(DLA_ERR_DTYPE, "%s %s: argument %s: %s, the call's dtype is %s",
                                kit->name, kernel, arg, dla_kit_dtype_name(v->dtype),
                                dla_kit_dtype_name(dtype));
    return DLA_OK;
}

/* Checks the arguments of convolution dir and fills p: struct_size, a
 * float dtype, nspatial 1..3, channels positive multiples of groups, each
 * size within int32 (filter, stride, dilation >= 1; padding may be
 * negative: cropping), x, w and y (and a forward's bias, a vector of F
 * elements along any one dim) checked, of the dtype and the layouts of
 * dla_conv_args, and the written operand apart from those it reads. */
static inline dla_status dla_kit_conv_prepare(const dla_kit *kit, const dla_conv_args *a,
                                              dla_kit_conv_dir dir, dla_kit_conv *p)
{
    const dla_plugin_host *h = kit->host;
    const char *k = dla_kit_conv_name(dir);
    dla_status s = dla_kit_check_args_size(kit, k, a->struct_size, sizeof *a, "1.1");
    if (s != DLA_OK || (s = dla_kit_check_float_dtype(kit, k, "dtype", a->dtype)) != DLA_OK)
        return s;
    if (a->nspatial < 1 || a->nspatial > 3)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument nspatial: %d outside 1..3",
                        kit->name, k, (int)a->nspatial);
    const int64_t big = INT32_MAX;
    if (a->batch < 0 || a->batch > big || a->in_channels < 1 || a->in_channels > big ||
        a->out_channels < 1 || a->out_channels > big || a->groups < 1 ||
        a->in_channels % a->groups || a->out_channels % a->groups)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: arguments batch=%lld in_channels=%lld out_channels=%lld "
                        "groups=%lld: channels must be positive multiples of groups",
                        kit->name, k, (long long)a->batch, (long long)a->in_channels,
                        (long long)a->out_channels, (long long)a->groups);
    memset(p, 0, sizeof *p);
    const int n = a->nspatial;
    p->nspatial = n;
    p->batch = a->batch;
    p->C = a->in_channels, p->F = a->out_channels, p->G = a->groups;
    p->Cg = p->C / p->G, p->Fg = p->F / p->G;
    for (int i = 0; i < 3; i++) {
        if (i >= n) {
            p->in[i] = p->out[i] = p->fs[i] = p->st[i] = p->dl[i] = 1;
            continue;
        }
        if (a->in_size[i] < 0 || a->in_size[i] > big || a->out_size[i] < 0 ||
            a->out_size[i] > big || a->filter_size[i] < 1 || a->filter_size[i] > big ||
            a->stride[i] < 1 || a->stride[i] > big || a->dilation[i] < 1 ||
            a->dilation[i] > big || a->pad_begin[i] < -big || a->pad_begin[i] > big)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: spatial dim %d: in_size %lld, out_size %lld, filter_size "
                            "%lld, stride %lld, dilation %lld, pad_begin %lld: sizes must be in "
                            "0..2^31-1, filter, stride and dilation in 1..2^31-1 and pad_begin "
                            "within 2^31-1 of 0",
                            kit->name, k, i + 1, (long long)a->in_size[i],
                            (long long)a->out_size[i], (long long)a->filter_size[i],
                            (long long)a->stride[i], (long long)a->dilation[i],
                            (long long)a->pad_begin[i]);
        p->in[i] = a->in_size[i], p->out[i] = a->out_size[i], p->fs[i] = a->filter_size[i];
        p->st[i] = a->stride[i], p->dl[i] = a->dilation[i], p->pb[i] = a->pad_begin[i];
    }
    int64_t want[6];
    if ((s = dla__kit_operand(kit, k, "x", &a->x, a->dtype)) != DLA_OK ||
        (s = dla__kit_operand(kit, k, "w", &a->w, a->dtype)) != DLA_OK ||
        (s = dla__kit_operand(kit, k, "y", &a->y, a->dtype)) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->in[i];
    want[n] = p->C, want[n + 1] = p->batch;
    if ((s = dla_kit_check_layout(kit, k, "x", &a->x, n + 2, want, "in_size x C x batch")) !=
        DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->fs[i];
    want[n] = p->Cg, want[n + 1] = p->Fg, want[n + 2] = p->G;
    if ((s = dla_kit_check_layout(kit, k, "w", &a->w, n + 3, want,
                                  "filter_size x C/G x F/G x G")) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->out[i];
    want[n] = p->F, want[n + 1] = p->batch;
    if ((s = dla_kit_check_layout(kit, k, "y", &a->y, n + 2, want, "out_size x F x batch")) !=
        DLA_OK)
        return s;
    /* Only now: x, w and y have these dims and each view's element count
     * fits an int64, so these products do (three sizes of 2^31 - 1 do
     * not). */
    p->ntaps = p->fs[0] * p->fs[1] * p->fs[2];
    p->in_px = p->in[0] * p->in[1] * p->in[2];
    p->out_px = p->out[0] * p->out[1] * p->out[2];
    /* The written operand shares memory with neither of the others. */
    const dla_view *out = dir == DLA_KIT_CONV_FORWARD         ? &a->y
                          : dir == DLA_KIT_CONV_BACKWARD_DATA ? &a->x
                                                              : &a->w;
    const dla_view *in1 = dir == DLA_KIT_CONV_FORWARD ? &a->x : &a->y;
    const dla_view *in2 = dir == DLA_KIT_CONV_BACKWARD_FILTER ? &a->x : &a->w;
    if (dla_kit_views_overlap(out, in1) || dla_kit_views_overlap(out, in2))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: the written operand shares memory with an operand it reads",
                        kit->name, k);
    p->xoff = a->x.offset, p->woff = a->w.offset, p->yoff = a->y.offset;
    for (int i = 0; i < 3; i++) {
        p->xs[i] = i < n ? dla_kit_stride(&a->x, i) : 0;
        p->ws[i] = i < n ? dla_kit_stride(&a->w, i) : 0;
        p->ys[i] = i < n ? dla_kit_stride(&a->y, i) : 0;
    }
    p->xc = dla_kit_stride(&a->x, n), p->xb = dla_kit_stride(&a->x, n + 1);
    p->wc = dla_kit_stride(&a->w, n), p->wf = dla_kit_stride(&a->w, n + 1);
    p->wg = dla_kit_stride(&a->w, n + 2);
    p->yf = dla_kit_stride(&a->y, n), p->yb = dla_kit_stride(&a->y, n + 1);
    if (dir != DLA_KIT_CONV_FORWARD || a->bias.mem == NULL)
        return DLA_OK;
    if ((s = dla__kit_operand(kit, k, "bias", &a->bias, a->dtype)) != DLA_OK)
        return s;
    /* A vector of F elements along any one dim. */
    int along = -1, others = 0;
    for (int i = 0; i < a->bias.ndims; i++)
        if (a->bias.dims[i] != 1) {
            others += along >= 0;
            along = i;
        }
    if (dla_kit_numel(&a->bias) != p->F || others) {
        char got[DLA_KIT_DIMS_BUF];
        return h->error(DLA_ERR_SHAPE,
                        "%s %s: argument bias: dims %s, expected a vector of %lld elements",
                        kit->name, k,
                        dla_kit_dims_str(got, sizeof got, a->bias.ndims, a->bias.dims),
                        (long long)p->F);
    }
    p->has_bias = 1;
    p->boff = a->bias.offset;
    p->bs = along >= 0 ? a->bias.strides[along] : 0;
    return DLA_OK;
}

/* Checks the arguments of a convolution pass with an epilogue (ABI 1.9:
 * conv_forward_fused with dir DLA_KIT_CONV_FORWARD, whose result R is
 * conv.y, or conv_backward_data_fused with DLA_KIT_CONV_BACKWARD_DATA, R
 * conv.x) and fills p with its convolution's: the convolution as the
 * pass's (its messages name conv_forward or conv_backward_data), R of
 * nspatial + 2 dims; the epilogue as fused's (its arguments named
 * "epilogue.y", "epilogue.inputs[i]"), of R's dims and dtype, input
 * conv_input R's very view, epilogue.y apart from what the pass reads, and
 * R apart from every other input. */
static inline dla_status dla_kit_conv_fused_prepare(const dla_kit *kit,
                                                    const dla_conv_fused_args *a,
                                                    dla_kit_conv_dir dir, dla_kit_conv *p)
{
    const dla_plugin_host *h = kit->host;
    const int fwd = dir == DLA_KIT_CONV_FORWARD;
    const char *k = fwd ? "conv_forward_fused" : "conv_backward_data_fused";
    const dla_fused_args *e = &a->epilogue;
    dla_status s = dla_kit_check_args_size(kit, k, a->struct_size, sizeof *a, "1.9");
    if (s != DLA_OK)
        return s;
    if (dir == DLA_KIT_CONV_BACKWARD_FILTER)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: the filter gradient takes no epilogue",
                        kit->name, k);
    if ((s = dla_kit_conv_prepare(kit, &a->conv, dir, p)) != DLA_OK ||
        (s = dla__kit_fused_counts(kit, k, 2, e)) != DLA_OK ||
        (s = dla__kit_check_fused_views(kit, k, 2, e)) != DLA_OK ||
        (s = dla_kit_check_fused_program(kit, k, e)) != DLA_OK)
        return s;
    char b1[DLA_KIT_DIMS_BUF];
    const dla_view *r = fwd ? &a->conv.y : &a->conv.x;
    const char *rname = fwd ? "conv.y" : "conv.x";
    if (r->ndims != a->conv.nspatial + 2)
        return h->error(DLA_ERR_SHAPE,
                        "%s %s: argument %s: dims %s; an epilogue needs all %d dims (spatial, "
                        "channels, images)",
                        kit->name, k, rname, dla_kit_dims_str(b1, sizeof b1, r->ndims, r->dims),
                        (int)a->conv.nspatial + 2);
    if ((s = dla_kit_check_same_dims(kit, k, "epilogue.y", &e->y, rname, r)) != DLA_OK)
        return s;
    if (e->dtype != a->conv.dtype)
        return h->error(DLA_ERR_DTYPE, "%s %s: argument epilogue.dtype: %s, the convolution's is %s",
                        kit->name, k, dla_kit_dtype_name(e->dtype),
                        dla_kit_dtype_name(a->conv.dtype));
    if (a->conv_input < 0 || a->conv_input >= e->ninputs ||
        !dla_kit_same_view(&e->inputs[a->conv_input], r))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument conv_input: %d is not an input of the epilogue (0..%d) "
                        "that is %s's very view",
                        kit->name, k, (int)a->conv_input, (int)e->ninputs - 1, rname);
    const dla_view *read1 = fwd ? &a->conv.x : &a->conv.y;
    const char *hit = dla_kit_views_overlap(&e->y, read1)          ? (fwd ? "conv.x" : "conv.y")
                      : dla_kit_views_overlap(&e->y, &a->conv.w) ? "conv.w"
                      : fwd && a->conv.bias.mem && dla_kit_views_overlap(&e->y, &a->conv.bias)
                          ? "conv.bias"
                          : NULL;
    if (hit)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument epilogue.y (dims %s): overlaps %s, which the convolution "
                        "reads",
                        kit->name, k, dla_kit_dims_str(b1, sizeof b1, e->y.ndims, e->y.dims), hit);
    for (int i = 0; i < e->ninputs; i++)
        if (dla_kit_views_overlap(r, &e->inputs[i]) && !dla_kit_same_view(r, &e->inputs[i]))
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: argument %s (dims %s): overlaps %s without being the same "
                            "view",
                            kit->name, k, rname, dla_kit_dims_str(b1, sizeof b1, r->ndims, r->dims),
                            dla_kit_fused_input_name(i, 2));
    return DLA_OK;
}

/* ----------------------------------------------------------- pooling */

/* Logical dims of a pooling operand: s0 s1 s2 channels batch. */
#define DLA_KIT_POOL_DIMS 5

/* One checked pooling. Operands are seen in the five logical dims with
 * their views' strides (xs, ys, is; a spatial dim past nspatial has
 * stride 0); a plane is one (channel, batch) pair, plane p at
 * (p % channels) * s[3] + (p / channels) * s[4]. The window at output o
 * along dim d starts at o stride[d] - pad[d]. */
typedef struct dla_kit_pool {
    int64_t in[3], out[3], win[3], stride[3], pad[3];
    int64_t channels, planes, exclude_pad, full; /* full: elements of a whole window */
    int64_t xs[DLA_KIT_POOL_DIMS], ys[DLA_KIT_POOL_DIMS], is[DLA_KIT_POOL_DIMS];
    int64_t xoff, yoff, ioff; /* ioff 0 without an index */
    /* x's spatial block is one dense run: a max index (a position in the
     * spatial block) is then its element offset over xs[0]. */
    int64_t x_spatial_dense;
} dla_kit_pool;

/* Maps view v onto the logical dims want: its dims must be those (its
 * trailing dims of 1 optional, or extra); its strides into strides. */
static inline dla_status dla__kit_pool_map(const dla_kit *kit, const char *kernel,
                                           const char *arg, const dla_view *v,
                                           const int64_t *want, int64_t *strides)
{
    int ok = 1;
    for (int d = 0; d < DLA_KIT_POOL_DIMS; d++) {
        ok &= dla_kit_dim(v, d) == want[d];
        strides[d] = dla_kit_stride(v, d);
    }
    for (int d = DLA_KIT_POOL_DIMS; d < v->ndims; d++)
        ok &= v->dims[d] == 1;
    if (ok)
        return DLA_OK;
    char got[DLA_KIT_DIMS_BUF], exp[DLA_KIT_DIMS_BUF];
    return kit->host->error(DLA_ERR_SHAPE,
                            "%s %s: argument %s: dims %s, expected %s (spatial x channels x "
                            "batch)",
                            kit->name, kernel, arg,
                            dla_kit_dims_str(got, sizeof got, v->ndims, v->dims),
                            dla_kit_dims_str(exp, sizeof exp, DLA_KIT_POOL_DIMS, want));
}

/* Checks the arguments of pool_forward (backward 0) or pool_backward
 * (backward 1) and fills g: a known mode, a float dtype, nspatial 1..3,
 * channels and batch >= 0, sizes (window and stride >= 1), a max window
 * that holds an input element, x, y and index checked and of the layouts
 * (spatial dims as the views have them, then channels, batch), an index
 * only with max, int32, required by a max backward and its positions
 * within int32, and the written operands apart from the others. */
static inline dla_status dla_kit_pool_prepare(const dla_kit *kit, const char *kernel,
                                              const dla_pool_args *a, int backward,
                                              dla_kit_pool *g)
{
    const dla_plugin_host *h = kit->host;
    const char *p = kit->name;
    dla_status s = dla_kit_check_args_size(kit, kernel, a->struct_size, sizeof *a, "1.1");
    if (s != DLA_OK)
        return s;
    if ((unsigned)a->mode >= DLA_POOL_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "%s %s: argument mode: unknown mode %d", p, kernel,
                        (int)a->mode);
    if ((s = dla_kit_check_float_dtype(kit, kernel, "dtype", a->dtype)) != DLA_OK)
        return s;
    const int n = a->nspatial;
    if (n < 1 || n > 3)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument nspatial: %d outside 1..3", p,
                        kernel, n);
    if (a->channels < 0 || a->batch < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument channels/batch: %lld x %lld, negative", p, kernel,
                        (long long)a->channels, (long long)a->batch);
    memset(g, 0, sizeof *g);
    for (int d = 0; d < 3; d++) {
        const int used = d < n;
        g->in[d] = used ? a->in_size[d] : 1;
        g->out[d] = used ? a->out_size[d] : 1;
        g->win[d] = used ? a->window[d] : 1;
        g->stride[d] = used ? a->stride[d] : 1;
        g->pad[d] = used ? a->pad_begin[d] : 0;
        if (g->in[d] < 0 || g->out[d] < 0 || g->win[d] < 1 || g->stride[d] < 1 || g->pad[d] < 0)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: spatial dim %d: in %lld, out %lld, window %lld, stride %lld, "
                            "pad %lld (need in, out, pad >= 0 and window, stride >= 1)",
                            p, kernel, d + 1, (long long)g->in[d], (long long)g->out[d],
                            (long long)g->win[d], (long long)g->stride[d], (long long)g->pad[d]);
        /* A window wholly in the padding has no maximum; average windows
         * there are defined (0), max ones are a shape error as for an
         * empty max reduction. */
        if (a->mode == DLA_POOL_MAX && g->out[d] > 0 &&
            (g->pad[d] >= g->win[d] || (g->out[d] - 1) * g->stride[d] - g->pad[d] >= g->in[d]))
            return h->error(DLA_ERR_SHAPE,
                            "%s %s: spatial dim %d: in %lld, out %lld, window %lld, stride %lld, "
                            "pad %lld leave a max window with no input element",
                            p, kernel, d + 1, (long long)g->in[d], (long long)g->out[d],
                            (long long)g->win[d], (long long)g->stride[d], (long long)g->pad[d]);
    }
    g->channels = a->channels;
    /* Windows and planes past an int64 count (2^32 x 2^32 windows need no
     * memory): a wrapped window size made an average 0. */
    int64_t w01;
    if (__builtin_mul_overflow(g->win[0], g->win[1], &w01) ||
        __builtin_mul_overflow(w01, g->win[2], &g->full) ||
        __builtin_mul_overflow(a->channels, a->batch, &g->planes))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: windows of %lldx%lldx%lld over %lld channels x %lld images: more "
                        "elements than an int64 counts",
                        p, kernel, (long long)g->win[0], (long long)g->win[1],
                        (long long)g->win[2], (long long)a->channels, (long long)a->batch);
    g->exclude_pad = a->avg_exclude_pad != 0;

    const dla_view *x = &a->x, *y = &a->y, *ix = &a->index;
    const int have_index = ix->mem != NULL;
    const int64_t xdims[DLA_KIT_POOL_DIMS] = {g->in[0], g->in[1], g->in[2], a->channels,
                                              a->batch};
    const int64_t ydims[DLA_KIT_POOL_DIMS] = {g->out[0], g->out[1], g->out[2], a->channels,
                                              a->batch};
    /* The spatial dims as the view sees them: the unused ones are absent. */
    int64_t xw[DLA_KIT_POOL_DIMS], yw[DLA_KIT_POOL_DIMS];
    for (int d = 0, k = 0; d < DLA_KIT_POOL_DIMS; d++) {
        if (d >= n && d < 3)
            continue;
        xw[k] = xdims[d], yw[k] = ydims[d], k++;
    }
    for (int k = n + 2; k < DLA_KIT_POOL_DIMS; k++)
        xw[k] = yw[k] = 1;
    int64_t xs[DLA_KIT_POOL_DIMS], ys[DLA_KIT_POOL_DIMS], is[DLA_KIT_POOL_DIMS] = {0};
    if ((s = dla_kit_check_view(kit, kernel, "x", x)) != DLA_OK ||
        (s = dla_kit_check_view(kit, kernel, "y", y)) != DLA_OK ||
        (have_index && (s = dla_kit_check_view(kit, kernel, "index", ix)) != DLA_OK) ||
        (s = dla__kit_pool_map(kit, kernel, "x", x, xw, xs)) != DLA_OK ||
        (s = dla__kit_pool_map(kit, kernel, "y", y, yw, ys)) != DLA_OK ||
        (have_index && (s = dla__kit_pool_map(kit, kernel, "index", ix, yw, is)) != DLA_OK))
        return s;
    char buf[DLA_KIT_DIMS_BUF];
    if (x->dtype != a->dtype || y->dtype != a->dtype) {
        const dla_view *odd = x->dtype != a->dtype ? x : y;
        return h->error(DLA_ERR_DTYPE, "%s %s: argument %s (dims %s): dtype %s, expected %s", p,
                        kernel, odd == x ? "x" : "y",
                        dla_kit_dims_str(buf, sizeof buf, odd->ndims, odd->dims),
                        dla_kit_dtype_name(odd->dtype), dla_kit_dtype_name(a->dtype));
    }
    if (have_index && a->mode != DLA_POOL_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument index (dims %s): only a max pool has an index", p, kernel,
                        dla_kit_dims_str(buf, sizeof buf, ix->ndims, ix->dims));
    if (have_index && ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE, "%s %s: argument index (dims %s): dtype %s, expected int32",
                        p, kernel, dla_kit_dims_str(buf, sizeof buf, ix->ndims, ix->dims),
                        dla_kit_dtype_name(ix->dtype));
    if (backward && a->mode == DLA_POOL_MAX && !have_index)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument index: a max pool's backward needs the forward's index",
                        p, kernel);
    if (g->in[0] * g->in[1] * g->in[2] > INT32_MAX && have_index)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument index: %lld spatial positions do not fit in int32", p,
                        kernel, (long long)(g->in[0] * g->in[1] * g->in[2]));
    /* Written operands share memory with none: x and y never, the index
     * not with x, nor with y where it is written too (forward). */
    const char *clash = dla_kit_views_overlap(x, y)                         ? "x and y"
                        : have_index && dla_kit_views_overlap(ix, x)        ? "index and x"
                        : have_index && !backward && dla_kit_views_overlap(ix, y) ? "index and y"
                                                                            : NULL;
    if (clash)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: arguments %s share memory", p, kernel,
                        clash);
    /* Back from the view's order to the logical one. */
    for (int d = 0, k = 0; d < DLA_KIT_POOL_DIMS; d++) {
        if (d >= n && d < 3)
            continue;
        g->xs[d] = xs[k], g->ys[d] = ys[k], g->is[d] = is[k], k++;
    }
    g->xoff = x->offset, g->yoff = y->offset, g->ioff = have_index ? ix->offset : 0;
    g->x_spatial_dense = 1;
    int64_t expect = g->xs[0];
    for (int d = 1; d < 3; d++) {
        expect *= g->in[d - 1];
        g->x_spatial_dense &= g->in[d] == 1 || g->xs[d] == expect;
    }
    return DLA_OK;
}

/* --------------------------------------------------------- reduction */

/* A checked reduction's dims split in two lists, each coalesced (dims of
 * 1 dropped, neighbours merged where the strides allow): the kept dims
 * (y's equals x's), kd with the strides of x, y and the index (0 without
 * one) in kx, ky, ki; the reduced dims, rd with x's strides rx, merged
 * only where that keeps the column-major position within the reduced
 * block (the position an index reports). nk may be 0 (a full
 * reduction); nr is at least 1 (a dim of 1, stride 0, when nothing is
 * reduced). outputs = y's element count, nred = the block's. */
typedef struct dla_kit_reduce {
    int64_t outputs, nred, nk, nr;
    int64_t xoff, yoff, ioff;
    int64_t kd[DLA_MAX_DIMS], kx[DLA_MAX_DIMS], ky[DLA_MAX_DIMS], ki[DLA_MAX_DIMS];
    int64_t rd[DLA_MAX_DIMS], rx[DLA_MAX_DIMS];
} dla_kit_reduce;

/* Fills r from reduce arguments that dla_kit_check_reduce accepted. */
static inline void dla_kit_reduce_split(const dla_reduce_args *a, dla_kit_reduce *r)
{
    const dla_view *x = &a->x, *y = &a->y, *ix = &a->index;
    const int want_index = ix->mem != NULL;
    memset(r, 0, sizeof *r);
    r->nred = 1;
    r->outputs = 1;
    for (int d = 0; d < x->ndims; d++) {
        const int64_t n = x->dims[d];
        if (y->dims[d] == n) {
            r->outputs *= n;
            if (n == 1)
                continue;
            const int j = (int)r->nk - 1;
            const int64_t is = want_index ? ix->strides[d] : 0;
            if (j >= 0 && x->strides[d] == r->kx[j] * r->kd[j] &&
                y->strides[d] == r->ky[j] * r->kd[j] && is == r->ki[j] * r->kd[j]) {
                r->kd[j] *= n;
                continue;
            }
            r->kd[r->nk] = n, r->kx[r->nk] = x->strides[d];
            r->ky[r->nk] = y->strides[d], r->ki[r->nk] = is;
            r->nk++;
        } else {
            r->nred *= n;
            const int j = (int)r->nr - 1;
            if (j >= 0 && x->strides[d] == r->rx[j] * r->rd[j]) {
                r->rd[j] *= n;
                continue;
            }
            r->rd[r->nr] = n, r->rx[r->nr] = x->strides[d];
            r->nr++;
        }
    }
    if (r->nr == 0)
        r->nr = 1, r->rd[0] = 1, r->rx[0] = 0;
    r->xoff = x->offset, r->yoff = y->offset, r->ioff = want_index ? ix->offset : 0;
}

/* ---------------------------------------------- gather, scatter_add */

/* One checked gather or scatter_add. ys and xs are y and x with dim cut
 * to 1 (and trailing dims of 1 added up to dim + 1), so they are the
 * slices at position 0, of equal dims; one step along dim moves ystep
 * in y and xstep in x. The index has len positions, position i at
 * index.offset + i * istep, each to lie in 0..target-1. */
typedef struct dla_kit_index {
    dla_view ys, xs;
    int64_t ystep, xstep;
    int64_t len, target, istep;
} dla_kit_index;

/* The one dim of v longer than 1 (its length and stride), or 1 and 0 when
 * there is none; -1 when there are two. */
static inline int dla_kit_vector_of(const dla_view *v, int64_t *len, int64_t *stride)
{
    *len = 1, *stride = 0;
    int found = 0;
    for (int d = 0; d < v->ndims; d++) {
        if (v->dims[d] == 1)
            continue;
        if (found++)
            return -1;
        *len = v->dims[d], *stride = v->strides[d];
    }
    return 0;
}

/* Checks the arguments of gather (scatter 0) or scatter_add (scatter 1)
 * and fills p: y, x and index checked, dim 0..DLA_MAX_DIMS-1, scatter_add's
 * y float, x of y's dtype, the index an int32 vector (any one dim, any
 * stride), x and y of equal dims but along dim (trailing dims left off
 * count as 1), where the sliced one (gather's y, scatter's x) has the
 * index's length, scatter_add's y without stride 0 where a sum would
 * land twice, y apart from x and the index. The index values themselves
 * are the plugin's to read; dla_kit_index_check_values checks them. */
static inline dla_status dla_kit_index_prepare(const dla_kit *kit, const char *kernel,
                                               const dla_index_args *a, int scatter,
                                               dla_kit_index *p)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, kernel, a->struct_size, sizeof *a, "1.1");
    if (s != DLA_OK)
        return s;
    const dla_view *y = &a->y, *x = &a->x, *ix = &a->index;
    if ((s = dla_kit_check_view(kit, kernel, "y", y)) != DLA_OK ||
        (s = dla_kit_check_view(kit, kernel, "x", x)) != DLA_OK ||
        (s = dla_kit_check_view(kit, kernel, "index", ix)) != DLA_OK)
        return s;
    char bx[DLA_KIT_DIMS_BUF], by[DLA_KIT_DIMS_BUF];
    const int dim = a->dim;
    if (dim < 0 || dim >= DLA_MAX_DIMS)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument dim: %d outside 0..%d",
                        kit->name, kernel, dim, DLA_MAX_DIMS - 1);
    if (scatter && (s = dla_kit_check_float(kit, kernel, "y", y)) != DLA_OK)
        return s;
    if (x->dtype != y->dtype)
        return h->error(DLA_ERR_DTYPE, "%s %s: argument x (dims %s): dtype %s differs from y's %s",
                        kit->name, kernel, dla_kit_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla_kit_dtype_name(x->dtype), dla_kit_dtype_name(y->dtype));
    if (ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE, "%s %s: argument index (dims %s): dtype %s, expected int32",
                        kit->name, kernel, dla_kit_dims_str(bx, sizeof bx, ix->ndims, ix->dims),
                        dla_kit_dtype_name(ix->dtype));
    if (dla_kit_vector_of(ix, &p->len, &p->istep) != 0)
        return h->error(DLA_ERR_SHAPE, "%s %s: argument index: dims %s, expected a vector",
                        kit->name, kernel, dla_kit_dims_str(bx, sizeof bx, ix->ndims, ix->dims));
    if (dla_kit_numel(ix) == 0)
        p->len = 0;
    /* Both operands with dim + 1 dims at least (trailing dims are 1). */
    const int nd = x->ndims > y->ndims ? (x->ndims > dim ? x->ndims : dim + 1)
                                       : (y->ndims > dim ? y->ndims : dim + 1);
    p->xs = *x, p->ys = *y;
    for (int d = 0; d < nd; d++) {
        if (d >= x->ndims)
            p->xs.dims[d] = 1, p->xs.strides[d] = 0;
        if (d >= y->ndims)
            p->ys.dims[d] = 1, p->ys.strides[d] = 0;
    }
    p->xs.ndims = p->ys.ndims = nd;
    const dla_view *sliced = scatter ? &p->xs : &p->ys; /* its dim is len(index) */
    int ok = sliced->dims[dim] == p->len;
    for (int d = 0; d < nd; d++)
        ok &= d == dim || p->xs.dims[d] == p->ys.dims[d];
    if (!ok)
        return h->error(DLA_ERR_SHAPE,
                        "%s %s: arguments x (dims %s) and y (dims %s) along dim %d (0-based) "
                        "with %lld indices: %s must have the index's length along dim and both "
                        "the same other dims",
                        kit->name, kernel, dla_kit_dims_str(bx, sizeof bx, x->ndims, x->dims),
                        dla_kit_dims_str(by, sizeof by, y->ndims, y->dims), dim,
                        (long long)p->len, scatter ? "x" : "y");
    if (scatter && dla_kit_numel(y) > 0)
        for (int d = 0; d < nd; d++)
            if (p->ys.dims[d] > 1 && p->ys.strides[d] == 0)
                return h->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s %s: argument y (dims %s): dim %d has stride 0; a sum "
                                "cannot land on a repeated element",
                                kit->name, kernel,
                                dla_kit_dims_str(by, sizeof by, y->ndims, y->dims), d + 1);
    if (dla_kit_views_overlap(y, x) || dla_kit_views_overlap(y, ix))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s %s: argument y (dims %s): shares memory with %s", kit->name, kernel,
                        dla_kit_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla_kit_views_overlap(y, x) ? "x" : "index");
    p->target = scatter ? p->ys.dims[dim] : p->xs.dims[dim];
    p->ystep = p->ys.strides[dim], p->xstep = p->xs.strides[dim];
    p->xs.dims[dim] = p->ys.dims[dim] = 1;
    return DLA_OK;
}

/* Checks the index values of a prepared call, read by the plugin into
 * host memory: position i at first[i * p->istep] for i < p->len, each in
 * 0..target-1 (DLA_ERR_INVALID_ARGUMENT naming the first that is not). */
static inline dla_status dla_kit_index_check_values(const dla_kit *kit, const char *kernel,
                                                    const dla_index_args *a, int scatter,
                                                    const dla_kit_index *p, const int32_t *first)
{
    for (int64_t i = 0; i < p->len; i++) {
        const int32_t v = first[i * p->istep];
        if (v >= 0 && v < p->target)
            continue;
        char buf[DLA_KIT_DIMS_BUF];
        const dla_view *t = scatter ? &a->y : &a->x;
        return kit->host->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s %s: argument index: element %lld is %d, outside 0..%lld (dim "
                                "%d (0-based) of %s, dims %s)",
                                kit->name, kernel, (long long)i, (int)v, (long long)p->target - 1,
                                (int)a->dim, scatter ? "y" : "x",
                                dla_kit_dims_str(buf, sizeof buf, t->ndims, t->dims));
    }
    return DLA_OK;
}

static inline int dla_kit__by_key(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* scatter_add's positions grouped by target, for a plugin whose kernel adds
 * each target's positions in order (no atomics, the cpu plugin's order):
 * pos[0..len-1] each in 0..target-1 (checked); targets[0..groups-1] in
 * increasing order, target u's positions (in index order) at
 * list[start[u] .. start[u+1]-1]. targets and list hold len entries, start
 * len + 1. A counting sort when the target dim is not much longer than the
 * index, else a sort of (target, position) keys: the memory follows the
 * index, not the table (32 positions into 10^8 rows would take a 400 MB
 * count array). Returns the number of groups, or -1 when memory is short. */
static inline int64_t dla_kit_index_groups(const dla_kit *kit, const int32_t *pos, int64_t len,
                                           int64_t target, int32_t *targets, int32_t *start,
                                           int32_t *list)
{
    const dla_plugin_host *h = kit->host;
    int64_t groups = 0;
    start[0] = 0;
    if (target <= 4 * len + 4096) {
        int32_t *count = (int32_t *)h->alloc((size_t)(target + 1) * sizeof *count, 0);
        if (!count)
            return -1;
        memset(count, 0, (size_t)(target + 1) * sizeof *count);
        for (int64_t i = 0; i < len; i++)
            count[pos[i] + 1]++;
        for (int64_t t = 0; t < target; t++) {
            if (count[t + 1]) {
                targets[groups] = (int32_t)t;
                start[groups + 1] = start[groups] + count[t + 1];
                groups++;
            }
            count[t + 1] += count[t]; /* now: where target t's positions start */
        }
        for (int64_t i = 0; i < len; i++)
            list[count[pos[i]]++] = (int32_t)i;
        h->free(count);
        return groups;
    }
    uint64_t *key = (uint64_t *)h->alloc((size_t)len * sizeof *key, 0);
    if (!key)
        return -1;
    for (int64_t i = 0; i < len; i++)
        key[i] = (uint64_t)(uint32_t)pos[i] << 32 | (uint64_t)i;
    qsort(key, (size_t)len, sizeof *key, dla_kit__by_key); /* ties: index order */
    for (int64_t i = 0; i < len; i++) {
        const int32_t t = (int32_t)(key[i] >> 32);
        if (i == 0 || t != targets[groups - 1]) {
            targets[groups] = t;
            start[groups + 1] = start[groups];
            groups++;
        }
        start[groups]++;
        list[i] = (int32_t)(key[i] & 0xffffffffu);
    }
    h->free(key);
    return groups;
}

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_PLUGIN_KIT_GEOM_H */

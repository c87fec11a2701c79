/*
 * layer_depth_space.c - depthToSpace2dLayer and spaceToDepthLayer: move
 * channels into blocks of the two "S" dims and back, with no learnables.
 *
 * Both are a reshape, a permute and a reshape, so their gradients are the
 * autodiff of those views. With blocks of bh x bw, input channel
 * (0-based) k of a block's element (i, j) and output channel c:
 * "dcr" (depth, column, row: depth varies fastest) k = (i bw + j) C + c,
 * "crd" (column, row, depth) k = (c bh + i) bw + j: MATLAB's
 * depthToSpaceForward (the orders of ONNX's DepthToSpace modes).
 * spaceToDepthLayer is the inverse of "dcr"; like MATLAB's it drops the
 * rows and columns past the last whole block.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field d2s_fields[] = {
    F("BlockSize", DLA__F_INT, size, 2),
    F("Mode", DLA__F_STRING, mode, 1),
    {NULL, 0, 0, 0},
};

static const dla__field s2d_fields[] = {
    F("BlockSize", DLA__F_INT, size, 2),
    {NULL, 0, 0, 0},
};

static const char d2s[] = "depthToSpace2d", s2d[] = "spaceToDepth";

#define MAX_BLOCK ((int64_t)1 << 20)

static dla_status check_block(const char *type, const dla__props *p, const char *name)
{
    for (int i = 0; i < 2; i++)
        if (p->size[i] < 1 || p->size[i] > MAX_BLOCK)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': BlockSize [%lld %lld] must "
                                "be whole numbers from 1 to %lld", type, name,
                                (long long)p->size[0], (long long)p->size[1],
                                (long long)MAX_BLOCK);
    return DLA_OK;
}

static dla_status d2s_check(const dla__props *p, const char *name)
{
    dla_status st = check_block(d2s, p, name);
    if (st == DLA_OK && strcmp(p->mode, "dcr") && strcmp(p->mode, "crd"))
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': Mode \"%s\"; use \"dcr\" or "
                          "\"crd\"", d2s, name, p->mode);
    return st;
}

static dla_status s2d_check(const dla__props *p, const char *name)
{
    return check_block(s2d, p, name);
}

/* "SSC" first, each dim after C (B, T) kept as it is. */
static int spatial_first(const char *f)
{
    return f[0] == 'S' && f[1] == 'S' && f[2] == 'C';
}

/* Nonzero, with the reason in why, when an input of this format and
 * dims does not fit the layer. */
static int misfit(const char *type, const dla__props *p, const char *format, const int64_t *dims,
                  char *why, size_t size)
{
    if (!spatial_first(format)) {
        snprintf(why, size, "the input is \"%s\"; %s needs two \"S\" dims and a \"C\" dim",
                 format, type);
        return 1;
    }
    const int64_t bh = p->size[0], bw = p->size[1];
    if (type == d2s && dims[2] % (bh * bw)) {
        snprintf(why, size, "%s: the input's %lld channels are not a multiple of the %lld x "
                 "%lld block (%lld)", type, (long long)dims[2], (long long)bh, (long long)bw,
                 (long long)(bh * bw));
        return 1;
    }
    if (type == s2d && (dims[0] < bh || dims[1] < bw)) {
        snprintf(why, size, "%s: the input's %lld x %lld is smaller than the %lld x %lld block",
                 type, (long long)dims[0], (long long)dims[1], (long long)bh, (long long)bw);
        return 1;
    }
    /* An empty input may have dims whose product with the block's passes
     * int64 (2^45 x 2^45 x 0): a wrapped output dim gave a silently wrong
     * (0) size. */
    int64_t big;
    if (type == d2s &&
        (__builtin_mul_overflow(dims[0], bh, &big) || __builtin_mul_overflow(dims[1], bw, &big))) {
        snprintf(why, size, "%s: the input's %lld x %lld in %lld x %lld blocks gives more rows "
                 "or columns than an int64 counts", type, (long long)dims[0], (long long)dims[1],
                 (long long)bh, (long long)bw);
        return 1;
    }
    if (type == s2d && __builtin_mul_overflow(dims[2], bh * bw, &big)) {
        snprintf(why, size, "%s: the input's %lld channels times the %lld x %lld block are more "
                 "than an int64 counts", type, (long long)dims[2], (long long)bh, (long long)bw);
        return 1;
    }
    return 0;
}

static dla_status init_for(const char *type, const dla_layer *l, const dla__shape *in)
{
    char why[256];
    if (misfit(type, &l->props, in->format, in->dims, why, sizeof why))
        return dla__nn_fail(spatial_first(in->format) ? DLA_ERR_SHAPE : DLA_ERR_FORMAT, "%s", why);
    return DLA_OK;
}

static dla_status d2s_init(const dla_layer *l, int nin, const dla__shape *in,
                           dla__param_sink *sink)
{
    (void)nin, (void)sink;
    return init_for(d2s, l, in);
}

static dla_status s2d_init(const dla_layer *l, int nin, const dla__shape *in,
                           dla__param_sink *sink)
{
    (void)nin, (void)sink;
    return init_for(s2d, l, in);
}

/* x as 6 unformatted dims [a b c d e rest] permuted by order (1-based),
 * then given out's dims and x's format. */
static dla_tensor *rearrange(dla_tensor *x, const int64_t split[5], const int64_t order[6],
                             const int64_t out[3])
{
    const int nd = dla_tensor_ndims(x);
    int64_t rest = 1;
    for (int d = 4; d <= nd; d++)
        rest *= dla_tensor_dim(x, d);
    const int64_t six[6] = {split[0], split[1], split[2], split[3], split[4], rest};
    dla_tensor *v = dla_permute(dla_reshape(x, "", 6, six), 6, order);
    int64_t dims[DLA_MAX_DIMS];
    dims[0] = out[0], dims[1] = out[1], dims[2] = out[2];
    for (int d = 4; d <= nd; d++)
        dims[d - 1] = dla_tensor_dim(x, d);
    return dla_reshape(v, dla_tensor_format(x), nd, dims);
}

static dla_status forward_for(const char *type, const dla__props *p, dla__call *c)
{
    dla_tensor *x = c->x[0];
    int64_t dims[DLA_MAX_DIMS];
    dla_tensor_dims(x, dims);
    char why[256];
    if (misfit(type, p, dla_tensor_format(x), dims, why, sizeof why))
        return dla_set_error(spatial_first(dla_tensor_format(x)) ? DLA_ERR_SHAPE
                                                                  : DLA_ERR_FORMAT, "%s", why);
    const int64_t h = dims[0], w = dims[1], ch = dims[2], bh = p->size[0], bw = p->size[1];
    if (type == s2d) {
        /* MATLAB's spaceToDepthForward drops the rows and columns past the
         * last whole block; then [bh h' bw w' C rest] -> [h' w' C bw bh
         * rest]. */
        if (h % bh)
            x = dla_slice(x, 1, 0, 1, h - h % bh);
        if (w % bw)
            x = dla_slice(x, 2, 0, 1, w - w % bw);
        c->y = rearrange(x, (int64_t[]){bh, h / bh, bw, w / bw, ch},
                         (int64_t[]){2, 4, 5, 3, 1, 6},
                         (int64_t[]){h / bh, w / bw, ch * bh * bw});
    } else if (!strcmp(p->mode, "dcr")) {
        /* [h w C' bw bh rest] -> [bh h bw w C' rest]. */
        c->y = rearrange(x, (int64_t[]){h, w, ch / (bh * bw), bw, bh},
                         (int64_t[]){5, 1, 4, 2, 3, 6},
                         (int64_t[]){h * bh, w * bw, ch / (bh * bw)});
    } else {
        /* "crd": [h w bw bh C' rest] -> [bh h bw w C' rest]. */
        c->y = rearrange(x, (int64_t[]){h, w, bw, bh, ch / (bh * bw)},
                         (int64_t[]){4, 1, 3, 2, 5, 6},
                         (int64_t[]){h * bh, w * bw, ch / (bh * bw)});
    }
    return dla_tensor_status(c->y);
}

static dla_status d2s_forward(const dla__props *p, dla__call *c)
{
    return forward_for(d2s, p, c);
}

static dla_status s2d_forward(const dla__props *p, dla__call *c)
{
    return forward_for(s2d, p, c);
}

static void d2s_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "depth to space with block size [%lld %lld], mode \"%s\"",
             (long long)p->size[0], (long long)p->size[1], p->mode);
}

static void s2d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "space to depth with block size [%lld %lld]", (long long)p->size[0],
             (long long)p->size[1]);
}

const dla__layer_kind dla__kind_depth_to_space2d = {
    .type = d2s, .display = "Depth to Space 2D", .default_name = "depthToSpace",
    .fields = d2s_fields, .check = d2s_check, .init = d2s_init, .forward = d2s_forward,
    .describe = d2s_describe,
};

const dla__layer_kind dla__kind_space_to_depth = {
    .type = s2d, .display = "Space to Depth", .default_name = "spaceToDepth",
    .fields = s2d_fields, .check = s2d_check, .init = s2d_init, .forward = s2d_forward,
    .describe = s2d_describe,
};

/* MATLAB's BlockSize: a scalar is both; block[1] 0 means the same. */
static void block_of(const int64_t block[2], dla__props *p)
{
    p->size[0] = block[0];
    p->size[1] = block[1] != 0 ? block[1] : block[0];
}

DLA_API dla_layer *dla_depth_to_space2d_layer(const int64_t block_size[2],
                                              const dla_depth_to_space2d_layer_options *opts)
{
    dla__props p = {0};
    block_of(block_size ? block_size : (const int64_t[2]){0, 0}, &p);
    dla_status st = dla__props_string(p.mode, opts ? opts->mode : NULL, "dcr",
                                      "depthToSpace2d: Mode");
    return dla__layer_new(&dla__kind_depth_to_space2d, opts ? opts->name : NULL, 1, &p, st);
}

DLA_API dla_layer *dla_space_to_depth_layer(const int64_t block_size[2],
                                            const dla_layer_options *opts)
{
    dla__props p = {0};
    block_of(block_size ? block_size : (const int64_t[2]){0, 0}, &p);
    return dla__layer_new(&dla__kind_space_to_depth, opts ? opts->name : NULL, 1, &p, DLA_OK);
}

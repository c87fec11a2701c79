/*
 * layer_pool.c - maxPooling1dLayer, averagePooling1dLayer (over one "S"
 * dim, or "T" without one), maxPooling2dLayer, averagePooling2dLayer (two
 * "S" dims), maxPooling3dLayer, averagePooling3dLayer (three) and the
 * global pooling layers (1-D over "T" or one "S" dim, 2-D over two "S"
 * dims, 3-D over three).
 */
#include "nn/nn.h"

#include <math.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field pool_fields[] = {
    F("PoolSize", DLA__F_INT, size, 2),
    F("Stride", DLA__F_INT, stride, 2),
    F("Padding", DLA__F_INT, padding, 4),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("PaddingValue", DLA__F_STRING, option, 1),
    {NULL, 0, 0, 0},
};
static const dla__field pool3d_fields[] = {
    F("PoolSize", DLA__F_INT, size, 3),
    F("Stride", DLA__F_INT, stride, 3),
    F("Padding", DLA__F_INT, padding, 6),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("PaddingValue", DLA__F_STRING, option, 1),
    {NULL, 0, 0, 0},
};
/* A 1-D layer's: its pool and stride in size[0] and stride[0], Padding
 * [left right] in padding[0..1] (MATLAB's order). */
static const dla__field pool1d_fields[] = {
    F("PoolSize", DLA__F_INT, size, 1),
    F("Stride", DLA__F_INT, stride, 1),
    F("Padding", DLA__F_INT, padding, 2),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("PaddingValue", DLA__F_STRING, option, 1),
    {NULL, 0, 0, 0},
};
static const dla__field no_fields[] = {{NULL, 0, 0, 0}};

/* The pool, stride and padding of a layer that pools over n dims (its
 * padding before and after dim i in padding[2i], padding[2i + 1]). */
static dla_status check_n(const dla__props *p, const char *name, int n)
{
    for (int i = 0; i < n; i++)
        if (p->size[i] < 1 || p->size[i] > (1 << 20) || p->stride[i] < 1 || p->stride[i] > (1 << 20))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "pooling '%s': PoolSize %lld and Stride "
                                "%lld (dim %d) must be in 1..2^20", name, (long long)p->size[i],
                                (long long)p->stride[i], i + 1);
    for (int i = 0; i < 2 * n; i++)
        if (p->padding[i] < 0 || p->padding[i] >= p->size[i / 2] || (p->mode[0] && p->padding[i]))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "pooling '%s': Padding %lld must be >= 0, "
                                "smaller than the pool and not given with a padding mode", name,
                                (long long)p->padding[i]);
    if (p->mode[0] && strcmp(p->mode, "same"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "pooling '%s': padding mode \"%s\"; use "
                            "\"same\" or numbers", name, p->mode);
    if (strcmp(p->option, "zero") && strcmp(p->option, "mean"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "pooling '%s': PaddingValue \"%s\"; use "
                            "\"zero\" or \"mean\"", name, p->option);
    return DLA_OK;
}

static dla_status pool_check(const dla__props *p, const char *name) { return check_n(p, name, 2); }

static dla_status pool3d_check(const dla__props *p, const char *name) { return check_n(p, name, 3); }

static dla_status pool1d_check(const dla__props *p, const char *name)
{
    return check_n(p, name, 1);
}

/* The 2-D layers take MATLAB's spatio-temporal "SCBT" and "SCT" data too
 * (one "S" dim and a "T" dim), pooled over "S" (the pool's height) and
 * "T" (its width), as its 2-D pooling layers do. */
static dla_status check_2s(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)sink;
    const int ns = dla__shape_count(in, 'S');
    if (ns != 2 && !(ns == 1 && dla__shape_count(in, 'T') == 1))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 2-D pooling needs two \"S\" dims "
                            "(or one and a \"T\" dim)", in->format);
    return DLA_OK;
}

/* The windowed 3-D layers: "SSSCB", or spatio-temporal "SSCBT" (pooled
 * over both "S" dims and "T"). */
static dla_status check_3w(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)sink;
    const int ns = dla__shape_count(in, 'S');
    if (ns != 3 && !(ns == 2 && dla__shape_count(in, 'T') == 1))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 3-D pooling needs three \"S\" "
                            "dims (or two and a \"T\" dim)", in->format);
    return DLA_OK;
}

/* Whether x is spatio-temporal for a layer pooling np dims ("SCBT",
 * "SCT" for 2-D; "SSCBT", "SSCT" for 3-D): np - 1 "S" dims, first, and
 * "T" last. */
static int spatio_temporal(dla_tensor *x, int np)
{
    const char *f = dla_tensor_format(x);
    const size_t n = strlen(f);
    int ns = 0;
    for (size_t i = 0; i < n; i++)
        ns += f[i] == 'S';
    return ns == np - 1 && n >= (size_t)np + 1 && f[0] == 'S' && f[n - 1] == 'T' &&
           dla_tensor_ndims(x) == (int)n;
}

/* Spatio-temporal x (S.., C, [B,] T) as images of S.. x T ("SSCB",
 * "SSSCB", or without "B"): T moved after the "S" dims (a copy, as
 * pooling reads dense x). */
static dla_tensor *st_to_images(dla_tensor *x)
{
    int64_t d[DLA_MAX_DIMS], order[DLA_MAX_DIMS], pd[DLA_MAX_DIMS];
    char f[DLA_MAX_DIMS + 1];
    const char *xf = dla_tensor_format(x);
    const int n = dla_tensor_dims(x, d);
    int ns = 0;
    while (xf[ns] == 'S')
        ns++;
    for (int i = 0; i < ns; i++)
        order[i] = i + 1, pd[i] = d[i], f[i] = 'S';
    order[ns] = n, pd[ns] = d[n - 1], f[ns] = 'S';
    for (int i = ns + 1; i < n; i++)
        order[i] = i, pd[i] = d[i - 1], f[i] = xf[i - 1];
    f[n] = '\0';
    dla_tensor *p = dla_permute(dla_reshape(x, "", n, d), n, order);
    return dla_reshape(p, f, n, pd);
}

/* The pooled images y (S'.., T', C, [B]) back in x's layout and labels
 * (S'.., C, [B,] T'); with drop_t, T' (of size 1) left out, as MATLAB's
 * global 2-D pooling gives "SCB" for "SCBT". */
static dla_tensor *st_from_images(dla_tensor *y, const char *xf, int drop_t)
{
    int64_t d[DLA_MAX_DIMS], order[DLA_MAX_DIMS], pd[DLA_MAX_DIMS];
    const int n = (int)strlen(xf);
    const int got = dla_tensor_dims(y, d);
    for (int i = got; i < n; i++)
        d[i] = 1;
    int ns = 0;
    while (xf[ns] == 'S')
        ns++;
    for (int i = 0; i < ns; i++)
        order[i] = i + 1, pd[i] = d[i];
    for (int i = ns; i < n - 1; i++)
        order[i] = i + 2, pd[i] = d[i + 1];
    order[n - 1] = ns + 1, pd[n - 1] = d[ns];
    dla_tensor *p = dla_permute(dla_reshape(y, "", n, d), n, order);
    if (!drop_t)
        return dla_reshape(p, xf, n, pd);
    char f[DLA_MAX_DIMS + 1];
    memcpy(f, xf, (size_t)n - 1);
    f[n - 1] = '\0';
    return dla_reshape(p, f, n - 1, pd);
}

static dla_status check_3s(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)sink;
    if (dla__shape_count(in, 'S') != 3)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 3-D pooling needs three \"S\" "
                            "dims", in->format);
    return DLA_OK;
}

/* MATLAB's 1-D pooling layers pool over the "S" dim of "SCB" and "SCBT"
 * data (every time step alone) and over "T" of "CBT" sequences, as
 * dla_maxpool and dla_avgpool do. */
static dla_status check_1p(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)sink;
    const int ns = dla__shape_count(in, 'S'), nt = dla__shape_count(in, 'T');
    if (!(ns == 1 || (ns == 0 && nt == 1)))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 1-D pooling needs one \"S\" "
                            "dim, or a \"T\" dim and no \"S\" dim", in->format);
    return DLA_OK;
}

/* The op's options for a layer that pools over n dims. */
static dla_pool_options pool_opts(const dla__props *p, int n)
{
    dla_pool_options o = {0};
    for (int i = 0; i < n; i++) {
        o.stride[i] = p->stride[i];
        o.padding[0][i] = p->padding[2 * i];
        o.padding[1][i] = p->padding[2 * i + 1];
    }
    o.padding_mode = p->mode[0] ? p->mode : NULL;
    o.padding_value = p->option;
    return o;
}

static dla_status max_forward_n(const dla__props *p, dla__call *c, int n)
{
    dla_pool_options o = pool_opts(p, n);
    o.padding_value = NULL;
    dla_tensor *x = c->x[0];
    const int st = n >= 2 && spatio_temporal(x, n);
    dla_tensor *y = dla_maxpool(st ? st_to_images(x) : x, n, p->size, &o);
    c->y = st && dla_tensor_status(y) == DLA_OK ? st_from_images(y, dla_tensor_format(x), 0) : y;
    return dla_tensor_status(c->y);
}

static dla_status avg_forward_n(const dla__props *p, dla__call *c, int n)
{
    dla_pool_options o = pool_opts(p, n);
    dla_tensor *x = c->x[0];
    const int st = n >= 2 && spatio_temporal(x, n);
    dla_tensor *y = dla_avgpool(st ? st_to_images(x) : x, n, p->size, &o);
    c->y = st && dla_tensor_status(y) == DLA_OK ? st_from_images(y, dla_tensor_format(x), 0) : y;
    return dla_tensor_status(c->y);
}

static dla_status max_forward(const dla__props *p, dla__call *c) { return max_forward_n(p, c, 2); }
static dla_status avg_forward(const dla__props *p, dla__call *c) { return avg_forward_n(p, c, 2); }
static dla_status max3d_forward(const dla__props *p, dla__call *c) { return max_forward_n(p, c, 3); }
static dla_status avg3d_forward(const dla__props *p, dla__call *c) { return avg_forward_n(p, c, 3); }
static dla_status max1d_forward(const dla__props *p, dla__call *c) { return max_forward_n(p, c, 1); }
static dla_status avg1d_forward(const dla__props *p, dla__call *c) { return avg_forward_n(p, c, 1); }

/* "2x2 max pooling with stride [2 2] and padding [0 0 0 0]" (n dims). */
static void describe_n(const char *what, const dla__props *p, int n, char *buf, size_t size)
{
    char pool[96], stride[96], pad[160];
    dla__dims_text(n, p->size, pool, sizeof pool);
    dla__list_text(n, p->stride, 1, stride, sizeof stride);
    if (p->mode[0])
        snprintf(pad, sizeof pad, "'%s'", p->mode);
    else
        dla__list_text(2 * n, p->padding, 1, pad, sizeof pad);
    snprintf(buf, size, "%s %s pooling with stride %s and padding %s", pool, what, stride, pad);
}

static void describe(const char *what, const dla__props *p, char *buf, size_t size)
{
    describe_n(what, p, 2, buf, size);
}

static void describe_3d(const char *what, const dla__props *p, char *buf, size_t size)
{
    describe_n(what, p, 3, buf, size);
}

static void describe_1d(const char *what, const dla__props *p, char *buf, size_t size)
{
    char pad[64];
    if (p->mode[0])
        snprintf(pad, sizeof pad, "'%s'", p->mode);
    else
        snprintf(pad, sizeof pad, "[%lld %lld]", (long long)p->padding[0],
                 (long long)p->padding[1]);
    snprintf(buf, size, "1-D %s pooling with pool size %lld, stride %lld and padding %s", what,
             (long long)p->size[0], (long long)p->stride[0], pad);
}

static void max_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe("max", p, buf, size);
}

static void avg_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe("average", p, buf, size);
}

static void max3d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_3d("max", p, buf, size);
}

static void avg3d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_3d("average", p, buf, size);
}

static void max1d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_1d("max", p, buf, size);
}

static void avg1d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    describe_1d("average", p, buf, size);
}

const dla__layer_kind dla__kind_maxpool1d = {
    .type = "maxPooling1d", .display = "1-D Max Pooling", .default_name = "maxpool1d",
    .fields = pool1d_fields, .check = pool1d_check, .init = check_1p, .forward = max1d_forward,
    .describe = max1d_describe,
};

const dla__layer_kind dla__kind_avgpool1d = {
    .type = "averagePooling1d", .display = "1-D Average Pooling", .default_name = "avgpool1d",
    .fields = pool1d_fields, .check = pool1d_check, .init = check_1p, .forward = avg1d_forward,
    .describe = avg1d_describe,
};

const dla__layer_kind dla__kind_maxpool2d = {
    .type = "maxPooling2d", .display = "2-D Max Pooling", .default_name = "maxpool",
    .fields = pool_fields, .check = pool_check, .init = check_2s, .forward = max_forward,
    .describe = max_describe,
};

const dla__layer_kind dla__kind_avgpool2d = {
    .type = "averagePooling2d", .display = "2-D Average Pooling", .default_name = "avgpool",
    .fields = pool_fields, .check = pool_check, .init = check_2s, .forward = avg_forward,
    .describe = avg_describe,
};

const dla__layer_kind dla__kind_maxpool3d = {
    .type = "maxPooling3d", .display = "3-D Max Pooling", .default_name = "maxpool3d",
    .fields = pool3d_fields, .check = pool3d_check, .init = check_3w, .forward = max3d_forward,
    .describe = max3d_describe,
};

const dla__layer_kind dla__kind_avgpool3d = {
    .type = "averagePooling3d", .display = "3-D Average Pooling", .default_name = "avgpool3d",
    .fields = pool3d_fields, .check = pool3d_check, .init = check_3w, .forward = avg3d_forward,
    .describe = avg3d_describe,
};

/* A pooling layer of kind over n dims (1, 2 or 3): pool size[i], stride[i]
 * (0: 1, MATLAB's default), padding before and after dim i in
 * padding[2i], padding[2i + 1]. */
static dla_layer *make_pool(const dla__layer_kind *kind, int n, const int64_t *size,
                            const int64_t *stride, const int64_t *padding, const char *name,
                            const char *padding_mode, const char *padding_value, int avg)
{
    dla__props p = {0};
    for (int i = 0; i < n; i++) {
        p.size[i] = size[i];
        p.stride[i] = stride[i] ? stride[i] : 1;
        p.padding[2 * i] = padding[2 * i];
        p.padding[2 * i + 1] = padding[2 * i + 1];
    }
    dla_status st = dla__props_string(p.mode, padding_mode, "", "pooling: PaddingMode");
    if (st == DLA_OK && !avg && padding_value)
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: PaddingValue is for average pooling",
                          kind->type);
    if (st == DLA_OK)
        st = dla__props_string(p.option, padding_value, "zero", "pooling: PaddingValue");
    return dla__layer_new(kind, name, 1, &p, st);
}

static dla_layer *make_pool2d(const dla__layer_kind *kind, int64_t ph, int64_t pw,
                              const dla_pool_layer_options *opts, int avg)
{
    dla_pool_layer_options o = opts ? *opts : (dla_pool_layer_options){0};
    return make_pool(kind, 2, (const int64_t[]){ph, pw}, o.stride, o.padding, o.name,
                     o.padding_mode, o.padding_value, avg);
}

static dla_layer *make_pool3d(const dla__layer_kind *kind, const int64_t size[3],
                              const dla_pool_layer_options *opts, int avg)
{
    dla_pool_layer_options o = opts ? *opts : (dla_pool_layer_options){0};
    return make_pool(kind, 3, size, o.stride, o.padding, o.name, o.padding_mode,
                     o.padding_value, avg);
}

static dla_layer *make_pool1d(const dla__layer_kind *kind, int64_t pool_size,
                              const dla_pool1d_layer_options *opts, int avg)
{
    dla_pool1d_layer_options o = opts ? *opts : (dla_pool1d_layer_options){0};
    return make_pool(kind, 1, &pool_size, &o.stride, o.padding, o.name, o.padding_mode,
                     o.padding_value, avg);
}

DLA_API dla_layer *dla_maxpool1d_layer(int64_t pool_size, const dla_pool1d_layer_options *opts)
{
    return make_pool1d(&dla__kind_maxpool1d, pool_size, opts, 0);
}

DLA_API dla_layer *dla_avgpool1d_layer(int64_t pool_size, const dla_pool1d_layer_options *opts)
{
    return make_pool1d(&dla__kind_avgpool1d, pool_size, opts, 1);
}

DLA_API dla_layer *dla_maxpool2d_layer(int64_t pool_height, int64_t pool_width,
                                       const dla_pool_layer_options *opts)
{
    return make_pool2d(&dla__kind_maxpool2d, pool_height, pool_width, opts, 0);
}

DLA_API dla_layer *dla_avgpool2d_layer(int64_t pool_height, int64_t pool_width,
                                       const dla_pool_layer_options *opts)
{
    return make_pool2d(&dla__kind_avgpool2d, pool_height, pool_width, opts, 1);
}

DLA_API dla_layer *dla_maxpool3d_layer(int64_t pool_height, int64_t pool_width,
                                       int64_t pool_depth, const dla_pool_layer_options *opts)
{
    return make_pool3d(&dla__kind_maxpool3d, (const int64_t[]){pool_height, pool_width, pool_depth},
                       opts, 0);
}

DLA_API dla_layer *dla_avgpool3d_layer(int64_t pool_height, int64_t pool_width,
                                       int64_t pool_depth, const dla_pool_layer_options *opts)
{
    return make_pool3d(&dla__kind_avgpool3d, (const int64_t[]){pool_height, pool_width, pool_depth},
                       opts, 1);
}

/* ---------------------------------------------------------------- global */

static dla_status check_none(const dla__props *p, const char *name)
{
    (void)p;
    (void)name;
    return DLA_OK;
}

/* The 1-D global poolings' HasPaddingMaskInput (dim; optional in files
 * written before it existed). */
static const dla__field fields_1d[] = {
    {"HasPaddingMaskInput", DLA__F_INT, offsetof(dla__props, dim), 1},
    {NULL, 0, 0, 0},
};

static dla_status check_1d_props(const dla__props *p, const char *name)
{
    return dla__layer_size("globalPooling1d", name, "HasPaddingMaskInput", p->dim, 0, 1);
}

static dla_status check_1d(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    (void)sink;
    int ns = dla__shape_count(in, 'S'), nt = dla__shape_count(in, 'T');
    /* "SCBT" (1-D image sequences) too, as MATLAB's: "S" pooled, every
     * time step alone, which dla_global_maxpool and _avgpool do. Not with
     * a padding mask, which marks the time steps, not "S". */
    const int sequence_of_s = ns == 1 && nt == 1 && l->nin < 2;
    if (!((ns == 1 && nt == 0) || (ns == 0 && nt == 1) || sequence_of_s))
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; 1-D global pooling needs one "
                            "\"S\" or one \"T\" dim (or, without a padding mask, \"S\" and "
                            "\"T\" of 1-D image sequences)", in->format);
    return dla__mask_check_init(l, in);
}

/* The scalar v in x's dtype, on x's device: made on the current one, a
 * network moved with dla_net_to_device (the current device left as it
 * was) failed in dla_where, "arguments cond and b are on opencl:0 and
 * cpu:0". */
static dla_tensor *fill_like(double v, dla_tensor *x)
{
    dla_device *prev = dla__nn_device_use(dla_tensor_device(x));
    dla_tensor *s = dla_full(v, dla_tensor_dtype(x), "", 0, NULL);
    dla__nn_device_restore(prev);
    return s;
}

/* Drops the "T" dim (size 1 after pooling) of a "CBT" result. */
static dla_tensor *drop_t(dla_tensor *y)
{
    const char *f = dla_tensor_format(y);
    if (strcmp(f, "CBT"))
        return y;
    return dla_reshape(y, "CB", DLA_DIMS(dla_tensor_dim(y, 1), dla_tensor_dim(y, 2)));
}

/* With a padding mask m (0/1 a step): the max over the data steps, of x
 * where m is 1 and -Inf where it is 0 (a select: a NaN held at a padded
 * step stays out; an observation with no data step gives -Inf). */
static dla_status gmax1_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    if (c->nx > 1) {
        dla_tensor *m = dla__mask_steps(c);
        x = dla_tensor_status(m) == DLA_OK ? dla_where(m, x, fill_like(-INFINITY, x)) : m;
    }
    c->y = drop_t(dla_global_maxpool(x));
    return dla_tensor_status(c->y);
}

/* With a padding mask m: the mean over the data steps, mean of x where
 * m is 1 and 0 elsewhere (a select, not x .* m, so that a NaN or Inf held
 * at a padded step stays out) / mean(m). An observation with no data
 * step gets 0/0, NaN: there is nothing to average. */
static dla_status gavg1_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    if (c->nx > 1) {
        dla_tensor *m = dla__mask_steps(c);
        c->y = dla_tensor_status(m) == DLA_OK
                   ? drop_t(dla_div(dla_global_avgpool(dla_where(m, x, fill_like(0, x))),
                                    dla_global_avgpool(m)))
                   : m;
        return dla_tensor_status(c->y);
    }
    c->y = drop_t(dla_global_avgpool(x));
    return dla_tensor_status(c->y);
}

/* Global 2-D pooling of spatio-temporal x ("SCBT"): over "S" and "T",
 * giving "SCB" with "S" of size 1, as MATLAB's (its 3-D kinds never see
 * such x: their init wants three "S" dims). */
static dla_status gmax2_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    const int st = spatio_temporal(x, 2);
    dla_tensor *y = dla_global_maxpool(st ? st_to_images(x) : x);
    c->y = st && dla_tensor_status(y) == DLA_OK ? st_from_images(y, dla_tensor_format(x), 1) : y;
    return dla_tensor_status(c->y);
}

static dla_status gavg2_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *x = c->x[0];
    const int st = spatio_temporal(x, 2);
    dla_tensor *y = dla_global_avgpool(st ? st_to_images(x) : x);
    c->y = st && dla_tensor_status(y) == DLA_OK ? st_from_images(y, dla_tensor_format(x), 1) : y;
    return dla_tensor_status(c->y);
}

static void gmax_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)p;
    (void)in;
    snprintf(buf, size, "Global max pooling%s", p->dim ? " of the data steps (padding mask)" : "");
}

static void gavg_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)p;
    (void)in;
    snprintf(buf, size, "Global average pooling%s",
             p->dim ? " of the data steps (padding mask)" : "");
}

const dla__layer_kind dla__kind_gmaxpool1d = {
    .type = "globalMaxPooling1d", .display = "1-D Global Max Pooling", .default_name = "gmpool1d",
    .fields = fields_1d, .check = check_1d_props, .init = check_1d, .forward = gmax1_forward,
    .describe = gmax_describe, .mask_port = 1,
};
const dla__layer_kind dla__kind_gavgpool1d = {
    .type = "globalAveragePooling1d", .display = "1-D Global Average Pooling",
    .default_name = "gapool1d", .fields = fields_1d, .check = check_1d_props, .init = check_1d,
    .forward = gavg1_forward, .describe = gavg_describe, .mask_port = 1,
};
const dla__layer_kind dla__kind_gmaxpool2d = {
    .type = "globalMaxPooling2d", .display = "2-D Global Max Pooling", .default_name = "gmpool",
    .fields = no_fields, .check = check_none, .init = check_2s, .forward = gmax2_forward,
    .describe = gmax_describe,
};
const dla__layer_kind dla__kind_gavgpool2d = {
    .type = "globalAveragePooling2d", .display = "2-D Global Average Pooling",
    .default_name = "gapool", .fields = no_fields, .check = check_none, .init = check_2s,
    .forward = gavg2_forward, .describe = gavg_describe,
};
/* dla_global_maxpool and dla_global_avgpool pool every "S" dim: the 3-D
 * layers differ from the 2-D ones only in the input they take. */
const dla__layer_kind dla__kind_gmaxpool3d = {
    .type = "globalMaxPooling3d", .display = "3-D Global Max Pooling", .default_name = "gmpool3d",
    .fields = no_fields, .check = check_none, .init = check_3s, .forward = gmax2_forward,
    .describe = gmax_describe,
};
const dla__layer_kind dla__kind_gavgpool3d = {
    .type = "globalAveragePooling3d", .display = "3-D Global Average Pooling",
    .default_name = "gapool3d", .fields = no_fields, .check = check_none, .init = check_3s,
    .forward = gavg2_forward, .describe = gavg_describe,
};

static dla_layer *make_global(const dla__layer_kind *kind, const dla_layer_options *opts)
{
    return dla__layer_new(kind, opts ? opts->name : NULL, 1, &(dla__props){0}, DLA_OK);
}

static dla_layer *make_global_1d(const dla__layer_kind *kind,
                                 const dla_global_pool1d_layer_options *opts)
{
    dla__props p = {0};
    p.dim = opts ? opts->has_padding_mask_input : 0;
    return dla__layer_new(kind, opts ? opts->name : NULL, p.dim ? 2 : 1, &p, DLA_OK);
}
DLA_API dla_layer *dla_global_maxpool1d_layer(const dla_global_pool1d_layer_options *opts)
{
    return make_global_1d(&dla__kind_gmaxpool1d, opts);
}
DLA_API dla_layer *dla_global_avgpool1d_layer(const dla_global_pool1d_layer_options *opts)
{
    return make_global_1d(&dla__kind_gavgpool1d, opts);
}
DLA_API dla_layer *dla_global_maxpool2d_layer(const dla_layer_options *opts)
{
    return make_global(&dla__kind_gmaxpool2d, opts);
}
DLA_API dla_layer *dla_global_avgpool2d_layer(const dla_layer_options *opts)
{
    return make_global(&dla__kind_gavgpool2d, opts);
}
DLA_API dla_layer *dla_global_maxpool3d_layer(const dla_layer_options *opts)
{
    return make_global(&dla__kind_gmaxpool3d, opts);
}
DLA_API dla_layer *dla_global_avgpool3d_layer(const dla_layer_options *opts)
{
    return make_global(&dla__kind_gavgpool3d, opts);
}

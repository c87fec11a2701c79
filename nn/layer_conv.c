/*
 * layer_conv.c - convolution1dLayer, convolution2dLayer and
 * convolution3dLayer on dla_conv: weights in MATLAB's layout (filter size
 * x channels x filters), a bias per filter, padding by numbers, "same" or
 * (1-D) "causal"; their transposed kinds (transposedConv1dLayer, 2d, 3d) on
 * dla_transpconv: weights filter size x filters x channels, cropping by
 * numbers or "same"; and groupedConvolution2dLayer, dla_conv with groups
 * (channel-wise: one group per channel). One code for the seven: d spatial
 * dims, t transposed, g grouped.
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

static const dla__field conv2d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 2),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 2),
    F("DilationFactor", DLA__F_INT, dilation, 2),
    F("Padding", DLA__F_INT, padding, 4),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const dla__field conv3d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 3),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 3),
    F("DilationFactor", DLA__F_INT, dilation, 3),
    F("Padding", DLA__F_INT, padding, 6),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const dla__field conv1d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 1),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 1),
    F("DilationFactor", DLA__F_INT, dilation, 1),
    F("Padding", DLA__F_INT, padding, 2),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const dla__field tconv2d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 2),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 2),
    F("Cropping", DLA__F_INT, padding, 4),
    F("CroppingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const dla__field tconv3d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 3),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 3),
    F("Cropping", DLA__F_INT, padding, 6),
    F("CroppingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const dla__field tconv1d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 1),
    F("NumFilters", DLA__F_INT, count, 1),
    F("NumChannels", DLA__F_INT, channels, 1),
    F("Stride", DLA__F_INT, stride, 1),
    F("Cropping", DLA__F_INT, padding, 2),
    F("CroppingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

/* groupedConvolution2dLayer: NumFiltersPerGroup in count,
 * NumChannelsPerGroup in channels (0: from the input), NumGroups in dim
 * (DLA_CHANNEL_WISE: as many as the input has channels). */
static const dla__field gconv2d_fields[] = {
    F("FilterSize", DLA__F_INT, size, 2),
    F("NumFiltersPerGroup", DLA__F_INT, count, 1),
    F("NumChannelsPerGroup", DLA__F_INT, channels, 1),
    F("NumGroups", DLA__F_INT, dim, 1),
    F("Stride", DLA__F_INT, stride, 2),
    F("DilationFactor", DLA__F_INT, dilation, 2),
    F("Padding", DLA__F_INT, padding, 4),
    F("PaddingMode", DLA__F_STRING, mode, 1),
    F("WeightsInitializer", DLA__F_STRING, init[0], 1),
    F("BiasInitializer", DLA__F_STRING, init[1], 1),
    {NULL, 0, 0, 0},
};

static const char *type_of(int d, int t, int g)
{
    static const char *const plain[3] = {"convolution1d", "convolution2d", "convolution3d"};
    static const char *const transposed[3] = {"transposedConvolution1d",
                                              "transposedConvolution2d",
                                              "transposedConvolution3d"};
    return g ? "groupedConvolution2d" : t ? transposed[d - 1] : plain[d - 1];
}

static dla_status check_g(const dla__props *p, const char *name, int d, int t, int g)
{
    const char *type = type_of(d, t, g), *pad = t ? "Cropping" : "Padding";
    /* A transposed layer has no DilationFactor (MATLAB's has none; its
     * props keep 1 when made, 0 when loaded, both 1 to dla_transpconv). */
    /* Stride and DilationFactor up to what dla_conv takes (2^31 - 1): a
     * larger one overflowed "causal"'s (FilterSize - 1) x DilationFactor
     * padding into a negative number. */
    const int64_t most = ((int64_t)1 << 31) - 1;
    for (int i = 0; i < d; i++) {
        if (t && (p->size[i] < 1 || p->size[i] > (1 << 20) || p->stride[i] < 1 ||
                  p->stride[i] > most))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': FilterSize must be in 1..2^20 "
                                "and Stride in 1..2^31-1 (dim %d: %lld, %lld)", type, name, i + 1,
                                (long long)p->size[i], (long long)p->stride[i]);
        if (!t && (p->size[i] < 1 || p->size[i] > (1 << 20) || p->stride[i] < 1 ||
                   p->stride[i] > most || p->dilation[i] < 1 || p->dilation[i] > most))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': FilterSize must be in 1..2^20, "
                                "Stride and DilationFactor in 1..2^31-1 (dim %d: %lld, %lld, %lld)",
                                type, name, i + 1, (long long)p->size[i], (long long)p->stride[i],
                                (long long)p->dilation[i]);
    }
    dla_status st = dla__layer_size(type, name, g ? "NumFiltersPerGroup" : "NumFilters",
                                    p->count, 1, 1 << 24);
    if (st == DLA_OK)
        st = dla__layer_size(type, name, g ? "NumChannelsPerGroup" : "NumChannels", p->channels,
                             0, 1 << 24);
    if (st == DLA_OK && g && p->dim != DLA_CHANNEL_WISE)
        st = dla__layer_size(type, name, "NumGroups", p->dim, 1, 1 << 24);
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < 2 * d; i++)
        if (p->padding[i] < 0 || p->padding[i] > (1 << 20))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s %lld must be in 0..2^20", type,
                                name, pad, (long long)p->padding[i]);
    const int causal = d == 1 && !t; /* "causal": 1-D convolution only */
    if (p->mode[0] && strcmp(p->mode, "same") && (!causal || strcmp(p->mode, "causal")))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s mode \"%s\"; use \"same\"%s "
                            "or numbers", type, name, t ? "cropping" : "padding", p->mode,
                            causal ? ", \"causal\"" : "");
    if (p->mode[0])
        for (int i = 0; i < 2 * d; i++)
            if (p->padding[i])
                return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s mode \"%s\" with "
                                    "%s numbers too", type, name, t ? "cropping" : "padding",
                                    p->mode, t ? "cropping" : "padding");
    for (int k = 0; k < 2; k++)
        if (!dla__init_known(p->init[k], 0))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s \"%s\"; use \"glorot\", "
                                "\"he\", \"narrow-normal\", \"zeros\" or \"ones\"", type, name,
                                k ? "BiasInitializer" : "WeightsInitializer", p->init[k]);
    return DLA_OK;
}

static dla_status check(const dla__props *p, const char *name, int d, int t)
{
    return check_g(p, name, d, t, 0);
}

static dla_status conv2d_check(const dla__props *p, const char *name) { return check(p, name, 2, 0); }
static dla_status gconv2d_check(const dla__props *p, const char *name)
{
    return check_g(p, name, 2, 0, 1);
}
static dla_status conv3d_check(const dla__props *p, const char *name) { return check(p, name, 3, 0); }
static dla_status tconv3d_check(const dla__props *p, const char *name) { return check(p, name, 3, 1); }
static dla_status conv1d_check(const dla__props *p, const char *name) { return check(p, name, 1, 0); }
static dla_status tconv2d_check(const dla__props *p, const char *name) { return check(p, name, 2, 1); }
static dla_status tconv1d_check(const dla__props *p, const char *name) { return check(p, name, 1, 1); }

static dla_status init_g(const dla_layer *l, const dla__shape *in, dla__param_sink *sink, int d,
                         int t, int g)
{
    const dla__props *p = &l->props;
    int ns = dla__shape_count(in, 'S');
    /* A 2-D or 3-D layer also takes MATLAB's spatio-temporal input, one
     * "S" dim fewer and a "T" dim ("SCBT", "SSCBT"; forward). */
    const int nt = dla__shape_count(in, 'T');
    int ok = d > 1 ? ns == d || (ns == d - 1 && nt == 1) : (ns == 1 || (ns == 0 && nt == 1));
    int64_t c = dla__shape_dim(in, 'C');
    if (!ok || !c)
        return dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s needs %s and a \"C\" dim",
                            in->format, type_of(d, t, g),
                            d == 3   ? "three \"S\" dims (or two and a \"T\" dim)"
                            : d == 2 ? "two \"S\" dims (or one and a \"T\" dim)"
                                     : "one \"S\" or \"T\" dim");
    /* Grouped: c in groups of c / G channels, each with its own
     * NumFiltersPerGroup filters. */
    const int64_t groups = !g ? 1 : p->dim == DLA_CHANNEL_WISE ? c : p->dim;
    if (c % groups)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, which %lld groups do "
                            "not divide", (long long)c, (long long)groups);
    if (g && p->count > ((int64_t)1 << 24) / groups)
        return dla__nn_fail(DLA_ERR_SHAPE, "%lld groups of %lld filters are more than 2^24 "
                            "filters", (long long)groups, (long long)p->count);
    const int64_t cg = c / groups;
    if (p->channels && p->channels != cg && !g)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, NumChannels is %lld",
                            (long long)c, (long long)p->channels);
    if (p->channels && p->channels != cg)
        return dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels, %lld in each of %lld "
                            "groups; NumChannelsPerGroup is %lld", (long long)c, (long long)cg,
                            (long long)groups, (long long)p->channels);
    int64_t wd[6], bd[5];
    int nw = 0, nb = 0;
    double area = 1;
    for (int i = 0; i < d; i++) {
        wd[nw++] = p->size[i];
        area *= (double)p->size[i];
        bd[nb++] = 1;
    }
    /* Transposed: filters before channels, and the fans swapped (MATLAB's
     * Glorot and He read filter area x NumFilters as the fan-in).
     * Grouped: MATLAB's filter size x channels per group x filters per
     * group x groups, the bias 1x1 x filters per group x groups, the fans
     * those of one group. */
    wd[nw++] = t ? p->count : cg;
    wd[nw++] = t ? c : p->count;
    bd[nb++] = p->count;
    if (g) {
        wd[nw++] = groups;
        bd[nb++] = groups;
    }
    c = cg;
    const double fan_in = area * (double)(t ? p->count : c);
    const double fan_out = area * (double)(t ? c : p->count);
    dla_tensor *w = dla__init_tensor(p->init[0], sink, nw, wd, fan_in, fan_out);
    dla_status st = dla__param_add(sink, "Weights", DLA__LEARNABLE, w, nw, wd, 1);
    if (st != DLA_OK)
        return st;
    dla_tensor *b = dla__init_tensor(p->init[1], sink, nb, bd, fan_in, fan_out);
    return dla__param_add(sink, "Bias", DLA__LEARNABLE, b, nb, bd, 0);
}

static dla_status init(const dla_layer *l, const dla__shape *in, dla__param_sink *sink, int d, int t)
{
    return init_g(l, in, sink, d, t, 0);
}

static dla_status gconv2d_init(const dla_layer *l, int nin, const dla__shape *in,
                               dla__param_sink *sink)
{
    (void)nin;
    return init_g(l, in, sink, 2, 0, 1);
}

static dla_status conv2d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 2, 0);
}

static dla_status conv3d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 3, 0);
}

static dla_status tconv3d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 3, 1);
}

static dla_status conv1d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 1, 0);
}

static dla_status tconv2d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 2, 1);
}

static dla_status tconv1d_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)nin;
    return init(l, in, sink, 1, 1);
}

static dla_status forward(const dla__props *p, dla__call *c, int d, int t)
{
    dla_conv_options o = {0};
    for (int i = 0; i < d; i++) {
        o.stride[i] = p->stride[i];
        o.dilation[i] = p->dilation[i];
        o.padding[0][i] = p->padding[2 * i];
        o.padding[1][i] = p->padding[2 * i + 1];
    }
    if (!strcmp(p->mode, "same"))
        o.padding_mode = "same";
    else if (!strcmp(p->mode, "causal"))
        o.padding[0][0] = (p->size[0] - 1) * p->dilation[0];
    /* Image sequences ("SCBT", "SSCBT", "SSSCBT", or without "B"), as
     * MATLAB's layers take them: each time step convolved alone over the
     * "S" dims. dla_conv (dlconv) refuses "T" beside "S", so the steps
     * join the batch (B and T are adjacent in canonical order, T last)
     * and part again after: a view each way, no copy. The layer accepted
     * these inputs at initialization and then failed in dla_conv. */
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    const size_t n = strlen(f);
    int64_t xd[DLA_MAX_DIMS];
    const int nd = dla_tensor_dims(x, xd);
    const int seq = n >= 3 && nd == (int)n && f[0] == 'S' && f[n - 1] == 'T';
    int ns = 0;
    for (size_t i = 0; i < n; i++)
        ns += f[i] == 'S';
    if (seq && d >= 2 && ns == d - 1) {
        /* "SCBT" or "SCT" into a 2-D layer, "SSCBT" or "SSCT" into a 3-D
         * one: MATLAB's spatio-temporal input, convolved over the "S" dims
         * and then "T" as the last filter dim (a 2-D layer's width,
         * Stride(2), Padding left and right; a 3-D one's depth), as its
         * convolution2dLayer and convolution3dLayer do. dla_conv takes
         * "T" as an "S" dim of an unformatted x ("SCBS"), a view. */
        char df[DLA_MAX_DIMS + 1];
        memcpy(df, f, n + 1);
        df[n - 1] = 'S';
        o.data_format = df;
        dla_tensor *y = (t ? dla_transpconv : dla_conv)(dla_reshape(x, "", nd, xd), c->p[0],
                                                        c->p[1], &o);
        if (dla_tensor_status(y) != DLA_OK) {
            c->y = y;
            return dla__nn_fail(dla_tensor_status(y), "%s (the input's \"S\" and \"T\" dims "
                                "convolved as the height and width, \"%s\" read as \"%s\")",
                                dla_tensor_error(y), f, df);
        }
        int64_t yd[DLA_MAX_DIMS];
        for (int i = dla_tensor_dims(y, yd); i < (int)n; i++)
            yd[i] = 1;
        c->y = dla_reshape(y, f, (int)n, yd);
        return dla_tensor_status(c->y);
    }
    if (!seq) {
        c->y = (t ? dla_transpconv : dla_conv)(x, c->p[0], c->p[1], &o);
        return dla_tensor_status(c->y);
    }
    const int has_b = f[n - 2] == 'B';
    char folded[DLA_MAX_DIMS + 2];
    memcpy(folded, f, n - 1);
    folded[n - 1] = '\0';
    if (!has_b)
        folded[n - 1] = 'B', folded[n] = '\0';
    int64_t fd[DLA_MAX_DIMS];
    memcpy(fd, xd, sizeof(int64_t) * (size_t)(n - 1));
    if (has_b)
        fd[n - 2] *= xd[n - 1];
    else
        fd[n - 1] = xd[n - 1];
    const int fnd = has_b ? (int)n - 1 : (int)n;
    dla_tensor *y = (t ? dla_transpconv : dla_conv)(dla_reshape(x, folded, fnd, fd), c->p[0],
                                                    c->p[1], &o);
    if (dla_tensor_status(y) != DLA_OK) {
        /* Its message names the folded x: say what it was. */
        char dims[96] = "";
        for (int i = 0, k = 0; i < (int)n && k < (int)sizeof dims; i++)
            k += snprintf(dims + k, sizeof dims - (size_t)k, "%s%lld", i ? "x" : "",
                          (long long)xd[i]);
        c->y = y;
        return dla__nn_fail(dla_tensor_status(y), "%s (the input, %s %s, with each time step "
                            "taken as an observation)", dla_tensor_error(y), dims, f);
    }
    int64_t yd[DLA_MAX_DIMS];
    dla_tensor_dims(y, yd);
    if (has_b)
        yd[n - 2] = xd[n - 2], yd[n - 1] = xd[n - 1];
    c->y = dla_reshape(y, f, (int)n, yd);
    return dla_tensor_status(c->y);
}

static dla_status conv2d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 2, 0); }
/* The groups are in the weights' last dim, which dla_conv reads. */
static dla_status gconv2d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 2, 0); }
static dla_status conv3d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 3, 0); }
static dla_status tconv3d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 3, 1); }
static dla_status conv1d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 1, 0); }
static dla_status tconv2d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 2, 1); }
static dla_status tconv1d_forward(const dla__props *p, dla__call *c) { return forward(p, c, 1, 1); }

static void describe(const dla__props *p, const dla__shape *in, char *buf, size_t size, int d,
                     int t)
{
    int64_t c = p->channels ? p->channels : in ? dla__shape_dim(in, 'C') : 0;
    char filt[96], pad[128], stride[64];
    dla__dims_text(d, p->size, filt, sizeof filt);
    if (c) {
        size_t n = strlen(filt);
        snprintf(filt + n, sizeof filt - n, "x%lld", (long long)c);
    }
    if (p->mode[0])
        snprintf(pad, sizeof pad, "'%s'", p->mode);
    else
        dla__list_text(2 * d, p->padding, 1, pad, sizeof pad);
    dla__list_text(d, p->stride, d > 1, stride, sizeof stride);
    /* The dilation where it is not 1, as MATLAB's description gives it
     * ("with stride [1 1], dilation factor [2 2] and padding 'same'"): a
     * dilated layer read as a plain one in dla_net_summary. */
    char dil[96] = "";
    int dilated = 0;
    for (int i = 0; i < d; i++)
        dilated |= p->dilation[i] > 1;
    if (dilated) {
        char list[64];
        dla__list_text(d, p->dilation, d > 1, list, sizeof list);
        snprintf(dil, sizeof dil, ", dilation factor %s", list);
    }
    snprintf(buf, size, "%lld %s %s with stride %s%s and %s %s", (long long)p->count, filt,
             t ? "transposed convolutions" : "convolutions", stride, dil,
             t ? "cropping" : "padding", pad);
}

static void conv2d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 2, 0);
}

/* "4 groups of 8 3x3x2 convolutions with ...", as MATLAB's summary says
 * it; "channel-wise groups of" before the input is known. */
static void gconv2d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    const int64_t c = in ? dla__shape_dim(in, 'C') : 0;
    const int64_t groups = p->dim != DLA_CHANNEL_WISE ? p->dim : c;
    dla__props one = *p;
    if (!one.channels && c && groups && c % groups == 0)
        one.channels = c / groups;
    char rest[256];
    describe(&one, NULL, rest, sizeof rest, 2, 0);
    if (groups)
        snprintf(buf, size, "%lld groups of %s", (long long)groups, rest);
    else
        snprintf(buf, size, "channel-wise groups of %s", rest);
}

static void conv3d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 3, 0);
}

static void tconv3d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 3, 1);
}

static void conv1d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 1, 0);
}

static void tconv2d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 2, 1);
}

static void tconv1d_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    describe(p, in, buf, size, 1, 1);
}

const dla__layer_kind dla__kind_conv2d = {
    .type = "convolution2d", .display = "2-D Convolution", .default_name = "conv",
    .fields = conv2d_fields, .check = conv2d_check, .init = conv2d_init,
    .forward = conv2d_forward, .describe = conv2d_describe,
};

const dla__layer_kind dla__kind_gconv2d = {
    .type = "groupedConvolution2d", .display = "2-D Grouped Convolution",
    .default_name = "groupconv", .fields = gconv2d_fields, .check = gconv2d_check,
    .init = gconv2d_init, .forward = gconv2d_forward, .describe = gconv2d_describe,
};

const dla__layer_kind dla__kind_conv3d = {
    .type = "convolution3d", .display = "3-D Convolution", .default_name = "conv3d",
    .fields = conv3d_fields, .check = conv3d_check, .init = conv3d_init,
    .forward = conv3d_forward, .describe = conv3d_describe,
};

const dla__layer_kind dla__kind_tconv3d = {
    .type = "transposedConvolution3d", .display = "3-D Transposed Convolution",
    .default_name = "transconv3d", .fields = tconv3d_fields, .check = tconv3d_check,
    .init = tconv3d_init, .forward = tconv3d_forward, .describe = tconv3d_describe,
};

const dla__layer_kind dla__kind_conv1d = {
    .type = "convolution1d", .display = "1-D Convolution", .default_name = "conv1d",
    .fields = conv1d_fields, .check = conv1d_check, .init = conv1d_init,
    .forward = conv1d_forward, .describe = conv1d_describe,
};

const dla__layer_kind dla__kind_tconv2d = {
    .type = "transposedConvolution2d", .display = "2-D Transposed Convolution",
    .default_name = "transconv", .fields = tconv2d_fields, .check = tconv2d_check,
    .init = tconv2d_init, .forward = tconv2d_forward, .describe = tconv2d_describe,
};

const dla__layer_kind dla__kind_tconv1d = {
    .type = "transposedConvolution1d", .display = "1-D Transposed Convolution",
    .default_name = "transconv1d", .fields = tconv1d_fields, .check = tconv1d_check,
    .init = tconv1d_init, .forward = tconv1d_forward, .describe = tconv1d_describe,
};

static dla_layer *make_g(const dla__layer_kind *kind, int d, const int64_t *filter,
                         int64_t filters, int64_t groups, const dla_conv_layer_options *opts)
{
    dla_conv_layer_options o = opts ? *opts : (dla_conv_layer_options){0};
    dla__props p = {0};
    for (int i = 0; i < d; i++) {
        p.size[i] = filter[i];
        p.stride[i] = o.stride[i] ? o.stride[i] : 1;
        p.dilation[i] = o.dilation[i] ? o.dilation[i] : 1;
        p.padding[2 * i] = o.padding[2 * i];
        p.padding[2 * i + 1] = o.padding[2 * i + 1];
    }
    p.count = filters;
    p.channels = o.num_channels;
    p.dim = groups;
    dla_status st = dla__props_string(p.mode, o.padding_mode, "", "convolution: PaddingMode");
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.weights_initializer, "glorot", "convolution: WeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.bias_initializer, "zeros", "convolution: BiasInitializer");
    dla_layer *l = dla__layer_new(kind, o.name, 1, &p, st);
    return l;
}

static dla_layer *make(const dla__layer_kind *kind, int d, const int64_t *filter, int64_t filters,
                       const dla_conv_layer_options *opts)
{
    return make_g(kind, d, filter, filters, 0, opts);
}

DLA_API dla_layer *dla_grouped_conv2d_layer(int64_t filter_height, int64_t filter_width,
                                            int64_t num_filters_per_group, int64_t num_groups,
                                            const dla_conv_layer_options *opts)
{
    return make_g(&dla__kind_gconv2d, 2, (const int64_t[]){filter_height, filter_width},
                  num_filters_per_group, num_groups, opts);
}

DLA_API dla_layer *dla_conv2d_layer(int64_t filter_height, int64_t filter_width, int64_t num_filters,
                                    const dla_conv_layer_options *opts)
{
    return make(&dla__kind_conv2d, 2, (const int64_t[]){filter_height, filter_width}, num_filters,
                opts);
}

DLA_API dla_layer *dla_conv3d_layer(int64_t filter_height, int64_t filter_width,
                                    int64_t filter_depth, int64_t num_filters,
                                    const dla_conv_layer_options *opts)
{
    return make(&dla__kind_conv3d, 3,
                (const int64_t[]){filter_height, filter_width, filter_depth}, num_filters, opts);
}

DLA_API dla_layer *dla_conv1d_layer(int64_t filter_size, int64_t num_filters,
                                    const dla_conv_layer_options *opts)
{
    return make(&dla__kind_conv1d, 1, (const int64_t[]){filter_size}, num_filters, opts);
}

static dla_layer *make_transposed(const dla__layer_kind *kind, int d, const int64_t *filter,
                                  int64_t filters, const dla_transposed_conv_layer_options *opts)
{
    dla_transposed_conv_layer_options o = opts ? *opts : (dla_transposed_conv_layer_options){0};
    dla__props p = {0};
    for (int i = 0; i < d; i++) {
        p.size[i] = filter[i];
        p.stride[i] = o.stride[i] ? o.stride[i] : 1;
        p.dilation[i] = 1;
        p.padding[2 * i] = o.cropping[2 * i];
        p.padding[2 * i + 1] = o.cropping[2 * i + 1];
    }
    p.count = filters;
    p.channels = o.num_channels;
    dla_status st = dla__props_string(p.mode, o.cropping_mode, "", "transposed convolution: Cropping");
    if (st == DLA_OK)
        st = dla__props_string(p.init[0], o.weights_initializer, "glorot",
                               "transposed convolution: WeightsInitializer");
    if (st == DLA_OK)
        st = dla__props_string(p.init[1], o.bias_initializer, "zeros",
                               "transposed convolution: BiasInitializer");
    return dla__layer_new(kind, o.name, 1, &p, st);
}

DLA_API dla_layer *dla_transposed_conv2d_layer(int64_t filter_height, int64_t filter_width,
                                               int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts)
{
    return make_transposed(&dla__kind_tconv2d, 2, (const int64_t[]){filter_height, filter_width},
                           num_filters, opts);
}

DLA_API dla_layer *dla_transposed_conv1d_layer(int64_t filter_size, int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts)
{
    return make_transposed(&dla__kind_tconv1d, 1, (const int64_t[]){filter_size}, num_filters,
                           opts);
}

DLA_API dla_layer *dla_transposed_conv3d_layer(int64_t filter_height, int64_t filter_width,
                                               int64_t filter_depth, int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts)
{
    return make_transposed(&dla__kind_tconv3d, 3,
                           (const int64_t[]){filter_height, filter_width, filter_depth},
                           num_filters, opts);
}

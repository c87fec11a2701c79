/*
 * slice_diff_layer.h - the custom layer of the MATLAB Answers question
 * (../shared/seeds/, issue 18) as a dlaccel layer type: what the MATLAB
 * user writes as a class deriving from nnet.layer.Layer,
 *
 *     classdef sliceDiffConvLayer < nnet.layer.Layer
 *         properties
 *             NumTimeSteps                       % 3
 *         end
 *         properties (Learnable)
 *             KiMinus; KiPlus; bias              % 3x3x1x1xC, 3x3x1x1xC, 2x1
 *         end
 *         methods
 *             function Z2 = predict(layer, X)
 *                 Z = reshape(X, [h w c numTimedims N/numTimedims]);
 *                 Z2 = dlconv(Z(:,:,:,2,:) - Z(:,:,:,1,:), KiMinus, bias(1), Padding="same")
 *                      + Z(:,:,:,2,:)
 *                      + dlconv(Z(:,:,:,2,:) - Z(:,:,:,3,:), KiPlus, bias(2), Padding="same");
 *
 * KiMinus and KiPlus are 3x3x1x1xC grouped filters (one 3x3 filter per
 * channel: channel-wise separable). The input is either the page's
 * layout, "SSCB" h x w x c x (T*N) with the T frames of each observation
 * next to each other along B (reshaped to h x w x c x T x N, a view), or
 * "SSCBT" h x w x c x N x T, where each observation's frames are a T dim
 * of their own: the form trainnet batches by observation. The output is
 * "SSCB" h x w x c x N. The layer reads frames 1 to 3 (NumTimeSteps is 3
 * on the page).
 *
 * Used by examples/custom_layer.c and tests/test_custom_layer.c.
 */
#ifndef SLICE_DIFF_LAYER_H
#define SLICE_DIFF_LAYER_H

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define SLICE_DIFF_TYPE "sliceDiffConv"

static const dla_layer_property slice_diff_properties[] = {{"NumTimeSteps", 3}};

static dla_status slice_diff_validate(const double *p)
{
    if (!(p[0] >= 3 && p[0] <= 1e6 && p[0] == floor(p[0])))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "NumTimeSteps %g must be a whole number "
                             ">= 3 (the layer reads frames 1 to 3)", p[0]);
    return DLA_OK;
}

/* The frames 1..3 of each observation as "SSCB" h x w x c x N views of x. */
static dla_status slice_diff_frames(dla_tensor *x, int64_t nt, dla_tensor **z)
{
    const char *f = dla_tensor_format(x);
    int64_t h = dla_tensor_dim(x, 1), w = dla_tensor_dim(x, 2), c = dla_tensor_dim(x, 3);
    int64_t b = dla_tensor_dim(x, 4);
    if (!strcmp(f, "SSCB")) {
        if (b % nt)
            return dla_set_error(DLA_ERR_SHAPE, "the input's B dim is %lld, not a multiple of "
                                 "NumTimeSteps %lld (the page's layout: the frames of each "
                                 "observation one after the other along B; or give \"SSCBT\" "
                                 "data)", (long long)b, (long long)nt);
        dla_tensor *zz = dla_reshape(x, "", DLA_DIMS(h, w, c, nt, b / nt));
        for (int k = 0; k < 3; k++)
            z[k] = dla_reshape(dla_slice(zz, 4, k, 1, k + 1), "SSCB", DLA_DIMS(h, w, c, b / nt));
    } else if (!strcmp(f, "SSCBT")) {
        if (dla_tensor_dim(x, 5) != nt)
            return dla_set_error(DLA_ERR_SHAPE, "the input has %lld time steps; NumTimeSteps is "
                                 "%lld", (long long)dla_tensor_dim(x, 5), (long long)nt);
        for (int k = 0; k < 3; k++)
            z[k] = dla_reshape(dla_slice(x, 5, k, 1, k + 1), "SSCB", DLA_DIMS(h, w, c, b));
    } else {
        return dla_set_error(DLA_ERR_FORMAT, "the input is \"%s\"; the layer takes \"SSCB\" "
                             "(frames along B) or \"SSCBT\"", f);
    }
    return dla_tensor_status(z[2]);
}

/* MATLAB's deferred initialization: the filters' channel count is the
 * input's. */
static dla_status slice_diff_initialize(const dla_layer *layer, dla_layer_init *init, int nx,
                                        dla_tensor *const *x)
{
    (void)layer, (void)nx;
    int64_t c = dla_tensor_dim(x[0], 3);
    /* Glorot over one group: 3x3 in, 3x3 out. */
    dla_status st = dla_layer_add_learnable(init, "KiMinus", DLA_DIMS(3, 3, 1, 1, c), "glorot", 9, 9);
    if (st == DLA_OK)
        st = dla_layer_add_learnable(init, "KiPlus", DLA_DIMS(3, 3, 1, 1, c), "glorot", 9, 9);
    if (st == DLA_OK)
        st = dla_layer_add_learnable(init, "Bias", DLA_DIMS(2, 1), "zeros", 0, 0);
    return st;
}

/* The layer's output from its frames z and learnables (KiMinus, KiPlus,
 * Bias): shared with the free-function version the example compares. */
static dla_tensor *slice_diff_compute(dla_tensor *const *z, dla_tensor *const *p)
{
    dla_conv_options same = {.padding_mode = "same"};
    dla_tensor *b1 = dla_slice(p[2], 1, 0, 1, 1), *b2 = dla_slice(p[2], 1, 1, 1, 2);
    dla_tensor *y = dla_add(dla_conv(dla_sub(z[1], z[0]), p[0], NULL, &same), b1);
    y = dla_add(y, z[1]);
    return dla_add(y, dla_add(dla_conv(dla_sub(z[1], z[2]), p[1], NULL, &same), b2));
}

static dla_status slice_diff_predict(dla_layer_io *io)
{
    dla_tensor *z[3];
    dla_status st = slice_diff_frames(io->x[0], (int64_t)io->properties[0], z);
    if (st != DLA_OK)
        return st;
    io->y = slice_diff_compute(z, io->learnables);
    return dla_tensor_status(io->y);
}

static void slice_diff_describe(const double *p, char *buf, size_t size)
{
    snprintf(buf, size, "frames 2-1 and 2-3 of %g through channel-wise separable 3x3 "
             "convolutions, plus frame 2", p[0]);
}

static const dla_layer_type slice_diff_type = {
    .type = SLICE_DIFF_TYPE,
    .description = "Slice Difference Convolution",
    .default_name = "slicediff",
    .nproperties = 1,
    .properties = slice_diff_properties,
    .validate = slice_diff_validate,
    .initialize = slice_diff_initialize,
    .predict = slice_diff_predict,
    .describe = slice_diff_describe,
};

#endif

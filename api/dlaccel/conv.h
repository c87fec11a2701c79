/*
 * dlaccel/conv.h - included by dlaccel.h; do not include it directly.
 *
 * Convolution and transposed convolution, as MATLAB's dlconv and
 * dltranspconv:
 *
 *     // 28x28x1x128 "SSCB" images, 20 filters of 5x5, padding "same"
 *     dla_tensor *w = dla_randn(DLA_F32, "", DLA_DIMS(5, 5, 1, 20));
 *     dla_tensor *b = dla_zeros(DLA_F32, "", DLA_DIMS(20, 1));
 *     dla_tensor *y = dla_conv(x, w, b, &(dla_conv_options){.padding_mode = "same"});
 *     // y: 28x28x20x128 "SSCB"
 *
 * Both are differentiable: inside dla_feval, dla_gradient reaches x, the
 * weights and the bias through them (their gradients are convolutions
 * too, run by the same kernels, and differentiable again for higher
 * derivatives: dla_gradient_opts, autodiff.h).
 *
 * Which dims are convolved: the "S" dims of x (1 to 3 of them), found by
 * label as MATLAB does; an x with no "S" dim but a "T" dim (a "CBT"
 * sequence) is convolved along "T". x needs a "C" dim; its "B" dim is
 * optional (one observation). Other labels ("U", or "T" beside "S") are
 * DLA_ERR_FORMAT. Below, "spatial dim i" is the i-th convolved dim.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_CONV_H
#define DLACCEL_CONV_H

#ifdef __cplusplus
extern "C" {
#endif

/* Options of dla_conv and dla_transpconv. A zeroed struct (or NULL) is
 * MATLAB's defaults: stride 1, dilation 1, no padding or cropping. */
typedef struct dla_conv_options {
    /* Step between windows along spatial dim i (MATLAB's Stride); 0: 1. */
    int64_t stride[3];
    /* Spacing between filter elements along spatial dim i (MATLAB's
     * DilationFactor); 0: 1. */
    int64_t dilation[3];
    /* dla_conv: zeros added before ([0][i]) and after ([1][i]) spatial dim
     * i, MATLAB's 2-by-d Padding matrix [top left; bottom right].
     * dla_transpconv: elements cropped from the output there (MATLAB's
     * Cropping). Each >= 0; zero by default. */
    int64_t padding[2][3];
    /* NULL: the numbers above. "same" (they must then be zero):
     * dla_conv pads so that spatial dim i of the output has
     * ceil(in / stride) elements, splitting the padding evenly with any odd
     * one after (MATLAB's Padding "same"); dla_transpconv crops so that the
     * output has in * stride elements, any odd one cropped after (MATLAB's
     * Cropping "same"). */
    const char *padding_mode;
    /* The labels of an unformatted x, one per dim ("SSCB"; x's dims past
     * them must be 1), as MATLAB's DataFormat; the result is then
     * unformatted too, in x's dim order.
     * NULL or "" for a formatted x (which must not get a different one). */
    const char *data_format;
} dla_conv_options;

/* MATLAB dlconv(X, weights, bias): the cross-correlation of x with
 * filters, plus a bias per filter.
 *
 * x: float (single or double), formatted with 1-3 "S" dims (or one "T"),
 *    a "C" dim and optionally a "B" dim, in any order for an unformatted
 *    x with opts->data_format.
 * weights: MATLAB's layout, by position (labels, if any, are not read):
 *    filterSize(1..d) x C/G x F/G x G for d spatial dims: C/G channels per
 *    group, F/G filters per group, G groups (trailing dims of 1 may be
 *    left out, so an ungrouped 2-D filter bank is fh x fw x C x F).
 *    Output filter f of group g reads input channels g*C/G .. (g+1)*C/G-1;
 *    G = C with C/G = 1 is channel-wise (depthwise) separable convolution.
 * bias: NULL for none, else F elements (any dims holding them: 20x1,
 *    1x1x20) or one element added everywhere.
 *
 * The result has x's dims and labels, with each spatial dim of size
 * floor((in + pad_before + pad_after - dilation*(filter - 1) - 1) / stride)
 * + 1 and the "C" dim of size F; it is on x's device with x's dtype.
 * Gradients: x through dla_transpconv-like transposed convolution, the
 * weights through a filter-gradient convolution, the bias by summing over
 * the spatial and batch dims. All operands are borrowed.
 *
 * Errors: DLA_ERR_FORMAT (x unformatted without data_format, bad labels);
 * DLA_ERR_SHAPE when the weights' channels x groups do not match x's "C"
 * dim (the message names both: "dla_conv: argument weights: 5x5x3x20
 * expects 3 channels per group x 1 group = 3 input channels, but x
 * (28x28x1x128 SSCB) has 1"), when x has no channels or the weights no
 * filters, when the bias has neither F elements nor one,
 * when a filter does not fit in the padded input, or when a spatial dim of
 * x or of the result has more than 2^31-1 elements; DLA_ERR_INVALID_ARGUMENT
 * for a filter size, stride or dilation outside 1..2^31-1, a padding
 * outside 0..2^31-1, or an unknown padding_mode;
 * DLA_ERR_DTYPE when the operands are not all single or all double. */
DLA_API dla_tensor *dla_conv(dla_tensor *x, dla_tensor *weights, dla_tensor *bias,
                             const dla_conv_options *opts);

/* MATLAB dltranspconv(X, weights, bias): transposed convolution (the
 * gradient of dla_conv with respect to its input, used to upsample).
 *
 * weights: MATLAB's transposed layout, by position: filterSize(1..d) x
 *    F/G x C/G x G, where C is x's channel count and F the output's (the
 *    filters per group come before the channels per group: a 2-D bank
 *    from 16 to 8 channels is fh x fw x 8 x 16). This is the layout of the
 *    dla_conv that maps the output back to x, so dla_transpconv(y, w, ...)
 *    is the gradient of dla_conv(., w, ...) at y.
 * bias: NULL, F elements or one element, as dla_conv.
 *
 * Along spatial dim i the output has
 * (in - 1) * stride + dilation * (filter - 1) + 1 - crop_before - crop_after
 * elements (opts->padding holds the cropping, or padding_mode "same"),
 * and 0 where in is 0 (an empty input gives an empty output, not a block
 * of bias).
 * Labels, dtype, device, gradients, ownership and errors as dla_conv, with
 * "dla_transpconv" in the messages; DLA_ERR_SHAPE when the cropping leaves
 * no output. */
DLA_API dla_tensor *dla_transpconv(dla_tensor *x, dla_tensor *weights, dla_tensor *bias,
                                   const dla_conv_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_CONV_H */

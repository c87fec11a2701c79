/*
 * digit_net.h - the digit CNN of MATLAB's dlaccelerate page (three
 * convolutions with batch normalization and ReLU, a fully connected layer
 * and softmax) for 28x28 grey images, as the README's main job and the
 * transfer-learning example build it. Layers are named input, conv1..3,
 * bn1..3, relu1..3, fc and softmax.
 */
#ifndef DLACCEL_EXAMPLES_DIGIT_NET_H
#define DLACCEL_EXAMPLES_DIGIT_NET_H

#include <dlaccel.h>
#include <dlaccel/net.h>

/* The network for classes classes, initialized (NULL on failure:
 * dla_last_error says why). normalization is the input layer's: NULL for
 * the mean image subtracted ("zerocenter" per element, which trainnet
 * computes from its data or dla_net_set_input_statistics sets), or
 * "none"; softmax 0 leaves the softmax layer out (a custom loop that
 * applies it in its loss). */
static inline dla_net *digit_net_with(int classes, const char *normalization, int softmax)
{
    dla_layer *layers[] = {
        dla_image_input_layer(28, 28, 1, &(dla_image_input_options){
                                             .name = "input",
                                             .normalization = normalization ? normalization : "zerocenter",
                                             .normalization_dimension = "element"}),
        dla_conv2d_layer(5, 5, 20, &(dla_conv_layer_options){.name = "conv1"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn1"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu1"}),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.name = "conv2", .padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn2"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu2"}),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.name = "conv3", .padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn3"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu3"}),
        dla_fc_layer(classes, &(dla_fc_layer_options){.name = "fc"}),
        softmax ? dla_softmax_layer(&(dla_layer_options){.name = "softmax"}) : NULL,
    };
    return dla_net_create((int)(sizeof layers / sizeof layers[0]) - !softmax, layers);
}

/* The page's network: zero-centred input, softmax at the end. */
static inline dla_net *digit_net(int classes) { return digit_net_with(classes, NULL, 1); }

#endif

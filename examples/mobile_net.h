/*
 * mobile_net.h - the MobileNet-style network of `cnn_fmnist --mobile`,
 * shared with the benchmark (bench/workloads_netstep.c), which times its
 * train step and inference beside bench/torch_mobile.py. 28x28x1 images
 * ("zerocenter" input normalization, its Mean set by the caller), depthwise
 * separable blocks (a channel-wise grouped convolution, then a 1x1 one),
 * ReLU6 (clippedReluLayer(6)), a squeeze-and-excitation gate (global
 * average pooling, two 1x1 convolutions, sigmoid, multiplication) and
 * spatial dropout:
 *
 *   input -> conv 3x3x16 -> bn -> relu6
 *         -> dw 3x3 stride 2 -> bn -> relu6 -> pw 1x1x32 -> bn -> relu6   (14x14x32)
 *         -> dw 3x3 stride 2 -> bn -> relu6 -> pw 1x1x64 -> bn -> relu6   (7x7x64)
 *         -> se: gap -> 1x1x16 -> relu -> 1x1x64 -> sigmoid -> times (7x7x64)
 *         -> spatial dropout 0.1 -> fc -> softmax
 *
 * (A global average pooling before the fc, as MobileNets have on larger
 * images, left 7x7 too few positions: 72.6% after 3 epochs on
 * Fashion-MNIST, 89.0% without it.)
 */
#ifndef DLA_EXAMPLES_MOBILE_NET_H
#define DLA_EXAMPLES_MOBILE_NET_H

#include <dlaccel.h>

/* The network, initialized, with `classes` outputs; NULL on an error
 * (dla_last_error says which). */
static inline dla_net *mobile_net_make(int classes)
{
#define MOBILE_BN_RELU6(k)                                                                         \
    dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn" k}),                           \
        dla_clipped_relu_layer(6, &(dla_layer_options){.name = "relu6_" k})
    dla_layer *layers[] = {
        dla_image_input_layer(28, 28, 1, &(dla_image_input_options){
                                             .name = "input", .normalization = "zerocenter",
                                             .normalization_dimension = "element"}),
        dla_conv2d_layer(3, 3, 16, &(dla_conv_layer_options){.name = "conv1", .padding_mode = "same"}),
        MOBILE_BN_RELU6("1"),
        dla_grouped_conv2d_layer(3, 3, 1, DLA_CHANNEL_WISE, &(dla_conv_layer_options){
                                     .name = "dw2", .stride = {2, 2}, .padding_mode = "same"}),
        MOBILE_BN_RELU6("2"),
        dla_conv2d_layer(1, 1, 32, &(dla_conv_layer_options){.name = "pw2"}),
        MOBILE_BN_RELU6("3"),
        dla_grouped_conv2d_layer(3, 3, 1, DLA_CHANNEL_WISE, &(dla_conv_layer_options){
                                     .name = "dw3", .stride = {2, 2}, .padding_mode = "same"}),
        MOBILE_BN_RELU6("4"),
        dla_conv2d_layer(1, 1, 64, &(dla_conv_layer_options){.name = "pw3"}),
        MOBILE_BN_RELU6("5"),
        dla_global_avgpool2d_layer(&(dla_layer_options){.name = "se_pool"}),
        dla_conv2d_layer(1, 1, 16, &(dla_conv_layer_options){.name = "se_reduce"}),
        dla_relu_layer(&(dla_layer_options){.name = "se_relu"}),
        dla_conv2d_layer(1, 1, 64, &(dla_conv_layer_options){.name = "se_expand"}),
        dla_sigmoid_layer(&(dla_layer_options){.name = "se_sigmoid"}),
        dla_multiplication_layer(2, &(dla_layer_options){.name = "se_times"}),
        dla_spatial_dropout_layer(0.1, &(dla_layer_options){.name = "drop"}),
        dla_fc_layer(classes, &(dla_fc_layer_options){.name = "fc"}),
        dla_softmax_layer(&(dla_layer_options){.name = "softmax"}),
    };
#undef MOBILE_BN_RELU6
    dla_net *net = dla_net_create((int)(sizeof layers / sizeof layers[0]), layers);
    /* The gate multiplies the activation it was pooled from. */
    if (net && (dla_net_connect(net, "relu6_5", "se_times/in2") != DLA_OK ||
                dla_net_init(net, 0, NULL) != DLA_OK)) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

#endif

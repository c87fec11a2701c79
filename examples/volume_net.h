/*
 * volume_net.h - the 3-D convolutional network of examples/volumes,
 * shared with the benchmark (bench/workloads_netstep.c), which times its
 * train step beside bench/torch_volume.py. side^3 volumes of one channel
 * ("zerocenter" input normalization):
 *
 *   input -> conv 3x3x3x8 "same" -> bn -> relu -> maxpool 2x2x2 stride 2
 *         -> conv 3x3x3x16 "same" -> bn -> relu -> maxpool 2x2x2 stride 2
 *         -> conv 3x3x3x32 "same" -> relu -> global average pooling
 *         -> fc -> softmax
 */
#ifndef DLA_EXAMPLES_VOLUME_NET_H
#define DLA_EXAMPLES_VOLUME_NET_H

#include <dlaccel.h>
#include <dlaccel/net.h>

/* The network, initialized, for side^3 volumes with `classes` outputs;
 * NULL on an error (dla_last_error says which). */
static inline dla_net *volume_net_make(int64_t side, int64_t classes)
{
    const dla_conv_layer_options same = {.padding_mode = "same"};
    const dla_pool_layer_options halve = {.stride = {2, 2, 2}};
    dla_layer *layers[] = {
        dla_image3d_input_layer(side, side, side, 1, NULL),
        dla_conv3d_layer(3, 3, 3, 8, &same),
        dla_batchnorm_layer(NULL),
        dla_relu_layer(NULL),
        dla_maxpool3d_layer(2, 2, 2, &halve),
        dla_conv3d_layer(3, 3, 3, 16, &same),
        dla_batchnorm_layer(NULL),
        dla_relu_layer(NULL),
        dla_maxpool3d_layer(2, 2, 2, &halve),
        dla_conv3d_layer(3, 3, 3, 32, &same),
        dla_relu_layer(NULL),
        dla_global_avgpool3d_layer(NULL),
        dla_fc_layer(classes, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(sizeof layers / sizeof layers[0], layers);
    if (net && dla_net_init(net, 0, NULL) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

#endif

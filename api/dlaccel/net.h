/*
 * dlaccel/net.h - included by dlaccel.h; do not include it directly.
 *
 * Networks: MATLAB's dlnetwork. A network is a graph of named layers with
 * its Learnables and State tables; forward runs it in training mode and
 * returns the updated state, predict runs it in inference mode.
 *
 *     dla_layer *layers[] = {
 *         dla_image_input_layer(28, 28, 1, &(dla_image_input_options){.normalization = "none"}),
 *         dla_conv2d_layer(5, 5, 20, NULL),
 *         dla_batchnorm_layer(NULL),
 *         dla_relu_layer(NULL),
 *         dla_fc_layer(10, NULL),
 *         dla_softmax_layer(NULL),
 *     };
 *     dla_net *net = dla_net_create(6, layers);      // initialized: 28x28x1 input
 *     dla_net_print(net, stdout);                     // the layer table
 *
 *     // A model loss, as MATLAB's modelLoss(net, X, T):
 *     static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in,
 *                                  int nout, dla_tensor **out)
 *     {
 *         dla_net *net = ctx;
 *         dla_tensor *y;
 *         dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + dla_net_learnable_count(net), NULL);
 *         out[0] = dla_crossentropy(y, in[1], NULL);
 *         return dla_net_gradient(net, out[0], out + 1);   // one per learnable
 *     }
 *     ...
 *     int nl = dla_net_learnable_count(net), ns = dla_net_state_count(net);
 *     dla_tensor *out[1 + nl + ns];
 *     dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 1 + nl + ns, out);
 *     dla_net_set_state(net, ns, out + 1 + nl);                  // net.State = state
 *     dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, velocity,
 *                    DLA_SGDM_LEARN_RATE, DLA_SGDM_MOMENTUM);      // optim.h
 *
 * Automatic acceleration. As MATLAB does for dlnetwork inside dlfeval,
 * dla_net_forward and dla_net_predict run through an accelerated function
 * (accel.h) that the network owns: the first call with a new input
 * pattern runs the layers and records a trace, later calls replay it. The
 * learnables, the state and the input normalization statistics are tensor
 * inputs of that function, never constants of the trace, so updating them
 * never makes a trace stale; the architecture is part of the key. Inside
 * dla_feval the replayed ops are recorded on the tape like any others, so
 * dla_gradient reaches the learnables. dla_net_set_accelerate(net, 0)
 * turns it off; dla_net_accelerator(net) gives its HitRate and Occupancy.
 *
 * Layers. Each constructor takes MATLAB's positional arguments and an
 * options struct whose zeroed fields mean MATLAB's defaults (NULL for all
 * defaults). A constructor never fails with NULL except when out of
 * memory: bad options give a layer in an error state, and the network it is
 * added to fails with its message (as sticky tensors do). Layers belong to
 * the network they are given to; dla_layer_free frees one that never was.
 * Layer names: unique within a network, UTF-8 text of any length without
 * '/' or control characters other than a tab (the saved architecture is
 * JSON, and the summary prints names to terminals); an empty name gets
 * MATLAB's default name: bare ("fc") for the one unnamed layer of its kind
 * in a call while the name is free, numbered ("conv_1", "conv_2") for
 * several, as dlnetwork names them.
 *
 * Tensors of a network (learnables, state, statistics) are owned by it:
 * functions returning them hand out borrowed references valid until they
 * are replaced or the network is freed. Setting one retains the new tensor
 * and releases the old.
 *
 * Errors: functions return a dla_status and set dla_last_error(), naming
 * the function, the layer and the shapes. DLA_ERR_STATE for a network that
 * is not initialized yet.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_NET_H
#define DLACCEL_NET_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dla_layer dla_layer;
typedef struct dla_net dla_net;
typedef struct dla_table dla_table;

/* ------------------------------------------------------------------ tables */

/* A Learnables, State or gradients table: rows of (layer name, parameter
 * name, value), in the order of the network's layers (topological) and of
 * each layer's parameters, as MATLAB's dlnetwork tables. Each row also
 * carries the factors trainnet applies (MATLAB's WeightLearnRateFactor,
 * WeightL2Factor...): learn-rate factor 1, L2 factor 1 for weights, scales
 * and offsets, 0 for biases (MATLAB's defaults). */

DLA_API int dla_table_count(const dla_table *t);
/* Row i's layer and parameter names ("conv1", "Weights"); NULL when i is
 * out of range. Valid as long as the table. */
DLA_API const char *dla_table_layer(const dla_table *t, int i);
DLA_API const char *dla_table_parameter(const dla_table *t, int i);
/* Row i's value, borrowed; NULL when i is out of range. */
DLA_API dla_tensor *dla_table_value(const dla_table *t, int i);
/* The values as an array of dla_table_count(t) tensors that the table
 * owns. Optimizers (optim.h) replace its entries in place, which is how a
 * network's learnables are updated (MATLAB's net.Learnables = ...). An
 * entry replaced by hand must be a +1 reference whose old value was
 * released, with the same dims and dtype (or every learnable cast alike:
 * the network is then of their dtype, see dla_dlupdate). */
DLA_API dla_tensor **dla_table_values(dla_table *t);
/* The row of (layer, parameter); -1 when there is none. */
DLA_API int dla_table_find(const dla_table *t, const char *layer, const char *parameter);
/* Replaces row i's value with v (retained). DLA_ERR_INVALID_ARGUMENT when
 * i is out of range, v is an error tensor or v is on another device than
 * the old value (move it with dla_tensor_to_device); DLA_ERR_SHAPE /
 * DLA_ERR_DTYPE when v's dims or dtype differ from the old value's. */
DLA_API dla_status dla_table_set_value(dla_table *t, int i, dla_tensor *v);
/* The factors of row i (0 when i is out of range), and setting them
 * (DLA_ERR_INVALID_ARGUMENT for a negative or non-finite factor or a bad
 * i). A network's factors belong to its layers: dla_net_copy, a
 * re-initialization, dla_trainnet's copy and dla_net_save/dla_net_load
 * keep them. */
DLA_API double dla_table_learn_rate_factor(const dla_table *t, int i);
DLA_API double dla_table_l2_factor(const dla_table *t, int i);
DLA_API dla_status dla_table_set_factors(dla_table *t, int i, double learn_rate_factor,
                                         double l2_factor);
/* A new table with layout's rows (names and factors) and values[i] as row
 * i's value (retained; one per row; an error tensor among them fails with
 * its status). This is how gradients, velocities or a state returned by
 * dla_net_forward become a table. NULL on failure (dla_last_error says
 * why). Free with dla_table_free. */
DLA_API dla_table *dla_table_like(const dla_table *layout, dla_tensor *const *values);
/* Frees a table made by dla_table_like (its values are released). A
 * network's own tables are not freed here (it does nothing for them).
 * A table freed already, or one of a freed network, given here or to the
 * other dla_table_ calls is refused and logged (docs/checks.md). */
DLA_API void dla_table_free(dla_table *t);
/* The table as MATLAB displays one: a row per parameter with the layer,
 * the parameter and the value's dims and dtype (snprintf rules). */
DLA_API int dla_table_describe(const dla_table *t, char *buf, size_t size);

/* ------------------------------------------------------------------ layers */

/* Options every layer takes. */
typedef struct dla_layer_options {
    const char *name; /* NULL or "": MATLAB's default name */
} dla_layer_options;

/* Initializer names for the *_initializer fields below (MATLAB's):
 * "glorot" uniform in +-sqrt(6 / (fanIn + fanOut)); "he" normal with
 * standard deviation sqrt(2 / fanIn); "narrow-normal" normal with standard
 * deviation 0.01; "zeros"; "ones"; for lstm and gru weights also
 * "orthogonal" (the Q of a QR decomposition of a standard normal matrix,
 * R's diagonal positive; a wide matrix the transpose of a tall one's: its
 * rows orthonormal) and for lstm "unit-forget-gate" (ones for the forget
 * gate's bias, zeros elsewhere). fanIn and fanOut are
 * MATLAB's: filter size x channels and filter size x filters for
 * convolutions, InputSize and OutputSize for fullyConnected, InputSize and
 * 4 x NumHiddenUnits for lstm input weights. Random initializers draw from
 * the thread's Philox stream (dla_rng_seed makes them reproducible). */

/* MATLAB imageInputLayer([h w c]): 2-D images, "SSCB" inputs of h x w x c
 * x N. Normalization is applied to every input, in both modes:
 * "zerocenter" x - Mean, "zscore" (x - Mean) ./ StandardDeviation, "none".
 * The statistics (fixed parameters Mean and StandardDeviation, not
 * learnables) are zeros and ones until set: by the options below, by
 * dla_net_set, or from data by dla_net_set_input_statistics (what trainnet
 * does, as MATLAB's ResetInputNormalization). A StandardDeviation given
 * in the options or by dla_net_set must be positive and finite (the layer
 * is in an error state otherwise, or dla_net_set fails, with
 * DLA_ERR_INVALID_ARGUMENT naming the first bad element);
 * one computed from data where the data is constant (a blank border pixel
 * with "element") is 1, not 0, with a warning in the log: dividing by 0
 * made every output NaN. */
typedef struct dla_image_input_options {
    const char *name;
    /* NULL: "zerocenter" (MATLAB's default), "zscore", "none". */
    const char *normalization;
    /* The statistics' shape: "channel": one per channel (1x1xc);
     * "element": one per element (h x w x c); "all": one (1x1). NULL or
     * "auto" (MATLAB's): the shape of the statistics given below (one
     * value: "all", one per element: "element"), else "channel"; the
     * layer keeps that shape, so trainnet's ResetInputNormalization
     * recomputes them in it (MATLAB's "auto" recomputes per channel). */
    const char *normalization_dimension;
    /* Statistics of that shape, or NULL (see above). Copied. */
    dla_tensor *mean;
    dla_tensor *standard_deviation;
} dla_image_input_options;
DLA_API dla_layer *dla_image_input_layer(int64_t height, int64_t width, int64_t channels,
                                         const dla_image_input_options *opts);
/* MATLAB image3dInputLayer([h w d c]): 3-D images (volumes), "SSSCB"
 * inputs of h x w x d x c x N, with the image input's options: statistics
 * 1x1x1xc ("channel"), h x w x d x c ("element") or 1x1 ("all"). */
DLA_API dla_layer *dla_image3d_input_layer(int64_t height, int64_t width, int64_t depth,
                                           int64_t channels, const dla_image_input_options *opts);

/* MATLAB sequenceInputLayer(numChannels): vector sequences, "CBT" inputs
 * of c x N x T. Normalization as imageInput, with statistics of c x 1
 * ("channel") or 1x1 ("all"); "element" is not offered for sequences. A
 * sequence shorter than MinLength is DLA_ERR_SHAPE. */
typedef struct dla_sequence_input_options {
    const char *name;
    /* NULL: "none" (MATLAB's default), "zerocenter", "zscore". */
    const char *normalization;
    /* "channel", "all"; NULL or "auto": "all" when one value is given
     * below, else "channel". */
    const char *normalization_dimension;
    /* The fewest time steps an input may have; 0: 1. The summary and the
     * network's initialization use sequences of this length, so a 1-D
     * convolution or pooling along "T" with a window longer than it fails
     * initialization (DLA_ERR_SHAPE, the message naming this option). */
    int64_t min_length;
    dla_tensor *mean;
    dla_tensor *standard_deviation;
} dla_sequence_input_options;
DLA_API dla_layer *dla_sequence_input_layer(int64_t channels,
                                            const dla_sequence_input_options *opts);

/* MATLAB featureInputLayer(numFeatures): "CB" data, numFeatures x
 * observations (tabular data, the points of a physics-informed network).
 * Normalization as the sequence input's ("none" by default; "zerocenter",
 * "zscore"; over the batch, per feature or with normalization_dimension
 * "all" over everything), with statistics given or set from data
 * (dla_net_set_input_statistics, trainnet's ResetInputNormalization). */
typedef struct dla_feature_input_options {
    const char *name;
    const char *normalization;           /* NULL: "none" */
    /* "channel", "all"; NULL or "auto": "all" when one value is given
     * below, else "channel". */
    const char *normalization_dimension;
    dla_tensor *mean;
    dla_tensor *standard_deviation;
} dla_feature_input_options;
DLA_API dla_layer *dla_feature_input_layer(int64_t num_features,
                                           const dla_feature_input_options *opts);

/* Options of the convolution layers. Weights have MATLAB's layout (conv.h):
 * filterSize x channels x filters; the bias is 1x1x1xF (3-D), 1x1xF (2-D)
 * or 1xF (1-D). A layer over d spatial dims reads the first d entries of
 * stride and dilation and the first 2d of padding. */
typedef struct dla_conv_layer_options {
    const char *name;
    /* 0: 1 along every dim. */
    int64_t stride[3];
    int64_t dilation[3];
    /* Before and after each spatial dim: convolution3d [top bottom left
     * right front back] (MATLAB's 2x3 [t l f; b r k] read by columns);
     * convolution2d [top bottom left right]; convolution1d [left right].
     * Zero by default. */
    int64_t padding[6];
    /* NULL: the numbers above; "same" (output size ceil(in / stride));
     * "causal" (convolution1d only: (filter - 1) x dilation before, none
     * after). */
    const char *padding_mode;
    /* The input channels; 0: from the input at initialization. */
    int64_t num_channels;
    /* NULL: "glorot" and "zeros". */
    const char *weights_initializer;
    const char *bias_initializer;
} dla_conv_layer_options;
/* MATLAB convolution1dLayer(filterSize, numFilters): convolution along the
 * "T" dim of "CBT" sequences, or the "S" dim of "SCB" data. Every
 * convolution layer (1-D, 2-D, 3-D, grouped, transposed) also takes image
 * sequences, its "S" dims followed by "C", "B" (or not) and "T" ("SCBT",
 * "SSCBT", "SSSCBT"), as MATLAB's do: each time step is convolved alone
 * over the "S" dims (dla_conv itself refuses "T" beside "S"). The 2-D
 * ones (convolution2d, groupedConvolution2d, transposedConv2d) take
 * MATLAB's spatio-temporal "SCBT" and "SCT" data too, convolved over "S"
 * (the filter's height, the first stride and dilation, padding top and
 * bottom) and "T" (its width, the second, left and right); the 3-D ones
 * "SSCBT" and "SSCT", over "S", "S" and "T" (the filter's depth). */
DLA_API dla_layer *dla_conv1d_layer(int64_t filter_size, int64_t num_filters,
                                    const dla_conv_layer_options *opts);
/* MATLAB convolution2dLayer([fh fw], numFilters) on "SSCB" images. */
DLA_API dla_layer *dla_conv2d_layer(int64_t filter_height, int64_t filter_width,
                                    int64_t num_filters, const dla_conv_layer_options *opts);
/* MATLAB convolution3dLayer([fh fw fd], numFilters) on "SSSCB" volumes
 * (height x width x depth x channels x observations). */
DLA_API dla_layer *dla_conv3d_layer(int64_t filter_height, int64_t filter_width,
                                    int64_t filter_depth, int64_t num_filters,
                                    const dla_conv_layer_options *opts);

/* MATLAB groupedConvolution2dLayer([fh fw], numFiltersPerGroup,
 * numGroups) on "SSCB" images: the input's C channels in num_groups groups
 * of C / num_groups, each convolved with its own num_filters_per_group
 * filters (dla_conv with groups); num_groups DLA_CHANNEL_WISE is MATLAB's
 * "channel-wise", one group per channel (depthwise convolution; with a 1x1
 * dla_conv2d_layer after it, depthwise separable). Weights fh x fw x
 * C/G x num_filters_per_group x G, Bias 1x1 x num_filters_per_group x G;
 * the output has num_filters_per_group x G channels. opts->num_channels is
 * NumChannelsPerGroup (0: C / G from the input); the initializers' fans
 * are one group's (fh*fw*C/G in, fh*fw*num_filters_per_group out), as
 * MATLAB's. An input whose channels the groups do not divide is
 * DLA_ERR_SHAPE at initialization. */
#define DLA_CHANNEL_WISE (-1)
DLA_API dla_layer *dla_grouped_conv2d_layer(int64_t filter_height, int64_t filter_width,
                                            int64_t num_filters_per_group, int64_t num_groups,
                                            const dla_conv_layer_options *opts);

/* Options of the transposed convolution layers (upsampling: decoders,
 * generators). Weights have MATLAB's transposed layout (conv.h,
 * dla_transpconv): filterSize x filters x channels; the bias 1x1xF (2-D)
 * or 1xF (1-D). Along each spatial dim the output has
 * (in - 1) * stride + filter - crop_before - crop_after elements. */
typedef struct dla_transposed_conv_layer_options {
    const char *name;
    /* 0: 1 along every dim. */
    int64_t stride[3];
    /* Elements cropped from the output: 3-D [top bottom left right front
     * back], 2-D [top bottom left right], 1-D [left right] (the first
     * two). Zero by default. */
    int64_t cropping[6];
    /* NULL: the numbers above; "same": the output has in * stride
     * elements (MATLAB's Cropping "same"). */
    const char *cropping_mode;
    /* The input channels; 0: from the input at initialization. */
    int64_t num_channels;
    /* NULL: "glorot" and "zeros" (fans: filter area x NumFilters in,
     * filter area x NumChannels out, as MATLAB's). */
    const char *weights_initializer;
    const char *bias_initializer;
} dla_transposed_conv_layer_options;
/* MATLAB transposedConv2dLayer([fh fw], numFilters) on "SSCB" images. */
DLA_API dla_layer *dla_transposed_conv2d_layer(int64_t filter_height, int64_t filter_width,
                                               int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts);
/* MATLAB transposedConv1dLayer(filterSize, numFilters): along the "T" dim
 * of "CBT" sequences, or the "S" dim of "SCB" data. */
DLA_API dla_layer *dla_transposed_conv1d_layer(int64_t filter_size, int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts);
/* MATLAB transposedConv3dLayer([fh fw fd], numFilters) on "SSSCB"
 * volumes; the bias is 1x1x1xF. */
DLA_API dla_layer *dla_transposed_conv3d_layer(int64_t filter_height, int64_t filter_width,
                                               int64_t filter_depth, int64_t num_filters,
                                               const dla_transposed_conv_layer_options *opts);

/* MATLAB batchNormalizationLayer: learnables Offset and Scale, state
 * TrainedMean and TrainedVariance, one per channel (1x1xC after "SSCB"
 * data, Cx1 after "CB"/"CBT", 1xC after "SCB"). Forward normalizes with
 * the batch's statistics and returns the running ones updated
 * (dla_batchnorm_train); predict uses the stored ones (dla_batchnorm). */
typedef struct dla_batchnorm_layer_options {
    const char *name;
    double epsilon;        /* 0: 1e-5 */
    double mean_decay;     /* 0: 0.1 */
    double variance_decay; /* 0: 0.1 */
    int64_t num_channels;  /* 0: from the input */
    const char *offset_initializer; /* NULL: "zeros" */
    const char *scale_initializer;  /* NULL: "ones" */
} dla_batchnorm_layer_options;
DLA_API dla_layer *dla_batchnorm_layer(const dla_batchnorm_layer_options *opts);

/* MATLAB layerNormalizationLayer, groupNormalizationLayer(numGroups) and
 * instanceNormalizationLayer: learnables Offset and Scale, one per channel
 * (the dims batchNormalizationLayer gives them), no state. Each
 * observation is normalized by its own statistics, in forward and
 * predict alike (dla_layernorm, dla_groupnorm, dla_instancenorm): over
 * the dims operation_dimension names for layer normalization, the
 * channels of each group and the S and T dims for group normalization,
 * the S and T dims of each channel for instance normalization (an input
 * without them, "CB", is DLA_ERR_FORMAT). num_groups must divide the
 * input's channels (both checked when the network is made); MATLAB's
 * NumGroups "all-channels" is num_groups 1 (layer normalization of the
 * channels and S and T dims) and "channel-wise" is DLA_CHANNEL_WISE, one
 * group a channel whatever the input's count (instance normalization;
 * saved as NumGroups -1). */
typedef struct dla_norm_layer_options {
    const char *name;
    double epsilon;       /* 0: 1e-5 */
    int64_t num_channels; /* 0: from the input */
    const char *offset_initializer; /* NULL: "zeros" */
    const char *scale_initializer;  /* NULL: "ones" */
    /* layerNormalizationLayer only: NULL or "auto" (MATLAB's default since
     * R2023a: "channel-only" when the input has a "T" dim, else
     * "spatial-channel"), "channel-only", "spatial-channel",
     * "batch-excluded" (dla_norm_options.operation_dimension). */
    const char *operation_dimension;
} dla_norm_layer_options;
DLA_API dla_layer *dla_layernorm_layer(const dla_norm_layer_options *opts);
DLA_API dla_layer *dla_groupnorm_layer(int64_t num_groups, const dla_norm_layer_options *opts);
DLA_API dla_layer *dla_instancenorm_layer(const dla_norm_layer_options *opts);

/* MATLAB reluLayer, leakyReluLayer(scale) (DLA_LEAKYRELU_SCALE is
 * MATLAB's 0.01), softmaxLayer (over "C"), flattenLayer (the "S" and "C"
 * dims of each observation become one "C" dim, column-major: "SSCB" h x w
 * x c x N gives "CB" (h*w*c) x N, "SSCBT" gives "CBT"; other data passes
 * unchanged). */
DLA_API dla_layer *dla_relu_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_leakyrelu_layer(double scale, const dla_layer_options *opts);
DLA_API dla_layer *dla_softmax_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_flatten_layer(const dla_layer_options *opts);

/* Smooth activations (their second derivatives are what a physics-
 * informed loss or a gradient penalty needs, where relu's are 0): MATLAB
 * tanhLayer, sigmoidLayer, swishLayer (x .* sigmoid(x)), eluLayer(alpha)
 * (DLA_ELU_ALPHA is MATLAB's 1; finite) and geluLayer(Approximation=
 * approximation) (NULL or "none", MATLAB's default, or "tanh"). */
#define DLA_ELU_ALPHA 1.0
DLA_API dla_layer *dla_tanh_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_sigmoid_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_swish_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_elu_layer(double alpha, const dla_layer_options *opts);
DLA_API dla_layer *dla_gelu_layer(const char *approximation, const dla_layer_options *opts);

/* MATLAB clippedReluLayer(ceiling): min(max(x, 0), ceiling), ceiling
 * positive and finite. */
DLA_API dla_layer *dla_clipped_relu_layer(double ceiling, const dla_layer_options *opts);

/* MATLAB preluLayer(Alpha=alpha): max(x, 0) + Alpha .* min(x, 0) with
 * Alpha a learnable, initially alpha (DLA_PRELU_ALPHA is MATLAB's 0.25;
 * finite). One scalar Alpha for every value, as MATLAB's default, or with
 * per_channel one a channel of the input, in the dims batch
 * normalization's Offset has (1x1xC for "SSCB", Cx1 for "CB" and "CBT"). */
#define DLA_PRELU_ALPHA 0.25
typedef struct dla_prelu_layer_options {
    const char *name;
    int per_channel; /* 0: one Alpha; 1: one a channel */
} dla_prelu_layer_options;
DLA_API dla_layer *dla_prelu_layer(double alpha, const dla_prelu_layer_options *opts);

/* MATLAB crossChannelNormalizationLayer(windowChannelSize, Alpha=, Beta=,
 * K=): dla_crosschannelnorm over the input's "C" dim (nnops.h has the
 * formula and the window). window_channel_size 1 to 16, as MATLAB's; an
 * option left 0 takes MATLAB's default (DLA_CROSSCHANNELNORM_ALPHA 1e-4,
 * _BETA 0.75, _K 2). No parameters. */
typedef struct dla_crosschannelnorm_layer_options {
    const char *name;
    double alpha, beta, k;
} dla_crosschannelnorm_layer_options;
DLA_API dla_layer *dla_crosschannelnorm_layer(int64_t window_channel_size,
                                              const dla_crosschannelnorm_layer_options *opts);

/* MATLAB dropoutLayer(probability) (DLA_DROPOUT_PROB is MATLAB's 0.5):
 * dla_dropout in forward, the identity in predict. */
DLA_API dla_layer *dla_dropout_layer(double probability, const dla_layer_options *opts);
/* MATLAB spatialDropoutLayer(Probability=p): in forward (training), each
 * channel of each observation zeroed whole with probability p, for every
 * "S" and "T" position at once, the others scaled by 1/(1 - p); the
 * identity in predict. The mask is dla_dropout of ones with x's dims but
 * 1 everywhere except "C" and "B", so it draws rand of that size from the
 * thread's stream as MATLAB's rand([1,...,C,B,...,1]) does. An input
 * without a "C" dim is DLA_ERR_FORMAT; 0 <= p < 1. */
DLA_API dla_layer *dla_spatial_dropout_layer(double probability, const dla_layer_options *opts);

/* Options of the 2-D and 3-D pooling layers. */
typedef struct dla_pool_layer_options {
    const char *name;
    int64_t stride[3];       /* 0: 1 (MATLAB's default); 2-D reads two */
    /* 2-D [top bottom left right]; 3-D [top bottom left right front back]
     * (MATLAB's 2x3 [t l f; b r k] read by columns). */
    int64_t padding[6];
    const char *padding_mode; /* NULL or "same" */
    const char *padding_value; /* averagePooling2d: NULL/"zero" or "mean" */
} dla_pool_layer_options;
/* MATLAB maxPooling2dLayer([ph pw]) and averagePooling2dLayer([ph pw]):
 * over the two "S" dims of "SSCB" data (each time step alone for
 * "SSCBT"), or over "S" (ph, the first stride, padding top and bottom)
 * and "T" (pw, the second, left and right) of MATLAB's spatio-temporal
 * "SCBT" and "SCT" data. */
DLA_API dla_layer *dla_maxpool2d_layer(int64_t pool_height, int64_t pool_width,
                                       const dla_pool_layer_options *opts);
DLA_API dla_layer *dla_avgpool2d_layer(int64_t pool_height, int64_t pool_width,
                                       const dla_pool_layer_options *opts);
/* MATLAB maxPooling3dLayer([ph pw pd]) and averagePooling3dLayer([ph pw
 * pd]) on "SSSCB" volumes, or over "S", "S" and "T" (pd) of MATLAB's
 * spatio-temporal "SSCBT" and "SSCT" data. */
DLA_API dla_layer *dla_maxpool3d_layer(int64_t pool_height, int64_t pool_width,
                                       int64_t pool_depth, const dla_pool_layer_options *opts);
DLA_API dla_layer *dla_avgpool3d_layer(int64_t pool_height, int64_t pool_width,
                                       int64_t pool_depth, const dla_pool_layer_options *opts);

/* Options of the 1-D pooling layers. */
typedef struct dla_pool1d_layer_options {
    const char *name;
    int64_t stride;           /* 0: 1 (MATLAB's default) */
    int64_t padding[2];       /* [left right]; MATLAB's scalar p is {p, p} */
    const char *padding_mode; /* NULL or "same" */
    const char *padding_value; /* averagePooling1d: NULL/"zero" or "mean" */
} dla_pool1d_layer_options;
/* MATLAB maxPooling1dLayer(poolSize) and averagePooling1dLayer(poolSize):
 * over the "S" dim of "SCB" and "SCBT" data (each time step alone), or
 * over "T" of "CBT" sequences, as dla_maxpool and dla_avgpool with one
 * pooled dim (the pooled dim keeps its label). Each padding entry must be
 * smaller than the pool; "same" gives ceil(length / stride) outputs. */
DLA_API dla_layer *dla_maxpool1d_layer(int64_t pool_size, const dla_pool1d_layer_options *opts);
DLA_API dla_layer *dla_avgpool1d_layer(int64_t pool_size, const dla_pool1d_layer_options *opts);

/* MATLAB globalMaxPooling1dLayer and globalAveragePooling1dLayer: over
 * "T" for "CBT" sequences, whose "T" dim is then dropped ("CB" out), or
 * over the "S" dim of "SCB" data (kept with size 1) and of "SCBT" 1-D
 * image sequences (each time step alone; not with a padding mask, which
 * marks time steps). globalMaxPooling2d
 * and globalAveragePooling2dLayer: over the two "S" dims of "SSCB" data
 * (1x1xCxN out), or over "S" and "T" of spatio-temporal "SCBT" data
 * ("SCB" out, 1xCxN, as MATLAB's). The 1-D ones take has_padding_mask_input (not an option
 * of MATLAB's; its selfAttentionLayer's HasPaddingMaskInput): a second
 * input, "mask", as dla_self_attention_layer's (the input's format,
 * observations and steps, any channels, the first nonzero at data steps),
 * and pool over the data steps only: max pooling leaves padded steps
 * out (-Inf for an observation with none), average pooling divides by
 * the number of data steps (NaN for an observation with none), so an
 * observation's result does not depend on how much padding its
 * mini-batch holds, nor on what values the padded steps hold. */
typedef struct dla_global_pool1d_layer_options {
    const char *name;           /* NULL or "": MATLAB's default name */
    int has_padding_mask_input; /* 0 or 1: a second input, "mask" */
} dla_global_pool1d_layer_options;
DLA_API dla_layer *dla_global_maxpool1d_layer(const dla_global_pool1d_layer_options *opts);
DLA_API dla_layer *dla_global_avgpool1d_layer(const dla_global_pool1d_layer_options *opts);
DLA_API dla_layer *dla_global_maxpool2d_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_global_avgpool2d_layer(const dla_layer_options *opts);
/* MATLAB globalMaxPooling3dLayer and globalAveragePooling3dLayer: over
 * the three "S" dims of "SSSCB" volumes (1x1x1xCxN out). */
DLA_API dla_layer *dla_global_maxpool3d_layer(const dla_layer_options *opts);
DLA_API dla_layer *dla_global_avgpool3d_layer(const dla_layer_options *opts);

/* MATLAB fullyConnectedLayer(outputSize): dla_fullyconnect, Weights
 * outputSize x inputSize, Bias outputSize x 1. */
typedef struct dla_fc_layer_options {
    const char *name;
    int64_t input_size;              /* 0: from the input */
    const char *weights_initializer; /* NULL: "glorot" */
    const char *bias_initializer;    /* NULL: "zeros" */
} dla_fc_layer_options;
DLA_API dla_layer *dla_fc_layer(int64_t output_size, const dla_fc_layer_options *opts);

/* MATLAB additionLayer(numInputs): the elementwise sum of its inputs, which
 * are named "in1".."inN" in connections ("add/in2"). The inputs must have
 * the same size and format, as MATLAB's: nothing is broadcast
 * (DLA_ERR_SHAPE naming the layer and both sizes, at initialization or
 * in forward/predict). */
DLA_API dla_layer *dla_addition_layer(int num_inputs, const dla_layer_options *opts);
/* MATLAB multiplicationLayer(numInputs): the elementwise product of its
 * inputs "in1".."inN", which must have one format and, in each dim, the
 * same size or 1 (broadcast: a 1x1xCxB gate times an HxWxCxB activation);
 * otherwise DLA_ERR_SHAPE naming both sizes. */
DLA_API dla_layer *dla_multiplication_layer(int num_inputs, const dla_layer_options *opts);
/* MATLAB depthConcatenationLayer(numInputs): dla_cat along the "C" dim
 * of inputs "in1".."inN" of one format (any with a "C" dim: "SSCB",
 * "CBT"...); otherwise DLA_ERR_FORMAT. */
DLA_API dla_layer *dla_depth_concatenation_layer(int num_inputs, const dla_layer_options *opts);
/* MATLAB concatenationLayer(dim, numInputs): dla_cat along dim (1-based,
 * as MATLAB's: 3 is "C" for "SSCB" data, 1 for "CB"). Inputs "in1".."inN". */
DLA_API dla_layer *dla_concatenation_layer(int dim, int num_inputs,
                                           const dla_layer_options *opts);

/* MATLAB lstmLayer(numHiddenUnits) on "CBT" sequences. Learnables
 * InputWeights (4H x C), RecurrentWeights (4H x H), Bias (4H x 1), the
 * four blocks in MATLAB's order: input gate, forget gate, cell candidate,
 * output gate. State HiddenState and CellState (H x 1 zeros: the initial
 * state of every sequence; an H x N state applies to batches of N). Per
 * time step: z = W x_t + R h + b, i = sigmoid, f = sigmoid, g = tanh,
 * o = sigmoid of the blocks, c = f .* c + i .* g, h = o .* tanh(c).
 * forward and dla_net_predict_state return the state after the last
 * step (H x N); predict and both leave the network's own state alone. A
 * network's H x N state is kept as it is by dla_net_copy,
 * re-initialization and dla_net_save/dla_net_load (as a
 * MATLAB network's State, saved or copied, keeps it), so trainnet's
 * checkpoints of LSTM networks load. OutputMode "sequence" gives "CBT"
 * H x N x T, "last" "CB" H x N; "CB" data (a feature input: one step
 * without a "T" dim) gives "CB" H x N in both, as MATLAB's layers do (the
 * GRU and BiLSTM alike). A sequence of no steps (T of 0, which only
 * a network without a sequence input layer lets through) gives H x N x 0
 * in "sequence" mode and DLA_ERR_SHAPE in "last" mode (there is no last
 * step); the GRU alike. */
typedef struct dla_lstm_layer_options {
    const char *name;
    const char *output_mode;  /* NULL: "sequence", or "last" */
    int64_t input_size;       /* 0: from the input */
    const char *input_weights_initializer;     /* NULL: "glorot" */
    const char *recurrent_weights_initializer; /* NULL: "orthogonal" */
    const char *bias_initializer;              /* NULL: "unit-forget-gate" */
    /* MATLAB's HasStateInputs: nonzero gives the layer three inputs, "in"
     * (the sequences), "hidden" and "cell" (connect to "name/hidden" and
     * "name/cell"; an unconnected one is a network input): the initial
     * states, "CB" H x N for the N observations of "in" (or H x 1 for
     * all; 2H for a bilstm, the forward direction's rows then the backward
     * one's), which must be of the network's type. The layer then has no
     * HiddenState and CellState (it is stateless: every run starts from
     * its inputs, and dla_net_reset_state has nothing of it to reset), and
     * gradients flow into the state inputs. A state input of another
     * format, channel count or batch fails with DLA_ERR_SHAPE naming the
     * layer, the input and both shapes. */
    int has_state_inputs;
    /* MATLAB's HasStateOutputs: nonzero gives the layer three outputs,
     * "out" (as without: OutputMode applies to it alone), "hidden" and
     * "cell": the states after the last step, "CB" H x N (2H x N for a
     * bilstm, each direction's after its last step), whatever OutputMode.
     * Connect from "name/hidden" and "name/cell" ("name" alone, or
     * "name/out", is "out"); an output port nothing reads is an output of
     * the network, named so (dla_net_output_name). Without state inputs
     * the layer keeps its HiddenState and CellState as before. */
    int has_state_outputs;
} dla_lstm_layer_options;
DLA_API dla_layer *dla_lstm_layer(int64_t num_hidden_units, const dla_lstm_layer_options *opts);

/* MATLAB bilstmLayer(numHiddenUnits): an LSTM forward in time and one
 * backward over the same "CBT" sequence, their hidden states joined, 2H
 * channels: [h_f(t); h_b(t)] at each step. Learnables InputWeights 8H x
 * InputSize, RecurrentWeights 8H x H and Bias 8H x 1, the forward
 * direction's four gates' rows (as the LSTM's) then the backward one's;
 * state HiddenState and CellState 2H x 1 (2H x N after a batch of N),
 * the forward direction's then the backward one's, each after its last
 * step (the backward one's after step 1). OutputMode "sequence" gives
 * 2H x N x T; "last" 2H x N, that state's hidden part [h_f(T); h_b(1)]
 * (each direction's final hidden state, as the LSTM's "last" is its
 * final hidden state; the sequence's last step would give h_b(T), which
 * has seen x_T alone). Options and
 * initializers as the LSTM's ("glorot" and "orthogonal" weights with fan
 * out 8H, "unit-forget-gate" in both directions). */
DLA_API dla_layer *dla_bilstm_layer(int64_t num_hidden_units, const dla_lstm_layer_options *opts);

/* MATLAB gruLayer(numHiddenUnits) on "CBT" sequences: learnables
 * InputWeights 3H x InputSize, RecurrentWeights 3H x H (reset, update,
 * candidate rows), Bias 3H x 1 (6H x 1 with ResetGateMode
 * "recurrent-bias-after-multiplication": the input's, then the recurrent
 * product's), state HiddenState (H x 1, H x N after a batch of N, as the
 * LSTM's). */
typedef struct dla_gru_layer_options {
    const char *name;
    const char *output_mode;     /* NULL: "sequence", or "last" */
    /* NULL: "after-multiplication" (r .* (R_n h)); "before-multiplication"
     * (R_n (r .* h)); "recurrent-bias-after-multiplication". */
    const char *reset_gate_mode;
    int64_t input_size;          /* 0: from the input */
    const char *input_weights_initializer;     /* NULL: "glorot" */
    const char *recurrent_weights_initializer; /* NULL: "orthogonal" */
    const char *bias_initializer;              /* NULL: "zeros" */
    /* HasStateInputs and HasStateOutputs as the LSTM's, with one state:
     * inputs "in" and "hidden", outputs "out" and "hidden" (H x N). */
    int has_state_inputs;
    int has_state_outputs;
} dla_gru_layer_options;
DLA_API dla_layer *dla_gru_layer(int64_t num_hidden_units, const dla_gru_layer_options *opts);

/* MATLAB selfAttentionLayer(numHeads, numKeyChannels) on "CBT" sequences
 * (or "CB"): queries, keys and values are fully connected projections of
 * the input (numKeyChannels, numKeyChannels, NumValueChannels rows),
 * combined by dla_attention over numHeads heads, then projected to
 * OutputSize channels. Learnables QueryWeights, QueryBias, KeyWeights,
 * KeyBias, ValueWeights, ValueBias, OutputWeights, OutputBias (weights
 * rows x InputSize, biases rows x 1). numHeads must divide both channel
 * counts. has_padding_mask_input (MATLAB's HasPaddingMaskInput) gives the
 * layer two inputs, "in" and "mask": the mask has the input's format,
 * observations and steps, any number of channels; its first channel is
 * nonzero at data steps and 0 at padded ones, and padded steps get no
 * attention weight from any query and enter the projections as 0 (a NaN
 * or Inf held there stays out; their own outputs are still made:
 * leave them out later, e.g. with a global pooling that has the mask
 * too). Connect a layer to "name/mask" (dla_net_connect): for token
 * sequences padded with 0 (word embeddings) the sequence input layer
 * itself is the mask (a mask port reads an input layer's data as given,
 * before its Normalization; one that reads a normalizing input layer
 * through other layers is refused by dla_net_init); docs/networks.md,
 * "Padding masks", for other data.
 * A mask port left unconnected is a network input. */
typedef struct dla_self_attention_layer_options {
    const char *name;
    int64_t num_value_channels; /* 0: numKeyChannels */
    int64_t output_size;        /* 0: the input's channels */
    int64_t input_size;         /* 0: from the input */
    const char *attention_mask; /* NULL: "none", or "causal" */
    const char *weights_initializer; /* NULL: "glorot" */
    const char *bias_initializer;    /* NULL: "zeros" */
    int has_padding_mask_input;      /* 0 or 1: a second input, "mask" */
    /* MATLAB's DropoutProbability: the attention weights are dropped with
     * this probability in training (dla_net_forward, trainnet), as
     * dla_attention's dropout_probability; predict never drops. 0 (the
     * default) or in (0, 1). */
    double dropout_probability;
} dla_self_attention_layer_options;
DLA_API dla_layer *dla_self_attention_layer(int64_t num_heads, int64_t num_key_channels,
                                            const dla_self_attention_layer_options *opts);
/* MATLAB attentionLayer(numHeads): multi-head scaled dot-product
 * attention (dla_attention) of three inputs, "name/query", "name/key" and
 * "name/value", with no learnables: the projections are the layers that
 * feed it (fully connected layers), so a decoder's queries can attend to
 * an encoder's keys and values (cross-attention). The three have one
 * format with a "C" dim, "CBT" or "CB"; queries and keys dk*h channels,
 * values dv*h, keys and values one length; the output has the queries'
 * format and steps and dv*h channels. Options as MATLAB's: scale 0 is
 * "auto" (1/sqrt(dk)); attention_mask NULL/"none" or "causal" (query j
 * sees keys 1..j; the lengths must then agree); has_padding_mask_input
 * adds a fourth input, "name/mask", the padding mask of the keys (the
 * key input's format, observations and steps; its first channel nonzero
 * for data): padded keys get weight 0 and enter as zeros (the outputs
 * are finite whatever the padded steps hold, but a NaN or Inf there in
 * the data the key and value projections read still makes their Weights'
 * gradients NaN, 0 times NaN in the projection's own backward: pad with
 * 0, trainnet's SequencePaddingValue default); a
 * dropout_probability drops attention weights in training (forward).
 * Not supported: HasScoresOutput. Errors: an error layer
 * (DLA_ERR_INVALID_ARGUMENT) for NumHeads below 1, a Scale not finite, a
 * probability outside [0, 1), another mask; at initialization
 * DLA_ERR_FORMAT for inputs of other formats, and dla_attention's errors
 * (channels NumHeads does not divide, lengths that differ) naming the
 * layer. */
typedef struct dla_attention_layer_options {
    const char *name;
    double scale;               /* 0: "auto" */
    const char *attention_mask; /* NULL: "none", or "causal" */
    int has_padding_mask_input; /* 1: a fourth input, "mask" (of the keys) */
    double dropout_probability; /* 0 (MATLAB's default) or in (0, 1) */
} dla_attention_layer_options;
DLA_API dla_layer *dla_attention_layer(int64_t num_heads, const dla_attention_layer_options *opts);

/* MATLAB indexing1dLayer(index): the data at the "first" (NULL, MATLAB's
 * default) or "last" index of the one "T" dim of "CBT" sequences, or of
 * the one "S" dim of "SCB" 1-D images; the result is "CB". Without a
 * mask "last" is the mini-batch's last step, padding included: train
 * with SequencePaddingDirection "left" so that it is every sequence's own
 * last step. With has_padding_mask_input (MATLAB's HasPaddingMaskInput)
 * the layer has inputs "in" and "mask" (dla_self_attention_layer's
 * padding mask) and takes each observation's own first or last data
 * step, padding on either side (0 for an observation with none). */
typedef struct dla_indexing1d_layer_options {
    const char *name;
    int has_padding_mask_input; /* 0 or 1: a second input, "mask" */
} dla_indexing1d_layer_options;
DLA_API dla_layer *dla_indexing1d_layer(const char *index,
                                        const dla_indexing1d_layer_options *opts);

/* Where each step is, for self-attention (which sees the steps as a set
 * otherwise), or, for a diffusion model, which noise step an observation
 * is at.
 * MATLAB sinusoidalPositionEncodingLayer(outputSize, Positions=...):
 * fixed, no learnables; position t has sin(t / 10000^(2i/outputSize)) in
 * channel 2i (0-based) and the cosine in 2i + 1 (outputSize even).
 * positions (MATLAB's Positions; saved under that name):
 *   "temporal-indices": t is the step of "CBT" sequences, 0, 1, ...; the
 *     values are not read; gives outputSize x B x T "CBT", the same for
 *     every observation, for an additionLayer to add to the features;
 *   "spatial-indices": t is the position along the "S" of "SCB" 1-D
 *     images, 0, 1, ...; gives S x outputSize x B "SCB";
 *   "data-values": t is the input's value, one channel ("CB" from
 *     dla_feature_input_layer(1, ...): a diffusion model's noise steps);
 *     gives outputSize x B "CB" (outputSize x B x T for "CBT"), and is
 *     differentiable in the input (learnables before it train through it);
 *   NULL or "auto" (MATLAB's default): the first for data with a "T"
 *     dim, the second for "SCB", the third otherwise.
 * Another input is DLA_ERR_FORMAT (DLA_ERR_SHAPE: data-values of more
 * than one channel) when the network is made. Not confirmed against
 * MATLAB: the MathWorks page read for this lists Positions but not its
 * formula, so the origin of the indices (0 here, as in "Attention Is All
 * You Need"; MATLAB's indices might start at 1) and the interleaving of
 * sines and cosines (not sines then cosines) are the usual definition's,
 * not checked against MATLAB's values; MATLAB's R2026a PositionOffset is
 * not here. */
typedef struct dla_sinusoidal_position_encoding_layer_options {
    const char *name;
    const char *positions; /* NULL: "auto" */
} dla_sinusoidal_position_encoding_layer_options;
DLA_API dla_layer *dla_sinusoidal_position_encoding_layer(
    int64_t output_size, const dla_sinusoidal_position_encoding_layer_options *opts);
/* MATLAB positionEmbeddingLayer(outputSize, maxPosition): learned; takes
 * "CBT" sequences, ignores their values, and gives outputSize x B x T
 * "CBT", the same for every observation: step t has column t of Weights
 * (outputSize x maxPosition); a longer sequence is DLA_ERR_SHAPE. */
typedef struct dla_position_embedding_layer_options {
    const char *name;
    const char *weights_initializer; /* NULL: "narrow-normal" */
} dla_position_embedding_layer_options;
DLA_API dla_layer *dla_position_embedding_layer(int64_t output_size, int64_t max_position,
                                                const dla_position_embedding_layer_options *opts);
/* MATLAB wordEmbeddingLayer(dimension, numWords) (Text Analytics
 * Toolbox): each token index of the input becomes a learned vector of
 * dimension channels (dla_embed). Weights are dimension x (numWords + 1):
 * words 1..numWords have their columns, and every other value (0, the
 * padding MATLAB's doc2sequence adds, NaN, a number past numWords) the
 * last one (OOVMode "map-to-last", the only mode here). The input has a
 * "C" of 1: "CBT" token sequences from dla_sequence_input_layer(1, ...)
 * give dimension x B x T "CBT"; "CB" from dla_feature_input_layer(1, ...)
 * gives dimension x B. Another input is DLA_ERR_SHAPE at initialization. */
typedef struct dla_word_embedding_layer_options {
    const char *name;
    const char *weights_initializer; /* NULL: "narrow-normal" (MATLAB's) */
} dla_word_embedding_layer_options;
DLA_API dla_layer *dla_word_embedding_layer(int64_t dimension, int64_t num_words,
                                            const dla_word_embedding_layer_options *opts);

/* MATLAB resize2dLayer("Scale", s | "OutputSize", [h w] |
 * "EnableReferenceInput", true, "Method", ..., "GeometricTransformMode",
 * ..., "NearestRoundingMode", ...): resizes the two "S" dims of image
 * data ("SSCB") with dla_resize (nnops.h has the coordinate maps and
 * rounding); no learnables. Give exactly one of scale, output_size and
 * enable_reference_input: with the last the layer has the inputs
 * "name/in" and "name/ref" (dla_net_connect) and resizes "in" to the "S"
 * dims of "ref" (only its size is read; no gradient flows into it:
 * learnables that reach the outputs only through it get zeros from
 * dla_net_gradient). The
 * options are saved and loaded with the network. Errors: an error layer
 * (DLA_ERR_INVALID_ARGUMENT) for options out of range; DLA_ERR_FORMAT at
 * initialization for an input without exactly two "S" dims. */
typedef struct dla_resize2d_layer_options {
    const char *name;
    /* [height width] factors; scale[1] 0: scale[0] for both. */
    double scale[2];
    /* [height width] whole sizes; NAN in one of them keeps the aspect
     * ratio (see dla_resize). */
    double output_size[2];
    const char *method;                   /* NULL: "nearest", or "bilinear" */
    const char *geometric_transform_mode; /* NULL: "half-pixel", or "asymmetric" */
    const char *nearest_rounding_mode;    /* NULL: "round", "floor" or "onnx-10" */
    int enable_reference_input;           /* 1: the size of the input "ref" */
} dla_resize2d_layer_options;
DLA_API dla_layer *dla_resize2d_layer(const dla_resize2d_layer_options *opts);
/* MATLAB resize3dLayer: resize2dLayer's options over the three "S" dims
 * of volumes ("SSSCB"), [height width depth]; Method "nearest" or
 * "trilinear". */
typedef struct dla_resize3d_layer_options {
    const char *name;
    double scale[3];       /* scale[1] and scale[2] both 0: scale[0] for all */
    double output_size[3]; /* NAN in some (not all): keep the aspect ratio */
    const char *method;    /* NULL: "nearest", or "trilinear" */
    const char *geometric_transform_mode;
    const char *nearest_rounding_mode;
    int enable_reference_input;
} dla_resize3d_layer_options;
DLA_API dla_layer *dla_resize3d_layer(const dla_resize3d_layer_options *opts);

/* MATLAB crop2dLayer("centercrop" | [x y]): crops the two "S" dims of
 * its input "in" to the height and width of its second input "ref" (only
 * ref's size is read: no gradient flows into it, and learnables that reach
 * the outputs only through it get zeros). The layer's inputs are
 * "name/in" and "name/ref" (dla_net_connect); an unconnected one is a
 * network input of that name. Mode "centercrop" (the default) puts the
 * input's centre element, floor(n/2) + 1 (1-based; n the input's size, m
 * the reference's), on the window's own, floor(m/2) + 1: MATLAB's rule
 * (its Crop2DCenterCropStrategy), which with an odd n - m leaves the extra
 * row before the window for an even n and after it for an odd n; a
 * location [x y] is the 1-based column and row of the window's upper-left
 * corner (Mode "custom"). Errors: an error layer (DLA_ERR_INVALID_ARGUMENT)
 * for a location that is not whole numbers from 1 on or a Mode with a
 * location; DLA_ERR_FORMAT for inputs without two leading "S" dims and
 * DLA_ERR_SHAPE for a window that does not fit the input, at
 * initialization or in a later call with other sizes. */
typedef struct dla_crop2d_layer_options {
    const char *name;
    const char *mode;   /* NULL: "centercrop", or "custom" with a location */
    double location[2]; /* [x y]; 0 0: none (centre crop) */
} dla_crop2d_layer_options;
DLA_API dla_layer *dla_crop2d_layer(const dla_crop2d_layer_options *opts);
/* MATLAB crop3dLayer("centercrop" | [x y z]): crop2dLayer over the three
 * "S" dims of volumes ("SSSCB"); a location is the 1-based column, row
 * and depth of the window's first corner. */
typedef struct dla_crop3d_layer_options {
    const char *name;
    const char *mode;   /* NULL: "centercrop", or "custom" with a location */
    double location[3]; /* [x y z]; 0 0 0: none (centre crop) */
} dla_crop3d_layer_options;
DLA_API dla_layer *dla_crop3d_layer(const dla_crop3d_layer_options *opts);

/* MATLAB depthToSpace2dLayer(blockSize, Mode=...): a [bh bw] block_size
 * (block_size[1] 0: square) moves channels into bh x bw blocks of the
 * two "S" dims: H x W x C*bh*bw x ... gives H*bh x W*bw x C x ... ("SSC"
 * first; "B" and "T" dims are kept). Mode "dcr" (the default) orders an
 * input channel by depth, then column, then row within the block, "crd" by
 * column, row, then depth: MATLAB's orders, ONNX DepthToSpace's (block element
 * (i, j), output channel c, 0-based: "dcr" reads input channel
 * (i*bw + j)*C + c, "crd" (c*bh + i)*bw + j). No learnables. Errors: an
 * error layer for a block size below 1 or another Mode; at
 * initialization (and in a later call of other sizes) DLA_ERR_FORMAT for
 * an input without "SSC" first and DLA_ERR_SHAPE for channels that are
 * not a multiple of bh*bw. */
typedef struct dla_depth_to_space2d_layer_options {
    const char *name;
    const char *mode; /* NULL: "dcr", or "crd" */
} dla_depth_to_space2d_layer_options;
DLA_API dla_layer *dla_depth_to_space2d_layer(const int64_t block_size[2],
                                              const dla_depth_to_space2d_layer_options *opts);
/* MATLAB spaceToDepthLayer(blockSize): the inverse of "dcr" depth to
 * space, H x W x C x ... gives floor(H/bh) x floor(W/bw) x C*bh*bw x
 * ...; output channel (i*bw + j)*C + c holds element (i, j) of each block
 * of input channel c. Rows and columns past the last whole block are
 * dropped (no gradient reaches them), as MATLAB's layer does;
 * DLA_ERR_SHAPE for an input smaller than one block. */
DLA_API dla_layer *dla_space_to_depth_layer(const int64_t block_size[2],
                                            const dla_layer_options *opts);

/* Frees a layer never given to a network; NULL does nothing. A network's
 * layer, or one freed already, is left alone and the misuse logged
 * (docs/checks.md). */
DLA_API void dla_layer_free(dla_layer *layer);
/* DLA_OK, or the error of a layer whose options were refused (the message
 * is dla_layer_error's). */
DLA_API dla_status dla_layer_status(const dla_layer *layer);
DLA_API const char *dla_layer_error(const dla_layer *layer);

/* ----------------------------------------------------------- custom layers */

/* A layer type of your own, as a MATLAB class deriving from nnet.layer.Layer
 * (docs/networks.md, "Custom layers"). Fill a dla_layer_type, register it
 * once by its type name, then make layers of it with dla_custom_layer: they
 * go into sequences and graphs, the summary, forward and predict
 * (accelerated), trainnet and the optimizers, and dla_net_save/load, as
 * the built-in layers do.
 *
 *     static dla_status scale_init(const dla_layer *l, dla_layer_init *init,
 *                                  int nx, dla_tensor *const *x)
 *     {   // deferred initialization: sizes from the input
 *         int64_t c = dla_tensor_dim(x[0], 3);
 *         return dla_layer_add_learnable(init, "Scale", DLA_DIMS(1, 1, c), "ones", 0, 0);
 *     }
 *     static dla_status scale_predict(dla_layer_io *io)
 *     {
 *         io->y = dla_mul(io->x[0], io->learnables[0]);
 *         return dla_tensor_status(io->y);
 *     }
 *     static const dla_layer_type scale_type = {
 *         .type = "channelScale", .description = "Channel Scale",
 *         .initialize = scale_init, .predict = scale_predict,
 *     };
 *     dla_layer_type_register(&scale_type);
 *     dla_layer *l = dla_custom_layer("channelScale", NULL, &(dla_layer_options){.name = "s1"});
 *
 * Callbacks run on the thread that runs the network and must compute
 * with dla ops only from what they are given (inputs, learnables, state,
 * properties): forward and predict are recorded into the network's trace
 * and replayed, so a callback that reads other memory or draws random
 * numbers outside dla ops would replay stale values. Tensors they return
 * follow the ops' rules (made inside, no release needed). */

#define DLA_LAYER_MAX_PROPERTIES 8 /* properties of one type */
#define DLA_LAYER_MAX_PARAMS 16    /* learnables + state of one layer */
#define DLA_LAYER_MAX_INPUTS 16    /* inputs of one layer */

/* A property: a non-learnable parameter of the layer (MATLAB's
 * `properties` block), a number saved with the network. */
typedef struct dla_layer_property {
    const char *name; /* "NumTimeSteps": the JSON key in a saved network */
    double value;     /* the default */
} dla_layer_property;

/* What predict, forward and backward see. Learnables and state are in
 * the order initialize declared them. */
typedef struct dla_layer_io {
    int training;                  /* 1 in forward, 0 in predict */
    int nx;                        /* the inputs X1..Xn */
    dla_tensor *const *x;
    int nlearnables;
    dla_tensor *const *learnables;
    int nstate;
    dla_tensor *const *state;
    const double *properties;      /* the layer's, in the type's order */
    /* Set by predict/forward: the output Z. */
    dla_tensor *y;
    /* forward and predict may set the new value of state k (MATLAB's
     * [Z, state] = forward(layer, X) and = predict(layer, X)); NULL:
     * unchanged. What predict sets reaches dla_net_predict_state only.
     * Setting one at k >= nstate (a state not declared) is an error. */
    dla_tensor *new_state[DLA_LAYER_MAX_PARAMS];
} dla_layer_io;

/* The context of a layer's initialization (opaque). */
typedef struct dla_layer_init dla_layer_init;

typedef struct dla_layer_type {
    /* The type name: unique, registered once, written in saved networks and
     * returned by dla_net_layer_type. Letters, digits and '_'. */
    const char *type;
    /* The summary's type column ("Slice Difference Convolution"); NULL:
     * the type name. */
    const char *description;
    /* The default layer name (numbered "name_1" where several are
     * unnamed); NULL: the type name.
     * Letters, digits and '_', as the type name (a '/' would make layer
     * names that connections cannot name). */
    const char *default_name;
    /* The number of inputs (MATLAB's NumInputs), named "in1".."inN" in
     * connections when more than one; 0: 1. */
    int num_inputs;
    /* The properties and their defaults (at most DLA_LAYER_MAX_PROPERTIES). */
    int nproperties;
    const dla_layer_property *properties;
    /* Checks a layer's property values when it is made (and loaded):
     * return DLA_OK, or dla_set_error's status and message (the layer's
     * type and name are put in front). NULL: any values. */
    dla_status (*validate)(const double *properties);
    /* MATLAB's initialize(layer, layout): declares the learnables and the
     * state for the inputs x (zeros with the format and dtype the network
     * will give: one observation behind an input layer, the example's
     * whole dims behind an input given by example) with dla_layer_add_learnable /
     * dla_layer_add_state. Runs at every (re)initialization and at load,
     * where the saved values are taken instead. NULL: no parameters. */
    dla_status (*initialize)(const dla_layer *layer, dla_layer_init *init, int nx,
                             dla_tensor *const *x);
    /* MATLAB's predict(layer, X): sets io->y. Required. */
    dla_status (*predict)(dla_layer_io *io);
    /* MATLAB's forward(layer, X): training-only behaviour, and new state.
     * NULL: predict in training too. */
    dla_status (*forward)(dla_layer_io *io);
    /* MATLAB's backward(layer, X, Z, dLdZ, memory): given io as forward
     * (or predict) saw it with io->y set, and dy = dL/dZ, sets dx[i] =
     * dL/dXi and dlearnables[k] = dL/dWk (each with its tensor's dims;
     * NULL for a zero gradient). NULL: dla_gradient differentiates the ops
     * predict/forward ran, which is right for most layers. With a backward
     * the layer runs as one op, so nx + nlearnables + nstate must be at
     * most 8 and nstate at most 3. */
    dla_status (*backward)(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                           dla_tensor **dlearnables);
    /* The summary's description column, at most size - 1 characters
     * (the last byte of buf is made a '\0'); NULL: the properties as
     * "NumTimeSteps 3". */
    void (*describe)(const double *properties, char *buf, size_t size);
} dla_layer_type;

/* Registers type under type->type (copied: the struct may be freed; the
 * function pointers must stay valid). Registering the same definition
 * again is DLA_OK; another definition under a name that is taken (built-in
 * or registered) is DLA_ERR_INVALID_ARGUMENT, as are a missing predict, a
 * bad name and too many properties or inputs. Registrations last for the
 * process. Thread-safe. */
DLA_API dla_status dla_layer_type_register(const dla_layer_type *type);
/* Nonzero when type names a registered custom type. */
DLA_API int dla_layer_type_registered(const char *type);

/* A layer of registered type with property values (nproperties of them,
 * in the type's order; NULL: the defaults), validated. Bad values or an
 * unregistered type give a layer in an error state naming it, as the
 * built-in constructors do. */
DLA_API dla_layer *dla_custom_layer(const char *type, const double *properties,
                                    const dla_layer_options *opts);
/* A layer's name and type name (valid as long as the layer); a property
 * by name (NaN when the layer has none of that name). */
DLA_API const char *dla_layer_name(const dla_layer *layer);
DLA_API const char *dla_layer_type_name(const dla_layer *layer);
DLA_API double dla_layer_property_value(const dla_layer *layer, const char *name);

/* Inside initialize: declares a learnable (MATLAB's learnable property)
 * of dims with its initial value from initializer ("glorot" when NULL;
 * the names of the built-in layers' options), with fan_in and fan_out for
 * "glorot" and "he" (0: from dims, as convolution weights filter x
 * channels x filters: fan_in = prod(dims[0..n-2]), fan_out =
 * prod(dims[0..n-3]) x dims[n-1]; for two dims out x in, in and out;
 * finite and >= 0, DLA_ERR_INVALID_ARGUMENT otherwise, as for
 * "orthogonal" of other than two dims). Its
 * learn-rate and L2 factors are 1 (dla_table_set_factors changes them). */
DLA_API dla_status dla_layer_add_learnable(dla_layer_init *init, const char *name, int ndims,
                                           const int64_t *dims, const char *initializer,
                                           double fan_in, double fan_out);
/* Inside initialize: declares a state parameter (MATLAB's state property)
 * of dims, initially zeros or ones by initializer (NULL: "zeros"). */
DLA_API dla_status dla_layer_add_state(dla_layer_init *init, const char *name, int ndims,
                                       const int64_t *dims, const char *initializer);
/* Inside initialize: a learnable (state: 1) with a value you computed
 * (retained; its dims and dtype, which must be dla_layer_init_dtype's).
 * While loading the saved value of those dims is taken instead: see
 * dla_layer_init_loading. */
DLA_API dla_status dla_layer_add_value(dla_layer_init *init, const char *name, int state,
                                       dla_tensor *value);
/* Inside initialize: nonzero while a network is being loaded (the saved
 * values are taken: draw no random numbers for them); the dtype the
 * parameters are made in. */
DLA_API int dla_layer_init_loading(const dla_layer_init *init);
DLA_API dla_dtype dla_layer_init_dtype(const dla_layer_init *init);

/* ---------------------------------------------------------------- networks */

/* MATLAB dlnetwork(layers): a network of the n layers connected in
 * sequence (each to the next), taking them over (even on failure). It is
 * initialized at once when every input of the graph is an input layer
 * (imageInput, sequenceInput); otherwise add layers and connections and
 * call dla_net_init. n may be 0 (an empty network to build on). NULL on
 * failure: a layer in an error state, duplicate or bad names, out of
 * memory, a layer another network owns or given twice, a freed layer;
 * dla_last_error() says which. On failure the layers it could take are
 * freed; another network's layer stays that network's. Free with
 * dla_net_free; freeing a network twice, or using it after, is refused
 * and logged (docs/checks.md). */
DLA_API dla_net *dla_net_create(int n, dla_layer *const *layers);
DLA_API void dla_net_free(dla_net *net);

/* MATLAB addLayers: adds the n layers, connected in sequence among
 * themselves (not to the existing ones), taking them over. The network
 * becomes uninitialized (n 0 changes nothing); a call that fails (a duplicate name, a layer in
 * an error state...) frees the layers it could take and leaves the
 * network as it was, initialized if it was. */
DLA_API dla_status dla_net_add_layers(dla_net *net, int n, dla_layer *const *layers);
/* MATLAB connectLayers(net, source, destination): source is a layer name
 * ("layer/out" alike), or one of its output ports ("lstm/hidden",
 * "lstm/cell": HasStateOutputs); destination a layer name (its only
 * input), "layer/inK", or a named port ("attn/mask", "lstm/hidden").
 * The destination input must be free. The network becomes uninitialized. */
DLA_API dla_status dla_net_connect(dla_net *net, const char *source, const char *destination);
/* MATLAB disconnectLayers. DLA_ERR_INVALID_ARGUMENT when not connected. */
DLA_API dla_status dla_net_disconnect(dla_net *net, const char *source, const char *destination);
/* MATLAB removeLayers(net, layerNames): removes the n named layers with
 * every connection into or out of them, and their learnables, state and
 * statistics (a layer added later under one of their names starts from
 * its initializers). The network becomes uninitialized; ports left free
 * become its inputs at the next dla_net_init. A name that is no layer's
 * (or NULL) is DLA_ERR_INVALID_ARGUMENT and removes nothing; a name given
 * twice is removed once. */
DLA_API dla_status dla_net_remove_layers(dla_net *net, int n, const char *const *names);
/* MATLAB replaceLayer(net, layerName, larray): the n layers, connected in
 * sequence among themselves (as dla_net_add_layers connects them), take
 * the place of the layer named name, taking them over. What fed input K
 * of the old layer feeds input K of the first new layer (MATLAB's
 * ReconnectBy "order"); every layer the old one fed is fed by the last new
 * layer (an input the old layer fed itself too: a cycle stays a cycle). The old layer is freed with its learnables, state and statistics:
 * a new layer may have its name and still starts from its initializers,
 * while every other layer keeps its values (transfer learning: replace
 * the last fully connected layer of a trained network, dla_net_init, and
 * train; docs/networks.md, "Transfer learning"). The network becomes
 * uninitialized. Errors (the network unchanged, the new layers freed):
 * no layer named name; a new layer that dla_net_add_layers would refuse;
 * a new layer with the name of another layer of the network; a connected
 * input K of the old layer where the first new layer has fewer inputs. */
DLA_API dla_status dla_net_replace_layer(dla_net *net, const char *name, int n,
                                         dla_layer *const *layers);

/* MATLAB initialize(net, X1, ..., XN): checks the graph (every layer
 * input connected or an input of the network, no cycles), works out every
 * activation's size and format, and creates the learnables, state and
 * statistics that do not exist yet with the initializers. The network's
 * inputs take their sizes from input layers; a network whose inputs are
 * not input layers needs one example tensor per input (its dtype, dims
 * and format; values unused); with input layers, examples may be NULL,
 * and so may an input layer's entry in a list that also names a free
 * input's example (an entry given for an input layer must have the
 * layer's format and sizes, any observations and steps: DLA_ERR_SHAPE
 * otherwise, as the layer, not the example, sizes the network).
 * Parameters are single unless the examples are double (those the network
 * has already are kept, converted to the examples' dtype); they are made on
 * the device of the parameters the network has already (one moved with
 * dla_net_to_device and grown), else on the current one. Idempotent on an
 * initialized network. Errors name the layer: a connection missing, a
 * cycle, a size the layer cannot take ("layer 'fc': ..."), a learnable
 * the layer has already whose dims the examples no longer fit
 * (DLA_ERR_SHAPE, both sizes named; the values are kept, not made afresh:
 * replace or remove the layer to start it from its initializers). */
DLA_API dla_status dla_net_init(dla_net *net, int nexamples, dla_tensor *const *examples);
DLA_API int dla_net_initialized(const dla_net *net);

/* A copy with its own tables, its own accelerated function and tensors of
 * its own on the same memory (values never change in place, so nothing is
 * copied): dla_net_gradient of the original does not reach through the
 * copy (a target network beside it in one loss). NULL when out of
 * memory. */
DLA_API dla_net *dla_net_copy(const dla_net *net);
/* Converts every learnable, state and statistic to dtype (MATLAB's
 * dlupdate(@double, net)), or moves them to dev (NULL: current device). */
DLA_API dla_status dla_net_cast(dla_net *net, dla_dtype dtype);
DLA_API dla_status dla_net_to_device(dla_net *net, dla_device *dev);

/* Layers (in the order added), inputs and outputs (MATLAB's Layers,
 * InputNames, OutputNames). Names and types are valid as long as the
 * network; NULL when i is out of range. Types are MATLAB's layer names
 * without "Layer": "convolution2d", "batchNormalization", "softmax"... */
DLA_API int dla_net_layer_count(const dla_net *net);
DLA_API const char *dla_net_layer_name(const dla_net *net, int i);
DLA_API const char *dla_net_layer_type(const dla_net *net, int i);
/* The network's inputs: input layers ("input"), or free layer inputs
 * ("conv1", "add/in2") of a network without them, in the order
 * dla_net_init takes its examples; before initialization too, as the
 * graph has them then (a name stays valid until the graph changes or the
 * network is initialized or freed). */
DLA_API int dla_net_input_count(const dla_net *net);
DLA_API const char *dla_net_input_name(const dla_net *net, int i);
/* The layer outputs nothing reads (before initialization too): a
 * layer's name (valid as long as the layer), or "layer/out",
 * "layer/hidden", "layer/cell" for a layer of several outputs
 * (HasStateOutputs), each port nothing reads (valid as the input names
 * are). */
DLA_API int dla_net_output_count(const dla_net *net);
DLA_API const char *dla_net_output_name(const dla_net *net, int i);
/* Connection i as source and destination ("add/in2"); DLA_ERR_INVALID_ARGUMENT
 * when i is out of range. */
DLA_API int dla_net_connection_count(const dla_net *net);
DLA_API dla_status dla_net_connection(const dla_net *net, int i, const char **source,
                                      const char **destination);
/* The activation a layer (by name; an output port as "lstm/hidden") or
 * input i gives in the initializing
 * run (one observation behind an input layer; an input given by example
 * has the example's dims, its batch included):
 * its dims into dims (DLA_MAX_DIMS room) and its labels into format
 * (DLA_MAX_DIMS + 1 bytes); returns ndims, or -1 when there is no such
 * layer or the network is not initialized. Sequences have MinLength steps. */
DLA_API int dla_net_activation(const dla_net *net, const char *layer, int64_t *dims, char *format);
DLA_API int dla_net_input_activation(const dla_net *net, int i, int64_t *dims, char *format);

/* The Learnables and State tables (MATLAB's net.Learnables, net.State),
 * owned by the network and live: setting a value there sets it in the
 * network. NULL before initialization. */
DLA_API dla_table *dla_net_learnables(dla_net *net);
DLA_API dla_table *dla_net_state(dla_net *net);
/* MATLAB setLearnRateFactor(net, layerName, parameterName, factor) and
 * setL2Factor: sets the factor of a learnable by its layer's and its own
 * name ("fc", "Weights"); parameter NULL sets every learnable of the
 * layer (learn-rate factor 0 freezes the layer: trainnet leaves it as it
 * is, with any solver; dla_sgdmupdate and the other update functions take
 * plain lists and know no factors). The factors are kept by dla_net_copy, a
 * re-initialization, dla_net_replace_layer of other layers, trainnet and
 * dla_net_save; the row must exist: a network initialized once (the
 * layers added since have none until dla_net_init). DLA_ERR_INVALID_ARGUMENT
 * for no such layer or learnable (the message lists the layer's), or a
 * factor that is negative or not finite. */
DLA_API dla_status dla_net_set_learn_rate_factor(dla_net *net, const char *layer,
                                                 const char *parameter, double factor);
DLA_API dla_status dla_net_set_l2_factor(dla_net *net, const char *layer, const char *parameter,
                                         double factor);
/* MATLAB getLearnRateFactor, getL2Factor; NaN (dla_last_error says why)
 * when there is no such learnable. */
DLA_API double dla_net_learn_rate_factor(const dla_net *net, const char *layer,
                                         const char *parameter);
DLA_API double dla_net_l2_factor(const dla_net *net, const char *layer, const char *parameter);
DLA_API int dla_net_learnable_count(const dla_net *net);
DLA_API int dla_net_state_count(const dla_net *net);
/* net.Learnables = values / net.State = values: n must be the table's
 * count; each value must have its row's dims and dtype and be on the
 * network's device (checked before any is set), except that an LSTM's,
 * GRU's or BiLSTM's state takes any number of columns (H x 1 for every
 * observation, H x N one for each of a batch of N). Values are retained. */
DLA_API dla_status dla_net_set_learnables(dla_net *net, int n, dla_tensor *const *values);
DLA_API dla_status dla_net_set_state(dla_net *net, int n, dla_tensor *const *values);
/* MATLAB resetState: the recurrent layers' states back to their initial
 * value (LSTM, BiLSTM and GRU hidden (and cell) states to H x 1 zeros);
 * batch normalization statistics are kept, as MATLAB keeps them, and so
 * is a custom layer's state (MATLAB resets one through the layer's own
 * resetState method, which dla_layer_type has not: set its rows with
 * dla_net_set_state or dla_net_set). */
DLA_API dla_status dla_net_reset_state(dla_net *net);

/* Any parameter by layer and name: a learnable, a state, or a fixed
 * parameter (an input layer's Mean and StandardDeviation). Borrowed; NULL
 * when there is none (dla_last_error says so). dla_net_set replaces it
 * (retained) and needs the same dims (a recurrent layer's state any number
 * of columns, as dla_net_set_state) and dtype, on the network's device
 * (DLA_ERR_INVALID_ARGUMENT, naming the layer, the parameter and both
 * devices, otherwise: it is not copied). */
DLA_API dla_tensor *dla_net_get(const dla_net *net, const char *layer, const char *parameter);
DLA_API dla_status dla_net_set(dla_net *net, const char *layer, const char *parameter,
                               dla_tensor *value);

/* Sets the statistics of an input layer from data, as trainnet does before
 * training: the mean and the standard deviation (dividing by the count of
 * values, not one less) over every observation and time step of the n
 * tensors (each formatted as the layer's input: "SSCB", "CBT", "CB", with
 * its sizes, any batch size and length), per channel, per element or over
 * all, by the layer's NormalizationDimension. Sums are taken in double.
 * DLA_ERR_INVALID_ARGUMENT when the layer is not an input layer or its
 * normalization is "none"; DLA_ERR_SHAPE, naming the layer and both sizes,
 * for data of other sizes (a transposed image, other channels). */
DLA_API dla_status dla_net_set_input_statistics(dla_net *net, const char *layer, int n,
                                                dla_tensor *const *data);

/* ----------------------------------------------------------- running one */

typedef struct dla_net_forward_options {
    /* The layers whose outputs are wanted (MATLAB's Outputs name-value),
     * noutputs names (a layer's name, or MATLAB's "name/out" for its
     * first output, "name/hidden" and "name/cell" for its state outputs);
     * NULL: the network's outputs. Only the layers they
     * read run (and, when the new state is an output, every layer with
     * state and what it reads). */
    const char *const *outputs;
    /* Values to use instead of the network's own: one per Learnables row /
     * State row, in table order; NULL: the network's. This is how a model
     * loss that is itself accelerated passes the learnables as tensor
     * inputs of its own trace (see docs/networks.md). */
    dla_tensor *const *learnables;
    dla_tensor *const *state;
} dla_net_forward_options;

/* MATLAB [Y1..YM, state] = forward(net, X1..XN): training mode (batch
 * normalization with the batch's statistics, dropout active). x[i] feeds
 * input i with the format of its input layer ("SSCB", "CBT", "CB"), any batch
 * size, and the network's dtype (an input of another that a layer refuses
 * is DLA_ERR_DTYPE naming the input and both dtypes: cast the data with
 * dla_cast, or the network with dla_net_cast: inputs are not converted),
 * on the network's device (data on another is DLA_ERR_INVALID_ARGUMENT
 * naming the input and both devices: inputs are not moved either).
 * y[0..nout-1] receive the outputs (nout must equal the outputs
 * asked for). state, when not NULL, receives one tensor per State row:
 * the updated statistics of batch normalization layers, the last hidden
 * and cell states of LSTMs. The network itself is not changed (set the
 * state with dla_net_set_state). Outputs follow dlaccel.h's ownership
 * rules. Returns the status; on failure the outputs are error tensors
 * and the message names the layer. */
DLA_API dla_status dla_net_forward(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                   dla_tensor **y, dla_tensor **state,
                                   const dla_net_forward_options *opts);
/* MATLAB predict(net, X1..XN): inference mode (stored statistics, no
 * dropout). As dla_net_forward otherwise. */
DLA_API dla_status dla_net_predict(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                   dla_tensor **y, const dla_net_forward_options *opts);
/* MATLAB [Y1..YM, state] = predict(net, X1..XN): dla_net_predict that
 * also gives the state after the call in state, one tensor per State row
 * (NULL: as dla_net_predict): the hidden (and cell) states of LSTM and GRU
 * layers after the last time step; the rows inference does not change
 * (batch normalization's statistics) as they are. Setting it with
 * dla_net_set_state carries a sequence on from one call to the next in
 * inference mode (closed-loop forecasting: no dropout, stored
 * statistics), which dla_net_forward would do in training mode. A custom
 * layer's row is what its predict set in io->new_state, else unchanged. */
DLA_API dla_status dla_net_predict_state(dla_net *net, int nin, dla_tensor *const *x, int nout,
                                         dla_tensor **y, dla_tensor **state,
                                         const dla_net_forward_options *opts);

/* MATLAB dlgradient(loss, net.Learnables) inside dla_feval: grads[i] is
 * the gradient with respect to Learnables row i (dla_net_learnable_count
 * of them, each with its row's dims). As dla_gradient otherwise: a
 * learnable the loss does not depend on (a layer only an output left out
 * of the loss reaches; a layer every path of which to the outputs enters
 * a crop or resize layer by its "ref" input, whose values are never read)
 * gets zeros, as in MATLAB. Unlike MATLAB, a loss that depends on none of
 * the learnables (values given in dla_net_forward_options.learnables
 * instead of the network's, a loss not computed from the network) is
 * DLA_ERR_INVALID_ARGUMENT naming the first row, its layer and parameter,
 * rather than all zeros, which would train nothing in silence. */
DLA_API dla_status dla_net_gradient(dla_net *net, dla_tensor *loss, dla_tensor **grads);
/* dla_net_gradient through dla_gradient_hooked: ready's index is the
 * learnable's row. */
DLA_API dla_status dla_net_gradient_hooked(dla_net *net, dla_tensor *loss, dla_tensor **grads,
                                           const dla_gradient_hooks *hooks);
/* The same as a table with the Learnables' layout (rows, names, factors):
 * MATLAB's gradients = dlgradient(loss, net.Learnables). The table holds
 * its own references, so it outlives dla_feval's scope (keep it through
 * ctx); dla_table_values gives the list the optimizers take. NULL on
 * failure (dla_last_error says why). Free with dla_table_free. */
DLA_API dla_table *dla_net_gradients(dla_net *net, dla_tensor *loss);

/* Automatic acceleration of forward and predict: on (1) by default. */
DLA_API void dla_net_set_accelerate(dla_net *net, int enabled);
DLA_API int dla_net_accelerate_enabled(const dla_net *net);
/* The accelerated function behind forward and predict, owned by the
 * network: its HitRate, Occupancy, CheckMode, last miss and clear apply.
 * NULL before initialization. */
DLA_API dla_accel *dla_net_accelerator(dla_net *net);
/* A dla_accel_key_fn for an accelerated function whose ctx is a dla_net:
 * writes the network's architecture (layers, options, connections, the
 * parameters' dims and dtypes) as its non-tensor key. */
DLA_API size_t dla_net_key(void *net, void *buf, size_t size);
/* The ctx kind of a network (accel.h): with dla_accel_options.ctx_kind =
 * dla_net_accel_kind(), an accelerated function takes the network as ctx,
 * as MATLAB's dlfeval(accfun, net, X, T) does: its learnables, state and
 * fixed parameters (in table order) are traced inputs of every call, so a
 * replay after an update computes with the new values, and its key is
 * dla_net_key's architecture. The function reads the network as usual
 * (dla_net_forward, dla_net_gradient). For a struct holding a network and
 * other values, call this kind's tensors and key from your own kind. */
DLA_API const dla_accel_kind *dla_net_accel_kind(void);

/* ----------------------------------------------------------------- display */

/* MATLAB's display of a dlnetwork and its layers: the counts, then one
 * line per layer with its number, name, type, activation (for one
 * observation: "24(S) x 24(S) x 20(C) x 1(B)"), learnables (count and
 * sizes) and description ("20 5x5x1 convolutions with stride [1 1] and
 * padding [0 0 0 0]"), then connections of a graph that is not a plain
 * sequence, and the total number of learnable values. Into buf with
 * snprintf rules. */
DLA_API int dla_net_summary(const dla_net *net, char *buf, size_t size);
DLA_API dla_status dla_net_print(const dla_net *net, FILE *f);

/* ------------------------------------------------------------ save, load */

/* Saves an initialized network to path as a safetensors file
 * (docs/networks.md): an 8-byte little-endian header length, a JSON header
 * with a "__metadata__" entry holding the architecture and the
 * learnables' learn-rate and L2 factors as JSON text and a checksum
 * (CRC-32C of the data, the architecture and the factors; format
 * "dlaccel-net" 1.2) and one entry per tensor
 * ("learnables/conv1/Weights", "state/bn1/TrainedMean",
 * "fixed/input/Mean") with its dtype ("F32", "F64"), its shape (MATLAB's
 * dims reversed: the row-major shape numpy and safetensors readers use
 * for the same bytes) and its data offsets, then the raw little-endian
 * data. Written to a temporary file, synced to the disk, then renamed
 * over path (and the folder synced, where it can be), so that path holds
 * the old file or the new one whole even after a power loss: a file
 * replaced keeps its permission bits, a new one gets 0666 less the
 * umask. DLA_ERR_IO
 * with the path and the reason; DLA_ERR_STATE when not initialized;
 * DLA_ERR_DTYPE, naming it, for a parameter whose dtype is not the
 * network's (a value replaced by hand), which dla_net_load would refuse. */
DLA_API dla_status dla_net_save(const dla_net *net, const char *path);
/* Loads a network saved by dla_net_save: *out is initialized, with the
 * saved values on the current device (NULL on failure). Everything is
 * checked before it is used: the header length against the file size,
 * the JSON, every tensor's dtype, shape and offsets (in the data, not
 * overlapping, covering it), the checksum (a 1.0 or 1.1 file, which has
 * none, is taken unchecked), the architecture (known layer types, valid
 * options, connections), and that the tensors are exactly the network's
 * parameters with their dims (an LSTM state's columns, the observations
 * of the last batch, are any number). The factors are the saved ones (a 1.0
 * file, which has none, gives the layers' defaults). DLA_ERR_IO names the
 * file and the problem for an unreadable (a directory, say), truncated or
 * corrupt file; DLA_ERR_UNSUPPORTED for a
 * valid safetensors file that is not a dlaccel network, or a newer
 * format version. What the message quotes from the file (a layer name,
 * a tensor's name) has its control characters as \xNN text, so that a
 * crafted file's escape sequences never reach a terminal that shows it. */
DLA_API dla_status dla_net_load(const char *path, dla_net **out);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_NET_H */

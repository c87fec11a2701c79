/*
 * dlaccel/nnops.h - included by dlaccel.h; do not include it directly.
 *
 * The neural-network functions of MATLAB's dlarray: activations,
 * attention, resizing, normalization, pooling, dropout and fullyconnect.
 * Each is differentiable inside dla_feval, takes single or double data,
 * and finds the channel, batch, time and spatial dims of x by its format
 * labels, as MATLAB does (an unformatted x is an error where the op needs
 * a label).
 *
 *     dla_tensor *y = dla_conv(x, w, b, NULL);                   // "SSCB"
 *     dla_tensor *m, *v;
 *     dla_batchnorm_train(y, off, sc, run_mean, run_var, NULL, &y, &m, &v);
 *     y = dla_maxpool(dla_relu(y), DLA_DIMS(2), &(dla_pool_options){.stride = {2, 2}});
 *     y = dla_softmax(dla_fullyconnect(y, fcw, fcb));            // "CB"
 *
 * Options structs: a zeroed field means MATLAB's default, so a NULL
 * options pointer or a compound literal naming only the fields that differ
 * both work. Results follow dlaccel.h's ownership rules (a +1 reference, or
 * owned by the open scope); errors are sticky and name the op, the argument
 * and the shapes.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_NNOPS_H
#define DLACCEL_NNOPS_H

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ activations */

/* MATLAB's defaults for the scale of leakyrelu and the alpha of elu. */
#define DLA_LEAKYRELU_SCALE 0.01
#define DLA_ELU_ALPHA 1.0

/* MATLAB leakyrelu(X, scaleFactor): x where x > 0, scale * x elsewhere.
 * Keeps x's dims and format. DLA_ERR_INVALID_ARGUMENT for a non-finite
 * scale; DLA_ERR_DTYPE unless x is single or double. */
DLA_API dla_tensor *dla_leakyrelu(dla_tensor *x, double scale);

/* MATLAB elu(X, alpha): x where x > 0, alpha * (exp(x) - 1) elsewhere.
 * Errors as dla_leakyrelu. */
DLA_API dla_tensor *dla_elu(dla_tensor *x, double alpha);

/* MATLAB gelu(X, Approximation=approximation). approximation NULL or
 * "none" (MATLAB's default): x/2 * (1 + erf(x/sqrt(2))); "tanh":
 * x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). Keeps x's dims and
 * format. DLA_ERR_INVALID_ARGUMENT for another string. */
DLA_API dla_tensor *dla_gelu(dla_tensor *x, const char *approximation);

/* MATLAB softmax(X): exp(x) / sum(exp(x)) over the "C" dim, separately for
 * every other index (each pixel of "SSCB", each step of "CBT"). Computed
 * with the channel maximum subtracted first, so large inputs do not
 * overflow. An empty x (no channels, or no observations) gives an empty
 * result. DLA_ERR_FORMAT when x has no "C" label. */
DLA_API dla_tensor *dla_softmax(dla_tensor *x);

/* log(softmax(x)) over "C", computed as x - max - log(sum(exp(x - max))),
 * which stays finite where softmax underflows to 0. Errors as dla_softmax. */
DLA_API dla_tensor *dla_logsoftmax(dla_tensor *x);

/* ---------------------------------------------------------------- attention */

/* Options of dla_attention. A zeroed struct (or NULL) is MATLAB's
 * defaults. */
typedef struct dla_attention_options {
    /* Multiplies the scores; 0: 1/sqrt(dk), dk the key channels per head. */
    double scale;
    /* NULL or "none": every query sees every key; "causal": query j sees
     * keys 1..j only (the sequence lengths must then agree). */
    const char *attention_mask;
    /* Or NULL: which keys each query may see, nonzero where query j may
     * attend to key i: Lk x Lq for every observation, or one per
     * observation, Lk x Lq x 1 x B (the weights' layout) or Lk x Lq x B
     * (MATLAB's Nk-by-Nq-by-numObservations); Lq may be 1: the same keys
     * for every query (a padding mask, Lk x 1 x 1 x B, 0 at the padded
     * keys). Trailing dims of 1 allowed; unformatted; any real or logical
     * dtype.
     * With "causal" both apply. A query that may see no key (under the
     * two together too) gets the mean of the values, and no gradient
     * into the queries and keys. A hidden key weighs exactly 0, but a
     * NaN or Inf in its key or value still reaches the queries (0 * NaN):
     * give finite values there (dla_self_attention_layer's padding mask
     * sets its padded steps to 0 first). Borrowed;
     * inside dla_accelerate give it as an input of the function (a
     * tensor reached any other way is a constant of the trace). */
    dla_tensor *mask;
    /* MATLAB's DropoutProbability: 0 (the default) or a probability in
     * (0, 1) with which each attention weight is dropped, the kept ones
     * scaled by 1 / (1 - p), as dla_dropout does (the same draws from the
     * calling thread's stream, a new mask each call and each replay);
     * *weights then gets the weights after the dropout, the ones that
     * weighed the values. */
    double dropout_probability;
} dla_attention_options;

/* MATLAB attention(queries, keys, values, numHeads): multi-head scaled
 * dot-product attention. The three are formatted alike with a "C" dim, at
 * most one sequence dim ("T" or "S"; none: a sequence of one) and
 * optionally "B": queries dk*h x Lq, keys dk*h x Lk, values dv*h x Lk
 * (channels x sequence, per observation). Head i takes channels
 * i*dk..(i+1)*dk-1 of the queries and keys (i*dv.. of the values); its
 * weights are softmax over the keys of scale * key . query, and its
 * output the values so weighted. The result has the queries' format and
 * dims with dv*h channels, the heads' outputs one after another along
 * "C". *weights (NULL: not wanted) gets the attention weights, Lk x Lq x h
 * x B unformatted. Made of differentiable ops: gradients (and higher
 * derivatives) with respect to all three, replays, every device: the
 * three and the mask on one device (not necessarily the current one).
 * Errors: DLA_ERR_FORMAT (a missing "C", two sequence dims, "U", formats
 * that differ), DLA_ERR_SHAPE (queries and keys of other channel counts;
 * keys and values of other lengths; other observation counts; a causal
 * mask over other lengths; keys of no length for queries of some: weights
 * over no keys; queries and keys of no channels without opts->scale: the
 * default 1/sqrt(0) is infinite), DLA_ERR_INVALID_ARGUMENT (num_heads that does
 * not divide the channels, an unknown mask, a scale that is not finite, a
 * dropout probability outside [0, 1),
 * operands or a mask on another device than the queries), DLA_ERR_DTYPE
 * (the three not all single or all double). */
DLA_API dla_tensor *dla_attention(dla_tensor *queries, dla_tensor *keys, dla_tensor *values,
                                  int64_t num_heads, const dla_attention_options *opts,
                                  dla_tensor **weights);

/* ------------------------------------------------------------------ resize */

/* Options of dla_resize. Give exactly one of scale and output_size; the
 * strings are NULL (or "") for MATLAB's defaults. */
typedef struct dla_resize_options {
    /* MATLAB's Scale: one factor per "S" dim of x, in their order, or
     * scale[0] alone for all of them (entries after the last nonzero one
     * are not given). Each output size is floor(in * scale); a scale
     * that makes one 0 is DLA_ERR_INVALID_ARGUMENT naming it. */
    double scale[DLA_MAX_DIMS];
    /* MATLAB's OutputSize: one whole size per "S" dim. NAN in some of
     * them (not all) keeps the aspect ratio of the first given one, as
     * dlresize does: with r = given/given_in, such a dim gets
     * floor(r * in) elements and is resized by the factor r (not by
     * out/in; imresize would round the size up instead). */
    double output_size[DLA_MAX_DIMS];
    /* "nearest" (default) or "linear" (separable: bilinear over two S
     * dims, trilinear over three). */
    const char *method;
    /* How output position i (0-based) maps to an input coordinate along
     * a dim resized by s (the scale given, or out/in with output_size):
     * "half-pixel" (default): (i + 0.5) / s - 0.5; "asymmetric": i / s. */
    const char *geometric_transform_mode;
    /* "nearest" only, how that coordinate becomes a position: "round"
     * (default; halves away from zero, as MATLAB's round), "floor", or
     * "onnx-10" (ONNX opset 10's Resize: floor when the dim grows or
     * keeps its size, ceil when it shrinks). */
    const char *nearest_rounding_mode;
} dla_resize_options;

/* MATLAB dlresize(X, Scale=.. | OutputSize=.., Method=..,
 * GeometricTransformMode=.., NearestRoundingMode=..): resizes the
 * spatial ("S") dims of x - any number of them - and keeps every other
 * dim, the format and the dtype. Positions are always kept inside the
 * input: "nearest" clamps the rounded position to 0..in-1, "linear"
 * clamps the coordinate to [0, in-1] and mixes the two elements around
 * it, (1 - f) x[floor] + f x[floor + 1], f the fraction (the edges repeat
 * the outermost element). A dim whose positions are its own is left as
 * it is. Made of differentiable ops (gathers, products, sums):
 * gradients and higher derivatives with respect to x, replays, every
 * device. Errors: DLA_ERR_FORMAT (x unformatted or without "S" dims),
 * DLA_ERR_INVALID_ARGUMENT (neither or both of scale and output_size, a
 * count other than 1 or the number of S dims (output_size: exactly that
 * number), a scale that is not positive and finite or makes a dim of no
 * elements, a size that is not a whole positive number, an unknown
 * string), DLA_ERR_SHAPE (an empty S dim), DLA_ERR_DTYPE ("linear" on an x
 * that is not single or double; "nearest" takes any dtype),
 * DLA_ERR_OUT_OF_MEMORY before any work when the output is larger than
 * x's device's memory or a resized dim's host tables (28 bytes a
 * position) larger than the host's. Messages name dla_resize, the option
 * and x's dims. opts may be NULL only to get that error. */
DLA_API dla_tensor *dla_resize(dla_tensor *x, const dla_resize_options *opts);

/* ---------------------------------------------------------- normalization */

/* Offsets and scale factors of the normalization functions have one
 * element per channel of x (C elements, any dims: C x 1, 1 x 1 x C...),
 * as MATLAB's do; their gradients have their own dims. Statistics tensors
 * (means, variances) likewise have C elements. All must share x's dtype
 * and device. */

typedef struct dla_batchnorm_options {
    /* Added to the variance before the square root; 0: 1e-5, MATLAB's
     * default. Negative is DLA_ERR_INVALID_ARGUMENT. */
    double epsilon;
    /* dla_batchnorm_train: weight of this batch's statistics in the
     * running ones, in (0, 1]; 0: 0.1, MATLAB's MeanDecay and
     * VarianceDecay defaults. */
    double mean_decay;
    double variance_decay;
} dla_batchnorm_options;

/* MATLAB Y = batchnorm(X, offset, scaleFactor, trainedMean, trainedVar):
 * inference mode, normalizing with the given statistics:
 *   y = scale .* (x - mean) ./ sqrt(var + epsilon) + offset,
 * per channel. x needs a "C" label (DLA_ERR_FORMAT otherwise); the
 * statistics have C elements (DLA_ERR_SHAPE otherwise). Differentiable
 * with respect to all five tensors. */
DLA_API dla_tensor *dla_batchnorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                  dla_tensor *mean, dla_tensor *var,
                                  const dla_batchnorm_options *opts);

/* MATLAB [Y, runMean, runVar] = batchnorm(X, offset, scaleFactor, runMean,
 * runVar): training mode. Normalizes each channel with this batch's mean
 * and variance, taken over every dim but "C" (S, B, T and U), the variance
 * being the biased one (divided by N, the elements per channel):
 *   y = scale .* (x - mu) ./ sqrt(sigma2 + epsilon) + offset.
 * *new_mean and *new_var receive the updated running statistics,
 *   new_mean = mean_decay * mu + (1 - mean_decay) * running_mean
 *   new_var  = variance_decay * sigma2 * N/(N-1) + (1 - variance_decay) * running_var,
 * the running variance taking the unbiased batch variance (N/(N-1); 1 when
 * N is 1), as MATLAB's batchnorm and PyTorch's BatchNorm do. They have the
 * dims and format of running_mean and running_var. A batch of no elements
 * (B or T of 0) leaves them as they are (its statistics are NaN).
 * running_mean and running_var may both be NULL: *new_mean and *new_var
 * then receive the batch statistics themselves, mu and the biased sigma2
 * (MATLAB's [Y, mu, sigmaSq] = batchnorm(X, offset, scaleFactor)), with
 * offset's dims. new_mean and new_var may be NULL when not wanted; y may
 * not. Only *y is differentiable (with respect to x, offset and scale);
 * the statistics are not. Returns the status; the outputs are error
 * tensors on failure. */
DLA_API dla_status dla_batchnorm_train(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                       dla_tensor *running_mean, dla_tensor *running_var,
                                       const dla_batchnorm_options *opts, dla_tensor **y,
                                       dla_tensor **new_mean, dla_tensor **new_var);

typedef struct dla_norm_options {
    /* As dla_batchnorm_options.epsilon; 0: 1e-5. */
    double epsilon;
    /* dla_layernorm only: the dims normalized together, MATLAB's
     * OperationDimension. NULL or "batch-excluded" (the default of
     * MATLAB's layernorm function): every dim but "B" (S, C, T, U);
     * "spatial-channel": S and C; "channel-only": C; "auto" (the default
     * of layerNormalizationLayer since R2023a): "channel-only" when x has
     * a "T" dim, else "spatial-channel". */
    const char *operation_dimension;
} dla_norm_options;

/* MATLAB layernorm(X, offset, scaleFactor): normalizes each observation
 * (each "B" index) over the dims opts->operation_dimension names, with the
 * biased variance, then scales and offsets per channel. x needs a "C"
 * label. */
DLA_API dla_tensor *dla_layernorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                  const dla_norm_options *opts);

/* MATLAB groupnorm(X, numGroups, offset, scaleFactor): the C channels form
 * num_groups consecutive groups of C/num_groups; each observation is
 * normalized over each group's channels together with the S, T and U dims.
 * num_groups == C is instancenorm, 1 is layernorm over all but "B"
 * (MATLAB's "channel-wise" and "all-channels"). DLA_ERR_INVALID_ARGUMENT
 * unless num_groups divides C. */
DLA_API dla_tensor *dla_groupnorm(dla_tensor *x, int64_t num_groups, dla_tensor *offset,
                                  dla_tensor *scale, const dla_norm_options *opts);

/* MATLAB instancenorm(X, offset, scaleFactor): each channel of each
 * observation normalized over the S, T and U dims. */
DLA_API dla_tensor *dla_instancenorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                     const dla_norm_options *opts);

typedef struct dla_crosschannelnorm_options {
    /* MATLAB's Alpha, the multiplier of the window's mean square; 0: 1e-4
     * (DLA_CROSSCHANNELNORM_ALPHA). Finite. */
    double alpha;
    /* MATLAB's Beta, the exponent; 0: 0.75. At least 0.01, as MATLAB's. */
    double beta;
    /* MATLAB's K, added before the power; 0: 2. At least 1e-5, as MATLAB's. */
    double k;
    /* The labels of an unformatted x (MATLAB's DataFormat, "SSCB" and the
     * like, with a "C"); the result is unformatted too. NULL for a
     * formatted x. */
    const char *data_format;
} dla_crosschannelnorm_options;

#define DLA_CROSSCHANNELNORM_ALPHA 1e-4
#define DLA_CROSSCHANNELNORM_BETA 0.75
#define DLA_CROSSCHANNELNORM_K 2.0

/* MATLAB crosschannelnorm(X, windowSize) (local response normalization,
 * as in AlexNet): each element divided by its neighbours' energy along C,
 *   y = x ./ (K + Alpha * ss / window) .^ Beta,
 * ss the sum of the squares of x at the same position in the channels
 * c - floor((window - 1) / 2) .. c + floor(window / 2) (MATLAB's window:
 * an even one looks one channel further ahead than back); channels past
 * either end count as 0. window >= 1, any size: one of 2C - 1 or more
 * takes every channel (the divisor is still window); x single or double
 * with a "C" dim. The formula, the window and the divisor are those of
 * MathWorks' LocalMapNorm2D.m (crossChannelNormalizationLayer's).
 * Differentiable in x, made of elementwise ops, pad and slices. */
DLA_API dla_tensor *dla_crosschannelnorm(dla_tensor *x, int64_t window,
                                         const dla_crosschannelnorm_options *opts);

/* ---------------------------------------------------------------- recurrent */

typedef struct dla_recurrent_options {
    /* The labels of an unformatted x: "CBT", "CT" for one sequence, or
     * "CB" for one step (MATLAB's DataFormat); y is unformatted then
     * too. NULL for a formatted x. */
    const char *data_format;
    /* dla_gru only (MATLAB's ResetGateMode): NULL or "after-multiplication"
     * (r .* (R_n h)), "before-multiplication" (R_n (r .* h)),
     * "recurrent-bias-after-multiplication" (bias 6H: the input's, then
     * the recurrent product's, inside r .* ( )). */
    const char *reset_gate_mode;
} dla_recurrent_options;

/* MATLAB [Y, hiddenState, cellState] = lstm(X, H0, C0, weights,
 * recurrentWeights, bias): an LSTM over x's steps ("CBT"; "CT" is one
 * sequence, a batch of one, and "CB" one step), tanh as the state and
 * sigmoid as the gate activation. weights is
 * 4H x C, recurrent_weights 4H x H, bias 4H elements, their rows MATLAB's
 * gates in order (input, forget, cell candidate, output); h0 and c0 H x 1
 * (every observation starts from it) or H x B; labels on any of them are
 * ignored. *y is H x B x T with x's format (H x T for "CT", H x B for
 * "CB"); *hidden_state and *cell_state
 * (each may be NULL) are H x B, after the last step (the initial ones for
 * T of 0, an H x 1 one repeated for every observation). The same
 * computation as dla_lstm_layer's (the same bits), differentiable in every
 * argument. Returns the status; the outputs are error tensors on failure. */
DLA_API dla_status dla_lstm(dla_tensor *x, dla_tensor *h0, dla_tensor *c0, dla_tensor *weights,
                            dla_tensor *recurrent_weights, dla_tensor *bias,
                            const dla_recurrent_options *opts, dla_tensor **y,
                            dla_tensor **hidden_state, dla_tensor **cell_state);

/* MATLAB [Y, hiddenState] = gru(X, H0, weights, recurrentWeights, bias):
 * a GRU as dla_gru_layer's (net.h: reset, update and candidate rows, 3H x
 * C, 3H x H, bias 3H or 6H by opts->reset_gate_mode), otherwise as
 * dla_lstm. */
DLA_API dla_status dla_gru(dla_tensor *x, dla_tensor *h0, dla_tensor *weights,
                           dla_tensor *recurrent_weights, dla_tensor *bias,
                           const dla_recurrent_options *opts, dla_tensor **y,
                           dla_tensor **hidden_state);

/* ---------------------------------------------------------------- pooling */

/* Pooling runs over the "S" dims of x (1 to 3 of them); an x with no "S"
 * dim but a "T" dim (a "CBT" sequence) is pooled over "T". The other dims
 * ride along: every channel, observation and (for S pooling) time step is
 * pooled alone. Below, "pooled dim i" is the i-th of those dims. */
typedef struct dla_pool_options {
    /* Step between windows along pooled dim i; 0: 1 (MATLAB's default). */
    int64_t stride[3];
    /* Padding before ([0][i]) and after ([1][i]) pooled dim i, as MATLAB's
     * 2-by-d Padding matrix [top left; bottom right]; zero by default.
     * Each must be smaller than the window along its dim. */
    int64_t padding[2][3];
    /* NULL: the numbers above. "same": padding such that the output has
     * ceil(in/stride) elements along each pooled dim, split evenly with
     * any odd one after (MATLAB's "same"); padding must then be zero. */
    const char *padding_mode;
    /* dla_avgpool only, MATLAB's PaddingValue: NULL or "zero" (the
     * default): padding counts as zeros, every window divides by its full
     * size; "mean": padding is left out of the mean. */
    const char *padding_value;
} dla_pool_options;

/* MATLAB maxpool(X, poolsize, ...): the maximum of each window. pool_size
 * has one entry per pooled dim, or one for all of them (DLA_DIMS(2) is 2x2
 * on "SSCB"). Along each pooled dim the output has
 * floor((in + pad_before + pad_after - window) / stride) + 1 elements.
 * Padding never wins a maximum. The gradient goes to the first maximum of
 * each window (in column-major order within the window); windows that
 * overlap add their gradients. Errors: DLA_ERR_FORMAT when x has neither S
 * nor T dims or more than 3 S dims; DLA_ERR_INVALID_ARGUMENT for a window,
 * stride or padding out of range (naming the pooled dim); DLA_ERR_SHAPE
 * when a window does not fit in the padded input. */
DLA_API dla_tensor *dla_maxpool(dla_tensor *x, int npool, const int64_t *pool_size,
                                const dla_pool_options *opts);

/* MATLAB avgpool(X, poolsize, ...): the mean of each window; padding
 * counts as zeros unless opts->padding_value is "mean". Otherwise as
 * dla_maxpool. */
DLA_API dla_tensor *dla_avgpool(dla_tensor *x, int npool, const int64_t *pool_size,
                                const dla_pool_options *opts);

/* Global pooling (MATLAB maxpool(X, "global"), avgpool(X, "global"),
 * globalMaxPooling and globalAveragePooling layers): the max or mean over
 * all S dims, or over T for an x without S dims ("CBT" sequences). The
 * pooled dims stay with size 1 and keep their labels ("SSCB" 28x28x20x128
 * gives 1x1x20x128 "SSCB"). Max: the gradient goes to the first maximum;
 * an empty pooled dim is DLA_ERR_SHAPE (no maximum). Average: an empty
 * pooled dim gives NaN, the mean of nothing, as dla_mean does. */
DLA_API dla_tensor *dla_global_maxpool(dla_tensor *x);
DLA_API dla_tensor *dla_global_avgpool(dla_tensor *x);

/* ---------------------------------------------------------------- dropout */

/* Dropout (MATLAB's dropoutLayer in training): each element of x is zeroed
 * with probability prob and the others scaled by 1/(1 - prob), so the
 * expected value is unchanged. The mask comes from the calling thread's
 * Philox stream and advances it exactly as dla_rand(dtype of x, dims of x)
 * would: element i is kept when that call's element i is >= prob. So the
 * same dla_rng_seed gives the same mask on every device, and a replay of
 * dla_accelerate draws a new mask each call, the one eager would draw.
 * prob 0 returns a copy of x (and still advances the stream). The gradient
 * is multiplied by the same mask. DLA_ERR_INVALID_ARGUMENT unless
 * 0 <= prob < 1. */
#define DLA_DROPOUT_PROB 0.5 /* MATLAB's default Probability */
DLA_API dla_tensor *dla_dropout(dla_tensor *x, double prob);

/* ---------------------------------------------------------- fullyconnect */

/* MATLAB fullyconnect(X, weights, bias): y = weights * x + bias, applied to
 * each observation (and time step). weights is OutputSize x InputSize
 * (MATLAB's layout; further dims allowed when their product is
 * InputSize), where InputSize is the product of x's S and C dims: "SSCB"
 * images are flattened column-major, as MATLAB does. bias has OutputSize
 * elements, any dims, or is NULL for none. The result is "CB" with
 * OutputSize channels, "CBT" when x has a "T" dim (every step alike); x
 * without a "B" dim gives a batch of 1. Gradients with respect to x,
 * weights and bias keep their dims and formats. Errors: DLA_ERR_FORMAT
 * when x has no "C" label or has "U" dims; DLA_ERR_SHAPE when weights or
 * bias do not match (the message names both shapes). */
DLA_API dla_tensor *dla_fullyconnect(dla_tensor *x, dla_tensor *weights, dla_tensor *bias);

/* MATLAB Y = embed(X, weights): the columns of weights (embedding dimension
 * D x V, single or double, unformatted) that the numeric indices of X pick.
 * X is formatted ("BT" or "CBT" token sequences, "CB" or "B" one index an
 * observation...) with a "C" of 1 or none; any numeric dtype. Y has X's
 * labels with "C" of D (inserted after the "S" dims when X has none:
 * "BT" gives "CBT"), weights' dtype. As MATLAB's: indices are 1-based, and
 * every value that is not a whole number in 1..V (0, doc2sequence's
 * padding, NaN, a fraction, past V) picks column V, the out-of-vocabulary
 * vector. Differentiable in weights (a column picked several times gets
 * their gradients' sum); no host read, so it records and replays.
 * Errors: DLA_ERR_FORMAT for an unformatted X, DLA_ERR_SHAPE for a "C" of
 * X other than 1 or weights that are not a matrix, DLA_ERR_DTYPE for
 * logical X or integer weights, DLA_ERR_INVALID_ARGUMENT for operands on
 * different devices. */
DLA_API dla_tensor *dla_embed(dla_tensor *x, dla_tensor *weights);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_NNOPS_H */

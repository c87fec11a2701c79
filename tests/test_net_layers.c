/*
 * test_net_layers.c - every layer's forward values, in training and in
 * inference mode, against the op it is built on (or, for the lstm, a loop
 * written out in double), on small hand-made inputs and parameters.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "tu_assert.h"
#include "gradcheck.h"

#include <dlaccel.h>
#include <math.h>
#include <string.h>

/* A tensor of dims filled with v[i] = a * i + b (varied signs). */
static dla_tensor *ramp(dla_dtype dt, const char *fmt, int nd, const int64_t *dims, double a, double b)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    double *h = malloc(sizeof *h * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        h[i] = a * (double)((i * 7) % 11) + b + 0.01 * (double)i;
    dla_tensor *t = dla_cast(dla_tensor_from_host(h, DLA_F64, fmt, nd, dims), dt);
    free(h);
    return t;
}

/* Max |a - b| over all elements (same numel required). */
static double maxdiff(dla_tensor *a, dla_tensor *b)
{
    assert_int_equal(dla_tensor_status(a), DLA_OK);
    assert_int_equal(dla_tensor_status(b), DLA_OK);
    int64_t n = dla_tensor_numel(a);
    assert_int_equal(n, dla_tensor_numel(b));
    double *x = malloc(sizeof *x * (size_t)(n ? n : 1)), *y = malloc(sizeof *y * (size_t)(n ? n : 1));
    assert_int_equal(dla_tensor_to_host(dla_cast(a, DLA_F64), x, sizeof *x * (size_t)n), DLA_OK);
    assert_int_equal(dla_tensor_to_host(dla_cast(b, DLA_F64), y, sizeof *y * (size_t)n), DLA_OK);
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        m = tu_worse(m, fabs(x[i] - y[i]));
    free(x);
    free(y);
    return m;
}

static void assert_same(dla_tensor *a, dla_tensor *b)
{
    assert_string_equal(dla_tensor_format(a), dla_tensor_format(b));
    assert_int_equal(dla_tensor_ndims(a) >= 1, 1);
    for (int d = 1; d <= 5; d++)
        assert_int_equal(dla_tensor_dim(a, d), dla_tensor_dim(b, d));
    assert_true(maxdiff(a, b) <= 1e-5);
}

/* A network of one layer behind an example input of x's shape (no input
 * layer), in double. */
static dla_net *one(dla_layer *l, dla_tensor *x)
{
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    if (dla_net_init(net, 1, &x) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    return net;
}

static dla_tensor *predict1(dla_net *net, dla_tensor *x)
{
    dla_tensor *y;
    if (dla_net_predict(net, 1, &x, 1, &y, NULL) != DLA_OK)
        fail_msg("predict: %s", dla_last_error());
    return y;
}

static dla_tensor *forward1(dla_net *net, dla_tensor *x)
{
    dla_tensor *y;
    if (dla_net_forward(net, 1, &x, 1, &y, NULL, NULL) != DLA_OK)
        fail_msg("forward: %s", dla_last_error());
    return y;
}

/* Sets the layer's parameter to a ramp of its own dims. */
static dla_tensor *set_ramp(dla_net *net, const char *layer, const char *param, double a, double b)
{
    dla_tensor *old = dla_net_get(net, layer, param);
    assert_non_null(old);
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(old, dims);
    dla_tensor *v = ramp(dla_tensor_dtype(old), "", nd, dims, a, b);
    assert_int_equal(dla_net_set(net, layer, param, v), DLA_OK);
    return v;
}

static void image_input_zscore_subtracts_mean_and_divides_by_std(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *mean = dla_tensor_from_host((float[]){1, -2}, DLA_F32, "", DLA_DIMS(1, 1, 2));
    dla_tensor *sd = dla_tensor_from_host((float[]){2, 4}, DLA_F32, "", DLA_DIMS(1, 1, 2));
    dla_layer *l[] = {dla_image_input_layer(3, 2, 2, &(dla_image_input_options){
        .normalization = "zscore", .mean = mean, .standard_deviation = sd})};
    dla_net *net = dla_net_create(1, l);
    assert_non_null(net);
    dla_tensor *x = ramp(DLA_F32, "SSCB", DLA_DIMS(3, 2, 2, 2), 1, -3);
    dla_tensor *want = dla_div(dla_sub(x, mean), sd);
    assert_same(predict1(net, x), want);
    assert_same(forward1(net, x), want);
    /* zerocenter only subtracts; none passes x through. */
    dla_layer *z[] = {dla_image_input_layer(3, 2, 2, &(dla_image_input_options){.mean = mean})};
    dla_net *zn = dla_net_create(1, z);
    assert_same(predict1(zn, x), dla_sub(x, mean));
    /* A wrong size is refused, naming the layer. */
    dla_tensor *bad = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(3, 3, 2, 1)), *y;
    assert_int_equal(dla_net_predict(net, 1, &bad, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "imageinput"));
    assert_int_equal(dla_tensor_status(y), DLA_ERR_SHAPE);
    dla_net_free(net);
    dla_net_free(zn);
    dla_scope_end();
}

static void input_statistics_come_from_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
        .normalization = "zscore", .min_length = 2})};
    dla_net *net = dla_net_create(1, l);
    assert_non_null(net);
    /* channel 1: 1..6 (mean 3.5), channel 2: all 5 (no spread: std 1) over two tensors */
    dla_tensor *a = dla_tensor_from_host((double[]){1, 5, 2, 5, 3, 5}, DLA_F64, "CBT", DLA_DIMS(2, 1, 3));
    dla_tensor *b = dla_tensor_from_host((double[]){4, 5, 5, 5, 6, 5}, DLA_F64, "CBT", DLA_DIMS(2, 3, 1));
    assert_int_equal(dla_net_set_input_statistics(net, "sequenceinput", 2, (dla_tensor *[]){a, b}), DLA_OK);
    dla_tensor *m = dla_net_get(net, "sequenceinput", "Mean");
    dla_tensor *s = dla_net_get(net, "sequenceinput", "StandardDeviation");
    assert_true(fabs(dla_tensor_item(m, 0) - 3.5) < 1e-6);
    assert_true(fabs(dla_tensor_item(m, 1) - 5) < 1e-6);
    assert_true(fabs(dla_tensor_item(s, 0) - sqrt(17.5 / 6)) < 1e-5);
    assert_true(dla_tensor_item(s, 1) == 1);
    /* A sequence shorter than MinLength is refused. */
    dla_tensor *shrt = dla_zeros(DLA_F32, "CBT", DLA_DIMS(2, 1, 1)), *y;
    assert_int_equal(dla_net_predict(net, 1, &shrt, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "MinLength 2"));
    dla_net_free(net);
    /* A network whose windows along "T" are longer than MinLength fails
     * its initialization, which tries sequences that short: the message
     * names the option (it said only "a filter spanning 3 elements does
     * not fit in 0 + 1 + 0"). A longer MinLength makes it. */
    for (int pool = 0; pool < 2; pool++) {
        dla_layer *w[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
                              .name = "seq"}),
                          pool ? dla_maxpool1d_layer(3, NULL) : dla_conv1d_layer(3, 2, NULL)};
        assert_null(dla_net_create(2, w));
        assert_non_null(strstr(dla_last_error(), "MinLength 1 step from 'seq': set "
                                                 "dla_sequence_input_options.min_length"));
        dla_layer *ok[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
                               .min_length = 3}),
                           pool ? dla_maxpool1d_layer(3, NULL) : dla_conv1d_layer(3, 2, NULL)};
        net = dla_net_create(2, ok);
        assert_non_null(net);
        dla_net_free(net);
    }
    dla_scope_end();
}

/* Data for the statistics must have the layer's sizes, not only as many
 * values per statistic: an image transposed, or sequences of other
 * channels, would give statistics of the wrong data. */
static void input_statistics_refuse_data_of_other_sizes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *il[] = {dla_image_input_layer(4, 6, 1, &(dla_image_input_options){
        .normalization = "zscore", .normalization_dimension = "element", .name = "in"})};
    dla_net *net = dla_net_create(1, il);
    assert_non_null(net);
    dla_tensor *t = ramp(DLA_F32, "SSCB", DLA_DIMS(6, 4, 1, 3), 1, 0);
    assert_int_equal(dla_net_set_input_statistics(net, "in", 1, &t), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "6x4x1x3 \"SSCB\"; layer 'in' takes 4x6x1 images"));
    dla_tensor *ok = ramp(DLA_F32, "SSCB", DLA_DIMS(4, 6, 1, 3), 1, 0);
    assert_int_equal(dla_net_set_input_statistics(net, "in", 2, (dla_tensor *[]){ok, t}),
                     DLA_ERR_SHAPE);
    assert_int_equal(dla_net_set_input_statistics(net, "in", 1, &ok), DLA_OK);
    dla_net_free(net);
    dla_layer *sl[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
        .normalization = "zscore", .normalization_dimension = "all", .name = "in"})};
    net = dla_net_create(1, sl);
    assert_non_null(net);
    dla_tensor *s3 = ramp(DLA_F32, "CBT", DLA_DIMS(3, 2, 4), 1, 0);
    assert_int_equal(dla_net_set_input_statistics(net, "in", 1, &s3), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'in' takes 2 channels"));
    dla_net_free(net);
    dla_scope_end();
}

/* A small spread on a large offset (sensor readings, timestamps): the
 * standard deviation of 1e5 + {0, 2, 4, 6} * 1e-3, split over two tensors
 * of other counts, is sqrt(5e-6), not what the sum of squares less the
 * squared mean leaves of it. */
static void input_statistics_keep_a_small_spread_on_a_large_offset(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(1, &(dla_feature_input_options){
        .normalization = "zscore", .name = "in"})};
    dla_net *net = dla_net_create(1, l);
    assert_non_null(net);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    dla_tensor *a = dla_tensor_from_host((double[]){1e5, 1e5 + 0.002, 1e5 + 0.004}, DLA_F64,
                                         "CB", DLA_DIMS(1, 3));
    dla_tensor *b = dla_tensor_from_host((double[]){1e5 + 0.006}, DLA_F64, "CB", DLA_DIMS(1, 1));
    assert_int_equal(dla_net_set_input_statistics(net, "in", 2, (dla_tensor *[]){a, b}), DLA_OK);
    double mean = dla_tensor_item(dla_net_get(net, "in", "Mean"), 0);
    double sd = dla_tensor_item(dla_net_get(net, "in", "StandardDeviation"), 0);
    assert_true(fabs(mean - (1e5 + 0.003)) < 1e-9);
    assert_true(fabs(sd / sqrt(5e-6) - 1) < 1e-6);
    dla_net_free(net);
    dla_scope_end();
}

/* A statistic constant over the data (a blank border pixel, per element)
 * has no spread: its StandardDeviation becomes 1, not 0, so the network's
 * output is finite, and the others keep theirs. A StandardDeviation given
 * with a zero, a negative or a NaN in it is refused at the layer. */
static void zscore_of_a_constant_element_divides_by_one(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_image_input_layer(2, 1, 1, &(dla_image_input_options){
        .normalization = "zscore", .normalization_dimension = "element", .name = "in"})};
    dla_net *net = dla_net_create(1, l);
    assert_non_null(net);
    /* Element 1 is 0 in every image; element 2 is 1, 3. */
    dla_tensor *x = dla_tensor_from_host((float[]){0, 1, 0, 3}, DLA_F32, "SSCB", DLA_DIMS(2, 1, 1, 2));
    assert_int_equal(dla_net_set_input_statistics(net, "in", 1, &x), DLA_OK);
    dla_tensor *sd = dla_net_get(net, "in", "StandardDeviation");
    assert_true(dla_tensor_item(sd, 0) == 1);
    assert_true(dla_tensor_item(sd, 1) == 1); /* std of {1, 3}, population */
    dla_tensor *y = NULL;
    dla_tensor *t = dla_tensor_from_host((float[]){0.5f, 5}, DLA_F32, "SSCB", DLA_DIMS(2, 1, 1, 1));
    assert_int_equal(dla_net_predict(net, 1, &t, 1, &y, NULL), DLA_OK);
    assert_true(dla_tensor_item(y, 0) == 0.5);
    assert_true(dla_tensor_item(y, 1) == 3); /* (5 - 2) / 1 */
    /* dla_net_set checks a StandardDeviation as the options are. */
    dla_tensor *sd0 = dla_tensor_from_host((float[]){2, 0}, DLA_F32, "", DLA_DIMS(2, 1, 1));
    assert_int_equal(dla_net_set(net, "in", "StandardDeviation", sd0), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_net_set: layer 'in': StandardDeviation(2) is 0"));
    assert_true(dla_tensor_item(dla_net_get(net, "in", "StandardDeviation"), 1) == 1);
    dla_net_free(net);
    const float bad[][2] = {{1, 0}, {1, -2}, {NAN, 1}, {1, INFINITY}};
    for (int k = 0; k < 4; k++) {
        dla_tensor *given = dla_tensor_from_host(bad[k], DLA_F32, "", DLA_DIMS(2, 1, 1));
        dla_layer *b = dla_image_input_layer(2, 1, 1, &(dla_image_input_options){
            .normalization = "zscore", .normalization_dimension = "element", .standard_deviation = given});
        assert_non_null(b);
        assert_int_equal(dla_layer_status(b), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_layer_error(b), "imageInput: StandardDeviation("));
        assert_non_null(strstr(dla_layer_error(b), "each must be positive and finite"));
        dla_layer_free(b);
    }
    /* zerocenter does not divide: its unused StandardDeviation is not checked. */
    dla_tensor *zero = dla_tensor_from_host((float[]){0}, DLA_F32, "", DLA_DIMS(1, 1));
    dla_layer *z = dla_feature_input_layer(1, &(dla_feature_input_options){
        .normalization = "zerocenter", .standard_deviation = zero});
    assert_int_equal(dla_layer_status(z), DLA_OK);
    dla_layer_free(z);
    dla_scope_end();
}

/* featureInputLayer: "CB" data, zscore with given statistics, statistics
 * set from data, and any other data refused naming the layer. */
static void feature_input_normalizes_and_takes_statistics_from_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *mean = dla_tensor_from_host((float[]){1, -2, 0}, DLA_F32, "", DLA_DIMS(3, 1));
    dla_tensor *sd = dla_tensor_from_host((float[]){2, 4, 1}, DLA_F32, "", DLA_DIMS(3, 1));
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){
        .normalization = "zscore", .mean = mean, .standard_deviation = sd}),
                      dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_tensor *x = ramp(DLA_F32, "CB", DLA_DIMS(3, 4), 1, -3), *y;
    const dla_net_forward_options first = {.outputs = (const char *const[]){"featureinput"}};
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, &first), DLA_OK);
    assert_same(y, dla_div(dla_sub(x, mean), sd));
    dla_tensor *bad = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 4));
    assert_int_equal(dla_net_predict(net, 1, &bad, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "the layer takes \"CB\" data of 3 features"));
    dla_net_free(net);
    /* Statistics from two batches: feature 1 is 1..6, feature 2 all 5. */
    dla_layer *z[] = {dla_feature_input_layer(2, &(dla_feature_input_options){
        .normalization = "zscore"})};
    net = dla_net_create(1, z);
    assert_non_null(net);
    dla_tensor *a = dla_tensor_from_host((double[]){1, 5, 2, 5, 3, 5}, DLA_F64, "CB", DLA_DIMS(2, 3));
    dla_tensor *b = dla_tensor_from_host((double[]){4, 5, 5, 5, 6, 5}, DLA_F64, "CB", DLA_DIMS(2, 3));
    assert_int_equal(dla_net_set_input_statistics(net, "featureinput", 2, (dla_tensor *[]){a, b}),
                     DLA_OK);
    dla_tensor *m = dla_net_get(net, "featureinput", "Mean");
    dla_tensor *s = dla_net_get(net, "featureinput", "StandardDeviation");
    assert_true(fabs(dla_tensor_item(m, 0) - 3.5) < 1e-6);
    assert_true(fabs(dla_tensor_item(m, 1) - 5) < 1e-6);
    assert_true(fabs(dla_tensor_item(s, 0) - sqrt(17.5 / 6)) < 1e-5);
    /* Constant: 1, so that it is divided by something (a 0 gave NaN). */
    assert_true(dla_tensor_item(s, 1) == 1);
    dla_net_free(net);
    dla_scope_end();
}

static void conv2d_matches_dla_conv_with_stride_dilation_and_padding(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(7, 6, 3, 2), 0.3, -1);
    dla_net *net = one(dla_conv2d_layer(3, 2, 4, &(dla_conv_layer_options){
        .stride = {2, 1}, .dilation = {1, 2}, .padding = {1, 0, 2, 1}, .name = "c"}), x);
    dla_tensor *w = set_ramp(net, "c", "Weights", 0.1, -0.5), *b = set_ramp(net, "c", "Bias", 1, -2);
    assert_int_equal(dla_tensor_dim(w, 3), 3);
    dla_tensor *want = dla_conv(x, w, b, &(dla_conv_options){
        .stride = {2, 1}, .dilation = {1, 2}, .padding = {{1, 2}, {0, 1}}});
    assert_same(predict1(net, x), want);
    assert_same(forward1(net, x), want);
    dla_net_free(net);
    /* "same" keeps ceil(in / stride). */
    dla_net *same = one(dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){
        .stride = {2, 2}, .padding_mode = "same"}), x);
    dla_tensor *y = predict1(same, x);
    assert_int_equal(dla_tensor_dim(y, 1), 4);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    dla_net_free(same);
    dla_scope_end();
}

/* transposedConv2dLayer is dla_transpconv with the layer's weights
 * (filters before channels), cropping by numbers or "same"; the 1-D one
 * runs along T; bad options are refused naming the layer. */
static void transposed_conv_layers_match_dla_transpconv(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(4, 3, 3, 2), 0.3, -1);
    dla_net *net = one(dla_transposed_conv2d_layer(3, 2, 5, &(dla_transposed_conv_layer_options){
        .stride = {2, 3}, .cropping = {1, 0, 2, 1}, .name = "t"}), x);
    dla_tensor *w = set_ramp(net, "t", "Weights", 0.1, -0.5), *b = set_ramp(net, "t", "Bias", 1, -2);
    assert_int_equal(dla_tensor_dim(w, 3), 5); /* filters */
    assert_int_equal(dla_tensor_dim(w, 4), 3); /* channels */
    assert_int_equal(dla_tensor_dim(b, 3), 5);
    dla_tensor *want = dla_transpconv(x, w, b, &(dla_conv_options){
        .stride = {2, 3}, .padding = {{1, 2}, {0, 1}}});
    dla_tensor *y = predict1(net, x);
    assert_same(y, want);
    assert_same(forward1(net, x), want);
    /* (in - 1) * stride + filter - cropping */
    assert_int_equal(dla_tensor_dim(y, 1), (4 - 1) * 2 + 3 - 1);
    assert_int_equal(dla_tensor_dim(y, 2), (3 - 1) * 3 + 2 - 3);
    assert_int_equal(dla_tensor_dim(y, 3), 5);
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "5 3x2x3 transposed convolutions with stride [2 3] and "
                                    "cropping [1 0 2 1]"));
    dla_net_free(net);
    /* "same" gives in * stride. */
    dla_net *same = one(dla_transposed_conv2d_layer(4, 4, 2, &(dla_transposed_conv_layer_options){
        .stride = {2, 2}, .cropping_mode = "same"}), x);
    y = predict1(same, x);
    assert_int_equal(dla_tensor_dim(y, 1), 8);
    assert_int_equal(dla_tensor_dim(y, 2), 6);
    dla_net_free(same);
    /* 1-D along T. */
    dla_tensor *s = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 5), 0.2, -0.7);
    dla_net *seq = one(dla_transposed_conv1d_layer(3, 4, &(dla_transposed_conv_layer_options){
        .stride = {2}, .name = "t1"}), s);
    w = set_ramp(seq, "t1", "Weights", 0.1, -0.3), b = set_ramp(seq, "t1", "Bias", 1, 0);
    y = predict1(seq, s);
    assert_same(y, dla_transpconv(s, w, b, &(dla_conv_options){.stride = {2}}));
    assert_int_equal(dla_tensor_dim(y, 3), (5 - 1) * 2 + 3);
    assert_string_equal(dla_tensor_format(y), "CBT");
    dla_net_free(seq);
    /* Refused options name the layer. */
    dla_layer *bad = dla_transposed_conv2d_layer(3, 3, 2, &(dla_transposed_conv_layer_options){
        .cropping_mode = "causal", .name = "up"});
    assert_non_null(bad);
    dla_net *nb = dla_net_create(1, &bad);
    assert_null(nb);
    assert_non_null(strstr(dla_last_error(), "transposedConvolution2d 'up': cropping mode "
                                             "\"causal\"; use \"same\" or numbers"));
    dla_scope_end();
}

/* selfAttentionLayer is its three projections, dla_attention and the
 * output projection, with MATLAB's learnables; refused options and inputs
 * name the layer. */
static void self_attention_is_projections_around_dla_attention(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 4), 0.2, -0.9);
    dla_net *net = one(dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
        .num_value_channels = 6, .output_size = 5, .attention_mask = "causal", .name = "sa"}), x);
    static const char *const names[8] = {"QueryWeights", "QueryBias", "KeyWeights", "KeyBias",
                                         "ValueWeights", "ValueBias", "OutputWeights",
                                         "OutputBias"};
    static const int64_t rows[8] = {4, 4, 4, 4, 6, 6, 5, 5}, cols[8] = {3, 1, 3, 1, 3, 1, 6, 1};
    dla_tensor *p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = set_ramp(net, "sa", names[i], 0.05 * (i + 1), -0.3);
        assert_int_equal(dla_tensor_dim(p[i], 1), rows[i]);
        assert_int_equal(dla_tensor_dim(p[i], 2), cols[i]);
    }
    dla_tensor *att = dla_attention(dla_fullyconnect(x, p[0], p[1]), dla_fullyconnect(x, p[2], p[3]),
                                    dla_fullyconnect(x, p[4], p[5]), 2,
                                    &(dla_attention_options){.attention_mask = "causal"}, NULL);
    dla_tensor *want = dla_fullyconnect(att, p[6], p[7]);
    assert_same(predict1(net, x), want);
    assert_same(forward1(net, x), want);
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "2 heads, 4 key and 6 value channels, causal"));
    dla_net_free(net);
    /* The default output size is the input's channels. */
    net = one(dla_self_attention_layer(1, 2, NULL), x);
    assert_int_equal(dla_tensor_dim(predict1(net, x), 1), 3);
    dla_net_free(net);
    /* DropoutProbability (MATLAB's): the weights dropped in training, as
     * dla_attention's option with the same draws, never in predict. */
    net = one(dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
        .num_value_channels = 6, .output_size = 5, .attention_mask = "causal", .name = "sa",
        .dropout_probability = 0.5}), x);
    for (int i = 0; i < 8; i++)
        p[i] = set_ramp(net, "sa", names[i], 0.05 * (i + 1), -0.3);
    assert_same(predict1(net, x), want);
    dla_rng_seed(31);
    dla_tensor *trained = forward1(net, x);
    dla_rng_seed(31);
    dla_tensor *dropped = dla_attention(
        dla_fullyconnect(x, p[0], p[1]), dla_fullyconnect(x, p[2], p[3]),
        dla_fullyconnect(x, p[4], p[5]), 2,
        &(dla_attention_options){.attention_mask = "causal", .dropout_probability = 0.5}, NULL);
    assert_same(trained, dla_fullyconnect(dropped, p[6], p[7]));
    assert_true(maxdiff(trained, want) > 0.01);
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "causal, dropout 0.5"));
    dla_net_free(net);
    dla_layer *high = dla_self_attention_layer(
        1, 2, &(dla_self_attention_layer_options){.name = "d", .dropout_probability = 1});
    assert_null(dla_net_create(1, &high));
    assert_non_null(strstr(dla_last_error(), "selfAttention 'd': DropoutProbability 1 must be in "
                                             "[0, 1)"));
    dla_layer *bad = dla_self_attention_layer(3, 4, &(dla_self_attention_layer_options){.name = "h"});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "selfAttention 'h': NumHeads 3 must divide "
                                             "NumKeyChannels (4) and NumValueChannels (4)"));
    dla_layer *img = dla_self_attention_layer(1, 2, NULL);
    dla_net *on_images = dla_net_create(1, &img);
    assert_non_null(on_images);
    dla_tensor *im = dla_zeros(DLA_F64, "SSCB", DLA_DIMS(2, 2, 3, 1));
    assert_int_not_equal(dla_net_init(on_images, 1, &im), DLA_OK);
    assert_non_null(strstr(dla_last_error(), "selfAttention takes \"CBT\" sequences"));
    dla_net_free(on_images);
    dla_scope_end();
}

static void conv1d_convolves_along_time_and_causal_pads_before(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 9), 0.2, -0.7);
    dla_net *net = one(dla_conv1d_layer(3, 5, &(dla_conv_layer_options){
        .padding_mode = "causal", .dilation = {2}, .name = "c"}), x);
    dla_tensor *w = set_ramp(net, "c", "Weights", 0.1, -0.3), *b = set_ramp(net, "c", "Bias", 1, 0);
    assert_int_equal(dla_tensor_dim(b, 2), 5);
    dla_tensor *want = dla_conv(x, w, b, &(dla_conv_options){.dilation = {2}, .padding = {{4}, {0}}});
    dla_tensor *y = predict1(net, x);
    assert_same(y, want);
    assert_int_equal(dla_tensor_dim(y, 3), 9);
    assert_string_equal(dla_tensor_format(y), "CBT");
    dla_net_free(net);
    dla_scope_end();
}

/* One convolution layer named "c" on an image sequence x (its labels end
 * in "T"): every time step is convolved alone over the "S" dims, as
 * MATLAB's convolution layers take "SCBT", "SSCBT" and "SSSCBT" data, in
 * predict and forward, with the layer's weights and bias through
 * dla_conv (or dla_transpconv) of that step's slice; its gradients in the
 * learnables are checked against central differences. */
static void check_steps_alone(dla_layer *l, dla_tensor *x, int transposed,
                              const dla_conv_options *o)
{
    dla_net *net = one(l, x);
    dla_tensor *w = set_ramp(net, "c", "Weights", 0.05, -0.3);
    dla_tensor *b = set_ramp(net, "c", "Bias", 0.5, -0.2);
    dla_tensor *y = predict1(net, x);
    assert_same(forward1(net, x), y);
    const char *f = dla_tensor_format(x);
    assert_string_equal(dla_tensor_format(y), f);
    const int nd = dla_tensor_ndims(x), tdim = dla_tensor_find_dim(x, 'T');
    assert_int_equal(tdim, nd);
    assert_int_equal(dla_tensor_dim(y, tdim), dla_tensor_dim(x, tdim));
    char step_fmt[DLA_MAX_DIMS + 1];
    snprintf(step_fmt, sizeof step_fmt, "%.*s", nd - 1, f);
    for (int64_t t = 0; t < dla_tensor_dim(x, tdim); t++) {
        int64_t xd[DLA_MAX_DIMS], yd[DLA_MAX_DIMS];
        dla_tensor_dims(x, xd);
        dla_tensor_dims(y, yd);
        dla_tensor *xs = dla_reshape(dla_slice(x, tdim, t, 1, t + 1), step_fmt, nd - 1, xd);
        dla_tensor *ys = dla_reshape(dla_slice(y, tdim, t, 1, t + 1), step_fmt, nd - 1, yd);
        dla_tensor *want = (transposed ? dla_transpconv : dla_conv)(xs, w, b, o);
        if (!(maxdiff(ys, want) <= 1e-12))
            fail_msg("%s: time step %lld differs from its own convolution by %g", f,
                     (long long)t, maxdiff(ys, want));
    }
    dla_tensor *const in[2] = {w, b};
    gc_check(gc_run_net, &(gc_net){net, x, 1}, 2, in, (int[]){1, 1}, 1e-6);
    dla_net_free(net);
}

static void conv_layers_convolve_each_step_of_an_image_sequence(void **state)
{
    (void)state;
    dla_scope_begin();
    /* Before, the layers took these inputs at initialization and then
     * failed there in dla_conv: "needs one C dim, at most one B dim and
     * 1-3 S dims (or one T dim without S)". */
    dla_conv_options o1 = {.stride = {2}, .padding = {{2}, {0}}};
    check_steps_alone(dla_conv1d_layer(3, 4, &(dla_conv_layer_options){
                          .stride = {2}, .padding_mode = "causal", .name = "c"}),
                      ramp(DLA_F64, "SCBT", DLA_DIMS(7, 2, 3, 4), 0.2, -0.7), 0, &o1);
    dla_conv_options o2 = {.stride = {1, 2}, .dilation = {2, 1}, .padding_mode = "same"};
    check_steps_alone(dla_conv2d_layer(2, 3, 3, &(dla_conv_layer_options){
                          .stride = {1, 2}, .dilation = {2, 1}, .padding_mode = "same",
                          .name = "c"}),
                      ramp(DLA_F64, "SSCBT", DLA_DIMS(5, 6, 2, 2, 3), 0.3, -1), 0, &o2);
    /* Without a "B" dim: the steps are the batch. */
    dla_conv_options o3 = {.padding = {{1, 0, 1}, {0, 1, 0}}};
    check_steps_alone(dla_conv3d_layer(2, 2, 2, 2, &(dla_conv_layer_options){
                          .padding = {1, 0, 0, 1, 1, 0}, .name = "c"}),
                      ramp(DLA_F64, "SSSCT", DLA_DIMS(3, 4, 3, 2, 3), 0.1, -0.4), 0, &o3);
    dla_conv_options og = {0};
    check_steps_alone(dla_grouped_conv2d_layer(2, 2, 2, DLA_CHANNEL_WISE,
                                               &(dla_conv_layer_options){.name = "c"}),
                      ramp(DLA_F64, "SSCBT", DLA_DIMS(4, 3, 3, 2, 2), 0.4, -0.9), 0, &og);
    dla_conv_options ot = {.stride = {2, 3}, .padding_mode = "same"};
    check_steps_alone(dla_transposed_conv2d_layer(3, 2, 2, &(dla_transposed_conv_layer_options){
                          .stride = {2, 3}, .cropping_mode = "same", .name = "c"}),
                      ramp(DLA_F64, "SSCBT", DLA_DIMS(3, 2, 3, 2, 2), 0.2, -0.3), 1, &ot);
    dla_conv_options ot1 = {.stride = {2}, .padding = {{1}, {0}}};
    check_steps_alone(dla_transposed_conv1d_layer(3, 2, &(dla_transposed_conv_layer_options){
                          .stride = {2}, .cropping = {1, 0}, .name = "c"}),
                      ramp(DLA_F64, "SCT", DLA_DIMS(4, 3, 5), 0.6, -1.1), 1, &ot1);
    /* A filter longer than the steps: dla_conv's words, and what the
     * input was before its steps joined the batch. */
    dla_layer *l = dla_conv1d_layer(9, 2, &(dla_conv_layer_options){.name = "c"});
    dla_net *bad = dla_net_create(1, &l);
    dla_tensor *x = ramp(DLA_F64, "SCBT", DLA_DIMS(7, 2, 3, 4), 0.2, -0.7);
    assert_int_equal(dla_net_init(bad, 1, &x), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "a filter spanning 9 elements does not fit"));
    assert_non_null(strstr(dla_last_error(), "(the input, 7x2x3x4 SCBT, with each time step "
                                             "taken as an observation)"));
    dla_net_free(bad);
    dla_scope_end();
}

/* The permutations between spatio-temporal layouts and images of S.. x T
 * (T after the "S" dims, labeled "S"), written out per format rather than
 * derived as the pooling layer derives them, so a wrong rule there cannot
 * hide in the same rule here. to_images: y dim i is x dim order[i]. */
static const struct st_layout {
    const char *st, *images;
    int64_t to_images[5], back[5];
} st_layouts[] = {
    {"SCBT", "SSCB", {1, 4, 2, 3}, {1, 3, 4, 2}},
    {"SCT", "SSC", {1, 3, 2}, {1, 3, 2}},
    {"SSCBT", "SSSCB", {1, 2, 5, 3, 4}, {1, 2, 4, 5, 3}},
    {"SSCT", "SSSC", {1, 2, 4, 3}, {1, 2, 4, 3}},
};

static const struct st_layout *st_layout_of(const char *st)
{
    for (size_t i = 0; i < sizeof st_layouts / sizeof st_layouts[0]; i++)
        if (!strcmp(st_layouts[i].st, st))
            return &st_layouts[i];
    fail_msg("no spatio-temporal layout \"%s\" in the test's table", st);
    return NULL;
}

/* x permuted by order and labeled f; y's dims past its own are 1. */
static dla_tensor *permuted_as(dla_tensor *x, const int64_t *order, const char *f)
{
    int64_t d[DLA_MAX_DIMS], pd[DLA_MAX_DIMS];
    const int n = (int)strlen(f);
    for (int i = dla_tensor_dims(x, d); i < n; i++)
        d[i] = 1;
    for (int i = 0; i < n; i++)
        pd[i] = d[order[i] - 1];
    return dla_reshape(dla_permute(dla_reshape(x, "", n, d), n, order), f, n, pd);
}

/* Spatio-temporal x (S.., C, [B,] T) as images of S.. x T. */
static dla_tensor *st_images(dla_tensor *x)
{
    const struct st_layout *l = st_layout_of(dla_tensor_format(x));
    return permuted_as(x, l->to_images, l->images);
}

/* Images y (S'.., T', C, [B]) back in the layout and labels xf. */
static dla_tensor *st_back(dla_tensor *y, const char *xf)
{
    const struct st_layout *l = st_layout_of(xf);
    return permuted_as(y, l->back, xf);
}

/* A 2-D or 3-D convolution layer named "c" on spatio-temporal data x
 * ("SCBT", "SCT"; "SSCBT"): convolved over the "S" dims and "T" (the
 * filter's last dim), as MATLAB's layers take it, against dla_conv (or
 * dla_transpconv) of x permuted to images (T after the "S" dims) and the
 * result permuted back; finite-difference gradients in the learnables. */
static void check_spatio_temporal(dla_layer *l, dla_tensor *x, int transposed,
                                  const dla_conv_options *o)
{
    dla_net *net = one(l, x);
    dla_tensor *w = set_ramp(net, "c", "Weights", 0.05, -0.3);
    dla_tensor *b = set_ramp(net, "c", "Bias", 0.5, -0.2);
    dla_tensor *y = predict1(net, x);
    assert_same(forward1(net, x), y);
    const char *f = dla_tensor_format(x);
    assert_string_equal(dla_tensor_format(y), f);
    dla_tensor *want = (transposed ? dla_transpconv : dla_conv)(st_images(x), w, b, o);
    assert_int_equal(dla_tensor_status(want), DLA_OK);
    dla_tensor *back = st_back(want, f);
    for (int i = 1; i <= dla_tensor_ndims(x); i++)
        assert_int_equal(dla_tensor_dim(y, i), dla_tensor_dim(back, i));
    if (!(maxdiff(y, back) <= 1e-12))
        fail_msg("%s: differs from the permuted convolution by %g", f, maxdiff(y, back));
    dla_tensor *const in[2] = {w, b};
    gc_check(gc_run_net, &(gc_net){net, x, 1}, 2, in, (int[]){1, 1}, 1e-6);
    dla_net_free(net);
}

static void two_d_conv_layers_convolve_over_s_and_t_of_spatio_temporal_data(void **state)
{
    (void)state;
    dla_scope_begin();
    /* Before, "SCBT" was refused at initialization: "convolution2d needs
     * two "S" dims and a "C" dim". */
    dla_conv_options o = {.stride = {2, 1}, .dilation = {1, 2}, .padding = {{1, 0}, {0, 2}}};
    check_spatio_temporal(dla_conv2d_layer(3, 2, 3, &(dla_conv_layer_options){
                              .stride = {2, 1}, .dilation = {1, 2}, .padding = {1, 0, 0, 2},
                              .name = "c"}),
                          ramp(DLA_F64, "SCBT", DLA_DIMS(7, 2, 3, 6), 0.2, -0.7), 0, &o);
    dla_conv_options og = {.stride = {1, 2}, .padding_mode = "same"};
    check_spatio_temporal(dla_grouped_conv2d_layer(2, 3, 2, 2, &(dla_conv_layer_options){
                              .stride = {1, 2}, .padding_mode = "same", .name = "c"}),
                          ramp(DLA_F64, "SCT", DLA_DIMS(5, 4, 7), 0.3, -1), 0, &og);
    dla_conv_options ot = {.stride = {2, 3}, .padding = {{1, 0}, {0, 1}}};
    check_spatio_temporal(dla_transposed_conv2d_layer(3, 2, 2, &(dla_transposed_conv_layer_options){
                              .stride = {2, 3}, .cropping = {1, 0, 0, 1}, .name = "c"}),
                          ramp(DLA_F64, "SCBT", DLA_DIMS(3, 2, 2, 4), 0.2, -0.3), 1, &ot);
    /* 3-D: "SSCBT" over S, S and T (the filter's depth). */
    dla_conv_options o3 = {.stride = {1, 2, 2}, .padding = {{1, 0, 1}, {0, 1, 0}}};
    check_spatio_temporal(dla_conv3d_layer(2, 2, 3, 2, &(dla_conv_layer_options){
                              .stride = {1, 2, 2}, .padding = {1, 0, 0, 1, 1, 0}, .name = "c"}),
                          ramp(DLA_F64, "SSCBT", DLA_DIMS(4, 5, 2, 2, 6), 0.1, -0.4), 0, &o3);
    /* A 3-D layer still refuses one "S" dim and "T". */
    dla_layer *l = dla_conv3d_layer(2, 2, 2, 2, NULL);
    dla_net *bad = dla_net_create(1, &l);
    dla_tensor *x = ramp(DLA_F64, "SCBT", DLA_DIMS(4, 2, 3, 4), 0.2, -0.7);
    assert_int_equal(dla_net_init(bad, 1, &x), DLA_ERR_FORMAT);
    dla_net_free(bad);
    dla_scope_end();
}

static void batchnorm_forward_uses_the_batch_and_predict_the_stored_statistics(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 2, 2, 4), 0.5, -1);
    dla_net *net = one(dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn", .epsilon = 1e-3}), x);
    dla_tensor *off = set_ramp(net, "bn", "Offset", 1, -0.5), *sc = set_ramp(net, "bn", "Scale", 0.5, 1);
    dla_tensor *rm = set_ramp(net, "bn", "TrainedMean", 0.2, 0.1);
    dla_tensor *rv = set_ramp(net, "bn", "TrainedVariance", 0.3, 0.5);
    assert_int_equal(dla_tensor_dim(off, 3), 2);
    dla_batchnorm_options o = {.epsilon = 1e-3};
    assert_same(predict1(net, x), dla_batchnorm(x, off, sc, rm, rv, &o));
    dla_tensor *y, *state_out[2], *wy, *wm, *wv;
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, state_out, NULL), DLA_OK);
    assert_int_equal(dla_batchnorm_train(x, off, sc, rm, rv, &o, &wy, &wm, &wv), DLA_OK);
    assert_same(y, wy);
    assert_same(state_out[0], wm);
    assert_same(state_out[1], wv);
    /* The network keeps its statistics until told otherwise. */
    assert_true(maxdiff(dla_net_get(net, "bn", "TrainedMean"), rm) == 0);
    assert_int_equal(dla_net_set_state(net, 2, state_out), DLA_OK);
    assert_true(maxdiff(dla_net_get(net, "bn", "TrainedMean"), wm) == 0);
    assert_same(predict1(net, x), dla_batchnorm(x, off, sc, wm, wv, &o));
    dla_net_free(net);
    dla_scope_end();
}

static void activations_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(4, 3, 5, 2), 0.4, -2);
    dla_net *r = one(dla_relu_layer(NULL), x);
    assert_same(predict1(r, x), dla_relu(x));
    dla_net *lr = one(dla_leakyrelu_layer(0.2, NULL), x);
    assert_same(forward1(lr, x), dla_leakyrelu(x, 0.2));
    dla_net *sm = one(dla_softmax_layer(NULL), x);
    assert_same(predict1(sm, x), dla_softmax(x));
    /* Dropout: the op's mask in forward (same seed), the identity in predict. */
    dla_net *d = one(dla_dropout_layer(0.3, NULL), x);
    dla_rng_seed(7);
    dla_tensor *yd = forward1(d, x);
    dla_rng_seed(7);
    assert_same(yd, dla_dropout(x, 0.3));
    assert_same(predict1(d, x), x);
    dla_net_free(r);
    dla_net_free(lr);
    dla_net_free(sm);
    dla_net_free(d);
    dla_scope_end();
}

static void smooth_activations_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(4, 3, 5, 2), 0.4, -2);
    dla_net *n[6] = {one(dla_tanh_layer(NULL), x), one(dla_sigmoid_layer(NULL), x),
                     one(dla_swish_layer(NULL), x), one(dla_elu_layer(0.5, NULL), x),
                     one(dla_gelu_layer(NULL, NULL), x), one(dla_gelu_layer("tanh", NULL), x)};
    dla_tensor *want[6] = {dla_tanh(x), dla_sigmoid(x), dla_mul(x, dla_sigmoid(x)),
                           dla_elu(x, 0.5), dla_gelu(x, NULL), dla_gelu(x, "tanh")};
    for (int i = 0; i < 6; i++) {
        assert_same(predict1(n[i], x), want[i]);
        assert_same(forward1(n[i], x), want[i]);
        dla_net_free(n[i]);
    }
    /* Options refused with the layer's and the option's names. */
    dla_layer *bad = dla_gelu_layer("erf", &(dla_layer_options){.name = "g"});
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "gelu 'g': Approximation \"erf\""));
    dla_layer_free(bad);
    bad = dla_elu_layer(NAN, NULL);
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    dla_layer_free(bad);
    dla_scope_end();
}

/* Layer, group and instance normalization: each observation by its own
 * statistics, the same in forward and predict, with Offset and Scale of
 * batch normalization's dims. */
static void per_observation_normalizations_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 2, 4, 3), 0.5, -1);
    dla_norm_layer_options o = {.name = "n", .epsilon = 1e-3};
    dla_net *ln = one(dla_layernorm_layer(&o), x);
    dla_net *gn = one(dla_groupnorm_layer(2, &o), x);
    dla_net *in = one(dla_instancenorm_layer(&o), x);
    dla_net *nets[3] = {ln, gn, in};
    dla_tensor *off[3], *sc[3];
    for (int i = 0; i < 3; i++) {
        off[i] = set_ramp(nets[i], "n", "Offset", 1, -0.5);
        sc[i] = set_ramp(nets[i], "n", "Scale", 0.5, 1);
        assert_int_equal(dla_tensor_ndims(off[i]), 3); /* 1x1xC after SSCB */
        assert_int_equal(dla_tensor_dim(off[i], 3), 4);
        assert_int_equal(dla_net_learnable_count(nets[i]), 2);
    }
    dla_norm_options no = {.epsilon = 1e-3};
    dla_tensor *want[3] = {dla_layernorm(x, off[0], sc[0], &(dla_norm_options){
                                                                .epsilon = 1e-3,
                                                                .operation_dimension = "auto"}),
                           dla_groupnorm(x, 2, off[1], sc[1], &no),
                           dla_instancenorm(x, off[2], sc[2], &no)};
    for (int i = 0; i < 3; i++) {
        assert_same(predict1(nets[i], x), want[i]);
        assert_same(forward1(nets[i], x), want[i]);
        dla_net_free(nets[i]);
    }
    /* A sequence: Cx1 parameters, and "auto" normalizes over C alone. */
    dla_tensor *s = ramp(DLA_F64, "CBT", DLA_DIMS(4, 2, 5), 0.3, -1);
    dla_net *ls = one(dla_layernorm_layer(&o), s);
    dla_tensor *so = set_ramp(ls, "n", "Offset", 1, 0), *ss = set_ramp(ls, "n", "Scale", 1, 1);
    assert_int_equal(dla_tensor_dim(so, 1), 4);
    assert_int_equal(dla_tensor_dim(so, 2), 1);
    assert_same(predict1(ls, s), dla_layernorm(s, so, ss, &(dla_norm_options){
                                                          .epsilon = 1e-3,
                                                          .operation_dimension = "channel-only"}));
    dla_net_free(ls);
    /* 3 groups of 4 channels: refused when the network is made. */
    dla_layer *g3 = dla_groupnorm_layer(3, NULL);
    dla_net *bad = dla_net_create(1, &g3);
    assert_non_null(bad);
    assert_int_not_equal(dla_net_init(bad, 1, &x), DLA_OK);
    assert_non_null(strstr(dla_last_error(), "NumGroups 3 does not divide the input's 4 channels"));
    dla_net_free(bad);
    /* Instance normalization of "CB" data has nothing to normalize over:
     * each value was its own mean, every output Offset; refused. */
    dla_layer *inorm = dla_instancenorm_layer(&(dla_norm_layer_options){.name = "in"});
    bad = dla_net_create(1, &inorm);
    assert_non_null(bad);
    dla_tensor *cb = ramp(DLA_F64, "CB", DLA_DIMS(4, 3), 1, -2);
    assert_int_equal(dla_net_init(bad, 1, &cb), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "layer 'in' (Instance Normalization): the input is "
                                             "\"CB\"; instance normalization needs an \"S\" or "
                                             "\"T\" dim"));
    dla_net_free(bad);
    dla_layer *lbad = dla_layernorm_layer(&(dla_norm_layer_options){.operation_dimension = "all"});
    assert_int_equal(dla_layer_status(lbad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "OperationDimension \"all\""));
    dla_layer_free(lbad);
    dla_scope_end();
}

static void pooling_layers_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(6, 5, 2, 2), 0.7, -3);
    dla_net *mp = one(dla_maxpool2d_layer(2, 3, &(dla_pool_layer_options){.stride = {2, 1}}), x);
    assert_same(predict1(mp, x), dla_maxpool(x, DLA_DIMS(2, 3), &(dla_pool_options){.stride = {2, 1}}));
    dla_net *ap = one(dla_avgpool2d_layer(3, 3, &(dla_pool_layer_options){
        .stride = {2, 2}, .padding_mode = "same", .padding_value = "mean"}), x);
    assert_same(forward1(ap, x), dla_avgpool(x, DLA_DIMS(3, 3), &(dla_pool_options){
        .stride = {2, 2}, .padding_mode = "same", .padding_value = "mean"}));
    dla_net *g2 = one(dla_global_avgpool2d_layer(NULL), x);
    assert_same(predict1(g2, x), dla_global_avgpool(x));
    dla_net *gm2 = one(dla_global_maxpool2d_layer(NULL), x);
    assert_same(predict1(gm2, x), dla_global_maxpool(x));
    /* 1-D over "T": the time dim goes, "CB" remains. */
    dla_tensor *s = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 7), 0.3, -1);
    dla_net *g1 = one(dla_global_maxpool1d_layer(NULL), s);
    dla_tensor *y = predict1(g1, s);
    assert_string_equal(dla_tensor_format(y), "CB");
    assert_true(maxdiff(y, dla_global_maxpool(s)) == 0);
    dla_net *a1 = one(dla_global_avgpool1d_layer(NULL), s);
    assert_true(maxdiff(predict1(a1, s), dla_global_avgpool(s)) < 1e-12);
    /* 1-D image sequences ("SCBT"), as MATLAB's: "S" pooled, each step
     * alone, "S" kept with size 1 (as for "SCB"). They were refused at
     * initialization: "1-D global pooling needs one "S" or one "T" dim". */
    dla_tensor *st = ramp(DLA_F64, "SCBT", DLA_DIMS(5, 3, 2, 4), 0.4, -2);
    dla_net *gs = one(dla_global_maxpool1d_layer(NULL), st);
    y = predict1(gs, st);
    assert_string_equal(dla_tensor_format(y), "SCBT");
    assert_int_equal(dla_tensor_dim(y, 1), 1);
    assert_int_equal(dla_tensor_dim(y, 4), 4);
    double *sh = malloc(sizeof *sh * 5 * 3 * 2 * 4), *yh = malloc(sizeof *yh * 3 * 2 * 4);
    assert_int_equal(dla_tensor_to_host(st, sh, sizeof *sh * 5 * 3 * 2 * 4), DLA_OK);
    assert_int_equal(dla_tensor_to_host(y, yh, sizeof *yh * 3 * 2 * 4), DLA_OK);
    for (int q = 0; q < 3 * 2 * 4; q++) { /* (channel, observation, step) */
        double m = -INFINITY;
        for (int i = 0; i < 5; i++)
            m = fmax(m, sh[i + 5 * q]);
        tu_assert_near(yh[q], m, 0);
    }
    dla_net *as = one(dla_global_avgpool1d_layer(NULL), st);
    y = forward1(as, st);
    assert_string_equal(dla_tensor_format(y), "SCBT");
    assert_int_equal(dla_tensor_to_host(y, yh, sizeof *yh * 3 * 2 * 4), DLA_OK);
    for (int q = 0; q < 3 * 2 * 4; q++) {
        double m = 0;
        for (int i = 0; i < 5; i++)
            m += sh[i + 5 * q] / 5;
        tu_assert_near(yh[q], m, 1e-13);
    }
    free(sh);
    free(yh);
    dla_net *nets[] = {mp, ap, g2, gm2, g1, a1, gs, as};
    for (int i = 0; i < 8; i++)
        dla_net_free(nets[i]);
    dla_scope_end();
}

/* 2-D pooling layers on spatio-temporal data ("SCBT", "SCT"), as MATLAB's:
 * over "S" (the pool's height) and "T" (its width), against the op on x
 * permuted to images of S x T, element by element; the global ones give
 * "SCB" (S of size 1, T dropped); a 3-D one on "SSCT", over S, S and T.
 * They were refused at initialization ("2-D pooling needs two "S" dims"). */
static void two_d_pooling_layers_pool_over_s_and_t_of_spatio_temporal_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SCBT", DLA_DIMS(7, 2, 3, 6), 0.7, -3);
    dla_pool_options o = {.stride = {2, 1}, .padding = {{1, 0}, {0, 1}}};
    dla_net *mp = one(dla_maxpool2d_layer(3, 2, &(dla_pool_layer_options){
        .stride = {2, 1}, .padding = {1, 0, 0, 1}}), x);
    dla_tensor *y = predict1(mp, x);
    assert_string_equal(dla_tensor_format(y), "SCBT");
    dla_tensor *want = dla_maxpool(st_images(x), DLA_DIMS(3, 2), &o); /* S' x T' x C x B */
    const int64_t so = dla_tensor_dim(want, 1), to = dla_tensor_dim(want, 2);
    assert_int_equal(so, 3); /* (7 + 1 - 3) / 2 + 1 */
    assert_int_equal(to, 6); /* (6 + 1 - 2) / 1 + 1 */
    assert_int_equal(dla_tensor_dim(y, 1), so);
    assert_int_equal(dla_tensor_dim(y, 4), to);
    for (int64_t i = 0; i < so; i++)
        for (int64_t t = 0; t < to; t++)
            for (int64_t q = 0; q < 2 * 3; q++) /* channel + 2 * observation */
                tu_assert_near(dla_tensor_item(y, i + so * (q + 6 * t)),
                               dla_tensor_item(want, i + so * (t + to * q)), 0);
    dla_tensor *s = ramp(DLA_F64, "SCT", DLA_DIMS(5, 2, 7), 0.3, -1);
    dla_pool_options oa = {.stride = {1, 2}, .padding_mode = "same", .padding_value = "mean"};
    dla_net *ap = one(dla_avgpool2d_layer(2, 3, &(dla_pool_layer_options){
        .stride = {1, 2}, .padding_mode = "same", .padding_value = "mean"}), s);
    y = forward1(ap, s);
    assert_string_equal(dla_tensor_format(y), "SCT");
    want = dla_avgpool(st_images(s), DLA_DIMS(2, 3), &oa); /* 5 x 4 x 2 */
    assert_int_equal(dla_tensor_dim(y, 3), 4);
    for (int64_t i = 0; i < 5; i++)
        for (int64_t t = 0; t < 4; t++)
            for (int64_t c = 0; c < 2; c++)
                tu_assert_near(dla_tensor_item(y, i + 5 * (c + 2 * t)),
                               dla_tensor_item(want, i + 5 * (t + 4 * c)), 1e-14);
    /* 3-D on "SSCT": over S, S and T. */
    dla_tensor *v = ramp(DLA_F64, "SSCT", DLA_DIMS(4, 5, 2, 6), 0.9, -2);
    dla_pool_options o3 = {.stride = {1, 2, 2}, .padding = {{1, 0, 0}, {0, 1, 1}}};
    dla_net *m3 = one(dla_maxpool3d_layer(2, 2, 3, &(dla_pool_layer_options){
        .stride = {1, 2, 2}, .padding = {1, 0, 0, 1, 0, 1}}), v);
    y = predict1(m3, v);
    assert_string_equal(dla_tensor_format(y), "SSCT");
    want = st_back(dla_maxpool(st_images(v), DLA_DIMS(2, 2, 3), &o3), "SSCT");
    for (int i = 1; i <= 4; i++)
        assert_int_equal(dla_tensor_dim(y, i), dla_tensor_dim(want, i));
    assert_true(maxdiff(y, want) == 0);
    dla_net_free(m3);
    dla_net *gm = one(dla_global_maxpool2d_layer(NULL), x);
    dla_net *ga = one(dla_global_avgpool2d_layer(NULL), x);
    dla_tensor *ym = predict1(gm, x), *ya = predict1(ga, x);
    assert_string_equal(dla_tensor_format(ym), "SCB");
    assert_string_equal(dla_tensor_format(ya), "SCB");
    assert_int_equal(dla_tensor_dim(ym, 1), 1);
    assert_int_equal(dla_tensor_dim(ym, 2), 2);
    assert_int_equal(dla_tensor_dim(ym, 3), 3);
    for (int64_t q = 0; q < 6; q++) {
        double m = -INFINITY, sum = 0;
        for (int64_t t = 0; t < 6; t++)
            for (int64_t i = 0; i < 7; i++) {
                const double v = dla_tensor_item(x, i + 7 * (q + 6 * t));
                m = fmax(m, v);
                sum += v;
            }
        tu_assert_near(dla_tensor_item(ym, q), m, 0);
        tu_assert_near(dla_tensor_item(ya, q), sum / 42, 1e-13);
    }
    dla_net *nets[] = {mp, ap, gm, ga};
    for (int i = 0; i < 4; i++)
        dla_net_free(nets[i]);
    dla_scope_end();
}

/* maxPooling1dLayer and averagePooling1dLayer: over "T" of "CBT" data,
 * over "S" of "SCB" and "SCBT" data (each time step alone), the op's bits
 * each time; 2-D data and bad options refused by name. */
static void one_d_pooling_layers_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *s = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 9), 0.7, -3);
    dla_net *mt = one(dla_maxpool1d_layer(3, &(dla_pool1d_layer_options){
        .stride = 2, .padding = {1, 0}}), s);
    dla_tensor *y = predict1(mt, s);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dim(y, 3), 4); /* floor((9 + 1 - 3) / 2) + 1 */
    assert_same(y, dla_maxpool(s, DLA_DIMS(3), &(dla_pool_options){
        .stride = {2}, .padding = {{1}, {0}}}));
    dla_tensor *x = ramp(DLA_F64, "SCB", DLA_DIMS(7, 2, 3), 0.3, -1);
    dla_net *as = one(dla_avgpool1d_layer(2, &(dla_pool1d_layer_options){
        .stride = 2, .padding_mode = "same", .padding_value = "mean"}), x);
    y = forward1(as, x);
    assert_int_equal(dla_tensor_dim(y, 1), 4); /* ceil(7 / 2) */
    assert_same(y, dla_avgpool(x, DLA_DIMS(2), &(dla_pool_options){
        .stride = {2}, .padding_mode = "same", .padding_value = "mean"}));
    /* "SCBT": S pooled, every time step alone. */
    dla_tensor *st = ramp(DLA_F64, "SCBT", DLA_DIMS(6, 2, 2, 3), 0.9, -5);
    dla_net *mst = one(dla_maxpool1d_layer(2, &(dla_pool1d_layer_options){.stride = 2}), st);
    y = predict1(mst, st);
    assert_string_equal(dla_tensor_format(y), "SCBT");
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    assert_int_equal(dla_tensor_dim(y, 4), 3);
    assert_same(y, dla_maxpool(st, DLA_DIMS(2), &(dla_pool_options){.stride = {2}}));
    /* Images with two "S" dims and features without "S" or "T". */
    dla_layer *l = dla_maxpool1d_layer(2, &(dla_pool1d_layer_options){.name = "p"});
    dla_net *bad = dla_net_create(1, &l);
    dla_tensor *img = ramp(DLA_F64, "SSCB", DLA_DIMS(4, 4, 1, 1), 1, 0);
    assert_int_equal(dla_net_init(bad, 1, &img), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "layer 'p' (1-D Max Pooling): the input is "
                                             "\"SSCB\"; 1-D pooling needs one \"S\" dim, or a "
                                             "\"T\" dim and no \"S\" dim"));
    dla_net_free(bad);
    l = dla_avgpool1d_layer(2, NULL);
    bad = dla_net_create(1, &l);
    dla_tensor *cb = ramp(DLA_F64, "CB", DLA_DIMS(4, 3), 1, 0);
    assert_int_equal(dla_net_init(bad, 1, &cb), DLA_ERR_FORMAT);
    dla_net_free(bad);
    l = dla_maxpool1d_layer(2, &(dla_pool1d_layer_options){.padding = {0, 2}});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "Padding 2 must be >= 0, smaller than the pool"));
    dla_layer_free(l);
    l = dla_maxpool1d_layer(0, NULL);
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "PoolSize 0 and Stride 1 (dim 1) must be in 1..2^20"));
    dla_layer_free(l);
    l = dla_maxpool1d_layer(2, &(dla_pool1d_layer_options){.padding_value = "mean"});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "maxPooling1d: PaddingValue is for average pooling"));
    dla_layer_free(l);
    l = dla_avgpool1d_layer(2, &(dla_pool1d_layer_options){.padding_mode = "causal"});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "padding mode \"causal\"; use \"same\" or numbers"));
    dla_layer_free(l);
    dla_net *nets[] = {mt, as, mst};
    for (int i = 0; i < 3; i++)
        dla_net_free(nets[i]);
    dla_scope_end();
}

/* groupedConvolution2dLayer: MATLAB's weight and bias layouts, dla_conv's
 * bits with groups and channel-wise (one filter or two per channel), the
 * summary, and inputs the groups do not fit refused by name. */
static void grouped_convolution_layer_is_dla_conv_with_groups(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(6, 5, 4, 2), 0.3, -2);
    dla_net *g2 = one(dla_grouped_conv2d_layer(3, 3, 3, 2, &(dla_conv_layer_options){
        .padding_mode = "same", .name = "g"}), x);
    dla_tensor *w = set_ramp(g2, "g", "Weights", 0.05, -0.7), *b = set_ramp(g2, "g", "Bias", 1, 0);
    int64_t d[DLA_MAX_DIMS];
    assert_int_equal(dla_tensor_dims(w, d), 5);
    assert_int_equal(d[2], 2); /* channels per group */
    assert_int_equal(d[3], 3); /* filters per group */
    assert_int_equal(d[4], 2); /* groups */
    assert_int_equal(dla_tensor_dims(b, d), 4);
    assert_int_equal(d[2] * d[3], 6);
    dla_tensor *y = predict1(g2, x);
    assert_int_equal(dla_tensor_dim(y, 3), 6);
    assert_same(y, dla_conv(x, w, b, &(dla_conv_options){.padding_mode = "same"}));
    char sum[2048];
    dla_net_summary(g2, sum, sizeof sum);
    assert_non_null(strstr(sum, "2-D Grouped Convolution"));
    assert_non_null(strstr(sum, "2 groups of 3 3x3x2 convolutions with stride [1 1] and padding "
                                "'same'"));
    /* Channel-wise with a multiplier of 2, strided: 8 channels out. */
    dla_net *cw = one(dla_grouped_conv2d_layer(2, 3, 2, DLA_CHANNEL_WISE, &(dla_conv_layer_options){
        .stride = {2, 1}, .name = "dw"}), x);
    w = set_ramp(cw, "dw", "Weights", -0.1, 0.4);
    b = set_ramp(cw, "dw", "Bias", 0.5, -1);
    assert_int_equal(dla_tensor_dims(w, d), 5);
    assert_int_equal(d[2], 1);
    assert_int_equal(d[4], 4);
    y = forward1(cw, x);
    assert_int_equal(dla_tensor_dim(y, 3), 8);
    assert_same(y, dla_conv(x, w, b, &(dla_conv_options){.stride = {2, 1}}));
    dla_net_summary(cw, sum, sizeof sum);
    assert_non_null(strstr(sum, "4 groups of 2 2x3x1 convolutions"));
    /* Groups that do not divide the channels, a NumChannelsPerGroup that
     * is not C / G, and NumGroups 0. */
    dla_layer *l = dla_grouped_conv2d_layer(3, 3, 1, 3, &(dla_conv_layer_options){.name = "g3"});
    dla_net *bad = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(bad, 1, &x), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'g3' (2-D Grouped Convolution): the input has "
                                             "4 channels, which 3 groups do not divide"));
    dla_net_free(bad);
    l = dla_grouped_conv2d_layer(3, 3, 1, 2, &(dla_conv_layer_options){.num_channels = 4});
    bad = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(bad, 1, &x), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "NumChannelsPerGroup is 4"));
    dla_net_free(bad);
    l = dla_grouped_conv2d_layer(3, 3, 1, 0, NULL);
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "NumGroups 0 must be positive"));
    dla_layer_free(l);
    l = dla_grouped_conv2d_layer(3, 3, 1, -2, NULL);
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    dla_layer_free(l);
    dla_net_free(g2);
    dla_net_free(cw);
    dla_scope_end();
}

static void fully_connected_and_flatten_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(2, 3, 2, 3), 0.5, -1);
    dla_net *fc = one(dla_fc_layer(4, &(dla_fc_layer_options){.name = "fc"}), x);
    dla_tensor *w = set_ramp(fc, "fc", "Weights", 0.1, -0.4), *b = set_ramp(fc, "fc", "Bias", 1, 0);
    assert_int_equal(dla_tensor_dim(w, 2), 12);
    assert_same(predict1(fc, x), dla_fullyconnect(x, w, b));
    dla_net *fl = one(dla_flatten_layer(NULL), x);
    dla_tensor *y = predict1(fl, x);
    assert_string_equal(dla_tensor_format(y), "CB");
    assert_int_equal(dla_tensor_dim(y, 1), 12);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    /* Column-major: the same elements in the same order. */
    assert_true(maxdiff(y, x) == 0);
    dla_net_free(fc);
    dla_net_free(fl);
    dla_scope_end();
}

static void addition_and_concatenation_join_named_inputs(void **state)
{
    (void)state;
    dla_scope_begin();
    /* input -> relu -> add/in1, input -> leaky -> add/in2 and cat/in2 */
    dla_layer *seq[] = {
        dla_image_input_layer(3, 3, 2, &(dla_image_input_options){.normalization = "none", .name = "in"}),
        dla_relu_layer(&(dla_layer_options){.name = "r"}),
        dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
        dla_concatenation_layer(3, 2, &(dla_layer_options){.name = "cat"}),
    };
    dla_net *net = dla_net_create(4, seq);
    assert_non_null(net);
    assert_false(dla_net_initialized(net)); /* add/in2 and cat/in2 are free */
    dla_layer *lk = dla_leakyrelu_layer(0.5, &(dla_layer_options){.name = "lk"});
    assert_int_equal(dla_net_add_layers(net, 1, &lk), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "lk"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "lk", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "lk", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = ramp(DLA_F32, "SSCB", DLA_DIMS(3, 3, 2, 2), 1, -4);
    dla_tensor *sum = dla_add(dla_relu(x), dla_leakyrelu(x, 0.5));
    assert_same(predict1(net, x), dla_cat(3, 2, (dla_tensor *[]){sum, dla_leakyrelu(x, 0.5)}));
    /* Two outputs by name. */
    dla_tensor *y[2];
    assert_int_equal(dla_net_predict(net, 1, &x, 2, y, &(dla_net_forward_options){
        .outputs = (const char *[]){"add", "r"}}), DLA_OK);
    assert_same(y[0], sum);
    assert_same(y[1], dla_relu(x));
    dla_net_free(net);
    dla_scope_end();
}

/* multiplicationLayer (a squeeze-and-excitation gate: 1x1xCxB times the
 * activation), depthConcatenationLayer on images and on sequences, and
 * their refusals by name. */
static void multiplication_and_depth_concatenation_join_named_inputs(void **state)
{
    (void)state;
    dla_scope_begin();
    /* in -> r -> gap -> sig -> mul/in2; r -> mul/in1 */
    dla_layer *seq[] = {
        dla_image_input_layer(4, 3, 2, &(dla_image_input_options){.normalization = "none", .name = "in"}),
        dla_relu_layer(&(dla_layer_options){.name = "r"}),
        dla_global_avgpool2d_layer(NULL),
        dla_sigmoid_layer(NULL),
        dla_multiplication_layer(2, &(dla_layer_options){.name = "mul"}),
    };
    dla_net *net = dla_net_create(5, seq);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "r", "mul/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = ramp(DLA_F32, "SSCB", DLA_DIMS(4, 3, 2, 2), 0.5, -3);
    dla_tensor *r = dla_relu(x);
    assert_same(predict1(net, x), dla_mul(dla_sigmoid(dla_global_avgpool(r)), r));
    char sum[2048];
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "Element-wise multiplication of 2 inputs"));
    dla_net_free(net);
    /* Sizes that neither agree nor broadcast. */
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.name = "in", .normalization = "none"}),
        dla_conv2d_layer(1, 1, 3, &(dla_conv_layer_options){.name = "c3"}),
        dla_multiplication_layer(2, &(dla_layer_options){.name = "m"}),
    };
    net = dla_net_create(3, l);
    assert_non_null(net);
    dla_layer *c2 = dla_conv2d_layer(2, 2, 3, &(dla_conv_layer_options){.name = "c2"});
    assert_int_equal(dla_net_add_layers(net, 1, &c2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "c2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c2", "m/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'm' (Multiplication): the inputs of a "
                                             "multiplication must have one format and sizes that "
                                             "agree or are 1 in each dim: in1 is 4(S) x 4(S) x "
                                             "3(C) x 1(B), in2 3(S) x 3(S) x 3(C) x 1(B)"));
    dla_net_free(net);
    /* Three inputs: each against the product of those before it. 4x1
     * and 3x1 each broadcast against 1x5, not against each other (the
     * refusal was dla_mul's, naming its arguments a and b); 4x1 and 1x1
     * do. */
    dla_tensor *g5 = ramp(DLA_F64, "SSCB", DLA_DIMS(1, 5, 2, 1), 0.1, 1);
    dla_tensor *g4 = ramp(DLA_F64, "SSCB", DLA_DIMS(4, 1, 2, 1), 0.2, -1);
    dla_tensor *g3 = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 1, 2, 1), 0.3, 2);
    dla_tensor *g1 = ramp(DLA_F64, "SSCB", DLA_DIMS(1, 1, 2, 1), 0.4, 0.5);
    dla_layer *m3 = dla_multiplication_layer(3, &(dla_layer_options){.name = "m3"});
    net = dla_net_create(1, &m3);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 3, (dla_tensor *[]){g5, g4, g3}), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "layer 'm3' (Multiplication): the inputs of a multiplication "
                                  "must have one format and sizes that agree or are 1 in each "
                                  "dim: in1..in2 broadcast to 4(S) x 5(S) x 2(C) x 1(B), in3 "
                                  "3(S) x 1(S) x 2(C) x 1(B)"))
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_init(net, 3, (dla_tensor *[]){g5, g4, g1}), DLA_OK);
    dla_tensor *prod;
    assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){g5, g4, g1}, 1, &prod, NULL),
                     DLA_OK);
    assert_same(prod, dla_mul(dla_mul(g5, g4), g1));
    dla_net_free(net);

    /* Depth concatenation: along dim 3 of images, dim 1 of sequences. */
    dla_layer *d[] = {
        dla_image_input_layer(4, 3, 2, &(dla_image_input_options){.normalization = "none", .name = "in"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same", .name = "a"}),
        dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "cat"}),
    };
    net = dla_net_create(3, d);
    assert_non_null(net);
    dla_layer *b = dla_conv2d_layer(1, 1, 3, &(dla_conv_layer_options){.name = "b"});
    assert_int_equal(dla_net_add_layers(net, 1, &b), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "b"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "b", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *ya, *yb, *y;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &ya, &(dla_net_forward_options){
        .outputs = (const char *[]){"a"}}), DLA_OK);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &yb, &(dla_net_forward_options){
        .outputs = (const char *[]){"b"}}), DLA_OK);
    y = predict1(net, x);
    assert_int_equal(dla_tensor_dim(y, 3), 5);
    assert_same(y, dla_cat(3, 2, (dla_tensor *[]){ya, yb}));
    dla_net_free(net);
    dla_layer *ds[] = {
        dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "in"}),
        dla_fc_layer(2, &(dla_fc_layer_options){.name = "f2"}),
        dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "cat"}),
    };
    net = dla_net_create(3, ds);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "in", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *s = ramp(DLA_F32, "CBT", DLA_DIMS(3, 2, 4), 0.25, -1);
    assert_int_equal(dla_net_predict(net, 1, &s, 1, &ya, &(dla_net_forward_options){
        .outputs = (const char *[]){"f2"}}), DLA_OK);
    y = predict1(net, s);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_same(y, dla_cat(1, 2, (dla_tensor *[]){ya, s}));
    dla_net_free(net);
    /* Inputs of two formats. */
    dla_layer *dc = dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "dc"});
    net = dla_net_create(1, &dc);
    assert_non_null(net);
    dla_tensor *cb = ramp(DLA_F32, "CB", DLA_DIMS(3, 2), 1, 0);
    dla_tensor *two[2] = {cb, s};
    assert_int_equal(dla_net_init(net, 2, two), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "depth concatenation needs inputs of one format with "
                                             "a \"C\" dim: in1 is 3(C) x 2(B), in2 3(C) x 2(B) x "
                                             "4(T)"));
    dla_net_free(net);
    dla_layer *m0 = dla_multiplication_layer(0, NULL);
    assert_int_equal(dla_layer_status(m0), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "NumInputs 0 must be in 1..64"));
    dla_layer_free(m0);
    dla_scope_end();
}

/* clippedReluLayer: min(max(x, 0), Ceiling) element by element; a
 * Ceiling that is not positive and finite refused by name. */
static void clipped_relu_layer_clips_at_zero_and_the_ceiling(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(5, 4, 1, 2), 1, -4);
    dla_net *net = one(dla_clipped_relu_layer(3, NULL), x);
    dla_tensor *y = predict1(net, x);
    assert_string_equal(dla_tensor_format(y), "SSCB");
    double hx[40], hy[40];
    assert_int_equal(dla_tensor_to_host(x, hx, sizeof hx), DLA_OK);
    assert_int_equal(dla_tensor_to_host(y, hy, sizeof hy), DLA_OK);
    int clipped = 0, zeroed = 0;
    for (int i = 0; i < 40; i++) {
        const double want = hx[i] < 0 ? 0 : hx[i] > 3 ? 3 : hx[i];
        assert_true(hy[i] == want);
        clipped += hx[i] > 3;
        zeroed += hx[i] < 0;
    }
    assert_true(clipped > 0 && zeroed > 0); /* both ends reached */
    char sum[1024];
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "Clipped ReLU with ceiling 3"));
    dla_net_free(net);
    const double bad[] = {0, -1, INFINITY, NAN};
    for (int i = 0; i < 4; i++) {
        dla_layer *l = dla_clipped_relu_layer(bad[i], &(dla_layer_options){.name = "cr"});
        assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "clippedRelu 'cr': Ceiling"));
        dla_layer_free(l);
    }
    dla_scope_end();
}

/* preluLayer: max(x, 0) + Alpha .* min(x, 0); MATLAB's one Alpha of 0.25
 * by default, or one a channel in batch normalization's dims, each
 * channel scaled by its own; an Alpha that is not finite refused. */
static void prelu_layer_scales_the_negative_part_by_alpha(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 2, 3, 2), 1, -5);
    dla_net *net = one(dla_prelu_layer(DLA_PRELU_ALPHA, NULL), x);
    dla_tensor *alpha = dla_net_get(net, "prelu", "Alpha");
    assert_int_equal(dla_tensor_numel(alpha), 1);
    assert_same(predict1(net, x), dla_add(dla_relu(x), dla_mul(dla_full(0.25, DLA_F64, "", 0,
                                                                          NULL),
                                                                dla_min2(x, dla_zeros(DLA_F64, "",
                                                                                      0, NULL)))));
    char sum[1024];
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "PReLU"));
    dla_net_free(net);

    /* One Alpha a channel: 1x1x3 for "SSCB", set to 0.1, 0.2, 0.3. */
    net = one(dla_prelu_layer(0.5, &(dla_prelu_layer_options){.name = "p", .per_channel = 1}), x);
    alpha = dla_net_get(net, "p", "Alpha");
    assert_int_equal(dla_tensor_ndims(alpha), 3);
    assert_int_equal(dla_tensor_dim(alpha, 3), 3);
    double a[3];
    assert_int_equal(dla_tensor_to_host(alpha, a, sizeof a), DLA_OK);
    assert_true(a[0] == 0.5 && a[1] == 0.5 && a[2] == 0.5);
    dla_tensor *per = dla_tensor_from_host((double[]){0.1, 0.2, 0.3}, DLA_F64, "",
                                           DLA_DIMS(1, 1, 3));
    assert_int_equal(dla_net_set(net, "p", "Alpha", per), DLA_OK);
    double hx[36], hy[36];
    assert_int_equal(dla_tensor_to_host(x, hx, sizeof hx), DLA_OK);
    assert_int_equal(dla_tensor_to_host(predict1(net, x), hy, sizeof hy), DLA_OK);
    int negative = 0;
    for (int i = 0; i < 36; i++) {
        const int channel = (i / 6) % 3; /* 3 x 2 planes, channel inside batch */
        const double want = hx[i] > 0 ? hx[i] : (0.1 * (channel + 1)) * hx[i];
        assert_true(fabs(hy[i] - want) <= 1e-15);
        negative += hx[i] < 0;
    }
    assert_true(negative > 6);
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "PReLU with an Alpha for each of 3 channels"));
    dla_net_free(net);

    /* Sequences: Alpha is C x 1 and broadcasts over B and T. */
    dla_tensor *s = ramp(DLA_F32, "CBT", DLA_DIMS(4, 2, 3), 1, -5);
    net = one(dla_prelu_layer(0.5, &(dla_prelu_layer_options){.per_channel = 1}), s);
    alpha = dla_net_get(net, "prelu", "Alpha");
    assert_int_equal(dla_tensor_dim(alpha, 1), 4);
    assert_int_equal(dla_tensor_dim(alpha, 2), 1);
    assert_string_equal(dla_tensor_format(predict1(net, s)), "CBT");
    dla_net_free(net);

    const double bad[] = {INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 3; i++) {
        dla_layer *l = dla_prelu_layer(bad[i], &(dla_prelu_layer_options){.name = "p"});
        assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "prelu 'p': Alpha"));
        dla_layer_free(l);
    }
    dla_layer *l = dla_prelu_layer(0.25, &(dla_prelu_layer_options){.name = "p", .per_channel = 2});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "PerChannel"));
    dla_layer_free(l);
    dla_scope_end();
}

/* crossChannelNormalizationLayer: dla_crosschannelnorm with the layer's
 * options, MATLAB's defaults when left 0; MATLAB's bounds refused; an
 * input without "C" refused when the network is made. */
static void crosschannel_layer_is_crosschannelnorm_with_its_options(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 2, 6, 2), 7, -40);
    dla_net *net = one(dla_crosschannelnorm_layer(5, NULL), x);
    assert_same(predict1(net, x), dla_crosschannelnorm(x, 5, NULL));
    char sum[1024];
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "cross channel normalization with 5 channels per element"));
    dla_net_free(net);
    const dla_crosschannelnorm_options o = {.alpha = 0.5, .beta = 1.25, .k = 0.75};
    net = one(dla_crosschannelnorm_layer(
                  4, &(dla_crosschannelnorm_layer_options){.name = "n", .alpha = 0.5, .beta = 1.25,
                                                           .k = 0.75}),
              x);
    dla_tensor *y = predict1(net, x);
    assert_same(y, dla_crosschannelnorm(x, 4, &o));
    /* The options reach the op: the defaults give other values. */
    assert_true(maxdiff(y, dla_crosschannelnorm(x, 4, NULL)) > 1e-3);
    dla_net_free(net);
    /* Sequences: C is the first dim. */
    dla_tensor *s = ramp(DLA_F32, "CBT", DLA_DIMS(4, 2, 3), 3, -9);
    net = one(dla_crosschannelnorm_layer(3, NULL), s);
    assert_same(predict1(net, s), dla_crosschannelnorm(s, 3, NULL));
    dla_net_free(net);

    const int64_t bad_w[] = {0, 17};
    for (int i = 0; i < 2; i++) {
        dla_layer *l = dla_crosschannelnorm_layer(
            bad_w[i], &(dla_crosschannelnorm_layer_options){.name = "n"});
        assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "crossChannelNormalization 'n': WindowChannelSize"));
        dla_layer_free(l);
    }
    const dla_crosschannelnorm_layer_options bad[] = {
        {.name = "n", .alpha = NAN}, {.name = "n", .beta = 0.005}, {.name = "n", .k = -2}};
    const char *what[] = {"Alpha", "Beta", "K"};
    for (int i = 0; i < 3; i++) {
        dla_layer *l = dla_crosschannelnorm_layer(5, &bad[i]);
        assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), what[i]));
        dla_layer_free(l);
    }
    dla_layer *f[] = {dla_feature_input_layer(4, NULL), dla_fc_layer(3, NULL),
                      dla_crosschannelnorm_layer(3, NULL)};
    net = dla_net_create(3, f);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK); /* "CB" has C */
    dla_net_free(net);
    dla_layer *l = dla_crosschannelnorm_layer(3, NULL);
    net = dla_net_create(1, &l);
    assert_non_null(net);
    dla_tensor *nochan = ramp(DLA_F64, "SSB", DLA_DIMS(3, 2, 2), 1, 0);
    assert_int_equal(dla_net_init(net, 1, &nochan), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "cross-channel normalization needs a \"C\" dim"));
    dla_net_free(net);
    dla_scope_end();
}

/* indexing1dLayer: the first or last step of "CBT" sequences (or index
 * of the "S" dim of "SCB" 1-D images) as "CB"; other data refused. */
static void indexing1d_layer_takes_the_first_or_last_index(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *s = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 5), 1, -2);
    for (int last = 0; last < 2; last++) {
        dla_net *net = one(dla_indexing1d_layer(last ? "last" : NULL, NULL), s);
        dla_tensor *y = predict1(net, s);
        assert_string_equal(dla_tensor_format(y), "CB");
        assert_int_equal(dla_tensor_dim(y, 1), 3);
        assert_int_equal(dla_tensor_dim(y, 2), 2);
        dla_tensor *want = dla_reshape(dla_slice(s, 3, last ? 4 : 0, 1, last ? 5 : 1), "CB",
                                       DLA_DIMS(3, 2));
        assert_true(maxdiff(y, want) == 0);
        char sum[1024];
        dla_net_summary(net, sum, sizeof sum);
        assert_non_null(strstr(sum, last ? "1-D indexing of the last index"
                                         : "1-D indexing of the first index"));
        dla_net_free(net);
    }
    dla_tensor *img = ramp(DLA_F64, "SCB", DLA_DIMS(6, 3, 2), 1, 0);
    dla_net *net = one(dla_indexing1d_layer("last", NULL), img);
    dla_tensor *y = predict1(net, img);
    assert_string_equal(dla_tensor_format(y), "CB");
    assert_true(maxdiff(y, dla_reshape(dla_slice(img, 1, 5, 1, 6), "CB", DLA_DIMS(3, 2))) == 0);
    dla_net_free(net);

    dla_layer *l = dla_indexing1d_layer("middle", &(dla_indexing1d_layer_options){.name = "ix"});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "indexing1d 'ix': Index \"middle\""));
    dla_layer_free(l);
    l = dla_indexing1d_layer(NULL, NULL);
    net = dla_net_create(1, &l);
    assert_non_null(net);
    dla_tensor *im2 = ramp(DLA_F64, "SSCB", DLA_DIMS(2, 2, 3, 2), 1, 0);
    assert_int_equal(dla_net_init(net, 1, &im2), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "the input is \"SSCB\"; 1-D indexing takes"));
    dla_net_free(net);
    dla_scope_end();
}

/* spatialDropoutLayer: in forward, each channel of each observation kept
 * whole (scaled by 1 / (1 - p)) or zeroed whole, where MATLAB's
 * rand([1 1 C B]) < p says, from the same draw; predict is the identity. */
static void spatial_dropout_drops_whole_channels(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { H = 3, W = 4, C = 5, B = 6 };
    const double p = 0.4;
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(H, W, C, B), 1, 0.5); /* all positive */
    dla_net *net = one(dla_spatial_dropout_layer(p, &(dla_layer_options){.name = "sd"}), x);
    assert_same(predict1(net, x), x);
    dla_rng_seed(42);
    dla_tensor *y = forward1(net, x);
    dla_rng_seed(42);
    dla_tensor *r = dla_rand(DLA_F64, "", DLA_DIMS(1, 1, C, B));
    double hx[H * W * C * B], hy[H * W * C * B], hr[C * B];
    assert_int_equal(dla_tensor_to_host(x, hx, sizeof hx), DLA_OK);
    assert_int_equal(dla_tensor_to_host(y, hy, sizeof hy), DLA_OK);
    assert_int_equal(dla_tensor_to_host(r, hr, sizeof hr), DLA_OK);
    int dropped = 0;
    for (int cb = 0; cb < C * B; cb++) {
        const int drop = hr[cb] < p;
        dropped += drop;
        for (int s = 0; s < H * W; s++) {
            const int i = cb * H * W + s;
            assert_true(hy[i] == (drop ? 0.0 : hx[i] * (1 / (1 - p))));
        }
    }
    assert_true(dropped > 0 && dropped < C * B);
    /* Sequences: a channel of an observation goes for every step. */
    dla_tensor *sq = ramp(DLA_F64, "CBT", DLA_DIMS(3, 4, 5), 1, 0.5);
    dla_net *ns = one(dla_spatial_dropout_layer(0.5, NULL), sq);
    dla_tensor *ys = forward1(ns, sq);
    double hs[60];
    assert_int_equal(dla_tensor_to_host(ys, hs, sizeof hs), DLA_OK);
    int zero_rows = 0;
    for (int cb = 0; cb < 12; cb++) {
        const int z = hs[cb] == 0;
        zero_rows += z;
        for (int t = 1; t < 5; t++)
            assert_int_equal(hs[cb + 12 * t] == 0, z);
    }
    assert_true(zero_rows > 0 && zero_rows < 12);
    char sum[1024];
    dla_net_summary(net, sum, sizeof sum);
    assert_non_null(strstr(sum, "40% spatial dropout"));
    dla_net_free(net);
    dla_net_free(ns);
    dla_layer *l = dla_spatial_dropout_layer(1, &(dla_layer_options){.name = "sd1"});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "spatialDropout 'sd1': Probability 1 must be in [0, 1)"));
    dla_layer_free(l);
    l = dla_spatial_dropout_layer(0.5, &(dla_layer_options){.name = "sd2"});
    dla_net *bad = dla_net_create(1, &l);
    dla_tensor *sb = ramp(DLA_F64, "SB", DLA_DIMS(4, 3), 1, 0);
    assert_int_equal(dla_net_init(bad, 1, &sb), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "spatial dropout drops channels, and it has no \"C\" dim"));
    dla_net_free(bad);
    dla_scope_end();
}

/* Before: an addition broadcast its inputs (4x4x3 + 1x1x1 was one number
 * added everywhere); MATLAB's additionLayer needs inputs of one size. */
static void an_addition_of_inputs_of_other_sizes_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.name = "in", .normalization = "none"}),
        dla_conv2d_layer(1, 1, 3, &(dla_conv_layer_options){.name = "c3"}),
        dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
    };
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    dla_layer *c1 = dla_conv2d_layer(4, 4, 1, &(dla_conv_layer_options){.name = "c1"});
    assert_int_equal(dla_net_add_layers(net, 1, &c1), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "c1"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c1", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'add' (Addition): the inputs of an addition "
                                             "must have the same size and format: in1 is 4(S) x "
                                             "4(S) x 3(C) x 1(B), in2 1(S) x 1(S) x 1(C) x 1(B)"));
    assert_false(dla_net_initialized(net));
    dla_net_free(net);

    /* Inputs that are the network's own: refused when run, too. */
    dla_layer *a = dla_addition_layer(2, &(dla_layer_options){.name = "sum"});
    net = dla_net_create(1, &a);
    assert_non_null(net);
    dla_tensor *e3 = dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1)), *e1 = dla_zeros(DLA_F32, "CB", DLA_DIMS(1, 1));
    assert_int_equal(dla_net_init(net, 2, (dla_tensor *[]){e3, e1}), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "in1 is 3(C) x 1(B), in2 1(C) x 1(B)"));
    assert_int_equal(dla_net_init(net, 2, (dla_tensor *[]){e3, e3}), DLA_OK);
    dla_tensor *x3 = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 5)), *x1 = dla_ones(DLA_F32, "CB", DLA_DIMS(1, 5)), *y;
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){x3, x1}, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'sum' (Addition)"));
    assert_non_null(strstr(dla_last_error(), "in1 is 3(C) x 5(B), in2 1(C) x 5(B)"));
    dla_tensor *st[1];
    assert_int_equal(dla_net_forward(net, 2, (dla_tensor *[]){x3, x1}, 1, &y, st, NULL), DLA_ERR_SHAPE);
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){x3, x3}, 1, &y, NULL), DLA_OK);
    assert_true(dla_tensor_item(y, 14) == 2);
    dla_net_free(net);
    dla_scope_end();
}

/* The LSTM written out in double: gates i, f, g, o. */
static void lstm_reference(int64_t c, int64_t h, int64_t nb, int64_t nt, const double *x,
                           const double *w, const double *r, const double *b, double *hs, double *cs,
                           double *ys)
{
    for (int64_t t = 0; t < nt; t++) {
        double *hn = calloc((size_t)(h * nb), sizeof *hn), *cn = calloc((size_t)(h * nb), sizeof *cn);
        for (int64_t n = 0; n < nb; n++)
            for (int64_t u = 0; u < h; u++) {
                double z[4];
                for (int g = 0; g < 4; g++) {
                    int64_t row = g * h + u;
                    double s = b[row];
                    for (int64_t k = 0; k < c; k++)
                        s += w[row + 4 * h * k] * x[k + c * (n + nb * t)];
                    for (int64_t k = 0; k < h; k++)
                        s += r[row + 4 * h * k] * hs[k + h * n];
                    z[g] = s;
                }
                double i = 1 / (1 + exp(-z[0])), f = 1 / (1 + exp(-z[1])), g = tanh(z[2]),
                       o = 1 / (1 + exp(-z[3]));
                cn[u + h * n] = f * cs[u + h * n] + i * g;
                hn[u + h * n] = o * tanh(cn[u + h * n]);
                ys[u + h * (n + nb * t)] = hn[u + h * n];
            }
        memcpy(hs, hn, sizeof *hs * (size_t)(h * nb));
        memcpy(cs, cn, sizeof *cs * (size_t)(h * nb));
        free(hn);
        free(cn);
    }
}

static void lstm_matches_a_loop_written_out_in_both_output_modes(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { C = 3, H = 2, NB = 2, NT = 4 };
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(C, NB, NT), 0.3, -1);
    dla_net *net = one(dla_lstm_layer(H, &(dla_lstm_layer_options){.name = "l"}), x);
    dla_tensor *w = set_ramp(net, "l", "InputWeights", 0.07, -0.3);
    dla_tensor *r = set_ramp(net, "l", "RecurrentWeights", 0.05, -0.2);
    dla_tensor *b = set_ramp(net, "l", "Bias", 0.1, -0.25);
    double xh[C * NB * NT], wh[4 * H * C], rh[4 * H * H], bh[4 * H];
    double hs[H * NB] = {0}, cs[H * NB] = {0}, ys[H * NB * NT];
    dla_tensor_to_host(x, xh, sizeof xh);
    dla_tensor_to_host(w, wh, sizeof wh);
    dla_tensor_to_host(r, rh, sizeof rh);
    dla_tensor_to_host(b, bh, sizeof bh);
    lstm_reference(C, H, NB, NT, xh, wh, rh, bh, hs, cs, ys);
    dla_tensor *want = dla_tensor_from_host(ys, DLA_F64, "CBT", DLA_DIMS(H, NB, NT));
    dla_tensor *y, *st[2];
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_same(y, want);
    assert_same(predict1(net, x), want);
    /* forward hands back the last hidden and cell states, H x N. */
    assert_true(maxdiff(st[0], dla_tensor_from_host(hs, DLA_F64, "", DLA_DIMS(H, NB))) < 1e-12);
    assert_true(maxdiff(st[1], dla_tensor_from_host(cs, DLA_F64, "", DLA_DIMS(H, NB))) < 1e-12);
    /* Set as the state, the next sequence starts from it. */
    assert_int_equal(dla_net_set_state(net, 2, st), DLA_OK);
    lstm_reference(C, H, NB, NT, xh, wh, rh, bh, hs, cs, ys);
    assert_same(predict1(net, x), dla_tensor_from_host(ys, DLA_F64, "CBT", DLA_DIMS(H, NB, NT)));
    assert_int_equal(dla_net_reset_state(net), DLA_OK);
    assert_int_equal(dla_tensor_dim(dla_net_get(net, "l", "HiddenState"), 2), 1);
    dla_net_free(net);
    /* OutputMode "last": the final hidden state, "CB". */
    double h0[H * NB] = {0}, c0[H * NB] = {0};
    lstm_reference(C, H, NB, NT, xh, wh, rh, bh, h0, c0, ys);
    dla_net *last = one(dla_lstm_layer(H, &(dla_lstm_layer_options){.name = "l", .output_mode = "last"}), x);
    dla_net_set(last, "l", "InputWeights", w);
    dla_net_set(last, "l", "RecurrentWeights", r);
    dla_net_set(last, "l", "Bias", b);
    dla_tensor *yl = predict1(last, x);
    assert_string_equal(dla_tensor_format(yl), "CB");
    assert_true(maxdiff(yl, dla_tensor_from_host(h0, DLA_F64, "CB", DLA_DIMS(H, NB))) < 1e-12);
    dla_net_free(last);
    dla_scope_end();
}

/* bilstmLayer against two LSTMs written out: the forward one over x with
 * rows 0..4H-1 of the learnables, the backward one over x reversed in
 * time with rows 4H..8H-1; joined per step, [h_f(t); h_b(t)]. OutputMode
 * "last" and the state are each direction's after its last step,
 * [h_f(T); h_b(1)]. Eager and replayed, sequence and last. */
static void bilstm_matches_two_loops_written_out_in_both_output_modes(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { C = 3, H = 2, NB = 2, NT = 4 };
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(C, NB, NT), 0.3, -1);
    dla_net *net = one(dla_bilstm_layer(H, &(dla_lstm_layer_options){.name = "b"}), x);
    assert_int_equal(dla_tensor_dim(dla_net_get(net, "b", "InputWeights"), 1), 8 * H);
    assert_int_equal(dla_tensor_dim(dla_net_get(net, "b", "HiddenState"), 1), 2 * H);
    /* unit-forget-gate in both directions */
    dla_tensor *b0 = dla_net_get(net, "b", "Bias");
    for (int i = 0; i < 8 * H; i++)
        assert_true(dla_tensor_item(b0, i) == ((i >= H && i < 2 * H) || (i >= 5 * H && i < 6 * H)));
    dla_tensor *w = set_ramp(net, "b", "InputWeights", 0.07, -0.3);
    dla_tensor *r = set_ramp(net, "b", "RecurrentWeights", 0.05, -0.2);
    dla_tensor *b = set_ramp(net, "b", "Bias", 0.1, -0.25);
    double xh[C * NB * NT], xr[C * NB * NT], wh[8 * H * C], rh[8 * H * H], bh[8 * H];
    dla_tensor_to_host(x, xh, sizeof xh);
    dla_tensor_to_host(w, wh, sizeof wh);
    dla_tensor_to_host(r, rh, sizeof rh);
    dla_tensor_to_host(b, bh, sizeof bh);
    double wd[2][4 * H * C], rd[2][4 * H * H], bd[2][4 * H];
    for (int d = 0; d < 2; d++)
        for (int row = 0; row < 4 * H; row++) {
            for (int k = 0; k < C; k++)
                wd[d][row + 4 * H * k] = wh[d * 4 * H + row + 8 * H * k];
            for (int k = 0; k < H; k++)
                rd[d][row + 4 * H * k] = rh[d * 4 * H + row + 8 * H * k];
            bd[d][row] = bh[d * 4 * H + row];
        }
    for (int t = 0; t < NT; t++)
        memcpy(xr + C * NB * t, xh + C * NB * (NT - 1 - t), sizeof *xr * C * NB);
    double hf[H * NB] = {0}, cf[H * NB] = {0}, yf[H * NB * NT];
    double hb[H * NB] = {0}, cb[H * NB] = {0}, yb[H * NB * NT];
    lstm_reference(C, H, NB, NT, xh, wd[0], rd[0], bd[0], hf, cf, yf);
    lstm_reference(C, H, NB, NT, xr, wd[1], rd[1], bd[1], hb, cb, yb);
    double want_y[2 * H * NB * NT], want_last[2 * H * NB], want_h[2 * H * NB], want_c[2 * H * NB];
    for (int t = 0; t < NT; t++)
        for (int n = 0; n < NB; n++)
            for (int u = 0; u < H; u++) {
                want_y[u + 2 * H * (n + NB * t)] = yf[u + H * (n + NB * t)];
                want_y[H + u + 2 * H * (n + NB * t)] = yb[u + H * (n + NB * (NT - 1 - t))];
            }
    for (int n = 0; n < NB; n++)
        for (int u = 0; u < H; u++) {
            want_last[u + 2 * H * n] = yf[u + H * (n + NB * (NT - 1))];
            want_last[H + u + 2 * H * n] = hb[u + H * n]; /* after x_1: its last step */
            want_h[u + 2 * H * n] = hf[u + H * n];
            want_h[H + u + 2 * H * n] = hb[u + H * n];
            want_c[u + 2 * H * n] = cf[u + H * n];
            want_c[H + u + 2 * H * n] = cb[u + H * n];
        }
    dla_tensor *want = dla_tensor_from_host(want_y, DLA_F64, "CBT", DLA_DIMS(2 * H, NB, NT));
    dla_tensor *y, *st[2];
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_same(y, want);
    assert_same(predict1(net, x), want);
    assert_true(maxdiff(st[0], dla_tensor_from_host(want_h, DLA_F64, "", DLA_DIMS(2 * H, NB))) < 1e-12);
    assert_true(maxdiff(st[1], dla_tensor_from_host(want_c, DLA_F64, "", DLA_DIMS(2 * H, NB))) < 1e-12);
    /* Accelerated by default: the later calls replay its plan. */
    for (int call = 0; call < 3; call++)
        assert_same(predict1(net, x), want);
    dla_net_set_accelerate(net, 0);
    assert_same(predict1(net, x), want);
    dla_net_free(net);
    dla_net *last = one(dla_bilstm_layer(H, &(dla_lstm_layer_options){.name = "b",
                                                                     .output_mode = "last"}), x);
    dla_net_set(last, "b", "InputWeights", w);
    dla_net_set(last, "b", "RecurrentWeights", r);
    dla_net_set(last, "b", "Bias", b);
    assert_int_equal(dla_net_forward(last, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "CB");
    assert_true(maxdiff(y, dla_tensor_from_host(want_last, DLA_F64, "CB", DLA_DIMS(2 * H, NB))) < 1e-12);
    assert_true(maxdiff(st[0], dla_tensor_from_host(want_h, DLA_F64, "", DLA_DIMS(2 * H, NB))) < 1e-12);
    char buf[4096];
    assert_true(dla_net_summary(last, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "BiLSTM with 2 hidden units (OutputMode 'last')"));
    dla_net_free(last);
    /* Its options are checked as the LSTM's, in its own name. */
    dla_layer *bad = dla_bilstm_layer(H, &(dla_lstm_layer_options){.output_mode = "first"});
    assert_non_null(dla_layer_error(bad));
    if (!strstr(dla_layer_error(bad), "bilstm '': OutputMode \"first\""))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    dla_scope_end();
}

/* MATLAB [Y, state] = predict(net, X): an LSTM, dropout and a GRU in
 * inference mode. A sequence predicted in two halves, the state of the
 * first set before the second, gives the whole sequence's outputs and
 * final state; no dropout; the network's own state is left alone; eager
 * and replayed alike. Before, predict had no state to give (only
 * forward, in training mode, with dropout on). */
static void predict_state_carries_a_sequence_on_in_inference_mode(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { C = 3, H = 4, NB = 2, NT = 6 };
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(C, NB, NT), 0.3, -1);
    dla_tensor *first = dla_slice(x, 3, 0, 1, 3), *second = dla_slice(x, 3, 3, 1, 6);
    for (int accel = 0; accel < 2; accel++) {
        dla_layer *l[] = {dla_lstm_layer(H, &(dla_lstm_layer_options){.name = "l"}),
                          dla_dropout_layer(0.5, NULL),
                          dla_gru_layer(H, &(dla_gru_layer_options){.name = "g"})};
        dla_net *net = dla_net_create(3, l);
        assert_non_null(net);
        assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
        assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
        set_ramp(net, "l", "InputWeights", 0.07, -0.3);
        set_ramp(net, "l", "RecurrentWeights", 0.05, -0.2);
        set_ramp(net, "g", "InputWeights", 0.04, -0.1);
        dla_net_set_accelerate(net, accel);
        assert_int_equal(dla_net_state_count(net), 3);
        dla_tensor *y_all, *s_all[3], *y1, *s1[3], *y2, *s2[3];
        for (int rep = 0; rep < 2; rep++) /* the second call replays */
            assert_int_equal(dla_net_predict_state(net, 1, &x, 1, &y_all, s_all, NULL), DLA_OK);
        /* No dropout: predict's outputs, bit for bit. */
        assert_true(maxdiff(y_all, predict1(net, x)) == 0);
        assert_int_equal(dla_net_predict_state(net, 1, &first, 1, &y1, s1, NULL), DLA_OK);
        for (int r = 0; r < 3; r++) {
            assert_int_equal(dla_tensor_dim(s1[r], 1), H);
            assert_int_equal(dla_tensor_dim(s1[r], 2), NB);
        }
        /* The network's own state is still the initial H x 1 zeros. */
        assert_int_equal(dla_tensor_dim(dla_net_get(net, "l", "HiddenState"), 2), 1);
        assert_int_equal(dla_net_set_state(net, 3, s1), DLA_OK);
        assert_int_equal(dla_net_predict_state(net, 1, &second, 1, &y2, s2, NULL), DLA_OK);
        assert_true(maxdiff(y2, dla_slice(y_all, 3, 3, 1, 6)) < 1e-12);
        assert_true(maxdiff(y1, dla_slice(y_all, 3, 0, 1, 3)) < 1e-12);
        for (int r = 0; r < 3; r++)
            assert_true(maxdiff(s2[r], s_all[r]) < 1e-12);
        /* The state after the first half differs from the initial one,
         * so the comparison above could fail. */
        assert_true(maxdiff(s1[0], s_all[0]) > 1e-3);
        dla_net_free(net);
    }
    dla_scope_end();
}

/* dla_net_set takes a recurrent layer's state as dla_net_set_state does:
 * H x N (one per observation: the state after a batch of N, or a decoder
 * started from an encoder's final states), and H x 1 again after it. It
 * refused both ("r/HiddenState: the value is 4x2, the parameter 4x1"),
 * so that only the whole table could carry a batch's states. Rows are
 * still checked, and so are the states of other layers. */
static void net_set_takes_a_recurrent_state_per_observation(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { C = 3, H = 4, NB = 2, NT = 5 };
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(C, NB, NT), 0.3, -1);
    dla_tensor *first = dla_slice(x, 3, 0, 1, 2), *second = dla_slice(x, 3, 2, 1, 5);
    dla_layer *l[] = {dla_lstm_layer(H, &(dla_lstm_layer_options){.name = "l"}),
                      dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
                      dla_gru_layer(H, &(dla_gru_layer_options){.name = "g"})};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    set_ramp(net, "l", "InputWeights", 0.07, -0.3);
    set_ramp(net, "g", "InputWeights", 0.04, -0.1);
    dla_tensor *y_all, *y2, *s1[5];
    assert_int_equal(dla_net_state_count(net), 5);
    assert_int_equal(dla_net_predict_state(net, 1, &x, 1, &y_all, NULL, NULL), DLA_OK);
    dla_tensor *y1;
    assert_int_equal(dla_net_predict_state(net, 1, &first, 1, &y1, s1, NULL), DLA_OK);
    static const char *const layer[5] = {"l", "l", "bn", "bn", "g"};
    static const char *const name[5] = {"HiddenState", "CellState", "TrainedMean",
                                        "TrainedVariance", "HiddenState"};
    for (int r = 0; r < 5; r++) {
        if (r == 2 || r == 3)
            continue;
        assert_int_equal(dla_tensor_dim(s1[r], 2), NB);
        if (dla_net_set(net, layer[r], name[r], s1[r]) != DLA_OK)
            fail_msg("dla_net_set %s/%s: %s", layer[r], name[r], dla_last_error());
    }
    assert_int_equal(dla_net_predict(net, 1, &second, 1, &y2, NULL), DLA_OK);
    assert_true(maxdiff(y2, dla_slice(y_all, 3, 2, 1, 5)) < 1e-12);
    /* With labels too ("CB" H x N): the state's numbers. The LSTM's
     * step failed on them ("dla_cat: ... format \"CB\" differs"). */
    for (int r = 0; r < 5; r++)
        if (r < 2 || r == 4)
            assert_int_equal(dla_net_set(net, layer[r], name[r],
                                         dla_reshape(s1[r], "CB", DLA_DIMS(H, NB))),
                             DLA_OK);
    if (dla_net_predict(net, 1, &second, 1, &y2, NULL) != DLA_OK)
        fail_msg("predict from labelled states: %s", dla_last_error());
    assert_true(maxdiff(y2, dla_slice(y_all, 3, 2, 1, 5)) < 1e-12);
    /* Back to one column for every observation. */
    assert_int_equal(dla_net_set(net, "l", "HiddenState", dla_zeros(DLA_F64, "", DLA_DIMS(H, 1))),
                     DLA_OK);
    assert_int_equal(dla_tensor_dim(dla_net_get(net, "l", "HiddenState"), 2), 1);
    /* Other rows, other dtypes and other layers' states are still refused. */
    dla_tensor *wide = dla_zeros(DLA_F64, "", DLA_DIMS(H + 1, NB));
    assert_int_equal(dla_net_set(net, "l", "HiddenState", wide), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "l/HiddenState: the value is 5x2, the parameter 4x1"));
    dla_tensor *single = dla_zeros(DLA_F32, "", DLA_DIMS(H, NB));
    assert_int_not_equal(dla_net_set(net, "g", "HiddenState", single), DLA_OK);
    assert_int_equal(dla_net_set(net, "bn", "TrainedMean", dla_zeros(DLA_F64, "", DLA_DIMS(H, NB))),
                     DLA_ERR_SHAPE);
    dla_net_free(net);
    dla_scope_end();
}

/* Sequences of no steps into a network without an input layer (nothing
 * holds them back): OutputMode "sequence" gives the empty sequence
 * H x B x 0 in both modes of running; "last" has no last step and says
 * so. They failed with "dla_cat: argument n: 0 tensors" and "cannot
 * reshape 4x1 (4 elements) to 4x5", and a batch of one gave "last" the
 * initial state as if it were an answer. Their states come out H x B. */
static void recurrent_layers_take_sequences_of_no_steps_and_name_a_channel_mismatch(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *ex = dla_ones(DLA_F32, "CBT", DLA_DIMS(3, 1, 2));
    for (int kind = 0; kind < 2; kind++) {
        const char *name = kind ? "gru" : "lstm";
        dla_layer *seq = kind ? dla_gru_layer(4, NULL) : dla_lstm_layer(4, NULL);
        dla_net *net = one(seq, ex);
        for (int nb = 0; nb <= 5; nb += 5) {
            dla_tensor *x = dla_ones(DLA_F32, "CBT", DLA_DIMS(3, nb, 0));
            dla_tensor *y = predict1(net, x);
            assert_string_equal(dla_tensor_format(y), "CBT");
            assert_int_equal(dla_tensor_dim(y, 1), 4);
            assert_int_equal(dla_tensor_dim(y, 2), nb);
            assert_int_equal(dla_tensor_dim(y, 3), 0);
            assert_int_equal(dla_tensor_dtype(y), DLA_F32);
            dla_tensor *yf = forward1(net, x);
            assert_int_equal(dla_tensor_dim(yf, 2), nb);
            assert_int_equal(dla_tensor_dim(yf, 3), 0);
            /* The state after no step: the initial one for every
             * observation, H x B like the hidden state (the LSTM's cell
             * state and the GRU's state stayed H x 1). */
            dla_tensor *st[2] = {NULL, NULL};
            assert_int_equal(dla_net_predict_state(net, 1, &x, 1, &y, st, NULL), DLA_OK);
            for (int k = 0; k < dla_net_state_count(net); k++) {
                assert_int_equal(dla_tensor_dim(st[k], 1), 4);
                assert_int_equal(dla_tensor_dim(st[k], 2), nb);
                double v[20];
                assert_int_equal(dla_tensor_to_host(dla_cast(st[k], DLA_F64), v,
                                                    sizeof(double) * (size_t)(4 * nb)), DLA_OK);
                for (int i = 0; i < 4 * nb; i++)
                    tu_assert_near(v[i], 0, 0);
            }
        }
        /* Another channel count than the weights take: it said "dla_mtimes:
         * inner dims differ: a is 16x3, b is 5x6" of its reshaped input. */
        dla_tensor *wide = dla_ones(DLA_F32, "CBT", DLA_DIMS(5, 2, 3)), *yw;
        assert_int_equal(dla_net_predict(net, 1, &wide, 1, &yw, NULL), DLA_ERR_SHAPE);
        char msg[160];
        snprintf(msg, sizeof msg, "the input has 5 channels (5x2x3 \"CBT\"); the %s's "
                 "InputWeights take 3", name);
        if (!strstr(dla_last_error(), msg))
            fail_msg("%s", dla_last_error());
        dla_net_free(net);
        seq = kind ? dla_gru_layer(4, &(dla_gru_layer_options){.output_mode = "last"})
                   : dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "last"});
        net = one(seq, ex);
        for (int nb = 1; nb <= 5; nb += 4) {
            dla_tensor *x = dla_ones(DLA_F32, "CBT", DLA_DIMS(3, nb, 0)), *y;
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_SHAPE);
            char want[128];
            snprintf(want, sizeof want, "%s: the input has no time steps (3x%dx0 \"CBT\"); "
                     "OutputMode \"last\" needs at least one", name, nb);
            if (!strstr(dla_last_error(), want))
                fail_msg("%s", dla_last_error());
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

/* "CB" data (a feature input) into a recurrent layer is one time step,
 * and "sequence" mode gives it back as "CB", H x N, as MATLAB's layers do,
 * with the values of that one step as "CBT": it gave H x N x 1 "CBT", so a
 * feature input, an LSTM and a fully connected layer could not be trained
 * against "CB" targets ("format CB differs from y's CBT"). */
static void recurrent_layers_give_cb_data_back_as_cb(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *ex = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 1));
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(3, 5));
    dla_tensor *xt = dla_reshape(x, "CBT", DLA_DIMS(3, 5, 1));
    for (int kind = 0; kind < 3; kind++) {
        dla_layer *l = kind == 0 ? dla_lstm_layer(4, NULL)
                     : kind == 1 ? dla_gru_layer(4, NULL)
                                 : dla_bilstm_layer(2, NULL);
        dla_net *net = one(l, ex);
        const dla_tensor *outs[2] = {predict1(net, x), forward1(net, x)};
        for (int k = 0; k < 2; k++) {
            if (strcmp(dla_tensor_format(outs[k]), "CB"))
                fail_msg("%s %s: \"%s\", not \"CB\"", dla_net_layer_type(net, 0),
                         k ? "forward" : "predict", dla_tensor_format(outs[k]));
            assert_int_equal(dla_tensor_ndims(outs[k]), 2);
            assert_int_equal(dla_tensor_dim(outs[k], 1), 4);
            assert_int_equal(dla_tensor_dim(outs[k], 2), 5);
        }
        dla_tensor *yt = predict1(net, xt);
        assert_string_equal(dla_tensor_format(yt), "CBT");
        for (int64_t i = 0; i < 20; i++)
            assert_true(dla_tensor_item(yt, i) == dla_tensor_item(outs[0], i));
        dla_net_free(net);
    }
    /* And trained against "CB" targets. */
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL), dla_lstm_layer(4, NULL),
                       dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(3, ls), *trained = NULL;
    assert_non_null(net);
    dla_training_info *info = NULL;
    dla_tensor *xs = dla_randn(DLA_F32, "CB", DLA_DIMS(3, 8)), *t = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 8));
    if (dla_trainnet(&(dla_train_data){.predictors = xs, .targets = t}, net,
                     &(dla_train_loss){.name = "mse"},
                     &(dla_training_options){.max_epochs = 1, .mini_batch_size = 4, .verbose = -1},
                     &trained, &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* The GRU written out in double: gates reset, update, candidate; mode 0
 * after-multiplication, 1 before, 2 recurrent bias after (b of 6h). */
static void gru_reference(int mode, int64_t c, int64_t h, int64_t nb, int64_t nt, const double *x,
                          const double *w, const double *r, const double *b, double *hs,
                          double *ys)
{
    for (int64_t t = 0; t < nt; t++) {
        double *hn = calloc((size_t)(h * nb), sizeof *hn);
        for (int64_t n = 0; n < nb; n++)
            for (int64_t u = 0; u < h; u++) {
                double wx[3], rh[3];
                for (int g = 0; g < 3; g++) {
                    const int64_t row = g * h + u;
                    wx[g] = b[row];
                    rh[g] = mode == 2 ? b[3 * h + row] : 0;
                    for (int64_t k = 0; k < c; k++)
                        wx[g] += w[row + 3 * h * k] * x[k + c * (n + nb * t)];
                    for (int64_t k = 0; k < h; k++)
                        rh[g] += r[row + 3 * h * k] * hs[k + h * n];
                }
                const double rg = 1 / (1 + exp(-(wx[0] + rh[0])));
                const double zg = 1 / (1 + exp(-(wx[1] + rh[1])));
                double inner = rg * rh[2];
                if (mode == 1) { /* R_n (r .* h): every unit's reset gate */
                    inner = 0;
                    for (int64_t k = 0; k < h; k++) {
                        double zk = b[k];
                        for (int64_t j = 0; j < c; j++)
                            zk += w[k + 3 * h * j] * x[j + c * (n + nb * t)];
                        for (int64_t j = 0; j < h; j++)
                            zk += r[k + 3 * h * j] * hs[j + h * n];
                        inner += r[2 * h + u + 3 * h * k] * hs[k + h * n] / (1 + exp(-zk));
                    }
                }
                const double cand = tanh(wx[2] + inner);
                hn[u + h * n] = (1 - zg) * cand + zg * hs[u + h * n];
                ys[u + h * (n + nb * t)] = hn[u + h * n];
            }
        memcpy(hs, hn, sizeof *hs * (size_t)(h * nb));
        free(hn);
    }
}

static void gru_matches_a_loop_written_out_in_every_reset_gate_mode(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { C = 3, H = 2, NB = 2, NT = 4 };
    static const char *const modes[3] = {NULL, "before-multiplication",
                                         "recurrent-bias-after-multiplication"};
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(C, NB, NT), 0.3, -1);
    for (int m = 0; m < 3; m++) {
        dla_net *net = one(dla_gru_layer(H, &(dla_gru_layer_options){
            .name = "g", .reset_gate_mode = modes[m]}), x);
        dla_tensor *w = set_ramp(net, "g", "InputWeights", 0.07, -0.3);
        dla_tensor *r = set_ramp(net, "g", "RecurrentWeights", 0.05, -0.2);
        dla_tensor *b = set_ramp(net, "g", "Bias", 0.1, -0.25);
        assert_int_equal(dla_tensor_dim(b, 1), m == 2 ? 6 * H : 3 * H);
        double xh[C * NB * NT], wh[3 * H * C], rh[3 * H * H], bh[6 * H];
        double hs[H * NB] = {0}, ys[H * NB * NT];
        dla_tensor_to_host(x, xh, sizeof xh);
        dla_tensor_to_host(w, wh, sizeof wh);
        dla_tensor_to_host(r, rh, sizeof rh);
        dla_tensor_to_host(b, bh, sizeof(double) * (size_t)dla_tensor_numel(b));
        gru_reference(m, C, H, NB, NT, xh, wh, rh, bh, hs, ys);
        dla_tensor *want = dla_tensor_from_host(ys, DLA_F64, "CBT", DLA_DIMS(H, NB, NT));
        dla_tensor *y, *st[1];
        assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
        if (maxdiff(y, want) > 1e-12)
            fail_msg("ResetGateMode %s: %g from the loop", modes[m] ? modes[m] : "(default)",
                     maxdiff(y, want));
        assert_same(predict1(net, x), want);
        /* forward hands back the last hidden state, H x N; set, the next
         * sequence starts from it. */
        assert_true(maxdiff(st[0], dla_tensor_from_host(hs, DLA_F64, "", DLA_DIMS(H, NB))) < 1e-12);
        assert_int_equal(dla_net_set_state(net, 1, st), DLA_OK);
        gru_reference(m, C, H, NB, NT, xh, wh, rh, bh, hs, ys);
        assert_same(predict1(net, x), dla_tensor_from_host(ys, DLA_F64, "CBT", DLA_DIMS(H, NB, NT)));
        dla_net_free(net);
    }
    /* OutputMode "last": the final hidden state, "CB"; a bad mode named. */
    dla_net *last = one(dla_gru_layer(H, &(dla_gru_layer_options){.output_mode = "last"}), x);
    dla_tensor *yl = predict1(last, x);
    assert_string_equal(dla_tensor_format(yl), "CB");
    assert_int_equal(dla_tensor_dim(yl, 1), H);
    dla_net_free(last);
    dla_layer *bad = dla_gru_layer(H, &(dla_gru_layer_options){.reset_gate_mode = "sideways",
                                                               .name = "g"});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "gru 'g': ResetGateMode \"sideways\""));
    dla_scope_end();
}

/* Position encodings: sines and cosines of the step, or columns of a
 * learned table, the same for every observation; errors named. */
static void position_layers_give_each_step_its_own_channels(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "CBT", DLA_DIMS(3, 2, 5), 0.3, -1);
    dla_net *net = one(dla_sinusoidal_position_encoding_layer(6, NULL), x);
    dla_tensor *y = predict1(net, x);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dim(y, 1), 6);
    for (int t = 0; t < 5; t++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 6; i += 2) {
                const double angle = t / pow(10000.0, i / 6.0);
                assert_true(fabs(dla_tensor_item(y, i + 6 * (b + 2 * t)) - sin(angle)) < 1e-15);
                assert_true(fabs(dla_tensor_item(y, i + 1 + 6 * (b + 2 * t)) - cos(angle)) < 1e-15);
            }
    dla_net_free(net);
    net = one(dla_position_embedding_layer(4, 7, &(dla_position_embedding_layer_options){
        .name = "pos"}), x);
    dla_tensor *w = set_ramp(net, "pos", "Weights", 0.1, -1);
    assert_int_equal(dla_tensor_dim(w, 2), 7);
    y = predict1(net, x);
    for (int t = 0; t < 5; t++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                assert_true(dla_tensor_item(y, i + 4 * (b + 2 * t)) == dla_tensor_item(w, i + 4 * t));
    /* A sequence longer than MaxPosition. */
    dla_tensor *longer = dla_zeros(DLA_F64, "CBT", DLA_DIMS(3, 2, 8));
    assert_int_equal(dla_net_predict(net, 1, &longer, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "positionEmbedding: a sequence of 8 steps; "
                                             "MaxPosition is 7"));
    dla_net_free(net);
    dla_layer *odd = dla_sinusoidal_position_encoding_layer(
        5, &(dla_sinusoidal_position_encoding_layer_options){.name = "s"});
    assert_null(dla_net_create(1, &odd));
    assert_non_null(strstr(dla_last_error(), "sinusoidalPositionEncoding 's': OutputSize 5 must "
                                             "be even"));
    dla_scope_end();
}

/* The host formula: position t in channel i of d. */
static double sinusoid(double t, int i, int d)
{
    const double angle = t / pow(10000.0, (i - i % 2) / (double)d);
    return i % 2 ? cos(angle) : sin(angle);
}

/* sinusoidalPositionEncodingLayer's Positions: "auto" is the values of
 * "CB" data (a diffusion model's noise steps), the position along the S
 * of "SCB", the step of "CBT"; the explicit modes; inputs a mode cannot
 * take refused when the network is made, naming why. */
static void sinusoidal_positions_are_steps_places_or_values(void **state)
{
    (void)state;
    dla_scope_begin();
    const double steps[5] = {0, 1, 7.5, 250, 999};
    dla_tensor *x = dla_tensor_from_host(steps, DLA_F64, "CB", DLA_DIMS(1, 5));
    for (int explicit = 0; explicit < 2; explicit++) {
        dla_net *net = one(dla_sinusoidal_position_encoding_layer(
            8, &(dla_sinusoidal_position_encoding_layer_options){
                .positions = explicit ? "data-values" : NULL}), x);
        dla_tensor *y = predict1(net, x);
        assert_string_equal(dla_tensor_format(y), "CB");
        assert_int_equal(dla_tensor_dim(y, 1), 8);
        assert_int_equal(dla_tensor_dim(y, 2), 5);
        for (int b = 0; b < 5; b++)
            for (int i = 0; i < 8; i++)
                tu_assert_near(dla_tensor_item(y, i + 8 * b), sinusoid(steps[b], i, 8), 1e-12);
        dla_net_free(net);
    }
    /* "CBT" of one channel as values: each step's own value. */
    dla_tensor *xt = ramp(DLA_F64, "CBT", DLA_DIMS(1, 2, 3), 3.0, 0.5);
    dla_net *net = one(dla_sinusoidal_position_encoding_layer(
        4, &(dla_sinusoidal_position_encoding_layer_options){.positions = "data-values"}), xt);
    dla_tensor *y = predict1(net, xt);
    assert_string_equal(dla_tensor_format(y), "CBT");
    for (int k = 0; k < 6; k++)
        for (int i = 0; i < 4; i++)
            tu_assert_near(dla_tensor_item(y, i + 4 * k), sinusoid(dla_tensor_item(xt, k), i, 4),
                           1e-12);
    dla_net_free(net);
    /* "SCB": S x d x B, the position along S, every observation alike. */
    dla_tensor *xs = ramp(DLA_F64, "SCB", DLA_DIMS(6, 3, 2), 0.3, -1);
    for (int explicit = 0; explicit < 2; explicit++) {
        net = one(dla_sinusoidal_position_encoding_layer(
            4, &(dla_sinusoidal_position_encoding_layer_options){
                .positions = explicit ? "spatial-indices" : "auto"}), xs);
        y = predict1(net, xs);
        assert_string_equal(dla_tensor_format(y), "SCB");
        assert_int_equal(dla_tensor_dim(y, 1), 6);
        assert_int_equal(dla_tensor_dim(y, 2), 4);
        assert_int_equal(dla_tensor_dim(y, 3), 2);
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                for (int s = 0; s < 6; s++)
                    tu_assert_near(dla_tensor_item(y, s + 6 * (i + 4 * b)), sinusoid(s, i, 4),
                                   1e-15);
        dla_net_free(net);
    }
    /* Explicit "temporal-indices" on "CBT" is the default's values. */
    net = one(dla_sinusoidal_position_encoding_layer(
        4, &(dla_sinusoidal_position_encoding_layer_options){.positions = "temporal-indices"}), xt);
    y = predict1(net, xt);
    for (int t = 0; t < 3; t++)
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < 4; i++)
                tu_assert_near(dla_tensor_item(y, i + 4 * (b + 2 * t)), sinusoid(t, i, 4), 1e-15);
    dla_net_free(net);
    /* What a mode cannot take. */
    struct {
        const char *positions;
        dla_tensor *x;
        dla_status st;
        const char *msg;
    } bad[] = {
        {"temporal-indices", x, DLA_ERR_FORMAT, "temporal-indices positions are the steps of"},
        {"spatial-indices", xt, DLA_ERR_FORMAT, "spatial-indices positions are along the"},
        {"data-values", xs, DLA_ERR_FORMAT, "data-values positions are \"CB\" or \"CBT\""},
        {NULL, ramp(DLA_F64, "CB", DLA_DIMS(3, 5), 1, 0), DLA_ERR_SHAPE,
         "data-values positions are one channel, the position; the input has 3 (Positions "
         "\"auto\" takes"},
        /* Under "auto" the message says which formats it takes: "SSCB"
         * was told only that data-values positions, which the user never
         * asked for, are "CB" or "CBT" data. */
        {NULL, ramp(DLA_F64, "SSCB", DLA_DIMS(4, 4, 1, 2), 1, 0), DLA_ERR_FORMAT,
         "the input is \"SSCB\"; data-values positions are \"CB\" or \"CBT\" data of one "
         "channel (Positions \"auto\" takes \"CBT\" sequences by their steps, \"SCB\" 1-D "
         "images by their S positions, \"CB\" data of one channel by its values)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        dla_layer *l = dla_sinusoidal_position_encoding_layer(
            4, &(dla_sinusoidal_position_encoding_layer_options){.positions = bad[k].positions});
        net = dla_net_create(1, &l);
        assert_int_equal(dla_net_init(net, 1, &bad[k].x), bad[k].st);
        if (!strstr(dla_last_error(), bad[k].msg) ||
            (bad[k].positions && strstr(dla_last_error(), "auto")))
            fail_msg("case %zu: %s", k, dla_last_error());
        dla_net_free(net);
    }
    dla_layer *typo = dla_sinusoidal_position_encoding_layer(
        4, &(dla_sinusoidal_position_encoding_layer_options){.name = "s", .positions = "temporal"});
    assert_null(dla_net_create(1, &typo));
    assert_non_null(strstr(dla_last_error(), "sinusoidalPositionEncoding 's': Positions "
                                             "\"temporal\"; use \"auto\""));
    dla_scope_end();
}

/* resize2dLayer is dla_resize with the layer's options: by a scale (one
 * for both dims) or to an output size, nearest or bilinear; the summary
 * says which; bad options and inputs are refused naming the layer. */
static void resize2d_layer_is_dla_resize(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 4, 2, 2), 0.3, -1);
    dla_net *net = one(dla_resize2d_layer(&(dla_resize2d_layer_options){.scale = {2}}), x);
    dla_tensor *y = predict1(net, x);
    assert_same(y, dla_resize(x, &(dla_resize_options){.scale = {2, 2}}));
    assert_same(forward1(net, x), y);
    assert_int_equal(dla_tensor_dim(y, 1), 6);
    assert_int_equal(dla_tensor_dim(y, 2), 8);
    assert_string_equal(dla_tensor_format(y), "SSCB");
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "nearest resize with scale [2 2]"));
    dla_net_free(net);
    const dla_resize_options want = {.output_size = {5, 7}, .method = "linear",
                                     .geometric_transform_mode = "asymmetric"};
    net = one(dla_resize2d_layer(&(dla_resize2d_layer_options){
        .output_size = {5, 7}, .method = "bilinear", .geometric_transform_mode = "asymmetric",
        .name = "r"}), x);
    y = predict1(net, x);
    assert_same(y, dla_resize(x, &want));
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "bilinear resize to output size [5 7]"));
    dla_net_free(net);
    /* NaN keeps the aspect ratio: 3 -> 6 doubles the 4 columns. */
    net = one(dla_resize2d_layer(&(dla_resize2d_layer_options){.output_size = {6, NAN}}), x);
    y = predict1(net, x);
    assert_int_equal(dla_tensor_dim(y, 2), 8);
    dla_net_free(net);
    /* 3 -> 5 is 5/3: floor(4 * 5/3) = 6 columns, as MATLAB's
     * resize2dLayer gives (rounding up made 7). */
    net = one(dla_resize2d_layer(&(dla_resize2d_layer_options){.output_size = {5, NAN}}), x);
    y = predict1(net, x);
    assert_int_equal(dla_tensor_dim(y, 1), 5);
    assert_int_equal(dla_tensor_dim(y, 2), 6);
    dla_net_free(net);
    /* Refused options and inputs name the layer. */
    dla_layer *bad = dla_resize2d_layer(&(dla_resize2d_layer_options){
        .scale = {2}, .output_size = {4, 4}, .name = "up"});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "resize2d 'up': give exactly one of Scale, "
                                             "OutputSize and EnableReferenceInput (Scale and "
                                             "OutputSize given)"));
    bad = dla_resize2d_layer(&(dla_resize2d_layer_options){.scale = {2}, .method = "linear"});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "Method \"linear\"; use \"nearest\" or "
                                             "\"bilinear\""));
    bad = dla_resize2d_layer(&(dla_resize2d_layer_options){.output_size = {4, 2.5}});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "OutputSize entries must be whole numbers"));
    dla_layer *l = dla_resize2d_layer(&(dla_resize2d_layer_options){.scale = {2}});
    net = dla_net_create(1, &l);
    dla_tensor *seq = dla_zeros(DLA_F64, "CBT", DLA_DIMS(3, 2, 5));
    assert_int_equal(dla_net_init(net, 1, &seq), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "resize2dLayer needs two \"S\" dims"));
    dla_net_free(net);
    dla_scope_end();
}

/* resize3dLayer is dla_resize over three "S" dims; EnableReferenceInput
 * (2-D and 3-D) resizes "in" to the "S" dims of "ref", whatever ref
 * holds, and refuses a Scale or an OutputSize beside it. */
static void resize3d_and_reference_inputs_are_dla_resize(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *v = ramp(DLA_F64, "SSSCB", DLA_DIMS(3, 4, 2, 2, 2), 0.3, -1);
    dla_net *net = one(dla_resize3d_layer(&(dla_resize3d_layer_options){
        .scale = {2, 1.5, 3}, .method = "trilinear"}), v);
    assert_same(predict1(net, v), dla_resize(v, &(dla_resize_options){
                                      .scale = {2, 1.5, 3}, .method = "linear"}));
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "trilinear resize with scale [2 1.5 3]"));
    dla_net_free(net);
    net = one(dla_resize3d_layer(&(dla_resize3d_layer_options){.output_size = {5, NAN, 4}}), v);
    assert_same(predict1(net, v), dla_resize(v, &(dla_resize_options){
                                      .output_size = {5, NAN, 4}}));
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "nearest resize to output size [5 NaN 4]"));
    dla_net_free(net);

    /* "in" from the input layer, "ref" a pooled copy of it: 7 x 9 -> 3 x 4. */
    dla_layer *l[] = {
        dla_image_input_layer(7, 9, 2, &(dla_image_input_options){.normalization = "none",
                                                                   .name = "in"}),
        dla_resize2d_layer(&(dla_resize2d_layer_options){
            .enable_reference_input = 1, .method = "bilinear", .name = "rs"}),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}, .name = "pool"})};
    net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, l + 2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "pool"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "pool", "rs/ref"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(7, 9, 2, 2), 0.2, 1);
    assert_same(predict1(net, x), dla_resize(x, &(dla_resize_options){
                                      .output_size = {3, 4}, .method = "linear"}));
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "bilinear resize to the size of the input \"ref\""));
    assert_non_null(strstr(summary, "pool -> rs/ref"));
    dla_net_free(net);
    /* 3-D, "ref" left unconnected: a network input named "rs/ref". */
    dla_layer *r3 = dla_resize3d_layer(&(dla_resize3d_layer_options){
        .enable_reference_input = 1, .name = "rs"});
    net = dla_net_create(1, &r3);
    assert_non_null(net);
    assert_int_equal(dla_net_input_count(net), 2);
    assert_string_equal(dla_net_input_name(net, 1), "rs/ref");
    dla_tensor *pair[2] = {v, dla_zeros(DLA_F32, "SSSCB", DLA_DIMS(2, 5, 3, 1, 1))};
    if (dla_net_init(net, 2, pair) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 2, pair, 1, &y, NULL), DLA_OK);
    assert_same(y, dla_resize(v, &(dla_resize_options){.output_size = {2, 5, 3}}));
    dla_net_free(net);
    /* Refusals. */
    dla_layer *bad = dla_resize2d_layer(&(dla_resize2d_layer_options){
        .enable_reference_input = 1, .scale = {2}, .name = "r"});
    if (!strstr(dla_layer_error(bad), "resize2d 'r': EnableReferenceInput takes the output size "
                                      "from the input \"ref\"; give no Scale"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_resize3d_layer(&(dla_resize3d_layer_options){.scale = {2}, .method = "bilinear"});
    if (!strstr(dla_layer_error(bad), "Method \"bilinear\"; use \"nearest\" or \"trilinear\""))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_resize3d_layer(&(dla_resize3d_layer_options){.scale = {2, -1, 1}});
    if (!strstr(dla_layer_error(bad), "Scale [2 -1 1] must be positive and finite"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    /* Two scales for three dims: refused, not read as [2 1 2]. */
    bad = dla_resize3d_layer(&(dla_resize3d_layer_options){.scale = {2, 1}});
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_layer_error(bad), "Scale [2 1 0] must be positive and finite"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_resize3d_layer(&(dla_resize3d_layer_options){.output_size = {NAN, NAN, NAN}});
    if (!strstr(dla_layer_error(bad), "or some (not all) NaN"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    dla_layer *flat = dla_resize3d_layer(&(dla_resize3d_layer_options){.scale = {2}});
    net = dla_net_create(1, &flat);
    assert_int_equal(dla_net_init(net, 1, &x), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "resize3dLayer needs three \"S\" dims"));
    dla_net_free(net);
    dla_scope_end();
}

/* The 3-D layers (image3dInputLayer, convolution3dLayer,
 * transposedConv3dLayer, the 3-D pooling layers) on "SSSCB" volumes give
 * the bits of the ops they are built on with every option; their
 * summaries, statistics from data, and refusals of 2-D data name them. */
static void three_d_layers_match_their_ops(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSSCB", DLA_DIMS(6, 5, 4, 3, 2), 0.3, -1);
    /* The input: zscore per channel, 1x1x1xC statistics. */
    dla_tensor *mean = dla_tensor_from_host((double[]){1, -2, 0.5}, DLA_F64, "",
                                            DLA_DIMS(1, 1, 1, 3));
    dla_tensor *sd = dla_tensor_from_host((double[]){2, 4, 0.5}, DLA_F64, "",
                                          DLA_DIMS(1, 1, 1, 3));
    dla_layer *il[] = {dla_image3d_input_layer(6, 5, 4, 3, &(dla_image_input_options){
        .normalization = "zscore", .mean = mean, .standard_deviation = sd})};
    dla_net *in = dla_net_create(1, il);
    assert_non_null(in);
    assert_int_equal(dla_net_cast(in, DLA_F64), DLA_OK);
    assert_same(predict1(in, x), dla_div(dla_sub(x, mean), sd));
    dla_tensor *flat = dla_zeros(DLA_F64, "SSCB", DLA_DIMS(6, 5, 3, 1)), *y;
    assert_int_equal(dla_net_predict(in, 1, &flat, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "the layer takes \"SSSCB\" volumes of 6x5x4x3"));
    /* Statistics from data: per channel over space and batch. */
    assert_int_equal(dla_net_set_input_statistics(in, "image3dinput", 1, &x), DLA_OK);
    dla_tensor *m = dla_net_get(in, "image3dinput", "Mean");
    assert_int_equal(dla_tensor_ndims(m), 4);
    assert_int_equal(dla_tensor_dim(m, 4), 3);
    assert_true(maxdiff(m, dla_mean(x, DLA_DIMS(1, 2, 3, 5))) < 1e-12);
    assert_int_equal(dla_net_set_input_statistics(in, "image3dinput", 1, &flat),
                     DLA_ERR_FORMAT);
    dla_net_free(in);

    /* convolution3d: stride, dilation and padding along each of three
     * dims, MATLAB's weights (fh x fw x fd x C x F) and bias 1x1x1xF. */
    dla_net *cv = one(dla_conv3d_layer(3, 2, 2, 4, &(dla_conv_layer_options){
        .stride = {2, 1, 1}, .dilation = {1, 2, 1}, .padding = {1, 0, 2, 1, 0, 1},
        .name = "c"}), x);
    dla_tensor *w = set_ramp(cv, "c", "Weights", 0.1, -0.5), *b = set_ramp(cv, "c", "Bias", 1, -2);
    assert_int_equal(dla_tensor_ndims(w), 5);
    assert_int_equal(dla_tensor_dim(w, 3), 2);
    assert_int_equal(dla_tensor_dim(w, 4), 3);
    assert_int_equal(dla_tensor_dim(w, 5), 4);
    assert_int_equal(dla_tensor_ndims(b), 4);
    assert_int_equal(dla_tensor_dim(b, 4), 4);
    dla_tensor *want = dla_conv(x, w, b, &(dla_conv_options){
        .stride = {2, 1, 1}, .dilation = {1, 2, 1}, .padding = {{1, 2, 0}, {0, 1, 1}}});
    assert_same(predict1(cv, x), want);
    assert_same(forward1(cv, x), want);
    char summary[4096];
    dla_net_summary(cv, summary, sizeof summary);
    assert_non_null(strstr(summary, "4 3x2x2x3 convolutions with stride [2 1 1], dilation "
                                    "factor [1 2 1] and padding [1 0 2 1 0 1]"));
    dla_net_free(cv);
    dla_net *same = one(dla_conv3d_layer(3, 3, 3, 2, &(dla_conv_layer_options){
        .stride = {2, 2, 3}, .padding_mode = "same"}), x);
    y = predict1(same, x);
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    assert_int_equal(dla_tensor_dim(y, 3), 2);
    dla_net_free(same);

    /* transposedConv3d: filters before channels, cropping per dim. */
    dla_net *tc = one(dla_transposed_conv3d_layer(2, 3, 2, 5, &(dla_transposed_conv_layer_options){
        .stride = {2, 1, 3}, .cropping = {1, 0, 0, 1, 1, 1}, .name = "t"}), x);
    w = set_ramp(tc, "t", "Weights", 0.1, -0.5), b = set_ramp(tc, "t", "Bias", 1, -2);
    assert_int_equal(dla_tensor_dim(w, 4), 5); /* filters */
    assert_int_equal(dla_tensor_dim(w, 5), 3); /* channels */
    want = dla_transpconv(x, w, b, &(dla_conv_options){
        .stride = {2, 1, 3}, .padding = {{1, 0, 1}, {0, 1, 1}}});
    y = predict1(tc, x);
    assert_same(y, want);
    assert_int_equal(dla_tensor_dim(y, 3), (4 - 1) * 3 + 2 - 2);
    dla_net_free(tc);

    /* Pooling, with stride and padding along each dim. */
    dla_net *mp = one(dla_maxpool3d_layer(2, 3, 2, &(dla_pool_layer_options){
        .stride = {2, 1, 2}, .padding = {0, 1, 1, 0, 1, 1}}), x);
    assert_same(predict1(mp, x), dla_maxpool(x, DLA_DIMS(2, 3, 2), &(dla_pool_options){
        .stride = {2, 1, 2}, .padding = {{0, 1, 1}, {1, 0, 1}}}));
    dla_net_summary(mp, summary, sizeof summary);
    assert_non_null(strstr(summary, "2x3x2 max pooling with stride [2 1 2] and padding "
                                    "[0 1 1 0 1 1]"));
    dla_net *ap = one(dla_avgpool3d_layer(3, 3, 3, &(dla_pool_layer_options){
        .stride = {2, 2, 2}, .padding_mode = "same", .padding_value = "mean"}), x);
    assert_same(forward1(ap, x), dla_avgpool(x, DLA_DIMS(3, 3, 3), &(dla_pool_options){
        .stride = {2, 2, 2}, .padding_mode = "same", .padding_value = "mean"}));
    dla_net *gm = one(dla_global_maxpool3d_layer(NULL), x);
    y = predict1(gm, x);
    assert_string_equal(dla_tensor_format(y), "SSSCB");
    assert_true(maxdiff(y, dla_max(x, DLA_DIMS(1, 2, 3))) == 0);
    dla_net *ga = one(dla_global_avgpool3d_layer(NULL), x);
    assert_true(maxdiff(predict1(ga, x), dla_mean(x, DLA_DIMS(1, 2, 3))) < 1e-12);
    dla_net *nets[] = {mp, ap, gm, ga};
    for (int i = 0; i < 4; i++)
        dla_net_free(nets[i]);

    /* 2-D data is refused by each 3-D layer, naming what it needs. */
    dla_tensor *img = ramp(DLA_F64, "SSCB", DLA_DIMS(6, 5, 3, 2), 0.3, -1);
    dla_layer *refused[] = {
        dla_conv3d_layer(2, 2, 2, 3, NULL), dla_transposed_conv3d_layer(2, 2, 2, 3, NULL),
        dla_maxpool3d_layer(2, 2, 2, NULL), dla_global_avgpool3d_layer(NULL),
    };
    const char *says[] = {"convolution3d needs three \"S\" dims",
                          "transposedConvolution3d needs three \"S\" dims",
                          "3-D pooling needs three \"S\" dims", "3-D pooling needs three \"S\" dims"};
    for (int i = 0; i < 4; i++) {
        dla_net *n = dla_net_create(1, &refused[i]);
        assert_non_null(n);
        assert_int_equal(dla_net_init(n, 1, &img), DLA_ERR_FORMAT);
        if (!strstr(dla_last_error(), says[i]))
            fail_msg("layer %d: %s", i, dla_last_error());
        dla_net_free(n);
    }
    /* A refused option names the layer and the dim. */
    dla_layer *bad = dla_conv3d_layer(3, 3, 0, 2, &(dla_conv_layer_options){.name = "v"});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "convolution3d 'v': FilterSize must be in 1..2^20"));
    assert_non_null(strstr(dla_last_error(), "(dim 3: 0,"));
    dla_scope_end();
}

/* NormalizationDimension "auto" (the default) with statistics given
 * takes the dims they match, as MATLAB's does: an average volume of
 * h x w x d x c (per element), one value ("all"), one per channel. An
 * element-sized Mean failed dla_net_init with "dla_reshape: cannot
 * reshape 3x4x2x2 (48 elements) to 1x1x1x2"; statistics that match no
 * shape now say which shape the dimension takes. */
static void auto_normalization_dimension_follows_the_statistics_given(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(DLA_F64, "SSSCB", DLA_DIMS(3, 4, 2, 2, 2), 0.3, -1);
    dla_tensor *avg = ramp(DLA_F64, "", DLA_DIMS(3, 4, 2, 2), 0.2, 0.5);
    dla_tensor *sd = dla_full(4, DLA_F64, "", DLA_DIMS(1));
    dla_tensor *sde = ramp(DLA_F64, "", DLA_DIMS(3, 4, 2, 2), 0.1, 1);
    dla_layer *l[] = {dla_image3d_input_layer(3, 4, 2, 2, &(dla_image_input_options){
        .normalization = "zscore", .mean = avg, .standard_deviation = sde})};
    dla_net *net = dla_net_create(1, l);
    assert_non_null(net);
    if (dla_net_cast(net, DLA_F64) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_same(predict1(net, x), dla_div(dla_sub(x, dla_reshape(avg, "", DLA_DIMS(3, 4, 2, 2, 1))),
                                          dla_reshape(sde, "", DLA_DIMS(3, 4, 2, 2, 1))));
    dla_net_free(net);
    /* One value: "all", in a 2-D image input and a feature input. */
    dla_tensor *img = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 4, 2, 2), 0.3, -1);
    dla_layer *i2[] = {dla_image_input_layer(3, 4, 2, &(dla_image_input_options){.mean = sd})};
    net = dla_net_create(1, i2);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_same(predict1(net, img), dla_affine(img, 1, -4));
    dla_net_free(net);
    dla_tensor *f = ramp(DLA_F64, "CB", DLA_DIMS(3, 2), 0.3, -1);
    dla_layer *fl[] = {dla_feature_input_layer(3, &(dla_feature_input_options){
        .normalization = "zerocenter", .mean = sd})};
    net = dla_net_create(1, fl);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_same(predict1(net, f), dla_affine(f, 1, -4));
    dla_net_free(net);
    /* Statistics of no shape of the layer's. */
    dla_tensor *five = dla_zeros(DLA_F64, "", DLA_DIMS(5, 1));
    dla_layer *bad[] = {dla_image3d_input_layer(3, 4, 2, 2, &(dla_image_input_options){
        .mean = five})};
    assert_null(dla_net_create(1, bad));
    if (!strstr(dla_last_error(), "Mean is 5x1; NormalizationDimension \"channel\" takes "
                                  "1x1x1x2"))
        fail_msg("%s", dla_last_error());
    dla_scope_end();
}

/* y = Scale .* (x - mean) ./ sqrt(var + 1e-5) + Offset written out in
 * double, the mean and the (biased) variance over the elements that share
 * a key: the coordinates of the dims not reduced (red[d] 0), the channel
 * divided by cpg for group normalization (cpg > 0). */
static void norm_by_hand(const char *fmt, int nd, const int64_t *d, const int *red, int64_t cpg,
                         const double *x, const double *off, const double *sc, double *y)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= d[i];
    int64_t *key = malloc(sizeof *key * (size_t)n), *chan = malloc(sizeof *chan * (size_t)n);
    for (int64_t e = 0; e < n; e++) {
        int64_t r = e, k = 0, mul = 1;
        for (int i = 0; i < nd; i++) {
            const int64_t co = r % d[i];
            r /= d[i];
            int64_t kc = co;
            if (fmt[i] == 'C') {
                chan[e] = co;
                kc = cpg ? co / cpg : red[i] ? 0 : co;
            } else if (red[i]) {
                kc = 0;
            }
            k += kc * mul;
            mul *= d[i];
        }
        key[e] = k;
    }
    for (int64_t e = 0; e < n; e++) {
        double sum = 0, sq = 0;
        int64_t m = 0;
        for (int64_t f = 0; f < n; f++)
            if (key[f] == key[e])
                sum += x[f], m++;
        const double mu = sum / (double)m;
        for (int64_t f = 0; f < n; f++)
            if (key[f] == key[e])
                sq += (x[f] - mu) * (x[f] - mu);
        y[e] = sc[chan[e]] * (x[e] - mu) / sqrt(sq / (double)m + 1e-5) + off[chan[e]];
    }
    free(key);
    free(chan);
}

static double *host_of(dla_tensor *t)
{
    const int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof *h * (size_t)(n ? n : 1));
    assert_int_equal(dla_tensor_to_host(dla_cast(t, DLA_F64), h, sizeof *h * (size_t)n), DLA_OK);
    return h;
}

/* The layer, group and instance normalization layers with MATLAB's
 * default OperationDimension ("auto": "channel-only" with a "T" dim,
 * "spatial-channel" without) against the formula written out, on images,
 * 1-D images, sequences (one step too) and features, batches of one too,
 * in both modes: the layers' own tests compare them with the ops they
 * call, so a layer reducing over the wrong dims would pass those. */
static void normalization_layers_match_formulas_written_out(void **state)
{
    (void)state;
    static const struct {
        const char *fmt;
        int nd;
        int64_t d[4];
        int layer_red[4], per_obs_red[4]; /* layer norm's dims; group/instance's S and T */
    } cases[] = {
        {"SSCB", 4, {3, 2, 4, 2}, {1, 1, 1, 0}, {1, 1, 0, 0}},
        {"SSCB", 4, {1, 1, 4, 1}, {1, 1, 1, 0}, {1, 1, 0, 0}},
        {"SCB", 3, {5, 4, 2}, {1, 1, 0}, {1, 0, 0}},
        {"CBT", 3, {4, 2, 3}, {1, 0, 0}, {0, 0, 1}},
        {"CBT", 3, {4, 3, 1}, {1, 0, 0}, {0, 0, 1}},
        {"CB", 2, {4, 3}, {1, 0}, {0, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int kind = 0; kind < 3; kind++) {
            if (kind == 2 && !strcmp(cases[k].fmt, "CB"))
                continue; /* instance normalization refuses "CB" */
            dla_scope_begin();
            dla_tensor *x = ramp(DLA_F64, cases[k].fmt, cases[k].nd, cases[k].d, 0.37, -1.1);
            dla_layer *l = kind == 0 ? dla_layernorm_layer(&(dla_norm_layer_options){.name = "n"})
                           : kind == 1 ? dla_groupnorm_layer(2, &(dla_norm_layer_options){.name = "n"})
                                       : dla_instancenorm_layer(&(dla_norm_layer_options){.name = "n"});
            dla_net *net = one(l, x);
            double *off = host_of(set_ramp(net, "n", "Offset", 0.3, -0.5));
            double *sc = host_of(set_ramp(net, "n", "Scale", -0.2, 1.3));
            double *hx = host_of(x);
            const int64_t n = dla_tensor_numel(x), c = cases[k].d[strchr(cases[k].fmt, 'C') - cases[k].fmt];
            double *want = malloc(sizeof *want * (size_t)n);
            norm_by_hand(cases[k].fmt, cases[k].nd, cases[k].d,
                         kind == 0 ? cases[k].layer_red : cases[k].per_obs_red,
                         kind == 1 ? c / 2 : 0, hx, off, sc, want);
            for (int training = 0; training < 2; training++) {
                dla_tensor *y = training ? forward1(net, x) : predict1(net, x);
                assert_string_equal(dla_tensor_format(y), cases[k].fmt);
                double *got = host_of(y);
                for (int64_t e = 0; e < n; e++)
                    if (!(fabs(got[e] - want[e]) <= 1e-12))
                        fail_msg("%s on %s (case %zu, %s): element %lld is %.17g, by hand %.17g",
                                 dla_net_layer_type(net, 0), cases[k].fmt, k,
                                 training ? "forward" : "predict", (long long)e, got[e], want[e]);
                free(got);
            }
            free(off);
            free(sc);
            free(hx);
            free(want);
            dla_net_free(net);
            dla_scope_end();
        }
    }
}

/* groupNormalizationLayer's NumGroups "channel-wise" (DLA_CHANNEL_WISE):
 * one group a channel for whatever count the input has, the values of
 * NumGroups C and of instance normalization; the summary says so. */
static void group_norm_channel_wise_is_a_group_a_channel(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int c = 2; c <= 3; c++) {
        dla_tensor *x = ramp(DLA_F64, "SSCB", DLA_DIMS(3, 4, c, 2), 0.7, -2);
        dla_net *wise = one(dla_groupnorm_layer(DLA_CHANNEL_WISE, NULL), x);
        dla_net *counted = one(dla_groupnorm_layer(c, NULL), x);
        dla_net *inst = one(dla_instancenorm_layer(NULL), x);
        dla_tensor *y = predict1(wise, x);
        assert_true(maxdiff(y, predict1(counted, x)) == 0);
        assert_true(maxdiff(y, predict1(inst, x)) < 1e-12);
        char buf[2048];
        dla_net_summary(wise, buf, sizeof buf);
        assert_non_null(strstr(buf, "Group normalization (channel-wise)"));
        dla_net_free(wise);
        dla_net_free(counted);
        dla_net_free(inst);
    }
    /* Other negative counts are still refused. */
    dla_layer *neg = dla_groupnorm_layer(-2, &(dla_norm_layer_options){.name = "g"});
    assert_null(dla_net_create(1, &neg));
    assert_non_null(strstr(dla_last_error(), "groupNormalization 'g': NumGroups -2 must be "
                                             "positive"));
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(image_input_zscore_subtracts_mean_and_divides_by_std),
        TU_TEST(input_statistics_come_from_data),
        TU_TEST(input_statistics_refuse_data_of_other_sizes),
        TU_TEST(input_statistics_keep_a_small_spread_on_a_large_offset),
        TU_TEST(zscore_of_a_constant_element_divides_by_one),
        TU_TEST(feature_input_normalizes_and_takes_statistics_from_data),
        TU_TEST(conv2d_matches_dla_conv_with_stride_dilation_and_padding),
        TU_TEST(transposed_conv_layers_match_dla_transpconv),
        TU_TEST(resize2d_layer_is_dla_resize),
        TU_TEST(resize3d_and_reference_inputs_are_dla_resize),
        TU_TEST(self_attention_is_projections_around_dla_attention),
        TU_TEST(conv1d_convolves_along_time_and_causal_pads_before),
        TU_TEST(conv_layers_convolve_each_step_of_an_image_sequence),
        TU_TEST(two_d_conv_layers_convolve_over_s_and_t_of_spatio_temporal_data),
        TU_TEST(batchnorm_forward_uses_the_batch_and_predict_the_stored_statistics),
        TU_TEST(activations_match_their_ops),
        TU_TEST(smooth_activations_match_their_ops),
        TU_TEST(per_observation_normalizations_match_their_ops),
        TU_TEST(pooling_layers_match_their_ops),
        TU_TEST(one_d_pooling_layers_match_their_ops),
        TU_TEST(two_d_pooling_layers_pool_over_s_and_t_of_spatio_temporal_data),
        TU_TEST(grouped_convolution_layer_is_dla_conv_with_groups),
        TU_TEST(three_d_layers_match_their_ops),
        TU_TEST(auto_normalization_dimension_follows_the_statistics_given),
        TU_TEST(multiplication_and_depth_concatenation_join_named_inputs),
        TU_TEST(clipped_relu_layer_clips_at_zero_and_the_ceiling),
        TU_TEST(spatial_dropout_drops_whole_channels),
        TU_TEST(prelu_layer_scales_the_negative_part_by_alpha),
        TU_TEST(crosschannel_layer_is_crosschannelnorm_with_its_options),
        TU_TEST(indexing1d_layer_takes_the_first_or_last_index),
        TU_TEST(fully_connected_and_flatten_match_their_ops),
        TU_TEST(addition_and_concatenation_join_named_inputs),
        TU_TEST(an_addition_of_inputs_of_other_sizes_is_refused),
        TU_TEST(lstm_matches_a_loop_written_out_in_both_output_modes),
        TU_TEST(bilstm_matches_two_loops_written_out_in_both_output_modes),
        TU_TEST(predict_state_carries_a_sequence_on_in_inference_mode),
        TU_TEST(net_set_takes_a_recurrent_state_per_observation),
        TU_TEST(gru_matches_a_loop_written_out_in_every_reset_gate_mode),
        TU_TEST(recurrent_layers_take_sequences_of_no_steps_and_name_a_channel_mismatch),
        TU_TEST(recurrent_layers_give_cb_data_back_as_cb),
        TU_TEST(position_layers_give_each_step_its_own_channels),
        TU_TEST(sinusoidal_positions_are_steps_places_or_values),
        TU_TEST(normalization_layers_match_formulas_written_out),
        TU_TEST(group_norm_channel_wise_is_a_group_a_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

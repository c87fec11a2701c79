/*
 * test_net_io.c - saving and loading networks as safetensors files: the
 * round trip is bit for bit (values, tables, summary, predictions), the
 * file is what safetensors readers expect, and broken or foreign files
 * fail with DLA_ERR_IO or DLA_ERR_UNSUPPORTED and a message, never a
 * crash or a leak: truncated at every length, bytes flipped at random.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static unsigned char *slurp(const char *p, long *size)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*size + 1);
    assert_int_equal(fread(b, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    b[*size] = 0;
    return b;
}

static void spit(const char *p, const void *b, size_t n)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Makes f (as slurp gives it) a file of format 1.1 (testutil.h). */
static void as_version_1_1(unsigned char *f)
{
    assert_true(tu_net_file_as_version_1_1(f));
}

/* A graph with every kind of parameter: input statistics, batch norm
 * state, an addition, an LSTM elsewhere. */
static dla_net *sample_cnn(void)
{
    dla_layer *l[] = {
        dla_image_input_layer(8, 8, 2, &(dla_image_input_options){.normalization = "zscore", .name = "in"}),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.padding_mode = "same", .name = "c1"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
        dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
        dla_relu_layer(NULL),
        dla_avgpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(8, l);
    assert_non_null(net);
    dla_layer *c2 = dla_conv2d_layer(1, 1, 4, &(dla_conv_layer_options){.name = "c2"});
    assert_int_equal(dla_net_add_layers(net, 1, &c2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "c2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c2", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    /* Statistics and state that are not the initial ones. */
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, 5));
    assert_int_equal(dla_net_set_input_statistics(net, "in", 1, &x), DLA_OK);
    dla_tensor *y, *st[2];
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_int_equal(dla_net_set_state(net, 2, st), DLA_OK);
    dla_scope_end();
    return net;
}

static void assert_same_values(const dla_table *a, const dla_table *b)
{
    assert_int_equal(dla_table_count(a), dla_table_count(b));
    for (int i = 0; i < dla_table_count(a); i++) {
        assert_string_equal(dla_table_layer(a, i), dla_table_layer(b, i));
        assert_string_equal(dla_table_parameter(a, i), dla_table_parameter(b, i));
        dla_tensor *x = dla_table_value(a, i), *y = dla_table_value(b, i);
        assert_int_equal(dla_tensor_dtype(x), dla_tensor_dtype(y));
        int64_t dx[DLA_MAX_DIMS], dy[DLA_MAX_DIMS];
        int nx = dla_tensor_dims(x, dx), ny = dla_tensor_dims(y, dy);
        assert_int_equal(nx, ny);
        assert_memory_equal(dx, dy, sizeof *dx * (size_t)nx);
        size_t bytes = (size_t)dla_tensor_numel(x) * dla_dtype_size(dla_tensor_dtype(x));
        unsigned char *hx = malloc(bytes + 1), *hy = malloc(bytes + 1);
        assert_int_equal(dla_tensor_to_host(x, hx, bytes), DLA_OK);
        assert_int_equal(dla_tensor_to_host(y, hy, bytes), DLA_OK);
        assert_memory_equal(hx, hy, bytes);
        free(hx);
        free(hy);
    }
}

/* a and b predict the same bits of single-precision random input. */
static void predict_alike(dla_net *a, dla_net *b, const char *format, int nd, const int64_t *dims)
{
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F32, format, nd, dims), *ya, *yb;
    assert_int_equal(dla_net_predict(a, 1, &x, 1, &ya, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(b, 1, &x, 1, &yb, NULL), DLA_OK);
    const int64_t n = dla_tensor_numel(ya);
    assert_int_equal(dla_tensor_numel(yb), n);
    float *ha = malloc(sizeof(float) * (size_t)n), *hb = malloc(sizeof(float) * (size_t)n);
    assert_int_equal(dla_tensor_to_host(ya, ha, sizeof(float) * (size_t)n), DLA_OK);
    assert_int_equal(dla_tensor_to_host(yb, hb, sizeof(float) * (size_t)n), DLA_OK);
    assert_memory_equal(ha, hb, sizeof(float) * (size_t)n);
    free(ha);
    free(hb);
    dla_scope_end();
}

/* The blocks of exactly watch_size bytes tu_alloc is asked for. */
static size_t watch_size;
static long watch_count;
static void *watching_alloc(void *user, void *ptr, size_t size)
{
    if (!ptr && size && size == watch_size)
        watch_count++;
    return tu_alloc(user, ptr, size);
}

/* A save reads each tensor from its device once: the checksum in the
 * header is patched in after the data (format 1.2 first read every
 * tensor twice, once for the checksum and once to write it, and a big
 * network's save took twice the copies). Each read is a host block of the
 * tensor's size: the fc layer's 4000 x 300 weights are the only block of
 * their size. The file still loads, checksum checked. */
static void a_save_reads_each_tensor_once(void **state)
{
    (void)state;
    dla_rng_seed(5);
    dla_layer *l[] = {
        dla_feature_input_layer(300, NULL),
        dla_fc_layer(4000, &(dla_fc_layer_options){.name = "fc"}),
    };
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    watch_size = (size_t)4000 * 300 * sizeof(float);
    watch_count = 0;
    dla_set_allocator(watching_alloc, NULL);
    dla_status st = dla_net_save(net, path("big.safetensors"));
    dla_set_allocator(tu_alloc, NULL);
    assert_int_equal(st, DLA_OK);
    assert_int_equal(watch_count, 1);
    dla_net *back = NULL;
    if (dla_net_load(path("big.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_free(back);
    dla_net_free(net);
}

static void a_saved_network_loads_back_bit_for_bit(void **state)
{
    (void)state;
    dla_rng_seed(21);
    dla_net *net = sample_cnn();
    assert_int_equal(dla_net_save(net, path("cnn.safetensors")), DLA_OK);
    dla_net *back = NULL;
    if (dla_net_load(path("cnn.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_true(dla_net_initialized(back));
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    assert_same_values(dla_net_state(net), dla_net_state(back));
    assert_int_equal(dla_tensor_item(dla_net_get(net, "in", "StandardDeviation"), 1),
                     dla_tensor_item(dla_net_get(back, "in", "StandardDeviation"), 1));
    char a[8192], b[8192];
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "c2 -> add/in2"));
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, 3)), *ya, *yb;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &ya, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(back, 1, &x, 1, &yb, NULL), DLA_OK);
    float ha[9], hb[9];
    dla_tensor_to_host(ya, ha, sizeof ha);
    dla_tensor_to_host(yb, hb, sizeof hb);
    assert_memory_equal(ha, hb, sizeof ha);
    dla_scope_end();
    dla_net_free(back);
    dla_net_free(net);

    /* Sequences, an LSTM and double precision too. */
    dla_layer *s[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.min_length = 4}),
                      dla_conv1d_layer(2, 3, &(dla_conv_layer_options){.padding_mode = "causal"}),
                      dla_lstm_layer(5, &(dla_lstm_layer_options){.output_mode = "last"}),
                      dla_dropout_layer(0.2, NULL), dla_fc_layer(2, NULL)};
    net = dla_net_create(5, s);
    assert_non_null(net);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_int_equal(dla_net_save(net, path("seq.safetensors")), DLA_OK);
    assert_int_equal(dla_net_load(path("seq.safetensors"), &back), DLA_OK);
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    assert_int_equal(dla_tensor_dtype(dla_table_value(dla_net_learnables(back), 0)), DLA_F64);
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    dla_net_free(back);
    dla_net_free(net);

    /* A bilstm (8H-row learnables, a 2H state) between two LSTMs. */
    dla_layer *bl[] = {dla_sequence_input_layer(3, NULL),
                       dla_bilstm_layer(4, &(dla_lstm_layer_options){.name = "bi"}),
                       dla_bilstm_layer(2, &(dla_lstm_layer_options){.output_mode = "last",
                                                                     .bias_initializer = "narrow-normal"}),
                       dla_fc_layer(2, NULL)};
    net = dla_net_create(4, bl);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("bilstm.safetensors")), DLA_OK);
    if (dla_net_load(path("bilstm.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    assert_same_values(dla_net_state(net), dla_net_state(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "BiLSTM with 4 hidden units (OutputMode 'sequence')"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 5));
    dla_net_free(back);
    dla_net_free(net);

    /* The normalization and smooth layers with their options. */
    dla_layer *m[] = {
        dla_image_input_layer(6, 6, 4, &(dla_image_input_options){.normalization = "none"}),
        dla_layernorm_layer(&(dla_norm_layer_options){.epsilon = 1e-4,
                                                      .operation_dimension = "spatial-channel"}),
        dla_gelu_layer("tanh", NULL), dla_groupnorm_layer(2, &(dla_norm_layer_options){
                                          .scale_initializer = "narrow-normal"}),
        dla_elu_layer(0.5, NULL), dla_instancenorm_layer(NULL), dla_swish_layer(NULL),
        dla_sigmoid_layer(NULL), dla_tanh_layer(NULL)};
    net = dla_net_create(9, m);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("norms.safetensors")), DLA_OK);
    if (dla_net_load(path("norms.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "Group normalization (2 groups) with 4 channels"));
    assert_non_null(strstr(b, "GELU (approximation tanh)"));
    predict_alike(net, back, "SSCB", DLA_DIMS(6, 6, 4, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* Transposed convolutions with their options. */
    dla_layer *t[] = {
        dla_image_input_layer(5, 4, 3, &(dla_image_input_options){.normalization = "none"}),
        dla_transposed_conv2d_layer(3, 2, 4, &(dla_transposed_conv_layer_options){
            .stride = {2, 1}, .cropping = {1, 1, 0, 1}, .name = "up"}),
        dla_transposed_conv2d_layer(2, 2, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 2}, .cropping_mode = "same", .weights_initializer = "he"})};
    net = dla_net_create(3, t);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("transposed.safetensors")), DLA_OK);
    if (dla_net_load(path("transposed.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "2-D Transposed Convolution"));
    assert_non_null(strstr(b, "cropping 'same'"));
    predict_alike(net, back, "SSCB", DLA_DIMS(5, 4, 3, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* 1-D pooling with its options, over "T". */
    dla_layer *p1[] = {
        dla_sequence_input_layer(3, NULL),
        dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.padding_mode = "same"}),
        dla_maxpool1d_layer(3, &(dla_pool1d_layer_options){.stride = 2, .padding = {1, 2}}),
        dla_avgpool1d_layer(2, &(dla_pool1d_layer_options){.padding_mode = "same",
                                                           .padding_value = "mean",
                                                           .name = "avg"}),
        dla_fc_layer(2, NULL)};
    net = dla_net_create(5, p1);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("pool1d.safetensors")), DLA_OK);
    if (dla_net_load(path("pool1d.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "1-D max pooling with pool size 3, stride 2 and padding [1 2]"));
    assert_non_null(strstr(b, "1-D average pooling with pool size 2, stride 1 and padding 'same'"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 9));
    dla_net_free(back);
    dla_net_free(net);

    /* Volumes: every 3-D layer keeps its options and values. */
    dla_layer *v3[] = {
        dla_image3d_input_layer(6, 5, 4, 2, &(dla_image_input_options){
            .normalization = "zscore", .normalization_dimension = "element"}),
        dla_conv3d_layer(3, 2, 2, 3, &(dla_conv_layer_options){
            .stride = {1, 2, 1}, .dilation = {1, 1, 2}, .padding = {1, 1, 0, 1, 2, 0}}),
        dla_maxpool3d_layer(2, 2, 1, &(dla_pool_layer_options){.padding = {0, 1, 0, 0, 0, 0}}),
        dla_transposed_conv3d_layer(2, 1, 2, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 1, 2}, .cropping_mode = "same"}),
        dla_avgpool3d_layer(2, 2, 2, &(dla_pool_layer_options){
            .stride = {2, 2, 2}, .padding_mode = "same", .padding_value = "mean"}),
        dla_global_maxpool3d_layer(NULL), dla_fc_layer(3, NULL)};
    net = dla_net_create(7, v3);
    assert_non_null(net);
    /* Statistics that are not zeros and ones, so that loading them counts. */
    dla_tensor *vx = dla_randn(DLA_F32, "SSSCB", DLA_DIMS(6, 5, 4, 2, 3));
    assert_int_equal(dla_net_set_input_statistics(net, "image3dinput", 1, &vx), DLA_OK);
    assert_int_equal(dla_net_save(net, path("volume.safetensors")), DLA_OK);
    if (dla_net_load(path("volume.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "6x5x4x2 volumes with 'zscore' normalization"));
    assert_non_null(strstr(b, "3 3x2x2x2 convolutions with stride [1 2 1], dilation factor "
                              "[1 1 2] and padding [1 1 0 1 2 0]"));
    assert_non_null(strstr(b, "transposed convolutions with stride [2 1 2] and cropping 'same'"));
    assert_non_null(strstr(b, "2x2x2 average pooling with stride [2 2 2] and padding 'same'"));
    predict_alike(net, back, "SSSCB", DLA_DIMS(6, 5, 4, 2, 2));
    dla_tensor_release(vx);
    dla_net_free(back);
    dla_net_free(net);

    /* Grouped and channel-wise convolutions. */
    dla_layer *gc[] = {
        dla_image_input_layer(6, 6, 4, &(dla_image_input_options){.normalization = "none"}),
        dla_grouped_conv2d_layer(3, 3, 2, DLA_CHANNEL_WISE, &(dla_conv_layer_options){
            .padding_mode = "same", .name = "dw"}),
        dla_grouped_conv2d_layer(1, 1, 3, 2, &(dla_conv_layer_options){.name = "pw"})};
    net = dla_net_create(3, gc);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("grouped.safetensors")), DLA_OK);
    if (dla_net_load(path("grouped.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "4 groups of 2 3x3x1 convolutions"));
    assert_non_null(strstr(b, "2 groups of 3 1x1x4 convolutions"));
    predict_alike(net, back, "SSCB", DLA_DIMS(6, 6, 4, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* A PReLU with an Alpha a channel (set away from its initial value)
     * and 1-D indexing of the last step. */
    dla_layer *pi[] = {
        dla_sequence_input_layer(3, &(dla_sequence_input_options){.min_length = 2}),
        dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.name = "c"}),
        dla_prelu_layer(0.2, &(dla_prelu_layer_options){.name = "pr", .per_channel = 1}),
        dla_indexing1d_layer("last", &(dla_indexing1d_layer_options){.name = "ix"}),
        dla_fc_layer(2, NULL)};
    net = dla_net_create(5, pi);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *alpha = dla_tensor_from_host((float[]){0.1f, -0.2f, 0.3f, 0.4f}, DLA_F32, "",
                                             DLA_DIMS(4, 1));
    assert_int_equal(dla_net_set(net, "pr", "Alpha", alpha), DLA_OK);
    dla_tensor_release(alpha);
    assert_int_equal(dla_net_save(net, path("prelu.safetensors")), DLA_OK);
    if (dla_net_load(path("prelu.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "PReLU with an Alpha for each of 4 channels"));
    assert_non_null(strstr(b, "1-D indexing of the last index"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 5));
    dla_net_free(back);
    dla_net_free(net);

    /* Cross-channel normalization with its options away from MATLAB's
     * defaults: they are saved (the loaded network predicts the same). */
    dla_layer *cn[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 6, &(dla_conv_layer_options){.name = "c", .padding_mode = "same"}),
        dla_crosschannelnorm_layer(4, &(dla_crosschannelnorm_layer_options){
            .name = "lrn", .alpha = 3, .beta = 1.5, .k = 0.5})};
    net = dla_net_create(3, cn);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("crossnorm.safetensors")), DLA_OK);
    if (dla_net_load(path("crossnorm.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "cross channel normalization with 4 channels per element"));
    predict_alike(net, back, "SSCB", DLA_DIMS(4, 4, 2, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* A gate, a clipped ReLU and a depth concatenation. */
    dla_layer *sg[] = {
        dla_image_input_layer(5, 5, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 3, &(dla_conv_layer_options){.name = "c"}),
        dla_clipped_relu_layer(0.75, &(dla_layer_options){.name = "cr"}),
        dla_global_avgpool2d_layer(NULL),
        dla_multiplication_layer(2, &(dla_layer_options){.name = "gate"}),
        dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "cat"}),
        dla_spatial_dropout_layer(0.25, NULL)};
    net = dla_net_create(7, sg);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "cr", "gate/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_save(net, path("gate.safetensors")), DLA_OK);
    if (dla_net_load(path("gate.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "Clipped ReLU with ceiling 0.75"));
    assert_non_null(strstr(b, "Depth concatenation of 2 inputs"));
    assert_non_null(strstr(b, "25% spatial dropout"));
    predict_alike(net, back, "SSCB", DLA_DIMS(5, 5, 2, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* A GRU with a 6H bias, and its state. */
    dla_layer *gr[] = {dla_sequence_input_layer(3, NULL),
                       dla_gru_layer(4, &(dla_gru_layer_options){
                           .reset_gate_mode = "recurrent-bias-after-multiplication", .name = "g"}),
                       dla_fc_layer(2, NULL)};
    net = dla_net_create(3, gr);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("gru.safetensors")), DLA_OK);
    if (dla_net_load(path("gru.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    assert_same_values(dla_net_state(net), dla_net_state(back));
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "GRU with 4 hidden units (OutputMode 'sequence', ResetGateMode "
                              "'recurrent-bias-after-multiplication')"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 5));
    dla_net_free(back);
    dla_net_free(net);

    /* Position encodings. */
    dla_layer *po[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "in"}),
                       dla_position_embedding_layer(3, 9, &(dla_position_embedding_layer_options){
                           .weights_initializer = "glorot"}),
                       dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
                       dla_sinusoidal_position_encoding_layer(4, NULL)};
    net = dla_net_create(4, po);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "in", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_save(net, path("position.safetensors")), DLA_OK);
    if (dla_net_load(path("position.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "3 channels for each of 9 positions"));
    assert_non_null(strstr(b, "4 channels of sines and cosines of the step"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 6));
    dla_net_free(back);
    /* A file written before Positions existed lacks it: it loads, its
     * encoding the steps' as before. */
    long psize;
    unsigned char *pfile = slurp(path("position.safetensors"), &psize);
    as_version_1_1(pfile);
    static const char pkey[] = ",\\\"Positions\\\":\\\"auto\\\"";
    char *pat = strstr((char *)pfile + 8, pkey);
    assert_non_null(pat);
    memset(pat, ' ', strlen(pkey));
    spit(path("position_old.safetensors"), pfile, (size_t)psize);
    free(pfile);
    if (dla_net_load(path("position_old.safetensors"), &back) != DLA_OK)
        fail_msg("load of a file without Positions: %s", dla_last_error());
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 6));
    dla_net_free(back);
    dla_net_free(net);

    /* A diffusion model's noise-step embedding: Positions "data-values"
     * under its MATLAB name, and group normalization "channel-wise". */
    dla_layer *ns[] = {dla_feature_input_layer(1, NULL),
                       dla_sinusoidal_position_encoding_layer(
                           8, &(dla_sinusoidal_position_encoding_layer_options){
                               .positions = "data-values", .name = "pe"}),
                       dla_fc_layer(6, NULL)};
    net = dla_net_create(3, ns);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("noise.safetensors")), DLA_OK);
    pfile = slurp(path("noise.safetensors"), &psize);
    assert_non_null(strstr((char *)pfile + 8, "\\\"Positions\\\":\\\"data-values\\\""));
    free(pfile);
    if (dla_net_load(path("noise.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "8 channels of sines and cosines of the input's values"));
    predict_alike(net, back, "CB", DLA_DIMS(1, 5));
    dla_net_free(back);
    dla_net_free(net);
    dla_layer *gw[] = {dla_image_input_layer(4, 3, 3, &(dla_image_input_options){
                           .normalization = "none"}),
                       dla_groupnorm_layer(DLA_CHANNEL_WISE, NULL)};
    net = dla_net_create(2, gw);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("channelwise.safetensors")), DLA_OK);
    if (dla_net_load(path("channelwise.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "Group normalization (channel-wise) with 3 channels"));
    predict_alike(net, back, "SSCB", DLA_DIMS(4, 3, 3, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* Resizing by a scale and to a size (one of them NaN). */
    dla_layer *rs[] = {
        dla_image_input_layer(5, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_resize2d_layer(&(dla_resize2d_layer_options){
            .scale = {1.5, 2}, .method = "bilinear", .geometric_transform_mode = "asymmetric"}),
        dla_resize2d_layer(&(dla_resize2d_layer_options){
            .output_size = {NAN, 5}, .nearest_rounding_mode = "onnx-10", .name = "down"})};
    net = dla_net_create(3, rs);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("resize.safetensors")), DLA_OK);
    if (dla_net_load(path("resize.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "bilinear resize with scale [1.5 2]"));
    assert_non_null(strstr(b, "nearest resize to output size [NaN 5]"));
    predict_alike(net, back, "SSCB", DLA_DIMS(5, 4, 2, 2));
    dla_net_free(back);
    /* A file written before EnableReferenceInput existed lacks it (blanked
     * out as below for the attention's options): it loads, without
     * "ref" ports. */
    long rsize;
    unsigned char *rfile = slurp(path("resize.safetensors"), &rsize);
    as_version_1_1(rfile);
    for (int k = 0; k < 2; k++) {
        static const char key[] = ",\\\"EnableReferenceInput\\\":0";
        char *at = strstr((char *)rfile + 8, key);
        assert_non_null(at);
        memset(at, ' ', strlen(key));
    }
    spit(path("resize_old.safetensors"), rfile, (size_t)rsize);
    free(rfile);
    if (dla_net_load(path("resize_old.safetensors"), &back) != DLA_OK)
        fail_msg("load of a file without EnableReferenceInput: %s", dla_last_error());
    assert_int_equal(dla_net_input_count(back), 1);
    predict_alike(net, back, "SSCB", DLA_DIMS(5, 4, 2, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* Cropping to a reference at a location, depth to space and back, a
     * resize to a reference: their options and "ref" connections come
     * back. */
    dla_layer *cr[] = {
        dla_image_input_layer(6, 8, 4, &(dla_image_input_options){.normalization = "none",
                                                                   .name = "in"}),
        dla_crop2d_layer(&(dla_crop2d_layer_options){.location = {2, 3}, .name = "crop"}),
        dla_depth_to_space2d_layer((int64_t[]){2, 1}, &(dla_depth_to_space2d_layer_options){
            .mode = "crd"}),
        dla_space_to_depth_layer((int64_t[]){1, 2}, NULL),
        dla_resize2d_layer(&(dla_resize2d_layer_options){.enable_reference_input = 1,
                                                         .name = "rs"}),
        dla_avgpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}, .name = "pool"})};
    net = dla_net_create(5, cr);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, cr + 5), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "pool"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "pool", "crop/ref"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "pool", "rs/ref"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_save(net, path("rearrange.safetensors")), DLA_OK);
    if (dla_net_load(path("rearrange.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    assert_non_null(strstr(b, "crop at [2 3]"));
    assert_non_null(strstr(b, "depth to space with block size [2 1], mode \"crd\""));
    assert_non_null(strstr(b, "space to depth with block size [1 2]"));
    assert_non_null(strstr(b, "nearest resize to the size of the input \"ref\""));
    predict_alike(net, back, "SSCB", DLA_DIMS(6, 8, 4, 2));
    dla_net_free(back);
    dla_net_free(net);

    /* Self-attention with its options. */
    dla_layer *sa[] = {dla_sequence_input_layer(3, NULL),
                       dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
                           .num_value_channels = 2, .output_size = 5, .attention_mask = "causal",
                           .name = "sa", .dropout_probability = 0.25})};
    net = dla_net_create(2, sa);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("attention.safetensors")), DLA_OK);
    if (dla_net_load(path("attention.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "2 heads, 4 key and 2 value channels, causal, dropout 0.25"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 6));
    dla_net_free(back);
    /* A file written before HasPaddingMaskInput and DropoutProbability
     * existed lacks them: blanked out (spaces are JSON whitespace, so the
     * header keeps its length), the file still loads, without a mask or a
     * dropout. */
    long size;
    unsigned char *file = slurp(path("attention.safetensors"), &size);
    as_version_1_1(file);
    static const char *const keys[] = {",\\\"HasPaddingMaskInput\\\":0",
                                       ",\\\"DropoutProbability\\\":0.25"};
    for (int k = 0; k < 2; k++) {
        char *at = strstr((char *)file + 8, keys[k]);
        assert_non_null(at);
        memset(at, ' ', strlen(keys[k]));
    }
    spit(path("attention_old.safetensors"), file, (size_t)size);
    free(file);
    if (dla_net_load(path("attention_old.safetensors"), &back) != DLA_OK)
        fail_msg("load of a file without HasPaddingMaskInput: %s", dla_last_error());
    assert_int_equal(dla_net_input_count(back), 1);
    dla_net_summary(back, b, sizeof b);
    assert_null(strstr(b, "dropout"));
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 6));
    dla_net_free(back);
    dla_net_free(net);

    /* Feature input with its statistics. */
    dla_scope_begin();
    dla_layer *f[] = {
        dla_feature_input_layer(3, &(dla_feature_input_options){
            .normalization = "zscore",
            .mean = dla_tensor_from_host((float[]){1, 2, 3}, DLA_F32, "", DLA_DIMS(3, 1)),
            .standard_deviation = dla_tensor_from_host((float[]){2, 2, 4}, DLA_F32, "",
                                                       DLA_DIMS(3, 1))}),
        dla_fc_layer(4, NULL), dla_tanh_layer(NULL)};
    dla_scope_end();
    net = dla_net_create(3, f);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("features.safetensors")), DLA_OK);
    if (dla_net_load(path("features.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_true(dla_tensor_item(dla_net_get(back, "featureinput", "StandardDeviation"), 2) == 4);
    dla_net_summary(back, b, sizeof b);
    assert_non_null(strstr(b, "3 features with 'zscore' normalization"));
    predict_alike(net, back, "CB", DLA_DIMS(3, 5));
    dla_net_free(back);
    dla_net_free(net);
}

/* The safetensors header's length: the file's first 8 bytes, little-endian. */
static uint64_t header_length(const unsigned char *f)
{
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)f[i] << (8 * i);
    return n;
}

static void the_file_is_a_safetensors_file(void **state)
{
    (void)state;
    dla_rng_seed(22);
    dla_net *net = sample_cnn();
    assert_int_equal(dla_net_save(net, path("layout.safetensors")), DLA_OK);
    long size;
    unsigned char *f = slurp(path("layout.safetensors"), &size);
    uint64_t n = header_length(f);
    assert_true(n % 8 == 0 && 8 + n < (uint64_t)size);
    assert_int_equal(f[8], '{');
    char *head = strndup((char *)f + 8, (size_t)n);
    assert_non_null(strstr(head, "\"__metadata__\":{\"format\":\"dlaccel-net\",\"format_version\":\"1.2\""));
    /* The checksum: CRC-32C of the architecture, factors and data texts. */
    const char *sum = strstr(head, "\"checksum\":\"crc32c:");
    assert_non_null(sum);
    assert_int_equal(strspn(sum + strlen("\"checksum\":\"crc32c:"), "0123456789abcdef"), 8);
    /* Shapes are the row-major ones: MATLAB's 3x3x2x4 reversed. */
    assert_non_null(strstr(head, "\"learnables/c1/Weights\":{\"dtype\":\"F32\",\"shape\":[4,2,3,3],"
                                 "\"data_offsets\":[0,288]}"));
    assert_non_null(strstr(head, "\"state/bn/TrainedMean\":{\"dtype\":\"F32\",\"shape\":[4,1,1]"));
    assert_non_null(strstr(head, "\"fixed/in/Mean\""));
    /* The first tensor's bytes are the weights, little-endian floats. */
    float w[2];
    assert_int_equal(dla_tensor_to_host(dla_net_get(net, "c1", "Weights"), w, 0), DLA_ERR_INVALID_ARGUMENT);
    float all[72];
    assert_int_equal(dla_tensor_to_host(dla_net_get(net, "c1", "Weights"), all, sizeof all), DLA_OK);
    memcpy(w, f + 8 + n, sizeof w);
    assert_true(w[0] == all[0] && w[1] == all[1]);
    free(head);
    free(f);
    dla_net_free(net);
}

static void assert_factors(const dla_table *t, const double *lr, const double *l2)
{
    for (int i = 0; i < dla_table_count(t); i++)
        if (dla_table_learn_rate_factor(t, i) != lr[i] || dla_table_l2_factor(t, i) != l2[i])
            fail_msg("row %d (%s/%s): factors %g, %g; expected %g, %g", i, dla_table_layer(t, i),
                     dla_table_parameter(t, i), dla_table_learn_rate_factor(t, i),
                     dla_table_l2_factor(t, i), lr[i], l2[i]);
}

/* Before: dla_net_copy and dla_net_load gave every row factor 1 and the
 * layer's default L2 factor, whatever had been set. */
static void factors_survive_copy_save_and_load(void **state)
{
    (void)state;
    dla_rng_seed(23);
    dla_net *net = sample_cnn();
    dla_table *t = dla_net_learnables(net);
    int n = dla_table_count(t);
    assert_true(n >= 4 && n <= 16);
    double lr[16], l2[16], lr0[16], l20[16];
    for (int i = 0; i < n; i++) {
        lr0[i] = dla_table_learn_rate_factor(t, i);
        l20[i] = dla_table_l2_factor(t, i);
        lr[i] = i % 3 == 0 ? 0.0 : 0.1 * i; /* 0.1 * i: not exact in binary */
        l2[i] = i % 2 ? 0.0 : 1.0 / 3.0 + i;
        assert_int_equal(dla_table_set_factors(t, i, lr[i], l2[i]), DLA_OK);
    }
    assert_int_equal(dla_table_set_factors(t, 0, INFINITY, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "finite"));
    dla_net *c = dla_net_copy(net);
    assert_non_null(c);
    assert_factors(dla_net_learnables(c), lr, l2);
    assert_int_equal(dla_net_save(net, path("factors.safetensors")), DLA_OK);
    dla_net *back = NULL;
    if (dla_net_load(path("factors.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_factors(dla_net_learnables(back), lr, l2);
    dla_net_free(back);
    dla_net_free(c);

    /* A 1.0 file (no "factors" entry) loads with the defaults: the entry
     * blanked to spaces, which JSON allows, the version set back. */
    long size;
    unsigned char *f = slurp(path("factors.safetensors"), &size);
    uint64_t hl = header_length(f);
    char *head = (char *)f + 8;
    as_version_1_1(f);
    char *v = strstr(head, "\"format_version\":\"1.1\"");
    char *e = strstr(head, ",\"factors\":\"");
    assert_true(v && e && e < head + hl);
    v[strlen("\"format_version\":\"1.")] = '0';
    char *q = e + strlen(",\"factors\":\"");
    while (*q != '"')
        q += *q == '\\' ? 2 : 1;
    memset(e, ' ', (size_t)(q + 1 - e));
    spit(path("old.safetensors"), f, (size_t)size);
    if (dla_net_load(path("old.safetensors"), &back) != DLA_OK)
        fail_msg("load 1.0: %s", dla_last_error());
    assert_factors(dla_net_learnables(back), lr0, l20);
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_net_free(back);

    /* Factors that are not a learnable's, or not two numbers >= 0. */
    static const char *const bad[] = {"{\\\"c1/Nope\\\":[1,1]}", "{\\\"c1/Weights\\\":[-1,1]}"};
    for (int b = 0; b < 2; b++) {
        char *g = malloc((size_t)size + 200);
        assert_non_null(g);
        memcpy(g, f, (size_t)size);
        char *at = g + (e - (char *)f);
        int w = snprintf(at, 200, ",\"factors\":\"%s\"", bad[b]);
        assert_true(at + w <= g + 8 + hl);
        at[w] = ' '; /* snprintf's NUL back to a space */
        spit(path("badf.safetensors"), g, (size_t)size);
        back = (dla_net *)1;
        assert_int_equal(dla_net_load(path("badf.safetensors"), &back), DLA_ERR_IO);
        assert_null(back);
        assert_non_null(strstr(dla_last_error(), "factors"));
        free(g);
    }
    free(f);
    dla_net_free(net);
}

/* Before: dla_net_copy reset an LSTM's H x N state (the state after a
 * batch of N) to H x 1 zeros, and dla_net_load refused the file
 * dla_net_save wrote of it ("is 4x5; the architecture makes it 4x1"). */
static void an_lstm_state_of_a_batch_survives_copy_save_and_load(void **state)
{
    (void)state;
    dla_rng_seed(25);
    dla_layer *l[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(4, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 5, 6)), *y, *st[2];
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_int_equal(dla_net_set_state(net, 2, st), DLA_OK);
    assert_int_equal(dla_tensor_dim(dla_table_value(dla_net_state(net), 0), 2), 5);
    dla_tensor *ya, *yb, *yc;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &ya, NULL), DLA_OK);
    dla_net *c = dla_net_copy(net);
    if (!c)
        fail_msg("copy: %s", dla_last_error());
    assert_same_values(dla_net_state(net), dla_net_state(c));
    assert_int_equal(dla_net_predict(c, 1, &x, 1, &yb, NULL), DLA_OK);
    assert_int_equal(dla_net_save(net, path("lstm.safetensors")), DLA_OK);
    dla_net *back = NULL;
    if (dla_net_load(path("lstm.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    assert_same_values(dla_net_state(net), dla_net_state(back));
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    assert_int_equal(dla_net_predict(back, 1, &x, 1, &yc, NULL), DLA_OK);
    float ha[4 * 5 * 6], hb[4 * 5 * 6], hc[4 * 5 * 6];
    assert_int_equal(dla_tensor_to_host(ya, ha, sizeof ha), DLA_OK);
    assert_int_equal(dla_tensor_to_host(yb, hb, sizeof hb), DLA_OK);
    assert_int_equal(dla_tensor_to_host(yc, hc, sizeof hc), DLA_OK);
    assert_memory_equal(ha, hb, sizeof ha);
    assert_memory_equal(ha, hc, sizeof ha);
    /* A batch of another size is still refused, naming the state. */
    dla_tensor *x3 = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 3, 2));
    assert_int_not_equal(dla_net_predict(back, 1, &x3, 1, &yc, NULL), DLA_OK);
    assert_non_null(strstr(dla_last_error(), "HiddenState has 5 columns"));
    /* and a reset state is H x 1 again. */
    assert_int_equal(dla_net_reset_state(back), DLA_OK);
    assert_int_equal(dla_tensor_dim(dla_table_value(dla_net_state(back), 0), 2), 1);
    /* The rows' other dims are still checked against the architecture. */
    long size;
    unsigned char *f = slurp(path("lstm.safetensors"), &size);
    char *sh = strstr((char *)f + 8, "\"state/lstm/HiddenState\":{\"dtype\":\"F32\",\"shape\":[5,4]");
    assert_non_null(sh);
    memcpy(strstr(sh, "[5,4]"), "[4,5]", 5); /* MATLAB's 5x4: the same bytes, H = 5 */
    spit(path("lstm_bad.safetensors"), f, (size_t)size);
    dla_net_free(back);
    back = (dla_net *)1;
    assert_int_equal(dla_net_load(path("lstm_bad.safetensors"), &back), DLA_ERR_IO);
    assert_null(back);
    assert_non_null(strstr(dla_last_error(), "is 5x4; the architecture makes it 4xN"));
    free(f);
    dla_scope_end();
    dla_net_free(c);
    dla_net_free(net);
}

/* HasStateInputs and HasStateOutputs: an encoder's final states starting
 * a decoder, wired state port to state port, come back from dla_net_copy
 * and from a file with their ports, connections and values. A file
 * written before the options existed lacks them, and loads as before. */
static void state_ports_survive_copy_save_and_load(void **state)
{
    (void)state;
    dla_rng_seed(26);
    dla_layer *l[] = {dla_sequence_input_layer(3, NULL),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "enc",
                                                                  .has_state_outputs = 1}),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "dec",
                                                                  .has_state_inputs = 1,
                                                                  .has_state_outputs = 1})};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "enc/hidden", "dec/hidden"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "enc/cell", "dec/cell"), DLA_OK);
    if (dla_net_init(net, 0, NULL) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    assert_int_equal(dla_net_output_count(net), 3);
    dla_net *c = dla_net_copy(net);
    if (!c)
        fail_msg("copy: %s", dla_last_error());
    assert_int_equal(dla_net_save(net, path("ports.safetensors")), DLA_OK);
    dla_net *back = NULL;
    if (dla_net_load(path("ports.safetensors"), &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 2, 5)), *y[3][3];
    dla_net *nets[3] = {net, c, back};
    for (int n = 0; n < 3; n++) {
        assert_int_equal(dla_net_connection_count(nets[n]), 4);
        const char *src, *dst;
        assert_int_equal(dla_net_connection(nets[n], 3, &src, &dst), DLA_OK);
        assert_string_equal(src, "enc/cell");
        assert_string_equal(dst, "dec/cell");
        assert_int_equal(dla_net_output_count(nets[n]), 3);
        assert_string_equal(dla_net_output_name(nets[n], 1), "dec/hidden");
        assert_int_equal(dla_table_count(dla_net_state(nets[n])), 2); /* the encoder's */
        if (dla_net_predict(nets[n], 1, &x, 3, y[n], NULL) != DLA_OK)
            fail_msg("predict %d: %s", n, dla_last_error());
        for (int k = 0; n && k < 3; k++)
            assert_true(tu_same_bits(y[0][k], y[n][k]));
    }
    dla_scope_end();
    dla_net_free(back);
    dla_net_free(c);
    dla_net_free(net);
    /* Written before: no HasStateInputs nor HasStateOutputs (blanked
     * out: spaces are JSON whitespace). */
    dla_layer *p[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(4, NULL),
                      dla_gru_layer(2, NULL)};
    net = dla_net_create(3, p);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("recurrent.safetensors")), DLA_OK);
    long size;
    unsigned char *file = slurp(path("recurrent.safetensors"), &size);
    as_version_1_1(file);
    static const char *const keys[] = {",\\\"HasStateInputs\\\":0", ",\\\"HasStateOutputs\\\":0"};
    for (int k = 0; k < 2; k++)
        for (int n = 0; n < 2; n++) {
            char *at = strstr((char *)file + 8, keys[k]);
            assert_non_null(at);
            memset(at, ' ', strlen(keys[k]));
        }
    assert_null(strstr((char *)file + 8, "HasState"));
    spit(path("recurrent_old.safetensors"), file, (size_t)size);
    free(file);
    if (dla_net_load(path("recurrent_old.safetensors"), &back) != DLA_OK)
        fail_msg("load of a file without HasStateInputs: %s", dla_last_error());
    assert_int_equal(dla_net_output_count(back), 1);
    assert_int_equal(dla_table_count(dla_net_state(back)), 3);
    predict_alike(net, back, "CBT", DLA_DIMS(3, 2, 6));
    dla_net_free(back);
    dla_net_free(net);
}

static void broken_and_foreign_files_are_refused_with_the_reason(void **state)
{
    (void)state;
    dla_net *out = (dla_net *)1;
    assert_int_equal(dla_net_load(path("missing.safetensors"), &out), DLA_ERR_IO);
    assert_null(out);
    assert_non_null(strstr(dla_last_error(), "cannot open"));
    /* Before: a directory was DLA_ERR_OUT_OF_MEMORY, "9223372036854775807
     * bytes" (its ftell). */
    out = (dla_net *)1;
    assert_int_equal(dla_net_load(dir, &out), DLA_ERR_IO);
    assert_null(out);
    assert_non_null(strstr(dla_last_error(), dir));
    assert_non_null(strstr(dla_last_error(), "is a directory"));
    /* A FIFO no one writes to: open waited for a writer for ever. Loaded
     * in a child that may run 10 s, so a wait fails instead of hanging. */
    const char *fifo = path("nowriter.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        dla_net *n;
        _exit(dla_net_load(fifo, &n) == DLA_ERR_IO &&
                      strstr(dla_last_error(), "not a regular file, not a network file")
                  ? 0
                  : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    unlink(fifo);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the load %s", WIFSIGNALED(status) ? "waited until killed (10 s)"
                                                    : "did not fail with \"not a regular file\"");
    spit(path("short"), "abc", 3);
    assert_int_equal(dla_net_load(path("short"), &out), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "too short"));
    unsigned char big[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
    spit(path("big"), big, sizeof big);
    assert_int_equal(dla_net_load(path("big"), &out), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "header length 65535"));
    /* A valid safetensors file of someone else's. */
    const char foreign[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ";
    unsigned char buf[256] = {sizeof foreign - 1};
    memcpy(buf + 8, foreign, sizeof foreign - 1);
    spit(path("foreign"), buf, 8 + sizeof foreign - 1 + 8);
    assert_int_equal(dla_net_load(path("foreign"), &out), DLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(dla_last_error(), "not a dlaccel network"));
    /* A newer version. */
    dla_rng_seed(23);
    dla_net *net = sample_cnn();
    assert_int_equal(dla_net_save(net, path("v.safetensors")), DLA_OK);
    long size;
    unsigned char *f = slurp(path("v.safetensors"), &size);
    char *v = strstr((char *)f + 8, "\"format_version\":\"1.2\"");
    assert_non_null(v);
    v[18] = '2';
    spit(path("v2.safetensors"), f, (size_t)size);
    assert_int_equal(dla_net_load(path("v2.safetensors"), &out), DLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(dla_last_error(), "format version \"2.2\""));
    v[18] = '1';
    /* A tensor renamed: missing for the architecture. */
    char *t = strstr((char *)f + 8, "learnables/fc/Bias");
    assert_non_null(t);
    t[14] = 'X';
    spit(path("renamed.safetensors"), f, (size_t)size);
    assert_int_equal(dla_net_load(path("renamed.safetensors"), &out), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "no tensor learnables/fc/Bias"));
    t[14] = 'B';
    /* One byte short of the data. */
    spit(path("cut.safetensors"), f, (size_t)size - 1);
    assert_int_equal(dla_net_load(path("cut.safetensors"), &out), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "cut.safetensors"));
    free(f);
    dla_net_free(net);
}

static void truncated_and_flipped_files_never_crash_or_leak(void **state)
{
    (void)state;
    dla_rng_seed(24);
    dla_net *net = sample_cnn();
    assert_int_equal(dla_net_save(net, path("fuzz.safetensors")), DLA_OK);
    char want[8192];
    assert_true(dla_net_summary(net, want, sizeof want) > 0);
    long size;
    unsigned char *f = slurp(path("fuzz.safetensors"), &size);
    uint64_t hlen = header_length(f);
    dla_net *out = NULL;
    /* Warm up (devices, caches) before counting blocks. */
    assert_int_equal(dla_net_load(path("fuzz.safetensors"), &out), DLA_OK);
    dla_net_free(out);
    long live = tu_live;
    /* Every truncation fails. */
    for (long n = 0; n < size; n += n < 8 + (long)hlen + 16 ? 3 : 97) {
        spit(path("t.safetensors"), f, (size_t)n);
        dla_status st = dla_net_load(path("t.safetensors"), &out);
        if (st != DLA_ERR_IO)
            fail_msg("truncated at %ld of %ld: status %d (%s)", n, size, st, dla_last_error());
        assert_null(out);
        assert_true(strlen(dla_last_error()) > 0);
    }
    /* Flipped bytes: refused with a reason, or loaded as the very network
     * saved (a flip in text nothing reads, the "dims_order" note). Before
     * the checksum (format 1.2) about 90 of the 600 loaded, a flip in a
     * weight or in a digit of a factor giving another network in silence. */
    int refused = 0, loaded = 0;
    tu_state = 0x1234567ull;
    for (int trial = 0; trial < 600; trial++) {
        unsigned char *g = malloc((size_t)size);
        memcpy(g, f, (size_t)size);
        long at = trial % 2 ? (long)tu_int(0, 8 + (int64_t)hlen - 1) : (long)tu_int(0, size - 1);
        g[at] ^= (unsigned char)(1u << tu_int(0, 7));
        spit(path("f.safetensors"), g, (size_t)size);
        free(g);
        dla_status st = dla_net_load(path("f.safetensors"), &out);
        if (st == DLA_OK) {
            loaded++;
            char buf[8192];
            assert_true(dla_net_summary(out, buf, sizeof buf) > 0);
            if (strcmp(buf, want))
                fail_msg("flip at %ld loaded another network:\n%s", at, buf);
            for (int k = 0; k < 2; k++) {
                dla_table *a = k ? dla_net_state(net) : dla_net_learnables(net);
                dla_table *b = k ? dla_net_state(out) : dla_net_learnables(out);
                assert_same_values(a, b);
                for (int i = 0; i < dla_table_count(a); i++)
                    if (dla_table_learn_rate_factor(a, i) != dla_table_learn_rate_factor(b, i) ||
                        dla_table_l2_factor(a, i) != dla_table_l2_factor(b, i))
                        fail_msg("flip at %ld loaded other factors for row %d", at, i);
            }
            for (int k = 0; k < 2; k++) { /* the input statistics */
                const char *p = k ? "StandardDeviation" : "Mean";
                float a[2], b[2]; /* 1x1x2: per channel */
                assert_int_equal(dla_tensor_numel(dla_net_get(net, "in", p)), 2);
                assert_int_equal(dla_tensor_to_host(dla_net_get(net, "in", p), a, sizeof a), DLA_OK);
                assert_int_equal(dla_tensor_to_host(dla_net_get(out, "in", p), b, sizeof b), DLA_OK);
                assert_memory_equal(a, b, sizeof a);
            }
            dla_net_free(out);
        } else {
            if (st != DLA_ERR_IO && st != DLA_ERR_UNSUPPORTED)
                fail_msg("flip at %ld: status %d (%s)", at, st, dla_last_error());
            assert_null(out);
            assert_true(strlen(dla_last_error()) > 0);
            refused++;
        }
    }
    /* Nearly every flip is refused now (about 593 of 600). */
    if (!(refused > 550))
        fail_msg("refused %d, loaded %d", refused, loaded);
    assert_int_equal(tu_live, live);
    free(f);
    dla_net_free(net);
}

/* Loads the file f (size bytes) written as name and expects it refused as
 * damaged, with what in the message. */
static void refused_as(const unsigned char *f, long size, const char *name, const char *what)
{
    spit(path(name), f, (size_t)size);
    dla_net *out = (dla_net *)1;
    dla_status st = dla_net_load(path(name), &out);
    if (st != DLA_ERR_IO || !strstr(dla_last_error(), what))
        fail_msg("%s: status %d (%s); expected DLA_ERR_IO with \"%s\"", name, st,
                 dla_last_error(), what);
    assert_null(out);
}

/* Before format 1.2 a file had no checksum, and one flipped bit in a
 * weight, or in a digit of an option or a factor, loaded as a network
 * that computes something else, with nothing said. Each is refused now;
 * the same edit in a 1.1 file (no checksum) still loads, as it did. */
static void a_flipped_bit_in_a_weight_an_option_or_a_factor_is_refused(void **state)
{
    (void)state;
    dla_rng_seed(26);
    dla_net *net = sample_cnn();
    assert_int_equal(dla_net_save(net, path("sum.safetensors")), DLA_OK);
    long size;
    unsigned char *f = slurp(path("sum.safetensors"), &size);
    const char *damaged = "the file is damaged";
    /* A weight: the data's last byte, a float's sign and exponent. */
    f[size - 1] ^= 0x01;
    refused_as(f, size, "weight.safetensors", damaged);
    f[size - 1] ^= 0x01;
    /* An option: batch normalization's Epsilon 1e-5 made 1e-4. */
    char *eps = strstr((char *)f + 8, "\\\"Epsilon\\\":");
    assert_non_null(eps);
    char *e5 = strstr(eps, "e-5");
    assert_non_null(e5);
    e5[2] ^= 0x01; /* '5' -> '4' */
    refused_as(f, size, "option.safetensors", damaged);
    e5[2] ^= 0x01;
    /* A factor: [1.0, ...] made [3.0, ...]. */
    char *fac = strstr((char *)f + 8, "\\\"c1/Weights\\\":[1");
    assert_non_null(fac);
    char *one = fac + strlen("\\\"c1/Weights\\\":[");
    *one ^= 0x02;
    refused_as(f, size, "factor.safetensors", damaged);
    *one ^= 0x02;
    /* The checksum itself: a digit changed, a digit not hex. */
    const char *key = "\"checksum\":\"crc32c:";
    char *sum = strstr((char *)f + 8, key);
    assert_non_null(sum);
    sum += strlen(key);
    const char keep = *sum;
    *sum = keep == '0' ? '1' : '0';
    refused_as(f, size, "sum.safetensors", damaged);
    *sum = 'X';
    refused_as(f, size, "sumx.safetensors", "8 hex digits");
    *sum = keep;
    /* The checksum's name flipped: a 1.2 file without one. */
    char *name = sum - strlen(key) + 1;
    *name ^= 0x20; /* "Checksum" */
    refused_as(f, size, "nosum.safetensors", "no checksum");
    *name ^= 0x20;
    spit(path("same.safetensors"), f, (size_t)size);
    dla_net *back = NULL;
    if (dla_net_load(path("same.safetensors"), &back) != DLA_OK)
        fail_msg("the file restored: %s", dla_last_error());
    dla_net_free(back);
    /* A 1.1 file, which has no checksum, loads unchecked as before. */
    as_version_1_1(f);
    f[size - 1] ^= 0x01;
    spit(path("old_flip.safetensors"), f, (size_t)size);
    if (dla_net_load(path("old_flip.safetensors"), &back) != DLA_OK)
        fail_msg("a 1.1 file: %s", dla_last_error());
    dla_net_free(back);
    free(f);
    dla_net_free(net);
}

/* Found by fuzzing (fuzz/fuzz_net): a header length near 2^64 was added to
 * the file's address before it was refused, a pointer overflow that
 * UndefinedBehaviorSanitizer stops on (--enable-sanitizers). Refused as
 * not fitting the file, for every length past its end. */
static void a_header_length_past_the_file_is_refused_before_it_is_used(void **state)
{
    (void)state;
    static const uint64_t lengths[] = {0xffffffffa6000940ull, UINT64_MAX, 1ull << 63, 181 - 8 + 1};
    unsigned char f[181];
    memset(f, 0xff, sizeof f);
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        for (int i = 0; i < 8; i++)
            f[i] = (unsigned char)(lengths[k] >> (8 * i));
        spit(path("hlen.safetensors"), f, sizeof f);
        dla_net *out = (dla_net *)f;
        assert_int_equal(dla_net_load(path("hlen.safetensors"), &out), DLA_ERR_IO);
        assert_null(out);
        assert_non_null(strstr(dla_last_error(), "does not fit the file (181 bytes)"));
    }
}

/* The architecture a file holds is JSON text, which is UTF-8 only: a layer
 * name in another encoding (Latin-1 "caf\xe9" from a source file in that
 * encoding) is refused where the layer is made, naming it. It made
 * dla_net_create fail with DLA_ERR_OUT_OF_MEMORY, "cannot describe the
 * architecture". A name in UTF-8 with quotes and a tab goes through a
 * file unchanged (other control characters are refused: the next test). */
static void a_layer_name_that_is_not_utf8_is_refused_naming_it(void **state)
{
    (void)state;
    const char *bad[] = {"caf\xe9", "\xc3(", "\xed\xa0\x80x" /* a surrogate */,
                         "\xc0\xafx" /* an overlong '/' */};
    for (int i = 0; i < 4; i++) {
        dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                           dla_fc_layer(2, &(dla_fc_layer_options){.name = bad[i]})};
        assert_null(dla_net_create(2, ls));
        assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "UTF-8"));
    }
    const char *good = "\xc3\xa9t\xc3\xa9 \"q\"\t\xe2\x82\xac";
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = good})};
    dla_net *net = dla_net_create(2, ls), *back;
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("utf8.safetensors")), DLA_OK);
    assert_int_equal(dla_net_load(path("utf8.safetensors"), &back), DLA_OK);
    assert_string_equal(dla_table_layer(dla_net_learnables(back), 0), good);
    dla_net_free(back);
    dla_net_free(net);
}

/* Saves net (then freed) to p as a version 1.1 file (no checksum to
 * keep), overwrites the first of each find[i] in its header (where the
 * architecture is JSON escaped inside a JSON string) by as many bytes of
 * with[i], and loads it: refused as a corrupt file naming p. */
static void load_edited(dla_net *net, const char *p, int n, const char *const *find,
                        const char *const *with)
{
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, p), DLA_OK);
    dla_net_free(net);
    long size;
    unsigned char *f = slurp(p, &size);
    as_version_1_1(f);
    for (int i = 0; i < n; i++) {
        char *at = strstr((char *)f + 8, find[i]);
        assert_non_null(at);
        memcpy(at, with[i], strlen(find[i]));
    }
    spit(p, f, (size_t)size);
    free(f);
    dla_net *back = (dla_net *)1;
    assert_int_equal(dla_net_load(p, &back), DLA_ERR_IO);
    assert_null(back);
    assert_non_null(strstr(dla_last_error(), p));
}

/* Found by mutation fuzzing: a file whose architecture names two layers
 * alike was refused as DLA_ERR_INVALID_ARGUMENT, "dla_net: two layers are
 * named 'f1'", an argument error naming neither the file nor the load;
 * it is a corrupt file (DLA_ERR_IO) like any other. */
static void two_layers_of_one_name_in_a_file_are_a_corrupt_file(void **state)
{
    (void)state;
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(4, &(dla_fc_layer_options){.name = "f1"}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "f2"})};
    /* The architecture is JSON text inside the header: its quotes escaped. */
    load_edited(dla_net_create(3, ls), path("dupname.safetensors"), 1,
                (const char *[]){"Name\\\":\\\"f2"}, (const char *[]){"Name\\\":\\\"f1"});
    assert_non_null(strstr(dla_last_error(), "corrupt"));
    assert_non_null(strstr(dla_last_error(), "two layers are named 'f1'"));
}

/* A layer name with a control character is refused when made and when a
 * file holds one (as \u001b in its JSON): `dlaccel net` and dla_net_print
 * wrote it to the terminal as it was, an escape sequence from a crafted
 * file included. */
static void a_layer_name_with_a_control_character_is_refused(void **state)
{
    (void)state;
    const char *bad[] = {"f\x1b[2J", "f\r", "f\x7f", "f\xc2\x9b" /* U+009B, CSI */};
    const char *said[] = {"0x1b at byte 2", "0x0d at byte 2", "0x7f at byte 2", "0x9b at byte 2"};
    for (int i = 0; i < 4; i++) {
        dla_layer *l = dla_fc_layer(2, &(dla_fc_layer_options){.name = bad[i]});
        assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_layer_error(l), said[i]))
            fail_msg("%d: %s", i, dla_layer_error(l));
        dla_layer_free(l);
    }
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "f2345678"})};
    /* \u001b escaped once more inside the header's JSON string */
    load_edited(dla_net_create(2, ls), path("ctrlname.safetensors"), 1,
                (const char *[]){"f2345678"}, (const char *[]){"\\\\u001bX"});
    if (!strstr(dla_last_error(), "control character 0x1b"))
        fail_msg("%s", dla_last_error());
}

/* A load's error echoes what the file holds: a layer whose option is
 * missing was named as the file had it, and `dlaccel net` wrote the
 * message, a crafted name's escape sequence included, to the terminal.
 * The message now says control characters as \xNN text. And a name with
 * both '/' and a control character made by the API was refused for the
 * '/' with the name in the message, as it was: the control character is
 * now said first. */
static void a_load_error_shows_control_characters_as_text(void **state)
{
    (void)state;
    dla_layer *made = dla_fc_layer(2, &(dla_fc_layer_options){.name = "/\x1b[2J"});
    if (!strstr(dla_layer_error(made), "control character 0x1b at byte 2"))
        fail_msg("%s", dla_layer_error(made));
    dla_layer_free(made);
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "f2345678"})};
    /* \u001b escaped once more inside the header's JSON string;
     * OutputSize renamed, so the layer lacks it */
    load_edited(dla_net_create(2, ls), path("ctrlopt.safetensors"), 2,
                (const char *[]){"f2345678", "OutputSize"},
                (const char *[]){"\\\\u001bX", "QutputSize"});
    const char *msg = dla_last_error();
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            fail_msg("byte 0x%02x at %d of: %s", *c, (int)(c - (const unsigned char *)msg), msg);
    if (!strstr(msg, "layer '\\x1bX': option OutputSize is missing"))
        fail_msg("%s", msg);
}

/* Found by a mutation fuzzer under ASan: a file that is no network was
 * read whole before its first 8 bytes were looked at, so a 20 GB file
 * took 20 GB and a minute to refuse, and a sparse file of 2 TB asked the
 * allocator for 2 TB (ASan aborts; plain, an out-of-memory error about a
 * file that is simply not a network). Now refused by its header length
 * at once. Skipped where the folder cannot hold a sparse file that size. */
static void a_huge_file_that_is_no_network_is_refused_unread(void **state)
{
    (void)state;
    const char *p = path("huge.safetensors");
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    const int sparse = ftruncate(fileno(f), (off_t)2 << 40) == 0;
    fclose(f);
    if (!sparse) {
        unlink(p);
        skip();
    }
    dla_net *net = (dla_net *)1;
    assert_int_equal(dla_net_load(p, &net), DLA_ERR_IO);
    assert_null(net);
    unlink(p);
    assert_non_null(strstr(dla_last_error(), p));
    assert_non_null(strstr(dla_last_error(), "the header length 0 does not fit the file "
                                             "(2199023255552 bytes)"));
}

/* Layer names have no length limit, in a file too: two fc layers named
 * by 1000 bytes that differ only in their last one save and load, each
 * with its own weights and factors. The file's tensor names were built in
 * 600 bytes, so both layers' tensors were one ("learnables/nnn...n/W" cut
 * short), and the second overwrote the first. */
static void long_layer_names_go_through_a_file_each_with_its_tensors(void **state)
{
    (void)state;
    char a[1001], b[1001];
    memset(a, 'n', 1000);
    a[1000] = '\0';
    memcpy(b, a, sizeof b);
    a[999] = 'a';
    b[999] = 'b';
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(4, &(dla_fc_layer_options){.name = a}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = b})};
    dla_net *net = dla_net_create(3, ls), *back = NULL;
    if (!net)
        fail_msg("%s", dla_last_error());
    dla_table *t = dla_net_learnables(net);
    assert_int_equal(dla_table_count(t), 4);
    assert_string_equal(dla_table_layer(t, 2), b);
    assert_int_equal(dla_table_set_factors(t, 2, 3, 0.5), DLA_OK);
    assert_int_equal(dla_net_save(net, path("long.safetensors")), DLA_OK);
    if (dla_net_load(path("long.safetensors"), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_same_values(t, dla_net_learnables(back));
    const dla_table *u = dla_net_learnables(back);
    assert_true(dla_table_learn_rate_factor(u, 2) == 3 && dla_table_l2_factor(u, 2) == 0.5);
    assert_true(dla_table_learn_rate_factor(u, 0) == 1 && dla_table_l2_factor(u, 0) == 1);
    dla_net_free(back);
    dla_net_free(net);
}

/* A network of more than 64 inputs: its copy was refused ("64 example
 * tensors for 65 inputs") and the file dla_net_save wrote was refused by
 * dla_net_load as corrupt ("too many Inputs"). */
static void a_network_of_many_inputs_copies_saves_and_loads(void **state)
{
    (void)state;
    dla_layer *ls[] = {dla_concatenation_layer(1, 64, &(dla_layer_options){.name = "cat"}),
                       dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
                       dla_addition_layer(2, &(dla_layer_options){.name = "add"})};
    dla_net *net = dla_net_create(3, ls), *back = NULL;
    assert_non_null(net);
    assert_int_equal(dla_net_input_count(net), 65);
    dla_scope_begin();
    dla_tensor *x[65];
    for (int i = 0; i < 64; i++)
        x[i] = dla_tensor_from_host((float[]){(float)i, (float)-i}, DLA_F32, "CB", DLA_DIMS(1, 2));
    x[64] = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 2));
    if (dla_net_init(net, 65, x) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_net *copy = dla_net_copy(net);
    if (!copy)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_save(net, path("many.safetensors")), DLA_OK);
    if (dla_net_load(path("many.safetensors"), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_input_count(back), 65);
    assert_same_values(dla_net_learnables(net), dla_net_learnables(back));
    dla_tensor *y[3];
    dla_net *nets[3] = {net, copy, back};
    for (int k = 0; k < 3; k++)
        assert_int_equal(dla_net_predict(nets[k], 65, x, 1, &y[k], NULL), DLA_OK);
    for (int k = 1; k < 3; k++)
        for (int64_t i = 0; i < dla_tensor_numel(y[0]); i++)
            assert_true(dla_tensor_item(y[k], i) == dla_tensor_item(y[0], i));
    dla_scope_end();
    dla_net_free(back);
    dla_net_free(copy);
    dla_net_free(net);
}

/* `dlaccel net FILE` shows every "layer/parameter" whole, its dims
 * column aligned by display columns. It cut the name to 159 bytes, so two
 * long layer names sharing their start, and each one's Weights and Bias,
 * printed as one name four times; and it padded by bytes, so an accented
 * letter pulled its row's columns one to the left. */
static const char *column_after(const char *line, const char *text)
{
    const char *at = strstr(line, text);
    return at ? at + strlen(text) : NULL;
}

static int display_columns(const char *from, const char *to)
{
    int c = 0;
    for (; from < to; from++)
        c += ((unsigned char)*from & 0xC0) != 0x80;
    return c;
}

static void dlaccel_net_shows_long_and_accented_names_whole_and_aligned(void **state)
{
    (void)state;
    const char *build = getenv("DLA_TEST_BUILDDIR");
    if (!build)
        skip();
    char a[301], b[301];
    memset(a, 'n', 300);
    a[300] = '\0';
    memcpy(b, a, sizeof b);
    a[299] = 'a';
    b[299] = 'b';
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL),
                       dla_fc_layer(4, &(dla_fc_layer_options){.name = a}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = b}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "d\xc3\xa9nse"}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "dense"})};
    dla_net *net = dla_net_create(5, ls);
    if (!net)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_save(net, path("names.safetensors")), DLA_OK);
    dla_net_free(net);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/tools/dlaccel' net '%s' 2>&1", build, path("names.safetensors"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    char want[400];
    for (int k = 0; k < 2; k++)
        for (int w = 0; w < 2; w++) {
            snprintf(want, sizeof want, "  %s/%s ", k ? b : a, w ? "Bias" : "Weights");
            if (!strstr(out, want))
                fail_msg("the output lacks the row of %s/%s whole:\n%s", k ? "b" : "a",
                         w ? "Bias" : "Weights", out);
        }
    /* The dims column starts at one display column in every row. */
    const char *l1 = strstr(out, "\n  d\xc3\xa9nse/Weights"), *l2 = strstr(out, "\n  dense/Weights");
    assert_non_null(l1);
    assert_non_null(l2);
    const char *d1 = column_after(l1, "2x2"), *d2 = column_after(l2, "2x2");
    assert_non_null(d1);
    assert_non_null(d2);
    if (display_columns(l1, d1) != display_columns(l2, d2))
        fail_msg("the dims of d\xc3\xa9nse/Weights end at column %d, of dense/Weights at %d:\n%s",
                 display_columns(l1, d1), display_columns(l2, d2), out);
}

/* A learnable replaced by hand with another dtype than the network's: the
 * save is refused, naming it, and leaves the file that was there. It
 * wrote a file that dla_net_load then refused ("the architecture is
 * corrupt"), so the network was never to be had back from it. */
static void a_parameter_of_another_dtype_is_refused_by_the_save(void **state)
{
    (void)state;
    dla_layer *ls[] = {dla_feature_input_layer(3, NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(2, ls);
    assert_non_null(net);
    assert_int_equal(dla_net_save(net, path("mixed.safetensors")), DLA_OK);
    struct stat before, after;
    assert_int_equal(stat(path("mixed.safetensors"), &before), 0);
    dla_tensor **v = dla_table_values(dla_net_learnables(net));
    dla_tensor *old = v[0];
    v[0] = dla_cast(old, DLA_F64);
    dla_tensor_release(old);
    assert_int_equal(dla_net_save(net, path("mixed.safetensors")), DLA_ERR_DTYPE);
    assert_non_null(strstr(dla_last_error(), "learnables/fc/Weights is double in a single"));
    assert_int_equal(stat(path("mixed.safetensors"), &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    assert_int_equal(before.st_ino, after.st_ino);
    dla_net *back;
    assert_int_equal(dla_net_load(path("mixed.safetensors"), &back), DLA_OK);
    dla_net_free(back);
    dla_net_free(net);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/dla_net_io_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(a_saved_network_loads_back_bit_for_bit),
        TU_TEST(a_save_reads_each_tensor_once),
        TU_TEST(the_file_is_a_safetensors_file),
        TU_TEST(factors_survive_copy_save_and_load),
        TU_TEST(an_lstm_state_of_a_batch_survives_copy_save_and_load),
        TU_TEST(broken_and_foreign_files_are_refused_with_the_reason),
        TU_TEST(truncated_and_flipped_files_never_crash_or_leak),
        TU_TEST(a_flipped_bit_in_a_weight_an_option_or_a_factor_is_refused),
        TU_TEST(a_header_length_past_the_file_is_refused_before_it_is_used),
        TU_TEST(a_layer_name_that_is_not_utf8_is_refused_naming_it),
        TU_TEST(two_layers_of_one_name_in_a_file_are_a_corrupt_file),
        TU_TEST(a_layer_name_with_a_control_character_is_refused),
        TU_TEST(a_load_error_shows_control_characters_as_text),
        TU_TEST(a_huge_file_that_is_no_network_is_refused_unread),
        TU_TEST(long_layer_names_go_through_a_file_each_with_its_tensors),
        TU_TEST(a_network_of_many_inputs_copies_saves_and_loads),
        TU_TEST(dlaccel_net_shows_long_and_accented_names_whole_and_aligned),
        TU_TEST(a_parameter_of_another_dtype_is_refused_by_the_save),
        TU_TEST(state_ports_survive_copy_save_and_load),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

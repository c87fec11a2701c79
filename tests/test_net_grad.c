/*
 * test_net_grad.c - gradients of small networks with respect to their
 * learnables, as dla_net_gradient computes them inside dla_feval, against
 * central finite differences in float64: a CNN trained with batch
 * normalization, a graph with addition and concatenation, 1-D
 * convolutions with global pooling, and the LSTM in both output modes;
 * each accelerated (the replayed trace goes on the tape) and not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "gradcheck.h"

#include <dlaccel.h>
#include <math.h>
#include <string.h>

/* Finite differences for every learnable, with acceleration on and off. */
static void check_net(dla_net *net, dla_tensor *x, int training)
{
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    int nl = dla_net_learnable_count(net);
    assert_true(nl <= GC_MAX_IN);
    dla_tensor **values = dla_table_values(dla_net_learnables(net));
    int check[GC_MAX_IN];
    for (int i = 0; i < nl; i++)
        check[i] = 1;
    gc_net c = {net, x, training};
    for (int accel = 1; accel >= 0; accel--) {
        dla_net_set_accelerate(net, accel);
        gc_check(gc_run_net, &c, nl, values, check, 1e-5);
        gc_check2(gc_run_net, &c, nl, values, check, 1e-5);
    }
    dla_net_set_accelerate(net, 1);
}

typedef struct loss_ctx {
    dla_net *net;
} loss_ctx;

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

typedef struct grads_ctx {
    dla_net *net;
    dla_table *grads;
} grads_ctx;

static dla_status table_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    grads_ctx *g = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(g->net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    g->grads = dla_net_gradients(g->net, out[0]);
    return g->grads ? DLA_OK : dla_last_status();
}

static void cnn_with_batchnorm_has_the_gradients_of_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(3);
    dla_layer *l[] = {
        dla_image_input_layer(6, 5, 2, &(dla_image_input_options){.normalization = "zscore"}),
        dla_conv2d_layer(3, 3, 3, &(dla_conv_layer_options){.padding = {1, 1, 0, 1}}),
        dla_batchnorm_layer(NULL),
        dla_relu_layer(NULL),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_fc_layer(4, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(7, l);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(6, 5, 2, 3));
    check_net(net, x, 1);
    check_net(net, x, 0);
    /* dla_net_gradient gives one gradient per Learnables row, in its dims. */
    dla_tensor *t = dla_rand(DLA_F64, "CB", DLA_DIMS(4, 3)), *out[7];
    assert_int_equal(dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 7, out), DLA_OK);
    dla_table *lt = dla_net_learnables(net);
    for (int i = 0; i < 6; i++) {
        int64_t a[DLA_MAX_DIMS], b[DLA_MAX_DIMS];
        int na = dla_tensor_dims(out[1 + i], a), nb = dla_tensor_dims(dla_table_value(lt, i), b);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, sizeof *a * (size_t)na);
    }
    dla_table *g = dla_table_like(lt, out + 1);
    assert_non_null(g);
    assert_string_equal(dla_table_parameter(g, 2), "Offset");
    dla_table_free(g);
    /* The table form, kept past dla_feval through ctx. */
    grads_ctx gc = {net, NULL};
    assert_int_equal(dla_feval(table_loss, &gc, 2, (dla_tensor *[]){x, t}, 1, out), DLA_OK);
    assert_non_null(gc.grads);
    assert_int_equal(dla_table_count(gc.grads), 6);
    assert_string_equal(dla_table_layer(gc.grads, 5), dla_table_layer(lt, 5));
    assert_true(dla_table_l2_factor(gc.grads, 1) == 0);
    /* The same loss as model_loss: the same gradients as its list. */
    for (int i = 0; i < 6; i++) {
        dla_tensor *d = dla_max(dla_abs(dla_sub(dla_table_value(gc.grads, i), out[1 + i])), 0, NULL);
        assert_true(dla_tensor_item(d, 0) < 1e-12);
    }
    dla_table_free(gc.grads);
    dla_net_free(net);
    dla_scope_end();
}

static void graph_with_addition_and_concatenation_differentiates_every_branch(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(4);
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.normalization = "none", .name = "in"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same", .name = "c1"}),
        dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
        dla_concatenation_layer(3, 2, &(dla_layer_options){.name = "cat"}),
        dla_global_avgpool2d_layer(NULL),
        dla_fc_layer(3, NULL),
    };
    dla_net *net = dla_net_create(6, l);
    assert_non_null(net);
    dla_layer *c2 = dla_conv2d_layer(1, 1, 2, &(dla_conv_layer_options){.name = "c2"});
    assert_int_equal(dla_net_add_layers(net, 1, &c2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "c2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c2", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_learnable_count(net), 6);
    dla_tensor *x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(4, 4, 2, 2));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

static void conv1d_and_global_pooling_over_time_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(5);
    dla_layer *l[] = {
        dla_sequence_input_layer(3, &(dla_sequence_input_options){.min_length = 3}),
        dla_conv1d_layer(3, 4, &(dla_conv_layer_options){.padding_mode = "causal"}),
        dla_batchnorm_layer(NULL),
        dla_leakyrelu_layer(0.1, NULL),
        dla_global_maxpool1d_layer(NULL),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(6, l);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 4, 6));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* PReLU's Alpha (one a channel over time, one for all over images) and
 * 1-D indexing of a sequence's last step and an image's first index. */
static void prelu_and_indexing1d_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_layer *l[] = {
        dla_sequence_input_layer(3, NULL),
        dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.padding_mode = "causal"}),
        dla_prelu_layer(0.3, &(dla_prelu_layer_options){.per_channel = 1}),
        dla_indexing1d_layer("last", NULL),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(5, l);
    assert_non_null(net);
    check_net(net, dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 3, 5)), 1);
    dla_net_free(net);
    dla_layer *m[] = {
        dla_conv1d_layer(3, 2, NULL),
        dla_prelu_layer(DLA_PRELU_ALPHA, NULL),
        dla_indexing1d_layer(NULL, NULL),
        dla_fc_layer(2, NULL),
    };
    net = dla_net_create(4, m);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "SCB", DLA_DIMS(6, 2, 3));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* The 1-D pooling layers over "T" (windows that overlap, padding) and
 * over the "S" dim of 1-D images. */
static void one_d_pooling_layers_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_layer *l[] = {
        dla_sequence_input_layer(3, NULL),
        dla_conv1d_layer(2, 3, &(dla_conv_layer_options){.padding_mode = "same"}),
        dla_maxpool1d_layer(3, &(dla_pool1d_layer_options){.stride = 2, .padding = {1, 1}}),
        dla_avgpool1d_layer(2, &(dla_pool1d_layer_options){.padding_mode = "same",
                                                           .padding_value = "mean"}),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(5, l);
    assert_non_null(net);
    check_net(net, dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 8)), 1);
    dla_net_free(net);
    dla_layer *s[] = {
        dla_conv1d_layer(3, 2, &(dla_conv_layer_options){.name = "c"}),
        dla_avgpool1d_layer(3, &(dla_pool1d_layer_options){.stride = 2, .padding = {0, 2}}),
        dla_maxpool1d_layer(2, NULL),
        dla_fc_layer(2, NULL),
    };
    net = dla_net_create(4, s);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "SCB", DLA_DIMS(9, 2, 3));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* A depthwise separable block: channel-wise grouped convolution, then a
 * 1x1 convolution; and two groups of two filters. */
static void grouped_convolutions_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(10);
    dla_layer *l[] = {
        dla_image_input_layer(5, 5, 4, &(dla_image_input_options){.normalization = "none"}),
        dla_grouped_conv2d_layer(3, 3, 1, DLA_CHANNEL_WISE,
                                 &(dla_conv_layer_options){.padding_mode = "same"}),
        dla_conv2d_layer(1, 1, 4, NULL),
        dla_relu_layer(NULL),
        dla_grouped_conv2d_layer(2, 2, 2, 2, &(dla_conv_layer_options){.stride = {2, 2}}),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(6, l);
    assert_non_null(net);
    check_net(net, dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 5, 4, 2)), 1);
    dla_net_free(net);
    dla_scope_end();
}

/* A volumetric network: 3-D convolution with stride and padding, batch
 * normalization, 3-D max and average pooling, a transposed 3-D
 * convolution and global 3-D pooling, every learnable against finite
 * differences. */
static void three_d_layers_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(12);
    dla_layer *l[] = {
        dla_image3d_input_layer(5, 4, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv3d_layer(3, 2, 2, 3, &(dla_conv_layer_options){.padding = {1, 1, 0, 1, 1, 0}}),
        dla_batchnorm_layer(NULL),
        dla_maxpool3d_layer(2, 2, 2, &(dla_pool_layer_options){.stride = {1, 2, 1}}),
        dla_transposed_conv3d_layer(2, 2, 1, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 1, 1}, .cropping = {1, 0, 0, 0, 0, 0}}),
        dla_avgpool3d_layer(2, 1, 2, &(dla_pool_layer_options){.padding_mode = "same"}),
        dla_global_avgpool3d_layer(NULL),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(8, l);
    assert_non_null(net);
    check_net(net, dla_randn(DLA_F64, "SSSCB", DLA_DIMS(5, 4, 4, 2, 2)), 1);
    dla_net_free(net);
    dla_scope_end();
}

/* A squeeze-and-excitation gate (a multiplication that broadcasts
 * 1x1xCxB over the activation), a clipped ReLU and a depth
 * concatenation. */
static void gates_clipping_and_depth_concatenation_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(11);
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 3, &(dla_conv_layer_options){.padding_mode = "same", .name = "c"}),
        dla_clipped_relu_layer(0.8, &(dla_layer_options){.name = "cr"}),
        dla_global_avgpool2d_layer(NULL),
        dla_sigmoid_layer(NULL),
        dla_multiplication_layer(2, &(dla_layer_options){.name = "gate"}),
        dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "cat"}),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(8, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "cr", "gate/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "c", "cat/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    check_net(net, dla_randn(DLA_F64, "SSCB", DLA_DIMS(4, 4, 2, 2)), 1);
    dla_net_free(net);
    dla_scope_end();
}

/* The per-observation normalizations and the smooth activations, on
 * images and on sequences (first and second derivatives, check_net). */
static void normalization_and_smooth_layers_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(6);
    dla_layer *l[] = {
        dla_image_input_layer(5, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}}),
        dla_layernorm_layer(NULL),
        dla_gelu_layer(NULL, NULL),
        dla_groupnorm_layer(2, NULL),
        dla_swish_layer(NULL),
        dla_fc_layer(3, NULL),
        dla_tanh_layer(NULL),
    };
    dla_net *net = dla_net_create(8, l);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 4, 2, 3));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_layer *s[] = {
        dla_sequence_input_layer(3, NULL),
        dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.padding_mode = "causal"}),
        dla_instancenorm_layer(NULL),
        dla_elu_layer(DLA_ELU_ALPHA, NULL),
        dla_layernorm_layer(NULL), /* "auto": over C alone, with a T dim */
        dla_sigmoid_layer(NULL),
        dla_fc_layer(2, NULL),
    };
    net = dla_net_create(7, s);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 5));
    check_net(net, x, 1);
    dla_net_free(net);
    /* An encoder-decoder: strided convolution down, transposed up. */
    dla_layer *u[] = {
        dla_image_input_layer(6, 4, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(2, 2, 3, &(dla_conv_layer_options){.stride = {2, 2}}),
        dla_tanh_layer(NULL),
        dla_transposed_conv2d_layer(3, 3, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 2}, .cropping = {1, 0, 0, 1}}),
        dla_sigmoid_layer(NULL),
    };
    net = dla_net_create(5, u);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(6, 4, 2, 2));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_layer *v[] = {dla_sequence_input_layer(2, NULL),
                      dla_transposed_conv1d_layer(3, 3, &(dla_transposed_conv_layer_options){
                          .stride = {2}, .cropping_mode = "same"}),
                      dla_fc_layer(2, NULL)};
    net = dla_net_create(3, v);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "CBT", DLA_DIMS(2, 2, 4));
    check_net(net, x, 1);
    dla_net_free(net);
    /* GRUs in two reset gate modes, one giving every step, one the last. */
    dla_layer *g[] = {dla_sequence_input_layer(2, NULL),
                      dla_gru_layer(3, &(dla_gru_layer_options){
                          .reset_gate_mode = "recurrent-bias-after-multiplication"}),
                      dla_gru_layer(2, &(dla_gru_layer_options){
                          .reset_gate_mode = "before-multiplication", .output_mode = "last"})};
    net = dla_net_create(3, g);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "CBT", DLA_DIMS(2, 2, 3));
    check_net(net, x, 1);
    dla_net_free(net);
    /* A learned position embedding added to the input (a graph): its
     * gradient sums the observations'. */
    dla_layer *pe[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "in"}),
                       dla_position_embedding_layer(3, 5, NULL),
                       dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
                       dla_fc_layer(2, NULL)};
    net = dla_net_create(4, pe);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "in", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    x = dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 4));
    check_net(net, x, 1);
    dla_net_free(net);
    /* Self-attention over a sequence, causal: its eight learnables. */
    dla_layer *a[] = {dla_sequence_input_layer(3, NULL),
                      dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
                          .attention_mask = "causal", .output_size = 2})};
    net = dla_net_create(2, a);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 4));
    check_net(net, x, 1);
    dla_net_free(net);
    /* Padding masks (HasPaddingMaskInput): the input is its own mask,
     * observation 2's last two steps padded (channel 1 is 0 there), into
     * the attention and a global pooling over the data steps. */
    for (int avg = 0; avg < 2; avg++) {
        const dla_global_pool1d_layer_options po = {.name = "pool", .has_padding_mask_input = 1};
        dla_layer *m[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "x"}),
                          dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
                              .name = "attn", .output_size = 2, .has_padding_mask_input = 1}),
                          avg ? dla_global_avgpool1d_layer(&po) : dla_global_maxpool1d_layer(&po)};
        net = dla_net_create(3, m);
        assert_non_null(net);
        assert_int_equal(dla_net_connect(net, "x", "attn/mask"), DLA_OK);
        assert_int_equal(dla_net_connect(net, "x", "pool/mask"), DLA_OK);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        double xh[3 * 2 * 4];
        dla_tensor_to_host(dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 4)), xh, sizeof xh);
        for (int t = 0; t < 4; t++)
            xh[3 * (0 + 2 * t)] += xh[3 * (0 + 2 * t)] >= 0 ? 1 : -1; /* data, not 0 */
        xh[3 * (1 + 2 * 2)] = xh[3 * (1 + 2 * 3)] = 0;
        x = dla_tensor_from_host(xh, DLA_F64, "CBT", DLA_DIMS(3, 2, 4));
        check_net(net, x, 1);
        dla_net_free(net);
    }
    /* 1-D indexing of each observation's last data step (the same
     * input, observation 2 padded at its last two steps), then an fc. */
    dla_layer *ix[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "x"}),
                       dla_fc_layer(3, NULL),
                       dla_indexing1d_layer("last", &(dla_indexing1d_layer_options){
                           .name = "ix", .has_padding_mask_input = 1}),
                       dla_fc_layer(2, NULL)};
    net = dla_net_create(4, ix);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "x", "ix/mask"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    check_net(net, x, 1);
    dla_net_free(net);
    /* A physics-informed network's shape: features through tanh layers. */
    dla_layer *f[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(6, NULL), dla_tanh_layer(NULL),
                      dla_fc_layer(6, NULL), dla_tanh_layer(NULL), dla_fc_layer(1, NULL)};
    net = dla_net_create(6, f);
    assert_non_null(net);
    x = dla_randn(DLA_F64, "CB", DLA_DIMS(2, 5));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* The LSTM's, and the bilstm's (both directions, each step's joined
 * output or the last one). */
/* A diffusion model's noise-step embedding: the values a layer computes
 * become positions (Positions "data-values", and "auto" for "CB"), so
 * the learnables before the encoding get gradients through its sines and
 * cosines; then the "CBT" values of one channel. */
static void sinusoidal_encoding_of_values_differentiates(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(11);
    for (int explicit = 0; explicit < 2; explicit++) {
        dla_layer *l[] = {
            dla_feature_input_layer(2, NULL),
            dla_fc_layer(1, NULL),
            dla_sinusoidal_position_encoding_layer(
                8, &(dla_sinusoidal_position_encoding_layer_options){
                    .positions = explicit ? "data-values" : NULL}),
            dla_fc_layer(3, NULL),
        };
        dla_net *net = dla_net_create(4, l);
        assert_non_null(net);
        dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(2, 4));
        check_net(net, x, 1);
        dla_net_free(net);
    }
    dla_layer *s[] = {
        dla_sequence_input_layer(2, NULL),
        dla_fc_layer(1, NULL),
        dla_sinusoidal_position_encoding_layer(
            4, &(dla_sinusoidal_position_encoding_layer_options){.positions = "data-values"}),
        dla_fc_layer(2, NULL),
    };
    dla_net *net = dla_net_create(4, s);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "CBT", DLA_DIMS(2, 3, 4));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

static void lstm_gradients_match_finite_differences_in_both_output_modes(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int k = 0; k < 4; k++) {
        const int last = k & 1, bi = k >> 1;
        dla_rng_seed(6 + (uint64_t)k);
        const dla_lstm_layer_options o = {.output_mode = last ? "last" : "sequence"};
        dla_layer *l[] = {
            dla_sequence_input_layer(3, NULL),
            bi ? dla_bilstm_layer(3, &o) : dla_lstm_layer(4, &o),
            dla_fc_layer(2, NULL),
        };
        dla_net *net = dla_net_create(3, l);
        assert_non_null(net);
        assert_int_equal(dla_net_learnable_count(net), 5);
        dla_tensor *x = dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 5));
        check_net(net, x, 1);
        dla_net_free(net);
    }
    dla_scope_end();
}

/* L = sum(net(x) .* r) [+ sum(copy(x) .* r)], gradients for net's. */
typedef struct pair {
    dla_net *net, *copy;
} pair;

static dla_status pair_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const pair *p = ctx;
    dla_tensor *y, *l;
    dla_status st = dla_net_forward(p->net, 1, &in[0], 1, &y, NULL, NULL);
    l = dla_sum(dla_mul(y, in[1]), 0, NULL);
    if (st == DLA_OK && p->copy) {
        st = dla_net_forward(p->copy, 1, &in[0], 1, &y, NULL, NULL);
        l = dla_add(l, dla_sum(dla_mul(y, in[1]), 0, NULL));
    }
    out[0] = l;
    return st == DLA_OK ? dla_net_gradient(p->net, l, out + 1) : st;
}

static void a_copy_used_beside_its_network_adds_nothing_to_its_gradient(void **state)
{
    /* A target network: the copy's values were the original's tensors,
     * and dla_net_gradient differentiates with respect to those, so the
     * original's gradient took the copy's path too. */
    (void)state;
    dla_scope_begin();
    dla_rng_seed(8);
    dla_layer *l[] = {dla_fc_layer(3, NULL), dla_leakyrelu_layer(0.1, NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(3, l);
    dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(4, 5)), *r = dla_randn(DLA_F64, "CB", DLA_DIMS(2, 5));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_net *copy = dla_net_copy(net);
    assert_non_null(copy);
    const int nl = dla_net_learnable_count(net);
    for (int i = 0; i < nl; i++)
        assert_ptr_not_equal(dla_table_value(dla_net_learnables(copy), i),
                             dla_table_value(dla_net_learnables(net), i));
    dla_tensor *alone[5], *beside[5];
    assert_int_equal(dla_feval(pair_loss, &(pair){net, NULL}, 2, (dla_tensor *[]){x, r}, 1 + nl, alone),
                     DLA_OK);
    assert_int_equal(dla_feval(pair_loss, &(pair){net, copy}, 2, (dla_tensor *[]){x, r}, 1 + nl, beside),
                     DLA_OK);
    for (int i = 1; i <= nl; i++)
        for (int64_t k = 0; k < dla_tensor_numel(alone[i]); k++)
            if (dla_tensor_item(alone[i], k) != dla_tensor_item(beside[i], k))
                fail_msg("learnable %d element %lld: %g alone, %g beside its copy", i, (long long)k,
                         dla_tensor_item(alone[i], k), dla_tensor_item(beside[i], k));
    dla_net_free(copy);
    dla_net_free(net);
    dla_scope_end();
}

/* Options at their edges that no other case here combines: an even filter
 * dilated and strided with "same" padding, a bilinear resize by scales
 * that are not whole, a transposed convolution whose filter is smaller
 * than its stride with "same" cropping (the output padded, not cropped);
 * and a word embedding of tokens with out-of-vocabulary ones (0 and past
 * NumWords, the last column) into a GRU's last step. */
static void edge_options_and_embeddings_differentiate(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_layer *u[] = {
        dla_image_input_layer(7, 6, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(2, 4, 3, &(dla_conv_layer_options){
            .stride = {2, 3}, .dilation = {2, 1}, .padding_mode = "same"}),
        dla_tanh_layer(NULL),
        dla_resize2d_layer(&(dla_resize2d_layer_options){.scale = {1.5, 2.5}, .method = "bilinear"}),
        dla_transposed_conv2d_layer(1, 2, 2, &(dla_transposed_conv_layer_options){
            .stride = {2, 3}, .cropping_mode = "same"}),
        dla_sigmoid_layer(NULL),
    };
    dla_net *net = dla_net_create(6, u);
    assert_non_null(net);
    dla_tensor *x = dla_randn(DLA_F64, "SSCB", DLA_DIMS(7, 6, 2, 2));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_layer *e[] = {dla_sequence_input_layer(1, NULL),
                      dla_word_embedding_layer(3, 4, NULL),
                      dla_gru_layer(2, &(dla_gru_layer_options){.output_mode = "last"}),
                      dla_fc_layer(2, NULL)};
    net = dla_net_create(4, e);
    assert_non_null(net);
    double tok[] = {1, 2, 0, 4, 5, 3, 3, 1};
    x = dla_tensor_from_host(tok, DLA_F64, "CBT", DLA_DIMS(1, 2, 4));
    check_net(net, x, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* A loss of one output of a network with two: the other head's
 * learnables get zeros (MATLAB's dlgradient; it was the error "the loss
 * does not depend on learnable 5, head2/Weights"). A loss that reaches
 * none of the learnables (a forward with values of its own) is still an
 * error naming the first: the "argument wrt[0] (4x3 double)" of
 * dla_gradient is an argument the caller never wrote. */
static dla_status first_output_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)nin;
    (void)nout;
    dla_net *net = ctx;
    dla_tensor *y[2];
    dla_status st = dla_net_forward(net, 1, in, 2, y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y[0], y[0]), 0, NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* The same with values of its own given to the forward (made before the
 * call: constants to the tape). */
typedef struct own_values {
    dla_net *net;
    dla_tensor *v[6];
} own_values;

static dla_status other_values_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)nin;
    (void)nout;
    own_values *o = ctx;
    dla_tensor *y[2];
    dla_status st = dla_net_forward(o->net, 1, in, 2, y, NULL,
                                    &(dla_net_forward_options){.learnables = o->v});
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y[0], y[0]), 0, NULL);
    return dla_net_gradient(o->net, out[0], out + 1);
}

static void a_learnable_the_loss_leaves_out_gets_zeros(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
                      dla_fc_layer(4, &(dla_fc_layer_options){.name = "trunk"}),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "head1"})};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    dla_layer *head2 = dla_fc_layer(3, &(dla_fc_layer_options){.name = "head2"});
    assert_int_equal(dla_net_add_layers(net, 1, &head2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "trunk", "head2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 5));
    dla_tensor *out[7];
    if (dla_feval(first_output_loss, net, 1, &x, 7, out) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_table *t = dla_net_learnables(net);
    for (int r = 0; r < 6; r++) {
        const int zero = !strcmp(dla_table_layer(t, r), "head2");
        assert_int_equal(dla_tensor_numel(out[1 + r]), dla_tensor_numel(dla_table_value(t, r)));
        double big = 0;
        for (int64_t e = 0; e < dla_tensor_numel(out[1 + r]); e++) {
            const double g = fabs(dla_tensor_item(out[1 + r], e));
            big = g <= big ? big : g; /* a NaN is kept */
        }
        if (zero ? !(big == 0.0) : !(big > 0.0))
            fail_msg("%s/%s: max |gradient| %g", dla_table_layer(t, r),
                     dla_table_parameter(t, r), big);
    }
    own_values o = {.net = net};
    for (int r = 0; r < 6; r++)
        o.v[r] = dla_affine(dla_table_value(t, r), 1, 0);
    assert_int_equal(dla_feval(other_values_loss, &o, 1, &x, 7, out), DLA_ERR_INVALID_ARGUMENT);
    const char *msg = dla_last_error();
    if (!strstr(msg, "dla_net_gradient: the loss does not depend on learnable 1, trunk/Weights "
                     "(4x3 double), nor on any other of the network's learnables"))
        fail_msg("%s", msg);
    dla_net_free(net);
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(cnn_with_batchnorm_has_the_gradients_of_finite_differences),
        TU_TEST(graph_with_addition_and_concatenation_differentiates_every_branch),
        TU_TEST(conv1d_and_global_pooling_over_time_differentiate),
        TU_TEST(one_d_pooling_layers_differentiate),
        TU_TEST(prelu_and_indexing1d_differentiate),
        TU_TEST(grouped_convolutions_differentiate),
        TU_TEST(three_d_layers_differentiate),
        TU_TEST(gates_clipping_and_depth_concatenation_differentiate),
        TU_TEST(normalization_and_smooth_layers_differentiate),
        TU_TEST(sinusoidal_encoding_of_values_differentiates),
        TU_TEST(lstm_gradients_match_finite_differences_in_both_output_modes),
        TU_TEST(a_copy_used_beside_its_network_adds_nothing_to_its_gradient),
        TU_TEST(edge_options_and_embeddings_differentiate),
        TU_TEST(a_learnable_the_loss_leaves_out_gets_zeros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

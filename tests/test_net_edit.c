/*
 * test_net_edit.c - changing a built network (dla_net_remove_layers,
 * dla_net_replace_layer) and its factors by name (dla_net_set_learn_rate_
 * factor and the rest): the graph, the layers' order, which values stay and
 * which start afresh, the refusals that leave the network as it was, and a
 * frozen layer that trainnet leaves alone.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A small image classifier: input, conv, bn, relu, fc, softmax. */
static dla_net *small_cnn(int classes)
{
    dla_layer *l[] = {
        dla_image_input_layer(8, 8, 1, &(dla_image_input_options){.normalization = "none",
                                                                  .name = "input"}),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.name = "conv"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu"}),
        dla_fc_layer(classes, &(dla_fc_layer_options){.name = "fc"}),
        dla_softmax_layer(&(dla_layer_options){.name = "softmax"}),
    };
    dla_net *net = dla_net_create(6, l);
    if (!net)
        fail_msg("dla_net_create: %s", dla_last_error());
    return net;
}

static dla_tensor *value(dla_net *net, const char *layer, const char *param)
{
    dla_table *t = dla_net_learnables(net);
    assert_non_null(t);
    int r = dla_table_find(t, layer, param);
    assert_true(r >= 0);
    return dla_table_value(t, r);
}

/* The layer names in order, joined by spaces. */
static const char *layer_list(const dla_net *net)
{
    static char buf[512];
    buf[0] = 0;
    for (int i = 0; i < dla_net_layer_count(net); i++) {
        strcat(buf, i ? " " : "");
        strcat(buf, dla_net_layer_name(net, i));
    }
    return buf;
}

/* The connections as "src>dst" joined by spaces, in the network's order. */
static const char *connection_list(const dla_net *net)
{
    static char buf[1024];
    buf[0] = 0;
    for (int i = 0; i < dla_net_connection_count(net); i++) {
        const char *s, *d;
        assert_int_equal(dla_net_connection(net, i, &s, &d), DLA_OK);
        strcat(buf, i ? " " : "");
        strcat(buf, s);
        strcat(buf, ">");
        strcat(buf, d);
    }
    return buf;
}

/* n random 8x8 single-channel images (inside the caller's scope). */
static dla_tensor *images(int n, uint64_t seed)
{
    dla_rng_seed(seed);
    return dla_randn(DLA_F32, "SSCB", DLA_DIMS(8, 8, 1, n));
}

static void replaced_layer_starts_afresh_and_the_others_keep_their_values(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    dla_tensor *conv_w = value(net, "conv", "Weights"), *fc_w = value(net, "fc", "Weights");
    dla_tensor *bn_offset = value(net, "bn", "Offset");
    /* A new fc of the same size and name: its dims fit the old rows, and
     * it must still not inherit them. */
    dla_layer *fc = dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"});
    assert_int_equal(dla_net_replace_layer(net, "fc", 1, &fc), DLA_OK);
    assert_false(dla_net_initialized(net));
    assert_string_equal(layer_list(net), "input conv bn relu fc softmax");
    assert_string_equal(connection_list(net), "input>conv conv>bn bn>relu relu>fc fc>softmax");
    /* The replaced layer's learnables are gone before initialization. */
    assert_int_equal(dla_net_learnable_count(net), 4);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_learnable_count(net), 6);
    assert_ptr_equal(value(net, "conv", "Weights"), conv_w);
    assert_ptr_equal(value(net, "bn", "Offset"), bn_offset);
    dla_tensor *new_w = value(net, "fc", "Weights");
    assert_ptr_not_equal(new_w, fc_w);
    assert_false(tu_same_bits(new_w, fc_w));
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 1, (dla_tensor *[]){images(5, 1)}, 1, &y, NULL), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    assert_int_equal(dla_tensor_dim(y, 2), 5);
    dla_net_free(net);
    dla_scope_end();
}

/* Replacing one layer by two in the middle gives the network that was
 * built with them, value for value. */
static void replacing_with_several_layers_is_the_network_built_with_them(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    dla_layer *two[] = {
        dla_leakyrelu_layer(0.1, &(dla_layer_options){.name = "leaky"}),
        dla_dropout_layer(0.5, &(dla_layer_options){.name = "drop"}),
    };
    assert_int_equal(dla_net_replace_layer(net, "relu", 2, two), DLA_OK);
    assert_string_equal(layer_list(net), "input conv bn leaky drop fc softmax");
    assert_string_equal(connection_list(net),
                        "input>conv conv>bn fc>softmax leaky>drop bn>leaky drop>fc");
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_layer *l[] = {
        dla_image_input_layer(8, 8, 1, &(dla_image_input_options){.normalization = "none",
                                                                  .name = "input"}),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.name = "conv"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"}),
        dla_leakyrelu_layer(0.1, &(dla_layer_options){.name = "leaky"}),
        dla_dropout_layer(0.5, &(dla_layer_options){.name = "drop"}),
        dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
        dla_softmax_layer(&(dla_layer_options){.name = "softmax"}),
    };
    dla_net *built = dla_net_create(7, l);
    assert_non_null(built);
    int nl = dla_net_learnable_count(net);
    assert_int_equal(dla_net_learnable_count(built), nl);
    assert_int_equal(dla_net_set_learnables(built, nl, dla_table_values(dla_net_learnables(net))),
                     DLA_OK);
    dla_tensor *x = images(4, 2), *a = NULL, *b = NULL;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &a, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(built, 1, &x, 1, &b, NULL), DLA_OK);
    assert_true(tu_same_bits(a, b));
    dla_net_free(built);
    dla_net_free(net);
    dla_scope_end();
}

/* A layer with two inputs keeps both by order; a first new layer with
 * fewer inputs than are connected is refused, the network unchanged. */
static void inputs_are_reconnected_by_order(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {
        dla_feature_input_layer(4, &(dla_feature_input_options){.name = "in"}),
        dla_fc_layer(4, &(dla_fc_layer_options){.name = "a"}),
        dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
        dla_fc_layer(2, &(dla_fc_layer_options){.name = "out"}),
    };
    dla_net *net = dla_net_create(4, l); /* add/in2 is free: not initialized yet */
    assert_non_null(net);
    dla_layer *b = dla_fc_layer(4, &(dla_fc_layer_options){.name = "b"});
    assert_int_equal(dla_net_add_layers(net, 1, &b), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "b"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "b", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    /* A first new layer of one input cannot take in2: refused, and the
     * network is still the initialized one it was. */
    dla_layer *relu = dla_relu_layer(NULL);
    assert_int_equal(dla_net_replace_layer(net, "add", 1, &relu), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "input 2 of 'add' is connected (from 'b')"));
    assert_true(dla_net_initialized(net));
    /* A product of the same two inputs takes them in order. */
    dla_layer *mul = dla_multiplication_layer(2, &(dla_layer_options){.name = "mul"});
    assert_int_equal(dla_net_replace_layer(net, "add", 1, &mul), DLA_OK);
    assert_string_equal(layer_list(net), "in a mul out b");
    assert_string_equal(connection_list(net), "in>a in>b a>mul/in1 b>mul/in2 mul>out");
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(4, 3)), *y = NULL;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    /* out(a(x) .* b(x)), by the ops. */
    dla_tensor *ya = dla_fullyconnect(x, value(net, "a", "Weights"), value(net, "a", "Bias"));
    dla_tensor *yb = dla_fullyconnect(x, value(net, "b", "Weights"), value(net, "b", "Bias"));
    dla_tensor *want = dla_fullyconnect(dla_mul(ya, yb), value(net, "out", "Weights"),
                              value(net, "out", "Bias"));
    assert_true(tu_same_bits(y, want));
    dla_net_free(net);
    dla_scope_end();
}

/* A layer that feeds itself (a cycle through it, which dla_net_init then
 * refuses naming it): the replacement's last layer takes its place as the
 * source. The old index was used as it was, which read as the layer after
 * the new ones: relu fed the new layer in the old one's place (a wrong
 * graph, in silence), and past the last layer the connection read memory
 * out of bounds. */
static void a_layer_feeding_itself_is_replaced_by_a_cycle_through_the_new_ones(void **state)
{
    (void)state;
    for (int last = 0; last < 2; last++) {
        dla_layer *l[] = {
            dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
            dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
            dla_relu_layer(&(dla_layer_options){.name = "relu"}),
        };
        dla_net *net = dla_net_create(last ? 2 : 3, l);
        if (last)
            dla_layer_free(l[2]);
        assert_non_null(net);
        assert_int_equal(dla_net_connect(net, "add", "add/in2"), DLA_OK);
        dla_layer *nl[] = {dla_addition_layer(2, &(dla_layer_options){.name = "a2"}),
                           dla_tanh_layer(&(dla_layer_options){.name = "t"})};
        if (dla_net_replace_layer(net, "add", 2, nl) != DLA_OK)
            fail_msg("%s", dla_last_error());
        assert_string_equal(layer_list(net), last ? "in a2 t" : "in a2 t relu");
        assert_string_equal(connection_list(net), last ? "a2>t in>a2/in1 t>a2/in2"
                                                       : "a2>t in>a2/in1 t>a2/in2 t>relu");
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "cycle"));
        dla_net_free(net);
    }
}

/* A connection from or to a state port keeps its port through a
 * replacement (enc/hidden -> dec/hidden stayed enc/hidden, not enc);
 * a state output in use that the last new layer lacks is refused, the
 * network as it was. */
static void state_ports_are_reconnected_by_name(void **state)
{
    (void)state;
    dla_layer *l[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "x"}),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "enc",
                                                                  .has_state_outputs = 1}),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "dec",
                                                                  .has_state_inputs = 1})};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "enc/hidden", "dec/hidden"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "enc/cell", "dec/cell"), DLA_OK);
    dla_layer *plain = dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "enc2"});
    assert_int_equal(dla_net_replace_layer(net, "enc", 1, &plain), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "output \"hidden\" of 'enc' is connected (to "
                                              "\"dec/hidden\"), but the last new layer ('enc2', "
                                              "LSTM) has 1 output"));
    assert_int_equal(dla_net_connection_count(net), 4);
    dla_layer *dec = dla_gru_layer(2, &(dla_gru_layer_options){.name = "dec2"});
    dla_layer *dec3 = dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "dec3",
                                                                  .has_state_inputs = 1});
    /* The GRU has one input: "dec/hidden" is connected. */
    assert_int_equal(dla_net_replace_layer(net, "dec", 1, &dec), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_replace_layer(net, "dec", 1, &dec3), DLA_OK);
    const char *want[4][2] = {{"x", "enc"}, {"enc/out", "dec3/in"},
                              {"enc/hidden", "dec3/hidden"}, {"enc/cell", "dec3/cell"}};
    assert_int_equal(dla_net_connection_count(net), 4);
    for (int k = 0; k < 4; k++) {
        const char *src, *dst;
        assert_int_equal(dla_net_connection(net, k, &src, &dst), DLA_OK);
        int found = 0;
        for (int j = 0; j < 4; j++)
            found |= !strcmp(src, want[j][0]) && !strcmp(dst, want[j][1]);
        if (!found)
            fail_msg("connection %s -> %s", src, dst);
    }
    if (dla_net_init(net, 0, NULL) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    dla_net_free(net);
}

static void refusals_leave_the_network_as_it_was(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    const char *before = strdup(connection_list(net));
    /* No such layer: the new layers are freed (the leak check sees it). */
    dla_layer *fc = dla_fc_layer(3, NULL);
    assert_int_equal(dla_net_replace_layer(net, "nope", 1, &fc), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no layer is named 'nope'"));
    /* A name another layer has. */
    fc = dla_fc_layer(3, &(dla_fc_layer_options){.name = "conv"});
    assert_int_equal(dla_net_replace_layer(net, "fc", 1, &fc), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "named 'conv'"));
    /* Two new layers of one name. */
    dla_layer *two[] = {dla_relu_layer(&(dla_layer_options){.name = "r"}),
                        dla_relu_layer(&(dla_layer_options){.name = "r"})};
    assert_int_equal(dla_net_replace_layer(net, "relu", 2, two), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "both named 'r'"));
    /* An input layer where the old layer had its input connected. */
    dla_layer *in = dla_feature_input_layer(4, NULL);
    assert_int_equal(dla_net_replace_layer(net, "relu", 1, &in), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "input 1 of 'relu' is connected (from 'bn')"));
    /* Nothing new. */
    assert_int_equal(dla_net_replace_layer(net, "relu", 0, NULL), DLA_ERR_INVALID_ARGUMENT);
    /* Removal names an unknown layer among known ones: nothing removed. */
    assert_int_equal(dla_net_remove_layers(net, 2, (const char *[]){"relu", "nope"}),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no layer is named 'nope'"));
    assert_true(dla_net_initialized(net));
    assert_string_equal(layer_list(net), "input conv bn relu fc softmax");
    assert_string_equal(connection_list(net), before);
    assert_int_equal(dla_net_learnable_count(net), 6);
    free((void *)before);
    dla_net_free(net);
    dla_scope_end();
}

static void removed_layers_take_their_connections_and_values(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    dla_tensor *conv_w = value(net, "conv", "Weights");
    assert_int_equal(dla_net_remove_layers(net, 2, (const char *[]){"bn", "bn"}), DLA_OK);
    assert_false(dla_net_initialized(net));
    assert_string_equal(layer_list(net), "input conv relu fc softmax");
    assert_string_equal(connection_list(net), "input>conv relu>fc fc>softmax");
    assert_int_equal(dla_net_learnable_count(net), 4);
    assert_int_equal(dla_net_state_count(net), 0);
    assert_int_equal(dla_net_connect(net, "conv", "relu"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_ptr_equal(value(net, "conv", "Weights"), conv_w);
    /* A layer added again under the removed name starts afresh. */
    dla_layer *bn = dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"});
    assert_int_equal(dla_net_remove_layers(net, 1, (const char *[]){"softmax"}), DLA_OK);
    assert_int_equal(dla_net_add_layers(net, 1, &bn), DLA_OK);
    assert_int_equal(dla_net_connect(net, "fc", "bn"), DLA_OK);
    /* An fc output is CB data: batch norm takes it. */
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_state_count(net), 2);
    assert_string_equal(dla_net_output_name(net, 0), "bn");
    dla_net_free(net);
    dla_scope_end();
}

/* An allocator whose blocks freed while `holding` is set are kept, their
 * text overwritten with "fc", until release_held: a read of freed memory
 * then reads the name of another layer, which valgrind alone would see. */
typedef struct held_block {
    struct held_block *next;
    size_t size;
    max_align_t align[];
} held_block;
static int holding;
static held_block *held;

static void *holding_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    held_block *b = ptr ? (held_block *)((char *)ptr - offsetof(held_block, align)) : NULL;
    if (size == 0 || !b) {
        if (b && holding) {
            memset(b->align, 0, b->size);
            if (b->size >= 3)
                memcpy(b->align, "fc", 3);
            b->next = held;
            held = b;
        } else {
            free(b);
        }
        if (size == 0)
            return NULL;
    }
    held_block *n = malloc(sizeof *n + size);
    if (!n)
        return NULL;
    n->size = size;
    if (b) {
        memcpy(n->align, b->align, b->size < size ? b->size : size);
        holding_alloc(NULL, ptr, 0);
    }
    return n->align;
}

static void release_held(void)
{
    while (held) {
        held_block *b = held;
        held = b->next;
        free(b);
    }
}

/* Names borrowed from the network itself: dla_net_layer_name's, the same
 * one twice (the second was read after the first removal had freed it
 * with its layer), or dla_net_input_name's (freed when the removal
 * uninitialized the network, before it was read), so a name could come
 * to name another layer ("fc" here) or none. */
static void removed_layers_named_by_the_network_itself(void **state)
{
    (void)state;
    dla_set_allocator(holding_alloc, NULL);
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    const int bn = 2, relu = 3;
    assert_string_equal(dla_net_layer_name(net, bn), "bn");
    const char *names[] = {dla_net_layer_name(net, bn), dla_net_layer_name(net, relu),
                           dla_net_layer_name(net, bn), dla_net_layer_name(net, relu)};
    holding = 1;
    dla_status st = dla_net_remove_layers(net, 4, names);
    holding = 0;
    release_held();
    assert_int_equal(st, DLA_OK);
    assert_string_equal(layer_list(net), "input conv fc softmax");
    assert_string_equal(connection_list(net), "input>conv fc>softmax");
    /* A name from dla_net_input_name is freed by the uninitialization
     * the removal starts with: it was read after that, given once. */
    dla_net_free(net);
    net = small_cnn(3);
    assert_true(dla_net_initialized(net));
    const char *input[] = {dla_net_input_name(net, 0)};
    assert_string_equal(input[0], "input");
    holding = 1;
    st = dla_net_remove_layers(net, 1, input);
    holding = 0;
    release_held();
    assert_int_equal(st, DLA_OK);
    assert_string_equal(layer_list(net), "conv bn relu fc softmax");
    dla_net_free(net);
    dla_scope_end();
    dla_set_allocator(NULL, NULL);
}

/* The input layer of a trained network removed and the network initialized
 * again with examples of another size (a transposed image, another channel
 * count): the conv layer's Weights no longer fit. They were made afresh in
 * silence, the layer kept its factors (a frozen layer frozen at random
 * values) and training went on from random weights. The init is refused
 * now, naming the layer and both sizes, and the network keeps its values;
 * examples of the trained size then initialize it with them. */
static void an_init_whose_examples_do_not_fit_the_trained_weights_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    dla_tensor *conv_w = value(net, "conv", "Weights"), *fc_w = value(net, "fc", "Weights");
    assert_int_equal(dla_net_set_learn_rate_factor(net, "conv", NULL, 0), DLA_OK);
    assert_int_equal(dla_net_remove_layers(net, 1, (const char *[]){"input"}), DLA_OK);
    /* Two channels where the conv was trained on one. */
    dla_tensor *two = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(8, 8, 2, 1));
    assert_int_equal(dla_net_init(net, 1, &two), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'conv'"));
    assert_non_null(strstr(dla_last_error(), "learnable Weights is 3x3x1x4"));
    assert_non_null(strstr(dla_last_error(), "makes it 3x3x2x4"));
    assert_false(dla_net_initialized(net));
    /* 9x9 images: the conv fits, the fc after it no longer does. */
    dla_tensor *big = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(9, 9, 1, 1));
    assert_int_equal(dla_net_init(net, 1, &big), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "layer 'fc'"));
    /* The trained size: every value kept, the freeze too. */
    dla_tensor *one = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(8, 8, 1, 1));
    assert_int_equal(dla_net_init(net, 1, &one), DLA_OK);
    assert_ptr_equal(value(net, "conv", "Weights"), conv_w);
    assert_ptr_equal(value(net, "fc", "Weights"), fc_w);
    assert_true(dla_net_learn_rate_factor(net, "conv", "Weights") == 0);
    dla_net_free(net);
    dla_scope_end();
}

static void factors_by_name_freeze_layers_and_survive_replacement(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    assert_true(dla_net_learn_rate_factor(net, "conv", "Weights") == 1);
    assert_true(dla_net_l2_factor(net, "conv", "Bias") == 0);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "conv", NULL, 0), DLA_OK);
    assert_int_equal(dla_net_set_l2_factor(net, "bn", "Scale", 2.5), DLA_OK);
    assert_true(dla_net_learn_rate_factor(net, "conv", "Weights") == 0);
    assert_true(dla_net_learn_rate_factor(net, "conv", "Bias") == 0);
    assert_true(dla_net_learn_rate_factor(net, "bn", "Scale") == 1);
    assert_true(dla_net_l2_factor(net, "bn", "Scale") == 2.5);
    /* The table says the same. */
    dla_table *t = dla_net_learnables(net);
    assert_true(dla_table_learn_rate_factor(t, dla_table_find(t, "conv", "Bias")) == 0);
    /* Refusals, with the reason. */
    assert_int_equal(dla_net_set_learn_rate_factor(net, "conv", "Weight", 1),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no learnable 'Weight' (its learnables: Weights, Bias)"));
    assert_int_equal(dla_net_set_learn_rate_factor(net, "relu", NULL, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "layer 'relu' has no learnables"));
    assert_int_equal(dla_net_set_learn_rate_factor(net, "nope", NULL, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_set_l2_factor(net, "conv", NULL, -1), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_set_l2_factor(net, "conv", NULL, INFINITY), DLA_ERR_INVALID_ARGUMENT);
    assert_true(isnan(dla_net_learn_rate_factor(net, "conv", "nope")));
    assert_true(isnan(dla_net_l2_factor(net, "conv", NULL)));
    /* Replacing fc keeps the others' factors; the new fc has the defaults
     * once initialized, and none before. */
    dla_layer *fc = dla_fc_layer(5, &(dla_fc_layer_options){.name = "fc"});
    assert_int_equal(dla_net_set_learn_rate_factor(net, "fc", NULL, 3), DLA_OK);
    assert_int_equal(dla_net_replace_layer(net, "fc", 1, &fc), DLA_OK);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "fc", NULL, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no learnables yet"));
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_true(dla_net_learn_rate_factor(net, "conv", "Weights") == 0);
    assert_true(dla_net_l2_factor(net, "bn", "Scale") == 2.5);
    assert_true(dla_net_learn_rate_factor(net, "fc", "Weights") == 1);
    dla_net_free(net);
    dla_scope_end();
}

/* Transfer learning in small: a trained network's classifier replaced for
 * a task of another number of classes, the convolution frozen; trainnet
 * leaves the frozen values bit for bit and trains the new layer. */
static void trainnet_leaves_a_frozen_layer_alone(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = small_cnn(3);
    dla_layer *fc = dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc_new"});
    assert_int_equal(dla_net_replace_layer(net, "fc", 1, &fc), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "conv", NULL, 0), DLA_OK);
    dla_tensor *conv_w = dla_tensor_retain(value(net, "conv", "Weights"));
    dla_tensor *conv_b = dla_tensor_retain(value(net, "conv", "Bias"));
    dla_tensor *fc_w = dla_tensor_retain(value(net, "fc_new", "Weights"));
    int n = 64;
    dla_tensor *x = images(n, 3);
    /* Class 1 where the image's mean is positive. */
    int32_t cls[64];
    for (int i = 0; i < n; i++)
        cls[i] = i % 2;
    dla_tensor *t = dla_tensor_from_host(cls, DLA_I32, "", DLA_DIMS(1, n));
    dla_train_data data = {.predictors = x, .targets = t};
    /* A mini-batch solver, and L-BFGS, which has no learning rate to
     * multiply: it trained the frozen layer with the others. */
    const dla_training_options opts[2] = {
        {.solver = "adam", .max_epochs = 2, .mini_batch_size = 16, .verbose = -1,
         .l2_regularization = 1e-2},
        {.solver = "lbfgs", .max_iterations = 3, .verbose = -1}};
    for (int k = 0; k < 2; k++) {
        dla_net *trained = NULL;
        if (dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &opts[k],
                         &trained, NULL) != DLA_OK)
            fail_msg("%s: %s", opts[k].solver, dla_last_error());
        assert_true(tu_same_bits(value(trained, "conv", "Weights"), conv_w));
        assert_true(tu_same_bits(value(trained, "conv", "Bias"), conv_b));
        assert_false(tu_same_bits(value(trained, "fc_new", "Weights"), fc_w));
        assert_true(dla_net_learn_rate_factor(trained, "conv", "Weights") == 0);
        dla_net_free(trained);
    }
    /* A factor L-BFGS cannot apply, and nothing left to train, refused. */
    dla_net *trained = NULL;
    assert_int_equal(dla_net_set_learn_rate_factor(net, "fc_new", "Weights", 2), DLA_OK);
    assert_int_equal(dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"},
                                  &opts[1], &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "fc_new/Weights has learn-rate factor 2"));
    assert_null(trained);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "bn", NULL, 0), DLA_OK);
    assert_int_equal(dla_net_set_learn_rate_factor(net, "fc_new", NULL, 0), DLA_OK);
    assert_int_equal(dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"},
                                  &opts[1], &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "nothing to train"));
    dla_tensor_release(conv_w);
    dla_tensor_release(conv_b);
    dla_tensor_release(fc_w);
    dla_net_free(net);
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(replaced_layer_starts_afresh_and_the_others_keep_their_values),
        TU_TEST(replacing_with_several_layers_is_the_network_built_with_them),
        TU_TEST(inputs_are_reconnected_by_order),
        TU_TEST(a_layer_feeding_itself_is_replaced_by_a_cycle_through_the_new_ones),
        TU_TEST(refusals_leave_the_network_as_it_was),
        TU_TEST(state_ports_are_reconnected_by_name),
        TU_TEST(removed_layers_take_their_connections_and_values),
        TU_TEST(removed_layers_named_by_the_network_itself),
        TU_TEST(an_init_whose_examples_do_not_fit_the_trained_weights_is_refused),
        TU_TEST(factors_by_name_freeze_layers_and_survive_replacement),
        TU_TEST(trainnet_leaves_a_frozen_layer_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_net.c - dla_net as a whole: building graphs (sequences, named
 * connections, MATLAB's default names, the errors), the Learnables and
 * State tables, the initializers' statistics, the summary text, the
 * automatic acceleration of forward inside dla_feval, copies and casts,
 * and what an eager predict holds.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The digit CNN of the dlaccelerate page (no final softmax). */
static dla_net *digit_cnn(void)
{
    dla_layer *l[] = {
        dla_image_input_layer(28, 28, 1, &(dla_image_input_options){.normalization = "none", .name = "input"}),
        dla_conv2d_layer(5, 5, 20, &(dla_conv_layer_options){.name = "conv1"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn1"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu1"}),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}, .name = "conv2"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn2"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu2"}),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}, .name = "conv3"}),
        dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn3"}),
        dla_relu_layer(&(dla_layer_options){.name = "relu3"}),
        dla_fc_layer(10, &(dla_fc_layer_options){.name = "fc"}),
    };
    dla_net *net = dla_net_create(11, l);
    if (!net)
        fail_msg("dla_net_create: %s", dla_last_error());
    return net;
}

static void a_sequence_has_matlabs_tables_and_names(void **state)
{
    (void)state;
    dla_net *net = digit_cnn();
    /* MATLAB: Layers 11x1, Connections 10x2, Learnables 14x3, State 6x3. */
    assert_true(dla_net_initialized(net));
    assert_int_equal(dla_net_layer_count(net), 11);
    assert_int_equal(dla_net_connection_count(net), 10);
    assert_int_equal(dla_net_learnable_count(net), 14);
    assert_int_equal(dla_net_state_count(net), 6);
    assert_int_equal(dla_net_input_count(net), 1);
    assert_string_equal(dla_net_input_name(net, 0), "input");
    assert_int_equal(dla_net_output_count(net), 1);
    assert_string_equal(dla_net_output_name(net, 0), "fc");
    dla_table *lt = dla_net_learnables(net), *st = dla_net_state(net);
    assert_string_equal(dla_table_layer(lt, 0), "conv1");
    assert_string_equal(dla_table_parameter(lt, 0), "Weights");
    assert_string_equal(dla_table_parameter(lt, 3), "Scale");
    assert_string_equal(dla_table_layer(st, 5), "bn3");
    assert_string_equal(dla_table_parameter(st, 5), "TrainedVariance");
    assert_int_equal(dla_table_find(lt, "fc", "Bias"), 13);
    assert_int_equal(dla_table_find(lt, "fc", "Nope"), -1);
    /* MATLAB's factors: biases are not L2-regularized. */
    assert_true(dla_table_l2_factor(lt, 0) == 1 && dla_table_l2_factor(lt, 1) == 0);
    assert_true(dla_table_learn_rate_factor(lt, 1) == 1);
    int64_t dims[DLA_MAX_DIMS];
    char fmt[DLA_MAX_DIMS + 1];
    assert_int_equal(dla_net_activation(net, "conv1", dims, fmt), 4);
    assert_string_equal(fmt, "SSCB");
    assert_true(dims[0] == 24 && dims[1] == 24 && dims[2] == 20 && dims[3] == 1);
    assert_int_equal(dla_tensor_dim(dla_net_get(net, "fc", "Weights"), 2), 24 * 24 * 20);
    const char *src, *dst;
    assert_int_equal(dla_net_connection(net, 9, &src, &dst), DLA_OK);
    assert_string_equal(src, "relu3");
    assert_string_equal(dst, "fc");
    dla_net_free(net);

    /* Unnamed layers get MATLAB's default names: numbered where two or
     * more of a kind are given together (dlnetwork([... fc relu fc])
     * names them fc_1, relu, fc_2), bare where one is alone; every lone
     * one was numbered ("sequenceinput"), and code naming MATLAB's "fc"
     * failed. */
    dla_layer *u[] = {dla_sequence_input_layer(3, NULL), dla_fc_layer(2, NULL), dla_relu_layer(NULL),
                      dla_fc_layer(2, NULL)};
    net = dla_net_create(4, u);
    assert_non_null(net);
    assert_string_equal(dla_net_layer_name(net, 0), "sequenceinput");
    assert_string_equal(dla_net_layer_name(net, 1), "fc_1");
    assert_string_equal(dla_net_layer_name(net, 2), "relu");
    assert_string_equal(dla_net_layer_name(net, 3), "fc_2");
    assert_string_equal(dla_net_layer_type(net, 2), "relu");
    /* A lone one added later: bare while that name is free, then the
     * first free number ("fc_1" and "fc_2" are taken). */
    dla_layer *later[] = {dla_fc_layer(2, NULL)};
    assert_int_equal(dla_net_add_layers(net, 1, later), DLA_OK);
    assert_string_equal(dla_net_layer_name(net, 4), "fc");
    later[0] = dla_fc_layer(2, NULL);
    assert_int_equal(dla_net_add_layers(net, 1, later), DLA_OK);
    assert_string_equal(dla_net_layer_name(net, 5), "fc_3");
    later[0] = dla_relu_layer(NULL);
    assert_int_equal(dla_net_add_layers(net, 1, later), DLA_OK);
    assert_string_equal(dla_net_layer_name(net, 6), "relu_1");
    dla_net_free(net);

    /* An unnamed layer's number skips the names given to layers later in
     * the same call: an unnamed "fc" before one named "fc_1" was named
     * "fc_1" too, and the call failed ("two layers are named 'fc_1'"),
     * a network MATLAB builds. The same in dla_net_add_layers and
     * dla_net_replace_layer. */
    dla_layer *v[] = {dla_feature_input_layer(3, NULL), dla_fc_layer(4, NULL),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc_1"}), dla_fc_layer(2, NULL)};
    net = dla_net_create(4, v);
    if (!net)
        fail_msg("%s", dla_last_error());
    assert_string_equal(dla_net_layer_name(net, 0), "featureinput");
    assert_string_equal(dla_net_layer_name(net, 1), "fc_2");
    assert_string_equal(dla_net_layer_name(net, 2), "fc_1");
    assert_string_equal(dla_net_layer_name(net, 3), "fc_3");
    /* alone, but its bare name is given to another layer of the call */
    dla_layer *w[] = {dla_relu_layer(NULL), dla_relu_layer(&(dla_layer_options){.name = "relu"})};
    assert_int_equal(dla_net_add_layers(net, 2, w), DLA_OK);
    assert_string_equal(dla_net_layer_name(net, 4), "relu_1");
    assert_string_equal(dla_net_layer_name(net, 5), "relu");
    dla_layer *z[] = {dla_tanh_layer(NULL), dla_tanh_layer(&(dla_layer_options){.name = "tanh_1"}),
                      dla_tanh_layer(NULL)};
    if (dla_net_replace_layer(net, "relu_1", 3, z) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_string_equal(dla_net_layer_name(net, 4), "tanh_2");
    assert_string_equal(dla_net_layer_name(net, 5), "tanh_1");
    assert_string_equal(dla_net_layer_name(net, 6), "tanh_3");
    dla_net_free(net);

    /* Thousands of unnamed layers of one kind are named in linear passes
     * (each search began at 1: 3000 took 9 s). No time is asserted here;
     * the names are. */
    enum { MANY = 3000 };
    dla_layer **many = malloc(MANY * sizeof *many);
    assert_non_null(many);
    many[0] = dla_feature_input_layer(3, NULL);
    for (int i = 1; i < MANY; i++)
        many[i] = dla_relu_layer(NULL);
    net = dla_net_create(MANY, many);
    if (!net)
        fail_msg("%s", dla_last_error());
    assert_string_equal(dla_net_layer_name(net, 1), "relu_1");
    assert_string_equal(dla_net_layer_name(net, MANY - 1), "relu_2999");
    dla_net_free(net);
    free(many);
}

static void bad_graphs_fail_naming_the_layer(void **state)
{
    (void)state;
    /* Bad options: an error layer, reported when it is used. */
    dla_layer *bad = dla_conv2d_layer(0, 3, 4, NULL);
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "FilterSize"));
    bad = dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "first"});
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(bad), "OutputMode"));
    dla_layer_free(bad);
    /* Duplicate names. */
    dla_layer *dup[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.name = "a"}),
                        dla_relu_layer(&(dla_layer_options){.name = "a"})};
    assert_null(dla_net_create(2, dup));
    assert_non_null(strstr(dla_last_error(), "two layers are named 'a'"));
    /* A failed dla_net_add_layers leaves an initialized network as it
     * was: it became uninitialized, and predict failed until
     * dla_net_init ran again. */
    dla_layer *ok2[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
                        dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *kept = dla_net_create(2, ok2);
    assert_true(dla_net_initialized(kept));
    dla_layer *again[] = {dla_relu_layer(&(dla_layer_options){.name = "r"}),
                          dla_relu_layer(&(dla_layer_options){.name = "fc"})};
    assert_int_equal(dla_net_add_layers(kept, 2, again), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "two layers are named 'fc'"));
    dla_layer *broken[] = {dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "first"})};
    assert_int_equal(dla_net_add_layers(kept, 1, broken), DLA_ERR_INVALID_ARGUMENT);
    assert_true(dla_net_initialized(kept));
    assert_int_equal(dla_net_layer_count(kept), 2);
    assert_int_equal(dla_net_input_count(kept), 1);
    assert_string_equal(dla_net_output_name(kept, 0), "fc");
    dla_scope_begin();
    dla_tensor *kx = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 2)), *ky;
    assert_int_equal(dla_net_predict(kept, 1, &kx, 1, &ky, NULL), DLA_OK);
    /* Room for two outputs of a network of one: the message read "1
     * outputs asked for, room for 2", as if the caller had asked for one. */
    dla_tensor *two[2];
    assert_int_equal(dla_net_predict(kept, 1, &kx, 2, two, NULL), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "dla_net_predict: argument nout: 2; the network has 1 output "
                                  "(fc)"))
        fail_msg("%s", dla_last_error());
    /* Adding no layers changes nothing: the network became uninitialized,
     * and its next predict failed. */
    assert_int_equal(dla_net_add_layers(kept, 0, NULL), DLA_OK);
    assert_true(dla_net_initialized(kept));
    assert_int_equal(dla_net_predict(kept, 1, &kx, 1, &ky, NULL), DLA_OK);
    dla_scope_end();
    /* A good call still makes it uninitialized. */
    dla_layer *more[] = {dla_relu_layer(&(dla_layer_options){.name = "r"})};
    assert_int_equal(dla_net_add_layers(kept, 1, more), DLA_OK);
    assert_false(dla_net_initialized(kept));
    assert_int_equal(dla_net_connect(kept, "fc", "r"), DLA_OK);
    assert_int_equal(dla_net_init(kept, 0, NULL), DLA_OK);
    assert_string_equal(dla_net_output_name(kept, 0), "r");
    dla_net_free(kept);
    /* Names have no length limit: a network with a 299-character name
     * was refused ("dla_net_connect: source \"xxx...\" is not a layer
     * name"), and its connections' and inputs' names were cut at 299. */
    char longname[300], longer[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    memcpy(longer, longname, sizeof longer);
    longer[0] = 'y';
    dla_layer *lng[] = {dla_addition_layer(2, &(dla_layer_options){.name = longname}),
                        dla_fc_layer(2, &(dla_fc_layer_options){.name = longer})};
    dla_net *ln = dla_net_create(2, lng);
    if (!ln)
        fail_msg("%s", dla_last_error());
    const char *src, *dst;
    assert_int_equal(dla_net_connection(ln, 0, &src, &dst), DLA_OK);
    assert_string_equal(src, longname);
    assert_string_equal(dst, longer);
    assert_int_equal(dla_net_disconnect(ln, longname, longer), DLA_OK);
    assert_int_equal(dla_net_connect(ln, longer, longname), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "has 2 inputs; name one"));
    char port[320];
    snprintf(port, sizeof port, "%s/in2", longname);
    assert_int_equal(dla_net_connect(ln, longer, port), DLA_OK);
    assert_int_equal(dla_net_connection(ln, 0, &src, &dst), DLA_OK);
    assert_string_equal(dst, port);
    dla_scope_begin();
    dla_tensor *lex[2] = {dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 1)), dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1))};
    assert_int_equal(dla_net_init(ln, 2, lex), DLA_OK);
    snprintf(port, sizeof port, "%s/in1", longname);
    assert_string_equal(dla_net_input_name(ln, 0), port);
    assert_string_equal(dla_net_input_name(ln, 1), longer);
    dla_scope_end();
    dla_net_free(ln);
    /* An input layer beside a free input: the input layer's example may
     * be NULL (it was refused as "example 1: NULL"), in either place,
     * and the dtype comes from the example given. */
    for (int order = 0; order < 2; order++) {
        dla_layer *mix[] = {dla_feature_input_layer(2, &(dla_feature_input_options){.name = "in"}),
                            dla_addition_layer(2, &(dla_layer_options){.name = "add"})};
        dla_net *mn = dla_net_create(2, mix);
        assert_non_null(mn);
        if (order) {
            assert_int_equal(dla_net_disconnect(mn, "in", "add/in1"), DLA_OK);
            assert_int_equal(dla_net_connect(mn, "in", "add/in2"), DLA_OK);
        }
        dla_scope_begin();
        /* The free input is add/in2 (order 0) or add/in1 (order 1);
         * the input layer comes first among the inputs in layer order. */
        dla_tensor *ex[2] = {NULL, dla_zeros(DLA_F64, "CB", DLA_DIMS(2, 1))};
        if (dla_net_init(mn, 2, ex) != DLA_OK)
            fail_msg("order %d: %s", order, dla_last_error());
        dla_tensor *w = dla_ones(DLA_F64, "CB", DLA_DIMS(2, 3)), *y;
        assert_int_equal(dla_net_predict(mn, 2, (dla_tensor *[]){w, w}, 1, &y, NULL), DLA_OK);
        assert_int_equal(dla_tensor_dtype(y), DLA_F64);
        assert_int_equal(dla_tensor_dim(y, 2), 3);
        /* The free input's own example may not be NULL. */
        dla_net_free(mn);
        dla_layer *mix2[] = {dla_feature_input_layer(2, &(dla_feature_input_options){.name = "in"}),
                             dla_addition_layer(2, &(dla_layer_options){.name = "add"})};
        mn = dla_net_create(2, mix2);
        assert_int_equal(dla_net_init(mn, 2, (dla_tensor *[]){ex[1], NULL}), DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "example 2: NULL"));
        dla_scope_end();
        dla_net_free(mn);
    }
    /* An input layer's example must be what the layer takes: one of 7
     * channels for a 3-feature input was ignored in silence and the
     * network built for 3. Observations and steps are free. */
    dla_layer *fi[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
                       dla_fc_layer(2, NULL), dla_addition_layer(2, &(dla_layer_options){.name = "add"})};
    dla_net *fn = dla_net_create(3, fi);
    assert_non_null(fn);
    dla_scope_begin();
    dla_tensor *ex7[2] = {dla_zeros(DLA_F32, "CB", DLA_DIMS(7, 1)), dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 1))};
    assert_int_equal(dla_net_init(fn, 2, ex7), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "dla_net_init: example 1 is 7(C) x 1(B) \"CB\", but input 'in' "
                                  "is a Feature Input layer, which takes 3(C) x 1(B) \"CB\""))
        fail_msg("%s", dla_last_error());
    assert_false(dla_net_initialized(fn));
    dla_tensor *exb[2] = {dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 5)), ex7[1]};
    if (dla_net_init(fn, 2, exb) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_scope_end();
    dla_net_free(fn);
    dla_layer *si[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "in"}),
                       dla_fc_layer(2, NULL)};
    fn = dla_net_create(2, si);
    assert_non_null(fn);
    dla_layer *relu = dla_relu_layer(NULL);
    assert_int_equal(dla_net_add_layers(fn, 1, &relu), DLA_OK);
    assert_int_equal(dla_net_connect(fn, "fc", "relu"), DLA_OK);
    dla_scope_begin();
    dla_tensor *seq = dla_zeros(DLA_F64, "CBT", DLA_DIMS(3, 4, 9));
    if (dla_net_init(fn, 1, &seq) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_tensor_dtype(dla_net_get(fn, "fc", "Weights")), DLA_F64);
    dla_net_free(fn);
    fn = dla_net_create(2, (dla_layer *[]){dla_sequence_input_layer(3, NULL), dla_relu_layer(NULL)});
    assert_non_null(fn);
    dla_layer *relu2 = dla_relu_layer(NULL);
    assert_int_equal(dla_net_add_layers(fn, 1, &relu2), DLA_OK);
    dla_tensor *img = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(3, 1, 1, 1));
    assert_int_equal(dla_net_init(fn, 1, (dla_tensor *[]){img}), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_connect(fn, "relu", "relu_1"), DLA_OK);
    assert_int_equal(dla_net_init(fn, 1, &img), DLA_ERR_SHAPE);
    dla_scope_end();
    dla_net_free(fn);
    /* A size the layer cannot take names the layer. */
    dla_layer *l[] = {dla_sequence_input_layer(3, NULL),
                      dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.name = "c2d"})};
    assert_null(dla_net_create(2, l));
    assert_non_null(strstr(dla_last_error(), "layer 'c2d' (2-D Convolution)"));
    /* A cycle, and a free input without an example. */
    dla_layer *c[] = {dla_relu_layer(&(dla_layer_options){.name = "r1"}),
                      dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
                      dla_relu_layer(&(dla_layer_options){.name = "r2"})};
    dla_net *net = dla_net_create(3, c);
    assert_non_null(net);
    assert_false(dla_net_initialized(net));
    assert_int_equal(dla_net_connect(net, "r2", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "r2", "add/in2"), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_connect(net, "r2", "add/in3"), DLA_ERR_INVALID_ARGUMENT);
    /* Only in1, in2: not in02, in+2 or in 2 for in2 (free in this one). */
    dla_layer *c2[] = {dla_relu_layer(&(dla_layer_options){.name = "r1"}),
                       dla_addition_layer(2, &(dla_layer_options){.name = "add"})};
    dla_net *pair_net = dla_net_create(2, c2);
    assert_non_null(pair_net);
    static const char *const odd[] = {"add/in02", "add/in+2", "add/in 2", "add/in0", "add/in-2"};
    for (int k = 0; k < 5; k++)
        if (dla_net_connect(pair_net, "r1", odd[k]) != DLA_ERR_INVALID_ARGUMENT)
            fail_msg("%s taken", odd[k]);
    assert_int_equal(dla_net_connect(pair_net, "r1", "add/in2"), DLA_OK);
    dla_net_free(pair_net);
    assert_int_equal(dla_net_connect(net, "nope", "r1"), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "cycle through layer 'r2': 'r2' -> 'add' -> 'r2'"))
        fail_msg("%s", dla_last_error());
    /* The layers on the cycle, not one that only reads from it: a layer
     * added first and fed by the cycle had the cycle blamed on it
     * ("a cycle through layer 'x'"). */
    dla_layer *xl = dla_relu_layer(&(dla_layer_options){.name = "x"});
    dla_net *cyc = dla_net_create(1, &xl);
    dla_layer *cl[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
                       dla_addition_layer(2, &(dla_layer_options){.name = "add"}),
                       dla_relu_layer(&(dla_layer_options){.name = "b"})};
    assert_int_equal(dla_net_add_layers(cyc, 3, cl), DLA_OK);
    assert_int_equal(dla_net_connect(cyc, "b", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(cyc, "b", "x"), DLA_OK);
    assert_int_equal(dla_net_init(cyc, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "cycle through layer 'add': 'add' -> 'b' -> 'add'"))
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_disconnect(cyc, "b", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_connect(cyc, "add", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(cyc, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "cycle through layer 'add': 'add' -> 'add'"))
        fail_msg("%s", dla_last_error());
    dla_net_free(cyc);
    assert_int_equal(dla_net_disconnect(net, "r2", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "example"));
    /* Before: an uninitialized network had no inputs or outputs to name,
     * though dla_net_init wants its examples in their order. */
    assert_false(dla_net_initialized(net));
    assert_int_equal(dla_net_input_count(net), 2);
    assert_string_equal(dla_net_input_name(net, 0), "r1");
    assert_string_equal(dla_net_input_name(net, 1), "add/in2");
    assert_null(dla_net_input_name(net, 2));
    assert_int_equal(dla_net_output_count(net), 1);
    assert_string_equal(dla_net_output_name(net, 0), "r2");
    assert_int_equal(dla_net_connect(net, "r1", "add/in2"), DLA_OK); /* the graph changes */
    assert_int_equal(dla_net_input_count(net), 1);
    assert_null(dla_net_input_name(net, 1));
    assert_int_equal(dla_net_disconnect(net, "r1", "add/in2"), DLA_OK);
    assert_int_equal(dla_net_input_count(net), 2);
    dla_scope_begin();
    dla_tensor *ex[2] = {dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1)), dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1))};
    assert_int_equal(dla_net_init(net, 2, ex), DLA_OK);
    assert_string_equal(dla_net_input_name(net, 1), "add/in2");
    dla_tensor *y, *x = dla_tensor_from_host((float[]){-1, 2, -3}, DLA_F32, "CB", DLA_DIMS(3, 1));
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){x, x}, 1, &y, NULL), DLA_OK);
    /* r2(relu(r1(x)) + x): relu([0 2 0] + [-1 2 -3]) */
    assert_true(dla_tensor_item(y, 1) == 4 && dla_tensor_item(y, 0) == 0);
    dla_scope_end();
    dla_net_free(net);
}

/* Mean and variance of a tensor's elements. */
static void moments(dla_tensor *t, double *mean, double *var, double *lo, double *hi)
{
    int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof *h * (size_t)n);
    assert_int_equal(dla_tensor_to_host(dla_cast(t, DLA_F64), h, sizeof *h * (size_t)n), DLA_OK);
    double s = 0, q = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        s += h[i];
        q += h[i] * h[i];
        *lo = fmin(*lo, h[i]);
        *hi = fmax(*hi, h[i]);
    }
    *mean = s / (double)n;
    *var = q / (double)n - *mean * *mean;
    free(h);
}

static void initializers_have_matlabs_statistics(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(11);
    const char *inits[] = {"glorot", "he", "narrow-normal", "zeros", "ones"};
    for (int k = 0; k < 5; k++) {
        dla_layer *l[] = {dla_sequence_input_layer(300, NULL),
                          dla_fc_layer(200, &(dla_fc_layer_options){.weights_initializer = inits[k],
                                                                    .bias_initializer = inits[k], .name = "fc"})};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        double m, v, lo, hi;
        moments(dla_net_get(net, "fc", "Weights"), &m, &v, &lo, &hi);
        if (k == 0) { /* uniform in +-sqrt(6 / (300 + 200)): variance bound^2 / 3 */
            double b = sqrt(6.0 / 500);
            assert_true(lo >= -b && hi <= b && hi > 0.95 * b);
            assert_true(fabs(m) < 0.01 && fabs(v / (b * b / 3) - 1) < 0.03);
        } else if (k == 1) { /* normal, std sqrt(2 / 300) */
            assert_true(fabs(m) < 0.01 && fabs(sqrt(v) / sqrt(2.0 / 300) - 1) < 0.02);
        } else if (k == 2) {
            assert_true(fabs(m) < 0.001 && fabs(sqrt(v) / 0.01 - 1) < 0.02);
        } else {
            assert_true(lo == k - 3 && hi == k - 3);
        }
        dla_net_free(net);
    }
    /* Convolutions: fanIn = fh*fw*C, fanOut = fh*fw*F. */
    dla_layer *c[] = {dla_image_input_layer(8, 8, 16, NULL),
                      dla_conv2d_layer(3, 3, 32, &(dla_conv_layer_options){.weights_initializer = "he", .name = "c"}),
                      dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"})};
    dla_net *net = dla_net_create(3, c);
    double m, v, lo, hi;
    moments(dla_net_get(net, "c", "Weights"), &m, &v, &lo, &hi);
    assert_true(fabs(sqrt(v) / sqrt(2.0 / (9 * 16)) - 1) < 0.03);
    moments(dla_net_get(net, "c", "Bias"), &m, &v, &lo, &hi);
    assert_true(lo == 0 && hi == 0);
    moments(dla_net_get(net, "bn", "Scale"), &m, &v, &lo, &hi);
    assert_true(lo == 1 && hi == 1);
    moments(dla_net_get(net, "bn", "TrainedVariance"), &m, &v, &lo, &hi);
    assert_true(lo == 1 && hi == 1);
    dla_net_free(net);
    /* LSTM: orthogonal recurrent weights (R'R = I), unit forget gate bias. */
    dla_layer *s[] = {dla_sequence_input_layer(5, NULL), dla_lstm_layer(6, &(dla_lstm_layer_options){.name = "l"})};
    net = dla_net_create(2, s);
    dla_tensor *r = dla_net_get(net, "l", "RecurrentWeights");
    assert_int_equal(dla_tensor_dim(r, 1), 24);
    dla_tensor *rtr = dla_pagemtimes(r, "transpose", r, "none");
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            assert_true(fabs(dla_tensor_item(rtr, i + 6 * j) - (i == j)) < 1e-5);
    dla_tensor *b = dla_net_get(net, "l", "Bias");
    for (int i = 0; i < 24; i++)
        assert_true(dla_tensor_item(b, i) == (i >= 6 && i < 12));
    dla_net_free(net);
    /* Orthogonal input weights, as MATLAB offers them (they were
     * "unknown"): 4H x C tall (orthonormal columns) for C = 5 < 8, wide
     * (orthonormal rows) for C = 11 > 8; the GRU's 3H x C too. */
    static const int64_t in_ch[] = {5, 11, 7};
    for (int k = 0; k < 3; k++) {
        dla_layer *rec = k < 2 ? dla_lstm_layer(2, &(dla_lstm_layer_options){
                                     .name = "l", .input_weights_initializer = "orthogonal"})
                               : dla_gru_layer(2, &(dla_gru_layer_options){
                                     .name = "l", .input_weights_initializer = "orthogonal"});
        dla_layer *q[] = {dla_sequence_input_layer(in_ch[k], NULL), rec};
        net = dla_net_create(2, q);
        if (!net)
            fail_msg("%s", dla_last_error());
        dla_tensor *w = dla_net_get(net, "l", "InputWeights");
        const int64_t rows = dla_tensor_dim(w, 1), cols = dla_tensor_dim(w, 2);
        assert_int_equal(rows, k < 2 ? 8 : 6);
        assert_int_equal(cols, in_ch[k]);
        const int tall = rows >= cols;
        const int64_t n = tall ? cols : rows;
        dla_tensor *g = tall ? dla_pagemtimes(w, "transpose", w, "none")
                             : dla_pagemtimes(w, "none", w, "transpose");
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++)
                if (!(fabs(dla_tensor_item(g, i + n * j) - (i == j)) <= 1e-5))
                    fail_msg("case %d: (W'W or WW')(%lld, %lld) = %g", k, (long long)i,
                             (long long)j, dla_tensor_item(g, i + n * j));
        dla_net_free(net);
    }
    dla_scope_end();
}

static void the_summary_lists_layers_activations_and_learnables(void **state)
{
    (void)state;
    dla_net *net = digit_cnn();
    char buf[8192];
    int n = dla_net_summary(net, buf, sizeof buf);
    assert_true(n > 0 && n < (int)sizeof buf);
    assert_int_equal((int)strlen(buf), n);
    assert_non_null(strstr(buf, "dla_net with 11 layers, 10 connections, 14 learnables, 6 states\n"));
    assert_non_null(strstr(buf, "Inputs: input   Outputs: fc\n"));
    const char *rows[] = {
        "    1  input  Image Input          28(S) x 28(S) x 1(C) x 1(B)   -",
        "    2  conv1  2-D Convolution      24(S) x 24(S) x 20(C) x 1(B)  520 (Weights 5x5x1x20, Bias 1x1x20)",
        "20 5x5x1 convolutions with stride [1 1] and padding [0 0 0 0]\n",
        "    3  bn1    Batch Normalization  24(S) x 24(S) x 20(C) x 1(B)  40 (Offset 1x1x20, Scale 1x1x20)",
        "Batch normalization with 20 channels\n",
        "20 3x3x20 convolutions with stride [1 1] and padding [1 1 1 1]\n",
        "   11  fc     Fully Connected      10(C) x 1(B)                  115,210 (Weights 10x11520, Bias 10x1)",
        "  Total learnables: 123,090\n",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strstr(buf, rows[i]))
            fail_msg("summary lacks \"%s\":\n%s", rows[i], buf);
    /* A plain sequence lists no connections; a truncated buffer still ends in NUL. */
    assert_null(strstr(buf, "Connections:"));
    char small[40];
    assert_int_equal(dla_net_summary(net, small, sizeof small), n);
    assert_int_equal((int)strlen(small), (int)sizeof small - 1);
    /* The table display. */
    assert_true(dla_table_describe(dla_net_state(net), buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "bn1    TrainedMean      {1x1x20 single}"));
    dla_net_free(net);
    /* A long list of learnables is shown whole: it was cut at 160 bytes,
     * mid-number, and the last entry read "OutputBias 1" for 1024x1. */
    dla_layer *att[] = {dla_sequence_input_layer(1024, NULL),
                        dla_self_attention_layer(1, 1024, &(dla_self_attention_layer_options){.name = "a"})};
    net = dla_net_create(2, att);
    assert_non_null(net);
    n = dla_net_summary(net, NULL, 0);
    char *big = malloc((size_t)n + 1);
    assert_non_null(big);
    assert_int_equal(dla_net_summary(net, big, (size_t)n + 1), n);
    if (!strstr(big, "4,198,400 (QueryWeights 1024x1024, QueryBias 1024x1, KeyWeights 1024x1024, "
                     "KeyBias 1024x1, ValueWeights 1024x1024, ValueBias 1024x1, OutputWeights "
                     "1024x1024, OutputBias 1024x1)  "))
        fail_msg("%s", big);
    free(big);
    dla_net_free(net);
}

/* The summary's and the tables' columns are padded by display columns:
 * layer names are any UTF-8 text, and padding by bytes pulled a row with
 * an accented letter one column to the left of the others. */
static int columns_to(const char *from, const char *to)
{
    int c = 0;
    for (; from < to; from++)
        c += ((unsigned char)*from & 0xC0) != 0x80;
    return c;
}

static void summary_and_tables_align_accented_names(void **state)
{
    (void)state;
    dla_layer *ls[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "in"}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "d\xc3\xa9j\xc3\xa0"}),
                       dla_fc_layer(2, &(dla_fc_layer_options){.name = "plain"})};
    dla_net *net = dla_net_create(3, ls);
    if (!net)
        fail_msg("%s", dla_last_error());
    char buf[4096];
    dla_net_summary(net, buf, sizeof buf);
    const char *r1 = strstr(buf, "    2  d\xc3\xa9j\xc3\xa0"), *r2 = strstr(buf, "    3  plain");
    assert_non_null(r1);
    assert_non_null(r2);
    const char *t1 = strstr(r1, "Fully Connected"), *t2 = strstr(r2, "Fully Connected");
    if (columns_to(r1, t1) != columns_to(r2, t2))
        fail_msg("the type column is at %d in the accented row, %d in the other:\n%s",
                 columns_to(r1, t1), columns_to(r2, t2), buf);
    dla_table_describe(dla_net_learnables(net), buf, sizeof buf);
    r1 = strstr(buf, "    d\xc3\xa9j\xc3\xa0");
    r2 = strstr(buf, "    plain");
    assert_non_null(r1);
    assert_non_null(r2);
    t1 = strstr(r1, "Weights");
    t2 = strstr(r2, "Weights");
    if (columns_to(r1, t1) != columns_to(r2, t2))
        fail_msg("the parameter column is at %d in the accented row, %d in the other:\n%s",
                 columns_to(r1, t1), columns_to(r2, t2), buf);
    dla_net_free(net);
}

typedef struct loss_ctx {
    dla_net *net;
} loss_ctx;

/* MATLAB's modelLoss: [loss, gradients, state]. */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(dla_softmax(y), in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

static void forward_inside_dla_feval_replays_a_trace_and_hit_rate_climbs(void **state)
{
    (void)state;
    dla_rng_seed(2);
    dla_net *net = digit_cnn();
    dla_net *eager = dla_net_copy(net);
    assert_non_null(eager);
    dla_net_set_accelerate(eager, 0);
    assert_false(dla_net_accelerate_enabled(eager));
    dla_accel *af = dla_net_accelerator(net);
    assert_non_null(af);
    int nl = 14, ns = 6;
    dla_tensor **vel = calloc((size_t)nl, sizeof *vel), **vel2 = calloc((size_t)nl, sizeof *vel2);
    for (int it = 0; it < 6; it++) {
        dla_scope_begin();
        dla_tensor *x = dla_rand(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 8));
        dla_tensor *t = dla_onehotencode(dla_tensor_from_host((int32_t[]){1, 2, 3, 4, 5, 6, 7, 8}, DLA_I32,
                                                              "CB", DLA_DIMS(1, 8)), 10, NULL);
        dla_tensor *out[21], *ref[21];
        assert_int_equal(dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 21, out), DLA_OK);
        assert_int_equal(dla_feval(model_loss, eager, 2, (dla_tensor *[]){x, t}, 21, ref), DLA_OK);
        /* The replay computes what the layers compute. */
        assert_true(fabs(dla_tensor_item(out[0], 0) - dla_tensor_item(ref[0], 0)) < 1e-4);
        assert_true(fabs(dla_tensor_item(out[1], 7) - dla_tensor_item(ref[1], 7)) < 1e-4);
        assert_true(fabs(dla_tensor_item(out[1 + nl], 3) - dla_tensor_item(ref[1 + nl], 3)) < 1e-5);
        /* One trace; every call after the first is a hit, though the
         * learnables and the state change between calls. */
        assert_int_equal(dla_accel_occupancy(af), 1);
        assert_true(fabs(dla_accel_hit_rate(af) - 100.0 * it / (it + 1)) < 1e-9);
        assert_int_equal(dla_net_set_state(net, ns, out + 1 + nl), DLA_OK);
        assert_int_equal(dla_net_set_state(eager, ns, ref + 1 + nl), DLA_OK);
        assert_int_equal(dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, vel, 0.01, 0.9), DLA_OK);
        assert_int_equal(dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(eager)), ref + 1, vel2, 0.01, 0.9), DLA_OK);
        dla_scope_end();
    }
    assert_int_equal(dla_accel_occupancy(dla_net_accelerator(eager)), 0);
    /* Another batch size is another trace, with the reason. */
    dla_scope_begin();
    dla_tensor *x = dla_rand(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 4)), *y, *st[6];
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, st, NULL), DLA_OK);
    assert_int_equal(dla_accel_occupancy(af), 2);
    assert_non_null(strstr(dla_accel_last_miss(af), "input 1 dims 28x28x1x8 -> 28x28x1x4"));
    dla_scope_end();
    dla_optim_free(nl, vel);
    dla_optim_free(nl, vel2);
    free(vel);
    free(vel2);
    dla_net_free(net);
    dla_net_free(eager);
}

/* An accelerated model loss with the learnables as its tensor inputs. */
static dla_status bound_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net), ns = dla_net_state_count(net);
    dla_tensor *y;
    dla_net_forward_options o = {.learnables = in + 2, .state = in + 2 + nl};
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, &o);
    if (st != DLA_OK)
        return st;
    (void)ns;
    out[0] = dla_crossentropy(dla_softmax(y), in[1], NULL);
    return dla_gradient(out[0], nl, in + 2, out + 1);
}

static void an_accelerated_model_loss_takes_the_learnables_as_inputs(void **state)
{
    (void)state;
    dla_rng_seed(9);
    dla_net *net = digit_cnn();
    int nl = 14, ns = 6;
    dla_accel *acc = dla_accelerate(bound_loss, &(dla_accel_options){.name = "modelLoss", .key = dla_net_key});
    dla_tensor **vel = calloc((size_t)nl, sizeof *vel);
    double first = 0, last = 0;
    for (int it = 0; it < 8; it++) {
        dla_scope_begin();
        dla_rng_seed(100); /* the same batch each time: the loss must fall */
        dla_tensor *x = dla_rand(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 8));
        dla_tensor *t = dla_onehotencode(dla_tensor_from_host((int32_t[]){0, 1, 2, 3, 4, 5, 6, 7}, DLA_I32,
                                                              "CB", DLA_DIMS(1, 8)), 10, NULL);
        dla_tensor *in[2 + 14 + 6] = {x, t};
        memcpy(in + 2, dla_table_values(dla_net_learnables(net)), sizeof *in * 14);
        memcpy(in + 16, dla_table_values(dla_net_state(net)), sizeof *in * 6);
        dla_tensor *out[21];
        if (dla_accel_feval(acc, net, 22, in, 21, out) != DLA_OK)
            fail_msg("accel_feval: %s", dla_last_error());
        double loss = dla_tensor_item(out[0], 0);
        if (it == 0)
            first = loss;
        last = loss;
        assert_int_equal(dla_net_set_state(net, ns, out + 1 + nl), DLA_OK);
        assert_int_equal(dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, vel, 0.05, 0.9), DLA_OK);
        dla_scope_end();
    }
    /* New learnables every call, yet one trace: they are inputs. */
    assert_int_equal(dla_accel_occupancy(acc), 1);
    assert_true(dla_accel_hit_rate(acc) > 85);
    assert_true(last < first);
    dla_accel_free(acc);
    dla_optim_free(nl, vel);
    free(vel);
    dla_net_free(net);
}

static void copies_casts_and_sets_keep_tables_consistent(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = digit_cnn();
    dla_net *c = dla_net_copy(net);
    assert_non_null(c);
    assert_int_equal(dla_net_learnable_count(c), 14);
    /* The copy's own tensor (dla_net_gradient tells networks apart by
     * them), with the same values. */
    dla_tensor *cw = dla_net_get(c, "conv1", "Weights"), *nw = dla_net_get(net, "conv1", "Weights");
    assert_true(cw != nw);
    for (int64_t i = 0; i < dla_tensor_numel(nw); i++)
        assert_true(dla_tensor_item(cw, i) == dla_tensor_item(nw, i));
    assert_int_equal(dla_net_cast(c, DLA_F64), DLA_OK);
    assert_int_equal(dla_tensor_dtype(dla_net_get(c, "bn1", "TrainedMean")), DLA_F64);
    assert_int_equal(dla_tensor_dtype(dla_net_get(net, "bn1", "TrainedMean")), DLA_F32);
    /* Setting needs the same dims and dtype, and leaves the table alone otherwise. */
    dla_tensor *w = dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 1, 20));
    assert_int_equal(dla_net_set(net, "conv1", "Weights", w), DLA_OK);
    assert_true(dla_net_get(net, "conv1", "Weights") == w);
    assert_int_equal(dla_net_set(net, "conv1", "Weights", dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 2, 20))),
                     DLA_ERR_SHAPE);
    assert_int_equal(dla_net_set(net, "conv1", "Weights", dla_zeros(DLA_F64, "", DLA_DIMS(5, 5, 1, 20))),
                     DLA_ERR_DTYPE);
    assert_int_equal(dla_table_set_value(dla_net_learnables(net), 0, dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 1, 19))),
                     DLA_ERR_SHAPE);
    assert_null(dla_net_get(net, "conv1", "Offset"));
    assert_int_equal(dla_net_set_learnables(net, 3, (dla_tensor *[]){w, w, w}), DLA_ERR_INVALID_ARGUMENT);
    /* A state value of the wrong size is refused, the table left as it was. */
    dla_tensor *st[6];
    memcpy(st, dla_table_values(dla_net_state(net)), sizeof st);
    dla_tensor *keep = st[0];
    st[0] = dla_zeros(DLA_F32, "", DLA_DIMS(1, 1, 19));
    assert_int_equal(dla_net_set_state(net, 6, st), DLA_ERR_SHAPE);
    assert_true(dla_table_value(dla_net_state(net), 0) == keep);
    /* Forward with a wrong input count fails with error tensors. */
    dla_tensor *y;
    assert_int_equal(dla_net_forward(net, 0, NULL, 1, &y, NULL, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_tensor_status(y), DLA_ERR_INVALID_ARGUMENT);
    dla_net_free(c);
    dla_net_free(net);
    dla_scope_end();
}

/* A network grown by a layer and initialized again with examples of the
 * other float dtype keeps every value it had, converted to the examples'
 * dtype (trainnet initializes a grown network with its predictors, double
 * ones too): the values used to be drawn again from the initializers, a
 * trained network's weights gone without a word. */
static void initializing_with_the_other_dtype_keeps_the_values(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
                      dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = "bn"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 1, (dla_tensor *[]){dla_ones(DLA_F32, "CB", DLA_DIMS(4, 2))}),
                     DLA_OK);
    /* Values no initializer gives: a trained network's. */
    dla_tensor *w = dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(3, 4)), 1.0, 5.0);
    dla_tensor *mean = dla_full(0.1, DLA_F32, "", DLA_DIMS(3, 1));
    assert_int_equal(dla_net_set(net, "fc", "Weights", w), DLA_OK);
    assert_int_equal(dla_net_set(net, "bn", "TrainedMean", mean), DLA_OK);
    dla_layer *more[] = {dla_relu_layer(&(dla_layer_options){.name = "relu"})};
    assert_int_equal(dla_net_add_layers(net, 1, more), DLA_OK);
    assert_int_equal(dla_net_connect(net, "bn", "relu"), DLA_OK);
    assert_int_equal(dla_net_init(net, 1, (dla_tensor *[]){dla_ones(DLA_F64, "CB", DLA_DIMS(4, 2))}),
                     DLA_OK);
    dla_tensor *w64 = dla_net_get(net, "fc", "Weights"), *m64 = dla_net_get(net, "bn", "TrainedMean");
    assert_int_equal(dla_tensor_dtype(w64), DLA_F64);
    assert_int_equal(dla_tensor_dtype(m64), DLA_F64);
    assert_int_equal(dla_tensor_dtype(dla_net_get(net, "fc", "Bias")), DLA_F64);
    for (int64_t i = 0; i < 12; i++)
        assert_true(dla_tensor_item(w64, i) == dla_tensor_item(w, i));
    assert_true(dla_tensor_item(m64, 2) == (double)0.1f);
    /* And back: double values rounded to single, not drawn again. */
    assert_int_equal(dla_net_set(net, "fc", "Weights", dla_full(1 + 0x1p-40, DLA_F64, "", DLA_DIMS(3, 4))),
                     DLA_OK);
    dla_layer *last[] = {dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc2"})};
    assert_int_equal(dla_net_add_layers(net, 1, last), DLA_OK);
    assert_int_equal(dla_net_connect(net, "relu", "fc2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 1, (dla_tensor *[]){dla_ones(DLA_F32, "CB", DLA_DIMS(4, 2))}),
                     DLA_OK);
    dla_tensor *w32 = dla_net_get(net, "fc", "Weights");
    assert_int_equal(dla_tensor_dtype(w32), DLA_F32);
    assert_int_equal(dla_tensor_dtype(dla_net_get(net, "fc2", "Weights")), DLA_F32);
    assert_true(dla_tensor_item(w32, 11) == 1.0);
    assert_true(dla_tensor_item(dla_net_get(net, "bn", "TrainedMean"), 0) == (double)0.1f);
    dla_net_free(net);
    dla_scope_end();
}

/* Double data (MATLAB's default class) into a single network (dlaccel's
 * default) fails naming the input, both dtypes and the remedy; it read
 * "dla_net_predict: layer 'input' (Feature Input): dla_sub: arguments a
 * (double) and b (single) differ in type". */
static void an_input_of_another_dtype_than_the_network_is_named(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "input",
                                                                             .normalization = "zscore"}),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_tensor *xd = dla_ones(DLA_F64, "CB", DLA_DIMS(3, 2)), *y;
    assert_int_equal(dla_net_predict(net, 1, &xd, 1, &y, NULL), DLA_ERR_DTYPE);
    tu_expect_error(y, DLA_ERR_DTYPE, "dla_net_predict: input 1 is double but the network is "
                                      "single: cast the input (dla_cast) or the network "
                                      "(dla_net_cast); layer 'input' (Feature Input): dla_sub");
    dla_tensor *xs = dla_cast(xd, DLA_F32), *st[1];
    assert_int_equal(dla_net_forward(net, 1, &xs, 1, &y, NULL, NULL), DLA_OK);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &xs, 1, &y, st, NULL), DLA_ERR_DTYPE);
    tu_expect_error(y, DLA_ERR_DTYPE, "dla_net_forward: input 1 is single but the network is double");
    assert_int_equal(dla_net_predict(net, 1, &xd, 1, &y, NULL), DLA_OK);
    dla_net_free(net);
    dla_scope_end();
}


/* The testmem device (testutil.h); skips the test without it. */
static dla_device *testmem_or_skip(void)
{
    dla_device *d = tu_testmem_device();
    if (!d)
        skip();
    return d;
}

/* Data on another device than the network's fails naming the input, both
 * devices and the remedy; it read "dla_net_predict: layer 'input' (Feature
 * Input): dla_sub: arguments a and b are on cpu:0 and testmem:0", of an op
 * the caller never called. testmem is the second device when the build's
 * test plugins are found (main adds them after the cpu). */
static void an_input_on_another_device_than_the_network_is_named(void **state)
{
    (void)state;
    dla_device *other = testmem_or_skip();
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "input",
                                                                             .normalization = "zscore"}),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_to_device(net, other), DLA_OK);
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 2)), *y;
    char want[256];
    snprintf(want, sizeof want, "dla_net_predict: input 1 is on %s but the network is on %s: "
             "move the input (dla_tensor_to_device) or the network (dla_net_to_device); layer "
             "'input' (Feature Input)", dla_device_name(dla_tensor_device(x)),
             dla_device_name(other));
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_INVALID_ARGUMENT);
    tu_expect_error(y, DLA_ERR_INVALID_ARGUMENT, want);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, NULL, NULL), DLA_ERR_INVALID_ARGUMENT);
    tu_expect_error(y, DLA_ERR_INVALID_ARGUMENT, "dla_net_forward: input 1 is on ");
    dla_tensor *xo = dla_tensor_to_device(x, other);
    assert_int_equal(dla_net_predict(net, 1, &xo, 1, &y, NULL), DLA_OK);
    dla_net_free(net);
    dla_scope_end();
}

/* A parameter value on another device than the network's was taken by
 * dla_net_set (and dla_net_set_learnables, dla_table_set_value), and the
 * next predict failed inside the layer's op: refused, naming the layer,
 * the parameter, both devices and the remedy; the network keeps its value
 * and still runs. */
static void a_value_on_another_device_than_the_network_is_refused(void **state)
{
    (void)state;
    dla_device *other = testmem_or_skip();
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){.name = "input"}),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_tensor *w = dla_net_get(net, "fc", "Weights");
    assert_non_null(w);
    dla_device *home = dla_tensor_device(w);
    dla_tensor *wo = dla_tensor_to_device(w, other);
    assert_int_equal(dla_tensor_status(wo), DLA_OK);
    char want[256];
    snprintf(want, sizeof want, "dla_net_set: fc/Weights: the value is on %s but the network is "
             "on %s: move the value (dla_tensor_to_device) or the network (dla_net_to_device)",
             dla_device_name(other), dla_device_name(home));
    assert_int_equal(dla_net_set(net, "fc", "Weights", wo), DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_last_error(), want);
    assert_ptr_equal(dla_net_get(net, "fc", "Weights"), w);
    dla_table *lt = dla_net_learnables(net);
    dla_tensor *vals[2] = {wo, dla_table_values(lt)[1]};
    assert_int_equal(dla_net_set_learnables(net, 2, vals), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(
        strstr(dla_last_error(), "dla_net_set_learnables: fc/Weights: the value is on "));
    assert_int_equal(dla_table_set_value(lt, 0, wo), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_table_set_value: fc/Weights: the value is on "));
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 2)), *y;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    /* The value moved back is taken. */
    assert_int_equal(dla_net_set(net, "fc", "Weights", dla_tensor_to_device(wo, home)), DLA_OK);
    dla_net_free(net);
    dla_scope_end();
}

/* A dilated convolution's description gives its dilation factor, as
 * MATLAB's does; it read as a plain convolution. Dilation 1 stays out
 * (the_summary_lists_layers_activations_and_learnables). */
static void the_summary_gives_a_convolution_s_dilation(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {
        dla_image_input_layer(12, 12, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.dilation = {2, 3},
                                                           .padding_mode = "same"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    char buf[8192];
    assert_true(dla_net_summary(net, buf, sizeof buf) > 0);
    if (!strstr(buf, "4 3x3x2 convolutions with stride [1 1], dilation factor [2 3] and padding "
                     "'same'\n"))
        fail_msg("summary lacks the dilation:\n%s", buf);
    dla_net_free(net);
    dla_scope_end();
}

/* Counts of one in the singular: the summary read "1 connections" and
 * dla_net_set_learnables "1 values for 2 rows". */
static void counts_of_one_read_in_the_singular(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(3, NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    char buf[4096];
    assert_true(dla_net_summary(net, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "dla_net with 2 layers, 1 connection, 2 learnables, 0 states\n"));
    dla_tensor *w = dla_net_get(net, "fc", "Weights");
    assert_int_equal(dla_net_set_learnables(net, 1, &w), DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_last_error(), "dla_net_set_learnables: 1 value for 2 rows");
    dla_net_free(net);
    dla_scope_end();
}

/* Everything a training step touches, on a small network: creation,
 * forward with gradients in dla_feval, the state, an optimizer step,
 * predict, the summary, save and (with load) load. Loading is left out
 * when allocations are refused, for time: test_alloc_fail's net_file and
 * net_load workflows refuse the load's allocations. */
static dla_status small_workout(const char *file, int load)
{
    /* Constant initializers and inputs: what is tested here is nn's
     * handling of refused memory, not the random number generator's. */
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 1, &(dla_image_input_options){.normalization = "zscore"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same",
                                                           .weights_initializer = "ones"}),
        dla_batchnorm_layer(NULL),
        dla_relu_layer(NULL),
        dla_fc_layer(3, &(dla_fc_layer_options){.weights_initializer = "ones"}),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(6, l);
    if (!net)
        return dla_last_status();
    dla_status st = DLA_OK;
    dla_tensor *vel[6] = {0};
    dla_scope_begin();
    dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2));
    dla_tensor *t = dla_full(0.25, DLA_F32, "CB", DLA_DIMS(3, 2)), *out[1 + 6 + 2], *y;
    st = dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 9, out);
    if (st == DLA_OK)
        st = dla_net_set_state(net, 2, out + 7);
    if (st == DLA_OK)
        st = dla_sgdmupdate(6, dla_table_values(dla_net_learnables(net)), out + 1, vel, 0.1, 0.9);
    if (st == DLA_OK)
        st = dla_net_predict(net, 1, &x, 1, &y, NULL);
    char buf[2048];
    if (st == DLA_OK && dla_net_summary(net, buf, sizeof buf) <= 0)
        st = DLA_ERR_STATE;
    dla_net *back = NULL;
    if (st == DLA_OK)
        st = dla_net_save(net, file);
    if (st == DLA_OK && load)
        st = dla_net_load(file, &back);
    dla_net_free(back);
    dla_scope_end();
    dla_optim_free(6, vel);
    dla_net_free(net);
    return st;
}

static void every_refused_allocation_fails_cleanly(void **state)
{
    (void)state;
    char file[] = "/tmp/dla_net_oom_XXXXXX";
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(small_workout(file, 1), DLA_OK); /* warm: devices, caches */
    long live = tu_live;
    int failures = 0;
    for (long n = 1;; n++) {
        tu_calls = 0;
        tu_fail_at = n;
        dla_status st = small_workout(file, 0);
        long calls = tu_calls;
        tu_fail_at = 0;
        if (tu_live != live)
            fail_msg("refusing allocation %ld leaked %ld blocks (status %d: %s)", n, tu_live - live,
                     st, dla_last_error());
        if (calls < n) {
            assert_int_equal(st, DLA_OK);
            break;
        }
        if (st != DLA_OK)
            failures++;
    }
    assert_true(failures > 100);
    unlink(file);
}

static void eager_predict_holds_only_the_activations_still_to_be_read(void **state)
{
    /* fc-relu five times, and an addition of the last relu and the first:
     * r1 must live to the end, the others only to the next layer. */
    dla_rng_seed(5);
    dla_layer *l[11];
    char names[10][8];
    for (int k = 0; k < 5; k++) {
        snprintf(names[2 * k], sizeof names[0], "fc%d", k + 1);
        snprintf(names[2 * k + 1], sizeof names[0], "r%d", k + 1);
        l[2 * k] = dla_fc_layer(64, &(dla_fc_layer_options){.name = names[2 * k]});
        l[2 * k + 1] = dla_relu_layer(&(dla_layer_options){.name = names[2 * k + 1]});
    }
    l[10] = dla_addition_layer(2, &(dla_layer_options){.name = "add"});
    dla_net *net = dla_net_create(11, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "r1", "add/in2"), DLA_OK);
    dla_scope_begin();
    /* 300 observations: 75 KB activations, host blocks of their own. */
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(16, 300));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_net_set_accelerate(net, 0);
    dla_tensor *y[4];
    const char *outs[] = {"add", "r1", "r5", "r1"};
    dla_net_forward_options o = {.outputs = outs};
    assert_int_equal(dla_net_predict(net, 1, &x, 4, y, &o), DLA_OK); /* warm */
    long before = tu_live;
    tu_peak = tu_live;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, y, NULL), DLA_OK);
    /* Each activation is 3 blocks (header, storage, memory): holding every
     * layer's result to the end takes 37 blocks at the highest here, the
     * ones still to be read (r1, the layer's input and output) and the
     * run's own arrays 15. */
    long held = tu_peak - before;
    if (held > 21)
        fail_msg("an eager predict held %ld blocks at its highest", held);
    /* The values: add is r5 + r1, and an output asked twice is the same. */
    assert_int_equal(dla_net_predict(net, 1, &x, 4, y, &o), DLA_OK);
    dla_tensor *d = dla_sub(y[0], dla_add(y[2], y[1]));
    assert_true(dla_tensor_item(dla_max(dla_abs(d), 0, NULL), 0) == 0.0);
    assert_true(dla_tensor_item(dla_sum(dla_abs(y[1]), 0, NULL), 0) > 0.0);
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(y[1], y[3])), 0, NULL), 0) == 0.0);
    dla_scope_end();
    dla_net_free(net);
}

/* A small network for the handle checks: sequence input and fc. */
static dla_net *tiny_net(dla_layer **fc)
{
    dla_layer *l[] = {dla_sequence_input_layer(3, NULL), dla_fc_layer(2, NULL)};
    if (fc)
        *fc = l[1];
    dla_net *net = dla_net_create(2, l);
    if (!net)
        fail_msg("dla_net_create: %s", dla_last_error());
    return net;
}

static void freeing_a_network_twice_is_refused_and_logged(void **state)
{
    (void)state;
    dla_net *net = tiny_net(NULL);
    dla_net_free(net);
    dla_clear_error();
    dla_net_free(net); /* crashed before: everything freed a second time */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_net_free"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
}

static void a_network_used_after_it_was_freed_is_an_error(void **state)
{
    (void)state;
    dla_net *net = tiny_net(NULL);
    dla_net_free(net);
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "CBT", DLA_DIMS(3, 1, 1));
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_net_predict"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_int_equal(dla_tensor_status(y), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_connect(net, "a", "b"), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dla_net_copy(net));
    assert_non_null(strstr(dla_last_error(), "dla_net_copy"));
    dla_scope_end();
}

static void a_layer_goes_into_one_network_only(void **state)
{
    (void)state;
    dla_layer *fc;
    dla_net *a = tiny_net(&fc);
    /* Accepted before, and freeing both networks freed fc twice. */
    dla_layer *l[] = {dla_sequence_input_layer(3, NULL), fc};
    dla_net *b = dla_net_create(2, l);
    assert_null(b);
    assert_non_null(strstr(dla_last_error(), "layer 2 ('fc') already belongs to a network"));
    /* The network that has it still works; the other layer given was freed. */
    assert_int_equal(dla_net_layer_count(a), 2);
    assert_string_equal(dla_net_layer_name(a, 1), "fc");
    /* Freeing a layer its network owns is refused, and the network keeps it. */
    dla_clear_error();
    dla_layer_free(fc);
    assert_non_null(strstr(dla_last_error(), "belongs to a network"));
    assert_int_equal(dla_layer_status(fc), DLA_OK);
    dla_net_free(a);
    /* The same layer twice in one call. */
    dla_layer *r = dla_relu_layer(NULL);
    dla_layer *twice[] = {dla_sequence_input_layer(3, NULL), r, r};
    assert_null(dla_net_create(3, twice));
    assert_non_null(strstr(dla_last_error(), "layers 2 and 3 are the same layer"));
    /* A freed layer given to a network. */
    dla_layer *gone = dla_relu_layer(NULL);
    dla_layer_free(gone);
    dla_layer *late[] = {dla_sequence_input_layer(3, NULL), gone};
    assert_null(dla_net_create(2, late));
    assert_non_null(strstr(dla_last_error(), "layer 2"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    dla_clear_error();
    dla_layer_free(gone);
    assert_non_null(strstr(dla_last_error(), "dla_layer_free"));
}

static void sizes_too_large_say_so(void **state)
{
    (void)state;
    dla_layer *l = dla_fc_layer((int64_t)1e12, NULL);
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(l), "OutputSize 1000000000000 is too large (at most 16777216)"));
    dla_layer_free(l);
    l = dla_fc_layer(0, NULL);
    assert_non_null(strstr(dla_layer_error(l), "OutputSize 0 must be positive"));
    dla_layer_free(l);
    l = dla_conv2d_layer(3, 3, (int64_t)1 << 40, NULL);
    assert_non_null(strstr(dla_layer_error(l), "NumFilters 1099511627776 is too large"));
    dla_layer_free(l);
    l = dla_lstm_layer((int64_t)1 << 40, NULL);
    assert_non_null(strstr(dla_layer_error(l), "NumHiddenUnits 1099511627776 is too large"));
    dla_layer_free(l);
    /* Sizes above their bound say the bound: they said "must be positive"
     * or "must be >= 0" of a positive number. */
    l = dla_conv2d_layer((int64_t)1 << 31, 3, 4, NULL);
    assert_non_null(strstr(dla_layer_error(l), "FilterSize must be in 1..2^20, Stride and "
                                               "DilationFactor in 1..2^31-1 (dim 1: 2147483648, "
                                               "1, 1)"));
    dla_layer_free(l);
    /* A "causal" convolution pads (FilterSize - 1) x DilationFactor: a
     * DilationFactor of 2^62 overflowed it into a negative padding, and a
     * layer with a stride dla_conv refuses was made; both are refused when
     * made now, naming the layer. */
    l = dla_conv1d_layer(3, 2, &(dla_conv_layer_options){.name = "c", .dilation = {(int64_t)1 << 62},
                                                         .padding_mode = "causal"});
    assert_int_equal(dla_layer_status(l), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(l), "convolution1d 'c': FilterSize must be in 1..2^20, "
                                               "Stride and DilationFactor in 1..2^31-1 (dim 1: 3, 1, "
                                               "4611686018427387904)"));
    dla_layer_free(l);
    l = dla_transposed_conv2d_layer(3, 3, 4, &(dla_transposed_conv_layer_options){
                                                 .stride = {1, (int64_t)1 << 40}});
    assert_non_null(strstr(dla_layer_error(l), "Stride in 1..2^31-1 (dim 2: 3, 1099511627776)"));
    dla_layer_free(l);
    l = dla_conv1d_layer(3, 2, &(dla_conv_layer_options){.dilation = {((int64_t)1 << 31) - 1},
                                                         .padding_mode = "causal"});
    assert_int_equal(dla_layer_status(l), DLA_OK);
    dla_layer_free(l);
    l = dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.padding = {(int64_t)1 << 40}});
    assert_non_null(strstr(dla_layer_error(l), "Padding 1099511627776 must be in 0..2^20"));
    dla_layer_free(l);
    l = dla_transposed_conv2d_layer(3, 3, 4, &(dla_transposed_conv_layer_options){
                                                 .cropping = {0, INT64_MAX}});
    assert_non_null(strstr(dla_layer_error(l), "Cropping 9223372036854775807 must be in 0..2^20"));
    dla_layer_free(l);
    l = dla_maxpool2d_layer(INT64_MAX, 2, NULL);
    assert_non_null(strstr(dla_layer_error(l), "PoolSize 9223372036854775807 and Stride 1 (dim 1) "
                                               "must be in 1..2^20"));
    dla_layer_free(l);
}

static void a_mini_batch_queue_freed_twice_or_used_after_is_refused(void **state)
{
    (void)state;
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 10));
    dla_mbq *q = NULL;
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x}},
                                    &(dla_mbq_options){.mini_batch_size = 4}, &q), DLA_OK);
    dla_tensor_release(x);
    dla_mbq_free(q);
    dla_tensor *b = NULL;
    assert_int_equal(dla_mbq_next(q, 1, &b), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_mbq_next"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_int_equal(dla_mbq_hasdata(q), 0);
    dla_clear_error();
    dla_mbq_free(q); /* freed everything again before */
    assert_non_null(strstr(dla_last_error(), "dla_mbq_free"));
}

static void a_table_freed_twice_or_used_after_is_refused(void **state)
{
    (void)state;
    dla_net *net = tiny_net(NULL);
    dla_table *lt = dla_net_learnables(net);
    assert_true(dla_table_count(lt) > 0);
    dla_table *t = dla_table_like(lt, dla_table_values(lt));
    assert_non_null(t);
    dla_table_free(t);
    /* Read freed memory before, and answered without a word. */
    dla_clear_error();
    assert_int_equal(dla_table_count(t), 0);
    assert_non_null(strstr(dla_last_error(), "dla_table_count"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_null(dla_table_value(t, 0));
    assert_int_equal(dla_table_set_factors(t, 0, 1, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_table_set_factors"));
    assert_null(dla_table_like(t, NULL));
    assert_non_null(strstr(dla_last_error(), "dla_table_like"));
    dla_clear_error();
    dla_table_free(t); /* freed the rows and the table again before */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_table_free"));
    /* A network's own table kept past dla_net_free. */
    dla_net_free(net);
    dla_clear_error();
    assert_int_equal(dla_table_count(lt), 0);
    assert_non_null(strstr(dla_last_error(), "freed already"));
}

int main(void)
{
    /* testmem as the second device, after the cpu. */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    const struct CMUnitTest tests[] = {
        TU_TEST(a_sequence_has_matlabs_tables_and_names),
        TU_TEST(bad_graphs_fail_naming_the_layer),
        TU_TEST(initializers_have_matlabs_statistics),
        TU_TEST(the_summary_lists_layers_activations_and_learnables),
        TU_TEST(summary_and_tables_align_accented_names),
        TU_TEST(forward_inside_dla_feval_replays_a_trace_and_hit_rate_climbs),
        TU_TEST(an_accelerated_model_loss_takes_the_learnables_as_inputs),
        TU_TEST(copies_casts_and_sets_keep_tables_consistent),
        TU_TEST(initializing_with_the_other_dtype_keeps_the_values),
        TU_TEST(an_input_of_another_dtype_than_the_network_is_named),
        TU_TEST(an_input_on_another_device_than_the_network_is_named),
        TU_TEST(a_value_on_another_device_than_the_network_is_refused),
        TU_TEST(counts_of_one_read_in_the_singular),
        TU_TEST(the_summary_gives_a_convolution_s_dilation),
        TU_TEST(every_refused_allocation_fails_cleanly),
        TU_TEST(eager_predict_holds_only_the_activations_still_to_be_read),
        TU_TEST(freeing_a_network_twice_is_refused_and_logged),
        TU_TEST(a_network_used_after_it_was_freed_is_an_error),
        TU_TEST(a_layer_goes_into_one_network_only),
        TU_TEST(sizes_too_large_say_so),
        TU_TEST(a_mini_batch_queue_freed_twice_or_used_after_is_refused),
        TU_TEST(a_table_freed_twice_or_used_after_is_refused),
    };
    dla_set_allocator(tu_alloc, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_net_cross_attention.c - attentionLayer: a decoder's queries over an
 * encoder's keys and values give dla_attention of the projections the
 * network computes, with the padding mask of the keys and causally; its
 * ports ("query", "key", "value", "mask") by name; first and second
 * derivatives of a network around it against finite differences, replayed
 * and eager; save and load; the refusals.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <dlaccel.h>
#include <dlaccel/nnops.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gradcheck.h"
#include "tu_assert.h"

/* dec (4 channels) -> q (8); enc (6 channels) -> k (8), v (4); attention
 * of q over k and v with opts; the network's one output is the
 * attention's. */
static dla_net *encoder_decoder(const dla_attention_layer_options *opts)
{
    dla_layer *l[] = {
        dla_sequence_input_layer(4, &(dla_sequence_input_options){.name = "dec"}),
        dla_fc_layer(8, &(dla_fc_layer_options){.name = "q"}),
        dla_attention_layer(2, opts),
        dla_sequence_input_layer(6, &(dla_sequence_input_options){.name = "enc"}),
        dla_fc_layer(8, &(dla_fc_layer_options){.name = "k"}),
        dla_fc_layer(4, &(dla_fc_layer_options){.name = "v"}),
    };
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 2, l + 3), DLA_OK); /* enc -> k */
    assert_int_equal(dla_net_add_layers(net, 1, l + 5), DLA_OK);
    if (dla_net_connect(net, "enc", "v") != DLA_OK || dla_net_connect(net, "k", "att/key") != DLA_OK ||
        dla_net_connect(net, "v", "att/value") != DLA_OK)
        fail_msg("connect: %s", dla_last_error());
    return net;
}

/* The projection fc of x with the network's learnables. */
static dla_tensor *project(dla_net *net, const char *fc, dla_tensor *x)
{
    return dla_fullyconnect(x, dla_net_get(net, fc, "Weights"), dla_net_get(net, fc, "Bias"));
}

static void assert_close(dla_tensor *got, dla_tensor *want, double tol)
{
    assert_string_equal(dla_tensor_format(got), dla_tensor_format(want));
    assert_int_equal(dla_tensor_numel(got), dla_tensor_numel(want));
    for (int d = 1; d <= 4; d++)
        assert_int_equal(dla_tensor_dim(got, d), dla_tensor_dim(want, d));
    for (int64_t i = 0; i < dla_tensor_numel(want); i++)
        tu_assert_near(dla_tensor_item(got, i), dla_tensor_item(want, i), tol);
}

static void decoder_queries_attend_to_encoder_keys_and_values(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(3);
    dla_net *net = encoder_decoder(&(dla_attention_layer_options){.name = "att"});
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_int_equal(dla_net_input_count(net), 2);
    assert_int_equal(dla_net_learnable_count(net), 6); /* the three projections' */
    /* 5 decoder steps over 7 encoder steps, 3 observations. */
    dla_tensor *dec = dla_randn(DLA_F64, "CBT", DLA_DIMS(4, 3, 5));
    dla_tensor *enc = dla_randn(DLA_F64, "CBT", DLA_DIMS(6, 3, 7));
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){dec, enc}, 1, &y, NULL), DLA_OK);
    dla_tensor *want = dla_attention(project(net, "q", dec), project(net, "k", enc),
                                     project(net, "v", enc), 2, NULL, NULL);
    assert_close(y, want, 1e-12);
    assert_int_equal(dla_tensor_dim(y, 1), 4);
    assert_int_equal(dla_tensor_dim(y, 3), 5);
    char summary[8192];
    dla_net_summary(net, summary, sizeof summary);
    if (!strstr(summary, "2-head attention") || !strstr(summary, "q -> att/query") ||
        !strstr(summary, "k -> att/key") || !strstr(summary, "v -> att/value"))
        fail_msg("%s", summary);
    dla_net_free(net);

    /* A scale, causal: equal lengths. */
    net = encoder_decoder(&(dla_attention_layer_options){.name = "att", .scale = 0.3,
                                                         .attention_mask = "causal"});
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    enc = dla_randn(DLA_F64, "CBT", DLA_DIMS(6, 3, 5));
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){dec, enc}, 1, &y, NULL), DLA_OK);
    want = dla_attention(project(net, "q", dec), project(net, "k", enc), project(net, "v", enc),
                         2, &(dla_attention_options){.scale = 0.3, .attention_mask = "causal"},
                         NULL);
    assert_close(y, want, 1e-12);
    /* Causal over other lengths is dla_attention's refusal. */
    enc = dla_randn(DLA_F64, "CBT", DLA_DIMS(6, 3, 7));
    assert_int_equal(dla_net_predict(net, 2, (dla_tensor *[]){dec, enc}, 1, &y, NULL),
                     DLA_ERR_SHAPE);
    dla_net_free(net);
    dla_scope_end();
}

/* The mask of the keys: observation 1 has all 7 encoder steps, 2 the
 * first 4, 3 the first 2. Padded keys weigh nothing, and a NaN held at a
 * padded step reaches no query. */
static void a_padding_mask_hides_the_padded_keys(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(4);
    dla_net *net = encoder_decoder(&(dla_attention_layer_options){.name = "att",
                                                                  .has_padding_mask_input = 1});
    /* Inputs in the order of their layers: dec, att's mask, enc. */
    assert_int_equal(dla_net_input_count(net), 3);
    assert_string_equal(dla_net_input_name(net, 1), "att/mask");
    assert_string_equal(dla_net_input_name(net, 2), "enc");
    dla_tensor *dec = dla_randn(DLA_F64, "CBT", DLA_DIMS(4, 3, 5));
    const int len[3] = {7, 4, 2};
    double eh[6 * 3 * 7], mh[3 * 7], kh[7 * 3];
    for (int t = 0; t < 7; t++)
        for (int b = 0; b < 3; b++) {
            mh[b + 3 * t] = t < len[b];
            kh[t + 7 * b] = t < len[b];
            for (int c = 0; c < 6; c++)
                eh[c + 6 * (b + 3 * t)] = t < len[b] ? 0.1 * (double)((c * 5 + b * 3 + t) % 11) - 0.5
                                                     : NAN;
        }
    dla_tensor *enc = dla_tensor_from_host(eh, DLA_F64, "CBT", DLA_DIMS(6, 3, 7));
    dla_tensor *mask = dla_tensor_from_host(mh, DLA_F64, "CBT", DLA_DIMS(1, 3, 7));
    dla_tensor *in[3] = {dec, mask, enc};
    if (dla_net_init(net, 3, in) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 3, in, 1, &y, NULL), DLA_OK);
    /* The same with the padded steps zeroed before the projections' bias
     * is added: the layer zeroes its keys and values, which are the
     * projections of NaN there; zeroing the projections by hand. */
    dla_tensor *zero = dla_zeros(DLA_F64, "", 0, NULL);
    dla_tensor *m = dla_cast(dla_tensor_from_host(mh, DLA_F64, "CBT", DLA_DIMS(1, 3, 7)),
                             DLA_BOOL);
    dla_tensor *k = dla_where(m, project(net, "k", enc), zero);
    dla_tensor *v = dla_where(m, project(net, "v", enc), zero);
    dla_tensor *keys = dla_tensor_from_host(kh, DLA_F64, "", DLA_DIMS(7, 1, 1, 3));
    dla_tensor *want = dla_attention(project(net, "q", dec), k, v, 2,
                                     &(dla_attention_options){.mask = keys}, NULL);
    assert_close(y, want, 1e-12);
    for (int64_t i = 0; i < dla_tensor_numel(y); i++)
        assert_true(isfinite(dla_tensor_item(y, i)));
    /* A mask of other steps than the keys is refused naming both. */
    dla_tensor *short_mask = dla_ones(DLA_F64, "CBT", DLA_DIMS(1, 3, 6));
    assert_int_equal(dla_net_predict(net, 3, (dla_tensor *[]){dec, short_mask, enc}, 1, &y, NULL),
                     DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "input \"mask\" is 1(C) x 3(B) x 6(T) \"CBT\", input \"key\" "
                                  "8(C) x 3(B) x 7(T) \"CBT\""))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    dla_scope_end();
}

/* in -> q, k, v -> attention -> fc: every learnable's first and second
 * derivatives, replayed and eager, with a causal mask. */
static void a_network_around_it_differentiates(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(6);
    dla_layer *l[] = {
        dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "in"}),
        dla_fc_layer(4, &(dla_fc_layer_options){.name = "q"}),
        dla_attention_layer(2, &(dla_attention_layer_options){.name = "att",
                                                              .attention_mask = "causal"}),
        dla_fc_layer(2, &(dla_fc_layer_options){.name = "out"}),
        dla_fc_layer(4, &(dla_fc_layer_options){.name = "k"}),
        dla_fc_layer(6, &(dla_fc_layer_options){.name = "v"}),
    };
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, l + 4), DLA_OK);
    assert_int_equal(dla_net_add_layers(net, 1, l + 5), DLA_OK);
    if (dla_net_connect(net, "in", "k") != DLA_OK ||
        dla_net_connect(net, "in", "v") != DLA_OK || dla_net_connect(net, "k", "att/key") != DLA_OK ||
        dla_net_connect(net, "v", "att/value") != DLA_OK || dla_net_init(net, 0, NULL) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    const int nl = dla_net_learnable_count(net);
    assert_int_equal(nl, 8);
    dla_tensor **values = dla_table_values(dla_net_learnables(net));
    int check[GC_MAX_IN];
    for (int i = 0; i < nl; i++)
        check[i] = 1;
    gc_net c = {net, dla_randn(DLA_F64, "CBT", DLA_DIMS(3, 2, 4)), 1};
    for (int accel = 1; accel >= 0; accel--) {
        dla_net_set_accelerate(net, accel);
        gc_check(gc_run_net, &c, nl, values, check, 1e-5);
        gc_check2(gc_run_net, &c, nl, values, check, 1e-5);
    }
    dla_net_free(net);
    dla_scope_end();
}

static void options_and_ports_survive_save_and_load(void **state)
{
    (void)state;
    char dir[] = "/tmp/dla_xattn_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/net.safetensors", dir);
    dla_rng_seed(8);
    dla_net *net = encoder_decoder(&(dla_attention_layer_options){
        .name = "att", .scale = 0.25, .has_padding_mask_input = 1, .dropout_probability = 0.1});
    dla_scope_begin();
    dla_tensor *in[3] = {dla_randn(DLA_F32, "CBT", DLA_DIMS(4, 2, 3)),
                         dla_ones(DLA_F32, "CBT", DLA_DIMS(1, 2, 5)),
                         dla_randn(DLA_F32, "CBT", DLA_DIMS(6, 2, 5))};
    if (dla_net_init(net, 3, in) != DLA_OK || dla_net_save(net, path) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_net *back = NULL;
    if (dla_net_load(path, &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    char a[8192], b[8192];
    dla_net_summary(net, a, sizeof a);
    dla_net_summary(back, b, sizeof b);
    assert_string_equal(a, b);
    if (!strstr(b, "2-head attention, scale 0.25, padding mask, dropout 0.1"))
        fail_msg("%s", b);
    dla_tensor *ya = NULL, *yb = NULL;
    assert_int_equal(dla_net_predict(net, 3, in, 1, &ya, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(back, 3, in, 1, &yb, NULL), DLA_OK);
    assert_true(tu_same_bits(ya, yb));
    dla_scope_end();
    dla_net_free(back);
    dla_net_free(net);
    unlink(path);
    rmdir(dir);
}

static void refusals_name_the_layer_the_option_and_the_inputs(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *bad = dla_attention_layer(0, &(dla_attention_layer_options){.name = "a"});
    if (!strstr(dla_layer_error(bad), "attention 'a': NumHeads"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_attention_layer(2, &(dla_attention_layer_options){.name = "a",
                                                                .dropout_probability = 1});
    if (!strstr(dla_layer_error(bad), "attention 'a': DropoutProbability 1 must be in [0, 1)"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_attention_layer(2, &(dla_attention_layer_options){.attention_mask = "padding"});
    if (!strstr(dla_layer_error(bad), "AttentionMask \"padding\"; use \"none\" or \"causal\""))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    /* Alone, its three inputs are network inputs; other formats are refused. */
    dla_layer *l = dla_attention_layer(2, &(dla_attention_layer_options){.name = "att"});
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    assert_int_equal(dla_net_input_count(net), 3);
    assert_string_equal(dla_net_input_name(net, 1), "att/key");
    dla_tensor *q = dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 1, 3));
    dla_tensor *kv = dla_zeros(DLA_F32, "CB", DLA_DIMS(4, 1));
    assert_int_equal(dla_net_init(net, 3, (dla_tensor *[]){q, kv, kv}), DLA_ERR_FORMAT);
    if (!strstr(dla_last_error(), "the inputs are \"CBT\" (query), \"CB\" (key) and \"CB\" "
                                  "(value)"))
        fail_msg("%s", dla_last_error());
    /* Channels the heads do not divide: dla_attention's message, at init. */
    dla_tensor *odd = dla_zeros(DLA_F32, "CBT", DLA_DIMS(3, 1, 3));
    assert_int_not_equal(dla_net_init(net, 3, (dla_tensor *[]){odd, odd, odd}), DLA_OK);
    if (!strstr(dla_last_error(), "att"))
        fail_msg("%s", dla_last_error());
    /* Ports by name. */
    assert_int_equal(dla_net_connect(net, "att", "att/in"), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "layer 'att' has inputs \"query\", \"key\" and \"value\"; "
                                  "name one (\"att/query\")"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);

    /* With the keys' padding mask, values of one step or one observation
     * are refused as without it: zeroing them with the mask broadcast
     * them over the 5 keys (2 observations), so that every query got
     * the one value. At initialization and at a later call, eager and
     * replayed. */
    dla_tensor *mq = dla_randn(DLA_F32, "CBT", DLA_DIMS(4, 2, 3));
    dla_tensor *mk = dla_randn(DLA_F32, "CBT", DLA_DIMS(4, 2, 5));
    dla_tensor *mv = dla_randn(DLA_F32, "CBT", DLA_DIMS(6, 2, 5));
    dla_tensor *mm = dla_ones(DLA_F32, "CBT", DLA_DIMS(1, 2, 5));
    dla_tensor *bad_v[2] = {dla_randn(DLA_F32, "CBT", DLA_DIMS(6, 2, 1)),
                            dla_randn(DLA_F32, "CBT", DLA_DIMS(6, 1, 5))};
    const char *bad_dims[2] = {"values 6x2x1", "values 6x1x5"};
    for (int b = 0; b < 2; b++) {
        l = dla_attention_layer(2, &(dla_attention_layer_options){.name = "att",
                                                                  .has_padding_mask_input = 1});
        net = dla_net_create(1, &l);
        assert_non_null(net);
        assert_int_equal(dla_net_init(net, 4, (dla_tensor *[]){mq, mk, bad_v[b], mm}),
                         DLA_ERR_SHAPE);
        if (!strstr(dla_last_error(), bad_dims[b]))
            fail_msg("%s", dla_last_error());
        if (dla_net_init(net, 4, (dla_tensor *[]){mq, mk, mv, mm}) != DLA_OK)
            fail_msg("%s", dla_last_error());
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            dla_tensor *y = NULL;
            assert_int_equal(dla_net_predict(net, 4, (dla_tensor *[]){mq, mk, bad_v[b], mm}, 1,
                                             &y, NULL),
                             DLA_ERR_SHAPE);
            if (!strstr(dla_last_error(), bad_dims[b]))
                fail_msg("%s", dla_last_error());
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(decoder_queries_attend_to_encoder_keys_and_values),
        TU_TEST(a_padding_mask_hides_the_padded_keys),
        TU_TEST(a_network_around_it_differentiates),
        TU_TEST(options_and_ports_survive_save_and_load),
        TU_TEST(refusals_name_the_layer_the_option_and_the_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

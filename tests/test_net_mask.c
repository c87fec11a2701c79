/*
 * test_net_mask.c - HasPaddingMaskInput (selfAttention and the 1-D global
 * poolings): a sequence's prediction alone equals its prediction in a
 * mini-batch padded to a longer neighbour (the tokens example's network,
 * through minibatchpredict, testnet, dla_net_predict eager and
 * accelerated, a copy and a saved and loaded network), NaN and Inf held
 * at padded steps kept out of the poolings and the attention (outputs and
 * gradients), and masks that do
 * not fit, unconnected mask ports and bad options are refused naming the
 * layer, the port and the shapes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tu_assert.h"

#include "testutil.h"
#include "examples/token_net.h"

#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double maxdiff(dla_tensor *a, dla_tensor *b)
{
    assert_int_equal(dla_tensor_numel(a), dla_tensor_numel(b));
    const int64_t n = dla_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(dla_tensor_to_host(dla_cast(a, DLA_F64), x, sizeof *x * (size_t)n), DLA_OK);
    assert_int_equal(dla_tensor_to_host(dla_cast(b, DLA_F64), y, sizeof *y * (size_t)n), DLA_OK);
    double d = 0;
    for (int64_t i = 0; i < n; i++)
        d = tu_worse(d, fabs(x[i] - y[i]));
    free(x);
    free(y);
    return d;
}

/* Sequences of the given lengths, tokens 1..50 (0 is the padding). */
static dla_seqlist *tokens(int n, const int *len)
{
    dla_seqlist *s = dla_seqlist_create(1);
    assert_non_null(s);
    for (int i = 0; i < n; i++) {
        float t[32];
        for (int j = 0; j < len[i]; j++)
            t[j] = (float)(1 + (7 * i + 13 * j) % 50);
        assert_int_equal(dla_seqlist_append(s, t, len[i]), DLA_OK);
    }
    return s;
}

static dla_tensor *first_column(dla_tensor *y)
{
    return dla_slice(y, 2, 0, 1, 1);
}

static void a_prediction_does_not_depend_on_the_padding_of_its_mini_batch(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(11);
    dla_net *net = token_net_make(50, 24, 16, 2, 2);
    assert_non_null(net);
    dla_seqlist *alone = tokens(1, (const int[]){6});
    dla_seqlist *both = tokens(2, (const int[]){6, 20});
    dla_tensor *y1, *y2;
    if (dla_minibatchpredict(net, &(dla_train_data){.sequences = alone}, NULL, &y1) != DLA_OK ||
        dla_minibatchpredict(net, &(dla_train_data){.sequences = both}, NULL, &y2) != DLA_OK)
        fail_msg("minibatchpredict: %s", dla_last_error());
    assert_int_equal(dla_tensor_dim(y2, 2), 2);
    double d = maxdiff(y1, first_column(y2));
    if (!(d <= 1e-5))
        fail_msg("the 6-step sequence's scores differ by %g beside a 20-step one", d);
    /* dla_net_predict of the padded batch, accelerated and eager. */
    dla_tensor *x;
    assert_int_equal(dla_padsequences(both, 2, NULL, NULL, &x, NULL), DLA_OK);
    for (int accel = 1; accel >= 0; accel--) {
        dla_net_set_accelerate(net, accel);
        for (int rep = 0; rep < 2; rep++) { /* the second accelerated call replays */
            dla_tensor *y;
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            assert_true(maxdiff(y1, first_column(y)) <= 1e-5);
        }
    }
    dla_net_set_accelerate(net, 1);
    /* testnet: the same scores give the same cross-entropy. */
    dla_tensor *t1 = dla_tensor_from_host((int32_t[]){1}, DLA_I32, "", DLA_DIMS(1, 1));
    double ce1, ce2;
    assert_int_equal(dla_testnet(net, &(dla_train_data){.sequences = alone, .targets = t1},
                                 "crossentropy", NULL, &ce1), DLA_OK);
    dla_tensor *y;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    float p[4];
    assert_int_equal(dla_tensor_to_host(dla_cast(y, DLA_F32), p, sizeof p), DLA_OK);
    ce2 = -log(p[1]);
    assert_true(fabs(ce1 - ce2) <= 1e-5);
    /* A copy, and the network saved and loaded, keep the masks. */
    dla_net *copy = dla_net_copy(net);
    assert_non_null(copy);
    char path[256];
    snprintf(path, sizeof path, "%s/test_net_mask.%ld.safetensors",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    assert_int_equal(dla_net_save(net, path), DLA_OK);
    dla_net *back = NULL;
    if (dla_net_load(path, &back) != DLA_OK)
        fail_msg("load: %s", dla_last_error());
    remove(path);
    char summary[8192];
    dla_net_summary(back, summary, sizeof summary);
    assert_non_null(strstr(summary, "padding mask"));
    assert_non_null(strstr(summary, "tokens -> attn/mask"));
    assert_non_null(strstr(summary, "tokens -> pool/mask"));
    dla_net *others[2] = {copy, back};
    for (int k = 0; k < 2; k++) {
        dla_tensor *z;
        assert_int_equal(dla_net_predict(others[k], 1, &x, 1, &z, NULL), DLA_OK);
        assert_true(maxdiff(y, z) <= 1e-6);
        dla_net_free(others[k]);
    }
    dla_seqlist_free(alone);
    dla_seqlist_free(both);
    dla_net_free(net);
    dla_scope_end();
}

/* A masked global average is the mean over the data steps, and the
 * masked max the max over them, however much padding follows. */
static void masked_global_pooling_reads_the_data_steps_only(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int avg = 0; avg < 2; avg++) {
        const dla_global_pool1d_layer_options o = {.name = "pool", .has_padding_mask_input = 1};
        dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.name = "x"}),
                          avg ? dla_global_avgpool1d_layer(&o) : dla_global_maxpool1d_layer(&o)};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        assert_int_equal(dla_net_connect(net, "x", "pool/mask"), DLA_OK);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        /* 2 channels x 1 observation x 4 steps: two data steps, then two
         * padded ones (channel 1 is 0) whose channel 2 is larger. */
        const float v[8] = {1, -3, 2, -5, 0, 9, 0, 7};
        dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 1, 4)), *y;
        assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
        float r[2];
        assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
        tu_assert_near(r[0], avg ? 1.5f : 2.0f, 1e-6);
        tu_assert_near(r[1], avg ? -4.0f : -3.0f, 1e-6);
        /* A NaN and an Inf held at the padded steps stay out (they did
         * not as x .* m, 0 * Inf, or x - 1e30 with x NaN). */
        const float w[8] = {1, -3, 2, -5, 0, NAN, 0, INFINITY};
        x = dla_tensor_from_host(w, DLA_F32, "CBT", DLA_DIMS(2, 1, 4));
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
            tu_assert_near(r[0], avg ? 1.5f : 2.0f, 1e-6);
            tu_assert_near(r[1], avg ? -4.0f : -3.0f, 1e-6);
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

/* A mask port fed by a normalizing input layer reads the data as given
 * (docs/networks.md's recipe: a first channel of ones, 0 at the padded
 * steps). It read the layer's output, where "zscore" and "zerocenter"
 * make the ones 0 and the padding -Mean/StandardDeviation: every data
 * step was hidden and the padded ones averaged instead. */
static void a_normalizing_input_layer_still_masks_the_padded_steps(void **state)
{
    (void)state;
    dla_scope_begin();
    static const char *const norms[] = {"zscore", "zerocenter"};
    for (int k = 0; k < 2; k++) {
        dla_tensor *mean = dla_tensor_from_host((const float[]){1, 5}, DLA_F32, "", DLA_DIMS(2, 1));
        dla_tensor *sd = dla_tensor_from_host((const float[]){1, 2}, DLA_F32, "", DLA_DIMS(2, 1));
        const dla_global_pool1d_layer_options o = {.name = "pool", .has_padding_mask_input = 1};
        dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
                              .name = "x", .normalization = norms[k], .mean = mean,
                              .standard_deviation = k ? NULL : sd}),
                          dla_global_avgpool1d_layer(&o)};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        assert_int_equal(dla_net_connect(net, "x", "pool/mask"), DLA_OK);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        /* Two data steps (channel 1 ones; channel 2 4 and 6), then two
         * padded ones, all 0. */
        const float v[8] = {1, 4, 1, 6, 0, 0, 0, 0};
        dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 1, 4)), *y;
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            for (int rep = 0; rep < 2; rep++) {
                assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
                float r[2];
                assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
                /* The normalized data steps' mean: (1-1) and ((4-5) + (6-5)) / 2
                 * over 2 or 1. */
                tu_assert_near(r[0], 0.0f, 1e-6);
                tu_assert_near(r[1], 0.0f, 1e-6);
            }
        }
        /* The mask is the data's: a data step whose normalized first
         * channel is 0 is still a data step. */
        const float w[8] = {1, 7, 1, 9, 0, 0, 0, 0};
        x = dla_tensor_from_host(w, DLA_F32, "CBT", DLA_DIMS(2, 1, 4));
        assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
        float r[2];
        assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
        tu_assert_near(r[1], k ? 3.0f : 1.5f, 1e-6);
        dla_net_free(net);
        /* attentionLayer's mask (of its keys) alike: the data steps'
         * outputs with two padded keys after them are those without. */
        dla_layer *a[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
                              .name = "x", .normalization = norms[k], .mean = mean,
                              .standard_deviation = k ? NULL : sd}),
                          dla_attention_layer(1, &(dla_attention_layer_options){
                              .name = "att", .has_padding_mask_input = 1})};
        net = dla_net_create(0, NULL);
        assert_non_null(net);
        for (int i = 0; i < 2; i++)
            assert_int_equal(dla_net_add_layers(net, 1, &a[i]), DLA_OK);
        static const char *const ports[] = {"att/query", "att/key", "att/value", "att/mask"};
        for (int i = 0; i < 4; i++)
            assert_int_equal(dla_net_connect(net, "x", ports[i]), DLA_OK);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        dla_tensor *padded = dla_tensor_from_host(w, DLA_F32, "CBT", DLA_DIMS(2, 1, 4));
        dla_tensor *alone = dla_tensor_from_host(w, DLA_F32, "CBT", DLA_DIMS(2, 1, 2)), *ya;
        assert_int_equal(dla_net_predict(net, 1, &padded, 1, &y, NULL), DLA_OK);
        assert_int_equal(dla_net_predict(net, 1, &alone, 1, &ya, NULL), DLA_OK);
        assert_true(maxdiff(dla_slice(y, 3, 0, 1, 2), ya) < 1e-6);
        dla_net_free(net);
        dla_tensor_release(mean);
        dla_tensor_release(sd);
    }
    dla_scope_end();
}

/* x -> ds (a max pooling of stride 2) -> pool/in and pool/mask: the mask
 * taken to the downsampled steps through a layer. With a normalizing
 * input layer the pooling read normalized data, the ones 0 and the
 * padding -Mean/StandardDeviation, and the mask hid every data step and
 * kept the padded ones; dla_net_init now refuses it, saying what to do.
 * Without a Normalization the mask is right. */
static dla_net *mask_through_a_pooling(const char *norm, dla_tensor *mean, dla_tensor *sd)
{
    dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){
                          .name = "x", .normalization = norm, .mean = mean,
                          .standard_deviation = sd, .min_length = 2}),
                      dla_maxpool1d_layer(2, &(dla_pool1d_layer_options){.name = "ds", .stride = 2}),
                      dla_global_avgpool1d_layer(&(dla_global_pool1d_layer_options){
                          .name = "pool", .has_padding_mask_input = 1})};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "ds", "pool/mask"), DLA_OK);
    return net;
}

static void a_mask_through_a_layer_after_a_normalization_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *mean = dla_tensor_from_host((const float[]){1, 5}, DLA_F32, "", DLA_DIMS(2, 1));
    dla_tensor *sd = dla_tensor_from_host((const float[]){1, 2}, DLA_F32, "", DLA_DIMS(2, 1));
    static const char *const norms[] = {"zscore", "zerocenter"};
    for (int k = 0; k < 2; k++) {
        dla_net *net = mask_through_a_pooling(norms[k], mean, k ? NULL : sd);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_INVALID_ARGUMENT);
        char want[256];
        snprintf(want, sizeof want, "dla_net_init: the padding mask input \"pool/mask\" reads "
                 "input layer \"x\" through layer \"ds\", after its Normalization \"%s\"",
                 norms[k]);
        if (!strstr(dla_last_error(), want) ||
            !strstr(dla_last_error(), "give \"x\" Normalization \"none\""))
            fail_msg("%s", dla_last_error());
        dla_net_free(net);
    }
    /* Normalization "none": four data steps (channel 2: 4 6 8 2), four
     * padded; ds keeps each pair's max, 6 8 0 0, and of the mask 1 1 0 0. */
    dla_net *net = mask_through_a_pooling("none", NULL, NULL);
    if (dla_net_init(net, 0, NULL) != DLA_OK)
        fail_msg("%s", dla_last_error());
    const float v[16] = {1, 4, 1, 6, 1, 8, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 1, 8)), *y;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    float r[2];
    assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
    tu_assert_near(r[0], 1.0f, 1e-6);
    tu_assert_near(r[1], 7.0f, 1e-6); /* (6 + 8) / 2 */
    dla_net_free(net);
    dla_tensor_release(mean);
    dla_tensor_release(sd);
    dla_scope_end();
}

static dla_status masked_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* Self-attention with a mask: a NaN or an Inf held at a padded step
 * leaves the data steps' outputs and the gradients as a 0 there does.
 * A padded key weighed 0, yet the NaN reached every query of its
 * observation (0 * NaN in the weighted values, a NaN score), so the whole
 * observation, and the loss of the batch, were NaN. */
static void masked_attention_keeps_nan_padding_out(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(14);
    dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.name = "x"}),
                      dla_self_attention_layer(1, 2, &(dla_self_attention_layer_options){
                                                         .name = "attn",
                                                         .has_padding_mask_input = 1}),
                      dla_global_avgpool1d_layer(&(dla_global_pool1d_layer_options){
                          .name = "pool", .has_padding_mask_input = 1}),
                      dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "x", "attn/mask"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "x", "pool/mask"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    const int nl = dla_net_learnable_count(net);
    assert_true(nl <= 12);
    /* 2 channels x 2 observations x 3 steps; channel 1 is the mask: the
     * first observation has two data steps, then padding; the second
     * three data steps. */
    float v[12] = {1, 0.5f, 1, -1, 1, 2, 1, 0.3f, 0, 0, 1, -0.7f};
    dla_tensor *x0 = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 2, 3));
    dla_tensor *y0, *g0[13];
    assert_int_equal(dla_net_predict(net, 1, &x0, 1, &y0, NULL), DLA_OK);
    assert_int_equal(dla_feval(masked_loss, net, 1, &x0, 1 + nl, g0), DLA_OK);
    const float pad[2] = {NAN, INFINITY};
    for (int k = 0; k < 2; k++) {
        v[9] = pad[k];
        dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 2, 3)), *y, *g[13];
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            double d = maxdiff(y, y0);
            if (!(d <= 1e-6))
                fail_msg("padding %g: the outputs differ by %g from 0 padding's", pad[k], d);
            assert_int_equal(dla_feval(masked_loss, net, 1, &x, 1 + nl, g), DLA_OK);
            for (int i = 0; i <= nl; i++)
                if (!((d = maxdiff(g[i], g0[i])) <= 1e-5))
                    fail_msg("padding %g: %s %d differs by %g from 0 padding's", pad[k],
                             i ? "gradient" : "loss", i, d);
        }
    }
    dla_net_set_accelerate(net, 1);
    dla_net_free(net);
    dla_scope_end();
}

/* indexing1dLayer with a mask: each observation's own first or last
 * data step, whether its padding is on the right (observation 1) or on
 * the left (observation 2); one with no data step gives 0. */
static void masked_indexing_takes_each_observations_own_step(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int last = 0; last < 2; last++) {
        const dla_indexing1d_layer_options o = {.name = "ix", .has_padding_mask_input = 1};
        dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.name = "x"}),
                          dla_indexing1d_layer(last ? "last" : "first", &o)};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        assert_int_equal(dla_net_connect(net, "x", "ix/mask"), DLA_OK);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        /* 2 channels x 3 observations x 5 steps, channel 1 the mask:
         * observation 1 has data at steps 1-3, observation 2 at 3-5,
         * observation 3 none. Channel 2 holds 10 * observation + step. */
        float v[2 * 3 * 5];
        for (int t = 0; t < 5; t++)
            for (int b = 0; b < 3; b++) {
                const int data = (b == 0 && t < 3) || (b == 1 && t >= 2);
                v[2 * (b + 3 * t)] = data ? 1.0f : 0.0f;
                v[2 * (b + 3 * t) + 1] = (float)(10 * (b + 1) + t + 1);
            }
        /* Non-finite values at steps not taken, padded (observation 1's
         * step 5) and data (observation 2's step 4), stay out of the
         * result (as x .* w, 0 * Inf made it NaN). */
        v[2 * (0 + 3 * 4) + 1] = NAN;
        v[2 * (1 + 3 * 3) + 1] = INFINITY;
        dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(2, 3, 5)), *y;
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            for (int round = 0; round < 2; round++) {
                assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
                assert_string_equal(dla_tensor_format(y), "CB");
                float r[6];
                assert_int_equal(dla_tensor_to_host(y, r, sizeof r), DLA_OK);
                assert_true(r[0] == 1 && r[2] == 1 && r[4] == 0 && r[5] == 0);
                assert_true(r[1] == (last ? 13.0f : 11.0f));
                assert_true(r[3] == (last ? 25.0f : 23.0f));
            }
        }
        char sum[2048];
        dla_net_summary(net, sum, sizeof sum);
        assert_non_null(strstr(sum, last ? "1-D indexing of the last data step (padding mask)"
                                         : "1-D indexing of the first data step (padding mask)"));
        dla_net_free(net);
    }
    dla_layer *bad = dla_indexing1d_layer(NULL, &(dla_indexing1d_layer_options){
        .name = "ix", .has_padding_mask_input = 3});
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "indexing1d 'ix': HasPaddingMaskInput"));
    dla_layer_free(bad);
    dla_scope_end();
}

/* seqinput "x" (3 channels) -> selfAttention "attn" with its mask port
 * unconnected: a network of two inputs, x and attn/mask. */
static dla_net *unfed_attention(void)
{
    dla_layer *l[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "x"}),
                      dla_self_attention_layer(2, 4, &(dla_self_attention_layer_options){
                                                         .name = "attn",
                                                         .has_padding_mask_input = 1})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    return net;
}

/* An allocator whose blocks start past a header of its own, as a user's
 * may: a block of it handed to libc's free() aborts the program. */
static void *offset_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    const size_t head = 2 * sizeof(max_align_t);
    char *base = ptr ? (char *)ptr - head : NULL;
    if (size == 0) {
        free(base);
        return NULL;
    }
    char *p = realloc(base, head + size);
    return p ? p + head : NULL;
}

/* The masked indexing layer's step numbers were allocated through the
 * library's allocator and freed with free(): with an allocator of one's
 * own (dla_set_allocator), libc got a pointer it never made. */
static void masked_indexing_frees_through_the_library_allocator(void **state)
{
    (void)state;
    dla_set_allocator(offset_alloc, NULL);
    dla_scope_begin();
    dla_layer *l = dla_indexing1d_layer("last", &(dla_indexing1d_layer_options){
                                                    .has_padding_mask_input = 1});
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 2, 4)),
                         dla_ones(DLA_F32, "CBT", DLA_DIMS(1, 2, 4))};
    assert_int_equal(dla_net_init(net, 2, in), DLA_OK);
    dla_tensor *y;
    if (dla_net_predict(net, 2, in, 1, &y, NULL) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    dla_net_free(net);
    dla_scope_end();
    dla_set_allocator(NULL, NULL);
}

static void masks_that_do_not_fit_are_refused_naming_the_layer_and_the_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = unfed_attention();
    assert_int_equal(dla_net_input_count(net), 2);
    assert_string_equal(dla_net_input_name(net, 1), "attn/mask");
    /* The mask's example has the data's dims (2 observations of 5 steps),
     * the input layer none (NULL): initialization runs the input layer's
     * one observation of MinLength steps with a mask of its dims. It was
     * refused: "input \"mask\" is 1(C) x 2(B) x 5(T) \"CBT\", input \"in\"
     * 3(C) x 1(B) x 1(T)", dims the caller never gave. */
    dla_tensor *ex[2] = {NULL, dla_zeros(DLA_F32, "CBT", DLA_DIMS(1, 2, 5))};
    if (dla_net_init(net, 2, ex) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    /* Fed by hand (a custom loop): a mask with the input's dims works... */
    dla_tensor *x = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 2, 5)), *y;
    dla_tensor *in[2] = {x, dla_ones(DLA_F32, "CBT", DLA_DIMS(2, 2, 5))};
    assert_int_equal(dla_net_predict(net, 2, in, 1, &y, NULL), DLA_OK);
    /* ...one of other steps does not. */
    in[1] = dla_ones(DLA_F32, "CBT", DLA_DIMS(1, 2, 4));
    assert_int_equal(dla_net_predict(net, 2, in, 1, &y, NULL), DLA_ERR_SHAPE);
    const char *e = dla_last_error();
    assert_non_null(strstr(e, "'attn'"));
    assert_non_null(strstr(e, "input \"mask\" is 1(C) x 2(B) x 4(T) \"CBT\", input \"in\" "
                              "3(C) x 2(B) x 5(T) \"CBT\""));
    /* Nor one of another format. */
    in[1] = dla_ones(DLA_F32, "CB", DLA_DIMS(1, 2));
    assert_int_equal(dla_net_predict(net, 2, in, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "input \"mask\" is 1(C) x 2(B) \"CB\""));
    /* The functions that feed one input name the port to connect. */
    dla_seqlist *s = dla_seqlist_create(3);
    assert_non_null(s);
    assert_int_equal(dla_seqlist_append(s, (float[]){1, 2, 3, 4, 5, 6}, 2), DLA_OK);
    dla_tensor *scores = NULL;
    assert_int_equal(dla_minibatchpredict(net, &(dla_train_data){.sequences = s}, NULL, &scores),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "the padding mask input \"attn/mask\" is not "
                                             "connected"));
    dla_tensor *t = dla_zeros(DLA_F32, "CBT", DLA_DIMS(4, 1, 2));
    dla_net *trained = NULL;
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = s, .targets = t}, net,
                                  &(dla_train_loss){.name = "mse"},
                                  &(dla_training_options){.max_epochs = 1}, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet"));
    assert_non_null(strstr(dla_last_error(), "\"attn/mask\" is not connected"));
    dla_seqlist_free(s);
    /* The ports are "in" and "mask". */
    assert_int_equal(dla_net_connect(net, "x", "attn"), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "layer 'attn' has inputs \"in\" and \"mask\""));
    assert_int_equal(dla_net_connect(net, "x", "attn/in2"), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_connect(net, "x", "attn/mask"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "x", "attn/mask"), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_net_input_count(net), 1);
    dla_net_free(net);
    /* A mask of another layout at initialization names both shapes. */
    dla_layer *p[] = {dla_sequence_input_layer(3, &(dla_sequence_input_options){.name = "x"}),
                      dla_global_maxpool1d_layer(&(dla_global_pool1d_layer_options){
                          .name = "pool", .has_padding_mask_input = 1})};
    net = dla_net_create(2, p);
    assert_non_null(net);
    ex[1] = dla_zeros(DLA_F32, "CB", DLA_DIMS(1, 1));
    assert_int_equal(dla_net_init(net, 2, ex), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "pool"));
    assert_non_null(strstr(dla_last_error(), "input \"mask\" is 1(C) x 1(B) \"CB\""));
    dla_net_free(net);
    /* HasPaddingMaskInput is 0 or 1. */
    dla_layer *bad = dla_self_attention_layer(
        2, 4, &(dla_self_attention_layer_options){.name = "h", .has_padding_mask_input = 2});
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "selfAttention 'h': HasPaddingMaskInput"));
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(a_prediction_does_not_depend_on_the_padding_of_its_mini_batch),
        TU_TEST(masked_global_pooling_reads_the_data_steps_only),
        TU_TEST(a_normalizing_input_layer_still_masks_the_padded_steps),
        TU_TEST(a_mask_through_a_layer_after_a_normalization_is_refused),
        TU_TEST(masked_attention_keeps_nan_padding_out),
        TU_TEST(masked_indexing_takes_each_observations_own_step),
        TU_TEST(masked_indexing_frees_through_the_library_allocator),
        TU_TEST(masks_that_do_not_fit_are_refused_naming_the_layer_and_the_shapes),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* The last test's launches finished before the exit: on opencl, PoCL
     * compiled one in its worker thread while the process ended, and under
     * ASan that compile overflowed the thread's stack during the leak check
     * (the devices are not closed at exit). */
    dla_device_sync(dla_device_current());
    return failed;
}

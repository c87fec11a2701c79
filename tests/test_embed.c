/*
 * test_embed.c - dla_embed (MATLAB's embed) and the wordEmbeddingLayer:
 * columns picked as MATLAB picks them (1-based, everything else the last
 * column), labels, gradients against finite differences, a replay that
 * reads new tokens, the refusals, and a layer that trainnet trains on
 * token sequences, saved and loaded.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "tu_assert.h"
#include "gradcheck.h"

#include <dlaccel.h>
#include <dlaccel/accel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/nnops.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 3 x 4 weights: element (r, c) is 10 c + r (1-based), so a column says
 * which it is. */
static dla_tensor *numbered_weights(dla_dtype dt)
{
    double w[12];
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 3; r++)
            w[r + 3 * c] = 10 * (c + 1) + (r + 1);
    return dla_cast(dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(3, 4)), dt);
}

static void embed_picks_columns_as_matlab_does(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *w = numbered_weights(DLA_F32);
    /* "BT" 2 x 3, column-major: (b, t) = 1, 4 | 0, NaN | 2.5, 3 */
    dla_tensor *x = dla_tensor_from_host((double[]){1, 4, 0, NAN, 2.5, 3}, DLA_F64, "BT",
                                         DLA_DIMS(2, 3));
    dla_tensor *y = dla_embed(x, w);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dtype(y), DLA_F32);
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    assert_int_equal(dla_tensor_dim(y, 2), 2);
    assert_int_equal(dla_tensor_dim(y, 3), 3);
    const int col[6] = {1, 4, 4, 4, 4, 3};
    for (int e = 0; e < 6; e++)
        for (int r = 0; r < 3; r++)
            assert_true(dla_tensor_item(y, r + 3 * e) == 10 * col[e] + r + 1);
    /* int32 indices "CB" with a C of 1: "CB" of 3 x N. */
    dla_tensor *xi = dla_tensor_from_host((int32_t[]){2, 5, -1}, DLA_I32, "CB", DLA_DIMS(1, 3));
    y = dla_embed(xi, w);
    assert_string_equal(dla_tensor_format(y), "CB");
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    const int coli[3] = {2, 4, 4};
    for (int e = 0; e < 3; e++)
        assert_true(dla_tensor_item(y, 3 * e) == 10 * coli[e] + 1);
    /* "SB" 2 x 2: the embedding comes after the "S" dim, "SCB" 2 x 3 x 2,
     * y(s, :, b) the column of x(s, b). */
    dla_tensor *xs = dla_tensor_from_host((float[]){1, 2, 3, 4}, DLA_F32, "SB", DLA_DIMS(2, 2));
    y = dla_embed(xs, w);
    assert_string_equal(dla_tensor_format(y), "SCB");
    assert_int_equal(dla_tensor_dim(y, 1), 2);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    assert_int_equal(dla_tensor_dim(y, 3), 2);
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 3; r++)
            for (int b = 0; b < 2; b++)
                assert_true(dla_tensor_item(y, s + 2 * (r + 3 * b)) == 10 * (s + 1 + 2 * b) + r + 1);
    /* "SCB" with a "C" of 1: the same, the "C" taking the embedding. */
    dla_tensor *ys = dla_embed(dla_tensor_from_host((float[]){1, 2, 3, 4}, DLA_F32, "SCB",
                                                    DLA_DIMS(2, 1, 2)), w);
    assert_string_equal(dla_tensor_format(ys), "SCB");
    assert_true(tu_same_bits(ys, y));
    dla_scope_end();
}

static dla_tensor *embed_fn(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    return dla_embed(in[0], in[1]);
}

/* Columns picked twice and the out-of-vocabulary one get the sum of their
 * outputs' gradients. */
static void embed_gradient_matches_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(3);
    dla_tensor *w = dla_randn(DLA_F64, "", DLA_DIMS(3, 4));
    dla_tensor *x = dla_tensor_from_host((double[]){1, 2, 2, 0, 9, 4, 1, 3}, DLA_F64, "CBT",
                                         DLA_DIMS(1, 2, 4));
    gc_check(embed_fn, NULL, 2, (dla_tensor *[]){x, w}, (int[]){0, 1}, 1e-7);
    dla_scope_end();
}

static dla_status embed_model(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_embed(in[0], in[1]);
    return dla_tensor_status(out[0]);
}

/* Recorded once, replayed with other tokens: the replay reads them (no
 * host read froze the first call's). */
static void a_replay_reads_new_tokens(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *w = numbered_weights(DLA_F32);
    dla_accel *af = dla_accelerate(embed_model, NULL);
    assert_non_null(af);
    const float a[4] = {1, 2, 3, 0}, b[4] = {4, 4, 2, 7};
    dla_tensor *y[2];
    for (int k = 0; k < 2; k++) {
        dla_tensor *x = dla_tensor_from_host(k ? b : a, DLA_F32, "CBT", DLA_DIMS(1, 2, 2));
        assert_int_equal(dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, w}, 1, &y[k]), DLA_OK);
        assert_true(tu_same_bits(y[k], dla_embed(x, w)));
    }
    assert_true(dla_accel_hit_rate(af) > 0);
    assert_false(tu_same_bits(y[0], y[1]));
    dla_accel_free(af);
    dla_scope_end();
}

static void embed_refusals_name_the_problem(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *w = numbered_weights(DLA_F32);
    dla_tensor *y = dla_embed(dla_ones(DLA_F32, "", DLA_DIMS(2, 3)), w);
    assert_int_equal(dla_tensor_status(y), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_tensor_error(y), "dla_embed: x (2x3) is unformatted"));
    y = dla_embed(dla_ones(DLA_F32, "CB", DLA_DIMS(2, 3)), w);
    assert_int_equal(dla_tensor_status(y), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(y), "its \"C\" dim must be 1"));
    y = dla_embed(dla_cast(dla_ones(DLA_F32, "CB", DLA_DIMS(1, 3)), DLA_BOOL), w);
    assert_int_equal(dla_tensor_status(y), DLA_ERR_DTYPE);
    y = dla_embed(dla_ones(DLA_F32, "CB", DLA_DIMS(1, 3)), dla_cast(w, DLA_I32));
    assert_int_equal(dla_tensor_status(y), DLA_ERR_DTYPE);
    y = dla_embed(dla_ones(DLA_F32, "CB", DLA_DIMS(1, 3)), dla_ones(DLA_F32, "", DLA_DIMS(3, 4, 2)));
    assert_int_equal(dla_tensor_status(y), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(y), "must be a matrix"));
    y = dla_embed(NULL, w);
    assert_int_equal(dla_tensor_status(y), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
}

#define T_STEPS 6
#define VOCAB 5

/* Token sequences: class 1 when token 3 is among them. */
static dla_seqlist *token_sequences(int n, uint64_t seed, int32_t *labels)
{
    dla_seqlist *s = dla_seqlist_create(1);
    tu_state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < n; i++) {
        float tok[T_STEPS];
        int has = 0;
        for (int t = 0; t < T_STEPS; t++) {
            tok[t] = (float)tu_int(0, VOCAB);
            has |= tok[t] == 3;
        }
        labels[i] = has;
        assert_int_equal(dla_seqlist_append(s, tok, T_STEPS), DLA_OK);
    }
    return s;
}

static void a_word_embedding_layer_trains_saves_and_loads(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(5);
    dla_layer *l[] = {
        dla_sequence_input_layer(1, NULL),
        dla_word_embedding_layer(4, VOCAB, &(dla_word_embedding_layer_options){.name = "emb"}),
        dla_lstm_layer(8, &(dla_lstm_layer_options){.output_mode = "last"}),
        dla_fc_layer(2, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(5, l);
    assert_non_null(net);
    dla_tensor *w = dla_net_get(net, "emb", "Weights");
    assert_int_equal(dla_tensor_dim(w, 1), 4);
    assert_int_equal(dla_tensor_dim(w, 2), VOCAB + 1);
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    assert_non_null(strstr(summary, "Word Embedding Layer"));
    assert_non_null(strstr(summary, "4 dimensions and 5 unique words"));
    int32_t labels[256];
    dla_seqlist *seq = token_sequences(256, 1, labels);
    dla_tensor *t = dla_tensor_from_host(labels, DLA_I32, "", DLA_DIMS(1, 256));
    dla_training_options o = {.solver = "adam", .max_epochs = 30, .mini_batch_size = 32,
                              .initial_learn_rate = 0.02, .verbose = -1, .shuffle = "every-epoch"};
    dla_net *trained = NULL;
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = seq, .targets = t}, net,
                                  &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                     DLA_OK);
    int32_t test_labels[128];
    dla_seqlist *test = token_sequences(128, 2, test_labels);
    dla_tensor *tt = dla_tensor_from_host(test_labels, DLA_I32, "", DLA_DIMS(1, 128));
    double acc = 0;
    assert_int_equal(dla_testnet(trained, &(dla_train_data){.sequences = test, .targets = tt},
                                 "accuracy", NULL, &acc), DLA_OK);
    assert_true(acc > 90);
    /* Saved and loaded, it predicts the same bits. */
    char path[] = "/tmp/dla_embed_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(dla_net_save(trained, path), DLA_OK);
    dla_net *back = NULL;
    assert_int_equal(dla_net_load(path, &back), DLA_OK);
    unlink(path);
    dla_tensor *a = NULL, *b = NULL;
    assert_int_equal(dla_minibatchpredict(trained, &(dla_train_data){.sequences = test}, NULL, &a),
                     DLA_OK);
    assert_int_equal(dla_minibatchpredict(back, &(dla_train_data){.sequences = test}, NULL, &b),
                     DLA_OK);
    assert_true(tu_same_bits(a, b));
    /* Anything but one token an element is refused at initialization. */
    dla_layer *bad[] = {dla_sequence_input_layer(2, NULL), dla_word_embedding_layer(4, VOCAB, NULL)};
    assert_null(dla_net_create(2, bad));
    assert_non_null(strstr(dla_last_error(), "takes one token index an element"));
    dla_net_free(back);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(seq);
    dla_seqlist_free(test);
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(embed_picks_columns_as_matlab_does),
        TU_TEST(embed_gradient_matches_finite_differences),
        TU_TEST(a_replay_reads_new_tokens),
        TU_TEST(embed_refusals_name_the_problem),
        TU_TEST(a_word_embedding_layer_trains_saves_and_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

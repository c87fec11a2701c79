/*
 * tokens.c - a transformer encoder (token_net.h: MATLAB's
 * wordEmbeddingLayer, positionEmbeddingLayer, selfAttentionLayer,
 * layerNormalizationLayer, a feed-forward block, globalMaxPooling1dLayer)
 * classifies token sequences, trained with trainnet on sequences of
 * varying length (a dla_seqlist, MATLAB's cell array of sequences), each
 * mini-batch padded with 0 to its longest (SequenceLength "longest").
 * The attention and the pooling take the tokens as their padding mask
 * (HasPaddingMaskInput), so padded steps change no prediction.
 *
 * The sequences are made here: tokens 1..50 (the vocabulary), 8 to 24 of
 * them. Each holds token 1 ("A") once and token 2 ("B") once at random
 * places, the other steps drawn from tokens 3..50. The class is whether A
 * comes before B ("A first") or after ("B first"). Both classes hold the
 * same tokens in the same numbers, so a bag of words is at chance (50%):
 * only the order tells them apart, which the attention sees through the
 * position embedding. Prints the network, trainnet's progress with the
 * validation accuracy, the test accuracy per class (dla_minibatchpredict's
 * scores) and testnet's accuracy and cross-entropy.
 *
 *     build/examples/tokens [--epochs N] [--count N] [--seed S]
 *
 * --count makes N training sequences (2048 by default) and a quarter as
 * many test sequences. Exits 1 unless the test accuracy is above 95%.
 */
#include "example_cli.h"
#include "token_net.h"
#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 50
#define MIN_LENGTH 8
#define MAX_LENGTH 24
#define CLASSES 2
#define TOKEN_A 1
#define TOKEN_B 2
static const char *const class_names[CLASSES] = {"A first", "B first"};

static int fail(const char *what)
{
    fprintf(stderr, "tokens: %s: %s\n", what, dla_last_error());
    return 1;
}

/* n sequences and their classes 0..1 (int32, 1 x n). */
static dla_status make_set(uint64_t *s, int64_t n, dla_seqlist **x, dla_tensor **t)
{
    int32_t *k = malloc(sizeof *k * (size_t)n);
    *x = dla_seqlist_create(1);
    *t = NULL;
    if (!k || !*x) {
        free(k);
        dla_seqlist_free(*x);
        *x = NULL;
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "tokens: %lld sequences", (long long)n);
    }
    dla_status st = DLA_OK;
    for (int64_t i = 0; i < n && st == DLA_OK; i++) {
        float tok[MAX_LENGTH];
        const int len = MIN_LENGTH + (int)(example_next(s) % (MAX_LENGTH - MIN_LENGTH + 1));
        for (int j = 0; j < len; j++)
            tok[j] = (float)(3 + example_next(s) % (VOCAB - 2));
        const int a = (int)(example_next(s) % (uint64_t)len);
        int b = (int)(example_next(s) % (uint64_t)(len - 1));
        b += b >= a; /* another place than a's */
        tok[a] = TOKEN_A;
        tok[b] = TOKEN_B;
        k[i] = a < b ? 0 : 1;
        st = dla_seqlist_append(*x, tok, len);
    }
    if (st == DLA_OK) {
        *t = dla_tensor_from_host(k, DLA_I32, "", DLA_DIMS(1, n));
        st = dla_tensor_status(*t);
    }
    free(k);
    return st;
}

static int run(int epochs, int64_t count, uint64_t seed);

int main(int argc, char **argv)
{
    return example_main(argc, argv, "tokens", 8, 2048, run);
}

static int run(int epochs, int64_t count, uint64_t seed)
{
    uint64_t stream = seed;
    dla_seqlist *xtrain = NULL, *xtest = NULL;
    dla_tensor *ttrain, *ttest;
    if (make_set(&stream, count, &xtrain, &ttrain) != DLA_OK ||
        make_set(&stream, count / 4, &xtest, &ttest) != DLA_OK) {
        dla_seqlist_free(xtrain);
        dla_seqlist_free(xtest);
        return fail("data");
    }
    printf("device: %s; %lld training and %lld test sequences of %d to %d tokens "
           "(vocabulary %d, padding 0)\n",
           dla_device_name(dla_device_current()), (long long)count, (long long)(count / 4),
           MIN_LENGTH, MAX_LENGTH, VOCAB);

    dla_rng_seed(seed);
    dla_net *net = token_net_make(VOCAB, MAX_LENGTH, 32, 4, CLASSES);
    if (!net) {
        dla_seqlist_free(xtrain);
        dla_seqlist_free(xtest);
        return fail("network");
    }
    char summary[8192];
    dla_net_summary(net, summary, sizeof summary);
    printf("%s\n", summary);

    dla_train_data validation = {.sequences = xtest, .targets = ttest};
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 32,
                              .initial_learn_rate = 0.003, .shuffle = "every-epoch",
                              /* A tenth of the rate for the last two epochs: at a
                               * constant rate the accuracy moved by a few points
                               * from one validation to the next. */
                              .learn_rate_schedule = {.method = "piecewise", .drop_period = 6},
                              .metrics = "accuracy", .validation_data = &validation,
                              .validation_frequency = 64, .verbose_frequency = 64};
    double accuracy = 0;
    dla_train_data train = {.sequences = xtrain, .targets = ttrain};
    int rc = example_train_and_test("tokens", net, &train, &validation, &o, CLASSES, class_names,
                                    "sequences", &accuracy);
    dla_net_free(net);
    dla_seqlist_free(xtrain);
    dla_seqlist_free(xtest);
    return rc ? rc : accuracy > 95 ? 0 : 1;
}

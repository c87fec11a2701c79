/*
 * forecast.c - time series forecasting with an LSTM, as MATLAB's "Time
 * Series Forecasting Using Deep Learning" does: train a network to predict
 * each next step of a sequence, then forecast the steps after an offset
 * in two ways.
 *
 *     XTrain = data(:, 1:end-1); TTrain = data(:, 2:end);    % per sequence
 *     layers = [sequenceInputLayer(3) lstmLayer(128) fullyConnectedLayer(3)];
 *     net = trainnet(XTrain, TTrain, layers, "mse", options);
 *     % open loop: each step predicted from the true values before it
 *     % closed loop: from the network's own predictions, the state carried
 *     [Z, state] = predict(net, X(:, 1:offset)); net.State = state;
 *     Xt = Z(:, end);
 *     for t = 1:numPredictionTimeSteps
 *         [Xt, state] = predict(net, Xt); net.State = state;
 *         Y(:, t) = Xt;
 *     end
 *
 * The data are dla_waveform_generate's waves (sawtooth, sine, square,
 * triangle; 3 channels, 100 steps each here, with noise): 400 training
 * sequences (seed 0) and 40 held out (seed 1). Each held-out sequence is
 * given its first 75 steps and the other 25 are forecast; the error is
 * the RMSE over those 25 against the true values, beside the naive
 * forecast that repeats the last observed value.
 *
 *     forecast [--small] [--epochs N] [--hidden N]
 *
 * --small (or DLA_EXAMPLE_SMALL=1): 64 hidden units and fewer epochs, for
 * `make check`.
 */
#include "example_args.h"
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHANNELS = 3, STEPS = 100, OFFSET = 75, AHEAD = STEPS - OFFSET };

static dla_status fail(const char *what)
{
    fprintf(stderr, "forecast: %s: %s\n", what, dla_last_error());
    return dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_STATE;
}

/* Splits each sequence into its first STEPS-1 steps (XTrain) and its last
 * STEPS-1 (TTrain, C x N x T). */
static dla_status shifted_pairs(const dla_seqlist *seqs, dla_seqlist **x, dla_tensor **t)
{
    int64_t n = dla_seqlist_count(seqs);
    float *targets = malloc(sizeof *targets * (size_t)(CHANNELS * n * (STEPS - 1)));
    *x = dla_seqlist_create(CHANNELS);
    if (!targets || !*x)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; i++) {
        const float *s = dla_seqlist_data(seqs, i);
        if (dla_seqlist_append(*x, s, STEPS - 1) != DLA_OK)
            return dla_last_status();
        s = dla_seqlist_data(seqs, i); /* the append may have moved it */
        for (int64_t k = 0; k < STEPS - 1; k++)
            for (int c = 0; c < CHANNELS; c++)
                targets[c + CHANNELS * (i + n * k)] = s[c + CHANNELS * (k + 1)];
    }
    *t = dla_tensor_from_host(targets, DLA_F32, "CBT", DLA_DIMS(CHANNELS, n, STEPS - 1));
    free(targets);
    return dla_tensor_status(*t);
}

/* The held-out sequences' first OFFSET steps as one C x N x OFFSET batch. */
static dla_tensor *observed(const dla_seqlist *seqs, int64_t n)
{
    float *v = malloc(sizeof *v * (size_t)(CHANNELS * n * OFFSET));
    if (!v)
        return dla_error_tensor(DLA_ERR_OUT_OF_MEMORY, "forecast: out of memory");
    for (int64_t i = 0; i < n; i++) {
        const float *s = dla_seqlist_data(seqs, i);
        for (int64_t k = 0; k < OFFSET; k++)
            for (int c = 0; c < CHANNELS; c++)
                v[c + CHANNELS * (i + n * k)] = s[c + CHANNELS * k];
    }
    dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CBT", DLA_DIMS(CHANNELS, n, OFFSET));
    free(v);
    return x;
}

/* RMSE of forecast[c + C (i + n k)] (C x n x AHEAD) against the true steps
 * OFFSET.. of each sequence. */
static double rmse(const dla_seqlist *seqs, int64_t n, const float *forecast)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *s = dla_seqlist_data(seqs, i);
        for (int64_t k = 0; k < AHEAD; k++)
            for (int c = 0; c < CHANNELS; c++) {
                double d = forecast[c + CHANNELS * (i + n * k)] - s[c + CHANNELS * (OFFSET + k)];
                sum += d * d;
            }
    }
    return sqrt(sum / (double)(n * AHEAD * CHANNELS));
}

/* Step k's C x n values of a "CBT" tensor y into out (C x n x AHEAD) at
 * step `at`. */
static dla_status take_step(dla_tensor *y, int64_t k, int64_t at, int64_t n, float *out)
{
    dla_tensor *step = dla_slice(y, 3, k, 1, k + 1);
    return dla_tensor_to_host(step, out + CHANNELS * n * at, sizeof *out * (size_t)(CHANNELS * n));
}

/* Closed loop: the first OFFSET steps set the state, then each forecast
 * step is the network's answer to its previous one. */
static dla_status closed_loop(dla_net *net, dla_tensor *x, int64_t n, float *out)
{
    int ns = dla_net_state_count(net);
    dla_tensor *state[8], *y;
    /* The loop's tensors belong to this scope; each step's to its own. */
    dla_scope_begin();
    if (ns > 8 || dla_net_predict_state(net, 1, &x, 1, &y, state, NULL) != DLA_OK ||
        dla_net_set_state(net, ns, state) != DLA_OK ||
        take_step(y, OFFSET - 1, 0, n, out) != DLA_OK) {
        dla_scope_end();
        return fail("closed loop: the observed steps");
    }
    for (int64_t t = 1; t < AHEAD; t++) {
        dla_scope_begin();
        dla_tensor *xt = dla_slice(y, 3, dla_tensor_dim(y, 3) - 1, 1, dla_tensor_dim(y, 3));
        dla_status st = dla_net_predict_state(net, 1, &xt, 1, &y, state, NULL);
        if (st == DLA_OK)
            st = dla_net_set_state(net, ns, state);
        if (st == DLA_OK)
            st = take_step(y, 0, t, n, out);
        y = dla_keep(y);
        dla_scope_end();
        if (st != DLA_OK) {
            dla_scope_end();
            return fail("closed loop");
        }
    }
    dla_scope_end();
    return dla_net_reset_state(net);
}

/* Open loop: each forecast step from the true steps before it, the state
 * carried one true step at a time. */
static dla_status open_loop(dla_net *net, const dla_seqlist *seqs, dla_tensor *x, int64_t n,
                            float *out)
{
    int ns = dla_net_state_count(net);
    dla_tensor *state[8], *y;
    dla_scope_begin();
    dla_status st = ns > 8 ? DLA_ERR_STATE : dla_net_predict_state(net, 1, &x, 1, &y, state, NULL);
    if (st == DLA_OK)
        st = dla_net_set_state(net, ns, state);
    if (st == DLA_OK)
        st = take_step(y, OFFSET - 1, 0, n, out);
    dla_scope_end();
    if (st != DLA_OK)
        return fail("open loop: the observed steps");
    float *truth = malloc(sizeof *truth * (size_t)(CHANNELS * n));
    if (!truth)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int64_t t = 1; t < AHEAD; t++) {
        for (int64_t i = 0; i < n; i++)
            memcpy(truth + CHANNELS * i, dla_seqlist_data(seqs, i) + CHANNELS * (OFFSET + t - 1),
                   sizeof *truth * CHANNELS);
        dla_scope_begin();
        dla_tensor *xt = dla_tensor_from_host(truth, DLA_F32, "CBT", DLA_DIMS(CHANNELS, n, 1));
        st = dla_net_predict_state(net, 1, &xt, 1, &y, state, NULL);
        if (st == DLA_OK)
            st = dla_net_set_state(net, ns, state);
        if (st == DLA_OK)
            st = take_step(y, 0, t, n, out);
        dla_scope_end();
        if (st != DLA_OK) {
            free(truth);
            return fail("open loop");
        }
    }
    free(truth);
    return dla_net_reset_state(net);
}

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && !strcmp(env, "1"), epochs = 0, hidden = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("forecast", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--hidden") && i + 1 < argc) {
            if (!example_int32("forecast", "--hidden", argv[++i], 1, 65536, &hidden))
                return 2;
        } else
            return example_usage(argv[0], "[--small] [--epochs N] [--hidden N]", argv[i]);
    }
    if (epochs <= 0)
        epochs = small ? 15 : 60;
    if (hidden <= 0)
        hidden = small ? 64 : 128;

    dla_waveform_options wo = {.min_length = STEPS, .max_length = STEPS};
    dla_seqlist *train, *held, *xtrain = NULL;
    dla_tensor *ttrain = NULL;
    if (dla_waveform_generate(400, 0, &wo, &train, NULL) != DLA_OK ||
        dla_waveform_generate(40, 1, &wo, &held, NULL) != DLA_OK ||
        shifted_pairs(train, &xtrain, &ttrain) != DLA_OK)
        return fail("data"), 1;
    int64_t n = dla_seqlist_count(held);
    printf("%lld training sequences, %lld held out: %d channels, %d steps; forecast steps %d-%d "
           "from the first %d\n", (long long)dla_seqlist_count(train), (long long)n, CHANNELS,
           STEPS, OFFSET + 1, STEPS, OFFSET);

    dla_layer *layers[] = {
        dla_sequence_input_layer(CHANNELS, &(dla_sequence_input_options){.name = "in"}),
        dla_lstm_layer(hidden, &(dla_lstm_layer_options){.name = "lstm"}),
        dla_fc_layer(CHANNELS, &(dla_fc_layer_options){.name = "fc"}),
    };
    dla_rng_seed(0);
    dla_net *net = dla_net_create(3, layers), *trained = NULL;
    dla_training_info *info = NULL;
    dla_train_data data = {.sequences = xtrain, .targets = ttrain};
    dla_train_loss loss = {.name = "mse"};
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 64,
                              .initial_learn_rate = 0.01, .gradient_threshold = 1,
                              .shuffle = "every-epoch", .verbose = 1,
                              .verbose_frequency = small ? 30 : 60};
    if (!net || dla_trainnet(&data, net, &loss, &o, &trained, &info) != DLA_OK)
        return fail("trainnet"), 1;
    int64_t it = info->iterations;
    printf("\nloss: %.4f at iteration 1, %.4f at iteration %lld (%.1f ms an iteration)\n",
           info->training_loss[0], info->training_loss[it - 1], (long long)it,
           1e3 * info->time_elapsed[it - 1] / (double)it);

    float *naive = malloc(sizeof *naive * (size_t)(CHANNELS * n * AHEAD));
    float *open = malloc(sizeof *open * (size_t)(CHANNELS * n * AHEAD));
    float *closed = malloc(sizeof *closed * (size_t)(CHANNELS * n * AHEAD));
    if (!naive || !open || !closed)
        return 1;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < AHEAD; k++)
            memcpy(naive + CHANNELS * (i + n * k),
                   dla_seqlist_data(held, i) + CHANNELS * (OFFSET - 1), sizeof *naive * CHANNELS);
    dla_tensor *x = observed(held, n);
    if (dla_tensor_status(x) != DLA_OK || open_loop(trained, held, x, n, open) != DLA_OK ||
        closed_loop(trained, x, n, closed) != DLA_OK)
        return 1;
    printf("RMSE of steps %d-%d: open loop %.4f, closed loop %.4f, repeating the last "
           "observed value %.4f\n", OFFSET + 1, STEPS, rmse(held, n, open), rmse(held, n, closed),
           rmse(held, n, naive));
    printf("closed loop, first held-out sequence, channel 1:\n  step  forecast  true\n");
    for (int64_t k = 0; k < AHEAD; k += 4)
        printf("  %4lld  %8.4f  %6.4f\n", (long long)(OFFSET + k + 1), closed[CHANNELS * n * k],
               dla_seqlist_data(held, 0)[CHANNELS * (OFFSET + k)]);

    free(naive);
    free(open);
    free(closed);
    dla_tensor_release(x);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(ttrain);
    dla_seqlist_free(xtrain);
    dla_seqlist_free(train);
    dla_seqlist_free(held);
    return 0;
}

/*
 * waveform.c - sequence classification of imbalanced waveforms with
 * trainnet and an accelerated weighted cross-entropy, as the dlaccelerate
 * page's "Train Sequence Classification Network Using Data with Imbalanced
 * Classes" does:
 *
 *     lossFun = @(Y,T) crossentropy(Y,T,classWeights, ...
 *         NormalizationFactor="all-elements", WeightsFormat="C")*numClasses;
 *     accLossFun = dlaccelerate(lossFun);
 *     accLossFun.CheckMode = "tolerance";
 *     trainnet(XTrain,TTrain,layers,accLossFun,options);      % a few epochs, no warning
 *     accLossFun.CheckMode = "none";
 *     net = trainnet(XTrain,TTrain,layers,accLossFun,options);
 *     accLossFun.HitRate                                      % > 90
 *
 * The data are ../shared/peers/waveform_seq.py's, value for value: 1,000
 * training sequences (seed 0) and 200 held-out ones (seed 1), 3 channels,
 * 100..150 steps, classes drawn 35/30/20/15 %; the class weights are
 * inverse to the class frequencies (N / (4 count)). The network is the
 * page's: sequenceInput (zscore, MinLength 10), convolution1d(10, 10),
 * batchNormalization, relu, dropout, globalMaxPooling1d, fullyConnected(4),
 * softmax; Adam, learning rate 0.01, mini-batches of 128 truncated to their
 * shortest sequence (SequenceLength "shortest"), shuffled every epoch in
 * the peer's order (numpy's default_rng(0)), 10 epochs.
 *
 *     waveform [--small] [--epochs N] [--chart PATH] [--seed N]
 *              [--attention | --transformer | --bilstm]
 *
 * --small (or DLA_EXAMPLE_SMALL=1): fewer epochs, for `make check`.
 * --attention: a selfAttentionLayer (2 heads, 16 key channels, causal)
 * after the relu, so that each step also sees the steps before it.
 * --transformer: a transformer encoder instead of the convolution: the
 * steps embedded in 32 channels plus a sinusoidal position encoding,
 * self-attention (4 heads) and a feed-forward block, each added to its
 * input and layer-normalized, then the page's pooling and classifier;
 * 30 epochs unless --epochs says otherwise (10 left it near 55%).
 * --bilstm: the network of MATLAB's "Sequence Classification Using Deep
 * Learning" instead: a bilstmLayer (32 hidden units, OutputMode "last"),
 * then the classifier.
 * --seed: the random stream's seed (default 0), which draws the initial
 * weights and the dropout masks; 70 iterations leave the accuracy
 * depending on it by several points either way, on both sides.
 * Accuracy is measured as the peer measures it: each sequence at its full
 * length, in inference mode.
 */
#include "example_args.h"
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASSES DLA_WAVEFORM_CLASSES

/* lossFun(Y, T): ctx is the class weights (a tensor the trace bakes in as a
 * constant: it never changes). */
static dla_status weighted_ce(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_crossentropy_options o = {.weights = ctx, .weights_format = "C",
                                  .normalization_factor = "all-elements"};
    out[0] = dla_affine(dla_crossentropy(in[0], in[1], &o), CLASSES, 0.0);
    return dla_tensor_status(out[0]);
}

enum { PLAIN, ATTENTION, TRANSFORMER, BILSTM };

/* The page's network, with self-attention after the relu, or a
 * transformer encoder (a graph: its residual connections are made after
 * the layers). NULL with the error set. */
static dla_net *make_net(int variant)
{
    dla_layer *l[16];
    int n = 0;
    l[n++] = dla_sequence_input_layer(3, &(dla_sequence_input_options){
                                             .normalization = "zscore", .min_length = 10,
                                             .name = "in"});
    if (variant == BILSTM) {
        l[n++] = dla_bilstm_layer(32, &(dla_lstm_layer_options){.output_mode = "last"});
        l[n++] = dla_fc_layer(CLASSES, NULL);
        l[n++] = dla_softmax_layer(NULL);
        return dla_net_create(n, l);
    }
    if (variant == TRANSFORMER) {
        l[n++] = dla_fc_layer(32, &(dla_fc_layer_options){.name = "embed"});
        l[n++] = dla_sinusoidal_position_encoding_layer(32, NULL);
        l[n++] = dla_addition_layer(2, &(dla_layer_options){.name = "position"});
        l[n++] = dla_self_attention_layer(4, 32, NULL);
        l[n++] = dla_addition_layer(2, &(dla_layer_options){.name = "residual1"});
        l[n++] = dla_layernorm_layer(&(dla_norm_layer_options){.name = "norm1"});
        l[n++] = dla_fc_layer(64, NULL);
        l[n++] = dla_relu_layer(NULL);
        l[n++] = dla_fc_layer(32, NULL);
        l[n++] = dla_addition_layer(2, &(dla_layer_options){.name = "residual2"});
        l[n++] = dla_layernorm_layer(NULL);
    } else {
        l[n++] = dla_conv1d_layer(10, 10, NULL);
        l[n++] = dla_batchnorm_layer(NULL);
        l[n++] = dla_relu_layer(NULL);
        if (variant == ATTENTION)
            l[n++] = dla_self_attention_layer(2, 16, &(dla_self_attention_layer_options){
                                                         .attention_mask = "causal"});
    }
    l[n++] = dla_dropout_layer(DLA_DROPOUT_PROB, NULL);
    l[n++] = dla_global_maxpool1d_layer(NULL);
    l[n++] = dla_fc_layer(CLASSES, NULL);
    l[n++] = dla_softmax_layer(NULL);
    dla_net *net = dla_net_create(n, l);
    if (!net || variant != TRANSFORMER)
        return net;
    /* Each addition's second input: the embedding (beside its position
     * encoding), the attention's input, the feed-forward block's. */
    if (dla_net_connect(net, "embed", "position/in2") != DLA_OK ||
        dla_net_connect(net, "position", "residual1/in2") != DLA_OK ||
        dla_net_connect(net, "norm1", "residual2/in2") != DLA_OK ||
        dla_net_init(net, 0, NULL) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

/* Percent of sequences classified right, each at its full length:
 * sequences of one length go through predict together, so no step is
 * padding. */
static double accuracy(dla_net *net, const dla_seqlist *seqs, dla_tensor *labels)
{
    int64_t n = dla_seqlist_count(seqs), right = 0, done = 0;
    int32_t *truth = malloc(sizeof *truth * (size_t)n);
    int64_t *idx = malloc(sizeof *idx * (size_t)n);
    if (!truth || !idx || dla_tensor_to_host(labels, truth, sizeof *truth * (size_t)n) != DLA_OK) {
        free(truth);
        free(idx);
        return NAN;
    }
    for (int64_t len = 1; done < n; len++) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (dla_seqlist_length(seqs, i) == len)
                idx[k++] = i;
        if (!k)
            continue;
        dla_scope_begin();
        dla_tensor *x, *y;
        int32_t pred[1024];
        for (int64_t s = 0; s < k; s += 1024) {
            int64_t m = k - s < 1024 ? k - s : 1024;
            if (dla_padsequences(seqs, m, idx + s, NULL, &x, NULL) == DLA_OK &&
                dla_net_predict(net, 1, &x, 1, &y, NULL) == DLA_OK &&
                dla_tensor_to_host(dla_onehotdecode(y, NULL), pred, sizeof *pred * (size_t)m) == DLA_OK)
                for (int64_t j = 0; j < m; j++)
                    right += pred[j] == truth[idx[s + j]];
        }
        dla_scope_end();
        done += k;
    }
    free(truth);
    free(idx);
    return 100.0 * (double)right / (double)n;
}

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && *env && strcmp(env, "0"), epochs = 0, variant = PLAIN;
    const char *chart = "waveform-training.svg";
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("waveform", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--chart") && i + 1 < argc)
            chart = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!example_seed("waveform", argv[++i], &seed))
                return 2;
        } else if (!strcmp(argv[i], "--attention"))
            variant = ATTENTION;
        else if (!strcmp(argv[i], "--transformer"))
            variant = TRANSFORMER;
        else if (!strcmp(argv[i], "--bilstm"))
            variant = BILSTM;
        else
            return example_usage(argv[0], "[--small] [--epochs N] [--chart PATH] [--seed N]"
                                 " [--attention | --transformer | --bilstm]", argv[i]);
    }
    if (epochs <= 0)
        epochs = small ? 3 : variant == TRANSFORMER ? 30 : 10; /* it learns slower */
    int check_epochs = small ? 1 : 3;

    /* The peer's data and its class weights. */
    const double proportions[CLASSES] = {0.35, 0.30, 0.20, 0.15};
    dla_waveform_options wo = {.class_proportions = proportions};
    dla_seqlist *xtrain, *xheld;
    dla_tensor *ttrain, *theld;
    if (dla_waveform_generate(1000, 0, &wo, &xtrain, &ttrain) != DLA_OK ||
        dla_waveform_generate(200, 1, &wo, &xheld, &theld) != DLA_OK) {
        fprintf(stderr, "waveform: %s\n", dla_last_error());
        return 1;
    }
    int64_t n = dla_seqlist_count(xtrain), count[CLASSES] = {0};
    int32_t *lab = malloc(sizeof *lab * (size_t)n);
    if (!lab || dla_tensor_to_host(ttrain, lab, sizeof *lab * (size_t)n) != DLA_OK)
        return 1;
    for (int64_t i = 0; i < n; i++)
        count[lab[i]]++;
    free(lab);
    float w[CLASSES];
    printf("%lld training sequences, %lld held out; classes:", (long long)n,
           (long long)dla_seqlist_count(xheld));
    for (int c = 0; c < CLASSES; c++) {
        w[c] = (float)((double)n / (CLASSES * (double)count[c]));
        printf(" %s %lld (weight %.3f)%s", dla_waveform_class_name(c), (long long)count[c], w[c],
               c + 1 < CLASSES ? "," : "\n");
    }
    dla_tensor *class_weights = dla_tensor_from_host(w, DLA_F32, "", DLA_DIMS(CLASSES, 1));

    /* accLossFun = dlaccelerate(lossFun); accLossFun.CheckMode = "tolerance" */
    dla_accel *acc = dla_accelerate(weighted_ce, &(dla_accel_options){.name = "lossFun"});
    dla_accel_set_check_mode(acc, "tolerance");
    dla_train_data data = {.sequences = xtrain, .targets = ttrain};
    dla_train_loss loss = {.accel = acc, .ctx = class_weights};
    dla_training_options o = {.solver = "adam", .max_epochs = check_epochs,
                              .initial_learn_rate = 0.01, .sequence_length = "shortest",
                              .shuffle = "every-epoch", .verbose = -1, .metrics = "accuracy"};
    if (variant == ATTENTION)
        printf("network: the page's, with a selfAttentionLayer (2 heads, 16 key channels, "
               "causal) after the relu\n");
    if (variant == BILSTM)
        printf("network: a bilstmLayer (32 hidden units, OutputMode 'last'), then the "
               "classifier\n");
    if (variant == TRANSFORMER)
        printf("network: a transformer encoder (32 channels, sinusoidal positions, 4 heads, "
               "feed-forward 64), then the page's pooling and classifier\n");
    dla_rng_seed(seed);
    dla_net *net = make_net(variant);
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    if (!net || dla_trainnet(&data, net, &loss, &o, &trained, &info) != DLA_OK) {
        fprintf(stderr, "waveform: %s\n", dla_last_error());
        return 1;
    }
    const char *check = dla_accel_last_check(acc);
    printf("CheckMode 'tolerance', %d epoch%s: %s\n", check_epochs, check_epochs > 1 ? "s" : "",
           *check ? check : "no warning: the accelerated loss matches the function");
    dla_net_free(trained);
    dla_training_info_free(info);
    dla_net_free(net);

    /* accLossFun.CheckMode = "none"; options.MaxEpochs = ...;
     * options.Plots = "training-progress"; net = trainnet(...) */
    dla_accel_set_check_mode(acc, "none");
    o.max_epochs = epochs;
    o.verbose = 1;
    o.verbose_frequency = 10;
    o.plots = "training-progress";
    o.plots_path = chart;
    dla_rng_seed(seed);
    net = make_net(variant);
    if (!net || dla_trainnet(&data, net, &loss, &o, &trained, &info) != DLA_OK) {
        fprintf(stderr, "waveform: %s\n", dla_last_error());
        return 1;
    }

    /* Sequences of many lengths would each record a trace of the network's
     * forward: evaluate without acceleration. */
    dla_net_set_accelerate(trained, 0);
    double train_acc = accuracy(trained, xtrain, ttrain), held_acc = accuracy(trained, xheld, theld);
    int64_t it = info->iterations;
    double first = info->training_loss[0], last = info->training_loss[it - 1];
    printf("\nloss: %.4f at iteration 1, %.4f at iteration %lld\n", first, last, (long long)it);
    printf("accuracy (each sequence at full length): training %.1f%%, held-out %.1f%%\n", train_acc,
           held_acc);
    printf("time: %.2f ms per iteration (%lld iterations in %.2f s)\n",
           1e3 * info->time_elapsed[it - 1] / (double)it, (long long)it, info->time_elapsed[it - 1]);
    printf("accelerated loss: HitRate %.1f%%, Occupancy %g\n", dla_accel_hit_rate(acc),
           dla_accel_occupancy_percent(acc));
    /* The peer trains the page's network only: its figures are no
     * reference for another one. */
    printf("peer (waveform_seq.py, PyTorch eager, 10 epochs%s): training 86.8%%, held-out 81.0%%, "
           "3.90 ms per step\n", variant == PLAIN ? "" : "; the page's network, not this one");
    printf("chart: %s\n", chart);

    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_accel_free(acc);
    dla_tensor_release(class_weights);
    dla_tensor_release(ttrain);
    dla_tensor_release(theld);
    dla_seqlist_free(xtrain);
    dla_seqlist_free(xheld);
    return 0;
}

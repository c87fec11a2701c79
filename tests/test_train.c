/*
 * test_train.c - trainnet and trainingOptions: convergence on a small
 * synthetic problem, the defaults a zeroed options struct stands for and
 * the checks on every value, the iteration table's layout, validation
 * frequency and patience, checkpoints written and loaded back, the SVG
 * chart (well-formed XML), ExecutionEnvironment's mapping, partial
 * mini-batches, an accelerated custom loss, sequences (shortest, chunks of
 * a SequenceLength number through an LSTM; sequence-to-sequence targets of
 * sequences of different lengths, as target_sequences or as one padded
 * array), the OutputFcn and the progress display on its own.
 *
 * When a device other than a cpu is loaded (tests/train_on_testmem.sh adds
 * the testmem plugin), ExecutionEnvironment "gpu" must pick it and train
 * there; otherwise it must fail, naming what was found.
 */
#define _GNU_SOURCE /* open_memstream, mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tu_assert.h"

#include "testutil.h"
#include "sink.h"

#include <dirent.h>
#include <errno.h>
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------- fixtures */

#define CLASSES 4

/* n points of 4 blobs at (+-2, +-2), sigma 0.6: predictors 2 x n "CB",
 * class numbers 1 x n int32. Owned by the caller. */
static void blobs(int n, uint64_t seed, dla_tensor **x, dla_tensor **t)
{
    float *xs = malloc(sizeof *xs * 2 * (size_t)n);
    int32_t *ts = malloc(sizeof *ts * (size_t)n);
    assert_non_null(xs);
    assert_non_null(ts);
    tu_state = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int j = 0; j < n; j++) {
        int c = (int)tu_int(0, CLASSES - 1);
        double r = sqrt(-2.0 * log(1.0 - tu_unit())), a = 6.283185307179586 * tu_unit();
        xs[2 * j] = (float)((c & 1 ? 2.0 : -2.0) + 0.6 * r * cos(a));
        xs[2 * j + 1] = (float)((c & 2 ? 2.0 : -2.0) + 0.6 * r * sin(a));
        ts[j] = c;
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, n));
    *t = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(1, n));
    free(xs);
    free(ts);
    assert_int_equal(dla_tensor_status(*x), DLA_OK);
    assert_int_equal(dla_tensor_status(*t), DLA_OK);
}

/* fc(8) - relu - fc(4) - softmax, without an input layer: trainnet
 * initializes it from the data. */
static dla_net *mlp(void)
{
    dla_rng_seed(7);
    dla_layer *l[] = {dla_fc_layer(8, NULL), dla_relu_layer(NULL), dla_fc_layer(CLASSES, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    return net;
}

/* A stream into memory; text() closes it and returns what was written. */
static dla_training_options quiet(void)
{
    return (dla_training_options){.verbose = -1, .l2_regularization = -1};
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* A minimal XML well-formedness check: one root, tags nest and match,
 * attributes quoted, '&' only in entities, '<' only opening markup. */
static void assert_well_formed_xml(const char *s)
{
    const char *stack[256];
    size_t lens[256];
    int depth = 0, roots = 0;
    const char *p = s;
    if (!strncmp(p, "<?xml", 5)) {
        p = strstr(p, "?>");
        assert_non_null(p);
        p += 2;
    }
    while (*p) {
        if (*p == '&') {
            const char *semi = strchr(p, ';');
            assert_non_null(semi);
            size_t n = (size_t)(semi - p);
            int ok = (n == 4 && !strncmp(p, "&amp", 4)) || (n == 3 && !strncmp(p, "&lt", 3)) ||
                     (n == 3 && !strncmp(p, "&gt", 3)) || (n == 5 && !strncmp(p, "&quot", 5)) ||
                     (n == 5 && !strncmp(p, "&apos", 5));
            if (!ok)
                fail_msg("bad entity at %.20s", p);
            p = semi + 1;
            continue;
        }
        if (*p != '<') {
            p++;
            continue;
        }
        if (p[1] == '/') {
            const char *name = p + 2, *end = strchr(name, '>');
            assert_non_null(end);
            assert_true(depth > 0);
            depth--;
            if ((size_t)(end - name) != lens[depth] || strncmp(name, stack[depth], lens[depth]))
                fail_msg("</%.*s> closes <%.*s>", (int)(end - name), name, (int)lens[depth],
                         stack[depth]);
            p = end + 1;
            continue;
        }
        const char *name = p + 1;
        size_t nl = strcspn(name, " \t\n/>");
        assert_true(nl > 0);
        const char *q = name + nl;
        /* Attributes: name="value" pairs. */
        for (;;) {
            while (*q == ' ' || *q == '\n' || *q == '\t')
                q++;
            if (*q == '/' || *q == '>')
                break;
            size_t an = strcspn(q, "= \t\n/>");
            assert_true(an > 0);
            q += an;
            if (*q != '=' || q[1] != '"')
                fail_msg("attribute without a quoted value near %.30s", q - an);
            const char *close = strchr(q + 2, '"');
            assert_non_null(close);
            for (const char *c = q + 2; c < close; c++)
                assert_true(*c != '<');
            q = close + 1;
        }
        if (*q == '/') {
            assert_true(q[1] == '>');
            if (depth == 0)
                roots++;
            p = q + 2;
            continue;
        }
        assert_true(depth < 256);
        if (depth == 0)
            roots++;
        stack[depth] = name;
        lens[depth] = nl;
        depth++;
        p = q + 1;
    }
    assert_int_equal(depth, 0);
    assert_int_equal(roots, 1);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    assert_non_null(s);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

/* ---------------------------------------------------------------- tests */

static void trainnet_learns_four_blobs(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(512, 1, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_training_options o = quiet();
    o.max_epochs = 15;
    o.mini_batch_size = 64;
    o.initial_learn_rate = 0.05;
    o.metrics = "accuracy";
    o.shuffle = "every-epoch";
    dla_train_data d = {.predictors = x, .targets = t};
    /* Inside a scope of the caller's: what trainnet returns is not the
     * scope's, and nothing it made internally is left to it. */
    dla_scope_begin();
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    dla_scope_end();
    assert_false(dla_net_initialized(net)); /* the given network is not changed */
    assert_true(dla_net_initialized(trained));
    assert_int_equal(info->iterations, 15 * 8);
    assert_string_equal(info->stop_reason, "Max epochs completed");
    double first = info->training_loss[0], last = 0, acc = 0;
    for (int i = 0; i < 8; i++) {
        last += info->training_loss[info->iterations - 1 - i] / 8;
        acc += info->training_accuracy[info->iterations - 1 - i] / 8;
    }
    assert_true(first > 1.0);
    assert_true(last < 0.25 * first);
    assert_true(acc > 95.0);
    assert_int_equal(info->epoch[0], 1);
    assert_int_equal(info->epoch[info->iterations - 1], 15);
    assert_true(info->time_elapsed[info->iterations - 1] >= info->time_elapsed[0]);
    assert_true(isnan(info->final_validation_loss));
    assert_string_equal(info->device, dla_device_name(dla_device_current()));

    /* The trained network predicts held-out points. */
    dla_tensor *hx, *ht, *y;
    blobs(200, 2, &hx, &ht);
    assert_int_equal(dla_net_predict(trained, 1, &hx, 1, &y, NULL), DLA_OK);
    dla_scope_begin(); /* owns the intermediates of the chained ops */
    dla_tensor *hit = dla_eq(dla_onehotdecode(y, NULL), dla_reshape(ht, "CB", DLA_DIMS(1, 200)));
    dla_tensor *m = dla_mean(dla_cast(hit, DLA_F64), 0, NULL);
    assert_true(dla_tensor_item(m, 0) > 0.95);
    dla_scope_end();
    dla_tensor_release(y);
    dla_tensor_release(hx);
    dla_tensor_release(ht);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void zeroed_options_are_matlab_defaults(void **state)
{
    (void)state;
    dla_training_options o;
    assert_int_equal(dla_training_options_resolve(NULL, &o), DLA_OK);
    assert_string_equal(o.solver, "sgdm");
    assert_int_equal(o.max_epochs, 30);
    assert_int_equal(o.mini_batch_size, 128);
    assert_true(o.initial_learn_rate == 0.01);
    assert_true(o.momentum == 0.9);
    assert_true(o.l2_regularization == 1e-4);
    assert_true(isinf(o.gradient_threshold));
    assert_string_equal(o.gradient_threshold_method, "l2norm");
    assert_string_equal(o.shuffle, "once");
    assert_string_equal(o.partial_mini_batch, "discard");
    assert_string_equal(o.sequence_length, "longest");
    assert_string_equal(o.sequence_padding_direction, "right");
    assert_string_equal(o.execution_environment, "auto");
    assert_string_equal(o.plots, "none");
    assert_string_equal(o.plots_path, "training-progress.svg");
    assert_string_equal(o.learn_rate_schedule.method, "none");
    assert_true(o.learn_rate_schedule.drop_factor == 0.1);
    assert_int_equal(o.learn_rate_schedule.drop_period, 10);
    assert_int_equal(o.verbose, 1);
    assert_int_equal(o.verbose_frequency, 50);
    assert_int_equal(o.validation_frequency, 50);
    assert_int_equal(o.validation_patience, 0);
    assert_int_equal(o.checkpoint_frequency, 1);
    assert_string_equal(o.checkpoint_frequency_unit, "epoch");
    assert_int_equal(o.reset_input_normalization, 1);
    assert_true(o.output == stdout);
    assert_null(o.checkpoint_path);

    /* Solver-dependent defaults; negative values ask for zero. */
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){.solver = "adam"}, &o), DLA_OK);
    assert_true(o.initial_learn_rate == 0.001 && o.gradient_decay_factor == 0.9 &&
                o.squared_gradient_decay_factor == 0.999 && o.epsilon == 1e-8);
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){.solver = "rmsprop"}, &o), DLA_OK);
    assert_true(o.initial_learn_rate == 0.001 && o.squared_gradient_decay_factor == 0.9);
    /* What does not apply to the solver stays zero. */
    assert_true(o.momentum == 0 && o.gradient_decay_factor == 0 && o.epsilon == 1e-8);
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){
                         .momentum = -1, .l2_regularization = -1, .verbose = -1,
                         .reset_input_normalization = -1}, &o), DLA_OK);
    assert_true(o.momentum == 0 && o.l2_regularization == 0);
    assert_int_equal(o.verbose, 0);
    assert_int_equal(o.reset_input_normalization, 0);

    /* MATLAB's display of the options. */
    char buf[4096];
    dla_training_options_describe(NULL, buf, sizeof buf);
    assert_non_null(strstr(buf, "TrainingOptionsSGDM with properties:"));
    assert_non_null(strstr(buf, "        Momentum: 0.9000\n"));
    assert_non_null(strstr(buf, "InitialLearnRate: 0.0100\n"));
    assert_non_null(strstr(buf, "L2Regularization: 1.0000e-04\n"));
    assert_non_null(strstr(buf, "GradientThreshold: Inf\n"));
    assert_non_null(strstr(buf, "MaxEpochs: 30\n"));
    assert_non_null(strstr(buf, "Shuffle: 'once'\n"));
    assert_non_null(strstr(buf, "ValidationPatience: Inf\n"));
    dla_training_options_describe(&(dla_training_options){.solver = "adam", .sequence_length = "64"},
                                  buf, sizeof buf);
    assert_non_null(strstr(buf, "TrainingOptionsADAM"));
    assert_non_null(strstr(buf, "SquaredGradientDecayFactor: 0.9990\n"));
    assert_non_null(strstr(buf, "SequenceLength: 64\n"));
    assert_null(strstr(buf, "Momentum"));
}

/* BatchNormalizationStatistics: "population" (the default, MATLAB's)
 * gives each batch normalization layer the statistics of its input over
 * the whole training data after training; "moving" keeps the running
 * estimates. The first layer's input (an fc of the features) does not
 * depend on the statistics, so the test computes them itself from the
 * trained network. */
static void batch_normalization_statistics_come_from_the_whole_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t, *vx, *vt;
    /* 100 observations: a partial last mini-batch, which PartialMiniBatch
     * "discard" leaves out of training but not of the statistics. */
    blobs(100, 21, &x, &t);
    blobs(40, 22, &vx, &vt);
    /* Features far from zero mean and unit variance, so that the running
     * estimates (from 0 and 1, three iterations at decay 0.1) stay far
     * from them. */
    x = dla_affine(x, 3.0, 5.0);
    vx = dla_affine(vx, 3.0, 5.0);
    dla_net *trained[2];
    dla_training_info *info[2];
    char *text[2];
    const char *mode[2] = {NULL, "moving"};
    for (int k = 0; k < 2; k++) {
        dla_rng_seed(8);
        dla_layer *l[] = {dla_fc_layer(5, NULL), dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
                          dla_batchnorm_layer(NULL), dla_fc_layer(CLASSES, NULL),
                          dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(6, l);
        assert_non_null(net);
        tu_sink s;
        assert_non_null(tu_sink_open(&s));
        dla_train_data d = {.predictors = x, .targets = t};
        dla_train_data v = {.predictors = vx, .targets = vt};
        dla_training_options o = {.max_epochs = 1, .mini_batch_size = 32, .solver = "adam",
                                  .initial_learn_rate = 0.05, .metrics = "accuracy",
                                  .validation_data = &v, .output = s.f,
                                  .batch_normalization_statistics = mode[k]};
        if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained[k],
                         &info[k]) != DLA_OK)
            fail_msg("trainnet: %s", dla_last_error());
        text[k] = tu_sink_text(&s);
        dla_net_free(net);
    }
    /* The first layer's input over all 100 observations. */
    const char *fc[] = {"fc_1"};
    dla_tensor *z;
    assert_int_equal(dla_net_predict(trained[0], 1, &x, 1, &z,
                                     &(dla_net_forward_options){.outputs = fc}), DLA_OK);
    const int64_t c = dla_tensor_dim(z, 1), n = dla_tensor_dim(z, 2);
    assert_int_equal(c, 5);
    dla_tensor *mean = dla_mean(z, DLA_DIMS(2));
    dla_tensor *var = dla_mean(dla_square(dla_sub(z, mean)), DLA_DIMS(2));
    dla_tensor *m = dla_net_get(trained[0], "batchnorm_1", "TrainedMean");
    dla_tensor *sv = dla_net_get(trained[0], "batchnorm_1", "TrainedVariance");
    for (int64_t j = 0; j < c; j++) {
        const double want_m = dla_tensor_item(mean, j), want_v = dla_tensor_item(var, j);
        /* The whole data's mean and unbiased variance (the moving
         * estimate's kind), not the batches' pooled as if each were the
         * whole (3% more at 32 a batch). */
        const double got_m = dla_tensor_item(m, j), got_v = dla_tensor_item(sv, j);
        const double unbiased = want_v * (double)n / (double)(n - 1);
        if (!(fabs(got_m - want_m) <= 1e-5 * fmax(1, fabs(want_m))) ||
            !(fabs(got_v - unbiased) <= 1e-5 * unbiased))
            fail_msg("channel %lld: mean %.9g variance %.9g; the data's %.9g and %.9g",
                     (long long)j, got_m, got_v, want_m, unbiased);
    }
    /* The moving estimates are far from them. */
    dla_tensor *mm = dla_net_get(trained[1], "batchnorm_1", "TrainedMean");
    double far = 0;
    for (int64_t j = 0; j < c; j++)
        far = tu_worse(far, fabs(dla_tensor_item(mm, j) - dla_tensor_item(m, j)));
    assert_true(far > 0.1);
    /* The final validation is the returned network's: predict's accuracy
     * on the validation data. */
    dla_tensor *vy;
    assert_int_equal(dla_net_predict(trained[0], 1, &vx, 1, &vy, NULL), DLA_OK);
    dla_tensor *hit = dla_eq(dla_onehotdecode(vy, NULL), vt);
    const double acc = 100.0 * dla_tensor_item(dla_mean(dla_cast(hit, DLA_F64), 0, NULL), 0);
    assert_true(fabs(info[0]->final_validation_accuracy - acc) < 1e-9);
    assert_non_null(strstr(text[0], "Training finished: Max epochs completed.\n"
                                    "Batch normalization statistics computed from the training "
                                    "data (BatchNormalizationStatistics \"population\").\n"
                                    "Final validation (population statistics): loss "));
    assert_null(strstr(text[1], "Batch normalization statistics"));
    for (int k = 0; k < 2; k++) {
        free(text[k]);
        dla_training_info_free(info[k]);
        dla_net_free(trained[k]);
    }
    /* The option: its values, and its place in MATLAB's display. */
    dla_training_options o;
    assert_int_equal(dla_training_options_resolve(NULL, &o), DLA_OK);
    assert_string_equal(o.batch_normalization_statistics, "population");
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){
                         .batch_normalization_statistics = "auto"}, &o), DLA_OK);
    assert_string_equal(o.batch_normalization_statistics, "population");
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){
                         .batch_normalization_statistics = "running"}, &o),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "BatchNormalizationStatistics \"running\""));
    char buf[4096];
    dla_training_options_describe(&(dla_training_options){.batch_normalization_statistics =
                                                              "moving"}, buf, sizeof buf);
    assert_non_null(strstr(buf, "BatchNormalizationStatistics: 'moving'\n"));
    dla_scope_end();
}

/* OutputNetwork "best-validation": the network of the validation with the
 * lowest loss, not the last one; its iteration and figures in info; and
 * refused without validation data. */
static void output_network_best_validation_returns_that_validations_network(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t, *vx, *vt;
    blobs(128, 31, &x, &t);
    blobs(60, 32, &vx, &vt);
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    dla_net *trained[2];
    dla_training_info *info[2];
    const char *mode[2] = {"best-validation", NULL};
    for (int k = 0; k < 2; k++) {
        dla_net *net = mlp();
        /* A rate high enough that the validation loss goes up again. */
        dla_training_options o = quiet();
        o.max_epochs = 6;
        o.mini_batch_size = 16;
        o.initial_learn_rate = 0.5;
        o.validation_data = &v;
        o.validation_frequency = 3;
        o.output_network = mode[k];
        if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained[k],
                         &info[k]) != DLA_OK)
            fail_msg("trainnet: %s", dla_last_error());
        dla_net_free(net);
    }
    /* The first lowest validation loss of the history. */
    const dla_training_info *in = info[0];
    int64_t best = 0;
    for (int64_t i = 1; i < in->validations; i++)
        if (in->validation_loss[i] < in->validation_loss[best])
            best = i;
    assert_true(in->validation_iteration[best] < in->iterations); /* not the last: a real test */
    assert_int_equal(in->output_network_iteration, in->validation_iteration[best]);
    assert_true(in->final_validation_loss == in->validation_loss[best]);
    assert_int_equal(info[1]->output_network_iteration, info[1]->iterations);
    /* The returned network gives that loss on the validation data. */
    dla_tensor *y;
    assert_int_equal(dla_net_predict(trained[0], 1, &vx, 1, &y, NULL), DLA_OK);
    dla_tensor *onehot = dla_onehotencode(dla_reshape(vt, "CB", DLA_DIMS(1, 60)), CLASSES, NULL);
    const double loss = dla_tensor_item(dla_crossentropy(y, onehot, NULL), 0);
    if (!(fabs(loss - in->validation_loss[best]) <= 1e-5 * fmax(1, loss)))
        fail_msg("the returned network's loss %.9g, the best validation's %.9g", loss,
                 in->validation_loss[best]);
    for (int k = 0; k < 2; k++) {
        dla_training_info_free(info[k]);
        dla_net_free(trained[k]);
    }
    /* Without validation data it has nothing to choose from. */
    dla_training_options o;
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){
                         .output_network = "best-validation"}, &o),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "OutputNetwork \"best-validation\" needs "
                                             "ValidationData"));
    assert_int_equal(dla_training_options_resolve(NULL, &o), DLA_OK);
    assert_string_equal(o.output_network, "last-iteration");
    dla_scope_end();
}

/* Sequence-to-sequence outputs of mini-batches padded to different
 * lengths are padded to the longest when joined: each observation's own
 * steps are what predicting it alone gives, the steps its mini-batch
 * padded are the network's output on the input padding, and the steps
 * added at the join hold SequencePaddingValue, on the side
 * SequencePaddingDirection says. */
static void minibatchpredict_pads_sequence_outputs_to_the_longest(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(4);
    dla_layer *l[] = {dla_sequence_input_layer(1, NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    const int64_t len[3] = {2, 3, 5};
    const float steps[5] = {0.5f, -1, 2, 0.25f, 3};
    dla_seqlist *seq = dla_seqlist_create(1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(dla_seqlist_append(seq, steps, len[i]), DLA_OK);
    for (int left = 0; left < 2; left++) {
        dla_predict_options po = {.mini_batch_size = 2, .sequence_padding_value = -7,
                                  .sequence_padding_direction = left ? "left" : "right"};
        dla_tensor *y = NULL;
        assert_int_equal(dla_minibatchpredict(net, &(dla_train_data){.sequences = seq}, &po, &y),
                         DLA_OK);
        assert_string_equal(dla_tensor_format(y), "CBT");
        assert_int_equal(dla_tensor_dim(y, 2), 3);
        assert_int_equal(dla_tensor_dim(y, 3), 5);
        const int64_t batch_len[3] = {3, 3, 5};
        for (int i = 0; i < 3; i++) {
            dla_tensor *alone, *x = dla_tensor_from_host(steps, DLA_F32, "CBT", DLA_DIMS(1, 1, len[i]));
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &alone, NULL), DLA_OK);
            for (int64_t t = 0; t < 5; t++) {
                /* Step t of observation i in y: its own steps start where
                 * the padding before them ends. */
                const int64_t own = left ? t - (5 - len[i]) : t;
                const int64_t joined_pad = 5 - batch_len[i];
                for (int c = 0; c < 2; c++) {
                    const double got = dla_tensor_item(y, c + 2 * (i + 3 * t));
                    if (own >= 0 && own < len[i]) {
                        if (got != dla_tensor_item(alone, c + 2 * own))
                            fail_msg("left %d obs %d step %lld: %g", left, i, (long long)t, got);
                    } else if (left ? t < joined_pad : t >= 5 - joined_pad) {
                        if (got != -7)
                            fail_msg("left %d obs %d step %lld: %g, not the padding", left, i,
                                     (long long)t, got);
                    }
                }
            }
        }
    }
    dla_seqlist_free(seq);
    dla_net_free(net);
    dla_scope_end();
}

static int32_t *labels_of(dla_tensor *t); /* its class numbers on the host */

/* minibatchpredict: the predictions of the whole data, made a mini-batch
 * at a time (a partial last one too); testnet: accuracy and
 * cross-entropy over the whole data as computed from those predictions;
 * and their refusals. */
static void minibatchpredict_and_testnet_cover_the_whole_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t, *vx, *vt;
    blobs(160, 41, &x, &t);
    blobs(53, 42, &vx, &vt);
    dla_net *net = mlp(), *trained;
    dla_training_options o = quiet();
    o.solver = "adam";
    o.initial_learn_rate = 0.02;
    o.max_epochs = 4;
    o.mini_batch_size = 32;
    assert_int_equal(dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                                  &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                     DLA_OK);
    dla_tensor *whole, *scores;
    assert_int_equal(dla_net_predict(trained, 1, &vx, 1, &whole, NULL), DLA_OK);
    dla_train_data v = {.predictors = vx, .targets = vt};
    assert_int_equal(dla_minibatchpredict(trained, &v, &(dla_predict_options){
                                              .mini_batch_size = 10}, &scores), DLA_OK);
    assert_string_equal(dla_tensor_format(scores), "CB");
    assert_int_equal(dla_tensor_dim(scores, 1), CLASSES);
    assert_int_equal(dla_tensor_dim(scores, 2), 53);
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(scores, whole)), 0, NULL), 0) < 1e-6);
    /* testnet's figures are those of the whole predictions. */
    double values[3];
    assert_int_equal(dla_testnet(trained, &v, "accuracy, crossentropy,rmse",
                                 &(dla_predict_options){.mini_batch_size = 10}, values),
                     DLA_OK);
    dla_tensor *hit = dla_eq(dla_onehotdecode(whole, NULL), vt);
    const double acc = 100.0 * dla_tensor_item(dla_mean(dla_cast(hit, DLA_F64), 0, NULL), 0);
    dla_tensor *onehot = dla_onehotencode(dla_reshape(vt, "CB", DLA_DIMS(1, 53)), CLASSES, NULL);
    const double ce = dla_tensor_item(dla_crossentropy(whole, onehot, NULL), 0);
    const double rmse = sqrt(dla_tensor_item(
        dla_mean(dla_square(dla_sub(dla_cast(whole, DLA_F64), dla_cast(onehot, DLA_F64))), 0,
                 NULL), 0));
    if (!(fabs(values[0] - acc) <= 1e-9) || !(fabs(values[1] - ce) <= 1e-5 * ce) ||
        !(fabs(values[2] - rmse) <= 1e-5 * rmse))
        fail_msg("testnet %g %g %g; from the predictions %g %g %g", values[0], values[1],
                 values[2], acc, ce, rmse);
    if (!(acc > 90)) /* the blobs are separable: a trained network's figures */
        fail_msg("accuracy %g", acc);
    /* Refusals name the function and what is wrong. */
    assert_int_equal(dla_testnet(trained, &v, "precision", NULL, values), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_testnet: metric \"precision\""));
    assert_int_equal(dla_testnet(trained, &(dla_train_data){.predictors = vx}, "accuracy", NULL,
                                 values), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_testnet: data: targets is NULL"));
    /* The targets' checks name testnet alone (they said "dla_testnet:
     * dla_trainnet: data: ..."). */
    dla_tensor *rows = dla_permute(dla_onehotencode(vt, CLASSES, NULL), 2,
                                   (const int64_t[]){2, 1});
    assert_int_equal(dla_testnet(trained, &(dla_train_data){.predictors = vx, .targets = rows},
                                 "mse", NULL, values), DLA_ERR_SHAPE);
    if (strncmp(dla_last_error(), "dla_testnet: data: targets (53x4", 32) ||
        strstr(dla_last_error(), "dla_trainnet"))
        fail_msg("%s", dla_last_error());
    int32_t *lv = labels_of(vt);
    for (int i = 0; i < 53; i++)
        lv[i] += 10;
    dla_tensor *bad = dla_tensor_from_host(lv, DLA_I32, "", DLA_DIMS(1, 53));
    free(lv);
    assert_int_equal(dla_testnet(trained, &(dla_train_data){.predictors = vx, .targets = bad},
                                 "accuracy", NULL, values), DLA_ERR_INVALID_ARGUMENT);
    if (strncmp(dla_last_error(), "dla_testnet: data: targets[0] is 1", 34) ||
        strstr(dla_last_error(), "dla_trainnet"))
        fail_msg("%s", dla_last_error());
    /* testnet's options are its own (they were named "dla_training_options"). */
    assert_int_equal(dla_testnet(trained, &v, "accuracy", &(dla_predict_options){
                                     .mini_batch_size = -1}, values), DLA_ERR_INVALID_ARGUMENT);
    if (strncmp(dla_last_error(), "dla_testnet: MiniBatchSize -1", 29))
        fail_msg("%s", dla_last_error());
    dla_net *fresh = mlp();
    assert_int_equal(dla_minibatchpredict(fresh, &v, NULL, &scores), DLA_ERR_STATE);
    assert_non_null(strstr(dla_last_error(), "dla_minibatchpredict: the network is not "
                                             "initialized"));
    assert_null(scores);
    dla_net_free(fresh);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

static void every_option_value_is_checked(void **state)
{
    (void)state;
    struct {
        dla_training_options o;
        const char *name;
    } bad[] = {
        {{.solver = "sgd"}, "Solver \"sgd\""},
        {{.max_epochs = -1}, "MaxEpochs"},
        {{.mini_batch_size = -5}, "MiniBatchSize"},
        {{.initial_learn_rate = -0.1}, "InitialLearnRate"},
        {{.momentum = 1.5}, "Momentum"},
        {{.solver = "adam", .gradient_decay_factor = 1}, "GradientDecayFactor"},
        {{.solver = "rmsprop", .squared_gradient_decay_factor = 1.0}, "SquaredGradientDecayFactor"},
        /* Before: accepted and unused (each solver trained with its own
         * options and defaults). */
        {{.solver = "adam", .momentum = 0.5}, "Momentum does not apply to solver \"adam\""},
        {{.solver = "rmsprop", .momentum = -1}, "Momentum does not apply"},
        {{.solver = "rmsprop", .gradient_decay_factor = 0.8}, "GradientDecayFactor does not apply"},
        {{.gradient_decay_factor = 0.8}, "GradientDecayFactor does not apply to solver \"sgdm\""},
        {{.squared_gradient_decay_factor = 0.99}, "SquaredGradientDecayFactor does not apply"},
        {{.solver = "sgdm", .epsilon = 1e-6}, "Epsilon does not apply"},
        {{.shuffle = "always"}, "Shuffle \"always\""},
        {{.partial_mini_batch = "keep"}, "PartialMiniBatch"},
        {{.sequence_length = "12x"}, "SequenceLength \"12x\""},
        {{.sequence_length = "0"}, "SequenceLength"},
        /* Before: read as LLONG_MAX. */
        {{.sequence_length = "99999999999999999999"}, "SequenceLength \"99999999999999999999\""},
        {{.sequence_padding_direction = "up"}, "SequencePaddingDirection"},
        {{.execution_environment = "tpu"}, "ExecutionEnvironment \"tpu\""},
        {{.plots = "yes"}, "Plots"},
        {{.metrics = "acuracy"}, "Metrics \"acuracy\""},
        {{.validation_frequency = -2}, "ValidationFrequency"},
        {{.gradient_threshold_method = "max"}, "GradientThresholdMethod"},
        /* Before: accepted, and the rate was negative at iteration 1. */
        {{.learn_rate_schedule = {.warmup_iterations = 5, .warmup_start_factor = -3}},
         "warm-up start factor -3"},
        {{.learn_rate_schedule = {.method = "piecewise", .drop_factor = 1.5}}, "LearnRateDropFactor"},
        {{.learn_rate_schedule = {.method = "piecewise", .drop_period = -1}}, "LearnRateDropPeriod"},
        {{.learn_rate_schedule = {.method = "cosin"}}, "LearnRateSchedule \"cosin\""},
        {{.learn_rate_schedule = {.method = "cosine", .period = -1}}, "learn-rate period -1"},
        {{.checkpoint_frequency_unit = "batch"}, "CheckpointFrequencyUnit"},
        /* Before: accepted, and "adam" trained every epoch without moving
         * a weight. */
        {{.solver = "adam", .epsilon = INFINITY}, "Epsilon inf"},
        /* Before: accepted; the first update made every weight NaN. */
        {{.l2_regularization = INFINITY}, "L2Regularization inf"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dla_training_options o;
        if (dla_training_options_resolve(&bad[i].o, &o) != DLA_ERR_INVALID_ARGUMENT)
            fail_msg("case %zu (%s) was accepted", i, bad[i].name);
        if (!strstr(dla_last_error(), bad[i].name))
            fail_msg("case %zu: \"%s\" does not name %s", i, dla_last_error(), bad[i].name);
    }
    /* trainnet refuses them before touching anything. */
    dla_tensor *x, *t;
    blobs(64, 3, &x, &t);
    dla_net *net = mlp(), *trained = (dla_net *)&trained;
    dla_training_info *info = (dla_training_info *)&info;
    dla_train_data d = {.predictors = x, .targets = t};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"},
                                  &(dla_training_options){.shuffle = "sometimes"}, &trained, &info),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(trained);
    assert_null(info);
    /* A loss with none or two of its members, an unknown name, data with
     * both sources, targets that do not match the observations. */
    dla_training_options o = quiet();
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){0}, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "exactly one of name, fn and accel"));
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "hinge"}, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"hinge\""));
    dla_seqlist *seqs = dla_seqlist_create(2);
    dla_train_data both = {.predictors = x, .sequences = seqs, .targets = t};
    assert_int_equal(dla_trainnet(&both, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "both are set"));
    dla_tensor *short_t = dla_slice(t, 2, 0, 1, 60);
    dla_train_data mismatch = {.predictors = x, .targets = short_t};
    assert_int_equal(dla_trainnet(&mismatch, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_ERR_SHAPE);
    assert_null(trained);
    dla_tensor_release(short_t);
    dla_seqlist_free(seqs);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void verbose_prints_matlabs_iteration_table(void **state)
{
    (void)state;
    dla_tensor *x, *t, *vx, *vt;
    blobs(256, 4, &x, &t);
    blobs(100, 5, &vx, &vt);
    dla_net *net = mlp(), *trained;
    tu_sink s;
    assert_non_null(tu_sink_open(&s));
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = 32, .verbose_frequency = 5,
                              .validation_frequency = 100, .validation_data = &v,
                              .metrics = "accuracy", .output = s.f};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    char *text = tu_sink_text(&s);
    const char *rule =
        "|======================================================================================================================|\n";
    const char *header =
        "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |\n"
        "|         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      Rate       |\n";
    assert_non_null(strstr(text, "Training on "));
    char *h = strstr(text, rule);
    assert_non_null(h);
    assert_true(!strncmp(h + strlen(rule), header, strlen(header)));
    assert_true(!strncmp(h + strlen(rule) + strlen(header), rule, strlen(rule)));
    assert_int_equal(count_of(text, rule), 3);
    /* Rows at iterations 1, 5, 10, 15, 20 and the last (24), each as wide
     * as the rule; validation cells filled at 1 and 24 only. */
    int rows = 0, validated = 0;
    for (char *line = strstr(text, "\n|  "); line; line = strstr(line + 1, "\n|  ")) {
        char *end = strchr(line + 1, '\n');
        assert_int_equal(end - line - 1, strlen(rule) - 1);
        int epoch, it, hh, mm, ss;
        double acc, loss, lr;
        if (sscanf(line + 1, "| %d | %d | %d:%d:%d | %lf%% |", &epoch, &it, &hh, &mm, &ss, &acc) == 6) {
            rows++;
            assert_true(acc >= 0 && acc <= 100);
            char *cells = strstr(line + 1, "% |") + 3;
            double vacc, vloss;
            if (sscanf(cells, " %lf%% | %lf | %lf | %lf |", &vacc, &loss, &vloss, &lr) == 4)
                validated++;
            else
                assert_int_equal(sscanf(cells, " | %lf | | %lf |", &loss, &lr), 2);
            assert_true(fabs(lr - 0.01) < 1e-12);
            assert_true(it == 1 || it % 5 == 0 || it == 24);
        }
    }
    assert_int_equal(rows, 6);
    assert_int_equal(validated, 2);
    assert_non_null(strstr(text, "|       1 |           1 |       00:00:00 | "));
    assert_non_null(strstr(text, "Training finished: Max epochs completed.\n"));
    free(text);
    dla_net_free(trained);

    /* Without metrics and validation the table has five columns. */
    assert_non_null(tu_sink_open(&s));
    dla_training_options o2 = {.max_epochs = 1, .mini_batch_size = 64, .output = s.f};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o2, &trained,
                                  NULL), DLA_OK);
    text = tu_sink_text(&s);
    assert_non_null(strstr(text, "|  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Base Learning  |\n"
                                 "|         |             |   (hh:mm:ss)   |     Loss     |      Rate       |\n"));
    free(text);
    dla_net_free(trained);

    /* Verbose off: not a character. */
    assert_non_null(tu_sink_open(&s));
    dla_training_options o3 = {.max_epochs = 1, .verbose = -1, .output = s.f};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o3, &trained,
                                  NULL), DLA_OK);
    text = tu_sink_text(&s);
    assert_string_equal(text, "");
    free(text);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

static void validation_runs_at_its_frequency_and_the_end(void **state)
{
    (void)state;
    dla_tensor *x, *t, *vx, *vt;
    blobs(320, 6, &x, &t);
    blobs(90, 7, &vx, &vt);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 64; /* 5 iterations per epoch */
    o.validation_data = &v;
    o.validation_frequency = 3;
    o.metrics = "accuracy,rmse";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 10);
    int64_t want[] = {1, 3, 6, 9, 10};
    assert_int_equal(info->validations, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(info->validation_iteration[i], want[i]);
    assert_true(info->final_validation_loss == info->validation_loss[4]);
    assert_true(info->final_validation_accuracy >= 0 && info->final_validation_accuracy <= 100);
    assert_true(info->final_validation_rmse > 0 && info->final_validation_rmse < 1);
    assert_true(isfinite(info->training_rmse[0]));
    /* The final figures are those of the returned network on that data. */
    dla_tensor *y;
    assert_int_equal(dla_net_predict(trained, 1, &vx, 1, &y, NULL), DLA_OK);
    dla_scope_begin(); /* owns the intermediates of the chained ops */
    dla_tensor *l = dla_crossentropy(y, dla_onehotencode(dla_reshape(vt, "CB", DLA_DIMS(1, 90)), CLASSES, NULL), NULL);
    assert_true(tu_close(dla_tensor_item(l, 0), info->final_validation_loss, 1e-5));
    dla_scope_end();
    dla_tensor_release(y);
    dla_training_info_free(info);
    dla_net_free(trained);

    /* ValidationPatience: a learning rate of 0 never lowers the loss, so
     * training stops at the second validation without a new low. */
    o.initial_learn_rate = 1e-30;
    o.validation_frequency = 1;
    o.validation_patience = 2;
    o.max_epochs = 10;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_string_equal(info->stop_reason, "Met validation criterion");
    assert_true(info->iterations <= 4);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

/* Validation data with no observation validated nothing and reported NaN
 * validation losses, as if the network had diverged; it is refused before
 * the first iteration. */
static void empty_validation_data_is_refused(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(64, 6, &x, &t);
    dla_tensor *vx = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 0));
    dla_tensor *vt = dla_zeros(DLA_I32, "", DLA_DIMS(1, 0));
    dla_net *net = mlp(), *trained = (dla_net *)&trained;
    dla_training_info *info = (dla_training_info *)&info;
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 32;
    o.validation_data = &v;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: ValidationData has no observation"));
    assert_null(trained);
    assert_null(info);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

static void checkpoints_are_written_and_load_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/dla-train-ckpt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    dla_tensor *x, *t;
    blobs(128, 8, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 3;
    o.mini_batch_size = 32; /* 4 iterations per epoch */
    o.checkpoint_path = dir;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    DIR *dd = opendir(dir);
    assert_non_null(dd);
    struct dirent *e;
    int found[13] = {0}, files = 0;
    char last[4096] = "";
    while ((e = readdir(dd))) {
        long long it;
        char tail[256];
        if (e->d_name[0] == '.')
            continue;
        files++;
        assert_int_equal(sscanf(e->d_name, "net_checkpoint__%lld__%255s", &it, tail), 2);
        assert_non_null(strstr(tail, ".safetensors"));
        assert_true(it == 4 || it == 8 || it == 12);
        found[it]++;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (it == 12)
            snprintf(last, sizeof last, "%s", path);
        dla_net *loaded;
        assert_int_equal(dla_net_load(path, &loaded), DLA_OK);
        assert_int_equal(dla_net_learnable_count(loaded), 4);
        dla_net_free(loaded);
    }
    closedir(dd);
    assert_int_equal(files, 3);
    assert_int_equal(found[4] + found[8] + found[12], 3);
    /* The last checkpoint is the trained network. */
    dla_net *loaded;
    assert_int_equal(dla_net_load(last, &loaded), DLA_OK);
    for (int i = 0; i < 4; i++) {
        dla_tensor *a = dla_table_value(dla_net_learnables(loaded), i),
                   *b = dla_table_value(dla_net_learnables(trained), i);
        for (int64_t k = 0; k < dla_tensor_numel(a); k++)
            assert_true(dla_tensor_item(a, k) == dla_tensor_item(b, k));
    }
    dla_net_free(loaded);
    dla_net_free(trained);

    /* Every 5 iterations instead: iterations 5 and 10. */
    char dir2[] = "/tmp/dla-train-ckpt-XXXXXX";
    assert_non_null(mkdtemp(dir2));
    o.checkpoint_path = dir2;
    o.checkpoint_frequency = 5;
    o.checkpoint_frequency_unit = "iteration";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    dd = opendir(dir2);
    files = 0;
    while ((e = readdir(dd))) {
        long long it;
        if (e->d_name[0] == '.')
            continue;
        files++;
        assert_int_equal(sscanf(e->d_name, "net_checkpoint__%lld__", &it), 1);
        assert_true(it == 5 || it == 10);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir2, e->d_name);
        unlink(path);
    }
    closedir(dd);
    assert_int_equal(files, 2);
    rmdir(dir2);
    dla_net_free(trained);

    /* A folder that does not exist fails with the path. */
    o.checkpoint_path = "/nonexistent/dla-checkpoints";
    o.checkpoint_frequency_unit = "epoch";
    o.checkpoint_frequency = 1;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "/nonexistent/dla-checkpoints"));
    assert_null(trained);

    dd = opendir(dir);
    while ((e = readdir(dd)))
        if (e->d_name[0] != '.') {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(dd);
    rmdir(dir);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void training_progress_writes_a_well_formed_svg_chart(void **state)
{
    (void)state;
    char path[] = "/tmp/dla-train-chart-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    dla_tensor *x, *t, *vx, *vt;
    blobs(256, 9, &x, &t);
    blobs(64, 10, &vx, &vt);
    dla_net *net = mlp(), *trained;
    tu_sink s;
    assert_non_null(tu_sink_open(&s));
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = 32, .verbose = -1,
                              .metrics = "accuracy", .validation_data = &v,
                              .validation_frequency = 4, .plots = "training-progress",
                              .plots_path = path, .output = s.f};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    char *text = tu_sink_text(&s);
    /* Not a terminal: plain progress lines, at each tenth and the end. */
    assert_null(strchr(text, '\r'));
    assert_true(count_of(text, "[progress] ") >= 10);
    assert_non_null(strstr(text, "[progress] 100%  24/24"));
    assert_non_null(strstr(text, path));
    free(text);

    char *svg = read_file(path);
    assert_true(!strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44));
    assert_well_formed_xml(svg);
    /* Accuracy above loss, four series with their last values, three
     * epochs. */
    char *acc = strstr(svg, "Accuracy (%)"), *loss = strstr(svg, ">Loss<");
    assert_non_null(acc);
    assert_non_null(loss);
    assert_true(acc < loss);
    assert_non_null(strstr(svg, ">TrainingLoss<"));
    assert_non_null(strstr(svg, ">ValidationLoss<"));
    assert_non_null(strstr(svg, ">TrainingAccuracy<"));
    assert_non_null(strstr(svg, ">ValidationAccuracy<"));
    assert_non_null(strstr(svg, ">Epoch 3<"));
    assert_true(count_of(svg, "<polyline") >= 6);
    assert_true(count_of(svg, "<circle") >= 2 * 7); /* validations at 1, 4, ..., 24 */
    free(svg);
    unlink(path);
    dla_net_free(trained);

    /* An unwritable path fails the training with the path. */
    o.plots_path = "/nonexistent/chart.svg";
    o.output = NULL;
    o.plots = "training-progress";
    assert_non_null(tu_sink_open(&s));
    o.output = s.f;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "/nonexistent/chart.svg"));
    free(tu_sink_text(&s));
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

static void progress_bar_redraws_on_a_terminal_and_escapes_the_chart(void **state)
{
    (void)state;
    tu_sink s;
    assert_non_null(tu_sink_open(&s));
    dla_progress *p = dla_progress_create(&(dla_progress_options){.stream = s.f, .bar = 1, .total = 4,
                                                                  .title = "a <b> & \"c\""});
    assert_non_null(p);
    for (int i = 1; i <= 4; i++) {
        assert_int_equal(dla_progress_record(p, "TrainingLoss", i, 1.0 / i), DLA_OK);
        assert_int_equal(dla_progress_record(p, "Odd & <Metric>", i, i % 2 ? NAN : i), DLA_OK);
        dla_progress_update(p, i, "text");
    }
    dla_progress_printf(p, "a line above the bar");
    dla_progress_finish(p, "done");
    char *text = tu_sink_text(&s);
    assert_non_null(strstr(text, "\r[##############################] 100%  4/4"));
    assert_non_null(strstr(text, "\033[K"));
    assert_non_null(strstr(text, "\r\033[Ka line above the bar\n\r["));
    assert_non_null(strstr(text, "text\033[K\ndone\n"));
    free(text);

    const int64_t *xs;
    const double *vs;
    assert_int_equal(dla_progress_metric(p, "TrainingLoss", &xs, &vs), 4);
    assert_true(xs[3] == 4 && vs[3] == 0.25);
    assert_int_equal(dla_progress_metric(p, "missing", NULL, NULL), -1);
    char path[] = "/tmp/dla-progress-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(dla_progress_write_chart(p, path), DLA_OK);
    char *svg = read_file(path);
    assert_well_formed_xml(svg);
    assert_non_null(strstr(svg, "a &lt;b&gt; &amp; &quot;c&quot;"));
    assert_non_null(strstr(svg, "Odd &amp; &lt;Metric&gt;"));
    free(svg);
    unlink(path);
    assert_int_equal(dla_progress_record(p, "", 1, 1), DLA_ERR_INVALID_ARGUMENT);
    dla_progress_free(p);

    /* Nothing recorded: no chart. */
    p = dla_progress_create(&(dla_progress_options){.bar = -2});
    assert_int_equal(dla_progress_write_chart(p, path), DLA_ERR_STATE);
    dla_progress_free(p);
}

static void execution_environment_maps_to_devices(void **state)
{
    (void)state;
    dla_device *dev, *before = dla_device_current();
    assert_int_equal(dla_training_device(NULL, &dev), DLA_OK);
    assert_ptr_equal(dev, dla_device_current());
    assert_int_equal(dla_training_device("auto", &dev), DLA_OK);
    assert_ptr_equal(dev, dla_device_current());
    assert_int_equal(dla_training_device("cpu", &dev), DLA_OK);
    assert_string_equal(dla_device_type(dev), "cpu");
    assert_int_equal(dla_training_device("npu", &dev), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dev);
    assert_non_null(strstr(dla_last_error(), "ExecutionEnvironment \"npu\""));
    /* A device name is not an environment, and the message names the
     * function that was called, not dla_training_options. */
    assert_int_equal(dla_training_device("cpu:7", &dev), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dev);
    assert_non_null(strstr(dla_last_error(), "dla_training_device: ExecutionEnvironment \"cpu:7\""));

    dla_device *other = NULL;
    for (int i = 0; i < dla_device_count(); i++)
        if (strcmp(dla_device_type(dla_device_at(i)), "cpu"))
            other = other ? other : dla_device_at(i);
    dla_status st = dla_training_device("gpu", &dev);
    dla_tensor *x, *t;
    blobs(64, 11, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 32;
    o.execution_environment = "gpu";
    dla_status tst = dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info);
    if (!other) {
        assert_int_equal(st, DLA_ERR_NO_DEVICE);
        assert_null(dev);
        assert_non_null(strstr(dla_last_error(), "ExecutionEnvironment \"gpu\""));
        assert_non_null(strstr(dla_last_error(), "cpu:0 (cpu)"));
        assert_int_equal(tst, DLA_ERR_NO_DEVICE);
        assert_null(trained);
        assert_null(info);
    } else {
        /* The best non-cpu device (testmem in tests/train_on_testmem.sh):
         * training runs there and the network lives there. */
        assert_int_equal(st, DLA_OK);
        assert_ptr_equal(dev, other);
        assert_int_equal(tst, DLA_OK);
        assert_string_equal(info->device, dla_device_name(other));
        assert_ptr_equal(dla_tensor_device(dla_table_value(dla_net_learnables(trained), 0)), other);
        assert_true(info->training_loss[3] < info->training_loss[0]);
        /* The caller's current device is left as it was. */
        assert_ptr_equal(dla_device_current(), before);
        dla_training_info_free(info);
        dla_net_free(trained);
    }
    /* "cpu" trains on a cpu device. */
    o.execution_environment = "cpu";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info),
                     DLA_OK);
    assert_string_equal(dla_device_type(dla_tensor_device(dla_table_value(dla_net_learnables(trained), 0))),
                        "cpu");
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static int seen_sizes[64], nseen;

/* A custom loss that records the mini-batch sizes it is given. */
static dla_status counting_ce(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    if (nseen < 64)
        seen_sizes[nseen++] = (int)dla_tensor_dim(in[0], 2);
    out[0] = dla_crossentropy(in[0], in[1], NULL);
    return dla_tensor_status(out[0]);
}

static void partial_mini_batches_are_dropped_or_returned(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(100, 12, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 32;
    nseen = 0;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = counting_ce}, &o, &trained, &info),
                     DLA_OK);
    assert_int_equal(info->iterations, 6); /* 3 full batches of 32 per epoch */
    assert_int_equal(nseen, 6);
    for (int i = 0; i < nseen; i++)
        assert_int_equal(seen_sizes[i], 32);
    dla_training_info_free(info);
    dla_net_free(trained);

    o.partial_mini_batch = "return";
    nseen = 0;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = counting_ce}, &o, &trained, &info),
                     DLA_OK);
    assert_int_equal(info->iterations, 8);
    assert_int_equal(seen_sizes[3], 4);
    assert_int_equal(seen_sizes[7], 4);
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Fewer observations than a mini-batch: nothing to train on. */
    o.partial_mini_batch = NULL;
    o.mini_batch_size = 128;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = counting_ce}, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "100 observations make no full mini-batch of 128"));
    assert_non_null(strstr(dla_last_error(), "set MiniBatchSize to at most 100, or "
                                             "PartialMiniBatch to \"return\""));
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* MATLAB's weighted cross-entropy of the dlaccelerate page; ctx holds the
 * class weights. */
static dla_status weighted_ce(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_crossentropy_options o = {.weights = ctx, .weights_format = "C",
                                  .normalization_factor = "all-elements"};
    out[0] = dla_affine(dla_crossentropy(in[0], in[1], &o), CLASSES, 0.0);
    return dla_tensor_status(out[0]);
}

static void an_accelerated_custom_loss_is_replayed_and_trains(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(384, 13, &x, &t);
    float w[CLASSES] = {0.5f, 1.0f, 1.5f, 2.0f};
    dla_tensor *cw = dla_tensor_from_host(w, DLA_F32, "", DLA_DIMS(CLASSES, 1));
    dla_accel *acc = dla_accelerate(weighted_ce, &(dla_accel_options){.name = "lossFun"});
    dla_accel_set_check_mode(acc, "tolerance");
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.solver = "adam";
    o.initial_learn_rate = 0.01;
    o.max_epochs = 10;
    o.mini_batch_size = 64;
    o.metrics = "accuracy";
    dla_rng_seed(1); /* the network is initialized from the data, with the stream */
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.accel = acc, .ctx = cw}, &o, &trained,
                                  &info), DLA_OK);
    /* 60 calls of one shape: one recorded, the rest replayed; the
     * tolerance check found the replays equal to the function. */
    assert_true(dla_accel_hit_rate(acc) > 90.0);
    assert_int_equal(dla_accel_occupancy(acc), 1);
    assert_string_equal(dla_accel_last_check(acc), "");
    assert_true(info->training_loss[info->iterations - 1] < 0.3 * info->training_loss[0]);
    assert_true(info->training_accuracy[info->iterations - 1] > 90.0);

    /* The same training with the plain function gives the same losses:
     * the gradient goes through the replayed trace as through the ops. */
    dla_net *trained2;
    dla_training_info *info2;
    dla_rng_seed(1);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = weighted_ce, .ctx = cw}, &o,
                                  &trained2, &info2), DLA_OK);
    assert_int_equal(info2->iterations, info->iterations);
    for (int64_t i = 0; i < info->iterations; i++)
        if (!tu_close(info->training_loss[i], info2->training_loss[i], 1e-4))
            fail_msg("iteration %lld: %.8g accelerated, %.8g plain", (long long)i + 1,
                     info->training_loss[i], info2->training_loss[i]);
    dla_training_info_free(info2);
    dla_net_free(trained2);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_accel_free(acc);
    dla_tensor_release(cw);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* trainingOptions("rmsprop") trains through dla_rmspropupdate: the loss
 * falls and the blobs are learned, and the network differs from the one
 * SGDM makes from the same start (the solver's branch in trainnet had no
 * test: gcov, 2026-11-27). */
static void rmsprop_trains_and_is_not_sgdm(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(256, 5, &x, &t);
    dla_net *net = mlp(), *trained[2];
    dla_training_info *info[2];
    dla_train_data d = {.predictors = x, .targets = t};
    const char *solvers[2] = {"rmsprop", "sgdm"};
    for (int k = 0; k < 2; k++) {
        dla_training_options o = quiet();
        o.solver = solvers[k];
        o.initial_learn_rate = 0.01;
        o.max_epochs = 8;
        o.mini_batch_size = 64;
        o.metrics = "accuracy";
        dla_rng_seed(1);
        assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                      &trained[k], &info[k]), DLA_OK);
    }
    const dla_training_info *r = info[0];
    assert_true(r->training_loss[r->iterations - 1] < 0.3 * r->training_loss[0]);
    assert_true(r->training_accuracy[r->iterations - 1] > 90.0);
    /* The same start (the first loss), another path. */
    assert_true(info[0]->training_loss[0] == info[1]->training_loss[0]);
    int differ = 0;
    for (int i = 0; i < dla_net_learnable_count(trained[0]); i++) {
        dla_tensor *p = dla_table_value(dla_net_learnables(trained[0]), i),
                   *q = dla_table_value(dla_net_learnables(trained[1]), i);
        for (int64_t e = 0; e < dla_tensor_numel(p); e++)
            differ += dla_tensor_item(p, e) != dla_tensor_item(q, e);
    }
    assert_true(differ > 0);
    for (int k = 0; k < 2; k++) {
        dla_training_info_free(info[k]);
        dla_net_free(trained[k]);
    }
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* n sequences of 2 channels, 5..12 steps; class 1 when channel 0 drifts
 * up, 0 when it drifts down. */
static dla_seqlist *drifts(int n, dla_tensor **labels)
{
    dla_seqlist *s = dla_seqlist_create(2);
    int32_t *lab = malloc(sizeof *lab * (size_t)n);
    tu_state = 99;
    for (int i = 0; i < n; i++) {
        int len = (int)tu_int(5, 12), c = (int)tu_int(0, 1);
        float v[2 * 12];
        for (int k = 0; k < len; k++) {
            v[2 * k] = (float)((c ? 0.3 : -0.3) * k + 0.3 * (tu_unit() - 0.5));
            v[2 * k + 1] = (float)(tu_unit() - 0.5);
        }
        assert_int_equal(dla_seqlist_append(s, v, len), DLA_OK);
        lab[i] = c;
    }
    *labels = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, n));
    free(lab);
    return s;
}

static int iterations_seen;
static int count_iterations(void *ctx, const dla_training_state *s)
{
    (void)ctx;
    if (!strcmp(s->stage, "iteration"))
        iterations_seen++;
    return 0;
}

static void assert_same_learnables(dla_net *a, dla_net *b);

/* A classifier of drifts(): zscore input, the recurrent layer given
 * (OutputMode "last"), fc, softmax; and the options its tests train it
 * with (Adam 0.02, 12 epochs of 32). */
static dla_net *drift_classifier(dla_layer *recurrent)
{
    dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.normalization = "zscore"}),
                      recurrent, dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    return net;
}

static dla_training_options drift_options(void)
{
    dla_training_options o = quiet();
    o.solver = "adam";
    o.initial_learn_rate = 0.02;
    o.max_epochs = 12;
    o.mini_batch_size = 32;
    return o;
}

/* A GRU network trains as the LSTM's does: the loss falls, and its state
 * is back at one column afterwards (reset between batches). */
static void a_gru_network_trains_on_sequences(void **state)
{
    (void)state;
    dla_tensor *t;
    dla_seqlist *seqs = drifts(96, &t);
    dla_rng_seed(4);
    dla_net *net = drift_classifier(dla_gru_layer(6, &(dla_gru_layer_options){.output_mode = "last"}));
    dla_net *trained;
    dla_training_info *info;
    dla_train_data d = {.sequences = seqs, .targets = t};
    dla_training_options o = drift_options();
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 36);
    assert_true(info->training_loss[35] < 0.5 * info->training_loss[0]);
    assert_int_equal(dla_tensor_dim(dla_net_get(trained, "gru", "HiddenState"), 2), 1);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(seqs);
    dla_tensor_release(t);
}

/* A bilstm network too (a backward direction over padded sequences):
 * the loss falls, and its 2H-row state is back at one column. */
static void a_bilstm_network_trains_on_sequences(void **state)
{
    (void)state;
    dla_tensor *t;
    dla_seqlist *seqs = drifts(96, &t);
    dla_rng_seed(5);
    dla_net *net = drift_classifier(dla_bilstm_layer(4, &(dla_lstm_layer_options){.output_mode = "last"}));
    dla_net *trained;
    dla_training_info *info;
    dla_train_data d = {.sequences = seqs, .targets = t};
    dla_training_options o = drift_options();
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) !=
        DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(info->iterations, 36);
    assert_true(info->training_loss[35] < 0.5 * info->training_loss[0]);
    dla_tensor *hs = dla_net_get(trained, "bilstm", "HiddenState");
    assert_int_equal(dla_tensor_dim(hs, 1), 8);
    assert_int_equal(dla_tensor_dim(hs, 2), 1);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(seqs);
    dla_tensor_release(t);
}

/* trainnet on sequences of varying length, MATLAB's usual workflow: each
 * new length records a trace of the network's own accelerated forward,
 * and a run of them warned "Keep it fixed between calls, or call the
 * function itself", which a trainnet caller (or a custom loop's) cannot
 * do: the lengths are the data's, and the function is the network's. The
 * warning names the network and what can be done. */
static void the_network_cache_warning_names_what_a_caller_can_do(void **state)
{
    (void)state;
    dla_seqlist *s = dla_seqlist_create(2);
    int32_t lab[12];
    for (int i = 0; i < 12; i++) {
        float v[2 * 12];
        for (int k = 0; k < 2 * (i + 1); k++)
            v[k] = (float)sin(0.3 * k + i);
        assert_int_equal(dla_seqlist_append(s, v, i + 1), DLA_OK);
        lab[i] = i % 2;
    }
    dla_tensor *t = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, 12));
    dla_net *net = drift_classifier(dla_lstm_layer(3, &(dla_lstm_layer_options){.output_mode = "last"}));
    dla_net *trained = NULL;
    dla_train_data d = {.sequences = s, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 1;
    o.shuffle = "never";
    fflush(stderr);
    char path[] = "/tmp/dla_train_warnXXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    dla_status st = dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char log[8192] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    log[fread(log, 1, sizeof log - 1, f)] = '\0';
    fclose(f);
    close(fd);
    unlink(path);
    assert_int_equal(st, DLA_OK);
    const char *w = strstr(log, "dla_net: ");
    if (!w || !strstr(w, "missed the cache") || !strstr(w, "dla_net_set_accelerate(net, 0)") ||
        strstr(w, "call the function itself"))
        fail_msg("the warning: %s", log);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_tensor_release(t);
}

/* OutputNetwork "best-validation" on a recurrent network: the copy
 * taken at the best validation held the LSTM state of the training
 * batch then (one column per sequence of it), which the returned
 * network started its predictions from; it comes back at the initial
 * state, as the last iteration's network does. */
static void the_best_validation_network_has_the_initial_recurrent_state(void **state)
{
    (void)state;
    dla_tensor *t;
    dla_seqlist *seqs = drifts(96, &t);
    dla_rng_seed(3);
    dla_net *net = drift_classifier(dla_lstm_layer(6, &(dla_lstm_layer_options){.output_mode = "last"}));
    dla_net *trained;
    dla_training_info *info;
    dla_train_data d = {.sequences = seqs, .targets = t};
    dla_training_options o = drift_options();
    o.max_epochs = 2;
    o.validation_data = &d;
    o.validation_frequency = 1;
    o.output_network = "best-validation";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    const char *rows[] = {"HiddenState", "CellState"};
    for (int k = 0; k < 2; k++) {
        dla_tensor *h = dla_net_get(trained, "lstm", rows[k]);
        assert_non_null(h);
        assert_int_equal(dla_tensor_dim(h, 2), 1);
        for (int64_t i = 0; i < dla_tensor_numel(h); i++)
            if (dla_tensor_item(h, i) != 0)
                fail_msg("%s(%lld) is %g after training, not the initial 0", rows[k],
                         (long long)i + 1, dla_tensor_item(h, i));
    }
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(seqs);
    dla_tensor_release(t);
}

/* minibatchpredict of sequences: a SequenceLength number cut every longer
 * sequence to it (a sequence-to-sequence network's 3- to 5-step outputs
 * came back 2 steps long, a classifier saw the first steps alone, with
 * DLA_OK); it is refused, as testnet refuses it. Sequence outputs of
 * mini-batches padded to other lengths name the mini-batches and their
 * lengths (dla_cat's "tensors[1]: 1x1x4 against 1x2x5" did not). */
static void minibatchpredict_reads_whole_sequences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL), dla_lstm_layer(3, NULL),
                      dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    dla_seqlist *s = dla_seqlist_create(2);
    float v[10];
    for (int i = 0; i < 10; i++)
        v[i] = (float)i / 10;
    assert_int_equal(dla_seqlist_append(s, v, 3), DLA_OK);
    assert_int_equal(dla_seqlist_append(s, v, 5), DLA_OK);
    assert_int_equal(dla_seqlist_append(s, v, 4), DLA_OK);
    dla_train_data d = {.sequences = s};
    dla_tensor *y;
    assert_int_equal(dla_minibatchpredict(net, &d, &(dla_predict_options){
                         .mini_batch_size = 2, .sequence_length = "2"}, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(y);
    assert_non_null(strstr(dla_last_error(), "dla_minibatchpredict: SequenceLength \"2\": a "
                                             "prediction reads whole sequences"));
    /* Another word is refused by name, with the two values it may be
     * (the queue's message offered "a positive whole number" too). */
    assert_int_equal(dla_minibatchpredict(net, &d, &(dla_predict_options){
                         .sequence_length = "longestt"}, &y), DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_last_error(), "dla_minibatchpredict: SequenceLength \"longestt\": "
                                          "use \"longest\" or \"shortest\"");
    /* Mini-batches of 5 and 4 steps: joined padded to 5
     * (minibatchpredict_pads_sequence_outputs_to_the_longest). */
    assert_int_equal(dla_minibatchpredict(net, &d, &(dla_predict_options){.mini_batch_size = 2},
                                          &y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    assert_int_equal(dla_tensor_dim(y, 3), 5);
    assert_int_equal(dla_minibatchpredict(net, &d, &(dla_predict_options){.mini_batch_size = 3},
                                          &y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 3), 5);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_scope_end();
}

/* A double network without learnables (an input's statistics and a
 * softmax): minibatchpredict and testnet took the network's dtype from
 * its first learnable, found none, cast the double data to single and
 * failed ("input 1 is single but the network is double"); any value of
 * the network gives its dtype now. */
static void a_double_network_without_learnables_predicts_double_data(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *m = dla_tensor_from_host((double[]){1, 2, 3}, DLA_F64, "", DLA_DIMS(3, 1));
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){
                          .normalization = "zerocenter", .mean = m}),
                      dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    assert_int_equal(dla_net_learnable_count(net), 0);
    dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 5)), *whole, *y;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &whole, NULL), DLA_OK);
    const int32_t lab[5] = {0, 1, 2, 0, 1};
    dla_train_data d = {.predictors = x,
                        .targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(5))};
    if (dla_minibatchpredict(net, &d, &(dla_predict_options){.mini_batch_size = 2}, &y) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_tensor_dtype(y), DLA_F64);
    assert_true(dla_tensor_item(dla_max(dla_abs(dla_sub(y, whole)), 0, NULL), 0) == 0);
    double v[1];
    if (dla_testnet(net, &d, "crossentropy", NULL, v) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    dla_scope_end();
}

static void sequences_train_with_each_sequence_length(void **state)
{
    (void)state;
    dla_tensor *t;
    dla_seqlist *seqs = drifts(96, &t);
    dla_rng_seed(3);
    dla_net *net = drift_classifier(dla_lstm_layer(6, &(dla_lstm_layer_options){.output_mode = "last"}));
    dla_net *trained;
    dla_training_info *info;
    dla_train_data d = {.sequences = seqs, .targets = t};
    dla_training_options o = drift_options();
    o.metrics = "accuracy";
    o.output_fn = count_iterations;
    const char *lengths[] = {"longest", "shortest"};
    for (int k = 0; k < 2; k++) {
        o.sequence_length = lengths[k];
        iterations_seen = 0;
        assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                      &info), DLA_OK);
        assert_int_equal(info->iterations, 36);
        assert_int_equal(iterations_seen, 36);
        assert_true(info->training_loss[35] < 0.5 * info->training_loss[0]);
        /* ResetInputNormalization computed the statistics from the data. */
        dla_tensor *mean = dla_net_get(trained, "sequenceinput", "Mean");
        assert_non_null(mean);
        assert_true(fabs(dla_tensor_item(dla_net_get(net, "sequenceinput", "Mean"), 0)) == 0);
        assert_true(fabs(dla_tensor_item(mean, 1)) < 0.1); /* channel 1 is centred noise */
        /* The LSTM's state is back at its initial size. */
        assert_int_equal(dla_tensor_dim(dla_net_get(trained, "lstm", "HiddenState"), 2), 1);
        dla_training_info_free(info);
        dla_net_free(trained);
    }
    /* A number: every batch padded to a multiple of 4 steps and trained in
     * chunks of 4 (3 per batch: the longest sequence has 12 steps). */
    o.sequence_length = "4";
    o.max_epochs = 2;
    iterations_seen = 0;
    dla_rng_seed(5);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations % 3, 0);
    assert_true(info->iterations >= 2 * 3 * 2 && info->iterations <= 2 * 3 * 3);
    assert_int_equal(iterations_seen, info->iterations);
    /* Validation after every iteration, between a batch's chunks too,
     * starts from the initial state and puts the batch's LSTM state back:
     * the training is the same, loss for loss, as without it. */
    dla_train_data v = {.sequences = seqs, .targets = t};
    o.validation_data = &v;
    o.validation_frequency = 1;
    dla_net *trained_v;
    dla_training_info *info_v;
    dla_rng_seed(5);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained_v,
                                  &info_v), DLA_OK);
    assert_int_equal(info_v->iterations, info->iterations);
    assert_int_equal(info_v->validations, info->iterations);
    for (int64_t i = 0; i < info->iterations; i++)
        if (info_v->training_loss[i] != info->training_loss[i])
            fail_msg("iteration %lld: loss %.9g validated, %.9g not", (long long)i + 1,
                     info_v->training_loss[i], info->training_loss[i]);
    assert_same_learnables(trained_v, trained);
    dla_training_info_free(info_v);
    dla_net_free(trained_v);
    dla_training_info_free(info);
    dla_net_free(trained);
    /* A length near INT64_MAX overflowed the padding (steps + L - 1), which
     * came out negative: "dla_pad: ... padding -12 after", naming neither
     * trainnet nor the option. */
    o.sequence_length = "9223372036854775807";
    o.validation_data = NULL;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: epoch 1: SequenceLength "
                                             "9223372036854775807: padding the mini-batch's"));
    assert_non_null(strstr(dla_last_error(), "time steps to 9223372036854775807"));
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(seqs);
    dla_tensor_release(t);
}

/* What the loss was given: each call's targets, 1 x 4 x 3 at most. */
static float chunk_targets[16][12];
static int64_t chunk_steps[16];
static int nchunk_calls;

static dla_status recording_mse(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    if (nchunk_calls < 16 && dla_tensor_numel(in[1]) <= 12) {
        chunk_steps[nchunk_calls] = dla_tensor_dim(in[1], 3);
        dla_tensor_to_host(dla_cast(in[1], DLA_F32), chunk_targets[nchunk_calls],
                           sizeof(float) * (size_t)dla_tensor_numel(in[1]));
    }
    nchunk_calls++;
    out[0] = dla_l2loss(in[0], in[1], NULL);
    return dla_tensor_status(out[0]);
}

/* Before: with SequenceLength a number, every chunk of a mini-batch was
 * given all of its sequence-to-sequence targets, which the loss refused
 * ("targets: 1x10x8 does not match y's 1x10x4"). */
static void sequence_to_sequence_targets_are_cut_into_chunks(void **state)
{
    (void)state;
    enum { N = 8, T = 7, B = 4 };
    dla_seqlist *s = dla_seqlist_create(2);
    float tv[N * T];
    for (int i = 0; i < N; i++) {
        float v[2 * T];
        for (int k = 0; k < T; k++) {
            v[2 * k] = (float)sin(i + k);
            v[2 * k + 1] = (float)cos(i * k);
            tv[i + k * N] = (float)(100 * i + k); /* 1 x N x T "CBT" */
        }
        assert_int_equal(dla_seqlist_append(s, v, T), DLA_OK);
    }
    dla_tensor *t = dla_tensor_from_host(tv, DLA_F32, "CBT", DLA_DIMS(1, N, T));
    dla_rng_seed(4);
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL), dla_lstm_layer(3, NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(3, l), *trained = NULL;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = B;
    o.shuffle = "never";
    o.sequence_length = "3"; /* 7 steps padded to 9: chunks 0-2, 3-5, 6-8 */
    o.sequence_padding_value = -5;
    dla_training_info *info = NULL;
    nchunk_calls = 0;
    dla_status st = dla_trainnet(&(dla_train_data){.sequences = s, .targets = t}, net,
                                 &(dla_train_loss){.fn = recording_mse}, &o, &trained, &info);
    if (st != DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    assert_int_equal(info->iterations, 2 * 3);
    assert_int_equal(nchunk_calls, 6);
    for (int call = 0; call < 6; call++) {
        int batch = call / 3, c = call % 3;
        assert_int_equal(chunk_steps[call], 3);
        for (int k = 0; k < 3; k++)
            for (int n = 0; n < B; n++) {
                int step = 3 * c + k, obs = B * batch + n;
                float want = step < T ? (float)(100 * obs + step) : -5.0f;
                if (chunk_targets[call][n + B * k] != want)
                    fail_msg("chunk %d of batch %d, obs %d, step %d: %g, want %g", c, batch, obs,
                             step, chunk_targets[call][n + B * k], want);
            }
    }
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Targets with another number of steps are named. */
    dla_tensor *t5 = dla_slice(t, 3, 0, 1, 5);
    trained = (dla_net *)1;
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = s, .targets = t5}, net,
                                  &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "sequences have 7 time steps, its targets 5"));
    dla_net_free(trained == (dla_net *)1 ? NULL : trained);
    dla_tensor_release(t5);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_tensor_release(t);
}

/* Sequence-to-sequence data of a short (2 steps) and a long (4 steps)
 * sequence in one mini-batch: the short one's 2 padded steps counted in
 * the loss, the accuracy and the RMSE trainnet and testnet report (the
 * loss divided by 8 steps, not 6; padded steps "right" or "wrong" by
 * their padding). Now they are means over the 6 valid steps. */
static dla_seqlist *short_and_long(void)
{
    dla_seqlist *s = dla_seqlist_create(1);
    assert_int_equal(dla_seqlist_append(s, (float[]){0.5f, -1.0f}, 2), DLA_OK);
    assert_int_equal(dla_seqlist_append(s, (float[]){1.0f, 2.0f, -0.5f, 1.5f}, 4), DLA_OK);
    return s;
}

static void padded_steps_count_in_no_loss_nor_metric(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_seqlist *s = short_and_long();
    const int valid[8] = {1, 1, 1, 1, 0, 1, 0, 1}; /* n + 2 * k */
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 2;
    o.shuffle = "never";
    dla_predict_options po = {.mini_batch_size = 2};
    dla_training_info *info = NULL;
    dla_net *trained = NULL;

    /* Regression: 1 x 2 x 4 "CBT" targets, padded steps 7 (any value). */
    dla_rng_seed(11);
    dla_layer *l[] = {dla_sequence_input_layer(1, NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    const float tv[8] = {1, 0.5f, -2, 1, 7, -1, 7, 2};
    dla_tensor *t = dla_tensor_from_host(tv, DLA_F32, "CBT", DLA_DIMS(1, 2, 4));
    dla_train_data d = {.sequences = s, .targets = t};
    dla_tensor *y;
    assert_int_equal(dla_minibatchpredict(net, &d, &po, &y), DLA_OK);
    float yv[8];
    assert_int_equal(dla_tensor_to_host(y, yv, sizeof yv), DLA_OK);
    double se = 0;
    for (int i = 0; i < 8; i++)
        se += valid[i] ? ((double)yv[i] - tv[i]) * ((double)yv[i] - tv[i]) : 0;
    const double mse = se / 6;
    o.metrics = "rmse";
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    tu_assert_near(info->training_loss[0], mse, 1e-5 * (1 + mse));
    tu_assert_near(info->training_rmse[0], sqrt(mse), 1e-5 * (1 + mse));
    dla_training_info_free(info);
    dla_net_free(trained);
    double v[2];
    assert_int_equal(dla_testnet(net, &d, "mse,rmse", &po, v), DLA_OK);
    tu_assert_near(v[0], mse, 1e-5 * (1 + mse));
    tu_assert_near(v[1], sqrt(mse), 1e-5 * (1 + mse));
    dla_net_free(net);

    /* Classification: one-hot 2 x 2 x 4 targets, padded steps all 0 (the
     * padding value: decoded as class 0). */
    dla_rng_seed(12);
    dla_layer *lc[] = {dla_sequence_input_layer(1, NULL), dla_fc_layer(2, NULL),
                       dla_softmax_layer(NULL)};
    net = dla_net_create(3, lc);
    assert_non_null(net);
    const int cls[8] = {1, 0, 0, 1, -1, 1, -1, 0};
    float tc[16] = {0};
    for (int i = 0; i < 8; i++)
        if (cls[i] >= 0)
            tc[cls[i] + 2 * i] = 1;
    t = dla_tensor_from_host(tc, DLA_F32, "CBT", DLA_DIMS(2, 2, 4));
    d.targets = t;
    assert_int_equal(dla_minibatchpredict(net, &d, &po, &y), DLA_OK);
    float pc[16];
    assert_int_equal(dla_tensor_to_host(y, pc, sizeof pc), DLA_OK);
    double ce = 0, hits = 0, se2 = 0;
    for (int i = 0; i < 8; i++)
        if (valid[i]) {
            se2 += ((double)pc[2 * i] - tc[2 * i]) * ((double)pc[2 * i] - tc[2 * i]) +
                   ((double)pc[1 + 2 * i] - tc[1 + 2 * i]) * ((double)pc[1 + 2 * i] - tc[1 + 2 * i]);
            ce -= log(pc[cls[i] + 2 * i]);
            hits += (pc[1 + 2 * i] > pc[2 * i]) == (cls[i] == 1);
        }
    ce /= 6;
    const double acc = 100 * hits / 6, rmse = sqrt(se2 / 12); /* 2 responses a step */
    o.metrics = "accuracy,rmse";
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) !=
        DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    tu_assert_near(info->training_loss[0], ce, 1e-5 * (1 + ce));
    tu_assert_near(info->training_accuracy[0], acc, 1e-9);
    tu_assert_near(info->training_rmse[0], rmse, 1e-5);
    dla_training_info_free(info);
    dla_net_free(trained);
    double w[3];
    assert_int_equal(dla_testnet(net, &d, "crossentropy,accuracy,rmse", &po, w), DLA_OK);
    tu_assert_near(w[0], ce, 1e-5 * (1 + ce));
    tu_assert_near(w[1], acc, 1e-9);
    tu_assert_near(w[2], rmse, 1e-5);
    /* Trained in chunks of 3 steps (4 padded to 6: that padding masked
     * too), validated on the same data: the final figures are testnet's
     * with the trained network. */
    o.validation_data = &d;
    o.sequence_length = "3";
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) !=
        DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    assert_int_equal(dla_testnet(trained, &d, "crossentropy,accuracy", &po, v), DLA_OK);
    tu_assert_near(info->final_validation_loss, v[0], 1e-5 * (1 + v[0]));
    tu_assert_near(info->final_validation_accuracy, v[1], 1e-9);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_scope_end();
}

/* Training on padded sequence-to-sequence data learned the padding: the
 * targets are 5 at every valid step, the short sequence's 3 padded steps
 * (predictor 0, target 0) pulled the fitted line toward 0 there, and the
 * predictions at the valid steps missed 5. Masked, they reach it. */
static void training_does_not_learn_the_padding(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_seqlist *s = dla_seqlist_create(1);
    assert_int_equal(dla_seqlist_append(s, (float[]){1}, 1), DLA_OK);
    assert_int_equal(dla_seqlist_append(s, (float[]){2, 1, 2, 1}, 4), DLA_OK);
    const float tv[8] = {5, 5, 0, 5, 0, 5, 0, 5};
    dla_train_data d = {.sequences = s,
                        .targets = dla_tensor_from_host(tv, DLA_F32, "CBT", DLA_DIMS(1, 2, 4))};
    dla_rng_seed(5);
    dla_layer *l[] = {dla_sequence_input_layer(1, NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(2, l), *trained = NULL;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.solver = "adam";
    o.initial_learn_rate = 0.1;
    o.max_epochs = 600;
    o.mini_batch_size = 2;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL) != DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    double v;
    assert_int_equal(dla_testnet(trained, &d, "rmse", NULL, &v), DLA_OK);
    if (!(v < 0.05))
        fail_msg("RMSE over the valid steps %g after training: the padding was learned", v);
    dla_net_free(trained);
    /* L-BFGS's one batch of all the data is masked the same, in every
     * evaluation (validated on the same data between them). */
    o = (dla_training_options){.verbose = -1, .solver = "lbfgs"};
    o.max_iterations = 50;
    o.validation_data = &d;
    o.validation_frequency = 1;
    o.metrics = "rmse";
    dla_training_info *info = NULL;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        fail_msg("trainnet lbfgs: %s", dla_last_error());
    assert_int_equal(dla_testnet(trained, &d, "rmse", NULL, &v), DLA_OK);
    if (!(v < 0.05))
        fail_msg("L-BFGS: RMSE over the valid steps %g after training: the padding was learned", v);
    tu_assert_near(info->training_rmse[info->iterations - 1], v, 1e-4);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_scope_end();
}

/* ------------------------------------------- sequence-to-sequence targets */

/* Ten sequences of 3..12 steps, in an order whose first mini-batches of 4
 * lack the longest (12): 2 x T_i predictors; regression targets 2 x T_i
 * (x0 + x1, x0 - x1 / 2: an fc layer fits them); class numbers 1 x T_i
 * (0 where x0 < -0.4, 2 where x0 > 0.4, else 1); and both as one array
 * padded on the right to 12 steps ("CBT"; one-hot for the classes),
 * padded steps 0. */
enum { SQN = 10, SQT = 12 };
static const int sq_len[SQN] = {5, 3, 8, 6, 12, 4, 10, 7, 9, 11};

typedef struct seq_set {
    dla_seqlist *x, *resp, *cls;
    dla_tensor *resp_dense, *onehot_dense;
} seq_set;

static seq_set seq_set_make(void)
{
    seq_set d = {dla_seqlist_create(2), dla_seqlist_create(2), dla_seqlist_create(1), NULL, NULL};
    static float rd[2 * SQN * SQT], od[3 * SQN * SQT];
    memset(rd, 0, sizeof rd);
    memset(od, 0, sizeof od);
    for (int i = 0; i < SQN; i++) {
        float x[2 * SQT], r[2 * SQT], c[SQT];
        for (int s = 0; s < sq_len[i]; s++) {
            x[2 * s] = (float)sin(0.7 * (13 * i + s));
            x[2 * s + 1] = (float)cos(1.3 * (i + 2 * s));
            r[2 * s] = x[2 * s] + x[2 * s + 1];
            r[2 * s + 1] = x[2 * s] - 0.5f * x[2 * s + 1];
            c[s] = x[2 * s] < -0.4f ? 0.0f : x[2 * s] > 0.4f ? 2.0f : 1.0f;
            rd[0 + 2 * (i + SQN * s)] = r[2 * s];
            rd[1 + 2 * (i + SQN * s)] = r[2 * s + 1];
            od[(int)c[s] + 3 * (i + SQN * s)] = 1;
        }
        assert_int_equal(dla_seqlist_append(d.x, x, sq_len[i]), DLA_OK);
        assert_int_equal(dla_seqlist_append(d.resp, r, sq_len[i]), DLA_OK);
        assert_int_equal(dla_seqlist_append(d.cls, c, sq_len[i]), DLA_OK);
    }
    d.resp_dense = dla_tensor_from_host(rd, DLA_F32, "CBT", DLA_DIMS(2, SQN, SQT));
    d.onehot_dense = dla_tensor_from_host(od, DLA_F32, "CBT", DLA_DIMS(3, SQN, SQT));
    assert_non_null(d.x);
    assert_non_null(d.resp_dense);
    assert_non_null(d.onehot_dense);
    return d;
}

/* Frees the lists; the arrays go with the scope the test opened. */
static void seq_set_free(seq_set *d)
{
    dla_seqlist_free(d->x);
    dla_seqlist_free(d->resp);
    dla_seqlist_free(d->cls); /* (the arrays are the caller's scope's) */
}

/* An fc network over each step (no state: a step's output is its own
 * input's alone, so a batch's outputs are each sequence's own). */
static dla_net *seq_fc(int classify, uint64_t seed)
{
    dla_rng_seed(seed);
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL), dla_fc_layer(classify ? 3 : 2, NULL),
                      classify ? dla_softmax_layer(NULL) : NULL};
    dla_net *net = dla_net_create(classify ? 3 : 2, l);
    assert_non_null(net);
    return net;
}

/* The loss of net over steps [0, steps) of observations 0..nb-1 (each up
 * to its own length: the others are padding), by hand from the scores of
 * the whole data in one batch (the fc layer scores each step alone):
 * "mse" (the mean of the squared errors of the valid steps' responses) or
 * "crossentropy" (the mean over the valid steps of -log of the target
 * class's score). */
static double seq_hand_loss(dla_net *net, const seq_set *d, int classify, int nb, int steps)
{
    const int K = classify ? 3 : 2;
    double sum = 0, count = 0;
    dla_scope_begin();
    dla_tensor *y;
    assert_int_equal(dla_minibatchpredict(net, &(dla_train_data){.sequences = d->x},
                                          &(dla_predict_options){.mini_batch_size = SQN}, &y),
                     DLA_OK);
    static float yv[3 * SQN * SQT];
    assert_int_equal(dla_tensor_numel(y), K * SQN * SQT);
    assert_int_equal(dla_tensor_to_host(y, yv, sizeof(float) * (size_t)(K * SQN * SQT)), DLA_OK);
    for (int i = 0; i < nb; i++) {
        const float *r = dla_seqlist_data(d->resp, i), *c = dla_seqlist_data(d->cls, i);
        const float *yi = yv + K * i; /* step s at yi[K * SQN * s] */
        for (int s = 0; s < steps && s < sq_len[i]; s++) {
            if (classify) {
                sum -= log(yi[(int)c[s] + K * SQN * s]);
                count += 1;
            } else {
                for (int k = 0; k < 2; k++) {
                    const double e = (double)yi[k + K * SQN * s] - r[k + 2 * s];
                    sum += e * e;
                }
                count += 2;
            }
        }
    }
    dla_scope_end();
    return sum / count;
}

static double first_target_sum = -1; /* of the first call's T */

static dla_status summing_ce(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    if (first_target_sum < 0)
        dla_tensor_to_host(dla_sum(dla_cast(in[1], DLA_F64), 0, NULL), &first_target_sum,
                           sizeof first_target_sum);
    out[0] = dla_crossentropy(in[0], in[1], NULL);
    return dla_tensor_status(out[0]);
}

/* Before: sequence-to-sequence targets were one C x N x T array padded to
 * the longest sequence of the data, and a mini-batch without it (padded
 * to its own longest, or cut to its shortest) stopped training
 * ("dla_crossentropy: argument targets: 3x4x12 does not match y's
 * 3x4x8"). Now targets come as target_sequences, padded with the
 * predictors, or as that array, whose first steps a shorter batch takes:
 * the first iteration's loss is the masked loss of the first batch's
 * steps by hand, in every SequenceLength (its first chunk for a number),
 * and the same with either form. */
static void seq2seq_first_loss_is_the_masked_loss_by_hand(int classify)
{
    dla_scope_begin();
    seq_set d = seq_set_make();
    dla_net *net = seq_fc(classify, 21 + (uint64_t)classify);
    const dla_train_loss loss = {.name = classify ? "crossentropy" : "mse"};
    const struct {
        const char *length, *direction;
        int steps; /* of the first iteration: batch {5, 3, 8, 6} */
    } modes[] = {{"longest", "right", 8}, {"shortest", "right", 3}, {"4", "right", 4},
                 {"longest", "left", 8}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        const double want = seq_hand_loss(net, &d, classify, 4, modes[m].steps);
        dla_training_options o = quiet();
        o.max_epochs = 1;
        o.mini_batch_size = 4;
        o.shuffle = "never";
        o.sequence_length = modes[m].length;
        o.sequence_padding_direction = modes[m].direction;
        o.sequence_padding_value = 3; /* a class number: padded steps must not count */
        for (int form = 0; form < 2; form++) {
            dla_train_data td = {.sequences = d.x};
            if (form == 0)
                td.target_sequences = classify ? d.cls : d.resp;
            else
                td.targets = classify ? d.onehot_dense : d.resp_dense;
            dla_net *trained = NULL;
            dla_training_info *info = NULL;
            dla_status st = dla_trainnet(&td, net, &loss, &o, &trained, &info);
            if (form == 1 && !strcmp(modes[m].direction, "left")) {
                /* An array padded to the data's longest cannot say where a
                 * left-padded batch's steps are. */
                assert_int_equal(st, DLA_ERR_SHAPE);
                assert_non_null(strstr(dla_last_error(), "SequencePaddingDirection \"left\""));
                assert_non_null(strstr(dla_last_error(), "target_sequences"));
                /* (the network so far, untrained: the first batch failed) */
                dla_training_info_free(info);
                dla_net_free(trained);
                continue;
            }
            if (st != DLA_OK)
                fail_msg("%s, SequenceLength %s %s, %s targets: %s", loss.name, modes[m].length,
                         modes[m].direction, form ? "array" : "sequence", dla_last_error());
            tu_assert_near(info->training_loss[0], want, 1e-5 * (1 + want));
            dla_training_info_free(info);
            dla_net_free(trained);
        }
    }
    /* A custom loss sees one-hot class targets whose padded steps are all
     * 0, though the padding value (2) is a class number: the first batch's
     * targets add up to its 5 + 3 + 8 + 6 valid steps. */
    if (classify) {
        dla_training_options o = quiet();
        o.max_epochs = 1;
        o.mini_batch_size = 4;
        o.shuffle = "never";
        o.sequence_padding_value = 2;
        dla_net *trained = NULL;
        first_target_sum = -1;
        if (dla_trainnet(&(dla_train_data){.sequences = d.x, .target_sequences = d.cls}, net,
                         &(dla_train_loss){.fn = summing_ce}, &o, &trained, NULL) != DLA_OK)
            fail_msg("custom loss: %s", dla_last_error());
        tu_assert_near(first_target_sum, 22, 1e-9);
        dla_net_free(trained);
    }
    /* testnet in batches of 3 (the first {5, 3, 8}): the whole data's
     * masked loss, from either form. */
    const double whole = seq_hand_loss(net, &d, classify, SQN, SQT);
    dla_predict_options po = {.mini_batch_size = 3};
    double v[2];
    const char *metric = classify ? "crossentropy" : "mse";
    assert_int_equal(dla_testnet(net,
                                 &(dla_train_data){.sequences = d.x,
                                                   .target_sequences = classify ? d.cls : d.resp},
                                 metric, &po, &v[0]),
                     DLA_OK);
    if (dla_testnet(net,
                    &(dla_train_data){.sequences = d.x,
                                      .targets = classify ? d.onehot_dense : d.resp_dense},
                    metric, &po, &v[1]) != DLA_OK)
        fail_msg("testnet, array targets: %s", dla_last_error());
    tu_assert_near(v[0], whole, 1e-5 * (1 + whole));
    tu_assert_near(v[1], whole, 1e-5 * (1 + whole));
    dla_net_free(net);
    seq_set_free(&d);
    dla_scope_end();
}

static void seq2seq_regression_first_loss_is_the_masked_loss_by_hand(void **state)
{
    (void)state;
    seq2seq_first_loss_is_the_masked_loss_by_hand(0);
}

static void seq2seq_classification_first_loss_is_the_masked_loss_by_hand(void **state)
{
    (void)state;
    seq2seq_first_loss_is_the_masked_loss_by_hand(1);
}

/* Trained on shuffled batches (most without the longest sequence),
 * validated on the same data in batches of 4 (a regression's given in
 * the other form): the loss falls well below
 * the initial network's, the same with either form of targets, and the
 * final validation is testnet's. */
static void seq2seq_training_reduces_the_loss_with_either_form(void **state)
{
    (void)state;
    dla_scope_begin();
    seq_set d = seq_set_make();
    for (int classify = 0; classify < 2; classify++) {
        dla_net *net = seq_fc(classify, 31 + (uint64_t)classify);
        const dla_train_loss loss = {.name = classify ? "crossentropy" : "mse"};
        const double before = seq_hand_loss(net, &d, classify, SQN, SQT);
        double final[2];
        for (int form = 0; form < 2; form++) {
            dla_train_data td = {.sequences = d.x};
            if (form == 0)
                td.target_sequences = classify ? d.cls : d.resp;
            else
                td.targets = classify ? d.onehot_dense : d.resp_dense;
            dla_training_options o = quiet();
            o.solver = "adam";
            o.initial_learn_rate = 0.05;
            o.max_epochs = 60;
            o.mini_batch_size = 4;
            o.shuffle = "every-epoch";
            o.partial_mini_batch = "return";
            /* Regression validated on the other form (class numbers per
             * step come only as sequences, one-hot only as the array). */
            dla_train_data vd = {.sequences = d.x};
            if (classify)
                vd = td;
            else if (form == 0)
                vd.targets = d.resp_dense;
            else
                vd.target_sequences = d.resp;
            o.validation_data = &vd;
            dla_net *trained = NULL;
            dla_training_info *info = NULL;
            if (dla_trainnet(&td, net, &loss, &o, &trained, &info) != DLA_OK)
                fail_msg("%s, %s targets: %s", loss.name, form ? "array" : "sequence",
                         dla_last_error());
            final[form] = info->final_validation_loss;
            if (!(final[form] < 0.3 * before))
                fail_msg("%s, %s targets: validation loss %g after training, %g before",
                         loss.name, form ? "array" : "sequence", final[form], before);
            double v;
            assert_int_equal(dla_testnet(trained, &vd, loss.name,
                                         &(dla_predict_options){.mini_batch_size = 4}, &v),
                             DLA_OK);
            tu_assert_near(v, final[form], 1e-5 * (1 + v));
            dla_training_info_free(info);
            dla_net_free(trained);
        }
        /* The same batches, the same steps, the same masked losses. */
        tu_assert_near(final[1], final[0], 1e-4 * (1 + final[0]));
        dla_net_free(net);
    }
    seq_set_free(&d);
    dla_scope_end();
}

/* Sequence targets that do not fit are refused before training, naming
 * the first mistake. */
static void target_sequences_that_do_not_fit_are_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    seq_set d = seq_set_make();
    dla_net *reg = seq_fc(0, 41), *cls = seq_fc(1, 42), *trained = NULL;
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 4;
    const dla_train_loss mse = {.name = "mse"}, ce = {.name = "crossentropy"};
    typedef struct {
        dla_seqlist *t;
        dla_net *net;
        dla_status st;
        const char *says;
    } refusal;
    refusal cases[6];
    int nc = 0;
    /* One sequence fewer. */
    dla_seqlist *nine = dla_seqlist_create(2);
    for (int i = 0; i < SQN - 1; i++)
        assert_int_equal(dla_seqlist_append(nine, dla_seqlist_data(d.resp, i), sq_len[i]), DLA_OK);
    cases[nc++] = (refusal){nine, reg, DLA_ERR_SHAPE,
                                     "target_sequences holds 9 sequences for 10 predictor sequences"};
    /* Sequence 2 a step short. */
    dla_seqlist *short2 = dla_seqlist_create(2);
    for (int i = 0; i < SQN; i++)
        assert_int_equal(dla_seqlist_append(short2, dla_seqlist_data(d.resp, i),
                                            sq_len[i] - (i == 2)),
                         DLA_OK);
    cases[nc++] = (refusal){short2, reg, DLA_ERR_SHAPE,
                                     "target_sequences[2] has 7 time steps, its predictor sequence 8"};
    /* Class numbers out of range, and 1-based. */
    dla_seqlist *bad = dla_seqlist_create(1), *one = dla_seqlist_create(1);
    for (int i = 0; i < SQN; i++) {
        float c[SQT];
        for (int s = 0; s < sq_len[i]; s++)
            c[s] = dla_seqlist_data(d.cls, i)[s] + 1;
        assert_int_equal(dla_seqlist_append(one, c, sq_len[i]), DLA_OK);
        if (i == 3)
            c[4] = 2.5f;
        assert_int_equal(dla_seqlist_append(bad, c, sq_len[i]), DLA_OK);
    }
    cases[nc++] = (refusal){one, cls, DLA_ERR_INVALID_ARGUMENT, "look 1-based"};
    cases[nc++] = (refusal){bad, cls, DLA_ERR_INVALID_ARGUMENT, "is not a class number in 0..2"};
    /* Responses of another channel count than the output's. */
    dla_seqlist *three = dla_seqlist_create(3);
    for (int i = 0; i < SQN; i++) {
        float r[3 * SQT] = {0};
        assert_int_equal(dla_seqlist_append(three, r, sq_len[i]), DLA_OK);
    }
    cases[nc++] = (refusal){three, reg, DLA_ERR_SHAPE, "target_sequences have 3 channels"};
    for (int k = 0; k < nc; k++) {
        trained = (dla_net *)1;
        dla_status st = dla_trainnet(&(dla_train_data){.sequences = d.x, .target_sequences = cases[k].t},
                                     cases[k].net, cases[k].net == cls ? &ce : &mse, &o, &trained, NULL);
        if (st != cases[k].st || !strstr(dla_last_error(), cases[k].says))
            fail_msg("case %d: %d %s; want %d and \"%s\"", k, st, dla_last_error(), cases[k].st,
                     cases[k].says);
        assert_null(trained);
        double v;
        assert_int_equal(dla_testnet(cases[k].net,
                                     &(dla_train_data){.sequences = d.x, .target_sequences = cases[k].t},
                                     "rmse", NULL, &v),
                         cases[k].st);
        assert_non_null(strstr(dla_last_error(), "dla_testnet"));
    }
    /* Both forms at once, sequence targets of array predictors, and
     * validation class numbers given as an array. */
    trained = (dla_net *)1;
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = d.x, .targets = d.resp_dense,
                                                    .target_sequences = d.resp},
                                  reg, &mse, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "set one of targets and target_sequences"));
    dla_tensor *flat = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, SQN));
    assert_int_equal(dla_trainnet(&(dla_train_data){.predictors = flat, .target_sequences = d.resp},
                                  reg, &mse, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "they need sequences"));
    o.validation_data = &(dla_train_data){.sequences = d.x, .targets = d.onehot_dense};
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = d.x, .target_sequences = d.cls},
                                  cls, &ce, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "ValidationData"));
    assert_true(trained == (dla_net *)1 || trained == NULL);
    dla_seqlist_free(nine);
    dla_seqlist_free(short2);
    dla_seqlist_free(bad);
    dla_seqlist_free(one);
    dla_seqlist_free(three);
    dla_net_free(reg);
    dla_net_free(cls);
    seq_set_free(&d);
    dla_scope_end();
}

/* Targets with more steps than the data's longest sequence are a
 * network's whose output has more steps than its input (a transposed
 * convolution along T: 4 steps in, 6 out): not cut to the batch's 4 steps
 * as an array padded to the longest sequence would be. */
static void targets_longer_than_every_sequence_are_not_cut(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_seqlist *s = dla_seqlist_create(1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(dla_seqlist_append(s, (float[]){(float)i, 1, -1, 0.5f}, 4), DLA_OK);
    float tv[4 * 6];
    for (int k = 0; k < 24; k++)
        tv[k] = (float)(k % 5) * 0.25f;
    dla_train_data d = {.sequences = s,
                        .targets = dla_tensor_from_host(tv, DLA_F32, "CBT", DLA_DIMS(1, 4, 6))};
    dla_rng_seed(8);
    dla_layer *l[] = {dla_sequence_input_layer(1, NULL), dla_transposed_conv1d_layer(3, 1, NULL)};
    dla_net *net = dla_net_create(2, l), *trained = NULL;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 2;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL) != DLA_OK)
        fail_msg("trainnet: %s", dla_last_error());
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_scope_end();
}

static dla_training_state done_state; /* what the last "done" call was given */

static int stop_at_5(void *ctx, const dla_training_state *s)
{
    int *calls = ctx;
    calls[!strcmp(s->stage, "start") ? 0 : !strcmp(s->stage, "done") ? 2 : 1]++;
    if (!strcmp(s->stage, "done"))
        done_state = *s;
    return s->iteration >= 5;
}

static int stop_at_start(void *ctx, const dla_training_state *s)
{
    int *calls = ctx;
    calls[!strcmp(s->stage, "start") ? 0 : !strcmp(s->stage, "done") ? 2 : 1]++;
    return !strcmp(s->stage, "start");
}

/* Halves the rate every epoch; NaN from epoch ctx on. */
static double halving(void *ctx, double initial, int epoch, int iteration)
{
    (void)iteration;
    return epoch >= *(int *)ctx ? NAN : initial / (1 << (epoch - 1));
}

/* An OutputFcn that ends one scope more than it began, or leaves one open,
 * at "start", at an iteration or at "done": an error naming the OutputFcn,
 * the stage and what it did, with the network as trained so far. The
 * extra end closed trainnet's scope and then the caller's, whose tensors
 * were released under it ("use of a released tensor" at their next use);
 * a scope left open stayed open after trainnet returned, in silence. */
static int unpaired_at, unpaired_calls, unpaired_mode;

static int unpaired_output_fn(void *ctx, const dla_training_state *s)
{
    (void)ctx, (void)s;
    if (++unpaired_calls == unpaired_at) {
        if (unpaired_mode < 0)
            dla_scope_end();
        else
            dla_scope_begin();
    }
    return 0;
}

static void an_output_fn_with_unpaired_scopes_is_an_error_naming_it(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(64, 14, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 32; /* 2 iterations: calls 1 "start", 2-3, 4 "done" */
    o.output_fn = unpaired_output_fn;
    const char *stage[] = {"", "\"start\" (iteration 0)", "\"iteration\" (iteration 1)", "",
                           "\"done\" (iteration 2)"};
    for (unpaired_mode = -1; unpaired_mode <= 1; unpaired_mode += 2)
        for (unpaired_at = 1; unpaired_at <= 4; unpaired_at += unpaired_at == 2 ? 2 : 1) {
            dla_scope_begin();
            const int depth = dla_scope_depth();
            dla_tensor *mine = dla_full(5.0, DLA_F32, "", DLA_DIMS(1, 1));
            unpaired_calls = 0;
            assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                          &trained, &info), DLA_ERR_STATE);
            assert_non_null(strstr(dla_last_error(), "OutputFcn at stage"));
            assert_non_null(strstr(dla_last_error(), stage[unpaired_at]));
            assert_non_null(strstr(dla_last_error(), unpaired_mode < 0 ? "called dla_scope_end 1 "
                                                                         "more time"
                                                                       : "left 1 scope open"));
            assert_int_equal(dla_scope_depth(), depth);
            assert_true(dla_tensor_item(mine, 0) == 5.0);
            dla_training_info_free(info);
            dla_net_free(trained);
            dla_scope_end();
        }
    /* The next good call works. */
    unpaired_at = 0;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void output_fn_stops_training_and_schedules_drop_the_rate(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(128, 14, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    int calls[3] = {0};
    dla_training_options o = quiet();
    o.max_epochs = 10;
    o.mini_batch_size = 32;
    o.output_fn = stop_at_5;
    o.output_ctx = calls;
    o.metrics = "accuracy,rmse";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 5);
    assert_string_equal(info->stop_reason, "Stopped by OutputFcn");
    assert_int_equal(calls[0], 1);
    assert_int_equal(calls[1], 5);
    assert_int_equal(calls[2], 1);
    /* "done" holds the last iteration's figures; its accuracy and RMSE
     * were NaN, as if not computed. */
    assert_int_equal(done_state.iteration, 5);
    assert_true(done_state.training_loss == info->training_loss[4]);
    assert_false(isnan(info->training_accuracy[4]) || isnan(info->training_rmse[4]));
    assert_true(done_state.training_accuracy == info->training_accuracy[4]);
    assert_true(done_state.training_rmse == info->training_rmse[4]);
    o.metrics = NULL;
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Before: a stop asked for at "start" was ignored and all 10 epochs
     * ran. Now no iteration runs; the network comes back as given. */
    memset(calls, 0, sizeof calls);
    o.output_fn = stop_at_start;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 0);
    assert_int_equal(info->output_network_iteration, 0);
    assert_string_equal(info->stop_reason, "Stopped by OutputFcn");
    assert_int_equal(calls[0], 1);
    assert_int_equal(calls[1], 0);
    assert_int_equal(calls[2], 1);
    assert_true(dla_net_initialized(trained));
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Piecewise: 0.1 x the rate every 2 epochs. */
    o.output_fn = NULL;
    o.max_epochs = 5;
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "piecewise", .drop_period = 2};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    double want[] = {0.01, 0.01, 0.001, 0.001, 0.0001};
    for (int64_t i = 0; i < info->iterations; i++)
        assert_true(tu_close(info->learn_rate[i], want[info->epoch[i] - 1], 1e-12));
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Cosine over the training (the period MaxEpochs, 5): half a cosine
     * from 0.01 toward 0, one value an epoch. */
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "cosine"};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    for (int64_t i = 0; i < info->iterations; i++) {
        const double c = 0.01 * 0.5 * (1 + cos(3.14159265358979323846 * (info->epoch[i] - 1) / 5));
        assert_true(tu_close(info->learn_rate[i], c, 1e-12));
    }
    assert_true(info->learn_rate[info->iterations - 1] < 0.001);
    dla_training_info_free(info);
    dla_net_free(trained);

    /* A schedule function: its rates in the history; a NaN from it stops
     * training with the error and the network trained so far. */
    int nan_epoch = 100;
    o.learn_rate_schedule = (dla_learn_rate_schedule){.fn = halving, .fn_ctx = &nan_epoch};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    for (int64_t i = 0; i < info->iterations; i++)
        assert_true(info->learn_rate[i] == 0.01 / (1 << (info->epoch[i] - 1)));
    dla_training_info_free(info);
    dla_net_free(trained);
    nan_epoch = 3;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: LearnRateSchedule: the schedule "
                                             "function gave nan at epoch 3"));
    assert_non_null(trained);
    assert_true(info->epoch[info->iterations - 1] == 2);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* A stop by the OutputFcn ends training as the last iteration does: its
 * network is validated (the final validation figures are those of the
 * network returned, and "best-validation" may choose it) and its row is
 * printed. Before, an OutputFcn stop at iteration 5 with validations every
 * 3 iterations left the final figures at iteration 3's network, and the
 * table without iteration 5. The row is printed once, with the validation
 * (with VerboseFrequency 1 it came twice, without it and with it), and
 * without validation data too (it was missing). */
static int rows_of(const char *text, const char *row)
{
    int n = 0;
    for (const char *p = strstr(text, row); p; p = strstr(p + 1, row))
        n++;
    return n;
}

static void a_stop_by_the_output_fn_validates_the_network_returned(void **state)
{
    (void)state;
    dla_tensor *x, *t, *vx, *vt;
    blobs(128, 31, &x, &t);
    blobs(60, 32, &vx, &vt);
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    const char *mode[2] = {NULL, "best-validation"};
    for (int k = 0; k < 2; k++) {
        dla_net *net = mlp(), *trained;
        dla_training_info *info;
        int calls[3] = {0};
        tu_sink sink;
        assert_non_null(tu_sink_open(&sink));
        dla_training_options o = {.l2_regularization = -1, .max_epochs = 6, .mini_batch_size = 16,
                                  .initial_learn_rate = 0.5, .validation_data = &v,
                                  .validation_frequency = 3, .output_network = mode[k],
                                  .output_fn = stop_at_5, .output_ctx = calls, .output = sink.f,
                                  .verbose_frequency = k ? 1 : 0};
        if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                         &info) != DLA_OK)
            fail_msg("trainnet: %s", dla_last_error());
        char *text = tu_sink_text(&sink);
        assert_string_equal(info->stop_reason, "Stopped by OutputFcn");
        assert_int_equal(info->iterations, 5);
        assert_int_equal(info->validations, 3);
        assert_int_equal(info->validation_iteration[2], 5);
        if (rows_of(text, "|       1 |           5 |") != 1)
            fail_msg("VerboseFrequency %d: iteration 5's row is not there once:\n%s",
                     k ? 1 : 50, text);
        /* With its validation loss: the 5th column (after the 5th '|')
         * is not blank. */
        const char *at = strstr(text, "|       1 |           5 |");
        for (int bars = 0; bars < 5; at++)
            bars += *at == '|';
        assert_true(at[strspn(at, " ")] != '|');
        free(text);
        /* The returned network's loss on the validation data is the final
         * validation loss, and what "done" was given. */
        dla_tensor *y;
        assert_int_equal(dla_net_predict(trained, 1, &vx, 1, &y, NULL), DLA_OK);
        dla_scope_begin();
        dla_tensor *onehot = dla_onehotencode(dla_reshape(vt, "CB", DLA_DIMS(1, 60)), CLASSES, NULL);
        const double loss = dla_tensor_item(dla_crossentropy(y, onehot, NULL), 0);
        dla_scope_end();
        dla_tensor_release(y);
        if (!(fabs(loss - info->final_validation_loss) <= 1e-5 * fmax(1, loss)))
            fail_msg("%s: the returned network's loss %.9g, the final validation loss %.9g",
                     k ? "best-validation" : "last-iteration", loss, info->final_validation_loss);
        assert_true(done_state.validation_loss == info->final_validation_loss);
        if (k == 0) {
            assert_true(info->final_validation_loss == info->validation_loss[2]);
            assert_int_equal(info->output_network_iteration, 5);
        } else {
            /* The lowest of the three, the last one included. */
            int64_t best = 0;
            for (int64_t i = 1; i < info->validations; i++)
                if (info->validation_loss[i] < info->validation_loss[best])
                    best = i;
            assert_int_equal(info->output_network_iteration, info->validation_iteration[best]);
        }
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
    }
    /* No validation data: the row of the stop is printed all the same. */
    dla_net *net = mlp(), *trained;
    tu_sink sink;
    assert_non_null(tu_sink_open(&sink));
    int calls[3] = {0};
    dla_training_options o = {.l2_regularization = -1, .max_epochs = 6, .mini_batch_size = 16,
                              .output_fn = stop_at_5, .output_ctx = calls, .output = sink.f};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, NULL), DLA_OK);
    char *text = tu_sink_text(&sink);
    if (rows_of(text, "|       1 |           5 |") != 1)
        fail_msg("without validation data, iteration 5's row is not there once:\n%s", text);
    free(text);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

/* MATLAB's {"warmup", schedule} and FrequencyUnit "iteration" in trainnet:
 * the history's rates against the formulas written out. 128 observations
 * in batches of 32: 4 iterations an epoch. */
static void trainnet_runs_a_list_of_schedules_in_turn(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(128, 14, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 4;
    o.mini_batch_size = 32;
    /* The warm-up's 5 iterations end in epoch 2, which the piecewise
     * schedule (halving each epoch) counts as its first. */
    dla_learn_rate_schedule pw = {.method = "piecewise", .drop_factor = 0.5, .drop_period = 1};
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "warmup", .next = &pw};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    assert_int_equal(info->iterations, 16);
    const double want[] = {0.2, 0.4, 0.6, 0.8, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25};
    for (int64_t i = 0; i < info->iterations; i++)
        if (!tu_close(info->learn_rate[i], 0.01 * want[i], 1e-12))
            fail_msg("iteration %lld: %g", (long long)i + 1, info->learn_rate[i]);
    dla_training_info_free(info);
    dla_net_free(trained);

    /* Cosine by iteration over the whole training (a period of 0: 4 epochs
     * of 4 iterations), one value an iteration. */
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "cosine",
                                                      .frequency_unit = "iteration"};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    for (int64_t i = 0; i < info->iterations; i++) {
        const double c = 0.01 * 0.5 * (1 + cos(3.14159265358979323846 * (double)i / 16));
        if (!tu_close(info->learn_rate[i], c, 1e-12))
            fail_msg("iteration %lld: %g, not %g", (long long)i + 1, info->learn_rate[i], c);
    }
    dla_training_info_free(info);
    dla_net_free(trained);

    /* "cyclical": its defaults, a step an epoch (5x at epoch 6 of 10). */
    o.learn_rate_schedule = (dla_learn_rate_schedule){.method = "cyclical"};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_OK);
    for (int64_t i = 0; i < info->iterations; i++)
        assert_true(tu_close(info->learn_rate[i], 0.01 * (1 + 0.8 * (info->epoch[i] - 1)), 1e-12));
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void input_normalization_is_reset_from_uint8_images(void **state)
{
    (void)state;
    /* 2x2x1 images of uint8 whose pixel p is p * 10 + the image's number
     * mod 3: per-element means known by hand. */
    uint8_t px[4 * 60];
    int32_t lab[60];
    for (int n = 0; n < 60; n++) {
        for (int p = 0; p < 4; p++)
            px[4 * n + p] = (uint8_t)(p * 10 + n % 3);
        lab[n] = n % 2;
    }
    dla_tensor *x = dla_tensor_from_host(px, DLA_U8, "SSCB", DLA_DIMS(2, 2, 1, 60));
    dla_tensor *t = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(60));
    dla_layer *l[] = {dla_image_input_layer(2, 2, 1, &(dla_image_input_options){
                                                      .normalization_dimension = "element"}),
                      dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(3, l), *trained;
    assert_non_null(net);
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 20;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    dla_tensor *mean = dla_net_get(trained, "imageinput", "Mean");
    for (int p = 0; p < 4; p++)
        assert_true(tu_close(dla_tensor_item(mean, p), p * 10 + 1.0, 1e-6));
    /* ResetInputNormalization false (MATLAB: "calculate normalization
     * statistics at training time when they are empty"): a layer whose
     * statistics are still the zeros it was made with gets them from the
     * data too. Before, they stayed 0, so the layer normalized nothing,
     * in silence. */
    o.reset_input_normalization = -1;
    dla_net *again;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &again,
                                  NULL), DLA_OK);
    for (int p = 0; p < 4; p++)
        assert_true(tu_close(dla_tensor_item(dla_net_get(again, "imageinput", "Mean"), p),
                             p * 10 + 1.0, 1e-6));
    dla_net_free(again);
    /* Statistics the network has (computed by an earlier training) are
     * kept, whatever the new data's. */
    for (int n = 0; n < 60; n++)
        for (int p = 0; p < 4; p++)
            px[4 * n + p] = (uint8_t)(p * 20 + 7);
    dla_tensor *x2 = dla_tensor_from_host(px, DLA_U8, "SSCB", DLA_DIMS(2, 2, 1, 60));
    dla_train_data d2 = {.predictors = x2, .targets = t};
    assert_int_equal(dla_trainnet(&d2, trained, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &again, NULL), DLA_OK);
    for (int p = 0; p < 4; p++)
        assert_true(tu_close(dla_tensor_item(dla_net_get(again, "imageinput", "Mean"), p),
                             p * 10 + 1.0, 1e-6));
    dla_net_free(again);
    dla_net_free(trained);
    /* And so are statistics given in the layer's options, zeros too. */
    dla_scope_begin();
    dla_layer *g[] = {dla_image_input_layer(2, 2, 1, &(dla_image_input_options){
                                                      .normalization_dimension = "element",
                                                      .mean = dla_zeros(DLA_F32, "", DLA_DIMS(2, 2))}),
                      dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_scope_end();
    dla_net *given = dla_net_create(3, g);
    assert_non_null(given);
    assert_int_equal(dla_trainnet(&d, given, &(dla_train_loss){.name = "crossentropy"}, &o, &again,
                                  NULL), DLA_OK);
    for (int p = 0; p < 4; p++)
        assert_true(dla_tensor_item(dla_net_get(again, "imageinput", "Mean"), p) == 0);
    dla_net_free(again);
    dla_net_free(given);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(x2);
    dla_tensor_release(t);
}

/* Features around 50 with a spread of 10, a linear target: trainnet sets
 * the featureInput's zscore statistics from the data, and regression
 * with mse fits it. */
static void a_feature_input_network_is_normalized_and_fits_a_regression(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(1);
    dla_tensor *x = dla_affine(dla_randn(DLA_F32, "CB", DLA_DIMS(2, 512)), 10, 50);
    float xs[1024], ys[512];
    assert_int_equal(dla_tensor_to_host(x, xs, sizeof xs), DLA_OK);
    for (int i = 0; i < 512; i++)
        ys[i] = 3 * xs[2 * i] - 2 * xs[2 * i + 1] + 100;
    dla_tensor *y = dla_tensor_from_host(ys, DLA_F32, "CB", DLA_DIMS(1, 512));
    dla_layer *l[] = {dla_feature_input_layer(2, &(dla_feature_input_options){
                                                      .normalization = "zscore"}),
                      dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(2, l), *trained;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.solver = "adam";
    o.initial_learn_rate = 2;
    o.max_epochs = 60;
    o.mini_batch_size = 64;
    assert_int_equal(dla_trainnet(&(dla_train_data){.predictors = x, .targets = y}, net,
                                  &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_OK);
    dla_tensor *m = dla_net_get(trained, "featureinput", "Mean");
    dla_tensor *s = dla_net_get(trained, "featureinput", "StandardDeviation");
    double want_m[2] = {0, 0}, want_s[2] = {0, 0};
    for (int f = 0; f < 2; f++) {
        for (int i = 0; i < 512; i++)
            want_m[f] += xs[2 * i + f] / 512.0;
        for (int i = 0; i < 512; i++)
            want_s[f] += (xs[2 * i + f] - want_m[f]) * (xs[2 * i + f] - want_m[f]) / 512.0;
        assert_true(tu_close(dla_tensor_item(m, f), want_m[f], 1e-5));
        assert_true(tu_close(dla_tensor_item(s, f), sqrt(want_s[f]), 1e-4));
    }
    dla_tensor *p;
    assert_int_equal(dla_net_predict(trained, 1, &x, 1, &p, NULL), DLA_OK);
    double se = 0;
    for (int i = 0; i < 512; i++)
        se += (dla_tensor_item(p, i) - ys[i]) * (dla_tensor_item(p, i) - ys[i]);
    if (!(sqrt(se / 512) < 0.1))
        fail_msg("root mean square error %g after training", sqrt(se / 512));
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

static void a_training_leaves_nothing_allocated(void **state)
{
    (void)state;
    dla_tensor *x, *t, *vx, *vt;
    blobs(96, 15, &x, &t);
    blobs(40, 16, &vx, &vt);
    dla_net *net = mlp(), *trained;
    dla_train_data d = {.predictors = x, .targets = t}, v = {.predictors = vx, .targets = vt};
    /* A first run initializes what lives as long as the process (devices,
     * registries); the second must give back all it takes. */
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 32;
    o.validation_data = &v;
    o.metrics = "accuracy";
    /* Foreground dispatch: with a dispatch thread the order of allocations,
     * and so which freed blocks the cpu plugin keeps cached, depends on
     * timing, and the count below would too (the dispatch thread's own
     * leak check is in test_data). */
    o.dispatch_in_background = 0;
    dla_training_info *info;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info),
                     DLA_OK);
    dla_training_info_free(info);
    dla_net_free(trained);
    long before = tu_live;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info),
                     DLA_OK);
    assert_true(tu_live > before);
    dla_training_info_free(info);
    dla_net_free(trained);
    /* At most what was live before: per-thread buffers the first run made
     * may be given back meanwhile, but nothing of this run stays. */
    assert_true(tu_live <= before);
    before = tu_live;
    /* A failure after set-up (a bad checkpoint folder) leaks nothing either. */
    o.checkpoint_path = "/nonexistent";
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info),
                     DLA_ERR_IO);
    assert_true(tu_live <= before);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
}

/* ------------------------------------------- what is checked (issue 16) */

/* The class numbers of t (1 x n int32) into a new host array. */
static int32_t *labels_of(dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    int32_t *v = malloc(sizeof *v * (size_t)n);
    assert_non_null(v);
    assert_int_equal(dla_tensor_to_host(t, v, sizeof *v * (size_t)n), DLA_OK);
    return v;
}

/* Before: every label 5 on a 4-class network trained to loss 0 and 100%
 * accuracy with DLA_OK (a label outside the classes one-hot encoded as a
 * column of zeros). */
static void class_numbers_outside_the_classes_are_refused(void **state)
{
    (void)state;
    enum { N = 64 };
    dla_tensor *x, *t;
    blobs(N, 20, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 16;
    o.metrics = "accuracy";
    dla_train_loss ce = {.name = "crossentropy"};
    int32_t v[N], *good = labels_of(t);

    for (int i = 0; i < N; i++)
        v[i] = 5;
    dla_tensor *bad = dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(1, N));
    dla_train_data d = {.predictors = x, .targets = bad};
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, &info), DLA_ERR_INVALID_ARGUMENT);
    assert_null(trained);
    assert_null(info);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: data: targets[0] is 5, which is not a "
                                             "class number in 0..3 (the network's output has 4 "
                                             "classes)"));
    assert_null(strstr(dla_last_error(), "1-based"));
    dla_tensor_release(bad);

    /* MATLAB's 1..K class numbers: the first 4 is named, with the hint. */
    int first4 = -1;
    for (int i = 0; i < N; i++) {
        v[i] = good[i] + 1;
        if (first4 < 0 && v[i] == 4)
            first4 = i;
    }
    assert_true(first4 >= 0);
    bad = dla_tensor_from_host(v, DLA_I32, "CB", DLA_DIMS(1, N));
    d.targets = bad;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    char want[256];
    snprintf(want, sizeof want, "targets[%d] is 4, which is not a class number in 0..3", first4);
    assert_non_null(strstr(dla_last_error(), want));
    assert_non_null(strstr(dla_last_error(), "the class numbers look 1-based: MATLAB numbers "
                                             "categories from 1, dlaccel numbers classes from 0 "
                                             "(subtract 1)"));
    dla_tensor_release(bad);

    /* 0..K: K + 1 classes, not MATLAB's numbering. Before: the K was taken
     * for a 1-based label and the hint said to subtract 1. */
    memcpy(v, good, sizeof v);
    v[5] = 0;
    v[9] = 4;
    bad = dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(1, N));
    d.targets = bad;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "targets[9] is 4, which is not a class number in 0..3"));
    assert_null(strstr(dla_last_error(), "1-based"));
    dla_tensor_release(bad);

    /* One bad value deep in the data, and in the validation data. */
    memcpy(v, good, sizeof v);
    v[37] = -1;
    bad = dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(1, N));
    d.targets = bad;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: data: targets[37] is -1"));
    d.targets = t;
    dla_train_data val = {.predictors = x, .targets = bad};
    o.validation_data = &val;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: ValidationData: targets[37] is -1"));
    dla_tensor_release(bad);

    /* The good labels still train. */
    o.validation_data = NULL;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_OK);
    dla_net_free(trained);
    free(good);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static dla_status refusing_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx, (void)nin, (void)in, (void)nout, (void)out;
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "my_loss: refused");
}

/* Before: 3-class one-hot targets for a network of 4 outputs reported
 * "dla_feval: the function left output 4 unset". */
/* Predictors laid out as MATLAB's N-by-numFeatures (observations along
 * the first dim), or unformatted where the input's B is not last, are
 * named as such, before the targets are checked: the
 * targets' check spoke of class counts ("targets (1x100 int32 ...) have 1
 * classes along C where the network's output has 2") for targets that
 * were right, and of classes for a regression's responses. */
static void predictors_laid_out_the_other_way_are_named(void **state)
{
    (void)state;
    enum { N = 100 };
    float xs[2 * N], rs[N];
    int32_t ts[N];
    for (int j = 0; j < N; j++) {
        xs[j] = (float)sin(j);
        xs[N + j] = (float)cos(j);
        ts[j] = xs[j] > 0;
        rs[j] = xs[j];
    }
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host(xs, DLA_F32, "", DLA_DIMS(N, 2)); /* N x numFeatures */
    dla_layer *l[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(2, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(3, l), *trained = (dla_net *)&trained;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 10;
    dla_tensor *targets[2] = {dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(1, N)),
                              dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(N, 1))};
    for (int k = 0; k < 2; k++) {
        dla_train_data d = {.predictors = x, .targets = targets[k]};
        assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                      &trained, NULL), DLA_ERR_SHAPE);
        assert_null(trained);
        assert_non_null(strstr(dla_last_error(), "dla_trainnet: data: predictors (100x2 single"));
        assert_non_null(strstr(dla_last_error(), "have 100 along dim 1 (\"C\") where the "
                                                 "network's input takes 2 (2xN \"CB\" data)"));
        assert_non_null(strstr(dla_last_error(), "MATLAB's N-by-numFeatures array"));
        assert_null(strstr(dla_last_error(), "classes"));
    }
    /* The same in ValidationData, and in testnet. */
    /* 2 x N: the layout trainnet reads (the values do not matter here). */
    dla_tensor *xt = dla_tensor_from_host(xs, DLA_F32, "", DLA_DIMS(2, N));
    dla_train_data good = {.predictors = xt, .targets = targets[0]};
    dla_train_data bad = {.predictors = x, .targets = targets[0]};
    o.validation_data = &bad;
    assert_int_equal(dla_trainnet(&good, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: ValidationData: predictors (100x2"));
    o.validation_data = NULL;
    double v;
    assert_int_equal(dla_testnet(net, &bad, "accuracy", NULL, &v), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_testnet: data: predictors (100x2"));
    /* A regression's responses: no word of classes either. */
    dla_layer *r[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(1, NULL)};
    dla_net *rn = dla_net_create(2, r);
    assert_non_null(rn);
    dla_train_data rd = {.predictors = x,
                         .targets = dla_tensor_from_host(rs, DLA_F32, "", DLA_DIMS(N, 1))};
    assert_int_equal(dla_trainnet(&rd, rn, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "have 100 along dim 1 (\"C\")"));
    assert_null(strstr(dla_last_error(), "classes"));
    /* Unformatted sequences, C x N x T: their observations are read along
     * the last dim, T, which a "CBT" input cannot take; the targets'
     * check spoke of class counts, having counted the steps. */
    dla_layer *q[] = {dla_sequence_input_layer(2, NULL),
                      dla_lstm_layer(3, &(dla_lstm_layer_options){.output_mode = "last"}),
                      dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *qn = dla_net_create(4, q);
    assert_non_null(qn);
    dla_train_data sd = {.predictors = dla_reshape(xt, "", DLA_DIMS(2, 10, 10)),
                         .targets = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(1, 10))};
    assert_int_equal(dla_trainnet(&sd, qn, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: data: predictors (2x10x10 single"));
    assert_non_null(strstr(dla_last_error(), "are unformatted, so their observations are read "
                                             "along their last dim (3), but the network's input "
                                             "takes \"CBT\" data, its observations at dim 2"));
    assert_null(strstr(dla_last_error(), "classes"));
    sd.predictors = dla_reshape(xt, "CBT", DLA_DIMS(2, 10, 10));
    assert_int_equal(dla_trainnet(&sd, qn, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    dla_net_free(trained);
    dla_net_free(qn);
    /* Predictors of that layout still train. */
    rd.predictors = xt;
    rd.targets = dla_tensor_from_host(rs, DLA_F32, "", DLA_DIMS(1, N));
    assert_int_equal(dla_trainnet(&rd, rn, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_OK);
    dla_net_free(trained);
    /* An input given by example (no input layer) has no fixed size: a
     * convolutional network trained on 4x4 images validates and tests on
     * 5x5 ones. */
    float px[5 * 5 * 8];
    for (int i = 0; i < 5 * 5 * 8; i++)
        px[i] = (float)sin(i);
    dla_layer *c[] = {dla_conv2d_layer(3, 3, 2, NULL), dla_relu_layer(NULL),
                      dla_global_avgpool2d_layer(NULL), dla_fc_layer(2, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *cn = dla_net_create(5, c);
    assert_non_null(cn);
    dla_tensor *t8 = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(1, 8));
    dla_train_data small = {.predictors = dla_tensor_from_host(px, DLA_F32, "SSCB",
                                                               DLA_DIMS(4, 4, 1, 8)),
                            .targets = t8},
                   large = {.predictors = dla_tensor_from_host(px, DLA_F32, "SSCB",
                                                               DLA_DIMS(5, 5, 1, 8)),
                            .targets = t8};
    o.validation_data = &large;
    o.mini_batch_size = 4;
    if (dla_trainnet(&small, cn, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL) !=
        DLA_OK)
        fail_msg("validation on larger images: %s", dla_last_error());
    assert_int_equal(dla_testnet(trained, &large, "accuracy", NULL, &v), DLA_OK);
    o.validation_data = NULL;
    dla_net_free(trained);
    dla_net_free(cn);
    dla_net_free(rn);
    dla_net_free(net);
    dla_scope_end();
}

static void one_hot_targets_of_another_class_count_are_named(void **state)
{
    (void)state;
    enum { N = 64 };
    dla_tensor *x, *t;
    blobs(N, 21, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 16;
    int32_t *v = labels_of(t);
    for (int i = 0; i < N; i++)
        v[i] = v[i] > 2 ? 2 : v[i];
    dla_scope_begin();
    dla_tensor *t3 = dla_onehotencode(dla_tensor_from_host(v, DLA_I32, "CB", DLA_DIMS(1, N)), 3, NULL);
    free(v);
    assert_int_equal(dla_tensor_status(t3), DLA_OK);
    dla_train_data d = {.predictors = x, .targets = t3};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_SHAPE);
    assert_null(trained);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: data: targets (3x64 single CB"));
    assert_non_null(strstr(dla_last_error(), "have 3 classes along C where the network's output "
                                             "(\"CB\") has 4"));
    assert_null(strstr(dla_last_error(), "unset"));
    /* Unformatted 3 x N: read in the output's format, the same message. */
    d.targets = dla_reshape(t3, "", DLA_DIMS(3, N));
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "have 3 classes along C"));
    assert_null(strstr(dla_last_error(), "int32"));
    /* Class numbers as double are responses, one per observation: the
     * message said "1 classes" and no more. */
    d.targets = dla_cast(t, DLA_F64);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "have 1 class along C"));
    assert_non_null(strstr(dla_last_error(), "if they are class numbers, give them as int32 "
                                             "(0..K-1): other dtypes are responses"));
    dla_scope_end();
    /* A custom loss that fails: its own message, not feval's. */
    d.targets = t;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = refusing_loss}, &o, &trained,
                                  NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: epoch 1, iteration 1: my_loss: refused"));
    assert_null(strstr(dla_last_error(), "unset"));
    dla_net_free(trained); /* training had started: the network comes back */
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* Targets in MATLAB's layout, one row per observation (N-by-R responses
 * or N-by-K scores, a column of N labels), were refused as a class-count
 * mismatch ("have 64 classes along C where the network's output has 4")
 * that said nothing of the layout: the message now says the rows are
 * observations and how to pass them; int32 labels of another count than
 * the observations, read as responses, say that too. */
static void targets_with_one_row_per_observation_are_named(void **state)
{
    (void)state;
    enum { N = 64 };
    dla_tensor *x, *t;
    blobs(N, 22, &x, &t);
    dla_net *net = mlp(), *trained = NULL;
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 16;
    dla_scope_begin();
    /* N x 4 one-hot scores, unformatted: read as 64 classes of 4 observations. */
    dla_tensor *rows = dla_permute(dla_onehotencode(dla_reshape(t, "", DLA_DIMS(1, N)), CLASSES,
                                                    NULL), 2, (const int64_t[]){2, 1});
    dla_train_data d = {.predictors = x, .targets = rows};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_ERR_SHAPE);
    assert_null(trained);
    assert_non_null(strstr(dla_last_error(), "have 64 classes along C"));
    assert_non_null(strstr(dla_last_error(), "one row per observation (64-by-4, MATLAB's layout)"));
    assert_non_null(strstr(dla_last_error(), "transpose them (dla_permute) or make them with "
                                             "format \"BC\""));
    /* Transposed as the message says, they train. */
    d.targets = dla_permute(rows, 2, (const int64_t[]){2, 1});
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_OK);
    dla_net_free(trained);
    trained = NULL;
    /* A column of N class numbers as double: N classes, and int32 is the hint. */
    d.targets = dla_reshape(dla_cast(t, DLA_F64), "", DLA_DIMS(N, 1));
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "give them as int32"));
    assert_null(strstr(dla_last_error(), "one row per observation"));
    /* int32 labels of one observation too few: responses, and said so. */
    d.targets = dla_slice(dla_reshape(t, "", DLA_DIMS(N)), 1, 0, 1, N - 1);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "int32 targets need one per observation (64), not 63"));
    assert_null(trained);
    /* int32 0/1 labels for a one-channel (sigmoid) output: class numbers
     * of one class, 0..0; the message said no more than that. */
    dla_rng_seed(7);
    dla_layer *l1[] = {dla_fc_layer(1, NULL), dla_sigmoid_layer(NULL)};
    dla_net *one = dla_net_create(2, l1);
    int32_t *v = labels_of(t);
    for (int i = 0; i < N; i++)
        v[i] &= 1;
    d.targets = dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(1, N));
    assert_int_equal(dla_trainnet(&d, one, &(dla_train_loss){.name = "binary-crossentropy"}, &o,
                                  &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "which is not a class number in 0..0"));
    assert_non_null(strstr(dla_last_error(), "give 0/1 labels of binary classification"));
    assert_null(strstr(dla_last_error(), "1-based"));
    /* As single, as the message says, they train. */
    float f[N];
    for (int i = 0; i < N; i++)
        f[i] = (float)v[i];
    free(v);
    d.targets = dla_tensor_from_host(f, DLA_F32, "", DLA_DIMS(1, N));
    assert_int_equal(dla_trainnet(&d, one, &(dla_train_loss){.name = "binary-crossentropy"}, &o,
                                  &trained, NULL), DLA_OK);
    dla_net_free(trained);
    dla_net_free(one);
    dla_scope_end();
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static int iterations_run;
static int count_runs(void *ctx, const dla_training_state *s)
{
    (void)ctx;
    iterations_run += !strcmp(s->stage, "iteration");
    return 0;
}

/* Before: a chart in a folder that does not exist failed after the first
 * epoch, naming the temporary file ("p.svg.tmp14099"), with the network
 * lost. */
static void a_bad_output_path_fails_before_the_first_iteration(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(64, 22, &x, &t);
    dla_net *net = mlp(), *trained;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_train_loss ce = {.name = "crossentropy"};
    tu_sink out;
    assert_non_null(tu_sink_open(&out));
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 16;
    o.output = out.f;
    o.output_fn = count_runs;
    o.plots = "training-progress";
    o.plots_path = "/nonexistent-dla-folder/p.svg";
    iterations_run = 0;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, &info), DLA_ERR_IO);
    assert_int_equal(iterations_run, 0);
    assert_null(trained);
    assert_null(info);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: Plots: /nonexistent-dla-folder (the "
                                             "folder of /nonexistent-dla-folder/p.svg): No such "
                                             "file or directory (checked before training)"));
    assert_null(strstr(dla_last_error(), "tmp"));

    /* An empty chart path: it passed the check, and the chart after the
     * first epoch failed ("argument path is NULL or empty"). */
    o.plots_path = "";
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, &info), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(iterations_run, 0);
    assert_null(trained);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: Plots: plots_path is \"\""));

    /* A folder where the file should be. */
    char dir[] = "/tmp/dla-train-paths-XXXXXX";
    assert_non_null(mkdtemp(dir));
    o.plots_path = dir;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "is a folder; give a file name"));

    /* A checkpoint "folder" that is a file. */
    char file[4200];
    snprintf(file, sizeof file, "%s/not-a-folder", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    o.plots = NULL;
    o.checkpoint_path = file;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_IO);
    assert_int_equal(iterations_run, 0);
    char want[4300];
    snprintf(want, sizeof want, "dla_trainnet: CheckpointPath: %s is not a folder", file);
    assert_non_null(strstr(dla_last_error(), want));
    /* A folder without write permission (root writes anywhere: skipped). */
    if (geteuid() != 0) {
        char ro[4200];
        snprintf(ro, sizeof ro, "%s/read-only", dir);
        assert_int_equal(mkdir(ro, 0500), 0);
        o.checkpoint_path = ro;
        assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_IO);
        assert_non_null(strstr(dla_last_error(), "cannot write in"));
        assert_int_equal(iterations_run, 0);
        rmdir(ro);
    }
    /* A folder so deep that a checkpoint's path passes 4095 bytes: it ran
     * an epoch, then the first checkpoint's name was cut. */
    char deep[4200];
    int len = snprintf(deep, sizeof deep, "%s", dir);
    while (len < 4000) {
        len += snprintf(deep + len, sizeof deep - (size_t)len, "/%0200d", 0);
        assert_true(mkdir(deep, 0700) == 0 || errno == EEXIST);
    }
    o.checkpoint_path = deep;
    assert_int_equal(dla_trainnet(&d, net, &ce, &o, &trained, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(iterations_run, 0);
    assert_non_null(strstr(dla_last_error(), "with a checkpoint's file name (up to 70 more) the "
                                             "paths would pass 4095"));
    while (len > (int)strlen(dir)) {
        rmdir(deep);
        len -= 201;
        deep[len] = '\0';
    }
    unlink(file);
    rmdir(dir);
    free(tu_sink_text(&out));
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static int fail_from; /* the iteration at which failing_loss starts failing */
static int loss_calls;
static dla_status failing_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    if (++loss_calls >= fail_from)
        return dla_set_error(DLA_ERR_DEVICE, "my_loss: the device went away");
    out[0] = dla_crossentropy(in[0], in[1], NULL);
    return dla_tensor_status(out[0]);
}

static int stop_after;
static const char *remove_dir;
static int stop_or_remove(void *ctx, const dla_training_state *s)
{
    (void)ctx;
    if (remove_dir && s->iteration == 1)
        assert_int_equal(rmdir(remove_dir), 0);
    return stop_after && s->iteration >= stop_after;
}

static void assert_same_learnables(dla_net *a, dla_net *b)
{
    int n = dla_net_learnable_count(a);
    assert_int_equal(n, dla_net_learnable_count(b));
    for (int i = 0; i < n; i++) {
        dla_tensor *p = dla_table_value(dla_net_learnables(a), i),
                   *q = dla_table_value(dla_net_learnables(b), i);
        for (int64_t k = 0; k < dla_tensor_numel(p); k++) {
            assert_true(isfinite(dla_tensor_item(p, k)));
            assert_true(dla_tensor_item(p, k) == dla_tensor_item(q, k));
        }
    }
}

/* Before: an LSTM network's checkpoint held its H x N state, which
 * dla_net_load refused ("the architecture makes it H x 1"). */
static void checkpoints_of_an_lstm_network_load_back(void **state)
{
    (void)state;
    char dir[] = "/tmp/dla-train-lstm-ckpt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    dla_tensor *t;
    dla_seqlist *s = drifts(40, &t);
    dla_rng_seed(3);
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL),
                      dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "last"}),
                      dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, l), *trained = NULL;
    assert_non_null(net);
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 10;
    o.checkpoint_path = dir;
    o.checkpoint_frequency_unit = "iteration";
    o.checkpoint_frequency = 2;
    assert_int_equal(dla_trainnet(&(dla_train_data){.sequences = s, .targets = t}, net,
                                  &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                     DLA_OK);
    DIR *dd = opendir(dir);
    assert_non_null(dd);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dd))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        dla_net *loaded = NULL;
        if (dla_net_load(path, &loaded) != DLA_OK)
            fail_msg("%s: %s", e->d_name, dla_last_error());
        assert_int_equal(dla_tensor_dim(dla_table_value(dla_net_state(loaded), 0), 2), 10);
        dla_net_free(loaded);
        unlink(path);
        files++;
    }
    closedir(dd);
    rmdir(dir);
    assert_int_equal(files, 2);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(s);
    dla_tensor_release(t);
}

/* Before: trainnet trained a copy whose factors were reset to the
 * defaults, so a layer frozen with learn-rate factor 0 still trained. */
static void learn_rate_factors_freeze_layers_in_trainnet(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(256, 1, &x, &t);
    dla_net *net = mlp(), *trained = NULL;
    dla_tensor *ex = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 1));
    assert_int_equal(dla_net_init(net, 1, &ex), DLA_OK);
    dla_tensor_release(ex);
    dla_table *lt = dla_net_learnables(net);
    /* fc_1 frozen (its Weights and Bias), fc_2 at twice the L2. */
    for (int i = 0; i < dla_table_count(lt); i++)
        assert_int_equal(dla_table_set_factors(lt, i, i < 2 ? 0.0 : 1.0, i < 2 ? 0.0 : 2.0), DLA_OK);
    dla_training_options o = quiet();
    o.max_epochs = 2;
    o.mini_batch_size = 64;
    o.l2_regularization = 1e-3;
    dla_train_data d = {.predictors = x, .targets = t};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  NULL), DLA_OK);
    dla_table *tt = dla_net_learnables(trained);
    for (int i = 0; i < dla_table_count(lt); i++) {
        assert_true(dla_table_learn_rate_factor(tt, i) == (i < 2 ? 0.0 : 1.0));
        assert_true(dla_table_l2_factor(tt, i) == (i < 2 ? 0.0 : 2.0));
        dla_tensor *a = dla_table_value(lt, i), *b = dla_table_value(tt, i);
        int changed = 0;
        for (int64_t k = 0; k < dla_tensor_numel(a); k++)
            changed |= dla_tensor_item(a, k) != dla_tensor_item(b, k);
        if (changed != (i >= 2))
            fail_msg("row %d (%s/%s): %s", i, dla_table_layer(lt, i), dla_table_parameter(lt, i),
                     changed ? "frozen but trained" : "did not train");
    }
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* Before: any failure after training started freed the network. */
static void a_failure_during_training_returns_the_network_so_far(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(128, 23, &x, &t);
    dla_net *net = mlp(), *trained, *ref;
    dla_training_info *info;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 3;
    o.mini_batch_size = 32; /* 4 iterations per epoch */
    o.output_fn = stop_or_remove;
    /* The reference: the same training stopped after iteration 6. */
    fail_from = 1000, loss_calls = 0, stop_after = 6, remove_dir = NULL;
    dla_rng_seed(3); /* the initial weights trainnet draws */
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = failing_loss}, &o, &ref, NULL),
                     DLA_OK);
    /* The loss fails at iteration 7: the network of iteration 6 comes back
     * with the error and the history. */
    fail_from = 7, loss_calls = 0, stop_after = 0;
    dla_rng_seed(3);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = failing_loss}, &o, &trained,
                                  &info), DLA_ERR_DEVICE);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: epoch 2, iteration 7: my_loss: the "
                                             "device went away"));
    assert_non_null(trained);
    assert_non_null(info);
    assert_int_equal(info->iterations, 6);
    assert_int_equal(info->output_network_iteration, 6);
    assert_same_learnables(trained, ref);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(ref);

    /* The chart's folder disappears during the first epoch: the error at
     * its end names the user's path, and the network comes back. */
    char dir[] = "/tmp/dla-train-gone-XXXXXX", path[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/chart.svg", dir);
    tu_sink out;
    assert_non_null(tu_sink_open(&out));
    o.output = out.f;
    o.plots = "training-progress";
    o.plots_path = path;
    remove_dir = dir;
    fail_from = 1000, loss_calls = 0;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = failing_loss}, &o, &trained,
                                  &info), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), path));
    assert_null(strstr(dla_last_error(), ".tmp"));
    assert_non_null(trained);
    assert_int_equal(info->iterations, 4);
    assert_int_equal(info->output_network_iteration, 4);
    assert_true(dla_net_initialized(trained));
    dla_training_info_free(info);
    dla_net_free(trained);
    free(tu_sink_text(&out));
    remove_dir = NULL;
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static int nan_at; /* the call at which nan_loss returns NaN */
static dla_status nan_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_crossentropy(in[0], in[1], NULL);
    if (++loss_calls == nan_at)
        out[0] = dla_affine(out[0], 1.0, NAN);
    return dla_tensor_status(out[0]);
}

/* The row of iteration it in a verbose table, without its newline. */
static void table_row(const char *text, int it, char *line, size_t size)
{
    char key[32];
    snprintf(key, sizeof key, "| %11d |", it);
    const char *row = strstr(text, key);
    assert_non_null(row);
    const char *end = strchr(row, '\n');
    assert_non_null(end);
    snprintf(line, size, "%.*s", (int)(end - row), row);
}

/* The stop reason names the layer whole: a name of 100 characters was
 * cut at 63 bytes of the reason before (stop_reason[64]). */
static void a_long_layer_name_is_whole_in_the_stop_reason(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(64, 24, &x, &t);
    float xs[128];
    assert_int_equal(dla_tensor_to_host(x, xs, sizeof xs), DLA_OK);
    xs[0] = NAN;
    dla_tensor *xn = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, 64));
    char name[101];
    for (int i = 0; i < 100; i++)
        name[i] = (char)('a' + i % 26);
    name[100] = '\0';
    dla_rng_seed(7);
    dla_layer *l[] = {dla_fc_layer(8, &(dla_fc_layer_options){.name = name}), dla_relu_layer(NULL),
                      dla_fc_layer(CLASSES, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, l), *trained;
    assert_non_null(net);
    dla_training_info *info;
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = 32;
    o.shuffle = "never";
    assert_int_equal(dla_trainnet(&(dla_train_data){.predictors = xn, .targets = t}, net,
                                  &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info),
                     DLA_ERR_STATE);
    char want[200];
    snprintf(want, sizeof want, "Gradient of %s/Weights is not finite", name);
    assert_string_equal(info->stop_reason, want);
    assert_non_null(strstr(dla_last_error(), name));
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(xn);
    dla_tensor_release(t);
}

/* Before: NaN predictors trained to NaN weights with DLA_OK (the relu
 * after the first layer turns the NaN into 0, so the loss stayed finite
 * while the first layer's gradient and weights were NaN), and a NaN loss
 * printed as a blank cell, as if it had not been computed. */
static void a_non_finite_loss_or_gradient_stops_training_with_an_error(void **state)
{
    (void)state;
    dla_tensor *x, *t;
    blobs(128, 24, &x, &t);
    float xs[256];
    assert_int_equal(dla_tensor_to_host(x, xs, sizeof xs), DLA_OK);
    xs[2 * 70] = NAN; /* observation 70: the third mini-batch of 32 */
    dla_tensor *xn = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, 128));
    dla_net *net = mlp(), *trained, *ref;
    dla_training_info *info;
    dla_train_data d = {.predictors = xn, .targets = t};
    dla_training_options o = quiet();
    o.max_epochs = 3;
    o.mini_batch_size = 32;
    o.shuffle = "never";
    o.metrics = "accuracy";
    o.output_fn = stop_or_remove;
    fail_from = 1000, loss_calls = 0, stop_after = 2, remove_dir = NULL;
    dla_rng_seed(5);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &ref,
                                  NULL), DLA_OK);
    stop_after = 0;
    tu_sink out;
    assert_non_null(tu_sink_open(&out));
    o.output = out.f;
    o.verbose = 1;
    o.verbose_frequency = 1;
    dla_rng_seed(5);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                  &info), DLA_ERR_STATE);
    char *text = tu_sink_text(&out);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: epoch 1, iteration 3: gradient of "
                                             "fc_1/Weights is not finite (the loss, "));
    assert_non_null(strstr(dla_last_error(), "is finite); training stopped, and *trained holds "
                                             "the network of iteration 2"));
    assert_non_null(trained);
    assert_same_learnables(trained, ref); /* finite: the NaN update was not applied */
    assert_int_equal(info->iterations, 3);
    assert_string_equal(info->stop_reason, "Gradient of fc_1/Weights is not finite");
    assert_int_equal(info->output_network_iteration, 2);
    assert_non_null(strstr(text, "Training stopped: Gradient of fc_1/Weights is not finite."));
    free(text);
    dla_training_info_free(info);
    dla_net_free(trained);

    /* A NaN loss at iteration 6 (epoch 2): stopped, and NaN in the table. */
    d.predictors = x;
    assert_non_null(tu_sink_open(&out));
    o.output = out.f;
    nan_at = 6, loss_calls = 0;
    dla_rng_seed(5);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.fn = nan_loss}, &o, &trained, &info),
                     DLA_ERR_STATE);
    text = tu_sink_text(&out);
    assert_non_null(strstr(dla_last_error(), "dla_trainnet: epoch 2, iteration 6: training loss is "
                                             "NaN; training stopped, and *trained holds the "
                                             "network of iteration 5"));
    assert_int_equal(info->iterations, 6);
    assert_true(isnan(info->training_loss[5]));
    assert_string_equal(info->stop_reason, "Training loss is NaN");
    for (int i = 0; i < dla_net_learnable_count(trained); i++) {
        dla_tensor *p = dla_table_value(dla_net_learnables(trained), i);
        for (int64_t k = 0; k < dla_tensor_numel(p); k++)
            assert_true(isfinite(dla_tensor_item(p, k)));
    }
    char line[512];
    table_row(text, 6, line, sizeof line);
    assert_non_null(strstr(line, "|          NaN |")); /* the loss cell */
    table_row(text, 5, line, sizeof line);
    assert_null(strstr(line, "NaN"));
    assert_non_null(strstr(text, "Training stopped: Training loss is NaN."));
    free(text);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(ref);
    dla_net_free(net);
    dla_tensor_release(xn);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* OutputNetwork "best-validation" holds when training stops at a
 * non-finite loss: the network of the best validation is returned, as at
 * any other end of training. Before: the network of the iteration before
 * the bad one came back, here one whose validation loss was Inf, with
 * output_network_iteration and the final validation figures its. A
 * learning rate of 1e150 on a linear regression: the validation loss is
 * finite after iteration 1, Inf after 2, and the training loss of
 * iteration 3 is Inf. */
static void best_validation_is_returned_when_training_diverges(void **state)
{
    (void)state;
    dla_layer *l[] = {dla_feature_input_layer(2, NULL),
                      dla_fc_layer(1, &(dla_fc_layer_options){.name = "fc"})};
    dla_net *net = dla_net_create(2, l), *trained = NULL;
    assert_non_null(net);
    const double x[10] = {1, 2, -1, 0.5, 0.3, -2, 2, 1, -0.7, 0.4}, t[5] = {0.5, -1, 2, 1.5, 0};
    const double xv[6] = {0.2, 0.1, -1.5, 1, 1, -1}, tv[3] = {-3, 2, -1.2};
    dla_tensor *xt = dla_tensor_from_host(x, DLA_F64, "CB", DLA_DIMS(2, 5));
    dla_tensor *tt = dla_tensor_from_host(t, DLA_F64, "CB", DLA_DIMS(1, 5));
    dla_tensor *xvt = dla_tensor_from_host(xv, DLA_F64, "CB", DLA_DIMS(2, 3));
    dla_tensor *tvt = dla_tensor_from_host(tv, DLA_F64, "CB", DLA_DIMS(1, 3));
    dla_train_data d = {.predictors = xt, .targets = tt}, v = {.predictors = xvt, .targets = tvt};
    /* Weights of one's own, so that the steps are known. */
    dla_tensor *ex = dla_zeros(DLA_F64, "CB", DLA_DIMS(2, 1));
    assert_int_equal(dla_net_init(net, 1, &ex), DLA_OK);
    dla_tensor_release(ex);
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    dla_table *lt = dla_net_learnables(net);
    dla_tensor *w0 = dla_tensor_from_host((double[]){0.3, -0.2}, DLA_F64, "", DLA_DIMS(1, 2));
    dla_tensor *b0 = dla_tensor_from_host((double[]){0.1}, DLA_F64, "", DLA_DIMS(1, 1));
    assert_int_equal(dla_table_set_value(lt, dla_table_find(lt, "fc", "Weights"), w0), DLA_OK);
    assert_int_equal(dla_table_set_value(lt, dla_table_find(lt, "fc", "Bias"), b0), DLA_OK);
    dla_tensor_release(w0);
    dla_tensor_release(b0);
    dla_training_options o = quiet();
    o.l2_regularization = 0.01;
    o.max_epochs = 6;
    o.mini_batch_size = 2;
    o.shuffle = "never";
    o.initial_learn_rate = 1e150;
    o.validation_data = &v;
    o.validation_frequency = 1;
    o.output_network = "best-validation";
    dla_training_info *info = NULL;
    dla_rng_seed(3);
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info),
                     DLA_ERR_STATE);
    assert_non_null(strstr(dla_last_error(), "*trained holds the network of iteration 1, the best "
                                             "validation (OutputNetwork \"best-validation\")"));
    assert_string_equal(info->stop_reason, "Training loss is Inf");
    assert_int_equal(info->iterations, 3);
    assert_int_equal(info->validations, 2);
    assert_true(isfinite(info->validation_loss[0]) && isinf(info->validation_loss[1]));
    assert_int_equal(info->output_network_iteration, 1);
    assert_true(info->final_validation_loss == info->validation_loss[0]);
    double loss = NAN;
    assert_int_equal(dla_testnet(trained, &v, "mse", NULL, &loss), DLA_OK);
    tu_assert_near(loss, info->validation_loss[0], 1e-12 * info->validation_loss[0]);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_tensor_release(xt);
    dla_tensor_release(tt);
    dla_tensor_release(xvt);
    dla_tensor_release(tvt);
}

/* The named losses are normalized as MATLAB's trainnet normalizes them:
 * "mse" of 3 responses is the mean over all 24 squared errors (the RMSE
 * metric squared), not 3 times it as the batch size alone made it; so is
 * "huber". */
static void named_losses_are_normalized_as_matlabs_trainnet(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { N = 8, R = 3 };
    float x[2 * N], t[R * N];
    for (int i = 0; i < 2 * N; i++)
        x[i] = (float)sin(i + 1.0);
    for (int i = 0; i < R * N; i++)
        t[i] = (float)cos(0.7 * i);
    dla_tensor *X = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N));
    dla_tensor *T = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(R, N));
    dla_rng_seed(1);
    dla_layer *l[] = {dla_fc_layer(R, NULL)};
    dla_net *net = dla_net_create(1, l), *trained;
    dla_training_options o = {.verbose = -1, .max_epochs = 1, .mini_batch_size = N,
                              .shuffle = "never", .metrics = "rmse"};
    dla_training_info *info;
    if (dla_trainnet(&(dla_train_data){.predictors = X, .targets = T}, net,
                     &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    const double loss = info->training_loss[0], rmse = info->training_rmse[0];
    if (!(fabs(loss - rmse * rmse) <= 1e-5 * loss))
        fail_msg("mse %g, the RMSE metric squared %g", loss, rmse * rmse);
    dla_training_info_free(info);
    dla_net_free(trained);
    /* "huber" is the mean of the elements' Huber losses (transition point
     * 1): the first iteration's loss is that of the untrained network. */
    dla_tensor *y;
    if (dla_net_init(net, 1, &X) != DLA_OK || dla_net_predict(net, 1, &X, 1, &y, NULL) != DLA_OK)
        fail_msg("%s", dla_last_error());
    const double want = dla_tensor_item(
        dla_huber(y, T, &(dla_huber_options){.normalization_factor = "all-elements"}), 0);
    if (dla_trainnet(&(dla_train_data){.predictors = X, .targets = T}, net,
                     &(dla_train_loss){.name = "huber"}, &o, &trained, &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    if (!(fabs(info->training_loss[0] - want) <= 1e-5 * want))
        fail_msg("huber %g, want %g", info->training_loss[0], want);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* A network of two outputs (or inputs) is refused by trainnet, testnet and
 * minibatchpredict naming them: the counts alone ("1 input and 2
 * outputs") did not say which layer's output nothing reads. */
static void a_network_of_two_outputs_is_refused_naming_them(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(2, &(dla_feature_input_options){.name = "in"}),
                      dla_fc_layer(3, &(dla_fc_layer_options){.name = "a"}),
                      dla_fc_layer(1, &(dla_fc_layer_options){.name = "b"})};
    dla_net *net = dla_net_create(3, l), *trained = NULL;
    assert_non_null(net);
    dla_layer *c = dla_fc_layer(1, &(dla_fc_layer_options){.name = "c"});
    assert_int_equal(dla_net_add_layers(net, 1, &c), DLA_OK);
    assert_int_equal(dla_net_connect(net, "a", "c"), DLA_OK);
    dla_train_data d = {.predictors = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 4)),
                        .targets = dla_zeros(DLA_F32, "CB", DLA_DIMS(1, 4))};
    assert_int_equal(dla_net_init(net, 1, &d.predictors), DLA_OK);
    dla_training_options o = quiet();
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "the network has 1 input and 2 outputs; trainnet takes one of "
                                  "each; inputs \"in\"; outputs \"b\", \"c\""))
        fail_msg("%s", dla_last_error());
    assert_null(trained);
    dla_tensor *y = NULL;
    assert_int_equal(dla_minibatchpredict(net, &d, NULL, &y), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "outputs \"b\", \"c\""))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    dla_scope_end();
}

/* Metrics "accuracy" of a one-channel output (binary classification: a
 * sigmoid's probability of class 1 and 0/1 targets) counts a hit where
 * output and target are on the same side of 0.5. The largest of one
 * channel is always channel 0, so every observation was a hit: 100% in
 * training, validation and testnet, however wrong the network. */
static void accuracy_of_one_channel_thresholds_at_a_half(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { N = 8 };
    const double x1[N] = {-2, -1, 1, 2, -3, 3, 0.5, -0.5}, tv[N] = {0, 1, 1, 0, 0, 1, 1, 1};
    double x[2 * N];
    for (int j = 0; j < N; j++) {
        x[2 * j] = x1[j];
        x[2 * j + 1] = cos(j);
    }
    /* y = sigmoid(x1): class 1 where x1 > 0; hits 0, 2, 4, 5, 6 of 8. */
    dla_train_data d = {.predictors = dla_tensor_from_host(x, DLA_F64, "CB", DLA_DIMS(2, N)),
                        .targets = dla_tensor_from_host(tv, DLA_F64, "CB", DLA_DIMS(1, N))};
    dla_layer *l[] = {dla_fc_layer(1, NULL), dla_sigmoid_layer(NULL)};
    dla_net *net = dla_net_create(2, l), *trained;
    assert_int_equal(dla_net_init(net, 1, &d.predictors), DLA_OK);
    const double w[2] = {1, 0};
    assert_int_equal(dla_net_set(net, "fc", "Weights",
                                 dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(1, 2))), DLA_OK);
    dla_training_options o = quiet();
    o.max_epochs = 1;
    o.mini_batch_size = N;
    o.shuffle = "never";
    o.metrics = "accuracy";
    o.initial_learn_rate = 1e-12;
    o.validation_data = &d;
    dla_training_info *info;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "binary-crossentropy"}, &o, &trained,
                     &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    double acc;
    /* Batches of 3, 3 and 2: each weighs its observations. */
    assert_int_equal(dla_testnet(trained, &d, "accuracy", &(dla_predict_options){.mini_batch_size = 3},
                                 &acc), DLA_OK);
    tu_assert_near(info->training_accuracy[0], 62.5, 1e-9);
    tu_assert_near(info->final_validation_accuracy, 62.5, 1e-9);
    tu_assert_near(acc, 62.5, 1e-9);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* trainnet's updates against MATLAB's formulas written out in double:
 * fc(3) - fc(2) on 7 observations, mini-batches of 3 with the partial
 * last one returned, "mse" (the mean of the squared errors), L2
 * regularization added to the gradient with each row's L2 factor, then
 * each GradientThresholdMethod ("l2norm" per learnable, "global-l2norm"
 * over all, "absolute-value" per element), then the solver's step with
 * each row's learn-rate factor (0 freezes a row), Adam's iteration
 * counting from 1 over the epochs. */
enum { HC = 4, HH = 3, HR = 2, HN = 7 };
typedef struct hand_params {
    double w1[HH * HC], b1[HH], w2[HR * HH], b2[HR];
} hand_params;

static double *hand_row(hand_params *p, int i)
{
    return i == 0 ? p->w1 : i == 1 ? p->b1 : i == 2 ? p->w2 : p->b2;
}

static const int hand_numel[4] = {HH * HC, HH, HR * HH, HR};

/* The loss of observations first..first+b-1 and its gradients into g. */
static double hand_step(hand_params *p, const double *x, const double *t, int first, int b,
                        hand_params *g)
{
    memset(g, 0, sizeof *g);
    double loss = 0;
    for (int j = first; j < first + b; j++) {
        double h[HH], dy[HR];
        for (int a = 0; a < HH; a++) {
            h[a] = p->b1[a];
            for (int c = 0; c < HC; c++)
                h[a] += p->w1[a + HH * c] * x[c + HC * j];
        }
        for (int r = 0; r < HR; r++) {
            double y = p->b2[r];
            for (int a = 0; a < HH; a++)
                y += p->w2[r + HR * a] * h[a];
            const double e = y - t[r + HR * j];
            loss += e * e / (HR * b);
            dy[r] = 2 * e / (HR * b);
            g->b2[r] += dy[r];
            for (int a = 0; a < HH; a++)
                g->w2[r + HR * a] += dy[r] * h[a];
        }
        for (int a = 0; a < HH; a++) {
            double dh = 0;
            for (int r = 0; r < HR; r++)
                dh += p->w2[r + HR * a] * dy[r];
            g->b1[a] += dh;
            for (int c = 0; c < HC; c++)
                g->w1[a + HH * c] += dh * x[c + HC * j];
        }
    }
    return loss;
}

static void updates_by_hand(const double lrf[4])
{
    static const char *const solvers[] = {"sgdm", "adam", "rmsprop"};
    static const char *const methods[] = {"l2norm", "global-l2norm", "absolute-value"};
    const double l2f[4] = {1, 2, 3, 0.5}, l2 = 0.01, thr = 0.05;
    double x[HC * HN], t[HR * HN];
    for (int i = 0; i < HC * HN; i++)
        x[i] = 2 * sin(1.3 * i + 0.2);
    for (int i = 0; i < HR * HN; i++)
        t[i] = 3 * cos(0.7 * i);
    for (int s = 0; s < 3; s++)
        for (int m = 0; m < 3; m++) {
            dla_scope_begin();
            dla_train_data d = {.predictors = dla_tensor_from_host(x, DLA_F64, "CB", DLA_DIMS(HC, HN)),
                                .targets = dla_tensor_from_host(t, DLA_F64, "CB", DLA_DIMS(HR, HN))};
            dla_rng_seed(3);
            dla_layer *l[] = {dla_fc_layer(HH, NULL), dla_fc_layer(HR, NULL)};
            dla_net *net = dla_net_create(2, l), *trained;
            assert_int_equal(dla_net_init(net, 1, &d.predictors), DLA_OK);
            dla_table *lt = dla_net_learnables(net);
            hand_params p, g, s1 = {0}, s2 = {0};
            for (int i = 0; i < 4; i++) {
                assert_int_equal(dla_table_set_factors(lt, i, lrf[i], l2f[i]), DLA_OK);
                assert_int_equal(dla_tensor_to_host(dla_table_value(lt, i), hand_row(&p, i),
                                                    sizeof(double) * (size_t)hand_numel[i]), DLA_OK);
            }
            dla_training_options o = {.verbose = -1, .solver = solvers[s], .max_epochs = 2,
                                      .mini_batch_size = 3, .shuffle = "never",
                                      .partial_mini_batch = "return", .l2_regularization = l2,
                                      .gradient_threshold = thr,
                                      .gradient_threshold_method = methods[m]};
            dla_training_info *info;
            if (dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
                fail_msg("%s %s: %s", solvers[s], methods[m], dla_last_error());
            assert_int_equal(info->iterations, 6);
            const double lr0 = s ? 0.001 : 0.01;
            for (int it = 1; it <= 6; it++) {
                const int first = (it - 1) % 3 * 3, b = first + 3 > HN ? HN - first : 3;
                const double loss = hand_step(&p, x, t, first, b, &g);
                tu_assert_near(info->training_loss[it - 1], loss, 1e-12 * loss);
                /* A frozen row takes no L2 term; a layer whose rows are
                 * all frozen counts in no norm (MATLAB computes no
                 * gradient for it). */
                double all = 0;
                for (int i = 0; i < 4; i++) {
                    const int layer_learns = lrf[i & ~1] != 0 || lrf[i | 1] != 0;
                    for (int k = 0; k < hand_numel[i]; k++) {
                        if (lrf[i] != 0)
                            hand_row(&g, i)[k] += l2 * l2f[i] * hand_row(&p, i)[k];
                        if (layer_learns)
                            all += hand_row(&g, i)[k] * hand_row(&g, i)[k];
                    }
                }
                for (int i = 0; i < 4; i++) {
                    double *gi = hand_row(&g, i), *pi = hand_row(&p, i), own = 0;
                    double *v1 = hand_row(&s1, i), *v2 = hand_row(&s2, i);
                    for (int k = 0; k < hand_numel[i]; k++)
                        own += gi[k] * gi[k];
                    const double norm = m == 0 ? sqrt(own) : sqrt(all);
                    for (int k = 0; k < hand_numel[i]; k++) {
                        if (m < 2 && norm > thr)
                            gi[k] *= thr / norm;
                        else if (m == 2)
                            gi[k] = fmax(-thr, fmin(thr, gi[k]));
                        const double lr = lr0 * lrf[i];
                        if (s == 0) {
                            v1[k] = 0.9 * v1[k] - lr * gi[k];
                            pi[k] += v1[k];
                        } else if (s == 1) {
                            v1[k] = 0.9 * v1[k] + 0.1 * gi[k];
                            v2[k] = 0.999 * v2[k] + 0.001 * gi[k] * gi[k];
                            pi[k] -= lr * sqrt(1 - pow(0.999, it)) / (1 - pow(0.9, it)) * v1[k] /
                                     (sqrt(v2[k]) + 1e-8);
                        } else {
                            v2[k] = 0.9 * v2[k] + 0.1 * gi[k] * gi[k];
                            pi[k] -= lr * gi[k] / (sqrt(v2[k]) + 1e-8);
                        }
                    }
                }
            }
            dla_table *tt = dla_net_learnables(trained);
            for (int i = 0; i < 4; i++)
                for (int k = 0; k < hand_numel[i]; k++) {
                    const double got = dla_tensor_item(dla_table_value(tt, i), k);
                    if (!(fabs(got - hand_row(&p, i)[k]) <= 1e-12))
                        fail_msg("%s %s: row %d element %d: %.17g, by hand %.17g", solvers[s],
                                 methods[m], i, k, got, hand_row(&p, i)[k]);
                }
            dla_training_info_free(info);
            dla_net_free(trained);
            dla_net_free(net);
            dla_scope_end();
        }
}

/* A layer partly frozen (fc_2's Weights): its frozen row takes no L2 term,
 * and its gradient counts in "global-l2norm" (MATLAB computes the
 * gradients of a layer that learns). */
static void trainnet_updates_are_matlabs_formulas_by_hand(void **state)
{
    (void)state;
    updates_by_hand((const double[4]){2, 0.5, 0, 3});
}

/* A layer wholly frozen (fc_1, as a transfer learning's backbone) counts
 * in no clipping norm: its gradients and their L2 terms made
 * "global-l2norm" scale fc_2's steps down, in silence, where MATLAB's
 * trainer computes no gradient for a layer whose factors are all 0. */
static void a_frozen_layer_counts_in_no_clipping_norm(void **state)
{
    (void)state;
    updates_by_hand((const double[4]){0, 0, 1, 1.5});
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(trainnet_learns_four_blobs),
        TU_TEST(zeroed_options_are_matlab_defaults),
        TU_TEST(batch_normalization_statistics_come_from_the_whole_data),
        TU_TEST(output_network_best_validation_returns_that_validations_network),
        TU_TEST(the_best_validation_network_has_the_initial_recurrent_state),
        TU_TEST(minibatchpredict_and_testnet_cover_the_whole_data),
        TU_TEST(minibatchpredict_pads_sequence_outputs_to_the_longest),
        TU_TEST(minibatchpredict_reads_whole_sequences),
        TU_TEST(a_double_network_without_learnables_predicts_double_data),
        TU_TEST(every_option_value_is_checked),
        TU_TEST(verbose_prints_matlabs_iteration_table),
        TU_TEST(validation_runs_at_its_frequency_and_the_end),
        TU_TEST(empty_validation_data_is_refused),
        TU_TEST(checkpoints_are_written_and_load_back),
        TU_TEST(training_progress_writes_a_well_formed_svg_chart),
        TU_TEST(progress_bar_redraws_on_a_terminal_and_escapes_the_chart),
        TU_TEST(execution_environment_maps_to_devices),
        TU_TEST(partial_mini_batches_are_dropped_or_returned),
        TU_TEST(an_accelerated_custom_loss_is_replayed_and_trains),
        TU_TEST(sequences_train_with_each_sequence_length),
        TU_TEST(output_fn_stops_training_and_schedules_drop_the_rate),
        TU_TEST(an_output_fn_with_unpaired_scopes_is_an_error_naming_it),
        TU_TEST(a_stop_by_the_output_fn_validates_the_network_returned),
        TU_TEST(trainnet_runs_a_list_of_schedules_in_turn),
        TU_TEST(input_normalization_is_reset_from_uint8_images),
        TU_TEST(a_feature_input_network_is_normalized_and_fits_a_regression),
        TU_TEST(a_training_leaves_nothing_allocated),
        TU_TEST(class_numbers_outside_the_classes_are_refused),
        TU_TEST(one_hot_targets_of_another_class_count_are_named),
        TU_TEST(targets_with_one_row_per_observation_are_named),
        TU_TEST(predictors_laid_out_the_other_way_are_named),
        TU_TEST(a_bad_output_path_fails_before_the_first_iteration),
        TU_TEST(a_failure_during_training_returns_the_network_so_far),
        TU_TEST(a_non_finite_loss_or_gradient_stops_training_with_an_error),
        TU_TEST(best_validation_is_returned_when_training_diverges),
        TU_TEST(a_long_layer_name_is_whole_in_the_stop_reason),
        TU_TEST(rmsprop_trains_and_is_not_sgdm),
        TU_TEST(learn_rate_factors_freeze_layers_in_trainnet),
        TU_TEST(checkpoints_of_an_lstm_network_load_back),
        TU_TEST(a_gru_network_trains_on_sequences),
        TU_TEST(a_bilstm_network_trains_on_sequences),
        TU_TEST(sequence_to_sequence_targets_are_cut_into_chunks),
        TU_TEST(padded_steps_count_in_no_loss_nor_metric),
        TU_TEST(training_does_not_learn_the_padding),
        TU_TEST(seq2seq_regression_first_loss_is_the_masked_loss_by_hand),
        TU_TEST(seq2seq_classification_first_loss_is_the_masked_loss_by_hand),
        TU_TEST(seq2seq_training_reduces_the_loss_with_either_form),
        TU_TEST(target_sequences_that_do_not_fit_are_refused),
        TU_TEST(targets_longer_than_every_sequence_are_not_cut),
        TU_TEST(named_losses_are_normalized_as_matlabs_trainnet),
        TU_TEST(a_network_of_two_outputs_is_refused_naming_them),
        TU_TEST(accuracy_of_one_channel_thresholds_at_a_half),
        TU_TEST(trainnet_updates_are_matlabs_formulas_by_hand),
        TU_TEST(a_frozen_layer_counts_in_no_clipping_norm),
        TU_TEST(the_network_cache_warning_names_what_a_caller_can_do),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * cnn_fmnist.c - the custom training loop of MATLAB's dlaccelerate page,
 * on Fashion-MNIST: an accelerated model loss returning the loss, the
 * gradients and the network state, and SGDM.
 *
 *     accfun = dlaccelerate(@modelLoss);
 *     for epoch = 1:numEpochs
 *         shuffle(mbq);
 *         while hasdata(mbq)
 *             [X, T] = next(mbq);
 *             [loss, gradients, state] = dlfeval(accfun, net, X, T);
 *             net.State = state;
 *             [net, velocity] = sgdmupdate(net, gradients, velocity, 0.01, 0.9);
 *         end
 *     end
 *
 *     function [loss, gradients, state] = modelLoss(net, X, T)
 *         [Y, state] = forward(net, X);
 *         loss = crossentropy(Y, T);
 *         gradients = dlgradient(loss, net.Learnables);
 *     end
 *
 * The network is the page's digit CNN: imageInput 28x28x1 with
 * "zerocenter" normalization (the training set's mean image), conv 5x5x20,
 * batch normalization, relu, conv 3x3x20 padding 1, batch normalization,
 * relu, conv 3x3x20 padding 1, batch normalization, relu, fully connected
 * 10, softmax. Mini-batches of 128, shuffled every epoch (the same order as
 * the PyTorch reference of docs/training.md: numpy's default_rng(0)), the last partial
 * one dropped: 468 iterations per epoch. Images stay uint8 in memory (47 MB
 * instead of 188) and become single, scaled to [0, 1], one mini-batch at a
 * time on the queue's background thread.
 *
 * It runs on the best loaded device (dla_training_device("auto")), draws a
 * progress bar (plain lines when stdout is not a terminal), and prints per
 * epoch the mean loss, the test accuracy, the time, HitRate and Occupancy;
 * at the end the peak resident memory (VmHWM) and where the chart of loss
 * and accuracy per iteration was written.
 *
 *     cnn_fmnist [--small] [--epochs N] [--seed S] [--chart PATH] [--data DIR]
 *                [--save-initial PATH] [--first-losses N] [--print-trace] [--mobile]
 *                [--folder DIR [--read-threads N]]
 *
 * --folder DIR trains from image files instead of the IDX files: DIR/train
 * and DIR/test as `dlaccel export-images` writes them (one folder per
 * class), read by image datastores (MATLAB's imageDatastore with
 * 'LabelSource', 'foldernames') a mini-batch at a time on the queue's
 * background thread, decoding on --read-threads threads (default 1). The
 * files are put back in the IDX order (their names are their IDX index),
 * so with the same seed the batches, and so the training, are the IDX
 * run's; the mean image is summed a chunk at a time, so only the batches
 * read ahead are in memory, never the dataset.
 *
 * --seed S (default 0) seeds the initial weights and the shuffling: one
 * run's test accuracy moves by a few tenths of a point with it, as
 * PyTorch's does with its seed (docs/training.md has the spread).
 * --save-initial PATH saves the initialized network (dla_net_save) before
 * training, and --first-losses N prints the loss of the first N
 * iterations: bench/pytorch_same_start.py trains the PyTorch peer from that
 * file on the same mini-batches, to compare the two step by step.
 * --small (or DLA_EXAMPLE_SMALL=1): 3,840 training and 1,000 test images,
 * one epoch, for `make check`. --print-trace prints, at the end, the
 * accelerated model loss's trace and its replay plan step by step
 * (dla_accel_print_trace): which ops were fused into which programs.
 *
 * --mobile trains a MobileNet-style network instead of the page's
 * (examples/mobile_net.h: depthwise separable convolutions, ReLU6, a
 * squeeze-and-excitation gate, spatial dropout) with the same loop.
 *
 * --parallel trains the same network with the same hyperparameters
 * through trainnet with ExecutionEnvironment "parallel" (--multi-gpu:
 * "multi-gpu", one rank per GPU, gradients over NCCL) instead of the
 * custom loop: `mpirun -np 2 build/examples/cnn_fmnist --parallel` has two
 * workers share each mini-batch of 128 (docs/parallel.md). Rank 0 alone
 * prints; the test accuracy is measured there.
 *
 * Both splits are read, and so checked, before training starts. Exit
 * status: 0; 1 for any error, a corrupt or incomplete dataset included
 * (the message names the file); 77 (automake's "skipped") only when the
 * dataset is not installed at all: none of its four files in the folder.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "example_args.h"
#include "digit_net.h"
#include "mobile_net.h"
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/example_clock.h"

#define BATCH 128
#define CLASSES 10

/* function [loss, accuracy, gradients, state] = modelLoss(net, X, T)
 * The network is the argument, as on MATLAB's page: the accelerated
 * function is told it is a network (dla_net_accel_kind), so its learnables
 * and state are traced inputs of every call and a replay after an update
 * computes with the new values. out: loss, mini-batch accuracy, one
 * gradient per learnable, one new value per State row. */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 2 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    out[1] = dla_mean(dla_cast(dla_eq(dla_onehotdecode(y, NULL), dla_onehotdecode(in[1], NULL)),
                               DLA_F32), 0, NULL);
    return dla_net_gradient(net, out[0], out + 2);
}

/* The mini-batch function: uint8 pixels (cast to single by the queue) to
 * [0, 1], class numbers to one-hot. */
static dla_status preprocess(void *ctx, int n, dla_tensor **b)
{
    (void)ctx, (void)n;
    b[0] = dla_affine(b[0], 1.0 / 255.0, 0.0);
    b[1] = dla_onehotencode(b[1], CLASSES, NULL);
    return dla_tensor_status(b[0]) != DLA_OK ? dla_tensor_status(b[0]) : dla_tensor_status(b[1]);
}

/* The test set of --parallel is already single in [0, 1]. */
static dla_status onehot_only(void *ctx, int n, dla_tensor **b)
{
    (void)ctx, (void)n;
    b[1] = dla_onehotencode(b[1], CLASSES, NULL);
    return dla_tensor_status(b[1]);
}

/* The input layer's mean image from the uint8 training images, in chunks
 * (each is cast to double inside), scaled as the batches are. */
static dla_status set_mean_image(dla_net *net, dla_tensor *images)
{
    int64_t n = dla_tensor_dim(images, 4);
    int nchunks = (int)((n + 999) / 1000);
    dla_tensor *chunks[64];
    if (nchunks > 64)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "too many images");
    dla_scope_begin();
    for (int c = 0; c < nchunks; c++)
        chunks[c] = dla_slice(images, 4, (int64_t)c * 1000, 1, (int64_t)(c + 1) * 1000);
    dla_status st = dla_net_set_input_statistics(net, "input", nchunks, chunks);
    if (st == DLA_OK)
        st = dla_net_set(net, "input", "Mean",
                         dla_affine(dla_net_get(net, "input", "Mean"), 1.0 / 255.0, 0.0));
    dla_scope_end();
    return st;
}

/* Test accuracy and mean loss in inference mode, batches of 128. */
static dla_status evaluate(dla_net *net, dla_mbq *test, double *accuracy, double *loss)
{
    double right = 0, total = 0, sum = 0;
    dla_mbq_reset(test);
    dla_status st = DLA_OK;
    while (st == DLA_OK && dla_mbq_hasdata(test)) {
        dla_scope_begin();
        dla_tensor *b[2], *y;
        st = dla_mbq_next(test, 2, b);
        if (st == DLA_OK)
            st = dla_net_predict(net, 1, &b[0], 1, &y, NULL);
        if (st == DLA_OK) {
            double nb = (double)dla_tensor_dim(y, 2);
            dla_tensor *hit = dla_eq(dla_onehotdecode(y, NULL), dla_onehotdecode(b[1], NULL));
            right += dla_tensor_item(dla_sum(dla_cast(hit, DLA_F64), 0, NULL), 0);
            sum += dla_tensor_item(dla_crossentropy(y, b[1], NULL), 0) * nb;
            total += nb;
            st = dla_tensor_status(hit);
        }
        dla_scope_end();
    }
    *accuracy = total ? 100.0 * right / total : NAN;
    *loss = total ? sum / total : NAN;
    return st;
}

/* Folder mode: the datastore of DIR/split in the IDX order (the file
 * names are IDX indices), its first `count` files (0: all). */
static dla_imds *open_folder(const char *dir, const char *split, int64_t count, int threads)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, split);
    dla_imds *ds, *ordered = NULL;
    if (dla_imds_create(path, &(dla_imds_options){.dtype = DLA_U8, .read_threads = threads},
                        &ds) != DLA_OK)
        return NULL;
    int64_t n = dla_imds_num_files(ds);
    int64_t *order = malloc(sizeof *order * (size_t)n);
    for (int64_t i = 0; order && i < n; i++)
        order[i] = -1;
    int ok = order != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        long k = atol(strrchr(dla_imds_file(ds, i), '/') + 1);
        ok = k >= 0 && k < n && order[k] < 0;
        if (ok)
            order[k] = i;
    }
    if (!ok)
        dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: the file names are not 0..%lld (write the "
                      "folder with dlaccel export-images)", path, (long long)n - 1);
    else
        dla_imds_subset(ds, count && count < n ? count : n, order, &ordered);
    free(order);
    dla_imds_free(ds);
    return ordered;
}

/* The input layer's mean image from a datastore, read 1000 images at a
 * time and summed in double on the host (sums of bytes are exact, so this
 * is the mean set_mean_image computes), scaled as the batches are. */
static dla_status set_mean_image_folder(dla_net *net, dla_imds *ds)
{
    int64_t n = dla_imds_num_files(ds), idx[1000];
    double *sum = calloc(784, sizeof *sum);
    float *mean = malloc(784 * sizeof *mean);
    unsigned char *px = malloc(1000 * 784);
    dla_status st = sum && mean && px ? DLA_OK : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "mean");
    for (int64_t at = 0; at < n && st == DLA_OK; at += 1000) {
        int64_t m = n - at < 1000 ? n - at : 1000;
        for (int64_t k = 0; k < m; k++)
            idx[k] = at + k;
        dla_scope_begin();
        dla_tensor *x;
        st = dla_imds_read_files(ds, m, idx, &x, NULL);
        if (st == DLA_OK)
            st = dla_tensor_to_host(x, px, (size_t)(m * 784));
        for (int64_t k = 0; st == DLA_OK && k < m; k++)
            for (int e = 0; e < 784; e++)
                sum[e] += px[k * 784 + e];
        dla_scope_end();
    }
    if (st == DLA_OK) {
        for (int e = 0; e < 784; e++)
            mean[e] = (float)(sum[e] / (double)n);
        dla_scope_begin();
        /* In the shape, format and dtype of the layer's own Mean. */
        dla_tensor *old = dla_net_get(net, "input", "Mean");
        int64_t dims[DLA_MAX_DIMS];
        int nd = old ? dla_tensor_dims(old, dims) : 0;
        dla_tensor *m = old ? dla_tensor_from_host(mean, DLA_F32, dla_tensor_format(old), nd, dims)
                            : NULL;
        if (m && dla_tensor_dtype(old) != DLA_F32)
            m = dla_cast(m, dla_tensor_dtype(old));
        st = m ? dla_net_set(net, "input", "Mean", dla_affine(m, 1.0 / 255.0, 0.0))
               : dla_last_status();
        dla_scope_end();
    }
    free(sum);
    free(mean);
    free(px);
    return st;
}

static int fail(const char *what)
{
    fprintf(stderr, "cnn_fmnist: %s: %s\n", what, dla_last_error());
    return 1;
}

/* How many of Fashion-MNIST's four files dir holds (each .gz or plain). */
static int dataset_files(const char *dir)
{
    static const char *const names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    int found = 0;
    for (int i = 0; i < 4; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.gz", dir, names[i]);
        int here = access(path, F_OK) == 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        found += here || access(path, F_OK) == 0;
    }
    return found;
}

/* --parallel: trainnet, ExecutionEnvironment "parallel", the custom
 * loop's hyperparameters (SGDM 0.01 and 0.9, no L2, mini-batch 128
 * shuffled every epoch, the last partial one dropped). Images come in
 * single, scaled to [0, 1] (trainnet casts but does not scale); the input
 * layer's mean image is ResetInputNormalization's. */
static int train_in_parallel(dla_net *net, dla_tensor *xtrain, dla_tensor *ttrain, dla_tensor *xtest,
                             dla_tensor *ttest, int epochs, unsigned long long seed, const char *chart,
                             const char *environment)
{
    dla_training_options o = {.solver = "sgdm", .initial_learn_rate = DLA_SGDM_LEARN_RATE,
                              .momentum = DLA_SGDM_MOMENTUM, .l2_regularization = -1,
                              .mini_batch_size = BATCH, .max_epochs = epochs,
                              .shuffle = "every-epoch", .shuffle_seed = seed,
                              .execution_environment = environment, .metrics = "accuracy",
                              .plots = "training-progress", .plots_path = chart,
                              .verbose_frequency = 50};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    if (dla_trainnet(&(dla_train_data){.predictors = xtrain, .targets = ttrain}, net,
                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) != DLA_OK)
        return fail("trainnet");
    /* Each epoch's time: from the history's elapsed time at its last
     * iteration. */
    double times[64], last = 0;
    int ne = 0;
    for (int64_t i = 0; i < info->iterations && ne < 64; i++)
        if (i + 1 == info->iterations || info->epoch[i + 1] != info->epoch[i]) {
            times[ne++] = info->time_elapsed[i] - last;
            last = info->time_elapsed[i];
        }
    dla_mbq *test;
    double accuracy = NAN, loss = NAN;
    if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = xtest}, {.tensor = ttest}},
                       &(dla_mbq_options){.mini_batch_size = BATCH, .mini_batch_fcn = onehot_only},
                       &test) != DLA_OK ||
        evaluate(trained, test, &accuracy, &loss) != DLA_OK)
        return fail("test");
    dla_mbq_free(test);
    double sum = 0;
    for (int e = 0; e < ne; e++)
        sum += times[e];
    printf("test accuracy: %.2f%% (%lld test images)\n", accuracy, (long long)dla_tensor_dim(xtest, 4));
    printf("time per epoch: %.1f s (mean of %d; %.1f ms per iteration)\n", ne ? sum / ne : NAN, ne,
           info->iterations ? 1e3 * sum / (double)info->iterations : NAN);
    printf("chart: %s\n", chart);
    dla_training_info_free(info);
    dla_net_free(trained);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && *env && strcmp(env, "0"), epochs = 0;
    unsigned long long seed = 0;
    const char *chart = "cnn_fmnist-training.svg", *dir = NULL, *save_initial = NULL;
    const char *folder = NULL;
    int read_threads = 1;
    long first_losses = 0;
    int parallel = 0, print_trace = 0, mobile = 0;
    long long fl;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--mobile"))
            mobile = 1;
        else if (!strcmp(argv[i], "--parallel"))
            parallel = 1;
        else if (!strcmp(argv[i], "--multi-gpu"))
            parallel = 2;
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("cnn_fmnist", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!example_seed("cnn_fmnist", argv[++i], &seed))
                return 2;
        } else if (!strcmp(argv[i], "--chart") && i + 1 < argc)
            chart = argv[++i];
        else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--save-initial") && i + 1 < argc)
            save_initial = argv[++i];
        else if (!strcmp(argv[i], "--first-losses") && i + 1 < argc) {
            if (!example_int("cnn_fmnist", "--first-losses", argv[++i], 1, 1000000000, &fl))
                return 2;
            first_losses = (long)fl;
        } else if (!strcmp(argv[i], "--folder") && i + 1 < argc)
            folder = argv[++i];
        else if (!strcmp(argv[i], "--read-threads") && i + 1 < argc) {
            if (!example_int32("cnn_fmnist", "--read-threads", argv[++i], 1, 1024, &read_threads))
                return 2;
        } else if (!strcmp(argv[i], "--print-trace"))
            print_trace = 1;
        else
            return example_usage(argv[0], "[--small] [--epochs N] [--seed S] [--chart PATH]"
                                 " [--data DIR] [--save-initial PATH] [--first-losses N]"
                                 " [--print-trace] [--mobile] [--parallel | --multi-gpu]"
                                 " [--folder DIR [--read-threads N]]", argv[i]);
    }
    if (epochs <= 0)
        epochs = small ? 1 : 3;
    if (parallel && folder) {
        fprintf(stderr, "%s: --parallel trains from the IDX files; --folder is not taken with it\n",
                argv[0]);
        return 2;
    }
    /* Under mpirun, rank 0 alone prints (trainnet's own output too). */
    if (parallel && dla_spmd_rank() != 0 && !freopen("/dev/null", "w", stdout))
        return fail("stdout");

    /* The best loaded device: ExecutionEnvironment "auto". */
    dla_device *dev;
    if (dla_training_device("auto", &dev) != DLA_OK)
        return fail("device");
    printf("device: %s (%s)\n", dla_device_name(dev), dla_device_description(dev));

    /* Not installed at all: the one case a test suite skips. */
    const char *data_dir = dir ? dir : DLA_FASHION_MNIST_DIR;
    if (!folder && dataset_files(data_dir) == 0) {
        fprintf(stderr, "cnn_fmnist: Fashion-MNIST is not installed in %s (install the "
                "dataset-fashion-mnist package, or pass --data DIR)\n", data_dir);
        return 77;
    }
    /* Both splits now: a corrupt test file is an error before training,
     * not after the first epoch. From here on a failure goes through
     * `done`, which frees what was made: a corrupt test split or image
     * ends the program with its error, not with a leak as well. */
    dla_tensor *xtrain = NULL, *ttrain = NULL, *xtest = NULL, *ttest = NULL;
    dla_imds *ftrain = NULL, *ftest = NULL;
    dla_net *net = NULL;
    dla_mbq *mbq = NULL, *test = NULL;
    dla_accel *accfun = NULL;
    dla_tensor **velocity = NULL, **out = NULL;
    dla_progress *progress = NULL;
    int nl = 0, ns = 0, rc = 0, in_scope = 0;
    int64_t ntrain, ntest;
#define FAIL(what)                                                                                 \
    do {                                                                                           \
        rc = fail(what);                                                                           \
        goto done;                                                                                 \
    } while (0)
    if (folder) {
        if (!(ftrain = open_folder(folder, "train", small ? 3840 : 0, read_threads)))
            FAIL("training folder");
        if (!(ftest = open_folder(folder, "test", small ? 1000 : 0, read_threads)))
            FAIL("test folder");
        ttrain = dla_imds_labels(ftrain);
        ttest = dla_imds_labels(ftest);
        ntrain = dla_imds_num_files(ftrain);
        ntest = dla_imds_num_files(ftest);
        printf("Fashion-MNIST: %lld training and %lld test images, PNG files under %s (read per "
               "mini-batch, %d reading thread%s)\n", (long long)ntrain, (long long)ntest, folder,
               read_threads, read_threads > 1 ? "s" : "");
    } else {
        dla_fashion_mnist_options lo = {.dtype = parallel ? DLA_F32 : DLA_U8,
                                        .count = small ? 3840 : 0};
        if (dla_fashion_mnist_load(dir, "train", &lo, &xtrain, &ttrain) != DLA_OK)
            FAIL("training set");
        lo.count = small ? 1000 : 0;
        if (dla_fashion_mnist_load(dir, "test", &lo, &xtest, &ttest) != DLA_OK)
            FAIL("test set");
        ntrain = dla_tensor_dim(xtrain, 4);
        ntest = dla_tensor_dim(xtest, 4);
        printf("Fashion-MNIST: %lld training and %lld test images (%s in memory)\n",
               (long long)ntrain, (long long)ntest, parallel ? "single" : "uint8");
    }

    dla_rng_seed(seed);
    net = mobile ? mobile_net_make(CLASSES) : digit_net(CLASSES);
    if (parallel) {
        rc = net ? train_in_parallel(net, xtrain, ttrain, xtest, ttest, epochs, seed, chart,
                                     parallel == 2 ? "multi-gpu" : "parallel")
                 : fail("network");
        goto done;
    }
    if (!net || (folder ? set_mean_image_folder(net, ftrain) : set_mean_image(net, xtrain)) != DLA_OK)
        FAIL("network");
    if (save_initial && dla_net_save(net, save_initial) != DLA_OK)
        FAIL("--save-initial");
    nl = dla_net_learnable_count(net);
    ns = dla_net_state_count(net);

    dla_mbq_options qo = {.mini_batch_size = BATCH, .partial_mini_batch = "discard", .seed = seed,
                          .dispatch_in_background = 1, .mini_batch_fcn = preprocess};
    if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = xtrain, .images = ftrain, .cast = "single"},
                                            {.tensor = ttrain}},
                       &qo, &mbq) != DLA_OK)
        FAIL("mini-batch queue");

    /* accfun = dlaccelerate(@modelLoss) */
    accfun = dla_accelerate(model_loss, &(dla_accel_options){
                                                       .name = "modelLoss",
                                                       .ctx_kind = dla_net_accel_kind()});
    velocity = calloc((size_t)nl, sizeof *velocity);
    out = malloc(sizeof *out * (size_t)(2 + nl + ns));
    if (!accfun || !velocity || !out)
        FAIL("setup");
    int64_t per_epoch = dla_mbq_num_batches(mbq), total = per_epoch * epochs, iteration = 0;
    progress = dla_progress_create(&(dla_progress_options){
        .total = total, .title = "Fashion-MNIST digit CNN: accelerated custom training loop"});
    printf("training: %d epoch%s of %lld iterations, mini-batch %d, SGDM lr %.2f momentum %.1f\n",
           epochs, epochs > 1 ? "s" : "", (long long)per_epoch, BATCH, DLA_SGDM_LEARN_RATE,
           DLA_SGDM_MOMENTUM);

    double epoch_time[64] = {0}, accuracy = NAN, first_loss = NAN, last_loss = NAN;
    for (int epoch = 1; epoch <= epochs && epoch <= 64; epoch++) {
        dla_mbq_shuffle(mbq);
        dla_progress_mark_epoch(progress, epoch, iteration + 1);
        double t0 = now(), loss_sum = 0;
        while (dla_mbq_hasdata(mbq)) {
            dla_scope_begin();
            in_scope = 1;
            dla_tensor *b[2];
            if (dla_mbq_next(mbq, 2, b) != DLA_OK)
                FAIL("next mini-batch");
            /* [loss, accuracy, gradients, state] = dlfeval(accfun, net, X, T) */
            if (dla_accel_feval(accfun, net, 2, b, 2 + nl + ns, out) != DLA_OK ||
                dla_net_set_state(net, ns, out + 2 + nl) != DLA_OK ||
                dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 2, velocity,
                               DLA_SGDM_LEARN_RATE, DLA_SGDM_MOMENTUM) != DLA_OK)
                FAIL("training step");
            double loss = dla_tensor_item(out[0], 0), acc = 100.0 * dla_tensor_item(out[1], 0);
            dla_scope_end();
            in_scope = 0;
            iteration++;
            loss_sum += loss;
            first_loss = iteration == 1 ? loss : first_loss;
            last_loss = loss;
            if (iteration <= first_losses)
                dla_progress_printf(progress, "iteration %lld: loss %.6f", (long long)iteration,
                                    loss);
            dla_progress_record(progress, "TrainingLoss", iteration, loss);
            dla_progress_record(progress, "TrainingAccuracy", iteration, acc);
            char text[128];
            snprintf(text, sizeof text, "epoch %d/%d  loss %.4f  accuracy %.1f%%", epoch, epochs,
                     loss, acc);
            dla_progress_update(progress, iteration, text);
        }
        epoch_time[epoch - 1] = now() - t0;
        /* The test queue is made when first needed: the first iterations,
         * which record the trace, are the most memory-hungry moment. */
        if (!test) {
            qo.partial_mini_batch = "return";
            qo.dispatch_in_background = 0;
            if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = xtest, .images = ftest,
                                                     .cast = "single"},
                                                    {.tensor = ttest}}, &qo, &test) != DLA_OK)
                FAIL("test set");
        }
        double test_loss;
        if (evaluate(net, test, &accuracy, &test_loss) != DLA_OK)
            FAIL("test");
        dla_progress_record(progress, "ValidationLoss", iteration, test_loss);
        dla_progress_record(progress, "ValidationAccuracy", iteration, accuracy);
        dla_progress_printf(progress,
                            "epoch %d: mean loss %.4f, test accuracy %.2f%%, %.1f s (%.1f ms per "
                            "iteration), HitRate %.1f%%, Occupancy %g",
                            epoch, loss_sum / (double)per_epoch, accuracy, epoch_time[epoch - 1],
                            1e3 * epoch_time[epoch - 1] / (double)per_epoch,
                            dla_accel_hit_rate(accfun), dla_accel_occupancy_percent(accfun));
        if (dla_progress_write_chart(progress, chart) != DLA_OK)
            FAIL("chart");
    }
    dla_progress_finish(progress, NULL);

    int ne = epochs < 64 ? epochs : 64;
    double sorted[64];
    memcpy(sorted, epoch_time, sizeof *sorted * (size_t)ne);
    qsort(sorted, (size_t)ne, sizeof *sorted, cmp_double);
    double median = ne % 2 ? sorted[ne / 2] : (sorted[ne / 2 - 1] + sorted[ne / 2]) / 2;
    char desc[512];
    dla_accel_describe(accfun, desc, sizeof desc);
    printf("\naccfun =\n\n%s\n", desc);
    printf("loss: %.4f at iteration 1, %.4f at iteration %lld\n", first_loss, last_loss,
           (long long)iteration);
    printf("test accuracy: %.2f%% (%lld test images)\n", accuracy, (long long)ntest);
    /* MATLAB's Occupancy, the percent of CacheSize in use, and the count */
    printf("HitRate: %.1f%%  Occupancy: %g (%d of %d traces)\n", dla_accel_hit_rate(accfun),
           dla_accel_occupancy_percent(accfun), dla_accel_occupancy(accfun),
           dla_accel_cache_size(accfun));
    printf("time per epoch: %.1f s (median of %d; %.1f ms per iteration)\n", median, ne,
           1e3 * median / (double)per_epoch);
    printf("peak RSS: %.0f MiB\n", peak_rss_mib());
    printf("chart: %s\n", chart);
    if (print_trace) {
        printf("\n");
        fflush(stdout);
        for (int i = 0; i < dla_accel_occupancy(accfun); i++)
            if (dla_accel_print_trace(accfun, i, stdout) != DLA_OK)
                fprintf(stderr, "%s\n", dla_last_error());
    }
    if (!small && !mobile)
        printf("\nPyTorch 1.13 trains the same network to 89.95%% test accuracy in 3 epochs, "
               "with a peak RSS of about 800 MiB (docs/training.md compares the two)\n");

done:
    if (in_scope)
        dla_scope_end();
    dla_progress_free(progress);
    dla_optim_free(nl, velocity);
    free(velocity);
    free(out);
    dla_accel_free(accfun);
    dla_mbq_free(mbq);
    dla_mbq_free(test);
    dla_net_free(net);
    dla_tensor_release(xtrain);
    dla_tensor_release(ttrain);
    dla_tensor_release(xtest);
    dla_tensor_release(ttest);
    dla_imds_free(ftrain);
    dla_imds_free(ftest);
    return rc;
#undef FAIL
}

/*
 * transfer.c - transfer learning, as MATLAB's "Retrain Neural Network to
 * Classify New Images" does it: a network trained on one task is loaded,
 * its last fully connected layer replaced (dla_net_replace_layer) for a
 * new task, its convolutions frozen (learn-rate factor 0), and it is
 * trained on a few images of the new task. The same network trained from
 * scratch on the same few images is the comparison.
 *
 *     build/examples/transfer [--few N] [--base-epochs N] [--epochs N] [--seed S]
 *                             [--save PATH]
 *
 * The base task: the digit CNN (digit_net.h) trained by trainnet on the
 * 30000 Fashion-MNIST training images of T-shirt/top, Trouser, Pullover,
 * Dress and Coat, --base-epochs epochs (1), then saved and loaded back.
 * The new task: Sandal, Shirt, Sneaker, Bag and Ankle boot, from the
 * first --few training images of each (10); --epochs epochs (30) for
 * both networks. Both are tested by testnet on the 5000 test images of
 * the new classes. Exits 1 unless the frozen convolutions came out of
 * training bit for bit as they went in and the transferred network
 * classifies more than 75% of the test images right; 2 on bad arguments
 * or a missing data set. --save PATH saves the transferred network
 * (dla_net_save; `dlaccel net PATH` shows it, its frozen layers marked).
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "example_args.h"
#include "digit_net.h"
#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TASK_CLASSES 5

static int fail(const char *what)
{
    fprintf(stderr, "transfer: %s: %s\n", what, dla_last_error());
    return 1;
}

/* The observations of images whose label is in first..first+4, at most
 * per_class of each (0: all), in their order, into *x and, renumbered
 * 0..4, *t (both the caller's scope's). */
static dla_status pick(dla_tensor *images, dla_tensor *labels, int first, int64_t per_class,
                       dla_tensor **x, dla_tensor **t)
{
    const int64_t n = dla_tensor_numel(labels);
    int32_t *label = malloc(sizeof *label * (size_t)n);
    int32_t *index = malloc(sizeof *index * (size_t)n), *cls = malloc(sizeof *cls * (size_t)n);
    dla_status st = label && index && cls ? dla_tensor_to_host(labels, label, sizeof *label * (size_t)n)
                                          : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "pick: %lld labels",
                                                          (long long)n);
    int64_t m = 0, count[TASK_CLASSES] = {0};
    for (int64_t i = 0; st == DLA_OK && i < n; i++) {
        int c = label[i] - first;
        if (c < 0 || c >= TASK_CLASSES || (per_class && count[c] >= per_class))
            continue;
        count[c]++;
        index[m] = (int32_t)i;
        cls[m++] = c;
    }
    if (st == DLA_OK) {
        *x = dla_index(images, 4, dla_tensor_from_host(index, DLA_I32, "", DLA_DIMS(1, m)));
        *t = dla_tensor_from_host(cls, DLA_I32, "", DLA_DIMS(1, m));
        st = dla_tensor_status(*x) != DLA_OK ? dla_tensor_status(*x) : dla_tensor_status(*t);
    }
    free(label);
    free(index);
    free(cls);
    return st;
}

/* Nonzero when a and b hold the same bits (both single). */
static int same_bits(dla_tensor *a, dla_tensor *b)
{
    const int64_t n = dla_tensor_numel(a);
    if (n != dla_tensor_numel(b))
        return 0;
    float *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
    int same = x && y && dla_tensor_to_host(a, x, sizeof *x * (size_t)n) == DLA_OK &&
               dla_tensor_to_host(b, y, sizeof *y * (size_t)n) == DLA_OK &&
               !memcmp(x, y, sizeof *x * (size_t)n);
    free(x);
    free(y);
    return same;
}

static void list_classes(int first)
{
    for (int k = 0; k < TASK_CLASSES; k++)
        printf("%s%s", k ? ", " : "", dla_fashion_mnist_class_name(first + k));
}

/* trainnet's crossentropy with Adam; quiet unless verbose. */
static dla_status train(dla_net *net, dla_tensor *x, dla_tensor *t, int epochs, int64_t batch,
                        int verbose, dla_net **trained)
{
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = batch,
                              .shuffle = "every-epoch", .metrics = "accuracy",
                              .verbose = verbose ? 1 : -1, .verbose_frequency = 50};
    return dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                        &(dla_train_loss){.name = "crossentropy"}, &o, trained, NULL);
}

static int run(int64_t few, int base_epochs, int epochs, uint64_t seed, const char *save)
{
    dla_tensor *train_x, *train_t, *test_x, *test_t;
    if (dla_fashion_mnist_load(NULL, "train", NULL, &train_x, &train_t) != DLA_OK ||
        dla_fashion_mnist_load(NULL, "test", NULL, &test_x, &test_t) != DLA_OK) {
        fail("Fashion-MNIST");
        return 2;
    }
    dla_tensor *base_x, *base_t, *base_test_x, *base_test_t, *new_x, *new_t, *new_test_x, *new_test_t;
    if (pick(train_x, train_t, 0, 0, &base_x, &base_t) != DLA_OK ||
        pick(test_x, test_t, 0, 0, &base_test_x, &base_test_t) != DLA_OK ||
        pick(train_x, train_t, TASK_CLASSES, few, &new_x, &new_t) != DLA_OK ||
        pick(test_x, test_t, TASK_CLASSES, 0, &new_test_x, &new_test_t) != DLA_OK)
        return fail("selecting the classes");
    printf("device: %s\n", dla_device_name(dla_device_current()));

    /* 1. The base task: the digit CNN on five classes, saved. */
    printf("\n1. Base task: ");
    list_classes(0);
    printf(" (%lld training images, %d epoch%s)\n", (long long)dla_tensor_dim(base_x, 4),
           base_epochs, base_epochs > 1 ? "s" : "");
    dla_rng_seed(seed);
    dla_net *net = digit_net(TASK_CLASSES), *base = NULL;
    if (!net || train(net, base_x, base_t, base_epochs, 128, 1, &base) != DLA_OK)
        return fail("training the base network");
    dla_net_free(net);
    double acc = 0;
    if (dla_testnet(base, &(dla_train_data){.predictors = base_test_x, .targets = base_test_t},
                    "accuracy", NULL, &acc) != DLA_OK)
        return fail("testing the base network");
    printf("base network: %.2f%% of the %lld test images of its classes\n", acc,
           (long long)dla_tensor_dim(base_test_x, 4));
    char path[] = "/tmp/dlaccel-transfer-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("transfer: mkstemp");
        return 1;
    }
    close(fd);
    dla_status st = dla_net_save(base, path);
    dla_net_free(base);
    dla_net *loaded = NULL;
    if (st == DLA_OK)
        st = dla_net_load(path, &loaded);
    unlink(path);
    if (st != DLA_OK)
        return fail("saving and loading the base network");

    /* 2. The new task: a new classifier on the loaded network, its
     * convolutions frozen; and the same network from scratch. */
    printf("\n2. New task: ");
    list_classes(TASK_CLASSES);
    printf(" (%lld training images: the first %lld of each class; %d epochs)\n",
           (long long)dla_tensor_dim(new_x, 4), (long long)few, epochs);
    dla_layer *fc = dla_fc_layer(TASK_CLASSES, &(dla_fc_layer_options){.name = "fc_new"});
    if (dla_net_replace_layer(loaded, "fc", 1, &fc) != DLA_OK || dla_net_init(loaded, 0, NULL) != DLA_OK)
        return fail("replacing the classifier");
    for (int k = 1; k <= 3; k++) {
        char conv[8];
        snprintf(conv, sizeof conv, "conv%d", k);
        if (dla_net_set_learn_rate_factor(loaded, conv, NULL, 0) != DLA_OK)
            return fail("freezing the convolutions");
    }
    printf("replaced 'fc' by 'fc_new' and froze conv1, conv2, conv3 (learn-rate factor 0):\n");
    dla_net_print(loaded, stdout);
    /* Mini-batches of 25, or one of all when there are fewer. */
    int64_t batch = dla_tensor_dim(new_x, 4) < 25 ? dla_tensor_dim(new_x, 4) : 25;
    dla_net *transferred = NULL, *scratch = NULL, *fresh = NULL;
    dla_rng_seed(seed + 1);
    fresh = digit_net(TASK_CLASSES);
    if (train(loaded, new_x, new_t, epochs, batch, 0, &transferred) != DLA_OK)
        return fail("training the transferred network");
    if (!fresh || train(fresh, new_x, new_t, epochs, batch, 0, &scratch) != DLA_OK)
        return fail("training the network from scratch");
    dla_train_data test = {.predictors = new_test_x, .targets = new_test_t};
    double acc_transferred = 0, acc_scratch = 0;
    if (dla_testnet(transferred, &test, "accuracy", NULL, &acc_transferred) != DLA_OK ||
        dla_testnet(scratch, &test, "accuracy", NULL, &acc_scratch) != DLA_OK)
        return fail("testing");
    printf("\ntest accuracy on the %lld test images of the new classes:\n",
           (long long)dla_tensor_dim(new_test_x, 4));
    printf("  from scratch: %6.2f%%\n  transferred:  %6.2f%%\n", acc_scratch, acc_transferred);
    /* Frozen means untouched: the weights trainnet returned are the ones
     * it was given. */
    int frozen = 1;
    for (int k = 1; k <= 3; k++) {
        char conv[8];
        snprintf(conv, sizeof conv, "conv%d", k);
        frozen &= same_bits(dla_net_get(loaded, conv, "Weights"), dla_net_get(transferred, conv, "Weights")) &&
                  same_bits(dla_net_get(loaded, conv, "Bias"), dla_net_get(transferred, conv, "Bias"));
    }
    printf("conv1, conv2, conv3 after training: %s\n",
           frozen ? "unchanged, bit for bit" : "CHANGED (the learn-rate factor 0 was not applied)");
    if (save && dla_net_save(transferred, save) != DLA_OK)
        frozen = !fail("--save");
    else if (save)
        printf("saved the transferred network to %s\n", save);
    dla_net_free(loaded);
    dla_net_free(fresh);
    dla_net_free(transferred);
    dla_net_free(scratch);
    return frozen && acc_transferred > 75 ? 0 : 1;
}

int main(int argc, char **argv)
{
    int64_t few = 10;
    int base_epochs = 1, epochs = 30;
    uint64_t seed = 1;
    const char *save = NULL;
    for (int i = 1; i < argc; i++) {
        long long n;
        unsigned long long s;
        if (!strcmp(argv[i], "--few") && i + 1 < argc) {
            if (!example_int("transfer", "--few", argv[++i], 1, INT64_MAX, &n))
                return 2;
            few = n;
        } else if (!strcmp(argv[i], "--base-epochs") && i + 1 < argc) {
            if (!example_int32("transfer", "--base-epochs", argv[++i], 1, 1000000, &base_epochs))
                return 2;
        } else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("transfer", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            if (!example_seed("transfer", argv[++i], &s))
                return 2;
            seed = s;
        } else if (!strcmp(argv[i], "--save") && i + 1 < argc)
            save = argv[++i];
        else
            return example_usage(argv[0], "[--few N] [--base-epochs N] [--epochs N] [--seed S]"
                                 " [--save PATH]", argv[i]);
    }
    /* Every tensor below belongs to this scope, released at its end. */
    dla_scope_begin();
    const int rc = run(few, base_epochs, epochs, seed, save);
    dla_scope_end();
    return rc;
}

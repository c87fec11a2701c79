/*
 * autoencoder.c - a convolutional autoencoder on Fashion-MNIST with
 * trainnet: two strided convolutions encode a 28x28 image into 7x7x16,
 * two transposed convolutions (transposedConv2dLayer, Cropping "same")
 * decode it back, and the image itself is the target of an "mse" loss.
 * Prints trainnet's progress, then the test images' reconstruction error
 * against the error of the mean training image, the baseline that a
 * network which learned nothing would reach, and one test image beside its
 * reconstruction in characters.
 *
 *     build/examples/autoencoder [--epochs N] [--count N] [--data DIR]
 *
 * --count trains on the first N training images (all 60000 by default).
 * Exits 1 unless the reconstruction error is below half the baseline's.
 */
#include "example_args.h"
#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what)
{
    fprintf(stderr, "autoencoder: %s: %s\n", what, dla_last_error());
    return 1;
}

/* The mean squared error of predictions y against images x. */
static double mse(dla_tensor *y, dla_tensor *x)
{
    return dla_tensor_item(dla_mean(dla_square(dla_sub(y, x)), 0, NULL), 0);
}

/* Image n of x (28x28x1xN) in characters, row by row, beside image n of y. */
static void show(dla_tensor *x, dla_tensor *y, int64_t n)
{
    static const char shades[] = " .:-=+*#%@";
    float a[784], b[784];
    dla_scope_begin();
    if (dla_tensor_to_host(dla_slice(x, 4, n, 1, n + 1), a, sizeof a) != DLA_OK ||
        dla_tensor_to_host(dla_slice(y, 4, n, 1, n + 1), b, sizeof b) != DLA_OK) {
        dla_scope_end();
        return;
    }
    dla_scope_end();
    printf("test image %lld and its reconstruction:\n", (long long)n);
    for (int r = 0; r < 28; r += 2) { /* every other row: characters are tall */
        for (int pass = 0; pass < 2; pass++) {
            const float *img = pass ? b : a;
            for (int c = 0; c < 28; c++) {
                int k = (int)(img[r + 28 * c] * 9.999f);
                putchar(shades[k < 0 ? 0 : k > 9 ? 9 : k]);
            }
            fputs(pass ? "\n" : "    ", stdout);
        }
    }
}

static int run(int epochs, int64_t count, const char *dir);

int main(int argc, char **argv)
{
    int epochs = 2;
    int64_t count = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        long long n;
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("autoencoder", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            if (!example_int("autoencoder", "--count", argv[++i], 0, INT64_MAX, &n))
                return 2;
            count = n;
        } else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            dir = argv[++i];
        else
            return example_usage(argv[0], "[--epochs N] [--count N] [--data DIR]", argv[i]);
    }
    /* Every tensor below belongs to this scope, released at its end. */
    dla_scope_begin();
    const int rc = run(epochs, count, dir);
    dla_scope_end();
    return rc;
}

static int run(int epochs, int64_t count, const char *dir)
{
    dla_tensor *xtrain, *xtest;
    if (dla_fashion_mnist_load(dir, "train", &(dla_fashion_mnist_options){.count = count}, &xtrain,
                               NULL) != DLA_OK ||
        dla_fashion_mnist_load(dir, "test", NULL, &xtest, NULL) != DLA_OK)
        return fail("Fashion-MNIST");
    printf("device: %s; %lld training images, %lld test images\n",
           dla_device_name(dla_device_current()), (long long)dla_tensor_dim(xtrain, 4),
           (long long)dla_tensor_dim(xtest, 4));

    dla_rng_seed(1);
    dla_layer *layers[] = {
        dla_image_input_layer(28, 28, 1, &(dla_image_input_options){.normalization = "none"}),
        dla_conv2d_layer(3, 3, 16, &(dla_conv_layer_options){.stride = {2, 2}, .padding_mode = "same"}),
        dla_relu_layer(NULL),
        dla_conv2d_layer(3, 3, 16, &(dla_conv_layer_options){.stride = {2, 2}, .padding_mode = "same"}),
        dla_relu_layer(NULL),
        dla_transposed_conv2d_layer(4, 4, 16, &(dla_transposed_conv_layer_options){
            .stride = {2, 2}, .cropping_mode = "same"}),
        dla_relu_layer(NULL),
        dla_transposed_conv2d_layer(4, 4, 1, &(dla_transposed_conv_layer_options){
            .stride = {2, 2}, .cropping_mode = "same"}),
        dla_sigmoid_layer(NULL),
    };
    dla_net *net = dla_net_create(sizeof layers / sizeof layers[0], layers);
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK)
        return fail("network");
    char summary[8192];
    dla_net_summary(net, summary, sizeof summary);
    printf("%s\n", summary);

    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 128,
                              .shuffle = "every-epoch", .verbose_frequency = 100};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    dla_tensor *y = NULL;
    int rc = 0;
    if (dla_trainnet(&(dla_train_data){.predictors = xtrain, .targets = xtrain}, net,
                     &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        rc = fail("trainnet");
    else if (dla_net_predict(trained, 1, &xtest, 1, &y, NULL) != DLA_OK)
        rc = fail("predict");
    if (rc) {
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
        return rc;
    }
    const double err = mse(y, xtest);
    const double baseline = mse(dla_mean(xtrain, 1, (const int64_t[]){4}), xtest);
    printf("\ntest reconstruction error (mean squared, pixels in [0, 1]): %.5f; the mean training "
           "image's: %.5f (%.1fx lower)\n",
           err, baseline, baseline / err);
    show(xtest, y, 0);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    return err < 0.5 * baseline ? 0 : 1;
}

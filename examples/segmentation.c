/*
 * segmentation.c - semantic segmentation with U-Net's crop-and-concatenate
 * skip connection, trained by trainnet: each pixel of a noisy 24x24 image
 * is classified as inside or outside the bright rectangle it holds.
 *
 *   in 24x24x1 -> conv 3x3 "valid" 16 -> relu (22x22, the skip) -> maxpool
 *   2/2 (11x11) -> conv 3x3 "valid" 32 -> relu (9x9) -> conv 1x1 64 ->
 *   depthToSpace2dLayer 2 (18x18x16, "pixel shuffle" upsampling) ->
 *   depthConcatenation with crop2dLayer(skip, ref = the upsampled map,
 *   its centre 18x18) -> conv 3x3 "same" 16 -> relu -> conv 1x1 2 ->
 *   softmax, and "crossentropy" over every pixel of the 18x18 centre.
 *
 * The images are drawn here (a seeded stream): a rectangle of 5 to 12
 * rows and columns anywhere in the image, brightness 1, on noise of
 * standard deviation 0.35. The targets are the centre 18x18 of the
 * rectangle's mask, one-hot over two channels (outside, inside), as
 * crop2dLayer centres them.
 *
 *     build/examples/segmentation [--epochs N] [--count N]
 *
 * Prints trainnet's progress, the pixel accuracy and the intersection over
 * union of the "inside" class on 200 test images, and one test image's
 * prediction in characters. Exits 1 unless the pixel accuracy reaches 95%.
 */
#include "example_args.h"
#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDE 24 /* the images */
#define OUT 18  /* the predicted centre */

static int fail(const char *what)
{
    fprintf(stderr, "segmentation: %s: %s\n", what, dla_last_error());
    return 1;
}

/* A small generator of our own, so that the data is the same everywhere. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static double unit(uint64_t *s)
{
    return (double)(next(s) >> 11) / 9007199254740992.0;
}

static double normal(uint64_t *s)
{
    const double u = unit(s) + 1e-300, v = unit(s);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* n images (SIDE x SIDE x 1 x n) and their targets (OUT x OUT x 2 x n). */
static int draw(int64_t n, uint64_t seed, dla_tensor **x, dla_tensor **t)
{
    float *xs = malloc(sizeof *xs * SIDE * SIDE * (size_t)n);
    float *ts = malloc(sizeof *ts * OUT * OUT * 2 * (size_t)n);
    if (!xs || !ts) {
        free(xs), free(ts);
        return 0;
    }
    const int off = SIDE / 2 - OUT / 2; /* crop2dLayer's centre: 3 */
    for (int64_t k = 0; k < n; k++) {
        const int h = 5 + (int)(next(&seed) % 8), w = 5 + (int)(next(&seed) % 8);
        const int r0 = (int)(next(&seed) % (SIDE - h + 1)), c0 = (int)(next(&seed) % (SIDE - w + 1));
        for (int c = 0; c < SIDE; c++)
            for (int r = 0; r < SIDE; r++) {
                const int inside = r >= r0 && r < r0 + h && c >= c0 && c < c0 + w;
                xs[r + SIDE * (c + SIDE * k)] = (float)(inside + 0.35 * normal(&seed));
                if (r >= off && r < off + OUT && c >= off && c < off + OUT) {
                    float *o = ts + (r - off) + OUT * ((c - off) + OUT * 2 * k);
                    o[0] = (float)!inside;
                    o[OUT * OUT] = (float)inside;
                }
            }
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "SSCB", DLA_DIMS(SIDE, SIDE, 1, n));
    *t = dla_tensor_from_host(ts, DLA_F32, "SSCB", DLA_DIMS(OUT, OUT, 2, n));
    free(xs), free(ts);
    return dla_tensor_status(*x) == DLA_OK && dla_tensor_status(*t) == DLA_OK;
}

static dla_net *unet(void)
{
    const dla_conv_layer_options valid = {0};
    dla_layer *down[] = {
        dla_image_input_layer(SIDE, SIDE, 1, &(dla_image_input_options){.normalization = "none",
                                                                         .name = "in"}),
        dla_conv2d_layer(3, 3, 16, &(dla_conv_layer_options){.name = "enc1"}),
        dla_relu_layer(&(dla_layer_options){.name = "skip"}),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}}),
        dla_conv2d_layer(3, 3, 32, &valid),
        dla_relu_layer(NULL),
        dla_conv2d_layer(1, 1, 64, &valid),
        dla_depth_to_space2d_layer((const int64_t[]){2, 2}, &(dla_depth_to_space2d_layer_options){
            .name = "up"}),
        dla_depth_concatenation_layer(2, &(dla_layer_options){.name = "cat"}),
        dla_conv2d_layer(3, 3, 16, &(dla_conv_layer_options){.padding_mode = "same"}),
        dla_relu_layer(NULL),
        dla_conv2d_layer(1, 1, 2, &valid),
        dla_softmax_layer(NULL),
    };
    dla_layer *crop = dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"});
    dla_net *net = dla_net_create(sizeof down / sizeof down[0], down);
    if (!net || dla_net_add_layers(net, 1, &crop) != DLA_OK ||
        dla_net_connect(net, "skip", "crop/in") != DLA_OK ||
        dla_net_connect(net, "up", "crop/ref") != DLA_OK ||
        dla_net_connect(net, "crop", "cat/in2") != DLA_OK || dla_net_init(net, 0, NULL) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

/* Test image n's rectangle as the network sees it (#: inside) beside its
 * prediction, every other row. */
static void show(dla_tensor *t, dla_tensor *y, int64_t n)
{
    float a[OUT * OUT * 2], b[OUT * OUT * 2];
    dla_scope_begin();
    const int ok = dla_tensor_to_host(dla_slice(t, 4, n, 1, n + 1), a, sizeof a) == DLA_OK &&
                   dla_tensor_to_host(dla_slice(y, 4, n, 1, n + 1), b, sizeof b) == DLA_OK;
    dla_scope_end();
    if (!ok)
        return;
    printf("test image %lld, its rectangle and the prediction:\n", (long long)n);
    for (int r = 0; r < OUT; r += 2) {
        for (int pass = 0; pass < 2; pass++) {
            const float *p = pass ? b : a;
            for (int c = 0; c < OUT; c++)
                putchar(p[OUT * OUT + r + OUT * c] > 0.5f ? '#' : '.');
            fputs(pass ? "\n" : "    ", stdout);
        }
    }
}

static int run(int epochs, int64_t count);

int main(int argc, char **argv)
{
    int epochs = 6;
    long long count = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("segmentation", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            if (!example_int("segmentation", "--count", argv[++i], 1, 10000000, &count))
                return 2;
        } else
            return example_usage(argv[0], "[--epochs N] [--count N]", argv[i]);
    }
    /* Every tensor below belongs to this scope, released at its end. */
    dla_scope_begin();
    const int rc = run(epochs, count);
    dla_scope_end();
    return rc;
}

static int run(int epochs, int64_t count)
{
    dla_tensor *x, *t, *xtest, *ttest;
    if (!draw(count, 11, &x, &t) || !draw(200, 12, &xtest, &ttest))
        return fail("the images");
    dla_rng_seed(1);
    dla_net *net = unet();
    if (!net)
        return fail("network");
    char summary[16384];
    dla_net_summary(net, summary, sizeof summary);
    printf("device: %s\n%s\n", dla_device_name(dla_device_current()), summary);

    dla_training_options o = {.solver = "adam", .initial_learn_rate = 0.003,
                              .max_epochs = epochs, .mini_batch_size = 64,
                              .shuffle = "every-epoch", .verbose_frequency = 20};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    dla_tensor *y = NULL;
    int rc = 0;
    if (dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) != DLA_OK)
        rc = fail("trainnet");
    else if (dla_net_predict(trained, 1, &xtest, 1, &y, NULL) != DLA_OK)
        rc = fail("predict");
    if (rc) {
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
        return rc;
    }
    /* Pixel accuracy, and intersection over union of "inside". */
    dla_tensor *said = dla_cast(dla_gt(dla_slice(y, 3, 1, 1, 2), dla_slice(y, 3, 0, 1, 1)), DLA_F64);
    dla_tensor *truth = dla_slice(ttest, 3, 1, 1, 2);
    const double pixels = (double)dla_tensor_numel(said);
    const double right =
        dla_tensor_item(dla_sum(dla_cast(dla_eq(said, dla_cast(truth, DLA_F64)), DLA_F64), 0, NULL), 0);
    const double both = dla_tensor_item(dla_sum(dla_mul(said, dla_cast(truth, DLA_F64)), 0, NULL), 0);
    const double either = dla_tensor_item(dla_sum(said, 0, NULL), 0) +
                          dla_tensor_item(dla_sum(truth, 0, NULL), 0) - both;
    printf("\ntest pixel accuracy: %.2f%% of %.0f pixels; intersection over union of the "
           "rectangles: %.3f\n",
           100 * right / pixels, pixels, either > 0 ? both / either : 0.0);
    show(ttest, y, 0);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    return right / pixels >= 0.95 ? 0 : 1;
}

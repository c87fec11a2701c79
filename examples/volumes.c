/*
 * volumes.c - a 3-D convolutional network (volume_net.h: MATLAB's
 * image3dInputLayer, convolution3dLayer, maxPooling3dLayer and
 * globalAveragePooling3dLayer) classifies volumes, trained with trainnet. The volumes are
 * made here, 16x16x16 voxels in one channel with noise: a solid ball, a
 * hollow ball (a shell), or a solid cube, each of random size and place.
 * A ball and a shell look alike in most single slices, so the network has
 * to see the third dim. Prints the network, trainnet's progress with the
 * validation accuracy, the test accuracy per class (dla_minibatchpredict's
 * scores) and testnet's accuracy and cross-entropy.
 *
 *     build/examples/volumes [--epochs N] [--count N] [--seed S]
 *
 * --count makes N training volumes (1536 by default) and a quarter as many
 * test volumes. Exits 1 unless the test accuracy is above 90%.
 */
#include "example_cli.h"
#include "volume_net.h"
#include <dlaccel.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDE 16
#define CLASSES 3
static const char *const class_names[CLASSES] = {"ball", "shell", "cube"};

static int fail(const char *what)
{
    fprintf(stderr, "volumes: %s: %s\n", what, dla_last_error());
    return 1;
}

/* Volume n of class k into v (SIDE^3, column-major: x fastest, then y,
 * then z, as "SSSCB" holds it): the shape at 0.8 to 1.0, the background
 * at 0 to 0.2, plus noise. */
static void make_volume(uint64_t *s, int k, float *v)
{
    const double r = example_uniform(s, 3.5, 5.5);
    double c[3];
    for (int d = 0; d < 3; d++)
        c[d] = example_uniform(s, r + 0.5, SIDE - r - 1.5);
    const double level = example_uniform(s, 0.8, 1.0);
    for (int z = 0; z < SIDE; z++)
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                const double dx = x - c[0], dy = y - c[1], dz = z - c[2];
                const double dist = sqrt(dx * dx + dy * dy + dz * dz);
                const double box = fmax(fabs(dx), fmax(fabs(dy), fabs(dz)));
                int in = k == 0 ? dist <= r : k == 1 ? dist <= r && dist >= r - 1.5
                                                     : box <= 0.8 * r;
                v[x + SIDE * (y + SIDE * z)] =
                    (float)((in ? level : example_uniform(s, 0, 0.2)) + example_uniform(s, -0.15, 0.15));
            }
}

/* n volumes, "SSSCB" 16x16x16x1xn, and their classes 0..2 (int32). */
static dla_status make_set(uint64_t *s, int64_t n, dla_tensor **x, dla_tensor **t)
{
    const size_t per = (size_t)SIDE * SIDE * SIDE;
    float *v = malloc(sizeof *v * per * (size_t)n);
    int32_t *k = malloc(sizeof *k * (size_t)n);
    if (!v || !k) {
        free(v);
        free(k);
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "volumes: %lld volumes", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) {
        k[i] = (int32_t)(example_next(s) % CLASSES);
        make_volume(s, k[i], v + per * (size_t)i);
    }
    *x = dla_tensor_from_host(v, DLA_F32, "SSSCB", DLA_DIMS(SIDE, SIDE, SIDE, 1, n));
    *t = dla_tensor_from_host(k, DLA_I32, "", DLA_DIMS(n, 1));
    free(v);
    free(k);
    dla_status st = dla_tensor_status(*x);
    return st != DLA_OK ? st : dla_tensor_status(*t);
}

static int run(int epochs, int64_t count, uint64_t seed);

int main(int argc, char **argv)
{
    return example_main(argc, argv, "volumes", 4, 1536, run);
}

static int run(int epochs, int64_t count, uint64_t seed)
{
    uint64_t stream = seed;
    dla_tensor *xtrain, *ttrain, *xtest, *ttest;
    if (make_set(&stream, count, &xtrain, &ttrain) != DLA_OK ||
        make_set(&stream, count / 4, &xtest, &ttest) != DLA_OK)
        return fail("data");
    printf("device: %s; %lld training volumes and %lld test volumes of %dx%dx%d voxels\n",
           dla_device_name(dla_device_current()), (long long)count, (long long)(count / 4), SIDE,
           SIDE, SIDE);

    dla_rng_seed(seed);
    dla_net *net = volume_net_make(SIDE, CLASSES);
    if (!net)
        return fail("network");
    char summary[8192];
    dla_net_summary(net, summary, sizeof summary);
    printf("%s\n", summary);

    dla_train_data validation = {.predictors = xtest, .targets = ttest};
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 32,
                              .initial_learn_rate = 0.003, .shuffle = "every-epoch",
                              .metrics = "accuracy", .validation_data = &validation,
                              .validation_frequency = 24, .verbose_frequency = 24};
    double accuracy = 0;
    dla_train_data train = {.predictors = xtrain, .targets = ttrain};
    int rc = example_train_and_test("volumes", net, &train, &validation, &o, CLASSES, class_names,
                                    "volumes", &accuracy);
    dla_net_free(net);
    return rc ? rc : accuracy > 90 ? 0 : 1;
}

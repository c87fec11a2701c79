/*
 * datastores.c - training from files through MATLAB's generic datastores:
 *
 *     files  = fileDatastore(folder, 'ReadFcn', @readRecording, 'FileExtensions', '.csv');
 *     xs     = transform(files, @normalize);
 *     ts     = arrayDatastore(labels);
 *     ds     = combine(xs, ts);
 *     ds     = shuffle(ds);
 *     dsTrain = subset(ds, 1:480);   dsTest = subset(ds, 481:600);
 *     net    = trainnet(dsTrain, net, "crossentropy", options);
 *     testnet(net, dsTest, "accuracy")
 *
 * It writes its own data first: one CSV file per recording of a sensor,
 * 32 readings of a noisy oscillation whose frequency tells its class
 * (slow, medium, fast), with an offset and a gain of its own, and the
 * classes in a separate list, as a labelling tool would give them. The
 * file datastore reads a file per observation with a read function that
 * parses the numbers; the transform takes each recording's offset and
 * gain out; the array datastore hands out the labels; combine pairs them,
 * and trainnet reads {predictors, targets} from the combination.
 *
 *     build/examples/datastores [--epochs N] [--count N] [--seed S]
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "recordings.h"

#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READINGS RECORDING_PERIOD
#define CLASSES RECORDING_CLASSES
static const char *const *const class_names = recording_class_names;

static int fail(const char *what)
{
    fprintf(stderr, "datastores: %s: %s\n", what, dla_last_error());
    return 1;
}

/* fileDatastore's ReadFcn: one file's readings as a READINGS x 1 "CB"
 * single tensor. A file that does not hold READINGS numbers is an error
 * naming what was wrong (the datastore puts the function and the file in
 * front of the message). */
static dla_status read_recording(void *ctx, const char *path, int n, dla_tensor **outputs)
{
    (void)ctx, (void)n;
    float v[READINGS];
    int got = 0;
    if (recordings_read(path, v, READINGS, &got))
        return dla_set_error(DLA_ERR_IO, "cannot open it");
    if (got != READINGS)
        return dla_set_error(DLA_ERR_FORMAT, "%d numbers where %d were expected", got, READINGS);
    outputs[0] = dla_tensor_from_host(v, DLA_F32, "CB", DLA_DIMS(READINGS, 1));
    return dla_tensor_status(outputs[0]);
}

static int run(int epochs, int64_t count, uint64_t seed);

int main(int argc, char **argv)
{
    return example_main(argc, argv, "datastores", 15, 600, run);
}

static int run(int epochs, int64_t count, uint64_t seed)
{
    char dir[] = "/tmp/dlaccel-datastores-XXXXXX";
    int32_t *labels = malloc(sizeof *labels * (size_t)count);
    if (!labels || !mkdtemp(dir)) {
        free(labels);
        perror("datastores: a folder for the recordings");
        return 1;
    }
    uint64_t stream = seed;
    int rc = recordings_write(dir, count, &stream, labels, READINGS, READINGS);
    printf("wrote %lld recordings of %d readings as CSV files in %s\n", (long long)count,
           READINGS, dir);

    dla_datastore *files = NULL, *xs = NULL, *ts = NULL, *both = NULL, *mixed = NULL;
    dla_datastore *train = NULL, *test = NULL;
    dla_net *net = NULL;
    const char *step = NULL;
    int64_t along = 1; /* the transform normalizes along the readings (it reads this while training) */
    int64_t ntrain = count * 4 / 5, *idx = malloc(sizeof *idx * (size_t)count);
    if (rc || !idx)
        step = "data";
    else if (dla_file_datastore(1, (const char *const[]){dir}, (const char *const[]){".csv", NULL},
                                1, read_recording, NULL, &files) != DLA_OK)
        step = "fileDatastore";
    else if (dla_transform(files, 0, recordings_normalize, &along, &xs) != DLA_OK)
        step = "transform";
    else if (dla_array_datastore(dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, count)),
                                 NULL, &ts) != DLA_OK)
        step = "arrayDatastore";
    else if (dla_combine(2, (dla_datastore *const[]){xs, ts}, &both) != DLA_OK)
        step = "combine";
    else if (dla_datastore_shuffle(both, seed, &mixed) != DLA_OK)
        step = "shuffle";
    if (!step) {
        for (int64_t i = 0; i < count; i++)
            idx[i] = i;
        if (dla_datastore_subset(mixed, ntrain, idx, &train) != DLA_OK ||
            dla_datastore_subset(mixed, count - ntrain, idx + ntrain, &test) != DLA_OK)
            step = "subset";
    }
    if (step) {
        rc = fail(step);
        goto done;
    }
    printf("combine(transform(fileDatastore), arrayDatastore): %lld observations of %d outputs, "
           "%lld to train on and %lld to test\n",
           (long long)dla_datastore_num_observations(both), dla_datastore_num_outputs(both),
           (long long)ntrain, (long long)(count - ntrain));

    dla_rng_seed(seed);
    dla_layer *layers[] = {dla_feature_input_layer(READINGS, NULL), dla_fc_layer(64, NULL),
                           dla_relu_layer(NULL), dla_fc_layer(CLASSES, NULL),
                           dla_softmax_layer(NULL)};
    net = dla_net_create(5, layers);
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK) {
        rc = fail("network");
        goto done;
    }
    /* trainnet(dsTrain, net, "crossentropy", options): the datastore's
     * second output is the targets (class numbers, one-hot encoded per
     * batch). */
    dla_train_data validation = {.datastore = test};
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 32,
                              .initial_learn_rate = 0.003, .shuffle = "every-epoch",
                              .metrics = "accuracy", .validation_data = &validation,
                              .validation_frequency = 60, .verbose_frequency = 60};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    double m[2];
    if (dla_trainnet(&(dla_train_data){.datastore = train}, net,
                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) != DLA_OK)
        rc = fail("trainnet");
    else if (dla_testnet(trained, &validation, "accuracy,crossentropy", NULL, m) != DLA_OK)
        rc = fail("testnet");
    else {
        printf("testnet on the %lld held-out recordings (%s, %s, %s): accuracy %.2f%%, "
               "cross-entropy %.4f\n",
               (long long)(count - ntrain), class_names[0], class_names[1], class_names[2], m[0],
               m[1]);
        rc = m[0] > 90 ? 0 : 1;
    }
    dla_training_info_free(info);
    dla_net_free(trained);
done:
    dla_net_free(net);
    dla_datastore_free(train);
    dla_datastore_free(test);
    dla_datastore_free(mixed);
    dla_datastore_free(both);
    dla_datastore_free(ts);
    dla_datastore_free(xs);
    dla_datastore_free(files);
    recordings_remove(dir, count);
    free(labels);
    free(idx);
    return rc;
}

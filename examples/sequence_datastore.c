/*
 * sequence_datastore.c - recordings of different lengths, one CSV file
 * each, classified by an LSTM trained through MATLAB's generic datastores:
 *
 *     files  = fileDatastore(folder, 'ReadFcn', @readSequence, 'FileExtensions', '.csv');
 *     xs     = transform(files, @normalize);       % each a 1-by-T sequence
 *     ds     = combine(xs, arrayDatastore(labels));
 *     net    = trainnet(dsTrain, [sequenceInputLayer(1) lstmLayer(32, OutputMode="last") ...
 *                       fullyConnectedLayer(3) softmaxLayer], "crossentropy", ...
 *                       trainingOptions("adam", SequencePaddingDirection="left"));
 *
 * The recordings are those of examples/datastores (a noisy oscillation
 * whose frequency tells its class), 24 to 48 readings long. trainnet pads
 * each mini-batch to its longest sequence, on the left, so that the
 * LSTM's last step is every sequence's last reading; the datastore gives
 * each sequence as it is (1 x 1 x T), and the queue does the padding, as
 * it does for a list of sequences in memory.
 *
 *     build/examples/sequence_datastore [--epochs N] [--count N] [--seed S]
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "recordings.h"

#include <dlaccel.h>
#include <dlaccel/data.h>
#include <dlaccel/net.h>
#include <dlaccel/train.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SHORTEST 24
#define LONGEST 48

static int fail(const char *what)
{
    fprintf(stderr, "sequence_datastore: %s: %s\n", what, dla_last_error());
    return 1;
}

/* fileDatastore's ReadFcn: one file's readings as a 1 x 1 x T sequence
 * (one channel, one observation, T steps; the queue labels it "CBT"). */
static dla_status read_sequence(void *ctx, const char *path, int n, dla_tensor **outputs)
{
    (void)ctx, (void)n;
    float v[LONGEST + 1];
    int got = 0;
    if (recordings_read(path, v, LONGEST + 1, &got))
        return dla_set_error(DLA_ERR_IO, "cannot open it");
    if (got < SHORTEST || got > LONGEST)
        return dla_set_error(DLA_ERR_FORMAT, "%d readings; a recording has %d to %d", got,
                             SHORTEST, LONGEST);
    outputs[0] = dla_tensor_from_host(v, DLA_F32, "", DLA_DIMS(1, 1, got));
    return dla_tensor_status(outputs[0]);
}

static int run(int epochs, int64_t count, uint64_t seed)
{
    char dir[] = "/tmp/dlaccel-sequences-XXXXXX";
    int32_t *labels = malloc(sizeof *labels * (size_t)count);
    int64_t *idx = malloc(sizeof *idx * (size_t)count);
    if (!labels || !idx || !mkdtemp(dir)) {
        free(labels);
        free(idx);
        perror("sequence_datastore: a folder for the recordings");
        return 1;
    }
    uint64_t stream = seed;
    int rc = recordings_write(dir, count, &stream, labels, SHORTEST, LONGEST);
    printf("wrote %lld recordings of %d to %d readings as CSV files in %s\n", (long long)count,
           SHORTEST, LONGEST, dir);
    dla_datastore *files = NULL, *xs = NULL, *ts = NULL, *both = NULL, *train = NULL, *test = NULL;
    dla_net *net = NULL, *trained = NULL;
    dla_training_info *info = NULL;
    const int64_t ntrain = count * 4 / 5;
    for (int64_t i = 0; i < count; i++)
        idx[i] = i;
    const char *step = NULL;
    int64_t along = 3; /* normalized along its steps, whatever its length (read while training) */
    if (rc)
        step = "data";
    else if (dla_file_datastore(1, (const char *const[]){dir}, (const char *const[]){".csv", NULL},
                                1, read_sequence, NULL, &files) != DLA_OK)
        step = "fileDatastore";
    else if (dla_transform(files, 0, recordings_normalize, &along, &xs) != DLA_OK)
        step = "transform";
    else if (dla_array_datastore(dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, count)),
                                 NULL, &ts) != DLA_OK)
        step = "arrayDatastore";
    else if (dla_combine(2, (dla_datastore *const[]){xs, ts}, &both) != DLA_OK)
        step = "combine";
    else if (dla_datastore_subset(both, ntrain, idx, &train) != DLA_OK ||
             dla_datastore_subset(both, count - ntrain, idx + ntrain, &test) != DLA_OK)
        step = "subset";
    if (step) {
        rc = fail(step);
        goto done;
    }
    dla_rng_seed(seed);
    dla_layer *layers[] = {dla_sequence_input_layer(1, NULL),
                           dla_lstm_layer(32, &(dla_lstm_layer_options){.output_mode = "last"}),
                           dla_fc_layer(RECORDING_CLASSES, NULL), dla_softmax_layer(NULL)};
    net = dla_net_create(4, layers);
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK) {
        rc = fail("network");
        goto done;
    }
    /* Each mini-batch padded on the left to its longest sequence: the
     * LSTM's last step is then every sequence's last reading. */
    dla_train_data validation = {.datastore = test};
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = 32,
                              .initial_learn_rate = 0.005, .shuffle = "every-epoch",
                              .sequence_padding_direction = "left", .metrics = "accuracy",
                              .validation_data = &validation, .validation_frequency = 45,
                              .verbose_frequency = 45};
    double m[2];
    if (dla_trainnet(&(dla_train_data){.datastore = train}, net,
                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) != DLA_OK)
        rc = fail("trainnet");
    else if (dla_testnet(trained, &validation, "accuracy,crossentropy",
                         &(dla_predict_options){.sequence_padding_direction = "left"},
                         m) != DLA_OK)
        rc = fail("testnet");
    else {
        printf("testnet on the %lld held-out recordings of %d to %d readings (%s, %s, %s): "
               "accuracy %.2f%%, cross-entropy %.4f\n",
               (long long)(count - ntrain), SHORTEST, LONGEST, recording_class_names[0],
               recording_class_names[1], recording_class_names[2], m[0], m[1]);
        rc = m[0] > 85 ? 0 : 1;
    }
done:
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_datastore_free(train);
    dla_datastore_free(test);
    dla_datastore_free(both);
    dla_datastore_free(ts);
    dla_datastore_free(xs);
    dla_datastore_free(files);
    recordings_remove(dir, count);
    free(labels);
    free(idx);
    return rc;
}

int main(int argc, char **argv)
{
    return example_main(argc, argv, "sequence_datastore", 15, 600, run);
}

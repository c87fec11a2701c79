/*
 * predict.c - MATLAB's minibatchpredict: a network's predictions over
 * data too large to predict at once (a datastore, a large array), read
 * and run a mini-batch at a time through the same mini-batch queue as
 * trainnet, the outputs joined along their observation dim.
 */
#include "nn/nn.h"
#include "nn/train_impl.h"

#include <dlaccel/data.h>
#include <dlaccel/train.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char fn[] = "dla_minibatchpredict";

/* The queue of the data's predictors, in the network input's format and
 * dtype, on dev. */
static dla_status make_queue(dla_net *net, const dla_train_data *d, const dla_predict_options *p,
                             dla_device *dev, dla_mbq **q)
{
    /* Any value of the network: one without learnables (an input's
     * statistics and a softmax) is double too once cast. */
    dla_tensor *first = dla__net_first_value(net);
    char in_fmt[DLA_MAX_DIMS + 1] = "";
    int64_t dims[DLA_MAX_DIMS];
    if (d->predictors && !*dla_tensor_format(d->predictors))
        dla_net_input_activation(net, 0, dims, in_fmt);
    dla_mbq_input in = {
        .tensor = d->predictors, .sequences = d->sequences, .images = d->images,
        .cast = first && dla_tensor_dtype(first) == DLA_F64 ? "double" : "single",
        .format = *in_fmt ? in_fmt : NULL};
    dla_mbq_options o = {
        .mini_batch_size = p->mini_batch_size ? p->mini_batch_size : 128,
        .partial_mini_batch = "return",
        .dispatch_in_background = d->images != NULL,
        .device = dev,
        .sequence = {.length = p->sequence_length, .padding_value = p->sequence_padding_value,
                     .padding_direction = p->sequence_padding_direction},
    };
    return dla_mbq_create(1, &in, &o, q);
}

DLA_API dla_status dla_minibatchpredict(dla_net *net, const dla_train_data *data,
                                        const dla_predict_options *opts, dla_tensor **scores)
{
    if (scores)
        *scores = NULL;
    if (!net || !data || !scores)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                             !net ? "net" : !data ? "data" : "scores");
    const int sources = !!data->predictors + !!data->sequences + !!data->images;
    if (sources != 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: data: set exactly one of predictors, "
                             "sequences and images (%s)", fn,
                             sources ? "more than one is set" : "none is set");
    if (!dla_net_initialized(net))
        return dla_set_error(DLA_ERR_STATE, "%s: the network is not initialized", fn);
    if (dla_net_input_count(net) != 1 || dla_net_output_count(net) != 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: the network has %d inputs and %d "
                             "outputs; minibatchpredict takes one of each", fn,
                             dla_net_input_count(net), dla_net_output_count(net));
    const dla_predict_options p = opts ? *opts : (dla_predict_options){0};
    if (p.mini_batch_size < 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: MiniBatchSize %lld must be positive",
                             fn, (long long)p.mini_batch_size);
    /* A number padded or cut every sequence to it: longer ones were
     * predicted from their first steps alone, without a word. */
    const char *len = p.sequence_length;
    if (len && *len && strcmp(len, "longest") && strcmp(len, "shortest"))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: SequenceLength \"%s\": %suse "
                             "\"longest\" or \"shortest\"", fn, len,
                             dla__train_parse_sequence_length(len) > 0
                                 ? "a prediction reads whole sequences; " : "");
    dla_tensor *first = dla__net_first_value(net);
    dla_device *dev = first ? dla_tensor_device(first) : dla_device_current();
    dla_mbq *q = NULL;
    dla_status st = make_queue(net, data, &p, dev, &q);
    const int64_t nb = st == DLA_OK ? dla_mbq_num_batches(q) : 0;
    dla_tensor **parts = st == DLA_OK ? dla_malloc(sizeof *parts * (size_t)(nb ? nb : 1)) : NULL;
    if (st == DLA_OK && !parts)
        st = dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t made = 0;
    dla_tensor *out = NULL;
    dla_scope_begin();
    while (st == DLA_OK && made < nb && dla_mbq_hasdata(q)) {
        dla_tensor *x;
        st = dla_mbq_next(q, 1, &x);
        if (st == DLA_OK)
            st = dla_net_predict(net, 1, &x, 1, &parts[made], NULL);
        made += st == DLA_OK;
    }
    if (st == DLA_OK && made == 0)
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT, "the data has no observation");
    /* Sequence outputs of mini-batches padded to other lengths: say so in
     * the user's terms (dla_cat's message named tensors[1] and dims). */
    const int t = st == DLA_OK ? dla_tensor_find_dim(parts[0], 'T') : 0;
    for (int64_t i = 1; t > 0 && i < made && st == DLA_OK; i++)
        if (dla_tensor_dim(parts[i], t) != dla_tensor_dim(parts[0], t))
            st = dla_set_error(DLA_ERR_SHAPE, "the outputs are sequences, and those of "
                               "mini-batches 1 and %lld have %lld and %lld time steps (each "
                               "mini-batch is padded to its own longest sequence): they cannot "
                               "be joined; give a MiniBatchSize of all the sequences "
                               "or predict each mini-batch (dla_net_predict)", (long long)i + 1,
                               (long long)dla_tensor_dim(parts[0], t),
                               (long long)dla_tensor_dim(parts[i], t));
    if (st == DLA_OK) {
        /* Joined along the observations ("B"; the last dim unformatted). */
        const int b = dla_tensor_find_dim(parts[0], 'B');
        out = made == 1 ? parts[0]
                        : dla_cat(b > 0 ? b : dla_tensor_ndims(parts[0]), (int)made, parts);
        st = dla_tensor_status(out);
        if (st == DLA_OK)
            out = dla_keep(out);
    }
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "%s: %s", fn, msg);
    }
    dla_scope_end();
    dla_free(parts);
    dla_mbq_free(q);
    *scores = st == DLA_OK ? out : NULL;
    return st;
}

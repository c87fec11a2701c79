/*
 * predict.c - MATLAB's minibatchpredict: a network's predictions over
 * data too large to predict at once (a datastore, a large array), read
 * and run a mini-batch at a time through the same mini-batch queue as
 * trainnet, the outputs joined along their observation dim.
 */
#include "nn/nn.h"
#include "nn/data_image.h"
#include "nn/data_mbq.h"
#include "nn/datastore.h" /* dla__ds_live */
#include "nn/train_impl.h"

#include <dlaccel/data.h>
#include <dlaccel/train.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char fn[] = "dla_minibatchpredict";

/* MiniBatchSize: 128 when 0. */
static int64_t mbs_of(const dla_predict_options *p)
{
    return p->mini_batch_size ? p->mini_batch_size : 128;
}

/* A datastore of {predictors, targets}'s predictors alone. */
static dla_status predictors_only(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = in[0];
    return DLA_OK;
}

/* The queue of the data's predictors, in the network input's format and
 * dtype, on dev. */
static dla_status make_queue(dla_net *net, const dla_train_data *d, const dla_predict_options *p,
                             dla_device *dev, dla_mbq **q)
{
    /* The targets of a datastore of two outputs are not read into batches:
     * they need not join (sequence responses of different lengths do not,
     * unlabeled), and joining them is work for nothing. */
    if (d->datastore && dla_datastore_num_outputs(d->datastore) > 1) {
        dla_datastore *x;
        dla_status st = dla_transform(d->datastore, 1, predictors_only, NULL, &x);
        if (st != DLA_OK)
            return st;
        dla_train_data only = *d;
        only.datastore = x;
        st = make_queue(net, &only, p, dev, q);
        dla_datastore_free(x); /* the queue holds it */
        return st;
    }
    char in_fmt[DLA_MAX_DIMS + 1] = "";
    int64_t dims[DLA_MAX_DIMS];
    /* A datastore's batches always take the input's labels: its B dim
     * says which dim observations are joined along. */
    if ((d->predictors && !*dla_tensor_format(d->predictors)) || d->datastore)
        dla_net_input_activation(net, 0, dims, in_fmt);
    /* The predictors' format and cast; a datastore's targets as they come. */
    const char *fmts[2] = {*in_fmt ? in_fmt : NULL, NULL};
    const char *casts[2] = {dla__net_cast_name(net), NULL};
    dla_mbq_input in = {
        .tensor = d->predictors, .sequences = d->sequences, .images = d->images,
        .datastore = d->datastore,
        .cast = d->datastore ? NULL : casts[0],
        .format = d->datastore ? NULL : fmts[0],
        .formats = d->datastore ? fmts : NULL,
        .casts = d->datastore ? casts : NULL};
    dla_mbq_options o = {
        .mini_batch_size = mbs_of(p),
        .partial_mini_batch = "return",
        .dispatch_in_background = d->images != NULL || d->datastore != NULL,
        .device = dev,
        .sequence = {.length = p->sequence_length, .padding_value = p->sequence_padding_value,
                     .padding_direction = p->sequence_padding_direction},
    };
    return dla__mbq_create_counted(1, &in, &o, 0, 0, q); /* counted by the caller */
}

/* Sequence-to-sequence outputs of mini-batches padded to different
 * lengths: each padded along "T" to the longest, with the options'
 * SequencePaddingValue on the side SequencePaddingDirection says (the
 * inputs' padding, so a step keeps its place), into parts (the caller's
 * scope holds them). */
static dla_status pad_steps(dla_tensor **parts, int64_t n, const dla_predict_options *p)
{
    const int t = dla_tensor_find_dim(parts[0], 'T');
    if (t <= 0)
        return DLA_OK;
    int64_t longest = 0;
    for (int64_t i = 0; i < n; i++)
        longest = dla_tensor_dim(parts[i], t) > longest ? dla_tensor_dim(parts[i], t) : longest;
    const int left = p->sequence_padding_direction && !strcmp(p->sequence_padding_direction, "left");
    for (int64_t i = 0; i < n; i++) {
        const int64_t missing = longest - dla_tensor_dim(parts[i], t);
        if (missing == 0)
            continue;
        int64_t before[DLA_MAX_DIMS] = {0}, after[DLA_MAX_DIMS] = {0};
        if (left)
            before[t - 1] = missing;
        else
            after[t - 1] = missing;
        parts[i] = dla_pad(parts[i], dla_tensor_ndims(parts[i]), before, after,
                           p->sequence_padding_value);
        if (dla_tensor_status(parts[i]) != DLA_OK)
            return dla_tensor_status(parts[i]);
    }
    return DLA_OK;
}

/* The scores are one per file, in the files' order: a file that the
 * datastore skips as corrupt (skip_corrupt) would take its column out and
 * shift the scores of every file after it, so a batch that came back
 * short is refused, naming the file. (trainnet and testnet keep images
 * and targets paired, so they may skip.) x is the batch of the files from
 * first on. */
static dla_status check_none_skipped(const dla_imds *ds, dla_tensor *x, int64_t first,
                                     int64_t mbs, int64_t n)
{
    const int64_t want = n - first < mbs ? n - first : mbs;
    const int b = dla_tensor_find_dim(x, 'B');
    const int64_t got = dla_tensor_dim(x, b > 0 ? b : dla_tensor_ndims(x));
    if (got == want)
        return DLA_OK;
    const char *bad = dla__imds_first_skipped(ds, first, want);
    return dla_set_error(DLA_ERR_FORMAT,
                         "a mini-batch of %lld files came back with %lld: the datastore skips "
                         "corrupt files (skip_corrupt), starting with %s, and the scores are one "
                         "per file, so every later score would move to another file's place; "
                         "predict over a datastore without them (dla_imds_subset)",
                         (long long)want, (long long)got, bad ? bad : "one of them");
}

DLA_API dla_status dla_minibatchpredict(dla_net *net, const dla_train_data *data,
                                        const dla_predict_options *opts, dla_tensor **scores)
{
    if (scores)
        *scores = NULL;
    if (!net || !data || !scores)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                             !net ? "net" : !data ? "data" : "scores");
    const int sources = !!data->predictors + !!data->sequences + !!data->images +
                        !!data->datastore;
    if (sources != 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: data: set exactly one of predictors, "
                             "sequences, images and datastore (%s)", fn,
                             sources ? "more than one is set" : "none is set");
    /* A second output is the targets (trainnet's {predictors, targets}
     * datastore), read with the observation and dropped (make_queue). */
    if (data->datastore && !dla__ds_live(data->datastore, fn, "data.datastore"))
        return dla_last_status();
    if (data->datastore && dla_datastore_num_outputs(data->datastore) > 2)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: data: a datastore of %d outputs; minibatchpredict takes one of "
                             "the predictors alone, or of the predictors and the targets (two: "
                             "the network has one input)",
                             fn, dla_datastore_num_outputs(data->datastore));
    if (!dla_net_initialized(net))
        return dla_set_error(DLA_ERR_STATE, "%s: the network is not initialized", fn);
    /* One read in order that does not know its count is read through for
     * it once per call (trainnet's and testnet's rule). */
    dla_status counted = data->datastore ? dla__ds_learn_count(data->datastore, 1, fn) : DLA_OK;
    if (counted != DLA_OK)
        return counted;
    if (dla_net_input_count(net) != 1 || dla_net_output_count(net) != 1) {
        char hint[512];
        dla__mask_unfed_hint(net, hint, sizeof hint);
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: the network has %d input%s and %d "
                             "output%s; minibatchpredict takes one of each%s", fn,
                             dla_net_input_count(net), dla_net_input_count(net) == 1 ? "" : "s",
                             dla_net_output_count(net), dla_net_output_count(net) == 1 ? "" : "s",
                             hint);
    }
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
    dla_device *dev = dla__net_device(net);
    dla_mbq *q = NULL;
    dla_status st = make_queue(net, data, &p, dev, &q);
    const int64_t nb = st == DLA_OK ? dla_mbq_num_batches(q) : 0;
    dla_tensor **parts = st == DLA_OK ? dla_malloc(sizeof *parts * (size_t)(nb ? nb : 1)) : NULL;
    if (st == DLA_OK && !parts)
        st = dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t made = 0;
    dla_tensor *out = NULL;
    dla_scope_begin();
    const int64_t nobs = st == DLA_OK ? dla_mbq_num_observations(q) : 0;
    while (st == DLA_OK && made < nb && dla_mbq_hasdata(q)) {
        dla_tensor *b[2] = {NULL, NULL};
        st = dla_mbq_next(q, dla_mbq_num_outputs(q), b);
        dla_tensor *x = b[0];
        if (st == DLA_OK && data->images)
            st = check_none_skipped(data->images, x, made * mbs_of(&p), mbs_of(&p), nobs);
        if (st == DLA_OK)
            st = dla_net_predict(net, 1, &x, 1, &parts[made], NULL);
        made += st == DLA_OK;
    }
    if (st == DLA_OK && made == 0)
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT, "the data has no observation");
    if (st == DLA_OK && made > 1)
        st = pad_steps(parts, made, &p);
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

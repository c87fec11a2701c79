/*
 * test_datastore_sequences.c - sequences of different lengths through a
 * generic datastore: the mini-batch queue pads (or truncates) each batch
 * of an output whose format has a T label by the sequence options, as
 * dla_padsequences pads a sequence list, with its mask; and trainnet,
 * testnet and minibatchpredict over such a datastore train and predict as
 * over the sequence list (bit for bit), in one process and "parallel";
 * every allocation of a padded batch refused in turn fails cleanly.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tu_assert.h"

#define assert_ok(call)                                                                            \
    do {                                                                                           \
        dla_status st_ = (call);                                                                   \
        if (st_ != DLA_OK)                                                                         \
            fail_msg("%s: %s: %s", #call, dla_status_str(st_), dla_last_error());                 \
    } while (0)

/* The datastore over a sequence list: observation i is sequence i as a
 * C x 1 x T single array (unformatted: the queue's format labels it; or,
 * with formatted, "CBT" as the read function gives it),
 * with its class number (1 x 1 int32), or (with steps) a one-channel
 * response per step, 1 x 1 x T, from steps' sequence i. */
typedef struct list_ds {
    const dla_seqlist *seqs, *steps;
    const int32_t *labels;
    int formatted;
    int step_classes; /* steps holds class numbers, read as int32 */
} list_ds;

static dla_tensor *sequence_of(const dla_seqlist *s, int64_t i, int formatted)
{
    return dla_tensor_from_host(dla_seqlist_data(s, i), DLA_F32, formatted ? "CBT" : "",
                                DLA_DIMS(dla_seqlist_channels(s), 1, dla_seqlist_length(s, i)));
}

static dla_status list_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    const list_ds *l = ctx;
    (void)n;
    out[0] = sequence_of(l->seqs, i, l->formatted);
    out[1] = l->steps ? sequence_of(l->steps, i, l->formatted)
                      : dla_tensor_from_host(&l->labels[i], DLA_I32, "", DLA_DIMS(1, 1));
    if (l->step_classes)
        out[1] = dla_cast(out[1], DLA_I32);
    return DLA_OK;
}

/* The same list read in order (read/hasdata/reset, a known count). */
typedef struct list_reader {
    list_ds l;
    int64_t at;
} list_reader;

static dla_status reader_read(void *ctx, int n, dla_tensor **out)
{
    list_reader *r = ctx;
    return list_read_at(&r->l, r->at++, n, out);
}

static int reader_hasdata(void *ctx)
{
    const list_reader *r = ctx;
    return r->at < dla_seqlist_count(r->l.seqs);
}

static void reader_reset(void *ctx) { ((list_reader *)ctx)->at = 0; }

/* r's list as a datastore of two outputs read in order, of a known count. */
static dla_datastore *reader_datastore(list_reader *r)
{
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 2, .num_observations = dla_seqlist_count(r->l.seqs),
                                .read = reader_read, .hasdata = reader_hasdata,
                                .reset = reader_reset, .ctx = r},
        &ds));
    return ds;
}

static dla_datastore *list_datastore(list_ds *l)
{
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 2, .num_observations = dla_seqlist_count(l->seqs),
                                .read_at = list_read_at, .ctx = l},
        &ds));
    return ds;
}

/* n waveforms of 2 channels and 5..12 steps, and their classes (host). */
static dla_seqlist *waveforms(int64_t n, int32_t *labels)
{
    dla_seqlist *s;
    dla_tensor *lab;
    dla_scope_begin();
    assert_ok(dla_waveform_generate(
        n, 3, &(dla_waveform_options){.num_channels = 2, .min_length = 5, .max_length = 12}, &s,
        &lab));
    assert_ok(dla_tensor_to_host(lab, labels, (size_t)n * sizeof *labels));
    dla_scope_end();
    return s;
}

/* ------------------------------------------------------------ the queue */

static void queue_pads_as_padsequences(const dla_sequence_options *so, int background)
{
    enum { N = 23, MBS = 5 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    list_ds l = {.seqs = s, .labels = labels};
    dla_datastore *ds = list_datastore(&l);
    dla_mbq *q;
    assert_ok(dla_mbq_create(
        1, &(dla_mbq_input){.datastore = ds, .formats = (const char *[]){"CBT", "CB"}, .mask = 1},
        &(dla_mbq_options){.mini_batch_size = MBS, .sequence = *so, .seed = 4,
                           .dispatch_in_background = background},
        &q));
    dla_datastore_free(ds);
    assert_int_equal(dla_mbq_num_outputs(q), 3);
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            dla_mbq_shuffle(q); /* the batches follow the new order */
        int64_t order[N];
        assert_ok(dla_mbq_order(q, order, N));
        for (int64_t start = 0; dla_mbq_hasdata(q); start += MBS) {
            dla_scope_begin();
            dla_tensor *b[3], *x, *m;
            assert_ok(dla_mbq_next(q, 3, b));
            const int64_t n = N - start < MBS ? N - start : MBS;
            assert_ok(dla_padsequences(s, n, order + start, so, &x, &m));
            assert_string_equal(dla_tensor_format(b[0]), "CBT");
            assert_string_equal(dla_tensor_format(b[1]), "CBT");
            assert_true(tu_same_bits(b[0], x));
            assert_true(tu_same_bits(b[1], m));
            int32_t got[MBS];
            assert_int_equal(dla_tensor_numel(b[2]), n);
            assert_ok(dla_tensor_to_host(b[2], got, sizeof got[0] * (size_t)n));
            for (int64_t k = 0; k < n; k++)
                assert_int_equal(got[k], labels[order[start + k]]);
            dla_scope_end();
        }
    }
    dla_mbq_free(q);
    dla_seqlist_free(s);
}

static void test_a_datastore_read_in_order_is_padded_alike(void **state)
{
    (void)state;
    enum { N = 11, MBS = 4 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    list_reader r = {.l = {.seqs = s, .labels = labels}};
    dla_datastore *ds = reader_datastore(&r);
    const dla_sequence_options so = {.padding_direction = "left", .padding_value = 9};
    dla_mbq *q;
    assert_ok(dla_mbq_create(
        1, &(dla_mbq_input){.datastore = ds, .formats = (const char *[]){"CBT", NULL}, .mask = 1},
        &(dla_mbq_options){.mini_batch_size = MBS, .sequence = so}, &q));
    dla_datastore_free(ds);
    for (int pass = 0; pass < 2; pass++) {
        dla_mbq_reset(q);
        for (int64_t start = 0; dla_mbq_hasdata(q); start += MBS) {
            dla_scope_begin();
            dla_tensor *b[3], *x, *m;
            assert_ok(dla_mbq_next(q, 3, b));
            const int64_t n = N - start < MBS ? N - start : MBS;
            int64_t idx[MBS];
            for (int64_t k = 0; k < n; k++)
                idx[k] = start + k;
            assert_ok(dla_padsequences(s, n, idx, &so, &x, &m));
            assert_true(tu_same_bits(b[0], x));
            assert_true(tu_same_bits(b[1], m));
            dla_scope_end();
        }
    }
    dla_mbq_free(q);
    dla_seqlist_free(s);
}

/* Sequences of one step or none (an array C x 1 x 1 reports fewer dims)
 * are padded, cut and masked as dla_padsequences does, labeled by the
 * read function or not. */
static void test_sequences_of_one_step_or_none_are_padded_alike(void **state)
{
    (void)state;
    enum { N = 7, MBS = 3 };
    const int64_t lens[N] = {3, 1, 0, 4, 1, 2, 1};
    dla_seqlist *s = dla_seqlist_create(2);
    float v[8];
    for (int k = 0; k < 8; k++)
        v[k] = (float)k + 1;
    for (int i = 0; i < N; i++)
        assert_ok(dla_seqlist_append(s, v, lens[i]));
    const int32_t labels[N] = {0};
    const dla_sequence_options rules[] = {{0},
                                          {.padding_direction = "left", .padding_value = 3},
                                          {.length = "shortest"},
                                          {.length = "2", .padding_direction = "left"}};
    for (int formatted = 0; formatted < 2; formatted++)
        for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
            list_ds l = {.seqs = s, .labels = labels, .formatted = formatted};
            dla_datastore *ds = list_datastore(&l);
            dla_mbq *q;
            assert_ok(dla_mbq_create(1,
                                     &(dla_mbq_input){.datastore = ds,
                                                      .formats = (const char *[]){"CBT", "CB"},
                                                      .mask = 1},
                                     &(dla_mbq_options){.mini_batch_size = MBS,
                                                        .sequence = rules[r]},
                                     &q));
            dla_datastore_free(ds);
            for (int64_t start = 0; dla_mbq_hasdata(q); start += MBS) {
                dla_scope_begin();
                dla_tensor *b[3], *x, *m;
                assert_ok(dla_mbq_next(q, 3, b));
                const int64_t idx[MBS] = {start, start + 1, start + 2};
                const int64_t n = N - start < MBS ? N - start : MBS;
                assert_ok(dla_padsequences(s, n, idx, &rules[r], &x, &m));
                assert_true(tu_same_bits(b[0], x));
                assert_true(tu_same_bits(b[1], m));
                dla_scope_end();
            }
            dla_mbq_free(q);
        }
    dla_seqlist_free(s);
}

/* Observation i of int32 sequences: 1, 2, ... of 1 + i steps. */
static dla_status counts_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)ctx, (void)n;
    const int32_t v[4] = {1, 2, 3, 4};
    out[0] = dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(1, 1, 1 + i));
    return DLA_OK;
}

/* Three of counts_read_at's sequences as a datastore. */
static dla_datastore *counts_datastore(void)
{
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 1, .num_observations = 3,
                                .read_at = counts_read_at},
        &ds));
    return ds;
}

/* A cast applies before the padding: int32 sequences cast to single are
 * padded with 0.5 as a list of the same values is (padded as int32 first,
 * the padding value became 0 without a word, and trainnet's predictors
 * differed from the list's). */
static void test_a_cast_sequence_is_padded_with_the_value_in_its_cast(void **state)
{
    (void)state;
    dla_datastore *ds = counts_datastore();
    dla_seqlist *s = dla_seqlist_create(1);
    const float v[4] = {1, 2, 3, 4};
    for (int i = 0; i < 3; i++)
        assert_ok(dla_seqlist_append(s, v, 1 + i));
    for (int left = 0; left < 2; left++) {
        const dla_sequence_options so = {.padding_value = 0.5,
                                         .padding_direction = left ? "left" : NULL};
        dla_mbq *q;
        assert_ok(dla_mbq_create(
            1, &(dla_mbq_input){.datastore = ds, .format = "CBT", .cast = "single", .mask = 1},
            &(dla_mbq_options){.mini_batch_size = 3, .sequence = so}, &q));
        dla_scope_begin();
        dla_tensor *b[2], *x, *m;
        assert_ok(dla_mbq_next(q, 2, b));
        assert_ok(dla_padsequences(s, 3, NULL, &so, &x, &m));
        assert_true(tu_same_bits(b[0], x));
        assert_true(tu_same_bits(b[1], m));
        dla_scope_end();
        dla_mbq_free(q);
    }
    dla_seqlist_free(s);
    dla_datastore_free(ds);
}

/* A padding value the padded dtype cannot hold is refused: int32
 * sequences left as they are padded with 0.5 were padded with 0 (fill
 * truncates), uint8 ones with -1 with 0, and nothing said so; -1 and 7
 * fit int32 and are kept. */
static void test_a_padding_value_the_dtype_cannot_hold_is_refused(void **state)
{
    (void)state;
    dla_datastore *ds = counts_datastore();
    const struct {
        double value;
        const char *cast;
        int fits;
    } cases[] = {{0.5, NULL, 0}, {-1, NULL, 1}, {7, NULL, 1}, {3e9, NULL, 0},
                 {-1, "uint8", 0}, {255, "uint8", 1}, {2, "logical", 0}, {0.5, "double", 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dla_mbq *q;
        assert_ok(dla_mbq_create(
            1, &(dla_mbq_input){.datastore = ds, .format = "CBT", .cast = cases[c].cast},
            &(dla_mbq_options){.mini_batch_size = 3,
                               .sequence = {.padding_value = cases[c].value}},
            &q));
        dla_scope_begin();
        dla_tensor *b;
        dla_status st = dla_mbq_next(q, 1, &b);
        if (cases[c].fits) {
            assert_ok(st);
            double v[3 * 3];
            assert_ok(dla_tensor_to_host(dla_cast(b, DLA_F64), v, sizeof v));
            tu_assert_near(v[3], cases[c].value, 0); /* observation 0 at step 1: padding */
        } else {
            assert_int_equal(st, DLA_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(dla_last_error(), "does not hold"));
        }
        dla_scope_end();
        dla_mbq_free(q);
    }
    /* Cut to the shortest, nothing is padded: the value is never stored
     * (it was refused all the same). */
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, &(dla_mbq_input){.datastore = ds, .format = "CBT"},
                             &(dla_mbq_options){.mini_batch_size = 3,
                                                .sequence = {.length = "shortest",
                                                             .padding_value = 0.5}},
                             &q));
    dla_scope_begin();
    dla_tensor *b;
    assert_ok(dla_mbq_next(q, 1, &b));
    dla_scope_end();
    dla_mbq_free(q);
    dla_datastore_free(ds);
}

static void test_queue_pads_each_batch_as_padsequences(void **state)
{
    (void)state;
    const dla_sequence_options rules[] = {
        {0},
        {.length = "shortest", .padding_direction = "left"},
        {.length = "7", .padding_value = -1},
        {.length = "9", .padding_direction = "left", .padding_value = 2.5},
    };
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
        for (int background = 0; background < 2; background++)
            queue_pads_as_padsequences(&rules[r], background);
}

/* Observation i: a 1 x 1 x (4 - 2i) sequence 1, 2, ... and (ctx set) a
 * (1 + i) x 1 x 2 one, whose channels differ. */
static dla_status two_seqs_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    out[0] = dla_tensor_from_host(v, DLA_F32, "", DLA_DIMS(1, 1, 4 - 2 * i));
    out[1] = dla_tensor_from_host(v, DLA_F32, "", DLA_DIMS(ctx ? 1 + i : 1, 1, 2 + i));
    return DLA_OK;
}

static void test_sequence_outputs_that_do_not_fit_are_refused(void **state)
{
    (void)state;
    enum { N = 6 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    list_ds l = {.seqs = s, .labels = labels};
    dla_datastore *ds = list_datastore(&l);
    dla_mbq *q;
    dla_tensor *b[3];
    /* No T in any format: nothing is a sequence to mask. */
    assert_int_equal(dla_mbq_create(1, &(dla_mbq_input){.datastore = ds, .mask = 1}, NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(q);
    assert_non_null(strstr(dla_last_error(), "a format with a T label"));
    /* Without a T label, sequences of two lengths are not joined. */
    assert_ok(dla_mbq_create(1, &(dla_mbq_input){.datastore = ds}, NULL, &q));
    assert_int_equal(dla_mbq_next(q, 2, b), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "every observation of an output has one shape,"));
    dla_mbq_free(q);
    dla_datastore_free(ds);
    dla_seqlist_free(s);

    /* Two outputs of sequences, each padded to its own longest; the mask
     * is the first one's. */
    dla_custom_datastore def = {.num_outputs = 2, .num_observations = 2,
                                .read_at = two_seqs_read_at};
    assert_ok(dla_custom_datastore_create(&def, &ds));
    assert_ok(dla_mbq_create(1, &(dla_mbq_input){.datastore = ds, .format = "CBT", .mask = 1},
                             NULL, &q));
    dla_datastore_free(ds);
    assert_int_equal(dla_mbq_num_outputs(q), 3);
    dla_scope_begin();
    assert_ok(dla_mbq_next(q, 3, b));
    assert_string_equal(dla_tensor_format(b[2]), "CBT");
    int64_t d[3];
    assert_int_equal(dla_tensor_dims(b[0], d), 3);
    assert_true(d[0] == 1 && d[1] == 2 && d[2] == 4);
    assert_int_equal(dla_tensor_dims(b[1], d), 3);
    assert_true(d[0] == 1 && d[1] == 2 && d[2] == 4);
    assert_int_equal(dla_tensor_dims(b[2], d), 3);
    assert_true(d[0] == 1 && d[1] == 2 && d[2] == 3);
    float x[8], y[6];
    unsigned char m[8];
    assert_ok(dla_tensor_to_host(b[0], x, sizeof x));
    assert_ok(dla_tensor_to_host(b[1], m, sizeof m));
    assert_ok(dla_tensor_to_host(b[2], y, sizeof y));
    /* Step by step (C x B x T), padded with 0 on the right. */
    const float want_x[8] = {1, 1, 2, 2, 3, 0, 4, 0}, want_y[6] = {1, 1, 2, 2, 0, 3};
    const unsigned char want_m[8] = {1, 1, 1, 1, 1, 0, 1, 0};
    for (int k = 0; k < 8; k++) {
        tu_assert_near(x[k], want_x[k], 0);
        assert_int_equal(m[k], want_m[k]);
    }
    for (int k = 0; k < 6; k++)
        tu_assert_near(y[k], want_y[k], 0);
    dla_scope_end();
    dla_mbq_free(q);

    /* The steps may differ, the channels may not. */
    def.ctx = &def;
    assert_ok(dla_custom_datastore_create(&def, &ds));
    assert_ok(dla_mbq_create(1, &(dla_mbq_input){.datastore = ds, .format = "CBT"}, NULL, &q));
    dla_datastore_free(ds);
    assert_int_equal(dla_mbq_next(q, 2, b), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "output 2 of observation 1"));
    assert_non_null(strstr(dla_last_error(), "is 2x1x3 single"));
    assert_non_null(strstr(dla_last_error(), "one shape but for its time steps"));
    dla_mbq_free(q);
}

/* One pass of a queue padding a datastore's sequences, with its mask, on
 * either side, a worker's share of the whole batch's length included. */
static dla_status padded_pass(const dla_seqlist *s, const int32_t *labels)
{
    list_ds l = {.seqs = s, .labels = labels};
    dla_datastore *ds = NULL;
    dla_mbq *q = NULL;
    dla_scope_begin();
    dla_status st = dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 2, .num_observations = dla_seqlist_count(s),
                                .read_at = list_read_at, .ctx = &l},
        &ds);
    for (int left = 0; left < 2 && st == DLA_OK; left++) {
        st = dla_mbq_create(
            1, &(dla_mbq_input){.datastore = ds, .formats = (const char *[]){"CBT", "CB"},
                                .mask = 1},
            &(dla_mbq_options){.mini_batch_size = 3,
                               .sequence = {.padding_direction = left ? "left" : "right"}},
            &q);
        while (st == DLA_OK && dla_mbq_hasdata(q)) {
            dla_tensor *b[3];
            st = dla_mbq_next(q, 3, b);
        }
        dla_mbq_free(q);
        q = NULL;
    }
    dla_datastore_free(ds);
    dla_scope_end();
    return st;
}

typedef struct padded_data {
    const dla_seqlist *s;
    const int32_t *labels;
} padded_data;

static dla_status padded_once(void *ctx)
{
    const padded_data *d = ctx;
    return padded_pass(d->s, d->labels);
}

static void test_every_refused_allocation_of_a_padded_batch_fails_cleanly(void **state)
{
    (void)state;
    enum { N = 7 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    padded_data d = {s, labels};
    char why[1024];
    dla_set_allocator(tu_atomic_alloc, NULL);
    const int refused = tu_refuse_each(padded_once, &d, why, sizeof why);
    dla_set_allocator(NULL, NULL);
    if (refused < 0)
        fail_msg("%s", why);
    fprintf(stderr, "# %d refused allocations failed cleanly\n", refused);
    assert_true(refused > 10);
    dla_seqlist_free(s);
}

/* ------------------------------------------------------------- trainnet */

static void assert_same_learnables(dla_net *a, dla_net *b)
{
    dla_table *la = dla_net_learnables(a), *lb = dla_net_learnables(b);
    assert_int_equal(dla_table_count(la), dla_table_count(lb));
    for (int i = 0; i < dla_table_count(la); i++)
        assert_true(tu_same_bits(dla_table_values(la)[i], dla_table_values(lb)[i]));
}

/* b trained (with its history ib) as a did, bit for bit: the same
 * iterations, losses, validation losses and learnables. */
static void assert_trained_alike(dla_training_info *ia, dla_training_info *ib, dla_net *a,
                                 dla_net *b)
{
    assert_int_equal(ib->iterations, ia->iterations);
    for (int64_t i = 0; i < ia->iterations; i++)
        tu_assert_near(ib->training_loss[i], ia->training_loss[i], 0);
    assert_int_equal(ib->validations, ia->validations);
    for (int64_t i = 0; i < ia->validations; i++)
        tu_assert_near(ib->validation_loss[i], ia->validation_loss[i], 0);
    assert_same_learnables(a, b);
}

/* A sequence classifier (LSTM, last step) or, per_step 1, a
 * sequence-to-sequence regression of one response per step, or, 2, a
 * classifier of each step into 3 classes, over 2-channel input. */
static dla_net *sequence_net(int per_step)
{
    dla_rng_seed(7);
    dla_layer *l[] = {
        dla_sequence_input_layer(2, &(dla_sequence_input_options){.name = "in",
                                                                  .normalization = "zscore"}),
        dla_lstm_layer(6, &(dla_lstm_layer_options){.output_mode = per_step ? NULL : "last"}),
        dla_fc_layer(per_step == 1 ? 1 : per_step ? 3 : 4, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(per_step == 1 ? 3 : 4, l);
    if (per_step == 1)
        dla_layer_free(l[3]);
    assert_non_null(net);
    return net;
}

/* trainnet over the datastore and over the sequence list: the same
 * losses, validation losses and learnables, bit for bit; then testnet and
 * minibatchpredict over each. */
static void train_both_ways_as(int per_step, const char *environment, const char *length,
                               const char *direction, int formatted)
{
    enum { N = 26 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels), *resp = NULL;
    if (per_step) { /* a response per step: the first channel, halved; or its sign class */
        resp = dla_seqlist_create(1);
        for (int64_t i = 0; i < N; i++) {
            const int64_t len = dla_seqlist_length(s, i);
            float r[16];
            for (int64_t t = 0; t < len; t++) {
                const float v = dla_seqlist_data(s, i)[2 * t];
                r[t] = per_step == 1 ? 0.5f * v : v < -0.3f ? 0 : v < 0.3f ? 1 : 2;
            }
            assert_ok(dla_seqlist_append(resp, r, len));
        }
    }
    list_ds l = {.seqs = s, .labels = labels, .steps = resp, .formatted = formatted,
                 .step_classes = per_step == 2};
    dla_datastore *ds = list_datastore(&l);
    dla_scope_begin();
    dla_tensor *lab = dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, N));
    dla_train_data from_list = {.sequences = s, .targets = per_step ? NULL : lab,
                                .target_sequences = resp},
                   from_ds = {.datastore = ds};
    dla_training_options o = {.verbose = -1, .solver = "adam", .max_epochs = 3,
                              .mini_batch_size = 6, .shuffle = "every-epoch",
                              .sequence_length = length, .sequence_padding_direction = direction,
                              .sequence_padding_value = 0.25, .validation_frequency = 2,
                              .execution_environment = environment};
    dla_net *net = sequence_net(per_step), *a, *b;
    dla_training_info *ia, *ib;
    const char *loss = per_step == 1 ? "mse" : "crossentropy";
    o.validation_data = &from_list;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&from_list, net, &(dla_train_loss){.name = loss}, &o, &a, &ia));
    o.validation_data = &from_ds;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&from_ds, net, &(dla_train_loss){.name = loss}, &o, &b, &ib));
    assert_true(ia->iterations >= 12);
    assert_trained_alike(ia, ib, a, b);
    /* The input layer's statistics, taken from the datastore's sequences. */
    dla_tensor *mean = dla_net_get(a, "in", "StandardDeviation");
    assert_non_null(mean);
    assert_true(tu_same_bits(mean, dla_net_get(b, "in", "StandardDeviation")));
    /* A prediction reads whole sequences: no number there. */
    const int chunked = length && length[0] >= '0' && length[0] <= '9';
    const dla_predict_options po = {.mini_batch_size = 4,
                                    .sequence_length = chunked ? NULL : length,
                                    .sequence_padding_direction = direction};
    double va, vb;
    assert_ok(dla_testnet(a, &from_list, loss, &po, &va));
    assert_ok(dla_testnet(a, &from_ds, loss, &po, &vb));
    tu_assert_near(vb, va, 0);
    dla_tensor *pa, *pb;
    assert_ok(dla_minibatchpredict(a, &from_list, &po, &pa));
    assert_ok(dla_minibatchpredict(a, &from_ds, &po, &pb));
    assert_true(tu_same_bits(pa, pb));
    dla_scope_end();
    dla_training_info_free(ia);
    dla_training_info_free(ib);
    dla_net_free(a);
    dla_net_free(b);
    dla_net_free(net);
    dla_datastore_free(ds);
    dla_seqlist_free(resp);
    dla_seqlist_free(s);
}

static void train_both_ways(int per_step, const char *environment, const char *length,
                            const char *direction)
{
    train_both_ways_as(per_step, environment, length, direction, 0);
}

static void test_trainnet_over_sequences_of_a_datastore(void **state)
{
    (void)state;
    train_both_ways(0, NULL, NULL, NULL);
    train_both_ways(0, NULL, "shortest", "left");
    train_both_ways(0, NULL, "longest", "left");
}

static void test_trainnet_sequence_to_sequence_from_a_datastore(void **state)
{
    (void)state;
    /* Padded steps are masked out of the loss as a list's are. */
    train_both_ways(1, NULL, NULL, NULL);
    train_both_ways(1, NULL, "longest", "left");
    /* A number: each mini-batch split into chunks of so many steps. */
    train_both_ways(1, NULL, "4", NULL);
    /* Observations the read function labels "CBT" itself, the targets
     * too: theirs are padded per batch as unlabeled ones (they were left
     * to the datastore's rule, and the first batch with two lengths of
     * targets failed: "every observation of an output has one shape"). */
    train_both_ways_as(1, NULL, NULL, NULL, 1);
    train_both_ways_as(1, NULL, "longest", "left", 1);
}

/* Class numbers per step (int32 1 x 1 x T) from a datastore train as the
 * same classes in target_sequences do (trainnet took them for responses
 * and refused their one channel against the output's three). */
static void test_trainnet_classes_per_step_from_a_datastore(void **state)
{
    (void)state;
    train_both_ways(2, NULL, NULL, NULL);
    train_both_ways(2, NULL, "longest", "left");
    train_both_ways(2, NULL, "4", NULL);
    train_both_ways_as(2, NULL, NULL, NULL, 1);
}

/* Observation i: a 2 x 1 x (3 + i % 4) sequence and its class numbers
 * per step (int32, i % 3 each); how says what is wrong: 1, observation
 * 3's targets are a step short; 2, observation 2's step 1 is class 5; 3,
 * one class per observation (1 x 1) for the network's sequence; 4, none,
 * but observation 0 is one step long (its class 1 x 1 as well); 5, one
 * class per observation labeled "CB", observation 0 one step long. */
static dla_status bad_steps_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    const int how = *(const int *)ctx;
    const int64_t len = how >= 4 && i == 0 ? 1 : 3 + i % 4;
    float x[12];
    int32_t c[6];
    for (int k = 0; k < 12; k++)
        x[k] = (float)(k % 5) - 2;
    for (int k = 0; k < 6; k++)
        c[k] = (int32_t)(i % 3);
    if (how == 2 && i == 2)
        c[1] = 5;
    out[0] = dla_tensor_from_host(x, DLA_F32, "", DLA_DIMS(2, 1, len));
    out[1] = how == 5 ? dla_tensor_from_host(c, DLA_I32, "CB", DLA_DIMS(1, 1))
                      : dla_tensor_from_host(c, DLA_I32, "",
                                             DLA_DIMS(1, 1, how == 3                ? 1
                                                            : how == 1 && i == 3 ? len - 1
                                                                                 : len));
    return DLA_OK;
}

/* Class numbers per step that do not fit fail the batch naming the
 * observation: targets a step short of their predictors (padded to the
 * batch's longest they lined up with other steps, silently), a class out
 * of range at a step that holds data; the padding value is no class. */
static void test_classes_per_step_that_do_not_fit_are_refused(void **state)
{
    (void)state;
    dla_net *net = sequence_net(2), *trained = NULL;
    for (int how = 0; how < 6; how++) {
        dla_datastore *ds;
        assert_ok(dla_custom_datastore_create(
            &(dla_custom_datastore){.num_outputs = 2, .num_observations = 8,
                                    .read_at = bad_steps_read_at, .ctx = &how},
            &ds));
        dla_training_options o = {.verbose = -1, .max_epochs = 1, .mini_batch_size = 4,
                                  .shuffle = "never", .sequence_padding_value = -7};
        dla_status st = dla_trainnet(&(dla_train_data){.datastore = ds}, net,
                                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                     NULL);
        if (how == 0 || how == 4) {
            /* 4: a first sequence of one step, its class a single value,
             * was taken for one class per observation and refused. */
            assert_ok(st);
            dla_net_free(trained);
        } else {
            static const char *const says[] = {
                NULL,
                "observation 3 of the custom datastore: output 1 is a sequence of 6 time steps, "
                "output 2 of 5",
                "observation 2 of the batch, step 1: 5 is not a class number in 0..2",
                "one class per observation but the network's output \"CBT\" is a sequence: end "
                "it with OutputMode \"last\""};
            assert_int_equal(st, how == 2 ? DLA_ERR_INVALID_ARGUMENT : DLA_ERR_SHAPE);
            if (!strstr(dla_last_error(), says[how == 5 ? 3 : how]))
                fail_msg("%s", dla_last_error());
            dla_net_free(trained); /* the work up to the batch, kept */
            trained = NULL;
        }
        dla_datastore_free(ds);
    }
    dla_net_free(net);
}

/* Observation i: a 2 x 1 x 8 sequence and its targets at every other
 * step (what a stride-2 convolution over T gives): 1 x 1 x 4, responses
 * or (ctx 1) int32 class numbers; ctx 2: class numbers, odd observations
 * 10 steps long (5 targets); ctx 3: responses, of those lengths; ctx 4:
 * as 3, observation 2's target 1 NaN. */
static dla_status halved_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    const int how = *(const int *)ctx;
    const int64_t len = how >= 2 && i % 2 ? 10 : 8;
    float x[20], y[5];
    int32_t c[5];
    for (int k = 0; k < 20; k++)
        x[k] = (float)((k * 7 + i) % 5) - 2;
    for (int k = 0; k < 5; k++) {
        c[k] = (int32_t)((k + i) % 3);
        y[k] = 0.5f * (float)c[k];
    }
    if (how == 4 && i == 2)
        y[1] = NAN;
    out[0] = dla_tensor_from_host(x, DLA_F32, "", DLA_DIMS(2, 1, len));
    out[1] = how == 1 || how == 2 ? dla_tensor_from_host(c, DLA_I32, "", DLA_DIMS(1, 1, len / 2))
                                  : dla_tensor_from_host(y, DLA_F32, "", DLA_DIMS(1, 1, len / 2));
    return DLA_OK;
}

/* Responses per step of an output of other steps than its input, of two
 * lengths: the padded steps of the shorter targets (no mask covers them)
 * held SequencePaddingValue and counted in the loss and the RMSE, so the
 * network was trained towards the padding value there, and testnet's mse
 * moved with MiniBatchSize and the padding value (0.638 in batches of 1,
 * 0.614 in larger ones, 2.84 with the padding value 5, for 0.682 by
 * hand). They are padded with NaN and left out: means over the steps with
 * a target. */
static void test_responses_of_an_output_with_other_steps_than_its_input(void **state)
{
    (void)state;
    enum { N = 8 };
    int how = 3;
    dla_rng_seed(3);
    const dla_sequence_input_options eight = {.min_length = 8};
    dla_layer *l[] = {dla_sequence_input_layer(2, &eight),
                      dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.stride = {2}}),
                      dla_relu_layer(NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(4, l), *trained[2];
    assert_non_null(net);
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 2, .num_observations = N,
                                .read_at = halved_read_at, .ctx = &how},
        &ds));
    dla_train_data d = {.datastore = ds};
    /* Trained alike whatever the padding value. */
    dla_training_info *info[2];
    for (int k = 0; k < 2; k++) {
        dla_training_options o = {.verbose = -1, .max_epochs = 2, .mini_batch_size = 4,
                                  .shuffle = "never", .sequence_padding_value = k ? 5 : 0};
        assert_ok(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained[k],
                               &info[k]));
    }
    assert_int_equal(info[1]->iterations, info[0]->iterations);
    for (int64_t i = 0; i < info[0]->iterations; i++)
        tu_assert_near(info[1]->training_loss[i], info[0]->training_loss[i], 0);
    /* testnet's mse and RMSE: the mean over the 36 steps with a target. */
    dla_scope_begin();
    dla_tensor *scores;
    assert_ok(dla_minibatchpredict(trained[0], &d, NULL, &scores));
    const int64_t n = dla_tensor_numel(scores);
    float *sc = malloc(sizeof *sc * (size_t)n);
    assert_non_null(sc);
    assert_ok(dla_tensor_to_host(scores, sc, sizeof *sc * (size_t)n));
    double se = 0;
    int steps = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t st = 0; st < (i % 2 ? 5 : 4); st++, steps++) {
            const double e = sc[i + N * st] - 0.5 * (double)((st + i) % 3);
            se += e * e;
        }
    free(sc);
    const double mse = se / steps;
    for (int64_t mb = 1; mb <= N; mb++)
        for (int k = 0; k < 2; k++) {
            double v[2];
            assert_ok(dla_testnet(trained[0], &d, "mse,rmse",
                                  &(dla_predict_options){.mini_batch_size = mb,
                                                         .sequence_padding_value = k ? 5 : 0},
                                  v));
            if (!(fabs(v[0] - mse) <= 1e-6 * mse) || !(fabs(v[1] * v[1] - mse) <= 1e-6 * mse))
                fail_msg("MiniBatchSize %lld, padding %d: mse %.9g, rmse^2 %.9g, by hand %.9g",
                         (long long)mb, k ? 5 : 0, v[0], v[1] * v[1], mse);
        }
    dla_scope_end();
    /* Padded on the left, the NaN steps come first: trained, no NaN. */
    dla_net *left = NULL;
    dla_training_options lo = {.verbose = -1, .max_epochs = 1, .mini_batch_size = 4,
                               .shuffle = "never", .sequence_padding_direction = "left"};
    assert_ok(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &lo, &left, NULL));
    double lv;
    assert_ok(dla_testnet(left, &d, "mse", &(dla_predict_options){
                                               .mini_batch_size = 4,
                                               .sequence_padding_direction = "left"},
                          &lv));
    assert_true(isfinite(lv));
    dla_net_free(left);
    /* A NaN among an observation's targets is no padding: it was left out
     * of the loss in silence (the same NaN in targets that line up with
     * their predictors stops training, "training loss is NaN"). Refused,
     * padded on either side, naming the observation. */
    how = 4;
    for (int k = 0; k < 2; k++) {
        dla_net *bad = NULL;
        lo.sequence_padding_direction = k ? "left" : "right";
        assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &lo, &bad, NULL),
                         DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_last_error(), "mini-batch 1: observation 2 of the batch, step") ||
            !strstr(dla_last_error(), "NaN among its targets"))
            fail_msg("%s", dla_last_error());
        dla_net_free(bad);
        double v;
        assert_int_equal(dla_testnet(trained[0], &d, "mse", NULL, &v), DLA_ERR_INVALID_ARGUMENT);
    }
    for (int k = 0; k < 2; k++) {
        dla_training_info_free(info[k]);
        dla_net_free(trained[k]);
    }
    dla_net_free(net);
    dla_datastore_free(ds);
}

/* Class numbers per step that line up with their predictors, in a batch
 * with no step padded (no mask): the built-in loss is the plain mean over
 * the batch's steps, bit for bit as it was before the loss over the steps
 * that hold a class (for targets padded with NaN, of an output of other
 * steps than its input). That path took these batches too, an extra
 * reduction, comparison and upload per batch for the same mean, and moved
 * the loss by a rounding (0x1.233c26p+0 here, for 0x1.233c28p+0). */
static void test_unpadded_classes_per_step_keep_the_plain_loss(void **state)
{
    (void)state;
    enum { N = 4, T = 6 };
    dla_seqlist *xs = dla_seqlist_create(2), *cs = dla_seqlist_create(1);
    float x[2 * N * T], h[3 * N * T] = {0};
    for (int i = 0; i < N; i++) {
        float xi[2 * T], ci[T];
        for (int s = 0; s < T; s++) {
            xi[2 * s] = (float)sin(0.7 * (13 * i + s));
            xi[2 * s + 1] = (float)cos(1.3 * (i + 2 * s));
            ci[s] = xi[2 * s] < -0.4f ? 0.0f : xi[2 * s] > 0.4f ? 2.0f : 1.0f;
            x[0 + 2 * (i + N * s)] = xi[2 * s];
            x[1 + 2 * (i + N * s)] = xi[2 * s + 1];
            h[(int)ci[s] + 3 * (i + N * s)] = 1;
        }
        assert_ok(dla_seqlist_append(xs, xi, T));
        assert_ok(dla_seqlist_append(cs, ci, T));
    }
    dla_rng_seed(6);
    dla_layer *l[] = {dla_sequence_input_layer(2, NULL), dla_fc_layer(3, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(3, l), *trained = NULL;
    assert_non_null(net);
    dla_scope_begin();
    dla_tensor *xt = dla_tensor_from_host(x, DLA_F32, "CBT", DLA_DIMS(2, N, T)), *y;
    dla_tensor *ht = dla_tensor_from_host(h, DLA_F32, "CBT", DLA_DIMS(3, N, T));
    assert_ok(dla_net_forward(net, 1, &xt, 1, &y, NULL, NULL));
    /* trainnet's "crossentropy": the sum over the N x T steps, over N x T. */
    const double want = dla_tensor_item(
        dla_affine(dla_crossentropy(y, ht, &(dla_crossentropy_options){.normalization_factor =
                                                                           "none"}),
                   1.0 / (N * T), 0.0),
        0);
    dla_scope_end();
    dla_training_info *info = NULL;
    dla_training_options o = {.verbose = -1, .max_epochs = 1, .mini_batch_size = N,
                              .shuffle = "never", .metrics = "accuracy"};
    assert_ok(dla_trainnet(&(dla_train_data){.sequences = xs, .target_sequences = cs}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info));
    assert_int_equal(info->iterations, 1);
    if (!(info->training_loss[0] == want))
        fail_msg("loss %a, the plain mean %a", info->training_loss[0], want);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_seqlist_free(xs);
    dla_seqlist_free(cs);
}

/* A network whose output has half its input's steps (a convolution of
 * stride 2 over T) trains on a datastore's targets of its output's steps,
 * responses or class numbers per step, as on the same arrays in memory:
 * they were refused as sequence-to-sequence targets a step short of their
 * predictors ("output 1 is a sequence of 8 time steps, output 2 of 4"),
 * although they cannot line up with the predictors' steps. */
static void test_targets_of_an_output_with_other_steps_than_its_input(void **state)
{
    (void)state;
    enum { N = 8 };
    for (int classes = 0; classes < 2; classes++) {
        dla_rng_seed(3);
        const dla_sequence_input_options eight = {.min_length = 8};
        dla_layer *l[] = {dla_sequence_input_layer(2, &eight),
                          dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.stride = {2}}),
                          dla_relu_layer(NULL), dla_fc_layer(classes ? 3 : 1, NULL),
                          dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(classes ? 5 : 4, l), *a, *b;
        if (!classes)
            dla_layer_free(l[4]);
        assert_non_null(net);
        dla_datastore *ds;
        assert_ok(dla_custom_datastore_create(
            &(dla_custom_datastore){.num_outputs = 2, .num_observations = N,
                                    .read_at = halved_read_at, .ctx = &classes},
            &ds));
        /* The same observations as one array each. */
        float x[2 * N * 8], y[N * 4];
        int32_t c[N * 4];
        dla_scope_begin();
        for (int64_t i = 0; i < N; i++) {
            dla_tensor *o[2];
            assert_ok(halved_read_at(&classes, i, 2, o));
            float xi[20];
            assert_ok(dla_tensor_to_host(o[0], xi, sizeof xi));
            for (int t = 0; t < 8; t++)
                for (int ch = 0; ch < 2; ch++)
                    x[ch + 2 * (i + N * t)] = xi[ch + 2 * t];
            for (int t = 0; t < 4; t++) {
                c[i + N * t] = (int32_t)((t + i) % 3);
                y[i + N * t] = 0.5f * (float)c[i + N * t];
            }
        }
        dla_tensor *xt = dla_tensor_from_host(x, DLA_F32, "CBT", DLA_DIMS(2, N, 8));
        dla_tensor *tt = classes ? dla_onehotencode(dla_tensor_from_host(c, DLA_I32, "CBT",
                                                                         DLA_DIMS(1, N, 4)),
                                                    3, NULL)
                                 : dla_tensor_from_host(y, DLA_F32, "CBT", DLA_DIMS(1, N, 4));
        assert_ok(dla_tensor_status(tt));
        const dla_train_loss loss = {.name = classes ? "crossentropy" : "mse"};
        dla_training_options o = {.verbose = -1, .max_epochs = 2, .mini_batch_size = 4,
                                  .shuffle = "never"};
        dla_training_info *ia, *ib;
        assert_ok(dla_trainnet(&(dla_train_data){.predictors = xt, .targets = tt}, net, &loss, &o,
                               &a, &ia));
        assert_ok(dla_trainnet(&(dla_train_data){.datastore = ds}, net, &loss, &o, &b, &ib));
        assert_int_equal(ib->iterations, ia->iterations);
        for (int64_t i = 0; i < ia->iterations; i++)
            tu_assert_near(ib->training_loss[i], ia->training_loss[i], 1e-6);
        double va, vb;
        assert_ok(dla_testnet(a, &(dla_train_data){.predictors = xt, .targets = tt}, loss.name,
                              NULL, &va));
        assert_ok(dla_testnet(a, &(dla_train_data){.datastore = ds}, loss.name, NULL, &vb));
        tu_assert_near(vb, va, 1e-6);
        dla_scope_end();
        dla_training_info_free(ia);
        dla_training_info_free(ib);
        dla_net_free(a);
        dla_net_free(b);
        if (classes) {
            /* Of two lengths, the targets' padding (no class) is not
             * checked as a class: the predictors' mask does not fit them
             * (it was taken for theirs: "came as 1x4x5 ..."). Nor is it
             * trained as one, whatever SequencePaddingValue: the default
             * 0 trained each padded step as class 0 (another loss than
             * -7's, which no class is), and 0.1 was refused, read back
             * from single as 0.100000001 ("0.1 is not a class number"). */
            int two = 2;
            dla_datastore *varied;
            assert_ok(dla_custom_datastore_create(
                &(dla_custom_datastore){.num_outputs = 2, .num_observations = N,
                                        .read_at = halved_read_at, .ctx = &two},
                &varied));
            const double pads[] = {-7, 0, 0.1};
            double first[2] = {0, 0};
            for (int k = 0; k < 3; k++) {
                o.sequence_padding_value = pads[k];
                dla_training_info *iv;
                if (dla_trainnet(&(dla_train_data){.datastore = varied}, net, &loss, &o, &b,
                                 &iv) != DLA_OK)
                    fail_msg("padding value %g: %s", pads[k], dla_last_error());
                assert_int_equal(iv->iterations, 4);
                for (int i = 0; i < 2; i++) {
                    if (k == 0)
                        first[i] = iv->training_loss[i];
                    tu_assert_near(iv->training_loss[i], first[i], 0);
                }
                dla_training_info_free(iv);
                dla_net_free(b);
            }
            /* Its accuracy counts the steps that hold a class: the padded
             * ones (no class, which decodes as class 0) were counted as
             * well, and testnet's accuracy moved with the padding value
             * (10% with 0, 20% with -7), which changes what the network
             * gives at a padded step. By hand, from minibatchpredict. */
            dla_tensor *scores;
            assert_ok(dla_minibatchpredict(net, &(dla_train_data){.datastore = varied}, NULL,
                                           &scores));
            float *sc = malloc(sizeof *sc * (size_t)dla_tensor_numel(scores));
            assert_non_null(sc);
            const size_t bytes = sizeof *sc * (size_t)dla_tensor_numel(scores);
            assert_ok(dla_tensor_to_host(scores, sc, bytes));
            const int64_t nt = dla_tensor_dim(scores, 3);
            int hits = 0, steps = 0;
            double ce = 0;
            for (int64_t i = 0; i < N; i++)
                for (int64_t st = 0; st < (i % 2 ? 5 : 4); st++, steps++) {
                    const float *p = sc + 3 * (i + N * st);
                    const int best = p[1] > p[0] ? (p[2] > p[1] ? 2 : 1) : (p[2] > p[0] ? 2 : 0);
                    hits += best == (int)((st + i) % 3);
                    ce -= log((double)p[(st + i) % 3]);
                }
            ce /= steps;
            free(sc);
            dla_tensor_release(scores);
            assert_true(nt >= 5);
            for (int k = 0; k < 3; k++) {
                double acc;
                assert_ok(dla_testnet(net, &(dla_train_data){.datastore = varied}, "accuracy",
                                      &(dla_predict_options){.mini_batch_size = 4,
                                                             .sequence_padding_value = pads[k]},
                                      &acc));
                tu_assert_near(acc, 100.0 * hits / steps, 1e-9);
            }
            /* Its cross-entropy is a mean over the same steps: it was
             * divided by every step of each batch, those of no class too,
             * so it moved with MiniBatchSize (1.1031 in batches of 1,
             * 0.9887 in larger ones, padded to 5 steps, for 1.0986 by
             * hand). */
            for (int64_t mb = 1; mb <= N; mb++) {
                double v;
                assert_ok(dla_testnet(net, &(dla_train_data){.datastore = varied}, "crossentropy",
                                      &(dla_predict_options){.mini_batch_size = mb}, &v));
                if (!(fabs(v - ce) <= 1e-6 * ce))
                    fail_msg("MiniBatchSize %lld: crossentropy %.9g, by hand %.9g", (long long)mb,
                             v, ce);
            }
            /* So is trainnet's validation accuracy, in batches of 3
             * holding 13, 14 and 9 such steps: the batches' accuracies
             * were weighted by observations (a learning rate of 1e-20
             * leaves the network as it was). */
            dla_train_data vd = {.datastore = varied};
            dla_training_options ov = {.verbose = -1, .max_epochs = 1, .mini_batch_size = 3,
                                       .shuffle = "never", .initial_learn_rate = 1e-20,
                                       .validation_data = &vd, .metrics = "accuracy"};
            dla_training_info *iv;
            assert_ok(dla_trainnet(&vd, net, &loss, &ov, &b, &iv));
            tu_assert_near(iv->final_validation_accuracy, 100.0 * hits / steps, 1e-9);
            if (!(fabs(iv->final_validation_loss - ce) <= 1e-6 * ce))
                fail_msg("validation loss %.9g, by hand %.9g", iv->final_validation_loss, ce);
            /* testnet's batches of 3 likewise (the same evaluation). */
            double acc3;
            assert_ok(dla_testnet(net, &vd, "accuracy",
                                  &(dla_predict_options){.mini_batch_size = 3}, &acc3));
            tu_assert_near(acc3, 100.0 * hits / steps, 1e-9);
            dla_training_info_free(iv);
            dla_net_free(b);
            dla_datastore_free(varied);
        }
        dla_net_free(net);
        dla_datastore_free(ds);
    }
}

/* Observation i: a 2 x 1 x (3 + i % 4) sequence and one-hot responses
 * per step, 3 x 1 x T, in single or (ctx nonzero) uint8. */
static dla_status one_hot_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    const int64_t len = 3 + i % 4;
    float x[12], yf[18];
    uint8_t y[18];
    for (int k = 0; k < 12; k++)
        x[k] = (float)((k * 7 + i) % 5) - 2;
    for (int t = 0; t < len; t++)
        for (int c = 0; c < 3; c++)
            yf[3 * t + c] = y[3 * t + c] = (uint8_t)(c == (t + i) % 3);
    out[0] = dla_tensor_from_host(x, DLA_F32, "", DLA_DIMS(2, 1, len));
    out[1] = *(const int *)ctx ? dla_tensor_from_host(y, DLA_U8, "", DLA_DIMS(3, 1, len))
                               : dla_tensor_from_host(yf, DLA_F32, "", DLA_DIMS(3, 1, len));
    return DLA_OK;
}

/* Response sequences of an integer dtype (uint8 one-hot per step) train
 * as the same in single, with a SequencePaddingValue uint8 does not hold:
 * the padding value is the predictors', their padded steps masked out;
 * every batch was refused naming casts trainnet has none of ("sequences
 * of uint8 are padded with -1, which uint8 does not hold ... cast the
 * output"). */
static void test_integer_response_sequences_take_any_padding_value(void **state)
{
    (void)state;
    dla_net *net = sequence_net(2), *trained[2];
    dla_training_info *info[2];
    double tested[2];
    for (int u8 = 0; u8 < 2; u8++) {
        dla_datastore *ds;
        assert_ok(dla_custom_datastore_create(
            &(dla_custom_datastore){.num_outputs = 2, .num_observations = 8,
                                    .read_at = one_hot_read_at, .ctx = &u8},
            &ds));
        dla_training_options o = {.verbose = -1, .max_epochs = 2, .mini_batch_size = 4,
                                  .sequence_padding_value = -1};
        dla_rng_seed(4);
        assert_ok(dla_trainnet(&(dla_train_data){.datastore = ds}, net,
                               &(dla_train_loss){.name = "crossentropy"}, &o, &trained[u8],
                               &info[u8]));
        assert_ok(dla_testnet(trained[u8], &(dla_train_data){.datastore = ds}, "crossentropy",
                              NULL, &tested[u8]));
        dla_datastore_free(ds);
    }
    assert_trained_alike(info[0], info[1], trained[0], trained[1]);
    tu_assert_near(tested[1], tested[0], 0);
    for (int k = 0; k < 2; k++) {
        dla_training_info_free(info[k]);
        dla_net_free(trained[k]);
    }
    dla_net_free(net);
}

/* The sequences alone (observation i of a list_ds's). */
static dla_status sequence_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    const list_ds *l = ctx;
    out[0] = sequence_of(l->seqs, i, l->formatted);
    return DLA_OK;
}

/* A datastore of sequences with its sequence-to-sequence targets in
 * memory, one array padded to the longest sequence: cut to each batch's
 * steps as a list's are (the loss refused every batch shorter than the
 * longest: "1x6x12 does not match y's 1x6x10"), in training, validation
 * and testnet. */
static void test_trainnet_over_sequences_with_targets_in_memory(void **state)
{
    (void)state;
    enum { N = 26 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    list_ds l = {.seqs = s, .labels = labels};
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 1, .num_observations = N,
                                .read_at = sequence_read_at, .ctx = &l},
        &ds));
    dla_scope_begin();
    dla_tensor *x, *m;
    assert_ok(dla_padsequences(s, N, NULL, NULL, &x, &m));
    /* A response per step: the first channel, 0 where padded. */
    dla_tensor *t = dla_mul(dla_slice(x, 1, 0, 1, 1), dla_cast(m, DLA_F32));
    dla_train_data from_list = {.sequences = s, .targets = t},
                   from_ds = {.datastore = ds, .targets = t};
    dla_training_options o = {.verbose = -1, .solver = "adam", .max_epochs = 2,
                              .mini_batch_size = 6, .validation_frequency = 2};
    dla_net *net = sequence_net(1), *a, *b;
    dla_training_info *ia, *ib;
    o.validation_data = &from_list;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&from_list, net, &(dla_train_loss){.name = "mse"}, &o, &a, &ia));
    o.validation_data = &from_ds;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&from_ds, net, &(dla_train_loss){.name = "mse"}, &o, &b, &ib));
    assert_trained_alike(ia, ib, a, b);
    double va, vb;
    const dla_predict_options po = {.mini_batch_size = 4};
    assert_ok(dla_testnet(a, &from_list, "mse", &po, &va));
    assert_ok(dla_testnet(a, &from_ds, "mse", &po, &vb));
    tu_assert_near(vb, va, 0);
    dla_scope_end();
    dla_training_info_free(ia);
    dla_training_info_free(ib);
    dla_net_free(a);
    dla_net_free(b);
    dla_net_free(net);
    dla_datastore_free(ds);
    dla_seqlist_free(s);
}

static void test_trainnet_parallel_over_sequences_of_a_datastore(void **state)
{
    (void)state;
    /* Each worker pads its share to the length of the whole batch. */
    train_both_ways(0, "parallel", "longest", "left");
    train_both_ways(1, "parallel", NULL, NULL);
    train_both_ways(2, "parallel", "longest", "left");
}

/* A transform that keeps the sequences alone. */
static dla_status sequences_only(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = in[0];
    return DLA_OK;
}

/* Both features at once: a datastore of sequences read in order (and
 * validation from another) trains, tests and predicts as the list with
 * Shuffle "never"; a subset (with repeats) of sequences, combined with a
 * transform of it, is padded as the list is. */
static void test_sequences_read_in_order_subset_combined(void **state)
{
    (void)state;
    enum { N = 26 };
    int32_t labels[N];
    dla_seqlist *s = waveforms(N, labels);
    list_reader r = {.l = {.seqs = s, .labels = labels}}, rv = r;
    dla_datastore *ds = reader_datastore(&r), *dv = reader_datastore(&rv);
    dla_scope_begin();
    dla_tensor *lab = dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, N));
    dla_train_data from_list = {.sequences = s, .targets = lab}, from_ds = {.datastore = ds},
                   vds = {.datastore = dv};
    dla_training_options o = {.verbose = -1,
                              .solver = "adam",
                              .max_epochs = 3,
                              .mini_batch_size = 6,
                              .shuffle = "never",
                              .sequence_padding_direction = "left",
                              .sequence_padding_value = 0.25,
                              .validation_frequency = 2};
    dla_net *net = sequence_net(0), *a, *b;
    dla_training_info *ia, *ib;
    o.validation_data = &from_list;
    dla_rng_seed(5);
    assert_ok(
        dla_trainnet(&from_list, net, &(dla_train_loss){.name = "crossentropy"}, &o, &a, &ia));
    o.validation_data = &vds;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&from_ds, net, &(dla_train_loss){.name = "crossentropy"}, &o, &b, &ib));
    assert_trained_alike(ia, ib, a, b);
    const dla_predict_options po = {.mini_batch_size = 4, .sequence_padding_direction = "left"};
    double va, vb;
    assert_ok(dla_testnet(a, &from_list, "crossentropy", &po, &va));
    assert_ok(dla_testnet(a, &from_ds, "crossentropy", &po, &vb));
    tu_assert_near(vb, va, 0);
    dla_tensor *pa, *pb;
    assert_ok(dla_minibatchpredict(a, &from_list, &po, &pa));
    assert_ok(dla_minibatchpredict(a, &from_ds, &po, &pb));
    assert_true(tu_same_bits(pa, pb));
    /* A subset, a transform of it and both combined: x, its mask, x, t. */
    list_ds l = {.seqs = s, .labels = labels};
    dla_datastore *ix = list_datastore(&l), *sub, *tr, *comb;
    const int64_t idx[5] = {4, 2, 2, 9, 0};
    assert_ok(dla_datastore_subset(ix, 5, idx, &sub));
    assert_ok(dla_transform(sub, 1, sequences_only, NULL, &tr));
    assert_ok(dla_combine(2, (dla_datastore *[]){tr, sub}, &comb));
    dla_mbq *q;
    assert_ok(dla_mbq_create(
        1,
        &(dla_mbq_input){
            .datastore = comb, .formats = (const char *[]){"CBT", "CBT", "CB"}, .mask = 1},
        &(dla_mbq_options){.mini_batch_size = 5,
                           .sequence = {.padding_direction = "left", .padding_value = 2}},
        &q));
    assert_int_equal(dla_mbq_num_outputs(q), 4);
    dla_tensor *bb[4], *x, *m;
    assert_ok(dla_mbq_next(q, 4, bb));
    const dla_sequence_options so = {.padding_direction = "left", .padding_value = 2};
    assert_ok(dla_padsequences(s, 5, idx, &so, &x, &m));
    assert_true(tu_same_bits(bb[0], x));
    assert_true(tu_same_bits(bb[1], m));
    assert_true(tu_same_bits(bb[2], x));
    dla_mbq_free(q);
    dla_datastore_free(comb);
    dla_datastore_free(tr);
    dla_datastore_free(sub);
    dla_datastore_free(ix);
    dla_scope_end();
    dla_training_info_free(ia);
    dla_training_info_free(ib);
    dla_net_free(a);
    dla_net_free(b);
    dla_net_free(net);
    dla_datastore_free(ds);
    dla_datastore_free(dv);
    dla_seqlist_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_sequences_read_in_order_subset_combined),
        TU_TEST(test_queue_pads_each_batch_as_padsequences),
        TU_TEST(test_a_datastore_read_in_order_is_padded_alike),
        TU_TEST(test_sequences_of_one_step_or_none_are_padded_alike),
        TU_TEST(test_a_cast_sequence_is_padded_with_the_value_in_its_cast),
        TU_TEST(test_a_padding_value_the_dtype_cannot_hold_is_refused),
        TU_TEST(test_sequence_outputs_that_do_not_fit_are_refused),
        TU_TEST(test_every_refused_allocation_of_a_padded_batch_fails_cleanly),
        TU_TEST(test_trainnet_over_sequences_of_a_datastore),
        TU_TEST(test_trainnet_sequence_to_sequence_from_a_datastore),
        TU_TEST(test_trainnet_classes_per_step_from_a_datastore),
        TU_TEST(test_classes_per_step_that_do_not_fit_are_refused),
        TU_TEST(test_unpadded_classes_per_step_keep_the_plain_loss),
        TU_TEST(test_targets_of_an_output_with_other_steps_than_its_input),
        TU_TEST(test_responses_of_an_output_with_other_steps_than_its_input),
        TU_TEST(test_integer_response_sequences_take_any_padding_value),
        TU_TEST(test_trainnet_over_sequences_with_targets_in_memory),
        TU_TEST(test_trainnet_parallel_over_sequences_of_a_datastore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

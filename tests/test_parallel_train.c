/*
 * test_parallel_train.c - the parallel training pieces that need no MPI:
 * the share arithmetic, and the combinations in a world of one (a program
 * run without mpirun), where each is the identity on the whole batch.
 * tests/parallel_train.sh runs the same pieces under mpirun.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <dlaccel.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tu_assert.h"

#include "testutil.h"

static void shares_divide_with_the_remainder_to_the_first(void **state)
{
    (void)state;
    int64_t s[5];
    assert_int_equal(dla_spmd_shares(128, 2, s), DLA_OK);
    assert_int_equal(s[0], 64);
    assert_int_equal(s[1], 64);
    assert_int_equal(dla_spmd_shares(37, 4, s), DLA_OK);
    assert_int_equal(s[0], 10);
    assert_int_equal(s[1], 9);
    assert_int_equal(s[2], 9);
    assert_int_equal(s[3], 9);
    assert_int_equal(dla_spmd_shares(256, 3, s), DLA_OK);
    assert_int_equal(s[0] + s[1] + s[2], 256);
    assert_int_equal(s[0], 86);
    assert_int_equal(s[2], 85);
}

static void a_global_batch_smaller_than_the_workers_leaves_some_at_zero(void **state)
{
    (void)state;
    int64_t s[5];
    assert_int_equal(dla_spmd_shares(3, 5, s), DLA_OK);
    int64_t want[5] = {1, 1, 1, 0, 0};
    for (int r = 0; r < 5; r++)
        assert_int_equal(s[r], want[r]);
    assert_int_equal(dla_spmd_shares(0, 2, s), DLA_OK);
    assert_int_equal(s[0] + s[1], 0);
}

static void bad_share_arguments_are_named(void **state)
{
    (void)state;
    int64_t s[2];
    assert_int_equal(dla_spmd_shares(-1, 2, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "negative"));
    assert_int_equal(dla_spmd_shares(8, 0, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "size 0"));
    assert_int_equal(dla_spmd_shares(8, 2, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_spmd_share(-3), -1);
    /* A world of one: the whole batch. */
    assert_int_equal(dla_spmd_share(37), 37);
}

static void combine_in_a_world_of_one_scales_by_the_weight(void **state)
{
    (void)state;
    dla_scope_begin();
    float a[6] = {1, 2, 3, 4, 5, 6}, b[2] = {-8, 0.5f};
    dla_tensor *x[2] = {dla_tensor_from_host(a, DLA_F32, "", DLA_DIMS(2, 3)),
                        dla_tensor_from_host(b, DLA_F32, "CB", DLA_DIMS(2, 1))};
    dla_tensor *out[2];
    assert_int_equal(dla_spmd_combine(2, x, 0.5, out), DLA_OK);
    assert_int_equal(dla_tensor_dim(out[0], 2), 3);
    assert_string_equal(dla_tensor_format(out[1]), "CB");
    for (int i = 0; i < 6; i++)
        tu_assert_near(dla_tensor_item(out[0], i), 0.5 * a[i], 0);
    tu_assert_near(dla_tensor_item(out[1], 0), -4, 0);
    /* The caller's tensors are not written. */
    tu_assert_near(dla_tensor_item(x[0], 5), 6, 0);
    /* Weight 0 is zeros, whatever x holds. */
    float nan = 0.0f / 0.0f;
    dla_tensor *bad = dla_tensor_from_host(&nan, DLA_F32, "", DLA_DIMS(1));
    assert_int_equal(dla_spmd_combine(1, &bad, 0.0, out), DLA_OK);
    tu_assert_near(dla_tensor_item(out[0], 0), 0, 0);
    assert_int_equal(dla_spmd_combine(1, &bad, 1.5, out), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
}

static void combine_splits_into_buckets_in_order(void **state)
{
    (void)state;
    /* A bucket of one element forces one allreduce per tensor. */
    setenv("DLACCEL_BUCKET_MIB", "0.000001", 1);
    dla_scope_begin();
    dla_tensor *x[3] = {dla_full(1, DLA_F32, "", DLA_DIMS(3)), dla_full(2, DLA_F64, "", DLA_DIMS(2)),
                        dla_full(3, DLA_F32, "", DLA_DIMS(4))};
    assert_int_equal(dla_spmd_combine(3, x, 1.0, x), DLA_OK);
    assert_int_equal(dla_tensor_dtype(x[1]), DLA_F64);
    tu_assert_near(dla_tensor_item(x[0], 2), 1, 0);
    tu_assert_near(dla_tensor_item(x[1], 1), 2, 0);
    tu_assert_near(dla_tensor_item(x[2], 3), 3, 0);
    dla_scope_end();
    unsetenv("DLACCEL_BUCKET_MIB");
}

/* Outside a scope the caller owns out and releases it, and nothing else
 * the call made stays: the flattened inputs, the packed bucket and the
 * slice each result is a view of did (three handles and a bucket a call
 * for one tensor), as no op of the library leaves its temporaries. */
static void combine_outside_a_scope_leaves_only_its_results(void **state)
{
    (void)state;
    dla_tensor *x[2] = {dla_full(1, DLA_F32, "", DLA_DIMS(3)),
                        dla_full(2, DLA_F32, "CB", DLA_DIMS(2, 2))};
    dla_tensor *out[2];
    /* Released handles wait in a quarantine before their memory is freed:
     * fill it, so that from here each release frees one. */
    for (int i = 0; i < 4096; i++)
        dla_tensor_release(dla_zeros(DLA_F32, "", DLA_DIMS(1)));
    assert_int_equal(dla_spmd_combine(2, x, 0.5, out), DLA_OK);
    dla_tensor_release(out[0]);
    dla_tensor_release(out[1]);
    const long before = tu_live;
    for (int i = 0; i < 8; i++) {
        assert_int_equal(dla_spmd_combine(2, x, 0.5, out), DLA_OK);
        assert_string_equal(dla_tensor_format(out[1]), "CB");
        tu_assert_near(dla_tensor_item(out[1], 3), 1, 0);
        dla_tensor_release(out[0]);
        dla_tensor_release(out[1]);
    }
    assert_true(tu_live <= before);
    dla_tensor_release(x[0]);
    dla_tensor_release(x[1]);
}

/* conv, batchnorm, relu, forward on 9 images in an open scope: s gets
 * the batch normalization's two state rows. */
static dla_net *bn_net_forward(dla_tensor **s)
{
    dla_rng_seed(4);
    dla_layer *layers[] = {dla_conv2d_layer(3, 3, 2, NULL), dla_batchnorm_layer(NULL),
                           dla_relu_layer(NULL)};
    dla_net *net = dla_net_create(3, layers);
    dla_tensor *x = dla_affine(dla_randn(DLA_F32, "SSCB", DLA_DIMS(5, 5, 1, 9)), 2.0, 3.0), *y;
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, s, NULL), DLA_OK);
    return net;
}

static void combined_state_of_the_whole_batch_is_its_own(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *s[2], *c[2];
    dla_net *net = bn_net_forward(s);
    assert_int_equal(dla_spmd_combine_state(net, 2, s, 9, 9, c), DLA_OK);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 2; i++) {
            double want = dla_tensor_item(s[k], i);
            tu_assert_near(dla_tensor_item(c[k], i), want, 1e-6 * fabs(want));
        }
    /* Counts that make no sense are refused, naming them. */
    assert_int_equal(dla_spmd_combine_state(net, 2, s, 10, 9, c), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "count 10"));
    assert_int_equal(dla_spmd_combine_state(net, 1, s, 9, 9, c), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
    dla_net_free(net);
}

/* Each of its allocations refused in turn: a failure, never a crash (a
 * refused block of its sums was written through before: the flags and the
 * count went into a NULL buffer). Not every refusal reads as out of
 * memory: one inside dla_keep releases the result (core/scope.c). */
static void combined_state_short_of_memory_fails_cleanly(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *s[2], *c[2];
    dla_net *net = bn_net_forward(s);
    long before = tu_calls;
    assert_int_equal(dla_spmd_combine_state(net, 2, s, 9, 9, c), DLA_OK);
    long calls = tu_calls - before;
    assert_true(calls > 4);
    int oom = 0;
    for (long k = 1; k <= calls; k++) {
        dla_scope_begin();
        tu_fail_at = tu_calls + k;
        dla_status st = dla_spmd_combine_state(net, 2, s, 9, 9, c);
        tu_fail_at = 0;
        oom += st == DLA_ERR_OUT_OF_MEMORY;
        if (st == DLA_OK)
            assert_true(dla_tensor_status(c[0]) == DLA_OK && dla_tensor_status(c[1]) == DLA_OK);
        dla_scope_end();
    }
    assert_true(oom > 0);
    dla_scope_end();
    dla_net_free(net);
}

static void trainnet_accepts_parallel_and_refuses_multi_gpu_without_a_gpu(void **state)
{
    (void)state;
    dla_device *d = NULL;
    assert_int_equal(dla_training_device("parallel", &d), DLA_OK);
    assert_ptr_equal(d, dla_device_current());
    dla_training_options o = {.execution_environment = "multi-gpu"}, r;
    assert_int_equal(dla_training_options_resolve(&o, &r), DLA_OK);
    /* The default plugin path of make check has no GPU plugin. */
    int gpus = 0;
    for (int i = 0; i < dla_device_count(); i++)
        gpus += strcmp(dla_device_type(dla_device_at(i)), "cpu") != 0;
    if (!gpus) {
        assert_int_equal(dla_training_device("multi-gpu", &d), DLA_ERR_NO_DEVICE);
        assert_non_null(strstr(dla_last_error(), "no GPU"));
    }
}

/* trainnet "parallel" in a world of one, and "multi-gpu" where a device
 * that is not a cpu is loaded (tests/parallel_train_on_testmem.sh loads
 * testmem, whose memory the host cannot address): the training runs,
 * through every combination, on that device. */
static void trainnet_parallel_in_a_world_of_one(void **state)
{
    (void)state;
    int gpus = 0;
    dla_device *gpu = NULL;
    for (int i = 0; i < dla_device_count(); i++)
        if (strcmp(dla_device_type(dla_device_at(i)), "cpu")) {
            gpu = gpu ? gpu : dla_device_at(i);
            gpus++;
        }
    const char *env = gpus ? "multi-gpu" : "parallel";
    /* With an input layer (initialized on the host, copied with the
     * training device current) and without (initialized by trainnet
     * from the first observation, on the training device). */
    for (int with_input = 1; with_input >= 0; with_input--) {
        dla_rng_seed(2);
        dla_layer *layers[] = {dla_image_input_layer(6, 6, 1, NULL), dla_conv2d_layer(3, 3, 4, NULL),
                               dla_batchnorm_layer(NULL), dla_relu_layer(NULL), dla_fc_layer(3, NULL),
                               dla_softmax_layer(NULL)};
        if (!with_input)
            dla_layer_free(layers[0]);
        dla_net *net = dla_net_create(5 + with_input, layers + !with_input);
        assert_non_null(net);
        enum { N = 30 };
        float img[36 * N];
        int32_t lab[N];
        for (int j = 0; j < N; j++) {
            lab[j] = j % 3;
            for (int e = 0; e < 36; e++)
                img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.01 * ((j * 7 + e) % 11));
        }
        dla_scope_begin();
        dla_train_data data = {
            .predictors = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N)),
            .targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
        dla_training_options o = {.max_epochs = 4, .mini_batch_size = 6, .initial_learn_rate = 0.05,
                                  .execution_environment = env, .verbose = -1};
        dla_net *trained = NULL;
        dla_training_info *info = NULL;
        dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                     &trained, &info);
        dla_scope_end();
        if (st != DLA_OK)
            fail_msg("%s, %s input layer: %s", env, with_input ? "with an" : "without", dla_last_error());
        assert_int_equal(info->iterations, 4 * (N / 6));
        assert_true(info->training_loss[info->iterations - 1] < info->training_loss[0]);
        assert_string_equal(info->device, dla_device_name(gpus ? gpu : dla_device_current()));
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
    }
}

/* The same training "auto" and "parallel" give in a world of one: the
 * same mini-batches (one shuffle stream, the partial last batch returned,
 * as many iterations), so the same bits in the loss, the metrics, the
 * validation, the batch-normalization state (population statistics
 * included) and the learnables. "parallel" used to shuffle the data once
 * more and reshuffle its part with a stream of its own: another order,
 * another loss history. env "auto" or "parallel"; seq: sequence data. */
static dla_status train_as(const char *env, int seq, dla_net **trained, dla_training_info **info)
{
    enum { N = 23, V = 7 };
    dla_rng_seed(5);
    dla_net *net;
    if (seq) {
        dla_layer *layers[] = {dla_sequence_input_layer(2, NULL),
                               dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "last"}),
                               dla_batchnorm_layer(NULL), dla_fc_layer(3, NULL),
                               dla_softmax_layer(NULL)};
        net = dla_net_create(5, layers);
    } else {
        dla_layer *layers[] = {dla_image_input_layer(6, 6, 1, NULL), dla_conv2d_layer(3, 3, 4, NULL),
                               dla_batchnorm_layer(NULL), dla_relu_layer(NULL), dla_fc_layer(3, NULL),
                               dla_softmax_layer(NULL)};
        net = dla_net_create(6, layers);
    }
    assert_non_null(net);
    static float img[36 * (N + V)];
    static int32_t lab[N + V];
    dla_seqlist *seqs = dla_seqlist_create(2), *vseqs = dla_seqlist_create(2);
    for (int j = 0; j < N + V; j++) {
        lab[j] = (j * 5 + j / 3) % 3;
        for (int e = 0; e < 36; e++)
            img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.05 * ((j * 7 + e) % 11));
        /* Sequences of 3 to 9 steps: a batch's padding depends on which
         * sequences it holds. */
        float x[2 * 9];
        const int len = 3 + (j * 5) % 7;
        for (int k = 0; k < 2 * len; k++)
            x[k] = (float)(0.3 * lab[j] + 0.1 * ((k * 3 + j) % 5) - 0.2);
        assert_int_equal(dla_seqlist_append(j < N ? seqs : vseqs, x, len), DLA_OK);
    }
    dla_scope_begin();
    dla_train_data data = {.targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
    dla_train_data val = {.targets = dla_tensor_from_host(lab + N, DLA_I32, "", DLA_DIMS(1, V))};
    if (seq) {
        data.sequences = seqs;
        val.sequences = vseqs;
    } else {
        data.predictors = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N));
        val.predictors = dla_tensor_from_host(img + 36 * N, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, V));
    }
    /* 23 observations in mini-batches of 5: the last has 3. */
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = 5, .initial_learn_rate = 0.05,
                              .execution_environment = env, .verbose = -1,
                              .shuffle = "every-epoch", .partial_mini_batch = "return",
                              .metrics = "accuracy", .validation_data = &val,
                              .validation_frequency = 4, .shuffle_seed = 7,
                              .batch_normalization_statistics = "population"};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                 trained, info);
    dla_scope_end();
    dla_seqlist_free(seqs);
    dla_seqlist_free(vseqs);
    dla_net_free(net);
    return st;
}

static void same_bits_of(const char *what, const double *a, const double *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            fail_msg("%s[%lld]: \"parallel\" %.17g, \"auto\" %.17g", what, (long long)i, a[i], b[i]);
}

static void trainnet_parallel_in_a_world_of_one_is_auto(void **state)
{
    (void)state;
    for (int seq = 0; seq <= 1; seq++) {
        dla_net *na = NULL, *np = NULL;
        dla_training_info *ia = NULL, *ip = NULL;
        if (train_as("auto", seq, &na, &ia) != DLA_OK)
            fail_msg("auto: %s", dla_last_error());
        if (train_as("parallel", seq, &np, &ip) != DLA_OK)
            fail_msg("parallel: %s", dla_last_error());
        /* 5 mini-batches an epoch, the last of 3. */
        assert_int_equal(ia->iterations, 15);
        assert_int_equal(ip->iterations, ia->iterations);
        same_bits_of("training_loss", ip->training_loss, ia->training_loss, ia->iterations);
        same_bits_of("training_accuracy", ip->training_accuracy, ia->training_accuracy,
                     ia->iterations);
        assert_int_equal(ip->validations, ia->validations);
        same_bits_of("validation_loss", ip->validation_loss, ia->validation_loss, ia->validations);
        same_bits_of("final_validation_loss", &ip->final_validation_loss,
                     &ia->final_validation_loss, 1);
        for (int k = 0; k < 2; k++) {
            dla_table *ta = k ? dla_net_state(na) : dla_net_learnables(na);
            dla_table *tp = k ? dla_net_state(np) : dla_net_learnables(np);
            assert_int_equal(dla_table_count(tp), dla_table_count(ta));
            for (int i = 0; i < dla_table_count(ta); i++)
                if (!tu_same_bits(dla_table_value(tp, i), dla_table_value(ta, i)))
                    fail_msg("%s, %s %d differs from \"auto\"", seq ? "sequences" : "images",
                             k ? "state" : "learnable", i);
        }
        dla_training_info_free(ia);
        dla_training_info_free(ip);
        dla_net_free(na);
        dla_net_free(np);
    }
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(shares_divide_with_the_remainder_to_the_first),
        TU_TEST(a_global_batch_smaller_than_the_workers_leaves_some_at_zero),
        TU_TEST(bad_share_arguments_are_named),
        TU_TEST(combine_in_a_world_of_one_scales_by_the_weight),
        TU_TEST(combine_splits_into_buckets_in_order),
        TU_TEST(combine_outside_a_scope_leaves_only_its_results),
        TU_TEST(combined_state_of_the_whole_batch_is_its_own),
        TU_TEST(combined_state_short_of_memory_fails_cleanly),
        TU_TEST(trainnet_accepts_parallel_and_refuses_multi_gpu_without_a_gpu),
        TU_TEST(trainnet_parallel_in_a_world_of_one),
        TU_TEST(trainnet_parallel_in_a_world_of_one_is_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

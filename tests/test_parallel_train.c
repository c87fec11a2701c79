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
        assert_float_equal(dla_tensor_item(out[0], i), 0.5 * a[i], 0);
    assert_float_equal(dla_tensor_item(out[1], 0), -4, 0);
    /* The caller's tensors are not written. */
    assert_float_equal(dla_tensor_item(x[0], 5), 6, 0);
    /* Weight 0 is zeros, whatever x holds. */
    float nan = 0.0f / 0.0f;
    dla_tensor *bad = dla_tensor_from_host(&nan, DLA_F32, "", DLA_DIMS(1));
    assert_int_equal(dla_spmd_combine(1, &bad, 0.0, out), DLA_OK);
    assert_float_equal(dla_tensor_item(out[0], 0), 0, 0);
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
    assert_float_equal(dla_tensor_item(x[0], 2), 1, 0);
    assert_float_equal(dla_tensor_item(x[1], 1), 2, 0);
    assert_float_equal(dla_tensor_item(x[2], 3), 3, 0);
    dla_scope_end();
    unsetenv("DLACCEL_BUCKET_MIB");
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
            assert_float_equal(dla_tensor_item(c[k], i), want, 1e-6 * fabs(want));
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

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(shares_divide_with_the_remainder_to_the_first),
        TU_TEST(a_global_batch_smaller_than_the_workers_leaves_some_at_zero),
        TU_TEST(bad_share_arguments_are_named),
        TU_TEST(combine_in_a_world_of_one_scales_by_the_weight),
        TU_TEST(combine_splits_into_buckets_in_order),
        TU_TEST(combined_state_of_the_whole_batch_is_its_own),
        TU_TEST(combined_state_short_of_memory_fails_cleanly),
        TU_TEST(trainnet_accepts_parallel_and_refuses_multi_gpu_without_a_gpu),
        TU_TEST(trainnet_parallel_in_a_world_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

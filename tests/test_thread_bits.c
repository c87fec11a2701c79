/*
 * test_thread_bits.c - the cpu device gives the same bits with any number
 * of OpenMP threads.
 *
 * The cpu device is the reference every other device is checked against,
 * and a seed should give the same training on a laptop and on a server.
 * Where a kernel shares out a sum (a full reduction, a batch's channel
 * statistics, the filter gradient of a convolution over the batch), the
 * pieces follow the work alone, never the thread count. These tests run
 * the same work with omp_set_num_threads 1, 2, 3 and 5 (the plugin runs on
 * the calling thread and reads omp_get_max_threads at each call) and ask
 * for the same bytes each time:
 *
 * - sums, means and maxima with positions over long vectors and a few
 *   long columns (reduce's parts), and over a batch's channels (the
 *   streamed sums of fused.c);
 * - the digit CNN's loss, its gradients and its new batch-normalization
 *   statistics, at a batch of 64 (the convolution's filter gradient in
 *   parts of the batch), of 8 (each register block through every image)
 *   and of 2 (fewer images than threads: each image shared out), eager
 *   through dla_feval and replayed by the network's accelerated forward
 *   (fused programs and their sums);
 * - a 256-channel layer's filter gradient, whose batch parts are bounded
 *   by their memory;
 * - a stride-2 layer's input and filter gradients (3x3 and 1x1), which
 *   the cpu plugin runs phase by phase with AVX-512;
 * - products the cpu plugin runs by its AVX-512 tiles on such a CPU
 *   (gemm_direct.c: rows cut by the thread count), an LSTM step's among
 *   them;
 * - an LSTM's loss and gradients and its replayed inference (products and
 *   gate programs shared by plugins/cpu/share.c, whose items are claimed
 *   as threads come), and the inference run by two host threads at once
 *   (one of them then runs its kernels alone).
 *
 * tests/thread_bits_im2col.sh runs it again with DLACCEL_CPU_CONV=im2col,
 * the convolutions through im2col and OpenBLAS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlaccel.h>

#include "testutil.h"

static const int team_sizes[] = {1, 2, 3, 5};
#define NTEAMS ((int)(sizeof team_sizes / sizeof team_sizes[0]))

/* The bytes of t (float or double), freshly allocated. */
static unsigned char *bytes_of(dla_tensor *t, size_t *n)
{
    assert_non_null(t);
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    const size_t elem = dla_tensor_dtype(t) == DLA_F64 ? 8 : 4;
    *n = (size_t)dla_tensor_numel(t) * elem;
    unsigned char *b = malloc(*n ? *n : 1);
    assert_non_null(b);
    assert_int_equal(dla_tensor_to_host(t, b, *n), DLA_OK);
    return b;
}

/* Results of one run: nout tensors' bytes. */
typedef struct run {
    int n;
    unsigned char *bytes[64];
    size_t size[64];
} run;

static void keep(run *r, dla_tensor *t)
{
    assert_true(r->n < 64);
    r->bytes[r->n] = bytes_of(t, &r->size[r->n]);
    r->n++;
}

static void same_as(const run *first, const run *r, int team, const char *what)
{
    assert_int_equal(r->n, first->n);
    int differ = 0;
    for (int i = 0; i < r->n; i++) {
        assert_int_equal(r->size[i], first->size[i]);
        if (memcmp(r->bytes[i], first->bytes[i], r->size[i]) != 0) {
            print_error("%s: result %d with %d threads differs from 1 thread\n", what, i, team);
            differ++;
        }
    }
    if (differ)
        fail_msg("%s: %d of %d results differ", what, differ, r->n);
}

static void drop(run *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->bytes[i]);
    r->n = 0;
}

/* --------------------------------------------------------- reductions */

static void reductions(run *r, dla_dtype dt)
{
    dla_scope_begin();
    dla_rng_seed(11);
    /* One long vector: a full sum in parts. */
    dla_tensor *v = dla_randn(dt, "", 2, (int64_t[]){1 << 20, 1});
    keep(r, dla_sum(v, 0, NULL));
    keep(r, dla_mean(v, 0, NULL));
    keep(r, dla_max(v, 0, NULL));
    /* A few long columns: few groups, each in parts. */
    dla_tensor *m = dla_randn(dt, "", 2, (int64_t[]){200000, 3});
    keep(r, dla_sum(m, 1, (int64_t[]){1}));
    keep(r, dla_min(m, 1, (int64_t[]){1}));
    /* A batch's channel statistics: positions in runs spread over x. */
    dla_tensor *x = dla_randn(dt, "SSCB", 4, (int64_t[]){24, 24, 20, 64});
    keep(r, dla_sum(x, 3, (int64_t[]){1, 2, 4}));
    keep(r, dla_mean(dla_square(x), 3, (int64_t[]){1, 2, 4}));
    dla_scope_end();
}

static void check_reductions(dla_dtype dt)
{
    run first = {0}, r = {0};
    for (int k = 0; k < NTEAMS; k++) {
        omp_set_num_threads(team_sizes[k]);
        reductions(k ? &r : &first, dt);
        if (k) {
            same_as(&first, &r, team_sizes[k], dt == DLA_F64 ? "double reductions" : "reductions");
            drop(&r);
        }
    }
    drop(&first);
}

static void test_reductions_have_the_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    check_reductions(DLA_F32);
    check_reductions(DLA_F64);
}

/* ---------------------------------------------------------- digit CNN */

static dla_net *digit_cnn(void)
{
    dla_layer *layers[] = {
        dla_image_input_layer(28, 28, 1, NULL),
        dla_conv2d_layer(5, 5, 20, NULL), dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_fc_layer(10, NULL), dla_softmax_layer(NULL)};
    return dla_net_create((int)(sizeof layers / sizeof layers[0]), layers);
}

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    (void)nin;
    (void)nout;
    dla_net *net = ctx;
    const int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* Two steps of the CNN at batch (the second replays the network's
 * forward), every output of each kept. */
static void cnn_steps(run *r, int64_t batch)
{
    dla_scope_begin();
    dla_rng_seed(5);
    dla_net *net = digit_cnn();
    assert_non_null(net);
    const int nl = dla_net_learnable_count(net), ns = dla_net_state_count(net);
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", 4, (int64_t[]){28, 28, 1, batch});
    float labels[1024];
    for (int64_t i = 0; i < batch; i++)
        labels[i] = (float)((i * 7) % 10);
    dla_tensor *lab = dla_tensor_from_host(labels, DLA_F32, "CB", 2, (int64_t[]){1, batch});
    dla_tensor *t = dla_onehotencode(lab, 10, NULL);
    for (int step = 0; step < 2; step++) {
        dla_tensor *out[64];
        assert_true(1 + nl + ns <= 64);
        assert_int_equal(dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 1 + nl + ns, out),
                         DLA_OK);
        for (int i = 0; i < 1 + nl + ns; i++)
            keep(r, out[i]);
        assert_int_equal(dla_net_set_state(net, ns, out + 1 + nl), DLA_OK);
    }
    dla_net_free(net);
    dla_scope_end();
}

static void check_cnn(int64_t batch)
{
    run first = {0}, r = {0};
    char what[64];
    snprintf(what, sizeof what, "digit CNN at batch %lld", (long long)batch);
    for (int k = 0; k < NTEAMS; k++) {
        omp_set_num_threads(team_sizes[k]);
        cnn_steps(k ? &r : &first, batch);
        if (k) {
            same_as(&first, &r, team_sizes[k], what);
            drop(&r);
        }
    }
    drop(&first);
}

static void test_cnn_step_has_the_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    check_cnn(64);
}

static void test_cnn_step_of_few_images_has_the_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    check_cnn(8);
    /* Fewer images than threads: the convolutions share each image out. */
    check_cnn(2);
}

/* ------------------------------------------------- a wide layer's dW */

static dla_status wide_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    dla_tensor *y = dla_conv(in[0], in[1], NULL,
                             &(dla_conv_options){.padding_mode = "same"});
    out[0] = dla_sum(dla_square(y), 0, NULL);
    return dla_gradient(out[0], 1, &in[1], out + 1);
}

/* 256 to 256 channels, 3x3, 32 images of 6x6: the direct kernels' filter
 * sums are 19 MiB a part, so the batch goes in one part, its register
 * blocks shared out in two tasks a thread (conv_direct_body.h's
 * bwf_parts), each through runs of 8 stacked images. And 32 to 32
 * channels on 8x8 images, 64 of them: sums of 0.6 MiB, 8 parts of 8
 * images, each one run of 8 stacked images. */
static void wide_layer(run *r, int64_t size, int64_t channels, int64_t batch)
{
    dla_scope_begin();
    dla_rng_seed(9);
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", 4, (int64_t[]){size, size, channels, batch});
    dla_tensor *w = dla_randn(DLA_F32, "", 4, (int64_t[]){3, 3, channels, channels});
    dla_tensor *out[2];
    assert_int_equal(dla_feval(wide_loss, NULL, 2, (dla_tensor *[]){x, w}, 2, out), DLA_OK);
    keep(r, out[0]);
    keep(r, out[1]);
    dla_scope_end();
}

static void test_a_wide_layers_filter_gradient_has_the_same_bits_with_any_thread_count(
    void **state)
{
    (void)state;
    run first = {0}, r = {0};
    for (int layer = 0; layer < 2; layer++) {
        for (int k = 0; k < NTEAMS; k++) {
            omp_set_num_threads(team_sizes[k]);
            if (layer == 0)
                wide_layer(k ? &r : &first, 6, 256, 32);
            else
                wide_layer(k ? &r : &first, 8, 32, 64);
            if (k) {
                same_as(&first, &r, team_sizes[k],
                        layer == 0 ? "256-channel layer" : "32-channel 8x8 layer");
                drop(&r);
            }
        }
        drop(&first);
    }
}

/* ------------------------------------------- a strided layer's gradients */

/* The gradients of sum(conv(x, w)^2) for x and w, a 3x3 (ctx: 1x1)
 * filter with stride 2: with AVX-512 the cpu plugin runs both backward
 * passes phase by phase (conv_phases.c), each phase a stride-1 call of
 * the direct kernels. */
static dla_status strided_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    (void)nin;
    (void)nout;
    const int one = ctx != NULL;
    dla_tensor *y =
        dla_conv(in[0], in[1], NULL,
                 &(dla_conv_options){.stride = {2, 2, 1},
                                     .padding = {{one ? 0 : 1, one ? 0 : 1, 0}, {1, 0, 0}}});
    out[0] = dla_sum(dla_square(y), 0, NULL);
    return dla_gradient(out[0], 2, in, out + 1);
}

static void strided_layer(run *r, int64_t size, int64_t batch, int one)
{
    dla_scope_begin();
    dla_rng_seed(11);
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", 4, (int64_t[]){size, size, 16, batch});
    dla_tensor *w = dla_randn(DLA_F32, "", 4, (int64_t[]){one ? 1 : 3, one ? 1 : 3, 16, 32});
    dla_tensor *out[3];
    assert_int_equal(
        dla_feval(strided_loss, one ? (void *)1 : NULL, 2, (dla_tensor *[]){x, w}, 3, out),
        DLA_OK);
    for (int i = 0; i < 3; i++)
        keep(r, out[i]);
    dla_scope_end();
}

/* ResNet-20's downsampling layers (3x3 and 1x1, stride 2, 16 -> 32
 * channels) on 15x15 images: 40 of them (the filter gradient in parts of
 * the batch) and 3 (fewer images than threads). */
static void test_a_strided_layers_gradients_have_the_same_bits_with_any_thread_count(
    void **state)
{
    (void)state;
    static const int64_t batches[2] = {40, 3};
    for (int shape = 0; shape < 4; shape++) {
        run first = {0}, r = {0};
        for (int k = 0; k < NTEAMS; k++) {
            omp_set_num_threads(team_sizes[k]);
            strided_layer(k ? &r : &first, 15, batches[shape / 2], shape % 2);
            if (k) {
                same_as(&first, &r, team_sizes[k],
                        shape % 2 ? "1x1 stride-2 layer" : "3x3 stride-2 layer");
                drop(&r);
            }
        }
        drop(&first);
    }
}

/* ------------------------------------------------------------- products */

/* Pages of op(A) (m x k) times op(B) (k x n), A transposed as stored when
 * ta, B when tb. */
static void product(run *r, int64_t m, int64_t n, int64_t k, int tb, int ta, int64_t pages)
{
    dla_scope_begin();
    dla_rng_seed(13);
    dla_tensor *a = dla_randn(DLA_F32, "", 3, (int64_t[]){ta ? k : m, ta ? m : k, pages});
    dla_tensor *b = dla_randn(DLA_F32, "", 3, (int64_t[]){tb ? n : k, tb ? k : n, pages});
    keep(r, dla_pagemtimes(a, ta ? "transpose" : "none", b, tb ? "transpose" : "none"));
    dla_scope_end();
}

static void test_products_have_the_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    /* An LSTM step's [W R b] [x_t; h; 1]; rows cut past a whole 48 and
     * 16, columns past a whole 8; a transposed B; columns shared out (48
     * rows), rows and columns both (64 rows with 5 threads); a small
     * transposed A (packed once); an attention's 128 pages of scores
     * (K' Q) and weighted values (V P), shared out by pages. */
    static const int64_t shapes[9][6] = {
        {512, 64, 132, 0, 0, 1}, {1000, 3, 200, 0, 0, 1}, {130, 9, 700, 0, 0, 1},
        {200, 40, 300, 1, 0, 1}, {48, 500, 100, 0, 0, 1}, {64, 300, 200, 1, 0, 1},
        {32, 768, 32, 0, 1, 1},  {24, 24, 8, 0, 1, 128},  {8, 24, 24, 0, 0, 128}};
    for (int s = 0; s < 9; s++) {
        run first = {0}, r = {0};
        for (int k = 0; k < NTEAMS; k++) {
            omp_set_num_threads(team_sizes[k]);
            product(k ? &r : &first, shapes[s][0], shapes[s][1], shapes[s][2], (int)shapes[s][3],
                    (int)shapes[s][4], shapes[s][5]);
            if (k) {
                char what[80];
                snprintf(what, sizeof what, "%lldx%lldx%lld product (%lld pages)",
                         (long long)shapes[s][0], (long long)shapes[s][1],
                         (long long)shapes[s][2], (long long)shapes[s][5]);
                same_as(&first, &r, team_sizes[k], what);
                drop(&r);
            }
        }
        drop(&first);
    }
}

/* --------------------------------------------------------------- LSTM */

enum { LSTM_C = 3, LSTM_H = 128, LSTM_B = 64, LSTM_T = 20 };

static dla_net *lstm_net(void)
{
    dla_rng_seed(17);
    dla_layer *layers[] = {dla_sequence_input_layer(LSTM_C, NULL), dla_lstm_layer(LSTM_H, NULL),
                           dla_fc_layer(LSTM_C, NULL)};
    return dla_net_create(3, layers);
}

static dla_status lstm_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    (void)nout;
    dla_net *net = ctx;
    const int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_mse(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* The loss and gradients (eager), then two replayed inferences. */
static void lstm_steps(run *r)
{
    dla_scope_begin();
    dla_net *net = lstm_net();
    assert_non_null(net);
    const int nl = dla_net_learnable_count(net), ns = dla_net_state_count(net);
    dla_rng_seed(19);
    dla_tensor *x = dla_randn(DLA_F32, "CBT", 3, (int64_t[]){LSTM_C, LSTM_B, LSTM_T});
    dla_tensor *t = dla_randn(DLA_F32, "CBT", 3, (int64_t[]){LSTM_C, LSTM_B, LSTM_T});
    dla_tensor *out[16];
    assert_true(1 + nl + ns <= 16);
    assert_int_equal(dla_feval(lstm_loss, net, 2, (dla_tensor *[]){x, t}, 1 + nl + ns, out),
                     DLA_OK);
    for (int i = 0; i < 1 + nl; i++)
        keep(r, out[i]);
    for (int k = 0; k < 2; k++) {
        dla_tensor *y;
        assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
        keep(r, y);
    }
    dla_net_free(net);
    dla_scope_end();
}

static void test_an_lstm_has_the_same_bits_with_any_thread_count(void **state)
{
    (void)state;
    run first = {0}, r = {0};
    for (int k = 0; k < NTEAMS; k++) {
        omp_set_num_threads(team_sizes[k]);
        lstm_steps(k ? &r : &first);
        if (k) {
            same_as(&first, &r, team_sizes[k], "LSTM");
            drop(&r);
        }
    }
    drop(&first);
}

typedef struct lstm_job {
    dla_net *net;
    dla_tensor *x;
    unsigned char *bytes[5];
    size_t size[5];
    dla_status st;
} lstm_job;

static void *lstm_predicts(void *arg)
{
    lstm_job *j = arg;
    omp_set_num_threads(2);
    for (int k = 0; k < 5 && j->st == DLA_OK; k++) {
        dla_scope_begin();
        dla_tensor *y = NULL;
        j->st = dla_net_predict(j->net, 1, &j->x, 1, &y, NULL);
        if (j->st == DLA_OK) {
            j->size[k] = (size_t)dla_tensor_numel(y) * sizeof(float);
            j->bytes[k] = malloc(j->size[k]);
            j->st = j->bytes[k] ? dla_tensor_to_host(y, j->bytes[k], j->size[k])
                                : DLA_ERR_OUT_OF_MEMORY;
        }
        dla_scope_end();
    }
    return NULL;
}

static void test_two_host_threads_get_the_bits_of_one(void **state)
{
    (void)state;
    omp_set_num_threads(1);
    dla_rng_seed(23);
    dla_tensor *x = dla_randn(DLA_F32, "CBT", 3, (int64_t[]){LSTM_C, LSTM_B, LSTM_T});
    dla_net *net[2] = {lstm_net(), lstm_net()};
    assert_non_null(net[0]);
    assert_non_null(net[1]);
    run first = {0};
    dla_scope_begin();
    dla_tensor *y;
    assert_int_equal(dla_net_predict(net[0], 1, &x, 1, &y, NULL), DLA_OK);
    keep(&first, y);
    dla_scope_end();
    lstm_job jobs[2] = {{.net = net[0], .x = x}, {.net = net[1], .x = x}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, lstm_predicts, &jobs[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(jobs[i].st, DLA_OK);
        for (int k = 0; k < 5; k++) {
            assert_int_equal(jobs[i].size[k], first.size[0]);
            if (memcmp(jobs[i].bytes[k], first.bytes[0], first.size[0]) != 0)
                fail_msg("LSTM inference %d of host thread %d differs from one thread's", k, i);
            free(jobs[i].bytes[k]);
        }
    }
    drop(&first);
    dla_net_free(net[0]);
    dla_net_free(net[1]);
    dla_tensor_release(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_reductions_have_the_same_bits_with_any_thread_count),
        TU_TEST(test_cnn_step_has_the_same_bits_with_any_thread_count),
        TU_TEST(test_cnn_step_of_few_images_has_the_same_bits_with_any_thread_count),
        TU_TEST(
            test_a_wide_layers_filter_gradient_has_the_same_bits_with_any_thread_count),
        TU_TEST(
            test_a_strided_layers_gradients_have_the_same_bits_with_any_thread_count),
        TU_TEST(test_products_have_the_same_bits_with_any_thread_count),
        TU_TEST(test_an_lstm_has_the_same_bits_with_any_thread_count),
        TU_TEST(test_two_host_threads_get_the_bits_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

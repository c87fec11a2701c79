/*
 * parallel_training.c - MATLAB's "Train Network in Parallel with Custom
 * Training Loop", on Fashion-MNIST, with MPI ranks as the workers:
 *
 *     mpirun -np 2 build/examples/parallel_training [--small] [--epochs N]
 *
 *     spmd
 *         workerImds = partition(imdsTrain, N, labindex);
 *         workerImds.ReadSize = workerMiniBatchSize(labindex);
 *         for epoch = 1:numEpochs
 *             reset(workerImds); workerImds = shuffle(workerImds);
 *             while gop(@and, hasdata(workerImds))
 *                 [X, T] = read(workerImds);
 *                 [gradients, loss, state] = dlfeval(@modelGradients, dlnet, X, T);
 *                 loss = gplus(workerNormalizationFactor * loss);
 *                 dlnet.State = aggregateState(state, workerNormalizationFactor);
 *                 gradients = aggregateGradients(gradients, workerNormalizationFactor);
 *                 [dlnet.Learnables, velocity] = sgdmupdate(dlnet.Learnables, gradients, velocity);
 *             end
 *             if labindex == 1, send(Q, [epoch loss]); end
 *         end
 *     end
 *
 * The network is the page's: imageInput 28x28x1 without normalization,
 * three convolutions (5x5x20, 3x3x20 padding 1, 3x3x20 padding 1) each
 * followed by batch normalization and relu, fully connected 10; softmax
 * and cross-entropy in the model gradients function. The global
 * mini-batch is 128, shared among the workers (remainder to the first).
 * The batch normalization state is combined with the parallel-variance
 * formula (dla_spmd_combine_state), not the page's gplus of the weighted
 * variances, which is not the variance of the whole mini-batch.
 *
 * Rank 0 draws the progress bar and the chart from the combined loss,
 * and is also the page's client: every worker sends its figures for the
 * epoch through a DataQueue (dla_dataqueue), which rank 0 shows as they
 * arrive. At the end every worker holds the same network (checked with a
 * digest of its bits), and rank 0 measures its test accuracy.
 *
 * --small (or DLA_EXAMPLE_SMALL=1): 3,840 training and 1,000 test images,
 * one epoch, for `make check`. Exit status 0; 1 for an error; 77 when
 * Fashion-MNIST is not installed.
 */
#define _POSIX_C_SOURCE 200809L
#include "example_args.h"
#include "digit_net.h"
#include <dlaccel.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/example_clock.h"

#define BATCH 128
#define CLASSES 10

static int rank;

static int fail(const char *what)
{
    fprintf(stderr, "parallel_training: rank %d: %s: %s\n", rank, what, dla_last_error());
    return 1;
}

/* function [gradients, loss, state] = modelGradients(dlnet, X, T)
 * out: loss, one gradient per learnable, one new value per State row. */
static dla_status model_gradients(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(dla_softmax(y), in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* Pixels to [0, 1], class numbers to one-hot. */
static dla_status preprocess(void *ctx, int n, dla_tensor **b)
{
    (void)ctx, (void)n;
    b[0] = dla_affine(b[0], 1.0 / 255.0, 0.0);
    b[1] = dla_onehotencode(b[1], CLASSES, NULL);
    return dla_tensor_status(b[0]) != DLA_OK ? dla_tensor_status(b[0]) : dla_tensor_status(b[1]);
}

/* What each worker sends rank 0 at the end of an epoch. */
typedef struct epoch_report {
    int32_t epoch, rank;
    int64_t observations;
    double loss, seconds, combine_seconds;
} epoch_report;

/* The DataQueue's afterEach(Q, @displayTrainingProgress): rank 0 shows
 * whatever has arrived, without waiting for anyone. */
static int64_t received;
static void display_progress(dla_dataqueue *q, dla_progress *p)
{
    epoch_report r;
    int from;
    size_t size;
    while (dla_dataqueue_poll(q, &r, sizeof r, &from, &size) == 1 && size == sizeof r) {
        received++;
        if (r.rank == 0)
            dla_progress_printf(p, "Epoch: %d, Loss: %.4f", (int)r.epoch, r.loss);
        dla_progress_printf(p, "  worker %d: %lld observations in %.1f s (%.2f s combining)",
                            (int)r.rank, (long long)r.observations, r.seconds, r.combine_seconds);
    }
}

/* FNV-1a of the Learnables' and State's bytes. */
static unsigned long long digest(dla_net *net)
{
    unsigned long long h = 1469598103934665603ull;
    dla_table *tables[2] = {dla_net_learnables(net), dla_net_state(net)};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < dla_table_count(tables[k]); i++) {
            dla_tensor *v = dla_table_value(tables[k], i);
            size_t bytes = (size_t)dla_tensor_numel(v) * dla_dtype_size(dla_tensor_dtype(v));
            unsigned char *b = malloc(bytes ? bytes : 1);
            if (b && dla_tensor_to_host(v, b, bytes) == DLA_OK)
                for (size_t j = 0; j < bytes; j++)
                    h = (h ^ b[j]) * 1099511628211ull;
            free(b);
        }
    return h;
}

/* Test accuracy in inference mode (rank 0). */
static double test_accuracy(dla_net *net, dla_tensor *x, dla_tensor *t)
{
    dla_mbq *q;
    if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = x, .cast = "single"}, {.tensor = t}},
                       &(dla_mbq_options){.mini_batch_size = 500, .mini_batch_fcn = preprocess},
                       &q) != DLA_OK)
        return NAN;
    double right = 0, total = 0;
    while (dla_mbq_hasdata(q)) {
        dla_scope_begin();
        dla_tensor *b[2], *y;
        if (dla_mbq_next(q, 2, b) == DLA_OK && dla_net_predict(net, 1, &b[0], 1, &y, NULL) == DLA_OK) {
            dla_tensor *hit = dla_eq(dla_onehotdecode(y, NULL), dla_onehotdecode(b[1], NULL));
            right += dla_tensor_item(dla_sum(dla_cast(hit, DLA_F64), 0, NULL), 0);
            total += (double)dla_tensor_dim(y, 2);
        }
        dla_scope_end();
    }
    dla_mbq_free(q);
    return total ? 100.0 * right / total : NAN;
}

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && *env && strcmp(env, "0"), epochs = 0;
    const char *dir = NULL, *chart = "parallel_training.svg";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--epochs") && i + 1 < argc) {
            if (!example_int32("parallel_training", "--epochs", argv[++i], 1, 1000000, &epochs))
                return 2;
        } else if (!strcmp(argv[i], "--data") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--chart") && i + 1 < argc)
            chart = argv[++i];
        else
            return example_usage(argv[0], "[--small] [--epochs N] [--data DIR] [--chart PATH]"
                                 " (under mpirun -np N)", argv[i]);
    }
    epochs = epochs > 0 ? epochs : small ? 1 : 2;

    /* N = pool.NumWorkers */
    rank = dla_spmd_rank();
    int n = dla_spmd_size();
    const char *data_dir = dir ? dir : DLA_FASHION_MNIST_DIR;
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", data_dir);
    if (access(probe, F_OK) != 0) {
        snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte", data_dir);
        if (access(probe, F_OK) != 0) {
            if (rank == 0)
                fprintf(stderr, "parallel_training: Fashion-MNIST is not installed in %s (install "
                        "dataset-fashion-mnist, or pass --data DIR)\n", data_dir);
            return 77;
        }
    }
    dla_tensor *xtrain, *ttrain, *xtest = NULL, *ttest = NULL;
    dla_fashion_mnist_options lo = {.dtype = DLA_U8, .count = small ? 3840 : 0};
    if (dla_fashion_mnist_load(dir, "train", &lo, &xtrain, &ttrain) != DLA_OK)
        return fail("training set");
    lo.count = small ? 1000 : 0;
    if (rank == 0 && dla_fashion_mnist_load(dir, "test", &lo, &xtest, &ttest) != DLA_OK)
        return fail("test set");

    /* workerMiniBatchSize: the global mini-batch divided, the remainder to
     * the first workers. */
    int64_t *shares = malloc(sizeof *shares * (size_t)n);
    if (!shares || dla_spmd_shares(BATCH, n, shares) != DLA_OK)
        return fail("shares");
    int64_t mine = shares[rank];
    double factor = (double)mine / BATCH; /* workerNormalizationFactor */

    /* Q = parallel.pool.DataQueue */
    dla_dataqueue *q;
    if (dla_dataqueue_create(&q) != DLA_OK)
        return fail("DataQueue");

    /* dlnet = dlnetwork(lgraph): initialized here, then rank 0's weights
     * everywhere, so every worker starts the same. */
    dla_rng_seed(0);
    dla_net *net = digit_net_with(CLASSES, "none", 0);
    dla_scope_begin();
    dla_tensor *example = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 1));
    if (!net || dla_net_init(net, 1, &example) != DLA_OK || dla_spmd_broadcast_net(net, 0) != DLA_OK)
        return fail("network");
    dla_scope_end();
    int nl = dla_net_learnable_count(net), ns = dla_net_state_count(net);

    /* workerImds = partition(imdsTrain, N, labindex); ReadSize = share */
    dla_mbq *all, *part;
    if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = xtrain, .cast = "single"}, {.tensor = ttrain}},
                       &(dla_mbq_options){.mini_batch_size = BATCH, .partial_mini_batch = "discard",
                                          .seed = 0, .mini_batch_fcn = preprocess},
                       &all) != DLA_OK)
        return fail("mini-batch queue");
    dla_mbq_shuffle(all); /* the same order on every rank: parts of mixed classes */
    if (dla_mbq_partition(all, n, rank, &part) != DLA_OK ||
        dla_mbq_set_mini_batch_size(part, mine ? mine : 1) != DLA_OK)
        return fail("partition");

    dla_tensor **velocity = calloc((size_t)nl, sizeof *velocity);
    dla_tensor **out = malloc(sizeof *out * (size_t)(1 + nl + ns));
    if (!velocity || !out)
        return fail("memory");
    dla_progress *progress = NULL;
    if (rank == 0) {
        progress = dla_progress_create(&(dla_progress_options){
            .total = 0, .title = "Fashion-MNIST: the seed page's parallel training loop"});
        printf("%d worker%s (%s), global mini-batch %d shared as", n, n == 1 ? "" : "s",
               dla_spmd_backend(), BATCH);
        for (int r = 0; r < n; r++)
            printf("%s%lld", r ? " + " : " ", (long long)shares[r]);
        printf(", %lld training images, %d epoch%s, SGDM lr %.2f momentum %.1f\n",
               (long long)dla_tensor_dim(xtrain, 4), epochs, epochs == 1 ? "" : "s",
               DLA_SGDM_LEARN_RATE, DLA_SGDM_MOMENTUM);
        fflush(stdout);
    }

    int64_t iteration = 0;
    double loss = NAN, first_loss = NAN;
    for (int epoch = 1; epoch <= epochs; epoch++) {
        dla_mbq_shuffle(part); /* reset(workerImds); shuffle(workerImds) */
        double t0 = now(), combining = 0;
        int64_t seen = 0;
        bool go = false;
        /* while gop(@and, hasdata(workerImds)) */
        while (dla_spmd_all(dla_mbq_hasdata(part) != 0, &go) == DLA_OK && go) {
            dla_scope_begin();
            dla_tensor *b[2];
            if (dla_mbq_next(part, 2, b) != DLA_OK ||
                dla_feval(model_gradients, net, 2, b, 1 + nl + ns, out) != DLA_OK)
                return fail("training step");
            double c0 = now();
            /* A worker without a share ran on one image it must not count. */
            double w = mine ? factor : 0.0;
            /* loss = gplus(factor * loss); state and gradients aggregated */
            if (dla_spmd_combine(1, out, w, out) != DLA_OK ||
                dla_spmd_combine_state(net, ns, out + 1 + nl, mine, BATCH, out + 1 + nl) != DLA_OK ||
                dla_net_set_state(net, ns, out + 1 + nl) != DLA_OK ||
                dla_spmd_combine(nl, out + 1, w, out + 1) != DLA_OK)
                return fail("combining");
            combining += now() - c0;
            if (dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, velocity,
                               DLA_SGDM_LEARN_RATE, DLA_SGDM_MOMENTUM) != DLA_OK)
                return fail("sgdmupdate");
            loss = dla_tensor_item(out[0], 0);
            dla_scope_end();
            iteration++;
            seen += mine;
            first_loss = iteration == 1 ? loss : first_loss;
            if (progress) {
                char text[96];
                snprintf(text, sizeof text, "epoch %d/%d  loss %.4f", epoch, epochs, loss);
                dla_progress_record(progress, "TrainingLoss", iteration, loss);
                dla_progress_update(progress, iteration, text);
                display_progress(q, progress);
            }
        }
        /* send(Q, [epoch loss]): every worker its figures. */
        epoch_report r = {epoch, rank, seen, loss, now() - t0, combining};
        if (dla_dataqueue_send(q, &r, sizeof r) != DLA_OK)
            return fail("send");
        if (progress) {
            dla_progress_mark_epoch(progress, epoch + 1, iteration + 1);
            display_progress(q, progress);
        }
    }
    /* Rank 0 shows every worker's last figures (one message per worker
     * and epoch); the queue's free waits for whatever is in flight. */
    if (progress) {
        double t = now();
        while (received < (int64_t)epochs * n && now() - t < 60)
            display_progress(q, progress);
        dla_progress_finish(progress, NULL);
    }
    dla_dataqueue_free(q);

    /* After training every worker holds the same network: dlnet{1}. */
    unsigned long long d = digest(net);
    double mine_d[2] = {(double)(d >> 32), (double)(d & 0xffffffffull)}, *every = NULL;
    dla_scope_begin();
    dla_tensor *dt = dla_tensor_from_host(mine_d, DLA_F64, "", DLA_DIMS(2)), *gathered = NULL;
    int same = 0;
    every = malloc(sizeof *every * 2 * (size_t)n);
    if (every && dla_allgather(dt, &gathered) == DLA_OK) {
        if (dla_tensor_to_host(gathered, every, sizeof *every * 2 * (size_t)n) == DLA_OK) {
            same = 1;
            for (int r = 0; r < n; r++)
                same &= every[2 * r] == mine_d[0] && every[2 * r + 1] == mine_d[1];
        }
    }
    dla_scope_end();
    free(every);
    if (rank == 0) {
        if (dla_progress_write_chart(progress, chart) != DLA_OK)
            return fail("chart");
        double acc = test_accuracy(net, xtest, ttest);
        printf("loss: %.4f at iteration 1, %.4f at iteration %lld\n", first_loss, loss,
               (long long)iteration);
        printf("every worker holds the same network: %s\n", same ? "yes" : "NO");
        printf("test accuracy: %.2f%% (%lld test images)\n", acc,
               (long long)dla_tensor_dim(xtest, 4));
        printf("chart: %s\n", chart);
    }
    dla_progress_free(progress);
    dla_optim_free(nl, velocity);
    free(velocity);
    free(out);
    free(shares);
    dla_mbq_free(part);
    dla_mbq_free(all);
    dla_net_free(net);
    dla_tensor_release(xtrain);
    dla_tensor_release(ttrain);
    dla_tensor_release(xtest);
    dla_tensor_release(ttest);
    return same ? 0 : 1;
}

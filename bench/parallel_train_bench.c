/*
 * parallel_train_bench.c - one rank's side of the parallel training
 * figures of issue 15, run under mpirun by bench/parallel_train.sh:
 *
 *   mlp [--rounds R] [--steps S] [--batch B] [--width W]
 *       weak scaling: every rank trains a compute-bound MLP (W inputs, two
 *       hidden layers of W, 10 outputs) on B observations of its own per
 *       step, the gradients combined across the ranks (dla_spmd_combine)
 *       and SGDM applied; R rounds of S steps. Rank 0 prints the median
 *       step time of the rounds, and the time spent combining (all of it
 *       exposed: the combination starts after the backward pass).
 *
 *   overlap [--rounds R] [--iterations I] [--batch B] [--net cnn|mlp]
 *       the digit CNN (examples/cnn_fmnist's network, 0.5 MiB of
 *       gradients) on synthetic 28x28 images, or mlp's network (W = 1024:
 *       8 MiB of gradients) on random features, through trainnet
 *       "parallel", I iterations of a global
 *       mini-batch of B per run, R rounds, each round one run with the
 *       blocking reductions (DLACCEL_OVERLAP=0) and one with the
 *       reductions started during the backward pass (DLACCEL_OVERLAP=1),
 *       alternating. From trainnet's "Worker" lines, per step: the time
 *       from the backward's end until the gradients are combined, of the
 *       last rank to end its backward (which waits for no other, so the
 *       ranks' skew is not in it): in the blocking path the total
 *       reduction time, all of it exposed; in the overlapped path the
 *       exposed part. Rank 0 prints the medians over the rounds and
 *       overlap = 1 - exposed / total. The buckets follow
 *       DLACCEL_BUCKET_MIB.
 *
 * Efficiency is the 1-rank step time over the N-rank one, with one thread
 * per rank (OMP_NUM_THREADS=1): the script runs both in one go.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/example_clock.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

static int fail(const char *what)
{
    fprintf(stderr, "parallel_train_bench: rank %d: %s: %s\n", dla_spmd_rank(), what,
            dla_last_error());
    return 1;
}

static int mlp(int rounds, int steps, int64_t batch, int64_t width)
{
    int rank = dla_spmd_rank(), size = dla_spmd_size();
    dla_rng_seed(1);
    dla_layer *layers[] = {dla_fc_layer(width, NULL), dla_relu_layer(NULL), dla_fc_layer(width, NULL),
                           dla_relu_layer(NULL), dla_fc_layer(10, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(6, layers);
    dla_scope_begin();
    dla_tensor *ex = dla_zeros(DLA_F32, "CB", DLA_DIMS(width, 1));
    if (!net || dla_net_init(net, 1, &ex) != DLA_OK || dla_spmd_broadcast_net(net, 0) != DLA_OK)
        return fail("network");
    dla_scope_end();
    /* Each rank its own data (weak scaling), made once. */
    dla_rng_seed(100 + (uint64_t)rank);
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(width, batch));
    float *t = calloc((size_t)(10 * batch), sizeof *t);
    for (int64_t j = 0; t && j < batch; j++)
        t[10 * j + (j * 7 + rank) % 10] = 1.0f;
    dla_tensor *tt = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(10, batch));
    free(t);
    int nl = dla_net_learnable_count(net);
    dla_tensor **vel = calloc((size_t)nl, sizeof *vel), **out = calloc((size_t)(1 + nl), sizeof *out);
    double *per = calloc((size_t)rounds, sizeof *per), *comb = calloc((size_t)rounds, sizeof *comb);
    if (!vel || !out || !per || !comb || dla_tensor_status(x) != DLA_OK)
        return fail("memory");
    size_t params = 0;
    for (int i = 0; i < nl; i++)
        params += (size_t)dla_tensor_numel(dla_table_value(dla_net_learnables(net), i));
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        dla_spmd_barrier();
        double t0 = now(), c = 0;
        for (int s = 0; s < steps; s++) {
            dla_scope_begin();
            if (dla_feval(model_loss, net, 2, (dla_tensor *[]){x, tt}, 1 + nl, out) != DLA_OK)
                return fail("step");
            double c0 = now();
            if (dla_spmd_combine(nl, out + 1, 1.0 / size, out + 1) != DLA_OK)
                return fail("combine");
            c += now() - c0;
            if (dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, vel, 0.001,
                               0.9) != DLA_OK)
                return fail("update");
            dla_tensor_item(out[0], 0); /* the loss, read as a loop would */
            dla_scope_end();
        }
        if (r >= 0) {
            per[r] = (now() - t0) / steps;
            comb[r] = c / steps;
        }
    }
    qsort(per, (size_t)rounds, sizeof *per, cmp);
    qsort(comb, (size_t)rounds, sizeof *comb, cmp);
    if (rank == 0)
        printf("mlp ranks %d: step %.3f ms (median of %d rounds of %d; min %.3f, max %.3f), "
               "combining %.3f ms of it (%zu parameters, %.1f MiB of gradients, batch %lld per rank)\n",
               size, 1e3 * per[rounds / 2], rounds, steps, 1e3 * per[0], 1e3 * per[rounds - 1],
               1e3 * comb[rounds / 2], params, (double)params * 4 / 1048576.0, (long long)batch);
    dla_optim_free(nl, vel);
    free(vel);
    free(out);
    free(per);
    free(comb);
    dla_tensor_release(x);
    dla_tensor_release(tt);
    dla_net_free(net);
    return 0;
}

/* ---------------------------------------------------------- overlap */

static dla_net *digit_cnn(void)
{
    dla_layer *layers[] = {
        dla_image_input_layer(28, 28, 1, NULL),
        dla_conv2d_layer(5, 5, 20, NULL), dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_conv2d_layer(3, 3, 20, &(dla_conv_layer_options){.padding = {1, 1, 1, 1}}),
        dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_fc_layer(10, NULL), dla_softmax_layer(NULL)};
    return dla_net_create((int)(sizeof layers / sizeof layers[0]), layers);
}

/* One worker's figures of a run, per step (seconds): the time combining,
 * in allreduce (blocking path), in flight (overlapped), from the
 * backward's end until the gradients are combined (both), buckets. */
typedef struct worker_fig {
    double combining, reduce, flight, after, last, buckets, early;
} worker_fig;

/* Worker w's line of trainnet's report in text; 0 when absent. */
static int parse_worker(const char *text, int w, int overlapped, worker_fig *f)
{
    char key[32];
    snprintf(key, sizeof key, "Worker %d: ", w);
    const char *p = strstr(text, key);
    if (!p)
        return 0;
    long long batches = 0, early = 0, buckets = 0;
    double comb = 0, a = 0, b = 0;
    memset(f, 0, sizeof *f);
    /* (f->last is filled by the scan, then made per step below.) */
    if (overlapped) {
        if (sscanf(p + strlen(key), "%lld mini-batches, %lf s combining; reductions overlapped "
                   "(%lld of %lld buckets started during the backward), %lf s in flight; "
                   "gradients ready %lf s after the backward (%lf s", &batches, &comb, &early,
                   &buckets, &a, &b, &f->last) != 7 ||
            batches < 1)
            return 0;
        f->flight = a / batches;
        f->buckets = (double)buckets / batches;
        f->early = (double)early / batches;
    } else {
        if (sscanf(p + strlen(key), "%lld mini-batches, %lf s combining (%lf s of it in "
                   "allreduce, all exposed); gradients ready %lf s after the backward (%lf s",
                   &batches, &comb, &a, &b, &f->last) != 5 ||
            batches < 1)
            return 0;
        f->reduce = a / batches;
    }
    f->after = b / batches;
    f->last /= batches;
    f->combining = comb / batches;
    return 1;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static dla_net *wide_mlp(int64_t width)
{
    dla_layer *layers[] = {dla_fc_layer(width, NULL), dla_relu_layer(NULL), dla_fc_layer(width, NULL),
                           dla_relu_layer(NULL), dla_fc_layer(10, NULL), dla_softmax_layer(NULL)};
    return dla_net_create(6, layers);
}

static int overlap(int rounds, int iterations, int64_t batch, int mlp_net)
{
    int rank = dla_spmd_rank(), size = dla_spmd_size();
    int64_t n = (int64_t)iterations * batch;
    dla_rng_seed(7); /* the same data and network on every rank */
    dla_net *init = mlp_net ? wide_mlp(1024) : digit_cnn();
    dla_tensor *x = mlp_net ? dla_randn(DLA_F32, "CB", DLA_DIMS(1024, n))
                            : dla_rand(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, n));
    int32_t *lab = malloc(sizeof *lab * (size_t)n);
    for (int64_t j = 0; lab && j < n; j++)
        lab[j] = (int32_t)((j * 7) % 10);
    dla_tensor *t = lab ? dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, n)) : NULL;
    free(lab);
    dla_scope_begin();
    dla_tensor *ex = dla_slice(x, mlp_net ? 2 : 4, 0, 1, 1);
    if (!init || !t || dla_net_init(init, 1, &ex) != DLA_OK)
        return fail("network");
    dla_scope_end();
    size_t cap = 1 << 20;
    char *text = malloc(cap);
    double *v[8];
    for (int k = 0; k < 8; k++)
        v[k] = calloc((size_t)rounds, sizeof *v[k]);
    if (!text || !v[7])
        return fail("memory");
    /* v: 0 blocking iteration, 1 blocking reduce, 2 blocking after (the
     * last rank's), 3 overlapped iteration, 4 flight, 5 overlapped after
     * (the last rank's), 6 buckets, 7 of them started during the
     * backward. */
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        for (int mode = 0; mode < 2; mode++) {
            setenv("DLACCEL_OVERLAP", mode ? "1" : "0", 1);
            FILE *out = fmemopen(text, cap, "w");
            dla_training_options o = {.max_epochs = 1, .mini_batch_size = batch,
                                      .initial_learn_rate = 0.01, .shuffle = "never",
                                      .execution_environment = "parallel", .verbose = 1,
                                      .verbose_frequency = 1000000, .output = out};
            dla_net *trained = NULL;
            dla_training_info *info = NULL;
            dla_spmd_barrier();
            double t0 = now();
            dla_status st = dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, init,
                                         &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                         &info);
            double per = (now() - t0) / iterations;
            fclose(out);
            text[cap - 1] = '\0';
            if (st != DLA_OK)
                return fail("trainnet");
            dla_training_info_free(info);
            dla_net_free(trained);
            if (r < 0 || rank != 0)
                continue;
            worker_fig sum = {0}, f;
            for (int w = 0; w < size; w++) {
                if (!parse_worker(text, w, mode, &f)) {
                    fprintf(stderr, "parallel_train_bench: no Worker %d line in:\n%s\n", w, text);
                    return 1;
                }
                sum.reduce += f.reduce / size;
                sum.flight += f.flight / size;
                sum.after += f.after / size;
                sum.last = f.last; /* agreed: the same on every worker */
                sum.buckets += f.buckets / size;
                sum.early += f.early / size;
            }
            if (mode == 0) {
                v[0][r] = per, v[1][r] = sum.reduce, v[2][r] = sum.last;
            } else {
                v[3][r] = per, v[4][r] = sum.flight, v[5][r] = sum.last;
                v[6][r] = sum.buckets, v[7][r] = sum.early;
            }
        }
    }
    if (rank == 0) {
        double m[8];
        for (int k = 0; k < 8; k++)
            m[k] = median(v[k], rounds);
        const char *mib = getenv("DLACCEL_BUCKET_MIB");
        /* The last rank to end its backward waits for no other: its time
         * from there until the gradients are combined is the reductions'
         * own (with the step's agreement and the buckets' filling): all of
         * it exposed in the blocking path, the total; what is left of it
         * in the overlapped path, the exposed part. */
        double total = m[2], exposed = m[5];
        printf("overlap ranks %d, %s, buckets of %s MiB (%.0f a step, %.0f of them started during "
               "the backward), %d iterations of %lld, medians of %d rounds:\n", size,
               mlp_net ? "MLP 1024-1024-1024-10" : "digit CNN", mib && *mib ? mib : "4", m[6],
               m[7], iterations, (long long)batch, rounds);
        printf("  blocking:   iteration %.2f ms; gradients ready %.3f ms after the last rank's "
               "backward (%.3f ms of it in allreduce)\n", 1e3 * m[0], 1e3 * m[2], 1e3 * m[1]);
        printf("  overlapped: iteration %.2f ms; gradients ready %.3f ms after the last rank's "
               "backward (reductions in flight %.3f ms)\n", 1e3 * m[3], 1e3 * m[5], 1e3 * m[4]);
        printf("  total reduction %.3f ms, exposed %.3f ms: overlap (1 - exposed / total) %.2f; "
               "iteration overlapped / blocking %.3f\n", 1e3 * total, 1e3 * exposed,
               total > 0 ? 1 - exposed / total : 0, m[0] > 0 ? m[3] / m[0] : 0);
    }
    free(text);
    for (int k = 0; k < 8; k++)
        free(v[k]);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_net_free(init);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = 5, steps = 10, iterations = 40;
    int64_t batch = 256, width = 1024;
    int is_overlap = argc >= 2 && !strcmp(argv[1], "overlap"), mlp_net = 0;
    if (argc < 2 || (strcmp(argv[1], "mlp") && !is_overlap)) {
        fprintf(stderr, "usage: mpirun -np N %s mlp [--rounds R] [--steps S] [--batch B] "
                "[--width W]\n       mpirun -np N %s overlap [--rounds R] [--iterations I] "
                "[--batch B] [--net cnn|mlp]\n", argv[0], argv[0]);
        return 2;
    }
    if (is_overlap)
        batch = 128;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--width"))
            width = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--iterations"))
            iterations = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--net"))
            mlp_net = !strcmp(argv[i + 1], "mlp");
    }
    if (is_overlap)
        return rounds < 1 || iterations < 1 || batch < 1 ? 2 : overlap(rounds, iterations, batch, mlp_net);
    if (rounds < 1 || steps < 1 || batch < 1 || width < 1)
        return 2;
    return mlp(rounds, steps, batch, width);
}

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

int main(int argc, char **argv)
{
    int rounds = 5, steps = 10;
    int64_t batch = 256, width = 1024;
    if (argc < 2 || strcmp(argv[1], "mlp")) {
        fprintf(stderr, "usage: mpirun -np N %s mlp [--rounds R] [--steps S] [--batch B] "
                "[--width W]\n", argv[0]);
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch"))
            batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--width"))
            width = atoll(argv[i + 1]);
    }
    if (rounds < 1 || steps < 1 || batch < 1 || width < 1)
        return 2;
    return mlp(rounds, steps, batch, width);
}

/*
 * workloads_autodiff.c - the cost of the eager path itself: a tiny MLP
 * 4-8-1 at batch 1, forward and backward through dla_feval/dla_gradient.
 * Every op is a 1-32 element kernel, so the time is dispatch, recording
 * and the backward sweep: issue 3 asks for at most 10 us per step (PyTorch
 * eager: 77 us in ../shared/peers/dispatch_overhead.py on this machine).
 */
#include "bench/workload.h"

#include <stdlib.h>

typedef struct mlp {
    dla_tensor *w1, *b1, *w2, *b2, *x, *t;
} mlp;

static void mlp_teardown(void *state)
{
    mlp *m = state;
    if (!m)
        return;
    dla_tensor *all[] = {m->w1, m->b1, m->w2, m->b2, m->x, m->t};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dla_tensor_release(all[i]);
    free(m);
}

static dla_status mlp_setup(const bench_workload *w, void **state)
{
    mlp *m = calloc(1, sizeof *m);
    if (!m)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = m;
    dla_rng_seed(5);
    m->w1 = dla_randn(DLA_F32, "", DLA_DIMS(8, 4));
    m->b1 = dla_zeros(DLA_F32, "", DLA_DIMS(8, 1));
    m->w2 = dla_randn(DLA_F32, "", DLA_DIMS(1, 8));
    m->b2 = dla_zeros(DLA_F32, "", DLA_DIMS(1, 1));
    m->x = dla_rand(DLA_F32, "", DLA_DIMS(4, 1));
    m->t = dla_ones(DLA_F32, "", DLA_DIMS(1, 1));
    return dla_tensor_status(m->t);
}

/* loss = (W2 relu(W1 x + b1) + b2 - t)^2 and its gradients. */
static dla_status mlp_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *h = dla_relu(dla_add(dla_mtimes(in[0], in[4]), in[1]));
    dla_tensor *y = dla_add(dla_mtimes(in[2], h), in[3]);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[5])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 4, in, out + 1);
}

static dla_status mlp_run(void *state)
{
    mlp *m = state;
    dla_tensor *out[5];
    dla_scope_begin();
    dla_status st = dla_feval(mlp_loss, NULL, 6,
                              (dla_tensor *[]){m->w1, m->b1, m->w2, m->b2, m->x, m->t}, 5, out);
    dla_scope_end();
    return st;
}

const bench_workload bench_autodiff_workloads[] = {
    /* work: the MLP's multiply-adds forward and backward, about 3 x 2 x 44 */
    {.name = "mlp_4_8_1_step", .unit = BENCH_FLOPS, .work = 264, .setup = mlp_setup,
     .run = mlp_run, .teardown = mlp_teardown, .label = "tiny MLP 4-8-1 fwd+bwd"},
    {0},
};

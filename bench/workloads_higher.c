/*
 * workloads_higher.c - higher derivatives: the physics-informed network of
 * examples/pinn.c on the line, its loss (u'' by dla_laplacian: two
 * recorded derivative sweeps with respect to the input, then the gradient
 * of the loss with respect to the parameters) at 64 collocation points,
 * replayed (dla_accelerate) and
 * eagerly (dla_feval). bench/torch_pinn.py times the same step in PyTorch
 * (torch.autograd.grad with create_graph=True).
 */
#include "bench/workload.h"
#include "examples/pinn_model.h"

#include <math.h>
#include <stdlib.h>

typedef struct pinn {
    dla_tensor *in[PINN_NPARAMS + 3];
    dla_accel *af; /* NULL: eager */
} pinn;

static void pinn_teardown(void *state)
{
    pinn *p = state;
    if (!p)
        return;
    for (int i = 0; i < PINN_NPARAMS + 3; i++)
        dla_tensor_release(p->in[i]);
    bench_print_plan(p->af);
    dla_accel_free(p->af);
    free(p);
}

static dla_status setup(void **state, int accelerated)
{
    pinn *p = calloc(1, sizeof *p);
    if (!p)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = p;
    dla_rng_seed(7);
    const int64_t h = PINN_HIDDEN, n = PINN_POINTS;
    p->in[0] = dla_randn(DLA_F32, "", DLA_DIMS(h, 1));
    p->in[1] = dla_zeros(DLA_F32, "", DLA_DIMS(h, 1));
    p->in[2] = dla_randn(DLA_F32, "", DLA_DIMS(h, h));
    p->in[3] = dla_zeros(DLA_F32, "", DLA_DIMS(h, 1));
    p->in[4] = dla_randn(DLA_F32, "", DLA_DIMS(1, h));
    p->in[5] = dla_zeros(DLA_F32, "", DLA_DIMS(1, 1));
    p->in[PINN_NPARAMS] = dla_rand(DLA_F32, "CB", DLA_DIMS(1, n));
    p->in[PINN_NPARAMS + 1] = dla_randn(DLA_F32, "CB", DLA_DIMS(1, n));
    p->in[PINN_NPARAMS + 2] = dla_rand(DLA_F32, "CB", DLA_DIMS(1, 2));
    if (accelerated && !(p->af = dla_accelerate(pinn_loss, NULL)))
        return dla_last_status();
    return dla_tensor_status(p->in[PINN_NPARAMS + 2]);
}

static dla_status pinn_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 1);
}

static dla_status pinn_eager_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 0);
}

static dla_status pinn_run(void *state)
{
    pinn *p = state;
    dla_tensor *out[1 + PINN_NPARAMS];
    dla_scope_begin();
    dla_status st = p->af ? dla_accel_feval(p->af, NULL, PINN_NPARAMS + 3, p->in,
                                            1 + PINN_NPARAMS, out)
                          : dla_feval(pinn_loss, NULL, PINN_NPARAMS + 3, p->in, 1 + PINN_NPARAMS,
                                      out);
    dla_scope_end();
    return st;
}

/* work: a nominal count of the MLP's multiply-adds (20 + 400 + 20 per
 * point) times 2 for the forward at 66 points, and about 4 times that
 * again for the two derivative sweeps and the gradient; a rate to compare
 * devices by, the time is the figure. */
#define PINN_WORK (2.0 * 440 * 66 * 5)

const bench_workload bench_higher_workloads[] = {
    {.name = "pinn_replay", .unit = BENCH_FLOPS, .work = PINN_WORK, .setup = pinn_setup,
     .run = pinn_run, .teardown = pinn_teardown,
     .label = "physics-informed MLP 1-20-20-1, u'' and the loss's gradient (64 points), "
              "replayed",
     .reference = "pinn_eager"},
    {0},
};

const bench_workload bench_higher_reference_workloads[] = {
    {.name = "pinn_eager", .unit = BENCH_FLOPS, .work = PINN_WORK, .setup = pinn_eager_setup,
     .run = pinn_run, .teardown = pinn_teardown, .label = "eager"},
    {0},
};

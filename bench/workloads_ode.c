/*
 * workloads_ode.c - the loss and gradients of examples/neural_ode's
 * iteration: a tanh MLP (2-20-2) as the right-hand side, dla_ode45 from
 * 200 states over 40 times of its grid, an L1 loss against fixed targets
 * and the gradients of the four learnables; replayed (dla_accelerate),
 * eagerly (gradient_mode "direct") and by the adjoint method.
 * bench/torch_neural_ode.py times a whole iteration with torchdiffeq.
 */
#include "bench/workload.h"

#include <dlaccel/nnops.h>
#include <stdio.h>
#include <stdlib.h>

enum { ODE_B = 200, ODE_T = 40, ODE_H = 20, ODE_NP = 4 };

typedef struct ode_bench {
    dla_tensor *in[ODE_NP + 2]; /* W1 b1 W2 b2, x0, targets */
    dla_accel *af;              /* NULL: eager */
    dla_ode_options o;
    dla_ode_stats stats;        /* of the setup's solve */
} ode_bench;

static dla_tensor *mlp(double t, dla_tensor *x, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)ctx;
    return dla_fullyconnect(dla_tanh(dla_fullyconnect(x, p[0], p[1])), p[2], p[3]);
}

static dla_status ode_step(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const ode_bench *b = ctx;
    double ts[ODE_T + 1];
    for (int k = 0; k <= ODE_T; k++)
        ts[k] = 15.0 * k / 1999; /* the example's sample times */
    dla_tensor *x = dla_ode45(mlp, NULL, ODE_T + 1, ts, in[ODE_NP], ODE_NP, in, &b->o);
    out[0] = dla_l1loss(x, in[ODE_NP + 1],
                        &(dla_regression_loss_options){.normalization_factor = "all-elements"});
    return dla_gradient(out[0], ODE_NP, in, out + 1);
}

static void ode_teardown(void *state)
{
    ode_bench *b = state;
    if (!b)
        return;
    for (int i = 0; i < ODE_NP + 2; i++)
        dla_tensor_release(b->in[i]);
    bench_print_plan(b->af);
    dla_accel_free(b->af);
    free(b);
}

static dla_status run(ode_bench *b)
{
    dla_tensor *out[1 + ODE_NP];
    dla_scope_begin();
    dla_status st = b->af ? dla_accel_feval(b->af, b, ODE_NP + 2, b->in, 1 + ODE_NP, out)
                          : dla_feval(ode_step, b, ODE_NP + 2, b->in, 1 + ODE_NP, out);
    dla_scope_end();
    return st;
}

static dla_status setup(void **state, int accelerated, const char *mode)
{
    ode_bench *b = calloc(1, sizeof *b);
    if (!b)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = b;
    dla_rng_seed(21);
    /* Made in a scope, so the scaled weights' sources go with it. */
    dla_scope_begin();
    b->in[0] = dla_keep(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(ODE_H, 2)), 0.5, 0));
    b->in[1] = dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(ODE_H, 1)));
    b->in[2] = dla_keep(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(2, ODE_H)), 0.3, 0));
    b->in[3] = dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(2, 1)));
    b->in[4] = dla_keep(dla_randn(DLA_F32, "CB", DLA_DIMS(2, ODE_B)));
    b->in[5] = dla_keep(dla_randn(DLA_F32, "CBT", DLA_DIMS(2, ODE_B, ODE_T)));
    dla_scope_end();
    for (int i = 0; i < ODE_NP + 2; i++)
        if (dla_tensor_status(b->in[i]) != DLA_OK)
            return dla_tensor_status(b->in[i]);
    b->o = (dla_ode_options){.gradient_mode = mode, .stats = &b->stats};
    dla_status st = run(b); /* the solver's counts, for the note */
    b->o.stats = NULL;
    if (st == DLA_OK && accelerated && !(b->af = dla_accelerate(ode_step, NULL)))
        st = dla_last_status();
    return st;
}

static dla_status ode_replay_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 1, "direct");
}

static dla_status ode_eager_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 0, "direct");
}

static dla_status ode_adjoint_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 0, "adjoint");
}

static dla_status ode_run(void *state) { return run(state); }

static void ode_note(void *state, double median_ms, char *buf, size_t size)
{
    (void)median_ms;
    const ode_bench *b = state;
    snprintf(buf, size, "the forward solve: %lld steps, %lld rejected, %lld evaluations",
             (long long)b->stats.steps, (long long)b->stats.failed,
             (long long)b->stats.evaluations);
}

/* Per evaluation of the right-hand side, two products of 200 states
 * (2 x 20 and 20 x 2: 160 multiply-adds each), forward; the backward about
 * twice that; 73 evaluations (the example's typical solve). */
#define ODE_WORK (3.0 * 73 * 2 * 2.0 * 2 * ODE_H * ODE_B)

const bench_workload bench_ode_workloads[] = {
    {.name = "ode_replay", .unit = BENCH_FLOPS, .work = ODE_WORK, .setup = ode_replay_setup,
     .run = ode_run, .teardown = ode_teardown, .note = ode_note,
     .label = "neural ODE (2-20-2 tanh MLP, 200 states, 40 times) loss and gradients, replayed",
     .reference = "ode_eager"},
    {.name = "ode_adjoint", .unit = BENCH_FLOPS, .work = ODE_WORK, .setup = ode_adjoint_setup,
     .run = ode_run, .teardown = ode_teardown, .note = ode_note,
     .label = "the same, gradients by the adjoint method", .reference = "ode_eager"},
    {0},
};

const bench_workload bench_ode_reference_workloads[] = {
    {.name = "ode_eager", .unit = BENCH_FLOPS, .work = ODE_WORK, .setup = ode_eager_setup,
     .run = ode_run, .teardown = ode_teardown, .label = "eager"},
    {0},
};

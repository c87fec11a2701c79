/*
 * workloads_attention.c - a self-attention block's training step: x of
 * 64 channels x 32 sequences x 64 steps ("CBT", single), queries, keys and
 * values projected by dla_fullyconnect, dla_attention over 4 heads, the
 * output projection, and the gradients of sum(y.^2) with respect to the
 * eight learnables; replayed (dla_accelerate) and eagerly (dla_feval).
 * bench/torch_attention.py times torch.nn.MultiheadAttention's same step.
 */
#include "bench/workload.h"

#include <dlaccel/nnops.h>
#include <stdlib.h>

enum { ATT_C = 64, ATT_B = 32, ATT_T = 64, ATT_HEADS = 4, ATT_NP = 8 };

typedef struct attention_bench {
    dla_tensor *in[1 + ATT_NP]; /* x, then Wq bq Wk bk Wv bv Wo bo */
    dla_accel *af;              /* NULL: eager */
} attention_bench;

static dla_status attention_step(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[0], *const *p = in + 1;
    dla_tensor *y = dla_attention(dla_fullyconnect(x, p[0], p[1]), dla_fullyconnect(x, p[2], p[3]),
                                  dla_fullyconnect(x, p[4], p[5]), ATT_HEADS, NULL, NULL);
    out[0] = dla_sum(dla_square(dla_fullyconnect(y, p[6], p[7])), 0, NULL);
    return dla_gradient(out[0], ATT_NP, p, out + 1);
}

static void attention_teardown(void *state)
{
    attention_bench *a = state;
    if (!a)
        return;
    for (int i = 0; i < 1 + ATT_NP; i++)
        dla_tensor_release(a->in[i]);
    bench_print_plan(a->af);
    dla_accel_free(a->af);
    free(a);
}

static dla_status setup(void **state, int accelerated)
{
    attention_bench *a = calloc(1, sizeof *a);
    if (!a)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = a;
    dla_rng_seed(9);
    /* Made in a scope, so the scaled weights' sources go with it. */
    dla_scope_begin();
    a->in[0] = dla_keep(dla_randn(DLA_F32, "CBT", DLA_DIMS(ATT_C, ATT_B, ATT_T)));
    for (int k = 0; k < 4; k++) {
        a->in[1 + 2 * k] =
            dla_keep(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(ATT_C, ATT_C)), 0.125, 0));
        a->in[2 + 2 * k] = dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(ATT_C, 1)));
    }
    dla_scope_end();
    for (int i = 0; i < 1 + ATT_NP; i++)
        if (dla_tensor_status(a->in[i]) != DLA_OK)
            return dla_tensor_status(a->in[i]);
    if (accelerated && !(a->af = dla_accelerate(attention_step, NULL)))
        return dla_last_status();
    return DLA_OK;
}

static dla_status attention_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 1);
}

static dla_status attention_eager_setup(const bench_workload *w, void **state)
{
    (void)w;
    return setup(state, 0);
}

static dla_status attention_run(void *state)
{
    attention_bench *a = state;
    dla_tensor *out[1 + ATT_NP];
    dla_scope_begin();
    dla_status st = a->af ? dla_accel_feval(a->af, NULL, 1 + ATT_NP, a->in, 1 + ATT_NP, out)
                          : dla_feval(attention_step, NULL, 1 + ATT_NP, a->in, 1 + ATT_NP, out);
    dla_scope_end();
    return st;
}

/* Forward: four projections (2 C^2 per step each) and the two page
 * products (2 T dk a step, per head, each); the backward about twice
 * that. */
#define ATT_WORK                                                                                   \
    (3.0 * ((double)ATT_B * ATT_T *                                                                \
            (4 * 2.0 * ATT_C * ATT_C + 2 * 2.0 * ATT_T * (ATT_C / ATT_HEADS) * ATT_HEADS)))

const bench_workload bench_attention_workloads[] = {
    {.name = "attention_replay", .unit = BENCH_FLOPS, .work = ATT_WORK,
     .setup = attention_setup, .run = attention_run, .teardown = attention_teardown,
     .label = "self-attention block (64 channels, 4 heads, 32 x 64 steps) and its gradients, "
              "replayed",
     .reference = "attention_eager"},
    {0},
};

const bench_workload bench_attention_reference_workloads[] = {
    {.name = "attention_eager", .unit = BENCH_FLOPS, .work = ATT_WORK,
     .setup = attention_eager_setup, .run = attention_run, .teardown = attention_teardown,
     .label = "eager"},
    {0},
};

/*
 * workloads_nn.c - the nn ops of the digit CNN at batch 128, single
 * precision, forward and backward through dla_feval as a model uses them:
 *   batchnorm training on 24x24x20x128 "SSCB" (each of the CNN's three),
 *   max pooling 2x2 stride 2 on the same data,
 *   fullyconnect 11520 -> 10 with softmax.
 *
 * The first two are memory-bound: their rate is held against memcpy's (no
 * target; the ratio says how far the op is from streaming its data at
 * copy speed). The work counted is the traffic a fused kernel could not
 * avoid, so the rate is the fraction of bandwidth well spent:
 *   batchnorm: forward reads x twice (statistics, then y = x .* a + b) and
 *              writes y; backward reads dy and x twice (two per-channel
 *              sums, then dx) and writes dx: 8 tensors of 5.9 MB;
 *   maxpool:   x read and dx written (2 tensors), y, its int32 index, dy
 *              and the index again (4 quarter-size ones): 12 bytes/element.
 */
#include "bench/workload.h"

#include <stdlib.h>

#define NX (24 * 24 * 20 * 128)

typedef struct nn_bench {
    int which; /* 0 batchnorm, 1 maxpool, 2 fullyconnect + softmax */
    dla_tensor *x, *a, *b, *mean, *var;
} nn_bench;

static void nn_teardown(void *state)
{
    nn_bench *s = state;
    if (!s)
        return;
    dla_tensor *all[] = {s->x, s->a, s->b, s->mean, s->var};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dla_tensor_release(all[i]);
    free(s);
}

static dla_status nn_setup(const bench_workload *w, void **state)
{
    nn_bench *s = calloc(1, sizeof *s);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = s;
    s->which = (int)w->size;
    dla_rng_seed(3);
    s->x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(24, 24, 20, 128));
    if (s->which == 2) {
        s->a = dla_randn(DLA_F32, "", DLA_DIMS(10, 24 * 24 * 20));
        s->b = dla_zeros(DLA_F32, "", DLA_DIMS(10, 1));
    } else {
        s->a = dla_zeros(DLA_F32, "", DLA_DIMS(20, 1));
        s->b = dla_ones(DLA_F32, "", DLA_DIMS(20, 1));
    }
    s->mean = dla_zeros(DLA_F32, "", DLA_DIMS(20, 1));
    s->var = dla_ones(DLA_F32, "", DLA_DIMS(20, 1));
    dla_tensor *all[] = {s->x, s->a, s->b, s->mean, s->var};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (dla_tensor_status(all[i]) != DLA_OK)
            return dla_tensor_status(all[i]);
    return DLA_OK;
}

/* in: x, a, b. The loss weighs every output element (sum), so the
 * backward sees a dense dy, as in a network. */
static dla_status nn_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    nn_bench *s = ctx;
    dla_tensor *y, *m, *v;
    switch (s->which) {
    case 0: dla_batchnorm_train(in[0], in[1], in[2], s->mean, s->var, NULL, &y, &m, &v); break;
    case 1: y = dla_maxpool(in[0], DLA_DIMS(2), &(dla_pool_options){.stride = {2, 2}}); break;
    default: y = dla_softmax(dla_fullyconnect(in[0], in[1], in[2])); break;
    }
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], nin, in, out + 1);
}

static dla_status nn_run(void *state)
{
    nn_bench *s = state;
    dla_tensor *out[4];
    dla_scope_begin();
    int nin = s->which == 1 ? 1 : 3; /* pooling has no parameters */
    dla_status st = dla_feval(nn_loss, s, nin, (dla_tensor *[]){s->x, s->a, s->b}, 1 + nin, out);
    /* wait for the device, so the time is the work's */
    if (st == DLA_OK)
        st = dla_device_sync(dla_tensor_device(out[1]));
    dla_scope_end();
    return st;
}

const bench_workload bench_nn_workloads[] = {
    {.name = "batchnorm_step", .unit = BENCH_BYTES, .work = 8.0 * 4 * NX, .size = 0,
     .setup = nn_setup, .run = nn_run, .teardown = nn_teardown,
     .label = "batchnorm 24x24x20x128 fwd+bwd", .reference = "memcpy64MiB"},
    {.name = "maxpool_step", .unit = BENCH_BYTES, .work = 12.0 * NX, .size = 1,
     .setup = nn_setup, .run = nn_run, .teardown = nn_teardown,
     .label = "maxpool 2x2/2 24x24x20x128 fwd+bwd", .reference = "memcpy64MiB"},
    /* three 10 x 11520 x 128 products: y, dx and dW */
    {.name = "fc_softmax_step", .unit = BENCH_FLOPS, .work = 3.0 * 2 * 10 * 11520 * 128,
     .size = 2, .setup = nn_setup, .run = nn_run, .teardown = nn_teardown,
     .label = "fullyconnect 11520->10 + softmax fwd+bwd"},
    {0},
};

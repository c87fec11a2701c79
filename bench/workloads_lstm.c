/*
 * workloads_lstm.c - a recurrent network's train step, as
 * examples/forecast.c trains it: sequenceInput 3 -> lstm 128 -> fc 3 on 64
 * sequences of 99 steps ("CBT", single), the mean squared error against
 * targets, the gradients through an accelerated model loss taking the
 * network (dla_net_accel_kind), and an Adam update; and the network's
 * inference on the same batch. bench/torch_lstm.py times torch.nn.LSTM's
 * same step.
 */
#include "bench/workload.h"

#include <stdio.h>
#include <stdlib.h>

enum { LSTM_C = 3, LSTM_H = 128, LSTM_B = 64, LSTM_T = 99 };

typedef struct lstm_bench {
    dla_net *net;
    dla_accel *loss;
    dla_tensor *x, *t;
    dla_tensor **avg, **sq, **out;
    int nl, ns, iteration;
} lstm_bench;

static void lstm_teardown(void *state)
{
    lstm_bench *r = state;
    if (!r)
        return;
    if (r->avg)
        dla_optim_free(r->nl, r->avg);
    if (r->sq)
        dla_optim_free(r->nl, r->sq);
    free(r->avg);
    free(r->sq);
    free(r->out);
    bench_print_plan(r->loss);
    if (r->net)
        bench_print_plan(dla_net_accelerator(r->net));
    dla_accel_free(r->loss);
    dla_net_free(r->net);
    dla_tensor_release(r->x);
    dla_tensor_release(r->t);
    free(r);
}

/* [loss, gradients, state] = modelLoss(net, X, T). */
static dla_status lstm_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_mse(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

static dla_status lstm_setup(const bench_workload *w, void **state)
{
    (void)w;
    lstm_bench *r = calloc(1, sizeof *r);
    if (!r)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = r;
    dla_rng_seed(0);
    dla_layer *layers[] = {
        dla_sequence_input_layer(LSTM_C, NULL),
        dla_lstm_layer(LSTM_H, NULL),
        dla_fc_layer(LSTM_C, NULL),
    };
    if (!(r->net = dla_net_create(3, layers)))
        return dla_last_status();
    r->nl = dla_net_learnable_count(r->net);
    r->ns = dla_net_state_count(r->net);
    r->avg = calloc((size_t)r->nl, sizeof *r->avg);
    r->sq = calloc((size_t)r->nl, sizeof *r->sq);
    r->out = calloc((size_t)(1 + r->nl + r->ns), sizeof *r->out);
    r->loss = dla_accelerate(lstm_loss, &(dla_accel_options){.name = "lstmLoss",
                                                             .ctx_kind = dla_net_accel_kind()});
    if (!r->avg || !r->sq || !r->out || !r->loss)
        return DLA_ERR_OUT_OF_MEMORY;
    r->x = dla_randn(DLA_F32, "CBT", DLA_DIMS(LSTM_C, LSTM_B, LSTM_T));
    r->t = dla_randn(DLA_F32, "CBT", DLA_DIMS(LSTM_C, LSTM_B, LSTM_T));
    if (dla_tensor_status(r->x) != DLA_OK)
        return dla_tensor_status(r->x);
    return dla_tensor_status(r->t);
}

static dla_status lstm_train_run(void *state)
{
    lstm_bench *r = state;
    dla_scope_begin();
    dla_tensor *in[2] = {r->x, r->t};
    dla_status st = dla_accel_feval(r->loss, r->net, 2, in, 1 + r->nl + r->ns, r->out);
    /* Each sequence starts from the initial state, as trainnet's
     * mini-batches do: the state forward returns is not set. */
    if (st == DLA_OK)
        st = dla_adamupdate(r->nl, dla_table_values(dla_net_learnables(r->net)), r->out + 1, r->avg,
                            r->sq, ++r->iteration, 0.001, 0.9, 0.999, 1e-8);
    if (st == DLA_OK)
        (void)dla_tensor_item(r->out[0], 0); /* the step is done when its loss is read */
    dla_scope_end();
    return st;
}

static dla_status lstm_infer_run(void *state)
{
    lstm_bench *r = state;
    dla_scope_begin();
    dla_tensor *y;
    dla_status st = dla_net_predict(r->net, 1, &r->x, 1, &y, NULL);
    if (st == DLA_OK)
        dla_device_sync(dla_tensor_device(y));
    dla_scope_end();
    return st;
}

static void lstm_note(void *state, double median_ms, char *buf, size_t size)
{
    lstm_bench *r = state;
    (void)median_ms;
    dla_accel *predict = dla_net_accelerator(r->net);
    snprintf(buf, size, "HitRate %.0f%% (model loss), %.0f%% (predict)",
             dla_accel_hit_rate(r->loss), predict ? dla_accel_hit_rate(predict) : 0.0);
}

/* Per step and sequence, the gates' two products: 2 x 4H x (C + H); the
 * output layer 2 x C x H. A train step counts the forward and twice it. */
#define LSTM_FWD                                                                                   \
    ((double)LSTM_B * LSTM_T * (2.0 * 4 * LSTM_H * (LSTM_C + LSTM_H) + 2.0 * LSTM_C * LSTM_H))

const bench_workload bench_lstm_workloads[] = {
    {.name = "lstm_train_step", .unit = BENCH_FLOPS, .work = 3 * LSTM_FWD, .batch = 0,
     .setup = lstm_setup, .run = lstm_train_run, .teardown = lstm_teardown,
     .label = "LSTM train step (3 -> 128 -> fc 3, 64 sequences of 99 steps, Adam)",
     .note = lstm_note},
    {.name = "lstm_inference", .unit = BENCH_FLOPS, .work = LSTM_FWD, .batch = 0,
     .setup = lstm_setup, .run = lstm_infer_run, .teardown = lstm_teardown,
     .label = "LSTM inference (3 -> 128 -> fc 3, 64 sequences of 99 steps)", .note = lstm_note},
    {0},
};

/*
 * workloads_netstep.c - a whole network's train step as the examples run
 * it (an accelerated model loss taking the network, cross-entropy, the
 * gradients and the batch norm state, SGDM 0.01 / 0.9) and its inference
 * (dla_net_predict), single, for two networks:
 *
 * - the MobileNet-style network of `cnn_fmnist --mobile`
 *   (examples/mobile_net.h: depthwise separable convolutions, ReLU6, a
 *   squeeze-and-excitation gate, spatial dropout) on a batch of 128
 *   28x28x1 images; bench/torch_mobile.py times it in PyTorch;
 * - the 3-D network of examples/volumes (examples/volume_net.h: three 3-D
 *   convolutions, batch normalization, 3-D pooling) on a batch of 32
 *   16x16x16x1 volumes; bench/torch_volume.py times it in PyTorch;
 * - the transformer encoder of examples/tokens (examples/token_net.h: word
 *   and position embeddings, 4-head self-attention, layer normalization,
 *   a GELU feed-forward block, global max pooling, the attention and the
 *   pooling masked to the data steps) on a batch of 32 token
 *   sequences of 24 steps; bench/torch_tokens.py times it in PyTorch.
 */
#include "bench/workload.h"
#include "examples/mobile_net.h"
#include "examples/token_net.h"
#include "examples/volume_net.h"

#include <stdio.h>
#include <stdlib.h>

enum { MOBILE_CLASSES = 10, MOBILE_B = 128, VOLUME_SIDE = 16, VOLUME_CLASSES = 3, VOLUME_B = 32 };
/* examples/tokens' network and mini-batch: tokens 1..50, 24 steps, 32
 * channels, 4 heads, 2 classes, 32 sequences. */
enum { TOKEN_VOCAB = 50, TOKEN_T = 24, TOKEN_D = 32, TOKEN_HEADS = 4, TOKEN_CLASSES = 2,
       TOKEN_B = 32 };

/* What differs between the networks. */
typedef struct net_config {
    dla_net *(*make)(void);
    const char *format;  /* the input's, with its batch dim last */
    int ndims;           /* of the input, batch included */
    int64_t dims[5];     /* one observation's (the batch's entry is set) */
    int64_t classes, batch;
    /* The input of a batch of n; NULL: uniform random numbers. */
    dla_tensor *(*make_x)(int64_t n);
} net_config;

static dla_net *make_mobile(void) { return mobile_net_make(MOBILE_CLASSES); }
static dla_net *make_volume(void) { return volume_net_make(VOLUME_SIDE, VOLUME_CLASSES); }
static dla_net *make_token(void)
{
    return token_net_make(TOKEN_VOCAB, TOKEN_T, TOKEN_D, TOKEN_HEADS, TOKEN_CLASSES);
}

/* 1 x n x TOKEN_T "CBT" tokens: sequence b holds 8 + (b % 17) tokens
 * drawn from 1..TOKEN_VOCAB, then padding 0 (the shape of the example's
 * padded mini-batches; bench/torch_tokens.py makes the same). */
static dla_tensor *make_tokens(int64_t n)
{
    float *x = calloc((size_t)(n * TOKEN_T), sizeof *x);
    if (!x)
        return dla_tensor_from_host(NULL, DLA_F32, "CBT", DLA_DIMS(1, n, TOKEN_T));
    for (int64_t b = 0; b < n; b++)
        for (int64_t t = 0; t < 8 + b % 17; t++)
            x[b + n * t] = (float)(1 + (b * 7 + t * 13) % TOKEN_VOCAB);
    dla_tensor *r = dla_tensor_from_host(x, DLA_F32, "CBT", DLA_DIMS(1, n, TOKEN_T));
    free(x);
    return r;
}

static const net_config mobile_config = {make_mobile, "SSCB", 4, {28, 28, 1, 0},
                                         MOBILE_CLASSES, MOBILE_B, NULL};
static const net_config volume_config = {make_volume, "SSSCB", 5,
                                         {VOLUME_SIDE, VOLUME_SIDE, VOLUME_SIDE, 1, 0},
                                         VOLUME_CLASSES, VOLUME_B, NULL};
static const net_config token_config = {make_token, "CBT", 3, {1, 0, TOKEN_T},
                                        TOKEN_CLASSES, TOKEN_B, make_tokens};

typedef struct mobile_bench {
    dla_net *net;
    dla_accel *loss;
    dla_tensor *x, *t;
    dla_tensor **vel, **out;
    int nl, ns;
} mobile_bench;

static void mobile_teardown(void *state)
{
    mobile_bench *r = state;
    if (!r)
        return;
    if (r->vel)
        dla_optim_free(r->nl, r->vel);
    free(r->vel);
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
static dla_status mobile_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    int nl = dla_net_learnable_count(net);
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, out + 1 + nl, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

static dla_status net_setup(const bench_workload *w, void **state, const net_config *cfg)
{
    const int64_t batch = w->size ? w->size : cfg->batch;
    mobile_bench *r = calloc(1, sizeof *r);
    if (!r)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = r;
    dla_rng_seed(0);
    if (!(r->net = cfg->make()))
        return dla_last_status();
    r->nl = dla_net_learnable_count(r->net);
    r->ns = dla_net_state_count(r->net);
    r->vel = calloc((size_t)r->nl, sizeof *r->vel);
    r->out = calloc((size_t)(1 + r->nl + r->ns), sizeof *r->out);
    r->loss = dla_accelerate(mobile_loss, &(dla_accel_options){.name = "modelLoss",
                                                               .ctx_kind = dla_net_accel_kind()});
    if (!r->vel || !r->out || !r->loss)
        return DLA_ERR_OUT_OF_MEMORY;
    int64_t dims[5];
    for (int i = 0; i < cfg->ndims; i++)
        dims[i] = cfg->dims[i];
    dims[cfg->ndims - 1] = batch;
    r->x = cfg->make_x ? cfg->make_x(batch) : dla_rand(DLA_F32, cfg->format, cfg->ndims, dims);
    /* One-hot targets: class b % classes for observation b. */
    float *t = calloc((size_t)(cfg->classes * batch), sizeof *t);
    if (!t)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int64_t b = 0; b < batch; b++)
        t[b * cfg->classes + b % cfg->classes] = 1;
    r->t = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(cfg->classes, batch));
    free(t);
    if (dla_tensor_status(r->x) != DLA_OK)
        return dla_tensor_status(r->x);
    return dla_tensor_status(r->t);
}

static dla_status mobile_setup(const bench_workload *w, void **state)
{
    return net_setup(w, state, &mobile_config);
}

static dla_status volume_setup(const bench_workload *w, void **state)
{
    return net_setup(w, state, &volume_config);
}

static dla_status token_setup(const bench_workload *w, void **state)
{
    return net_setup(w, state, &token_config);
}

static dla_status mobile_train_run(void *state)
{
    mobile_bench *r = state;
    dla_scope_begin();
    dla_tensor *in[2] = {r->x, r->t};
    dla_status st = dla_accel_feval(r->loss, r->net, 2, in, 1 + r->nl + r->ns, r->out);
    if (st == DLA_OK)
        st = dla_net_set_state(r->net, r->ns, r->out + 1 + r->nl);
    if (st == DLA_OK)
        st = dla_sgdmupdate(r->nl, dla_table_values(dla_net_learnables(r->net)), r->out + 1, r->vel,
                            0.01, 0.9);
    if (st == DLA_OK)
        (void)dla_tensor_item(r->out[0], 0); /* the step is done when its loss is read */
    dla_scope_end();
    return st;
}

static dla_status mobile_infer_run(void *state)
{
    mobile_bench *r = state;
    dla_scope_begin();
    dla_tensor *y;
    dla_status st = dla_net_predict(r->net, 1, &r->x, 1, &y, NULL);
    if (st == DLA_OK)
        dla_device_sync(dla_tensor_device(y));
    dla_scope_end();
    return st;
}

static void mobile_note(void *state, double median_ms, char *buf, size_t size)
{
    mobile_bench *r = state;
    (void)median_ms;
    dla_accel *predict = dla_net_accelerator(r->net);
    snprintf(buf, size, "HitRate %.0f%% (model loss), %.0f%% (predict)",
             dla_accel_hit_rate(r->loss), predict ? dla_accel_hit_rate(predict) : 0.0);
}

/* Multiply-adds of one image's forward pass, x 2: conv1 28*28*16*9, dw2
 * 14*14*16*9, pw2 14*14*32*16, dw3 7*7*32*9, pw3 7*7*64*32, the gate
 * 64*16*2, fc 3136*10. A train step counts the forward and twice it. */
#define MOBILE_FWD                                                                                 \
    (2.0 * MOBILE_B *                                                                              \
     (28 * 28 * 16 * 9 + 14 * 14 * 16 * 9 + 14 * 14 * 32 * 16 + 7 * 7 * 32 * 9 +                  \
      7 * 7 * 64 * 32 + 64 * 16 * 2 + 3136 * 10))

/* Multiply-adds of one volume's forward pass, x 2: conv1 16^3*8*27,
 * conv2 8^3*16*27*8, conv3 4^3*32*27*16, fc 32*3. */
#define VOLUME_FWD                                                                                 \
    (2.0 * VOLUME_B *                                                                              \
     (16 * 16 * 16 * 8 * 27 + 8 * 8 * 8 * 16 * 27 * 8 + 4 * 4 * 4 * 32 * 27 * 16 + 32 * 3))

/* Multiply-adds of one sequence's forward pass, x 2: per step the four
 * projections 4*D*D, the scores and the weighted sum 2*T*D, the
 * feed-forward block 2*D*2D; then fc D*classes. */
#define TOKEN_FWD                                                                                  \
    (2.0 * TOKEN_B *                                                                               \
     (TOKEN_T * (4 * TOKEN_D * TOKEN_D + 2 * TOKEN_T * TOKEN_D + 4 * TOKEN_D * TOKEN_D) +          \
      TOKEN_D * TOKEN_CLASSES))

const bench_workload bench_mobile_workloads[] = {
    {.name = "mobile_train_step", .unit = BENCH_FLOPS, .work = 3 * MOBILE_FWD, .batch = 0,
     .setup = mobile_setup, .run = mobile_train_run, .teardown = mobile_teardown,
     .label = "MobileNet-style train step (cnn_fmnist --mobile, batch 128, SGDM)",
     .note = mobile_note},
    {.name = "mobile_inference", .unit = BENCH_FLOPS, .work = MOBILE_FWD, .batch = 0,
     .setup = mobile_setup, .run = mobile_infer_run, .teardown = mobile_teardown,
     .label = "MobileNet-style inference (cnn_fmnist --mobile, batch 128)", .note = mobile_note},
    {.name = "volume_train_step", .unit = BENCH_FLOPS, .work = 3 * VOLUME_FWD, .batch = 0,
     .setup = volume_setup, .run = mobile_train_run, .teardown = mobile_teardown,
     .label = "3-D CNN train step (examples/volumes, 32 volumes of 16^3, SGDM)",
     .note = mobile_note},
    {.name = "volume_inference", .unit = BENCH_FLOPS, .work = VOLUME_FWD, .batch = 0,
     .setup = volume_setup, .run = mobile_infer_run, .teardown = mobile_teardown,
     .label = "3-D CNN inference (examples/volumes, 32 volumes of 16^3)", .note = mobile_note},
    {.name = "token_train_step", .unit = BENCH_FLOPS, .work = 3 * TOKEN_FWD, .batch = 0,
     .setup = token_setup, .run = mobile_train_run, .teardown = mobile_teardown,
     .label = "transformer encoder train step (examples/tokens, 32 sequences of 24, SGDM)",
     .note = mobile_note},
    {.name = "token_inference", .unit = BENCH_FLOPS, .work = TOKEN_FWD, .batch = 0,
     .setup = token_setup, .run = mobile_infer_run, .teardown = mobile_teardown,
     .label = "transformer encoder inference (examples/tokens, 32 sequences of 24)",
     .note = mobile_note},
    {0},
};

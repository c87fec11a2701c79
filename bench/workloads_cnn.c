/*
 * workloads_cnn.c - the digit CNN of ../shared/peers/cnn_fmnist.py, as a
 * user writes it with dlaccel: one SGDM train step (forward, cross-entropy,
 * gradients of all 14 learnables, momentum update) and one inference batch.
 *
 *   imageInput 28x28x1 -> conv 5x5x20 -> BN -> relu
 *                      -> conv 3x3x20 pad 1 -> BN -> relu (twice)
 *                      -> fc 10 -> softmax -> cross-entropy
 *
 * Batch 128 (w->size: another batch), single precision. Issue 3 asks for a train step of at most
 * 0.5x PyTorch eager's time measured in the same run (bench/compare_pytorch.sh
 * runs both); the peers' figure on this machine is 75 ms.
 */
#include "bench/workload.h"

#include <stdlib.h>

#define NLEARN 14

typedef struct cnn {
    dla_tensor *p[NLEARN];   /* w1 b1 o1 s1 w2 b2 o2 s2 w3 b3 o3 s3 wf bf */
    dla_tensor *vel[NLEARN]; /* SGDM velocities */
    dla_tensor *mean[3], *var[3];
    dla_tensor *x, *t;
} cnn;

static void cnn_teardown(void *state)
{
    cnn *c = state;
    if (!c)
        return;
    for (int i = 0; i < NLEARN; i++) {
        dla_tensor_release(c->p[i]);
        dla_tensor_release(c->vel[i]);
    }
    for (int i = 0; i < 3; i++) {
        dla_tensor_release(c->mean[i]);
        dla_tensor_release(c->var[i]);
    }
    dla_tensor_release(c->x);
    dla_tensor_release(c->t);
    free(c);
}

/* Glorot-like scale: randn * s. */
static dla_tensor *param(double s, int nd, const int64_t *dims)
{
    dla_tensor *r = dla_randn(DLA_F32, "", nd, dims);
    dla_tensor *p = dla_affine(r, s, 0.0);
    dla_tensor_release(r);
    return p;
}

static dla_status cnn_setup(const bench_workload *w, void **state)
{
    cnn *c = calloc(1, sizeof *c);
    if (!c)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = c;
    dla_rng_seed(0);
    const int64_t f = 20;
    const int64_t BATCH = w->size > 0 ? w->size : 128; /* w->size: the batch */
    c->p[0] = param(0.2, DLA_DIMS(5, 5, 1, f));
    c->p[4] = param(0.075, DLA_DIMS(3, 3, f, f));
    c->p[8] = param(0.075, DLA_DIMS(3, 3, f, f));
    c->p[12] = param(0.01, DLA_DIMS(10, 24 * 24 * f));
    for (int l = 0; l < 3; l++) {
        c->p[4 * l + 1] = dla_zeros(DLA_F32, "", DLA_DIMS(f, 1)); /* conv bias */
        c->p[4 * l + 2] = dla_zeros(DLA_F32, "", DLA_DIMS(f, 1)); /* BN offset */
        c->p[4 * l + 3] = dla_ones(DLA_F32, "", DLA_DIMS(f, 1));  /* BN scale */
        c->mean[l] = dla_zeros(DLA_F32, "", DLA_DIMS(f, 1));
        c->var[l] = dla_ones(DLA_F32, "", DLA_DIMS(f, 1));
    }
    c->p[13] = dla_zeros(DLA_F32, "", DLA_DIMS(10, 1));
    for (int i = 0; i < NLEARN; i++) {
        int64_t dims[DLA_MAX_DIMS];
        int nd = dla_tensor_dims(c->p[i], dims);
        c->vel[i] = dla_zeros(DLA_F32, "", nd, dims);
    }
    c->x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, BATCH));
    /* One-hot targets, class b % 10 for observation b. */
    float *t = calloc(10 * (size_t)BATCH, sizeof *t);
    if (!t)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int b = 0; b < BATCH; b++)
        t[b * 10 + b % 10] = 1.0f;
    c->t = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(10, BATCH));
    free(t);
    for (int i = 0; i < NLEARN; i++)
        if (dla_tensor_status(c->p[i]) != DLA_OK)
            return dla_tensor_status(c->p[i]);
    return dla_tensor_status(c->t);
}

/* conv -> BN (training) -> relu; the new running statistics go to stats. */
static dla_tensor *block(cnn *c, int l, dla_tensor *x, dla_tensor *const *p, dla_tensor **stats,
                         const dla_conv_options *o)
{
    dla_tensor *y = dla_conv(x, p[4 * l], p[4 * l + 1], o), *z;
    dla_batchnorm_train(y, p[4 * l + 2], p[4 * l + 3], c->mean[l], c->var[l], NULL, &z,
                        &stats[2 * l], &stats[2 * l + 1]);
    return dla_relu(z);
}

/* in: the 14 learnables; out: loss, 14 gradients, 6 running statistics. */
static dla_status cnn_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    cnn *c = ctx;
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_tensor *stats[6];
    dla_tensor *h = block(c, 0, c->x, in, stats, NULL);
    h = block(c, 1, h, in, stats, &pad1);
    h = block(c, 2, h, in, stats, &pad1);
    dla_tensor *y = dla_softmax(dla_fullyconnect(h, in[12], in[13]));
    dla_tensor *loss = dla_crossentropy(y, c->t, NULL);
    out[0] = loss;
    for (int i = 0; i < 6; i++)
        out[1 + NLEARN + i] = stats[i];
    return dla_gradient(loss, NLEARN, in, out + 1);
}

static dla_status cnn_train_run(void *state)
{
    cnn *c = state;
    dla_tensor *out[1 + NLEARN + 6];
    dla_scope_begin();
    dla_status st = dla_feval(cnn_loss, c, NLEARN, c->p, 1 + NLEARN + 6, out);
    if (st == DLA_OK) {
        /* SGDM (MATLAB sgdmupdate): v = 0.9 v - 0.01 g; p = p + v. */
        for (int i = 0; i < NLEARN; i++) {
            dla_tensor *v = dla_sub(dla_affine(c->vel[i], 0.9, 0.0), dla_affine(out[1 + i], 0.01, 0.0));
            dla_tensor *p = dla_add(c->p[i], v);
            if ((st = dla_tensor_status(p)) != DLA_OK)
                break;
            dla_tensor_release(c->vel[i]);
            dla_tensor_release(c->p[i]);
            c->vel[i] = dla_keep(v);
            c->p[i] = dla_keep(p);
        }
        for (int l = 0; st == DLA_OK && l < 3; l++) {
            dla_tensor_release(c->mean[l]);
            dla_tensor_release(c->var[l]);
            c->mean[l] = dla_keep(out[1 + NLEARN + 2 * l]);
            c->var[l] = dla_keep(out[1 + NLEARN + 2 * l + 1]);
        }
    }
    dla_scope_end();
    return st;
}

static dla_status cnn_infer_run(void *state)
{
    cnn *c = state;
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_scope_begin();
    dla_tensor *h = c->x;
    for (int l = 0; l < 3; l++) {
        dla_tensor *y = dla_conv(h, c->p[4 * l], c->p[4 * l + 1], l ? &pad1 : NULL);
        h = dla_relu(dla_batchnorm(y, c->p[4 * l + 2], c->p[4 * l + 3], c->mean[l], c->var[l], NULL));
    }
    dla_tensor *y = dla_softmax(dla_fullyconnect(h, c->p[12], c->p[13]));
    dla_status st = dla_tensor_status(y);
    dla_device_sync(dla_tensor_device(y));
    dla_scope_end();
    return st;
}

/* FLOPs: conv and fc multiply-adds x 2 (the peers count 1.165 GFLOP forward
 * and 3.421 per train step: forward plus twice that for the backward). */
const bench_workload bench_cnn_workloads[] = {
    {.name = "cnn_train_step", .unit = BENCH_FLOPS, .work = 3.421e9, .batch = 128,
     .setup = cnn_setup, .run = cnn_train_run, .teardown = cnn_teardown,
     .label = "digit CNN train step (batch 128)"},
    {.name = "cnn_inference", .unit = BENCH_FLOPS, .work = 1.165e9, .batch = 128,
     .setup = cnn_setup, .run = cnn_infer_run, .teardown = cnn_teardown,
     .label = "digit CNN inference (batch 128)"},
    {.name = "cnn_inference_b1024", .unit = BENCH_FLOPS, .work = 8 * 1.165e9, .size = 1024,
     .batch = 1024, .setup = cnn_setup, .run = cnn_infer_run, .teardown = cnn_teardown,
     .label = "digit CNN inference (batch 1024)"},
    {0},
};

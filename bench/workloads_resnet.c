/*
 * workloads_resnet.c - ResNet-20 (../shared/peers/resnet20.py) built as a
 * user builds it, with dla_net layers and connections, and timed as one
 * SGDM train step (an accelerated model loss taking the network, as the main
 * job's) and one inference batch (dla_net_predict, accelerated by default).
 *
 *   imageInput 32x32x3 (no normalization) -> conv 3x3x16 -> BN -> relu
 *   3 stages x 3 basic blocks (16, 32, 64 channels; stride 2 at a stage's
 *   first block, with a 1x1 stride-2 convolution + BN as the shortcut):
 *       conv 3x3 -> BN -> relu -> conv 3x3 -> BN -> (+ shortcut) -> relu
 *   globalAveragePooling -> fc 10 -> softmax -> cross-entropy
 *
 * The peer's convolutions have no bias; dla_conv2d_layer always has one
 * (zeros here): 16 to 64 adds per output pixel, well under 0.1% of the work.
 * SGD momentum 0.9, learning rate 0.1, as the peer. Batch 128 by default;
 * the _b16 and _b64 entries give the per-sample cost at smaller batches.
 */
#include "bench/workload.h"

#include <stdio.h>
#include <stdlib.h>

/* Multiply-adds per image of the forward pass: the 19 3x3 convolutions,
 * the two 1x1 projections and the fully connected layer. */
#define RESNET20_MACS_PER_IMAGE 40813184.0

typedef struct resnet {
    dla_net *net;
    dla_accel *loss;
    dla_tensor *x, *t;
    dla_tensor **velocity, **out;
    int nl, ns;
    int64_t elements; /* learnable elements */
} resnet;

static void resnet_teardown(void *state)
{
    resnet *r = state;
    if (!r)
        return;
    if (r->velocity)
        dla_optim_free(r->nl, r->velocity);
    free(r->velocity);
    free(r->out);
    bench_print_plan(r->loss);
    if (r->net)
        bench_print_plan(dla_net_accelerator(r->net)); /* inference's */
    dla_accel_free(r->loss);
    dla_net_free(r->net);
    dla_tensor_release(r->x);
    dla_tensor_release(r->t);
    free(r);
}

/* Appends conv -> BN (-> relu) named prefix_conv, prefix_bn, prefix_relu to
 * layers[*n]. */
static void conv_bn(dla_layer **layers, int *n, const char *prefix, int64_t k, int64_t filters,
                    int64_t stride, int relu)
{
    char name[64];
    int64_t pad = k / 2;
    snprintf(name, sizeof name, "%s_conv", prefix);
    layers[(*n)++] = dla_conv2d_layer(k, k, filters, &(dla_conv_layer_options){
                                                          .name = name,
                                                          .stride = {stride, stride},
                                                          .padding = {pad, pad, pad, pad},
                                                          .weights_initializer = "he"});
    snprintf(name, sizeof name, "%s_bn", prefix);
    layers[(*n)++] = dla_batchnorm_layer(&(dla_batchnorm_layer_options){.name = name});
    if (relu) {
        snprintf(name, sizeof name, "%s_relu", prefix);
        layers[(*n)++] = dla_relu_layer(&(dla_layer_options){.name = name});
    }
}

/* The network: the main path is one sequence; each block's shortcut is a
 * connection (identity) or a small added sequence (projection) into the
 * block's addition layer. */
static dla_net *resnet20(void)
{
    dla_layer *layers[80];
    int n = 0;
    layers[n++] = dla_image_input_layer(32, 32, 3, &(dla_image_input_options){
                                                       .name = "input", .normalization = "none"});
    conv_bn(layers, &n, "stem", 3, 16, 1, 1);
    static const int64_t widths[3] = {16, 32, 64};
    char prefix[32], add[40], relu[40];
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 3; b++) {
            int64_t stride = s > 0 && b == 0 ? 2 : 1;
            snprintf(prefix, sizeof prefix, "s%db%d_a", s + 1, b + 1);
            conv_bn(layers, &n, prefix, 3, widths[s], stride, 1);
            snprintf(prefix, sizeof prefix, "s%db%d_b", s + 1, b + 1);
            conv_bn(layers, &n, prefix, 3, widths[s], 1, 0);
            snprintf(add, sizeof add, "s%db%d_add", s + 1, b + 1);
            layers[n++] = dla_addition_layer(2, &(dla_layer_options){.name = add});
            snprintf(relu, sizeof relu, "s%db%d_relu", s + 1, b + 1);
            layers[n++] = dla_relu_layer(&(dla_layer_options){.name = relu});
        }
    layers[n++] = dla_global_avgpool2d_layer(&(dla_layer_options){.name = "gap"});
    layers[n++] = dla_fc_layer(10, &(dla_fc_layer_options){.name = "fc"});
    layers[n++] = dla_softmax_layer(&(dla_layer_options){.name = "softmax"});
    dla_net *net = dla_net_create(n, layers);
    if (!net)
        return NULL;

    /* Shortcuts: from the previous block's relu (the stem's for the first)
     * to this block's add/in2, through a projection where the size or the
     * width changes. */
    char from[40] = "stem_relu", to[48];
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < 3; b++) {
            snprintf(to, sizeof to, "s%db%d_add/in2", s + 1, b + 1);
            dla_status st;
            if (s > 0 && b == 0) {
                dla_layer *proj[2];
                int np = 0;
                snprintf(prefix, sizeof prefix, "s%d_proj", s + 1);
                conv_bn(proj, &np, prefix, 1, widths[s], 2, 0);
                char pconv[48], pbn[48];
                snprintf(pconv, sizeof pconv, "%s_conv", prefix);
                snprintf(pbn, sizeof pbn, "%s_bn", prefix);
                st = dla_net_add_layers(net, np, proj);
                if (st == DLA_OK)
                    st = dla_net_connect(net, from, pconv);
                if (st == DLA_OK)
                    st = dla_net_connect(net, pbn, to);
            } else {
                st = dla_net_connect(net, from, to);
            }
            if (st != DLA_OK) {
                dla_net_free(net);
                return NULL;
            }
            snprintf(from, sizeof from, "s%db%d_relu", s + 1, b + 1);
        }
    if (dla_net_init(net, 0, NULL) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

/* [loss, gradients, state] = modelLoss(net, X, T), accelerated with the
 * network as its argument (dla_net_accel_kind). */
static dla_status resnet_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
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

static dla_status resnet_setup(const bench_workload *w, void **state)
{
    resnet *r = calloc(1, sizeof *r);
    if (!r)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = r;
    int64_t batch = w->size;
    dla_rng_seed(0);
    if (!(r->net = resnet20()))
        return dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_STATE;
    r->nl = dla_net_learnable_count(r->net);
    r->ns = dla_net_state_count(r->net);
    dla_table *learnables = dla_net_learnables(r->net);
    for (int i = 0; i < r->nl; i++)
        r->elements += dla_tensor_numel(dla_table_value(learnables, i));
    r->velocity = calloc((size_t)r->nl, sizeof *r->velocity);
    r->out = calloc((size_t)(1 + r->nl + r->ns), sizeof *r->out);
    r->loss = dla_accelerate(resnet_loss, &(dla_accel_options){
                                              .name = "resnet20Loss",
                                              .ctx_kind = dla_net_accel_kind()});
    if (!r->velocity || !r->out || !r->loss)
        return DLA_ERR_OUT_OF_MEMORY;
    r->x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(32, 32, 3, batch));
    float *t = calloc((size_t)(10 * batch), sizeof *t);
    if (!t)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int64_t b = 0; b < batch; b++)
        t[b * 10 + (b * 7) % 10] = 1.0f;
    r->t = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(10, batch));
    free(t);
    if (dla_tensor_status(r->x) != DLA_OK)
        return dla_tensor_status(r->x);
    return dla_tensor_status(r->t);
}

static dla_status resnet_train_run(void *state)
{
    resnet *r = state;
    dla_scope_begin();
    dla_tensor *in[2] = {r->x, r->t};
    dla_status st = dla_accel_feval(r->loss, r->net, 2, in, 1 + r->nl + r->ns, r->out);
    if (st == DLA_OK)
        st = dla_net_set_state(r->net, r->ns, r->out + 1 + r->nl);
    if (st == DLA_OK)
        st = dla_sgdmupdate(r->nl, dla_table_values(dla_net_learnables(r->net)), r->out + 1,
                            r->velocity, 0.1, 0.9);
    if (st == DLA_OK)
        (void)dla_tensor_item(r->out[0], 0); /* the step is done when its loss is read */
    dla_scope_end();
    return st;
}

static dla_status resnet_infer_run(void *state)
{
    resnet *r = state;
    dla_scope_begin();
    dla_tensor *y;
    dla_status st = dla_net_predict(r->net, 1, &r->x, 1, &y, NULL);
    if (st == DLA_OK)
        dla_device_sync(dla_tensor_device(y));
    dla_scope_end();
    return st;
}

static void resnet_note(void *state, double median_ms, char *buf, size_t size)
{
    resnet *r = state;
    (void)median_ms;
    /* PyTorch's ResNet-20 has 272,474 parameters; the 21 convolutions'
     * biases add 784. */
    dla_accel *predict = dla_net_accelerator(r->net);
    snprintf(buf, size,
             "%lld learnable elements (272474 + 784 conv biases) in %d learnables; HitRate "
             "%.0f%% (model loss), %.0f%% (predict)",
             (long long)r->elements, r->nl, dla_accel_hit_rate(r->loss),
             predict ? dla_accel_hit_rate(predict) : 0.0);
}

/* FLOPs: 2 per multiply-add; a train step counts the forward pass and twice
 * it for the backward (as the digit CNN's figures do). */
#define FWD(b) (2.0 * RESNET20_MACS_PER_IMAGE * (b))
#define TRAIN(b) (3.0 * FWD(b))
#define ENTRY(suffix, b)                                                                       \
    {.name = "resnet20_train_step" suffix, .unit = BENCH_FLOPS, .work = TRAIN(b), .size = b,  \
     .batch = b,                                                                               \
     .setup = resnet_setup, .run = resnet_train_run, .teardown = resnet_teardown,             \
     .label = "ResNet-20 train step (batch " #b ")", .note = resnet_note},                    \
    {.name = "resnet20_inference" suffix, .unit = BENCH_FLOPS, .work = FWD(b), .size = b,     \
     .batch = b,                                                                               \
     .setup = resnet_setup, .run = resnet_infer_run, .teardown = resnet_teardown,             \
     .label = "ResNet-20 inference (batch " #b ")", .note = resnet_note}

const bench_workload bench_resnet_workloads[] = {
    ENTRY("", 128),
    ENTRY("_b64", 64),
    ENTRY("_b16", 16),
    {0},
};

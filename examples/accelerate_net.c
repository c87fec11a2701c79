/*
 * accelerate_net.c - MATLAB's accelerated modelLoss(net, X, T), ported
 * word for word: the network is an argument of the accelerated function,
 * its learnables are traced inputs, and the optimizer updates the network
 * with no bookkeeping.
 *
 *     accfun = dlaccelerate(@modelLoss);
 *     for iteration = 1:200
 *         [X, T] = nextBatch();
 *         [loss, gradients] = dlfeval(accfun, net, X, T);
 *         [net, vel] = sgdmupdate(net, gradients, vel, 0.1, 0.9);
 *     end
 *
 *     function [loss, gradients] = modelLoss(net, X, T)
 *         Y = forward(net, X);
 *         loss = crossentropy(Y, T);
 *         gradients = dlgradient(loss, net.Learnables);
 *     end
 *
 * In C the network is the function's ctx, and dla_net_accel_kind() tells
 * the accelerated function so (dla_accel_options.ctx_kind): each call
 * passes the network's current learnables as inputs of the trace, and the
 * cache is keyed on its architecture. The network is fc 16 - relu - fc 4 -
 * softmax on 2-D points of 4 classes. After training, one batch is run
 * both accelerated and eagerly (the same numbers), then the same loss is
 * accelerated without the ctx kind: the trace would bake the weights, and
 * dla_gradient refuses, saying what to do.
 */
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>

#include "example_args.h"

#define CLASSES 4
#define BATCH 128

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, NULL, NULL); /* Y = forward(net, X) */
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);      /* loss = crossentropy(Y, T) */
    return dla_net_gradient(net, out[0], out + 1);  /* dlgradient(loss, net.Learnables) */
}

/* A batch of points around the corners (+-2, +-2), one class per corner,
 * from a small host generator so every run sees the same data. */
static unsigned long seed = 2024;
static double uniform(void)
{
    seed = seed * 6364136223846793005ul + 1442695040888963407ul;
    return (double)(seed >> 11) / 9007199254740992.0;
}

static void make_batch(dla_tensor **x, dla_tensor **t)
{
    float xs[2 * BATCH], ts[CLASSES * BATCH] = {0};
    for (int j = 0; j < BATCH; j++) {
        int c = (int)(uniform() * CLASSES);
        double r = sqrt(-2.0 * log(1.0 - uniform())), a = 6.283185307179586 * uniform();
        xs[2 * j] = (float)((c & 1 ? 2.0 : -2.0) + r * cos(a));
        xs[2 * j + 1] = (float)((c & 2 ? 2.0 : -2.0) + r * sin(a));
        ts[CLASSES * j + c] = 1.0f;
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, BATCH));
    *t = dla_tensor_from_host(ts, DLA_F32, "CB", DLA_DIMS(CLASSES, BATCH));
}

static int fail(const char *what)
{
    fprintf(stderr, "accelerate_net: %s: %s\n", what, dla_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const int rc = example_plain_args(argc, argv, "", 0);
    if (rc >= 0)
        return rc;
    dla_rng_seed(1);
    dla_layer *layers[] = {dla_fc_layer(16, NULL), dla_relu_layer(NULL), dla_fc_layer(CLASSES, NULL),
                           dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, layers);
    dla_scope_begin();
    dla_tensor *example = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, BATCH));
    if (!net || dla_net_init(net, 1, &example) != DLA_OK)
        return fail("network");
    dla_scope_end();
    int nl = dla_net_learnable_count(net);
    dla_tensor *vel[8] = {0}, *out[1 + 8];

    /* accfun = dlaccelerate(@modelLoss), with the network as its ctx */
    dla_accel *accfun = dla_accelerate(model_loss, &(dla_accel_options){
                                                       .name = "modelLoss", .ctx_kind = dla_net_accel_kind()});
    if (!accfun || nl > 8)
        return fail("dla_accelerate");
    double loss = 0.0;
    for (int iteration = 1; iteration <= 200; iteration++) {
        dla_scope_begin();
        dla_tensor *x, *t;
        make_batch(&x, &t);
        /* [loss, gradients] = dlfeval(accfun, net, X, T) */
        if (dla_accel_feval(accfun, net, 2, (dla_tensor *[]){x, t}, 1 + nl, out) != DLA_OK)
            return fail("dla_accel_feval");
        loss = dla_tensor_item(out[0], 0);
        /* [net, vel] = sgdmupdate(net, gradients, vel, 0.1, 0.9) */
        if (dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, vel, 0.1, 0.9) != DLA_OK)
            return fail("dla_sgdmupdate");
        dla_scope_end();
        if (iteration % 50 == 0)
            printf("iteration %3d: loss %.4f\n", iteration, loss);
    }
    char buf[512];
    dla_accel_describe(accfun, buf, sizeof buf);
    printf("\naccfun =\n\n%s\n", buf);
    printf("HitRate %.1f%%, Occupancy %g: every update was replayed with the new learnables.\n",
           dla_accel_hit_rate(accfun), dla_accel_occupancy_percent(accfun));

    /* One more batch, accelerated and eagerly: the same loss. */
    dla_scope_begin();
    dla_tensor *x, *t, *ref[1 + 8];
    make_batch(&x, &t);
    if (dla_accel_feval(accfun, net, 2, (dla_tensor *[]){x, t}, 1 + nl, out) != DLA_OK ||
        dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 1 + nl, ref) != DLA_OK)
        return fail("last batch");
    double fast = dla_tensor_item(out[0], 0), slow = dla_tensor_item(ref[0], 0);
    printf("last batch: accelerated loss %.6f, eager loss %.6f\n", fast, slow);

    /* The trap: the same function without the ctx kind would bake the
     * weights into its trace; the recording call is refused. */
    dla_accel *baked = dla_accelerate(model_loss, &(dla_accel_options){.name = "modelLossBaked"});
    dla_status st = dla_accel_feval(baked, net, 2, (dla_tensor *[]){x, t}, 1 + nl, out);
    printf("\nwithout the ctx kind: %s\n  %s\n", dla_status_str(st), dla_last_error());
    dla_accel_free(baked);
    dla_scope_end();

    dla_accel_free(accfun);
    dla_optim_free(nl, vel);
    dla_net_free(net);
    return loss < 0.5 && fabs(fast - slow) <= 1e-5 && st == DLA_ERR_INVALID_ARGUMENT ? 0 : 1;
}

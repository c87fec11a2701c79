/*
 * accelerate_loss.c - a model loss with gradients, accelerated with
 * dla_accelerate in a training loop, as MATLAB's dlaccelerate page does with
 * its modelLoss and the weighted cross-entropy of its imbalanced-classes
 * example:
 *
 *     accfun = dlaccelerate(@modelLoss);
 *     [loss, gradients] = dlfeval(accfun, net, X, T);
 *
 * The network is fullyconnect-relu-fullyconnect-softmax on 2-D points of 4
 * classes, trained with plain SGD. The first call records a trace, every
 * later one of the same shapes replays it; a smaller last batch is a miss
 * with its reason. Then the trace is saved to a file (argument 1, default
 * accelerate_loss.dlt), loaded back and printed, as `dlaccel trace FILE`
 * prints it.
 *
 * Here the learnables are the function's tensor inputs. With a dla_net,
 * pass the network itself as ctx with a ctx kind, as the page's
 * modelLoss(net, X, T) does: examples/accelerate_net.c.
 */
#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <stdio.h>

#include "example_args.h"

#define CLASSES 4
#define HIDDEN 16
#define BATCH 128

/* function [loss, gradients] = modelLoss(W1, b1, W2, b2, X, T, classWeights)
 *     Y = softmax(fullyconnect(relu(fullyconnect(X, W1, b1)), W2, b2));
 *     loss = crossentropy(Y, T, classWeights, WeightsFormat="C",
 *                         NormalizationFactor="all-elements") * numClasses;
 *     gradients = dlgradient(loss, {W1, b1, W2, b2}); */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *h = dla_relu(dla_fullyconnect(in[4], in[0], in[1]));
    dla_tensor *y = dla_softmax(dla_fullyconnect(h, in[2], in[3]));
    dla_crossentropy_options o = {.weights = in[6], .weights_format = "C",
                                  .normalization_factor = "all-elements"};
    out[0] = dla_affine(dla_crossentropy(y, in[5], &o), CLASSES, 0.0);
    return dla_gradient(out[0], 4, in, out + 1);
}

/* A batch of n points around the corners (+-2, +-2), one class per corner,
 * from a small host generator so every run sees the same data. */
static unsigned long seed = 12345;
static double uniform(void)
{
    seed = seed * 6364136223846793005ul + 1442695040888963407ul;
    return (double)(seed >> 11) / 9007199254740992.0;
}

static void make_batch(int n, dla_tensor **x, dla_tensor **t)
{
    float xs[2 * BATCH], ts[CLASSES * BATCH] = {0};
    for (int j = 0; j < n; j++) {
        int c = (int)(uniform() * CLASSES);
        double r = sqrt(-2.0 * log(1.0 - uniform())), a = 6.283185307179586 * uniform();
        xs[2 * j] = (float)((c & 1 ? 2.0 : -2.0) + r * cos(a));
        xs[2 * j + 1] = (float)((c & 2 ? 2.0 : -2.0) + r * sin(a));
        ts[CLASSES * j + c] = 1.0f;
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, n));
    *t = dla_tensor_from_host(ts, DLA_F32, "CB", DLA_DIMS(CLASSES, n));
}

int main(int argc, char **argv)
{
    const int rc = example_plain_args(argc, argv, "[TRACE_FILE]", 1);
    if (rc >= 0)
        return rc;
    const char *path = argc > 1 ? argv[1] : "accelerate_loss.dlt";
    dla_rng_seed(1);
    /* Learnables as owned references (kept out of a scope that releases
     * the random draws they are made from); the class weights
     * rand(numClasses,1). */
    dla_scope_begin();
    dla_tensor *p[4] = {
        dla_keep(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(HIDDEN, 2)), 0.5, 0.0)),
        dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1))),
        dla_keep(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(CLASSES, HIDDEN)), 0.25, 0.0)),
        dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(CLASSES, 1))),
    };
    dla_tensor *class_weights =
        dla_keep(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(CLASSES, 1)), 1.0, 0.1));
    dla_scope_end();
    if (dla_tensor_status(class_weights) != DLA_OK) {
        fprintf(stderr, "accelerate_loss: %s\n", dla_last_error());
        return 1;
    }

    dla_accel *accfun = dla_accelerate(model_loss, &(dla_accel_options){.name = "modelLoss"});
    const double lr = 0.5;
    double loss = 0.0;
    for (int iteration = 1; iteration <= 200; iteration++) {
        dla_scope_begin();
        dla_tensor *x, *t, *out[5];
        make_batch(BATCH, &x, &t);
        dla_tensor *in[7] = {p[0], p[1], p[2], p[3], x, t, class_weights};
        /* [loss, gradients] = dlfeval(accfun, ...) */
        if (dla_accel_feval(accfun, NULL, 7, in, 5, out) != DLA_OK) {
            fprintf(stderr, "accelerate_loss: %s\n", dla_last_error());
            return 1;
        }
        loss = dla_tensor_item(out[0], 0);
        for (int i = 0; i < 4; i++) {
            dla_tensor *next = dla_keep(dla_sub(p[i], dla_affine(out[1 + i], lr, 0.0)));
            dla_tensor_release(p[i]);
            p[i] = next;
        }
        dla_scope_end();
        if (iteration % 50 == 0)
            printf("iteration %3d: loss %.4f\n", iteration, loss);
    }
    char buf[512];
    dla_accel_describe(accfun, buf, sizeof buf);
    printf("\naccfun =\n\n%s\n", buf);
    printf("HitRate %.1f%%, Occupancy %g: one trace served every call after the first.\n",
           dla_accel_hit_rate(accfun), dla_accel_occupancy_percent(accfun));

    /* Save the trace before a smaller batch adds a second one. */
    dla_trace *trace = dla_accel_trace(accfun, 0);
    if (dla_trace_save(trace, path) != DLA_OK) {
        fprintf(stderr, "accelerate_loss: %s\n", dla_last_error());
        return 1;
    }
    dla_trace_release(trace);

    dla_scope_begin();
    dla_tensor *x, *t, *out[5];
    make_batch(BATCH / 2, &x, &t);
    dla_tensor *in[7] = {p[0], p[1], p[2], p[3], x, t, class_weights};
    dla_accel_feval(accfun, NULL, 7, in, 5, out);
    printf("a last batch of %d: miss (%s); Occupancy %g\n", BATCH / 2, dla_accel_last_miss(accfun),
           dla_accel_occupancy_percent(accfun));
    dla_scope_end();

    /* The file, as `dlaccel trace` shows it. */
    dla_trace *loaded;
    if (dla_trace_load(path, &loaded) != DLA_OK) {
        fprintf(stderr, "accelerate_loss: %s\n", dla_last_error());
        return 1;
    }
    printf("\nsaved to %s; loaded back:\n", path);
    dla_trace_print(loaded, stdout);
    dla_trace_release(loaded);

    dla_accel_free(accfun);
    for (int i = 0; i < 4; i++)
        dla_tensor_release(p[i]);
    dla_tensor_release(class_weights);
    return loss < 1.0 ? 0 : 1;
}

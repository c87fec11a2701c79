/*
 * lstm_function.c - a recurrent model function trained in a custom loop,
 * as MATLAB's model-function examples do without a dlnetwork:
 *
 *     function [loss, gradients] = modelLoss(parameters, X, T)
 *         [Y, ~, ~] = lstm(X, H0, C0, parameters.lstm.InputWeights, ...
 *                          parameters.lstm.RecurrentWeights, parameters.lstm.Bias);
 *         Y = Y(:, :, end);
 *         Y = fullyconnect(Y, parameters.fc.Weights, parameters.fc.Bias);
 *         loss = mse(Y, T);
 *         gradients = dlgradient(loss, parameters);
 *     end
 *     accfun = dlaccelerate(@modelLoss);
 *     [loss, gradients] = dlfeval(accfun, parameters, X, T);
 *     [parameters, avgG, avgSqG] = adamupdate(parameters, gradients, avgG, avgSqG, iteration);
 *
 * The task: read a noisy sine wave of 24 steps and say its frequency (a
 * sequence-to-one regression). The loss is accelerated with dla_accelerate:
 * the first call records its trace, every later one replays it. Prints the
 * loss as it goes, then the RMSE of the frequency on new waves against the
 * RMSE of always answering the mean frequency. Argument 1: iterations
 * (default 300).
 */
#include "example_args.h"

#include <dlaccel.h>
#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>
#include <dlaccel/optim.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 24
#define HIDDEN 16
#define BATCH 64
#define NPARAMS 5

/* in: InputWeights, RecurrentWeights, Bias, fc Weights, fc Bias, X, T. */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *h0 = dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1)), *y;
    dla_status st = dla_lstm(in[5], h0, h0, in[0], in[1], in[2], NULL, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    /* Y(:, :, end), as "CB" (the targets' format) */
    dla_tensor *last = dla_reshape(dla_slice(y, 3, STEPS - 1, 1, STEPS), "CB", DLA_DIMS(HIDDEN, BATCH));
    dla_tensor *score = dla_fullyconnect(last, in[3], in[4]);
    out[0] = dla_mse(score, in[6], NULL);
    return dla_gradient(out[0], NPARAMS, in, out + 1);
}

static unsigned long seed = 2024;
static double uniform(void)
{
    seed = seed * 6364136223846793005ul + 1442695040888963407ul;
    return (double)(seed >> 11) / 9007199254740992.0;
}

/* n waves of frequencies in [0.5, 2] cycles over the sequence, random
 * phases, noise of 0.1; x "CBT" 1 x n x STEPS, t "CB" 1 x n. */
static void make_batch(int n, dla_tensor **x, dla_tensor **t)
{
    float xs[BATCH * STEPS], ts[BATCH];
    for (int j = 0; j < n; j++) {
        const double f = 0.5 + 1.5 * uniform(), phase = 6.283185307 * uniform();
        ts[j] = (float)f;
        for (int s = 0; s < STEPS; s++)
            xs[j + n * s] = (float)(sin(6.283185307 * f * s / STEPS + phase) +
                                    0.1 * (2 * uniform() - 1));
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CBT", DLA_DIMS(1, n, STEPS));
    *t = dla_tensor_from_host(ts, DLA_F32, "CB", DLA_DIMS(1, n));
}

/* RMSE of the model's frequencies on a new batch; *base: of the mean. */
static double evaluate(dla_tensor *const *params, double *base)
{
    dla_scope_begin();
    dla_tensor *x, *t, *y;
    make_batch(BATCH, &x, &t);
    dla_tensor *h0 = dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1));
    double rmse = NAN;
    if (dla_lstm(x, h0, h0, params[0], params[1], params[2], NULL, &y, NULL, NULL) == DLA_OK) {
        dla_tensor *s = dla_fullyconnect(
            dla_reshape(dla_slice(y, 3, STEPS - 1, 1, STEPS), "CB", DLA_DIMS(HIDDEN, BATCH)),
            params[3], params[4]);
        float hs[BATCH], ht[BATCH];
        if (dla_tensor_to_host(s, hs, sizeof hs) == DLA_OK &&
            dla_tensor_to_host(t, ht, sizeof ht) == DLA_OK) {
            double e = 0, b = 0;
            for (int j = 0; j < BATCH; j++) {
                e += (hs[j] - ht[j]) * (double)(hs[j] - ht[j]);
                b += (1.25 - ht[j]) * (1.25 - ht[j]); /* the mean of U(0.5, 2) */
            }
            rmse = sqrt(e / BATCH);
            *base = sqrt(b / BATCH);
        }
    }
    dla_scope_end();
    return rmse;
}

int main(int argc, char **argv)
{
    int iterations = 300;
    const int rc = example_iterations_arg(argc, argv, "lstm_function", &iterations);
    if (rc >= 0)
        return rc;
    dla_rng_seed(7);
    /* Glorot-like uniform weights, the LSTM's forget-gate bias at 1. */
    dla_tensor *params[NPARAMS], *avg[NPARAMS] = {NULL}, *avg_sq[NPARAMS] = {NULL};
    dla_scope_begin(); /* the draws and products on the way; the parameters kept */
    params[0] = dla_keep(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(4 * HIDDEN, 1)), 0.6, -0.3));
    params[1] = dla_keep(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(4 * HIDDEN, HIDDEN)), 0.5, -0.25));
    float b[4 * HIDDEN] = {0};
    for (int i = HIDDEN; i < 2 * HIDDEN; i++)
        b[i] = 1;
    params[2] = dla_keep(dla_tensor_from_host(b, DLA_F32, "", DLA_DIMS(4 * HIDDEN, 1)));
    params[3] = dla_keep(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(1, HIDDEN)), 0.8, -0.4));
    params[4] = dla_keep(dla_zeros(DLA_F32, "", DLA_DIMS(1, 1)));
    dla_scope_end();
    for (int i = 0; i < NPARAMS; i++)
        if (dla_tensor_status(params[i]) != DLA_OK) {
            fprintf(stderr, "lstm_function: %s\n", dla_tensor_error(params[i]));
            return 1;
        }
    double base = 0, before = evaluate(params, &base);
    printf("lstm_function: an LSTM of %d hidden units reads %d steps of a noisy sine wave and "
           "says its frequency\n", HIDDEN, STEPS);
    printf("before training: RMSE %.3f (always the mean: %.3f)\n", before, base);
    fflush(stdout);

    dla_accel *accfun = dla_accelerate(model_loss, &(dla_accel_options){.name = "modelLoss"});
    for (int it = 1; it <= iterations; it++) {
        dla_scope_begin();
        dla_tensor *in[NPARAMS + 2], *out[NPARAMS + 1];
        for (int i = 0; i < NPARAMS; i++)
            in[i] = params[i];
        make_batch(BATCH, &in[NPARAMS], &in[NPARAMS + 1]);
        dla_status st = dla_accel_feval(accfun, NULL, NPARAMS + 2, in, NPARAMS + 1, out);
        if (st == DLA_OK)
            st = dla_adamupdate(NPARAMS, params, out + 1, avg, avg_sq, it, 0.01, 0.9, 0.999, 1e-8);
        if (st != DLA_OK) {
            fprintf(stderr, "lstm_function: iteration %d: %s\n", it, dla_last_error());
            dla_scope_end();
            return 1;
        }
        if (it % 50 == 0 || it == 1)
            printf("iteration %d: loss %.4f\n", it, dla_tensor_item(out[0], 0));
        dla_scope_end();
    }
    double after = evaluate(params, &base);
    printf("after %d iterations: RMSE %.3f (always the mean: %.3f)\n", iterations, after, base);
    printf("modelLoss: HitRate %.1f%%, Occupancy %g\n", dla_accel_hit_rate(accfun),
           dla_accel_occupancy_percent(accfun));
    dla_accel_free(accfun);
    for (int i = 0; i < NPARAMS; i++) {
        dla_tensor_release(params[i]);
        dla_tensor_release(avg[i]);
        dla_tensor_release(avg_sq[i]);
    }
    return after < 0.5 * base ? 0 : 2;
}

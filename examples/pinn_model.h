/*
 * pinn_model.h - the physics-informed network of examples/pinn.c and its
 * loss, shared with the benchmark (bench/workloads_higher.c), which times
 * the same loss replayed and eagerly:
 *
 *     function [loss, gradients] = modelLoss(parameters, X, F, X0)
 *         U = model(parameters, X);
 *         L = dllaplacian(U, X, 1, EnableHigherDerivatives=true);
 *         loss = mean((L - F).^2, "all") + 100 * mean(model(parameters, X0).^2, "all");
 *         gradients = dlgradient(loss, parameters);
 *     end
 *
 * X holds D coordinates a point (D = 1: the Laplacian is u'', the two
 * dlgradient calls of MATLAB's one-dimensional example). Each U(i)
 * depends on X(:, i) alone, which dla_laplacian needs.
 *
 * The boundary term weighs 100 times the interior's: the right-hand side
 * is up to D pi^2 (20 on the square), and weighed alike the boundary's
 * few points lose to it. On the square an unweighted loss left u up to
 * 0.20 off the solution after 4000 iterations, against 0.02 weighted (and
 * on the line 0.0017 against 0.0003 after 3000).
 */
#ifndef DLA_EXAMPLES_PINN_MODEL_H
#define DLA_EXAMPLES_PINN_MODEL_H

#include <dlaccel.h>
#include <dlaccel/nnops.h>

#define PINN_HIDDEN 20
#define PINN_POINTS 64
#define PINN_NPARAMS 6
#define PINN_BOUNDARY_WEIGHT 100.0

/* U = model(parameters, X): fullyconnect-tanh-fullyconnect-tanh-
 * fullyconnect, X of format "CB" (D x points; p[0] is HIDDEN x D). */
static inline dla_tensor *pinn_model(dla_tensor *const *p, dla_tensor *x)
{
    dla_tensor *h = dla_tanh(dla_fullyconnect(x, p[0], p[1]));
    h = dla_tanh(dla_fullyconnect(h, p[2], p[3]));
    return dla_fullyconnect(h, p[4], p[5]);
}

/* in = {parameters..., X, F, X0}; out = {loss, gradients...}. */
static inline dla_status pinn_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[PINN_NPARAMS], *f = in[PINN_NPARAMS + 1], *x0 = in[PINN_NPARAMS + 2];
    const dla_gradient_options higher = {.enable_higher_derivatives = 1};
    dla_tensor *lap = dla_laplacian(pinn_model(in, x), x, 1, &higher);
    if (dla_tensor_status(lap) != DLA_OK)
        return dla_tensor_status(lap);
    dla_tensor *residual = dla_mean(dla_square(dla_sub(lap, f)), 0, NULL);
    dla_tensor *boundary = dla_mean(dla_square(pinn_model(in, x0)), 0, NULL);
    out[0] = dla_add(residual, dla_affine(boundary, PINN_BOUNDARY_WEIGHT, 0.0));
    return dla_gradient(out[0], PINN_NPARAMS, in, out + 1);
}

#endif

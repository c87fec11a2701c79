/*
 * pinn_model.h - the physics-informed network of examples/pinn.c and its
 * loss, shared with the benchmark (bench/workloads_higher.c), which times
 * the same loss replayed and eagerly:
 *
 *     function [loss, gradients] = modelLoss(parameters, X, F, X0)
 *         U = model(parameters, X);
 *         Ux = dlgradient(sum(U, "all"), X, EnableHigherDerivatives=true);
 *         Uxx = dlgradient(sum(Ux, "all"), X, EnableHigherDerivatives=true);
 *         loss = mean((Uxx - F).^2, "all") + mean(model(parameters, X0).^2, "all");
 *         gradients = dlgradient(loss, parameters);
 *     end
 *
 * Each U(i) depends on X(i) alone, so the gradient of sum(U) is U's
 * derivative at every point at once.
 */
#ifndef DLA_EXAMPLES_PINN_MODEL_H
#define DLA_EXAMPLES_PINN_MODEL_H

#include <dlaccel.h>
#include <dlaccel/nnops.h>

#define PINN_HIDDEN 20
#define PINN_POINTS 64
#define PINN_NPARAMS 6

/* U = model(parameters, X): fullyconnect-tanh-fullyconnect-tanh-
 * fullyconnect, X of format "CB" (1 x points). */
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
    dla_tensor *ux, *uxx;
    const dla_gradient_options higher = {.enable_higher_derivatives = 1};
    dla_tensor *u = pinn_model(in, x);
    dla_status st = dla_gradient_opts(dla_sum(u, 0, NULL), 1, &x, &ux, &higher);
    if (st == DLA_OK)
        st = dla_gradient_opts(dla_sum(ux, 0, NULL), 1, &x, &uxx, &higher);
    if (st != DLA_OK)
        return st;
    dla_tensor *residual = dla_mean(dla_square(dla_sub(uxx, f)), 0, NULL);
    dla_tensor *boundary = dla_mean(dla_square(pinn_model(in, x0)), 0, NULL);
    out[0] = dla_add(residual, boundary);
    return dla_gradient(out[0], PINN_NPARAMS, in, out + 1);
}

#endif

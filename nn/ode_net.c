/*
 * ode_net.c - dla_ode45_net, MATLAB's dlode45(net, tspan, Y0): a network
 * as the right-hand side of a neural ODE.
 *
 * The network's learnables are the solve's theta, and each evaluation
 * runs the network's forward with theta as its learnables
 * (dla_net_forward_options), so gradients reach them in either gradient
 * mode: through the recorded stages ("direct"), or as the adjoint op's
 * inputs ("adjoint"), whose backward differentiates this same forward.
 */
#include "nn/nn.h"

#include <dlaccel.h>

static dla_tensor *net_slope(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta,
                             void *ctx)
{
    (void)t, (void)ntheta;
    dla_tensor *f = NULL;
    const dla_net_forward_options o = {.learnables = theta};
    dla_net_forward(ctx, 1, &y, 1, &f, NULL, &o);
    return f;
}

DLA_API dla_tensor *dla_ode45_net(dla_net *net, int nt, const double *tspan, dla_tensor *y0,
                                  const dla_ode_options *opts)
{
    if (!net)
        return dla_error_tensor(DLA_ERR_INVALID_ARGUMENT, "dla_ode45_net: argument net is NULL");
    if (dla_net_input_count(net) != 1 || dla_net_output_count(net) != 1)
        return dla_error_tensor(DLA_ERR_INVALID_ARGUMENT,
                                "dla_ode45_net: the network has %d input%s and %d output%s; "
                                "the right-hand side of an ODE takes y and gives its slope (one "
                                "of each)",
                                dla_net_input_count(net), dla_net_input_count(net) == 1 ? "" : "s",
                                dla_net_output_count(net),
                                dla_net_output_count(net) == 1 ? "" : "s");
    dla_table *l = dla_net_learnables(net);
    return dla_ode45(net_slope, net, nt, tspan, y0, dla_table_count(l), dla_table_values(l),
                     opts);
}

/*
 * dlaccel/ode.h - included by dlaccel.h; do not include it directly.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_ODE_H
#define DLACCEL_ODE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Neural ordinary differential equations, as MATLAB's dlode45.
 *
 *     // dy/dt = W2 tanh(W1 y + b1) + b2, theta = {W1, b1, W2, b2}
 *     static dla_tensor *dynamics(double t, dla_tensor *y, int ntheta,
 *                                 dla_tensor *const *theta, void *ctx)
 *     {
 *         return dla_fullyconnect(dla_tanh(dla_fullyconnect(y, theta[0], theta[1])),
 *                                 theta[2], theta[3]);
 *     }
 *     ...
 *     double tspan[] = {0, 0.1, 0.2, 0.3};
 *     dla_tensor *y = dla_ode45(dynamics, NULL, 4, tspan, y0, 4, theta, NULL);
 *     // y: y0's dims with a "T" dim of 3, the solution at 0.1, 0.2 and 0.3
 */

/* The right-hand side f(t, y, theta) of y' = f. y has y0's dims, dtype,
 * format and device; theta is what dla_ode45 was given. Return a tensor
 * with y's dims and dtype (made in the current scope, as ops return them),
 * or an error tensor to stop the solve. Write it with dlaccel's ops: in
 * dla_feval its ops are recorded, and gradients reach theta and y0
 * through them. */
typedef dla_tensor *(*dla_ode_function)(double t, dla_tensor *y, int ntheta,
                                        dla_tensor *const *theta, void *ctx);

/* What a solve took (MATLAB ode45's Stats). */
typedef struct dla_ode_stats {
    int64_t steps;       /* successful steps */
    int64_t failed;      /* attempts rejected by the error test */
    int64_t evaluations; /* calls of the function */
} dla_ode_stats;

/* Options; a zeroed struct (or NULL) is MATLAB's defaults. */
typedef struct dla_ode_options {
    double relative_tolerance; /* RelativeTolerance: 1e-3 (0: the default) */
    double absolute_tolerance; /* AbsoluteTolerance: 1e-6 (0: the default) */
    /* InitialStep: 0 picks it as ode45 does, from the slope at tspan[0],
     * at most |tspan[1] - tspan[0]| and MaxStep */
    double initial_step;
    /* MaxStep: 0 is a tenth of the whole interval; else at least 16
     * eps(t) of the largest |t| of tspan (a smaller step cannot move t). */
    double max_step;
    /* GradientMode: NULL or "direct" (backpropagation through the
     * solver's operations) or "adjoint" (the adjoint system solved
     * backwards); see dla_ode45. */
    const char *gradient_mode;
    int64_t max_steps; /* attempts before giving up; 0: no limit (MATLAB has none) */
    dla_ode_stats *stats; /* filled when non-NULL */
} dla_ode_options;

/* MATLAB dlode45(odefun, tspan, Y0, theta): integrates y' = fn(t, y,
 * theta) from tspan[0] with y(tspan[0]) = y0 by the Dormand-Prince (4,5)
 * pair with ode45's error control and step-size rules, and returns y at
 * tspan[1..nt-1]. nt >= 2 times, all finite, strictly increasing or
 * strictly decreasing, the first and last at most DBL_MAX apart. A step
 * is never below 16 eps(t) (ode45's smallest), even where a tenth of the
 * interval is: times a few units in the last place apart take a step or
 * two. With nt == 2 the result has y0's dims and format;
 * with more, one dim more for the times: labeled "T" (placed before any
 * "U" labels) when y0 is formatted, so y0 must not have a "T" dim then,
 * and the last dim when it is not. Float dtypes. A y0 of no elements (a
 * batch of no observations) gives an empty result of those dims.
 *
 * The error test looks at the whole of y (every observation of a batch
 * together), as MATLAB's does. The steps go towards the last time with
 * ode45's rules (the largest a tenth of the interval unless max_step
 * says otherwise), and the times they pass are read off each step's
 * continuous extension, as ode45 interpolates: many requested times
 * cost no extra steps.
 *
 * Gradients, "direct" (the default): inside dla_feval every operation of
 * the accepted and rejected steps is recorded, so dla_gradient reaches y0,
 * theta and whatever fn reads through them; memory grows with the steps
 * taken. The step sizes are constants to the gradient, as MATLAB's are.
 * Higher derivatives work as for any recorded ops.
 *
 * Gradients, "adjoint": the solve is one node of the tape, and the
 * gradient solves y' = f, a' = -a^T df/dy, g' = -a^T df/dtheta backwards
 * from each requested time to the one before, with the same tolerances,
 * restarting y from the forward solution at each; a^T df/d(.) is a
 * backward sweep of fn in a dla_feval of its own. Memory stays that of
 * one step; the derivatives agree with "direct" to about the tolerances.
 * Gradients reach y0 and theta only (not tensors fn reads through ctx),
 * every theta[j] must have y0's dtype, ntheta <= 7, nt <= 256, and they
 * cannot be differentiated again (DLA_ERR_UNSUPPORTED from a recorded
 * sweep). fn is called again by the gradient and by every replay of a
 * dla_accelerate trace (ctx must outlive them), and such a trace cannot
 * be saved to a file. The forward solve runs fn inside that one op, whose
 * ops are on no tape: dla_gradient there is refused (DLA_ERR_STATE), and
 * a dla_feval of fn's own works but gives the caller's gradient constants
 * (autodiff.h): a slope that takes gradients (a Hamiltonian network's
 * dH/dy) needs "direct". An accelerated function fn calls replays its
 * traces there but records none (accel.h).
 *
 * dla_accelerate: the step sizes come from values read on the host, so a
 * trace of a call holding a "direct" dla_ode45 is data-dependent
 * (docs/accelerate.md): a replay repeats the recorded steps without the
 * error test. In "adjoint" mode the forward solve is one op that runs
 * again, choosing its steps, on every replay; the adjoint solve of the
 * gradient is replayed with its recorded steps.
 *
 * Errors come back as an error tensor naming dla_ode45 and the argument:
 * a bad tspan, option or y0 (DLA_ERR_INVALID_ARGUMENT, DLA_ERR_FORMAT,
 * DLA_ERR_DTYPE); fn returning a tensor of other dims, dtype or format
 * labels than a formatted y's (DLA_ERR_SHAPE, DLA_ERR_DTYPE, DLA_ERR_FORMAT;
 * an unformatted slope takes y's labels) or an error tensor (passed on); a step
 * that had to shrink below 16 eps(t), or more than max_steps attempts
 * (DLA_ERR_STATE: the tolerances cannot be met, or y stopped being
 * finite); a solution or slope that is not finite where a step starts (a
 * NaN in y0 or theta) fails at the first attempt, DLA_ERR_STATE. The
 * result belongs to the current scope. */
DLA_API dla_tensor *dla_ode45(dla_ode_function fn, void *ctx, int nt, const double *tspan,
                              dla_tensor *y0, int ntheta, dla_tensor *const *theta,
                              const dla_ode_options *opts);

typedef struct dla_net dla_net; /* <dlaccel/net.h> */

/* MATLAB dlode45(net, tspan, Y0): dla_ode45 with the network's forward
 * (training mode, with its learnables as theta) as fn. net has one input,
 * formatted as y0 is (a featureInput's "CB"), and one output of y0's
 * dims. In dla_feval, dla_net_gradient (or dla_gradient with respect to
 * the learnables) reaches its learnables in either gradient mode; with
 * "adjoint" the network may have at most 7 learnable tensors. State the
 * forward updates (batch normalization) is dropped. The network must
 * outlive the solve, and under "adjoint" the gradient and any replay. */
DLA_API dla_tensor *dla_ode45_net(dla_net *net, int nt, const double *tspan, dla_tensor *y0,
                                  const dla_ode_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_ODE_H */

/*
 * ode45.h - the two halves of dla_ode45 (internal): the solver, which the
 * "direct" mode records op by op, and the "adjoint" mode's op, which runs
 * the solver as one op and differentiates by solving the adjoint system
 * backwards in time.
 */
#ifndef DLA_CORE_ODE45_H
#define DLA_CORE_ODE45_H

#include <dlaccel.h>

/* The most requested times and parameters of an adjoint solve: its op
 * keeps the times among its attributes, and takes y0 and theta as its
 * inputs. */
#define DLA__ODE45_ADJOINT_MAX_TIMES 256

/* y at tspan[1..nt-1] for checked arguments, in the current scope
 * (stacked along the time dim for nt > 2); the solver's counts in *stats
 * when stats is not NULL. Only the numbers of o are read. */
dla_tensor *dla__ode45_solve(dla_ode_function fn, void *ctx, int nt, const double *tspan,
                             dla_tensor *y0, int ntheta, dla_tensor *const *theta,
                             const dla_ode_options *o, dla_ode_stats *stats);
/* The same as one op whose backward solves the adjoint system. */
dla_tensor *dla__ode45_adjoint(dla_ode_function fn, void *ctx, int nt, const double *tspan,
                               dla_tensor *y0, int ntheta, dla_tensor *const *theta,
                               const dla_ode_options *o);
/* Where the times go in the result of y0: the 0-based dim (before any
 * "U" label, else last); *nd: y0's dims (its labels' count when
 * formatted); fmt (DLA_MAX_DIMS + 2 bytes): the result's format ("" when
 * y0 has none). */
int dla__ode45_time_dim(const dla_tensor *y0, int *nd, char *fmt);

#endif

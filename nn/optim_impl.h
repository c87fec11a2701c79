/*
 * optim_impl.h - what the optimizer files share (optim.c, optim_lbfgs.c):
 * the checks of a parameter list against its gradients, with the messages
 * every update gives, and the gradient taken in its parameter's dims.
 */
#ifndef DLA_NN_OPTIM_IMPL_H
#define DLA_NN_OPTIM_IMPL_H

#include <dlaccel.h>

/* Fails naming entry i (1-based), the parameter's dims or dtype and
 * what's (its gradient, velocity...): DLA_ERR_SHAPE when the dims differ,
 * else DLA_ERR_DTYPE. fn names the caller. */
dla_status dla__optim_mismatch(const char *fn, int i, const dla_tensor *p, const char *what,
                               const dla_tensor *v);
/* Checks n entries of params against grads: the lists set, no entry NULL
 * or an error tensor, each gradient of its parameter's dims (trailing
 * singletons and labels aside) and dtype. Sets the message. */
dla_status dla__optim_check_lists(const char *fn, int n, dla_tensor *const *params,
                                  dla_tensor *const *grads);
/* g in p's dims and format (a gradient of a view may carry other labels or
 * trailing ones; dla__optim_check_lists refused any other difference). */
dla_tensor *dla__optim_like(dla_tensor *g, dla_tensor *p);

#endif

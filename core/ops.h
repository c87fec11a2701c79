/*
 * ops.h - internal entry points that op files share (beyond the public API):
 * kernels the public API does not expose as functions of their own.
 */
#ifndef DLA_CORE_OPS_H
#define DLA_CORE_OPS_H

#include <dlaccel/plugin.h>

/* a cmp b elementwise with implicit expansion: a DLA_BOOL tensor. */
dla_tensor *dla__compare(dla_binary_op cmp, dla_tensor *a, dla_tensor *b);
/* Any plugin unary op (STEP, LEAKY_RELU, RECIPROCAL...) as a differentiable op. */
dla_tensor *dla__unary(dla_unary_op op, dla_tensor *x, double alpha, double beta);
/* g broadcast to the dims of like (each of g's dims equal to like's or 1),
 * dense; its backward sums back. Format follows like. */
dla_tensor *dla__expand(dla_tensor *g, const dla_tensor *like);

/* The broadcast dims (*nd of them) and format of n operands named names,
 * or a failure naming op, the arguments and their dims (implicit
 * expansion: equal dims or 1; one format among the formatted ones). */
dla_status dla__broadcast(const char *op, int n, dla_tensor *const *t, const char *const *names,
                          int *nd, int64_t *dims, char *fmt);

/* Unformatted t viewed with dim dims, those past its own of size 1 (MATLAB's
 * trailing singletons), for the ops that index a dim; dim > t's ndims. */
dla_tensor *dla__with_trailing_dims(dla_tensor *t, int dim);

/* t itself (a new reference) when dense, else a dense copy on its device
 * (strided copy kernel); NULL with the message, prefixed with op, on failure. */
dla_tensor *dla__dense(const char *op, dla_tensor *t);
/* A dense copy of t on its device, always new storage; NULL as above. */
dla_tensor *dla__copy(const char *op, dla_tensor *t);

#endif

/*
 * dlaccel/autodiff.h - included by dlaccel.h; do not include it directly.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_AUTODIFF_H
#define DLACCEL_AUTODIFF_H

#ifdef __cplusplus
extern "C" {
#endif

/* Automatic differentiation, as MATLAB's dlfeval and dlgradient.
 *
 *     static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in,
 *                                  int nout, dla_tensor **out)
 *     {
 *         dla_tensor *w = in[0], *x = in[1], *t = in[2];
 *         dla_tensor *loss = dla_mean(dla_square(dla_sub(dla_mtimes(w, x), t)), 0, NULL);
 *         out[0] = loss;
 *         return dla_gradient(loss, 1, &w, &out[1]);   // dloss/dw
 *     }
 *     ...
 *     dla_tensor *out[2];
 *     dla_feval(model_loss, NULL, 3, (dla_tensor *[]){w, x, t}, 2, out);
 */

/* The function dla_feval runs: in[0..nin-1] are borrowed; set out[i] to
 * tensors made inside (they belong to the implicit scope feval opens, so no
 * release is needed); return DLA_OK or an error status (say why with
 * dla_set_error: an error returned without a message becomes "dla_feval:
 * the function returned ... and gave no reason", not an older error). */
typedef dla_status (*dla_function)(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out);

/* Runs fn with gradient recording on, inside an implicit scope. Every op fn
 * runs is recorded on a tape that belongs to this call; dla_gradient inside
 * fn sweeps it backwards. On return out[0..nout-1] hold +1 references owned
 * by the caller (or by the caller's scope), detached from the tape, which
 * is freed with everything it saved. An out[i] fn left unset is an error
 * tensor. Returns fn's status, or the first error among the outputs. Calls
 * nest: an inner dla_feval has its own tape, and its ops are not on the
 * outer one, so to the outer dla_gradient the inner call's results are
 * constants: no gradient flows back through an inner dla_feval. That holds
 * where code dlaccel runs inside one of its ops calls dla_feval too (a
 * dla_ode45 slope in "adjoint" mode, a custom layer's forward with a
 * backward of its own): the call records the ops fn runs, while to
 * everyone else they are part of the enclosing op. */
DLA_API dla_status dla_feval(dla_function fn, void *ctx, int nin, dla_tensor *const *in,
                             int nout, dla_tensor **out);

/* Inside dla_feval: grads[i] = d(loss)/d(wrt[i]) for i in 0..nwrt-1, each
 * with wrt[i]'s dims and format. loss must be a real scalar that the
 * recorded ops computed; wrt[i] may be any tensor the computation used (an
 * input of fn, a view of one, a tensor reached through ctx). Several calls
 * in one dla_feval work. grads[i] belong to the current scope (feval's).
 * No two grads[i] share memory (where the sweep gives two arguments one
 * tensor, or wrt lists one twice, the later is a copy), so a collective
 * may sum each in place on its own. Gradients are not recorded on the
 * tape: to a later dla_gradient they are constants (a loss computed only
 * from them "does not depend" on wrt). For second derivatives use
 * dla_gradient_opts with enable_higher_derivatives.
 * A wrt[i] the loss does not depend on (an input the function did not
 * use, a slice of x where the loss was computed from x itself, a branch
 * that reaches the loss only through comparisons) gets zeros with its
 * dims, format and dtype, as MATLAB's dlgradient gives them, provided the
 * loss is "traced": computed by ops with a derivative from one of
 * dla_feval's single or double inputs or from one of wrt.
 * Errors (grads[i] are then error tensors): DLA_ERR_STATE outside dla_feval
 * ("dla_gradient: called outside dla_feval"); DLA_ERR_INVALID_ARGUMENT when
 * loss is not a scalar, or when it is not traced (MATLAB: "Value to
 * differentiate is not traced"; a loss computed only from a plain
 * gradient, from tensors made before the call, or through comparisons; the
 * message names the first such wrt[i] and its dims, "the loss does not
 * depend on it"), or when it does not depend on wrt[i] (made before the
 * call) but reads wrt[i]'s memory through another tensor made before the
 * call (an accelerated model loss, whose inputs are fresh handles, that
 * read the caller's tensor through ctx: "reads its memory through another
 * tensor"); DLA_ERR_DTYPE when wrt[i] is not single
 * or double (an integer or logical tensor has no gradient: cast it first,
 * and take the gradient with respect to the cast); DLA_ERR_INVALID_ARGUMENT
 * when a dla_accel_call replayed on this tape, on the loss's path, read
 * wrt[i] (or a value computed from it) as a constant of its trace, through
 * which no gradient flows (docs/accelerate.md, "Under a tape"). */
DLA_API dla_status dla_gradient(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                dla_tensor **grads);

/* What dla_gradient_hooked calls while its backward sweep runs, on the
 * calling thread:
 *   ready(ctx, i, g)  once for each i whose gradient is final (no later
 *                     step of the sweep can add to it: the sweep has passed
 *                     the first op that used wrt[i]), in the order they
 *                     become final; g holds grads[i]'s values (grads[i]
 *                     may be a copy: one tensor can be the gradient of
 *                     several i, and each grads[i] gets memory of its
 *                     own), lent until dla_gradient_hooked returns: read it
 *                     (copy it, start a reduction of a copy), never write
 *                     it. Gradient reductions start here so that they
 *                     overlap the rest of the backward pass (trainnet
 *                     "parallel": docs/parallel.md, "Reduction cost").
 *   between(ctx)      after each op of the tape the sweep has passed, so
 *                     that work in flight moves on while the backward
 *                     runs (dla_spmd_progress).
 * Either may be NULL. Ops they run are not recorded on the tape. */
typedef struct dla_gradient_hooks {
    void (*ready)(void *ctx, int index, dla_tensor *grad);
    void (*between)(void *ctx);
    void *ctx;
} dla_gradient_hooks;

/* dla_gradient, calling hooks (may be NULL: dla_gradient) during the
 * sweep. The hooks run only in an eager sweep: not while dla_accelerate
 * records the call (they would be recorded into the trace, and a replay
 * never calls them), nor in a replay, which runs the recorded backward
 * with no sweep to hook: the gradients of an accelerated function come
 * out together at its end. A ready that was not called for some i (an
 * error, a recording) leaves grads[i] as dla_gradient does. */
DLA_API dla_status dla_gradient_hooked(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                       dla_tensor **grads, const dla_gradient_hooks *hooks);

/* dlgradient's name-value options. A zeroed struct (or NULL) is
 * dla_gradient. */
typedef struct dla_gradient_options {
    /* EnableHigherDerivatives (false by default, as in MATLAB): the
     * backward sweep is recorded on the tape like the forward, so the
     * gradients it returns can go into further computations that a later
     * dla_gradient of the same dla_feval differentiates: a Hessian-vector
     * product, a gradient penalty, the derivatives of a network's output
     * with respect to its input in a physics-informed loss.
     *
     *     dla_tensor *dy, *d2y;          // y = x^3 inside dla_feval
     *     dla_gradient_opts(dla_sum(y, 0, NULL), 1, &x, &dy,
     *                       &(dla_gradient_options){.enable_higher_derivatives = 1});
     *     dla_gradient(dla_sum(dy, 0, NULL), 1, &x, &d2y);   // 6x
     *
     * Costs: every intermediate of the sweep is kept until dla_feval
     * returns, and sums of gradients make new tensors instead of adding
     * in place. Every op has a second derivative except where the later
     * dla_gradient says otherwise: it fails with DLA_ERR_UNSUPPORTED naming
     * the op (never a silently dropped term). Inside dla_accelerate the
     * recorded sweeps are traced and replayed like any other ops. */
    int enable_higher_derivatives;
    /* As dla_gradient_hooked's; NULL: none. */
    const dla_gradient_hooks *hooks;
} dla_gradient_options;

/* dla_gradient with options (NULL: the defaults). */
DLA_API dla_status dla_gradient_opts(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                     dla_tensor **grads, const dla_gradient_options *opts);

/* Derivatives of a model's outputs u with respect to its input data x,
 * point by point, inside dla_feval (MATLAB's dljacobian, dldivergence and
 * dllaplacian). dim (1-based; dla_tensor_find_dim(x, 'C') for a label) is
 * x's operation dimension: x holds C coordinates along it, and every
 * position outside it is a point (an observation, a pixel). One of a
 * formatted x's dims; past an unformatted x's, it has size 1 (MATLAB's
 * trailing singletons: 5 points of one coordinate each). u holds K
 * components along the same dim and agrees with x in every other dim.
 * Each point of u must be computed from the same point of x alone (as a
 * network computes an observation from its own input): the functions sum
 * over the points before each backward sweep, which gives every point's
 * derivatives at once only then. A component of u that does not depend on
 * x has zero derivatives; a u that depends on x nowhere is
 * DLA_ERR_INVALID_ARGUMENT.
 *
 *   dla_jacobian    d u_k / d x_i: x's dims and format with one dim more,
 *                   last, of size K (labeled U when x is formatted; none
 *                   when K is 1). K backward sweeps.
 *   dla_divergence  sum over i of d u_i / d x_i (K must equal C): x's dims
 *                   and format with dim of size 1. C sweeps.
 *   dla_laplacian   sum over i of d^2 u_k / d x_i^2: x's format, u's dims.
 *                   K * (C + 1) sweeps, the first K recorded.
 *
 * opts: enable_higher_derivatives records the last sweeps too, so that the
 * result can be differentiated again (a loss on a Laplacian trained with
 * dla_gradient); hooks must be NULL. NULL opts: not recorded, as in
 * MATLAB. The results belong to the current scope. Errors come back as
 * error tensors naming the function: outside dla_feval DLA_ERR_STATE, dims
 * that disagree DLA_ERR_SHAPE. */
DLA_API dla_tensor *dla_jacobian(dla_tensor *u, dla_tensor *x, int dim,
                                 const dla_gradient_options *opts);
DLA_API dla_tensor *dla_divergence(dla_tensor *u, dla_tensor *x, int dim,
                                   const dla_gradient_options *opts);
DLA_API dla_tensor *dla_laplacian(dla_tensor *u, dla_tensor *x, int dim,
                                  const dla_gradient_options *opts);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_AUTODIFF_H */

/*
 * dlaccel/optim.h - included by dlaccel.h; do not include it directly.
 *
 * Optimizers and what trainnet does to gradients, with MATLAB's formulas
 * and defaults: sgdmupdate, adamupdate, rmspropupdate, dlupdate, L2
 * regularization, gradient clipping and learning-rate schedules.
 *
 *     dla_tensor **vel = calloc(nl, sizeof *vel);           // MATLAB: vel = []
 *     for (...) {
 *         ... dla_feval(model_loss, net, ...) gives grads[0..nl-1] ...
 *         dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), grads, vel,
 *                        DLA_SGDM_LEARN_RATE, DLA_SGDM_MOMENTUM);
 *     }
 *     dla_optim_free(nl, vel);
 *
 * They work on plain lists of tensors, and so on a Learnables table
 * through dla_table_values (its values array), updating the network in
 * place. Lists that an update changes (the parameters and the optimizer's
 * state: velocity, averages) hold references of their own (+1, never a
 * scope's): each entry is replaced by a new +1 reference and the old one
 * released. State entries start as NULL (MATLAB's []), which counts as
 * zeros of the parameter's size. Gradients are borrowed. An update is all
 * or nothing: on any error (an error tensor among the gradients, dims
 * that differ, an invalid hyperparameter) nothing is replaced, and the
 * status and dla_last_error() say which entry failed. Each gradient and
 * each non-NULL state entry must have its parameter's dims (trailing
 * singleton dims and format labels aside) and dtype: DLA_ERR_SHAPE /
 * DLA_ERR_DTYPE name the entry and both dims or dtypes (a gradient of as
 * many elements in other dims is not reshaped, a smaller state is not
 * broadcast). All arithmetic is done with ops on the tensors' device.
 */
#ifndef DLACCEL_OPTIM_H
#define DLACCEL_OPTIM_H

#include <dlaccel.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MATLAB's defaults. */
#define DLA_SGDM_LEARN_RATE 0.01
#define DLA_SGDM_MOMENTUM 0.9
#define DLA_ADAM_LEARN_RATE 0.001
#define DLA_ADAM_GRAD_DECAY 0.9
#define DLA_ADAM_SQ_GRAD_DECAY 0.999
#define DLA_ADAM_EPSILON 1e-8
#define DLA_RMSPROP_LEARN_RATE 0.001
#define DLA_RMSPROP_SQ_GRAD_DECAY 0.9
#define DLA_RMSPROP_EPSILON 1e-8

/* MATLAB [params, vel] = sgdmupdate(params, grad, vel, learnRate,
 * momentum), for each of the n entries:
 *     vel    = momentum * vel - learnRate * grad
 *     params = params + vel
 * learn_rate >= 0, momentum in [0, 1] (DLA_ERR_INVALID_ARGUMENT otherwise). */
DLA_API dla_status dla_sgdmupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **velocity, double learn_rate, double momentum);

/* MATLAB [params, avgG, avgSqG] = adamupdate(params, grad, avgG, avgSqG,
 * iteration, learnRate, gradDecay, sqGradDecay, epsilon), iteration t >= 1:
 *     avgG   = gradDecay * avgG + (1 - gradDecay) * grad
 *     avgSqG = sqGradDecay * avgSqG + (1 - sqGradDecay) * grad.^2
 *     params = params - learnRate * sqrt(1 - sqGradDecay^t) / (1 - gradDecay^t)
 *                       * avgG ./ (sqrt(avgSqG) + epsilon)
 * Decays in [0, 1), epsilon > 0, learn_rate >= 0. */
DLA_API dla_status dla_adamupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **avg_grad, dla_tensor **avg_sq_grad, int iteration,
                                  double learn_rate, double grad_decay, double sq_grad_decay,
                                  double epsilon);

/* MATLAB [params, avgSqG] = rmspropupdate(params, grad, avgSqG, learnRate,
 * sqGradDecay, epsilon):
 *     avgSqG = sqGradDecay * avgSqG + (1 - sqGradDecay) * grad.^2
 *     params = params - learnRate * grad ./ (sqrt(avgSqG) + epsilon) */
DLA_API dla_status dla_rmspropupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                     dla_tensor **avg_sq_grad, double learn_rate,
                                     double sq_grad_decay, double epsilon);

/* The function dla_dlupdate applies: args[0] is the entry of params,
 * args[1..nargs-1] the same entry of each extra list. Return the new
 * value (made with ops; it belongs to the scope dla_dlupdate opens). */
typedef dla_tensor *(*dla_update_fn)(void *ctx, int nargs, dla_tensor *const *args);

/* MATLAB params = dlupdate(fun, params, X1, ..., Xk): params[i] =
 * fn(ctx, params[i], extra[0][i], ..., extra[k-1][i]) for every i (at
 * most 15 extra lists, each of n entries). The new values are not held
 * to the old dims or dtype: fn may cast or move them, as MATLAB's
 * dlupdate(@double, net) does. An error tensor from fn fails the update
 * (nothing replaced). */
DLA_API dla_status dla_dlupdate(dla_update_fn fn, void *ctx, int n, dla_tensor **params,
                                int nextra, dla_tensor *const *const *extra);

/* Releases the n entries of an optimizer state list and sets them NULL
 * (the list itself is the caller's). */
DLA_API void dla_optim_free(int n, dla_tensor **state);

/* ---------------------------------------------------- gradient treatment */

/* L2 regularization (trainingOptions L2Regularization, MATLAB's default
 * 1e-4 in trainnet): out[i] = grads[i] + factor * l2_factors[i] *
 * params[i], where l2_factors (NULL: all 1) are per entry, as a Learnables
 * table's (dla_table_l2_factor: 0 for biases). out[i] follow dlaccel.h's
 * ownership (+1, or the open scope's); grads and params are borrowed. */
DLA_API dla_status dla_l2_regularize(int n, dla_tensor *const *grads, dla_tensor *const *params,
                                     double factor, const double *l2_factors, dla_tensor **out);

/* Gradient clipping (trainingOptions GradientThreshold and
 * GradientThresholdMethod), into out (ownership as above):
 *   "l2norm" (NULL, MATLAB's default): each entry whose L2 norm exceeds
 *       threshold is scaled to norm threshold;
 *   "global-l2norm": when the L2 norm of all entries together, L, exceeds
 *       threshold, every entry is scaled by threshold / L;
 *   "absolute-value": each element is clamped to [-threshold, threshold].
 * Done with ops (no read on the host), so it can be recorded in a trace.
 * threshold > 0 (an infinite one copies the gradients). */
DLA_API dla_status dla_clip_gradients(int n, dla_tensor *const *grads, const char *method,
                                      double threshold, dla_tensor **out);

/* ------------------------------------------------ learning-rate schedules */

/* trainingOptions LearnRateSchedule and its parameters. */
typedef struct dla_learn_rate_schedule {
    /* NULL or "none": constant; "piecewise": multiplied by drop_factor
     * every drop_period epochs (MATLAB's piecewiseLearnRate). */
    const char *method;
    /* LearnRateDropFactor in [0, 1]: 0 means the default 0.1 (zeroed
     * structs keep meaning MATLAB's defaults), so a drop to 0 itself is
     * asked for with a negative number, as trainingOptions' other "zero
     * is also a value" fields (train.h). */
    double drop_factor;
    int drop_period;    /* epochs; 0: 10 (LearnRateDropPeriod); >= 0 */
    /* Linear warm-up over the first warmup_iterations iterations (0:
     * none), from warmup_start_factor (0 by default, >= 0) times the rate
     * to the full rate (MATLAB's warmupLearnRate, counted in iterations). */
    int warmup_iterations;
    double warmup_start_factor;
} dla_learn_rate_schedule;

/* The learning rate for epoch (1-based) and iteration (1-based, counted
 * over all epochs): initial * drop_factor^floor((epoch - 1) / drop_period)
 * for "piecewise", times the warm-up factor start + (1 - start) * iteration
 * / warmup_iterations while iteration < warmup_iterations. s may be NULL
 * (constant). An unknown method, a negative drop_period or a negative
 * warmup_start_factor gives NAN and sets dla_last_error(). */
DLA_API double dla_learn_rate_at(const dla_learn_rate_schedule *s, double initial, int epoch,
                                 int iteration);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_OPTIM_H */

/*
 * dlaccel/optim.h - included by dlaccel.h; do not include it directly.
 *
 * Optimizers and what trainnet does to gradients, with MATLAB's formulas
 * and defaults: sgdmupdate, adamupdate, rmspropupdate, dlupdate,
 * lbfgsupdate with its lbfgsState, L2 regularization, gradient clipping
 * and learning-rate schedules.
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
 * broadcast), and be on its device (DLA_ERR_INVALID_ARGUMENT naming the
 * entry, the list and both devices: nothing is moved). All arithmetic is
 * done with ops on the tensors' device.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_OPTIM_H
#define DLACCEL_OPTIM_H

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
 * learn_rate finite and >= 0, momentum in [0, 1] (DLA_ERR_INVALID_ARGUMENT
 * otherwise). For all three updates, a learn_rate of 0 changes nothing,
 * neither the parameters nor the state (MATLAB's sgdmupdate, adamupdate
 * and rmspropupdate return at a zero rate before touching them). */
DLA_API dla_status dla_sgdmupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **velocity, double learn_rate, double momentum);

/* MATLAB [params, avgG, avgSqG] = adamupdate(params, grad, avgG, avgSqG,
 * iteration, learnRate, gradDecay, sqGradDecay, epsilon), iteration t >= 1:
 *     avgG   = gradDecay * avgG + (1 - gradDecay) * grad
 *     avgSqG = sqGradDecay * avgSqG + (1 - sqGradDecay) * grad.^2
 *     params = params - learnRate * sqrt(1 - sqGradDecay^t) / (1 - gradDecay^t)
 *                       * avgG ./ (sqrt(avgSqG) + epsilon)
 * (epsilon outside the square root and added to the uncorrected
 * sqrt(avgSqG), as MathWorks' adamupdate.m and trainNetwork's SolverADAM
 * compute it.) Decays in [0, 1), epsilon finite and > 0, learn_rate finite and >= 0. */
DLA_API dla_status dla_adamupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **avg_grad, dla_tensor **avg_sq_grad, int iteration,
                                  double learn_rate, double grad_decay, double sq_grad_decay,
                                  double epsilon);

/* MATLAB [params, avgSqG] = rmspropupdate(params, grad, avgSqG, learnRate,
 * sqGradDecay, epsilon):
 *     avgSqG = sqGradDecay * avgSqG + (1 - sqGradDecay) * grad.^2
 *     params = params - learnRate * grad ./ (sqrt(avgSqG) + epsilon)
 * sqGradDecay in [0, 1), epsilon finite and > 0, learn_rate finite and >= 0. */
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
 * dlupdate(@double, net) does: a network whose Learnables' values are
 * all cast so is a network of that dtype, which dla_net_copy and trainnet
 * keep (casting its State and input statistics along in the copy;
 * dla_net_cast casts every value in place, which dla_net_save of a
 * network with State needs). An error tensor from fn fails the update
 * (nothing replaced). */
DLA_API dla_status dla_dlupdate(dla_update_fn fn, void *ctx, int n, dla_tensor **params,
                                int nextra, dla_tensor *const *const *extra);

/* Releases the n entries of an optimizer state list and sets them NULL
 * (the list itself is the caller's). */
DLA_API void dla_optim_free(int n, dla_tensor **state);

/* ------------------------------------------------------------------ L-BFGS */

/* MATLAB [params, solverState] = lbfgsupdate(params, lossFcn, solverState):
 * one iteration of limited-memory BFGS, a quasi-Newton method for small
 * networks and data sets processed as one batch (full-batch training, as
 * PINNs are). Unlike the updates above it calls the loss itself, several
 * times an iteration if its line search needs to.
 *
 *     static dla_status lossFcn(void *ctx, int n, dla_tensor *const *p, int nout,
 *                               dla_tensor **out)
 *     {
 *         return dla_feval(model_loss, ctx, n, p, nout, out);  // out[0] loss, out[1..n] gradients
 *     }
 *     ...
 *     dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);      // lbfgsState
 *     for (int it = 0; it < max_iterations; it++) {
 *         if (dla_lbfgsupdate(n, params, lossFcn, data, s) != DLA_OK)
 *             break;                                          // dla_last_error() says why
 *         dla_lbfgs_info in;
 *         dla_lbfgs_state_info(s, &in);
 *         if (in.gradients_norm < 1e-5 || in.step_norm < 1e-5 ||
 *             !strcmp(in.line_search_status, "failed"))
 *             break;
 *     }
 *     dla_lbfgs_state_free(s);
 *
 * For a network, params is its Learnables' values (dla_table_values) and
 * the loss function runs the network (dla_feval of a model loss that calls
 * dla_net_forward and dla_net_gradient): while the loss function runs,
 * params holds the point being tried, so the network computes there. */

/* MATLAB's defaults (lbfgsState, lbfgsupdate). */
#define DLA_LBFGS_HISTORY_SIZE 10
#define DLA_LBFGS_INITIAL_INVERSE_HESSIAN_FACTOR 1.0
#define DLA_LBFGS_MAX_NUM_LINE_SEARCH_ITERATIONS 20
/* The line search's constants: sufficient decrease (Armijo) and curvature
 * (Wolfe), the usual ones for quasi-Newton methods. */
#define DLA_LBFGS_C1 1e-4
#define DLA_LBFGS_C2 0.9

/* lbfgsState's properties and lbfgsupdate's options; zeroed means MATLAB's
 * defaults, as elsewhere in dlaccel. */
typedef struct dla_lbfgs_options {
    /* HistorySize: the (step, gradient change) pairs kept, >= 1; 0: 10.
     * Values between 3 and 20 suit most tasks (MATLAB). Memory is taken
     * for the pairs stored, as they come, not for HistorySize of them. */
    int history_size;
    /* InitialInverseHessianFactor: the initial inverse Hessian is this
     * times the identity while no pair is stored (the first iteration,
     * and after a reset); > 0, 0: 1. Once pairs exist, the scale is
     * s'y / y'y of the newest pair (s the step, y the gradients' change),
     * not this factor. */
    double initial_inverse_hessian_factor;
    /* InitialStepSize: a bound on the largest absolute element of a step
     * taken while no pair is stored, where the direction is the gradient
     * scaled by the factor above and its length a guess. 0: "auto", the
     * bound 0.5 * max|params| + 0.1 (so a small network takes a first step
     * of its own scale, however steep the loss); a positive number: that
     * bound; INFINITY: none. A step within the bound is not lengthened.
     * (Recent MATLAB releases have InitialStepSize with "auto"; this is
     * dlaccel's reading of it.) */
    double initial_step_size;
    /* LineSearchMethod (an lbfgsupdate option in MATLAB, kept here with the
     * state): "weak-wolfe" (NULL, the default) or "strong-wolfe": a step
     * length with sufficient decrease, f(x + a d) <= f(x) + c1 a g'd, and
     * the curvature condition, g(x + a d)'d >= c2 g'd (weak) or |g(x +
     * a d)'d| <= c2 |g'd| (strong), found by doubling a until the
     * conditions are bracketed, then by cubic interpolation inside the
     * bracket; both keep the inverse Hessian positive definite.
     * "backtracking": sufficient decrease alone, halving a; a step that
     * breaks the curvature condition gives a pair that is not stored. The
     * first length tried is 1 (the quasi-Newton step), bounded as above
     * while no pair is stored. */
    const char *line_search_method;
    /* MaxNumLineSearchIterations: the loss evaluations one line search may
     * make, >= 1; 0: 20. */
    int max_num_line_search_iterations;
} dla_lbfgs_options;

/* MATLAB's lbfgsState: the options above, the pairs, and the loss and
 * gradients at the parameters the last update returned. Opaque; read it
 * with dla_lbfgs_state_info and dla_lbfgs_state_gradient. */
typedef struct dla_lbfgs_state dla_lbfgs_state;

/* A new, empty state (opts NULL: every default). NULL with
 * DLA_ERR_INVALID_ARGUMENT naming the option (MATLAB's name) for a
 * negative size or count, a factor that is not a positive finite number, a
 * negative or NaN step size, an unknown line search method; NULL with
 * DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_lbfgs_state *dla_lbfgs_state_create(const dla_lbfgs_options *opts);
/* Releases the state's tensors and frees it; NULL does nothing. A state
 * freed already, given here or to the calls below, is refused and logged
 * (docs/checks.md). */
DLA_API void dla_lbfgs_state_free(dla_lbfgs_state *state);

/* One L-BFGS iteration on the n parameters (a plain list, as the updates
 * above take; n >= 1, single or double, any dims, each entry may differ):
 *
 *  1. The loss f and gradients g at params: the state's, when params are
 *     the tensors the last update returned (the usual loop), else a call
 *     of loss_fn (the first update, or params replaced in between).
 *  2. The direction d = -H g, H the inverse Hessian approximation of the
 *     stored pairs by the two-loop recursion, scaled by s'y / y'y of the
 *     newest pair (InitialInverseHessianFactor while none is stored).
 *     When d is not a descent direction (g'd >= 0) the pairs are dropped
 *     and d = -factor * g.
 *  3. The line search along d (LineSearchMethod above), each length a
 *     tried a call of loss_fn at params + a d.
 *  4. params[i] replaced by a new +1 reference to the point found, the
 *     old reference released (as the other updates do); the pair s = a d,
 *     y = g(new) - g stored when s'y > 0, else skipped (curvature
 *     condition failed: a pair with s'y <= 0 would make H indefinite),
 *     the oldest pair dropped beyond HistorySize.
 *
 * loss_fn is called as loss_fn(ctx, n, params, 1 + n, out), with params
 * holding the point to evaluate (the caller's list, its entries swapped
 * for the call and put back after it: a network whose Learnables' values
 * are params computes there). It sets out[0] to the loss, a real scalar
 * (any dims of one element), and out[1 + i] to the gradient of entry i
 * (its parameter's dims, trailing singletons and labels aside, and
 * dtype), and returns DLA_OK; out[] belong to the scope dla_lbfgsupdate
 * opens around the call, so what dla_feval hands back needs no release:
 * a dla_feval (or dla_accel_feval) of a model loss is the whole function.
 *
 * The line search's outcome is not an error: the state's
 * line_search_status says "completed" (the conditions were met) or
 * "failed" (MaxNumLineSearchIterations evaluations without; then params
 * move to the lowest loss tried when one was below f, else stay as they
 * were and the pairs are dropped; a loop should stop, as MATLAB's
 * examples do). A loss or gradient that is NaN or infinite at a tried
 * point counts as a length too long. A gradient of zero takes no step
 * ("completed", step norm 0).
 *
 * The dot products (and the loss) are read to the host, a few per
 * iteration; everything else is ops on the tensors' device, in their
 * dtype (dot products summed in double).
 *
 * All or nothing: on an error nothing is replaced and the state is as it
 * was. Errors: DLA_ERR_INVALID_ARGUMENT (a NULL state, loss_fn or list,
 * n < 1, a NULL or error entry, an out[] left unset); DLA_ERR_DTYPE (an
 * entry that is not single or double, a gradient of another dtype);
 * DLA_ERR_SHAPE (a gradient of other dims, a loss that is not a scalar,
 * params of another count or dims than the state's pairs were made with:
 * one state per parameter list); DLA_ERR_STATE (the loss or the gradient
 * at params is not finite: there is nowhere to search from); loss_fn's
 * own status. The message names dla_lbfgsupdate, the entry, the dims and
 * what loss_fn said. */
DLA_API dla_status dla_lbfgsupdate(int n, dla_tensor **params, dla_function loss_fn, void *ctx,
                                   dla_lbfgs_state *state);

/* lbfgsState's read-only properties, as of the last update. */
typedef struct dla_lbfgs_info {
    double loss;             /* Loss at the parameters returned; NaN before any update */
    double gradients_norm;   /* GradientsNorm: the L2 norm of all gradients together */
    double step_norm;        /* StepNorm: the L2 norm of the last step (0: none taken) */
    /* The step length the line search chose: 1 is the full quasi-Newton
     * step (trainnet's "learning rate" column); 0 when no step was taken. */
    double learn_rate;
    /* LineSearchStatus: "" before any update, "completed", "failed". */
    const char *line_search_status;
    int history_length;      /* the pairs stored, at most HistorySize */
    int64_t iterations;      /* updates made */
    int64_t evaluations;     /* calls of loss_fn, over all updates */
    dla_lbfgs_options options; /* as created, every default filled in */
} dla_lbfgs_info;

/* Fills *out (DLA_ERR_INVALID_ARGUMENT for a NULL or freed state or out). */
DLA_API dla_status dla_lbfgs_state_info(const dla_lbfgs_state *state, dla_lbfgs_info *out);
/* Gradients: the gradient of entry i (0-based) at the parameters the last
 * update returned, borrowed (valid until the next update or the free).
 * NULL, with the last error set, before the first update or for i out of
 * range. */
DLA_API dla_tensor *dla_lbfgs_state_gradient(const dla_lbfgs_state *state, int i);

/* ---------------------------------------------------- gradient treatment */

/* L2 regularization (trainingOptions L2Regularization, MATLAB's default
 * 1e-4 in trainnet): out[i] = grads[i] + factor * l2_factors[i] *
 * params[i], factor and each l2_factors[i] finite and >= 0
 * (DLA_ERR_INVALID_ARGUMENT otherwise, naming the entry),
 * where l2_factors (NULL: all 1) are per entry, as a Learnables
 * table's (dla_table_l2_factor: 0 for biases). Each grads[i] needs
 * params[i]'s dims and dtype (DLA_ERR_SHAPE, DLA_ERR_DTYPE naming the
 * entry, as the optimizers). out[i] follow dlaccel.h's
 * ownership (+1, or the open scope's); grads and params are borrowed. */
DLA_API dla_status dla_l2_regularize(int n, dla_tensor *const *grads, dla_tensor *const *params,
                                     double factor, const double *l2_factors, dla_tensor **out);

/* Gradient clipping (trainingOptions GradientThreshold and
 * GradientThresholdMethod), into out (ownership as above):
 *   "l2norm" (NULL, MATLAB's default): each entry whose L2 norm exceeds
 *       threshold is scaled to norm threshold;
 *   "global-l2norm": when the L2 norm of all entries together, L, exceeds
 *       threshold, every entry is scaled by threshold / L (L summed in
 *       double; the entries may mix single and double);
 *   "absolute-value": each element is clamped to [-threshold, threshold].
 * Norms are taken of each entry divided by its largest magnitude, so a
 * single gradient whose squares would overflow (elements past 1.8e19) or
 * flush to 0 (below 1e-23) is still scaled to the threshold; an Inf
 * element makes the norm Inf (finite elements scaled to 0, the Inf to
 * NaN), a NaN one leaves the entries unscaled (with "global-l2norm" all
 * of them), the NaN in place.
 * Done with ops (no read on the host), so it can be recorded in a trace.
 * threshold > 0 (an infinite one copies the gradients). */
DLA_API dla_status dla_clip_gradients(int n, dla_tensor *const *grads, const char *method,
                                      double threshold, dla_tensor **out);

/* ------------------------------------------------ learning-rate schedules */

/* trainingOptions LearnRateSchedule and its parameters: MATLAB's (R2024b)
 * learning-rate schedule objects. Each schedule counts its own steps k = 0,
 * 1, ... in its frequency_unit, from where it starts (the start of training,
 * or where the schedule before it in a list ended); its factor times the
 * initial rate is the rate. */
typedef struct dla_learn_rate_schedule {
    /* NULL or "none": constant;
     * "piecewise": drop_factor^floor(k / drop_period) (piecewiseLearnRate);
     * "exponential": drop_factor^(k / drop_period), the same drop spread
     *     smoothly over the steps (exponentialLearnRate);
     * "cosine": final + (initial - final) * (1 + cos(pi * t)) / 2, t the
     *     fraction of the current period done; a period of `period` steps,
     *     each next one period_growth_factor times longer, restarting at the
     *     initial factor (cosineLearnRate, warm restarts; LearnRateSchedule
     *     "cosine" is one period over the whole training);
     * "polynomial": final + (initial - final) * (1 - k / period)^power for
     *     k < period, then final (polynomialLearnRate; it ends after period
     *     steps);
     * "cyclical": from 1 up to max_factor in a straight line over the first
     *     step_ratio of a period of `period` steps, back down toward 1 over
     *     the rest, again each period (cyclicalLearnRate);
     * "warmup": initial + (final - initial) * min(k + 1, period) / period,
     *     so the last of its `period` steps has the final factor
     *     (warmupLearnRate; it ends after period steps);
     * "custom": fn below. */
    const char *method;
    /* LearnRateDropFactor in [0, 1]: 0 means the default 0.1 (zeroed
     * structs keep meaning MATLAB's defaults), so a drop to 0 itself is
     * asked for with a negative number, as trainingOptions' other "zero
     * is also a value" fields (train.h). */
    double drop_factor;
    /* steps; 0: 10 (LearnRateDropPeriod, Period); >= 0. "piecewise" and
     * "exponential" also take their Period from `period` below (as the
     * other schedule objects do) when this is 0; both set must agree. */
    int drop_period;
    /* A linear warm-up over the first warmup_iterations iterations of
     * training (0: none), from warmup_start_factor (0 by default, >= 0)
     * times the rate to the full rate, MULTIPLYING the schedule of the
     * epoch (dlaccel's form, kept). MATLAB's form is a list,
     * {"warmup", schedule}: method "warmup" with `next` below. For method
     * "warmup", warmup_start_factor is its InitialFactor. */
    int warmup_iterations;
    double warmup_start_factor;
    /* FinalFactor: "cosine", "polynomial" (>= 0, 0 by default) and
     * "warmup" (> 0; 0: 1). period: the steps of one period ("cosine",
     * "cyclical": Period) or of the whole schedule ("polynomial",
     * "warmup": NumSteps); >= 0; 0: for "cosine" and "polynomial" the whole
     * training (MaxEpochs epochs, or MaxEpochs times the iterations of an
     * epoch; dla_training_options_resolve fills in MaxEpochs for the epoch
     * unit), for "cyclical" 10, for "warmup" 5. power: "polynomial"'s
     * Power, > 0 (0: 1, linear). */
    double final_factor;
    int period;
    double power;
    /* A schedule of one's own (MATLAB's function handle schedule): with
     * method NULL, "none" or "custom", fn(ctx, initial, epoch, iteration)
     * gives the rate (the warm-up still multiplies it). A value negative or
     * not finite is refused: dla_learn_rate_at gives NAN, and trainnet
     * stops with the error. */
    double (*fn)(void *ctx, double initial, int epoch, int iteration);
    void *fn_ctx;
    /* FrequencyUnit: NULL, "epoch" (each iteration of an epoch has the same
     * rate; the default, but for "warmup", whose default is "iteration") or
     * "iteration" (a step every iteration). */
    const char *frequency_unit;
    /* InitialFactor of "cosine" and "polynomial": finite, >= 0 (0: 1). */
    double initial_factor;
    /* "cosine"'s PeriodGrowthFactor: finite, >= 1 (0: 1, periods alike). */
    double period_growth_factor;
    /* "cyclical": MaxFactor, finite and > 0 (0: 5), and StepRatio, the
     * share of a period spent rising, in (0, 1) (0: 0.5). */
    double max_factor;
    double step_ratio;
    /* The schedule that takes over when this one ends (MATLAB's cell array
     * of schedules, {s1, s2, ...}): only "warmup" and "polynomial" end;
     * NULL: this one's last value holds. It starts counting its own steps
     * at the step after this one's last; a schedule counted in epochs that
     * takes over within an epoch counts that epoch as its first. At most
     * 64 schedules in a list. */
    const struct dla_learn_rate_schedule *next;
} dla_learn_rate_schedule;

/* The learning rate for epoch (1-based) and iteration (1-based, counted
 * over all epochs): initial times the factor of the schedule of the list s
 * whose turn it is (above), times dlaccel's warm-up factor start + (1 -
 * start) * iteration / warmup_iterations while iteration <
 * warmup_iterations. s may be NULL (constant). An unknown method or
 * frequency_unit, a negative drop_period or period, a warmup_start_factor
 * negative or not finite, for "piecewise" and "exponential" a drop_factor
 * above 1 or NaN, for "cosine" and "polynomial" a period of 0 (unknown
 * here: see dla_learn_rate_in_training) or a factor negative or not
 * finite, for "polynomial" a power negative or not finite, for "cosine" a
 * period_growth_factor below 1, for "cyclical" a max_factor not positive
 * or a step_ratio outside (0, 1), gives NAN and sets dla_last_error(); so
 * does a list that needs the iterations of an epoch (an "iteration"
 * schedule after an "epoch" one that ended, or the reverse). */
DLA_API double dla_learn_rate_at(const dla_learn_rate_schedule *s, double initial, int epoch,
                                 int iteration);
/* dla_learn_rate_at as trainnet sees it: iterations_per_epoch (0:
 * unknown) places the start of a schedule of a list counted in the other
 * unit, and max_epochs (0: unknown) is the whole training of a "cosine" or
 * "polynomial" period of 0. */
DLA_API double dla_learn_rate_in_training(const dla_learn_rate_schedule *s, double initial,
                                          int epoch, int iteration,
                                          long long iterations_per_epoch, int max_epochs);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_OPTIM_H */

/*
 * optim.c - the optimizer steps (sgdmupdate, adamupdate, rmspropupdate)
 * and dlupdate. Every step computes all new values in a scope of its own
 * and keeps a reference to each before it closes, then swaps them in: an
 * error anywhere leaves every list as it was.
 */
#include "nn/nn.h"
#include "nn/optim_impl.h"

#include <math.h>
#include <string.h>

dla_status dla__optim_mismatch(const char *fn, int i, const dla_tensor *p, const char *what,
                               const dla_tensor *v)
{
    int64_t a[DLA_MAX_DIMS], b[DLA_MAX_DIMS];
    char sa[96], sb[96];
    /* A state left on the cpu when the parameters moved to another device
     * (dla_net_to_device in the middle of a loop) failed inside the step
     * as "dla_sub: arguments a and b are on cpu:0 and opencl:0", naming
     * neither the entry nor which list. */
    if (dla_tensor_device(p) != dla_tensor_device(v))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: entry %d: the parameter is on %s, its "
                            "%s on %s; move it with dla_tensor_to_device", fn, i,
                            dla_device_name(dla_tensor_device(p)), what,
                            dla_device_name(dla_tensor_device(v)));
    if (!dla__same_dims(p, v)) {
        dla__dims_text(dla_tensor_dims(p, a), a, sa, sizeof sa);
        dla__dims_text(dla_tensor_dims(v, b), b, sb, sizeof sb);
        return dla__nn_fail(DLA_ERR_SHAPE, "%s: entry %d: the parameter is %s, its %s %s", fn, i,
                            sa, what, sb);
    }
    return dla__nn_fail(DLA_ERR_DTYPE, "%s: entry %d: the parameter is %s, its %s %s", fn, i,
                        dla_dtype_name(dla_tensor_dtype(p)), what,
                        dla_dtype_name(dla_tensor_dtype(v)));
}

/* Checks an optimizer state list (velocity, averages): each entry NULL
 * (zeros) or of its parameter's dims and dtype. Broadcasting a 1x1 or a
 * 3x1 velocity to the parameter would give a silently wrong step. */
static dla_status check_state(const char *fn, int n, dla_tensor *const *params,
                              dla_tensor *const *state, const char *what)
{
    for (int i = 0; i < n; i++) {
        const dla_tensor *p = params[i], *v = state[i];
        if (!v)
            continue;
        if (dla_tensor_status(v) != DLA_OK)
            return dla__nn_fail(dla_tensor_status(v), "%s: entry %d: the %s is %s", fn, i + 1, what,
                                dla_tensor_error(v));
        if (!dla__same_dims(p, v) || dla_tensor_dtype(p) != dla_tensor_dtype(v) ||
            dla_tensor_device(p) != dla_tensor_device(v))
            return dla__optim_mismatch(fn, i + 1, p, what, v);
    }
    return DLA_OK;
}

dla_status dla__optim_check_lists(const char *fn, int n, dla_tensor *const *params,
                                  dla_tensor *const *grads)
{
    if (n < 0 || (n && (!params || !grads)))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d entr%s with a NULL list", fn, n,
                            n == 1 ? "y" : "ies");
    for (int i = 0; i < n; i++) {
        const dla_tensor *p = params[i], *g = grads[i];
        if (!p || !g || dla_tensor_status(p) != DLA_OK || dla_tensor_status(g) != DLA_OK)
            return dla__nn_fail(!p || !g ? DLA_ERR_INVALID_ARGUMENT
                                : dla_tensor_status(g) != DLA_OK ? dla_tensor_status(g)
                                                                 : dla_tensor_status(p),
                                "%s: entry %d: the %s is %s", fn, i + 1,
                                !p || dla_tensor_status(p) != DLA_OK ? "parameter" : "gradient",
                                !p ? "NULL" : !g ? "NULL"
                                : dla_tensor_status(p) != DLA_OK ? dla_tensor_error(p)
                                                                 : dla_tensor_error(g));
        /* The same dims, not only the same count: a 4x3 gradient of a
         * 3x4 parameter reshaped would update the wrong elements. */
        if (!dla__same_dims(p, g) || dla_tensor_dtype(p) != dla_tensor_dtype(g) ||
            dla_tensor_device(p) != dla_tensor_device(g))
            return dla__optim_mismatch(fn, i + 1, p, "gradient", g);
    }
    return DLA_OK;
}

dla_tensor *dla__optim_like(dla_tensor *g, dla_tensor *p)
{
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(p, dims);
    int64_t gd[DLA_MAX_DIMS];
    int gn = dla_tensor_dims(g, gd);
    if (gn == nd && !memcmp(gd, dims, sizeof *dims * (size_t)nd) &&
        !strcmp(dla_tensor_format(g), dla_tensor_format(p)))
        return g;
    return dla_reshape(g, dla_tensor_format(p), nd, dims);
}

/* decay * s + (1 - decay) * x, where an empty state s is zeros: then
 * (1 - decay) * x alone. Zeros made here would be on the current device,
 * not the parameter's: a network's learnables moved with
 * dla_net_to_device failed their first step ("dla_add: arguments a and b
 * are on cpu:0 and testmem:0"). */
static dla_tensor *decayed(dla_tensor *s, double decay, dla_tensor *x)
{
    dla_tensor *fresh = dla_affine(x, 1 - decay, 0);
    return s ? dla_add(dla_affine(s, decay, 0), fresh) : fresh;
}

/* Swaps k lists' new values in (or drops them on failure). */
static dla_status commit(const char *fn, int n, int k, dla_tensor ***lists, dla_tensor **next,
                         dla_status st)
{
    for (int j = 0; j < k; j++)
        for (int i = 0; i < n; i++) {
            dla_tensor *v = next[j * n + i];
            if (st == DLA_OK && dla_tensor_status(v) != DLA_OK) {
                st = dla_tensor_status(v);
                dla__nn_fail(st, "%s: entry %d: %s", fn, i + 1, dla_tensor_error(v));
            }
        }
    for (int j = 0; j < k; j++)
        for (int i = 0; i < n; i++) {
            dla_tensor *v = next[j * n + i];
            if (st != DLA_OK) {
                dla_tensor_release(v);
                continue;
            }
            dla_tensor_release(lists[j][i]);
            lists[j][i] = v;
        }
    dla__nn_free(next);
    return st;
}

/* zero_rate_note: a learning rate of 0 leaves everything as it is, the
 * velocity and the moving averages too, as MathWorks' sgdmupdate.m,
 * adamupdate.m and rmspropupdate.m short-circuit a zero rate (and their
 * trainNetwork solvers skip a parameter whose rate is 0). Updating the
 * state anyway (a momentum decaying the velocity, the first gradient
 * entering Adam's averages at a warm-up's rate of 0) changed every later
 * step from MATLAB's. The arguments are still checked. */
DLA_API dla_status dla_sgdmupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **velocity, double learn_rate, double momentum)
{
    static const char fn[] = "dla_sgdmupdate";
    dla_status st = dla__optim_check_lists(fn, n, params, grads);
    if (st != DLA_OK)
        return st;
    if (n && !velocity)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument velocity is NULL", fn);
    if ((st = check_state(fn, n, params, velocity, "velocity")) != DLA_OK)
        return st;
    /* An infinite rate (a schedule that divided by zero) made every
     * parameter inf or NaN in silence. */
    if (!(learn_rate >= 0) || isinf(learn_rate) || !(momentum >= 0 && momentum <= 1))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: learnRate %g must be finite and >= 0 "
                            "and momentum %g in [0, 1]", fn, learn_rate, momentum);
    if (learn_rate == 0)
        return DLA_OK; /* see zero_rate_note */
    dla_tensor **next = dla__nn_calloc((size_t)(2 * n), sizeof *next);
    if (!next)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *g = dla__optim_like(grads[i], params[i]);
        dla_tensor *v = velocity[i] ? dla_sub(dla_affine(velocity[i], momentum, 0),
                                              dla_affine(g, learn_rate, 0))
                                    : dla_affine(g, -learn_rate, 0);
        next[i] = dla_tensor_retain(dla_add(params[i], v));
        next[n + i] = dla_tensor_retain(v);
    }
    dla_scope_end();
    return commit(fn, n, 2, (dla_tensor **[]){params, velocity}, next, DLA_OK);
}

DLA_API dla_status dla_adamupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                  dla_tensor **avg_grad, dla_tensor **avg_sq_grad, int iteration,
                                  double learn_rate, double grad_decay, double sq_grad_decay,
                                  double epsilon)
{
    static const char fn[] = "dla_adamupdate";
    dla_status st = dla__optim_check_lists(fn, n, params, grads);
    if (st != DLA_OK)
        return st;
    if (n && (!avg_grad || !avg_sq_grad))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                            avg_grad ? "avg_sq_grad" : "avg_grad");
    if ((st = check_state(fn, n, params, avg_grad, "avg_grad")) != DLA_OK ||
        (st = check_state(fn, n, params, avg_sq_grad, "avg_sq_grad")) != DLA_OK)
        return st;
    if (iteration < 1 || !(learn_rate >= 0) || isinf(learn_rate) ||
        !(grad_decay >= 0 && grad_decay < 1) || !(sq_grad_decay >= 0 && sq_grad_decay < 1) ||
        !(epsilon > 0) || isinf(epsilon))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: iteration %d must be >= 1, learnRate %g "
                            "finite and >= 0, gradDecay %g and sqGradDecay %g in [0, 1), epsilon "
                            "%g finite and > 0", fn, iteration, learn_rate, grad_decay,
                            sq_grad_decay, epsilon);
    if (learn_rate == 0)
        return DLA_OK; /* see zero_rate_note */
    double step = learn_rate * sqrt(1 - pow(sq_grad_decay, iteration)) /
                  (1 - pow(grad_decay, iteration));
    dla_tensor **next = dla__nn_calloc((size_t)(3 * n), sizeof *next);
    if (!next)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *g = dla__optim_like(grads[i], params[i]);
        dla_tensor *m = decayed(avg_grad[i], grad_decay, g);
        dla_tensor *v = decayed(avg_sq_grad[i], sq_grad_decay, dla_square(g));
        dla_tensor *upd = dla_div(m, dla_affine(dla_sqrt(v), 1, epsilon));
        next[i] = dla_tensor_retain(dla_sub(params[i], dla_affine(upd, step, 0)));
        next[n + i] = dla_tensor_retain(m);
        next[2 * n + i] = dla_tensor_retain(v);
    }
    dla_scope_end();
    return commit(fn, n, 3, (dla_tensor **[]){params, avg_grad, avg_sq_grad}, next, DLA_OK);
}

DLA_API dla_status dla_rmspropupdate(int n, dla_tensor **params, dla_tensor *const *grads,
                                     dla_tensor **avg_sq_grad, double learn_rate,
                                     double sq_grad_decay, double epsilon)
{
    static const char fn[] = "dla_rmspropupdate";
    dla_status st = dla__optim_check_lists(fn, n, params, grads);
    if (st != DLA_OK)
        return st;
    if (n && !avg_sq_grad)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument avg_sq_grad is NULL", fn);
    if ((st = check_state(fn, n, params, avg_sq_grad, "avg_sq_grad")) != DLA_OK)
        return st;
    /* An infinite epsilon divided every step to 0: the parameters never
     * moved, and the update said DLA_OK. */
    if (!(learn_rate >= 0) || isinf(learn_rate) || !(sq_grad_decay >= 0 && sq_grad_decay < 1) ||
        !(epsilon > 0) || isinf(epsilon))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: learnRate %g must be finite and >= 0, "
                            "sqGradDecay %g in [0, 1), epsilon %g finite and > 0", fn, learn_rate,
                            sq_grad_decay, epsilon);
    if (learn_rate == 0)
        return DLA_OK; /* see zero_rate_note */
    dla_tensor **next = dla__nn_calloc((size_t)(2 * n), sizeof *next);
    if (!next)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *g = dla__optim_like(grads[i], params[i]);
        dla_tensor *v = decayed(avg_sq_grad[i], sq_grad_decay, dla_square(g));
        dla_tensor *upd = dla_div(g, dla_affine(dla_sqrt(v), 1, epsilon));
        next[i] = dla_tensor_retain(dla_sub(params[i], dla_affine(upd, learn_rate, 0)));
        next[n + i] = dla_tensor_retain(v);
    }
    dla_scope_end();
    return commit(fn, n, 2, (dla_tensor **[]){params, avg_sq_grad}, next, DLA_OK);
}

DLA_API dla_status dla_dlupdate(dla_update_fn f, void *ctx, int n, dla_tensor **params, int nextra,
                                dla_tensor *const *const *extra)
{
    static const char fn[] = "dla_dlupdate";
    if (!f || n < 0 || (n && !params) || nextra < 0 || nextra > 15 || (nextra && !extra))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: invalid arguments (fn %s, %d entries, %d "
                            "extra lists)", fn, f ? "set" : "NULL", n, nextra);
    for (int j = 0; j < nextra; j++)
        if (!extra[j])
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: extra list %d is NULL", fn, j + 1);
    dla_tensor **next = dla__nn_calloc((size_t)(n ? n : 1), sizeof *next);
    if (!next)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    dla_status st = DLA_OK;
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *args[16];
        args[0] = params[i];
        for (int j = 0; j < nextra; j++)
            args[1 + j] = extra[j][i];
        dla_tensor *v = f(ctx, 1 + nextra, args);
        if (!v) {
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the function returned NULL for entry "
                              "%d", fn, i + 1);
            break;
        }
        next[i] = dla_tensor_retain(v);
    }
    dla_scope_end();
    return commit(fn, n, 1, (dla_tensor **[]){params}, next, st);
}

DLA_API void dla_optim_free(int n, dla_tensor **state)
{
    for (int i = 0; state && i < n; i++) {
        dla_tensor_release(state[i]);
        state[i] = NULL;
    }
}

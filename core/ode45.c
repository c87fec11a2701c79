/*
 * ode45.c - dla_ode45, MATLAB's dlode45: y' = f(t, y, theta) solved by the
 * Dormand-Prince (4,5) pair with ode45's error control.
 *
 * Every stage is built from differentiable ops (affine, add and the user's
 * function), so under dla_feval the solve is recorded like any model code
 * and "direct" gradients, higher derivatives and replays are the ops'.
 * Only the error test is outside the tape: its norm is read on the host
 * to choose the next step, and a step size is a constant to the gradient.
 *
 * The steps march towards the last requested time, as ode45's do, and the
 * times before it are read off each step's continuous extension (a
 * combination of its stages, so differentiable too).
 *
 * Each attempt runs in a scope of its own, so a long solve holds the
 * handles of two states (y and its slope, which the pair reuses as the
 * next step's first stage) and of the outputs, not of every stage; the
 * tape keeps what the gradient needs.
 */
#include "core/alloc.h"
#include "core/ode45.h"

#include "core/error.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <dlaccel.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char OP[] = "dla_ode45";

/* Dormand and Prince (1980): the nodes, the stage weights (row s gives
 * stage s + 1 from stages 0..s; the last row is the fifth-order solution,
 * whose slope is the next step's first stage) and the weights of the
 * difference between the fifth- and fourth-order solutions. */
static const double NODE[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
static const double WEIGHT[6][6] = {
    {1.0 / 5},
    {3.0 / 40, 9.0 / 40},
    {44.0 / 45, -56.0 / 15, 32.0 / 9},
    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
static const double ERROR_WEIGHT[7] = {71.0 / 57600,      0,          -71.0 / 16695, 71.0 / 1920,
                                       -17253.0 / 339200, 22.0 / 525, -1.0 / 40};

/* The pair's continuous extension (Shampine 1986, ode45's interpolant):
 * y(t + s h) = y + h * sum_i k_i * sum_j INTERP[i][j] s^(j + 1); at s = 1
 * it is the last row of WEIGHT. */
static const double INTERP[7][4] = {
    {1, -183.0 / 64, 37.0 / 12, -145.0 / 128},
    {0, 0, 0, 0},
    {0, 1500.0 / 371, -1000.0 / 159, 1000.0 / 371},
    {0, -125.0 / 32, 125.0 / 12, -375.0 / 64},
    {0, 9477.0 / 3392, -729.0 / 106, 25515.0 / 6784},
    {0, -11.0 / 7, 11.0 / 3, -55.0 / 28},
    {0, 3.0 / 2, -4, 5.0 / 2},
};

typedef struct solver {
    dla_ode_function fn;
    void *ctx;
    int ntheta;
    dla_tensor *const *theta;
    dla_ode_stats stats;
    double rtol, threshold; /* ode45's: absolute / relative tolerance */
} solver;

/* ode45's smallest step at t: 16 units in the last place of t. */
static double min_step(double t)
{
    const double a = fabs(t);
    return 16 * (nextafter(a, INFINITY) - a);
}

/* y + h * sum of a[j] k[j] over j < n (y NULL: the sum alone). */
static dla_tensor *combine(dla_tensor *y, double h, int n, const double *a, dla_tensor *const *k)
{
    dla_tensor *acc = NULL;
    for (int j = 0; j < n; j++) {
        if (a[j] == 0)
            continue;
        dla_tensor *term = dla_affine(k[j], h * a[j], 0);
        acc = acc ? dla_add(acc, term) : term;
    }
    return y ? dla_add(y, acc) : acc;
}

/* The solution at t + s h inside an accepted step from y with stages k. */
static dla_tensor *interpolate(dla_tensor *y, double h, double sf, dla_tensor *const *k)
{
    double b[7];
    for (int i = 0; i < 7; i++)
        b[i] = sf * (INTERP[i][0] + sf * (INTERP[i][1] + sf * (INTERP[i][2] + sf * INTERP[i][3])));
    return combine(y, h, 7, b, k);
}

/* fn at (t, y), checked: an error tensor (fn's own, or one naming what is
 * wrong with its result) when it cannot be used. */
static dla_tensor *slope(solver *s, double t, dla_tensor *y)
{
    s->stats.evaluations++;
    dla_tensor *f = s->fn(t, y, s->ntheta, s->theta, s->ctx);
    if (!f)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: the function returned NULL at t = %.17g (return a tensor, or an "
                          "error tensor to stop)",
                          OP, t);
    if (dla_tensor_status(f) != DLA_OK)
        return f;
    char yb[DLA__DIMS_BUF], fb[DLA__DIMS_BUF];
    /* y's dims, trailing ones aside (a 5-vector's slope may be 5x1). */
    int same = 1;
    const int nd = dla_tensor_ndims(y) > dla_tensor_ndims(f) ? dla_tensor_ndims(y)
                                                              : dla_tensor_ndims(f);
    for (int d = 1; d <= nd; d++)
        same &= dla_tensor_dim(y, d) == dla_tensor_dim(f, d);
    if (dla_tensor_dtype(f) != dla_tensor_dtype(y))
        return dla__error(DLA_ERR_DTYPE,
                          "%s: the function returned %s %s at t = %.17g, but y is %s %s: the "
                          "slope must have y's dtype",
                          OP, dla__tensor_dims_str(f, fb, sizeof fb),
                          dla_dtype_name(dla_tensor_dtype(f)), t,
                          dla__tensor_dims_str(y, yb, sizeof yb),
                          dla_dtype_name(dla_tensor_dtype(y)));
    if (!same)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: the function returned %s at t = %.17g, but y is %s: the slope "
                          "must have y's dims",
                          OP, dla__tensor_dims_str(f, fb, sizeof fb), t,
                          dla__tensor_dims_str(y, yb, sizeof yb));
    /* Other labels failed later, in a stage's sum, as 'dla_add: arguments
     * a and b have formats "CB" and "SB"', naming neither the solver nor
     * the function. An unformatted slope takes y's labels (and a labeled
     * slope of an unformatted y gives it its labels, as a sum does). */
    const char *ff = dla_tensor_format(f), *yf = dla_tensor_format(y);
    if (ff[0] && yf[0] && strcmp(ff, yf) != 0)
        return dla__error(DLA_ERR_FORMAT,
                          "%s: the function returned a slope formatted \"%s\" at t = %.17g, but "
                          "y is \"%s\": the slope must have y's format (or none)",
                          OP, ff, t, yf);
    return f;
}

/* The largest of |num| ./ max(den, threshold) over every element, read on
 * the host (NaN when any is NaN; 0 when there are none, as MATLAB's
 * norm([], inf): the max of an empty tensor is empty, whose item read as
 * NaN, and a y0 of no elements, a batch of no observations, failed with
 * "the step fell to 7.9e-323 ... not finite"). Not recorded: no gradient
 * goes through the choice of a step. */
static double scaled_max(const solver *s, dla_tensor *num, dla_tensor *den)
{
    if (dla_tensor_numel(num) == 0)
        return 0;
    dla__recording_pause();
    /* max(den, threshold) from den's own ops, so that it stays on y's
     * device with no constant tensor: relu(den - thr) + thr. */
    dla_tensor *floor = dla_affine(dla_relu(dla_affine(den, 1, -s->threshold)), 1, s->threshold);
    const double v = dla_tensor_item(dla_max(dla_div(dla_abs(num), floor), 0, NULL), 0);
    dla__recording_resume();
    return v;
}

/* Whether y and its slope f hold only finite numbers (the largest
 * magnitudes, read on the host; max keeps a NaN). Not recorded. */
static int finite_state(dla_tensor *y, dla_tensor *f)
{
    double v[2] = {0, 0};
    dla__recording_pause();
    dla_scope_begin();
    dla_tensor *t[2] = {y, f};
    for (int i = 0; i < 2; i++)
        if (dla_tensor_numel(t[i]) > 0)
            v[i] = dla_tensor_item(dla_max(dla_abs(t[i]), 0, NULL), 0);
    dla_scope_end();
    dla__recording_resume();
    return isfinite(v[0]) && isfinite(v[1]);
}

/* ode45's first step when none is given: from the slope at t0, scaled by
 * the solution, bounded by hmax and by the distance to the first time
 * requested, |tspan[1] - tspan[0]| (MathWorks' ode45.m takes odearguments'
 * htspan = abs(tspan(2) - tspan(1)), not the whole interval: with a slope
 * of 0 at t0 and tspan = [0 1e-3 10] it starts at 1e-3, not at hmax = 1). */
static double first_step(const solver *s, dla_tensor *y0, dla_tensor *f0, double hmax,
                         double htspan)
{
    double absh = fmin(hmax, htspan);
    const double rh = scaled_max(s, f0, dla_abs(y0)) / (0.8 * pow(s->rtol, 0.2));
    if (absh * rh > 1)
        absh = 1 / rh;
    return absh;
}

static dla_tensor *check_args(dla_ode_function fn, int nt, const double *tspan, dla_tensor *y0,
                              int ntheta, dla_tensor *const *theta, const dla_ode_options *o)
{
    if (!fn)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument fn is NULL", OP);
    if (!y0 || dla_tensor_status(y0) != DLA_OK)
        return dla__pass_arg(OP, "y0", y0);
    if (ntheta < 0 || (ntheta > 0 && !theta))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument theta: %d tensors%s; give ntheta >= 0 tensors", OP,
                          ntheta, theta ? "" : " at NULL");
    for (int i = 0; i < ntheta; i++)
        if (!theta[i] || dla_tensor_status(theta[i]) != DLA_OK) {
            char arg[32];
            snprintf(arg, sizeof arg, "theta[%d]", i);
            return dla__pass_arg(OP, arg, theta[i]);
        }
    const dla_dtype dt = dla_tensor_dtype(y0);
    if (dt != DLA_F32 && dt != DLA_F64)
        return dla__error(DLA_ERR_DTYPE, "%s: argument y0 is %s; the solver takes single or double",
                          OP, dla_dtype_name(dt));
    if (nt < 2 || !tspan)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument tspan: %d times%s; it needs at least two, the start "
                          "and the end",
                          OP, nt, tspan ? "" : " at NULL");
    const double dir = tspan[nt - 1] > tspan[0] ? 1 : -1;
    for (int i = 0; i < nt; i++) {
        if (!isfinite(tspan[i]))
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument tspan: tspan[%d] is %g",
                              OP, i, tspan[i]);
        if (i > 0 && !(dir * (tspan[i] - tspan[i - 1]) > 0))
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument tspan: tspan[%d] = %.17g after tspan[%d] = %.17g; "
                              "the times must be strictly increasing or strictly decreasing",
                              OP, i, tspan[i], i - 1, tspan[i - 1]);
    }
    /* Times more than DBL_MAX apart (-1e308 to 1e308) made the span
     * infinite: every step was inf, rejected and halved to inf again, and
     * the solve never returned. */
    if (!isfinite(tspan[nt - 1] - tspan[0]))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument tspan: from %.17g to %.17g is further than the largest "
                          "double; the solver cannot measure its steps",
                          OP, tspan[0], tspan[nt - 1]);
    if (nt > 2 && dla_tensor_find_dim(y0, 'T'))
        return dla__error(DLA_ERR_FORMAT,
                          "%s: argument y0 (\"%s\") has a \"T\" dim, which the %d requested "
                          "times would need for themselves; give two times, or a y0 "
                          "without \"T\"",
                          OP, dla_tensor_format(y0), nt - 1);
    if (nt > 2) {
        int nd;
        char fmt[DLA_MAX_DIMS + 2];
        dla__ode45_time_dim(y0, &nd, fmt);
        if (nd + 1 > DLA_MAX_DIMS)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument y0 has %d dims; the times would make %d, past "
                              "DLA_MAX_DIMS (%d)",
                              OP, nd, nd + 1, DLA_MAX_DIMS);
    }
    if (!o)
        return NULL;
    const struct {
        const char *name;
        double v;
    } positive[] = {{"relative_tolerance", o->relative_tolerance},
                    {"absolute_tolerance", o->absolute_tolerance},
                    {"initial_step", o->initial_step},
                    {"max_step", o->max_step}};
    for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
        if (!(positive[i].v >= 0) || isinf(positive[i].v))
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: option %s is %g; it must be positive and finite (0: the "
                              "default)",
                              OP, positive[i].name, positive[i].v);
    /* A max_step below ode45's smallest step (16 eps(t)) did not move t
     * at all (1e-300 from t = 1: t + h == t) and the solve never returned;
     * the largest |t| has the largest smallest step. */
    const double tmax = fmax(fabs(tspan[0]), fabs(tspan[nt - 1]));
    if (o->max_step > 0 && o->max_step < min_step(tmax))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option max_step is %g, below the smallest step the solver takes "
                          "at t = %.17g (16 eps(t) = %g): it could not advance",
                          OP, o->max_step, tmax, min_step(tmax));
    if (o->max_steps < 0)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option max_steps is %lld; 0 is no limit", OP,
                          (long long)o->max_steps);
    if (o->gradient_mode && strcmp(o->gradient_mode, "direct") != 0 &&
        strcmp(o->gradient_mode, "adjoint") != 0)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option gradient_mode \"%s\"; it is \"direct\" (or NULL) or "
                          "\"adjoint\"",
                          OP, o->gradient_mode);
    return NULL;
}

int dla__ode45_time_dim(const dla_tensor *y0, int *nd, char *fmt)
{
    const char *f = dla_tensor_format(y0);
    *nd = f[0] ? (int)strlen(f) : dla_tensor_ndims(y0);
    int at = *nd;
    fmt[0] = 0;
    if (f[0]) {
        const char *u = strchr(f, 'U');
        at = u ? (int)(u - f) : *nd;
        memcpy(fmt, f, (size_t)at);
        fmt[at] = 'T';
        strcpy(fmt + at + 1, f + at);
    }
    return at;
}

/* The solutions at the requested times joined along the time dim. */
static dla_tensor *stack_times(int n, dla_tensor **ys)
{
    int64_t dims[DLA_MAX_DIMS + 1];
    char fmt[DLA_MAX_DIMS + 2];
    int nd;
    const int at = dla__ode45_time_dim(ys[0], &nd, fmt);
    for (int d = 0; d < nd; d++)
        dims[d] = dla_tensor_dim(ys[0], d + 1);
    memmove(dims + at + 1, dims + at, sizeof(int64_t) * (size_t)(nd - at));
    dims[at] = 1;
    dla_tensor **parts = dla__malloc(sizeof *parts * (size_t)n);
    if (!parts)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: joining %d outputs", OP, n);
    for (int i = 0; i < n; i++)
        parts[i] = dla_reshape(ys[i], fmt, nd + 1, dims);
    dla_tensor *y = dla_cat(at + 1, n, parts);
    dla__free(parts);
    return y;
}

/* One solve; the outputs at tspan[1..nt-1] go to ys (+1 references each).
 * NULL on success, else the error tensor (+1, in no scope). */
static dla_tensor *integrate(solver *s, int nt, const double *tspan, dla_tensor *y0,
                             const dla_ode_options *o, dla_tensor **ys)
{
    const double dir = tspan[nt - 1] > tspan[0] ? 1 : -1;
    const double span = fabs(tspan[nt - 1] - tspan[0]);
    const double hmax = fmin(span, o->max_step > 0 ? o->max_step : 0.1 * span);
    double t = tspan[0];
    dla_tensor *y = dla_tensor_retain(y0), *f = NULL, *bad = NULL;
    int64_t attempts = 0;
    double absh = 0;

    if (dla_scope_begin() != DLA_OK) {
        bad = dla_tensor_retain(dla__error(DLA_ERR_STATE, "%s: no scope left to open", OP));
        dla_scope_end();
        dla_tensor_release(y);
        return bad;
    }
    f = slope(s, t, y);
    if (dla_tensor_status(f) == DLA_OK)
        absh = o->initial_step > 0 ? fmin(hmax, o->initial_step) : first_step(s, y, f, hmax, fabs(tspan[1] - tspan[0]));
    dla_tensor_retain(f);
    dla_scope_end();
    if (dla_tensor_status(f) != DLA_OK) {
        dla_tensor_release(y);
        return f;
    }

    const double tf = tspan[nt - 1];
    for (int next = 1; next < nt && !bad;) {
        const double hmin = min_step(t);
        /* hmin wins over hmax: the default hmax, a tenth of the span, is
         * below it when the times are a few units in the last place apart
         * (1 and nextafter(1)), and a step of a tenth of an ulp left t
         * where it was, forever. ode45 lets hmax win; its steps never end
         * there either. */
        absh = fmax(hmin, fmin(hmax, absh));
        int last = 0;
        if (1.1 * absh >= fabs(tf - t))
            absh = fabs(tf - t), last = 1;
        for (int nofailed = 1;;) {
            if (o->max_steps && attempts >= o->max_steps) {
                bad = dla_tensor_retain(dla__error(
                    DLA_ERR_STATE,
                    "%s: %lld attempts (option max_steps) reached t = %.17g of %.17g; the "
                    "problem may be stiff, or the tolerances too tight",
                    OP, (long long)attempts, t, tf));
                break;
            }
            attempts++;
            const double h = last ? tf - t : dir * absh;
            if (dla_scope_begin() != DLA_OK) {
                bad = dla_tensor_retain(dla__error(DLA_ERR_STATE, "%s: no scope left to open", OP));
                dla_scope_end();
                break;
            }
            dla_tensor *k[7] = {f};
            for (int st = 1; st < 6 && !bad; st++) {
                dla_tensor *yst = combine(y, h, st, WEIGHT[st - 1], k);
                k[st] = dla_tensor_status(yst) == DLA_OK ? slope(s, t + NODE[st] * h, yst) : yst;
                if (dla_tensor_status(k[st]) != DLA_OK)
                    bad = dla_tensor_retain(k[st]);
            }
            const double tnew = last ? tf : t + h;
            dla_tensor *ynew = NULL;
            if (!bad) {
                ynew = combine(y, h, 6, WEIGHT[5], k);
                k[6] = dla_tensor_status(ynew) == DLA_OK ? slope(s, tnew, ynew) : ynew;
                if (dla_tensor_status(k[6]) != DLA_OK)
                    bad = dla_tensor_retain(k[6]);
            }
            double err = NAN;
            if (!bad) {
                dla__recording_pause();
                dla_tensor *e = combine(NULL, 1, 7, ERROR_WEIGHT, k);
                dla_tensor *size = dla_max2(dla_abs(y), dla_abs(ynew));
                err = absh * scaled_max(s, e, size);
                dla__recording_resume();
            }
            if (bad) {
                dla_scope_end();
                break;
            }
            if (!(err <= s->rtol)) { /* rejected, NaN included */
                dla_scope_end();
                s->stats.failed++;
                /* Where the solution or its slope at t is not finite (a NaN
                 * y0 or theta: training that diverged), no smaller step can
                 * help; halving to 16 eps(t) took about 1070 attempts from
                 * t = 0, six calls of fn each, all of them on the tape
                 * (gigabytes for a small network) before the error came. */
                if (!isfinite(err) && !finite_state(y, f)) {
                    bad = dla_tensor_retain(dla__error(
                        DLA_ERR_STATE,
                        "%s: at t = %.17g the solution or its slope is not finite (%s): "
                        "no step can meet the tolerances",
                        OP, t,
                        t == tspan[0] ? "y0, or fn(t, y0, theta) there" : "y went to inf or NaN"));
                    break;
                }
                if (absh <= hmin) {
                    bad = dla_tensor_retain(dla__error(
                        DLA_ERR_STATE,
                        "%s: at t = %.17g the step fell to %g, the smallest allowed (16 "
                        "eps(t)), without meeting the tolerances%s",
                        OP, t, absh,
                        isnan(err) ? ": the solution or its slope is not finite there" : ""));
                    break;
                }
                if (nofailed && isfinite(err))
                    absh = fmax(hmin, absh * fmax(0.1, 0.8 * pow(s->rtol / err, 0.2)));
                else
                    absh = fmax(hmin, 0.5 * absh);
                nofailed = 0, last = 0;
                continue;
            }
            /* The requested times this step passed: the step's own end, or
             * the interpolant inside it. */
            for (; next < nt && dir * (tspan[next] - tnew) <= 0; next++)
                ys[next - 1] = dla_tensor_retain(
                    tspan[next] == tnew ? ynew : interpolate(y, h, (tspan[next] - t) / h, k));
            dla_tensor_retain(ynew), dla_tensor_retain(k[6]);
            dla_scope_end();
            dla_tensor_release(y), dla_tensor_release(f);
            y = ynew, f = k[6], t = tnew;
            s->stats.steps++;
            if (nofailed) {
                const double grow = 1.25 * pow(err / s->rtol, 0.2);
                absh = grow > 0.2 ? absh / grow : 5 * absh;
            }
            break;
        }
    }
    dla_tensor_release(y), dla_tensor_release(f);
    return bad;
}

dla_tensor *dla__ode45_solve(dla_ode_function fn, void *ctx, int nt, const double *tspan,
                             dla_tensor *y0, int ntheta, dla_tensor *const *theta,
                             const dla_ode_options *o, dla_ode_stats *stats)
{
    solver s = {.fn = fn, .ctx = ctx, .ntheta = ntheta, .theta = theta};
    s.rtol = o->relative_tolerance > 0 ? o->relative_tolerance : 1e-3;
    /* ode45 raises a relative tolerance below 100 eps to that. */
    s.rtol = fmax(s.rtol, 100 * DBL_EPSILON);
    s.threshold = (o->absolute_tolerance > 0 ? o->absolute_tolerance : 1e-6) / s.rtol;

    dla_tensor **ys = dla__calloc((size_t)nt, sizeof *ys);
    if (!ys)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: %d outputs", OP, nt - 1);
    dla_tensor *bad = integrate(&s, nt, tspan, y0, o, ys);
    if (stats)
        *stats = s.stats;
    dla_tensor *out = bad ? dla_scope_adopt(bad) : nt == 2 ? dla_scope_adopt(dla_tensor_retain(ys[0]))
                                                       : stack_times(nt - 1, ys);
    for (int i = 0; i < nt; i++)
        dla_tensor_release(ys[i]);
    dla__free(ys);
    return out;
}

dla_tensor *dla_ode45(dla_ode_function fn, void *ctx, int nt, const double *tspan, dla_tensor *y0,
                      int ntheta, dla_tensor *const *theta, const dla_ode_options *opts)
{
    static const dla_ode_options defaults;
    const dla_ode_options *o = opts ? opts : &defaults;
    if (o->stats)
        memset(o->stats, 0, sizeof *o->stats);
    dla_tensor *e = check_args(fn, nt, tspan, y0, ntheta, theta, opts);
    if (e)
        return e;
    if (o->gradient_mode && strcmp(o->gradient_mode, "adjoint") == 0)
        return dla__ode45_adjoint(fn, ctx, nt, tspan, y0, ntheta, theta, o);
    return dla__ode45_solve(fn, ctx, nt, tspan, y0, ntheta, theta, o, o->stats);
}

/*
 * learn_rate.c - the learning-rate schedules (trainingOptions
 * LearnRateSchedule; MATLAB's schedule objects piecewiseLearnRate,
 * exponentialLearnRate, cosineLearnRate, polynomialLearnRate,
 * cyclicalLearnRate, warmupLearnRate, and lists of them), as a pure
 * function of the epoch and the iteration: trainnet keeps no schedule
 * state, so a resumed or replayed step gets the same rate.
 */
#include "nn/nn.h"

#include <math.h>
#include <string.h>

/* A list longer than this is taken for a loop (a `next` pointing back). */
enum { MAX_LIST = 64 };

static const char *const methods[] = {"none", "piecewise", "exponential", "cosine", "polynomial",
                                      "cyclical", "warmup", "custom", NULL};

static const char *method_of(const dla_learn_rate_schedule *s)
{
    return s->method && *s->method ? s->method : s->fn ? "custom" : "none";
}

static int is(const dla_learn_rate_schedule *s, const char *m)
{
    return !strcmp(method_of(s), m);
}

/* 1 when s counts iterations: its unit, or "warmup"'s default. */
static int counts_iterations(const dla_learn_rate_schedule *s)
{
    if (s->frequency_unit)
        return !strcmp(s->frequency_unit, "iteration");
    return is(s, "warmup");
}

/* The steps of s's period (or whole length); 0 when it is the whole
 * training and that is not known. */
static long long period_of(const dla_learn_rate_schedule *s, long long ipe, int max_epochs)
{
    if (s->period)
        return s->period;
    if (is(s, "cyclical"))
        return 10;
    if (is(s, "warmup"))
        return 5;
    if (counts_iterations(s))
        return ipe > 0 && max_epochs > 0 ? ipe * max_epochs : 0;
    return max_epochs > 0 ? max_epochs : 0;
}

/* The steps after which s hands over to the next of its list; 0: never. */
static long long length_of(const dla_learn_rate_schedule *s, long long ipe, int max_epochs)
{
    return is(s, "warmup") || is(s, "polynomial") ? period_of(s, ipe, max_epochs) : 0;
}

/* DLA_OK when s's own fields are valid; otherwise the error, naming fn
 * (the public function called, or trainingOptions' LearnRateSchedule). */
static dla_status check_one(const dla_learn_rate_schedule *s, long long ipe, int max_epochs,
                            const char *fn, int options)
{
    const char *m = method_of(s);
    int known = 0;
    for (int i = 0; methods[i] && !known; i++)
        known = !strcmp(m, methods[i]);
    if (!known)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"%s\"; use \"none\", "
                            "\"piecewise\", \"exponential\", \"cosine\", \"polynomial\", "
                            "\"cyclical\", \"warmup\" or \"custom\"", fn, m);
    if (s->fn && strcmp(m, "none") && strcmp(m, "custom"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"%s\" and a schedule "
                            "function: give one (method \"custom\" or NULL with fn)", fn, m);
    if (!strcmp(m, "custom") && !s->fn)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"custom\" needs fn", fn);
    if (s->frequency_unit && strcmp(s->frequency_unit, "epoch") &&
        strcmp(s->frequency_unit, "iteration"))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: frequency_unit \"%s\"; use \"epoch\" "
                            "or \"iteration\"", fn, s->frequency_unit);
    /* A negative period made the exponent negative (the rate grew), and a
     * negative start factor a negative rate: refused, as a bad method. */
    if (s->drop_period < 0 || !(s->warmup_start_factor >= 0))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s %g must not be negative", fn,
                            s->drop_period < 0 ? "drop_period" : "warmup_start_factor",
                            s->drop_period < 0 ? (double)s->drop_period : s->warmup_start_factor);
    if (!isfinite(s->warmup_start_factor))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                            "%s: warmup_start_factor %g must be a finite number >= 0", fn,
                            s->warmup_start_factor);
    if (s->period < 0)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: period %d must not be negative", fn,
                            s->period);
    if (!strcmp(m, "piecewise") || !strcmp(m, "exponential")) {
        /* piecewiseLearnRate's and exponentialLearnRate's Period may be
         * given in either field (drop_period: trainingOptions'
         * LearnRateDropPeriod; period: the objects' Period, as every
         * other schedule's); two different values are two answers. */
        if (s->drop_period && s->period && s->drop_period != s->period)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"%s\": drop_period %d "
                                "and period %d: both are its Period; give one", fn, m,
                                s->drop_period, s->period);
        /* NaN, or above 1 (the rate would grow each period). */
        if (!(s->drop_factor <= 1))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                                "%s: drop_factor %g must be in [0, 1] (0: the default 0.1, "
                                "negative: 0)", fn, s->drop_factor);
    }
    if (!strcmp(m, "cosine") || !strcmp(m, "polynomial")) {
        /* trainingOptions do not know an epoch's iterations: the trainer
         * does. */
        if (!period_of(s, ipe, max_epochs) && !(options && !s->period && counts_iterations(s)))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                                "%s: period 0: \"cosine\" and \"polynomial\" need the steps of a "
                                "period (positive; trainnet's 0 is the whole training%s)", fn,
                                counts_iterations(s) ? ", which needs the iterations of an epoch"
                                                     : "");
        if (!(s->final_factor >= 0) || isinf(s->final_factor) || !(s->initial_factor >= 0) ||
            isinf(s->initial_factor))
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s %g: it must be a finite number "
                                ">= 0", fn, !(s->final_factor >= 0) || isinf(s->final_factor)
                                ? "final_factor" : "initial_factor",
                                !(s->final_factor >= 0) || isinf(s->final_factor)
                                ? s->final_factor : s->initial_factor);
    }
    if (!strcmp(m, "polynomial") && (!(s->power >= 0) || isinf(s->power)))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: power %g: it must be a finite number "
                            ">= 0 (0: 1)", fn, s->power);
    /* Periods shrinking toward nothing would never be done with. */
    if (!strcmp(m, "cosine") && s->period_growth_factor != 0 &&
        !(s->period_growth_factor >= 1 && isfinite(s->period_growth_factor)))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: period_growth_factor %g: it must be a "
                            "finite number >= 1 (0: 1)", fn, s->period_growth_factor);
    if (!strcmp(m, "cyclical") && (!(s->max_factor >= 0) || isinf(s->max_factor) ||
                                   !(s->step_ratio >= 0 && s->step_ratio < 1)))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s %g: %s", fn,
                            !(s->max_factor >= 0) || isinf(s->max_factor) ? "max_factor"
                                                                          : "step_ratio",
                            !(s->max_factor >= 0) || isinf(s->max_factor) ? s->max_factor
                                                                          : s->step_ratio,
                            !(s->max_factor >= 0) || isinf(s->max_factor)
                                ? "it must be a finite number > 0 (0: 5)"
                                : "it must be in (0, 1) (0: 0.5)");
    if (!strcmp(m, "warmup") && (!(s->final_factor >= 0) || isinf(s->final_factor)))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: final_factor %g: it must be a finite "
                            "number > 0 (0: 1)", fn, s->final_factor);
    return DLA_OK;
}

/* Every schedule of the list s, and the list's length. */
static dla_status check_list(const dla_learn_rate_schedule *s, long long ipe, int max_epochs,
                             const char *fn, int options)
{
    int n = 0;
    for (const dla_learn_rate_schedule *p = s; p; p = p->next, n++) {
        if (n == MAX_LIST)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: a list of more than %d schedules "
                                "(does a `next` point back?)", fn, MAX_LIST);
        /* dlaccel's multiplying warm-up is the whole list's: on a later
         * schedule it would be ignored. */
        if (p != s && p->warmup_iterations)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: schedule %d of the list has "
                                "warmup_iterations %d; only the first one's applies (or use a "
                                "\"warmup\" schedule in the list)", fn, n + 1,
                                p->warmup_iterations);
        if (is(p, "warmup") && p->warmup_iterations)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"warmup\" and "
                                "warmup_iterations %d: give one warm-up (its steps are period)",
                                fn, p->warmup_iterations);
        dla_status st = check_one(p, ipe, max_epochs, fn, options);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

dla_status dla__learn_rate_check(const dla_learn_rate_schedule *s, int max_epochs)
{
    return check_list(s, 0, max_epochs, "LearnRateSchedule", 1);
}

/* s's factor at its step k (0-based), s checked. */
static double factor_at(const dla_learn_rate_schedule *s, long long k, long long ipe,
                        int max_epochs)
{
    const double pi = 3.14159265358979323846;
    if (is(s, "piecewise") || is(s, "exponential")) {
        /* 0: the default 0.1; negative: 0 itself. */
        const double drop = s->drop_factor == 0 ? 0.1 : s->drop_factor < 0 ? 0 : s->drop_factor;
        const int period = s->drop_period ? s->drop_period : s->period ? s->period : 10;
        /* pow(0, 0) is 1: a drop to 0 leaves the first period whole. */
        return pow(drop, is(s, "piecewise") ? (double)(k / period) : (double)k / period);
    }
    const long long period = period_of(s, ipe, max_epochs);
    if (is(s, "cosine")) {
        const double f = s->final_factor, g0 = s->initial_factor ? s->initial_factor : 1;
        const double growth = s->period_growth_factor ? s->period_growth_factor : 1;
        double t;
        if (growth == 1) {
            t = (double)(k % period) / period;
        } else {
            /* Periods of period * growth^i steps, one after another: the
             * first i periods end at period * (growth^i - 1) / (growth - 1).
             * i in closed form (a loop over the periods would take k /
             * period turns for a growth just above 1), then set right where
             * rounding put it one off. growth - 1 is exact for a growth in
             * [1, 2]; log1p and expm1 keep the digits a growth just above 1
             * would lose. */
            const double pp = (double)period, kk = (double)k, gm1 = growth - 1;
            const double lg = log1p(gm1);
            double i = floor(log1p(kk * gm1 / pp) / lg);
            if (i < 0)
                i = 0;
            double start = pp * expm1(i * lg) / gm1, len = pp * exp(i * lg);
            for (int fix = 0; fix < 4 && kk < start && i > 0; fix++) {
                i -= 1;
                len = pp * exp(i * lg);
                start -= len;
            }
            for (int fix = 0; fix < 4 && kk >= start + len; fix++) {
                start += len;
                len *= growth;
            }
            t = fmin(fmax((kk - start) / len, 0), 1);
        }
        return f + (g0 - f) * 0.5 * (1 + cos(pi * t));
    }
    if (is(s, "polynomial")) {
        const double f = s->final_factor, g0 = s->initial_factor ? s->initial_factor : 1;
        const double power = s->power ? s->power : 1;
        const double left = k >= period ? 0 : 1 - (double)k / period;
        return f + (g0 - f) * pow(left, power);
    }
    if (is(s, "cyclical")) {
        const double top = s->max_factor ? s->max_factor : 5;
        const double up = (s->step_ratio ? s->step_ratio : 0.5) * (double)period;
        const double p = (double)(k % period);
        return p < up ? 1 + (top - 1) * p / up : top - (top - 1) * (p - up) / ((double)period - up);
    }
    if (is(s, "warmup")) {
        const double g0 = s->warmup_start_factor, gn = s->final_factor ? s->final_factor : 1;
        const long long done = k + 1 < period ? k + 1 : period;
        return g0 + (gn - g0) * (double)done / (double)period;
    }
    return 1; /* "none", "custom" */
}

double dla__learn_rate_named(const char *fn, const dla_learn_rate_schedule *s, double initial,
                             int epoch, int iteration, long long iterations_per_epoch,
                             int max_epochs)
{
    if (!s)
        return initial;
    const long long ipe = iterations_per_epoch > 0 ? iterations_per_epoch : 0;
    if (check_list(s, ipe, max_epochs, fn, 0) != DLA_OK)
        return NAN;
    /* Where the schedule whose turn it may be started, in both units (-1:
     * unknown, without the iterations of an epoch). */
    long long start_epoch = 1, start_iter = 1;
    const dla_learn_rate_schedule *p = s;
    long long k;
    for (;;) {
        const int by_iter = counts_iterations(p);
        const long long start = by_iter ? start_iter : start_epoch;
        if (start < 0) {
            dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: a list of schedules that changes from "
                         "counting %s to counting %s needs the iterations of an epoch "
                         "(dla_learn_rate_in_training)", fn, by_iter ? "epochs" : "iterations",
                         by_iter ? "iterations" : "epochs");
            return NAN;
        }
        k = (by_iter ? iteration : epoch) - start;
        if (k < 0)
            k = 0;
        const long long len = length_of(p, ipe, max_epochs);
        if (!p->next || !len || k < len)
            break;
        if (by_iter) {
            start_iter += len;
            start_epoch = ipe ? (start_iter - 1) / ipe + 1 : -1;
        } else {
            start_epoch += len;
            start_iter = ipe ? (start_epoch - 1) * ipe + 1 : -1;
        }
        p = p->next;
    }
    double rate = initial * factor_at(p, k, ipe, max_epochs);
    if (p->fn) {
        rate = p->fn(p->fn_ctx, initial, epoch, iteration);
        /* A NaN or negative rate would be taken by the solver at once and
         * spoil every weight: refused here, naming where. */
        if (!(rate >= 0) || isinf(rate)) {
            dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the schedule function gave %g at epoch "
                         "%d, iteration %d; a rate must be a finite number >= 0", fn, rate, epoch,
                         iteration);
            return NAN;
        }
    }
    if (s->warmup_iterations > 0 && iteration < s->warmup_iterations) {
        double start = s->warmup_start_factor;
        rate *= start + (1 - start) * (double)(iteration > 0 ? iteration : 0) / s->warmup_iterations;
    }
    return rate;
}

DLA_API double dla_learn_rate_in_training(const dla_learn_rate_schedule *s, double initial,
                                          int epoch, int iteration,
                                          long long iterations_per_epoch, int max_epochs)
{
    return dla__learn_rate_named("dla_learn_rate_in_training", s, initial, epoch, iteration,
                                 iterations_per_epoch, max_epochs);
}

DLA_API double dla_learn_rate_at(const dla_learn_rate_schedule *s, double initial, int epoch,
                                 int iteration)
{
    return dla__learn_rate_named("dla_learn_rate_at", s, initial, epoch, iteration, 0, 0);
}

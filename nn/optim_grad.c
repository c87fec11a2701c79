/*
 * optim_grad.c - what trainnet does to gradients before a step (L2
 * regularization, clipping by norm or by value; the learning-rate
 * schedules are in learn_rate.c). Clipping is written in ops only: a norm above the threshold
 * scales by min(1, threshold / norm) computed on the device, so a
 * recorded trace stays valid for any gradient.
 */
#include "nn/nn.h"
#include "nn/optim_impl.h"

#include <float.h>
#include <math.h>
#include <string.h>

static dla_status out_all(int n, dla_tensor **out, dla_tensor **next, dla_status st)
{
    for (int i = 0; i < n; i++) {
        if (st == DLA_OK && dla_tensor_status(next[i]) != DLA_OK) {
            st = dla_tensor_status(next[i]);
            dla__nn_fail(st, "entry %d: %s", i + 1, dla_tensor_error(next[i]));
        }
    }
    for (int i = 0; i < n; i++) {
        if (st == DLA_OK) {
            out[i] = dla__nn_return(next[i]);
        } else {
            dla_tensor_release(next[i]);
            out[i] = dla__nn_error_tensor();
        }
    }
    dla__nn_free(next);
    return st;
}

DLA_API dla_status dla_l2_regularize(int n, dla_tensor *const *grads, dla_tensor *const *params,
                                     double factor, const double *l2_factors, dla_tensor **out)
{
    static const char fn[] = "dla_l2_regularize";
    /* An infinite factor made every gradient inf, and a bias's (its L2
     * factor 0) NaN from inf * 0: the next update wrote NaN weights. */
    if (n < 0 || (n && (!grads || !params || !out)) || !(factor >= 0) || isinf(factor)) {
        dla_status st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                                     "%s: %d entr%s, factor %g (finite and >= 0)", fn, n,
                                     n == 1 ? "y" : "ies", factor);
        for (int i = 0; out && i < n; i++)
            out[i] = dla__nn_error_tensor();
        return st;
    }
    /* Each gradient needs its parameter's dims, as the optimizers do: a
     * 3x4 parameter reshaped onto a 4x3 gradient would add the wrong
     * elements in silence. */
    dla_status st = dla__optim_check_lists(fn, n, (dla_tensor *const *)params, grads);
    /* The entries' own factors as the factor: a NaN one made that
     * gradient NaN, an infinite one inf, and a negative one pushed the
     * weights away from zero, each with DLA_OK (a Learnables table's
     * factors are checked when set; a list of one's own was not). */
    for (int i = 0; st == DLA_OK && l2_factors && i < n; i++)
        if (!(l2_factors[i] >= 0) || isinf(l2_factors[i]))
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: entry %d: l2_factors %g (finite and "
                              ">= 0)", fn, i + 1, l2_factors[i]);
    if (st != DLA_OK) {
        for (int i = 0; i < n; i++)
            out[i] = dla__nn_error_tensor();
        return st;
    }
    dla_tensor **next = dla__nn_calloc((size_t)(n ? n : 1), sizeof *next);
    if (!next) { /* out[] set as on every other failure */
        for (int i = 0; out && i < n; i++)
            out[i] = dla__nn_error_tensor();
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        double f = factor * (l2_factors ? l2_factors[i] : 1);
        dla_tensor *g = grads[i];
        if (f != 0) {
            int64_t dims[DLA_MAX_DIMS];
            int nd = dla_tensor_dims(g, dims);
            g = dla_add(g, dla_reshape(dla_affine(params[i], f, 0), dla_tensor_format(g), nd, dims));
        }
        next[i] = dla_tensor_retain(g);
    }
    dla_scope_end();
    return out_all(n, out, next, DLA_OK);
}

/* A one-element tensor of value in like's dtype, on like's device (a
 * fill, which a replay's plan folds into its program as one value). */
static dla_tensor *bound(double value, dla_tensor *like)
{
    dla_tensor *t = dla_full(value, dla_tensor_dtype(like), "", DLA_DIMS(1));
    if (dla_tensor_device(t) != dla_tensor_device(like))
        t = dla_tensor_to_device(t, dla_tensor_device(like));
    return t;
}

/* The sum of the squares of g / M in g's dtype, M (into *scale) g's
 * largest magnitude, so that the norm is M sqrt(sum): squares of single
 * elements past 1.8e19 were Inf, so one exploding element made the norm
 * Inf and clipping zeroed the whole entry ([3e19 4e19] clipped to 1 gave
 * [0 0], not [0.6 0.8]), the case clipping is for; and squares below
 * 1e-23 flushed to 0. M is held to the dtype's normal range, so an all-zero g
 * divides by the smallest normal (not 0) and an Inf element leaves the
 * norm Inf, as before. NaN stays NaN. */
static dla_tensor *scaled_sumsq(dla_tensor *g, dla_tensor **scale)
{
    const int single = dla_tensor_dtype(g) == DLA_F32;
    if (dla_tensor_numel(g) == 0) { /* no elements, no largest: the sum is 0 */
        *scale = bound(1, g);
        return dla_sum(dla_square(g), 0, NULL);
    }
    dla_tensor *m = dla_max(dla_abs(g), 0, NULL);
    m = dla_min2(dla_max2(m, bound(single ? FLT_MIN : DBL_MIN, m)),
                 bound(single ? FLT_MAX : DBL_MAX, m));
    *scale = m;
    return dla_sum(dla_square(dla_div(g, m)), 0, NULL);
}

/* min(1, x), 1 for x = +inf. (As 1 - relu(1 - x) it rounded: a scale
 * threshold / norm below 6e-8 in single, a norm 1.7e7 times the
 * threshold, became 1 - 1 = 0, and the gradient was zeroed, not scaled
 * to the threshold.) */
static dla_tensor *min1(dla_tensor *x) { return dla_min2(x, bound(1, x)); }

DLA_API dla_status dla_clip_gradients(int n, dla_tensor *const *grads, const char *method,
                                      double threshold, dla_tensor **out)
{
    static const char fn[] = "dla_clip_gradients";
    int m = !method || !strcmp(method, "l2norm") ? 0
            : !strcmp(method, "global-l2norm")   ? 1
            : !strcmp(method, "absolute-value")  ? 2
                                                 : -1;
    if (m < 0 || !(threshold > 0) || n < 0 || (n && (!grads || !out))) {
        dla_status st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: method \"%s\" (\"l2norm\", "
                                     "\"global-l2norm\" or \"absolute-value\") and threshold %g "
                                     "(> 0)", fn, method ? method : "(null)", threshold);
        for (int i = 0; out && i < n; i++)
            out[i] = dla__nn_error_tensor();
        return st;
    }
    /* n more for "global-l2norm": each entry's largest magnitude. */
    dla_tensor **next = dla__nn_calloc(n ? 2 * (size_t)n : 1, sizeof *next);
    if (!next) { /* out[] set as on every other failure */
        for (int i = 0; out && i < n; i++)
            out[i] = dla__nn_error_tensor();
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    dla_scope_begin();
    dla_tensor *global = NULL;
    if (m == 1 && isfinite(threshold)) {
        dla_tensor *sq = NULL, *top = NULL, **largest = next + n;
        /* Summed in double: the entries may mix single and double (adding
         * them failed with a dtype error), and the squares of a large
         * network's gradients lose digits in single. Each entry's sum of
         * scaled squares is rescaled to the largest magnitude of all,
         * top: unscaled (s m^2) it passed double's range for a double
         * entry beyond 1e154, and [3e200 4e200] was clipped to [0 0]
         * where "l2norm" gave [0.6 0.8]. next[i] holds entry i's sum
         * meanwhile. */
        for (int i = 0; i < n; i++) {
            dla_tensor *big, *s = scaled_sumsq(grads[i], &big);
            largest[i] = dla_reshape(dla_cast(big, DLA_F64), "", DLA_DIMS(1, 1));
            next[i] = dla_reshape(dla_cast(s, DLA_F64), "", DLA_DIMS(1, 1));
            top = top ? dla_max2(top, largest[i]) : largest[i];
        }
        for (int i = 0; i < n; i++) {
            dla_tensor *r = dla_div(largest[i], top);
            dla_tensor *s = dla_mul(next[i], dla_mul(r, r));
            sq = sq ? dla_add(sq, s) : s;
            next[i] = largest[i] = NULL;
        }
        /* threshold / (top sqrt(sq)), as (threshold top^-1) sqrt(sq)^-1:
         * the norm itself may pass the range (inf when sq is 0: no
         * scaling). */
        if (sq)
            global = min1(dla_mul(dla_affine(dla_pows(top, -1), threshold, 0),
                                  dla_pows(dla_sqrt(sq), -1)));
    }
    for (int i = 0; i < n; i++) {
        dla_tensor *g = grads[i];
        if (!isfinite(threshold)) {
            next[i] = dla_tensor_retain(g);
            continue;
        }
        if (m == 0) {
            /* threshold / (m sqrt(s)), as (threshold m^-1) sqrt(s)^-1: a
             * norm past the dtype's range, of finite elements
             * ([1e308 1e308]), was Inf, and the entry was zeroed. */
            dla_tensor *big, *root = dla_sqrt(scaled_sumsq(g, &big));
            g = dla_mul(g, min1(dla_mul(dla_affine(dla_pows(big, -1), threshold, 0),
                                        dla_pows(root, -1))));
        } else if (m == 1) {
            g = dla_mul(g, dla_cast(global, dla_tensor_dtype(g)));
        } else {
            /* MATLAB's g(g > t) = t, g(g < -t) = -t: elements beyond the
             * bounds take the bound itself, the others stay, bit for bit,
             * and NaN stays NaN. (Clamping with g - relu(g - t) + relu(-g
             * - t) rounded: 1e10 clipped to 0.1 in single gave 0, 100 gave
             * 0.0999985, Inf gave NaN.) */
            dla_tensor *hi = bound(threshold, g), *lo = bound(-threshold, g);
            g = dla_where(dla_gt(g, hi), hi, dla_where(dla_lt(g, lo), lo, g));
        }
        next[i] = dla_tensor_retain(g);
    }
    dla_scope_end();
    return out_all(n, out, next, DLA_OK);
}

/*
 * ops_ctc.c - MATLAB's ctc: the connectionist temporal classification loss.
 *
 * Written with the public ops rather than as a kernel of its own, so that
 * autodiff (the gradient of every op in the recursion), replay plans and
 * every plugin have it without new kernels: the log of the probabilities,
 * the scores of the extended label sequence gathered with one dla_index,
 * and the forward (alpha) recursion over T in log space, one step of
 * slices, pads, max2, exp, log and where per time step. Its cost is T
 * small steps over an (2S+1) x B state, which is what a CTC kernel does
 * too, in more launches. The per-step scores are cut from the L x B x T
 * gather by halving (split_steps), so their backward stays O(T log T).
 *
 * MATLAB's page (https://mathworks.com/help/deeplearning/ref/
 * dlarray.ctc.html) could be read only in its opening: ctc of a formatted
 * Y of predictions, targets, YMask and targetsMask, DataFormat, and the
 * loss reduced by "taking the mean across the batch dimension". What it
 * does not say there is chosen as PyTorch's CTCLoss does: see
 * api/dlaccel/loss.h.
 *
 * The log-sum-exp of the recursion never makes a NaN of its own, in the
 * value or in the gradient: an unreachable state holds -Inf, its sum of
 * exponentials is 0 and is replaced by 1 before the log (the where picks
 * -Inf), so the backward sees 0 * finite, never 0 * Inf. A NaN in Y is
 * carried through (its observation's loss is NaN), never taken for a
 * probability of realmin or for an unreachable state.
 *
 * Data checks (targets in range and not the blank, targetsMask ones then
 * zeros) read the targets and the mask to the host, as dla_onehotencode
 * reads its labels, except while dla_accelerate records a trace (a host
 * read would freeze one call's control flow into it).
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/format.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char op[] = "dla_ctc";

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }
static int str_is(const char *s, const char *v) { return s && strcmp(s, v) == 0; }
static int str_unset(const char *s) { return !s || !*s; }

/* The size of x along dim i (0-based); labels past ndims are singletons. */
static int64_t dim_at(const dla_tensor *x, int i) { return i < x->ndims ? x->dims[i] : 1; }

/* Y as an unformatted C x B x T tensor (a view, or a permuted one for a
 * data_format not in C, B, T order); NULL with the error set. */
static dla_tensor *y_cbt(dla_tensor *y, const char *data_format)
{
    char ys[DLA__DIMS_BUF];
    dla__tensor_dims_str(y, ys, sizeof ys);
    const int formatted = y->format[0] != 0;
    const char *fmt = dla__format_of_arg(op, "Y", y, data_format, "\"CBT\" in any order");
    if (!fmt)
        return NULL;
    const char *c = strchr(fmt, 'C'), *b = strchr(fmt, 'B'), *t = strchr(fmt, 'T');
    if (strlen(fmt) != 3 || !c || !b || !t) {
        dla__fail(DLA_ERR_FORMAT, "%s: argument Y: %s \"%s\": it must have exactly the labels C "
                  "(classes, the blank among them), B (observations) and T (time steps)",
                  op, ys, fmt);
        return NULL;
    }
    const int ic = (int)(c - fmt), ib = (int)(b - fmt), it = (int)(t - fmt);
    const int64_t dims[3] = {dim_at(y, ic), dim_at(y, ib), dim_at(y, it)};
    dla_tensor *x = y;
    if (!formatted && !(ic == 0 && ib == 1 && it == 2)) {
        /* Bring the data to C, B, T order; a dim past ndims is a 1 that
         * the reshape below puts in its place. */
        const int64_t full[3] = {dim_at(y, 0), dim_at(y, 1), dim_at(y, 2)};
        x = dla_permute(dla_reshape(y, "", 3, full), 3,
                        (const int64_t[]){ic + 1, ib + 1, it + 1});
    }
    return dla_reshape(x, "", 3, dims);
}

/* A B x n matrix argument (targets, a mask): unformatted B x n (a vector
 * of n when B is 1, or of B when n is 1), or formatted "BT". NULL with the
 * error set. */
static dla_tensor *b_by(const char *arg, dla_tensor *x, int64_t nb, const char *what)
{
    char xs[DLA__DIMS_BUF];
    dla__tensor_dims_str(x, xs, sizeof xs);
    if (x->format[0] && strcmp(x->format, "BT") != 0 && strcmp(x->format, "B") != 0) {
        dla__fail(DLA_ERR_FORMAT, "%s: argument %s: %s \"%s\"; it must be B-by-%s, unformatted "
                  "or labelled \"BT\"", op, arg, xs, x->format, what);
        return NULL;
    }
    for (int i = 2; i < x->ndims; i++)
        if (x->dims[i] != 1) {
            dla__fail(DLA_ERR_SHAPE, "%s: argument %s: %s; it must be a B-by-%s matrix", op, arg,
                      xs, what);
            return NULL;
        }
    int64_t r = dim_at(x, 0), n = dim_at(x, 1);
    if (r != nb && nb == 1 && n == 1 && !x->format[0]) {
        /* A column of one observation's sequence. */
        n = r;
        r = 1;
    }
    if (r != nb) {
        dla__fail(DLA_ERR_SHAPE, "%s: argument %s: %s has %lld rows, but Y has %lld observations "
                  "(B); it must be B-by-%s", op, arg, xs, (long long)r, (long long)nb, what);
        return NULL;
    }
    if (x->dtype == DLA_BOOL && strcmp(arg, "targets") == 0) {
        dla__fail(DLA_ERR_DTYPE, "%s: argument targets: logical; targets are class indices",
                  op);
        return NULL;
    }
    return dla_reshape(x, "", 2, (const int64_t[]){nb, n});
}

/* x (B x n, on the host as doubles), or NULL with the error set. */
static double *host_doubles(const char *arg, dla_tensor *x)
{
    const int64_t n = dla_tensor_numel(x);
    double *v = dla__malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot read %s (%lld elements) to check it", op,
                  arg, (long long)n);
        return NULL;
    }
    dla_scope_begin();
    dla_status st = n ? dla_tensor_to_host(dla_cast(x, DLA_F64), v, sizeof *v * (size_t)n)
                      : DLA_OK;
    dla_scope_end();
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla__free(v);
        return NULL;
    }
    return v;
}

/* The included targets are class indices of Y other than the blank, and
 * each row of the targets mask is ones then zeros (a length: CTC has no
 * meaning for a hole inside a label sequence). */
static dla_status check_targets(dla_tensor *tg, dla_tensor *tm, int64_t nb, int64_t ns,
                                int64_t nc, int64_t blank)
{
    double *t = host_doubles("targets", tg), *m = tm ? host_doubles("targetsMask", tm) : NULL;
    dla_status st = DLA_OK;
    if (!t || (tm && !m)) {
        st = dla_last_status();
        goto done;
    }
    for (int64_t b = 0; b < nb && st == DLA_OK; b++) {
        int ended = 0;
        for (int64_t s = 0; s < ns && st == DLA_OK; s++) {
            const int in = !m || m[b + nb * s] != 0;
            if (in && ended)
                st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument targetsMask: row %lld has "
                               "a 0 before a nonzero at column %lld; each row must be ones (the "
                               "observation's targets) then zeros (padding)", op, (long long)b,
                               (long long)s);
            ended |= !in;
            if (!in || st != DLA_OK)
                continue;
            const double v = t[b + nb * s];
            if (!(v >= 0 && v < (double)nc && v == floor(v)))
                st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument targets: targets(%lld, "
                               "%lld) is %.17g, which is not a class index in 0..%lld (Y has %lld "
                               "classes, the blank among them; dlaccel numbers them from 0)", op,
                               (long long)b, (long long)s, v, (long long)(nc - 1), (long long)nc);
            else if (v == (double)blank)
                st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument targets: targets(%lld, "
                               "%lld) is %lld, the blank (option blank_index \"%s\"); a target "
                               "sequence holds labels only (mask its padding out with "
                               "targetsMask)", op, (long long)b, (long long)s, (long long)blank,
                               blank == 0 ? "first" : "last");
        }
    }
done:
    dla__free(t);
    dla__free(m);
    return st;
}

/* log(sum(exp(a + b + c))) elementwise (b, c may be NULL), or over dim
 * `dim` (1-based) of a when dim > 0; -Inf where every term is -Inf, with
 * finite gradients there (see the file's comment). */
static dla_tensor *logsumexp(dla_tensor *a, dla_tensor *b, dla_tensor *c, int dim,
                             dla_tensor *ninf, dla_tensor *zero, dla_tensor *one)
{
    dla_tensor *m = dim > 0 ? dla_max(a, 1, (const int64_t[]){dim}) : dla_max2(a, dla_max2(b, c));
    dla_tensor *ms = dla_where(dla_eq(m, ninf), zero, m);
    dla_tensor *s = dla_exp(dla_sub(a, ms));
    if (dim > 0)
        s = dla_sum(s, 1, (const int64_t[]){dim});
    else
        s = dla_add(dla_add(s, dla_exp(dla_sub(b, ms))), dla_exp(dla_sub(c, ms)));
    /* s == 0, not !(s > 0): a NaN sum (a NaN in Y) stays NaN rather than
     * passing for an unreachable state. */
    dla_tensor *none = dla_eq(s, zero);
    return dla_where(none, ninf, dla_add(ms, dla_log(dla_where(none, one, s))));
}

/* x shifted by k rows down along dim 1 (rows 0..k-1 -Inf): the states a
 * step can come from. */
static dla_tensor *shift_down(dla_tensor *x, int64_t k, int64_t rows)
{
    return dla_slice(dla_pad(x, 1, (const int64_t[]){k}, NULL, -INFINITY), 1, 0, 1, rows);
}

/* Values 0..n-1 along dim `dim` (1-based, 1 or 2) as doubles. */
static dla_tensor *iota(int64_t n, int dim)
{
    double *v = dla__malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: no memory for %lld positions", op,
                          (long long)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)i;
    const int64_t dims[2] = {dim == 1 ? n : 1, dim == 1 ? 1 : n};
    dla_tensor *t = dla_tensor_from_host(v, DLA_F64, "", 2, dims);
    dla__free(v);
    return t;
}

/* 1 where target (b, s) breaks what check_targets checks, B x S: an
 * included target that is not a whole number in 0..C-1 or is the blank,
 * or an included target after an excluded one (a hole in the mask). The
 * same checks as the host's, made on the device so that a replayed trace,
 * which reads nothing back, has them too. tin is the mask as 0/1. */
static dla_tensor *bad_targets(dla_tensor *tf, dla_tensor *tin, int64_t nc, dla_tensor *blank_d)
{
    dla_tensor *zero = dla_zeros(DLA_F64, "", 2, (const int64_t[]){1, 1});
    dla_tensor *ok = dla_mul(dla_cast(dla_ge(tf, zero), DLA_F64),
                             dla_cast(dla_le(tf, dla_full((double)(nc - 1), DLA_F64, "", 2,
                                                          (const int64_t[]){1, 1})), DLA_F64));
    ok = dla_mul(ok, dla_cast(dla_eq(dla_cast(dla_cast(tf, DLA_I32), DLA_F64), tf), DLA_F64));
    ok = dla_mul(ok, dla_cast(dla_ne(tf, blank_d), DLA_F64));
    /* bad = tin .* (1 - ok), plus tin(s) .* (1 - tin(s - 1)) for s > 0. */
    dla_tensor *bad = dla_mul(tin, dla_affine(ok, -1, 1));
    const int64_t ns = tin->dims[1];
    if (ns > 1) {
        dla_tensor *before = dla_pad(dla_slice(tin, 2, 0, 1, ns - 1), 2, (const int64_t[]){0, 1},
                                     NULL, 1.0);
        bad = dla_add(bad, dla_mul(tin, dla_affine(before, -1, 1)));
    }
    return bad;
}

/* The steps t0 .. t0+n-1 of x (L x B x n) as L x B tensors, by halving.
 * The backward of a slice fills a gradient of its whole source, so T
 * slices of the L x B x T scores would fill T of them, T^2 L B elements
 * (at T = 100 the fills were half of a replay's time); slices of halves
 * fill 2 L B T a level, 2 L B T log2(T) in all. */
static void split_steps(dla_tensor *x, int64_t t0, int64_t n, dla_tensor **steps)
{
    const int64_t nl = x->dims[0], nb = x->dims[1];
    if (n <= 2) {
        for (int64_t t = 0; t < n; t++)
            steps[t0 + t] = dla_reshape(n == 1 ? x : dla_slice(x, 3, t, 1, t + 1), "", 2,
                                        (const int64_t[]){nl, nb});
        return;
    }
    const int64_t h = n / 2;
    split_steps(dla_slice(x, 3, 0, 1, h), t0, h, steps);
    split_steps(dla_slice(x, 3, h, 1, n), t0 + h, n - h, steps);
}

/* The loss of each observation, 1 x B: the steps of the recursion. */
static dla_tensor *per_observation(dla_tensor *y, dla_tensor *tg, dla_tensor *ym, dla_tensor *tm,
                                   int64_t blank)
{
    const dla_dtype dt = y->dtype;
    const int64_t nc = y->dims[0], nb = y->dims[1], nt = y->dims[2], ns = tg->dims[1];
    const int64_t nl = 2 * ns + 1;
    const double tiny = dt == DLA_F32 ? FLT_MIN : DBL_MIN;
    dla_tensor *ninf = dla_full(-INFINITY, dt, "", 2, (const int64_t[]){1, 1});
    dla_tensor *zero = dla_zeros(dt, "", 2, (const int64_t[]){1, 1});
    dla_tensor *one = dla_ones(dt, "", 2, (const int64_t[]){1, 1});
    dla_tensor *blank_d = dla_full((double)blank, DLA_F64, "", 2, (const int64_t[]){1, 1});

    /* log of the probabilities, kept away from 0 as the other losses do;
     * by where, not max2, which would take realmin for a NaN and give a
     * broken Y a finite loss. A step YMask excludes reads 1 instead of Y:
     * the recursion skips it, but the log's gradient there was 0 / Y, NaN
     * for a NaN in Y's padding, which an update spreads into every
     * weight. */
    dla_tensor *floor_t = dla_full(tiny, dt, "", 2, (const int64_t[]){1, 1});
    dla_tensor *ymask = ym ? dla_ne(ym, dla_zeros(ym->dtype, "", 2, (const int64_t[]){1, 1}))
                           : NULL;
    dla_tensor *yin = ymask ? dla_where(dla_reshape(ymask, "", 3, (const int64_t[]){1, nb, nt}), y,
                                        one)
                            : y;
    dla_tensor *logp = dla_log(dla_where(dla_lt(yin, floor_t), floor_t, yin));

    /* The extended labels, L x B: blank, t1, blank, t2, ..., blank; a
     * masked target is a blank (its value may be anything). */
    dla_tensor *tf = dla_cast(tg, DLA_F64);
    dla_tensor *tmask = tm ? dla_ne(tm, dla_zeros(tm->dtype, "", 2, (const int64_t[]){1, 1}))
                           : dla_ones(DLA_F64, "", 2, (const int64_t[]){nb, ns});
    dla_tensor *tin = dla_cast(tmask, DLA_F64);
    dla_tensor *bad = bad_targets(tf, tin, nc, blank_d);
    dla_tensor *use = dla_mul(tin, dla_cast(dla_eq(bad, dla_zeros(DLA_F64, "", 2,
                                                                  (const int64_t[]){1, 1})),
                                            DLA_F64));
    dla_tensor *labels = dla_permute(dla_where(use, tf, blank_d), 2, (const int64_t[]){2, 1});
    dla_tensor *pairs = dla_cat(1, 2, (dla_tensor *[]){
        dla_full((double)blank, DLA_F64, "", 3, (const int64_t[]){1, ns, nb}),
        dla_reshape(labels, "", 3, (const int64_t[]){1, ns, nb})});
    dla_tensor *ext = dla_pad(dla_reshape(pairs, "", 2, (const int64_t[]){2 * ns, nb}), 2, NULL,
                              (const int64_t[]){1, 0}, (double)blank);

    /* Scores of the extended labels at every step, L x B x T: row
     * ext(s, b) + C * b of logp seen as (C*B) x T. */
    dla_tensor *rows = dla_add(ext, dla_affine(iota(nb, 2), (double)nc, 0));
    dla_tensor *scores = dla_reshape(
        dla_index(dla_reshape(logp, "", 2, (const int64_t[]){nc * nb, nt}), 1,
                  dla_cast(rows, DLA_I32)), "", 3, (const int64_t[]){nl, nb, nt});

    /* A step may skip a blank into a label that differs from the label two
     * states back: 0 there, -Inf elsewhere. */
    dla_tensor *back2 = dla_slice(dla_pad(ext, 1, (const int64_t[]){2}, NULL, -1.0), 1, 0, 1, nl);
    dla_tensor *can_skip = dla_mul(dla_cast(dla_ne(ext, blank_d), DLA_F64),
                                   dla_cast(dla_ne(ext, back2), DLA_F64));
    dla_tensor *skip = dla_where(can_skip, zero, ninf);

    /* Before the first step only the state ahead of the sequence is
     * alive: the recursion then gives alpha_1 = [y(blank), y(t1), -Inf...]. */
    dla_tensor *alpha = dla_pad(dla_zeros(dt, "", 2, (const int64_t[]){1, nb}), 2, NULL,
                                (const int64_t[]){nl - 1, 0}, -INFINITY);
    dla_tensor **steps = dla__malloc(sizeof *steps * (size_t)(nt ? nt : 1));
    if (!steps)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: no memory for %lld time steps", op,
                          (long long)nt);
    split_steps(scores, 0, nt, steps);
    for (int64_t t = 0; t < nt; t++) {
        dla_tensor *st = steps[t];
        dla_tensor *from = logsumexp(alpha, shift_down(alpha, 1, nl),
                                     dla_add(shift_down(alpha, 2, nl), skip), 0, ninf, zero, one);
        dla_tensor *next = dla_add(st, from);
        /* A masked step is skipped: the state stays as it was. */
        alpha = ymask ? dla_where(dla_reshape(dla_slice(ymask, 2, t, 1, t + 1), "", 2,
                                              (const int64_t[]){1, nb}), next, alpha)
                      : next;
    }

    /* The sequence ends in its last label or the blank after it: states
     * 2n - 1 and 2n (0-based) for n included targets. */
    dla_tensor *n = dla_reshape(dla_sum(tin, 1, (const int64_t[]){2}), "", 2,
                                (const int64_t[]){1, nb});
    dla_tensor *n2 = dla_affine(n, 2, 0);
    dla_tensor *s = iota(nl, 1);
    dla_tensor *ends = dla_add(dla_cast(dla_eq(s, n2), DLA_F64),
                               dla_cast(dla_eq(dla_affine(s, 1, 1), n2), DLA_F64));
    dla_tensor *last = dla_where(ends, alpha, ninf);
    dla__free(steps);
    dla_tensor *loss = dla_neg(logsumexp(last, NULL, NULL, 1, ninf, zero, one));
    /* Targets the host did not check (a trace's replay) that are not
     * labels of Y make their observation's loss NaN, never a loss of
     * some other sequence. */
    dla_tensor *nan = dla_full(NAN, dt, "", 2, (const int64_t[]){1, 1});
    return dla_where(dla_reshape(dla_sum(bad, 1, (const int64_t[]){2}), "", 2,
                                 (const int64_t[]){1, nb}), nan, loss);
}

DLA_API dla_tensor *dla_ctc(dla_tensor *y, dla_tensor *targets, dla_tensor *y_mask,
                            dla_tensor *targets_mask, const dla_ctc_options *opts)
{
    static const dla_ctc_options none;
    const dla_ctc_options *o = opts ? opts : &none;
    if (!y || y->status != DLA_OK)
        return dla__pass_arg(op, "Y", y);
    if (!targets || targets->status != DLA_OK)
        return dla__pass_arg(op, "targets", targets);
    if (y_mask && y_mask->status != DLA_OK)
        return dla__pass_arg(op, "YMask", y_mask);
    if (targets_mask && targets_mask->status != DLA_OK)
        return dla__pass_arg(op, "targetsMask", targets_mask);
    if (!is_float(y->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument Y: %s; needs single or double", op,
                          dla_dtype_name(y->dtype));
    const int first = str_unset(o->blank_index) || str_is(o->blank_index, "first");
    if (!first && !str_is(o->blank_index, "last"))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option blank_index: \"%s\"; it must be "
                          "\"first\" (default) or \"last\"", op, o->blank_index);
    const int mean = str_unset(o->reduction) || str_is(o->reduction, "mean");
    if (!mean && !str_is(o->reduction, "none"))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option reduction: \"%s\"; it must be "
                          "\"mean\" (default) or \"none\"", op, o->reduction);
    dla_device *dev = dla_tensor_device(y);
    dla_tensor *const others[3] = {targets, y_mask, targets_mask};
    static const char *const names[3] = {"targets", "YMask", "targetsMask"};
    for (int i = 0; i < 3; i++)
        if (others[i] && dla_tensor_device(others[i]) != dev)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is on %s but Y is on %s; "
                              "move one with dla_tensor_to_device", op, names[i],
                              dla_device_name(dla_tensor_device(others[i])),
                              dla_device_name(dev));

    dla_device *prev = dla_device_current();
    dla_device_set_current(dev);
    dla_scope_begin();
    dla_tensor *r = NULL;
    dla_tensor *yc = y_cbt(y, o->data_format);
    if (!yc)
        goto done;
    const int64_t nc = yc->dims[0], nb = yc->dims[1], nt = yc->dims[2];
    const int64_t blank = first ? 0 : nc - 1;
    if (nc < 1 || nb < 1) {
        char ys[DLA__DIMS_BUF];
        dla__fail(DLA_ERR_SHAPE, "%s: argument Y: %s; it needs at least one class (the blank) "
                  "and one observation", op, dla__tensor_dims_str(y, ys, sizeof ys));
        goto done;
    }
    dla_tensor *tg = b_by("targets", targets, nb, "S (target steps)");
    if (!tg)
        goto done;
    const int64_t ns = tg->dims[1];
    dla_tensor *ym = y_mask ? b_by("YMask", y_mask, nb, "T (Y's time steps)") : NULL;
    dla_tensor *tm = targets_mask ? b_by("targetsMask", targets_mask, nb, "S (the targets' steps)")
                                  : NULL;
    if ((y_mask && !ym) || (targets_mask && !tm))
        goto done;
    char ms[DLA__DIMS_BUF];
    if (ym && ym->dims[1] != nt) {
        dla__fail(DLA_ERR_SHAPE, "%s: argument YMask: %s; it must be B-by-T, %lldx%lld as Y", op,
                  dla__tensor_dims_str(y_mask, ms, sizeof ms), (long long)nb, (long long)nt);
        goto done;
    }
    if (tm && tm->dims[1] != ns) {
        dla__fail(DLA_ERR_SHAPE, "%s: argument targetsMask: %s; it must be B-by-S, %lldx%lld as "
                  "targets", op, dla__tensor_dims_str(targets_mask, ms, sizeof ms), (long long)nb,
                  (long long)ns);
        goto done;
    }
    if (!dla__trace_recording() && check_targets(tg, tm, nb, ns, nc, blank) != DLA_OK)
        goto done;
    dla_tensor *loss = per_observation(yc, tg, ym, tm, blank);
    if (mean)
        loss = dla_affine(dla_sum(loss, 0, NULL), 1.0 / (double)nb, 0);
    else if (y->format[0])
        loss = dla_reshape(loss, "CB", 2, (const int64_t[]){1, nb});
    r = dla_tensor_retain(loss);
done:
    dla_scope_end();
    dla_device_set_current(prev);
    return dla__return(r ? r : dla__error_tensor());
}

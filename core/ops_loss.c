/*
 * ops_loss.c - crossentropy, binary cross-entropy, l1loss, l2loss, mse and
 * huber.
 *
 * All six are one op with a kind: an elementwise loss e(Y, T), times the
 * weights and the mask, reduced and divided by the normalization factor
 * (loss.h has the formulas). The public functions do the MATLAB part -
 * labelling an unformatted Y by DataFormat, reading targets, weights and
 * mask by label and lining them up with Y as broadcastable views - with
 * recorded view ops, so gradients reach the caller's own tensors through
 * those views. The op itself then sees inputs that already broadcast.
 *
 * Forward and backward are written with public ops; the forward pauses
 * recording around them so that only the loss node is on the tape.
 */
#include "core/error.h"
#include "core/format.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <float.h>
#include <math.h>
#include <string.h>

enum loss_kind { LOSS_EXCLUSIVE, LOSS_INDEPENDENT, LOSS_L1, LOSS_L2, LOSS_MSE, LOSS_HUBER };
enum loss_norm { NORM_BATCH, NORM_ALL, NORM_MASK, NORM_NONE };

typedef struct loss_attrs {
    int kind;      /* enum loss_kind */
    int norm;      /* enum loss_norm */
    int unreduced; /* Reduction "none" */
    int has_w, has_m;
    int bdim;      /* 0-based B dim of Y, -1 when none */
    double n;      /* the divisor for NORM_BATCH, NORM_ALL, NORM_NONE */
    double delta;  /* huber's transition point; 0 for the other kinds */
} loss_attrs;

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* ------------------------------------------------------ small op helpers */

/* A one-element tensor of t's dtype on t's device holding v. */
static dla_tensor *scalar_like(const dla_tensor *t, double v)
{
    dla_tensor *s = dla__tensor_alloc("loss", t->storage->device, t->dtype, "", 1,
                                      (const int64_t[]){1});
    if (!s)
        return dla__return(dla__error_tensor());
    dla_view view;
    dla__view_of(s, &view);
    if (dla__k_fill(s->storage->device, &view, v) != DLA_OK) {
        dla_tensor_release(s);
        return dla__return(dla__error_tensor());
    }
    return dla__return(s);
}

/* realmin of y's dtype: how far log's argument is kept from 0. */
static double tiny_of(const dla_tensor *y) { return y->dtype == DLA_F32 ? FLT_MIN : DBL_MIN; }

/* max(x, realmin) that keeps NaN (max2 would drop it and hide a broken Y). */
static dla_tensor *bound_away_from_zero(dla_tensor *x, double tiny)
{
    dla_tensor *t = scalar_like(x, tiny);
    return dla_where(dla_lt(x, t), t, x);
}

static dla_tensor *one_minus(dla_tensor *x) { return dla_affine(x, -1.0, 1.0); }

/* Huber's pieces of d = Y - T: inside the transition point (|d| <= delta)
 * the quadratic d^2 / 2, outside the line delta |d| - delta^2 / 2 that
 * continues it with the same slope. */
static dla_tensor *huber_inside(dla_tensor *d, double delta)
{
    return dla_le(dla_abs(d), scalar_like(d, delta));
}

static dla_tensor *huber_e(dla_tensor *d, double delta)
{
    return dla_where(huber_inside(d, delta), dla_affine(dla_square(d), 0.5, 0.0),
                     dla_affine(dla_abs(d), delta, -0.5 * delta * delta));
}

/* de/dd: d inside, delta sign(d) outside. */
static dla_tensor *huber_slope(dla_tensor *d, double delta)
{
    return dla_where(huber_inside(d, delta), d, dla_affine(dla_sign(d), delta, 0.0));
}

/* The elementwise loss e(Y, T) and its derivatives. */
static dla_tensor *elementwise(int kind, double delta, dla_tensor *y, dla_tensor *t)
{
    double tiny = tiny_of(y);
    switch (kind) {
    case LOSS_EXCLUSIVE:
        return dla_neg(dla_mul(t, dla_log(bound_away_from_zero(y, tiny))));
    case LOSS_INDEPENDENT:
        return dla_neg(dla_add(dla_mul(t, dla_log(bound_away_from_zero(y, tiny))),
                               dla_mul(one_minus(t), dla_log(bound_away_from_zero(one_minus(y), tiny)))));
    case LOSS_L1:
        return dla_abs(dla_sub(y, t));
    case LOSS_L2:
        return dla_square(dla_sub(y, t));
    case LOSS_HUBER:
        return huber_e(dla_sub(y, t), delta);
    default:
        return dla_affine(dla_square(dla_sub(y, t)), 0.5, 0.0);
    }
}

static dla_tensor *d_dy(int kind, double delta, dla_tensor *y, dla_tensor *t)
{
    double tiny = tiny_of(y);
    switch (kind) {
    case LOSS_EXCLUSIVE:
        return dla_neg(dla_div(t, bound_away_from_zero(y, tiny)));
    case LOSS_INDEPENDENT:
        return dla_sub(dla_div(one_minus(t), bound_away_from_zero(one_minus(y), tiny)),
                       dla_div(t, bound_away_from_zero(y, tiny)));
    case LOSS_L1:
        return dla_sign(dla_sub(y, t));
    case LOSS_L2:
        return dla_affine(dla_sub(y, t), 2.0, 0.0);
    case LOSS_HUBER:
        return huber_slope(dla_sub(y, t), delta);
    default:
        return dla_sub(y, t);
    }
}

static dla_tensor *d_dt(int kind, double delta, dla_tensor *y, dla_tensor *t)
{
    double tiny = tiny_of(y);
    switch (kind) {
    case LOSS_EXCLUSIVE:
        return dla_neg(dla_log(bound_away_from_zero(y, tiny)));
    case LOSS_INDEPENDENT:
        return dla_sub(dla_log(bound_away_from_zero(one_minus(y), tiny)),
                       dla_log(bound_away_from_zero(y, tiny)));
    case LOSS_L1:
        return dla_neg(dla_sign(dla_sub(y, t)));
    case LOSS_L2:
        return dla_affine(dla_sub(y, t), -2.0, 0.0);
    case LOSS_HUBER:
        return dla_neg(huber_slope(dla_sub(y, t), delta));
    default:
        return dla_sub(t, y);
    }
}

/* Sums x over every dim but the B dim (all dims when there is none). */
static dla_tensor *per_observation(dla_tensor *x, int bdim)
{
    int64_t dims[DLA_MAX_DIMS];
    int n = 0, nd = dla_tensor_ndims(x);
    for (int d = 0; d < nd; d++)
        if (d != bdim)
            dims[n++] = d + 1;
    if (n == 0)
        return x;
    return dla_sum(x, n, dims);
}

/* Included elements per observation: the mask summed over each observation
 * as if expanded to y's size. */
static dla_tensor *mask_count(dla_tensor *m, const dla_tensor *y, int bdim)
{
    double mult = 1;
    for (int d = 0; d < y->ndims; d++)
        if (d != bdim && (d >= m->ndims || m->dims[d] == 1))
            mult *= (double)y->dims[d];
    return dla_affine(per_observation(m, bdim), mult, 0.0);
}

/* What "mask-included" divides each observation by: its count, and 1 for
 * an observation the mask leaves empty (its sum is 0 either way). Not
 * the count clamped at the least normal number, as before: the gradient
 * divided by that overflowed to inf once |dL| was above about 2 (double)
 * or 4 (single), and inf times the mask's 0 made the empty observation's
 * gradients NaN, which an optimizer step spreads into every weight. */
static dla_tensor *mask_divisor(dla_tensor *m, const dla_tensor *y, int bdim)
{
    dla_tensor *count = mask_count(m, y, bdim);
    return dla_add(count, dla_cast(dla_eq(count, scalar_like(y, 0.0)), y->dtype));
}

/* x where the mask includes an element (times the mask's value there),
 * and exactly 0 where it is 0: masked elements add nothing, whatever the
 * targets or Y hold there. A product with the mask let a NaN target of an
 * excluded element (unlabeled pixels marked NaN and masked out, as
 * MATLAB's semantic segmentation example does) make the loss and the
 * gradients NaN (0 * NaN). */
static dla_tensor *masked(dla_tensor *x, dla_tensor *m)
{
    return dla_where(m, dla_mul(x, m), scalar_like(x, 0.0));
}

/* --------------------------------------------------------------- the op */

static dla_status loss_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const loss_attrs *a = attrs;
    dla_tensor *y = in[0], *t = in[1];
    dla_tensor *w = a->has_w ? in[2] : NULL, *m = a->has_m ? in[2 + a->has_w] : NULL;
    dla__recording_pause();
    dla_scope_begin();
    dla_tensor *e = elementwise(a->kind, a->delta, y, t);
    if (w)
        e = dla_mul(e, w);
    if (m)
        e = masked(e, m);
    dla_tensor *r;
    if (a->unreduced) {
        r = e;
    } else {
        if (a->norm == NORM_MASK)
            r = dla_sum(dla_div(per_observation(e, a->bdim), mask_divisor(m, y, a->bdim)), 0,
                        NULL);
        else
            r = dla_affine(dla_sum(e, 0, NULL), 1.0 / a->n, 0.0);
        r = dla_reshape(r, "", DLA_DIMS(1, 1));
    }
    r = dla_tensor_retain(r);
    dla_scope_end();
    dla__recording_resume();
    if (r->status != DLA_OK) {
        dla_status st = r->status;
        dla_tensor_release(r);
        return st;
    }
    out[0] = r;
    return DLA_OK;
}

static dla_status loss_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    const loss_attrs *a = node->attrs;
    dla_tensor *y = node->in[0], *t = node->in[1];
    dla_tensor *w = a->has_w ? node->in[2] : NULL, *m = a->has_m ? node->in[2 + a->has_w] : NULL;
    dla_tensor *g = gout[0];
    /* dL/de, broadcastable against y. */
    dla_tensor *coef;
    if (a->unreduced) {
        coef = g;
    } else {
        /* A one-dim scalar broadcasts against any y, formatted or not. */
        g = dla_reshape(g, "", DLA_DIMS(1));
        if (a->norm == NORM_MASK)
            coef = dla_div(g, mask_divisor(m, y, a->bdim));
        else
            coef = dla_affine(g, 1.0 / a->n, 0.0);
    }
    /* Each term with the mask's factor applied last (masked), so that an
     * excluded element's derivative is 0 even where it is not finite. */
    dla_tensor *cw = w ? dla_mul(coef, w) : coef;
    if (node->need[0]) {
        gin[0] = dla_mul(cw, d_dy(a->kind, a->delta, y, t));
        gin[0] = m ? masked(gin[0], m) : gin[0];
    }
    if (node->need[1]) {
        gin[1] = dla_mul(cw, d_dt(a->kind, a->delta, y, t));
        gin[1] = m ? masked(gin[1], m) : gin[1];
    }
    if (w && node->need[2]) {
        dla_tensor *ce = dla_mul(coef, elementwise(a->kind, a->delta, y, t));
        gin[2] = dla__sum_to(m ? masked(ce, m) : ce, w);
    }
    return DLA_OK;
}

static int find_label(const char *fmt, char c)
{
    const char *p = strchr(fmt, c);
    return p && c ? (int)(p - fmt) : -1;
}

/* What the public functions make of y (labelled): the B dim, and the
 * divisor of normalizations other than the mask's. */
static void norm_of(loss_attrs *a, const dla_tensor *y)
{
    a->bdim = find_label(y->format, 'B');
    a->n = a->norm == NORM_BATCH ? (a->bdim >= 0 ? (double)y->dims[a->bdim] : 1.0)
           : a->norm == NORM_ALL ? (double)dla_tensor_numel(y)
                                 : 1.0;
}

/* forward switches on kind (one of the op's own: kinds has a bit per
 * loss_kind), divides by the mask's count when norm says so (there must
 * be a mask then) and by n otherwise: the attributes must be what the
 * public function makes of the recorded y. A reduced loss is 1 x 1 of
 * y's dtype; an unreduced one the elementwise loss of y and the targets
 * times the weights and the mask: their broadcast. */
static dla_status loss_infer_as(const char *op, unsigned kinds, const void *attrs, int nin,
                                const dla__vshape *in, dla__vshape *out)
{
    const loss_attrs *a = attrs;
    dla_tensor t[4];
    for (int i = 0; i < nin; i++)
        dla__tensor_of_shape(&in[i], &t[i]);
    const dla_tensor *y = &t[0];
    loss_attrs want = *a;
    norm_of(&want, y);
    /* huber's transition point is positive and finite, the others have none. */
    const int delta_ok = a->kind == LOSS_HUBER ? a->delta > 0 && isfinite(a->delta)
                                               : a->delta == 0;
    if (a->kind < 0 || a->kind > LOSS_HUBER || !(kinds >> a->kind & 1) || !delta_ok || a->norm < 0 ||
        a->norm > NORM_NONE || (a->unreduced != 0 && a->unreduced != 1) ||
        (a->norm == NORM_MASK && !a->unreduced && !a->has_m) || a->bdim != want.bdim ||
        !(a->n == want.n)) {
        char buf[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attributes kind %d, normalization %d, "
                         "unreduced %d, B dim %d, divisor %g: not what y (%s \"%s\") and the "
                         "options make", op, a->kind, a->norm, a->unreduced, a->bdim + 1, a->n,
                         dla__tensor_dims_str(y, buf, sizeof buf), y->format);
    }
    out[0] = (dla__vshape){.dtype = y->dtype, .ndims = 2, .dims = {1, 1}};
    if (!a->unreduced)
        return DLA_OK;
    const char *names[4] = {"y", "targets", a->has_w ? "weights" : "mask", "mask"};
    return dla__broadcast(op, nin, (dla_tensor *[]){&t[0], &t[1], &t[2], &t[3]}, names,
                          &out[0].ndims, out[0].dims, out[0].format);
}

#define LOSS_INFER(name_, kinds_)                                                                  \
    static dla_status name_##_infer(const void *attrs, int nin, const dla__vshape *in,            \
                                    dla__vshape *out)                                              \
    {                                                                                              \
        return loss_infer_as("dla_" #name_, kinds_, attrs, nin, in, out);                         \
    }
LOSS_INFER(crossentropy, 1u << LOSS_EXCLUSIVE | 1u << LOSS_INDEPENDENT)
LOSS_INFER(binary_crossentropy, 1u << LOSS_INDEPENDENT)
LOSS_INFER(l1loss, 1u << LOSS_L1)
LOSS_INFER(l2loss, 1u << LOSS_L2)
LOSS_INFER(mse, 1u << LOSS_MSE)
LOSS_INFER(huber, 1u << LOSS_HUBER)

static int takes_weights_and_mask_if_given(const void *attrs, int nin)
{
    const loss_attrs *a = attrs;
    return (a->has_w == 0 || a->has_w == 1) && (a->has_m == 0 || a->has_m == 1) &&
           nin == 2 + a->has_w + a->has_m;
}

/* Registered as "v2" since loss_attrs gained huber's transition point: a
 * trace file names an op with its attribute layout (docs/trace-format.md),
 * so a file of the old layout is refused by name. */
static const dla__op crossentropy_op = {.name = "dla_crossentropy", .nin = -1, .nout = 1,
                                        .forward = loss_forward, .backward = loss_backward,
                                        .takes = takes_weights_and_mask_if_given,
                                        .infer = crossentropy_infer};
DLA__OP_REGISTER_AS(crossentropy_op, "dla_crossentropy v2", sizeof(loss_attrs));
static const dla__op binary_crossentropy_op = {.name = "dla_binary_crossentropy", .nin = -1,
                                               .nout = 1, .forward = loss_forward,
                                               .backward = loss_backward,
                                               .takes = takes_weights_and_mask_if_given,
                                               .infer = binary_crossentropy_infer};
DLA__OP_REGISTER_AS(binary_crossentropy_op, "dla_binary_crossentropy v2", sizeof(loss_attrs));
static const dla__op l1loss_op = {.name = "dla_l1loss", .nin = -1, .nout = 1,
                                  .forward = loss_forward, .backward = loss_backward,
                                  .takes = takes_weights_and_mask_if_given, .infer = l1loss_infer};
DLA__OP_REGISTER_AS(l1loss_op, "dla_l1loss v2", sizeof(loss_attrs));
static const dla__op l2loss_op = {.name = "dla_l2loss", .nin = -1, .nout = 1,
                                  .forward = loss_forward, .backward = loss_backward,
                                  .takes = takes_weights_and_mask_if_given, .infer = l2loss_infer};
DLA__OP_REGISTER_AS(l2loss_op, "dla_l2loss v2", sizeof(loss_attrs));
static const dla__op mse_op = {.name = "dla_mse", .nin = -1, .nout = 1, .forward = loss_forward,
                               .backward = loss_backward, .takes = takes_weights_and_mask_if_given,
                               .infer = mse_infer};
DLA__OP_REGISTER_AS(mse_op, "dla_mse v2", sizeof(loss_attrs));
static const dla__op huber_op = {.name = "dla_huber", .nin = -1, .nout = 1,
                                 .forward = loss_forward, .backward = loss_backward,
                                 .takes = takes_weights_and_mask_if_given, .infer = huber_infer};
DLA__OP_REGISTER(huber_op, sizeof(loss_attrs));

/* ---------------------------------------------- lining inputs up with Y */

/* The unformatted t labelled by fmt (any label order), as a view in
 * canonical order. fmt was validated against t's dims by the caller. */
static dla_tensor *label_as(dla_tensor *t, const char *fmt)
{
    dla__format f;
    int nd;
    if (dla__format_parse("label", fmt, t->ndims, t->dims, &f, &nd) != DLA_OK)
        return dla__return(dla__error_tensor());
    if (f.is_canonical) {
        int64_t dims[DLA_MAX_DIMS];
        for (int d = 0; d < nd; d++)
            dims[d] = d < t->ndims ? t->dims[d] : 1;
        return dla_reshape(t, f.canon, nd, dims);
    }
    /* Dims past the labels are 1 (checked above): drop them first, since
     * a permute of nd entries cannot take a tensor of more dims (a 4x3x1
     * labelled "BC" failed, and the loss blamed a "scalar" y). */
    if (t->ndims > nd)
        t = dla_reshape(t, "", nd, t->dims);
    int64_t order[DLA_MAX_DIMS];
    for (int k = 0; k < nd; k++)
        order[k] = f.perm[k] + 1;
    dla_tensor *p = dla_permute(t, nd, order);
    int64_t dims[DLA_MAX_DIMS];
    int pn = dla_tensor_dims(p, dims);
    return dla_reshape(p, f.canon, pn, dims);
}

/* The inverse of label_as for a result in y's labelled layout: the same
 * elements unformatted, in the layout fmt described. */
static dla_tensor *unlabel(dla_tensor *r, const char *fmt)
{
    dla__format f;
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    int rn = dla_tensor_dims(r, dims);
    if (dla__format_parse("label", fmt, rn, dims, &f, &nd) != DLA_OK)
        return dla__return(dla__error_tensor());
    dla_tensor *u = dla_reshape(r, "", rn, dims);
    if (!f.is_canonical) {
        int64_t order[DLA_MAX_DIMS];
        for (int k = 0; k < nd; k++)
            order[f.perm[k]] = k + 1;
        u = dla_permute(u, nd, order);
    }
    return u;
}

/* The position in y of the label at position i of fmt, matching the k-th
 * S (or U) of fmt to the k-th of y; -1 when y lacks it. */
static int matching_dim(const char *fmt, int i, const char *yfmt)
{
    int k = 0;
    for (int j = 0; j < i; j++)
        if (fmt[j] == fmt[i])
            k++;
    for (int j = 0; yfmt[j]; j++)
        if (yfmt[j] == fmt[i] && k-- == 0)
            return j;
    return -1;
}

/* The formatted x as a view with y's ndims and format and size 1 where x
 * has no dim, so it broadcasts against y; checks every label and size. */
static dla_tensor *align_to(const char *op, const char *arg, dla_tensor *x, const dla_tensor *y)
{
    int64_t dims[DLA_MAX_DIMS];
    for (int d = 0; d < y->ndims; d++)
        dims[d] = 1;
    char xs[DLA__DIMS_BUF], ys[DLA__DIMS_BUF];
    for (int i = 0; i < x->ndims; i++) {
        int p = matching_dim(x->format, i, y->format);
        if (p < 0) {
            if (x->dims[i] == 1)
                continue;
            return dla__error(DLA_ERR_FORMAT,
                              "%s: argument %s: %s \"%s\" has a '%c' dim of size %lld that y (%s "
                              "\"%s\") lacks",
                              op, arg, dla__tensor_dims_str(x, xs, sizeof xs), x->format,
                              x->format[i], (long long)x->dims[i],
                              dla__tensor_dims_str(y, ys, sizeof ys), y->format);
        }
        if (x->dims[i] != 1 && x->dims[i] != y->dims[p])
            return dla__error(DLA_ERR_SHAPE,
                              "%s: argument %s: %s \"%s\" does not broadcast against y (%s \"%s\"): "
                              "its '%c' dim is %lld against %lld",
                              op, arg, dla__tensor_dims_str(x, xs, sizeof xs), x->format,
                              dla__tensor_dims_str(y, ys, sizeof ys), y->format, x->format[i],
                              (long long)x->dims[i], (long long)y->dims[p]);
        dims[p] = x->dims[i];
    }
    return dla_reshape(x, y->format, y->ndims, dims);
}

static int64_t count_non_singleton(const dla_tensor *t)
{
    int64_t n = 0;
    for (int d = 0; d < t->ndims; d++)
        n += t->dims[d] != 1;
    return n;
}

static dla_tensor *to_dtype(dla_tensor *t, dla_dtype dtype)
{
    return t->dtype == dtype ? t : dla_cast(t, dtype);
}

/* When targets t (labelled like y; ct, cy as the caller gave them) differ
 * from y in their C dim, fails naming the class (or channel) counts, with
 * a hint for class numbers given where one-hot targets are expected; 0
 * when the C dims agree (the mismatch is elsewhere). */
static int class_count_differs(const char *op, int kind, const dla_tensor *ct, const dla_tensor *t,
                               const dla_tensor *cy, const dla_tensor *y)
{
    int c = find_label(y->format, 'C');
    if (c < 0 || c >= t->ndims || t->format[c] != 'C' || t->dims[c] == y->dims[c])
        return 0;
    char ts[DLA__DIMS_BUF], ys[DLA__DIMS_BUF];
    dla__tensor_dims_str(ct, ts, sizeof ts);
    dla__tensor_dims_str(cy, ys, sizeof ys);
    if (kind != LOSS_EXCLUSIVE && kind != LOSS_INDEPENDENT) {
        dla__fail(DLA_ERR_SHAPE,
                  "%s: argument targets: %lld channels (the C dim of %s) where y (%s) has %lld",
                  op, (long long)t->dims[c], ts, ys, (long long)y->dims[c]);
        return 1;
    }
    dla__fail(DLA_ERR_SHAPE,
              "%s: argument targets: %lld classes (the C dim of %s) where y (%s) has %lld: the "
              "class counts of the targets and of y (the network's output) differ%s",
              op, (long long)t->dims[c], ts, ys, (long long)y->dims[c],
              t->dims[c] == 1 ? "; for one class number per observation, one-hot encode the "
                                "targets first (dla_onehotencode(targets, num_classes, NULL))"
                              : "");
    return 1;
}

/* ------------------------------------------------------ the public side */

typedef struct loss_call {
    const dla__op *op;
    int kind;
    dla_tensor *y, *t, *w, *m;
    const char *wfmt, *norm, *red, *dfmt, *categories;
    double delta; /* huber's transition point (checked by dla_huber) */
} loss_call;

static int str_is(const char *s, const char *v) { return s && strcmp(s, v) == 0; }
static int str_unset(const char *s) { return !s || !*s; }

static dla_status parse_options(const loss_call *c, loss_attrs *a)
{
    const char *op = c->op->name;
    if (c->kind == LOSS_EXCLUSIVE) {
        if (str_unset(c->categories) || str_is(c->categories, "exclusive") ||
            str_is(c->categories, "single-label"))
            a->kind = LOSS_EXCLUSIVE;
        else if (str_is(c->categories, "independent") || str_is(c->categories, "multilabel"))
            a->kind = LOSS_INDEPENDENT;
        else
            return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                             "%s: option target_categories: \"%s\"; use \"exclusive\" or "
                             "\"independent\"",
                             op, c->categories);
    } else {
        a->kind = c->kind;
    }
    a->delta = c->kind == LOSS_HUBER ? c->delta : 0.0;
    if (str_unset(c->norm) || str_is(c->norm, "batch") || str_is(c->norm, "batch-size"))
        a->norm = NORM_BATCH;
    else if (str_is(c->norm, "all-elements"))
        a->norm = NORM_ALL;
    else if (str_is(c->norm, "mask-included"))
        a->norm = NORM_MASK;
    else if (str_is(c->norm, "none"))
        a->norm = NORM_NONE;
    else
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: option normalization_factor: \"%s\"; use \"batch\", \"all-elements\", "
                         "\"mask-included\" or \"none\"",
                         op, c->norm);
    if (str_unset(c->red) || str_is(c->red, "sum"))
        a->unreduced = 0;
    else if (str_is(c->red, "none"))
        a->unreduced = 1;
    else
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: option reduction: \"%s\"; use \"sum\" or \"none\"", op, c->red);
    if (a->norm == NORM_MASK && !c->m && !a->unreduced)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: option normalization_factor: \"mask-included\" needs a mask", op);
    return DLA_OK;
}

/* Unformatted x read in y's own layout (y's format, or data_format). */
static dla_tensor *in_y_layout(const char *op, const char *arg, dla_tensor *x, const loss_call *c)
{
    const char *fmt = c->dfmt ? c->dfmt : c->y->format;
    if (dla__format_check_labels(op, arg, c->dfmt ? "data_format" : "y's format", x, fmt) != DLA_OK)
        return dla__return(dla__error_tensor());
    return label_as(x, fmt);
}

static dla_tensor *loss_build(const loss_call *c)
{
    const char *op = c->op->name;
    dla_tensor *args[4] = {c->y, c->t, c->w, c->m};
    static const char *const names[4] = {"y", "targets", "weights", "mask"};
    for (int i = 0; i < 4; i++)
        if ((i < 2 || args[i]) && (!args[i] || args[i]->status != DLA_OK))
            return dla__pass_arg(op, names[i], args[i]);
    dla_tensor *y = c->y, *t = c->t;
    char ys[DLA__DIMS_BUF], ts[DLA__DIMS_BUF];
    if (!is_float(y->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument y: %s; losses need single or double", op,
                          dla_dtype_name(y->dtype));
    for (int i = 1; i < 4; i++)
        if (args[i] && args[i]->storage->device != y->storage->device)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument %s is on %s but y is on %s; move it with "
                              "dla_tensor_to_device",
                              op, (const char *[]){"", "targets", "weights", "mask"}[i],
                              args[i]->storage->device->name, y->storage->device->name);
    loss_attrs a = {0};
    if (parse_options(c, &a) != DLA_OK)
        return dla__return(dla__error_tensor());

    dla_scope_begin();
    dla_tensor *r = NULL;
    loss_call lc = *c;
    /* Y, labelled. */
    if (!dla__format_of_arg(op, "y", y, c->dfmt, "\"CB\", \"SSCB\", \"CBT\"..."))
        goto fail;
    if (y->format[0]) {
        lc.dfmt = NULL;
    } else {
        y = label_as(y, c->dfmt);
        if (y->status != DLA_OK) {
            r = dla_tensor_retain(y);
            goto done;
        }
    }
    if ((a.kind == LOSS_EXCLUSIVE || a.kind == LOSS_INDEPENDENT) && find_label(y->format, 'C') < 0) {
        dla__fail(DLA_ERR_FORMAT, "%s: argument y: %s \"%s\" has no channel (C) dim", op,
                  dla__tensor_dims_str(y, ys, sizeof ys), y->format);
        goto fail;
    }
    /* Targets: Y's format and dims. */
    if (t->format[0]) {
        if (strcmp(t->format, y->format) != 0) {
            dla__fail(DLA_ERR_FORMAT, "%s: argument targets: format \"%s\" differs from y's \"%s\"",
                      op, t->format, y->format);
            goto fail;
        }
    } else {
        t = in_y_layout(op, "targets", t, &lc);
    }
    if (t->status == DLA_OK &&
        (t->ndims != y->ndims || memcmp(t->dims, y->dims, sizeof(int64_t) * (size_t)y->ndims))) {
        if (class_count_differs(op, a.kind, c->t, t, c->y, y))
            goto fail;
        dla__fail(DLA_ERR_SHAPE, "%s: argument targets: %s does not match y's %s", op,
                  dla__tensor_dims_str(c->t, ts, sizeof ts), dla__tensor_dims_str(c->y, ys, sizeof ys));
        goto fail;
    }
    t = to_dtype(t, y->dtype);
    dla_tensor *in[4] = {y, t};
    int nin = 2;
    /* Weights. */
    if (c->w) {
        dla_tensor *w = c->w;
        int cdim = find_label(y->format, 'C');
        if (!w->format[0]) {
            if (!str_unset(c->wfmt)) {
                if (dla__format_check_labels(op, "weights", "weights_format", w, c->wfmt) != DLA_OK)
                    goto fail;
                w = label_as(w, c->wfmt);
            } else if (cdim >= 0 && count_non_singleton(w) <= 1 &&
                       dla_tensor_numel(w) == y->dims[cdim] && y->dims[cdim] > 1) {
                w = label_as(dla_reshape(w, "", DLA_DIMS(dla_tensor_numel(w))), "C");
            } else {
                w = in_y_layout(op, "weights", w, &lc);
            }
        } else if (!str_unset(c->wfmt) && strcmp(c->wfmt, w->format) != 0) {
            /* weights_format labels unformatted weights; on formatted ones
             * it can only repeat their labels (a snippet written for
             * unformatted weights then works with formatted ones too), and
             * labels that differ are a contradiction, not a relabelling. */
            dla__fail(DLA_ERR_FORMAT,
                      "%s: option weights_format: \"%s\" differs from the weights' own format "
                      "\"%s\" (weights_format labels unformatted weights; leave it unset for "
                      "formatted ones)",
                      op, c->wfmt, w->format);
            goto fail;
        }
        if (w->status == DLA_OK)
            w = align_to(op, "weights", w, y);
        in[nin++] = to_dtype(w, y->dtype);
        a.has_w = 1;
    }
    /* Mask. */
    if (c->m) {
        dla_tensor *m = c->m;
        if (!m->format[0])
            m = in_y_layout(op, "mask", m, &lc);
        if (m->status == DLA_OK)
            m = align_to(op, "mask", m, y);
        in[nin++] = to_dtype(m, y->dtype);
        a.has_m = 1;
    }
    for (int i = 0; i < nin; i++)
        if (in[i]->status != DLA_OK) {
            r = dla_tensor_retain(in[i]);
            goto done;
        }
    norm_of(&a, y);
    r = dla__apply(c->op, &a, sizeof a, nin, in);
    if (a.unreduced && lc.dfmt)
        r = unlabel(r, lc.dfmt);
    r = dla_tensor_retain(r);
    goto done;
fail:
    r = dla__error_tensor();
done:
    dla_scope_end();
    return dla__return(r);
}

DLA_API dla_tensor *dla_crossentropy(dla_tensor *y, dla_tensor *targets,
                                     const dla_crossentropy_options *opts)
{
    static const dla_crossentropy_options none;
    const dla_crossentropy_options *o = opts ? opts : &none;
    loss_call c = {&crossentropy_op, LOSS_EXCLUSIVE, y, targets, o->weights, o->mask,
                   o->weights_format, o->normalization_factor, o->reduction, o->data_format,
                   o->target_categories, 0.0};
    return loss_build(&c);
}

DLA_API dla_tensor *dla_binary_crossentropy(dla_tensor *y, dla_tensor *targets,
                                            const dla_crossentropy_options *opts)
{
    static const dla_crossentropy_options none;
    const dla_crossentropy_options *o = opts ? opts : &none;
    loss_call c = {&binary_crossentropy_op, LOSS_INDEPENDENT, y, targets, o->weights, o->mask,
                   o->weights_format, o->normalization_factor, o->reduction, o->data_format,
                   NULL, 0.0};
    return loss_build(&c);
}

static dla_tensor *regression(const dla__op *op, int kind, dla_tensor *y, dla_tensor *targets,
                              const dla_regression_loss_options *opts)
{
    static const dla_regression_loss_options none;
    const dla_regression_loss_options *o = opts ? opts : &none;
    loss_call c = {op, kind, y, targets, o->weights, o->mask, o->weights_format,
                   o->normalization_factor, o->reduction, o->data_format, NULL, 0.0};
    return loss_build(&c);
}

DLA_API dla_tensor *dla_l1loss(dla_tensor *y, dla_tensor *targets,
                               const dla_regression_loss_options *opts)
{
    return regression(&l1loss_op, LOSS_L1, y, targets, opts);
}

DLA_API dla_tensor *dla_l2loss(dla_tensor *y, dla_tensor *targets,
                               const dla_regression_loss_options *opts)
{
    return regression(&l2loss_op, LOSS_L2, y, targets, opts);
}

DLA_API dla_tensor *dla_mse(dla_tensor *y, dla_tensor *targets,
                            const dla_regression_loss_options *opts)
{
    /* MATLAB's mse has only DataFormat, and refuses any other option. An
     * option set here was ignored: a mask (padded steps) or weights
     * silently left out of the loss, a normalization factor not applied. */
    static const char *const names[] = {"weights", "weights_format", "mask",
                                        "normalization_factor", "reduction"};
    const int set[] = {opts && opts->weights, opts && !str_unset(opts->weights_format),
                       opts && opts->mask, opts && !str_unset(opts->normalization_factor),
                       opts && !str_unset(opts->reduction)};
    for (int i = 0; i < 5; i++)
        if (set[i])
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "dla_mse: option %s: MATLAB's mse takes only DataFormat (it has no "
                              "weights, mask, normalization factor or reduction); for those use "
                              "dla_l2loss, whose loss with the default \"batch-size\" is twice "
                              "mse's", names[i]);
    dla_regression_loss_options o = {.data_format = opts ? opts->data_format : NULL};
    return regression(&mse_op, LOSS_MSE, y, targets, &o);
}

DLA_API dla_tensor *dla_huber(dla_tensor *y, dla_tensor *targets, const dla_huber_options *opts)
{
    static const dla_huber_options none;
    const dla_huber_options *o = opts ? opts : &none;
    const double delta = o->transition_point == 0 ? 1.0 : o->transition_point;
    if (!(delta > 0) || !isfinite(delta))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_huber: option transition_point: %g; it "
                          "must be positive and finite", delta);
    loss_call c = {&huber_op, LOSS_HUBER, y, targets, o->weights, o->mask, o->weights_format,
                   o->normalization_factor, o->reduction, o->data_format, NULL, delta};
    return loss_build(&c);
}

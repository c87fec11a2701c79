/*
 * ops_activation.c - leakyrelu, elu, gelu, softmax and logsoftmax.
 *
 * leakyrelu and elu are single plugin unary kernels whose op (and backward)
 * ops_elementwise.c already has; they only need MATLAB's names and checks.
 * gelu and the softmaxes are ops of their own: a few kernels into one
 * result buffer forward, public ops backward.
 */
#include "core/op.h"
#include "core/ops.h"
#include "core/ops_nn.h"

#include <math.h>
#include <string.h>

static dla_tensor *check_x(const char *op, dla_tensor *x)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    if (!dla__nn_is_float(x->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                          dla_dtype_name(x->dtype));
    return NULL;
}

DLA_API dla_tensor *dla_leakyrelu(dla_tensor *x, double scale)
{
    dla_tensor *e = check_x("dla_leakyrelu", x);
    if (e)
        return e;
    if (!isfinite(scale))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_leakyrelu: argument scale: %g is not finite",
                          scale);
    return dla__unary(DLA_UNARY_LEAKY_RELU, x, scale, 0.0);
}

DLA_API dla_tensor *dla_elu(dla_tensor *x, double alpha)
{
    dla_tensor *e = check_x("dla_elu", x);
    if (e)
        return e;
    if (!isfinite(alpha))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_elu: argument alpha: %g is not finite",
                          alpha);
    return dla__unary(DLA_UNARY_ELU, x, alpha, 0.0);
}

/* ------------------------------------------------------------------ gelu */

#define SQRT1_2 0.70710678118654752440    /* 1/sqrt(2) */
#define SQRT_2_PI 0.79788456080286535588  /* sqrt(2/pi) */
#define INV_SQRT_2PI 0.39894228040143267794 /* 1/sqrt(2 pi) */
#define GELU_K 0.044715

typedef struct gelu_attrs {
    int tanh_approx;
} gelu_attrs;

static dla_status gelu_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    (void)nin, (void)saved;
    const gelu_attrs *a = attrs;
    dla_tensor *x = in[0];
    if (!dla__nn_is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "dla_gelu: argument x: %s; needs single or double",
                         dla_dtype_name(x->dtype));
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc("dla_gelu", dev, x->dtype, x->format, x->ndims, x->dims);
    if (!y)
        return dla_last_status();
    dla_view vy, vx;
    dla__view_of(y, &vy);
    dla__view_of(x, &vx);
    dla_status st;
    if (!a->tanh_approx) { /* y = x * (erf(x/sqrt2)/2 + 1/2) */
        st = dla__nn_unary(dev, DLA_UNARY_AFFINE, SQRT1_2, 0.0, &vy, &vx);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_ERF, 0.0, 0.0, &vy, &vy);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 0.5, 0.5, &vy, &vy);
    } else {
        /* y = x * (1 + tanh(u))/2, u = c x (1 + k x^2), as x * sigmoid(2u):
         * 1 + tanh(u) cancels where x is negative (single precision gave
         * -2.98e-7 for -2.30e-7 at x = -5, and on a device whose tanh stops
         * at -0.99999994, as PoCL's does, -3e-4 at x = -1e4), where the
         * sigmoid keeps its tail. */
        st = dla__nn_unary(dev, DLA_UNARY_SQUARE, 0.0, 0.0, &vy, &vx);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 2.0 * SQRT_2_PI * GELU_K, 2.0 * SQRT_2_PI,
                               &vy, &vy);
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_MUL, &vy, &vy, &vx);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_SIGMOID, 0.0, 0.0, &vy, &vy);
    }
    if (st == DLA_OK)
        st = dla__nn_binary(dev, DLA_BINARY_MUL, &vy, &vy, &vx);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_status gelu_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const gelu_attrs *a = n->attrs;
    dla_tensor *x = n->in[0], *d;
    if (!a->tanh_approx) {
        /* Phi(x) + x phi(x) */
        dla_tensor *cdf = dla_affine(dla_erf(dla_affine(x, SQRT1_2, 0.0)), 0.5, 0.5);
        dla_tensor *pdf = dla_affine(dla_exp(dla_affine(dla_square(x), -0.5, 0.0)), INV_SQRT_2PI, 0.0);
        d = dla_add(cdf, dla_mul(x, pdf));
    } else {
        /* s = sigmoid(2u), u = c (x + k x^3), as forward (not 1 + tanh(u),
         * which cancels): s + x s (1 - s) 2c (1 + 3 k x^2) */
        dla_tensor *x2 = dla_square(x);
        dla_tensor *s = dla_sigmoid(
            dla_mul(x, dla_affine(x2, 2.0 * SQRT_2_PI * GELU_K, 2.0 * SQRT_2_PI)));
        dla_tensor *du2 = dla_affine(x2, 6.0 * SQRT_2_PI * GELU_K, 2.0 * SQRT_2_PI);
        d = dla_add(s, dla_mul(dla_mul(x, dla_mul(s, dla_affine(s, -1.0, 1.0))), du2));
        /* Past |x| = 1e15 s (1 - s) is 0 in either type, and once x^2
         * overflows (|x| past 1.8e19 in single) du2 is Inf: 0 * Inf made
         * the slope NaN at finite x. There it is step(x), 1 or 0. */
        d = dla_where(dla__unary(DLA_UNARY_STEP, x2, 1e30, 0.0),
                      dla__unary(DLA_UNARY_STEP, x, 0.0, 0.0), d);
    }
    gin[0] = dla_mul(gout[0], d);
    return DLA_OK;
}

/* tanh_approx picks the formula: dla_gelu makes 0 or 1; x's shape. */
static dla_status gelu_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    int t = ((const gelu_attrs *)attrs)->tanh_approx;
    if (t != 0 && t != 1)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_gelu: attribute tanh_approx is %d, no "
                         "flag", t);
    out[0] = in[0];
    return DLA_OK;
}

static const char *const x_only[] = {"x", NULL};

static const dla__op gelu_op = {
    .name = "dla_gelu", .nin = 1, .nout = 1, .forward = gelu_forward, .backward = gelu_backward,
    .infer = gelu_infer, .arg_names = x_only,
};
DLA__OP_REGISTER(gelu_op, sizeof(gelu_attrs));

DLA_API dla_tensor *dla_gelu(dla_tensor *x, const char *approximation)
{
    gelu_attrs a = {0};
    if (approximation && !strcmp(approximation, "tanh"))
        a.tanh_approx = 1;
    else if (approximation && strcmp(approximation, "none") != 0)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_gelu: argument approximation: \"%s\"; use "
                          "\"none\" or \"tanh\"", approximation);
    return dla__apply(&gelu_op, &a, sizeof a, 1, &x);
}

/* -------------------------------------------------------------- softmax */

typedef struct softmax_attrs {
    int log;
} softmax_attrs;

static const char *softmax_name(const softmax_attrs *a)
{
    return a->log ? "dla_logsoftmax" : "dla_softmax";
}

/* The 1-based "C" dim of x, or 0 with the error set. */
static int channel_dim(const char *op, const dla_tensor *x)
{
    int c = dla_tensor_find_dim(x, 'C');
    if (!c) {
        char buf[DLA__DIMS_BUF];
        dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s%s%s) has no \"C\" dim to normalize over",
                  op, dla__tensor_dims_str(x, buf, sizeof buf), x->format[0] ? " " : "",
                  x->format[0] ? x->format : ", unformatted");
    }
    return c;
}

/* x must be single or double with a "C" dim: its 1-based position, or 0
 * with the error set. */
static int softmax_check(const char *op, const dla_tensor *x)
{
    if (!dla__nn_is_float(x->dtype)) {
        dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                  dla_dtype_name(x->dtype));
        return 0;
    }
    return channel_dim(op, x);
}

static dla_status softmax_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)nin, (void)saved;
    const softmax_attrs *a = attrs;
    const char *op = softmax_name(a);
    dla_tensor *x = in[0];
    int c = softmax_check(op, x);
    if (!c)
        return dla_last_status();
    dla_device *dev = x->storage->device;
    int64_t rdims[DLA_MAX_DIMS];
    memcpy(rdims, x->dims, sizeof rdims);
    rdims[c - 1] = 1;
    /* An empty x has an empty result, as MATLAB's softmax gives. With no
     * channels (C of 0) the channel maximum below would be a max over
     * nothing, which the reduce kernel refuses; there is nothing to
     * compute, and no per-column sums to hold (0 x 2^40 asked for 4 TiB
     * of them). */
    const int empty = dla__numel(x->ndims, x->dims) == 0;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, x->dims);
    dla_tensor *r = y && !empty ? dla__tensor_alloc(op, dev, x->dtype, "", x->ndims, rdims) : NULL;
    dla_tensor *e = NULL;
    dla_status st = y && (r || empty) ? DLA_OK : dla_last_status();
    dla_view vx = {0}, vy = {0}, vr = {0}, ve = {0}; /* expanded even on failure */
    if (st == DLA_OK && !empty) {
        dla__view_of(x, &vx);
        dla__view_of(y, &vy);
        dla__view_of(r, &vr);
        st = dla__nn_reduce(dev, DLA_REDUCE_MAX, &vr, &vx);
    }
    dla_view vrx = vr; /* r broadcast along C */
    dla__nn_expand(&vrx, x->dims);
    if (st == DLA_OK && !empty) /* y = x - max */
        st = dla__nn_binary(dev, DLA_BINARY_SUB, &vy, &vx, &vrx);
    if (st == DLA_OK && !empty && !a->log) {
        st = dla__nn_unary(dev, DLA_UNARY_EXP, 0.0, 0.0, &vy, &vy);
        if (st == DLA_OK)
            st = dla__nn_reduce(dev, DLA_REDUCE_SUM, &vr, &vy);
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_DIV, &vy, &vy, &vrx);
    } else if (st == DLA_OK && !empty) { /* y = (x - max) - log(sum(exp(x - max))) */
        e = dla__tensor_alloc(op, dev, x->dtype, "", x->ndims, x->dims);
        if (!e)
            st = dla_last_status();
        if (st == DLA_OK) {
            dla__view_of(e, &ve);
            st = dla__nn_unary(dev, DLA_UNARY_EXP, 0.0, 0.0, &ve, &vy);
        }
        if (st == DLA_OK)
            st = dla__nn_reduce(dev, DLA_REDUCE_SUM, &vr, &ve);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_LOG, 0.0, 0.0, &vr, &vr);
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_SUB, &vy, &vy, &vrx);
    }
    dla_tensor_release(r);
    dla_tensor_release(e);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_status softmax_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const softmax_attrs *a = n->attrs;
    dla_tensor *y = n->out[0], *g = gout[0];
    int64_t c = dla_tensor_find_dim(y, 'C');
    if (dla_tensor_numel(y) == 0) { /* empty too: no sums over C to take */
        gin[0] = dla_mul(y, g);
        return DLA_OK;
    }
    if (!a->log) /* y .* (g - sum(g .* y)) */
        gin[0] = dla_mul(y, dla_sub(g, dla_sum(dla_mul(g, y), 1, &c)));
    else /* g - exp(y) .* sum(g) */
        gin[0] = dla_sub(g, dla_mul(dla_exp(y), dla_sum(g, 1, &c)));
    return DLA_OK;
}

/* log picks the formula and must be the op's own (the backward follows
 * the op); forward's check on the recorded x; x's shape. */
static dla_status softmax_infer_as(int log, const void *attrs, const dla__vshape *in,
                                   dla__vshape *out)
{
    const softmax_attrs *a = attrs;
    const char *op = log ? "dla_logsoftmax" : "dla_softmax";
    if (a->log != log)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attribute log is %d", op, a->log);
    dla_tensor x;
    dla__tensor_of_shape(&in[0], &x);
    if (!softmax_check(op, &x))
        return dla_last_status();
    out[0] = in[0];
    return DLA_OK;
}
static dla_status softmax_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    return softmax_infer_as(0, attrs, in, out);
}
static dla_status logsoftmax_infer(const void *attrs, int nin, const dla__vshape *in,
                                   dla__vshape *out)
{
    (void)nin;
    return softmax_infer_as(1, attrs, in, out);
}

static const dla__op softmax_op = {
    .name = "dla_softmax", .nin = 1, .nout = 1, .forward = softmax_forward,
    .backward = softmax_backward, .infer = softmax_infer, .arg_names = x_only,
};
DLA__OP_REGISTER(softmax_op, sizeof(softmax_attrs));
static const dla__op logsoftmax_op = {
    .name = "dla_logsoftmax", .nin = 1, .nout = 1, .forward = softmax_forward,
    .backward = softmax_backward, .infer = logsoftmax_infer, .arg_names = x_only,
};
DLA__OP_REGISTER(logsoftmax_op, sizeof(softmax_attrs));

DLA_API dla_tensor *dla_softmax(dla_tensor *x)
{
    softmax_attrs a = {0};
    return dla__apply(&softmax_op, &a, sizeof a, 1, &x);
}

DLA_API dla_tensor *dla_logsoftmax(dla_tensor *x)
{
    softmax_attrs a = {1};
    return dla__apply(&logsoftmax_op, &a, sizeof a, 1, &x);
}

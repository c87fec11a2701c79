/*
 * ops_elementwise.c - elementwise ops with MATLAB's implicit expansion.
 *
 * Broadcasting is resolved here, once: each operand is handed to the kernel
 * with the result's dims and stride 0 along its expanded dims, so plugins
 * see only equal-dims views. Every op here is a dla__op whose backward is
 * written with these same public ops (and dla__sum_to for broadcasting).
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <math.h>
#include <string.h>

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* The result format of combining a and b: the formatted operand's labels
 * (both must agree when both have labels). */
static dla_status result_format(const char *op, const dla_tensor *a, const dla_tensor *b, int ndims,
                                char *fmt)
{
    const char *fa = a->format, *fb = b->format;
    if (fa[0] && fb[0] && strcmp(fa, fb) != 0)
        return dla__fail(DLA_ERR_FORMAT, "%s: arguments a and b have formats \"%s\" and \"%s\"",
                         op, fa, fb);
    const char *f = fa[0] ? fa : fb;
    if (f[0] && (int)strlen(f) < ndims)
        return dla__fail(DLA_ERR_FORMAT,
                         "%s: the result has %d dims but format \"%s\" labels only %zu", op, ndims,
                         f, strlen(f));
    strcpy(fmt, f);
    return DLA_OK;
}

static void expand_view(const dla_tensor *t, int ndims, const int64_t *dims, dla_view *v)
{
    dla__view_of(t, v);
    for (int i = 0; i < ndims; i++) {
        int64_t d = i < t->ndims ? t->dims[i] : 1;
        v->strides[i] = (d == 1) ? 0 : t->strides[i];
        v->dims[i] = dims[i];
    }
    v->ndims = ndims;
}

/* ------------------------------------------------------------- binary */

typedef struct binary_attrs {
    dla_binary_op op;
} binary_attrs;

#define DLA__BINARY_PUBLIC(name, str) "dla_" str,
static const char *const binary_names[] = {DLA_BINARY_LIST(DLA__BINARY_PUBLIC)};

/* The public function of binary op k, for messages: the kernel's name but
 * for max and min of two tensors, which are dla_max2 and dla_min2. */
static const char *binary_public(dla_binary_op k)
{
    return k == DLA_BINARY_MAX   ? "dla_max2"
           : k == DLA_BINARY_MIN ? "dla_min2"
                                 : binary_names[k];
}

static dla_status binary_forward(const void *attrs, dla_tensor *const *in, int nin,
                                 dla_tensor **out, dla_tensor **saved)
{
    dla_binary_op kop = ((const binary_attrs *)attrs)->op;
    const char *op = binary_public(kop);
    dla_tensor *a = in[0], *b = in[1];
    if (!is_float(a->dtype) || !is_float(b->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: argument %s: %s; elementwise math needs single or double",
                         op, is_float(a->dtype) ? "b" : "a",
                         dla_dtype_name(is_float(a->dtype) ? b->dtype : a->dtype));
    char da[DLA__DIMS_BUF], db[DLA__DIMS_BUF];
    if (a->dtype != b->dtype)
        return dla__fail(DLA_ERR_DTYPE, "%s: arguments a (%s) and b (%s) differ in type", op,
                         dla_dtype_name(a->dtype), dla_dtype_name(b->dtype));
    dla_device *dev = a->storage->device;
    if (b->storage->device != dev)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: arguments a and b are on %s and %s; move one with "
                         "dla_tensor_to_device",
                         op, dev->name, b->storage->device->name);
    int nd = a->ndims > b->ndims ? a->ndims : b->ndims;
    int fnd = (int)strlen(a->format[0] ? a->format : b->format);
    if (fnd > nd)
        nd = fnd;
    int64_t dims[DLA_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int64_t x = i < a->ndims ? a->dims[i] : 1, y = i < b->ndims ? b->dims[i] : 1;
        if (x != y && x != 1 && y != 1)
            return dla__fail(DLA_ERR_SHAPE,
                             "%s: arguments a (%s) and b (%s): dim %d is %lld against %lld; "
                             "implicit expansion needs equal dims or 1",
                             op, dla__tensor_dims_str(a, da, sizeof da),
                             dla__tensor_dims_str(b, db, sizeof db), i + 1, (long long)x,
                             (long long)y);
        dims[i] = x == 1 ? y : x;
    }
    /* Dims of 1 past a format's labels are trailing singletons, as in
     * MATLAB: a 3x2x1 (a sum over dim 3) against a "CB" 3x2 was refused,
     * "the result has 3 dims but format "CB" labels only 2". */
    if (fnd)
        while (nd > fnd && dims[nd - 1] == 1)
            nd--;
    char fmt[DLA_MAX_DIMS + 1];
    dla_status st = result_format(op, a, b, nd, fmt);
    if (st != DLA_OK)
        return st;
    int compare = kop >= DLA_BINARY_EQ;
    dla_tensor *z = dla__tensor_alloc(op, dev, compare ? DLA_BOOL : a->dtype, fmt, nd, dims);
    if (!z)
        return dla_last_status();
    dla_binary_args args = {.struct_size = sizeof args, .op = kop};
    dla__view_of(z, &args.z);
    expand_view(a, nd, dims, &args.a);
    expand_view(b, nd, dims, &args.b);
    if ((st = dla__k_binary(dev, &args)) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

/* The shape binary_forward makes: its op names an entry of the kernel's
 * table, and the result's dims are the operands' expanded. */
static dla_status binary_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_binary_op kop = ((const binary_attrs *)attrs)->op;
    if ((unsigned)kop >= DLA_BINARY_COUNT)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "binary: attribute op is %d; there are %d",
                         (int)kop, (int)DLA_BINARY_COUNT);
    const dla__vshape *a = &in[0], *b = &in[1];
    int nd = a->ndims > b->ndims ? a->ndims : b->ndims;
    int fnd = (int)strlen(a->format[0] ? a->format : b->format);
    out[0].ndims = fnd > nd ? fnd : nd;
    out[0].dtype = kop >= DLA_BINARY_EQ ? DLA_BOOL : a->dtype;
    memcpy(out[0].format, a->format[0] ? a->format : b->format, sizeof out[0].format);
    for (int i = 0; i < out[0].ndims; i++) {
        int64_t x = i < a->ndims ? a->dims[i] : 1, y = i < b->ndims ? b->dims[i] : 1;
        out[0].dims[i] = x == 1 ? y : x;
    }
    /* As binary_forward: dims of 1 past the labels are dropped. */
    if (fnd)
        while (out[0].ndims > fnd && out[0].dims[out[0].ndims - 1] == 1)
            out[0].ndims--;
    return DLA_OK;
}

/* ---------------------------------------------------------- comparisons */

/* The operands' names in the public functions. */
static const char *const a_b[] = {"a", "b", NULL};

/* Logical results, no gradient (a dla__op without backward). */
static const dla__op compare_op = {.name = "compare", .nin = 2, .nout = 1, .forward = binary_forward,
                                   .infer = binary_infer, .constant = 1, .arg_names = a_b};
DLA__OP_REGISTER(compare_op, sizeof(binary_attrs));

dla_tensor *dla__compare(dla_binary_op kop, dla_tensor *a, dla_tensor *b)
{
    binary_attrs at = {kop};
    return dla__apply(&compare_op, &at, sizeof at, 2, (dla_tensor *[]){a, b});
}

/* A float 0/1 mask of cmp(a, b), for the backward of max and min. */
static dla_tensor *mask_of(dla_binary_op cmp, dla_tensor *a, dla_tensor *b)
{
    return dla_cast(dla__compare(cmp, a, b), a->dtype);
}

static dla_status binary_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    dla_binary_op kop = ((const binary_attrs *)n->attrs)->op;
    dla_tensor *a = n->in[0], *b = n->in[1], *z = n->out[0], *g = gout[0];
    dla_tensor *ga = NULL, *gb = NULL;
    switch (kop) {
    case DLA_BINARY_ADD: ga = g; gb = g; break;
    case DLA_BINARY_SUB: ga = g; gb = n->need[1] ? dla_neg(g) : NULL; break;
    case DLA_BINARY_MUL:
        ga = n->need[0] ? dla_mul(g, b) : NULL;
        gb = n->need[1] ? dla_mul(g, a) : NULL;
        break;
    case DLA_BINARY_DIV:
        ga = n->need[0] ? dla_div(g, b) : NULL;
        gb = n->need[1] ? dla_neg(dla_mul(g, dla_div(z, b))) : NULL;
        break;
    case DLA_BINARY_MAX:
    case DLA_BINARY_MIN: {
        /* The forward picks a when a >= b (a <= b), ties included, and
         * when b is NaN (NaN is skipped, as MATLAB's max does): the
         * gradient goes where the value came from, to a where z equals
         * a (to b when both are NaN), never to a skipped NaN. It is picked, not multiplied by a 0/1 mask:
         * g .* 0 was NaN where g is infinite (sqrt(max(x, 0)) at x < 0
         * gave x the gradient NaN, not 0). step(g) over +Inf is a zero
         * of g's shape whatever g holds. */
        dla_tensor *from_a = dla__compare(DLA_BINARY_EQ, z, a);
        dla_tensor *zero = dla__unary(DLA_UNARY_STEP, g, INFINITY, 0.0);
        ga = n->need[0] ? dla_where(from_a, g, zero) : NULL;
        gb = n->need[1] ? dla_where(from_a, zero, g) : NULL;
        break;
    }
    case DLA_BINARY_POW:
        /* b a^(b-1), but 0 where b = 0 (a^0 is 1; 0 * 0^-1 would be
         * NaN): there the power reads b - 1 + 1 = 0 instead. */
        ga = n->need[0] ? dla_mul(g, dla_mul(b, dla_pow(a, dla_add(dla_affine(b, 1.0, -1.0),
                                                                  mask_of(DLA_BINARY_EQ, b,
                                                                          dla_affine(b, 0.0, 0.0))))))
                        : NULL;
        if (n->need[1]) {
            /* z log(a), but 0 where a = 0 and b >= 0 (the limit, as
             * PyTorch takes it; 0 * log(0) would be NaN): there log reads
             * a + 1 = 1 instead. */
            dla_tensor *k = dla_mul(mask_of(DLA_BINARY_EQ, a, dla_affine(a, 0.0, 0.0)),
                                    mask_of(DLA_BINARY_GE, b, dla_affine(b, 0.0, 0.0)));
            gb = dla_mul(g, dla_mul(z, dla_log(dla_add(a, k))));
        }
        break;
    default: /* comparisons have no gradient */
        return DLA_OK;
    }
    gin[0] = ga ? dla__sum_to(ga, a) : NULL;
    gin[1] = gb ? dla__sum_to(gb, b) : NULL;
    return DLA_OK;
}

static const char *binary_call(const void *attrs)
{
    const dla_binary_op k = ((const binary_attrs *)attrs)->op;
    return (unsigned)k < DLA_BINARY_COUNT ? binary_public(k) : "binary";
}

static const dla__op binary_op = {
    .name = "binary", .nin = 2, .nout = 1, .forward = binary_forward, .backward = binary_backward,
    .infer = binary_infer, .call_name = binary_call, .arg_names = a_b,
};
DLA__OP_REGISTER(binary_op, sizeof(binary_attrs));

static dla_tensor *binary(dla_binary_op kop, dla_tensor *a, dla_tensor *b)
{
    binary_attrs at = {kop};
    return dla__apply(&binary_op, &at, sizeof at, 2, (dla_tensor *[]){a, b});
}

DLA_API dla_tensor *dla_add(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_ADD, a, b); }
DLA_API dla_tensor *dla_sub(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_SUB, a, b); }
DLA_API dla_tensor *dla_mul(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_MUL, a, b); }
DLA_API dla_tensor *dla_div(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_DIV, a, b); }
DLA_API dla_tensor *dla_max2(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_MAX, a, b); }
DLA_API dla_tensor *dla_min2(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_MIN, a, b); }
DLA_API dla_tensor *dla_pow(dla_tensor *a, dla_tensor *b) { return binary(DLA_BINARY_POW, a, b); }

/* -------------------------------------------------------------- unary */

typedef struct unary_attrs {
    dla_unary_op op;
    double alpha, beta;
} unary_attrs;

#define DLA__UNARY_PUBLIC(name, str) "dla_" str,
static const char *const unary_names[] = {DLA_UNARY_LIST(DLA__UNARY_PUBLIC)};

static dla_status unary_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    const unary_attrs *u = attrs;
    const char *op = unary_names[u->op];
    dla_tensor *x = in[0];
    if (!is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; elementwise math needs single or double",
                         op, dla_dtype_name(x->dtype));
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, x->dims);
    if (!y)
        return dla_last_status();
    dla_unary_args args = {.struct_size = sizeof args, .op = u->op, .alpha = u->alpha, .beta = u->beta};
    dla__view_of(y, &args.y);
    dla__view_of(x, &args.x);
    dla_status st = dla__k_unary(dev, &args);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_tensor *unary(dla_unary_op kop, dla_tensor *x, double alpha, double beta);

/* --------------------------------------------------------- relu's mask */

/* relu's gradient, g where y > 0 and 0 elsewhere, from relu's result y
 * (step(relu(x)) is step(x) bit for bit: relu keeps exactly the positive
 * elements). Picked, not multiplied as g .* step(y): where relu is flat
 * an infinite g (sqrt(relu(x)) at x < 0, whose sqrt' is Inf at 0) made
 * Inf * 0, a NaN that spread to every weight, for a gradient that is 0.
 * One fused pass where the device has the fused kernel; the step, its
 * logical and the ternary where otherwise. Its own gradient: the same
 * pick for g, nothing for y (a step is flat almost everywhere). */
static dla_status relu_grad_forward(const void *attrs, dla_tensor *const *in, int nin,
                                    dla_tensor **out, dla_tensor **saved)
{
    static const char op[] = "dla_relu (backward)";
    dla_tensor *g = in[0], *y = in[1];
    if (g->ndims != y->ndims || memcmp(g->dims, y->dims, (size_t)g->ndims * sizeof *g->dims) ||
        g->dtype != y->dtype || !is_float(g->dtype)) {
        char bg[DLA__DIMS_BUF], by[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_SHAPE, "%s: the gradient (%s %s) and relu's result (%s %s) "
                         "differ", op, dla__tensor_dims_str(g, bg, sizeof bg),
                         dla_dtype_name(g->dtype), dla__tensor_dims_str(y, by, sizeof by),
                         dla_dtype_name(y->dtype));
    }
    dla_device *dev = g->storage->device;
    dla_tensor *z = dla__tensor_alloc(op, dev, g->dtype, g->format, g->ndims, g->dims);
    if (!z)
        return dla_last_status();
    dla_status st;
    if (dla__device_supports(dev, DLA_KERNEL_FUSED, g->dtype)) {
        dla_fused_args p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.dtype = g->dtype;
        p.ninputs = 2;
        p.ninsns = 2;
        dla__view_of(g, &p.inputs[0]);
        dla__view_of(y, &p.inputs[1]);
        p.insns[0] = (dla_fused_insn){.kind = DLA_FUSED_UNARY, .op = DLA_UNARY_STEP, .src = {-2}};
        /* step ? g : step, the step being 0 where it is false. */
        p.insns[1] = (dla_fused_insn){.kind = DLA_FUSED_WHERE, .src = {0, -1, 0}};
        dla__view_of(z, &p.y);
        st = dla__k_fused(dev, &p);
    } else {
        /* The same pick: s = step(y), c = logical(s), z = c ? g : s. */
        dla_tensor *s = dla__tensor_alloc(op, dev, g->dtype, "", g->ndims, g->dims);
        dla_tensor *c = s ? dla__tensor_alloc(op, dev, DLA_BOOL, "", g->ndims, g->dims) : NULL;
        st = c ? DLA_OK : dla_last_status();
        dla_unary_args u = {.struct_size = sizeof u, .op = DLA_UNARY_STEP};
        dla_ternary_args w = {.struct_size = sizeof w, .op = DLA_TERNARY_WHERE};
        if (st == DLA_OK) {
            dla__view_of(s, &u.y);
            dla__view_of(y, &u.x);
            dla__view_of(c, &w.cond);
            dla__view_of(g, &w.a);
            w.b = u.y;
            dla__view_of(z, &w.z);
            st = dla__k_unary(dev, &u);
        }
        if (st == DLA_OK)
            st = dla__k_cast(dev, &w.cond, &u.y);
        if (st == DLA_OK)
            st = dla__k_ternary(dev, &w);
        dla_tensor_release(c);
        dla_tensor_release(s);
    }
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

static dla_tensor *relu_grad(dla_tensor *g, dla_tensor *y);

static dla_status relu_grad_backward(const dla__node *n, dla_tensor *const *gout,
                                     dla_tensor **gin)
{
    if (n->need[0])
        gin[0] = relu_grad(gout[0], n->in[1]);
    return DLA_OK;
}

static const dla__op relu_grad_op = {
    .name = "dla__relu_grad", .nin = 2, .nout = 1, .forward = relu_grad_forward,
    .backward = relu_grad_backward,
};
DLA__OP_REGISTER(relu_grad_op, 0);

static dla_tensor *relu_grad(dla_tensor *g, dla_tensor *y)
{
    return dla__apply(&relu_grad_op, NULL, 0, 2, (dla_tensor *[]){g, y});
}

static dla_status unary_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const unary_attrs *u = n->attrs;
    dla_tensor *x = n->in[0], *y = n->out[0], *g = gout[0];
    switch (u->op) {
    case DLA_UNARY_NEG: gin[0] = dla_neg(g); break;
    case DLA_UNARY_EXP: gin[0] = dla_mul(g, y); break;
    case DLA_UNARY_LOG: gin[0] = dla_div(g, x); break;
    case DLA_UNARY_SQRT: gin[0] = dla_div(g, dla_affine(y, 2.0, 0.0)); break;
    case DLA_UNARY_ABS: gin[0] = dla_mul(g, dla_sign(x)); break;
    case DLA_UNARY_SIN: gin[0] = dla_mul(g, dla_cos(x)); break;
    case DLA_UNARY_COS: gin[0] = dla_neg(dla_mul(g, dla_sin(x))); break;
    case DLA_UNARY_TANH: gin[0] = dla_mul(g, dla_affine(dla_square(y), -1.0, 1.0)); break;
    case DLA_UNARY_SIGMOID: gin[0] = dla_mul(g, dla_mul(y, dla_affine(y, -1.0, 1.0))); break;
    case DLA_UNARY_RELU: gin[0] = relu_grad(g, y); break;
    case DLA_UNARY_AFFINE: gin[0] = dla_affine(g, u->alpha, 0.0); break;
    case DLA_UNARY_ERF: /* 2/sqrt(pi) exp(-x^2) */
        gin[0] = dla_mul(g, dla_affine(dla_exp(dla_neg(dla_square(x))), 1.1283791670955126, 0.0));
        break;
    case DLA_UNARY_POWS: /* x^0 is 1 everywhere: 0, not 0 * 0^-1 = NaN at x = 0 */
        gin[0] = u->alpha == 0.0 ? dla_affine(g, 0.0, 0.0)
                                 : dla_mul(g, dla_affine(dla_pows(x, u->alpha - 1.0), u->alpha, 0.0));
        break;
    case DLA_UNARY_SQUARE: gin[0] = dla_mul(g, dla_affine(x, 2.0, 0.0)); break;
    case DLA_UNARY_RECIPROCAL: gin[0] = dla_neg(dla_mul(g, dla_square(y))); break;
    case DLA_UNARY_LEAKY_RELU: /* slope 1 above 0, alpha below */
        gin[0] = dla_mul(g, dla_affine(unary(DLA_UNARY_STEP, x, 0.0, 0.0), 1.0 - u->alpha, u->alpha));
        break;
    case DLA_UNARY_ELU: /* x > 0: 1; else y + alpha. Picked, not blended as
                         * step + (1 - step) .* (y + alpha): at x = +Inf that
                         * was 1 + 0 * Inf, NaN. */
        gin[0] = dla_where(unary(DLA_UNARY_STEP, x, 0.0, 0.0), g,
                           dla_mul(g, dla_affine(y, 1.0, u->alpha)));
        break;
    default: /* sign and step are piecewise constant: zero almost everywhere,
              * whatever g holds (as relu's flat side). A step over +Inf is
              * that zero; g .* 0 was NaN where g is infinite: the second
              * derivative through max2's backward, whose zero is step(g),
              * of sqrt(dL/dx) at a flat x (until 2026-11-30). */
        gin[0] = unary(DLA_UNARY_STEP, g, INFINITY, 0.0);
        break;
    }
    return DLA_OK;
}

/* unary_forward's op names an entry of the kernel's table (and of
 * unary_names); the result has x's shape. */
static dla_status unary_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const unary_attrs *u = attrs;
    if ((unsigned)u->op >= sizeof unary_names / sizeof *unary_names)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "unary: attribute op is %d; there are %zu",
                         (int)u->op, sizeof unary_names / sizeof *unary_names);
    out[0] = in[0];
    return DLA_OK;
}

static const char *unary_call(const void *attrs)
{
    const dla_unary_op k = ((const unary_attrs *)attrs)->op;
    return (unsigned)k < sizeof unary_names / sizeof *unary_names ? unary_names[k] : "unary";
}

static const char *const x_only[] = {"x", NULL};

static const dla__op unary_op = {
    .name = "unary", .nin = 1, .nout = 1, .forward = unary_forward, .backward = unary_backward,
    .infer = unary_infer, .call_name = unary_call, .arg_names = x_only,
};
DLA__OP_REGISTER(unary_op, sizeof(unary_attrs));

static dla_tensor *unary(dla_unary_op kop, dla_tensor *x, double alpha, double beta)
{
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    unary_attrs u;
    memset(&u, 0, sizeof u);
    u.op = kop;
    u.alpha = alpha;
    u.beta = beta;
    return dla__apply(&unary_op, &u, sizeof u, 1, &x);
}

dla_tensor *dla__unary(dla_unary_op kop, dla_tensor *x, double alpha, double beta)
{
    return unary(kop, x, alpha, beta);
}

DLA_API dla_tensor *dla_neg(dla_tensor *x) { return unary(DLA_UNARY_NEG, x, 0, 0); }
DLA_API dla_tensor *dla_exp(dla_tensor *x) { return unary(DLA_UNARY_EXP, x, 0, 0); }
DLA_API dla_tensor *dla_log(dla_tensor *x) { return unary(DLA_UNARY_LOG, x, 0, 0); }
DLA_API dla_tensor *dla_sqrt(dla_tensor *x) { return unary(DLA_UNARY_SQRT, x, 0, 0); }
DLA_API dla_tensor *dla_abs(dla_tensor *x) { return unary(DLA_UNARY_ABS, x, 0, 0); }
DLA_API dla_tensor *dla_sin(dla_tensor *x) { return unary(DLA_UNARY_SIN, x, 0, 0); }
DLA_API dla_tensor *dla_cos(dla_tensor *x) { return unary(DLA_UNARY_COS, x, 0, 0); }
DLA_API dla_tensor *dla_tanh(dla_tensor *x) { return unary(DLA_UNARY_TANH, x, 0, 0); }
DLA_API dla_tensor *dla_sigmoid(dla_tensor *x) { return unary(DLA_UNARY_SIGMOID, x, 0, 0); }
DLA_API dla_tensor *dla_relu(dla_tensor *x) { return unary(DLA_UNARY_RELU, x, 0, 0); }
DLA_API dla_tensor *dla_square(dla_tensor *x) { return unary(DLA_UNARY_SQUARE, x, 0, 0); }
DLA_API dla_tensor *dla_sign(dla_tensor *x) { return unary(DLA_UNARY_SIGN, x, 0, 0); }
DLA_API dla_tensor *dla_erf(dla_tensor *x) { return unary(DLA_UNARY_ERF, x, 0, 0); }
DLA_API dla_tensor *dla_pows(dla_tensor *x, double p) { return unary(DLA_UNARY_POWS, x, p, 0); }
DLA_API dla_tensor *dla_affine(dla_tensor *x, double scale, double shift)
{
    return unary(DLA_UNARY_AFFINE, x, scale, shift);
}

/*
 * ops_elementwise.c - elementwise ops with MATLAB's implicit expansion.
 *
 * Broadcasting is resolved here, once: each operand is handed to the kernel
 * with the result's dims and stride 0 along its expanded dims, so plugins
 * see only equal-dims views.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/tensor.h"

#include <string.h>

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* Checks one operand of an elementwise op; NULL when fine, else the error
 * tensor to return. */
static dla_tensor *check_operand(const char *op, const char *name, dla_tensor *t)
{
    if (!t || t->status != DLA_OK)
        return dla__pass_error(t);
    if (!is_float(t->dtype))
        return dla__error(DLA_ERR_DTYPE, "%s: argument %s: %s; elementwise math needs single or double",
                          op, name, dla_dtype_name(t->dtype));
    return NULL;
}

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

static dla_tensor *binary(const char *op, dla_binary_op kop, dla_tensor *a, dla_tensor *b)
{
    dla_tensor *e;
    if ((e = check_operand(op, "a", a)) || (e = check_operand(op, "b", b)))
        return e;
    char da[DLA__DIMS_BUF], db[DLA__DIMS_BUF];
    if (a->dtype != b->dtype)
        return dla__error(DLA_ERR_DTYPE, "%s: arguments a (%s) and b (%s) differ in type", op,
                          dla_dtype_name(a->dtype), dla_dtype_name(b->dtype));
    dla_device *dev = a->storage->device;
    if (b->storage->device != dev)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
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
            return dla__error(DLA_ERR_SHAPE,
                              "%s: arguments a (%s) and b (%s): dim %d is %lld against %lld; "
                              "implicit expansion needs equal dims or 1",
                              op, dla__tensor_dims_str(a, da, sizeof da),
                              dla__tensor_dims_str(b, db, sizeof db), i + 1, (long long)x,
                              (long long)y);
        dims[i] = x == 1 ? y : x;
    }
    char fmt[DLA_MAX_DIMS + 1];
    if (result_format(op, a, b, nd, fmt) != DLA_OK)
        return dla__return(dla__error_tensor());
    dla_tensor *z = dla__tensor_alloc(op, dev, a->dtype, fmt, nd, dims);
    if (!z)
        return dla__return(dla__error_tensor());
    dla_binary_args args = {.struct_size = sizeof args, .op = kop};
    dla__view_of(z, &args.z);
    expand_view(a, nd, dims, &args.a);
    expand_view(b, nd, dims, &args.b);
    if (dla__k_binary(dev, &args) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(z);
        return dla__return(dla__error_tensor());
    }
    return dla__return(z);
}

DLA_API dla_tensor *dla_add(dla_tensor *a, dla_tensor *b) { return binary("dla_add", DLA_BINARY_ADD, a, b); }
DLA_API dla_tensor *dla_sub(dla_tensor *a, dla_tensor *b) { return binary("dla_sub", DLA_BINARY_SUB, a, b); }
DLA_API dla_tensor *dla_mul(dla_tensor *a, dla_tensor *b) { return binary("dla_mul", DLA_BINARY_MUL, a, b); }
DLA_API dla_tensor *dla_div(dla_tensor *a, dla_tensor *b) { return binary("dla_div", DLA_BINARY_DIV, a, b); }
DLA_API dla_tensor *dla_max2(dla_tensor *a, dla_tensor *b) { return binary("dla_max2", DLA_BINARY_MAX, a, b); }
DLA_API dla_tensor *dla_min2(dla_tensor *a, dla_tensor *b) { return binary("dla_min2", DLA_BINARY_MIN, a, b); }
DLA_API dla_tensor *dla_pow(dla_tensor *a, dla_tensor *b) { return binary("dla_pow", DLA_BINARY_POW, a, b); }

static dla_tensor *unary(const char *op, dla_unary_op kop, dla_tensor *x, double alpha, double beta)
{
    dla_tensor *e = check_operand(op, "x", x);
    if (e)
        return e;
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, x->dims);
    if (!y)
        return dla__return(dla__error_tensor());
    dla_unary_args args = {.struct_size = sizeof args, .op = kop, .alpha = alpha, .beta = beta};
    dla__view_of(y, &args.y);
    dla__view_of(x, &args.x);
    if (dla__k_unary(dev, &args) != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(y);
        return dla__return(dla__error_tensor());
    }
    return dla__return(y);
}

DLA_API dla_tensor *dla_neg(dla_tensor *x) { return unary("dla_neg", DLA_UNARY_NEG, x, 0, 0); }
DLA_API dla_tensor *dla_exp(dla_tensor *x) { return unary("dla_exp", DLA_UNARY_EXP, x, 0, 0); }
DLA_API dla_tensor *dla_log(dla_tensor *x) { return unary("dla_log", DLA_UNARY_LOG, x, 0, 0); }
DLA_API dla_tensor *dla_sqrt(dla_tensor *x) { return unary("dla_sqrt", DLA_UNARY_SQRT, x, 0, 0); }
DLA_API dla_tensor *dla_abs(dla_tensor *x) { return unary("dla_abs", DLA_UNARY_ABS, x, 0, 0); }
DLA_API dla_tensor *dla_sin(dla_tensor *x) { return unary("dla_sin", DLA_UNARY_SIN, x, 0, 0); }
DLA_API dla_tensor *dla_cos(dla_tensor *x) { return unary("dla_cos", DLA_UNARY_COS, x, 0, 0); }
DLA_API dla_tensor *dla_tanh(dla_tensor *x) { return unary("dla_tanh", DLA_UNARY_TANH, x, 0, 0); }
DLA_API dla_tensor *dla_sigmoid(dla_tensor *x) { return unary("dla_sigmoid", DLA_UNARY_SIGMOID, x, 0, 0); }
DLA_API dla_tensor *dla_relu(dla_tensor *x) { return unary("dla_relu", DLA_UNARY_RELU, x, 0, 0); }
DLA_API dla_tensor *dla_affine(dla_tensor *x, double scale, double shift)
{
    return unary("dla_affine", DLA_UNARY_AFFINE, x, scale, shift);
}

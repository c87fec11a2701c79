/*
 * ops_compare.c - comparisons (eq, ne, lt, le, gt, ge) and where.
 *
 * Comparisons go to the binary kernel, which reads two float operands and
 * writes logical bytes; operands of other dtypes (int32 labels, logical
 * masks, uint8 images) are converted to a float dtype that holds every
 * value of both exactly (compare_dtype), so dla_eq(onehotdecode(y), labels)
 * just works, and an operand larger than COMPARE_CHUNK elements is
 * converted a chunk of the result at a time. where goes to the ternary
 * kernel. Broadcasting is resolved here as in ops_elementwise.c: every
 * operand reaches the kernel with the result's dims and stride 0 along its
 * expanded dims.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <string.h>

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

dla_status dla__broadcast(const char *op, int n, dla_tensor *const *t, const char *const *names,
                          int *nd_out, int64_t *dims, char *fmt)
{
    const char *f = "";
    int fi = -1;
    for (int i = 0; i < n; i++) {
        if (!t[i]->format[0])
            continue;
        if (f[0] && strcmp(f, t[i]->format) != 0)
            return dla__fail(DLA_ERR_FORMAT, "%s: arguments %s and %s have formats \"%s\" and \"%s\"",
                             op, names[fi], names[i], f, t[i]->format);
        f = t[i]->format;
        fi = i;
    }
    int nd = (int)strlen(f);
    for (int i = 0; i < n; i++)
        if (t[i]->ndims > nd)
            nd = t[i]->ndims;
    for (int d = 0; d < nd; d++) {
        int64_t size = 1;
        int from = -1;
        for (int i = 0; i < n; i++) {
            int64_t s = d < t[i]->ndims ? t[i]->dims[d] : 1;
            if (s == 1)
                continue;
            if (size != 1 && s != size) {
                char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
                return dla__fail(DLA_ERR_SHAPE,
                                 "%s: arguments %s (%s) and %s (%s): dim %d is %lld against %lld; "
                                 "implicit expansion needs equal dims or 1",
                                 op, names[from], dla__tensor_dims_str(t[from], a, sizeof a),
                                 names[i], dla__tensor_dims_str(t[i], b, sizeof b), d + 1,
                                 (long long)size, (long long)s);
            }
            size = s;
            from = i;
        }
        dims[d] = size;
    }
    /* Dims of 1 past the labels are trailing singletons, as in MATLAB (a
     * 3x2x1 against a "CB" 3x2 was refused: "the result has 3 dims but
     * format "CB" labels only 2"). */
    if (f[0])
        while (nd > (int)strlen(f) && dims[nd - 1] == 1)
            nd--;
    if (f[0] && (int)strlen(f) < nd)
        return dla__fail(DLA_ERR_FORMAT, "%s: the result has %d dims but format \"%s\" labels only %zu",
                         op, nd, f, strlen(f));
    strcpy(fmt, f);
    *nd_out = nd;
    return DLA_OK;
}

static dla_status same_device(const char *op, int n, dla_tensor *const *t, const char *const *names)
{
    for (int i = 1; i < n; i++)
        if (t[i]->storage->device != t[0]->storage->device)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                             "%s: arguments %s and %s are on %s and %s; move one with "
                             "dla_tensor_to_device",
                             op, names[0], names[i], t[0]->storage->device->name,
                             t[i]->storage->device->name);
    return DLA_OK;
}

static void expand_view(const dla_tensor *t, int nd, const int64_t *dims, dla_view *v)
{
    dla__view_of(t, v);
    for (int i = 0; i < nd; i++) {
        int64_t d = i < t->ndims ? t->dims[i] : 1;
        v->strides[i] = d == 1 ? 0 : t->strides[i];
        v->dims[i] = dims[i];
    }
    v->ndims = nd;
}

/* t converted to dtype as a +1 reference of ours (t itself, retained, when
 * it has that dtype). The conversion is an implementation detail of the
 * forward: it is not recorded, and its scope entry is dropped at once. */
static dla_tensor *converted(dla_tensor *t, dla_dtype dtype)
{
    if (t->dtype == dtype)
        return dla_tensor_retain(t);
    dla__recording_pause();
    dla_scope_begin();
    dla_tensor *c = dla_tensor_retain(dla_cast(t, dtype));
    dla_scope_end();
    dla__recording_resume();
    return c;
}

/* ------------------------------------------------------------ comparisons */

typedef struct compare_attrs {
    dla_binary_op kop;
} compare_attrs;

/* The float dtype a and b are compared in: theirs when they share one;
 * otherwise single when both are single, uint8 or logical (every uint8 is
 * exact in single's 24 bits), else double, exact for int32 too (single
 * would make 2^31 - 1 and 2^31 - 2 equal). Each operand's values are held
 * exactly, so the result is the comparison of the values themselves, and
 * the same in either dtype. */
static dla_dtype compare_dtype(dla_dtype a, dla_dtype b)
{
    if (a == b && is_float(a))
        return a;
    int narrow_a = a == DLA_F32 || a == DLA_U8 || a == DLA_BOOL;
    int narrow_b = b == DLA_F32 || b == DLA_U8 || b == DLA_BOOL;
    return narrow_a && narrow_b ? DLA_F32 : DLA_F64;
}

/* Elements of the result compared per launch when an operand larger than
 * this must be converted: the converted copies are then at most this many
 * elements each, not the whole operand (a 2 GiB uint8 image against
 * another one took two 16 GiB double copies, 22 GiB in all). */
#define COMPARE_CHUNK ((int64_t)1 << 22)

typedef struct compare_job {
    dla_device *dev;
    dla_binary_op kop;
    dla_dtype want;
} compare_job;

/* v (with z's dims, stride 0 along its expanded dims) in j->want, as a
 * dense copy of the elements v actually holds, expanded again: tmp gets the
 * copy, *out the view of it to compare. */
static dla_status convert_view(const compare_job *j, const dla_view *v, dla_tensor **tmp,
                               dla_view *out)
{
    dla_view c = *v;
    for (int i = 0; i < c.ndims; i++)
        if (c.strides[i] == 0)
            c.dims[i] = 1;
    dla_tensor *t = dla__tensor_alloc("compare", j->dev, j->want, "", c.ndims, c.dims);
    if (!t)
        return dla_last_status();
    dla_view y;
    dla__view_of(t, &y);
    dla_status st = dla__k_cast(j->dev, &y, &c);
    if (st != DLA_OK) {
        dla_tensor_release(t);
        return st;
    }
    for (int i = 0; i < y.ndims; i++)
        if (y.dims[i] != v->dims[i]) {
            y.dims[i] = v->dims[i];
            y.strides[i] = 0;
        }
    *tmp = t;
    *out = y;
    return DLA_OK;
}

static dla_status compare_chunk(const compare_job *j, const dla_view *z, const dla_view *a,
                                const dla_view *b)
{
    dla_binary_args args = {.struct_size = sizeof args, .op = j->kop, .z = *z, .a = *a, .b = *b};
    dla_tensor *ta = NULL, *tb = NULL;
    dla_status st = DLA_OK;
    if (a->dtype != j->want)
        st = convert_view(j, a, &ta, &args.a);
    if (st == DLA_OK && b->dtype != j->want)
        st = convert_view(j, b, &tb, &args.b);
    if (st == DLA_OK)
        st = dla__k_binary(j->dev, &args);
    dla_tensor_release(ta);
    dla_tensor_release(tb);
    return st;
}

/* z = a kop b over views of one shape, COMPARE_CHUNK elements of z or
 * fewer per launch: runs of the outermost dim longer than 1, each split
 * again along the next one when a single index of it is still too large. */
static dla_status compare_chunks(const compare_job *j, dla_view z, dla_view a, dla_view b)
{
    int64_t n = dla__numel(z.ndims, z.dims);
    if (n <= COMPARE_CHUNK)
        return n ? compare_chunk(j, &z, &a, &b) : DLA_OK;
    int d = z.ndims - 1;
    while (z.dims[d] == 1)
        d--;
    int64_t size = z.dims[d], inner = n / size;
    int64_t step = inner >= COMPARE_CHUNK ? 1 : COMPARE_CHUNK / inner;
    for (int64_t i = 0; i < size; i += step) {
        int64_t k = step < size - i ? step : size - i;
        dla_view zs = z, as = a, bs = b;
        dla_view *v[3] = {&zs, &as, &bs};
        for (int m = 0; m < 3; m++) {
            v[m]->offset += i * v[m]->strides[d];
            v[m]->dims[d] = k;
        }
        dla_status st = compare_chunks(j, zs, as, bs);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

static dla_status compare_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const compare_attrs *at = attrs;
    static const char *const names[] = {"a", "b"};
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    char fmt[DLA_MAX_DIMS + 1];
    dla_status st = dla__broadcast("compare", 2, in, names, &nd, dims, fmt);
    if (st != DLA_OK)
        return st;
    compare_job j = {in[0]->storage->device, at->kop, compare_dtype(in[0]->dtype, in[1]->dtype)};
    /* An operand of at most COMPARE_CHUNK elements is converted whole (a
     * scalar once, not once per chunk); a larger one chunk by chunk. */
    dla_tensor *a = dla__numel(in[0]->ndims, in[0]->dims) <= COMPARE_CHUNK
                        ? converted(in[0], j.want)
                        : dla_tensor_retain(in[0]);
    dla_tensor *b = dla__numel(in[1]->ndims, in[1]->dims) <= COMPARE_CHUNK
                        ? converted(in[1], j.want)
                        : dla_tensor_retain(in[1]);
    dla_tensor *z = NULL;
    if (a->status != DLA_OK || b->status != DLA_OK) {
        st = a->status != DLA_OK ? a->status : b->status;
        goto done;
    }
    z = dla__tensor_alloc("compare", j.dev, DLA_BOOL, fmt, nd, dims);
    if (!z) {
        st = dla_last_status();
        goto done;
    }
    dla_view zv, av, bv;
    dla__view_of(z, &zv);
    expand_view(a, nd, dims, &av);
    expand_view(b, nd, dims, &bv);
    if (a->dtype == j.want && b->dtype == j.want) {
        /* Nothing to convert: one launch, whatever the size. */
        dla_binary_args args = {.struct_size = sizeof args, .op = at->kop, .z = zv, .a = av, .b = bv};
        st = dla__k_binary(j.dev, &args);
    } else {
        st = compare_chunks(&j, zv, av, bv);
    }
    if (st != DLA_OK) {
        dla_tensor_release(z);
        z = NULL;
    }
done:
    dla_tensor_release(a);
    dla_tensor_release(b);
    out[0] = z;
    return st;
}

#define DLA__COMPARE_OPS(X)                                                                        \
    X(eq, DLA_BINARY_EQ)                                                                           \
    X(ne, DLA_BINARY_NE)                                                                           \
    X(lt, DLA_BINARY_LT)                                                                           \
    X(le, DLA_BINARY_LE)                                                                           \
    X(gt, DLA_BINARY_GT)                                                                           \
    X(ge, DLA_BINARY_GE)

/* Validation happens before dla__apply so messages name the public op. */
static dla_tensor *compare(const dla__op *op, dla_binary_op kop, dla_tensor *a, dla_tensor *b)
{
    if (!a || a->status != DLA_OK)
        return dla__pass_arg(op->name, "a", a);
    if (!b || b->status != DLA_OK)
        return dla__pass_arg(op->name, "b", b);
    dla_tensor *t[2] = {a, b};
    static const char *const names[] = {"a", "b"};
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    char fmt[DLA_MAX_DIMS + 1];
    if (same_device(op->name, 2, t, names) != DLA_OK ||
        dla__broadcast(op->name, 2, t, names, &nd, dims, fmt) != DLA_OK)
        return dla__return(dla__error_tensor());
    compare_attrs at = {kop};
    return dla__apply(op, &at, sizeof at, 2, t);
}

/* compare_forward's kop names an entry of the kernel's table; the shape
 * is the operands' broadcast, logical. */
static dla_status compare_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_binary_op kop = ((const compare_attrs *)attrs)->kop;
    if (kop < DLA_BINARY_EQ || kop >= DLA_BINARY_COUNT)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "compare: attribute kop is %d, no comparison",
                         (int)kop);
    dla_tensor a, b;
    dla__tensor_of_shape(&in[0], &a);
    dla__tensor_of_shape(&in[1], &b);
    static const char *const names[] = {"a", "b"};
    out[0] = (dla__vshape){.dtype = DLA_BOOL};
    return dla__broadcast("compare", 2, (dla_tensor *[]){&a, &b}, names, &out[0].ndims,
                          out[0].dims, out[0].format);
}

#define DLA__COMPARE_DEFINE(cmp, kop)                                                              \
    static const dla__op compare_##cmp##_op = {                                                    \
        .name = "dla_" #cmp, .nin = 2, .nout = 1, .forward = compare_forward,                      \
        .infer = compare_infer, .constant = 1};                                                    \
    DLA__OP_REGISTER(compare_##cmp##_op, sizeof(compare_attrs));                                  \
    DLA_API dla_tensor *dla_##cmp(dla_tensor *a, dla_tensor *b)                                    \
    {                                                                                              \
        return compare(&compare_##cmp##_op, kop, a, b);                                            \
    }
DLA__COMPARE_OPS(DLA__COMPARE_DEFINE)

/* ------------------------------------------------------------------ where */

static dla_status where_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    (void)attrs;
    (void)nin;
    (void)saved;
    static const char *const names[] = {"cond", "a", "b"};
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    char fmt[DLA_MAX_DIMS + 1];
    dla_status st = dla__broadcast("dla_where", 3, in, names, &nd, dims, fmt);
    if (st != DLA_OK)
        return st;
    dla_tensor *cond = converted(in[0], DLA_BOOL);
    if (cond->status != DLA_OK) {
        st = cond->status;
        dla_tensor_release(cond);
        return st;
    }
    dla_device *dev = in[1]->storage->device;
    dla_tensor *z = dla__tensor_alloc("dla_where", dev, in[1]->dtype, fmt, nd, dims);
    if (!z) {
        dla_tensor_release(cond);
        return dla_last_status();
    }
    dla_ternary_args args = {.struct_size = sizeof args, .op = DLA_TERNARY_WHERE};
    dla__view_of(z, &args.z);
    expand_view(cond, nd, dims, &args.cond);
    expand_view(in[1], nd, dims, &args.a);
    expand_view(in[2], nd, dims, &args.b);
    st = dla__k_ternary(dev, &args);
    dla_tensor_release(cond);
    if (st != DLA_OK) {
        dla_tensor_release(z);
        return st;
    }
    out[0] = z;
    return DLA_OK;
}

/* A one-element zero of t's dtype on t's device, for where(cond, g, 0). */
static dla_tensor *zero_like(const dla_tensor *t)
{
    dla_tensor *z = dla__tensor_alloc("dla_where", t->storage->device, t->dtype, "", 1,
                                      (const int64_t[]){1});
    if (!z)
        return dla__return(dla__error_tensor());
    dla_view v;
    dla__view_of(z, &v);
    if (dla__k_fill(z->storage->device, &v, 0.0) != DLA_OK) {
        dla_tensor_release(z);
        return dla__return(dla__error_tensor());
    }
    return dla__return(z);
}

static dla_status where_backward(const dla__node *node, dla_tensor *const *gout, dla_tensor **gin)
{
    dla_tensor *g = gout[0], *cond = node->in[0];
    dla_tensor *zero = zero_like(g);
    if (node->need[1])
        gin[1] = dla__sum_to(dla_where(cond, g, zero), node->in[1]);
    if (node->need[2])
        gin[2] = dla__sum_to(dla_where(cond, zero, g), node->in[2]);
    return DLA_OK;
}

static const dla__op where_op = {.name = "dla_where",
                                 .nin = 3,
                                 .nout = 1,
                                 .forward = where_forward,
                                 .backward = where_backward};
DLA__OP_REGISTER(where_op, 0);

DLA_API dla_tensor *dla_where(dla_tensor *cond, dla_tensor *a, dla_tensor *b)
{
    static const char op[] = "dla_where";
    dla_tensor *t[3] = {cond, a, b};
    static const char *const names[] = {"cond", "a", "b"};
    for (int i = 0; i < 3; i++)
        if (!t[i] || t[i]->status != DLA_OK)
            return dla__pass_arg(op, names[i], t[i]);
    if (!is_float(a->dtype) || a->dtype != b->dtype)
        return dla__error(DLA_ERR_DTYPE,
                          "%s: arguments a (%s) and b (%s) must share a float dtype (single or "
                          "double)",
                          op, dla_dtype_name(a->dtype), dla_dtype_name(b->dtype));
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    char fmt[DLA_MAX_DIMS + 1];
    if (same_device(op, 3, t, names) != DLA_OK || dla__broadcast(op, 3, t, names, &nd, dims, fmt) != DLA_OK)
        return dla__return(dla__error_tensor());
    return dla__apply(&where_op, NULL, 0, 3, t);
}

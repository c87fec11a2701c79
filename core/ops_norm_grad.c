/*
 * ops_norm_grad.c - the two full-size passes of batchnorm's (and
 * instancenorm's) backward as ops: dla__norm_sums, sum(g) and sum(g .* x)
 * per statistic, and dla__norm_dx, g .* p + x .* q + r.
 *
 * Written with dla_mul, dla_sum and dla_add these take eleven passes over
 * the activation (each product stored, then read back); as one fused
 * program each they take two, which is most of what a batchnorm layer's
 * backward costs. They stay ops, with backwards of their own written in
 * public ops, so the normalization's backward is still an expression of
 * ops (higher derivatives, tracing). Without the fused kernels (a plugin
 * below ABI 1.3) their forwards launch the same steps one by one.
 */
#include "core/op.h"
#include "core/ops_nn.h"

#include <string.h>

#define ND 5

/* Five-dim views of dense tensors, broadcast to dims. */
static void view5(const dla_tensor *t, const int64_t *dims, dla_view *v)
{
    dla__nn_view(t, ND, t->dims, v);
    dla__nn_expand(v, dims);
}

/* Dense copies of the inputs (held in d[], released by the caller). */
static dla_status dense_all(const char *op, dla_tensor *const *in, int nin, dla_tensor **d)
{
    memset(d, 0, (size_t)nin * sizeof *d);
    for (int i = 0; i < nin; i++) {
        if (in[i]->ndims != ND)
            return dla__fail(DLA_ERR_SHAPE, "%s: argument %d: %d dims; the normalizations pass "
                             "five", op, i + 1, in[i]->ndims);
        if (!(d[i] = dla__nn_dense(op, in[i])))
            return dla_last_status();
    }
    return DLA_OK;
}

static void release_all(dla_tensor **d, int n)
{
    for (int i = 0; i < n; i++)
        dla_tensor_release(d[i]);
}

/* ----------------------------------------------------------- norm_sums */

typedef struct sums_attrs {
    unsigned char red[ND];
} sums_attrs;

/* s0 = sum(g), s1 = sum(g .* x): one pass with fused_reduce_pair (the
 * program r0 = g, r1 = r0 .* x, summing both registers), a fused sum and a
 * plain one with fused_reduce alone, written-out products elsewhere. */
static dla_status sums_launch(dla_device *dev, dla_dtype dt, const dla_view *vg,
                              const dla_view *vx, const dla_view *vs0, const dla_view *vs1,
                              const char *op)
{
    const int pair = dla__device_supports(dev, DLA_KERNEL_FUSED_REDUCE_PAIR, dt);
    if (pair || dla__nn_fuses(dev, dt)) {
        dla_fused_reduce_args r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        r.op = DLA_REDUCE_SUM;
        r.program.struct_size = sizeof r.program;
        r.program.dtype = dt;
        r.program.ninputs = 2;
        r.program.ninsns = 2;
        r.program.inputs[0] = *vg;
        r.program.inputs[1] = *vx;
        r.program.insns[0] = dla__nn_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, -1, 0);
        r.program.insns[0].alpha = 1.0; /* g itself, as a register */
        r.program.insns[1] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, -2);
        r.program.y = *vg; /* the space's dims only */
        r.y = *vs1;
        if (pair) {
            r.reg2 = 0;
            r.y2 = *vs0;
        }
        dla_status st = dla__k_fused_reduce(dev, &r);
        if (st == DLA_OK && !pair)
            st = dla__nn_reduce(dev, DLA_REDUCE_SUM, vs0, vg);
        return st;
    }
    dla_tensor *tmp = dla__tensor_alloc(op, dev, dt, "", vg->ndims, vg->dims);
    if (!tmp)
        return dla_last_status();
    dla_view vt;
    dla__view_of(tmp, &vt);
    dla_status st = dla__nn_binary(dev, DLA_BINARY_MUL, &vt, vg, vx);
    if (st == DLA_OK)
        st = dla__nn_reduce(dev, DLA_REDUCE_SUM, vs1, &vt);
    if (st == DLA_OK)
        st = dla__nn_reduce(dev, DLA_REDUCE_SUM, vs0, vg);
    dla_tensor_release(tmp);
    return st;
}

/* The sums' dims: g's with the reduced dims 1. g and x must be five
 * equal dims of one dtype (the kernels read x through g's dims), and red
 * flags (it comes from a file in a loaded trace). */
static dla_status sums_dims(const char *op, const sums_attrs *at, const dla_tensor *g,
                            const dla_tensor *x, int64_t *sdims)
{
    char bg[DLA__DIMS_BUF], bx[DLA__DIMS_BUF];
    if (g->ndims != ND || x->ndims != ND || memcmp(g->dims, x->dims, ND * sizeof *g->dims) ||
        g->dtype != x->dtype)
        return dla__fail(DLA_ERR_SHAPE, "%s: arguments g (%s %s) and x (%s %s) are not five "
                         "equal dims of one dtype", op, dla__tensor_dims_str(g, bg, sizeof bg),
                         dla_dtype_name(g->dtype), dla__tensor_dims_str(x, bx, sizeof bx),
                         dla_dtype_name(x->dtype));
    for (int i = 0; i < ND; i++) {
        if (at->red[i] > 1)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attribute red: entry %d is %d, no "
                             "flag", op, i + 1, at->red[i]);
        sdims[i] = at->red[i] ? 1 : g->dims[i];
    }
    return DLA_OK;
}

static dla_status sums_forward(const void *attrs, dla_tensor *const *in, int nin,
                               dla_tensor **out, dla_tensor **saved)
{
    static const char op[] = "dla_batchnorm (backward)";
    const sums_attrs *at = attrs;
    int64_t sdims[ND];
    dla_status st = sums_dims(op, at, in[0], in[1], sdims);
    if (st != DLA_OK)
        return st;
    dla_tensor *d[2];
    st = dense_all(op, in, 2, d);
    dla_device *dev = in[0]->storage->device;
    dla_tensor *s[2] = {NULL, NULL};
    for (int k = 0; k < 2 && st == DLA_OK; k++)
        if (!(s[k] = dla__tensor_alloc(op, dev, in[0]->dtype, "", ND, sdims)))
            st = dla_last_status();
    if (st == DLA_OK) {
        dla_view vg, vx, vs0, vs1;
        dla__nn_view(d[0], ND, d[0]->dims, &vg);
        dla__nn_view(d[1], ND, d[1]->dims, &vx);
        dla__view_of(s[0], &vs0);
        dla__view_of(s[1], &vs1);
        st = sums_launch(dev, in[0]->dtype, &vg, &vx, &vs0, &vs1, op);
    }
    release_all(d, 2);
    if (st != DLA_OK) {
        release_all(s, 2);
        return st;
    }
    out[0] = s[0];
    out[1] = s[1];
    return DLA_OK;
}

/* d s0 / d g = 1, d s1 / d g = x, d s1 / d x = g. */
static dla_status sums_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    dla_tensor *g = n->in[0], *x = n->in[1];
    if (n->need[0]) {
        dla_tensor *from1 = gout[1] ? dla_mul(gout[1], x) : NULL;
        gin[0] = !gout[0] ? from1 : from1 ? dla_add(from1, gout[0]) : dla__expand(gout[0], g);
    }
    if (n->need[1] && gout[1])
        gin[1] = dla_mul(gout[1], g);
    return DLA_OK;
}

/* The same check on the recorded g and x; both sums have its dims. */
static dla_status sums_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_tensor g, x;
    dla__tensor_of_shape(&in[0], &g);
    dla__tensor_of_shape(&in[1], &x);
    int64_t sdims[ND];
    dla_status st = sums_dims("dla_batchnorm (backward)", attrs, &g, &x, sdims);
    if (st != DLA_OK)
        return st;
    for (int k = 0; k < 2; k++) {
        out[k] = (dla__vshape){.dtype = in[0].dtype, .ndims = ND};
        memcpy(out[k].dims, sdims, sizeof sdims);
    }
    return DLA_OK;
}

static const dla__op norm_sums_op = {
    .name = "dla__norm_sums", .nin = 2, .nout = 2, .forward = sums_forward,
    .backward = sums_backward, .infer = sums_infer,
};
DLA__OP_REGISTER(norm_sums_op, sizeof(sums_attrs));

dla_status dla__norm_sums(dla_tensor *g, dla_tensor *x, const unsigned char *red,
                          dla_tensor **sum_g, dla_tensor **sum_gx)
{
    sums_attrs a;
    memcpy(a.red, red, sizeof a.red);
    dla_tensor *out[2];
    dla_status st = dla__apply_n(&norm_sums_op, &a, sizeof a, 2, (dla_tensor *[]){g, x}, out);
    *sum_g = out[0];
    *sum_gx = out[1];
    return st;
}

/* ------------------------------------------------------------- norm_dx */

/* in: a, p, b, q, r; y = a .* p + b .* q + r with a's dims. */
static dla_status dx_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                             dla_tensor **saved)
{
    static const char op[] = "dla_batchnorm (backward)";
    dla_tensor *d[5];
    dla_status st = dense_all(op, in, 5, d);
    dla_device *dev = in[0]->storage->device;
    dla_tensor *y = NULL, *tmp = NULL;
    if (st == DLA_OK && !(y = dla__tensor_alloc(op, dev, in[0]->dtype, "", ND, in[0]->dims)))
        st = dla_last_status();
    dla_view v[5], vy;
    if (st == DLA_OK) {
        for (int i = 0; i < 5; i++)
            view5(d[i], in[0]->dims, &v[i]);
        dla__view_of(y, &vy);
    }
    if (st == DLA_OK && dla__nn_fuses(dev, in[0]->dtype)) {
        dla_fused_args p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.dtype = in[0]->dtype;
        p.ninputs = 5;
        p.ninsns = 4;
        memcpy(p.inputs, v, sizeof v);
        p.insns[0] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, -1, -2);
        p.insns[1] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, -3, -4);
        p.insns[2] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, 0, 1);
        p.insns[3] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, 2, -5);
        p.y = vy;
        st = dla__k_fused(dev, &p);
    } else if (st == DLA_OK) {
        /* The same steps, in the same order, one launch each. */
        dla_view vt;
        if (!(tmp = dla__tensor_alloc(op, dev, in[0]->dtype, "", ND, in[0]->dims)))
            st = dla_last_status();
        if (st == DLA_OK) {
            dla__view_of(tmp, &vt);
            st = dla__nn_binary(dev, DLA_BINARY_MUL, &vy, &v[0], &v[1]);
        }
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_MUL, &vt, &v[2], &v[3]);
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_ADD, &vy, &vy, &vt);
        if (st == DLA_OK)
            st = dla__nn_binary(dev, DLA_BINARY_ADD, &vy, &vy, &v[4]);
    }
    dla_tensor_release(tmp);
    release_all(d, 5);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_status dx_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    dla_tensor *gy = gout[0];
    /* a and b pair with p and q: the gradient of a factor is gy times the
     * other, summed back over the dims the factor was broadcast along. */
    for (int k = 0; k < 2; k++) {
        dla_tensor *full = n->in[2 * k], *factor = n->in[2 * k + 1];
        if (n->need[2 * k])
            gin[2 * k] = dla__sum_to(dla_mul(gy, factor), full);
        if (n->need[2 * k + 1])
            gin[2 * k + 1] = dla__sum_to(dla_mul(gy, full), factor);
    }
    if (n->need[4])
        gin[4] = dla__sum_to(gy, n->in[4]);
    return DLA_OK;
}

static const dla__op norm_dx_op = {
    .name = "dla__norm_dx", .nin = 5, .nout = 1, .forward = dx_forward, .backward = dx_backward,
};
DLA__OP_REGISTER(norm_dx_op, 0);

dla_tensor *dla__norm_dx(dla_tensor *a, dla_tensor *p, dla_tensor *b, dla_tensor *q,
                         dla_tensor *r)
{
    return dla__apply(&norm_dx_op, NULL, 0, 5, (dla_tensor *[]){a, p, b, q, r});
}

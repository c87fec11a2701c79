/*
 * ops_fc.c - fullyconnect, MATLAB's weights * x + bias per observation.
 *
 * In canonical label order (S..., C, B, T) the S and C dims come first, so
 * a dense x already is the InputSize x (B*T) matrix: forward is one GEMM
 * onto the bias broadcast into y, backward three matrix ops on reshapes.
 */
#include "core/op.h"
#include "core/ops_nn.h"

#include <string.h>

typedef struct fc_geom {
    int64_t in, out, cols; /* InputSize, OutputSize, observations x steps */
    int64_t ydims[3];
    char yfmt[4];
} fc_geom;

static dla_status geometry(dla_tensor *const *in, int nin, fc_geom *g)
{
    static const char op[] = "dla_fullyconnect";
    const dla_tensor *x = in[0], *w = in[1], *b = nin > 2 ? in[2] : NULL;
    char bx[DLA__DIMS_BUF], bw[DLA__DIMS_BUF];
    dla__tensor_dims_str(x, bx, sizeof bx);
    if (!dla__nn_is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                         dla_dtype_name(x->dtype));
    int c = dla_tensor_find_dim(x, 'C');
    if (!c)
        return dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s %s) has no \"C\" dim", op, bx,
                         x->format[0] ? x->format : "unformatted");
    if (strchr(x->format, 'U'))
        return dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s %s) has \"U\" dims; label them or "
                         "reshape them away", op, bx, x->format);
    dla_status st = dla__nn_check(op, "weights", w, x->dtype, x->storage->device);
    if (st == DLA_OK && b)
        st = dla__nn_check(op, "bias", b, x->dtype, x->storage->device);
    if (st != DLA_OK)
        return st;
    memset(g, 0, sizeof *g);
    g->in = 1;
    for (int i = 0; i < c; i++)
        g->in *= x->dims[i];
    int bd = dla_tensor_find_dim(x, 'B'), td = dla_tensor_find_dim(x, 'T');
    int64_t nb = bd ? x->dims[bd - 1] : 1, nt = td ? x->dims[td - 1] : 1;
    g->cols = nb * nt;
    g->out = w->ndims ? w->dims[0] : 1;
    int64_t wn = dla__numel(w->ndims, w->dims);
    dla__tensor_dims_str(w, bw, sizeof bw);
    if (wn != g->out * g->in)
        return dla__fail(DLA_ERR_SHAPE, "%s: argument weights: %s is OutputSize %lld x %lld "
                         "inputs, but x (%s %s) has %lld inputs (its S and C dims)", op, bw,
                         (long long)g->out, (long long)(g->out ? wn / g->out : 0), bx, x->format,
                         (long long)g->in);
    if (b && dla__numel(b->ndims, b->dims) != g->out) {
        char bb[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_SHAPE, "%s: argument bias: %s has %lld elements, but weights "
                         "(%s) has OutputSize %lld", op, dla__tensor_dims_str(b, bb, sizeof bb),
                         (long long)dla__numel(b->ndims, b->dims), bw, (long long)g->out);
    }
    g->ydims[0] = g->out;
    g->ydims[1] = nb;
    g->ydims[2] = nt;
    strcpy(g->yfmt, td ? "CBT" : "CB");
    return DLA_OK;
}

static dla_status fc_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                             dla_tensor **saved)
{
    (void)attrs, (void)saved;
    static const char op[] = "dla_fullyconnect";
    fc_geom g;
    dla_status st = geometry(in, nin, &g);
    if (st != DLA_OK)
        return st;
    dla_tensor *x = in[0];
    dla_device *dev = x->storage->device;
    int nyd = g.yfmt[2] ? 3 : 2;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, g.yfmt, nyd, g.ydims);
    dla_tensor *xd = dla__nn_dense(op, x), *wd = dla__nn_dense(op, in[1]);
    dla_tensor *bd = nin > 2 ? dla__nn_dense(op, in[2]) : NULL;
    if (!y || !xd || !wd || (nin > 2 && !bd))
        st = dla_last_status();
    int64_t ym[2] = {g.out, g.cols};
    dla_view vy;
    if (st == DLA_OK) {
        dla__nn_view(y, 2, ym, &vy);
        if (bd) { /* y = bias along every column, then the GEMM adds to it */
            dla_view vb;
            dla__nn_view(bd, 2, (int64_t[]){g.out, 1}, &vb);
            dla__nn_expand(&vb, ym);
            st = dla__k_copy(dev, &vy, &vb);
        } else if (g.in == 0) {
            st = dla__k_fill(dev, &vy, 0.0);
        }
    }
    if (st == DLA_OK && g.in > 0 && g.out > 0 && g.cols > 0) {
        dla_gemm_args k = {.struct_size = sizeof k, .dtype = x->dtype, .m = g.out, .n = g.cols,
                           .k = g.in, .batch = 1, .alpha = 1.0, .beta = bd ? 1.0 : 0.0};
        k.a = (dla_gemm_operand){wd->storage->mem, wd->offset, g.out, 0};
        k.b = (dla_gemm_operand){xd->storage->mem, xd->offset, g.in, 0};
        k.c = (dla_gemm_operand){y->storage->mem, y->offset, g.out, 0};
        st = dla__k_gemm(dev, &k);
    }
    dla_tensor_release(xd);
    dla_tensor_release(wd);
    dla_tensor_release(bd);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_tensor *mat(dla_tensor *t, int64_t rows, int64_t cols)
{
    return dla_reshape(t, "", 2, (int64_t[]){rows, cols});
}

static dla_tensor *like(dla_tensor *t, const dla_tensor *like)
{
    return dla_reshape(t, like->format, like->ndims, like->dims);
}

static dla_status fc_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    fc_geom g;
    dla_status st = geometry(n->in, n->nin, &g);
    if (st != DLA_OK)
        return st;
    dla_tensor *gm = mat(gout[0], g.out, g.cols);
    if (n->need[0]) /* W' G */
        gin[0] = like(dla_pagemtimes(mat(n->in[1], g.out, g.in), "transpose", gm, "none"), n->in[0]);
    if (n->need[1]) /* G X' */
        gin[1] = like(dla_pagemtimes(gm, "none", mat(n->in[0], g.in, g.cols), "transpose"), n->in[1]);
    if (n->nin > 2 && n->need[2])
        gin[2] = like(dla_sum(gm, 1, (int64_t[]){2}), n->in[2]);
    return DLA_OK;
}

static int takes_x_w_and_bias(const void *attrs, int nin)
{
    (void)attrs;
    return nin == 2 || nin == 3;
}

static const char *const fc_args[] = {"x", "weights", "bias", NULL};

static const dla__op fc_op = {
    .name = "dla_fullyconnect", .nin = -1, .nout = 1, .takes = takes_x_w_and_bias, .forward = fc_forward,
    .backward = fc_backward, .arg_names = fc_args,
};
DLA__OP_REGISTER(fc_op, 0);

DLA_API dla_tensor *dla_fullyconnect(dla_tensor *x, dla_tensor *weights, dla_tensor *bias)
{
    dla_tensor *in[3] = {x, weights, bias};
    return dla__apply(&fc_op, NULL, 0, bias ? 3 : 2, in);
}

/*
 * ops_matmul.c - mtimes and pagemtimes on the batched GEMM kernel.
 *
 * A GEMM operand needs unit stride along rows (or along columns, which is
 * the same matrix transposed), and its pages one uniform stride apart (or
 * one page broadcast to all). Views that satisfy this, such as a permuted
 * transpose, go to the kernel as they are; anything else is made dense
 * first, which costs one copy.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/tensor.h"

#include <string.h>

/* A GEMM operand for matrix t (rows x cols x pages) broadcast to out pages.
 * *hold receives a temporary to release after the kernel ran (or NULL). */
static dla_status operand(const char *op, dla_tensor *t, int npages, const int64_t *pdims,
                          dla_gemm_operand *g, int *flip, dla_tensor **hold)
{
    *hold = NULL;
    int64_t r = dla_tensor_dim(t, 1), c = dla_tensor_dim(t, 2);
    int64_t s0 = t->ndims > 0 ? t->strides[0] : 1, s1 = t->ndims > 1 ? t->strides[1] : r;
    int64_t tp = 1; /* pages t really has */
    for (int i = 2; i < t->ndims; i++)
        tp *= t->dims[i];
    /* Pages: all broadcast (one page), or the same page dims as the result
     * laid out with one stride. */
    int uniform = 1;
    int64_t pstride = 0;
    if (tp > 1) {
        int64_t expect = -1;
        for (int i = 0; i < npages && uniform; i++) {
            int64_t d = dla_tensor_dim(t, i + 3);
            if (d != pdims[i])
                uniform = 0;
            else if (d > 1) {
                int64_t s = t->strides[i + 2];
                if (expect >= 0 && s != expect)
                    uniform = 0;
                if (expect < 0)
                    pstride = s;
                expect = s * d;
            }
        }
    }
    /* Stored as is (column-major, ld = s1) or as the transpose (ld = s0). */
    int64_t r1 = r > 1 ? r : 1, c1 = c > 1 ? c : 1;
    int64_t ld_plain = c <= 1 ? r1 : s1, ld_flip = r <= 1 ? c1 : s0;
    int plain_ok = (s0 == 1 || r <= 1) && ld_plain >= r1;
    int flip_ok = (s1 == 1 || c <= 1) && ld_flip >= c1;
    if (!uniform || !(plain_ok || flip_ok)) {
        /* Materialize the broadcast pages densely. */
        int64_t dims[DLA_MAX_DIMS] = {r, c};
        for (int i = 0; i < npages; i++)
            dims[i + 2] = pdims[i];
        dla_tensor *d = dla__tensor_alloc(op, t->storage->device, t->dtype, "", npages + 2, dims);
        if (!d)
            return dla_last_status();
        dla_view y, x;
        dla__view_of(d, &y);
        dla__view_of(t, &x);
        x.ndims = npages + 2;
        for (int i = 0; i < npages + 2; i++) {
            int64_t td = dla_tensor_dim(t, i + 1);
            x.dims[i] = dims[i];
            x.strides[i] = (td == 1 || i >= t->ndims) ? 0 : t->strides[i];
        }
        dla_status st = dla__k_copy(t->storage->device, &y, &x);
        if (st != DLA_OK) {
            dla_tensor_release(d);
            return st;
        }
        *hold = d;
        g->mem = d->storage->mem;
        g->offset = 0;
        g->ld = r > 0 ? r : 1;
        g->batch_stride = r * c;
        *flip = 0;
        return DLA_OK;
    }
    g->mem = t->storage->mem;
    g->offset = t->offset;
    g->batch_stride = tp > 1 ? pstride : 0;
    *flip = !plain_ok;
    g->ld = plain_ok ? ld_plain : ld_flip;
    return DLA_OK;
}

typedef struct gemm_attrs {
    int ta, tb, paged;
} gemm_attrs;

/* The product's sizes: C is m x n x pages pdims[0..np-1] (batch of them),
 * the inner dim k. */
typedef struct gemm_shape {
    int64_t m, n, k, batch;
    int np;
    int64_t pdims[DLA_MAX_DIMS];
} gemm_shape;

/* t's dims without the trailing ones (at least 2): MATLAB's matrix of
 * mtimes is 2-D up to trailing singletons. */
static int matrix_ndims(const dla_tensor *t)
{
    int n = t->ndims;
    while (n > 2 && t->dims[n - 1] == 1)
        n--;
    return n;
}

static const char *gemm_name(const gemm_attrs *at)
{
    return at->paged ? "dla_pagemtimes" : "dla_mtimes";
}

/* The checks of a and b against each other and the attributes (flags:
 * the kernel gets ta and tb as transposes, XORed with its own), and the
 * product's sizes. */
static dla_status gemm_check(const gemm_attrs *at, const dla_tensor *a, const dla_tensor *b,
                             gemm_shape *sh)
{
    const char *op = gemm_name(at);
    int ta = at->ta, tb = at->tb;
    char da[DLA__DIMS_BUF], db[DLA__DIMS_BUF];
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || (at->paged != 0 && at->paged != 1))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attributes ta %d, tb %d, paged %d: "
                         "flags are 0 or 1", op, ta, tb, at->paged);
    if (a->dtype != b->dtype || (a->dtype != DLA_F32 && a->dtype != DLA_F64))
        return dla__fail(DLA_ERR_DTYPE, "%s: arguments a (%s) and b (%s) must both be single or "
                         "both double", op, dla_dtype_name(a->dtype), dla_dtype_name(b->dtype));
    /* A matrix may carry trailing dims of 1 (a sum over dim 3 of a
     * 2x3x4 is 2x3x1): they were refused, "must be matrices". */
    if (!at->paged && (matrix_ndims(a) > 2 || matrix_ndims(b) > 2))
        return dla__fail(DLA_ERR_SHAPE, "%s: arguments a (%s) and b (%s) must be matrices; use "
                         "dla_pagemtimes for pages", op, dla__tensor_dims_str(a, da, sizeof da),
                         dla__tensor_dims_str(b, db, sizeof db));
    int64_t ar = dla_tensor_dim(a, 1), ac = dla_tensor_dim(a, 2);
    int64_t br = dla_tensor_dim(b, 1), bc = dla_tensor_dim(b, 2);
    int64_t m = ta ? ac : ar, k = ta ? ar : ac, kb = tb ? bc : br, n = tb ? br : bc;
    if (k != kb)
        return dla__fail(DLA_ERR_SHAPE, "%s: inner dims differ: a%s is %s, b%s is %s (%lld "
                         "against %lld)", op, ta ? "'" : "", dla__tensor_dims_str(a, da, sizeof da),
                         tb ? "'" : "", dla__tensor_dims_str(b, db, sizeof db), (long long)k,
                         (long long)kb);
    int np = at->paged ? (a->ndims > b->ndims ? a->ndims : b->ndims) - 2 : 0;
    if (np < 0)
        np = 0;
    int64_t pdims[DLA_MAX_DIMS], batch = 1;
    for (int i = 0; i < np; i++) {
        int64_t x = dla_tensor_dim(a, i + 3), y = dla_tensor_dim(b, i + 3);
        if (x != y && x != 1 && y != 1)
            return dla__fail(DLA_ERR_SHAPE, "%s: page dim %d of a (%s) and b (%s) is %lld against "
                             "%lld", op, i + 3, dla__tensor_dims_str(a, da, sizeof da),
                             dla__tensor_dims_str(b, db, sizeof db), (long long)x, (long long)y);
        pdims[i] = x == 1 ? y : x;
        /* Two operands' pages broadcast can pass 2^63 where neither's do
         * (a loaded trace's recorded dims are checked before any exist). */
        if (__builtin_mul_overflow(batch, pdims[i], &batch))
            return dla__fail(DLA_ERR_SHAPE, "%s: the pages of a (%s) and b (%s) broadcast past "
                             "2^63", op, dla__tensor_dims_str(a, da, sizeof da),
                             dla__tensor_dims_str(b, db, sizeof db));
    }
    *sh = (gemm_shape){.m = m, .n = n, .k = k, .batch = batch, .np = np};
    memcpy(sh->pdims, pdims, (size_t)np * sizeof *pdims);
    return DLA_OK;
}

/* C's dims: m x n, then the pages. */
static void gemm_cdims(const gemm_shape *sh, int64_t *cdims)
{
    cdims[0] = sh->m;
    cdims[1] = sh->n;
    memcpy(cdims + 2, sh->pdims, (size_t)sh->np * sizeof *sh->pdims);
}

static dla_status gemm_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                               dla_tensor **saved)
{
    const gemm_attrs *at = attrs;
    const char *op = gemm_name(at);
    dla_tensor *a = in[0], *b = in[1];
    gemm_shape sh;
    dla_status st = gemm_check(at, a, b, &sh);
    if (st != DLA_OK)
        return st;
    dla_device *dev = a->storage->device;
    if (b->storage->device != dev)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: arguments a and b are on %s and %s", op,
                         dev->name, b->storage->device->name);
    int64_t m = sh.m, n = sh.n, k = sh.k, batch = sh.batch, cdims[DLA_MAX_DIMS];
    int np = sh.np, ta = at->ta, tb = at->tb;
    const int64_t *pdims = sh.pdims;
    gemm_cdims(&sh, cdims);
    dla_tensor *c = dla__tensor_alloc(op, dev, a->dtype, "", np + 2, cdims);
    if (!c)
        return dla_last_status();
    dla_gemm_args g = {.struct_size = sizeof g, .dtype = a->dtype, .m = m, .n = n, .k = k,
                       .batch = batch, .alpha = 1.0, .beta = 0.0};
    dla_tensor *ha = NULL, *hb = NULL;
    int fa = 0, fb = 0;
    st = operand(op, a, np, pdims, &g.a, &fa, &ha);
    if (st == DLA_OK)
        st = operand(op, b, np, pdims, &g.b, &fb, &hb);
    if (st == DLA_OK && m && n && batch) {
        g.trans_a = ta ^ fa;
        g.trans_b = tb ^ fb;
        g.c = (dla_gemm_operand){c->storage->mem, 0, m > 0 ? m : 1, m * n};
        if (k == 0) {
            dla_view v;
            dla__view_of(c, &v);
            st = dla__k_fill(dev, &v, 0.0);
        } else {
            st = dla__k_gemm(dev, &g);
        }
    }
    dla_tensor_release(ha);
    dla_tensor_release(hb);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(c);
        return st;
    }
    out[0] = c;
    return DLA_OK;
}

static const char *tr(int t) { return t ? "transpose" : "none"; }

/* C = op(A) op(B): dA and dB are products of G with the other operand, with
 * the transposes the four cases need; sum_to folds broadcast pages back. */
static dla_status gemm_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const gemm_attrs *at = n->attrs;
    dla_tensor *a = n->in[0], *b = n->in[1], *g = gout[0];
    dla_tensor *ga = NULL, *gb = NULL;
    if (n->need[0])
        ga = at->ta ? dla_pagemtimes(b, tr(at->tb), g, "transpose")    /* (op(B) G')' parts */
                    : dla_pagemtimes(g, "none", b, tr(!at->tb));
    if (n->need[1])
        gb = at->tb ? dla_pagemtimes(g, "transpose", a, tr(at->ta))
                    : dla_pagemtimes(a, tr(!at->ta), g, "none");
    gin[0] = ga ? dla__sum_to(ga, a) : NULL;
    gin[1] = gb ? dla__sum_to(gb, b) : NULL;
    return DLA_OK;
}

/* gemm_check on the recorded a and b; C is unformatted, of a's dtype. */
static dla_status gemm_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_tensor a, b;
    dla__tensor_of_shape(&in[0], &a);
    dla__tensor_of_shape(&in[1], &b);
    gemm_shape sh;
    dla_status st = gemm_check(attrs, &a, &b, &sh);
    if (st != DLA_OK)
        return st;
    out[0] = (dla__vshape){.dtype = a.dtype, .ndims = sh.np + 2};
    gemm_cdims(&sh, out[0].dims);
    return DLA_OK;
}

static const char *gemm_call(const void *attrs)
{
    return ((const gemm_attrs *)attrs)->paged ? "dla_pagemtimes" : "dla_mtimes";
}

static const char *const gemm_args[] = {"a", "b", NULL};

static const dla__op gemm_op = {
    .name = "gemm", .nin = 2, .nout = 1, .forward = gemm_forward, .backward = gemm_backward,
    .infer = gemm_infer, .call_name = gemm_call, .arg_names = gemm_args,
};
DLA__OP_REGISTER(gemm_op, sizeof(gemm_attrs));

DLA_API dla_tensor *dla_mtimes(dla_tensor *a, dla_tensor *b)
{
    gemm_attrs at = {0, 0, 0};
    return dla__apply(&gemm_op, &at, sizeof at, 2, (dla_tensor *[]){a, b});
}

static int parse_trans(const char *s, int *out)
{
    if (!s || !strcmp(s, "none")) {
        *out = 0;
        return 1;
    }
    if (!strcmp(s, "transpose")) {
        *out = 1;
        return 1;
    }
    return 0;
}

DLA_API dla_tensor *dla_pagemtimes(dla_tensor *a, const char *transa, dla_tensor *b,
                                   const char *transb)
{
    gemm_attrs at = {0, 0, 1};
    if (!parse_trans(transa, &at.ta))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_pagemtimes: argument transa: \"%s\"; use "
                          "\"none\" or \"transpose\"", transa);
    if (!parse_trans(transb, &at.tb))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_pagemtimes: argument transb: \"%s\"; use "
                          "\"none\" or \"transpose\"", transb);
    return dla__apply(&gemm_op, &at, sizeof at, 2, (dla_tensor *[]){a, b});
}

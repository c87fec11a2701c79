/*
 * ops_norm.c - batchnorm (training and inference), layernorm, groupnorm and
 * instancenorm.
 *
 * All four see x, whatever its format, as five dims [S, Cg, G, B, R]: the
 * product of the S dims, the channels split into G groups of Cg, the batch,
 * and the product of the T and U dims (canonical label order puts them in
 * this order, so a dense x needs no copy). Each op normalizes over a subset
 * of those dims and scales and offsets per channel; only the subset
 * differs, so one forward and one backward serve all of them.
 *
 * Forward folds scale, offset and the statistics into one per-channel
 * multiplier and addend, y = x .* a + b, so the full-size passes are the
 * statistics (one pass with fused_reduce_pair, two with fused_reduce) and
 * that one; a device without the fused kernels also writes the centered
 * copy for the variance and x .* a.
 * Batchnorm's and instancenorm's backward is two more ops of one pass each
 * (core/ops_norm_grad.c).
 */
#include "core/op.h"
#include "core/ops_nn.h"
#include "core/scope.h"

#include <math.h>
#include <string.h>

#define ND 5
enum { DS, DCG, DG, DB, DR }; /* the five dims */

typedef enum norm_mode {
    NM_BATCH,           /* over S, B, R */
    NM_LAYER_ALL,       /* over S, C, R: MATLAB layernorm's default */
    NM_LAYER_SPATIAL,   /* over S, C */
    NM_LAYER_CHANNEL,   /* over C */
    NM_LAYER_AUTO,      /* channel-only with a T dim, else spatial-channel */
    NM_GROUP,           /* over S, Cg, R */
    NM_INSTANCE,        /* over S, R */
} norm_mode;

/* The public functions, for messages (attributes stay plain data, so a
 * trace can be saved with them). */
typedef enum norm_fn {
    F_BATCHNORM, F_BATCHNORM_TRAIN, F_LAYERNORM, F_GROUPNORM, F_INSTANCENORM, F_COUNT
} norm_fn;
static const char *const fn_names[] = {"dla_batchnorm", "dla_batchnorm_train", "dla_layernorm",
                                       "dla_groupnorm", "dla_instancenorm"};
_Static_assert(sizeof fn_names / sizeof fn_names[0] == F_COUNT, "fn_names out of step with norm_fn");

typedef struct norm_attrs {
    norm_fn fn;
    norm_mode mode;
    int64_t groups; /* NM_GROUP */
    double eps;
    double mean_decay, var_decay; /* batchnorm training */
    int running;                  /* batchnorm training: running statistics given */
} norm_attrs;

/* What the forward works out from attrs and x. */
typedef struct norm_geom {
    int64_t d[ND];     /* x as [S, Cg, G, B, R] */
    int64_t stat[ND];  /* the statistics: d with the normalized dims 1 */
    int64_t chan[ND];  /* offset, scale: [1, Cg, G, 1, 1] */
    int64_t ab[ND];    /* y = x .* a + b: chan and stat combined */
    unsigned char red[ND];
    int64_t channels, n; /* C; elements per statistic */
} norm_geom;

static const char *fmt_or(const dla_tensor *t) { return t->format[0] ? t->format : "unformatted"; }

static dla_status geometry(const norm_attrs *a, const dla_tensor *x, norm_geom *g)
{
    const char *op = fn_names[a->fn];
    char buf[DLA__DIMS_BUF];
    if (!dla__nn_is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "%s: argument x: %s; needs single or double", op,
                         dla_dtype_name(x->dtype));
    int c = dla_tensor_find_dim(x, 'C'), b = dla_tensor_find_dim(x, 'B');
    if (!c)
        return dla__fail(DLA_ERR_FORMAT, "%s: argument x (%s %s) has no \"C\" dim; label the "
                         "channels", op, dla__tensor_dims_str(x, buf, sizeof buf), fmt_or(x));
    int64_t s = 1, r = 1;
    for (int i = 0; i < c - 1; i++)
        s *= x->dims[i];
    for (int i = b ? b : c; i < x->ndims; i++)
        r *= x->dims[i];
    int64_t ch = x->dims[c - 1], groups = 1;
    if (a->mode == NM_GROUP) {
        groups = a->groups;
        if (groups < 1 || ch % groups != 0)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument num_groups: %lld does not "
                             "divide the %lld channels of x (%s %s)", op, (long long)groups,
                             (long long)ch, dla__tensor_dims_str(x, buf, sizeof buf), x->format);
    } else if (a->mode == NM_INSTANCE) {
        groups = ch;
    }
    memset(g, 0, sizeof *g);
    g->channels = ch;
    g->d[DS] = s;
    g->d[DCG] = groups ? ch / groups : 0;
    g->d[DG] = groups;
    g->d[DB] = b ? x->dims[b - 1] : 1;
    g->d[DR] = r;
    norm_mode m = a->mode;
    if (m == NM_LAYER_AUTO)
        m = dla_tensor_find_dim(x, 'T') ? NM_LAYER_CHANNEL : NM_LAYER_SPATIAL;
    static const unsigned char sets[][ND] = {
        [NM_BATCH] = {1, 0, 0, 1, 1},         [NM_LAYER_ALL] = {1, 1, 1, 0, 1},
        [NM_LAYER_SPATIAL] = {1, 1, 1, 0, 0}, [NM_LAYER_CHANNEL] = {0, 1, 1, 0, 0},
        [NM_GROUP] = {1, 1, 0, 0, 1},         [NM_INSTANCE] = {1, 1, 0, 0, 1},
    };
    memcpy(g->red, sets[m], ND);
    g->n = 1;
    for (int i = 0; i < ND; i++) {
        g->stat[i] = g->red[i] ? 1 : g->d[i];
        g->chan[i] = (i == DCG || i == DG) ? g->d[i] : 1;
        /* Broadcast: the one that is not 1 (a B of 0, an empty batch,
         * stays 0; the larger of the two made it 1). */
        g->ab[i] = g->stat[i] == 1 ? g->chan[i] : g->stat[i];
        if (g->red[i])
            g->n *= g->d[i];
    }
    return DLA_OK;
}

/* Checks a per-channel tensor (offset, scale, statistics) against x. */
static dla_status check_channel(const char *op, const char *arg, const dla_tensor *t,
                                const dla_tensor *x, const norm_geom *g)
{
    dla_status st = dla__nn_check(op, arg, t, x->dtype, x->storage->device);
    if (st != DLA_OK)
        return st;
    if (dla__numel(t->ndims, t->dims) != g->channels) {
        char bt[DLA__DIMS_BUF], bx[DLA__DIMS_BUF];
        return dla__fail(DLA_ERR_SHAPE, "%s: argument %s: %s has %lld elements, but x (%s %s) "
                         "has %lld channels", op, arg, dla__tensor_dims_str(t, bt, sizeof bt),
                         (long long)dla__numel(t->ndims, t->dims),
                         dla__tensor_dims_str(x, bx, sizeof bx), x->format,
                         (long long)g->channels);
    }
    return DLA_OK;
}

/* Work shared by the forward passes: dense copies of the inputs that need
 * them and the temporaries, released together. */
typedef struct work {
    dla_tensor *t[12];
    int n;
} work;

static dla_tensor *keep(work *w, dla_tensor *t)
{
    DLA_ASSERT(w->n < (int)(sizeof w->t / sizeof w->t[0]));
    if (t)
        w->t[w->n++] = t;
    return t;
}

static void work_free(work *w)
{
    for (int i = 0; i < w->n; i++)
        dla_tensor_release(w->t[i]);
}

/* A new dense 5-D unformatted tensor. */
static dla_tensor *tmp5(const char *op, const dla_tensor *like, const int64_t *dims)
{
    return dla__tensor_alloc(op, like->storage->device, like->dtype, "", ND, dims);
}

/* z(dims) = a op b, each broadcast from its own 5-D dims. */
static dla_status bin5(dla_device *dev, dla_binary_op op, const dla_tensor *z, const int64_t *dims,
                       const dla_tensor *a, const int64_t *adims, const dla_tensor *b,
                       const int64_t *bdims)
{
    dla_view vz, va, vb;
    dla__nn_view(z, ND, dims, &vz);
    dla__nn_view(a, ND, adims, &va);
    dla__nn_view(b, ND, bdims, &vb);
    dla__nn_expand(&va, dims);
    dla__nn_expand(&vb, dims);
    return dla__nn_binary(dev, op, &vz, &va, &vb);
}

/* ------------------------------------------------------- fused passes */

/* r = the mean of (x - c)^2 over the normalized dims into var, c of the
 * statistics' dims (broadcast over each group). */
static void centered_squares(dla_fused_reduce_args *r, const norm_geom *g, const dla_tensor *xd,
                             const dla_view *c, const dla_tensor *var)
{
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->op = DLA_REDUCE_MEAN;
    dla_fused_args *p = &r->program;
    p->struct_size = sizeof *p;
    p->dtype = xd->dtype;
    p->ninputs = 2;
    p->ninsns = 2;
    dla__nn_view(xd, ND, g->d, &p->inputs[0]);
    p->inputs[1] = *c;
    dla__nn_expand(&p->inputs[1], g->d);
    p->insns[0] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, -2);
    p->insns[1] = dla__nn_insn(DLA_FUSED_UNARY, DLA_UNARY_SQUARE, 0, 0);
    p->y = p->inputs[0]; /* the space's dims; nothing is written there */
    dla__nn_view(var, ND, g->stat, &r->y);
}

/* Devices with the fused kernels (dla__nn_fuses) get the two full-size
 * passes that follow the mean as one each: the variance without the
 * centered copy, and y = x .* a + b without storing x .* a.
 *
 * var = mean((x - mean)^2) over the normalized dims, in one pass. */
static dla_status fused_var(dla_device *dev, const norm_geom *g, const dla_tensor *xd,
                            const dla_tensor *mean, const dla_tensor *var)
{
    dla_fused_reduce_args r;
    dla_view c;
    dla__nn_view(mean, ND, g->stat, &c);
    centered_squares(&r, g, xd, &c, var);
    return dla__k_fused_reduce(dev, &r);
}

/* Devices with fused_reduce_pair: the mean and the variance from one
 * pass. It sums d = x - s and d^2, with s the first element of each
 * statistic's group: a shift inside the data keeps E[d^2] - E[d]^2 from
 * cancelling the way E[x^2] - E[x]^2 does when the mean is large against
 * the spread. mean = s + E[d], var = |E[d^2] - E[d]^2|; scratch is
 * a tensor of the statistics' dims to write over. */
static dla_status fused_stats(dla_device *dev, const norm_geom *g, const dla_tensor *xd,
                              const dla_tensor *mean, const dla_tensor *var,
                              const dla_tensor *scratch)
{
    dla_view shift; /* x's first element of each group */
    dla__nn_view(xd, ND, g->d, &shift);
    for (int i = 0; i < ND; i++)
        if (g->stat[i] == 1)
            shift.dims[i] = 1, shift.strides[i] = 0;
    dla_fused_reduce_args r;
    centered_squares(&r, g, xd, &shift, var); /* E[d^2] into var */
    r.reg2 = 0;                               /* E[d] into mean */
    dla__nn_view(mean, ND, g->stat, &r.y2);
    const dla_view vm = r.y2, vv = r.y;
    dla_view vs;
    dla__nn_view(scratch, ND, g->stat, &vs);
    dla_status st = dla__k_fused_reduce(dev, &r);
    if (st == DLA_OK) /* E[d]^2 */
        st = dla__nn_unary(dev, DLA_UNARY_SQUARE, 0.0, 0.0, &vs, &vm);
    if (st == DLA_OK)
        st = dla__nn_binary(dev, DLA_BINARY_SUB, &vv, &vv, &vs);
    /* Rounding can leave a nearly constant group's variance a few ulps of
     * E[d]^2 below 0; its magnitude is as good an answer, and abs keeps a
     * NaN (relu or max would turn it into 0). */
    if (st == DLA_OK)
        st = dla__nn_unary(dev, DLA_UNARY_ABS, 0.0, 0.0, &vv, &vv);
    if (st == DLA_OK)
        st = dla__nn_binary(dev, DLA_BINARY_ADD, &vm, &vm, &shift);
    return st;
}

/* y = x .* a + b in one pass, a and b of dims g->ab. */
static dla_status fused_apply(dla_device *dev, const norm_geom *g, const dla_tensor *xd,
                              const dla_tensor *a, const dla_tensor *b, const dla_tensor *y)
{
    dla_fused_args p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.dtype = xd->dtype;
    p.ninputs = 3;
    p.ninsns = 2;
    dla__nn_view(xd, ND, g->d, &p.inputs[0]);
    dla__nn_view(a, ND, g->ab, &p.inputs[1]);
    dla__nn_expand(&p.inputs[1], g->d);
    dla__nn_view(b, ND, g->ab, &p.inputs[2]);
    dla__nn_expand(&p.inputs[2], g->d);
    p.insns[0] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, -1, -2);
    p.insns[1] = dla__nn_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, 0, -3);
    dla__nn_view(y, ND, g->d, &p.y);
    return dla__k_fused(dev, &p);
}

/* y = x .* a + b into a new tensor like x, with a, b of dims g->ab. */
static dla_status apply_ab(const char *op, const dla_tensor *xd, const dla_tensor *x,
                           const norm_geom *g, const dla_tensor *a, const dla_tensor *b,
                           dla_tensor **out)
{
    dla_device *dev = x->storage->device;
    dla_tensor *y = dla__tensor_alloc(op, dev, x->dtype, x->format, x->ndims, x->dims);
    if (!y)
        return dla_last_status();
    dla_status st;
    if (dla__nn_fuses(dev, x->dtype)) {
        st = fused_apply(dev, g, xd, a, b, y);
    } else {
        st = bin5(dev, DLA_BINARY_MUL, y, g->d, xd, g->d, a, g->ab);
        if (st == DLA_OK)
            st = bin5(dev, DLA_BINARY_ADD, y, g->d, y, g->d, b, g->ab);
    }
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    *out = y;
    return DLA_OK;
}

/* a = scale .* istd, b = offset - mean .* a (istd, mean of dims sdims). */
static dla_status fold(const char *op, const norm_geom *g, const dla_tensor *scale,
                       const dla_tensor *offset, const dla_tensor *mean, const dla_tensor *istd,
                       const int64_t *sdims, work *w, dla_tensor **a, dla_tensor **b)
{
    dla_device *dev = scale->storage->device;
    *a = keep(w, tmp5(op, scale, g->ab));
    *b = keep(w, tmp5(op, scale, g->ab));
    if (!*a || !*b)
        return dla_last_status();
    dla_status st = bin5(dev, DLA_BINARY_MUL, *a, g->ab, scale, g->chan, istd, sdims);
    if (st == DLA_OK)
        st = bin5(dev, DLA_BINARY_MUL, *b, g->ab, mean, sdims, *a, g->ab);
    if (st == DLA_OK)
        st = bin5(dev, DLA_BINARY_SUB, *b, g->ab, offset, g->chan, *b, g->ab);
    return st;
}

/* ------------------------------------------------ statistics of the batch */

/* Forward of batchnorm training, layernorm, groupnorm, instancenorm.
 * in: x, offset, scale[, running mean, running var]. out: y[, mean, var].
 * saved: the mean and 1/sqrt(var + eps), both of dims g.stat. */
static dla_status stats_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    const norm_attrs *at = attrs;
    const char *op = fn_names[at->fn];
    dla_tensor *x = in[0];
    norm_geom g;
    dla_status st = geometry(at, x, &g);
    if (st == DLA_OK)
        st = check_channel(op, "offset", in[1], x, &g);
    if (st == DLA_OK)
        st = check_channel(op, "scale", in[2], x, &g);
    if (st == DLA_OK && nin == 5)
        st = check_channel(op, "running_mean", in[3], x, &g);
    if (st == DLA_OK && nin == 5)
        st = check_channel(op, "running_var", in[4], x, &g);
    if (st != DLA_OK)
        return st;
    dla_device *dev = x->storage->device;
    work w = {0};
    dla_tensor *xd = keep(&w, dla__nn_dense(op, x));
    dla_tensor *off = keep(&w, dla__nn_dense(op, in[1]));
    dla_tensor *sc = keep(&w, dla__nn_dense(op, in[2]));
    dla_tensor *mean = tmp5(op, x, g.stat), *istd = tmp5(op, x, g.stat);
    dla_tensor *var = keep(&w, tmp5(op, x, g.stat));
    const int fused = dla__nn_fuses(dev, x->dtype);
    dla_tensor *xc = fused ? NULL : keep(&w, tmp5(op, x, g.d));
    dla_tensor *y = NULL, *a, *b;
    if (!xd || !off || !sc || !mean || !istd || !var || (!fused && !xc))
        st = dla_last_status();
    dla_view vx, vxc, vm, vv, vi;
    if (st == DLA_OK) {
        dla__nn_view(xd, ND, g.d, &vx);
        dla__view_of(mean, &vm);
        dla__view_of(var, &vv);
        dla__view_of(istd, &vi);
    }
    /* The shift is an element of each group: an empty group has none. */
    if (st == DLA_OK && g.n > 0 &&
        dla__device_supports(dev, DLA_KERNEL_FUSED_REDUCE_PAIR, x->dtype)) {
        st = fused_stats(dev, &g, xd, mean, var, istd);
    } else if (st == DLA_OK && fused) {
        st = dla__nn_reduce(dev, DLA_REDUCE_MEAN, &vm, &vx);
        if (st == DLA_OK)
            st = fused_var(dev, &g, xd, mean, var);
    } else if (st == DLA_OK) {
        dla__view_of(xc, &vxc);
        st = dla__nn_reduce(dev, DLA_REDUCE_MEAN, &vm, &vx);
        if (st == DLA_OK)
            st = bin5(dev, DLA_BINARY_SUB, xc, g.d, xd, g.d, mean, g.stat);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_SQUARE, 0.0, 0.0, &vxc, &vxc);
        if (st == DLA_OK)
            st = dla__nn_reduce(dev, DLA_REDUCE_MEAN, &vv, &vxc);
    }
    if (st == DLA_OK)
        st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 1.0, at->eps, &vi, &vv);
    if (st == DLA_OK)
        st = dla__nn_unary(dev, DLA_UNARY_POWS, -0.5, 0.0, &vi, &vi);
    if (st == DLA_OK)
        st = fold(op, &g, sc, off, mean, istd, g.stat, &w, &a, &b);
    if (st == DLA_OK)
        st = apply_ab(op, xd, x, &g, a, b, &y);

    /* batchnorm: the statistics out, running or of this batch. */
    dla_tensor *sm = NULL, *sv = NULL;
    if (st == DLA_OK && at->mode == NM_BATCH) {
        const dla_tensor *like_m = nin == 5 ? in[3] : in[1], *like_v = nin == 5 ? in[4] : in[1];
        sm = dla__tensor_alloc(op, dev, x->dtype, like_m->format, like_m->ndims, like_m->dims);
        sv = dla__tensor_alloc(op, dev, x->dtype, like_v->format, like_v->ndims, like_v->dims);
        if (!sm || !sv)
            st = dla_last_status();
        int64_t c1[1] = {g.channels};
        dla_view vsm, vsv, vm1, vv1;
        if (st == DLA_OK) {
            dla__nn_view(sm, 1, c1, &vsm);
            dla__nn_view(sv, 1, c1, &vsv);
            dla__nn_view(mean, 1, c1, &vm1);
            dla__nn_view(var, 1, c1, &vv1);
        }
        if (st == DLA_OK && nin == 3) {
            st = dla__k_copy(dev, &vsm, &vm1);
            if (st == DLA_OK)
                st = dla__k_copy(dev, &vsv, &vv1);
        } else if (st == DLA_OK) {
            dla_tensor *rm = keep(&w, dla__nn_dense(op, in[3]));
            dla_tensor *rv = keep(&w, dla__nn_dense(op, in[4]));
            dla_tensor *t = keep(&w, dla__tensor_alloc(op, dev, x->dtype, "", 1, c1));
            if (!rm || !rv || !t)
                st = dla_last_status();
            dla_view vrm, vrv, vt;
            if (st == DLA_OK) {
                dla__nn_view(rm, 1, c1, &vrm);
                dla__nn_view(rv, 1, c1, &vrv);
                dla__view_of(t, &vt);
            }
            double unbias = g.n > 1 ? (double)g.n / (double)(g.n - 1) : 1.0;
            double md = at->mean_decay, vd = at->var_decay;
            /* A batch of no elements has no statistics (its mean is NaN):
             * mixed in, even with weight 0, they made the running ones NaN
             * for good, and every later predict NaN; it leaves them as
             * they are. */
            if (st == DLA_OK && g.n == 0) {
                st = dla__k_copy(dev, &vsm, &vrm);
                if (st == DLA_OK)
                    st = dla__k_copy(dev, &vsv, &vrv);
            } else if (st == DLA_OK) {
                st = dla__nn_unary(dev, DLA_UNARY_AFFINE, md, 0.0, &vsm, &vm1);
                if (st == DLA_OK)
                    st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 1.0 - md, 0.0, &vt, &vrm);
                if (st == DLA_OK)
                    st = dla__nn_binary(dev, DLA_BINARY_ADD, &vsm, &vsm, &vt);
                if (st == DLA_OK)
                    st = dla__nn_unary(dev, DLA_UNARY_AFFINE, vd * unbias, 0.0, &vsv, &vv1);
                if (st == DLA_OK)
                    st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 1.0 - vd, 0.0, &vt, &vrv);
                if (st == DLA_OK)
                    st = dla__nn_binary(dev, DLA_BINARY_ADD, &vsv, &vsv, &vt);
            }
        }
    }
    work_free(&w);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        dla_tensor_release(sm);
        dla_tensor_release(sv);
        dla_tensor_release(mean);
        dla_tensor_release(istd);
        return st;
    }
    out[0] = y;
    if (at->mode == NM_BATCH) {
        out[1] = sm;
        out[2] = sv;
    }
    saved[0] = mean;
    saved[1] = istd;
    return DLA_OK;
}

/* The dims list (1-based) of the dims g normalizes over, or of the dims
 * that are not channels (for the offset and scale gradients). */
static int dims_list(const norm_geom *g, int channels, int64_t *list)
{
    int n = 0;
    for (int i = 0; i < ND; i++)
        if (channels ? (i != DCG && i != DG) : g->red[i])
            list[n++] = i + 1;
    return n;
}

/* t reshaped to like's dims and format. */
static dla_tensor *like(dla_tensor *t, const dla_tensor *like)
{
    return dla_reshape(t, like->format, like->ndims, like->dims);
}

static dla_tensor *as5(dla_tensor *t, const int64_t *dims) { return dla_reshape(t, "", ND, dims); }

/* Batchnorm and instancenorm: each statistic's elements share one scale
 * factor, so every sum the backward needs comes from two reductions of the
 * full-size data, sum(g) and sum(g .* x), per statistic; dx is then
 * g .* p + x .* q + r with p, q, r per statistic. */
static void backward_per_channel(const dla__node *n, const norm_geom *g, dla_tensor *g5,
                                 dla_tensor *x5, dla_tensor *mu, dla_tensor *istd,
                                 dla_tensor **gin)
{
    int64_t other[ND];
    int nother = dims_list(g, 1, other);
    dla_tensor *scale = as5(n->in[2], g->chan);
    dla_tensor *sg, *sgx;
    dla__norm_sums(g5, x5, g->red, &sg, &sgx);
    /* sum(g .* (x - mu)) */
    dla_tensor *dot = dla_sub(sgx, dla_mul(mu, sg));
    /* With an empty batch x's gradient is empty: made from g alone, not
     * through p, q and r, whose NaN statistics a recorded sweep would
     * differentiate into the scale's second derivative (0 .* NaN). */
    if (n->need[0] && g->n == 0)
        gin[0] = like(dla_affine(g5, 0.0, 0.0), n->in[0]);
    else if (n->need[0]) {
        double inv_n = 1.0 / (double)g->n;
        dla_tensor *p = dla_mul(istd, scale);
        /* q = -istd^3 scale dot / N, r = -istd scale sg / N - q mu */
        dla_tensor *q = dla_mul(dla_affine(dla_mul(p, dla_square(istd)), -inv_n, 0.0), dot);
        dla_tensor *r = dla_sub(dla_affine(dla_mul(p, sg), -inv_n, 0.0), dla_mul(q, mu));
        gin[0] = like(dla__norm_dx(g5, p, x5, q, r), n->in[0]);
    }
    if (n->need[1])
        gin[1] = like(dla_sum(sg, nother, other), n->in[1]);
    /* An empty batch (N = 0) has no statistics: mu and istd are NaN, while
     * sg and sgx are empty sums, 0. The scale's gradient, a sum over no
     * elements, is then 0 (as the offset's is), not istd .* (sgx - mu .*
     * sg) = NaN, which an optimizer would write into the scale. */
    if (n->need[2])
        gin[2] = like(dla_sum(g->n > 0 ? dla_mul(istd, dot) : sgx, nother, other), n->in[2]);
}

static dla_status stats_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    if (!gout[0]) /* only the statistics reached the loss: they carry no gradient */
        return DLA_OK;
    const norm_attrs *at = n->attrs;
    dla_tensor *x = n->in[0], *mean = n->saved[0], *istd = n->saved[1];
    norm_geom g;
    dla_status st = geometry(at, x, &g);
    if (st != DLA_OK)
        return st;
    dla_tensor *g5 = as5(gout[0], g.d), *x5 = as5(x, g.d);
    int64_t red[ND], other[ND];
    int nred = dims_list(&g, 0, red), nother = dims_list(&g, 1, other);
    if (dla__recording()) {
        /* A recorded sweep (higher derivatives): the statistics are made
         * again from x with ops on the tape, so that a later sweep sees
         * how they depend on x; the saved ones do not take part in it. The
         * numbers are the forward's to rounding (two passes, unshifted). */
        mean = dla_mean(x5, nred, red);
        istd = dla_pows(dla_affine(dla_mean(dla_square(dla_sub(x5, mean)), nred, red), 1.0,
                                   at->eps),
                        -0.5);
    }
    if (!g.red[DCG] && !g.red[DG]) {
        backward_per_channel(n, &g, g5, x5, mean, istd, gin);
        return DLA_OK;
    }
    /* Layer and group norms: the scale varies within a statistic. */
    dla_tensor *xhat = dla_mul(dla_sub(x5, mean), istd);
    if (n->need[0]) {
        dla_tensor *dxhat = dla_mul(g5, as5(n->in[2], g.chan));
        dla_tensor *m1 = dla_mean(dxhat, nred, red);
        dla_tensor *m2 = dla_mean(dla_mul(dxhat, xhat), nred, red);
        dla_tensor *dx = dla_mul(istd, dla_sub(dla_sub(dxhat, m1), dla_mul(xhat, m2)));
        gin[0] = like(dx, x);
    }
    if (n->need[1])
        gin[1] = like(dla_sum(g5, nother, other), n->in[1]);
    if (n->need[2])
        gin[2] = like(dla_sum(dla_mul(g5, xhat), nother, other), n->in[2]);
    return DLA_OK;
}

/* The public function each op serves and the modes it takes: fn indexes
 * fn_names and mode the table of normalized dims. */
static int fn_takes_mode(norm_fn fn, norm_mode m)
{
    switch (fn) {
    case F_BATCHNORM:
    case F_BATCHNORM_TRAIN: return m == NM_BATCH;
    case F_LAYERNORM: return m >= NM_LAYER_ALL && m <= NM_LAYER_AUTO;
    case F_GROUPNORM: return m == NM_GROUP;
    case F_INSTANCENORM: return m == NM_INSTANCE;
    default: return 0;
    }
}

/* The forwards run geometry on x (fn and mode index tables; groups
 * divides the channels) and check_channel on the per-channel inputs: the
 * same checks on the recorded shapes, after what the public functions
 * make of their options (epsilon > 0, decays in (0, 1]) and which of them
 * (fns: a bit per norm_fn) use this op. Sets the result's shape; g for
 * the caller. */
static dla_status norm_infer_common(const norm_attrs *a, unsigned fns, const dla__vshape *in,
                                    int nchan, dla__vshape *out, norm_geom *g)
{
    const int train = a->fn == F_BATCHNORM_TRAIN;
    if ((unsigned)a->fn >= F_COUNT || !(fns >> a->fn & 1) || !fn_takes_mode(a->fn, a->mode) ||
        !(a->eps > 0.0 && isfinite(a->eps)) ||
        (train && (!(a->mean_decay > 0.0 && a->mean_decay <= 1.0) ||
                   !(a->var_decay > 0.0 && a->var_decay <= 1.0) || (unsigned)a->running > 1)))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "norm: attributes fn %d, mode %d, epsilon %g, "
                         "decays %g and %g, running %d: no call of this op makes them",
                         (int)a->fn, (int)a->mode, a->eps, a->mean_decay, a->var_decay, a->running);
    const char *op = fn_names[a->fn];
    static const char *const names[] = {"x", "offset", "scale", "mean", "var"};
    dla_tensor t[5];
    for (int i = 0; i < nchan; i++)
        dla__tensor_of_shape(&in[i], &t[i]);
    dla_status st = geometry(a, &t[0], g);
    for (int i = 1; i < nchan && st == DLA_OK; i++)
        st = check_channel(op, names[i], &t[i], &t[0], g);
    if (st != DLA_OK)
        return st;
    out[0] = in[0];
    return DLA_OK;
}

/* The saved mean and 1/sqrt(var + eps) of the statistics forwards: 5-D,
 * unformatted, of dims g->stat. */
static void saved_shapes(const dla__vshape *x, const norm_geom *g, dla__vshape *saved)
{
    for (int k = 0; k < 2; k++) {
        saved[k] = (dla__vshape){.dtype = x->dtype, .ndims = ND};
        memcpy(saved[k].dims, g->stat, sizeof g->stat);
    }
}

static dla_status norm_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    norm_geom g;
    dla_status st = norm_infer_common(attrs, 1u << F_LAYERNORM | 1u << F_GROUPNORM |
                                      1u << F_INSTANCENORM, in, 3, out, &g);
    if (st == DLA_OK)
        saved_shapes(&in[0], &g, out + 1);
    return st;
}

/* Batchnorm training also gives the statistics, shaped as the running
 * ones (given) or the offset. */
static dla_status batchnorm_train_infer(const void *attrs, int nin, const dla__vshape *in,
                                        dla__vshape *out)
{
    norm_geom g;
    dla_status st = norm_infer_common(attrs, 1u << F_BATCHNORM_TRAIN, in, nin, out, &g);
    if (st != DLA_OK)
        return st;
    for (int k = 1; k <= 2; k++) {
        out[k] = in[nin == 5 ? 2 + k : 1];
        out[k].dtype = in[0].dtype;
    }
    saved_shapes(&in[0], &g, out + 3);
    return DLA_OK;
}

/* The public function of a norm op's attributes, for messages. */
static const char *norm_call(const void *attrs)
{
    const norm_fn f = ((const norm_attrs *)attrs)->fn;
    return (unsigned)f < F_COUNT ? fn_names[f] : "norm";
}

static const dla__op norm_op = {
    .name = "norm", .nin = 3, .nout = 1, .nsaved = 2, .forward = stats_forward,
    .backward = stats_backward, .infer = norm_infer, .call_name = norm_call,
    .arg_names = (const char *const[]){"x", "offset", "scale", NULL},
    .saved_constant = 1, /* stats_backward recomputes them when recorded */
};
DLA__OP_REGISTER(norm_op, sizeof(norm_attrs));
static int takes_running_if_given(const void *attrs, int nin)
{
    return nin == (((const norm_attrs *)attrs)->running ? 5 : 3);
}

static const dla__op batchnorm_train_op = {
    .name = "dla_batchnorm_train", .nin = -1, .nout = 3, .nsaved = 2, .forward = stats_forward,
    .takes = takes_running_if_given,
    .backward = stats_backward, .infer = batchnorm_train_infer,
    .arg_names = (const char *const[]){"x", "offset", "scale", "running_mean", "running_var", NULL},
    .saved_constant = 1, /* stats_backward recomputes them when recorded */
};
DLA__OP_REGISTER(batchnorm_train_op, sizeof(norm_attrs));

/* --------------------------------------------------- batchnorm inference */

static dla_status infer_forward(const void *attrs, dla_tensor *const *in, int nin,
                                dla_tensor **out, dla_tensor **saved)
{
    (void)nin, (void)saved;
    const norm_attrs *at = attrs;
    const char *op = fn_names[at->fn];
    static const char *const names[] = {"x", "offset", "scale", "mean", "var"};
    dla_tensor *x = in[0];
    norm_geom g;
    dla_status st = geometry(at, x, &g);
    for (int i = 1; i < 5 && st == DLA_OK; i++)
        st = check_channel(op, names[i], in[i], x, &g);
    if (st != DLA_OK)
        return st;
    dla_device *dev = x->storage->device;
    work w = {0};
    dla_tensor *d[5];
    for (int i = 0; i < 5; i++)
        if (!(d[i] = keep(&w, dla__nn_dense(op, in[i]))))
            st = dla_last_status();
    dla_tensor *istd = keep(&w, tmp5(op, x, g.chan)), *a, *b, *y = NULL;
    if (st == DLA_OK && !istd)
        st = dla_last_status();
    if (st == DLA_OK) {
        dla_view vi, vv;
        dla__view_of(istd, &vi);
        dla__nn_view(d[4], ND, g.chan, &vv);
        st = dla__nn_unary(dev, DLA_UNARY_AFFINE, 1.0, at->eps, &vi, &vv);
        if (st == DLA_OK)
            st = dla__nn_unary(dev, DLA_UNARY_POWS, -0.5, 0.0, &vi, &vi);
    }
    /* Batch statistics have the channel dims, so g.ab is g.chan here. */
    if (st == DLA_OK)
        st = fold(op, &g, d[2], d[1], d[3], istd, g.chan, &w, &a, &b);
    if (st == DLA_OK)
        st = apply_ab(op, d[0], x, &g, a, b, &y);
    work_free(&w);
    if (st != DLA_OK)
        return st;
    out[0] = y;
    return DLA_OK;
}

static dla_status infer_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    const norm_attrs *at = n->attrs;
    dla_tensor *x = n->in[0];
    norm_geom g;
    dla_status st = geometry(at, x, &g);
    if (st != DLA_OK)
        return st;
    int64_t other[ND];
    int nother = dims_list(&g, 1, other);
    dla_tensor *g5 = as5(gout[0], g.d);
    dla_tensor *scale = as5(n->in[2], g.chan), *mean = as5(n->in[3], g.chan);
    dla_tensor *istd = dla_pows(dla_affine(as5(n->in[4], g.chan), 1.0, at->eps), -0.5);
    dla_tensor *sum_g = dla_sum(g5, nother, other);
    /* y = scale .* (x - mean) .* istd + offset */
    if (n->need[0])
        gin[0] = like(dla_mul(g5, dla_mul(scale, istd)), x);
    if (n->need[1])
        gin[1] = like(sum_g, n->in[1]);
    dla_tensor *sum_gxhat = NULL;
    if (n->need[2] || n->need[4])
        sum_gxhat = dla_sum(dla_mul(g5, dla_mul(dla_sub(as5(x, g.d), mean), istd)), nother, other);
    if (n->need[2])
        gin[2] = like(sum_gxhat, n->in[2]);
    if (n->need[3]) /* -sum(g) scale istd */
        gin[3] = like(dla_neg(dla_mul(sum_g, dla_mul(scale, istd))), n->in[3]);
    if (n->need[4]) /* d istd / d var = -istd^3 / 2, and sum(g (x - mean)) = sum_gxhat / istd */
        gin[4] = like(dla_mul(sum_gxhat, dla_mul(scale, dla_affine(dla_square(istd), -0.5, 0.0))),
                      n->in[4]);
    return DLA_OK;
}

/* infer_forward runs the same checks as the statistics forwards on x and
 * its four per-channel inputs; the result is x's shape. */
static dla_status batchnorm_infer(const void *attrs, int nin, const dla__vshape *in,
                                  dla__vshape *out)
{
    norm_geom g;
    return norm_infer_common(attrs, 1u << F_BATCHNORM, in, nin, out, &g);
}

static const dla__op batchnorm_op = {
    .name = "dla_batchnorm", .nin = 5, .nout = 1, .forward = infer_forward,
    .backward = infer_backward, .infer = batchnorm_infer,
    .arg_names = (const char *const[]){"x", "offset", "scale", "mean", "var", NULL},
};
DLA__OP_REGISTER(batchnorm_op, sizeof(norm_attrs));

/* ------------------------------------------------------------ public ops */

static dla_status epsilon_of(const char *op, double eps, double *out)
{
    if (!(eps >= 0.0) || !isfinite(eps))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option epsilon: %g; needs a positive "
                         "number (0: the default 1e-5)", op, eps);
    *out = eps > 0.0 ? eps : 1e-5;
    return DLA_OK;
}

static dla_status decay_of(const char *op, const char *name, double d, double *out)
{
    if (!(d >= 0.0 && d <= 1.0))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option %s: %g is outside (0, 1] (0: the "
                         "default 0.1)", op, name, d);
    *out = d > 0.0 ? d : 0.1;
    return DLA_OK;
}

DLA_API dla_tensor *dla_batchnorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                  dla_tensor *mean, dla_tensor *var,
                                  const dla_batchnorm_options *opts)
{
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    norm_attrs a;
    memset(&a, 0, sizeof a);
    a.fn = F_BATCHNORM;
    a.mode = NM_BATCH;
    if (epsilon_of(fn_names[a.fn], opts ? opts->epsilon : 0.0, &a.eps) != DLA_OK)
        return dla__return(dla__error_tensor());
    return dla__apply(&batchnorm_op, &a, sizeof a, 5, (dla_tensor *[]){x, offset, scale, mean, var});
}

DLA_API dla_status dla_batchnorm_train(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                       dla_tensor *running_mean, dla_tensor *running_var,
                                       const dla_batchnorm_options *opts, dla_tensor **y,
                                       dla_tensor **new_mean, dla_tensor **new_var)
{
    static const char op[] = "dla_batchnorm_train";
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    norm_attrs a;
    memset(&a, 0, sizeof a);
    a.fn = F_BATCHNORM_TRAIN;
    a.mode = NM_BATCH;
    dla_tensor *out[3];
    dla_status st = DLA_OK;
    if (!y)
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument y is NULL", op);
    else if (!running_mean != !running_var)
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument running_%s is NULL but running_%s "
                       "is not; give both or neither", op, running_mean ? "var" : "mean",
                       running_mean ? "mean" : "var");
    if (st == DLA_OK)
        st = epsilon_of(op, opts ? opts->epsilon : 0.0, &a.eps);
    if (st == DLA_OK)
        st = decay_of(op, "mean_decay", opts ? opts->mean_decay : 0.0, &a.mean_decay);
    if (st == DLA_OK)
        st = decay_of(op, "variance_decay", opts ? opts->variance_decay : 0.0, &a.var_decay);
    if (st != DLA_OK) {
        dla_tensor *e = dla__return(dla__error_tensor());
        out[0] = e;
        out[1] = out[2] = NULL;
        if (new_mean)
            out[1] = *new_mean = dla__return(dla_tensor_retain(e));
        if (new_var)
            out[2] = *new_var = dla__return(dla_tensor_retain(e));
        if (y)
            *y = e;
        else
            dla_tensor_release(e);
        return st;
    }
    a.running = running_mean != NULL;
    dla_tensor *in[5] = {x, offset, scale, running_mean, running_var};
    st = dla__apply_n(&batchnorm_train_op, &a, sizeof a, a.running ? 5 : 3, in, out);
    *y = out[0];
    /* Statistics nobody wants: their reference goes back (scope-owned ones
     * are left to the scope, which releases them when it closes). */
    if (new_mean)
        *new_mean = out[1];
    else if (!dla__scope_active())
        dla_tensor_release(out[1]);
    if (new_var)
        *new_var = out[2];
    else if (!dla__scope_active())
        dla_tensor_release(out[2]);
    return st;
}

static dla_tensor *generic(norm_fn fn, norm_mode mode, int64_t groups, dla_tensor *x,
                           dla_tensor *offset, dla_tensor *scale, const dla_norm_options *opts)
{
    const char *op = fn_names[fn];
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    norm_attrs a;
    memset(&a, 0, sizeof a);
    a.fn = fn;
    a.mode = mode;
    a.groups = groups;
    if (epsilon_of(op, opts ? opts->epsilon : 0.0, &a.eps) != DLA_OK)
        return dla__return(dla__error_tensor());
    return dla__apply(&norm_op, &a, sizeof a, 3, (dla_tensor *[]){x, offset, scale});
}

DLA_API dla_tensor *dla_layernorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                  const dla_norm_options *opts)
{
    const char *od = opts ? opts->operation_dimension : NULL;
    norm_mode m;
    if (!od || !strcmp(od, "batch-excluded"))
        m = NM_LAYER_ALL;
    else if (!strcmp(od, "spatial-channel"))
        m = NM_LAYER_SPATIAL;
    else if (!strcmp(od, "channel-only"))
        m = NM_LAYER_CHANNEL;
    else if (!strcmp(od, "auto"))
        m = NM_LAYER_AUTO;
    else
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_layernorm: option operation_dimension: "
                          "\"%s\"; use \"auto\", \"channel-only\", \"spatial-channel\" or "
                          "\"batch-excluded\"", od);
    return generic(F_LAYERNORM, m, 1, x, offset, scale, opts);
}

DLA_API dla_tensor *dla_groupnorm(dla_tensor *x, int64_t num_groups, dla_tensor *offset,
                                  dla_tensor *scale, const dla_norm_options *opts)
{
    return generic(F_GROUPNORM, NM_GROUP, num_groups, x, offset, scale, opts);
}

DLA_API dla_tensor *dla_instancenorm(dla_tensor *x, dla_tensor *offset, dla_tensor *scale,
                                     const dla_norm_options *opts)
{
    return generic(F_INSTANCENORM, NM_INSTANCE, 1, x, offset, scale, opts);
}

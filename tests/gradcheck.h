/*
 * gradcheck.h - finite-difference gradient checks for the op suites.
 *
 * gc_check(f, ctx, nin, in, check, tol) compares, for every in[i] with
 * check[i] != 0, the gradient of L = sum(f(in) .* R) that dla_feval and
 * dla_gradient compute with central differences of L in float64 (R is a
 * fixed random tensor of f's output dims, so every output element matters
 * with its own weight). Inputs must be DLA_F64. Large inputs are probed at
 * up to GC_PROBES elements spread over the tensor. A mismatch fails the
 * cmocka test naming the input, the element, and both values. f always
 * runs inside a dla_feval, so it may take gradients itself (a gradient
 * penalty).
 *
 * gc_check2(f, ctx, nin, in, check, tol) checks second derivatives the
 * same way, of L2 = sum(f(in) .^ 2 .* R): squared, so that a linear f
 * (a pool, a slice) has them too, through its recorded backward rules.
 * With fixed random V_i of the checked inputs' dims, S = sum_i
 * sum(dL2/din_i .* V_i), and dS/din_j (Hessian-vector products) computed
 * by a dla_gradient over a first one recorded with
 * enable_higher_derivatives, against central differences of S made from
 * plain first derivatives (which gc_check tests).
 *
 * Include after <cmocka.h> and testutil.h.
 */
#ifndef DLA_GRADCHECK_H
#define DLA_GRADCHECK_H

#include <dlaccel.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef dla_tensor *(*gc_fn)(void *ctx, dla_tensor *const *in);

#define GC_PROBES 48
#define GC_MAX_IN 8

typedef struct gc_ctx {
    gc_fn f;
    void *ctx;
    dla_tensor *r;
    const int *check;
    int nin;
} gc_ctx;

/* f(in) inside a dla_feval of its own, so that an f that takes gradients
 * itself (a gradient penalty) can be evaluated; the result is the caller
 * scope's. */
typedef struct gc_eval_ctx {
    gc_fn f;
    void *ctx;
} gc_eval_ctx;

static dla_status gc_eval_model(void *c, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    gc_eval_ctx *e = c;
    out[0] = e->f(e->ctx, in);
    return dla_tensor_status(out[0]);
}

static dla_tensor *gc_eval(gc_fn f, void *ctx, int nin, dla_tensor *const *in)
{
    dla_tensor *y;
    dla_feval(gc_eval_model, &(gc_eval_ctx){f, ctx}, nin, in, 1, &y);
    return y;
}

/* L = sum(f(in) .* R), as a double. */
static double gc_loss(gc_fn f, void *ctx, int nin, dla_tensor *const *in, dla_tensor *r)
{
    dla_scope_begin();
    dla_tensor *l = dla_sum(dla_mul(gc_eval(f, ctx, nin, in), r), 0, NULL);
    if (dla_tensor_status(l) != DLA_OK)
        fail_msg("gradcheck: the function failed: %s", dla_tensor_error(l));
    double v = dla_tensor_item(l, 0);
    dla_scope_end();
    return v;
}

static dla_status gc_model(void *c, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    gc_ctx *g = c;
    dla_tensor *l = dla_sum(dla_mul(g->f(g->ctx, in), g->r), 0, NULL);
    out[0] = l;
    dla_tensor *wrt[GC_MAX_IN];
    int k = 0;
    for (int i = 0; i < nin; i++)
        if (g->check[i])
            wrt[k++] = in[i];
    return dla_gradient(l, k, wrt, out + 1);
}

static double *gc_host(dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (dla_tensor_to_host(t, h, sizeof(double) * (size_t)n) != DLA_OK)
        fail_msg("gradcheck: reading a tensor failed: %s", dla_last_error());
    return h;
}

/* A scalar function of the inputs, differenced by gc_compare. */
typedef double (*gc_value_fn)(void *c, dla_tensor *const *in);

static double gc_value_of_loss(void *c, dla_tensor *const *in)
{
    gc_ctx *g = c;
    return gc_loss(g->f, g->ctx, g->nin, in, g->r);
}

/* For each checked in[i], its derivative grads[k] (k counting the checked
 * ones) against central differences of value at up to GC_PROBES of its
 * elements. what names the derivative in messages. */
static void gc_compare(int nin, dla_tensor *const *in, const int *check, dla_tensor *const *grads,
                       gc_value_fn value, void *vc, const char *what, double tol)
{
    int k = 0;
    for (int i = 0; i < nin; i++) {
        if (!check[i])
            continue;
        dla_tensor *grad = grads[k++];
        if (dla_tensor_status(grad) != DLA_OK)
            fail_msg("gradcheck: %sinput %d: %s", what, i + 1, dla_tensor_error(grad));
        assert_int_equal(dla_tensor_ndims(grad), dla_tensor_ndims(in[i]));
        assert_string_equal(dla_tensor_format(grad), dla_tensor_format(in[i]));
        double *ga = gc_host(grad);
        dla_tensor *dense = dla_contiguous(in[i]);
        double *x = gc_host(dense);
        int64_t xd[DLA_MAX_DIMS];
        int xnd = dla_tensor_dims(in[i], xd);
        int64_t n = dla_tensor_numel(in[i]);
        int64_t stride = n > GC_PROBES ? n / GC_PROBES : 1;
        for (int64_t e = (int64_t)(tu_next() % (uint64_t)stride); e < n; e += stride) {
            double keep = x[e], h = 1e-6 * (fabs(keep) > 1 ? fabs(keep) : 1);
            double lp, lm;
            dla_tensor *moved[GC_MAX_IN];
            memcpy(moved, in, sizeof(dla_tensor *) * (size_t)nin);
            x[e] = keep + h;
            moved[i] = dla_tensor_from_host(x, DLA_F64, dla_tensor_format(in[i]), xnd, xd);
            lp = value(vc, moved);
            x[e] = keep - h;
            moved[i] = dla_tensor_from_host(x, DLA_F64, dla_tensor_format(in[i]), xnd, xd);
            lm = value(vc, moved);
            x[e] = keep;
            double num = (lp - lm) / (2 * h);
            double scale = fabs(num) > fabs(ga[e]) ? fabs(num) : fabs(ga[e]);
            if (!(fabs(num - ga[e]) <= tol * (scale > 1 ? scale : 1)))
                fail_msg("gradcheck: %sinput %d element %lld: analytic %.10g, numeric %.10g", what,
                         i + 1, (long long)e, ga[e], num);
        }
        free(ga);
        free(x);
    }
}

/* R: fixed weights of f(in)'s dims (0.5 to 1.5). */
static dla_tensor *gc_weights(gc_fn f, void *ctx, int nin, dla_tensor *const *in)
{
    dla_tensor *y = gc_eval(f, ctx, nin, in);
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("gradcheck: the function failed: %s", dla_tensor_error(y));
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(y, dims);
    int64_t ny = dla_tensor_numel(y);
    double *rh = malloc(sizeof(double) * (size_t)(ny ? ny : 1));
    for (int64_t i = 0; i < ny; i++)
        rh[i] = 0.5 + tu_unit();
    dla_tensor *r = dla_tensor_from_host(rh, DLA_F64, dla_tensor_format(y), nd, dims);
    free(rh);
    return r;
}

static void gc_check(gc_fn f, void *ctx, int nin, dla_tensor *const *in, const int *check,
                     double tol)
{
    /* Everything below belongs to this scope, whatever scope the caller is in. */
    dla_scope_begin();
    dla_tensor *r = gc_weights(f, ctx, nin, in);

    int ncheck = 0;
    for (int i = 0; i < nin; i++)
        ncheck += check[i] != 0;
    gc_ctx g = {f, ctx, r, check, nin};
    dla_tensor *out[1 + GC_MAX_IN];
    dla_status st = dla_feval(gc_model, &g, nin, in, 1 + ncheck, out);
    if (st != DLA_OK)
        fail_msg("gradcheck: dla_feval failed: %s", dla_last_error());
    gc_compare(nin, in, check, out + 1, gc_value_of_loss, &g, "", tol);
    dla_scope_end();
}

/* ------------------------------------------------- second derivatives */

typedef struct gc2_ctx {
    gc_ctx g;
    dla_tensor *v[GC_MAX_IN]; /* V_i of the checked inputs, NULL for the others */
    int higher;               /* the first sweep recorded */
} gc2_ctx;

/* out[0] = S = sum_i sum(dL2/din_i .* V_i); with nout > 1, out[1..] =
 * dS/din_i of the checked inputs. */
static inline dla_status gc2_model(void *c, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    gc2_ctx *h = c;
    dla_tensor *l = dla_sum(dla_mul(dla_square(h->g.f(h->g.ctx, in)), h->g.r), 0, NULL);
    dla_tensor *wrt[GC_MAX_IN], *grads[GC_MAX_IN], *s = NULL;
    int k = 0;
    for (int i = 0; i < nin; i++)
        if (h->g.check[i])
            wrt[k++] = in[i];
    dla_status st = dla_gradient_opts(l, k, wrt, grads,
                                      &(dla_gradient_options){.enable_higher_derivatives =
                                                                  h->higher});
    if (st != DLA_OK)
        return st;
    for (int i = 0, j = 0; i < nin; i++) {
        if (!h->g.check[i])
            continue;
        /* a scalar of no format: the inputs' formats differ */
        dla_tensor *t = dla_reshape(dla_sum(dla_mul(grads[j++], h->v[i]), 0, NULL), "", 1,
                                    (const int64_t[]){1});
        s = s ? dla_add(s, t) : t;
    }
    out[0] = s;
    return nout > 1 ? dla_gradient(s, k, wrt, out + 1) : DLA_OK;
}

static inline double gc2_value(void *c, dla_tensor *const *in)
{
    gc2_ctx *h = c;
    h->higher = 0;
    dla_scope_begin();
    dla_tensor *s;
    if (dla_feval(gc2_model, h, h->g.nin, in, 1, &s) != DLA_OK)
        fail_msg("gradcheck: the first derivatives failed: %s", dla_last_error());
    double v = dla_tensor_item(s, 0);
    dla_scope_end();
    return v;
}

static inline void gc_check2(gc_fn f, void *ctx, int nin, dla_tensor *const *in,
                             const int *check, double tol)
{
    dla_scope_begin();
    gc2_ctx h = {.g = {f, ctx, gc_weights(f, ctx, nin, in), check, nin}, .higher = 1};
    int ncheck = 0;
    for (int i = 0; i < nin; i++) {
        if (!check[i])
            continue;
        ncheck++;
        int64_t dims[DLA_MAX_DIMS];
        const int nd = dla_tensor_dims(in[i], dims);
        const int64_t n = dla_tensor_numel(in[i]);
        double *vh = malloc(sizeof(double) * (size_t)(n ? n : 1));
        for (int64_t e = 0; e < n; e++)
            vh[e] = 2.0 * tu_unit() - 1.0;
        h.v[i] = dla_tensor_from_host(vh, DLA_F64, dla_tensor_format(in[i]), nd, dims);
        free(vh);
    }
    dla_tensor *out[1 + GC_MAX_IN];
    if (dla_feval(gc2_model, &h, nin, in, 1 + ncheck, out) != DLA_OK)
        fail_msg("gradcheck: the second derivatives failed: %s", dla_last_error());
    gc_compare(nin, in, check, out + 1, gc2_value, &h, "second derivative, ", tol);
    dla_scope_end();
}

/* A network's output with in[] as its learnables: forward (training) or
 * predict. The f of a network's check: gc_check(gc_run_net, &(gc_net){net,
 * x, training}, n, learnables, check, tol). */
typedef struct gc_net {
    dla_net *net;
    dla_tensor *x;
    int training;
} gc_net;

static inline dla_tensor *gc_run_net(void *c, dla_tensor *const *in)
{
    gc_net *n = c;
    dla_tensor *y;
    dla_net_forward_options o = {.learnables = in};
    if (n->training)
        dla_net_forward(n->net, 1, &n->x, 1, &y, NULL, &o);
    else
        dla_net_predict(n->net, 1, &n->x, 1, &y, &o);
    return y;
}

#endif

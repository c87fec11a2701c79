/*
 * gradcheck.h - finite-difference gradient checks for the op suites.
 *
 * gc_check(f, ctx, nin, in, check, tol) compares, for every in[i] with
 * check[i] != 0, the gradient of L = sum(f(in) .* R) that dla_feval and
 * dla_gradient compute with central differences of L in float64 (R is a
 * fixed random tensor of f's output dims, so every output element matters
 * with its own weight). Inputs must be DLA_F64. Large inputs are probed at
 * up to GC_PROBES elements spread over the tensor. A mismatch fails the
 * cmocka test naming the input, the element, and both values.
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
} gc_ctx;

/* L = sum(f(in) .* R), as a double. */
static double gc_loss(gc_fn f, void *ctx, dla_tensor *const *in, dla_tensor *r)
{
    dla_scope_begin();
    dla_tensor *l = dla_sum(dla_mul(f(ctx, in), r), 0, NULL);
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

static void gc_check(gc_fn f, void *ctx, int nin, dla_tensor *const *in, const int *check,
                     double tol)
{
    /* Everything below belongs to this scope, whatever scope the caller is in. */
    dla_scope_begin();
    /* R: fixed weights of the output's dims. */
    dla_tensor *y = f(ctx, in);
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

    int ncheck = 0;
    for (int i = 0; i < nin; i++)
        ncheck += check[i] != 0;
    gc_ctx g = {f, ctx, r, check};
    dla_tensor *out[1 + GC_MAX_IN];
    dla_status st = dla_feval(gc_model, &g, nin, in, 1 + ncheck, out);
    if (st != DLA_OK)
        fail_msg("gradcheck: dla_feval failed: %s", dla_last_error());
    int k = 0;
    for (int i = 0; i < nin; i++) {
        if (!check[i])
            continue;
        dla_tensor *grad = out[1 + k++];
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
            lp = gc_loss(f, ctx, moved, r);
            x[e] = keep - h;
            moved[i] = dla_tensor_from_host(x, DLA_F64, dla_tensor_format(in[i]), xnd, xd);
            lm = gc_loss(f, ctx, moved, r);
            x[e] = keep;
            double num = (lp - lm) / (2 * h);
            double scale = fabs(num) > fabs(ga[e]) ? fabs(num) : fabs(ga[e]);
            if (!(fabs(num - ga[e]) <= tol * (scale > 1 ? scale : 1)))
                fail_msg("gradcheck: input %d element %lld: analytic %.10g, numeric %.10g", i + 1,
                         (long long)e, ga[e], num);
        }
        free(ga);
        free(x);
    }
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

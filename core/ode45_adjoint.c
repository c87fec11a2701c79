/*
 * ode45_adjoint.c - dla_ode45's "adjoint" gradient mode (Chen et al.,
 * "Neural Ordinary Differential Equations", 2018).
 *
 * The solve is one op: its forward runs the solver with nothing recorded,
 * so the tape holds one node however many steps it took, and its backward
 * solves, from each requested time back to the one before, the augmented
 * system
 *
 *     y' = f(t, y),   a' = -a^T df/dy,   g_j' = -a^T df/dtheta_j
 *
 * with a = dL/dy at the later time and g_j accumulating dL/dtheta_j. The
 * products a^T df/d(.) are one backward sweep of f inside a dla_feval of
 * their own. The three are packed into one column so the same solver,
 * with the same tolerances, integrates them; y restarts at each requested
 * time from the forward solution there, and a gains that time's incoming
 * gradient.
 *
 * The backward is not differentiable again (a recorded sweep refuses it),
 * and a trace file cannot hold the op: its attributes are a C function and
 * its context.
 */
#include "core/ode45.h"

#include "core/error.h"
#include "core/op.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <math.h>
#include <string.h>

static const char OP[] = "dla_ode45";

typedef struct adjoint_attrs {
    dla_ode_function fn;
    void *ctx;
    dla_ode_options o; /* the numbers; pointers cleared */
    int nt;
    double tspan[DLA__ODE45_ADJOINT_MAX_TIMES];
} adjoint_attrs;

/* The counts of this thread's last forward, for the caller's stats. */
static _Thread_local dla_ode_stats last_stats;

static dla_status adjoint_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)saved;
    const adjoint_attrs *a = attrs;
    dla_scope_begin();
    dla_tensor *y = dla__ode45_solve(a->fn, a->ctx, a->nt, a->tspan, in[0], nin - 1, in + 1,
                                     &a->o, &last_stats);
    const dla_status st = dla_tensor_status(y);
    if (st == DLA_OK)
        out[0] = dla_tensor_retain(y);
    else
        dla__fail(st, "%s", dla_tensor_error(y));
    dla_scope_end();
    return st;
}

/* A tensor as one unformatted column. */
static dla_tensor *column(dla_tensor *t)
{
    return dla_reshape(t, "", DLA_DIMS(dla_tensor_numel(t), 1));
}

/* Part [at, at + numel of like) of column z with like's dims and format. */
static dla_tensor *part(dla_tensor *z, int64_t at, dla_tensor *like)
{
    int64_t dims[DLA_MAX_DIMS];
    const int nd = dla_tensor_dims(like, dims);
    return dla_reshape(dla_slice(z, 1, at, 1, at + dla_tensor_numel(like)),
                       dla_tensor_format(like), nd, dims);
}

typedef struct augmented {
    dla_ode_function fn;
    void *ctx;
    int ntheta;
    dla_tensor *const *theta;
    dla_tensor *y_like; /* y's dims and format */
    /* Set for each evaluation, for vjp_body. */
    double t;
    dla_tensor *a;
    int reach_all; /* f misses an input: vjp_body makes every one reach */
} augmented;

/* in = {y, theta...}: out = {f, a^T df/dy, a^T df/dtheta...}. Where f
 * does not depend on some input (y' = b), every input is made to reach
 * the scalar by a zero multiple of its sum, and that input's gradient is
 * zeros instead of an error.
 *
 * A tensor given as several theta[j] (theta = {w, w}, a network whose
 * table holds one tensor twice) has one gradient, the derivative through
 * all its uses; it goes to its first slot and zeros to the others, since
 * the tape adds up what the op's backward gives each slot. Each slot got
 * the whole gradient, and the sum was that many times too large. */
static dla_status vjp_body(void *c, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nout;
    augmented *g = c;
    dla_tensor *f = g->fn(g->t, in[0], nin - 1, in + 1, g->ctx);
    if (!f)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: the function returned NULL at t = %.17g (adjoint sweep)", OP,
                             g->t);
    if (dla_tensor_status(f) != DLA_OK)
        return dla_set_error(dla_tensor_status(f), "%s", dla_tensor_error(f));
    dla_tensor *wrt[DLA__OP_MAX_IO], *grads[DLA__OP_MAX_IO];
    int slot[DLA__OP_MAX_IO], nw = 0;
    for (int i = 0; i < nin; i++) {
        int k = 0;
        while (k < nw && wrt[k] != in[i])
            k++;
        if (k == nw)
            wrt[nw++] = in[i];
        slot[i] = k;
    }
    dla_tensor *s = dla_sum(dla_mul(f, g->a), 0, NULL);
    out[0] = f;
    dla_status st = DLA_ERR_INVALID_ARGUMENT;
    if (!g->reach_all) {
        st = dla_gradient(s, nw, wrt, grads);
        if (st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "does not depend"))
            g->reach_all = 1;
        else if (st != DLA_OK)
            return st;
    }
    if (g->reach_all) {
        for (int k = 0; k < nw; k++)
            s = dla_add(s, dla_affine(dla_sum(wrt[k], 0, NULL), 0, 0));
        if ((st = dla_gradient(s, nw, wrt, grads)) != DLA_OK)
            return st;
    }
    for (int i = 0, k = 0; i < nin; i++)
        out[1 + i] = slot[i] == k ? grads[k++] : dla_affine(grads[slot[i]], 0, 0);
    return DLA_OK;
}

/* The augmented right-hand side on the packed column z = [y; a; g...]. */
static dla_tensor *augmented_slope(double t, dla_tensor *z, int n, dla_tensor *const *p, void *c)
{
    (void)n, (void)p;
    augmented *g = c;
    const int64_t ny = dla_tensor_numel(g->y_like);
    dla_tensor *in[DLA__OP_MAX_IO];
    in[0] = part(z, 0, g->y_like);
    for (int j = 0; j < g->ntheta; j++)
        in[1 + j] = g->theta[j];
    g->t = t;
    g->a = part(z, ny, g->y_like);
    dla_tensor *out[1 + DLA__OP_MAX_IO];
    const dla_status st = dla_feval(vjp_body, g, 1 + g->ntheta, in, 2 + g->ntheta, out);
    if (st != DLA_OK)
        return dla__error(st, "%s", dla_last_error());
    dla_tensor *cols[2 + DLA__OP_MAX_IO];
    cols[0] = column(out[0]);
    for (int j = 1; j < 2 + g->ntheta; j++)
        cols[j] = column(dla_neg(out[j]));
    return dla_cat(1, 2 + g->ntheta, cols);
}

/* Output i of the op (y's dims) out of the stacked result r. */
static dla_tensor *at_time(const adjoint_attrs *a, dla_tensor *r, dla_tensor *y0, int i)
{
    if (a->nt == 2)
        return r;
    int nd;
    char fmt[DLA_MAX_DIMS + 2];
    const int at = dla__ode45_time_dim(y0, &nd, fmt);
    int64_t dims[DLA_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = dla_tensor_dim(y0, d + 1);
    return dla_reshape(dla_slice(r, at + 1, i, 1, i + 1), dla_tensor_format(y0), nd, dims);
}

static dla_status adjoint_backward(const dla__node *node, dla_tensor *const *gout,
                                   dla_tensor **gin)
{
    const adjoint_attrs *a = node->attrs;
    if (dla__recording())
        return dla__fail(DLA_ERR_UNSUPPORTED,
                         "%s: gradient_mode \"adjoint\" gives first derivatives only; "
                         "\"direct\" records the solve for higher ones",
                         OP);
    dla_tensor *y0 = node->in[0], *r = node->out[0], *G = gout[0];
    const int m = node->nin - 1;
    augmented g = {.fn = a->fn, .ctx = a->ctx, .ntheta = m, .theta = node->in + 1, .y_like = y0};
    const int64_t ny = dla_tensor_numel(y0);
    const int n = a->nt - 1;
    dla_tensor *y = at_time(a, r, y0, n - 1), *adj = at_time(a, G, y0, n - 1);
    dla_tensor *acc[DLA__OP_MAX_IO];
    /* Zeros on theta's own device (it may not be the current one). */
    for (int j = 0; j < m; j++)
        acc[j] = dla_affine(column(node->in[1 + j]), 0, 0);
    /* Each interval is solved on its own, but with the whole solve's
     * largest step (a tenth of it by default), not a tenth of the
     * interval: the adjoint system is as smooth as the forward one. */
    dla_ode_options o = a->o;
    if (!(o.max_step > 0))
        o.max_step = 0.1 * fabs(a->tspan[n] - a->tspan[0]);
    for (int k = n; k >= 1; k--) {
        dla_tensor *cols[2 + DLA__OP_MAX_IO] = {column(y), column(adj)};
        for (int j = 0; j < m; j++)
            cols[2 + j] = acc[j];
        dla_tensor *z = dla_cat(1, 2 + m, cols);
        z = dla__ode45_solve(augmented_slope, &g, 2, (const double[]){a->tspan[k], a->tspan[k - 1]},
                             z, 0, NULL, &o, NULL);
        if (dla_tensor_status(z) != DLA_OK)
            return dla__fail(dla_tensor_status(z), "%s (the adjoint solve from t = %.17g to "
                             "%.17g)", dla_tensor_error(z), a->tspan[k], a->tspan[k - 1]);
        adj = part(z, ny, y0);
        int64_t at = 2 * ny;
        for (int j = 0; j < m; j++) {
            const int64_t nj = dla_tensor_numel(node->in[1 + j]);
            acc[j] = dla_slice(z, 1, at, 1, at + nj);
            at += nj;
        }
        if (k >= 2) {
            /* The forward solution restarts y; a takes in that time's
             * gradient. */
            y = at_time(a, r, y0, k - 2);
            adj = dla_add(adj, at_time(a, G, y0, k - 2));
        }
    }
    gin[0] = adj;
    for (int j = 0; j < m; j++)
        gin[1 + j] = part(acc[j], 0, node->in[1 + j]);
    return DLA_OK;
}

/* A C function and its context cannot go to a file. */
static dla_status refuse_encode(const dla__attrs_io *io, const void *attrs, size_t attrs_size,
                                unsigned char *buf, size_t cap, size_t *len)
{
    (void)io, (void)attrs, (void)attrs_size, (void)buf, (void)cap;
    *len = 0;
    return dla__fail(DLA_ERR_UNSUPPORTED,
                     "%s: a trace holding a solve in gradient_mode \"adjoint\" cannot be saved: "
                     "its function is C code of the program that recorded it",
                     OP);
}

static dla_status refuse_decode(const dla__attrs_io *io, const unsigned char *buf, size_t size,
                                void *attrs, size_t attrs_size)
{
    (void)io, (void)buf, (void)size, (void)attrs, (void)attrs_size;
    return dla__fail(DLA_ERR_IO, "%s (adjoint): no trace file can hold this op; the file is "
                     "not one dlaccel wrote",
                     OP);
}

/* Never reached: the decoder refuses first. Here too, nothing loaded is
 * trusted. */
static dla_status refuse_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)attrs, (void)nin, (void)in, (void)out;
    return dla__fail(DLA_ERR_IO, "%s (adjoint): no trace file can hold this op", OP);
}

static const char *const adjoint_args[] = {"y0", "theta", NULL};

static const dla__op adjoint_op = {
    .name = "dla_ode45",
    .nin = -1,
    .nout = 1,
    .forward = adjoint_forward,
    .backward = adjoint_backward,
    .arg_names = adjoint_args,
    .encode_attrs = refuse_encode,
    .decode_attrs = refuse_decode,
    .infer = refuse_infer,
};
DLA__OP_REGISTER_AS(adjoint_op, "dla_ode45_adjoint", sizeof(adjoint_attrs));

dla_tensor *dla__ode45_adjoint(dla_ode_function fn, void *ctx, int nt, const double *tspan,
                               dla_tensor *y0, int ntheta, dla_tensor *const *theta,
                               const dla_ode_options *o)
{
    if (nt > DLA__ODE45_ADJOINT_MAX_TIMES)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument tspan: %d times; gradient_mode \"adjoint\" takes at most "
                          "%d (\"direct\" has no limit)",
                          OP, nt, DLA__ODE45_ADJOINT_MAX_TIMES);
    if (ntheta > DLA__OP_MAX_IO - 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument theta: %d tensors; gradient_mode \"adjoint\" takes at "
                          "most %d (join them, or use \"direct\")",
                          OP, ntheta, DLA__OP_MAX_IO - 1);
    for (int j = 0; j < ntheta; j++)
        if (dla_tensor_dtype(theta[j]) != dla_tensor_dtype(y0))
            return dla__error(DLA_ERR_DTYPE,
                              "%s: argument theta[%d] is %s and y0 %s; gradient_mode "
                              "\"adjoint\" integrates them together, in one dtype",
                              OP, j, dla_dtype_name(dla_tensor_dtype(theta[j])),
                              dla_dtype_name(dla_tensor_dtype(y0)));
    adjoint_attrs a = {.fn = fn, .ctx = ctx, .o = *o, .nt = nt};
    a.o.gradient_mode = NULL, a.o.stats = NULL;
    memcpy(a.tspan, tspan, sizeof(double) * (size_t)nt);
    dla_tensor *in[DLA__OP_MAX_IO] = {y0};
    for (int j = 0; j < ntheta; j++)
        in[1 + j] = theta[j];
    last_stats = (dla_ode_stats){0};
    dla_tensor *y = dla__apply(&adjoint_op, &a, sizeof a, 1 + ntheta, in);
    if (o->stats)
        *o->stats = last_stats;
    return y;
}

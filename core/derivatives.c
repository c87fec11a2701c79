/*
 * derivatives.c - dla_jacobian, dla_divergence and dla_laplacian: the
 * derivatives of a model's outputs with respect to its input data, point
 * by point (MATLAB's dljacobian, dldivergence and dllaplacian).
 *
 * Each is a few backward sweeps of the calling dla_feval's tape. Every
 * point of u (a position outside the operation dimension) depends on the
 * same point of x alone, so the gradient of the sum of u's component k over
 * all points is, at every point at once, that point's derivative of
 * component k: one sweep per component, where a Jacobian taken point by
 * point would take one per point. The Laplacian sweeps once more per
 * component and input coordinate, through the first sweep recorded.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <string.h>

/* The dims of u and x agree outside dim (trailing ones implied). */
static int same_outside(const dla_tensor *u, const dla_tensor *x, int dim)
{
    const int n = u->ndims > x->ndims ? u->ndims : x->ndims;
    for (int d = 1; d <= n; d++)
        if (d != dim && dla_tensor_dim(u, d) != dla_tensor_dim(x, d))
            return 0;
    return 1;
}

/* Checks what the three share; NULL when the arguments are good, else the
 * error tensor to return. */
static dla_tensor *check_args(const char *op, dla_tensor *u, dla_tensor *x, int dim,
                              const dla_gradient_options *opts)
{
    if (!u || u->status != DLA_OK)
        return dla__pass_arg(op, "u", u);
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    char ub[DLA__DIMS_BUF], xb[DLA__DIMS_BUF];
    if (dim < 1 || dim > DLA_MAX_DIMS)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument dim: %d; the operation dimension of x is 1-based, "
                          "at most %d (dla_tensor_find_dim(x, 'C') finds a label's)",
                          op, dim, DLA_MAX_DIMS);
    if (opts && opts->hooks)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument opts: hooks are for dla_gradient_opts; only "
                          "enable_higher_derivatives is read here",
                          op);
    if (!same_outside(u, x, dim))
        return dla__error(DLA_ERR_SHAPE,
                          "%s: u is %s and x is %s: they must agree in every dim but the "
                          "operation dimension %d (one point of u for each point of x)",
                          op, dla__tensor_dims_str(u, ub, sizeof ub),
                          dla__tensor_dims_str(x, xb, sizeof xb), dim);
    return NULL;
}

/* Element i of t along dim: t itself where dim has one element (also a
 * dim past t's, as MATLAB's trailing singletons: x of 5 elements with dim
 * 2 is 5 points of one coordinate). */
static dla_tensor *along(dla_tensor *t, int dim, int64_t i)
{
    return dla_tensor_dim(t, dim) == 1 ? t : dla_slice(t, dim, i, 1, i + 1);
}

/* The gradient of the sum of u's component k (along dim) with respect to
 * x: its derivatives at every point, x's dims. Zeros where component k
 * does not depend on x (*missing counts it). NULL on failure, the
 * message naming op. */
static dla_tensor *component_gradient(const char *op, dla_tensor *u, dla_tensor *x, int dim,
                                      int64_t k, int recorded, int *missing)
{
    dla_tensor *g = NULL;
    dla_tensor *s = dla_sum(along(u, dim, k), 0, NULL);
    const dla_status st = dla__gradient_or_zeros(s, x, &g, recorded, missing);
    if (st != DLA_OK) {
        /* dla_gradient's message, which names dla_gradient, under op. */
        char why[1024];
        snprintf(why, sizeof why, "%s", dla_last_error());
        dla__fail(st, "%s: %s", op, why);
        return NULL;
    }
    return g;
}

/* The error of u depending on x nowhere, as dla_gradient's. */
static dla_tensor *independent(const char *op, dla_tensor *u, dla_tensor *x)
{
    char ub[DLA__DIMS_BUF], xb[DLA__DIMS_BUF];
    return dla__error(DLA_ERR_INVALID_ARGUMENT,
                      "%s: u (%s) does not depend on x (%s): compute u from x inside the same "
                      "dla_feval",
                      op, dla__tensor_dims_str(u, ub, sizeof ub),
                      dla__tensor_dims_str(x, xb, sizeof xb));
}

static int higher(const dla_gradient_options *opts)
{
    return opts && opts->enable_higher_derivatives;
}

/* Element i along dim of t (the diagonal term of a divergence or
 * Laplacian), added to *acc (NULL: the first). */
static void add_diagonal(dla_tensor **acc, dla_tensor *t, int dim, int64_t i)
{
    dla_tensor *e = along(t, dim, i);
    *acc = *acc ? dla_add(*acc, e) : e;
}

/* What one component k of u contributes (NULL on failure, the message
 * set); *missing counts the components without a path to x. */
typedef struct component_job {
    const char *op;
    dla_tensor *u, *x;
    int dim, higher;
    char format[DLA_MAX_DIMS + 2]; /* jacobian: each part's labels and dims */
    int at;
    int64_t dims[DLA_MAX_DIMS];
    int64_t K;
} component_job;
typedef dla_tensor *(*component_fn)(const component_job *j, int64_t k, int *missing);

/* Each of u's K components' part, joined along dim cat (one part is the
 * result itself); u depending on x nowhere is independent()'s error. */
static dla_tensor *join_components(const component_job *j, component_fn part, int cat)
{
    dla_tensor **parts = dla__malloc(sizeof *parts * (size_t)j->K);
    if (!parts)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %lld components", j->op,
                          (long long)j->K);
    int missing = 0;
    dla_tensor *r = NULL;
    for (int64_t k = 0; k < j->K && !r; k++)
        if (!(parts[k] = part(j, k, &missing)))
            r = dla__return(dla__error_tensor());
    if (!r && missing == j->K)
        r = independent(j->op, j->u, j->x);
    if (!r)
        r = j->K == 1 ? parts[0] : dla_cat(cat, (int)j->K, parts);
    dla__free(parts);
    return r;
}

/* Component k's gradient, with a trailing dim of one for the stacking. */
static dla_tensor *jacobian_part(const component_job *j, int64_t k, int *missing)
{
    dla_tensor *g = component_gradient(j->op, j->u, j->x, j->dim, k, j->higher, missing);
    return !g || j->K == 1 ? g : dla_reshape(g, j->format, j->at, j->dims);
}

/* Component k's second derivatives summed over the coordinates. The
 * first derivatives are recorded, so that the second sweep can go
 * through them; where one does not depend on x (a ReLU network's, a
 * linear component's) its second derivatives are zeros. */
static dla_tensor *laplacian_part(const component_job *j, int64_t k, int *missing)
{
    dla_tensor *g = component_gradient(j->op, j->u, j->x, j->dim, k, 1, missing);
    dla_tensor *lap = NULL;
    int unused = 0;
    for (int64_t i = 0; g && i < dla_tensor_dim(j->x, j->dim); i++) {
        dla_tensor *h = component_gradient(j->op, g, j->x, j->dim, i, j->higher, &unused);
        if (!h)
            return NULL;
        add_diagonal(&lap, h, j->dim, i);
    }
    return lap;
}

DLA_API dla_tensor *dla_jacobian(dla_tensor *u, dla_tensor *x, int dim,
                                 const dla_gradient_options *opts)
{
    static const char op[] = "dla_jacobian";
    dla_tensor *bad = check_args(op, u, x, dim, opts);
    if (bad)
        return bad;
    component_job j = {.op = op, .u = u, .x = x, .dim = dim, .higher = higher(opts),
                       .K = dla_tensor_dim(u, dim)};
    if (j.K < 1)
        return dla__error(DLA_ERR_SHAPE, "%s: u has no components along dim %d", op, dim);
    /* The components stack along a new last dim, labeled U when x is
     * formatted (x's own labels stay as they are in front of it). */
    j.at = (x->ndims > dim ? x->ndims : dim) + 1;
    if (j.K > 1 && j.at > DLA_MAX_DIMS)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: x has %d dims; the Jacobian of %lld components needs one more "
                          "(at most %d)",
                          op, j.at - 1, (long long)j.K, DLA_MAX_DIMS);
    if (x->format[0]) {
        if (dim > x->ndims)
            return dla__error(DLA_ERR_SHAPE, "%s: dim %d is past formatted x's %d dims (%s)", op,
                              dim, x->ndims, x->format);
        snprintf(j.format, sizeof j.format, "%sU", x->format);
    }
    for (int d = 0; d < j.at - 1 && d < DLA_MAX_DIMS; d++)
        j.dims[d] = dla_tensor_dim(x, d + 1);
    if (j.at <= DLA_MAX_DIMS)
        j.dims[j.at - 1] = 1;
    return join_components(&j, jacobian_part, j.at);
}

DLA_API dla_tensor *dla_divergence(dla_tensor *u, dla_tensor *x, int dim,
                                   const dla_gradient_options *opts)
{
    static const char op[] = "dla_divergence";
    dla_tensor *bad = check_args(op, u, x, dim, opts);
    if (bad)
        return bad;
    const int64_t C = dla_tensor_dim(x, dim);
    if (dla_tensor_dim(u, dim) != C || C < 1) {
        char ub[DLA__DIMS_BUF], xb[DLA__DIMS_BUF];
        return dla__error(DLA_ERR_SHAPE,
                          "%s: u is %s and x is %s: a divergence needs as many components of u "
                          "as coordinates of x along dim %d",
                          op, dla__tensor_dims_str(u, ub, sizeof ub),
                          dla__tensor_dims_str(x, xb, sizeof xb), dim);
    }
    int missing = 0;
    dla_tensor *div = NULL;
    for (int64_t i = 0; i < C; i++) {
        dla_tensor *g = component_gradient(op, u, x, dim, i, higher(opts), &missing);
        if (!g)
            return dla__return(dla__error_tensor());
        add_diagonal(&div, g, dim, i);
    }
    return missing == C ? independent(op, u, x) : div;
}

DLA_API dla_tensor *dla_laplacian(dla_tensor *u, dla_tensor *x, int dim,
                                  const dla_gradient_options *opts)
{
    static const char op[] = "dla_laplacian";
    dla_tensor *bad = check_args(op, u, x, dim, opts);
    if (bad)
        return bad;
    component_job j = {.op = op, .u = u, .x = x, .dim = dim, .higher = higher(opts),
                       .K = dla_tensor_dim(u, dim)};
    const int64_t C = dla_tensor_dim(x, dim);
    if (j.K < 1 || C < 1)
        return dla__error(DLA_ERR_SHAPE, "%s: u has %lld components and x %lld coordinates "
                          "along dim %d", op, (long long)j.K, (long long)C, dim);
    return join_components(&j, laplacian_part, dim);
}

/*
 * optim_lbfgs.c - MATLAB's lbfgsupdate and lbfgsState: limited-memory BFGS
 * with a line search, on a plain list of parameters.
 *
 * The method's vectors (the parameters, the gradients, the direction, the
 * stored steps and gradient changes) are lists of tensors, one per entry,
 * and the product of two of them is the sum of per-entry sums taken on the
 * device. The two-loop recursion keeps its coefficients on the device as
 * well (1 x 1 doubles broadcast over each entry), so building the direction
 * waits for nothing: the host reads only what steers the control flow, the
 * loss and slope at each length tried, g'd, and the new pair's products.
 * An iteration whose first length is accepted reads three times.
 *
 * All or nothing: everything an update makes is built on the side (the
 * caller's list is lent to the loss function for each call and put back
 * after it), and only the last part, which cannot fail, replaces params and
 * the state's lists.
 */
#include "nn/nn.h"
#include "nn/optim_impl.h"

#include "core/handle.h"

#include <math.h>
#include <string.h>

enum { LS_WEAK, LS_STRONG, LS_BACKTRACKING };
static const char *const methods[] = {"weak-wolfe", "strong-wolfe", "backtracking", NULL};

struct dla_lbfgs_state {
    uint32_t magic; /* DLA__HANDLE_LBFGS; DEAD once freed (docs/checks.md) */
    dla_lbfgs_options o; /* defaults filled in */
    int method;
    int n;               /* entries, set by the first update (0 before) */
    dla_tensor **x;      /* [n] the point the last update returned, +1 each */
    dla_tensor **g;      /* [n] the gradients there, +1 */
    double loss, gnorm, snorm, rate;
    const char *status;  /* "", "completed", "failed" */
    int64_t iterations, evaluations;
    /* The pairs, a ring of history_size slots; slot k holds s[k n .. k n +
     * n - 1], y likewise, and rho[k] = 1 / s'y. The oldest pair is in slot
     * head; count pairs in all. Only cap slots are allocated, grown as
     * pairs come: all history_size of them were allocated and cleared at
     * the first update, and a HistorySize of 2^31 - 1 (a "keep them all")
     * cleared tens of GB, which the system killed the process for. Until
     * the ring is full (count < history_size) head is 0, so the slots in
     * use are 0 .. count - 1 and growing keeps them where they are. */
    int count, head, cap;
    dla_tensor **s, **y;
    double *rho;
    double gamma; /* s'y / y'y of the newest pair */
};

/* Nonzero when s is a live state; else logs why for op. */
static int live(const dla_lbfgs_state *s, const char *op)
{
    if (s->magic == DLA__HANDLE_LBFGS)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)s,
                s->magic == DLA__HANDLE_DEAD ? "an L-BFGS state freed already (freed twice, or "
                "used after dla_lbfgs_state_free)" : "not an L-BFGS state handle");
    return 0;
}

DLA_API dla_lbfgs_state *dla_lbfgs_state_create(const dla_lbfgs_options *opts)
{
    static const char fn[] = "dla_lbfgs_state_create";
    dla_lbfgs_options o = opts ? *opts : (dla_lbfgs_options){0};
    int method = o.line_search_method ? -1 : LS_WEAK;
    for (int i = 0; o.line_search_method && methods[i]; i++)
        if (!strcmp(methods[i], o.line_search_method))
            method = i;
    if (o.history_size < 0) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: HistorySize %d must be a positive integer",
                     fn, o.history_size);
        return NULL;
    }
    if (!(o.initial_inverse_hessian_factor >= 0) || isinf(o.initial_inverse_hessian_factor)) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: InitialInverseHessianFactor %g must be a "
                     "positive finite number", fn, o.initial_inverse_hessian_factor);
        return NULL;
    }
    if (!(o.initial_step_size >= 0)) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: InitialStepSize %g must be 0 (\"auto\"), a "
                     "positive number or INFINITY", fn, o.initial_step_size);
        return NULL;
    }
    if (method < 0) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: LineSearchMethod \"%s\" is not one of "
                     "\"weak-wolfe\", \"strong-wolfe\", \"backtracking\"", fn,
                     o.line_search_method);
        return NULL;
    }
    if (o.max_num_line_search_iterations < 0) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: MaxNumLineSearchIterations %d must be a "
                     "positive integer", fn, o.max_num_line_search_iterations);
        return NULL;
    }
    dla_lbfgs_state *s = dla__nn_calloc(1, sizeof *s);
    if (!s) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        return NULL;
    }
    s->magic = DLA__HANDLE_LBFGS;
    o.history_size = o.history_size ? o.history_size : DLA_LBFGS_HISTORY_SIZE;
    if (o.initial_inverse_hessian_factor == 0)
        o.initial_inverse_hessian_factor = DLA_LBFGS_INITIAL_INVERSE_HESSIAN_FACTOR;
    o.line_search_method = methods[method]; /* ours: the caller's string may not last */
    if (!o.max_num_line_search_iterations)
        o.max_num_line_search_iterations = DLA_LBFGS_MAX_NUM_LINE_SEARCH_ITERATIONS;
    s->o = o;
    s->method = method;
    s->loss = s->gnorm = s->snorm = s->rate = NAN;
    s->status = "";
    return s;
}

/* The pair j places from the oldest (0 .. count - 1): its s or y list. */
static dla_tensor **pair(const dla_lbfgs_state *s, dla_tensor **lists, int j)
{
    return lists + (size_t)((s->head + j) % s->o.history_size) * (size_t)s->n;
}

static double pair_rho(const dla_lbfgs_state *s, int j)
{
    return s->rho[(s->head + j) % s->o.history_size];
}

static void drop_pairs(dla_lbfgs_state *s)
{
    for (int j = 0; j < s->count; j++) {
        dla_optim_free(s->n, pair(s, s->s, j));
        dla_optim_free(s->n, pair(s, s->y, j));
    }
    s->count = s->head = 0;
}

/* Makes room for cap pairs (cap <= history_size; the ring not full, so
 * the pairs in use stay in slots 0 .. count - 1). The state is unchanged
 * on failure: a block moved by a realloc that succeeded holds the same
 * pairs. */
static dla_status grow_pairs(dla_lbfgs_state *s, int cap)
{
    const size_t slots = (size_t)cap * (size_t)s->n;
    if (slots > SIZE_MAX / sizeof *s->s)
        return DLA_ERR_OUT_OF_MEMORY;
    dla_tensor **ns = dla__nn_realloc(s->s, sizeof *ns * slots);
    if (!ns)
        return DLA_ERR_OUT_OF_MEMORY;
    s->s = ns;
    dla_tensor **ny = dla__nn_realloc(s->y, sizeof *ny * slots);
    if (!ny)
        return DLA_ERR_OUT_OF_MEMORY;
    s->y = ny;
    double *nr = dla__nn_realloc(s->rho, sizeof *nr * (size_t)cap);
    if (!nr)
        return DLA_ERR_OUT_OF_MEMORY;
    s->rho = nr;
    s->cap = cap;
    return DLA_OK;
}

/* Stores the pair (its references taken), dropping the oldest when full. */
static void push_pair(dla_lbfgs_state *s, dla_tensor **sv, dla_tensor **yv, double sy, double yy)
{
    if (s->count == s->o.history_size) {
        dla_optim_free(s->n, pair(s, s->s, 0));
        dla_optim_free(s->n, pair(s, s->y, 0));
        s->head = (s->head + 1) % s->o.history_size;
        s->count--;
    }
    int k = (s->head + s->count) % s->o.history_size;
    memcpy(s->s + (size_t)k * (size_t)s->n, sv, sizeof *sv * (size_t)s->n);
    memcpy(s->y + (size_t)k * (size_t)s->n, yv, sizeof *yv * (size_t)s->n);
    s->rho[k] = 1.0 / sy;
    s->gamma = sy / yy;
    s->count++;
}

DLA_API void dla_lbfgs_state_free(dla_lbfgs_state *s)
{
    if (!s || !live(s, "dla_lbfgs_state_free"))
        return;
    if (s->n) {
        drop_pairs(s);
        dla_optim_free(s->n, s->x);
        dla_optim_free(s->n, s->g);
    }
    dla__nn_free(s->x);
    dla__nn_free(s->g);
    dla__nn_free(s->s);
    dla__nn_free(s->y);
    dla__nn_free(s->rho);
    s->x = s->g = s->s = s->y = NULL;
    s->rho = NULL;
    s->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    dla__quarantine(DLA__RING_OBJECTS, s);
}

DLA_API dla_status dla_lbfgs_state_info(const dla_lbfgs_state *s, dla_lbfgs_info *out)
{
    if (!s || !out)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_lbfgs_state_info: argument %s is NULL",
                            s ? "out" : "state");
    if (!live(s, "dla_lbfgs_state_info"))
        return DLA_ERR_INVALID_ARGUMENT;
    *out = (dla_lbfgs_info){.loss = s->loss, .gradients_norm = s->gnorm, .step_norm = s->snorm,
                            .learn_rate = s->rate, .line_search_status = s->status,
                            .history_length = s->count, .iterations = s->iterations,
                            .evaluations = s->evaluations, .options = s->o};
    return DLA_OK;
}

DLA_API dla_tensor *dla_lbfgs_state_gradient(const dla_lbfgs_state *s, int i)
{
    static const char fn[] = "dla_lbfgs_state_gradient";
    if (!s) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument state is NULL", fn);
        return NULL;
    }
    if (!live(s, fn))
        return NULL;
    if (!s->n) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: entry %d: no gradient before the first update",
                     fn, i);
        return NULL;
    }
    if (i < 0 || i >= s->n) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: entry %d is out of range (the state holds %d "
                     "gradients, 0-based)", fn, i, s->n);
        return NULL;
    }
    return s->g[i];
}

/* ------------------------------------------------------------ the update */

/* One update's working set. */
typedef struct work {
    const char *fn;
    int n;
    dla_tensor **params;  /* the caller's list, lent to the loss function */
    dla_tensor **orig;    /* its entries when the update began (the list's references) */
    dla_function loss_fn;
    void *ctx;
    dla_tensor **out;     /* [1 + n] the loss function's outputs */
    dla_tensor **trial;   /* [n] the point being tried, before evaluate takes it */
    int64_t evaluations;
} work;

/* A point the loss function was called at, with +1 references of its
 * own: the point and the gradients there, in the parameters' dims. */
typedef struct point {
    double a, f, dphi;    /* the length along d, the loss, the slope g'd */
    dla_tensor **x, **g;  /* [n] each */
    int set;
} point;

static void point_release(int n, point *p)
{
    if (!p->set)
        return;
    dla_optim_free(n, p->x);
    dla_optim_free(n, p->g);
    p->set = 0;
}

static dla_tensor *as_f64(dla_tensor *t)
{
    return dla_tensor_dtype(t) == DLA_F64 ? t : dla_cast(t, DLA_F64);
}

/* sum_i a[i] . b[i] as a 1 x 1 double on the device, in the open scope.
 * Products and sums in double: in single, a gradient of finite entries
 * around 1e20 gave g'd = -inf (|g|^2 past FLT_MAX), and the update
 * failed saying the gradient was not finite. */
static dla_tensor *dot(int n, dla_tensor *const *a, dla_tensor *const *b)
{
    dla_tensor *acc = NULL;
    for (int i = 0; i < n; i++) {
        dla_tensor *t = dla_reshape(dla_sum(dla_mul(as_f64(a[i]), as_f64(b[i])), 0, NULL), "",
                                    DLA_DIMS(1, 1));
        acc = acc ? dla_add(acc, t) : t;
    }
    return acc;
}

/* max_i max|a[i]| as a 1 x 1 double on the device. */
static dla_tensor *max_abs(int n, dla_tensor *const *a)
{
    dla_tensor *acc = NULL;
    for (int i = 0; i < n; i++) {
        dla_tensor *t = dla_reshape(dla_max(dla_abs(a[i]), 0, NULL), "", DLA_DIMS(1, 1));
        if (dla_tensor_dtype(t) != DLA_F64)
            t = dla_cast(t, DLA_F64);
        acc = acc ? dla_max2(acc, t) : t;
    }
    return acc;
}

/* t times the 1 x 1 double c, in t's dtype. */
static dla_tensor *scaled(dla_tensor *t, dla_tensor *c)
{
    return dla_mul(t, dla_tensor_dtype(t) == DLA_F64 ? c : dla_cast(c, dla_tensor_dtype(t)));
}

/* Reads k 1 x 1 doubles of the device in one transfer. */
static dla_status read_host(const char *fn, int k, dla_tensor *const *t, double *v)
{
    dla_tensor *all = k == 1 ? t[0] : dla_cat(1, k, t);
    dla_status st = dla_tensor_to_host(all, v, sizeof *v * (size_t)k);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla__nn_fail(st, "%s: %s", fn, msg);
    }
    return st;
}

/* The first error among n tensors, with the message set. */
static dla_status first_error(const char *fn, const char *what, int n, dla_tensor *const *t)
{
    for (int i = 0; i < n; i++)
        if (dla_tensor_status(t[i]) != DLA_OK)
            return dla__nn_fail(dla_tensor_status(t[i]), "%s: %s, entry %d: %s", fn, what, i + 1,
                                dla_tensor_error(t[i]));
    return DLA_OK;
}

/* Calls the loss function at x (NULL: params as they are), checks what it
 * gave, and keeps in p the point (x's references taken; params' retained)
 * and the gradients. Reads the loss, and the slope along d when d is
 * given (NAN otherwise). */
static dla_status evaluate(work *w, dla_tensor **x, dla_tensor *const *d, point *p)
{
    const int n = w->n;
    const char *fn = w->fn;
    dla_tensor **out = w->out;
    memset(out, 0, sizeof *out * (size_t)(1 + n));
    dla_scope_begin();
    if (x)
        memcpy(w->params, x, sizeof *x * (size_t)n);
    dla_status st = w->loss_fn(w->ctx, n, w->params, 1 + n, out);
    memcpy(w->params, w->orig, sizeof *w->orig * (size_t)n);
    w->evaluations++;
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla__nn_fail(st, "%s: the loss function returned %s: %s", fn, dla_status_str(st),
                     *msg ? msg : "(no message)");
    } else if (!out[0]) {
        st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the loss function left out[0] (the "
                          "loss) unset", fn);
    } else if (dla_tensor_status(out[0]) != DLA_OK) {
        st = dla__nn_fail(dla_tensor_status(out[0]), "%s: the loss is an error tensor: %s", fn,
                          dla_tensor_error(out[0]));
    } else if (dla_tensor_numel(out[0]) != 1 ||
               (dla_tensor_dtype(out[0]) != DLA_F32 && dla_tensor_dtype(out[0]) != DLA_F64)) {
        char desc[128];
        dla_tensor_describe(out[0], desc, sizeof desc);
        st = dla__nn_fail(dla_tensor_numel(out[0]) != 1 ? DLA_ERR_SHAPE : DLA_ERR_DTYPE,
                          "%s: the loss function returned %s for the loss, not a real scalar",
                          fn, desc);
    }
    for (int i = 0; st == DLA_OK && i < n; i++)
        if (!out[1 + i])
            st = dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the loss function left out[%d] (the "
                              "gradient of entry %d) unset", fn, 1 + i, i + 1);
    if (st == DLA_OK)
        st = dla__optim_check_lists(fn, n, w->orig, out + 1);
    double v[2] = {NAN, NAN};
    if (st == DLA_OK) {
        for (int i = 0; i < n; i++)
            p->g[i] = dla_tensor_retain(dla__optim_like(out[1 + i], w->orig[i]));
        dla_tensor *f = dla_reshape(out[0], "", DLA_DIMS(1, 1));
        f = dla_tensor_dtype(f) == DLA_F64 ? f : dla_cast(f, DLA_F64);
        st = first_error(fn, "the gradient", n, p->g);
        if (st == DLA_OK)
            st = read_host(fn, d ? 2 : 1, (dla_tensor *[]){f, d ? dot(n, p->g, d) : NULL}, v);
        if (st != DLA_OK)
            dla_optim_free(n, p->g);
    }
    dla_scope_end();
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < n; i++)
        p->x[i] = x ? x[i] : dla_tensor_retain(w->orig[i]);
    p->f = v[0];
    p->dphi = v[1];
    p->set = 1;
    return DLA_OK;
}

/* d = -H g by the two-loop recursion over the k newest pairs (k = 0: H is
 * the initial factor times the identity); d gets +1 references. alpha has
 * room for k. */
static dla_status direction(work *w, const dla_lbfgs_state *s, int k, dla_tensor *const *g,
                            dla_tensor **d, dla_tensor **alpha)
{
    const int n = w->n;
    dla_tensor **q = d; /* built in place, then negated */
    int first = s->count - k;
    for (int i = 0; i < n; i++)
        q[i] = dla_tensor_retain(g[i]);
    /* Each step in a scope of its own, so that one step's lists at a time
     * are alive, not k of them. */
    for (int j = s->count - 1; j >= first; j--) {
        dla_tensor **sj = pair(s, s->s, j), **yj = pair(s, s->y, j);
        dla_scope_begin();
        dla_tensor *a = dla_affine(dot(n, sj, q), pair_rho(s, j), 0);
        alpha[j - first] = dla_tensor_retain(a);
        for (int i = 0; i < n; i++) {
            dla_tensor *next = dla_tensor_retain(dla_sub(q[i], scaled(yj[i], a)));
            dla_tensor_release(q[i]);
            q[i] = next;
        }
        dla_scope_end();
    }
    double gamma = k ? s->gamma : s->o.initial_inverse_hessian_factor;
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *next = dla_tensor_retain(dla_affine(q[i], gamma, 0));
        dla_tensor_release(q[i]);
        q[i] = next;
    }
    dla_scope_end();
    for (int j = first; j < s->count; j++) {
        dla_tensor **sj = pair(s, s->s, j), **yj = pair(s, s->y, j);
        dla_scope_begin();
        dla_tensor *b = dla_affine(dot(n, yj, q), pair_rho(s, j), 0);
        dla_tensor *c = dla_sub(alpha[j - first], b);
        for (int i = 0; i < n; i++) {
            dla_tensor *next = dla_tensor_retain(dla_add(q[i], scaled(sj[i], c)));
            dla_tensor_release(q[i]);
            q[i] = next;
        }
        dla_scope_end();
    }
    for (int j = 0; j < k; j++) {
        dla_tensor_release(alpha[j]);
        alpha[j] = NULL;
    }
    dla_scope_begin();
    for (int i = 0; i < n; i++) {
        dla_tensor *next = dla_tensor_retain(dla_neg(q[i]));
        dla_tensor_release(q[i]);
        d[i] = next;
    }
    dla_scope_end();
    dla_status st = first_error(w->fn, "the direction", n, d);
    if (st != DLA_OK)
        dla_optim_free(n, d);
    return st;
}

/* Evaluates params + a d into cur (its previous point released), and keeps
 * in best the lowest loss below f0 seen so far. */
static dla_status try_length(work *w, dla_tensor *const *d, double a, double f0, point *cur,
                             point *best)
{
    const int n = w->n;
    dla_tensor **x = w->trial;
    point_release(n, cur);
    dla_scope_begin();
    for (int i = 0; i < n; i++)
        x[i] = dla_tensor_retain(dla_add(w->orig[i], dla_affine(d[i], a, 0)));
    dla_scope_end();
    dla_status st = first_error(w->fn, "the point tried", n, x);
    if (st == DLA_OK)
        st = evaluate(w, x, d, cur); /* takes x's references */
    if (st != DLA_OK) {
        dla_optim_free(n, x);
        return st;
    }
    memset(x, 0, sizeof *x * (size_t)n);
    cur->a = a;
    if (isfinite(cur->f) && isfinite(cur->dphi) && cur->f < f0 && (!best->set || cur->f < best->f)) {
        point_release(n, best);
        for (int i = 0; i < n; i++) {
            best->x[i] = dla_tensor_retain(cur->x[i]);
            best->g[i] = dla_tensor_retain(cur->g[i]);
        }
        best->a = cur->a, best->f = cur->f, best->dphi = cur->dphi;
        best->set = 1;
    }
    return DLA_OK;
}

/* A point of the line search, for bracketing. */
typedef struct end {
    double a, f, dphi;
} end;

static int curvature_met(int method, double gd, double dphi)
{
    if (!isfinite(dphi))
        return 0;
    return method == LS_STRONG ? fabs(dphi) <= -DLA_LBFGS_C2 * gd : dphi >= DLA_LBFGS_C2 * gd;
}

/* The minimizer of the cubic that matches the loss and slope at both ends,
 * kept within the middle 80% of the bracket (so that it shrinks); the
 * midpoint when an end is not finite or the cubic has no minimizer. */
static double cubic_step(end lo, end hi)
{
    double l = fmin(lo.a, hi.a), h = fmax(lo.a, hi.a), w = h - l, mid = 0.5 * (lo.a + hi.a);
    if (!isfinite(lo.f) || !isfinite(hi.f) || !isfinite(lo.dphi) || !isfinite(hi.dphi))
        return mid;
    double d1 = lo.dphi + hi.dphi - 3 * (lo.f - hi.f) / (lo.a - hi.a);
    double disc = d1 * d1 - lo.dphi * hi.dphi;
    if (!(disc >= 0))
        return mid;
    double d2 = copysign(sqrt(disc), hi.a - lo.a);
    double t = hi.a - (hi.a - lo.a) * (hi.dphi + d2 - d1) / (hi.dphi - lo.dphi + 2 * d2);
    if (!isfinite(t))
        return mid;
    return fmin(fmax(t, l + 0.1 * w), h - 0.1 * w);
}

/* The line search from length a0: *accepted when a length met the
 * method's conditions (cur then holds it). */
static dla_status line_search(work *w, const dla_lbfgs_state *s, dla_tensor *const *d, double f0,
                              double gd, double a0, point *cur, point *best, int *accepted)
{
    const double c1 = DLA_LBFGS_C1;
    const int max = s->o.max_num_line_search_iterations;
    end prev = {0, f0, gd}, lo = prev, hi = prev;
    int bracketed = 0;
    double a = a0;
    *accepted = 0;
    for (int it = 0; it < max; it++) {
        dla_status st = try_length(w, d, a, f0, cur, best);
        if (st != DLA_OK)
            return st;
        end t = {a, cur->f, cur->dphi};
        /* A NaN or infinite loss or slope is a length too long. */
        int decrease = isfinite(t.f) && isfinite(t.dphi) && t.f <= f0 + c1 * a * gd;
        if (s->method == LS_BACKTRACKING) {
            if (decrease) {
                *accepted = 1;
                return DLA_OK;
            }
            a *= 0.5;
            continue;
        }
        if (!bracketed) {
            /* Doubling until the bracket holds acceptable lengths. */
            if (!decrease || (it > 0 && t.f >= prev.f)) {
                lo = prev, hi = t, bracketed = 1;
            } else if (curvature_met(s->method, gd, t.dphi)) {
                *accepted = 1;
                return DLA_OK;
            } else if (t.dphi >= 0) { /* strong Wolfe only: past the minimum */
                lo = t, hi = prev, bracketed = 1;
            } else {
                prev = t;
                a *= 2;
                continue;
            }
        } else {
            /* lo: the lowest loss with sufficient decrease so far; hi: the
             * other end, past which lies no better length. */
            if (!decrease || t.f >= lo.f) {
                hi = t;
            } else {
                if (curvature_met(s->method, gd, t.dphi)) {
                    *accepted = 1;
                    return DLA_OK;
                }
                if (t.dphi * (hi.a - lo.a) >= 0)
                    hi = lo;
                lo = t;
            }
        }
        if (fabs(hi.a - lo.a) <= 1e-15 * fmax(lo.a, hi.a))
            break; /* nothing left between them to try */
        a = cubic_step(lo, hi);
    }
    return DLA_OK;
}

/* What an update holds besides the state, released however it ends. */
static void work_release(int n, point *start, point *cur, point *best, dla_tensor **d,
                         dla_tensor **block, dla_tensor **alpha)
{
    point_release(n, start);
    point_release(n, cur);
    point_release(n, best);
    dla_optim_free(n, d);
    dla__nn_free(block);
    dla__nn_free(alpha);
}

/* The state's lists, made by the first update (n entries, history_size
 * pairs), before anything is changed. */
typedef struct lists {
    dla_tensor **x, **g, **s, **y;
    double *rho;
} lists;

static void lists_free(lists *l)
{
    dla__nn_free(l->x);
    dla__nn_free(l->g);
    dla__nn_free(l->s);
    dla__nn_free(l->y);
    dla__nn_free(l->rho);
}

/* The arguments, checked before anything is called. */
static dla_status check_args(const char *fn, int n, dla_tensor **params, dla_function loss_fn,
                             const dla_lbfgs_state *s)
{
    if (!s)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument state is NULL", fn);
    if (!live(s, fn))
        return DLA_ERR_INVALID_ARGUMENT;
    if (!loss_fn)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument loss_fn is NULL", fn);
    if (n < 1 || !params)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d entries%s: L-BFGS needs a list of "
                            "at least one parameter", fn, n, params ? "" : " with a NULL list");
    for (int i = 0; i < n; i++) {
        const dla_tensor *p = params[i];
        if (!p || dla_tensor_status(p) != DLA_OK)
            return dla__nn_fail(p ? dla_tensor_status(p) : DLA_ERR_INVALID_ARGUMENT,
                                "%s: entry %d: the parameter is %s", fn, i + 1,
                                p ? dla_tensor_error(p) : "NULL");
        if (dla_tensor_dtype(p) != DLA_F32 && dla_tensor_dtype(p) != DLA_F64)
            return dla__nn_fail(DLA_ERR_DTYPE, "%s: entry %d: the parameter is %s; L-BFGS "
                                "updates single or double", fn, i + 1,
                                dla_dtype_name(dla_tensor_dtype(p)));
    }
    if (s->n && s->n != n)
        return dla__nn_fail(DLA_ERR_SHAPE, "%s: the state's pairs were made with %d entr%s, "
                            "params has %d (use one state per parameter list)", fn, s->n,
                            s->n == 1 ? "y" : "ies", n);
    for (int i = 0; i < s->n; i++)
        if (!dla__same_dims(params[i], s->x[i]) ||
            dla_tensor_dtype(params[i]) != dla_tensor_dtype(s->x[i]))
            return dla__optim_mismatch(fn, i + 1, params[i], "L-BFGS state", s->x[i]);
    return DLA_OK;
}

DLA_API dla_status dla_lbfgsupdate(int n, dla_tensor **params, dla_function loss_fn, void *ctx,
                                   dla_lbfgs_state *s)
{
    static const char fn[] = "dla_lbfgsupdate";
    dla_status st = check_args(fn, n, params, loss_fn, s);
    if (st != DLA_OK)
        return st;
    const int m = s->o.history_size;
    /* One block for every list of n: orig, out (1 + n), d, the start's,
     * the current and the best point's x and g, the new pair's s and y;
     * and the recursion's coefficients. */
    dla_tensor **block = dla__nn_calloc((size_t)n * 12 + 1, sizeof *block);
    dla_tensor **alpha = dla__nn_calloc((size_t)(s->count ? s->count : 1), sizeof *alpha);
    lists fresh = {0};
    const int cap0 = m < 4 ? m : 4;
    if (!s->n) {
        fresh.x = dla__nn_calloc((size_t)n, sizeof *fresh.x);
        fresh.g = dla__nn_calloc((size_t)n, sizeof *fresh.g);
        fresh.s = dla__nn_calloc((size_t)cap0 * (size_t)n, sizeof *fresh.s);
        fresh.y = dla__nn_calloc((size_t)cap0 * (size_t)n, sizeof *fresh.y);
        fresh.rho = dla__nn_calloc((size_t)cap0, sizeof *fresh.rho);
    }
    if (!block || !alpha ||
        (!s->n && (!fresh.x || !fresh.g || !fresh.s || !fresh.y || !fresh.rho))) {
        dla__nn_free(block);
        dla__nn_free(alpha);
        lists_free(&fresh);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    /* block: orig | out (1 + n) | d | start x, g | cur x, g | best x, g |
     * trial | s | y */
    dla_tensor **d = block + 2 * (size_t)n + 1;
#define LIST(k) (d + (size_t)(k) * (size_t)n)
    work w = {.fn = fn, .n = n, .params = params, .orig = block, .loss_fn = loss_fn, .ctx = ctx,
              .out = block + n, .trial = LIST(7)};
    memcpy(w.orig, params, sizeof *params * (size_t)n);
    dla_tensor **sv = LIST(8), **yv = LIST(9);
    point start = {.x = LIST(1), .g = LIST(2)}, cur = {.x = LIST(3), .g = LIST(4)},
          best = {.x = LIST(5), .g = LIST(6)};
#undef LIST

    /* 1. The loss and gradients here: the state's, when params are the
     * point the last update returned (tensors never change in place). */
    int reuse = s->n != 0;
    for (int i = 0; reuse && i < n; i++)
        reuse = params[i] == s->x[i];
    double f0 = s->loss;
    dla_tensor **g0 = s->g;
    if (!reuse) {
        st = evaluate(&w, NULL, NULL, &start);
        f0 = start.f, g0 = start.g;
        if (st == DLA_OK && !isfinite(f0))
            st = dla__nn_fail(DLA_ERR_STATE, "%s: the loss at params is %g: L-BFGS needs a finite "
                              "loss to search from", fn, f0);
    }

    /* 2. The direction; the steepest descent, and no pairs, when it does
     * not go down. While no pair is stored, the first step is bounded
     * (InitialStepSize), so [g'd, max|d|, max|params|]. */
    int k = s->count, reset = 0;
    double v[4] = {NAN, NAN, NAN, NAN};
    for (int pass = 0; st == DLA_OK && pass < 2; pass++) {
        st = direction(&w, s, k, g0, d, alpha);
        if (st != DLA_OK)
            break;
        dla_scope_begin();
        dla_tensor *t[3] = {dot(n, g0, d), k ? NULL : max_abs(n, d), k ? NULL : max_abs(n, w.orig)};
        st = read_host(fn, k ? 1 : 3, t, v);
        dla_scope_end();
        if (st != DLA_OK || v[0] < 0 || !k)
            break;
        dla_optim_free(n, d);
        k = 0, reset = 1;
    }
    const double gd = v[0];
    if (st == DLA_OK && !isfinite(gd))
        st = dla__nn_fail(DLA_ERR_STATE, "%s: the gradient at params is not finite (g'd is %g): "
                          "there is no direction to search", fn, gd);

    /* 3. The line search, unless the gradient is zero (nowhere to go). */
    int accepted = 0, stationary = st == DLA_OK && gd == 0;
    if (st == DLA_OK && !stationary) {
        double a0 = 1, bound = s->o.initial_step_size ? s->o.initial_step_size : 0.5 * v[2] + 0.1;
        if (!k && v[1] > bound)
            a0 = bound / v[1];
        st = line_search(&w, s, d, f0, gd, a0, &cur, &best, &accepted);
    }
    point *res = accepted ? &cur : best.set ? &best : NULL;

    /* 4. The pair s = a d, y = g(new) - g and the norms: [s'y, y'y, |g|^2,
     * |s|^2] (only |g|^2 when no step is taken). */
    double r[4] = {NAN, NAN, NAN, 0};
    if (st == DLA_OK) {
        dla_scope_begin();
        if (res) {
            for (int i = 0; i < n; i++) {
                sv[i] = dla_tensor_retain(dla_affine(d[i], res->a, 0));
                yv[i] = dla_tensor_retain(dla_sub(res->g[i], g0[i]));
            }
            st = first_error(fn, "the step", n, sv);
            if (st == DLA_OK)
                st = first_error(fn, "the gradient change", n, yv);
            if (st == DLA_OK)
                st = read_host(fn, 4, (dla_tensor *[]){dot(n, sv, yv), dot(n, yv, yv),
                                                       dot(n, res->g, res->g), dot(n, sv, sv)}, r);
        } else {
            st = read_host(fn, 1, (dla_tensor *[]){dot(n, g0, g0)}, r + 2);
        }
        dla_scope_end();
    }
    if (st != DLA_OK) {
        if (res) {
            dla_optim_free(n, sv);
            dla_optim_free(n, yv);
        }
        work_release(n, &start, &cur, &best, d, block, alpha);
        lists_free(&fresh);
        return st;
    }

    /* A failed search that found no lower loss leaves params, and drops
     * the pairs that led it there. */
    const int drop = reset || (!res && !stationary);
    const int store = res && r[0] > 0 && r[1] > 0 && isfinite(r[0]) && isfinite(r[1]);
    /* Room for the new pair, made here, where a failure still changes
     * nothing (a larger block holding the same pairs is the same state). */
    if (store && s->n && !drop && s->count == s->cap && s->cap < m &&
        grow_pairs(s, s->cap > m / 2 ? m : 2 * s->cap) != DLA_OK) {
        dla_optim_free(n, sv);
        dla_optim_free(n, yv);
        work_release(n, &start, &cur, &best, d, block, alpha);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory (the history's pairs)", fn);
    }

    /* Nothing below can fail. */
    if (!s->n) {
        s->n = n;
        s->x = fresh.x, s->g = fresh.g, s->s = fresh.s, s->y = fresh.y, s->rho = fresh.rho;
        s->cap = cap0;
    }
    if (drop)
        drop_pairs(s);
    if (store) {
        push_pair(s, sv, yv, r[0], r[1]);
    } else if (res) {
        dla_optim_free(n, sv); /* curvature condition failed: not stored */
        dla_optim_free(n, yv);
    }
    dla_tensor *const *xn = res ? res->x : w.orig, *const *gn = res ? res->g : g0;
    for (int i = 0; i < n; i++) {
        dla_tensor *x = dla_tensor_retain(xn[i]), *g = dla_tensor_retain(gn[i]);
        dla_tensor_release(s->x[i]);
        dla_tensor_release(s->g[i]);
        s->x[i] = x, s->g[i] = g;
        if (res) {
            dla_tensor_release(params[i]);
            params[i] = dla_tensor_retain(xn[i]);
        }
    }
    s->loss = res ? res->f : f0;
    s->gnorm = sqrt(r[2]);
    s->snorm = sqrt(r[3]);
    s->rate = res ? res->a : 0;
    s->status = accepted || stationary ? "completed" : "failed";
    s->iterations++;
    s->evaluations += w.evaluations;
    work_release(n, &start, &cur, &best, d, block, alpha);
    return DLA_OK;
}

/*
 * test_lbfgs.c - MATLAB's lbfgsupdate and lbfgsState (dla_lbfgsupdate,
 * dla_lbfgs_state) and trainnet's solver "lbfgs": Rosenbrock's valley
 * with every line search in double and single, quadratics (the history's
 * curvature is exact on an isotropic one), the line searches' own
 * behaviour on one-dimensional losses worked out by hand (the bounded
 * first step, weak against strong Wolfe, a pair of negative curvature not
 * stored, a failed search), the state's read-only properties, a history
 * size far above the pairs stored (only those allocated), every error
 * (nothing changed after one), a small network fitted better than by 200
 * Adam steps, and trainnet with "lbfgs": its options, its table and its
 * stop reasons.
 */
#define _GNU_SOURCE /* open_memstream, for sink.h */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "sink.h"

#include <dlaccel.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ fixtures */

/* A 1 x 1 tensor of dtype dt, +1. */
static dla_tensor *scalar(double v, dla_dtype dt)
{
    dla_scope_begin();
    dla_tensor *t = dla_tensor_retain(dla_cast(dla_tensor_from_host(&v, DLA_F64, "", DLA_DIMS(1, 1)), dt));
    dla_scope_end();
    return t;
}

static double item(const dla_tensor *t, int64_t i) { return dla_tensor_item(t, i); }

static dla_lbfgs_info info_of(const dla_lbfgs_state *s)
{
    dla_lbfgs_info in;
    assert_int_equal(dla_lbfgs_state_info(s, &in), DLA_OK);
    return in;
}

/* Calls of a loss function and where the first call of the latest update
 * was made (its first parameter's first two elements, when it has two). */
typedef struct counter {
    int calls;
    double first_x, first_y;
    int mark; /* set to 1 before an update; the next call records first_x */
} counter;

static void count_call(void *ctx, dla_tensor *const *p)
{
    counter *c = ctx;
    if (!c)
        return;
    c->calls++;
    if (c->mark) {
        c->first_x = item(p[0], 0);
        c->first_y = dla_tensor_numel(p[0]) > 1 ? item(p[0], 1) : NAN;
        c->mark = 0;
    }
}

/* Rosenbrock's function (1 - x)^2 + 100 (y - x^2)^2 of in[0] = x and
 * in[1] = y, each 1 x 1, or of one 2 x 1 in[0] = [x; y] when nin is 1. */
static dla_status rosenbrock(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx;
    (void)nout;
    dla_tensor *x = nin == 2 ? in[0] : dla_slice(in[0], 1, 0, 1, 1);
    dla_tensor *y = nin == 2 ? in[1] : dla_slice(in[0], 1, 1, 1, 2);
    dla_tensor *b = dla_sub(y, dla_square(x));
    out[0] = dla_add(dla_square(dla_affine(x, -1, 1)), dla_affine(dla_square(b), 100, 0));
    return dla_gradient(out[0], nin, in, out + 1);
}

static dla_status rosenbrock_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    count_call(ctx, p);
    return dla_feval(rosenbrock, ctx, n, p, nout, out);
}

/* f = sum over entries of c/2 |p - 1|^2 (c = *ctx, or 1): the isotropic
 * quadratic, and with one 1 x 1 entry x^2/2 shifted. */
typedef struct iso {
    double c, shift;
    counter count;
} iso;

static dla_status isotropic(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nout;
    const iso *q = ctx;
    dla_tensor *sum = NULL;
    for (int i = 0; i < nin; i++) {
        dla_tensor *t = dla_sum(dla_square(dla_affine(in[i], 1, -q->shift)), 0, NULL);
        t = dla_reshape(t, "", DLA_DIMS(1, 1));
        sum = sum ? dla_add(sum, t) : t;
    }
    out[0] = dla_affine(sum, q->c / 2, 0);
    return dla_gradient(out[0], nin, in, out + 1);
}

static dla_status isotropic_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    count_call(&((iso *)ctx)->count, p);
    return dla_feval(isotropic, ctx, n, p, nout, out);
}

/* f = x^4/4 - x^2/2: concave around 0, minima at -1 and 1. */
static dla_status double_well(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx;
    (void)nin;
    (void)nout;
    dla_tensor *x = in[0];
    out[0] = dla_sub(dla_affine(dla_pows(x, 4), 0.25, 0), dla_affine(dla_square(x), 0.5, 0));
    return dla_gradient(out[0], 1, in, out + 1);
}

static dla_status double_well_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    return dla_feval(double_well, ctx, n, p, nout, out);
}

/* Runs up to max updates, until the gradient norm is below tol or the
 * line search fails; returns the updates made. */
static int minimize(int n, dla_tensor **p, dla_function fn, void *ctx, dla_lbfgs_state *s, int max,
                    double tol)
{
    for (int it = 1; it <= max; it++) {
        if (dla_lbfgsupdate(n, p, fn, ctx, s) != DLA_OK)
            fail_msg("update %d: %s", it, dla_last_error());
        dla_lbfgs_info in = info_of(s);
        if (in.gradients_norm < tol || !strcmp(in.line_search_status, "failed"))
            return it;
    }
    return max;
}

static const char *const methods[] = {"weak-wolfe", "strong-wolfe", "backtracking"};

/* ---------------------------------------------------------- convergence */

static void rosenbrock_reaches_one_one_with_every_line_search(void **state)
{
    (void)state;
    for (int m = 0; m < 3; m++) {
        dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
            .line_search_method = methods[m]});
        assert_non_null(s);
        int its = minimize(2, p, rosenbrock_loss, NULL, s, 100, 1e-9);
        dla_lbfgs_info in = info_of(s);
        if (its >= 100 || !(fabs(item(p[0], 0) - 1) < 1e-6 && fabs(item(p[1], 0) - 1) < 1e-6))
            fail_msg("%s: (%.9f, %.9f) after %d iterations, line search %s", methods[m],
                     item(p[0], 0), item(p[1], 0), its, in.line_search_status);
        assert_string_equal(in.line_search_status, "completed");
        assert_true(in.loss < 1e-12);
        assert_int_equal(in.iterations, its);
        assert_int_equal(in.history_length, 10);
        assert_int_equal(dla_tensor_dtype(p[0]), DLA_F64);
        dla_lbfgs_state_free(s);
        dla_optim_free(2, p);
    }
}

/* Single precision, the two coordinates as one 2 x 1 tensor: the loss is
 * exact to about 1e-7 of its size, so the point to about 1e-3. */
static void rosenbrock_in_single_precision_as_one_tensor(void **state)
{
    (void)state;
    for (int m = 0; m < 3; m++) {
        dla_scope_begin();
        dla_tensor *p[1] = {dla_tensor_retain(dla_tensor_from_host((float[]){-1.2f, 1.0f}, DLA_F32,
                                                                   "", DLA_DIMS(2, 1)))};
        dla_scope_end();
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
            .line_search_method = methods[m]});
        int its = minimize(1, p, rosenbrock_loss, NULL, s, 100, 1e-5);
        if (!(fabs(item(p[0], 0) - 1) < 1e-3 && fabs(item(p[0], 1) - 1) < 1e-3))
            fail_msg("%s: (%.7f, %.7f) after %d iterations", methods[m], item(p[0], 0),
                     item(p[0], 1), its);
        assert_true(its < 100);
        assert_int_equal(dla_tensor_dtype(p[0]), DLA_F32);
        dla_lbfgs_state_free(s);
        dla_optim_free(1, p);
    }
}

/* f = c/2 |p - 1|^2 over two entries: every pair has y = c s, so s'y /
 * y'y is 1/c and the inverse Hessian is exact once one pair is stored:
 * the second step lands on the minimum. */
static void an_isotropic_quadratic_is_solved_by_the_second_step(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *p[2] = {dla_tensor_retain(dla_zeros(DLA_F64, "", DLA_DIMS(3, 1))),
                        dla_tensor_retain(dla_tensor_from_host((double[]){4, -2}, DLA_F64, "",
                                                               DLA_DIMS(2, 1)))};
    dla_scope_end();
    iso q = {.c = 7, .shift = 1};
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    assert_int_equal(dla_lbfgsupdate(2, p, isotropic_loss, &q, s), DLA_OK);
    dla_lbfgs_info in = info_of(s);
    assert_int_equal(in.history_length, 1);
    assert_true(in.loss > 1); /* the bounded first step is not there yet */
    assert_int_equal(dla_lbfgsupdate(2, p, isotropic_loss, &q, s), DLA_OK);
    in = info_of(s);
    assert_true(in.learn_rate == 1);
    for (int i = 0; i < 3; i++)
        assert_true(fabs(item(p[0], i) - 1) < 1e-12);
    for (int i = 0; i < 2; i++)
        assert_true(fabs(item(p[1], i) - 1) < 1e-12);
    assert_true(in.loss < 1e-24);
    dla_lbfgs_state_free(s);
    dla_optim_free(2, p);
}

/* f = x'Ax/2 - b'x in four dims (condition about 12): the history is what
 * makes it fast (14 iterations to a gradient of 1e-6 with 4 pairs, 30
 * with one). */
typedef struct quad {
    dla_tensor *a, *b;
} quad;

static dla_status quadratic(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    (void)nout;
    const quad *q = ctx;
    dla_tensor *x = in[0];
    out[0] = dla_sub(dla_affine(dla_sum(dla_mul(x, dla_mtimes(q->a, x)), 0, NULL), 0.5, 0),
                     dla_sum(dla_mul(q->b, x), 0, NULL));
    return dla_gradient(out[0], 1, in, out + 1);
}

static dla_status quadratic_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    return dla_feval(quadratic, ctx, n, p, nout, out);
}

typedef struct counted_quad {
    quad q;
    counter count;
} counted_quad;

static dla_status counted_quadratic_loss(void *ctx, int n, dla_tensor *const *p, int nout,
                                         dla_tensor **out)
{
    counted_quad *c = ctx;
    count_call(&c->count, p);
    return dla_feval(quadratic, &c->q, n, p, nout, out);
}

/* f = (x^2 + 4 y^2)/2 from (1, 1), the whole first step allowed: -g =
 * -(1, 4) overshoots at length 1, and the cubic through both ends (exact
 * on a parabola) gives the line's minimum, a = 17/65. The second update
 * tries length 1 along -H g first, H the BFGS matrix of that one pair,
 * (I - rho s y') gamma (I - rho y s') + rho s s', gamma = s'y / y'y:
 * written out here, not by two loops, its first call must be there. */
static void the_direction_is_the_bfgs_matrix_of_the_pairs(void **state)
{
    (void)state;
    dla_scope_begin();
    counted_quad c = {.q = {dla_tensor_from_host((double[]){1, 0, 0, 4}, DLA_F64, "", DLA_DIMS(2, 2)),
                            dla_zeros(DLA_F64, "", DLA_DIMS(2, 1))},
                      .count = {0}};
    dla_tensor *p[1] = {dla_tensor_retain(dla_tensor_from_host((double[]){1, 1}, DLA_F64, "",
                                                               DLA_DIMS(2, 1)))};
    dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){.initial_step_size = INFINITY});
    assert_int_equal(dla_lbfgsupdate(1, p, counted_quadratic_loss, &c, s), DLA_OK);
    const double a = 17.0 / 65, x1[2] = {1 - a, 1 - 4 * a};
    assert_true(fabs(info_of(s).learn_rate - a) < 1e-12);
    assert_true(fabs(item(p[0], 0) - x1[0]) < 1e-12 && fabs(item(p[0], 1) - x1[1]) < 1e-12);
    const double sv[2] = {-a, -4 * a}, yv[2] = {sv[0], 4 * sv[1]}, g1[2] = {x1[0], 4 * x1[1]};
    const double sy = sv[0] * yv[0] + sv[1] * yv[1], yy = yv[0] * yv[0] + yv[1] * yv[1];
    const double rho = 1 / sy, gamma = sy / yy;
    double v[2][2], h[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            v[i][j] = (i == j) - rho * yv[i] * sv[j]; /* V = I - rho y s' */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            h[i][j] = gamma * (v[0][i] * v[0][j] + v[1][i] * v[1][j]) + rho * sv[i] * sv[j];
    const double want[2] = {x1[0] - (h[0][0] * g1[0] + h[0][1] * g1[1]),
                            x1[1] - (h[1][0] * g1[0] + h[1][1] * g1[1])};
    c.count.mark = 1;
    assert_int_equal(dla_lbfgsupdate(1, p, counted_quadratic_loss, &c, s), DLA_OK);
    if (!(fabs(c.count.first_x - want[0]) < 1e-12 && fabs(c.count.first_y - want[1]) < 1e-12))
        fail_msg("the second update tried (%.15g, %.15g), want (%.15g, %.15g)", c.count.first_x,
                 c.count.first_y, want[0], want[1]);
    assert_int_equal(info_of(s).history_length, 2);
    dla_lbfgs_state_free(s);
    dla_optim_free(1, p);
    dla_scope_end();
}

static void a_quadratic_converges_in_few_iterations_with_its_history(void **state)
{
    (void)state;
    const double a[16] = {10, 1, 0, 0, 1, 5, 1, 0, 0, 1, 2, 0.5, 0, 0, 0.5, 1};
    const double b[4] = {1, -2, 3, 0.5};
    /* x* = A \ b, by hand (A is symmetric positive definite). */
    double m[4][5];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++)
            m[i][j] = a[4 * j + i];
        m[i][4] = b[i];
    }
    for (int k = 0; k < 4; k++)
        for (int i = k + 1; i < 4; i++)
            for (int j = 4; j >= k; j--)
                m[i][j] -= m[i][k] / m[k][k] * m[k][j];
    double want[4];
    for (int i = 3; i >= 0; i--) {
        want[i] = m[i][4];
        for (int j = i + 1; j < 4; j++)
            want[i] -= m[i][j] * want[j];
        want[i] /= m[i][i];
    }
    dla_scope_begin();
    quad q = {dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(4, 4)),
              dla_tensor_from_host(b, DLA_F64, "", DLA_DIMS(4, 1))};
    int its[2];
    for (int h = 0; h < 2; h++) {
        dla_tensor *p[1] = {dla_tensor_retain(dla_zeros(DLA_F64, "", DLA_DIMS(4, 1)))};
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){.history_size = h ? 1 : 4});
        its[h] = minimize(1, p, quadratic_loss, &q, s, 100, 1e-6);
        for (int i = 0; i < 4; i++)
            if (!(fabs(item(p[0], i) - want[i]) < 1e-6))
                fail_msg("history %d: x(%d) = %.9f, want %.9f", h ? 1 : 4, i, item(p[0], i), want[i]);
        dla_lbfgs_state_free(s);
        dla_optim_free(1, p);
    }
    dla_scope_end();
    if (!(its[0] <= 16 && its[1] >= its[0] + 10))
        fail_msg("%d iterations with a history of 4, %d with 1", its[0], its[1]);
}

/* ---------------------------------------------------- the line searches */

/* f = x^2/2 from x = 1: d = -g = -1 while no pair is stored. "auto" bounds
 * the first step to 0.5 * max|x| + 0.1 = 0.6; a number bounds it to
 * itself; INFINITY takes the whole step (to the minimum). */
static void the_first_step_is_bounded_by_initial_step_size(void **state)
{
    (void)state;
    const struct {
        double size, x1, rate;
    } c[] = {{0, 0.4, 0.6}, {0.25, 0.75, 0.25}, {INFINITY, 0, 1}, {3, 0, 1}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        dla_tensor *p[1] = {scalar(1, DLA_F64)};
        iso q = {.c = 1};
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
            .initial_step_size = c[k].size});
        assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
        dla_lbfgs_info in = info_of(s);
        if (!(fabs(item(p[0], 0) - c[k].x1) < 1e-15 && fabs(in.learn_rate - c[k].rate) < 1e-15))
            fail_msg("InitialStepSize %g: x = %.17g at rate %.17g, want %g at %g", c[k].size,
                     item(p[0], 0), in.learn_rate, c[k].x1, c[k].rate);
        assert_true(fabs(in.step_norm - (1 - c[k].x1)) < 1e-15);
        assert_int_equal(in.evaluations, 2); /* the start, and the first length */
        assert_string_equal(in.line_search_status, "completed");
        dla_lbfgs_state_free(s);
        dla_optim_free(1, p);
    }
}

/* f = x^2/2 from x = 1 with InitialInverseHessianFactor 1.95: the first
 * length overshoots to x = -0.95, where the loss went down enough and the
 * slope g'd = 1.8525 is above -c2 g'd = 1.755. Weak Wolfe (and
 * backtracking) take it; strong Wolfe does not, and its cubic through
 * both ends finds the minimum of the parabola itself. */
static void weak_and_strong_wolfe_differ_on_an_overshoot(void **state)
{
    (void)state;
    for (int m = 0; m < 3; m++) {
        dla_tensor *p[1] = {scalar(1, DLA_F64)};
        iso q = {.c = 1};
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
            .initial_inverse_hessian_factor = 1.95, .initial_step_size = INFINITY,
            .line_search_method = methods[m]});
        assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
        dla_lbfgs_info in = info_of(s);
        double x = item(p[0], 0);
        if (m == 1) {
            if (!(fabs(x) < 1e-12) || in.evaluations != 3)
                fail_msg("strong-wolfe: x = %g after %lld evaluations", x, (long long)in.evaluations);
            assert_true(fabs(in.learn_rate - 1 / 1.95) < 1e-12);
        } else {
            if (!(fabs(x + 0.95) < 1e-15) || in.evaluations != 2)
                fail_msg("%s: x = %g after %lld evaluations", methods[m], x, (long long)in.evaluations);
        }
        assert_string_equal(in.line_search_status, "completed");
        dla_lbfgs_state_free(s);
        dla_optim_free(1, p);
    }
}

/* The double well from x = 0.1: backtracking takes the first length, to
 * x = 0.199, where the slope fell further (concave): s'y < 0, so the pair
 * is not stored. Weak Wolfe's curvature condition sends it on past the
 * concave part, and its pair is stored. */
static void a_pair_that_fails_the_curvature_condition_is_not_stored(void **state)
{
    (void)state;
    const double x0 = 0.1, f0 = pow(x0, 4) / 4 - x0 * x0 / 2;
    for (int m = 0; m < 3; m += 2) {
        dla_tensor *p[1] = {scalar(x0, DLA_F64)};
        dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
            .line_search_method = methods[m]});
        assert_int_equal(dla_lbfgsupdate(1, p, double_well_loss, NULL, s), DLA_OK);
        dla_lbfgs_info in = info_of(s);
        double x = item(p[0], 0);
        assert_true(in.loss < f0);
        assert_true(fabs(in.loss - (pow(x, 4) / 4 - x * x / 2)) < 1e-15);
        if (m == 2) { /* backtracking */
            assert_true(fabs(x - (x0 + (x0 - pow(x0, 3)))) < 1e-15);
            assert_int_equal(in.history_length, 0);
        } else {
            assert_true(x > 0.5);
            assert_int_equal(in.history_length, 1);
        }
        /* Without pairs it goes on from the factor: still downhill. */
        assert_int_equal(dla_lbfgsupdate(1, p, double_well_loss, NULL, s), DLA_OK);
        assert_true(info_of(s).loss < in.loss);
        dla_lbfgs_state_free(s);
        dla_optim_free(1, p);
    }
}

/* MaxNumLineSearchIterations 1 and a first length that breaks the
 * conditions: "failed". x^2/2 with factor 3 overshoots to x = -2, a
 * higher loss: params stay, the pairs go. With factor 1.95 and strong
 * Wolfe, x = -0.95 is lower but not strong-Wolfe: params move there. */
static void a_failed_line_search_keeps_params_or_takes_the_lowest_loss_tried(void **state)
{
    (void)state;
    iso q = {.c = 1};
    dla_tensor *p[1] = {scalar(1, DLA_F64)}, *before = p[0];
    dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
        .initial_inverse_hessian_factor = 3, .initial_step_size = INFINITY,
        .max_num_line_search_iterations = 1});
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    dla_lbfgs_info in = info_of(s);
    assert_string_equal(in.line_search_status, "failed");
    assert_ptr_equal(p[0], before);
    assert_true(in.loss == 0.5 && in.step_norm == 0 && in.learn_rate == 0);
    assert_true(in.gradients_norm == 1);
    assert_int_equal(in.history_length, 0);
    assert_int_equal(in.evaluations, 2);
    dla_lbfgs_state_free(s);

    s = dla_lbfgs_state_create(&(dla_lbfgs_options){
        .initial_inverse_hessian_factor = 1.95, .initial_step_size = INFINITY,
        .line_search_method = "strong-wolfe", .max_num_line_search_iterations = 1});
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    in = info_of(s);
    assert_string_equal(in.line_search_status, "failed");
    assert_true(fabs(item(p[0], 0) + 0.95) < 1e-15);
    assert_true(fabs(in.loss - 0.45125) < 1e-15);
    assert_int_equal(in.history_length, 1); /* its s'y > 0 all the same */

    /* With pairs stored, a search that finds no lower loss drops them:
     * here the loss moved away (shift 50) after the state's was taken. */
    q.shift = 50;
    before = p[0];
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    in = info_of(s);
    assert_string_equal(in.line_search_status, "failed");
    assert_ptr_equal(p[0], before);
    assert_int_equal(in.history_length, 0);
    dla_lbfgs_state_free(s);
    dla_optim_free(1, p);
}

/* -------------------------------------------------------------- the state */

static void the_state_describes_the_point_returned(void **state)
{
    (void)state;
    dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    dla_lbfgs_info in = info_of(s);
    assert_true(isnan(in.loss));
    assert_string_equal(in.line_search_status, "");
    assert_int_equal(in.history_length, 0);
    assert_int_equal(in.iterations, 0);
    assert_int_equal(in.options.history_size, 10);
    assert_true(in.options.initial_inverse_hessian_factor == 1);
    assert_true(in.options.initial_step_size == 0);
    assert_string_equal(in.options.line_search_method, "weak-wolfe");
    assert_int_equal(in.options.max_num_line_search_iterations, 20);
    assert_null(dla_lbfgs_state_gradient(s, 0));
    assert_non_null(strstr(dla_last_error(), "no gradient before the first update"));
    for (int it = 0; it < 3; it++) {
        double x0 = item(p[0], 0), y0 = item(p[1], 0);
        assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
        double x = item(p[0], 0), y = item(p[1], 0);
        double gx = -2 * (1 - x) - 400 * x * (y - x * x), gy = 200 * (y - x * x);
        in = info_of(s);
        assert_true(tu_close(in.loss, (1 - x) * (1 - x) + 100 * (y - x * x) * (y - x * x), 1e-14));
        assert_true(tu_close(item(dla_lbfgs_state_gradient(s, 0), 0), gx, 1e-12));
        assert_true(tu_close(item(dla_lbfgs_state_gradient(s, 1), 0), gy, 1e-12));
        assert_true(tu_close(in.gradients_norm, sqrt(gx * gx + gy * gy), 1e-12));
        assert_true(tu_close(in.step_norm, hypot(x - x0, y - y0), 1e-12));
        assert_int_equal(in.iterations, it + 1);
    }
    assert_null(dla_lbfgs_state_gradient(s, 2));
    assert_non_null(strstr(dla_last_error(), "entry 2 is out of range"));
    assert_null(dla_lbfgs_state_gradient(s, -1));
    dla_lbfgs_state_free(s);
    dla_optim_free(2, p);
}

/* A HistorySize of 3 keeps the 3 newest pairs. */
static void the_history_keeps_history_size_pairs(void **state)
{
    (void)state;
    dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
    dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){.history_size = 3});
    int seen[4] = {0};
    for (int it = 0; it < 12; it++) {
        assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
        int h = info_of(s).history_length;
        assert_true(h >= 0 && h <= 3);
        seen[h] = 1;
    }
    assert_true(seen[3]);
    assert_int_equal(info_of(s).history_length, 3);
    assert_true(info_of(s).loss < 24.2 / 10); /* it made progress with 3 */
    dla_lbfgs_state_free(s);
    dla_optim_free(2, p);
}

/* A HistorySize far above the pairs a solve makes (2^31 - 1: "keep them
 * all") takes the same steps as one of 20, and only the memory of the
 * pairs stored. Before: every slot was allocated and cleared at the first
 * update (48 GB here), and the system killed the process; main's
 * allocator refuses blocks of 256 MiB and more, so that the old code
 * fails this test with DLA_ERR_OUT_OF_MEMORY instead. */
static void a_huge_history_size_allocates_only_the_pairs_stored(void **state)
{
    (void)state;
    dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
    dla_tensor *q[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
    dla_lbfgs_state *huge = dla_lbfgs_state_create(&(dla_lbfgs_options){.history_size = INT32_MAX});
    dla_lbfgs_state *some = dla_lbfgs_state_create(&(dla_lbfgs_options){.history_size = 20});
    assert_non_null(huge);
    assert_non_null(some);
    for (int it = 0; it < 15; it++) {
        if (dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, huge) != DLA_OK)
            fail_msg("update %d: %s", it + 1, dla_last_error());
        assert_int_equal(dla_lbfgsupdate(2, q, rosenbrock_loss, NULL, some), DLA_OK);
        assert_int_equal(info_of(huge).history_length, info_of(some).history_length);
        assert_true(item(p[0], 0) == item(q[0], 0) && item(p[1], 0) == item(q[1], 0));
    }
    assert_true(info_of(huge).history_length > 4); /* past the first block of pairs */
    assert_int_equal(info_of(huge).options.history_size, INT32_MAX);
    dla_lbfgs_state_free(huge);
    dla_lbfgs_state_free(some);
    dla_optim_free(2, p);
    dla_optim_free(2, q);
}

/* The update that grows the pairs' slots (the fifth pair) is all or
 * nothing like any other: each of its allocations refused in turn leaves
 * params and the state as they were, and the update then succeeds. */
static void growing_the_history_is_all_or_nothing(void **state)
{
    (void)state;
    dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)};
    dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){.history_size = 20});
    for (int it = 0; it < 30 && info_of(s).history_length < 4; it++)
        assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
    assert_int_equal(info_of(s).history_length, 4);
    const dla_lbfgs_info before = info_of(s);
    dla_tensor *p0 = p[0], *p1 = p[1];
    const double x = item(p0, 0), y = item(p1, 0);
    dla_status st = DLA_ERR_OUT_OF_MEMORY;
    long refused = 0;
    for (long k = 1; st != DLA_OK && k < 100000; k++) {
        tu_calls = 0;
        tu_fail_at = k;
        st = dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s);
        tu_fail_at = 0;
        if (st == DLA_OK)
            break;
        refused++;
        const dla_lbfgs_info now = info_of(s);
        if (p[0] != p0 || p[1] != p1 || now.history_length != 4 ||
            now.iterations != before.iterations || now.evaluations != before.evaluations)
            fail_msg("allocation %ld refused (%s): params or the state changed", k,
                     dla_last_error());
        assert_true(item(p[0], 0) == x && item(p[1], 0) == y);
    }
    assert_int_equal(st, DLA_OK);
    assert_true(refused > 0);
    if (info_of(s).history_length != 5) /* the pair went into a grown block */
        fail_msg("history %d after the update", info_of(s).history_length);
    dla_lbfgs_state_free(s);
    dla_optim_free(2, p);
}

/* The loss at the point an update returned is the state's: the next
 * update's first call is at a length along the new direction. Params
 * replaced in between are evaluated where they are. */
static void the_next_update_starts_from_the_state_unless_params_changed(void **state)
{
    (void)state;
    iso q = {.c = 1, .shift = 0};
    dla_tensor *p[1] = {scalar(3, DLA_F64)};
    q.count.mark = 1;
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    assert_true(q.count.first_x == 3); /* the start, evaluated */
    assert_int_equal(q.count.calls, info_of(s).evaluations);
    double x1 = item(p[0], 0);
    assert_true(x1 < 3);
    q.count.mark = 1;
    int calls = q.count.calls;
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    assert_true(q.count.first_x != x1); /* not evaluated again */
    assert_int_equal(q.count.calls - calls, 1);
    assert_int_equal(q.count.calls, info_of(s).evaluations);
    /* The same value in a new tensor: evaluated, and then stepped. */
    double x2 = item(p[0], 0);
    dla_tensor_release(p[0]);
    p[0] = scalar(x2 + 1, DLA_F64);
    q.count.mark = 1;
    calls = q.count.calls;
    assert_int_equal(dla_lbfgsupdate(1, p, isotropic_loss, &q, s), DLA_OK);
    assert_true(q.count.first_x == x2 + 1);
    assert_int_equal(q.count.calls - calls, 2);
    dla_lbfgs_state_free(s);
    dla_optim_free(1, p);
}

/* At a minimum the gradient is zero: no step, nothing replaced. */
static void a_zero_gradient_takes_no_step(void **state)
{
    (void)state;
    dla_tensor *p[2] = {scalar(1, DLA_F64), scalar(1, DLA_F64)}, *was[2] = {p[0], p[1]};
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
    dla_lbfgs_info in = info_of(s);
    assert_ptr_equal(p[0], was[0]);
    assert_ptr_equal(p[1], was[1]);
    assert_string_equal(in.line_search_status, "completed");
    assert_true(in.step_norm == 0 && in.gradients_norm == 0 && in.loss == 0 && in.learn_rate == 0);
    assert_int_equal(in.evaluations, 1);
    dla_lbfgs_state_free(s);
    dla_optim_free(2, p);
}

/* f = 1e20 |x|^2 / 2 in single from x = (1, 1, 1, 1): every value is
 * finite (f 2e20, g 1e20 each), but g'd = -4e40 is not a single. The
 * update failed: "the gradient at params is not finite (g'd is -inf)".
 * Now the dot products are taken in double: the bounded first step
 * (0.5 max|x| + 0.1 = 0.6 along -g / max|g|) lands on x = 0.4. */
static void a_huge_but_finite_gradient_in_single_takes_a_step(void **state)
{
    (void)state;
    float one[4] = {1, 1, 1, 1}, huge[16] = {0};
    for (int i = 0; i < 4; i++)
        huge[i * 5] = 1e20f;
    quad q = {dla_tensor_from_host(huge, DLA_F32, "", DLA_DIMS(4, 4)),
              dla_zeros(DLA_F32, "", DLA_DIMS(4, 1))};
    dla_tensor *p[1] = {dla_tensor_from_host(one, DLA_F32, "", DLA_DIMS(4, 1))};
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    if (dla_lbfgsupdate(1, p, quadratic_loss, &q, s) != DLA_OK)
        fail_msg("%s", dla_last_error());
    for (int i = 0; i < 4; i++)
        assert_true(fabs(item(p[0], i) - 0.4) < 1e-6);
    dla_lbfgs_info in = info_of(s);
    assert_true(in.loss < 2e20 && isfinite(in.gradients_norm));
    dla_lbfgs_state_free(s);
    dla_optim_free(1, p);
    dla_tensor_release(q.a);
    dla_tensor_release(q.b);
}

/* ------------------------------------------------------------------ errors */

/* What a broken loss function does, by kind. */
typedef struct broken {
    int kind;
    int calls, fail_at; /* kind 0: fail at this call (1-based) */
} broken;

static dla_status broken_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    broken *b = ctx;
    b->calls++;
    dla_status st = dla_feval(rosenbrock, NULL, n, p, nout, out);
    if (st != DLA_OK)
        return st;
    switch (b->kind) {
    case 0:
        if (b->calls >= b->fail_at)
            return dla_set_error(DLA_ERR_IO, "the data file went away");
        break;
    case 1: out[0] = NULL; break;
    case 2: out[2] = NULL; break;
    case 3: out[0] = dla_ones(DLA_F64, "", DLA_DIMS(2, 1)); break;
    case 4: out[0] = dla_cast(out[0], DLA_I32); break;
    case 5: out[2] = dla_ones(DLA_F64, "", DLA_DIMS(2, 1)); break;
    case 6: out[1] = dla_cast(out[1], DLA_F32); break;
    case 7: out[2] = dla_error_tensor(DLA_ERR_STATE, "no gradient today"); break;
    case 8: out[0] = dla_affine(out[0], NAN, 0); break;
    case 9: out[1] = dla_affine(out[1], INFINITY, 0); break;
    default: break;
    }
    return DLA_OK;
}

/* Each case starts from a state after one good update (prep 1: params
 * replaced by a new tensor of the same value, so the update evaluates its
 * start; prep 2: params as the update returned them, so the first call is
 * a length tried), or from a new state (prep 0). */
static void every_error_leaves_params_and_state_as_they_were(void **state)
{
    (void)state;
    const struct {
        int kind, fail_at, prep;
        dla_status st;
        const char *msg;
    } c[] = {
        {0, 1, 1, DLA_ERR_IO, "dla_lbfgsupdate: the loss function returned"},
        {0, 1, 2, DLA_ERR_IO, "the data file went away"}, /* at the first length */
        {0, 3, 0, DLA_ERR_IO, "the data file went away"}, /* the second, after a good one */
        {1, 0, 1, DLA_ERR_INVALID_ARGUMENT, "left out[0] (the loss) unset"},
        {2, 0, 1, DLA_ERR_INVALID_ARGUMENT, "left out[2] (the gradient of entry 2) unset"},
        {3, 0, 1, DLA_ERR_SHAPE, "for the loss, not a real scalar"},
        {4, 0, 1, DLA_ERR_DTYPE, "int32"},
        {5, 0, 1, DLA_ERR_SHAPE, "dla_lbfgsupdate: entry 2: the parameter is 1x1, its gradient 2x1"},
        {6, 0, 1, DLA_ERR_DTYPE, "entry 1: the parameter is double, its gradient single"},
        {7, 0, 1, DLA_ERR_STATE, "entry 2: the gradient is no gradient today"},
        {8, 0, 1, DLA_ERR_STATE, "the loss at params is nan"},
        {9, 0, 1, DLA_ERR_STATE, "the gradient at params is not finite"},
        {9, 0, 0, DLA_ERR_STATE, "the gradient at params is not finite"},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        dla_tensor *p[2] = {scalar(-1.2, DLA_F64), scalar(1, DLA_F64)}, *was[2];
        dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
        if (c[k].prep)
            assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
        if (c[k].prep == 1) {
            double v = item(p[0], 0);
            dla_tensor_release(p[0]);
            p[0] = scalar(v, DLA_F64);
        }
        was[0] = p[0], was[1] = p[1];
        dla_lbfgs_info before = info_of(s);
        dla_tensor *g0 = c[k].prep ? dla_lbfgs_state_gradient(s, 0) : NULL;
        broken b = {.kind = c[k].kind, .fail_at = c[k].fail_at};
        dla_status st = dla_lbfgsupdate(2, p, broken_loss, &b, s);
        if (st != c[k].st || !strstr(dla_last_error(), c[k].msg))
            fail_msg("case %zu: status %s, \"%s\"; want %s and \"%s\"", k, dla_status_str(st),
                     dla_last_error(), dla_status_str(c[k].st), c[k].msg);
        if (c[k].kind == 0)
            assert_int_equal(b.calls, c[k].fail_at);
        assert_ptr_equal(p[0], was[0]);
        assert_ptr_equal(p[1], was[1]);
        dla_lbfgs_info after = info_of(s);
        assert_true(after.iterations == before.iterations &&
                    after.evaluations == before.evaluations &&
                    after.history_length == before.history_length);
        assert_true(after.loss == before.loss || (isnan(after.loss) && isnan(before.loss)));
        assert_string_equal(after.line_search_status, before.line_search_status);
        if (c[k].prep)
            assert_ptr_equal(dla_lbfgs_state_gradient(s, 0), g0);
        else
            assert_null(dla_lbfgs_state_gradient(s, 0));
        dla_lbfgs_state_free(s);
        dla_optim_free(2, p);
    }
}

static void bad_arguments_are_refused(void **state)
{
    (void)state;
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    dla_tensor *p[2] = {scalar(1, DLA_F64), scalar(2, DLA_F64)};
    assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_lbfgsupdate: argument state is NULL"));
    assert_int_equal(dla_lbfgsupdate(2, p, NULL, NULL, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "argument loss_fn is NULL"));
    assert_int_equal(dla_lbfgsupdate(0, p, rosenbrock_loss, NULL, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "0 entries"));
    assert_int_equal(dla_lbfgsupdate(2, NULL, rosenbrock_loss, NULL, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "with a NULL list"));
    dla_tensor *q[2] = {p[0], NULL};
    assert_int_equal(dla_lbfgsupdate(2, q, rosenbrock_loss, NULL, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "entry 2: the parameter is NULL"));
    dla_scope_begin();
    q[1] = dla_error_tensor(DLA_ERR_SHAPE, "made wrong");
    assert_int_equal(dla_lbfgsupdate(2, q, rosenbrock_loss, NULL, s), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "entry 2: the parameter is made wrong"));
    q[1] = dla_cast(p[1], DLA_I32);
    assert_int_equal(dla_lbfgsupdate(2, q, rosenbrock_loss, NULL, s), DLA_ERR_DTYPE);
    assert_non_null(strstr(dla_last_error(), "entry 2: the parameter is int32; L-BFGS updates single or double"));
    dla_scope_end();
    assert_int_equal(info_of(s).evaluations, 0);
    /* One state per parameter list: its pairs have the first list's
     * count, dims and dtypes. */
    assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_OK);
    dla_tensor *one[1] = {p[0]};
    assert_int_equal(dla_lbfgsupdate(1, one, rosenbrock_loss, NULL, s), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "the state's pairs were made with 2 entries, params has 1"));
    dla_scope_begin();
    dla_tensor *wide[2] = {p[0], dla_zeros(DLA_F64, "", DLA_DIMS(1, 3))};
    assert_int_equal(dla_lbfgsupdate(2, wide, rosenbrock_loss, NULL, s), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "entry 2: the parameter is 1x3, its L-BFGS state 1x1"));
    dla_tensor *single[2] = {p[0], dla_cast(p[1], DLA_F32)};
    assert_int_equal(dla_lbfgsupdate(2, single, rosenbrock_loss, NULL, s), DLA_ERR_DTYPE);
    dla_scope_end();
    /* The accessors. */
    dla_lbfgs_info in;
    assert_int_equal(dla_lbfgs_state_info(NULL, &in), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_lbfgs_state_info(s, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dla_lbfgs_state_gradient(NULL, 0));
    /* A freed state is refused, not read. */
    dla_lbfgs_state_free(s);
    assert_int_equal(dla_lbfgsupdate(2, p, rosenbrock_loss, NULL, s), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "an L-BFGS state freed already"));
    assert_int_equal(dla_lbfgs_state_info(s, &in), DLA_ERR_INVALID_ARGUMENT);
    assert_null(dla_lbfgs_state_gradient(s, 0));
    dla_clear_error();
    dla_lbfgs_state_free(s); /* twice: refused and logged */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    dla_lbfgs_state_free(NULL);
    dla_optim_free(2, p);
}

static void every_option_is_checked_at_creation(void **state)
{
    (void)state;
    const struct {
        dla_lbfgs_options o;
        const char *msg;
    } bad[] = {
        {{.history_size = -1}, "HistorySize -1"},
        {{.initial_inverse_hessian_factor = -2}, "InitialInverseHessianFactor -2"},
        {{.initial_inverse_hessian_factor = NAN}, "InitialInverseHessianFactor nan"},
        {{.initial_inverse_hessian_factor = INFINITY}, "InitialInverseHessianFactor inf"},
        {{.initial_step_size = -0.5}, "InitialStepSize -0.5"},
        {{.initial_step_size = NAN}, "InitialStepSize nan"},
        {{.line_search_method = "wolfe"}, "LineSearchMethod \"wolfe\" is not one of"},
        {{.max_num_line_search_iterations = -3}, "MaxNumLineSearchIterations -3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dla_clear_error();
        assert_null(dla_lbfgs_state_create(&bad[i].o));
        assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_last_error(), bad[i].msg) || !strstr(dla_last_error(), "dla_lbfgs_state_create"))
            fail_msg("case %zu: \"%s\"", i, dla_last_error());
    }
    /* The caller's method string need not outlive the state. */
    char method[] = "backtracking";
    dla_lbfgs_state *s = dla_lbfgs_state_create(&(dla_lbfgs_options){
        .line_search_method = method, .history_size = 4, .initial_inverse_hessian_factor = 0.5,
        .initial_step_size = 2, .max_num_line_search_iterations = 7});
    method[0] = 'X';
    dla_lbfgs_info in = info_of(s);
    assert_string_equal(in.options.line_search_method, "backtracking");
    assert_int_equal(in.options.history_size, 4);
    assert_true(in.options.initial_inverse_hessian_factor == 0.5);
    assert_true(in.options.initial_step_size == 2);
    assert_int_equal(in.options.max_num_line_search_iterations, 7);
    dla_lbfgs_state_free(s);
}

/* -------------------------------------------------------------- networks */

/* y = sin(3x) on 64 points of [-1, 1], a 1-16-1 tanh network. */
typedef struct fit {
    dla_net *net;
    dla_tensor *x, *t;
} fit;

static dla_net *small_mlp(void)
{
    dla_rng_seed(3);
    dla_layer *l[] = {dla_feature_input_layer(1, NULL), dla_fc_layer(16, NULL),
                      dla_tanh_layer(NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    return net;
}

static void sine_data(int n, dla_tensor **x, dla_tensor **t)
{
    float xs[256], ts[256];
    assert_true(n <= 256);
    for (int i = 0; i < n; i++) {
        xs[i] = (float)(-1 + 2.0 * i / (n - 1));
        ts[i] = (float)sin(3 * xs[i]);
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(1, n));
    *t = dla_tensor_from_host(ts, DLA_F32, "CB", DLA_DIMS(1, n));
}

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    (void)nout;
    fit *f = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(f->net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_mean(dla_square(dla_sub(y, in[1])), 0, NULL);
    return dla_net_gradient(f->net, out[0], out + 1);
}

/* lbfgsupdate's loss function: params are the network's Learnables'
 * values, which the update has set to the point to try. */
static dla_status net_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    (void)n;
    (void)p;
    fit *f = ctx;
    return dla_feval(model_loss, f, 2, (dla_tensor *[]){f->x, f->t}, nout, out);
}

static double net_mse(fit *f)
{
    dla_scope_begin();
    dla_tensor *out[16];
    assert_true(dla_net_learnable_count(f->net) < 16);
    assert_int_equal(dla_feval(model_loss, f, 2, (dla_tensor *[]){f->x, f->t},
                               1 + dla_net_learnable_count(f->net), out), DLA_OK);
    double v = item(out[0], 0);
    dla_scope_end();
    return v;
}

/* The same network from the same weights: 200 Adam steps (MATLAB's
 * defaults but a learning rate of 0.01), then 100 L-BFGS iterations. */
static void a_network_fits_better_with_lbfgs_than_with_200_adam_steps(void **state)
{
    (void)state;
    dla_scope_begin();
    fit a = {.net = small_mlp()}, l;
    sine_data(64, &a.x, &a.t);
    l = a;
    l.net = dla_net_copy(a.net);
    assert_non_null(l.net);
    const int nl = dla_net_learnable_count(a.net);
    const double start = net_mse(&a);
    assert_true(tu_close(net_mse(&l), start, 0));

    dla_tensor *m[8] = {0}, *v[8] = {0};
    assert_true(nl <= 8);
    for (int it = 1; it <= 200; it++) {
        dla_scope_begin();
        dla_tensor *out[9];
        assert_int_equal(dla_feval(model_loss, &a, 2, (dla_tensor *[]){a.x, a.t}, 1 + nl, out), DLA_OK);
        assert_int_equal(dla_adamupdate(nl, dla_table_values(dla_net_learnables(a.net)), out + 1, m, v,
                                        it, 0.01, DLA_ADAM_GRAD_DECAY, DLA_ADAM_SQ_GRAD_DECAY,
                                        DLA_ADAM_EPSILON), DLA_OK);
        dla_scope_end();
    }
    const double adam = net_mse(&a);

    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    dla_tensor **values = dla_table_values(dla_net_learnables(l.net));
    double prev = start;
    for (int it = 1; it <= 100; it++) {
        assert_int_equal(dla_lbfgsupdate(nl, values, net_loss, &l, s), DLA_OK);
        dla_lbfgs_info in = info_of(s);
        assert_true(in.loss <= prev); /* every accepted length decreased the loss */
        prev = in.loss;
        if (!strcmp(in.line_search_status, "failed"))
            break;
    }
    const double lbfgs = net_mse(&l);
    /* The network holds the point the state's loss is of. */
    assert_true(tu_close(lbfgs, info_of(s).loss, 1e-6));
    if (!(lbfgs < adam / 10 && adam < start))
        fail_msg("mean squared error: %g at the start, %g after Adam, %g after L-BFGS", start, adam,
                 lbfgs);
    dla_lbfgs_state_free(s);
    dla_optim_free(nl, m);
    dla_optim_free(nl, v);
    dla_net_free(a.net);
    dla_net_free(l.net);
    dla_scope_end();
}

/* -------------------------------------------------------------- trainnet */

static void trainnet_options_for_lbfgs(void **state)
{
    (void)state;
    dla_training_options o;
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){.solver = "lbfgs"}, &o),
                     DLA_OK);
    assert_int_equal(o.max_iterations, 1000);
    assert_true(o.gradient_tolerance == 1e-5 && o.step_tolerance == 1e-5);
    assert_string_equal(o.line_search_method, "weak-wolfe");
    assert_int_equal(o.history_size, 10);
    assert_true(o.initial_inverse_hessian_factor == 1 && o.initial_step_size == 0);
    assert_int_equal(o.max_num_line_search_iterations, 20);
    /* The mini-batch options stay unset, so resolving again works. */
    assert_int_equal(o.max_epochs, 0);
    assert_int_equal(o.mini_batch_size, 0);
    assert_true(o.l2_regularization == 0 && o.initial_learn_rate == 0);
    assert_null(o.shuffle);
    dla_training_options again;
    assert_int_equal(dla_training_options_resolve(&o, &again), DLA_OK);
    assert_true(again.gradient_tolerance == 1e-5);
    assert_int_equal(dla_training_options_resolve(&(dla_training_options){
                         .solver = "lbfgs", .gradient_tolerance = -1, .step_tolerance = 1e-3,
                         .line_search_method = "backtracking"}, &o), DLA_OK);
    assert_true(o.gradient_tolerance == 0 && o.step_tolerance == 1e-3);
    assert_string_equal(o.line_search_method, "backtracking");

    const struct {
        dla_training_options o;
        const char *msg;
    } bad[] = {
        {{.solver = "lbfgs", .mini_batch_size = 32}, "MiniBatchSize does not apply to solver \"lbfgs\""},
        {{.solver = "lbfgs", .max_epochs = 3}, "MaxEpochs does not apply"},
        {{.solver = "lbfgs", .initial_learn_rate = 0.1}, "InitialLearnRate does not apply"},
        {{.solver = "lbfgs", .l2_regularization = 1e-3}, "L2Regularization does not apply"},
        {{.solver = "lbfgs", .shuffle = "never"}, "Shuffle does not apply"},
        {{.solver = "lbfgs", .learn_rate_schedule = {.method = "piecewise"}}, "LearnRateSchedule does not apply"},
        {{.solver = "lbfgs", .gradient_threshold = 1}, "GradientThreshold does not apply"},
        {{.solver = "adam", .max_iterations = 10}, "MaxIterations applies to solver \"lbfgs\" only, not to \"adam\""},
        {{.history_size = 5}, "HistorySize applies to solver \"lbfgs\" only"},
        {{.solver = "lbfgs", .line_search_method = "exact"}, "LineSearchMethod \"exact\" is not one of"},
        {{.solver = "lbfgs", .max_iterations = -1}, "MaxIterations -1"},
        {{.solver = "lbfgs", .history_size = -1}, "HistorySize -1"},
        {{.solver = "lbfgs", .step_tolerance = NAN}, "StepTolerance"},
        {{.solver = "lbfgs", .initial_inverse_hessian_factor = -1}, "InitialInverseHessianFactor -1"},
        {{.solver = "lbfgs", .initial_step_size = -1}, "InitialStepSize -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(dla_training_options_resolve(&bad[i].o, &o), DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_last_error(), bad[i].msg))
            fail_msg("case %zu: \"%s\"", i, dla_last_error());
    }
    char buf[4096];
    dla_training_options_describe(&(dla_training_options){.solver = "lbfgs", .history_size = 5},
                                  buf, sizeof buf);
    assert_non_null(strstr(buf, "TrainingOptionsLBFGS with properties:"));
    assert_non_null(strstr(buf, "MaxIterations: 1000\n"));
    assert_non_null(strstr(buf, "LineSearchMethod: 'weak-wolfe'\n"));
    assert_non_null(strstr(buf, "HistorySize: 5\n"));
    assert_non_null(strstr(buf, "InitialStepSize: 'auto'\n"));
    assert_non_null(strstr(buf, "GradientTolerance: 1.0000e-05\n"));
    assert_null(strstr(buf, "MiniBatchSize"));
    assert_null(strstr(buf, "L2Regularization"));
}

static void trainnet_with_lbfgs_fits_a_regression_and_says_why_it_stopped(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    sine_data(100, &x, &t);
    dla_net *net = small_mlp(), *trained;
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_info *info;
    tu_sink sink;
    assert_non_null(tu_sink_open(&sink));
    dla_tensor *vx, *vt;
    sine_data(30, &vx, &vt);
    dla_train_data val = {.predictors = vx, .targets = vt};
    dla_training_options o = {.solver = "lbfgs", .max_iterations = 300, .gradient_tolerance = 1e-3,
                              .step_tolerance = -1, .verbose_frequency = 10, .output = sink.f,
                              .metrics = "rmse", .validation_data = &val,
                              .validation_frequency = 1000};
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info),
                     DLA_OK);
    char *text = tu_sink_text(&sink);
    const int64_t n = info->iterations;
    if (strcmp(info->stop_reason, "Gradient tolerance reached") || n >= 300)
        fail_msg("stopped: %s after %lld iterations\n%s", info->stop_reason, (long long)n, text);
    /* Every iteration but the last above the tolerance, the last at it;
     * every loss at most the one before (each step went down). */
    for (int64_t i = 0; i < n; i++) {
        assert_true((info->gradient_norm[i] <= 1e-3) == (i == n - 1));
        assert_int_equal(info->epoch[i], i + 1);
        assert_true(info->step_norm[i] > 0);
        if (i)
            assert_true(info->training_loss[i] <= info->training_loss[i - 1]);
    }
    /* "mse" is the mean squared error; the fit is close. */
    assert_true(info->training_loss[n - 1] < 1e-3);
    assert_true(tu_close(info->training_rmse[n - 1], sqrt(info->training_loss[n - 1]), 1e-4));
    assert_int_equal(info->output_network_iteration, n);
    /* Validated at the first iteration and at the stop (the network
     * returned), not between. */
    assert_int_equal(info->validations, 2);
    assert_int_equal(info->validation_iteration[1], n);
    assert_true(info->final_validation_loss < 2e-3);
    /* The table: the lbfgs columns, a row every 10 iterations and the last. */
    assert_non_null(strstr(text, "|  Iteration  |  Time Elapsed  |   Training   |  Validation  |"
                                 "   Training   |  Validation  |   Gradient   |     Step     |\n"
                                 "|             |   (hh:mm:ss)   |     RMSE     |     RMSE     |"
                                 "     Loss     |     Loss     |     Norm     |     Norm     |\n"));
    assert_null(strstr(text, "Epoch"));
    assert_non_null(strstr(text, "Training finished: Gradient tolerance reached.\n"));
    assert_non_null(strstr(text, "|          10 |"));
    char last[64];
    snprintf(last, sizeof last, "|%12lld |", (long long)n);
    assert_non_null(strstr(text, last));
    free(text);
    /* The trained network predicts what the loss says. */
    dla_tensor *y;
    assert_int_equal(dla_net_predict(trained, 1, &x, 1, &y, NULL), DLA_OK);
    double se = 0;
    for (int i = 0; i < 100; i++)
        se += pow(item(y, i) - item(t, i), 2);
    assert_true(tu_close(se / 100, info->training_loss[n - 1], 1e-4));
    dla_training_info_free(info);
    dla_net_free(trained);

    /* MaxIterations, and the other stop reasons. */
    const struct {
        dla_training_options o;
        const char *reason;
        int64_t iterations;
    } c[] = {
        {{.solver = "lbfgs", .max_iterations = 4, .verbose = -1}, "Max iterations completed", 4},
        {{.solver = "lbfgs", .max_iterations = 50, .step_tolerance = 10, .verbose = -1},
         "Step tolerance reached", 1},
        {{.solver = "lbfgs", .max_iterations = 50, .max_num_line_search_iterations = 1,
          .initial_step_size = 1e6, .initial_inverse_hessian_factor = 1e6, .verbose = -1},
         "Line search failed", 1},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"}, &c[k].o, &trained,
                                      &info), DLA_OK);
        if (strcmp(info->stop_reason, c[k].reason) || info->iterations != c[k].iterations)
            fail_msg("case %zu: %s after %lld iterations", k, info->stop_reason,
                     (long long)info->iterations);
        dla_training_info_free(info);
        dla_net_free(trained);
    }
    /* Full batch only, one device only. */
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "mse"},
                                  &(dla_training_options){.solver = "lbfgs", .verbose = -1,
                                                          .execution_environment = "parallel"},
                                  &trained, &info), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "L-BFGS trains on one device"));
    assert_null(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* NaN data: the loss at the start is not finite, and trainnet stops as
 * for the other solvers, with the network as it was. */
static void trainnet_with_lbfgs_stops_at_a_nan_loss(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    sine_data(16, &x, &t);
    t = dla_add(t, dla_affine(dla_ones(DLA_F32, "CB", DLA_DIMS(1, 16)), NAN, 0));
    dla_net *net = small_mlp(), *trained;
    dla_training_info *info;
    assert_int_equal(dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                                  &(dla_train_loss){.name = "mse"},
                                  &(dla_training_options){.solver = "lbfgs", .verbose = -1},
                                  &trained, &info), DLA_ERR_STATE);
    assert_string_equal(info->stop_reason, "Training loss is NaN");
    assert_int_equal(info->iterations, 1);
    assert_int_equal(info->output_network_iteration, 0);
    assert_non_null(trained);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* No single block of 256 MiB or more: a test of this suite that asks for
 * one is out of memory, not killed. */
static void *capped_alloc(void *user, void *ptr, size_t size)
{
    if (size >= ((size_t)256 << 20))
        return NULL;
    return tu_alloc(user, ptr, size);
}

int main(void)
{
    dla_set_allocator(capped_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(rosenbrock_reaches_one_one_with_every_line_search),
        TU_TEST(rosenbrock_in_single_precision_as_one_tensor),
        TU_TEST(an_isotropic_quadratic_is_solved_by_the_second_step),
        TU_TEST(a_quadratic_converges_in_few_iterations_with_its_history),
        TU_TEST(the_direction_is_the_bfgs_matrix_of_the_pairs),
        TU_TEST(the_first_step_is_bounded_by_initial_step_size),
        TU_TEST(a_huge_but_finite_gradient_in_single_takes_a_step),
        TU_TEST(weak_and_strong_wolfe_differ_on_an_overshoot),
        TU_TEST(a_pair_that_fails_the_curvature_condition_is_not_stored),
        TU_TEST(a_failed_line_search_keeps_params_or_takes_the_lowest_loss_tried),
        TU_TEST(the_state_describes_the_point_returned),
        TU_TEST(the_history_keeps_history_size_pairs),
        TU_TEST(a_huge_history_size_allocates_only_the_pairs_stored),
        TU_TEST(growing_the_history_is_all_or_nothing),
        TU_TEST(the_next_update_starts_from_the_state_unless_params_changed),
        TU_TEST(a_zero_gradient_takes_no_step),
        TU_TEST(every_error_leaves_params_and_state_as_they_were),
        TU_TEST(bad_arguments_are_refused),
        TU_TEST(every_option_is_checked_at_creation),
        TU_TEST(a_network_fits_better_with_lbfgs_than_with_200_adam_steps),
        TU_TEST(trainnet_options_for_lbfgs),
        TU_TEST(trainnet_with_lbfgs_fits_a_regression_and_says_why_it_stopped),
        TU_TEST(trainnet_with_lbfgs_stops_at_a_nan_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_derivatives.c - dla_jacobian, dla_divergence and dla_laplacian:
 * exact on a polynomial field, against finite differences of a network
 * point by point, zeros where a ReLU network has no second derivatives,
 * their own derivatives (enable_higher_derivatives) against finite
 * differences, accelerated with eager's bits, and the errors.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "gradcheck.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <string.h>

static const dla_gradient_options higher = {.enable_higher_derivatives = 1};

enum { C = 3, H = 6, B = 4 };

/* u = W2 act(W1 x + b1) + b2 on x "CB" (C x B); p = {W1, b1, W2, b2}. */
static dla_tensor *mlp_u(int relu, dla_tensor *const *p, dla_tensor *x)
{
    dla_tensor *h = dla_fullyconnect(x, p[0], p[1]);
    return dla_fullyconnect(relu ? dla_relu(h) : dla_tanh(h), p[2], p[3]);
}

static void mlp_params(int K, dla_tensor **p)
{
    p[0] = dla_randn(DLA_F64, "", DLA_DIMS(H, C));
    p[1] = dla_randn(DLA_F64, "", DLA_DIMS(H, 1));
    p[2] = dla_randn(DLA_F64, "", DLA_DIMS(K, H));
    p[3] = dla_randn(DLA_F64, "", DLA_DIMS(K, 1));
}

/* ----------------------------------------------------- a polynomial field */

/* u = [x1^2 x2; sin(x1) + x2^3] of x "CB" 2 x 5. */
static dla_status field(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *x = in[0];
    dla_tensor *x1 = dla_slice(x, 1, 0, 1, 1), *x2 = dla_slice(x, 1, 1, 1, 2);
    dla_tensor *u = dla_cat(1, 2, (dla_tensor *[]){dla_mul(dla_square(x1), x2),
                                                  dla_add(dla_sin(x1), dla_mul(x2, dla_square(x2)))});
    out[0] = dla_jacobian(u, x, 1, NULL);
    out[1] = dla_divergence(u, x, 1, NULL);
    out[2] = dla_laplacian(u, x, 1, NULL);
    return DLA_OK;
}

static void expect_dims(dla_tensor *t, const char *format, int ndims, const int64_t *dims)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_string_equal(dla_tensor_format(t), format);
    for (int d = 1; d <= ndims; d++)
        assert_int_equal(dla_tensor_dim(t, d), dims[d - 1]);
}

static void test_a_polynomial_fields_derivatives_are_exact(void **state)
{
    (void)state;
    dla_scope_begin();
    const double v[10] = {0.5, 2, -1, 0.25, 1.5, -0.75, 0, 3, -2, 1};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "CB", DLA_DIMS(2, 5));
    dla_tensor *out[3];
    assert_int_equal(dla_feval(field, NULL, 1, &x, 3, out), DLA_OK);
    expect_dims(out[0], "CBU", DLA_DIMS(2, 5, 2));
    expect_dims(out[1], "CB", DLA_DIMS(1, 5));
    expect_dims(out[2], "CB", DLA_DIMS(2, 5));
    for (int b = 0; b < 5; b++) {
        const double a = v[2 * b], c = v[2 * b + 1];
        const double jac[2][2] = {{2 * a * c, a * a}, {cos(a), 3 * c * c}};
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 2; i++)
                assert_true(tu_close(dla_tensor_item(out[0], i + 2 * (b + 5 * k)), jac[k][i],
                                     1e-15));
        assert_true(tu_close(dla_tensor_item(out[1], b), 2 * a * c + 3 * c * c, 1e-15));
        assert_true(tu_close(dla_tensor_item(out[2], 2 * b), 2 * c, 1e-15));
        assert_true(tu_close(dla_tensor_item(out[2], 2 * b + 1), -sin(a) + 6 * c, 1e-15));
    }
    dla_scope_end();
}

/* x of 5 elements with dim 2: 5 points of one coordinate (the dim past
 * x's, a trailing singleton), u = x^3. */
static dla_status cube_points(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    dla_tensor *x = in[0], *u = dla_mul(x, dla_square(x));
    out[0] = dla_jacobian(u, x, 2, NULL);
    out[1] = dla_divergence(u, x, 2, NULL);
    out[2] = dla_laplacian(u, x, 2, NULL);
    return DLA_OK;
}

static void test_points_along_a_trailing_dim(void **state)
{
    (void)state;
    dla_scope_begin();
    const double v[5] = {1, -2, 0.5, 3, 0};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(5)), *out[3];
    assert_int_equal(dla_feval(cube_points, NULL, 1, &x, 3, out), DLA_OK);
    for (int k = 0; k < 3; k++)
        expect_dims(out[k], "", DLA_DIMS(5, 1));
    for (int b = 0; b < 5; b++) {
        assert_true(tu_close(dla_tensor_item(out[0], b), 3 * v[b] * v[b], 1e-15));
        assert_true(tu_close(dla_tensor_item(out[1], b), 3 * v[b] * v[b], 1e-15));
        assert_true(tu_close(dla_tensor_item(out[2], b), 6 * v[b], 1e-15));
    }
    dla_scope_end();
}

/* ------------------------------------------- a network, point by point */

typedef struct net_case {
    int relu;
} net_case;

/* in = {x, W1, b1, W2, b2}; out = {u, jacobian, divergence, laplacian}. */
static dla_status net_derivatives(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    const net_case *c = ctx;
    dla_tensor *x = in[0];
    out[0] = mlp_u(c->relu, in + 1, x);
    out[1] = dla_jacobian(out[0], x, 1, NULL);
    out[2] = dla_divergence(out[0], x, 1, NULL);
    out[3] = dla_laplacian(out[0], x, 1, NULL);
    for (int i = 1; i < 4; i++)
        if (dla_tensor_status(out[i]) != DLA_OK)
            return dla_tensor_status(out[i]);
    return DLA_OK;
}

/* u's component k at point b with x's coordinate i of that point moved by
 * h (the network run eagerly, outside any dla_feval). */
static double u_moved(int relu, dla_tensor *const *p, const double *xv, int b, int i, double h,
                      int k)
{
    double moved[C * B];
    memcpy(moved, xv, sizeof moved);
    moved[i + C * b] += h;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host(moved, DLA_F64, "CB", DLA_DIMS(C, B));
    const double u = dla_tensor_item(mlp_u(relu, p, x), k + C * b);
    dla_scope_end();
    return u;
}

static void check_network(int relu)
{
    dla_scope_begin();
    dla_rng_seed(relu ? 12 : 11);
    dla_tensor *in[5];
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
    mlp_params(C, in + 1);
    double xv[C * B];
    assert_int_equal(dla_tensor_to_host(in[0], xv, sizeof xv), DLA_OK);
    net_case c = {relu};
    dla_tensor *out[4];
    assert_int_equal(dla_feval(net_derivatives, &c, 5, in, 4, out), DLA_OK);
    expect_dims(out[1], "CBU", DLA_DIMS(C, B, C));
    expect_dims(out[2], "CB", DLA_DIMS(1, B));
    expect_dims(out[3], "CB", DLA_DIMS(C, B));
    const double h1 = 1e-6, h2 = 1e-4;
    for (int b = 0; b < B; b++) {
        double div = 0;
        for (int k = 0; k < C; k++) {
            double lap = 0;
            for (int i = 0; i < C; i++) {
                const double up = u_moved(relu, in + 1, xv, b, i, h1, k);
                const double down = u_moved(relu, in + 1, xv, b, i, -h1, k);
                const double jac = dla_tensor_item(out[1], i + C * (b + B * k));
                if (!tu_close(jac, (up - down) / (2 * h1), 1e-7))
                    fail_msg("%s: d u%d / d x%d at point %d: %.12g, finite differences %.12g",
                             relu ? "relu" : "tanh", k, i, b, jac, (up - down) / (2 * h1));
                if (i == k)
                    div += jac;
                lap += (u_moved(relu, in + 1, xv, b, i, h2, k) - 2 * u_moved(relu, in + 1, xv, b, i, 0, k) +
                        u_moved(relu, in + 1, xv, b, i, -h2, k)) /
                       (h2 * h2);
            }
            const double got = dla_tensor_item(out[3], k + C * b);
            if (relu ? got != 0.0 : !tu_close(got, lap, 1e-5))
                fail_msg("%s: laplacian of u%d at point %d: %.12g, finite differences %.12g",
                         relu ? "relu" : "tanh", k, b, got, lap);
        }
        assert_true(tu_close(dla_tensor_item(out[2], b), div, 1e-12));
    }
    dla_scope_end();
}

static void test_a_tanh_networks_derivatives_match_finite_differences(void **state)
{
    (void)state;
    check_network(0);
}

/* A ReLU network is piecewise linear: its Laplacian is zero (no error for
 * the second sweeps that find nothing to differentiate), its Jacobian
 * that of the piece each point is on. */
static void test_a_relu_networks_laplacian_is_zero(void **state)
{
    (void)state;
    check_network(1);
}

/* --------------------------------------------- accelerated: eager's bits */

static void test_accelerated_they_replay_with_eager_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(13);
    dla_tensor *in[5];
    mlp_params(C, in + 1);
    net_case c = {0};
    dla_accel *af = dla_accelerate(net_derivatives, NULL);
    assert_non_null(af);
    for (int call = 0; call < 3; call++) {
        in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
        tu_expect_replay_bits(af, net_derivatives, &c, 5, in, 4, NULL, call);
    }
    tu_assert_near(dla_accel_hit_rate(af), 100.0 * 2 / 3, 1e-9);
    dla_accel_free(af);
    dla_scope_end();
}

/* ------------------------------- their own derivatives, recorded sweeps */

typedef struct which {
    int op; /* 0 jacobian, 1 divergence, 2 laplacian */
} which;

static dla_tensor *recorded_derivative(void *ctx, dla_tensor *const *in)
{
    const which *w = ctx;
    dla_tensor *u = mlp_u(0, in + 1, in[0]);
    return w->op == 0   ? dla_jacobian(u, in[0], 1, &higher)
           : w->op == 1 ? dla_divergence(u, in[0], 1, &higher)
                        : dla_laplacian(u, in[0], 1, &higher);
}

/* A loss made of them (a physics-informed residual) has gradients with
 * respect to the weights and to x: checked against central differences. */
static void test_with_higher_derivatives_their_gradients_match_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(14);
    dla_tensor *in[5];
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
    mlp_params(C, in + 1);
    /* b2 shifts u and none of its derivatives. */
    const int check[5] = {1, 1, 1, 1, 0};
    for (int op = 0; op < 3; op++) {
        which w = {op};
        gc_check(recorded_derivative, &w, 5, in, check, 1e-5);
    }
    dla_scope_end();
}

/* Without the option the last sweeps are constants to a later gradient,
 * as dla_gradient's are: the error says so. */
static dla_status lap_then_gradient(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    dla_tensor *lap = dla_laplacian(mlp_u(0, in + 1, in[0]), in[0], 1, NULL);
    out[0] = lap;
    return dla_gradient(dla_sum(lap, 0, NULL), 1, &in[1], &out[1]);
}

static void test_without_the_option_the_result_is_a_constant(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(15);
    dla_tensor *in[5], *out[2];
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
    mlp_params(1, in + 1);
    assert_int_equal(dla_feval(lap_then_gradient, NULL, 5, in, 2, out),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "does not depend on it"));
    assert_non_null(strstr(dla_last_error(), "enable_higher_derivatives"));
    dla_scope_end();
}

/* ------------------------------------------------------------- errors */

typedef struct bad_case {
    const char *expect;
    dla_status status;
    int kind;
} bad_case;

static dla_status bad_call(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    const bad_case *c = ctx;
    dla_tensor *x = in[0];
    dla_tensor *u = mlp_u(0, in + 1, x); /* 1 x B */
    switch (c->kind) {
    case 0: /* u's points are not x's */
        out[0] = dla_jacobian(dla_slice(u, 2, 0, 1, 2), x, 1, NULL);
        break;
    case 1: /* a divergence of 1 component over 3 coordinates */
        out[0] = dla_divergence(u, x, 1, NULL);
        break;
    case 2:
        out[0] = dla_laplacian(u, x, 0, NULL);
        break;
    case 3:
        out[0] = dla_laplacian(u, x, 1, &(dla_gradient_options){.hooks = &(dla_gradient_hooks){0}});
        break;
    case 4: /* computed without x */
        out[0] = dla_jacobian(dla_tanh(dla_ones(DLA_F64, "CB", DLA_DIMS(1, B))), x, 1, NULL);
        break;
    case 5:
        out[0] = dla_laplacian(NULL, x, 1, NULL);
        break;
    default: /* "CB" has no third dim to stack the derivatives along */
        out[0] = dla_jacobian(dla_tanh(x), x, 3, NULL);
        break;
    }
    return dla_tensor_status(out[0]);
}

static void test_bad_arguments_are_named(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(16);
    dla_tensor *in[5], *out[1];
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(C, B));
    mlp_params(1, in + 1);
    const bad_case cases[] = {
        {"dla_jacobian: u is 1x2 and x is 3x4: they must agree in every dim but the operation "
         "dimension 1",
         DLA_ERR_SHAPE, 0},
        {"dla_divergence: u is 1x4 and x is 3x4: a divergence needs as many components of u as "
         "coordinates of x along dim 1",
         DLA_ERR_SHAPE, 1},
        {"dla_laplacian: argument dim: 0", DLA_ERR_INVALID_ARGUMENT, 2},
        {"dla_laplacian: argument opts: hooks", DLA_ERR_INVALID_ARGUMENT, 3},
        {"dla_jacobian: u (1x4) does not depend on x (3x4)", DLA_ERR_INVALID_ARGUMENT, 4},
        {"dla_laplacian: argument u is NULL", DLA_ERR_INVALID_ARGUMENT, 5},
        {"dla_jacobian: dim 3 is past formatted x's 2 dims (CB)", DLA_ERR_SHAPE, 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(dla_feval(bad_call, (void *)&cases[i], 5, in, 1, out), cases[i].status);
        if (!strstr(dla_last_error(), cases[i].expect))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, dla_last_error(), cases[i].expect);
    }
    /* Outside dla_feval there is no tape to sweep. */
    dla_tensor *u = mlp_u(0, in + 1, in[0]);
    dla_tensor *jac = dla_jacobian(u, in[0], 1, NULL);
    assert_int_equal(dla_tensor_status(jac), DLA_ERR_STATE);
    assert_non_null(strstr(dla_tensor_error(jac), "dla_jacobian: dla_gradient: called outside "
                                                  "dla_feval"));
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_a_polynomial_fields_derivatives_are_exact),
        TU_TEST(test_points_along_a_trailing_dim),
        TU_TEST(test_a_tanh_networks_derivatives_match_finite_differences),
        TU_TEST(test_a_relu_networks_laplacian_is_zero),
        TU_TEST(test_accelerated_they_replay_with_eager_bits),
        TU_TEST(test_with_higher_derivatives_their_gradients_match_finite_differences),
        TU_TEST(test_without_the_option_the_result_is_a_constant),
        TU_TEST(test_bad_arguments_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

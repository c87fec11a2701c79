/*
 * test_nnops_dropout.c - dropout: the mask is the one dla_rand would draw
 * from the same stream position, the same seed repeats it, the stream
 * advances as dla_rand's does, kept elements are scaled by 1/(1-p), and
 * the gradient is multiplied by the same mask.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gradcheck.h"
#include "test_nnops.h"

static void test_dropout_mask_is_the_uniform_draw_against_prob(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int f32 = 0; f32 < 2; f32++) {
        dla_dtype dt = f32 ? DLA_F32 : DLA_F64;
        double *xv = nn_values(6 * 7 * 5);
        dla_tensor *x = dla_cast(nn_from(xv, "SCB", DLA_DIMS(6, 7, 5)), dt);
        dla_rng_seed(1234);
        double *u = nn_fetch(dla_rand(dt, "SCB", DLA_DIMS(6, 7, 5)));
        uint64_t seed_after, ctr_after;
        dla_rng_get(&seed_after, &ctr_after);
        dla_rng_seed(1234);
        dla_tensor *y = dla_dropout(x, 0.3);
        /* the stream moved exactly as dla_rand's draw moved it */
        uint64_t s, c;
        dla_rng_get(&s, &c);
        assert_true(s == seed_after && c == ctr_after);
        assert_string_equal(dla_tensor_format(y), "SCB");
        assert_int_equal(dla_tensor_dtype(y), dt);
        double *yv = nn_fetch(y), *xr = nn_fetch(x);
        int64_t kept = 0;
        for (int i = 0; i < 210; i++) {
            double want = u[i] >= 0.3 ? xr[i] / 0.7 : 0.0;
            if (!tu_close(yv[i], want, f32 ? 1e-6 : 1e-15))
                fail_msg("element %d: got %g, want %g (u = %g)", i, yv[i], want, u[i]);
            kept += u[i] >= 0.3;
        }
        /* some of each, or the comparison above proves little */
        assert_true(kept > 100 && kept < 200);
        free(xv), free(u), free(yv), free(xr);
    }
    dla_scope_end();
}

static void test_dropout_repeats_with_the_seed_and_differs_without(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(50, 40));
    dla_rng_seed(7);
    double *a = nn_fetch(dla_dropout(x, 0.5));
    double *b = nn_fetch(dla_dropout(x, 0.5)); /* stream moved on */
    dla_rng_seed(7);
    double *c = nn_fetch(dla_dropout(x, 0.5));
    int same_ab = 1, same_ac = 1;
    int64_t kept = 0;
    for (int i = 0; i < 2000; i++) {
        same_ab &= a[i] == b[i];
        same_ac &= a[i] == c[i];
        assert_true(a[i] == 0.0 || a[i] == 2.0);
        kept += a[i] != 0.0;
    }
    assert_true(same_ac);
    assert_false(same_ab);
    /* half kept, give or take five standard deviations (sqrt(500) ~ 22) */
    assert_true(kept > 1000 - 112 && kept < 1000 + 112);
    /* prob 0 keeps everything as it is */
    double *d = nn_fetch(dla_dropout(x, 0.0));
    for (int i = 0; i < 2000; i++)
        assert_true(d[i] == 1.0);
    free(a), free(b), free(c), free(d);
    dla_scope_end();
}

static dla_tensor *dropout_fn(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    dla_rng_seed(99); /* the same mask at every evaluation */
    return dla_dropout(in[0], 0.4);
}

static dla_status sum_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dropout_fn(NULL, in);
    out[0] = dla_sum(y, 0, NULL);
    out[1] = y;
    return dla_gradient(out[0], 1, in, out + 2);
}

static void test_dropout_gradient_is_the_same_mask(void **state)
{
    (void)state;
    dla_tensor *x = nn_rand("SSCB", DLA_DIMS(4, 3, 2, 2));
    gc_check(dropout_fn, NULL, 1, &x, (int[]){1}, 1e-6);
    gc_check2(dropout_fn, NULL, 1, &x, (int[]){1}, 1e-6);
    dla_scope_begin();
    dla_tensor *out[3];
    assert_int_equal(dla_feval(sum_loss, NULL, 1, &x, 3, out), DLA_OK);
    double *y = nn_fetch(out[1]), *g = nn_fetch(out[2]), *xv = nn_fetch(x);
    for (int i = 0; i < 48; i++) /* d sum(x .* m) / dx = m = y ./ x */
        assert_true(tu_close(g[i], y[i] / xv[i], 1e-12));
    free(y), free(g), free(xv);
    dla_scope_end();
    dla_tensor_release(x);
}

static dla_status drop_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dla_dropout(dla_mul(in[0], in[0]), 0.5);
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void test_an_accelerated_dropout_draws_a_new_mask_per_call_as_eager_does(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = nn_from((double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "CB", DLA_DIMS(4, 3));
    dla_accel *af = dla_accelerate(drop_loss, NULL);
    double eager[4][12], fast[4][12];
    for (int run = 0; run < 2; run++) {
        dla_rng_seed(2024);
        for (int call = 0; call < 4; call++) {
            dla_tensor *out[2];
            dla_status st = run ? dla_accel_feval(af, NULL, 1, &x, 2, out)
                                : dla_feval(drop_loss, NULL, 1, &x, 2, out);
            assert_int_equal(st, DLA_OK);
            double *g = nn_fetch(out[1]);
            memcpy(run ? fast[call] : eager[call], g, sizeof eager[call]);
            free(g);
        }
    }
    /* three of the four calls were replays, and all match eager */
    assert_true(dla_accel_hit_rate(af) > 70.0);
    for (int call = 0; call < 4; call++)
        for (int i = 0; i < 12; i++)
            assert_true(fast[call][i] == eager[call][i]);
    /* and the masks differ from call to call */
    assert_true(memcmp(eager[1], eager[2], sizeof eager[1]) != 0);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_dropout_errors(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "CB", DLA_DIMS(3, 2));
    uint64_t s0, c0, s1, c1;
    dla_rng_get(&s0, &c0);
    nn_expect_error(dla_dropout(x, 1.0), DLA_ERR_INVALID_ARGUMENT,
                    "dla_dropout: argument prob: 1 is outside [0, 1)");
    nn_expect_error(dla_dropout(x, -0.1), DLA_ERR_INVALID_ARGUMENT, "prob: -0.1 is outside");
    nn_expect_error(dla_dropout(x, NAN), DLA_ERR_INVALID_ARGUMENT, "prob: nan is outside");
    dla_tensor *ints = dla_ones(DLA_I32, "CB", DLA_DIMS(3, 2));
    nn_expect_error(dla_dropout(ints, 0.5), DLA_ERR_DTYPE, "dla_dropout: argument x: int32");
    /* failed calls draw nothing */
    dla_rng_get(&s1, &c1);
    assert_true(s0 == s1 && c0 == c1);
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_dropout_mask_is_the_uniform_draw_against_prob),
        TU_TEST(test_dropout_repeats_with_the_seed_and_differs_without),
        TU_TEST(test_dropout_gradient_is_the_same_mask),
        TU_TEST(test_an_accelerated_dropout_draws_a_new_mask_per_call_as_eager_does),
        TU_TEST(test_dropout_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

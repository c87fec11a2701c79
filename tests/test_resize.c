/*
 * test_resize.c - dla_resize (MATLAB's dlresize): exact values worked out
 * by hand from the documented coordinate maps for each method, transform
 * and rounding mode; Scale against OutputSize; one, two and three spatial
 * dims with the other dims untouched; first and second derivatives
 * against finite differences; a replay with eager's bits; the errors.
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

static double *host(dla_tensor *t)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    const int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_int_equal(dla_tensor_to_host(d, h, sizeof(double) * (size_t)n), DLA_OK);
    return h;
}

/* y (a vector along its first dim) equals want[0..n-1] exactly. */
static void expect_vector(dla_tensor *y, int n, const double *want)
{
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_numel(y), n);
    double *h = host(y);
    for (int i = 0; i < n; i++)
        if (h[i] != want[i])
            fail_msg("element %d: %.17g, want %.17g", i, h[i], want[i]);
    free(h);
}

/* x = 1, 2, ..., n along one S dim ("SC", one channel). */
static dla_tensor *ramp(int n, dla_dtype dtype)
{
    double v[16];
    for (int i = 0; i < n; i++)
        v[i] = i + 1;
    return dla_cast(dla_tensor_from_host(v, DLA_F64, "SC", DLA_DIMS(n, 1)), dtype);
}

static dla_tensor *resize1(dla_tensor *x, double scale, const char *method, const char *transform,
                           const char *rounding)
{
    return dla_resize(x, &(dla_resize_options){.scale = {scale}, .method = method,
                                               .geometric_transform_mode = transform,
                                               .nearest_rounding_mode = rounding});
}

/* ------------------------------------------------------------- nearest */

/* Scale 2 on 1 2 3, output position i at (i + 0.5) / 2 - 0.5 (half-pixel)
 * = -0.25 0.25 0.75 1.25 1.75 2.25 or i / 2 (asymmetric) = 0 0.5 1 1.5
 * 2 2.5, rounded as each mode says and kept inside 0..2. */
static void test_nearest_upsampling_in_every_mode(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(3, DLA_F32);
    /* round: 0 0 1 1 2 2 */
    expect_vector(dla_resize(x, &(dla_resize_options){.scale = {2}}), 6,
                  (const double[]){1, 1, 2, 2, 3, 3});
    /* floor: -1 0 0 1 1 2, the -1 kept at 0 */
    expect_vector(resize1(x, 2, NULL, NULL, "floor"), 6, (const double[]){1, 1, 1, 2, 2, 3});
    /* asymmetric, round (halves away from zero): 0 1 1 2 2 3, 3 kept at 2 */
    expect_vector(resize1(x, 2, "nearest", "asymmetric", "round"), 6,
                  (const double[]){1, 2, 2, 3, 3, 3});
    /* asymmetric, floor: 0 0 1 1 2 2 */
    expect_vector(resize1(x, 2, NULL, "asymmetric", "floor"), 6,
                  (const double[]){1, 1, 2, 2, 3, 3});
    /* onnx-10 enlarging floors: as floor */
    expect_vector(resize1(x, 2, NULL, "asymmetric", "onnx-10"), 6,
                  (const double[]){1, 1, 2, 2, 3, 3});
    expect_vector(resize1(x, 2, NULL, "half-pixel", "onnx-10"), 6,
                  (const double[]){1, 1, 1, 2, 2, 3});
    dla_scope_end();
}

/* Scale 0.4 on 1..5: floor(5 * 0.4) = 2 outputs at (i + 0.5) / 0.4 - 0.5
 * = 0.75 and 3.25. */
static void test_nearest_downsampling_in_every_mode(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(5, DLA_F64);
    expect_vector(resize1(x, 0.4, NULL, NULL, "round"), 2, (const double[]){2, 4});
    expect_vector(resize1(x, 0.4, NULL, NULL, "floor"), 2, (const double[]){1, 4});
    /* onnx-10 shrinking takes the ceiling: 1 and 4 */
    expect_vector(resize1(x, 0.4, NULL, NULL, "onnx-10"), 2, (const double[]){2, 5});
    /* asymmetric: 0 and 2.5 */
    expect_vector(resize1(x, 0.4, NULL, "asymmetric", "round"), 2, (const double[]){1, 4});
    expect_vector(resize1(x, 0.4, NULL, "asymmetric", "floor"), 2, (const double[]){1, 3});
    expect_vector(resize1(x, 0.4, NULL, "asymmetric", "onnx-10"), 2, (const double[]){1, 4});
    dla_scope_end();
}

/* -------------------------------------------------------------- linear */

static void test_linear_interpolates_and_clamps_at_the_edges(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = ramp(3, DLA_F32);
    /* half-pixel: -0.25 (kept at 0) 0.25 0.75 1.25 1.75 2.25 (kept at 2) */
    expect_vector(resize1(x, 2, "linear", NULL, NULL), 6,
                  (const double[]){1, 1.25, 1.75, 2.25, 2.75, 3});
    /* asymmetric: 0 0.5 1 1.5 2 2.5 (kept at 2) */
    expect_vector(resize1(x, 2, "linear", "asymmetric", NULL), 6,
                  (const double[]){1, 1.5, 2, 2.5, 3, 3});
    /* The rounding mode does not matter to "linear". */
    expect_vector(resize1(x, 2, "linear", "asymmetric", "floor"), 6,
                  (const double[]){1, 1.5, 2, 2.5, 3, 3});
    /* Shrinking 1..4 by 0.5, half-pixel: 0.5 and 2.5 */
    expect_vector(resize1(ramp(4, DLA_F64), 0.5, "linear", NULL, NULL), 2,
                  (const double[]){1.5, 3.5});
    dla_scope_end();
}

/* x(r, c) for the 2 x 2 [1 2; 3 4], bilinear half-pixel by 2: rows at
 * 0 0.25 0.75 1 (after clamping), columns the same, and on this plane
 * value = 1 + 2 * row + column. */
static void test_bilinear_two_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((const double[]){1, 3, 2, 4}, DLA_F64, "SSC",
                                         DLA_DIMS(2, 2, 1));
    dla_tensor *y = dla_resize(x, &(dla_resize_options){.scale = {2}, .method = "linear"});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "SSC");
    assert_int_equal(dla_tensor_dim(y, 1), 4);
    assert_int_equal(dla_tensor_dim(y, 2), 4);
    static const double want[4][4] = {{1, 1.25, 1.75, 2},
                                      {1.5, 1.75, 2.25, 2.5},
                                      {2.5, 2.75, 3.25, 3.5},
                                      {3, 3.25, 3.75, 4}};
    double *h = host(y);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            if (h[r + 4 * c] != want[r][c])
                fail_msg("(%d, %d): %g, want %g", r, c, h[r + 4 * c], want[r][c]);
    free(h);
    /* Per-dim scales: rows by 2, columns kept. */
    y = dla_resize(x, &(dla_resize_options){.scale = {2, 1}});
    assert_int_equal(dla_tensor_dim(y, 2), 2);
    expect_vector(y, 8, (const double[]){1, 1, 3, 3, 2, 2, 4, 4});
    dla_scope_end();
}

/* --------------------------------------------------- scale, output size */

static void test_output_size_maps_by_its_own_ratio(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((const double[]){0, 10, 20, 30, 40}, DLA_F64, "SC",
                                         DLA_DIMS(5, 1));
    /* Scale 1.5: floor(7.5) = 7 outputs, mapped with s = 1.5. */
    dla_tensor *a = dla_resize(x, &(dla_resize_options){.scale = {1.5}, .method = "linear"});
    /* OutputSize 7: the same 7, mapped with s = 7/5. */
    dla_tensor *b = dla_resize(x, &(dla_resize_options){.output_size = {7}, .method = "linear"});
    assert_int_equal(dla_tensor_numel(a), 7);
    assert_int_equal(dla_tensor_numel(b), 7);
    double *ha = host(a), *hb = host(b);
    for (int i = 0; i < 7; i++) {
        double ca = (i + 0.5) / 1.5 - 0.5, cb = (i + 0.5) / 1.4 - 0.5;
        ca = ca < 0 ? 0 : ca > 4 ? 4 : ca;
        cb = cb < 0 ? 0 : cb > 4 ? 4 : cb;
        assert_true(tu_close(ha[i], 10 * ca, 1e-12));
        assert_true(tu_close(hb[i], 10 * cb, 1e-12));
    }
    free(ha), free(hb);
    /* An output size equal to the input leaves the values as they are. */
    dla_tensor *c = dla_resize(x, &(dla_resize_options){.output_size = {5}, .method = "linear"});
    expect_vector(c, 5, (const double[]){0, 10, 20, 30, 40});
    dla_scope_end();
}

static void test_output_size_nan_keeps_the_aspect_ratio(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(2, 5, 3, 2));
    /* 2 -> 3 is 1.5; floor(5 * 1.5) = 7, as MATLAB's dlresize and
     * resize2dLayer give (imresize's ceil made 8, an activation of
     * another size than the same network's in MATLAB). */
    dla_tensor *y = dla_resize(x, &(dla_resize_options){.output_size = {3, NAN}});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    assert_int_equal(dla_tensor_dim(y, 2), 7);
    assert_int_equal(dla_tensor_dim(y, 3), 3);
    assert_int_equal(dla_tensor_dim(y, 4), 2);
    /* The kept dim is resized by the given dim's factor, 1.5, not by its
     * own out/in (7/5): columns 0, 10, .., 40 sampled "linear" at
     * (j + 0.5) / 1.5 - 0.5, kept inside [0, 4]. */
    double v[5];
    for (int j = 0; j < 5; j++)
        v[j] = 10.0 * j;
    dla_tensor *ramp5 = dla_tensor_from_host(v, DLA_F64, "SSCB", DLA_DIMS(1, 5, 1, 1));
    dla_tensor *z = dla_resize(ramp5, &(dla_resize_options){.output_size = {2, NAN},
                                                           .method = "linear"});
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_int_equal(dla_tensor_dim(z, 1), 2);
    assert_int_equal(dla_tensor_dim(z, 2), 10);
    double *h = host(z);
    for (int j = 0; j < 10; j++) {
        const double c = (j + 0.5) / 2.0 - 0.5;
        tu_assert_near(h[2 * j], 10.0 * (c < 0 ? 0 : c > 4 ? 4 : c), 1e-12);
        tu_assert_near(h[2 * j + 1], h[2 * j], 0.0);
    }
    free(h);
    dla_tensor *w = dla_resize(ramp5, &(dla_resize_options){.output_size = {3, NAN},
                                                           .method = "linear"});
    assert_int_equal(dla_tensor_status(w), DLA_OK);
    assert_int_equal(dla_tensor_dim(w, 2), 15);
    h = host(w);
    for (int j = 0; j < 15; j++) {
        const double c = (j + 0.5) / 3.0 - 0.5;
        tu_assert_near(h[3 * j], 10.0 * (c < 0 ? 0 : c > 4 ? 4 : c), 1e-12);
    }
    free(h);
    /* 3 -> 2 rows: the factor 2/3 makes the 5 columns floor(10/3) = 3,
     * sampled at (j + 0.5) * 1.5 - 0.5 = 0.25, 1.75, 3.25. */
    dla_tensor *tall = dla_tensor_from_host((const double[]){0, 0, 0, 10, 10, 10, 20, 20, 20, 30,
                                                             30, 30, 40, 40, 40},
                                            DLA_F64, "SSCB", DLA_DIMS(3, 5, 1, 1));
    dla_tensor *u = dla_resize(tall, &(dla_resize_options){.output_size = {2, NAN},
                                                          .method = "linear"});
    assert_int_equal(dla_tensor_status(u), DLA_OK);
    assert_int_equal(dla_tensor_dim(u, 2), 3);
    h = host(u);
    tu_assert_near(h[0], 2.5, 1e-12);
    tu_assert_near(h[2], 17.5, 1e-12);
    tu_assert_near(h[4], 32.5, 1e-12);
    free(h);
    dla_scope_end();
}

/* ------------------------------------------------ dims other than S */

static void test_three_spatial_dims_and_the_others_untouched(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { N = 2, CH = 2, NB = 3 };
    double v[N * N * N * CH * NB];
    for (int i = 0; i < N * N * N * CH * NB; i++)
        v[i] = i;
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "SSSCB", DLA_DIMS(N, N, N, CH, NB));
    dla_tensor *y = dla_resize(x, &(dla_resize_options){.scale = {2}});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "SSSCB");
    const int64_t want_dims[5] = {4, 4, 4, CH, NB};
    for (int d = 0; d < 5; d++)
        assert_int_equal(dla_tensor_dim(y, d + 1), want_dims[d]);
    /* half-pixel, round, by 2: output 0 1 2 3 takes input 0 0 1 1. */
    static const int from[4] = {0, 0, 1, 1};
    double *h = host(y);
    for (int b = 0; b < NB; b++)
        for (int c = 0; c < CH; c++)
            for (int k = 0; k < 4; k++)
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 4; i++) {
                        const double got = h[i + 4 * (j + 4 * (k + 4 * (c + CH * b)))];
                        const double want =
                            v[from[i] + N * (from[j] + N * (from[k] + N * (c + CH * b)))];
                        if (got != want)
                            fail_msg("(%d %d %d %d %d): %g, want %g", i, j, k, c, b, got, want);
                    }
    free(h);
    /* "S" with "T": only the S dim changes. */
    dla_tensor *s = dla_zeros(DLA_F32, "SCBT", DLA_DIMS(3, 2, 2, 4));
    dla_tensor *r = dla_resize(s, &(dla_resize_options){.scale = {2}, .method = "linear"});
    const int64_t rd[4] = {6, 2, 2, 4};
    for (int d = 0; d < 4; d++)
        assert_int_equal(dla_tensor_dim(r, d + 1), rd[d]);
    assert_string_equal(dla_tensor_format(r), "SCBT");
    dla_scope_end();
}

/* ------------------------------------------------------------ gradients */

static dla_tensor *resize_fn(void *ctx, dla_tensor *const *in)
{
    return dla_resize(in[0], ctx);
}

static void test_gradients_match_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(41);
    dla_tensor *in[1] = {dla_randn(DLA_F64, "SSCB", DLA_DIMS(3, 4, 2, 2))};
    const int check[1] = {1};
    dla_resize_options lin = {.scale = {1.5, 0.75}, .method = "linear"};
    dla_resize_options near = {.output_size = {5, 2}};
    dla_resize_options asym = {.scale = {2}, .method = "linear",
                               .geometric_transform_mode = "asymmetric"};
    gc_check(resize_fn, &lin, 1, in, check, 1e-6);
    gc_check(resize_fn, &near, 1, in, check, 1e-6);
    gc_check(resize_fn, &asym, 1, in, check, 1e-6);
    gc_check2(resize_fn, &lin, 1, in, check, 1e-5);
    dla_scope_end();
}

/* ---------------------------------------------------- accelerated: bits */

static dla_status resize_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = dla_sum(dla_square(dla_resize(in[0], ctx)), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void test_accelerated_it_replays_with_eager_bits(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(42);
    dla_resize_options o = {.scale = {1.5, 2}, .method = "linear"};
    dla_accel *af = dla_accelerate(resize_loss, NULL);
    assert_non_null(af);
    for (int call = 0; call < 3; call++) {
        dla_tensor *in[1] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(5, 3, 2, 2))};
        tu_expect_replay_bits(af, resize_loss, &o, 1, in, 2, NULL, call);
    }
    tu_assert_near(dla_accel_hit_rate(af), 100.0 * 2 / 3, 1e-9);
    dla_accel_free(af);
    dla_scope_end();
}

/* ------------------------------------------------- dims past 2^31 */

/* dla_index takes int32 positions, and a spatial dim of more than 2^31
 * elements (a long 1-D signal) has positions past them: they were cast to
 * int32 and came back negative (dla_index refused "element 3 is
 * -1946157056", a position the caller never gave) or wrapped onto another
 * element. An empty batch keeps this cheap: no data, but the positions
 * are made and checked all the same. */
static void test_a_dim_past_int32_resizes_its_empty_batch(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t in = ((int64_t)1 << 31) + ((int64_t)1 << 29);
    dla_tensor *x = dla_zeros(DLA_F32, "SB", DLA_DIMS(in, 0));
    const char *methods[] = {"nearest", "linear"};
    for (int m = 0; m < 2; m++) {
        dla_tensor *y = dla_resize(x, &(dla_resize_options){.output_size = {7},
                                                            .method = methods[m]});
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("%s: %s", methods[m], dla_tensor_error(y));
        assert_int_equal(dla_tensor_dim(y, 1), 7);
        assert_int_equal(dla_tensor_dim(y, 2), 0);
        assert_string_equal(dla_tensor_format(y), "SB");
    }
    dla_scope_end();
}

/* The same with data: 2^32 + 2^26 bytes, ones in the last 2^26, resized to
 * 64 by "nearest". Position p of output 63 is past 2^32, where a cast to
 * int32 wraps it into the zeros. 4 GiB, so it is in the suite only with
 * DLA_TEST_LARGE=1 (main; make check does not list it: cmocka's skip
 * reads as a failure to automake's TAP driver). */
static void test_a_dim_past_int32_keeps_its_far_elements(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t ones = (int64_t)1 << 26, zeros = (int64_t)1 << 32, in = zeros + ones;
    dla_tensor *x = dla_pad(dla_ones(DLA_U8, "SB", DLA_DIMS(ones, 1)), 1,
                            (const int64_t[]){zeros}, NULL, 0);
    assert_int_equal(dla_tensor_status(x), DLA_OK);
    const int out = 64;
    dla_tensor *y = dla_resize(x, &(dla_resize_options){.output_size = {out}});
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("%s", dla_tensor_error(y));
    double want[64];
    for (int i = 0; i < out; i++) {
        /* half-pixel, round: the documented map */
        const double c = ((double)i + 0.5) * (double)in / out - 0.5;
        const int64_t p = (int64_t)floor(c + 0.5);
        want[i] = p >= zeros ? 1 : 0;
    }
    assert_true(want[out - 1] == 1 && want[0] == 0);
    expect_vector(y, out, want);
    dla_scope_end();
}

/* --------------------------------------------------------------- errors */

static void test_bad_arguments_are_named(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(4, 4, 3, 2));
    tu_expect_error(dla_resize(NULL, &(dla_resize_options){.scale = {2}}), DLA_ERR_INVALID_ARGUMENT,
                 "dla_resize: argument x is NULL");
    tu_expect_error(dla_resize(dla_zeros(DLA_F32, "", DLA_DIMS(4, 4)),
                            &(dla_resize_options){.scale = {2}}),
                 DLA_ERR_FORMAT, "dla_resize: argument x (4x4 \"\"): it needs a format with "
                                 "spatial (\"S\") dims");
    tu_expect_error(dla_resize(dla_zeros(DLA_F32, "CB", DLA_DIMS(4, 2)),
                            &(dla_resize_options){.scale = {2}}),
                 DLA_ERR_FORMAT, "argument x (4x2 \"CB\")");
    tu_expect_error(dla_resize(x, NULL), DLA_ERR_INVALID_ARGUMENT,
                 "dla_resize: give exactly one of opts->scale and opts->output_size (neither "
                 "given)");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2}, .output_size = {8, 8}}),
                 DLA_ERR_INVALID_ARGUMENT, "(both given)");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {-2}}), DLA_ERR_INVALID_ARGUMENT,
                 "dla_resize: opts->scale[0] is -2; scales must be positive and finite");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2, INFINITY}}),
                 DLA_ERR_INVALID_ARGUMENT, "opts->scale[1] is inf");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2, 0, 3}}), DLA_ERR_INVALID_ARGUMENT,
                 "dla_resize: opts->scale has 3 entries; x (4x4x3x2 \"SSCB\") has 2 spatial "
                 "dims: give 1 or 2");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {0.1}}), DLA_ERR_INVALID_ARGUMENT,
                 "scale 0.1 makes spatial dim 1 of x (4x4x3x2 \"SSCB\") 0 elements");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.output_size = {8}}),
                 DLA_ERR_INVALID_ARGUMENT, "dla_resize: opts->output_size has 1 entry; x "
                                           "(4x4x3x2 \"SSCB\") has 2 spatial dims");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.output_size = {8, 2.5}}),
                 DLA_ERR_INVALID_ARGUMENT, "opts->output_size[1] is 2.5; sizes must be whole");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.output_size = {NAN, NAN}}),
                 DLA_ERR_INVALID_ARGUMENT, "opts->output_size is all NaN");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2}, .method = "cubic"}),
                 DLA_ERR_INVALID_ARGUMENT, "dla_resize: method \"cubic\"; use \"nearest\" or "
                                           "\"linear\"");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2},
                                                     .geometric_transform_mode = "align-corners"}),
                 DLA_ERR_INVALID_ARGUMENT, "geometric transform mode \"align-corners\"");
    tu_expect_error(dla_resize(x, &(dla_resize_options){.scale = {2},
                                                     .nearest_rounding_mode = "ceil"}),
                 DLA_ERR_INVALID_ARGUMENT, "nearest rounding mode \"ceil\"");
    /* Linear on an integer x is a dtype error of dla_resize's own (it came
     * from an op inside, "dla_affine: argument x: int32"); nearest moves
     * elements and takes any dtype. */
    dla_tensor *xi = dla_tensor_from_host((int32_t[]){1, -2, 7, 5}, DLA_I32, "SCB", DLA_DIMS(4, 1, 1));
    tu_expect_error(dla_resize(xi, &(dla_resize_options){.scale = {2}, .method = "linear"}),
                 DLA_ERR_DTYPE, "dla_resize: argument x (4x1x1 int32): method \"linear\" mixes "
                                "elements with fractional weights and needs single or double");
    tu_expect_error(dla_resize(dla_cast(xi, DLA_BOOL), &(dla_resize_options){.output_size = {4},
                                                                           .method = "linear"}),
                 DLA_ERR_DTYPE, "(4x1x1 logical): method \"linear\"");
    dla_tensor *yi = dla_resize(xi, &(dla_resize_options){.scale = {2}});
    assert_int_equal(dla_tensor_dtype(yi), DLA_I32);
    expect_vector(yi, 8, (const double[]){1, 1, -2, -2, 7, 7, 5, 5});
    tu_expect_error(dla_resize(dla_zeros(DLA_F32, "SC", DLA_DIMS(0, 2)),
                            &(dla_resize_options){.output_size = {3}}),
                 DLA_ERR_SHAPE, "spatial dim 1 is empty");
    /* Sizes of 2^30 (each allowed) along three dims: 2^90 elements,
     * refused before any work; the first dim's 28 GiB of host tables were
     * allocated first (the process killed for memory). */
    const double most = (double)((int64_t)1 << 30);
    tu_expect_error(dla_resize(dla_zeros(DLA_F32, "SSSCB", DLA_DIMS(3, 3, 3, 1, 1)),
                               &(dla_resize_options){.output_size = {most, most, most}}),
                    DLA_ERR_INVALID_ARGUMENT, "dla_resize: dims 1073741824x1073741824x1073741824x"
                                              "1x1: too many elements");
    dla_scope_end();
}

/* The largest block asked for while it is installed; blocks past 1 GiB
 * refused (no test here needs one). */
static size_t largest_request;

static void *capped_alloc(void *user, void *ptr, size_t size)
{
    if (size > largest_request)
        largest_request = size;
    if (size > ((size_t)1 << 30))
        return NULL;
    return tu_alloc(user, ptr, size);
}

/* 2^30 x 2^30 from 1x1: an element count int64 holds (2^60), 4 EiB in
 * single, refused before any work, naming the output and the device's
 * memory. Until 2026-11-29 the first dim's host tables came first: 28
 * bytes a position, 28 GiB at 2^30 (written through, the process killed
 * for memory), and its 4 GiB gather, before the output's allocation
 * failed. The test's allocator refuses past 1 GiB and says what was asked. */
static void test_an_output_larger_than_the_device_is_refused_before_any_work(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(1, 1, 1, 1));
    const double most = (double)((int64_t)1 << 30);
    largest_request = 0;
    dla_set_allocator(capped_alloc, NULL);
    dla_tensor *y = dla_resize(x, &(dla_resize_options){.output_size = {most, most}});
    dla_set_allocator(tu_alloc, NULL);
    if (dla_device_memory(dla_tensor_device(x)) == 0) { /* a device that does not say */
        assert_int_equal(dla_tensor_status(y), DLA_ERR_OUT_OF_MEMORY);
        dla_scope_end();
        return;
    }
    tu_expect_error(y, DLA_ERR_OUT_OF_MEMORY, "dla_resize: the output (1073741824x1073741824x1x1 "
                                              "single) would be 4.295e+09 GiB, more than the ");
    if (largest_request > ((size_t)1 << 20))
        fail_msg("a block of %zu bytes was asked for before the refusal", largest_request);
    /* One dim of 2^30 fits the output (4 GiB) where the host has that,
     * but its 28 GiB of host tables are refused by name where it has not. */
    dla_device *cpu = dla_device_get("cpu");
    if (cpu && dla_device_memory(cpu) < (uint64_t)28 << 30) {
        largest_request = 0;
        dla_set_allocator(capped_alloc, NULL);
        y = dla_resize(x, &(dla_resize_options){.output_size = {most, 1}});
        dla_set_allocator(tu_alloc, NULL);
        if (dla_device_memory(dla_tensor_device(x)) >= (uint64_t)4 << 30)
            tu_expect_error(y, DLA_ERR_OUT_OF_MEMORY, "dla_resize: resizing spatial dim 1 of x "
                                                      "(1x1x1x1 \"SSCB\") to 1073741824 "
                                                      "elements needs 28 GiB of host tables");
        else
            assert_int_equal(dla_tensor_status(y), DLA_ERR_OUT_OF_MEMORY);
        if (largest_request > ((size_t)1 << 20))
            fail_msg("a block of %zu bytes was asked for before the refusal", largest_request);
    }
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_nearest_upsampling_in_every_mode),
        TU_TEST(test_nearest_downsampling_in_every_mode),
        TU_TEST(test_linear_interpolates_and_clamps_at_the_edges),
        TU_TEST(test_bilinear_two_dims),
        TU_TEST(test_output_size_maps_by_its_own_ratio),
        TU_TEST(test_output_size_nan_keeps_the_aspect_ratio),
        TU_TEST(test_three_spatial_dims_and_the_others_untouched),
        TU_TEST(test_gradients_match_finite_differences),
        TU_TEST(test_accelerated_it_replays_with_eager_bits),
        TU_TEST(test_a_dim_past_int32_resizes_its_empty_batch),
        TU_TEST(test_bad_arguments_are_named),
        TU_TEST(test_an_output_larger_than_the_device_is_refused_before_any_work),
    };
    /* The 4 GiB case joins the list only with DLA_TEST_LARGE=1 (the
     * function the cmocka_run_group_tests macro calls takes a count). */
    const int n = (int)(sizeof tests / sizeof tests[0]);
    struct CMUnitTest with_large[sizeof tests / sizeof tests[0] + 1];
    memcpy(with_large, tests, sizeof tests);
    with_large[n] = (struct CMUnitTest)TU_TEST(test_a_dim_past_int32_keeps_its_far_elements);
    const char *want_large = getenv("DLA_TEST_LARGE");
    if (want_large && strcmp(want_large, "1") == 0)
        return _cmocka_run_group_tests("test_resize", with_large, (size_t)n + 1, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

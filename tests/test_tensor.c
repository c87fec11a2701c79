/*
 * test_tensor.c - the tensor suite: creation, transfers, views, scopes,
 * sticky errors and the basic ops against naive loops on the host.
 *
 * It runs on the default device; tensor_on_testmem.sh runs it again on the
 * testmem plugin, whose memory the host cannot address, so every test here
 * also proves the core goes through the plugin for each byte.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tu_assert.h"

/* ----------------------------------------------------------- host mirror */

/* A strided view of host doubles, mirroring what a device view should see. */
typedef struct hview {
    const double *data;
    int nd;
    int64_t dims[DLA_MAX_DIMS], strides[DLA_MAX_DIMS], off;
} hview;

static hview hv_dense(const double *data, int nd, const int64_t *dims)
{
    hview v = {.data = data, .nd = nd};
    int64_t s = 1;
    for (int i = 0; i < nd; i++) {
        v.dims[i] = dims[i];
        v.strides[i] = s;
        s *= dims[i];
    }
    return v;
}

static double hv_at(const hview *v, int64_t i)
{
    int64_t off = v->off;
    for (int d = 0; d < v->nd; d++) {
        off += (i % v->dims[d]) * v->strides[d];
        i /= v->dims[d];
    }
    return v->data[off];
}

static int64_t hv_numel(const hview *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->nd; d++)
        n *= v->dims[d];
    return n;
}

/* The tensor's elements as doubles (column-major, dense); caller frees. */
static double *fetch(const dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    dla_scope_begin(); /* a helper's own temporaries, whatever scope we are in */
    dla_tensor *d = dla_cast((dla_tensor *)t, DLA_F64);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    assert_int_equal(dla_tensor_to_host(d, out, sizeof(double) * (size_t)n), DLA_OK);
    dla_scope_end();
    return out;
}

static double *random_doubles(int64_t n)
{
    double *p = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = tu_unit() * 4.0 - 2.0;
    return p;
}

static void expect_view(const dla_tensor *t, const hview *h, double tol)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_ndims(t), h->nd);
    for (int d = 0; d < h->nd; d++)
        assert_int_equal(dla_tensor_dim(t, d + 1), h->dims[d]);
    double *got = fetch(t);
    int64_t n = hv_numel(h);
    for (int64_t i = 0; i < n; i++) {
        if (!tu_close(got[i], hv_at(h, i), tol))
            fail_msg("element %lld: got %.9g, want %.9g", (long long)i, got[i], hv_at(h, i));
    }
    free(got);
}

/* --------------------------------------------------------- basic facts */

static void test_version_and_status_strings(void **state)
{
    int major = -1, minor = -1, patch = -1;
    dla_version(&major, &minor, &patch);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", major, minor, patch);
    assert_string_equal(dla_version_string(), want);
    assert_string_equal(dla_status_str(DLA_OK), "ok");
    assert_string_equal(dla_status_str(DLA_ERR_SHAPE), "shape mismatch");
    assert_string_equal(dla_status_str((dla_status)999), "unknown status");
    assert_string_equal(dla_dtype_name(DLA_F32), "single");
    assert_int_equal(dla_dtype_size(DLA_F64), 8);
}

static void test_device_is_the_selected_one(void **state)
{
    dla_device *dev = dla_device_current();
    assert_non_null(dev);
    const char *want = getenv("DLACCEL_DEVICE");
    if (want && *want)
        assert_string_equal(dla_device_plugin(dev), want);
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(2));
    assert_ptr_equal(dla_tensor_device(t), dev);
    dla_tensor_release(t);
}

/* ------------------------------------------------------------- creation */

static void test_host_data_round_trips_in_every_dtype(void **state)
{
    const float f[6] = {1.5f, -2, 3, 4, 5, 6};
    const double d[6] = {1.25, -2, 3, 4, 5, 1e300};
    const int32_t i[6] = {-7, 0, 7, 2147483647, -2147483647, 3};
    const uint8_t u[6] = {0, 1, 2, 254, 255, 9};
    const void *src[4] = {f, d, i, u};
    dla_dtype types[4] = {DLA_F32, DLA_F64, DLA_I32, DLA_U8};
    for (int k = 0; k < 4; k++) {
        dla_tensor *t = dla_tensor_from_host(src[k], types[k], "", DLA_DIMS(2, 3));
        assert_int_equal(dla_tensor_status(t), DLA_OK);
        assert_int_equal(dla_tensor_dtype(t), types[k]);
        assert_int_equal(dla_tensor_numel(t), 6);
        unsigned char back[48];
        size_t bytes = 6 * dla_dtype_size(types[k]);
        assert_int_equal(dla_tensor_to_host(t, back, bytes), DLA_OK);
        assert_memory_equal(back, src[k], bytes);
        dla_tensor_release(t);
    }
}

static void test_to_host_refuses_a_short_buffer(void **state)
{
    dla_tensor *t = dla_ones(DLA_F32, "", DLA_DIMS(4, 4));
    float small[4];
    assert_int_equal(dla_tensor_to_host(t, small, sizeof small), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "64 bytes of 4x4 single"));
    /* No buffer at all: named (it read "argument bytes: 64 is less than
     * the 64 bytes of 4x4 single"). An empty tensor needs none. */
    assert_int_equal(dla_tensor_to_host(t, NULL, 64), DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_last_error(), "dla_tensor_to_host: argument dst is NULL, for 64 bytes");
    dla_tensor *e = dla_ones(DLA_F32, "", DLA_DIMS(0, 4));
    assert_int_equal(dla_tensor_to_host(e, NULL, 0), DLA_OK);
    dla_tensor_release(e);
    dla_tensor_release(t);
}

/* dla_tensor_item of no element: NaN, and the last error says so. It
 * returned NaN with no error, which reads as a NaN element (the mean of
 * an empty tensor is one) and left a stale message in dla_last_error. */
static void test_item_of_no_element_says_why(void **state)
{
    (void)state;
    dla_tensor *e = dla_zeros(DLA_F32, "", DLA_DIMS(0, 3));
    dla_tensor *s = dla_full(2.5, DLA_F32, "", DLA_DIMS(1, 1));
    dla_clear_error();
    assert_true(isnan(dla_tensor_item(e, 0)));
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_last_error(),
                        "dla_tensor_item: argument index: 0, but t (0x3) has no elements");
    dla_clear_error();
    assert_true(isnan(dla_tensor_item(s, 1)));
    assert_string_equal(dla_last_error(),
                        "dla_tensor_item: argument index: 1 is outside 0..0 of t (1x1)");
    dla_clear_error();
    assert_true(isnan(dla_tensor_item(s, -1)));
    assert_non_null(strstr(dla_last_error(), "argument index: -1 is outside 0..0"));
    dla_clear_error();
    assert_true(isnan(dla_tensor_item(NULL, 0)));
    assert_string_equal(dla_last_error(), "dla_tensor_item: argument t is NULL");
    /* an element is read without touching the last error */
    dla_clear_error();
    assert_true(dla_tensor_item(s, 0) == 2.5);
    assert_int_equal(dla_last_status(), DLA_OK);
    dla_tensor_release(e);
    dla_tensor_release(s);
}

static void test_zeros_ones_full_fill_every_element(void **state)
{
    double vals[3] = {0, 1, -3.5};
    for (int k = 0; k < 3; k++) {
        dla_tensor *t = k == 0   ? dla_zeros(DLA_F64, "SSC", DLA_DIMS(3, 5, 2))
                        : k == 1 ? dla_ones(DLA_F64, "SSC", DLA_DIMS(3, 5, 2))
                                 : dla_full(-3.5, DLA_F64, "SSC", DLA_DIMS(3, 5, 2));
        double *h = fetch(t);
        for (int i = 0; i < 30; i++)
            assert_true(h[i] == vals[k]);
        free(h);
        dla_tensor_release(t);
    }
    dla_tensor *b = dla_full(2.0, DLA_BOOL, "", DLA_DIMS(3));
    uint8_t bb[3];
    assert_int_equal(dla_tensor_to_host(b, bb, 3), DLA_OK);
    assert_int_equal(bb[0] + bb[1] + bb[2], 3);
    dla_tensor_release(b);
}

static void test_bad_dims_are_refused_with_the_argument_named(void **state)
{
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(2, -1));
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(t), "dla_zeros: argument dims: dim 2 is -1"));
    dla_tensor_release(t);
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    t = dla_ones(DLA_F32, "", 9, nine);
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor_release(t);
    t = dla_rand(DLA_I32, "", DLA_DIMS(2));
    assert_int_equal(dla_tensor_status(t), DLA_ERR_DTYPE);
    dla_tensor_release(t);
}

static void test_rand_matches_the_philox_known_answer(void **state)
{
    /* Philox4x32-10 with counter 0 and key 0 gives 0x6627e8d5 0xe169c58d
     * 0xbc57ac4c 0x9b00dbd8 (Random123's known-answer vectors); uniform
     * floats use the top 24 bits. */
    dla_rng_seed(0);
    dla_tensor *t = dla_rand(DLA_F32, "", DLA_DIMS(4));
    float got[4];
    assert_int_equal(dla_tensor_to_host(t, got, sizeof got), DLA_OK);
    const uint32_t kat[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == (float)(kat[i] >> 8) / 16777216.0f);
    dla_tensor_release(t);
}

static void test_same_seed_gives_the_same_numbers(void **state)
{
    dla_rng_seed(1234);
    dla_tensor *a = dla_randn(DLA_F32, "", DLA_DIMS(100));
    uint64_t seed, ctr;
    dla_rng_get(&seed, &ctr);
    assert_int_equal(seed, 1234);
    assert_true(ctr > 0);
    dla_tensor *b = dla_randn(DLA_F32, "", DLA_DIMS(100));
    dla_rng_seed(1234);
    dla_tensor *a2 = dla_randn(DLA_F32, "", DLA_DIMS(100));
    dla_rng_set(seed, ctr);
    dla_tensor *b2 = dla_randn(DLA_F32, "", DLA_DIMS(100));
    float x[100], y[100];
    dla_tensor_to_host(a, x, sizeof x);
    dla_tensor_to_host(a2, y, sizeof y);
    assert_memory_equal(x, y, sizeof x);
    dla_tensor_to_host(b, x, sizeof x);
    dla_tensor_to_host(b2, y, sizeof y);
    assert_memory_equal(x, y, sizeof x);
    dla_tensor_to_host(a, y, sizeof y);
    assert_memory_not_equal(x, y, sizeof x); /* the stream moved on */
    dla_tensor_release(a);
    dla_tensor_release(b);
    dla_tensor_release(a2);
    dla_tensor_release(b2);
}

static void test_rand_and_randn_have_the_right_distribution(void **state)
{
    dla_rng_seed(7);
    int64_t n = 200000;
    dla_tensor *u = dla_rand(DLA_F64, "", 1, &n);
    dla_tensor *z = dla_randn(DLA_F64, "", 1, &n);
    double *hu = fetch(u), *hz = fetch(z);
    double mu = 0, mz = 0, vz = 0, lo = 1, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        mu += hu[i];
        lo = hu[i] < lo ? hu[i] : lo;
        hi = hu[i] > hi ? hu[i] : hi;
        mz += hz[i];
        vz += hz[i] * hz[i];
    }
    mu /= n;
    mz /= n;
    vz = vz / n - mz * mz;
    assert_true(lo >= 0.0 && hi < 1.0);
    assert_true(fabs(mu - 0.5) < 0.005);
    assert_true(fabs(mz) < 0.01);
    assert_true(fabs(vz - 1.0) < 0.02);
    free(hu);
    free(hz);
    dla_tensor_release(u);
    dla_tensor_release(z);
}

/* ---------------------------------------------------------------- views */

static dla_tensor *upload(const double *h, const char *fmt, int nd, const int64_t *dims)
{
    dla_tensor *t = dla_tensor_from_host(h, DLA_F64, fmt, nd, dims);
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    return t;
}

static void test_slice_selects_start_step_stop(void **state)
{
    int64_t dims[3] = {7, 5, 3};
    double *h = random_doubles(105);
    dla_tensor *t = upload(h, "SSC", 3, dims);
    dla_tensor *s = dla_slice(t, 1, 1, 2, DLA_END); /* rows 1,3,5 */
    hview hv = hv_dense(h, 3, dims);
    hv.off = 1;
    hv.dims[0] = 3;
    hv.strides[0] = 2;
    expect_view(s, &hv, 0);
    assert_string_equal(dla_tensor_format(s), "SSC");
    assert_false(dla_tensor_is_contiguous(s));
    /* A slice of a slice: dim 2, elements 4 and 2 are not: 0..3 step 3 -> 0, 3. */
    dla_tensor *s2 = dla_slice(s, 2, 0, 3, 4);
    hv.dims[1] = 2;
    hv.strides[1] = 7 * 3;
    expect_view(s2, &hv, 0);
    /* Empty range. */
    dla_tensor *e = dla_slice(t, 3, 2, 1, 2);
    assert_int_equal(dla_tensor_status(e), DLA_OK);
    assert_int_equal(dla_tensor_numel(e), 0);
    dla_tensor *bad = dla_slice(t, 4, 0, 1, 1);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(bad), "dla_slice: argument dim: 4 is outside 1..3 of 7x5x3"));
    dla_tensor *bad2 = dla_slice(t, 1, 0, 0, 3);
    assert_int_equal(dla_tensor_status(bad2), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor_release(bad2);
    dla_tensor_release(bad);
    dla_tensor_release(e);
    dla_tensor_release(s2);
    dla_tensor_release(s);
    dla_tensor_release(t);
    free(h);
}

static void test_permute_moves_dims_and_their_labels(void **state)
{
    int64_t dims[3] = {4, 3, 2};
    double *h = random_doubles(24);
    dla_tensor *t = upload(h, "", 3, dims);
    dla_tensor *p = dla_permute(t, DLA_DIMS(3, 1, 2));
    hview hv = hv_dense(h, 3, dims), pv = hv;
    const int order[3] = {2, 0, 1};
    for (int i = 0; i < 3; i++) {
        pv.dims[i] = hv.dims[order[i]];
        pv.strides[i] = hv.strides[order[i]];
    }
    expect_view(p, &pv, 0);
    /* Formatted: swapping two S dims keeps "SSC"; moving C first is refused. */
    dla_tensor *f = upload(h, "SSC", 3, dims);
    dla_tensor *ok = dla_permute(f, DLA_DIMS(2, 1, 3));
    assert_string_equal(dla_tensor_format(ok), "SSC");
    dla_tensor *no = dla_permute(f, DLA_DIMS(3, 1, 2));
    assert_int_equal(dla_tensor_status(no), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_tensor_error(no), "\"CSS\""));
    dla_tensor *dup = dla_permute(t, DLA_DIMS(1, 1, 2));
    assert_int_equal(dla_tensor_status(dup), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor_release(dup);
    dla_tensor_release(no);
    dla_tensor_release(ok);
    dla_tensor_release(f);
    dla_tensor_release(p);
    dla_tensor_release(t);
    free(h);
}

static void test_squeeze_drops_singletons_and_their_labels(void **state)
{
    dla_tensor *t = dla_ones(DLA_F32, "SSCB", DLA_DIMS(5, 1, 3, 1));
    dla_tensor *s = dla_squeeze(t);
    assert_int_equal(dla_tensor_ndims(s), 2);
    assert_int_equal(dla_tensor_dim(s, 1), 5);
    assert_int_equal(dla_tensor_dim(s, 2), 3);
    assert_string_equal(dla_tensor_format(s), "SC");
    dla_tensor_release(s);
    dla_tensor_release(t);
}

/* MATLAB's squeeze returns a matrix as it is: a 1 x 5 row stayed a row,
 * where dla_squeeze made a 5 (5 x 1) column of it, a silent transpose that
 * a later product or broadcast read the other way round. */
static dla_tensor *row_loss(dla_tensor *x, dla_tensor *w)
{
    /* A row against a column broadcasts to 5 x 5; a column against a
     * column stays 5 x 1: the sum tells them apart. */
    return dla_sum(dla_mul(dla_squeeze(x), w), 0, NULL);
}

static dla_status squeeze_row_model(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = row_loss(in[0], in[1]);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void test_squeeze_leaves_a_row_vector_a_row(void **state)
{
    dla_scope_begin();
    const double v[5] = {1, 2, 3, 4, 5}, c[5] = {10, 20, 30, 40, 50};
    dla_tensor *row = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(1, 5));
    dla_tensor *s = dla_squeeze(row);
    assert_int_equal(dla_tensor_ndims(s), 2);
    assert_int_equal(dla_tensor_dim(s, 1), 1);
    assert_int_equal(dla_tensor_dim(s, 2), 5);
    /* Trailing singletons do not make a matrix more than two dims. */
    s = dla_squeeze(dla_reshape(row, "", DLA_DIMS(1, 5, 1, 1)));
    assert_int_equal(dla_tensor_ndims(s), 2);
    assert_int_equal(dla_tensor_dim(s, 2), 5);
    s = dla_squeeze(dla_zeros(DLA_F64, "", DLA_DIMS(1, 0)));
    assert_int_equal(dla_tensor_ndims(s), 2);
    assert_int_equal(dla_tensor_dim(s, 1), 1);
    assert_int_equal(dla_tensor_dim(s, 2), 0);
    s = dla_squeeze(dla_zeros(DLA_F64, "", DLA_DIMS(3, 4, 1)));
    assert_int_equal(dla_tensor_ndims(s), 2);
    assert_int_equal(dla_tensor_dim(s, 2), 4);
    /* More dims than two: the ones go, as in MATLAB (1x1x5 gives 5x1). */
    s = dla_squeeze(dla_zeros(DLA_F64, "", DLA_DIMS(1, 1, 5)));
    assert_int_equal(dla_tensor_ndims(s), 1);
    assert_int_equal(dla_tensor_dim(s, 1), 5);
    s = dla_squeeze(dla_zeros(DLA_F64, "", DLA_DIMS(5, 1)));
    assert_int_equal(dla_tensor_dim(s, 1), 5);
    assert_int_equal(dla_tensor_dim(s, 2), 1);
    /* Values and gradient: sum(squeeze(x) .* w) with w a 5 x 1 column is
     * sum_ij x_j w_i (a 5 x 5 broadcast), so d/dx_j = sum(w) = 150. */
    dla_tensor *w = dla_tensor_from_host(c, DLA_F64, "", DLA_DIMS(5, 1));
    tu_assert_near(dla_tensor_item(row_loss(row, w), 0), 15.0 * 150.0, 1e-9);
    dla_tensor *out[2];
    assert_int_equal(dla_feval(squeeze_row_model, NULL, 2, (dla_tensor *[]){row, w}, 2, out),
                     DLA_OK);
    assert_int_equal(dla_tensor_dim(out[1], 1), 1);
    for (int j = 0; j < 5; j++)
        tu_assert_near(dla_tensor_item(out[1], j), 150.0, 1e-9);
    /* A replay makes the shape its recording made. */
    dla_accel *af = dla_accelerate(squeeze_row_model, NULL);
    for (int k = 0; k < 3; k++)
        assert_int_equal(tu_replay_differs(af, squeeze_row_model, NULL, 2,
                                           (dla_tensor *[]){row, w}, 2), -1);
    dla_accel_free(af);
    dla_scope_end();
}

/* MATLAB counts no trailing singletons: sum(X, 3) of a 3x4x5 X is a 3x4
 * matrix, and permute(S, [2 1]) transposes it. Here the sum is 3x4x1, and
 * dla_permute refused the order [2 1] ("2 entries for a tensor with 3
 * dims"). */
static dla_status permute_sum_model(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *p = dla_permute(dla_sum(in[0], DLA_DIMS(3)), DLA_DIMS(2, 1));
    out[0] = dla_sum(dla_mul(p, in[1]), 0, NULL);
    out[1] = p;
    return dla_gradient(out[0], 1, in, out + 2);
}

static void test_permute_takes_an_order_without_trailing_singletons(void **state)
{
    dla_scope_begin();
    double xv[60], wv[12];
    for (int i = 0; i < 60; i++)
        xv[i] = i;
    for (int i = 0; i < 12; i++)
        wv[i] = 1 + 0.5 * i;
    dla_tensor *x = dla_tensor_from_host(xv, DLA_F64, "", DLA_DIMS(3, 4, 5));
    dla_tensor *w = dla_tensor_from_host(wv, DLA_F64, "", DLA_DIMS(4, 3));
    dla_tensor *out[3];
    assert_int_equal(dla_feval(permute_sum_model, NULL, 2, (dla_tensor *[]){x, w}, 3, out),
                     DLA_OK);
    assert_int_equal(dla_tensor_ndims(out[1]), 2);
    assert_int_equal(dla_tensor_dim(out[1], 1), 4);
    assert_int_equal(dla_tensor_dim(out[1], 2), 3);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 5; k++)
                s += xv[i + 3 * j + 12 * k];
            /* p(j, i) = s(i, j); d loss / d x(i, j, k) = w(j, i). */
            tu_assert_near(dla_tensor_item(out[1], j + 4 * i), s, 1e-9);
            for (int k = 0; k < 5; k++)
                tu_assert_near(dla_tensor_item(out[2], i + 3 * j + 12 * k), wv[j + 4 * i], 1e-12);
        }
    dla_accel *af = dla_accelerate(permute_sum_model, NULL);
    for (int k = 0; k < 3; k++)
        assert_int_equal(tu_replay_differs(af, permute_sum_model, NULL, 2,
                                           (dla_tensor *[]){x, w}, 3), -1);
    dla_accel_free(af);
    /* Dims that are not singletons still need their entries, and a
     * formatted tensor's labelled singletons too. */
    dla_tensor *e = dla_permute(x, DLA_DIMS(2, 1));
    assert_int_equal(dla_tensor_status(e), DLA_ERR_INVALID_ARGUMENT);
    e = dla_permute(dla_zeros(DLA_F64, "SSCB", DLA_DIMS(2, 3, 1, 1)), DLA_DIMS(2, 1));
    assert_int_equal(dla_tensor_status(e), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
}

static void test_reshape_is_a_view_when_strides_allow(void **state)
{
    int64_t dims[3] = {4, 6, 5};
    double *h = random_doubles(120);
    dla_tensor *t = upload(h, "", 3, dims);
    dla_tensor *r = dla_reshape(t, "SSCB", DLA_DIMS(2, 2, 6, 5));
    int64_t rd[4] = {2, 2, 6, 5};
    hview hv = hv_dense(h, 4, rd);
    expect_view(r, &hv, 0);
    assert_string_equal(dla_tensor_format(r), "SSCB");
    assert_true(dla_tensor_is_contiguous(r));
    /* -1 infers a dim. */
    dla_tensor *r2 = dla_reshape(t, "", DLA_DIMS(-1, 5));
    assert_int_equal(dla_tensor_dim(r2, 1), 24);
    /* A slice along the last dim keeps whole pages: reshape without copy
     * merges dims 1 and 2, and the values still match. */
    dla_tensor *s = dla_slice(t, 3, 1, 2, DLA_END); /* 4x6x2, pages 1 and 3 */
    dla_tensor *rs = dla_reshape(s, "", DLA_DIMS(24, 2));
    hview sv = hv_dense(h, 2, (int64_t[]){24, 2});
    sv.off = 24;
    sv.strides[1] = 48;
    expect_view(rs, &sv, 0);
    assert_false(dla_tensor_is_contiguous(rs)); /* still a view on t */
    /* A transposed view cannot be reshaped without a copy: values must
     * still be right. */
    dla_tensor *p = dla_permute(t, DLA_DIMS(2, 1, 3));
    dla_tensor *rp = dla_reshape(p, "", DLA_DIMS(24, 5));
    double *hp = fetch(rp);
    for (int64_t i = 0; i < 24; i++) /* rp(i, k) = t(i / 6, i % 6, k) */
        for (int64_t k = 0; k < 5; k++)
            assert_true(hp[i + 24 * k] == h[(i / 6) + 4 * (i % 6) + 24 * k]);
    free(hp);
    dla_tensor *bad = dla_reshape(t, "", DLA_DIMS(7, 7));
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(bad), "cannot reshape 4x6x5 (120 elements) to 7x7"));
    /* A -1 that no whole size fits is named as such: the quotient rounded
     * down was taken, and the message named a 7x17 never asked for. */
    dla_tensor *badi = dla_reshape(t, "", DLA_DIMS(7, -1));
    assert_int_equal(dla_tensor_status(badi), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(badi), "cannot reshape 4x6x5 (120 elements) to 7x-1: "
                                                   "the other dims' product, 7, does not divide "
                                                   "120, so no size fits the -1 (dim 2)"));
    dla_tensor_release(badi);
    badi = dla_reshape(t, "", DLA_DIMS(-1, 0));
    assert_int_equal(dla_tensor_status(badi), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(badi), "the other dims' product is 0, so no size fits "
                                                   "the -1 (dim 1)"));
    dla_tensor_release(badi);
    dla_tensor *badf = dla_reshape(t, "CS", DLA_DIMS(12, 10));
    assert_int_equal(dla_tensor_status(badf), DLA_ERR_FORMAT);
    dla_tensor_release(badf);
    dla_tensor_release(bad);
    dla_tensor_release(rp);
    dla_tensor_release(p);
    dla_tensor_release(rs);
    dla_tensor_release(s);
    dla_tensor_release(r2);
    dla_tensor_release(r);
    dla_tensor_release(t);
    free(h);
}

static void test_a_view_keeps_its_storage_alive(void **state)
{
    double h[6] = {1, 2, 3, 4, 5, 6};
    dla_tensor *t = upload(h, "", 1, (int64_t[]){6});
    dla_tensor *s = dla_slice(t, 1, 3, 1, DLA_END);
    dla_tensor_release(t);
    double out[3];
    assert_int_equal(dla_tensor_to_host(s, out, sizeof out), DLA_OK);
    assert_true(out[0] == 4 && out[1] == 5 && out[2] == 6);
    assert_true(dla_tensor_retain(s) == s);
    dla_tensor_release(s);
    dla_tensor_release(s);
    dla_tensor_release(NULL);
}

/* ------------------------------------------------------------------ ops */

typedef double (*bfun)(double, double);
static double f_add(double a, double b) { return a + b; }
static double f_sub(double a, double b) { return a - b; }
static double f_mul(double a, double b) { return a * b; }
static double f_div(double a, double b) { return a / b; }
static double f_max(double a, double b) { return a > b ? a : b; }

static void test_binary_ops_broadcast_like_matlab(void **state)
{
    dla_tensor *(*ops[5])(dla_tensor *, dla_tensor *) = {dla_add, dla_sub, dla_mul, dla_div, dla_max2};
    bfun ref[5] = {f_add, f_sub, f_mul, f_div, f_max};
    for (int trial = 0; trial < 40; trial++) {
        int nd = (int)tu_int(1, 4);
        int64_t da[4], db[4], dz[4];
        for (int i = 0; i < nd; i++) {
            dz[i] = tu_int(1, 6);
            int which = (int)tu_int(0, 2);
            da[i] = which == 1 ? 1 : dz[i];
            db[i] = which == 2 ? 1 : dz[i];
        }
        int64_t na = 1, nb = 1;
        for (int i = 0; i < nd; i++) {
            na *= da[i];
            nb *= db[i];
        }
        double *ha = random_doubles(na), *hb = random_doubles(nb);
        for (int64_t i = 0; i < nb; i++)
            hb[i] += hb[i] >= 0 ? 0.5 : -0.5; /* keep division tame */
        dla_tensor *a = upload(ha, "", nd, da), *b = upload(hb, "", nd, db);
        int k = trial % 5;
        dla_tensor *z = ops[k](a, b);
        hview va = hv_dense(ha, nd, da), vb = hv_dense(hb, nd, db);
        double *hz = fetch(z);
        int64_t nz = 1;
        for (int i = 0; i < nd; i++)
            nz *= dz[i];
        assert_int_equal(dla_tensor_numel(z), nz);
        for (int64_t i = 0; i < nz; i++) {
            int64_t rem = i, ia = 0, ib = 0;
            for (int d = 0; d < nd; d++) {
                int64_t c = rem % dz[d];
                rem /= dz[d];
                ia += (da[d] == 1 ? 0 : c) * va.strides[d];
                ib += (db[d] == 1 ? 0 : c) * vb.strides[d];
            }
            assert_true(tu_close(hz[i], ref[k](ha[ia], hb[ib]), 1e-12));
        }
        free(hz);
        free(ha);
        free(hb);
        dla_tensor_release(z);
        dla_tensor_release(a);
        dla_tensor_release(b);
    }
}

static void test_binary_ops_read_strided_views(void **state)
{
    int64_t dims[3] = {9, 8, 4};
    double *h = random_doubles(288);
    dla_scope_begin();
    dla_tensor *t = upload(h, "", 3, dims);
    dla_tensor *s = dla_slice(t, 1, 2, 3, DLA_END);     /* 3x8x4 */
    dla_tensor *p = dla_permute(dla_slice(t, 2, 0, 2, 6), DLA_DIMS(1, 2, 3)); /* 9x3x4 */
    dla_tensor *s2 = dla_slice(p, 1, 0, 3, DLA_END);  /* 3x3x4 */
    dla_tensor *s3 = dla_slice(s, 2, 1, 3, DLA_END);  /* 3x3x4 */
    dla_tensor *z = dla_add(s2, s3);
    double *hz = fetch(z);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                double a = h[(3 * i) + 9 * (2 * j) + 72 * k];
                double b = h[(2 + 3 * i) + 9 * (1 + 3 * j) + 72 * k];
                assert_true(tu_close(hz[i + 3 * j + 9 * k], a + b, 1e-15));
            }
    free(hz);
    (void)z; (void)p;
    dla_scope_end();
    free(h);
}

static void test_mismatched_shapes_name_the_dims(void **state)
{
    dla_tensor *a = dla_ones(DLA_F32, "", DLA_DIMS(3, 4));
    dla_tensor *b = dla_ones(DLA_F32, "", DLA_DIMS(5, 4));
    dla_tensor *z = dla_add(a, b);
    assert_int_equal(dla_tensor_status(z), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(z), "dla_add: arguments a (3x4) and b (5x4): dim 1 is 3 against 5"));
    dla_tensor *c = dla_ones(DLA_F64, "", DLA_DIMS(3, 4));
    dla_tensor *w = dla_mul(a, c);
    assert_int_equal(dla_tensor_status(w), DLA_ERR_DTYPE);
    /* MATLAB's mean(pred == labels) is a double; here the logical must be
     * cast first, and the message says so. (In a scope: the test's other
     * tensors are released by hand, these by the scope.) */
    dla_scope_begin();
    dla_tensor *hit = dla_mean(dla_eq(a, a), 0, NULL);
    assert_int_equal(dla_tensor_status(hit), DLA_ERR_DTYPE);
    assert_non_null(strstr(dla_tensor_error(hit), "dla_mean: argument x: logical; reductions need "
                                                  "single or double: cast x first (dla_cast(x, "
                                                  "DLA_F64))"));
    assert_int_equal(dla_tensor_item(dla_sum(dla_cast(dla_eq(a, a), DLA_F64), 0, NULL), 0), 12);
    dla_scope_end();
    dla_tensor *f1 = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 4));
    dla_tensor *f2 = dla_ones(DLA_F32, "SC", DLA_DIMS(3, 4));
    dla_tensor *f = dla_add(f1, f2);
    assert_int_equal(dla_tensor_status(f), DLA_ERR_FORMAT);
    dla_tensor *g = dla_add(f1, a); /* unformatted operand takes the labels */
    assert_string_equal(dla_tensor_format(g), "CB");
    dla_tensor *list[] = {a, b, z, c, w, f1, f2, f, g};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++)
        dla_tensor_release(list[i]);
}

static dla_status add_and_gradients(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_add(in[0], in[1]);
    return dla_gradient(dla_sum(dla_mul(out[0], out[0]), 0, NULL), 2, in, &out[1]);
}

/* Dims of 1 past a format's labels are trailing singletons, as in MATLAB:
 * a sum over the last dim (3x2x1) met a "CB" 3x2 in dla_add, dla_gt and
 * dla_where with "the result has 3 dims but format "CB" labels only 2". */
static void test_trailing_singletons_meet_a_formatted_operand(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *f = dla_ones(DLA_F64, "CB", DLA_DIMS(3, 2));
    dla_tensor *s = dla_sum(dla_ones(DLA_F64, "", DLA_DIMS(3, 2, 4)), DLA_DIMS(3));
    assert_int_equal(dla_tensor_ndims(s), 3);
    dla_tensor *z = dla_add(f, s);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_string_equal(dla_tensor_format(z), "CB");
    assert_int_equal(dla_tensor_ndims(z), 2);
    assert_true(dla_tensor_item(z, 5) == 5);
    z = dla_gt(dla_ones(DLA_F64, "", DLA_DIMS(3, 1, 1, 1)), f);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_string_equal(dla_tensor_format(z), "CB");
    z = dla_where(dla_gt(s, f), s, f);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_true(dla_tensor_item(z, 0) == 4);
    /* Each gradient keeps its operand's dims. */
    dla_tensor *out[3];
    assert_int_equal(dla_feval(add_and_gradients, NULL, 2, (dla_tensor *[]){f, s}, 3, out),
                     DLA_OK);
    assert_int_equal(dla_tensor_ndims(out[2]), 3);
    assert_true(dla_tensor_item(out[2], 0) == 10);
    assert_string_equal(dla_tensor_format(out[1]), "CB");
    /* A dim past the labels that is not 1 is still refused. */
    z = dla_add(f, dla_ones(DLA_F64, "", DLA_DIMS(3, 2, 2)));
    assert_int_equal(dla_tensor_status(z), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_tensor_error(z), "the result has 3 dims but format \"CB\" labels "
                                                "only 2"));
    dla_scope_end();
}

static void test_unary_ops_match_libm(void **state)
{
    int64_t n = 257;
    double *h = random_doubles(n);
    dla_tensor *x = upload(h, "", 1, &n);
    dla_tensor *ax = dla_abs(x);
    struct { dla_tensor *(*op)(dla_tensor *); double (*ref)(double); int on_abs; } cases[] = {
        {dla_exp, exp, 0}, {dla_log, log, 1}, {dla_sqrt, sqrt, 1}, {dla_sin, sin, 0},
        {dla_cos, cos, 0}, {dla_tanh, tanh, 0}, {dla_abs, fabs, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        dla_tensor *y = cases[c].op(cases[c].on_abs ? ax : x);
        double *hy = fetch(y);
        for (int64_t i = 0; i < n; i++)
            assert_true(tu_close(hy[i], cases[c].ref(cases[c].on_abs ? fabs(h[i]) : h[i]), 1e-12));
        free(hy);
        dla_tensor_release(y);
    }
    dla_tensor *r = dla_relu(x), *s = dla_sigmoid(x), *ng = dla_neg(x), *af = dla_affine(x, 2.0, 0.5);
    double *hr = fetch(r), *hs = fetch(s), *hn = fetch(ng), *ha = fetch(af);
    for (int64_t i = 0; i < n; i++) {
        assert_true(hr[i] == (h[i] > 0 ? h[i] : 0));
        assert_true(tu_close(hs[i], 1.0 / (1.0 + exp(-h[i])), 1e-12));
        assert_true(hn[i] == -h[i]);
        assert_true(tu_close(ha[i], 2.0 * h[i] + 0.5, 1e-15));
    }
    free(hr);
    free(hs);
    free(hn);
    free(ha);
    dla_tensor_release(r);
    dla_tensor_release(s);
    dla_tensor_release(ng);
    dla_tensor_release(af);
    dla_tensor_release(ax);
    dla_tensor_release(x);
    free(h);
}

static void test_reductions_over_dim_sets(void **state)
{
    for (int trial = 0; trial < 24; trial++) {
        int nd = (int)tu_int(1, 4);
        int64_t dims[4];
        int64_t n = 1;
        for (int i = 0; i < nd; i++)
            n *= (dims[i] = tu_int(1, 7));
        double *h = random_doubles(n);
        dla_tensor *x = upload(h, nd == 4 ? "SSCB" : "", nd, dims);
        int64_t red[4];
        int nred = 0;
        int mask = (int)tu_int(0, (1 << nd) - 1);
        for (int i = 0; i < nd; i++)
            if (mask & (1 << i))
                red[nred++] = i + 1;
        int k = trial % 4;
        dla_tensor *y = k == 0 ? dla_sum(x, nred, red)
                        : k == 1 ? dla_mean(x, nred, red)
                        : k == 2 ? dla_max(x, nred, red)
                                 : dla_min(x, nred, red);
        assert_int_equal(dla_tensor_status(y), DLA_OK);
        assert_string_equal(dla_tensor_format(y), dla_tensor_format(x));
        int64_t od[4], on = 1;
        for (int i = 0; i < nd; i++)
            on *= (od[i] = (nred == 0 || (mask & (1 << i))) ? 1 : dims[i]);
        double *ref = malloc(sizeof(double) * (size_t)on);
        int64_t *cnt = calloc((size_t)on, sizeof *cnt);
        for (int64_t i = 0; i < n; i++) {
            int64_t rem = i, o = 0, s = 1;
            for (int d = 0; d < nd; d++) {
                int64_t c = rem % dims[d];
                rem /= dims[d];
                o += (od[d] == 1 ? 0 : c) * s;
                s *= od[d];
            }
            if (cnt[o]++ == 0)
                ref[o] = h[i];
            else if (k <= 1)
                ref[o] += h[i];
            else if (k == 2)
                ref[o] = h[i] > ref[o] ? h[i] : ref[o];
            else
                ref[o] = h[i] < ref[o] ? h[i] : ref[o];
        }
        double *hy = fetch(y);
        for (int64_t o = 0; o < on; o++)
            assert_true(tu_close(hy[o], k == 1 ? ref[o] / cnt[o] : ref[o], 1e-12));
        free(hy);
        free(ref);
        free(cnt);
        free(h);
        dla_tensor_release(y);
        dla_tensor_release(x);
    }
}

/* MATLAB's reductions over a dim of no elements: the sum is 0, the mean
 * NaN (0/0), and max and min, which have no value to give, are empty
 * there (max(zeros(0, 3)) is 0x3). max and min were refused ("has no
 * elements along dim 1"). Eagerly, through a gradient and replayed. */
static dla_status max_of_empty_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *m = dla_max(in[0], DLA_DIMS(1));
    out[0] = m;
    out[1] = dla_sum(dla_add(dla_sum(m, 0, NULL), dla_sum(dla_min(in[0], 0, NULL), 0, NULL)), 0,
                     NULL);
    return dla_gradient(out[1], 1, in, out + 2);
}

static void test_reductions_over_empty_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "", DLA_DIMS(0, 3));
    /* {op, dims asked for (0: all)}, and the dims MATLAB gives */
    const struct {
        int k, red;
        int64_t d0, d1;
    } cases[] = {{0, 1, 1, 3}, {1, 1, 1, 3}, {2, 1, 0, 3}, {3, 1, 0, 3}, {2, 2, 0, 1},
                 {3, 2, 0, 1}, {0, 0, 1, 1}, {1, 0, 1, 1}, {2, 0, 0, 1}, {3, 0, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int64_t red = cases[c].red;
        const int nred = red ? 1 : 0;
        const int k = cases[c].k;
        dla_tensor *y = k == 0 ? dla_sum(x, nred, &red)
                        : k == 1 ? dla_mean(x, nred, &red)
                        : k == 2 ? dla_max(x, nred, &red)
                                 : dla_min(x, nred, &red);
        if (dla_tensor_status(y) != DLA_OK)
            fail_msg("case %zu: %s", c, dla_tensor_error(y));
        assert_int_equal(dla_tensor_ndims(y), 2);
        assert_int_equal(dla_tensor_dim(y, 1), cases[c].d0);
        assert_int_equal(dla_tensor_dim(y, 2), cases[c].d1);
        for (int64_t i = 0; i < dla_tensor_numel(y); i++) {
            const double v = dla_tensor_item(y, i);
            assert_true(k == 0 ? v == 0 : isnan(v));
        }
    }
    /* Labels stay; the empty batch of a "CB" stays empty. */
    dla_tensor *cb = dla_min(dla_zeros(DLA_F64, "CB", DLA_DIMS(4, 0)), DLA_DIMS(2));
    assert_int_equal(dla_tensor_status(cb), DLA_OK);
    assert_string_equal(dla_tensor_format(cb), "CB");
    assert_int_equal(dla_tensor_dim(cb, 1), 4);
    assert_int_equal(dla_tensor_dim(cb, 2), 0);
    dla_accel *af = dla_accelerate(max_of_empty_loss, NULL);
    for (int call = 0; call < 4; call++) {
        dla_tensor *out[3];
        dla_status st = call == 0 ? dla_feval(max_of_empty_loss, NULL, 1, &x, 3, out)
                                  : dla_accel_feval(af, NULL, 1, &x, 3, out);
        if (st != DLA_OK)
            fail_msg("call %d: %s", call, dla_last_error());
        assert_int_equal(dla_tensor_dim(out[0], 1), 0);
        assert_int_equal(dla_tensor_dim(out[0], 2), 3);
        assert_true(dla_tensor_item(out[1], 0) == 0);
        assert_int_equal(dla_tensor_dim(out[2], 1), 0);
        assert_int_equal(dla_tensor_dim(out[2], 2), 3);
    }
    dla_accel_free(af);
    dla_scope_end();
}

/* Naive column-major C = op(A) * op(B) for one page. */
static void naive_gemm(const hview *a, int ta, const hview *b, int tb, int64_t pa, int64_t pb,
                       int64_t m, int64_t n, int64_t k, double *c)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t l = 0; l < k; l++) {
                int64_t ai = ta ? l : i, aj = ta ? i : l, bi = tb ? j : l, bj = tb ? l : j;
                s += a->data[a->off + ai * a->strides[0] + aj * a->strides[1] + pa] *
                     b->data[b->off + bi * b->strides[0] + bj * b->strides[1] + pb];
            }
            c[i + m * j] = s;
        }
}

static void test_mtimes_matches_a_naive_product(void **state)
{
    int64_t da[2] = {5, 7}, db[2] = {7, 3};
    double *ha = random_doubles(35), *hb = random_doubles(21);
    dla_tensor *a = upload(ha, "", 2, da), *b = upload(hb, "", 2, db);
    dla_tensor *c = dla_mtimes(a, b);
    assert_int_equal(dla_tensor_dim(c, 1), 5);
    assert_int_equal(dla_tensor_dim(c, 2), 3);
    hview va = hv_dense(ha, 2, da), vb = hv_dense(hb, 2, db);
    double ref[15];
    naive_gemm(&va, 0, &vb, 0, 0, 0, 5, 3, 7, ref);
    double *hc = fetch(c);
    for (int i = 0; i < 15; i++)
        assert_true(tu_close(hc[i], ref[i], 1e-12));
    free(hc);
    /* A transposed view goes in as it is (b' is 3x7, times a' 7x5). */
    dla_tensor *bt = dla_permute(b, DLA_DIMS(2, 1));
    dla_tensor *at = dla_permute(a, DLA_DIMS(2, 1));
    dla_tensor *ct = dla_mtimes(bt, at);
    double *hct = fetch(ct);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            assert_true(tu_close(hct[j + 3 * i], ref[i + 5 * j], 1e-12));
    free(hct);
    dla_tensor *bad = dla_mtimes(a, a);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(bad), "inner dims differ"));
    dla_tensor_release(bad);
    /* Trailing dims of 1 leave a matrix a matrix, as in MATLAB (a 7x3x1,
     * the sum over dim 3 of a 7x3x2, was refused: "must be matrices"),
     * and the product is 2-D; a real third dim is still refused. */
    dla_tensor *b1 = dla_reshape(b, "", 4, (const int64_t[]){7, 3, 1, 1});
    dla_tensor *c1 = dla_mtimes(a, b1);
    assert_int_equal(dla_tensor_status(c1), DLA_OK);
    assert_int_equal(dla_tensor_ndims(c1), 2);
    double *hc1 = fetch(c1);
    for (int i = 0; i < 15; i++)
        assert_true(tu_close(hc1[i], ref[i], 1e-12));
    free(hc1);
    dla_tensor_release(c1);
    dla_tensor_release(b1);
    dla_tensor *b2 = dla_cat(3, 2, (dla_tensor *[]){b, b});
    bad = dla_mtimes(a, b2);
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(bad), "must be matrices"));
    dla_tensor_release(bad);
    dla_tensor_release(b2);
    dla_tensor_release(ct);
    dla_tensor_release(at);
    dla_tensor_release(bt);
    dla_tensor_release(c);
    dla_tensor_release(a);
    dla_tensor_release(b);
    free(ha);
    free(hb);
}

static void test_pagemtimes_transposes_and_broadcasts_pages(void **state)
{
    for (int trial = 0; trial < 16; trial++) {
        int ta = trial & 1, tb = (trial >> 1) & 1;
        int64_t m = tu_int(1, 6), n = tu_int(1, 6), k = tu_int(1, 6), p1 = tu_int(1, 3), p2 = tu_int(2, 3);
        int bcast = (trial >> 2) & 3; /* 0 none, 1 a has one page, 2 b one page, 3 mixed */
        int64_t da[4] = {ta ? k : m, ta ? m : k, bcast == 1 ? 1 : p1, bcast == 1 || bcast == 3 ? 1 : p2};
        int64_t db[4] = {tb ? n : k, tb ? k : n, bcast == 2 || bcast == 3 ? 1 : p1, bcast == 2 ? 1 : p2};
        int64_t na = da[0] * da[1] * da[2] * da[3], nb = db[0] * db[1] * db[2] * db[3];
        double *ha = random_doubles(na), *hb = random_doubles(nb);
        dla_tensor *a = upload(ha, "", 4, da), *b = upload(hb, "", 4, db);
        dla_tensor *c = dla_pagemtimes(a, ta ? "transpose" : "none", b, tb ? "transpose" : "none");
        assert_int_equal(dla_tensor_status(c), DLA_OK);
        assert_int_equal(dla_tensor_dim(c, 1), m);
        assert_int_equal(dla_tensor_dim(c, 2), n);
        assert_int_equal(dla_tensor_dim(c, 3), p1);
        assert_int_equal(dla_tensor_dim(c, 4), p2);
        hview va = hv_dense(ha, 4, da), vb = hv_dense(hb, 4, db);
        double *hc = fetch(c), *ref = malloc(sizeof(double) * (size_t)(m * n));
        for (int64_t i = 0; i < p1; i++)
            for (int64_t j = 0; j < p2; j++) {
                int64_t pa = (da[2] == 1 ? 0 : i) * va.strides[2] + (da[3] == 1 ? 0 : j) * va.strides[3];
                int64_t pb = (db[2] == 1 ? 0 : i) * vb.strides[2] + (db[3] == 1 ? 0 : j) * vb.strides[3];
                naive_gemm(&va, ta, &vb, tb, pa, pb, m, n, k, ref);
                for (int64_t e = 0; e < m * n; e++)
                    assert_true(tu_close(hc[e + m * n * (i + p1 * j)], ref[e], 1e-12));
            }
        free(ref);
        free(hc);
        free(ha);
        free(hb);
        dla_tensor_release(c);
        dla_tensor_release(a);
        dla_tensor_release(b);
    }
    dla_tensor *a = dla_ones(DLA_F32, "", DLA_DIMS(2, 2));
    dla_tensor *bad = dla_pagemtimes(a, "flip", a, "none");
    assert_int_equal(dla_tensor_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(bad), "argument transa: \"flip\""));
    dla_tensor_release(bad);
    dla_tensor_release(a);
}

static void test_cast_converts_between_dtypes(void **state)
{
    const double h[4] = {-1.75, 0.0, 2.5, 300.0};
    dla_tensor *t = upload(h, "", 1, (int64_t[]){4});
    dla_tensor *i = dla_cast(t, DLA_I32);
    int32_t hi[4];
    assert_int_equal(dla_tensor_to_host(i, hi, sizeof hi), DLA_OK);
    assert_int_equal(hi[0], -1);
    assert_int_equal(hi[2], 2);
    assert_int_equal(hi[3], 300);
    dla_tensor *b = dla_cast(t, DLA_BOOL);
    uint8_t hb[4];
    assert_int_equal(dla_tensor_to_host(b, hb, sizeof hb), DLA_OK);
    assert_true(hb[0] == 1 && hb[1] == 0 && hb[2] == 1 && hb[3] == 1);
    dla_tensor_release(b);
    dla_tensor_release(i);
    dla_tensor_release(t);
}

/* ------------------------------------------------- sticky errors, scopes */

/* A message that quotes the last error keeps it whole: dla_set_error used
 * to format straight into the buffer it was reading ("no device: no
 * device: are/dlaccel/plugins.d" from dla_training_device). */
static void test_a_message_quoting_the_last_error_keeps_it_whole(void **state)
{
    (void)state;
    dla_set_error(DLA_ERR_NO_DEVICE, "inner: %s", "no usable plugin manifest in /usr/share");
    dla_set_error(DLA_ERR_NO_DEVICE, "outer: %s", dla_last_error());
    assert_string_equal(dla_last_error(), "outer: inner: no usable plugin manifest in /usr/share");
    assert_int_equal(dla_last_status(), DLA_ERR_NO_DEVICE);
    dla_clear_error();
}

static void test_errors_stick_through_a_chain_of_ops(void **state)
{
    dla_clear_error();
    dla_tensor *d;
    const char *first;
    dla_scope_begin();
    dla_tensor *a = dla_ones(DLA_F32, "", DLA_DIMS(3, 4));
    dla_tensor *b = dla_ones(DLA_F32, "", DLA_DIMS(4, 4));
    dla_tensor *bad = dla_add(a, b);          /* fails here */
    dla_tensor *c = dla_exp(dla_mul(bad, a)); /* passes the error on */
    d = dla_keep(dla_sum(dla_reshape(c, "", DLA_DIMS(2, 6)), DLA_DIMS(1)));
    first = dla_tensor_error(bad);
    assert_int_equal(dla_tensor_status(d), DLA_ERR_SHAPE);
    assert_string_equal(dla_tensor_error(d), first);
    /* An unrelated op in between does not hide what d carries. */
    dla_tensor *e = dla_ones(DLA_F32, "", DLA_DIMS(-2));
    assert_int_equal(dla_tensor_status(e), DLA_ERR_INVALID_ARGUMENT);
    dla_scope_end();
    assert_int_equal(dla_tensor_status(d), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(d), "dla_add: arguments a (3x4) and b (4x4)"));
    float host[12];
    assert_int_equal(dla_tensor_to_host(d, host, sizeof host), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_add"));
    assert_int_equal(dla_tensor_numel(d), 0);
    dla_tensor_release(d);
    /* NULL is an error too, never a crash. */
    dla_tensor *n = dla_exp(NULL);
    assert_int_equal(dla_tensor_status(n), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor_release(n);
}

static void test_scope_releases_temporaries_and_keep_moves_them_out(void **state)
{
    dla_tensor *kept;
    dla_scope_begin();
    {
        dla_tensor *x = dla_rand(DLA_F32, "CB", DLA_DIMS(8, 4));
        dla_tensor *y = dla_exp(dla_add(x, x));
        dla_scope_begin();
        dla_tensor *inner = dla_sum(y, DLA_DIMS(1));
        kept = dla_keep(dla_mul(inner, inner)); /* to the outer scope */
        dla_scope_end();
        kept = dla_keep(kept); /* and out to us */
        assert_int_equal(dla_tensor_status(kept), DLA_OK);
    }
    dla_scope_end();
    assert_int_equal(dla_tensor_numel(kept), 4);
    assert_int_equal(dla_tensor_status(kept), DLA_OK);
    dla_tensor_release(kept);
}

/* ------------------------------------------------------------ devices */

static void test_tensors_move_between_every_pair_of_devices(void **state)
{
    int n = dla_device_count();
    assert_true(n >= 1);
    int64_t dims[3] = {5, 4, 3};
    double *h = random_doubles(60);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            dla_device *from = dla_device_at(i), *to = dla_device_at(j);
            dla_device_set_current(from);
            dla_tensor *t = upload(h, "SSC", 3, dims);
            dla_tensor *s = dla_slice(t, 2, 1, 2, DLA_END); /* strided source */
            dla_tensor *m = dla_tensor_to_device(s, to);
            assert_int_equal(dla_tensor_status(m), DLA_OK);
            assert_ptr_equal(dla_tensor_device(m), to);
            assert_string_equal(dla_tensor_format(m), "SSC");
            hview hv = hv_dense(h, 3, dims);
            hv.off = 5;
            hv.dims[1] = 2;
            hv.strides[1] = 10;
            expect_view(m, &hv, 0);
            dla_tensor_release(m);
            dla_tensor_release(s);
            dla_tensor_release(t);
        }
    dla_device_set_current(NULL);
    free(h);
}

static void test_describe_names_dims_type_format_device(void **state)
{
    dla_tensor *t = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 128));
    char buf[128], want[128];
    dla_tensor_describe(t, buf, sizeof buf);
    snprintf(want, sizeof want, "28x28x1x128 single SSCB on %s", dla_device_name(dla_device_current()));
    assert_string_equal(buf, want);
    dla_tensor_release(t);
}

/* dla_tensor_dims with no buffer gives the count (it copied to NULL and
 * crashed). */
static void test_dims_into_no_buffer_is_the_count(void **state)
{
    (void)state;
    dla_tensor *t = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 128));
    assert_int_equal(dla_tensor_dims(t, NULL), 4);
    int64_t dims[DLA_MAX_DIMS];
    assert_int_equal(dla_tensor_dims(t, dims), 4);
    assert_int_equal(dims[3], 128);
    dla_tensor_release(t);
}

/* ------------------------------------------------- handle checks (issue 16) */

static void test_releasing_a_tensor_twice_is_refused_and_logged(void **state)
{
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(3, 4));
    dla_tensor_release(t);
    dla_clear_error();
    dla_tensor_release(t); /* passed in silence before (an invalid free) */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_tensor_release"));
    assert_non_null(strstr(dla_last_error(), "released already"));
    /* Retaining it does not bring it back. */
    dla_clear_error();
    dla_tensor_retain(t);
    assert_non_null(strstr(dla_last_error(), "dla_tensor_retain"));
}

static void test_a_stale_tensor_is_caught_after_a_thousand_releases(void **state)
{
    /* Within the quarantine (1024 tensor headers, docs/checks.md), a stale
     * handle reads "released" even after the allocator could have handed
     * its memory to the tensors made since: before, the next tensor took
     * the same block at once, and the stale release freed that one. */
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(5));
    dla_tensor_release(t);
    dla_tensor *live = dla_ones(DLA_F32, "", DLA_DIMS(5));
    for (int i = 0; i < 1000; i++)
        dla_tensor_release(dla_zeros(DLA_F32, "", DLA_DIMS(2)));
    dla_clear_error();
    dla_tensor_release(t);
    assert_non_null(strstr(dla_last_error(), "released already"));
    float h[5];
    assert_int_equal(dla_tensor_to_host(live, h, sizeof h), DLA_OK);
    assert_true(h[4] == 1.0f);
    dla_tensor_release(live);
}

static void test_releasing_a_tensor_a_scope_owns_is_refused(void **state)
{
    dla_scope_begin();
    dla_tensor *t = dla_ones(DLA_F64, "", DLA_DIMS(2, 3));
    dla_clear_error();
    dla_tensor_release(t); /* freed it before: the scope then freed it again */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "belongs to a scope"));
    assert_non_null(strstr(dla_last_error(), "2x3"));
    /* Still the scope's and still usable. */
    double h[6];
    assert_int_equal(dla_tensor_to_host(t, h, sizeof h), DLA_OK);
    assert_true(h[5] == 1.0);
    /* A reference of one's own may be dropped, the scope's may not. */
    dla_tensor_retain(t);
    dla_clear_error();
    dla_tensor_release(t);
    assert_int_equal(dla_last_status(), DLA_OK);
    dla_tensor_release(t);
    assert_non_null(strstr(dla_last_error(), "belongs to a scope"));
    /* dla_keep hands it over; then it is the caller's to release. */
    dla_tensor *k = dla_keep(dla_ones(DLA_F32, "", DLA_DIMS(2)));
    dla_scope_end();
    dla_clear_error();
    dla_tensor_release(k);
    assert_int_equal(dla_last_status(), DLA_OK);
}

static void test_a_tensor_used_after_its_scope_ended_is_an_error(void **state)
{
    dla_scope_begin();
    dla_tensor *t = dla_ones(DLA_F32, "", DLA_DIMS(4));
    dla_scope_end();
    /* Read freed memory before, and returned whatever it found there. */
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(t), "released tensor"));
    assert_int_equal(dla_tensor_numel(t), 0);
    dla_tensor *u = dla_add(t, t);
    assert_int_equal(dla_tensor_status(u), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(u), "released tensor"));
    assert_ptr_not_equal(u, t);
    dla_tensor_release(u);
    dla_tensor *r = dla_reshape(t, "", DLA_DIMS(2, 2));
    assert_int_equal(dla_tensor_status(r), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor_release(r);
    float h[4];
    assert_int_not_equal(dla_tensor_to_host(t, h, sizeof h), DLA_OK);
}

static void test_an_extra_scope_end_is_logged(void **state)
{
    dla_scope_begin();
    dla_scope_end();
    dla_clear_error();
    dla_scope_end(); /* passed in silence before */
    assert_int_equal(dla_last_status(), DLA_ERR_STATE);
    assert_non_null(strstr(dla_last_error(), "dla_scope_end: no scope is open"));
    /* Scopes still work after it. */
    dla_scope_begin();
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(2));
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    dla_scope_end();
}

/* dla_scope_depth counts every dla_scope_begin not yet ended, those
 * refused beyond 64 too, so ending that many closes them all. */
static void test_scope_depth_counts_the_open_scopes(void **state)
{
    assert_int_equal(dla_scope_depth(), 0); /* tu_teardown closed any left before */
    dla_scope_begin();
    dla_scope_begin();
    assert_int_equal(dla_scope_depth(), 2);
    dla_scope_end();
    assert_int_equal(dla_scope_depth(), 1);
    for (int i = 0; i < 70; i++) /* six beyond the limit of 64, refused */
        dla_scope_begin();
    assert_int_equal(dla_scope_depth(), 71);
    for (int i = 0; i < 71; i++)
        dla_scope_end();
    assert_int_equal(dla_scope_depth(), 0);
    dla_clear_error();
    dla_scope_end(); /* one too many: logged, and the depth stays 0 */
    assert_int_equal(dla_last_status(), DLA_ERR_STATE);
    assert_int_equal(dla_scope_depth(), 0);
}

/* ------------------------------------ element counts that overflow (issue 17) */

static void test_dims_whose_count_overflows_are_refused_by_name(void **state)
{
    const int64_t big = (int64_t)1 << 32;
    /* 2^64 elements wrapped to 0: status OK, and reductions read past the
     * one-byte block. */
    dla_tensor *t = dla_zeros(DLA_F32, "", DLA_DIMS(big, big));
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(t), "dla_zeros: dims 4294967296x4294967296: too many "
                                                "elements"));
    dla_tensor_release(t);
    /* A count that wrapped negative said "-N elements". */
    t = dla_ones(DLA_F32, "", DLA_DIMS(big, big / 2, 3));
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(t), "dla_ones: dims 4294967296x2147483648x3: too many"));
    dla_tensor_release(t);
    float one = 1;
    t = dla_tensor_from_host(&one, DLA_F32, "", DLA_DIMS(big, big, 1));
    assert_non_null(strstr(dla_tensor_error(t), "dla_tensor_from_host: dims 4294967296x4294967296x1"));
    dla_tensor_release(t);
    /* Elements that fit, bytes that do not. */
    t = dla_rand(DLA_F64, "", DLA_DIMS((int64_t)1 << 31, (int64_t)1 << 31));
    assert_int_equal(dla_tensor_status(t), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(t), "dla_rand: dims 2147483648x2147483648: "
                                                "4611686018427387904 elements of double are more bytes"));
    dla_tensor_release(t);
    /* A zero dim makes zero elements, however large the others. */
    t = dla_zeros(DLA_F32, "", DLA_DIMS(big, big, 0));
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_numel(t), 0);
    /* Reshaping an empty tensor to dims whose count wraps to 0 made a
     * 2^32 x 2^32 tensor on no memory. */
    dla_tensor *r = dla_reshape(t, "", DLA_DIMS(big, big));
    assert_int_equal(dla_tensor_status(r), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(r), "dla_reshape: dims 4294967296x4294967296: too many"));
    dla_tensor_release(r);
    dla_tensor_release(t);
}

static dla_status double_it(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_add(in[0], in[0]);
    return dla_tensor_status(out[0]);
}

static void test_an_accelerated_function_freed_twice_or_used_after_is_refused(void **state)
{
    dla_accel *af = dla_accelerate(double_it, NULL);
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "", DLA_DIMS(3));
    dla_tensor *y = NULL;
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    dla_accel_free(af);
    /* Both read freed memory before; the second free freed it again. */
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_accel_call"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_int_equal(dla_tensor_status(y), DLA_ERR_INVALID_ARGUMENT);
    dla_clear_error();
    dla_accel_free(af);
    assert_non_null(strstr(dla_last_error(), "dla_accel_free"));
    dla_scope_end();
}

static void test_a_trace_released_twice_or_used_after_is_refused(void **state)
{
    dla_accel *af = dla_accelerate(double_it, NULL);
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "", DLA_DIMS(3));
    dla_tensor *y = NULL;
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    dla_accel_free(af); /* the handle now holds the last reference */
    assert_int_equal(dla_trace_replay(t, 1, &x, 1, &y), DLA_OK);
    dla_trace_release(t);
    assert_int_equal(dla_trace_replay(t, 1, &x, 1, &y), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_trace_replay"));
    assert_non_null(strstr(dla_last_error(), "released already"));
    dla_clear_error();
    dla_trace_release(t); /* its count went below zero before, and nothing was said */
    assert_non_null(strstr(dla_last_error(), "dla_trace_release"));
    dla_scope_end();
}

/* Logical data from the host is 0 or 1 whatever nonzero byte held it:
 * 2 and 255 stayed, cast to 2 and 255, and compared unequal to 1. */
static void test_logical_data_from_the_host_is_zero_or_one(void **state)
{
    (void)state;
    dla_scope_begin();
    const unsigned char raw[4] = {0, 1, 2, 255};
    dla_tensor *b = dla_tensor_from_host(raw, DLA_BOOL, "", DLA_DIMS(4));
    dla_tensor *f = dla_cast(b, DLA_F32);
    const double want[4] = {0, 1, 1, 1};
    for (int i = 0; i < 4; i++)
        assert_true(dla_tensor_item(f, i) == want[i]);
    dla_tensor *ones = dla_tensor_from_host((const unsigned char[]){1, 1, 1, 1}, DLA_BOOL, "",
                                            DLA_DIMS(4));
    dla_tensor *eq = dla_cast(dla_eq(b, ones), DLA_F32);
    for (int i = 0; i < 4; i++)
        assert_true(dla_tensor_item(eq, i) == want[i]);
    dla_scope_end();
}

/* Host memory with any request of 1 GiB or more refused (a sanitizer
 * would abort on the terabytes asked for below rather than refuse). */
static void *no_gigabytes(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size >= ((size_t)1 << 30))
        return NULL;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, size);
}

/* A result the device cannot hold is an error tensor that names the op,
 * the bytes and the dims, like any other error: out of memory alone was
 * the one shared tensor saying "out of memory" (dla_sum over the channels
 * of a 0 x 2^40 "CB", whose result is 1 x 2^40). */
static void test_out_of_memory_names_the_op_and_the_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "CB", DLA_DIMS(0, (int64_t)1 << 40));
    assert_int_equal(dla_tensor_status(x), DLA_OK);
    dla_set_allocator(no_gigabytes, NULL);
    dla_tensor *s = dla_sum(x, 1, (const int64_t[]){1});
    dla_tensor *z = dla_zeros(DLA_F64, "", DLA_DIMS(3, (int64_t)1 << 40));
    dla_set_allocator(NULL, NULL);
    assert_int_equal(dla_tensor_status(s), DLA_ERR_OUT_OF_MEMORY);
    if (!strstr(dla_tensor_error(s), "dla_sum: cannot allocate 4398046511104 bytes for "
                                     "1x1099511627776 single"))
        fail_msg("dla_sum: \"%s\"", dla_tensor_error(s));
    assert_int_equal(dla_tensor_status(z), DLA_ERR_OUT_OF_MEMORY);
    if (!strstr(dla_tensor_error(z), "dla_zeros: cannot allocate 26388279066624 bytes for "
                                     "3x1099511627776 double"))
        fail_msg("dla_zeros: \"%s\"", dla_tensor_error(z));
    /* The error passes on through later ops, message and all. */
    dla_tensor *e = dla_exp(s);
    assert_int_equal(dla_tensor_status(e), DLA_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(dla_tensor_error(e), "dla_sum: cannot allocate"));
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_version_and_status_strings),
        TU_TEST(test_device_is_the_selected_one),
        TU_TEST(test_host_data_round_trips_in_every_dtype),
        TU_TEST(test_to_host_refuses_a_short_buffer),
        TU_TEST(test_item_of_no_element_says_why),
        TU_TEST(test_zeros_ones_full_fill_every_element),
        TU_TEST(test_bad_dims_are_refused_with_the_argument_named),
        TU_TEST(test_rand_matches_the_philox_known_answer),
        TU_TEST(test_same_seed_gives_the_same_numbers),
        TU_TEST(test_rand_and_randn_have_the_right_distribution),
        TU_TEST(test_slice_selects_start_step_stop),
        TU_TEST(test_permute_moves_dims_and_their_labels),
        TU_TEST(test_squeeze_drops_singletons_and_their_labels),
        TU_TEST(test_squeeze_leaves_a_row_vector_a_row),
        TU_TEST(test_permute_takes_an_order_without_trailing_singletons),
        TU_TEST(test_reshape_is_a_view_when_strides_allow),
        TU_TEST(test_a_view_keeps_its_storage_alive),
        TU_TEST(test_binary_ops_broadcast_like_matlab),
        TU_TEST(test_binary_ops_read_strided_views),
        TU_TEST(test_mismatched_shapes_name_the_dims),
        TU_TEST(test_trailing_singletons_meet_a_formatted_operand),
        TU_TEST(test_unary_ops_match_libm),
        TU_TEST(test_reductions_over_dim_sets),
        TU_TEST(test_reductions_over_empty_dims),
        TU_TEST(test_mtimes_matches_a_naive_product),
        TU_TEST(test_pagemtimes_transposes_and_broadcasts_pages),
        TU_TEST(test_cast_converts_between_dtypes),
        TU_TEST(test_a_message_quoting_the_last_error_keeps_it_whole),
        TU_TEST(test_errors_stick_through_a_chain_of_ops),
        TU_TEST(test_scope_releases_temporaries_and_keep_moves_them_out),
        TU_TEST(test_tensors_move_between_every_pair_of_devices),
        TU_TEST(test_describe_names_dims_type_format_device),
        TU_TEST(test_dims_into_no_buffer_is_the_count),
        TU_TEST(test_releasing_a_tensor_twice_is_refused_and_logged),
        TU_TEST(test_a_stale_tensor_is_caught_after_a_thousand_releases),
        TU_TEST(test_releasing_a_tensor_a_scope_owns_is_refused),
        TU_TEST(test_a_tensor_used_after_its_scope_ended_is_an_error),
        TU_TEST(test_an_extra_scope_end_is_logged),
        TU_TEST(test_scope_depth_counts_the_open_scopes),
        TU_TEST(test_dims_whose_count_overflows_are_refused_by_name),
        TU_TEST(test_an_accelerated_function_freed_twice_or_used_after_is_refused),
        TU_TEST(test_a_trace_released_twice_or_used_after_is_refused),
        TU_TEST(test_logical_data_from_the_host_is_zero_or_one),
        TU_TEST(test_out_of_memory_names_the_op_and_the_dims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

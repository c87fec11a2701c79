/*
 * test_shape.c - concatenation, padding and indexing: values against naive
 * loops on the host, finite-difference gradients in float64, and errors.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gradcheck.h"

static double *fetch(dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    dla_scope_begin();
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    assert_int_equal(dla_tensor_to_host(d, out, sizeof(double) * (size_t)n), DLA_OK);
    dla_scope_end();
    return out;
}

/* A random double tensor and its host copy (caller frees *host). */
static dla_tensor *rnd(const char *fmt, int nd, const int64_t *dims, double **host)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        h[i] = tu_unit() * 2 - 1;
    dla_tensor *t = dla_tensor_from_host(h, DLA_F64, fmt, nd, dims);
    if (host)
        *host = h;
    else
        free(h);
    return t;
}

/* Linear index of coordinates c in dims (column-major). */
static int64_t lin(int nd, const int64_t *dims, const int64_t *c)
{
    int64_t i = 0, s = 1;
    for (int d = 0; d < nd; d++) {
        i += c[d] * s;
        s *= dims[d];
    }
    return i;
}

static void coords(int64_t i, int nd, const int64_t *dims, int64_t *c)
{
    for (int d = 0; d < nd; d++) {
        c[d] = i % dims[d];
        i /= dims[d];
    }
}

#define assert_error_says(t, status, text)                                                         \
    do {                                                                                           \
        assert_int_equal(dla_tensor_status(t), status);                                            \
        if (!strstr(dla_tensor_error(t), text))                                                    \
            fail_msg("error \"%s\" does not say \"%s\"", dla_tensor_error(t), text);               \
    } while (0)

/* ------------------------------------------------------------------ cat */

/* Concatenates n host arrays (each with dims[k]) along dim (0-based) the
 * naive way and compares with z. */
static void expect_cat(dla_tensor *z, int n, double **h, const int64_t (*dims)[4], int nd, int dim)
{
    int64_t zd[4];
    for (int d = 0; d < nd; d++)
        zd[d] = dims[0][d];
    zd[dim] = 0;
    for (int k = 0; k < n; k++)
        zd[dim] += dims[k][dim];
    assert_int_equal(dla_tensor_numel(z), zd[0] * zd[1] * zd[2] * zd[3]);
    for (int d = 0; d < nd; d++)
        assert_int_equal(dla_tensor_dim(z, d + 1), zd[d]);
    double *v = fetch(z);
    for (int64_t i = 0; i < dla_tensor_numel(z); i++) {
        int64_t c[4];
        coords(i, nd, zd, c);
        int k = 0;
        while (c[dim] >= dims[k][dim])
            c[dim] -= dims[k++][dim];
        double want = h[k][lin(nd, dims[k], c)];
        if (v[i] != want)
            fail_msg("cat along %d: element %lld is %g, want %g", dim + 1, (long long)i, v[i], want);
    }
    free(v);
}

static void test_cat_joins_along_each_dim_as_a_naive_loop(void **state)
{
    (void)state;
    for (int dim = 0; dim < 4; dim++) {
        dla_scope_begin();
        int64_t dims[3][4];
        double *h[3];
        dla_tensor *t[3];
        for (int k = 0; k < 3; k++) {
            int64_t base[4] = {3, 2, 4, 2};
            base[dim] = k + 1; /* sizes 1, 2, 3 along dim */
            memcpy(dims[k], base, sizeof base);
            t[k] = rnd("SSCB", 4, dims[k], &h[k]);
        }
        /* A strided view in (every other row of a bigger tensor): cat
         * copies what it sees. */
        int64_t big[4];
        memcpy(big, dims[1], sizeof big);
        big[0] *= 2;
        double *hb;
        t[1] = dla_slice(rnd("SSCB", 4, big, &hb), 1, 1, 2, DLA_END);
        for (int64_t i = 0; i < big[0] * big[1] * big[2] * big[3] / 2; i++)
            h[1][i] = hb[2 * i + 1];
        free(hb);
        dla_tensor *z = dla_cat(dim + 1, 3, t);
        assert_int_equal(dla_tensor_status(z), DLA_OK);
        assert_string_equal(dla_tensor_format(z), "SSCB");
        expect_cat(z, 3, h, (const int64_t(*)[4])dims, 4, dim);
        for (int k = 0; k < 3; k++)
            free(h[k]);
        dla_scope_end();
    }
}

static void test_cat_stacks_matrices_along_a_new_dim(void **state)
{
    (void)state;
    dla_scope_begin();
    double *ha, *hb;
    dla_tensor *a = rnd("", 2, (const int64_t[]){2, 3}, &ha);
    dla_tensor *b = rnd("", 2, (const int64_t[]){2, 3}, &hb);
    dla_tensor *z = dla_cat(3, 2, (dla_tensor *[]){a, b});
    assert_int_equal(dla_tensor_ndims(z), 3);
    assert_int_equal(dla_tensor_dim(z, 3), 2);
    double *v = fetch(z);
    for (int i = 0; i < 6; i++) {
        assert_true(v[i] == ha[i]);
        assert_true(v[6 + i] == hb[i]);
    }
    free(v);
    free(ha);
    free(hb);
    dla_scope_end();
}

/* MATLAB's concatenation skips []: Y = []; Y = cat(3, Y, y) grows Y from
 * nothing. dla_cat refused the 0x0 ("dim 1 differs (only dim 3 may)"). */
static dla_tensor *cat_with_empties_fn(void *ctx, dla_tensor *const *in)
{
    dla_tensor *e = dla_zeros(DLA_F64, "", DLA_DIMS(0, 0));
    return dla_cat(3, 4, (dla_tensor *[]){e, in[0], e, in[1]});
}

static void test_cat_skips_matlab_empties(void **state)
{
    (void)state;
    dla_scope_begin();
    double *ha, *hb;
    dla_tensor *a = rnd("", 2, (const int64_t[]){2, 3}, &ha);
    dla_tensor *b = rnd("", 2, (const int64_t[]){2, 3}, &hb);
    dla_tensor *e = dla_zeros(DLA_F64, "", DLA_DIMS(0, 0));
    dla_tensor *z = cat_with_empties_fn(NULL, (dla_tensor *[]){a, b});
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_int_equal(dla_tensor_ndims(z), 3);
    assert_int_equal(dla_tensor_dim(z, 3), 2);
    double *v = fetch(z);
    for (int i = 0; i < 6; i++) {
        assert_true(v[i] == ha[i]);
        assert_true(v[6 + i] == hb[i]);
    }
    free(v);
    /* One left: a copy of it; formatted ones keep their format. */
    z = dla_cat(2, 2, (dla_tensor *[]){e, a});
    assert_int_equal(dla_tensor_ndims(z), 2);
    assert_int_equal(dla_tensor_dim(z, 2), 3);
    dla_tensor *f = dla_reshape(a, "CB", DLA_DIMS(2, 3));
    z = dla_cat(2, 3, (dla_tensor *[]){f, e, f});
    assert_string_equal(dla_tensor_format(z), "CB");
    assert_int_equal(dla_tensor_dim(z, 2), 6);
    /* Only [] left: as before, [] along dim 1. An empty that is not 0x0
     * still has to fit, and errors name the tensors by their places. */
    z = dla_cat(1, 2, (dla_tensor *[]){e, e});
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_int_equal(dla_tensor_numel(z), 0);
    dla_tensor *e03 = dla_zeros(DLA_F64, "", DLA_DIMS(0, 3));
    z = dla_cat(2, 2, (dla_tensor *[]){e03, a});
    assert_int_equal(dla_tensor_status(z), DLA_ERR_SHAPE);
    z = dla_cat(2, 3, (dla_tensor *[]){e, a, dla_zeros(DLA_F64, "", DLA_DIMS(4, 1))});
    assert_int_equal(dla_tensor_status(z), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_tensor_error(z), "tensors[2]: 4x1 against tensors[1]'s 2x3"));
    gc_check(cat_with_empties_fn, NULL, 2, (dla_tensor *[]){a, b}, (const int[]){1, 1}, 1e-8);
    free(ha);
    free(hb);
    dla_scope_end();
}

static void test_cat_of_more_tensors_than_a_node_holds(void **state)
{
    (void)state;
    dla_scope_begin();
    enum { N = 20 };
    dla_tensor *t[N];
    double *h[N];
    int64_t dims[N][4];
    for (int k = 0; k < N; k++) {
        int64_t d[4] = {2, 1 + k % 3, 1, 1};
        memcpy(dims[k], d, sizeof d);
        t[k] = rnd("CB", 2, d, &h[k]);
    }
    dla_tensor *z = dla_cat(2, N, t);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    expect_cat(z, N, h, (const int64_t(*)[4])dims, 4, 1);
    for (int k = 0; k < N; k++)
        free(h[k]);
    dla_scope_end();
}

typedef struct cat_ctx {
    int dim, n;
} cat_ctx;

static dla_tensor *cat_fn(void *ctx, dla_tensor *const *in)
{
    cat_ctx *c = ctx;
    return dla_cat(c->dim, c->n, in);
}

static void test_cat_gradients_are_slices_of_the_result_gradient(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *in[3] = {rnd("SCB", 3, (const int64_t[]){2, 3, 2}, NULL),
                         rnd("SCB", 3, (const int64_t[]){2, 1, 2}, NULL),
                         rnd("SCB", 3, (const int64_t[]){2, 4, 2}, NULL)};
    gc_check(cat_fn, &(cat_ctx){2, 3}, 3, in, (const int[]){1, 1, 1}, 1e-8);
    gc_check2(cat_fn, &(cat_ctx){2, 3}, 3, in, (const int[]){1, 1, 1}, 1e-8);
    /* Stacking along a new dim: each gradient has its input's own dims. */
    dla_tensor *m[2] = {rnd("", 2, (const int64_t[]){3, 2}, NULL),
                        rnd("", 2, (const int64_t[]){3, 2}, NULL)};
    gc_check(cat_fn, &(cat_ctx){3, 2}, 2, m, (const int[]){1, 1}, 1e-8);
    gc_check2(cat_fn, &(cat_ctx){3, 2}, 2, m, (const int[]){1, 1}, 1e-8);
    /* More inputs than one node holds: the chain of nodes differentiates. */
    dla_tensor *many[GC_MAX_IN];
    for (int k = 0; k < GC_MAX_IN; k++)
        many[k] = rnd("", 2, (const int64_t[]){1, 2}, NULL);
    static const int all[GC_MAX_IN] = {1, 1, 1, 1, 1, 1, 1, 1};
    gc_check(cat_fn, &(cat_ctx){1, GC_MAX_IN}, GC_MAX_IN, many, all, 1e-8);
    gc_check2(cat_fn, &(cat_ctx){1, GC_MAX_IN}, GC_MAX_IN, many, all, 1e-8);
    dla_scope_end();
}

static void test_cat_errors_name_the_tensor_and_the_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *a = dla_ones(DLA_F64, "CB", DLA_DIMS(3, 2));
    assert_error_says(dla_cat(2, 2, (dla_tensor *[]){a, dla_ones(DLA_F64, "CB", DLA_DIMS(4, 2))}),
                      DLA_ERR_SHAPE,
                      "dla_cat: argument tensors[1]: 4x2 against tensors[0]'s 3x2: dim 1 differs "
                      "(only dim 2 may)");
    assert_error_says(dla_cat(1, 2, (dla_tensor *[]){a, dla_ones(DLA_F64, "SB", DLA_DIMS(3, 2))}),
                      DLA_ERR_FORMAT, "argument tensors[1]: format \"SB\" differs from tensors[0]'s \"CB\"");
    assert_error_says(dla_cat(1, 2, (dla_tensor *[]){a, dla_ones(DLA_F32, "CB", DLA_DIMS(3, 2))}),
                      DLA_ERR_DTYPE, "argument tensors[1]: single, but tensors[0] is double");
    assert_error_says(dla_cat(3, 1, &a), DLA_ERR_FORMAT, "dim: 3 is past the labels");
    assert_error_says(dla_cat(1, 0, &a), DLA_ERR_INVALID_ARGUMENT, "at least 1");
    /* Empty tensors may be as long as an int64 holds along another dim;
     * two of them joined there made a tensor of dims 0x-2. */
    dla_tensor *e = dla_zeros(DLA_F64, "", DLA_DIMS(0, INT64_MAX));
    assert_error_says(dla_cat(2, 2, (dla_tensor *[]){e, e}), DLA_ERR_INVALID_ARGUMENT,
                      "dla_cat: argument tensors[1] (0x9223372036854775807): joined along dim 2 "
                      "to the 9223372036854775807 elements before it, it makes a size past 2^63");
    dla_tensor *z = dla_cat(2, 2, (dla_tensor *[]){e, dla_zeros(DLA_F64, "", DLA_DIMS(0, 0))});
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_int_equal(dla_tensor_dim(z, 2), INT64_MAX);
    dla_scope_end();
}

/* ------------------------------------------------------------------ pad */

static void test_pad_surrounds_x_with_the_value(void **state)
{
    (void)state;
    dla_scope_begin();
    double *h;
    const int64_t xd[3] = {3, 2, 2};
    dla_tensor *x = rnd("SSC", 3, xd, &h);
    const int64_t before[4] = {1, 0, 2, 1}, after[4] = {2, 1, 0, 1};
    dla_tensor *z = dla_pad(dla_slice(x, 1, 0, 1, DLA_END), 3, before, after, -5);
    assert_int_equal(dla_tensor_status(z), DLA_OK);
    assert_string_equal(dla_tensor_format(z), "SSC");
    const int64_t zd[3] = {6, 3, 4};
    for (int d = 0; d < 3; d++)
        assert_int_equal(dla_tensor_dim(z, d + 1), zd[d]);
    double *v = fetch(z);
    for (int64_t i = 0; i < 72; i++) {
        int64_t c[3];
        coords(i, 3, zd, c);
        int inside = 1;
        for (int d = 0; d < 3; d++) {
            c[d] -= before[d];
            inside &= c[d] >= 0 && c[d] < xd[d];
        }
        double want = inside ? h[lin(3, xd, c)] : -5;
        if (v[i] != want)
            fail_msg("pad: element %lld is %g, want %g", (long long)i, v[i], want);
    }
    free(v);
    free(h);
    /* A dim past x's: padding it makes the result that much bigger. */
    dla_tensor *u = dla_ones(DLA_F64, "", DLA_DIMS(2, 2));
    z = dla_pad(u, 3, before, after, 0);
    assert_int_equal(dla_tensor_ndims(z), 3);
    assert_int_equal(dla_tensor_dim(z, 3), 3);
    assert_true(dla_tensor_item(dla_sum(z, 0, NULL), 0) == 4);
    assert_error_says(dla_pad(u, 2, (const int64_t[]){0, -1}, NULL, 0), DLA_ERR_INVALID_ARGUMENT,
                      "dla_pad: dim 2 of x (2x2): padding -1 before and 0 after");
    assert_error_says(dla_pad(x, 4, before, after, 0), DLA_ERR_FORMAT,
                      "dla_pad: argument ndims: 4 dims to pad, but x (3x2x2 \"SSC\") has labels for 3");
    dla_scope_end();
}

static dla_tensor *pad_fn(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    return dla_pad(in[0], 3, (const int64_t[]){1, 0, 2}, (const int64_t[]){0, 3, 1}, 0.5);
}

static void test_pad_gradient_is_the_interior(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("SSC", 3, (const int64_t[]){3, 2, 2}, NULL);
    gc_check(pad_fn, NULL, 1, &x, (const int[]){1}, 1e-8);
    gc_check2(pad_fn, NULL, 1, &x, (const int[]){1}, 1e-8);
    dla_tensor *u = rnd("", 2, (const int64_t[]){3, 2}, NULL);
    gc_check(pad_fn, NULL, 1, &u, (const int[]){1}, 1e-8);
    gc_check2(pad_fn, NULL, 1, &u, (const int[]){1}, 1e-8);
    dla_scope_end();
}

/* ---------------------------------------------------------------- index */

static void test_index_gathers_positions_with_repeats(void **state)
{
    (void)state;
    dla_scope_begin();
    double *h;
    const int64_t xd[3] = {3, 4, 2};
    dla_tensor *x = rnd("SCB", 3, xd, &h);
    const int32_t pos[5] = {3, 0, 3, 1, 3};
    dla_tensor *idx = dla_tensor_from_host(pos, DLA_I32, "", DLA_DIMS(5));
    for (int dim = 1; dim <= 3; dim++) {
        int32_t p[5];
        for (int i = 0; i < 5; i++)
            p[i] = pos[i] % (int32_t)xd[dim - 1];
        idx = dla_tensor_from_host(p, DLA_I32, "", DLA_DIMS(5));
        dla_tensor *z = dla_index(x, dim, idx);
        assert_int_equal(dla_tensor_status(z), DLA_OK);
        assert_string_equal(dla_tensor_format(z), "SCB");
        int64_t zd[3] = {3, 4, 2};
        zd[dim - 1] = 5;
        assert_int_equal(dla_tensor_dim(z, dim), 5);
        double *v = fetch(z);
        for (int64_t i = 0; i < dla_tensor_numel(z); i++) {
            int64_t c[3];
            coords(i, 3, zd, c);
            c[dim - 1] = p[c[dim - 1]];
            assert_true(v[i] == h[lin(3, xd, c)]);
        }
        free(v);
    }
    free(h);
    /* A 2-D index is read as its column-major list. */
    dla_tensor *i2 = dla_tensor_from_host((const int32_t[]){1, 0, 1, 1}, DLA_I32, "",
                                          DLA_DIMS(2, 2));
    assert_int_equal(dla_tensor_dim(dla_index(x, 2, i2), 2), 4);
    assert_error_says(dla_index(x, 4, idx), DLA_ERR_INVALID_ARGUMENT,
                      "dla_index: argument dim: 4 is outside 1..3 of x (3x4x2)");
    assert_error_says(dla_index(x, 1, dla_ones(DLA_F64, "", DLA_DIMS(2))), DLA_ERR_DTYPE,
                      "dla_index: argument index: double; positions are int32");
    dla_tensor *far = dla_tensor_from_host((const int32_t[]){0, 7}, DLA_I32, "", DLA_DIMS(2));
    assert_int_equal(dla_tensor_status(dla_index(x, 2, far)), DLA_ERR_INVALID_ARGUMENT);
    /* An empty result (x is 3 x 0): the positions are still checked, as
     * MATLAB's x(5, :) fails; they were not (no kernel ran). */
    dla_tensor *e = dla_zeros(DLA_F32, "", DLA_DIMS(3, 0));
    dla_tensor *five = dla_tensor_from_host((const int32_t[]){2, 5}, DLA_I32, "", DLA_DIMS(2));
    assert_error_says(dla_index(e, 1, five), DLA_ERR_INVALID_ARGUMENT,
                      "dla_index: argument index: element 1 is 5, outside 0..2 (dim 1 of x, 3x0)");
    dla_tensor *ok = dla_index(e, 1, dla_tensor_from_host((const int32_t[]){2, 0, 2}, DLA_I32, "",
                                                          DLA_DIMS(3)));
    assert_int_equal(dla_tensor_status(ok), DLA_OK);
    assert_int_equal(dla_tensor_dim(ok, 1), 3);
    assert_int_equal(dla_tensor_dim(ok, 2), 0);
    dla_scope_end();
}

static dla_tensor *index_fn(void *ctx, dla_tensor *const *in)
{
    return dla_index(in[0], 2, (dla_tensor *)ctx);
}

static dla_tensor *index_twice_fn(void *ctx, dla_tensor *const *in)
{
    /* a strided x and a gradient that meets itself: repeats add up */
    dla_tensor *v = dla_slice(in[0], 1, 1, 2, DLA_END);
    return dla_add(dla_index(v, 2, (dla_tensor *)ctx), dla_index(v, 2, (dla_tensor *)ctx));
}

static void test_index_gradient_adds_repeats_into_their_position(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("CB", 2, (const int64_t[]){5, 4}, NULL);
    dla_tensor *idx = dla_tensor_from_host((const int32_t[]){2, 2, 0, 3, 2, 1}, DLA_I32, "",
                                           DLA_DIMS(6));
    gc_check(index_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    gc_check2(index_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    gc_check(index_twice_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    gc_check2(index_twice_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    dla_scope_end();
}

/* ------------------------------------------- slices of a reshaped input */

/* The layer of the slicing complaint, with products in place of
 * the convolutions: X reshaped to 4x3x2x3x2, three slices along dim 4,
 * each relabelled "SSCB", combined. Its gradient takes the views back down
 * a chain (reshape, slice, reshape) into one buffer of X's dims. */
static dla_tensor *three_slices_fn(void *ctx, dla_tensor *const *in)
{
    dla_tensor *const *ab = ctx;
    dla_tensor *zz = dla_reshape(in[0], "", DLA_DIMS(4, 3, 2, 3, 2));
    dla_tensor *z[3];
    for (int t = 0; t < 3; t++)
        z[t] = dla_reshape(dla_slice(zz, 4, t, 1, t + 1), "SSCB", DLA_DIMS(4, 3, 2, 2));
    dla_tensor *out = dla_mul(dla_sub(z[1], z[0]), ab[0]);
    out = dla_add(out, z[1]);
    return dla_add(out, dla_mul(dla_sub(z[1], z[2]), ab[1]));
}

static void test_slices_of_a_reshaped_input_send_their_gradients_back_to_it(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("SSCB", 4, (const int64_t[]){4, 3, 2, 6}, NULL);
    dla_tensor *ab[2] = {rnd("SSCB", 4, (const int64_t[]){4, 3, 2, 2}, NULL),
                         rnd("SSCB", 4, (const int64_t[]){4, 3, 2, 2}, NULL)};
    gc_check(three_slices_fn, ab, 1, &x, (const int[]){1}, 1e-8);
    gc_check2(three_slices_fn, ab, 1, &x, (const int[]){1}, 1e-8);
    /* And from a strided X: every other observation of a bigger tensor. */
    dla_tensor *big = rnd("SSCB", 4, (const int64_t[]){4, 3, 2, 12}, NULL);
    dla_tensor *strided = dla_slice(big, 4, 0, 2, DLA_END);
    gc_check(three_slices_fn, ab, 1, &strided, (const int[]){1}, 1e-8);
    gc_check2(three_slices_fn, ab, 1, &strided, (const int[]){1}, 1e-8);
    dla_scope_end();
}

/* ------------------------------------------- dims past an unformatted x */

/* MATLAB counts trailing singletons on any array: X(:, :, 1) of a 3x4
 * matrix is the matrix, X(:, :, [1 1]) stacks it twice. dla_slice and
 * dla_index refused dim 3 of a 3x4 ("outside 1..2"), where dla_sum, dla_cat
 * and dla_pad take it. */
static dla_tensor *past_dims_fn(void *ctx, dla_tensor *const *in)
{
    dla_tensor *s = dla_slice(in[0], 3, 0, 1, DLA_END);
    return dla_add(dla_index(in[0], 3, (dla_tensor *)ctx), dla_mul(s, s));
}

static void test_slice_and_index_take_a_dim_past_an_unformatted_x(void **state)
{
    (void)state;
    dla_scope_begin();
    double *h;
    dla_tensor *x = rnd("", 2, (const int64_t[]){3, 4}, &h);
    dla_tensor *s = dla_slice(x, 3, 0, 1, 1);
    assert_int_equal(dla_tensor_status(s), DLA_OK);
    assert_int_equal(dla_tensor_ndims(s), 3);
    assert_int_equal(dla_tensor_numel(s), 12);
    for (int i = 0; i < 12; i++)
        assert_true(dla_tensor_item(s, i) == h[i]);
    /* Past the one element: empty, as a start at the end of any dim. */
    s = dla_slice(x, 5, 1, 1, DLA_END);
    assert_int_equal(dla_tensor_ndims(s), 5);
    assert_int_equal(dla_tensor_dim(s, 5), 0);
    dla_tensor *idx = dla_tensor_from_host((const int32_t[]){0, 0}, DLA_I32, "", DLA_DIMS(2));
    dla_tensor *r = dla_index(x, 3, idx);
    assert_int_equal(dla_tensor_status(r), DLA_OK);
    assert_int_equal(dla_tensor_dim(r, 3), 2);
    for (int i = 0; i < 24; i++)
        assert_true(dla_tensor_item(r, i) == h[i % 12]);
    /* A position past the size-1 dim is refused as any other. */
    dla_tensor *bad = dla_tensor_from_host((const int32_t[]){1}, DLA_I32, "", DLA_DIMS(1));
    assert_int_equal(dla_tensor_status(dla_index(x, 3, bad)), DLA_ERR_INVALID_ARGUMENT);
    /* A formatted x has no dims past its labels. */
    dla_tensor *f = dla_reshape(x, "CB", DLA_DIMS(3, 4));
    assert_int_equal(dla_tensor_status(dla_slice(f, 3, 0, 1, 1)), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_tensor_status(dla_index(f, 3, idx)), DLA_ERR_INVALID_ARGUMENT);
    gc_check(past_dims_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    gc_check2(past_dims_fn, idx, 1, &x, (const int[]){1}, 1e-8);
    free(h);
    dla_scope_end();
}

/* Steps and paddings near INT64_MAX: a slice's count wrapped (a 4x6
 * input sliced with step INT64_MAX came back 0x6, another 4x-1, and a
 * reshape of that crashed); a padding's size wrapped to a small one. */
static void test_huge_steps_and_paddings_do_not_wrap(void **state)
{
    dla_scope_begin();
    double v[24];
    for (int i = 0; i < 24; i++)
        v[i] = i;
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(4, 6));
    dla_tensor *s = dla_slice(x, 1, 0, INT64_MAX, 4);
    assert_int_equal(dla_tensor_status(s), DLA_OK);
    assert_int_equal(dla_tensor_dim(s, 1), 1);
    assert_int_equal(dla_tensor_dim(s, 2), 6);
    for (int j = 0; j < 6; j++)
        assert_true(dla_tensor_item(s, j) == 4.0 * j);
    s = dla_slice(x, 2, 1, INT64_MAX - 1, DLA_END);
    assert_int_equal(dla_tensor_dim(s, 2), 1);
    assert_int_equal(dla_tensor_numel(s), 4);
    dla_tensor *p = dla_pad(x, 1, (int64_t[]){INT64_MAX}, (int64_t[]){INT64_MAX}, 0.0);
    assert_int_equal(dla_tensor_status(p), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_tensor_error(p), "makes a size past 2^63"));
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    dla_rng_seed(5);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_cat_joins_along_each_dim_as_a_naive_loop),
        TU_TEST(test_cat_stacks_matrices_along_a_new_dim),
        TU_TEST(test_cat_skips_matlab_empties),
        TU_TEST(test_cat_of_more_tensors_than_a_node_holds),
        TU_TEST(test_cat_gradients_are_slices_of_the_result_gradient),
        TU_TEST(test_cat_errors_name_the_tensor_and_the_dims),
        TU_TEST(test_pad_surrounds_x_with_the_value),
        TU_TEST(test_pad_gradient_is_the_interior),
        TU_TEST(test_index_gathers_positions_with_repeats),
        TU_TEST(test_index_gradient_adds_repeats_into_their_position),
        TU_TEST(test_slices_of_a_reshaped_input_send_their_gradients_back_to_it),
        TU_TEST(test_slice_and_index_take_a_dim_past_an_unformatted_x),
        TU_TEST(test_huge_steps_and_paddings_do_not_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

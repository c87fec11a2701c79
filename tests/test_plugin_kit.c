/*
 * test_plugin_kit.c - the plugin kit as a third-party plugin sees it.
 *
 * Built with only api/ on the include path (tests/kit.mk), as a plugin
 * built against the installed headers is: dlaccel/plugin_kit.h and
 * dlaccel/plugin_philox.h must stand alone. The kit talks to a fake host
 * table here; only the Philox comparison uses libdlaccel, to check the
 * kit's stream against the numbers the core draws.
 */
#include <dlaccel/plugin_kit.h>
#include <dlaccel/plugin_philox.h>

#include <dlaccel.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* ------------------------------------------------------ the fake host */

static char last_msg[512];

static dla_status fake_error(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg, sizeof last_msg, fmt, ap);
    va_end(ap);
    return status;
}

static void fake_log(dla_log_level level, const char *fmt, ...)
{
    (void)level, (void)fmt;
}

static const dla_plugin_host host = {.struct_size = sizeof host, .abi_major = 1, .abi_minor = 4,
                                     .log = fake_log, .error = fake_error};

/* A dla_mem here points to its size in bytes. */
typedef struct fake_mem {
    size_t bytes;
} fake_mem;

static size_t fake_bytes(dla_mem mem)
{
    return ((const fake_mem *)mem)->bytes;
}

static const dla_kit kit = {.host = &host, .name = "test", .mem_bytes = fake_bytes};

static dla_view view(fake_mem *m, dla_dtype dtype, int ndims, const int64_t *dims)
{
    dla_view v = {.struct_size = sizeof v, .mem = (dla_mem)m, .dtype = dtype, .ndims = ndims};
    int64_t stride = 1;
    for (int d = 0; d < ndims; d++) {
        v.dims[d] = dims[d];
        v.strides[d] = stride;
        stride *= dims[d];
    }
    return v;
}

/* A view of one value repeated over dims (every stride 0). */
static dla_view one_value(fake_mem *m, dla_dtype dtype, int ndims, const int64_t *dims)
{
    dla_view v = {.struct_size = sizeof v, .mem = (dla_mem)m, .dtype = dtype, .ndims = ndims};
    for (int d = 0; d < ndims; d++)
        v.dims[d] = dims[d];
    return v;
}

static void expect_error(dla_status got, dla_status want, const char *words)
{
    if (got != want || !strstr(last_msg, words))
        fail_msg("status %d (expected %d), message \"%s\" (expected \"%s\")", (int)got,
                 (int)want, last_msg, words);
}

/* ------------------------------------------------------------- tests */

static void dtype_sizes_and_names_need_no_library(void **state)
{
    (void)state;
    assert_int_equal(dla_kit_dtype_size(DLA_F32), 4);
    assert_int_equal(dla_kit_dtype_size(DLA_F64), 8);
    assert_int_equal(dla_kit_dtype_size(DLA_I32), 4);
    assert_int_equal(dla_kit_dtype_size(DLA_U8), 1);
    assert_int_equal(dla_kit_dtype_size(DLA_BOOL), 1);
    assert_int_equal(dla_kit_dtype_size((dla_dtype)DLA_DTYPE_COUNT), 0);
    assert_string_equal(dla_kit_dtype_name(DLA_F32), "single");
    assert_string_equal(dla_kit_dtype_name((dla_dtype)-1), "unknown");
    char buf[DLA_KIT_DIMS_BUF];
    assert_string_equal(dla_kit_dims_str(buf, sizeof buf, 3, (int64_t[]){2, 3, 4}), "2x3x4");
    assert_string_equal(dla_kit_dims_str(buf, sizeof buf, 0, NULL), "scalar");
    /* The fill conversions: saturation, NaN to 0, truncation. */
    assert_int_equal(dla_kit_to_i32(1e10), INT32_MAX);
    assert_int_equal(dla_kit_to_i32(-2.5), -2);
    assert_int_equal(dla_kit_to_u8(-2.5), 0);
    assert_int_equal(dla_kit_to_u8(300), 255);
    assert_int_equal(dla_kit_to_i32(0.0 / 0.0), 0);
}

static void a_view_past_its_memory_is_refused_with_the_plugin_name(void **state)
{
    (void)state;
    fake_mem m = {6 * sizeof(float)};
    dla_view v = view(&m, DLA_F32, 2, (int64_t[]){2, 3});
    assert_int_equal(dla_kit_check_view(&kit, "unary", "x", &v), DLA_OK);
    v.offset = 1;
    expect_error(dla_kit_check_view(&kit, "unary", "x", &v), DLA_ERR_INVALID_ARGUMENT,
                 "test unary: argument x (dims 2x3, offset 1): reaches past the 6 single "
                 "elements of its memory");
    v.offset = 0;
    v.strides[1] = -1;
    expect_error(dla_kit_check_view(&kit, "unary", "x", &v), DLA_ERR_INVALID_ARGUMENT,
                 "stride -1 of dim 2 is negative");
    /* Dims of stride 0 need no memory: 2^32 x 2^32 of one value is 2^64
     * elements, which no count holds (the cpu reduce summed them to 0 and
     * averaged them to NaN); an empty view's dims may overflow together. */
    dla_view big = one_value(&m, DLA_F32, 2, (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32});
    expect_error(dla_kit_check_view(&kit, "reduce", "x", &big), DLA_ERR_INVALID_ARGUMENT,
                 "test reduce: argument x (dims 4294967296x4294967296): more elements than an "
                 "int64 counts");
    big.dims[1] = ((int64_t)1 << 31) - 1; /* 2^63 - 2^32: counted */
    assert_int_equal(dla_kit_check_view(&kit, "reduce", "x", &big), DLA_OK);
    big.ndims = 3, big.dims[1] = (int64_t)1 << 32, big.dims[2] = 0, big.strides[2] = 0;
    assert_int_equal(dla_kit_check_view(&kit, "reduce", "x", &big), DLA_OK);
    /* Empty views need no memory; equal dims and float dtypes. */
    dla_view e = view(NULL, DLA_F32, 2, (int64_t[]){0, 3});
    assert_int_equal(dla_kit_check_view(&kit, "unary", "y", &e), DLA_OK);
    v = view(&m, DLA_F32, 2, (int64_t[]){2, 3});
    expect_error(dla_kit_check_same_dims(&kit, "binary", "a", &e, "z", &v), DLA_ERR_SHAPE,
                 "test binary: argument a: dims 0x3 differ from z's 2x3");
    dla_view i = view(&m, DLA_I32, 2, (int64_t[]){2, 3});
    expect_error(dla_kit_check_float(&kit, "reduce", "x", &i), DLA_ERR_DTYPE,
                 "dtype int32 is not supported (single or double)");
    const dla_kit single = {.host = &host, .name = "gpu", .no_f64 = "no doubles here"};
    dla_view d = view(&m, DLA_F64, 1, (int64_t[]){3});
    expect_error(dla_kit_check_float(&single, "reduce", "x", &d), DLA_ERR_DTYPE,
                 "(single; no doubles here)");
    /* Overlap: the same memory with intersecting spans. */
    dla_view a = view(&m, DLA_F32, 1, (int64_t[]){4}), b = a;
    b.offset = 2, b.dims[0] = 2;
    assert_true(dla_kit_views_overlap(&a, &b));
    a.dims[0] = 2;
    assert_false(dla_kit_views_overlap(&a, &b));
}

static void convolution_geometry_has_sizes_and_strides(void **state)
{
    (void)state;
    fake_mem big = {1 << 20};
    /* 2-d, x 5x6 spatial, 4 channels in 2 groups, 6 filters, batch 3,
     * filter 3x2, stride 2x1, dilation 1x2, padding 1 and 0. */
    dla_conv_args a = {.struct_size = sizeof a, .dtype = DLA_F32, .nspatial = 2, .batch = 3,
                       .in_channels = 4, .out_channels = 6, .groups = 2,
                       .in_size = {5, 6}, .filter_size = {3, 2}, .stride = {2, 1},
                       .dilation = {1, 2}, .pad_begin = {1, 0}};
    a.out_size[0] = (5 + 1 + 1 - 1 * (3 - 1) - 1) / 2 + 1; /* pad_end 1: 3 */
    a.out_size[1] = (6 + 0 + 0 - 2 * (2 - 1) - 1) / 1 + 1; /* 4 */
    fake_mem mx = big, mw = big, my = big;
    a.x = view(&mx, DLA_F32, 4, (int64_t[]){5, 6, 4, 3});
    a.w = view(&mw, DLA_F32, 5, (int64_t[]){3, 2, 2, 3, 2});
    a.y = view(&my, DLA_F32, 4, (int64_t[]){3, 4, 6, 3});
    dla_kit_conv g;
    assert_int_equal(dla_kit_conv_prepare(&kit, &a, DLA_KIT_CONV_FORWARD, &g), DLA_OK);
    assert_int_equal(g.Cg, 2);
    assert_int_equal(g.Fg, 3);
    assert_int_equal(g.ntaps, 6);
    assert_int_equal(g.in_px, 30);
    assert_int_equal(g.out_px, 12);
    assert_int_equal(g.in[2], 1); /* the unused third dim */
    assert_int_equal(g.xc, 30);
    assert_int_equal(g.xb, 120);
    assert_int_equal(g.wc, 6);
    assert_int_equal(g.wf, 12);
    assert_int_equal(g.wg, 36);
    assert_int_equal(g.yf, 12);
    assert_int_equal(g.has_bias, 0);
    /* Sizes within int32 each whose products are not (three dims of
     * 2^31 - 1): refused by the views' checks, before the products of
     * the filter taps and the pixels are taken (taken first, they
     * overflowed an int64: undefined, UBSan's report). */
    dla_conv_args huge = a;
    const int64_t m31 = INT32_MAX;
    huge.nspatial = 3;
    for (int i = 0; i < 3; i++) {
        huge.in_size[i] = huge.filter_size[i] = m31;
        huge.out_size[i] = 1;
        huge.stride[i] = huge.dilation[i] = 1;
        huge.pad_begin[i] = 0;
    }
    huge.x = one_value(&mx, DLA_F32, 5, (int64_t[]){m31, m31, m31, 4, 3});
    huge.w = one_value(&mw, DLA_F32, 6, (int64_t[]){m31, m31, m31, 2, 3, 2});
    huge.y = view(&my, DLA_F32, 5, (int64_t[]){1, 1, 1, 6, 3});
    expect_error(dla_kit_conv_prepare(&kit, &huge, DLA_KIT_CONV_FORWARD, &g),
                 DLA_ERR_INVALID_ARGUMENT,
                 "test conv_forward: argument x (dims 2147483647x2147483647x2147483647x4x3): "
                 "more elements than an int64 counts");
    dla_conv_args bad = a;
    bad.groups = 3;
    expect_error(dla_kit_conv_prepare(&kit, &bad, DLA_KIT_CONV_FORWARD, &g),
                 DLA_ERR_INVALID_ARGUMENT, "channels must be positive multiples of groups");
    bad = a;
    bad.y.dims[0] = 4;
    expect_error(dla_kit_conv_prepare(&kit, &bad, DLA_KIT_CONV_FORWARD, &g), DLA_ERR_SHAPE,
                 "test conv_forward: argument y: dims 4x4x6x3, expected 3x4x6x3");
    bad = a;
    bad.y.mem = bad.x.mem; /* written over what it reads */
    expect_error(dla_kit_conv_prepare(&kit, &bad, DLA_KIT_CONV_FORWARD, &g),
                 DLA_ERR_INVALID_ARGUMENT, "shares memory");
}

static void pooling_geometry_maps_views_to_five_dims(void **state)
{
    (void)state;
    fake_mem mx = {1 << 16}, my = {1 << 16};
    /* 1-d max pool over 7 with window 3, stride 2: out 3; x 7 x 2 channels
     * x 1 image given without its trailing batch dim. */
    dla_pool_args a = {.struct_size = sizeof a, .mode = DLA_POOL_MAX, .dtype = DLA_F64,
                       .nspatial = 1, .channels = 2, .batch = 1, .in_size = {7},
                       .out_size = {3}, .window = {3}, .stride = {2}};
    a.x = view(&mx, DLA_F64, 2, (int64_t[]){7, 2});
    a.y = view(&my, DLA_F64, 2, (int64_t[]){3, 2});
    dla_kit_pool g;
    assert_int_equal(dla_kit_pool_prepare(&kit, "pool_forward", &a, 0, &g), DLA_OK);
    assert_int_equal(g.planes, 2);
    assert_int_equal(g.full, 3);
    assert_int_equal(g.xs[0], 1);
    assert_int_equal(g.xs[1], 0); /* spatial dims past nspatial */
    assert_int_equal(g.xs[3], 7); /* channels */
    assert_int_equal(g.ys[3], 3);
    assert_int_equal(g.x_spatial_dense, 1);
    a.out_size[0] = 5; /* a window past x */
    a.y = view(&my, DLA_F64, 2, (int64_t[]){5, 2});
    expect_error(dla_kit_pool_prepare(&kit, "pool_forward", &a, 0, &g), DLA_ERR_SHAPE,
                 "leave a max window with no input element");
    a.out_size[0] = 3;
    a.y = view(&my, DLA_F64, 2, (int64_t[]){3, 2});
    expect_error(dla_kit_pool_prepare(&kit, "pool_backward", &a, 1, &g),
                 DLA_ERR_INVALID_ARGUMENT, "a max pool's backward needs the forward's index");
    /* An average window of 2^32 x 2^32 over one element: its size wrapped
     * to 0 and the cpu plugin's mean came out 0 (4 / 2^64 is 2.2e-19). */
    dla_pool_args avg = {.struct_size = sizeof avg, .mode = DLA_POOL_AVG, .dtype = DLA_F64,
                         .nspatial = 2, .channels = 1, .batch = 1, .in_size = {1, 1},
                         .out_size = {1, 1}, .window = {(int64_t)1 << 32, (int64_t)1 << 32},
                         .stride = {1, 1}};
    avg.x = view(&mx, DLA_F64, 2, (int64_t[]){1, 1});
    avg.y = view(&my, DLA_F64, 2, (int64_t[]){1, 1});
    expect_error(dla_kit_pool_prepare(&kit, "pool_forward", &avg, 0, &g),
                 DLA_ERR_INVALID_ARGUMENT,
                 "test pool_forward: windows of 4294967296x4294967296x1 over 1 channels x 1 "
                 "images: more elements than an int64 counts");
    avg.window[1] = ((int64_t)1 << 31) - 1; /* 2^63 - 2^32: counted */
    assert_int_equal(dla_kit_pool_prepare(&kit, "pool_forward", &avg, 0, &g), DLA_OK);
    assert_int_equal(g.full, (((int64_t)1 << 31) - 1) << 32);
}

static void index_geometry_takes_strided_indices_and_short_views(void **state)
{
    (void)state;
    fake_mem mx = {1 << 10}, my = {1 << 10}, mi = {1 << 10};
    /* gather along dim 2: x 1x3 (its dim 2 of 1 left off) into y 1x3x2,
     * with a 1x2 index of stride 2 (every other int of its buffer). */
    dla_index_args a = {.struct_size = sizeof a, .dim = 2};
    a.x = view(&mx, DLA_F32, 2, (int64_t[]){1, 3});
    a.y = view(&my, DLA_F32, 3, (int64_t[]){1, 3, 2});
    a.index = view(&mi, DLA_I32, 2, (int64_t[]){1, 2});
    a.index.strides[1] = 2;
    dla_kit_index p;
    assert_int_equal(dla_kit_index_prepare(&kit, "gather", &a, 0, &p), DLA_OK);
    assert_int_equal(p.len, 2);
    assert_int_equal(p.istep, 2);
    assert_int_equal(p.target, 1);
    assert_int_equal(p.ys.ndims, 3);
    assert_int_equal(p.xs.ndims, 3);
    assert_int_equal(p.xs.dims[2], 1);
    assert_int_equal(p.ystep, 3);
    const int32_t good[] = {0, 99, 0}, bad[] = {0, 99, 1};
    assert_int_equal(dla_kit_index_check_values(&kit, "gather", &a, 0, &p, good), DLA_OK);
    expect_error(dla_kit_index_check_values(&kit, "gather", &a, 0, &p, bad),
                 DLA_ERR_INVALID_ARGUMENT, "test gather: argument index: element 1 is 1, "
                                           "outside 0..0");
    a.index.dims[0] = 2; /* a matrix, not a vector */
    expect_error(dla_kit_index_prepare(&kit, "gather", &a, 0, &p), DLA_ERR_SHAPE,
                 "expected a vector");
}

static void gemm_operands_are_checked_against_their_memory(void **state)
{
    (void)state;
    fake_mem ma = {12 * 4}, mb = {12 * 4}, mc = {9 * 4};
    dla_gemm_args g = {.struct_size = sizeof g, .dtype = DLA_F32, .m = 3, .n = 3, .k = 4,
                       .batch = 1, .alpha = 1, .a = {(dla_mem)&ma, 0, 3, 0},
                       .b = {(dla_mem)&mb, 0, 4, 0}, .c = {(dla_mem)&mc, 0, 3, 0}};
    assert_int_equal(dla_kit_check_gemm(&kit, &g), DLA_OK);
    g.c.offset = 1;
    expect_error(dla_kit_check_gemm(&kit, &g), DLA_ERR_INVALID_ARGUMENT,
                 "test gemm: argument c (3x3 as stored, ld 3, offset 1");
    g.c.offset = 0;
    g.a.ld = 2;
    expect_error(dla_kit_check_gemm(&kit, &g), DLA_ERR_INVALID_ARGUMENT, "ld 2 outside 3..");
    g.a.ld = 3;
    g.dtype = DLA_I32;
    expect_error(dla_kit_check_gemm(&kit, &g), DLA_ERR_DTYPE, "int32 is not single or double");
}

static void philox_bits_are_the_cores_stream(void **state)
{
    (void)state;
    /* Philox4x32-10's known answer for key 0, counter 0 (Random123). */
    uint32_t r[4];
    dla_px_block(0, 0, r);
    assert_int_equal(r[0], 0x6627e8d5u);
    assert_int_equal(r[1], 0xe169c58du);
    assert_int_equal(r[2], 0xbc57ac4cu);
    assert_int_equal(r[3], 0x9b00dbd8u);
    /* The core's draws from (seed, counter): uniform singles take a word
     * each, normal doubles a pair per block. */
    const uint64_t seed = 0x0123456789abcdefull, counter = 1000;
    dla_rng_set(seed, counter);
    float u[10];
    dla_tensor *t = dla_rand(DLA_F32, "", DLA_DIMS(10));
    assert_int_equal(dla_tensor_to_host(t, u, sizeof u), DLA_OK);
    for (int i = 0; i < 10; i++) {
        dla_px_block(seed, counter + (uint64_t)i / 4, r);
        const float want = dla_px_u24(r[i % 4]);
        if (memcmp(&want, &u[i], sizeof want) != 0)
            fail_msg("uniform %d: the core drew %a, the kit %a", i, u[i], want);
    }
    dla_tensor_release(t);
    dla_rng_set(seed, counter);
    double z[6];
    t = dla_randn(DLA_F64, "", DLA_DIMS(6));
    assert_int_equal(dla_tensor_to_host(t, z, sizeof z), DLA_OK);
    for (int i = 0; i < 6; i += 2) {
        double z0, z1;
        dla_px_block(seed, counter + (uint64_t)i / 2, r);
        dla_px_normal_pair(r, &z0, &z1);
        if (memcmp(&z0, &z[i], sizeof z0) != 0 || memcmp(&z1, &z[i + 1], sizeof z1) != 0)
            fail_msg("normals %d, %d: the core drew %a %a, the kit %a %a", i, i + 1, z[i],
                     z[i + 1], z0, z1);
    }
    dla_tensor_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dtype_sizes_and_names_need_no_library),
        cmocka_unit_test(a_view_past_its_memory_is_refused_with_the_plugin_name),
        cmocka_unit_test(convolution_geometry_has_sizes_and_strides),
        cmocka_unit_test(pooling_geometry_maps_views_to_five_dims),
        cmocka_unit_test(index_geometry_takes_strided_indices_and_short_views),
        cmocka_unit_test(gemm_operands_are_checked_against_their_memory),
        cmocka_unit_test(philox_bits_are_the_cores_stream),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_trace_file.c - traces saved to and loaded from files (dla_trace_save,
 * dla_trace_load) and the op registry behind them.
 *
 * A saved and loaded trace replays to the outputs of the trace it was saved
 * from, bit for bit, on the cpu and on testmem (memory the host cannot
 * address), RNG slots and baked constants included; a network of every op
 * family with its gradients goes through a file; every failure (missing,
 * foreign, truncated, corrupt, newer, other byte order, unknown op) is an
 * error naming the file, under the counting allocator to show nothing
 * leaks.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlaccel/conv.h>
#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tu_assert.h"

static char dir[256]; /* a private folder for the files */

static const char *path_of(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* ------------------------------------------------------------- files */

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(*n ? *n : 1);
    assert_int_equal(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void write_all(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* CRC-32C as docs/trace-format.md states it, to make files that pass the
 * checksum and must be caught by what comes after it. */
static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static void fix_checksum(unsigned char *p, size_t n)
{
    uint32_t c = crc32c(p, n - 8);
    memcpy(p + n - 8, &c, 4);
}

/* ------------------------------------------------------------ functions */

/* loss = sum((W2 tanh(W1 x + b1) - t).^2) and its gradients. */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *h = dla_tanh(dla_add(dla_mtimes(in[0], in[3]), in[1]));
    dla_tensor *y = dla_mtimes(in[2], h);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[4])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 3, in, out + 1);
}

static dla_tensor **model_inputs(dla_dtype dt)
{
    static dla_tensor *in[5];
    dla_rng_seed(5);
    in[0] = dla_randn(dt, "", DLA_DIMS(8, 4));
    in[1] = dla_randn(dt, "", DLA_DIMS(8, 1));
    in[2] = dla_randn(dt, "", DLA_DIMS(2, 8));
    in[3] = dla_randn(dt, "", DLA_DIMS(4, 16));
    in[4] = dla_randn(dt, "", DLA_DIMS(2, 16));
    return in;
}

/* MATLAB's myUnsupportedFun (baked noise) and mySupportedFun (RNG slot). */
static dla_status baked_noise(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(in[0], dims);
    out[0] = dla_add(in[0], dla_rand(dla_tensor_dtype(in[0]), "", nd, dims));
    return DLA_OK;
}

static dla_status noise_like(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_add(in[0], dla_randn_like(in[0]));
    return DLA_OK;
}

static dla_status reads_a_value(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_tensor_item(dla_sum(in[0], 0, NULL), 0) > 0 ? dla_exp(in[0]) : dla_neg(in[0]);
    return DLA_OK;
}

/* A host-made tensor moved to the inputs' device: in the file, a move to
 * "the replay device". */
static dla_status moves_a_constant(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    static const double shift[6] = {1, 2, 3, 4, 5, 6};
    dla_tensor *c = dla_tensor_from_host(shift, DLA_F64, "", DLA_DIMS(2, 3));
    out[0] = dla_mul(in[0], dla_tensor_to_device(c, dla_tensor_device(in[0])));
    return DLA_OK;
}

/* A network of every op family, with gradients through views of views,
 * concatenation, padding, indexing, a comparison, casts, both random ops
 * and every loss. */
static dla_status zoo_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *x = in[0], *w = in[1], *b = in[2], *off = in[3], *sc = in[4], *fw = in[5],
               *fb = in[6], *w2 = in[7], *t = in[8], *idx = in[9];
    dla_tensor *h = dla_conv(x, w, b, &(dla_conv_options){.padding_mode = "same"}); /* 6x6x4x3 */
    dla_tensor *bn, *mu, *var;
    dla_batchnorm_train(h, off, sc, NULL, NULL, NULL, &bn, &mu, &var);
    h = dla_gelu(dla_elu(dla_leakyrelu(bn, 0.1), 1.0), NULL);
    h = dla_dropout(h, 0.25);
    h = dla_add(h, dla_transpconv(dla_conv(h, w2, NULL, NULL), w2, NULL, NULL));
    h = dla_maxpool(h, DLA_DIMS(2, 2), &(dla_pool_options){.stride = {2, 2}}); /* 3x3x4x3 */
    h = dla_add(h, dla_avgpool(h, DLA_DIMS(3, 3), &(dla_pool_options){.padding_mode = "same"}));
    h = dla_instancenorm(dla_groupnorm(dla_layernorm(h, off, sc, NULL), 2, off, sc, NULL), off, sc,
                         NULL);
    /* Views of views: a reshape of a slice, read back into h's gradient. */
    dla_tensor *s1 = dla_slice(h, 1, 0, 1, 2), *s2 = dla_slice(h, 1, 1, 1, 3);
    dla_tensor *r = dla_reshape(dla_slice(s2, 2, 0, 2, 3), "", DLA_DIMS(2, 2, 12));
    h = dla_cat(1, 2, (dla_tensor *[]){s2, s1}); /* 4x3x4x3 */
    h = dla_pad(h, 2, (const int64_t[]){0, 1}, (const int64_t[]){0, 0}, 0.5); /* 4x4x4x3 */
    h = dla_index(h, 3, idx);                                             /* 4x4x3x3 */
    h = dla_add(h, dla_rand_like(h));
    dla_tensor *y = dla_fullyconnect(h, fw, fb); /* 3x3 CB */
#define SCALAR(t) dla_reshape(dla_sum((t), 0, NULL), "", DLA_DIMS(1, 1))
    dla_tensor *p = dla_softmax(y);
    dla_tensor *loss = dla_add(SCALAR(dla_crossentropy(p, t, NULL)), SCALAR(dla_mse(y, t, NULL)));
    loss = dla_add(loss, SCALAR(dla_l1loss(y, t, NULL)));
    loss = dla_add(loss, SCALAR(dla_l2loss(y, t, NULL)));
    loss = dla_add(loss, SCALAR(dla_binary_crossentropy(dla_sigmoid(y), t, NULL)));
    loss = dla_add(loss, SCALAR(dla_logsoftmax(y)));
    dla_tensor *big = dla_cast(dla_gt(y, p), DLA_F64);
    loss = dla_add(loss, SCALAR(dla_where(dla_ge(y, p), dla_mul(y, big), dla_neg(y))));
    loss = dla_add(loss, SCALAR(dla_square(r)));
    loss = dla_add(loss, SCALAR(dla_permute(dla_reshape(dla_contiguous(p), "", DLA_DIMS(3, 3)),
                                            DLA_DIMS(2, 1))));
    dla_tensor *classes = dla_cast(dla_onehotdecode(p, NULL), DLA_I32);
    loss = dla_add(loss, SCALAR(dla_onehotencode(classes, 3, &(dla_onehot_options){.dtype = DLA_F64})));
#undef SCALAR
    out[0] = loss;
    out[1] = mu;
    return dla_gradient(loss, 8, in, out + 2);
}

#define ZOO_IN 10
#define ZOO_OUT 10

static dla_tensor **zoo_inputs(void)
{
    static dla_tensor *in[ZOO_IN];
    static const int32_t pick[3] = {3, 0, 1};
    dla_rng_seed(11);
    in[0] = dla_randn(DLA_F64, "SSCB", DLA_DIMS(6, 6, 2, 3));
    in[1] = dla_affine(dla_randn(DLA_F64, "", DLA_DIMS(3, 3, 2, 4)), 0.3, 0.0);
    in[2] = dla_randn(DLA_F64, "", DLA_DIMS(4, 1));
    in[3] = dla_randn(DLA_F64, "", DLA_DIMS(4));
    in[4] = dla_affine(dla_rand(DLA_F64, "", DLA_DIMS(4)), 1.0, 0.5);
    in[5] = dla_affine(dla_randn(DLA_F64, "", DLA_DIMS(3, 48)), 0.2, 0.0);
    in[6] = dla_randn(DLA_F64, "", DLA_DIMS(3, 1));
    in[7] = dla_affine(dla_randn(DLA_F64, "", DLA_DIMS(3, 3, 4, 4)), 0.2, 0.0);
    static const double onehot[9] = {1, 0, 0, 0, 0, 1, 0, 1, 0};
    in[8] = dla_tensor_from_host(onehot, DLA_F64, "CB", DLA_DIMS(3, 3));
    in[9] = dla_tensor_from_host(pick, DLA_I32, "", DLA_DIMS(3));
    return in;
}

/* --------------------------------------------------------------- checks */

/* The elements of t as bytes (malloc'ed), their count in *n. */
static unsigned char *bytes_of(const dla_tensor *t, size_t *n)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    *n = (size_t)dla_tensor_numel(t) * dla_dtype_size(dla_tensor_dtype(t));
    unsigned char *p = malloc(*n ? *n : 1);
    assert_int_equal(dla_tensor_to_host(t, p, *n), DLA_OK);
    return p;
}

static void assert_same_bits(int n, dla_tensor **a, dla_tensor **b)
{
    for (int i = 0; i < n; i++) {
        size_t na, nb;
        unsigned char *pa = bytes_of(a[i], &na), *pb = bytes_of(b[i], &nb);
        assert_int_equal(na, nb);
        if (memcmp(pa, pb, na) != 0)
            fail_msg("output %d differs", i + 1);
        assert_int_equal(dla_tensor_dtype(a[i]), dla_tensor_dtype(b[i]));
        assert_string_equal(dla_tensor_format(a[i]), dla_tensor_format(b[i]));
        free(pa);
        free(pb);
    }
}

/* Saves the trace af recorded first and loads it back. */
static dla_trace *through_file(dla_accel *af, const char *name)
{
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    assert_int_equal(dla_trace_save(t, path_of(name)), DLA_OK);
    dla_trace *back = NULL;
    if (dla_trace_load(path_of(name), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_trace_release(t);
    return back;
}

/* Replays the first trace of af and the loaded one with the same seed,
 * and compares their outputs bit for bit. */
static void assert_replays_alike(dla_accel *af, dla_trace *loaded, int nin, dla_tensor **in,
                                 int nout)
{
    dla_trace *t = dla_accel_trace(af, 0);
    dla_tensor *want[16], *got[16];
    dla_rng_seed(99);
    assert_int_equal(dla_trace_replay(t, nin, in, nout, want), DLA_OK);
    dla_rng_seed(99);
    if (dla_trace_replay(loaded, nin, in, nout, got) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_same_bits(nout, want, got);
    dla_trace_release(t);
}

static char *print_of(const dla_trace *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_trace_print(t, f), DLA_OK);
    fclose(f);
    return text;
}

/* ----------------------------------------------------------- registry */

static void test_every_op_is_registered_under_a_unique_name(void **state)
{
    int n = dla_trace_op_count();
    assert_true(n >= 45);
    for (int i = 0; i < n; i++) {
        const char *a = dla_trace_op_name(i);
        assert_non_null(a);
        for (int j = 0; j < i; j++)
            if (strcmp(a, dla_trace_op_name(j)) == 0)
                fail_msg("two ops are registered as \"%s\"", a);
    }
    assert_null(dla_trace_op_name(n));
    assert_null(dla_trace_op_name(-1));
    /* The two that share a public function's name with another op. */
    int found = 0;
    for (int i = 0; i < n; i++)
        found += !strcmp(dla_trace_op_name(i), "dla_maxpool backward") ||
                 !strcmp(dla_trace_op_name(i), "dla_avgpool backward");
    assert_int_equal(found, 2);
}

/* ---------------------------------------------------------- round trips */

static void round_trip_model_loss(dla_device *dev)
{
    dla_device_set_current(dev);
    dla_scope_begin();
    dla_tensor **in = model_inputs(DLA_F32);
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *first[4];
    assert_int_equal(dla_accel_feval(af, NULL, 5, in, 4, first), DLA_OK);
    dla_trace *back = through_file(af, "model.dlt");
    /* New values of the same pattern. */
    in[0] = dla_affine(in[0], 0.5, 0.25);
    assert_replays_alike(af, back, 5, in, 4);
    /* And what the accelerated function gives. */
    dla_tensor *fast[4], *got[4];
    assert_int_equal(dla_accel_feval(af, NULL, 5, in, 4, fast), DLA_OK);
    assert_int_equal(dla_trace_replay(back, 5, in, 4, got), DLA_OK);
    assert_same_bits(4, fast, got);
    assert_ptr_equal(dla_tensor_device(got[1]), dev);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
    dla_device_set_current(NULL);
}

static void test_a_loaded_trace_replays_bit_for_bit_on_the_cpu(void **state)
{
    round_trip_model_loss(dla_device_at(0));
}

static void test_a_loaded_trace_replays_bit_for_bit_on_testmem(void **state)
{
    assert_true(dla_device_count() >= 2);
    assert_string_equal(dla_device_plugin(dla_device_at(1)), "testmem");
    round_trip_model_loss(dla_device_at(1));
}

static void test_a_trace_saved_on_the_cpu_replays_on_testmem(void **state)
{
    dla_scope_begin();
    dla_tensor **in = model_inputs(DLA_F64);
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *want[4], *got[4], *moved[5];
    assert_int_equal(dla_accel_feval(af, NULL, 5, in, 4, want), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_int_equal(dla_trace_save(t, path_of("cpu.dlt")), DLA_OK);
    dla_trace_release(t);
    /* Loaded where it will replay: its constants are made there. */
    dla_device_set_current(dla_device_at(1));
    dla_trace *back;
    assert_int_equal(dla_trace_load(path_of("cpu.dlt"), &back), DLA_OK);
    for (int i = 0; i < 5; i++)
        moved[i] = dla_tensor_to_device(in[i], dla_device_at(1));
    assert_int_equal(dla_trace_replay(back, 5, moved, 4, got), DLA_OK);
    for (int i = 0; i < 4; i++)
        assert_ptr_equal(dla_tensor_device(got[i]), dla_device_at(1));
    assert_same_bits(4, want, got);
    dla_device_set_current(NULL);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_rng_slots_draw_anew_after_a_load_as_before(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "SSCB", DLA_DIMS(3, 3, 2, 1)), *y, *a, *b;
    dla_accel *af = dla_accelerate(noise_like, NULL);
    dla_accel_call(af, NULL, 1, &x, 1, &y);
    dla_trace *back = through_file(af, "noise.dlt");
    char *text = print_of(back);
    assert_non_null(strstr(text, "(1 RNG slots)"));
    free(text);
    assert_replays_alike(af, back, 1, &x, 1);
    assert_int_equal(dla_trace_replay(back, 1, &x, 1, &a), DLA_OK);
    assert_int_equal(dla_trace_replay(back, 1, &x, 1, &b), DLA_OK);
    assert_true(dla_tensor_item(a, 0) != dla_tensor_item(b, 0));
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_baked_constants_keep_their_values_through_a_file(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(3, 3)), *y, *z;
    dla_accel *af = dla_accelerate(baked_noise, NULL);
    dla_accel_call(af, NULL, 1, &x, 1, &y);
    dla_trace *back = through_file(af, "baked.dlt");
    assert_int_equal(dla_trace_replay(back, 1, &x, 1, &z), DLA_OK);
    /* The noise of the recording call, baked in. */
    for (int i = 0; i < 9; i++)
        assert_true(dla_tensor_item(y, i) == dla_tensor_item(z, i));
    char *text = print_of(back);
    assert_non_null(strstr(text, "1 constants (72 bytes, 1 made inside the function)"));
    free(text);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_the_data_dependent_diagnosis_survives_a_file(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(2, 2)), *y;
    dla_accel *af = dla_accelerate(reads_a_value, NULL);
    dla_accel_call(af, NULL, 1, &x, 1, &y);
    dla_trace *back = through_file(af, "datadep.dlt");
    char *text = print_of(back);
    assert_non_null(strstr(text, "data-dependent: the function read a traced value (1x1 double)"));
    assert_non_null(strstr(text, "(1 host reads)"));
    free(text);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static dla_status square(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_mul(in[0], in[0]);
    return DLA_OK;
}

/* x .* x from a dla_feval of its own: off the caller's tape. */
static dla_status square_in_a_feval(void *ctx, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    (void)ctx;
    return dla_feval(square, NULL, nin, in, nout, out);
}

/* sum(y .* x) and its gradient, y = square_in_a_feval(x) through the
 * trace ctx, or eagerly without one. */
static dla_status sum_of_replay_times_x(void *ctx, int nin, dla_tensor *const *in, int nout,
                                        dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *y;
    dla_status st = ctx ? dla_trace_replay(ctx, 1, in, 1, &y) : square_in_a_feval(NULL, 1, in, 1, &y);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[0]), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

/* Which ops ran off the function's tape is in the file (1.2): the loaded
 * trace, replayed inside dla_feval, differentiates what eager does (x .^ 2
 * here, not the 3 x .^ 2 of a nested square put on the caller's tape). */
static void test_ops_off_the_tape_stay_off_it_through_a_file(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((const double[]){1, 2, 3}, DLA_F64, "", DLA_DIMS(3)), *y;
    dla_accel *af = dla_accelerate(square_in_a_feval, NULL);
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    dla_trace *back = through_file(af, "offtape.dlt");
    dla_tensor *want[2], *got[2];
    assert_int_equal(dla_feval(sum_of_replay_times_x, NULL, 1, &x, 2, want), DLA_OK);
    if (dla_feval(sum_of_replay_times_x, back, 1, &x, 2, got) != DLA_OK)
        fail_msg("%s", dla_last_error());
    for (int64_t i = 0; i < 3; i++)
        tu_assert_near(dla_tensor_item(got[1], i), (double)((i + 1) * (i + 1)), 0);
    assert_same_bits(2, want, got);
    char *text = print_of(back);
    assert_non_null(strstr(text, "[off tape]"));
    free(text);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_a_move_to_the_recording_device_follows_the_replay(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(2, 3)), *y, *z;
    dla_accel *af = dla_accelerate(moves_a_constant, NULL);
    dla_accel_call(af, NULL, 1, &x, 1, &y);
    dla_trace *back = through_file(af, "move.dlt");
    dla_tensor *on_testmem = dla_tensor_to_device(x, dla_device_at(1));
    assert_int_equal(dla_trace_replay(back, 1, &on_testmem, 1, &z), DLA_OK);
    assert_ptr_equal(dla_tensor_device(z), dla_device_at(1));
    assert_same_bits(1, &y, &z);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_every_op_family_with_gradients_goes_through_a_file(void **state)
{
    dla_scope_begin();
    dla_tensor **in = zoo_inputs();
    dla_accel *af = dla_accelerate(zoo_loss, NULL);
    dla_tensor *first[ZOO_OUT];
    if (dla_accel_feval(af, NULL, ZOO_IN, in, ZOO_OUT, first) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_trace *back = through_file(af, "zoo.dlt");
    in[0] = dla_affine(in[0], -1.0, 0.5);
    assert_replays_alike(af, back, ZOO_IN, in, ZOO_OUT);
    /* Every op the trace holds was saved by name and found again. */
    dla_trace *t = dla_accel_trace(af, 0);
    char *a = print_of(t), *b = print_of(back);
    const char *want[] = {"dla_conv", "dla_transpconv", "dla_conv filter gradient",
                          "dla_batchnorm_train", "dla_dropout [rng]", "rand_like [rng]",
                          "dla_maxpool", "dla_index", "dla_cat", "dla_pad", "accumulate",
                          "dla_where", "dla_crossentropy"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(b, want[i]))
            fail_msg("the loaded trace has no %s", want[i]);
    /* The same program, line for line, but for the recording time. */
    assert_string_equal(strchr(a, '\n'), strchr(b, '\n'));
    free(a);
    free(b);
    dla_trace_release(t);
    dla_trace_release(back);
    dla_accel_free(af);
    dla_scope_end();
}

/* ------------------------------------------------------------- failures */

/* A small trace with a constant and an RNG slot, as file bytes. */
static unsigned char *sample_file(size_t *n)
{
    dla_scope_begin();
    dla_tensor **in = model_inputs(DLA_F64);
    dla_accel *af = dla_accelerate(model_loss, NULL);
    dla_tensor *out[4];
    assert_int_equal(dla_accel_feval(af, NULL, 5, in, 4, out), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_int_equal(dla_trace_save(t, path_of("sample.dlt")), DLA_OK);
    dla_trace_release(t);
    dla_accel_free(af);
    dla_scope_end();
    return read_all(path_of("sample.dlt"), n);
}

/* Loading path fails with status and a message naming the file and
 * saying what; nothing is left allocated. */
static void expect_load_error(const char *path, dla_status status, const char *what)
{
    long live = tu_live;
    dla_trace *t = (dla_trace *)(uintptr_t)1;
    dla_status st = dla_trace_load(path, &t);
    if (st != status || t != NULL)
        fail_msg("load of %s: status %s, expected %s (%s)", path, dla_status_str(st),
                 dla_status_str(status), dla_last_error());
    if (!strstr(dla_last_error(), path) || !strstr(dla_last_error(), what))
        fail_msg("\"%s\" does not name the file and say \"%s\"", dla_last_error(), what);
    assert_int_equal(tu_live, live);
}

static void test_a_missing_empty_foreign_or_folder_path_is_a_clear_error(void **state)
{
    expect_load_error(path_of("none.dlt"), DLA_ERR_IO, "cannot open it: No such file or directory");
    write_all(path_of("empty.dlt"), "", 0);
    expect_load_error(path_of("empty.dlt"), DLA_ERR_IO, "not a dlaccel trace file");
    const char text[] = "trace: 5 inputs, 4 outputs, 12 ops\n";
    write_all(path_of("text.dlt"), text, sizeof text - 1);
    expect_load_error(path_of("text.dlt"), DLA_ERR_IO, "not a dlaccel trace file");
    expect_load_error(dir, DLA_ERR_IO, "not a regular file");
    dla_trace *t;
    assert_int_equal(dla_trace_load(NULL, &t), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_trace_load(dir, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_trace_save(NULL, dir), DLA_ERR_INVALID_ARGUMENT);
}

/* Found by a mutation fuzzer under ASan: a file that is no trace was
 * read whole before its magic was looked at, so a sparse file of 2 TB
 * asked the allocator for 2 TB (ASan aborts; plain, an out-of-memory
 * error about a file that is simply not a trace). Now refused by its
 * first bytes. Skipped where the folder cannot hold a sparse file that
 * size. */
static void test_a_huge_file_that_is_no_trace_is_refused_unread(void **state)
{
    (void)state;
    const char *path = path_of("huge.dlt");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const int sparse = ftruncate(fileno(f), (off_t)2 << 40) == 0;
    fclose(f);
    if (!sparse) {
        unlink(path);
        skip();
    }
    dla_trace *t = (dla_trace *)1;
    assert_int_equal(dla_trace_load(path, &t), DLA_ERR_IO);
    assert_null(t);
    unlink(path);
    assert_non_null(strstr(dla_last_error(), "not a dlaccel trace file"));
}

/* A FIFO no one writes to: open waited for a writer for ever before the
 * load could see that it is not a regular file. Loaded in a child that
 * may run 10 s, so that a wait fails the test instead of hanging it. */
static void test_a_fifo_without_a_writer_is_refused_at_once(void **state)
{
    (void)state;
    const char *path = path_of("nowriter.fifo");
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        dla_trace *t;
        const dla_status st = dla_trace_load(path, &t);
        _exit(st == DLA_ERR_IO && strstr(dla_last_error(), "not a regular file") ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    unlink(path);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the load %s", WIFSIGNALED(status) ? "waited until killed (10 s)"
                                                    : "did not fail with \"not a regular file\"");
}

static void test_saving_where_no_file_can_be_made_names_the_path(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(2, 2)), *y;
    dla_accel *af = dla_accelerate(noise_like, NULL);
    dla_accel_call(af, NULL, 1, &x, 1, &y);
    dla_trace *t = dla_accel_trace(af, 0);
    const char *p = path_of("no/such/folder/t.dlt");
    assert_int_equal(dla_trace_save(t, p), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), p));
    assert_non_null(strstr(dla_last_error(), "No such file or directory"));
    /* Over an existing file: whole or not at all, and no temporary left. */
    assert_int_equal(dla_trace_save(t, path_of("over.dlt")), DLA_OK);
    assert_int_equal(dla_trace_save(t, path_of("over.dlt")), DLA_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | grep -c tmp) -eq 0", dir);
    assert_int_equal(system(cmd), 0);
    dla_trace_release(t);
    dla_accel_free(af);
    dla_scope_end();
}

static void test_every_truncation_is_an_error(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("cut.dlt");
    for (size_t len = 0; len < n; len++) {
        write_all(path, p, len);
        expect_load_error(path, DLA_ERR_IO, len < 8 ? "not a dlaccel trace file" : "truncated");
    }
    free(p);
}

static void test_every_flipped_byte_is_an_error(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("flip.dlt");
    for (size_t i = 0; i < n; i++)
        for (int pattern = 0; pattern < 2; pattern++) {
            unsigned char keep = p[i];
            p[i] ^= pattern ? 0xFF : (unsigned char)(1u << (i % 8));
            write_all(path, p, n);
            long live = tu_live;
            dla_trace *t;
            dla_status st = dla_trace_load(path, &t);
            if (st == DLA_OK)
                fail_msg("byte %zu flipped (0x%02x -> 0x%02x) loads", i, keep, p[i]);
            if (!strstr(dla_last_error(), path))
                fail_msg("byte %zu: \"%s\" does not name the file", i, dla_last_error());
            assert_int_equal(tu_live, live);
            p[i] = keep;
        }
    free(p);
}


/* A refusal quotes what the file holds (an op's name, a value's format):
 * an escape character there reached the message as it was, and `dlaccel
 * trace` wrote it to the terminal. Each byte set to ESC in turn, the
 * checksum made to pass: no message holds a control character. */
static void test_a_refusal_shows_control_characters_as_text(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("escape.dlt");
    int quoted = 0;
    for (size_t i = 32; i + 8 < n; i++) {
        unsigned char keep = p[i];
        p[i] = 0x1b;
        fix_checksum(p, n);
        write_all(path, p, n);
        dla_trace *t = NULL;
        if (dla_trace_load(path, &t) == DLA_OK) {
            dla_trace_release(t);
        } else {
            const char *msg = dla_last_error();
            for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                    fail_msg("byte %zu: 0x%02x in: %s", i, *c, msg);
            quoted += strstr(msg, "\\x1b") != NULL;
        }
        p[i] = keep;
    }
    assert_true(quoted > 0);
    free(p);
}
/* Files that pass the checksum: whatever the bytes say, the load answers
 * with a trace or an error, and leaks nothing. */
static void test_bytes_that_pass_the_checksum_never_crash_the_load(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("fuzz.dlt");
    static const unsigned char patterns[] = {0x01, 0x80, 0xFF, 0x7F, 0x10};
    int loaded = 0, refused = 0;
    for (size_t i = 32; i + 8 < n; i++)
        for (size_t k = 0; k < sizeof patterns; k++) {
            unsigned char keep = p[i];
            p[i] ^= patterns[k];
            fix_checksum(p, n);
            write_all(path, p, n);
            long live = tu_live;
            dla_trace *t = NULL;
            if (dla_trace_load(path, &t) == DLA_OK) {
                char *text = print_of(t);
                free(text);
                dla_trace_release(t);
                loaded++;
            } else {
                assert_non_null(strstr(dla_last_error(), path));
                refused++;
            }
            assert_int_equal(tu_live, live);
            p[i] = keep;
        }
    fix_checksum(p, n);
    assert_true(loaded > 0 && refused > 0);
    free(p);
}

static void test_a_newer_major_version_is_refused_and_a_newer_minor_read(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("version.dlt");
    uint16_t v = 2, minor = 0;
    memcpy(p + 8, &v, 2);
    memcpy(p + 10, &minor, 2);
    write_all(path, p, n);
    expect_load_error(path, DLA_ERR_UNSUPPORTED, "trace format 2.0; this library");
    expect_load_error(path, DLA_ERR_UNSUPPORTED, "the file is newer, update dlaccel");
    /* 1.9 with a section this library does not know, before END: skipped. */
    v = 1;
    minor = 9;
    memcpy(p + 8, &v, 2);
    memcpy(p + 10, &minor, 2);
    size_t m = n + 24;
    unsigned char *q = malloc(m);
    memcpy(q, p, n - 24);
    memcpy(q + n - 24, "XTRA\0\0\0\0", 8);
    uint64_t len = 5;
    memcpy(q + n - 16, &len, 8);
    memcpy(q + n - 8, "hello\0\0\0", 8);
    memcpy(q + n, p + n - 24, 24);
    uint64_t size = m;
    memcpy(q + 24, &size, 8);
    fix_checksum(q, m);
    write_all(path, q, m);
    dla_trace *t;
    if (dla_trace_load(path, &t) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_trace_release(t);
    free(q);
    free(p);
}

/* out[0] = in[0] - in[1]. */
static dla_status difference(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_sub(in[0], in[1]);
    return DLA_OK;
}

/* t recorded as f(x, x) reads input 1 in both places: (a, b) is refused,
 * (a, a) replays, a NULL second input is refused. */
static void expect_replay_needs_the_same_tensor_twice(dla_trace *t, dla_tensor *a, dla_tensor *b,
                                                      const char *why)
{
    dla_tensor *out;
    assert_int_equal(dla_trace_replay(t, 2, (dla_tensor *[]){a, b}, 1, &out),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), why));
    assert_int_equal(dla_trace_replay(t, 2, (dla_tensor *[]){a, NULL}, 1, &out),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "input 2 is NULL"));
    assert_int_equal(dla_trace_replay(t, 2, (dla_tensor *[]){a, a}, 1, &out), DLA_OK);
    for (int i = 0; i < 3; i++)
        assert_true(dla_tensor_item(out, i) == 0.0);
}

/* A section of p (n bytes) by tag: its header's offset, and its size with
 * header and padding; 0 when there is none. */
static size_t find_section(const unsigned char *p, size_t n, const char *tag, size_t *bytes)
{
    for (size_t pos = 32; pos + 16 <= n - 24;) {
        uint64_t len;
        memcpy(&len, p + pos + 8, 8);
        *bytes = 16 + (size_t)(len + 7) / 8 * 8;
        if (memcmp(p + pos, tag, 4) == 0)
            return pos;
        pos += *bytes;
    }
    return 0;
}

static void test_an_input_recorded_twice_must_be_passed_twice(void **state)
{
    /* dla_trace_replay of a trace recorded as f(x, x) with two tensors
     * computed f(a, a) and said nothing (and a NULL in the slot it does
     * not read crashed). Format 1.1 keeps which slot is which; a 1.0
     * file only tells that a slot has no value. */
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(3)), *a = dla_randn(DLA_F64, "", DLA_DIMS(3)),
               *b = dla_randn(DLA_F64, "", DLA_DIMS(3)), *out;
    dla_accel *af = dla_accelerate(difference, NULL);
    assert_int_equal(dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, x}, 1, &out), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    const char *why = "input 2 was recorded as the same tensor as input 1, and the trace reads "
                      "input 1 in both places";
    expect_replay_needs_the_same_tensor_twice(t, a, b, why);
    dla_trace *back = through_file(af, "twice.dlt");
    expect_replay_needs_the_same_tensor_twice(back, a, b, why);
    dla_trace_release(back);
    dla_trace_release(t);
    dla_accel_free(af);

    size_t n, bytes = 0;
    unsigned char *p = read_all(path_of("twice.dlt"), &n);
    size_t at = find_section(p, n, "ALIA", &bytes);
    assert_true(at > 0);
    memmove(p + at, p + at + bytes, n - at - bytes); /* as a 1.0 writer wrote it */
    n -= bytes;
    uint16_t minor = 0;
    uint64_t size = n;
    memcpy(p + 10, &minor, 2);
    memcpy(p + 24, &size, 8);
    fix_checksum(p, n);
    write_all(path_of("twice10.dlt"), p, n);
    free(p);
    if (dla_trace_load(path_of("twice10.dlt"), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    expect_replay_needs_the_same_tensor_twice(back, a, b, "input 2 was recorded as the same "
                                              "tensor as an earlier input");
    dla_trace_release(back);
    dla_scope_end();
}

/* The file p (n bytes) with the first op named name in its ENTS section
 * given one input less (its count and its last id gone; the section's
 * length, padding, the file size and the checksum made to fit), into a
 * new buffer of *m bytes. */
static unsigned char *drop_an_input(const unsigned char *p, size_t n, const char *name, size_t *m)
{
    size_t bytes = 0, at = find_section(p, n, "ENTS", &bytes);
    assert_true(at > 0);
    uint64_t len;
    memcpy(&len, p + at + 8, 8);
    const unsigned char *sec = p + at + 16;
    size_t gone = SIZE_MAX;
    for (size_t q = 0; q < len && gone == SIZE_MAX;) {
        uint16_t sl;
        memcpy(&sl, sec + q, 2);
        size_t c = q + 2 + sl; /* nin, nout, nsaved, 0 */
        unsigned ids = sec[c] + sec[c + 1] + sec[c + 2];
        if (sl == strlen(name) && memcmp(sec + q + 2, name, sl) == 0)
            gone = c; /* its count at c, its last input's id at c + 4 + 4 (nin - 1) */
        uint32_t alen;
        memcpy(&alen, sec + c + 4 + 4 * ids, 4);
        q = c + 4 + 4 * ids + 4 + alen;
    }
    assert_true(gone != SIZE_MAX);
    unsigned char *out = calloc(1, n + 8);
    memcpy(out, p, at + 16);
    const size_t id_at = gone + 4 + 4 * (size_t)(sec[gone] - 1);
    memcpy(out + at + 16, sec, id_at);
    memcpy(out + at + 16 + id_at, sec + id_at + 4, len - id_at - 4);
    out[at + 16 + gone] = (unsigned char)(sec[gone] - 1);
    const uint64_t nlen = len - 4;
    memcpy(out + at + 8, &nlen, 8);
    const size_t rest = at + bytes, to = at + 16 + (size_t)(nlen + 7) / 8 * 8;
    memcpy(out + to, p + rest, n - rest);
    *m = to + n - rest;
    const uint64_t size = *m;
    memcpy(out + 24, &size, 8);
    fix_checksum(out, *m);
    return out;
}

static dla_status convolve_one(void *ctx, int nin, dla_tensor *const *in, int nout,
                               dla_tensor **out)
{
    out[0] = dla_conv(in[0], in[1], NULL, NULL);
    return DLA_OK;
}

static void test_an_op_given_fewer_inputs_than_its_attributes_take_is_refused(void **state)
{
    /* A convolution of one input (its weights gone) passed the load and
     * crashed the replay, which read an input it was not given. */
    dla_scope_begin();
    dla_tensor *in[2] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(5, 5, 2, 1)),
                         dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 2, 4))},
               *out;
    dla_accel *af = dla_accelerate(convolve_one, NULL);
    assert_int_equal(dla_accel_call(af, NULL, 2, in, 1, &out), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_int_equal(dla_trace_save(t, path_of("conv.dlt")), DLA_OK);
    dla_trace_release(t);
    dla_accel_free(af);
    size_t n, m;
    unsigned char *p = read_all(path_of("conv.dlt"), &n);
    unsigned char *q = drop_an_input(p, n, "dla_conv", &m);
    write_all(path_of("conv1.dlt"), q, m);
    free(q);
    free(p);
    expect_load_error(path_of("conv1.dlt"), DLA_ERR_IO,
                      "op 0 (dla_conv): 1 input, which its attributes do not take");
    dla_scope_end();
}

/* Reductions over dims, a product, views of every kind, a concatenation,
 * a convolution and their gradients (accumulate through view chains,
 * expand): ops whose forward trusts its attributes. */
static dla_status shapes_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[0], *w = in[1], *k = in[2];
    dla_tensor *y = dla_add(dla_mean(x, DLA_DIMS(1, 3)), dla_max(dla_sum(x, DLA_DIMS(2)), DLA_DIMS(1)));
    dla_tensor *m = dla_mtimes(dla_reshape(x, "", DLA_DIMS(4, 6)), w);
    dla_tensor *s = dla_slice(dla_permute(x, DLA_DIMS(3, 1, 2)), 2, 1, 2, 4);
    dla_tensor *c = dla_squeeze(dla_sum(dla_cat(2, 2, (dla_tensor *[]){s, s}), DLA_DIMS(1)));
    dla_tensor *v = dla_conv(dla_reshape(x, "SSCB", DLA_DIMS(2, 3, 4, 1)), k, NULL, NULL);
    dla_tensor *loss = dla_add(dla_sum(dla_exp(y), 0, NULL), dla_sum(dla_square(m), 0, NULL));
    loss = dla_add(loss, dla_add(dla_sum(c, 0, NULL), dla_sum(v, 0, NULL)));
    out[0] = loss;
    return dla_gradient(loss, 3, in, out + 1);
}

static dla_tensor **shapes_inputs(void)
{
    static dla_tensor *in[3];
    dla_rng_seed(3);
    in[0] = dla_randn(DLA_F64, "", DLA_DIMS(2, 3, 4));
    in[1] = dla_randn(DLA_F64, "", DLA_DIMS(6, 5));
    in[2] = dla_randn(DLA_F64, "", DLA_DIMS(1, 2, 4, 2));
    return in;
}

/* Pools, the normalizations (batchnorm training and inference, group,
 * instance), gelu, dropout, padding, a gather, and their gradients (the
 * pools' backward ops, the normalizations' sums, the gather's scatter):
 * ops whose forward trusts its attributes, besides shapes_loss's. */
static dla_status pool_norm_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[0], *c = in[1], *idx = in[2];
    dla_tensor *bn, *mu, *var;
    dla_batchnorm_train(x, c, c, NULL, NULL, NULL, &bn, &mu, &var);
    dla_tensor *h = dla_add(bn, dla_batchnorm(x, c, c, dla_abs(c), dla_exp(c), NULL));
    h = dla_instancenorm(dla_groupnorm(h, 2, c, c, NULL), c, c, NULL);
    h = dla_dropout(dla_gelu(h, "tanh"), 0.25);
    dla_tensor *p = dla_maxpool(h, DLA_DIMS(2, 2), &(dla_pool_options){.stride = {2, 2}});
    p = dla_add(p, dla_avgpool(p, DLA_DIMS(3), &(dla_pool_options){.padding_mode = "same"}));
    p = dla_index(dla_pad(p, 1, (const int64_t[]){1}, (const int64_t[]){0}, 0.5), 1, idx);
    out[0] = dla_sum(dla_square(p), 0, NULL);
    out[1] = mu;
    return dla_gradient(out[0], 2, in, out + 2);
}

static dla_tensor **pool_norm_inputs(void)
{
    static dla_tensor *in[3];
    static const int32_t pick[3] = {2, 0, 1};
    dla_rng_seed(7);
    in[0] = dla_randn(DLA_F64, "SSCB", DLA_DIMS(4, 4, 2, 2));
    in[1] = dla_affine(dla_rand(DLA_F64, "", DLA_DIMS(2)), 1.0, 0.5);
    in[2] = dla_tensor_from_host(pick, DLA_I32, "", DLA_DIMS(3));
    return in;
}

/* softmax and logsoftmax, every loss, onehot encoding and decoding, casts,
 * rand_like and the gradients. */
static dla_status class_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dla_add(in[0], dla_rand_like(in[0])), *s = dla_softmax(y);
    dla_tensor *t = dla_onehotencode(in[1], 3, &(dla_onehot_options){.dtype = DLA_F64});
    dla_tensor *loss = dla_add(dla_crossentropy(s, t, NULL), dla_mse(y, t, NULL));
    loss = dla_add(loss, dla_add(dla_l1loss(y, t, NULL), dla_l2loss(y, t, NULL)));
    loss = dla_add(loss, dla_binary_crossentropy(dla_sigmoid(y), t, NULL));
    loss = dla_add(loss, dla_sum(dla_logsoftmax(y), 0, NULL));
    loss = dla_add(loss, dla_sum(dla_mul(y, dla_cast(dla_onehotdecode(s, NULL), DLA_F64)), 0, NULL));
    out[0] = loss;
    return dla_gradient(loss, 1, in, out + 1);
}

static dla_tensor **class_inputs(void)
{
    static dla_tensor *in[2];
    static const int32_t labels[2] = {2, 0};
    dla_rng_seed(9);
    in[0] = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 2));
    in[1] = dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, 2));
    return in;
}

/* A function whose saved trace the tests below change: fn on inputs()
 * (nin of them), nout outputs. */
typedef struct sweep_fn {
    dla_function fn;
    int nin, nout;
    dla_tensor **(*inputs)(void);
} sweep_fn;

static const sweep_fn shapes_fn = {shapes_loss, 3, 4, shapes_inputs};
static const sweep_fn pool_norm_fn = {pool_norm_loss, 3, 4, pool_norm_inputs};
static const sweep_fn class_fn = {class_loss, 2, 2, class_inputs};

#define SWEEP_OUT 8

/* Where the attributes of each op of the file p (n bytes) lie: up to max
 * (offset, length, name) triples; returns the op count. */
typedef struct attr_span {
    size_t at, len;
    char name[64];
} attr_span;

static int attr_spans(const unsigned char *p, size_t n, attr_span *a, int max)
{
    size_t bytes = 0, at = find_section(p, n, "ENTS", &bytes);
    assert_true(at > 0);
    uint64_t len;
    memcpy(&len, p + at + 8, 8);
    const unsigned char *sec = p + at + 16;
    int k = 0;
    for (size_t q = 0; q < len; k++) {
        uint16_t sl;
        memcpy(&sl, sec + q, 2);
        size_t c = q + 2 + sl;
        unsigned ids = sec[c] + sec[c + 1] + sec[c + 2];
        uint32_t alen;
        memcpy(&alen, sec + c + 4 + 4 * ids, 4);
        if (k < max) {
            snprintf(a[k].name, sizeof a[k].name, "%.*s", (int)sl, (const char *)sec + q + 2);
            a[k].at = at + 16 + c + 4 + 4 * ids + 4;
            a[k].len = alen;
        }
        q = c + 4 + 4 * ids + 4 + alen;
    }
    return k;
}

/* f's trace saved, as file bytes, and the outputs of its replay. */
static unsigned char *sweep_file(const sweep_fn *f, size_t *n, dla_tensor **want)
{
    dla_tensor **in = f->inputs();
    dla_accel *af = dla_accelerate(f->fn, NULL);
    dla_tensor *first[SWEEP_OUT];
    assert_true(f->nout <= SWEEP_OUT);
    if (dla_accel_feval(af, NULL, f->nin, in, f->nout, first) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_trace *t = dla_accel_trace(af, 0);
    assert_int_equal(dla_trace_save(t, path_of("sweep.dlt")), DLA_OK);
    assert_int_equal(dla_trace_replay(t, f->nin, in, f->nout, want), DLA_OK);
    dla_trace_release(t);
    dla_accel_free(af);
    return read_all(path_of("sweep.dlt"), n);
}

/* What became of a changed file. */
enum { REFUSED, FAILED, REPLAYED };

/* p with byte i set to v and the checksum fixed, loaded and replayed:
 * an error naming the file, an error of the replay, or outputs of the
 * recorded shapes and dtypes. */
static int load_and_replay(const sweep_fn *f, unsigned char *p, size_t n, size_t i,
                           unsigned char v, dla_tensor **want, const char *name)
{
    const char *path = path_of("attrs.dlt");
    unsigned char keep = p[i];
    p[i] = v;
    fix_checksum(p, n);
    write_all(path, p, n);
    p[i] = keep;
    dla_trace *t = NULL;
    if (dla_trace_load(path, &t) != DLA_OK) {
        if (!strstr(dla_last_error(), path))
            fail_msg("byte %zu: \"%s\" does not name the file", i, dla_last_error());
        return REFUSED;
    }
    dla_tensor *got[SWEEP_OUT];
    dla_status st = dla_trace_replay(t, f->nin, f->inputs(), f->nout, got);
    if (st != DLA_OK && !dla_last_error()[0])
        fail_msg("byte %zu (of op %s) set to 0x%02x: the replay failed without a message", i,
                 name, v);
    for (int o = 0; st == DLA_OK && o < f->nout; o++) {
        int64_t a[DLA_MAX_DIMS], b[DLA_MAX_DIMS];
        int na = dla_tensor_dims(got[o], a), nb = dla_tensor_dims(want[o], b);
        if (na != nb || memcmp(a, b, sizeof *a * (size_t)na) ||
            dla_tensor_dtype(got[o]) != dla_tensor_dtype(want[o]))
            fail_msg("byte %zu (of op %s) set to 0x%02x: output %d has other dims", i, name, v,
                     o + 1);
    }
    dla_trace_release(t);
    return st == DLA_OK ? REPLAYED : FAILED;
}

/* Nonzero when span k of p is one of the ops skip[0..nskip-1] (another
 * sweep covers those) or, with skip given, repeats an earlier op: one of
 * the same name with the same attribute bytes (a fill of zeros, a second
 * gemm of the same transposes). */
static int seen_before(const unsigned char *p, const attr_span *a, int k, const attr_span *skip,
                       int nskip)
{
    for (int j = 0; j < nskip; j++)
        if (!strcmp(skip[j].name, a[k].name))
            return 1;
    for (int j = 0; skip && j < k; j++)
        if (!strcmp(a[j].name, a[k].name) && a[j].len == a[k].len &&
            !memcmp(p + a[j].at, p + a[k].at, a[k].len))
            return 1;
    return 0;
}

/* Every attribute byte of f's trace set to 0, 0xFF, itself + 1 and 0x40
 * in turn, but those of ops that repeat one before or that the trace of
 * other (NULL: none) has too: counts[REFUSED, FAILED, REPLAYED]. */
static void sweep_attribute_bytes(const sweep_fn *f, const sweep_fn *other, int min_ops,
                                  int *counts)
{
    dla_scope_begin();
    dla_tensor *want[SWEEP_OUT];
    size_t n, on;
    attr_span a[256], skip_[256], *skip = NULL;
    int nskip = 0;
    if (other) {
        unsigned char *op = sweep_file(other, &on, want);
        nskip = attr_spans(op, on, skip_, 256);
        skip = skip_;
        free(op);
    }
    unsigned char *p = sweep_file(f, &n, want);
    int nops = attr_spans(p, n, a, 256), swept = 0;
    assert_true(nops <= 256);
    memset(counts, 0, 3 * sizeof *counts);
    for (int k = 0; k < nops; k++) {
        if (seen_before(p, a, k, skip, nskip))
            continue;
        swept++;
        for (size_t b = 0; b < a[k].len; b++) {
            size_t i = a[k].at + b;
            const unsigned char vals[] = {0x00, 0xFF, (unsigned char)(p[i] + 1), 0x40};
            for (size_t m = 0; m < sizeof vals; m++) {
                if (vals[m] == p[i])
                    continue;
                long live = tu_live;
                dla_scope_begin();
                int r = load_and_replay(f, p, n, i, vals[m], want, a[k].name);
                dla_scope_end();
                counts[r]++;
                /* A refused load leaves nothing (a replay may keep caches). */
                if (r == REFUSED)
                    assert_int_equal(tu_live, live);
            }
        }
    }
    assert_true(swept > min_ops);
    print_message("%d of %d ops swept; changed attribute bytes: %d refused by the load, %d failed "
                  "in the replay, %d replayed to the recorded shapes\n", swept, nops,
                  counts[REFUSED], counts[FAILED], counts[REPLAYED]);
    free(p);
    dla_scope_end();
}

static void test_changed_attribute_bytes_never_crash_a_replay(void **state)
{
    /* Attributes are loaded as bytes and forward trusts them: one byte of
     * them changed (the checksum fixed) crashed the replay in 1089 of 14k
     * tries (an op enum indexing a table, a reduce or cat dim indexing
     * dims, a slice step of 0, a permutation that is none, a view chain
     * of accumulate, a convolution's geometry). The load checks each
     * op's attributes against its recorded shapes now. */
    int counts[3];
    sweep_attribute_bytes(&shapes_fn, NULL, 12, counts);
    assert_true(counts[REFUSED] > 0 && counts[REPLAYED] > 0);
}

static void test_changed_attribute_bytes_of_nn_ops_never_crash_a_replay(void **state)
{
    /* The same for pools and their backward geometries, the
     * normalizations and their sums, the losses, softmax, gelu, gemm,
     * pad, index and its scatter, onehot, cast, dropout, rand_like and
     * fills: before they had infer, one changed byte of theirs crashed
     * the replay (a norm_fn or mode indexing a table, a pool geometry's
     * counts sizing its kernel views, a norm_sums shape assertion, a
     * mask divisor without a mask), or replayed to other shapes. */
    int counts[3];
    sweep_attribute_bytes(&pool_norm_fn, &shapes_fn, 12, counts);
    assert_true(counts[REFUSED] > 0 && counts[REPLAYED] > 0);
    sweep_attribute_bytes(&class_fn, &shapes_fn, 10, counts);
    assert_true(counts[REFUSED] > 0 && counts[REPLAYED] > 0);
}

/* The first op named name in f's file: the file with its attribute bytes
 * at off (width bytes) set to v, loaded: refused, saying what. */
static void expect_attr_refused_in(const sweep_fn *f, const char *name, size_t off, int64_t v,
                                   size_t width, const char *what)
{
    dla_scope_begin();
    dla_tensor *want[SWEEP_OUT];
    size_t n;
    unsigned char *p = sweep_file(f, &n, want);
    attr_span a[256];
    int nops = attr_spans(p, n, a, 256), k = 0;
    while (k < nops && strcmp(a[k].name, name) != 0)
        k++;
    assert_true(k < nops && off + width <= a[k].len);
    memcpy(p + a[k].at + off, &v, width); /* little-endian machines: the low bytes */
    fix_checksum(p, n);
    write_all(path_of("attr1.dlt"), p, n);
    char msg[256];
    snprintf(msg, sizeof msg, "(%s): its attributes", name);
    expect_load_error(path_of("attr1.dlt"), DLA_ERR_IO, msg);
    if (!strstr(dla_last_error(), what))
        fail_msg("\"%s\" does not say \"%s\"", dla_last_error(), what);
    free(p);
    dla_scope_end();
}

static void expect_attr_refused(const char *name, size_t off, int64_t v, size_t width,
                                const char *what)
{
    expect_attr_refused_in(&shapes_fn, name, off, v, width, what);
}

static void test_attributes_that_crashed_a_replay_are_refused_by_the_load(void **state)
{
    /* Each of these crashed dla_trace_replay (SIGSEGV, SIGFPE) or ran it
     * for minutes before the load checked attributes. */
    expect_attr_refused("binary", 0, 0x7f, 4, "attribute op is 127");
    expect_attr_refused("unary", 0, -1, 4, "attribute op is -1");
    expect_attr_refused("reduce", 0, 255, 4, "attribute op is 255");
    expect_attr_refused("reduce", 8, 0, 8, "entry 1 is 0");
    expect_attr_refused("dla_cat", 0, 0x40, 4, "attribute dim is 65");
    expect_attr_refused("dla_permute", 8, 7, 8, "no permutation");
    expect_attr_refused("dla_slice", 16, 0, 8, "step 0");
    expect_attr_refused("dla_reshape", 8, 5, 8, "cannot take attribute dims");
    expect_attr_refused("expand", 0, 0x40, 4, "attribute ndims is 64");
    expect_attr_refused("dla_conv", 0, 0x40, 4, "does not hold together");
}

static void test_nn_attributes_that_crashed_a_replay_are_refused_by_the_load(void **state)
{
    /* Offsets are into each op's attribute struct. Before these ops had
     * infer, each of these crashed the replay with SIGSEGV: a norm_fn or
     * norm_mode indexing a table, an avg pool under maxpool's op (no
     * saved index), a pool backward's count of pooled dims sizing its
     * kernel views, pad's and the scatter's dim counts, onehotdecode's
     * feature dim, a mask normalization without a mask. */
    const sweep_fn *pn = &pool_norm_fn, *cl = &class_fn;
    expect_attr_refused_in(pn, "dla_batchnorm_train", 0, 0x00ff0001, 4, "fn 16711681");
    expect_attr_refused_in(pn, "dla_batchnorm", 4, 0x40000000, 4, "mode 1073741824");
    expect_attr_refused_in(pn, "norm", 4, 0x40000005, 4, "mode 1073741829");
    expect_attr_refused_in(pn, "dla_maxpool", 0, 1, 4, "not this op's");
    expect_attr_refused_in(pn, "dla_maxpool backward", 8, 0x40, 4, "64 pooled dims");
    expect_attr_refused_in(pn, "dla_pad", 0, 0x40, 4, "ndims: 64 is outside");
    expect_attr_refused_in(pn, "dla_index (gradient)", 4, 0x40, 4, "ndims is 64");
    expect_attr_refused_in(cl, "dla_onehotdecode", 0, 0x40, 4, "feature dim 65");
    expect_attr_refused_in(cl, "dla_crossentropy v2", 4, 2, 4, "normalization 2");
    /* These did not crash, and are refused too: they replayed other
     * results than were recorded (logsoftmax for softmax, NaN from a
     * dropout probability of 1), or failed in a later op or kernel, or
     * are a flag no call makes. */
    expect_attr_refused_in(cl, "dla_softmax", 0, 1, 4, "attribute log is 1");
    expect_attr_refused_in(pn, "dla_dropout", 0, 0x3FF0000000000000, 8, "prob: 1 is outside");
    expect_attr_refused_in(cl, "dla_mse v2", 8, 1, 4, "make result 1 3x2"); /* unreduced */
    expect_attr_refused_in(pn, "dla_avgpool backward", 40, 5, 8, "not the one its x");
    expect_attr_refused_in(pn, "dla_index", 0, 0x40, 4, "dim: 65 is outside");
    expect_attr_refused_in(pn, "dla__norm_sums", 0, 2, 1, "entry 1 is 2");
    expect_attr_refused_in(&shapes_fn, "gemm", 0, 2, 4, "ta 2");
    expect_attr_refused_in(&shapes_fn, "dla_cast", 0, 0x40, 4, "64 is not a dla_dtype");
}

static void test_another_byte_order_or_data_layout_is_refused(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    const char *path = path_of("foreign.dlt");
    unsigned char bom[4];
    memcpy(bom, p + 12, 4);
    for (int i = 0; i < 4; i++)
        p[12 + i] = bom[3 - i];
    write_all(path, p, n);
    expect_load_error(path, DLA_ERR_UNSUPPORTED, "other byte order");
    memcpy(p + 12, bom, 4);
    p[18] = 4; /* int64 aligned to 4 bytes, as on i386 */
    write_all(path, p, n);
    expect_load_error(path, DLA_ERR_UNSUPPORTED, "another data layout");
    free(p);
}

static void test_an_op_this_library_lacks_is_named(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    unsigned char *at = memmem(p, n, "gemm", 4);
    assert_non_null(at);
    memcpy(at, "gemz", 4);
    fix_checksum(p, n);
    const char *path = path_of("unknown.dlt");
    write_all(path, p, n);
    expect_load_error(path, DLA_ERR_UNSUPPORTED, "is \"gemz\", which this library");
    free(p);
}

static void test_a_load_that_runs_out_of_memory_fails_cleanly(void **state)
{
    size_t n;
    unsigned char *p = sample_file(&n);
    free(p);
    const char *path = path_of("sample.dlt");
    dla_trace *t;
    int failures = 0;
    for (long k = 1; k < 10000; k++) {
        long live = tu_live;
        tu_calls = 0;
        tu_fail_at = k;
        dla_status st = dla_trace_load(path, &t);
        tu_fail_at = 0;
        if (st == DLA_OK) {
            dla_trace_release(t);
            break;
        }
        failures++;
        if (st != DLA_ERR_OUT_OF_MEMORY)
            fail_msg("allocation %ld refused: %s", k, dla_last_error());
        assert_int_equal(tu_live, live);
    }
    assert_true(failures > 5);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    /* testmem as the second device, after the cpu. */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    snprintf(dir, sizeof dir, "%s/dla-trace-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_every_op_is_registered_under_a_unique_name),
        TU_TEST(test_a_loaded_trace_replays_bit_for_bit_on_the_cpu),
        TU_TEST(test_a_loaded_trace_replays_bit_for_bit_on_testmem),
        TU_TEST(test_a_trace_saved_on_the_cpu_replays_on_testmem),
        TU_TEST(test_rng_slots_draw_anew_after_a_load_as_before),
        TU_TEST(test_baked_constants_keep_their_values_through_a_file),
        TU_TEST(test_the_data_dependent_diagnosis_survives_a_file),
        TU_TEST(test_ops_off_the_tape_stay_off_it_through_a_file),
        TU_TEST(test_a_move_to_the_recording_device_follows_the_replay),
        TU_TEST(test_every_op_family_with_gradients_goes_through_a_file),
        TU_TEST(test_a_missing_empty_foreign_or_folder_path_is_a_clear_error),
        TU_TEST(test_a_fifo_without_a_writer_is_refused_at_once),
        TU_TEST(test_a_huge_file_that_is_no_trace_is_refused_unread),
        TU_TEST(test_saving_where_no_file_can_be_made_names_the_path),
        TU_TEST(test_every_truncation_is_an_error),
        TU_TEST(test_every_flipped_byte_is_an_error),
        TU_TEST(test_bytes_that_pass_the_checksum_never_crash_the_load),
        TU_TEST(test_a_refusal_shows_control_characters_as_text),
        TU_TEST(test_a_newer_major_version_is_refused_and_a_newer_minor_read),
        TU_TEST(test_an_input_recorded_twice_must_be_passed_twice),
        TU_TEST(test_an_op_given_fewer_inputs_than_its_attributes_take_is_refused),
        TU_TEST(test_changed_attribute_bytes_never_crash_a_replay),
        TU_TEST(test_changed_attribute_bytes_of_nn_ops_never_crash_a_replay),
        TU_TEST(test_attributes_that_crashed_a_replay_are_refused_by_the_load),
        TU_TEST(test_nn_attributes_that_crashed_a_replay_are_refused_by_the_load),
        TU_TEST(test_another_byte_order_or_data_layout_is_refused),
        TU_TEST(test_an_op_this_library_lacks_is_named),
        TU_TEST(test_a_load_that_runs_out_of_memory_fails_cleanly),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        failed++;
    return failed;
}

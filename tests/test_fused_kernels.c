/*
 * test_fused_kernels.c - the cpu plugin's ABI 1.2 fused kernel (other
 * plugins' are check-plugin's fused case, the same comparison).
 *
 * The contract is that a program gives the bits its instructions give
 * launched one by one, so the reference here is exactly that: each
 * instruction run through the same device's unary, binary or ternary
 * kernel into a dense register buffer (a comparison's logical result cast
 * to the program's dtype, a condition made logical with ne(c, 0)), and the
 * last register copied into y. Programs, shapes and views are random
 * (seeded): strided inputs with gaps and offsets, broadcast through stride
 * 0, short innermost dims against a long batch (class weights), one value
 * for the whole space, y aliasing an input, y strided; one space large
 * enough for the OpenMP team. The whole y buffer is compared, so a write
 * outside y's view fails too. Malformed programs are refused with a
 * status and a message.
 *
 * Devices are driven through their plugin table only (mem_alloc, the
 * kernel, copy_to_host), as in test_kernels.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include <dlaccel/device_table.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 20261121u;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t rnd_int(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)); }
static double rnd_unif(double lo, double hi) { return lo + (hi - lo) * ((double)(rnd() >> 11) / 9007199254740992.0); }
static int chance(int percent) { return rnd_int(0, 99) < percent; }

static char what[256];

/* ------------------------------------------------------------- devices */

static dla_device *fused_device(int i)
{
    dla_device *dev = dla_device_at(i);
    /* The cpu plugin only: every other plugin's fused kernel is held to
     * its steps by dlaccel check-plugin's fused case (tests/conformance.sh),
     * and the malformed programs refused below are the cpu plugin's own
     * checks, which plugin.h does not ask of others. */
    if (!dev || strcmp(dla_device_plugin(dev), "cpu") != 0)
        return NULL;
    if (!dla_device_table(dev)->fused ||
        (dla_device_table(dev)->supports &&
         !dla_device_table(dev)->supports(dla_device_context(dev), DLA_KERNEL_FUSED, DLA_F32)))
        return NULL;
    return dev;
}

static dla_mem dalloc(dla_device *dev, size_t bytes)
{
    dla_mem m;
    assert_int_equal(
        dla_device_table(dev)->mem_alloc(dla_device_context(dev), bytes ? bytes : 1, &m), DLA_OK);
    return m;
}

static void upload(dla_device *dev, dla_mem m, const void *src, size_t bytes)
{
    assert_int_equal(
        dla_device_table(dev)->copy_to_device(dla_device_context(dev), m, 0, src, bytes), DLA_OK);
}

static void download(dla_device *dev, void *dst, dla_mem m, size_t bytes)
{
    if (dla_device_table(dev)->sync)
        assert_int_equal(dla_device_table(dev)->sync(dla_device_context(dev)), DLA_OK);
    assert_int_equal(dla_device_table(dev)->copy_to_host(dla_device_context(dev), dst, m, 0, bytes),
                     DLA_OK);
}

static void expect_ok(dla_status st)
{
    if (st != DLA_OK)
        fail_msg("%s: %s (%s)", what, dla_status_str(st), dla_last_error());
}

/* ------------------------------------------------------------- views */

static dla_view dense(dla_mem m, dla_dtype t, int ndims, const int64_t *dims)
{
    dla_view v = {.struct_size = sizeof v, .mem = m, .dtype = t, .ndims = ndims};
    int64_t s = 1;
    for (int d = 0; d < ndims; d++) {
        v.dims[d] = dims[d];
        v.strides[d] = s;
        s *= dims[d];
    }
    return v;
}

/* A view of dims in a random dim order with gaps and an offset; with
 * broadcast, some dims (or, sometimes, all) get stride 0. Returns the
 * elements its memory needs. */
static int64_t random_view(dla_view *v, dla_dtype t, int ndims, const int64_t *dims, int broadcast)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = t;
    v->ndims = ndims;
    int order[DLA_MAX_DIMS];
    for (int d = 0; d < ndims; d++)
        order[d] = d;
    for (int d = ndims - 1; d > 0; d--) {
        int j = (int)rnd_int(0, d), tmp = order[d];
        order[d] = order[j], order[j] = tmp;
    }
    int all = broadcast && chance(10);
    int64_t s = chance(20) ? 2 : 1;
    for (int k = 0; k < ndims; k++) {
        int d = order[k];
        v->dims[d] = dims[d];
        if (all || (broadcast && chance(30))) {
            v->strides[d] = 0;
            continue;
        }
        v->strides[d] = s;
        s = s * dims[d] + (chance(30) ? rnd_int(1, 3) : 0);
    }
    v->offset = chance(50) ? rnd_int(0, 5) : 0;
    int64_t extent = 1;
    for (int d = 0; d < ndims; d++)
        extent += (dims[d] - 1) * v->strides[d];
    return v->offset + extent;
}

/* ----------------------------------------------------------- programs */

typedef struct bufs {
    dla_mem mem[DLA_FUSED_MAX_INPUTS + 1];
    int64_t n[DLA_FUSED_MAX_INPUTS + 1];
    int nbuf;
} bufs;

static size_t esize(dla_dtype t) { return dla_dtype_size(t); }

/* Fills a buffer of n elements with values in lo..hi, some exact zeros
 * (where's conditions) and some repeats (ties for comparisons). */
static dla_mem random_buffer(dla_device *dev, dla_dtype t, int64_t n)
{
    void *h = malloc((size_t)n * esize(t));
    for (int64_t i = 0; i < n; i++) {
        double v = chance(10) ? 0.0 : chance(10) ? 1.0 : rnd_unif(-3, 3);
        if (t == DLA_F32)
            ((float *)h)[i] = (float)v;
        else
            ((double *)h)[i] = v;
    }
    dla_mem m = dalloc(dev, (size_t)n * esize(t));
    upload(dev, m, h, (size_t)n * esize(t));
    free(h);
    return m;
}

/* Ops that keep values finite and ordinary enough to be interesting. */
static const dla_unary_op unary_pool[] = {
    DLA_UNARY_NEG,  DLA_UNARY_EXP,   DLA_UNARY_LOG,        DLA_UNARY_SQRT,  DLA_UNARY_ABS,
    DLA_UNARY_TANH, DLA_UNARY_SIGMOID, DLA_UNARY_RELU,     DLA_UNARY_AFFINE, DLA_UNARY_SIGN,
    DLA_UNARY_STEP, DLA_UNARY_SQUARE, DLA_UNARY_LEAKY_RELU, DLA_UNARY_RECIPROCAL, DLA_UNARY_ERF,
};

static void random_program(dla_fused_args *a, int ninputs)
{
    a->ninsns = (int32_t)rnd_int(1, DLA_FUSED_MAX_INSNS);
    for (int j = 0; j < a->ninsns; j++) {
        dla_fused_insn *in = &a->insns[j];
        memset(in, 0, sizeof *in);
        int r = (int)rnd_int(0, 9);
        int last = j == a->ninsns - 1;
        if (r < 4) {
            in->kind = DLA_FUSED_UNARY;
            in->op = unary_pool[rnd_int(0, (int64_t)(sizeof unary_pool / sizeof unary_pool[0]) - 1)];
            in->alpha = rnd_unif(-2, 2);
            in->beta = rnd_unif(-2, 2);
        } else if (r < 8) {
            in->kind = DLA_FUSED_BINARY;
            in->op = (int32_t)rnd_int(0, last ? DLA_BINARY_EQ - 1 : DLA_BINARY_COUNT - 1);
        } else {
            in->kind = DLA_FUSED_WHERE;
        }
        for (int k = 0; k < 3; k++)
            in->src[k] = j && chance(60) ? (int32_t)rnd_int(0, j - 1)
                                         : (int32_t)(-1 - rnd_int(0, ninputs - 1));
    }
}

static int is_comparison(const dla_fused_insn *in)
{
    return in->kind == DLA_FUSED_BINARY && in->op >= DLA_BINARY_EQ;
}

/* The view of operand src for the reference launches. */
static dla_view operand_view(const dla_fused_args *a, const dla_mem *regs, int32_t src)
{
    return src >= 0 ? dense(regs[src], a->dtype, a->y.ndims, a->y.dims) : a->inputs[-1 - src];
}

/* A logical view of operand src (nonzero), made in cond. */
static dla_view logical(dla_device *dev, const dla_fused_args *a, const dla_mem *regs, int32_t src,
                        dla_mem cond, dla_mem zero)
{
    dla_view c = dense(cond, DLA_BOOL, a->y.ndims, a->y.dims);
    dla_binary_args ne = {.struct_size = sizeof ne, .op = DLA_BINARY_NE, .z = c,
                          .a = operand_view(a, regs, src),
                          .b = dense(zero, a->dtype, a->y.ndims, a->y.dims)};
    for (int d = 0; d < ne.b.ndims; d++)
        ne.b.strides[d] = 0;
    expect_ok(dla_device_table(dev)->binary(dla_device_context(dev), &ne));
    return c;
}

/* Runs a's instructions one by one on dev into y (the reference). */
static void run_by_launches(dla_device *dev, const dla_fused_args *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->y.ndims; d++)
        n *= a->y.dims[d];
    dla_mem regs[DLA_FUSED_MAX_INSNS], cond = dalloc(dev, (size_t)n), zero = dalloc(dev, 8);
    upload(dev, zero, &(double){0}, 8);
    for (int j = 0; j < a->ninsns; j++) {
        const dla_fused_insn *in = &a->insns[j];
        regs[j] = dalloc(dev, (size_t)n * esize(a->dtype));
        dla_view r = dense(regs[j], a->dtype, a->y.ndims, a->y.dims);
        if (in->kind == DLA_FUSED_UNARY) {
            dla_unary_args u = {.struct_size = sizeof u, .op = in->op, .alpha = in->alpha,
                                .beta = in->beta, .y = r, .x = operand_view(a, regs, in->src[0])};
            expect_ok(dla_device_table(dev)->unary(dla_device_context(dev), &u));
        } else if (is_comparison(in)) {
            dla_binary_args b = {.struct_size = sizeof b, .op = in->op,
                                 .z = dense(cond, DLA_BOOL, a->y.ndims, a->y.dims),
                                 .a = operand_view(a, regs, in->src[0]),
                                 .b = operand_view(a, regs, in->src[1])};
            expect_ok(dla_device_table(dev)->binary(dla_device_context(dev), &b));
            expect_ok(dla_device_table(dev)->cast(dla_device_context(dev), &r, &b.z));
        } else if (in->kind == DLA_FUSED_BINARY) {
            dla_binary_args b = {.struct_size = sizeof b, .op = in->op, .z = r,
                                 .a = operand_view(a, regs, in->src[0]),
                                 .b = operand_view(a, regs, in->src[1])};
            expect_ok(dla_device_table(dev)->binary(dla_device_context(dev), &b));
        } else {
            dla_ternary_args t = {.struct_size = sizeof t, .op = DLA_TERNARY_WHERE, .z = r,
                                  .cond = logical(dev, a, regs, in->src[0], cond, zero),
                                  .a = operand_view(a, regs, in->src[1]),
                                  .b = operand_view(a, regs, in->src[2])};
            expect_ok(dla_device_table(dev)->ternary(dla_device_context(dev), &t));
        }
    }
    dla_view last = dense(regs[a->ninsns - 1], a->dtype, a->y.ndims, a->y.dims);
    expect_ok(dla_device_table(dev)->strided_copy(dla_device_context(dev), &a->y, &last));
    for (int j = 0; j < a->ninsns; j++)
        dla_device_table(dev)->mem_free(dla_device_context(dev), regs[j]);
    dla_device_table(dev)->mem_free(dla_device_context(dev), cond);
    dla_device_table(dev)->mem_free(dla_device_context(dev), zero);
}

/* Makes the inputs and y for dims (random views unless shape says), runs
 * the program both ways and compares every byte of y's memory. */
static void check_program(dla_device *dev, dla_fused_args *a, int ninputs, int ndims,
                          const int64_t *dims, int alias)
{
    a->struct_size = sizeof *a;
    a->ninputs = ninputs;
    dla_mem in_mem[DLA_FUSED_MAX_INPUTS];
    for (int i = 0; i < ninputs; i++) {
        int64_t need = random_view(&a->inputs[i], a->dtype, ndims, dims, 1);
        in_mem[i] = random_buffer(dev, a->dtype, need);
        a->inputs[i].mem = in_mem[i];
    }
    int64_t ny = random_view(&a->y, a->dtype, ndims, dims, 0);
    /* y's memory starts as garbage; both runs start from the same garbage. */
    dla_mem ym[2] = {random_buffer(dev, a->dtype, ny), dalloc(dev, (size_t)ny * esize(a->dtype))};
    void *start = malloc((size_t)ny * esize(a->dtype));
    download(dev, start, ym[0], (size_t)ny * esize(a->dtype));
    upload(dev, ym[1], start, (size_t)ny * esize(a->dtype));
    a->y.mem = ym[0];
    if (alias) {
        /* y is input 0, exactly: inputs read in place of the result. */
        a->inputs[0] = a->y;
        a->inputs[0].mem = ym[0];
    }
    dla_fused_args b = *a;
    b.y.mem = ym[1];
    if (alias)
        b.inputs[0].mem = ym[1];
    expect_ok(dla_device_table(dev)->fused(dla_device_context(dev), a));
    run_by_launches(dev, &b);
    size_t bytes = (size_t)ny * esize(a->dtype);
    unsigned char *got = malloc(bytes), *want = malloc(bytes);
    download(dev, got, ym[0], bytes);
    download(dev, want, ym[1], bytes);
    if (memcmp(got, want, bytes) != 0) {
        size_t at = 0;
        while (got[at] == want[at])
            at++;
        fail_msg("%s: y differs from the launches at byte %zu of %zu", what, at, bytes);
    }
    free(got);
    free(want);
    free(start);
    for (int i = 0; i < ninputs; i++)
        dla_device_table(dev)->mem_free(dla_device_context(dev), in_mem[i]);
    dla_device_table(dev)->mem_free(dla_device_context(dev), ym[0]);
    dla_device_table(dev)->mem_free(dla_device_context(dev), ym[1]);
}

/* ---------------------------------------------------------------- tests */

static void random_programs_give_the_bits_of_their_steps_launched_one_by_one(void **state)
{
    int tested = 0;
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev)
            continue;
        for (int t = 0; t < 2; t++)
            for (int rep = 0; rep < 150; rep++) {
                dla_fused_args a = {.dtype = t ? DLA_F64 : DLA_F32};
                int ninputs = (int)rnd_int(1, 4), ndims = (int)rnd_int(0, 4);
                int64_t dims[DLA_MAX_DIMS];
                for (int d = 0; d < ndims; d++)
                    dims[d] = chance(20) ? 1 : rnd_int(1, 9);
                random_program(&a, ninputs);
                snprintf(what, sizeof what, "%s %s program %d (%d insns, %d inputs, %dd)",
                         dla_device_name(dev), dla_dtype_name(a.dtype), rep, (int)a.ninsns, ninputs,
                         ndims);
                check_program(dev, &a, ninputs, ndims, dims, chance(20));
                tested++;
            }
    }
    if (!tested)
        skip();
}

static void short_rows_against_a_long_batch_and_large_spaces_match_too(void **state)
{
    int tested = 0;
    /* 4 classes x 128 (broadcast weights, per-observation scalars), one
     * long row, and a space large enough for the thread team. */
    static const int64_t shapes[][3] = {{4, 128, 1}, {3, 1000, 1}, {257, 3, 1}, {200, 300, 3}};
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev)
            continue;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int rep = 0; rep < 12; rep++) {
                dla_fused_args a = {.dtype = rep & 1 ? DLA_F64 : DLA_F32};
                int ninputs = (int)rnd_int(2, DLA_FUSED_MAX_INPUTS);
                random_program(&a, ninputs);
                snprintf(what, sizeof what, "%s %lldx%lldx%lld program %d", dla_device_name(dev),
                         (long long)shapes[s][0], (long long)shapes[s][1], (long long)shapes[s][2],
                         rep);
                check_program(dev, &a, ninputs, 3, shapes[s], rep % 3 == 0);
                tested++;
            }
    }
    if (!tested)
        skip();
}

static void a_chain_gives_the_values_written_out_by_hand(void **state)
{
    /* y = relu(x * w + b) over 2x3, w broadcast along dim 1, b a scalar. */
    int tested = 0;
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev)
            continue;
        float x[6] = {1, -2, 3, -4, 5, -6}, w[2] = {2, -1}, b = 0.5f, y[6];
        dla_mem mx = dalloc(dev, sizeof x), mw = dalloc(dev, sizeof w), mb = dalloc(dev, 4),
                my = dalloc(dev, sizeof y);
        upload(dev, mx, x, sizeof x);
        upload(dev, mw, w, sizeof w);
        upload(dev, mb, &b, 4);
        const int64_t dims[2] = {2, 3};
        dla_fused_args a = {.struct_size = sizeof a, .dtype = DLA_F32, .ninputs = 3, .ninsns = 3};
        a.y = dense(my, DLA_F32, 2, dims);
        a.inputs[0] = dense(mx, DLA_F32, 2, dims);
        a.inputs[1] = dense(mw, DLA_F32, 2, dims);
        a.inputs[1].strides[1] = 0;
        a.inputs[2] = dense(mb, DLA_F32, 2, dims);
        a.inputs[2].strides[0] = a.inputs[2].strides[1] = 0;
        a.insns[0] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_MUL, {-1, -2, 0}, 0, 0};
        a.insns[1] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_ADD, {0, -3, 0}, 0, 0};
        a.insns[2] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_RELU, {1, 0, 0}, 0, 0};
        snprintf(what, sizeof what, "%s relu(x .* w + b)", dla_device_name(dev));
        expect_ok(dla_device_table(dev)->fused(dla_device_context(dev), &a));
        download(dev, y, my, sizeof y);
        const float want[6] = {2.5f, 2.5f, 6.5f, 4.5f, 10.5f, 6.5f};
        assert_memory_equal(y, want, sizeof y);
        dla_mem all[] = {mx, mw, mb, my};
        for (int k = 0; k < 4; k++)
            dla_device_table(dev)->mem_free(dla_device_context(dev), all[k]);
        tested++;
    }
    if (!tested)
        skip();
}

static void malformed_programs_are_refused_with_a_message(void **state)
{
    int tested = 0;
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev)
            continue;
        const int64_t dims[1] = {8};
        dla_mem m = dalloc(dev, 64 * sizeof(float));
        dla_fused_args a = {.struct_size = sizeof a, .dtype = DLA_F32, .ninputs = 1, .ninsns = 1};
        a.y = dense(m, DLA_F32, 1, dims);
        a.inputs[0] = dense(m, DLA_F32, 1, dims);
        a.inputs[0].offset = 16;
        a.insns[0] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_NEG, {-1, 0, 0}, 0, 0};
        snprintf(what, sizeof what, "%s well formed", dla_device_name(dev));
        expect_ok(dla_device_table(dev)->fused(dla_device_context(dev), &a));

        dla_fused_args bad = a;
        bad.insns[0].src[0] = 0; /* its own register */
        dla_clear_error();
        assert_int_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad),
                         DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "insns[0]"));
        bad = a;
        bad.insns[0].src[0] = -2; /* input 1 of 1 */
        assert_int_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad),
                         DLA_ERR_INVALID_ARGUMENT);
        bad = a;
        bad.insns[0].kind = 7;
        assert_int_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad),
                         DLA_ERR_UNSUPPORTED);
        bad = a;
        bad.inputs[0].offset = 4; /* overlaps y, not as y */
        dla_clear_error();
        assert_int_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad),
                         DLA_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(dla_last_error(), "overlaps"));
        bad = a;
        bad.dtype = DLA_I32;
        assert_int_not_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad), DLA_OK);
        bad = a;
        bad.ninsns = DLA_FUSED_MAX_INSNS + 1;
        assert_int_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad),
                         DLA_ERR_INVALID_ARGUMENT);
        bad = a;
        bad.inputs[0].dims[0] = 7;
        assert_int_not_equal(dla_device_table(dev)->fused(dla_device_context(dev), &bad), DLA_OK);
        dla_device_table(dev)->mem_free(dla_device_context(dev), m);
        tested++;
    }
    if (!tested)
        skip();
}

static void the_cpu_plugin_has_the_fused_kernel(void **state)
{
    int found = 0;
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = dla_device_at(i);
        if (dev && !strcmp(dla_device_plugin(dev), "cpu")) {
            found = 1;
            assert_non_null(dla_device_table(dev)->fused);
            assert_int_equal(dla_device_abi_minor(dev) >= 2, 1);
            assert_true(dla_device_table(dev)->supports(dla_device_context(dev), DLA_KERNEL_FUSED,
                                                        DLA_F64));
            assert_false(dla_device_table(dev)->supports(dla_device_context(dev), DLA_KERNEL_FUSED,
                                                         DLA_I32));
        }
    }
    assert_true(found);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_cpu_plugin_has_the_fused_kernel),
        cmocka_unit_test(a_chain_gives_the_values_written_out_by_hand),
        cmocka_unit_test(random_programs_give_the_bits_of_their_steps_launched_one_by_one),
        cmocka_unit_test(short_rows_against_a_long_batch_and_large_spaces_match_too),
        cmocka_unit_test(malformed_programs_are_refused_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

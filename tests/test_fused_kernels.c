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
#include <omp.h>
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
     * long row, a space large enough for the thread team, and rows of 64
     * to 511 (blocks of one row each where an input is a padded view: an
     * LSTM's gates, 128-row slices of a 512-row product). */
    static const int64_t shapes[][3] = {{4, 128, 1}, {3, 1000, 1}, {257, 3, 1}, {200, 300, 3},
                                        {128, 64, 1}, {64, 9, 5}};
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

/* ------------------------------------------------- fused_reduce, fused_multi */

/* The elements of dims. */
static int64_t count_of(int ndims, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    return n;
}

/* random_view, or for an empty space a dense view (random_view's extent
 * assumes no dim of 0). */
static int64_t any_view(dla_view *v, dla_dtype t, int ndims, const int64_t *dims, int broadcast)
{
    if (count_of(ndims, dims) > 0)
        return random_view(v, t, ndims, dims, broadcast);
    *v = dense(NULL, t, ndims, dims);
    return 1;
}

/* Element p (column-major over dims) of view v, as a double. */
static double view_get(const dla_view *v, const void *h, int64_t p)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndims; d++) {
        off += p % v->dims[d] * v->strides[d];
        p /= v->dims[d];
    }
    return v->dtype == DLA_F32 ? ((const float *)h)[off] : ((const double *)h)[off];
}

/* The last register of program a (its first ninsns instructions) at every
 * position of its space, by launches, as doubles in column-major order. */
static double *registers_by_launches(dla_device *dev, const dla_fused_args *a, int ninsns)
{
    dla_fused_args b = *a;
    b.ninsns = ninsns;
    const int64_t n = count_of(a->y.ndims, a->y.dims);
    dla_mem m = dalloc(dev, (size_t)n * esize(a->dtype));
    b.y = dense(m, a->dtype, a->y.ndims, a->y.dims);
    run_by_launches(dev, &b);
    void *h = malloc((size_t)(n ? n : 1) * esize(a->dtype));
    download(dev, h, m, (size_t)n * esize(a->dtype));
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t p = 0; p < n; p++)
        v[p] = a->dtype == DLA_F32 ? ((float *)h)[p] : ((double *)h)[p];
    free(h);
    dla_device_table(dev)->mem_free(dla_device_context(dev), m);
    return v;
}

/* Checks the sums of v (the space's values, column-major) over the dims
 * where y's are 1 against y's memory h: the exact sum in double within
 * the reordering of a double sum of n terms (and one rounding to float). */
static void expect_sums(const dla_view *y, const void *h, int ndims, const int64_t *dims,
                        const double *v, int mean, const char *which)
{
    const int64_t n = count_of(ndims, dims), ny = count_of(ndims, y->dims);
    double *acc = calloc((size_t)(ny ? ny : 1), sizeof *acc);
    double *mag = calloc((size_t)(ny ? ny : 1), sizeof *mag);
    for (int64_t p = 0; p < n; p++) {
        int64_t q = 0, qs = 1, rem = p;
        for (int d = 0; d < ndims; d++) {
            const int64_t i = rem % dims[d];
            rem /= dims[d];
            q += (y->dims[d] == 1 ? 0 : i) * qs;
            qs *= y->dims[d];
        }
        acc[q] += v[p];
        mag[q] += fabs(v[p]);
    }
    const double summed = ny ? (double)(n / ny) : 0;
    for (int64_t q = 0; q < ny; q++) {
        double want = acc[q], m = mag[q];
        if (mean)
            want /= summed, m /= summed;
        const double got = view_get(y, h, q);
        const double tol = 4.0 * (double)(n / (ny ? ny : 1) + 2) * 2.3e-16 * m +
                           (y->dtype == DLA_F32 ? 1.2e-7 * fabs(want) : 0);
        int ok;
        if (isnan(want) || isnan(got))
            ok = isnan(want) && isnan(got);
        else if (isinf(want) || isinf(got))
            ok = got == want;
        else
            ok = fabs(got - want) <= tol;
        if (!ok)
            fail_msg("%s: %s[%lld] is %.17g, the sum written out %.17g (tolerance %g)", what,
                     which, (long long)q, got, want, tol);
    }
    free(acc);
    free(mag);
}

/* fused_reduce of a random program over dims, summed where mask has a
 * bit (dims of 1 too), with pair a second sum of a random register; y and
 * y2 random views. Compared with the program written out by launches and
 * summed in double. */
static void sum_case(dla_device *dev, dla_dtype t, int ndims, const int64_t *dims, unsigned mask,
                     int pair, int mean)
{
    dla_fused_reduce_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.op = mean ? DLA_REDUCE_MEAN : DLA_REDUCE_SUM;
    dla_fused_args *a = &r.program;
    a->struct_size = sizeof *a;
    a->dtype = t;
    a->ninputs = (int32_t)rnd_int(1, 4);
    random_program(a, a->ninputs);
    a->y = dense(NULL, t, ndims, dims);
    dla_mem in_mem[DLA_FUSED_MAX_INPUTS];
    for (int i = 0; i < a->ninputs; i++) {
        const int64_t need = any_view(&a->inputs[i], t, ndims, dims, 1);
        in_mem[i] = random_buffer(dev, t, need);
        a->inputs[i].mem = in_mem[i];
    }
    int64_t ydims[DLA_MAX_DIMS];
    for (int d = 0; d < ndims; d++)
        ydims[d] = mask >> d & 1 ? 1 : dims[d];
    dla_mem ym[2] = {NULL, NULL};
    int64_t yn[2] = {0, 0};
    dla_view *yv[2] = {&r.y, &r.y2};
    for (int k = 0; k < 1 + pair; k++) {
        yn[k] = any_view(yv[k], t, ndims, ydims, 0);
        ym[k] = random_buffer(dev, t, yn[k]);
        yv[k]->mem = ym[k];
    }
    if (pair)
        r.reg2 = (int32_t)rnd_int(0, a->ninsns - 1);
    char bd[64];
    int len = 0;
    bd[0] = 0;
    for (int d = 0; d < ndims && len < 50; d++)
        len += snprintf(bd + len, sizeof bd - (size_t)len, "%s%lld%s", d ? "x" : "",
                        (long long)dims[d], mask >> d & 1 ? "*" : "");
    snprintf(what, sizeof what,
             "%s fused_reduce %s %s of %s (* summed), %d insns, %d inputs%s, %d threads",
             dla_device_name(dev), dla_dtype_name(t), mean ? "mean" : "sum", bd, (int)a->ninsns,
             (int)a->ninputs, pair ? ", pair" : "", omp_get_max_threads());
    expect_ok(dla_device_table(dev)->fused_reduce(dla_device_context(dev), &r));
    for (int k = 0; k < 1 + pair; k++) {
        double *v = registers_by_launches(dev, a, k ? r.reg2 + 1 : a->ninsns);
        void *h = malloc((size_t)yn[k] * esize(t));
        download(dev, h, ym[k], (size_t)yn[k] * esize(t));
        expect_sums(yv[k], h, ndims, dims, v, mean, k ? "y2" : "y");
        free(h);
        free(v);
        dla_device_table(dev)->mem_free(dla_device_context(dev), ym[k]);
    }
    for (int i = 0; i < a->ninputs; i++)
        dla_device_table(dev)->mem_free(dla_device_context(dev), in_mem[i]);
}

static const int team_sizes[] = {1, 2, 3, 5};
#define NTEAMS ((int)(sizeof team_sizes / sizeof team_sizes[0]))

static void summed_programs_match_the_program_written_out_and_summed(void **state)
{
    int tested = 0;
    /* Inner runs straddling the 512-element blocks (one block, a block of
     * one row, pieces of one row, whole rows together), spaces on either
     * side of the team threshold (2^15 elements), many outputs (fewer
     * slots), batchnorm's channel layout. */
    static const int64_t shapes[][4] = {
        {7, 5, 3, 1},     {511, 64, 1, 1},  {513, 64, 1, 1},  {512, 65, 1, 1},
        {255, 130, 1, 1}, {257, 129, 1, 1}, {1025, 33, 1, 1}, {5, 7, 9, 104},
        {3, 40000, 1, 1}, {40000, 3, 1, 1}, {2000, 20, 1, 1}, {33, 17, 61, 1},
        {100003, 1, 1, 1}, {6, 6, 16, 64},
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    const int saved = omp_get_max_threads();
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev || !dla_device_table(dev)->fused_reduce)
            continue;
        for (int s = 0; s < nshapes; s++)
            for (int rep = 0; rep < 4; rep++) {
                omp_set_num_threads(team_sizes[(s + rep) % NTEAMS]);
                const dla_dtype t = rep & 1 ? DLA_F64 : DLA_F32;
                unsigned mask = (unsigned)rnd_int(0, 15);
                if (rep == 0)
                    mask = 0xe; /* dim 0 kept: a channel per position of dim 0 */
                if (rep == 1)
                    mask = 0xb; /* dim 2 kept: batchnorm's channels */
                sum_case(dev, t, 4, shapes[s], mask, rep >= 2, rep == 3);
                tested++;
            }
        /* Small random spaces, every layout. */
        for (int rep = 0; rep < 120; rep++) {
            omp_set_num_threads(team_sizes[rep % NTEAMS]);
            int64_t dims[DLA_MAX_DIMS];
            const int nd = (int)rnd_int(0, 4);
            for (int d = 0; d < nd; d++)
                dims[d] = chance(20) ? 1 : chance(5) ? 0 : rnd_int(1, 9);
            sum_case(dev, rep & 1 ? DLA_F64 : DLA_F32, nd, dims, (unsigned)rnd_int(0, 15),
                     chance(50), chance(30));
            tested++;
        }
    }
    omp_set_num_threads(saved);
    if (!tested)
        skip();
}

/* The sum of n floats at x in the cpu plugin's order (plugins/cpu/sum.c):
 * 16 partial sums in double over whole blocks of 16, added in order from
 * 0, then the rest one by one. */
static double sum_in_order(const float *x, int64_t n)
{
    const int64_t whole = n / 16 * 16;
    double part[16] = {0}, total = 0;
    for (int64_t b = 0; b < whole; b += 16)
        for (int k = 0; k < 16; k++)
            part[k] += (double)x[b + k];
    for (int k = 0; k < 16; k++)
        total += part[k];
    for (int64_t j = whole; j < n; j++)
        total += (double)x[j];
    return total;
}

/* A batchnorm's statistics as the cpu plugin sums them: x of d0 x C x B,
 * d = x - shift[c] and d .* d (float), each channel's sum of d .* d into y
 * and of d into y2 (the pair) in the plugin's order: blocks of 512
 * elements (pieces of a run of 512 or more, else whole runs together),
 * each run's sum in sum.c's order added to its slot's double accumulator,
 * 64 slots of consecutive blocks (8 past 2^16 accumulators, 1 under 2^15
 * elements), the slots added in order from 0. Every output is held to
 * that order bit for bit, with 1, 2 and 3 threads, so that a faster way
 * of summing (runs side by side, fewer divisions a block: tried, see
 * docs/performance.md) must keep every run's own bits and the order the
 * runs reach their slot's accumulator. */
static void batchnorm_sums_keep_the_bits_of_their_order(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {
        {64, 64, 128}, {256, 32, 16}, {1024, 16, 8}, {24, 5, 300},
        {100, 3, 200}, {7, 9, 700},   {600, 4, 20},  {16, 40, 60},
    };
    int tested = 0;
    const int saved = omp_get_max_threads();
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev || !dla_device_table(dev)->fused_reduce)
            continue;
        for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++) {
            const int64_t d0 = shapes[s][0], C = shapes[s][1], B = shapes[s][2], n = d0 * C * B;
            float *x = malloc((size_t)n * sizeof *x), *sh = malloc((size_t)C * sizeof *sh);
            float *d = malloc((size_t)n * sizeof *d), *q = malloc((size_t)n * sizeof *q);
            /* Each run holds pairs +H, -H in different parts (or in its
             * tail), so that every order of the double additions leaves
             * its own rounding in the small sum that is left, visible in
             * float: a fold out of order fails. The shift is 0 (d = x). */
            const float H = 1099511627776.0f; /* 2^40 */
            for (int64_t k = 0; k < n; k++)
                x[k] = (float)rnd_unif(-3, 5);
            for (int64_t row = 0; row < n / d0; row++) {
                float *xr = x + row * d0;
                if (d0 < 22) {
                    xr[1] = H, xr[d0 - 2] = -H;
                    continue;
                }
                for (int64_t j = 3; j + 18 < d0; j += 32)
                    xr[j] = H, xr[j + 18] = -H;
            }
            for (int64_t c = 0; c < C; c++)
                sh[c] = 0;
            for (int64_t k = 0; k < n; k++) {
                d[k] = x[k] - sh[k / d0 % C];
                q[k] = d[k] * d[k];
            }
            /* The order written out. */
            const int64_t blk = 512, rows = C * B;
            const int64_t per_row = d0 >= blk ? (d0 + blk - 1) / blk : 0,
                          rows_per = d0 >= blk ? 0 : blk / d0;
            const int64_t blocks = per_row ? rows * per_row : (rows + rows_per - 1) / rows_per;
            const int nslots = n < ((int64_t)1 << 15) ? 1 : 2 * C * 64 <= ((int64_t)1 << 16) ? 64 : 8;
            double *acc = calloc((size_t)(2 * C * nslots), sizeof *acc);
            for (int t = 0; t < nslots; t++)
                for (int64_t u = blocks * t / nslots; u < blocks * (t + 1) / nslots; u++) {
                    int64_t r0, r1, lo, len;
                    if (per_row)
                        r0 = u / per_row, r1 = r0 + 1, lo = u % per_row * blk;
                    else
                        r0 = u * rows_per, r1 = r0 + rows_per < rows ? r0 + rows_per : rows, lo = 0;
                    for (int64_t r = r0; r < r1; r++) {
                        len = per_row ? (d0 - lo < blk ? d0 - lo : blk) : d0;
                        const int64_t c = r % C, at = r * d0 + lo;
                        acc[(0 * nslots + t) * C + c] += sum_in_order(q + at, len);
                        acc[(1 * nslots + t) * C + c] += sum_in_order(d + at, len);
                    }
                }
            dla_mem mx = dalloc(dev, (size_t)n * sizeof *x), ms = dalloc(dev, (size_t)C * 4);
            dla_mem my = dalloc(dev, (size_t)C * 4), my2 = dalloc(dev, (size_t)C * 4);
            upload(dev, mx, x, (size_t)n * sizeof *x);
            upload(dev, ms, sh, (size_t)C * sizeof *sh);
            for (int team = 1; team <= 3; team++) {
                omp_set_num_threads(team);
                dla_fused_reduce_args r;
                memset(&r, 0, sizeof r);
                r.struct_size = sizeof r;
                r.op = DLA_REDUCE_SUM;
                dla_fused_args *a = &r.program;
                a->struct_size = sizeof *a;
                a->dtype = DLA_F32;
                a->ninputs = 2;
                a->ninsns = 2;
                const int64_t dims[3] = {d0, C, B}, cdims[3] = {1, C, 1};
                a->inputs[0] = dense(mx, DLA_F32, 3, dims);
                a->inputs[1] = dense(ms, DLA_F32, 3, cdims);
                a->inputs[1].dims[0] = d0, a->inputs[1].strides[0] = 0;
                a->inputs[1].dims[2] = B, a->inputs[1].strides[2] = 0;
                a->insns[0] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_SUB, {-1, -2, 0}, 0, 0};
                a->insns[1] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_SQUARE, {0, 0, 0}, 0, 0};
                a->y = dense(NULL, DLA_F32, 3, dims);
                r.y = dense(my, DLA_F32, 3, cdims);
                r.y2 = dense(my2, DLA_F32, 3, cdims);
                r.reg2 = 0;
                snprintf(what, sizeof what, "%s batchnorm sums of %lldx%lldx%lld, %d threads",
                         dla_device_name(dev), (long long)d0, (long long)C, (long long)B, team);
                expect_ok(dla_device_table(dev)->fused_reduce(dla_device_context(dev), &r));
                float got[2][64];
                download(dev, got[0], my, (size_t)C * 4);
                download(dev, got[1], my2, (size_t)C * 4);
                for (int k = 0; k < 2; k++)
                    for (int64_t c = 0; c < C; c++) {
                        double want = 0;
                        for (int t = 0; t < nslots; t++)
                            want += acc[(k * nslots + t) * C + c];
                        if (got[k][c] != (float)want)
                            fail_msg("%s: %s[%lld] is %.9g, in the plugin's order %.9g", what,
                                     k ? "y2" : "y", (long long)c, got[k][c], (float)want);
                    }
                tested++;
            }
            const dla_mem ms_[] = {mx, ms, my, my2};
            for (int k = 0; k < 4; k++)
                dla_device_table(dev)->mem_free(dla_device_context(dev), ms_[k]);
            free(x), free(sh), free(d), free(q), free(acc);
        }
    }
    omp_set_num_threads(saved);
    if (!tested)
        skip();
}

/* Every element of view v (memory h) against the values want (column-major
 * over its dims), bit for bit but for NaN's payload. */
static void expect_values(const dla_view *v, const void *h, const double *want, const char *which)
{
    const int64_t n = count_of(v->ndims, v->dims);
    for (int64_t p = 0; p < n; p++) {
        const double got = view_get(v, h, p);
        if (got == want[p] ? signbit(got) != signbit(want[p]) : !(isnan(got) && isnan(want[p])))
            fail_msg("%s: %s element %lld is %.17g, the launches gave %.17g", what, which,
                     (long long)p, got, want[p]);
    }
}

/* fused_multi of a random program over dims: y and one to seven extra
 * results as random views, each compared with its register launched step
 * by step. */
static void multi_case(dla_device *dev, dla_dtype t, int ndims, const int64_t *dims)
{
    dla_fused_multi_args m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    dla_fused_args *a = &m.program;
    a->struct_size = sizeof *a;
    a->dtype = t;
    a->ninputs = (int32_t)rnd_int(1, 4);
    do
        random_program(a, a->ninputs);
    while (a->ninsns < 2);
    m.nextra = (int32_t)rnd_int(1, a->ninsns - 1 < DLA_FUSED_MAX_EXTRA ? a->ninsns - 1
                                                                       : DLA_FUSED_MAX_EXTRA);
    dla_mem in_mem[DLA_FUSED_MAX_INPUTS], out_mem[1 + DLA_FUSED_MAX_EXTRA];
    int64_t out_n[1 + DLA_FUSED_MAX_EXTRA];
    for (int i = 0; i < a->ninputs; i++) {
        const int64_t need = any_view(&a->inputs[i], t, ndims, dims, 1);
        in_mem[i] = random_buffer(dev, t, need);
        a->inputs[i].mem = in_mem[i];
    }
    for (int k = 0; k <= m.nextra; k++) {
        dla_view *v = k ? &m.extra[k - 1] : &a->y;
        out_n[k] = any_view(v, t, ndims, dims, 0);
        out_mem[k] = random_buffer(dev, t, out_n[k]);
        v->mem = out_mem[k];
        if (k)
            m.extra_reg[k - 1] = (int32_t)rnd_int(0, a->ninsns - 2);
    }
    char bd[64];
    int len = 0;
    bd[0] = 0;
    for (int d = 0; d < ndims && len < 50; d++)
        len += snprintf(bd + len, sizeof bd - (size_t)len, "%s%lld", d ? "x" : "",
                        (long long)dims[d]);
    snprintf(what, sizeof what, "%s fused_multi %s over %s, %d insns, %d inputs, %d extra, "
             "%d threads", dla_device_name(dev), dla_dtype_name(t), bd, (int)a->ninsns,
             (int)a->ninputs, (int)m.nextra, omp_get_max_threads());
    expect_ok(dla_device_table(dev)->fused_multi(dla_device_context(dev), &m));
    for (int k = 0; k <= m.nextra; k++) {
        const dla_view *v = k ? &m.extra[k - 1] : &a->y;
        double *want = registers_by_launches(dev, a, k ? m.extra_reg[k - 1] + 1 : a->ninsns);
        void *h = malloc((size_t)out_n[k] * esize(t));
        download(dev, h, out_mem[k], (size_t)out_n[k] * esize(t));
        char which[32];
        snprintf(which, sizeof which, k ? "extra %d" : "y", k - 1);
        expect_values(v, h, want, which);
        free(h);
        free(want);
        dla_device_table(dev)->mem_free(dla_device_context(dev), out_mem[k]);
    }
    for (int i = 0; i < a->ninputs; i++)
        dla_device_table(dev)->mem_free(dla_device_context(dev), in_mem[i]);
}

static void multi_result_programs_store_each_register_as_its_launch_would(void **state)
{
    int tested = 0;
    static const int64_t shapes[][3] = {
        {7, 5, 3}, {511, 64, 1}, {513, 64, 1}, {257, 129, 1}, {4, 128, 70}, {40000, 1, 1}, {128, 64, 1},
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    const int saved = omp_get_max_threads();
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev || !dla_device_table(dev)->fused_multi)
            continue;
        for (int s = 0; s < nshapes; s++)
            for (int rep = 0; rep < 4; rep++) {
                omp_set_num_threads(team_sizes[(s + rep) % NTEAMS]);
                multi_case(dev, rep & 1 ? DLA_F64 : DLA_F32, 3, shapes[s]);
                tested++;
            }
        for (int rep = 0; rep < 60; rep++) {
            int64_t dims[DLA_MAX_DIMS];
            const int nd = (int)rnd_int(0, 4);
            for (int d = 0; d < nd; d++)
                dims[d] = chance(20) ? 1 : rnd_int(1, 9);
            multi_case(dev, rep & 1 ? DLA_F64 : DLA_F32, nd, dims);
            tested++;
        }
    }
    omp_set_num_threads(saved);
    if (!tested)
        skip();
}

/* An LSTM's cell update: its gates are 128-row slices of a 512 x 64
 * product (unit stride along a column, 512 between columns) and its cell
 * state here a slice too, four inputs read in place in blocks of one
 * column each; the bits of its steps launched one by one, with one
 * thread and two. */
static void an_lstm_gate_program_on_slices_gives_its_steps_bits(void **state)
{
    (void)state;
    int tested = 0;
    enum { H = 128, N = 64 };
    const int saved = omp_get_max_threads();
    for (int i = 0; i < dla_device_count(); i++) {
        dla_device *dev = fused_device(i);
        if (!dev)
            continue;
        float *z = malloc(sizeof *z * 4 * H * N), *c = malloc(sizeof *c * 2 * H * N);
        float *got = malloc(sizeof *got * H * N), *want = malloc(sizeof *want * H * N);
        for (int k = 0; k < 4 * H * N; k++)
            z[k] = (float)(((k * 37) % 101) - 50) / 17.0f;
        for (int k = 0; k < 2 * H * N; k++)
            c[k] = (float)(((k * 13) % 29) - 14) / 7.0f;
        dla_mem mz = dalloc(dev, sizeof *z * 4 * H * N), mc = dalloc(dev, sizeof *c * 2 * H * N),
                my = dalloc(dev, sizeof *got * H * N);
        upload(dev, mz, z, sizeof *z * 4 * H * N);
        upload(dev, mc, c, sizeof *c * 2 * H * N);
        const int64_t dims[2] = {H, N};
        dla_fused_args a = {.struct_size = sizeof a, .dtype = DLA_F32, .ninputs = 4, .ninsns = 7};
        a.y = dense(my, DLA_F32, 2, dims);
        for (int g = 0; g < 3; g++) {
            a.inputs[g] = dense(mz, DLA_F32, 2, dims);
            a.inputs[g].offset = g * H;
            a.inputs[g].strides[1] = 4 * H;
        }
        a.inputs[3] = dense(mc, DLA_F32, 2, dims);
        a.inputs[3].offset = H;
        a.inputs[3].strides[1] = 2 * H;
        /* i f g; tanh(f c + i g) */
        a.insns[0] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_SIGMOID, {-1, 0, 0}, 0, 0};
        a.insns[1] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_SIGMOID, {-2, 0, 0}, 0, 0};
        a.insns[2] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_TANH, {-3, 0, 0}, 0, 0};
        a.insns[3] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_MUL, {1, -4, 0}, 0, 0};
        a.insns[4] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_MUL, {0, 2, 0}, 0, 0};
        a.insns[5] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_ADD, {3, 4, 0}, 0, 0};
        a.insns[6] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_TANH, {5, 0, 0}, 0, 0};
        snprintf(what, sizeof what, "%s LSTM gates", dla_device_name(dev));
        run_by_launches(dev, &a);
        download(dev, want, my, sizeof *want * H * N);
        for (int t = 1; t <= 2; t++) {
            omp_set_num_threads(t);
            memset(got, 0xff, sizeof *got * H * N);
            upload(dev, my, got, sizeof *got * H * N);
            expect_ok(dla_device_table(dev)->fused(dla_device_context(dev), &a));
            download(dev, got, my, sizeof *got * H * N);
            assert_memory_equal(got, want, sizeof *got * H * N);
        }
        dla_mem all[] = {mz, mc, my};
        for (int k = 0; k < 3; k++)
            dla_device_table(dev)->mem_free(dla_device_context(dev), all[k]);
        free(z), free(c), free(got), free(want);
        tested++;
    }
    omp_set_num_threads(saved);
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
        cmocka_unit_test(summed_programs_match_the_program_written_out_and_summed),
        cmocka_unit_test(batchnorm_sums_keep_the_bits_of_their_order),
        cmocka_unit_test(multi_result_programs_store_each_register_as_its_launch_would),
        cmocka_unit_test(an_lstm_gate_program_on_slices_gives_its_steps_bits),
        cmocka_unit_test(malformed_programs_are_refused_with_a_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

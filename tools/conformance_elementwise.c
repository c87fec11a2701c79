/*
 * conformance_elementwise.c - the suite's cases for unary, binary,
 * ternary (where) and the fused program.
 *
 * Each op has its tolerance class (conformance.h): the ops IEEE rounds
 * correctly, the selections and comparisons are exact; the functions
 * OpenCL and CUDA may approximate get a few ulps of the oracle's value.
 * Inputs are drawn where each op is defined and well away from overflow,
 * with NaN, infinities and signed zeros sprinkled in; ops appended in ABI
 * 1.1 are drawn only for a plugin that answered 1.1 or later.
 *
 * A fused program must give the bits of its steps launched one by one on
 * the same device (the ABI's contract: that is how the host relies on
 * it), in y and, for fused_multi, in every extra result, also where those
 * alias inputs (fused_case); a program made of exact steps only must also
 * give the oracle's values.
 */
#include "tools/conformance.h"

#include <dlaccel/plugin_kit.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>


/* Allowed ulps per op; 0 is exact. affine is exact too up to the fma a
 * device may use for x * alpha + beta, covered by its magnitude bound. */
static const double unary_ulps[DLA_UNARY_COUNT] = {
    [DLA_UNARY_NEG] = 0,     [DLA_UNARY_EXP] = 4,        [DLA_UNARY_LOG] = 4,
    [DLA_UNARY_SQRT] = 3,    [DLA_UNARY_ABS] = 0,        [DLA_UNARY_SIN] = 5,
    [DLA_UNARY_COS] = 5,     [DLA_UNARY_TANH] = 6,       [DLA_UNARY_SIGMOID] = 5,
    [DLA_UNARY_RELU] = 0,    [DLA_UNARY_AFFINE] = 0,     [DLA_UNARY_ERF] = 16,
    [DLA_UNARY_SIGN] = 0,    [DLA_UNARY_POWS] = 16,      [DLA_UNARY_LEAKY_RELU] = 0,
    [DLA_UNARY_ELU] = 5,     [DLA_UNARY_STEP] = 0,       [DLA_UNARY_RECIPROCAL] = 3,
    [DLA_UNARY_SQUARE] = 0,
};
static const double binary_ulps[DLA_BINARY_COUNT] = {
    [DLA_BINARY_DIV] = 3,
    [DLA_BINARY_POW] = 16,
};

/* The ops of dev's ABI minor: 1.0 ends before erf and the comparisons. */
static int unary_count(const cf_case *c)
{
    return c->suite->dev[CF_DUT]->abi_minor >= 1 ? DLA_UNARY_COUNT : DLA_UNARY_ERF;
}
static int binary_count(const cf_case *c)
{
    return c->suite->dev[CF_DUT]->abi_minor >= 1 ? DLA_BINARY_COUNT : DLA_BINARY_EQ;
}

/* Special values now and then. */
static void sprinkle(cf_case *c, cf_buf *b)
{
    static const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
    for (int s = 0; s < 3; s++)
        if (cf_chance(c, 20))
            cf_buf_set(b, cf_int(c, 0, b->n - 1), special[cf_int(c, 0, 4)]);
}

/* The input range of a unary op. */
static void unary_range(dla_unary_op op, double *lo, double *hi)
{
    *lo = -4, *hi = 4;
    if (op == DLA_UNARY_EXP)
        *lo = -30, *hi = 30;
    else if (op == DLA_UNARY_LOG || op == DLA_UNARY_SQRT || op == DLA_UNARY_POWS)
        *lo = -0.5, *hi = 10;
    else if (op == DLA_UNARY_SIN || op == DLA_UNARY_COS)
        *lo = -10, *hi = 10;
}

void cf_case_unary(cf_case *c)
{
    const int t = cf_float_dtype(c, DLA_KERNEL_UNARY);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->unary) {
        c->skipped = 1;
        return;
    }
    const dla_unary_op op = (dla_unary_op)cf_int(c, 0, unary_count(c) - 1);
    double alpha = cf_unif(c, -2, 2), beta = cf_unif(c, -2, 2);
    if (op == DLA_UNARY_POWS && cf_chance(c, 40))
        alpha = (double)cf_int(c, -3, 3);
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 5, 9, 3);
    if (c->index == 0)
        nd = 1, dims[0] = 70000;
    const int in_place = cf_chance(c, 20);
    double lo, hi;
    unary_range(op, &lo, &hi);
    /* Now and then the tails, where a shortcut shows that -4..4 hides (a
     * sigmoid flushed to 0 below -20 passed; tanh as a quotient of exps
     * overflows): results down to 1e-13, normal in single. Drawn only for
     * these ops, so the other ops' cases stay what they were. */
    if ((op == DLA_UNARY_SIGMOID || op == DLA_UNARY_TANH || op == DLA_UNARY_ERF ||
         op == DLA_UNARY_ELU) &&
        cf_chance(c, 30))
        lo = -30, hi = 30;
    dla_view y, x;
    cf_buf *by = cf_buf_new(c, (dla_dtype)t, cf_view(c, &y, (dla_dtype)t, nd, dims, 0), lo, hi, 5);
    cf_buf *bx = NULL;
    if (by && in_place) {
        x = y;
        bx = by;
    } else if (by) {
        bx = cf_buf_new(c, (dla_dtype)t, cf_view(c, &x, (dla_dtype)t, nd, dims, 1), lo, hi, 5);
    }
    if (!bx)
        return;
    sprinkle(c, bx);
    if (!cf_buf_upload(c, bx))
        return;
    /* affine: the magnitude |x alpha| + |beta| bounds an fma's rounding. */
    double *mag = NULL;
    if (op == DLA_UNARY_AFFINE) {
        mag = calloc((size_t)by->n, sizeof *mag);
        if (!mag) {
            cf_fail(c, "out of host memory");
            return;
        }
        const int64_t n = cf_numel(nd, dims);
        for (int64_t l = 0; l < n; l++) {
            int64_t r = l, ay = y.offset, ax = x.offset;
            for (int d = 0; d < nd; d++) {
                ay += (r % dims[d]) * y.strides[d], ax += (r % dims[d]) * x.strides[d];
                r /= dims[d];
            }
            mag[ay] = fabs(cf_buf_get(bx, ax) * alpha) + fabs(beta);
        }
    }
    char ds[96], vy[128], vx[128];
    cf_describe(c, "unary %s %s alpha %.17g beta %.17g dims %s y%s x%s%s",
                dla_kit_unary_name((dla_unary_op)op), dla_dtype_name((dla_dtype)t), alpha, beta, cf_dims_str(ds, sizeof ds, nd, dims),
                cf_view_str(vy, sizeof vy, &y), cf_view_str(vx, sizeof vx, &x),
                in_place ? " in place" : "");
    dla_unary_args a = {.struct_size = sizeof a, .op = op, .alpha = alpha, .beta = beta, .y = y,
                        .x = x};
    for (int k = 0; k < 2; k++) {
        a.y.mem = by->mem[k], a.x.mem = bx->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_UNARY, &a, 0));
    }
    if (cf_agree(c))
        cf_compare(c, by, &y, (cf_tol){unary_ulps[op], mag, 0});
    free(mag);
}

void cf_case_binary(cf_case *c)
{
    const int t = cf_float_dtype(c, DLA_KERNEL_BINARY);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->binary) {
        c->skipped = 1;
        return;
    }
    const dla_binary_op op = (dla_binary_op)cf_int(c, 0, binary_count(c) - 1);
    const int cmp = op >= DLA_BINARY_EQ;
    const dla_dtype zt = cmp ? DLA_BOOL : (dla_dtype)t;
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 5, 8, 3);
    if (c->index == 0)
        nd = 2, dims[0] = 400, dims[1] = 300;
    /* Comparisons on a few integers, so ties are common. */
    double lo = cmp ? -2 : -4, hi = cmp ? 2 : 4;
    const int alias = !cmp && cf_int(c, 0, 4); /* 0: none, 1: z is a, 2: z is b */
    dla_view z, va, vb;
    cf_buf *bz = cf_buf_new(c, zt, cf_view(c, &z, zt, nd, dims, 0), lo, hi, 0);
    cf_buf *ba = bz ? cf_buf_new(c, (dla_dtype)t,
                                 cf_view(c, &va, (dla_dtype)t, nd, dims, alias != 1), lo, hi, 10)
                    : NULL;
    cf_buf *bb = ba ? cf_buf_new(c, (dla_dtype)t,
                                 cf_view(c, &vb, (dla_dtype)t, nd, dims, alias != 2), lo, hi, 10)
                    : NULL;
    if (!bb)
        return;
    if (op == DLA_BINARY_POW)
        for (int64_t i = 0; i < ba->n; i++)
            cf_buf_set(ba, i, cf_chance(c, 90) ? cf_unif(c, 0.01, 4) : cf_unif(c, -4, 0));
    if (cmp)
        for (int64_t i = 0; i < ba->n; i++)
            cf_buf_set(ba, i, (double)cf_int(c, -2, 2));
    if (cmp)
        for (int64_t i = 0; i < bb->n; i++)
            cf_buf_set(bb, i, (double)cf_int(c, -2, 2));
    sprinkle(c, ba);
    sprinkle(c, bb);
    if (!cf_buf_upload(c, ba) || !cf_buf_upload(c, bb))
        return;
    const cf_buf *zb = alias == 1 ? ba : alias == 2 ? bb : bz;
    const dla_view *zv = alias == 1 ? &va : alias == 2 ? &vb : &z;
    char ds[96], v0[128], v1[128], v2[128];
    cf_describe(c, "binary %s %s dims %s z%s a%s b%s%s", dla_kit_binary_name((dla_binary_op)op),
                dla_dtype_name((dla_dtype)t), cf_dims_str(ds, sizeof ds, nd, dims),
                cf_view_str(v0, sizeof v0, zv), cf_view_str(v1, sizeof v1, &va),
                cf_view_str(v2, sizeof v2, &vb),
                alias == 1 ? " z is a" : alias == 2 ? " z is b" : "");
    dla_binary_args args = {.struct_size = sizeof args, .op = op, .z = *zv, .a = va, .b = vb};
    for (int k = 0; k < 2; k++) {
        args.z.mem = zb->mem[k], args.a.mem = ba->mem[k], args.b.mem = bb->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_BINARY, &args, 0));
    }
    if (cf_agree(c))
        cf_compare(c, zb, zv, (cf_tol){cmp ? 0 : binary_ulps[op], NULL, 0});
}

void cf_case_ternary(cf_case *c)
{
    const int t = cf_float_dtype(c, DLA_KERNEL_TERNARY);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->ternary || c->suite->dev[CF_DUT]->abi_minor < 1) {
        c->skipped = 1;
        return;
    }
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 5, 8, 3);
    if (c->index == 0)
        nd = 2, dims[0] = 300, dims[1] = 200;
    dla_view z, vc, va, vb;
    cf_buf *bz = cf_buf_new(c, (dla_dtype)t, cf_view(c, &z, (dla_dtype)t, nd, dims, 0), -9, 9, 0);
    cf_buf *bc = bz ? cf_buf_new(c, DLA_BOOL, cf_view(c, &vc, DLA_BOOL, nd, dims, 1), 0, 1, 0)
                    : NULL;
    cf_buf *ba = bc ? cf_buf_new(c, (dla_dtype)t, cf_view(c, &va, (dla_dtype)t, nd, dims, 1), -4,
                                 4, 0)
                    : NULL;
    cf_buf *bb = ba ? cf_buf_new(c, (dla_dtype)t, cf_view(c, &vb, (dla_dtype)t, nd, dims, 1), -4,
                                 4, 0)
                    : NULL;
    if (!bb)
        return;
    sprinkle(c, ba);
    if (!cf_buf_upload(c, ba))
        return;
    char ds[96], v0[128], v1[128], v2[128], v3[128];
    cf_describe(c, "ternary where %s dims %s z%s cond%s a%s b%s", dla_dtype_name((dla_dtype)t),
                cf_dims_str(ds, sizeof ds, nd, dims), cf_view_str(v0, sizeof v0, &z),
                cf_view_str(v1, sizeof v1, &vc), cf_view_str(v2, sizeof v2, &va),
                cf_view_str(v3, sizeof v3, &vb));
    dla_ternary_args args = {.struct_size = sizeof args, .op = DLA_TERNARY_WHERE, .z = z,
                             .cond = vc, .a = va, .b = vb};
    for (int k = 0; k < 2; k++) {
        args.z.mem = bz->mem[k], args.cond.mem = bc->mem[k];
        args.a.mem = ba->mem[k], args.b.mem = bb->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_TERNARY, &args, 0));
    }
    if (cf_agree(c))
        cf_compare(c, bz, &z, CF_EXACT);
}

/* ---------------------------------------------------------------- fused */

/* Ops a fused program may draw: defined for every input (no NaN from a
 * negative log), so differences are differences of arithmetic. */
static const dla_unary_op fused_unary[] = {
    DLA_UNARY_NEG,  DLA_UNARY_EXP,        DLA_UNARY_ABS,  DLA_UNARY_TANH,
    DLA_UNARY_SIGMOID, DLA_UNARY_RELU,    DLA_UNARY_AFFINE, DLA_UNARY_SIGN,
    DLA_UNARY_LEAKY_RELU, DLA_UNARY_STEP, DLA_UNARY_SQUARE, DLA_UNARY_SIN};

static int exact_step(const dla_fused_insn *in)
{
    if (in->kind == DLA_FUSED_WHERE)
        return 1;
    if (in->kind == DLA_FUSED_BINARY)
        return in->op != DLA_BINARY_DIV && in->op != DLA_BINARY_POW;
    return unary_ulps[in->op] == 0 && in->op != DLA_UNARY_AFFINE;
}

static dla_mem dev_alloc(cf_case *c, int k, size_t bytes)
{
    dla_mem m = NULL;
    if (CF_TABLE(c, k)->mem_alloc(CF_CTX(c, k), bytes ? bytes : 1, &m) != DLA_OK) {
        cf_fail(c, "%s mem_alloc of %zu bytes: %s", dla_device_name(c->suite->dev[k]->handle),
                bytes, dla_last_error());
        return NULL;
    }
    return m;
}

static dla_mem dut_alloc(cf_case *c, size_t bytes) { return dev_alloc(c, CF_DUT, bytes); }

/* A copy on the oracle of b's starting contents (its host image): the
 * oracle runs a program whose result aliases an input on such a copy of
 * that input, so its reference is the ABI's (every register from the
 * inputs as they were before the call) whatever the oracle does with
 * aliased views. NULL when refused (reported). */
static dla_mem oracle_copy(cf_case *c, const cf_buf *b)
{
    const dla_plugin *tb = CF_TABLE(c, CF_ORACLE);
    const size_t bytes = (size_t)b->n * dla_dtype_size(b->dtype);
    dla_mem m = dev_alloc(c, CF_ORACLE, bytes);
    if (m && tb->copy_to_device(CF_CTX(c, CF_ORACLE), m, 0, b->host, bytes) != DLA_OK) {
        cf_fail(c, "%s copy_to_device of %zu bytes: %s",
                dla_device_name(c->suite->dev[CF_ORACLE]->handle), bytes, dla_last_error());
        tb->mem_free(CF_CTX(c, CF_ORACLE), m);
        m = NULL;
    }
    return m;
}

static dla_view dense_on(dla_mem m, dla_dtype t, const dla_view *shape)
{
    dla_view v;
    cf_dense(&v, t, shape->ndims, shape->dims);
    v.mem = m;
    return v;
}

/* The extra results of a fused_multi case: register reg[k] into view[k]
 * (memory of the device under test where steps_on_dut writes them). n 0:
 * the plain fused kernel. */
typedef struct fused_extras {
    int n;
    int32_t reg[DLA_FUSED_MAX_EXTRA];
    dla_view view[DLA_FUSED_MAX_EXTRA];
} fused_extras;

/* Runs a's steps one by one on the device under test into y and ex's
 * views (its registers dense buffers, copied out at the end; a
 * comparison's logical result cast to the program's dtype; where's
 * condition made logical with ne(c, 0)). Returns 0 when a step failed
 * (reported). */
static int steps_on_dut(cf_case *c, const dla_fused_args *a, const fused_extras *ex)
{
    const dla_plugin *tb = CF_TABLE(c, CF_DUT);
    void *ctx = CF_CTX(c, CF_DUT);
    const dla_dtype t = a->dtype;
    const int64_t n = cf_numel(a->y.ndims, a->y.dims);
    const size_t es = dla_dtype_size(t);
    dla_mem regs[DLA_FUSED_MAX_INSNS] = {0}, cond = dut_alloc(c, (size_t)n),
            zero = cond ? dut_alloc(c, es) : NULL;
    int ok = zero != NULL;
    if (ok)
        ok = tb->copy_to_device(ctx, zero, 0, &(double){0}, es) == DLA_OK;
    for (int j = 0; ok && j < a->ninsns; j++) {
        const dla_fused_insn *in = &a->insns[j];
        if (!(regs[j] = dut_alloc(c, (size_t)n * es))) {
            ok = 0;
            break;
        }
        const dla_view r = dense_on(regs[j], t, &a->y);
        dla_view opnd[3];
        for (int k = 0; k < 3; k++)
            opnd[k] = in->src[k] >= 0 ? dense_on(regs[in->src[k] >= 0 ? in->src[k] : 0], t, &a->y)
                                      : a->inputs[(-1 - in->src[k]) & (DLA_FUSED_MAX_INPUTS - 1)];
        dla_status s;
        if (in->kind == DLA_FUSED_UNARY) {
            dla_unary_args u = {.struct_size = sizeof u, .op = in->op, .alpha = in->alpha,
                                .beta = in->beta, .y = r, .x = opnd[0]};
            s = cf_call(c, CF_DUT, DLA_KERNEL_UNARY, &u, 0);
        } else if (in->kind == DLA_FUSED_BINARY && in->op >= DLA_BINARY_EQ) {
            dla_binary_args b = {.struct_size = sizeof b, .op = in->op,
                                 .z = dense_on(cond, DLA_BOOL, &a->y), .a = opnd[0], .b = opnd[1]};
            s = cf_call(c, CF_DUT, DLA_KERNEL_BINARY, &b, 0);
            if (s == DLA_OK)
                s = cf_call(c, CF_DUT, DLA_KERNEL_CAST, (dla_view[2]){r, b.z}, 0);
        } else if (in->kind == DLA_FUSED_BINARY) {
            dla_binary_args b = {.struct_size = sizeof b, .op = in->op, .z = r, .a = opnd[0],
                                 .b = opnd[1]};
            s = cf_call(c, CF_DUT, DLA_KERNEL_BINARY, &b, 0);
        } else {
            dla_binary_args ne = {.struct_size = sizeof ne, .op = DLA_BINARY_NE,
                                  .z = dense_on(cond, DLA_BOOL, &a->y), .a = opnd[0],
                                  .b = dense_on(zero, t, &a->y)};
            for (int d = 0; d < ne.b.ndims; d++)
                ne.b.strides[d] = 0;
            s = cf_call(c, CF_DUT, DLA_KERNEL_BINARY, &ne, 0);
            dla_ternary_args w = {.struct_size = sizeof w, .op = DLA_TERNARY_WHERE, .z = r,
                                  .cond = ne.z, .a = opnd[1], .b = opnd[2]};
            if (s == DLA_OK)
                s = cf_call(c, CF_DUT, DLA_KERNEL_TERNARY, &w, 0);
        }
        if (s != DLA_OK && !c->failed) {
            cf_fail(c, "step %d launched alone: %s", j, dla_last_error());
            ok = 0;
        } else if (s != DLA_OK) {
            ok = 0;
        }
    }
    for (int k = -1; ok && k < ex->n; k++) {
        const int j = k < 0 ? a->ninsns - 1 : ex->reg[k];
        const dla_view *out = k < 0 ? &a->y : &ex->view[k];
        const dla_view r = dense_on(regs[j], t, &a->y);
        if (tb->strided_copy(ctx, out, &r) != DLA_OK) {
            cf_fail(c, "strided_copy of register %d into %s: %s", j, k < 0 ? "y" : "an extra",
                    dla_last_error());
            ok = 0;
        }
    }
    if (tb->sync)
        tb->sync(ctx);
    for (int j = 0; j < a->ninsns; j++)
        if (regs[j])
            tb->mem_free(ctx, regs[j]);
    if (cond)
        tb->mem_free(ctx, cond);
    if (zero)
        tb->mem_free(ctx, zero);
    return ok;
}

/* Nonzero when the device under test runs every step natively, so its
 * own launches can stand for the program. */
static int steps_native(const cf_case *c, dla_dtype t)
{
    const cf_device *d = c->suite->dev[CF_DUT];
    const dla_plugin *tb = d->table;
    if (!tb->unary || !tb->binary || !tb->ternary || !tb->cast || !tb->strided_copy)
        return 0;
    static const dla_kernel need[] = {DLA_KERNEL_UNARY, DLA_KERNEL_BINARY, DLA_KERNEL_TERNARY,
                                      DLA_KERNEL_CAST, DLA_KERNEL_STRIDED_COPY};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (tb->supports && !tb->supports(d->ctx, need[i], t))
            return 0;
    return !tb->supports || tb->supports(d->ctx, DLA_KERNEL_CAST, DLA_BOOL);
}

/* A random program of min_insns or more instructions: inputs,
 * instructions and their operands (views and memory are the caller's);
 * only steps whose results are exact when asked. */
static void random_program(cf_case *c, dla_fused_args *a, dla_dtype t, int exact_only,
                           int min_insns)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->dtype = t;
    a->ninputs = (int32_t)cf_int(c, 1, DLA_FUSED_MAX_INPUTS);
    a->ninsns = (int32_t)cf_int(c, min_insns, DLA_FUSED_MAX_INSNS);
    for (int j = 0; j < a->ninsns; j++) {
        dla_fused_insn *in = &a->insns[j];
        do {
            const int r = (int)cf_int(c, 0, 9);
            in->kind = r < 4 ? DLA_FUSED_UNARY : r < 8 ? DLA_FUSED_BINARY : DLA_FUSED_WHERE;
            in->op = in->kind == DLA_FUSED_UNARY
                         ? (int32_t)fused_unary[cf_int(c, 0, sizeof fused_unary /
                                                                 sizeof fused_unary[0] - 1)]
                     : in->kind == DLA_FUSED_BINARY ? (int32_t)cf_int(c, 0, DLA_BINARY_COUNT - 1)
                                                    : 0;
        } while (exact_only && !exact_step(in));
        in->alpha = cf_unif(c, -2, 2);
        in->beta = cf_unif(c, -2, 2);
        for (int k = 0; k < 3; k++)
            in->src[k] = j && cf_chance(c, 60) ? (int32_t)cf_int(c, 0, j - 1)
                                               : (int32_t)(-1 - cf_int(c, 0, a->ninputs - 1));
    }
}

/* The element of b's buffer (on the device under test now) where its
 * contents first differ from want's bytes; -1 when they are the same, -2
 * when they could not be read (reported). */
static int64_t first_difference(cf_case *c, const cf_buf *b, const void *want)
{
    void *got, *oracle;
    if (!cf_buf_download(c, b, &got, &oracle))
        return -2;
    const size_t bytes = (size_t)b->n * dla_dtype_size(b->dtype);
    int64_t at = -1;
    if (memcmp(want, got, bytes) != 0) {
        size_t i = 0;
        while (((const unsigned char *)want)[i] == ((unsigned char *)got)[i])
            i++;
        at = (int64_t)(i / dla_dtype_size(b->dtype));
    }
    free(got);
    free(oracle);
    return at;
}

/* Whether the device under test's contents of b are the bits of first
 * (its contents after the program); reports where not. */
static int same_bits(cf_case *c, const cf_buf *b, const void *first, const char *name)
{
    const int64_t at = first_difference(c, b, first);
    if (at >= 0)
        cf_fail(c, "the program and its steps launched one by one differ at element %lld of %s's "
                   "buffer",
                (long long)at, name);
    return at == -1;
}

/* How much aliasing input i by the result of register reg puts to the
 * test: 2 when an instruction after reg reads it (a plugin that stores
 * the result before those reads sees the new value), 1 when only earlier
 * ones do (a plugin that stores results and then runs the program again,
 * or reads another position after storing, sees it), 0 when none does. */
static int alias_weight(const dla_fused_args *a, int i, int reg)
{
    int w = 0;
    for (int j = 0; j < a->ninsns; j++)
        for (int k = 0; k < dla_kit_fused_nsrc(a->insns[j].kind); k++)
            if (a->insns[j].src[k] == -1 - i)
                w = j > reg ? 2 : w > 1 ? w : 1;
    return w;
}

/* Nonzero when v broadcasts (stride 0 along a dim of more than 1): such
 * an input cannot be a result's view. */
static int broadcasts(const dla_view *v)
{
    for (int d = 0; d < v->ndims; d++)
        if (v->strides[d] == 0 && v->dims[d] > 1)
            return 1;
    return 0;
}

/* Whether the device under test left input i's buffer b (no result's
 * view) as it was; reports where not. */
static int untouched(cf_case *c, const cf_buf *b, int i)
{
    const int64_t at = first_difference(c, b, b->host);
    if (at >= 0)
        cf_fail(c, "the program wrote input %d's buffer (no result's view) at element %lld", i,
                (long long)at);
    return at == -1;
}

/* multi: the ABI 1.8 form, 1..7 earlier registers also stored into extra
 * results of their own views (dense or strided, as y's).
 *
 * Results may alias inputs exactly, as the ABI lets them (the planner
 * updates batchnorm's running statistics in place): in a fifth of the
 * cases y is input 0's very view, and in a third of fused_multi's cases
 * one or more extras are each the view of another input that does not
 * broadcast, preferably one an instruction after the extra's register
 * reads. The reference is the ABI's: every register from the inputs'
 * starting values, then the results stored. The oracle runs on copies of
 * the aliased inputs (so it aliases nothing), the steps one by one read
 * the restored starting contents and store their registers only at the
 * end; y's and the extras' buffers are then compared whole (their
 * elements outside the view unchanged), and every input no result
 * aliases must come back as it went in. The aliasing draws come after
 * all the others, so a case without them draws what it drew before. */
static void fused_case(cf_case *c, int multi)
{
    const cf_device *dut = c->suite->dev[CF_DUT];
    const dla_kernel kernel = multi ? DLA_KERNEL_FUSED_MULTI : DLA_KERNEL_FUSED;
    const int t = cf_float_dtype(c, kernel);
    const int member = multi ? CF_TABLE(c, CF_DUT)->fused_multi != NULL
                             : CF_TABLE(c, CF_DUT)->fused != NULL;
    if (t < 0 || !member || dut->abi_minor < (multi ? 8 : 2)) {
        c->skipped = 1;
        return;
    }
    dla_fused_args a;
    /* An extra result is a register before the last: two steps at least. */
    random_program(c, &a, (dla_dtype)t, cf_chance(c, 40), multi ? 2 : 1);
    int exact = 1;
    for (int j = 0; j < a.ninsns; j++)
        exact &= exact_step(&a.insns[j]);
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 4, 9, 2);
    if (c->index == 0)
        nd = 2, dims[0] = 128, dims[1] = 600;
    const int alias = cf_chance(c, 20);
    cf_buf *in[DLA_FUSED_MAX_INPUTS];
    dla_view y;
    cf_buf *by = cf_buf_new(c, a.dtype, cf_view(c, &y, a.dtype, nd, dims, 0), -2, 2, 5);
    if (!by)
        return;
    for (int i = 0; i < a.ninputs; i++) {
        if (i == 0 && alias) {
            a.inputs[0] = y;
            in[0] = by;
            continue;
        }
        if (!(in[i] = cf_buf_new(c, a.dtype, cf_view(c, &a.inputs[i], a.dtype, nd, dims, 1), -2, 2,
                                 10)))
            return;
        /* NaN and infinities, which each step must treat as its kernel
         * does (relu, max, sign of NaN), interpreted or compiled. */
        sprinkle(c, in[i]);
        if (!cf_buf_upload(c, in[i]))
            return;
    }
    a.y = y;
    /* The extras: distinct registers below the last, each in a buffer of
     * its own (so it overlaps nothing), its view drawn as y's. */
    fused_extras ex = {0};
    cf_buf *bx[DLA_FUSED_MAX_EXTRA];
    if (multi) {
        const int below = a.ninsns - 1;
        int32_t pool[DLA_FUSED_MAX_INSNS];
        for (int j = 0; j < below; j++)
            pool[j] = j;
        ex.n = (int)cf_int(c, 1, below < DLA_FUSED_MAX_EXTRA ? below : DLA_FUSED_MAX_EXTRA);
        for (int k = 0; k < ex.n; k++) {
            const int pick = (int)cf_int(c, k, below - 1);
            const int32_t r = pool[pick];
            pool[pick] = pool[k];
            pool[k] = r;
            ex.reg[k] = r;
            if (!(bx[k] = cf_buf_new(c, a.dtype, cf_view(c, &ex.view[k], a.dtype, nd, dims, 0), -2,
                                     2, 5)))
                return;
        }
    }
    /* Extras that alias inputs: each takes an input's view and buffer (its
     * own buffer, drawn above, goes unused), a different input each, never
     * y's. aliased[i]: some result is input i's view. */
    int ex_input[DLA_FUSED_MAX_EXTRA];
    unsigned char aliased[DLA_FUSED_MAX_INPUTS] = {0};
    aliased[0] = (unsigned char)alias;
    for (int k = 0; k < ex.n; k++)
        ex_input[k] = -1;
    if (multi && cf_chance(c, 33)) {
        int free_in[DLA_FUSED_MAX_INPUTS], nfree = 0, order[DLA_FUSED_MAX_EXTRA];
        for (int i = alias; i < a.ninputs; i++)
            if (!broadcasts(&a.inputs[i]))
                free_in[nfree++] = i;
        for (int k = 0; k < ex.n; k++)
            order[k] = k;
        const int na = nfree ? (int)cf_int(c, 1, ex.n < nfree ? ex.n : nfree) : 0;
        for (int q = 0; q < na; q++) {
            const int pe = (int)cf_int(c, q, ex.n - 1), e = order[pe];
            order[pe] = order[q];
            order[q] = e;
            /* Among the inputs left, one of those that test it most. */
            int best = 0, cand[DLA_FUSED_MAX_INPUTS], ncand = 0;
            for (int f = 0; f < nfree; f++)
                if (alias_weight(&a, free_in[f], ex.reg[e]) > best)
                    best = alias_weight(&a, free_in[f], ex.reg[e]);
            for (int f = 0; f < nfree; f++)
                if (alias_weight(&a, free_in[f], ex.reg[e]) == best)
                    cand[ncand++] = f;
            const int f = cand[cf_int(c, 0, ncand - 1)], i = free_in[f];
            free_in[f] = free_in[--nfree];
            ex_input[e] = i;
            ex.view[e] = a.inputs[i];
            bx[e] = in[i];
            aliased[i] = 1;
        }
    }
    char ds[96];
    cf_describe(c, "%s %s dims %s, %d inputs%s, %d steps:", multi ? "fused_multi" : "fused",
                dla_dtype_name(a.dtype), cf_dims_str(ds, sizeof ds, nd, dims), (int)a.ninputs,
                alias ? " (y is input 0)" : "", (int)a.ninsns);
    for (int j = 0; j < a.ninsns; j++) {
        const dla_fused_insn *s = &a.insns[j];
        cf_describe(c, " r%d=%s(%d,%d,%d)", j,
                    s->kind == DLA_FUSED_UNARY    ? dla_kit_unary_name((dla_unary_op)s->op)
                    : s->kind == DLA_FUSED_BINARY ? dla_kit_binary_name((dla_binary_op)s->op)
                                                  : "where",
                    (int)s->src[0], (int)s->src[1], (int)s->src[2]);
    }
    for (int k = 0; k < ex.n; k++) {
        char vs[128], is[32] = "";
        if (ex_input[k] >= 0)
            snprintf(is, sizeof is, " is input %d", ex_input[k]);
        cf_describe(c, "%s r%d%s%s", k ? "," : "; extras", (int)ex.reg[k], is,
                    cf_view_str(vs, sizeof vs, &ex.view[k]));
    }
    /* The program on both devices; the oracle's aliased inputs are copies
     * of their starting contents. */
    for (int k = 0; k < 2; k++) {
        dla_fused_multi_args m;
        memset(&m, 0, sizeof m);
        m.struct_size = sizeof m;
        m.program = a;
        m.program.y.mem = by->mem[k];
        dla_mem copy[DLA_FUSED_MAX_INPUTS] = {0};
        int ok = 1;
        for (int i = 0; i < a.ninputs; i++) {
            m.program.inputs[i].mem = in[i]->mem[k];
            if (k == CF_ORACLE && aliased[i] && ok)
                ok = (copy[i] = oracle_copy(c, in[i])) != NULL;
            if (copy[i])
                m.program.inputs[i].mem = copy[i];
        }
        m.nextra = ex.n;
        for (int e = 0; e < ex.n; e++) {
            m.extra_reg[e] = ex.reg[e];
            m.extra[e] = ex.view[e];
            m.extra[e].mem = bx[e]->mem[k];
        }
        if (ok)
            cf_record(c, k, multi ? cf_call(c, k, kernel, &m, 0)
                                  : cf_call(c, k, kernel, &m.program, 0));
        if (k == CF_ORACLE && CF_TABLE(c, k)->sync)
            CF_TABLE(c, k)->sync(CF_CTX(c, k));
        for (int i = 0; i < a.ninputs; i++)
            if (copy[i])
                CF_TABLE(c, k)->mem_free(CF_CTX(c, k), copy[i]);
        if (!ok)
            return;
    }
    if (!cf_agree(c))
        return;
    for (int i = 0; i < a.ninputs; i++)
        if (!aliased[i] && !untouched(c, in[i], i))
            return;
    if (exact && !cf_compare(c, by, &y, CF_EXACT))
        return;
    for (int k = 0; k < ex.n; k++)
        if (exact && !cf_compare(c, bx[k], &ex.view[k], CF_EXACT))
            return;
    if (!steps_native(c, a.dtype))
        return;
    /* The same program's steps one by one on the device under test, from
     * the same starting memory, into a second y and extras: the bits must
     * agree. Restoring y's and the extras' buffers restores the inputs
     * they alias (the others are untouched, checked above); the steps
     * store y and the extras from their registers after the last one. */
    const cf_buf *outs[1 + DLA_FUSED_MAX_EXTRA];
    void *first[1 + DLA_FUSED_MAX_EXTRA] = {0};
    int ok = 1;
    for (int k = 0; k <= ex.n && ok; k++) {
        void *unused;
        outs[k] = k ? bx[k - 1] : by;
        ok = cf_buf_download(c, outs[k], &first[k], &unused);
        if (ok)
            free(unused);
    }
    for (int k = 0; k <= ex.n && ok; k++) /* back to the starting contents */
        ok = cf_buf_upload(c, (cf_buf *)outs[k]);
    for (int i = 0; i < a.ninputs; i++)
        a.inputs[i].mem = in[i]->mem[CF_DUT];
    a.y.mem = by->mem[CF_DUT];
    for (int k = 0; k < ex.n; k++)
        ex.view[k].mem = bx[k]->mem[CF_DUT];
    if (ok && steps_on_dut(c, &a, &ex)) {
        for (int k = 0; k <= ex.n; k++) {
            char name[48] = "y";
            if (k && ex_input[k - 1] >= 0)
                snprintf(name, sizeof name, "extra[%d] (input %d)", k - 1, ex_input[k - 1]);
            else if (k)
                snprintf(name, sizeof name, "extra[%d]", k - 1);
            else if (alias)
                snprintf(name, sizeof name, "y (input 0)");
            if (!same_bits(c, outs[k], first[k], name))
                break;
        }
    }
    for (int k = 0; k <= ex.n; k++)
        free(first[k]);
}

void cf_case_fused(cf_case *c) { fused_case(c, 0); }

void cf_case_fused_multi(cf_case *c) { fused_case(c, 1); }

/* ---------------------------------------------------------- fused_reduce */

/* The program's values written out by the oracle's fused kernel, then
 * reduced by its reduce kernel, are the reference; the tolerance is the
 * reduce kernel's, from the same reduction of their magnitudes. Programs
 * use exact steps only, so the values summed are the same bits on every
 * device and only the summation order differs.
 *
 * The oracle's sum of prog (its last register) into by's oracle copy, and
 * the magnitudes behind the tolerance (*mag, malloc'd). bf: the written-out
 * program, full: its dense view. Returns the oracle's status. */
static dla_status oracle_sum(cf_case *c, const dla_fused_args *prog, dla_reduce_op op,
                             const dla_view *y, cf_buf *by, cf_buf *bf, const dla_view *full,
                             double **mag)
{
    dla_fused_args of = *prog;
    of.y = *full;
    of.y.mem = bf->mem[CF_ORACLE];
    dla_status s = CF_TABLE(c, CF_ORACLE)->fused(CF_CTX(c, CF_ORACLE), &of);
    dla_reduce_args red = {.struct_size = sizeof red, .op = op, .y = *y, .x = *full};
    red.y.mem = by->mem[CF_ORACLE], red.x.mem = bf->mem[CF_ORACLE];
    if (s == DLA_OK)
        s = CF_TABLE(c, CF_ORACLE)->reduce(CF_CTX(c, CF_ORACLE), &red);
    if (s != DLA_OK)
        return s;
    cf_buf *ay = cf_buf_abs(c, by), *af = ay ? cf_buf_abs(c, bf) : NULL;
    if (!af)
        return DLA_ERR_OUT_OF_MEMORY;
    dla_view mv = *full;
    mv.mem = af->mem[CF_ORACLE];
    dla_unary_args ab = {.struct_size = sizeof ab, .op = DLA_UNARY_ABS, .y = mv, .x = *full};
    ab.x.mem = bf->mem[CF_ORACLE];
    red.y.mem = ay->mem[CF_ORACLE], red.x.mem = af->mem[CF_ORACLE];
    if ((s = CF_TABLE(c, CF_ORACLE)->unary(CF_CTX(c, CF_ORACLE), &ab)) != DLA_OK ||
        (s = CF_TABLE(c, CF_ORACLE)->reduce(CF_CTX(c, CF_ORACLE), &red)) != DLA_OK)
        return s;
    *mag = cf_oracle_values(c, ay);
    return *mag ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
}

/* pair: the ABI 1.4 form, a second sum y2 of a random register. */
static void fused_reduce_case(cf_case *c, int pair)
{
    const cf_device *dut = c->suite->dev[CF_DUT];
    const dla_kernel kernel = pair ? DLA_KERNEL_FUSED_REDUCE_PAIR : DLA_KERNEL_FUSED_REDUCE;
    const int t = cf_float_dtype(c, kernel);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->fused_reduce || dut->abi_minor < (pair ? 4 : 3) ||
        !cf_both_support(c, DLA_KERNEL_FUSED, (dla_dtype)t) ||
        !cf_both_support(c, DLA_KERNEL_REDUCE, (dla_dtype)t)) {
        c->skipped = 1;
        return;
    }
    dla_fused_reduce_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.op = cf_chance(c, 50) ? DLA_REDUCE_SUM : DLA_REDUCE_MEAN;
    random_program(c, &r.program, (dla_dtype)t, 1, 1);
    if (pair)
        r.reg2 = (int32_t)cf_int(c, 0, r.program.ninsns - 1);
    int nd;
    int64_t dims[DLA_MAX_DIMS], yd[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 4, 9, 2);
    if (c->index == 0) /* batchnorm's statistics: 24x24 positions, 20 channels, 128 images */
        nd = 4, dims[0] = 24, dims[1] = 24, dims[2] = 20, dims[3] = 128;
    for (int d = 0; d < nd; d++)
        yd[d] = c->index == 0 ? (d == 2 ? dims[d] : 1) : cf_chance(c, 50) ? 1 : dims[d];
    cf_buf *in[DLA_FUSED_MAX_INPUTS];
    for (int i = 0; i < r.program.ninputs; i++)
        if (!(in[i] = cf_buf_new(c, r.program.dtype,
                                 cf_view(c, &r.program.inputs[i], r.program.dtype, nd, dims, 1),
                                 -2, 2, 10)))
            return;
    /* Infinities and NaN among the summed values too (a compensated
     * float sum must keep an infinity one). */
    const int64_t npos = cf_numel(nd, dims);
    for (int i = 0; i < r.program.ninputs; i++) {
        if (npos > 0 && cf_chance(c, 30))
            cf_buf_set(in[i], cf_view_at(&r.program.inputs[i], cf_int(c, 0, npos - 1)),
                       cf_chance(c, 50) ? INFINITY : -INFINITY);
        sprinkle(c, in[i]);
        if (!cf_buf_upload(c, in[i]))
            return;
    }
    dla_view y, y2, full;
    cf_buf *by = cf_buf_new(c, r.program.dtype, cf_view(c, &y, r.program.dtype, nd, yd, 0), -2,
                            2, 0);
    cf_buf *by2 = by && pair ? cf_buf_new(c, r.program.dtype,
                                          cf_view(c, &y2, r.program.dtype, nd, yd, 0), -2, 2, 0)
                             : NULL;
    cf_buf *bf = by && (by2 || !pair)
                     ? cf_buf_new(c, r.program.dtype, cf_dense(&full, r.program.dtype, nd, dims),
                                  0, 0, 0)
                     : NULL;
    if (!bf)
        return;
    r.program.y = full; /* its dims are the space; the kernel writes nothing there */
    char ds[96], ys[96];
    cf_describe(c, "fused_reduce %s %s dims %s -> y %s, %d inputs, %d steps:",
                r.op == DLA_REDUCE_SUM ? "sum" : "mean", dla_dtype_name(r.program.dtype),
                cf_dims_str(ds, sizeof ds, nd, dims), cf_dims_str(ys, sizeof ys, nd, yd),
                (int)r.program.ninputs, (int)r.program.ninsns);
    for (int j = 0; j < r.program.ninsns; j++) {
        const dla_fused_insn *s = &r.program.insns[j];
        cf_describe(c, " r%d=%s(%d,%d,%d)", j,
                    s->kind == DLA_FUSED_UNARY    ? dla_kit_unary_name((dla_unary_op)s->op)
                    : s->kind == DLA_FUSED_BINARY ? dla_kit_binary_name((dla_binary_op)s->op)
                                                  : "where",
                    (int)s->src[0], (int)s->src[1], (int)s->src[2]);
    }
    if (pair)
        cf_describe(c, "; y2 sums r%d", (int)r.reg2);
    /* The device under test sums in one pass; the oracle writes the
     * program out (into bf) and reduces it (into by), and for y2 the
     * program cut after register reg2. */
    dla_fused_reduce_args dr = r;
    dr.y = y;
    dr.y.mem = by->mem[CF_DUT];
    if (pair) {
        dr.y2 = y2;
        dr.y2.mem = by2->mem[CF_DUT];
    }
    for (int i = 0; i < r.program.ninputs; i++)
        dr.program.inputs[i].mem = in[i]->mem[CF_DUT];
    cf_record(c, CF_DUT, cf_call(c, CF_DUT, kernel, &dr, 0));
    dla_fused_args prog = r.program;
    for (int i = 0; i < r.program.ninputs; i++)
        prog.inputs[i].mem = in[i]->mem[CF_ORACLE];
    double *mag = NULL, *mag2 = NULL;
    dla_status s = oracle_sum(c, &prog, r.op, &y, by, bf, &full, &mag);
    if (s == DLA_OK && pair) {
        prog.ninsns = r.reg2 + 1;
        s = oracle_sum(c, &prog, r.op, &y2, by2, bf, &full, &mag2);
    }
    cf_record(c, CF_ORACLE, s);
    int64_t nred = 1;
    for (int d = 0; d < nd; d++)
        nred *= yd[d] == dims[d] ? 1 : dims[d];
    if (cf_agree(c) && cf_compare(c, by, &y, (cf_tol){0, mag, (double)nred}) && pair)
        cf_compare(c, by2, &y2, (cf_tol){0, mag2, (double)nred});
    free(mag);
    free(mag2);
}

void cf_case_fused_reduce(cf_case *c) { fused_reduce_case(c, 0); }

void cf_case_fused_reduce_pair(cf_case *c) { fused_reduce_case(c, 1); }

/*
 * dlaccel/plugin_kit_args.h - the plugin kit's argument checks, one
 * function per kernel (included by dlaccel/plugin_kit.h; include that).
 *
 * Each dla_kit_check_<kernel> runs every check the in-tree plugins run on
 * that kernel's arguments before touching memory, in the same order, and
 * returns the first failure (status and message as dla_kit_check_view's
 * conventions). A kernel then runs on arguments that are in bounds, of
 * equal dims where the ABI says so, of the dtypes it accepts and without
 * the overlaps the ABI rules out. Float dtypes follow kit->no_f64.
 */
/* Before the guard: included first, this header still comes in dlaccel/plugin_kit.h's
 * order, after the declarations it uses. */
#include <dlaccel/plugin_kit.h>
#ifndef DLACCEL_PLUGIN_KIT_ARGS_H
#define DLACCEL_PLUGIN_KIT_ARGS_H

#include <dlaccel/plugin_ops.h>
#include <limits.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------------- op names */

/* The ABI's name of a unary, binary or reduce op ("exp"); "unknown"
 * outside its list. */
static inline const char *dla_kit_unary_name(dla_unary_op op)
{
    static const char *const names[] = {
#define DLA__KIT_NAME(name, str) str,
        DLA_UNARY_LIST(DLA__KIT_NAME)
#undef DLA__KIT_NAME
    };
    return (unsigned)op < DLA_UNARY_COUNT ? names[op] : "unknown";
}
static inline const char *dla_kit_binary_name(dla_binary_op op)
{
    static const char *const names[] = {
#define DLA__KIT_NAME(name, str) str,
        DLA_BINARY_LIST(DLA__KIT_NAME)
#undef DLA__KIT_NAME
    };
    return (unsigned)op < DLA_BINARY_COUNT ? names[op] : "unknown";
}

/* Nonzero for the comparisons, whose z is DLA_BOOL. */
static inline int dla_kit_binary_is_comparison(dla_binary_op op)
{
    return op >= DLA_BINARY_EQ && op < DLA_BINARY_COUNT;
}

/* ------------------------------------------------ fill, copy and cast */

/* value converted as fill and cast convert to int32 and uint8 (MATLAB's
 * rules where the ABI leaves C undefined): saturating at the ends, NaN to
 * 0, truncating toward zero; the arithmetic is dlaccel/plugin_ops.h's,
 * which device code compiles too. */
static inline int32_t dla_kit_to_i32(double v)
{
    return (int32_t)dla_ops_to_i32(v);
}
static inline uint8_t dla_kit_to_u8(double v)
{
    return (uint8_t)dla_ops_to_u8(v);
}

/* The bit pattern fill stores for value in dtype, written to bits (room
 * for 8 bytes; dla_kit_dtype_size(dtype) of them are the element). A bool
 * is value != 0. Returns 0 for a dtype outside the list. */
static inline int dla_kit_fill_bits(dla_dtype dtype, double value, void *bits)
{
    switch (dtype) {
    case DLA_F32: {
        const float f = (float)value;
        memcpy(bits, &f, sizeof f);
        return 1;
    }
    case DLA_F64: memcpy(bits, &value, sizeof value); return 1;
    case DLA_I32: {
        const int32_t i = dla_kit_to_i32(value);
        memcpy(bits, &i, sizeof i);
        return 1;
    }
    case DLA_U8: *(uint8_t *)bits = dla_kit_to_u8(value); return 1;
    case DLA_BOOL: *(uint8_t *)bits = value != 0.0; return 1;
    default: return 0;
    }
}

/* strided_copy (same_dtype nonzero) and cast: both views checked, x of
 * y's dims, and for a copy the same dtype. */
static inline dla_status dla_kit_check_copy(const dla_kit *kit, const char *kernel,
                                            const dla_view *y, const dla_view *x, int same_dtype)
{
    dla_status s;
    if ((s = dla_kit_check_view(kit, kernel, "y", y)) != DLA_OK ||
        (s = dla_kit_check_view(kit, kernel, "x", x)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, kernel, "x", x, "y", y)) != DLA_OK)
        return s;
    if (same_dtype && x->dtype != y->dtype) {
        char buf[DLA_KIT_DIMS_BUF];
        return kit->host->error(DLA_ERR_DTYPE,
                                "%s %s: argument x (dims %s): dtype %s differs from y's %s",
                                kit->name, kernel,
                                dla_kit_dims_str(buf, sizeof buf, x->ndims, x->dims),
                                dla_kit_dtype_name(x->dtype), dla_kit_dtype_name(y->dtype));
    }
    return DLA_OK;
}

/* copy_to_device, copy_to_host and copy_on_device (member): bytes at
 * offset of the handle mem (argument arg) against a host pointer host (or,
 * on device, the other handle): neither NULL when bytes > 0, and the range
 * inside the handle's bytes when kit->mem_bytes can tell. */
static inline dla_status dla_kit_check_mem_range(const dla_kit *kit, const char *member,
                                                 const char *arg, dla_mem mem, size_t offset,
                                                 const void *host, size_t bytes)
{
    if (bytes == 0)
        return DLA_OK;
    if (mem == NULL || host == NULL)
        return kit->host->error(DLA_ERR_INVALID_ARGUMENT, "%s %s: argument %s: NULL for %zu bytes",
                                kit->name, member, mem == NULL ? arg : "host", bytes);
    if (kit->mem_bytes == NULL)
        return DLA_OK;
    const size_t size = kit->mem_bytes(mem);
    if (offset > size || bytes > size - offset)
        return kit->host->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s %s: argument %s: bytes %zu..%zu outside its %zu", kit->name,
                                member, arg, offset, offset + bytes, size);
    return DLA_OK;
}

/* ------------------------------------------------------- elementwise */

/* unary: a known op, y and x checked, of equal dims, x float, y of x's
 * dtype. */
static inline dla_status dla_kit_check_unary(const dla_kit *kit, const dla_unary_args *a)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, "unary", a->struct_size, sizeof *a, "1.0");
    if (s != DLA_OK)
        return s;
    if ((unsigned)a->op >= DLA_UNARY_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "%s unary: argument op: unknown op %d", kit->name,
                        (int)a->op);
    const dla_view *y = &a->y, *x = &a->x;
    if ((s = dla_kit_check_view(kit, "unary", "y", y)) != DLA_OK ||
        (s = dla_kit_check_view(kit, "unary", "x", x)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, "unary", "x", x, "y", y)) != DLA_OK ||
        (s = dla_kit_check_float(kit, "unary", "x", x)) != DLA_OK)
        return s;
    if (y->dtype != x->dtype) {
        char buf[DLA_KIT_DIMS_BUF];
        return h->error(DLA_ERR_DTYPE,
                        "%s unary: argument y (dims %s): dtype %s differs from x's %s", kit->name,
                        dla_kit_dims_str(buf, sizeof buf, y->ndims, y->dims),
                        dla_kit_dtype_name(y->dtype), dla_kit_dtype_name(x->dtype));
    }
    return DLA_OK;
}

/* binary: a known op, z, a and b checked, a and b of z's dims, a float, b
 * of a's dtype, z of a's (a comparison's: DLA_BOOL, and then sharing
 * memory with neither operand: its narrower elements would overwrite ones
 * not read yet). */
static inline dla_status dla_kit_check_binary(const dla_kit *kit, const dla_binary_args *a)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, "binary", a->struct_size, sizeof *a, "1.0");
    if (s != DLA_OK)
        return s;
    if ((unsigned)a->op >= DLA_BINARY_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "%s binary: argument op: unknown op %d", kit->name,
                        (int)a->op);
    const dla_view *z = &a->z, *l = &a->a, *r = &a->b;
    if ((s = dla_kit_check_view(kit, "binary", "z", z)) != DLA_OK ||
        (s = dla_kit_check_view(kit, "binary", "a", l)) != DLA_OK ||
        (s = dla_kit_check_view(kit, "binary", "b", r)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, "binary", "a", l, "z", z)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, "binary", "b", r, "z", z)) != DLA_OK ||
        (s = dla_kit_check_float(kit, "binary", "a", l)) != DLA_OK)
        return s;
    const char *name = dla_kit_binary_name(a->op);
    char buf[DLA_KIT_DIMS_BUF];
    if (r->dtype != l->dtype)
        return h->error(DLA_ERR_DTYPE, "%s binary %s: argument b (dims %s): dtype %s differs from "
                        "a's %s", kit->name, name,
                        dla_kit_dims_str(buf, sizeof buf, r->ndims, r->dims),
                        dla_kit_dtype_name(r->dtype), dla_kit_dtype_name(l->dtype));
    const int cmp = dla_kit_binary_is_comparison(a->op);
    const dla_dtype want = cmp ? DLA_BOOL : l->dtype;
    if (z->dtype != want)
        return h->error(DLA_ERR_DTYPE, "%s binary %s: argument z (dims %s): dtype %s, expected %s",
                        kit->name, name, dla_kit_dims_str(buf, sizeof buf, z->ndims, z->dims),
                        dla_kit_dtype_name(z->dtype), dla_kit_dtype_name(want));
    if (cmp && (dla_kit_views_overlap(z, l) || dla_kit_views_overlap(z, r)))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s binary %s: argument z (dims %s): shares memory with operand %s, "
                        "which a logical result cannot",
                        kit->name, name, dla_kit_dims_str(buf, sizeof buf, z->ndims, z->dims),
                        dla_kit_views_overlap(z, l) ? "a" : "b");
    return DLA_OK;
}

/* ternary where: z, cond, a and b checked, of z's dims, z float, cond
 * DLA_BOOL, a and b of z's dtype, z not sharing memory with cond. */
static inline dla_status dla_kit_check_ternary(const dla_kit *kit, const dla_ternary_args *args)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, "ternary", args->struct_size, sizeof *args, "1.1");
    if (s != DLA_OK)
        return s;
    if (args->op != DLA_TERNARY_WHERE)
        return h->error(DLA_ERR_UNSUPPORTED, "%s ternary: argument op: unknown op %d", kit->name,
                        (int)args->op);
    const dla_view *z = &args->z, *cond = &args->cond, *a = &args->a, *b = &args->b;
    const char *k = "ternary where";
    if ((s = dla_kit_check_view(kit, k, "z", z)) != DLA_OK ||
        (s = dla_kit_check_view(kit, k, "cond", cond)) != DLA_OK ||
        (s = dla_kit_check_view(kit, k, "a", a)) != DLA_OK ||
        (s = dla_kit_check_view(kit, k, "b", b)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, k, "cond", cond, "z", z)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, k, "a", a, "z", z)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, k, "b", b, "z", z)) != DLA_OK ||
        (s = dla_kit_check_float(kit, k, "z", z)) != DLA_OK)
        return s;
    char buf[DLA_KIT_DIMS_BUF];
    if (cond->dtype != DLA_BOOL)
        return h->error(DLA_ERR_DTYPE,
                        "%s ternary where: argument cond (dims %s): dtype %s, expected logical",
                        kit->name, dla_kit_dims_str(buf, sizeof buf, cond->ndims, cond->dims),
                        dla_kit_dtype_name(cond->dtype));
    if (a->dtype != z->dtype || b->dtype != z->dtype) {
        const dla_view *odd = a->dtype != z->dtype ? a : b;
        return h->error(DLA_ERR_DTYPE,
                        "%s ternary where: argument %s (dims %s): dtype %s differs from z's %s",
                        kit->name, odd == a ? "a" : "b",
                        dla_kit_dims_str(buf, sizeof buf, odd->ndims, odd->dims),
                        dla_kit_dtype_name(odd->dtype), dla_kit_dtype_name(z->dtype));
    }
    if (dla_kit_views_overlap(z, cond))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s ternary where: argument z (dims %s): shares memory with cond",
                        kit->name, dla_kit_dims_str(buf, sizeof buf, z->ndims, z->dims));
    return DLA_OK;
}

/* ------------------------------------------------------------ reduce */

/* reduce: a known op, y and x checked, x float, y of x's dtype and ndims
 * with each dim equal to x's or 1; an index (index.mem set) only with max
 * and min, checked, of y's dims, DLA_I32. */
static inline dla_status dla_kit_check_reduce(const dla_kit *kit, const dla_reduce_args *a)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, "reduce", a->struct_size, sizeof *a, "1.0");
    if (s != DLA_OK)
        return s;
    if ((unsigned)a->op >= DLA_REDUCE_COUNT)
        return h->error(DLA_ERR_UNSUPPORTED, "%s reduce: argument op: unknown op %d", kit->name,
                        (int)a->op);
    const dla_view *y = &a->y, *x = &a->x;
    if ((s = dla_kit_check_view(kit, "reduce", "y", y)) != DLA_OK ||
        (s = dla_kit_check_view(kit, "reduce", "x", x)) != DLA_OK ||
        (s = dla_kit_check_float(kit, "reduce", "x", x)) != DLA_OK)
        return s;
    /* Dims are formatted for messages only: snprintf costs more than a
     * small reduction. */
    char bx[DLA_KIT_DIMS_BUF], by[DLA_KIT_DIMS_BUF];
    if (y->dtype != x->dtype)
        return h->error(DLA_ERR_DTYPE,
                        "%s reduce: argument y (dims %s): dtype %s differs from x's %s", kit->name,
                        dla_kit_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla_kit_dtype_name(y->dtype), dla_kit_dtype_name(x->dtype));
    int fits = y->ndims == x->ndims;
    for (int d = 0; fits && d < x->ndims; d++)
        fits = y->dims[d] == x->dims[d] || y->dims[d] == 1;
    if (!fits)
        return h->error(DLA_ERR_SHAPE,
                        "%s reduce: argument y: dims %s do not reduce x's %s (each dim must "
                        "equal x's or be 1)",
                        kit->name, dla_kit_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla_kit_dims_str(bx, sizeof bx, x->ndims, x->dims));
    if (a->index.mem == NULL)
        return DLA_OK;
    const dla_view *ix = &a->index;
    if (a->op != DLA_REDUCE_MAX && a->op != DLA_REDUCE_MIN)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s reduce: argument index: only max and min give an index (x %s)",
                        kit->name, dla_kit_dims_str(bx, sizeof bx, x->ndims, x->dims));
    if ((s = dla_kit_check_view(kit, "reduce", "index", ix)) != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, "reduce", "index", ix, "y", y)) != DLA_OK)
        return s;
    if (ix->dtype != DLA_I32)
        return h->error(DLA_ERR_DTYPE, "%s reduce: argument index (dims %s): dtype %s, not int32",
                        kit->name, dla_kit_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla_kit_dtype_name(ix->dtype));
    return DLA_OK;
}

/* -------------------------------------------------------------- gemm */

/* One GEMM operand stored rows x cols (ld >= rows, within int), offset
 * and batch_stride >= 0, and, when used (read or written) and not empty,
 * a handle whose memory holds the last element of the last page. */
static inline dla_status dla_kit_check_gemm_operand(const dla_kit *kit, const dla_gemm_args *g,
                                                    const char *arg, const dla_gemm_operand *o,
                                                    int64_t rows, int64_t cols, int used)
{
    const dla_plugin_host *h = kit->host;
    const int64_t least = rows > 1 ? rows : 1;
    if (o->ld < least || o->ld > INT_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s gemm: argument %s (%lldx%lld as stored, m=%lld n=%lld k=%lld): "
                        "ld %lld outside %lld..%d",
                        kit->name, arg, (long long)rows, (long long)cols, (long long)g->m,
                        (long long)g->n, (long long)g->k, (long long)o->ld, (long long)least,
                        INT_MAX);
    if (o->offset < 0 || o->batch_stride < 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s gemm: argument %s (%lldx%lld as stored): negative offset %lld or "
                        "batch_stride %lld",
                        kit->name, arg, (long long)rows, (long long)cols, (long long)o->offset,
                        (long long)o->batch_stride);
    if (!used || rows == 0 || cols == 0 || g->batch == 0)
        return DLA_OK;
    if (o->mem == NULL)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s gemm: argument %s (%lldx%lld as stored): no memory handle", kit->name,
                        arg, (long long)rows, (long long)cols);
    if (kit->mem_bytes == NULL)
        return DLA_OK;
    int64_t last, a, b;
    int overflow = __builtin_mul_overflow(g->batch - 1, o->batch_stride, &a);
    overflow |= __builtin_mul_overflow(cols - 1, o->ld, &b);
    overflow |= __builtin_add_overflow(a, b, &last);
    overflow |= __builtin_add_overflow(last, o->offset + rows - 1, &last);
    const int64_t room = (int64_t)(kit->mem_bytes(o->mem) / dla_kit_dtype_size(g->dtype));
    if (overflow || last >= room)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s gemm: argument %s (%lldx%lld as stored, ld %lld, offset %lld, batch "
                        "%lld x stride %lld): reaches past the %lld elements of its memory",
                        kit->name, arg, (long long)rows, (long long)cols, (long long)o->ld,
                        (long long)o->offset, (long long)g->batch, (long long)o->batch_stride,
                        (long long)room);
    return DLA_OK;
}

/* gemm: a float dtype, m, n, k (each within int) and batch >= 0, and the
 * three operands (A and B count as used only when k > 0 and alpha != 0). */
static inline dla_status dla_kit_check_gemm(const dla_kit *kit, const dla_gemm_args *g)
{
    dla_status s = dla_kit_check_args_size(kit, "gemm", g->struct_size, sizeof *g, "1.0");
    if (s != DLA_OK || (s = dla_kit_check_float_dtype(kit, "gemm", "dtype", g->dtype)) != DLA_OK)
        return s;
    if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 0 || g->m > INT_MAX || g->n > INT_MAX ||
        g->k > INT_MAX)
        return kit->host->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s gemm: arguments m=%lld n=%lld k=%lld batch=%lld: each must be "
                                "in 0..%d",
                                kit->name, (long long)g->m, (long long)g->n, (long long)g->k,
                                (long long)g->batch, INT_MAX);
    const int ab_used = g->k > 0 && g->alpha != 0.0;
    if ((s = dla_kit_check_gemm_operand(kit, g, "a", &g->a, g->trans_a ? g->k : g->m,
                                        g->trans_a ? g->m : g->k, ab_used)) != DLA_OK ||
        (s = dla_kit_check_gemm_operand(kit, g, "b", &g->b, g->trans_b ? g->n : g->k,
                                        g->trans_b ? g->k : g->n, ab_used)) != DLA_OK)
        return s;
    return dla_kit_check_gemm_operand(kit, g, "c", &g->c, g->m, g->n, 1);
}

/* ------------------------------------------------------------- fused */

/* Operands an instruction of kind reads: 1, 2 or 3. */
static inline int dla_kit_fused_nsrc(int32_t kind)
{
    return kind == DLA_FUSED_WHERE ? 3 : kind == DLA_FUSED_BINARY ? 2 : 1;
}

/* The identity of program a's instructions, for a plugin that keeps
 * compiled programs by what they compute: per instruction its kind, its
 * op (0 for a where) and its sources (-1 past the kind's operands), so
 * programs that differ only in fields the kind does not read get the same
 * rows. Rows past a->ninsns are left as they are. alpha and beta are not
 * in it: a compiled program reads them as arguments. */
static inline void dla_kit_fused_code(const dla_fused_args *a,
                                      int32_t code[DLA_FUSED_MAX_INSNS][5])
{
    for (int j = 0; j < a->ninsns && j < DLA_FUSED_MAX_INSNS; j++) {
        const dla_fused_insn *in = &a->insns[j];
        code[j][0] = in->kind;
        code[j][1] = in->kind == DLA_FUSED_WHERE ? 0 : in->op;
        for (int s = 0; s < 3; s++)
            code[j][2 + s] = s < dla_kit_fused_nsrc(in->kind) ? in->src[s] : -1;
    }
}

/* The instructions of program a (of kernel "fused", or "fused_reduce",
 * whose program is its argument "program"): known kinds and ops
 * (DLA_ERR_UNSUPPORTED), each operand an earlier register or an input
 * (DLA_ERR_INVALID_ARGUMENT). */
static inline dla_status dla_kit_check_fused_program(const dla_kit *kit, const char *kernel,
                                                     const dla_fused_args *a)
{
    const dla_plugin_host *h = kit->host;
    const char *pre = strcmp(kernel, "fused") == 0                ? ""
                      : strncmp(kernel, "conv_", 5) == 0     ? "epilogue."
                                                                 : "program.";
    for (int j = 0; j < a->ninsns; j++) {
        const dla_fused_insn *in = &a->insns[j];
        if (in->kind == DLA_FUSED_UNARY) {
            if (in->op < 0 || in->op >= DLA_UNARY_COUNT)
                return h->error(DLA_ERR_UNSUPPORTED,
                                "%s %s: argument %sinsns[%d]: unknown unary op %d", kit->name,
                                kernel, pre, j, (int)in->op);
        } else if (in->kind == DLA_FUSED_BINARY) {
            if (in->op < 0 || in->op >= DLA_BINARY_COUNT)
                return h->error(DLA_ERR_UNSUPPORTED,
                                "%s %s: argument %sinsns[%d]: unknown binary op %d", kit->name,
                                kernel, pre, j, (int)in->op);
        } else if (in->kind != DLA_FUSED_WHERE) {
            return h->error(DLA_ERR_UNSUPPORTED, "%s %s: argument %sinsns[%d]: unknown kind %d",
                            kit->name, kernel, pre, j, (int)in->kind);
        }
        for (int k = 0; k < dla_kit_fused_nsrc(in->kind); k++) {
            const int32_t s = in->src[k];
            if (s >= j || (s < 0 && -1 - s >= a->ninputs))
                return h->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s %s: argument %sinsns[%d]: operand %d is %d, neither an "
                                "earlier register (0..%d) nor an input (-1..-%d)",
                                kit->name, kernel, pre, j, k, (int)s, j - 1, (int)a->ninputs);
        }
    }
    return DLA_OK;
}

/* The names of a fused program's operands in messages. */
/* in_program: 0 for fused's own arguments ("inputs[i]"), 1 for a program
 * inside another kernel's argument ("program.inputs[i]"), 2 for
 * a convolution's epilogue ("epilogue.inputs[i]", ABI 1.9). */
static inline const char *dla_kit_fused_input_name(int i, int in_program)
{
    static const char *const plain[DLA_FUSED_MAX_INPUTS] = {
        "inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]",
        "inputs[4]", "inputs[5]", "inputs[6]", "inputs[7]"};
    static const char *const program[DLA_FUSED_MAX_INPUTS] = {
        "program.inputs[0]", "program.inputs[1]", "program.inputs[2]", "program.inputs[3]",
        "program.inputs[4]", "program.inputs[5]", "program.inputs[6]", "program.inputs[7]"};
    static const char *const epilogue[DLA_FUSED_MAX_INPUTS] = {
        "epilogue.inputs[0]", "epilogue.inputs[1]", "epilogue.inputs[2]", "epilogue.inputs[3]",
        "epilogue.inputs[4]", "epilogue.inputs[5]", "epilogue.inputs[6]", "epilogue.inputs[7]"};
    DLA__KIT_STATIC_ASSERT(DLA_FUSED_MAX_INPUTS == 8, "a name per input");
    return in_program == 2 ? epilogue[i] : in_program ? program[i] : plain[i];
}

/* The counts and dtype of a program (in_program: its arguments are named
 * "program.dtype" rather than "dtype"). Every fused launch comes here:
 * nothing is formatted unless it fails. */
static inline dla_status dla__kit_fused_counts(const dla_kit *kit, const char *kernel,
                                               int in_program, const dla_fused_args *a)
{
    dla_status s = dla_kit_check_float_dtype(
        kit, kernel,
        in_program == 2 ? "epilogue.dtype" : in_program ? "program.dtype" : "dtype", a->dtype);
    if (s != DLA_OK)
        return s;
    if (a->ninputs < 0 || a->ninputs > DLA_FUSED_MAX_INPUTS || a->ninsns < 1 ||
        a->ninsns > DLA_FUSED_MAX_INSNS)
        return kit->host->error(DLA_ERR_INVALID_ARGUMENT,
                                "%s %s: %d inputs and %d instructions; 0..%d and 1..%d are "
                                "allowed",
                                kit->name, kernel, (int)a->ninputs, (int)a->ninsns,
                                DLA_FUSED_MAX_INPUTS, DLA_FUSED_MAX_INSNS);
    return DLA_OK;
}

/* Program a's y and inputs (kernel's argument names: "y", "inputs[i]", or
 * with in_program "program.y", "program.inputs[i]"): each checked, of y's
 * dims and the program's dtype, an input overlapping y only as the very
 * same view. */
static inline dla_status dla__kit_check_fused_views(const dla_kit *kit, const char *kernel,
                                                    int in_program, const dla_fused_args *a)
{
    const dla_plugin_host *h = kit->host;
    const char *yname = in_program == 2 ? "epilogue.y" : in_program ? "program.y" : "y";
    char buf[DLA_KIT_DIMS_BUF];
    dla_status s;
    for (int op = 0; op < 1 + a->ninputs; op++) {
        const dla_view *v = op ? &a->inputs[op - 1] : &a->y;
        const char *name = op ? dla_kit_fused_input_name(op - 1, in_program) : yname;
        if ((s = dla_kit_check_view(kit, kernel, name, v)) != DLA_OK ||
            (op && (s = dla_kit_check_same_dims(kit, kernel, name, v, yname, &a->y)) != DLA_OK))
            return s;
        if (v->dtype != a->dtype)
            return h->error(DLA_ERR_DTYPE,
                            "%s %s: argument %s (dims %s): dtype %s, the program's is %s",
                            kit->name, kernel, name,
                            dla_kit_dims_str(buf, sizeof buf, v->ndims, v->dims),
                            dla_kit_dtype_name(v->dtype), dla_kit_dtype_name(a->dtype));
        if (op && dla_kit_views_overlap(&a->y, v) && !dla_kit_same_view(&a->y, v))
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s %s: argument %s (dims %s): overlaps %s without being the same "
                            "view",
                            kit->name, kernel, yname,
                            dla_kit_dims_str(buf, sizeof buf, a->y.ndims, a->y.dims), name);
    }
    return DLA_OK;
}

/* fused: a float dtype, 0..8 inputs and 1..8 instructions, y and every
 * input checked, of y's dims and the program's dtype, an input overlapping
 * y only as the very same view, then the program. */
static inline dla_status dla_kit_check_fused(const dla_kit *kit, const dla_fused_args *a)
{
    dla_status s = dla_kit_check_args_size(kit, "fused", a->struct_size, sizeof *a, "1.2");
    if (s != DLA_OK || (s = dla__kit_fused_counts(kit, "fused", 0, a)) != DLA_OK ||
        (s = dla__kit_check_fused_views(kit, "fused", 0, a)) != DLA_OK)
        return s;
    return dla_kit_check_fused_program(kit, "fused", a);
}

/* fused_multi (ABI 1.8): the program as fused's (its argument names
 * prefixed "program."), then 1..7 extra results, each register below the
 * last, each view checked, of program.y's dims and dtype, overlapping an
 * input only as the very same view, and neither program.y nor another
 * extra. */
static inline dla_status dla_kit_check_fused_multi(const dla_kit *kit,
                                                   const dla_fused_multi_args *m)
{
    const dla_plugin_host *h = kit->host;
    const dla_fused_args *a = &m->program;
    dla_status s = dla_kit_check_args_size(kit, "fused_multi", m->struct_size, sizeof *m, "1.8");
    if (s != DLA_OK || (s = dla__kit_fused_counts(kit, "fused_multi", 1, a)) != DLA_OK ||
        (s = dla__kit_check_fused_views(kit, "fused_multi", 1, a)) != DLA_OK)
        return s;
    if (m->nextra < 1 || m->nextra > DLA_FUSED_MAX_EXTRA)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s fused_multi: argument nextra: %d; 1..%d are allowed", kit->name,
                        (int)m->nextra, DLA_FUSED_MAX_EXTRA);
    static const char *const names[DLA_FUSED_MAX_EXTRA] = {
        "extra[0]", "extra[1]", "extra[2]", "extra[3]", "extra[4]", "extra[5]", "extra[6]"};
    DLA__KIT_STATIC_ASSERT(DLA_FUSED_MAX_EXTRA == 7, "a name per extra result");
    char b1[DLA_KIT_DIMS_BUF];
    for (int k = 0; k < m->nextra; k++) {
        const dla_view *e = &m->extra[k];
        if (m->extra_reg[k] < 0 || m->extra_reg[k] >= a->ninsns - 1)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s fused_multi: argument extra_reg[%d]: %d is not a register before "
                            "the last (0..%d)",
                            kit->name, k, (int)m->extra_reg[k], (int)a->ninsns - 2);
        if ((s = dla_kit_check_view(kit, "fused_multi", names[k], e)) != DLA_OK ||
            (s = dla_kit_check_same_dims(kit, "fused_multi", names[k], e, "program.y", &a->y)) !=
                DLA_OK)
            return s;
        if (e->dtype != a->dtype)
            return h->error(DLA_ERR_DTYPE,
                            "%s fused_multi: argument %s (dims %s): dtype %s, the program's is %s",
                            kit->name, names[k], dla_kit_dims_str(b1, sizeof b1, e->ndims, e->dims),
                            dla_kit_dtype_name(e->dtype), dla_kit_dtype_name(a->dtype));
        const char *other = dla_kit_views_overlap(e, &a->y) ? "program.y" : NULL;
        for (int i = 0; !other && i < a->ninputs; i++)
            if (dla_kit_views_overlap(e, &a->inputs[i]) && !dla_kit_same_view(e, &a->inputs[i]))
                other = dla_kit_fused_input_name(i, 1);
        for (int j = 0; !other && j < k; j++)
            if (dla_kit_views_overlap(e, &m->extra[j]))
                other = names[j];
        if (other)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s fused_multi: argument %s (dims %s): overlaps %s", kit->name,
                            names[k], dla_kit_dims_str(b1, sizeof b1, e->ndims, e->dims), other);
    }
    return dla_kit_check_fused_program(kit, "fused_multi", a);
}

/* Whether a fused_reduce call asks for the pair (ABI 1.4): its struct
 * reaches y2's end and y2.mem is set. (y2's end, not the struct's: were
 * fields added after y2, a host of an older minor would still ask.) */
static inline int dla_kit_fused_reduce_pair(const dla_fused_reduce_args *r)
{
    return r->struct_size >= offsetof(dla_fused_reduce_args, y2) + sizeof(dla_view) &&
           r->y2.mem != NULL;
}

/* The pair's y2 against y (checked) and the inputs: reg2 a register of
 * the program, y2 checked, of y's dims and dtype, overlapping neither. */
static inline dla_status dla__kit_check_y2(const dla_kit *kit, const dla_fused_reduce_args *r)
{
    const dla_plugin_host *h = kit->host;
    const dla_fused_args *a = &r->program;
    const dla_view *y = &r->y, *y2 = &r->y2;
    char b2[DLA_KIT_DIMS_BUF], by[DLA_KIT_DIMS_BUF];
    if (r->reg2 < 0 || r->reg2 >= a->ninsns)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s fused_reduce: argument reg2: %d is not a register of the program "
                        "(0..%d)",
                        kit->name, (int)r->reg2, (int)a->ninsns - 1);
    dla_status s = dla_kit_check_view(kit, "fused_reduce", "y2", y2);
    if (s != DLA_OK ||
        (s = dla_kit_check_same_dims(kit, "fused_reduce", "y2", y2, "y", y)) != DLA_OK)
        return s;
    if (y2->dtype != y->dtype)
        return h->error(DLA_ERR_DTYPE,
                        "%s fused_reduce: argument y2 (dims %s): dtype %s, y's is %s", kit->name,
                        dla_kit_dims_str(b2, sizeof b2, y2->ndims, y2->dims),
                        dla_kit_dtype_name(y2->dtype), dla_kit_dtype_name(y->dtype));
    if (dla_kit_views_overlap(y2, y))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s fused_reduce: argument y2 (dims %s): overlaps y (dims %s)", kit->name,
                        dla_kit_dims_str(b2, sizeof b2, y2->ndims, y2->dims),
                        dla_kit_dims_str(by, sizeof by, y->ndims, y->dims));
    for (int i = 0; i < a->ninputs; i++)
        if (dla_kit_views_overlap(y2, &a->inputs[i]))
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s fused_reduce: argument y2 (dims %s): overlaps %s", kit->name,
                            dla_kit_dims_str(b2, sizeof b2, y2->ndims, y2->dims),
                            dla_kit_fused_input_name(i, 1));
    return DLA_OK;
}

/* fused_reduce: ABI 1.3's struct at least, op SUM or MEAN, the program's
 * dtype and counts, y checked with program.y's ndims, each dim equal or 1
 * and the program's dtype, every input checked, of program.y's dims and
 * dtype and apart from y, the pair's y2 where asked for, then the
 * program. */
static inline dla_status dla_kit_check_fused_reduce(const dla_kit *kit,
                                                    const dla_fused_reduce_args *r)
{
    const dla_plugin_host *h = kit->host;
    dla_status s = dla_kit_check_args_size(kit, "fused_reduce", r->struct_size,
                                           offsetof(dla_fused_reduce_args, reg2), "1.3");
    if (s != DLA_OK)
        return s;
    const dla_fused_args *a = &r->program;
    const dla_view *shape = &a->y, *y = &r->y;
    char bs[DLA_KIT_DIMS_BUF], by[DLA_KIT_DIMS_BUF];
    if (r->op != DLA_REDUCE_SUM && r->op != DLA_REDUCE_MEAN)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s fused_reduce: argument op: %d; only sum and mean", kit->name,
                        (int)r->op);
    if ((s = dla__kit_fused_counts(kit, "fused_reduce", 1, a)) != DLA_OK ||
        (s = dla_kit_check_view(kit, "fused_reduce", "y", y)) != DLA_OK)
        return s;
    int ok = shape->ndims >= 0 && shape->ndims <= DLA_MAX_DIMS && y->ndims == shape->ndims &&
             y->dtype == a->dtype;
    for (int d = 0; ok && d < shape->ndims; d++)
        ok = shape->dims[d] >= 0 && (y->dims[d] == shape->dims[d] || y->dims[d] == 1);
    if (!ok)
        return h->error(DLA_ERR_SHAPE,
                        "%s fused_reduce: argument y (dims %s, %s): needs the ndims of program.y "
                        "(dims %s) with each dim equal or 1, dtype %s",
                        kit->name, dla_kit_dims_str(by, sizeof by, y->ndims, y->dims),
                        dla_kit_dtype_name(y->dtype),
                        dla_kit_dims_str(bs, sizeof bs, shape->ndims, shape->dims),
                        dla_kit_dtype_name(a->dtype));
    for (int i = 0; i < a->ninputs; i++) {
        const dla_view *v = &a->inputs[i];
        const char *name = dla_kit_fused_input_name(i, 1);
        if ((s = dla_kit_check_view(kit, "fused_reduce", name, v)) != DLA_OK ||
            (s = dla_kit_check_same_dims(kit, "fused_reduce", name, v, "program.y", shape)) !=
                DLA_OK)
            return s;
        if (v->dtype != a->dtype)
            return h->error(DLA_ERR_DTYPE,
                            "%s fused_reduce: argument %s (dims %s): dtype %s, the program's is %s",
                            kit->name, name, dla_kit_dims_str(bs, sizeof bs, v->ndims, v->dims),
                            dla_kit_dtype_name(v->dtype), dla_kit_dtype_name(a->dtype));
        if (dla_kit_views_overlap(y, v))
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "%s fused_reduce: argument y (dims %s): overlaps %s", kit->name,
                            dla_kit_dims_str(by, sizeof by, y->ndims, y->dims), name);
    }
    if (dla_kit_fused_reduce_pair(r) && (s = dla__kit_check_y2(kit, r)) != DLA_OK)
        return s;
    return dla_kit_check_fused_program(kit, "fused_reduce", a);
}

/* ------------------------------------------------------------ random */

/* random: ABI 1.3's struct, a known distribution (DLA_ERR_UNSUPPORTED),
 * y checked and float. */
static inline dla_status dla_kit_check_random(const dla_kit *kit, const dla_random_args *args)
{
    const dla_plugin_host *h = kit->host;
    if (args == NULL || args->struct_size < sizeof *args)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "%s random: argument args: struct_size %zu, ABI 1.3 needs %zu", kit->name,
                        args ? args->struct_size : 0, sizeof *args);
    if (args->dist != DLA_RANDOM_UNIFORM && args->dist != DLA_RANDOM_NORMAL)
        return h->error(DLA_ERR_UNSUPPORTED,
                        "%s random: argument dist: %d is not a dla_random_dist this plugin knows",
                        kit->name, (int)args->dist);
    dla_status s = dla_kit_check_view(kit, "random", "y", &args->y);
    if (s == DLA_OK)
        s = dla_kit_check_float(kit, "random", "y", &args->y);
    return s;
}

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_PLUGIN_KIT_ARGS_H */

/*
 * launch.c - kernel dispatch and the cpu fallback.
 *
 * The fallback works on memory regions, not on kernels: each operand names
 * its handle, its first element and its extent, so one routine serves every
 * kernel. Operands sharing a handle (in-place ops, views of one tensor) are
 * mapped to one cpu buffer covering all of them, which keeps aliasing intact.
 */
#include "core/launch.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels.h"
#include "core/log.h"
#include "core/philox.h"
#include "core/hooks.h"

#include <stdio.h>
#include <string.h>


/* One operand of a kernel, as the fallback sees it. */
typedef struct region {
    dla_mem *mem;    /* points into the argument copy, rewritten in place */
    int64_t *offset; /* elements */
    int64_t extent;  /* elements from *offset that the kernel may touch */
    size_t elsize;
    int written;
} region;

static int64_t view_extent(const dla_view *v)
{
    int64_t e = 1;
    /* Every dim for a zero first: an empty view's other dims may overflow
     * together (2^32 x 2^32 x 0). */
    for (int i = 0; i < v->ndims; i++)
        if (v->dims[i] == 0)
            return 0;
    for (int i = 0; i < v->ndims; i++) {
        e += (v->dims[i] - 1) * v->strides[i];
    }
    return e;
}

static region view_region(dla_view *v, int written)
{
    return (region){&v->mem, &v->offset, view_extent(v), dla_dtype_size(v->dtype), written};
}

static region gemm_region(dla_gemm_operand *op, dla_dtype dt, int64_t rows, int64_t cols,
                          int64_t batch, int written)
{
    int64_t e = (rows && cols && batch) ? (batch - 1) * op->batch_stride + (cols - 1) * op->ld + rows
                                        : 0;
    return (region){&op->mem, &op->offset, e, dla_dtype_size(dt), written};
}

typedef struct mapped {
    dla_mem dev_mem;
    dla_mem cpu_mem;
    size_t lo, hi; /* byte range of dev_mem mirrored at cpu_mem + 0 */
    int written;
} mapped;

typedef dla_status (*cpu_call)(dla_device *cpu, void *args);

static void log_fallback_once(dla_device *dev, dla_kernel k, dla_dtype dt, dla_device *cpu)
{
    if (dev->fallback_logged[k])
        return;
    dev->fallback_logged[k] = 1;
    dla__log(DLA_LOG_INFO, "%s has no native '%s' kernel for %s: running it on %s with copies",
             dev->name, dla__kernel_name(k), dla_dtype_name(dt), cpu->name);
}

/* Mirrors each region's memory on the cpu device, runs call there, copies
 * written memory back. Regions are rewritten to point at the mirrors. */
static dla_status run_on_cpu(dla_device *dev, dla_kernel k, dla_dtype dt, region *rs, int n,
                             cpu_call call, void *args)
{
    dla_device *cpu = dla__device_cpu();
    if (!cpu) {
        char why[512];
        snprintf(why, sizeof why, "%s", dla_last_error());
        return dla__fail(DLA_ERR_UNSUPPORTED,
                         "%s lacks the '%s' kernel for %s and the cpu plugin, its fallback, is "
                         "not available: %s",
                         dev->name, dla__kernel_name(k), dla_dtype_name(dt), why);
    }
    if (!dla__device_supports(cpu, k, dt))
        return dla__fail(DLA_ERR_UNSUPPORTED, "the '%s' kernel for %s is on neither %s nor %s",
                         dla__kernel_name(k), dla_dtype_name(dt), dev->name, cpu->name);
    log_fallback_once(dev, k, dt, cpu);
    mapped maps[8];
    int nmaps = 0;
    DLA_ASSERT(n <= 8);
    for (int i = 0; i < n; i++) {
        if (rs[i].extent == 0 || !*rs[i].mem)
            continue;
        size_t lo = ((size_t)*rs[i].offset * rs[i].elsize) & ~(size_t)7;
        size_t hi = (size_t)(*rs[i].offset + rs[i].extent) * rs[i].elsize;
        int j = 0;
        while (j < nmaps && maps[j].dev_mem != *rs[i].mem)
            j++;
        if (j == nmaps) {
            maps[nmaps++] = (mapped){*rs[i].mem, NULL, lo, hi, rs[i].written};
        } else {
            maps[j].lo = lo < maps[j].lo ? lo : maps[j].lo;
            maps[j].hi = hi > maps[j].hi ? hi : maps[j].hi;
            maps[j].written |= rs[i].written;
        }
    }
    dla_status st = DLA_OK;
    void *stage = NULL;
    size_t stage_size = 0;
    for (int j = 0; j < nmaps; j++)
        stage_size = maps[j].hi - maps[j].lo > stage_size ? maps[j].hi - maps[j].lo : stage_size;
    stage = dla__malloc(stage_size);
    if (!stage)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot stage %zu bytes for the cpu fallback",
                         dla__kernel_name(k), stage_size);
    int j = 0;
    for (; j < nmaps && st == DLA_OK; j++) {
        size_t bytes = maps[j].hi - maps[j].lo;
        st = cpu->table->mem_alloc(cpu->ctx, bytes, &maps[j].cpu_mem);
        if (st != DLA_OK)
            break;
        st = dev->table->copy_to_host(dev->ctx, stage, maps[j].dev_mem, maps[j].lo, bytes);
        if (st == DLA_OK)
            st = cpu->table->copy_to_device(cpu->ctx, maps[j].cpu_mem, 0, stage, bytes);
    }
    if (st == DLA_OK) {
        for (int i = 0; i < n; i++) {
            if (rs[i].extent == 0 || !*rs[i].mem)
                continue;
            int m = 0;
            while (maps[m].dev_mem != *rs[i].mem)
                m++;
            *rs[i].mem = maps[m].cpu_mem;
            *rs[i].offset -= (int64_t)(maps[m].lo / rs[i].elsize);
        }
        st = call(cpu, args);
    }
    for (int m = 0; m < nmaps && st == DLA_OK; m++) {
        if (!maps[m].written)
            continue;
        size_t bytes = maps[m].hi - maps[m].lo;
        st = cpu->table->copy_to_host(cpu->ctx, stage, maps[m].cpu_mem, 0, bytes);
        if (st == DLA_OK)
            st = dev->table->copy_to_device(dev->ctx, maps[m].dev_mem, maps[m].lo, stage, bytes);
    }
    for (int m = 0; m < nmaps; m++)
        if (maps[m].cpu_mem)
            cpu->table->mem_free(cpu->ctx, maps[m].cpu_mem);
    dla__free(stage);
    return st;
}

/* --------------------------------------------------------------- capture */

/* Announces the call (core/hooks.h) when someone on this thread listens:
 * the replay planner's capture keeps it. */
#define CAPTURE(kind_, which_, member_, value_)                                                    \
    do {                                                                                           \
        if (dla__hooks_hear(DLA__HEAR_LAUNCH)) {                                                   \
            dla__launch l_ = {.kind = (kind_), .which = (which_)};                                 \
            l_.u.member_ = (value_);                                                               \
            dla__hooks_launch(dev, &l_);                                                           \
        }                                                                                          \
    } while (0)

/* ------------------------------------------------------------------ fill */

typedef struct fill_call {
    dla_view y;
    double value;
} fill_call;

static dla_status cpu_fill(dla_device *cpu, void *p)
{
    fill_call *c = p;
    return cpu->table->fill(cpu->ctx, &c->y, c->value);
}

dla_status dla__k_fill(dla_device *dev, const dla_view *y, double value)
{
    if (dla__hooks_hear(DLA__HEAR_LAUNCH)) {
        dla__launch l = {.kind = DLA__LAUNCH_FILL};
        l.u.fill.y = *y;
        l.u.fill.value = value;
        dla__hooks_launch(dev, &l);
    }
    if (dla__device_supports(dev, DLA_KERNEL_FILL, y->dtype))
        return dla__k_declined(dev, DLA_KERNEL_FILL, y, sizeof *y, value,
                               dev->table->fill(dev->ctx, y, value));
    fill_call c = {*y, value};
    region r[1] = {view_region(&c.y, 1)};
    return run_on_cpu(dev, DLA_KERNEL_FILL, y->dtype, r, 1, cpu_fill, &c);
}

/* ---------------------------------------------------- strided copy, cast */

typedef struct pair_call {
    dla_view y, x;
    int cast;
} pair_call;

static dla_status cpu_pair(dla_device *cpu, void *p)
{
    pair_call *c = p;
    return c->cast ? cpu->table->cast(cpu->ctx, &c->y, &c->x)
                   : cpu->table->strided_copy(cpu->ctx, &c->y, &c->x);
}

static dla_status pair_kernel(dla_device *dev, dla_kernel k, const dla_view *y, const dla_view *x)
{
    pair_call c = {*y, *x, k == DLA_KERNEL_CAST};
    region r[2] = {view_region(&c.y, 1), view_region(&c.x, 0)};
    return run_on_cpu(dev, k, y->dtype, r, 2, cpu_pair, &c);
}

static void capture_pair(dla_device *dev, dla__launch_kind kind, const dla_view *y,
                         const dla_view *x)
{
    dla__launch l = {.kind = kind};
    l.u.pair.y = *y;
    l.u.pair.x = *x;
    dla__hooks_launch(dev, &l);
}

dla_status dla__k_copy(dla_device *dev, const dla_view *y, const dla_view *x)
{
    if (dla__hooks_hear(DLA__HEAR_LAUNCH))
        capture_pair(dev, DLA__LAUNCH_COPY, y, x);
    if (dla__device_supports(dev, DLA_KERNEL_STRIDED_COPY, y->dtype))
        return dev->table->strided_copy(dev->ctx, y, x);
    return pair_kernel(dev, DLA_KERNEL_STRIDED_COPY, y, x);
}

dla_status dla__k_cast(dla_device *dev, const dla_view *y, const dla_view *x)
{
    if (dla__hooks_hear(DLA__HEAR_LAUNCH))
        capture_pair(dev, DLA__LAUNCH_CAST, y, x);
    if (dla__device_supports(dev, DLA_KERNEL_CAST, x->dtype) &&
        dla__device_supports(dev, DLA_KERNEL_CAST, y->dtype))
        return dla__k_declined(dev, DLA_KERNEL_CAST, (const dla_view[2]){*y, *x},
                               2 * sizeof *y, 0, dev->table->cast(dev->ctx, y, x));
    return pair_kernel(dev, DLA_KERNEL_CAST, y, x);
}

/* ---------------------------------------------------------- elementwise */

static dla_status cpu_unary(dla_device *cpu, void *p) { return cpu->table->unary(cpu->ctx, p); }
static dla_status cpu_binary(dla_device *cpu, void *p) { return cpu->table->binary(cpu->ctx, p); }
static dla_status cpu_reduce(dla_device *cpu, void *p) { return cpu->table->reduce(cpu->ctx, p); }
static dla_status cpu_gemm(dla_device *cpu, void *p) { return cpu->table->gemm(cpu->ctx, p); }

/* Op values added in ABI 1.1 go only to plugins that answered 1.1 or later:
 * a 1.0 plugin has never heard of them. */
static int knows_unary(const dla_device *dev, dla_unary_op op)
{
    return op <= DLA_UNARY_AFFINE || dev->abi_minor >= 1;
}

static int knows_binary(const dla_device *dev, dla_binary_op op)
{
    return op <= DLA_BINARY_POW || dev->abi_minor >= 1;
}

dla_status dla__k_unary(dla_device *dev, const dla_unary_args *args)
{
    CAPTURE(DLA__LAUNCH_UNARY, 0, unary, *args);
    if (knows_unary(dev, args->op) && dla__device_supports(dev, DLA_KERNEL_UNARY, args->x.dtype))
        return dla__k_declined(dev, DLA_KERNEL_UNARY, args, sizeof *args, 0,
                               dev->table->unary(dev->ctx, args));
    dla_unary_args c = *args;
    region r[2] = {view_region(&c.y, 1), view_region(&c.x, 0)};
    return run_on_cpu(dev, DLA_KERNEL_UNARY, args->x.dtype, r, 2, cpu_unary, &c);
}

dla_status dla__k_binary(dla_device *dev, const dla_binary_args *args)
{
    CAPTURE(DLA__LAUNCH_BINARY, 0, binary, *args);
    if (knows_binary(dev, args->op) && dla__device_supports(dev, DLA_KERNEL_BINARY, args->a.dtype))
        return dla__k_declined(dev, DLA_KERNEL_BINARY, args, sizeof *args, 0,
                               dev->table->binary(dev->ctx, args));
    dla_binary_args c = *args;
    region r[3] = {view_region(&c.z, 1), view_region(&c.a, 0), view_region(&c.b, 0)};
    return run_on_cpu(dev, DLA_KERNEL_BINARY, args->a.dtype, r, 3, cpu_binary, &c);
}

dla_status dla__k_reduce(dla_device *dev, const dla_reduce_args *args)
{
    CAPTURE(DLA__LAUNCH_REDUCE, 0, reduce, *args);
    if (dla__device_supports(dev, DLA_KERNEL_REDUCE, args->x.dtype))
        return dla__k_declined(dev, DLA_KERNEL_REDUCE, args, sizeof *args, 0,
                               dev->table->reduce(dev->ctx, args));
    dla_reduce_args c = *args;
    region r[3] = {view_region(&c.y, 1), view_region(&c.x, 0), view_region(&c.index, 1)};
    return run_on_cpu(dev, DLA_KERNEL_REDUCE, args->x.dtype, r, c.index.mem ? 3 : 2, cpu_reduce,
                      &c);
}

dla_status dla__k_gemm(dla_device *dev, const dla_gemm_args *args)
{
    CAPTURE(DLA__LAUNCH_GEMM, 0, gemm, *args);
    if (dla__device_supports(dev, DLA_KERNEL_GEMM, args->dtype))
        return dev->table->gemm(dev->ctx, args);
    dla_gemm_args c = *args;
    int64_t ar = c.trans_a ? c.k : c.m, ac = c.trans_a ? c.m : c.k;
    int64_t br = c.trans_b ? c.n : c.k, bc = c.trans_b ? c.k : c.n;
    region r[3] = {gemm_region(&c.c, c.dtype, c.m, c.n, c.batch, 1),
                   gemm_region(&c.a, c.dtype, ar, ac, c.batch, 0),
                   gemm_region(&c.b, c.dtype, br, bc, c.batch, 0)};
    return run_on_cpu(dev, DLA_KERNEL_GEMM, args->dtype, r, 3, cpu_gemm, &c);
}

/* ------------------------------------------------------- ABI 1.1 kernels */

static dla_status cpu_ternary(dla_device *cpu, void *p) { return cpu->table->ternary(cpu->ctx, p); }

dla_status dla__k_ternary(dla_device *dev, const dla_ternary_args *args)
{
    CAPTURE(DLA__LAUNCH_TERNARY, 0, ternary, *args);
    if (dla__device_supports(dev, DLA_KERNEL_TERNARY, args->z.dtype))
        return dla__k_declined(dev, DLA_KERNEL_TERNARY, args, sizeof *args, 0,
                               dev->table->ternary(dev->ctx, args));
    dla_ternary_args c = *args;
    region r[4] = {view_region(&c.z, 1), view_region(&c.cond, 0), view_region(&c.a, 0),
                   view_region(&c.b, 0)};
    return run_on_cpu(dev, DLA_KERNEL_TERNARY, args->z.dtype, r, 4, cpu_ternary, &c);
}

typedef struct kernel_call {
    dla_kernel which;
    void *args;
} kernel_call;

/* Kernels that share an argument struct (the three convolutions, the two
 * poolings, gather and scatter_add) are told apart by their kernel id, and
 * the member that runs one is found through its row of DLA_KERNEL_LIST: a
 * kernel added with one of these argument structs needs no code here. */
enum { ARGS_OTHER, ARGS_CONV, ARGS_POOL, ARGS_INDEX };
#define ARGS_KIND(id, name, member, ...)                                                          \
    [id] = _Generic(((dla_plugin *)0)->member,                                                     \
                    dla_status(*)(void *, const dla_conv_args *): ARGS_CONV,                       \
                    dla_status(*)(void *, const dla_pool_args *): ARGS_POOL,                       \
                    dla_status(*)(void *, const dla_index_args *): ARGS_INDEX,                     \
                    default: ARGS_OTHER),
static const unsigned char args_kind[] = {DLA_KERNEL_LIST(ARGS_KIND)};
#undef ARGS_KIND

/* call_conv, call_pool, call_index: kernel `which` of table t, whose member
 * takes (void *, const T *) (the caller checked args_kind). */
#define KERNEL_CALLER(T, suffix)                                                                   \
    static dla_status call_##suffix(const dla_plugin *t, void *ctx, dla_kernel which,             \
                                    const void *args)                                              \
    {                                                                                              \
        dla_status (*fn)(void *, const T *);                                                       \
        memcpy(&fn, (const char *)t + dla__kernel_member(which), sizeof fn);                       \
        return fn(ctx, args);                                                                      \
    }
KERNEL_CALLER(dla_conv_args, conv)
KERNEL_CALLER(dla_pool_args, pool)
KERNEL_CALLER(dla_index_args, index)
#undef KERNEL_CALLER

static dla_status table_call(const dla_plugin *t, void *ctx, dla_kernel which, const void *args)
{
    switch ((unsigned)which < DLA_KERNEL_COUNT ? args_kind[which] : ARGS_OTHER) {
    case ARGS_CONV: return call_conv(t, ctx, which, args);
    case ARGS_POOL: return call_pool(t, ctx, which, args);
    case ARGS_INDEX: return call_index(t, ctx, which, args);
    default: DLA_ASSERT(!"a kernel with its own entry point routed through table_call");
    }
    return DLA_ERR_STATE;
}

static dla_status cpu_kernel(dla_device *cpu, void *p)
{
    kernel_call *k = p;
    return table_call(cpu->table, cpu->ctx, k->which, k->args);
}

static dla_status native(dla_device *dev, dla_kernel which, const void *args)
{
    return table_call(dev->table, dev->ctx, which, args);
}

dla_status dla__k_conv(dla_device *dev, dla_kernel which, const dla_conv_args *args)
{
    CAPTURE(DLA__LAUNCH_CONV, which, conv, *args);
    if (dla__device_supports(dev, which, args->dtype))
        return dla__k_declined(dev, which, args, sizeof *args, 0, native(dev, which, args));
    dla_conv_args c = *args;
    int wx = which == DLA_KERNEL_CONV_BACKWARD_DATA, ww = which == DLA_KERNEL_CONV_BACKWARD_FILTER;
    region r[4] = {view_region(&c.x, wx), view_region(&c.w, ww),
                   view_region(&c.y, !wx && !ww), view_region(&c.bias, 0)};
    kernel_call k = {which, &c};
    return run_on_cpu(dev, which, args->dtype, r, c.bias.mem ? 4 : 3, cpu_kernel, &k);
}

dla_status dla__k_pool(dla_device *dev, dla_kernel which, const dla_pool_args *args)
{
    CAPTURE(DLA__LAUNCH_POOL, which, pool, *args);
    if (dla__device_supports(dev, which, args->dtype))
        return dla__k_declined(dev, which, args, sizeof *args, 0, native(dev, which, args));
    dla_pool_args c = *args;
    int fwd = which == DLA_KERNEL_POOL_FORWARD;
    region r[3] = {view_region(&c.x, !fwd), view_region(&c.y, fwd), view_region(&c.index, fwd)};
    kernel_call k = {which, &c};
    return run_on_cpu(dev, which, args->dtype, r, c.index.mem ? 3 : 2, cpu_kernel, &k);
}

dla_status dla__k_index(dla_device *dev, dla_kernel which, const dla_index_args *args)
{
    CAPTURE(DLA__LAUNCH_INDEX, which, index, *args);
    if (dla__device_supports(dev, which, args->x.dtype))
        return dla__k_declined(dev, which, args, sizeof *args, 0, native(dev, which, args));
    dla_index_args c = *args;
    region r[3] = {view_region(&c.y, 1), view_region(&c.x, 0), view_region(&c.index, 0)};
    kernel_call k = {which, &c};
    return run_on_cpu(dev, which, args->x.dtype, r, 3, cpu_kernel, &k);
}

/* ----------------------------------------------------------- byte copies */

dla_status dla__k_copy_bytes(dla_device *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff,
                             size_t bytes)
{
    if (bytes == 0)
        return DLA_OK;
    if (dla__hooks_hear(DLA__HEAR_LAUNCH)) {
        dla__launch l = {.kind = DLA__LAUNCH_COPY_BYTES};
        l.u.bytes.dst = dst;
        l.u.bytes.doff = doff;
        l.u.bytes.src = src;
        l.u.bytes.soff = soff;
        l.u.bytes.bytes = bytes;
        dla__hooks_launch(dev, &l);
    }
    if (dev->table->copy_on_device)
        return dev->table->copy_on_device(dev->ctx, dst, doff, src, soff, bytes);
    void *stage = dla__malloc(bytes);
    if (!stage)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "copy: cannot stage %zu bytes on the host", bytes);
    dla_status st = dev->table->copy_to_host(dev->ctx, stage, src, soff, bytes);
    if (st == DLA_OK)
        st = dev->table->copy_to_device(dev->ctx, dst, doff, stage, bytes);
    dla__free(stage);
    return st;
}

/* ------------------------------------------------------- host transfers */

dla_status dla__k_upload(dla_device *dev, dla_mem dst, size_t offset, const void *src, size_t bytes)
{
    if (dla__hooks_hear(DLA__HEAR_TRANSFER))
        dla__hooks_transfer();
    return dev->table->copy_to_device(dev->ctx, dst, offset, src, bytes);
}

dla_status dla__k_download(dla_device *dev, void *dst, dla_mem src, size_t offset, size_t bytes)
{
    if (dla__hooks_hear(DLA__HEAR_TRANSFER))
        dla__hooks_transfer();
    return dev->table->copy_to_host(dev->ctx, dst, src, offset, bytes);
}

/* ---------------------------------------------------------------- fused */

/* Fused programs run only where native (fusing pays only there): DLA_OK
 * when dev runs kernel k for dtype, else the error. */
static dla_status fused_native(dla_device *dev, dla_kernel k, dla_dtype dtype)
{
    if (dla__device_supports(dev, k, dtype))
        return DLA_OK;
    return dla__fail(DLA_ERR_UNSUPPORTED, "%s has no native '%s' kernel for %s, and fused programs "
                     "have no cpu fallback", dev->name, dla__kernel_name(k), dla_dtype_name(dtype));
}

dla_status dla__k_fused(dla_device *dev, const dla_fused_args *args)
{
    dla_status st = fused_native(dev, DLA_KERNEL_FUSED, args->dtype);
    if (st != DLA_OK)
        return st;
    CAPTURE(DLA__LAUNCH_FUSED, DLA_KERNEL_FUSED, fused, (dla_fused_args *)args);
    return dla__k_declined(dev, DLA_KERNEL_FUSED, args, sizeof *args, 0,
                           dev->table->fused(dev->ctx, args));
}

dla_status dla__k_fused_reduce(dla_device *dev, const dla_fused_reduce_args *args)
{
    dla_status st = fused_native(dev, DLA_KERNEL_FUSED_REDUCE, args->program.dtype);
    if (st != DLA_OK)
        return st;
    CAPTURE(DLA__LAUNCH_FUSED_REDUCE, DLA_KERNEL_FUSED_REDUCE, fused_reduce,
            (dla_fused_reduce_args *)args);
    return dla__k_declined(dev, DLA_KERNEL_FUSED_REDUCE, args,
                           args->struct_size < sizeof *args ? args->struct_size : sizeof *args,
                           0, dev->table->fused_reduce(dev->ctx, args));
}

dla_status dla__k_fused_multi(dla_device *dev, const dla_fused_multi_args *args)
{
    dla_status st = fused_native(dev, DLA_KERNEL_FUSED_MULTI, args->program.dtype);
    if (st != DLA_OK)
        return st;
    CAPTURE(DLA__LAUNCH_FUSED_MULTI, DLA_KERNEL_FUSED_MULTI, fused_multi,
            (dla_fused_multi_args *)args);
    return dla__k_declined(dev, DLA_KERNEL_FUSED_MULTI, args, sizeof *args, 0,
                           dev->table->fused_multi(dev->ctx, args));
}

dla_status dla__k_conv_fused(dla_device *dev, dla_kernel which, const dla_conv_fused_args *args)
{
    CAPTURE(DLA__LAUNCH_CONV_FUSED, which, conv_fused, (dla_conv_fused_args *)args);
    const int fwd = which == DLA_KERNEL_CONV_FORWARD_FUSED;
    if (dla__device_supports(dev, which, args->conv.dtype)) {
        const dla_status st = fwd ? dev->table->conv_forward_fused(dev->ctx, args)
                                  : dev->table->conv_backward_data_fused(dev->ctx, args);
        if (st != DLA_ERR_UNSUPPORTED)
            return st;
        dla__log(DLA_LOG_DEBUG, "%s declined '%s' (%s): the convolution and its epilogue run as "
                 "two launches", dev->name, dla__kernel_name(which), dla_last_error());
    }
    /* Two launches: their own captures would double the one above. */
    dla__observer *observers = dla__hooks_mute();
    dla_status st = dla__k_conv(dev, fwd ? DLA_KERNEL_CONV_FORWARD : DLA_KERNEL_CONV_BACKWARD_DATA,
                                &args->conv);
    if (st == DLA_OK)
        st = dla__k_fused(dev, &args->epilogue);
    dla__hooks_unmute(observers);
    return st;
}

/* --------------------------------------------------------------- random */

dla_status dla__k_random(dla_device *dev, const dla_random_args *args)
{
    const int normal = args->dist == DLA_RANDOM_NORMAL, f64 = args->y.dtype == DLA_F64;
    const dla_kernel k = normal ? DLA_KERNEL_RANDOM_NORMAL : DLA_KERNEL_RANDOM_UNIFORM;
    if (dla__device_supports(dev, k, args->y.dtype)) {
        CAPTURE(DLA__LAUNCH_RANDOM, k, random, *args);
        return dla__k_declined(dev, k, args, sizeof *args, 0, dev->table->random(dev->ctx, args));
    }
    /* The numbers as before ABI 1.3: drawn here, then copied (an upload,
     * so a planner runs the op that asked for them as itself). */
    const dla_view *y = &args->y;
    int64_t n = 1, expect = 1;
    for (int i = 0; i < y->ndims; i++) {
        DLA_ASSERT(y->dims[i] == 1 || y->strides[i] == expect);
        expect *= y->dims[i];
        n *= y->dims[i];
    }
    if (n == 0)
        return DLA_OK;
    const size_t es = dla_dtype_size(y->dtype), bytes = (size_t)n * es;
    void *host = dla__malloc(bytes);
    if (!host)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "random: cannot stage %zu bytes", bytes);
    if (f64 && normal)
        dla__philox_normal_f64(args->seed, args->counter, host, n);
    else if (f64)
        dla__philox_uniform_f64(args->seed, args->counter, host, n);
    else if (normal)
        dla__philox_normal_f32(args->seed, args->counter, host, n);
    else
        dla__philox_uniform_f32(args->seed, args->counter, host, n);
    dla_status st = dla__k_upload(dev, y->mem, (size_t)y->offset * es, host, bytes);
    dla__free(host);
    return st;
}

/* --------------------------------------------------------------- replay */

dla_status dla__k_launch(dla_device *dev, const dla__launch *l)
{
    switch (l->kind) {
    case DLA__LAUNCH_FILL: return dla__k_fill(dev, &l->u.fill.y, l->u.fill.value);
    case DLA__LAUNCH_COPY: return dla__k_copy(dev, &l->u.pair.y, &l->u.pair.x);
    case DLA__LAUNCH_CAST: return dla__k_cast(dev, &l->u.pair.y, &l->u.pair.x);
    case DLA__LAUNCH_UNARY: return dla__k_unary(dev, &l->u.unary);
    case DLA__LAUNCH_BINARY: return dla__k_binary(dev, &l->u.binary);
    case DLA__LAUNCH_REDUCE: return dla__k_reduce(dev, &l->u.reduce);
    case DLA__LAUNCH_GEMM: return dla__k_gemm(dev, &l->u.gemm);
    case DLA__LAUNCH_TERNARY: return dla__k_ternary(dev, &l->u.ternary);
    case DLA__LAUNCH_CONV: return dla__k_conv(dev, l->which, &l->u.conv);
    case DLA__LAUNCH_POOL: return dla__k_pool(dev, l->which, &l->u.pool);
    case DLA__LAUNCH_INDEX: return dla__k_index(dev, l->which, &l->u.index);
    case DLA__LAUNCH_COPY_BYTES:
        return dla__k_copy_bytes(dev, l->u.bytes.dst, l->u.bytes.doff, l->u.bytes.src,
                                 l->u.bytes.soff, l->u.bytes.bytes);
    case DLA__LAUNCH_FUSED: return dla__k_fused(dev, l->u.fused);
    case DLA__LAUNCH_FUSED_REDUCE: return dla__k_fused_reduce(dev, l->u.fused_reduce);
    case DLA__LAUNCH_RANDOM: return dla__k_random(dev, &l->u.random);
    case DLA__LAUNCH_FUSED_MULTI: return dla__k_fused_multi(dev, l->u.fused_multi);
    case DLA__LAUNCH_CONV_FUSED: return dla__k_conv_fused(dev, l->which, l->u.conv_fused);
    }
    DLA_ASSERT(!"a launch kind dla__k_launch does not know");
    return DLA_ERR_STATE;
}

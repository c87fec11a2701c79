/*
 * kernel_views.h - the memory views of each kernel's arguments, which of
 * them the kernel writes, and a call of a kernel member by its id.
 *
 * Header-only, so the core's dense retry (launch_dense.c) and the
 * conformance suite that checks plugins against it (tools/conformance*)
 * read one definition: a plugin may answer DLA_ERR_UNSUPPORTED for a call
 * with a view that is not dense (dla__view_is_dense), and the host then
 * calls again with dense copies of those views; strided_copy (how views
 * are made dense) and gemm (no views) may not decline.
 */
#ifndef DLA_CORE_KERNEL_VIEWS_H
#define DLA_CORE_KERNEL_VIEWS_H

#include <dlaccel/plugin.h>

#include "core/kernels.h"

#include <string.h>

/* The arguments of any kernel. fill, strided_copy and cast pass their
 * views as view[0] (y) and view[1] (x); fill's value is passed beside. */
typedef union dla__kernel_args {
    dla_view view[2];
    dla_unary_args unary;
    dla_binary_args binary;
    dla_reduce_args reduce;
    dla_gemm_args gemm;
    dla_ternary_args ternary;
    dla_conv_args conv;
    dla_pool_args pool;
    dla_index_args index;
    dla_fused_args fused;
    dla_fused_reduce_args fused_reduce;
    dla_random_args random;
    dla_fused_multi_args fused_multi;
    dla_conv_fused_args conv_fused;
} dla__kernel_args;

#define DLA__MAX_KERNEL_VIEWS (DLA_FUSED_MAX_INPUTS + 1 + DLA_FUSED_MAX_EXTRA)
_Static_assert(DLA__MAX_KERNEL_VIEWS >= 5 + DLA_FUSED_MAX_INPUTS,
               "a convolution's with an epilogue: x, w, y, bias, the epilogue's y and inputs");

typedef struct dla__view_list {
    dla_view *v[DLA__MAX_KERNEL_VIEWS];
    int written[DLA__MAX_KERNEL_VIEWS];
    int n;
} dla__view_list;

/* Nonzero for the kernels whose declines the host rescues with dense
 * copies. A convolution with an epilogue is rescued otherwise: the
 * epilogue reads the pass's result through an alias that copies would
 * break, so the host runs the pass and fused one after the other
 * (launch.c). */
static inline int dla__kernel_retried(dla_kernel k)
{
    return k != DLA_KERNEL_STRIDED_COPY && k != DLA_KERNEL_GEMM &&
           k != DLA_KERNEL_CONV_FORWARD_FUSED && k != DLA_KERNEL_CONV_BACKWARD_DATA_FUSED &&
           (unsigned)k < DLA_KERNEL_COUNT;
}

static inline void dla__view_list_add(dla__view_list *l, dla_view *v, int written)
{
    if (v->mem == NULL)
        return; /* an optional view not given (bias, index, y2) */
    l->v[l->n] = v;
    l->written[l->n++] = written;
}

/* The memory views of kernel k's arguments in a (none for the kernels
 * that are not retried). */
static inline void dla__kernel_views(dla_kernel k, dla__kernel_args *a, dla__view_list *l)
{
#define ADD(v, w) dla__view_list_add(l, (v), (w))
    l->n = 0;
    switch (k) {
    case DLA_KERNEL_FILL: ADD(&a->view[0], 1); break;
    case DLA_KERNEL_CAST: ADD(&a->view[0], 1), ADD(&a->view[1], 0); break;
    case DLA_KERNEL_UNARY: ADD(&a->unary.y, 1), ADD(&a->unary.x, 0); break;
    case DLA_KERNEL_BINARY:
        ADD(&a->binary.z, 1), ADD(&a->binary.a, 0), ADD(&a->binary.b, 0);
        break;
    case DLA_KERNEL_REDUCE:
        ADD(&a->reduce.y, 1), ADD(&a->reduce.x, 0), ADD(&a->reduce.index, 1);
        break;
    case DLA_KERNEL_TERNARY:
        ADD(&a->ternary.z, 1), ADD(&a->ternary.cond, 0);
        ADD(&a->ternary.a, 0), ADD(&a->ternary.b, 0);
        break;
    case DLA_KERNEL_CONV_FORWARD:
    case DLA_KERNEL_CONV_BACKWARD_DATA:
    case DLA_KERNEL_CONV_BACKWARD_FILTER:
        ADD(&a->conv.x, k == DLA_KERNEL_CONV_BACKWARD_DATA);
        ADD(&a->conv.w, k == DLA_KERNEL_CONV_BACKWARD_FILTER);
        ADD(&a->conv.y, k == DLA_KERNEL_CONV_FORWARD);
        ADD(&a->conv.bias, 0);
        break;
    case DLA_KERNEL_POOL_FORWARD:
        ADD(&a->pool.x, 0), ADD(&a->pool.y, 1), ADD(&a->pool.index, 1);
        break;
    case DLA_KERNEL_POOL_BACKWARD:
        ADD(&a->pool.x, 1), ADD(&a->pool.y, 0), ADD(&a->pool.index, 0);
        break;
    case DLA_KERNEL_GATHER:
    case DLA_KERNEL_SCATTER_ADD:
        ADD(&a->index.y, 1), ADD(&a->index.x, 0), ADD(&a->index.index, 0);
        break;
    case DLA_KERNEL_FUSED:
        ADD(&a->fused.y, 1);
        for (int i = 0; i < a->fused.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            ADD(&a->fused.inputs[i], 0);
        break;
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR:
        /* program.y gives only the space: no memory. */
        ADD(&a->fused_reduce.y, 1);
        if (a->fused_reduce.struct_size >= offsetof(dla_fused_reduce_args, y2) + sizeof(dla_view))
            ADD(&a->fused_reduce.y2, 1);
        for (int i = 0; i < a->fused_reduce.program.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            ADD(&a->fused_reduce.program.inputs[i], 0);
        break;
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: ADD(&a->random.y, 1); break;
    case DLA_KERNEL_FUSED_MULTI:
        ADD(&a->fused_multi.program.y, 1);
        for (int k = 0; k < a->fused_multi.nextra && k < DLA_FUSED_MAX_EXTRA; k++)
            ADD(&a->fused_multi.extra[k], 1);
        for (int i = 0; i < a->fused_multi.program.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            ADD(&a->fused_multi.program.inputs[i], 0);
        break;
    case DLA_KERNEL_CONV_FORWARD_FUSED:
    case DLA_KERNEL_CONV_BACKWARD_DATA_FUSED:
        ADD(&a->conv_fused.conv.x, k == DLA_KERNEL_CONV_BACKWARD_DATA_FUSED);
        ADD(&a->conv_fused.conv.w, 0);
        ADD(&a->conv_fused.conv.y, k == DLA_KERNEL_CONV_FORWARD_FUSED);
        ADD(&a->conv_fused.conv.bias, 0);
        ADD(&a->conv_fused.epilogue.y, 1);
        for (int i = 0; i < a->conv_fused.epilogue.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            ADD(&a->conv_fused.epilogue.inputs[i], 0);
        break;
    default: break;
    }
#undef ADD
}

static inline int64_t dla__view_numel(const dla_view *v)
{
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 0; /* before any product: the other dims may overflow together */
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

/* Dense: strides[d] is the product of the dims before d, whatever the
 * offset (plugin.h's definition); an empty view is dense. */
static inline int dla__view_is_dense(const dla_view *v)
{
    if (dla__view_numel(v) == 0)
        return 1;
    int64_t s = 1;
    for (int d = 0; d < v->ndims; d++) {
        if (v->strides[d] != s)
            return 0;
        s *= v->dims[d];
    }
    return 1;
}

/* Makes v a dense view of its dims at offset 0 of mem. */
static inline void dla__view_make_dense(dla_view *v, dla_mem mem)
{
    v->mem = mem;
    v->offset = 0;
    int64_t s = 1;
    for (int d = 0; d < v->ndims; d++) {
        v->strides[d] = s;
        s *= v->dims[d];
    }
}

/* Calls kernel k of table t on a (fill with fill_value). A member the
 * table lacks is DLA_ERR_UNSUPPORTED without a message: callers ask
 * supports() first. */
static inline dla_status dla__kernel_call(const dla_plugin *t, void *ctx, dla_kernel k,
                                          const dla__kernel_args *a, double fill_value)
{
#define CALL(member, ...) return t->member ? t->member(ctx, __VA_ARGS__) : DLA_ERR_UNSUPPORTED
    switch (k) {
    case DLA_KERNEL_FILL: CALL(fill, &a->view[0], fill_value);
    case DLA_KERNEL_STRIDED_COPY: CALL(strided_copy, &a->view[0], &a->view[1]);
    case DLA_KERNEL_CAST: CALL(cast, &a->view[0], &a->view[1]);
    case DLA_KERNEL_UNARY: CALL(unary, &a->unary);
    case DLA_KERNEL_BINARY: CALL(binary, &a->binary);
    case DLA_KERNEL_REDUCE: CALL(reduce, &a->reduce);
    case DLA_KERNEL_GEMM: CALL(gemm, &a->gemm);
    case DLA_KERNEL_TERNARY: CALL(ternary, &a->ternary);
    case DLA_KERNEL_CONV_FORWARD: CALL(conv_forward, &a->conv);
    case DLA_KERNEL_CONV_BACKWARD_DATA: CALL(conv_backward_data, &a->conv);
    case DLA_KERNEL_CONV_BACKWARD_FILTER: CALL(conv_backward_filter, &a->conv);
    case DLA_KERNEL_POOL_FORWARD: CALL(pool_forward, &a->pool);
    case DLA_KERNEL_POOL_BACKWARD: CALL(pool_backward, &a->pool);
    case DLA_KERNEL_GATHER: CALL(gather, &a->index);
    case DLA_KERNEL_SCATTER_ADD: CALL(scatter_add, &a->index);
    case DLA_KERNEL_FUSED: CALL(fused, &a->fused);
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR: CALL(fused_reduce, &a->fused_reduce);
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: CALL(random, &a->random);
    case DLA_KERNEL_FUSED_MULTI: CALL(fused_multi, &a->fused_multi);
    case DLA_KERNEL_CONV_FORWARD_FUSED: CALL(conv_forward_fused, &a->conv_fused);
    case DLA_KERNEL_CONV_BACKWARD_DATA_FUSED: CALL(conv_backward_data_fused, &a->conv_fused);
    default: return DLA_ERR_UNSUPPORTED;
    }
#undef CALL
}

#endif

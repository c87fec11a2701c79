/*
 * ops_nn.h - kernel-level helpers for the forward passes of the neural
 * network ops (activations, normalization, pooling, dropout, fullyconnect).
 *
 * A forward runs inside dla__apply while the tape may be recording, so it
 * calls kernels, never public ops (those would record themselves as well).
 * Most of these forwards see their operands in another shape than the
 * tensor's own (an "SSCB" batch as S x C x B, a C-vector broadcast against
 * it); these helpers build such kernel views and launch the kernels on them.
 */
#ifndef DLA_CORE_OPS_NN_H
#define DLA_CORE_OPS_NN_H

#include "core/error.h"
#include "core/launch.h"
#include "core/ops.h"
#include "core/tensor.h"

static inline int dla__nn_is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* A kernel view of t, which must be dense, with other dims of the same
 * element count (a reshape without a copy). */
static inline void dla__nn_view(const dla_tensor *t, int nd, const int64_t *dims, dla_view *v)
{
    dla__view_of(t, v);
    v->ndims = nd;
    int64_t s = 1;
    for (int i = 0; i < nd; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = s;
        s *= dims[i];
    }
}

/* Broadcasts v to dims out (each of v's dims equal or 1): stride 0 along
 * the dims it expands. */
static inline void dla__nn_expand(dla_view *v, const int64_t *out)
{
    for (int i = 0; i < v->ndims; i++)
        if (v->dims[i] == 1 && out[i] != 1) {
            v->dims[i] = out[i];
            v->strides[i] = 0;
        }
}

/* t itself (a new reference) when dense, else a dense copy (core/ops.h). */
static inline dla_tensor *dla__nn_dense(const char *op, dla_tensor *t) { return dla__dense(op, t); }

static inline dla_status dla__nn_unary(dla_device *dev, dla_unary_op op, double alpha, double beta,
                                       const dla_view *y, const dla_view *x)
{
    dla_unary_args a = {.struct_size = sizeof a, .op = op, .alpha = alpha, .beta = beta};
    a.y = *y;
    a.x = *x;
    return dla__k_unary(dev, &a);
}

/* z = a op b; a and b already expanded to z's dims. */
static inline dla_status dla__nn_binary(dla_device *dev, dla_binary_op op, const dla_view *z,
                                        const dla_view *a, const dla_view *b)
{
    dla_binary_args args = {.struct_size = sizeof args, .op = op};
    args.z = *z;
    args.a = *a;
    args.b = *b;
    return dla__k_binary(dev, &args);
}

/* y = reduce(x) over the dims where y has 1 and x does not. */
static inline dla_status dla__nn_reduce(dla_device *dev, dla_reduce_op op, const dla_view *y,
                                        const dla_view *x)
{
    dla_reduce_args a = {.struct_size = sizeof a, .op = op};
    a.y = *y;
    a.x = *x;
    a.index.struct_size = sizeof a.index;
    return dla__k_reduce(dev, &a);
}

/* Nonzero when dev runs fused programs, plain and summed (ABI 1.2 and
 * 1.3), natively for dt: composite ops then make several of their
 * full-size passes one. */
static inline int dla__nn_fuses(dla_device *dev, dla_dtype dt)
{
    return dla__device_supports(dev, DLA_KERNEL_FUSED, dt) &&
           dla__device_supports(dev, DLA_KERNEL_FUSED_REDUCE, dt);
}

/* A fused program's unary or binary instruction on operands s0, s1. */
static inline dla_fused_insn dla__nn_insn(dla_fused_kind kind, int op, int32_t s0, int32_t s1)
{
    return (dla_fused_insn){.kind = kind, .op = op, .src = {s0, s1, 0}};
}

/* Batchnorm's and instancenorm's backward passes over x's five dims
 * [S, Cg, G, B, R] (core/ops_norm.c), as ops of their own
 * (core/ops_norm_grad.c) so the backward stays written in ops: each is one
 * pass on a device that fuses, composed kernels elsewhere.
 *   dla__norm_sums: sum(g) and sum(g .* x) over the dims where red[i] is
 *                  nonzero (kept as 1s); g and x of equal dims. Both come
 *                  from one pass where the device has fused_reduce_pair.
 *   dla__norm_dx:  a .* p + b .* q + r; a and b of the result's dims, p, q
 *                  and r broadcast (each dim equal or 1). */
dla_status dla__norm_sums(dla_tensor *g, dla_tensor *x, const unsigned char *red,
                          dla_tensor **sum_g, dla_tensor **sum_gx);
dla_tensor *dla__norm_dx(dla_tensor *a, dla_tensor *p, dla_tensor *b, dla_tensor *q,
                         dla_tensor *r);

/* Checks that t is a single or double tensor on dev; names op and arg. */
static inline dla_status dla__nn_check(const char *op, const char *arg, const dla_tensor *t,
                                       dla_dtype dtype, dla_device *dev)
{
    char buf[DLA__DIMS_BUF];
    if (t->dtype != dtype)
        return dla__fail(DLA_ERR_DTYPE, "%s: argument %s (%s) is %s, x is %s", op, arg,
                         dla__tensor_dims_str(t, buf, sizeof buf), dla_dtype_name(t->dtype),
                         dla_dtype_name(dtype));
    if (t->storage->device != dev)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is on %s, x on %s", op, arg,
                         t->storage->device->name, dev->name);
    return DLA_OK;
}

#endif

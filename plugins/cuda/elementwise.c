/*
 * elementwise.c - unary, binary and ternary (where) on CUDA devices: the
 * kit checks the arguments, the views are coalesced (dense views of one
 * layout become one dim, broadcasts keep their stride 0), and one launch
 * of elementwise_kernels.cu does the work on the device's stream. y may
 * alias x (unary) and z a or b (binary) exactly: each element is read and
 * then written by the same thread. During a capture, unary and binary
 * (not a comparison) are recorded as steps of a one-kernel replay
 * (onekern.c).
 */
#include "plugins/cuda/elementwise_kern.h"
#include "plugins/cuda/onekern_kern.h"

#include <dlaccel/plugin_ops.h>

dla_status dla__cu_unary(void *dev, const dla_unary_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "unary");
    if (s)
        return s;
    s = dla_kit_check_unary(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->y) == 0)
        return s;
    const dla_view *views[] = {&args->y, &args->x};
    dla__cu_space sp;
    dla__cu_vw vw[2];
    dla__cu_space_of(2, views, &sp, vw);
    s = dla__cu_err(dla__cu_launch_unary(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0], &vw[1],
                                         (int)args->op, args->x.dtype == DLA_F64, args->alpha,
                                         args->beta),
                    "unary: kernel launch");
    if (s == DLA_OK)
        dla__cu_k1_note_elementwise(d, &sp, vw, DLA_FUSED_UNARY, (int)args->op, args->x.dtype,
                                    args->alpha, args->beta);
    return s;
}

dla_status dla__cu_binary(void *dev, const dla_binary_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "binary");
    if (s)
        return s;
    s = dla_kit_check_binary(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->z) == 0)
        return s;
    const dla_view *views[] = {&args->z, &args->a, &args->b};
    dla__cu_space sp;
    dla__cu_vw vw[3];
    dla__cu_space_of(3, views, &sp, vw);
    s = dla__cu_err(dla__cu_launch_binary(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0], &vw[1],
                                          &vw[2], (int)args->op, args->a.dtype == DLA_F64),
                    "binary: kernel launch");
    /* A comparison writes bytes, which a program's registers are not. */
    if (s == DLA_OK && !dla_ops_binary_is_cmp((int)args->op))
        dla__cu_k1_note_elementwise(d, &sp, vw, DLA_FUSED_BINARY, (int)args->op, args->a.dtype,
                                    0, 0);
    return s;
}

dla_status dla__cu_ternary(void *dev, const dla_ternary_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "ternary");
    if (s)
        return s;
    s = dla_kit_check_ternary(&d->kit, args);
    if (s != DLA_OK || dla_kit_numel(&args->z) == 0)
        return s;
    const dla_view *views[] = {&args->z, &args->cond, &args->a, &args->b};
    dla__cu_space sp;
    dla__cu_vw vw[4];
    dla__cu_space_of(4, views, &sp, vw);
    return dla__cu_err(dla__cu_launch_where(d->stream, dla__cu_blocks(d, sp.n), &sp, &vw[0],
                                            &vw[1], &vw[2], &vw[3], args->z.dtype == DLA_F64),
                       "ternary where: kernel launch");
}

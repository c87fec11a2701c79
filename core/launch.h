/*
 * launch.h - running kernels on a device, falling back to the cpu plugin.
 *
 * Every kernel call of the core goes through these. When the device lacks a
 * kernel (member NULL or supports() says no), the operands' memory is copied
 * to the cpu plugin, the kernel runs there, and the written memory is copied
 * back: slow but always correct, and the log says so once per device and
 * kernel.
 *
 * The same functions are where the replay planner watches a trace run
 * (core/plan.h): while a plan is being captured on a thread, each launch is
 * also handed to it as a dla__launch, a copy of the call that
 * dla__k_launch() can make again later. Host transfers go through
 * dla__k_upload/dla__k_download for the same reason: an op that moves data
 * to or from the host is one the planner must run as the op itself.
 */
#ifndef DLA_CORE_LAUNCH_H
#define DLA_CORE_LAUNCH_H

#include "core/device.h"

dla_status dla__k_fill(dla_device *dev, const dla_view *y, double value);
dla_status dla__k_copy(dla_device *dev, const dla_view *y, const dla_view *x);
dla_status dla__k_cast(dla_device *dev, const dla_view *y, const dla_view *x);
dla_status dla__k_unary(dla_device *dev, const dla_unary_args *args);
dla_status dla__k_binary(dla_device *dev, const dla_binary_args *args);
dla_status dla__k_reduce(dla_device *dev, const dla_reduce_args *args);
dla_status dla__k_gemm(dla_device *dev, const dla_gemm_args *args);

/* ABI 1.1 kernels. */
dla_status dla__k_ternary(dla_device *dev, const dla_ternary_args *args);
dla_status dla__k_conv(dla_device *dev, dla_kernel which, const dla_conv_args *args);
dla_status dla__k_pool(dla_device *dev, dla_kernel which, const dla_pool_args *args);
dla_status dla__k_index(dla_device *dev, dla_kernel which, const dla_index_args *args);

/* ABI 1.2: a fused elementwise program. Native only: the planner makes one
 * only for a device that supports it, so there is no cpu fallback
 * (DLA_ERR_UNSUPPORTED). */
dla_status dla__k_fused(dla_device *dev, const dla_fused_args *args);
/* ABI 1.3: a fused program summed over dims; native only, as fused. */
dla_status dla__k_fused_reduce(dla_device *dev, const dla_fused_reduce_args *args);
dla_status dla__k_fused_multi(dla_device *dev, const dla_fused_multi_args *args);
/* ABI 1.9: a convolution pass and its epilogue, which is
 * DLA_KERNEL_CONV_FORWARD_FUSED or DLA_KERNEL_CONV_BACKWARD_DATA_FUSED.
 * Where dev has no such kernel, or declines the call, the pass and the
 * program run as two launches (dla__k_conv, then dla__k_fused): the same
 * bits. */
dla_status dla__k_conv_fused(dla_device *dev, dla_kernel which, const dla_conv_fused_args *args);

/* ABI 1.3: fills y from the random stream at (args->seed, args->counter)
 * with the device's random kernel, or, where it has none, draws on the
 * host (core/philox.c) and uploads (y must then be dense). The caller
 * advances the thread's stream (dla__philox_blocks). */
dla_status dla__k_random(dla_device *dev, const dla_random_args *args);

/* The dense retry (launch_dense.c). declined is the status of dev's kernel
 * k on args (size bytes; fill and cast pass their views as y then x, and
 * fill its value): unless it is DLA_ERR_UNSUPPORTED with a view that is not
 * dense, it is returned as is; otherwise every non-dense view is copied
 * into a dense buffer on dev, the kernel is called once more, and the
 * written views are copied back. strided_copy and gemm are never retried. */
dla_status dla__k_declined(dla_device *dev, dla_kernel k, const void *args, size_t size,
                           double fill_value, dla_status declined);

/* bytes from src+soff to dst+doff on one device (through the host when the
 * plugin has no copy_on_device). */
dla_status dla__k_copy_bytes(dla_device *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff,
                             size_t bytes);

/* Host to device and device to host: the plugin's copy_to_device and
 * copy_to_host, for data the core makes or reads on the host (uploads of
 * random numbers, class lists, device moves). */
dla_status dla__k_upload(dla_device *dev, dla_mem dst, size_t offset, const void *src, size_t bytes);
dla_status dla__k_download(dla_device *dev, void *dst, dla_mem src, size_t offset, size_t bytes);

/* ------------------------------------------------------- captured launches */

typedef enum dla__launch_kind {
    DLA__LAUNCH_FILL,
    DLA__LAUNCH_COPY,
    DLA__LAUNCH_CAST,
    DLA__LAUNCH_UNARY,
    DLA__LAUNCH_BINARY,
    DLA__LAUNCH_REDUCE,
    DLA__LAUNCH_GEMM,
    DLA__LAUNCH_TERNARY,
    DLA__LAUNCH_CONV,
    DLA__LAUNCH_POOL,
    DLA__LAUNCH_INDEX,
    DLA__LAUNCH_COPY_BYTES,
    DLA__LAUNCH_FUSED,
    DLA__LAUNCH_FUSED_REDUCE,
    DLA__LAUNCH_RANDOM, /* a replay patches seed and counter from the stream */
    DLA__LAUNCH_FUSED_MULTI, /* made only by the planner */
    DLA__LAUNCH_CONV_FUSED   /* the same */
} dla__launch_kind;

/* One kernel call with its arguments, as dla__k_launch() makes it again. */
typedef struct dla__launch {
    dla__launch_kind kind;
    dla_kernel which; /* conv, pool, index and conv_fused: the kernel */
    union {
        struct {
            dla_view y;
            double value;
        } fill;
        struct {
            dla_view y, x;
        } pair; /* copy, cast */
        dla_unary_args unary;
        dla_binary_args binary;
        dla_reduce_args reduce;
        dla_gemm_args gemm;
        dla_ternary_args ternary;
        dla_conv_args conv;
        dla_pool_args pool;
        dla_index_args index;
        struct {
            dla_mem dst, src;
            size_t doff, soff, bytes;
        } bytes;
        dla_fused_args *fused; /* owned by whoever made the launch */
        dla_fused_reduce_args *fused_reduce; /* the same */
        dla_fused_multi_args *fused_multi;   /* the same */
        dla_conv_fused_args *conv_fused;     /* the same */
        dla_random_args random;
    } u;
} dla__launch;

/* The argument block a fused launch points to and its size; NULL for the
 * kinds whose arguments live in the launch itself. */
static inline void *dla__launch_block(const dla__launch *l, size_t *bytes)
{
    if (l->kind == DLA__LAUNCH_FUSED) {
        *bytes = sizeof *l->u.fused;
        return l->u.fused;
    }
    if (l->kind == DLA__LAUNCH_FUSED_REDUCE) {
        *bytes = sizeof *l->u.fused_reduce;
        return l->u.fused_reduce;
    }
    if (l->kind == DLA__LAUNCH_FUSED_MULTI) {
        *bytes = sizeof *l->u.fused_multi;
        return l->u.fused_multi;
    }
    if (l->kind == DLA__LAUNCH_CONV_FUSED) {
        *bytes = sizeof *l->u.conv_fused;
        return l->u.conv_fused;
    }
    *bytes = 0;
    return NULL;
}

/* A launch of a fused program (of any of the four kernels that run one). */
static inline int dla__launch_is_fused(const dla__launch *l)
{
    return l->kind == DLA__LAUNCH_FUSED || l->kind == DLA__LAUNCH_FUSED_REDUCE ||
           l->kind == DLA__LAUNCH_FUSED_MULTI || l->kind == DLA__LAUNCH_CONV_FUSED;
}

/* Makes the call l describes on dev, through the dla__k_* function above
 * (so the cpu fallback applies as it did the first time). */
dla_status dla__k_launch(dla_device *dev, const dla__launch *l);

#endif

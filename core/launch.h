/*
 * launch.h - running kernels on a device, falling back to the cpu plugin.
 *
 * Every kernel call of the core goes through these. When the device lacks a
 * kernel (member NULL or supports() says no), the operands' memory is copied
 * to the cpu plugin, the kernel runs there, and the written memory is copied
 * back: slow but always correct, and the log says so once per device and
 * kernel.
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

/* bytes from src+soff to dst+doff on one device (through the host when the
 * plugin has no copy_on_device). */
dla_status dla__k_copy_bytes(dla_device *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff,
                             size_t bytes);

#endif

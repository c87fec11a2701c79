/*
 * dlaccel/device_table.h - a loaded device's plugin table, for programs that
 * drive a plugin's kernels directly.
 *
 * A model never needs this: ops reach devices through the library. It is
 * for the tools around plugins, which call a plugin's members themselves
 * with views they built: `dlaccel check-plugin` (the conformance suite),
 * kernel test suites, benchmarks of one kernel. Such a program links
 * libdlaccel (unlike a plugin, which includes only <dlaccel/plugin.h>),
 * finds the device with dla_device_get() or dla_device_at(), and calls
 * table->member(context, ...) under the rules of <dlaccel/plugin.h>: the
 * memory it passes comes from the same table's mem_alloc, and it frees
 * what it allocated before the device goes away (dla_device handles stay
 * valid until the process ends).
 */
#ifndef DLACCEL_DEVICE_TABLE_H
#define DLACCEL_DEVICE_TABLE_H

#include <dlaccel.h>
#include <dlaccel/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin table dev runs on: the host's full-size copy, with every
 * member past what the plugin filled NULL, so "member != NULL" is the
 * whole availability check (besides the minor and supports(), see
 * dla_device_runs_natively). NULL for a NULL dev. */
DLA_API const dla_plugin *dla_device_table(const dla_device *dev);

/* The context every member of that table takes as its first argument
 * (what device_open returned). NULL for a NULL dev. */
DLA_API void *dla_device_context(const dla_device *dev);

/* dev's index among its plugin's devices (the 0 of "cpu:0"); -1 for a
 * NULL dev. */
DLA_API int dla_device_index(const dla_device *dev);

/* The ABI minor dev's plugin answered at init: the host passes it no
 * kernel, op value or argument field newer than that. -1 for a NULL dev. */
DLA_API int dla_device_abi_minor(const dla_device *dev);

/* Nonzero when the library runs kernel for dtype on dev itself rather
 * than on the cpu plugin: the kernel's member is in the table, the plugin
 * answered the ABI minor that added the kernel (DLA_KERNEL_LIST), and
 * supports() (when the plugin has one) says yes. */
DLA_API int dla_device_runs_natively(const dla_device *dev, dla_kernel kernel, dla_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_DEVICE_TABLE_H */

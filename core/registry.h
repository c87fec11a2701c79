/*
 * registry.h - what the registry (registry.c) offers the rest of the core
 * besides the public device functions: the cpu plugin's device, the
 * availability check of a kernel, and a reset for tests.
 */
#ifndef DLA_CORE_REGISTRY_H
#define DLA_CORE_REGISTRY_H

#include <dlaccel/plugin.h>

/* The cpu plugin's first device: the reference every fallback runs on.
 * NULL (with the reason in dla_last_error) when it cannot be loaded. */
dla_device *dla__device_cpu(void);

/* Nonzero when dev runs kernel natively for dtype: the member is present,
 * the plugin answered the ABI minor that added the kernel
 * (DLA_KERNEL_LIST), and supports() agrees. */
int dla__device_supports(dla_device *dev, dla_kernel kernel, dla_dtype dtype);

/* The priority dev ranks with for "auto" and ExecutionEnvironment "gpu":
 * its type's in its manifest's plugin.priority_by_type, else its
 * plugin's plugin.priority. 0 for NULL. */
int dla__device_priority(const dla_device *dev);

/* Nonzero when the default device is one DLACCEL_DEVICE named with its
 * index ("cuda:1"), not a plugin's first device or priority's choice:
 * trainnet "parallel" then keeps every rank on it. */
int dla__device_default_pinned(void);

/* Forgets every plugin and device (dlclose, shutdown) and re-reads the
 * environment on next use. For tests and tools; no tensor may be alive. */
void dla__registry_reset(void);

#endif

/*
 * device.h - an opened device as the rest of the core sees it.
 *
 * The registry (registry.c) discovers manifests, loads plugins and opens
 * their devices; everything else reaches a plugin only through a dla_device
 * and its table. The table is the host's full-size copy, zeroed past what the
 * plugin filled, so "member != NULL" is the whole availability check.
 */
#ifndef DLA_CORE_DEVICE_H
#define DLA_CORE_DEVICE_H

#include <dlaccel/plugin.h>

struct dla__plugin; /* a loaded plugin record, private to registry.c */

struct dla_device {
    struct dla__plugin *plugin;
    const dla_plugin *table; /* owned by the plugin record */
    void *ctx;               /* from table->device_open */
    int index;               /* within the plugin */
    char name[64];           /* "cpu:0" */
    const char *plugin_name; /* "cpu" */
    int abi_minor;           /* the ABI minor the plugin answered */
    dla_plugin_device_info info;
    /* Log-once flags for kernels that fall back to the cpu plugin. */
    int fallback_logged[DLA_KERNEL_COUNT];
};

/* The cpu plugin's first device: the reference every fallback runs on.
 * NULL (with the reason in dla_last_error) when it cannot be loaded. */
dla_device *dla__device_cpu(void);

/* Nonzero when dev runs kernel natively for dtype (member present and
 * supports() agrees). */
int dla__device_supports(dla_device *dev, dla_kernel kernel, dla_dtype dtype);

/* Forgets every plugin and device (dlclose, shutdown) and re-reads the
 * environment on next use. For tests and tools; no tensor may be alive. */
void dla__registry_reset(void);

#endif

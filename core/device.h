/*
 * device.h - an opened device as the rest of the core sees it.
 *
 * The registry (registry.c) discovers manifests, loads plugins and opens
 * their devices; everything else reaches a plugin only through a dla_device
 * and its table. The table is the host's full-size copy, zeroed past what the
 * plugin filled, so "member != NULL" is the table's part of the
 * availability check (dla__device_supports adds the minor and supports()).
 */
#ifndef DLA_CORE_DEVICE_H
#define DLA_CORE_DEVICE_H

#include "core/registry.h"

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

#endif

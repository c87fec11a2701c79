/*
 * breadcrumb.h - naming the plugin whose init crashed the last run.
 *
 * A plugin's init runs inside the process: when it crashes, the process
 * dies before the registry can say which plugin it was calling. So, as the
 * Vulkan loader names each layer and driver before it calls into it, the
 * registry logs the plugin it is about to initialize (DLACCEL_LOG=info)
 * and leaves a breadcrumb file naming it for the duration of the call (and
 * of the device listing after it, where a GPU plugin first calls its
 * driver); a
 * breadcrumb still there at a later start, from a process that is gone,
 * means that call never returned, and discovery says so at warn.
 */
#ifndef DLA_CORE_BREADCRUMB_H
#define DLA_CORE_BREADCRUMB_H

#include <stddef.h>

/* Writes the breadcrumb for plugin name (library lib) before a call into
 * it, stage naming the call as the warning will ("init"; "device listing
 * (device_count, device_info)": where the GPU plugins first touch their
 * driver; "device_open (cuda:0)": where cuda makes its context), and puts
 * its path in path (size bytes). Returns 0, or -1 when
 * there is no usable folder or the file cannot be written (logged at
 * debug; the call goes ahead without one, and path is empty). */
int dla__breadcrumb_drop(const char *name, const char *lib, const char *stage, char *path,
                         size_t size);
/* Removes the breadcrumb at path (nothing when path is empty). */
void dla__breadcrumb_pick(const char *path);
/* Warns about every breadcrumb whose process has ended, naming the plugin
 * and how to skip it, and removes it. Called once per discovery. */
void dla__breadcrumb_report(void);

#endif

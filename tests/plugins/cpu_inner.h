/*
 * cpu_inner.h - how the test plugins that wrap the cpu plugin (cpuwrap.c,
 * graphwrap.c) open it: dlopen of CPU_PLUGIN_LIB (the build tree's, or
 * $DLA_TEST_CPU_PLUGIN_LIB) and
 * its init into *inner, as the host would call it. Their own table then
 * starts as a copy of *inner with the members they change replaced.
 */
#ifndef DLA_TEST_CPU_INNER_H
#define DLA_TEST_CPU_INNER_H

#include <dlaccel/plugin.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CPU_PLUGIN_LIB
#error "build with -DCPU_PLUGIN_LIB=\"path of the cpu plugin's library\""
#endif

static dla_status cpu_inner_open(const dla_plugin_host *h, const char *name, dla_plugin *inner)
{
    /* DLA_TEST_CPU_PLUGIN_LIB: the cpu plugin elsewhere than in the build
     * tree (bench/gpu_run.sh runs graphwrap from a bundle). */
    const char *path = getenv("DLA_TEST_CPU_PLUGIN_LIB");
    if (!path || !*path)
        path = CPU_PLUGIN_LIB;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return h->error(DLA_ERR_PLUGIN, "%s: cannot open the cpu plugin %s: %s", name, path,
                        dlerror());
    dla_plugin_init_fn init;
    *(void **)&init = dlsym(lib, DLA_PLUGIN_INIT_SYMBOL);
    if (!init)
        return h->error(DLA_ERR_PLUGIN, "%s: %s has no %s", name, path, DLA_PLUGIN_INIT_SYMBOL);
    memset(inner, 0, sizeof *inner);
    inner->struct_size = sizeof *inner;
    return init(h, inner);
}

/* The inner device's info as the wrapper's: "NAME wrapping <the cpu's
 * description>", of type "test". */
static dla_status cpu_inner_device_info(const dla_plugin *inner, const char *name, int index,
                                        dla_plugin_device_info *info)
{
    dla_status s = inner->device_info(index, info);
    if (s == DLA_OK) {
        char d[sizeof info->description];
        memcpy(d, info->description, sizeof d);
        d[sizeof d - 1] = '\0';
        /* Cut to fit: the wrapper's name first. */
        snprintf(info->description, sizeof info->description, "%s wrapping %.*s", name,
                 (int)(sizeof info->description - strlen(name) - sizeof " wrapping "), d);
        strcpy(info->type, "test");
    }
    return s;
}

#endif

/*
 * fake_crash.c - a plugin that crashes (a segmentation fault, as a driver
 * bug would give), for tests/tool_plugin_crash.sh: the process dies
 * inside the plugin, and the next start must name this plugin. It crashes
 * in init, or, with DLA_FAKE_CRASH_IN=device_count, in device_count after
 * an init that succeeds (where the GPU plugins first call their driver),
 * or with DLA_FAKE_CRASH_IN=device_open in the opening of its one device
 * (where the cuda plugin makes its context).
 */
#include <dlaccel/plugin.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int crash_in_open; /* DLA_FAKE_CRASH_IN=device_open */

static dla_status crash_count(int *count)
{
    *count = 1;
    if (!crash_in_open)
        raise(SIGSEGV);
    return DLA_OK;
}

static dla_status no_info(int index, dla_plugin_device_info *info)
{
    strcpy(info->description, "fake device that crashes when opened");
    strcpy(info->type, "test");
    return DLA_OK;
}

static dla_status no_open(int index, void **dev)
{
    raise(SIGSEGV);
    return DLA_ERR_DEVICE;
}
static dla_status no_alloc(void *dev, size_t bytes, dla_mem *out) { return DLA_ERR_DEVICE; }
static void no_free(void *dev, dla_mem mem) {}
static dla_status no_to_device(void *dev, dla_mem dst, size_t off, const void *src, size_t n)
{
    return DLA_ERR_DEVICE;
}
static dla_status no_to_host(void *dev, void *dst, dla_mem src, size_t off, size_t n)
{
    return DLA_ERR_DEVICE;
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    (void)h;
    const char *in = getenv("DLA_FAKE_CRASH_IN");
    crash_in_open = in && strcmp(in, "device_open") == 0;
    if (!in || (strcmp(in, "device_count") != 0 && !crash_in_open)) {
        raise(SIGSEGV);
        return DLA_ERR_PLUGIN; /* not reached unless SIGSEGV is ignored */
    }
    dla_plugin mine = {
        .struct_size = sizeof mine,
        .abi_major = DLA_PLUGIN_ABI_MAJOR,
        .abi_minor = 0,
        .device_count = crash_count,
        .device_info = no_info,
        .device_open = no_open,
        .mem_alloc = no_alloc,
        .mem_free = no_free,
        .copy_to_device = no_to_device,
        .copy_to_host = no_to_host,
    };
    size_t n = t->struct_size < sizeof mine ? t->struct_size : sizeof mine;
    memcpy(t, &mine, n);
    t->struct_size = n;
    return DLA_OK;
}

/*
 * fake_nodevice.c - a plugin that loads and initializes but finds no
 * device, as a GPU plugin on a machine without a GPU does. The host must
 * skip it and call its shutdown.
 */
#include <dlaccel/plugin.h>
#include <stdlib.h>

/* DLA_FAKE_DEVICE_COUNT, when set, is answered instead: a count no machine
 * has (an unset int in a plugin) must fail this plugin alone. */
static dla_status none_count(int *count)
{
    const char *n = getenv("DLA_FAKE_DEVICE_COUNT");
    *count = n ? atoi(n) : 0;
    return DLA_OK;
}

static dla_status none_info(int index, dla_plugin_device_info *info) { return DLA_ERR_DEVICE; }
static dla_status none_open(int index, void **dev) { return DLA_ERR_DEVICE; }
static dla_status none_alloc(void *dev, size_t bytes, dla_mem *out) { return DLA_ERR_DEVICE; }
static void none_free(void *dev, dla_mem mem) {}
static dla_status none_to_device(void *dev, dla_mem dst, size_t off, const void *src, size_t n)
{
    return DLA_ERR_DEVICE;
}
static dla_status none_to_host(void *dev, void *dst, dla_mem src, size_t off, size_t n)
{
    return DLA_ERR_DEVICE;
}

static const dla_plugin_host *host;

static void none_shutdown(void) { host->log(DLA_LOG_INFO, "fake_nodevice shutdown"); }

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    host = h;
    t->abi_major = DLA_PLUGIN_ABI_MAJOR;
    t->abi_minor = DLA_PLUGIN_ABI_MINOR;
    t->device_count = none_count;
    t->device_info = none_info;
    t->device_open = none_open;
    t->shutdown = none_shutdown;
    t->mem_alloc = none_alloc;
    t->mem_free = none_free;
    t->copy_to_device = none_to_device;
    t->copy_to_host = none_to_host;
    return DLA_OK;
}

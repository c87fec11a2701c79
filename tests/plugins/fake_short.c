/*
 * fake_short.c - a plugin from an older minor: its table ends after
 * copy_to_host. It also scribbles on the members past its struct_size, as a
 * careless plugin might, so the test sees the host zero them: a NULL check
 * must be all the core needs.
 */
#include <dlaccel/plugin.h>
#include <stddef.h>
#include <string.h>

static dla_status short_count(int *count)
{
    *count = 1;
    return DLA_OK;
}

static dla_status short_info(int index, dla_plugin_device_info *info)
{
    strcpy(info->description, "short table device");
    strcpy(info->type, "test");
    return DLA_OK;
}

static dla_status short_open(int index, void **dev)
{
    *dev = NULL;
    return DLA_OK;
}

static const dla_plugin_host *host;

static dla_status short_alloc(void *dev, size_t bytes, dla_mem *out)
{
    *out = host->alloc(bytes, 0);
    return *out ? DLA_OK : DLA_ERR_OUT_OF_MEMORY;
}
static void short_free(void *dev, dla_mem mem) { host->free(mem); }
static dla_status short_to_device(void *dev, dla_mem dst, size_t off, const void *src, size_t n)
{
    memcpy((char *)dst + off, src, n);
    return DLA_OK;
}
static dla_status short_to_host(void *dev, void *dst, dla_mem src, size_t off, size_t n)
{
    memcpy(dst, (const char *)src + off, n);
    return DLA_OK;
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    host = h;
    size_t mine = offsetof(dla_plugin, copy_to_host) + sizeof t->copy_to_host;
    memset((char *)t + mine, 0xA5, t->struct_size - mine);
    t->abi_major = DLA_PLUGIN_ABI_MAJOR;
    t->abi_minor = 0;
    t->device_count = short_count;
    t->device_info = short_info;
    t->device_open = short_open;
    t->mem_alloc = short_alloc;
    t->mem_free = short_free;
    t->copy_to_device = short_to_device;
    t->copy_to_host = short_to_host;
    t->struct_size = mine;
    return DLA_OK;
}

/*
 * fake_good.c - the smallest well-behaved plugin, for the registry tests.
 *
 * One host-addressable device whose memory comes from host->alloc, so a
 * test can see plugin allocations go through the user's hook. It natively
 * fills float32 only (supports() says so) and logs once from init, so the
 * tests can check the host prefixes its lines with the plugin's name.
 */
#include <dlaccel/plugin.h>
#include <string.h>

static const dla_plugin_host *host;

static dla_status good_device_count(int *count)
{
    *count = 1;
    return DLA_OK;
}

static dla_status good_device_info(int index, dla_plugin_device_info *info)
{
    if (index != 0)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "fake_good: no device %d", index);
    strcpy(info->description, "fake test device");
    strcpy(info->type, "test");
    info->memory_bytes = 1u << 20;
    info->compute_units = 3;
    info->host_addressable = 1;
    strcpy(info->properties, "fake=yes; queue=none");
    return DLA_OK;
}

static int device_context;

static dla_status good_device_open(int index, void **dev)
{
    *dev = &device_context;
    return DLA_OK;
}

static dla_status good_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    void *p = host->alloc(bytes, 64);
    if (!p)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "fake_good: %zu bytes refused", bytes);
    *out = (dla_mem)p;
    return DLA_OK;
}

static void good_mem_free(void *dev, dla_mem mem) { host->free(mem); }

static dla_status good_copy_to_device(void *dev, dla_mem dst, size_t offset, const void *src,
                                      size_t bytes)
{
    memcpy((char *)dst + offset, src, bytes);
    return DLA_OK;
}

static dla_status good_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset,
                                    size_t bytes)
{
    memcpy(dst, (const char *)src + offset, bytes);
    return DLA_OK;
}

static int good_supports(void *dev, dla_kernel kernel, dla_dtype dtype)
{
    return kernel == DLA_KERNEL_FILL && dtype == DLA_F32;
}

static dla_status good_fill(void *dev, const dla_view *y, double value)
{
    return host->error(DLA_ERR_UNSUPPORTED, "fake_good: fill is only declared, never run");
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *t)
{
    host = h;
    h->log(DLA_LOG_DEBUG, "fake_good init, host ABI %u.%u", (unsigned)h->abi_major,
           (unsigned)h->abi_minor);
    t->abi_major = DLA_PLUGIN_ABI_MAJOR;
    t->abi_minor = DLA_PLUGIN_ABI_MINOR;
    t->device_count = good_device_count;
    t->device_info = good_device_info;
    t->device_open = good_device_open;
    t->mem_alloc = good_mem_alloc;
    t->mem_free = good_mem_free;
    t->copy_to_device = good_copy_to_device;
    t->copy_to_host = good_copy_to_host;
    t->supports = good_supports;
    t->fill = good_fill;
    if (t->struct_size > sizeof *t)
        t->struct_size = sizeof *t;
    return DLA_OK;
}

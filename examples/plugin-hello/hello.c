/*
 * hello.c - the smallest complete dlaccel device plugin (docs/plugins.md).
 *
 * One device, "hello:0", whose memory is blocks of host memory obtained
 * through host->alloc. It fills only the members the ABI requires: devices
 * (count, info, open) and memory (alloc, free, copies both ways). Every
 * kernel member stays NULL, so the core runs each op on the cpu plugin and
 * moves the data with these copies: a working device from a few dozen
 * lines, and the shape to copy when writing a real one.
 *
 * Build against an installed dlaccel with the Makefile beside this file
 * (pkg-config alone: `make`, `make check`, `make install`); dlaccel's own
 * `make check` also builds it as a libtool module of its build tree.
 */
#include <dlaccel/plugin.h>

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The ABI this file implements: the members it fills and the op values
 * its kernels know. A number of its own, not DLA_PLUGIN_ABI_MINOR: rebuilt
 * against a newer header, the plugin would otherwise claim ops it has
 * never heard of, and the host would hand it those instead of running
 * them on the cpu plugin. Raise it only together with the code of the
 * newer minor. hello has no kernels, so 1.0's required members are all it
 * implements. */
#define HELLO_ABI_MAJOR 1
#define HELLO_ABI_MINOR 0
_Static_assert(HELLO_ABI_MAJOR == DLA_PLUGIN_ABI_MAJOR && HELLO_ABI_MINOR <= DLA_PLUGIN_ABI_MINOR,
               "hello.c implements ABI 1.0: this dlaccel/plugin.h describes another major");

/* The core's services; valid until the process ends. */
static const dla_plugin_host *host;

/* What a dla_mem points to. The core never looks inside: to it the handle
 * is opaque, so a real device would put its own buffer object here. */
typedef struct hello_block {
    size_t bytes;
    alignas(64) unsigned char data[]; /* aligned for every dtype */
} hello_block;

/* The context device_open hands back; the core passes it to every member.
 * One static device needs no state, but the pointer must be unique. */
static int hello_device;

/* -------------------------------------------------------------- devices */

static dla_status hello_device_count(int *count)
{
    *count = 1;
    return DLA_OK;
}

static dla_status hello_device_info(int index, dla_plugin_device_info *info)
{
    if (index != 0)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "hello: device_info: no device %d", index);
    /* Filled in a full-size copy, then handed over up to the size the host
     * says its struct has: a host built against an older header has a
     * smaller one, and nothing past its struct_size may be written. */
    dla_plugin_device_info mine = {.struct_size = sizeof mine};
    snprintf(mine.description, sizeof mine.description, "hello: blocks of host memory");
    snprintf(mine.type, sizeof mine.type, "test");
    mine.memory_bytes = 0; /* unknown: as much as host->alloc gives */
    mine.compute_units = 1;
    mine.host_addressable = 0; /* a handle is a block header, not the data */
    snprintf(mine.properties, sizeof mine.properties, "kernels=none (all on the cpu plugin)");
    size_t n = info->struct_size < sizeof mine ? info->struct_size : sizeof mine;
    size_t keep = info->struct_size;
    memcpy(info, &mine, n);
    info->struct_size = keep;
    return DLA_OK;
}

static dla_status hello_device_open(int index, void **dev)
{
    if (index != 0)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "hello: device_open: no device %d", index);
    *dev = &hello_device;
    return DLA_OK;
}

/* --------------------------------------------------------------- memory */

static dla_status hello_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    /* The header's bytes are added to the size: past SIZE_MAX the sum
     * would wrap to a small block that claims bytes it does not have. */
    if (bytes > SIZE_MAX - sizeof(hello_block))
        return host->error(DLA_ERR_OUT_OF_MEMORY, "hello: mem_alloc: %zu bytes refused", bytes);
    hello_block *b = host->alloc(sizeof *b + bytes, alignof(hello_block));
    if (!b)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "hello: mem_alloc: %zu bytes refused", bytes);
    b->bytes = bytes;
    *out = (dla_mem)b;
    return DLA_OK;
}

static void hello_mem_free(void *dev, dla_mem mem)
{
    /* Nothing is ever pending: every member below finishes before it
     * returns, so the block can go at once. */
    host->free(mem);
}

/* The block behind mem when [offset, offset + bytes) lies inside it. A
 * bad range is the core's bug, but a plugin reports it, never crashes. */
static hello_block *block_range(dla_mem mem, size_t offset, size_t bytes, const char *member)
{
    hello_block *b = (hello_block *)mem;
    if (!b || offset > b->bytes || bytes > b->bytes - offset) {
        host->error(DLA_ERR_INVALID_ARGUMENT,
                    "hello: %s: bytes [%zu, %zu) outside a block of %zu bytes", member, offset,
                    offset + bytes, b ? b->bytes : 0);
        return NULL;
    }
    return b;
}

static dla_status hello_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes,
                                       const void *src, size_t bytes)
{
    hello_block *b = block_range(dst, offset_bytes, bytes, "copy_to_device");
    if (!b)
        return DLA_ERR_INVALID_ARGUMENT;
    memcpy(b->data + offset_bytes, src, bytes);
    return DLA_OK;
}

static dla_status hello_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                     size_t bytes)
{
    hello_block *b = block_range(src, offset_bytes, bytes, "copy_to_host");
    if (!b)
        return DLA_ERR_INVALID_ARGUMENT;
    memcpy(dst, b->data + offset_bytes, bytes);
    return DLA_OK;
}

/* ----------------------------------------------------------------- init */

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *table)
{
    /* A different major means a different contract: refuse, with a reason
     * the core logs. A different minor is fine either way (plugin.h). */
    if (h->abi_major != HELLO_ABI_MAJOR)
        return h->error(DLA_ERR_PLUGIN, "hello: speaks ABI %d.%d, the host %u.%u",
                        HELLO_ABI_MAJOR, HELLO_ABI_MINOR, h->abi_major, h->abi_minor);
    host = h;

    /* Every member not named here is NULL: the core's default applies. */
    dla_plugin mine = {
        .struct_size = sizeof mine,
        .abi_major = HELLO_ABI_MAJOR,
        .abi_minor = HELLO_ABI_MINOR,
        .device_count = hello_device_count,
        .device_info = hello_device_info,
        .device_open = hello_device_open,
        .mem_alloc = hello_mem_alloc,
        .mem_free = hello_mem_free,
        .copy_to_device = hello_copy_to_device,
        .copy_to_host = hello_copy_to_host,
    };
    /* The host's table may be older (smaller) or newer (larger) than ours:
     * fill what both know, and say how much that is. */
    size_t n = table->struct_size < sizeof mine ? table->struct_size : sizeof mine;
    memcpy(table, &mine, n);
    table->struct_size = n;
    return DLA_OK;
}

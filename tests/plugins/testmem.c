/*
 * testmem.c - a test-only plugin whose memory the host cannot address.
 *
 * A dla_mem here is a small slot number dressed as a pointer (slot << 4), so
 * any dereference by the core faults at once. Data moves only through this
 * plugin's copy functions. It implements memory, fill and strided copy
 * natively and leaves every other kernel NULL, so the core's cpu fallback
 * runs on every op: together this proves that the core never touches device
 * memory and that cross-device copies work.
 */
#include <dlaccel/plugin.h>
#ifdef DLA_TESTMEM_COLL
#include "tests/plugins/testmem_coll.h"
#endif

#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

typedef struct slot {
    unsigned char *data;
    size_t bytes;
} slot;

static const dla_plugin_host *host;
static slot *slots;
static size_t nslots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int device_token;

static dla_mem handle_of(size_t i) { return (dla_mem)(uintptr_t)((i + 1) << 4); }

/* The slot of m in the table; call with lock held (mem_alloc may move the
 * table meanwhile). */
static slot *slot_of(dla_mem m)
{
    uintptr_t v = (uintptr_t)m;
    size_t i = (v >> 4) - 1;
    if ((v & 15) || v == 0 || i >= nslots || !slots[i].data)
        return NULL;
    return &slots[i];
}

/* A copy of m's slot, taken under the lock, in *copy; NULL when m is no
 * slot. The copies and kernels use it outside the lock: another thread's
 * mem_alloc may grow (move and free) the table while they run, but not
 * free the buffer of a tensor this thread is using. */
static slot *slot_get(dla_mem m, slot *copy)
{
    pthread_mutex_lock(&lock);
    slot *s = slot_of(m);
    if (s)
        *copy = *s;
    pthread_mutex_unlock(&lock);
    return s ? copy : NULL;
}

/* Gives the table back when no slot is live, so leak checks see nothing of
 * ours between workloads. Called with the lock held. */
static void release_table_if_empty(void)
{
    for (size_t i = 0; i < nslots; i++)
        if (slots[i].data)
            return;
    host->free(slots);
    slots = NULL;
    nslots = 0;
}

#ifdef DLA_TESTMEM_COLL
unsigned char *dla_testmem_data(dla_mem m, size_t off, size_t bytes)
{
    slot copy;
    slot *s = slot_get(m, &copy);
    if (!s || off > s->bytes || bytes > s->bytes - off)
        return NULL;
    return s->data + off;
}
#endif

/* One device, or DLA_TESTMEM_DEVICES (1 to 8) of them sharing the one
 * memory: trainnet "parallel" choosing a device per rank is tested with
 * several (tests/parallel_train.sh). */
static dla_status count(int *n)
{
    const char *v = getenv("DLA_TESTMEM_DEVICES");
    int k = v && *v ? atoi(v) : 1;
    *n = k >= 1 && k <= 8 ? k : 1;
    return DLA_OK;
}

static dla_status info(int index, dla_plugin_device_info *out)
{
    snprintf(out->description, sizeof out->description, "testmem: memory behind handles");
    snprintf(out->type, sizeof out->type, "test");
    out->memory_bytes = 1ull << 32;
    out->compute_units = 1;
    out->host_addressable = 0;
    snprintf(out->properties, sizeof out->properties, "handles=slot<<4; kernels=fill,strided_copy");
    return DLA_OK;
}

static dla_status open_dev(int index, void **dev)
{
    /* DLA_TESTMEM_BROKEN=I: device I cannot be opened, as a GPU in a bad
     * state; dlaccel check-plugin must fail it, not pass the others. */
    const char *b = getenv("DLA_TESTMEM_BROKEN");
    if (b && *b && atoi(b) == index)
        return host->error(DLA_ERR_DEVICE, "testmem: device %d is broken (DLA_TESTMEM_BROKEN)",
                           index);
    *dev = &device_token;
    return DLA_OK;
}

static dla_status mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < nslots && slots[i].data)
        i++;
    if (i == nslots) {
        size_t n = nslots ? nslots * 2 : 64;
        slot *grown = host->alloc(n * sizeof *grown, 0);
        if (!grown) {
            pthread_mutex_unlock(&lock);
            return host->error(DLA_ERR_OUT_OF_MEMORY, "testmem: cannot grow the slot table");
        }
        memset(grown, 0, n * sizeof *grown);
        if (slots)
            memcpy(grown, slots, nslots * sizeof *grown);
        host->free(slots);
        slots = grown;
        nslots = n;
    }
    slots[i].data = host->alloc(bytes, 64);
    if (!slots[i].data) {
        release_table_if_empty();
        pthread_mutex_unlock(&lock);
        return host->error(DLA_ERR_OUT_OF_MEMORY, "testmem: cannot allocate %zu bytes", bytes);
    }
    slots[i].bytes = bytes;
    *out = handle_of(i);
    pthread_mutex_unlock(&lock);
    return DLA_OK;
}

static void mem_free(void *dev, dla_mem m)
{
    pthread_mutex_lock(&lock);
    slot *s = slot_of(m);
    if (s) {
        host->free(s->data);
        s->data = NULL;
        s->bytes = 0;
    }
    release_table_if_empty();
    pthread_mutex_unlock(&lock);
}

static dla_status bad(const char *what, dla_mem m, size_t off, size_t bytes)
{
    return host->error(DLA_ERR_INVALID_ARGUMENT, "testmem: %s: handle %p, bytes %zu..%zu out of range",
                       what, (void *)m, off, off + bytes);
}

static dla_status to_device(void *dev, dla_mem dst, size_t off, const void *src, size_t bytes)
{
    slot sc, *s = slot_get(dst, &sc);
    if (!s || off + bytes > s->bytes)
        return bad("copy_to_device", dst, off, bytes);
    memcpy(s->data + off, src, bytes);
    return DLA_OK;
}

static dla_status to_host(void *dev, void *dst, dla_mem src, size_t off, size_t bytes)
{
    slot sc, *s = slot_get(src, &sc);
    if (!s || off + bytes > s->bytes)
        return bad("copy_to_host", src, off, bytes);
    memcpy(dst, s->data + off, bytes);
    return DLA_OK;
}

static dla_status on_device(void *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff, size_t bytes)
{
    slot dc, sc, *d = slot_get(dst, &dc), *s = slot_get(src, &sc);
    if (!d || doff + bytes > d->bytes)
        return bad("copy_on_device", dst, doff, bytes);
    if (!s || soff + bytes > s->bytes)
        return bad("copy_on_device", src, soff, bytes);
    memmove(d->data + doff, s->data + soff, bytes);
    return DLA_OK;
}

static size_t elsize(dla_dtype t) { return t == DLA_F64 ? 8 : (t == DLA_U8 || t == DLA_BOOL) ? 1 : 4; }

/* Visits every element of v in column-major order with its element offset. */
static int64_t nth_offset(const dla_view *v, int64_t i)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndims; d++) {
        off += (i % v->dims[d]) * v->strides[d];
        i /= v->dims[d];
    }
    return off;
}

static int64_t numel(const dla_view *v)
{
    for (int d = 0; d < v->ndims; d++) /* empty first: the rest may overflow */
        if (v->dims[d] == 0)
            return 0;
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

static dla_status fill(void *dev, const dla_view *y, double value)
{
    slot sc, *s = slot_get(y->mem, &sc);
    if (!s)
        return bad("fill", y->mem, 0, 0);
    /* Integers saturate and NaN becomes 0, a bool is value != 0 (NaN: 1),
     * as the ABI says for fill. */
    unsigned char e[8];
    float f = (float)value;
    double v = value != value ? 0.0 : value;
    int32_t i32 = v <= -2147483648.0 ? INT32_MIN : v >= 2147483647.0 ? INT32_MAX : (int32_t)v;
    unsigned char u8 = y->dtype == DLA_BOOL ? value != 0
                       : v <= 0.0 ? 0 : v >= 255.0 ? 255 : (unsigned char)v;
    switch (y->dtype) {
    case DLA_F32: memcpy(e, &f, 4); break;
    case DLA_F64: memcpy(e, &value, 8); break;
    case DLA_I32: memcpy(e, &i32, 4); break;
    default: e[0] = u8; break;
    }
    size_t es = elsize(y->dtype);
    int64_t n = numel(y);
    for (int64_t i = 0; i < n; i++) {
        size_t at = (size_t)nth_offset(y, i) * es;
        if (at + es > s->bytes)
            return bad("fill", y->mem, at, es);
        memcpy(s->data + at, e, es);
    }
    return DLA_OK;
}

static dla_status strided_copy(void *dev, const dla_view *y, const dla_view *x)
{
    slot yc, xc, *sy = slot_get(y->mem, &yc), *sx = slot_get(x->mem, &xc);
    if (!sy || !sx)
        return bad("strided_copy", sy ? x->mem : y->mem, 0, 0);
    size_t es = elsize(y->dtype);
    int64_t n = numel(y);
    for (int64_t i = 0; i < n; i++) {
        size_t ay = (size_t)nth_offset(y, i) * es, ax = (size_t)nth_offset(x, i) * es;
        if (ay + es > sy->bytes || ax + es > sx->bytes)
            return bad("strided_copy", y->mem, ay, es);
        memcpy(sy->data + ay, sx->data + ax, es);
    }
    return DLA_OK;
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *table)
{
    host = h;
    if (h->abi_major != DLA_PLUGIN_ABI_MAJOR)
        return h->error(DLA_ERR_PLUGIN, "testmem speaks ABI %d, host %u", DLA_PLUGIN_ABI_MAJOR,
                        h->abi_major);
    dla_plugin mine = {
        .struct_size = sizeof mine,
        .abi_major = DLA_PLUGIN_ABI_MAJOR,
        .abi_minor = 5, /* the minor this plugin implements (docs/plugins.md §3), not the header's */
        .device_count = count,
        .device_info = info,
        .device_open = open_dev,
        .mem_alloc = mem_alloc,
        .mem_free = mem_free,
        .copy_to_device = to_device,
        .copy_to_host = to_host,
        .copy_on_device = on_device,
        .fill = fill,
        .strided_copy = strided_copy,
    };
#ifdef DLA_TESTMEM_COLL
    dla_testmem_coll_fill(h, &mine);
#endif
    size_t n = table->struct_size < sizeof mine ? table->struct_size : sizeof mine;
    memcpy(table, &mine, n);
    table->struct_size = n;
    return DLA_OK;
}

/*
 * memory.c - device memory of the cpu plugin: host memory from the host's
 * allocation hook, 64-byte aligned, with a dla_mem that is the pointer to
 * the data. The device is synchronous, so copies are plain memcpy; large
 * ones are split over the OpenMP team, since one core cannot saturate
 * memory bandwidth on its own.
 *
 * Each block starts with a one-line header holding its size, so kernels can
 * check that a view stays inside its memory.
 *
 * Large blocks are cached when freed and handed out again for a request of
 * the same size class. A fresh large block costs a page fault and the
 * kernel's zeroing on every page at first touch, which for a 64 MiB result
 * takes several times longer than the add that writes it; eager code
 * allocates such results on every call. The policy (block_cache.c) keeps at
 * most 64 blocks under a cap that starts at an eighth of RAM, at most
 * 2 GiB, and grows by what the program shows it recycles (a miss of a size
 * the cache let go for lack of room), up to half of the memory available
 * (mem_avail.c: MemAvailable, or the room under the process's memory
 * cgroup limit), read again at each growth and at each put above the base
 * cap. (The page-size slicing layer in double frees and remakes about
 * 2.2 GiB a forward and 4 GiB a training step: under the fixed cap every
 * call paid 640 MiB, and every step 3.8 GiB, of fresh pages; now none, after
 * a step or two.) The cache is emptied, and
 * its cap set back to the base, by device_close, shutdown and any refused
 * allocation (which is then retried). Blocks under CACHE_MIN always go
 * straight back to the host, so small tensors stay visible to the host's
 * allocation hook one by one.
 *
 * A cached block is idle memory, and it should not stay resident beside
 * new memory the process takes instead of it: when the working set moves
 * (eager iterations followed by a replay plan's arena, training followed
 * by evaluation), every request the cache cannot serve would otherwise add
 * its pages on top of all the idle ones. So a miss first gives back to the
 * kernel (madvise MADV_DONTNEED) the pages of as many bytes as it asks for,
 * from the ends of the oldest cached blocks: the blocks stay allocated and
 * cached, with their addresses, and a later hit on one faults those pages
 * in again, which costs what the miss would have. (A whole block per miss
 * made a 2 MiB scratch miss cost a 320 MiB block all its pages.) Freeing
 * them to the host instead does not give the memory back: glibc raises its
 * mmap threshold on such a free, and later blocks come from a heap that
 * does not shrink. The host sees the same allocations either way.
 *
 * A block that stays in the cache unused for DLACCEL_CPU_CACHE_IDLE
 * seconds (10 by default) gives back all its pages the same way, checked
 * at most once a second on the plugin's allocations and frees, so memory
 * a program stopped asking for goes back to the system without a thread of
 * our own; dla_device_release_cached (mem_trim) gives back and frees every
 * cached block at once.
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES), secure_getenv */
#include "plugins/cpu/cpu.h"

#include "plugins/cpu/block_cache.h"
#include "plugins/cpu/mem_avail.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Below this a copy stays on the calling thread. */
#define PAR_COPY_MIN ((size_t)1 << 20)

#define CACHE_MIN ((size_t)1 << 20)
#define CACHE_MAX_BYTES ((size_t)2 << 30)
/* Seconds a cached block may stay unused before its pages go back, unless
 * DLACCEL_CPU_CACHE_IDLE says otherwise. */
#define CACHE_IDLE_DEFAULT 10.0

typedef struct header {
    size_t bytes; /* as requested */
    size_t block; /* allocated after the header: the size class */
} header;
_Static_assert(sizeof(header) <= DLA__CPU_ALIGN, "the header must fit in one line");

static header *header_of(dla_mem mem)
{
    return (header *)((char *)mem - DLA__CPU_ALIGN);
}

size_t dla__cpu_mem_bytes(dla_mem mem)
{
    return header_of(mem)->bytes;
}

/* Every use inside the critical section dla__cpu_cache. */
static dla__bcache cache;
static int cache_ready;
static size_t page_size;
static double cache_idle;  /* seconds; INFINITY: never */
static double last_decay;  /* when the idle blocks were last looked at */

static double clock_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* DLACCEL_CPU_CACHE_IDLE: seconds (>= 0), or "off" for never; anything else
 * is named once in the log and the default taken. */
static double idle_from_env(void)
{
    const char *v = secure_getenv("DLACCEL_CPU_CACHE_IDLE");
    if (!v || !*v)
        return CACHE_IDLE_DEFAULT;
    if (!strcmp(v, "off"))
        return INFINITY;
    char *end;
    double s = strtod(v, &end);
    if (end != v && *end == '\0' && s >= 0 && isfinite(s))
        return s;
    dla__cpu_host->log(DLA_LOG_WARN,
                       "DLACCEL_CPU_CACHE_IDLE=%.64s is not a number of seconds (>= 0) or "
                       "off; ignored, the default applies (%g)",
                       v, CACHE_IDLE_DEFAULT);
    return CACHE_IDLE_DEFAULT;
}

/* The size a request of rounded bytes is served with: itself when small,
 * else rounded up to a quarter of its power of two, so a few classes cover
 * every large size and a reused block wastes under a quarter. */
static size_t size_class(size_t rounded)
{
    if (rounded < CACHE_MIN)
        return rounded;
    size_t p = CACHE_MIN;
    while (p <= rounded / 2)
        p *= 2;
    size_t step = p / 4;
    return (rounded + step - 1) / step * step;
}

static void cache_setup(void)
{
    if (cache_ready)
        return;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    page_size = page > 0 ? (size_t)page : 4096;
    size_t ram = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    dla__bc_init(&cache, ram / 8 < CACHE_MAX_BYTES ? ram / 8 : CACHE_MAX_BYTES);
    cache_idle = idle_from_env();
    last_decay = clock_seconds();
    cache_ready = 1;
}

/* Gives the kernel back the whole pages of bytes [offset, offset + n) of
 * the block's data (the header's page stays). */
static void give_back(void *block, size_t offset, size_t n, void *user)
{
    (void)user;
    uintptr_t data = (uintptr_t)block + DLA__CPU_ALIGN + offset;
    uintptr_t first = (data + page_size - 1) / page_size * page_size;
    uintptr_t end = (data + n) / page_size * page_size;
    if (end > first)
        (void)madvise((void *)first, end - first, MADV_DONTNEED);
}

/* Inside the critical section: the pages of blocks idle too long go back,
 * looked at no more than once a second. */
static void decay(double now)
{
    if (now - last_decay < 1.0)
        return;
    last_decay = now;
    if (isfinite(cache_idle))
        dla__bc_decay(&cache, now, cache_idle, give_back, NULL);
}

/* A cached block of this class, or NULL after the cache has grown if the
 * miss shows it was too small, and has given back the pages of as many
 * bytes of idle blocks as the new block will take. One critical section,
 * so no thread takes a block while its pages go. */
static header *cache_take(size_t block)
{
    header *h;
    const double now = clock_seconds();
#pragma omp critical(dla__cpu_cache)
    {
        cache_setup();
        decay(now);
        int regret;
        h = dla__bc_take(&cache, block, &regret);
        if (h == NULL) {
            if (regret)
                dla__bc_grow(&cache, block, dla__bc_ceiling(&cache, 0, dla__cpu_mem_available()));
            dla__bc_release(&cache, block, give_back, NULL);
        }
    }
    return h;
}

/* Keeps h for reuse; returns the blocks the host must free now (h itself
 * when it does not fit) in out, their number as the result. */
static int cache_put(header *h, header **out)
{
    int n;
    const double now = clock_seconds();
#pragma omp critical(dla__cpu_cache)
    {
        cache_setup();
        decay(now);
        /* Above the base, only as far as the memory available allows now. */
        size_t ceiling = cache.bytes + h->block > cache.base
                             ? dla__bc_ceiling(&cache, h->block, dla__cpu_mem_available())
                             : SIZE_MAX;
        n = dla__bc_put(&cache, h, h->block, ceiling, now, (void **)out);
    }
    return n;
}

/* Empties the cache: every block's pages back to the kernel, then the
 * block to the host (a freed block may stay in the host's heap, glibc's
 * raised mmap threshold above, and then only the pages go back). Returns
 * the bytes that were resident. */
static size_t cache_empty(void)
{
    header *out[DLA__BC_SLOTS];
    size_t bytes;
    int n;
#pragma omp critical(dla__cpu_cache)
    {
        bytes = dla__bc_resident(&cache);
        n = dla__bc_drain(&cache, (void **)out);
    }
    for (int i = 0; i < n; i++) {
        give_back(out[i], 0, out[i]->block, NULL);
        dla__cpu_host->free(out[i]);
    }
    return bytes;
}

void dla__cpu_cache_flush(void) { (void)cache_empty(); }

dla_status dla__cpu_mem_trim(void *dev, size_t *released)
{
    (void)dev;
    *released = cache_empty();
    return DLA_OK;
}

void dla__cpu_memcpy(void *dst, const void *src, size_t bytes)
{
    int threads = bytes >= PAR_COPY_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1) {
        memcpy(dst, src, bytes);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        /* Cut at cache-line multiples so no two threads share a line. */
        size_t lines = (bytes + DLA__CPU_ALIGN - 1) / DLA__CPU_ALIGN;
        size_t b0 = lines * t / nt * DLA__CPU_ALIGN, b1 = lines * (t + 1) / nt * DLA__CPU_ALIGN;
        if (b1 > bytes)
            b1 = bytes;
        if (b0 < b1)
            memcpy((char *)dst + b0, (const char *)src + b0, b1 - b0);
    }
}

dla_status dla__cpu_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    *out = NULL;
    if (bytes == 0)
        return dla__cpu_host->error(DLA_ERR_INVALID_ARGUMENT, "cpu mem_alloc: argument bytes: 0");
    /* Whole lines, so vector loops may read a whole last line. */
    const size_t rounded = (bytes + DLA__CPU_ALIGN - 1) & ~(size_t)(DLA__CPU_ALIGN - 1);
    const size_t block = size_class(rounded);
    if (rounded < bytes || block < rounded || block > SIZE_MAX - DLA__CPU_ALIGN)
        return dla__cpu_host->error(DLA_ERR_OUT_OF_MEMORY, "cpu mem_alloc: %zu bytes", bytes);
    header *h = block >= CACHE_MIN ? cache_take(block) : NULL;
    if (h == NULL) {
        h = dla__cpu_host->alloc(DLA__CPU_ALIGN + block, DLA__CPU_ALIGN);
        if (h == NULL && block >= CACHE_MIN) { /* what the cache holds may be what is missing */
            dla__cpu_cache_flush();
            h = dla__cpu_host->alloc(DLA__CPU_ALIGN + block, DLA__CPU_ALIGN);
        }
        if (h == NULL)
            return dla__cpu_host->error(DLA_ERR_OUT_OF_MEMORY,
                                        "cpu mem_alloc: the host refused %zu bytes", bytes);
        h->block = block;
    }
    h->bytes = bytes;
    *out = (dla_mem)((char *)h + DLA__CPU_ALIGN);
    return DLA_OK;
}

void dla__cpu_mem_free(void *dev, dla_mem mem)
{
    if (mem == NULL)
        return;
    header *h = header_of(mem);
    if (h->block < CACHE_MIN) {
        dla__cpu_host->free(h);
        return;
    }
    header *out[DLA__BC_SLOTS + 1];
    int n = cache_put(h, out);
    for (int i = 0; i < n; i++)
        dla__cpu_host->free(out[i]);
}

dla_status dla__cpu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                   size_t bytes)
{
    dla_status s = dla_kit_check_mem_range(&dla__cpu_kit, "copy_to_device", "dst", dst,
                                           offset_bytes, src, bytes);
    if (s != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy((char *)dst + offset_bytes, src, bytes);
    return DLA_OK;
}

dla_status dla__cpu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                 size_t bytes)
{
    dla_status s = dla_kit_check_mem_range(&dla__cpu_kit, "copy_to_host", "src", src, offset_bytes,
                                           dst, bytes);
    if (s != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy(dst, (const char *)src + offset_bytes, bytes);
    return DLA_OK;
}

dla_status dla__cpu_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                   size_t src_offset_bytes, size_t bytes)
{
    dla_status s;
    if ((s = dla_kit_check_mem_range(&dla__cpu_kit, "copy_on_device", "dst", dst, dst_offset_bytes,
                                     src, bytes)) != DLA_OK ||
        (s = dla_kit_check_mem_range(&dla__cpu_kit, "copy_on_device", "src", src, src_offset_bytes,
                                     dst, bytes)) != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy((char *)dst + dst_offset_bytes, (const char *)src + src_offset_bytes,
                        bytes);
    return DLA_OK;
}

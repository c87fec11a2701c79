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
 * allocates such results on every call. The cache is bounded (an eighth of
 * RAM, at most 2 GiB, at most CACHE_SLOTS blocks, oldest evicted first) and
 * emptied by device_close and shutdown. Blocks under CACHE_MIN always go
 * straight back to the host, so small tensors stay visible to the host's
 * allocation hook one by one.
 *
 * A cached block is idle memory, and it should not stay resident beside
 * new memory the process takes instead of it: when the working set moves
 * (eager iterations followed by a replay plan's arena, training followed
 * by evaluation), every request the cache cannot serve would otherwise add
 * its pages on top of all the idle ones. So a miss first gives the pages of
 * the oldest cached blocks, as many bytes as it asks for, back to the
 * kernel (madvise MADV_DONTNEED): the blocks stay allocated and cached,
 * with their addresses, and a later hit on one faults its pages in again,
 * which costs what the miss would have. Freeing them to the host instead
 * does not give the memory back: glibc raises its mmap threshold on such a
 * free, and later blocks come from a heap that does not shrink. The host
 * sees the same allocations either way.
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include "plugins/cpu/cpu.h"

#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Below this a copy stays on the calling thread. */
#define PAR_COPY_MIN ((size_t)1 << 20)

#define CACHE_MIN ((size_t)1 << 20)
#define CACHE_SLOTS 16
#define CACHE_MAX_BYTES ((size_t)2 << 30)

typedef struct header {
    size_t bytes;  /* as requested */
    size_t block;  /* allocated after the header: the size class */
    int released;  /* cached with its pages given back to the kernel */
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

static struct {
    header *blocks[CACHE_SLOTS]; /* oldest first */
    int count;
    size_t bytes;
    size_t limit;
    size_t page;
} cache;

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

static size_t cache_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && page_size > 0 ? (size_t)pages * (size_t)page_size : 0;
    return ram / 8 < CACHE_MAX_BYTES ? ram / 8 : CACHE_MAX_BYTES;
}

/* A cached block of this class (the newest), or NULL. */
static header *cache_take(size_t block)
{
    header *h = NULL;
#pragma omp critical(dla__cpu_cache)
    for (int i = cache.count - 1; i >= 0; i--) {
        if (cache.blocks[i]->block != block)
            continue;
        h = cache.blocks[i];
        memmove(&cache.blocks[i], &cache.blocks[i + 1],
                (size_t)(cache.count - i - 1) * sizeof cache.blocks[0]);
        cache.count--;
        cache.bytes -= block;
        break;
    }
    if (h)
        h->released = 0;
    return h;
}

/* Gives the kernel back the whole pages of h's data (the header's page
 * stays). Returns the bytes given back. */
static size_t release_pages(header *h)
{
    if (cache.page == 0) {
        long page = sysconf(_SC_PAGESIZE);
        cache.page = page > 0 ? (size_t)page : 4096;
    }
    uintptr_t data = (uintptr_t)h + DLA__CPU_ALIGN;
    uintptr_t first = (data + cache.page - 1) / cache.page * cache.page;
    uintptr_t end = (data + h->block) / cache.page * cache.page;
    if (end <= first || madvise((void *)first, end - first, MADV_DONTNEED) != 0)
        return 0;
    return end - first;
}

/* Before new memory is taken for a request of want bytes the cache cannot
 * serve: the pages of the oldest cached blocks still holding theirs, until
 * want bytes are given back or none is left. Inside the critical section,
 * so no thread takes a block while its pages go. */
static void cache_release(size_t want)
{
#pragma omp critical(dla__cpu_cache)
    {
        size_t done = 0;
        for (int i = 0; i < cache.count && done < want; i++) {
            header *h = cache.blocks[i];
            if (!h->released) {
                done += release_pages(h);
                h->released = 1;
            }
        }
    }
}

/* Keeps h for reuse; returns the blocks the host must free now (h itself
 * when it does not fit) in out, their number as the result. */
static int cache_put(header *h, header **out)
{
    int n = 0;
#pragma omp critical(dla__cpu_cache)
    {
        if (cache.limit == 0)
            cache.limit = cache_limit();
        if (h->block > cache.limit) {
            out[n++] = h;
        } else {
            while (cache.count == CACHE_SLOTS || cache.bytes + h->block > cache.limit) {
                out[n++] = cache.blocks[0];
                cache.bytes -= cache.blocks[0]->block;
                memmove(&cache.blocks[0], &cache.blocks[1],
                        (size_t)(--cache.count) * sizeof cache.blocks[0]);
            }
            cache.blocks[cache.count++] = h;
            cache.bytes += h->block;
        }
    }
    return n;
}

void dla__cpu_cache_flush(void)
{
    header *out[CACHE_SLOTS];
    int n;
#pragma omp critical(dla__cpu_cache)
    {
        n = cache.count;
        memcpy(out, cache.blocks, (size_t)n * sizeof out[0]);
        cache.count = 0;
        cache.bytes = 0;
    }
    for (int i = 0; i < n; i++)
        dla__cpu_host->free(out[i]);
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
    if (h == NULL && block >= CACHE_MIN)
        cache_release(block);
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
        h->released = 0;
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
    header *out[CACHE_SLOTS + 1];
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

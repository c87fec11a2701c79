/*
 * memory.c - device memory of the cpu plugin: host memory from the host's
 * allocation hook, 64-byte aligned, with a dla_mem that is the pointer
 * itself. The device is synchronous, so copies are plain memcpy; large ones
 * are split over the OpenMP team, since one core cannot saturate memory
 * bandwidth on its own.
 */
#include "plugins/cpu/cpu.h"

#include <omp.h>
#include <string.h>

/* Below this a copy stays on the calling thread. */
#define PAR_COPY_MIN ((size_t)1 << 20)

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
    /* Round up so vector loops may read a whole last line. */
    size_t rounded = (bytes + DLA__CPU_ALIGN - 1) & ~(size_t)(DLA__CPU_ALIGN - 1);
    if (rounded < bytes)
        return dla__cpu_host->error(DLA_ERR_OUT_OF_MEMORY, "cpu mem_alloc: %zu bytes", bytes);
    void *p = dla__cpu_host->alloc(rounded, DLA__CPU_ALIGN);
    if (p == NULL)
        return dla__cpu_host->error(DLA_ERR_OUT_OF_MEMORY,
                                    "cpu mem_alloc: the host refused %zu bytes", bytes);
    *out = (dla_mem)p;
    return DLA_OK;
}

void dla__cpu_mem_free(void *dev, dla_mem mem)
{
    dla__cpu_host->free(mem);
}

static dla_status check_copy(const char *kernel, const char *arg, const void *p, size_t bytes)
{
    if (p == NULL && bytes > 0)
        return dla__cpu_host->error(DLA_ERR_INVALID_ARGUMENT,
                                    "cpu %s: argument %s: NULL for %zu bytes", kernel, arg, bytes);
    return DLA_OK;
}

dla_status dla__cpu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                   size_t bytes)
{
    dla_status s;
    if ((s = check_copy("copy_to_device", "dst", dst, bytes)) != DLA_OK ||
        (s = check_copy("copy_to_device", "src", src, bytes)) != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy((char *)dst + offset_bytes, src, bytes);
    return DLA_OK;
}

dla_status dla__cpu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                 size_t bytes)
{
    dla_status s;
    if ((s = check_copy("copy_to_host", "dst", dst, bytes)) != DLA_OK ||
        (s = check_copy("copy_to_host", "src", src, bytes)) != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy(dst, (const char *)src + offset_bytes, bytes);
    return DLA_OK;
}

dla_status dla__cpu_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                   size_t src_offset_bytes, size_t bytes)
{
    dla_status s;
    if ((s = check_copy("copy_on_device", "dst", dst, bytes)) != DLA_OK ||
        (s = check_copy("copy_on_device", "src", src, bytes)) != DLA_OK)
        return s;
    if (bytes > 0)
        dla__cpu_memcpy((char *)dst + dst_offset_bytes, (const char *)src + src_offset_bytes,
                        bytes);
    return DLA_OK;
}

/*
 * memory.c - the cuda plugin's memory: a pool of device blocks in size
 * classes, and the copies between host and device.
 *
 * Why a pool of its own rather than cudaMallocAsync: a planned replay is
 * captured into a CUDA graph, and stream-ordered allocations inside a
 * capture become allocation nodes whose addresses belong to the graph. The
 * pool hands out blocks that outlive any capture, so a captured graph only
 * ever sees plain device addresses. All work of a device runs on its one
 * stream, so a freed block may go back to its class at once: any later use
 * is enqueued after the work that used it before (the stream-ordered reuse
 * cudaMallocAsync would give). After the first training step a step
 * allocates nothing from the driver; `dlaccel devices`' debug log and
 * device_close report what was reserved.
 *
 * Classes: four per octave (sizes 512 * 2^(k/4), rounded to 256 bytes), so
 * a block wastes at most a quarter of itself.
 */
#include "plugins/cuda/cu.h"

#include <string.h>

/* The bytes of size class c, and the smallest class that holds bytes
 * (-1 when none does). */
static size_t class_bytes(int c)
{
    const int oct = c / 4, step = c % 4;
    return ((size_t)512 << oct) + (((size_t)512 << oct) / 4) * (size_t)step;
}

static int size_class(size_t bytes)
{
    for (int c = 0; c < DLA__CU_POOL_CLASSES; c++)
        if (class_bytes(c) >= bytes)
            return c;
    return -1;
}

size_t dla__cu_mem_bytes(dla_mem mem)
{
    return mem ? ((const dla__cu_mem *)mem)->bytes : 0;
}

void dla__cu_pool_release(dla__cu_device *d)
{
    /* A pooled block was freed in stream order: work still queued (a
     * replay returns queued) may use it. cudaFree only "may" wait. */
    if (d->pool_held > 0)
        cudaStreamSynchronize(d->stream);
    for (int c = 0; c < DLA__CU_POOL_CLASSES; c++) {
        dla__cu_mem *m = d->free_list[c];
        while (m) {
            dla__cu_mem *next = m->next;
            cudaFree(m->ptr);
            d->pool_reserved -= m->cap;
            dla__cu_host->free(m);
            m = next;
        }
        d->free_list[c] = NULL;
    }
    d->pool_held = 0;
}

dla_status dla__cu_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    dla__cu_device *d = dev;
    const dla_plugin_host *h = dla__cu_host;
    dla_status s = dla__cu_enter(d, "mem_alloc");
    if (s != DLA_OK)
        return s;
    const int c = size_class(bytes);
    if (c < 0)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cuda mem_alloc: %zu bytes is more than any device has",
                        bytes);
    pthread_mutex_lock(&d->lock);
    dla__cu_mem *m = d->free_list[c];
    if (m) {
        d->free_list[c] = m->next;
        d->pool_held -= m->cap;
        pthread_mutex_unlock(&d->lock);
        m->next = NULL;
        m->bytes = bytes;
        *out = (dla_mem)m;
        return DLA_OK;
    }
    m = h->alloc(sizeof *m, 0);
    if (!m) {
        pthread_mutex_unlock(&d->lock);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cuda mem_alloc: the handle");
    }
    memset(m, 0, sizeof *m);
    m->cap = class_bytes(c);
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, m->cap);
    if (e == cudaErrorMemoryAllocation && d->pool_held > 0 && !d->capturing) {
        /* The driver is out: give the pooled blocks back (after the
         * stream's work) and try once more. Not while the stream is
         * captured: a wait, or a cudaFree that may wait, is not allowed
         * then; the allocation fails, and with it that capture. */
        cudaGetLastError();
        dla__cu_pool_release(d);
        e = cudaMalloc(&p, m->cap);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        pthread_mutex_unlock(&d->lock);
        h->free(m);
        if (e == cudaErrorMemoryAllocation)
            return h->error(DLA_ERR_OUT_OF_MEMORY,
                            "cuda:%d mem_alloc: %zu bytes: out of device memory (%zu bytes held "
                            "by the plugin)",
                            d->index, bytes, d->pool_reserved);
        return dla__cu_err(e, "mem_alloc: cudaMalloc");
    }
    d->pool_reserved += m->cap;
    pthread_mutex_unlock(&d->lock);
    m->ptr = p;
    m->bytes = bytes;
    *out = (dla_mem)m;
    return DLA_OK;
}

void dla__cu_mem_free(void *dev, dla_mem mem)
{
    dla__cu_device *d = dev;
    dla__cu_mem *m = (dla__cu_mem *)mem;
    if (!m)
        return;
    const int c = size_class(m->cap);
    pthread_mutex_lock(&d->lock);
    m->next = d->free_list[c];
    d->free_list[c] = m;
    d->pool_held += m->cap;
    pthread_mutex_unlock(&d->lock);
}

static dla_status check_range(dla__cu_device *d, const char *member, dla_mem mem, size_t offset,
                              size_t bytes)
{
    const dla__cu_mem *m = (const dla__cu_mem *)mem;
    if (!m)
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT, "cuda %s: NULL memory handle", member);
    if (offset > m->bytes || bytes > m->bytes - offset)
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT,
                                   "cuda:%d %s: bytes %zu..%zu outside the buffer of %zu bytes",
                                   d->index, member, offset, offset + bytes, m->bytes);
    return DLA_OK;
}

dla_status dla__cu_mem_trim(void *dev, size_t *released)
{
    dla__cu_device *d = dev;
    *released = 0;
    dla_status s = dla__cu_enter(d, "mem_trim");
    if (s != DLA_OK)
        return s;
    /* cudaFree while another thread captures a plan could end its capture:
     * a capture holds gate from plan_begin to plan_end, so trimming waits
     * for none; the pool stays until the next call. */
    if (pthread_mutex_trylock(&d->gate) != 0) {
        dla__cu_host->log(DLA_LOG_DEBUG,
                          "cuda:%d mem_trim: a plan is being captured; the pool is kept", d->index);
        return DLA_OK;
    }
    pthread_mutex_lock(&d->lock);
    *released = d->pool_held;
    dla__cu_pool_release(d);
    pthread_mutex_unlock(&d->lock);
    pthread_mutex_unlock(&d->gate);
    return DLA_OK;
}

dla_status dla__cu_host_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    dla_status s = dla__cu_mem_alloc(dev, bytes, out);
    if (s == DLA_OK)
        dla__cu_plan_host_alloc(dev, (dla__cu_mem *)*out);
    return s;
}

void dla__cu_host_mem_free(void *dev, dla_mem mem)
{
    if (mem && !dla__cu_plan_host_free(dev, (dla__cu_mem *)mem))
        dla__cu_mem_free(dev, mem);
}

dla_status dla__cu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                  size_t bytes)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "copy_to_device");
    if (s == DLA_OK)
        s = check_range(d, "copy_to_device", dst, offset_bytes, bytes);
    if (s != DLA_OK || bytes == 0)
        return s;
    /* A graph cannot hold a copy from host memory that changes before it
     * runs: end the capture first. */
    if ((s = dla__cu_plan_flush(d, "copy_to_device")) != DLA_OK)
        return s;
    char *to = dla__cu_ptr(dst) + offset_bytes;
    cudaError_t e;
    if (d->staging && bytes <= d->staging_bytes) {
        /* Small copies go through a pinned slot: the copy is then
         * asynchronous and src is free at once. The slot's previous copy
         * must be done before it is overwritten. */
        pthread_mutex_lock(&d->lock);
        const int slot = d->staging_next;
        d->staging_next = (slot + 1) % DLA__CU_STAGING_SLOTS;
        char *buf = (char *)d->staging + (size_t)slot * d->staging_bytes;
        e = cudaEventSynchronize(d->staging_done[slot]);
        if (e == cudaSuccess) {
            memcpy(buf, src, bytes);
            e = cudaMemcpyAsync(to, buf, bytes, cudaMemcpyHostToDevice, d->stream);
        }
        if (e == cudaSuccess)
            e = cudaEventRecord(d->staging_done[slot], d->stream);
        pthread_mutex_unlock(&d->lock);
    } else {
        /* Large copies from pageable memory: CUDA stages them itself; the
         * wait makes sure src has been read before this returns, whatever
         * the driver does with pageable memory. */
        e = cudaMemcpyAsync(to, src, bytes, cudaMemcpyHostToDevice, d->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(d->stream);
    }
    return dla__cu_err(e, "copy_to_device");
}

dla_status dla__cu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                size_t bytes)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "copy_to_host");
    if (s == DLA_OK)
        s = check_range(d, "copy_to_host", src, offset_bytes, bytes);
    if (s != DLA_OK || bytes == 0)
        return s;
    if ((s = dla__cu_plan_flush(d, "copy_to_host")) != DLA_OK)
        return s;
    const char *from = dla__cu_ptr(src) + offset_bytes;
    cudaError_t e;
    pthread_mutex_lock(&d->lock);
    if (d->staging && bytes <= d->staging_bytes) {
        e = cudaMemcpyAsync(d->staging, from, bytes, cudaMemcpyDeviceToHost, d->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(d->stream);
        if (e == cudaSuccess)
            memcpy(dst, d->staging, bytes);
        pthread_mutex_unlock(&d->lock);
    } else {
        pthread_mutex_unlock(&d->lock);
        e = cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToHost, d->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(d->stream);
    }
    return dla__cu_wait_err(e, "copy_to_host");
}

dla_status dla__cu_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                  size_t src_offset_bytes, size_t bytes)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "copy_on_device");
    if (s == DLA_OK)
        s = check_range(d, "copy_on_device", dst, dst_offset_bytes, bytes);
    if (s == DLA_OK)
        s = check_range(d, "copy_on_device", src, src_offset_bytes, bytes);
    if (s != DLA_OK || bytes == 0)
        return s;
    return dla__cu_err(cudaMemcpyAsync(dla__cu_ptr(dst) + dst_offset_bytes,
                                       dla__cu_ptr(src) + src_offset_bytes, bytes,
                                       cudaMemcpyDeviceToDevice, d->stream),
                       "copy_on_device");
}

dla_status dla__cu_sync(void *dev)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "sync");
    if (s == DLA_OK)
        s = dla__cu_plan_flush(d, "sync");
    if (s != DLA_OK)
        return s;
    s = dla__cu_wait_err(cudaStreamSynchronize(d->stream), "sync");
    return s;
}

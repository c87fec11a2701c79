/*
 * memory.c - device memory of the opencl plugin: OpenCL buffers behind a
 * small host record that keeps their size (for the bounds checks), and
 * the copies between host and device.
 *
 * copy_to_device blocks, so the caller may reuse its memory on return (a
 * non-blocking write would need a staging copy freed from a driver
 * thread, through an allocator that may not expect it); copy_to_host
 * blocks as the ABI requires. Both wait for the queued work before them,
 * as the in-order queue does. mem_free releases the buffer at once:
 * OpenCL keeps it until the commands that use it have finished. Inside a
 * plan (plan.c) the device-side copy joins the event chain, and the
 * blocking calls count as the host waits they are.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

dla_status dla__ocl_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    *out = NULL;
    if (bytes == 0)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "opencl mem_alloc: argument bytes: 0");
    if (d->max_alloc && bytes > d->max_alloc)
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "opencl mem_alloc: %zu bytes exceed the device's largest buffer (%llu "
                        "bytes)",
                        bytes, (unsigned long long)d->max_alloc);
    dla__ocl_mem *m = h->alloc(sizeof *m, 0);
    if (!m)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "opencl mem_alloc: the host refused the record of "
                        "a %zu-byte buffer", bytes);
    cl_int err;
    m->buf = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        h->free(m);
        return h->error(err == CL_INVALID_BUFFER_SIZE || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                                err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY
                            ? DLA_ERR_OUT_OF_MEMORY
                            : DLA_ERR_DEVICE,
                        "opencl mem_alloc: clCreateBuffer of %zu bytes: %s", bytes,
                        DLA__OCL_ERR(err));
    }
    m->bytes = bytes;
    *out = (dla_mem)m;
    return DLA_OK;
}

void dla__ocl_mem_free(void *dev, dla_mem mem)
{
    if (mem == NULL)
        return;
    dla__ocl_mem *m = (dla__ocl_mem *)mem;
    clReleaseMemObject(m->buf);
    dla__ocl_host->free(m);
}

static dla_status copy_failed(const char *member, const char *call, cl_int err, size_t bytes)
{
    return dla__ocl_host->error(err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                                        err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY
                                    ? DLA_ERR_OUT_OF_MEMORY
                                    : DLA_ERR_DEVICE,
                                "opencl %s: %s of %zu bytes: %s", member, call, bytes,
                                DLA__OCL_ERR(err));
}

dla_status dla__ocl_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                   size_t bytes)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_mem_range(&dla__ocl_kit, "copy_to_device", "dst", dst,
                                           offset_bytes, src, bytes);
    if (s != DLA_OK || bytes == 0)
        return s;
    dla__ocl_plan_waited(d);
    cl_int err = clEnqueueWriteBuffer(d->queue, dla__ocl_buf(dst), CL_TRUE, offset_bytes, bytes,
                                      src, 0, NULL, NULL);
    return err == CL_SUCCESS ? DLA_OK
                             : copy_failed("copy_to_device", "clEnqueueWriteBuffer", err, bytes);
}

dla_status dla__ocl_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                 size_t bytes)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_mem_range(&dla__ocl_kit, "copy_to_host", "src", src, offset_bytes,
                                           dst, bytes);
    if (s != DLA_OK || bytes == 0)
        return s;
    dla__ocl_plan_waited(d);
    cl_int err = clEnqueueReadBuffer(d->queue, dla__ocl_buf(src), CL_TRUE, offset_bytes, bytes,
                                     dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? DLA_OK
                             : copy_failed("copy_to_host", "clEnqueueReadBuffer", err, bytes);
}

dla_status dla__ocl_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                   size_t src_offset_bytes, size_t bytes)
{
    dla__ocl_device *d = dev;
    dla_status s;
    if ((s = dla_kit_check_mem_range(&dla__ocl_kit, "copy_on_device", "dst", dst, dst_offset_bytes,
                                     src, bytes)) != DLA_OK ||
        (s = dla_kit_check_mem_range(&dla__ocl_kit, "copy_on_device", "src", src, src_offset_bytes,
                                     dst, bytes)) != DLA_OK ||
        bytes == 0)
        return s;
    cl_uint nwait;
    const cl_event *wait;
    cl_event *ev = dla__ocl_plan_event(d, "copy_on_device", &nwait, &wait);
    cl_int err = clEnqueueCopyBuffer(d->queue, dla__ocl_buf(src), dla__ocl_buf(dst),
                                     src_offset_bytes, dst_offset_bytes, bytes, nwait, wait, ev);
    dla__ocl_plan_enqueued(d, err);
    return err == CL_SUCCESS ? DLA_OK
                             : copy_failed("copy_on_device", "clEnqueueCopyBuffer", err, bytes);
}

dla_status dla__ocl_sync(void *dev)
{
    dla__ocl_device *d = dev;
    dla__ocl_plan_waited(d);
    cl_int err = clFinish(d->queue);
    if (err != CL_SUCCESS)
        return dla__ocl_host->error(DLA_ERR_DEVICE, "opencl sync: clFinish: %s", DLA__OCL_ERR(err));
    return DLA_OK;
}

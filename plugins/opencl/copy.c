/*
 * copy.c - fill, strided copy and cast on OpenCL devices.
 *
 * The fill value is converted here, once, exactly as the cpu plugin
 * converts it (integers saturate, NaN becomes 0, logical is value != 0),
 * and the kernel stores the resulting bit pattern. Dense views take the
 * runtime's own fill and copy commands; the rest run the strided kernels
 * of copy.cl, which move 1-, 4- or 8-byte patterns whatever the dtype.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

/* 0, 1, 2 for elements of 1, 4, 8 bytes. */
static int size_class(dla_dtype t)
{
    const size_t s = dla_kit_dtype_size(t);
    return s == 1 ? 0 : s == 4 ? 1 : 2;
}

dla_status dla__ocl_fill(void *dev, const dla_view *y, double value)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_view(&dla__ocl_kit, "fill", "y", y);
    if (s != DLA_OK || dla_kit_numel(y) == 0)
        return s;
    union {
        uint8_t u8;
        uint32_t u32;
        uint64_t u64;
    } bits = {0};
    dla_kit_fill_bits(y->dtype, value, &bits);
    const int sc = size_class(y->dtype);
    const size_t es = dla_kit_dtype_size(y->dtype);
    const dla_view *views[] = {y};
    if (dla__ocl_flat(1, views)) {
        cl_uint nwait;
        const cl_event *wait;
        cl_event *ev = dla__ocl_plan_event(d, "fill", &nwait, &wait);
        cl_int err = clEnqueueFillBuffer(d->queue, dla__ocl_buf(y->mem), &bits, es,
                                         (size_t)y->offset * es, (size_t)dla_kit_numel(y) * es,
                                         nwait, wait, ev);
        dla__ocl_plan_enqueued(d, err);
        if (err != CL_SUCCESS)
            return dla__ocl_host->error(DLA_ERR_DEVICE, "opencl fill: clEnqueueFillBuffer: %s",
                                        DLA__OCL_ERR(err));
        return DLA_OK;
    }
    static const char *const names[] = {"fill_1", "fill_4", "fill_8"};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_COPY, DLA__OCL_K_FILL + sc, &k, "%s", names[sc]);
    if (s == DLA_OK)
        s = dla__ocl_arg(k, 3, es, &bits, "fill");
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 1, views, 0, "fill");
    pthread_mutex_unlock(&d->lock);
    return s;
}

/* y = x for checked views of equal dims and element size. */
static dla_status copy_views(dla__ocl_device *d, const dla_view *y, const dla_view *x,
                             const char *kernel)
{
    const dla_view *views[] = {y, x};
    const size_t es = dla_kit_dtype_size(y->dtype);
    const int64_t n = dla_kit_numel(y);
    if (n == 0)
        return DLA_OK;
    if (dla__ocl_flat(2, views)) {
        cl_uint nwait;
        const cl_event *wait;
        cl_event *ev = dla__ocl_plan_event(d, kernel, &nwait, &wait);
        cl_int err = clEnqueueCopyBuffer(d->queue, dla__ocl_buf(x->mem), dla__ocl_buf(y->mem),
                                         (size_t)x->offset * es, (size_t)y->offset * es,
                                         (size_t)n * es, nwait, wait, ev);
        dla__ocl_plan_enqueued(d, err);
        if (err != CL_SUCCESS)
            return dla__ocl_host->error(DLA_ERR_DEVICE, "opencl %s: clEnqueueCopyBuffer: %s",
                                        kernel, DLA__OCL_ERR(err));
        return DLA_OK;
    }
    static const char *const names[] = {"copy_1", "copy_4", "copy_8"};
    const int sc = size_class(y->dtype);
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    dla_status s = dla__ocl_kernel(d, DLA__OCL_PROG_COPY, DLA__OCL_K_COPY + sc, &k, "%s",
                                   names[sc]);
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, 0, kernel);
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_strided_copy(void *dev, const dla_view *y, const dla_view *x)
{
    dla_status s = dla_kit_check_copy(&dla__ocl_kit, "strided_copy", y, x, 1);
    if (s != DLA_OK)
        return s;
    return copy_views(dev, y, x, "strided_copy");
}

dla_status dla__ocl_cast(void *dev, const dla_view *y, const dla_view *x)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_copy(&dla__ocl_kit, "cast", y, x, 0);
    if (s != DLA_OK)
        return s;
    if (x->dtype == y->dtype)
        return copy_views(d, y, x, "cast");
    if (!d->fp64 && (x->dtype == DLA_F64 || y->dtype == DLA_F64))
        return dla__ocl_host->error(DLA_ERR_DTYPE,
                                    "opencl cast: %s to %s: the device has no cl_khr_fp64",
                                    dla_kit_dtype_name(x->dtype), dla_kit_dtype_name(y->dtype));
    static const char *const short_names[] = {"f32", "f64", "i32", "u8", "b8"};
    _Static_assert(DLA_DTYPE_COUNT == 5, "a cast kernel name per dtype");
    const dla_view *views[] = {y, x};
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_COPY, DLA__OCL_K_CAST + x->dtype * DLA_DTYPE_COUNT + y->dtype,
                        &k, "cast_%s_%s", short_names[x->dtype], short_names[y->dtype]);
    if (s == DLA_OK)
        s = dla__ocl_run_space(d, k, 2, views, 0, "cast");
    pthread_mutex_unlock(&d->lock);
    return s;
}

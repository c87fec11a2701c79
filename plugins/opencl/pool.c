/*
 * pool.c - max and average pooling on OpenCL devices (kernels in pool.cl).
 *
 * The arguments are checked by the plugin kit and mapped onto five
 * logical dims (s0 s1 s2 channels batch) with each operand's strides;
 * forward runs one work-item per y element, backward one per x element.
 * Backward does not read the max index back to check it (that would stall
 * the queue on every call): an index outside its window adds nothing, and
 * the forward never writes one.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

/* pool.cl's dla_pool is the kit's geometry, member for member. */
typedef dla_kit_pool pool;

dla_status dla__ocl_pool_forward(void *dev, const dla_pool_args *args)
{
    dla__ocl_device *d = dev;
    pool g = {0};
    dla_status s = dla_kit_pool_prepare(&d->kit, "pool_forward", args, 0, &g);
    const size_t n = (size_t)(g.planes * g.out[0] * g.out[1] * g.out[2]);
    if (s != DLA_OK || n == 0)
        return s;
    const int f64 = args->dtype == DLA_F64, is_max = args->mode == DLA_POOL_MAX;
    const cl_mem x = dla__ocl_buf(args->x.mem), y = dla__ocl_buf(args->y.mem);
    const cl_int want_index = args->index.mem != NULL;
    const cl_mem ix = want_index ? dla__ocl_buf(args->index.mem) : y;
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_POOL, DLA__OCL_K_POOL + (is_max ? 0 : 2) + f64, &k,
                        "pool_%s_%s", is_max ? "max" : "avg", f64 ? "double" : "float");
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = is_max ? dla__ocl_args(k, "pool_forward", 0, A(g), A(want_index), A(y), A(x), A(ix),
                                   DLA__OCL_END)
                   : dla__ocl_args(k, "pool_forward", 0, A(g), A(y), A(x), DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_launch1(d, k, n, "pool_forward");
    pthread_mutex_unlock(&d->lock);
    return s;
}

dla_status dla__ocl_pool_backward(void *dev, const dla_pool_args *args)
{
    dla__ocl_device *d = dev;
    pool g = {0};
    dla_status s = dla_kit_pool_prepare(&d->kit, "pool_backward", args, 1, &g);
    const size_t n = (size_t)(g.planes * g.in[0] * g.in[1] * g.in[2]);
    if (s != DLA_OK || n == 0)
        return s;
    const int f64 = args->dtype == DLA_F64;
    const cl_int is_max = args->mode == DLA_POOL_MAX;
    const cl_mem x = dla__ocl_buf(args->x.mem);
    /* With no output there is nothing to read: x becomes zeros. */
    const int empty = g.out[0] * g.out[1] * g.out[2] == 0;
    const cl_mem y = empty ? x : dla__ocl_buf(args->y.mem);
    const cl_mem ix = is_max && !empty ? dla__ocl_buf(args->index.mem) : y;
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_POOL, DLA__OCL_K_POOL + 4 + f64, &k, "pool_back_%s",
                        f64 ? "double" : "float");
    if (s == DLA_OK)
        s = dla__ocl_args(k, "pool_backward", 0, A(g), A(is_max), A(x), A(y), A(ix),
                          DLA__OCL_END);
#undef A
    if (s == DLA_OK)
        s = dla__ocl_launch1(d, k, n, "pool_backward");
    pthread_mutex_unlock(&d->lock);
    return s;
}

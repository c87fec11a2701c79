/*
 * pool.c - max and average pooling on CUDA devices (kernels in
 * pool_kernels.cu).
 *
 * The plugin kit checks the arguments and maps them onto five logical
 * dims (s0 s1 s2 channels batch) with each operand's strides
 * (dla_kit_pool_prepare); forward runs one thread per y element, backward
 * one per x element, gathering from the outputs whose windows cover it in
 * a fixed order (no atomics: the same bits on every run). Backward does
 * not read the max index back to check it (that would stall the stream):
 * an index outside its window adds nothing, and the forward never writes
 * one.
 */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/pool_kern.h"

#include <string.h>

_Static_assert(sizeof(dla__cu_pool_geom) == sizeof(dla_kit_pool),
               "dla__cu_pool_geom mirrors dla_kit_pool");

static char *ptr_or_null(dla_mem m)
{
    return m ? dla__cu_ptr(m) : NULL;
}

dla_status dla__cu_pool_forward(void *dev, const dla_pool_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "pool_forward");
    if (s != DLA_OK)
        return s;
    dla_kit_pool kg;
    if ((s = dla_kit_pool_prepare(&d->kit, "pool_forward", args, 0, &kg)) != DLA_OK)
        return s;
    const int64_t n = kg.planes * kg.out[0] * kg.out[1] * kg.out[2];
    if (n == 0)
        return DLA_OK;
    dla__cu_pool_geom g;
    memcpy(&g, &kg, sizeof g);
    const int is_max = args->mode == DLA_POOL_MAX;
    int32_t *index = is_max && args->index.mem ? (int32_t *)dla__cu_ptr(args->index.mem) : NULL;
    const cudaError_t e = dla__cu_pool_forward_launch(
        &g, is_max, args->dtype == DLA_F64, dla__cu_ptr(args->y.mem), ptr_or_null(args->x.mem),
        index, dla__cu_blocks(d, n), d->stream);
    return dla__cu_err(e, "pool_forward: kernel launch");
}

dla_status dla__cu_pool_backward(void *dev, const dla_pool_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "pool_backward");
    if (s != DLA_OK)
        return s;
    dla_kit_pool kg;
    if ((s = dla_kit_pool_prepare(&d->kit, "pool_backward", args, 1, &kg)) != DLA_OK)
        return s;
    const int64_t n = kg.planes * kg.in[0] * kg.in[1] * kg.in[2];
    if (n == 0)
        return DLA_OK;
    dla__cu_pool_geom g;
    memcpy(&g, &kg, sizeof g);
    const int is_max = args->mode == DLA_POOL_MAX;
    /* With no output there is nothing to read: x becomes zeros (the
     * kernel's loops over covering windows are empty). */
    const int empty = kg.out[0] * kg.out[1] * kg.out[2] == 0;
    const char *y = empty ? NULL : ptr_or_null(args->y.mem);
    const int32_t *index =
        is_max && !empty && args->index.mem ? (const int32_t *)dla__cu_ptr(args->index.mem) : NULL;
    const cudaError_t e =
        dla__cu_pool_backward_launch(&g, is_max, args->dtype == DLA_F64,
                                     dla__cu_ptr(args->x.mem), y, index, dla__cu_blocks(d, n),
                                     d->stream);
    return dla__cu_err(e, "pool_backward: kernel launch");
}

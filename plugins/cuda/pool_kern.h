/*
 * pool_kern.h - the launchers of pool_kernels.cu (C linkage) and the plain
 * struct they take, the plugin kit's dla_kit_pool member for member (see
 * reduce_kern.h).
 */
#ifndef DLA_PLUGIN_CUDA_POOL_KERN_H
#define DLA_PLUGIN_CUDA_POOL_KERN_H

#include "plugins/cuda/reduce_kern.h" /* DLA__CU_RD */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ pool */

/* The kit's dla_kit_pool, member for member. */
typedef struct dla__cu_pool_geom {
    int64_t in[3], out[3], win[3], stride[3], pad[3];
    int64_t channels, planes, exclude_pad, full;
    int64_t xs[5], ys[5], is[5];
    int64_t xoff, yoff, ioff;
    int64_t x_spatial_dense;
} dla__cu_pool_geom;

/* Forward: one thread per y element (grid-stride). is_max with index
 * non-NULL writes the positions too. x, y, index: element 0 of their
 * memory (offsets in g). */
cudaError_t dla__cu_pool_forward_launch(const dla__cu_pool_geom *g, int is_max, int f64, char *y,
                                        const char *x, int32_t *index, unsigned grid,
                                        cudaStream_t stream);
/* Backward: one thread per x element, gathering from the windows that
 * cover it in increasing output order. */
cudaError_t dla__cu_pool_backward_launch(const dla__cu_pool_geom *g, int is_max, int f64, char *x,
                                         const char *y, const int32_t *index, unsigned grid,
                                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif

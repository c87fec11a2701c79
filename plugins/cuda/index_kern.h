/*
 * index_kern.h - the launchers of index_kernels.cu (C linkage) and the
 * plain struct they take (see reduce_kern.h).
 */
#ifndef DLA_PLUGIN_CUDA_INDEX_KERN_H
#define DLA_PLUGIN_CUDA_INDEX_KERN_H

#include "plugins/cuda/reduce_kern.h" /* DLA__CU_RD */

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------- gather, scatter_add */

/* The slice space (y and x with dim cut to 1, coalesced): nd dims, n
 * elements, y's and x's strides along them; one step along dim is ystep
 * in y, xstep in x. */
typedef struct dla__cu_index_geom {
    int32_t nd;
    int32_t elem; /* bytes of an element: 1, 2, 4 or 8 (gather) */
    int64_t n;
    int64_t dims[DLA__CU_RD];
    int64_t yst[DLA__CU_RD], xst[DLA__CU_RD];
    int64_t ystep, xstep;
    int64_t len, target;
} dla__cu_index_geom;

/* gather: y[s, i] = x[s, index[i]] for every slice element s and i <
 * len; position i of the index at idx + i * istep (elements). A position
 * outside 0..target-1 writes nothing (the member checks them first). */
cudaError_t dla__cu_gather_launch(const dla__cu_index_geom *g, char *y, const char *x,
                                  const int32_t *idx, int64_t istep, unsigned grid,
                                  cudaStream_t stream);

/* scatter_add by groups: groups[u] = target, its positions
 * list[start[u] .. start[u+1]-1] in increasing order; thread (s, u) adds
 * them to y[s, target] in that order (no atomics: the cpu plugin's
 * order of additions). f64: double, else float. */
cudaError_t dla__cu_scatter_add_launch(const dla__cu_index_geom *g, int f64, char *y,
                                       const char *x, const int32_t *targets,
                                       const int32_t *start, const int32_t *list, int64_t groups,
                                       unsigned grid, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif

/*
 * reduce_kern.h - the launchers of reduce_kernels.cu, index_kernels.cu and
 * pool_kernels.cu (C linkage), and the plain structs they take.
 *
 * The structs mirror the plugin kit's geometry (dla_kit_reduce,
 * dla_kit_pool: int64_t members only) member for member, so the .c files
 * copy the kit's result in (a static assertion there checks the sizes)
 * and the .cu files never include the kit. Every launcher enqueues on the
 * stream it is given and returns the launch's error (cudaGetLastError
 * after each <<<>>>), never waiting for the device.
 */
#ifndef DLA_PLUGIN_CUDA_REDUCE_KERN_H
#define DLA_PLUGIN_CUDA_REDUCE_KERN_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLA__CU_RD 8 /* DLA_MAX_DIMS */

/* ---------------------------------------------------------------- reduce */

/* The kit's dla_kit_reduce, member for member (x's dims split into kept
 * ones, one output each, and reduced ones, each list coalesced). */
typedef struct dla__cu_red_geom {
    int64_t outputs, nred, nk, nr;
    int64_t xoff, yoff, ioff;
    int64_t kd[DLA__CU_RD], kx[DLA__CU_RD], ky[DLA__CU_RD], ki[DLA__CU_RD];
    int64_t rd[DLA__CU_RD], rx[DLA__CU_RD];
} dla__cu_red_geom;

/* One reduce launch. op: 0 sum, 1 mean, 2 max, 3 min (dla_reduce_op's
 * order). shape: 0 one block of threads per (output, part), the threads
 * striding over the part's positions (reduced dims fast in memory); 1
 * one thread per (output, part), neighbouring threads on neighbouring
 * outputs (kept dims fast in memory, or short blocks). parts > 1: each
 * output's positions are cut into parts contiguous runs whose results go
 * to part_v / part_i (scratch, outputs * parts each) and a second kernel
 * merges them in part order. */
typedef struct dla__cu_red_launch {
    dla__cu_red_geom g;
    int32_t op;
    int32_t f64;
    int32_t shape;
    int32_t want_index;
    int64_t parts;
    char *y;      /* element 0 of y's memory (offsets are in g) */
    const char *x;
    int32_t *index; /* NULL: no index */
    void *part_v;   /* sums: double; max/min: the dtype */
    int64_t *part_i;
    unsigned grid; /* blocks of the first kernel */
    unsigned combine_grid;
} dla__cu_red_launch;

cudaError_t dla__cu_reduce_launch(const dla__cu_red_launch *l, cudaStream_t stream);

/* --------------------------------------------------- gather, scatter_add */

/* The slice space (y and x with dim cut to 1, coalesced): nd dims, n
 * elements, y's and x's strides along them; one step along dim is ystep
 * in y, xstep in x. */
typedef struct dla__cu_index_geom {
    int32_t nd;
    int32_t elem; /* bytes of an element: 1, 4 or 8 (gather) */
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

/*
 * reduce_kern.h - the launcher of reduce_kernels.cu (C linkage) and the
 * plain struct it takes (index_kern.h and pool_kern.h are its siblings
 * for gather/scatter_add and pooling).
 *
 * The struct mirrors the plugin kit's dla_kit_reduce (int64_t members
 * only) member for member, so reduce.c copies the kit's result in (a
 * static assertion there checks the sizes) and the .cu files never include
 * the kit. Every launcher enqueues on the stream it is given and returns
 * the launch's error (cudaGetLastError after each <<<>>>), never waiting
 * for the device.
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
    /* rfast: the reduced positions fit in 31 bits, and rmul / rshift are
     * each reduced dim's division constants (fastdiv.h): red_pos divides
     * by a multiply-high, where a 32-bit division is some twenty
     * instructions. */
    int32_t rfast;
    int32_t rshift[DLA__CU_RD];
    uint32_t rmul[DLA__CU_RD];
} dla__cu_red_launch;

cudaError_t dla__cu_reduce_launch(const dla__cu_red_launch *l, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

/* The max and min reduces' comparison, written once as device code in a
 * macro (no directive in its text): reduce_dev.cuh expands it, and
 * onekern_source.c stringifies it into a compiled one kernel's source.
 * red_takes: (v, at) replaces (best, pos): it is the first, a NaN over a
 * number, a better number, or an equal one (or a NaN after a NaN) at an
 * earlier position. at < 0 is an empty result and never replaces. */
#define DLA__CU_RED_ID(...) __VA_ARGS__
#define DLA__CU_RED_TAKES_FRAME(X)                                                                 \
    X(template <bool MAX, typename T> __device__ __forceinline__ bool red_takes(                   \
          T v, long long at, T best, long long pos) {                                              \
        if (at < 0)                                                                                \
            return false;                                                                          \
        if (pos < 0)                                                                               \
            return true;                                                                           \
        const bool vn = isnan(v), bn = isnan(best);                                                \
        if (vn)                                                                                    \
            return !bn || at < pos;                                                                \
        if (bn)                                                                                    \
            return false;                                                                          \
        if (MAX ? v > best : v < best)                                                             \
            return true;                                                                           \
        return v == best && at < pos;                                                              \
    })
#endif

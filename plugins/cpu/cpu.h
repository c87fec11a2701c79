/*
 * cpu.h - what the cpu plugin's files share: the host table, the tuning
 * constants and the table members each file defines.
 *
 * A dla_mem of this plugin is the host pointer itself (64-byte aligned), so
 * a kernel addresses an element as (char *)mem + (offset + index) * size.
 */
#ifndef DLA_PLUGIN_CPU_H
#define DLA_PLUGIN_CPU_H

#include <stdatomic.h>
#include <dlaccel/plugin.h>
#include <dlaccel/plugin_kit.h>
#include <stddef.h>
#include <stdint.h>

/* Alignment of every allocation: a cache line, and enough for AVX-512. */
#define DLA__CPU_ALIGN 64

/* Below this many elements a kernel runs on the calling thread: waking the
 * OpenMP team costs more than the work. */
#define DLA__CPU_PAR_MIN ((int64_t)1 << 15)

/* Set once by dlaccel_plugin_init; valid until the process ends. */
extern const dla_plugin_host *dla__cpu_host;
/* The plugin kit's context (dlaccel/plugin_kit.h): every argument check
 * goes through it, with "cpu" first in its messages and the bounds of
 * dla__cpu_mem_bytes. Set with dla__cpu_host. */
extern dla_kit dla__cpu_kit;

/* ---- threads.c: the team size, clamped when OMP_NUM_THREADS is absurd,
 * and shared with the other dlaccel processes of the machine ---- */
/* 0: OpenMP's count is used as is; else the most threads a team may have. */
extern int dla__cpu_threads_limit;
/* Bumped when the limit changes (processes sharing the CPUs come or go). */
extern atomic_int dla__cpu_threads_gen;
/* The generation the calling thread's team size was set for; 0: never. */
extern _Thread_local int dla__cpu_threads_done;
/* Whether the limit follows the count of dlaccel processes (peers.c). */
extern int dla__cpu_threads_sharing;
/* At plugin init: computes the limit, warns and clamps the calling thread. */
void dla__cpu_threads_init(void);
/* Sets the calling thread's team size (omp_set_num_threads is per thread). */
void dla__cpu_threads_apply(void);
/* Counts the processes again when a second has passed since the last
 * count, and moves the limit (and the generation) if their share changed. */
void dla__cpu_threads_poll(void);
/* At every entry point that may start a team or report its size. */
static inline void dla__cpu_threads_check(void)
{
    if (dla__cpu_threads_sharing)
        dla__cpu_threads_poll();
    if (dla__cpu_threads_done != atomic_load_explicit(&dla__cpu_threads_gen, memory_order_relaxed))
        dla__cpu_threads_apply();
}

/* Whether the team is likely still spinning: a parallel region of the
 * plugin (a GEMM's tiles, a fused program) ended within a few
 * microseconds. Waking a sleeping team costs tens of microseconds (a
 * futex a thread), more than a small program saves by sharing; a
 * spinning one joins at once. Only the choice of serial or shared rides
 * on it, never the bits. */
void dla__cpu_team_used(void);
int dla__cpu_team_awake(void);

/* ---- peers.c: the dlaccel processes of this user on this machine ---- */
/* Registers this process; the count of them (itself included), or 0 when
 * that cannot be known (no /dev/shm). */
int dla__cpu_peers_join(void);
/* The count now (at least 1). */
int dla__cpu_peers_count(void);

/* memcpy split over the OpenMP team when it is large. */
void dla__cpu_memcpy(void *dst, const void *src, size_t bytes);

/* Bytes a dla_mem of this plugin was allocated with (for bounds checks). */
size_t dla__cpu_mem_bytes(dla_mem mem);
/* Hands every cached free block back to the host. */
void dla__cpu_cache_flush(void);
/* mem_trim (ABI 1.7): gives back the pages of every cached block and frees
 * them; *released: the bytes that were resident. */
dla_status dla__cpu_mem_trim(void *dev, size_t *released);

/* ---- table members: memory.c ---- */
dla_status dla__cpu_mem_alloc(void *dev, size_t bytes, dla_mem *out);
void dla__cpu_mem_free(void *dev, dla_mem mem);
dla_status dla__cpu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                   size_t bytes);
dla_status dla__cpu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                 size_t bytes);
dla_status dla__cpu_copy_on_device(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                   size_t src_offset_bytes, size_t bytes);

/* ---- copy.c: fill, strided copy, cast ---- */
dla_status dla__cpu_fill(void *dev, const dla_view *y, double value);
dla_status dla__cpu_strided_copy(void *dev, const dla_view *y, const dla_view *x);
dla_status dla__cpu_cast(void *dev, const dla_view *y, const dla_view *x);

/* ---- elementwise.c ---- */
dla_status dla__cpu_unary(void *dev, const dla_unary_args *args);
dla_status dla__cpu_binary(void *dev, const dla_binary_args *args);
dla_status dla__cpu_ternary(void *dev, const dla_ternary_args *args);

/* ---- sum.c: a contiguous run summed in double (reduce, fused_reduce) ---- */
double dla__cpu_sum_f32(const float *x, int64_t n);
double dla__cpu_sum_f64(const double *x, int64_t n);

/* ---- reduce.c ---- */
dla_status dla__cpu_reduce(void *dev, const dla_reduce_args *args);

/* ---- reduce_lanes.c: reduce.c's outputs side by side, in its order ---- */
/* w outputs x[i * sl], each the sum (mean: the sum), max or min of n
 * positions sr apart, into val[i]: position by position, as reduce.c's
 * lanes. */
void dla__cpu_reduce_lanes_f32(const float *x, int64_t w, int64_t sl, int64_t n, int64_t sr,
                               dla_reduce_op op, double *val);
void dla__cpu_reduce_lanes_f64(const double *x, int64_t w, int64_t sl, int64_t n, int64_t sr,
                               dla_reduce_op op, double *val);
/* w outputs x[i * sl], each the sum of its n contiguous elements, into
 * val[i]: in dla__cpu_sum_*'s order, with its bits. */
void dla__cpu_reduce_runs_f32(const float *x, int64_t w, int64_t sl, int64_t n, double *val);
void dla__cpu_reduce_runs_f64(const double *x, int64_t w, int64_t sl, int64_t n, double *val);

/* ---- gemm.c ---- */
dla_status dla__cpu_gemm(void *dev, const dla_gemm_args *args);
/* gemm_thin.c: runs a checked single-precision product with m or k at most
 * 16 when it should (returns 1, *status set); 0: OpenBLAS's turn. */
int dla__cpu_gemm_thin(const dla_gemm_args *args, dla_status *status);
/* gemm_direct.c: the same for a product whose A is at most 1 MiB (16 KiB
 * when transposed) or a batch of small pages, on a CPU with AVX-512
 * (DLACCEL_CPU_GEMM_DIRECT=off: never). */
int dla__cpu_gemm_direct(const dla_gemm_args *args, dla_status *status);
/* How many pages of work multiply-adds each a thread takes at once from a
 * batch shared out among threads (gemm.c, gemm_direct.c): about 262,144
 * multiply-adds, at least two chunks per thread, at least one page. */
static inline int64_t dla__cpu_page_chunk(double work, int64_t batch, int threads)
{
    int64_t chunk = (int64_t)(262144.0 / work);
    if (chunk > batch / (2 * threads))
        chunk = batch / (2 * threads);
    return chunk < 1 ? 1 : chunk;
}
/* One column-major product through OpenBLAS, shared out in tiles that
 * follow the shape, never the thread count: the same bits with any
 * OMP_NUM_THREADS (gemm_tiles.c). Arguments as cblas_?gemm's. */
void dla__cpu_gemm_tiled_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc);
void dla__cpu_gemm_tiled_f64(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                             double alpha, const double *a, int64_t lda, const double *b,
                             int64_t ldb, double beta, double *c, int64_t ldc);

/* ---- pool.c ---- */
dla_status dla__cpu_pool_forward(void *dev, const dla_pool_args *args);
dla_status dla__cpu_pool_backward(void *dev, const dla_pool_args *args);

/* ---- index.c: gather, scatter_add ---- */
dla_status dla__cpu_gather(void *dev, const dla_index_args *args);
dla_status dla__cpu_scatter_add(void *dev, const dla_index_args *args);

/* ---- fused.c (ABI 1.2) ---- */
dla_status dla__cpu_fused(void *dev, const dla_fused_args *args);
/* ABI 1.3 */
dla_status dla__cpu_fused_reduce(void *dev, const dla_fused_reduce_args *args);
/* ABI 1.8: the program, also storing earlier registers into extra results */
dla_status dla__cpu_fused_multi(void *dev, const dla_fused_multi_args *args);
/* The checked program a over images b0 .. b0 + nb - 1 of its views (their
 * slices along the last dim), on the calling thread: a convolution's
 * epilogue (conv_forward_fused, conv_backward_data_fused: ABI 1.9), called
 * from inside the convolution's parallel region for the images just
 * written. */
void dla__cpu_fused_images(const dla_fused_args *a, int64_t b0, int64_t nb);
/* y = sum (mean) of x over the dims where y is 1, x streamed in memory
 * order into an accumulator per output (the reduce kernel's checked
 * arguments; single or double). */
dla_status dla__cpu_sum_blocks(const dla_view *y, const dla_view *x, int mean);

/* random.c (ABI 1.3) */
dla_status dla__cpu_random(void *dev, const dla_random_args *args);

/* ---- conv.c ---- */
dla_status dla__cpu_conv_forward(void *dev, const dla_conv_args *args);
dla_status dla__cpu_conv_forward_fused(void *dev, const dla_conv_fused_args *args);
dla_status dla__cpu_conv_backward_data_fused(void *dev, const dla_conv_fused_args *args);
dla_status dla__cpu_conv_backward_data(void *dev, const dla_conv_args *args);
dla_status dla__cpu_conv_backward_filter(void *dev, const dla_conv_args *args);

#endif

/*
 * profile.c - DLACCEL_CUDA_PROFILE=1: the GPU time of each kernel member,
 * logged (info) at exit, so that a workload's time can be split by kernel
 * without a profiler on the machine.
 *
 * Each kernel member of the table is wrapped: an event before and after
 * it on the device's stream, a wait for the second, and the time between
 * added to the member's row. The waits serialize host and GPU and take
 * CUDA graphs off (a wait inside a capture would end it), so the total
 * is more than the workload's own time; the split is what it is for.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "plugins/cuda/cu.h"

#include <stdlib.h>
#include <string.h>

enum {
    P_FILL, P_STRIDED_COPY, P_CAST, P_COPY_ON_DEVICE, P_UNARY, P_BINARY, P_TERNARY, P_REDUCE,
    P_GEMM, P_CONV_FWD, P_CONV_BWD_DATA, P_CONV_BWD_FILTER, P_POOL_FWD, P_POOL_BWD, P_GATHER,
    P_SCATTER_ADD, P_FUSED, P_FUSED_REDUCE, P_RANDOM, P_COUNT
};

static const char *const names[P_COUNT] = {
    "fill", "strided_copy", "cast", "copy_on_device", "unary", "binary", "ternary", "reduce",
    "gemm", "conv_forward", "conv_backward_data", "conv_backward_filter", "pool_forward",
    "pool_backward", "gather", "scatter_add", "fused", "fused_reduce", "random"};

/* The process's rows (of its cuda devices together): each call's time.
 * The first calls of a shape or program pay cuDNN's measuring and NVRTC's
 * compiling, host work during which the GPU idles between the events:
 * the report gives the median, and the total of the calls within 4x of
 * it, beside the plain total. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static float *times[P_COUNT];
static long calls[P_COUNT], room[P_COUNT];

int dla__cu_profiling(void)
{
    const char *v = secure_getenv("DLACCEL_CUDA_PROFILE");
    return v && strcmp(v, "1") == 0;
}

typedef struct span {
    cudaEvent_t a, b;
    int ok;
} span;

static span start(dla__cu_device *d)
{
    span s = {0};
    if (cudaSetDevice(d->index) != cudaSuccess || cudaEventCreate(&s.a) != cudaSuccess) {
        cudaGetLastError();
        return s;
    }
    if (cudaEventCreate(&s.b) != cudaSuccess) {
        cudaEventDestroy(s.a);
        cudaGetLastError();
        return s;
    }
    s.ok = cudaEventRecord(s.a, d->stream) == cudaSuccess;
    return s;
}

static void stop(dla__cu_device *d, span *s, int row)
{
    float t = 0;
    if (s->ok && cudaEventRecord(s->b, d->stream) == cudaSuccess &&
        cudaEventSynchronize(s->b) == cudaSuccess && cudaEventElapsedTime(&t, s->a, s->b) == cudaSuccess) {
        pthread_mutex_lock(&lock);
        if (calls[row] == room[row]) {
            long grown = room[row] ? 2 * room[row] : 1024;
            float *p = realloc(times[row], (size_t)grown * sizeof *p);
            if (p) {
                times[row] = p;
                room[row] = grown;
            }
        }
        if (calls[row] < room[row])
            times[row][calls[row]++] = t;
        pthread_mutex_unlock(&lock);
    }
    cudaGetLastError();
    if (s->a)
        cudaEventDestroy(s->a);
    if (s->b)
        cudaEventDestroy(s->b);
}

#define WRAP_ARGS(fn, row, T)                                                                      \
    static dla_status p_##fn(void *dev, const T *a)                                                \
    {                                                                                              \
        span s = start(dev);                                                                       \
        dla_status st = dla__cu_##fn(dev, a);                                                      \
        stop(dev, &s, row);                                                                        \
        return st;                                                                                 \
    }
#define WRAP_VIEWS(fn, row)                                                                        \
    static dla_status p_##fn(void *dev, const dla_view *y, const dla_view *x)                      \
    {                                                                                              \
        span s = start(dev);                                                                       \
        dla_status st = dla__cu_##fn(dev, y, x);                                                   \
        stop(dev, &s, row);                                                                        \
        return st;                                                                                 \
    }

WRAP_VIEWS(strided_copy, P_STRIDED_COPY)
WRAP_VIEWS(cast, P_CAST)
WRAP_ARGS(unary, P_UNARY, dla_unary_args)
WRAP_ARGS(binary, P_BINARY, dla_binary_args)
WRAP_ARGS(ternary, P_TERNARY, dla_ternary_args)
WRAP_ARGS(reduce, P_REDUCE, dla_reduce_args)
WRAP_ARGS(gemm, P_GEMM, dla_gemm_args)
WRAP_ARGS(conv_forward, P_CONV_FWD, dla_conv_args)
WRAP_ARGS(conv_backward_data, P_CONV_BWD_DATA, dla_conv_args)
WRAP_ARGS(conv_backward_filter, P_CONV_BWD_FILTER, dla_conv_args)
WRAP_ARGS(pool_forward, P_POOL_FWD, dla_pool_args)
WRAP_ARGS(pool_backward, P_POOL_BWD, dla_pool_args)
WRAP_ARGS(gather, P_GATHER, dla_index_args)
WRAP_ARGS(scatter_add, P_SCATTER_ADD, dla_index_args)
WRAP_ARGS(fused, P_FUSED, dla_fused_args)
WRAP_ARGS(fused_reduce, P_FUSED_REDUCE, dla_fused_reduce_args)
WRAP_ARGS(random, P_RANDOM, dla_random_args)

static dla_status p_fill(void *dev, const dla_view *y, double value)
{
    span s = start(dev);
    dla_status st = dla__cu_fill(dev, y, value);
    stop(dev, &s, P_FILL);
    return st;
}

static dla_status p_copy_on_device(void *dev, dla_mem dst, size_t dst_offset, dla_mem src,
                                   size_t src_offset, size_t bytes)
{
    span s = start(dev);
    dla_status st = dla__cu_copy_on_device(dev, dst, dst_offset, src, src_offset, bytes);
    stop(dev, &s, P_COPY_ON_DEVICE);
    return st;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void report(void)
{
    pthread_mutex_lock(&lock);
    for (int r = 0; r < P_COUNT; r++) {
        if (!calls[r])
            continue;
        qsort(times[r], (size_t)calls[r], sizeof *times[r], cmp_float);
        const double median = times[r][calls[r] / 2];
        double all = 0, steady = 0;
        long nsteady = 0;
        for (long i = 0; i < calls[r]; i++) {
            all += times[r][i];
            if (times[r][i] <= 4 * median)
                steady += times[r][i], nsteady++;
        }
        dla__cu_host->log(DLA_LOG_INFO,
                          "cuda profile: %-21s %7ld calls, median %8.1f us, %7ld within 4x of it "
                          "%9.3f ms, all %9.3f ms",
                          names[r], calls[r], 1e3 * median, nsteady, steady, all);
        free(times[r]);
        times[r] = NULL;
        calls[r] = room[r] = 0;
    }
    pthread_mutex_unlock(&lock);
}

void dla__cu_profile_table(dla_plugin *t)
{
    atexit(report);
    t->fill = p_fill;
    t->strided_copy = p_strided_copy;
    t->cast = p_cast;
    t->copy_on_device = p_copy_on_device;
    t->unary = p_unary;
    t->binary = p_binary;
    t->ternary = p_ternary;
    t->reduce = p_reduce;
    t->gemm = p_gemm;
    t->conv_forward = p_conv_forward;
    t->conv_backward_data = p_conv_backward_data;
    t->conv_backward_filter = p_conv_backward_filter;
    t->pool_forward = p_pool_forward;
    t->pool_backward = p_pool_backward;
    t->gather = p_gather;
    t->scatter_add = p_scatter_add;
    t->fused = p_fused;
    t->fused_reduce = p_fused_reduce;
    t->random = p_random;
}

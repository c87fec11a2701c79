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
    P_SCATTER_ADD, P_FUSED, P_FUSED_REDUCE, P_RANDOM, P_FUSED_MULTI, P_COUNT
};

static const char *const names[P_COUNT] = {
    "fill", "strided_copy", "cast", "copy_on_device", "unary", "binary", "ternary", "reduce",
    "gemm", "conv_forward", "conv_backward_data", "conv_backward_filter", "pool_forward",
    "pool_backward", "gather", "scatter_add", "fused", "fused_reduce", "random", "fused_multi"};

/* The process's rows (of its cuda devices together): one per member and
 * size (the elements of the call's largest view), each call's time in it.
 * The first calls of a shape or program pay cuDNN's measuring and NVRTC's
 * compiling, host work during which the GPU idles between the events:
 * the report gives each row's median, and the total of its calls within
 * 4x of the median, beside the plain total. */
#define ROWS 512
typedef struct row {
    int member;
    int64_t size;
    float *t;
    long n, room;
} row;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static row rows[ROWS];
static int nrows;

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

static void add(int member, int64_t size, float t)
{
    pthread_mutex_lock(&lock);
    row *r = NULL;
    for (int i = 0; i < nrows && !r; i++)
        if (rows[i].member == member && rows[i].size == size)
            r = &rows[i];
    if (!r && nrows < ROWS) {
        r = &rows[nrows++];
        r->member = member;
        r->size = size;
    }
    if (r && r->n == r->room) {
        long grown = r->room ? 2 * r->room : 256;
        float *p = realloc(r->t, (size_t)grown * sizeof *p);
        if (p) {
            r->t = p;
            r->room = grown;
        }
    }
    if (r && r->n < r->room)
        r->t[r->n++] = t;
    pthread_mutex_unlock(&lock);
}

static int64_t most(int n, const dla_view *const *v)
{
    int64_t m = 0;
    for (int i = 0; i < n; i++)
        if (v[i] && v[i]->mem && dla_kit_numel(v[i]) > m)
            m = dla_kit_numel(v[i]);
    return m;
}

static void stop(dla__cu_device *d, span *s, int member, int64_t size)
{
    float t = 0;
    if (s->ok && cudaEventRecord(s->b, d->stream) == cudaSuccess &&
        cudaEventSynchronize(s->b) == cudaSuccess && cudaEventElapsedTime(&t, s->a, s->b) == cudaSuccess)
        add(member, size, t);
    cudaGetLastError();
    if (s->a)
        cudaEventDestroy(s->a);
    if (s->b)
        cudaEventDestroy(s->b);
}

#define WRAP_ARGS(fn, member, T, ...)                                                              \
    static dla_status p_##fn(void *dev, const T *a)                                                \
    {                                                                                              \
        const dla_view *v[] = {__VA_ARGS__};                                                       \
        span s = start(dev);                                                                       \
        dla_status st = dla__cu_##fn(dev, a);                                                      \
        stop(dev, &s, member, most((int)(sizeof v / sizeof *v), v));                               \
        return st;                                                                                 \
    }
#define WRAP_VIEWS(fn, member)                                                                     \
    static dla_status p_##fn(void *dev, const dla_view *y, const dla_view *x)                      \
    {                                                                                              \
        const dla_view *v[] = {y, x};                                                              \
        span s = start(dev);                                                                       \
        dla_status st = dla__cu_##fn(dev, y, x);                                                   \
        stop(dev, &s, member, most(2, v));                                                         \
        return st;                                                                                 \
    }

WRAP_VIEWS(strided_copy, P_STRIDED_COPY)
WRAP_VIEWS(cast, P_CAST)
WRAP_ARGS(unary, P_UNARY, dla_unary_args, &a->y, &a->x)
WRAP_ARGS(binary, P_BINARY, dla_binary_args, &a->z, &a->a, &a->b)
WRAP_ARGS(ternary, P_TERNARY, dla_ternary_args, &a->z, &a->a, &a->b)
WRAP_ARGS(reduce, P_REDUCE, dla_reduce_args, &a->y, &a->x)
WRAP_ARGS(conv_forward, P_CONV_FWD, dla_conv_args, &a->x, &a->y)
WRAP_ARGS(conv_backward_data, P_CONV_BWD_DATA, dla_conv_args, &a->x, &a->y)
WRAP_ARGS(conv_backward_filter, P_CONV_BWD_FILTER, dla_conv_args, &a->x, &a->y)
WRAP_ARGS(pool_forward, P_POOL_FWD, dla_pool_args, &a->x, &a->y)
WRAP_ARGS(pool_backward, P_POOL_BWD, dla_pool_args, &a->x, &a->y)
WRAP_ARGS(gather, P_GATHER, dla_index_args, &a->y, &a->x)
WRAP_ARGS(scatter_add, P_SCATTER_ADD, dla_index_args, &a->y, &a->x)
WRAP_ARGS(fused, P_FUSED, dla_fused_args, &a->y, &a->inputs[0], &a->inputs[1])
WRAP_ARGS(fused_reduce, P_FUSED_REDUCE, dla_fused_reduce_args, &a->program.y,
          &a->program.inputs[0], &a->program.inputs[1])
WRAP_ARGS(random, P_RANDOM, dla_random_args, &a->y)
WRAP_ARGS(fused_multi, P_FUSED_MULTI, dla_fused_multi_args, &a->program.y,
          &a->program.inputs[0], &a->program.inputs[1])

static dla_status p_gemm(void *dev, const dla_gemm_args *a)
{
    span s = start(dev);
    dla_status st = dla__cu_gemm(dev, a);
    stop(dev, &s, P_GEMM, a->m * a->n * (a->batch > 0 ? a->batch : 1));
    return st;
}

static dla_status p_fill(void *dev, const dla_view *y, double value)
{
    span s = start(dev);
    dla_status st = dla__cu_fill(dev, y, value);
    stop(dev, &s, P_FILL, dla_kit_numel(y));
    return st;
}

static dla_status p_copy_on_device(void *dev, dla_mem dst, size_t dst_offset, dla_mem src,
                                   size_t src_offset, size_t bytes)
{
    span s = start(dev);
    dla_status st = dla__cu_copy_on_device(dev, dst, dst_offset, src, src_offset, bytes);
    stop(dev, &s, P_COPY_ON_DEVICE, (int64_t)bytes);
    return st;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* A row's total over its calls within 4x of its median (the steady
 * ones), its median and their count. */
static double steady_of(const row *r, double *median, long *n)
{
    /* Set first: gcc's -fsanitize=thread build saw them unset past the
     * early return (-Werror=maybe-uninitialized). */
    if (median)
        *median = 0;
    if (n)
        *n = 0;
    if (r->n == 0)
        return 0;
    const double m = r->t[r->n / 2];
    double total = 0;
    long k = 0;
    for (long i = 0; i < r->n; i++)
        if (r->t[i] <= 4 * m)
            total += r->t[i], k++;
    if (median)
        *median = m;
    if (n)
        *n = k;
    return total;
}

/* Rows by their steady total, most first. */
static int cmp_rows(const void *a, const void *b)
{
    const double x = steady_of(a, NULL, NULL), y = steady_of(b, NULL, NULL);
    return (x < y) - (x > y);
}

static void report(void)
{
    pthread_mutex_lock(&lock);
    double sum = 0;
    for (int i = 0; i < nrows; i++) {
        if (rows[i].n)
            qsort(rows[i].t, (size_t)rows[i].n, sizeof *rows[i].t, cmp_float);
        sum += steady_of(&rows[i], NULL, NULL);
    }
    qsort(rows, (size_t)nrows, sizeof *rows, cmp_rows);
    for (int i = 0; i < nrows && i < 40; i++) {
        double median;
        long k;
        if (!rows[i].n)
            continue;
        const double steady = steady_of(&rows[i], &median, &k);
        double all = 0;
        for (long j = 0; j < rows[i].n; j++)
            all += rows[i].t[j];
        dla__cu_host->log(DLA_LOG_INFO,
                          "cuda profile: %-21s %10lld elements %6ld calls, median %8.1f us, "
                          "%6ld within 4x: %9.3f ms (%4.1f%%), all %9.3f ms",
                          names[rows[i].member], (long long)rows[i].size, rows[i].n, 1e3 * median,
                          k, steady, sum > 0 ? 100 * steady / sum : 0.0, all);
    }
    for (int i = 0; i < nrows; i++)
        free(rows[i].t);
    nrows = 0;
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
    t->fused_multi = p_fused_multi;
}

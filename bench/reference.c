/*
 * reference.c - what the device figures are held against, measured in the
 * same run on the same machine: a direct column-major cblas_sgemm into a
 * preallocated C, and a memcpy split into one chunk per OpenMP thread.
 *
 * The memcpy uses as many threads as OpenMP gives the process (2 on the
 * project's machines; OMP_NUM_THREADS sets it), the pool the cpu plugin's
 * kernels use too, so the add ratio compares like with like.
 */
#include "bench/workload.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct host_buffers {
    int64_t size; /* the workload's size: matrix order or bytes */
    float *a;
    float *b;
    float *c;
} host_buffers;

static void host_teardown(void *state)
{
    host_buffers *s = state;
    if (!s)
        return;
    free(s->a);
    free(s->b);
    free(s->c);
    free(s);
}

/* 64-byte aligned floats with every page touched, so no first-touch fault
 * lands in a timed call: values in [0, 1) from a small LCG, or zeros. */
static float *host_floats(size_t count, int random)
{
    size_t bytes = (count * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes);
    if (!p)
        return NULL;
    if (!random) {
        memset(p, 0, bytes);
        return p;
    }
    uint32_t x = 12345u;
    for (size_t i = 0; i < count; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 8) * (1.0f / 16777216.0f);
    }
    return p;
}

/* Buffers a and c always, b when count_b > 0. */
static dla_status host_setup(int64_t size, size_t count_a, size_t count_b, size_t count_c,
                             void **state)
{
    host_buffers *s = calloc(1, sizeof *s);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = s;
    s->size = size;
    s->a = host_floats(count_a, 1);
    s->b = count_b ? host_floats(count_b, 1) : NULL;
    s->c = host_floats(count_c, 0);
    if (!s->a || (count_b && !s->b) || !s->c)
        return DLA_ERR_OUT_OF_MEMORY;
    return DLA_OK;
}

static dla_status cblas_setup(const bench_workload *w, void **state)
{
    size_t n2 = (size_t)w->size * (size_t)w->size;
    return host_setup(w->size, n2, n2, n2, state);
}

/* C = A * B, column-major, as the cpu plugin's gemm is asked for it. */
static dla_status cblas_run(void *state)
{
    host_buffers *s = state;
    int n = (int)s->size;
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, s->a, n, s->b, n,
                0.0f, s->c, n);
    return DLA_OK;
}

static dla_status memcpy_setup(const bench_workload *w, void **state)
{
    size_t count = (size_t)w->size / sizeof(float);
    return host_setup(w->size, count, 0, count, state);
}

static dla_status memcpy_run(void *state)
{
    host_buffers *s = state;
    const char *src = (const char *)s->a;
    char *dst = (char *)s->c;
    size_t bytes = (size_t)s->size;
#pragma omp parallel
    {
        size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        size_t chunk = bytes / nt, off = chunk * id;
        if (id == nt - 1)
            chunk = bytes - off;
        memcpy(dst + off, src + off, chunk);
    }
    return DLA_OK;
}

#define MIB (1024.0 * 1024.0)
#define CBLAS_SGEMM(n)                                                         \
    {.name = "cblas_sgemm" #n, .unit = BENCH_FLOPS, .work = 2.0 * (n) * (n) * (n), .size = (n), \
     .setup = cblas_setup, .run = cblas_run, .teardown = host_teardown, .label = "cblas"}

const bench_workload bench_reference_workloads[] = {
    CBLAS_SGEMM(256),
    CBLAS_SGEMM(1024),
    CBLAS_SGEMM(2048),
    /* Read the source, write the destination. */
    {.name = "memcpy64MiB", .unit = BENCH_BYTES, .work = 2 * 64 * MIB, .size = 64 << 20,
     .setup = memcpy_setup, .run = memcpy_run, .teardown = host_teardown, .label = "memcpy"},
    {.name = NULL},
};

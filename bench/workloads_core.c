/*
 * workloads_core.c - the tensor ops of issue 2 as a user calls them:
 * dla_mtimes on square F32 matrices and dla_add on 64 MiB operands.
 *
 * Each run lets the op allocate its result and releases it: the allocation
 * is what a user pays per call, so it belongs in the figure.
 */
#include "bench/workload.h"

#include <stdlib.h>

typedef struct operands {
    dla_tensor *a;
    dla_tensor *b;
} operands;

static void operands_teardown(void *state)
{
    operands *s = state;
    if (!s)
        return;
    dla_tensor_release(s->a);
    dla_tensor_release(s->b);
    free(s);
}

/* Two F32 operands of dims rows x cols, uniform in [0, 1). */
static dla_status operands_setup(int64_t rows, int64_t cols, void **state)
{
    operands *s = calloc(1, sizeof *s);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = s;
    dla_rng_seed(1);
    s->a = dla_rand(DLA_F32, "", DLA_DIMS(rows, cols));
    s->b = dla_rand(DLA_F32, "", DLA_DIMS(rows, cols));
    dla_status st = dla_tensor_status(s->a);
    return st != DLA_OK ? st : dla_tensor_status(s->b);
}

/* Calls op and drops its result, keeping the status (an error tensor's
 * message stays in dla_last_error()). */
static dla_status consume(dla_tensor *result)
{
    dla_status st = dla_tensor_status(result);
    dla_tensor_release(result);
    return st;
}

static dla_status sgemm_setup(const bench_workload *w, void **state)
{
    return operands_setup(w->size, w->size, state);
}

static dla_status sgemm_run(void *state)
{
    operands *s = state;
    return consume(dla_mtimes(s->a, s->b));
}

/* 64 MiB of F32 as a 4096 x 4096 matrix: 2-D like most real operands. */
static dla_status add_setup(const bench_workload *w, void **state)
{
    int64_t numel = w->size / (int64_t)sizeof(float);
    return operands_setup(4096, numel / 4096, state);
}

static dla_status add_run(void *state)
{
    operands *s = state;
    return consume(dla_add(s->a, s->b));
}

#define MIB (1024.0 * 1024.0)
#define SGEMM(n, tgt)                                                          \
    {.name = "sgemm" #n, .unit = BENCH_FLOPS, .work = 2.0 * (n) * (n) * (n), .size = (n), \
     .setup = sgemm_setup, .run = sgemm_run, .teardown = operands_teardown,               \
     .label = "sgemm " #n, .reference = "cblas_sgemm" #n, .target = (tgt)}

/* Targets are issue 2's: GEMM through the plugin within 10% of a direct
 * cblas_sgemm at 1024 and 2048; add at 60% of memcpy bandwidth. */
const bench_workload bench_core_workloads[] = {
    SGEMM(256, 0),
    SGEMM(1024, 0.90),
    SGEMM(2048, 0.90),
    /* Read a, read b, write z. */
    {.name = "add64MiB", .unit = BENCH_BYTES, .work = 3 * 64 * MIB, .size = 64 << 20,
     .setup = add_setup, .run = add_run, .teardown = operands_teardown,
     .label = "add 64MiB", .reference = "memcpy64MiB", .target = 0.60},
    {.name = NULL},
};

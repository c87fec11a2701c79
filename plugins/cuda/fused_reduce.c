/*
 * fused_reduce.c - a fused program summed (or averaged) over some dims
 * (ABI 1.3, and the pair of ABI 1.4) on CUDA devices, in one pass: the
 * program's values never reach memory.
 *
 * The space's dims are split into kept ones (y's dim equals the space's:
 * one output per combination) and summed ones (y's is 1), each list
 * coalesced (kept: over y, the pair's y2 and the inputs; summed: over the
 * inputs). Then, with the sums kept in double (float32 and float64 alike,
 * as the opencl plugin keeps them where the device has double):
 *  - a block of a power of two threads (<= 256) per output: its threads
 *    take the output's positions in turn (the first summed dim fastest, so
 *    neighbouring threads read neighbouring elements where that dim is
 *    contiguous) and add their sums in shared memory, in a fixed order;
 *  - when the outputs are too few to fill the device and their sums long,
 *    each output's positions are cut into parts, a block per part writes
 *    its sum to scratch, and a second kernel adds the parts in order;
 *  - when the sums are short (<= 32 positions), or the outputs many and
 *    the summed dim not contiguous, one thread per output sums it alone.
 * MEAN divides the double sum by the count, then rounds to the dtype; an
 * empty sum is 0 (SUM) or NaN (MEAN). The program is interpreted, or
 * compiled (nvrtc.c) once it recurs, exactly as in fused.c.
 */
#include "plugins/cuda/fused_kern.h"

#include "plugins/cuda/fastdiv.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* Outputs per multiprocessor beyond which a thread per output is enough. */
#define THREAD_OUTPUTS_PER_SM 1024
/* Blocks aimed at per multiprocessor when outputs are cut into parts, and
 * the fewest positions a thread of a part gets. */
#define BLOCKS_PER_SM 8
#define MIN_PER_THREAD 8

/* Splits and coalesces the dims into f (y, y2 and the inputs' bases too). */
static void split_dims(dla_fr *f, const dla_fused_reduce_args *r, int pair)
{
    const dla_fused_args *a = &r->program;
    const dla_view *shape = &a->y;
    const int nin = a->ninputs;
    memset(f, 0, sizeof *f);
    f->outputs = 1;
    f->nred = 1;
    for (int d = 0; d < shape->ndims; d++) {
        const int64_t n = shape->dims[d];
        if (n == 1)
            continue;
        if (r->y.dims[d] == n) {
            f->outputs *= n;
            const int j = f->nk - 1;
            int merge = j >= 0;
            if (merge)
                merge = r->y.strides[d] == f->ost[0][j] * f->kd[j];
            if (merge && pair)
                merge = r->y2.strides[d] == f->ost[1][j] * f->kd[j];
            for (int i = 0; i < nin && merge; i++)
                merge = a->inputs[i].strides[d] == f->kst[i][j] * f->kd[j];
            if (merge) {
                f->kd[j] *= n;
                continue;
            }
            f->kd[f->nk] = n;
            f->ost[0][f->nk] = r->y.strides[d];
            f->ost[1][f->nk] = pair ? r->y2.strides[d] : 0;
            for (int i = 0; i < nin; i++)
                f->kst[i][f->nk] = a->inputs[i].strides[d];
            f->nk++;
        } else {
            f->nred *= n;
            const int j = f->nr - 1;
            int merge = j >= 0;
            for (int i = 0; i < nin && merge; i++)
                merge = a->inputs[i].strides[d] == f->rst[i][j] * f->rd[j];
            if (merge) {
                f->rd[j] *= n;
                continue;
            }
            f->rd[f->nr] = n;
            for (int i = 0; i < nin; i++)
                f->rst[i][f->nr] = a->inputs[i].strides[d];
            f->nr++;
        }
    }
    if (f->nr == 0) { /* nothing summed: one position per output */
        f->nr = 1;
        f->rd[0] = 1;
    }
    f->inner = f->rd[0];
    f->parts = 1;
    f->mean = r->op == DLA_REDUCE_MEAN;
    f->ybase = dla__cu_ptr(r->y.mem) + r->y.offset * (int64_t)dla_kit_dtype_size(r->y.dtype);
    f->y2base = pair ? dla__cu_ptr(r->y2.mem) +
                           r->y2.offset * (int64_t)dla_kit_dtype_size(r->y2.dtype)
                     : f->ybase;
    for (int i = 0; i < nin; i++)
        f->inbase[i] = dla__cu_ptr(a->inputs[i].mem) +
                       a->inputs[i].offset * (int64_t)dla_kit_dtype_size(a->inputs[i].dtype);
}

/* Whether the block kernel may take f's positions as rows
 * (DLA__CU_FR_ROWS): at most two summed dims, and the positions (with the
 * three blocks' worth a round of four reads past them) and each input's
 * offsets within one output's sum in int. */
static int rows_fit(const dla_fr *f, int nin)
{
    if (f->nr > 2 || f->nred > INT_MAX - 4 * DLA__CU_FR_THREADS)
        return 0;
    const int64_t rows = f->nr == 2 ? f->rd[1] : 1;
    for (int k = 0; k < nin; k++) {
        const int64_t s0 = f->rst[k][0] < 0 ? -f->rst[k][0] : f->rst[k][0];
        const int64_t s1 = f->rst[k][1] < 0 ? -f->rst[k][1] : f->rst[k][1];
        if (s0 > INT_MAX || s1 > INT_MAX || (f->inner - 1) * s0 > INT_MAX ||
            (rows - 1) * s1 > INT_MAX - (f->inner - 1) * s0)
            return 0;
    }
    return 1;
}

dla_status dla__cu_fused_reduce(void *dev, const dla_fused_reduce_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "fused_reduce");
    if (s != DLA_OK)
        return s;
    if ((s = dla_kit_check_fused_reduce(&d->kit, args)) != DLA_OK)
        return s;
    const int pair = dla_kit_fused_reduce_pair(args);
    const dla_fused_args *a = &args->program;
    dla_fr f;
    split_dims(&f, args, pair);
    if (f.outputs == 0)
        return DLA_OK;
    if (f.nred == 0) { /* an empty sum: 0, and its mean NaN */
        const double e = f.mean ? NAN : 0.0;
        s = dla__cu_fill(dev, &args->y, e);
        return s == DLA_OK && pair ? dla__cu_fill(dev, &args->y2, e) : s;
    }
    const int f64 = a->dtype == DLA_F64;
    dla_fprog p;
    dla__cu_fprog_of(a, pair ? args->reg2 : 0, &p);

    /* The launch. */
    const int64_t sms = d->sms > 0 ? d->sms : 16;
    const int contiguous = a->ninputs > 0 && (f.rst[0][0] == 1 || f.rst[0][0] == 0);
    const int thread =
        f.nred <= 32 || (f.outputs >= sms * THREAD_OUTPUTS_PER_SM && !contiguous);
    unsigned block = 32, grid;
    while (block < DLA__CU_FR_THREADS && (int64_t)block < f.nred)
        block *= 2;
    if (thread) {
        grid = dla__cu_blocks(d, f.outputs);
    } else {
        const int64_t target = sms * BLOCKS_PER_SM;
        if (f.outputs < target) {
            int64_t parts = (target + f.outputs - 1) / f.outputs;
            const int64_t most = f.nred / ((int64_t)block * MIN_PER_THREAD);
            if (parts > most)
                parts = most;
            f.parts = parts > 1 ? parts : 1;
        }
        const int64_t total = f.outputs * f.parts, cap = (int64_t)1 << 30;
        grid = (unsigned)(total < cap ? total : cap);
    }
    dla__cu_mem *partial = NULL;
    if (f.parts > 1) {
        const size_t bytes = (size_t)(f.outputs * f.parts) * sizeof(double) * (pair ? 2 : 1);
        if (!(partial = dla__cu_scratch(d, bytes, "fused_reduce")))
            return DLA_ERR_OUT_OF_MEMORY;
        f.partial = (double *)partial->ptr;
    }
    if (!thread && d->fr_rows && rows_fit(&f, a->ninputs)) {
        f.flags |= DLA__CU_FR_ROWS;
        dla__cu_fastdiv_make(f.inner, &f.imul, &f.ishift);
    }
    const void *k1 = NULL, *k2 = NULL;
    dla__cu_fused_compiled(d, a, pair ? 2 : 1, pair ? args->reg2 : 0, NULL, &k1, &k2);
    cudaError_t e =
        dla__cu_fr_launch(d->stream, thread, grid, block, f64, pair, &f, &p, thread ? k2 : k1);
    if (e == cudaSuccess && f.parts > 1)
        e = dla__cu_fr_combine(d->stream, dla__cu_blocks(d, f.outputs), f64, pair, &f);
    if (partial)
        dla__cu_scratch_done(d, partial);
    return dla__cu_err(e, "fused_reduce");
}

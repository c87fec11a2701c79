/*
 * fused_reduce.c - a fused program summed (or averaged) over some dims
 * (ABI 1.3) on OpenCL devices, in one pass: kernels in fused_reduce.cl.
 *
 * The program runs on the fused kernel's machinery (fused.c): interpreted
 * by fused.cl's fused_eval_T the first time, and compiled into a sum of
 * its own (its steps written out) once the same instruction list comes
 * back, as on every replay of a plan; the cache of compiled programs and
 * DLACCEL_OPENCL_FUSED are the fused kernel's.
 *
 * Here the space's dims are split into kept ones (y's dim equals the
 * space's) and summed ones (y's is 1), each list coalesced over y and the
 * inputs, and the launch is planned: whether a work-item sums runs of
 * consecutive positions of the first summed dim (CPU devices) or the
 * group's work-items lie across it (GPUs), how many work-items a group
 * has across rows, and into how many parts each output's rows are dealt
 * when the outputs alone would leave the device idle. The plan goes to
 * the kernel in a small buffer (its strides would not fit the 1024 bytes
 * of arguments OpenCL guarantees).
 *
 * The pair (ABI 1.4: y2.mem set, struct_size reaching y2) runs the same
 * plan on fused_reduce.cl's pair kernels, interpreted or compiled, which
 * sum register reg2 into y2 beside the last register into y: y2's kept
 * strides join the coalescing, and the local memory and the parts'
 * buffer hold a second half for its sums.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/env_choice.h"
#include "plugins/opencl/ocl.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define FR_DIMS 8
#define FR_OPS (1 + DLA_FUSED_MAX_INPUTS)
/* Work-groups aimed at per compute unit: a CPU device's unit runs a group
 * as one loop and wants a few, a GPU's hides latency with many. */
#define GROUPS_PER_UNIT_CPU 4
#define GROUPS_PER_UNIT_GPU 16
/* The fewest tiles a work-item of a part gets, so a part is worth its
 * group and its partial sum. */
#define MIN_TILES 4
/* About how many positions a work-item of a CPU device sums in one run,
 * the fewest that make runs worth it, and the most work-items across
 * tiles in a CPU device's group (a group runs on one core there: more
 * groups, not larger ones, spread a sum over the cores). */
#define RUN 512
#define RUN_MIN 64
#define CPU_LANES 64

/* fused_reduce.cl's dla_fr. */
typedef struct fr {
    cl_long outputs, parts, tiles, chunks, clen, inner, lanes_in, lanes_out, lanes_pow2;
    cl_long nk, nr, nred;
    cl_long kd[FR_DIMS], rd[FR_DIMS];
    cl_long off[FR_OPS];
    cl_long kst[FR_OPS][FR_DIMS], rst[FR_OPS][FR_DIMS];
    cl_long off2, kst2[FR_DIMS];
} fr;
_Static_assert(FR_DIMS == DLA_MAX_DIMS, "fused_reduce.cl's dla_fr holds every dim");
_Static_assert(FR_OPS == 9, "fused_reduce.cl's dla_fr holds y and 8 inputs");

/* Splits and coalesces the dims: op 0 is y, op 1 + i input i, and the
 * pair's y2 kept apart (off2, kst2). A summed dim's strides in y and y2
 * stay 0 (they are written once per output). */
static void split_dims(fr *f, const dla_fused_reduce_args *r, int pair)
{
    const dla_fused_args *a = &r->program;
    const dla_view *shape = &a->y;
    const int nops = 1 + a->ninputs;
    const dla_view *v[FR_OPS];
    v[0] = &r->y;
    for (int i = 0; i < a->ninputs; i++)
        v[1 + i] = &a->inputs[i];
    f->outputs = 1;
    f->nred = 1;
    for (int op = 0; op < nops; op++)
        f->off[op] = v[op]->offset;
    if (pair)
        f->off2 = r->y2.offset;
    for (int d = 0; d < shape->ndims; d++) {
        const int64_t n = shape->dims[d];
        if (n == 1)
            continue;
        if (r->y.dims[d] == n) {
            f->outputs *= n;
            const int j = (int)f->nk - 1;
            int merge = j >= 0;
            for (int op = 0; op < nops && merge; op++)
                merge = v[op]->strides[d] == f->kst[op][j] * f->kd[j];
            if (merge && pair)
                merge = r->y2.strides[d] == f->kst2[j] * f->kd[j];
            if (merge) {
                f->kd[j] *= n;
                continue;
            }
            f->kd[f->nk] = n;
            for (int op = 0; op < nops; op++)
                f->kst[op][f->nk] = v[op]->strides[d];
            if (pair)
                f->kst2[f->nk] = r->y2.strides[d];
            f->nk++;
        } else {
            f->nred *= n;
            const int j = (int)f->nr - 1;
            int merge = j >= 0;
            for (int op = 1; op < nops && merge; op++)
                merge = v[op]->strides[d] == f->rst[op][j] * f->rd[j];
            if (merge) {
                f->rd[j] *= n;
                continue;
            }
            f->rd[f->nr] = n;
            for (int op = 1; op < nops; op++)
                f->rst[op][f->nr] = v[op]->strides[d];
            f->nr++;
        }
    }
    if (f->nr == 0) /* nothing summed: one position per output */
        f->nr = 1, f->rd[0] = 1;
}

/* Whether rows are summed in runs, one work-item each (a CPU device's
 * work-items are loops on its cores, which want to stream), or across
 * lanes (neighbouring work-items read neighbouring elements, as a GPU
 * wants). DLACCEL_OPENCL_FUSED_REDUCE=runs or =lanes forces one (the tests
 * run both on PoCL). */
static int in_runs(const dla__ocl_device *d, int64_t inner)
{
    static const char *const values[] = {"runs", "lanes", NULL};
    static atomic_int warned;
    const int v = dla__env_choice("DLACCEL_OPENCL_FUSED_REDUCE", values, &warned, dla__ocl_host->log);
    if (v >= 0)
        return v == 0;
    return d->cpu && inner >= RUN_MIN;
}

/* The launch: lanes, tiles and parts for groups of at most max_group. */
static void plan_launch(const dla__ocl_device *d, fr *f, size_t max_group)
{
    f->inner = f->rd[0];
    const int64_t rows = f->nred / f->inner;
    const int runs = in_runs(d, f->inner);
    int64_t most_lanes = (int64_t)max_group;
    if (runs) {
        const int64_t n = (f->inner + RUN - 1) / RUN;
        f->lanes_in = 1;
        f->clen = (f->inner + n - 1) / n;
    } else {
        f->lanes_in = f->inner < most_lanes ? f->inner : most_lanes;
        f->clen = f->lanes_in;
    }
    if (d->cpu && most_lanes > f->lanes_in * CPU_LANES)
        most_lanes = f->lanes_in * CPU_LANES;
    f->chunks = (f->inner + f->clen - 1) / f->clen;
    f->tiles = rows * f->chunks;
    /* As many lanes across tiles as fit, fewer where that evens out the
     * tiles per lane. */
    int64_t out = most_lanes / f->lanes_in;
    if (out > f->tiles)
        out = f->tiles;
    const int64_t per = (f->tiles + out - 1) / out;
    f->lanes_out = (f->tiles + per - 1) / per;
    const int64_t target = (int64_t)d->units * (d->cpu ? GROUPS_PER_UNIT_CPU : GROUPS_PER_UNIT_GPU);
    f->parts = 1;
    if (f->outputs < target) {
        int64_t parts = (target + f->outputs - 1) / f->outputs;
        const int64_t most = f->tiles / (MIN_TILES * f->lanes_out);
        if (parts > most)
            parts = most;
        f->parts = parts > 1 ? parts : 1;
    }
    const int64_t n = f->lanes_in * f->lanes_out;
    f->lanes_pow2 = 1;
    while (f->lanes_pow2 * 2 <= n)
        f->lanes_pow2 *= 2;
}

dla_status dla__ocl_fused_reduce(void *dev, const dla_fused_reduce_args *args)
{
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_fused_reduce(&d->kit, args);
    if (s != DLA_OK)
        return s;
    const int pair = dla_kit_fused_reduce_pair(args);
    fr f;
    memset(&f, 0, sizeof f);
    split_dims(&f, args, pair);
    if (f.outputs == 0)
        return DLA_OK;
    const int mean = args->op == DLA_REDUCE_MEAN;
    if (f.nred == 0) { /* an empty sum: 0, and its mean NaN */
        s = dla__ocl_fill(dev, &args->y, mean ? NAN : 0.0);
        return s == DLA_OK && pair ? dla__ocl_fill(dev, &args->y2, mean ? NAN : 0.0) : s;
    }
    const dla_fused_args *a = &args->program;
    const int f64 = a->dtype == DLA_F64;
    const char *T = f64 ? "double" : "float", *kn = "fused_reduce";
    const cl_mem ybuf = dla__ocl_buf(args->y.mem);
    const cl_mem y2buf = pair ? dla__ocl_buf(args->y2.mem) : ybuf;
    const cl_int reg2 = pair ? args->reg2 : 0, want_pair = pair;
    /* The sums' halves: a pair keeps its second in local memory and in
     * the parts' buffer after the first. */
    const size_t halves = pair ? 2 : 1;
    pthread_mutex_lock(&d->lock);
    cl_kernel kern = dla__ocl_fused_compiled(d, a, 1, pair ? args->reg2 : -1), comb = NULL;
    if (!kern)
        s = dla__ocl_kernel(d, DLA__OCL_PROG_FUSED_REDUCE,
                            DLA__OCL_K_FUSED_REDUCE + (pair ? 4 : 0) + f64, &kern,
                            "fused_reduce_%s%s", pair ? "pair_" : "", T);
    size_t max_group = d->local;
    if (s == DLA_OK) {
        size_t wg = 0;
        if (clGetKernelWorkGroupInfo(kern, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                     NULL) == CL_SUCCESS &&
            wg > 0 && wg < max_group)
            max_group = wg;
        plan_launch(d, &f, max_group);
        if (f.parts > 1)
            s = dla__ocl_kernel(d, DLA__OCL_PROG_FUSED_REDUCE, DLA__OCL_K_FUSED_REDUCE + 2 + f64,
                                &comb, "fused_reduce_combine_%s", T);
    }
    const size_t acc = d->fp64 ? sizeof(cl_double) : sizeof(cl_float);
    const size_t groups = (size_t)(f.outputs * f.parts), group = (size_t)(f.lanes_in * f.lanes_out);
    cl_mem plan = NULL, part_v = NULL;
    if (s == DLA_OK && !(plan = dla__ocl_scratch(d, sizeof f, &f, kn)))
        s = DLA_ERR_OUT_OF_MEMORY;
    if (s == DLA_OK && f.parts > 1 &&
        !(part_v = dla__ocl_scratch(d, halves * groups * acc, NULL, kn)))
        s = DLA_ERR_OUT_OF_MEMORY;
    const cl_int want_mean = mean;
    const cl_mem pv = part_v ? part_v : ybuf;
#define A DLA__OCL_A
    if (s == DLA_OK)
        s = dla__ocl_args(kern, kn, 0, A(plan), A(want_mean), A(ybuf), A(pv), DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_arg(kern, 4, halves * group * acc, NULL, kn);
    /* Inputs past ninputs are bound to y and never read. */
    for (int i = 0; i < DLA_FUSED_MAX_INPUTS && s == DLA_OK; i++) {
        const cl_mem b = i < a->ninputs ? dla__ocl_buf(a->inputs[i].mem) : ybuf;
        s = DLA__OCL_ARG(kern, (cl_uint)(5 + i), b, kn);
    }
    if (s == DLA_OK)
        s = dla__ocl_fused_prog_arg(kern, 5 + DLA_FUSED_MAX_INPUTS, a, kn);
    /* The single sum's kernels never read reg2 and y2 (y2 bound to y). */
    if (s == DLA_OK)
        s = dla__ocl_args(kern, kn, 6 + DLA_FUSED_MAX_INPUTS, A(reg2), A(y2buf), DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_launch_groups(d, kern, groups, group, kn);
    if (s == DLA_OK && comb) {
        s = dla__ocl_args(comb, kn, 0, A(plan), A(want_mean), A(ybuf), A(part_v), A(want_pair),
                          A(y2buf), DLA__OCL_END);
        if (s == DLA_OK)
            s = dla__ocl_launch1(d, comb, (size_t)f.outputs, kn);
    }
#undef A
    pthread_mutex_unlock(&d->lock);
    if (plan)
        clReleaseMemObject(plan);
    if (part_v)
        clReleaseMemObject(part_v);
    return s;
}

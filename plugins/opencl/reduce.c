/*
 * reduce.c - sum, mean, max and min on OpenCL devices (kernels in
 * reduce.cl).
 *
 * x's dims are split into kept and reduced ones and each list coalesced,
 * as the cpu plugin does (merging reduced dims only where that keeps the
 * column-major position the index reports). Outputs are work-items; when
 * they are too few to fill the device (a full sum) each output's positions
 * are dealt to up to `parts` work-items and a second kernel merges their
 * partial results in part order.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

#define RD 8
/* Work-items a reduction aims for on a GPU, and the fewest positions a
 * part gets. */
#define TARGET_ITEMS 16384
#define MIN_PART 256

/* reduce.cl's dla_red: the kit's split (all longs, in its order), then
 * the launch's parts and layout. */
typedef struct red {
    dla_kit_reduce g;
    cl_long parts, chunked;
} red;
_Static_assert(RD == DLA_MAX_DIMS, "reduce.cl's dla_red holds every dim");

/* r->g is the kit's split of the call, with at least one output. */
static void make_plan(const dla__ocl_device *d, red *r)
{
    /* A CPU runs a few long runs best (a work-item per core and then
     * some), a GPU many interleaved work-items. */
    const int64_t target = d->cpu ? 8 * (int64_t)d->units : TARGET_ITEMS;
    r->chunked = d->cpu;
    r->parts = 1;
    if (r->g.outputs < target && r->g.nred >= 2 * MIN_PART) {
        int64_t parts = target / r->g.outputs;
        if (parts > r->g.nred / MIN_PART)
            parts = r->g.nred / MIN_PART;
        r->parts = parts > 1 ? parts : 1;
    }
}

dla_status dla__ocl_reduce(void *dev, const dla_reduce_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_reduce(&d->kit, args);
    if (s != DLA_OK)
        return s;
    red r;
    dla_kit_reduce_split(args, &r.g);
    /* No outputs (a dim of 0 kept: an empty batch): nothing to write, and
     * make_plan would divide by the count. */
    if (r.g.outputs == 0)
        return DLA_OK;
    make_plan(d, &r);
    const int sum = args->op == DLA_REDUCE_SUM || args->op == DLA_REDUCE_MEAN;
    char bx[DLA_KIT_DIMS_BUF];
    if (r.g.nred == 0 && !sum)
        return h->error(DLA_ERR_SHAPE,
                        "opencl reduce: argument x: dims %s leave nothing to take the %s of",
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims),
                        args->op == DLA_REDUCE_MAX ? "max" : "min");
    const cl_int want_index = args->index.mem != NULL;
    if (want_index && r.g.nred > INT32_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "opencl reduce: argument index: %lld reduced elements of x (%s) exceed "
                        "int32",
                        (long long)r.g.nred,
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims));
    const int f64 = args->x.dtype == DLA_F64;
    const char *T = f64 ? "double" : "float";
    const int family = sum ? 0 : args->op == DLA_REDUCE_MAX ? 1 : 2;
    static const char *const names[] = {"sum", "max", "min"};
    const cl_int mean = args->op == DLA_REDUCE_MEAN;
    const cl_mem x = dla__ocl_buf(args->x.mem), y = dla__ocl_buf(args->y.mem);
    const cl_mem ix = want_index ? dla__ocl_buf(args->index.mem) : y;
    const size_t items = (size_t)(r.g.outputs * r.parts);
    cl_mem pv = y, pi = y;
    if (r.parts > 1) {
        const size_t vsize = sum ? (d->fp64 ? 8 : 4) : dla_kit_dtype_size(args->x.dtype);
        pv = dla__ocl_scratch(d, items * vsize, NULL, "reduce");
        pi = pv && !sum ? dla__ocl_scratch(d, items * sizeof(cl_long), NULL, "reduce") : pv;
        if (!pv || !pi) {
            if (pv)
                clReleaseMemObject(pv);
            return DLA_ERR_OUT_OF_MEMORY;
        }
    }
    pthread_mutex_lock(&d->lock);
    cl_kernel k1, k2 = NULL;
    const int slot = DLA__OCL_K_REDUCE + family * 4 + f64;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_REDUCE, slot, &k1, "reduce_%s_%s", names[family], T);
    if (s == DLA_OK && r.parts > 1)
        s = dla__ocl_kernel(d, DLA__OCL_PROG_REDUCE, slot + 2, &k2, "combine_%s_%s",
                            names[family], T);
    const char *kn = "reduce";
#define A DLA__OCL_A
    if (s == DLA_OK && sum) {
        s = dla__ocl_args(k1, kn, 0, A(r), A(mean), A(y), A(x), A(pv), DLA__OCL_END);
        if (s == DLA_OK)
            s = dla__ocl_launch1(d, k1, items, kn);
        if (s == DLA_OK && k2)
            s = dla__ocl_args(k2, kn, 0, A(r), A(mean), A(y), A(pv), DLA__OCL_END);
    } else if (s == DLA_OK) {
        s = dla__ocl_args(k1, kn, 0, A(r), A(want_index), A(y), A(x), A(ix), A(pv), A(pi),
                          DLA__OCL_END);
        if (s == DLA_OK)
            s = dla__ocl_launch1(d, k1, items, kn);
        if (s == DLA_OK && k2)
            s = dla__ocl_args(k2, kn, 0, A(r), A(want_index), A(y), A(ix), A(pv), A(pi),
                              DLA__OCL_END);
    }
#undef A
    if (s == DLA_OK && k2)
        s = dla__ocl_launch1(d, k2, (size_t)r.g.outputs, kn);
    pthread_mutex_unlock(&d->lock);
    if (r.parts > 1) {
        clReleaseMemObject(pv);
        if (pi != pv)
            clReleaseMemObject(pi);
    }
    return s;
}

/*
 * conv.c - convolution forward, backward data and backward filter on
 * OpenCL devices: the plugin kit's argument checks, then the direct kernels
 * of conv.cl, which read and write every operand through its view's
 * strides (so no view is declined and nothing is copied dense first).
 *
 * Backward filter sums over every (image, output position) pair for each
 * weight: with few weights that is a long sum, so the batch is dealt to
 * parts, and conv_wsum adds the parts in order.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

#define TARGET_ITEMS 16384

/* conv.cl's dla_conv: the kit's geometry (all longs, in its order), then
 * the parts backward filter deals the batch to. */
typedef struct conv {
    dla_kit_conv g;
    cl_long parts;
} conv;
_Static_assert(sizeof(conv) == sizeof(dla_kit_conv) + sizeof(cl_long),
               "conv.cl's dla_conv is longs only");

enum { FORWARD = DLA_KIT_CONV_FORWARD, BACKWARD_DATA = DLA_KIT_CONV_BACKWARD_DATA,
       BACKWARD_FILTER = DLA_KIT_CONV_BACKWARD_FILTER };

static dla_status run(void *dev, const dla_conv_args *a, int dir)
{
    dla__ocl_device *d = dev;
    conv p = {.parts = 1};
    dla_status s = dla_kit_conv_prepare(&d->kit, a, (dla_kit_conv_dir)dir, &p.g);
    if (s != DLA_OK)
        return s;
    const char *kn = dla_kit_conv_name((dla_kit_conv_dir)dir);
    const int f64 = a->dtype == DLA_F64;
    const char *T = f64 ? "double" : "float";
    const int64_t nw = p.g.ntaps * p.g.Cg * p.g.Fg * p.g.G;
    const int64_t items = dir == FORWARD         ? p.g.out_px * p.g.F * p.g.batch
                          : dir == BACKWARD_DATA ? p.g.in_px * p.g.C * p.g.batch
                                                 : nw;
    if (items == 0)
        return DLA_OK;
    const cl_mem w = dla__ocl_buf(a->w.mem);
    /* x may have no elements (an input of size 0 that padding turns into
     * outputs): nothing then reads it. */
    const cl_mem x = dla_kit_numel(&a->x) ? dla__ocl_buf(a->x.mem) : w;
    /* y is not read when it has no elements (an empty batch or output). */
    const int64_t ny = p.g.out_px * p.g.F * p.g.batch;
    const cl_mem y = ny ? dla__ocl_buf(a->y.mem) : dir == BACKWARD_DATA ? x : w;
    cl_mem part_v = NULL;
    if (dir == BACKWARD_FILTER && p.g.batch > 1) {
        /* Few weights: their sums over the batch dealt to parts, each a
         * run of images. */
        const int64_t target = d->cpu ? 8 * (int64_t)d->units : TARGET_ITEMS;
        int64_t parts = nw < target ? target / nw : 1;
        if (parts > p.g.batch)
            parts = p.g.batch;
        p.parts = parts > 1 ? parts : 1;
        if (p.parts > 1 &&
            !(part_v = dla__ocl_scratch(d, (size_t)(nw * p.parts) * (f64 ? 8 : 4), NULL, kn)))
            return DLA_ERR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&d->lock);
    cl_kernel k, k2 = NULL;
    static const char *const names[] = {"conv_fwd", "conv_bwd_data", "conv_bwd_filter"};
    s = dla__ocl_kernel(d, DLA__OCL_PROG_CONV, DLA__OCL_K_CONV + 2 * dir + f64, &k, "%s_%s",
                        names[dir], T);
    if (s == DLA_OK && part_v)
        s = dla__ocl_kernel(d, DLA__OCL_PROG_CONV, DLA__OCL_K_CONV + 6 + f64, &k2, "conv_wsum_%s",
                            T);
#define A DLA__OCL_A
    if (s == DLA_OK && dir == FORWARD) {
        const cl_int has_bias = a->bias.mem != NULL;
        const cl_mem b = has_bias ? dla__ocl_buf(a->bias.mem) : y;
        s = dla__ocl_args(k, kn, 0, A(p), A(has_bias), A(y), A(x), A(w), A(b), DLA__OCL_END);
    } else if (s == DLA_OK && dir == BACKWARD_DATA) {
        const cl_int st1 = p.g.st[0] == 1 && p.g.st[1] == 1 && p.g.st[2] == 1;
        s = dla__ocl_args(k, kn, 0, A(p), A(st1), A(x), A(y), A(w), DLA__OCL_END);
    } else if (s == DLA_OK) {
        const cl_mem pv = part_v ? part_v : w;
        s = dla__ocl_args(k, kn, 0, A(p), A(w), A(x), A(y), A(pv), DLA__OCL_END);
    }
    if (s == DLA_OK && dir == BACKWARD_FILTER) {
        s = dla__ocl_launch1(d, k, (size_t)(items * p.parts), kn);
    } else if (s == DLA_OK) {
        const int64_t range[3] = {dir == FORWARD ? p.g.out[0] : p.g.in[0],
                                  dir == FORWARD ? p.g.out[1] * p.g.out[2] : p.g.in[1] * p.g.in[2],
                                  (dir == FORWARD ? p.g.F : p.g.C) * p.g.batch};
        s = dla__ocl_launch3(d, k, range, kn);
    }
    if (s == DLA_OK && k2)
        s = dla__ocl_args(k2, kn, 0, A(p), A(w), A(part_v), DLA__OCL_END);
#undef A
    if (s == DLA_OK && k2)
        s = dla__ocl_launch1(d, k2, (size_t)nw, kn);
    pthread_mutex_unlock(&d->lock);
    if (part_v)
        clReleaseMemObject(part_v);
    return s;
}

dla_status dla__ocl_conv_forward(void *dev, const dla_conv_args *args)
{
    return run(dev, args, FORWARD);
}

dla_status dla__ocl_conv_backward_data(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BACKWARD_DATA);
}

dla_status dla__ocl_conv_backward_filter(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BACKWARD_FILTER);
}

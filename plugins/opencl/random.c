/*
 * random.c - the random kernel (ABI 1.3) on OpenCL devices: the library's
 * Philox stream drawn in place, one work-item per block of it (random.cl).
 *
 * The program is built from dlaccel/plugin_philox.h, the same text the host
 * and the cpu plugin compile, under FP_CONTRACT OFF, so the numbers are
 * the cpu plugin's to the bit (check-plugin compares them exactly).
 * Uniform singles need no double arithmetic and run on every device;
 * doubles and normals (whose transform is defined in double) need
 * cl_khr_fp64, and supports() says no without it: the core then draws
 * those on the host and copies them, with the same bits.
 */
#include "plugins/opencl/ocl.h"

#include <string.h>

/* dla_rview of random.cl. */
#define RMAX 8
typedef struct rview {
    cl_long dims[RMAX];
    cl_long st[RMAX];
    cl_long off;
    cl_long n;
} rview;
_Static_assert(DLA_MAX_DIMS <= RMAX, "random.cl's views hold DLA_MAX_DIMS dims");

dla_status dla__ocl_random(void *dev, const dla_random_args *args)
{
    const dla_plugin_host *h = dla__ocl_host;
    dla__ocl_device *d = dev;
    dla_status s = dla_kit_check_random(&d->kit, args);
    if (s != DLA_OK)
        return s;
    const int normal = args->dist == DLA_RANDOM_NORMAL;
    const dla_view *y = &args->y;
    const int f64 = y->dtype == DLA_F64;
    if (normal && !d->fp64)
        return h->error(DLA_ERR_UNSUPPORTED, "opencl random: normals are defined in double, "
                        "which this device lacks (cl_khr_fp64)");
    const int64_t n = dla_kit_numel(y);
    if (n == 0)
        return DLA_OK;
    rview v;
    memset(&v, 0, sizeof v);
    for (int i = 0; i < RMAX; i++) {
        v.dims[i] = i < y->ndims ? y->dims[i] : 1;
        v.st[i] = i < y->ndims ? y->strides[i] : 0;
    }
    v.off = y->offset;
    v.n = n;
    const cl_long blocks = normal || f64 ? (n + 1) / 2 : (n + 3) / 4;
    const cl_ulong seed = args->seed, counter = args->counter;
    const cl_mem buf = dla__ocl_buf(y->mem);
    static const char *const names[2][2] = {{"random_uniform_f32", "random_uniform_f64"},
                                            {"random_normal_f32", "random_normal_f64"}};
    const char *name = names[normal][f64];
    pthread_mutex_lock(&d->lock);
    cl_kernel k;
    s = dla__ocl_kernel(d, DLA__OCL_PROG_RANDOM, DLA__OCL_K_RANDOM + 2 * normal + f64, &k, "%s",
                        name);
    if (s == DLA_OK)
        s = dla__ocl_args(k, "random", 0, DLA__OCL_A(buf), DLA__OCL_A(v), DLA__OCL_A(seed),
                          DLA__OCL_A(counter), DLA__OCL_A(blocks), DLA__OCL_END);
    if (s == DLA_OK)
        s = dla__ocl_launch1(d, k, (size_t)blocks, "random");
    pthread_mutex_unlock(&d->lock);
    return s;
}

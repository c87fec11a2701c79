/*
 * random.cl - the random kernel (ABI 1.3): numbers of the library's Philox
 * stream, whose definition (dlaccel/plugin_philox.h, C and OpenCL C) the
 * plugin compiles in front of this file, so the device computes exactly
 * what the cpu plugin does.
 *
 * A work-item makes one block of the stream (four single uniforms, or two
 * doubles or normals) and writes each element where the view puts it: the
 * element's column-major index split over the view's dims (dims of 1
 * padded to DLA_RMAX). Normals need double arithmetic, so their kernels
 * exist only with DLA_FP64.
 */

#define DLA_RMAX 8

typedef struct dla_rview {
    long dims[DLA_RMAX];
    long st[DLA_RMAX];
    long off;
    long n;
} dla_rview;

/* Element i's place in y (elements). */
static long rview_at(const dla_rview *v, long i)
{
    long at = v->off;
    for (int d = 0; d < DLA_RMAX && i; d++) {
        at += (i % v->dims[d]) * v->st[d];
        i /= v->dims[d];
    }
    return at;
}

__kernel void random_uniform_f32(__global float *y, dla_rview v, ulong seed, ulong counter,
                                 long blocks)
{
    const long b = get_global_id(0);
    if (b >= blocks)
        return;
    uint32_t r[4];
    dla_px_block(seed, counter + (ulong)b, r);
    for (int j = 0; j < 4 && b * 4 + j < v.n; j++)
        y[rview_at(&v, b * 4 + j)] = dla_px_u24(r[j]);
}

#ifdef DLA_FP64

__kernel void random_uniform_f64(__global double *y, dla_rview v, ulong seed, ulong counter,
                                 long blocks)
{
    const long b = get_global_id(0);
    if (b >= blocks)
        return;
    uint32_t r[4];
    dla_px_block(seed, counter + (ulong)b, r);
    y[rview_at(&v, b * 2)] = dla_px_u53(r[0], r[1]);
    if (b * 2 + 1 < v.n)
        y[rview_at(&v, b * 2 + 1)] = dla_px_u53(r[2], r[3]);
}

__kernel void random_normal_f32(__global float *y, dla_rview v, ulong seed, ulong counter,
                                long blocks)
{
    const long b = get_global_id(0);
    if (b >= blocks)
        return;
    uint32_t r[4];
    double z0, z1;
    dla_px_block(seed, counter + (ulong)b, r);
    dla_px_normal_pair(r, &z0, &z1);
    y[rview_at(&v, b * 2)] = (float)z0;
    if (b * 2 + 1 < v.n)
        y[rview_at(&v, b * 2 + 1)] = (float)z1;
}

__kernel void random_normal_f64(__global double *y, dla_rview v, ulong seed, ulong counter,
                                long blocks)
{
    const long b = get_global_id(0);
    if (b >= blocks)
        return;
    uint32_t r[4];
    double z0, z1;
    dla_px_block(seed, counter + (ulong)b, r);
    dla_px_normal_pair(r, &z0, &z1);
    y[rview_at(&v, b * 2)] = z0;
    if (b * 2 + 1 < v.n)
        y[rview_at(&v, b * 2 + 1)] = z1;
}

#endif

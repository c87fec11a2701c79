/*
 * common.cl - the start of every program of the opencl plugin: the float
 * rules, the double extension, and the iteration space that elementwise
 * kernels walk.
 *
 * FP_CONTRACT is off so that no a * b + c becomes an fma: the one-op
 * kernels, the fused program and the cpu plugin (built without -mfma) then
 * round every step the same way.
 *
 * A space is the coalesced dims (at most DLA_KD, the host splits larger
 * ones into several launches) shared by the operands of one launch, and a
 * launch is an NDRange of those dims: work-item (i, j, k) is the element
 * at those coordinates, so no work-item divides to find its element
 * (64-bit division, and the loops around it, kept PoCL from vectorizing
 * the kernels: a dense add ran 8 times slower). Each operand is an element
 * offset and a stride per dim (dla_vw). The first two dims are rounded up
 * to the work-group size, hence the bound.
 */
#pragma OPENCL FP_CONTRACT OFF
#ifdef DLA_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define DLA_KD 3

typedef struct dla_shape {
    long dims[DLA_KD];
} dla_shape;

typedef struct dla_vw {
    long off;
    long st[DLA_KD];
} dla_vw;

static long dla_at(const dla_vw *v, const long *c)
{
    return v->off + c[0] * v->st[0] + c[1] * v->st[1] + c[2] * v->st[2];
}

/* The prologue of an elementwise kernel: c, the element's coordinates. */
#define DLA_ELEMENT(sh, c)                                                     \
    const long c[DLA_KD] = {get_global_id(0), get_global_id(1),                \
                            get_global_id(2)};                                 \
    if (c[0] >= (sh).dims[0] || c[1] >= (sh).dims[1])                         \
        return

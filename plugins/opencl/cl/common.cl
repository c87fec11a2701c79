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
 * ones into several launches) shared by the operands of one launch; each
 * operand is an element offset and a stride per dim (dla_vw). Dims past
 * ndims are 1 with stride 0, so the offset sums need no bounds.
 */
#pragma OPENCL FP_CONTRACT OFF
#ifdef DLA_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define DLA_KD 4

typedef struct dla_shape {
    long numel;
    long ndims;
    long dims[DLA_KD];
} dla_shape;

typedef struct dla_vw {
    long off;
    long st[DLA_KD];
} dla_vw;

/* Coordinates of element i of the space, column-major. 32-bit division
 * where the space allows it: 64-bit division is several times slower on
 * every device. */
static void dla_coords(const dla_shape *sh, long i, long *c)
{
    if (sh->ndims <= 1) {
        c[0] = i;
        for (int d = 1; d < DLA_KD; d++)
            c[d] = 0;
    } else if (sh->numel <= 0xffffffffL) {
        uint u = (uint)i;
        for (int d = 0; d < DLA_KD - 1; d++) {
            const uint n = (uint)sh->dims[d];
            c[d] = u % n;
            u /= n;
        }
        c[DLA_KD - 1] = u;
    } else {
        for (int d = 0; d < DLA_KD - 1; d++) {
            c[d] = i % sh->dims[d];
            i /= sh->dims[d];
        }
        c[DLA_KD - 1] = i;
    }
}

static long dla_at(const dla_vw *v, const long *c)
{
    long off = v->off;
    for (int d = 0; d < DLA_KD; d++)
        off += c[d] * v->st[d];
    return off;
}

/* The prologue of an elementwise kernel: i, the element; c, its coordinates. */
#define DLA_ELEMENT(sh, c)                                                     \
    const long dla_i = get_global_id(0);                                       \
    if (dla_i >= (sh).numel)                                                   \
        return;                                                                \
    long c[DLA_KD];                                                            \
    dla_coords(&(sh), dla_i, c)

/*
 * reduce.cl - sum, mean, max and min over the reduced dims, with the int32
 * position of max/min within the reduced block.
 *
 * The host splits x's dims into kept ones (one output per combination)
 * and reduced ones, each coalesced (dla_red). Work-item (o, part) reduces
 * a share of output o's positions: on a GPU the positions part, part +
 * parts, part + 2 parts, ... (neighbouring work-items read neighbouring
 * elements), on a CPU one contiguous run (a work-item is a loop on one
 * core there, which wants to stream). With one part the work-item writes
 * y itself; with several, reduce_* writes partial results and combine_*
 * merges them per output.
 *
 * Sums are kept in double where the device has it (as the cpu plugin
 * keeps them), else in float with a compensation term, which is dropped
 * once the sum is not finite: (inf - s) - inf is NaN, and carried on it
 * made the sum of an infinity and a later finite term NaN, not infinite.
 * max/min: the first NaN wins, else the largest (smallest) value at its
 * first position; the merge compares positions, since parts interleave.
 */
#define DLA_RD 8

typedef struct dla_red {
    long outputs, nred, nk, nr; /* the plugin kit's dla_kit_reduce, */
    long xoff, yoff, ioff;      /* member for member */
    long kd[DLA_RD], kx[DLA_RD], ky[DLA_RD], ki[DLA_RD];
    long rd[DLA_RD], rx[DLA_RD];
    long parts, chunked;
} dla_red;

#ifdef DLA_FP64
#define ACC double
#else
#define ACC float
#endif

/* Offsets in x, y and index of output o. */
static void red_output(const dla_red *r, long o, long *xo, long *yo, long *io)
{
    *xo = r->xoff, *yo = r->yoff, *io = r->ioff;
    for (int d = 0; d < r->nk; d++) {
        const long i = o % r->kd[d];
        o /= r->kd[d];
        *xo += i * r->kx[d], *yo += i * r->ky[d], *io += i * r->ki[d];
    }
}

/* The positions [*p0, *p1) by *step of part. */
static void red_share(const dla_red *r, long part, long *p0, long *p1, long *step)
{
    if (r->chunked) {
        *p0 = r->nred * part / r->parts, *p1 = r->nred * (part + 1) / r->parts, *step = 1;
    } else {
        *p0 = part, *p1 = r->nred, *step = r->parts;
    }
}

/* Offset in x of reduced position p, from the output's offset. */
static long red_pos(const dla_red *r, long p)
{
    if (r->nr == 1)
        return p * r->rx[0];
    long off = 0;
    for (int d = 0; d < r->nr; d++) {
        off += (p % r->rd[d]) * r->rx[d];
        p /= r->rd[d];
    }
    return off;
}

#define DEF_SUM(T)                                                             \
    __kernel void reduce_sum_##T(dla_red r, int mean, __global T *y,           \
                                 __global const T *x, __global ACC *part_v)    \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        if (gid >= r.outputs * r.parts)                                        \
            return;                                                            \
        const long o = gid / r.parts, part = gid % r.parts;                    \
        long xo, yo, io;                                                       \
        red_output(&r, o, &xo, &yo, &io);                                      \
        ACC s = 0, comp = 0;                                                   \
        long p0, p1, step;                                                     \
        red_share(&r, part, &p0, &p1, &step);                                  \
        for (long p = p0; p < p1; p += step) {                                 \
            const ACC v = (ACC)x[xo + red_pos(&r, p)] - comp;                  \
            const ACC t = s + v;                                               \
            comp = sizeof(ACC) > sizeof(float) || !isfinite(t) ? 0             \
                                                   : (t - s) - v;              \
            s = t;                                                             \
        }                                                                      \
        if (r.parts > 1) {                                                     \
            part_v[gid] = s;                                                   \
            return;                                                            \
        }                                                                      \
        y[yo] = mean ? (T)(s / (ACC)r.nred) : (T)s;                            \
    }                                                                          \
    __kernel void combine_sum_##T(dla_red r, int mean, __global T *y,          \
                                  __global const ACC *part_v)                  \
    {                                                                          \
        const long o = get_global_id(0);                                       \
        if (o >= r.outputs)                                                    \
            return;                                                            \
        long xo, yo, io;                                                       \
        red_output(&r, o, &xo, &yo, &io);                                      \
        ACC s = 0;                                                             \
        for (long part = 0; part < r.parts; part++)                            \
            s += part_v[o * r.parts + part];                                   \
        y[yo] = mean ? (T)(s / (ACC)r.nred) : (T)s;                            \
    }

/* (v, at) replaces (best, pos) when it is the first, a NaN over a number,
 * a better number, or (merging interleaved parts) an equal one earlier. */
#define TAKES(CMP, v, at, best, pos)                                           \
    ((pos) < 0 || (isnan(v) ? !isnan(best) || (at) < (pos)                     \
                            : !isnan(best) && (CMP((v), (best)) ||             \
                                               ((v) == (best) && (at) < (pos)))))
#define GT(a, b) ((a) > (b))
#define LT(a, b) ((a) < (b))

#define DEF_EXTREME(name, CMP, T)                                              \
    __kernel void reduce_##name##_##T(dla_red r, int want_index,               \
                                      __global T *y, __global const T *x,      \
                                      __global int *index,                     \
                                      __global T *part_v,                      \
                                      __global long *part_i)                   \
    {                                                                          \
        const long gid = get_global_id(0);                                     \
        if (gid >= r.outputs * r.parts)                                        \
            return;                                                            \
        const long o = gid / r.parts, part = gid % r.parts;                    \
        long xo, yo, io;                                                       \
        red_output(&r, o, &xo, &yo, &io);                                      \
        T best = 0;                                                            \
        long pos = -1, p0, p1, step;                                           \
        red_share(&r, part, &p0, &p1, &step);                                  \
        for (long p = p0; p < p1; p += step) {                                 \
            const T v = x[xo + red_pos(&r, p)];                                \
            if (TAKES(CMP, v, p, best, pos))                                   \
                best = v, pos = p;                                             \
        }                                                                      \
        if (r.parts > 1) {                                                     \
            part_v[gid] = best;                                                \
            part_i[gid] = pos;                                                 \
            return;                                                            \
        }                                                                      \
        y[yo] = best;                                                          \
        if (want_index)                                                        \
            index[io] = (int)pos;                                              \
    }                                                                          \
    __kernel void combine_##name##_##T(dla_red r, int want_index,              \
                                       __global T *y, __global int *index,     \
                                       __global const T *part_v,               \
                                       __global const long *part_i)            \
    {                                                                          \
        const long o = get_global_id(0);                                       \
        if (o >= r.outputs)                                                    \
            return;                                                            \
        long xo, yo, io;                                                       \
        red_output(&r, o, &xo, &yo, &io);                                      \
        T best = 0;                                                            \
        long pos = -1;                                                         \
        for (long part = 0; part < r.parts; part++) {                          \
            const T v = part_v[o * r.parts + part];                            \
            const long at = part_i[o * r.parts + part];                        \
            if (at >= 0 && TAKES(CMP, v, at, best, pos))                       \
                best = v, pos = at;                                            \
        }                                                                      \
        y[yo] = best;                                                          \
        if (want_index)                                                        \
            index[io] = (int)pos;                                              \
    }

DEF_SUM(float)
DEF_EXTREME(max, GT, float)
DEF_EXTREME(min, LT, float)
#ifdef DLA_FP64
DEF_SUM(double)
DEF_EXTREME(max, GT, double)
DEF_EXTREME(min, LT, double)
#endif

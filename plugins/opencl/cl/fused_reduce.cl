/*
 * fused_reduce.cl - a fused program summed over some dims (ABI 1.3): the
 * program is evaluated where its inputs are read and its values are added
 * at once, so they never reach memory. Built after fused.cl, whose
 * interpreter (fused_eval_T, fused_run_T) runs the program; fused.c
 * compiles a recurring program into a kernel of its own from
 * DLA_FR_KERNEL with the steps written out instead (DLA_FR_COMPILED
 * leaves the interpreted kernels out of that build).
 *
 * The host (fused_reduce.c) splits the space's dims into kept ones (one
 * output per combination) and summed ones, each list coalesced over every
 * operand, and describes them in a dla_fr table. The summed positions are
 * rows of the first summed dim (inner: usually the one that is contiguous
 * in memory), each cut in chunks of clen positions; a tile is one chunk of
 * one row. A work-group is lanes_in x lanes_out work-items and sums one
 * output's tiles, or its part of them when the outputs are too few to
 * fill the device: work-item (li, lo) takes every lanes_out-th tile and
 * in it the positions li, li + lanes_in, ... So with lanes_in 1 a
 * work-item sums a run of clen consecutive positions (a CPU device's
 * loop), and with clen = lanes_in neighbouring work-items read
 * neighbouring elements (a GPU's). Tiles advance without a division. The
 * group then adds its work-items' sums in local memory; with one part it
 * writes y, with several fused_reduce_combine_T adds the parts' sums in
 * part order.
 *
 * The pair (ABI 1.4) sums a second register (reg2) into y2 in the same
 * loop: the kernels made with PAIR 1 keep a second sum beside the first,
 * in a second half of the local memory and of the parts' buffer. PAIR is
 * a constant of each kernel, so the single sums carry none of it; every
 * kernel has the same arguments (the single ones never read reg2, y2).
 *
 * Sums are kept in double where the device has it (as the reduce kernel
 * keeps them), else in float with a compensation term.
 */
#define DLA_FR_DIMS 8
#define DLA_FR_OPS 9 /* y, then the inputs */

typedef struct dla_fr {
    long outputs, parts, tiles, chunks, clen, inner, lanes_in, lanes_out, lanes_pow2;
    long nk, nr, nred;
    long kd[DLA_FR_DIMS], rd[DLA_FR_DIMS];
    long off[DLA_FR_OPS];
    long kst[DLA_FR_OPS][DLA_FR_DIMS], rst[DLA_FR_OPS][DLA_FR_DIMS];
    long off2, kst2[DLA_FR_DIMS]; /* y2 (the pair) */
} dla_fr;

#ifdef DLA_FP64
#define FR_ACC double
#else
#define FR_ACC float
#endif

/* Offsets of output o in y (*yo), in y2 when pair (*y2o), and in each
 * input (base). */
static void fr_output(__global const dla_fr *f, long o, int pair, long *yo, long *y2o,
                      long *base)
{
    *yo = f->off[0];
    *y2o = f->off2;
    for (int i = 0; i < DLA_FR_OPS - 1; i++)
        base[i] = f->off[1 + i];
    for (int d = 0; d < f->nk; d++) {
        const long c = o % f->kd[d];
        o /= f->kd[d];
        *yo += c * f->kst[0][d];
        if (pair)
            *y2o += c * f->kst2[d];
        for (int i = 0; i < DLA_FR_OPS - 1; i++)
            base[i] += c * f->kst[1 + i][d];
    }
}

/* s += v in FR_ACC, compensated where that is float while the sum is
 * finite (the term of an infinite sum is NaN: reduce.cl says why). */
#define FR_ADD(s, comp, v)                                                     \
    {                                                                          \
        const FR_ACC add = (FR_ACC)(v) - comp;                                 \
        const FR_ACC sum = s + add;                                            \
        comp = sizeof(FR_ACC) > sizeof(float) || !isfinite(sum) ? 0            \
                                                : (sum - s) - add;             \
        s = sum;                                                               \
    }

/* Offsets of the start of row `row` in the first nin inputs. */
static void fr_row(__global const dla_fr *f, int nin, long row, const long *base, long *at)
{
    if (f->nr <= 2) { /* one row dim at most: no division */
        for (int i = 0; i < nin; i++)
            at[i] = base[i] + row * f->rst[1 + i][1];
        return;
    }
    for (int i = 0; i < nin; i++)
        at[i] = base[i];
    for (int d = 1; d < f->nr; d++) {
        const long c = row % f->rd[d];
        row /= f->rd[d];
        for (int i = 0; i < nin; i++)
            at[i] += c * f->rst[1 + i][d];
    }
}

/* The kernel of a program: VALUE(T, v, v2, at, ist, ii) sets v to the
 * program's value at position ii of the row whose inputs start at at[],
 * input i's stride along the row being ist[i], and with PAIR v2 to
 * register reg2's there; NIN inputs are read. */
#define DLA_FR_KERNEL(T, NAME, NIN, VALUE, PAIR)                               \
    __kernel void NAME(__global const dla_fr *f, int mean, __global T *y,      \
                       __global FR_ACC *part_v, __local FR_ACC *sums,          \
                       __global const T *in0, __global const T *in1,           \
                       __global const T *in2, __global const T *in3,           \
                       __global const T *in4, __global const T *in5,           \
                       __global const T *in6, __global const T *in7,           \
                       dla_prog_##T p, int reg2, __global T *y2)               \
    {                                                                          \
        const long lid = get_local_id(0), g = get_group_id(0);                \
        const long o = g / f->parts, part = g - o * f->parts;                  \
        const long lanes_in = f->lanes_in, lanes_out = f->lanes_out;          \
        const long li = lid % lanes_in, lo = lid / lanes_in;                   \
        const int nin = (NIN);                                                 \
        long yo, y2o, base[DLA_FR_OPS - 1], ist[DLA_FR_OPS - 1], at[DLA_FR_OPS - 1]; \
        fr_output(f, o, PAIR, &yo, &y2o, base);                                \
        for (int i = 0; i < nin; i++)                                          \
            ist[i] = f->rst[1 + i][0];                                         \
        const long t1 = f->tiles * (part + 1) / f->parts;                      \
        const long chunks = f->chunks, inner = f->inner, clen = f->clen;       \
        const long qr = lanes_out / chunks, qc = lanes_out - qr * chunks;      \
        long t = f->tiles * part / f->parts + lo;                              \
        long row = t / chunks, c = t - row * chunks, at_row = -1;              \
        FR_ACC s = 0, comp = 0, s2 = 0, comp2 = 0;                             \
        for (; t < t1; t += lanes_out) {                                       \
            const long p0 = c * clen, end = p0 + clen < inner ? p0 + clen : inner; \
            if (p0 + li < end) {                                               \
                if (row != at_row) {                                           \
                    fr_row(f, nin, row, base, at);                             \
                    at_row = row;                                              \
                }                                                              \
                for (long ii = p0 + li; ii < end; ii += lanes_in) {            \
                    T v, v2;                                                   \
                    VALUE(T, v, v2, at, ist, ii);                              \
                    FR_ADD(s, comp, v);                                        \
                    if (PAIR)                                                  \
                        FR_ADD(s2, comp2, v2);                                 \
                }                                                              \
            }                                                                  \
            c += qc;                                                           \
            row += qr;                                                         \
            if (c >= chunks) {                                                 \
                c -= chunks;                                                   \
                row++;                                                         \
            }                                                                  \
        }                                                                      \
        const long n = lanes_in * lanes_out, top = f->lanes_pow2;             \
        __local FR_ACC *sums2 = sums + n;                                      \
        sums[lid] = s;                                                         \
        if (PAIR)                                                              \
            sums2[lid] = s2;                                                   \
        barrier(CLK_LOCAL_MEM_FENCE);                                          \
        if (lid + top < n) {                                                   \
            sums[lid] += sums[lid + top];                                      \
            if (PAIR)                                                          \
                sums2[lid] += sums2[lid + top];                                \
        }                                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                          \
        for (long w = top / 2; w > 0; w /= 2) {                                \
            if (lid < w) {                                                     \
                sums[lid] += sums[lid + w];                                    \
                if (PAIR)                                                      \
                    sums2[lid] += sums2[lid + w];                              \
            }                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                      \
        }                                                                      \
        if (lid != 0)                                                          \
            return;                                                            \
        if (f->parts > 1) {                                                    \
            part_v[g] = sums[0];                                               \
            if (PAIR)                                                          \
                part_v[f->outputs * f->parts + g] = sums2[0];                  \
        } else {                                                               \
            y[yo] = mean ? (T)(sums[0] / (FR_ACC)f->nred) : (T)sums[0];        \
            if (PAIR)                                                          \
                y2[y2o] = mean ? (T)(sums2[0] / (FR_ACC)f->nred) : (T)sums2[0]; \
        }                                                                      \
    }

#ifndef DLA_FR_COMPILED
/* Input i at position ii of the row, when the program has it. */
#define FR_IN(i) (i < p.ninputs ? in##i[at[i] + ii * ist[i]] : 0)
#define FR_INPUTS(T)                                                           \
    const T in[DLA_MAX_IN] = {FR_IN(0), FR_IN(1), FR_IN(2), FR_IN(3),          \
                              FR_IN(4), FR_IN(5), FR_IN(6), FR_IN(7)}
#define DLA_FR_INTERPRET(T, v, v2, at, ist, ii)                                \
    {                                                                          \
        FR_INPUTS(T);                                                          \
        v = fused_eval_##T(&p, in);                                            \
        v2 = 0;                                                                \
    }
#define DLA_FR_INTERPRET_PAIR(T, v, v2, at, ist, ii)                           \
    {                                                                          \
        FR_INPUTS(T);                                                          \
        T r[DLA_MAX_INSNS];                                                    \
        v = fused_run_##T(&p, in, r);                                          \
        v2 = r[reg2 & (DLA_MAX_INSNS - 1)];                                    \
    }

/* y (and with pair y2) of output o: its parts' sums added in part order. */
#define DEF_FR_COMBINE(T)                                                      \
    __kernel void fused_reduce_combine_##T(__global const dla_fr *f, int mean, \
                                           __global T *y,                      \
                                           __global const FR_ACC *part_v,      \
                                           int pair, __global T *y2)           \
    {                                                                          \
        const long o = get_global_id(0);                                       \
        if (o >= f->outputs)                                                   \
            return;                                                            \
        long yo, y2o, base[DLA_FR_OPS - 1];                                    \
        fr_output(f, o, pair, &yo, &y2o, base);                                \
        FR_ACC s = 0, s2 = 0;                                                  \
        const long second = f->outputs * f->parts;                             \
        for (long part = 0; part < f->parts; part++) {                         \
            s += part_v[o * f->parts + part];                                  \
            if (pair)                                                          \
                s2 += part_v[second + o * f->parts + part];                    \
        }                                                                      \
        y[yo] = mean ? (T)(s / (FR_ACC)f->nred) : (T)s;                        \
        if (pair)                                                              \
            y2[y2o] = mean ? (T)(s2 / (FR_ACC)f->nred) : (T)s2;                \
    }

DLA_FR_KERNEL(float, fused_reduce_float, p.ninputs, DLA_FR_INTERPRET, 0)
DLA_FR_KERNEL(float, fused_reduce_pair_float, p.ninputs, DLA_FR_INTERPRET_PAIR, 1)
DEF_FR_COMBINE(float)
#ifdef DLA_FP64
DLA_FR_KERNEL(double, fused_reduce_double, p.ninputs, DLA_FR_INTERPRET, 0)
DLA_FR_KERNEL(double, fused_reduce_pair_double, p.ninputs, DLA_FR_INTERPRET_PAIR, 1)
DEF_FR_COMBINE(double)
#endif
#endif

/*
 * fused_kern.h - the cuda plugin's fused, fused_reduce and fused_multi
 * kernels: the argument structs (C, nvcc and NVRTC), the kernels' frame
 * (nvcc and NVRTC) and the launchers (C linkage, fused_kernels.cu) and
 * the cache of compiled programs (nvrtc.c).
 *
 * The frame is written once, inside the macro DLA__CU_FUSED_FRAME: the
 * .cu expands it (with the interpreter as its evaluator) and nvrtc.c
 * stringifies it into the source of a compiled program (with the
 * program's steps written out as the evaluator). So both run the same
 * loops, the same plugin_ops.h functions and the same struct layouts; a
 * compiled program differs from the interpreter only in that its steps
 * are unrolled with their operands wired as constants. The types are
 * shared with C the same way (DLA__CU_FUSED_TYPES): plain C types, no
 * stdint (NVRTC has none).
 *
 * The interpreter is a macro too (DLA__CU_FUSED_INTERP), expanded by the
 * .cu only, so that tests/cuda_fused_emu.cpp runs the same on the CPU.
 *
 * fused_multi's types and frame are macros of their own
 * (DLA__CU_FMULTI_TYPES, DLA__CU_FMULTI_FRAME), written into the source of
 * a compiled fused_multi program only, so the other kinds' sources stay
 * as they were.
 *
 * No such macro's text may hold a preprocessor directive (commas are
 * fine: the macros take __VA_ARGS__; comments are gone before expansion).
 */
#ifndef DLA_PLUGIN_CUDA_FUSED_KERN_H
#define DLA_PLUGIN_CUDA_FUSED_KERN_H

#include "plugins/cuda/cu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DLA__CU_ID(...) __VA_ARGS__
#define DLA__CU_STR(...) #__VA_ARGS__

/* The operands: y (0) and the inputs (1..8). */
#define DLA__CU_FOPS 9

/* The layout of a compiled program's operands, for the 32-bit path of a
 * fused or fused_multi kernel (dla__cu_lay_of): word 0 the coalesced
 * space's dims (1..8), word 1 + k slot k's: bit d set when its stride
 * along dim d is 0 (nothing to add there), DENSE_BIT when its strides are
 * the space's dense ones (its offset is the position itself), and at
 * SAME_SHIFT 1 + an earlier slot whose strides it has (its offset is that
 * one's). All 0: nothing known, every operand walked over the space's
 * dims, as the interpreter walks them. A compiled program has them as
 * constants (the key holds them), so what they make needless folds away:
 * at batch 1024 the digit CNN's elementwise programs were bound by their
 * index arithmetic, not by memory (docs/plugins.md). The frame writes
 * the two positions as names; a compiled program's source defines them. */
#define DLA__CU_LAY_WORDS 17
#define DLA__CU_LAY_DENSE_BIT 8
#define DLA__CU_LAY_SAME_SHIFT 12

/* dla_fsp / dla_fvw / dla_fviews: cu.h's dla__cu_space, dla__cu_vw and
 * kern.cuh's dla__cu_views<9> (the same layout; fused.c fills them from
 * dla__cu_space_of).
 * dla_fprog: the program; al, be already rounded to the dtype; reg2 the
 * pair's second register (0 otherwise); flags (fused only) DLA__CU_F_*.
 * dla_fr: a fused_reduce: kept dims kd (nk, coalesced over y, y2 and the
 * inputs; ost: y's and y2's strides, kst the inputs'), summed dims rd
 * (nr >= 1; inner = rd[0]; rst the inputs' strides), nred positions
 * summed per output, parts per output (parts > 1: partial sums in
 * partial, outputs * parts doubles, a pair's second half after them). */
#define DLA__CU_FUSED_TYPES(X)                                                                     \
    X(typedef long long dla_i64;                                                                   \
      typedef struct dla_fsp {                                                                     \
          int nd;                                                                                  \
          dla_i64 n;                                                                               \
          dla_i64 dims[8];                                                                         \
          unsigned mul[8];                                                                         \
          int shift[8];                                                                            \
      } dla_fsp;                                                                                   \
      typedef struct dla_fvw {                                                                     \
          char *base;                                                                              \
          dla_i64 st[8];                                                                           \
      } dla_fvw;                                                                                   \
      typedef struct dla_fviews {                                                                  \
          dla_fsp sp;                                                                              \
          dla_fvw v[9];                                                                            \
      } dla_fviews;                                                                                \
      typedef struct dla_fprog {                                                                   \
          int ninsns, ninputs, reg2, flags;                                                        \
          int kind[8], op[8], src[8][3];                                                           \
          double al[8], be[8];                                                                     \
      } dla_fprog;                                                                                 \
      typedef struct dla_fr {                                                                      \
          dla_i64 outputs, parts, nred, inner;                                                     \
          int nk, nr, mean, flags;                                                                 \
          unsigned imul;                                                                           \
          int ishift;                                                                              \
          dla_i64 kd[8], rd[8];                                                                    \
          dla_i64 ost[2][8];                                                                       \
          dla_i64 kst[8][8], rst[8][8];                                                            \
          char *ybase, *y2base;                                                                    \
          const char *inbase[8];                                                                   \
          double *partial;                                                                         \
      } dla_fr;)

DLA__CU_FUSED_TYPES(DLA__CU_ID)

/* The frame (device code; needs plugin_ops.h and the types before it).
 * An evaluator Ev has a static run(p, in, v, v2) for its T: v the last
 * register, v2 register p.reg2. The kernels of a program are
 * dla_fused_body<T, Ev, NIN> (one thread per element, grid-stride),
 * dla_fr_block_body<T, Ev, NIN, PAIR> (a block of a power of two threads
 * per output or part of one, blockDim.x * (1 + PAIR) doubles of dynamic
 * shared memory) and dla_fr_thread_body<T, Ev, NIN, PAIR> (a thread per
 * output). Sums are kept in double. */
#define DLA__CU_FUSED_FRAME(X)                                                                     \
    X(__device__ __forceinline__ float dla_fun(int op, float x, float a, float b) {                \
        return dla_ops_unary_f32(op, x, a, b);                                                     \
    } __device__ __forceinline__ double dla_fun(int op, double x, double a, double b) {            \
        return dla_ops_unary_f64(op, x, a, b);                                                     \
    } __device__ __forceinline__ float dla_fbin(int op, float a, float b) {                        \
        return dla_ops_binary_f32(op, a, b);                                                       \
    } __device__ __forceinline__ double dla_fbin(int op, double a, double b) {                     \
        return dla_ops_binary_f64(op, a, b);                                                       \
    }                                                                                              \
                                                                                                   \
    template <int NOPS>                                                                            \
    __device__ __forceinline__ void dla_flocate(const dla_fviews &a, dla_i64 i, dla_i64 *off) {    \
        for (int k = 0; k < NOPS; k++)                                                             \
            off[k] = 0;                                                                            \
        const int last = a.sp.nd - 1;                                                              \
        for (int d = 0; d < 8; d++) {                                                              \
            if (d < last) {                                                                        \
                const dla_i64 n = a.sp.dims[d], q = i / n, r = i - q * n;                          \
                i = q;                                                                             \
                for (int k = 0; k < NOPS; k++)                                                     \
                    off[k] += r * a.v[k].st[d];                                                    \
            } else if (d == last) {                                                                \
                for (int k = 0; k < NOPS; k++)                                                     \
                    off[k] += i * a.v[k].st[d];                                                    \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* The layout of a compiled program (dla__cu_lay_of): L::w(i) its                              \
     * words, constants there; dla_lay_none (0: unknown) for the                                   \
     * interpreter, which walks every operand over every dim. */                                   \
    struct dla_lay_none {                                                                          \
        static __device__ __forceinline__ constexpr unsigned w(int i) { return i < 0 ? 0u : 0u; }  \
    };                                                                                             \
    template <class L> __device__ __forceinline__ int dla_lay_nd(const dla_fsp &sp) {              \
        return L::w(0) ? (int)L::w(0) : sp.nd;                                                     \
    }                                                                                              \
    template <class L> __device__ __forceinline__ int dla_lay_dense(int k) {                       \
        return (int)(L::w(1 + k) >> DLA__CU_LAY_DENSE_BIT) & 1;                                    \
    }                                                                                              \
    template <class L> __device__ __forceinline__ int dla_lay_same(int k) {                        \
        return (int)((L::w(1 + k) >> DLA__CU_LAY_SAME_SHIFT) & 31u) - 1;                           \
    }                                                                                              \
    template <class L> __device__ __forceinline__ int dla_lay_walks(int k, int d) {                \
        return !dla_lay_dense<L>(k) && dla_lay_same<L>(k) < 0 && !((L::w(1 + k) >> d) & 1u);       \
    }                                                                                              \
    /* Operand k's offset once the dims are walked: a dense one's is the                           \
     * position itself, one laid out as an earlier one takes its offset. */                        \
    template <class L, typename O>                                                                 \
    __device__ __forceinline__ void dla_lay_finish(int k, unsigned u0, O *off) {                   \
        if (dla_lay_dense<L>(k))                                                                   \
            off[k] = (O)u0;                                                                        \
        else if (dla_lay_same<L>(k) >= 0)                                                          \
            off[k] = off[dla_lay_same<L>(k) & 15];                                                 \
    }                                                                                              \
                                                                                                   \
    template <int NOPS, class L>                                                                   \
    __device__ __forceinline__ void dla_flocate32(const dla_fviews &a, unsigned u, int *off) {     \
        const unsigned u0 = u;                                                                     \
        for (int k = 0; k < NOPS; k++)                                                             \
            off[k] = 0;                                                                            \
        const int last = dla_lay_nd<L>(a.sp) - 1;                                                  \
        /* Constant dim indices only (the loop is unrolled, each dim                               \
         * guarded): the space's constants are then operands read from the                         \
         * parameter bank, where an index known only at run time made                              \
         * each a load through a generic address, some thirty an element,                          \
         * which bound the kernel. With a compiled layout the dims and                             \
         * the operands that need no walk are constants too, and what                              \
         * they would compute folds away. */                                                       \
        _Pragma("unroll") for (int d = 0; d < 8; d++) {                                            \
            if (d < last) {                                                                        \
                const unsigned n = (unsigned)a.sp.dims[d];                                         \
                const unsigned q = (__umulhi(u, a.sp.mul[d]) + u) >> a.sp.shift[d], r = u - q * n; \
                u = q;                                                                             \
                _Pragma("unroll") for (int k = 0; k < NOPS; k++)                                   \
                    if (dla_lay_walks<L>(k, d))                                                    \
                        off[k] += (int)r * (int)a.v[k].st[d];                                      \
            } else if (d == last) {                                                                \
                _Pragma("unroll") for (int k = 0; k < NOPS; k++)                                   \
                    if (dla_lay_walks<L>(k, d))                                                    \
                        off[k] += (int)u * (int)a.v[k].st[d];                                      \
            }                                                                                      \
        }                                                                                          \
        _Pragma("unroll") for (int k = 0; k < NOPS; k++)                                           \
            dla_lay_finish<L, int>(k, u0, off);                                                    \
    }                                                                                              \
                                                                                                   \
    template <typename T, class Ev, int NIN, typename O>                                           \
    __device__ __forceinline__ void dla_fused_one(const dla_fviews &a, const dla_fprog &p,         \
                                                  const O *off) {                                  \
        T in[8];                                                                                   \
        for (int k = 0; k < 8; k++)                                                                \
            in[k] = k < NIN && (Ev::EXACT || k < p.ninputs)                                        \
                        ? ((const T *)a.v[1 + k].base)[off[1 + k]]                                 \
                        : (T)0;                                                                    \
        T v, v2;                                                                                   \
        Ev::run(p, in, v, v2);                                                                     \
        ((T *)a.v[0].base)[off[0]] = v;                                                            \
    }                                                                                              \
                                                                                                   \
    template <typename T, class Ev, int NIN, class L = dla_lay_none>                               \
    __device__ __forceinline__ void dla_fused_body(const dla_fviews &a, const dla_fprog &p) {      \
        const dla_i64 S = (dla_i64)gridDim.x * blockDim.x;                                         \
        dla_i64 i = (dla_i64)blockIdx.x * blockDim.x + threadIdx.x;                                \
        if (p.flags & DLA__CU_F_OFF32) {                                                           \
            for (; i < a.sp.n; i += S) {                                                           \
                int off[1 + NIN];                                                                  \
                dla_flocate32<1 + NIN, L>(a, (unsigned)i, off);                                    \
                dla_fused_one<T, Ev, NIN, int>(a, p, off);                                         \
            }                                                                                      \
        } else {                                                                                   \
            for (; i < a.sp.n; i += S) {                                                           \
                dla_i64 off[1 + NIN];                                                              \
                dla_flocate<1 + NIN>(a, i, off);                                                   \
                dla_fused_one<T, Ev, NIN, dla_i64>(a, p, off);                                     \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    __device__ __forceinline__ void dla_fr_output(const dla_fr &f, dla_i64 o, dla_i64 *yo,         \
                                                  dla_i64 *base) {                                 \
        yo[0] = 0;                                                                                 \
        yo[1] = 0;                                                                                 \
        for (int k = 0; k < 8; k++)                                                                \
            base[k] = 0;                                                                           \
        for (int d = 0; d < 8; d++)                                                                \
            if (d < f.nk) {                                                                        \
                const dla_i64 n = f.kd[d], q = o / n, c = o - q * n;                               \
                o = q;                                                                             \
                yo[0] += c * f.ost[0][d];                                                          \
                yo[1] += c * f.ost[1][d];                                                          \
                for (int k = 0; k < 8; k++)                                                        \
                    base[k] += c * f.kst[k][d];                                                    \
            }                                                                                      \
    }                                                                                              \
                                                                                                   \
    __device__ __forceinline__ void dla_fr_row(const dla_fr &f, dla_i64 row, const dla_i64 *base,  \
                                               dla_i64 *at) {                                      \
        for (int k = 0; k < 8; k++)                                                                \
            at[k] = base[k];                                                                       \
        for (int d = 1; d < 8; d++) {                                                              \
            if (d < f.nr - 1) {                                                                    \
                const dla_i64 n = f.rd[d], q = row / n, c = row - q * n;                           \
                row = q;                                                                           \
                for (int k = 0; k < 8; k++)                                                        \
                    at[k] += c * f.rst[k][d];                                                      \
            } else if (d == f.nr - 1) {                                                            \
                for (int k = 0; k < 8; k++)                                                        \
                    at[k] += row * f.rst[k][d];                                                    \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    template <typename T, class Ev, int NIN, int PAIR>                                             \
    __device__ __forceinline__ void dla_fr_value(const dla_fr &f, const dla_fprog &p,              \
                                                 const dla_i64 *at, dla_i64 ii, double &s,         \
                                                 double &s2) {                                     \
        T in[8];                                                                                   \
        for (int k = 0; k < 8; k++)                                                                \
            in[k] = k < NIN && (Ev::EXACT || k < p.ninputs)                                        \
                        ? ((const T *)f.inbase[k])[at[k] + ii * f.rst[k][0]]                       \
                        : (T)0;                                                                    \
        T v, v2;                                                                                   \
        Ev::run(p, in, v, v2);                                                                     \
        s += (double)v;                                                                            \
        if (PAIR)                                                                                  \
            s2 += (double)v2;                                                                      \
    }                                                                                              \
                                                                                                   \
    template <typename T, int PAIR>                                                                \
    __device__ __forceinline__ void dla_fr_store(const dla_fr &f, const dla_i64 *yo, double s,     \
                                                 double s2) {                                      \
        const double n = (double)f.nred;                                                           \
        ((T *)f.ybase)[yo[0]] = f.mean ? (T)(s / n) : (T)s;                                        \
        if (PAIR)                                                                                  \
            ((T *)f.y2base)[yo[1]] = f.mean ? (T)(s2 / n) : (T)s2;                                 \
    }                                                                                              \
                                                                                                   \
    /* A block's positions pos, pos + B, ... (below end) of one output                             \
     * whose summed dims are at most two (DLA__CU_FR_ROWS: a row of inner                          \
     * positions, then rows): each position's offsets from its row and its                         \
     * place in it (a multiply-high division by inner), in 32 bits, four                           \
     * positions' inputs loaded before the first is summed, so that a                              \
     * thread has four loads in flight where it had one; the sums still                            \
     * take the positions in the same order. */                                                    \
    template <typename T, class Ev, int NIN, int PAIR>                                             \
    __device__ __forceinline__ void dla_fr_rows(const dla_fr &f, const dla_fprog &p,               \
                                                const dla_i64 *base, unsigned pos, unsigned end,   \
                                                unsigned B, double &s, double &s2) {               \
        const T *in0[8];                                                                           \
        for (int k = 0; k < 8; k++)                                                                \
            in0[k] = k < NIN && (Ev::EXACT || k < p.ninputs) ? (const T *)f.inbase[k] + base[k]    \
                                                             : (const T *)0;                       \
        const unsigned inner = (unsigned)f.inner;                                                  \
        for (; pos < end; pos += 4 * B) {                                                          \
            T in[4][8];                                                                            \
            _Pragma("unroll") for (int j = 0; j < 4; j++) {                                        \
                const unsigned q = pos + (unsigned)j * B;                                          \
                const unsigned row = (__umulhi(q, f.imul) + q) >> f.ishift, ii = q - row * inner;  \
                _Pragma("unroll") for (int k = 0; k < 8; k++)                                      \
                    in[j][k] = q < end && k < NIN && (Ev::EXACT || k < p.ninputs)                  \
                                   ? in0[k][(int)ii * (int)f.rst[k][0] + (int)row * (int)f.rst[k][1]] \
                                   : (T)0;                                                         \
            }                                                                                      \
            _Pragma("unroll") for (int j = 0; j < 4; j++) {                                        \
                if (pos + (unsigned)j * B < end) {                                                 \
                    T v, v2;                                                                       \
                    Ev::run(p, in[j], v, v2);                                                      \
                    s += (double)v;                                                                \
                    if (PAIR)                                                                      \
                        s2 += (double)v2;                                                          \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    template <typename T, class Ev, int NIN, int PAIR>                                             \
    __device__ __forceinline__ void dla_fr_block_body(const dla_fr &f, const dla_fprog &p) {      \
        extern __shared__ double dla_fr_sm[];                                                      \
        const int B = (int)blockDim.x, t = (int)threadIdx.x;                                       \
        const dla_i64 total = f.outputs * f.parts;                                                 \
        for (dla_i64 g = blockIdx.x; g < total; g += gridDim.x) {                                  \
            const dla_i64 o = g / f.parts, part = g - o * f.parts;                                 \
            dla_i64 yo[2], base[8], at[8];                                                         \
            dla_fr_output(f, o, yo, base);                                                         \
            const dla_i64 p0 = f.nred * part / f.parts, p1 = f.nred * (part + 1) / f.parts;        \
            double s = 0, s2 = 0;                                                                  \
            dla_i64 pos = p0 + t;                                                                  \
            if (f.flags & DLA__CU_FR_ROWS) {                                                       \
                dla_fr_rows<T, Ev, NIN, PAIR>(f, p, base, (unsigned)pos, (unsigned)p1,             \
                                              (unsigned)B, s, s2);                                 \
            } else if (pos < p1) {                                                                 \
                const dla_i64 inner = f.inner, q = B / inner, r = B - q * inner;                   \
                dla_i64 row = pos / inner, ii = pos - row * inner, at_row = -1;                    \
                for (; pos < p1; pos += B) {                                                       \
                    if (row != at_row) {                                                           \
                        dla_fr_row(f, row, base, at);                                              \
                        at_row = row;                                                              \
                    }                                                                              \
                    dla_fr_value<T, Ev, NIN, PAIR>(f, p, at, ii, s, s2);                           \
                    ii += r;                                                                       \
                    row += q;                                                                      \
                    if (ii >= inner) {                                                             \
                        ii -= inner;                                                               \
                        row++;                                                                     \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            dla_fr_sm[t] = s;                                                                      \
            if (PAIR)                                                                              \
                dla_fr_sm[B + t] = s2;                                                             \
            __syncthreads();                                                                       \
            for (int w = B / 2; w > 0; w /= 2) {                                                   \
                if (t < w) {                                                                       \
                    dla_fr_sm[t] += dla_fr_sm[t + w];                                              \
                    if (PAIR)                                                                      \
                        dla_fr_sm[B + t] += dla_fr_sm[B + t + w];                                  \
                }                                                                                  \
                __syncthreads();                                                                   \
            }                                                                                      \
            if (t == 0) {                                                                          \
                if (f.parts > 1) {                                                                 \
                    f.partial[g] = dla_fr_sm[0];                                                   \
                    if (PAIR)                                                                      \
                        f.partial[total + g] = dla_fr_sm[B];                                       \
                } else {                                                                           \
                    dla_fr_store<T, PAIR>(f, yo, dla_fr_sm[0], PAIR ? dla_fr_sm[B] : 0.0);         \
                }                                                                                  \
            }                                                                                      \
            __syncthreads();                                                                       \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    template <typename T, class Ev, int NIN, int PAIR>                                             \
    __device__ __forceinline__ void dla_fr_thread_body(const dla_fr &f, const dla_fprog &p) {     \
        for (dla_i64 o = (dla_i64)blockIdx.x * blockDim.x + threadIdx.x; o < f.outputs;            \
             o += (dla_i64)gridDim.x * blockDim.x) {                                               \
            dla_i64 yo[2], base[8], at[8];                                                         \
            dla_fr_output(f, o, yo, base);                                                         \
            dla_fr_row(f, 0, base, at);                                                            \
            double s = 0, s2 = 0;                                                                  \
            dla_i64 row = 0, ii = 0;                                                               \
            for (dla_i64 pos = 0; pos < f.nred; pos++) {                                           \
                dla_fr_value<T, Ev, NIN, PAIR>(f, p, at, ii, s, s2);                               \
                if (++ii == f.inner) {                                                             \
                    ii = 0;                                                                        \
                    row++;                                                                         \
                    if (pos + 1 < f.nred)                                                          \
                        dla_fr_row(f, row, base, at);                                              \
                }                                                                                  \
            }                                                                                      \
            dla_fr_store<T, PAIR>(f, yo, s, s2);                                                   \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* y (and y2) from the parts' sums (f.parts > 1), each output's in                             \
     * part order: a thread per output. */                                                         \
    template <typename T, int PAIR>                                                                \
    __device__ __forceinline__ void dla_fr_combine_body(const dla_fr &f) {                         \
        const dla_i64 total = f.outputs * f.parts;                                                 \
        for (dla_i64 o = (dla_i64)blockIdx.x * blockDim.x + threadIdx.x; o < f.outputs;            \
             o += (dla_i64)gridDim.x * blockDim.x) {                                               \
            dla_i64 yo[2], base[8];                                                                \
            dla_fr_output(f, o, yo, base);                                                         \
            double s = 0, s2 = 0;                                                                  \
            for (dla_i64 part = 0; part < f.parts; part++) {                                       \
                s += f.partial[o * f.parts + part];                                                \
                if (PAIR)                                                                          \
                    s2 += f.partial[total + o * f.parts + part];                                   \
            }                                                                                      \
            dla_fr_store<T, PAIR>(f, yo, s, s2);                                                   \
        }                                                                                          \
    })

/* ------------------------------------------------ fused_multi (ABI 1.8)
 * The operands of a fused_multi kernel, in fixed slots: y (0), the inputs
 * (1..8: input i in slot 1 + i, as in dla_fviews) and the extra results
 * (9..15: extra k in slot DLA__CU_FM_X0 + k); slots no operand fills have
 * base NULL and zero strides and are neither read nor written. */
#define DLA__CU_FMOPS 16
#define DLA__CU_FM_X0 9

/* dla_fmviews: the space and the 16 slots' views (fused.c fills them from
 * dla__cu_space_of over y, the inputs and the extras), nextra and the
 * extras' registers (reg[k] for k >= nextra is 0). With dla_fprog it is
 * the whole parameter block of a fused_multi kernel (1632 bytes; asserted
 * under 4 KiB in fused_kernels.cu and in a compiled program's source). */
#define DLA__CU_FMULTI_TYPES(X)                                                                    \
    X(typedef struct dla_fmviews {                                                                 \
          dla_fsp sp;                                                                              \
          dla_fvw v[16];                                                                           \
          int nextra;                                                                              \
          int reg[7];                                                                              \
      } dla_fmviews;)

DLA__CU_FMULTI_TYPES(DLA__CU_ID)

/* The fused_multi frame (device code; needs DLA__CU_FUSED_FRAME and both
 * types before it; a compiled program of another kind does not include
 * it). An evaluator Ev has a static multi(p, reg, in, v, x) for its T: v
 * the last register, x[k] register reg[k] for k < the extras it knows
 * (the interpreter all 7, reading reg; a compiled program its nextra, the
 * registers wired as constants). dla_fused_multi_body<T, Ev, NIN, NEX>:
 * one thread per element, grid-stride, as dla_fused_body; it locates only
 * the slots 0 .. NIN and 9 .. 8 + NEX and writes extra k < NEX (and <
 * nextra) and y. Each thread reads all its element's inputs before it
 * writes any result there: y and each extra may be an input itself (the
 * very same view, as the ABI allows), and overlap nothing else. */
#define DLA__CU_FMULTI_FRAME(X)                                                                    \
    X(template <int NIN, int NEX>                                                                  \
      __device__ __forceinline__ void dla_fmlocate(const dla_fmviews &a, dla_i64 i,                \
                                                   dla_i64 *off) {                                 \
          for (int k = 0; k < 16; k++)                                                             \
              off[k] = 0;                                                                          \
          const int last = a.sp.nd - 1;                                                            \
          for (int d = 0; d < 8; d++) {                                                            \
              if (d < last) {                                                                      \
                  const dla_i64 n = a.sp.dims[d], q = i / n, r = i - q * n;                        \
                  i = q;                                                                           \
                  for (int k = 0; k < 16; k++)                                                     \
                      if (k <= NIN || (k >= 9 && k < 9 + NEX))                                     \
                          off[k] += r * a.v[k].st[d];                                              \
              } else if (d == last) {                                                              \
                  for (int k = 0; k < 16; k++)                                                     \
                      if (k <= NIN || (k >= 9 && k < 9 + NEX))                                     \
                          off[k] += i * a.v[k].st[d];                                              \
              }                                                                                    \
          }                                                                                        \
      }                                                                                            \
                                                                                                   \
      template <int NIN, int NEX, class L>                                                         \
      __device__ __forceinline__ void dla_fmlocate32(const dla_fmviews &a, unsigned u, int *off) { \
          const unsigned u0 = u;                                                                   \
          for (int k = 0; k < 16; k++)                                                             \
              off[k] = 0;                                                                          \
          const int last = dla_lay_nd<L>(a.sp) - 1;                                                \
          _Pragma("unroll") for (int d = 0; d < 8; d++) {                                          \
              if (d < last) {                                                                      \
                  const unsigned n = (unsigned)a.sp.dims[d];                                       \
                  const unsigned q = (__umulhi(u, a.sp.mul[d]) + u) >> a.sp.shift[d];              \
                  const unsigned r = u - q * n;                                                    \
                  u = q;                                                                           \
                  _Pragma("unroll") for (int k = 0; k < 16; k++)                                   \
                      if ((k <= NIN || (k >= 9 && k < 9 + NEX)) && dla_lay_walks<L>(k, d))         \
                          off[k] += (int)r * (int)a.v[k].st[d];                                    \
              } else if (d == last) {                                                              \
                  _Pragma("unroll") for (int k = 0; k < 16; k++)                                   \
                      if ((k <= NIN || (k >= 9 && k < 9 + NEX)) && dla_lay_walks<L>(k, d))         \
                          off[k] += (int)u * (int)a.v[k].st[d];                                    \
              }                                                                                    \
          }                                                                                        \
          _Pragma("unroll") for (int k = 0; k < 16; k++)                                           \
              if (k <= NIN || (k >= 9 && k < 9 + NEX))                                             \
                  dla_lay_finish<L, int>(k, u0, off);                                              \
      }                                                                                            \
                                                                                                   \
      template <typename T, class Ev, int NIN, int NEX, typename O>                                \
      __device__ __forceinline__ void dla_fmulti_one(const dla_fmviews &a, const dla_fprog &p,     \
                                                     const O *off) {                               \
          T in[8];                                                                                 \
          for (int k = 0; k < 8; k++)                                                              \
              in[k] = k < NIN && (Ev::EXACT || k < p.ninputs)                                      \
                          ? ((const T *)a.v[1 + k].base)[off[1 + k]]                               \
                          : (T)0;                                                                  \
          T v, x[7];                                                                               \
          Ev::multi(p, a.reg, in, v, x);                                                           \
          for (int k = 0; k < NEX && k < 7; k++)                                                   \
              if (k < a.nextra)                                                                    \
                  ((T *)a.v[9 + k].base)[off[9 + k]] = x[k];                                       \
          ((T *)a.v[0].base)[off[0]] = v;                                                          \
      }                                                                                            \
                                                                                                   \
      template <typename T, class Ev, int NIN, int NEX, class L = dla_lay_none>                    \
      __device__ __forceinline__ void dla_fused_multi_body(const dla_fmviews &a,                   \
                                                           const dla_fprog &p) {                   \
          const dla_i64 S = (dla_i64)gridDim.x * blockDim.x;                                       \
          dla_i64 i = (dla_i64)blockIdx.x * blockDim.x + threadIdx.x;                              \
          if (p.flags & DLA__CU_F_OFF32) {                                                         \
              for (; i < a.sp.n; i += S) {                                                         \
                  int off[16];                                                                     \
                  dla_fmlocate32<NIN, NEX, L>(a, (unsigned)i, off);                                \
                  dla_fmulti_one<T, Ev, NIN, NEX, int>(a, p, off);                                 \
              }                                                                                    \
          } else {                                                                                 \
              for (; i < a.sp.n; i += S) {                                                         \
                  dla_i64 off[16];                                                                 \
                  dla_fmlocate<NIN, NEX>(a, i, off);                                               \
                  dla_fmulti_one<T, Ev, NIN, NEX, dla_i64>(a, p, off);                             \
              }                                                                                    \
          }                                                                                        \
      })

/* The interpreter (the evaluator of fused_kernels.cu's kernels; a host
 * test, tests/cuda_fused_emu.cpp, expands it too, so that both run the
 * same code; needs DLA__CU_FUSED_FRAME before it): r[j] for j = 0 ..
 * ninsns-1; operands k >= 0 registers, -1 - i inputs (the kit checked
 * both). run gives the last register and reg2 (fused, fused_reduce), multi
 * the last and the 7 registers reg[k] (fused_multi: the host sets reg[k] =
 * 0 past nextra), both from regs, which computes them all and returns
 * their count. (_Pragma: a macro's text holds no directive.) */
#define DLA__CU_FUSED_INTERP(X)                                                                    \
    X(struct interp {                                                                              \
        /* Reads p.ninputs (a compiled program has NIN of them). */                                \
        static constexpr int EXACT = 0;                                                            \
        template <typename T>                                                                      \
        static __device__ __forceinline__ int regs(const dla_fprog &p, const T *in, T *r) {        \
            const int n = p.ninsns < 1 ? 1 : p.ninsns > 8 ? 8 : p.ninsns;                          \
            for (int j = 0; j < n; j++) {                                                          \
                T a[3];                                                                            \
                _Pragma("unroll") for (int s = 0; s < 3; s++) {                                    \
                    const int k = p.src[j][s];                                                     \
                    a[s] = k >= 0 ? r[k & 7] : in[(-1 - k) & 7];                                   \
                }                                                                                  \
                const int kind = p.kind[j];                                                        \
                T x;                                                                               \
                if (kind == 0)                                                                     \
                    x = dla_fun(p.op[j], a[0], (T)p.al[j], (T)p.be[j]);                            \
                else if (kind == 1)                                                                \
                    x = dla_fbin(p.op[j], a[0], a[1]);                                             \
                else                                                                               \
                    x = a[0] != (T)0 ? a[1] : a[2];                                                \
                r[j] = x;                                                                          \
            }                                                                                      \
            return n;                                                                              \
        }                                                                                          \
                                                                                                   \
        template <typename T>                                                                      \
        static __device__ __forceinline__ void run(const dla_fprog &p, const T *in, T &v, T &v2) { \
            T r[8];                                                                                \
            const int n = regs(p, in, r);                                                          \
            v = r[n - 1];                                                                          \
            v2 = r[p.reg2 & 7];                                                                    \
        }                                                                                          \
                                                                                                   \
        template <typename T>                                                                      \
        static __device__ __forceinline__ void multi(const dla_fprog &p, const int *reg,           \
                                                     const T *in, T &v, T *x) {                    \
            T r[8];                                                                                \
            const int n = regs(p, in, r);                                                          \
            v = r[n - 1];                                                                          \
            _Pragma("unroll") for (int k = 0; k < 7; k++) x[k] = r[reg[k] & 7];                    \
        }                                                                                          \
    };)

/* dla_fprog.flags of a fused or fused_multi call (fused.c): every view's
 * offsets (a fused_multi's extras' too) and the space's positions fit in
 * int (32-bit index arithmetic, several times cheaper on the GPU than
 * 64-bit). */
#define DLA__CU_F_OFF32 1

/* dla_fr.flags (fused_reduce.c): the block kernel takes its positions as
 * rows (dla_fr_rows): at most two summed dims, the positions and every
 * input's offsets within one output's sum fit in int. */
#define DLA__CU_FR_ROWS 1

/* Names of a compiled program's kernels (extern "C" in its source). */
#define DLA__CU_K_FUSED "dla_fused_prog"
#define DLA__CU_K_FR_BLOCK "dla_fr_block_prog"
#define DLA__CU_K_FR_THREAD "dla_fr_thread_prog"
#define DLA__CU_K_FMULTI "dla_fused_multi_prog"

/* Threads per block of the fused_reduce block kernel (at most). */
#define DLA__CU_FR_THREADS 256

/* ------------------------------------------- launchers (fused_kernels.cu)
 * kernel: a compiled program's kernel (cudaKernel_t), or NULL for the
 * interpreter. They return the launch's error (cudaGetLastError). */
cudaError_t dla__cu_fused_launch(cudaStream_t st, unsigned grid, int f64, const dla_fviews *a,
                                 const dla_fprog *p, const void *kernel);
/* fused_multi: a, the program p (flags DLA__CU_F_*), kernel as above. */
cudaError_t dla__cu_fused_multi_launch(cudaStream_t st, unsigned grid, int f64,
                                       const dla_fmviews *a, const dla_fprog *p,
                                       const void *kernel);
/* thread: one thread per output (grid blocks of DLA__CU_THREADS) instead
 * of a block of `block` threads (a power of two) per output part. */
cudaError_t dla__cu_fr_launch(cudaStream_t st, int thread, unsigned grid, unsigned block, int f64,
                              int pair, const dla_fr *f, const dla_fprog *p, const void *kernel);
/* y (and y2) from the parts' sums (f->parts > 1), in part order. */
cudaError_t dla__cu_fr_combine(cudaStream_t st, unsigned grid, int f64, int pair, const dla_fr *f);

/* ------------------------------------------- compiled programs (nvrtc.c)
 * dla__cu_nvrtc_build: body after plugin_ops.h's text compiled with NVRTC
 * for d's architecture (--fmad=false and the IEEE defaults, as the
 * plugin's own kernels) and loaded as *lib, with the kernels names[0 ..
 * nk-1] in k[]; 0, with why said in why (why_size bytes), when NVRTC is
 * missing or the source does not compile or load (the NVRTC log goes to
 * the debug log, naming what). Nothing is launched. (fused programs and
 * onekern.c's compiled one kernels.) */
int dla__cu_nvrtc_build(dla__cu_device *d, const char *body, const char *what,
                        const char *const *names, int nk, cudaLibrary_t *lib, cudaKernel_t *k,
                        char *why, size_t why_size);
/*
 * The compiled kernels of program a when it has been seen before (kind
 * 0: fused, 1: fused_reduce, 2: the pair, summing reg2 too), compiling it
 * now on its second sight; 0 to interpret (*k1, *k2 NULL). For a reduce
 * *k1 is the block kernel and *k2 the thread kernel. Takes d->lock. */
int dla__cu_fused_compiled(dla__cu_device *d, const dla_fused_args *a, int kind, int reg2,
                           const int32_t *lay, const void **k1, const void **k2);
/* The same for a fused_multi program (kind 3): *k1 its kernel. lay: the
 * operands' layout (DLA__CU_LAY_WORDS), or NULL when not known. */
int dla__cu_fused_multi_compiled(dla__cu_device *d, const dla_fused_multi_args *m,
                                 const int32_t *lay, const void **k1);

/* A compiled program's identity (everything but alpha and beta, which
 * stay arguments): the kernel (0 fused, 1 fused_reduce, 2 the pair, 3
 * fused_multi), the pair's second register, the dtype, per step its kind,
 * op and operands, a fused_multi's extras' registers (they decide what
 * its kernel stores; 0 for the other kinds), and the operands' layout
 * (DLA__CU_LAY_WORDS; 0 when not known, and for the reduces). */
typedef struct dla__cu_fused_key_t {
    int32_t kind, reg2, f64, ninputs, ninsns;
    int32_t code[DLA_FUSED_MAX_INSNS][5];
    int32_t nextra, xreg[DLA_FUSED_MAX_EXTRA];
    int32_t lay[DLA__CU_LAY_WORDS]; /* fused and fused_multi; 0 for the others */
} dla__cu_fused_key_t;

/* fused_source.c: the key of program a; and its source after
 * plugin_ops.h's text, in src (size bytes), the length it needs returned
 * (>= size: cut). constops: the ops written as constants rather than
 * read from the argument (DLACCEL_CUDA_FUSED_CONSTOPS=1; see there). */
void dla__cu_fused_key(const dla_fused_args *a, int kind, int reg2, dla__cu_fused_key_t *k);
void dla__cu_fused_multi_key(const dla_fused_multi_args *m, dla__cu_fused_key_t *k);
size_t dla__cu_fused_source(const dla__cu_fused_key_t *k, int constops, char *src, size_t size);
/* Instruction j of a program (kind DLA_FUSED_*, its op as the expression
 * opx, operands srcs: registers >= 0, inputs -1 - i) as the line "const T
 * rj = ...;" with alpha and beta the expressions al and be, appended to
 * src (size bytes) at n; the new length (fused_source.c, onekern_source.c).
 * Whether an instruction's op must not be a constant the compiler sees
 * (neg: fused_source.c says why): it is then read at run time. */
size_t dla__cu_fused_insn_source(int kind, const char *opx, const int *srcs, int j,
                                 const char *T, const char *al, const char *be, char *src,
                                 size_t size, size_t n);
int dla__cu_fused_op_hidden(int kind, int op);
/* The fused types and frame (dla_fun, dla_fbin, ...) with the constants
 * they name, appended to src at n: how every compiled source starts after
 * plugin_ops.h's text. The new length. */
size_t dla__cu_fused_prelude(char *src, size_t size, size_t n);

/* The program as the kernels take it (fused.c). */
void dla__cu_fprog_of(const dla_fused_args *a, int reg2, dla_fprog *p);

/* fused.c: the layout words (DLA__CU_LAY_WORDS) of nops views over
 * space sp, view op in kernel slot slot[op] (slot NULL: op); slots must
 * rise with op. All 0 for a space of no dims. */
void dla__cu_lay_of(const dla__cu_space *sp, const dla__cu_vw *vw, int nops, const int *slot,
                    int32_t *lay);

#ifdef __cplusplus
}
#endif
#endif

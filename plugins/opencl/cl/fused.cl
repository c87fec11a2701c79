/*
 * fused.cl - the fused elementwise program (ABI 1.2), interpreted: one
 * work-item per element of y runs the whole program on registers, so the
 * intermediates never reach memory. The program comes as a kernel argument
 * (dla_prog_T); unused inputs are bound to y's buffer and never read.
 *
 * Each step stores its result as T through DLA_CANON, exactly as the
 * one-op kernels store theirs, and computes it with the same ops.cl
 * expression: a program gives the bits of its steps. A comparison's register holds 1 or 0; where's
 * condition is true where nonzero.
 *
 * fused.c may also compile a program into a kernel of its own (the same
 * arguments, the steps written out; see DLA_FUSED_BODY) once it has seen
 * it run more than once, as a replayed trace does. fused_reduce.cl runs the
 * same interpreter (fused_eval_T) inside its sums. DLA_FUSED_NO_KERNEL
 * leaves the kernels out where a program only wants the interpreter.
 *
 * fused_multi_T (ABI 1.8) is fused_T that also stores some of the earlier
 * registers, register m.reg[k] into extra k (xk, vxk) for k < m.n, after
 * y; the extras come right after y and before the inputs (unused ones are
 * bound to y and never written). Every input of the element is loaded
 * before anything is stored, so a result that is an input's very view
 * (fused_multi allows that) reads the old value. The registers are packed
 * into one uint, m = n | reg[0] << 4 | reg[1] << 8 | ..., to keep the
 * kernel's arguments (16 views and the program) under the 1024 bytes
 * OpenCL promises.
 */
#define DLA_MAX_IN 8
#define DLA_MAX_INSNS 8

#define ENUM_U(name, EXPR) DLA_U_##name,
#define ENUM_B(name, EXPR, KIND) DLA_B_##name,
enum dla_u { DLA_UNARY_OPS(ENUM_U) DLA_U_COUNT };
enum dla_b { DLA_BINARY_OPS(ENUM_B) DLA_B_COUNT };

#define CASE_U(name, EXPR)                                                     \
    case DLA_U_##name:                                                         \
        return EXPR(x, al, be);
#define CASE_B(name, EXPR, KIND)                                               \
    case DLA_B_##name:                                                         \
        return EXPR(a, b);

/* Loads input i at coordinates c (the inputs are separate arguments). */
#define LOAD_IN(i) in##i[dla_at(&v##i, c)]
/* The inputs of element c into in[], 0 past p.ninputs. */
#define LOAD_INPUTS(in, p)                                                     \
    in[0] = (p).ninputs > 0 ? LOAD_IN(0) : 0;                                  \
    in[1] = (p).ninputs > 1 ? LOAD_IN(1) : 0;                                  \
    in[2] = (p).ninputs > 2 ? LOAD_IN(2) : 0;                                  \
    in[3] = (p).ninputs > 3 ? LOAD_IN(3) : 0;                                  \
    in[4] = (p).ninputs > 4 ? LOAD_IN(4) : 0;                                  \
    in[5] = (p).ninputs > 5 ? LOAD_IN(5) : 0;                                  \
    in[6] = (p).ninputs > 6 ? LOAD_IN(6) : 0;                                  \
    in[7] = (p).ninputs > 7 ? LOAD_IN(7) : 0
/* The inputs as kernel parameters. */
#define INPUT_PARAMS(T)                                                        \
    __global const T *in0, dla_vw v0, __global const T *in1, dla_vw v1,        \
        __global const T *in2, dla_vw v2, __global const T *in3, dla_vw v3,    \
        __global const T *in4, dla_vw v4, __global const T *in5, dla_vw v5,    \
        __global const T *in6, dla_vw v6, __global const T *in7, dla_vw v7

/* dla_prog_T, and fused_eval_T: the program's last register for the
 * values of its inputs in in[0 .. ninputs-1]; fused_run_T leaves every
 * register in r[] too (fused_reduce.cl's pair sums one more of them). */
#define DEF_FUSED(T)                                                           \
    typedef struct dla_prog_##T {                                              \
        T al[DLA_MAX_INSNS], be[DLA_MAX_INSNS];                                \
        int ninsns, ninputs;                                                   \
        int code[DLA_MAX_INSNS][5]; /* kind, op, src0, src1, src2 */           \
    } dla_prog_##T;                                                            \
                                                                               \
    static T fused_unary_##T(int op, T x, T al, T be)                          \
    {                                                                          \
        switch (op) {                                                          \
            DLA_UNARY_OPS(CASE_U)                                              \
        }                                                                      \
        return x;                                                              \
    }                                                                          \
    static T fused_binary_##T(int op, T a, T b)                                \
    {                                                                          \
        switch (op) {                                                          \
            DLA_BINARY_OPS(CASE_B)                                             \
        }                                                                      \
        return a;                                                              \
    }                                                                          \
                                                                               \
    static T fused_run_##T(const dla_prog_##T *p, const T *in, T *r)         \
    {                                                                          \
        T last = 0;                                                            \
        for (int j = 0; j < p->ninsns; j++) {                                  \
            T o[3];                                                            \
            for (int k = 0; k < 3; k++) {                                      \
                const int s = p->code[j][2 + k];                               \
                o[k] = s >= 0 ? r[s] : in[(-1 - s) & (DLA_MAX_IN - 1)];        \
            }                                                                  \
            const int kind = p->code[j][0], op = p->code[j][1];                \
            last = kind == 0   ? fused_unary_##T(op, o[0], p->al[j], p->be[j]) \
                   : kind == 1 ? fused_binary_##T(op, o[0], o[1])              \
                               : (o[0] != 0 ? o[1] : o[2]);                    \
            last = DLA_CANON(T, last);                                         \
            r[j] = last;                                                       \
        }                                                                      \
        return last;                                                           \
    }                                                                          \
    static T fused_eval_##T(const dla_prog_##T *p, const T *in)                \
    {                                                                          \
        T r[DLA_MAX_INSNS];                                                    \
        return fused_run_##T(p, in, r);                                        \
    }

#define DEF_FUSED_KERNEL(T)                                                    \
    __kernel void fused_##T(dla_shape sh, __global T *y, dla_vw vy,           \
                            INPUT_PARAMS(T), dla_prog_##T p)                   \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        T in[DLA_MAX_IN];                                                      \
        LOAD_INPUTS(in, p);                                                    \
        y[dla_at(&vy, c)] = fused_eval_##T(&p, in);                            \
    }

/* Extra k of fused_multi_T: register (m >> (4 + 4k)) & 15 where k < n. */
#define STORE_EXTRA(k)                                                         \
    if ((m & 15) > k)                                                          \
    x##k[dla_at(&vx##k, c)] = r[(m >> (4 + 4 * k)) & (DLA_MAX_INSNS - 1)]

#define DEF_FUSED_MULTI_KERNEL(T)                                              \
    __kernel void fused_multi_##T(                                             \
        dla_shape sh, __global T *y, dla_vw vy, __global T *x0, dla_vw vx0,    \
        __global T *x1, dla_vw vx1, __global T *x2, dla_vw vx2,                \
        __global T *x3, dla_vw vx3, __global T *x4, dla_vw vx4,                \
        __global T *x5, dla_vw vx5, __global T *x6, dla_vw vx6,                \
        INPUT_PARAMS(T), dla_prog_##T p, uint m)                               \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        T in[DLA_MAX_IN], r[DLA_MAX_INSNS];                                    \
        LOAD_INPUTS(in, p);                                                    \
        y[dla_at(&vy, c)] = fused_run_##T(&p, in, r);                          \
        STORE_EXTRA(0);                                                        \
        STORE_EXTRA(1);                                                        \
        STORE_EXTRA(2);                                                        \
        STORE_EXTRA(3);                                                        \
        STORE_EXTRA(4);                                                        \
        STORE_EXTRA(5);                                                        \
        STORE_EXTRA(6);                                                        \
    }

DEF_FUSED(float)
#ifdef DLA_FP64
DEF_FUSED(double)
#endif
#ifndef DLA_FUSED_NO_KERNEL
DEF_FUSED_KERNEL(float)
DEF_FUSED_MULTI_KERNEL(float)
#ifdef DLA_FP64
DEF_FUSED_KERNEL(double)
DEF_FUSED_MULTI_KERNEL(double)
#endif
#endif

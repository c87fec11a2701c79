/*
 * cuda_fused_emu.h - what tests/cuda_fused_emu.cpp (the harness, C++) and
 * tests/cuda_fused_emu_write.c (which writes the compiled programs' source
 * for the host compiler, C) share: the test programs, and the table of
 * the compiled programs that the written source ends with.
 */
#ifndef DLA_TESTS_CUDA_FUSED_EMU_H
#define DLA_TESTS_CUDA_FUSED_EMU_H

#include <dlaccel/plugin.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled program of the written source: its key (plugins/cuda/
 * fused_kern.h's dla__cu_fused_key_t as int32s, zeros after it), whether
 * its ops were written as constants, and its kernel, called as one thread
 * with a (dla_fviews, dla_fmviews or dla_fr, by its kind) and p
 * (dla_fprog); a fused_reduce's (kinds 1 and 2) block kernel, and its
 * thread kernel as run2. */
#define EMU_KEY_INTS 96
typedef struct emu_gen {
    int32_t key[EMU_KEY_INTS];
    int constops;
    void (*run)(const void *a, const void *p);
    void (*run2)(const void *a, const void *p);
} emu_gen;
extern const emu_gen emu_gens[];
extern const int emu_ngens;

static inline dla_fused_insn emu_insn(int kind, int op, int s0, int s1, int s2, double al,
                                      double be)
{
    dla_fused_insn in;
    memset(&in, 0, sizeof in);
    in.kind = (dla_fused_kind)kind;
    in.op = op;
    in.src[0] = s0;
    in.src[1] = s1;
    in.src[2] = s2;
    in.alpha = al;
    in.beta = be;
    return in;
}

/* The programs: program i into m (dtype f32 or f64; views not set). A
 * plain fused call runs m->program (the extras ignored). */
#define EMU_NPROG 4
/* The second register a pair of sums (fused_reduce_pair) takes. */
#define EMU_REDUCE_REG2 0
static inline void emu_program(int i, int f64, dla_fused_multi_args *m)
{
    memset(m, 0, sizeof *m);
    m->struct_size = sizeof *m;
    m->program.struct_size = sizeof m->program;
    dla_fused_args *a = &m->program;
    a->dtype = f64 ? DLA_F64 : DLA_F32;
    if (i == 0) { /* sgdm: w' = w - lr (mu v + g); extra v' */
        a->ninputs = 3;
        a->ninsns = 4;
        a->insns[0] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, -2, 0, 0, 0.9, 0);
        a->insns[1] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, 0, -3, 0, 0, 0);
        a->insns[2] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, 1, 0, 0, 0.01, 0);
        a->insns[3] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, 2, 0, 0, 0);
        m->nextra = 1;
        m->extra_reg[0] = 1;
    } else if (i == 1) { /* batch-normalization-like: 5 inputs, 3 extras */
        a->ninputs = 5;
        a->ninsns = 7;
        a->insns[0] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, -2, 0, 0, 0);
        a->insns[1] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, -3, -4, 0, 0, 0);
        a->insns[2] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, 1, 0, 0, 0);
        a->insns[3] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, 2, 0, 0, 0.3, -0.1);
        a->insns[4] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_GT, 3, -5, 0, 0, 0);
        a->insns[5] = emu_insn(DLA_FUSED_WHERE, 0, 4, 3, -1, 0, 0);
        a->insns[6] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_NEG, 5, 0, 0, 0, 0);
        m->nextra = 3;
        m->extra_reg[0] = 5;
        m->extra_reg[1] = 0;
        m->extra_reg[2] = 3;
    } else if (i == 2) { /* every slot: 8 inputs, 8 steps, 7 extras */
        a->ninputs = 8;
        a->ninsns = 8;
        a->insns[0] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, -1, -2, 0, 0, 0);
        a->insns[1] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, -3, 0, 0, 0);
        a->insns[2] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_EXP, 1, 0, 0, 0, 0);
        a->insns[3] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, 2, -4, 0, 0, 0);
        a->insns[4] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_NEG, 3, 0, 0, 0, 0);
        a->insns[5] = emu_insn(DLA_FUSED_WHERE, 0, -5, 4, -6, 0, 0);
        a->insns[6] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MAX, 5, -7, 0, 0, 0);
        a->insns[7] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_DIV, 6, -8, 0, 0, 0);
        m->nextra = 7;
        for (int k = 0; k < 7; k++)
            m->extra_reg[k] = 6 - k;
    } else { /* one input; 3 steps, 2 extras */
        a->ninputs = 1;
        a->ninsns = 3;
        a->insns[0] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, -1, 0, 0, 0.7, 1.5);
        a->insns[1] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_SQUARE, 0, 0, 0, 0, 0);
        a->insns[2] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_SIGMOID, 1, 0, 0, 0, 0);
        m->nextra = 2;
        m->extra_reg[0] = 1;
        m->extra_reg[1] = 0;
    }
}

/* The sums' programs (fused_reduce, and the pair with second register
 * EMU_REDUCE_REG2): steps whose values are integers for integer inputs,
 * so that their sums in double are exact in any order. Program i into a
 * (dtype f32 or f64; views not set). */
#define EMU_NREDPROG 2
static inline void emu_reduce_program(int i, int f64, dla_fused_args *a)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->dtype = f64 ? DLA_F64 : DLA_F32;
    if (i == 0) { /* (x - m)^2, and x - m: a batch normalization's statistics */
        a->ninputs = 2;
        a->ninsns = 2;
        a->insns[0] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, -2, 0, 0, 0);
        a->insns[1] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_SQUARE, 0, 0, 0, 0, 0);
    } else { /* 2 (x - m) dy + 1, and x - m: its backward's two sums */
        a->ninputs = 3;
        a->ninsns = 3;
        a->insns[0] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, -2, 0, 0, 0);
        a->insns[1] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, -3, 0, 0, 0);
        a->insns[2] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, 1, 0, 0, 2.0, 1.0);
    }
}
#ifdef __cplusplus
}

#include <functional>

/* The layout class of the compiled programs here (the written source
 * defines DLA_LAY_RUNTIME as its name): the words fused.c computed for
 * the launch at hand (plugins/cuda/fused_kern.h, DLA__CU_LAY_WORDS),
 * which the harness sets when it finds the program, where NVRTC's source
 * has them as constants. The frame reads them the same way either way. */
struct emu_lay_rt {
    static unsigned w(int i);
};

/* A launch of grid blocks of threads (<= EMU_TEAM) threads whose kernel
 * has barriers: each block's threads run at once on a team of host
 * threads (made by emu_team_open, ended by emu_team_close) and meet at
 * __syncthreads; the blocks one after another (cuda_fused_emu.cpp). */
#define EMU_TEAM 32
void emu_team_open();
void emu_team_close();
void emu_run_blocks(unsigned grid, unsigned threads, const std::function<void()> &one);

/* tests/cuda_onekern_emu.cpp: its cases, each reported by result; and
 * whether dla__cu_mem_alloc gives memory (only while it uploads steps). */
void emu_onekern_cases(void (*result)(int ok, const char *fmt, ...));
/* tests/cuda_segment_emu.cpp: runs of small launches as one node. */
void emu_segment_cases(void (*result)(int ok, const char *fmt, ...));
/* tests/cuda_kernels_emu.cpp: the plugin's other kernels against the cpu
 * plugin. */
void emu_kernel_cases(void (*result)(int ok, const char *fmt, ...));
extern int emu_alloc_allowed;
/* cuda_fused_emu.cpp: blocks given back to the pool while d->capturing. */
extern "C" int emu_freed_capturing;
/* cuda_fused_emu.cpp: blocks dla__cu_mem_alloc gave, ever. */
extern "C" int emu_allocs;
/* cuda_fused_emu.cpp: the runtime's last error (cudaGetLastError's). */
extern "C" int emu_last_error;
#endif
#endif

/*
 * fused_source.c - the CUDA C++ of a compiled fused program (nvrtc.c
 * compiles it; tests/cuda_fused_source.c compiles it on a machine without
 * a GPU, since NVRTC needs none): the frame of fused_kern.h with the
 * program's steps written out as calls of plugin_ops.h, and for fused
 * and fused_multi its operands' layout as constants. A fused_multi
 * program (kind 3) also gets the fused_multi types and frame, and an
 * evaluator of its own; the other kinds' sources do not hold them.
 */
#include "plugins/cuda/fused_kern.h"

#include <stdio.h>
#include <string.h>

void dla__cu_fused_key(const dla_fused_args *a, int kind, int reg2, dla__cu_fused_key_t *k)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->reg2 = kind == 2 ? reg2 : 0;
    k->f64 = a->dtype == DLA_F64;
    k->ninputs = a->ninputs;
    k->ninsns = a->ninsns;
    dla_kit_fused_code(a, k->code);
}

void dla__cu_fused_multi_key(const dla_fused_multi_args *m, dla__cu_fused_key_t *k)
{
    dla__cu_fused_key(&m->program, 3, 0, k);
    k->nextra = m->nextra;
    for (int x = 0; x < m->nextra && x < DLA_FUSED_MAX_EXTRA; x++)
        k->xreg[x] = m->extra_reg[x];
}

void dla__cu_fprog_of(const dla_fused_args *a, int reg2, dla_fprog *p)
{
    memset(p, 0, sizeof *p);
    p->ninsns = a->ninsns;
    p->ninputs = a->ninputs;
    p->reg2 = reg2;
    const int f32 = a->dtype == DLA_F32;
    for (int j = 0; j < a->ninsns && j < DLA_FUSED_MAX_INSNS; j++) {
        const dla_fused_insn *in = &a->insns[j];
        p->kind[j] = in->kind;
        p->op[j] = in->kind == DLA_FUSED_WHERE ? 0 : in->op;
        /* Operands an instruction does not read are input 0 (always
         * there, read as 0 when there are no inputs). */
        for (int s = 0; s < 3; s++)
            p->src[j][s] = s < dla_kit_fused_nsrc(in->kind) ? in->src[s] : -1;
        /* alpha and beta in the dtype, as the unary kernel takes them. */
        p->al[j] = f32 ? (double)(float)in->alpha : in->alpha;
        p->be[j] = f32 ? (double)(float)in->beta : in->beta;
    }
}

/* Appends to src (size bytes, n used), cutting at the end. */
#define PUT(...) n += (size_t)snprintf(src + n, n < size ? size - n : 0, __VA_ARGS__)

size_t dla__cu_fused_insn_source(int kind, const char *opx, const int *srcs, int j,
                                 const char *T, const char *al, const char *be, char *src,
                                 size_t size, size_t n)
{
    char o[3][16];
    for (int s = 0; s < 3; s++)
        snprintf(o[s], sizeof o[s], srcs[s] >= 0 ? "r%d" : "in[%d]",
                 srcs[s] >= 0 ? srcs[s] : -1 - srcs[s]);
    if (kind == DLA_FUSED_UNARY)
        PUT("    const %s r%d = dla_fun(%s, %s, (%s)%s, (%s)%s);\n", T, j, opx, o[0], T, al, T, be);
    else if (kind == DLA_FUSED_BINARY)
        PUT("    const %s r%d = dla_fbin(%s, %s, %s);\n", T, j, opx, o[0], o[1]);
    else
        PUT("    const %s r%d = %s != (%s)0 ? %s : %s;\n", T, j, o[0], T, o[1], o[2]);
    return n;
}

int dla__cu_fused_op_hidden(int kind, int op)
{
    return kind == DLA_FUSED_UNARY && op == DLA_UNARY_NEG;
}

/* The steps of k as constants r0 .. r<ninsns-1> of type T, appended at n;
 * the new length. */
static size_t put_steps(const dla__cu_fused_key_t *k, int constops, const char *T, char *src,
                        size_t size, size_t n)
{
    for (int j = 0; j < k->ninsns; j++) {
        /* The ops are written as constants (each step's switch over the
         * ops folds away: 12% of the digit CNN's step at batch 1024 on an
         * H200), but for neg, which is read from the argument: with a
         * comparison before it known too, NVVM folded the pair into a
         * select of -1 and +0 where the steps give -0 (seen on sm_90,
         * NVRTC 13.0); a neg it cannot see can only be rewired, which is
         * exact (dla__cu_fused_op_hidden). With constops 0
         * (DLACCEL_CUDA_FUSED_CONSTOPS=0) every op is read from the
         * argument. */
        char opx[24], al[24], be[24];
        const int srcs[3] = {k->code[j][2], k->code[j][3], k->code[j][4]};
        if (constops && !dla__cu_fused_op_hidden(k->code[j][0], k->code[j][1]))
            snprintf(opx, sizeof opx, "%d", (int)k->code[j][1]);
        else
            snprintf(opx, sizeof opx, "p.op[%d]", j);
        snprintf(al, sizeof al, "p.al[%d]", j);
        snprintf(be, sizeof be, "p.be[%d]", j);
        n = dla__cu_fused_insn_source(k->code[j][0], opx, srcs, j, T, al, be, src, size, n);
    }
    return n;
}

/* The operands' layout of k (fused_kern.h, DLA__CU_LAY_WORDS) as the
 * class dla_lay_c the kernel is instantiated with: its words as
 * constants, appended at n; the new length. A host build that defines
 * DLA_LAY_RUNTIME (tests/cuda_fused_emu) takes that class instead, which
 * gives the words of the launch at hand. */
static size_t put_layout(const dla__cu_fused_key_t *k, char *src, size_t size, size_t n)
{
    PUT("#ifdef DLA_LAY_RUNTIME\ntypedef DLA_LAY_RUNTIME dla_lay_c;\n#else\n"
        "struct dla_lay_c {\n  static __device__ __forceinline__ constexpr unsigned w(int i)\n"
        "  {\n    return ");
    for (int i = 0; i < DLA__CU_LAY_WORDS; i++)
        if (k->lay[i])
            PUT("i == %d ? %uu : ", i, (unsigned)k->lay[i]);
    PUT("0u;\n  }\n};\n#endif\n");
    return n;
}

/* A fused_multi program (kind 3): the fused_multi types and frame too,
 * and an evaluator whose multi gives the last register and the extras'
 * registers, wired as constants; appended at n, the new length. */
static size_t put_multi(const dla__cu_fused_key_t *k, int constops, const char *T, char *src,
                        size_t size, size_t n)
{
    static const char types[] = DLA__CU_FMULTI_TYPES(DLA__CU_STR);
    static const char frame[] = DLA__CU_FMULTI_FRAME(DLA__CU_STR);
    PUT("%s\n%s\n", types, frame);
    PUT("static_assert(sizeof(dla_fmviews) == %zu && sizeof(dla_fmviews) + sizeof(dla_fprog) < "
        "4096, \"dla_fused_multi layout\");\n",
        sizeof(dla_fmviews));
    PUT("struct dla_gen {\n  static constexpr int EXACT = 1;\n"
        "  static __device__ __forceinline__ void multi(const dla_fprog &p, "
        "const int *reg, const %s *in, %s &v, %s *x)\n  {\n    (void)p;\n    (void)reg;\n",
        T, T, T);
    n = put_steps(k, constops, T, src, size, n);
    PUT("    v = r%d;\n", k->ninsns - 1);
    for (int x = 0; x < k->nextra && x < DLA_FUSED_MAX_EXTRA; x++)
        PUT("    x[%d] = r%d;\n", x, (int)k->xreg[x]);
    PUT("  }\n};\n");
    n = put_layout(k, src, size, n);
    PUT("extern \"C\" __global__ void %s(dla_fmviews a, dla_fprog p)\n"
        "{\n  dla_fused_multi_body<%s, dla_gen, %d, %d, dla_lay_c>(a, p);\n}\n",
        DLA__CU_K_FMULTI, T, (int)k->ninputs, (int)k->nextra);
    return n;
}

size_t dla__cu_fused_prelude(char *src, size_t size, size_t n)
{
    static const char types[] = DLA__CU_FUSED_TYPES(DLA__CU_STR);
    static const char frame[] = DLA__CU_FUSED_FRAME(DLA__CU_STR);
    PUT("\n#define DLA__CU_F_OFF32 %d\n#define DLA__CU_FR_ROWS %d\n#define DLA__CU_LAY_DENSE_BIT %d\n"
        "#define DLA__CU_LAY_SAME_SHIFT %d\n%s\n%s\n",
        DLA__CU_F_OFF32, DLA__CU_FR_ROWS, DLA__CU_LAY_DENSE_BIT, DLA__CU_LAY_SAME_SHIFT, types,
        frame);
    return n;
}

size_t dla__cu_fused_source(const dla__cu_fused_key_t *k, int constops, char *src, size_t size)
{
    const char *T = k->f64 ? "double" : "float";
    size_t n = dla__cu_fused_prelude(src, size, 0);
    /* The layouts the host fills (a mismatch fails the compile). */
    PUT("static_assert(sizeof(dla_fviews) == %zu && sizeof(dla_fprog) == %zu && "
        "sizeof(dla_fr) == %zu, \"dla_fused layouts\");\n",
        sizeof(dla_fviews), sizeof(dla_fprog), sizeof(dla_fr));
    if (k->kind == 3)
        return put_multi(k, constops, T, src, size, n);
    PUT("struct dla_gen {\n  static constexpr int EXACT = 1;\n"
        "  static __device__ __forceinline__ void run(const dla_fprog &p, "
        "const %s *in, %s &v, %s &v2)\n  {\n    (void)p;\n",
        T, T, T);
    n = put_steps(k, constops, T, src, size, n);
    PUT("    v = r%d;\n", k->ninsns - 1);
    if (k->kind == 2)
        PUT("    v2 = r%d;\n", (int)k->reg2);
    else
        PUT("    v2 = (%s)0;\n", T);
    PUT("  }\n};\n");
    if (k->kind == 0) {
        n = put_layout(k, src, size, n);
        PUT("extern \"C\" __global__ void %s(dla_fviews a, dla_fprog p)\n"
            "{\n  dla_fused_body<%s, dla_gen, %d, dla_lay_c>(a, p);\n}\n",
            DLA__CU_K_FUSED, T, (int)k->ninputs);
    } else {
        const int pair = k->kind == 2;
        PUT("extern \"C\" __global__ void %s(dla_fr f, dla_fprog p)\n"
            "{\n  dla_fr_block_body<%s, dla_gen, %d, %d>(f, p);\n}\n",
            DLA__CU_K_FR_BLOCK, T, (int)k->ninputs, pair);
        PUT("extern \"C\" __global__ void %s(dla_fr f, dla_fprog p)\n"
            "{\n  dla_fr_thread_body<%s, dla_gen, %d, %d>(f, p);\n}\n",
            DLA__CU_K_FR_THREAD, T, (int)k->ninputs, pair);
    }
    return n;
}
#undef PUT

/*
 * cuda_fused_source.c - the source of the cuda plugin's compiled fused
 * programs (plugins/cuda/fused_source.c) compiled with NVRTC here, on a
 * machine without a GPU: NVRTC is a compiler and needs none.
 *
 * Why: a program NVRTC refuses stays interpreted on the GPU, correct but
 * several times slower, with one warning; nothing else fails. So a change
 * to the frame (fused_kern.h) or the writer that breaks the source would
 * pass every test on a GPU machine too. This compiles programs of every
 * kind (fused, fused_reduce, the pair, fused_multi), both dtypes, every
 * step kind, the ops read from the argument and written as constants, for
 * the architectures the plugin is built for, and fails on any refusal
 * with NVRTC's log.
 *
 * Skips (a TAP plan of 0) when NVRTC cannot be opened (the toolkit's library folder is
 * DLA_CUDA_LIBDIR, as the plugin's).
 */
#include "plugins/cuda/fused_kern.h"
#include "plugins/cuda/onekern_kern.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char dla__cu_src_plugin_ops[];

static struct {
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
} nv;

static int open_nvrtc(void)
{
    static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12"};
    void *h = NULL;
    for (int i = 0; i < 2 && !h; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", DLA_CUDA_LIBDIR, names[i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
        return 0;
    *(void **)&nv.create = dlsym(h, "nvrtcCreateProgram");
    *(void **)&nv.compile = dlsym(h, "nvrtcCompileProgram");
    *(void **)&nv.log_size = dlsym(h, "nvrtcGetProgramLogSize");
    *(void **)&nv.log = dlsym(h, "nvrtcGetProgramLog");
    *(void **)&nv.destroy = dlsym(h, "nvrtcDestroyProgram");
    return nv.create && nv.compile && nv.log_size && nv.log && nv.destroy;
}

/* Compiles body (after plugin_ops.h's text) for arch; 1 when NVRTC took
 * it, else its log on stderr under the name what. */
static int compiles_text(const char *body, const char *arch, const char *what)
{
    const size_t ops = strlen(dla__cu_src_plugin_ops), len = strlen(body);
    char *src = malloc(ops + len + 1);
    if (!src)
        return 0;
    memcpy(src, dla__cu_src_plugin_ops, ops);
    memcpy(src + ops, body, len + 1);
    const char *opts[] = {arch, "-std=c++17", "--fmad=false", "--ftz=false", "--prec-div=true",
                          "--prec-sqrt=true"};
    nvrtcProgram prog = NULL;
    int ok = nv.create(&prog, src, "dla_program.cu", 0, NULL, NULL) == NVRTC_SUCCESS &&
             nv.compile(prog, 6, opts) == NVRTC_SUCCESS;
    if (!ok) {
        size_t n = 0;
        char *log = NULL;
        if (prog && nv.log_size(prog, &n) == NVRTC_SUCCESS && (log = calloc(n + 1, 1)) &&
            nv.log(prog, log) == NVRTC_SUCCESS)
            fprintf(stderr, "%s (%s): NVRTC refused:\n%s\n", what, arch, log);
        else
            fprintf(stderr, "%s (%s): NVRTC refused (no log)\n", what, arch);
        free(log);
    }
    if (prog)
        nv.destroy(&prog);
    free(src);
    return ok;
}

/* Compiles the program of key k for arch; 1 when NVRTC took it. */
static int compiles_key(const dla__cu_fused_key_t *kp, int constops, const char *arch,
                        const char *name)
{
    const size_t size = dla__cu_fused_source(kp, constops, NULL, 0) + 1;
    char *body = malloc(size);
    if (!body)
        return 0;
    dla__cu_fused_source(kp, constops, body, size);
    char what[160];
    snprintf(what, sizeof what, "%s (kind %d, constops %d)", name, (int)kp->kind, constops);
    const int ok = compiles_text(body, arch, what);
    free(body);
    return ok;
}

/* A batch normalization's operands' layout (fused_kern.h,
 * DLA__CU_LAY_WORDS) over a space of 4 dims: y and input 0 dense, inputs
 * 1 and 2 per-channel (stride 0 along dims 0, 1 and 3; input 2 with input
 * 1's strides), inputs 3 and 4 and the extras walked (extra 1 with input
 * 3's strides). */
static void bn_layout(int32_t *lay)
{
    memset(lay, 0, DLA__CU_LAY_WORDS * sizeof *lay);
    lay[0] = 4;
    lay[1 + 0] = lay[1 + 1] = 1 << DLA__CU_LAY_DENSE_BIT;
    lay[1 + 2] = 0xb;
    lay[1 + 3] = 0xb | (1 + 2) << DLA__CU_LAY_SAME_SHIFT;
    lay[1 + 10] = (1 + 4) << DLA__CU_LAY_SAME_SHIFT;
}

/* Compiles program a as kernel kind (0..2) for arch (with_layout: kind 0
 * with bn_layout's words). */
static int compiles(const dla_fused_args *a, int kind, int reg2, int constops, int with_layout,
                    const char *arch, const char *name)
{
    dla__cu_fused_key_t k;
    dla__cu_fused_key(a, kind, reg2, &k);
    if (with_layout)
        bn_layout(k.lay);
    return compiles_key(&k, constops, arch, name);
}

/* Compiles fused_multi program m (kind 3) for arch (with_layout: with
 * bn_layout's words). */
static int compiles_multi(const dla_fused_multi_args *m, int constops, int with_layout,
                          const char *arch, const char *name)
{
    dla__cu_fused_key_t k;
    dla__cu_fused_multi_key(m, &k);
    if (with_layout)
        bn_layout(k.lay);
    return compiles_key(&k, constops, arch, name);
}

/* Whether the source of key k holds text (0 when not; -1 no memory). */
static int source_has(const dla__cu_fused_key_t *k, const char *text)
{
    const size_t n = dla__cu_fused_source(k, 1, NULL, 0) + 1;
    char *src = malloc(n);
    if (!src)
        return -1;
    dla__cu_fused_source(k, 1, src, n);
    const int has = strstr(src, text) != NULL;
    free(src);
    return has;
}

static dla_fused_insn insn(int kind, int op, int s0, int s1, int s2)
{
    dla_fused_insn in;
    memset(&in, 0, sizeof in);
    in.kind = kind;
    in.op = op;
    in.src[0] = s0, in.src[1] = s1, in.src[2] = s2;
    in.alpha = 0.5;
    in.beta = 0.25;
    return in;
}

/* A one kernel's steps as a capture records them (onekern.c): a GEMM
 * (f32), relu(a + b) over 8 elements, the 8-input program with neg and
 * where keeping 7 extras over 3 x 5 elements with broadcast and reversed
 * strides, a fill and a copy joined to the fill's phase, a paged f64
 * GEMM with a transposed A and beta 0.5, a mean over two reduced dims
 * for 2 x 3 outputs, and a max with its positions (f64). Addresses are
 * made up: NVRTC only compiles. */
#define CHAIN_STEPS 8
static int32_t chain_steps(dla__cu_k1_step *st, const dla_fused_multi_args *mmax)
{
    memset(st, 0, CHAIN_STEPS * sizeof *st);
    uintptr_t at = 0x7f0000001000u;
    st[0].kind = DLA__CU_K1_GEMM;
    dla__cu_sgemm *g = &st[0].u.gemm;
    g->m = 8, g->n = 1, g->k = 4, g->batch = 1, g->lda = 8, g->ldb = 4, g->ldc = 8;
    g->a = (const char *)(at += 4096), g->b = (const char *)(at += 4096);
    g->c = (char *)(at += 4096);
    g->alpha = 1.0;

    dla_fused_args relu;
    memset(&relu, 0, sizeof relu);
    relu.struct_size = sizeof relu;
    relu.dtype = DLA_F32;
    relu.ninputs = 2;
    relu.ninsns = 2;
    relu.insns[0] = insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, -1, -2, 0);
    relu.insns[1] = insn(DLA_FUSED_UNARY, DLA_UNARY_RELU, 0, 0, 0);
    st[1].kind = DLA__CU_K1_FUSED;
    dla__cu_fprog_of(&relu, 0, &st[1].u.fused.p);
    dla_fmviews *v = &st[1].u.fused.v;
    v->sp.nd = 1, v->sp.n = 8, v->sp.dims[0] = 8;
    for (int k = 0; k < 3; k++)
        v->v[k].base = (char *)(at += 4096), v->v[k].st[0] = 1;

    st[2].kind = DLA__CU_K1_FUSED;
    dla__cu_fprog_of(&mmax->program, 0, &st[2].u.fused.p);
    v = &st[2].u.fused.v;
    v->sp.nd = 2, v->sp.n = 15, v->sp.dims[0] = 3, v->sp.dims[1] = 5;
    v->nextra = 7;
    for (int k = 0; k < 16; k++) {
        v->v[k].base = (char *)(at += 4096);
        v->v[k].st[0] = k == 3 ? 0 : 1;
        v->v[k].st[1] = k == 4 ? -3 : 3;
        if (k < 7)
            v->reg[k] = mmax->extra_reg[k];
    }

    st[3].kind = DLA__CU_K1_FILL;
    dla__cu_k1_move *m = &st[3].u.move;
    m->sp.nd = 2, m->sp.n = 12, m->sp.dims[0] = 4, m->sp.dims[1] = 3;
    m->v[0].base = (char *)(at += 4096), m->v[0].st[0] = 1, m->v[0].st[1] = 5;
    m->esize = 4, m->bits = 0x3f800000u;

    st[4].kind = DLA__CU_K1_COPY;
    st[4].join = 1;
    m = &st[4].u.move;
    m->sp.nd = 1, m->sp.n = 6, m->sp.dims[0] = 6;
    m->v[0].base = (char *)(at += 4096), m->v[0].st[0] = 2;
    m->v[1].base = (char *)(at += 4096), m->v[1].st[0] = 1;
    m->esize = 8;

    st[5].kind = DLA__CU_K1_GEMM;
    st[5].f64 = 1;
    g = &st[5].u.gemm;
    g->f64 = 1, g->trans_a = 1, g->m = 3, g->n = 2, g->k = 5, g->batch = 2;
    g->lda = 5, g->ldb = 5, g->ldc = 3, g->sa = 15, g->sb = 0, g->sc = 6;
    g->a = (const char *)(at += 4096), g->b = (const char *)(at += 4096);
    g->c = (char *)(at += 4096);
    g->alpha = 2.0, g->beta = 0.5;

    for (int r = 6; r < 8; r++) {
        st[r].kind = DLA__CU_K1_REDUCE;
        dla__cu_red_launch *l = &st[r].u.red;
        l->shape = 1, l->parts = 1;
        l->y = (char *)(at += 4096), l->x = (const char *)(at += 4096);
        l->g.nk = 2, l->g.kd[0] = 2, l->g.kd[1] = 3;
        l->g.kx[0] = 1, l->g.kx[1] = 2, l->g.ky[0] = 1, l->g.ky[1] = 2;
        l->g.nr = 2, l->g.rd[0] = 4, l->g.rd[1] = 5, l->g.rx[0] = 6, l->g.rx[1] = 24;
        l->g.outputs = 6, l->g.nred = 20, l->g.xoff = 3;
    }
    st[6].u.red.op = 1; /* mean */
    st[7].f64 = 1;
    st[7].u.red.f64 = 1;
    st[7].u.red.op = 2; /* max */
    st[7].u.red.want_index = 1;
    st[7].u.red.index = (int32_t *)(at += 4096);
    st[7].u.red.g.ki[0] = 1, st[7].u.red.g.ki[1] = 2;
    return CHAIN_STEPS;
}

/* How many times text occurs in src. */
static int count_of(const char *src, const char *text)
{
    int n = 0;
    for (const char *p = strstr(src, text); p; p = strstr(p + 1, text))
        n++;
    return n;
}

/* The chain's one-kernel source (prof: with the profile's laps), or NULL. */
static char *chain_source(const dla__cu_k1_step *st, int32_t nst, int prof)
{
    const size_t size = dla__cu_k1_source(st, nst, prof, NULL, 0) + 1;
    char *src = size > 1 ? malloc(size) : NULL;
    if (src)
        dla__cu_k1_source(st, nst, prof, src, size);
    return src;
}

/* The one kernel compiled for a plan (onekern_source.c): it compiles for
 * each architecture, with and without the profile's laps; its source
 * reads neg's op from the argument, says alpha's and beta's bits, has a
 * barrier after the copies in and after each phase (none after a step the
 * next one joins), writes the mean and the max with positions, and calls
 * the one copy function from one site each way; a reduce the one kernel
 * does not record (another launch shape, in parts) leaves no source. n:
 * the tests so far, updated; the failures returned. */
static int onekern_cases(const dla_fused_multi_args *mmax, const char *const *archs, int *n)
{
    dla__cu_k1_step st[CHAIN_STEPS];
    const int32_t nst = chain_steps(st, mmax);
    int failed = 0;
    for (int arch = 0; arch < 2; arch++)
        for (int prof = 0; prof < 2; prof++) {
            char *src = chain_source(st, nst, prof);
            const int ok = src && compiles_text(src, archs[arch], "one kernel");
            free(src);
            failed += !ok;
            printf("%s %d - one kernel of 8 steps compiled for its plan, %s%s\n",
                   ok ? "ok" : "not ok", ++*n, archs[arch] + 19, prof ? ", profiled" : "");
        }
    char *src = chain_source(st, nst, 0);
    /* The kernel's own text (the frame before it has barriers of its own). */
    const char *k = src ? strstr(src, "__global__ void __launch_bounds__") : NULL;
    int ok = k && count_of(k, "dla_fun(negop,") == 1 &&
             count_of(k, "__longlong_as_double(0x3fe0000000000000ull)") >= 1 && /* beta 0.5 */
             count_of(k, "__longlong_as_double(0x4000000000000000ull)") == 1 && /* alpha 2 */
             count_of(k, "__syncthreads();") == 1 + CHAIN_STEPS - 1 &&
             count_of(k, "s += (double)v;") == 1 && count_of(k, "/ (double)20LL)") == 1 &&
             count_of(k, "red_takes<true>(v, p, best, pos)") == 1 &&
             count_of(k, "[io] = (int)pos;") == 1 &&
             count_of(k, "dla__cu_deal_regions(") == 2 && count_of(k, "dla_k1c_region(") == 2;
    free(src);
    failed += !ok;
    printf("%s %d - the one kernel's source: neg from the argument, alpha and beta as bits, "
           "8 barriers, a mean and a max with its positions, one copy site each way\n",
           ok ? "ok" : "not ok", ++*n);
    /* A reduce the one kernel does not record (a block per output, or in
     * parts) is not written. */
    st[6].u.red.shape = 0;
    src = chain_source(st, nst, 0);
    ok = src == NULL && dla__cu_k1_source(st, nst, 0, NULL, 0) == 0;
    free(src);
    st[6].u.red.shape = 1;
    st[7].u.red.parts = 2;
    src = chain_source(st, nst, 0);
    ok = ok && src == NULL;
    free(src);
    failed += !ok;
    printf("%s %d - a one kernel with a reduce of another launch shape, or in parts, has no "
           "compiled source\n",
           ok ? "ok" : "not ok", ++*n);
    return failed;
}

int main(void)
{
    if (!open_nvrtc()) {
        printf("1..0 # SKIP NVRTC not found (%s)\n", dlerror());
        return 0;
    }
    /* A batch normalization's backward (five inputs, every step kind:
     * unary with neg, binary, where), and a single unary step on one input. */
    dla_fused_args big, small;
    memset(&big, 0, sizeof big);
    big.struct_size = sizeof big;
    big.ninputs = 5;
    big.ninsns = 7;
    big.insns[0] = insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, -2, 0);
    big.insns[1] = insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, -3, -4, 0);
    big.insns[2] = insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, 1, 0);
    big.insns[3] = insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, 2, 0, 0);
    big.insns[4] = insn(DLA_FUSED_BINARY, DLA_BINARY_GT, 3, -5, 0);
    big.insns[5] = insn(DLA_FUSED_WHERE, 0, 4, 3, -1);
    big.insns[6] = insn(DLA_FUSED_UNARY, DLA_UNARY_NEG, 5, 0, 0); /* neg stays an argument */
    memset(&small, 0, sizeof small);
    small.struct_size = sizeof small;
    small.ninputs = 1;
    small.ninsns = 1;
    small.insns[0] = insn(DLA_FUSED_UNARY, DLA_UNARY_RELU, -1, 0, 0);

    /* fused_multi (kind 3): the batch normalization's backward keeping
     * three of its registers; an SGDM update of one parameter (v' = mu v
     * + g, w' = w - lr v': one extra, the new velocity); and the most
     * operands a kernel takes: eight inputs, eight steps, seven extras. */
    dla_fused_multi_args mbig, msgdm, mmax;
    memset(&mbig, 0, sizeof mbig);
    mbig.struct_size = sizeof mbig;
    mbig.program = big;
    mbig.nextra = 3;
    mbig.extra_reg[0] = 2, mbig.extra_reg[1] = 3, mbig.extra_reg[2] = 5;
    memset(&msgdm, 0, sizeof msgdm);
    msgdm.struct_size = sizeof msgdm;
    msgdm.program.struct_size = sizeof msgdm.program;
    msgdm.program.ninputs = 3; /* w, v, g */
    msgdm.program.ninsns = 4;
    msgdm.program.insns[0] = insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, -2, 0, 0);   /* mu v */
    msgdm.program.insns[1] = insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, 0, -3, 0);   /* + g */
    msgdm.program.insns[2] = insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, 1, 0, 0);   /* lr v' */
    msgdm.program.insns[3] = insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, -1, 2, 0);   /* w - */
    msgdm.nextra = 1;
    msgdm.extra_reg[0] = 1;
    memset(&mmax, 0, sizeof mmax);
    mmax.struct_size = sizeof mmax;
    mmax.program.struct_size = sizeof mmax.program;
    mmax.program.ninputs = 8;
    mmax.program.ninsns = 8;
    mmax.program.insns[0] = insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, -1, -2, 0);
    mmax.program.insns[1] = insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, -3, 0);
    mmax.program.insns[2] = insn(DLA_FUSED_UNARY, DLA_UNARY_EXP, 1, 0, 0);
    mmax.program.insns[3] = insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, 2, -4, 0);
    mmax.program.insns[4] = insn(DLA_FUSED_UNARY, DLA_UNARY_NEG, 3, 0, 0);
    mmax.program.insns[5] = insn(DLA_FUSED_WHERE, 0, -5, 4, -6);
    mmax.program.insns[6] = insn(DLA_FUSED_BINARY, DLA_BINARY_MAX, 5, -7, 0);
    mmax.program.insns[7] = insn(DLA_FUSED_BINARY, DLA_BINARY_DIV, 6, -8, 0);
    mmax.nextra = 7;
    for (int k = 0; k < 7; k++)
        mmax.extra_reg[k] = 6 - k;
    dla_fused_multi_args *const multis[] = {&mbig, &msgdm, &mmax};
    static const char *const mnames[] = {"batchnorm backward, 3 extras", "sgdm, 1 extra",
                                         "8 inputs, 7 extras"};

    static const char *const archs[] = {"--gpu-architecture=sm_80", "--gpu-architecture=sm_90"};
    int n = 0, failed = 0;
    printf("1..%d\n", 2 * 2 * 3 * 2 * 2 + 2 * 2 * 2 * 3 + 2 * 2 * 2 + 2 + 6);
    for (int arch = 0; arch < 2; arch++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int kind = 0; kind < 3; kind++)
                for (int constops = 0; constops < 2; constops++)
                    for (int which = 0; which < 2; which++) {
                        dla_fused_args *a = which ? &small : &big;
                        a->dtype = f64 ? DLA_F64 : DLA_F32;
                        const char *name = which ? "relu" : "batchnorm backward";
                        const int ok = compiles(a, kind, which ? 0 : 2, constops, 0,
                                                archs[arch], name);
                        failed += !ok;
                        printf("%s %d - %s, %s, %s, kind %d, ops %s\n", ok ? "ok" : "not ok",
                               ++n, name, archs[arch] + 19, f64 ? "double" : "single", kind,
                               constops ? "constant" : "from the argument");
                    }
    for (int arch = 0; arch < 2; arch++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int constops = 0; constops < 2; constops++)
                for (int which = 0; which < 3; which++) {
                    dla_fused_multi_args *m = multis[which];
                    m->program.dtype = f64 ? DLA_F64 : DLA_F32;
                    const int ok = compiles_multi(m, constops, 0, archs[arch], mnames[which]);
                    failed += !ok;
                    printf("%s %d - fused_multi %s, %s, %s, ops %s\n", ok ? "ok" : "not ok", ++n,
                           mnames[which], archs[arch] + 19, f64 ? "double" : "single",
                           constops ? "constant" : "from the argument");
                }
    /* The batch normalization's backward as fused and fused_multi with a
     * layout compiled in. */
    for (int arch = 0; arch < 2; arch++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int multi = 0; multi < 2; multi++) {
                big.dtype = mbig.program.dtype = f64 ? DLA_F64 : DLA_F32;
                const int ok = multi ? compiles_multi(&mbig, 1, 1, archs[arch], mnames[0])
                                     : compiles(&big, 0, 0, 1, 1, archs[arch], "batchnorm backward");
                failed += !ok;
                printf("%s %d - %s batchnorm backward with its layout compiled in, %s, %s\n",
                       ok ? "ok" : "not ok", ++n, multi ? "fused_multi" : "fused",
                       archs[arch] + 19, f64 ? "double" : "single");
            }
    /* The layout's words, each where the frame reads it, and none in a
     * source without one. */
    {
        dla__cu_fused_key_t k;
        mbig.program.dtype = DLA_F32;
        dla__cu_fused_multi_key(&mbig, &k);
        bn_layout(k.lay);
        int ok = source_has(&k, "return i == 0 ? 4u : i == 1 ? 256u : i == 2 ? 256u : "
                                "i == 3 ? 11u : i == 4 ? 12299u : i == 11 ? 20480u : 0u;") == 1;
        dla__cu_fused_multi_key(&mbig, &k);
        ok = ok && source_has(&k, "return 0u;") == 1 &&
             source_has(&k, "dla_fused_multi_body<float, dla_gen, 5, 3, dla_lay_c>") == 1;
        failed += !ok;
        printf("%s %d - the layout's words as the constants of dla_lay_c\n", ok ? "ok" : "not ok",
               ++n);
    }
    /* The other kinds' sources are as before fused_multi: none holds its
     * frame. */
    int plain = 1;
    for (int kind = 0; kind < 3; kind++) {
        dla__cu_fused_key_t k;
        dla__cu_fused_key(&big, kind, 2, &k);
        plain = plain && source_has(&k, "dla_fmviews") == 0;
    }
    failed += !plain;
    printf("%s %d - fused, fused_reduce and the pair: no fused_multi text in their source\n",
           plain ? "ok" : "not ok", ++n);
    mmax.program.dtype = DLA_F32;
    failed += onekern_cases(&mmax, archs, &n);
    return failed ? 1 : 0;
}

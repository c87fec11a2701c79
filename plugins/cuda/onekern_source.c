/*
 * onekern_source.c - the CUDA C++ of a plan's one kernel compiled for that
 * plan (DLACCEL_CUDA_K1_COMPILE; onekern_kern.h says why).
 *
 * The interpreted one kernel reads each step's descriptor and runs a
 * general loop over it: 64-bit divisions by dims it learns at run time,
 * and a fused program's instructions through a switch over every op, with
 * its registers in local memory. The H200's profile of the tiny MLP's
 * step put each step at 1,900 to 4,700 cycles whether its data lay in
 * shared memory or not (docs/plugins.md): the cost is the interpreting.
 * Here every step is written out with what the capture recorded as
 * constants (its kind, dims, strides, addresses, ops, alpha and beta), so
 * the compiler unrolls and folds it, and divides by constants.
 *
 * Each step computes what its kernel computes, in the same order and
 * type: a GEMM's k products added one by one from +0, then alpha, then
 * beta's term where beta is not 0 (onekern_kernels.cu's sgemm_body); a
 * fused step's instructions as fused_source.c writes a compiled program
 * (the same plugin_ops.h calls; neg's op read from the argument negop, as
 * there), its inputs all read before its results are written; a fill's
 * and a copy's bit patterns; a reduce step (launch shape 1 in one part,
 * as onekern.c records them) as reduce_dev.cuh's thread body: its sum in
 * double in position order, its max or min by red_takes (reduce_kern.h's
 * frame, in the source too). The regions in and out are copied with
 * copy_kern.h's frame, the small ones dealt to warps, as there.
 */
#include "plugins/cuda/onekern_kern.h"

#include <stdio.h>
#include <string.h>

/* Appends to src (size bytes, n used), cutting at the end. */
#define PUT(...) n += (size_t)snprintf(src + n, n < size ? size - n : 0, __VA_ARGS__)


/* v as an expression of type double with its exact bits (NaN, infinities
 * and -0 included, which a decimal literal cannot all say). */
static void double_bits(double v, char *out, size_t size)
{
    unsigned long long b;
    memcpy(&b, &v, sizeof b);
    snprintf(out, size, "__longlong_as_double(0x%016llxull)", b);
}

/* The offsets of a position pos over dims[0 .. nd-1]: "const long long
 * NAME = base + c0 * st0 + ..." for the nv names at once, with the
 * coordinates column-major, the last one what is left (pos lies within
 * the dims' product), as dla__cu_locate, dla_fmlocate and red_output walk
 * them. A dim of one (or none: the loop then never runs) divides nothing.
 * px prefixes the walk's own names (a reduce nests two). */
static size_t put_walk(const char *pos, const char *px, int nd, const int64_t *dims, int nv,
                       const char *const *name, const int64_t *base, const int64_t *const *st,
                       char *src, size_t size, size_t n)
{
    PUT("      unsigned %su = (unsigned)%s;\n      (void)%su;\n", px, pos, px);
    for (int d = 0; d < nd; d++) {
        if (d == nd - 1)
            PUT("      const unsigned %sc%d = %su;\n", px, d, px);
        else if (dims[d] > 1)
            PUT("      const unsigned %sc%d = %su %% %lluu;\n      %su /= %lluu;\n", px, d, px,
                (unsigned long long)dims[d], px, (unsigned long long)dims[d]);
        else
            PUT("      const unsigned %sc%d = 0u;\n", px, d);
    }
    for (int v = 0; v < nv; v++) {
        PUT("      const long long %s = %lldLL", name[v], (long long)base[v]);
        for (int d = 0; d < nd; d++)
            if (st[v][d] != 0)
                PUT(" + (long long)%sc%d * %lldLL", px, d, (long long)st[v][d]);
        PUT(";\n");
    }
    return n;
}

/* The offsets o0 .. o15 of views' slots (put_walk's names and bases). */
static const char *const slot_names[16] = {"o0", "o1", "o2",  "o3",  "o4",  "o5",  "o6",  "o7",
                                           "o8", "o9", "o10", "o11", "o12", "o13", "o14", "o15"};
static const int64_t zeros[16];

static size_t put_gemm(const dla__cu_sgemm *g, char *src, size_t size, size_t n)
{
    const char *T = g->f64 ? "double" : "float";
    const long long ai = g->trans_a ? g->lda : 1, al = g->trans_a ? 1 : g->lda;
    const long long bl = g->trans_b ? g->ldb : 1, bj = g->trans_b ? 1 : g->ldb;
    const int beta = g->f64 ? g->beta != 0 : (float)g->beta != 0.0f;
    char alpha_s[64], beta_s[64];
    double_bits(g->alpha, alpha_s, sizeof alpha_s);
    double_bits(g->beta, beta_s, sizeof beta_s);
    /* An empty C (never launched) divides by nothing. */
    const long long m = g->m > 1 ? g->m : 1, mn = g->m * g->n > 1 ? g->m * g->n : 1;
    PUT("    for (int t = threadIdx.x; t < %lld; t += blockDim.x) {\n",
        (long long)(g->m * g->n * g->batch));
    PUT("      const int p = t / %lld, r = t - p * %lld, j = r / %lld, i = r - j * %lld;\n", mn,
        mn, m, m);
    PUT("      const %s *a = (const %s *)0x%llxull + p * %lldLL + i * %lldLL;\n", T, T,
        (unsigned long long)(uintptr_t)g->a, (long long)g->sa, ai);
    PUT("      const %s *b = (const %s *)0x%llxull + p * %lldLL + j * %lldLL;\n", T, T,
        (unsigned long long)(uintptr_t)g->b, (long long)g->sb, bj);
    PUT("      %s *c = (%s *)0x%llxull + p * %lldLL + i + j * %lldLL;\n", T, T,
        (unsigned long long)(uintptr_t)g->c, (long long)g->sc, (long long)g->ldc);
    PUT("      %s acc = 0;\n#pragma unroll\n      for (int l = 0; l < %lld; l++)\n"
        "        acc = acc + a[l * %lldLL] * b[l * %lldLL];\n",
        T, (long long)g->k, al, bl);
    PUT("      %s v = (%s)%s * acc;\n", T, T, alpha_s);
    if (beta)
        PUT("      v = v + (%s)%s * *c;\n", T, beta_s);
    PUT("      *c = v;\n    }\n");
    return n;
}

static size_t put_fused(const dla_fmviews *v, const dla_fprog *p, int f64, char *src,
                        size_t size, size_t n)
{
    const char *T = f64 ? "double" : "float";
    int64_t dims[8], st[16][8];
    const char *names[16];
    const int64_t *sts[16];
    int nv = 0;
    const int nd = v->sp.nd < 1 ? 1 : v->sp.nd > 8 ? 8 : v->sp.nd;
    for (int d = 0; d < 8; d++)
        dims[d] = (int64_t)v->sp.dims[d];
    for (int k = 0; k < 16; k++)
        if (k <= p->ninputs || (k >= 9 && k < 9 + v->nextra)) {
            for (int d = 0; d < 8; d++)
                st[nv][d] = (int64_t)v->v[k].st[d];
            names[nv] = slot_names[k];
            sts[nv] = st[nv];
            nv++;
        }
    PUT("    for (int e = threadIdx.x; e < %lld; e += blockDim.x) {\n", (long long)v->sp.n);
    n = put_walk("e", "", nd, dims, nv, names, zeros, sts, src, size, n);
    PUT("      %s in[8];\n", T);
    for (int k = 0; k < 8; k++) {
        if (k < p->ninputs)
            PUT("      in[%d] = ((const %s *)0x%llxull)[o%d];\n", k, T,
                (unsigned long long)(uintptr_t)v->v[1 + k].base, 1 + k);
        else
            PUT("      in[%d] = (%s)0;\n", k, T);
    }
    const int ninsns = p->ninsns < 1 ? 1 : p->ninsns > 8 ? 8 : p->ninsns;
    for (int j = 0; j < ninsns; j++) {
        char opx[24], al[64], be[64];
        if (dla__cu_fused_op_hidden(p->kind[j], p->op[j]))
            snprintf(opx, sizeof opx, "negop");
        else
            snprintf(opx, sizeof opx, "%d", p->op[j]);
        double_bits(p->al[j], al, sizeof al);
        double_bits(p->be[j], be, sizeof be);
        n = dla__cu_fused_insn_source(p->kind[j], opx, p->src[j], j, T, al, be, src, size, n);
    }
    for (int x = 0; x < v->nextra && x < 7; x++)
        PUT("      ((%s *)0x%llxull)[o%d] = r%d;\n", T,
            (unsigned long long)(uintptr_t)v->v[9 + x].base, 9 + x, v->reg[x] & 7);
    PUT("      ((%s *)0x%llxull)[o0] = r%d;\n    }\n", T,
        (unsigned long long)(uintptr_t)v->v[0].base, ninsns - 1);
    return n;
}

static size_t put_move(int kind, const dla__cu_k1_move *m, char *src, size_t size, size_t n)
{
    const char *U = m->esize == 1   ? "unsigned char"
                    : m->esize == 4 ? "unsigned"
                                    : "unsigned long long";
    const int nv = kind == DLA__CU_K1_COPY ? 2 : 1;
    const int nd = m->sp.nd < 1 ? 1 : m->sp.nd > DLA__CU_MAXD ? DLA__CU_MAXD : m->sp.nd;
    const int64_t *const sts[2] = {m->v[0].st, m->v[1].st};
    PUT("    for (int e = threadIdx.x; e < %lld; e += blockDim.x) {\n", (long long)m->sp.n);
    n = put_walk("e", "", nd, m->sp.dims, nv, slot_names, zeros, sts, src, size, n);
    if (kind == DLA__CU_K1_FILL)
        PUT("      ((%s *)0x%llxull)[o0] = (%s)0x%llxull;\n    }\n", U,
            (unsigned long long)(uintptr_t)m->v[0].base, U, (unsigned long long)m->bits);
    else
        PUT("      ((%s *)0x%llxull)[o0] = ((const %s *)0x%llxull)[o1];\n    }\n", U,
            (unsigned long long)(uintptr_t)m->v[0].base, U,
            (unsigned long long)(uintptr_t)m->v[1].base);
    return n;
}

/* A reduce of launch shape 1 in one part (reduce_dev.cuh's thread
 * bodies): a thread per output walks its positions in order, a sum in
 * double (a mean divided once), a max or min keeping the first position
 * of the best (red_takes). */
static size_t put_reduce(const dla__cu_red_launch *l, char *src, size_t size, size_t n)
{
    const dla__cu_red_geom *g = &l->g;
    const char *T = l->f64 ? "double" : "float";
    const int nk = g->nk < 0 ? 0 : g->nk > DLA__CU_RD ? DLA__CU_RD : (int)g->nk;
    const int nr = g->nr < 0 ? 0 : g->nr > DLA__CU_RD ? DLA__CU_RD : (int)g->nr;
    PUT("    for (int o = threadIdx.x; o < %lld; o += blockDim.x) {\n", (long long)g->outputs);
    static const char *const out_names[3] = {"xo", "yo", "io"};
    const int64_t out_base[3] = {g->xoff, g->yoff, g->ioff};
    const int64_t *const out_st[3] = {g->kx, g->ky, g->ki};
    n = put_walk("o", "k", nk, g->kd, 3, out_names, out_base, out_st, src, size, n);
    PUT("      (void)io;\n      (void)yo;\n");
    const int sum = l->op == 0 || l->op == 1;
    if (sum)
        PUT("      double s = 0;\n");
    else
        PUT("      %s best = 0;\n      long long pos = -1;\n", T);
    PUT("#pragma unroll 8\n      for (int p = 0; p < %lld; p++) {\n", (long long)g->nred);
    static const char *const pos_name[1] = {"at"};
    const int64_t *const pos_st[1] = {g->rx};
    n = put_walk("p", "r", nr, g->rd, 1, pos_name, zeros, pos_st, src, size, n);
    PUT("        const %s v = ((const %s *)0x%llxull)[xo + at];\n", T, T,
        (unsigned long long)(uintptr_t)l->x);
    if (sum)
        PUT("        s += (double)v;\n      }\n");
    else
        PUT("        if (red_takes<%s>(v, p, best, pos))\n          best = v, pos = p;\n      }\n",
            l->op == 2 ? "true" : "false");
    if (l->op == 1)
        PUT("      ((%s *)0x%llxull)[yo] = (%s)(s / (double)%lldLL);\n", T,
            (unsigned long long)(uintptr_t)l->y, T, (long long)g->nred);
    else if (sum)
        PUT("      ((%s *)0x%llxull)[yo] = (%s)s;\n", T, (unsigned long long)(uintptr_t)l->y, T);
    else
        PUT("      ((%s *)0x%llxull)[yo] = best;\n", T, (unsigned long long)(uintptr_t)l->y);
    if (!sum && l->index)
        PUT("      ((int *)0x%llxull)[io] = (int)pos;\n", (unsigned long long)(uintptr_t)l->index);
    PUT("    }\n");
    return n;
}

/* The regions of copies c (the argument k1_in or k1_out) as the
 * interpreted kernel copies them (dla__cu_deal_regions, a warp to each
 * small one), each by a call of the one copy function: inlined, each site
 * of the copy (three unit sizes, each loop unrolled) cost NVRTC about a
 * tenth of a second on this machine, and written out region by region
 * the MLP's eleven regions took over a second (1.8 s on the H200's host). */
static size_t put_copies(const char *c, char *src, size_t size, size_t n)
{
    PUT("  dla__cu_deal_regions(%s, 32u, %dLL, [&](int r, long long first, long long stride) {\n"
        "    dla_k1c_region(%s.dst[r], %s.src[r], %s.bytes[r], first, stride);\n  });\n",
        c, (int)DLA__CU_K1_GROUP_BYTES(32), c, c, c);
    return n;
}

/* The profile's lap after a barrier (onekern_kernels.cu's k1_lap); none
 * when the launch has no counters (their memory could not be had). */
static size_t put_lap(int prof, int slot, char *src, size_t size, size_t n)
{
    if (prof)
        PUT("  if (prof && threadIdx.x == 0) {\n    const long long now = clock64();\n"
            "    atomicAdd(&prof[%d], (unsigned long long)(now - lap));\n    lap = now;\n  }\n",
            slot);
    return n;
}

size_t dla__cu_k1_source(const dla__cu_k1_step *steps, int32_t nsteps, int prof, char *src,
                         size_t size)
{
    for (int32_t s = 0; s < nsteps; s++) {
        const int k = steps[s].kind;
        const dla__cu_red_launch *l = &steps[s].u.red;
        if (k == DLA__CU_K1_REDUCE ? l->shape != 1 || l->parts != 1 || l->op < 0 || l->op > 3
                                   : k != DLA__CU_K1_FUSED && k != DLA__CU_K1_GEMM &&
                                         k != DLA__CU_K1_FILL && k != DLA__CU_K1_COPY)
            return 0;
    }
    static const char copy_frame[] = DLA__CU_COPY_FRAME(DLA__CU_STR);
    static const char fmulti_types[] = DLA__CU_FMULTI_TYPES(DLA__CU_STR);
    static const char red_frame[] = DLA__CU_RED_TAKES_FRAME(DLA__CU_STR);
    size_t n = dla__cu_fused_prelude(src, size, 0);
    PUT("%s\n%s\n%s\n", fmulti_types, copy_frame, red_frame);
    PUT("struct dla_k1c_copies {\n  int n;\n  const char *src[%d];\n  char *dst[%d];\n"
        "  long long bytes[%d];\n};\n",
        DLA__CU_COPIES, DLA__CU_COPIES, DLA__CU_COPIES);
    PUT("static_assert(sizeof(dla_k1c_copies) == %zu, \"dla__cu_copies layout\");\n",
        sizeof(dla__cu_copies));
    /* The copy's one body, called from each site (put_copies). */
    PUT("__device__ __noinline__ void dla_k1c_region(char *dst, const char *src, long long bytes,\n"
        "                                            long long first, long long stride)\n{\n"
        "  dla__cu_copy_region(dst, src, bytes, first, stride);\n}\n");
    PUT("extern \"C\" __global__ void __launch_bounds__(%d)\n"
        "%s(const dla_k1c_copies k1_in, const dla_k1c_copies k1_out, unsigned long long *prof, "
        "int negop)\n{\n",
        DLA__CU_THREADS, DLA__CU_K_K1C);
    PUT("  (void)prof;\n  (void)negop;\n"
        );
    /* A programmatic dependent launch's (DLACCEL_CUDA_K1_PDL) let and
     * wait, as the interpreted kernel's: nothing to stage here. */
    PUT("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
        "  asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");\n"
        "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n#endif\n");
    if (prof)
        PUT("  long long lap = clock64();\n");
    n = put_copies("k1_in", src, size, n);
    PUT("  __syncthreads();\n");
    n = put_lap(prof, 0, src, size, n);
    for (int32_t s = 0; s < nsteps; s++) {
        const dla__cu_k1_step *st = &steps[s];
        PUT("  { /* step %d */\n", (int)s);
        if (st->kind == DLA__CU_K1_GEMM)
            n = put_gemm(&st->u.gemm, src, size, n);
        else if (st->kind == DLA__CU_K1_FUSED)
            n = put_fused(&st->u.fused.v, &st->u.fused.p, st->f64, src, size, n);
        else if (st->kind == DLA__CU_K1_REDUCE)
            n = put_reduce(&st->u.red, src, size, n);
        else
            n = put_move(st->kind, &st->u.move, src, size, n);
        PUT("  }\n");
        /* A step that joins the next phase has no barrier after it
         * (dla__cu_k1_join), as in the interpreted kernel. */
        if (s + 1 < nsteps && steps[s + 1].join)
            continue;
        PUT("  __syncthreads();\n");
        n = put_lap(prof, 1 + (s < DLA__CU_K1_PROF_STEPS ? s : DLA__CU_K1_PROF_STEPS - 1), src,
                    size, n);
    }
    n = put_copies("k1_out", src, size, n);
    if (prof) {
        PUT("  __syncthreads();\n");
        n = put_lap(prof, DLA__CU_K1_PROF_OUT, src, size, n);
        PUT("  if (prof && threadIdx.x == 0)\n    atomicAdd(&prof[%d], 1ull);\n",
            DLA__CU_K1_PROF_LAUNCHES);
    }
    PUT("}\n");
    return n;
}
#undef PUT

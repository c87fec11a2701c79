/*
 * fused.c - the fused elementwise kernel (ABI 1.2) on CUDA devices.
 *
 * One thread per element of the coalesced space of y and the inputs
 * (dla__cu_space_of over 1 + ninputs views) reads the inputs, runs the
 * program and writes y. A program runs on the interpreter of
 * fused_kernels.cu first; when the same program (everything but alpha and
 * beta, which are arguments) comes back, as on every replay of a plan, it
 * is compiled with NVRTC into a kernel of its own (nvrtc.c) that takes the
 * same arguments. Both call plugin_ops.h for every step and hold every
 * register in the dtype, so both give the bits of the steps launched one
 * by one. y may be input 0 itself: each thread reads its element's inputs
 * before it writes y there.
 *
 * fused_multi (ABI 1.8) runs the same way over the space of y, the inputs
 * and the extra results, in a kernel that also stores the extras'
 * registers (dla_fused_multi_body; the slots of dla_fmviews are y 0,
 * input i 1 + i, extra k 9 + k), interpreted first and compiled as kind 3
 * when it recurs: one launch where the steps were several, with the bits
 * of each. y and each extra may be an input itself (a batch
 * normalization's running statistics updated in place): a thread reads
 * all its element's inputs before it writes any of its results.
 *
 * On the 32-bit path a compiled program also knows its operands' layout
 * (dla__cu_lay_of; DLACCEL_CUDA_FUSED_LAYOUT=0 leaves it out): which are
 * dense, which share an earlier one's strides, which do not move along a
 * dim. The same program over another layout is another compiled kernel.
 */
#include "plugins/cuda/onekern_kern.h"

#include <limits.h>
#include <string.h>

/* Whether the space's positions and every view's element offsets (any
 * sign) fit in int, so the kernel may index in 32 bits. */
static int offsets_fit_int(const dla__cu_space *sp, const dla__cu_vw *vw, int nops)
{
    if (sp->n > INT_MAX)
        return 0;
    for (int k = 0; k < nops; k++) {
        int64_t reach = 0;
        for (int d = 0; d < sp->nd; d++) {
            const int64_t st = vw[k].st[d] < 0 ? -vw[k].st[d] : vw[k].st[d];
            if (st > INT_MAX)
                return 0;
            reach += (sp->dims[d] - 1) * st;
            if (reach > INT_MAX)
                return 0;
        }
    }
    return 1;
}

void dla__cu_lay_of(const dla__cu_space *sp, const dla__cu_vw *vw, int nops, const int *slot,
                    int32_t *lay)
{
    memset(lay, 0, DLA__CU_LAY_WORDS * sizeof *lay);
    if (sp->nd < 1 || sp->nd > DLA__CU_MAXD)
        return;
    lay[0] = sp->nd;
    for (int op = 0; op < nops; op++) {
        int32_t w = 0;
        int dense = 1;
        int64_t want = 1;
        for (int d = 0; d < sp->nd; d++) {
            if (vw[op].st[d] == 0)
                w |= 1 << d;
            if (vw[op].st[d] != want)
                dense = 0;
            want *= sp->dims[d];
        }
        if (dense) {
            w |= 1 << DLA__CU_LAY_DENSE_BIT;
        } else {
            /* The first earlier view with these strides walks the dims
             * itself (or is dense, and then so is this one). */
            for (int o = 0; o < op; o++)
                if (!memcmp(vw[o].st, vw[op].st, (size_t)sp->nd * sizeof vw[op].st[0])) {
                    w |= (1 + (slot ? slot[o] : o)) << DLA__CU_LAY_SAME_SHIFT;
                    break;
                }
        }
        lay[1 + (slot ? slot[op] : op)] = w;
    }
}

/* The coalesced space and the nops views as a kernel takes them: view op
 * into kernel slot slot[op] (slot NULL: op). */
static void to_kernel(const dla__cu_space *sp, const dla__cu_vw *vw, int nops, const int *slot,
                      dla_fsp *ksp, dla_fvw *kv)
{
    ksp->nd = sp->nd;
    ksp->n = sp->n;
    for (int k = 0; k < DLA__CU_MAXD; k++) {
        ksp->dims[k] = sp->dims[k];
        ksp->mul[k] = sp->mul[k];
        ksp->shift[k] = sp->shift[k];
    }
    for (int op = 0; op < nops; op++) {
        dla_fvw *o = &kv[slot ? slot[op] : op];
        o->base = vw[op].base;
        for (int k = 0; k < DLA__CU_MAXD; k++)
            o->st[k] = vw[op].st[k];
    }
}

/* The launch of program p over views v, as a step of the capture in
 * progress (onekern.c). */
static void note_step(dla__cu_device *d, dla_dtype dtype, const dla_fmviews *v,
                      const dla_fprog *p)
{
    dla__cu_k1_step st;
    memset(&st, 0, sizeof st);
    st.kind = DLA__CU_K1_FUSED;
    st.f64 = dtype == DLA_F64;
    st.u.fused.v = *v;
    st.u.fused.p = *p;
    dla__cu_k1_note(d, &st, v->sp.n);
}

dla_status dla__cu_fused(void *dev, const dla_fused_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "fused");
    if (s != DLA_OK)
        return s;
    if ((s = dla_kit_check_fused(&d->kit, args)) != DLA_OK)
        return s;
    if (dla_kit_numel(&args->y) == 0)
        return DLA_OK;
    const int nops = 1 + args->ninputs;
    const dla_view *v[DLA__CU_FOPS];
    v[0] = &args->y;
    for (int i = 0; i < args->ninputs; i++)
        v[1 + i] = &args->inputs[i];
    dla__cu_space sp;
    dla__cu_vw vw[DLA__CU_FOPS];
    dla__cu_space_of(nops, v, &sp, vw);
    dla_fviews a;
    memset(&a, 0, sizeof a);
    to_kernel(&sp, vw, nops, NULL, &a.sp, a.v);
    dla_fprog p;
    dla__cu_fprog_of(args, 0, &p);
    int32_t lay[DLA__CU_LAY_WORDS];
    const int32_t *layp = NULL;
    if (d->fused_off32 && offsets_fit_int(&sp, vw, nops)) {
        p.flags = DLA__CU_F_OFF32;
        if (d->fused_layout) {
            dla__cu_lay_of(&sp, vw, nops, NULL, lay);
            layp = lay;
        }
    }
    const void *k1 = NULL, *k2 = NULL;
    dla__cu_fused_compiled(d, args, 0, 0, layp, &k1, &k2);
    s = dla__cu_err(dla__cu_fused_launch(d->stream, dla__cu_blocks(d, sp.n),
                                         args->dtype == DLA_F64, &a, &p, k1),
                    "fused");
    if (s == DLA_OK && dla__cu_k1_recording(d)) {
        /* A fused_multi step with no extras: the same slots and program. */
        dla_fmviews m;
        memset(&m, 0, sizeof m);
        m.sp = a.sp;
        memcpy(m.v, a.v, sizeof a.v);
        note_step(d, args->dtype, &m, &p);
    }
    return s;
}

dla_status dla__cu_fused_multi(void *dev, const dla_fused_multi_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "fused_multi");
    if (s != DLA_OK)
        return s;
    if ((s = dla_kit_check_fused_multi(&d->kit, args)) != DLA_OK)
        return s;
    const dla_fused_args *a = &args->program;
    if (dla_kit_numel(&a->y) == 0)
        return DLA_OK;
    /* The views in list order (y, the inputs, the extras) and the slot of
     * dla_fmviews each goes to. */
    const int ni = a->ninputs, nx = args->nextra, nops = 1 + ni + nx;
    const dla_view *v[DLA__CU_FMOPS];
    int slot[DLA__CU_FMOPS];
    v[0] = &a->y;
    slot[0] = 0;
    for (int i = 0; i < ni; i++) {
        v[1 + i] = &a->inputs[i];
        slot[1 + i] = 1 + i;
    }
    for (int k = 0; k < nx; k++) {
        v[1 + ni + k] = &args->extra[k];
        slot[1 + ni + k] = DLA__CU_FM_X0 + k;
    }
    dla__cu_space sp;
    dla__cu_vw vw[DLA__CU_FMOPS];
    dla__cu_space_of(nops, v, &sp, vw);
    dla_fmviews m;
    memset(&m, 0, sizeof m);
    to_kernel(&sp, vw, nops, slot, &m.sp, m.v);
    m.nextra = nx;
    for (int k = 0; k < nx; k++)
        m.reg[k] = args->extra_reg[k]; /* 0 .. ninsns-2 (the kit); 0 past nextra */
    dla_fprog p;
    dla__cu_fprog_of(a, 0, &p);
    /* vw holds every operand, the extras too. */
    int32_t lay[DLA__CU_LAY_WORDS];
    const int32_t *layp = NULL;
    if (d->fused_off32 && offsets_fit_int(&sp, vw, nops)) {
        p.flags = DLA__CU_F_OFF32;
        if (d->fused_layout) {
            dla__cu_lay_of(&sp, vw, nops, slot, lay);
            layp = lay;
        }
    }
    const void *k1 = NULL;
    dla__cu_fused_multi_compiled(d, args, layp, &k1);
    s = dla__cu_err(dla__cu_fused_multi_launch(d->stream, dla__cu_blocks(d, sp.n),
                                               a->dtype == DLA_F64, &m, &p, k1),
                    "fused_multi");
    if (s == DLA_OK && dla__cu_k1_recording(d))
        note_step(d, a->dtype, &m, &p);
    return s;
}

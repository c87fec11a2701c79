/*
 * onekern.c - recording a captured replay as the steps of one kernel
 * (onekern_kern.h says why and which steps there are).
 *
 * While plan.c captures a replay into a CUDA graph, the members that can
 * be a step (fused, fused_multi, unary, binary, fill, strided_copy,
 * reduce, the small GEMM) also record what they launched here, with the
 * addresses the capture gave them (the graph's roles). Every member
 * called on the capturing thread is counted (dla__cu_enter); the capture
 * becomes one kernel only when each of them recorded exactly one step, so
 * a launch of any other kind (a convolution, a cast, cuBLAS) keeps the
 * plan a graph. plan.c keeps the graph either way and launches the one
 * kernel instead of it when there is one.
 */
#include "plugins/cuda/onekern_kern.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* At most this many steps, each of at most DLA__CU_K1_STEP_WORK. */
#define MAX_STEPS 64

void dla__cu_k1_spoil(dla__cu_device *d, const char *fmt, ...)
{
    if (d->k1_spoiled)
        return;
    d->k1_spoiled = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->k1_why, sizeof d->k1_why, fmt, ap);
    va_end(ap);
}

void dla__cu_k1_begin(dla__cu_device *d)
{
    d->k1_n = 0;
    d->k1_calls = 0;
    d->k1_spoiled = 0;
    d->k1_member = NULL;
    snprintf(d->k1_why, sizeof d->k1_why, "%s", "");
    if (d->onekern_off) {
        dla__cu_k1_spoil(d, "DLACCEL_CUDA_ONE_KERNEL=0");
    } else if (d->k1_refused) {
        dla__cu_k1_spoil(d, "a launch of one was refused on this device");
    } else if (!d->k1_steps) {
        d->k1_steps = dla__cu_host->alloc(MAX_STEPS * sizeof(dla__cu_k1_step), 0);
        if (!d->k1_steps)
            dla__cu_k1_spoil(d, "no memory to record its steps");
    }
}

/* The member counted last recorded no step. */
static void check_last(dla__cu_device *d)
{
    if (d->k1_calls > d->k1_n)
        dla__cu_k1_spoil(d, "its %s launch is not a step of one", d->k1_member);
}

void dla__cu_k1_count(dla__cu_device *d, const char *member)
{
    dla__cu_seg_enter(d);
    /* Members that launch nothing a replay computes with. */
    static const char *const quiet[] = {"mem_alloc", "mem_trim", "plan_begin", "plan_end"};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
        if (!strcmp(member, quiet[i]))
            return;
    check_last(d);
    d->k1_member = member;
    d->k1_calls++;
}

int dla__cu_k1_recording(const dla__cu_device *d)
{
    /* segment.c takes the steps of a capture that is not one kernel too. */
    return d->capturing && (!d->k1_spoiled || !d->seg_off) && dla__cu_planning_here(d);
}

void dla__cu_k1_note(dla__cu_device *d, const dla__cu_k1_step *step, int64_t work)
{
    if (!dla__cu_k1_recording(d))
        return;
    dla__cu_seg_note(d, step, work);
    if (d->k1_spoiled)
        return;
    if (d->k1_n >= MAX_STEPS)
        dla__cu_k1_spoil(d, "more than %d steps", MAX_STEPS);
    else if (work > DLA__CU_K1_STEP_WORK)
        dla__cu_k1_spoil(d, "a %s launch of %lld elements (at most %d a step)", d->k1_member,
                         (long long)work, DLA__CU_K1_STEP_WORK);
    else
        d->k1_steps[d->k1_n++] = *step;
}

void dla__cu_k1_note_elementwise(dla__cu_device *d, const dla__cu_space *sp,
                                 const dla__cu_vw *vw, int kind, int op, dla_dtype dtype,
                                 double alpha, double beta)
{
    if (!dla__cu_k1_recording(d))
        return;
    /* The launch as a program of one instruction on inputs 0 (and 1). */
    dla_fused_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dtype = dtype;
    a.ninputs = kind == DLA_FUSED_UNARY ? 1 : 2;
    a.ninsns = 1;
    a.insns[0].kind = (dla_fused_kind)kind;
    a.insns[0].op = op;
    a.insns[0].src[0] = -1;
    a.insns[0].src[1] = -2;
    a.insns[0].alpha = alpha;
    a.insns[0].beta = beta;
    dla__cu_k1_step st;
    memset(&st, 0, sizeof st);
    st.kind = DLA__CU_K1_FUSED;
    st.f64 = dtype == DLA_F64;
    dla__cu_fprog_of(&a, 0, &st.u.fused.p);
    dla_fmviews *v = &st.u.fused.v;
    v->sp.nd = sp->nd;
    v->sp.n = sp->n;
    for (int k = 0; k < DLA__CU_MAXD; k++) {
        v->sp.dims[k] = sp->dims[k];
        v->sp.mul[k] = sp->mul[k];
        v->sp.shift[k] = sp->shift[k];
    }
    for (int k = 0; k <= a.ninputs; k++) {
        v->v[k].base = vw[k].base;
        for (int j = 0; j < DLA__CU_MAXD; j++)
            v->v[k].st[j] = vw[k].st[j];
    }
    dla__cu_k1_note(d, &st, sp->n);
}

void dla__cu_k1_note_move(dla__cu_device *d, int kind, const dla__cu_space *sp,
                          const dla__cu_vw *vw, int esize, uint64_t bits)
{
    if (!dla__cu_k1_recording(d))
        return;
    dla__cu_k1_step st;
    memset(&st, 0, sizeof st);
    st.kind = kind;
    dla__cu_k1_move *m = &st.u.move;
    m->sp = *sp;
    m->v[0] = vw[0];
    if (kind == DLA__CU_K1_COPY)
        m->v[1] = vw[1];
    m->esize = esize;
    m->bits = bits;
    dla__cu_k1_note(d, &st, sp->n);
}

dla__cu_mem *dla__cu_k1_upload(dla__cu_device *d, int32_t *n)
{
    *n = 0;
    check_last(d);
    if (d->k1_n == 0)
        dla__cu_k1_spoil(d, "no steps");
    const int ok = !d->k1_spoiled;
    dla__cu_k1_spoil(d, "uploaded"); /* nothing more is recorded until the next capture */
    if (!ok)
        return NULL;
    const size_t bytes = (size_t)d->k1_n * sizeof(dla__cu_k1_step);
    dla_mem m = NULL;
    if (dla__cu_mem_alloc(d, bytes, &m) != DLA_OK) {
        snprintf(d->k1_why, sizeof d->k1_why, "no device memory for its steps");
        return NULL;
    }
    dla__cu_mem *k = (dla__cu_mem *)m;
    /* On the stream: the block may have been freed by work still queued.
     * From pageable memory the call may return before it has read the
     * steps, and the next capture (plan_end no longer waits) writes them
     * again: the stream is waited for, once a capture. */
    if (cudaMemcpyAsync(k->ptr, d->k1_steps, bytes, cudaMemcpyHostToDevice, d->stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(d->stream) != cudaSuccess) {
        cudaGetLastError();
        dla__cu_mem_free(d, m);
        snprintf(d->k1_why, sizeof d->k1_why, "its steps could not be copied to the device");
        return NULL;
    }
    *n = d->k1_n;
    d->k1_prof_n = d->k1_n;
    for (int32_t i = 0; i < d->k1_n && i < (int32_t)sizeof d->k1_prof_kinds; i++)
        d->k1_prof_kinds[i] = (int8_t)d->k1_steps[i].kind;
    return k;
}

static const char *kind_name(int kind)
{
    static const char *const names[] = {"?", "fused", "reduce", "gemm", "fill", "copy"};
    return kind > 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "?";
}

/* The profile's means a launch, in cycles and (at the SM's rated clock)
 * microseconds: one info line for the phases, the steps' kinds those of
 * the plan uploaded last (the counters add every one-kernel plan's
 * launches together, so a workload of one such plan reads plainly). */
static void log_profile(dla__cu_device *d)
{
    unsigned long long c[DLA__CU_K1_PROF_SLOTS];
    if (cudaMemcpyAsync(c, d->k1_prof->ptr, sizeof c, cudaMemcpyDeviceToHost, d->stream) !=
            cudaSuccess ||
        cudaStreamSynchronize(d->stream) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    const unsigned long long launches = c[DLA__CU_K1_PROF_LAUNCHES];
    if (!launches)
        return;
    const int khz = d->clock_khz > 0 ? d->clock_khz : 0;
    char line[2048];
    size_t at = 0;
    unsigned long long all = 0;
    for (int i = 0; i < DLA__CU_K1_PROF_SLOTS - 1; i++)
        all += c[i];
#define K1_PUT(...)                                                                               \
    do {                                                                                          \
        int w_ = snprintf(line + at, sizeof line - at, __VA_ARGS__);                              \
        if (w_ > 0)                                                                               \
            at += (size_t)w_ < sizeof line - at ? (size_t)w_ : sizeof line - at - 1;              \
    } while (0)
    K1_PUT("cuda:%d: one-kernel profile, %llu launches, cycles a launch (us at %d MHz): all %.0f "
           "(%.2f), staging and copies in %.0f",
           d->index, launches, khz / 1000, (double)all / launches,
           khz ? (double)all / launches / (khz / 1000.0) : 0.0, (double)c[0] / launches);
    for (int i = 0; i < DLA__CU_K1_PROF_STEPS && c[1 + i]; i++)
        K1_PUT(", %d %s %.0f", i, i < d->k1_prof_n ? kind_name(d->k1_prof_kinds[i]) : "?",
               (double)c[1 + i] / launches);
    K1_PUT(", copies out %.0f", (double)c[DLA__CU_K1_PROF_OUT] / launches);
#undef K1_PUT
    dla__cu_host->log(DLA_LOG_INFO, "%s", line);
}

unsigned long long *dla__cu_k1_profile(dla__cu_device *d)
{
    if (!d->k1_profile)
        return NULL;
    if (!d->k1_prof) {
        const size_t bytes = DLA__CU_K1_PROF_SLOTS * sizeof(unsigned long long);
        dla_mem m = NULL;
        if (dla__cu_mem_alloc(d, bytes, &m) != DLA_OK)
            return NULL;
        if (cudaMemsetAsync(((dla__cu_mem *)m)->ptr, 0, bytes, d->stream) != cudaSuccess) {
            cudaGetLastError();
            dla__cu_mem_free(d, m);
            return NULL;
        }
        d->k1_prof = (dla__cu_mem *)m;
    }
    /* A program does not close its devices at exit (the plugin's exit
     * log lines are for tests that do), so the means are logged as the
     * launches reach 1,024, 2,048, 4,096, ...: a wait and a copy, once in
     * a while. */
    const long l = d->onekern_launches;
    if (l >= 1024 && (l & (l - 1)) == 0)
        log_profile(d);
    return (unsigned long long *)d->k1_prof->ptr;
}

void dla__cu_k1_release(dla__cu_device *d)
{
    if (d->onekern_launches)
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: %ld planned replays ran as one kernel",
                          d->index, d->onekern_launches);
    if (d->k1_prof) {
        log_profile(d);
        dla__cu_mem_free(d, (dla_mem)d->k1_prof);
        d->k1_prof = NULL;
    }
    dla__cu_host->free(d->k1_steps);
    d->k1_steps = NULL;
}

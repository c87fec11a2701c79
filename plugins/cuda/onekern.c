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
#include <stdint.h>
#include <stdlib.h>
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

dla__cu_mem *dla__cu_k1_upload(dla__cu_device *d, int32_t *n, const char *const *role_lo,
                               const int64_t *role_bytes, int32_t nroles, dla__cu_k1_win *win)
{
    *n = 0;
    win->rel = NULL;
    win->nrel = -1;
    win->bytes = 0;
    check_last(d);
    if (d->k1_n == 0)
        dla__cu_k1_spoil(d, "no steps");
    const int ok = !d->k1_spoiled;
    dla__cu_k1_spoil(d, "uploaded"); /* nothing more is recorded until the next capture */
    if (!ok)
        return NULL;
    /* Phases of steps with no barrier between them (DLACCEL_CUDA_K1_JOIN). */
    if (d->k1_join)
        dla__cu_k1_join(d->k1_steps, d->k1_n);
    /* The windows (DLACCEL_CUDA_K1_SHARED) where every step is staged,
     * in the 48 KiB beside them: their relocations follow the steps. */
    const size_t steps_bytes = (size_t)d->k1_n * sizeof(dla__cu_k1_step);
    size_t bytes = steps_bytes;
    const void *src = d->k1_steps;
    char *both = NULL; /* the steps and the relocations, when there are any */
    dla__cu_k1_reloc *rel = NULL;
    int32_t nrel = -1;
    int64_t win_bytes = 0;
    const int64_t budget = 48 * 1024 - (int64_t)((steps_bytes + 15) / 16 * 16);
    if (d->k1_shared && budget > 0 &&
        (rel = dla__cu_host->alloc((size_t)d->k1_n * 16 * sizeof *rel, 0)) != NULL) {
        nrel = dla__cu_k1_windows(d->k1_steps, d->k1_n, role_lo, role_bytes, nroles, budget, rel,
                                  &win_bytes);
        if (nrel > 0 && (both = dla__cu_host->alloc(steps_bytes + (size_t)nrel * sizeof *rel, 0))) {
            memcpy(both, d->k1_steps, steps_bytes);
            memcpy(both + steps_bytes, rel, (size_t)nrel * sizeof *rel);
            bytes += (size_t)nrel * sizeof *rel;
            src = both;
        } else if (nrel > 0) {
            nrel = -1;
        }
    }
    dla__cu_host->free(rel);
    dla_mem m = NULL;
    if (dla__cu_mem_alloc(d, bytes, &m) != DLA_OK) {
        dla__cu_host->free(both);
        snprintf(d->k1_why, sizeof d->k1_why, "no device memory for its steps");
        return NULL;
    }
    dla__cu_mem *k = (dla__cu_mem *)m;
    /* On the stream: the block may have been freed by work still queued.
     * From pageable memory the call may return before it has read the
     * steps, and the next capture (plan_end no longer waits) writes them
     * again: the stream is waited for, once a capture. */
    const int copied =
        cudaMemcpyAsync(k->ptr, src, bytes, cudaMemcpyHostToDevice, d->stream) == cudaSuccess &&
        cudaStreamSynchronize(d->stream) == cudaSuccess;
    dla__cu_host->free(both);
    if (!copied) {
        cudaGetLastError();
        dla__cu_mem_free(d, m);
        snprintf(d->k1_why, sizeof d->k1_why, "its steps could not be copied to the device");
        return NULL;
    }
    *n = d->k1_n;
    if (nrel >= 0) {
        win->rel = (const dla__cu_k1_reloc *)(k->ptr + steps_bytes);
        win->nrel = nrel;
        win->bytes = win_bytes;
    }
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
    /* A step that joined the next one's phase (DLACCEL_CUDA_K1_JOIN) has
     * no lap of its own: its cycles count with the phase's last step. */
    for (int i = 0; i < DLA__CU_K1_PROF_STEPS && (i < d->k1_prof_n || c[1 + i]); i++)
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

/* ------------------------------------------------- the windows (shared) */

/* A pointer field of a step: the bytes its accesses span, [lo, hi) (hi ==
 * lo: none), and whether the step reads and writes them. */
typedef struct k1_field {
    int32_t step, field;
    uint64_t lo, hi;
    int reads, writes;
} k1_field;

/* The span of base + esize * (sum of i_d * st[d]) over i_d < dims[d]: the
 * field's bytes (none when a dim is 0 or base is NULL). */
static void span(k1_field *f, const char *base, int64_t esize, int64_t off0, int nd,
                 const int64_t *dims, const int64_t *st)
{
    f->lo = f->hi = 0;
    if (!base)
        return;
    int64_t lo = off0, hi = off0;
    for (int d = 0; d < nd; d++) {
        if (dims[d] <= 0)
            return;
        const int64_t e = (dims[d] - 1) * st[d];
        if (e < 0)
            lo += e;
        else
            hi += e;
    }
    f->lo = (uint64_t)(uintptr_t)base + (uint64_t)(lo * esize);
    f->hi = (uint64_t)(uintptr_t)base + (uint64_t)((hi + 1) * esize);
}

/* Field f of step st (onekern_kernels.cu's k1_pointer numbers them the
 * same): its span and use; 0 past the kind's last field. */
static int field_of(const dla__cu_k1_step *st, int f, k1_field *out)
{
    const int64_t esize = st->f64 ? 8 : 4;
    memset(out, 0, sizeof *out);
    out->field = f;
    switch (st->kind) {
    case DLA__CU_K1_FUSED: {
        const dla_fmviews *v = &st->u.fused.v;
        if (f >= 16)
            return 0;
        if (f == 0 || (f >= 1 && f <= st->u.fused.p.ninputs) || (f >= 9 && f < 9 + v->nextra)) {
            int64_t dims[8], st_[8]; /* dla_i64 is long long, int64_t may be long */
            for (int d = 0; d < 8; d++) {
                dims[d] = (int64_t)v->sp.dims[d];
                st_[d] = (int64_t)v->v[f].st[d];
            }
            span(out, v->v[f].base, esize, 0, v->sp.nd < 8 ? v->sp.nd : 8, dims, st_);
        }
        out->reads = f >= 1 && f <= 8;
        out->writes = !out->reads;
        return 1;
    }
    case DLA__CU_K1_REDUCE: {
        const dla__cu_red_launch *l = &st->u.red;
        const dla__cu_red_geom *g = &l->g;
        int64_t dims[2 * DLA__CU_RD], st_[2 * DLA__CU_RD];
        int nd = 0;
        if (f > 2)
            return 0;
        for (int k = 0; k < g->nk && k < DLA__CU_RD; k++, nd++) {
            dims[nd] = g->kd[k];
            st_[nd] = f == 0 ? g->ky[k] : f == 1 ? g->kx[k] : g->ki[k];
        }
        for (int k = 0; f == 1 && k < g->nr && k < DLA__CU_RD; k++, nd++) {
            dims[nd] = g->rd[k];
            st_[nd] = g->rx[k];
        }
        const char *base = f == 0 ? l->y : f == 1 ? l->x : (const char *)l->index;
        span(out, base, f == 2 ? 4 : esize, f == 0 ? g->yoff : f == 1 ? g->xoff : g->ioff, nd,
             dims, st_);
        out->reads = f == 1;
        out->writes = f != 1;
        return 1;
    }
    case DLA__CU_K1_GEMM: {
        const dla__cu_sgemm *g = &st->u.gemm;
        if (f > 2)
            return 0;
        /* a(i, l) of page p at p sa + i ai + l al; b(l, j) at p sb + l bl +
         * j bj; c(i, j) at p sc + i + j ldc. */
        const int64_t ai = g->trans_a ? g->lda : 1, al = g->trans_a ? 1 : g->lda;
        const int64_t bl = g->trans_b ? g->ldb : 1, bj = g->trans_b ? 1 : g->ldb;
        const int64_t da[3] = {g->batch, g->m, g->k}, sa[3] = {g->sa, ai, al};
        const int64_t db[3] = {g->batch, g->k, g->n}, sb[3] = {g->sb, bl, bj};
        const int64_t dc[3] = {g->batch, g->m, g->n}, sc[3] = {g->sc, 1, g->ldc};
        if (f == 0)
            span(out, g->a, esize, 0, 3, da, sa);
        else if (f == 1)
            span(out, g->b, esize, 0, 3, db, sb);
        else
            span(out, g->c, esize, 0, 3, dc, sc);
        out->reads = f < 2 || g->beta != 0;
        out->writes = f == 2;
        return 1;
    }
    default: {
        const dla__cu_k1_move *m = &st->u.move;
        if (f > 1)
            return 0;
        if (f == 0 || st->kind == DLA__CU_K1_COPY)
            span(out, m->v[f].base, m->esize, 0, m->sp.nd, m->sp.dims, m->v[f].st);
        out->reads = f == 1;
        out->writes = f == 0;
        return 1;
    }
    }
}

/* The fields of step s that reach any byte, in mine[0 ..] (at most 16);
 * their count. */
static int step_fields(const dla__cu_k1_step *steps, int32_t s, k1_field *mine)
{
    int n = 0;
    for (int f = 0; f < 16; f++) {
        k1_field x;
        if (!field_of(&steps[s], f, &x))
            break;
        if (x.hi == x.lo)
            continue;
        x.step = s;
        mine[n++] = x;
    }
    return n;
}

static int by_lo(const void *a, const void *b)
{
    const k1_field *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int32_t dla__cu_k1_windows(const dla__cu_k1_step *steps, int32_t n, const char *const *role_lo,
                           const int64_t *role_bytes, int32_t nroles, int64_t budget,
                           dla__cu_k1_reloc *rel, int64_t *bytes)
{
    *bytes = 0;
    if (n <= 0 || n > MAX_STEPS)
        return -1;
    int64_t at = 0, roff[2 * DLA__CU_COPIES];
    if (nroles > 2 * DLA__CU_COPIES)
        return -1;
    for (int32_t r = 0; r < nroles; r++) {
        roff[r] = dla__cu_k1_window_at(at, (uint64_t)(uintptr_t)role_lo[r]);
        at = roff[r] + role_bytes[r];
    }
    if (at > budget)
        return -1;
    /* Each field: in a role (moved with it), or in none (a run's), or
     * across a role's edge (no windows at all). */
    k1_field *fields = dla__cu_host->alloc((size_t)n * 16 * sizeof *fields, 0);
    if (!fields)
        return -1;
    int32_t nrel = 0, nfree = 0;
    for (int32_t s = 0; s < n; s++) {
        k1_field mine[16];
        const int nmine = step_fields(steps, s, mine);
        for (int i = 0; i < nmine; i++) {
            const k1_field x = mine[i];
            int32_t in_role = -1;
            for (int32_t r = 0; r < nroles && in_role < 0; r++) {
                const uint64_t lo = (uint64_t)(uintptr_t)role_lo[r],
                               hi = lo + (uint64_t)role_bytes[r];
                if (x.lo >= lo && x.hi <= hi)
                    in_role = r;
                else if (x.lo < hi && x.hi > lo) {
                    dla__cu_host->free(fields);
                    return -1;
                }
            }
            if (in_role >= 0)
                rel[nrel++] = (dla__cu_k1_reloc){s, x.field,
                                                 (int64_t)(uintptr_t)role_lo[in_role],
                                                 roff[in_role]};
            else
                fields[nfree++] = x;
        }
    }
    /* The other fields' bytes as runs (overlapping spans joined), in
     * address order; a run gets a window when the first step that touches
     * it only writes it (an intermediate), while the budget lasts. */
    qsort(fields, (size_t)nfree, sizeof fields[0], by_lo);
    for (int32_t i = 0; i < nfree;) {
        uint64_t hi = fields[i].hi;
        int32_t j = i + 1, first_write = INT32_MAX, first_read = INT32_MAX;
        while (j < nfree && fields[j].lo < hi) {
            hi = fields[j].hi > hi ? fields[j].hi : hi;
            j++;
        }
        for (int32_t k = i; k < j; k++) {
            if (fields[k].writes && fields[k].step < first_write)
                first_write = fields[k].step;
            if (fields[k].reads && fields[k].step < first_read)
                first_read = fields[k].step;
        }
        const uint64_t lo = fields[i].lo;
        const int64_t off = dla__cu_k1_window_at(at, lo);
        if (first_write < first_read && off + (int64_t)(hi - lo) <= budget) {
            for (int32_t k = i; k < j; k++)
                rel[nrel++] = (dla__cu_k1_reloc){fields[k].step, fields[k].field, (int64_t)lo,
                                                 off};
            at = off + (int64_t)(hi - lo);
        }
        i = j;
    }
    dla__cu_host->free(fields);
    *bytes = at;
    return nrel;
}

/* Whether fields a and b touch a common byte with one of them writing. */
static int conflict(const k1_field *a, const k1_field *b)
{
    return a->lo < b->hi && b->lo < a->hi && (a->writes || b->writes);
}

int32_t dla__cu_k1_join(dla__cu_k1_step *steps, int32_t n)
{
    if (n <= 0)
        return 0;
    k1_field *phase = dla__cu_host->alloc((size_t)n * 16 * sizeof *phase, 0);
    int32_t nphase = 0, phases = 1;
    for (int32_t s = 0; s < n; s++)
        steps[s].join = 0;
    if (!phase)
        return n; /* a barrier after every step, as without joins */
    for (int32_t s = 0; s < n; s++) {
        k1_field mine[16];
        const int nmine = step_fields(steps, s, mine);
        int clash = s == 0;
        for (int i = 0; i < nmine && !clash; i++)
            for (int32_t j = 0; j < nphase && !clash; j++)
                clash = conflict(&mine[i], &phase[j]);
        if (clash) {
            nphase = 0;
            phases += s > 0;
        } else {
            steps[s].join = 1;
        }
        for (int i = 0; i < nmine; i++)
            phase[nphase++] = mine[i];
    }
    dla__cu_host->free(phase);
    return phases;
}

/* ------------------------------------------ compiled (K1_COMPILE) */

int dla__cu_k1_compile(dla__cu_device *d, dla__cu_k1c *c)
{
    memset(c, 0, sizeof *c);
    if (!d->k1_compile || d->k1c_refused || d->k1_n <= 0)
        return 0;
    const int prof = d->k1_profile;
    const size_t size = dla__cu_k1_source(d->k1_steps, d->k1_n, prof, NULL, 0) + 1;
    if (size == 1) {
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: a one kernel of %d steps stays interpreted: "
                                         "a step of it is not one onekern_source.c writes",
                          d->index, (int)d->k1_n);
        return 0;
    }
    char *src = dla__cu_host->alloc(size, 0);
    if (!src)
        return 0;
    dla__cu_k1_source(d->k1_steps, d->k1_n, prof, src, size);
    char what[64], why[256];
    snprintf(what, sizeof what, "a one kernel of %d steps", (int)d->k1_n);
    const char *names[1] = {DLA__CU_K_K1C};
    const int ok = dla__cu_nvrtc_build(d, src, what, names, 1, &c->lib, &c->kernel, why,
                                       sizeof why);
    dla__cu_host->free(src);
    if (!ok) {
        /* Once a device: the next plan's would most likely fail alike. */
        d->k1c_refused = 1;
        dla__cu_host->log(DLA_LOG_WARN, "cuda:%d: a one kernel could not be compiled (%s); one "
                                        "kernels stay interpreted on this device",
                          d->index, why);
        memset(c, 0, sizeof *c);
        return 0;
    }
    return 1;
}

void dla__cu_k1c_unload(dla__cu_k1c *c)
{
    if (c->lib)
        cudaLibraryUnload(c->lib);
    memset(c, 0, sizeof *c);
}

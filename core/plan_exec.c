/*
 * plan_exec.c - the plans of a trace (one per device) and running one
 * (plan_print.c prints them).
 *
 * A trace keeps its plans in a list that only grows: lookups walk it
 * without a lock, an insertion takes the planners' mutex. A plan runs on
 * one thread at a time (its launches' arguments are patched in place, and
 * its arena is one set of intermediates); a call that finds it busy takes
 * the plain replay, which is what it would have done without plans.
 *
 * A run: per-call output buffers are made, each step either patches the
 * inputs', outputs' and invocations' memory into its launch (and a random
 * launch's seed and counter from the thread's stream) and makes it again
 * through launch.c (so devices without a kernel still get the cpu
 * fallback), or runs its op through dla__run_op; the outputs are then
 * wrapped as tensors on their buffers. On a device with the ABI 1.3 plan
 * hooks the steps run between plan_begin and plan_end: one sequence the
 * plugin enqueues without waiting, and one wait at its end.
 */
#define _GNU_SOURCE /* secure_getenv, clock_gettime */
#include "core/alloc.h"
#include "core/env_choice.h"
#include "core/error.h"
#include "core/hooks.h"
#include "core/log.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/philox.h"
#include "core/plan_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;

/* DLACCEL_PLAN: 0 for off (or 0, no: every replay is the plain one), 2
 * for single-result (plans whose fused launches each write one result, as
 * before ABI 1.8's fused_multi), 3 for conv-bias-in (every convolution
 * adds its own bias: plan_lower.c's conv_bias_out), 4 for no-in-place
 * (every result in memory of its own: plan_lower.c's results_in_place), 5
 * for no-epilogue (no convolution runs its epilogue: plan_lower.c's
 * conv_epilogues), 1 otherwise (on, 1, yes, unset); any other value is
 * warned about once. */
static int plan_mode(void)
{
    static const char *const values[] = {"on",           "1",           "yes", "off", "0", "no",
                                         "single-result", "conv-bias-in", "no-in-place", "no-epilogue",
                                         NULL};
    static atomic_int cached = -1, warned;
    int mode = atomic_load(&cached);
    if (mode < 0) {
        /* The mode of each accepted value, in values' order. */
        static const int modes[] = {1, 1, 1, 0, 0, 0, 2, 3, 4, 5};
        _Static_assert(sizeof modes / sizeof modes[0] + 1 == sizeof values / sizeof values[0],
                       "a mode per value of DLACCEL_PLAN");
        const int v = dla__env_choice("DLACCEL_PLAN", values, &warned, dla__log);
        mode = v < 0 ? 1 : modes[v];
        atomic_store(&cached, mode);
    }
    return mode;
}

static int plans_enabled(void) { return plan_mode() != 0; }

int dla__plan_multi_allowed(void) { return plan_mode() != 2; }

int dla__plan_conv_bias_out_allowed(void) { return plan_mode() != 3; }

int dla__plan_in_place_allowed(void) { return plan_mode() != 4; }

int dla__plan_epilogue_allowed(void) { return plan_mode() != 5; }

/* DLACCEL_PLAN_PROFILE: on (1, yes) times each step of the replays of
 * plans made from now on; off (0, no, unset) does not; any other value is
 * warned about once. Read per plan, not once per process, so a program
 * (or a test) can profile one function and not the next. */
static int profile_wanted(void)
{
    static const char *const values[] = {"off", "0", "no", "on", "1", "yes", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_PLAN_PROFILE", values, &warned, dla__log) >= 3;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static dla__plan *find(const dla__trace *t, dla_device *dev)
{
    for (dla__plan *p = __atomic_load_n(&t->plans, __ATOMIC_ACQUIRE); p; p = p->next)
        if (p->dev == dev)
            return p;
    return NULL;
}

void dla__plan_free(dla__plan *p)
{
    if (!p)
        return;
    for (int j = 0; p->consts && j < p->nconsts; j++)
        dla_tensor_release(p->consts[j]);
    size_t bytes;
    for (int i = 0; i < p->nlaunches; i++)
        dla__free(dla__launch_block(&p->launches[i], &bytes));
    dla__storage_release(p->arena);
    dla__free(p->in_value);
    dla__free(p->in_ndims);
    dla__free(p->in_strides);
    dla__free(p->in_offset);
    dla__free(p->in_dtype);
    dla__free(p->consts);
    dla__free(p->fresh_bytes);
    dla__free(p->launches);
    dla__free(p->patch0);
    dla__free(p->patches);
    dla__free(p->steps);
    dla__free(p->entries);
    dla__free(p->specs);
    dla__free(p->sources);
    dla__free(p->out_src);
    dla__free(p->checks);
    dla__free(p->rt);
    dla__free(p->fresh);
    dla__free(p->run_mems);
    dla__free(p->step_ns);
    dla__free(p->run_ns);
    dla__free(p);
}

/* Left with the trace as its plans_free when its first plan is added. */
static void plans_free(dla__trace *t)
{
    dla__plan *p = t->plans;
    while (p) {
        dla__plan *next = p->next;
        dla__plan_free(p);
        p = next;
    }
    t->plans = NULL;
}

/* ------------------------------------------------------------- planning */

static int refuse(dla__plan *p, const char *why)
{
    snprintf(p->why, sizeof p->why, "%s", why);
    atomic_store(&p->state, DLA__PLAN_FAILED);
    return 0;
}

/* Nonzero when constant j is no result of t and only dla_tensor_to_device
 * reads it: its device is then seen nowhere (a device-agnostic function's
 * dla_tensor_to_device(dla_tensor_from_host(...), dla_tensor_device(x))),
 * and a plan may keep it on its own device to copy from there, device to
 * device, rather than from the host every run. */
static int only_moved(const dla__trace *t, int j)
{
    int id = 0;
    while (id < t->nvalues && !(t->values[id].kind == DLA__VALUE_CONST && t->values[id].index == j))
        id++;
    if (id == t->nvalues || t->values[id].is_output)
        return 0;
    for (int k = 0; k < t->nentries; k++) {
        const dla__trace_entry *e = &t->entries[k];
        for (int i = 0; i < e->nin; i++)
            if (e->in[i] == id && strcmp(e->op->name, "dla_tensor_to_device"))
                return 0;
    }
    return 1;
}

/* What a run must match (input layouts), and the constants on the plan's
 * device. 0 (with p failed) when that cannot be had. */
static int prepare(dla__plan *p, const dla__trace *t, dla_tensor *const *in)
{
    size_t n = (size_t)(t->nin ? t->nin : 1);
    p->nin = t->nin;
    p->in_value = dla__calloc(n, sizeof *p->in_value);
    p->in_ndims = dla__calloc(n, sizeof *p->in_ndims);
    p->in_strides = dla__calloc(n, sizeof *p->in_strides);
    p->in_offset = dla__calloc(n, sizeof *p->in_offset);
    p->in_dtype = dla__calloc(n, sizeof *p->in_dtype);
    p->nconsts = t->nconsts;
    p->consts = dla__calloc((size_t)(t->nconsts ? t->nconsts : 1), sizeof *p->consts);
    if (!p->in_value || !p->in_ndims || !p->in_strides || !p->in_offset || !p->in_dtype ||
        !p->consts)
        return refuse(p, "out of memory while planning");
    for (int id = 0; id < t->nvalues; id++)
        if (t->values[id].kind == DLA__VALUE_INPUT)
            p->in_value[t->values[id].index] = 1;
    for (int i = 0; i < t->nin; i++) {
        p->in_ndims[i] = in[i]->ndims;
        memcpy(p->in_strides[i], in[i]->strides, sizeof p->in_strides[i]);
        p->in_offset[i] = in[i]->offset;
        p->in_dtype[i] = in[i]->dtype;
    }
    /* Hoisted: each constant on the plan's device once, now; one the
     * plain replay leaves on a device of its own stays there too, unless
     * moving it changes nothing that can be seen. */
    for (int j = 0; j < t->nconsts; j++) {
        dla_tensor *c = t->consts[j];
        if (c->storage->device == p->dev ||
            (!dla__trace_const_moves(t, j, p->dev) && !only_moved(t, j))) {
            p->consts[j] = dla_tensor_retain(c);
            continue;
        }
        dla_scope_begin();
        dla_tensor *moved = dla_tensor_to_device(c, p->dev);
        if (moved->status == DLA_OK)
            p->consts[j] = dla_tensor_retain(moved);
        dla_scope_end();
        if (!p->consts[j])
            return refuse(p, "a constant cannot be moved to the replay's device");
        p->hoisted++;
        p->hoisted_bytes += p->consts[j]->storage->bytes;
    }
    return 1;
}

/* Nonzero when no two inputs (values of the trace), nor an input and a
 * constant, share a storage: a planning replay places each launch operand
 * by its memory, and a handle naming two of them could mean either one
 * later. (Runs do not care: they only read inputs and constants.) */
static int distinct_inputs(const dla__trace *t, dla_tensor *const *in)
{
    for (int id = 0; id < t->nvalues; id++) {
        if (t->values[id].kind != DLA__VALUE_INPUT)
            continue;
        const dla__storage *st = in[t->values[id].index]->storage;
        for (int other = 0; other < id; other++)
            if (t->values[other].kind == DLA__VALUE_INPUT &&
                in[t->values[other].index]->storage == st)
                return 0;
        for (int j = 0; j < t->nconsts; j++)
            if (t->consts[j]->storage == st)
                return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ runs */

/* The layout the plan was made for: same strides (dims and dtypes are the
 * trace's, checked by the caller). */
static int inputs_match(const dla__plan *p, dla_tensor *const *in)
{
    for (int i = 0; i < p->nin; i++) {
        if (!p->in_value[i])
            continue;
        const dla_tensor *x = in[i];
        if (x->ndims != p->in_ndims[i] || x->dtype != p->in_dtype[i] ||
            memcmp(x->strides, p->in_strides[i], (size_t)x->ndims * sizeof *x->strides))
            return 0;
    }
    return 1;
}

static dla__storage *slot_storage(const dla__plan *p, dla_tensor *const *in, dla__slot s)
{
    switch (s.kind) {
    case DLA__SLOT_INPUT: return in[s.id]->storage;
    case DLA__SLOT_CONST: return p->consts[s.id]->storage;
    case DLA__SLOT_ARENA: return p->arena;
    case DLA__SLOT_FRESH: return p->fresh[s.id];
    case DLA__SLOT_OPVAL: return p->rt[s.id]->storage;
    default: return NULL;
    }
}

/* A +1 reference to the tensor src stands for; NULL on out of memory. */
static dla_tensor *materialize(const dla__plan *p, dla_tensor *const *in, dla__source src)
{
    switch (src.kind) {
    case DLA__SRC_INPUT: return dla_tensor_retain(in[src.id]);
    case DLA__SRC_CONST: return dla_tensor_retain(p->consts[src.id]);
    case DLA__SRC_RT: return dla_tensor_retain(p->rt[src.id]);
    case DLA__SRC_SPEC: break;
    }
    const dla__spec *sp = &p->specs[src.id];
    int64_t offset = sp->offset;
    if (sp->slot.kind == DLA__SLOT_INPUT)
        offset += in[sp->slot.id]->offset;
    else if (sp->slot.kind == DLA__SLOT_ARENA)
        offset += (int64_t)(sp->slot.offset / dla_dtype_size(sp->dtype));
    return dla__tensor_on_storage("dla_accelerate", slot_storage(p, in, sp->slot), sp->dtype,
                                  sp->ndims, sp->dims, sp->strides, offset, sp->format);
}

static void patch(dla__plan *p, dla_tensor *const *in, int launch)
{
    for (int i = p->patch0[launch]; i < p->patch0[launch + 1]; i++) {
        const dla__patch *pt = &p->patches[i];
        int64_t base = 0;
        dla__storage *st;
        if (pt->slot.kind == DLA__SLOT_INPUT) {
            st = in[pt->slot.id]->storage;
            base = in[pt->slot.id]->offset;
        } else {
            st = slot_storage(p, in, pt->slot);
        }
        *pt->mem = st->mem;
        if (pt->eoff)
            *pt->eoff = pt->rel + base;
        else
            *pt->boff = (size_t)(pt->rel + base * (int64_t)pt->elsize);
    }
}

static void release_run(dla__plan *p, const dla__trace *t)
{
    for (int f = 0; f < p->nfresh; f++) {
        dla__storage_release(p->fresh[f]);
        p->fresh[f] = NULL;
    }
    for (int id = 0; id < t->nvalues; id++)
        if (p->rt[id]) {
            dla_tensor_release(p->rt[id]);
            p->rt[id] = NULL;
        }
}

/* Runs entry k as its op. 1: done (status in *st); 0: what it made does
 * not match the plan (nothing of it is kept). */
static int invoke(dla__plan *p, const dla__trace *t, dla_tensor *const *in, int k, dla_status *st)
{
    const dla__trace_entry *e = &t->entries[k];
    dla_tensor *ins[DLA__OP_MAX_IO] = {0}, *res[DLA__OP_MAX_IO] = {0}, *saved[DLA__OP_MAX_IO] = {0};
    *st = DLA_OK;
    for (int i = 0; i < e->nin && *st == DLA_OK; i++)
        if (!(ins[i] = materialize(p, in, p->sources[p->entries[k].src0 + i])))
            *st = dla_last_status();
    if (*st == DLA_OK) {
        dla_scope_begin();
        *st = dla__run_op(e->op, e->attrs, e->attrs_size, e->nin, ins, res, saved);
        dla_scope_end();
    }
    for (int i = 0; i < e->nin; i++)
        dla_tensor_release(ins[i]);
    if (*st != DLA_OK)
        return 1;
    for (int i = 0; i < e->nout + e->nsaved; i++)
        p->rt[e->out[i]] = i < e->nout ? res[i] : saved[i - e->nout];
    for (int c = 0; c < p->nchecks; c++) {
        const dla__opval_check *ck = &p->checks[c];
        const dla_tensor *v = p->rt[ck->value];
        if (t->values[ck->value].index == k &&
            (!v || v->storage->bytes != ck->bytes || v->offset != ck->offset ||
             v->storage->device != p->dev))
            return 0;
    }
    return 1;
}

/* Makes launch l of the plan; a random launch draws from the thread's
 * stream where it stands now and moves it on, as the op it came from did. */
static dla_status make_launch(dla__plan *p, dla__launch *l)
{
    if (l->kind != DLA__LAUNCH_RANDOM)
        return dla__k_launch(p->dev, l);
    uint64_t seed, counter;
    dla_rng_get(&seed, &counter);
    l->u.random.seed = seed;
    l->u.random.counter = counter;
    dla_status st = dla__k_launch(p->dev, l);
    if (st == DLA_OK) {
        int64_t n = 1;
        for (int i = 0; i < l->u.random.y.ndims; i++)
            n *= l->u.random.y.dims[i];
        dla_rng_set(seed, counter + dla__philox_blocks(l->u.random.dist == DLA_RANDOM_NORMAL,
                                                       l->u.random.y.dtype == DLA_F64, n));
    }
    return st;
}

/* The ids plan_replay names plans by; a plan takes a new one after a run
 * that failed (see run). */
static atomic_ullong serials;

/* Whether p's runs can be offered to plan_replay (ABI 1.5): every step a
 * launch and none drawing random numbers, so that two runs make the same
 * calls with the same arguments except for where their inputs and output
 * buffers lie (patch() changes nothing else; the arena and constants are
 * the plan's for its life). */
static int replayable(dla__plan *p)
{
    if (p->replayable >= 0)
        return p->replayable;
    int ok = p->dev->abi_minor >= 5 && p->dev->table->plan_replay && p->nsteps > 0;
    for (int s = 0; s < p->nsteps && ok; s++)
        ok = p->steps[s].kind == DLA__STEP_LAUNCH &&
             p->launches[p->steps[s].index].kind != DLA__LAUNCH_RANDOM;
    if (ok) {
        size_t n = (size_t)(p->nin + p->nfresh);
        ok = (p->run_mems = dla__calloc(n ? n : 1, sizeof *p->run_mems)) != NULL;
        p->serial = atomic_fetch_add(&serials, 1) + 1;
    }
    p->replayable = ok;
    return ok;
}

/* The bytes of its storage a tensor's view covers (strides are never
 * negative): [first, end). */
static void view_bytes(const dla_tensor *x, size_t *first, size_t *end)
{
    const size_t es = dla_dtype_size(x->dtype);
    int64_t last = 0, n = 1;
    for (int d = 0; d < x->ndims; d++) {
        n *= x->dims[d];
        last += (x->dims[d] - 1) * x->strides[d];
    }
    *first = (size_t)x->offset * es;
    *end = n > 0 ? *first + (size_t)(last + 1) * es : *first;
}

/* Whether two tensors are the same view of their storage. */
static int same_view(const dla_tensor *a, const dla_tensor *b)
{
    return a->storage == b->storage && a->offset == b->offset && a->ndims == b->ndims &&
           a->dtype == b->dtype && !memcmp(a->dims, b->dims, (size_t)a->ndims * sizeof *a->dims) &&
           !memcmp(a->strides, b->strides, (size_t)a->ndims * sizeof *a->strides);
}

/* The run's memory for plan_replay in p->run_mems; its count, or -1 when
 * an input's storage is a constant's, or another input's under another
 * view (the device could not tell their regions apart: the run then takes
 * plan_begin). Every input is there (the patches name an input by the
 * first one on its storage), the same tensor passed twice once. */
static int32_t run_memory(dla__plan *p, dla_tensor *const *in)
{
    int32_t n = 0;
    for (int i = 0; i < p->nin; i++) {
        const dla__storage *st = in[i]->storage;
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            if (in[k]->storage == st) {
                if (!same_view(in[k], in[i]))
                    return -1;
                seen = 1;
            }
        if (seen)
            continue;
        for (int j = 0; j < p->nconsts; j++)
            if (p->consts[j]->storage == st)
                return -1;
        dla_plan_mem *m = &p->run_mems[n++];
        m->mem = st->mem;
        m->written = 0;
        view_bytes(in[i], &m->first, &m->end);
    }
    for (int f = 0; f < p->nfresh; f++) {
        dla_plan_mem *m = &p->run_mems[n++];
        m->mem = p->fresh[f]->mem;
        m->first = 0;
        m->end = p->fresh_bytes[f];
        m->written = 1;
    }
    return n;
}

/* The device's plan hooks around a run: plan_begin (ABI 1.3) tells it that
 * the steps to come are one sequence it may enqueue without waiting in
 * between, plan_end waits for it, so that a launch that fails while running
 * is this call's error. plan_replay (1.5) also names the plan and the run's
 * memory, and may answer that the device ran the whole replay itself
 * (*ran: then no step is made). */
static dla_status hook_begin(dla__plan *p, dla_tensor *const *in, int32_t *ran, int *hooked)
{
    const dla_plugin *tb = p->dev->table;
    dla_status st = DLA_OK;
    int32_t n;
    *ran = 0;
    *hooked = 0;
    if (replayable(p) && (n = run_memory(p, in)) >= 0) {
        st = tb->plan_replay(p->dev->ctx, p->serial, p->nlaunches, n, p->run_mems, ran);
        if (st != DLA_OK) {
            *ran = 0;
            dla__error_prefix("dla_accelerate: plan_replay");
        }
        *hooked = st == DLA_OK;
    } else if (tb->plan_begin) {
        st = tb->plan_begin(p->dev->ctx, p->nlaunches);
        if (st != DLA_OK)
            dla__error_prefix("dla_accelerate: plan_begin");
        *hooked = st == DLA_OK;
    }
    return st;
}

static dla_status hook_end(dla__plan *p, dla_status st)
{
    const dla_plugin *tb = p->dev->table;
    if (!tb->plan_end)
        return st;
    dla_status end = tb->plan_end(p->dev->ctx);
    if (st != DLA_OK)
        return st; /* the first failure's message stays */
    if (end != DLA_OK)
        dla__error_prefix("dla_accelerate: replay on the device");
    return end;
}

/* A result on a constant the plan moved to its device (prepare: the
 * function's own constant returned, or a view of one) is the plan's
 * memory, which every run reads and hands out: the caller gets a copy of
 * its own, as dla__trace_unalias gives of the trace's constants, so that
 * a write to it in place (a collective) changes neither later runs nor
 * other results. On failure every result is released. */
static dla_status unalias_moved(const dla__plan *p, const dla__trace *t, dla_tensor **out,
                                dla_status st)
{
    for (int i = 0; st == DLA_OK && i < t->nout; i++)
        for (int j = 0; j < p->nconsts; j++) {
            const dla__storage *s = out[i]->storage;
            if (p->consts[j]->storage != s || t->consts[j]->storage == s)
                continue;
            dla_tensor *c = dla__copy("a planned replay's result that is its constant", out[i]);
            dla_tensor_release(out[i]);
            if (!(out[i] = c))
                st = dla_last_status();
            break;
        }
    if (st != DLA_OK)
        for (int i = 0; i < t->nout; i++) {
            dla_tensor_release(out[i]);
            out[i] = NULL;
        }
    return st;
}

/* > 0 while a plan runs on this thread. A plan run inside another's (an
 * accelerated function replayed inside an op the outer plan runs as
 * itself: an "adjoint" dla_ode45's slope) makes its launches without the
 * device's plan hooks, as part of the outer one's sequence: plan_begin
 * does not nest (the opencl plugin refused, "this thread is already
 * running a plan", and the call failed; until 2026-11-29). */
static _Thread_local int running;

/* 1: the plan ran (status in *status); 0: it stepped aside, leaving the
 * thread's random stream where it was. */
static int run(dla__plan *p, const dla__trace *t, dla_tensor *const *in, dla_tensor **out,
               dla_status *status)
{
    dla_status st = DLA_OK;
    const uint64_t run_t0 = p->profile ? now_ns() : 0;
    uint64_t seed, counter;
    dla_rng_get(&seed, &counter);
    for (int f = 0; f < p->nfresh && st == DLA_OK; f++)
        if (!(p->fresh[f] = dla__storage_alloc("dla_accelerate", p->dev, p->fresh_bytes[f])))
            st = dla_last_status();
    /* Profiled: no hooks, so that each step can be waited for on its own
     * (the sums were made with the plan: plan_capture.c). */
    const int profiled = p->profile && st == DLA_OK;
    int32_t ran = 0;
    int hooked = 0;
    if (st == DLA_OK && !profiled && !running)
        st = hook_begin(p, in, &ran, &hooked);
    running++;
    long fused = 0;
    int launches = 0;
    if (ran) /* the device made the launches: count them as made */
        for (int i = 0; i < p->nlaunches; i++)
            fused += dla__launch_is_fused(&p->launches[i]);
    for (int s = 0; s < p->nsteps && st == DLA_OK && !ran; s++) {
        const dla__step *step = &p->steps[s];
        const uint64_t t0 = profiled ? now_ns() : 0;
        if (step->kind == DLA__STEP_LAUNCH) {
            patch(p, in, step->index);
            dla__launch *l = &p->launches[step->index];
            launches++;
            st = make_launch(p, l);
            if (st != DLA_OK) {
                char what[192];
                snprintf(what, sizeof what, "dla_accelerate: launch %d of %d (%s) on %s", launches,
                         p->nlaunches, dla__launch_name(l), p->dev->name);
                dla__error_prefix(what);
            }
            fused += dla__launch_is_fused(l);
        } else if (!invoke(p, t, in, step->index, &st)) {
            running--;
            if (hooked)
                hook_end(p, DLA_OK);
            release_run(p, t);
            dla_rng_set(seed, counter);
            refuse(p, "an op run as itself made its result with another layout than when the "
                   "plan was made");
            return 0;
        }
        if (profiled && st == DLA_OK) {
            st = dla_device_sync(p->dev);
            p->run_ns[s] = now_ns() - t0;
        }
    }
    running--;
    if (hooked)
        st = hook_end(p, st);
    /* A run that failed stopped part way, perhaps for the host's own reason
     * (an allocation between two calls) that the device never heard of:
     * what the device kept of it (a CUDA graph captured up to there) must
     * not stand for a whole run, so later runs come under a new id. */
    if (st != DLA_OK && p->replayable == 1)
        p->serial = atomic_fetch_add(&serials, 1) + 1;
    for (int i = 0; i < t->nout; i++) {
        out[i] = NULL;
        if (st == DLA_OK && !(out[i] = materialize(p, in, p->sources[p->out_src[i]])))
            st = dla_last_status();
    }
    if (st != DLA_OK)
        for (int i = 0; i < t->nout; i++) {
            dla_tensor_release(out[i]);
            out[i] = NULL;
        }
    release_run(p, t);
    if (profiled && st == DLA_OK) {
        /* A whole run: its steps, and all of it (the host's own work too:
         * making the output buffers, patching, wrapping the outputs).
         * Atomic only so that a listing on another thread reads whole sums. */
        for (int s = 0; s < p->nsteps; s++)
            __atomic_fetch_add(&p->step_ns[s], p->run_ns[s], __ATOMIC_RELAXED);
        __atomic_fetch_add(&p->run_total_ns, now_ns() - run_t0, __ATOMIC_RELAXED);
        atomic_fetch_add(&p->profiled_runs, 1);
    }
    atomic_fetch_add(&p->runs, 1);
    atomic_fetch_add(&p->device_runs, ran);
    atomic_fetch_add(&p->fused_launches, fused);
    *status = st;
    return 1;
}

int dla__plan_capturing(void) { return dla__hooks_hear(DLA__HEAR_LAUNCH); }

int dla__plan_replay(const dla__trace *t, dla_tensor *const *in, dla_tensor **out,
                     dla_status *status)
{
    /* Ops run now are recorded (a tape or an outer trace hears them through
     * the hooks): they must run as ops. */
    if (!plans_enabled() || dla__ops_announced())
        return 0;
    dla_device *dev = t->nin ? in[0]->storage->device : dla_device_current();
    if (!dev)
        return 0;
    for (int i = 1; i < t->nin; i++)
        if (in[i]->storage->device != dev)
            return 0;
    dla__plan *p = find(t, dev);
    if (!p) {
        /* Not now: maybe with the next call's inputs. */
        if (!distinct_inputs(t, in))
            return 0;
        int made = 0;
        pthread_mutex_lock(&plans_lock);
        if (!(p = find(t, dev)) && (p = dla__calloc(1, sizeof *p)) != NULL) {
            p->dev = dev;
            p->profile = profile_wanted();
            p->replayable = -1;
            atomic_init(&p->busy, 1);
            atomic_init(&p->state, DLA__PLAN_CAPTURING);
            p->next = t->plans;
            ((dla__trace *)t)->plans_free = plans_free;
            /* The list is the trace's cache, not its meaning: a const trace may grow it. */
            __atomic_store_n(&((dla__trace *)t)->plans, p, __ATOMIC_RELEASE);
            made = 1;
        }
        pthread_mutex_unlock(&plans_lock);
        if (!p)
            return 0;
        if (made) {
            int ok = prepare(p, t, in);
            if (ok)
                *status = unalias_moved(p, t, out, dla__plan_capture(p, t, in, out));
            atomic_store(&p->busy, 0);
            return ok;
        }
    }
    if (atomic_load(&p->state) != DLA__PLAN_READY || atomic_exchange(&p->busy, 1))
        return 0;
    int served = inputs_match(p, in) && run(p, t, in, out, status);
    if (served)
        *status = unalias_moved(p, t, out, *status);
    atomic_store(&p->busy, 0);
    return served;
}

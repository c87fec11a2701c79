/*
 * graphwrap.c - a test-only plugin: the cpu plugin with ABI 1.5's
 * plan_replay served the way the cuda plugin serves it with CUDA graphs
 * (plugins/cuda/plan.c), a recording of the calls standing in for the
 * graph, so that make check holds the host to its plan_replay promise
 * (api/dlaccel/plugin.h) without a GPU.
 *
 * Per plan (a short list, least recently used out first):
 *
 *   - its first RECORD_AT - 1 runs are plain calls;
 *   - run RECORD_AT is recorded: one buffer of our own per region of the
 *     run (a role), the regions the run reads copied in, and every kernel
 *     call made on the roles (a view in region i's mem moved to role i, as
 *     far from its start as it lay from the region's first byte), run at
 *     once and kept; at plan_end the written roles are copied out;
 *   - the next run is checked: the host makes its calls, each moved onto
 *     the roles as above and compared with the recorded one, byte for
 *     byte, so that a call the host changes between runs is named here
 *     rather than found as a wrong number later;
 *   - every later run is replayed: copy in, the recorded calls again, copy
 *     out, and *ran = 1 (the host makes no call).
 *
 * A memory call by the host while recording (allocation, host copies, a
 * sync: what a CUDA graph cannot hold) ends the recording as the cuda
 * plugin ends its capture: roles copied out, the rest of the run plain,
 * the plan never recorded again (DLA_GRAPHWRAP_NOT_NATIVE makes the host
 * do so: see supports).
 * What the host promised and did not keep (a view outside its region, a
 * write to a region said to be only read, a first byte that is no whole
 * element, a checked call that differs) fails the call with the reason.
 */
#include <dlaccel/plugin.h>
#include "cpu_inner.h"
#include <dlaccel/plugin_kit.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>


#define NAME "graphwrap"
#define RECORD_AT 3 /* the cuda plugin's CAPTURE_AT */
#define KEPT 32     /* plans in the list */

static const dla_plugin_host *host;
static dla_plugin inner;

/* One kernel call, its arguments copied. */
typedef enum kind {
    K_FILL, K_COPY, K_CAST, K_UNARY, K_BINARY, K_TERNARY, K_REDUCE, K_GEMM, K_CONV_F, K_CONV_BD,
    K_CONV_BF, K_POOL_F, K_POOL_B, K_GATHER, K_SCATTER, K_FUSED, K_FUSED_REDUCE, K_BYTES
} kind;
static const char *const names[] = {
    "fill", "strided_copy", "cast", "unary", "binary", "ternary", "reduce", "gemm",
    "conv_forward", "conv_backward_data", "conv_backward_filter", "pool_forward",
    "pool_backward", "gather", "scatter_add", "fused", "fused_reduce", "copy_on_device"};

typedef struct call {
    kind k;
    union {
        struct { dla_view y, x; double value; } v; /* fill (y, value), strided_copy and cast */
        dla_unary_args unary;
        dla_binary_args binary;
        dla_ternary_args ternary;
        dla_reduce_args reduce;
        dla_gemm_args gemm;
        dla_conv_args conv;
        dla_pool_args pool;
        dla_index_args index;
        dla_fused_args fused;
        dla_fused_reduce_args fused_reduce;
        struct { dla_mem dst, src; int64_t doff, soff, bytes; } bytes;
    } u;
} call;

typedef struct role {
    dla_mem own;
    size_t bytes;
    int32_t written;
    dla_mem run; /* this run's region: its handle and first byte */
    size_t first;
} role;

typedef enum state { SEEN, RECORDING, RECORDED, CHECKING, CHECKED, REPLAYING, DEAD } state;

typedef struct entry {
    uint64_t plan;
    void *dev;
    state st;
    int sightings;
    unsigned long used; /* for the least recently used */
    call *calls;
    int32_t ncalls, cap, nroles;
    role *roles;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *list[KEPT];
static unsigned long ticks, replays; /* replays: runs made here (*ran = 1) */

/* The run this thread records or checks (NULL: calls go straight in). */
static _Thread_local entry *cur;
static _Thread_local int32_t next_call;
/* The device that ran this thread's replay itself (*ran = 1): until
 * plan_end the host makes no call on it. */
static _Thread_local void *ran_here;

static void forget(entry *e)
{
    for (int32_t i = 0; i < e->nroles; i++)
        if (e->roles[i].own)
            inner.mem_free(e->dev, e->roles[i].own);
    host->free(e->roles);
    host->free(e->calls);
    host->free(e);
}

/* The regions of the run into the roles (out 0) or the written roles out
 * to them (out 1). */
static dla_status copy_roles(entry *e, int out)
{
    dla_status s = DLA_OK;
    for (int32_t i = 0; i < e->nroles && s == DLA_OK; i++) {
        role *r = &e->roles[i];
        if (r->own && r->bytes && !r->written == !out)
            s = out ? inner.copy_on_device(e->dev, r->run, r->first, r->own, 0, r->bytes)
                    : inner.copy_on_device(e->dev, r->own, 0, r->run, r->first, r->bytes);
    }
    return s;
}

/* The recording or check in progress ends: written roles out, calls go
 * straight in again, and the entry goes to state then (DEAD when the
 * copies fail). */
static dla_status finish(state then)
{
    entry *e = cur;
    cur = NULL;
    dla_status s = copy_roles(e, 1);
    pthread_mutex_lock(&lock);
    e->st = s == DLA_OK ? then : DEAD;
    pthread_mutex_unlock(&lock);
    return s;
}

static dla_status broken(const char *kernel, const char *fmt, const char *arg, size_t a, size_t b,
                         const role *r)
{
    char what[160];
    snprintf(what, sizeof what, fmt, a, b);
    host->log(DLA_LOG_ERROR, "%s: the host broke its plan_replay promise: %s %s (region "
              "[%zu, %zu)%s)", kernel, arg, what, r->first, r->first + r->bytes,
              r->written ? ", written" : ", read only");
    return host->error(DLA_ERR_STATE, NAME " %s: argument %s %s: not where plan_replay said "
                       "the run's memory is (region [%zu, %zu))", kernel, arg, what, r->first,
                       r->first + r->bytes);
}

/* Moves one operand of the call being recorded or checked onto its role:
 * *mem and *off (in units of es bytes), span units from *off touched. */
static dla_status remap(const call *c, const char *arg, dla_mem *mem, int64_t *off, size_t es,
                        int64_t span, int writes)
{
    role *r = NULL;
    for (int32_t i = 0; *mem && i < cur->nroles && !r; i++)
        r = cur->roles[i].run == *mem ? &cur->roles[i] : NULL;
    if (!r)
        return DLA_OK; /* the plan's own memory: intermediates, constants */
    const char *k = names[c->k];
    if (span <= 0) { /* touches nothing: any place in the role will do */
        *mem = r->own;
        *off = 0;
        return DLA_OK;
    }
    const size_t lo = (size_t)*off * es, hi = (size_t)(*off + span) * es;
    if (r->first % es)
        return broken(k, "(elements of %zu bytes; the region starts %zu bytes into one)", arg, es,
                      r->first % es, r);
    if (lo < r->first || hi > r->first + r->bytes)
        return broken(k, "at bytes [%zu, %zu) lies outside its region", arg, lo, hi, r);
    if (writes && !r->written)
        return broken(k, "at bytes [%zu, %zu) is written, in a region said to be only read", arg,
                      lo, hi, r);
    *mem = r->own;
    *off -= (int64_t)(r->first / es);
    return DLA_OK;
}

static dla_status view(const call *c, const char *arg, dla_view *v, int writes)
{
    int64_t span = v->mem != NULL;
    for (int d = 0; d < v->ndims && span; d++)
        span = v->dims[d] ? span : 0;
    for (int d = 0; d < v->ndims && span; d++)
        span += (v->dims[d] - 1) * v->strides[d];
    return remap(c, arg, &v->mem, &v->offset, dla_kit_dtype_size(v->dtype), span, writes);
}

static dla_status operand(const call *c, const char *arg, dla_gemm_operand *o, int64_t rows,
                          int64_t cols, int used, int writes)
{
    const dla_gemm_args *g = &c->u.gemm;
    int64_t span = used && rows && cols && g->batch
                       ? (g->batch - 1) * o->batch_stride + (cols - 1) * o->ld + rows : 0;
    return remap(c, arg, &o->mem, &o->offset, dla_kit_dtype_size(g->dtype), span, writes);
}

/* Every operand of c onto the roles (see remap). */
static dla_status remap_call(call *c)
{
    dla_status s = DLA_OK;
#define V(field, w) if (s == DLA_OK) s = view(c, #field, &c->u.field, w)
    switch (c->k) {
    case K_FILL: V(v.y, 1); break;
    case K_COPY: case K_CAST: V(v.y, 1); V(v.x, 0); break;
    case K_UNARY: V(unary.y, 1); V(unary.x, 0); break;
    case K_BINARY: V(binary.z, 1); V(binary.a, 0); V(binary.b, 0); break;
    case K_TERNARY: V(ternary.z, 1); V(ternary.cond, 0); V(ternary.a, 0); V(ternary.b, 0); break;
    case K_REDUCE: V(reduce.y, 1); V(reduce.x, 0); V(reduce.index, 1); break;
    case K_GEMM: {
        dla_gemm_args *g = &c->u.gemm;
        const int ab = g->k > 0 && g->alpha != 0;
        s = operand(c, "c", &g->c, g->m, g->n, 1, 1);
        if (s == DLA_OK)
            s = operand(c, "a", &g->a, g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, ab, 0);
        if (s == DLA_OK)
            s = operand(c, "b", &g->b, g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, ab, 0);
        break;
    }
    case K_CONV_F: case K_CONV_BD: case K_CONV_BF:
        V(conv.x, c->k == K_CONV_BD); V(conv.w, c->k == K_CONV_BF); V(conv.y, c->k == K_CONV_F);
        V(conv.bias, 0);
        break;
    case K_POOL_F: case K_POOL_B:
        V(pool.x, c->k == K_POOL_B); V(pool.y, c->k == K_POOL_F); V(pool.index, c->k == K_POOL_F);
        break;
    case K_GATHER: case K_SCATTER: V(index.y, 1); V(index.x, 0); V(index.index, 0); break;
    case K_FUSED:
        V(fused.y, 1);
        for (int i = 0; i < c->u.fused.ninputs; i++)
            V(fused.inputs[i], 0);
        break;
    case K_FUSED_REDUCE:
        V(fused_reduce.y, 1); V(fused_reduce.y2, 1);
        for (int i = 0; i < c->u.fused_reduce.program.ninputs; i++)
            V(fused_reduce.program.inputs[i], 0);
        break;
    case K_BYTES:
        s = remap(c, "dst", &c->u.bytes.dst, &c->u.bytes.doff, 1, c->u.bytes.bytes, 1);
        if (s == DLA_OK)
            s = remap(c, "src", &c->u.bytes.src, &c->u.bytes.soff, 1, c->u.bytes.bytes, 0);
        break;
    }
#undef V
    return s;
}

static dla_status exec(void *dev, const call *c)
{
#define u (&c->u)
    switch (c->k) {
    case K_FILL: return inner.fill(dev, &u->v.y, u->v.value);
    case K_COPY: return inner.strided_copy(dev, &u->v.y, &u->v.x);
    case K_CAST: return inner.cast(dev, &u->v.y, &u->v.x);
    case K_UNARY: return inner.unary(dev, &u->unary);
    case K_BINARY: return inner.binary(dev, &u->binary);
    case K_TERNARY: return inner.ternary(dev, &u->ternary);
    case K_REDUCE: return inner.reduce(dev, &u->reduce);
    case K_GEMM: return inner.gemm(dev, &u->gemm);
    case K_CONV_F: return inner.conv_forward(dev, &u->conv);
    case K_CONV_BD: return inner.conv_backward_data(dev, &u->conv);
    case K_CONV_BF: return inner.conv_backward_filter(dev, &u->conv);
    case K_POOL_F: return inner.pool_forward(dev, &u->pool);
    case K_POOL_B: return inner.pool_backward(dev, &u->pool);
    case K_GATHER: return inner.gather(dev, &u->index);
    case K_SCATTER: return inner.scatter_add(dev, &u->index);
    case K_FUSED: return inner.fused(dev, &u->fused);
    case K_FUSED_REDUCE: return inner.fused_reduce(dev, &u->fused_reduce);
    case K_BYTES:
        return inner.copy_on_device(dev, u->bytes.dst, (size_t)u->bytes.doff, u->bytes.src,
                                    (size_t)u->bytes.soff, (size_t)u->bytes.bytes);
    }
#undef u
    return host->error(DLA_ERR_STATE, NAME ": a call of no kind");
}

/* Every kernel member comes here with its arguments copied into c. */
static dla_status through(void *dev, call *c)
{
    if (ran_here == dev)
        return host->error(DLA_ERR_STATE, NAME " %s: the host broke its plan_replay promise: a "
                           "call after the device ran the replay itself", names[c->k]);
    if (!cur || cur->dev != dev)
        return exec(dev, c);
    dla_status s = remap_call(c);
    if (s == DLA_OK && cur->st == CHECKING &&
        (next_call >= cur->ncalls || memcmp(c, &cur->calls[next_call], sizeof *c) != 0))
        s = host->error(DLA_ERR_STATE, NAME " %s: the host broke its plan_replay promise: call %d "
                        "of this run is not the recorded run's (%d calls, call %d %s)", names[c->k],
                        (int)next_call + 1, (int)cur->ncalls, (int)next_call + 1,
                        next_call < cur->ncalls ? names[cur->calls[next_call].k] : "none");
    next_call++;
    if (s != DLA_OK) {
        finish(DEAD);
        return s;
    }
    /* A call that fails ends the run (plan_end follows); its recording is
     * kept as far as it went, as the cuda plugin keeps its capture: the
     * host gives a plan whose run failed a new id (plugin.h). */
    if ((s = exec(dev, c)) != DLA_OK || cur->st != RECORDING)
        return s;
    if (cur->ncalls == cur->cap) {
        int32_t cap = cur->cap ? 2 * cur->cap : 64;
        call *more = host->alloc((size_t)cap * sizeof *more, 0);
        if (!more) {
            finish(DEAD);
            return host->error(DLA_ERR_OUT_OF_MEMORY, NAME ": recording a replay");
        }
        if (cur->ncalls)
            memcpy(more, cur->calls, (size_t)cur->ncalls * sizeof *more);
        host->free(cur->calls);
        cur->calls = more;
        cur->cap = cap;
    }
    cur->calls[cur->ncalls++] = *c;
    return DLA_OK;
}

/* The host's memory calls: what a graph cannot hold. In a checked run
 * (its recorded run had none) one is a broken promise. */
static dla_status memory_call(void *dev, const char *member)
{
    if (!cur || cur->dev != dev)
        return DLA_OK;
    const int checking = cur->st == CHECKING;
    host->log(DLA_LOG_DEBUG, "plan %llu: %s ends its %s after %d calls",
              (unsigned long long)cur->plan, member, checking ? "check" : "recording",
              (int)next_call);
    finish(DEAD);
    if (!checking)
        return DLA_OK;
    host->log(DLA_LOG_ERROR, "%s: the host broke its plan_replay promise: a memory call "
              "in a run whose recorded run had none", member);
    return host->error(DLA_ERR_STATE, NAME " %s: a memory call in a run whose recorded run had "
                       "none (plan_replay's promise)", member);
}

#define ARGS(member, field, type, kd)                                                              \
    static dla_status member(void *dev, const type *a)                                            \
    {                                                                                              \
        call c;                                                                                    \
        memset(&c, 0, sizeof c);                                                                   \
        c.k = kd;                                                                                  \
        memcpy(&c.u.field, a, a->struct_size < sizeof c.u.field ? a->struct_size : sizeof c.u.field); \
        return through(dev, &c);                                                                   \
    }
ARGS(unary, unary, dla_unary_args, K_UNARY)
ARGS(binary, binary, dla_binary_args, K_BINARY)
ARGS(ternary, ternary, dla_ternary_args, K_TERNARY)
ARGS(reduce, reduce, dla_reduce_args, K_REDUCE)
ARGS(gemm, gemm, dla_gemm_args, K_GEMM)
ARGS(conv_forward, conv, dla_conv_args, K_CONV_F)
ARGS(conv_backward_data, conv, dla_conv_args, K_CONV_BD)
ARGS(conv_backward_filter, conv, dla_conv_args, K_CONV_BF)
ARGS(pool_forward, pool, dla_pool_args, K_POOL_F)
ARGS(pool_backward, pool, dla_pool_args, K_POOL_B)
ARGS(gather, index, dla_index_args, K_GATHER)
ARGS(scatter_add, index, dla_index_args, K_SCATTER)
ARGS(fused, fused, dla_fused_args, K_FUSED)
ARGS(fused_reduce, fused_reduce, dla_fused_reduce_args, K_FUSED_REDUCE)

static dla_status pair(void *dev, kind k, const dla_view *y, const dla_view *x, double value)
{
    call c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.u.v.y = *y;
    if (x)
        c.u.v.x = *x;
    c.u.v.value = value;
    return through(dev, &c);
}
static dla_status fill(void *dev, const dla_view *y, double v) { return pair(dev, K_FILL, y, NULL, v); }
static dla_status strided_copy(void *dev, const dla_view *y, const dla_view *x) { return pair(dev, K_COPY, y, x, 0); }
static dla_status cast(void *dev, const dla_view *y, const dla_view *x) { return pair(dev, K_CAST, y, x, 0); }

static dla_status copy_on_device(void *dev, dla_mem dst, size_t doff, dla_mem src, size_t soff,
                                 size_t bytes)
{
    call c;
    memset(&c, 0, sizeof c);
    c.k = K_BYTES;
    c.u.bytes.dst = dst;
    c.u.bytes.src = src;
    c.u.bytes.doff = (int64_t)doff;
    c.u.bytes.soff = (int64_t)soff;
    c.u.bytes.bytes = (int64_t)bytes;
    return through(dev, &c);
}

static dla_status random_fill(void *dev, const dla_random_args *a)
{
    if (cur && cur->dev == dev) {
        finish(DEAD);
        return host->error(DLA_ERR_STATE, NAME " random: the host broke its plan_replay promise: "
                           "random numbers in a plan offered whole");
    }
    return inner.random(dev, a);
}

static dla_status mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    dla_status s = memory_call(dev, "mem_alloc");
    return s == DLA_OK ? inner.mem_alloc(dev, bytes, out) : s;
}
static void mem_free(void *dev, dla_mem mem)
{
    memory_call(dev, "mem_free");
    inner.mem_free(dev, mem);
}
static dla_status copy_to_device(void *dev, dla_mem dst, size_t off, const void *src, size_t bytes)
{
    dla_status s = memory_call(dev, "copy_to_device");
    return s == DLA_OK ? inner.copy_to_device(dev, dst, off, src, bytes) : s;
}
static dla_status copy_to_host(void *dev, void *dst, dla_mem src, size_t off, size_t bytes)
{
    dla_status s = memory_call(dev, "copy_to_host");
    return s == DLA_OK ? inner.copy_to_host(dev, dst, src, off, bytes) : s;
}
static dla_status sync_all(void *dev)
{
    dla_status s = memory_call(dev, "sync");
    return s == DLA_OK ? inner.sync(dev) : s;
}

/* ---------------------------------------------------------------- plans */

/* The device of a plan_begin on this thread until its plan_end: plans do
 * not nest (plugin.h: one plan_end after each plan_begin; the opencl
 * plugin refuses a second), and a host that nests them fails here too. */
static _Thread_local void *begun;

static dla_status no_plan_running(void *dev)
{
    if ((cur && cur->dev == dev) || ran_here == dev || begun == dev)
        return host->error(DLA_ERR_STATE, NAME " plan_begin: a plan is already running here");
    return DLA_OK;
}

static dla_status plan_begin(void *dev, int32_t nlaunches)
{
    (void)nlaunches;
    dla_status s = no_plan_running(dev);
    if (s == DLA_OK)
        begun = dev;
    return s;
}

static dla_status plan_end(void *dev)
{
    if (begun == dev)
        begun = NULL;
    if (ran_here == dev)
        ran_here = NULL;
    if (!cur || cur->dev != dev)
        return DLA_OK;
    if (cur->st == CHECKING && next_call != cur->ncalls) {
        const int32_t n = cur->ncalls;
        finish(DEAD);
        return host->error(DLA_ERR_STATE, NAME " plan_end: the host broke its plan_replay "
                           "promise: %d calls in this run, %d in the recorded one",
                           (int)next_call, (int)n);
    }
    host->log(DLA_LOG_DEBUG, "plan %llu %s: %d calls over %d regions",
              (unsigned long long)cur->plan, cur->st == CHECKING ? "checked" : "recorded",
              (int)cur->ncalls, (int)cur->nroles);
    return finish(cur->st == CHECKING ? CHECKED : RECORDED);
}

/* The entry of plan (under lock); a new one in a free place or in place
 * of the least recently used one that no thread is running; NULL when
 * none can be had. */
static entry *find(void *dev, uint64_t plan, int32_t nmems)
{
    int at = -1, free_at = -1, victim = -1;
    for (int i = 0; i < KEPT && at < 0; i++) {
        const entry *e = list[i];
        if (!e)
            free_at = free_at < 0 ? i : free_at;
        else if (e->plan == plan && e->dev == dev)
            at = i;
        else if (e->st != RECORDING && e->st != CHECKING && e->st != REPLAYING &&
                 (victim < 0 || e->used < list[victim]->used))
            victim = i;
    }
    if (at < 0 && (at = free_at >= 0 ? free_at : victim) >= 0) {
        if (list[at])
            forget(list[at]);
        entry *e = list[at] = host->alloc(sizeof *e, 0);
        role *roles = host->alloc((size_t)(nmems ? nmems : 1) * sizeof *roles, 0);
        if (!e || !roles) {
            host->free(e);
            host->free(roles);
            list[at] = NULL;
            return NULL;
        }
        memset(e, 0, sizeof *e);
        memset(roles, 0, (size_t)(nmems ? nmems : 1) * sizeof *roles);
        e->plan = plan;
        e->dev = dev;
        e->nroles = nmems;
        e->roles = roles;
    }
    entry *e = at >= 0 ? list[at] : NULL;
    if (e)
        e->used = ++ticks;
    return e;
}

static dla_status replay_begin(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                               const dla_plan_mem *mems, int32_t *ran)
{
    *ran = 0;
    (void)nlaunches;
    dla_status s = no_plan_running(dev);
    if (s != DLA_OK)
        return s;
    for (int32_t i = 0; i < nmems; i++) {
        if (mems[i].end < mems[i].first || !mems[i].mem)
            return host->error(DLA_ERR_STATE, NAME " plan_replay: region %d [%zu, %zu) of no "
                               "memory or backwards", (int)i, mems[i].first, mems[i].end);
        for (int32_t j = 0; j < i; j++)
            if (mems[j].mem == mems[i].mem)
                return host->error(DLA_ERR_STATE, NAME " plan_replay: regions %d and %d share "
                                   "a memory", (int)j, (int)i);
    }
    pthread_mutex_lock(&lock);
    entry *e = find(dev, plan, nmems);
    int fits = e && e->nroles == nmems && e->st != DEAD;
    for (int32_t i = 0; fits && e->st != SEEN && i < nmems; i++)
        fits = mems[i].end - mems[i].first == e->roles[i].bytes &&
               !mems[i].written == !e->roles[i].written;
    const state was = fits ? e->st : DEAD;
    if (was == SEEN && ++e->sightings == RECORD_AT)
        e->st = RECORDING;
    else if (was == RECORDED || was == CHECKED)
        e->st = was == RECORDED ? CHECKING : REPLAYING;
    else
        e = NULL; /* a plain run */
    pthread_mutex_unlock(&lock);
    if (!e)
        return DLA_OK;
    for (int32_t i = 0; i < nmems && s == DLA_OK; i++) {
        role *r = &e->roles[i];
        r->run = mems[i].mem;
        r->first = mems[i].first;
        if (r->own)
            continue;
        r->bytes = mems[i].end - mems[i].first;
        r->written = mems[i].written != 0;
        s = inner.mem_alloc(dev, r->bytes ? r->bytes : 1, &r->own);
    }
    cur = e;
    next_call = 0;
    if (s != DLA_OK) { /* no memory for the roles: a plain run, as the cuda plugin's */
        finish(DEAD);
        return DLA_OK;
    }
    if ((s = copy_roles(e, 0)) != DLA_OK || e->st != REPLAYING)
        return s == DLA_OK ? DLA_OK : (finish(DEAD), s);
    for (int32_t i = 0; i < e->ncalls && s == DLA_OK; i++)
        s = exec(dev, &e->calls[i]);
    if (s == DLA_OK)
        s = finish(CHECKED);
    else
        finish(DEAD);
    *ran = s == DLA_OK;
    if (*ran) {
        ran_here = dev;
        pthread_mutex_lock(&lock);
        replays++;
        pthread_mutex_unlock(&lock);
    }
    return s;
}

/* A plan has begun when it answers DLA_OK (plan_end follows). */
static dla_status plan_replay(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                              const dla_plan_mem *mems, int32_t *ran)
{
    dla_status s = replay_begin(dev, plan, nlaunches, nmems, mems, ran);
    if (s == DLA_OK)
        begun = dev;
    return s;
}

/* DLA_GRAPHWRAP_NOT_NATIVE=kernel: supports() says no to that kernel, so
 * the host runs each call of it on the cpu plugin with copies (memory
 * calls) in the middle of a recorded run (tests/accel_on_graphwrap_flush.sh). */
static dla_kernel not_native = DLA_KERNEL_COUNT;

static int supports(void *dev, dla_kernel kernel, dla_dtype dtype)
{
    if (kernel == not_native)
        return 0;
    return inner.supports ? inner.supports(dev, kernel, dtype) : 1;
}

static dla_status device_info(int index, dla_plugin_device_info *info)
{
    return cpu_inner_device_info(&inner, NAME, index, info);
}

static void device_close(void *dev)
{
    pthread_mutex_lock(&lock);
    host->log(DLA_LOG_DEBUG, "%lu planned replays ran as recordings", replays);
    for (int i = 0; i < KEPT; i++)
        if (list[i] && list[i]->dev == dev) {
            forget(list[i]);
            list[i] = NULL;
        }
    pthread_mutex_unlock(&lock);
    if (inner.device_close)
        inner.device_close(dev);
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *table)
{
    host = h;
    dla_status s = cpu_inner_open(h, NAME, &inner);
    if (s != DLA_OK)
        return s;
    if (inner.abi_minor < 5 || !inner.copy_on_device)
        return h->error(DLA_ERR_PLUGIN, NAME ": the cpu plugin answered ABI 1.%u without "
                        "copy_on_device; 1.5 with it is needed", (unsigned)inner.abi_minor);
    const size_t size = table->struct_size < sizeof inner ? table->struct_size : sizeof inner;
    dla_plugin mine = inner;
    mine.struct_size = size;
    mine.abi_minor = 5;
    /* The cpu plugin's own record is shut down by the host (it is loaded
     * as the fallback); this one only borrows it. */
    mine.shutdown = NULL;
    const char *nn = getenv("DLA_GRAPHWRAP_NOT_NATIVE");
#define BY_NAME(id, name, ...) not_native = nn && strcmp(nn, name) == 0 ? id : not_native;
    DLA_KERNEL_LIST(BY_NAME)
#undef BY_NAME
    mine.supports = supports;
    mine.device_info = device_info;
    mine.device_close = device_close;
    mine.mem_alloc = mem_alloc;
    mine.mem_free = mem_free;
    mine.copy_to_device = copy_to_device;
    mine.copy_to_host = copy_to_host;
    mine.copy_on_device = copy_on_device;
    mine.sync = inner.sync ? sync_all : NULL; /* NULL: the host never syncs */
    mine.fill = fill;
    mine.strided_copy = strided_copy;
    mine.cast = cast;
    mine.unary = unary;
    mine.binary = binary;
    mine.ternary = ternary;
    mine.reduce = reduce;
    mine.gemm = gemm;
    mine.conv_forward = conv_forward;
    mine.conv_backward_data = conv_backward_data;
    mine.conv_backward_filter = conv_backward_filter;
    mine.pool_forward = pool_forward;
    mine.pool_backward = pool_backward;
    mine.gather = gather;
    mine.scatter_add = scatter_add;
    mine.fused = fused;
    mine.fused_reduce = fused_reduce;
    mine.random = random_fill;
    mine.plan_begin = plan_begin;
    mine.plan_end = plan_end;
    mine.plan_replay = plan_replay;
    memcpy(table, &mine, size);
    return DLA_OK;
}

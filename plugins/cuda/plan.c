/*
 * plan.c - planned replays of dla_accelerate, and CUDA graphs of them
 * (ABI 1.3 plan_begin/plan_end, 1.5 plan_replay).
 *
 * plan_begin and plan_end bracket a replay: its launches go on the stream
 * as plain launches, and plan_end returns with them queued (with
 * DLACCEL_CUDA_PLAN_WAIT=1, once they have run).
 *
 * plan_replay says more: the host's plan id, and the memory of the run's
 * inputs and results (dla_plan_mem), where every run of the plan puts its
 * views at the same places relative to each region's first byte;
 * everything else (arguments, intermediates in the plan's arena,
 * constants) is what it was in every earlier run. A training loop's
 * mini-batches, weights and gradients lie somewhere new on most steps, so
 * a graph is not tied to their addresses: it runs over memory of its own,
 * one buffer per region (a role), and each run is
 *
 *     one kernel copying the regions the run reads into the roles,
 *     cudaGraphLaunch,
 *     one kernel copying the written roles out to the run's result buffers,
 *
 * three launches instead of one per kernel, and no call of the host's.
 * The copies are the inputs and results once (the digit CNN's step at
 * batch 128 moves about 1 MB, a few microseconds). A plan of a few small
 * launches of the kinds onekern.c records (the tiny MLP's step) runs as
 * one launch instead: one kernel of one block does the copies in, the
 * steps and the copies out, where the graph's nodes cost a few
 * microseconds each however little they do.
 *
 * Per device a list, most recent first, holds the plans seen:
 *
 *   - a plan's first runs (fewer than CAPTURE_AT) are plain launches:
 *     they are where cuDNN's algorithms are measured and the fused
 *     programs compiled (nvrtc.c), which a capture avoids;
 *   - the CAPTURE_AT-th run is captured (cudaStreamBeginCapture, relaxed
 *     mode so that a pool miss may still cudaMalloc) with dla__cu_ptr
 *     giving the roles' addresses for the run's regions (dla__cu_remap),
 *     then instantiated and launched as every later run is.
 *
 * A capture that meets what a graph cannot hold (a copy from or to host
 * memory, a wait) is ended there (dla__cu_plan_flush), launched as far as
 * it went with its results copied out, waited for and dropped; the rest
 * of the run is plain launches, and the plan is not captured again. So is
 * one during which the host frees memory it had before, or keeps memory
 * it took during the capture.
 *
 * Memory a captured kernel uses besides the run's regions is held by the
 * graph (chained through the blocks' next) until the graph is dropped,
 * as each launch of the graph uses it again: the scratch of cuDNN
 * workspaces and partial sums (dla__cu_scratch_done), and what the host
 * takes and gives back during the capture (the dense copies it makes of
 * views a kernel declines: dla__cu_plan_host_alloc and _free). Compiled fused programs are never
 * unloaded before device close; cuBLAS has a workspace of its own.
 *
 * A capture takes the whole stream, so graphs are made only on a device
 * one thread uses (dla__cu_enter notices a second), and the plan thread
 * holds gate while it captures. DLACCEL_CUDA_GRAPHS=0 turns graphs off.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "plugins/cuda/onekern_kern.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The run of a plan that is captured: the ones before are plain. */
#define CAPTURE_AT 3
/* Instantiated graphs per device, and plans in the list in all. */
#define KEPT_GRAPHS 8
#define KEPT_ENTRIES 32

/* One region of a run, and the graph's buffer for it. */
typedef struct role {
    dla__cu_mem *own; /* NULL until captured */
    size_t skew;      /* the region's first byte in own: its offset past 256 in the run */
    size_t bytes;
    int32_t written;
    /* the run being captured: its region's handle and first byte */
    dla_mem run_mem;
    size_t run_first;
} role;

struct dla__cu_graph {
    uint64_t plan;
    int sightings;        /* runs seen; -1: never captured (a capture failed) */
    cudaGraphExec_t exec; /* NULL until captured */
    dla__cu_mem *held;    /* scratch its kernels use */
    dla__cu_mem *k1;      /* its steps as one kernel (onekern.c), or NULL */
    int32_t k1_n;
    dla__cu_k1_win k1_win; /* DLACCEL_CUDA_K1_SHARED's windows (nrel -1: none) */
    dla__cu_k1c k1c;       /* the one kernel compiled (DLACCEL_CUDA_K1_COMPILE), or none */
    struct dla__cu_graph *next;
    int32_t nroles;
    role roles[];
};

__thread const struct dla__cu_graph *dla__cu_remap;

char *dla__cu_remapped(dla_mem m)
{
    const struct dla__cu_graph *g = dla__cu_remap;
    for (int32_t i = 0; i < g->nroles; i++)
        if (g->roles[i].run_mem == m)
            return g->roles[i].own->ptr + g->roles[i].skew - g->roles[i].run_first;
    return ((dla__cu_mem *)m)->ptr;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static void free_held(dla__cu_device *d, dla__cu_mem *m)
{
    while (m) {
        dla__cu_mem *next = m->next;
        dla__cu_mem_free(d, (dla_mem)m);
        m = next;
    }
}

/* What a graph owns goes back; g stays in the list, without a graph. */
static void forget(dla__cu_device *d, struct dla__cu_graph *g)
{
    if (g->exec) {
        /* A launch of it may still run: its memory is given back after. */
        cudaStreamSynchronize(d->stream);
        cudaGraphExecDestroy(g->exec);
        g->exec = NULL;
    }
    free_held(d, g->held);
    g->held = NULL;
    if (g->k1)
        dla__cu_mem_free(d, (dla_mem)g->k1);
    g->k1 = NULL;
    dla__cu_k1c_unload(&g->k1c);
    g->k1_n = 0;
    g->k1_win.nrel = -1;
    for (int32_t i = 0; i < g->nroles; i++) {
        if (g->roles[i].own)
            dla__cu_mem_free(d, (dla_mem)g->roles[i].own);
        g->roles[i].own = NULL;
    }
}

void dla__cu_plan_release(dla__cu_device *d)
{
    if (d->graph_launches)
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: %ld planned replays ran as one CUDA graph launch",
                          d->index, d->graph_launches);
    struct dla__cu_graph *g = d->graphs;
    while (g) {
        struct dla__cu_graph *next = g->next;
        forget(d, g);
        dla__cu_host->free(g);
        g = next;
    }
    d->graphs = NULL;
}

void dla__cu_scratch_done(dla__cu_device *d, dla__cu_mem *m)
{
    if (d->capturing && d->pending && dla__cu_planning_here(d)) {
        m->next = d->scratch_free; /* the graph's, and the next members' (space.c) */
        d->scratch_free = m;
        return;
    }
    dla__cu_mem_free(d, (dla_mem)m);
}

void dla__cu_plan_host_alloc(dla__cu_device *d, dla__cu_mem *m)
{
    if (d->capturing && dla__cu_planning_here(d)) {
        m->next = d->taken;
        d->taken = m;
    }
}

int dla__cu_plan_host_free(dla__cu_device *d, dla__cu_mem *m)
{
    if (!d->capturing || !dla__cu_planning_here(d))
        return 0;
    for (dla__cu_mem **link = &d->taken; *link; link = &(*link)->next)
        if (*link == m) {
            *link = m->next;
            m->next = d->held;
            d->held = m;
            return 1;
        }
    d->keep = 0;
    return 0;
}

/* The entry of plan with nroles roles, moved to the front of the list; a
 * new one when there is none (NULL on out of memory), the list then
 * trimmed to its bounds. An entry of the plan with another count of roles
 * is dropped (the host's plans keep theirs). */
static struct dla__cu_graph *entry(dla__cu_device *d, uint64_t plan, int32_t nroles)
{
    struct dla__cu_graph **link = &d->graphs;
    for (struct dla__cu_graph *g = d->graphs; g; link = &g->next, g = g->next)
        if (g->plan == plan) {
            *link = g->next;
            if (g->nroles == nroles) {
                g->next = d->graphs;
                d->graphs = g;
                return g;
            }
            forget(d, g);
            dla__cu_host->free(g);
            break;
        }
    struct dla__cu_graph *g = dla__cu_host->alloc(sizeof *g + (size_t)nroles * sizeof(role), 0);
    if (!g)
        return NULL;
    memset(g, 0, sizeof *g + (size_t)nroles * sizeof(role));
    g->plan = plan;
    g->nroles = nroles;
    g->next = d->graphs;
    d->graphs = g;
    int entries = 0, graphs = 0;
    link = &d->graphs;
    while (*link) {
        struct dla__cu_graph *e = *link;
        entries++;
        graphs += e->exec != NULL;
        if (entries > KEPT_ENTRIES || (e->exec && graphs > KEPT_GRAPHS)) {
            *link = e->next;
            forget(d, e);
            dla__cu_host->free(e);
        } else {
            link = &e->next;
        }
    }
    return g;
}

/* Whether the run's regions are the sizes and kinds of g's roles. */
static int fits(const struct dla__cu_graph *g, const dla_plan_mem *mems)
{
    for (int32_t i = 0; i < g->nroles; i++)
        if (mems[i].end - mems[i].first != g->roles[i].bytes || !mems[i].written != !g->roles[i].written)
            return 0;
    return 1;
}

/* Whether role r is copied into the graph's memory (out 0: the run reads
 * it) or out of it (out 1: the run writes it). */
static int moves(const role *r, int out)
{
    return !r->written == !out && r->bytes > 0;
}

/* Adds to c the copy between region i of the run (mems; NULL: the run
 * being captured, as remember_run kept it) and its role, into the role
 * (out 0) or out of it (out 1). */
static void add_copy(dla__cu_copies *c, const struct dla__cu_graph *g, const dla_plan_mem *mems,
                     int32_t i, int out)
{
    const role *r = &g->roles[i];
    char *run = mems ? ((dla__cu_mem *)mems[i].mem)->ptr + mems[i].first
                     : ((dla__cu_mem *)r->run_mem)->ptr + r->run_first;
    c->src[c->n] = out ? r->own->ptr + r->skew : run;
    c->dst[c->n] = out ? run : r->own->ptr + r->skew;
    c->bytes[c->n] = (int64_t)r->bytes;
    c->n++;
}

/* The copies of the roles that move one way (moves), in launches of up
 * to DLA__CU_COPIES regions. */
static cudaError_t copy_roles(dla__cu_device *d, const struct dla__cu_graph *g,
                              const dla_plan_mem *mems, int out)
{
    dla__cu_copies c;
    c.n = 0;
    int64_t most = 0;
    for (int32_t i = 0; i <= g->nroles; i++) {
        if (c.n == DLA__CU_COPIES || (i == g->nroles && c.n > 0)) {
            cudaError_t e = dla__cu_launch_copies(d->stream, dla__cu_blocks(d, most / 16 + 1), &c);
            if (e != cudaSuccess)
                return e;
            c.n = 0;
            most = 0;
        }
        if (i == g->nroles)
            break;
        if (!moves(&g->roles[i], out))
            continue;
        add_copy(&c, g, mems, i, out);
        most = c.bytes[c.n - 1] > most ? c.bytes[c.n - 1] : most;
    }
    return cudaSuccess;
}

/* Whether g's roles are few and small enough for the one kernel's copies
 * (onekern_kern.h). */
static int k1_roles_fit(const struct dla__cu_graph *g)
{
    int32_t n[2] = {0, 0};
    size_t bytes = 0;
    for (int32_t i = 0; i < g->nroles; i++)
        for (int out = 0; out < 2; out++)
            if (moves(&g->roles[i], out)) {
                n[out]++;
                bytes += g->roles[i].bytes;
            }
    return n[0] <= DLA__CU_COPIES && n[1] <= DLA__CU_COPIES && bytes <= DLA__CU_K1_MAX_COPY;
}

/* g's steps as one kernel (onekern.c), with the roles as the one kernel's
 * copies order them (in, then out) for DLACCEL_CUDA_K1_SHARED's windows,
 * and compiled (DLACCEL_CUDA_K1_COMPILE). */
static dla__cu_mem *k1_upload(dla__cu_device *d, struct dla__cu_graph *g)
{
    const char *lo[2 * DLA__CU_COPIES];
    int64_t bytes[2 * DLA__CU_COPIES];
    int32_t n = 0;
    for (int out = 0; out < 2; out++)
        for (int32_t i = 0; i < g->nroles; i++)
            if (moves(&g->roles[i], out)) {
                lo[n] = g->roles[i].own->ptr + g->roles[i].skew;
                bytes[n++] = (int64_t)g->roles[i].bytes;
            }
    dla__cu_mem *k = dla__cu_k1_upload(d, &g->k1_n, lo, bytes, n, &g->k1_win);
    if (k)
        dla__cu_k1_compile(d, &g->k1c);
    return k;
}

/* Whether a one kernel's launch (what) was refused with e: nothing was
 * enqueued, so the error is cleared, *flag becomes value, and a warning
 * says what happens from now on (then). */
static int k1_refused(dla__cu_device *d, cudaError_t e, int *flag, int value, const char *what,
                      const char *then)
{
    if (e == cudaSuccess)
        return 0;
    cudaGetLastError();
    *flag = value;
    dla__cu_host->log(DLA_LOG_WARN, "cuda:%d: %s was refused (%s); %s from now on", d->index,
                      what, cudaGetErrorString(e), then);
    return 1;
}

/* A replay of g (whose roles fit, k1_roles_fit) over the run's regions as
 * its one kernel: compiled, else interpreted, each launched early where
 * DLACCEL_CUDA_K1_PDL is on, and plain where a launch was refused. */
static cudaError_t launch_k1(dla__cu_device *d, const struct dla__cu_graph *g,
                             const dla_plan_mem *mems)
{
    dla__cu_copies c[2];
    for (int out = 0; out < 2; out++) {
        c[out].n = 0;
        for (int32_t i = 0; i < g->nroles; i++)
            if (moves(&g->roles[i], out))
                add_copy(&c[out], g, mems, i, out);
    }
    const dla__cu_k1_step *steps = (const dla__cu_k1_step *)g->k1->ptr;
    unsigned long long *prof = dla__cu_k1_profile(d);
    if (g->k1c.lib && !d->k1c_refused) {
        const cudaError_t e = dla__cu_k1c_launch(d->stream, &g->k1c, &c[0], &c[1], prof,
                                                 d->k1_pdl ? DLA__CU_K1_EARLY : 0);
        if (!k1_refused(d, e, &d->k1c_refused, 1, "a compiled one kernel's launch",
                        "one kernels run interpreted"))
            return e;
    }
    const dla__cu_k1_win *win = g->k1_win.nrel >= 0 ? &g->k1_win : NULL;
    if (d->k1_pdl) {
        const cudaError_t e = dla__cu_k1_launch(d->stream, steps, g->k1_n, &c[0], &c[1], prof,
                                                DLA__CU_K1_EARLY, win);
        if (!k1_refused(d, e, &d->k1_pdl, 0, "a one kernel's programmatic dependent launch",
                        "DLACCEL_CUDA_K1_PDL is off"))
            return e;
    }
    return dla__cu_k1_launch(d->stream, steps, g->k1_n, &c[0], &c[1], prof, 0, win);
}

/* The run's regions as the capture sees them (dla__cu_remapped). */
static void remember_run(struct dla__cu_graph *g, const dla_plan_mem *mems)
{
    for (int32_t i = 0; i < g->nroles; i++) {
        g->roles[i].run_mem = mems[i].mem;
        g->roles[i].run_first = mems[i].first;
    }
}

/* Ends the capture in progress, launches what it holds and copies its
 * results out to the run's buffers. keep: the capture is the whole run,
 * and the graph stays with its entry for the next runs. */
static dla_status finish(dla__cu_device *d, int keep, const char *why)
{
    const double t0 = now_ms();
    struct dla__cu_graph *g = d->pending;
    /* The capture's scratch, taken again or not, is the graph's too. */
    while (d->scratch_free) {
        dla__cu_mem *m = d->scratch_free;
        d->scratch_free = m->next;
        m->next = d->held;
        d->held = m;
    }
    dla__cu_mem *held = d->held;
    if (d->taken)
        keep = 0; /* the host keeps memory it took during the capture */
    d->taken = NULL;
    d->capturing = 0;
    d->pending = NULL;
    d->held = NULL;
    dla__cu_remap = NULL;
    g->sightings = -1; /* until it is kept, below */
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    size_t nodes = 0;
    int merged = 0;
    dla__cu_seg_enter(d); /* the last member's node */
    cudaError_t e = cudaStreamEndCapture(d->stream, &graph);
    const double t1 = now_ms();
    if (e == cudaSuccess && graph) {
        cudaGraphGetNodes(graph, NULL, &nodes);
        /* Runs of small launches one node each (segment.c); the graph as
         * captured if the runtime will not take that copy. */
        cudaGraph_t fewer = NULL;
        merged = dla__cu_seg_apply(d, graph, &fewer, &held);
        if (fewer) {
            e = cudaGraphInstantiate(&exec, fewer, 0);
            if (e != cudaSuccess) {
                cudaGetLastError();
                dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: the graph with runs of small "
                                                 "launches as one node could not be "
                                                 "instantiated (%s); it runs as captured",
                                  d->index, cudaGetErrorString(e));
                exec = NULL;
                merged = 0;
            }
            cudaGraphDestroy(fewer);
        }
        if (!exec)
            e = cudaGraphInstantiate(&exec, graph, 0);
    }
    const double t2 = now_ms();
    if (graph)
        cudaGraphDestroy(graph);
    dla_status s = DLA_OK;
    if (e != cudaSuccess || !exec) {
        /* The captured work never ran: this replay cannot go on. */
        d->graphs_off = 1;
        s = dla__cu_host->error(DLA_ERR_DEVICE,
                                "cuda plan (at %s): the CUDA graph of the replay could not be "
                                "made: %s (%s); later replays run without graphs "
                                "(DLACCEL_CUDA_GRAPHS=0 avoids this one too)",
                                why, cudaGetErrorString(e), cudaGetErrorName(e));
        cudaGetLastError();
    } else {
        e = cudaGraphLaunch(exec, d->stream);
        if (e == cudaSuccess)
            e = copy_roles(d, g, NULL, 1);
        if (e != cudaSuccess)
            s = dla__cu_err(e, "plan: launching the replay's graph");
        if (s == DLA_OK && keep) {
            g->exec = exec;
            g->held = held;
            g->sightings = CAPTURE_AT;
            /* Later runs launch its steps as one kernel where they can. */
            if (k1_roles_fit(g))
                g->k1 = k1_upload(d, g);
            else
                dla__cu_k1_spoil(d, "its regions are more than %d each way or %d bytes",
                                 DLA__CU_COPIES, DLA__CU_K1_MAX_COPY);
            char k1[128];
            if (g->k1)
                snprintf(k1, sizeof k1, "runs as one kernel of %d steps%s", (int)g->k1_n,
                         g->k1c.lib ? ", compiled" : "");
            else
                snprintf(k1, sizeof k1, "not one kernel: %s", d->k1_why);
            dla__cu_host->log(DLA_LOG_DEBUG,
                              "cuda:%d: plan %llu captured as a CUDA graph of %zu nodes (%zu "
                              "with runs of small launches as one node each), %d regions "
                              "(capture %.2f ms, end %.2f ms, instantiate %.2f ms, launch "
                              "%.2f ms); %s",
                              d->index, (unsigned long long)g->plan, nodes,
                              nodes - (size_t)merged, (int)g->nroles, t0 - d->capture_ms,
                              t1 - t0, t2 - t1, now_ms() - t2, k1);
            return DLA_OK;
        }
        /* Not kept: once it has run, its exec and memory go. */
        e = cudaStreamSynchronize(d->stream);
        if (s == DLA_OK)
            s = dla__cu_err(e, "plan: the replay's captured part");
        cudaGraphExecDestroy(exec);
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: plan %llu is not kept as a graph (%s)",
                          d->index, (unsigned long long)g->plan, why);
    }
    /* The stream is idle here (synchronized, or the capture never ran). */
    g->held = held;
    forget(d, g);
    return s;
}

dla_status dla__cu_plan_flush(dla__cu_device *d, const char *why)
{
    if (!d->capturing || !dla__cu_planning_here(d))
        return DLA_OK;
    return finish(d, 0, why);
}

dla_status dla__cu_plan_begin(void *dev, int32_t nlaunches)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "plan_begin");
    if (s != DLA_OK)
        return s;
    if (dla__cu_planning_here(d))
        return dla__cu_host->error(DLA_ERR_STATE, "cuda plan_begin: a plan is already running on "
                                                  "this thread");
    dla__cu_set_planning_here(d);
    d->plan_launches = nlaunches;
    d->capturing = 0;
    d->gated = 0;
    return DLA_OK;
}

/* Starts capturing the run (mems) of g: the roles' buffers, the run's
 * inputs copied into them, then the capture, during which dla__cu_ptr
 * gives the roles. Other threads wait at dla__cu_enter until plan_end; a
 * thread that came first after the caller's check of multi is seen by the
 * check under the gate (it marks multi before it passes the gate). Does
 * nothing (the run is plain launches) when any of that cannot be had. */
static void capture(dla__cu_device *d, struct dla__cu_graph *g, const dla_plan_mem *mems)
{
    for (int32_t i = 0; i < g->nroles; i++) {
        role *r = &g->roles[i];
        r->bytes = mems[i].end - mems[i].first;
        r->written = mems[i].written != 0;
        /* The region keeps its address's alignment (blocks are 256-byte
         * aligned): cuDNN's engines and cuBLAS choose kernels by the
         * operands' alignment, and the graph must run what the eager
         * replays ran on the same addresses. */
        r->skew = (size_t)(mems[i].first % 256);
        dla_mem m = NULL;
        if (dla__cu_mem_alloc(d, r->skew + (r->bytes ? r->bytes : 1), &m) != DLA_OK) {
            dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: no memory for a replay's graph: plain "
                                             "launches", d->index);
            forget(d, g);
            return;
        }
        r->own = (dla__cu_mem *)m;
    }
    pthread_mutex_lock(&d->gate);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (__atomic_load_n(&d->multi, __ATOMIC_ACQUIRE) ||
        cudaStreamIsCapturing(d->stream, &st) != cudaSuccess || st != cudaStreamCaptureStatusNone ||
        copy_roles(d, g, mems, 0) != cudaSuccess) {
        cudaGetLastError();
        pthread_mutex_unlock(&d->gate);
        forget(d, g);
        return;
    }
    d->gated = 1;
    cudaError_t e = cudaStreamBeginCapture(d->stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
        cudaGetLastError();
        dla__cu_host->log(DLA_LOG_WARN, "cuda:%d: cudaStreamBeginCapture: %s; replays run "
                                        "without graphs",
                          d->index, cudaGetErrorString(e));
        d->graphs_off = 1;
        cudaStreamSynchronize(d->stream); /* the copies in read the roles */
        forget(d, g);
        return;
    }
    remember_run(g, mems);
    dla__cu_k1_begin(d);
    dla__cu_seg_begin(d);
    d->capturing = 1;
    d->capture_ms = now_ms();
    d->keep = 1;
    d->pending = g;
    d->held = NULL;
    d->scratch_free = NULL;
    d->taken = NULL;
    dla__cu_remap = g;
}

dla_status dla__cu_plan_replay(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                               const dla_plan_mem *mems, int32_t *ran)
{
    dla__cu_device *d = dev;
    *ran = 0;
    dla_status s = dla__cu_plan_begin(dev, nlaunches);
    if (s != DLA_OK || d->graphs_off || nlaunches < 2 || nmems < 0 ||
        __atomic_load_n(&d->multi, __ATOMIC_ACQUIRE))
        return s;
    struct dla__cu_graph *g = entry(d, plan, nmems);
    if (!g)
        return DLA_OK; /* out of memory for the list: plain launches */
    if (g->exec) {
        if (!fits(g, mems))
            return DLA_OK;
        cudaError_t e = cudaSuccess;
        if (g->k1 && (e = launch_k1(d, g, mems)) != cudaSuccess) {
            /* Refused at launch (nothing was enqueued): the graph runs this
             * replay, and graphs every later one on this device. */
            cudaGetLastError();
            dla__cu_host->log(DLA_LOG_WARN, "cuda:%d: a replay's one kernel could not be "
                                            "launched (%s); replays run as CUDA graphs from now on",
                              d->index, cudaGetErrorString(e));
            d->k1_refused = 1;
            dla__cu_mem_free(d, (dla_mem)g->k1);
            g->k1 = NULL;
            dla__cu_k1c_unload(&g->k1c);
            e = cudaSuccess;
        }
        if (!g->k1) {
            e = copy_roles(d, g, mems, 0);
            if (e == cudaSuccess)
                e = cudaGraphLaunch(g->exec, d->stream);
            if (e == cudaSuccess)
                e = copy_roles(d, g, mems, 1);
        }
        if (e != cudaSuccess) {
            dla__cu_set_planning_here(NULL);
            return dla__cu_err(e, "plan_replay: launching the replay's graph");
        }
        *ran = 1;
        if (g->k1)
            d->onekern_launches++;
        else
            d->graph_launches++;
        return DLA_OK;
    }
    if (g->sightings >= 0 && ++g->sightings >= CAPTURE_AT)
        capture(d, g, mems);
    return DLA_OK;
}

dla_status dla__cu_plan_end(void *dev)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "plan_end");
    /* A capture in progress ends whatever enter said (not kept when it
     * failed): left, the stream would stay captured and this thread's
     * addresses redirected into buffers the pool gives out again. */
    if (d->capturing && dla__cu_planning_here(d)) {
        const dla_status f = finish(d, s == DLA_OK && d->keep, "plan_end");
        if (s == DLA_OK)
            s = f;
    }
    if (dla__cu_planning_here(d)) {
        dla__cu_set_planning_here(NULL);
        if (d->gated) {
            d->gated = 0;
            pthread_mutex_unlock(&d->gate);
        }
    }
    if (s != DLA_OK || !d->plan_wait)
        return s;
    /* The ABI lets plan_end return with the replay queued, as every launch
     * outside a plan returns: the host's next step (the next replay's
     * launch, or the copy of a loss to the host) is then made while this
     * one runs, where a wait here would leave the GPU idle for it, each
     * replay. The one stream orders everything after it, the pool's
     * freed blocks included; a kernel that fails while running is the
     * error of the next wait (dla__cu_wait_err says so).
     * DLACCEL_CUDA_PLAN_WAIT=1 waits, so that it is this replay's. */
    return dla__cu_wait_err(cudaStreamSynchronize(d->stream), "plan_end: the replay");
}

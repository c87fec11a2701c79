/*
 * plan.c - planned replays of dla_accelerate, and CUDA graphs of them
 * (ABI 1.3 plan_begin/plan_end, 1.5 plan_replay).
 *
 * plan_begin and plan_end bracket a replay: its launches go on the stream
 * as plain launches, with one wait at plan_end.
 *
 * plan_replay says more: the host's plan id, and the memory of the run's
 * inputs and results; everything else (arguments, intermediates in the
 * plan's arena, constants) is what it was in every earlier run of that
 * plan. So a run whose memory, as device addresses and offsets, was seen
 * before can be the same CUDA graph again. Per device a list, most recent
 * first, holds what was seen:
 *
 *   - a (plan, memory) seen fewer than CAPTURE_AT times runs as plain
 *     launches: the first runs are where cuDNN's algorithms are measured
 *     and the fused programs compiled (nvrtc.c), which a capture avoids;
 *   - the CAPTURE_AT-th run is captured (cudaStreamBeginCapture, relaxed
 *     mode so that a pool miss may still cudaMalloc), instantiated and
 *     launched;
 *   - from then on a run with that memory is one cudaGraphLaunch, and the
 *     host makes none of its calls. A training loop whose tensors come
 *     back to the same pool blocks (or alternate between a few) replays
 *     its step so.
 *
 * A capture that meets what a graph cannot hold (a copy from or to host
 * memory, a wait, memory the host allocates or frees meanwhile: the dense
 * retry's copies) is ended there (dla__cu_plan_flush), launched as far as
 * it went, waited for and dropped; the rest of the run is plain launches,
 * and that (plan, memory) is not captured again.
 *
 * Memory a captured kernel uses besides the host's, the scratch of cuDNN
 * workspaces and partial sums, is held by the graph (chained through the
 * blocks' next, dla__cu_scratch_done) until the graph is dropped: each
 * launch of the graph writes it again. Compiled fused programs are never
 * unloaded before device close; cuBLAS has a workspace of its own.
 *
 * A capture takes the whole stream, so graphs are made only on a device
 * one thread uses (dla__cu_enter notices a second), and the plan thread
 * holds gate while it captures. DLACCEL_CUDA_GRAPHS=0 turns graphs off.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "plugins/cuda/cu.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The run of a (plan, memory) that is captured: the ones before are plain. */
#define CAPTURE_AT 3
/* Instantiated graphs per device, and entries of the list in all. */
#define KEPT_GRAPHS 8
#define KEPT_ENTRIES 32

struct dla__cu_graph {
    uint64_t plan;
    int32_t nmems;
    int sightings;         /* runs seen; -1: never captured (a capture failed) */
    cudaGraphExec_t exec;  /* NULL until captured */
    dla__cu_mem *held;     /* scratch its kernels use */
    struct dla__cu_graph *next;
    int64_t mem[];         /* nmems (device address, offset) pairs */
};

static void free_held(dla__cu_device *d, dla__cu_mem *m)
{
    while (m) {
        dla__cu_mem *next = m->next;
        dla__cu_mem_free(d, (dla_mem)m);
        m = next;
    }
}

static void drop(dla__cu_device *d, struct dla__cu_graph *g)
{
    if (g->exec) {
        /* A launch of it may still run: its scratch is given back after. */
        cudaStreamSynchronize(d->stream);
        cudaGraphExecDestroy(g->exec);
    }
    free_held(d, g->held);
    dla__cu_host->free(g);
}

void dla__cu_plan_release(dla__cu_device *d)
{
    if (d->graph_launches)
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: %ld planned replays ran as one CUDA graph launch",
                          d->index, d->graph_launches);
    struct dla__cu_graph *g = d->graphs;
    while (g) {
        struct dla__cu_graph *next = g->next;
        drop(d, g);
        g = next;
    }
    d->graphs = NULL;
    dla__cu_host->free(d->plan_key);
    d->plan_key = NULL;
    d->plan_key_cap = 0;
}

void dla__cu_scratch_done(dla__cu_device *d, dla__cu_mem *m)
{
    if (d->capturing && d->pending && dla__cu_planning_here(d)) {
        m->next = d->held;
        d->held = m;
        return;
    }
    dla__cu_mem_free(d, (dla_mem)m);
}

void dla__cu_plan_host_memory(dla__cu_device *d)
{
    if (d->capturing && dla__cu_planning_here(d))
        d->keep = 0;
}

/* The run's memory as (address, offset) pairs in d->plan_key; 0 on out of
 * memory. */
static int key_of(dla__cu_device *d, int32_t nmems, const dla_mem *mems, const int64_t *offsets)
{
    const size_t need = 2 * (size_t)nmems;
    if (need > d->plan_key_cap) {
        int64_t *k = dla__cu_host->alloc(need * sizeof *k, 0);
        if (!k)
            return 0;
        dla__cu_host->free(d->plan_key);
        d->plan_key = k;
        d->plan_key_cap = need;
    }
    for (int32_t i = 0; i < nmems; i++) {
        d->plan_key[2 * i] = mems[i] ? (int64_t)(uintptr_t)dla__cu_ptr(mems[i]) : 0;
        d->plan_key[2 * i + 1] = offsets[i];
    }
    return 1;
}

/* The entry of (plan, d->plan_key), moved to the front of the list; a new
 * one when there is none (NULL on out of memory), the list then trimmed
 * to its bounds. */
static struct dla__cu_graph *entry(dla__cu_device *d, uint64_t plan, int32_t nmems)
{
    const size_t bytes = 2 * (size_t)nmems * sizeof(int64_t);
    struct dla__cu_graph **link = &d->graphs;
    for (struct dla__cu_graph *g = d->graphs; g; link = &g->next, g = g->next)
        if (g->plan == plan && g->nmems == nmems && !memcmp(g->mem, d->plan_key, bytes)) {
            *link = g->next;
            g->next = d->graphs;
            d->graphs = g;
            return g;
        }
    struct dla__cu_graph *g = dla__cu_host->alloc(sizeof *g + bytes, 0);
    if (!g)
        return NULL;
    memset(g, 0, sizeof *g);
    g->plan = plan;
    g->nmems = nmems;
    memcpy(g->mem, d->plan_key, bytes);
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
            drop(d, e);
        } else {
            link = &e->next;
        }
    }
    return g;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Ends the capture in progress and launches what it holds. keep: the
 * capture is the whole run, and its graph stays with d->pending. */
static dla_status finish(dla__cu_device *d, int keep, const char *why)
{
    const double t0 = now_ms();
    struct dla__cu_graph *g = d->pending;
    dla__cu_mem *held = d->held;
    d->capturing = 0;
    d->pending = NULL;
    d->held = NULL;
    if (g)
        g->sightings = -1; /* until it is kept, below */
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    size_t nodes = 0;
    cudaError_t e = cudaStreamEndCapture(d->stream, &graph);
    const double t1 = now_ms();
    if (e == cudaSuccess && graph) {
        cudaGraphGetNodes(graph, NULL, &nodes);
        e = cudaGraphInstantiate(&exec, graph, 0);
    }
    const double t2 = now_ms();
    if (graph)
        cudaGraphDestroy(graph);
    if (e != cudaSuccess || !exec) {
        /* The captured work never ran: this replay cannot go on. */
        d->graphs_off = 1;
        free_held(d, held);
        return dla__cu_host->error(DLA_ERR_DEVICE,
                                   "cuda plan (at %s): the CUDA graph of the replay could not be "
                                   "made: %s (%s); later replays run without graphs "
                                   "(DLACCEL_CUDA_GRAPHS=0 avoids this one too)",
                                   why, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    e = cudaGraphLaunch(exec, d->stream);
    if (keep && g && e == cudaSuccess) {
        g->exec = exec;
        g->held = held;
        g->sightings = CAPTURE_AT;
        dla__cu_host->log(DLA_LOG_DEBUG,
                          "cuda:%d: plan %llu captured as a CUDA graph of %zu nodes (capture "
                          "%.2f ms, end %.2f ms, instantiate %.2f ms, launch %.2f ms)",
                          d->index, (unsigned long long)g->plan, nodes, t0 - d->capture_ms,
                          t1 - t0, t2 - t1, now_ms() - t2);
        return DLA_OK;
    }
    /* Not kept: once it has run, its exec and scratch go. */
    cudaError_t w = cudaStreamSynchronize(d->stream);
    cudaGraphExecDestroy(exec);
    free_held(d, held);
    if (e != cudaSuccess)
        return dla__cu_err(e, "plan: cudaGraphLaunch");
    dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: a planned replay is not kept as a graph (%s)",
                      d->index, why);
    return dla__cu_err(w, "plan: the replay's captured part");
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

/* Starts capturing the run of g: other threads wait at dla__cu_enter until
 * plan_end. A thread that came first after the caller's check of multi
 * is seen by the check under the gate (it marks multi before it passes
 * the gate). */
static void capture(dla__cu_device *d, struct dla__cu_graph *g)
{
    pthread_mutex_lock(&d->gate);
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (__atomic_load_n(&d->multi, __ATOMIC_ACQUIRE) ||
        cudaStreamIsCapturing(d->stream, &st) != cudaSuccess || st != cudaStreamCaptureStatusNone) {
        cudaGetLastError();
        pthread_mutex_unlock(&d->gate);
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
        return;
    }
    d->capturing = 1;
    d->capture_ms = now_ms();
    d->keep = 1;
    d->pending = g;
    d->held = NULL;
}

dla_status dla__cu_plan_replay(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                               const dla_mem *mems, const int64_t *offsets, int32_t *ran)
{
    dla__cu_device *d = dev;
    *ran = 0;
    dla_status s = dla__cu_plan_begin(dev, nlaunches);
    if (s != DLA_OK || d->graphs_off || nlaunches < 2 ||
        __atomic_load_n(&d->multi, __ATOMIC_ACQUIRE) || !key_of(d, nmems, mems, offsets))
        return s;
    struct dla__cu_graph *g = entry(d, plan, nmems);
    if (!g)
        return DLA_OK; /* out of memory for the list: plain launches */
    if (g->exec) {
        cudaError_t e = cudaGraphLaunch(g->exec, d->stream);
        if (e != cudaSuccess) {
            dla__cu_set_planning_here(NULL);
            return dla__cu_err(e, "plan_replay: cudaGraphLaunch");
        }
        *ran = 1;
        d->graph_launches++;
        return DLA_OK;
    }
    if (g->sightings >= 0 && ++g->sightings >= CAPTURE_AT)
        capture(d, g);
    return DLA_OK;
}

dla_status dla__cu_plan_end(void *dev)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "plan_end");
    if (s == DLA_OK && d->capturing && dla__cu_planning_here(d))
        s = finish(d, d->keep, "plan_end");
    if (dla__cu_planning_here(d)) {
        dla__cu_set_planning_here(NULL);
        if (d->gated) {
            d->gated = 0;
            pthread_mutex_unlock(&d->gate);
        }
    }
    if (s != DLA_OK)
        return s;
    /* The ABI's plan_end waits, so that a kernel that fails while running
     * is this replay's error. */
    return dla__cu_err(cudaStreamSynchronize(d->stream), "plan_end: the replay");
}

/*
 * plan.c - planned replays of dla_accelerate as CUDA graphs (ABI 1.3).
 *
 * Between plan_begin and plan_end the plugin captures what the calling
 * thread enqueues on the device's stream (cudaStreamBeginCapture, relaxed
 * mode so that a pool miss may still cudaMalloc), and at plan_end turns
 * the capture into a graph and launches it: one launch for the whole
 * replay instead of one per kernel.
 *
 * A replay's tensors live at new addresses on every call (a new mini-batch,
 * new activations from the pool), so each replay is captured again; what
 * is kept is the instantiated graph (cudaGraphExec_t), which
 * cudaGraphExecUpdate points at the new addresses when the new capture has
 * the same shape (same nodes, same kernels): instantiation, the expensive
 * part, happens once per distinct replay. The execs are kept per device,
 * most recent first, up to DLA__CU_GRAPHS_KEPT.
 *
 * A capture takes the whole stream: a device used by more than one thread
 * never captures (dla__cu_enter notices the second thread), and while a
 * plan captures, a thread that comes second waits at dla__cu_enter.
 *
 * What a graph cannot hold ends the capture early (dla__cu_plan_flush):
 * a copy from or to host memory, a sync. The captured part is launched at
 * once, the host copy runs, and the next launches are captured again
 * (dla__cu_plan_resume): a replay is then a few graphs in order, with the
 * same results.
 *
 * Graphs are opt-in (DLACCEL_CUDA_GRAPHS=1): a replay is captured anew
 * each time, and on an H200 capture and update cost more than they save
 * (bench/gpu_run.sh, 2026-11-26: digit CNN train step at batch 128
 * 1.77 ms with graphs, 1.23 ms as plain launches; tiny MLP 70 us, 66 us).
 * Replaying a kept graph without capturing again, with only its inputs'
 * and outputs' addresses patched into the kernel nodes, is what would
 * make them pay; it is not done. By default every replay runs as plain
 * launches with one wait at its end.
 */
#include "plugins/cuda/cu.h"

#include <stdlib.h>
#include <string.h>

#define DLA__CU_GRAPHS_KEPT 16

struct dla__cu_graph {
    cudaGraphExec_t exec;
    size_t nodes;
    int32_t nlaunches;
    struct dla__cu_graph *next;
};

static void graph_free(struct dla__cu_graph *g)
{
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    dla__cu_host->free(g);
}

void dla__cu_plan_release(dla__cu_device *d)
{
    struct dla__cu_graph *g = d->graphs;
    while (g) {
        struct dla__cu_graph *next = g->next;
        graph_free(g);
        g = next;
    }
    d->graphs = NULL;
}

/* An exec of graph: a kept one updated to its addresses, else a new one
 * (kept at the front). */
static dla_status exec_for(dla__cu_device *d, cudaGraph_t graph, cudaGraphExec_t *out)
{
    size_t nodes = 0;
    cudaError_t e = cudaGraphGetNodes(graph, NULL, &nodes);
    if (e != cudaSuccess)
        return dla__cu_err(e, "plan_end: cudaGraphGetNodes");
    struct dla__cu_graph **link = &d->graphs;
    for (struct dla__cu_graph *g = d->graphs; g; link = &g->next, g = g->next) {
        if (g->nodes != nodes || g->nlaunches != d->plan_launches)
            continue;
        cudaGraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof info);
        if (cudaGraphExecUpdate(g->exec, graph, &info) == cudaSuccess &&
            info.result == cudaGraphExecUpdateSuccess) {
            /* Most recent first: the next replay tries it first. */
            *link = g->next;
            g->next = d->graphs;
            d->graphs = g;
            *out = g->exec;
            return DLA_OK;
        }
        cudaGetLastError(); /* a refused update is not an error of the replay */
    }
    struct dla__cu_graph *g = dla__cu_host->alloc(sizeof *g, 0);
    if (!g)
        return dla__cu_host->error(DLA_ERR_OUT_OF_MEMORY, "cuda plan_end: a graph entry");
    memset(g, 0, sizeof *g);
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (e != cudaSuccess) {
        dla__cu_host->free(g);
        return dla__cu_err(e, "plan_end: cudaGraphInstantiate");
    }
    g->nodes = nodes;
    g->nlaunches = d->plan_launches;
    g->next = d->graphs;
    d->graphs = g;
    /* Drop the oldest beyond the bound. */
    int kept = 0;
    for (struct dla__cu_graph **l = &d->graphs; *l; l = &(*l)->next)
        if (++kept > DLA__CU_GRAPHS_KEPT) {
            struct dla__cu_graph *old = *l;
            *l = NULL;
            while (old) {
                struct dla__cu_graph *next = old->next;
                graph_free(old);
                old = next;
            }
            break;
        }
    *out = g->exec;
    return DLA_OK;
}

dla_status dla__cu_plan_flush(dla__cu_device *d, const char *why)
{
    if (!d->capturing || !dla__cu_planning_here(d))
        return DLA_OK;
    d->capturing = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(d->stream, &graph);
    if (e != cudaSuccess || !graph) {
        /* The captured work never ran: the replay cannot go on. Later
         * replays run without graphs. */
        d->graphs_off = 1;
        if (graph)
            cudaGraphDestroy(graph);
        return dla__cu_host->error(DLA_ERR_DEVICE,
                                   "cuda plan (at %s): the CUDA graph capture failed: %s (%s); "
                                   "later replays run without graphs (leaving DLACCEL_CUDA_GRAPHS "
                                   "unset avoids this one too)",
                                   why, cudaGetErrorString(e), cudaGetErrorName(e));
    }
    size_t nodes = 0;
    cudaGraphGetNodes(graph, NULL, &nodes);
    dla_status s = DLA_OK;
    if (nodes > 0) {
        cudaGraphExec_t exec = NULL;
        s = exec_for(d, graph, &exec);
        if (s == DLA_OK)
            s = dla__cu_err(cudaGraphLaunch(exec, d->stream), "plan: cudaGraphLaunch");
    }
    cudaGraphDestroy(graph);
    if (s != DLA_OK)
        d->graphs_off = 1;
    return s;
}

/* Starts capturing d's stream for the plan of this thread. */
static void capture(dla__cu_device *d)
{
    if (d->graphs_off || __atomic_load_n(&d->multi, __ATOMIC_ACQUIRE))
        return;
    /* Capture only a stream with nothing of a capture pending. */
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(d->stream, &st) != cudaSuccess || st != cudaStreamCaptureStatusNone) {
        cudaGetLastError();
        return;
    }
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
}

void dla__cu_plan_resume(dla__cu_device *d)
{
    if (!d->capturing && dla__cu_planning_here(d))
        capture(d);
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
    if (nlaunches < 2 || d->graphs_off || __atomic_load_n(&d->multi, __ATOMIC_ACQUIRE))
        return DLA_OK;
    /* A capture: other threads wait at dla__cu_enter until plan_end. A
     * thread that came first after the check above is seen by the check
     * under the gate (it marks multi before it passes the gate). */
    pthread_mutex_lock(&d->gate);
    if (__atomic_load_n(&d->multi, __ATOMIC_ACQUIRE)) {
        pthread_mutex_unlock(&d->gate);
        return DLA_OK;
    }
    d->gated = 1;
    capture(d);
    return DLA_OK;
}

dla_status dla__cu_plan_end(void *dev)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "plan_end");
    if (s == DLA_OK)
        s = dla__cu_plan_flush(d, "plan_end");
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

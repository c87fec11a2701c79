/*
 * segment.c - runs of small launches inside a captured replay, each made
 * one kernel node of the graph.
 *
 * A kernel node costs a graph launch a microsecond or two however little
 * it does, and a training step's graph has dozens of nodes that do almost
 * nothing: a batch normalization's per-channel arithmetic, the loss over
 * ten classes, an optimizer's update of a bias. onekern.c makes a whole
 * plan one kernel when every launch is a step; here, in a plan that is
 * not, each run of consecutive launches that are steps of at most
 * SEG_WORK elements becomes one node running the one kernel over them
 * (one block, a barrier between steps: the same device code, so the same
 * bits; onekern_kern.h).
 *
 * During the capture (plan.c), every member that records a step
 * (dla__cu_k1_note) also records it here, with the node its launch made:
 * at each member's entry the capture's leaf (cudaStreamGetCaptureInfo) is
 * the node the previous member's launch made, and the leaf when a member
 * entered is what its node must depend on, alone. After the capture,
 * before instantiation, dla__cu_seg_apply takes a clone of the graph and,
 * for each run of two or more such nodes that follow one another alone
 * (each the only dependency of the next and its only dependent), adds the
 * one kernel's node with the first's dependencies and the last's
 * dependents and destroys the run's nodes; the steps go to device memory
 * the graph holds. Anything unexpected (a node that is not a kernel, one
 * with other edges) leaves that run as it is; a failing graph call, or a
 * clone the runtime will not instantiate (plan.c), leaves the whole graph
 * as captured. Off unless DLACCEL_CUDA_SEGMENTS=1: on the H100 these
 * graphs replayed slower than the ones captured (plugin.c).
 */
#include "plugins/cuda/onekern_kern.h"

#include <stdlib.h>
#include <string.h>

/* A step joins a run only if it is at most this much work. One block of
 * 256 threads walks a step's elements 256 at a time, each round waiting
 * for its loads (a thread's next loads cannot pass its stores), where a
 * launch of its own does them at once: eight rounds of a few hundred
 * cycles each are about what the node saved costs (an estimate: not yet
 * timed on a GPU). The digit CNN's loss over 10x128 is 1,280. */
#define SEG_WORK 2048

typedef struct dla__cu_seg_rec {
    dla__cu_k1_step step;
    int64_t work;
    cudaGraphNode_t node;  /* what its launch made; NULL: not known */
    cudaGraphNode_t entry; /* the capture's leaf when its member entered */
    int entry_n;           /* 0 or 1 such leaves; -1: several (it never joins a run) */
} dla__cu_seg_rec;

void dla__cu_seg_begin(dla__cu_device *d)
{
    d->seg_n = 0;
    d->seg_pending = 0;
    d->seg_entry = NULL;
    d->seg_entry_n = 0;
}

/* The capture's leaf: *n 0 or 1 (with *leaf), -1 for several or when it
 * cannot be had. */
static void capture_leaf(dla__cu_device *d, cudaGraphNode_t *leaf, int *n)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t *deps = NULL;
    size_t ndeps = 0;
    *leaf = NULL;
    *n = -1;
    if (cudaStreamGetCaptureInfo(d->stream, &st, NULL, NULL, &deps, NULL, &ndeps) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    if (st != cudaStreamCaptureStatusActive || ndeps > 1)
        return;
    *n = (int)ndeps;
    if (ndeps == 1)
        *leaf = deps[0];
}

void dla__cu_seg_enter(dla__cu_device *d)
{
    if (d->seg_off)
        return;
    cudaGraphNode_t leaf;
    int n;
    capture_leaf(d, &leaf, &n);
    /* The member before made the leaf, if it recorded a step (and
     * launched it: the leaf is then not the one it entered with). */
    if (d->seg_pending) {
        dla__cu_seg_rec *r = &d->seg[d->seg_n - 1];
        r->node = n == 1 && !(r->entry_n == 1 && r->entry == leaf) ? leaf : NULL;
        d->seg_pending = 0;
    }
    d->seg_entry = leaf;
    d->seg_entry_n = n;
}

void dla__cu_seg_note(dla__cu_device *d, const dla__cu_k1_step *step, int64_t work)
{
    if (d->seg_off || !d->capturing || !dla__cu_planning_here(d))
        return;
    if (d->seg_pending) { /* a second step from one member: neither joins a run */
        d->seg[d->seg_n - 1].node = NULL;
        d->seg_pending = 0;
        return;
    }
    if (d->seg_n == d->seg_cap) {
        const int32_t cap = d->seg_cap ? 2 * d->seg_cap : 64;
        dla__cu_seg_rec *grown = realloc(d->seg, (size_t)cap * sizeof *grown);
        if (!grown)
            return; /* this step joins no run */
        d->seg = grown;
        d->seg_cap = cap;
    }
    dla__cu_seg_rec *r = &d->seg[d->seg_n++];
    r->step = *step;
    r->work = work;
    r->node = NULL;
    r->entry = d->seg_entry;
    r->entry_n = d->seg_entry_n;
    d->seg_pending = 1;
}

/* Record i starts or continues a run: its node known, its work small. */
static int usable(const dla__cu_seg_rec *r)
{
    return r->node && r->entry_n >= 0 && r->work <= SEG_WORK;
}

/* Record i continues the run that record i - 1 is in: its member entered
 * right after the node of i - 1 was made. */
static int follows(const dla__cu_seg_rec *r)
{
    return r->entry_n == 1 && r->entry == r[-1].node;
}

/* The runs of records that become one node each: first[i], len[i] (at
 * most `most` of them, each of two or more); how many. */
static int32_t runs(const dla__cu_device *d, int32_t *first, int32_t *len, int32_t most)
{
    int32_t n = 0;
    for (int32_t i = 0; i < d->seg_n && n < most;) {
        if (!usable(&d->seg[i])) {
            i++;
            continue;
        }
        int32_t j = i + 1;
        while (j < d->seg_n && usable(&d->seg[j]) && follows(&d->seg[j]))
            j++;
        if (j - i >= 2) {
            first[n] = i;
            len[n] = j - i;
            n++;
        }
        i = j;
    }
    return n;
}

/* node's edges one way (in 1: its dependencies, else its dependents): at
 * most `most` into out, the count in *n; 0 when the graph says no. An
 * edge that carries data (a programmatic launch's, which a library may
 * capture) makes the query fail (cudaErrorLossyQuery, without an array
 * for the data): the run stays as captured. The error is taken back at
 * once: left, the next call that reads the thread's last error (the
 * replay's launch) would fail with it. */
static int edges(cudaGraphNode_t node, int in, cudaGraphNode_t *out, size_t most, size_t *n)
{
    size_t count = 0;
    cudaError_t e = in ? cudaGraphNodeGetDependencies(node, NULL, NULL, &count)
                       : cudaGraphNodeGetDependentNodes(node, NULL, NULL, &count);
    if (e == cudaSuccess) {
        *n = count;
        if (count == 0 || count > most)
            return 1;
        e = in ? cudaGraphNodeGetDependencies(node, out, NULL, &count)
               : cudaGraphNodeGetDependentNodes(node, out, NULL, &count);
    }
    if (e != cudaSuccess)
        cudaGetLastError();
    return e == cudaSuccess;
}

/* Whether the run's nodes (in the clone: c[0 .. m-1]) are kernels
 * chained alone, the first after what its member saw (entry, or
 * nothing). */
static int chained(cudaGraphNode_t *c, int32_t m, cudaGraphNode_t entry, int entry_n)
{
    for (int32_t k = 0; k < m; k++) {
        enum cudaGraphNodeType t;
        if (cudaGraphNodeGetType(c[k], &t) != cudaSuccess) {
            cudaGetLastError(); /* as edges() */
            return 0;
        }
        if (t != cudaGraphNodeTypeKernel)
            return 0;
        cudaGraphNode_t dep[1], next[1];
        size_t nd = 0, nn = 0;
        if (!edges(c[k], 1, dep, 1, &nd))
            return 0;
        if (k == 0 ? ((int)nd != entry_n || (nd == 1 && dep[0] != entry))
                   : (nd != 1 || dep[0] != c[k - 1]))
            return 0;
        if (k + 1 < m && (!edges(c[k], 0, next, 1, &nn) || nn != 1 || next[0] != c[k + 1]))
            return 0;
    }
    return 1;
}

#define MOST_RUNS 256
#define MOST_EDGES 16

/* The run (first, m) of the records as the clone's nodes c[0 .. m-1]: 1
 * when they are kernels chained alone after what the first's member saw,
 * 0 when not, -1 when a graph call failed. */
static int run_nodes(const dla__cu_device *d, cudaGraph_t clone, int32_t first, int32_t m,
                     cudaGraphNode_t *c)
{
    for (int32_t k = 0; k < m; k++)
        if (cudaGraphNodeFindInClone(&c[k], d->seg[first + k].node, clone) != cudaSuccess)
            return -1;
    cudaGraphNode_t entry = NULL;
    const dla__cu_seg_rec *r = &d->seg[first];
    if (r->entry_n == 1 && cudaGraphNodeFindInClone(&entry, r->entry, clone) != cudaSuccess)
        return -1;
    return chained(c, m, entry, r->entry_n);
}

/* The clone's nodes c[0 .. m-1] replaced by one node of the one kernel
 * over steps (device memory), with the dependency of c[0] (one, or none)
 * and the dependents of c[m-1]. 1 done, 0 left as it was, -1 a graph
 * call failed. */
static int replace_nodes(cudaGraph_t clone, cudaGraphNode_t *c, int32_t m,
                         const dla__cu_k1_step *steps)
{
    cudaGraphNode_t entry = NULL, after[MOST_EDGES], from[MOST_EDGES], node = NULL;
    size_t nentry = 0, nafter = 0;
    if (!edges(c[0], 1, &entry, 1, &nentry) || nentry > 1 ||
        !edges(c[m - 1], 0, after, MOST_EDGES, &nafter) || nafter > MOST_EDGES)
        return 0;
    if (dla__cu_k1_node(clone, nentry ? &entry : NULL, nentry, steps, m, &node) != cudaSuccess)
        return -1;
    for (size_t k = 0; k < nafter; k++)
        from[k] = node;
    if (nafter && cudaGraphAddDependencies(clone, from, after, NULL, nafter) != cudaSuccess)
        return -1;
    for (int32_t k = 0; k < m; k++)
        if (cudaGraphDestroyNode(c[k]) != cudaSuccess)
            return -1;
    return 1;
}

/* Replaces run (first, m) of the records, in the clone, by one node of
 * the one kernel over steps (device memory). 1 done, 0 left as it was
 * (its nodes are not what the records say), -1 a graph call failed. */
static int replace_run(dla__cu_device *d, cudaGraph_t clone, int32_t first, int32_t m,
                       const dla__cu_k1_step *steps)
{
    cudaGraphNode_t *c = malloc((size_t)m * sizeof *c);
    if (!c)
        return 0;
    int r = run_nodes(d, clone, first, m, c);
    if (r == 1)
        r = replace_nodes(clone, c, m, steps);
    free(c);
    return r;
}

int dla__cu_seg_apply(dla__cu_device *d, cudaGraph_t graph, cudaGraph_t *out,
                      dla__cu_mem **held)
{
    *out = NULL;
    if (d->seg_off)
        return 0;
    int32_t first[MOST_RUNS], len[MOST_RUNS];
    const int32_t nruns = runs(d, first, len, MOST_RUNS);
    if (nruns == 0)
        return 0;
    int32_t nsteps = 0;
    for (int32_t i = 0; i < nruns; i++)
        nsteps += len[i];
    /* The runs' steps, one after another, in device memory the graph
     * holds (copied on the stream: the pool's block may have been freed
     * by work still queued there; the graph runs after it). */
    const size_t bytes = (size_t)nsteps * sizeof(dla__cu_k1_step);
    dla__cu_k1_step *host = malloc(bytes);
    dla_mem m = NULL;
    if (!host || dla__cu_mem_alloc(d, bytes, &m) != DLA_OK) {
        free(host);
        return 0;
    }
    dla__cu_mem *dev = (dla__cu_mem *)m;
    dev->next = *held;
    *held = dev;
    for (int32_t i = 0, at = 0; i < nruns; i++)
        for (int32_t k = 0; k < len[i]; k++)
            host[at++] = d->seg[first[i] + k].step;
    /* From pageable memory the call may return before it has read the
     * bytes (the runtime documents no more), so the stream is waited for
     * before they are freed: once a capture. */
    cudaError_t e = cudaMemcpyAsync(dev->ptr, host, bytes, cudaMemcpyHostToDevice, d->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(d->stream);
    free(host);
    cudaGraph_t clone = NULL;
    if (e != cudaSuccess || cudaGraphClone(&clone, graph) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    int done = 0, merged = 0;
    for (int32_t i = 0, at = 0; i < nruns; at += len[i], i++) {
        const int r = replace_run(d, clone, first[i], len[i],
                                  (const dla__cu_k1_step *)dev->ptr + at);
        if (r < 0) {
            cudaGetLastError();
            cudaGraphDestroy(clone);
            dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: a run of small launches could not be "
                                             "made one node; the graph stays as captured",
                              d->index);
            return 0;
        }
        done += r;
        merged += r ? len[i] : 0;
    }
    if (!done) {
        cudaGraphDestroy(clone);
        return 0;
    }
    *out = clone;
    dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d: %d runs of small launches (%d launches) made one "
                                     "kernel node each",
                      d->index, done, merged);
    return merged - done;
}

void dla__cu_seg_release(dla__cu_device *d)
{
    free(d->seg);
    d->seg = NULL;
    d->seg_n = d->seg_cap = 0;
}

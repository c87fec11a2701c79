/*
 * cuda_segment_emu.cpp - the cuda plugin's runs of small launches as one
 * kernel node (plugins/cuda/segment.c) on the CPU (part of
 * tests/cuda_fused_emu, whose main calls emu_segment_cases).
 *
 * segment.c's own code runs against a small model of the CUDA graph API:
 * a capture is a graph whose leaf each launch follows, and clone, find in
 * clone, edges, node types, adding a kernel node and edges and destroying
 * nodes act on it as the runtime documents. A case plays members as
 * plan.c's capture calls them (dla__cu_enter, a step recorded, its
 * launch) and checks the graph dla__cu_seg_apply leaves:
 *   - runs of two and more small steps, each launch the only dependency of
 *     the next, are one node of the one kernel over those steps (their
 *     descriptors, in order, in the memory the graph holds), between the
 *     first's dependency and the last's dependents; a step of more work,
 *     a launch of another kind (no step), a member that launched two
 *     nodes, a node with another dependent, stay as they were;
 *   - the step recorded before or after its member's launch alike;
 *   - a graph call that fails leaves the graph as captured, and
 *     seg_off (the default; DLACCEL_CUDA_SEGMENTS=1 turns it on) changes nothing;
 *   - an edge that carries data fails the queries of its nodes
 *     (cudaErrorLossyQuery): their run stays as captured, and the error
 *     is not left for the next call to read.
 * That the one kernel then gives each step's bits is
 * tests/cuda_onekern_emu.cpp's; on a GPU, test_accel's replays against
 * eager.
 */
#include "plugins/cuda/onekern_kern.h"

#include "tests/cuda_fused_emu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

/* ------------------------------------------------- the model of a graph */

struct CUgraphNode_st {
    CUgraph_st *graph;
    int type;                   /* cudaGraphNodeType */
    int tag;                    /* the launch it stands for; -1: the one kernel */
    const dla__cu_k1_step *steps; /* the one kernel's */
    int32_t nsteps;
    CUgraphNode_st *orig;       /* in a clone: the node it copies */
    int lossy;                  /* the edges to it carry data (a programmatic launch's) */
    std::vector<CUgraphNode_st *> deps, dependents;
};

struct CUgraph_st {
    std::vector<CUgraphNode_st *> nodes;
};

static CUgraph_st *g_capture;     /* the capture in progress */
static CUgraphNode_st *g_leaf;    /* its leaf (NULL: none yet) */
static int g_fail_add_deps;       /* cudaGraphAddDependencies fails */

static CUgraphNode_st *add_node(CUgraph_st *g, int type, int tag, CUgraphNode_st *const *deps,
                                size_t ndeps)
{
    CUgraphNode_st *n = new CUgraphNode_st();
    n->graph = g;
    n->type = type;
    n->tag = tag;
    n->steps = NULL;
    n->nsteps = 0;
    n->orig = NULL;
    for (size_t i = 0; i < ndeps; i++) {
        n->deps.push_back(deps[i]);
        deps[i]->dependents.push_back(n);
    }
    g->nodes.push_back(n);
    return n;
}

/* A launch during the capture: a node after the leaf. */
static CUgraphNode_st *launch(int tag, int type = cudaGraphNodeTypeKernel)
{
    CUgraphNode_st *n = add_node(g_capture, type, tag, g_leaf ? &g_leaf : NULL, g_leaf ? 1 : 0);
    g_leaf = n;
    return n;
}

static void free_graph(CUgraph_st *g)
{
    for (CUgraphNode_st *n : g->nodes)
        delete n;
    delete g;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps)
{
    (void)stream, (void)id, (void)graph, (void)edges;
    *status = g_capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    if (deps)
        *deps = g_leaf ? (const cudaGraphNode_t *)&g_leaf : NULL;
    if (ndeps)
        *ndeps = g_leaf ? 1 : 0;
    return cudaSuccess;
}

cudaError_t cudaGraphClone(cudaGraph_t *out, cudaGraph_t g)
{
    CUgraph_st *c = new CUgraph_st();
    for (CUgraphNode_st *n : g->nodes) {
        CUgraphNode_st *m = add_node(c, n->type, n->tag, NULL, 0);
        m->steps = n->steps;
        m->nsteps = n->nsteps;
        m->orig = n;
        m->lossy = n->lossy;
    }
    for (size_t i = 0; i < g->nodes.size(); i++)
        for (CUgraphNode_st *d : g->nodes[i]->deps) {
            const size_t j = (size_t)(std::find(g->nodes.begin(), g->nodes.end(), d) - g->nodes.begin());
            c->nodes[i]->deps.push_back(c->nodes[j]);
            c->nodes[j]->dependents.push_back(c->nodes[i]);
        }
    *out = c;
    return cudaSuccess;
}

cudaError_t cudaGraphNodeFindInClone(cudaGraphNode_t *out, cudaGraphNode_t orig, cudaGraph_t clone)
{
    for (CUgraphNode_st *n : clone->nodes)
        if (n->orig == orig) {
            *out = n;
            return cudaSuccess;
        }
    return cudaErrorInvalidValue;
}

static cudaError_t edges_of(const std::vector<CUgraphNode_st *> &v, cudaGraphNode_t *out,
                            size_t *n)
{
    if (out) {
        if (*n < v.size())
            return cudaErrorInvalidValue;
        for (size_t i = 0; i < v.size(); i++)
            out[i] = v[i];
    }
    *n = v.size();
    return cudaSuccess;
}

/* "If an edge has non-zero (non-default) edge data and edgeData is NULL,
 * this API will return cudaErrorLossyQuery" (cuda_runtime_api.h); a
 * failed call is the thread's last error until it is read. */
static cudaError_t lossy_query(void)
{
    emu_last_error = cudaErrorLossyQuery;
    return cudaErrorLossyQuery;
}

cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *out,
                                         cudaGraphEdgeData *edges, size_t *n)
{
    if (node->lossy && !edges)
        return lossy_query();
    return edges_of(node->deps, out, n);
}

cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *out,
                                           cudaGraphEdgeData *edges, size_t *n)
{
    for (CUgraphNode_st *d : node->dependents)
        if (d->lossy && !edges)
            return lossy_query();
    return edges_of(node->dependents, out, n);
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *t)
{
    *t = (enum cudaGraphNodeType)node->type;
    return cudaSuccess;
}

cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from,
                                     const cudaGraphNode_t *to, const cudaGraphEdgeData *edges,
                                     size_t n)
{
    (void)g, (void)edges;
    if (g_fail_add_deps)
        return cudaErrorInvalidValue;
    for (size_t i = 0; i < n; i++) {
        to[i]->deps.push_back(from[i]);
        from[i]->dependents.push_back(to[i]);
    }
    return cudaSuccess;
}

cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node)
{
    CUgraph_st *g = node->graph;
    for (CUgraphNode_st *d : node->deps)
        d->dependents.erase(std::find(d->dependents.begin(), d->dependents.end(), node));
    for (CUgraphNode_st *d : node->dependents)
        d->deps.erase(std::find(d->deps.begin(), d->deps.end(), node));
    g->nodes.erase(std::find(g->nodes.begin(), g->nodes.end(), node));
    delete node;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    free_graph(g);
    return cudaSuccess;
}

cudaError_t dla__cu_k1_node(cudaGraph_t graph, const cudaGraphNode_t *deps, size_t ndeps,
                            const dla__cu_k1_step *steps, int32_t n, cudaGraphNode_t *node)
{
    *node = add_node(graph, cudaGraphNodeTypeKernel, -1, deps, ndeps);
    (*node)->steps = steps;
    (*node)->nsteps = n;
    return cudaSuccess;
}

/* ------------------------------------------------------------ the cases */

/* A member as plan.c's capture calls it: entered, then its step (tag
 * and work; work < 0: it records none) recorded before or after its
 * launch, extra more nodes launched after. */
static void member(dla__cu_device *d, int tag, int64_t work, int note_first, int extra = 0)
{
    dla__cu_seg_enter(d);
    dla__cu_k1_step st;
    memset(&st, 0, sizeof st);
    st.kind = DLA__CU_K1_FUSED;
    st.f64 = tag; /* a mark to find it by */
    if (work >= 0 && note_first)
        dla__cu_seg_note(d, &st, work);
    for (int k = 0; k < extra; k++)
        launch(1000 + tag);
    launch(tag);
    if (work >= 0 && !note_first)
        dla__cu_seg_note(d, &st, work);
}

/* The graph as a chain from its root: node tags in order, the one
 * kernel as [tags of its steps]; "fork" where a node has other than one
 * dependency or dependent. */
static std::string chain_of(CUgraph_st *g)
{
    std::string s;
    CUgraphNode_st *n = NULL;
    for (CUgraphNode_st *m : g->nodes)
        if (m->deps.empty())
            n = n ? NULL : m;
    while (n) {
        char b[64];
        if (n->tag < 0) {
            s += "[";
            for (int32_t k = 0; k < n->nsteps; k++) {
                snprintf(b, sizeof b, "%s%d", k ? " " : "", n->steps[k].f64);
                s += b;
            }
            s += "]";
        } else {
            snprintf(b, sizeof b, "%d", n->tag);
            s += b;
        }
        if (n->dependents.size() > 1)
            return s + " fork";
        n = n->dependents.empty() ? NULL : n->dependents[0];
        if (n && n->deps.size() != 1)
            return s + " join";
        if (n)
            s += " ";
    }
    return s;
}

typedef void (*result_fn)(int ok, const char *fmt, ...);

/* One capture played, applied, and the chain compared with want.
 * fail: a graph call fails; off: seg_off; fork: an extra dependent on
 * the node of tag 5; lossy: the edge into the node of tag 14 carries
 * data, so the queries of 13 and 14 fail (and that error must not be
 * left for the replay's launch to read). */
static void one(result_fn result, const char *name, int note_first, int fail, int off, int fork,
                const char *want, int lossy = 0)
{
    dla__cu_device d;
    memset(&d, 0, sizeof d);
    d.seg_off = off;
    d.capturing = 1;
    dla__cu_set_planning_here(&d);
    g_capture = new CUgraph_st();
    g_leaf = NULL;
    dla__cu_seg_begin(&d);
    member(&d, 1, -1, note_first);        /* a convolution: no step */
    member(&d, 2, 100, note_first);
    member(&d, 3, 20, note_first);
    member(&d, 4, 10000, note_first);     /* too much work */
    member(&d, 5, 1280, note_first);
    member(&d, 6, 2048, note_first);
    member(&d, 7, 1, note_first);
    member(&d, 8, -1, note_first);        /* cuBLAS */
    member(&d, 9, 20, note_first);
    member(&d, 10, 20, note_first, 1);    /* two nodes: it stays */
    member(&d, 11, 20, note_first);
    member(&d, 12, -1, note_first);
    member(&d, 13, 20, note_first);
    member(&d, 14, 20, note_first);       /* the last member */
    dla__cu_seg_enter(&d);                /* as plan.c before the capture ends */
    if (fork)
        for (CUgraphNode_st *n : g_capture->nodes)
            if (n->tag == 5) {
                CUgraphNode_st *side = add_node(g_capture, cudaGraphNodeTypeKernel, 99, &n, 1);
                (void)side;
            }
    if (lossy)
        for (CUgraphNode_st *n : g_capture->nodes)
            n->lossy = n->tag == 14;
    cudaGraph_t captured = g_capture, merged = NULL;
    g_capture = NULL;
    emu_last_error = cudaSuccess;
    dla__cu_mem *held = NULL;
    g_fail_add_deps = fail;
    emu_alloc_allowed = 1;
    const int fewer = dla__cu_seg_apply(&d, captured, &merged, &held);
    emu_alloc_allowed = 0;
    g_fail_add_deps = 0;
    const int left_error = cudaGetLastError() != cudaSuccess;
    if (left_error)
        printf("# the graph calls left an error for the next call to read\n");
    /* The captured graph is left whole; the copy is what runs. */
    const std::string whole = chain_of(captured);
    cudaGraph_t graph = merged ? merged : captured;
    const std::string got = fork ? "" : chain_of(graph);
    int ok = fork ? 1 : got == want;
    if (fork) {
        /* 5 keeps its side node, and the run 5 6 7 stays launches; the
         * other runs are one node each. */
        int side = 0, kept = 0, k1 = 0;
        for (CUgraphNode_st *n : graph->nodes) {
            side += n->tag == 99 && n->deps.size() == 1 && n->deps[0]->tag == 5;
            kept += n->tag >= 5 && n->tag <= 7;
            k1 += n->tag < 0;
        }
        ok = side == 1 && kept == 3 && k1 == 2;
    }
    if (!fork && !ok)
        printf("# got  %s\n# want %s\n", got.c_str(), want);
    const int same = merged == NULL;
    ok = ok && (fork || whole == "1 2 3 4 5 6 7 8 9 1010 10 11 12 13 14");
    result(ok && !left_error && (fail || off ? same && fewer == 0 : !same),
           "segments, %s: %s (%d nodes fewer)", name,
           fork ? "5 6 7 stay launches, 5 keeps its other dependent" : want,
           fewer);
    free_graph(captured);
    if (merged)
        free_graph(merged);
    while (held) {
        dla__cu_mem *next = held->next;
        dla__cu_mem_free(&d, (dla_mem)held);
        held = next;
    }
    dla__cu_seg_release(&d);
    dla__cu_set_planning_here(NULL);
}

void emu_segment_cases(result_fn result)
{
    const char *merged = "1 [2 3] 4 [5 6 7] 8 9 1010 10 11 12 [13 14]";
    const char *as_captured = "1 2 3 4 5 6 7 8 9 1010 10 11 12 13 14";
    one(result, "steps recorded before their launch", 1, 0, 0, 0, merged);
    one(result, "steps recorded after their launch", 0, 0, 0, 0, merged);
    one(result, "a graph call fails", 1, 1, 0, 0, as_captured);
    one(result, "seg_off (DLACCEL_CUDA_SEGMENTS unset)", 1, 0, 1, 0, as_captured);
    one(result, "a node with another dependent", 1, 0, 0, 1, "");
    one(result, "an edge that carries data", 1, 0, 0, 0,
        "1 [2 3] 4 [5 6 7] 8 9 1010 10 11 12 13 14", 1);
}

/*
 * conv_engine.c - one convolution through cuDNN's graph API (see
 * conv_engine.h): tensor and convolution descriptors, the operation and
 * its graph, the heuristics' engine configurations, an execution plan per
 * configuration, each timed on the call's own buffers.
 *
 * Every backend call's status is checked; the first failure ends the
 * attempt quietly (the legacy algorithm then runs), with the reason at
 * DLACCEL_LOG=debug.
 */
#include "plugins/cuda/conv_engine.h"

#include "plugins/cuda/cu.h"

#include <stdio.h>
#include <string.h>

/* The UIDs of the variant pack: the three tensors, whichever is written. */
enum { UID_X = 1, UID_W = 2, UID_Y = 3 };

/* The handle attributes are marked deprecated in cuDNN 9.19 (a device
 * property descriptor may stand instead), yet are what every 9.x takes. */
#define ATTR_GRAPH_HANDLE ((cudnnBackendAttributeName_t)800)
#define ATTR_PLAN_HANDLE ((cudnnBackendAttributeName_t)400)

/* Engines tried at most, from the heuristics' list (best first). */
#define MAX_CONFIGS 12

typedef struct builder {
    const dla__cu_dnn *L;
    cudnnStatus_t st;
    const char *where;
} builder;

static cudnnBackendDescriptor_t make(builder *b, cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;
    if (b->st == CUDNN_STATUS_SUCCESS && (b->st = b->L->be_create(type, &d)) != CUDNN_STATUS_SUCCESS)
        b->where = "create", d = NULL;
    return d;
}

static void set(builder *b, cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                cudnnBackendAttributeType_t t, int64_t n, const void *v, const char *where)
{
    if (b->st == CUDNN_STATUS_SUCCESS && (b->st = b->L->be_set(d, a, t, n, v)) != CUDNN_STATUS_SUCCESS)
        b->where = where;
}

static void finalize(builder *b, cudnnBackendDescriptor_t d, const char *where)
{
    if (b->st == CUDNN_STATUS_SUCCESS && (b->st = b->L->be_finalize(d)) != CUDNN_STATUS_SUCCESS)
        b->where = where;
}

static void destroy(const dla__cu_dnn *L, cudnnBackendDescriptor_t d)
{
    if (d)
        L->be_destroy(d);
}

static cudnnBackendDescriptor_t tensor(builder *b, int64_t uid, cudnnDataType_t t, int nd,
                                       const int64_t *dims, const int64_t *strides, int64_t align)
{
    cudnnBackendDescriptor_t d = make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(b, d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t, "tensor dtype");
    set(b, d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims, "tensor dims");
    set(b, d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides, "tensor strides");
    set(b, d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor uid");
    set(b, d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, "tensor alignment");
    finalize(b, d, "tensor");
    return d;
}

/* The largest power of two (up to 16) dividing every address. */
static int64_t alignment_of(const char *x, const char *w, const char *y)
{
    uintptr_t all = (uintptr_t)x | (uintptr_t)w | (uintptr_t)y;
    int64_t a = 16;
    while (a > 4 && (all & (uintptr_t)(a - 1)))
        a /= 2;
    return a;
}

int dla__cu_conv_engine_fits(const dla__cu_conv_plan *pl, const char *x, const char *w,
                             const char *y)
{
    uintptr_t all = (uintptr_t)x | (uintptr_t)w | (uintptr_t)y;
    return (all & (uintptr_t)(pl->align - 1)) == 0;
}

/* The operation graph of the convolution; NULL on a failure (b->st). */
static cudnnBackendDescriptor_t graph_of(builder *b, cudnnHandle_t h, int dir, dla_dtype dtype,
                                         const dla__cu_conv_shape *g, int64_t align,
                                         cudnnBackendDescriptor_t parts[5])
{
    const dla__cu_dnn *L = b->L;
    const cudnnDataType_t t = dtype == DLA_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    parts[0] = tensor(b, UID_X, t, g->nd, g->x, g->xs, align);
    parts[1] = tensor(b, UID_W, t, g->nd, g->w, g->ws, align);
    parts[2] = tensor(b, UID_Y, t, g->nd, g->y, g->ys, align);
    cudnnBackendDescriptor_t conv = parts[3] = make(b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    int64_t ns = g->ns;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    set(b, conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &ns, "conv dims");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t, "conv type");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
        "conv mode");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, ns, g->pad, "conv pad");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, ns, g->pad, "conv pad");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, ns, g->dil, "conv dilation");
    set(b, conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, ns, g->stride,
        "conv stride");
    finalize(b, conv, "convolution");

    static const cudnnBackendDescriptorType_t kinds[3] = {
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    /* alpha, beta, conv, then the x, w and y roles of each direction. */
    static const cudnnBackendAttributeName_t attrs[3][6] = {
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY}};
    cudnnBackendDescriptor_t op = parts[4] = make(b, kinds[dir]);
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const int dbl = dtype == DLA_F64;
    const cudnnBackendAttributeType_t st = dbl ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
    set(b, op, attrs[dir][0], st, 1, dbl ? (const void *)&one_d : (const void *)&one_f, "alpha");
    set(b, op, attrs[dir][1], st, 1, dbl ? (const void *)&zero_d : (const void *)&zero_f, "beta");
    set(b, op, attrs[dir][2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv, "op conv");
    set(b, op, attrs[dir][3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &parts[0], "op x");
    set(b, op, attrs[dir][4], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &parts[1], "op w");
    set(b, op, attrs[dir][5], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &parts[2], "op y");
    finalize(b, op, "operation");

    cudnnBackendDescriptor_t graph = make(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(b, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op, "graph ops");
    set(b, graph, ATTR_GRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "graph handle");
    finalize(b, graph, "operation graph");
    if (b->st != CUDNN_STATUS_SUCCESS) {
        destroy(L, graph);
        return NULL;
    }
    return graph;
}

/* Whether an engine configuration keeps the legacy path's arithmetic:
 * no tensor cores (unless tf32), no down-converted inputs or reduced
 * precision, deterministic. Its global index in *index. */
static int allowed(const dla__cu_dnn *L, cudnnBackendDescriptor_t cfg, int tf32, int64_t *index)
{
    cudnnBackendDescriptor_t engine = NULL;
    int64_t n = 0;
    *index = -1;
    if (L->be_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) != CUDNN_STATUS_SUCCESS)
        return 0;
    int ok = L->be_get(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                       &engine) == CUDNN_STATUS_SUCCESS;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t nn = 0;
    if (ok)
        ok = L->be_get(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &nn, notes) == CUDNN_STATUS_SUCCESS;
    if (ok)
        L->be_get(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, index);
    for (int64_t i = 0; ok && i < nn; i++)
        switch (notes[i]) {
        case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: ok = tf32; break;
        case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: ok = 0; break;
        default: break;
        }
    L->be_destroy(engine);
    return ok;
}

static cudnnBackendDescriptor_t variant_pack(const dla__cu_dnn *L, char *x, char *w, char *y,
                                             void *ws)
{
    builder b = {.L = L};
    void *ptrs[3] = {x, w, y};
    const int64_t uids[3] = {UID_X, UID_W, UID_Y};
    cudnnBackendDescriptor_t vp = make(&b, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    set(&b, vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, "pointers");
    set(&b, vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, "uids");
    set(&b, vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws, "workspace");
    finalize(&b, vp, "variant pack");
    if (b.st != CUDNN_STATUS_SUCCESS) {
        destroy(L, vp);
        return NULL;
    }
    return vp;
}

cudnnStatus_t dla__cu_conv_engine_run(const dla__cu_dnn *L, cudnnHandle_t h,
                                      const dla__cu_conv_plan *pl, char *x, char *w, char *y,
                                      void *ws)
{
    cudnnBackendDescriptor_t vp = variant_pack(L, x, w, y, ws);
    if (!vp)
        return CUDNN_STATUS_INTERNAL_ERROR;
    cudnnStatus_t st = L->be_execute(h, pl->plan, vp);
    L->be_destroy(vp);
    return st;
}

/* The least of three timed runs of plan, in ms; negative on a failure. */
static float time_plan(const dla__cu_dnn *L, cudnnHandle_t h, cudaStream_t stream,
                       const dla__cu_conv_plan *pl, char *x, char *w, char *y, void *ws)
{
    cudaEvent_t a, b;
    if (cudaEventCreate(&a) != cudaSuccess)
        return -1;
    if (cudaEventCreate(&b) != cudaSuccess) {
        cudaEventDestroy(a);
        return -1;
    }
    float best = -1;
    if (dla__cu_conv_engine_run(L, h, pl, x, w, y, ws) == CUDNN_STATUS_SUCCESS)
        for (int i = 0; i < 3; i++) {
            float ms = -1;
            cudaEventRecord(a, stream);
            cudnnStatus_t st = dla__cu_conv_engine_run(L, h, pl, x, w, y, ws);
            cudaEventRecord(b, stream);
            if (st != CUDNN_STATUS_SUCCESS || cudaEventSynchronize(b) != cudaSuccess ||
                cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
                best = -1;
                break;
            }
            if (best < 0 || ms < best)
                best = ms;
        }
    cudaGetLastError();
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

void dla__cu_conv_engine_find(const dla__cu_dnn *L, cudnnHandle_t h, cudaStream_t stream, int dir,
                              dla_dtype dtype, const dla__cu_conv_shape *g, int tf32, char *x,
                              char *w, char *y, void *ws, size_t ws_bytes, float beat_ms,
                              int device, dla__cu_conv_plan **best, float *best_ms)
{
    *best = NULL;
    *best_ms = -1;
    if (!L->be_create)
        return;
    builder b = {.L = L};
    cudnnBackendDescriptor_t parts[5] = {0};
    const int64_t align = alignment_of(x, w, y);
    cudnnBackendDescriptor_t graph = graph_of(&b, h, dir, dtype, g, align, parts);
    cudnnBackendDescriptor_t heur = NULL, cfg[MAX_CONFIGS] = {0};
    int64_t ncfg = 0;
    if (graph) {
        heur = make(&b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
        set(&b, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &graph, "heuristics graph");
        set(&b, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
        finalize(&b, heur, "heuristics");
        for (int i = 0; i < MAX_CONFIGS && b.st == CUDNN_STATUS_SUCCESS; i++)
            cfg[i] = make(&b, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        if (b.st == CUDNN_STATUS_SUCCESS &&
            (b.st = L->be_get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                              MAX_CONFIGS, &ncfg, cfg)) != CUDNN_STATUS_SUCCESS)
            b.where = "heuristics results";
    }
    if (b.st != CUDNN_STATUS_SUCCESS)
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d conv (%d): the graph API failed at %s: %s",
                          device, dir, b.where ? b.where : "?", L->error_string(b.st));
    for (int64_t i = 0; i < ncfg && i < MAX_CONFIGS && b.st == CUDNN_STATUS_SUCCESS; i++) {
        int64_t index = -1;
        if (!allowed(L, cfg[i], tf32, &index))
            continue;
        builder pb = {.L = L};
        dla__cu_conv_plan pl = {.align = align, .engine = index, .owned = {0}};
        pl.plan = make(&pb, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        set(&pb, pl.plan, ATTR_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h, "plan handle");
        set(&pb, pl.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &cfg[i], "plan config");
        finalize(&pb, pl.plan, "plan");
        int64_t wsz = 0, n = 0;
        if (pb.st == CUDNN_STATUS_SUCCESS &&
            L->be_get(pl.plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                      &wsz) != CUDNN_STATUS_SUCCESS)
            pb.st = CUDNN_STATUS_INTERNAL_ERROR;
        float ms = -1;
        if (pb.st == CUDNN_STATUS_SUCCESS && wsz >= 0 && (size_t)wsz <= ws_bytes) {
            pl.workspace = (size_t)wsz;
            ms = time_plan(L, h, stream, &pl, x, w, y, ws);
        }
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d conv (%d): graph API engine %lld: %s%s, %.4f ms, "
                          "workspace %lld%s",
                          device, dir, (long long)index,
                          pb.st == CUDNN_STATUS_SUCCESS ? "ok" : "no plan: ",
                          pb.st == CUDNN_STATUS_SUCCESS ? "" : L->error_string(pb.st), (double)ms,
                          (long long)wsz, ms >= 0 && (*best_ms < 0 || ms < *best_ms) ? " (best so far)" : "");
        if (ms >= 0 && (*best_ms < 0 || ms < *best_ms)) {
            if (*best) {
                dla__cu_conv_engine_free(L, *best);
                *best = NULL;
            }
            dla__cu_conv_plan *keep = dla__cu_host->alloc(sizeof *keep, 0);
            if (keep) {
                *keep = pl;
                *best = keep;
                *best_ms = ms;
                continue;
            }
        }
        destroy(L, pl.plan);
    }
    if (*best && beat_ms >= 0 && *best_ms >= beat_ms) {
        dla__cu_conv_engine_free(L, *best);
        *best = NULL;
    }
    /* Newest first in owned: freed in that order. */
    cudnnBackendDescriptor_t all[5 + 2 + MAX_CONFIGS];
    int nall = 0;
    for (int i = MAX_CONFIGS - 1; i >= 0; i--)
        all[nall++] = cfg[i];
    all[nall++] = heur;
    all[nall++] = graph;
    for (int i = 4; i >= 0; i--)
        all[nall++] = parts[i];
    if (*best) {
        memcpy((*best)->owned, all, sizeof all);
    } else {
        for (int i = 0; i < nall; i++)
            destroy(L, all[i]);
    }
}

void dla__cu_conv_engine_free(const dla__cu_dnn *L, dla__cu_conv_plan *pl)
{
    if (!pl)
        return;
    destroy(L, pl->plan);
    for (size_t i = 0; i < sizeof pl->owned / sizeof pl->owned[0]; i++)
        destroy(L, pl->owned[i]);
    dla__cu_host->free(pl);
}

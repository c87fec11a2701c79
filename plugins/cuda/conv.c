/*
 * conv.c - convolution forward, backward data and backward filter on CUDA
 * devices: cuDNN where it computes exactly the ABI's convolution, the
 * plugin's own direct kernels (conv_kernels.cu) everywhere else.
 *
 * Layouts: MATLAB's are column-major, x = in[0] x .. x in[n-1] x C x B
 * with in[0] fastest, so in cuDNN's row-major terms x is [B, C, in[n-1],
 * .., in[0]], y [B, F, out[n-1], .., out[0]] and w (fs.. x C/G x F/G x G)
 * the NCHW filter [F, C/G, fs[n-1], .., fs[0]] (output channel f in group
 * f / (F/G), as cuDNN's grouped convolution). A 1-d convolution gets a
 * spatial dim of 1 (cuDNN wants 4-d at least).
 *
 * cuDNN pads symmetrically: it runs only where, with pad = pad_begin (>=
 * 0), its output size is the call's out_size; each output then reads the
 * same inputs as the ABI's formula, whatever pad_end is, so the result is
 * the same. Otherwise (asymmetric padding that changes the size, negative
 * padding, empty sizes, tensors past cuDNN's 2^31 elements, cuDNN missing
 * or without an algorithm) the own kernels run, which take any strides.
 * cuDNN takes dense views only: a non-dense one is declined with
 * DLA_ERR_UNSUPPORTED before anything is written, and the host calls again
 * with dense copies.
 *
 * The algorithm is chosen once per shape by measurement
 * (cudnnFind*AlgorithmEx on the call's buffers, workspace up to 256 MiB
 * from the pool), deterministic algorithms first, and kept in d->conv.
 * cudnnFind synchronizes, so while a CUDA graph capture runs a new shape
 * takes cuDNN's heuristics instead (not cached). float32 is exact
 * (CUDNN_FMA_MATH) unless d->tf32. The bias of a forward is added by a
 * small kernel of ours after cuDNN's convolution.
 */
#include "plugins/cuda/conv_kern.h"
#include "plugins/cuda/conv_engine.h"
#include "plugins/cuda/libs.h"

#include <dlaccel/plugin_kit_geom.h>
#include <string.h>

#define FIND_WORKSPACE ((size_t)256 << 20)

enum { FWD = DLA_KIT_CONV_FORWARD, BWD_DATA = DLA_KIT_CONV_BACKWARD_DATA,
       BWD_FILTER = DLA_KIT_CONV_BACKWARD_FILTER };

/* The key: direction, dtype and the whole geometry (views are dense when
 * cuDNN runs, so their strides follow from it). */
#define KEYN 30

struct dla__cu_conv_entry {
    struct dla__cu_conv_entry *next;
    int64_t key[KEYN];
    int own;               /* cuDNN has nothing for this shape */
    int algo;              /* cudnnConvolution*Algo_t */
    cudnnMathType_t math;  /* the math type to run it with */
    size_t workspace;      /* bytes it needs */
    /* conv_engine.c: a graph API engine that beat the algorithm above,
     * run instead where the addresses are aligned as it was made for. */
    dla__cu_conv_plan *engine;
};

static void make_key(int64_t *key, int dir, dla_dtype dt, const dla_kit_conv *p)
{
    int j = 0;
    key[j++] = dir, key[j++] = dt, key[j++] = p->nspatial;
    key[j++] = p->batch, key[j++] = p->C, key[j++] = p->F, key[j++] = p->G;
    for (int i = 0; i < 3; i++) {
        key[j++] = p->in[i], key[j++] = p->out[i], key[j++] = p->fs[i];
        key[j++] = p->st[i], key[j++] = p->dl[i], key[j++] = p->pb[i];
    }
    while (j < KEYN)
        key[j++] = 0;
}

/* The cached choice for key (d->lock held), or NULL. */
static struct dla__cu_conv_entry *lookup(dla__cu_device *d, const int64_t *key)
{
    for (struct dla__cu_conv_entry *e = d->conv; e; e = e->next)
        if (!memcmp(e->key, key, sizeof e->key))
            return e;
    return NULL;
}

/* Keeps choice; 0 when it was not kept (out of memory, or another
 * thread's came first): the caller then owns choice->engine. */
static int remember(dla__cu_device *d, const struct dla__cu_conv_entry *choice)
{
    struct dla__cu_conv_entry *e = dla__cu_host->alloc(sizeof *e, 0);
    if (!e)
        return 0; /* measured again next time */
    *e = *choice;
    pthread_mutex_lock(&d->lock);
    if (lookup(d, e->key)) {
        pthread_mutex_unlock(&d->lock);
        dla__cu_host->free(e);
        return 0;
    }
    e->next = d->conv;
    d->conv = e;
    pthread_mutex_unlock(&d->lock);
    return 1;
}

static void engine_free(dla__cu_conv_plan *pl)
{
    const char *why = NULL;
    const dla__cu_dnn *L = pl ? dla__cu_dnn_lib(&why) : NULL;
    if (L)
        dla__cu_conv_engine_free(L, pl);
}

void dla__cu_conv_release(dla__cu_device *d)
{
    struct dla__cu_conv_entry *e = d->conv;
    while (e) {
        struct dla__cu_conv_entry *next = e->next;
        engine_free(e->engine);
        dla__cu_host->free(e);
        e = next;
    }
    d->conv = NULL;
}

/* Dense as the ABI says (strides[0] == 1, each next the product), but
 * for dims of one element, whose stride nothing reads: cuDNN is given
 * packed strides of its own. */
static int dense(const dla_view *v)
{
    int64_t want = 1;
    for (int i = 0; i < v->ndims; i++) {
        if (v->dims[i] != 1 && v->strides[i] != want)
            return 0;
        want *= v->dims[i];
    }
    return 1;
}

/* Address of a view's first element; NULL for an empty one (nothing
 * reads it). */
static char *base_of(const dla_view *v)
{
    if (!v->mem || dla_kit_numel(v) == 0)
        return NULL;
    return dla__cu_ptr(v->mem) + v->offset * (int64_t)dla_kit_dtype_size(v->dtype);
}

static dla__cu_conv_geom geom_of(const dla_kit_conv *p)
{
    dla__cu_conv_geom g;
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 3; i++) {
        g.in[i] = p->in[i], g.out[i] = p->out[i], g.fs[i] = p->fs[i];
        g.st[i] = p->st[i], g.dl[i] = p->dl[i], g.pb[i] = p->pb[i];
        g.xs[i] = p->xs[i], g.ws[i] = p->ws[i], g.ys[i] = p->ys[i];
    }
    g.batch = p->batch, g.C = p->C, g.F = p->F, g.G = p->G, g.Cg = p->Cg, g.Fg = p->Fg;
    g.ntaps = p->ntaps, g.in_px = p->in_px, g.out_px = p->out_px;
    g.xc = p->xc, g.xb = p->xb;
    g.wc = p->wc, g.wf = p->wf, g.wg = p->wg;
    g.yf = p->yf, g.yb = p->yb;
    g.bs = p->bs;
    return g;
}

/* The own kernels: every geometry, any strides. */
static dla_status run_own(dla__cu_device *d, const dla_conv_args *a, int dir,
                          const dla_kit_conv *p)
{
    const dla__cu_conv_geom g = geom_of(p);
    const int f64 = a->dtype == DLA_F64;
    char *x = base_of(&a->x), *w = base_of(&a->w), *y = base_of(&a->y);
    if (dir == FWD) {
        const char *b = p->has_bias ? base_of(&a->bias) : NULL;
        dla__cu_conv_fwd_launch(d->stream, dla__cu_blocks(d, p->out_px * p->F * p->batch), f64,
                                g, y, x, w, b);
    } else if (dir == BWD_DATA) {
        dla__cu_conv_bwd_data_launch(d->stream, dla__cu_blocks(d, p->in_px * p->C * p->batch),
                                     f64, g, x, y, w);
    } else {
        const int64_t nw = p->ntaps * p->Cg * p->Fg * p->G;
        const int64_t cap = (int64_t)(d->sms > 0 ? d->sms : 16) * 16;
        dla__cu_conv_bwd_filter_launch(d->stream, (unsigned)(nw < cap ? nw : cap), f64, g, w, x,
                                       y);
    }
    return dla__cu_launched(dla_kit_conv_name((dla_kit_conv_dir)dir));
}

/* Whether cuDNN computes this convolution exactly as the ABI does. */
static int cudnn_fits(const dla_kit_conv *p)
{
    if (p->batch < 1)
        return 0;
    const int n = (int)p->nspatial;
    for (int i = 0; i < n; i++) {
        if (p->pb[i] < 0 || p->in[i] < 1 || p->out[i] < 1)
            return 0;
        const int64_t num = p->in[i] + 2 * p->pb[i] - p->dl[i] * (p->fs[i] - 1) - 1;
        if (num < 0 || num / p->st[i] + 1 != p->out[i])
            return 0;
    }
    const int64_t lim = INT32_MAX;
    const int64_t nx = p->in_px * p->C, ny = p->out_px * p->F, nw = p->ntaps * p->Cg * p->F;
    return nx <= lim / p->batch && ny <= lim / p->batch && nw <= lim;
}

/* cuDNN's descriptors of one call. */
typedef struct descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    dla_dtype dtype;
} descs;

static void descs_free(const dla__cu_dnn *L, descs *s)
{
    if (s->x)
        L->destroy_tensor(s->x);
    if (s->y)
        L->destroy_tensor(s->y);
    if (s->w)
        L->destroy_filter(s->w);
    if (s->conv)
        L->destroy_conv(s->conv);
    memset(s, 0, sizeof *s);
}

/* Row-major dims of a tensor [n0, n1, spatial reversed] (a spatial 1
 * first for 1-d) and their packed strides; returns the rank. */
static int tensor_dims(int64_t n0, int64_t n1, const int64_t *sp, int n, int *dims, int *strides)
{
    const int nd = n == 1 ? 4 : n + 2;
    dims[0] = (int)n0, dims[1] = (int)n1;
    if (n == 1)
        dims[2] = 1, dims[3] = (int)sp[0];
    else
        for (int i = 0; i < n; i++)
            dims[2 + i] = (int)sp[n - 1 - i];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = (int)s;
        s *= dims[i];
    }
    return nd;
}

/* The shapes of descs_make, as the graph API takes them (int64). */
static void engine_geom(const dla_kit_conv *p, dla__cu_conv_shape *g)
{
    const int n = (int)p->nspatial;
    int dims[5], strides[5];
    memset(g, 0, sizeof *g);
    g->nd = tensor_dims(p->batch, p->C, p->in, n, dims, strides);
    for (int i = 0; i < g->nd; i++)
        g->x[i] = dims[i], g->xs[i] = strides[i];
    tensor_dims(p->batch, p->F, p->out, n, dims, strides);
    for (int i = 0; i < g->nd; i++)
        g->y[i] = dims[i], g->ys[i] = strides[i];
    tensor_dims(p->F, p->Cg, p->fs, n, dims, strides);
    for (int i = 0; i < g->nd; i++)
        g->w[i] = dims[i], g->ws[i] = strides[i];
    g->ns = n == 1 ? 2 : n;
    if (n == 1) {
        g->pad[0] = 0, g->stride[0] = 1, g->dil[0] = 1;
        g->pad[1] = p->pb[0], g->stride[1] = p->st[0], g->dil[1] = p->dl[0];
    } else {
        for (int i = 0; i < n; i++) {
            g->pad[i] = p->pb[n - 1 - i];
            g->stride[i] = p->st[n - 1 - i];
            g->dil[i] = p->dl[n - 1 - i];
        }
    }
}

/* Fills s; a cuDNN status (s freed on failure). */
static cudnnStatus_t descs_make(const dla__cu_dnn *L, const dla__cu_device *d, dla_dtype dt,
                                const dla_kit_conv *p, descs *s)
{
    memset(s, 0, sizeof *s);
    s->dtype = dt;
    const int n = (int)p->nspatial;
    const cudnnDataType_t t = dt == DLA_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int dims[5], strides[5], pad[3], st[3], dl[3];
    cudnnStatus_t e = L->create_tensor(&s->x);
    if (e == CUDNN_STATUS_SUCCESS)
        e = L->create_tensor(&s->y);
    if (e == CUDNN_STATUS_SUCCESS)
        e = L->create_filter(&s->w);
    if (e == CUDNN_STATUS_SUCCESS)
        e = L->create_conv(&s->conv);
    if (e == CUDNN_STATUS_SUCCESS) {
        const int nd = tensor_dims(p->batch, p->C, p->in, n, dims, strides);
        e = L->set_tensor_nd(s->x, t, nd, dims, strides);
    }
    if (e == CUDNN_STATUS_SUCCESS) {
        const int nd = tensor_dims(p->batch, p->F, p->out, n, dims, strides);
        e = L->set_tensor_nd(s->y, t, nd, dims, strides);
    }
    if (e == CUDNN_STATUS_SUCCESS) {
        const int nd = tensor_dims(p->F, p->Cg, p->fs, n, dims, strides);
        e = L->set_filter_nd(s->w, t, CUDNN_TENSOR_NCHW, nd, dims);
    }
    if (e == CUDNN_STATUS_SUCCESS) {
        const int ns = n == 1 ? 2 : n;
        if (n == 1) {
            pad[0] = 0, st[0] = 1, dl[0] = 1;
            pad[1] = (int)p->pb[0], st[1] = (int)p->st[0], dl[1] = (int)p->dl[0];
        } else {
            for (int i = 0; i < n; i++) {
                pad[i] = (int)p->pb[n - 1 - i];
                st[i] = (int)p->st[n - 1 - i];
                dl[i] = (int)p->dl[n - 1 - i];
            }
        }
        e = L->set_conv_nd(s->conv, ns, pad, st, dl, CUDNN_CROSS_CORRELATION, t);
    }
    if (e == CUDNN_STATUS_SUCCESS)
        e = L->set_conv_groups(s->conv, (int)p->G);
    if (e == CUDNN_STATUS_SUCCESS)
        e = L->set_conv_math(s->conv, d->tf32 && dt == DLA_F32 ? CUDNN_DEFAULT_MATH
                                                                : CUDNN_FMA_MATH);
    if (e == CUDNN_STATUS_SUCCESS) {
        /* cuDNN's output size must be the call's. */
        int od[5];
        const int nd = tensor_dims(p->batch, p->F, p->out, n, dims, strides);
        e = L->conv_out_dim(s->conv, s->x, s->w, nd, od);
        for (int i = 0; e == CUDNN_STATUS_SUCCESS && i < nd; i++)
            if (od[i] != dims[i])
                e = CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (e != CUDNN_STATUS_SUCCESS)
        descs_free(L, s);
    return e;
}

/* One perf result of any direction. */
typedef struct perf {
    int algo;
    cudnnStatus_t status;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
    float time; /* ms, measured; negative from the heuristics */
} perf;

/* How much slower than the fastest a deterministic algorithm may be and
 * still be taken: the same bits run to run are worth a little, not the
 * 2-10x some shapes cost (the digit CNN's first convolution's filter
 * gradient at batch 1024 on an H200). */
#define DETERMINISTIC_SLACK 1.25f

/* Picks from results (in cuDNN's order: fastest first) a successful one
 * within limit, of an allowed math type: a deterministic one if there is
 * one within DETERMINISTIC_SLACK of the fastest (measured), or whatever
 * its time (from the heuristics), else the fastest; -1 if none. With
 * DLACCEL_CUDA_DETERMINISTIC=1 a deterministic one or -1: the plugin's
 * own kernels, which are deterministic (conv_kern.h), rather than the
 * fastest of cuDNN's when none of its deterministic ones fits the
 * workspace. Never one that may convert float32 to half
 * (ALLOW_CONVERSION): more than DLACCEL_CUDA_TF32 allows, as the graph
 * API's engines are filtered too (conv_engine.c). */
static int pick(const dla__cu_device *d, const perf *r, int nr, size_t limit)
{
    int any = -1, det = -1;
    for (int i = 0; i < nr; i++) {
        if (r[i].status != CUDNN_STATUS_SUCCESS || r[i].memory > limit)
            continue;
        if (r[i].math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ||
            (!d->tf32 && r[i].math == CUDNN_TENSOR_OP_MATH))
            continue;
        if (det < 0 && r[i].determinism == CUDNN_DETERMINISTIC)
            det = i;
        if (any < 0)
            any = i;
    }
    if (d->deterministic)
        return det;
    if (det < 0 || any == det)
        return det >= 0 ? det : any;
    /* Measured: a deterministic one unless the fastest is much faster. */
    if (r[any].time >= 0 && r[det].time > DETERMINISTIC_SLACK * r[any].time)
        return any;
    return det;
}

#define COPY_PERF(dst, src, cnt)                                                                   \
    for (int i_ = 0; i_ < (cnt); i_++) {                                                           \
        (dst)[i_].algo = (int)(src)[i_].algo;                                                      \
        (dst)[i_].status = (src)[i_].status;                                                       \
        (dst)[i_].memory = (src)[i_].memory;                                                       \
        (dst)[i_].determinism = (src)[i_].determinism;                                             \
        (dst)[i_].math = (src)[i_].mathType;                                                       \
        (dst)[i_].time = (src)[i_].time;                                                           \
    }

/* DLACCEL_LOG=debug: what cuDNN measured for a shape, and the pick: a
 * line per algorithm (number, status, ms, workspace, math,
 * deterministic), so an algorithm choice can be read off a run. */
static void log_found(const dla__cu_device *d, int dir, const dla_kit_conv *p, const perf *r,
                      int nr, int chosen)
{
    static const char *const dirs[] = {"forward", "backward data", "backward filter"};
    for (int k = 0; k < nr; k++)
        dla__cu_host->log(DLA_LOG_DEBUG,
                          "cuda:%d conv %s (batch %lld, C %lld, F %lld, %lld taps, %lld px out): "
                          "cuDNN algorithm %d: %s, %.4f ms, workspace %zu, %s, %s%s",
                          d->index, dirs[dir], (long long)p->batch, (long long)p->C,
                          (long long)p->F, (long long)p->ntaps, (long long)p->out_px, r[k].algo,
                          r[k].status == CUDNN_STATUS_SUCCESS ? "ok" : "failed", (double)r[k].time,
                          r[k].memory, r[k].math == CUDNN_FMA_MATH ? "fma" : r[k].math == CUDNN_DEFAULT_MATH ? "default math" : "tensor ops",
                          r[k].determinism == CUDNN_DETERMINISTIC ? "deterministic" : "not deterministic",
                          k == chosen ? " <- chosen" : "");
}

/* The least of three runs of e's legacy algorithm (after one), timed with
 * events on stream as conv_engine.c times the engines; -1 on a failure
 * (the engines then need only work). */
static float time_legacy(const dla__cu_dnn *L, cudnnHandle_t h, cudaStream_t stream, int dir,
                         const descs *s, const struct dla__cu_conv_entry *e, char *x, char *w,
                         char *y, void *ws)
{
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = s->dtype == DLA_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = s->dtype == DLA_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    cudaEvent_t a, b;
    if (L->set_conv_math(s->conv, e->math) != CUDNN_STATUS_SUCCESS || cudaEventCreate(&a) != cudaSuccess)
        return -1;
    if (cudaEventCreate(&b) != cudaSuccess) {
        cudaEventDestroy(a);
        return -1;
    }
    float best = -1;
    for (int i = 0; i < 4; i++) {
        cudnnStatus_t st;
        cudaEventRecord(a, stream);
        if (dir == FWD)
            st = L->fwd(h, one, s->x, x, s->w, w, s->conv, (cudnnConvolutionFwdAlgo_t)e->algo, ws,
                        e->workspace, zero, s->y, y);
        else if (dir == BWD_DATA)
            st = L->bwd_data(h, one, s->w, w, s->y, y, s->conv,
                             (cudnnConvolutionBwdDataAlgo_t)e->algo, ws, e->workspace, zero, s->x, x);
        else
            st = L->bwd_filter(h, one, s->x, x, s->y, y, s->conv,
                               (cudnnConvolutionBwdFilterAlgo_t)e->algo, ws, e->workspace, zero,
                               s->w, w);
        cudaEventRecord(b, stream);
        float ms = -1;
        if (st != CUDNN_STATUS_SUCCESS || cudaEventSynchronize(b) != cudaSuccess ||
            cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
            best = -1;
            break;
        }
        if (i > 0 && (best < 0 || ms < best))
            best = ms;
    }
    cudaGetLastError();
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

/* Measures (find) or asks the heuristics (!find) for this shape's
 * algorithm, into *e (own set when none). ws: the workspace for find.
 * d->lock held. A cuDNN status only for a failure to report. */
static cudnnStatus_t choose(dla__cu_device *d, const dla__cu_dnn *L, cudnnHandle_t h, int dir,
                            const dla_kit_conv *p, const descs *s, int find, char *x, char *w, char *y, void *ws,
                            size_t ws_bytes, struct dla__cu_conv_entry *e)
{
    perf r[16];
    int nr = 0;
    cudnnStatus_t st;
    if (dir == FWD) {
        cudnnConvolutionFwdAlgoPerf_t q[16];
        st = find ? L->find_fwd(h, s->x, x, s->w, w, s->conv, s->y, y, 16, &nr, q, ws, ws_bytes)
                  : L->get_fwd(h, s->x, s->w, s->conv, s->y, 16, &nr, q);
        COPY_PERF(r, q, nr);
    } else if (dir == BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t q[16];
        st = find ? L->find_bwd_data(h, s->w, w, s->y, y, s->conv, s->x, x, 16, &nr, q, ws,
                                     ws_bytes)
                  : L->get_bwd_data(h, s->w, s->y, s->conv, s->x, 16, &nr, q);
        COPY_PERF(r, q, nr);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t q[16];
        st = find ? L->find_bwd_filter(h, s->x, x, s->y, y, s->conv, s->w, w, 16, &nr, q, ws,
                                       ws_bytes)
                  : L->get_bwd_filter(h, s->x, s->y, s->conv, s->w, 16, &nr, q);
        COPY_PERF(r, q, nr);
    }
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    const int i = pick(d, r, nr < 16 ? nr : 16, find ? ws_bytes : FIND_WORKSPACE);
    if (find)
        log_found(d, dir, p, r, nr < 16 ? nr : 16, i);
    if (i < 0) {
        e->own = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    e->own = 0;
    e->algo = r[i].algo;
    e->math = d->tf32 ? r[i].math : CUDNN_FMA_MATH;
    e->workspace = r[i].memory;
    e->engine = NULL;
    if (find && !d->engines_off) {
        /* The graph API's engines, against the legacy pick timed the same
         * way (cudnnFind's own figure ran up to 1.9x the pick's time in a
         * replay on an H200: it would favour the engines). */
        dla__cu_conv_shape g;
        float ms = -1, legacy = time_legacy(L, h, d->stream, dir, s, e, x, w, y, ws);
        if (legacy < 0)
            legacy = r[i].time;
        engine_geom(p, &g);
        dla__cu_conv_engine_find(L, h, d->stream, dir, s->dtype, &g, d->tf32, x, w, y, ws,
                                 ws_bytes, legacy, d->index, &e->engine, &ms);
        dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d conv (%d): %s (legacy algorithm %d: %.4f ms; "
                          "cudnnFind said %.4f)",
                          d->index, dir, e->engine ? "a graph API engine runs instead" : "the legacy algorithm runs",
                          e->algo, (double)legacy, (double)r[i].time);
    }
    return CUDNN_STATUS_SUCCESS;
}

static dla_status dnn_fail(cudnnStatus_t st, const char *kn, const char *what,
                           const dla_kit_conv *p)
{
    cudaGetLastError();
    return dla__cu_host->error(DLA_ERR_DEVICE,
                               "cuda %s: %s (%d spatial dims, batch %lld, C %lld, F %lld, groups "
                               "%lld): %s",
                               kn, what, (int)p->nspatial, (long long)p->batch, (long long)p->C,
                               (long long)p->F, (long long)p->G, dla__cu_dnn_msg(st));
}

static dla_status run(void *dev, const dla_conv_args *a, int dir)
{
    dla__cu_device *d = dev;
    const char *kn = dla_kit_conv_name((dla_kit_conv_dir)dir);
    dla_status s = dla__cu_enter(d, kn);
    if (s != DLA_OK)
        return s;
    dla_kit_conv p;
    if ((s = dla_kit_conv_prepare(&d->kit, a, (dla_kit_conv_dir)dir, &p)) != DLA_OK)
        return s;
    const int64_t items = dir == FWD        ? p.out_px * p.F * p.batch
                          : dir == BWD_DATA ? p.in_px * p.C * p.batch
                                            : p.ntaps * p.Cg * p.Fg * p.G;
    if (items == 0)
        return DLA_OK;
    if (!cudnn_fits(&p))
        return run_own(d, a, dir, &p);
    /* Creating the handle allocates and may synchronize, which a CUDA
     * graph capture cannot hold: end a capture in progress first (once). */
    if (!d->cudnn && !d->cudnn_off && (s = dla__cu_plan_flush(d, "creating the cuDNN handle")))
        return s;
    cudnnHandle_t h = dla__cu_dnn_of(d);
    const char *why = NULL;
    const dla__cu_dnn *L = h ? dla__cu_dnn_lib(&why) : NULL;
    if (!L)
        return run_own(d, a, dir, &p);

    struct dla__cu_conv_entry e;
    memset(&e, 0, sizeof e);
    make_key(e.key, dir, a->dtype, &p);
    pthread_mutex_lock(&d->lock);
    const struct dla__cu_conv_entry *known = lookup(d, e.key);
    if (known)
        e = *known;
    int kept = 1; /* e.engine belongs to the cache (or is NULL) */
    pthread_mutex_unlock(&d->lock);
    if (known && e.own)
        return run_own(d, a, dir, &p);
    /* cuDNN takes dense tensors: the host makes them so. */
    if (!dense(&a->x) || !dense(&a->w) || !dense(&a->y))
        return dla__cu_host->error(DLA_ERR_UNSUPPORTED,
                                   "cuda %s: cuDNN takes dense views only", kn);

    descs ds;
    cudnnStatus_t st = descs_make(L, d, a->dtype, &p, &ds);
    if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM) {
        /* A shape cuDNN does not take: ours, from now on. */
        e.own = 1;
        remember(d, &e);
        return run_own(d, a, dir, &p);
    }
    if (st != CUDNN_STATUS_SUCCESS)
        return dnn_fail(st, kn, "the descriptors", &p);
    char *x = base_of(&a->x), *w = base_of(&a->w), *y = base_of(&a->y);

    if (!known) {
        const int find = !d->capturing;
        dla__cu_mem *fw = NULL;
        size_t fw_bytes = 0;
        if (find) {
            /* Measuring: as much workspace as the limit, less if the device
             * is short of it. */
            static const size_t tries[] = {FIND_WORKSPACE, (size_t)32 << 20, (size_t)4 << 20};
            for (int i = 0; i < 3 && !fw; i++) {
                dla_mem m = NULL;
                if (dla__cu_mem_alloc(d, tries[i], &m) == DLA_OK)
                    fw = (dla__cu_mem *)m, fw_bytes = tries[i];
            }
        }
        pthread_mutex_lock(&d->lock);
        st = choose(d, L, h, dir, &p, &ds, find, x, w, y, fw ? fw->ptr : NULL, fw_bytes, &e);
        pthread_mutex_unlock(&d->lock);
        if (fw)
            dla__cu_mem_free(d, (dla_mem)fw);
        if (st == CUDNN_STATUS_NOT_SUPPORTED) /* no algorithm at all: ours */
            e.own = 1, st = CUDNN_STATUS_SUCCESS;
        if (st != CUDNN_STATUS_SUCCESS) {
            descs_free(L, &ds);
            return dnn_fail(st, kn, find ? "cudnnFind*AlgorithmEx" : "cudnnGet*Algorithm_v7", &p);
        }
        if (find && !remember(d, &e))
            kept = 0;
        if (e.own) {
            descs_free(L, &ds);
            dla__cu_host->log(DLA_LOG_DEBUG, "cuda:%d %s: no cuDNN algorithm for this shape: "
                                             "the plugin's own kernel",
                              d->index, kn);
            return run_own(d, a, dir, &p);
        }
    }

    const int use_engine = e.engine && dla__cu_conv_engine_fits(e.engine, x, w, y);
    const size_t ws_need = use_engine ? e.engine->workspace : e.workspace;
    dla__cu_mem *ws = NULL;
    if (ws_need > 0 && !(ws = dla__cu_scratch(d, ws_need, kn))) {
        if (!kept)
            engine_free(e.engine);
        descs_free(L, &ds);
        /* No memory for cuDNN's workspace (measured when memory was free;
         * during a capture the pool cannot be given back to the driver):
         * the plugin's own kernel needs none. */
        dla__cu_host->log(DLA_LOG_DEBUG,
                          "cuda:%d %s: no memory for cuDNN's workspace of %zu bytes: the "
                          "plugin's own kernel",
                          d->index, kn, ws_need);
        return run_own(d, a, dir, &p);
    }
    void *wsp = ws ? ws->ptr : NULL;
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void *one = a->dtype == DLA_F64 ? (const void *)&one_d : (const void *)&one_f;
    const void *zero = a->dtype == DLA_F64 ? (const void *)&zero_d : (const void *)&zero_f;
    pthread_mutex_lock(&d->lock);
    st = use_engine ? CUDNN_STATUS_SUCCESS : L->set_conv_math(ds.conv, e.math);
    if (st == CUDNN_STATUS_SUCCESS && use_engine)
        st = dla__cu_conv_engine_run(L, h, e.engine, x, w, y, wsp);
    else if (st == CUDNN_STATUS_SUCCESS && dir == FWD)
        st = L->fwd(h, one, ds.x, x, ds.w, w, ds.conv, (cudnnConvolutionFwdAlgo_t)e.algo, wsp,
                    e.workspace, zero, ds.y, y);
    else if (st == CUDNN_STATUS_SUCCESS && dir == BWD_DATA)
        st = L->bwd_data(h, one, ds.w, w, ds.y, y, ds.conv, (cudnnConvolutionBwdDataAlgo_t)e.algo,
                         wsp, e.workspace, zero, ds.x, x);
    else if (st == CUDNN_STATUS_SUCCESS)
        st = L->bwd_filter(h, one, ds.x, x, ds.y, y, ds.conv,
                           (cudnnConvolutionBwdFilterAlgo_t)e.algo, wsp, e.workspace, zero, ds.w,
                           w);
    pthread_mutex_unlock(&d->lock);
    if (ws)
        dla__cu_scratch_done(d, ws);
    descs_free(L, &ds);
    if (!kept)
        engine_free(e.engine);
    if (st == CUDNN_STATUS_NOT_SUPPORTED) {
        /* The algorithm refused (one from the heuristics, as a capture
         * runs): nothing was written, ours computes it. */
        cudaGetLastError();
        return run_own(d, a, dir, &p);
    }
    if (st != CUDNN_STATUS_SUCCESS)
        return dnn_fail(st, kn, "cudnnConvolution*", &p);
    if ((s = dla__cu_launched(kn)) != DLA_OK)
        return s;
    if (dir == FWD && p.has_bias) {
        dla__cu_conv_bias_launch(d->stream, dla__cu_blocks(d, items), a->dtype == DLA_F64,
                                 geom_of(&p), y, base_of(&a->bias));
        return dla__cu_launched("conv_forward: bias");
    }
    return DLA_OK;
}

dla_status dla__cu_conv_forward(void *dev, const dla_conv_args *args)
{
    return run(dev, args, FWD);
}

dla_status dla__cu_conv_backward_data(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BWD_DATA);
}

dla_status dla__cu_conv_backward_filter(void *dev, const dla_conv_args *args)
{
    return run(dev, args, BWD_FILTER);
}

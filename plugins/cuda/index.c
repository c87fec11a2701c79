/*
 * index.c - gather and scatter_add on CUDA devices (kernels in
 * index_kernels.cu).
 *
 * The ABI makes a position outside the target dim an error the call
 * returns, and the positions live in device memory, so both members read
 * the index vector back first (a few hundred bytes as a rule) through
 * dla__cu_copy_to_host, which waits for the stream. Inside a planned
 * replay being captured into a CUDA graph that copy ends the capture
 * (dla__cu_plan_flush: what was captured is launched, waited for and
 * dropped), then reads; the rest of that run and every later run of the
 * plan are plain launches (plan.c), never a graph holding a host wait.
 * The addresses are taken after the read, once the capture's
 * redirection (dla__cu_remap) has ended. The kernels
 * themselves skip a position outside the dim, so no launch addresses
 * outside its operands whatever the index holds.
 *
 * scatter_add groups the positions by target on the host (targets in
 * increasing order, each with its positions in index order) and uploads
 * the groups to scratch; thread (slice element, group) then adds its
 * positions in order, so repeated positions add up without atomics and in
 * the cpu plugin's order.
 */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/index_kern.h"

#include <string.h>

_Static_assert(DLA__CU_RD >= DLA__CU_MAXD, "reduce_kern.h holds every coalesced dim");

/* The index, read back and checked: host[i] is position i (len of them). */
static dla_status read_index(dla__cu_device *d, const char *kernel, const dla_index_args *a,
                             int scatter, const dla_kit_index *k, int32_t **out)
{
    const dla_plugin_host *h = dla__cu_host;
    *out = NULL;
    const int64_t len = k->len, istep = k->istep;
    if (len > INT32_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cuda %s: argument index: %lld positions exceed "
                                                  "int32",
                        kernel, (long long)len);
    const size_t span = (size_t)((len - 1) * istep + 1);
    int32_t *raw = h->alloc(span * sizeof *raw, 0);
    int32_t *host = h->alloc((size_t)len * sizeof *host, 0);
    if (!raw || !host) {
        h->free(raw);
        h->free(host);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cuda %s: a host copy of %lld indices", kernel,
                        (long long)len);
    }
    /* Ends a capture in progress first (plan.c), waits for the stream. */
    dla_status s = dla__cu_copy_to_host(d, raw, a->index.mem,
                                        (size_t)a->index.offset * sizeof *raw, span * sizeof *raw);
    if (s == DLA_OK)
        s = dla_kit_index_check_values(&d->kit, kernel, a, scatter, k, raw);
    for (int64_t i = 0; s == DLA_OK && i < len; i++)
        host[i] = raw[i * istep];
    h->free(raw);
    if (s != DLA_OK) {
        h->free(host);
        return s;
    }
    *out = host;
    return DLA_OK;
}

/* The slice space of a prepared call, and its bases in y and x. */
static void slice_geom(const dla_kit_index *k, dla__cu_index_geom *g, char **y, char **x)
{
    const dla_view *views[2] = {&k->ys, &k->xs};
    dla__cu_space sp;
    dla__cu_vw vw[2];
    dla__cu_space_of(2, views, &sp, vw);
    memset(g, 0, sizeof *g);
    g->nd = sp.nd;
    g->n = sp.n;
    for (int i = 0; i < sp.nd; i++) {
        g->dims[i] = sp.dims[i];
        g->yst[i] = vw[0].st[i];
        g->xst[i] = vw[1].st[i];
    }
    if (sp.nd == 0) { /* one element */
        g->nd = 1;
        g->dims[0] = 1;
    }
    g->elem = (int32_t)dla_kit_dtype_size(k->ys.dtype);
    g->ystep = k->ystep, g->xstep = k->xstep;
    g->len = k->len, g->target = k->target;
    *y = vw[0].base;
    *x = vw[1].base;
}

dla_status dla__cu_gather(void *dev, const dla_index_args *args)
{
    dla__cu_device *d = dev;
    dla_status s = dla__cu_enter(d, "gather");
    if (s != DLA_OK)
        return s;
    dla_kit_index k;
    if ((s = dla_kit_index_prepare(&d->kit, "gather", args, 0, &k)) != DLA_OK)
        return s;
    if (k.len == 0)
        return DLA_OK;
    int32_t *host = NULL;
    if ((s = read_index(d, "gather", args, 0, &k, &host)) != DLA_OK)
        return s;
    dla__cu_host->free(host);
    if (dla_kit_numel(&k.ys) == 0)
        return DLA_OK;
    dla__cu_index_geom g;
    char *y, *x;
    slice_geom(&k, &g, &y, &x);
    const int32_t *idx = (const int32_t *)dla__cu_ptr(args->index.mem) + args->index.offset;
    const cudaError_t e =
        dla__cu_gather_launch(&g, y, x, idx, k.istep, dla__cu_blocks(d, g.n * g.len), d->stream);
    return dla__cu_err(e, "gather: kernel launch");
}

dla_status dla__cu_scatter_add(void *dev, const dla_index_args *args)
{
    dla__cu_device *d = dev;
    const dla_plugin_host *h = dla__cu_host;
    dla_status s = dla__cu_enter(d, "scatter_add");
    if (s != DLA_OK)
        return s;
    dla_kit_index k;
    if ((s = dla_kit_index_prepare(&d->kit, "scatter_add", args, 1, &k)) != DLA_OK)
        return s;
    if (k.len == 0)
        return DLA_OK;
    int32_t *host = NULL;
    if ((s = read_index(d, "scatter_add", args, 1, &k, &host)) != DLA_OK)
        return s;
    if (dla_kit_numel(&k.xs) == 0) {
        h->free(host);
        return DLA_OK;
    }
    /* The positions grouped by target (the kit's), into one buffer of
     * targets[groups] | start[groups + 1] | list[len]. */
    const int64_t len = k.len;
    int32_t *packed = h->alloc((size_t)(3 * len + 1) * sizeof *packed, 0);
    int32_t *targets = h->alloc((size_t)len * sizeof *targets, 0);
    int32_t *start = h->alloc((size_t)(len + 1) * sizeof *start, 0);
    int64_t groups = packed && targets && start
                         ? dla_kit_index_groups(&d->kit, host, len, k.target, targets, start,
                                                packed + 2 * len + 1)
                         : -1;
    h->free(host);
    if (groups < 0) {
        h->free(packed), h->free(targets), h->free(start);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cuda scatter_add: grouping %lld indices",
                        (long long)len);
    }
    memcpy(packed, targets, (size_t)groups * sizeof *packed);
    memcpy(packed + groups, start, (size_t)(groups + 1) * sizeof *packed);
    memmove(packed + 2 * groups + 1, packed + 2 * len + 1, (size_t)len * sizeof *packed);
    h->free(targets), h->free(start);
    const size_t bytes = (size_t)(2 * groups + 1 + len) * sizeof(int32_t);
    dla__cu_mem *t = dla__cu_scratch(d, bytes, "scatter_add");
    if (!t) {
        h->free(packed);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    /* Through the pinned staging buffer where it fits (asynchronous, in
     * stream order); read_index has already ended a capture in progress. */
    s = dla__cu_copy_to_device(d, (dla_mem)t, 0, packed, bytes);
    h->free(packed);
    if (s != DLA_OK) {
        dla__cu_mem_free(d, (dla_mem)t);
        return s;
    }
    dla__cu_index_geom g;
    char *y, *x;
    slice_geom(&k, &g, &y, &x);
    const int32_t *dt = (const int32_t *)t->ptr;
    const cudaError_t e = dla__cu_scatter_add_launch(
        &g, args->y.dtype == DLA_F64, y, x, dt, dt + groups, dt + 2 * groups + 1, groups,
        dla__cu_blocks(d, g.n * groups), d->stream);
    dla__cu_scratch_done(d, t);
    return dla__cu_err(e, "scatter_add: kernel launch");
}

/*
 * reduce.c - sum, mean, max and min on CUDA devices (kernels in
 * reduce_kernels.cu).
 *
 * The plugin kit checks the arguments and splits x's dims into kept ones
 * (one output each) and reduced ones, each list coalesced (dla_kit_reduce;
 * reduced dims are merged only where that keeps the column-major position
 * an index reports). The launch shape follows the strides:
 *   - kept dims fast in x (kx[0] == 1) or short blocks: one thread per
 *     output, neighbouring threads on neighbouring outputs, so a warp's
 *     reads are coalesced while each thread walks its block;
 *   - otherwise one block of 256 threads per output, the threads striding
 *     over the block (coalesced when the reduced dims are the fast ones)
 *     and a shared-memory tree merging them.
 * When outputs are too few to fill the GPU and blocks long, each output's
 * block is cut into parts (contiguous runs): the first kernel writes
 * partial results to scratch and a second merges them in part order. A
 * small reduce (at most DLA__CU_K1_SMALL_REDUCE positions an output, and
 * a one-kernel step's work in all) is shape 1 in one part: one launch, and
 * a step of a one-kernel replay (onekern.c).
 * Sums are kept in double; the order of additions depends only on the
 * shape, so results repeat bit for bit.
 */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/fastdiv.h"
#include "plugins/cuda/onekern_kern.h"

#include <string.h>

_Static_assert(sizeof(dla__cu_red_geom) == sizeof(dla_kit_reduce),
               "dla__cu_red_geom mirrors dla_kit_reduce");
_Static_assert(DLA__CU_RD == DLA_MAX_DIMS, "reduce_kern.h holds every dim");

/* Shape 1 aims for this many threads per SM, a part there walks at least
 * THREAD_PART positions; shape 0 aims for BLOCKS_PER_SM blocks per SM, a
 * part there at least BLOCK_PART positions. */
#define THREADS_PER_SM 1024
#define THREAD_PART 64
#define BLOCKS_PER_SM 4
#define BLOCK_PART 2048
#define RED_THREADS 256 /* reduce_kernels.cu's block */

static char *ptr_or_null(dla_mem m)
{
    return m ? dla__cu_ptr(m) : NULL;
}

/* The launch shape and parts for r's geometry. */
static void plan(const dla__cu_device *d, dla__cu_red_launch *l)
{
    const dla__cu_red_geom *g = &l->g;
    const int64_t sms = d->sms > 0 ? d->sms : 1;
    const int kept_fast = g->nk > 0 && g->kx[0] == 1;
    l->shape = g->nred <= 64 || (kept_fast && g->outputs >= 32) ? 1 : 0;
    l->parts = 1;
    if (g->nred <= DLA__CU_K1_SMALL_REDUCE && g->outputs * g->nred <= DLA__CU_K1_STEP_WORK) {
        /* Too small for more threads to pay; and so a step of a one-kernel
         * replay (onekern_kern.h). */
        l->shape = 1;
    } else if (l->shape == 1) {
        const int64_t target = sms * THREADS_PER_SM;
        if (g->outputs < target && g->nred >= 2 * THREAD_PART) {
            int64_t parts = target / g->outputs;
            if (parts > g->nred / THREAD_PART)
                parts = g->nred / THREAD_PART;
            l->parts = parts > 1 ? parts : 1;
        }
    } else {
        const int64_t target = sms * BLOCKS_PER_SM;
        if (g->outputs < 2 * sms && g->nred >= 2 * BLOCK_PART) {
            int64_t parts = target / g->outputs;
            if (parts > g->nred / BLOCK_PART)
                parts = g->nred / BLOCK_PART;
            l->parts = parts > 1 ? parts : 1;
        }
    }
    const int64_t items = g->outputs * l->parts;
    if (l->shape == 0) {
        const int64_t cap = (int64_t)1 << 30; /* the kernel loops past it */
        l->grid = (unsigned)(items < cap ? items : cap);
    } else {
        l->grid = dla__cu_blocks(d, items);
    }
    l->combine_grid = dla__cu_blocks(d, g->outputs);
}

dla_status dla__cu_reduce(void *dev, const dla_reduce_args *args)
{
    dla__cu_device *d = dev;
    const dla_plugin_host *h = dla__cu_host;
    dla_status s = dla__cu_enter(d, "reduce");
    if (s != DLA_OK)
        return s;
    if ((s = dla_kit_check_reduce(&d->kit, args)) != DLA_OK)
        return s;
    dla_kit_reduce kr;
    dla_kit_reduce_split(args, &kr);
    if (kr.outputs == 0)
        return DLA_OK;
    const int sum = args->op == DLA_REDUCE_SUM || args->op == DLA_REDUCE_MEAN;
    char bx[DLA_KIT_DIMS_BUF];
    if (kr.nred == 0 && !sum)
        return h->error(DLA_ERR_SHAPE,
                        "cuda reduce: argument x: dims %s leave nothing to take the %s of",
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims),
                        args->op == DLA_REDUCE_MAX ? "max" : "min");
    const int want_index = args->index.mem != NULL;
    if (want_index && kr.nred > INT32_MAX)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cuda reduce: argument index: %lld reduced elements of x (%s) exceed "
                        "int32",
                        (long long)kr.nred,
                        dla_kit_dims_str(bx, sizeof bx, args->x.ndims, args->x.dims));
    dla__cu_red_launch l;
    memset(&l, 0, sizeof l);
    memcpy(&l.g, &kr, sizeof l.g);
    l.op = (int32_t)args->op;
    l.f64 = args->x.dtype == DLA_F64;
    l.want_index = want_index;
    l.y = ptr_or_null(args->y.mem);
    l.x = ptr_or_null(args->x.mem);
    l.index = want_index ? (int32_t *)dla__cu_ptr(args->index.mem) : NULL;
    plan(d, &l);
    if (kr.nred < ((int64_t)1 << 31)) {
        l.rfast = 1;
        for (int k = 0; k < kr.nr && k < DLA__CU_RD; k++)
            dla__cu_fastdiv_make(kr.rd[k], &l.rmul[k], &l.rshift[k]);
    }
    dla__cu_mem *t = NULL;
    if (l.parts > 1) {
        const size_t items = (size_t)(kr.outputs * l.parts);
        const size_t vsize = sum ? sizeof(double) : dla_kit_dtype_size(args->x.dtype);
        const size_t vbytes = (items * vsize + 255) / 256 * 256;
        t = dla__cu_scratch(d, vbytes + (sum ? 0 : items * sizeof(int64_t)), "reduce");
        if (!t)
            return DLA_ERR_OUT_OF_MEMORY;
        l.part_v = t->ptr;
        l.part_i = sum ? NULL : (int64_t *)(t->ptr + vbytes);
    }
    const cudaError_t e = dla__cu_reduce_launch(&l, d->stream);
    /* Back to the pool in stream order, or, while a plan is captured, the
     * graph's: its kernels read the parts on every replay. */
    if (t)
        dla__cu_scratch_done(d, t);
    s = dla__cu_err(e, "reduce: kernel launch");
    /* One thread per output walking its block in order is a step of a
     * one-kernel replay; the other shapes need blocks of their own. */
    if (s == DLA_OK && l.shape == 1 && l.parts == 1 && dla__cu_k1_recording(d)) {
        dla__cu_k1_step st;
        memset(&st, 0, sizeof st);
        st.kind = DLA__CU_K1_REDUCE;
        st.f64 = l.f64;
        st.u.red = l;
        dla__cu_k1_note(d, &st, kr.outputs * (kr.nred > 0 ? kr.nred : 1));
    }
    return s;
}

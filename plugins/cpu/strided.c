/*
 * strided.c - the coalesced, threaded walk over strided views (see
 * strided.h).
 */
#include "plugins/cpu/strided.h"

#include <omp.h>

#include "plugins/cpu/share.h"

void dla__cpu_iter_init(dla__cpu_iter *it, int nops, const dla_view *const *views)
{
    const dla_view *shape = views[0];
    it->nops = nops;
    it->ndims = 0;
    it->numel = 1;
    for (int op = 0; op < nops; op++)
        it->offset[op] = views[op]->offset;
    /* Empty: walked as the one-dim view of length 0 it is; its other dims
     * may overflow together (2^32 x 2^32 x 0), so they are not merged. */
    for (int d = 0; d < shape->ndims; d++)
        if (shape->dims[d] == 0) {
            it->numel = 0;
            it->dims[0] = 0;
            for (int op = 0; op < nops; op++)
                it->strides[op][0] = 1;
            it->ndims = 1;
            return;
        }
    for (int d = 0; d < shape->ndims; d++) {
        int64_t n = shape->dims[d];
        it->numel *= n;
        if (n == 1)
            continue; /* a dim of 1 never moves, whatever its stride */
        int merge = it->ndims > 0;
        for (int op = 0; merge && op < nops; op++) {
            int j = it->ndims - 1;
            merge = views[op]->strides[d] == it->strides[op][j] * it->dims[j];
        }
        if (merge) {
            it->dims[it->ndims - 1] *= n;
            continue;
        }
        for (int op = 0; op < nops; op++)
            it->strides[op][it->ndims] = views[op]->strides[d];
        it->dims[it->ndims++] = n;
    }
    if (it->ndims == 0) { /* a scalar, or every dim 1 */
        it->dims[0] = 1;
        for (int op = 0; op < nops; op++)
            it->strides[op][0] = 1;
        it->ndims = 1;
    }
}

/* Walks units [u0, u1) where unit u is piece u % pieces of row u / pieces. */
/* The odometer over dims from.. of it: the next index and each operand's
 * row offset with it. */
static inline void advance(const dla__cpu_iter *it, int from, int64_t *idx, int64_t *row_off)
{
    for (int d = from; d < it->ndims; d++) {
        for (int op = 0; op < it->nops; op++)
            row_off[op] += it->strides[op][d];
        if (++idx[d] < it->dims[d])
            return;
        for (int op = 0; op < it->nops; op++)
            row_off[op] -= idx[d] * it->strides[op][d];
        idx[d] = 0;
    }
}

static void walk(const dla__cpu_iter *it, int64_t pieces, int64_t piece_len, int64_t u0, int64_t u1,
                 dla__cpu_row_fn fn, void *ctx)
{
    const int nops = it->nops;
    int64_t idx[DLA_MAX_DIMS] = {0};
    int64_t row_off[DLA__CPU_MAX_OPS];
    int64_t step[DLA__CPU_MAX_OPS];
    int64_t row = u0 / pieces, piece = u0 % pieces;
    for (int op = 0; op < nops; op++) {
        row_off[op] = it->offset[op];
        step[op] = it->strides[op][0];
    }
    for (int d = 1; d < it->ndims; d++) {
        idx[d] = row % it->dims[d];
        row /= it->dims[d];
        for (int op = 0; op < nops; op++)
            row_off[op] += idx[d] * it->strides[op][d];
    }
    const int64_t inner = it->dims[0];
    if (pieces == 1 && it->ndims >= 2) {
        /* Whole rows: along dim 1 in a loop of its own, the odometer once
         * per dim 1's run. Short rows (a permute's 8 channels, a bias
         * broadcast's 32) spent more in the walk than in their rows. */
        const int64_t n1 = it->dims[1];
        int64_t u = u0;
        while (u < u1) {
            const int64_t run = n1 - idx[1] < u1 - u ? n1 - idx[1] : u1 - u;
            for (int64_t r = 0; r < run; r++) {
                fn(ctx, inner, row_off, step);
                for (int op = 0; op < nops; op++)
                    row_off[op] += it->strides[op][1];
            }
            u += run;
            idx[1] += run;
            if (idx[1] < n1)
                break; /* u == u1 */
            for (int op = 0; op < nops; op++)
                row_off[op] -= n1 * it->strides[op][1];
            idx[1] = 0;
            advance(it, 2, idx, row_off);
        }
        return;
    }
    for (int64_t u = u0; u < u1; u++) {
        int64_t col = piece * piece_len;
        int64_t n = inner - col < piece_len ? inner - col : piece_len;
        int64_t off[DLA__CPU_MAX_OPS];
        for (int op = 0; op < nops; op++)
            off[op] = row_off[op] + col * step[op];
        fn(ctx, n, off, step);
        if (++piece < pieces)
            continue;
        piece = 0;
        advance(it, 1, idx, row_off);
    }
}

/* How the space is cut for threads: units of whole rows or row pieces. */
typedef struct plan {
    int64_t pieces, piece_len, units;
} plan;

static plan make_plan(const dla__cpu_iter *it, int threads)
{
    const int64_t inner = it->dims[0];
    const int64_t rows = it->numel / inner;
    /* Few long rows: cut each into pieces (of whole cache lines) so every
     * thread gets several; many rows: one piece per row. */
    int64_t pieces = 1;
    if (threads > 1 && rows < 4 * (int64_t)threads) {
        pieces = (4 * (int64_t)threads + rows - 1) / rows;
        int64_t most = inner / 4096 > 1 ? inner / 4096 : 1;
        if (pieces > most)
            pieces = most;
    }
    int64_t piece_len = (inner + pieces - 1) / pieces;
    piece_len = (piece_len + 15) & ~(int64_t)15;
    pieces = (inner + piece_len - 1) / piece_len;
    return (plan){pieces, piece_len, rows * pieces};
}

int64_t dla__cpu_iter_units(const dla__cpu_iter *it, int parts)
{
    return it->numel == 0 ? 0 : make_plan(it, parts).units;
}

void dla__cpu_iter_run_part(const dla__cpu_iter *it, int part, int parts, dla__cpu_row_fn fn,
                            void *ctx)
{
    if (it->numel == 0)
        return;
    const plan p = make_plan(it, parts);
    const int64_t u0 = p.units * part / parts, u1 = p.units * (part + 1) / parts;
    if (u0 < u1)
        walk(it, p.pieces, p.piece_len, u0, u1, fn, ctx);
}

/* Walks of fewer elements go to share.c in four parts a thread (an LSTM's
 * steps joined into its output sequence: copies of 64K to 512K elements),
 * not to an OpenMP region whose closing barrier waits for a descheduled
 * teammate; which part a thread runs changes no element. */
#define SHARE_MAX ((int64_t)1 << 20)

typedef struct iter_share {
    const dla__cpu_iter *it;
    dla__cpu_row_fn fn;
    void *ctx;
    int parts;
} iter_share;

static void iter_item(void *arg, int64_t part)
{
    const iter_share *s = arg;
    dla__cpu_iter_run_part(s->it, (int)part, s->parts, s->fn, s->ctx);
}

void dla__cpu_iter_run(const dla__cpu_iter *it, dla__cpu_row_fn fn, void *ctx)
{
    if (it->numel == 0)
        return;
    int threads = it->numel >= DLA__CPU_PAR_MIN ? omp_get_max_threads() : 1;
    if (threads <= 1 || make_plan(it, threads).units == 1) {
        dla__cpu_iter_run_part(it, 0, 1, fn, ctx);
        return;
    }
    if (it->numel < SHARE_MAX && threads <= 64 && dla__cpu_share_wanted()) {
        iter_share s = {it, fn, ctx, 4 * threads};
        dla__cpu_share(s.parts, iter_item, &s);
        return;
    }
#pragma omp parallel num_threads(threads)
    dla__cpu_iter_run_part(it, omp_get_thread_num(), omp_get_num_threads(), fn, ctx);
}

/*
 * strided.h - strided views on the cpu: the iteration space that
 * elementwise kernels walk (the checks every kernel starts with are the
 * plugin kit's, dlaccel/plugin_kit.h).
 *
 * An iteration space is the shared dims of up to four equal-shaped views
 * with each view's strides, coalesced: dims of size 1 are dropped and
 * neighbours merged wherever every view's strides allow it, so a dense
 * tensor becomes one flat run and a broadcast row vector two dims. The walk
 * hands a row function runs along dim 0 (the innermost), so the row
 * function's loop is a plain vectorizable loop over one stride per view; the
 * runs are split over the OpenMP team. Whole rows are handed out along dim 1
 * in a loop of their own, so short rows (a permute's 8 channels) cost a
 * call each, not an odometer.
 */
#ifndef DLA_PLUGIN_CPU_STRIDED_H
#define DLA_PLUGIN_CPU_STRIDED_H

#include "plugins/cpu/cpu.h"

/* Address of element index (counted from the view's memory start). */
static inline char *dla__cpu_at(const dla_view *v, int64_t index)
{
    return (char *)v->mem + index * (int64_t)dla_kit_dtype_size(v->dtype);
}

#define DLA__CPU_MAX_OPS 4

typedef struct dla__cpu_iter {
    int nops;
    int ndims; /* >= 1; a scalar is one dim of 1 */
    int64_t numel;
    int64_t dims[DLA_MAX_DIMS];
    int64_t strides[DLA__CPU_MAX_OPS][DLA_MAX_DIMS];
    int64_t offset[DLA__CPU_MAX_OPS];
} dla__cpu_iter;

/* Builds the coalesced space of nops views with the dims of views[0]. */
void dla__cpu_iter_init(dla__cpu_iter *it, int nops, const dla_view *const *views);

/* Nonzero when the space is one run with unit stride in every view: the
 * views are dense, contiguous and of one layout. */
static inline int dla__cpu_iter_flat(const dla__cpu_iter *it)
{
    if (it->ndims != 1)
        return 0;
    for (int op = 0; op < it->nops; op++)
        if (it->strides[op][0] != 1)
            return 0;
    return 1;
}

/* A run of n elements: view op's first element is at element index off[op]
 * of its memory, the next ones step[op] further each. */
typedef void (*dla__cpu_row_fn)(void *ctx, int64_t n, const int64_t *off, const int64_t *step);

/* Calls fn for every run of the space, over the OpenMP team when numel
 * reaches DLA__CPU_PAR_MIN. Runs may be cut from one row when there are
 * fewer rows than threads. fn runs concurrently on disjoint runs. */
void dla__cpu_iter_run(const dla__cpu_iter *it, dla__cpu_row_fn fn, void *ctx);

/* The pieces of dla__cpu_iter_run for a caller that runs its own team:
 * the space cut for parts threads has this many units (0 when empty), and
 * run_part walks part's share of them on the calling thread. The shares
 * of one cut are disjoint and the same for every space of equal dims and
 * strides, so a thread may walk its share of several such spaces in turn. */
int64_t dla__cpu_iter_units(const dla__cpu_iter *it, int parts);
void dla__cpu_iter_run_part(const dla__cpu_iter *it, int part, int parts, dla__cpu_row_fn fn,
                            void *ctx);

#endif

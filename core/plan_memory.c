/*
 * plan_memory.c - the static memory plan: intermediates' lifetimes to
 * offsets in one arena.
 *
 * Greedy by size (the largest buffers are placed first, when the arena is
 * still empty enough to take them without holes), each at the smallest gap
 * that fits between the buffers already placed whose lifetimes overlap its
 * own, or past the last of them. A region starts at a multiple of 64
 * bytes (a cache line, and every dtype's element size), or, for a buffer
 * whose size is not a multiple of 64, at a multiple of the largest power
 * of two dividing its size: that is at least its element size (the size is
 * elements times that power of two), so element offsets into the arena
 * stay integral, while the many tiny intermediates of a small model pack
 * instead of taking a line each. Ties in size go by first use, which keeps
 * the layout the same from run to run.
 */
#include "core/alloc.h"
#include "core/plan_impl.h"

#include <stdlib.h>

#define LINE ((size_t)64)

static size_t align_of(size_t bytes)
{
    size_t low = bytes & (~bytes + 1); /* the lowest set bit */
    return bytes == 0 || low >= LINE ? LINE : low;
}

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

static int by_size(const void *pa, const void *pb)
{
    const dla__interval *a = *(const dla__interval *const *)pa, *b = *(const dla__interval *const *)pb;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int by_offset(const void *pa, const void *pb)
{
    const dla__interval *a = *(const dla__interval *const *)pa, *b = *(const dla__interval *const *)pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

dla_status dla__plan_memory(dla__interval *iv, int n, size_t *arena_bytes)
{
    *arena_bytes = 0;
    if (n == 0)
        return DLA_OK;
    dla__interval **order = dla__malloc((size_t)n * sizeof *order);
    dla__interval **placed = dla__malloc((size_t)n * sizeof *placed);
    dla__interval **live = dla__malloc((size_t)n * sizeof *live);
    if (!order || !placed || !live) {
        dla__free(order);
        dla__free(placed);
        dla__free(live);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; i++)
        order[i] = &iv[i];
    qsort(order, (size_t)n, sizeof *order, by_size);
    int nplaced = 0;
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        dla__interval *x = order[i];
        const size_t align = align_of(x->bytes), need = x->bytes;
        int nlive = 0;
        for (int j = 0; j < nplaced; j++)
            if (placed[j]->first <= x->last && x->first <= placed[j]->last)
                live[nlive++] = placed[j];
        qsort(live, (size_t)nlive, sizeof *live, by_offset);
        size_t at = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
        for (int j = 0; j < nlive; j++) {
            if (live[j]->offset > at) {
                size_t gap = live[j]->offset - at;
                if (gap >= need && gap < best_gap) {
                    best = at;
                    best_gap = gap;
                }
            }
            size_t end = round_up(live[j]->offset + live[j]->bytes, align);
            if (end > at)
                at = end;
        }
        x->offset = best != SIZE_MAX ? best : at;
        if (x->offset + need > top)
            top = x->offset + need;
        placed[nplaced++] = x;
    }
    dla__free(order);
    dla__free(placed);
    dla__free(live);
    *arena_bytes = top;
    return DLA_OK;
}

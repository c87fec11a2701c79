/*
 * handle.c - the quarantine of released handles and the misuse report.
 *
 * A ring of slots per class: a release takes the next slot with one atomic
 * add and swaps its block in with one atomic exchange, so no lock and no
 * allocation; the block swapped out (released that many releases ago) goes
 * back to the allocator. Stale pointers into the last ring-size releases
 * therefore always read DLA__HANDLE_DEAD; older ones point at memory the
 * allocator may have given to anything (docs/checks.md says what that
 * means for each check).
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/handle.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Powers of two: the slot is the counter masked. */
#define TENSOR_SLOTS 1024u
#define OBJECT_SLOTS 64u
#define DEBUG_FACTOR 64u

typedef struct ring {
    _Atomic(void *) *slots;
    atomic_size_t next;
} ring;

static _Atomic(void *) tensor_slots[TENSOR_SLOTS * DEBUG_FACTOR];
static _Atomic(void *) object_slots[OBJECT_SLOTS * DEBUG_FACTOR];
static ring rings[2] = {{tensor_slots, 0}, {object_slots, 0}};

/* -1 until read; the environment is read once per process. */
static atomic_int debug_flag = -1;

int dla__debug(void)
{
    int d = atomic_load_explicit(&debug_flag, memory_order_relaxed);
    if (d < 0) {
        const char *v = secure_getenv("DLACCEL_DEBUG");
        d = v && *v && !(v[0] == '0' && !v[1]);
        atomic_store_explicit(&debug_flag, d, memory_order_relaxed);
    }
    return d;
}

size_t dla__quarantine_size(dla__quarantine_ring r)
{
    size_t base = r == DLA__RING_TENSORS ? TENSOR_SLOTS : OBJECT_SLOTS;
    return dla__debug() ? base * DEBUG_FACTOR : base;
}

void dla__quarantine(dla__quarantine_ring r, void *block)
{
    ring *q = &rings[r];
    size_t i = atomic_fetch_add_explicit(&q->next, 1, memory_order_relaxed) &
               (dla__quarantine_size(r) - 1);
    /* acq_rel: the poisoned words written before the exchange are seen by
     * the thread that frees the block later. */
    void *old = atomic_exchange_explicit(&q->slots[i], block, memory_order_acq_rel);
    dla__free(old);
}

void dla__quarantine_flush(void)
{
    for (int r = 0; r < 2; r++) {
        size_t n = dla__quarantine_size((dla__quarantine_ring)r);
        for (size_t i = 0; i < n; i++)
            dla__free(atomic_exchange(&rings[r].slots[i], NULL));
    }
}

void dla__quarantine_fill(void)
{
    for (int r = 0; r < 2; r++) {
        size_t n = dla__quarantine_size((dla__quarantine_ring)r);
        for (size_t i = 0; i < n; i++) {
            if (atomic_load(&rings[r].slots[i]))
                continue;
            void *p = dla__malloc(1);
            if (!p)
                return; /* a ring not full only delays frees; nothing breaks */
            atomic_store(&rings[r].slots[i], p);
        }
    }
}

dla_status dla__misuse(dla_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dla__failv(status, fmt, ap);
    va_end(ap);
    dla__log(DLA_LOG_ERROR, "%s", dla_last_error());
    return status;
}

/*
 * handle.h - the checks on the handles users hold (docs/checks.md).
 *
 * Every handle the library gives out (tensor, network, layer, accelerated
 * function, trace, ...) starts its life with a magic word of its kind and
 * ends it with DLA__HANDLE_DEAD. A released handle's block is not handed
 * back to the allocator at once but parked in a quarantine ring, so for
 * the next releases its memory still holds the poisoned word and a stale
 * pointer reads "dead" instead of whatever reused the memory.
 *
 * This header is the one core service nn/ uses beyond the public API: the
 * networks' and layers' checks share the ring and the log with the core's.
 */
#ifndef DLA_CORE_HANDLE_H
#define DLA_CORE_HANDLE_H

#include <dlaccel.h>
#include <stdint.h>

/* One word per kind, so a handle of one kind passed for another is told
 * apart too. Arbitrary values, unlikely as the first word of other data. */
enum {
    DLA__HANDLE_TENSOR = 0x7a3e5001u,
    DLA__HANDLE_NET = 0x7a3e5002u,
    DLA__HANDLE_LAYER = 0x7a3e5003u,
    DLA__HANDLE_ACCEL = 0x7a3e5004u,
    DLA__HANDLE_TRACE = 0x7a3e5005u,
    DLA__HANDLE_MBQ = 0x7a3e5006u,
    DLA__HANDLE_TABLE = 0x7a3e5007u,
    DLA__HANDLE_SEQLIST = 0x7a3e5008u,
    DLA__HANDLE_PROGRESS = 0x7a3e5009u,
    DLA__HANDLE_LBFGS = 0x7a3e500au,
    DLA__HANDLE_DATASTORE = 0x7a3e500bu,
    DLA__HANDLE_DEAD = 0x0dead7a3u,
};

/* The rings: tensors are released by the thousand per training step, the
 * other handles rarely, so each gets its own and a network's block is not
 * pushed out by the tensors released in the meantime. */
typedef enum dla__quarantine_ring {
    DLA__RING_TENSORS,
    DLA__RING_OBJECTS,
} dla__quarantine_ring;

/* Parks block (a handle whose magic word the caller has set to
 * DLA__HANDLE_DEAD) and frees the oldest parked block of the ring. */
void dla__quarantine(dla__quarantine_ring ring, void *block);
/* How many blocks a ring holds: 1024 tensors and 64 other handles, 64
 * times more with DLACCEL_DEBUG=1. */
size_t dla__quarantine_size(dla__quarantine_ring ring);
/* Around dla_set_allocator: flush hands every parked block back to the
 * allocator that made it; fill parks placeholders made with the new one,
 * so the rings are full from the start and each later release frees one
 * block for the one it parks (a counting allocator sees a steady count). */
void dla__quarantine_flush(void);
void dla__quarantine_fill(void);

/* Nonzero when DLACCEL_DEBUG is set to anything but "" or "0". */
int dla__debug(void);

/* A misused handle: records status and the message as the thread's last
 * error and logs it at error level (DLACCEL_LOG), for the calls that have
 * nothing else to report it through. Returns status. */
dla_status dla__misuse(dla_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif

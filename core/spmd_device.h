/*
 * spmd_device.h - collectives on a device's own transport (NCCL on the
 * cuda plugin): dlaccel/plugin.h's ABI 1.6 coll_* members.
 *
 * A collective whose tensors are all dense and all on one device whose
 * plugin has these members goes to them on every rank that can, and only
 * when every rank can (the descriptors of the argument check carry each
 * rank's answer): otherwise every rank takes the host path. The group of a
 * device is joined on its first such collective, by every rank together;
 * when any rank fails to join, every rank leaves and the device's tensors
 * take the host path from then on (logged once).
 *
 * DLACCEL_DEVICE_COLLECTIVES: auto (default), off (always the host path),
 * force (also in a world of one: how a plugin's collectives are exercised
 * on a machine with one device).
 */
#ifndef DLA_CORE_SPMD_DEVICE_H
#define DLA_CORE_SPMD_DEVICE_H

#include "core/spmd_check.h"

typedef struct dla__spmd_dgroup {
    dla_device *dev;
    int probe;   /* 0 not asked, 1 the transport is there, -1 not */
    int state;   /* 0 not joined yet, 1 joined, -1 refused (the same on every rank) */
    void *group;
} dla__spmd_dgroup;

/* This rank's transport for the tensors (nonzero: a digest of the plugin's
 * name), or 0 when they take the host path. writes: the tensors are
 * written in place (allreduce, broadcast). */
uint64_t dla__spmd_device_path(dla__spmd *w, int n, dla_tensor *const *t);

/* Whether every rank's descriptor names the same nonzero transport. */
int dla__spmd_device_agreed(const dla__spmd *w, const dla__coll_desc *all);

/* The group of dev, joined now when it was not (every rank calls this in
 * the same collective); *group NULL: the device's collectives were
 * refused, take the host path. An error only when the world broke. */
dla_status dla__spmd_device_group(dla__spmd *w, const char *op, dla_device *dev, void **group);

/* The collectives on the device (the tensors dense, on dev, agreed): each
 * enqueues the operations and waits for them under the collective
 * timeouts. A failure breaks the world. */
dla_status dla__spmd_device_allreduce(dla__spmd *w, const char *op, void *group, int n,
                                      dla_tensor *const *t, dla_reduce_op rop, uint64_t *ticket);
dla_status dla__spmd_device_broadcast(dla__spmd *w, const char *op, void *group, int n,
                                      dla_tensor *const *t, int root, uint64_t *ticket);
dla_status dla__spmd_device_allgather(dla__spmd *w, const char *op, void *group,
                                      const dla_tensor *x, dla_tensor *res, uint64_t *ticket);
/* Waits for ticket of dev's group (and everything before it). */
dla_status dla__spmd_device_wait(dla__spmd *w, const char *op, dla_device *dev, void *group,
                                 uint64_t ticket);
/* Whether ticket is done, without waiting (*done); a failure breaks the
 * world. */
dla_status dla__spmd_device_test(dla__spmd *w, const char *op, dla_device *dev, void *group,
                                 uint64_t ticket, int *done);

#endif

/*
 * spmd_device.c - collectives on a device's own transport (spmd_device.h
 * says when they are used).
 *
 * Why the core, not the communicator plugin, drives them: the device's
 * memory and queue are the device plugin's (dla_mem handles the core never
 * dereferences), so the device plugin runs the transport (NCCL needs the
 * CUDA stream and pointers), and the communicator plugin carries only what
 * the transport needs to start: the group's id, sent from rank 0 to the
 * others over MPI, as NCCL's own documentation bootstraps it.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/spmd_device.h"

#include "core/alloc.h"
#include "core/device.h"
#include "core/env_choice.h"
#include "core/error.h"
#include "core/log.h"
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

/* Devices a process may use collectives on; one per rank is the norm. */
#define DGROUPS_MAX 16

enum { MODE_AUTO, MODE_OFF, MODE_FORCE };

static int mode(void)
{
    static atomic_int warned;
    static const char *const values[] = {"auto", "off", "force", NULL};
    int m = dla__env_choice("DLACCEL_DEVICE_COLLECTIVES", values, &warned, dla__log);
    return m < 0 ? MODE_AUTO : m;
}

static int has_members(const dla_device *dev)
{
    const dla_plugin *p = dev->table;
    return dev->abi_minor >= 6 && p->coll_probe && p->coll_id && p->coll_join &&
           p->coll_allreduce && p->coll_broadcast && p->coll_allgather && p->coll_test &&
           p->coll_leave;
}

/* dev's record, made on first sight; NULL when the table is full. */
static dla__spmd_dgroup *record_of(dla__spmd *w, dla_device *dev)
{
    for (int i = 0; i < w->ndgroups; i++)
        if (w->dgroups[i].dev == dev)
            return &w->dgroups[i];
    if (!w->dgroups) {
        w->dgroups = dla__calloc(DGROUPS_MAX, sizeof *w->dgroups);
        if (!w->dgroups)
            return NULL;
    }
    if (w->ndgroups == DGROUPS_MAX)
        return NULL;
    dla__spmd_dgroup *g = &w->dgroups[w->ndgroups++];
    g->dev = dev;
    return g;
}

uint64_t dla__spmd_device_path(dla__spmd *w, int n, dla_tensor *const *t)
{
    int m = mode();
    if (m == MODE_OFF || (w->world.size == 1 && m != MODE_FORCE) || w->broken || n <= 0)
        return 0;
    dla_device *dev = t[0]->storage->device;
    for (int k = 0; k < n; k++)
        if (t[k]->storage->device != dev || !dla__is_dense(t[k]))
            return 0;
    if (!has_members(dev))
        return 0;
    dla__spmd_dgroup *g = record_of(w, dev);
    if (!g || g->state < 0)
        return 0;
    if (g->probe == 0) {
        g->probe = dev->table->coll_probe(dev->ctx) == DLA_OK ? 1 : -1;
        if (g->probe < 0)
            dla__log(DLA_LOG_INFO, "spmd: %s: no collectives of its own (%s); the collectives of "
                     "its tensors go through the host", dev->name, dla_last_error());
        dla_clear_error();
    }
    if (g->probe < 0)
        return 0;
    /* FNV-1a of the plugin's name: the ranks' devices must be of one kind. */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = dev->plugin_name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h | 1;
}

int dla__spmd_device_agreed(const dla__spmd *w, const dla__coll_desc *all)
{
    if (!all || !all[0].device_path)
        return 0;
    for (int r = 1; r < w->world.size; r++)
        if (all[r].device_path != all[0].device_path)
            return 0;
    return 1;
}

/* ------------------------------------------------------------- the join */

/* What rank 0 sends the others: the group's id, or why there is none. */
typedef struct join_msg {
    int32_t ok;
    uint32_t bytes;
    unsigned char id[256];
    char why[200];
} join_msg;

typedef struct poll_arg {
    dla_device *dev;
    void *group;
    uint64_t ticket;
    dla_status st; /* join_poll: the join's failure, which ends the wait */
    char why[200];
} poll_arg;

/* A join that fails is a refusal, not a broken world: it ends the wait. */
static dla_status join_poll(void *arg, int *done)
{
    poll_arg *a = arg;
    a->st = a->dev->table->coll_test(a->dev->ctx, a->group, 0, done);
    if (a->st != DLA_OK) {
        snprintf(a->why, sizeof a->why, "%s", dla_last_error());
        dla_clear_error();
        *done = 1;
    }
    return DLA_OK;
}

static dla_status op_poll(void *arg, int *done)
{
    poll_arg *a = arg;
    return a->dev->table->coll_test(a->dev->ctx, a->group, a->ticket, done);
}

/* Rank 0's id, sent to every other rank (msg in and out). */
static dla_status share_id(dla__spmd *w, const char *op, dla_device *dev, join_msg *msg)
{
    if (w->world.rank == 0) {
        size_t bytes = 0;
        if (dev->table->coll_id(dev->ctx, msg->id, sizeof msg->id, &bytes) == DLA_OK &&
            bytes <= sizeof msg->id) {
            msg->ok = 1;
            msg->bytes = (uint32_t)bytes;
        } else {
            snprintf(msg->why, sizeof msg->why, "%s", dla_last_error());
        }
        dla_clear_error();
    }
    if (!w->p)
        return DLA_OK;
    dla_comm_req req;
    dla__spmd_watch_begin(w, op);
    dla_status st = w->p->broadcast(w->ctx, msg, sizeof *msg, 0, DLA_COMM_MAY_BLOCK, &req);
    dla__spmd_watch_end();
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla__spmd_break(w);
        return st;
    }
    return dla__spmd_wait(w, op, req, 1);
}

dla_status dla__spmd_device_group(dla__spmd *w, const char *op, dla_device *dev, void **group)
{
    *group = NULL;
    dla__spmd_dgroup *g = record_of(w, dev);
    if (!g || g->state < 0)
        return DLA_OK;
    if (g->state > 0) {
        *group = g->group;
        return DLA_OK;
    }
    join_msg msg = {0};
    dla_status st = share_id(w, op, dev, &msg);
    if (st != DLA_OK)
        return st;
    poll_arg a = {.dev = dev};
    int joined = 0;
    if (!msg.ok) {
        snprintf(a.why, sizeof a.why, "rank 0 could not make the group's id: %.150s", msg.why);
    } else if (dev->table->coll_join(dev->ctx, msg.id, msg.bytes, w->world.size, w->world.rank,
                                     &a.group) != DLA_OK) {
        snprintf(a.why, sizeof a.why, "%s", dla_last_error());
        a.group = NULL;
    } else {
        int gave_up = 0;
        st = dla__spmd_wait_poll(w, op, join_poll, &a, 0, &gave_up);
        if (st != DLA_OK) {
            dev->table->coll_leave(dev->ctx, a.group, 1);
            g->state = -1;
            return st;
        }
        joined = a.st == DLA_OK;
        if (!joined) {
            dev->table->coll_leave(dev->ctx, a.group, 1);
            a.group = NULL;
        }
    }
    dla_clear_error();
    /* Whether every rank joined: one more exchange, every rank's answer
     * and reason in its descriptor. */
    dla__coll_desc mine = {.kind = DLA__COLL_DEVICE_JOIN, .value = joined};
    snprintf(mine.why, sizeof mine.why, "%s", a.why);
    dla__coll_desc *all = NULL;
    st = dla__coll_enter(w, op, &mine, NULL, &all);
    if (st != DLA_OK) {
        if (a.group)
            dev->table->coll_leave(dev->ctx, a.group, 1);
        g->state = -1;
        return st;
    }
    int failed = -1;
    for (int r = 0; r < w->world.size && failed < 0; r++)
        if (!all[r].value)
            failed = r;
    if (failed < 0) {
        g->state = 1;
        g->group = a.group;
        *group = a.group;
        dla__log(DLA_LOG_INFO, "spmd: %s: collectives on the device's own transport, a group of %d",
                 dev->name, w->world.size);
    } else {
        /* Some rank could not join: none uses the group (a group that
         * lacks a member would wait for it forever). */
        if (a.group)
            dev->table->coll_leave(dev->ctx, a.group, 1);
        g->state = -1;
        dla__log(DLA_LOG_WARN, "spmd: %s: the device's own collectives are off for this job: rank "
                 "%d could not join (%.200s); the collectives of its tensors go through the host",
                 dev->name, failed, all[failed].why);
    }
    dla__free(all);
    return DLA_OK;
}

/* ------------------------------------------------------- the operations */

static size_t bytes_of(const dla_tensor *t)
{
    return (size_t)dla__numel(t->ndims, t->dims) * dla_dtype_size(t->dtype);
}

static size_t offset_of(const dla_tensor *t)
{
    return (size_t)t->offset * dla_dtype_size(t->dtype);
}

/* A failed or abandoned operation: the group is of no more use. */
static void drop_group(dla__spmd *w, dla_device *dev, void *group)
{
    dla__spmd_dgroup *g = record_of(w, dev);
    dev->table->coll_leave(dev->ctx, group, 1);
    if (g && g->group == group) {
        g->group = NULL;
        g->state = -1;
    }
}

/* The device refused an operation the other ranks may have enqueued: the
 * ranks no longer agree on what is in flight. */
static dla_status refused(dla__spmd *w, const char *op, dla_device *dev, void *group)
{
    dla_status st = dla_last_status();
    if (st == DLA_OK)
        st = dla__fail(DLA_ERR_DEVICE, "%s: the device refused a collective", op);
    dla__error_prefix(op);
    dla__spmd_break(w);
    drop_group(w, dev, group);
    return st;
}

/* Enqueues each tensor's allreduce (root < 0) or broadcast from root. */
static dla_status each_tensor(dla__spmd *w, const char *op, void *group, int n,
                              dla_tensor *const *t, dla_reduce_op rop, int root, uint64_t *ticket)
{
    dla_device *dev = t[0]->storage->device;
    const dla_plugin *p = dev->table;
    *ticket = 0;
    for (int k = 0; k < n; k++) {
        size_t bytes = bytes_of(t[k]), es = dla_dtype_size(t[k]->dtype);
        dla_mem mem = t[k]->storage->mem;
        if (bytes && (root < 0 ? p->coll_allreduce(dev->ctx, group, mem, offset_of(t[k]),
                                                   bytes / es, t[k]->dtype, rop, ticket)
                               : p->coll_broadcast(dev->ctx, group, mem, offset_of(t[k]), bytes,
                                                   root, ticket)) != DLA_OK)
            return refused(w, op, dev, group);
    }
    return DLA_OK;
}

dla_status dla__spmd_device_allreduce(dla__spmd *w, const char *op, void *group, int n,
                                      dla_tensor *const *t, dla_reduce_op rop, uint64_t *ticket)
{
    return each_tensor(w, op, group, n, t, rop, -1, ticket);
}

dla_status dla__spmd_device_broadcast(dla__spmd *w, const char *op, void *group, int n,
                                      dla_tensor *const *t, int root, uint64_t *ticket)
{
    return each_tensor(w, op, group, n, t, DLA_REDUCE_SUM, root, ticket);
}

dla_status dla__spmd_device_allgather(dla__spmd *w, const char *op, void *group,
                                      const dla_tensor *x, dla_tensor *res, uint64_t *ticket)
{
    dla_device *dev = x->storage->device;
    *ticket = 0;
    size_t bytes = bytes_of(x);
    if (bytes && dev->table->coll_allgather(dev->ctx, group, x->storage->mem, offset_of(x), bytes,
                                            res->storage->mem, offset_of(res), ticket) != DLA_OK)
        return refused(w, op, dev, group);
    return DLA_OK;
}

dla_status dla__spmd_device_wait(dla__spmd *w, const char *op, dla_device *dev, void *group,
                                 uint64_t ticket)
{
    if (!ticket)
        return DLA_OK;
    poll_arg a = {.dev = dev, .group = group, .ticket = ticket};
    int gave_up = 0;
    dla_status st = dla__spmd_wait_poll(w, op, op_poll, &a, 1, &gave_up);
    if (st != DLA_OK)
        drop_group(w, dev, group);
    return st;
}

dla_status dla__spmd_device_test(dla__spmd *w, const char *op, dla_device *dev, void *group,
                                 uint64_t ticket, int *done)
{
    *done = 1;
    if (!ticket)
        return DLA_OK;
    *done = 0;
    dla_status st = dev->table->coll_test(dev->ctx, group, ticket, done);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla__spmd_break(w);
        drop_group(w, dev, group);
        *done = 1;
    }
    return st;
}

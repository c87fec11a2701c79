/*
 * testmem_coll.c - testmem's collectives of its own, over MPI (see
 * testmem_coll.h). Each group is a duplicate of MPI_COMM_WORLD whose
 * members prove, at the join, that they were given the same id (so the
 * core's way of sending it is tested too); the operations are MPI's
 * non-blocking collectives on the slots' memory, completed in ticket order
 * by coll_test. A group of one needs no MPI (DLACCEL_DEVICE_COLLECTIVES=
 * force without mpirun).
 *
 * Faults on demand, by rank (the world rank, as a number):
 *   DLA_TESTCOLL_PROBE_FAIL=R  coll_probe fails on rank R
 *   DLA_TESTCOLL_JOIN_FAIL=R   the join of rank R fails (in coll_test, as
 *                              a non-blocking NCCL join does)
 * Every operation is logged at info ("testcoll: allreduce ..."), so a test
 * sees which path a collective took.
 */
#define _POSIX_C_SOURCE 200809L
#include "tests/plugins/testmem_coll.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const dla_plugin_host *host;

typedef struct op_rec {
    MPI_Request req;
    int active;
    void *buf;
    size_t count;
    dla_dtype dtype;
    int mean;
} op_rec;

typedef struct group {
    int nranks, rank;
    int have_comm;
    MPI_Comm comm;
    int join_fail;
    op_rec *ops; /* op t (ticket t) at ops[t - 1] */
    size_t nops, cap;
    size_t completed; /* ops[0 .. completed - 1] are done */
} group;

/* Every group stays reachable here until it is freed, including one left
 * with operations in flight by an abort (MPI forbids freeing those). */
#define MAX_GROUPS 16
static group *groups[MAX_GROUPS];

static int world_rank(void)
{
    int inited = 0, r = 0;
    MPI_Initialized(&inited);
    if (inited)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static int env_names_rank(const char *name, int rank)
{
    const char *v = getenv(name);
    return v && *v && atoi(v) == rank;
}

static dla_status probe(void *dev)
{
    (void)dev;
    int r = world_rank();
    if (env_names_rank("DLA_TESTCOLL_PROBE_FAIL", r))
        return host->error(DLA_ERR_UNSUPPORTED,
                           "testcoll: no transport on rank %d (DLA_TESTCOLL_PROBE_FAIL)", r);
    return DLA_OK;
}

static dla_status make_id(void *dev, void *id, size_t cap, size_t *bytes)
{
    (void)dev;
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned v[4] = {0x4c4f4354u /* "TCOL" */, (unsigned)getpid(), (unsigned)ts.tv_nsec,
                     ++counter};
    if (cap < sizeof v)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: coll_id: %zu bytes of room", cap);
    memcpy(id, v, sizeof v);
    *bytes = sizeof v;
    return DLA_OK;
}

static void group_free(group *g)
{
    for (int i = 0; i < MAX_GROUPS; i++)
        if (groups[i] == g)
            groups[i] = NULL;
    if (g->have_comm)
        MPI_Comm_free(&g->comm);
    free(g->ops);
    free(g);
}

static dla_status join(void *dev, const void *id, size_t bytes, int32_t nranks, int32_t rank,
                       void **out)
{
    (void)dev;
    *out = NULL;
    if (bytes != 16)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: coll_join: an id of %zu bytes",
                           bytes);
    group *g = calloc(1, sizeof *g);
    if (!g)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "testcoll: coll_join: out of memory");
    g->nranks = nranks;
    g->rank = rank;
    if (nranks > 1) {
        int inited = 0, size = 0, me = -1;
        MPI_Initialized(&inited);
        if (!inited) {
            free(g);
            return host->error(DLA_ERR_STATE, "testcoll: a group of %d without MPI", nranks);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &g->comm);
        g->have_comm = 1;
        MPI_Comm_size(g->comm, &size);
        MPI_Comm_rank(g->comm, &me);
        unsigned char *ids = malloc((size_t)size * 16);
        int same = ids != NULL;
        if (ids) {
            MPI_Allgather(id, 16, MPI_BYTE, ids, 16, MPI_BYTE, g->comm);
            for (int r = 0; r < size; r++)
                same &= memcmp(ids + (size_t)r * 16, id, 16) == 0;
            free(ids);
        }
        if (size != nranks || me != rank || !same) {
            group_free(g);
            return host->error(DLA_ERR_STATE,
                               "testcoll: coll_join: rank %d of %d in a world where it is %d of %d%s",
                               rank, nranks, me, size, same ? "" : ", or with another rank's id");
        }
    }
    g->join_fail = env_names_rank("DLA_TESTCOLL_JOIN_FAIL", world_rank());
    for (int i = 0; i < MAX_GROUPS; i++)
        if (!groups[i]) {
            groups[i] = g;
            host->log(DLA_LOG_INFO, "joined a group of %d as rank %d", nranks, rank);
            *out = g;
            return DLA_OK;
        }
    group_free(g);
    return host->error(DLA_ERR_STATE, "testcoll: more than %d groups", MAX_GROUPS);
}

static size_t elsize(dla_dtype t)
{
    return t == DLA_F64 ? 8 : (t == DLA_U8 || t == DLA_BOOL) ? 1 : 4;
}

/* A new operation record (its ticket is nops after); NULL when out of
 * memory. */
static op_rec *add_op(group *g)
{
    if (g->nops == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        op_rec *ops = realloc(g->ops, cap * sizeof *ops);
        if (!ops)
            return NULL;
        g->ops = ops;
        g->cap = cap;
    }
    op_rec *o = &g->ops[g->nops++];
    memset(o, 0, sizeof *o);
    return o;
}

/* The op as posted: on a group of one there is nothing to exchange. */
static dla_status posted(group *g, op_rec *o, int rc, const char *what, uint64_t *ticket)
{
    if (rc != MPI_SUCCESS) {
        g->nops--;
        return host->error(DLA_ERR_DEVICE, "testcoll: %s: MPI error %d", what, rc);
    }
    o->active = g->nranks > 1;
    *ticket = g->nops;
    return DLA_OK;
}

static dla_status allreduce(void *dev, void *grp, dla_mem mem, size_t off, size_t count,
                            dla_dtype dtype, dla_reduce_op op, uint64_t *ticket)
{
    (void)dev;
    group *g = grp;
    MPI_Datatype type = dtype == DLA_F32 ? MPI_FLOAT : dtype == DLA_F64 ? MPI_DOUBLE
                        : dtype == DLA_I32 ? MPI_INT : MPI_UNSIGNED_CHAR;
    MPI_Op mop = op == DLA_REDUCE_MAX ? MPI_MAX : op == DLA_REDUCE_MIN ? MPI_MIN : MPI_SUM;
    int mean = op == DLA_REDUCE_MEAN;
    if (op != DLA_REDUCE_SUM && op != DLA_REDUCE_MEAN && op != DLA_REDUCE_MAX &&
        op != DLA_REDUCE_MIN)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: allreduce: op %d", (int)op);
    if (mean && dtype != DLA_F32 && dtype != DLA_F64)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: allreduce: a mean of integers");
    unsigned char *buf = dla_testmem_data(mem, off, count * elsize(dtype));
    if (!buf || count > 0x7fffffff)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: allreduce: %zu elements at %zu "
                           "are not in the slot", count, off);
    op_rec *o = add_op(g);
    if (!o)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "testcoll: allreduce: out of memory");
    *o = (op_rec){.buf = buf, .count = count, .dtype = dtype, .mean = mean && g->nranks > 1};
    int rc = MPI_SUCCESS;
    if (g->nranks > 1)
        rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, type, mop, g->comm, &o->req);
    host->log(DLA_LOG_INFO, "allreduce of %zu elements", count);
    return posted(g, o, rc, "allreduce", ticket);
}

static dla_status broadcast(void *dev, void *grp, dla_mem mem, size_t off, size_t bytes,
                            int32_t root, uint64_t *ticket)
{
    (void)dev;
    group *g = grp;
    unsigned char *buf = dla_testmem_data(mem, off, bytes);
    if (!buf || bytes > 0x7fffffff)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: broadcast: %zu bytes at %zu are "
                           "not in the slot", bytes, off);
    op_rec *o = add_op(g);
    if (!o)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "testcoll: broadcast: out of memory");
    int rc = MPI_SUCCESS;
    if (g->nranks > 1)
        rc = MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, g->comm, &o->req);
    host->log(DLA_LOG_INFO, "broadcast of %zu bytes from %d", bytes, root);
    return posted(g, o, rc, "broadcast", ticket);
}

static dla_status allgather(void *dev, void *grp, dla_mem send, size_t soff, size_t bytes,
                            dla_mem recv, size_t roff, uint64_t *ticket)
{
    (void)dev;
    group *g = grp;
    unsigned char *s = dla_testmem_data(send, soff, bytes);
    unsigned char *r = dla_testmem_data(recv, roff, bytes * (size_t)g->nranks);
    if (!s || !r || bytes > 0x7fffffff)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: allgather: %zu bytes are not in "
                           "the slots", bytes);
    op_rec *o = add_op(g);
    if (!o)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "testcoll: allgather: out of memory");
    int rc = MPI_SUCCESS;
    if (g->nranks > 1)
        rc = MPI_Iallgather(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, g->comm, &o->req);
    else
        memcpy(r, s, bytes);
    host->log(DLA_LOG_INFO, "allgather of %zu bytes", bytes);
    return posted(g, o, rc, "allgather", ticket);
}

/* Completes what has arrived, in order. */
static dla_status progress(group *g)
{
    for (size_t i = g->completed; i < g->nops; i++) {
        op_rec *o = &g->ops[i];
        if (o->active) {
            int flag = 0;
            if (MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return host->error(DLA_ERR_DEVICE, "testcoll: MPI_Test failed");
            if (!flag)
                continue;
            o->active = 0;
            if (o->mean && o->dtype == DLA_F32)
                for (size_t k = 0; k < o->count; k++)
                    ((float *)o->buf)[k] /= (float)g->nranks;
            else if (o->mean)
                for (size_t k = 0; k < o->count; k++)
                    ((double *)o->buf)[k] /= (double)g->nranks;
        }
    }
    while (g->completed < g->nops && !g->ops[g->completed].active)
        g->completed++;
    return DLA_OK;
}

static dla_status test(void *dev, void *grp, uint64_t ticket, int *done)
{
    (void)dev;
    group *g = grp;
    *done = 0;
    if (g->join_fail)
        return host->error(DLA_ERR_DEVICE, "testcoll: the join of rank %d failed "
                           "(DLA_TESTCOLL_JOIN_FAIL)", world_rank());
    if (ticket > g->nops)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "testcoll: coll_test: ticket %llu of %zu",
                           (unsigned long long)ticket, g->nops);
    dla_status st = progress(g);
    if (st == DLA_OK)
        *done = g->completed >= ticket;
    return st;
}

static void leave(void *dev, void *grp, int32_t abort_now)
{
    (void)dev;
    group *g = grp;
    if (!g)
        return;
    for (size_t i = g->completed; i < g->nops; i++)
        if (g->ops[i].active) {
            if (abort_now)
                return; /* in flight: kept (reachable in groups[]) */
            MPI_Wait(&g->ops[i].req, MPI_STATUS_IGNORE);
            g->ops[i].active = 0;
        }
    group_free(g);
}

void dla_testmem_coll_fill(const dla_plugin_host *h, dla_plugin *t)
{
    host = h;
    t->abi_minor = 6;
    t->coll_probe = probe;
    t->coll_id = make_id;
    t->coll_join = join;
    t->coll_allreduce = allreduce;
    t->coll_broadcast = broadcast;
    t->coll_allgather = allgather;
    t->coll_test = test;
    t->coll_leave = leave;
}

/*
 * coll.c - collectives among processes over NCCL (plugin ABI 1.6 coll_*).
 *
 * NCCL is opened with dlopen on first use (libnccl.so.2: the loader's
 * search, $DLACCEL_CUDA_LIBDIR, the toolkit's folder), as cuBLAS and cuDNN
 * are, so the plugin loads on a machine without it and the core then
 * reduces cuda tensors through the host. A group is one NCCL communicator,
 * made non-blocking (ncclConfig_t.blocking = 0) so that its join and its
 * failures are polled by the core under its collective timeouts
 * (ncclCommGetAsyncError) rather than hanging inside NCCL. The operations
 * are enqueued on the device's stream, after the kernels that made the
 * gradients and before those that read them; an event after each is its
 * ticket's completion.
 *
 * Built only where the toolkit has nccl.h; without it the coll_* members
 * stay NULL.
 */
#define _GNU_SOURCE /* secure_getenv; nanosleep, clock_gettime */
#include "plugins/cuda/cu.h"
#include "plugins/cuda/libs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<nccl.h>)
#define DLA_CU_HAVE_NCCL 1
#endif
#endif

#ifdef DLA_CU_HAVE_NCCL
#include <nccl.h>

typedef struct nccl_fns {
    __typeof__(&ncclGetVersion) get_version;
    __typeof__(&ncclGetUniqueId) get_unique_id;
    __typeof__(&ncclCommInitRankConfig) init_rank_config;
    __typeof__(&ncclCommGetAsyncError) async_error;
    __typeof__(&ncclCommDestroy) destroy;
    __typeof__(&ncclCommAbort) abort_comm;
    __typeof__(&ncclAllReduce) allreduce;
    __typeof__(&ncclBroadcast) broadcast;
    __typeof__(&ncclAllGather) allgather;
    __typeof__(&ncclGetErrorString) error_string;
    __typeof__(&ncclGetLastError) last_error;
} nccl_fns;

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static nccl_fns nccl;
static int nccl_ok, nccl_version;
static char nccl_why[512];

static void nccl_load(void)
{
    static const char *const names[] = {"libnccl.so.2", "libnccl.so"};
    void *lib = dla__cu_open_lib(names, 2, nccl_why, sizeof nccl_why);
    if (!lib)
        return;
    const char *n = "libnccl.so.2";
    int ok = 1;
#define S(field, name) ok = ok && dla__cu_sym(lib, n, name, &nccl.field, nccl_why, sizeof nccl_why)
    S(get_version, "ncclGetVersion");
    S(get_unique_id, "ncclGetUniqueId");
    S(init_rank_config, "ncclCommInitRankConfig");
    S(async_error, "ncclCommGetAsyncError");
    S(destroy, "ncclCommDestroy");
    S(abort_comm, "ncclCommAbort");
    S(allreduce, "ncclAllReduce");
    S(broadcast, "ncclBroadcast");
    S(allgather, "ncclAllGather");
    S(error_string, "ncclGetErrorString");
    S(last_error, "ncclGetLastError");
#undef S
    if (!ok)
        return; /* kept open: a second dlopen would find the same library */
    nccl.get_version(&nccl_version);
    nccl_ok = 1;
    dla__cu_host->log(DLA_LOG_INFO, "NCCL %d.%d.%d loaded for the collectives", nccl_version / 10000,
                      nccl_version / 100 % 100, nccl_version % 100);
}

/* An operation's completion, by ticket. */
typedef struct op_event {
    uint64_t ticket;
    cudaEvent_t ev;
} op_event;

typedef struct cu_group {
    dla__cu_device *d;
    ncclComm_t comm;
    int nranks, rank;
    uint64_t issued;
    op_event *ev; /* tickets not yet seen complete, oldest first */
    size_t nev, cap;
} cu_group;

/* "cuda <what>: NCCL <message> (<last error>)", as DLA_ERR_DEVICE. */
static dla_status nccl_fail(cu_group *g, ncclResult_t r, const char *what)
{
    const char *last = g && g->comm ? nccl.last_error(g->comm) : nccl.last_error(NULL);
    return dla__cu_host->error(DLA_ERR_DEVICE, "cuda %s: NCCL: %s%s%s%s", what,
                               nccl.error_string(r), last && *last ? " (" : "",
                               last && *last ? last : "", last && *last ? ")" : "");
}

/* How long settle polls, in seconds (0: without end): the core's
 * DLACCEL_COLLECTIVE_FAIL_AFTER, 10 x DLACCEL_COLLECTIVE_TIMEOUT (60 s)
 * unless it is set. A value that is no number keeps the default (the
 * core names it when it reads it). */
static double settle_limit(void)
{
    const char *t = secure_getenv("DLACCEL_COLLECTIVE_TIMEOUT"),
               *f = secure_getenv("DLACCEL_COLLECTIVE_FAIL_AFTER");
    double timeout = 60.0, v;
    char *end;
    if (t && *t && (v = strtod(t, &end), *end == '\0') && v > 0)
        timeout = v;
    if (f && *f && (v = strtod(f, &end), *end == '\0') && v >= 0)
        return v;
    return 10.0 * timeout;
}

/* A call that a non-blocking communicator may leave in progress: polled
 * until it is enqueued (the connection setup of a first operation, which
 * needs every peer). The core's watch does not cover a device collective
 * before the plugin returns, so a peer that died or hangs before the
 * first operation would keep this loop going: it gives up after
 * settle_limit (*expired set, r still ncclInProgress), and the core then
 * leaves the group with an abort. */
static ncclResult_t settle(cu_group *g, ncclResult_t r, int *expired, double *limit)
{
    struct timespec pause = {0, 20000}, t0, now;
    *expired = 0;
    *limit = r == ncclInProgress ? settle_limit() : 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (r == ncclInProgress) {
        ncclResult_t a = ncclSuccess;
        if (nccl.async_error(g->comm, &a) != ncclSuccess)
            return ncclInternalError;
        r = a;
        if (r != ncclInProgress)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (*limit > 0 &&
            (double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec) > *limit) {
            *expired = 1;
            break;
        }
        nanosleep(&pause, NULL);
    }
    return r;
}

static dla_status coll_probe(void *dev)
{
    (void)dev;
    pthread_once(&nccl_once, nccl_load);
    if (!nccl_ok)
        return dla__cu_host->error(DLA_ERR_UNSUPPORTED, "cuda: NCCL: %s", nccl_why);
    return DLA_OK;
}

static dla_status coll_id(void *dev, void *id, size_t cap, size_t *bytes)
{
    dla__cu_device *d = dev;
    dla_status st = coll_probe(dev);
    if (st == DLA_OK)
        st = dla__cu_enter(d, "coll_id");
    if (st != DLA_OK)
        return st;
    ncclUniqueId uid;
    if (cap < sizeof uid)
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT, "cuda coll_id: %zu bytes of room for "
                                   "NCCL's %zu", cap, sizeof uid);
    ncclResult_t r = nccl.get_unique_id(&uid);
    if (r != ncclSuccess)
        return nccl_fail(NULL, r, "coll_id");
    memcpy(id, &uid, sizeof uid);
    *bytes = sizeof uid;
    return DLA_OK;
}

static dla_status coll_join(void *dev, const void *id, size_t bytes, int32_t nranks, int32_t rank,
                            void **group)
{
    dla__cu_device *d = dev;
    *group = NULL;
    dla_status st = coll_probe(dev);
    if (st == DLA_OK)
        st = dla__cu_enter(d, "coll_join");
    if (st != DLA_OK)
        return st;
    ncclUniqueId uid;
    if (bytes != sizeof uid)
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT, "cuda coll_join: an id of %zu bytes "
                                   "where NCCL's has %zu", bytes, sizeof uid);
    memcpy(&uid, id, sizeof uid);
    cu_group *g = dla__cu_host->alloc(sizeof *g, 0);
    if (!g)
        return dla__cu_host->error(DLA_ERR_OUT_OF_MEMORY, "cuda coll_join: out of host memory");
    memset(g, 0, sizeof *g);
    g->d = d;
    g->nranks = nranks;
    g->rank = rank;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = nccl.init_rank_config(&g->comm, nranks, uid, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = nccl_fail(g, r, "coll_join");
        if (g->comm)
            nccl.abort_comm(g->comm);
        dla__cu_host->free(g);
        return st;
    }
    *group = g;
    return DLA_OK;
}

/* After an operation went on the stream: its ticket and event. */
static dla_status issued(cu_group *g, const char *what, uint64_t *ticket)
{
    if (g->nev == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        op_event *ev = dla__cu_host->alloc(cap * sizeof *ev, 0);
        if (!ev)
            return dla__cu_host->error(DLA_ERR_OUT_OF_MEMORY, "cuda %s: out of host memory", what);
        if (g->nev)
            memcpy(ev, g->ev, g->nev * sizeof *ev);
        dla__cu_host->free(g->ev);
        g->ev = ev;
        g->cap = cap;
    }
    op_event *e = &g->ev[g->nev];
    dla_status st = dla__cu_err(cudaEventCreateWithFlags(&e->ev, cudaEventDisableTiming), what);
    if (st == DLA_OK && (st = dla__cu_err(cudaEventRecord(e->ev, g->d->stream), what)) != DLA_OK)
        cudaEventDestroy(e->ev);
    if (st != DLA_OK)
        return st;
    e->ticket = ++g->issued;
    g->nev++;
    *ticket = e->ticket;
    return DLA_OK;
}

/* The end of an operation's enqueue: r settled, then its ticket. */
static dla_status enqueued(cu_group *g, ncclResult_t r, const char *what, uint64_t *ticket)
{
    int expired;
    double limit;
    r = settle(g, r, &expired, &limit);
    if (expired)
        return dla__cu_host->error(DLA_ERR_DEVICE,
                                   "cuda %s: NCCL had not enqueued it after %g s "
                                   "(DLACCEL_COLLECTIVE_FAIL_AFTER): a rank did not take part",
                                   what, limit);
    if (r != ncclSuccess)
        return nccl_fail(g, r, what);
    return issued(g, what, ticket);
}

static int nccl_type(dla_dtype t, ncclDataType_t *out)
{
    switch (t) {
    case DLA_F32: *out = ncclFloat32; return 1;
    case DLA_F64: *out = ncclFloat64; return 1;
    case DLA_I32: *out = ncclInt32; return 1;
    case DLA_U8:
    case DLA_BOOL: *out = ncclUint8; return 1;
    default: return 0;
    }
}

static dla_status coll_allreduce(void *dev, void *group, dla_mem mem, size_t offset_bytes,
                                 size_t count, dla_dtype dtype, dla_reduce_op op, uint64_t *ticket)
{
    cu_group *g = group;
    (void)dev;
    ncclDataType_t type;
    ncclRedOp_t rop;
    int is_float = dtype == DLA_F32 || dtype == DLA_F64;
    if (!nccl_type(dtype, &type))
        return dla__cu_host->error(DLA_ERR_DTYPE, "cuda coll_allreduce: dtype %d", (int)dtype);
    switch (op) {
    case DLA_REDUCE_SUM: rop = ncclSum; break;
    case DLA_REDUCE_MAX: rop = ncclMax; break;
    case DLA_REDUCE_MIN: rop = ncclMin; break;
    case DLA_REDUCE_MEAN:
        if (!is_float)
            return dla__cu_host->error(DLA_ERR_DTYPE, "cuda coll_allreduce: a mean of integers");
        rop = ncclAvg;
        break;
    default:
        return dla__cu_host->error(DLA_ERR_INVALID_ARGUMENT, "cuda coll_allreduce: op %d", (int)op);
    }
    dla_status st = dla__cu_enter(g->d, "coll_allreduce");
    if (st != DLA_OK)
        return st;
    char *p = dla__cu_ptr(mem) + offset_bytes;
    return enqueued(g, nccl.allreduce(p, p, count, type, rop, g->comm, g->d->stream),
                    "coll_allreduce", ticket);
}

static dla_status coll_broadcast(void *dev, void *group, dla_mem mem, size_t offset_bytes,
                                 size_t bytes, int32_t root, uint64_t *ticket)
{
    cu_group *g = group;
    (void)dev;
    dla_status st = dla__cu_enter(g->d, "coll_broadcast");
    if (st != DLA_OK)
        return st;
    char *p = dla__cu_ptr(mem) + offset_bytes;
    return enqueued(g, nccl.broadcast(p, p, bytes, ncclUint8, root, g->comm, g->d->stream),
                    "coll_broadcast", ticket);
}

static dla_status coll_allgather(void *dev, void *group, dla_mem send, size_t send_offset,
                                 size_t bytes, dla_mem recv, size_t recv_offset, uint64_t *ticket)
{
    cu_group *g = group;
    (void)dev;
    dla_status st = dla__cu_enter(g->d, "coll_allgather");
    if (st != DLA_OK)
        return st;
    return enqueued(g, nccl.allgather(dla__cu_ptr(send) + send_offset,
                                      dla__cu_ptr(recv) + recv_offset, bytes, ncclUint8, g->comm,
                                      g->d->stream),
                    "coll_allgather", ticket);
}

static dla_status coll_test(void *dev, void *group, uint64_t ticket, int *done)
{
    cu_group *g = group;
    (void)dev;
    *done = 0;
    ncclResult_t a = ncclSuccess;
    ncclResult_t r = nccl.async_error(g->comm, &a);
    if (r != ncclSuccess)
        return nccl_fail(g, r, "coll_test");
    if (a != ncclSuccess && a != ncclInProgress)
        return nccl_fail(g, a, ticket ? "coll_test" : "coll_join");
    if (ticket == 0) {
        *done = a == ncclSuccess;
        return DLA_OK;
    }
    /* Events complete in stream order: drop those seen complete, oldest
     * first, until ticket's. */
    while (g->nev && g->ev[0].ticket <= ticket) {
        cudaError_t e = cudaEventQuery(g->ev[0].ev);
        if (e == cudaErrorNotReady) {
            /* Not an error, but the runtime's per-thread error variable
             * may keep it (HIP's does; PyTorch clears it after every
             * query): left there, the next launch's cudaGetLastError
             * (dla__cu_launched) would fail that kernel with "device not
             * ready". */
            (void)cudaGetLastError();
            return DLA_OK;
        }
        if (e != cudaSuccess)
            return dla__cu_err(e, "coll_test");
        cudaEventDestroy(g->ev[0].ev);
        memmove(g->ev, g->ev + 1, (g->nev - 1) * sizeof *g->ev);
        g->nev--;
    }
    *done = 1;
    return DLA_OK;
}

static void coll_leave(void *dev, void *group, int32_t abort_now)
{
    cu_group *g = group;
    (void)dev;
    if (!g)
        return;
    if (dla__cu_enter(g->d, "coll_leave") == DLA_OK && !abort_now)
        cudaStreamSynchronize(g->d->stream);
    for (size_t i = 0; i < g->nev; i++)
        cudaEventDestroy(g->ev[i].ev);
    if (abort_now)
        nccl.abort_comm(g->comm);
    else
        nccl.destroy(g->comm);
    dla__cu_host->free(g->ev);
    dla__cu_host->free(g);
}

void dla__cu_coll_table(dla_plugin *t)
{
    t->coll_probe = coll_probe;
    t->coll_id = coll_id;
    t->coll_join = coll_join;
    t->coll_allreduce = coll_allreduce;
    t->coll_broadcast = coll_broadcast;
    t->coll_allgather = coll_allgather;
    t->coll_test = coll_test;
    t->coll_leave = coll_leave;
}

#else /* no nccl.h */

void dla__cu_coll_table(dla_plugin *t)
{
    (void)t; /* the core reduces cuda tensors through the host */
}

#endif

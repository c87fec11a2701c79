/*
 * plugins/mpi/mpi.c - the communicator plugin on MPI (dlaccel/comm_plugin.h).
 *
 * Only this library links MPI, so a program that never runs in parallel
 * never loads it. Collectives run on a duplicate of MPI_COMM_WORLD and the
 * point-to-point messages (DataQueue, the core's "where are you" queries)
 * on another, so neither meets the program's own MPI traffic. Both return
 * errors (MPI_ERRORS_RETURN) instead of aborting, so the core can say what
 * failed. Every operation is non-blocking; the core polls with test().
 */
#include <dlaccel/comm_plugin.h>

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* The ABI minor this build answers: tests build it as 1.0 too, to check
 * that the core falls back to blocking reductions with an older plugin. */
#ifndef DLA_MPI_ABI_MINOR
#define DLA_MPI_ABI_MINOR DLA_COMM_ABI_MINOR
#endif

static const dla_plugin_host *host;

typedef struct mpi_ctx {
    /* async: the reductions that overlap computation (DLA_COMM_ASYNC). */
    MPI_Comm coll, p2p, local, async;
    int initialized_here;
} mpi_ctx;

/* The most bytes one MPI call moves. MPI's counts are int, so a larger
 * buffer (a gradient bucket or a broadcast network over 2 GiB) goes as
 * several calls of at most this many bytes each, started one after the
 * other on the same communicator, which MPI matches in order on every
 * rank. A power of two, so that a part always holds whole elements. The
 * tests build the plugin with a small one, to run the split on small
 * tensors (tests/spmd.sh). */
#ifndef DLA_MPI_PART_BYTES
#define DLA_MPI_PART_BYTES ((size_t)1 << 30)
#endif

struct dla_comm_req_s {
    int n;
    MPI_Request r[]; /* one a part */
};

/* "mpi <what>: <MPI's own words>" through the host. */
static dla_status mpi_fail(int rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    return host->error(DLA_ERR_DEVICE, "mpi %s: %s", what, text);
}

static size_t parts_of(size_t bytes)
{
    return bytes > DLA_MPI_PART_BYTES ? (bytes - 1) / DLA_MPI_PART_BYTES + 1 : 1;
}

static dla_status req_new(dla_comm_req *out, size_t parts)
{
    /* parts is at most SIZE_MAX / 2^30 (a few billion on 64 bits): more
     * request slots than memory allows is an allocation failure, reported. */
    if (parts > (size_t)INT_MAX)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "mpi: %zu parts is too many for a request",
                           parts);
    struct dla_comm_req_s *q = host->alloc(sizeof *q + parts * sizeof q->r[0], 0);
    if (!q)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "mpi: out of memory for a request");
    q->n = (int)parts;
    for (size_t i = 0; i < parts; i++)
        q->r[i] = MPI_REQUEST_NULL;
    *out = q;
    return DLA_OK;
}

/* Ends a request whose part `failed` could not start: the parts started
 * before it cannot be cancelled (MPI has no cancel for collectives), so it
 * waits for them, which ends at once when every rank failed the same way
 * (the core checked beforehand that all pass the same sizes). */
static dla_status req_fail(dla_comm_req *req, int failed, int rc, const char *what)
{
    struct dla_comm_req_s *q = *req;
    if (failed > 0)
        MPI_Waitall(failed, q->r, MPI_STATUSES_IGNORE);
    host->free(q);
    *req = NULL;
    return mpi_fail(rc, what);
}

/* Runs `call` once for each part of a buffer of `bytes`, with `off` the
 * part's first byte, `len` its bytes (an int) and `r_` its request, into a
 * new request; on failure ends it (req_fail). A blocking call leaves the
 * request MPI_REQUEST_NULL, which tests as done. */
#define FOR_PARTS(what, bytes, call)                                           \
    do {                                                                       \
        size_t total_ = (bytes), parts_ = parts_of(total_);                    \
        dla_status st_ = req_new(req, parts_);                                 \
        if (st_ != DLA_OK)                                                     \
            return st_;                                                        \
        for (size_t k_ = 0; k_ < parts_; k_++) {                               \
            size_t off = k_ * DLA_MPI_PART_BYTES;                              \
            int len = (int)(total_ - off < DLA_MPI_PART_BYTES                  \
                                ? total_ - off : DLA_MPI_PART_BYTES);          \
            MPI_Request *r_ = &(*req)->r[k_];                                  \
            (void)off;                                                         \
            (void)len;                                                         \
            (void)r_;                                                          \
            int rc_ = (call);                                                  \
            if (rc_ != MPI_SUCCESS)                                            \
                return req_fail(req, (int)k_, rc_, what);                      \
        }                                                                      \
        return DLA_OK;                                                         \
    } while (0)

/* One operation that is never split (a barrier, a message). */
#define START(what, call) FOR_PARTS(what, 0, call)

static dla_status mpi_init(void **ctx_out, dla_comm_world *w)
{
    int flag = 0, rc;
    MPI_Finalized(&flag);
    if (flag)
        return host->error(DLA_ERR_STATE, "mpi init: MPI was already finalized by the program");
    mpi_ctx *c = host->alloc(sizeof *c, 0);
    if (!c)
        return host->error(DLA_ERR_OUT_OF_MEMORY, "mpi init: out of memory");
    memset(c, 0, sizeof *c);
    MPI_Initialized(&flag);
    if (!flag) {
        /* The core calls MPI from one thread at a time, but the program
         * may have others: FUNNELED is what that needs and what Open MPI
         * gives without cost. */
        int provided = 0;
        if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS) {
            host->free(c);
            return mpi_fail(rc, "init (MPI_Init_thread)");
        }
        c->initialized_here = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->coll)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->p2p)) != MPI_SUCCESS ||
        (rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->async)) != MPI_SUCCESS ||
        (rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                                  &c->local)) != MPI_SUCCESS) {
        dla_status st = mpi_fail(rc, "init (communicators)");
        if (c->initialized_here)
            MPI_Finalize();
        host->free(c);
        return st;
    }
    MPI_Comm_set_errhandler(c->coll, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(c->p2p, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(c->async, MPI_ERRORS_RETURN);
    int rank, size, lrank, lsize;
    MPI_Comm_rank(c->coll, &rank);
    MPI_Comm_size(c->coll, &size);
    MPI_Comm_rank(c->local, &lrank);
    MPI_Comm_size(c->local, &lsize);
    w->rank = rank;
    w->size = size;
    w->local_rank = lrank;
    w->local_size = lsize;
    w->initialized_here = c->initialized_here;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    /* The first line of the library's string ("Open MPI v4.1.4, package..."). */
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    snprintf(w->description, sizeof w->description, "%.100s (MPI %d.%d)", lib, major, minor);
    *ctx_out = c;
    return DLA_OK;
}

static void mpi_finalize(void *ctx)
{
    mpi_ctx *c = ctx;
    int flag = 0;
    MPI_Finalized(&flag);
    if (!flag) {
        MPI_Comm_free(&c->coll);
        MPI_Comm_free(&c->p2p);
        MPI_Comm_free(&c->async);
        MPI_Comm_free(&c->local);
        if (c->initialized_here)
            MPI_Finalize();
    }
    host->free(c);
}

static void mpi_abort(void *ctx, int code)
{
    (void)ctx;
    MPI_Abort(MPI_COMM_WORLD, code);
}

/* The MPI type of dtype and its size in bytes; 0 when MPI has none here. */
static size_t mpi_type(dla_dtype dtype, MPI_Datatype *t)
{
    switch (dtype) {
    case DLA_F32: *t = MPI_FLOAT; return 4;
    case DLA_F64: *t = MPI_DOUBLE; return 8;
    case DLA_I32: *t = MPI_INT32_T; return 4;
    case DLA_U8:
    case DLA_BOOL: *t = MPI_UINT8_T; return 1;
    default: return 0;
    }
}

static dla_status mpi_allreduce(void *ctx, void *buf, size_t count, dla_dtype dtype,
                                dla_reduce_op op, uint32_t flags, dla_comm_req *req)
{
    mpi_ctx *c = ctx;
    MPI_Datatype t;
    size_t size = mpi_type(dtype, &t);
    if (!size)
        return host->error(DLA_ERR_DTYPE, "mpi allreduce: dtype %d is not supported", (int)dtype);
    MPI_Op o = op == DLA_REDUCE_SUM ? MPI_SUM : op == DLA_REDUCE_MAX ? MPI_MAX : MPI_MIN;
    if (dtype == DLA_BOOL)
        o = op == DLA_REDUCE_MIN ? MPI_LAND : MPI_LOR;
    char *p = buf;
    /* Parts are whole elements: DLA_MPI_PART_BYTES is a multiple of 8. */
#if DLA_MPI_ABI_MINOR >= 1
    if (flags & DLA_COMM_ASYNC)
        FOR_PARTS("allreduce", count * size,
                  MPI_Iallreduce(MPI_IN_PLACE, p + off, len / (int)size, t, o, c->async, r_));
#endif
    if (flags & DLA_COMM_MAY_BLOCK)
        FOR_PARTS("allreduce", count * size,
                  MPI_Allreduce(MPI_IN_PLACE, p + off, len / (int)size, t, o, c->coll));
    FOR_PARTS("allreduce", count * size,
              MPI_Iallreduce(MPI_IN_PLACE, p + off, len / (int)size, t, o, c->coll, r_));
}

static dla_status mpi_broadcast(void *ctx, void *buf, size_t bytes, int root, uint32_t flags,
                               dla_comm_req *req)
{
    mpi_ctx *c = ctx;
    char *p = buf;
    if (flags & DLA_COMM_MAY_BLOCK)
        FOR_PARTS("broadcast", bytes, MPI_Bcast(p + off, len, MPI_BYTE, root, c->coll));
    FOR_PARTS("broadcast", bytes, MPI_Ibcast(p + off, len, MPI_BYTE, root, c->coll, r_));
}

/* One part of an allgather: len bytes from send + off into recv + off +
 * rank * bytes for every rank. The receive type is len bytes spread
 * `bytes` apart (a contiguous block resized to that extent), so each
 * rank's part lands in that rank's slot. MPI keeps a type that a started
 * operation uses until the operation ends, so it is freed at once. */
static int allgather_part(mpi_ctx *c, const char *send, size_t bytes, char *recv, size_t off,
                          int len, MPI_Request *r)
{
    if (bytes <= DLA_MPI_PART_BYTES)
        return r ? MPI_Iallgather(send, len, MPI_BYTE, recv, len, MPI_BYTE, c->coll, r)
                 : MPI_Allgather(send, len, MPI_BYTE, recv, len, MPI_BYTE, c->coll);
    MPI_Datatype block, spread;
    int rc = MPI_Type_contiguous(len, MPI_BYTE, &block);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Type_create_resized(block, 0, (MPI_Aint)bytes, &spread);
    MPI_Type_free(&block);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((rc = MPI_Type_commit(&spread)) == MPI_SUCCESS)
        rc = r ? MPI_Iallgather(send + off, len, MPI_BYTE, recv + off, 1, spread, c->coll, r)
               : MPI_Allgather(send + off, len, MPI_BYTE, recv + off, 1, spread, c->coll);
    MPI_Type_free(&spread);
    return rc;
}

static dla_status mpi_allgather(void *ctx, const void *send, size_t bytes, void *recv,
                                uint32_t flags, dla_comm_req *req)
{
    mpi_ctx *c = ctx;
    if (flags & DLA_COMM_MAY_BLOCK)
        FOR_PARTS("allgather", bytes, allgather_part(c, send, bytes, recv, off, len, NULL));
    FOR_PARTS("allgather", bytes, allgather_part(c, send, bytes, recv, off, len, r_));
}

static dla_status mpi_barrier(void *ctx, dla_comm_req *req)
{
    mpi_ctx *c = ctx;
    START("barrier", MPI_Ibarrier(c->coll, r_));
}

static dla_status mpi_test(void *ctx, dla_comm_req req, int *done)
{
    (void)ctx;
    int flag = 0;
    int rc = MPI_Testall(req->n, req->r, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        *done = 1;
        host->free(req);
        return mpi_fail(rc, "test");
    }
    *done = flag;
    if (flag)
        host->free(req);
    return DLA_OK;
}

static dla_status mpi_send(void *ctx, int dest, int tag, const void *buf, size_t bytes,
                           dla_comm_req *req)
{
    mpi_ctx *c = ctx;
    if (bytes > (size_t)INT_MAX)
        return host->error(DLA_ERR_INVALID_ARGUMENT, "mpi send: %zu bytes is too many", bytes);
    START("send", MPI_Isend(buf, (int)bytes, MPI_BYTE, dest, tag, c->p2p, r_));
}

static dla_status mpi_probe(void *ctx, int tag, int *found, int *from, size_t *bytes)
{
    mpi_ctx *c = ctx;
    MPI_Status s;
    int flag = 0, rc = MPI_Iprobe(MPI_ANY_SOURCE, tag, c->p2p, &flag, &s);
    *found = 0;
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "probe");
    if (flag) {
        int n = 0;
        MPI_Get_count(&s, MPI_BYTE, &n);
        *found = 1;
        *from = s.MPI_SOURCE;
        *bytes = (size_t)n;
    }
    return DLA_OK;
}

static dla_status mpi_recv(void *ctx, int from, int tag, void *buf, size_t bytes)
{
    mpi_ctx *c = ctx;
    int rc = MPI_Recv(buf, (int)bytes, MPI_BYTE, from, tag, c->p2p, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? DLA_OK : mpi_fail(rc, "recv");
}

static const dla_comm_plugin table = {
    .struct_size = sizeof table,
    .abi_major = DLA_COMM_ABI_MAJOR,
    .abi_minor = DLA_MPI_ABI_MINOR,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .abort = mpi_abort,
    .allreduce = mpi_allreduce,
    .broadcast = mpi_broadcast,
    .allgather = mpi_allgather,
    .barrier = mpi_barrier,
    .test = mpi_test,
    .send = mpi_send,
    .probe = mpi_probe,
    .recv = mpi_recv,
};

DLA_PLUGIN_EXPORT dla_status dlaccel_comm_plugin_init(const dla_plugin_host *h,
                                                      const dla_comm_plugin **out)
{
    host = h;
    *out = &table;
    return DLA_OK;
}

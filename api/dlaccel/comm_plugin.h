/*
 * dlaccel/comm_plugin.h - the communicator plugin ABI (the spmd world).
 *
 * The only header a communicator plugin includes. libdlaccel never links an
 * MPI library: the collectives of dlaccel/parallel.h reach one through a
 * plugin found by a JSON manifest in the "comm" subfolder of each plugin
 * folder (DLACCEL_PLUGIN_PATH's folders, then the installed one), with the
 * same fields as a device plugin's (docs/plugins.md; device_types unused),
 * and loaded on first use only in a process that a launcher started as one
 * of several (docs/parallel.md, "Collectives").
 *
 * A plugin exports dlaccel_comm_plugin_init and answers a table of
 * functions on HOST buffers: the core copies device tensors to the host and
 * back, checks the arguments agree across ranks, and waits itself. Every
 * collective and send is non-blocking: it returns a request that the core
 * polls with test(), so that a rank that waits too long can say which
 * ranks it waits for (timeouts are the core's, not the plugin's).
 *
 * Stability rules are the device ABI's (dlaccel/plugin.h): struct_size
 * first, members only appended, the host calls a member only when it lies
 * within the plugin's struct_size. A plugin never prints or exits (abort()
 * excepted, when asked): it returns a status and says why through
 * host->error() ("mpi allreduce: ...").
 *
 * Threads: the core calls the table from one thread at a time.
 */
#ifndef DLACCEL_COMM_PLUGIN_H
#define DLACCEL_COMM_PLUGIN_H

#include <dlaccel.h>
#include <dlaccel/plugin.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DLA_COMM_ABI_MAJOR 1
#define DLA_COMM_ABI_MINOR 1

/* An operation in flight, owned by the plugin until test() says it is done
 * (the plugin releases it then). */
typedef struct dla_comm_req_s *dla_comm_req;

/* A collective's flags. MAY_BLOCK: the core passes it once every rank is
 * known to be in the collective (the argument check passed), so the wait
 * is the transfer alone; the plugin may then complete the operation before
 * returning (its request is then already done), as a blocking call may be
 * faster (Open MPI's MPI_Iallreduce ran at about half of MPI_Allreduce's
 * speed at 64 MiB). The core's watchdog covers a transfer that never ends. */
#define DLA_COMM_MAY_BLOCK 1u
/* ABI 1.1, allreduce only: the core overlaps the operation with the
 * caller's computation and with other collectives (dla_allreduce_start):
 * the plugin starts it without blocking on a channel of its own, which only
 * such operations use (MPI: a third duplicate of the world's communicator),
 * so that collectives started meanwhile on the usual channel, whose order
 * depends on the program, not on when each rank polls, never meet it out
 * of order. The core starts them on every rank in the same order, and only
 * once every rank's arguments are known to agree. A 1.0 plugin is never
 * passed it: the core then runs the reduction at once, blocking. */
#define DLA_COMM_ASYNC 2u

/* What init says about the world. */
typedef struct dla_comm_world {
    size_t struct_size;
    int32_t rank, size;             /* in the world the plugin serves */
    int32_t local_rank, local_size; /* among the processes of this machine */
    /* 1 when init started the library (MPI_Init) and finalize will end it;
     * 0 when the program had already started it. */
    int32_t initialized_here;
    /* "Open MPI v4.1.4 ..." for logs and `dlaccel`. */
    char description[128];
    /* ---- fields above are ABI 1.0 ---- */
} dla_comm_world;

typedef struct dla_comm_plugin {
    size_t struct_size;
    /* The ABI the plugin speaks; the major must equal the host's. */
    uint32_t abi_major, abi_minor;

    /* Joins the world (initializing the library when the program has not)
     * and fills *world. *ctx is handed to every other member. */
    dla_status (*init)(void **ctx, dla_comm_world *world);
    /* Leaves: ends the library only when init started it. */
    void (*finalize)(void *ctx);
    /* Ends every process of the world with code (MPI_Abort); may return
     * when the plugin cannot. */
    void (*abort)(void *ctx, int code);

    /* Collectives on host buffers, the same call on every rank in the same
     * order. buf is reduced in place with op (DLA_REDUCE_SUM, MAX or MIN:
     * the core makes MEAN of SUM) on count elements of dtype (DLA_F32,
     * DLA_F64, DLA_I32, DLA_U8 and DLA_BOOL; for DLA_BOOL, MAX is "or"
     * and MIN "and"). */
    dla_status (*allreduce)(void *ctx, void *buf, size_t count, dla_dtype dtype,
                            dla_reduce_op op, uint32_t flags, dla_comm_req *req);
    /* (flags: DLA_COMM_MAY_BLOCK; DLA_COMM_ASYNC from ABI 1.1, above.) */
    /* bytes of root's buf into every other rank's buf. */
    dla_status (*broadcast)(void *ctx, void *buf, size_t bytes, int root, uint32_t flags,
                            dla_comm_req *req);
    /* bytes of each rank's send into recv at rank * bytes (recv holds
     * size * bytes; send may not overlap it). */
    dla_status (*allgather)(void *ctx, const void *send, size_t bytes, void *recv,
                            uint32_t flags, dla_comm_req *req);
    dla_status (*barrier)(void *ctx, dla_comm_req *req);
    /* Sets *done to 1 when req completed (and releases it), 0 when not yet.
     * Makes progress on every operation in flight. An error leaves req
     * released as well. */
    dla_status (*test)(void *ctx, dla_comm_req req, int *done);

    /* Point to point, on a channel of its own (not the program's MPI
     * traffic): tag is 0..32767. send does not wait for the receiver;
     * buf must stay valid until test() says the request is done. */
    dla_status (*send)(void *ctx, int dest, int tag, const void *buf, size_t bytes,
                       dla_comm_req *req);
    /* Whether a message with tag waits from any rank: *found, and then its
     * sender and size. Never waits. */
    dla_status (*probe)(void *ctx, int tag, int *found, int *from, size_t *bytes);
    /* Receives the message that probe just found (from, tag, bytes). */
    dla_status (*recv)(void *ctx, int from, int tag, void *buf, size_t bytes);
    /* ---- members above are ABI 1.0 ---- */
} dla_comm_plugin;

/* The one symbol a communicator plugin exports. host is valid until the
 * process ends; *out must stay valid as long. */
typedef dla_status (*dla_comm_plugin_init_fn)(const dla_plugin_host *host,
                                              const dla_comm_plugin **out);
#define DLA_COMM_PLUGIN_INIT_SYMBOL "dlaccel_comm_plugin_init"

#ifdef __cplusplus
}
#endif

#endif

/*
 * dlaccel/parallel.h - included by dlaccel.h; do not include it directly.
 *
 * Data-parallel training across processes (MATLAB's spmd world, gplus, gop
 * and DataQueue). Workers are MPI processes started by mpirun; libdlaccel
 * itself never links MPI: the collectives live in a communicator plugin
 * (plugins/mpi, found through a manifest in the "comm" subfolder of the
 * plugin folders, dlaccel/comm_plugin.h) loaded on first use, and only in a
 * process a launcher started as one of a job. A program started without
 * mpirun, or where no communicator plugin is installed (a warning says so
 * under mpirun), or with DLACCEL_COMM=single, is a world of one: rank 0 of
 * size 1, and every collective returns its input unchanged.
 *
 *     // spmd ... gplus(loss) ... end
 *     int r = dla_spmd_rank(), n = dla_spmd_size();
 *     dla_tensor *grads[K] = {...};
 *     dla_allreduce(K, grads, DLA_REDUCE_SUM);   // in place, the same on every rank
 *     bool all;
 *     dla_spmd_all(hasdata, &all);               // gop(@and, hasdata)
 *
 * Every collective is called by every rank with the same arguments (count,
 * dtypes, sizes; formats too for reductions and gathers: "CB" against "SB"
 * of the same sizes is refused, a broadcast keeps each rank's labels);
 * before moving data it checks that they agree and fails on
 * every rank with DLA_ERR_INVALID_ARGUMENT and a message naming the rank
 * and the tensor that differ (a rank whose own arguments are refused fails
 * every rank, naming it). A rank that waits on a collective longer than
 * DLACCEL_COLLECTIVE_TIMEOUT seconds (default 60) warns, naming the ranks
 * that are missing; past DLACCEL_COLLECTIVE_FAIL_AFTER seconds (default ten
 * timeouts, 0 never) it fails with DLA_ERR_STATE naming them, and every
 * later collective fails at once (the world is broken; MPI is then not
 * finalized at exit). A transfer that never ends once every rank is in it
 * (a rank died inside it) ends the process with status 1 at that time,
 * after logging why. Collectives are called from one thread at a time, and
 * not while dla_accelerate records (DLA_ERR_UNSUPPORTED). docs/parallel.md.
 *
 * Errors: functions return a dla_status and set dla_last_error().
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_PARALLEL_H
#define DLACCEL_PARALLEL_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reductions: those of the collectives (SUM is gplus; MEAN is the
 * sum divided by the number of ranks, for single and double) and of the
 * device reduce kernel (dlaccel/plugin.h), one list for both. The values
 * are part of the device plugin ABI: append only. */
#define DLA_REDUCE_LIST(X)                                                     \
    X(DLA_REDUCE_SUM, "sum")                                                   \
    X(DLA_REDUCE_MEAN, "mean")                                                 \
    X(DLA_REDUCE_MAX, "max")                                                   \
    X(DLA_REDUCE_MIN, "min")

typedef enum dla_reduce_op {
#define DLA__REDUCE_ENUM(name, str) name,
    DLA_REDUCE_LIST(DLA__REDUCE_ENUM)
#undef DLA__REDUCE_ENUM
    DLA_REDUCE_COUNT
} dla_reduce_op;

/* This process's rank, 0..size-1 (MATLAB's spmdIndex - 1); 0 in a world of
 * one. The first call initializes the communicator (and MPI, when the
 * program has not: the library then finalizes it at exit). */
DLA_API int dla_spmd_rank(void);
/* The number of workers (MATLAB's spmdSize); 1 in a world of one. */
DLA_API int dla_spmd_size(void);
/* The rank among the processes of this machine, and their number (ranks
 * are mapped to GPUs by it); 0 and 1 in a world of one. */
DLA_API int dla_spmd_local_rank(void);
DLA_API int dla_spmd_local_size(void);
/* "mpi" (the name of the communicator plugin serving the world) or
 * "single" (a world of one). */
DLA_API const char *dla_spmd_backend(void);

/* Reduces each of the n tensors element-wise across the ranks, in place:
 * every rank ends with the same result. Tensors may live on any device and
 * be views (a dense tensor of the cpu device is reduced in its own memory,
 * others through a host copy); no two may share memory, nor a view repeat
 * elements (stride 0). SUM, MAX and MIN take single, double, int32 and
 * uint8 (logical: MAX is or, MIN is and); MEAN single and double
 * (DLA_ERR_DTYPE otherwise). A SUM of int32 or uint8 saturates, as
 * MATLAB's gplus does: the whole sum, clamped to the dtype's range once
 * (it goes over the wire as doubles, through the host). */
DLA_API dla_status dla_allreduce(int n, dla_tensor *const *t, dla_reduce_op op);
/* Copies each of the n tensors of rank root into the same tensors of every
 * other rank (whose sizes and dtypes must agree). */
DLA_API dla_status dla_broadcast(int n, dla_tensor *const *t, int root);
/* Concatenates every rank's x (the same dtype and sizes on every rank) in
 * rank order along a new last dimension: *out has x's dims then size (a
 * new unformatted tensor on x's device, owned by the caller or the open
 * scope). x may have at most DLA_MAX_DIMS - 1 dims. */
DLA_API dla_status dla_allgather(const dla_tensor *x, dla_tensor **out);
/* gop(@and, flag) and gop(@or, flag). */
DLA_API dla_status dla_spmd_all(bool flag, bool *all);
DLA_API dla_status dla_spmd_any(bool flag, bool *any);
/* Waits for every rank. */
DLA_API dla_status dla_spmd_barrier(void);

/* A reduction that does not wait: dla_allreduce_start begins
 * dla_allreduce(n, t, op) and returns at once, so that the caller computes
 * while it runs (trainnet "parallel" reduces each bucket of gradients so,
 * as the backward pass finishes it: docs/parallel.md, "Reduction cost").
 *
 *     dla_spmd_request *r;
 *     dla_allreduce_start(1, &bucket, DLA_REDUCE_SUM, &r);
 *     ... compute, calling dla_spmd_progress() now and then ...
 *     dla_spmd_wait(r);     // bucket now holds the sum, on every rank
 *
 * Every rank starts the same reductions in the same order, with the same
 * arguments, among its other collectives; the arguments are checked
 * across the ranks as for dla_allreduce, without waiting: a disagreement,
 * or a rank's own refused arguments, is the status that dla_spmd_wait (or
 * dla_spmd_test) returns, on every rank, naming the rank and the tensor.
 * Until then the tensors belong to the reduction: do not read or write
 * them (the request holds a reference to each). *req is NULL only when
 * start fails without taking part (req NULL, a broken world, no memory):
 * every other request must be waited or tested to its end.
 *
 * MPI moves a non-blocking collective only inside its calls, so a caller
 * that computes long between them calls dla_spmd_progress() (cheap: a
 * test of each request in flight). With a communicator plugin of ABI 1.0
 * (before non-blocking reductions, dlaccel/comm_plugin.h), and in a world
 * of one, start runs the whole reduction before it returns and the request
 * is done at once. Not while dla_accelerate records (the request ends
 * with DLA_ERR_UNSUPPORTED). */
typedef struct dla_spmd_request dla_spmd_request;
DLA_API dla_status dla_allreduce_start(int n, dla_tensor *const *t, dla_reduce_op op,
                                       dla_spmd_request **req);
/* Moves every request in flight on; *done true when req has ended: then
 * req is released and the status is its result. DLA_OK with *done false:
 * still running. */
DLA_API dla_status dla_spmd_test(dla_spmd_request *req, bool *done);
/* Waits for req to end (with DLACCEL_COLLECTIVE_TIMEOUT's warnings and
 * give-up), releases it and returns its result. */
DLA_API dla_status dla_spmd_wait(dla_spmd_request *req);
/* Moves every request in flight on, without waiting. */
DLA_API void dla_spmd_progress(void);
/* 1 when dla_allreduce_start overlaps (the communicator plugin has
 * non-blocking reductions and the world has more than one rank), 0 when it
 * runs each reduction at once. */
DLA_API int dla_spmd_overlaps(void);

/* MATLAB's DataQueue from the workers to rank 0: a worker sends a small
 * message and goes on; rank 0 polls without blocking anyone. */
typedef struct dla_dataqueue dla_dataqueue;
/* Every rank creates the queue (collectively, in the same order). */
DLA_API dla_status dla_dataqueue_create(dla_dataqueue **q);
/* Sends size bytes (at most 4096) to rank 0; rank 0 sending to itself
 * queues the message locally. Does not wait for rank 0 to receive it. */
DLA_API dla_status dla_dataqueue_send(dla_dataqueue *q, const void *data, size_t size);
/* Rank 0: takes one waiting message, if any: returns 1 and fills buf, *from
 * and *size; returns 0 when none waits, -1 on error (with
 * dla_last_error()). A message of more than cap bytes is not cut: it is
 * -1, DLA_ERR_INVALID_ARGUMENT naming its size, and the message stays
 * waiting for a poll with room for it (4096 bytes hold any). Other ranks:
 * always 0. */
DLA_API int dla_dataqueue_poll(dla_dataqueue *q, void *buf, size_t cap, int *from, size_t *size);
/* Collective: waits until every message sent before it was received. */
DLA_API void dla_dataqueue_free(dla_dataqueue *q);

#ifdef __cplusplus
}
#endif

#endif

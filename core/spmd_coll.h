/*
 * spmd_coll.h - what the blocking collectives (spmd_coll.c) share with the
 * non-blocking allreduce (spmd_async.c): the checks of one rank's own
 * tensors, and their way to the host and back.
 */
#ifndef DLA_CORE_SPMD_COLL_H
#define DLA_CORE_SPMD_COLL_H

#include "core/spmd_check.h"

typedef struct dla__coll_slot {
    void *host;     /* the data on the host: the tensor's own memory or the stage */
    int direct;     /* host is the tensor's memory */
    size_t bytes;
    double *wide;   /* an integer sum's elements as doubles, on the wire (dla__coll_widen) */
} dla__coll_slot;

/* "sum", "mean", ... by dla_reduce_op. */
extern const char *const dla__coll_op_names[];

/* The checks of one rank's own arguments. writes: the tensors are written
 * in place (no element may alias another, nor two tensors overlap). */
dla_status dla__coll_check_tensors(const char *op, int n, dla_tensor *const *t, int writes);
/* Whether the collectives reduce dtype with op. */
int dla__coll_op_supports(dla_reduce_op op, dla_dtype dtype);
/* The checks of an allreduce's own arguments: the tensors (written in
 * place), op a dla_reduce_op, and every dtype reduced by it. */
dla_status dla__coll_check_reduce(const char *name, int n, dla_tensor *const *t, dla_reduce_op op);
/* Lays the tensors out: direct ones point at their memory, the others get
 * a place in one stage (*stage, NULL when none), in call order, and are
 * copied there when fill. Each tensor is then its own transfer, so ranks
 * that lay a tensor out otherwise still pair it. */
dla_status dla__coll_lay_out(const char *op, int n, dla_tensor *const *t, dla__coll_slot *s,
                             int fill, unsigned char **stage);
/* Copies host (the tensor's bytes, dense) into t on its device. */
dla_status dla__coll_write_back(const char *op, dla_tensor *t, const void *host);
/* An integer SUM goes over the wire as doubles, and the result is
 * saturated to the dtype's range, as MATLAB's gplus of int32 or uint8
 * saturates: summed in the dtype itself (MPI's, NCCL's), int32 and uint8
 * wrapped (2147483647 + 2147483647 gave -2, 200 + 200 gave 144, with
 * DLA_OK). A double holds every such sum exactly (fewer than 2^21 ranks).
 * dla__coll_wide says whether t's reduction with op is widened;
 * dla__coll_widen fills s->wide from s->host (DLA_ERR_OUT_OF_MEMORY
 * naming op); dla__coll_narrow writes the saturated sums back into
 * s->host and frees s->wide (NULL-safe). What goes on the wire:
 * dla__coll_wire_buf, dla__coll_wire_count, dla__coll_wire_dtype. */
int dla__coll_wide(dla_reduce_op op, dla_dtype dtype);
dla_status dla__coll_widen(const char *op, dla__coll_slot *s, dla_dtype dtype);
void dla__coll_narrow(dla__coll_slot *s, dla_dtype dtype);
void *dla__coll_wire_buf(const dla__coll_slot *s);
size_t dla__coll_wire_count(const dla__coll_slot *s, dla_dtype dtype);
dla_dtype dla__coll_wire_dtype(const dla__coll_slot *s, dla_dtype dtype);
/* bytes of dtype at host divided by size (MEAN of a SUM). */
void dla__coll_divide(void *host, size_t bytes, dla_dtype dtype, int size);

#endif

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
/* bytes of dtype at host divided by size (MEAN of a SUM). */
void dla__coll_divide(void *host, size_t bytes, dla_dtype dtype, int size);

#endif

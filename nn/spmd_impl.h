/*
 * spmd_impl.h - what the parallel training files of nn/ share.
 */
#ifndef DLA_SPMD_IMPL_H
#define DLA_SPMD_IMPL_H

#include <stddef.h>

/* The bucket size of dla_spmd_combine in bytes: DLACCEL_BUCKET_MIB MiB
 * (4 when unset or not a positive number). */
size_t dla__spmd_bucket_bytes(void);
/* Seconds this thread has spent inside the allreduces of
 * dla_spmd_combine (all of it exposed: see docs/parallel.md, "Reduction
 * cost"). */
double dla__spmd_reduce_seconds(void);

#endif

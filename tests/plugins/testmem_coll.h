/*
 * testmem_coll.h - testmem with collectives of its own (ABI 1.6 coll_*),
 * run over MPI on the slots' host memory: the core's device-collective
 * path (core/spmd_device.c), exercised under mpirun on a machine without
 * the GPUs NCCL needs. Built as libdlaccel-testcoll (tests/spmd.mk).
 */
#ifndef DLA_TESTMEM_COLL_H
#define DLA_TESTMEM_COLL_H

#include <dlaccel/plugin.h>

/* The host memory behind bytes of m at off, or NULL (not a slot, or out of
 * it). */
__attribute__((visibility("hidden"))) unsigned char *dla_testmem_data(dla_mem m, size_t off,
                                                                      size_t bytes);
/* Sets the coll_* members and answers ABI 1.6. */
__attribute__((visibility("hidden"))) void dla_testmem_coll_fill(const dla_plugin_host *h,
                                                                 dla_plugin *t);

#endif

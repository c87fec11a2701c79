/*
 * spmd_stall.c - a test-only interposer (LD_PRELOAD) that stops one rank
 * inside a transfer: the rank named by DLA_TEST_STALL_RANK stops itself
 * (SIGSTOP) at its second MPI_Allreduce, the blocking call the MPI plugin
 * makes once every rank passed the argument check. The other ranks are
 * then blocked in the same call, where only the watchdog
 * (core/spmd_watch.c) can end them; tests/spmd.sh checks it does.
 */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

__attribute__((visibility("default"))) int MPI_Allreduce(const void *send, void *recv, int count,
                                                         MPI_Datatype type, MPI_Op op,
                                                         MPI_Comm comm)
{
    static int calls;
    const char *stall = getenv("DLA_TEST_STALL_RANK");
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (stall && rank && atoi(stall) == atoi(rank) && ++calls == 2)
        raise(SIGSTOP);
    return PMPI_Allreduce(send, recv, count, type, op, comm);
}

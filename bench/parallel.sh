#!/bin/sh
# bench/parallel.sh - the collectives' figures: dla_allreduce against a
# plain MPI_Allreduce loop, 2 ranks (or $DLA_BENCH_RANKS), same run.
#
#     bench/parallel.sh [build dir] [allreduce_bench options]
#
# Prints the table of bench/allreduce_bench.c (median of the rounds, bus
# bandwidth) and what else ran on the machine meanwhile (its load), since
# a shared machine's figures say little without it.
build=${1:-build}
[ $# -gt 0 ] && shift
prog="$build/bench/allreduce_bench"
if [ ! -x "$prog" ]; then
    echo "parallel.sh: $prog not built (configure found no MPI?)" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
DLACCEL_PLUGIN_PATH=$(cd "$build" && pwd)/plugins.d
OMP_NUM_THREADS=1
export DLACCEL_PLUGIN_PATH OMP_NUM_THREADS
echo "machine: $(nproc --all) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
mpirun --oversubscribe -np "${DLA_BENCH_RANKS:-2}" "$prog" "$@"
status=$?
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status

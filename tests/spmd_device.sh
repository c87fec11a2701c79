#!/bin/sh
# The collectives on a device's own transport (core/spmd_device.c), as the
# cuda plugin runs them over NCCL: here on testcoll, a test device whose
# collectives go over MPI (tests/plugins/testmem_coll.c), so the path runs
# on a machine without GPUs. tests/test_spmd's cases, with their tensors on
# testcoll, under mpirun: each case must pass, and the log (DLACCEL_LOG=
# info, where testcoll names every operation) must show which path the
# collectives took: the device's when every rank can; the host's, on every
# rank, when one rank has no transport, when one fails to join, and with
# DLACCEL_DEVICE_COLLECTIVES=off; and a world of one with =force.
prog="$DLA_TEST_BUILDDIR/tests/test_spmd"
manifest="$DLA_TEST_BUILDDIR/tests/plugins.coll.d/testcoll.json"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-spmd-dev-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE_COLLECTIVES DLACCEL_COMM DLACCEL_COLLECTIVE_TIMEOUT DLACCEL_COLLECTIVE_FAIL_AFTER
OMP_NUM_THREADS=1
DLACCEL_DEVICE=testcoll
DLACCEL_LOG=info
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.coll.d${DLACCEL_PLUGIN_PATH:+:$DLACCEL_PLUGIN_PATH}"
export OMP_NUM_THREADS DLACCEL_DEVICE DLACCEL_LOG DLACCEL_PLUGIN_PATH
if [ "$(id -u)" -eq 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi
cases="world,allreduce,broadcast,bcast_dense,allgather,flags,queue,args,async,mismatch,async_mismatch"
few="allreduce,broadcast,bcast_dense,allgather,async"
echo "1..40"
n=0
if [ ! -f "$manifest" ] || ! command -v mpirun >/dev/null 2>&1; then
    for _ in $(seq 40); do n=$((n + 1)); echo "ok $n # SKIP MPI was not built, or no mpirun"; done
    exit 0
fi

# run NP [options] -- CASES
run() {
    np=$1; shift
    opts=
    while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout -k 5 120 mpirun --oversubscribe -x DLACCEL_DEVICE -x DLACCEL_LOG -x DLACCEL_PLUGIN_PATH \
        $opts -np "$np" "$prog" "$1" >"$tmp/out" 2>&1
}

report() { # WHAT RANKS CASES
    for c in $(echo "$3" | tr ',' ' '); do
        n=$((n + 1))
        if [ "$(grep -c ": ok $c\$" "$tmp/out")" -eq "$2" ]; then
            echo "ok $n - $c, $1"
        else
            sed 's/^/#   /' "$tmp/out"
            echo "not ok $n - $c, $1"
        fi
    done
}

# expect WHAT COUNT-TEST PATTERN: the log's lines matching PATTERN.
expect() {
    n=$((n + 1))
    got=$(grep -c -- "$3" "$tmp/out")
    # shellcheck disable=SC2086
    if [ "$got" $2 ]; then
        echo "ok $n - $1 ($got lines)"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - $1: $got lines match '$3'"
    fi
}

# Every rank can: the device's collectives, one group per rank.
run 2 -- $cases
report "mpirun -np 2, tensors on testcoll" 2 $cases
expect "each of 2 ranks joined the device's group once" "-eq 2" "testcoll: joined a group of 2"
expect "allreduces on the device" "-gt 0" "testcoll: allreduce of"
expect "broadcasts on the device" "-gt 0" "testcoll: broadcast of"
expect "allgathers on the device" "-gt 0" "testcoll: allgather of"

# The non-blocking reduction alone, 3 ranks.
run 3 -- async
report "mpirun -np 3, dla_allreduce_start on testcoll" 3 async
expect "non-blocking reductions on the device" "-gt 0" "testcoll: allreduce of"

# Rank 1 has no transport: every rank takes the host path.
run 2 -x DLA_TESTCOLL_PROBE_FAIL=1 -- $few
report "rank 1 without the transport" 2 $few
expect "no rank joined" "-eq 0" "testcoll: joined"
expect "no operation on the device" "-eq 0" "testcoll: allreduce of"

# Rank 2's join fails: every rank leaves, says why, and goes on on the host.
run 3 -x DLA_TESTCOLL_JOIN_FAIL=2 -- $few
report "rank 2 fails to join" 3 $few
expect "every rank says rank 2 could not join" "-eq 3" "rank 2 could not join"
expect "no operation on the device" "-eq 0" "testcoll: allreduce of"

# Turned off.
DLACCEL_DEVICE_COLLECTIVES=off run 2 -x DLACCEL_DEVICE_COLLECTIVES -- allreduce
report "DLACCEL_DEVICE_COLLECTIVES=off" 2 allreduce
expect "off: no group" "-eq 0" "testcoll: joined"

# A world of one, forced onto the device's collectives (no mpirun).
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_SIZE DLACCEL_DEVICE_COLLECTIVES=force \
    timeout 60 "$prog" $few >"$tmp/out" 2>&1
report "a world of one, DLACCEL_DEVICE_COLLECTIVES=force" 1 $few
expect "force: a group of one" "-eq 1" "testcoll: joined a group of 1"

# A misspelt value is named once, and the default applies.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_SIZE DLACCEL_DEVICE_COLLECTIVES=Force \
    timeout 60 "$prog" allreduce >"$tmp/out" 2>&1
expect "DLACCEL_DEVICE_COLLECTIVES=Force is named, with the accepted values" "-eq 1" \
    "DLACCEL_DEVICE_COLLECTIVES=Force is not one of its values (auto, off, force)"

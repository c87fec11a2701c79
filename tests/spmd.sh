#!/bin/sh
# The collectives (tests/test_spmd.c) under mpirun with 1 to 4 ranks, and
# once without it. Every run is under `timeout`, so a hang is a failure,
# not a stuck `make check`. Speaks TAP: one line per case and run, ok when
# every rank printed "ok CASE" (and, for the faults, when the survivors
# ended with the error naming the missing rank).
prog="$DLA_TEST_BUILDDIR/tests/test_spmd"
manifest="$DLA_TEST_BUILDDIR/plugins.d/comm/mpi.json"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-spmd-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_COMM DLACCEL_COLLECTIVE_TIMEOUT DLACCEL_COLLECTIVE_FAIL_AFTER
# One thread per rank: up to 4 ranks share this machine's cores.
OMP_NUM_THREADS=1
export OMP_NUM_THREADS
# Open MPI refuses root without these (CI runs as root).
if [ "$(id -u)" -eq 0 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
fi

basic="world,allreduce,broadcast,allgather,flags,queue,args,async,layouts,accel_result"
mpi=yes
reason=
if [ ! -f "$manifest" ]; then
    mpi=no; reason="MPI was not built (configure found no MPI: install libopenmpi-dev)"
elif ! command -v mpirun >/dev/null 2>&1; then
    mpi=no; reason="no mpirun on PATH (install openmpi-bin)"
fi
# 4 runs of the basic cases (N = 1..4, the mismatches from 2), TCP,
# testmem, the ABI 1.0 plugin, the hang, the kill with recovery, the kill
# without, and the world of one.
cases_in() { echo "$1" | tr ',' ' ' | wc -w; }
parts="allreduce,broadcast,allgather,async,layouts,mismatch"
nbasic=$(($(cases_in $basic) * 4 + 6 + 4 + $(cases_in $basic,mismatch,async_mismatch) + 3 + $(cases_in $parts)))
plan=$((nbasic + 7 + 1))
echo "1..$plan"
n=0

# report WHAT OUTFILE RANKS CASES: one TAP line per case.
report() {
    what=$1 out=$2 ranks=$3
    for c in $(echo "$4" | tr ',' ' '); do
        n=$((n + 1))
        got=$(grep -c ": ok $c\$" "$out")
        if [ "$got" -eq "$ranks" ]; then
            echo "ok $n - $c, $what"
        else
            echo "# $got of $ranks ranks said ok $c; the output:"
            sed 's/^/#   /' "$out"
            echo "not ok $n - $c, $what"
        fi
    done
}

skip() {
    for _ in $(seq "$1"); do n=$((n + 1)); echo "ok $n # SKIP $reason"; done
}

# run SECONDS NP [mpirun options] -- CASES: test_spmd under mpirun into $tmp/out.
run() {
    limit=$1 np=$2; shift 2
    opts=
    while [ "$1" != "--" ]; do opts="$opts $1"; shift; done
    shift
    # shellcheck disable=SC2086
    timeout -k 5 "$limit" mpirun --oversubscribe $opts -np "$np" "$prog" "$1" >"$tmp/out" 2>&1
    status=$?
    [ $status -eq 124 ] && echo "# mpirun -np $np $opts: timed out after $limit s" >>"$tmp/out"
    return $status
}

if [ $mpi = yes ]; then
    for np in 1 2 3 4; do
        cases=$basic
        [ $np -ge 2 ] && cases=$cases,mismatch,async_mismatch
        run 120 $np -- $cases
        report "mpirun -np $np" "$tmp/out" $np $cases
    done
    # The transport a job across machines takes.
    run 120 3 --mca btl tcp,self -- world,allreduce,broadcast,async
    report "mpirun -np 3 --mca btl tcp,self" "$tmp/out" 3 world,allreduce,broadcast,async
    # Memory the host cannot address: every tensor through the stage.
    DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH" \
        DLACCEL_DEVICE=testmem run 120 2 -x DLACCEL_DEVICE -x DLACCEL_PLUGIN_PATH -- $basic,mismatch,async_mismatch
    report "mpirun -np 2, tensors on testmem" "$tmp/out" 2 $basic,mismatch,async_mismatch
    # A communicator plugin of ABI 1.0 (the MPI plugin built as one, found
    # first): no non-blocking reductions, so dla_allreduce_start reduces at
    # once; the same results and errors.
    mkdir -p "$tmp/abi10/comm"
    sed -e "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"$DLA_TEST_BUILDDIR/tests/plugins/.libs/mpi_abi10.so\"|" \
        -e 's|"abi_version": "[^"]*"|"abi_version": "1.0"|' -e 's|"priority": [0-9]*|"priority": 200|' \
        "$manifest" >"$tmp/abi10/comm/mpi.json"
    DLACCEL_PLUGIN_PATH="$tmp/abi10:$DLACCEL_PLUGIN_PATH" DLA_TEST_ABI10=1 \
        run 120 2 -x DLACCEL_PLUGIN_PATH -x DLA_TEST_ABI10 -- async,async_mismatch,allreduce
    report "mpirun -np 2, a communicator plugin of ABI 1.0" "$tmp/out" 2 async,async_mismatch,allreduce
    # The MPI plugin that moves at most 1 KiB a call: every buffer over
    # that goes in parts, as one over 2 GiB does with the real plugin.
    mkdir -p "$tmp/parts/comm"
    sed -e "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"$DLA_TEST_BUILDDIR/tests/plugins/.libs/mpi_parts.so\"|" \
        -e 's|"priority": [0-9]*|"priority": 200|' "$manifest" >"$tmp/parts/comm/mpi.json"
    DLACCEL_PLUGIN_PATH="$tmp/parts:$DLACCEL_PLUGIN_PATH" run 120 3 -x DLACCEL_PLUGIN_PATH -- $parts
    report "mpirun -np 3, MPI calls of at most 1 KiB" "$tmp/out" 3 $parts
else
    skip $nbasic
fi

# fault NAME OPTS: the last of 3 ranks never comes (hang) or dies (kill);
# the 2 others must give up within the set time with the error naming it.
if [ $mpi = yes ]; then
    DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=3 run 60 3 -- hang
    report "a rank that hangs: the others give up after 3 s" "$tmp/out" 2 hang
    n=$((n + 1))
    if grep -q "waiting for .* for rank 2 (no answer" "$tmp/out"; then
        echo "ok $n - hang: after DLACCEL_COLLECTIVE_TIMEOUT the others warn naming rank 2"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - hang: after DLACCEL_COLLECTIVE_TIMEOUT the others warn naming rank 2"
    fi
    # The same with a non-blocking reduction the last rank never starts.
    DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=3 run 60 3 -- async_hang
    report "a rank that never starts a non-blocking reduction: the others give up after 3 s" \
        "$tmp/out" 2 async_hang
    # With --enable-recovery mpirun lets the others run on after a death;
    # they must not wait forever.
    DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=3 run 60 3 --enable-recovery -- kill
    report "a rank killed, mpirun --enable-recovery: the others give up after 3 s" "$tmp/out" 2 kill
    # By default Open MPI itself ends the job when a rank dies: mpirun
    # fails (not a hang, not a success).
    DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=3 run 60 3 -- kill
    status=$?
    n=$((n + 1))
    if [ $status -ne 0 ] && [ $status -ne 124 ]; then
        echo "ok $n - a rank killed: mpirun ends the job with status $status"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - a rank killed: mpirun ended with status $status"
    fi
    # Stopped inside the blocking transfer, after the argument check: the
    # others are blocked in MPI_Allreduce, and the watchdog ends them.
    # (A sanitizer's runtime must come first: no preload there.)
    stall="$DLA_TEST_BUILDDIR/tests/plugins/.libs/spmd_stall.so"
    status=0
    if [ "${DLA_TEST_SANITIZER:-none}" = none ]; then
        DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=3 \
            run 60 3 -x LD_PRELOAD="$stall" -x DLA_TEST_STALL_RANK=2 -- stall
        status=$?
    fi
    n=$((n + 1))
    if [ "${DLA_TEST_SANITIZER:-none}" != none ]; then
        echo "ok $n # SKIP no LD_PRELOAD under --enable-sanitizers=$DLA_TEST_SANITIZER"
    elif [ $status -ne 0 ] && [ $status -ne 124 ] &&
        grep -q "transfer has not completed after .* ending this process" "$tmp/out"; then
        echo "ok $n - a rank stopped inside a transfer: the watchdog ends the others (status $status)"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - a rank stopped inside a transfer: mpirun ended with status $status"
    fi
    # The same with DLACCEL_COLLECTIVE_FAIL_AFTER shorter than the default
    # timeout (60 s): the watchdog ends the others after it, not at the
    # timeout (it slept until the warning first, and ended them after 60 s).
    status=0
    if [ "${DLA_TEST_SANITIZER:-none}" = none ]; then
        DLACCEL_COLLECTIVE_FAIL_AFTER=3 \
            run 30 3 -x LD_PRELOAD="$stall" -x DLA_TEST_STALL_RANK=2 -- stall
        status=$?
    fi
    n=$((n + 1))
    if [ "${DLA_TEST_SANITIZER:-none}" != none ]; then
        echo "ok $n # SKIP no LD_PRELOAD under --enable-sanitizers=$DLA_TEST_SANITIZER"
    elif [ $status -ne 0 ] && [ $status -ne 124 ] &&
        grep -q "transfer has not completed after [0-9.]* s (DLACCEL_COLLECTIVE_FAIL_AFTER)" "$tmp/out" &&
        ! grep -q "transfer has not completed after [1-9][0-9][0-9.]* s" "$tmp/out"; then
        echo "ok $n - DLACCEL_COLLECTIVE_FAIL_AFTER=3 under the default timeout: the watchdog ends the others after it (status $status)"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - DLACCEL_COLLECTIVE_FAIL_AFTER=3 under the default timeout: mpirun ended with status $status"
    fi
else
    skip 7
fi

# A world of one: no mpirun, and no MPI loaded.
env -u OMPI_COMM_WORLD_SIZE -u PMIX_RANK -u PMI_SIZE timeout 60 "$prog" single >"$tmp/out" 2>&1
report "without mpirun" "$tmp/out" 1 single

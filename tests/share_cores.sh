#!/bin/sh
# Several dlaccel processes on one machine take their share of its CPUs
# (plugins/cpu/peers.c, threads.c): with a second process alive, a new one
# says how many share and runs fewer threads, DLACCEL_SHARE_CORES=off and
# OMP_NUM_THREADS keep the whole count. Other dlaccel processes of this
# user may run meanwhile (a parallel make check): the count is read from
# the log, and the threads are checked against it.
set -u
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
bench="$DLA_TEST_BUILDDIR/bench/dlaccel-bench"
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
echo "1..4"
if [ "$cpus" -lt 2 ] || ! [ -d /dev/shm ] || ! [ -w /dev/shm ]; then
    for i in 1 2 3 4; do echo "ok $i # SKIP needs 2 CPUs and /dev/shm"; done
    exit 0
fi
tmp=$(mktemp -d)
held=
trap '[ -n "$held" ] && kill "$held" 2>/dev/null; rm -rf "$tmp"' EXIT
# A second dlaccel process that stays: a long bench run, stopped at the end.
env -u OMP_NUM_THREADS timeout 60 "$bench" --device cpu --workload =mlp_replay --reps 1000000 \
    >"$tmp/held.log" 2>&1 &
held=$!

threads_of() { sed -n 's/.*threads=\([0-9]*\).*/\1/p' "$1" | head -1; }

# Until the held process has loaded its plugin (at most 20 s).
i=0
while :; do
    env -u OMP_NUM_THREADS DLACCEL_LOG=info "$tool" devices >"$tmp/shared.log" 2>&1
    n=$(sed -n 's/.*cpu: \([0-9]*\) dlaccel processes run on this machine.*/\1/p' "$tmp/shared.log")
    [ -n "$n" ] || [ $i -ge 100 ] && break
    sleep 0.2
    i=$((i + 1))
done
if [ -n "$n" ] && [ "$n" -ge 2 ]; then echo "ok 1 - a second process is counted ($n share $cpus CPUs)"
else echo "not ok 1 - a second process is counted"; sed 's/^/# /' "$tmp/shared.log" | head -20; fi
want=$((cpus / ${n:-1})); [ "$want" -lt 1 ] && want=1
got=$(threads_of "$tmp/shared.log")
if [ "$got" = "$want" ]; then echo "ok 2 - each takes its share: $got thread(s)"
else echo "not ok 2 - each takes its share: $got thread(s), wanted $want"; fi

env -u OMP_NUM_THREADS DLACCEL_SHARE_CORES=off DLACCEL_LOG=info "$tool" devices >"$tmp/off.log" 2>&1
got=$(threads_of "$tmp/off.log")
if ! grep -q "dlaccel processes run" "$tmp/off.log" && [ "$got" = "$cpus" ]; then
    echo "ok 3 - DLACCEL_SHARE_CORES=off keeps all $cpus threads"
else echo "not ok 3 - DLACCEL_SHARE_CORES=off keeps all $cpus threads (got $got)"; fi

OMP_NUM_THREADS=$cpus DLACCEL_LOG=info "$tool" devices >"$tmp/omp.log" 2>&1
got=$(threads_of "$tmp/omp.log")
if ! grep -q "dlaccel processes run" "$tmp/omp.log" && [ "$got" = "$cpus" ]; then
    echo "ok 4 - OMP_NUM_THREADS=$cpus is kept"
else echo "not ok 4 - OMP_NUM_THREADS=$cpus is kept (got $got)"; fi

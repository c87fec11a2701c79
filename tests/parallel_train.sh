#!/bin/sh
# Parallel training under mpirun (issue 15): N workers against 1, the same
# bits on every rank after every step, two runs alike (1 to 4 ranks); the
# batch-normalization state combined against the whole batch's; trainnet
# "parallel" on "auto"'s mini-batches (sequence-to-sequence ones whose
# shares hold different numbers of valid steps too), with uneven shares, only rank 0
# printing, its gradient reductions overlapped with the backward pass (the
# blocking path's result; a rank that fails stops them all), and a resume
# from its checkpoint with another number of workers; the two examples on 2 ranks (--small); the cpu plugin's
# threads divided among the ranks of the machine; "parallel" giving each
# rank its own device where the default is not a cpu. Each mpirun under a
# timeout. Speaks TAP; skipped when the MPI
# plugin is not built.
check="$DLA_TEST_BUILDDIR/tests/parallel_train_check"
if [ ! -f "$DLA_TEST_BUILDDIR/plugins.d/comm/mpi.json" ]; then
    echo "1..0 # SKIP the MPI plugin is not built (configure found no MPI: install libopenmpi-dev)"
    exit 0
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpirun is not installed (openmpi-bin)"
    exit 0
fi
unset DLACCEL_DEVICE DLACCEL_COMM DLACCEL_COLLECTIVE_TIMEOUT
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-partrain-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# Open MPI refuses root without these; the ranks share two cores here, so
# one thread each, and idle ranks yield.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
# Under AddressSanitizer, full unwinding on malloc. Open MPI keeps what
# MPI_Init allocated past MPI_Finalize (tests/lsan.supp names its
# libraries), but its libraries keep no frame pointers: the fast unwinder
# stopped in an MCA component that MPI_Finalize had unloaded, the stacks
# were "<unknown module>" alone, nothing matched, and every rank's exit
# status was LeakSanitizer's. Full unwinding reaches libmpi's frames.
if [ "${DLA_TEST_SANITIZER:-none}" = address ]; then
    ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
    export ASAN_OPTIONS
fi
# mpirun N ARGS...: the check under a timeout, output in $tmp/out. With
# -k, as tests/spmd.sh: an mpirun whose ranks had all ended was seen
# ignoring timeout's SIGTERM for ten minutes (Open MPI 4.1.4).
run() {
    n=$1; shift
    timeout -k 5 120 mpirun --oversubscribe --tag-output -np "$n" "$check" "$@" >"$tmp/out" 2>&1
    status=$?
}
t=0
verdict() {
    t=$((t + 1))
    if [ "$status" -eq 0 ]; then echo "ok $t - $1"; else
        sed 's/^/#   /' "$tmp/out"; echo "not ok $t - $1 (exit status $status)"; fi
}
echo "1..47"
for n in 1 2 3 4; do
    run "$n" steps
    verdict "$n worker(s) against 1 on 37 observations, 30 SGDM steps; same bits on every rank; two runs alike"
done
for n in 2 4; do
    run "$n" bn
    verdict "$n workers: batch-normalization state combined equals the whole batch's"
done
for n in 1 2 3; do
    run "$n" state
    verdict "$n worker(s): state of sequences' batch normalization and of a custom layer combined equals the whole batch's; recurrent states stay each worker's own"
done
# A corrupt image in one worker's share: only that worker reads it, and
# every worker must fail at the same meeting (the one naming the file, the
# others "rank r failed"), the world still in step after it.
mkdir -p "$tmp/bad/k0" "$tmp/bad/k1"
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do
    cp "${srcdir:-.}/fuzz/seeds/image/gray28.png" "$tmp/bad/k$((i % 2))/$i.png"
done
head -c 40 "${srcdir:-.}/fuzz/seeds/image/gray28.png" >"$tmp/bad/k1/bad.png"
for n in 2 3; do
    DLACCEL_COLLECTIVE_TIMEOUT=2 DLACCEL_COLLECTIVE_FAIL_AFTER=6 run "$n" badfile "$tmp/bad"
    verdict "$n workers: a batch one worker cannot read fails every worker at once"
done
# An augmented datastore: each worker draws the whole batch's transforms
# and keeps its share's, so each image is transformed as in one process.
mkdir -p "$tmp/aug/k0" "$tmp/aug/k1"
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12; do
    cp "${srcdir:-.}/fuzz/seeds/image/gray28.png" "$tmp/aug/k$((i % 2))/$i.png"
done
for n in 2 3; do
    run "$n" augment "$tmp/aug"
    verdict "$n workers: an augmented datastore's images transformed as in one process"
done
# trainnet "parallel" against "auto": the workers' shares of an iteration
# are one process's mini-batch (the partial last one, fewer observations
# than workers, sequences padded to the whole batch's length).
for n in 2 3 4; do
    run "$n" global
    verdict "trainnet \"parallel\" on $n workers trains on \"auto\"'s mini-batches"
done
# Sequence-to-sequence data, sequences of 1 to 12 steps: the workers'
# shares hold different numbers of valid steps, and their masked losses
# and metrics are combined weighted by them, as one process's means.
for n in 2 3; do
    run "$n" seq2seq
    verdict "trainnet \"parallel\" on $n workers: sequence-to-sequence losses and metrics over valid steps are \"auto\"'s"
done
# Sequences of different lengths through a datastore: each worker pads its
# share to the whole batch's length, as a sequence list's shares are.
for n in 2 3; do
    run "$n" dsseq
    verdict "trainnet \"parallel\" on $n workers over a datastore's sequences trains as over the list"
done
# Features rarely combined with "parallel": schedules, L2, clipping on the
# whole batch's gradients, best validation, workers without a share, an
# LSTM encoder's states into a decoder, a custom layer's state.
for n in 2 3 4; do
    run "$n" combos
    verdict "trainnet \"parallel\" on $n workers with schedules, L2, clipping, best validation, state ports and a custom layer's state trains as \"auto\""
done
# An output of half the input's steps, class numbers per step: the
# accuracy is over the steps that hold a class, unevenly shared.
for n in 2 3; do
    run "$n" halved
    verdict "trainnet \"parallel\" on $n workers: the accuracy of class numbers at every other step is \"auto\"'s"
done
# Dropout masks drawn for the whole batch, each worker keeping its rows.
for n in 2 3; do
    run "$n" dropout
    verdict "trainnet \"parallel\" on $n workers: dropout and spatial dropout drop what \"auto\" drops"
done
# A NaN in one worker's share makes the whole batch's figures NaN on
# every rank, as in one process.
for n in 2 3; do
    run "$n" nan
    verdict "trainnet \"parallel\" on $n workers: a NaN target in one share stops training as \"auto\" does, the batch's RMSE NaN on every rank; one rank's OutputFcn stop gives one process's table"
done
for n in 2 3 4; do
    rm -f "$tmp"/ckpt/*; mkdir -p "$tmp/ckpt"
    run "$n" trainnet "$tmp/ckpt"
    verdict "trainnet \"parallel\" on $n workers with uneven shares ends together"
done
# The last run's output: rank 0's lines only (the table, the verdicts).
t=$((t + 1))
others=$(grep -c '^\[1,[1-9][0-9]*\]<stdout>' "$tmp/out")
mine=$(grep -c '^\[1,0\]<stdout>' "$tmp/out")
if [ "$others" -eq 0 ] && [ "$mine" -gt 0 ]; then echo "ok $t - only rank 0 prints ($mine lines)"; else
    sed 's/^/#   /' "$tmp/out"; echo "not ok $t - only rank 0 prints: $others lines from other ranks, $mine from rank 0"; fi
# Gradient reductions started during the backward pass against the
# blocking path, in buckets small enough (~500 bytes) that the test
# network's gradients make several.
for n in 2 3 4; do
    DLACCEL_BUCKET_MIB=0.0005 run "$n" overlap
    verdict "$n workers: overlapped reductions give the blocking path's result; a failing rank ends them all"
done
# One rank refuses its own arguments of a collective the others make:
# every rank fails with its reason, at once (the short give-up only
# bounds a regression), and the next collective passes.
for n in 2 3; do
    DLACCEL_COLLECTIVE_TIMEOUT=1 DLACCEL_COLLECTIVE_FAIL_AFTER=5 run "$n" refused
    verdict "$n workers: a rank that refuses its arguments fails every rank with its reason"
done
for n in 1 3; do
    run "$n" resume "$tmp/ckpt"
    verdict "resume from rank 0's checkpoint of 4 workers with $n"
done
# The examples, as the README runs them (--small), on 2 ranks.
ex="$DLA_TEST_BUILDDIR/examples"
example() {
    name=$1; shift
    t=$((t + 1))
    (cd "$tmp" && timeout -k 5 300 mpirun --oversubscribe --tag-output -np 2 "$ex/$name" "$@") >"$tmp/out" 2>&1
    status=$?
    acc=$(sed -n 's/.*test accuracy: \([0-9.]*\)%.*/\1/p' "$tmp/out" | head -n 1)
    lines=$(grep -c 'test accuracy:' "$tmp/out")
    if grep -q 'Fashion-MNIST is not installed' "$tmp/out"; then
        echo "ok $t # SKIP $name: Fashion-MNIST is not installed"
    elif [ "$status" -eq 0 ] && [ "$lines" -eq 1 ] && awk "BEGIN { exit !($acc > 40) }"; then
        echo "ok $t - mpirun -np 2 $name $* (test accuracy $acc% at rank 0 only)"
    else
        sed 's/^/#   /' "$tmp/out" | tail -n 40
        echo "not ok $t - mpirun -np 2 $name $* (exit status $status, $lines accuracy lines, accuracy '$acc')"
    fi
}
example parallel_training --small --chart "$tmp/p.svg"
example cnn_fmnist --parallel --small --chart "$tmp/c.svg"
# Without OMP_NUM_THREADS (and without mpirun's binding, which would
# leave each rank one core anyway), each of 2 ranks takes half the CPUs
# and says so.
t=$((t + 1))
env -u OMP_NUM_THREADS DLACCEL_LOG=info timeout -k 5 60 mpirun --oversubscribe --bind-to none -np 2 \
    "$DLA_TEST_BUILDDIR/tools/dlaccel" devices >"$tmp/out" 2>&1
status=$?
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
each=$((cpus / 2)); [ "$each" -ge 1 ] || each=1
said=$(grep -c "2 ranks run on this machine: $each thread" "$tmp/out")
shown=$(grep -c "threads=$each\b" "$tmp/out")
if [ "$cpus" -lt 2 ]; then
    echo "ok $t # SKIP one CPU: nothing to divide"
elif [ "$status" -eq 0 ] && [ "$said" -eq 2 ] && [ "$shown" -eq 2 ]; then
    echo "ok $t - 2 ranks on $cpus CPUs: $each thread(s) each, logged"
else
    sed 's/^/#   /' "$tmp/out" | tail -n 30
    echo "not ok $t - 2 ranks on $cpus CPUs: expected $each thread(s) each (said $said, shown $shown, exit $status)"
fi

# "parallel" where the default device is not a cpu: each rank takes the
# device of that plugin at its local rank (round them when there are more
# ranks), unless DLACCEL_DEVICE named one with its index. testmem, with
# two devices, stands in for a machine's GPUs.
tm_path="$DLACCEL_PLUGIN_PATH:$DLA_TEST_BUILDDIR/tests/plugins.d"
# device_verdict DESCRIPTION RANK=DEVICE...: each rank's line, and exit 0.
device_verdict() {
    what=$1; shift
    ok=yes
    [ "$status" -eq 0 ] || ok=no
    for want in "$@"; do
        r=${want%%=*} d=${want#*=}
        grep -q "rank $r: parallel on $d\$" "$tmp/out" || { echo "# rank $r not on $d"; ok=no; }
    done
    t=$((t + 1))
    if [ $ok = yes ]; then echo "ok $t - $what"; else
        sed 's/^/#   /' "$tmp/out"; echo "not ok $t - $what (exit status $status)"; fi
}
export DLACCEL_PLUGIN_PATH="$tm_path" DLA_TESTMEM_DEVICES=2 DLACCEL_DEVICE=testmem
run 2 device
device_verdict "\"parallel\" on a machine with 2 devices of the default's plugin: a device each" \
    0=testmem:0 1=testmem:1
run 3 device
device_verdict "3 ranks, 2 devices: round them, with one warning" 0=testmem:0 1=testmem:1 2=testmem:0
t=$((t + 1))
c=$(grep -c 'ranks on this machine share its 2 testmem devices' "$tmp/out")
if [ "$c" -eq 1 ]; then echo "ok $t - the sharing is said once"; else
    sed 's/^/#   /' "$tmp/out"; echo "not ok $t - the sharing is said once ($c times)"; fi
DLACCEL_DEVICE=testmem:1
run 2 device
device_verdict "DLACCEL_DEVICE with an index keeps every rank on that device" 0=testmem:1 1=testmem:1

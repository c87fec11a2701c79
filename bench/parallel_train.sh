#!/bin/sh
# bench/parallel_train.sh - the parallel training figures of issue 15 in
# one run (build tree: run from the build folder, or set BUILD):
#
#   1. weak scaling of a compute-bound MLP step: 2 ranks x 1 thread
#      against 1 rank x 1 thread, interleaved rounds, medians
#      (target >= 80% efficiency);
#   2. the digit CNN (examples/cnn_fmnist --parallel, trainnet
#      "parallel"): an epoch on 2 ranks x 1 thread against 1 rank x 2
#      threads with the same global mini-batch of 128, and the test
#      accuracy after EPOCHS epochs for each seed of SEEDS (target: mean
#      >= 89.5% after 3); the workers' reduction figures (trainnet's
#      "Worker r:" lines).
#
#   3. the gradient reduction overlapped with the backward pass
#      (parallel_train_bench overlap): 2 ranks x 1 thread, trainnet
#      "parallel" with DLACCEL_OVERLAP=0 (blocking reductions after the
#      backward) and =1 (each bucket started during the backward as soon
#      as its gradients are final) alternating in one run, medians of
#      ROUNDS (5) rounds: the total reduction time (the blocking path's),
#      the exposed part and overlap = 1 - exposed / total, for the digit
#      CNN with 4 MiB buckets (one bucket: nothing can start early) and
#      0.25 MiB ones (3 buckets), and the MLP (8 MiB of gradients, 4 MiB
#      buckets).
#
#   CNN=0 skips 2, OVERLAP=0 skips 3; EPOCHS (3), SEEDS ("0 1 2"), SMALL=1
#   uses cnn_fmnist's --small data (for a quick look, not for the accuracy
#   target).
# What else ran is printed first (the load average), since the figures
# are only as good as the machine was quiet.
BUILD=${BUILD:-.}
EPOCHS=${EPOCHS:-3}
SEEDS=${SEEDS:-"0 1 2"}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DLACCEL_PLUGIN_PATH=${DLACCEL_PLUGIN_PATH:-$BUILD/plugins.d}
mpirun="mpirun --oversubscribe"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
num() { sed -n "s/.*$1 *\([0-9.][0-9.]*\).*/\1/p" | head -n 1; }

# 1. MLP weak scaling, 1 and 2 ranks alternating, 3 runs each.
t1s= t2s=
for i in 1 2 3; do
    out=$(OMP_NUM_THREADS=1 $mpirun -np 1 "$BUILD/bench/parallel_train_bench" mlp)
    printf '    %s\n' "$out"
    a=$(printf '%s\n' "$out" | num "step")
    out=$(OMP_NUM_THREADS=1 $mpirun -np 2 "$BUILD/bench/parallel_train_bench" mlp)
    printf '    %s\n' "$out"
    b=$(printf '%s\n' "$out" | num "step")
    t1s="$t1s $a" t2s="$t2s $b"
done
med() { printf '%s\n' $* | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
t1=$(med $t1s) t2=$(med $t2s)
awk -v a="$t1" -v b="$t2" 'BEGIN { printf "MLP weak scaling: 1 rank x 1 thread %.3f ms, 2 ranks x 1 thread %.3f ms per step (medians of 3 runs): efficiency %.2f (target >= 0.80)\n", a, b, a / b }'

# 3. Overlap, before the long CNN runs.
if [ "${OVERLAP:-1}" != 0 ]; then
    for cfg in "cnn 4 40 128" "cnn 0.25 40 128" "mlp 4 20 256"; do
        set -- $cfg
        echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
        DLACCEL_BUCKET_MIB=$2 OMP_NUM_THREADS=1 $mpirun -np 2 "$BUILD/bench/parallel_train_bench" \
            overlap --net "$1" --rounds "${ROUNDS:-5}" --iterations "$3" --batch "$4"
    done
fi

[ "${CNN:-1}" = 0 ] && exit 0
# 2. The digit CNN through trainnet "parallel".
small=; [ "${SMALL:-0}" = 1 ] && small=--small
for seed in $SEEDS; do
    for cfg in "1 2" "2 1"; do
        set -- $cfg
        out=$(OMP_NUM_THREADS=$2 $mpirun -np "$1" "$BUILD/examples/cnn_fmnist" --parallel $small \
              --epochs "$EPOCHS" --seed "$seed" --chart /dev/null 2>&1)
        acc=$(printf '%s\n' "$out" | num "test accuracy:")
        ep=$(printf '%s\n' "$out" | num "time per epoch:")
        printf 'digit CNN, seed %s, %s rank(s) x %s thread(s): %s s per epoch, test accuracy %s%% after %s epochs\n' \
            "$seed" "$1" "$2" "$ep" "$acc" "$EPOCHS"
        printf '%s\n' "$out" | tr '\r' '\n' | grep -o 'Worker [0-9].*' | sed 's/^/    /'
    done
done

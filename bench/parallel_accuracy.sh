#!/bin/sh
# bench/parallel_accuracy.sh - does data-parallel training reach the
# accuracy of one process? The digit CNN (examples/cnn_fmnist) trained for
# EPOCHS epochs from each seed, through trainnet "parallel" as one process
# and as NP MPI ranks, and a table of the final test accuracies:
#
#   bench/parallel_accuracy.sh [-np NP] [SEED ...]     (default: -np 2, seeds 0 1 2)
#
# Run from the build folder, or set BUILD. What is compared: the same
# program, network, initial weights (seeded by --seed, then rank 0's copy
# broadcast), hyperparameters, global mini-batch (128: 64 + 64 on 2 ranks)
# and number of iterations per epoch (468); one process is the world of
# one, the same trainnet path without the combining. What is not the same
# is the data order: trainnet shuffles the queue once with the seed and
# gives each rank a contiguous part (1/NP of the images, its own for the
# whole run), which each rank shuffles every epoch with a stream of its
# own, so a parallel mini-batch is 64 images of one half and 64 of the
# other, not one of the single process's mini-batches. The two runs of a
# seed are therefore two different draws, as two seeds are: the question
# is whether the difference stays within the seed-to-seed spread.
#
#   LOOP=1      adds a column: the custom loop (cnn_fmnist without
#               --parallel, uint8 images, the README's figures) from the
#               same seed.
#   EPOCHS (3), SMALL=1 (cnn_fmnist's --small slice, for a quick look),
#   TIMEOUT     seconds per run (default 3600; a run past it is "timeout").
#   OMP_NUM_THREADS, when set, is passed on to every run; otherwise one
#   process takes every core and each of the NP ranks its share of them.
#
# Every run's full output is kept in OUT (default a fresh folder under
# /tmp), named by configuration and seed. What else ran matters for the
# times, not for the accuracies: the load average is printed first anyway.
BUILD=${BUILD:-.}
EPOCHS=${EPOCHS:-3}
TIMEOUT=${TIMEOUT:-3600}
np=2
while [ $# -gt 0 ]; do
    case $1 in
    -np) np=$2; shift 2 ;;
    -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
seeds=${*:-"0 1 2"}
prog=$BUILD/examples/cnn_fmnist
[ -x "$prog" ] || { echo "$0: no $prog (run from the build folder or set BUILD)" >&2; exit 1; }
command -v mpirun >/dev/null 2>&1 || { echo "$0: no mpirun on PATH (install openmpi-bin)" >&2; exit 1; }
[ -f "$BUILD/plugins.d/comm/mpi.json" ] ||
    { echo "$0: $BUILD/plugins.d/comm/mpi.json missing: the MPI plugin was not built" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export DLACCEL_PLUGIN_PATH=${DLACCEL_PLUGIN_PATH:-$BUILD/plugins.d}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/dla-paracc-XXXXXX")}
mkdir -p "$OUT"
small=; [ "${SMALL:-0}" = 1 ] && small=--small
xomp=; [ -n "${OMP_NUM_THREADS:-}" ] && xomp="-x OMP_NUM_THREADS"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# cnn_fmnist $small --epochs $EPOCHS, trainnet \"parallel\": 1 process against mpirun -np $np; outputs in $OUT"

# acc FILE: the final test accuracy a run printed, or why there is none.
acc() {
    a=$(sed -n 's/^test accuracy: *\([0-9.][0-9.]*\)%.*/\1/p' "$1" | tail -n 1)
    if [ -n "$a" ]; then echo "$a"; elif grep -q '^# timed out' "$1"; then echo timeout; else echo failed; fi
}
# run NAME SEED COMMAND...: one run under timeout into $OUT/NAME-SEED.out.
run() {
    f=$OUT/$1-$2.out; shift 2
    timeout -k 10 "$TIMEOUT" "$@" >"$f" 2>&1
    [ $? -eq 124 ] && echo "# timed out after $TIMEOUT s" >>"$f"
    acc "$f"
}

rows=
for s in $seeds; do
    l=-
    [ "${LOOP:-0}" = 1 ] && l=$(run loop "$s" "$prog" $small --epochs "$EPOCHS" --seed "$s" --chart /dev/null)
    one=$(run np1 "$s" "$prog" --parallel $small --epochs "$EPOCHS" --seed "$s" --chart /dev/null)
    par=$(run "np$np" "$s" mpirun --oversubscribe $xomp -x DLACCEL_PLUGIN_PATH -np "$np" \
          "$prog" --parallel $small --epochs "$EPOCHS" --seed "$s" --chart /dev/null)
    echo "# seed $s done: loop $l, 1 process $one, $np ranks $par"
    rows="$rows$s $l $one $par
"
done

# The table, then the mean and the (sample) standard deviation of each
# column and of the difference over the seeds where both runs ended.
printf '%s' "$rows" | awk -v np="$np" -v loop="${LOOP:-0}" '
function num(x) { return x ~ /^[0-9.]+$/ }
function stats(name, s, ss, n,   m, sd) {
    if (n == 0) return sprintf("%s: none", name)
    m = s / n; sd = n > 1 ? sqrt((ss - n * m * m) / (n - 1)) : 0
    return sprintf("%s %.2f (sd %.2f, n %d)", name, m, sd, n)
}
BEGIN {
    if (loop == 1) printf "| seed | custom loop | trainnet, 1 process | trainnet, %d ranks | %d ranks - 1 process |\n|---|---|---|---|---|\n", np, np
    else printf "| seed | trainnet, 1 process | trainnet, %d ranks | %d ranks - 1 process |\n|---|---|---|---|\n", np, np
}
{
    d = (num($3) && num($4)) ? sprintf("%+.2f", $4 - $3) : "-"
    if (loop == 1) printf "| %s | %s%s | %s%s | %s%s | %s |\n", $1, $2, num($2) ? "%" : "", $3, num($3) ? "%" : "", $4, num($4) ? "%" : "", d
    else printf "| %s | %s%s | %s%s | %s |\n", $1, $3, num($3) ? "%" : "", $4, num($4) ? "%" : "", d
    if (num($2)) { sl += $2; ssl += $2 * $2; nl++; if ($2 < minl || nl == 1) minl = $2; if ($2 > maxl || nl == 1) maxl = $2 }
    if (num($3)) { s1 += $3; ss1 += $3 * $3; n1++; if ($3 < min1 || n1 == 1) min1 = $3; if ($3 > max1 || n1 == 1) max1 = $3 }
    if (num($4)) { sn += $4; ssn += $4 * $4; nn++; if ($4 < minn || nn == 1) minn = $4; if ($4 > maxn || nn == 1) maxn = $4 }
    if (d != "-") { sd += $4 - $3; ssd += ($4 - $3) ^ 2; nd++ }
}
END {
    if (loop == 1 && nl) printf "custom loop: %s, range %.2f-%.2f\n", stats("mean", sl, ssl, nl), minl, maxl
    if (n1) printf "1 process: %s, range %.2f-%.2f\n", stats("mean", s1, ss1, n1), min1, max1
    if (nn) printf "%d ranks: %s, range %.2f-%.2f\n", np, stats("mean", sn, ssn, nn), minn, maxn
    print "difference (" np " ranks - 1 process, same seed): " stats("mean", sd, ssd, nd)
    if (n1 + nn < 2 * NR || (loop == 1 && nl < NR)) { print "some runs failed: see the outputs"; exit 1 }
}'

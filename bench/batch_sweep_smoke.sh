#!/bin/sh
# bench/batch_sweep_smoke.sh - bench/batch_sweep.sh runs and prints its table.
#
# A TAP test for `make check`: dlaccel's side alone (--no-torch: no PyTorch
# needed), one round at tiny batches with few calls (a few seconds). It
# checks the shape of the table, never a speed: the machines are shared and
# the figures are for a person (bench/batch_sweep.sh without --quick).
here=$(cd "$(dirname "$0")" && pwd)
build=${DLA_TEST_BUILDDIR:-.}
tmp=${TMPDIR:-/tmp}/dlaccel-batch-sweep.$$
command -v python3 >/dev/null 2>&1 || { echo "1..0 # SKIP no python3 to make the table"; exit 0; }
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT

echo 1..5
. "$(cd "$(dirname "$0")" && pwd)/tap.sh"

bash "$here/batch_sweep.sh" --quick --no-torch --build "$build" --cnn 1,2 --resnet 2,4 \
    >"$tmp/out" 2>&1
rc=$?
check "batch_sweep.sh --quick --no-torch exits 0" "$tmp/out" test $rc -eq 0
check "the digit CNN's train step has a row a batch: ms and us a sample, replayed and eager" \
    "$tmp/out" sh -c "sed -n '/^digit CNN train step/,/^growth/p' '$tmp/out' |
        grep -Eq '^ +2 \| +[0-9.]+ +[0-9.]+ \| +[0-9.]+ +[0-9.]+$'"
check "ResNet-20's train step and inference have their rows" "$tmp/out" \
    sh -c "sed -n '/^ResNet-20 inference/,/^growth/p' '$tmp/out' |
        grep -Eq '^ +4 \| +[0-9.]+ +[0-9.]+$'"
check "each table says how the per-sample cost grows from the largest batch to the smallest" \
    "$tmp/out" sh -c "test \$(grep -c '^growth of us/sample, batch [0-9]* -> [0-9]*' '$tmp/out') -eq 4"
check "it says what ran beside it" "$tmp/out" \
    grep -q '^  round 1 cnn dlaccel: load [0-9.]* [0-9.]* [0-9.]*; over 5% CPU: ' "$tmp/out"

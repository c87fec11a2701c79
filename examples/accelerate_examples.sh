#!/bin/sh
# Smoke test of the dla_accelerate examples, as a user runs them: each
# exits with 0 and prints what its MATLAB counterpart shows. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-examples-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..4"

# check N DESCRIPTION PATTERN...: the last run's status and output.
check() {
    n=$1; what=$2; shift 2
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status"; ok=no; }
    for pattern in "$@"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    if [ $ok = yes ]; then echo "ok $n - $what"; else sed 's/^/# /' "$tmp/out"; echo "not ok $n - $what"; fi
}

"$ex/accelerate_check" >"$tmp/out" 2>&1
status=$?
check 1 "accelerate_check: the tolerance check warns for baked noise, not for an RNG slot" \
    "AcceleratedFunction with properties:" "Function: @myUnsupportedFun" \
    "CheckMode: 'tolerance'" "CheckTolerance: 1.0000e-04" "3x3 dlarray" \
    "Accelerated outputs differ from underlying function outputs: output 1" \
    "myUnsupportedFun: the tolerance check warned" "mySupportedFun: no warning"

"$ex/accelerate_loss" "$tmp/loss.dlt" >"$tmp/out" 2>&1
status=$?
[ -s "$tmp/loss.dlt" ] || { echo "# no trace file"; status=1; }
check 2 "accelerate_loss: trains from one trace, saves it and prints it" \
    "iteration 200: loss" "Function: @modelLoss" "HitRate: 99.5" "Occupancy: 2" \
    "miss (input 5 dims 2x128 -> 2x64); Occupancy 4" "loaded back:" \
    "trace: 7 inputs, 5 outputs" "dla_crossentropy"

"$ex/accelerate_net" >"$tmp/out" 2>&1
status=$?
check 3 "accelerate_net: modelLoss(net, X, T) with the network as ctx trains as eagerly" \
    "iteration 200: loss" "Function: @modelLoss" "HitRate: 99.5" "Occupancy: 2" \
    "without the ctx kind: invalid argument" "dla_gradient: argument wrt[0] (16x2 single)" \
    "Pass it as a tensor input"

"$ex/lstm_function" 200 >"$tmp/out" 2>&1
status=$?
check 4 "lstm_function: a model function of dla_lstm learns the frequency from one trace" \
    "iteration 200: loss" "after 200 iterations: RMSE" "modelLoss: HitRate 99.5%, Occupancy 2"

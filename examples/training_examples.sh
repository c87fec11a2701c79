#!/bin/sh
# Smoke test of the training examples at small size (--small), as a user
# runs them: each exits with 0 and prints sane figures. Speaks TAP.
#   1 cnn_fmnist: the loss falls, test accuracy is far above chance (10%),
#     the accelerated model loss is replayed (HitRate), the chart is an SVG;
#     skipped when Fashion-MNIST is not installed (dataset-fashion-mnist).
#   2 waveform: the tolerance check stays silent, the accelerated loss's
#     HitRate is above 90%, the loss falls, accuracy is above the largest
#     class's share (35%).
#   3 slice_layer: forward and backward run, the gradients agree with
#     finite differences.
#   4 waveform --attention: the same with a causal self-attention layer.
#   5 waveform --transformer: the same with a transformer encoder (a graph
#     of position encoding, self-attention, residual additions, layer
#     norms).
#   6 waveform --bilstm: the same with a bilstm layer.
#   7 forecast: the loss falls; forecasting in open loop beats closed loop,
#     which beats repeating the last observed value.
#   8 cnn_fmnist --mobile: the MobileNet-style network (depthwise separable
#     convolutions, ReLU6, a squeeze-and-excitation gate, spatial dropout)
#     trains as test 1's does; skipped without Fashion-MNIST.
#   9 none of them left a file in the folder make check runs in: each runs
#     in the temporary folder, with its chart there (the waveform variants
#     wrote waveform-training.svg into the build folder).
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-training-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE DLA_EXAMPLE_SMALL
echo "1..9"
# Files of the runs below, if any, in the folder make check runs in are
# newer than this.
: >"$tmp/stamp"

# The number after a label on the first line that has it: num "HitRate:" file
num() {
    sed -n "s/.*$1 *\([-0-9.][0-9.e+-]*\).*/\1/p" "$2" | head -n 1
}
# ok_if N DESCRIPTION: passes when every check recorded in $bad passed.
ok_if() {
    if [ -z "$bad" ]; then
        echo "ok $1 - $2"
    else
        printf '%s\n' "$bad" | sed 's/^/# /'
        sed 's/^/#   | /' "$tmp/out" | tail -n 40
        echo "not ok $1 - $2"
    fi
}
# check CONDITION MESSAGE: awk evaluates the condition.
check() {
    awk "BEGIN { exit !($1) }" </dev/null || bad="$bad
$2"
}

# 1. cnn_fmnist
bad=
(cd "$tmp" && "$ex/cnn_fmnist" --small --chart "$tmp/cnn.svg" --save-initial "$tmp/start.st" \
    --first-losses 2) >"$tmp/out" 2>&1
status=$?
if [ $status -eq 77 ]; then
    echo "ok 1 # SKIP cnn_fmnist: Fashion-MNIST is not installed ($(head -n 1 "$tmp/out"))"
else
    [ $status -eq 0 ] || bad="exit status $status"
    first=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\1/p' "$tmp/out")
    last=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\2/p' "$tmp/out")
    acc=$(num "test accuracy:" "$tmp/out")
    hit=$(num "HitRate:" "$tmp/out")
    check "${first:-0} > 0 && ${last:-9} < 0.6 * ${first:-0}" "loss did not fall: $first -> $last"
    check "${acc:-0} > 50" "test accuracy $acc% (chance is 10%)"
    check "${hit:-0} > 90" "HitRate $hit%"
    grep -q "^time per epoch: " "$tmp/out" || bad="$bad
no time per epoch"
    grep -q "^peak RSS: [0-9]* MiB" "$tmp/out" || bad="$bad
no peak RSS"
    grep -q "^\[progress\] 100%  30/30" "$tmp/out" || bad="$bad
no progress lines (stdout is not a terminal)"
    tail -c 7 "$tmp/cnn.svg" 2>/dev/null | grep -q "</svg>" || bad="$bad
no chart at $tmp/cnn.svg"
    grep -q "^chart: $tmp/cnn.svg" "$tmp/out" || bad="$bad
the chart's path is not printed"
    # --first-losses: iteration 1's line agrees with the summary's
    one=$(sed -n 's/^iteration 1: loss \([0-9.]*\)$/\1/p' "$tmp/out")
    check "${one:-0} > 0 && (${one:-0} - ${first:-0})^2 < 1e-8" "iteration 1's loss line: '$one' against $first"
    grep -q "^iteration 2: loss " "$tmp/out" && ! grep -q "^iteration 3: loss " "$tmp/out" || bad="$bad
--first-losses 2 did not print exactly two loss lines"
    # --save-initial: a safetensors file whose header names the dlaccel format
    head -c 4096 "$tmp/start.st" 2>/dev/null | grep -q '"format":"dlaccel-net"' || bad="$bad
--save-initial wrote no dlaccel network at $tmp/start.st"
    ok_if 1 "cnn_fmnist --small: loss falls, test accuracy $acc%, HitRate $hit%, chart written, initial net saved"
fi

# 2. waveform
bad=
(cd "$tmp" && "$ex/waveform" --small --chart "$tmp/wave.svg") >"$tmp/out" 2>&1
status=$?
[ $status -eq 0 ] || bad="exit status $status"
grep -q "^CheckMode 'tolerance', 1 epoch: no warning" "$tmp/out" || bad="$bad
the tolerance check did not pass silently"
! grep -q "dlaccel\[warn\]" "$tmp/out" || bad="$bad
a warning was printed"
hit=$(num "HitRate" "$tmp/out")
acc=$(sed -n 's/^accuracy (each.*training \([0-9.]*\)%, held-out.*/\1/p' "$tmp/out")
first=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\1/p' "$tmp/out")
last=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\2/p' "$tmp/out")
check "${hit:-0} > 90" "HitRate $hit%"
check "${acc:-0} > 35" "training accuracy $acc%"
check "${first:-0} > 0 && ${last:-9} < 0.6 * ${first:-0}" "loss did not fall: $first -> $last"
grep -q "Epoch | *Iteration\|  Epoch  |  Iteration  |" "$tmp/out" || bad="$bad
no iteration table"
grep -q "Training finished: Max epochs completed." "$tmp/out" || bad="$bad
no end of training"
tail -c 7 "$tmp/wave.svg" 2>/dev/null | grep -q "</svg>" || bad="$bad
no chart"
ok_if 2 "waveform --small: no tolerance warning, HitRate $hit%, loss falls, accuracy $acc%"

# 3. slice_layer
bad=
(cd "$tmp" && "$ex/slice_layer" --small) >"$tmp/out" 2>&1
status=$?
[ $status -eq 0 ] || bad="exit status $status"
grep -q "^gradients: dX 16x16x4x6 single SSCB" "$tmp/out" || bad="$bad
no dX of X's dims"
grep -q "^gradient check .*: ok$" "$tmp/out" || bad="$bad
the gradient check failed"
grep -q "^accelerated: forward + backward .* Occupancy 2$" "$tmp/out" || bad="$bad
the accelerated layer did not replay one trace"
ok_if 3 "slice_layer --small: forward, backward and accelerated; gradients match finite differences"

# 4, 5, 6. waveform with a self-attention layer, with a transformer
# encoder, and with a bilstm layer
n=4
for variant in "attention:a selfAttentionLayer" "transformer:a transformer encoder" \
               "bilstm:a bilstmLayer"; do
    bad=
    (cd "$tmp" && "$ex/waveform" --small --${variant%%:*} --chart "$tmp/wave-${variant%%:*}.svg") \
        >"$tmp/out" 2>&1
    status=$?
    [ $status -eq 0 ] || bad="exit status $status"
    grep -q "^network: .*${variant#*:}" "$tmp/out" || bad="$bad
no line naming ${variant#*:}"
    grep -q "^CheckMode 'tolerance', 1 epoch: no warning" "$tmp/out" || bad="$bad
the tolerance check did not pass silently"
    hit=$(num "HitRate" "$tmp/out")
    first=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\1/p' "$tmp/out")
    last=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\2/p' "$tmp/out")
    check "${hit:-0} > 90" "HitRate $hit%"
    check "${first:-0} > 0 && ${last:-9} < 0.8 * ${first:-0}" "loss did not fall: $first -> $last"
    ok_if $n "waveform --small --${variant%%:*}: no tolerance warning, HitRate $hit%, loss falls"
    n=$((n + 1))
done

# 7. forecast: an LSTM predicting the next step, forecasting 25 steps in
# open and closed loop through dla_net_predict_state; both beat repeating
# the last observed value.
bad=
(cd "$tmp" && "$ex/forecast" --small) >"$tmp/out" 2>&1
status=$?
[ $status -eq 0 ] || bad="exit status $status"
first=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\1/p' "$tmp/out")
last=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\2/p' "$tmp/out")
open=$(sed -n 's/^RMSE of steps .*: open loop \([0-9.]*\), closed loop \([0-9.]*\), repeating the last observed value \([0-9.]*\)$/\1/p' "$tmp/out")
closed=$(sed -n 's/^RMSE of steps .*: open loop \([0-9.]*\), closed loop \([0-9.]*\), repeating the last observed value \([0-9.]*\)$/\2/p' "$tmp/out")
naive=$(sed -n 's/^RMSE of steps .*: open loop \([0-9.]*\), closed loop \([0-9.]*\), repeating the last observed value \([0-9.]*\)$/\3/p' "$tmp/out")
check "${first:-0} > 0 && ${last:-9} < 0.5 * ${first:-0}" "loss did not fall: $first -> $last"
check "${open:-9} < ${closed:-0} && ${closed:-9} < 0.9 * ${naive:-0}" "RMSE open $open, closed $closed, naive $naive"
ok_if 7 "forecast --small: loss falls, RMSE open loop $open < closed loop $closed < naive $naive"

# 8. cnn_fmnist --mobile
bad=
(cd "$tmp" && "$ex/cnn_fmnist" --small --mobile --chart "$tmp/mobile.svg") >"$tmp/out" 2>&1
status=$?
if [ $status -eq 77 ]; then
    echo "ok 8 # SKIP cnn_fmnist --mobile: Fashion-MNIST is not installed ($(head -n 1 "$tmp/out"))"
else
    [ $status -eq 0 ] || bad="exit status $status"
    first=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\1/p' "$tmp/out")
    last=$(sed -n 's/^loss: \([0-9.]*\) at iteration 1, \([0-9.]*\) at.*/\2/p' "$tmp/out")
    acc=$(num "test accuracy:" "$tmp/out")
    hit=$(num "HitRate:" "$tmp/out")
    check "${first:-0} > 0 && ${last:-9} < 0.6 * ${first:-0}" "loss did not fall: $first -> $last"
    check "${acc:-0} > 40" "test accuracy $acc% (chance is 10%)"
    check "${hit:-0} > 90" "HitRate $hit%"
    ok_if 8 "cnn_fmnist --small --mobile: loss falls, test accuracy $acc%, HitRate $hit%"
fi

# 9. Nothing left behind where make check runs (the build folder): a
# chart, a trace or a network file of the runs above would be newer than
# the stamp.
left=$(find . -maxdepth 1 -type f -newer "$tmp/stamp" \( -name '*.svg' -o -name '*.dlt' \
    -o -name '*.st' -o -name '*.safetensors' \) 2>/dev/null)
if [ -z "$left" ]; then
    echo "ok 9 - the examples left no file in $(pwd)"
else
    printf '%s\n' "$left" | sed 's/^/# left: /'
    echo "not ok 9 - the examples left files in $(pwd)"
fi

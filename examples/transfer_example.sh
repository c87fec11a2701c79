#!/bin/sh
# Smoke test of examples/transfer as a user runs it: a network trained on
# five Fashion-MNIST classes is saved, loaded, given a new classifier
# (dla_net_replace_layer) with its convolutions frozen, and trained on 10
# images of each of the other five classes, beside the same network trained
# from scratch on them. The frozen layers must come out bit for bit and the
# transferred network classify above 75%. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-transfer-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..3"

"$ex/transfer" --save "$tmp/net.safetensors" >"$tmp/out" 2>&1
status=$?
what="transfer: a new classifier on a frozen trained network"
if [ "$status" -eq 2 ] && grep -qF "dataset-fashion-mnist" "$tmp/out"; then
    echo "ok 1 - # SKIP Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"
else
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status (1: frozen layers changed, or 75% not reached)"; ok=no; }
    for pattern in "1. Base task: T-shirt/top, Trouser, Pullover, Dress, Coat" \
        "base network:" "replaced 'fc' by 'fc_new'" "fc_new" \
        "2. New task: Sandal, Shirt, Sneaker, Bag, Ankle boot (50 training images" \
        "from scratch:" "transferred:" "conv1, conv2, conv3 after training: unchanged, bit for bit"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    if [ $ok = yes ]; then
        echo "ok 1 - $what ($(grep -F 'from scratch:' "$tmp/out" | tr -s ' '), $(grep -F 'transferred:' "$tmp/out" | tr -s ' '))"
    else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi
fi

# `dlaccel net` shows the saved network with its frozen layers.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
what="dlaccel net shows the transferred network, its convolutions frozen"
if [ -f "$tmp/net.safetensors" ]; then
    "$tool" net "$tmp/net.safetensors" >"$tmp/net" 2>&1
    status=$?
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status"; ok=no; }
    for pattern in "dla_net with 12 layers" "fc_new" "Learnables (14)" "State (6)" \
        "conv1/Weights" "bn3/TrainedVariance"; do
        grep -qF -- "$pattern" "$tmp/net" || { echo "# output lacks: $pattern"; ok=no; }
    done
    # the three convolutions' weights and biases, and nothing else
    frozen=$(grep -c ' frozen$' "$tmp/net")
    [ "$frozen" -eq 6 ] || { echo "# $frozen rows marked frozen, expected 6"; ok=no; }
    grep -q '^  conv2/Bias .* frozen$' "$tmp/net" || { echo "# conv2/Bias not frozen"; ok=no; }
    if [ $ok = yes ]; then echo "ok 2 - $what"; else sed 's/^/# /' "$tmp/net" | tail -n 40; echo "not ok 2 - $what"; fi
else
    echo "ok 2 - # SKIP no saved network (test 1 did not run)"
fi

"$ex/transfer" --few 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--few wants a whole number in [1," "$tmp/out"; then
    echo "ok 3 - transfer --few 0 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 3 - transfer --few 0 is refused with a message"
fi

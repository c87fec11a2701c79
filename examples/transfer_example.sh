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
echo "1..2"

"$ex/transfer" >"$tmp/out" 2>&1
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

"$ex/transfer" --few 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "need positive counts" "$tmp/out"; then
    echo "ok 2 - transfer --few 0 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - transfer --few 0 is refused with a message"
fi

#!/bin/sh
# Smoke test of examples/autoencoder as a user runs it, at small size:
# trainnet with transposed convolutions and an "mse" loss on the images
# themselves reconstructs the test images at least twice as well as the
# mean training image; skipped when Fashion-MNIST is not installed
# (dataset-fashion-mnist). Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-autoencoder-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/autoencoder" --count 10000 --epochs 1 >"$tmp/out" 2>&1
status=$?
if [ "$status" -ne 0 ] && grep -q "dataset-fashion-mnist" "$tmp/out"; then
    echo "ok 1 # SKIP autoencoder: Fashion-MNIST is not installed ($(head -n 1 "$tmp/out"))"
else
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status (1: not below half the mean image's error)"; ok=no; }
    for pattern in "2-D Transposed Convolution" "Training finished: Max epochs completed." \
        "test reconstruction error (mean squared, pixels in [0, 1]):" \
        "test image 0 and its reconstruction:"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    what="autoencoder: transposed convolutions trained by trainnet reconstruct the test images"
    if [ $ok = yes ]; then echo "ok 1 - $what"
    else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi
fi

"$ex/autoencoder" --epochs 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--epochs wants a whole number in [1, 1000000], not '0'" "$tmp/out"; then
    echo "ok 2 - autoencoder --epochs 0 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - autoencoder --epochs 0 is refused with a message"
fi

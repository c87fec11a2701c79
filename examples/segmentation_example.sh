#!/bin/sh
# Smoke test of examples/segmentation as a user runs it: trainnet with
# crop2dLayer's "in"/"ref" skip connection and depthToSpace2dLayer's
# upsampling classifies the pixels of synthetic images (95% or more);
# bad arguments are refused. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-segmentation-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/segmentation" --count 1000 --epochs 4 >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: pixel accuracy below 95%)"; ok=no; }
for pattern in "Crop 2D" "Depth to Space 2D" "skip -> crop/in" "up -> crop/ref" \
    "Training finished: Max epochs completed." "test pixel accuracy:" \
    "test image 0, its rectangle and the prediction:"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
what="segmentation: a crop-and-concatenate network trained by trainnet classifies the pixels"
if [ $ok = yes ]; then echo "ok 1 - $what"
else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi

"$ex/segmentation" --count 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--count wants a whole number in [1, 10000000], not '0'" "$tmp/out"; then
    echo "ok 2 - segmentation --count 0 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - segmentation --count 0 is refused with a message"
fi

#!/bin/sh
# Smoke test of examples/volumes as a user runs it: trainnet trains a 3-D
# convolutional network (image3dInputLayer, convolution3dLayer,
# maxPooling3dLayer, globalAveragePooling3dLayer) on the volumes it makes,
# and the test volumes are classified above 90%. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-volumes-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/volumes" >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: test accuracy not above 90%)"; ok=no; }
for pattern in "3-D Image Input" "3-D Convolution" "3-D Max Pooling" \
    "3-D Global Average Pooling" "16x16x16x1 volumes with 'zerocenter' normalization" \
    "Training finished: Max epochs completed." "test accuracy:" "testnet: accuracy"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
what="volumes: a 3-D network trained by trainnet classifies the test volumes"
if [ $ok = yes ]; then echo "ok 1 - $what ($(grep -F 'test accuracy:' "$tmp/out"))"
else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi

"$ex/volumes" --count 10 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--count wants a whole number in [64," "$tmp/out"; then
    echo "ok 2 - volumes --count 10 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - volumes --count 10 is refused with a message"
fi

#!/bin/sh
# Smoke test of examples/pinn as a user runs it: trains the
# physics-informed network briefly and checks what it prints (second
# derivatives inside an accelerated loss, a replay with eager's bits).
# Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-pinn-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/pinn" --iterations 1500 >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: the error stayed above 0.05)"; ok=no; }
for pattern in "iteration 1500: loss" "largest error against sin(pi x)" \
    "Function: @modelLoss" "Occupancy: 1" "replay equals the eager call, bit for bit: yes" \
    "time per iteration"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
if [ $ok = yes ]; then echo "ok 1 - pinn trains u'' = -pi^2 sin(pi x) to within 0.05 through an accelerated loss"
else sed 's/^/# /' "$tmp/out"; echo "not ok 1 - pinn trains u'' = -pi^2 sin(pi x) to within 0.05 through an accelerated loss"; fi

"$ex/pinn" --iterations 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--iterations needs a positive count" "$tmp/out"; then
    echo "ok 2 - a bad --iterations is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - a bad --iterations is refused with a message"
fi

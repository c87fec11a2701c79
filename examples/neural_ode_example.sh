#!/bin/sh
# Smoke test of examples/neural_ode as a user runs it: fits the neural ODE
# briefly, eager and accelerated, and checks what it prints (the loss, the
# solver's steps, predictions within 0.2 of the true system: the example
# exits 1 otherwise), and that bad arguments are refused.
# Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-node-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..3"

n=1
for mode in "" "--accelerate"; do
    "$ex/neural_ode" --iterations 400 $mode >"$tmp/out" 2>&1
    status=$?
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status (1: a prediction was off by more than 0.2)"; ok=no; }
    for pattern in "iteration  400: loss" "steps over the 40 times" "time per iteration" \
        "prediction from [-2; 0] over [0, 15]: mean absolute error"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    if [ -n "$mode" ]; then
        grep -qF "HitRate: 99.75" "$tmp/out" || { echo "# output lacks: HitRate: 99.75"; ok=no; }
    fi
    what="neural_ode${mode:+ $mode} learns the spiral to within 0.2 in 400 iterations"
    if [ $ok = yes ]; then echo "ok $n - $what"
    else sed 's/^/# /' "$tmp/out"; echo "not ok $n - $what"; fi
    n=$((n + 1))
done

"$ex/neural_ode" --iterations 0 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--iterations wants a whole number in [1, 100000000], not '0'" "$tmp/out"; then
    echo "ok $n - neural_ode --iterations 0 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok $n - neural_ode --iterations 0 is refused with a message"
fi

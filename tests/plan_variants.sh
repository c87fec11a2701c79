#!/bin/sh
# test_plan_differential under each DLACCEL_PLAN value (docs/environment.md)
# and on the test devices that plan otherwise: testmem (no fused kernels,
# memory the host cannot address) and graphwrap (the device runs whole
# replays itself, plan_replay). Each must give eager's bits. One TAP line
# per run; a failed run's output follows as comments.
B="$DLA_TEST_BUILDDIR"
T="$B/tests/test_plan_differential"
PP="$DLACCEL_PLUGIN_PATH"
unset CMOCKA_MESSAGE_OUTPUT
log="${TMPDIR:-/tmp}/dla-plan-variants.$$"
n=0
fails=0
echo "1..7"
run() { # name, then the environment assignments
    name=$1
    shift
    n=$((n + 1))
    if env "$@" "$T" >"$log" 2>&1; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        sed 's/^/# /' "$log"
        fails=$((fails + 1))
    fi
}
for v in off single-result conv-bias-in no-in-place no-epilogue; do
    run "DLACCEL_PLAN=$v" DLACCEL_PLAN=$v
done
run "testmem" DLACCEL_DEVICE=testmem DLACCEL_PLUGIN_PATH="$B/tests/plugins.d:$PP"
run "graphwrap" DLACCEL_DEVICE=graphwrap DLACCEL_PLUGIN_PATH="$B/tests/cpuwrap.d/graphwrap:$PP"
rm -f "$log"
[ "$fails" -eq 0 ]

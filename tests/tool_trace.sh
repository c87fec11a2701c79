#!/bin/sh
# `dlaccel trace` as a user runs it: a trace saved by the accelerate_loss
# example prints; a missing, foreign or truncated file is exit status 1
# with the library's reason naming the file; --ops lists the op names; a
# wrong call is exit status 2. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-tool-trace-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..6"
n=0
# check DESCRIPTION EXPECTED-STATUS PATTERN...: runs the tool with $args.
check() {
    n=$((n + 1)); what=$1; want=$2; shift 2
    # shellcheck disable=SC2086
    "$tool" $args >"$tmp/out" 2>&1
    got=$?
    ok=yes
    [ "$got" -eq "$want" ] || { echo "# exit status $got, expected $want"; ok=no; }
    for pattern in "$@"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    if [ $ok = yes ]; then echo "ok $n - $what"; else sed 's/^/# /' "$tmp/out"; echo "not ok $n - $what"; fi
}

"$DLA_TEST_BUILDDIR/examples/accelerate_loss" "$tmp/loss.dlt" >/dev/null 2>&1
args="trace $tmp/loss.dlt"
check "a saved trace prints: inputs, ops with shapes, outputs" 0 \
    "$tmp/loss.dlt:" "trace: 7 inputs, 5 outputs" "input 4: %4:2x128 single CB" \
    "dla_fullyconnect(" "dla_softmax(" "dla_crossentropy(" "outputs:"
args="trace $tmp/none.dlt"
check "a missing file names the file and the reason" 1 \
    "dlaccel trace: dla_trace_load: $tmp/none.dlt: cannot open it: No such file or directory"
printf 'not a trace\n' >"$tmp/text.dlt"
args="trace $tmp/text.dlt"
check "a foreign file is not a trace file" 1 "$tmp/text.dlt: not a dlaccel trace file"
head -c 100 "$tmp/loss.dlt" >"$tmp/cut.dlt"
args="trace $tmp/cut.dlt"
check "a truncated file says how much is there" 1 "$tmp/cut.dlt: truncated: 100 of its"
args="trace --ops"
check "--ops lists the op names a file may use" 0 "accumulate" "dla_maxpool backward" \
    "dla_tensor_to_device"
args="trace"
check "no file is a usage error" 2 "dlaccel trace: takes one file (or --ops)"

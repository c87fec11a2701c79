#!/bin/sh
# The examples and the bench as a user runs them with DLACCEL_DEVICE=opencl:
# each exits with 0, runs on the OpenCL device and says what it should.
# Speaks TAP.
. "$(dirname "$0")/opencl_env.sh"
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-opencl-examples-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
echo "1..3"

# check N DESCRIPTION PATTERN...: the last run's status and output.
check() {
    n=$1; what=$2; shift 2
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status"; ok=no; }
    for pattern in "$@"; do
        grep -qE -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    if [ $ok = yes ]; then echo "ok $n - $what"; else sed 's/^/# /' "$tmp/out"; echo "not ok $n - $what"; fi
}

"$ex/quickstart" >"$tmp/out" 2>&1
status=$?
check 1 "quickstart: C = A*B checked on the OpenCL device" "default device: opencl:0" \
    "step 10/10  C = A\*B \(1024x1024 single\) on opencl:0: .* max error"

"$ex/accelerate_loss" "$tmp/loss.dlt" >"$tmp/out" 2>&1
status=$?
check 2 "accelerate_loss: a model loss trained through dla_accelerate on the OpenCL device" \
    "HitRate" "loss"

"$DLA_TEST_BUILDDIR/bench/dlaccel-bench" --quick --device opencl --workload add \
    >"$tmp/out" 2>&1
status=$?
check 3 "dlaccel-bench --device opencl: a row for the OpenCL device" \
    "^opencl:0 +add64MiB +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ GB/s"

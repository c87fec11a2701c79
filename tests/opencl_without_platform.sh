#!/bin/sh
# The opencl plugin where the ICD loader finds no OpenCL platform
# (OCL_ICD_VENDORS pointing at an empty folder): it reports no device, the
# registry skips it with that reason, the cpu plugin loads and is the
# default as usual, and asking for opencl fails with the reason instead of
# running elsewhere. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-no-opencl-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/vendors"
OCL_ICD_VENDORS="$tmp/vendors"
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/opencl:$DLACCEL_PLUGIN_PATH"
export OCL_ICD_VENDORS DLACCEL_PLUGIN_PATH
unset DLACCEL_DEVICE DLACCEL_LOG
echo "1..3"

"$tool" devices >"$tmp/out" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "libdlaccel-opencl.so: no device" "$tmp/out" &&
    grep -q "^Default device: cpu:0" "$tmp/out"; then
    echo "ok 1 - no platform: opencl is skipped for having no device, cpu:0 is the default"
else
    sed 's/^/# /' "$tmp/out"
    echo "not ok 1 - no platform: opencl is skipped for having no device, cpu:0 is the default"
fi

DLACCEL_DEVICE=opencl "$tool" devices >"$tmp/out" 2>&1
status=$?
if [ $status -eq 1 ] && grep -q 'DLACCEL_DEVICE="opencl" names no device' "$tmp/out"; then
    echo "ok 2 - no platform: DLACCEL_DEVICE=opencl fails and says why"
else
    sed 's/^/# /' "$tmp/out"
    echo "not ok 2 - no platform: DLACCEL_DEVICE=opencl fails and says why (status $status)"
fi

"$DLA_TEST_BUILDDIR/examples/quickstart" >"$tmp/out" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "default device: cpu:0" "$tmp/out"; then
    echo "ok 3 - no platform: the quickstart runs on cpu:0"
else
    sed 's/^/# /' "$tmp/out"
    echo "not ok 3 - no platform: the quickstart runs on cpu:0 (status $status)"
fi

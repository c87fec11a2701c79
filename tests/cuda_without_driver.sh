#!/bin/sh
# The cuda plugin on a machine without a CUDA driver (CI, the development
# machines: the toolkit, no GPU): it loads, reports no device with the
# reason ("no CUDA driver: ..."), the registry skips it and the cpu plugin
# is the default as usual, asking for cuda fails with the reason instead
# of running elsewhere, and ExecutionEnvironment "gpu" fails and says so.
# The module must not need any CUDA library at load: no NEEDED entry for
# the driver, the runtime or the libraries it opens with dlopen. Skips
# (77) where a driver is installed. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
probe="$DLA_TEST_BUILDDIR/tests/cuda_probe"
lib="$DLA_TEST_BUILDDIR/plugins/cuda/.libs/libdlaccel-cuda.so"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "1..0 # SKIP a GPU is present (nvidia-smi -L lists one): this test is for machines without a driver"
    exit 77
fi
if command -v python3 >/dev/null 2>&1 &&
    python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' >/dev/null 2>&1; then
    echo "1..0 # SKIP libcuda.so.1 loads here: this test is for machines without a driver"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-no-cuda-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/cuda:$DLACCEL_PLUGIN_PATH"
export DLACCEL_PLUGIN_PATH
unset DLACCEL_DEVICE DLACCEL_LOG DLACCEL_PLUGINS_DISABLE
echo "1..6"
n=0
# result DESCRIPTION OK: prints the TAP line, and the output when not ok.
result() {
    n=$((n + 1))
    if [ "$2" = yes ]; then
        echo "ok $n - $1"
    else
        sed 's/^/# /' "$tmp/out"
        echo "not ok $n - $1"
    fi
}

DLACCEL_LOG=info "$tool" devices >"$tmp/out" 2>&1
status=$?
ok=no
if [ $status -eq 0 ] && grep -q "libdlaccel-cuda.so: no device" "$tmp/out" &&
    grep -q "no CUDA driver" "$tmp/out" && grep -q "^Default device: cpu:0" "$tmp/out" &&
    grep -q "^  cpu:0" "$tmp/out"; then
    ok=yes
fi
result "no driver: cuda is skipped for having no device (no CUDA driver), cpu:0 is listed and the default" $ok

DLACCEL_DEVICE=cuda "$tool" devices >"$tmp/out" 2>&1
status=$?
ok=no
if [ $status -eq 1 ] && grep -q 'DLACCEL_DEVICE="cuda" names no device' "$tmp/out" &&
    grep -q "plugin 'cuda'.*no CUDA driver" "$tmp/out"; then
    ok=yes
fi
result "no driver: DLACCEL_DEVICE=cuda fails and says why (status $status)" $ok

"$probe" cuda >"$tmp/out" 2>&1
status=$?
ok=no
if [ $status -eq 0 ] && grep -q "^default: cpu:0 " "$tmp/out" &&
    grep -q "^get cuda: failed: .*plugin 'cuda'.*no CUDA driver" "$tmp/out"; then
    ok=yes
fi
result "no driver: the default device is cpu:0 and dla_device_get(\"cuda\") fails naming cuda" $ok

ok=no
if grep '^training gpu: failed' "$tmp/out" |
    grep -q -F 'ExecutionEnvironment "gpu": no device other than a cpu'; then
    ok=yes
fi
result "no driver: dla_training_device(\"gpu\") fails and says why" $ok

ok=no
if grep -q "^training auto: cpu:0" "$tmp/out"; then
    ok=yes
fi
result "no driver: dla_training_device(\"auto\") gives cpu:0" $ok

# What the dynamic loader needs to load the module: none of CUDA's.
if command -v readelf >/dev/null 2>&1; then
    readelf -d "$lib" >"$tmp/out" 2>&1
    status=$?
    ok=no
    if [ $status -eq 0 ] && grep -q NEEDED "$tmp/out" &&
        ! grep NEEDED "$tmp/out" | grep -q -E 'libcuda|libcudart|libcublas|libcudnn|libnvrtc'; then
        ok=yes
    fi
    result "libdlaccel-cuda.so needs no CUDA library at load (no NEEDED libcuda, libcudart, libcublas, libcudnn, libnvrtc)" $ok
else
    n=$((n + 1))
    echo "ok $n # SKIP readelf not found (binutils)"
fi

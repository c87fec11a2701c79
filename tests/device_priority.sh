#!/bin/sh
# plugin.priority_by_type: a device ranks for the default device ("auto")
# with its type's priority when its manifest gives one, else with the
# plugin's priority. The testmem plugin (one device of type "test",
# priority 1) beside the cpu plugin (priority 100), through manifests
# written here. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
plugins="$DLA_TEST_BUILDDIR/plugins.d"
lib="$DLA_TEST_BUILDDIR/tests/plugins/.libs/libdlaccel-testmem.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-prio-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_PLUGINS_DISABLE DLACCEL_LOG
# Only the plugins named here: an installed one (the opencl plugin after a
# `make install`) would take part otherwise.
DLACCEL_INSTALLED_PLUGINS=off
export DLACCEL_INSTALLED_PLUGINS

# manifest PRIORITY BY-TYPE: testmem's manifest in $tmp/testmem.json.
manifest() {
    printf '{"file_format_version": "1.0.0", "plugin": {"name": "testmem",\n' >"$tmp/testmem.json"
    printf ' "library_path": "%s", "abi_version": "1.5", "device_types": ["test"],\n' "$lib" >>"$tmp/testmem.json"
    printf ' "priority": %s, "priority_by_type": %s}}\n' "$1" "$2" >>"$tmp/testmem.json"
}

echo "1..8"
n=0
# check DESCRIPTION PATH PATTERN...: `dlaccel devices` with
# DLACCEL_PLUGIN_PATH=PATH (exit status 0), each pattern grepped.
check() {
    n=$((n + 1)); what=$1; DLACCEL_PLUGIN_PATH=$2; shift 2
    export DLACCEL_PLUGIN_PATH
    "$tool" devices >"$tmp/out" 2>&1
    got=$?
    ok=yes
    if [ "$got" -ne 0 ]; then
        echo "# exit status $got, expected 0"; ok=no
    fi
    for pattern in "$@"; do
        if ! grep -qF -- "$pattern" "$tmp/out"; then
            echo "# output lacks: $pattern"; ok=no
        fi
    done
    if [ $ok = yes ]; then
        echo "ok $n - $what"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - $what"
    fi
}

manifest 1 '{"test": 150, "cpu": 5}'
check "a device whose type has a higher priority than cpu's plugin is the default" "$tmp:$plugins" \
    "Default device: testmem:0" "why: highest priority (150)"

manifest 150 '{"test": 50}'
check "a device whose type ranks below cpu is not, whatever its plugin's priority" "$tmp:$plugins" \
    "Default device: cpu:0" "why: highest priority (100)"

manifest 1 '{"gpu": 500}'
check "a type the device does not have leaves it at its plugin's priority" "$tmp:$plugins" \
    "Default device: cpu:0" "why: highest priority (100)"

manifest 1 '{"test": 100}'
check "equal priorities go to the plugin found first (testmem)" "$tmp:$plugins" \
    "Default device: testmem:0" "why: highest priority (100)"
check "equal priorities go to the plugin found first (cpu)" "$plugins:$tmp" \
    "Default device: cpu:0" "why: highest priority (100)"

manifest 1 '{"test": "high"}'
check "a priority that is not an integer makes the manifest invalid, naming the field" "$tmp:$plugins" \
    "Default device: cpu:0" "field 'plugin.priority_by_type.test': expected an integer, found a string"

# dla_training_device("gpu"): the best device that is not a cpu, whatever
# the sign of its priority (a negative one was never taken: "no device
# other than a cpu is loaded (found: testmem:0 (test), ...)").
# probe DESCRIPTION PATTERN: tests/cuda_probe's output, the pattern grepped.
probe() {
    n=$((n + 1))
    DLACCEL_PLUGIN_PATH="$tmp:$plugins" "$DLA_TEST_BUILDDIR/tests/cuda_probe" >"$tmp/out" 2>&1
    if grep -qF -- "$2" "$tmp/out"; then
        echo "ok $n - $1"
    else
        sed 's/^/#   /' "$tmp/out"
        echo "not ok $n - $1"
    fi
}
manifest -1 '{}'
probe "ExecutionEnvironment gpu takes a device of a negative priority" "training gpu: testmem:0"
manifest 1 '{"test": -2147483648}'
probe "ExecutionEnvironment gpu takes a device of the least priority by type" "training gpu: testmem:0"

#!/bin/sh
# A plugin that crashes in its init (tests/plugins/fake_crash.c) takes the
# process down; what is left must name it: the line the registry logs at
# info before calling the init, and the breadcrumb it leaves meanwhile,
# which makes the next start warn (at the default log level) which plugin
# crashed and how to skip it. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
plugins="$DLA_TEST_BUILDDIR/plugins.d"
lib="$DLA_TEST_BUILDDIR/tests/plugins/.libs/fake_crash.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-crash-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_PLUGINS_DISABLE DLACCEL_LOG
# Only the plugins named here: an installed one (the opencl plugin after a
# `make install`) would take part otherwise.
DLACCEL_INSTALLED_PLUGINS=off
export DLACCEL_INSTALLED_PLUGINS
ulimit -c 0 2>/dev/null # the crash is expected: no core file
# Under AddressSanitizer (.ci/sanitize) the crash must still be a death by
# its signal, not ASan's report and exit status 1.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
export ASAN_OPTIONS
mkdir "$tmp/m" "$tmp/cache"
XDG_CACHE_HOME="$tmp/cache"
DLACCEL_PLUGIN_PATH="$tmp/m:$plugins"
export XDG_CACHE_HOME DLACCEL_PLUGIN_PATH
printf '{"file_format_version": "1.0.0", "plugin": {"name": "crash",\n' >"$tmp/m/crash.json"
printf ' "library_path": "%s", "abi_version": "1.0"}}\n' "$lib" >>"$tmp/m/crash.json"
crumbs() { ls "$tmp/cache/dlaccel" 2>/dev/null | grep -c '^init-.*\.crumb$'; }

echo "1..9"
n=0
# verdict DESCRIPTION CONDITION-OK PATTERN...: ok when the condition held
# ("yes") and each pattern is in $tmp/out (a leading ! : is not).
verdict() {
    n=$((n + 1)); what=$1; ok=$2; shift 2
    for p in "$@"; do
        case $p in
        !*) ! grep -qF -- "${p#!}" "$tmp/out" || { echo "# output has: ${p#!}"; ok=no; } ;;
        *) grep -qF -- "$p" "$tmp/out" || { echo "# output lacks: $p"; ok=no; } ;;
        esac
    done
    if [ "$ok" = yes ]; then echo "ok $n - $what"; else
        sed 's/^/#   /' "$tmp/out"; echo "not ok $n - $what"; fi
}

# 1. The crash itself: killed by a signal, the plugin named just before.
DLACCEL_LOG=info "$tool" devices >"$tmp/out" 2>&1
status=$?
ok=yes; [ $status -gt 128 ] || { echo "# exit status $status, expected death by a signal"; ok=no; }
verdict "dlaccel devices dies in the plugin's init, having named it at info" $ok \
    "plugin 'crash': calling dlaccel_plugin_init of $lib"

# 2. It left its breadcrumb.
ok=yes; [ "$(crumbs)" -eq 1 ] || { echo "# $(crumbs) breadcrumbs in $tmp/cache/dlaccel"; ok=no; }
: >"$tmp/out"
verdict "the crash leaves one breadcrumb in \$XDG_CACHE_HOME/dlaccel" $ok

# 3. The next start names the plugin at the default level, and skipping it
# as the warning says works.
DLACCEL_PLUGINS_DISABLE=crash "$tool" devices >"$tmp/out" 2>&1
status=$?
ok=yes; [ $status -eq 0 ] || { echo "# exit status $status"; ok=no; }
[ "$(crumbs)" -eq 0 ] || { echo "# the breadcrumb is still there"; ok=no; }
verdict "the next start warns which plugin crashed in its init and how to skip it" $ok \
    "dlaccel[warn]: plugin 'crash' ($lib) crashed during its init in an earlier run" \
    "DLACCEL_PLUGINS_DISABLE=crash skips it" "Default device: cpu:0"

# 4. Said once: the start after that is quiet.
DLACCEL_PLUGINS_DISABLE=crash "$tool" devices >"$tmp/out" 2>&1
verdict "the warning is given once" yes "!crashed during its init"

# 5. A breadcrumb of a process that still runs is an init in progress, not
# a crash: left alone. This shell is such a process.
printf 'busy\n/some/lib.so\n' >"$tmp/cache/dlaccel/init-$$.crumb"
DLACCEL_PLUGINS_DISABLE=crash "$tool" devices >"$tmp/out" 2>&1
ok=yes; [ -f "$tmp/cache/dlaccel/init-$$.crumb" ] || { echo "# the live process's breadcrumb was removed"; ok=no; }
verdict "another process's init in progress is not taken for a crash" $ok "!plugin 'busy'"

# 6. A crash in device_count, after an init that returned (where the cuda
# plugin's cudaGetDeviceCount and the opencl plugin's ICD loader first
# call a driver): named at info just before, and breadcrumbed too.
rm -f "$tmp/cache/dlaccel/init-$$.crumb"
# crash_in STEP [VAR=VALUE...]: `dlaccel devices` with the plugin crashing
# in STEP, at info; ok when it died by a signal leaving one breadcrumb.
crash_in() {
    step=$1; shift
    env DLA_FAKE_CRASH_IN="$step" DLACCEL_LOG=info "$@" "$tool" devices >"$tmp/out" 2>&1
    status=$?
    ok=yes; [ $status -gt 128 ] || { echo "# exit status $status, expected death by a signal"; ok=no; }
    [ "$(crumbs)" -eq 1 ] || { echo "# $(crumbs) breadcrumbs in $tmp/cache/dlaccel"; ok=no; }
}
# next_start: `dlaccel devices` with the plugin skipped; ok when the
# breadcrumb is gone.
next_start() {
    DLACCEL_PLUGINS_DISABLE=crash "$tool" devices >"$tmp/out" 2>&1
    ok=yes; [ "$(crumbs)" -eq 0 ] || { echo "# the breadcrumb is still there"; ok=no; }
}
crash_in device_count
verdict "a crash in device_count leaves a breadcrumb, the plugin named at info just before" $ok \
    "plugin 'crash': listing the devices of $lib (device_count, device_info)"

# 7. The next start says where it crashed.
next_start
verdict "the next start warns that the plugin crashed listing its devices" $ok \
    "dlaccel[warn]: plugin 'crash' ($lib) crashed during its device listing (device_count, device_info) in an earlier run"

# 8. A crash in device_open (where the cuda plugin makes its context, at
# the device's first use): named at info just before, and breadcrumbed.
crash_in device_open DLACCEL_DEVICE=crash
verdict "a crash in device_open leaves a breadcrumb, the device named at info just before" $ok \
    "device crash:0: calling device_open of $lib"

# 9. The next start says which device's opening crashed.
next_start
verdict "the next start warns that the plugin crashed opening its device" $ok \
    "dlaccel[warn]: plugin 'crash' ($lib) crashed during its device_open (crash:0) in an earlier run"

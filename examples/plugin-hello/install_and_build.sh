#!/bin/sh
# The hello plugin built as a third party builds it: dlaccel installed
# (make install DESTDIR=<tmp>, as a package build stages it), then
# examples/plugin-hello/Makefile run in a folder of its own with nothing
# but pkg-config pointed into that copy (PKG_CONFIG_LIBDIR and
# PKG_CONFIG_SYSROOT_DIR), its `make check` running the installed
# `dlaccel check-plugin`, its `make install` putting the plugin where
# dlaccel.pc says and the installed library finds it. Also: every manifest
# declares the ABI its plugin answers, and README.md's first program
# builds against the installed dlaccel and runs. TAP; skipped only without
# pkg-config.
here=$(cd "$(dirname "$0")" && pwd)
build=$DLA_TEST_BUILDDIR
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
if ! command -v "$PKG_CONFIG" >/dev/null 2>&1; then
    echo "1..0 # SKIP $PKG_CONFIG is not installed: a plugin built outside the tree finds dlaccel with it"
    exit 0
fi
# Every command that starts processes runs under a limit.
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 120"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-hello-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
n=0
ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}
not_ok() {
    n=$((n + 1))
    echo "not ok $n - $1"
    [ -f "$2" ] && sed 's/^/# /' "$2" | tail -n 30
}
finish() {
    echo "1..$n"
    exit 0
}
# The nested makes are plain ones: nothing of the make running the tests
# (its jobserver, its TESTS=) is theirs.
unset MAKEFLAGS MFLAGS MAKELEVEL DLACCEL_DEVICE

# 1. dlaccel installed into the staging root.
if $limit make -C "$build" install DESTDIR="$root" >"$tmp/install.log" 2>&1; then
    ok "make install DESTDIR=<tmp> of dlaccel"
else
    not_ok "make install DESTDIR=<tmp> of dlaccel" "$tmp/install.log"
    finish
fi

# 2. The folders dlaccel.pc names are where make install put the cpu
# plugin, and the installed library searches manifestsdir.
pc=$(find "$root" -name dlaccel.pc | head -n 1)
PKG_CONFIG_LIBDIR=$(dirname "$pc")
PKG_CONFIG_PATH=
PKG_CONFIG_SYSROOT_DIR=$root
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
var() { PKG_CONFIG_SYSROOT_DIR= "$PKG_CONFIG" --variable="$1" dlaccel; }
pluginsdir=$(var pluginsdir)
manifestsdir=$(var manifestsdir)
bindir=$(var bindir)
libdir=$(var libdir)
LD_LIBRARY_PATH=$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
tool=$root$bindir/dlaccel
# The installed manifests name the installed libraries, which live under
# the staging root here: copies with the root put in front stand in for
# the installed folder (and DLACCEL_PLUGIN_PATH for its compiled-in path).
relocate() { # FOLDER: the manifests of the staged manifestsdir, relocated
    mkdir -p "$1"
    for m in "$root$manifestsdir"/*.json; do
        sed -e "s|\"library_path\": \"/|\"library_path\": \"$root/|" "$m" >"$1/$(basename "$m")"
    done
}
relocate "$tmp/installed.d"
DLACCEL_PLUGIN_PATH=$tmp/installed.d
export DLACCEL_PLUGIN_PATH
DLACCEL_LOG=debug $limit "$tool" devices >"$tmp/devices.log" 2>&1
if [ -z "$pluginsdir" ] || [ -z "$manifestsdir" ]; then
    echo "# dlaccel.pc: pluginsdir '$pluginsdir', manifestsdir '$manifestsdir'" >"$tmp/vars.log"
    not_ok "dlaccel.pc has pluginsdir and manifestsdir" "$tmp/vars.log"
elif [ ! -f "$root$pluginsdir/libdlaccel-cpu.so" ] || [ ! -f "$root$manifestsdir/cpu.json" ]; then
    find "$root" -name '*cpu*' >"$tmp/vars.log"
    not_ok "the cpu plugin installed in pluginsdir $pluginsdir, its manifest in manifestsdir $manifestsdir" "$tmp/vars.log"
elif ! grep -q "installed folder $manifestsdir," "$tmp/devices.log"; then
    not_ok "the installed library searches manifestsdir $manifestsdir" "$tmp/devices.log"
else
    ok "dlaccel.pc: pluginsdir $pluginsdir and manifestsdir $manifestsdir, where make install put the cpu plugin and the library searches"
fi

# 2b. README.md's first program, as a user builds it against an installed
# dlaccel (`cc first.c $(pkg-config --cflags --libs dlaccel)`), warnings as
# errors, and run: the softmax's columns sum to 1. Taken from the README
# itself, so the page cannot drift from the API.
mkdir -p "$tmp/first"
awk '/^## A first program/ { f = 1 } f && /^```c/ { g = 1; next } g && /^```/ { exit } g' \
    "$here/../../README.md" >"$tmp/first/first.c"
# A library built with the sanitizers (.ci/sanitize) needs their runtime in
# the program too, first of its libraries.
san=
case "${DLA_TEST_SANITIZER:-none}" in
address) san="-fsanitize=address,undefined" ;;
thread) san="-fsanitize=thread" ;;
esac
# shellcheck disable=SC2046,SC2086
if [ -s "$tmp/first/first.c" ] &&
    $limit ${CC:-cc} -std=c11 -Wall -Wextra -Werror $san "$tmp/first/first.c" -o "$tmp/first/first" \
        $("$PKG_CONFIG" --cflags --libs dlaccel) >"$tmp/first.log" 2>&1 &&
    $limit "$tmp/first/first" >>"$tmp/first.log" 2>&1 &&
    grep -q "sums to 1.0000 on [a-z0-9_-]*:[0-9]" "$tmp/first.log"; then
    ok "README.md's first program builds with pkg-config --cflags --libs against the installed dlaccel and runs"
else
    cat "$tmp/first/first.c" >>"$tmp/first.log"
    not_ok "README.md's first program builds with pkg-config --cflags --libs against the installed dlaccel and runs" \
        "$tmp/first.log"
fi

# 3. Built in a folder of its own, with pkg-config alone.
mkdir -p "$tmp/hello" && cd "$tmp/hello" || exit 1
if $limit make -f "$here/Makefile" >"$tmp/make.log" 2>&1; then
    ok "make: hello built against the installed dlaccel with pkg-config alone"
else
    not_ok "make: hello built against the installed dlaccel with pkg-config alone" "$tmp/make.log"
    finish
fi

# 4. Its make check: the installed dlaccel check-plugin on the build.
if $limit make -f "$here/Makefile" check >"$tmp/check.log" 2>&1 &&
    grep -q "^every case passed" "$tmp/check.log"; then
    ok "make check: installed dlaccel check-plugin passes on hello"
else
    not_ok "make check: installed dlaccel check-plugin passes on hello" "$tmp/check.log"
fi

# 5. Its make install: into pluginsdir and manifestsdir under DESTDIR, the
# manifest naming the library where it will be, not where it was staged.
if [ -n "$pluginsdir" ] && [ -n "$manifestsdir" ] &&
    $limit make -f "$here/Makefile" install DESTDIR="$root" >"$tmp/hinstall.log" 2>&1 &&
    [ -f "$root$pluginsdir/libdlaccel-hello.so" ] &&
    grep -q "\"library_path\": \"$pluginsdir/libdlaccel-hello.so\"" "$root$manifestsdir/hello.json"; then
    ok "make install DESTDIR: the library in pluginsdir, its manifest in manifestsdir naming it"
else
    [ -f "$root$manifestsdir/hello.json" ] && cat "$root$manifestsdir/hello.json" >>"$tmp/hinstall.log"
    not_ok "make install DESTDIR: the library in pluginsdir, its manifest in manifestsdir naming it" \
        "$tmp/hinstall.log"
fi

# 6. Installed, it is found beside the installed cpu plugin, becomes the
# device asked for, and passes check-plugin.
relocate "$tmp/installed2.d"
DLACCEL_PLUGIN_PATH=$tmp/installed2.d
if DLACCEL_DEVICE=hello $limit "$tool" devices >"$tmp/devices2.log" 2>&1 &&
    grep -q "Default device: hello:0" "$tmp/devices2.log" &&
    $limit "$tool" check-plugin "$tmp/installed2.d/hello.json" >"$tmp/check2.log" 2>&1; then
    ok "the installed hello is found, is the device asked for, and passes check-plugin"
else
    cat "$tmp/check2.log" >>"$tmp/devices2.log" 2>/dev/null
    not_ok "the installed hello is found, is the device asked for, and passes check-plugin" \
        "$tmp/devices2.log"
fi

# 7. Every manifest declares the ABI its plugin answers (the installed
# ones, hello's, and the test plugin testmem's): "declared 1.0, plugin
# speaks 1.5" is a manifest left behind.
DLACCEL_PLUGIN_PATH=$tmp/installed2.d:$build/tests/plugins.d
$limit "$tool" devices >"$tmp/devices3.log" 2>&1
grep "plugin speaks" "$tmp/devices3.log" >"$tmp/abi.log"
wrong=$(sed -nE 's/.*declared ([0-9.]+), plugin speaks ([0-9.]+).*/\1 \2/p' "$tmp/abi.log" |
    awk '$1 != $2' | wc -l)
loaded=$(wc -l <"$tmp/abi.log")
if [ "$loaded" -ge 3 ] && [ "$wrong" -eq 0 ]; then
    ok "every manifest declares the ABI its plugin speaks ($loaded plugins)"
else
    cat "$tmp/devices3.log" >>"$tmp/abi.log"
    not_ok "every manifest declares the ABI its plugin speaks ($wrong of $loaded differ)" "$tmp/abi.log"
fi
finish

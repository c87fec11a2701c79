#!/bin/sh
# Which plugins dlaccel check-plugin compares.
#
# 1-2. It loads the plugin of a manifest as every program
# does: a manifest that is a symbolic link has its relative library_path
# taken from the link's folder (discovery reads the folder the link is in;
# docs/plugins.md, section 2), never from its target's. check-plugin once
# put the target's folder on the path, so it passed a link whose library
# no program could load, and failed one that loads. Each layout's verdict
# must be that of `DLACCEL_DEVICE=mine dlaccel devices`.
# 3. A plugin named cpu (a replacement of the installed one) is its own
# oracle, since one manifest answers to a name: said, with the cpu plugin
# it shadows, instead of a bare "every case passed".
# 4. A manifest in a folder whose name has a ':' (which the colon-separated
# path cannot hold) is said to be that, not "not a .json file?".
# 5-7. A folder, a file whose name does not end in .json, and a manifest
# that names no plugin are said to be that: a folder put its parent on the
# path, every manifest there was read and warned about, and the answer
# was "not found by discovery (not a .json file?)"; an invalid manifest
# without a name was "plugin '' invalid".
# 8. A manifest whose abi_version is not the version init answers is said
# to be (docs/plugins.md, section 9's checklist), and one that matches is
# not. TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
plugins="$DLA_TEST_BUILDDIR/plugins.d"
cpulib="$DLA_TEST_BUILDDIR/plugins/cpu/.libs/libdlaccel-cpu.so"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-cplink-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_PLUGINS_DISABLE DLACCEL_LOG
DLACCEL_PLUGIN_PATH=$plugins
export DLACCEL_PLUGIN_PATH
echo "1..8"
n=0
# layout NAME WHERE: the manifest in $tmp/NAME/real, linked from
# $tmp/NAME/link, its library (relative) beside the real file or the link.
layout() {
    name=$1 where=$2
    n=$((n + 1))
    mkdir -p "$tmp/$name/real" "$tmp/$name/link"
    printf '{"file_format_version": "1.0.0", "plugin": {"name": "mine",\n' >"$tmp/$name/real/mine.json"
    printf ' "library_path": "libdlaccel-mine.so", "abi_version": "1.9"}}\n' >>"$tmp/$name/real/mine.json"
    ln -s "$tmp/$name/real/mine.json" "$tmp/$name/link/mine.json"
    ln -s "$cpulib" "$tmp/$name/$where/libdlaccel-mine.so"
    DLACCEL_PLUGIN_PATH="$tmp/$name/link:$plugins" DLACCEL_DEVICE=mine "$tool" devices \
        >"$tmp/devices.out" 2>&1
    loads=$?
    timeout 300 "$tool" check-plugin --kernel fill --cases 2 "$tmp/$name/link/mine.json" \
        >"$tmp/check.out" 2>&1
    checked=$?
    if [ "$loads" -eq "$checked" ]; then
        echo "ok $n - library beside the $where: check-plugin exits $checked, as a program finds it (devices: $loads)"
    else
        echo "not ok $n - library beside the $where: check-plugin exits $checked, dlaccel devices $loads"
        sed 's/^/# /' "$tmp/check.out" | head -n 10
        grep -i "mine" "$tmp/devices.out" | sed 's/^/# /' | head -n 10
    fi
}
layout a real
layout b link

n=$((n + 1))
mkdir "$tmp/cpu"
sed -e "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"$cpulib\"|" "$plugins/cpu.json" >"$tmp/cpu/cpu.json"
"$tool" check-plugin --kernel fill --cases 2 "$tmp/cpu/cpu.json" >"$tmp/check.out" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q "^note: plugin 'cpu' is its own oracle" "$tmp/check.out" &&
    grep -qF "note: it shadows the cpu plugin of $plugins/cpu.json, which is not the oracle" "$tmp/check.out"; then
    echo "ok $n - a replacement cpu plugin is said to be its own oracle, naming the one it shadows"
else
    echo "not ok $n - a replacement cpu plugin checked against itself without a word (exit $status)"
    sed 's/^/# /' "$tmp/check.out" | head -n 10
fi

n=$((n + 1))
mkdir "$tmp/a:b"
cp "$tmp/cpu/cpu.json" "$tmp/a:b/cpu.json"
"$tool" check-plugin --kernel fill --cases 2 "$tmp/a:b/cpu.json" >"$tmp/check.out" 2>&1
status=$?
if [ $status -eq 1 ] && grep -qF "its folder $tmp/a:b has a ':', which DLACCEL_PLUGIN_PATH cannot hold" "$tmp/check.out"; then
    echo "ok $n - a manifest in a folder with a ':' is refused for that reason"
else
    echo "not ok $n - a manifest in a folder with a ':' (exit $status)"
    sed 's/^/# /' "$tmp/check.out" | head -n 10
fi

# refused DESCRIPTION ARGUMENT EXPECTED: check-plugin ARGUMENT exits 1
# with EXPECTED, and reads no other manifest (no warning about one).
refused() {
    n=$((n + 1))
    "$tool" check-plugin --kernel fill --cases 2 "$2" >"$tmp/check.out" 2>&1
    status=$?
    if [ $status -eq 1 ] && grep -qF -- "$3" "$tmp/check.out" && ! grep -q "warn" "$tmp/check.out"; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1 (exit $status)"
        sed 's/^/# /' "$tmp/check.out" | head -n 10
    fi
}
mkdir -p "$tmp/parent/dir"
printf '{"plugin": {}}\n' >"$tmp/parent/sibling.json"
refused "a folder given as the manifest is said to be one" "$tmp/parent/dir" \
    "dlaccel check-plugin: $tmp/parent/dir: a folder, not a manifest"
cp "$tmp/cpu/cpu.json" "$tmp/parent/cpu.txt"
refused "a manifest whose name does not end in .json is said to be one no program finds" \
    "$tmp/parent/cpu.txt" "$tmp/parent/cpu.txt: discovery reads only files whose names end in .json"
mkdir "$tmp/noname"
printf '{"file_format_version": "1.0.0", "plugin": {' >"$tmp/noname/x.json"
n=$((n + 1))
"$tool" check-plugin --kernel fill --cases 2 "$tmp/noname/x.json" >"$tmp/check.out" 2>&1
status=$?
if [ $status -eq 1 ] && grep -qF "dlaccel check-plugin: $tmp/noname/x.json: invalid: invalid JSON at line 1" "$tmp/check.out"; then
    echo "ok $n - a manifest that names no plugin is said to be invalid, with the reason"
else
    echo "not ok $n - a manifest that names no plugin (exit $status)"
    sed 's/^/# /' "$tmp/check.out" | head -n 10
fi

n=$((n + 1))
mkdir "$tmp/minor"
# A copy of the library: the cpu plugin keeps its own file, which another
# plugin name cannot load a second time (docs/plugins.md, "duplicate").
cp "$cpulib" "$tmp/minor/libdlaccel-cpuminor.so"
sed -e "s|\"abi_version\": \"[^\"]*\"|\"abi_version\": \"1.2\"|" -e 's|"name": "cpu"|"name": "cpuminor"|' \
    -e "s|\"library_path\": \"[^\"]*\"|\"library_path\": \"libdlaccel-cpuminor.so\"|" \
    "$tmp/cpu/cpu.json" >"$tmp/minor/cpuminor.json"
"$tool" check-plugin --kernel fill --cases 2 "$tmp/minor/cpuminor.json" >"$tmp/check.out" 2>&1
status=$?
"$tool" check-plugin --kernel fill --cases 2 "$tmp/cpu/cpu.json" >"$tmp/check2.out" 2>&1
if [ $status -eq 0 ] &&
    grep -q "^note: the manifest declares ABI 1.2 and the plugin answers 1\.[0-9]*: keep the two the same" "$tmp/check.out" &&
    ! grep -q "note: the manifest declares" "$tmp/check2.out"; then
    echo "ok $n - a manifest declaring another ABI than init answers is noted, a matching one not"
else
    echo "not ok $n - the declared and answered ABI (exit $status)"
    sed 's/^/# /' "$tmp/check.out" "$tmp/check2.out" | head -n 10
fi

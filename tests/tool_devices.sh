#!/bin/sh
# `dlaccel devices` as a user runs it, against the build tree's plugins:
# the exit status says whether DLACCEL_DEVICE can be had, the output says
# why, and DLACCEL_LOG=debug shows discovery step by step. Speaks TAP.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
plugins="$DLA_TEST_BUILDDIR/plugins.d"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-tool-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_PLUGINS_DISABLE DLACCEL_LOG
DLACCEL_PLUGIN_PATH="$plugins"
export DLACCEL_PLUGIN_PATH

echo "1..35"
n=0
# check DESCRIPTION EXPECTED-STATUS PATTERN...: runs the tool (arguments in
# $args, output in $tmp/out), compares the status and greps each pattern.
check() {
    n=$((n + 1)); what=$1; want=$2; shift 2
    # shellcheck disable=SC2086
    "$tool" $args >"$tmp/out" 2>&1
    got=$?
    ok=yes
    if [ "$got" -ne "$want" ]; then
        echo "# exit status $got, expected $want"; ok=no
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

# with VAR=VALUE... -- DESCRIPTION STATUS PATTERN...: check with the
# variables exported for this one run (a plain prefix on a shell function
# call is not portable).
with() {
    saved_path=$DLACCEL_PLUGIN_PATH
    while [ "$1" != -- ]; do export "${1?}"; shift; done
    shift
    check "$@"
    unset DLACCEL_DEVICE DLACCEL_LOG
    DLACCEL_PLUGIN_PATH=$saved_path
}

args=devices
with DLACCEL_DEVICE=nosuch -- "DLACCEL_DEVICE naming an unknown plugin exits 1 with the reason" 1 \
    "Default device: none" "'nosuch': no plugin named 'nosuch'"

printf '{"file_format_version": "1.0.0", "plugin": {"name": "cpu2",\n' >"$tmp/cpu2.json"
printf ' "library_path": "libdlaccel-cpu2.so", "abi_version": "1.0"}}\n' >>"$tmp/cpu2.json"
with DLACCEL_PLUGIN_PATH="$tmp:$plugins" DLACCEL_DEVICE=cpu2 -- \
    "DLACCEL_DEVICE naming a plugin that fails to load exits 1 with dlerror" 1 \
    "'cpu2': plugin 'cpu2'" "failed to load: cannot load library $tmp/libdlaccel-cpu2.so"

with DLACCEL_DEVICE=cpu -- "DLACCEL_DEVICE=cpu exits 0 and says why cpu:0 is the default" 0 \
    "cpu:0  (default)" "why: DLACCEL_DEVICE entry 'cpu'" "state         loaded, 1 device"

with DLACCEL_DEVICE="nosuch,cpu" -- "a DLACCEL_DEVICE list falls back to its next entry" 0 \
    "Default device: cpu:0" "passed over: 'nosuch'"

check "with DLACCEL_DEVICE unset the highest priority plugin is the default" 0 \
    "Default device: cpu:0" "why: highest priority (100)" "$plugins" "from DLACCEL_PLUGIN_PATH" \
    "from installed" "ABI           declared 1.9, plugin speaks 1.9"

printf '{"file_format_version": "1.0.0", "plugin": {"name": "broken",,}}\n' >"$tmp/broken.json"
with DLACCEL_PLUGIN_PATH="$tmp:$plugins" DLACCEL_LOG=debug -- \
    "DLACCEL_LOG=debug shows discovery step by step" 0 \
    "discovery: folder 1/" "manifest $tmp/broken.json: reading" \
    "manifest $tmp/broken.json: invalid JSON at line 1" \
    "cannot load library $tmp/libdlaccel-cpu2.so: " \
    "plugin 'cpu': dlopen " "calling dlaccel_plugin_init" "default device cpu:0"

# A manifest's text is shown with its control characters escaped: a
# description holding "\u001b[2J" cleared the terminal (written raw).
mkdir "$tmp/esc"
printf '{"file_format_version": "1.0.0", "plugin": {"name": "esc",\n' >"$tmp/esc/esc.json"
printf ' "description": "clear\\u001b[2Jme\\u0007 \\u009b1m caf\\u00e9",\n' >>"$tmp/esc/esc.json"
printf ' "library_path": "libdlaccel-esc.so", "abi_version": "1.0"}}\n' >>"$tmp/esc/esc.json"
n=$((n + 1))
DLACCEL_PLUGIN_PATH="$tmp/esc:$plugins" "$tool" devices >"$tmp/out" 2>&1
got=$?
esc=$(printf '\033')
c1=$(printf '\302\233')
if [ $got -eq 0 ] && grep -qF 'description   clear\x1b[2Jme\x07 \u009b1m café' "$tmp/out" &&
    ! grep -q "$esc" "$tmp/out" && ! grep -q "$c1" "$tmp/out"; then
    echo "ok $n - a manifest's description is shown with its control characters escaped"
else
    cat -v "$tmp/out" | sed 's/^/#   /'
    echo "not ok $n - a manifest's description is shown with its control characters escaped (exit $got)"
fi

# The instruction set the cpu plugin's kernels run with is this CPU's
# widest one they were written for (AVX-512, else AVX2), not the baseline
# the plugin is compiled for (it said simd=sse2 while AVX-512 kernels ran).
simd=
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then simd=avx512f
elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then simd=avx2; fi
if [ -n "$simd" ]; then
    check "the cpu plugin reports the instruction set its kernels use ($simd)" 0 "simd=$simd;"
else
    n=$((n + 1)); echo "ok $n # SKIP neither AVX-512 nor AVX2 on this CPU"
fi

args=version
check "dlaccel version prints the library and ABI versions" 0 "dlaccel " "(plugin ABI 1."

# --help (or -h) after any command prints that command's help, as
# `dlaccel help COMMAND` does, and exits 0: each command took it for one
# of its own arguments (check-plugin: "unknown option or missing value").
for cmd in devices trace net check-plugin export-images version help; do
    args="$cmd --help"
    check "dlaccel $cmd --help prints its usage and exits 0" 0 "usage: dlaccel $cmd"
done
args="check-plugin --kernel fill -h"
check "-h among a command's options prints its help too" 0 \
    "usage: dlaccel check-plugin [options] MANIFEST" "Options: --kernel NAME"

# The list shows each command's usage whole, as its own help does (a
# fixed buffer cut export-images' to "... [--dir IDXDIR] O").
n=$((n + 1))
"$tool" help >"$tmp/list" 2>&1
cut=
for cmd in devices trace net check-plugin export-images version help; do
    usage=$("$tool" help "$cmd" | sed -n 's/^usage: dlaccel //p')
    grep -qxF -- "  $usage" "$tmp/list" || grep -qF -- "  $usage " "$tmp/list" || cut="$cut [$usage]"
done
if [ -z "$cut" ]; then
    echo "ok $n - dlaccel help lists every command's usage whole"
else
    sed 's/^/#   /' "$tmp/list"; echo "not ok $n - dlaccel help cuts the usage of:$cut"
fi

args="export-images --split bogus $tmp/out"
check "export-images --split with neither train nor test is a usage error (exit 2)" 2 \
    "dlaccel export-images: --split bogus: \"train\" or \"test\""

# Each option last without its value was "unknown argument --limit".
for opt in --split --dir --limit; do
    args="export-images $tmp/out $opt"
    check "export-images $opt without its value says so (exit 2)" 2 \
        "dlaccel export-images: $opt needs a value"
done
# A count past int64 was taken as the largest (strtoll saturates).
args="export-images --limit 99999999999999999999999 $tmp/out"
check "export-images --limit past int64 is a usage error (exit 2)" 2 \
    "dlaccel export-images: --limit 99999999999999999999999: a count >= 1"

# A tiny Fashion-MNIST (3 blank images, labels 0 1 2), and an OUTDIR
# whose files' paths pass 4095 bytes: their names were cut
# ("0_T-shirt-top/00001.pn") and the export said it wrote them, exit 0.
mkdir "$tmp/idx"
{ printf '\000\000\010\003\000\000\000\003\000\000\000\034\000\000\000\034'; head -c 2352 /dev/zero; } |
    gzip -c >"$tmp/idx/train-images-idx3-ubyte.gz"
printf '\000\000\010\001\000\000\000\003\000\001\002' | gzip -c >"$tmp/idx/train-labels-idx1-ubyte.gz"
args="export-images --dir $tmp/idx $tmp/small"
check "export-images of a small IDX folder writes its images" 0 "wrote 3 train images of 28x28"
comp=$(printf '%0200d' 0 | tr 0 d)
long=$tmp/long
while [ ${#long} -lt 3860 ]; do long=$long/$comp; done
long=$long/$(printf "%0$((4071 - ${#long}))d" 0 | tr 0 e)
args="export-images --dir $tmp/idx $long"
check "export-images refuses an OUTDIR whose files' paths would pass 4095 bytes (exit 1)" 1 \
    "the paths of its files would be longer than 4095 bytes (nothing written)"
args=frobnicate
check "an unknown command exits 2 with the list of commands" 2 \
    "unknown command 'frobnicate'" "devices" "version"
args="help frobnicate"
check "dlaccel help with an unknown command names it and exits 2" 2 \
    "dlaccel help: no command 'frobnicate'"

# Output that cannot be written (a full disk) is a failure, not exit 0.
n=$((n + 1))
if [ -w /dev/full ]; then
    "$tool" version >/dev/full 2>"$tmp/err"
    got=$?
    if [ $got -eq 1 ] && grep -qF "dlaccel version: cannot write the output" "$tmp/err"; then
        echo "ok $n - output to a full disk exits 1 and says so"
    else
        sed 's/^/#   /' "$tmp/err"; echo "not ok $n - output to a full disk exits 1 (got $got)"
    fi
else
    echo "ok $n # SKIP no /dev/full here"
fi

# A closed standard output is a failure too: the first file the library
# opened took its number (the cpu plugin's lock file in /dev/shm), the
# listing went into that file and the exit status was 0. (That file is
# made only where OMP_NUM_THREADS is unset, as a user's shell has it.)
n=$((n + 1))
env -u OMP_NUM_THREADS "$tool" devices >&- 2>"$tmp/err"
got=$?
if [ $got -eq 1 ] && grep -qF "dlaccel devices: cannot write the output" "$tmp/err"; then
    echo "ok $n - a closed standard output exits 1 and says so"
else
    sed 's/^/#   /' "$tmp/err"; echo "not ok $n - a closed standard output exits 1 (got $got)"
fi

# check-plugin's numbers: a negative or overflowing seed, a case number
# that made the case count overflow, and no cases at all were taken.
for bad in "--seed -1" "--seed 99999999999999999999999" "--case 2147483647" "--cases 0"; do
    args="check-plugin $bad --kernel fill $plugins/cpu.json"
    check "check-plugin $bad exits 2 with the reason" 2 "dlaccel check-plugin: "
done


# --case I runs case I of each kernel at once: the cases are numbered
# 0, 1, ... each with its own random stream, and the loop counted up to I
# (--case 2000000000: two billion skipped indices per kernel, 26 s).
n=$((n + 1))
timeout 10 "$tool" check-plugin --case 2000000000 "$plugins/cpu.json" >"$tmp/out" 2>&1
got=$?
if [ $got -eq 0 ] && grep -qF "case 2000000000 of each kernel" "$tmp/out" &&
    grep -q "^every case passed" "$tmp/out"; then
    echo "ok $n - check-plugin --case 2000000000 runs that case of each kernel at once"
else
    sed 's/^/#   /' "$tmp/out" | tail -n 5
    echo "not ok $n - check-plugin --case 2000000000 (exit $got; 124: over 10 s)"
fi

# The kernels of the suite, as an unknown --kernel lists them from the
# table the suite runs, are each named by `dlaccel help check-plugin` and
# by docs/plugins.md's list of options (the help text lacked the two ABI
# 1.9 kernels, conv_forward_fused and conv_backward_data_fused).
n=$((n + 1))
"$tool" check-plugin --kernel nosuch "$plugins/cpu.json" >"$tmp/out" 2>&1
got=$?
kernels=$(sed -n "s/.*'nosuch' is not a kernel of the suite (\([a-z_, ]*\);.*/\1/p" "$tmp/out" | tr -d ,)
"$tool" help check-plugin | tr -s ' \n' '  ' >"$tmp/help"
tr -s ' \n' '  ' <"${srcdir:-.}/docs/plugins.md" >"$tmp/doc"
missing=
for k in $kernels; do
    grep -qE "[ (]$k[,)]" "$tmp/help" || missing="$missing help:$k"
    grep -qE "[ (]$k[,)]" "$tmp/doc" || missing="$missing docs/plugins.md:$k"
done
if [ $got -eq 2 ] && [ "$(echo $kernels | wc -w)" -ge 23 ] && [ -z "$missing" ]; then
    echo "ok $n - check-plugin --kernel nosuch lists the suite's $(echo $kernels | wc -w) kernels; help and docs/plugins.md name each"
else
    sed 's/^/#   /' "$tmp/out"
    echo "not ok $n - the suite's kernels (exit $got; got: $kernels) named in help and docs:$missing"
fi

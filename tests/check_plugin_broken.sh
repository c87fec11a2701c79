#!/bin/sh
# dlaccel check-plugin fails the deliberately broken test plugins
# (tests/plugins/cpuwrap.c), each with a line naming the kernel and the
# case that reruns it:
#   declineall  declines strided_copy on non-dense views, which nothing
#               rescues (the core makes views dense with strided_copy);
#   badindex    reads gather's and scatter_add's index views as dense;
#   zerosign    gives +0 for neg(+0) (x * -1 + 0): 8, an exact result is
#               exact in the sign of a zero too (the compare was ==);
#   kitunary    (tests/plugins/kitunary.c, a third party's first kernel on
#               the kit) with DLA_KITUNARY_BUG=sigmoid-tail flushes
#               sigmoid to 0 below -20: 9-10, passed without the bug and
#               failed with it (its cases drew inputs in -4..4 only).
# and passes denseonly, whose declines the core's dense retry rescues.
# 6-7. A device of the plugin that cannot be opened (testmem's second with
# DLA_TESTMEM_BROKEN=1) is a failure naming it and the reason, beside the
# results of the others: it was passed over, and "1 device ... every case
# passed" said nothing of it; `--device 1` said "no device of that index".
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
wrap="$DLA_TEST_BUILDDIR/tests/cpuwrap.d"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-broken-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE
echo "1..10"
n=0
# expect STATUS PATTERN PLUGIN KERNEL: check-plugin on one kernel of a
# wrapped plugin exits with STATUS and prints a line matching PATTERN.
expect() {
    want=$1 pattern=$2 plugin=$3 kernel=$4
    n=$((n + 1))
    timeout 300 "$tool" check-plugin --kernel "$kernel" "$wrap/$plugin/$plugin.json" \
        >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -eq "$want" ] && grep -q -- "$pattern" "$tmp/out"; then
        echo "ok $n - check-plugin $plugin --kernel $kernel: exit $status, \"$pattern\""
    else
        echo "not ok $n - check-plugin $plugin --kernel $kernel: exit $status (want $want and \"$pattern\")"
        sed 's/^/# /' "$tmp/out" | head -20
    fi
}
expect 1 "^FAIL declineall:0 strided_copy case [0-9]* .*the core rescues no decline of strided_copy" \
    declineall strided_copy
expect 1 "^FAIL badindex:0 gather case 1 .*index 1xN \[off 1 st 1,2\]" badindex gather
expect 1 "^FAIL badindex:0 scatter_add case [0-9]* " badindex scatter_add
expect 0 "^denseonly:0 conv_forward .*declined and passed on the dense retry" denseonly conv_forward
expect 0 "^denseonly:0 conv_forward_fused .*declined and passed as the core runs them then, two launches" \
    denseonly conv_forward_fused

testmem="$DLA_TEST_BUILDDIR/tests/plugins.d/testmem.json"
for only in "" "--device 1"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    DLA_TESTMEM_DEVICES=2 DLA_TESTMEM_BROKEN=1 timeout 300 "$tool" check-plugin --kernel memory \
        --cases 2 $only "$testmem" >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -eq 1 ] &&
        grep -q "^FAIL testmem:1 cannot be opened: .*testmem: device 1 is broken" "$tmp/out" &&
        grep -q "^some devices cannot be opened" "$tmp/out" &&
        { [ -n "$only" ] || grep -q "^testmem:0 *memory *ok, 2 cases" "$tmp/out"; }; then
        echo "ok $n - check-plugin $only: a device that cannot be opened fails with the reason"
    else
        echo "not ok $n - check-plugin $only: a device that cannot be opened (exit $status)"
        sed 's/^/# /' "$tmp/out" | head -20
    fi
done

expect 1 "^FAIL zerosign:0 unary case 0 .*unary neg .* is 0, the oracle's -0 (allowed difference 0)" \
    zerosign unary

mkdir "$tmp/kitunary"
printf '{"file_format_version": "1.0.0", "plugin": {"name": "kitunary", "library_path": "%s", "abi_version": "1.0"}}\n' \
    "$DLA_TEST_BUILDDIR/tests/plugins/.libs/kitunary.so" >"$tmp/kitunary/kitunary.json"
for bug in "" sigmoid-tail; do
    n=$((n + 1))
    DLA_KITUNARY_BUG=$bug timeout 300 "$tool" check-plugin --kernel unary --cases 300 \
        "$tmp/kitunary/kitunary.json" >"$tmp/out" 2>&1
    status=$?
    if [ -z "$bug" ] && [ $status -eq 0 ] && grep -q "^every case passed" "$tmp/out"; then
        echo "ok $n - check-plugin kitunary --kernel unary: a right kernel on the kit passes"
    elif [ -n "$bug" ] && [ $status -eq 1 ] &&
        grep -q "^FAIL kitunary:0 unary case [0-9]* .*unary sigmoid .* is 0, the oracle's" "$tmp/out"; then
        echo "ok $n - check-plugin kitunary --kernel unary: sigmoid flushed to 0 below -20 fails"
    else
        echo "not ok $n - check-plugin kitunary --kernel unary, bug '$bug' (exit $status)"
        sed 's/^/# /' "$tmp/out" | head -20
    fi
done

#!/bin/sh
# dlaccel check-plugin fails the deliberately broken test plugins
# (tests/plugins/cpuwrap.c), each with a line naming the kernel and the
# case that reruns it:
#   declineall  declines strided_copy on non-dense views, which nothing
#               rescues (the core makes views dense with strided_copy);
#   badindex    reads gather's and scatter_add's index views as dense.
# and passes denseonly, whose declines the core's dense retry rescues.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
wrap="$DLA_TEST_BUILDDIR/tests/cpuwrap.d"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-broken-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE
echo "1..5"
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

#!/bin/sh
# The conformance suite (dlaccel check-plugin) on every plugin the build
# tree has: cpu (against itself: its results do not depend on how its
# threads split the work), the test-only testmem and denseonly (the cpu
# plugin declining every non-dense view, which the core's dense retry
# rescues; the broken wrappers are tests/check_plugin_broken.sh's),
# graphwrap (the cpu plugin with plan_replay as a recorded graph), and
# opencl when it was built and finds a device, and then once more for opencl's GEMM with its own kernel on
# the large cases it would give CLBlast, and for its summed fused programs
# (fused_reduce and the pair) in each layout, interpreted and compiled,
# and for its sums as on a device without double (DLACCEL_OPENCL_FP64=off).
# One TAP stream: each run's lines renumbered, the plan last.
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-conformance-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE
set -- "$DLA_TEST_BUILDDIR/plugins.d/cpu.json" "$DLA_TEST_BUILDDIR/tests/plugins.d/testmem.json" \
    "$DLA_TEST_BUILDDIR/tests/cpuwrap.d/denseonly/denseonly.json" \
    "$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap/graphwrap.json"
if [ -f "$DLA_TEST_BUILDDIR/plugins/opencl/opencl.json" ]; then
    if DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/opencl:$DLACCEL_PLUGIN_PATH" \
        DLACCEL_DEVICE=opencl "$tool" devices >/dev/null 2>&1; then
        set -- "$@" "$DLA_TEST_BUILDDIR/plugins/opencl/opencl.json"
    else
        echo "# the opencl plugin was built but finds no device: not checked"
    fi
fi
n=0
# run MANIFEST LABEL [ARGS...]: one check-plugin run, its TAP lines
# renumbered into this stream (LABEL appended to each).
run() {
    manifest=$1 label=$2
    shift 2
    "$tool" check-plugin --tap "$@" "$manifest" >"$tmp/out" 2>&1
    status=$?
    while IFS= read -r line; do
        case $line in
        "ok "* | "not ok "*)
            n=$((n + 1))
            echo "$line$label" | sed -E "s/^(not ok|ok) [0-9]+/\\1 $n/"
            ;;
        1..*) ;;
        *) echo "$line" ;;
        esac
    done <"$tmp/out"
    if [ $status -ne 0 ] && ! grep -q '^not ok' "$tmp/out"; then
        n=$((n + 1))
        echo "not ok $n - check-plugin $manifest exited with $status"
    fi
}
for manifest in "$@"; do
    run "$manifest" ""
done
# The opencl plugin's own GEMM kernel on the large cases CLBlast takes.
case "$*" in
*opencl.json*)
    DLACCEL_OPENCL_GEMM=own
    export DLACCEL_OPENCL_GEMM
    run "$DLA_TEST_BUILDDIR/plugins/opencl/opencl.json" " (DLACCEL_OPENCL_GEMM=own)" --kernel gemm
    unset DLACCEL_OPENCL_GEMM
    # Its summed fused programs, single and pair, in each layout, each
    # interpreted and compiled (the plain run above takes the defaults).
    for layout in runs lanes; do
        for fused in interpret compile; do
            for kernel in fused_reduce fused_reduce_pair; do
                DLACCEL_OPENCL_FUSED_REDUCE=$layout DLACCEL_OPENCL_FUSED=$fused \
                    run "$DLA_TEST_BUILDDIR/plugins/opencl/opencl.json" \
                    " (DLACCEL_OPENCL_FUSED_REDUCE=$layout DLACCEL_OPENCL_FUSED=$fused)" \
                    --kernel $kernel
            done
        done
    done
    # As on a device without cl_khr_fp64 (float sums compensated in
    # float, no double kernels), the kernels that sum, in each layout.
    for layout in runs lanes; do
        for kernel in reduce fused_reduce fused_reduce_pair; do
            DLACCEL_OPENCL_FP64=off DLACCEL_OPENCL_FUSED_REDUCE=$layout \
                run "$DLA_TEST_BUILDDIR/plugins/opencl/opencl.json" \
                " (DLACCEL_OPENCL_FP64=off DLACCEL_OPENCL_FUSED_REDUCE=$layout)" --kernel $kernel
        done
    done
    ;;
esac
echo "1..$n"

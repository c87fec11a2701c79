#!/bin/sh
# The allocation-failure driver (tests/test_alloc_fail.c) with its settings:
#   tests/alloc_fail.sh [--exhaustive] [--testmem] [--only WORKFLOW]
# --exhaustive refuses every allocation of every workflow in turn (make
# check refuses a spread of about 120 per workflow); --testmem runs on the
# testmem device, so the plugin's allocations and the cpu fallback's are
# refused too. Each workflow runs in a process of its own; a crash does
# not end the run: the workflow is started again past the allocation that
# crashed it, and the crashes are counted. The last line gives the totals:
# runs, crashes, leaks, wrong statuses. Run it from the build directory,
# or set DLA_TEST_BUILDDIR.
build=${DLA_TEST_BUILDDIR:-$(pwd)}
export DLA_TEST_BUILDDIR="$build"
export DLACCEL_PLUGIN_PATH="${DLACCEL_PLUGIN_PATH:-$build/plugins.d}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
driver="$build/tests/test_alloc_fail"
workflows=$("$driver" --list) || exit 1
while [ $# -gt 0 ]; do
    case $1 in
    --exhaustive) export DLA_ALLOCFAIL_RUNS=0 ;;
    --testmem)
        export DLACCEL_PLUGIN_PATH="$build/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
        export DLACCEL_DEVICE=testmem ;;
    --only) shift; workflows=$1 ;;
    *) echo "usage: $0 [--exhaustive] [--testmem] [--only WORKFLOW]" >&2; exit 2 ;;
    esac
    shift
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-allocfail.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
export DLA_ALLOCFAIL_PROGRESS="$tmp/progress"
crashes=0 failed=0
for w in $workflows; do
    export DLA_ALLOCFAIL_ONLY=$w DLA_ALLOCFAIL_FROM=1
    while :; do
        : >"$tmp/progress"
        "$driver" >"$tmp/log" 2>&1
        rc=$?
        grep -v "SKIPPED\|^\[ RUN  \|^\[  SKIP\|^\[==========\]\|^\[  PASSED\|^\[  FAILED  \] [0-9]\|^ [0-9]* FAILED\|^$\|all workflows:" "$tmp/log"
        grep "^# $w: .* allocations" "$tmp/log" >>"$tmp/all"
        # "name N runs recovered leaks wrong": N is 0 once the workflow ended.
        set -- $(cat "$tmp/progress")
        if [ $# -eq 6 ] && [ "$2" != 0 ]; then
            # cmocka catches SIGSEGV and goes on; an abort ends the process.
            crashes=$((crashes + 1))
            echo "# CRASH (exit status $rc) refusing allocation $2 of workflow $w"
            echo "# $w: (crashed) allocations, $(($3 + 1)) refused one at a time: $4 recovered, $5 leaks, $6 wrong statuses" >>"$tmp/all"
            DLA_ALLOCFAIL_FROM=$(($2 + 1))
            continue
        fi
        [ $rc -ne 0 ] && failed=1
        break
    done
done
# "# name: A allocations, R refused one at a time (every S): X recovered, L leaks, W wrong statuses"
awk -v crashes=$crashes '{
    for (i = 1; i <= NF; i++) {
        if ($i == "refused") runs += $(i - 1)
        if ($i == "recovered,") rec += $(i - 1)
        if ($i == "leaks,") leaks += $(i - 1)
        if ($i == "wrong") wrong += $(i - 1)
    }
} END {
    printf "# totals: %d runs with a refused allocation, %d recovered (OK with the right answer), %d crashes, %d leaks, %d wrong statuses\n", runs, rec, crashes, leaks, wrong
}' "$tmp/all"
[ $crashes -eq 0 ] && [ $failed -eq 0 ]

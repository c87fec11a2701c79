#!/bin/sh
# tests/cuda_onekern_spills.sh - the one kernel (plugins/cuda/
# onekern_kernels.cu, onekern_k<false>: a small plan's replay) must keep
# every value in registers. On the H100 (2026-11-27) a change that made it
# spill 368 bytes to local memory slowed the tiny MLP's replay by 12% and
# the cross-entropy replays by 24%; ptxas's report shows a spill without a
# GPU. The report is made by make check (tests/cuda.mk) with the plugin's
# own nvcc flags, every architecture it builds for.
report=${1:-tests/onekern_kernels.ptxas}
if [ ! -s "$report" ]; then
    echo "cuda_onekern_spills: no ptxas report at $report" >&2
    exit 1
fi
awk '
/Compiling entry function/ {
    kern = ($0 ~ /onekern_kILb0E/) ? 1 : 0
    arch = $0; sub(/.* for /, "", arch)
    next
}
kern && /spill stores/ {
    seen++
    line = $0; sub(/^ +/, "", line)
    if ($0 !~ / 0 bytes spill stores, 0 bytes spill loads/) {
        print "not ok " seen " - onekern_k<false> for " arch ": " line
        bad++
    } else
        print "ok " seen " - onekern_k<false> for " arch ": " line
    kern = 0
}
END {
    if (!seen) { print "not ok 1 - no report of onekern_k<false> in the ptxas output"; exit 1 }
    print "1.." seen
    exit bad ? 1 : 0
}' "$report"

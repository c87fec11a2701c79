#!/bin/bash
# fuzz/run.sh - builds the libFuzzer harnesses and runs each for a bounded
# time, from the seeds the library writes and those committed here.
#
#   fuzz/run.sh [SECONDS] [HARNESS...]
#
# SECONDS per harness (default 60); HARNESS among net net_arch trace idx
# manifest image (default all). The build is clang with AddressSanitizer and
# UndefinedBehaviorSanitizer (configure --enable-sanitizers
# --enable-fuzzers) in DLA_FUZZ_BUILDDIR (default build-fuzz), configured
# once and rebuilt incrementally; each harness's corpus grows in
# $DLA_FUZZ_BUILDDIR/fuzz/corpus/HARNESS from one run to the next. An input
# that crashes, leaks or hits undefined behaviour is saved as
# $DLA_FUZZ_BUILDDIR/fuzz/crashes/HARNESS-crash-<sha1> (rerun it with
# `build-fuzz/fuzz/fuzz_HARNESS FILE`), and the exit status is 1. The last
# lines are one per harness: runs, seconds, corpus size, result.
#
# Environment: DLA_FUZZ_BUILDDIR, DLA_FUZZ_JOBS (make -j, default nproc),
# DLA_FUZZ_CC (default clang; a CC set for other builds is not used).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-60}
shift $(($# > 0 ? 1 : 0))
all=(net net_arch trace idx manifest image)
if [ $# -gt 0 ]; then harnesses=("$@"); else harnesses=("${all[@]}"); fi
builddir=${DLA_FUZZ_BUILDDIR:-build-fuzz}
case $builddir in /*) ;; *) builddir=$root/$builddir ;; esac
jobs=${DLA_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
case $secs in '' | *[!0-9]*) echo "fuzz/run.sh: SECONDS must be a whole number, not '$secs'" >&2; exit 2 ;; esac

for h in "${harnesses[@]}"; do
    case " ${all[*]} " in *" $h "*) ;; *) echo "fuzz/run.sh: no harness '$h' (${all[*]})" >&2; exit 2 ;; esac
done

if [ ! -f "$builddir/Makefile" ]; then
    if [ ! -x "$root/configure" ]; then
        (cd "$root" && autoreconf -fi) || exit 1
    fi
    mkdir -p "$builddir" && cd "$builddir" || exit 1
    echo "== configure $builddir (${DLA_FUZZ_CC:-clang}, ASan+UBSan, libFuzzer)"
    "$root/configure" -q CC="${DLA_FUZZ_CC:-clang}" --enable-sanitizers --enable-fuzzers \
        --disable-opencl --disable-cuda || { tail -30 config.log; exit 1; }
fi
cd "$builddir" || exit 1
echo "== make (the library, the cpu plugin, the harnesses)"
make -j"$jobs" libdlaccel.la plugins/cpu/libdlaccel-cpu.la plugins.d/cpu.json fuzz/make_seeds \
    "${harnesses[@]/#/fuzz/fuzz_}" >/dev/null || exit 1

seeds=$builddir/fuzz/seeds
rm -rf "$seeds"
DLACCEL_PLUGIN_PATH=$builddir/plugins.d OMP_NUM_THREADS=1 ./fuzz/make_seeds "$seeds" || exit 1
mkdir -p "$seeds/manifest" && cp "$root"/fuzz/seeds/manifest/* "$seeds/manifest/"
mkdir -p "$seeds/image" && cp "$root"/fuzz/seeds/image/* "$seeds/image/"

mkdir -p fuzz/crashes
failed=0
summary=()
for h in "${harnesses[@]}"; do
    corpus=$builddir/fuzz/corpus/$h
    mkdir -p "$corpus"
    log=$builddir/fuzz/$h.log
    echo "== fuzz_$h for ${secs}s"
    start=$(date +%s)
    # One process, bounded in time and memory; a slow input (10 s) is a
    # finding too. The plugins are found through the build tree.
    ./fuzz/fuzz_"$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$builddir/fuzz/crashes/$h-" "$corpus" "$seeds/$h" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    runs=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log" | tail -1)
    files=$(find "$corpus" -type f | wc -l)
    if [ $rc -eq 0 ]; then
        result=clean
    else
        failed=1
        result="FOUND (exit $rc): $(grep -o "$builddir/fuzz/crashes/$h-[^ ]*" "$log" | tail -1)"
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5
        echo "   log: $log"
    fi
    summary+=("$(printf '%-10s %10s runs %5ss  corpus %5s  %s' "$h" "${runs:-?}" "$took" "$files" "$result")")
done
echo
printf '%s\n' "${summary[@]}"
exit $failed

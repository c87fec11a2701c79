#!/bin/bash
# bench/beside_job.sh - the digit CNN's train step beside a second dlaccel
# training job, against the quiet figure of the same run (issue 19: "beside
# a second training job within 1.7x of the quiet figure").
#
#   bash bench/beside_job.sh [--rounds N] [BUILD_DIR]
#
# Each round, alternately: the step quiet with the default settings (the
# whole machine), the step quiet with one thread (OMP_NUM_THREADS=1), and
# the step beside a second job (dlaccel-bench's eager train step looping,
# as compare_load.sh --load dlaccel starts it), both with the default
# settings, so the two share the cores (DLACCEL_SHARE_CORES). Prints the
# medians, the ratio beside/quiet, and the quiet speedup of the whole
# machine over one thread: two equal jobs that each get half the cores
# take that speedup times their quiet time, so it is the ratio a fair
# share gives (on 2 cores: one thread each, and beside/quiet = the 2-thread
# speedup).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5 build=$root/build
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "beside_job.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
bench=$build/bench/dlaccel-bench
[ -x "$bench" ] || { echo "beside_job.sh: no $bench (build first)" >&2; exit 2; }
export DLACCEL_PLUGIN_PATH="$build/plugins.d"
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT
work=$(mktemp -d)
neighbour=
stop() { [ -z "$neighbour" ] || kill -- "-$neighbour" 2>/dev/null || true; neighbour=; }
trap 'stop; rm -rf "$work"' EXIT

run() { # TAG ENV... : both workloads, one JSON each
    local tag=$1; shift
    for w in cnn_train_step cnn_step_replay; do
        env "$@" "$bench" --json --device cpu --workload "=$w" --reps 30 >"$work/${tag}_${w}_$r.json" ||
            echo "dlaccel-bench $w ($tag) failed (round $r)" >&2
    done
}
for r in $(seq "$rounds"); do
    echo "== round $r/$rounds" >&2
    run quiet
    run one OMP_NUM_THREADS=1
    setsid bash -c "while :; do '$bench' --device cpu --workload cnn_train_step --reps 200 >/dev/null 2>&1; done" &
    neighbour=$!
    sleep 5 # let it get going
    run beside
    stop
    sleep 3
done

python3 - "$work" "$rounds" <<'PY'
import json, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def med(tag, w):
    v = []
    for r in range(1, rounds + 1):
        try:
            doc = json.load(open(os.path.join(work, f"{tag}_{w}_{r}.json")))
            v += [rec["median_ms"] for rec in doc["records"]]
        except (OSError, ValueError, KeyError):
            pass
    return statistics.median(v) if v else None
print(f"\n{rounds} round(s); medians in ms")
print(f"{'':18s}{'quiet':>9s}{'1 thread':>10s}{'beside':>9s}{'beside/quiet':>14s}{'speedup':>9s}")
for w, name in (("cnn_train_step", "train step"), ("cnn_step_replay", "replayed step")):
    q, o, b = med("quiet", w), med("one", w), med("beside", w)
    if None in (q, o, b):
        print(f"{name:18s} (missing figures)")
        continue
    print(f"{name:18s}{q:9.1f}{o:10.1f}{b:9.1f}{b / q:13.2f}x{o / q:8.2f}x")
PY

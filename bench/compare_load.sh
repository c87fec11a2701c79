#!/bin/bash
# bench/compare_load.sh - dlaccel against PyTorch 1.13 (Debian) and the
# current PyTorch (torch2_setup.sh's venv), quiet or beside a neighbour, in
# one table of medians and ratios (issue 19).
#
#   bash bench/compare_load.sh [--load KIND] [--rounds N] [--only cnn|resnet] [--no-pytorch]
#                              [BUILD_DIR]
#
# Each round runs, alternately: PyTorch 1.13 (the digit CNN timing and
# ResNet-20 eager), PyTorch 2.15 eager and torch.compile (when $T2PY, or
# /tmp/torch2, has it), the FMA peak (../shared/peers/peak_fma.c), and
# dlaccel-bench's digit CNN and ResNet-20 workloads and the main job's
# epoch (examples/cnn_fmnist --small) under three OpenMP wait
# policies: dlaccel's default, OMP_WAIT_POLICY=passive and =active. The
# figures are medians over the rounds.
#
# --load KIND starts one neighbour before the first round and stops it after
# the last, so every row of that run is "beside" it:
#   busy      one busy loop (a shell spinning)
#   dlaccel   a second 2-thread dlaccel job (dlaccel-bench's digit CNN step, looping)
#   pytorch   a PyTorch 1.13 training job (the digit CNN timing, looping)
#   oversub   four busy loops: more runnable threads than cores, as a
#             valgrind'd program plus a fuzzer or `make -j4` give
# Without --load the rows are "quiet" (say what else ran when quoting them).
# --no-pytorch leaves PyTorch out (dlaccel's policies and the peak only):
# beside a neighbour PyTorch 1.13's timing script alone can take over five
# minutes a round.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
load=none rounds=3 only=all build=$root/build torch=1
while [ $# -gt 0 ]; do
    case $1 in
    --load) load=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --no-pytorch) torch=0; shift ;;
    -h | --help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "compare_load.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
case $load in none | busy | dlaccel | pytorch | oversub) ;;
*) echo "compare_load.sh: --load must be busy, dlaccel, pytorch or oversub, not '$load'" >&2; exit 2 ;;
esac
case $only in all | cnn | resnet) ;;
*) echo "compare_load.sh: --only must be cnn or resnet, not '$only'" >&2; exit 2 ;;
esac
bench=$build/bench/dlaccel-bench
[ -x "$bench" ] || { echo "compare_load.sh: no $bench (build first)" >&2; exit 2; }
peers=${DLA_PEERS:-$root/../shared/peers}
[ -d "$peers" ] || { echo "compare_load.sh: no peers folder at $peers (set DLA_PEERS)" >&2; exit 2; }
py1=/usr/bin/python3
[ $torch = 0 ] || $py1 -c 'import torch' 2>/dev/null ||
    { echo "compare_load.sh: Debian's python3-torch is missing (or --no-pytorch)" >&2; exit 2; }
T2=${T2:-/tmp/torch2}
py2=${T2PY:-$T2/bin/python}
sp=$T2/lib/python3.11/site-packages
t2_env=(env "LD_LIBRARY_PATH=$sp/nvidia/nccl/lib:$sp/nvidia/cusparselt/lib:$sp/nvidia/cu13/lib:$sp/nvidia/nvshmem/lib:/usr/local/cuda/lib64")
if [ $torch = 0 ]; then
    py2=
elif ! "${t2_env[@]}" "$py2" -c 'import torch' 2>/dev/null; then
    echo "compare_load.sh: no current PyTorch at $py2 (bash ../shared/peers/torch2_setup.sh); its rows are left out" >&2
    py2=
fi

work=$(mktemp -d)
neighbour=()
stop_neighbour() {
    local p
    for p in "${neighbour[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
    neighbour=()
}
trap 'stop_neighbour; rm -rf "$work"' EXIT
cp -r "$peers" "$work/peers"
mkdir -p "$work/peers/results" "$work/peers/build"
export OMP_NUM_THREADS=2 DLACCEL_PLUGIN_PATH="$build/plugins.d"

# The FMA peak, built for what this CPU has: peak_fma.c always runs its
# AVX-512 loop first, so on a CPU without it the copy loses that loop.
if grep -qw avx512f /proc/cpuinfo; then
    gcc -O2 -mavx512f -mfma -pthread -o "$work/peak_fma" "$work/peers/peak_fma.c"
else
    $py1 - "$work/peers/peak_fma.c" "$work/peak_fma_avx2.c" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r"if \(j->wide\) \{.*?\} else \{", "{", src, count=1, flags=re.S)
src = src.replace("for (int wide = 1;", "for (int wide = 0;")
open(sys.argv[2], "w").write(src)
PY
    gcc -O2 -mavx2 -mfma -pthread -o "$work/peak_fma" "$work/peak_fma_avx2.c"
fi

start_neighbour() {
    case $load in
    busy) setsid bash -c 'while :; do :; done' & neighbour+=($!) ;;
    oversub) for _ in 1 2 3 4; do setsid bash -c 'while :; do :; done' & neighbour+=($!); done ;;
    dlaccel) setsid bash -c "while :; do '$bench' --device cpu --workload cnn_train_step --reps 200 >/dev/null 2>&1; done" &
        neighbour+=($!) ;;
    pytorch) setsid bash -c "cd '$work/peers' && while :; do $py1 cnn_fmnist.py timing >/dev/null 2>&1; done" &
        neighbour+=($!) ;;
    esac
    [ "$load" = none ] || sleep 5 # let it get going
}

pause() { sleep "${DLA_COMPARE_PAUSE:-3}"; }

start_neighbour
for r in $(seq "$rounds"); do
    echo "== round $r/$rounds (load: $load)" >&2
    "$work/peak_fma" >"$work/peak_$r.txt" 2>&1 || true
    if [ "$only" != resnet ] && [ $torch = 1 ]; then
        (cd "$work/peers" && $py1 cnn_fmnist.py timing >"$work/t1_cnn_$r.log" 2>&1 &&
            cp results/cnn_timing.json "$work/t1_cnn_$r.json") || echo "PyTorch 1.13 digit CNN failed (round $r)" >&2
        pause
    fi
    if [ "$only" != cnn ] && [ $torch = 1 ]; then
        (cd "$work/peers" && NO_COMPILE=1 $py1 resnet20.py >"$work/t1_res_$r.json" 2>"$work/t1_res_$r.log") ||
            echo "PyTorch 1.13 ResNet-20 failed (round $r)" >&2
        pause
    fi
    if [ -n "$py2" ]; then
        if [ "$only" != resnet ]; then
            (cd "$work/peers" && "${t2_env[@]}" "$py2" cnn_torch2.py >"$work/t2_cnn_$r.json" 2>"$work/t2_cnn_$r.log") ||
                echo "PyTorch 2 digit CNN failed (round $r)" >&2
            pause
        fi
        if [ "$only" != cnn ]; then
            (cd "$work/peers" && "${t2_env[@]}" "$py2" resnet20.py >"$work/t2_res_$r.json" 2>"$work/t2_res_$r.log") ||
                echo "PyTorch 2 ResNet-20 failed (round $r)" >&2
            pause
        fi
    fi
    # The digit CNN's batch-128 workloads by name (a prefix would take
    # the batch-1024 ones too, several times the round's time).
    sel="=cnn_train_step =cnn_inference =cnn_step_replay =cnn_inference_replay"
    [ "$only" = resnet ] && sel=resnet20_
    for pol in default passive active; do
        e=()
        [ "$pol" = default ] || e=(env "OMP_WAIT_POLICY=$pol")
        k=0
        for w in $sel; do
            k=$((k + 1))
            "${e[@]}" "$bench" --json --device cpu --workload "$w" --reps 30 >"$work/dla_${pol}_${k}_$r.json" ||
                echo "dlaccel-bench $w ($pol) failed (round $r)" >&2
        done
        if [ "$only" = all ]; then
            "${e[@]}" "$bench" --json --device cpu --workload resnet20_ --reps 5 >"$work/dla_${pol}_res_$r.json" ||
                echo "dlaccel-bench ResNet-20 ($pol) failed (round $r)" >&2
        fi
        # The main job's epoch (--small: 30 iterations, the first recording
        # the trace, and the test set), where the example and its data are.
        if [ "$only" != resnet ] && [ -x "$build/examples/cnn_fmnist" ]; then
            (cd "$work" && "${e[@]}" "$build/examples/cnn_fmnist" --small --epochs 1 \
                --chart "$work/chart.svg" >"$work/epoch_${pol}_$r.log" 2>&1) ||
                echo "cnn_fmnist --small ($pol) failed (round $r; no data? bash tools/quickstart.sh fetches it)" >&2
        fi
        pause
    done
done
stop_neighbour

$py1 - "$work" "$rounds" "$load" <<'PY'
import json, os, re, statistics, sys
work, rounds, load = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def read(name):
    # A whole JSON document (dlaccel-bench --json is several lines), else
    # the last line of a log that ends with one.
    p = os.path.join(work, name)
    try:
        with open(p) as f:
            txt = f.read().strip()
    except OSError:
        return None
    for cand in (txt, txt.splitlines()[-1] if txt else ""):
        try:
            return json.loads(cand)
        except ValueError:
            pass
    return None
fig = {}
def add(key, v):
    if v is not None:
        fig.setdefault(key, []).append(float(v))
peak = []
for r in range(1, rounds + 1):
    try:
        for line in open(os.path.join(work, f"peak_{r}.txt")):
            m = re.match(r"fma_peak_(avx512|avx2)_2thr_GFLOPs\t([0-9.]+)", line)
            if m:
                peak.append((m.group(1), float(m.group(2))))
    except OSError:
        pass
    c = read(f"t1_cnn_{r}.json")
    if c:
        add(("cnn train", "torch 1.13 eager"), c["train_ms_per_step"]["eager"]["median"])
        add(("cnn infer", "torch 1.13 eager"), c["infer_ms_per_batch128"]["eager"]["median"])
    for tag, ver in (("t1", "torch 1.13"), ("t2", "torch 2")):
        res = read(f"{tag}_res_{r}.json")
        if res:
            for mode, v in res["train_ms"].items():
                add(("resnet20 train", f"{ver} {mode}"), v)
            for mode, v in res["infer_ms"].items():
                add(("resnet20 infer", f"{ver} {mode}"), v)
    c2 = read(f"t2_cnn_{r}.json")
    if c2:
        for mode, v in c2["train_ms"].items():
            add(("cnn train", f"torch 2 {mode}"), v)
        for mode, v in c2["infer_ms"].items():
            add(("cnn infer", f"torch 2 {mode}"), v)
    for pol in ("default", "passive", "active"):
        names = [f"dla_{pol}_{k}_{r}.json" for k in range(1, 5)] + [f"dla_{pol}_res_{r}.json"]
        for name in names:
            d = read(name)
            for rec in (d or {}).get("records", []):
                w = rec["workload"]
                row = {"cnn_train_step": "cnn train", "cnn_inference": "cnn infer",
                       "cnn_step_replay": "cnn train replayed",
                       "cnn_inference_replay": "cnn infer replayed",
                       "resnet20_train_step": "resnet20 train", "resnet20_inference": "resnet20 infer",
                       "resnet20_train_step_b64": "resnet20 train b64",
                       "resnet20_inference_b64": "resnet20 infer b64",
                       "resnet20_train_step_b16": "resnet20 train b16",
                       "resnet20_inference_b16": "resnet20 infer b16"}.get(w)
                if row:
                    add((row, f"dlaccel {pol}"), rec["median_ms"])
        try:
            for line in open(os.path.join(work, f"epoch_{pol}_{r}.log")):
                m = re.match(r"time per epoch: ([0-9.]+) s", line)
                if m:
                    add(("main job epoch (--small)", f"dlaccel {pol}"), 1000 * float(m.group(1)))
        except OSError:
            pass
flops = {"cnn train": 3.421e9, "cnn infer": 1.165e9,
         "cnn train replayed": 3.421e9, "cnn infer replayed": 1.165e9,
         "resnet20 train": 3 * 2 * 40813184.0 * 128, "resnet20 infer": 2 * 40813184.0 * 128}
# The widest vectors this CPU ran (AVX-512 where it has it).
widest = [v for isa, v in peak if isa == "avx512"] or [v for isa, v in peak]
pk = statistics.median(widest) if widest else None
print(f"\nload: {load}; {rounds} round(s); medians in ms"
      + (f"; FMA peak (2 threads) {pk:.0f} GFLOP/s" if pk else ""))
rows = sorted({k[0] for k in fig})
for row in rows:
    print(f"\n{row}")
    med = {who: statistics.median(v) for (r_, who), v in fig.items() if r_ == row}
    # A replayed row is compared with PyTorch's figures of its own workload.
    base = row.replace(" replayed", "")
    ref = {who: statistics.median(v) for (r_, who), v in fig.items() if r_ == base}
    torch_best = min((v for w, v in ref.items() if w.startswith("torch")), default=None)
    dla = {w: v for w, v in med.items() if w.startswith("dlaccel")}
    best_pol = min((dla[w] for w in ("dlaccel passive", "dlaccel active") if w in dla), default=None)
    for who in sorted(med):
        v = med[who]
        line = f"  {who:24s} {v:10.2f}"
        if who.startswith("dlaccel") and torch_best:
            line += f"   {v / torch_best:5.2f}x the fastest PyTorch"
        if who == "dlaccel default" and best_pol:
            line += f"   {v / best_pol:5.2f}x the better wait policy"
        if row in flops and pk and who.startswith("dlaccel"):
            line += f"   {flops[row] / v / 1e6:6.1f} GFLOP/s ({100 * flops[row] / v / 1e6 / pk:.0f}% of peak)"
        print(line)
PY

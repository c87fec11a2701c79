#!/bin/bash
# bench/compare_pytorch.sh - dlaccel against the PyTorch reference, side by
# side in one run, as issue 3 asks: the digit CNN train step and inference
# (../shared/peers/cnn_fmnist.py timing) and the tiny-MLP eager overhead
# (dispatch_overhead.py). PyTorch and dlaccel alternate ROUNDS times, so a
# slow spell of the shared machine hits both; the figures are medians.
#
#   bash bench/compare_pytorch.sh [BUILD_DIR] [ROUNDS]
#
# Needs Debian's python3-torch, python3-numpy and dataset-fashion-mnist
# (apt-get install -y ...); the peers folder is copied to a temp dir
# because its scripts write beside themselves.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-3}
peers=${DLA_PEERS:-$root/../shared/peers}
[ -d "$peers" ] || { echo "no peers folder at $peers (set DLA_PEERS)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$peers" "$work/peers"
# cnn_fmnist.py writes its profile before anything creates results/.
mkdir -p "$work/peers/results"
export OMP_NUM_THREADS=2 DLACCEL_PLUGIN_PATH="$build/plugins.d"
py=/usr/bin/python3

for r in $(seq "$rounds"); do
    [ "$r" -gt 1 ] && sleep "${DLA_COMPARE_PAUSE:-10}"
    echo "== round $r/$rounds: PyTorch" >&2
    (cd "$work/peers" && $py cnn_fmnist.py timing >"$work/torch_cnn_$r.log" 2>&1 &&
        cp results/cnn_timing.json "$work/torch_cnn_$r.json" &&
        $py dispatch_overhead.py >"$work/torch_mlp_$r.log" 2>&1 &&
        cp results/dispatch_overhead.json "$work/torch_mlp_$r.json") ||
        { echo "the PyTorch reference failed:" >&2; tail -5 "$work"/torch_*_"$r".log >&2; exit 1; }
    # A pause before each side: run straight after PyTorch's process (800
    # MB, which the kernel reclaims as it exits) our step measured 21.4 ms
    # over five rounds where it measured 16-18 ms alone, and 17.9 ms with
    # the pause; PyTorch gets the same pause after ours.
    sleep "${DLA_COMPARE_PAUSE:-10}"
    echo "== round $r/$rounds: dlaccel" >&2
    # 60 calls: a window of a second or two, nearer PyTorch's 7 x 20 calls
    # spread over its variants than the default's fraction of one. The two
    # batch-128 workloads by name: the prefix cnn_ would also run the
    # batch-1024 ones and the replays (nine workloads, several times the
    # round's time) that the table below never reads.
    k=0
    for w in =cnn_train_step =cnn_inference; do
        k=$((k + 1))
        "$build/bench/dlaccel-bench" --json --device cpu --workload "$w" --reps 60 > "$work/dla_cnn${k}_$r.json"
    done
    "$build/bench/dlaccel-bench" --json --device cpu --workload mlp_ > "$work/dla_mlp_$r.json"
done

$py - "$work" "$rounds" <<'PY'
import json, statistics, sys, os
work, rounds = sys.argv[1], int(sys.argv[2])
def med(xs): return statistics.median(xs)
t_train, t_inf, t_mlp, d = [], [], [], {}
for r in range(1, rounds + 1):
    c = json.load(open(os.path.join(work, f"torch_cnn_{r}.json")))
    t_train.append(c["train_ms_per_step"]["eager"]["median"])
    t_inf.append(c["infer_ms_per_batch128"]["eager"]["median"])
    m = json.load(open(os.path.join(work, f"torch_mlp_{r}.json")))
    t_mlp.append(m["B_tiny_mlp_us_per_step"]["eager"]["median"])
    for part in ("cnn1", "cnn2", "mlp"):
        for rec in json.load(open(os.path.join(work, f"dla_{part}_{r}.json")))["records"]:
            d.setdefault(rec["workload"], []).append(rec["median_ms"])
# The ratio of each round too: a slow spell of the shared machine moves
# both sides of a round, so the median of the rounds' ratios is steadier
# than the ratio of the medians.
ratios = [o / t for o, t in zip(d["cnn_train_step"], t_train)]
rows = [("CNN train step (ms)", med(d["cnn_train_step"]), med(t_train), 0.5),
        ("CNN inference, batch 128 (ms)", med(d["cnn_inference"]), med(t_inf), None),
        ("tiny MLP fwd+bwd (us)", med(d["mlp_4_8_1_step"]) * 1e3, med(t_mlp), None)]
print(f"{'workload':32s} {'dlaccel':>10s} {'PyTorch':>10s} {'ratio':>7s}  target")
for name, ours, theirs, target in rows:
    tgt = f"<= {target}" if target else ""
    print(f"{name:32s} {ours:10.2f} {theirs:10.2f} {ours / theirs:7.2f}  {tgt}")
print(f"(medians over {rounds} alternating rounds; MLP target: <= 10 us per step)")
print("CNN train step, each round's ratio: " + " ".join(f"{x:.2f}" for x in ratios) +
      f"; median {med(ratios):.2f}")
PY

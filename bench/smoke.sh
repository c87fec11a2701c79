#!/bin/sh
# bench/smoke.sh - dlaccel-bench runs and says something well-formed.
#
# A TAP test for `make check`: it runs the bench in --quick mode on two small
# workloads and checks the shape of what comes out (the table, the ratio
# line, a JSON document that parses). Speeds are never asserted: the
# machines are shared and a figure is for a person to judge.
bench=${DLA_TEST_BUILDDIR:-.}/bench/dlaccel-bench
tmp=${TMPDIR:-/tmp}/dlaccel-bench-smoke.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT

echo 1..18
. "$(cd "$(dirname "$0")" && pwd)/tap.sh"

"$bench" --quick --workload add >"$tmp/add.out" 2>"$tmp/add.err"
rc=$?
cat "$tmp/add.err" >>"$tmp/add.out"
check "--quick --workload add exits 0" "$tmp/add.out" test $rc -eq 0
check "the add line gives median, min, max and GB/s" "$tmp/add.out" \
    grep -Eq '^[^ ]+ +add64MiB +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ GB/s +[0-9]+$' "$tmp/add.out"
check "the add ratio line compares with memcpy and names the target" "$tmp/add.out" \
    grep -Eq '^add 64MiB on .*: [0-9.]+ GB/s = [0-9.]+ of memcpy [0-9.]+ GB/s \(target >= 0\.60' \
    "$tmp/add.out"

"$bench" --json --quick --workload sgemm256 >"$tmp/gemm.json" 2>"$tmp/gemm.err"
rc=$?
cat "$tmp/gemm.err" >>"$tmp/gemm.json"
check "--json --quick --workload sgemm256 exits 0" "$tmp/gemm.json" test $rc -eq 0

json_ok() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
recs = {(r["device"], r["workload"]): r for r in doc["records"]}
dev = [r for r in doc["records"] if r["workload"] == "sgemm256"]
ref = [r for r in doc["records"] if r["workload"] == "cblas_sgemm256"]
assert dev and ref, "sgemm256 or its reference missing"
for r in dev + ref:
    assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"], r
    assert r["gflops"] > 0 and r["reps"] >= 3, r
assert any(x["workload"] == "sgemm256" and x["ratio"] > 0 for x in doc["ratios"])
assert doc["errors"] == []
' "$1"
    else
        grep -q '"workload": "sgemm256"' "$1" && grep -q '"gflops": ' "$1" &&
            grep -q '"ratios": \[' "$1"
    fi
}
check "the JSON document parses and holds sgemm256, its reference and their ratio" \
    "$tmp/gemm.json" json_ok "$tmp/gemm.json"

"$bench" --quick --pipeline 4 --workload =mlp_replay >"$tmp/pipe.out" 2>&1
rc=$?
check "--pipeline 4 runs and says so in the banner" "$tmp/pipe.out" \
    sh -c "test $rc -eq 0 && grep -q -- '--pipeline 4: each figure is 4 calls and one device sync' '$tmp/pipe.out'"
"$bench" --quick --pipeline 0 --workload =mlp_replay >/dev/null 2>"$tmp/pipe0.err"
rc=$?
check "--pipeline 0 is a usage error (exit 2) that says so" "$tmp/pipe0.err" \
    sh -c "test $rc -eq 2 && grep -q 'want a count from 1' '$tmp/pipe0.err'"

"$bench" --quick --workload no-such-workload >/dev/null 2>"$tmp/none.err"
rc=$?
check "a filter that matches nothing is a usage error (exit 2) that says so" "$tmp/none.err" \
    sh -c "test $rc -eq 2 && grep -q 'no workload matches' '$tmp/none.err'"

"$bench" --quick --device no-such-device --workload sgemm256 >/dev/null 2>"$tmp/dev.err"
rc=$?
check "an unknown --device is exit 2 naming the device" "$tmp/dev.err" \
    sh -c "test $rc -eq 2 && grep -q 'no-such-device' '$tmp/dev.err'"

# ResNet-20 (issue 19) is a graph with residual connections and projection
# shortcuts: it builds, initializes and runs, with PyTorch's parameter count
# plus the convolutions' biases.
"$bench" --quick --device cpu --workload resnet20_inference_b16 >"$tmp/res.out" 2>&1
rc=$?
check "--quick --workload resnet20_inference_b16 exits 0" "$tmp/res.out" test $rc -eq 0
check "ResNet-20 has 273258 learnable elements in 86 learnables" "$tmp/res.out" \
    grep -q '273258 learnable elements (272474 + 784 conv biases) in 86 learnables' "$tmp/res.out"

# The LSTM step (a recurrent network through trainnet's path: the network
# in an accelerated model loss) builds and replays.
"$bench" --quick --device cpu --workload =lstm_train_step >"$tmp/lstm.out" 2>&1
rc=$?
check "--quick --workload =lstm_train_step exits 0 and replays its model loss" "$tmp/lstm.out" \
    sh -c "test $rc -eq 0 && grep -Eq 'HitRate [1-9][0-9]*% \(model loss\)' '$tmp/lstm.out'"

# --batch N (issue 19's sweep): the workloads that take a batch run at N,
# renamed NAME_bN, their work scaled with the batch; entries that differ
# only in their batch run once; a reference that takes a batch follows.
"$bench" --json --quick --device cpu --batch 2 --workload cnn_step_replay >"$tmp/b2.json" \
    2>"$tmp/b2.err"
rc=$?
cat "$tmp/b2.err" >>"$tmp/b2.json"
check "--batch 2 --workload cnn_step_replay exits 0" "$tmp/b2.json" test $rc -eq 0
batch_ok() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
recs = doc["records"]
# cnn_step_replay and cnn_step_replay_b1024 are one family: one record.
assert [r["workload"] for r in recs] == ["cnn_step_replay_b2"], recs
r = recs[0]
assert r["batch"] == 2, r
# 3.421 GFLOP a step of 128 images, so 2/128 of it at batch 2.
want = 3.421e9 * 2 / 128 / (r["median_ms"] * 1e-3) * 1e-9
assert abs(r["gflops"] - want) <= 0.01 * want + 1e-3, (r, want)
' "$1"
    else
        test "$(grep -c '"workload": "cnn_step_replay_b2"' "$1")" -eq 1 &&
            grep -q '"batch": 2' "$1"
    fi
}
check "one record, cnn_step_replay_b2, batch 2, its GFLOP/s for 2 of 128 images" "$tmp/b2.json" \
    batch_ok "$tmp/b2.json"

"$bench" --quick --device cpu --batch 1 --workload =cnn_train_replay >"$tmp/b1.out" 2>&1
rc=$?
check "--batch 1 --workload =cnn_train_replay exits 0" "$tmp/b1.out" test $rc -eq 0
check "its eager reference runs at batch 1 beside it and the ratio line names the batch" \
    "$tmp/b1.out" sh -c "grep -Eq '^host +cnn_train_eager_b1 ' '$tmp/b1.out' &&
    grep -Eq '^digit CNN train step \(batch 1\), replayed on cpu:0: plugin/eager \(batch 1\) = ' \
        '$tmp/b1.out'"

"$bench" --quick --batch 8 --workload sgemm256 >/dev/null 2>"$tmp/nb.err"
rc=$?
check "--batch with only workloads that take none is exit 2 that says so" "$tmp/nb.err" \
    sh -c "test $rc -eq 2 && grep -q 'takes a batch' '$tmp/nb.err'"

"$bench" --quick --batch 0 --workload cnn >/dev/null 2>"$tmp/b0.err"
rc=$?
check "--batch 0 is a usage error (exit 2)" "$tmp/b0.err" \
    sh -c "test $rc -eq 2 && grep -q 'want a batch from 1' '$tmp/b0.err'"

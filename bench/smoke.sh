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

echo 1..9
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; [ -s "$2" ] && sed 's/^/# /' "$2"; }
check() { # description, log file, command...
    desc=$1 log=$2
    shift 2
    if "$@"; then ok "$desc"; else not_ok "$desc" "$log"; fi
}

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

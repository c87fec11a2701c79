#!/bin/sh
# Every fuzz harness (fuzz/), built as a plain program, replays the seeds
# that fuzz/run.sh starts from: those fuzz/make_seeds writes (networks,
# traces, IDX files) and those committed under fuzz/seeds (manifests,
# images). A harness that stops building, or an input that crashes or
# trips a harness's own check (each aborts on a wrong status or a missing
# reason), fails here instead of in the next fuzzing session. Under
# .ci/sanitize the replays run with the sanitizers. Speaks TAP.
b="$DLA_TEST_BUILDDIR"
s=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-fuzz-seeds-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
harnesses="net net_arch trace idx manifest image"
echo "1..7"
if OMP_NUM_THREADS=1 "$b/fuzz/make_seeds" "$tmp/seeds" >"$tmp/make_seeds.log" 2>&1; then
    echo "ok 1 - fuzz/make_seeds wrote the seeds"
else
    echo "not ok 1 - fuzz/make_seeds failed:"
    sed 's/^/# /' "$tmp/make_seeds.log"
fi
for h in manifest image; do
    mkdir -p "$tmp/seeds/$h" && cp "$s/fuzz/seeds/$h"/* "$tmp/seeds/$h/"
done
n=1
for h in $harnesses; do
    n=$((n + 1))
    count=$(find "$tmp/seeds/$h" -type f 2>/dev/null | wc -l)
    if out=$("$b/fuzz/replay_$h" "$tmp/seeds/$h" 2>&1); then
        echo "ok $n - fuzz_$h replays its $count seeds ($(echo "$out" | tail -1))"
    else
        echo "not ok $n - fuzz_$h on its $count seeds:"
        echo "$out" | tail -20 | sed 's/^/# /'
    fi
done

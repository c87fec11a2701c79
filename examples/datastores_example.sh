#!/bin/sh
# Smoke test of examples/datastores as a user runs it: trainnet reads
# {predictors, targets} from combine(transform(fileDatastore of CSV files),
# arrayDatastore of labels), shuffled and split by subset, and classifies
# the held-out recordings above 90%; a count below 64 is refused. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-datastores-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/datastores" >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: test accuracy not above 90%)"; ok=no; }
for pattern in "wrote 600 recordings of 32 readings as CSV files" \
    "combine(transform(fileDatastore), arrayDatastore): 600 observations of 2 outputs, 480 to train on and 120 to test" \
    "Training finished: Max epochs completed." "testnet on the 120 held-out recordings"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
# The recordings are removed after the run.
folder=$(sed -n 's/^wrote .* CSV files in //p' "$tmp/out")
if [ -n "$folder" ] && [ -e "$folder" ]; then echo "# $folder was left behind"; ok=no; fi
what="datastores: trainnet over combine(transform(fileDatastore), arrayDatastore)"
if [ $ok = yes ]; then echo "ok 1 - $what ($(grep -F 'testnet on' "$tmp/out"))"
else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi

"$ex/datastores" --count 10 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--count wants a whole number in [64," "$tmp/out"; then
    echo "ok 2 - datastores --count 10 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - datastores --count 10 is refused with a message"
fi

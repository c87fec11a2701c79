#!/bin/sh
# Smoke test of examples/sequence_datastore as a user runs it: recordings
# of 24 to 48 readings, one CSV file each, read as sequences by a file
# datastore, padded per mini-batch by trainnet, classified by an LSTM above
# 85% on the held-out ones; the files are removed after. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-seqds-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..1"
"$ex/sequence_datastore" >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: test accuracy not above 85%)"; ok=no; }
for pattern in "wrote 600 recordings of 24 to 48 readings as CSV files" \
    "Training finished: Max epochs completed." "testnet on the 120 held-out recordings of 24 to 48 readings"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
folder=$(sed -n 's/^wrote .* CSV files in //p' "$tmp/out")
if [ -n "$folder" ] && [ -e "$folder" ]; then echo "# $folder was left behind"; ok=no; fi
what="sequence_datastore: trainnet over sequences of different lengths from CSV files"
if [ $ok = yes ]; then echo "ok 1 - $what ($(grep -F 'testnet on' "$tmp/out"))"
else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi

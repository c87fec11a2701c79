#!/bin/sh
# Smoke test of examples/ctc_sequences: an LSTM trained through dla_ctc
# (accelerated model loss, Adam) decodes more than 90% of a fresh batch's
# label sequences exactly; a bad argument is refused. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-ctc-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/ctc_sequences" >"$tmp/out" 2>&1
status=$?
what="ctc_sequences: an LSTM trained with the CTC loss decodes its label sequences"
if [ "$status" -eq 0 ] && grep -q "^decoded" "$tmp/out"; then
    echo "ok 1 - $what ($(grep '^decoded' "$tmp/out"))"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 1 - $what (exit status $status)"
fi

"$ex/ctc_sequences" zero >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF "ITERATIONS wants a whole number in [1, 100000000], not 'zero'" "$tmp/out"; then
    echo "ok 2 - ctc_sequences zero is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - ctc_sequences zero is refused with a message"
fi

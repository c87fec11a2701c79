#!/bin/sh
# Smoke test of examples/tokens as a user runs it: trainnet trains a
# transformer encoder (wordEmbeddingLayer, positionEmbeddingLayer,
# selfAttentionLayer, layerNormalizationLayer, globalMaxPooling1dLayer) on
# token sequences of varying length, padded per mini-batch, and the test
# sequences are classified above 95%. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-tokens-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..2"

"$ex/tokens" >"$tmp/out" 2>&1
status=$?
ok=yes
[ "$status" -eq 0 ] || { echo "# exit status $status (1: test accuracy not above 95%)"; ok=no; }
for pattern in "Word Embedding" "Position Embedding" "Self-Attention" "Layer Normalization" \
    "1-D Global Max Pooling" "Training finished: Max epochs completed." "test accuracy:" \
    "testnet: accuracy"; do
    grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
done
what="tokens: a transformer encoder trained by trainnet classifies the test sequences"
if [ $ok = yes ]; then echo "ok 1 - $what ($(grep -F 'test accuracy:' "$tmp/out"))"
else sed 's/^/# /' "$tmp/out" | tail -n 40; echo "not ok 1 - $what"; fi

"$ex/tokens" --count 10 >"$tmp/out" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -qF -- "--count wants a whole number in [64," "$tmp/out"; then
    echo "ok 2 - tokens --count 10 is refused with a message"
else
    sed 's/^/# /' "$tmp/out"; echo "not ok 2 - tokens --count 10 is refused with a message"
fi

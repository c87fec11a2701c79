#!/bin/sh
# Smoke test of examples/custom_layer at small size (--small), as a user
# runs it: it exits with 0, trains (the loss falls), the loaded network
# predicts what the saved one did, accelerated predict equals eager, and
# the gradients agree with finite differences. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-custom-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE DLA_EXAMPLE_SMALL
echo "1..2"

bad=
# timeout: a hang fails the test instead of stalling make check.
timeout 300 "$ex/custom_layer" --small >"$tmp/out" 2>&1
status=$?
[ $status -eq 0 ] || bad="exit status $status"
first=$(sed -n 's/^loss: \([0-9.e+-]*\) at iteration 1, \([0-9.e+-]*\) at.*/\1/p' "$tmp/out")
last=$(sed -n 's/^loss: \([0-9.e+-]*\) at iteration 1, \([0-9.e+-]*\) at.*/\2/p' "$tmp/out")
awk "BEGIN { exit !(${first:-0} > 0 && ${last:-9} < 0.5 * ${first:-0}) }" </dev/null || bad="$bad
loss did not fall: $first -> $last"
grep -q "slicediff .*Slice Difference Convolution .*KiMinus 3x3x1x1x4" "$tmp/out" || bad="$bad
the summary has no custom layer row"
grep -q "^save and load: predictions of the loaded network differ by 0$" "$tmp/out" || bad="$bad
the loaded network predicts otherwise"
grep -q "^accelerated predict against eager: largest difference [0-9.e-]*, HitRate" "$tmp/out" || bad="$bad
no accelerated/eager comparison"
diff=$(sed -n 's/^accelerated predict against eager: largest difference \([0-9.e+-]*\),.*/\1/p' "$tmp/out")
awk "BEGIN { exit !(${diff:-1} <= 1e-5) }" </dev/null || bad="$bad
accelerated predict differs from eager by $diff"
grep -q "^gradient check .*: ok$" "$tmp/out" || bad="$bad
the gradient check failed"
if [ -z "$bad" ]; then
    echo "ok 1 - custom_layer --small: trains ($first -> $last), saves and loads, accelerated = eager, gradients match"
else
    printf '%s\n' "$bad" | sed 's/^/# /'
    sed 's/^/#   | /' "$tmp/out" | tail -n 40
    echo "not ok 1 - custom_layer --small"
fi

# 2. --bench at its default size (64x64x16x30), both forms: the same loss.
bad=
timeout 300 "$ex/custom_layer" --bench custom --reps 1 >"$tmp/c" 2>&1 || bad="custom bench failed"
timeout 300 "$ex/custom_layer" --bench free --reps 1 >"$tmp/f" 2>&1 || bad="$bad free bench failed"
lc=$(sed -n 's/^loss \([^,]*\),.*/\1/p' "$tmp/c")
lf=$(sed -n 's/^loss \([^,]*\),.*/\1/p' "$tmp/f")
[ -n "$lc" ] && [ "$lc" = "$lf" ] || bad="$bad
losses differ: custom '$lc', free '$lf'"
if [ -z "$bad" ]; then
    echo "ok 2 - custom_layer --bench: the custom layer and the free function give the same loss ($lc)"
else
    printf '%s\n' "$bad" | sed 's/^/# /'
    cat "$tmp/c" "$tmp/f" | sed 's/^/#   | /' | tail -n 20
    echo "not ok 2 - custom_layer --bench"
fi

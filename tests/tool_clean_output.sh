#!/bin/sh
# What the examples and the dlaccel tool print names no file outside the
# project: no string literal in examples/ or tools/ points into ../shared
# (the design brief, the PyTorch peers) or at BASELINE.md, which a user's
# copy of dlaccel does not have. The main job used to end with "goals
# (../shared/peers/cnn_fmnist.py ...)". Speaks TAP.
src=$(cd "$(dirname "$0")/.." && pwd)
echo "1..1"
# Lines with a string literal that names such a file (comments are for
# developers and may).
hits=$(grep -n '"[^"]*\(\.\./shared\|shared/peers\|BASELINE\.md\)' \
    "$src"/examples/*.c "$src"/examples/*.sh "$src"/tools/*.c "$src"/tools/*.sh 2>/dev/null)
if [ -z "$hits" ]; then
    echo "ok 1 - no printed reference to files outside the project"
else
    printf '%s\n' "$hits" | sed 's/^/#   /'
    echo "not ok 1 - no printed reference to files outside the project"
fi

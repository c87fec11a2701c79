#!/bin/sh
# Every op the core defines is registered (DLA__OP_REGISTER after its
# definition), so every trace can be saved: a static check over the
# sources, one TAP line per file that defines ops. test_trace_file checks
# the names are unique and that a network of every op family saves.
src="${srcdir:-.}/core"
files=$(grep -l 'static const dla__op [A-Za-z_0-9#]* = {' "$src"/*.c)
set -- $files
echo "1..$#"
n=0
for f in $files; do
    n=$((n + 1))
    missing=""
    for op in $(sed -n 's/.*static const dla__op \([A-Za-z_0-9#]*\) = {.*/\1/p' "$f"); do
        grep -q "DLA__OP_REGISTER\(_AS\)\?($op," "$f" || missing="$missing $op"
    done
    if [ -z "$missing" ]; then
        echo "ok $n - every op of $(basename "$f") is registered"
    else
        echo "not ok $n - $(basename "$f") defines ops nobody registered:$missing"
    fi
done

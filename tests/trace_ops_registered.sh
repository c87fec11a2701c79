#!/bin/sh
# Every op the library defines is registered (DLA__OP_REGISTER after its
# definition), so every trace can be saved; and every op registered with
# attributes (a size other than 0) has an infer, since a loaded trace's
# attributes are bytes from a file that its forward trusts (core/op.h). A
# static check over the sources, two TAP lines per file that defines ops.
# test_trace_file checks the names are unique and that a network of every
# op family saves.
src="${srcdir:-.}"
files=$(grep -l 'static const dla__op [A-Za-z_0-9#]* = {' "$src"/core/*.c "$src"/nn/*.c)
set -- $files
echo "1..$(($# * 2))"
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
    n=$((n + 1))
    # Each op's initializer (from its "static const dla__op" line to the
    # "};" that ends it) against its registration's last argument.
    unchecked=$(awk '
        /static const dla__op [A-Za-z_0-9#]* = \{/ {
            name = $0
            sub(/.*static const dla__op /, "", name)
            sub(/ = \{.*/, "", name)
            body = ""
            inop = 1
        }
        inop { body = body $0 }
        inop && /\};/ { inop = 0; infer[name] = body ~ /\.infer *=/ }
        /DLA__OP_REGISTER(_AS)?\(/ && !/define DLA__OP_REGISTER/ {
            line = $0
            sub(/.*DLA__OP_REGISTER(_AS)?\(/, "", line)
            sub(/\);.*/, "", line)
            op = line
            sub(/,.*/, "", op)
            size = line
            sub(/.*, */, "", size)
            if (size != "0" && !infer[op])
                printf " %s", op
        }' "$f")
    if [ -z "$unchecked" ]; then
        echo "ok $n - every op of $(basename "$f") with attributes has an infer"
    else
        echo "not ok $n - $(basename "$f") registers ops with attributes and no infer:$unchecked"
    fi
done

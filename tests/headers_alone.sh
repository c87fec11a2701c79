#!/bin/sh
# Every public header compiles when it is the first (and only) one a file
# includes, as C11 and, where a C++ compiler is there, as C++: a user who
# writes `#include <dlaccel/autodiff.h>` for dla_jacobian (README.md names
# it there) or a plugin that starts with <dlaccel/plugin_kit_args.h> got
# errors from other headers ("unknown type name 'dla_function'" in
# accel.h), because the header's guard was set before dlaccel.h included
# the family in its order. Only api/ on the include path, as an installed
# dlaccel's. Speaks TAP.
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-headers-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
cxx=${CXX:-c++}
command -v "$cxx" >/dev/null 2>&1 || cxx=
headers=$(cd "$src/api" && ls dlaccel.h dlaccel/*.h)
count=0
for h in $headers; do count=$((count + 1)); done
echo "1..$((count * 2))"
n=0
for h in $headers; do
    printf '#include <%s>\nint main(void) { return 0; }\n' "$h" >"$tmp/alone.c"
    cp "$tmp/alone.c" "$tmp/alone.cpp"
    n=$((n + 1))
    if "$cc" -std=c11 -Wall -Wextra -Werror -I"$src/api" -c "$tmp/alone.c" -o "$tmp/alone.o" \
        >"$tmp/err" 2>&1; then
        echo "ok $n - <$h> alone compiles as C11"
    else
        echo "not ok $n - <$h> alone compiles as C11"
        sed 's/^/# /' "$tmp/err" | head -n 8
    fi
    n=$((n + 1))
    if [ -z "$cxx" ]; then
        echo "ok $n # SKIP no C++ compiler for <$h>"
    elif "$cxx" -std=c++17 -Wall -Wextra -Werror -I"$src/api" -c "$tmp/alone.cpp" \
        -o "$tmp/alone.o" >"$tmp/err" 2>&1; then
        echo "ok $n - <$h> alone compiles as C++17"
    else
        echo "not ok $n - <$h> alone compiles as C++17"
        sed 's/^/# /' "$tmp/err" | head -n 8
    fi
done

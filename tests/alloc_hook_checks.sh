#!/bin/sh
# Every host allocation of the library goes through the hook a user
# installs with dla_set_allocator (dlaccel.h says so, and the tests that
# refuse each allocation in turn rely on it): a bare malloc, calloc,
# realloc, strdup or free in core/ or nn/ escapes it (train_population.c,
# resize.c, ode45.c and attention.c each had some until 2026-11-29; a
# user's allocator never saw them, and refusing them was not possible).
# core/alloc.c is the hook itself; a line whose block libc made (realpath)
# says "libc" in its comment. A static check, one TAP line.
top="${srcdir:-.}"
echo "1..1"
hits=$(grep -nE '(^|[^_a-zA-Z0-9>.])(malloc|calloc|realloc|strdup|free)\(' \
    "$top"/core/*.c "$top"/nn/*.c | grep -v '/core/alloc\.c:' | grep -vE ':[0-9]+: *(\*|/\*)' |
    grep -v 'libc')
if [ -z "$hits" ]; then
    echo "ok 1 - every allocation in core/ and nn/ goes through the library's hook"
else
    echo "not ok 1 - allocations that bypass dla_set_allocator's hook:"
    echo "$hits" | sed 's/^/#   /'
    exit 1
fi

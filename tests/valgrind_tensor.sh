#!/bin/sh
# The tensor suite under valgrind: no invalid access, no definite leak.
# Skipped (TAP SKIP) where valgrind is not installed.
echo "1..1"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "ok 1 # SKIP valgrind not installed"
    exit 0
fi
log=$(mktemp)
OMP_NUM_THREADS=1 CMOCKA_MESSAGE_OUTPUT=STDOUT "$DLA_TEST_BUILDDIR/libtool" --mode=execute \
    valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite "$DLA_TEST_BUILDDIR/tests/test_tensor" >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    echo "ok 1 - test_tensor is valgrind-clean (no invalid access, no definite leak)"
else
    echo "not ok 1 - test_tensor under valgrind exited $rc"
    sed 's/^/# /' "$log" | tail -n 60
fi
rm -f "$log"

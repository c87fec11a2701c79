#!/bin/sh
# The tensor, autodiff and accelerate suites under valgrind: no invalid
# access, no definite leak. Skipped (TAP SKIP) where valgrind is missing.
suites="test_tensor test_autodiff test_accel"
echo "1..3"
n=0
for s in $suites; do
    n=$((n + 1))
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "ok $n # SKIP valgrind not installed"
        continue
    fi
    # A sanitized binary maps shadow memory valgrind cannot host; the
    # sanitizer checks the same things on the plain runs.
    if [ -n "${DLA_TEST_SANITIZER:-}" ] && [ "$DLA_TEST_SANITIZER" != none ]; then
        echo "ok $n # SKIP valgrind cannot run a binary built with --enable-sanitizers=$DLA_TEST_SANITIZER"
        continue
    fi
    log=$(mktemp)
    OMP_NUM_THREADS=1 CMOCKA_MESSAGE_OUTPUT=STDOUT "$DLA_TEST_BUILDDIR/libtool" --mode=execute \
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite "$DLA_TEST_BUILDDIR/tests/$s" >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok $n - $s is valgrind-clean (no invalid access, no definite leak)"
    else
        echo "not ok $n - $s under valgrind exited $rc"
        sed 's/^/# /' "$log" | tail -n 60
    fi
    rm -f "$log"
done

#!/bin/sh
# The nn op suites twice more: with testmem as the default device (memory
# the host cannot address; pooling and the rest fall back to the cpu plugin
# with copies), and under valgrind on the default device (no invalid access,
# no definite leak; skipped where valgrind is not installed). One TAP line
# per suite and run, so a failure names both.
suites="act norm crossnorm pool fc dropout"
echo "1..12"
n=0
log=$(mktemp)
for s in $suites; do
    n=$((n + 1))
    if DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH" \
        DLACCEL_DEVICE=testmem CMOCKA_MESSAGE_OUTPUT=STDOUT \
        "$DLA_TEST_BUILDDIR/tests/test_nnops_$s" >"$log" 2>&1; then
        echo "ok $n - test_nnops_$s on testmem"
    else
        echo "not ok $n - test_nnops_$s on testmem"
        sed 's/^/# /' "$log" | tail -n 40
    fi
done
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
    if OMP_NUM_THREADS=1 CMOCKA_MESSAGE_OUTPUT=STDOUT "$DLA_TEST_BUILDDIR/libtool" --mode=execute \
        valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        --show-leak-kinds=definite "$DLA_TEST_BUILDDIR/tests/test_nnops_$s" >"$log" 2>&1; then
        echo "ok $n - test_nnops_$s is valgrind-clean"
    else
        echo "not ok $n - test_nnops_$s under valgrind"
        sed 's/^/# /' "$log" | tail -n 60
    fi
done
rm -f "$log"

#!/bin/sh
# The tests' comparisons see a NaN. cmocka's assert_float_equal passes a
# NaN for any value (its test, fabs(a - b) > eps, is false for a NaN), a
# running worst kept with fmax(worst, d) drops a NaN d, and a failure
# written `if (fabs(a - b) > tol)` is skipped by one: each lets a NaN
# result pass the check meant to catch it. tu_assert_near (tu_assert.h),
# tu_worse (testutil.h) and `!(fabs(a - b) <= tol)` fail on it. A static
# check over the tests' sources, one TAP line per kind.
top="${srcdir:-.}"
n=0
status=0
echo "1..3"
check() { # description, extended regular expression
    n=$((n + 1))
    hits=$(grep -nE -- "$2" "$top"/tests/*.c "$top"/tests/*.h)
    if [ -z "$hits" ]; then
        echo "ok $n - no $1"
    else
        echo "not ok $n - $1, which a NaN passes:"
        echo "$hits" | sed 's/^/#   /'
        status=1
    fi
}
check "cmocka assert_float_equal" 'assert_float_equal *\('
check "running worst kept with fmax" '= *fmaxf? *\( *[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])? *, *fabsf? *\('
check "failure on fabs(...) > tol" 'if *\( *fabsf? *\(.*\) *> *[^=]'
exit $status

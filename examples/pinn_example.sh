#!/bin/sh
# Smoke test of examples/pinn as a user runs it: trains the
# physics-informed network briefly, on the line and on the square, and
# checks what it prints (a Laplacian inside an accelerated loss, a replay
# with eager's bits); then with --lbfgs (dla_lbfgsupdate on fixed points,
# the accelerated loss as its loss function), whose error must be well
# below Adam's: on this project's machines it stopped at 0.0001 on the line
# (287 iterations, its line search failing at single precision's floor)
# and was at 0.0026 on the square after its 2000 iterations, so the bounds
# are 0.001 and 0.01.
# Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-pinn-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
echo "1..6"

n=1
# dims, iterations ("-": the default), --lbfgs or "-", the error bound.
for case in "1 1500 - 0.05" "2 3000 - 0.05" "1 - --lbfgs 0.001" "2 - --lbfgs 0.01"; do
    set -- $case
    dims=$1 its=$2 mode=$3 bound=$4
    if [ "$mode" = - ]; then
        args="--iterations $its"
        patterns="iteration $its: loss|Function: @modelLoss|Occupancy: 2|time per iteration"
        what="pinn --dims $dims trains a Poisson problem to within $bound through an accelerated loss"
    else
        args="$mode"
        patterns="fixed collocation points, L-BFGS|stopped: |loss evaluations"
        what="pinn --dims $dims --lbfgs trains the Poisson problem with L-BFGS to within $bound"
    fi
    "$ex/pinn" --dims "$dims" $args >"$tmp/out" 2>&1
    status=$?
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status (1: the error stayed above 0.05)"; ok=no; }
    old_ifs=$IFS IFS='|'
    for pattern in $patterns "largest error against the solution" \
        "replay equals the eager call, bit for bit: yes"; do
        grep -qF -- "$pattern" "$tmp/out" || { echo "# output lacks: $pattern"; ok=no; }
    done
    IFS=$old_ifs
    err=$(sed -n 's/.*largest error against the solution: //p' "$tmp/out")
    if [ -z "$err" ] || ! awk -v e="$err" -v b="$bound" 'BEGIN { exit !(e < b) }'; then
        echo "# largest error '$err', bound $bound"
        ok=no
    fi
    if [ $ok = yes ]; then echo "ok $n - $what"
    else sed 's/^/# /' "$tmp/out"; echo "not ok $n - $what"; fi
    n=$((n + 1))
done

for bad in "--iterations 0:--iterations wants a whole number in [1, 100000000], not '0'" \
    "--dims 3:--dims wants a whole number in [1, 2], not '3'"; do
    "$ex/pinn" ${bad%%:*} >"$tmp/out" 2>&1
    status=$?
    if [ "$status" -eq 2 ] && grep -qF -- "${bad#*:}" "$tmp/out"; then
        echo "ok $n - pinn ${bad%%:*} is refused with a message"
    else
        sed 's/^/# /' "$tmp/out"; echo "not ok $n - pinn ${bad%%:*} is refused with a message"
    fi
    n=$((n + 1))
done

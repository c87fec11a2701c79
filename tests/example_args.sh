#!/bin/sh
# The examples' command lines as a user tries them (examples/example_args.h):
# --help prints the usage on stdout and exits 0; a number option given
# something that is not a whole number in its range exits 2 naming the
# option and the value (atoi had read `--seed abc` as seed 0 and
# `--epochs 3x` as 3, and trained on); an unknown argument, or an option
# without its value, exits 2 naming it. Nothing here trains. Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-args-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_LOG DLACCEL_DEVICE
n=0
# check STATUS PROGRAM ARGS... -- PATTERN: runs the example, compares the
# exit status, and greps stdout (status 0) or stderr (otherwise).
check() {
    n=$((n + 1)); want=$1; prog=$2; shift 2
    args=""
    while [ "$1" != "--" ]; do args="$args $1"; shift; done
    pattern=$2
    # shellcheck disable=SC2086
    timeout 60 "$ex/$prog" $args >"$tmp/out" 2>"$tmp/err"
    got=$?
    stream="$tmp/err"; [ "$want" -eq 0 ] && stream="$tmp/out"
    if [ "$got" -eq "$want" ] && grep -qF -- "$pattern" "$stream"; then
        echo "ok $n - $prog$args: exit $want, '$pattern'"
    else
        echo "# exit status $got (expected $want); stdout, then stderr:"
        sed 's/^/#   /' "$tmp/out" "$tmp/err"
        echo "not ok $n - $prog$args: exit $want, '$pattern'"
    fi
}
echo "1..39"
for prog in cnn_fmnist waveform forecast pinn neural_ode transfer autoencoder volumes tokens datastores sequence_datastore \
    custom_layer slice_layer ctc_sequences lstm_function; do
    check 0 $prog --help -- "usage: $prog "
done
check 2 cnn_fmnist --seed abc -- "cnn_fmnist: --seed wants a whole number from 0 to 2^64 - 1, not 'abc'"
check 2 cnn_fmnist --epochs 3x -- "cnn_fmnist: --epochs wants a whole number in [1, 1000000], not '3x'"
check 2 cnn_fmnist --read-threads 0 -- "--read-threads wants a whole number in [1, 1024], not '0'"
check 2 cnn_fmnist --bogus -- "unknown argument or missing value: '--bogus'"
check 2 cnn_fmnist --epochs -- "unknown argument or missing value: '--epochs'"
check 2 waveform --seed -1 -- "waveform: --seed wants a whole number from 0 to 2^64 - 1, not '-1'"
check 2 transfer --few 1.5 -- "transfer: --few wants a whole number in [1,"
check 2 pinn --dims 3 -- "pinn: --dims wants a whole number in [1, 2], not '3'"
check 2 volumes --count 10 -- "volumes: --count wants a whole number in [64,"
check 2 forecast --hidden 0x10 -- "forecast: --hidden wants a whole number in [1, 65536], not '0x10'"
check 2 custom_layer --reps 99999999999 -- "custom_layer: --reps wants a whole number in [1, 1000000000]"
check 2 ctc_sequences abc -- "ctc_sequences: ITERATIONS wants a whole number in [1, 100000000], not 'abc'"
check 2 lstm_function 10 20 -- "unknown argument or missing value: '20'"
check 2 neural_ode --iterations 0 -- "neural_ode: --iterations wants a whole number in [1, 100000000], not '0'"
# A value with a leading blank (check splits its arguments on blanks):
# strtoull skips the blank and reads " -1" as 2^64 - 1.
n=$((n + 1))
if timeout 60 "$ex/waveform" --seed " -1" >"$tmp/out" 2>"$tmp/err"; then got=0; else got=$?; fi
if [ "$got" -eq 2 ] && grep -qF -- "--seed wants a whole number from 0 to 2^64 - 1, not ' -1'" "$tmp/err"; then
    echo "ok $n - waveform --seed ' -1': exit 2"
else
    echo "# exit status $got (expected 2); stderr:"
    sed 's/^/#   /' "$tmp/err"
    echo "not ok $n - waveform --seed ' -1': exit 2"
fi

# The examples without options take --help too, and refuse what they do
# not take: accelerate_loss wrote its trace to a file named "--help" and
# trained; accelerate_check, accelerate_net and quickstart ignored every
# argument. None of these runs trains.
for prog in accelerate_check accelerate_loss accelerate_net quickstart; do
    check 0 $prog --help -- "usage: $prog"
done
for prog in accelerate_check accelerate_net quickstart; do
    check 2 $prog --small -- "$prog: unknown argument or missing value: '--small'"
done
check 2 accelerate_loss a.dlt b.dlt -- "accelerate_loss: unknown argument or missing value: 'b.dlt'"
n=$((n + 1))
if (cd "$tmp" && timeout 60 "$ex/accelerate_loss" -h >out 2>err) && [ ! -e "$tmp/-h" ]; then
    echo "ok $n - accelerate_loss -h writes no trace file named -h"
else
    echo "not ok $n - accelerate_loss -h writes no trace file named -h"
fi

#!/bin/sh
# examples/cnn_fmnist (the README's main job) on a dataset that is not
# there, corrupt, or half there: 77 (automake's "skipped") only when
# Fashion-MNIST is not installed at all; a corrupt or missing file is an
# error (exit 1) whose message names the file, and a bad test split is
# found before training starts, not after the first epoch. It used to exit
# 77 on corrupt data and read the test split only after training.
# Speaks TAP.
ex="$DLA_TEST_BUILDDIR/examples/cnn_fmnist"
real=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-data-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLA_EXAMPLE_SMALL DLACCEL_DEVICE

echo "1..4"
n=0
# run DIR: the example on DIR, output in $tmp/out, status in $status.
run() {
    (cd "$tmp" && "$ex" --small --chart "$tmp/c.svg" --data "$1") >"$tmp/out" 2>&1
    status=$?
}
# verdict DESCRIPTION STATUS PATTERN...; a pattern starting with ! must not
# appear.
verdict() {
    n=$((n + 1)); what=$1; want=$2; shift 2
    ok=yes
    [ "$status" -eq "$want" ] || { echo "# exit status $status, expected $want"; ok=no; }
    for p in "$@"; do
        case $p in
        !*) ! grep -qF -- "${p#!}" "$tmp/out" || { echo "# output has: ${p#!}"; ok=no; } ;;
        *) grep -qF -- "$p" "$tmp/out" || { echo "# output lacks: $p"; ok=no; } ;;
        esac
    done
    if [ $ok = yes ]; then echo "ok $n - $what"; else
        sed 's/^/#   /' "$tmp/out"; echo "not ok $n - $what"; fi
}

mkdir "$tmp/empty"
run "$tmp/empty"
verdict "no dataset at all: 77, saying it is not installed" 77 \
    "Fashion-MNIST is not installed in $tmp/empty"

mkdir "$tmp/garbage"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
    t10k-labels-idx1-ubyte; do
    # A gzip stream cut short: read errors are DLA_ERR_IO, as a missing
    # file's, which is what the example used to take for "not installed".
    head -c 100000 /dev/zero | gzip -c | head -c 40 >"$tmp/garbage/$f.gz"
done
run "$tmp/garbage"
verdict "a corrupt training file: exit 1, naming it" 1 \
    "cnn_fmnist: training set: " "$tmp/garbage/train-" "!not installed"

if [ -f "$real/train-images-idx3-ubyte.gz" ] && [ -f "$real/train-labels-idx1-ubyte.gz" ]; then
    mkdir "$tmp/badtest" "$tmp/notest"
    for d in badtest notest; do
        ln -s "$real/train-images-idx3-ubyte.gz" "$real/train-labels-idx1-ubyte.gz" "$tmp/$d/"
    done
    cp "$tmp/garbage/t10k-images-idx3-ubyte.gz" "$tmp/garbage/t10k-labels-idx1-ubyte.gz" \
        "$tmp/badtest/"
    run "$tmp/badtest"
    verdict "a corrupt test file: exit 1 naming it, before any training" 1 \
        "cnn_fmnist: test set: " "$tmp/badtest/t10k-" "!training:" "!epoch 1"
    run "$tmp/notest"
    verdict "a missing test split beside the training one: exit 1 naming the file" 1 \
        "cnn_fmnist: test set: " "$tmp/notest/t10k-" "!training:" "!not installed in"
else
    n=$((n + 1)); echo "ok $n # SKIP Fashion-MNIST is not installed in $real"
    n=$((n + 1)); echo "ok $n # SKIP Fashion-MNIST is not installed in $real"
fi

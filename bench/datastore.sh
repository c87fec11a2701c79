#!/bin/sh
# bench/datastore.sh - the image datastore's figures (issue 18):
#   1 decode throughput: images/s reading Fashion-MNIST's 60,000 training
#     PNG files whole, with 1 and 2 reading threads, alternated, medians;
#   2 the training step's consumption: images/s the digit CNN's step takes
#     (cnn_fmnist), against which 1 is to be read;
#   3 training from the folder against from memory: cnn_fmnist's time per
#     epoch with --folder and without, alternated, medians, and the test
#     accuracy of each (the same seed and order: the same figures);
#   4 peak memory (VmHWM) of a queue pass over the 60,000 files against the
#     same pass over the IDX files in memory, with the folder's size on disk.
# The machine may be shared: each figure is a median of alternated runs, and
# the load average is printed before and after.
#
#     bench/datastore.sh BUILDDIR [FOLDER] [REPS] [--full]
#
# FOLDER (default: a temporary one, removed after) is made with `dlaccel
# export-images` when it lacks train/ or test/. REPS: runs of each (3).
# Training runs cnn_fmnist --small (3,840 images, one epoch) unless --full
# (60,000 images, one epoch: minutes per run).
set -eu
build=$(cd "${1:?usage: datastore.sh BUILDDIR [FOLDER] [REPS] [--full]}" && pwd)
folder=${2:-}
reps=${3:-3}
size=--small
[ "${4:-}" = --full ] && size="--epochs 1"
export DLACCEL_PLUGIN_PATH="${DLACCEL_PLUGIN_PATH:-$build/plugins.d}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-imds-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$folder" ]; then
    folder="$tmp/fmnist"
fi
for split in train test; do
    [ -d "$folder/$split" ] || "$build/tools/dlaccel" export-images --split $split "$folder/$split"
done

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
echo "folder: $folder/train: $(find "$folder/train" -type f | wc -l) files," \
    "$(du -s --apparent-size -BM "$folder/train" | cut -f1) of data," \
    "$(du -s -BM "$folder/train" | cut -f1) on disk (file system blocks)"

# 1. decode throughput, 1 and 2 threads alternated
: >"$tmp/d1"
: >"$tmp/d2"
i=0
while [ $i -lt "$reps" ]; do
    for t in 1 2; do
        "$build/bench/imds-bench" decode "$folder/train" $t 1 | field images_per_s >>"$tmp/d$t"
    done
    i=$((i + 1))
done
d1=$(median <"$tmp/d1")
d2=$(median <"$tmp/d2")
echo "decode (60,000 PNG 28x28 gray, read_size 256): 1 thread $d1 images/s, 2 threads $d2 images/s (medians of $reps: $(tr '\n' ' ' <"$tmp/d1")/ $(tr '\n' ' ' <"$tmp/d2"))"

# 3. (and 2.) training from the folder and from memory, alternated
: >"$tmp/tidx"
: >"$tmp/tfolder"
i=0
while [ $i -lt "$reps" ]; do
    for m in idx folder; do
        args=""
        [ $m = folder ] && args="--folder $folder"
        # shellcheck disable=SC2086
        (cd "$tmp" && "$build/examples/cnn_fmnist" $size $args --chart "$tmp/c.svg") >"$tmp/out.$m.$i" 2>&1
        sed -n 's/.*time per epoch: \([0-9.]*\) s.*; \([0-9.]*\) ms per iteration.*/\1 \2/p' \
            "$tmp/out.$m.$i" >>"$tmp/t$m"
        echo "  $m run $i: $(grep -E '^test accuracy' "$tmp/out.$m.$i"), $(grep -E '^time per epoch' "$tmp/out.$m.$i"), $(grep -E '^peak RSS' "$tmp/out.$m.$i")"
    done
    i=$((i + 1))
done
ti=$(cut -d' ' -f1 "$tmp/tidx" | median)
tf=$(cut -d' ' -f1 "$tmp/tfolder" | median)
ms=$(cut -d' ' -f2 "$tmp/tidx" | median)
echo "training step consumption: $(awk "BEGIN { printf \"%.0f\", 128000 / $ms }") images/s ($ms ms per iteration of 128, median)"
echo "epoch ($size): from memory $ti s, from the folder $tf s (medians of $reps), folder/memory $(awk "BEGIN { printf \"%.3f\", $tf / $ti }")"

# 4. peak memory of a queue pass, folder against IDX
for src in "$folder/train" --idx; do
    "$build/bench/imds-bench" queue "$src"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

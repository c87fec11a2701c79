#!/bin/bash
# tools/quickstart.sh - from a fresh clone to the main job in one command:
# installs the packages (apt-get; Fashion-MNIST comes as
# dataset-fashion-mnist), builds in build/, and trains the dlaccelerate
# page's digit CNN on Fashion-MNIST (examples/cnn_fmnist: an accelerated
# model loss, SGDM, 3 epochs) on the best loaded device with the build
# tree's plugins. It draws a progress bar, then prints the test accuracy,
# HitRate, the time per epoch and where the chart of loss and accuracy was
# written (build/cnn_fmnist-training.svg).
#
#   bash tools/quickstart.sh [--epochs N]
#
# Arguments go to the example (--small trains on a slice in seconds).
# Reruns are quick: packages already there are skipped, and the build is
# incremental once build/ exists.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
builddir=$root/build
# shellcheck source=../.ci/packages.sh
. "$root/.ci/packages.sh"

echo "== packages"
dla_install_packages
cd "$root"
if [ ! -x "$builddir/config.status" ]; then
    echo "== configure ($builddir)"
    autoreconf -fi >/dev/null
    mkdir -p "$builddir"
    (cd "$builddir" && "$root/configure" -q)
fi
echo "== make"
make -C "$builddir" -j"$(nproc 2>/dev/null || echo 2)" -s
# Every plugin the build made: the default folder, and the opencl and cuda
# plugins' own when they were built. The best one by priority is the default device.
plugins=$builddir/plugins.d
[ -f "$builddir/plugins/opencl/opencl.json" ] && plugins=$plugins:$builddir/plugins/opencl
# The cuda plugin's (priority 200): a GPU, when the machine has one, is the
# default device; without one the plugin reports no device and cpu serves.
[ -f "$builddir/plugins/cuda/cuda.json" ] && plugins=$plugins:$builddir/plugins/cuda
echo "== the main job: build/examples/cnn_fmnist $*"
DLACCEL_PLUGIN_PATH="$plugins${DLACCEL_PLUGIN_PATH:+:$DLACCEL_PLUGIN_PATH}" \
    exec "$builddir/examples/cnn_fmnist" --chart "$builddir/cnn_fmnist-training.svg" "$@"

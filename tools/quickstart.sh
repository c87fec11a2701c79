#!/bin/bash
# tools/quickstart.sh - from a fresh clone to the main job in one command:
# installs the packages (apt-get), builds in build/, and runs the quickstart
# example on the best loaded device with the build tree's plugins.
#
#   bash tools/quickstart.sh
#
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
echo "== the main job: build/examples/quickstart"
DLACCEL_PLUGIN_PATH="$builddir/plugins.d${DLACCEL_PLUGIN_PATH:+:$DLACCEL_PLUGIN_PATH}" \
    exec "$builddir/examples/quickstart"

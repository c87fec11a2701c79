#!/bin/sh
# The tensor suite with denseonly as the default device: the cpu plugin
# wrapped to decline every kernel call with a view that is not dense
# (tests/plugins/cpuwrap.c). It passes check-plugin (tests/conformance.sh),
# and so must pass this suite: the core's dense retry rescues each decline.
# Any plugin runs the suite the same way: its manifest's folder first on
# DLACCEL_PLUGIN_PATH and its name in DLACCEL_DEVICE.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/denseonly:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=denseonly
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_tensor"

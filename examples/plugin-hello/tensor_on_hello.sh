#!/bin/sh
# The tensor suite again with the hello example plugin (docs/plugins.md) as
# the default device: the plugin a reader copies really works, every op
# reaching the cpu plugin through its two copy members.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/examples/plugin-hello:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=hello
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_tensor"

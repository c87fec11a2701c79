#!/bin/sh
# The accelerate suite with testmem loaded: its device becomes the second
# device, so the key's device component and the replay of a trace recorded
# on the cpu device on testmem memory are exercised too.
DLACCEL_PLUGIN_PATH="$DLACCEL_PLUGIN_PATH:$DLA_TEST_BUILDDIR/tests/plugins.d"
export DLACCEL_PLUGIN_PATH
exec "$DLA_TEST_BUILDDIR/tests/test_accel"

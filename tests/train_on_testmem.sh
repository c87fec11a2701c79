#!/bin/sh
# The training suite with the testmem plugin loaded beside the cpu one: the
# cpu stays the default device (DLACCEL_DEVICE), so "auto" and "cpu" train
# there, and ExecutionEnvironment "gpu" picks testmem, the one device that
# is not a cpu, whose memory the host cannot address.
DLACCEL_PLUGIN_PATH="$DLACCEL_PLUGIN_PATH:$DLA_TEST_BUILDDIR/tests/plugins.d"
DLACCEL_DEVICE=cpu
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_train"

#!/bin/sh
# The parallel training suite with the testmem plugin loaded beside the cpu
# one: ExecutionEnvironment "multi-gpu" (in a world of one) picks testmem,
# the one device that is not a cpu, whose memory the host cannot address,
# and trainnet's combinations run there.
DLACCEL_PLUGIN_PATH="$DLACCEL_PLUGIN_PATH:$DLA_TEST_BUILDDIR/tests/plugins.d"
DLACCEL_DEVICE=cpu
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_parallel_train"

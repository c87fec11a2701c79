#!/bin/sh
# The accel suite with graphwrap as the default device: the cpu plugin
# with plan_replay (ABI 1.5) served as a recorded graph, as the cuda plugin
# serves it with CUDA graphs (tests/plugins/graphwrap.c). Every replay
# must equal eager bit for bit, whether the host made the calls or the
# device ran the recording itself, and with DLA_TEST_EXPECT_DEVICE_RUNS
# test_replays_with_recurring_memory_equal_eager_every_time also asks
# that the device ran some replays itself.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=graphwrap
DLA_TEST_EXPECT_DEVICE_RUNS=1
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE DLA_TEST_EXPECT_DEVICE_RUNS
exec "$DLA_TEST_BUILDDIR/tests/test_accel"

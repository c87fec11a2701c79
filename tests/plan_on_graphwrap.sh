#!/bin/sh
# test_plan's random graphs (elementwise, and with their gradients) with
# graphwrap as the default device: the cpu plugin serving ABI 1.5's
# plan_replay as the cuda plugin serves it, a recording of a plan's third
# run standing in for the CUDA graph (tests/plugins/graphwrap.c). Each
# graph's last runs are the recording's, over the run's own memory: they
# must give eager's bits, and the device must have run at least one run of
# every graph itself (DLA_TEST_EXPECT_DEVICE_RUNS).
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=graphwrap
DLA_TEST_FILTER='*graphs_*plan_to_eager_bits'
DLA_TEST_EXPECT_DEVICE_RUNS=1
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE DLA_TEST_FILTER DLA_TEST_EXPECT_DEVICE_RUNS
exec "$DLA_TEST_BUILDDIR/tests/test_plan"

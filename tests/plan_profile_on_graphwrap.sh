#!/bin/sh
# test_plan's profile test with graphwrap as the default device: the cpu
# plugin serving ABI 1.5's plan_replay as the cuda plugin serves it with
# CUDA graphs (tests/plugins/graphwrap.c). Unprofiled, the device runs
# the plan's later runs itself (DLA_TEST_EXPECT_DEVICE_RUNS); under
# DLACCEL_PLAN_PROFILE it must not, so that each step is timed on its own.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=graphwrap
DLA_TEST_FILTER='a_profiled_plan_times_each_step_and_keeps_the_bits'
DLA_TEST_EXPECT_DEVICE_RUNS=1
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE DLA_TEST_FILTER DLA_TEST_EXPECT_DEVICE_RUNS
exec "$DLA_TEST_BUILDDIR/tests/test_plan"

#!/bin/sh
# The accel suite on graphwrap (tests/accel_on_graphwrap.sh) with fill not
# native (DLA_GRAPHWRAP_NOT_NATIVE): the host runs each fill on the cpu
# plugin, copying its view with copy_to_host and copy_to_device, and those
# memory calls end a recording part way (in a training step, after the
# loss is written and before the backward's seed), as they end the cuda
# plugin's capture: the results written so far are copied out and the
# rest of the run is plain calls. Every replay must still equal eager.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=graphwrap
DLA_GRAPHWRAP_NOT_NATIVE=fill
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE DLA_GRAPHWRAP_NOT_NATIVE
unset DLA_TEST_EXPECT_DEVICE_RUNS
exec "$DLA_TEST_BUILDDIR/tests/test_accel"

#!/bin/sh
# The accelerate suite with testmem (memory the host cannot address, every
# kernel on the cpu plugin with copies) as the default device, beside the
# tensor and autodiff suites' runs there.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_accel"

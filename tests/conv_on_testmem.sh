#!/bin/sh
# The dla_conv suite again with testmem (memory the host cannot address, no
# conv kernels) as the default device: every convolution and its gradients
# go through the core's fallback to the cpu plugin, with copies.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_conv"

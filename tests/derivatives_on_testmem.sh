#!/bin/sh
# dla_jacobian, dla_divergence and dla_laplacian (test_derivatives) with
# testmem as the default device: their sweeps' ops go through memory the
# host cannot address.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_derivatives"

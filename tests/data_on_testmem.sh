#!/bin/sh
# The data suite again with testmem (memory the host cannot address) as the
# default device: batches gathered, padded and moved there, read back through
# copies; the cpu plugin stays loaded as its fallback.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_data"

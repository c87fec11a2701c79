#!/bin/sh
# The datastore sequences suite again with testmem (memory the host cannot
# address) as the default device: observations made there, padded, masked
# and joined there, trained on there; the cpu plugin stays loaded as its
# fallback.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_datastore_sequences"

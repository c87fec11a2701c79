#!/bin/sh
# Allocation failure with testmem as the device, so the plugin's own
# allocations (through host->alloc) and the cpu fallback's fail too.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_alloc_fail"

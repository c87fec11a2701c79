#!/bin/sh
# The conformance suite with the testmem plugin loaded beside the cpu one:
# its native kernels (fill, strided_copy) are checked on memory the host
# cannot address.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
export DLACCEL_PLUGIN_PATH
exec "$DLA_TEST_BUILDDIR/tests/test_kernels"

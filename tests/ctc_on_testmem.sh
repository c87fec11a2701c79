#!/bin/sh
# The CTC suite with testmem as the default device: the recursion, its
# gather and its backward go through memory the host cannot address, and
# the target checks read through it.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_ctc"

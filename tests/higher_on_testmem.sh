#!/bin/sh
# The higher-derivatives suite with testmem as the default device: the
# recorded sweeps' ops, and a max pool's index gathered for its second
# derivative, go through memory the host cannot address.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_higher"

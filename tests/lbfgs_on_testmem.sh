#!/bin/sh
# The L-BFGS suite (test_lbfgs) with testmem as the default device: the
# directions, the trial points and the pairs are made there, and the loss
# and the dot products the line search reads come back through memory the
# host cannot address.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_lbfgs"

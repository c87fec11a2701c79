#!/bin/sh
# dla_ode45 (test_ode45) with testmem as the default device: the stages,
# the error norms read on the host and the gradients go through memory
# the host cannot address.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_ode45"

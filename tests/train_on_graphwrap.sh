#!/bin/sh
# The training suite with graphwrap as the default device: trainnet's
# accelerated steps are planned replays that graphwrap records on their
# third run and then runs itself (tests/plugins/graphwrap.c), as the cuda
# plugin runs CUDA graphs.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/cpuwrap.d/graphwrap:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=graphwrap
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_train"

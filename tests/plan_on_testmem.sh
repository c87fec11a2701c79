#!/bin/sh
# test_plan's random graphs (elementwise, and with their gradients) with
# testmem as the default device: memory the host cannot address and no
# fused kernels, so the plans keep every launch and the kernels testmem
# lacks run on the cpu through copies (core/launch.c). A planned replay
# there must give the bits of the eager run there.
DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/tests/plugins.d:$DLACCEL_PLUGIN_PATH"
DLACCEL_DEVICE=testmem
DLA_TEST_FILTER='*graphs_*plan_to_eager_bits'
export DLACCEL_PLUGIN_PATH DLACCEL_DEVICE DLA_TEST_FILTER
exec "$DLA_TEST_BUILDDIR/tests/test_plan"

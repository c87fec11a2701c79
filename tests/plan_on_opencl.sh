#!/bin/sh
# test_plan's random graphs (elementwise, and with their gradients) with
# opencl as the default device: a planned replay there must give the bits
# of the eager run there, fused programs, gathers, pools and all.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
DLA_TEST_FILTER='*graphs_*plan_to_eager_bits'
export DLACCEL_DEVICE DLA_TEST_FILTER
exec "$DLA_TEST_BUILDDIR/tests/test_plan"

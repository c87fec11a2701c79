#!/bin/sh
# Padding masks (test_net_mask: the tokens network's predictions alone and
# beside a longer neighbour, the refusals) with an OpenCL device as the
# default device.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_net_mask"

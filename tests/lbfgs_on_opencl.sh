#!/bin/sh
# The L-BFGS suite (test_lbfgs) with an OpenCL device as the default
# device; the cpu plugin stays loaded as the fallback.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_lbfgs"

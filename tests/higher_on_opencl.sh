#!/bin/sh
# The higher-derivatives suites (test_higher, test_derivatives) with an
# OpenCL device as the default device; the cpu plugin stays loaded as the
# fallback and the host's reference.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
"$DLA_TEST_BUILDDIR/tests/test_higher" || exit $?
exec "$DLA_TEST_BUILDDIR/tests/test_derivatives"

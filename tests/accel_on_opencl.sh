#!/bin/sh
# The accelerate suite with opencl as the default device, beside the
# tensor and autodiff suites' runs there (tensor_on_opencl.sh,
# autodiff_on_opencl.sh): opencl passes check-plugin, so it must pass them.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_accel"

#!/bin/sh
# The convolution kernel suite (against naive loops) with the OpenCL
# devices loaded beside the cpu plugin.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_conv_kernels"

#!/bin/sh
# The kernel suite (every kernel against naive loops written in the test)
# with the OpenCL devices loaded beside the cpu plugin: it runs on every
# device of every loaded plugin.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_kernels"

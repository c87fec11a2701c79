#!/bin/sh
# tests/test_opencl: traces across the cpu and OpenCL devices, planned
# replays on OpenCL, a network step against the cpu plugin.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_opencl"

#!/bin/sh
# dla_ctc (test_ctc) with an OpenCL device as the default device: the
# recursion, its gather, its backward and the replays on opencl; the cpu
# plugin stays loaded as the fallback and the host's reference.
. "$(dirname "$0")/opencl_env.sh"
DLACCEL_DEVICE=opencl
export DLACCEL_DEVICE
exec "$DLA_TEST_BUILDDIR/tests/test_ctc"

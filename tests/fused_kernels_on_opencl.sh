#!/bin/sh
# The fused kernel suite (a program against its steps launched one by one,
# bit for bit) with the OpenCL devices loaded. Its random programs run
# once each, so they meet the interpreter; test_opencl holds the compiled
# programs to the same bits.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_fused_kernels"

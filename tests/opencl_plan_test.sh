#!/bin/sh
# tests/test_opencl_plan: the opencl plugin's plan hooks (one host wait per
# planned replay, a failing launch named), with its debug log kept out of
# the test's output except where a test prints it.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_opencl_plan"

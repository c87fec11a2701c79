#!/bin/sh
# tests/test_opencl_differential: random cases of the ops through the
# public API on the opencl and cpu devices, compared.
. "$(dirname "$0")/opencl_env.sh"
exec "$DLA_TEST_BUILDDIR/tests/test_opencl_differential"

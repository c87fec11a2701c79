#!/bin/sh
# test_cpu_vmath with DLACCEL_CPU_VMATH=off: the cpu plugin's exp, log,
# tanh, sigmoid and erf are the scalar math library's, bit for bit.
DLACCEL_CPU_VMATH=off
export DLACCEL_CPU_VMATH
exec "$DLA_TEST_BUILDDIR/tests/test_cpu_vmath"

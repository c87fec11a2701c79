#!/bin/sh
# test_thread_bits with the cpu plugin's convolutions through im2col and
# OpenBLAS (DLACCEL_CPU_CONV=im2col) instead of its direct kernels.
DLACCEL_CPU_CONV=im2col
export DLACCEL_CPU_CONV
exec "$DLA_TEST_BUILDDIR/tests/test_thread_bits"

# tests/plan.mk - the conformance of the ABI 1.2 fused kernel on every
# device that has it.
check_PROGRAMS += tests/test_fused_kernels
tests_test_fused_kernels_SOURCES = tests/test_fused_kernels.c
tests_test_fused_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_fused_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_fused_kernels

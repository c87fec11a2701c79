# tests/kernels.mk - the kernel conformance suite, run against every device
# of every plugin that loads from $(DLACCEL_PLUGIN_PATH) (the build tree).
check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm -ldl
TESTS += tests/kernels_on_testmem.sh
EXTRA_DIST += tests/kernels_on_testmem.sh

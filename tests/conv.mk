# tests/conv.mk - convolution: the kernel conformance suite (every loaded
# device against naive loops) and dla_conv / dla_transpconv (forward
# values, finite-difference gradients, error messages).
check_PROGRAMS += tests/test_conv_kernels
tests_test_conv_kernels_SOURCES = tests/test_conv_kernels.c
tests_test_conv_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_conv_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_conv_kernels

check_PROGRAMS += tests/test_conv
tests_test_conv_SOURCES = tests/test_conv.c tests/testutil.h tests/gradcheck.h tests/tu_assert.h
tests_test_conv_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_conv_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_conv
TESTS += tests/conv_on_testmem.sh
EXTRA_DIST += tests/conv_on_testmem.sh

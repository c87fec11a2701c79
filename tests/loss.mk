# tests/loss.mk - losses, one-hot, comparisons and where (test_loss); cat,
# pad and index (test_shape); the CTC loss (test_ctc). All three also run
# with testmem as the default device, whose memory the host cannot address.
check_PROGRAMS += tests/test_loss tests/test_shape tests/test_ctc
tests_test_loss_SOURCES = tests/test_loss.c tests/testutil.h tests/gradcheck.h
tests_test_loss_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_loss_LDADD = $(DLA_TEST_LIBS)
tests_test_shape_SOURCES = tests/test_shape.c tests/testutil.h tests/gradcheck.h
tests_test_shape_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_shape_LDADD = $(DLA_TEST_LIBS)
tests_test_ctc_SOURCES = tests/test_ctc.c tests/testutil.h tests/gradcheck.h tests/test_nnops.h tests/tu_assert.h
tests_test_ctc_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_ctc_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_loss tests/test_shape tests/test_ctc tests/loss_on_testmem.sh tests/shape_on_testmem.sh \
	tests/ctc_on_testmem.sh
EXTRA_DIST += tests/loss_on_testmem.sh tests/shape_on_testmem.sh tests/ctc_on_testmem.sh

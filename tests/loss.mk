# tests/loss.mk - losses, one-hot, comparisons and where (test_loss); cat,
# pad and index (test_shape). Both also run with testmem as the default
# device, whose memory the host cannot address.
check_PROGRAMS += tests/test_loss tests/test_shape
tests_test_loss_SOURCES = tests/test_loss.c tests/testutil.h tests/gradcheck.h
tests_test_loss_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_loss_LDADD = $(DLA_TEST_LIBS)
tests_test_shape_SOURCES = tests/test_shape.c tests/testutil.h tests/gradcheck.h
tests_test_shape_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_shape_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_loss tests/test_shape tests/loss_on_testmem.sh tests/shape_on_testmem.sh
EXTRA_DIST += tests/loss_on_testmem.sh tests/shape_on_testmem.sh

# tests/data.mk - the data pipeline: IDX files (made here with zlib),
# Fashion-MNIST, sequences, the mini-batch queue, waveforms; on the default
# device and again with testmem (memory the host cannot address) as the
# device batches are made on.
check_PROGRAMS += tests/test_data
tests_test_data_SOURCES = tests/test_data.c tests/testutil.h
tests_test_data_CFLAGS = $(DLA_TEST_CFLAGS) $(ZLIB_CFLAGS) $(OPENMP_CFLAGS)
tests_test_data_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_data_LDADD = $(DLA_TEST_LIBS) $(ZLIB_LIBS)
TESTS += tests/test_data tests/data_on_testmem.sh
EXTRA_DIST += tests/data_on_testmem.sh

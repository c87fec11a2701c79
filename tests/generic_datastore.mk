# tests/generic_datastore.mk - MATLAB's generic datastores (arrayDatastore,
# fileDatastore with a read function, transform, combine, custom ones) on
# their own and through the mini-batch queue, and their errors.
check_PROGRAMS += tests/test_generic_datastore
tests_test_generic_datastore_SOURCES = tests/test_generic_datastore.c tests/testutil.h \
	tests/tu_assert.h
tests_test_generic_datastore_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_generic_datastore_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_generic_datastore

# Sequences of different lengths through a datastore: padded per batch.
check_PROGRAMS += tests/test_datastore_sequences
tests_test_datastore_sequences_SOURCES = tests/test_datastore_sequences.c tests/testutil.h \
	tests/tu_assert.h
tests_test_datastore_sequences_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_datastore_sequences_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_datastore_sequences
TESTS += tests/datastore_sequences_on_testmem.sh
EXTRA_DIST += tests/datastore_sequences_on_testmem.sh

# tests/train.mk - trainnet, trainingOptions and the progress display: one
# cmocka binary, run on the default device and again with the testmem
# plugin loaded, where ExecutionEnvironment "gpu" finds a device that is not
# a cpu and trains there.
check_PROGRAMS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c tests/testutil.h
tests_test_train_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_train_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_train tests/train_on_testmem.sh
EXTRA_DIST += tests/train_on_testmem.sh

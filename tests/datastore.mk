# tests/datastore.mk - image datastores: folder trees of PNG and JPEG files
# made by the suite (libpng, libjpeg), bad input of every kind, the queue
# and trainnet over a datastore, and `dlaccel export-images` read back.
check_PROGRAMS += tests/test_datastore
tests_test_datastore_SOURCES = tests/test_datastore.c tests/testutil.h
tests_test_datastore_CFLAGS = $(DLA_TEST_CFLAGS) $(PNG_CFLAGS) $(JPEG_CFLAGS) \
	-DDLA_TEST_SRCDIR='"$(abs_top_srcdir)"'
tests_test_datastore_LDADD = $(DLA_TEST_LIBS) $(PNG_LIBS) $(JPEG_LIBS)
TESTS += tests/test_datastore
# It runs the tool (a prerequisite through a variable, so that it extends
# automake's rule for the log instead of replacing it).
dla_datastore_test_log = tests/test_datastore.log
$(dla_datastore_test_log): tools/dlaccel$(EXEEXT)

# tests/hardening.mk - what hardening found, kept found: saved files' modes,
# traces whose bytes depend only on what was recorded (also under
# valgrind), and the allocation-failure driver's script (the driver itself,
# tests/test_alloc_fail, is in tensor.mk).
check_PROGRAMS += tests/test_file_modes tests/test_trace_bytes
tests_test_file_modes_SOURCES = tests/test_file_modes.c tests/testutil.h
tests_test_file_modes_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_file_modes_LDADD = $(DLA_TEST_LIBS)
tests_test_trace_bytes_SOURCES = tests/test_trace_bytes.c tests/testutil.h
tests_test_trace_bytes_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_trace_bytes_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_file_modes tests/test_trace_bytes tests/valgrind_trace_bytes.sh
EXTRA_DIST += tests/valgrind_trace_bytes.sh tests/alloc_fail.sh

# The JSON reader of network files, compiled in (it is internal).
check_PROGRAMS += tests/test_json_read
tests_test_json_read_SOURCES = tests/test_json_read.c tests/testutil.h core/json_read.c core/json_read.h
tests_test_json_read_CFLAGS = $(DLA_TEST_CFLAGS) $(JANSSON_CFLAGS)
tests_test_json_read_LDADD = $(DLA_TEST_LIBS) $(JANSSON_LIBS)
TESTS += tests/test_json_read

# The checksum of trace and network files, its source compiled in (the
# table path and the CPU test are static).
check_PROGRAMS += tests/test_crc32c
tests_test_crc32c_SOURCES = tests/test_crc32c.c tests/testutil.h
tests_test_crc32c_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_crc32c_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_crc32c

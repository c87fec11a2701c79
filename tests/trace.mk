# tests/trace.mk - traces as files (dla_trace_save/dla_trace_load): round
# trips on the cpu and on testmem, missing, foreign, truncated, corrupt and
# newer files under the counting allocator, the op registry, and the
# `dlaccel trace` tool.
check_PROGRAMS += tests/test_trace_file
tests_test_trace_file_SOURCES = tests/test_trace_file.c tests/testutil.h
tests_test_trace_file_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_trace_file_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_trace_file tests/trace_ops_registered.sh tests/tool_trace.sh
EXTRA_DIST += tests/trace_ops_registered.sh tests/tool_trace.sh

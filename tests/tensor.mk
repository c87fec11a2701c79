# tests/tensor.mk - the tensor suite (on the default device and on testmem),
# format parsing, allocation failure, and valgrind over the tensor suite.
check_LTLIBRARIES += tests/plugins/libdlaccel-testmem.la
tests_plugins_libdlaccel_testmem_la_SOURCES = tests/plugins/testmem.c
tests_plugins_libdlaccel_testmem_la_LDFLAGS = -module -avoid-version -shared -no-undefined -rpath /nowhere
tests_plugins_libdlaccel_testmem_la_LIBADD = -lpthread
EXTRA_DIST += tests/plugins/testmem.json.in

# The testmem manifest lives in its own folder so the default search path
# (plugins.d) never picks it up; its tests add the folder themselves.
tests/plugins.d/testmem.json: $(top_srcdir)/tests/plugins/testmem.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/plugins.d && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/tests/plugins/.libs/libdlaccel-testmem.so|' $< > $@
check_DATA = tests/plugins.d/testmem.json
CLEANFILES += tests/plugins.d/testmem.json

DLA_TEST_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
DLA_TEST_LIBS = libdlaccel.la $(CMOCKA_LIBS) -lm

check_PROGRAMS += tests/test_tensor tests/test_format tests/test_alloc_fail
tests_test_tensor_SOURCES = tests/test_tensor.c tests/testutil.h
tests_test_tensor_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_tensor_LDADD = $(DLA_TEST_LIBS)
tests_test_format_SOURCES = tests/test_format.c tests/testutil.h
tests_test_format_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_format_LDADD = $(DLA_TEST_LIBS)
tests_test_alloc_fail_SOURCES = tests/test_alloc_fail.c tests/testutil.h tests/allocfail.h
tests_test_alloc_fail_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_alloc_fail_LDADD = $(DLA_TEST_LIBS)

TESTS += tests/test_tensor tests/tensor_on_testmem.sh tests/test_format \
	tests/test_alloc_fail tests/alloc_fail_on_testmem.sh tests/valgrind_tensor.sh
EXTRA_DIST += tests/tensor_on_testmem.sh tests/alloc_fail_on_testmem.sh tests/valgrind_tensor.sh

# Autodiff: dla_feval/dla_gradient and the gradients of the core's ops.
check_PROGRAMS += tests/test_autodiff
tests_test_autodiff_SOURCES = tests/test_autodiff.c tests/testutil.h tests/gradcheck.h
tests_test_autodiff_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_autodiff_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_autodiff
TESTS += tests/autodiff_on_testmem.sh
EXTRA_DIST += tests/autodiff_on_testmem.sh

# A NULL tensor argument names the public function and the argument.
check_PROGRAMS += tests/test_null_args
tests_test_null_args_SOURCES = tests/test_null_args.c tests/testutil.h
tests_test_null_args_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_null_args_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_null_args

# Higher derivatives: recorded sweeps differentiated again, eager and
# accelerated (also on testmem, and on opencl in opencl.mk).
check_PROGRAMS += tests/test_higher
tests_test_higher_SOURCES = tests/test_higher.c tests/testutil.h tests/gradcheck.h
tests_test_higher_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_higher_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_higher tests/higher_on_testmem.sh

EXTRA_DIST += tests/higher_on_testmem.sh

# dla_jacobian, dla_divergence, dla_laplacian (also on testmem, and on
# opencl in opencl.mk).
check_PROGRAMS += tests/test_derivatives
tests_test_derivatives_SOURCES = tests/test_derivatives.c tests/testutil.h tests/gradcheck.h tests/tu_assert.h
tests_test_derivatives_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_derivatives_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_derivatives tests/derivatives_on_testmem.sh
EXTRA_DIST += tests/derivatives_on_testmem.sh

# dla_attention: multi-head attention against a host reference (also on
# testmem, and on opencl in opencl.mk).
check_PROGRAMS += tests/test_attention
tests_test_attention_SOURCES = tests/test_attention.c tests/testutil.h tests/gradcheck.h tests/tu_assert.h
tests_test_attention_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_attention_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_attention tests/attention_on_testmem.sh
EXTRA_DIST += tests/attention_on_testmem.sh

# dla_resize: hand-worked values of every method, transform and rounding
# mode, gradients, replays, errors (also on testmem, and on opencl in
# opencl.mk).
check_PROGRAMS += tests/test_resize
tests_test_resize_SOURCES = tests/test_resize.c tests/testutil.h tests/gradcheck.h tests/tu_assert.h
tests_test_resize_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_resize_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_resize tests/resize_on_testmem.sh
EXTRA_DIST += tests/resize_on_testmem.sh

# dla_accelerate: the trace cache, replay, RNG slots, checks (testmem loaded
# as a second device by the test itself).
check_PROGRAMS += tests/test_accel
tests_test_accel_SOURCES = tests/test_accel.c tests/testutil.h
tests_test_accel_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_accel_LDADD = $(DLA_TEST_LIBS) -lpthread
TESTS += tests/test_accel

check_PROGRAMS += tests/test_ode45
tests_test_ode45_SOURCES = tests/test_ode45.c tests/testutil.h tests/gradcheck.h tests/tu_assert.h
tests_test_ode45_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_ode45_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_ode45 tests/ode45_on_testmem.sh
EXTRA_DIST += tests/ode45_on_testmem.sh

# tests/opencl.mk - the opencl plugin in make check (when configure built
# it): the conformance suite against the cpu plugin (which replaced the
# kernel suites' runs on opencl), the tensor, autodiff and higher-derivative suites with
# DLACCEL_DEVICE=opencl, traces replayed
# across devices, the examples, and the plugin without any OpenCL
# platform. The opencl manifest is in its own folder (plugins/opencl), so
# every script here puts it on the path; the rest of make check runs on
# the default devices as before. Without an OpenCL device at test time
# (no ICD installed) the scripts skip and say why.
EXTRA_DIST += tests/conformance.sh tests/opencl_env.sh tests/tensor_on_opencl.sh \
	tests/autodiff_on_opencl.sh tests/higher_on_opencl.sh tests/derivatives_on_opencl.sh \
	tests/attention_on_opencl.sh tests/resize_on_opencl.sh tests/opencl_examples.sh \
	tests/opencl_without_platform.sh tests/test_opencl.c tests/test_opencl_plan.c \
	tests/net_mask_on_opencl.sh

# The conformance suite of every plugin in the build tree (cpu, testmem,
# opencl when built) through `dlaccel check-plugin --tap`.
TESTS += tests/conformance.sh
dla_conformance_log = tests/conformance.sh.log
$(dla_conformance_log): tools/dlaccel tests/plugins.d/testmem.json

if HAVE_OPENCL
check_PROGRAMS += tests/test_opencl
tests_test_opencl_SOURCES = tests/test_opencl.c tests/testutil.h
tests_test_opencl_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_opencl_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/test_opencl_plan
tests_test_opencl_plan_SOURCES = tests/test_opencl_plan.c tests/testutil.h
tests_test_opencl_plan_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_opencl_plan_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/test_opencl_differential
tests_test_opencl_differential_SOURCES = tests/test_opencl_differential.c tests/testutil.h
tests_test_opencl_differential_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_opencl_differential_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/opencl_test.sh tests/opencl_plan_test.sh tests/tensor_on_opencl.sh tests/autodiff_on_opencl.sh \
	tests/higher_on_opencl.sh tests/derivatives_on_opencl.sh tests/attention_on_opencl.sh \
	tests/resize_on_opencl.sh tests/opencl_examples.sh tests/opencl_without_platform.sh
EXTRA_DIST += tests/opencl_test.sh tests/opencl_plan_test.sh
TESTS += tests/opencl_differential.sh
TESTS += tests/ode45_on_opencl.sh tests/lbfgs_on_opencl.sh tests/net_mask_on_opencl.sh tests/ctc_on_opencl.sh
endif
EXTRA_DIST += tests/ode45_on_opencl.sh tests/lbfgs_on_opencl.sh tests/ctc_on_opencl.sh \
	tests/opencl_differential.sh tests/test_opencl_differential.c

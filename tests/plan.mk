# tests/plan.mk - the replay planner of dla_accelerate (planned replays
# against eager ones, memory plan, fusion, devices) and the conformance of
# the ABI 1.2 fused kernel.
check_PROGRAMS += tests/test_plan tests/test_fused_kernels
tests_test_plan_SOURCES = tests/test_plan.c tests/testutil.h
tests_test_plan_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_plan_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm -lpthread
TESTS += tests/test_plan
EXTRA_DIST += tests/plan_on_opencl.sh tests/plan_on_testmem.sh
TESTS += tests/plan_on_testmem.sh
if HAVE_OPENCL
TESTS += tests/plan_on_opencl.sh
endif
tests_test_fused_kernels_SOURCES = tests/test_fused_kernels.c
tests_test_fused_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(OPENMP_CFLAGS)
tests_test_fused_kernels_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_fused_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_fused_kernels

# The observers of core/hooks.h on their own (hooks.c compiled in), and the
# static check that the runtime's lower files announce through them instead
# of calling the planner or the recorder.
check_PROGRAMS += tests/test_hooks
tests_test_hooks_SOURCES = tests/test_hooks.c core/hooks.c core/hooks.h
tests_test_hooks_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -pthread
tests_test_hooks_LDADD = $(CMOCKA_LIBS) -lpthread
TESTS += tests/test_hooks tests/core_arrows.sh
EXTRA_DIST += tests/core_arrows.sh

# Random functions of three dims (reductions, views, results that are
# inputs or views, two shapes in one cache, results kept across calls),
# planned against eager; plan_variants.sh runs it under each DLACCEL_PLAN.
check_PROGRAMS += tests/test_plan_differential
tests_test_plan_differential_SOURCES = tests/test_plan_differential.c tests/testutil.h
tests_test_plan_differential_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_plan_differential_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_plan_differential tests/plan_variants.sh
EXTRA_DIST += tests/plan_variants.sh

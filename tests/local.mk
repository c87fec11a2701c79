# tests/ - cmocka binaries, one per module, speaking TAP. Each area keeps its
# own fragment so the lists stay short.
include tests/tensor.mk
include tests/kernels.mk
include tests/registry.mk
include tests/conv.mk
include tests/nnops.mk
include tests/loss.mk
include tests/plan.mk
include tests/trace.mk
include tests/data.mk
include tests/datastore.mk
include tests/generic_datastore.mk
include tests/net.mk
include tests/custom_layer.mk
include tests/train.mk
include tests/opencl.mk
include tests/cuda.mk
include tests/hardening.mk
include tests/spmd.mk
include tests/kit.mk

# dlaccel/plugin_ops.h against the cpu plugin's expressions: api/ alone on
# the include path (an installed kit header), no contraction.
check_PROGRAMS += tests/test_plugin_ops
tests_test_plugin_ops_SOURCES = tests/test_plugin_ops.c
tests_test_plugin_ops_CPPFLAGS = -I$(top_srcdir)/api
tests_test_plugin_ops_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -ffp-contract=off
tests_test_plugin_ops_LDADD = $(CMOCKA_LIBS) -lm
TESTS += tests/test_plugin_ops

# The tests' float comparisons fail on a NaN (a static check of their
# sources: no assert_float_equal, no worst kept with fmax).
TESTS += tests/nan_blind_checks.sh tests/alloc_hook_checks.sh
EXTRA_DIST += tests/nan_blind_checks.sh tests/alloc_hook_checks.sh

# The same step many times holds a steady count of live blocks (a custom
# training loop, dla_accelerate's hits, misses and evictions, forward and
# predict, carried LSTM state, failing calls, mini-batch queues in the
# background, trainnet over many epochs, dla_ode45, threads that end).
check_PROGRAMS += tests/test_steady_memory
tests_test_steady_memory_SOURCES = tests/test_steady_memory.c tests/testutil.h
tests_test_steady_memory_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_steady_memory_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_steady_memory

# The docs as a user reads them: the C examples marked in README.md and
# docs/*.md compile with -Wall -Werror and run, printing what the text
# says; every relative link and #anchor there resolves.
TESTS += tests/doc_examples.sh
EXTRA_DIST += tests/doc_examples.sh

# tests/kernels.mk - the cpu plugin's kernels against naive loops
# (test_kernels; every other plugin is checked against the cpu plugin by
# dlaccel check-plugin, tests/conformance.sh), and the test plugins and
# tests of check-plugin and the core's dense retry.
check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(OPENMP_CFLAGS)
tests_test_kernels_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm -ldl

# The cpuwrap test plugins (tests/plugins/cpuwrap.c): the cpu plugin
# wrapped to decline non-dense views (denseonly: strided_copy excepted;
# declineall: strided_copy too) or to read index views as dense
# (badindex). Built for make check only; each manifest lives in a folder
# of its own (tests/cpuwrap.d/NAME), which only the tests that use it put
# on the search path.
DLA_CPUWRAP_CFLAGS = $(AM_CFLAGS) \
	-DCPU_PLUGIN_LIB='"$(abs_builddir)/plugins/cpu/.libs/libdlaccel-cpu.so"'
DLA_CPUWRAP_LDFLAGS = -module -avoid-version -shared -no-undefined -rpath /nowhere
check_LTLIBRARIES += tests/plugins/libdlaccel-denseonly.la \
	tests/plugins/libdlaccel-declineall.la tests/plugins/libdlaccel-badindex.la
tests_plugins_libdlaccel_denseonly_la_SOURCES = tests/plugins/cpuwrap.c tests/plugins/cpu_inner.h
tests_plugins_libdlaccel_denseonly_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_DENSEONLY
tests_plugins_libdlaccel_denseonly_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_denseonly_la_LIBADD = -ldl
tests_plugins_libdlaccel_declineall_la_SOURCES = tests/plugins/cpuwrap.c tests/plugins/cpu_inner.h
tests_plugins_libdlaccel_declineall_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_DECLINEALL
tests_plugins_libdlaccel_declineall_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_declineall_la_LIBADD = -ldl
tests_plugins_libdlaccel_badindex_la_SOURCES = tests/plugins/cpuwrap.c tests/plugins/cpu_inner.h
tests_plugins_libdlaccel_badindex_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_BADINDEX
tests_plugins_libdlaccel_badindex_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
check_LTLIBRARIES += tests/plugins/libdlaccel-zerosign.la
tests_plugins_libdlaccel_zerosign_la_SOURCES = tests/plugins/cpuwrap.c tests/plugins/cpu_inner.h
tests_plugins_libdlaccel_zerosign_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_ZEROSIGN
tests_plugins_libdlaccel_zerosign_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_zerosign_la_LIBADD = -ldl
# The hello plugin with a unary kernel on the plugin kit, and a bug in the
# tails of sigmoid that check-plugin must find (tests/plugins/kitunary.c).
check_LTLIBRARIES += tests/plugins/kitunary.la
tests_plugins_kitunary_la_SOURCES = tests/plugins/kitunary.c
tests_plugins_kitunary_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_kitunary_la_LIBADD = -lm
tests_plugins_libdlaccel_badindex_la_LIBADD = -ldl
EXTRA_DIST += tests/plugins/cpuwrap.json.in

DLA_CPUWRAP_MANIFESTS = tests/cpuwrap.d/denseonly/denseonly.json \
	tests/cpuwrap.d/declineall/declineall.json tests/cpuwrap.d/badindex/badindex.json \
	tests/cpuwrap.d/zerosign/zerosign.json
$(DLA_CPUWRAP_MANIFESTS): $(top_srcdir)/tests/plugins/cpuwrap.json.in Makefile
	$(AM_V_GEN)name=`basename $@ .json` && $(MKDIR_P) tests/cpuwrap.d/$$name && \
	$(SED) -e "s|@NAME@|$$name|g" \
	-e "s|@LIBRARY_PATH@|$(abs_builddir)/tests/plugins/.libs/libdlaccel-$$name.so|" $< > $@
check_DATA += $(DLA_CPUWRAP_MANIFESTS)
CLEANFILES += $(DLA_CPUWRAP_MANIFESTS)

# The core's dense retry of declined calls, on denseonly.
check_PROGRAMS += tests/test_dense_retry
tests_test_dense_retry_SOURCES = tests/test_dense_retry.c
tests_test_dense_retry_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_dense_retry_LDADD = libdlaccel.la $(CMOCKA_LIBS)
TESTS += tests/test_dense_retry

# check-plugin fails the broken wrappers (declineall, badindex) naming the
# kernel and case, and passes denseonly; denseonly, which passes
# check-plugin (tests/conformance.sh), passes the tensor, autodiff and
# accelerate suites as the default device.
TESTS += tests/check_plugin_broken.sh tests/tensor_on_denseonly.sh \
	tests/autodiff_on_denseonly.sh tests/accel_on_denseonly.sh
EXTRA_DIST += tests/check_plugin_broken.sh tests/tensor_on_denseonly.sh \
	tests/autodiff_on_denseonly.sh tests/accel_on_denseonly.sh
tests/check_plugin_broken.sh.log tests/conformance.sh.log: $(DLA_CPUWRAP_MANIFESTS)

# The accelerate suite on testmem and on opencl (when built), as the
# tensor and autodiff suites already run there: with denseonly above, the
# suites run on every plugin that passes check-plugin. Any other plugin
# runs them the same way: its manifest's folder first on
# DLACCEL_PLUGIN_PATH, its name in DLACCEL_DEVICE.
TESTS += tests/accel_on_testmem.sh
EXTRA_DIST += tests/accel_on_testmem.sh tests/accel_on_opencl.sh
if HAVE_OPENCL
TESTS += tests/accel_on_opencl.sh
endif

# graphwrap (tests/plugins/graphwrap.c): the cpu plugin with ABI 1.5's
# plan_replay served as the cuda plugin serves it, a recording of a plan's
# third run standing in for the CUDA graph, so that the host's promise
# (same calls, memory at the same places in each run's regions) and the
# runs the device makes itself (*ran = 1) are tested without a GPU. The
# accelerate suite checks every replay against eager, bit for bit, and
# that the device ran some itself, and once more with fill not native,
# whose memory calls end recordings part way (accel_on_graphwrap_flush.sh);
# the training suite and test_plan's random graphs (plan_on_graphwrap.sh)
# run on it too, and it passes check-plugin
# (tests/conformance.sh).
check_LTLIBRARIES += tests/plugins/libdlaccel-graphwrap.la
tests_plugins_libdlaccel_graphwrap_la_SOURCES = tests/plugins/graphwrap.c tests/plugins/cpu_inner.h
tests_plugins_libdlaccel_graphwrap_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS)
tests_plugins_libdlaccel_graphwrap_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_graphwrap_la_LIBADD = -ldl -lpthread
EXTRA_DIST += tests/plugins/graphwrap.json.in
DLA_GRAPHWRAP_MANIFEST = tests/cpuwrap.d/graphwrap/graphwrap.json
$(DLA_GRAPHWRAP_MANIFEST): $(top_srcdir)/tests/plugins/graphwrap.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/cpuwrap.d/graphwrap && \
	$(SED) -e "s|@LIBRARY_PATH@|$(abs_builddir)/tests/plugins/.libs/libdlaccel-graphwrap.so|" \
	$< > $@
check_DATA += $(DLA_GRAPHWRAP_MANIFEST)
CLEANFILES += $(DLA_GRAPHWRAP_MANIFEST)
TESTS += tests/accel_on_graphwrap.sh tests/accel_on_graphwrap_flush.sh tests/train_on_graphwrap.sh \
	tests/plan_on_graphwrap.sh tests/plan_profile_on_graphwrap.sh
EXTRA_DIST += tests/accel_on_graphwrap.sh tests/accel_on_graphwrap_flush.sh \
	tests/train_on_graphwrap.sh tests/plan_on_graphwrap.sh tests/plan_profile_on_graphwrap.sh
tests/conformance.sh.log tests/accel_on_graphwrap.sh.log tests/accel_on_graphwrap_flush.sh.log \
	tests/train_on_graphwrap.sh.log tests/plan_on_graphwrap.sh.log \
	tests/plan_profile_on_graphwrap.sh.log: \
	$(DLA_GRAPHWRAP_MANIFEST)

# The cpu plugin's cache of freed blocks: its policy decision by decision
# and the readers of the memory available, compiled in from the plugin's
# sources (no plugin, no timing).
check_PROGRAMS += tests/test_block_cache
TESTS += tests/test_block_cache
tests_test_block_cache_SOURCES = tests/test_block_cache.c \
	plugins/cpu/block_cache.c plugins/cpu/mem_avail.c
tests_test_block_cache_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_block_cache_LDADD = $(CMOCKA_LIBS)

# The cpu plugin's sharing of a small kernel's items with helper threads
# (plugins/cpu/share.c), compiled in: every item once, any team, nested,
# inside an OpenMP region, two host threads at once.
check_PROGRAMS += tests/test_cpu_share
TESTS += tests/test_cpu_share
tests_test_cpu_share_SOURCES = tests/test_cpu_share.c plugins/cpu/share.c plugins/cpu/share.h
tests_test_cpu_share_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(OPENMP_CFLAGS)
tests_test_cpu_share_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_cpu_share_LDADD = $(CMOCKA_LIBS) -lpthread

# The cpu plugin's exp, log, tanh, sigmoid and erf through glibc's vector
# functions (plugins/cpu/vmath.c): within 4 ulp of the scalar ones, the
# same bits wherever an element sits; and, with DLACCEL_CPU_VMATH=off
# (tests/cpu_vmath_off.sh), the scalar functions' bits.
check_PROGRAMS += tests/test_cpu_vmath
TESTS += tests/test_cpu_vmath tests/cpu_vmath_off.sh
EXTRA_DIST += tests/cpu_vmath_off.sh
tests_test_cpu_vmath_SOURCES = tests/test_cpu_vmath.c tests/testutil.h
tests_test_cpu_vmath_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) $(OPENMP_CFLAGS)
tests_test_cpu_vmath_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_cpu_vmath_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm

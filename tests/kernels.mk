# tests/kernels.mk - the kernel conformance suite, run against every device
# of every plugin that loads from $(DLACCEL_PLUGIN_PATH) (the build tree).
check_PROGRAMS += tests/test_kernels
TESTS += tests/test_kernels
tests_test_kernels_SOURCES = tests/test_kernels.c
tests_test_kernels_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_kernels_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm -ldl
TESTS += tests/kernels_on_testmem.sh
EXTRA_DIST += tests/kernels_on_testmem.sh

# The cpuwrap test plugins (tests/plugins/cpuwrap.c): the cpu plugin
# wrapped to decline non-dense views (denseonly: strided_copy excepted;
# declineall: strided_copy too) or to read index views as dense
# (badindex). Built for make check only; their manifests live in their own
# folder, which only the tests that use them put on the search path.
DLA_CPUWRAP_CFLAGS = $(AM_CFLAGS) \
	-DCPU_PLUGIN_LIB='"$(abs_builddir)/plugins/cpu/.libs/libdlaccel-cpu.so"'
DLA_CPUWRAP_LDFLAGS = -module -avoid-version -shared -no-undefined -rpath /nowhere
check_LTLIBRARIES += tests/plugins/libdlaccel-denseonly.la \
	tests/plugins/libdlaccel-declineall.la tests/plugins/libdlaccel-badindex.la
tests_plugins_libdlaccel_denseonly_la_SOURCES = tests/plugins/cpuwrap.c
tests_plugins_libdlaccel_denseonly_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_DENSEONLY
tests_plugins_libdlaccel_denseonly_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_denseonly_la_LIBADD = -ldl
tests_plugins_libdlaccel_declineall_la_SOURCES = tests/plugins/cpuwrap.c
tests_plugins_libdlaccel_declineall_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_DECLINEALL
tests_plugins_libdlaccel_declineall_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_declineall_la_LIBADD = -ldl
tests_plugins_libdlaccel_badindex_la_SOURCES = tests/plugins/cpuwrap.c
tests_plugins_libdlaccel_badindex_la_CFLAGS = $(DLA_CPUWRAP_CFLAGS) -DCPUWRAP_MODE=MODE_BADINDEX
tests_plugins_libdlaccel_badindex_la_LDFLAGS = $(DLA_CPUWRAP_LDFLAGS)
tests_plugins_libdlaccel_badindex_la_LIBADD = -ldl
EXTRA_DIST += tests/plugins/cpuwrap.json.in

DLA_CPUWRAP_MANIFESTS = tests/plugins.cpuwrap.d/denseonly.json \
	tests/plugins.cpuwrap.d/declineall.json tests/plugins.cpuwrap.d/badindex.json
$(DLA_CPUWRAP_MANIFESTS): $(top_srcdir)/tests/plugins/cpuwrap.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/plugins.cpuwrap.d && name=`basename $@ .json` && \
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

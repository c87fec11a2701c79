# tests/registry.mk - plugin discovery, loading and selection, and the
# `dlaccel devices` tool.
#
# The registry test compiles the registry with its own installed folder
# (DLACCEL_PLUGINS_DIR below) so it can test the precedence of
# DLACCEL_PLUGIN_PATH without touching a real installation, and links the
# core files it needs directly (it calls dla__registry_reset, which the
# shared library keeps hidden).
#
# The fake plugins are libtool modules built for make check only, never
# installed; each is broken in one way the registry must survive.
DLA_FAKE_PLUGIN_LDFLAGS = -module -avoid-version -shared -no-undefined -rpath /nowhere
check_LTLIBRARIES += \
	tests/plugins/fake_good.la \
	tests/plugins/fake_nosym.la \
	tests/plugins/fake_abi.la \
	tests/plugins/fake_initfail.la \
	tests/plugins/fake_nodevice.la \
	tests/plugins/fake_short.la \
	tests/plugins/fake_crash.la
tests_plugins_fake_good_la_SOURCES = tests/plugins/fake_good.c
tests_plugins_fake_good_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_nosym_la_SOURCES = tests/plugins/fake_nosym.c
tests_plugins_fake_nosym_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_abi_la_SOURCES = tests/plugins/fake_abi.c
tests_plugins_fake_abi_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_initfail_la_SOURCES = tests/plugins/fake_initfail.c
tests_plugins_fake_initfail_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_nodevice_la_SOURCES = tests/plugins/fake_nodevice.c
tests_plugins_fake_nodevice_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_short_la_SOURCES = tests/plugins/fake_short.c
tests_plugins_fake_short_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_fake_crash_la_SOURCES = tests/plugins/fake_crash.c
tests_plugins_fake_crash_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)

check_PROGRAMS += tests/test_registry
tests_test_registry_SOURCES = \
	tests/test_registry.c \
	core/registry.c core/registry.h core/device.h \
	core/omp_defaults.c core/omp_defaults.h \
	core/blas_defaults.c core/blas_defaults.h core/openblas_core.h \
	core/breadcrumb.c core/breadcrumb.h \
	core/manifest.c core/manifest.h core/json_read.c core/json_read.h \
	core/alloc.c core/alloc.h \
	core/handle.c core/handle.h \
	core/error.c core/error.h \
	core/log.c core/log.h
tests_test_registry_CPPFLAGS = $(AM_CPPFLAGS) -DDLA_BUILDING_LIBRARY \
	-DDLACCEL_PLUGINS_DIR='"$(abs_builddir)/tests/registry-installed.d"' \
	-DDLA_TEST_BUILDDIR_DEFAULT='"$(abs_builddir)"' $(JANSSON_CFLAGS)
tests_test_registry_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_registry_LDADD = $(JANSSON_LIBS) $(CMOCKA_LIBS) $(LIBS)
# The OpenMP runtime linked in, as libdlaccel.so has it: otherwise the cpu
# plugin brings libgomp and unloads it with itself at each reset, and
# libgomp's start-up allocation is reported as a leak under LeakSanitizer.
tests_test_registry_LDFLAGS = $(OPENMP_CFLAGS)

TESTS += tests/test_registry tests/tool_devices.sh
EXTRA_DIST += tests/tool_devices.sh
# Which plugins check-plugin compares: a symlinked manifest's library taken
# from the link's folder, as discovery does; a plugin named cpu said to be
# its own oracle.
TESTS += tests/check_plugin_paths.sh
EXTRA_DIST += tests/check_plugin_paths.sh
# plugin.priority_by_type: the default device by device type (testmem).
TESTS += tests/device_priority.sh
EXTRA_DIST += tests/device_priority.sh

# The DLACCEL_* values checked and named, OMP_NUM_THREADS kept sane: a
# small program run under bad values, its stderr read.
check_PROGRAMS += tests/env_probe
tests_env_probe_SOURCES = tests/env_probe.c
tests_env_probe_LDADD = libdlaccel.la
# The same probe in a program that links OpenMP itself: the runtime is
# loaded before the library can choose its wait policy.
check_PROGRAMS += tests/env_probe_openmp
tests_env_probe_openmp_SOURCES = tests/env_probe.c
tests_env_probe_openmp_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
tests_env_probe_openmp_LDFLAGS = $(OPENMP_CFLAGS)
tests_env_probe_openmp_LDADD = libdlaccel.la
# And one that links OpenBLAS: its kernels are chosen before the library
# can choose them.
check_PROGRAMS += tests/env_probe_openblas
tests_env_probe_openblas_SOURCES = tests/env_probe.c
tests_env_probe_openblas_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS) -DPROBE_LINKS_OPENBLAS
tests_env_probe_openblas_LDADD = libdlaccel.la $(OPENBLAS_LIBS)
TESTS += tests/tool_env.sh tests/tool_clean_output.sh tests/share_cores.sh tests/example_args.sh

# A plugin that crashes in its init is named at the next start.
TESTS += tests/tool_plugin_crash.sh
EXTRA_DIST += tests/tool_env.sh tests/tool_clean_output.sh tests/share_cores.sh tests/example_args.sh tests/tool_plugin_crash.sh

# The rows of DLA_KERNEL_LIST against the core's lookups and the kernel
# table of docs/plugins.md.
check_PROGRAMS += tests/test_kernel_list
TESTS += tests/test_kernel_list
tests_test_kernel_list_SOURCES = tests/test_kernel_list.c core/kernels.h
tests_test_kernel_list_CPPFLAGS = $(AM_CPPFLAGS) -DDLA_TEST_SRCDIR='"$(abs_top_srcdir)"'
tests_test_kernel_list_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_kernel_list_LDADD = $(CMOCKA_LIBS)

# tests/spmd.mk - the collectives (dlaccel/parallel.h): tests/spmd.sh runs
# tests/test_spmd under mpirun with 1 to 4 ranks, over the default
# transports and over TCP, with memory the host cannot address (testmem),
# with a rank that hangs and one that dies, and once without mpirun (a
# world of one). Without MPI in the build only the world of one runs.
check_PROGRAMS += tests/test_spmd
tests_test_spmd_SOURCES = tests/test_spmd.c
tests_test_spmd_LDADD = libdlaccel.la -lm
TESTS += tests/spmd.sh tests/spmd_device.sh
EXTRA_DIST += tests/spmd.sh tests/spmd_device.sh
dla_spmd_log = tests/spmd.sh.log
dla_spmd_deps = tests/plugins.d/testmem.json
if HAVE_MPI
dla_spmd_deps += plugins/mpi/libdlaccel-mpi.la
endif
# A rank stopped inside a blocking transfer (the watchdog's case): an
# interposer of MPI_Allreduce, preloaded into the ranks by tests/spmd.sh.
if HAVE_MPI
check_LTLIBRARIES += tests/plugins/spmd_stall.la
tests_plugins_spmd_stall_la_SOURCES = tests/plugins/spmd_stall.c
tests_plugins_spmd_stall_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
tests_plugins_spmd_stall_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_spmd_stall_la_LIBADD = $(MPI_LIBS)
dla_spmd_deps += tests/plugins/spmd_stall.la
endif
EXTRA_DIST += tests/plugins/spmd_stall.c
# The MPI plugin built as ABI 1.0 (no non-blocking reductions): the core
# must fall back to reducing at once (tests/spmd.sh).
if HAVE_MPI
check_LTLIBRARIES += tests/plugins/mpi_abi10.la
tests_plugins_mpi_abi10_la_SOURCES = plugins/mpi/mpi.c
tests_plugins_mpi_abi10_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DDLA_MPI_ABI_MINOR=0
tests_plugins_mpi_abi10_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_mpi_abi10_la_LIBADD = $(MPI_LIBS)
dla_spmd_deps += tests/plugins/mpi_abi10.la
endif
# The MPI plugin built to move at most 1 KiB a call: the core's buffers
# then go as many parts (what a buffer over 2 GiB takes with the real
# limit of 1 GiB), and every collective must still give the same results.
if HAVE_MPI
check_LTLIBRARIES += tests/plugins/mpi_parts.la
tests_plugins_mpi_parts_la_SOURCES = plugins/mpi/mpi.c
tests_plugins_mpi_parts_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DDLA_MPI_PART_BYTES=1024
tests_plugins_mpi_parts_la_LDFLAGS = $(DLA_FAKE_PLUGIN_LDFLAGS)
tests_plugins_mpi_parts_la_LIBADD = $(MPI_LIBS)
dla_spmd_deps += tests/plugins/mpi_parts.la
endif
# testmem with collectives of its own over MPI (ABI 1.6 coll_*): the core's
# device-collective path (core/spmd_device.c), as NCCL would take it on
# GPUs. Its manifest has a folder of its own (tests/plugins.coll.d), so
# only the tests that name it load an MPI-linked device plugin.
EXTRA_DIST += tests/plugins/testcoll.json.in tests/plugins/testmem_coll.h
if HAVE_MPI
check_LTLIBRARIES += tests/plugins/libdlaccel-testcoll.la
tests_plugins_libdlaccel_testcoll_la_SOURCES = tests/plugins/testmem.c tests/plugins/testmem_coll.c \
	tests/plugins/testmem_coll.h
tests_plugins_libdlaccel_testcoll_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DDLA_TESTMEM_COLL
tests_plugins_libdlaccel_testcoll_la_LDFLAGS = -module -avoid-version -shared -no-undefined -rpath /nowhere
tests_plugins_libdlaccel_testcoll_la_LIBADD = $(MPI_LIBS) -lpthread
tests/plugins.coll.d/testcoll.json: $(top_srcdir)/tests/plugins/testcoll.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tests/plugins.coll.d && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/tests/plugins/.libs/libdlaccel-testcoll.so|' $< > $@
CLEANFILES += tests/plugins.coll.d/testcoll.json
dla_spmd_deps += tests/plugins/libdlaccel-testcoll.la tests/plugins.coll.d/testcoll.json
endif
$(dla_spmd_log) tests/spmd_device.sh.log: $(dla_spmd_deps)

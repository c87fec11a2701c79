# plugins/mpi - the communicator plugin on MPI (dlaccel/comm_plugin.h).
# Built when configure finds MPI (--enable-mpi / --disable-mpi). Only this
# library links MPI; libdlaccel loads it on first use, in a process started
# by mpirun (docs/parallel.md, "Collectives").
#
# Its manifests are communicator manifests, which the device registry must
# not see: the build tree's goes to plugins.d/comm/mpi.json (the "comm"
# subfolder of the folder the tests name in DLACCEL_PLUGIN_PATH), the
# installed one to $(pluginsdir)/comm/.
EXTRA_DIST += plugins/mpi/manifest.json.in

if HAVE_MPI
pkglib_LTLIBRARIES += plugins/mpi/libdlaccel-mpi.la
plugins_mpi_libdlaccel_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
plugins_mpi_libdlaccel_mpi_la_CFLAGS = $(AM_CFLAGS) -O2
plugins_mpi_libdlaccel_mpi_la_LDFLAGS = -module -avoid-version -shared -no-undefined
plugins_mpi_libdlaccel_mpi_la_LIBADD = $(MPI_LIBS)
plugins_mpi_libdlaccel_mpi_la_SOURCES = plugins/mpi/mpi.c

plugins.d/comm/mpi.json: $(top_srcdir)/plugins/mpi/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins.d/comm && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/plugins/mpi/.libs/libdlaccel-mpi.so|' $< > $@
plugins/mpi/install/mpi.json: $(top_srcdir)/plugins/mpi/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/mpi/install && \
	$(SED) -e 's|@LIBRARY_PATH@|$(pkglibdir)/libdlaccel-mpi.so|' $< > $@
# Made with the library, so a plain `make` leaves a usable build tree.
EXTRA_plugins_mpi_libdlaccel_mpi_la_DEPENDENCIES = plugins.d/comm/mpi.json
dla_mpi_manifestdir = $(pluginsdir)/comm
dla_mpi_manifest_DATA = plugins/mpi/install/mpi.json
CLEANFILES += plugins.d/comm/mpi.json plugins/mpi/install/mpi.json
endif

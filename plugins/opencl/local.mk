# plugins/opencl - the OpenCL backend: own kernels compiled at run time on
# every device the ICD loader finds. Built when configure finds OpenCL.
#
# Its manifests are made here rather than through DLA_PLUGINS: the build
# tree's goes to plugins/opencl/opencl.json (its own folder, like
# tests/plugins.d), so the suites that run on the default search path
# (plugins.d) keep their devices, and the tests that want OpenCL add the
# folder (tests/opencl.mk). The installed one goes to $(pluginsdir) beside
# cpu's; its CPU devices (PoCL) rank 50, below cpu's 100, its GPUs 150
# (priority_by_type; docs/plugins.md, "The opencl plugin").
DLA_OCL_CL = \
	plugins/opencl/cl/common.cl \
	plugins/opencl/cl/ops.cl \
	plugins/opencl/cl/copy.cl \
	plugins/opencl/cl/elementwise.cl \
	plugins/opencl/cl/fused.cl \
	plugins/opencl/cl/fused_reduce.cl \
	plugins/opencl/cl/reduce.cl \
	plugins/opencl/cl/gemm.cl \
	plugins/opencl/cl/conv.cl \
	plugins/opencl/cl/pool.cl \
	plugins/opencl/cl/index.cl \
	plugins/opencl/cl/random.cl
# Shared with the host: the random stream's definition, C and OpenCL C.
DLA_OCL_SHARED = api/dlaccel/plugin_philox.h
EXTRA_DIST += $(DLA_OCL_CL) plugins/opencl/manifest.json.in

if HAVE_OPENCL
pkglib_LTLIBRARIES += plugins/opencl/libdlaccel-opencl.la
plugins_opencl_libdlaccel_opencl_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENCL_CFLAGS)
plugins_opencl_libdlaccel_opencl_la_CFLAGS = $(AM_CFLAGS) -O2
plugins_opencl_libdlaccel_opencl_la_LDFLAGS = -module -avoid-version -shared -no-undefined
plugins_opencl_libdlaccel_opencl_la_LIBADD = $(OPENCL_LIBS) -lpthread -ldl
plugins_opencl_libdlaccel_opencl_la_SOURCES = \
	plugins/opencl/ocl.h \
	plugins/opencl/plugin.c \
	plugins/opencl/program.c \
	plugins/opencl/check.c \
	plugins/opencl/memory.c \
	plugins/opencl/copy.c \
	plugins/opencl/elementwise.c \
	plugins/opencl/fused.c \
	plugins/opencl/fused_reduce.c \
	plugins/opencl/reduce.c \
	plugins/opencl/gemm.c \
	plugins/opencl/clblast.c \
	plugins/opencl/conv.c \
	plugins/opencl/pool.c \
	plugins/opencl/index.c \
	plugins/opencl/random.c \
	plugins/opencl/plan.c
nodist_plugins_opencl_libdlaccel_opencl_la_SOURCES = plugins/opencl/cl_sources.c
CLEANFILES += plugins/opencl/cl_sources.c

# Each .cl file (and each shared header) becomes a C string
# dla__ocl_src_<name> (program.c builds programs from them): backslashes
# and quotes escaped, a "\n" per line.
plugins/opencl/cl_sources.c: $(DLA_OCL_CL:%=$(srcdir)/%) $(DLA_OCL_SHARED:%=$(srcdir)/%) \
		$(srcdir)/plugins/opencl/local.mk
	$(AM_V_GEN)$(MKDIR_P) plugins/opencl && { \
	  echo '/* Made from the files of plugins/opencl/cl by plugins/opencl/local.mk; do not edit. */'; \
	  for f in $(DLA_OCL_CL:%=$(srcdir)/%) $(DLA_OCL_SHARED:%=$(srcdir)/%); do \
	    n=`basename $$f | $(SED) -e 's/\.[a-z]*$$//'`; \
	    echo "const char dla__ocl_src_$$n[] ="; \
	    $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $$f; \
	    echo ';'; \
	  done; } > $@-t && mv $@-t $@

# The build tree's manifest, in the library's folder.
plugins/opencl/opencl.json: $(top_srcdir)/plugins/opencl/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/opencl && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/plugins/opencl/.libs/libdlaccel-opencl.so|' \
	  $< > $@
# The installed manifest, pointing at $(pkglibdir).
plugins/opencl/install/opencl.json: $(top_srcdir)/plugins/opencl/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/opencl/install && \
	$(SED) -e 's|@LIBRARY_PATH@|$(pkglibdir)/libdlaccel-opencl.so|' $< > $@
# Made with the library, so a plain `make` leaves a usable build tree.
EXTRA_plugins_opencl_libdlaccel_opencl_la_DEPENDENCIES = plugins/opencl/opencl.json
dla_opencl_manifestdir = $(pluginsdir)
dla_opencl_manifest_DATA = plugins/opencl/install/opencl.json
CLEANFILES += plugins/opencl/opencl.json plugins/opencl/install/opencl.json
endif

# plugins/cuda - the CUDA backend: cuBLAS for GEMM, cuDNN for convolution,
# own kernels (nvcc) for the rest, fused programs compiled with NVRTC, and
# planned replays as CUDA graphs. Built when configure finds the toolkit
# (--enable-cuda, configure.ac).
#
# The module links only the static CUDA runtime (libcudart_static.a, which
# opens libcuda.so.1 itself when first called): cuBLAS, cuDNN and NVRTC are
# opened with dlopen when a device is opened, so the plugin loads, and
# reports no device with the reason, on a machine without a driver
# (tests/cuda_without_driver.sh checks its NEEDED entries).
#
# Its manifests are made as the opencl plugin's are: the build tree's goes
# to plugins/cuda/cuda.json (its own folder, so the suites that run on the
# default search path keep their devices; the tests that want cuda add the
# folder), the installed one to $(pluginsdir) beside cpu's, where its
# priority (200, above cpu's 100) makes a GPU the default device.
DLA_CUDA_HDRS = \
	plugins/cuda/cu.h \
	plugins/cuda/fastdiv.h \
	plugins/cuda/kern.cuh \
	plugins/cuda/libs.h \
	plugins/cuda/copy_kern.h \
	plugins/cuda/elementwise_kern.h \
	plugins/cuda/random_kern.h \
	plugins/cuda/reduce_kern.h \
	plugins/cuda/index_kern.h \
	plugins/cuda/pool_kern.h \
	plugins/cuda/conv_kern.h \
	plugins/cuda/fused_kern.h \
	plugins/cuda/onekern_kern.h \
	plugins/cuda/reduce_dev.cuh \
	plugins/cuda/conv_engine.h
# Kernels built by nvcc, one libtool object each.
DLA_CUDA_CU = \
	plugins/cuda/copy_kernels.cu \
	plugins/cuda/elementwise_kernels.cu \
	plugins/cuda/random_kernels.cu \
	plugins/cuda/reduce_kernels.cu \
	plugins/cuda/index_kernels.cu \
	plugins/cuda/pool_kernels.cu \
	plugins/cuda/conv_kernels.cu \
	plugins/cuda/fused_kernels.cu \
	plugins/cuda/onekern_kernels.cu
# Headers the kernels include from api/ (the ABI, the kit, the shared
# arithmetic): a change rebuilds every .cu, as one to a header of
# plugins/cuda does.
DLA_CUDA_API_HDRS = \
	api/dlaccel/plugin.h \
	api/dlaccel/plugin_kit.h \
	api/dlaccel/plugin_kit_args.h \
	api/dlaccel/plugin_kit_geom.h \
	api/dlaccel/plugin_ops.h \
	api/dlaccel/plugin_philox.h
# Given to NVRTC as text (cuda_sources.c): what a compiled fused program
# includes.
DLA_CUDA_SHARED = api/dlaccel/plugin_ops.h api/dlaccel/plugin_philox.h
EXTRA_DIST += $(DLA_CUDA_CU) plugins/cuda/manifest.json.in

if HAVE_CUDA
pkglib_LTLIBRARIES += plugins/cuda/libdlaccel-cuda.la
# DLA_CUDA_LIBDIR: the toolkit's library folder, where libs.c looks for
# cuBLAS and cuDNN after the loader's search and $DLACCEL_CUDA_LIBDIR.
plugins_cuda_libdlaccel_cuda_la_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) \
	-DDLA_CUDA_LIBDIR='"$(CUDA_LIBDIR)"'
plugins_cuda_libdlaccel_cuda_la_CFLAGS = $(AM_CFLAGS) -O2
plugins_cuda_libdlaccel_cuda_la_LDFLAGS = -module -avoid-version -shared -no-undefined
# libtool's -no-undefined checks nothing on Linux: -z defs makes a symbol
# no library provides a link error rather than a dlopen failure (not with
# the sanitizers or fuzzers, whose runtime the program brings).
if !DLA_SANITIZED
if !DLA_FUZZERS
plugins_cuda_libdlaccel_cuda_la_LDFLAGS += -Wl,-z,defs
endif
endif
plugins_cuda_libdlaccel_cuda_la_SOURCES = \
	$(DLA_CUDA_HDRS) \
	plugins/cuda/plugin.c \
	plugins/cuda/memory.c \
	plugins/cuda/space.c \
	plugins/cuda/plan.c \
	plugins/cuda/onekern.c \
	plugins/cuda/onekern_source.c \
	plugins/cuda/segment.c \
	plugins/cuda/profile.c \
	plugins/cuda/libs.c \
	plugins/cuda/gemm.c \
	plugins/cuda/conv.c \
	plugins/cuda/conv_engine.c \
	plugins/cuda/copy.c \
	plugins/cuda/elementwise.c \
	plugins/cuda/random.c \
	plugins/cuda/reduce.c \
	plugins/cuda/index.c \
	plugins/cuda/pool.c \
	plugins/cuda/fused.c \
	plugins/cuda/fused_source.c \
	plugins/cuda/fused_reduce.c \
	plugins/cuda/nvrtc.c \
	plugins/cuda/coll.c
nodist_plugins_cuda_libdlaccel_cuda_la_SOURCES = plugins/cuda/cuda_sources.c
DLA_CUDA_LOS = $(DLA_CUDA_CU:.cu=.lo)
# The objects nvcc makes need the C++ runtime (exception personality,
# guarded statics): libstdc++, never a CUDA library.
plugins_cuda_libdlaccel_cuda_la_LIBADD = $(DLA_CUDA_LOS) \
	-L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -lrt -lpthread -ldl -lm
CLEANFILES += plugins/cuda/cuda_sources.c $(DLA_CUDA_LOS) $(DLA_CUDA_CU:plugins/cuda/%.cu=plugins/cuda/.libs/%.o)

# Each .cu becomes a libtool object by hand (libtool knows no nvcc): the
# position-independent object under .libs/ and the .lo text that names it,
# which libtool reads when it links the module. --fmad=false everywhere: a
# fused program must give the bits of its steps launched one by one, and
# the Philox header forbids contraction.
DLA_NVCC_FLAGS = -std=c++17 -O3 --fmad=false -Xcompiler -fPIC,-Wall,-Werror \
	$(NVCC_ARCH_FLAGS) $(NVCCFLAGS) -I$(top_srcdir)/api -I$(top_srcdir) -I$(top_builddir) \
	$(CUDA_CPPFLAGS)
dla_nvcc_verbose = $(dla_nvcc_verbose_@AM_V@)
dla_nvcc_verbose_ = $(dla_nvcc_verbose_@AM_DEFAULT_V@)
dla_nvcc_verbose_0 = @echo "  NVCC    " $@;
# Every header of the folder is a prerequisite (GNU make's wildcard: a
# header added or removed needs no edit here).
DLA_CUDA_CU_DEPS = $(wildcard $(srcdir)/plugins/cuda/*.h $(srcdir)/plugins/cuda/*.cuh) \
	$(DLA_CUDA_API_HDRS:%=$(srcdir)/%)
plugins/cuda/%.lo: $(srcdir)/plugins/cuda/%.cu $(DLA_CUDA_CU_DEPS)
	$(dla_nvcc_verbose)$(MKDIR_P) plugins/cuda/.libs && \
	$(NVCC) $(DLA_NVCC_FLAGS) -c $< -o plugins/cuda/.libs/$*.o && { \
	  echo "# $@ - a libtool object file"; \
	  echo "# Generated by libtool (GNU libtool) for nvcc by plugins/cuda/local.mk"; \
	  echo "#"; \
	  echo "# Please DO NOT delete this file!"; \
	  echo "# It is necessary for linking the library."; \
	  echo ""; \
	  echo "# Name of the PIC object."; \
	  echo "pic_object='.libs/$*.o'"; \
	  echo ""; \
	  echo "# Name of the non-PIC object"; \
	  echo "non_pic_object=none"; } > $@-t && mv $@-t $@

# The shared headers as C strings dla__cu_src_<name> (nvrtc.c gives them to
# NVRTC as headers): backslashes and quotes escaped, a "\n" per line.
plugins/cuda/cuda_sources.c: $(DLA_CUDA_SHARED:%=$(srcdir)/%) $(srcdir)/plugins/cuda/local.mk
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda && { \
	  echo '/* Made from api/dlaccel headers by plugins/cuda/local.mk; do not edit. */'; \
	  for f in $(DLA_CUDA_SHARED:%=$(srcdir)/%); do \
	    n=`basename $$f | $(SED) -e 's/\.[a-z]*$$//'`; \
	    echo "extern const char dla__cu_src_$$n[];"; \
	    echo "const char dla__cu_src_$$n[] ="; \
	    $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $$f; \
	    echo ';'; \
	  done; } > $@-t && mv $@-t $@

# The build tree's manifest, in the library's folder.
plugins/cuda/cuda.json: $(top_srcdir)/plugins/cuda/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda && \
	$(SED) -e 's|@LIBRARY_PATH@|$(abs_builddir)/plugins/cuda/.libs/libdlaccel-cuda.so|' \
	  $< > $@
# The installed manifest, pointing at $(pkglibdir).
plugins/cuda/install/cuda.json: $(top_srcdir)/plugins/cuda/manifest.json.in Makefile
	$(AM_V_GEN)$(MKDIR_P) plugins/cuda/install && \
	$(SED) -e 's|@LIBRARY_PATH@|$(pkglibdir)/libdlaccel-cuda.so|' $< > $@
# Made with the library, so a plain `make` leaves a usable build tree.
EXTRA_plugins_cuda_libdlaccel_cuda_la_DEPENDENCIES = plugins/cuda/cuda.json
dla_cuda_manifestdir = $(pluginsdir)
dla_cuda_manifest_DATA = plugins/cuda/install/cuda.json
CLEANFILES += plugins/cuda/cuda.json plugins/cuda/install/cuda.json
endif

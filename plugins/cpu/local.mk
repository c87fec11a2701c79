# plugins/cpu - the reference backend: OpenBLAS GEMM, OpenMP kernels.
pkglib_LTLIBRARIES += plugins/cpu/libdlaccel-cpu.la
DLA_PLUGINS += cpu
plugins_cpu_libdlaccel_cpu_la_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS) $(MVEC_CFLAGS)
# No -march=native: the installed plugin must run on any x86-64 (and under
# valgrind, which has no AVX-512); GEMM gets its SIMD from OpenBLAS's own
# runtime dispatch, and the elementwise kernels are bound by memory.
# -ffp-contract=off: the random stream's normals (dlaccel/plugin_philox.h) are
# defined with every operation rounded once.
plugins_cpu_libdlaccel_cpu_la_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS) -O3 -ffp-contract=off
plugins_cpu_libdlaccel_cpu_la_LDFLAGS = -module -avoid-version -shared -no-undefined $(OPENMP_CFLAGS)
plugins_cpu_libdlaccel_cpu_la_LIBADD = $(OPENBLAS_LIBS) $(MVEC_LIBS) -lm
plugins_cpu_libdlaccel_cpu_la_SOURCES = \
	plugins/cpu/cpu.h \
	plugins/cpu/plugin.c plugins/cpu/threads.c plugins/cpu/peers.c \
	plugins/cpu/share.c plugins/cpu/share.h \
	plugins/cpu/memory.c plugins/cpu/block_cache.c plugins/cpu/block_cache.h \
	plugins/cpu/mem_avail.c plugins/cpu/mem_avail.h \
	plugins/cpu/strided.c plugins/cpu/strided.h \
	plugins/cpu/copy.c \
	plugins/cpu/elementwise.c plugins/cpu/elementwise_ops.h \
	plugins/cpu/vmath.c plugins/cpu/vmath.h \
	plugins/cpu/fused.c \
	plugins/cpu/random.c core/philox.c core/philox.h core/philox_stream.h \
	plugins/cpu/reduce.c plugins/cpu/reduce_lanes.c plugins/cpu/sum.c \
	plugins/cpu/gemm.c plugins/cpu/gemm_thin.c plugins/cpu/gemm_tiles.c \
	plugins/cpu/gemm_direct.c \
	plugins/cpu/pool.c \
	plugins/cpu/index.c \
	plugins/cpu/conv.c plugins/cpu/conv_impl.h plugins/cpu/conv_im2col.h \
	plugins/cpu/conv_avx512.c plugins/cpu/conv_avx512.h plugins/cpu/conv_winograd.c plugins/cpu/conv_winograd_nt.c \
	plugins/cpu/conv_avx2.c plugins/cpu/conv_avx2_f64.c \
	plugins/cpu/conv_direct.h plugins/cpu/conv_direct_body.h plugins/cpu/conv_depthwise.c plugins/cpu/conv_phases.c \
	plugins/cpu/conv_vec.h

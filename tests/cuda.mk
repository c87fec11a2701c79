# tests/cuda.mk - the cuda plugin in make check (when configure built it).
# This machine class (CI, development) has the toolkit but no GPU and no
# driver: the test proves the plugin loads there, reports no device with
# the reason, and leaves discovery and the cpu plugin alone; with a driver
# it skips (the GPU checks are run by hand: docs/plugins.md, "The cuda
# plugin"). The cuda manifest is in its own folder (plugins/cuda), so the
# script puts it on the path; the rest of make check runs as before.
EXTRA_DIST += tests/cuda_without_driver.sh tests/cuda_probe.c

if HAVE_CUDA
check_PROGRAMS += tests/cuda_probe
tests_cuda_probe_SOURCES = tests/cuda_probe.c
tests_cuda_probe_LDADD = libdlaccel.la
TESTS += tests/cuda_without_driver.sh
dla_cuda_without_driver_log = tests/cuda_without_driver.sh.log
$(dla_cuda_without_driver_log): tools/dlaccel tests/cuda_probe plugins/cuda/libdlaccel-cuda.la
endif

# The compiled fused programs' source through NVRTC (no GPU needed).
if HAVE_CUDA
check_PROGRAMS += tests/cuda_fused_source
tests_cuda_fused_source_SOURCES = tests/cuda_fused_source.c plugins/cuda/fused_source.c
nodist_tests_cuda_fused_source_SOURCES = plugins/cuda/cuda_sources.c
tests_cuda_fused_source_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) \
	-DDLA_CUDA_LIBDIR='"$(CUDA_LIBDIR)"'
tests_cuda_fused_source_LDADD = -ldl
TESTS += tests/cuda_fused_source
endif

# The kernels' division by a constant (plugins/cuda/fastdiv.h), plain C.
check_PROGRAMS += tests/cuda_fastdiv
tests_cuda_fastdiv_SOURCES = tests/cuda_fastdiv.c plugins/cuda/fastdiv.h
TESTS += tests/cuda_fastdiv

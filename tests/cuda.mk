# tests/cuda.mk - the cuda plugin in make check (when configure built it).
# This machine class (CI, development) has the toolkit but no GPU and no
# driver: the test proves the plugin loads there, reports no device with
# the reason, and leaves discovery and the cpu plugin alone; with a driver
# it skips (the GPU checks are run by hand: docs/plugins.md, "The cuda
# plugin"). The cuda manifest is in its own folder (plugins/cuda), so the
# script puts it on the path; the rest of make check runs as before.
EXTRA_DIST += tests/cuda_without_driver.sh tests/cuda_probe.c

# The probe is built without the cuda plugin too: tests/device_priority.sh
# asks it for dla_training_device's choice.
check_PROGRAMS += tests/cuda_probe
tests_cuda_probe_SOURCES = tests/cuda_probe.c
tests_cuda_probe_LDADD = libdlaccel.la
if HAVE_CUDA
TESTS += tests/cuda_without_driver.sh
dla_cuda_without_driver_log = tests/cuda_without_driver.sh.log
$(dla_cuda_without_driver_log): tools/dlaccel tests/cuda_probe plugins/cuda/libdlaccel-cuda.la
endif

# The one kernel keeps its values in registers (tests/cuda_onekern_spills.sh
# says why): ptxas's report of onekern_kernels.cu with the plugin's flags.
EXTRA_DIST += tests/cuda_onekern_spills.sh
if HAVE_CUDA
TESTS += tests/cuda_onekern_spills.sh
CLEANFILES += tests/onekern_kernels.ptxas
tests/onekern_kernels.ptxas: $(top_srcdir)/plugins/cuda/onekern_kernels.cu \
		$(wildcard $(top_srcdir)/plugins/cuda/*.h $(top_srcdir)/plugins/cuda/*.cuh) \
		$(top_srcdir)/api/dlaccel/plugin_ops.h
	$(AM_V_GEN)$(MKDIR_P) tests && $(NVCC) $(DLA_NVCC_FLAGS) -Xptxas -v \
		-c $(top_srcdir)/plugins/cuda/onekern_kernels.cu -o $@.o >$@-t 2>&1 && \
		rm -f $@.o && mv $@-t $@
dla_cuda_onekern_spills_log = tests/cuda_onekern_spills.sh.log
$(dla_cuda_onekern_spills_log): tests/onekern_kernels.ptxas
endif

# The compiled fused programs' source through NVRTC (no GPU needed).
if HAVE_CUDA
check_PROGRAMS += tests/cuda_fused_source
tests_cuda_fused_source_SOURCES = tests/cuda_fused_source.c plugins/cuda/fused_source.c \
	plugins/cuda/onekern_source.c
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

# The fused, fused_multi and fused_reduce kernels run on the CPU against their steps one
# by one, bit for bit (tests/cuda_fused_emu.cpp says how): fused.c and
# space.c as the plugin has them, the frames and the interpreter of
# fused_kern.h, and the compiled programs' source of fused_source.c, which
# tests/cuda_fused_emu_write writes for the host compiler
# (tests/cuda_fused_emu_progs.cpp). The same program runs the small GEMM
# kernel and the one-kernel replay of small plans (tests/
# cuda_onekern_emu.cpp: gemm.c, reduce.c, elementwise.c, copy.c and
# onekern.c recording a chain of launches, onekern_kernels.cu compiled
# for the host replaying it), and space.c's CUDA errors as messages (a
# kernel's failure while running, and a wait's error, note that it may be
# earlier queued work). The plugin's other kernels run in it too, against
# the cpu plugin (tests/cuda_kernels_emu.cpp, loading plugins/cpu/.libs):
# copy_kernels.cu (fill, strided copy, cast), elementwise_kernels.cu,
# random_kernels.cu, pool_kernels.cu, index_kernels.cu and conv_kernels.cu,
# each copied here with its launches written for the host compiler (a sed:
# tests/cuda_kern_emu_launch.h), behind copy.c, elementwise.c, random.c,
# pool.c, index.c, conv.c (no cuDNN: its own kernels) and gemm.c; reduce.c
# with positions on ties and NaN. Bit for bit but for the convolutions and
# GEMMs, whose integer operands make every sum exact and whose values are
# compared (either zero's sign). Not emulated: what cuBLAS and cuDNN do.
# Needs a C++ compiler (configure's HAVE_CXX); not built without one, and
# none of this without the toolkit (HAVE_CUDA).
EXTRA_DIST += tests/cuda_fused_emu.cpp tests/cuda_fused_emu.h tests/cuda_fused_emu_shim.h \
	tests/cuda_kernels_emu.cpp tests/cuda_kern_emu_launch.h \
	tests/cuda_fused_emu_write.c
if HAVE_CUDA
if HAVE_CXX
check_PROGRAMS += tests/cuda_fused_emu_write tests/cuda_fused_emu
tests_cuda_fused_emu_write_SOURCES = tests/cuda_fused_emu_write.c tests/cuda_fused_emu.h \
	plugins/cuda/fused_source.c
tests_cuda_fused_emu_write_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS)
tests_cuda_fused_emu_SOURCES = tests/cuda_fused_emu.cpp tests/cuda_fused_emu.h \
	tests/cuda_fused_emu_shim.h plugins/cuda/fused.c plugins/cuda/space.c \
	plugins/cuda/fused_source.c tests/cuda_onekern_emu.cpp plugins/cuda/gemm.c \
	plugins/cuda/reduce.c plugins/cuda/onekern.c plugins/cuda/onekern_source.c \
	plugins/cuda/elementwise.c plugins/cuda/copy.c \
	plugins/cuda/fused_reduce.c plugins/cuda/segment.c tests/cuda_segment_emu.cpp \
	tests/cuda_kernels_emu.cpp tests/cuda_kern_emu_launch.h plugins/cuda/pool.c \
	plugins/cuda/index.c plugins/cuda/random.c plugins/cuda/conv.c
nodist_tests_cuda_fused_emu_SOURCES = tests/cuda_fused_emu_progs.cpp $(dla_emu_kernel_copies)
# The host compiler and the include paths the chain test builds the
# compiled one kernel's source with (tests/cuda_onekern_emu.cpp); the
# object it loads finds the harness's threadIdx and barrier (-rdynamic).
tests_cuda_fused_emu_CPPFLAGS = $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -DDLA_EMU_CXX='"$(CXX)"' \
	-DDLA_EMU_CPPFLAGS='"$(CUDA_CPPFLAGS) -I$(abs_top_srcdir) -I$(abs_top_srcdir)/api -I$(abs_top_builddir)"' \
	-DDLA_EMU_CPU_PLUGIN='"$(abs_top_builddir)/plugins/cpu/.libs/libdlaccel-cpu.so"'
tests_cuda_fused_emu_LDFLAGS = -rdynamic
# No contraction on either side (the kernels and the reference); the
# interpreter's `#pragma unroll` is nvcc's, unknown to g++; the written
# source's lines are too long for GCC's misleading-indentation check.
tests_cuda_fused_emu_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
tests_cuda_fused_emu_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-unknown-pragmas -Wno-misleading-indentation -ffp-contract=off \
	$(SANITIZER_CFLAGS) $(FUZZ_CFLAGS)
tests_cuda_fused_emu_LDADD = -lm -lpthread -ldl
TESTS += tests/cuda_fused_emu
CLEANFILES += tests/cuda_fused_emu_progs.cpp $(dla_emu_kernel_copies)
tests/cuda_fused_emu_progs.cpp: tests/cuda_fused_emu_write$(EXEEXT)
	$(AM_V_GEN)$(MKDIR_P) tests && ./tests/cuda_fused_emu_write$(EXEEXT) > $@-t && mv $@-t $@
# The kernel files of tests/cuda_kernels_emu.cpp, each copied with its
# launches written for the host (tests/cuda_kern_emu_launch.h says how).
dla_emu_kernel_copies = tests/cuda_emu_copy_kernels.cpp tests/cuda_emu_elementwise_kernels.cpp \
	tests/cuda_emu_pool_kernels.cpp tests/cuda_emu_index_kernels.cpp \
	tests/cuda_emu_random_kernels.cpp tests/cuda_emu_conv_kernels.cpp
tests/cuda_emu_%_kernels.cpp: $(top_srcdir)/plugins/cuda/%_kernels.cu
	$(AM_V_GEN)$(MKDIR_P) tests && { \
		if grep -q __syncthreads $<; then echo '#define DLA_EMU_AT_ONCE 1'; fi; \
		echo '#include "tests/cuda_kern_emu_launch.h"'; \
		echo '#line 1 "$<"'; sed -e 's/<<</ | emu_cfg(/g' -e 's/>>>(/) | emu_args(/g' $<; } \
		> $@-t && mv $@-t $@
# The cpu plugin is the reference (tests/cuda_kernels_emu.cpp loads it).
dla_cuda_fused_emu_log = tests/cuda_fused_emu.log
$(dla_cuda_fused_emu_log): plugins/cpu/libdlaccel-cpu.la
endif
endif

# bench/ - dlaccel-bench: the same workloads on every loaded device, with
# host references (direct OpenBLAS, memcpy) measured in the same run.
bin_PROGRAMS += bench/dlaccel-bench
bench_dlaccel_bench_CPPFLAGS = $(AM_CPPFLAGS) $(OPENBLAS_CFLAGS)
bench_dlaccel_bench_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
bench_dlaccel_bench_LDFLAGS = $(OPENMP_CFLAGS)
# OpenBLAS only for the reference lines; the workloads reach it through
# the cpu plugin like any user.
bench_dlaccel_bench_LDADD = libdlaccel.la $(OPENBLAS_LIBS)
bench_dlaccel_bench_SOURCES = \
	bench/main.c \
	bench/workload.h \
	bench/workloads.c \
	bench/workloads_core.c \
	bench/workloads_autodiff.c \
	bench/workloads_cnn.c \
	bench/workloads_slice.c \
	bench/workloads_nn.c \
	bench/workloads_conv.c \
	bench/workloads_replay.c \
	bench/workloads_resnet.c \
	bench/reference.c \
	bench/timer.c bench/timer.h \
	bench/report.c bench/report.h

# A smoke test (TAP): it runs and its output parses; no speed is asserted.
TESTS += bench/smoke.sh
EXTRA_DIST += bench/smoke.sh

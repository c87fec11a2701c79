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
	bench/batch.c bench/batch.h \
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
	bench/workloads_higher.c examples/pinn_model.h \
	bench/workloads_attention.c \
	bench/workloads_ode.c \
	bench/workloads_lstm.c \
	bench/workloads_netstep.c examples/mobile_net.h examples/volume_net.h examples/token_net.h \
	bench/reference.c \
	bench/timer.c bench/timer.h \
	bench/report.c bench/report.h

# A smoke test (TAP): it runs and its output parses; no speed is asserted.
TESTS += bench/smoke.sh
EXTRA_DIST += bench/smoke.sh bench/tap.sh bench/torch_pinn.py bench/torch_attention.py bench/torch_lstm.py \
	bench/torch_neural_ode.py bench/torch_mobile.py bench/torch_volume.py \
	bench/torch_tokens.py bench/torch_resnet_layers.py bench/torch_cnn_eager.py
# The batch sweep beside PyTorch (issue 19; minutes, not part of make
# check) and its smoke test: dlaccel's side alone, a few seconds.
TESTS += bench/batch_sweep_smoke.sh
EXTRA_DIST += bench/batch_sweep_smoke.sh bench/batch_sweep.sh bench/torch_batch_sweep.py
# The cuda plugin on a lent GPU machine: bundle here, run there.
EXTRA_DIST += bench/gpu_pack.sh bench/gpu_run.sh bench/torch_cuda_graph.py

# The parallel training figures of issue 15 (bench/parallel_train.sh runs
# them under mpirun; not part of make check: they take minutes).
noinst_PROGRAMS += bench/parallel_train_bench
bench_parallel_train_bench_SOURCES = bench/parallel_train_bench.c
bench_parallel_train_bench_LDADD = libdlaccel.la -lm
EXTRA_DIST += bench/parallel_train.sh
# The accuracy of N ranks against one process over seeds (minutes a run).
EXTRA_DIST += bench/parallel_accuracy.sh

# allreduce_bench: dla_allreduce against plain MPI_Allreduce in the same
# run (bench/parallel.sh). Built when the MPI plugin is; as a program it
# may link MPI itself (the library never does).
EXTRA_DIST += bench/allreduce_bench.c bench/parallel.sh
if HAVE_MPI
noinst_PROGRAMS += bench/allreduce_bench
bench_allreduce_bench_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
bench_allreduce_bench_LDADD = libdlaccel.la $(MPI_LIBS)
bench_allreduce_bench_SOURCES = bench/allreduce_bench.c
endif

# The image datastore's figures (bench/datastore.sh): decode throughput and
# the memory of a queue pass over a folder against the IDX files.
noinst_PROGRAMS += bench/imds-bench
bench_imds_bench_SOURCES = bench/imds_bench.c
bench_imds_bench_LDADD = libdlaccel.la
EXTRA_DIST += bench/datastore.sh

# dla_ctc's values for bench/torch_ctc.py (PyTorch's ctc_loss beside it).
noinst_PROGRAMS += bench/ctc_values
bench_ctc_values_SOURCES = bench/ctc_values.c
bench_ctc_values_LDADD = libdlaccel.la -lm
EXTRA_DIST += bench/torch_ctc.py

# dla_lstm, dla_gru and dla_crosschannelnorm's values for
# bench/torch_rnn_lrn.py (PyTorch's LSTM, GRU and local_response_norm).
noinst_PROGRAMS += bench/rnn_lrn_values
bench_rnn_lrn_values_SOURCES = bench/rnn_lrn_values.c
bench_rnn_lrn_values_LDADD = libdlaccel.la -lm
EXTRA_DIST += bench/torch_rnn_lrn.py

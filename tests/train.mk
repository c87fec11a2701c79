# tests/train.mk - trainnet, trainingOptions and the progress display: one
# cmocka binary, run on the default device and again with the testmem
# plugin loaded, where ExecutionEnvironment "gpu" finds a device that is not
# a cpu and trains there.
check_PROGRAMS += tests/test_train
tests_test_train_SOURCES = tests/test_train.c tests/testutil.h tests/sink.h
tests_test_train_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_train_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_train tests/train_on_testmem.sh
EXTRA_DIST += tests/train_on_testmem.sh

# The progress display's lines at several terminal widths and through a
# pipe; tool_progress_tty.sh draws it in a real terminal (tmux).
check_PROGRAMS += tests/test_progress
tests_test_progress_SOURCES = tests/test_progress.c tests/testutil.h tests/sink.h
tests_test_progress_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_progress_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_progress
check_PROGRAMS += tests/progress_tty
tests_progress_tty_SOURCES = tests/progress_tty.c
tests_progress_tty_LDADD = libdlaccel.la
TESTS += tests/tool_progress_tty.sh
EXTRA_DIST += tests/tool_progress_tty.sh

# examples/cnn_fmnist's exit status and messages on a missing, corrupt or
# half-installed dataset.
TESTS += tests/tool_example_data.sh
EXTRA_DIST += tests/tool_example_data.sh

# Training in parallel (issue 15): the share arithmetic and the
# combinations in a world of one (cmocka), and under mpirun with 1 to 4
# ranks (parallel_train.sh, skipped without the MPI plugin).
check_PROGRAMS += tests/test_parallel_train tests/parallel_train_check
tests_test_parallel_train_SOURCES = tests/test_parallel_train.c
tests_test_parallel_train_CFLAGS = $(DLA_TEST_CFLAGS)
tests_test_parallel_train_LDADD = $(DLA_TEST_LIBS)
tests_parallel_train_check_SOURCES = tests/parallel_train_check.c
tests_parallel_train_check_LDADD = libdlaccel.la -lm
TESTS += tests/test_parallel_train tests/parallel_train_on_testmem.sh tests/parallel_train.sh
EXTRA_DIST += tests/parallel_train.sh tests/parallel_train_on_testmem.sh
# What the parallel runs start: the communicator plugin (when built), the
# examples, the dlaccel tool (testmem is in check_DATA).
dla_partrain_log = tests/parallel_train.sh.log
dla_partrain_deps = tests/plugins.d/testmem.json examples/parallel_training examples/cnn_fmnist \
	tools/dlaccel
if HAVE_MPI
dla_partrain_deps += plugins/mpi/libdlaccel-mpi.la
endif
$(dla_partrain_log): $(dla_partrain_deps)

# The cpu device's results have the same bits with any number of OpenMP
# threads (sums shared out in pieces that follow the work, not the team):
# reductions and the digit CNN's steps at 1, 2, 3 and 5 threads; again
# with the convolutions through im2col.
check_PROGRAMS += tests/test_thread_bits
tests_test_thread_bits_SOURCES = tests/test_thread_bits.c
tests_test_thread_bits_CFLAGS = $(DLA_TEST_CFLAGS) $(OPENMP_CFLAGS)
tests_test_thread_bits_LDFLAGS = $(OPENMP_CFLAGS)
tests_test_thread_bits_LDADD = $(DLA_TEST_LIBS)
TESTS += tests/test_thread_bits tests/thread_bits_im2col.sh
EXTRA_DIST += tests/thread_bits_im2col.sh

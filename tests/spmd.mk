# tests/spmd.mk - the collectives (dlaccel/parallel.h): tests/spmd.sh runs
# tests/test_spmd under mpirun with 1 to 4 ranks, over the default
# transports and over TCP, with memory the host cannot address (testmem),
# with a rank that hangs and one that dies, and once without mpirun (a
# world of one). Without MPI in the build only the world of one runs.
check_PROGRAMS += tests/test_spmd
tests_test_spmd_SOURCES = tests/test_spmd.c
tests_test_spmd_LDADD = libdlaccel.la -lm
TESTS += tests/spmd.sh
EXTRA_DIST += tests/spmd.sh
dla_spmd_log = tests/spmd.sh.log
dla_spmd_deps = tests/plugins.d/testmem.json
if HAVE_MPI
dla_spmd_deps += plugins/mpi/libdlaccel-mpi.la
endif
$(dla_spmd_log): $(dla_spmd_deps)

# fuzz/ - libFuzzer harnesses for every reader of outside data, built only
# with --enable-fuzzers (clang); fuzz/run.sh configures such a build, makes
# the seeds and runs each harness for a bounded time. Every other build
# makes each harness as a plain program (replay_main.c runs it on files)
# and make check replays the seeds through them (tests/fuzz_seeds.sh).
EXTRA_DIST += fuzz/run.sh fuzz/fuzz_file.h fuzz/seeds tests/fuzz_seeds.sh fuzz/mutate
DLA_FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -DDLA_FUZZ_PLUGIN_PATH='"$(abs_builddir)/plugins.d"'

check_PROGRAMS += fuzz/make_seeds
fuzz_make_seeds_SOURCES = fuzz/make_seeds.c
fuzz_make_seeds_CPPFLAGS = $(AM_CPPFLAGS) $(JANSSON_CFLAGS)
fuzz_make_seeds_LDADD = libdlaccel.la $(JANSSON_LIBS)

if DLA_FUZZERS
DLA_FUZZ_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
DLA_FUZZERS = fuzz/fuzz_net fuzz/fuzz_net_arch fuzz/fuzz_trace fuzz/fuzz_idx fuzz/fuzz_manifest \
	fuzz/fuzz_image
noinst_PROGRAMS += $(DLA_FUZZERS)

# The checksum is internal (hidden): built in, for the mending mode.
fuzz_fuzz_net_SOURCES = fuzz/fuzz_net.c fuzz/fuzz_file.h core/crc32c.c core/crc32c.h
fuzz_fuzz_net_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) $(JANSSON_CFLAGS)
fuzz_fuzz_net_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_net_LDADD = libdlaccel.la $(JANSSON_LIBS)

fuzz_fuzz_net_arch_SOURCES = fuzz/fuzz_net_arch.c fuzz/fuzz_file.h
fuzz_fuzz_net_arch_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) $(JANSSON_CFLAGS)
fuzz_fuzz_net_arch_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_net_arch_LDADD = libdlaccel.la $(JANSSON_LIBS)

fuzz_fuzz_trace_SOURCES = fuzz/fuzz_trace.c fuzz/fuzz_file.h
fuzz_fuzz_trace_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_fuzz_trace_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_trace_LDADD = libdlaccel.la

fuzz_fuzz_idx_SOURCES = fuzz/fuzz_idx.c fuzz/fuzz_file.h
fuzz_fuzz_idx_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_fuzz_idx_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_idx_LDADD = libdlaccel.la

# The image datastore's decoders (libpng, libjpeg-turbo).
fuzz_fuzz_image_SOURCES = fuzz/fuzz_image.c fuzz/fuzz_file.h
fuzz_fuzz_image_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_fuzz_image_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_image_LDADD = libdlaccel.la

# The manifest reader is internal (hidden): built in, with its allocator.
fuzz_fuzz_manifest_SOURCES = fuzz/fuzz_manifest.c fuzz/fuzz_file.h core/manifest.c core/json_read.c core/alloc.c
fuzz_fuzz_manifest_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) -DDLA_BUILDING_LIBRARY $(JANSSON_CFLAGS)
fuzz_fuzz_manifest_CFLAGS = $(DLA_FUZZ_CFLAGS)
fuzz_fuzz_manifest_LDADD = $(JANSSON_LIBS)
else
DLA_REPLAYS = fuzz/replay_net fuzz/replay_net_arch fuzz/replay_trace fuzz/replay_idx \
	fuzz/replay_manifest fuzz/replay_image
check_PROGRAMS += $(DLA_REPLAYS)
TESTS += tests/fuzz_seeds.sh
dla_fuzz_seeds_log = tests/fuzz_seeds.sh.log
$(dla_fuzz_seeds_log): $(DLA_REPLAYS) fuzz/make_seeds

fuzz_replay_net_SOURCES = fuzz/replay_main.c fuzz/fuzz_net.c fuzz/fuzz_file.h \
	core/crc32c.c core/crc32c.h
fuzz_replay_net_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) $(JANSSON_CFLAGS)
fuzz_replay_net_LDADD = libdlaccel.la $(JANSSON_LIBS)

fuzz_replay_net_arch_SOURCES = fuzz/replay_main.c fuzz/fuzz_net_arch.c fuzz/fuzz_file.h
fuzz_replay_net_arch_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) $(JANSSON_CFLAGS)
fuzz_replay_net_arch_LDADD = libdlaccel.la $(JANSSON_LIBS)

fuzz_replay_trace_SOURCES = fuzz/replay_main.c fuzz/fuzz_trace.c fuzz/fuzz_file.h
fuzz_replay_trace_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_replay_trace_LDADD = libdlaccel.la

fuzz_replay_idx_SOURCES = fuzz/replay_main.c fuzz/fuzz_idx.c fuzz/fuzz_file.h
fuzz_replay_idx_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_replay_idx_LDADD = libdlaccel.la

fuzz_replay_image_SOURCES = fuzz/replay_main.c fuzz/fuzz_image.c fuzz/fuzz_file.h
fuzz_replay_image_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS)
fuzz_replay_image_LDADD = libdlaccel.la

fuzz_replay_manifest_SOURCES = fuzz/replay_main.c fuzz/fuzz_manifest.c fuzz/fuzz_file.h \
	core/manifest.c core/json_read.c core/alloc.c
fuzz_replay_manifest_CPPFLAGS = $(DLA_FUZZ_CPPFLAGS) -DDLA_BUILDING_LIBRARY $(JANSSON_CFLAGS)
fuzz_replay_manifest_LDADD = $(JANSSON_LIBS)
endif

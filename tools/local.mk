# tools/ - the `dlaccel` command line. Each subcommand is a file of its own
# (see tools/commands.h); add it to the list below.
bin_PROGRAMS += tools/dlaccel
tools_dlaccel_SOURCES = \
	tools/dlaccel.c \
	tools/commands.h \
	tools/devices.c \
	tools/trace.c \
	tools/net.c \
	tools/check_plugin.c \
	tools/conformance.h tools/conformance.c tools/conformance_call.c \
	tools/conformance_copy.c \
	tools/conformance_elementwise.c \
	tools/conformance_math.c \
	tools/conformance_nn.c \
	tools/conformance_random.c \
	tools/export_images.c
tools_dlaccel_CPPFLAGS = $(AM_CPPFLAGS) $(PNG_CFLAGS)
tools_dlaccel_LDADD = libdlaccel.la $(PNG_LIBS)

# tests/kit.mk - the plugin kit (dlaccel/plugin_kit.h, dlaccel/plugin_philox.h)
# compiled as a third-party plugin compiles it: api/ alone on the include
# path, so a kit header that reached into core/ would not build. The
# stream's normals need -ffp-contract=off, as every includer does.
check_PROGRAMS += tests/test_plugin_kit
tests_test_plugin_kit_SOURCES = tests/test_plugin_kit.c
tests_test_plugin_kit_CPPFLAGS = -I$(top_srcdir)/api
tests_test_plugin_kit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS) -ffp-contract=off
tests_test_plugin_kit_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_plugin_kit
# Every public header compiles as the first one a file includes, as C and
# as C++ (a family header's guard was set before dlaccel.h included the
# family in its order).
TESTS += tests/headers_alone.sh
EXTRA_DIST += tests/headers_alone.sh

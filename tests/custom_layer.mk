# tests/custom_layer.mk - layer types of the user's own (issue 18): the
# registry, custom layers in sequences and graphs, the summary,
# accelerated and eager runs, gradients (the MATLAB Answers page's layer
# against finite differences, a backward of the type's own), state,
# trainnet, save/load with properties, an unregistered type at load.
check_PROGRAMS += tests/test_custom_layer
TESTS += tests/test_custom_layer
tests_test_custom_layer_SOURCES = tests/test_custom_layer.c tests/testutil.h tests/gradcheck.h \
	examples/slice_diff_layer.h
tests_test_custom_layer_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_custom_layer_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm

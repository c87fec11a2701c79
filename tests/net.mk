# tests/net.mk - networks and optimizers: dla_net (graph, tables,
# initializers, summary, acceleration), every layer against its op,
# gradients against finite differences, save/load with fuzzing, padding
# masks (HasPaddingMaskInput), the layers that rearrange (crop, depth to
# space), and the optimizers against hand-computed
# steps. One binary (one cmocka group) each.
DLA_NET_TESTS = tests/test_net tests/test_net_layers tests/test_net_grad tests/test_net_io \
	tests/test_net_edit tests/test_optim tests/test_net_mask tests/test_net_rearrange \
	tests/test_net_cross_attention
check_PROGRAMS += $(DLA_NET_TESTS)
TESTS += $(DLA_NET_TESTS)
tests_test_net_SOURCES = tests/test_net.c tests/testutil.h
tests_test_net_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_layers_SOURCES = tests/test_net_layers.c tests/testutil.h tests/gradcheck.h
tests_test_net_layers_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_layers_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_grad_SOURCES = tests/test_net_grad.c tests/testutil.h tests/gradcheck.h
tests_test_net_grad_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_grad_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_io_SOURCES = tests/test_net_io.c tests/testutil.h
tests_test_net_io_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_io_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_edit_SOURCES = tests/test_net_edit.c tests/testutil.h
tests_test_net_edit_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_edit_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_mask_SOURCES = tests/test_net_mask.c tests/testutil.h examples/token_net.h
tests_test_net_mask_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_mask_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_rearrange_SOURCES = tests/test_net_rearrange.c tests/testutil.h tests/tu_assert.h \
	tests/gradcheck.h
tests_test_net_rearrange_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_rearrange_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_net_cross_attention_SOURCES = tests/test_net_cross_attention.c tests/testutil.h tests/gradcheck.h
tests_test_net_cross_attention_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_net_cross_attention_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_optim_SOURCES = tests/test_optim.c tests/testutil.h
tests_test_optim_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_optim_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm

# L-BFGS (lbfgsupdate, lbfgsState, trainnet's "lbfgs"): on the default
# device, and again on testmem (memory the host cannot address: every
# product the line search reads goes through the device's own transfers).
check_PROGRAMS += tests/test_lbfgs
tests_test_lbfgs_SOURCES = tests/test_lbfgs.c tests/testutil.h tests/sink.h
tests_test_lbfgs_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_lbfgs_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
TESTS += tests/test_lbfgs tests/lbfgs_on_testmem.sh
EXTRA_DIST += tests/lbfgs_on_testmem.sh

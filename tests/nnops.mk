# tests/nnops.mk - the nn op suites: activations, normalization, pooling,
# fullyconnect and dropout; one binary (one cmocka group) per family.
EXTRA_DIST += tests/test_nnops.h
DLA_NNOPS_TESTS = tests/test_nnops_act tests/test_nnops_norm tests/test_nnops_crossnorm tests/test_nnops_pool \
	tests/test_nnops_fc tests/test_nnops_dropout tests/test_nnops_allocfail tests/test_embed
check_PROGRAMS += $(DLA_NNOPS_TESTS)
TESTS += $(DLA_NNOPS_TESTS) tests/nnops_on_testmem.sh
EXTRA_DIST += tests/nnops_on_testmem.sh
tests_test_nnops_act_SOURCES = tests/test_nnops_act.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h
tests_test_nnops_act_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_act_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_norm_SOURCES = tests/test_nnops_norm.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h
tests_test_nnops_norm_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_norm_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_pool_SOURCES = tests/test_nnops_pool.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h
tests_test_nnops_pool_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_pool_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_fc_SOURCES = tests/test_nnops_fc.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h
tests_test_nnops_fc_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_fc_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_dropout_SOURCES = tests/test_nnops_dropout.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h
tests_test_nnops_dropout_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_dropout_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_embed_SOURCES = tests/test_embed.c tests/gradcheck.h tests/testutil.h
tests_test_embed_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_embed_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_allocfail_SOURCES = tests/test_nnops_allocfail.c tests/testutil.h tests/allocfail.h
tests_test_nnops_allocfail_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_allocfail_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
tests_test_nnops_crossnorm_SOURCES = tests/test_nnops_crossnorm.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h tests/tu_assert.h
tests_test_nnops_crossnorm_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_nnops_crossnorm_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm
check_PROGRAMS += tests/test_recurrent_fn
TESTS += tests/test_recurrent_fn
tests_test_recurrent_fn_SOURCES = tests/test_recurrent_fn.c tests/test_nnops.h tests/gradcheck.h tests/testutil.h tests/tu_assert.h
tests_test_recurrent_fn_CFLAGS = $(AM_CFLAGS) $(CMOCKA_CFLAGS)
tests_test_recurrent_fn_LDADD = libdlaccel.la $(CMOCKA_LIBS) -lm

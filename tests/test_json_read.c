/*
 * test_json_read.c - core/json_read.c, the JSON reader of network files
 * (compiled into this test: it is internal to the library). It reads what
 * Jansson reads into the same tree, refuses what Jansson refuses, and
 * under a refused allocation returns DLA_ERR_OUT_OF_MEMORY with nothing
 * leaked, never a shorter string or a syntax error (Jansson's own parser
 * dropped bytes it could not save: "covolution2d", then aborted).
 */
#include "testutil.h"

#include "core/json_read.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* What nn/nn_error.c gives the reader inside the library. */
void *dla__nn_malloc(size_t size);
void dla__nn_free(void *p);
void *dla__nn_malloc(size_t size) { return dla_malloc(size); }
void dla__nn_free(void *p) { dla_free(p); }

static const char *const good[] = {
    "{}",
    "[]",
    " \t\r\n{\"a\" : [1, -0, 2.5, -1.25e-3, 1E+2, 9223372036854775807, -9223372036854775808]} \n",
    "{\"Type\":\"convolution2d\",\"Name\":\"conv_1\",\"FilterSize\":[3,3],\"Epsilon\":1e-05}",
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u4e2d\\ud83d\\ude00\", \"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"]",
    "[true, false, null, [[[]]], {\"\": {\"x\": \"\"}}]",
    "\"a lone string\"",
    "0.5",
};

static const char *const bad[] = {
    "",
    "   ",
    "{} x",
    "{\"a\":1,\"a\":2}",
    "[\"\\u0000\"]",
    "[\"\\ud800\"]",
    "[\"\\udc00x\"]",
    "[\"\xc0\x80\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"\xf4\x90\x80\x80\"]",
    "[\"a\nb\"]",
    "[\"abc",
    "\"abc\\",
    "[\"abc\\",
    "[01]",
    "[1.]",
    "[-]",
    "[.5]",
    "[tru]",
    "[1 2]",
    "{\"a\" 1}",
    "{1:2}",
    "[9223372036854775808]",
    "[1e400]",
    "[\"\\x\"]",
    "{\"a\":1,}",
};

static json_t *jansson(const char *text)
{
    json_error_t err;
    return json_loadb(text, strlen(text), JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
}

static void test_good_documents_read_as_jansson_reads_them(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *mine, *ref = jansson(good[i]);
        char why[160];
        size_t at;
        assert_non_null(ref);
        if (dla__json_read(good[i], strlen(good[i]), &mine, why, sizeof why, &at) != DLA_OK)
            fail_msg("document %zu: %s at byte %zu", i, why, at);
        if (!json_equal(mine, ref))
            fail_msg("document %zu reads differently from Jansson", i);
        json_decref(mine);
        json_decref(ref);
    }
}

static void test_bad_documents_are_refused_with_the_place(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *mine = NULL;
        char why[160];
        size_t at = 12345;
        dla_status st = dla__json_read(bad[i], strlen(bad[i]), &mine, why, sizeof why, &at);
        if (st != DLA_ERR_IO)
            fail_msg("document %zu (%s): status %d", i, bad[i], st);
        assert_null(mine);
        assert_true(why[0] != '\0');
        assert_true(at <= strlen(bad[i]));
        json_t *ref = jansson(bad[i]);
        if (ref)
            fail_msg("document %zu (%s): Jansson reads it", i, bad[i]);
    }
}

static void test_nesting_is_bounded(void **state)
{
    (void)state;
    enum { DEEP = 100000 };
    char *text = malloc(2 * DEEP + 1);
    assert_non_null(text);
    memset(text, '[', DEEP);
    memset(text + DEEP, ']', DEEP);
    text[2 * DEEP] = '\0';
    json_t *mine = NULL;
    char why[160];
    size_t at;
    assert_int_equal(dla__json_read(text, 2 * DEEP, &mine, why, sizeof why, &at), DLA_ERR_IO);
    assert_non_null(strstr(why, "nesting"));
    assert_null(mine);
    /* 200 levels are read. */
    memmove(text + 200, text + DEEP, 200);
    assert_int_equal(dla__json_read(text, 400, &mine, why, sizeof why, &at), DLA_OK);
    json_decref(mine);
    free(text);
}

static void test_every_refused_allocation_is_out_of_memory(void **state)
{
    (void)state;
    long runs = 0;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *ref = jansson(good[i]);
        assert_non_null(ref);
        for (long n = 1;; n++) {
            json_t *mine = NULL;
            char why[160];
            size_t at;
            long live = tu_live;
            tu_calls = 0;
            tu_fail_at = n;
            dla_status st = dla__json_read(good[i], strlen(good[i]), &mine, why, sizeof why, &at);
            long calls = tu_calls;
            tu_fail_at = 0;
            if (st == DLA_OK) {
                if (!json_equal(mine, ref))
                    fail_msg("document %zu, allocation %ld refused: read differently", i, n);
                json_decref(mine);
            } else if (st != DLA_ERR_OUT_OF_MEMORY) {
                fail_msg("document %zu, allocation %ld refused: status %d (%s)", i, n, st, why);
            } else {
                assert_null(mine);
            }
            assert_int_equal(tu_live, live);
            if (calls < n)
                break;
            runs++;
            assert_int_equal(st, DLA_ERR_OUT_OF_MEMORY);
        }
        json_decref(ref);
    }
    assert_true(runs > 20);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_good_documents_read_as_jansson_reads_them),
        TU_TEST(test_bad_documents_are_refused_with_the_place),
        TU_TEST(test_nesting_is_bounded),
        TU_TEST(test_every_refused_allocation_is_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

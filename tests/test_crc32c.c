/*
 * test_crc32c.c - core/crc32c.c, the checksum of trace and network files
 * (its source included: the table path and the CPU test are static). The
 * SSE4.2 path and the table path must give the same value, the CRC-32C of
 * its definition, for any length and alignment, chained or whole: a file
 * written on a machine with one path is read on a machine with the other.
 */
#include "testutil.h"

#include "core/crc32c.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

/* CRC-32C by its definition, a bit at a time. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static void the_check_value_of_the_standard_is_met(void **state)
{
    (void)state;
    /* The CRC-32C catalogue's check: "123456789" gives e3069283. */
    assert_int_equal(dla__crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(dla__crc32c(0, "", 0), 0);
    assert_int_equal(dla__crc32c(0x12345678u, NULL, 0), 0x12345678u);
}

static void every_length_alignment_and_split_agrees_with_the_definition(void **state)
{
    (void)state;
    enum { N = 300 };
    unsigned char buf[N + 16];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131 + (i >> 3) * 7 + 1);
    pthread_once(&crc_once, crc_init);
    for (size_t off = 0; off < 16; off++)
        for (size_t len = 0; len <= N; len += len < 40 ? 1 : 37) {
            const unsigned char *p = buf + off;
            const uint32_t want = crc_bitwise(p, len);
            if (dla__crc32c(0, p, len) != want)
                fail_msg("offset %zu, length %zu: %08x, want %08x", off, len,
                         (unsigned)dla__crc32c(0, p, len), (unsigned)want);
            /* The table path, whichever path this CPU takes. */
            assert_int_equal(crc_bytes(0xFFFFFFFFu, p, len) ^ 0xFFFFFFFFu, want);
            /* Chained at every split. */
            for (size_t k = 0; k <= len; k += 1 + len / 7)
                assert_int_equal(dla__crc32c(dla__crc32c(0, p, k), p + k, len - k), want);
        }
    print_message("# the %s path\n", crc_hw ? "SSE4.2" : "table");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_check_value_of_the_standard_is_met),
        cmocka_unit_test(every_length_alignment_and_split_agrees_with_the_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

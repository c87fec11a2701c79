/*
 * crc32c.c - CRC-32C: with SSE4.2's crc32 instruction where the CPU has
 * it (8 bytes a step: a network file of a gigabyte is checked in a
 * fraction of a second, where a table took seconds), otherwise a byte at
 * a time from a table made once. Both give the same value.
 */
#include "core/crc32c.h"

#include <pthread.h>
#include <string.h>

static uint32_t crc_table[256];
static int crc_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* c is the running (inverted) register. */
static uint32_t crc_bytes(uint32_t c, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ b[i]) & 0xFF] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t c, const unsigned char *b,
                                                             size_t n)
{
    uint64_t c64 = c;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8); /* unaligned; the instruction takes it little-endian */
        c64 = __builtin_ia32_crc32di(c64, w);
    }
    uint32_t c32 = (uint32_t)c64;
    for (; i < n; i++)
        c32 = __builtin_ia32_crc32qi(c32, b[i]);
    return c32;
}
#endif

uint32_t dla__crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const unsigned char *b = p;
    uint32_t c = crc ^ 0xFFFFFFFFu;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (crc_hw)
        return crc_sse42(c, b, n) ^ 0xFFFFFFFFu;
#endif
    return crc_bytes(c, b, n) ^ 0xFFFFFFFFu;
}

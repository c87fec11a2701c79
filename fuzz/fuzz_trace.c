/*
 * fuzz_trace.c - dla_trace_load (core/trace_file.c) on arbitrary bytes.
 * A trace file ends with a CRC-32C of its contents, which random bytes
 * never match, so the first input byte picks the mode: odd, the harness
 * makes the rest a whole envelope (the header's size field, the END
 * section, the checksum) and the parser behind it gets the bytes; even,
 * the rest goes in as it is and the envelope's own checks are fuzzed.
 */
#include "fuzz/fuzz_file.h"

#include <dlaccel.h>

#define HEADER_BYTES 32
#define END_BYTES 24

static uint32_t crc_table[256];

static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
    dla_fuzz_init(".dlt");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int whole = data[0] & 1;
    data++, size--;
    unsigned char *p = malloc(size ? size : 1);
    if (!p)
        abort();
    memcpy(p, data, size);
    if (whole && size >= HEADER_BYTES + END_BYTES) {
        uint64_t n = size;
        memcpy(p + 24, &n, 8);
        uint64_t end_len = 8;
        memcpy(p + size - END_BYTES, "END\0\0\0\0\0", 8);
        memcpy(p + size - 16, &end_len, 8);
        memset(p + size - 4, 0, 4);
        uint32_t crc = crc32c(p, size - 8);
        memcpy(p + size - 8, &crc, 4);
    }
    dla_trace *t = NULL;
    dla_status st = dla_trace_load(dla_fuzz_write(p, size), &t);
    free(p);
    if ((st == DLA_OK) != (t != NULL))
        abort();
    if (t) {
        /* What a user does next with a loaded trace: print it. */
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            dla_trace_print(t, f);
            fclose(f);
        }
        dla_trace_release(t);
    }
    return 0;
}

/*
 * fuzz_net.c - dla_net_load (nn/net_io.c) on arbitrary bytes: the
 * safetensors envelope, the JSON header, the tensors' offsets and the
 * architecture behind them. A load either fails with a status or gives a
 * network, which is freed; anything else (a crash, a leak, undefined
 * behaviour) is a finding.
 *
 * A file of format 1.2 carries a CRC-32C of its architecture, factors and
 * data, which a mutation almost never keeps, so the first input byte
 * picks the mode, as fuzz_trace's does: odd, the harness writes the
 * checksum the rest's header names (where it can read the header) and the
 * checks behind it get the bytes; even, the rest goes in as it is and the
 * checksum's own check is fuzzed.
 */
#include "fuzz/fuzz_file.h"

#include "core/crc32c.h"

#include <dlaccel.h>
#include <jansson.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".safetensors");
    return 0;
}

/* Writes into the file p (size bytes) the checksum dla_net_save would,
 * where its header is JSON with the architecture text and a checksum
 * entry of the right length; otherwise leaves it alone. */
static void mend_checksum(unsigned char *p, size_t size)
{
    static const char key[] = "\"checksum\":\"crc32c:";
    uint64_t hlen = 0;
    for (int i = 0; i < 8 && size >= 8; i++)
        hlen |= (uint64_t)p[i] << (8 * i);
    if (size < 8 || hlen > size - 8)
        return;
    json_t *root = json_loadb((const char *)p + 8, (size_t)hlen, 0, NULL);
    const json_t *meta = json_object_get(root, "__metadata__");
    const json_t *arch = json_object_get(meta, "architecture");
    const json_t *factors = json_object_get(meta, "factors");
    unsigned char *at = NULL;
    for (size_t i = 8; json_is_string(arch) && i + sizeof key - 1 + 8 <= 8 + hlen; i++)
        if (!memcmp(p + i, key, sizeof key - 1)) {
            at = p + i + sizeof key - 1;
            break;
        }
    if (at) {
        uint32_t c = dla__crc32c(0, p + 8 + hlen, size - 8 - hlen);
        c = dla__crc32c(c, json_string_value(arch), json_string_length(arch));
        if (json_is_string(factors))
            c = dla__crc32c(c, json_string_value(factors), json_string_length(factors));
        char hex[9];
        snprintf(hex, sizeof hex, "%08x", (unsigned)c);
        memcpy(at, hex, 8);
    }
    json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mend = data[0] & 1;
    data++, size--;
    unsigned char *p = malloc(size ? size : 1);
    if (!p)
        abort();
    memcpy(p, data, size);
    if (mend)
        mend_checksum(p, size);
    dla_net *net = NULL;
    dla_status st = dla_net_load(dla_fuzz_write(p, size), &net);
    free(p);
    if ((st == DLA_OK) != (net != NULL))
        abort(); /* the contract: *out is set exactly on success */
    dla_net_free(net);
    return 0;
}

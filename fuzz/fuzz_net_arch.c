/*
 * fuzz_net_arch.c - the architecture text of a network file (the layers,
 * their options and connections, nn/net_io.c and the layer readers) on
 * arbitrary bytes. The input is the architecture JSON itself; the harness
 * wraps it in a well-formed file with no tensors, so every run gets past
 * the envelope that fuzz_net spends most of its inputs on.
 */
#include "fuzz/fuzz_file.h"

#include <dlaccel.h>
#include <jansson.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".safetensors");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *arch = json_stringn_nocheck((const char *)data, size);
    json_t *root = json_pack("{s:{s:s,s:s,s:o}}", "__metadata__", "format", "dlaccel-net",
                             "format_version", "1.0", "architecture", arch);
    char *header = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (!header)
        return 0; /* not text Jansson can carry: nothing to test */
    size_t hlen = strlen(header);
    unsigned char *file = malloc(8 + hlen);
    if (!file)
        abort();
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    memcpy(file + 8, header, hlen);
    free(header);
    dla_net *net = NULL;
    dla_status st = dla_net_load(dla_fuzz_write(file, 8 + hlen), &net);
    free(file);
    if ((st == DLA_OK) != (net != NULL))
        abort();
    dla_net_free(net);
    return 0;
}

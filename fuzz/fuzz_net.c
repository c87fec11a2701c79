/*
 * fuzz_net.c - dla_net_load (nn/net_io.c) on arbitrary bytes: the
 * safetensors envelope, the JSON header, the tensors' offsets and the
 * architecture behind them. A load either fails with a status or gives a
 * network, which is freed; anything else (a crash, a leak, undefined
 * behaviour) is a finding.
 */
#include "fuzz/fuzz_file.h"

#include <dlaccel.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".safetensors");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dla_net *net = NULL;
    dla_status st = dla_net_load(dla_fuzz_write(data, size), &net);
    if ((st == DLA_OK) != (net != NULL))
        abort(); /* the contract: *out is set exactly on success */
    dla_net_free(net);
    return 0;
}

/*
 * fuzz_idx.c - dla_idx_read (nn/data_idx.c) on arbitrary bytes, plain
 * and, when the input starts with gzip's magic, through zlib. A read
 * either fails with a status and a zeroed struct or gives an array whose
 * every element is read here (so a short buffer is seen by ASan).
 */
#include "fuzz/fuzz_file.h"

#include <dlaccel.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".idx");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dla_idx idx;
    dla_status st = dla_idx_read(dla_fuzz_write(data, size), &idx);
    if (st != DLA_OK) {
        if (idx.data || idx.numel)
            abort(); /* the contract: *out is zeroed on failure */
        return 0;
    }
    int64_t numel = 1;
    for (int i = 0; i < idx.ndims; i++)
        numel *= idx.dims[i];
    if (numel != idx.numel)
        abort();
    size_t bytes = (size_t)idx.numel * dla_idx_type_size(idx.type);
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < bytes; i++)
        sum ^= ((const unsigned char *)idx.data)[i];
    (void)sum;
    dla_idx_free(&idx);
    return 0;
}

/*
 * idxfz FILE...: dla_idx_read of each, every byte of a read array
 * touched; a refusal must name the file.
 * Part of fuzz/mutate/run.sh; prints one line per file (OK, LOADED,
 * REFUSED with the message, NONAME when the message lacks the path).
 */
#include <dlaccel.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        fprintf(stderr, "== %s\n", argv[i]);
        dla_idx x;
        dla_status st = dla_idx_read(argv[i], &x);
        if (st) {
            const char *m = dla_last_error();
            printf("REFUSED %s: %s\n", argv[i], m);
            if (!strstr(m, argv[i])) printf("NONAME %s\n", argv[i]);
            continue;
        }
        size_t n = (size_t)x.numel * dla_idx_type_size(x.type);
        volatile unsigned char s = 0;
        for (size_t k = 0; k < n; k++) s ^= ((unsigned char *)x.data)[k];
        unsigned h = 0; for (size_t k = 0; k < n; k++) h = h * 31 + ((unsigned char *)x.data)[k]; printf("OK %s numel %lld h %08x\n", argv[i], (long long)x.numel, h);
        dla_idx_free(&x);
    }
    return 0;
}

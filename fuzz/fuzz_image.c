/*
 * fuzz_image.c - the image datastore's decoders (nn/data_image_decode.c:
 * libpng and libjpeg-turbo, with their longjmp error paths) on arbitrary
 * bytes, through the public door: the input is the one file of a class
 * folder, and a datastore is made over the folder (which decodes it to
 * learn the size) and read whole. Either fails with a status, or gives an
 * image whose every value is read here (so a short buffer is seen by ASan).
 */
#include "fuzz/fuzz_file.h"

#include <dlaccel.h>
#include <sys/stat.h>

static char top[300];

static void remove_dirs(void)
{
    char sub[320];
    snprintf(sub, sizeof sub, "%s/c", top);
    rmdir(sub);
    rmdir(top);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dla_fuzz_init(".png");
    /* The file of the harnesses is put in a class folder of its own. */
    snprintf(top, sizeof top, "%s.d", dla_fuzz_path);
    char sub[320];
    snprintf(sub, sizeof sub, "%s/c", top);
    if ((mkdir(top, 0700) != 0 && access(top, W_OK) != 0) ||
        (mkdir(sub, 0700) != 0 && access(sub, W_OK) != 0))
        abort();
    if (snprintf(dla_fuzz_path, sizeof dla_fuzz_path, "%s/c/input.png", top) >=
        (int)sizeof dla_fuzz_path)
        abort(); /* a cut path would name another file */
    atexit(remove_dirs);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dla_fuzz_write(data, size);
    dla_imds *ds;
    if (dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds) != DLA_OK) {
        if (ds)
            abort(); /* the contract: *out is NULL on failure */
        return 0;
    }
    dla_tensor *x, *t;
    if (dla_imds_readall(ds, &x, &t) == DLA_OK) {
        int64_t size3[3];
        dla_imds_image_size(ds, size3);
        size_t n = (size_t)(size3[0] * size3[1] * size3[2]);
        if ((size_t)dla_tensor_numel(x) != n || dla_tensor_dim(t, 2) != 1)
            abort();
        unsigned char *px = malloc(n);
        if (!px || dla_tensor_to_host(x, px, n) != DLA_OK)
            abort();
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < n; i++)
            sum ^= px[i];
        (void)sum;
        free(px);
        dla_tensor_release(x);
        dla_tensor_release(t);
    }
    dla_imds_free(ds);
    return 0;
}

/*
 * imfz FILE...: each file alone in a class folder (its extension kept),
 * read whole by an image datastore as bytes and as single; with
 * IMFZ_GOOD=FILE also beside that good file (as double), and with
 * IMFZ_SKIP set with skip_corrupt.
 * Part of fuzz/mutate/run.sh; prints one line per file (OK, LOADED,
 * REFUSED with the message, NONAME when the message lacks the path).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[256];
static int copy(const char *src, const char *dst)
{
    FILE *a = fopen(src, "rb"), *b = fopen(dst, "wb");
    if (!a || !b) return -1;
    char buf[65536]; size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0) fwrite(buf, 1, n, b);
    fclose(a); fclose(b); return 0;
}
static void one(const char *path, int threads, dla_dtype dt)
{
    dla_imds *ds = NULL;
    dla_status st = dla_imds_create(top, &(dla_imds_options){.dtype = dt, .read_threads = threads, .skip_corrupt = getenv("IMFZ_SKIP") != NULL}, &ds);
    if (st) {
        const char *m = dla_last_error();
        printf("REFUSED-create %s: %s\n", path, m);
        if (ds) printf("CONTRACT %s\n", path);
        return;
    }
    dla_tensor *x = NULL, *t = NULL;
    st = dla_imds_readall(ds, &x, &t);
    if (st) printf("REFUSED-read %s: %s\n", path, dla_last_error());
    else {
        int64_t s3[3]; dla_imds_image_size(ds, s3);
        printf("OK %s %lldx%lldx%lld numel %lld\n", path, (long long)s3[0], (long long)s3[1], (long long)s3[2], (long long)dla_tensor_numel(x));
        size_t n = (size_t)dla_tensor_numel(x) * dla_dtype_size(dt);
        unsigned char *px = malloc(n ? n : 1);
        if (dla_tensor_to_host(x, px, n)) printf("TOHOST-FAIL %s\n", path);
        free(px);
    }
    dla_tensor_release(x); dla_tensor_release(t);
    dla_imds_free(ds);
}
int main(int argc, char **argv)
{
    snprintf(top, sizeof top, "/dev/shm/imfz%ld", (long)getpid());
    char sub[300], dst[400], dst0[400];
    snprintf(sub, sizeof sub, "%s/c", top);
    mkdir(top, 0700); mkdir(sub, 0700);
    const char *good = getenv("IMFZ_GOOD");
    for (int i = 1; i < argc; i++) {
        const char *dot = strrchr(argv[i], '.');
        snprintf(dst, sizeof dst, "%s/z%s", sub, dot ? dot : ".png");
        fprintf(stderr, "== %s\n", argv[i]);
        copy(argv[i], dst);
        one(argv[i], 1, DLA_U8);
        one(argv[i], 2, DLA_F32);
        if (good) {
            const char *gd = strrchr(good, '.');
            snprintf(dst0, sizeof dst0, "%s/a%s", sub, gd);
            copy(good, dst0);
            one(argv[i], 1, DLA_F64);
            unlink(dst0);
        }
        unlink(dst);
    }
    rmdir(sub); rmdir(top);
    return 0;
}

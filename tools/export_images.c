/*
 * export_images.c - `dlaccel export-images`: Fashion-MNIST (Debian's
 * dataset-fashion-mnist) written as PNG files under one folder per class,
 * the layout imageDatastore(..., 'LabelSource', 'foldernames') reads.
 *
 * Folders are named "<class number>_<class name>" ("0_T-shirt-top", ...,
 * "9_Ankle_boot") so that their sorted order, which gives the datastore's
 * class numbers, is the IDX files' label order; files are named by their
 * index in the IDX file ("00042.png"), so the IDX order can be restored
 * from the names (examples/cnn_fmnist.c --folder does).
 */
#include "tools/commands.h"

#include <dirent.h>
#include <dlaccel.h>
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "0_T-shirt-top": no slash or space in a folder name. */
static void folder_name(int k, char *buf, size_t len)
{
    snprintf(buf, len, "%d_%s", k, dla_fashion_mnist_class_name(k));
    for (char *p = buf; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = *p == '/' ? '-' : '_';
}

/* mkdir -p: the folders above path too. */
static int make_dir(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0777); /* an error shows at the last step */
            *p = '/';
        }
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "dlaccel export-images: cannot make folder %s: %s\n", path, strerror(errno));
    return -1;
}

/* Writes an 8-bit gray PNG of h rows; row r, column c is px[r + h*c]. */
static int write_png(const char *path, const unsigned char *px, int h, int w)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "dlaccel export-images: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *row = malloc((size_t)w);
    int ok = png && info && row;
    if (ok && setjmp(png_jmpbuf(png))) {
        ok = 0; /* libpng printed why; nothing changed since setjmp is read after */
    } else if (ok) {
        png_init_io(png, f);
        png_set_compression_level(png, 6);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY,
                     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);
        for (int r = 0; r < h; r++) {
            for (int c = 0; c < w; c++)
                row[c] = px[r + (size_t)h * (size_t)c];
            png_write_row(png, row);
        }
        png_write_end(png, NULL);
    }
    png_destroy_write_struct(&png, &info);
    free(row);
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "dlaccel export-images: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* PNG files in OUTDIR's class folders that this run does not write (file
 * i of class k is written when labels[i] == k): an earlier export's, into
 * the same folder with another --split, --limit or --dir. They would be
 * read with the new ones, as images of their folder's class, so the tree
 * is not the split asked for. Names the first and returns the count. */
static long long stale_files(const char *out, const int32_t *labels, int64_t n)
{
    long long stale = 0;
    char path[4096], name[64];
    for (int k = 0; k < DLA_FASHION_MNIST_CLASSES; k++) {
        folder_name(k, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", out, name);
        DIR *d = opendir(path);
        if (!d)
            continue;
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            const size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".png") != 0)
                continue;
            char *end;
            const long long i = strtoll(e->d_name, &end, 10);
            if (end != e->d_name && strcmp(end, ".png") == 0 && i >= 0 && i < n &&
                labels[i] == k)
                continue;
            if (stale++ == 0)
                fprintf(stderr, "dlaccel export-images: %s/%s is not a file of this export\n",
                        path, e->d_name);
        }
        closedir(d);
    }
    return stale;
}

int dla_tool_export_images(int argc, char **argv)
{
    const char *split = "train", *dir = NULL, *out = NULL;
    long long limit = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--split") && i + 1 < argc) {
            split = argv[++i];
            /* A bad argument, as a bad --limit is (it failed as the load's
             * error, exit 1, after looking for the files). */
            if (strcmp(split, "train") && strcmp(split, "test")) {
                fprintf(stderr, "dlaccel export-images: --split %s: \"train\" or \"test\"\n",
                        split);
                return DLA_TOOL_USAGE;
            }
        } else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
            dir = argv[++i];
        } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
            char *end;
            errno = 0;
            limit = strtoll(argv[++i], &end, 10);
            if (*end || end == argv[i] || limit < 1 || errno == ERANGE) {
                fprintf(stderr, "dlaccel export-images: --limit %s: a count >= 1\n", argv[i]);
                return DLA_TOOL_USAGE;
            }
        } else if ((!strcmp(argv[i], "--split") || !strcmp(argv[i], "--dir") ||
                    !strcmp(argv[i], "--limit")) && i + 1 == argc) {
            /* Last, without its value: it was called an unknown argument. */
            fprintf(stderr, "dlaccel export-images: %s needs a value\n", argv[i]);
            return DLA_TOOL_USAGE;
        } else if (argv[i][0] == '-' || out) {
            fprintf(stderr, "dlaccel export-images: unknown argument %s\n", argv[i]);
            return DLA_TOOL_USAGE;
        } else {
            out = argv[i];
        }
    }
    if (!out) {
        fprintf(stderr, "dlaccel export-images: name the folder to write (OUTDIR)\n");
        return DLA_TOOL_USAGE;
    }
    dla_tensor *x, *t;
    dla_fashion_mnist_options o = {.dtype = DLA_U8, .count = limit};
    if (dla_fashion_mnist_load(dir, split, &o, &x, &t) != DLA_OK) {
        fprintf(stderr, "dlaccel export-images: %s\n", dla_last_error());
        return DLA_TOOL_FAILED;
    }
    int64_t n = dla_tensor_dim(x, 4), h = dla_tensor_dim(x, 1), w = dla_tensor_dim(x, 2);
    unsigned char *px = malloc((size_t)(n * h * w));
    int32_t *labels = malloc(sizeof *labels * (size_t)n);
    int rc = DLA_TOOL_OK;
    if (!px || !labels || dla_tensor_to_host(x, px, (size_t)(n * h * w)) != DLA_OK ||
        dla_tensor_to_host(t, labels, sizeof *labels * (size_t)n) != DLA_OK) {
        fprintf(stderr, "dlaccel export-images: cannot read the images: %s\n", dla_last_error());
        rc = DLA_TOOL_FAILED;
    }
    /* The longest path written must fit the buffers below: past them the
     * names were cut ("0_T-shirt-top/00001.pn") and the export said it
     * wrote them, exit 0. */
    char path[4096], name[64];
    if (rc == DLA_TOOL_OK) {
        size_t folder = 0;
        for (int k = 0; k < DLA_FASHION_MNIST_CLASSES; k++) {
            folder_name(k, name, sizeof name);
            folder = strlen(name) > folder ? strlen(name) : folder;
        }
        const int digits = snprintf(NULL, 0, "%05lld", (long long)(n > 0 ? n - 1 : 0));
        if (strlen(out) + 1 + folder + 1 + (size_t)digits + 4 >= sizeof path) {
            fprintf(stderr,
                    "dlaccel export-images: %.60s...: the paths of its files would be longer than "
                    "%zu bytes (nothing written)\n",
                    out, sizeof path - 1);
            rc = DLA_TOOL_FAILED;
        }
    }
    /* Checked before anything is written, so a refused export leaves the
     * tree as it found it. */
    long long stale = rc == DLA_TOOL_OK ? stale_files(out, labels, n) : 0;
    if (stale > 0) {
        fprintf(stderr,
                "dlaccel export-images: %s holds %lld PNG file%s in its class folders that this "
                "export would not write (an earlier one's?): a datastore would read them as "
                "well; export into an empty folder (nothing written)\n",
                out, stale, stale == 1 ? "" : "s");
        rc = DLA_TOOL_FAILED;
    }
    if (rc == DLA_TOOL_OK && make_dir(out) != 0)
        rc = DLA_TOOL_FAILED;
    /* A class's folder is made with its first file: an empty one (a
     * --limit that leaves a class out) makes dla_imds_create refuse the
     * tree. */
    int made[DLA_FASHION_MNIST_CLASSES] = {0};
    for (int64_t i = 0; i < n && rc == DLA_TOOL_OK; i++) {
        folder_name(labels[i], name, sizeof name);
        if (labels[i] >= 0 && labels[i] < DLA_FASHION_MNIST_CLASSES && !made[labels[i]]) {
            snprintf(path, sizeof path, "%s/%s", out, name);
            if (make_dir(path) != 0) {
                rc = DLA_TOOL_FAILED;
                break;
            }
            made[labels[i]] = 1;
        }
        snprintf(path, sizeof path, "%s/%s/%05lld.png", out, name, (long long)i);
        if (write_png(path, px + (size_t)(i * h * w), (int)h, (int)w) != 0)
            rc = DLA_TOOL_FAILED;
    }
    if (rc == DLA_TOOL_OK)
        printf("wrote %lld %s images of %lldx%lld to %s (one folder per class)\n", (long long)n,
               split, (long long)h, (long long)w, out);
    free(px);
    free(labels);
    dla_tensor_release(x);
    dla_tensor_release(t);
    return rc;
}

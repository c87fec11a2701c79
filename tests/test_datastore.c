/*
 * test_datastore.c - image datastores: folder trees of PNG and JPEG files
 * made here (libpng, libjpeg), labels from folder names, reading, ReadSize,
 * shuffle, partition, splitEachLabel, augmentation, the mini-batch queue
 * and trainnet over a datastore, every kind of bad input, and Fashion-MNIST
 * exported by `dlaccel export-images` read back equal to the IDX files.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "tu_assert.h"
#include <jpeglib.h>
#include <png.h>

/* A call that must succeed; on failure the library's message says why. */
#define assert_ok(call)                                                                            \
    do {                                                                                           \
        dla_status st_ = (call);                                                                   \
        if (st_ != DLA_OK)                                                                         \
            fail_msg("%s: %s: %s", #call, dla_status_str(st_), dla_last_error());                 \
    } while (0)

/* ------------------------------------------------------------ fixtures */

static char root[128];

static const char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *path_of(const char *fmt, ...)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    int n = snprintf(buf[k], sizeof buf[k], "%s/", root);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf[k] + n, sizeof buf[k] - (size_t)n, fmt, ap);
    va_end(ap);
    return buf[k];
}

static void mkdirs(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0777);
            *p = '/';
        }
    mkdir(tmp, 0777);
}

/* The pixel value of image `id` at row r, column c, channel k. */
static unsigned char pix(int id, int r, int c, int k)
{
    return (unsigned char)(id + r * 40 + c * 13 + k * 50); /* the first pixel is the id */
}

/* A PNG of any colour type and depth: rows given as libpng packs them,
 * with an optional palette and tRNS (palette alphas or a gray/RGB key). */
static void write_png_raw(const char *path, int h, int w, int depth, int ctype,
                          const unsigned char *rows, size_t rowbytes, const png_color *pal,
                          int npal, const unsigned char *trns, int ntrns,
                          const png_color_16 *trns_key)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_false(setjmp(png_jmpbuf(png)));
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (pal)
        png_set_PLTE(png, info, pal, npal);
    if (trns || trns_key)
        png_set_tRNS(png, info, trns, ntrns, (png_color_16p)trns_key);
    png_write_info(png, info);
    for (int r = 0; r < h; r++)
        png_write_row(png, (png_const_bytep)(rows + (size_t)r * rowbytes));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    fclose(f);
}

/* An 8-bit PNG of h x w x ch (1 gray, 3 RGB) with pix(id, ...). */
static void write_png(const char *path, int id, int h, int w, int ch)
{
    unsigned char *rows = malloc((size_t)h * (size_t)w * (size_t)ch);
    assert_non_null(rows);
    for (int r = 0; r < h; r++)
        for (int c = 0; c < w; c++)
            for (int k = 0; k < ch; k++)
                rows[((size_t)r * (size_t)w + (size_t)c) * (size_t)ch + (size_t)k] = pix(id, r, c, k);
    write_png_raw(path, h, w, 8, ch == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, rows,
                  (size_t)w * (size_t)ch, NULL, 0, NULL, 0, NULL);
    free(rows);
}

/* A gray JPEG of h x w, constant value v (so that lossy coding keeps it). */
static void write_jpeg(const char *path, int h, int w, int v)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    struct jpeg_compress_struct j;
    struct jpeg_error_mgr e;
    j.err = jpeg_std_error(&e);
    jpeg_create_compress(&j);
    jpeg_stdio_dest(&j, f);
    j.image_width = (JDIMENSION)w;
    j.image_height = (JDIMENSION)h;
    j.input_components = 1;
    j.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&j);
    jpeg_set_quality(&j, 95, TRUE);
    jpeg_start_compress(&j, TRUE);
    unsigned char row[256];
    memset(row, v, sizeof row);
    while (j.next_scanline < j.image_height) {
        JSAMPROW rp = row;
        jpeg_write_scanlines(&j, &rp, 1);
    }
    jpeg_finish_compress(&j);
    jpeg_destroy_compress(&j);
    fclose(f);
}

static long file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (long)sb.st_size;
}

/* Keeps the first n bytes of path. */
static void truncate_to(const char *path, long n) { assert_int_equal(truncate(path, n), 0); }

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        rm_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

/* A fresh folder under root for one test. */
static const char *fresh(const char *name)
{
    /* A ring of its own: path_of's is reused by the calls that follow. */
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", path_of("%s", name));
    rm_tree(buf[k]);
    mkdirs(buf[k]);
    return buf[k];
}

/* The standard tree: classes "cat" (ids 0..2) and "ant" (3..4, one in a
 * nested folder) of 4x3 gray PNGs; "ant" sorts first. */
static const char *standard_tree(void)
{
    const char *top = fresh("std");
    mkdirs(path_of("std/cat"));
    mkdirs(path_of("std/zoo/ant"));
    write_png(path_of("std/cat/a0.png"), 0, 4, 3, 1);
    write_png(path_of("std/cat/a1.png"), 1, 4, 3, 1);
    write_png(path_of("std/cat/a2.PNG"), 2, 4, 3, 1);
    write_png(path_of("std/zoo/ant/b3.png"), 3, 4, 3, 1);
    write_png(path_of("std/zoo/ant/b4.png"), 4, 4, 3, 1);
    write_text(path_of("std/cat/notes.txt"), "not an image, not read");
    return top;
}

static void to_host(dla_tensor *t, void *dst, size_t bytes)
{
    assert_ok(dla_tensor_status(t));
    assert_ok(dla_tensor_to_host(t, dst, bytes));
}

/* The id of a decoded image (its first pixel). */
static int id_of(const float *img) { return (int)(img[0] * 255.0f + 0.5f); }

/* ------------------------------------------------------------ reading */

static void test_files_are_sorted_with_labels_from_their_folders(void **state)
{
    (void)state;
    dla_imds *ds;
    assert_ok(dla_imds_create(standard_tree(), NULL, &ds));
    assert_int_equal(dla_imds_num_files(ds), 5);
    assert_int_equal(dla_imds_num_categories(ds), 2);
    assert_string_equal(dla_imds_category(ds, 0), "ant");
    assert_string_equal(dla_imds_category(ds, 1), "cat");
    /* Sorted by path: cat/a0.png, cat/a1.png, cat/a2.PNG, zoo/ant/... */
    assert_non_null(strstr(dla_imds_file(ds, 0), "/std/cat/a0.png"));
    assert_non_null(strstr(dla_imds_file(ds, 2), "/std/cat/a2.PNG"));
    assert_non_null(strstr(dla_imds_file(ds, 4), "/std/zoo/ant/b4.png"));
    int want[5] = {1, 1, 1, 0, 0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(dla_imds_label(ds, i), want[i]);
    int64_t counts[2];
    assert_ok(dla_imds_count_each_label(ds, counts));
    assert_int_equal(counts[0], 2);
    assert_int_equal(counts[1], 3);
    int64_t size[3];
    dla_imds_image_size(ds, size);
    assert_int_equal(size[0], 4);
    assert_int_equal(size[1], 3);
    assert_int_equal(size[2], 1);
    dla_tensor *lab = dla_imds_labels(ds);
    int32_t l[5];
    to_host(lab, l, sizeof l);
    assert_string_equal(dla_tensor_format(lab), "CB");
    for (int i = 0; i < 5; i++)
        assert_int_equal(l[i], want[i]);
    dla_tensor_release(lab);
    dla_imds_free(ds);
}

/* A top folder named "." or ".." (or ending in one) labels its own files,
 * with top_folder_only, by the folder's real name, as MATLAB's full paths
 * do: they were labelled "." and "..", a class no folder is called. */
static void test_a_dot_top_folder_labels_by_its_real_name(void **state)
{
    (void)state;
    fresh("shoes");
    write_png(path_of("shoes/s0.png"), 0, 4, 3, 1);
    write_png(path_of("shoes/s1.png"), 1, 4, 3, 1);
    mkdirs(path_of("shoes/sub"));
    char here[1024];
    assert_non_null(getcwd(here, sizeof here));
    assert_int_equal(chdir(path_of("shoes")), 0);
    const char *tops[] = {".", "./", "sub/..", "sub/../"};
    for (int i = 0; i < 4; i++) {
        dla_imds *ds;
        assert_ok(dla_imds_create(tops[i], &(dla_imds_options){.top_folder_only = 1}, &ds));
        assert_int_equal(dla_imds_num_files(ds), 2);
        assert_int_equal(dla_imds_num_categories(ds), 1);
        assert_string_equal(dla_imds_category(ds, 0), "shoes");
        dla_imds_free(ds);
    }
    /* From below: ".." is shoes too. */
    assert_int_equal(chdir("sub"), 0);
    dla_imds *ds;
    assert_ok(dla_imds_create("..", &(dla_imds_options){.top_folder_only = 1}, &ds));
    assert_string_equal(dla_imds_category(ds, 0), "shoes");
    dla_imds_free(ds);
    assert_int_equal(chdir(here), 0);
}

static void test_read_gives_height_first_pixels_in_read_size_batches(void **state)
{
    (void)state;
    dla_imds *ds;
    assert_ok(dla_imds_create(standard_tree(), &(dla_imds_options){.read_size = 2}, &ds));
    int batches = 0, seen = 0;
    while (dla_imds_hasdata(ds)) {
        dla_tensor *x, *t;
        assert_ok(dla_imds_read(ds, &x, &t));
        int64_t n = dla_tensor_dim(x, 4);
        assert_int_equal(n, batches < 2 ? 2 : 1);
        assert_string_equal(dla_tensor_format(x), "SSCB");
        assert_int_equal(dla_tensor_dtype(x), DLA_F32);
        float px[2 * 12];
        int32_t lab[2];
        to_host(x, px, sizeof(float) * 12 * (size_t)n);
        to_host(t, lab, sizeof(int32_t) * (size_t)n);
        for (int64_t k = 0; k < n; k++) {
            int id = seen + (int)k; /* sorted order is the id order here */
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 3; c++)
                    assert_true(px[k * 12 + r + 4 * c] == (float)(pix(id, r, c, 0) / 255.0));
            assert_int_equal(lab[k], id < 3 ? 1 : 0);
        }
        seen += (int)n;
        batches++;
        dla_tensor_release(x);
        dla_tensor_release(t);
    }
    assert_int_equal(batches, 3);
    dla_tensor *x;
    assert_int_equal(dla_imds_read(ds, &x, NULL), DLA_ERR_STATE);
    assert_null(x);
    dla_imds_reset(ds);
    assert_true(dla_imds_hasdata(ds));
    dla_imds_free(ds);
}

/* Inside a scope, with the labels not asked for: the images belong to the
 * scope and nothing is released twice (the labels made meanwhile were once
 * delivered to the scope and then released by hand, a misuse logged per
 * read). */
static void test_reads_in_a_scope_without_labels_release_nothing_twice(void **state)
{
    (void)state;
    dla_imds *ds;
    assert_ok(dla_imds_create(standard_tree(), &(dla_imds_options){.read_size = 2}, &ds));
    dla_clear_error();
    while (dla_imds_hasdata(ds)) {
        dla_scope_begin();
        dla_tensor *x;
        assert_ok(dla_imds_read(ds, &x, NULL));
        assert_int_equal(dla_tensor_status(x), DLA_OK);
        dla_scope_end();
    }
    dla_scope_begin();
    dla_tensor *x;
    assert_ok(dla_imds_read_files(ds, 1, (int64_t[]){0}, &x, NULL));
    dla_scope_end();
    if (dla_last_status() != DLA_OK)
        fail_msg("a misuse was recorded: %s", dla_last_error());
    dla_imds_free(ds);
}

static void test_readall_uint8_and_jpeg_and_rgb(void **state)
{
    (void)state;
    const char *top = fresh("mixed");
    mkdirs(path_of("mixed/j"));
    write_jpeg(path_of("mixed/j/x.jpg"), 8, 8, 100);
    write_jpeg(path_of("mixed/j/y.JPEG"), 8, 8, 200);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    dla_tensor *x, *t;
    assert_ok(dla_imds_readall(ds, &x, &t));
    assert_int_equal(dla_tensor_dim(x, 4), 2);
    unsigned char px[2 * 64];
    to_host(x, px, sizeof px);
    for (int i = 0; i < 64; i++) {
        assert_true(abs(px[i] - 100) <= 2);
        assert_true(abs(px[64 + i] - 200) <= 2);
    }
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_imds_free(ds);

    top = fresh("rgb");
    mkdirs(path_of("rgb/c"));
    write_png(path_of("rgb/c/p.png"), 5, 2, 3, 3);
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    assert_ok(dla_imds_readall(ds, &x, NULL));
    assert_int_equal(dla_tensor_dim(x, 3), 3);
    unsigned char rgb[18];
    to_host(x, rgb, sizeof rgb);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++)
                assert_int_equal(rgb[r + 2 * c + 6 * k], pix(5, r, c, k));
    dla_tensor_release(x);
    dla_imds_free(ds);
}

/* The fuzzer's seed images (fuzz/seeds/image): the colour types and
 * codings the decoder converts (palette, alpha, interlaced PNG;
 * progressive and RGB JPEG), each read at its size and channel count. */
static void test_every_coding_of_the_fuzz_seeds_reads(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int h, w, c;
    } seeds[] = {
        {"gray28.png", 28, 28, 1},       {"rgb.png", 5, 6, 3},  {"rgba_interlaced.png", 7, 9, 3},
        {"palette.png", 8, 8, 3},        {"gray_alpha.png", 5, 5, 1}, {"gray.jpg", 7, 9, 1},
        {"rgb_progressive.jpg", 12, 16, 3},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        const char *top = fresh("seed");
        mkdirs(path_of("seed/c"));
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cp '%s/fuzz/seeds/image/%s' '%s/c/'", DLA_TEST_SRCDIR,
                 seeds[i].name, top);
        assert_int_equal(system(cmd), 0);
        dla_imds *ds;
        assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
        dla_tensor *x;
        assert_ok(dla_imds_readall(ds, &x, NULL));
        if (dla_tensor_dim(x, 1) != seeds[i].h || dla_tensor_dim(x, 2) != seeds[i].w ||
            dla_tensor_dim(x, 3) != seeds[i].c)
            fail_msg("%s: read as %lldx%lldx%lld", seeds[i].name, (long long)dla_tensor_dim(x, 1),
                     (long long)dla_tensor_dim(x, 2), (long long)dla_tensor_dim(x, 3));
        dla_tensor_release(x);
        dla_imds_free(ds);
    }
}

static void test_shuffle_is_seeded_and_partitions_cover_every_file_once(void **state)
{
    (void)state;
    const char *top = standard_tree();
    dla_imds *a, *b;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.seed = 7}, &a));
    assert_ok(dla_imds_create(top, &(dla_imds_options){.seed = 7}, &b));
    int moved = 0;
    for (int round = 0; round < 3; round++) {
        dla_imds_shuffle(a);
        dla_imds_shuffle(b);
        int seen[5] = {0};
        for (int i = 0; i < 5; i++) {
            assert_string_equal(dla_imds_file(a, i), dla_imds_file(b, i));
            /* The label goes with its file. */
            assert_int_equal(dla_imds_label(a, i), strstr(dla_imds_file(a, i), "/cat/") ? 1 : 0);
            const char *f = dla_imds_file(a, i);
            int id = f[strlen(f) - 5] - '0';
            seen[id]++;
            moved |= id != i;
        }
        for (int i = 0; i < 5; i++)
            assert_int_equal(seen[i], 1);
    }
    assert_true(moved);
    /* Partitions of the shuffled order: sizes 2, 2, 1, every file once. */
    int seen[5] = {0};
    for (int p = 0; p < 3; p++) {
        dla_imds *part;
        assert_ok(dla_imds_partition(a, 3, p, &part));
        assert_int_equal(dla_imds_num_files(part), p < 2 ? 2 : 1);
        for (int64_t i = 0; i < dla_imds_num_files(part); i++) {
            const char *f = dla_imds_file(part, i);
            seen[f[strlen(f) - 5] - '0']++;
        }
        dla_imds_free(part);
    }
    for (int i = 0; i < 5; i++)
        assert_int_equal(seen[i], 1);
    dla_imds *bad;
    assert_int_equal(dla_imds_partition(a, 3, 3, &bad), DLA_ERR_INVALID_ARGUMENT);
    assert_null(bad);
    dla_imds_free(a);
    dla_imds_free(b);
}

static void test_split_each_label_takes_a_share_of_every_class(void **state)
{
    (void)state;
    const char *top = fresh("split");
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 10; i++) {
            mkdirs(path_of("split/c%d", k));
            write_png(path_of("split/c%d/%02d.png", k, i), k * 10 + i, 2, 2, 1);
        }
    dla_imds *ds, *s[2], *t[2], *u[3];
    assert_ok(dla_imds_create(top, NULL, &ds));
    assert_ok(dla_imds_split_each_label(ds, 1, (double[]){0.7}, "randomized", 3, s));
    assert_int_equal(dla_imds_num_files(s[0]), 21);
    assert_int_equal(dla_imds_num_files(s[1]), 9);
    int64_t c0[3], c1[3];
    dla_imds_count_each_label(s[0], c0);
    dla_imds_count_each_label(s[1], c1);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(c0[k], 7);
        assert_int_equal(c1[k], 3);
    }
    /* Disjoint, the same with the same seed, and randomized: not simply
     * the first 7 of each class. */
    assert_ok(dla_imds_split_each_label(ds, 1, (double[]){0.7}, "randomized", 3, t));
    int first7 = 1;
    for (int64_t i = 0; i < 21; i++) {
        assert_string_equal(dla_imds_file(s[0], i), dla_imds_file(t[0], i));
        const char *f = dla_imds_file(s[0], i);
        first7 &= f[strlen(f) - 5] - '0' < 7 && f[strlen(f) - 6] == '0';
        for (int64_t j = 0; j < 9; j++)
            assert_string_not_equal(f, dla_imds_file(s[1], j));
    }
    assert_false(first7);
    /* Fractions as MATLAB's round(cumsum(count * p)): 0.25 of 10 is
     * 2.5, rounded to 3 (it was floored to 2), and 0.25, 0.25 end at 3 and
     * 5, so 3, 2 and 5 (floored apart: 2, 2 and 6). */
    assert_ok(dla_imds_split_each_label(ds, 2, (double[]){0.25, 0.25}, NULL, 0, u));
    int64_t want[3] = {3, 2, 5};
    for (int i = 0; i < 3; i++) {
        int64_t c[3];
        dla_imds_count_each_label(u[i], c);
        for (int k = 0; k < 3; k++)
            assert_int_equal(c[k], want[i]);
        dla_imds_free(u[i]);
    }
    /* Counts, in order: 2 and 3 per class, the rest last. */
    assert_ok(dla_imds_split_each_label(ds, 2, (double[]){2, 3}, NULL, 0, u));
    assert_int_equal(dla_imds_num_files(u[0]), 6);
    assert_int_equal(dla_imds_num_files(u[1]), 9);
    assert_int_equal(dla_imds_num_files(u[2]), 15);
    assert_non_null(strstr(dla_imds_file(u[0], 0), "c0/00.png"));
    assert_non_null(strstr(dla_imds_file(u[0], 1), "c0/01.png"));
    for (int i = 0; i < 3; i++)
        dla_imds_free(u[i]);
    /* More than a class has names the class. */
    assert_int_equal(dla_imds_split_each_label(ds, 1, (double[]){11}, NULL, 0, u),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"c0\""));
    assert_null(u[0]);
    assert_int_equal(dla_imds_split_each_label(ds, 1, (double[]){1.5}, NULL, 0, u),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_imds_split_each_label(ds, 1, (double[]){0.5}, "random", 0, u),
                     DLA_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 2; i++) {
        dla_imds_free(s[i]);
        dla_imds_free(t[i]);
    }
    dla_imds_free(ds);
}

/* ------------------------------------------------------------ augmentation */

static void read_u8(dla_imds *ds, unsigned char *px, size_t bytes)
{
    dla_tensor *x;
    assert_ok(dla_imds_readall(ds, &x, NULL));
    to_host(x, px, bytes);
    dla_tensor_release(x);
}

static void test_augmented_datastore_resizes_reflects_rotates_and_translates(void **state)
{
    (void)state;
    const char *top = fresh("aug");
    mkdirs(path_of("aug/c"));
    write_png(path_of("aug/c/0.png"), 1, 5, 5, 1);
    dla_imds *ds, *a;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    unsigned char plain[25], out[25];
    read_u8(ds, plain, sizeof plain);
    /* The same size and nothing random: the image unchanged. */
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, NULL, 0, &a));
    read_u8(a, out, sizeof out);
    assert_memory_equal(plain, out, 25);
    dla_imds_free(a);
    /* A rotation of exactly 180 degrees is both reflections. */
    dla_image_augmenter g = {.rand_rotation = {180, 180}};
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a));
    read_u8(a, out, sizeof out);
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 5; c++)
            assert_int_equal(out[r + 5 * c], plain[(4 - r) + 5 * (4 - c)]);
    dla_imds_free(a);
    /* A translation of one pixel right: column c comes from c - 1; column 0
     * from outside, 0. */
    g = (dla_image_augmenter){.rand_x_translation = {1, 1}};
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a));
    read_u8(a, out, sizeof out);
    for (int r = 0; r < 5; r++) {
        assert_int_equal(out[r], 0);
        for (int c = 1; c < 5; c++)
            assert_int_equal(out[r + 5 * c], plain[r + 5 * (c - 1)]);
    }
    dla_imds_free(a);
    /* RandXReflection: over many reads, both the image and its mirror,
     * nothing else; the same sequence again with the same seed. */
    g = (dla_image_augmenter){.rand_x_reflection = 1};
    dla_imds *a2;
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 9, &a));
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 9, &a2));
    int mirrored = 0, same = 0;
    for (int i = 0; i < 40; i++) {
        unsigned char o2[25];
        read_u8(a, out, sizeof out);
        read_u8(a2, o2, sizeof o2);
        assert_memory_equal(out, o2, 25);
        int is_plain = !memcmp(out, plain, 25), is_mirror = 1;
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 5; c++)
                is_mirror &= out[r + 5 * c] == plain[r + 5 * (4 - c)];
        assert_true(is_plain || is_mirror);
        mirrored += is_mirror;
        same += is_plain;
    }
    assert_true(mirrored > 5 && same > 5);
    dla_imds_free(a);
    dla_imds_free(a2);
    /* Resize 5x5 to 10x15, with a scale and rotation range: the size. */
    g = (dla_image_augmenter){.rand_rotation = {-10, 10}, .rand_scale = {0.9, 1.1}};
    assert_ok(dla_augimds_create((int64_t[]){10, 15}, ds, &g, 1, &a));
    dla_tensor *x;
    assert_ok(dla_imds_readall(a, &x, NULL));
    assert_int_equal(dla_tensor_dim(x, 1), 10);
    assert_int_equal(dla_tensor_dim(x, 2), 15);
    dla_tensor_release(x);
    dla_imds_free(a);
    g = (dla_image_augmenter){.rand_scale = {2, 1}};
    assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 1, &a), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "rand_scale"));
    /* Ranges that are not finite, or whose width is not (hi - lo
     * overflows): refused. They were taken, and a rotation drawn from
     * [0, inf] gave images of NaN, a scale from [1, inf] images of one
     * gray, without a word. */
    const dla_image_augmenter unbounded[] = {
        {.rand_rotation = {0, INFINITY}},
        {.rand_rotation = {-INFINITY, 0}},
        {.rand_scale = {1, INFINITY}},
        {.rand_x_translation = {-1e308, 1e308}},
        {.rand_y_translation = {NAN, NAN}},
    };
    const char *field[] = {"rand_rotation", "rand_rotation", "rand_scale", "rand_x_translation",
                           "rand_y_translation"};
    for (int i = 0; i < 5; i++) {
        a = NULL;
        assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, ds, &unbounded[i], 1, &a),
                         DLA_ERR_INVALID_ARGUMENT);
        assert_null(a);
        assert_non_null(strstr(dla_last_error(), field[i]));
        assert_non_null(strstr(dla_last_error(), "finite"));
    }
    /* An augmented datastore of an augmented one: refused (MATLAB's
     * augmentedImageDatastore takes an image datastore). It was taken and
     * silently dropped the first one's resize and transforms: a 10x10
     * resize then a reflection read 5x5 images, reflected only. */
    dla_imds *a1;
    assert_ok(dla_augimds_create((int64_t[]){10, 10}, ds, NULL, 1, &a1));
    a = NULL;
    g = (dla_image_augmenter){.rand_x_reflection = 1};
    assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, a1, &g, 1, &a), DLA_ERR_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(strstr(dla_last_error(), "augmented datastore already"));
    /* Its subsets and partitions are augmented too. */
    dla_imds *part;
    assert_ok(dla_imds_partition(a1, 1, 0, &part));
    assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, part, &g, 1, &a), DLA_ERR_INVALID_ARGUMENT);
    dla_imds_free(part);
    dla_imds_free(a1);
    dla_imds_free(ds);
}

/* An upsize alone leaves a constant image constant: the resize replicates
 * the edge (as imresize), and the fill is only for points a transform
 * moves out of the image (the border of a 4x4 image of 200 read at 8x8
 * was 150, its corners 113). */
/* The directions docs/data.md states, as displayed (row 1 at the top):
 * +90 degrees turns the image counterclockwise, as MATLAB's imrotate (its
 * right column becomes its top row: the top-right corner goes to the
 * top-left), +x moves it right, +y down. A rotation of [90 90] turned it
 * clockwise (the left column on top). */
static void test_augmentation_directions_are_as_documented(void **state)
{
    (void)state;
    const char *top = fresh("dirs");
    mkdirs(path_of("dirs/c"));
    unsigned char rows[9];
    for (int i = 0; i < 9; i++)
        rows[i] = (unsigned char)(10 * (i + 1)); /* row r, column c: 10 * (3r + c + 1) */
    write_png_raw(path_of("dirs/c/a.png"), 3, 3, 8, PNG_COLOR_TYPE_GRAY, rows, 3, NULL, 0, NULL, 0,
                  NULL);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    const dla_image_augmenter g[3] = {{.rand_rotation = {90, 90}},
                                      {.rand_x_translation = {1, 1}},
                                      {.rand_y_translation = {1, 1}}};
    for (int t = 0; t < 3; t++) {
        dla_imds *a;
        unsigned char px[9]; /* column-major: row r, column c at r + 3c */
        assert_ok(dla_augimds_create((int64_t[]){3, 3}, ds, &g[t], 0, &a));
        read_u8(a, px, sizeof px);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                int want = t == 0   ? rows[3 * c + (2 - r)]
                           : t == 1 ? (c ? rows[3 * r + c - 1] : 0)
                                    : (r ? rows[3 * (r - 1) + c] : 0);
                if (px[r + 3 * c] != want)
                    fail_msg("transform %d: row %d, column %d is %d, not %d", t, r, c,
                             px[r + 3 * c], want);
            }
        dla_imds_free(a);
    }
    dla_imds_free(ds);
}

static dla_imds *one_image(const char *name, int h, int w, int ch, const unsigned char *v,
                           dla_dtype dtype);

/* 2x2 matrices for row vectors, [x y] * m, as MATLAB's affine2d. */
typedef struct { double a[2][2]; } m2;
static m2 m2_mul(m2 p, m2 q)
{
    m2 r;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            r.a[i][j] = p.a[i][0] * q.a[0][j] + p.a[i][1] * q.a[1][j];
    return r;
}

/* The composition of imageDataAugmenter's transforms, as MathWorks'
 * imageDataAugmenter.m builds its affine matrix for row vectors
 * (rotation * shear * scale * reflection * translation, each about the
 * centre, so the rotation acts first), applied by mapping each output
 * pixel back through that matrix's inverse. The transforms are chosen so
 * that the inverse maps pixel centres onto pixel centres. Before, the
 * library composed them the other way round (reflection, scale, x shear,
 * y shear, rotation): a 90-degree turn with a half x scale halved the
 * image's height as displayed rather than its width, and two shears of 45
 * degrees, which MATLAB's matrix flattens onto a line, gave an image. */
static void test_augmentation_composes_transforms_in_matlab_order(void **state)
{
    (void)state;
    unsigned char in[25];
    for (int i = 0; i < 25; i++)
        in[i] = (unsigned char)(5 + 9 * i); /* row r, column c at 5r + c */
    dla_imds *ds = one_image("order", 5, 5, 1, in, DLA_U8);
    const m2 rot90 = {{{0, -1}, {1, 0}}};   /* [cosd -sind; sind cosd] at 90 */
    const m2 xshear45 = {{{1, 0}, {1, 1}}}; /* [1 tand(YShear); tand(XShear) 1] */
    const m2 xhalf = {{{0.5, 0}, {0, 1}}};
    const m2 xflip = {{{-1, 0}, {0, 1}}};
    const m2 eye = {{{1, 0}, {0, 1}}};
    struct {
        dla_image_augmenter g;
        m2 t[2];   /* MATLAB's matrix, without and with the x reflection */
        double tx; /* the x translation */
    } cases[] = {
        {{.rand_rotation = {90, 90}, .rand_x_scale = {0.5, 0.5}, .fill_value = {1}},
         {m2_mul(rot90, xhalf), m2_mul(rot90, xhalf)}, 0},
        {{.rand_rotation = {90, 90}, .rand_x_shear = {45, 45}, .rand_x_translation = {1, 1},
          .fill_value = {2}},
         {m2_mul(rot90, xshear45), m2_mul(rot90, xshear45)}, 1},
        {{.rand_rotation = {90, 90}, .rand_x_reflection = 1, .fill_value = {3}},
         {rot90, m2_mul(rot90, xflip)}, 0},
        {{.rand_x_shear = {45, 45}, .rand_y_shear = {45, 45}, .fill_value = {4}}, {eye, eye}, 0},
    };
    for (int k = 0; k < 4; k++) {
        dla_imds *a;
        assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &cases[k].g, 3, &a));
        int seen[2] = {0, 0};
        for (int read = 0; read < (cases[k].g.rand_x_reflection ? 24 : 1); read++) {
            unsigned char out[25];
            read_u8(a, out, sizeof out);
            int match[2] = {1, 1};
            for (int f = 0; f < 2; f++) {
                m2 t = cases[k].t[f];
                double det = t.a[0][0] * t.a[1][1] - t.a[0][1] * t.a[1][0];
                for (int yo = 0; yo < 5; yo++)
                    for (int xo = 0; xo < 5; xo++) {
                        int want = (int)cases[k].g.fill_value[0];
                        if (k != 3) { /* the two 45-degree shears: singular, all fill */
                            double dx = xo - 2 - cases[k].tx, dy = yo - 2;
                            /* [u v] = [dx dy] * inv(t) */
                            double u = (dx * t.a[1][1] - dy * t.a[1][0]) / det;
                            double v = (-dx * t.a[0][1] + dy * t.a[0][0]) / det;
                            int x = (int)lround(u) + 2, y = (int)lround(v) + 2;
                            assert_true(fabs(u - lround(u)) < 1e-9 && fabs(v - lround(v)) < 1e-9);
                            if (x >= 0 && x < 5 && y >= 0 && y < 5)
                                want = in[5 * y + x];
                        }
                        match[f] &= out[yo + 5 * xo] == want;
                    }
            }
            if (!match[0] && !match[1])
                fail_msg("case %d, read %d: neither MATLAB's transform nor its reflected one", k,
                         read);
            seen[0] |= match[0];
            seen[1] |= match[1];
        }
        if (cases[k].g.rand_x_reflection)
            assert_true(seen[0] && seen[1]);
        dla_imds_free(a);
    }
    dla_imds_free(ds);
}

/* A gray PNG of h x w from v (row-major), in a fresh folder name/c; the
 * datastore over it, read as dtype. */
static dla_imds *one_image(const char *name, int h, int w, int ch, const unsigned char *v,
                           dla_dtype dtype)
{
    const char *top = fresh(name);
    char sub[600];
    snprintf(sub, sizeof sub, "%s/c", top);
    mkdirs(sub);
    snprintf(sub, sizeof sub, "%s/c/a.png", top);
    write_png_raw(sub, h, w, 8, ch == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, v,
                  (size_t)w * (size_t)ch, NULL, 0, NULL, 0, NULL);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = dtype}, &ds));
    return ds;
}

/* Shears, with a rotation before them and a translation after them
 * (MATLAB's order), checked by mapping every input pixel forward (the
 * library maps the output back): about the centre (2, 2) of a 5x5 image,
 * a rotation of 90 turns (x, y) to (y, -x) (counterclockwise as
 * displayed), an x shear of 45 degrees moves x by y (y down), then +1 in
 * x. Shear and rotation by
 * whole steps map pixel centres onto pixel centres, so every output
 * pixel is one input pixel or the fill; the fill value is what comes in
 * from outside. */
static void test_shear_and_fill_value_map_pixels_as_documented(void **state)
{
    (void)state;
    unsigned char in[25];
    for (int i = 0; i < 25; i++)
        in[i] = (unsigned char)(5 + 9 * i); /* row r, column c at 5r + c */
    dla_imds *ds = one_image("shear", 5, 5, 1, in, DLA_U8);
    enum { XS, YS, XS_ROT_T };
    const dla_image_augmenter g[] = {
        [XS] = {.rand_x_shear = {45, 45}, .fill_value = {77}},
        [YS] = {.rand_y_shear = {-45, -45}, .fill_value = {3}},
        [XS_ROT_T] = {.rand_x_shear = {45, 45}, .rand_rotation = {90, 90},
                      .rand_x_translation = {1, 1}, .fill_value = {250}},
    };
    for (int t = 0; t < 3; t++) {
        dla_imds *a;
        unsigned char out[25], want[25];
        memset(want, (int)g[t].fill_value[0], sizeof want);
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 5; x++) {
                int u = x - 2, v = y - 2; /* about the centre */
                if (t == XS)
                    u += v;
                if (t == YS)
                    v -= u;
                if (t == XS_ROT_T) { /* MATLAB's order: the rotation, then the shear */
                    int ru = v, rv = -u;
                    u = ru + rv + 1;
                    v = rv;
                }
                int xo = u + 2, yo = v + 2;
                if (xo >= 0 && xo < 5 && yo >= 0 && yo < 5)
                    want[yo + 5 * xo] = in[5 * y + x];
            }
        assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g[t], 0, &a));
        read_u8(a, out, sizeof out);
        for (int i = 0; i < 25; i++)
            if (out[i] != want[i])
                fail_msg("transform %d: row %d, column %d is %d, not %d", t, i % 5, i / 5, out[i],
                         want[i]);
        dla_imds_free(a);
    }
    /* Shears of a range: drawn per image, the same for the same seed. */
    dla_image_augmenter r = {.rand_x_shear = {-30, 30}, .rand_y_shear = {-20, 20}};
    dla_imds *a1, *a2;
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &r, 5, &a1));
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &r, 5, &a2));
    unsigned char o1[25], o2[25], first[25];
    int differ = 0;
    for (int i = 0; i < 6; i++) {
        read_u8(a1, o1, sizeof o1);
        read_u8(a2, o2, sizeof o2);
        assert_memory_equal(o1, o2, 25);
        if (i == 0)
            memcpy(first, o1, 25);
        differ |= memcmp(first, o1, 25) != 0;
    }
    assert_true(differ);
    dla_imds_free(a1);
    dla_imds_free(a2);
    /* Angles of +-90 and beyond (an infinite tangent), fill values that
     * are not finite, a fill per channel for a gray image, and three fill
     * values without fill_per_channel: refused. */
    const dla_image_augmenter refused[] = {
        {.rand_x_shear = {-90, 0}},  {.rand_y_shear = {10, 90}},
        {.rand_x_shear = {-95, -91}}, {.fill_value = {NAN}},
        {.fill_value = {1, 2, 3}, .fill_per_channel = 1},
        {.fill_value = {1, 2, 3}}, /* would have filled every channel with 1 */
    };
    const char *why[] = {"rand_x_shear", "rand_y_shear", "(-90, 90)", "fill_value[0]",
                         "fill_per_channel", "without fill_per_channel"};
    for (int i = 0; i < 6; i++) {
        dla_imds *a = NULL;
        assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, ds, &refused[i], 0, &a),
                         DLA_ERR_INVALID_ARGUMENT);
        assert_null(a);
        if (!strstr(dla_last_error(), why[i]))
            fail_msg("case %d: \"%s\" does not name %s", i, dla_last_error(), why[i]);
    }
    dla_imds_free(ds);
}

/* RandXScale and RandYScale scale the width and the height apart, about
 * the centre, bilinear; RandScale overrides both (MATLAB ignores them
 * then). A fill value per channel fills each channel with its own. */
static void test_x_and_y_scales_apart_and_fill_per_channel(void **state)
{
    (void)state;
    unsigned char in[25];
    for (int i = 0; i < 25; i++)
        in[i] = (unsigned char)(200 - 7 * i);
    dla_imds *ds = one_image("xyscale", 5, 5, 1, in, DLA_F32);
    float out[25];
    /* x doubled: output column xo comes from x = 2 + (xo - 2) / 2, half
     * way between two columns for odd xo - 2; rows unmoved. */
    dla_image_augmenter g = {.rand_x_scale = {2, 2}};
    dla_imds *a;
    dla_tensor *t;
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a));
    assert_ok(dla_imds_readall(a, &t, NULL));
    to_host(t, out, sizeof out);
    dla_tensor_release(t);
    dla_imds_free(a);
    for (int y = 0; y < 5; y++)
        for (int xo = 0; xo < 5; xo++) {
            double x = 2 + (xo - 2) / 2.0;
            int lo = (int)floor(x), hi = (int)ceil(x);
            double want = (in[5 * y + lo] + in[5 * y + hi]) / 2.0 / 255.0;
            tu_assert_near(out[y + 5 * xo], want, 1e-6);
        }
    /* y halved: output row yo from y = 2 + 2 (yo - 2): rows 0 and 4 from
     * 2 rows outside the image, the fill (0); columns unmoved. */
    g = (dla_image_augmenter){.rand_y_scale = {0.5, 0.5}};
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a));
    assert_ok(dla_imds_readall(a, &t, NULL));
    to_host(t, out, sizeof out);
    dla_tensor_release(t);
    dla_imds_free(a);
    for (int yo = 0; yo < 5; yo++)
        for (int x = 0; x < 5; x++) {
            int y = 2 + 2 * (yo - 2);
            double want = y < 0 || y > 4 ? 0 : in[5 * y + x] / 255.0;
            tu_assert_near(out[yo + 5 * x], want, 1e-6);
        }
    /* RandScale set: RandXScale and RandYScale are not used. */
    g = (dla_image_augmenter){.rand_scale = {1, 1}, .rand_x_scale = {2, 2}, .rand_y_scale = {3, 3}};
    assert_ok(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a));
    assert_ok(dla_imds_readall(a, &t, NULL));
    to_host(t, out, sizeof out);
    dla_tensor_release(t);
    dla_imds_free(a);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++)
            tu_assert_near(out[y + 5 * x], in[5 * y + x] / 255.0, 1e-6);
    g = (dla_image_augmenter){.rand_y_scale = {0, 2}};
    a = NULL;
    assert_int_equal(dla_augimds_create((int64_t[]){5, 5}, ds, &g, 0, &a), DLA_ERR_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(strstr(dla_last_error(), "rand_y_scale"));
    dla_imds_free(ds);

    /* RGB, moved one pixel right with a fill per channel: column 0 is the
     * fill, channel k's own; the rest the image moved. */
    unsigned char rgb[2 * 3 * 3];
    for (int i = 0; i < 18; i++)
        rgb[i] = (unsigned char)(100 + i);
    ds = one_image("fillrgb", 2, 3, 3, rgb, DLA_U8);
    g = (dla_image_augmenter){.rand_x_translation = {1, 1}, .fill_value = {10, 20, 30},
                              .fill_per_channel = 1};
    unsigned char o[18];
    assert_ok(dla_augimds_create((int64_t[]){2, 3}, ds, &g, 0, &a));
    read_u8(a, o, sizeof o);
    for (int k = 0; k < 3; k++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 3; x++) {
                int want = x == 0 ? 10 * (k + 1) : rgb[(y * 3 + x - 1) * 3 + k];
                assert_int_equal(o[y + 2 * x + 6 * k], want);
            }
    dla_imds_free(a);
    dla_imds_free(ds);
}

/* OutputSizeMode: "centercrop" takes the output size from the middle
 * (first row and column floor((H - h) / 2)), after the transform;
 * "randcrop" from a place drawn per image among all that fit, the same
 * for the same seed, reaching every place; an image smaller than the
 * output size is refused naming the file and both sizes. */
static void test_output_size_mode_crops_without_resizing(void **state)
{
    (void)state;
    unsigned char in[35]; /* 5 rows x 7 columns */
    for (int i = 0; i < 35; i++)
        in[i] = (unsigned char)(3 + 7 * i);
    dla_imds *ds = one_image("crop", 5, 7, 1, in, DLA_U8);
    dla_imds *a;
    unsigned char out[12];
    assert_ok(dla_augimds_create_opts((int64_t[]){3, 4}, ds, NULL, 0,
                                      &(dla_augimds_options){.output_size_mode = "centercrop"},
                                      &a));
    int64_t size[3];
    dla_imds_image_size(a, size);
    assert_int_equal(size[0], 3);
    assert_int_equal(size[1], 4);
    read_u8(a, out, sizeof out);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            assert_int_equal(out[y + 3 * x], in[7 * (1 + y) + 1 + x]);
    dla_imds_free(a);
    /* Moved right by one about the whole image's centre, then cropped:
     * the crop's column x is the image's column x (1 + x - 1). */
    dla_image_augmenter g = {.rand_x_translation = {1, 1}};
    assert_ok(dla_augimds_create_opts((int64_t[]){3, 4}, ds, &g, 0,
                                      &(dla_augimds_options){.output_size_mode = "centercrop"},
                                      &a));
    read_u8(a, out, sizeof out);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            assert_int_equal(out[y + 3 * x], in[7 * (1 + y) + x]);
    dla_imds_free(a);
    /* randcrop: 3 x 4 places of a 3x4 crop in 5x7. */
    dla_imds *a2;
    const dla_augimds_options rc = {.output_size_mode = "randcrop"};
    assert_ok(dla_augimds_create_opts((int64_t[]){3, 4}, ds, NULL, 11, &rc, &a));
    assert_ok(dla_augimds_create_opts((int64_t[]){3, 4}, ds, NULL, 11, &rc, &a2));
    int seen[3][4] = {{0}};
    for (int i = 0; i < 200; i++) {
        unsigned char o2[12];
        read_u8(a, out, sizeof out);
        read_u8(a2, o2, sizeof o2);
        assert_memory_equal(out, o2, 12);
        int found = 0;
        for (int y0 = 0; y0 < 3 && !found; y0++)
            for (int x0 = 0; x0 < 4 && !found; x0++) {
                int match = 1;
                for (int y = 0; y < 3; y++)
                    for (int x = 0; x < 4; x++)
                        match &= out[y + 3 * x] == in[7 * (y0 + y) + x0 + x];
                if (match) {
                    seen[y0][x0]++;
                    found = 1;
                }
            }
        assert_true(found);
    }
    for (int y0 = 0; y0 < 3; y0++)
        for (int x0 = 0; x0 < 4; x0++)
            if (!seen[y0][x0])
                fail_msg("randcrop never took the crop at row %d, column %d", y0, x0);
    dla_imds_free(a);
    dla_imds_free(a2);
    /* The whole image as the output size: every crop is the image. */
    assert_ok(dla_augimds_create_opts((int64_t[]){5, 7}, ds, NULL, 3, &rc, &a));
    unsigned char whole[35];
    read_u8(a, whole, sizeof whole);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 7; x++)
            assert_int_equal(whole[y + 5 * x], in[7 * y + x]);
    dla_imds_free(a);
    /* Smaller than the output size (6 rows of 5): refused, naming both. */
    const char *modes[] = {"centercrop", "randcrop"};
    for (int m = 0; m < 2; m++) {
        dla_tensor *x = NULL;
        assert_ok(dla_augimds_create_opts((int64_t[]){6, 4}, ds, NULL, 0,
                                          &(dla_augimds_options){.output_size_mode = modes[m]},
                                          &a));
        assert_int_equal(dla_imds_readall(a, &x, NULL), DLA_ERR_FORMAT);
        assert_null(x);
        assert_non_null(strstr(dla_last_error(), "crop/c/a.png"));
        assert_non_null(strstr(dla_last_error(), "5x7"));
        assert_non_null(strstr(dla_last_error(), "6x4"));
        assert_non_null(strstr(dla_last_error(), modes[m]));
        dla_imds_free(a);
    }
    a = NULL;
    assert_int_equal(dla_augimds_create_opts((int64_t[]){3, 4}, ds, NULL, 0,
                                             &(dla_augimds_options){.output_size_mode = "crop"},
                                             &a),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(
        strstr(dla_last_error(), "dla_augimds_create_opts: option output_size_mode \"crop\""));
    assert_non_null(strstr(dla_last_error(), "randcrop"));
    dla_imds_free(ds);
}

/* ColorPreprocessing: "rgb2gray" is MATLAB's rgb2gray of the image as
 * read (uint8): R, G, B weighed by the first row of inv of the NTSC matrix
 * (0.298936021293775, 0.587043074451121, 0.114020904255103), rounded to
 * a whole 8-bit value, as augmentedImageDatastore converts before
 * augmenting; gray images are left as they are. Before, the weights were
 * 0.2989, 0.5870, 0.1140 and nothing was rounded (pure red read 76.22/255,
 * not 76/255; white 254.97/255). "gray2rgb"
 * copies a gray image's channel to three and leaves RGB images as they
 * are. Either lets a datastore mix gray and RGB files. */
static void test_color_preprocessing_mixes_gray_and_rgb(void **state)
{
    (void)state;
    const char *top = fresh("color");
    mkdirs(path_of("color/c"));
    unsigned char rgb[2 * 2 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 90, 140, 230};
    unsigned char gray[4] = {7, 70, 170, 250};
    write_png_raw(path_of("color/c/a.png"), 2, 2, 8, PNG_COLOR_TYPE_RGB, rgb, 6, NULL, 0, NULL, 0,
                  NULL);
    write_png_raw(path_of("color/c/b.png"), 2, 2, 8, PNG_COLOR_TYPE_GRAY, gray, 2, NULL, 0, NULL,
                  0, NULL);
    dla_imds *ds, *a;
    assert_ok(dla_imds_create(top, NULL, &ds));
    dla_tensor *x;
    int64_t size[3];
    float out[2 * 2 * 3 * 2];
    /* rgb2gray: one channel; a.png weighed, b.png as it is. */
    assert_ok(dla_augimds_create_opts((int64_t[]){2, 2}, ds, NULL, 0,
                                      &(dla_augimds_options){.color_preprocessing = "rgb2gray"},
                                      &a));
    dla_imds_image_size(a, size);
    assert_int_equal(size[2], 1);
    assert_ok(dla_imds_readall(a, &x, NULL));
    assert_int_equal(dla_tensor_dim(x, 3), 1);
    to_host(x, out, 8 * sizeof(float));
    dla_tensor_release(x);
    for (int y = 0; y < 2; y++)
        for (int c = 0; c < 2; c++) {
            /* MATLAB's rgb2gray(uint8(...)) of red, green, blue and
             * [90 140 230]: round(76.23), round(149.70), round(29.08),
             * round(135.32). */
            const double matlab[4] = {76, 150, 29, 135};
            tu_assert_near(out[y + 2 * c], matlab[2 * y + c] / 255.0, 1e-6);
            tu_assert_near(out[4 + y + 2 * c], gray[2 * y + c] / 255.0, 1e-6);
        }
    dla_imds_free(a);
    /* gray2rgb: three channels; a.png as it is, b.png copied. */
    assert_ok(dla_augimds_create_opts((int64_t[]){2, 2}, ds, NULL, 0,
                                      &(dla_augimds_options){.color_preprocessing = "gray2rgb"},
                                      &a));
    dla_imds_image_size(a, size);
    assert_int_equal(size[2], 3);
    assert_ok(dla_imds_readall(a, &x, NULL));
    to_host(x, out, sizeof out);
    dla_tensor_release(x);
    for (int k = 0; k < 3; k++)
        for (int y = 0; y < 2; y++)
            for (int c = 0; c < 2; c++) {
                tu_assert_near(out[y + 2 * c + 4 * k], rgb[(2 * y + c) * 3 + k] / 255.0, 1e-6);
                tu_assert_near(out[12 + y + 2 * c + 4 * k], gray[2 * y + c] / 255.0, 1e-6);
            }
    dla_imds_free(a);
    /* A fill per channel goes with gray2rgb's 3 channels, not rgb2gray's 1. */
    dla_image_augmenter g = {.fill_value = {1, 2, 3}, .fill_per_channel = 1};
    assert_ok(dla_augimds_create_opts((int64_t[]){2, 2}, ds, &g, 0,
                                      &(dla_augimds_options){.color_preprocessing = "gray2rgb"},
                                      &a));
    dla_imds_free(a);
    a = NULL;
    assert_int_equal(dla_augimds_create_opts((int64_t[]){2, 2}, ds, &g, 0,
                                             &(dla_augimds_options){.color_preprocessing =
                                                                        "rgb2gray"},
                                             &a),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(a);
    /* "none" (as NULL): the mix is refused, as without an augmentation. */
    assert_ok(dla_augimds_create_opts((int64_t[]){2, 2}, ds, NULL, 0,
                                      &(dla_augimds_options){.color_preprocessing = "none"}, &a));
    assert_int_equal(dla_imds_readall(a, &x, NULL), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "channel"));
    dla_imds_free(a);
    a = NULL;
    assert_int_equal(dla_augimds_create_opts((int64_t[]){2, 2}, ds, NULL, 0,
                                             &(dla_augimds_options){.color_preprocessing = "gray"},
                                             &a),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(a);
    assert_non_null(strstr(dla_last_error(), "\"gray\""));
    assert_non_null(strstr(dla_last_error(), "gray2rgb"));
    dla_imds_free(ds);
}

static void test_augmented_resize_replicates_the_edge(void **state)
{
    (void)state;
    const char *top = fresh("rsz");
    mkdirs(path_of("rsz/c"));
    unsigned char flat[16];
    memset(flat, 200, sizeof flat);
    write_png_raw(path_of("rsz/c/a.png"), 4, 4, 8, PNG_COLOR_TYPE_GRAY, flat, 4, NULL, 0, NULL, 0,
                  NULL);
    dla_imds *ds, *a;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    static const int64_t sizes[][2] = {{8, 8}, {6, 6}, {5, 9}, {4, 4}, {2, 2}, {1, 7}};
    unsigned char out[81];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        assert_ok(dla_augimds_create(sizes[s], ds, NULL, 0, &a));
        size_t n = (size_t)(sizes[s][0] * sizes[s][1]);
        read_u8(a, out, n);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(out[i], 200);
        dla_imds_free(a);
    }
    /* A translation of 2 pixels right, read at 8x8: the left columns come
     * from outside (0), the right ones from the image (200). */
    dla_image_augmenter g = {.rand_x_translation = {2, 2}};
    assert_ok(dla_augimds_create((int64_t[]){8, 8}, ds, &g, 0, &a));
    read_u8(a, out, 64);
    for (int r = 0; r < 8; r++) {
        assert_int_equal(out[r + 8 * 0], 0);
        assert_int_equal(out[r + 8 * 1], 0);
        for (int c = 5; c < 8; c++)
            assert_int_equal(out[r + 8 * c], 200);
    }
    dla_imds_free(a);
    dla_imds_free(ds);
}

/* Transparency is dropped whatever carries it: a palette with a tRNS
 * chunk reads as its RGB colours (it came out as 4 channels and was
 * refused, or dropped as corrupt with skip_corrupt), gray and RGB with a
 * tRNS key as their values. */
static void test_png_transparency_is_dropped(void **state)
{
    (void)state;
    const char *top = fresh("trns");
    mkdirs(path_of("trns/c"));
    png_color pal[4] = {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}, {100, 110, 120}};
    unsigned char alpha[4] = {255, 0, 128, 255}, idx[4] = {0, 1, 2, 3};
    /* 2x2, rows 0 1 / 2 3; the 4-bit gray one packs 2 pixels a byte. */
    write_png_raw(path_of("trns/c/a.png"), 2, 2, 8, PNG_COLOR_TYPE_PALETTE, idx, 2, pal, 4, alpha,
                  4, NULL);
    write_png_raw(path_of("trns/c/b.png"), 2, 2, 8, PNG_COLOR_TYPE_PALETTE, idx, 2, pal, 4, alpha,
                  2, NULL);
    for (int skip = 0; skip < 2; skip++) {
        dla_imds *ds;
        assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8, .skip_corrupt = skip},
                                  &ds));
        dla_tensor *x;
        assert_ok(dla_imds_readall(ds, &x, NULL));
        assert_int_equal(dla_tensor_dim(x, 3), 3);
        assert_int_equal(dla_tensor_dim(x, 4), 2);
        assert_int_equal(dla_imds_num_skipped(ds), 0);
        unsigned char px[24];
        to_host(x, px, sizeof px);
        for (int i = 0; i < 2; i++)
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 2; c++) {
                    const png_color *p = &pal[idx[r * 2 + c]];
                    const unsigned char *o = px + 12 * i + r + 2 * c;
                    assert_int_equal(o[0], p->red);
                    assert_int_equal(o[4], p->green);
                    assert_int_equal(o[8], p->blue);
                }
        dla_tensor_release(x);
        dla_imds_free(ds);
    }
    /* Gray with a key, at 8 and at 4 bits, and RGB with a key. */
    unsigned char g8[4] = {5, 6, 7, 8}, g4[2] = {0x12, 0x3f}, rgb[12];
    for (int i = 0; i < 12; i++)
        rgb[i] = (unsigned char)(i * 20);
    png_color_16 key = {.gray = 6, .red = 0, .green = 20, .blue = 40};
    struct {
        const char *name;
        int depth, type, ch;
        const unsigned char *rows;
        size_t rowbytes;
        unsigned char want[12];
    } cases[] = {
        {"g8", 8, PNG_COLOR_TYPE_GRAY, 1, g8, 2, {5, 7, 6, 8}},
        {"g4", 4, PNG_COLOR_TYPE_GRAY, 1, g4, 1, {0x11, 0x33, 0x22, 0xff}},
        {"rgb", 8, PNG_COLOR_TYPE_RGB, 3, rgb, 6,
         {0, 120, 60, 180, 20, 140, 80, 200, 40, 160, 100, 220}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *dir = fresh("trnsk");
        mkdirs(path_of("trnsk/c"));
        write_png_raw(path_of("trnsk/c/%s.png", cases[k].name), 2, 2, cases[k].depth, cases[k].type,
                      cases[k].rows, cases[k].rowbytes, NULL, 0, NULL, 0, &key);
        dla_imds *ds;
        assert_ok(dla_imds_create(dir, &(dla_imds_options){.dtype = DLA_U8}, &ds));
        dla_tensor *x;
        assert_ok(dla_imds_readall(ds, &x, NULL));
        assert_int_equal(dla_tensor_dim(x, 3), cases[k].ch);
        unsigned char px[12];
        to_host(x, px, (size_t)(4 * cases[k].ch));
        assert_memory_equal(px, cases[k].want, (size_t)(4 * cases[k].ch));
        dla_tensor_release(x);
        dla_imds_free(ds);
    }
}

/* 16-bit PNGs keep their 16 bits: a sample v reads as v / 65535 in single
 * and double, and as round(v / 257) in bytes (MATLAB's im2uint8), through
 * the plain copy and through an augmented datastore's resize. They were
 * cut to their high byte: 0x12FF read as 18/255 = 0.0706 instead of
 * 0.0742, and 65280 + 255 and 65280 alike as 1. */
static void test_png_16_bit_samples_keep_their_precision(void **state)
{
    (void)state;
    const unsigned v[4] = {0, 0x12FF, 0xFF00, 0xFFFF};
    unsigned char g16[8], rgb16[24];
    for (int i = 0; i < 4; i++) {
        g16[2 * i] = (unsigned char)(v[i] >> 8), g16[2 * i + 1] = (unsigned char)(v[i] & 255);
        for (int k = 0; k < 3; k++) {
            const unsigned u = v[(i + k) % 4];
            rgb16[6 * i + 2 * k] = (unsigned char)(u >> 8);
            rgb16[6 * i + 2 * k + 1] = (unsigned char)(u & 255);
        }
    }
    for (int colour = 0; colour < 2; colour++) {
        const int ch = colour ? 3 : 1;
        const char *dir = fresh("png16");
        mkdirs(path_of("png16/c"));
        write_png_raw(path_of("png16/c/a.png"), 2, 2, 16,
                      colour ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, colour ? rgb16 : g16,
                      colour ? 12 : 4, NULL, 0, NULL, 0, NULL);
        for (int d = 0; d < 3; d++) {
            const dla_dtype dt = d == 0 ? DLA_F32 : d == 1 ? DLA_F64 : DLA_U8;
            dla_imds *ds;
            assert_ok(dla_imds_create(dir, &(dla_imds_options){.dtype = dt}, &ds));
            dla_tensor *x;
            assert_ok(dla_imds_readall(ds, &x, NULL));
            assert_int_equal(dla_tensor_dim(x, 3), ch);
            double got[12];
            dla_tensor *x64 = dla_cast(x, DLA_F64);
            to_host(x64, got, sizeof(double) * (size_t)(4 * ch));
            dla_tensor_release(x64);
            /* H x W x C: pixel (r, c) of channel k at r + 2c + 4k, file
             * pixel i = 2r + c holding v[(i + k) % 4]. */
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 2; c++)
                    for (int k = 0; k < ch; k++) {
                        const unsigned u = v[(2 * r + c + k) % 4];
                        const double want = dt == DLA_U8 ? floor(u / 257.0 + 0.5) : u / 65535.0;
                        tu_assert_near(got[r + 2 * c + 4 * k], want, dt == DLA_F32 ? 1e-7 : 1e-15);
                    }
            dla_tensor_release(x);
            dla_imds_free(ds);
        }
    }
    /* A constant 16-bit image resized by an augmented datastore: the
     * bilinear resize of a constant is that constant, 0x12FF / 65535. */
    const char *dir = fresh("png16a");
    mkdirs(path_of("png16a/c"));
    unsigned char flat[8];
    for (int i = 0; i < 4; i++)
        flat[2 * i] = 0x12, flat[2 * i + 1] = 0xFF;
    write_png_raw(path_of("png16a/c/a.png"), 2, 2, 16, PNG_COLOR_TYPE_GRAY, flat, 4, NULL, 0, NULL,
                  0, NULL);
    dla_imds *ds, *aug;
    assert_ok(dla_imds_create(dir, &(dla_imds_options){.dtype = DLA_F64}, &ds));
    assert_ok(dla_augimds_create((int64_t[]){4, 4}, ds, NULL, 1, &aug));
    dla_tensor *x;
    assert_ok(dla_imds_readall(aug, &x, NULL));
    double got[16];
    to_host(x, got, sizeof got);
    for (int i = 0; i < 16; i++)
        tu_assert_near(got[i], 0x12FF / 65535.0, 1e-15);
    dla_tensor_release(x);
    dla_imds_free(aug);
    dla_imds_free(ds);
}

/* Every 16-bit value, as the plain copy and as an augmented datastore
 * that neither resizes nor transforms reads it: v / 65535 exactly in
 * double and single (MATLAB's im2double and im2single of the uint16
 * image imread gives), round(v / 257) as bytes. Through 8-bit units
 * (v / 257, then / 255) 15280 of the 65536 values came out a unit in the
 * last place off in double. */
static void test_png_16_bit_samples_read_exactly_as_matlab_scales_them(void **state)
{
    (void)state;
    const char *dir = fresh("png16all");
    mkdirs(path_of("png16all/c"));
    /* 256 x 256: row r, column c holds v = 256 r + c. */
    unsigned char *rows = malloc(2 * 65536);
    assert_non_null(rows);
    for (unsigned v = 0; v < 65536; v++)
        rows[2 * v] = (unsigned char)(v >> 8), rows[2 * v + 1] = (unsigned char)(v & 255);
    write_png_raw(path_of("png16all/c/a.png"), 256, 256, 16, PNG_COLOR_TYPE_GRAY, rows, 512, NULL,
                  0, NULL, 0, NULL);
    free(rows);
    double *got = malloc(sizeof *got * 65536);
    assert_non_null(got);
    for (int d = 0; d < 3; d++) {
        const dla_dtype dt = d == 0 ? DLA_F64 : d == 1 ? DLA_F32 : DLA_U8;
        dla_imds *ds, *aug;
        assert_ok(dla_imds_create(dir, &(dla_imds_options){.dtype = dt}, &ds));
        assert_ok(dla_augimds_create((int64_t[]){256, 256}, ds, NULL, 1, &aug));
        for (int a = 0; a < 2; a++) {
            dla_tensor *x;
            assert_ok(dla_imds_readall(a ? aug : ds, &x, NULL));
            dla_tensor *x64 = dla_cast(x, DLA_F64);
            to_host(x64, got, sizeof *got * 65536);
            dla_tensor_release(x64);
            dla_tensor_release(x);
            int wrong = 0;
            for (unsigned r = 0; r < 256; r++)
                for (unsigned c = 0; c < 256; c++) {
                    const unsigned v = 256 * r + c;
                    const double want = dt == DLA_F64   ? v / 65535.0
                                        : dt == DLA_F32 ? (double)(float)(v / 65535.0)
                                                        : floor(v / 257.0 + 0.5);
                    wrong += !(got[r + 256 * c] == want);
                }
            if (wrong)
                fail_msg("%s, %s: %d of 65536 values are not v / 65535 exactly",
                         dla_dtype_name(dt), a ? "augmented" : "plain", wrong);
        }
        dla_imds_free(aug);
        dla_imds_free(ds);
    }
    free(got);
}

/* ------------------------------------------------------------ queues */

/* One run of a queue over an augmented datastore: batches of 4 of 16 8x8
 * crops of 9x9 images, their bytes in out[] in the order handed out (two passes, with
 * change() between them and before the first). wait_ms lets the dispatch
 * thread make batches ahead before the first change; take_first takes
 * one batch of the first pass before it. Returns the bytes written. */
enum { AUG_N = 16, AUG_PX = 64 };
static size_t augmented_run(const char *top, int background, int wait_ms, int take_first,
                            void (*change)(dla_mbq *), unsigned char *out)
{
    dla_imds *ds, *aug;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    /* Every kind of draw, a random 8x8 crop of the 9x9 files too, so
     * that each goes through the queue's stream. */
    dla_image_augmenter g = {.rand_x_reflection = 1, .rand_rotation = {-20, 20},
                             .rand_y_scale = {0.9, 1.1}, .rand_x_shear = {-10, 10}};
    assert_ok(dla_augimds_create_opts((int64_t[]){8, 8}, ds, &g, 42,
                                      &(dla_augimds_options){.output_size_mode = "randcrop"},
                                      &aug));
    dla_imds_free(ds);
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.images = aug}},
                             &(dla_mbq_options){.mini_batch_size = 4, .seed = 1,
                                                .dispatch_in_background = background},
                             &q));
    /* Other reads of the datastore draw from its own stream, not the
     * queue's. */
    dla_tensor *x;
    assert_ok(dla_imds_read(aug, &x, NULL));
    dla_tensor_release(x);
    dla_imds_free(aug);
    size_t at = 0;
    struct timespec wait = {0, wait_ms * 1000000L};
    if (wait_ms)
        nanosleep(&wait, NULL);
    if (take_first) {
        dla_tensor *b;
        assert_ok(dla_mbq_next(q, 1, &b));
        to_host(b, out + at, (size_t)dla_tensor_numel(b));
        at += (size_t)dla_tensor_numel(b);
        dla_tensor_release(b);
        if (wait_ms)
            nanosleep(&wait, NULL);
    }
    for (int pass = 0; pass < 2; pass++) {
        change(q);
        while (dla_mbq_hasdata(q)) {
            dla_tensor *b;
            assert_ok(dla_mbq_next(q, 1, &b));
            to_host(b, out + at, (size_t)dla_tensor_numel(b));
            at += (size_t)dla_tensor_numel(b);
            dla_tensor_release(b);
        }
    }
    dla_mbq_free(q);
    return at;
}

static void change_shuffle(dla_mbq *q) { dla_mbq_shuffle(q); }
static void change_reset(dla_mbq *q) { dla_mbq_reset(q); }
static void change_size(dla_mbq *q) { assert_ok(dla_mbq_set_mini_batch_size(q, 4)); }

/* Background dispatch gives the same augmented batches as the queue
 * without it, however far ahead its thread was when the queue was
 * shuffled, reset or given a batch size (the batches it had made were
 * dropped, and their draws lost: a shuffle right after the queue was made,
 * as trainnet's first epoch does, changed the augmentation by timing). */
static void test_background_dispatch_keeps_the_augmentation(void **state)
{
    (void)state;
    const char *top = fresh("augbg");
    mkdirs(path_of("augbg/c"));
    for (int k = 0; k < AUG_N; k++) {
        unsigned char d[81]; /* 9x9: augmented_run crops 8x8 at random */
        for (int i = 0; i < 81; i++)
            d[i] = (unsigned char)(k * 8 + i * 3);
        write_png_raw(path_of("augbg/c/%02d.png", k), 9, 9, 8, PNG_COLOR_TYPE_GRAY, d, 9, NULL, 0,
                      NULL, 0, NULL);
    }
    enum { MAX = 3 * AUG_N * AUG_PX };
    static unsigned char ref[MAX], got[MAX];
    void (*changes[])(dla_mbq *) = {change_shuffle, change_reset, change_size};
    for (int c = 0; c < 3; c++)
        for (int take = 0; take < 2; take++) {
            size_t n = augmented_run(top, 0, 0, take, changes[c], ref);
            assert_int_equal(n, (size_t)(8 + take) * AUG_N * AUG_PX / 4);
            /* Right away, and after the thread has filled its prefetch. */
            for (int wait = 0; wait <= 40; wait += 40) {
                assert_int_equal(augmented_run(top, 1, wait, take, changes[c], got), n);
                assert_memory_equal(ref, got, n);
            }
        }
    /* The augmentation is drawn: the two passes differ. */
    size_t n = augmented_run(top, 0, 0, 0, change_reset, ref);
    assert_true(memcmp(ref, ref + n / 2, n / 2) != 0);
}

static void test_a_queue_reads_the_datastore_on_its_threads_in_order(void **state)
{
    (void)state;
    const char *top = fresh("q");
    for (int i = 0; i < 23; i++) {
        mkdirs(path_of("q/k%d", i % 3));
        write_png(path_of("q/k%d/%02d.png", i % 3, i), i, 4, 3, 1);
    }
    for (int threads = 1; threads <= 3; threads++) {
        dla_imds *ds;
        assert_ok(dla_imds_create(top, &(dla_imds_options){.read_threads = threads}, &ds));
        dla_tensor *all, *labels = dla_imds_labels(ds);
        assert_ok(dla_imds_readall(ds, &all, NULL));
        float ref[23 * 12];
        int32_t lref[23];
        to_host(all, ref, sizeof ref);
        to_host(labels, lref, sizeof lref);
        dla_mbq *q;
        assert_ok(dla_mbq_create(2, (dla_mbq_input[]){{.images = ds}, {.tensor = labels}},
                                        &(dla_mbq_options){.mini_batch_size = 5, .seed = 4,
                                                           .dispatch_in_background = 1, .prefetch = 2},
                                        &q));
        /* The queue holds its own reference and a frozen order. */
        dla_imds_shuffle(ds);
        dla_imds_free(ds);
        dla_tensor_release(labels);
        dla_tensor_release(all);
        for (int pass = 0; pass < 2; pass++) {
            dla_mbq_shuffle(q);
            int64_t order[23];
            assert_ok(dla_mbq_order(q, order, 23));
            int64_t at = 0;
            while (dla_mbq_hasdata(q)) {
                dla_tensor *b[2];
                assert_ok(dla_mbq_next(q, 2, b));
                int64_t n = dla_tensor_dim(b[0], 4);
                float px[5 * 12];
                int32_t lab[5];
                to_host(b[0], px, sizeof(float) * 12 * (size_t)n);
                to_host(b[1], lab, sizeof(int32_t) * (size_t)n);
                for (int64_t k = 0; k < n; k++) {
                    assert_memory_equal(px + 12 * k, ref + 12 * order[at + k], 12 * sizeof(float));
                    assert_int_equal(lab[k], lref[order[at + k]]);
                    assert_int_equal(lab[k], id_of(px + 12 * k) % 3);
                }
                at += n;
                dla_tensor_release(b[0]);
                dla_tensor_release(b[1]);
            }
            assert_int_equal(at, 23);
        }
        dla_mbq_free(q);
    }
}

/* A generic datastore of two outputs before the images: its outputs take
 * two of the queue's slots, so the image input is the third slot, not the
 * second input's. Taken for the second, the queue read a datastore slot as
 * the images (dla_mbq_create crashed on a NULL image datastore). */
static void test_a_generic_datastore_before_the_images_stays_paired(void **state)
{
    (void)state;
    const char *top = fresh("gen");
    for (int i = 0; i < 9; i++) {
        mkdirs(path_of("gen/k%d", i % 2));
        write_png(path_of("gen/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    dla_tensor *all;
    assert_ok(dla_imds_readall(ds, &all, NULL));
    float ref[9 * 12], ids[9];
    to_host(all, ref, sizeof ref);
    for (int k = 0; k < 9; k++)
        ids[k] = (float)id_of(ref + 12 * k);
    dla_tensor *idt = dla_tensor_from_host(ids, DLA_F32, "CB", DLA_DIMS(1, 9));
    dla_datastore *a, *both;
    assert_ok(dla_array_datastore(idt, NULL, &a));
    assert_ok(dla_combine(2, (dla_datastore *[]){a, a}, &both));
    for (int background = 0; background <= 1; background++) {
        dla_mbq *q;
        assert_ok(dla_mbq_create(2, (dla_mbq_input[]){{.datastore = both}, {.images = ds}},
                                 &(dla_mbq_options){.mini_batch_size = 4, .seed = 3,
                                                    .dispatch_in_background = background},
                                 &q));
        dla_mbq_shuffle(q);
        int total = 0;
        while (dla_mbq_hasdata(q)) {
            dla_tensor *b[3];
            assert_ok(dla_mbq_next(q, 3, b));
            const int64_t n = dla_tensor_dim(b[2], 4);
            float px[4 * 12], i0[4], i1[4];
            to_host(b[0], i0, sizeof(float) * (size_t)n);
            to_host(b[1], i1, sizeof(float) * (size_t)n);
            to_host(b[2], px, sizeof(float) * 12 * (size_t)n);
            for (int64_t k = 0; k < n; k++) {
                tu_assert_near(i0[k], id_of(px + 12 * k), 0);
                tu_assert_near(i1[k], id_of(px + 12 * k), 0);
            }
            total += (int)n;
            for (int j = 0; j < 3; j++)
                dla_tensor_release(b[j]);
        }
        assert_int_equal(total, 9);
        dla_mbq_free(q);
    }
    /* The second image input is named by its number among the inputs. */
    dla_mbq *q;
    assert_int_equal(dla_mbq_create(3, (dla_mbq_input[]){{.datastore = both}, {.images = ds},
                                                         {.images = ds}},
                                    NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "inputs[2]: a second datastore input (inputs[1]"));
    dla_datastore_free(both);
    dla_datastore_free(a);
    dla_tensor_release(idt);
    dla_tensor_release(all);
    dla_imds_free(ds);
}

/* ------------------------------------------------------------ bad input */

static void expect_create_error(const char *top, const dla_imds_options *o, dla_status st,
                                const char *needle1, const char *needle2)
{
    dla_imds *ds = (dla_imds *)1;
    assert_int_equal(dla_imds_create(top, o, &ds), st);
    assert_null(ds);
    if (!strstr(dla_last_error(), needle1) || (needle2 && !strstr(dla_last_error(), needle2)))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", dla_last_error(), needle1,
                 needle2 ? needle2 : "");
}

/* A link to nothing not named as an image (a README moved away) is left
 * out as other files are; it failed the whole datastore ("cannot read
 * .../README: No such file or directory"). One named as an image is an
 * error naming it. */
static void test_a_stale_link_beside_the_images_is_left_out(void **state)
{
    (void)state;
    const char *top = fresh("stalelink");
    mkdirs(path_of("stalelink/a"));
    write_png(path_of("stalelink/a/1.png"), 1, 4, 3, 1);
    mkdirs(path_of("stalelink/c"));
    write_png(path_of("stalelink/c/1.png"), 1, 4, 3, 1);
    assert_int_equal(symlink("/nonexistent/dla_gone", path_of("stalelink/a/README")), 0);
    /* Said on stderr, not silent: a class folder's link to a disk not
     * mounted (b) left its class out, and c took its number, in silence. */
    assert_int_equal(symlink("/nonexistent/dla_gone_b", path_of("stalelink/b")), 0);
    char said[4096] = "";
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    dla_imds *ds;
    dla_status st = dla_imds_create(top, NULL, &ds);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    said[fread(said, 1, sizeof said - 1, cap)] = '\0';
    fclose(cap);
    assert_ok(st);
    assert_int_equal(dla_imds_num_files(ds), 2);
    assert_int_equal(dla_imds_num_categories(ds), 2);
    /* (Unless DLACCEL_LOG hides warnings.) */
    const char *lv = getenv("DLACCEL_LOG");
    if ((!lv || !strcmp(lv, "warn") || !strcmp(lv, "info") || !strcmp(lv, "debug")) &&
        (!strstr(said, "leaving out") || !strstr(said, "stalelink/b,") ||
         !strstr(said, "stalelink/a/README")))
        fail_msg("stderr \"%s\" does not name the links left out", said);
    dla_imds_free(ds);
    assert_int_equal(symlink("/nonexistent/dla_gone", path_of("stalelink/a/2.png")), 0);
    assert_int_equal(dla_imds_create(top, NULL, &ds), DLA_ERR_IO);
    assert_null(ds);
    if (!strstr(dla_last_error(), "stalelink/a/2.png"))
        fail_msg("message \"%s\" does not name the link", dla_last_error());
}

/* Reading everything fails with st and a message naming the file. */
static void expect_read_error(dla_imds *ds, dla_status st, const char *file, const char *why)
{
    dla_tensor *x = (dla_tensor *)1, *t = (dla_tensor *)1;
    assert_int_equal(dla_imds_readall(ds, &x, &t), st);
    assert_null(x);
    assert_null(t);
    if (!strstr(dla_last_error(), file) || !strstr(dla_last_error(), why))
        fail_msg("message \"%s\" lacks \"%s\" / \"%s\"", dla_last_error(), file, why);
}

static void test_empty_folders_and_classes_and_stray_files_are_named(void **state)
{
    (void)state;
    expect_create_error(path_of("does-not-exist"), NULL, DLA_ERR_IO, "does-not-exist",
                        "cannot read folder");
    const char *top = fresh("empty");
    expect_create_error(top, NULL, DLA_ERR_INVALID_ARGUMENT, top, "holds no PNG or JPEG");
    /* A class folder with no files, beside one with files. */
    top = fresh("noclass");
    mkdirs(path_of("noclass/full"));
    mkdirs(path_of("noclass/hollow"));
    write_png(path_of("noclass/full/0.png"), 0, 2, 2, 1);
    expect_create_error(top, NULL, DLA_ERR_INVALID_ARGUMENT, "noclass/hollow",
                        "a class with no files");
    /* A class folder holding only other files is no better. */
    write_text(path_of("noclass/hollow/readme.txt"), "x");
    expect_create_error(top, NULL, DLA_ERR_INVALID_ARGUMENT, "noclass/hollow", "no PNG or JPEG");
    /* An image in the top folder would be labelled with the top's name. */
    top = fresh("stray");
    mkdirs(path_of("stray/c"));
    write_png(path_of("stray/c/0.png"), 0, 2, 2, 1);
    write_png(path_of("stray/loose.png"), 1, 2, 2, 1);
    expect_create_error(top, NULL, DLA_ERR_INVALID_ARGUMENT, "stray/loose.png", "top folder");
    expect_create_error(top, &(dla_imds_options){.label_source = "filenames"},
                        DLA_ERR_INVALID_ARGUMENT, "label_source", "foldernames");
    /* Without labels it is fine. */
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.label_source = "none"}, &ds));
    assert_int_equal(dla_imds_num_files(ds), 2);
    assert_null(dla_imds_labels(ds));
    assert_int_equal(dla_imds_label(ds, 0), -1);
    dla_imds_free(ds);
}

static void test_corrupt_truncated_and_foreign_files_are_named(void **state)
{
    (void)state;
    const char *top = fresh("bad");
    mkdirs(path_of("bad/c"));
    write_png(path_of("bad/c/0.png"), 0, 6, 6, 1);
    write_png(path_of("bad/c/1.png"), 1, 6, 6, 1);
    write_png(path_of("bad/c/2.png"), 2, 6, 6, 1);
    write_jpeg(path_of("bad/c/3.jpg"), 6, 6, 90);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    dla_tensor *x;
    assert_ok(dla_imds_readall(ds, &x, NULL));
    dla_tensor_release(x);

    /* A PNG cut in half: libpng's error, by longjmp, becomes a message. */
    truncate_to(path_of("bad/c/1.png"), file_size(path_of("bad/c/1.png")) / 2);
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/1.png", "corrupt or truncated PNG");
    /* Cut after the pixels, before IEND: still truncated. */
    write_png(path_of("bad/c/1.png"), 1, 6, 6, 1);
    truncate_to(path_of("bad/c/1.png"), file_size(path_of("bad/c/1.png")) - 12);
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/1.png", "PNG");
    write_png(path_of("bad/c/1.png"), 1, 6, 6, 1);
    /* Garbage after a valid signature and header. */
    FILE *f = fopen(path_of("bad/c/2.png"), "r+b");
    fseek(f, 40, SEEK_SET);
    fputs("garbage garbage garbage garbage", f);
    fclose(f);
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/2.png", "PNG");
    write_png(path_of("bad/c/2.png"), 2, 6, 6, 1);
    /* A truncated JPEG: libjpeg would only warn and fill with gray. */
    truncate_to(path_of("bad/c/3.jpg"), file_size(path_of("bad/c/3.jpg")) - 40);
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/3.jpg", "JPEG");
    /* A JPEG with its header cut: error_exit, by longjmp. */
    truncate_to(path_of("bad/c/3.jpg"), 30);
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/3.jpg", "JPEG");
    /* Another format under an image's name, and an empty file. */
    write_text(path_of("bad/c/3.jpg"), "GIF89a not really");
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/3.jpg", "not a PNG or JPEG file");
    write_text(path_of("bad/c/3.jpg"), "");
    expect_read_error(ds, DLA_ERR_FORMAT, "bad/c/3.jpg", "empty");
    /* A file that went away. */
    unlink(path_of("bad/c/3.jpg"));
    expect_read_error(ds, DLA_ERR_IO, "bad/c/3.jpg", "cannot open");
    dla_imds_free(ds);
    /* The first file corrupt: the datastore cannot learn its size. */
    write_text(path_of("bad/c/0.png"), "\x89PNG\r\n\x1a\n truncated");
    expect_create_error(top, NULL, DLA_ERR_FORMAT, "bad/c/0.png", "PNG");
    /* With skip_corrupt, every file corrupt: said so, not as if the last
     * file tried were the only bad one (its words alone were the message). */
    write_text(path_of("bad/c/1.png"), "\x89PNG\r\n\x1a\n truncated");
    write_text(path_of("bad/c/2.png"), "\x89PNG\r\n\x1a\n truncated");
    expect_create_error(top, &(dla_imds_options){.skip_corrupt = 1}, DLA_ERR_FORMAT,
                        "bad/c/2.png", "none of the 3 files decodes");
}

/* A JPEG whose header claims 20000 x 20000 pixels (one 16 x 16 image's
 * data behind it): refused as too large before decoding. A progressive
 * one was not: jpeg_start_decompress allocated the whole image's
 * coefficients first (800 MB here, for a 400-byte file), and the file then
 * failed as truncated, or as "Insufficient memory" under a memory limit,
 * never as the forged size it is. Baseline and progressive alike now. */
static void test_a_forged_jpeg_size_is_refused_before_decoding(void **state)
{
    (void)state;
    for (int progressive = 0; progressive < 2; progressive++) {
        const char *top = fresh("forged");
        mkdirs(path_of("forged/c"));
        unsigned char *mem = NULL;
        unsigned long size = 0;
        struct jpeg_compress_struct j;
        struct jpeg_error_mgr e;
        j.err = jpeg_std_error(&e);
        jpeg_create_compress(&j);
        jpeg_mem_dest(&j, &mem, &size);
        j.image_width = 16;
        j.image_height = 16;
        j.input_components = 1;
        j.in_color_space = JCS_GRAYSCALE;
        jpeg_set_defaults(&j);
        if (progressive)
            jpeg_simple_progression(&j);
        jpeg_start_compress(&j, TRUE);
        unsigned char row[16];
        memset(row, 90, sizeof row);
        while (j.next_scanline < j.image_height) {
            JSAMPROW rp = row;
            jpeg_write_scanlines(&j, &rp, 1);
        }
        jpeg_finish_compress(&j);
        jpeg_destroy_compress(&j);
        /* The frame header (SOF0 or SOF2): FF Cx, length, precision, then
         * the height and the width, big-endian. */
        int patched = 0;
        for (unsigned long i = 0; i + 8 < size && !patched; i++)
            if (mem[i] == 0xFF && (mem[i + 1] == 0xC0 || mem[i + 1] == 0xC2)) {
                mem[i + 5] = mem[i + 7] = 20000 >> 8;
                mem[i + 6] = mem[i + 8] = 20000 & 0xFF;
                patched = 1;
            }
        assert_true(patched);
        FILE *f = fopen(path_of("forged/c/a.jpg"), "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(mem, 1, size, f), size);
        fclose(f);
        free(mem);
        expect_create_error(top, NULL, DLA_ERR_FORMAT, "forged/c/a.jpg", "more than the");
    }
}

/* The bytes of path, malloc'd; *n their count. */
static unsigned char *slurp(const char *path, long *n)
{
    *n = file_size(path);
    unsigned char *b = malloc((size_t)*n);
    assert_non_null(b);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

static void spit(const char *path, const unsigned char *b, long n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
}

/* A progressive JPEG may repeat a scan without a warning, each one a walk
 * over every block: 5000 of them in a 218 KB file held a 4000x4000 image
 * 21 seconds in the decoder. More than 1000 scans is refused, naming the
 * file; 990 still read, as the image they leave. */
static void test_a_jpeg_of_too_many_scans_is_refused(void **state)
{
    (void)state;
    const char *top = fresh("jscans");
    mkdirs(path_of("jscans/c"));
    /* A progressive 64x64 gray image of 90. */
    FILE *f = fopen(path_of("jscans/c/a.jpg"), "wb");
    assert_non_null(f);
    struct jpeg_compress_struct j;
    struct jpeg_error_mgr e;
    j.err = jpeg_std_error(&e);
    jpeg_create_compress(&j);
    jpeg_stdio_dest(&j, f);
    j.image_width = j.image_height = 64;
    j.input_components = 1;
    j.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&j);
    jpeg_simple_progression(&j);
    jpeg_start_compress(&j, TRUE);
    unsigned char row[64];
    memset(row, 90, sizeof row);
    while (j.next_scanline < j.image_height) {
        JSAMPROW rp = row;
        jpeg_write_scanlines(&j, &rp, 1);
    }
    jpeg_finish_compress(&j);
    const int id = j.comp_info[0].component_id;
    jpeg_destroy_compress(&j);
    fclose(f);
    long n;
    unsigned char *base = slurp(path_of("jscans/c/a.jpg"), &n);
    assert_true(n > 2 && base[n - 2] == 0xFF && base[n - 1] == 0xD9);
    /* Before the end of the image: an AC table of one code, "0" for an
     * end-of-band run of 64 to 127 blocks (symbol 0x60), then scans of
     * band 1..63 at bit 0 of the one component, each a run over its 64
     * blocks: "0" and 6 bits of 0, padded with a 1. */
    const unsigned char dht[] = {0xFF, 0xC4, 0, 20, 0x11, /* 16 counts */ 1, 0, 0, 0, 0, 0, 0, 0,
                                 0,    0,    0, 0,  0,    0,   0,   0, 0x60};
    const unsigned char sos[] = {0xFF, 0xDA, 0, 8, 1, (unsigned char)id, 0x01, 1, 63, 0, 0x01};
    _Static_assert(sizeof dht == 4 + 1 + 16 + 1, "the table's length");
    for (int many = 0; many < 2; many++) {
        const int scans = many ? 1100 : 990;
        long m = n - 2 + (long)sizeof dht + scans * (long)sizeof sos + 2;
        unsigned char *b = malloc((size_t)m);
        assert_non_null(b);
        memcpy(b, base, (size_t)n - 2);
        long at = n - 2;
        memcpy(b + at, dht, sizeof dht);
        at += (long)sizeof dht;
        for (int s = 0; s < scans; s++, at += (long)sizeof sos)
            memcpy(b + at, sos, sizeof sos);
        b[at] = 0xFF, b[at + 1] = 0xD9;
        spit(path_of("jscans/c/a.jpg"), b, m);
        free(b);
        if (many) {
            expect_create_error(top, NULL, DLA_ERR_FORMAT, "jscans/c/a.jpg", "1000 scans");
        } else {
            dla_imds *ds;
            assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
            dla_tensor *x;
            assert_ok(dla_imds_readall(ds, &x, NULL));
            unsigned char px[64 * 64];
            to_host(x, px, sizeof px);
            for (int i = 0; i < 64 * 64; i++)
                assert_int_equal(px[i], 90);
            dla_tensor_release(x);
            dla_imds_free(ds);
        }
    }
    free(base);
}

/* Two libjpeg warnings leave every pixel decoded: bytes between the last
 * scan and the end-of-image marker (the "extraneous bytes before marker
 * 0xd9" of many camera and web files) and a JFIF version 2.x. Both were
 * refused as "corrupt or truncated", though MATLAB's imread and PIL read
 * them; they now read as the clean file. A truncated file still fails. */
static void test_jpeg_warnings_that_leave_the_pixels_whole_are_read(void **state)
{
    (void)state;
    const char *top = fresh("jwarn");
    mkdirs(path_of("jwarn/c"));
    write_jpeg(path_of("jwarn/c/a.jpg"), 8, 8, 77);
    long n;
    unsigned char *clean = slurp(path_of("jwarn/c/a.jpg"), &n);
    assert_true(n > 20 && clean[n - 2] == 0xFF && clean[n - 1] == 0xD9);
    long j = 0;
    while (j + 5 < n && memcmp(clean + j, "JFIF", 5))
        j++;
    assert_true(j + 5 < n);
    unsigned char want[64], got[64];
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds));
    read_u8(ds, want, sizeof want);
    dla_imds_free(ds);
    unsigned char *b = malloc((size_t)n + 16);
    assert_non_null(b);
    for (int variant = 0; variant < 2; variant++) {
        long m = n;
        memcpy(b, clean, (size_t)n);
        if (variant == 0) { /* 16 stray bytes before EOI */
            memset(b + n - 2, 0x5A, 16);
            b[n + 14] = 0xFF;
            b[n + 15] = 0xD9;
            m = n + 16;
        } else { /* JFIF 2.01 */
            b[j + 5] = 2;
        }
        spit(path_of("jwarn/c/a.jpg"), b, m);
        dla_status st = dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8}, &ds);
        if (st != DLA_OK)
            fail_msg("variant %d: %s", variant, dla_last_error());
        read_u8(ds, got, sizeof got);
        assert_memory_equal(got, want, sizeof want);
        dla_imds_free(ds);
    }
    /* Cut before its end: still an error (libjpeg would fill with gray). */
    spit(path_of("jwarn/c/a.jpg"), clean, n - 2);
    expect_create_error(top, &(dla_imds_options){.dtype = DLA_U8}, DLA_ERR_FORMAT, "jwarn/c/a.jpg",
                        "Premature end");
    free(b);
    free(clean);
}

static void test_mixed_sizes_need_a_resize(void **state)
{
    (void)state;
    const char *top = fresh("sizes");
    mkdirs(path_of("sizes/c"));
    write_png(path_of("sizes/c/0.png"), 0, 4, 4, 1);
    write_png(path_of("sizes/c/1.png"), 1, 5, 4, 1);
    write_png(path_of("sizes/c/2.png"), 2, 4, 4, 3);
    dla_imds *ds, *a;
    assert_ok(dla_imds_create(top, NULL, &ds));
    dla_tensor *x;
    assert_int_equal(dla_imds_read_files(ds, 1, (int64_t[]){1}, &x, NULL), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "sizes/c/1.png: the image is 5x4x1"));
    assert_non_null(strstr(dla_last_error(), "4x4x1"));
    assert_non_null(strstr(dla_last_error(), "dla_augimds_create"));
    /* Resized: the 5x4 one is fine; the RGB one still is not. */
    assert_ok(dla_augimds_create((int64_t[]){3, 3}, ds, NULL, 0, &a));
    assert_ok(dla_imds_read_files(a, 2, (int64_t[]){0, 1}, &x, NULL));
    assert_int_equal(dla_tensor_dim(x, 4), 2);
    dla_tensor_release(x);
    assert_int_equal(dla_imds_read_files(a, 1, (int64_t[]){2}, &x, NULL), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "sizes/c/2.png"));
    assert_non_null(strstr(dla_last_error(), "channel"));
    dla_imds_free(a);
    dla_imds_free(ds);
}

static void test_skip_corrupt_warns_once_and_keeps_labels_paired(void **state)
{
    (void)state;
    const char *top = fresh("skip");
    for (int i = 0; i < 12; i++) {
        mkdirs(path_of("skip/k%d", i % 2));
        write_png(path_of("skip/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    /* Sorted: k0/00 k0/02 ... k0/10, k1/01 ... k1/11; break k0/04, k1/07. */
    write_text(path_of("skip/k0/04.png"), "\x89PNG\r\n\x1a\n cut");
    truncate_to(path_of("skip/k1/07.png"), 50);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    expect_read_error(ds, DLA_ERR_FORMAT, "skip/k0/04.png", "PNG");
    dla_imds_free(ds);

    assert_ok(dla_imds_create(top, &(dla_imds_options){.skip_corrupt = 1}, &ds));
    dla_tensor *labels = dla_imds_labels(ds);
    dla_mbq *q;
    assert_ok(dla_mbq_create(2, (dla_mbq_input[]){{.images = ds}, {.tensor = labels}},
                                    &(dla_mbq_options){.mini_batch_size = 4, .seed = 1,
                                                       .dispatch_in_background = 1},
                                    &q));
    dla_tensor_release(labels);
    for (int pass = 0; pass < 2; pass++) {
        dla_mbq_shuffle(q);
        int total = 0;
        while (dla_mbq_hasdata(q)) {
            dla_tensor *b[2];
            assert_ok(dla_mbq_next(q, 2, b));
            int64_t n = dla_tensor_dim(b[0], 4);
            assert_int_equal(dla_tensor_dim(b[1], 2), n);
            float px[4 * 12];
            int32_t lab[4];
            to_host(b[0], px, sizeof(float) * 12 * (size_t)n);
            to_host(b[1], lab, sizeof(int32_t) * (size_t)n);
            for (int64_t k = 0; k < n; k++) {
                int id = id_of(px + 12 * k);
                assert_true(id != 4 && id != 7);
                assert_int_equal(lab[k], id % 2); /* never a neighbour's label */
            }
            total += (int)n;
            dla_tensor_release(b[0]);
            dla_tensor_release(b[1]);
        }
        assert_int_equal(total, 10);
    }
    assert_int_equal(dla_imds_num_skipped(ds), 2);
    /* Direct reads leave them out too. */
    dla_tensor *x, *t;
    assert_ok(dla_imds_readall(ds, &x, &t));
    assert_int_equal(dla_tensor_dim(x, 4), 10);
    assert_int_equal(dla_tensor_dim(t, 2), 10);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_mbq_free(q);
    dla_imds_free(ds);
}

static void test_misuse_is_refused(void **state)
{
    (void)state;
    dla_imds *ds;
    assert_int_equal(dla_imds_create(NULL, NULL, &ds), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_imds_create(standard_tree(), &(dla_imds_options){.dtype = DLA_I32}, &ds),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_ok(dla_imds_create(standard_tree(), NULL, &ds));
    assert_int_equal(dla_imds_set_read_size(ds, 0), DLA_ERR_INVALID_ARGUMENT);
    dla_tensor *x;
    assert_int_equal(dla_imds_read_files(ds, 1, (int64_t[]){5}, &x, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "idx[0] = 5"));
    dla_mbq *q;
    assert_int_equal(dla_mbq_create(2, (dla_mbq_input[]){{.images = ds}, {.images = ds}}, NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "second datastore"));
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.images = ds, .format = "SSBC"}}, NULL, &q),
                     DLA_ERR_FORMAT);
    dla_imds_free(ds);
    /* Used after free: refused, logged, no crash. */
    assert_int_equal(dla_imds_num_files(ds), 0);
    assert_non_null(strstr(dla_last_error(), "freed already"));
}

/* ------------------------------------------------------------ Fashion-MNIST */

/* `dlaccel export-images --limit 5`: folders only for the classes among
 * the 5 (it made all ten, and the empty ones made dla_imds_create refuse
 * the tree). */
static void test_export_with_a_small_limit_makes_no_empty_folder(void **state)
{
    (void)state;
    const char *build = getenv("DLA_TEST_BUILDDIR");
    if (access(DLA_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz", F_OK) != 0 || !build) {
        skip();
    }
    const char *top = path_of("fmnist5");
    rm_tree(top);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s/tools/dlaccel' export-images --limit 5 '%s' >/dev/null", build, top);
    assert_int_equal(system(cmd), 0);
    dla_tensor *xi, *ti;
    assert_ok(dla_fashion_mnist_load(NULL, "train",
                                     &(dla_fashion_mnist_options){.dtype = DLA_U8, .count = 5},
                                     &xi, &ti));
    int32_t lab[5];
    to_host(ti, lab, sizeof lab);
    int seen[DLA_FASHION_MNIST_CLASSES] = {0}, classes = 0;
    for (int i = 0; i < 5; i++)
        classes += !seen[lab[i]]++;
    int folders = 0;
    DIR *d = opendir(top);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        folders += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(folders, classes);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    assert_int_equal(dla_imds_num_files(ds), 5);
    assert_int_equal(dla_imds_num_categories(ds), classes);
    dla_imds_free(ds);
    dla_tensor_release(xi);
    dla_tensor_release(ti);
    rm_tree(top);
}

/* An export into a folder an earlier export filled with other files
 * (another --split or a larger --limit) fails, naming them: it exited 0,
 * and a datastore over the folder read the old files with the new ones
 * (10 test images and 290 train images, as "the test split"). The same
 * export again is fine. */
static void test_export_over_another_export_fails(void **state)
{
    (void)state;
    const char *build = getenv("DLA_TEST_BUILDDIR");
    if (access(DLA_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz", F_OK) != 0 || !build) {
        skip();
    }
    const char *top = path_of("fmnist_over");
    rm_tree(top);
    char cmd[1024];
    const char *fmt = "timeout 120 '%s/tools/dlaccel' export-images %s '%s' >/dev/null 2>&1";
    snprintf(cmd, sizeof cmd, fmt, build, "--limit 30", top);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, fmt, build, "--limit 30", top);
    assert_int_equal(system(cmd), 0); /* the same files again */
    snprintf(cmd, sizeof cmd, fmt, build, "--split test --limit 10", top);
    const int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    snprintf(cmd, sizeof cmd, fmt, build, "--limit 10", top);
    assert_int_not_equal(system(cmd), 0); /* 20 more than asked for */
    rm_tree(top);
}

/* `dlaccel export-images --limit 300` read back: the pixels and labels of
 * the IDX files, once the IDX order is restored from the file names. */
static void test_exported_fashion_mnist_reads_back_as_the_idx_files(void **state)
{
    (void)state;
    const char *build = getenv("DLA_TEST_BUILDDIR");
    if (access(DLA_FASHION_MNIST_DIR "/train-labels-idx1-ubyte.gz", F_OK) != 0 || !build) {
        skip(); /* the dataset's own test in test_data covers the message */
    }
    const char *top = path_of("fmnist");
    rm_tree(top);
    char cmd[1024];
    /* Under a timeout: a hung tool must not hang make check. */
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s/tools/dlaccel' export-images --limit 300 '%s' >/dev/null", build, top);
    assert_int_equal(system(cmd), 0);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.dtype = DLA_U8, .read_threads = 2},
                                     &ds));
    assert_int_equal(dla_imds_num_files(ds), 300);
    assert_int_equal(dla_imds_num_categories(ds), 10);
    assert_string_equal(dla_imds_category(ds, 0), "0_T-shirt-top");
    assert_string_equal(dla_imds_category(ds, 9), "9_Ankle_boot");
    int64_t order[300];
    for (int64_t i = 0; i < 300; i++) {
        const char *f = strrchr(dla_imds_file(ds, i), '/') + 1;
        order[atoi(f)] = i;
    }
    dla_imds *idx_order;
    assert_ok(dla_imds_subset(ds, 300, order, &idx_order));
    dla_tensor *x, *t, *xi, *ti;
    assert_ok(dla_imds_readall(idx_order, &x, &t));
    assert_ok(dla_fashion_mnist_load(NULL, "train",
                                            &(dla_fashion_mnist_options){.dtype = DLA_U8,
                                                                         .count = 300},
                                            &xi, &ti));
    static unsigned char a[300 * 784], b[300 * 784];
    int32_t la[300], lb[300];
    to_host(x, a, sizeof a);
    to_host(xi, b, sizeof b);
    to_host(t, la, sizeof la);
    to_host(ti, lb, sizeof lb);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(la, lb, sizeof la);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(xi);
    dla_tensor_release(ti);
    dla_imds_free(idx_order);
    dla_imds_free(ds);
}

/* trainnet from the folder and from the tensors: the same network, loss
 * for loss, with the same seed and order. */
static void test_trainnet_from_a_datastore_matches_training_from_memory(void **state)
{
    (void)state;
    const char *top = fresh("train");
    for (int i = 0; i < 40; i++) {
        mkdirs(path_of("train/k%d", i % 2));
        write_png(path_of("train/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    dla_tensor *x, *t;
    assert_ok(dla_imds_readall(ds, &x, &t));
    double losses[2][10], vloss[2];
    for (int run = 0; run < 2; run++) {
        dla_rng_seed(5);
        dla_layer *layers[] = {
            dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
            dla_fc_layer(2, NULL),
            dla_softmax_layer(NULL),
        };
        dla_net *net = dla_net_create(3, layers), *trained;
        dla_training_info *info;
        dla_train_data data = run ? (dla_train_data){.images = ds}
                                  : (dla_train_data){.predictors = x, .targets = t};
        /* The validation data from the datastore too (its labels as targets). */
        dla_training_options o = {.solver = "sgdm", .max_epochs = 2, .mini_batch_size = 8,
                                  .verbose = -1, .plots = "none", .shuffle = "every-epoch",
                                  .shuffle_seed = 3, .validation_data = &data,
                                  .validation_frequency = 4};
        assert_ok(dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                      &trained, &info));
        assert_int_equal(info->iterations, 10);
        for (int i = 0; i < 10; i++)
            losses[run][i] = info->training_loss[i];
        assert_true(info->validations >= 3);
        vloss[run] = info->final_validation_loss;
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
    }
    for (int i = 0; i < 10; i++)
        assert_true(losses[0][i] == losses[1][i]);
    assert_true(vloss[0] == vloss[1] && !isnan(vloss[0]));
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_imds_free(ds);
}

/* testnet over an image datastore without targets scores its labels, as
 * trainnet trains on them (MATLAB's testnet(net, imds, metrics)): the
 * same values as over the images and labels read into memory. It was
 * refused ("data: targets is NULL"). A datastore without labels is
 * refused, naming testnet. */
static void test_testnet_scores_a_datastore_by_its_labels(void **state)
{
    (void)state;
    const char *top = fresh("testnet");
    for (int i = 0; i < 10; i++) {
        mkdirs(path_of("testnet/k%d", i % 3));
        write_png(path_of("testnet/k%d/%02d.png", i % 3, i), i, 4, 3, 1);
    }
    dla_imds *ds, *none;
    assert_ok(dla_imds_create(top, NULL, &ds));
    assert_ok(dla_imds_create(top, &(dla_imds_options){.label_source = "none"}, &none));
    dla_tensor *x, *t;
    assert_ok(dla_imds_readall(ds, &x, &t));
    dla_rng_seed(9);
    dla_layer *layers[] = {
        dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
        dla_fc_layer(3, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(3, layers);
    double a[2], b[2];
    assert_ok(dla_testnet(net, &(dla_train_data){.predictors = x, .targets = t},
                          "accuracy,crossentropy", &(dla_predict_options){.mini_batch_size = 4},
                          a));
    assert_ok(dla_testnet(net, &(dla_train_data){.images = ds}, "accuracy,crossentropy",
                          &(dla_predict_options){.mini_batch_size = 4}, b));
    assert_true(a[0] == b[0] && a[1] == b[1] && !isnan(a[1]));
    assert_int_equal(dla_testnet(net, &(dla_train_data){.images = none}, "accuracy", NULL, b),
                     DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "dla_testnet") || !strstr(dla_last_error(), "no labels"))
        fail_msg("message \"%s\"", dla_last_error());
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_imds_free(none);
    dla_imds_free(ds);
}

/* testnet over an image datastore without targets numbers its labels by
 * the datastore's own classes: a test folder that lacks one of the
 * network's classes numbers the others differently from the training
 * datastore. Counted so, a 3-class network scored a test folder of
 * classes k0 and k2 against k0 and k1, in silence. It is refused, naming
 * the counts (MATLAB's testnet fails on the mismatch too); with targets
 * numbered by the training classes it scores. */
static void test_testnet_refuses_a_datastore_of_other_classes(void **state)
{
    (void)state;
    const char *top = fresh("testnet2");
    for (int i = 0; i < 8; i++) {
        mkdirs(path_of("testnet2/k%d", i % 2 ? 2 : 0));
        write_png(path_of("testnet2/k%d/%02d.png", i % 2 ? 2 : 0, i), i * 20, 4, 3, 1);
    }
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    assert_int_equal(dla_imds_num_categories(ds), 2);
    dla_tensor *x, *t;
    assert_ok(dla_imds_readall(ds, &x, &t));
    int32_t by_name[8];
    for (int64_t i = 0; i < 8; i++)
        by_name[i] = dla_imds_label(ds, i) ? 2 : 0;
    dla_tensor *tt = dla_tensor_from_host(by_name, DLA_I32, "CB", DLA_DIMS(1, 8));
    dla_rng_seed(9);
    dla_layer *layers[] = {
        dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
        dla_fc_layer(3, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(3, layers);
    double a[2], b[2] = {-1, -1};
    assert_ok(dla_testnet(net, &(dla_train_data){.predictors = x, .targets = tt},
                          "accuracy,crossentropy", NULL, a));
    dla_status st = dla_testnet(net, &(dla_train_data){.images = ds}, "accuracy,crossentropy",
                                NULL, b);
    if (st == DLA_OK)
        fail_msg("scored %g %g (by the training classes %g %g)", b[0], b[1], a[0], a[1]);
    assert_int_equal(st, DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "dla_testnet") || !strstr(dla_last_error(), "2 classes"))
        fail_msg("message \"%s\"", dla_last_error());
    /* So is such a datastore as trainnet's ValidationData beside training
     * data in memory (no training datastore to match its classes by
     * name); its validation accuracy was scored against k0 and k1. */
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    st = dla_trainnet(&(dla_train_data){.predictors = x, .targets = tt}, net,
                      &(dla_train_loss){.name = "crossentropy"},
                      &(dla_training_options){.verbose = -1, .max_epochs = 1, .mini_batch_size = 4,
                                              .validation_data = &(dla_train_data){.images = ds},
                                              .metrics = "accuracy"},
                      &trained, &info);
    if (st == DLA_OK)
        fail_msg("trained with validation accuracy %g", info->final_validation_accuracy);
    assert_int_equal(st, DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "ValidationData") || !strstr(dla_last_error(), "2 classes"))
        fail_msg("message \"%s\"", dla_last_error());
    assert_null(trained);
    dla_net_free(net);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(tt);
    dla_imds_free(ds);
}

/* A corrupt file met while training (and while computing the input
 * layer's statistics) stops trainnet with an error naming it. */
static void test_trainnet_names_a_corrupt_file(void **state)
{
    (void)state;
    const char *top = fresh("trainbad");
    for (int i = 0; i < 12; i++) {
        mkdirs(path_of("trainbad/k%d", i % 2));
        write_png(path_of("trainbad/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    truncate_to(path_of("trainbad/k1/07.png"), 40);
    dla_imds *ds;
    assert_ok(dla_imds_create(top, NULL, &ds));
    for (int norm = 0; norm < 2; norm++) {
        dla_layer *layers[] = {
            dla_image_input_layer(4, 3, 1, &(dla_image_input_options){
                                               .normalization = norm ? "zerocenter" : "none"}),
            dla_fc_layer(2, NULL),
            dla_softmax_layer(NULL),
        };
        dla_net *net = dla_net_create(3, layers), *trained;
        dla_training_options o = {.max_epochs = 1, .mini_batch_size = 4, .verbose = -1,
                                  .plots = "none", .reset_input_normalization = norm};
        dla_status st = dla_trainnet(&(dla_train_data){.images = ds}, net,
                                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL);
        assert_int_equal(st, DLA_ERR_FORMAT);
        if (!strstr(dla_last_error(), "trainbad/k1/07.png"))
            fail_msg("message \"%s\" does not name the file", dla_last_error());
        dla_net_free(trained);
        dla_net_free(net);
    }
    dla_imds_free(ds);
}

/* Validation images from a folder of their own, whose class list is not
 * the training folder's (a class missing): their labels are matched to
 * the training classes by name. They were the positions in the
 * validation folder's own list, so class "c" (2 in training) was
 * validated as class 1 ("b"), without a word. A validation class the
 * training data does not have is an error naming it. */
static void test_trainnet_validates_a_datastore_by_class_name(void **state)
{
    (void)state;
    const char *ttop = fresh("vtrain");
    static const char *cls[] = {"a", "b", "c"};
    for (int i = 0; i < 12; i++) {
        mkdirs(path_of("vtrain/%s", cls[i / 4]));
        write_png(path_of("vtrain/%s/%02d.png", cls[i / 4], i), 60 * (i / 4) + i, 4, 3, 1);
    }
    const char *vtop = fresh("vval");
    mkdirs(path_of("vval/a"));
    mkdirs(path_of("vval/c"));
    write_png(path_of("vval/a/0.png"), 1, 4, 3, 1);
    write_png(path_of("vval/a/1.png"), 2, 4, 3, 1);
    write_png(path_of("vval/c/2.png"), 121, 4, 3, 1);
    write_png(path_of("vval/c/3.png"), 122, 4, 3, 1);
    dla_imds *tds, *vds;
    assert_ok(dla_imds_create(ttop, NULL, &tds));
    assert_ok(dla_imds_create(vtop, NULL, &vds));
    dla_tensor *vx, *vt;
    assert_ok(dla_imds_readall(vds, &vx, NULL));
    vt = dla_tensor_from_host((int32_t[]){0, 0, 2, 2}, DLA_I32, "CB", DLA_DIMS(1, 4));
    double vloss[2];
    for (int run = 0; run < 2; run++) {
        dla_rng_seed(5);
        dla_layer *layers[] = {
            dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
            dla_fc_layer(3, NULL),
            dla_softmax_layer(NULL),
        };
        dla_net *net = dla_net_create(3, layers), *trained;
        dla_training_info *info;
        dla_train_data val = run ? (dla_train_data){.images = vds}
                                 : (dla_train_data){.predictors = vx, .targets = vt};
        dla_training_options o = {.solver = "sgdm", .max_epochs = 1, .mini_batch_size = 4,
                                  .verbose = -1, .plots = "none", .shuffle = "never",
                                  .validation_data = &val, .validation_frequency = 1};
        assert_ok(dla_trainnet(&(dla_train_data){.images = tds}, net,
                               &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info));
        vloss[run] = info->final_validation_loss;
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
    }
    if (!(vloss[0] == vloss[1]) || isnan(vloss[0]))
        fail_msg("validation loss %.9g from the folder, %.9g from the training class numbers",
                 vloss[1], vloss[0]);
    /* A class the training data lacks: refused, named. */
    mkdirs(path_of("vval/zebra"));
    write_png(path_of("vval/zebra/4.png"), 3, 4, 3, 1);
    dla_imds *vz;
    assert_ok(dla_imds_create(vtop, NULL, &vz));
    dla_layer *layers[] = {
        dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
        dla_fc_layer(3, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(3, layers), *trained = NULL;
    dla_training_options o = {.max_epochs = 1, .mini_batch_size = 4, .verbose = -1,
                              .plots = "none", .validation_data = &(dla_train_data){.images = vz}};
    assert_int_equal(dla_trainnet(&(dla_train_data){.images = tds}, net,
                                  &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(trained);
    if (!strstr(dla_last_error(), "zebra") || !strstr(dla_last_error(), "ValidationData"))
        fail_msg("message \"%s\" does not name the class", dla_last_error());
    /* No training data: an error, whatever the validation data. */
    assert_int_equal(dla_trainnet(NULL, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(trained);
    dla_net_free(net);
    dla_imds_free(vz);
    dla_tensor_release(vx);
    dla_tensor_release(vt);
    dla_imds_free(vds);
    dla_imds_free(tds);
}

/* A network without an input layer is initialized from the first image.
 * With skip_corrupt, a corrupt first file is skipped there as in the
 * batches: trainnet failed on it, though the batches would have left it
 * out. */
static void test_trainnet_initializes_past_a_skipped_first_file(void **state)
{
    (void)state;
    const char *top = fresh("initskip");
    for (int i = 0; i < 8; i++) {
        mkdirs(path_of("initskip/k%d", i % 2));
        write_png(path_of("initskip/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    truncate_to(path_of("initskip/k0/00.png"), 50); /* the first file */
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.skip_corrupt = 1}, &ds));
    dla_layer *layers[] = {dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(2, layers), *trained = NULL;
    assert_false(dla_net_initialized(net));
    dla_training_options o = {.max_epochs = 1, .mini_batch_size = 4, .verbose = -1,
                              .plots = "none"};
    assert_ok(dla_trainnet(&(dla_train_data){.images = ds}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL));
    assert_true(dla_net_initialized(trained));
    dla_net_free(trained);
    dla_net_free(net);
    dla_imds_free(ds);
}

/* minibatchpredict gives one score per file, in the files' order. A file
 * skipped as corrupt shifted the scores of every file after it one column
 * left, and the scores came back short, without a word: it is refused,
 * naming the file. */
static void test_minibatchpredict_refuses_a_skipped_file(void **state)
{
    (void)state;
    const char *top = fresh("predskip");
    for (int i = 0; i < 10; i++) {
        mkdirs(path_of("predskip/k%d", i % 2));
        write_png(path_of("predskip/k%d/%02d.png", i % 2, i), i, 4, 3, 1);
    }
    truncate_to(path_of("predskip/k0/04.png"), 50);
    dla_layer *layers[] = {
        dla_image_input_layer(4, 3, 1, &(dla_image_input_options){.normalization = "none"}),
        dla_fc_layer(2, NULL),
        dla_softmax_layer(NULL),
    };
    dla_net *net = dla_net_create(3, layers);
    assert_true(dla_net_initialized(net));
    dla_imds *ds;
    assert_ok(dla_imds_create(top, &(dla_imds_options){.skip_corrupt = 1}, &ds));
    for (int mbs = 3; mbs <= 16; mbs += 13) {
        dla_tensor *scores = (dla_tensor *)1;
        assert_int_equal(dla_minibatchpredict(net, &(dla_train_data){.images = ds},
                                              &(dla_predict_options){.mini_batch_size = mbs},
                                              &scores),
                         DLA_ERR_FORMAT);
        assert_null(scores);
        if (!strstr(dla_last_error(), "predskip/k0/04.png") ||
            !strstr(dla_last_error(), "dla_minibatchpredict"))
            fail_msg("message \"%s\" does not name the skipped file", dla_last_error());
    }
    /* Without the corrupt file, one score per file. */
    dla_imds *good;
    int64_t keep[9];
    for (int i = 0, k = 0; i < 10; i++)
        if (strcmp(dla_imds_file(ds, i), path_of("predskip/k0/04.png")))
            keep[k++] = i;
    assert_ok(dla_imds_subset(ds, 9, keep, &good));
    dla_tensor *scores;
    assert_ok(dla_minibatchpredict(net, &(dla_train_data){.images = good},
                                   &(dla_predict_options){.mini_batch_size = 4}, &scores));
    assert_int_equal(dla_tensor_dim(scores, 2), 9);
    dla_tensor_release(scores);
    dla_imds_free(good);
    dla_imds_free(ds);
    dla_net_free(net);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "%s/dla-imds-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(root);
    return 0;
}

int main(void)
{
    dla_set_allocator(tu_atomic_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_files_are_sorted_with_labels_from_their_folders),
        TU_TEST(test_a_dot_top_folder_labels_by_its_real_name),
        TU_TEST(test_read_gives_height_first_pixels_in_read_size_batches),
        TU_TEST(test_reads_in_a_scope_without_labels_release_nothing_twice),
        TU_TEST(test_readall_uint8_and_jpeg_and_rgb),
        TU_TEST(test_every_coding_of_the_fuzz_seeds_reads),
        TU_TEST(test_shuffle_is_seeded_and_partitions_cover_every_file_once),
        TU_TEST(test_split_each_label_takes_a_share_of_every_class),
        TU_TEST(test_augmented_datastore_resizes_reflects_rotates_and_translates),
        TU_TEST(test_augmented_resize_replicates_the_edge),
        TU_TEST(test_augmentation_directions_are_as_documented),
        TU_TEST(test_shear_and_fill_value_map_pixels_as_documented),
        TU_TEST(test_augmentation_composes_transforms_in_matlab_order),
        TU_TEST(test_x_and_y_scales_apart_and_fill_per_channel),
        TU_TEST(test_output_size_mode_crops_without_resizing),
        TU_TEST(test_color_preprocessing_mixes_gray_and_rgb),
        TU_TEST(test_png_transparency_is_dropped),
        TU_TEST(test_png_16_bit_samples_keep_their_precision),
        TU_TEST(test_png_16_bit_samples_read_exactly_as_matlab_scales_them),
        TU_TEST(test_a_queue_reads_the_datastore_on_its_threads_in_order),
        TU_TEST(test_background_dispatch_keeps_the_augmentation),
        TU_TEST(test_empty_folders_and_classes_and_stray_files_are_named),
        TU_TEST(test_a_stale_link_beside_the_images_is_left_out),
        TU_TEST(test_corrupt_truncated_and_foreign_files_are_named),
        TU_TEST(test_a_forged_jpeg_size_is_refused_before_decoding),
        TU_TEST(test_jpeg_warnings_that_leave_the_pixels_whole_are_read),
        TU_TEST(test_a_jpeg_of_too_many_scans_is_refused),
        TU_TEST(test_mixed_sizes_need_a_resize),
        TU_TEST(test_skip_corrupt_warns_once_and_keeps_labels_paired),
        TU_TEST(test_a_generic_datastore_before_the_images_stays_paired),
        TU_TEST(test_misuse_is_refused),
        TU_TEST(test_exported_fashion_mnist_reads_back_as_the_idx_files),
        TU_TEST(test_export_with_a_small_limit_makes_no_empty_folder),
        TU_TEST(test_export_over_another_export_fails),
        TU_TEST(test_trainnet_from_a_datastore_matches_training_from_memory),
        TU_TEST(test_testnet_scores_a_datastore_by_its_labels),
        TU_TEST(test_testnet_refuses_a_datastore_of_other_classes),
        TU_TEST(test_trainnet_names_a_corrupt_file),
        TU_TEST(test_minibatchpredict_refuses_a_skipped_file),
        TU_TEST(test_trainnet_initializes_past_a_skipped_first_file),
        TU_TEST(test_trainnet_validates_a_datastore_by_class_name),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

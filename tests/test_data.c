/*
 * test_data.c - the data pipeline: IDX files and every way one can be
 * malformed, Fashion-MNIST loading (from small files made here, and from
 * the dataset package when it is installed), sequence padding and masks,
 * the mini-batch queue (batches, shuffling, partitions, background
 * dispatch) and the synthetic waveforms against numpy's reference draws.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <dirent.h>
#include <malloc.h> /* malloc_usable_size, for the poisoning realloc */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------ helpers */

/* testutil's counting allocator, with counters that two threads (the
 * queue's dispatch thread and the test) can bump at once, and the
 * allocation to refuse (0: none). */
static atomic_long live_blocks, alloc_calls, refuse_at;

static atomic_int poison_moves;

static void *counting_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size && atomic_load(&refuse_at) && atomic_fetch_add(&alloc_calls, 1) + 1 == refuse_at)
        return NULL;
    if (size == 0) {
        if (ptr)
            atomic_fetch_sub(&live_blocks, 1);
        free(ptr);
        return NULL;
    }
    if (ptr && atomic_load(&poison_moves)) {
        /* A realloc that always moves and spoils the old block, so that
         * a read of it after the realloc shows without valgrind. */
        size_t old = malloc_usable_size(ptr);
        void *p = malloc(size);
        if (!p)
            return NULL;
        memcpy(p, ptr, old < size ? old : size);
        memset(ptr, 0xa5, old);
        free(ptr);
        return p;
    }
    void *p = realloc(ptr, size);
    if (p && !ptr)
        atomic_fetch_add(&live_blocks, 1);
    return p;
}

static char tmpdir[64];
static char made_files[64][128];
static int nmade;

static const char *tmp_path(const char *name)
{
    static char buf[4][160];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    int known = 0;
    for (int i = 0; i < nmade; i++)
        known |= strcmp(made_files[i], buf[k]) == 0;
    if (!known && nmade < 64)
        snprintf(made_files[nmade++], sizeof made_files[0], "%s", buf[k]);
    return buf[k];
}

/* Writes bytes as they are, gzip-compressed or plain. */
static void write_bytes(const char *path, const void *data, size_t n, int gz)
{
    if (gz) {
        gzFile f = gzopen(path, "wb6");
        assert_non_null(f);
        if (n)
            assert_int_equal(gzwrite(f, data, (unsigned)n), (int)n);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, n, f), n);
        fclose(f);
    }
}

/* An IDX header for type and dims, followed by nbytes of pattern bytes. */
static size_t idx_bytes(unsigned char *buf, int type, int ndims, const uint32_t *dims,
                        size_t nbytes)
{
    size_t at = 0;
    buf[at++] = 0;
    buf[at++] = 0;
    buf[at++] = (unsigned char)type;
    buf[at++] = (unsigned char)ndims;
    for (int i = 0; i < ndims; i++) {
        buf[at++] = (unsigned char)(dims[i] >> 24);
        buf[at++] = (unsigned char)(dims[i] >> 16);
        buf[at++] = (unsigned char)(dims[i] >> 8);
        buf[at++] = (unsigned char)dims[i];
    }
    for (size_t i = 0; i < nbytes; i++)
        buf[at++] = (unsigned char)(i * 7 + 1);
    return at;
}

static void expect_read_error(const char *path, dla_status status, const char *needle1,
                              const char *needle2)
{
    dla_idx idx;
    memset(&idx, 0xab, sizeof idx);
    assert_int_equal(dla_idx_read(path, &idx), status);
    assert_null(idx.data);
    assert_int_equal(idx.numel, 0);
    const char *msg = dla_last_error();
    assert_non_null(strstr(msg, "dla_idx_read"));
    assert_non_null(strstr(msg, path));
    assert_non_null(strstr(msg, needle1));
    if (needle2)
        assert_non_null(strstr(msg, needle2));
}

static void to_host_f32(dla_tensor *t, float *dst, int64_t n)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_numel(t), n);
    if (dla_tensor_dtype(t) == DLA_F32) {
        assert_int_equal(dla_tensor_to_host(t, dst, (size_t)n * sizeof *dst), DLA_OK);
    } else {
        dla_tensor *c = dla_cast(t, DLA_F32);
        assert_int_equal(dla_tensor_to_host(c, dst, (size_t)n * sizeof *dst), DLA_OK);
        dla_tensor_release(c);
    }
}

static void release_all(int n, dla_tensor **t)
{
    for (int i = 0; i < n; i++)
        dla_tensor_release(t[i]);
}

/* ------------------------------------------------------------------- IDX */

static void test_idx_round_trips_every_type_gzipped_and_plain(void **state)
{
    const dla_idx_type types[] = {DLA_IDX_U8,  DLA_IDX_I8,  DLA_IDX_I16,
                                  DLA_IDX_I32, DLA_IDX_F32, DLA_IDX_F64};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        for (int level = 0; level <= 9; level += 9) {
            size_t es = dla_idx_type_size(types[k]);
            unsigned char data[3 * 4 * 5 * 8];
            for (size_t i = 0; i < sizeof data; i++)
                data[i] = (unsigned char)(i * 31 + k);
            dla_idx w = {.type = types[k], .ndims = 3, .dims = {3, 4, 5}, .numel = 60,
                         .data = data};
            const char *p = tmp_path("roundtrip.idx");
            assert_int_equal(dla_idx_write(p, &w, level), DLA_OK);
            /* Plain files start with the IDX magic, gzip ones with 1f 8b. */
            unsigned char head[4];
            FILE *f = fopen(p, "rb");
            assert_non_null(f);
            assert_int_equal(fread(head, 1, 4, f), 4);
            fclose(f);
            if (level == 0) {
                assert_int_equal(head[0], 0);
                assert_int_equal(head[2], types[k]);
                assert_int_equal(head[3], 3);
            } else {
                assert_int_equal(head[0], 0x1f);
                assert_int_equal(head[1], 0x8b);
            }
            dla_idx r;
            assert_int_equal(dla_idx_read(p, &r), DLA_OK);
            assert_int_equal(r.type, types[k]);
            assert_int_equal(r.ndims, 3);
            assert_int_equal(r.dims[0], 3);
            assert_int_equal(r.dims[1], 4);
            assert_int_equal(r.dims[2], 5);
            assert_int_equal(r.numel, 60);
            assert_memory_equal(r.data, data, 60 * es);
            dla_idx_free(&r);
            assert_null(r.data);
        }
    }
    assert_string_equal(dla_idx_type_name(DLA_IDX_F32), "float");
    assert_string_equal(dla_idx_type_name((dla_idx_type)0x07), "unknown");
}

static void test_idx_multibyte_elements_are_big_endian_on_disk(void **state)
{
    const int32_t v[2] = {0x01020304, -2};
    dla_idx w = {.type = DLA_IDX_I32, .ndims = 1, .dims = {2}, .numel = 2, .data = (void *)v};
    const char *p = tmp_path("be.idx");
    assert_int_equal(dla_idx_write(p, &w, 0), DLA_OK);
    unsigned char b[16];
    FILE *f = fopen(p, "rb");
    assert_int_equal(fread(b, 1, sizeof b, f), 16);
    fclose(f);
    const unsigned char want[16] = {0, 0, 0x0C, 1, 0, 0, 0, 2, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe};
    assert_memory_equal(b, want, 16);
    dla_idx r;
    assert_int_equal(dla_idx_read(p, &r), DLA_OK);
    assert_int_equal(((int32_t *)r.data)[0], 0x01020304);
    assert_int_equal(((int32_t *)r.data)[1], -2);
    dla_idx_free(&r);
}

static void test_idx_missing_file_names_the_path_and_the_reason(void **state)
{
    expect_read_error(tmp_path("no-such-file.gz"), DLA_ERR_IO, "cannot open",
                      "No such file or directory");
}

/* A folder given as the file: an IO error saying so. It read "corrupt gzip
 * stream", which sent the user looking for a damaged download. */
static void test_idx_a_folder_is_not_called_a_corrupt_stream(void **state)
{
    const char *p = tmp_path("a-folder.idx.gz");
    assert_int_equal(mkdir(p, 0755), 0);
    expect_read_error(p, DLA_ERR_IO, "cannot read it", "Is a directory");
    assert_null(strstr(dla_last_error(), "corrupt"));
    rmdir(p);
}

static void test_idx_truncated_data_says_how_much_is_missing(void **state)
{
    unsigned char buf[256];
    const uint32_t dims[2] = {10, 4};
    size_t n = idx_bytes(buf, 0x08, 2, dims, 30); /* 40 announced, 30 there */
    for (int gz = 0; gz <= 1; gz++) {
        const char *p = tmp_path(gz ? "short.idx.gz" : "short.idx");
        write_bytes(p, buf, n, gz);
        expect_read_error(p, DLA_ERR_IO, "truncated", "needs 40 bytes");
        expect_read_error(p, DLA_ERR_IO, "holds 30", NULL);
    }
}

static void test_idx_truncated_header_is_an_io_error(void **state)
{
    const unsigned char three[3] = {0, 0, 8};
    const char *p = tmp_path("three.idx.gz");
    write_bytes(p, three, 3, 1);
    expect_read_error(p, DLA_ERR_IO, "truncated", "at least 4");
    /* Three dims announced, one and a half given. */
    const unsigned char dims[10] = {0, 0, 8, 3, 0, 0, 0, 5, 0, 0};
    p = tmp_path("dims.idx.gz");
    write_bytes(p, dims, sizeof dims, 1);
    expect_read_error(p, DLA_ERR_IO, "3 dims need a 16-byte header", "holds 10 bytes");
}

static void test_idx_gzip_cut_short_is_reported_with_zlib_words(void **state)
{
    unsigned char buf[4096 + 16];
    const uint32_t dims[1] = {4096};
    size_t n = idx_bytes(buf, 0x08, 1, dims, 4096);
    const char *whole = tmp_path("whole.idx.gz");
    write_bytes(whole, buf, n, 1);
    unsigned char gz[8192];
    FILE *f = fopen(whole, "rb");
    size_t gzn = fread(gz, 1, sizeof gz, f);
    fclose(f);
    const char *cut = tmp_path("cut.idx.gz");
    write_bytes(cut, gz, gzn / 2, 0);
    expect_read_error(cut, DLA_ERR_IO, "truncated", "unexpected end of file");
}

static void test_idx_gzip_with_a_bad_checksum_is_corrupt(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[1] = {20};
    size_t n = idx_bytes(buf, 0x08, 1, dims, 20);
    const char *p = tmp_path("crc.idx.gz");
    write_bytes(p, buf, n, 1);
    unsigned char gz[256];
    FILE *f = fopen(p, "rb");
    size_t gzn = fread(gz, 1, sizeof gz, f);
    fclose(f);
    gz[gzn - 8] ^= 0xff; /* the CRC-32 of the trailer */
    write_bytes(p, gz, gzn, 0);
    expect_read_error(p, DLA_ERR_IO, "corrupt gzip stream", "incorrect data check");
}

static void test_idx_bad_magic_is_a_format_error(void **state)
{
    const unsigned char b[12] = {0x12, 0x34, 8, 1, 0, 0, 0, 4, 1, 2, 3, 4};
    const char *p = tmp_path("magic.idx.gz");
    write_bytes(p, b, sizeof b, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "bad magic number 0x12340801", "two zero bytes");
}

static void test_idx_unknown_element_type_is_named(void **state)
{
    const unsigned char b[12] = {0, 0, 0x07, 1, 0, 0, 0, 4, 1, 2, 3, 4};
    const char *p = tmp_path("type.idx.gz");
    write_bytes(p, b, sizeof b, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "unknown element type 0x07", NULL);
}

static void test_idx_dim_counts_outside_the_supported_range_are_refused(void **state)
{
    const unsigned char zero[4] = {0, 0, 8, 0};
    const char *p = tmp_path("zero.idx.gz");
    write_bytes(p, zero, 4, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "announces 0 dims", NULL);
    const unsigned char nine[4] = {0, 0, 8, 9};
    p = tmp_path("nine.idx.gz");
    write_bytes(p, nine, 4, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "announces 9 dims", "1..8");
}

static void test_idx_bytes_after_the_data_mean_inconsistent_counts(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[2] = {2, 3};
    size_t n = idx_bytes(buf, 0x08, 2, dims, 6 + 5);
    const char *p = tmp_path("long.idx.gz");
    write_bytes(p, buf, n, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "5 bytes follow the data", "2x3");
}

static void test_idx_huge_dims_are_refused_before_allocating(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    size_t n = idx_bytes(buf, 0x0E, 3, dims, 0);
    const char *p = tmp_path("huge.idx.gz");
    write_bytes(p, buf, n, 1);
    expect_read_error(p, DLA_ERR_FORMAT, "too large", NULL);
}

/* Found by fuzzing (fuzz/fuzz_idx): a 41-byte file announcing a terabyte
 * was refused as out of memory (the reader allocated what the header
 * said before reading); it is truncated, and says so. */
static void test_idx_a_short_file_announcing_terabytes_is_truncated(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[3] = {0x10000u, 0x10000u, 0x100u}; /* 2^40 bytes */
    size_t n = idx_bytes(buf, 0x08, 3, dims, 30);
    for (int gz = 0; gz <= 1; gz++) {
        const char *p = tmp_path(gz ? "tera.idx.gz" : "tera.idx");
        write_bytes(p, buf, n, gz);
        expect_read_error(p, DLA_ERR_IO, "truncated", "holds 30");
    }
}

/* Found by mutation fuzzing: a gzip file cut inside its 8-byte trailer
 * (the CRC-32 and length after the last data) read as whole, its data
 * never checked; zlib says "unexpected end of file" and the read now
 * says truncated. Each cut from 1 to 8 bytes short of the end. */
static void test_idx_a_gzip_file_cut_in_its_trailer_is_truncated(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[2] = {3, 4};
    size_t n = idx_bytes(buf, 0x08, 2, dims, 12);
    const char *whole = tmp_path("trailer.idx.gz");
    write_bytes(whole, buf, n, 1);
    FILE *f = fopen(whole, "rb");
    assert_non_null(f);
    unsigned char gz[256];
    size_t len = fread(gz, 1, sizeof gz, f);
    fclose(f);
    assert_true(len > 8 && len < sizeof gz);
    dla_idx idx;
    assert_int_equal(dla_idx_read(whole, &idx), DLA_OK);
    dla_idx_free(&idx);
    const char *cut = tmp_path("trailer_cut.idx.gz");
    for (size_t drop = 1; drop <= 8; drop++) {
        write_bytes(cut, gz, len - drop, 0);
        expect_read_error(cut, DLA_ERR_IO, "truncated", "unexpected end of file");
    }
}

/* A FIFO no one writes to: gzopen's open waited for a writer for ever.
 * Read in a child that may run 10 s, so a wait fails instead of hanging;
 * the FIFO reads as empty. */
static void test_idx_a_fifo_without_a_writer_is_refused_at_once(void **state)
{
    const char *fifo = tmp_path("nowriter.fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        dla_idx idx;
        _exit(dla_idx_read(fifo, &idx) == DLA_ERR_IO && strstr(dla_last_error(), fifo) &&
                      strstr(dla_last_error(), "truncated")
                  ? 0
                  : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    unlink(fifo);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("the read %s", WIFSIGNALED(status) ? "waited until killed (10 s)"
                                                    : "did not fail as truncated");
}

/* An array past the reader's first 64 MiB, which it reads growing its
 * buffer: every byte arrives, in order. */
static void test_idx_an_array_past_64_mib_reads_whole(void **state)
{
    const size_t data = ((size_t)64 << 20) + 5;
    unsigned char *buf = malloc(data + 8);
    assert_non_null(buf);
    const uint32_t dims[1] = {(uint32_t)data};
    idx_bytes(buf, 0x08, 1, dims, 0);
    for (size_t i = 0; i < data; i++)
        buf[8 + i] = (unsigned char)(i * 13 + (i >> 20));
    const char *p = tmp_path("big.idx");
    write_bytes(p, buf, data + 8, 0);
    dla_idx idx;
    assert_int_equal(dla_idx_read(p, &idx), DLA_OK);
    assert_int_equal(idx.numel, (int64_t)data);
    assert_memory_equal(idx.data, buf + 8, data);
    dla_idx_free(&idx);
    remove(p);
    free(buf);
}

static void test_idx_write_refuses_an_inconsistent_array(void **state)
{
    unsigned char d[4] = {0};
    const char *p = tmp_path("w.idx");
    dla_idx w = {.type = DLA_IDX_U8, .ndims = 2, .dims = {2, 2}, .numel = 3, .data = d};
    assert_int_equal(dla_idx_write(p, &w, 0), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "not the product"));
    w.numel = 4;
    assert_int_equal(dla_idx_write(p, &w, 10), DLA_ERR_INVALID_ARGUMENT);
    w.type = (dla_idx_type)0x07;
    assert_int_equal(dla_idx_write(p, &w, 1), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "unknown type"));
    w.type = DLA_IDX_U8;
    assert_int_equal(dla_idx_write("/nonexistent-dir/x.idx", &w, 1), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "/nonexistent-dir/x.idx"));
    dla_idx r;
    assert_int_equal(dla_idx_read(NULL, &r), DLA_ERR_INVALID_ARGUMENT);
}

/* A write that fails part way (here the file size limit, as a full disk)
 * leaves the old file as it was, and no temporary file beside it: the
 * write went straight over the old file, which it destroyed. */
static void test_idx_write_that_fails_keeps_the_old_file(void **state)
{
    (void)state;
    char dir[96];
    snprintf(dir, sizeof dir, "%s/keep", tmpdir);
    assert_int_equal(mkdir(dir, 0777), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/k.idx", dir);
    unsigned char small[6] = {1, 2, 3, 4, 5, 6};
    dla_idx w = {.type = DLA_IDX_U8, .ndims = 2, .dims = {2, 3}, .numel = 6, .data = small};
    assert_int_equal(dla_idx_write(path, &w, 0), DLA_OK);
    assert_int_equal(chmod(path, 0640), 0);
    static unsigned char big[1 << 18];
    dla_idx wb = {.type = DLA_IDX_U8, .ndims = 1, .dims = {sizeof big}, .numel = sizeof big,
                  .data = big};
    struct rlimit was, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
    lim = was;
    lim.rlim_cur = 4096;
    void (*sig)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    dla_status st = dla_idx_write(path, &wb, 0);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
    signal(SIGXFSZ, sig);
    assert_int_equal(st, DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), path));
    dla_idx r;
    assert_int_equal(dla_idx_read(path, &r), DLA_OK);
    assert_int_equal(r.numel, 6);
    assert_memory_equal(r.data, small, 6);
    dla_idx_free(&r);
    /* Replaced whole on success, keeping the old file's mode. */
    assert_int_equal(dla_idx_write(path, &wb, 1), DLA_OK);
    assert_int_equal(dla_idx_read(path, &r), DLA_OK);
    assert_int_equal(r.numel, (int64_t)sizeof big);
    dla_idx_free(&r);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    int files = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        files += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(files, 1);
    unlink(path);
    rmdir(dir);
}

/* ------------------------------------------------------------ Fashion-MNIST */

/* A fake split of n 28x28 images whose pixel (r, c) of image k is
 * (k * 31 + r * 3 + c) % 256, and labels k % 10 (bad_label: 10 at the end). */
static void write_fake_split(const char *prefix, int nimages, int nlabels, int bad_label)
{
    static unsigned char img[16 + 8 * 784], lab[8 + 16];
    uint32_t idims[3] = {(uint32_t)nimages, 28, 28}, ldims[1] = {(uint32_t)nlabels};
    size_t ni = idx_bytes(img, 0x08, 3, idims, 0);
    for (int k = 0; k < nimages; k++)
        for (int r = 0; r < 28; r++)
            for (int c = 0; c < 28; c++)
                img[ni++] = (unsigned char)((k * 31 + r * 3 + c) % 256);
    size_t nl = idx_bytes(lab, 0x08, 1, ldims, 0);
    for (int k = 0; k < nlabels; k++)
        lab[nl++] = (unsigned char)(bad_label && k == nlabels - 1 ? 10 : k % 10);
    char name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", prefix);
    write_bytes(tmp_path(name), img, ni, 1);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", prefix);
    write_bytes(tmp_path(name), lab, nl, 1);
}

static void test_fashion_mnist_images_are_height_first_scaled_to_one(void **state)
{
    write_fake_split("train", 5, 5, 0);
    dla_tensor *x, *t;
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "train", NULL, &x, &t), DLA_OK);
    assert_string_equal(dla_tensor_format(x), "SSCB");
    assert_int_equal(dla_tensor_dtype(x), DLA_F32);
    assert_int_equal(dla_tensor_dim(x, 1), 28);
    assert_int_equal(dla_tensor_dim(x, 2), 28);
    assert_int_equal(dla_tensor_dim(x, 3), 1);
    assert_int_equal(dla_tensor_dim(x, 4), 5);
    static float px[5 * 784];
    to_host_f32(x, px, 5 * 784);
    for (int k = 0; k < 5; k++)
        for (int r = 0; r < 28; r++)
            for (int c = 0; c < 28; c++)
                assert_true(px[r + 28 * c + 784 * k] ==
                            (float)((k * 31 + r * 3 + c) % 256) / 255.0f);
    assert_string_equal(dla_tensor_format(t), "CB");
    assert_int_equal(dla_tensor_dtype(t), DLA_I32);
    assert_int_equal(dla_tensor_dim(t, 1), 1);
    assert_int_equal(dla_tensor_dim(t, 2), 5);
    int32_t lab[5];
    assert_int_equal(dla_tensor_to_host(t, lab, sizeof lab), DLA_OK);
    for (int k = 0; k < 5; k++)
        assert_int_equal(lab[k], k);
    dla_tensor_release(x);
    dla_tensor_release(t);
    assert_string_equal(dla_fashion_mnist_class_name(9), "Ankle boot");
    assert_string_equal(dla_fashion_mnist_class_name(10), "unknown");
}

static void test_fashion_mnist_options_give_bytes_one_hot_and_a_prefix(void **state)
{
    write_fake_split("t10k", 6, 6, 0);
    dla_tensor *x, *t;
    dla_fashion_mnist_options o = {.dtype = DLA_U8, .onehot = 1, .count = 4};
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "test", &o, &x, &t), DLA_OK);
    assert_int_equal(dla_tensor_dtype(x), DLA_U8);
    assert_int_equal(dla_tensor_dim(x, 4), 4);
    static uint8_t px[4 * 784];
    assert_int_equal(dla_tensor_to_host(x, px, sizeof px), DLA_OK);
    assert_int_equal(px[3 + 28 * 5 + 784 * 2], (2 * 31 + 3 * 3 + 5) % 256);
    assert_int_equal(dla_tensor_dim(t, 1), 10);
    assert_int_equal(dla_tensor_dim(t, 2), 4);
    assert_int_equal(dla_tensor_dtype(t), DLA_F32);
    float oh[40];
    to_host_f32(t, oh, 40);
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < 10; c++)
            assert_true(oh[c + 10 * k] == (c == k ? 1.0f : 0.0f));
    dla_tensor_release(x);
    dla_tensor_release(t);
    /* Labels alone, and a count past the end takes them all. */
    o = (dla_fashion_mnist_options){.count = 100};
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "test", &o, NULL, &t), DLA_OK);
    assert_int_equal(dla_tensor_dim(t, 2), 6);
    dla_tensor_release(t);
}

static void test_fashion_mnist_missing_files_say_which_and_what_to_install(void **state)
{
    dla_tensor *x = (dla_tensor *)1, *t = (dla_tensor *)1;
    const char *dir = tmp_path("empty-dir");
    assert_int_equal(dla_fashion_mnist_load(dir, "train", NULL, &x, &t), DLA_ERR_IO);
    assert_null(x);
    assert_null(t);
    const char *msg = dla_last_error();
    assert_non_null(strstr(msg, "dla_fashion_mnist_load"));
    assert_non_null(strstr(msg, "empty-dir/train-labels-idx1-ubyte.gz"));
    assert_non_null(strstr(msg, "No such file"));
    assert_non_null(strstr(msg, "dataset-fashion-mnist"));
}

static void test_fashion_mnist_inconsistent_files_are_named(void **state)
{
    dla_tensor *x, *t;
    write_fake_split("train", 5, 4, 0);
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "train", NULL, &x, &t), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "train-images-idx3-ubyte.gz holds 5 images"));
    assert_non_null(strstr(dla_last_error(), "train-labels-idx1-ubyte.gz holds 4 labels"));
    write_fake_split("train", 5, 5, 1);
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "train", NULL, &x, &t), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "label 10 at position 4 is outside 0..9"));
    /* A labels file where the images should be. */
    write_fake_split("train", 5, 5, 0);
    unsigned char lab[16];
    const uint32_t d[1] = {5};
    size_t n = idx_bytes(lab, 0x08, 1, d, 5);
    write_bytes(tmp_path("train-images-idx3-ubyte.gz"), lab, n, 1);
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "train", NULL, &x, &t), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_last_error(), "holds ubyte 5"));
    assert_non_null(strstr(dla_last_error(), "idx3-ubyte"));
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "validation", NULL, &x, &t),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"train\" or \"test\""));
}

/* Found by fuzzing under UBSan: an images file of no images announcing
 * 4294967295 x 4294967295 pixels (nothing in the file backs them) made
 * rows * columns overflow int64 (undefined behaviour) while the images
 * were unpacked; it is refused as a format error naming the file. */
static void test_fashion_mnist_images_of_uncountable_pixels_are_refused(void **state)
{
    unsigned char img[16], lab[8];
    const uint32_t idims[3] = {0, 0xffffffffu, 0xffffffffu}, ldims[1] = {0};
    size_t ni = idx_bytes(img, 0x08, 3, idims, 0), nl = idx_bytes(lab, 0x08, 1, ldims, 0);
    write_bytes(tmp_path("train-images-idx3-ubyte.gz"), img, ni, 1);
    write_bytes(tmp_path("train-labels-idx1-ubyte.gz"), lab, nl, 1);
    dla_tensor *x = NULL, *t = NULL;
    assert_int_equal(dla_fashion_mnist_load(tmpdir, "train", NULL, &x, &t), DLA_ERR_FORMAT);
    assert_null(x);
    assert_null(t);
    assert_non_null(strstr(dla_last_error(), "train-images-idx3-ubyte.gz"));
    assert_non_null(strstr(dla_last_error(), "4294967295x4294967295 pixels"));
}

/* The real files when dataset-fashion-mnist is installed; the clear error
 * for a missing package otherwise. Either way something is checked. */
static void test_fashion_mnist_from_the_dataset_package(void **state)
{
    dla_tensor *x, *t;
    dla_status st = dla_fashion_mnist_load(NULL, "test", &(dla_fashion_mnist_options){.dtype = DLA_U8},
                                           &x, &t);
    if (access(DLA_FASHION_MNIST_DIR "/t10k-labels-idx1-ubyte.gz", F_OK) != 0) {
        assert_int_equal(st, DLA_ERR_IO);
        assert_non_null(strstr(dla_last_error(), DLA_FASHION_MNIST_DIR "/t10k-labels-idx1"));
        assert_non_null(strstr(dla_last_error(), "dataset-fashion-mnist"));
        return;
    }
    assert_int_equal(st, DLA_OK);
    assert_int_equal(dla_tensor_dim(x, 1), 28);
    assert_int_equal(dla_tensor_dim(x, 4), 10000);
    static int32_t lab[10000];
    assert_int_equal(dla_tensor_to_host(t, lab, sizeof lab), DLA_OK);
    int counts[10] = {0};
    for (int i = 0; i < 10000; i++)
        counts[lab[i]]++;
    for (int c = 0; c < 10; c++)
        assert_int_equal(counts[c], 1000); /* the test split is balanced */
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* --------------------------------------------------------------- sequences */

/* Three sequences of 2 channels, lengths 3, 1, 4; value = 10 * (seq + 1) +
 * step, channel 1 negated. */
static dla_seqlist *three_sequences(void)
{
    dla_seqlist *s = dla_seqlist_create(2);
    assert_non_null(s);
    const int64_t len[3] = {3, 1, 4};
    for (int k = 0; k < 3; k++) {
        float v[8];
        for (int t = 0; t < len[k]; t++) {
            v[2 * t] = (float)(10 * (k + 1) + t);
            v[2 * t + 1] = -(float)(10 * (k + 1) + t);
        }
        assert_int_equal(dla_seqlist_append(s, v, len[k]), DLA_OK);
    }
    return s;
}

/* x(c, b, t) of a C x n x T batch. */
static float at3(const float *x, int64_t C, int64_t n, int64_t c, int64_t b, int64_t t)
{
    return x[c + C * (b + n * t)];
}

static void test_padsequences_longest_pads_at_the_end_and_masks_the_padding(void **state)
{
    dla_seqlist *s = three_sequences();
    dla_tensor *x, *m;
    dla_sequence_options o = {.padding_value = -1};
    assert_int_equal(dla_padsequences(s, 3, NULL, &o, &x, &m), DLA_OK);
    assert_string_equal(dla_tensor_format(x), "CBT");
    assert_int_equal(dla_tensor_dim(x, 1), 2);
    assert_int_equal(dla_tensor_dim(x, 2), 3);
    assert_int_equal(dla_tensor_dim(x, 3), 4);
    float v[24], mk[12];
    to_host_f32(x, v, 24);
    to_host_f32(m, mk, 12);
    assert_string_equal(dla_tensor_format(m), "CBT");
    assert_int_equal(dla_tensor_dtype(m), DLA_BOOL);
    assert_true(at3(v, 2, 3, 0, 0, 2) == 12);
    assert_true(at3(v, 2, 3, 1, 0, 2) == -12);
    assert_true(at3(v, 2, 3, 0, 0, 3) == -1); /* padding */
    assert_true(at3(v, 2, 3, 0, 1, 0) == 20);
    assert_true(at3(v, 2, 3, 0, 1, 1) == -1);
    assert_true(at3(v, 2, 3, 0, 2, 3) == 33);
    const float want_mask[12] = {1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 1}; /* (b, t), b fastest */
    assert_memory_equal(mk, want_mask, sizeof mk);
    dla_tensor_release(x);
    dla_tensor_release(m);
    dla_seqlist_free(s);
}

static void test_padsequences_shortest_truncates_the_end_or_the_start(void **state)
{
    dla_seqlist *s = three_sequences();
    dla_tensor *x;
    const int64_t pick[2] = {2, 0}; /* lengths 4 and 3 */
    assert_int_equal(dla_padsequences(s, 2, pick, &(dla_sequence_options){.length = "shortest"},
                                      &x, NULL),
                     DLA_OK);
    assert_int_equal(dla_tensor_dim(x, 3), 3);
    float v[12];
    to_host_f32(x, v, 12);
    assert_true(at3(v, 2, 2, 0, 0, 0) == 30); /* sequence 2 keeps its first steps */
    assert_true(at3(v, 2, 2, 0, 0, 2) == 32);
    assert_true(at3(v, 2, 2, 0, 1, 2) == 12);
    dla_tensor_release(x);
    dla_sequence_options left = {.length = "shortest", .padding_direction = "left"};
    assert_int_equal(dla_padsequences(s, 2, pick, &left, &x, NULL), DLA_OK);
    to_host_f32(x, v, 12);
    assert_true(at3(v, 2, 2, 0, 0, 0) == 31); /* its last steps */
    assert_true(at3(v, 2, 2, 0, 0, 2) == 33);
    assert_true(at3(v, 2, 2, 0, 1, 0) == 10);
    dla_tensor_release(x);
    dla_seqlist_free(s);
}

static void test_padsequences_a_number_pads_or_truncates_to_it(void **state)
{
    dla_seqlist *s = three_sequences();
    dla_tensor *x, *m;
    dla_sequence_options o = {.length = "2", .padding_value = 7, .padding_direction = "left"};
    assert_int_equal(dla_padsequences(s, 3, NULL, &o, &x, &m), DLA_OK);
    assert_int_equal(dla_tensor_dim(x, 3), 2);
    float v[12], mk[6];
    to_host_f32(x, v, 12);
    to_host_f32(m, mk, 6);
    assert_true(at3(v, 2, 3, 0, 0, 0) == 11); /* 10 11 12 -> last two */
    assert_true(at3(v, 2, 3, 0, 1, 0) == 7);  /* length 1, padded at the start */
    assert_true(at3(v, 2, 3, 1, 1, 1) == -20);
    assert_true(at3(v, 2, 3, 0, 2, 1) == 33);
    const float want[6] = {1, 0, 1, 1, 1, 1};
    assert_memory_equal(mk, want, sizeof mk);
    dla_tensor_release(x);
    dla_tensor_release(m);
    dla_seqlist_free(s);
}

static void test_padsequences_refuses_unknown_options_and_indices(void **state)
{
    dla_seqlist *s = three_sequences();
    dla_tensor *x = (dla_tensor *)1;
    assert_int_equal(dla_padsequences(s, 3, NULL, &(dla_sequence_options){.length = "long"}, &x,
                                      NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(x);
    assert_non_null(strstr(dla_last_error(), "\"long\""));
    assert_int_equal(dla_padsequences(s, 3, NULL, &(dla_sequence_options){.length = "0"}, &x,
                                      NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_padsequences(s, 3, NULL,
                                      &(dla_sequence_options){.padding_direction = "up"}, &x,
                                      NULL),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"right\" or \"left\""));
    const int64_t bad[1] = {3};
    assert_int_equal(dla_padsequences(s, 1, bad, NULL, &x, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "indices[0] = 3 is outside 0..2"));
    assert_int_equal(dla_padsequences(s, 4, NULL, NULL, &x, NULL), DLA_ERR_INVALID_ARGUMENT);
    dla_seqlist_free(s);
}

static void test_seqlist_takes_tensors_of_its_channel_count(void **state)
{
    dla_seqlist *s = dla_seqlist_create(2);
    const double v[6] = {1, 2, 3, 4, 5, 6};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F64, "CT", DLA_DIMS(2, 3));
    assert_int_equal(dla_seqlist_append_tensor(s, x), DLA_OK);
    assert_int_equal(dla_seqlist_count(s), 1);
    assert_int_equal(dla_seqlist_length(s, 0), 3);
    assert_true(dla_seqlist_data(s, 0)[5] == 6.0f);
    dla_tensor *bad = dla_tensor_from_host(v, DLA_F64, "CT", DLA_DIMS(3, 2));
    assert_int_equal(dla_seqlist_append_tensor(s, bad), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "2 x T"));
    assert_int_equal(dla_seqlist_length(s, 1), -1);
    assert_null(dla_seqlist_data(s, -1));
    assert_null(dla_seqlist_create(0));
    dla_tensor_release(x);
    dla_tensor_release(bad);
    dla_seqlist_free(s);
}

/* --------------------------------------------------------- mini-batch queue */

/* X: 2 x n "CB" with X(0, i) = i, X(1, i) = 1000 + i; T: 1 x n int32 i % 3. */
static void observations(int64_t n, dla_tensor **x, dla_tensor **t)
{
    float *xv = malloc((size_t)(2 * n) * sizeof *xv);
    int32_t *tv = malloc((size_t)n * sizeof *tv);
    for (int64_t i = 0; i < n; i++) {
        xv[2 * i] = (float)i;
        xv[2 * i + 1] = (float)(1000 + i);
        tv[i] = (int32_t)(i % 3);
    }
    *x = dla_tensor_from_host(xv, DLA_F32, "CB", DLA_DIMS(2, n));
    *t = dla_tensor_from_host(tv, DLA_I32, "CB", DLA_DIMS(1, n));
    free(xv);
    free(tv);
}

/* Takes the next batch, checks that X and T agree, and writes the
 * observation numbers into obs; returns the batch size. */
static int64_t next_obs(dla_mbq *q, int64_t *obs)
{
    dla_tensor *b[2];
    assert_int_equal(dla_mbq_next(q, 2, b), DLA_OK);
    int64_t n = dla_tensor_dim(b[0], 2);
    assert_string_equal(dla_tensor_format(b[0]), "CB");
    assert_int_equal(dla_tensor_dim(b[1], 2), n);
    float *xv = malloc((size_t)(2 * n) * sizeof *xv);
    int32_t *tv = malloc((size_t)n * sizeof *tv);
    to_host_f32(b[0], xv, 2 * n);
    assert_int_equal(dla_tensor_to_host(b[1], tv, (size_t)n * sizeof *tv), DLA_OK);
    for (int64_t k = 0; k < n; k++) {
        obs[k] = (int64_t)xv[2 * k];
        assert_true(xv[2 * k + 1] == 1000 + xv[2 * k]);
        assert_int_equal(tv[k], obs[k] % 3);
    }
    free(xv);
    free(tv);
    release_all(2, b);
    return n;
}

static void test_mbq_hands_out_batches_in_order_with_the_partial_last(void **state)
{
    dla_tensor *x, *t;
    observations(10, &x, &t);
    dla_mbq *q;
    dla_mbq_input in[2] = {{.tensor = x}, {.tensor = t}};
    assert_int_equal(dla_mbq_create(2, in, &(dla_mbq_options){.mini_batch_size = 4}, &q), DLA_OK);
    dla_tensor_release(x); /* the queue holds its own references */
    dla_tensor_release(t);
    assert_int_equal(dla_mbq_num_outputs(q), 2);
    assert_int_equal(dla_mbq_num_observations(q), 10);
    assert_int_equal(dla_mbq_num_batches(q), 3);
    int64_t obs[4], sizes[3], k = 0, seen = 0;
    while (dla_mbq_hasdata(q)) {
        sizes[k] = next_obs(q, obs);
        for (int64_t i = 0; i < sizes[k]; i++)
            assert_int_equal(obs[i], seen++);
        k++;
    }
    assert_int_equal(k, 3);
    assert_int_equal(sizes[0], 4);
    assert_int_equal(sizes[2], 2);
    dla_tensor *b[2];
    assert_int_equal(dla_mbq_next(q, 2, b), DLA_ERR_STATE);
    assert_null(b[0]);
    assert_non_null(strstr(dla_last_error(), "dla_mbq_reset"));
    dla_mbq_reset(q);
    assert_true(dla_mbq_hasdata(q));
    assert_int_equal(next_obs(q, obs), 4);
    assert_int_equal(obs[0], 0);
    /* A batch size of INT64_MAX ("all at once"): one batch of all 10. The
     * count was (n + size - 1) / size, which overflowed to 0, while the
     * pass handed out one batch (trainnet then refused the data). */
    assert_int_equal(dla_mbq_set_mini_batch_size(q, INT64_MAX), DLA_OK);
    assert_int_equal(dla_mbq_num_batches(q), 1);
    int64_t all[10];
    assert_int_equal(next_obs(q, all), 10);
    assert_false(dla_mbq_hasdata(q));
    dla_mbq_free(q);
}

static void test_mbq_discard_drops_the_partial_batch(void **state)
{
    dla_tensor *x, *t;
    observations(10, &x, &t);
    dla_mbq *q;
    dla_mbq_input in[2] = {{.tensor = x}, {.tensor = t}};
    dla_mbq_options o = {.mini_batch_size = 4, .partial_mini_batch = "discard"};
    assert_int_equal(dla_mbq_create(2, in, &o, &q), DLA_OK);
    assert_int_equal(dla_mbq_num_batches(q), 2);
    int64_t obs[4], k = 0;
    while (dla_mbq_hasdata(q)) {
        assert_int_equal(next_obs(q, obs), 4);
        k++;
    }
    assert_int_equal(k, 2);
    dla_mbq_free(q);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void test_mbq_shuffle_follows_numpy_permutations_of_the_seed(void **state)
{
    dla_tensor *x, *t;
    observations(10, &x, &t);
    dla_mbq_input in[2] = {{.tensor = x}, {.tensor = t}};
    dla_mbq *q, *q2;
    assert_int_equal(dla_mbq_create(2, in, &(dla_mbq_options){.mini_batch_size = 3}, &q), DLA_OK);
    assert_int_equal(dla_mbq_create(2, in, &(dla_mbq_options){.mini_batch_size = 3, .seed = 7},
                                    &q2),
                     DLA_OK);
    /* np.random.default_rng(0).permutation(10), twice. */
    const int64_t want[2][10] = {{4, 6, 2, 7, 3, 5, 9, 0, 8, 1}, {2, 9, 3, 6, 0, 4, 8, 7, 5, 1}};
    for (int e = 0; e < 2; e++) {
        dla_mbq_shuffle(q);
        int64_t order[10], got[10], at = 0;
        assert_int_equal(dla_mbq_order(q, order, 10), DLA_OK);
        assert_memory_equal(order, want[e], sizeof order);
        while (dla_mbq_hasdata(q))
            at += next_obs(q, got + at);
        assert_int_equal(at, 10);
        assert_memory_equal(got, want[e], sizeof got);
    }
    dla_mbq_shuffle(q2);
    int64_t order[10];
    assert_int_equal(dla_mbq_order(q2, order, 10), DLA_OK);
    const int64_t want7[10] = {8, 0, 7, 1, 3, 6, 2, 4, 5, 9}; /* default_rng(7) */
    assert_memory_equal(order, want7, sizeof order);
    dla_mbq_free(q);
    dla_mbq_free(q2);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* Parts of a queue, plain or dispatching in the background (a part of a
 * background queue dispatches its own batches in the background too). */
static void test_mbq_partitions_cover_every_observation_once(void **state)
{
    dla_tensor *x, *t;
    observations(10, &x, &t);
    dla_mbq_input in[2] = {{.tensor = x}, {.tensor = t}};
    dla_mbq *q;
    for (int background = 1; background >= 0; background--) {
        assert_int_equal(dla_mbq_create(2, in,
                                        &(dla_mbq_options){.mini_batch_size = 2,
                                                           .dispatch_in_background = background},
                                        &q), DLA_OK);
        dla_mbq_shuffle(q);
        for (int round = 0; round < 2; round++) {
            int seen[10] = {0};
            const int64_t sizes[3] = {4, 3, 3};
            for (int w = 0; w < 3; w++) {
                dla_mbq *p;
                assert_int_equal(dla_mbq_partition(q, 3, w, &p), DLA_OK);
                assert_int_equal(dla_mbq_num_observations(p), sizes[w]);
                if (round)
                    dla_mbq_shuffle(p); /* reorders only the part */
                int64_t obs[2];
                while (dla_mbq_hasdata(p)) {
                    int64_t n = next_obs(p, obs);
                    for (int64_t k = 0; k < n; k++)
                        seen[obs[k]]++;
                }
                dla_mbq_free(p);
            }
            for (int i = 0; i < 10; i++)
                assert_int_equal(seen[i], 1);
        }
        if (background)
            dla_mbq_free(q);
    }
    dla_mbq *p;
    assert_int_equal(dla_mbq_partition(q, 3, 3, &p), DLA_ERR_INVALID_ARGUMENT);
    assert_null(p);
    assert_int_equal(dla_mbq_partition(q, 0, 0, &p), DLA_ERR_INVALID_ARGUMENT);
    /* More parts than observations: some are empty, none fails. */
    assert_int_equal(dla_mbq_partition(q, 12, 11, &p), DLA_OK);
    assert_int_equal(dla_mbq_num_observations(p), 0);
    assert_false(dla_mbq_hasdata(p));
    dla_mbq_free(p);
    dla_mbq_free(q);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* Every output of every batch of three shuffled passes, as floats. */
static int64_t drain_passes(dla_mbq *q, float *dst, int passes)
{
    int64_t at = 0;
    int nout = dla_mbq_num_outputs(q);
    for (int e = 0; e < passes; e++) {
        dla_mbq_shuffle(q);
        while (dla_mbq_hasdata(q)) {
            dla_tensor *b[4];
            assert_int_equal(dla_mbq_next(q, nout, b), DLA_OK);
            for (int i = 0; i < nout; i++) {
                int64_t n = dla_tensor_numel(b[i]);
                int64_t dims[DLA_MAX_DIMS];
                int nd = dla_tensor_dims(b[i], dims);
                for (int d = 0; d < nd; d++)
                    dst[at++] = (float)dims[d];
                to_host_f32(b[i], dst + at, n);
                at += n;
            }
            release_all(nout, b);
        }
    }
    return at;
}

static void test_mbq_background_dispatch_gives_the_foreground_batches(void **state)
{
    dla_seqlist *s;
    dla_tensor *y;
    assert_int_equal(dla_waveform_generate(50, 3, NULL, &s, &y), DLA_OK);
    dla_mbq_input in[2] = {{.sequences = s, .mask = 1}, {.tensor = y, .cast = "single"}};
    dla_mbq_options o = {.mini_batch_size = 8, .seed = 11, .sequence = {.length = "shortest"}};
    dla_mbq *fg, *bg;
    assert_int_equal(dla_mbq_create(2, in, &o, &fg), DLA_OK);
    o.dispatch_in_background = 1;
    o.prefetch = 3;
    assert_int_equal(dla_mbq_create(2, in, &o, &bg), DLA_OK);
    assert_int_equal(dla_mbq_num_outputs(bg), 3);
    size_t cap = 3 * 7 * (3 * 8 * 150 + 8 * 150 + 8 + 12);
    float *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    int64_t na = drain_passes(fg, a, 3), nb = drain_passes(bg, b, 3);
    assert_true((size_t)na <= cap);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof *a);
    /* A reset in mid-pass drops what was made ahead and starts over. */
    dla_mbq_shuffle(fg);
    dla_mbq_shuffle(bg);
    dla_tensor *t1[3], *t2[3];
    assert_int_equal(dla_mbq_next(bg, 3, t2), DLA_OK);
    release_all(3, t2);
    dla_mbq_reset(bg);
    assert_int_equal(dla_mbq_next(fg, 3, t1), DLA_OK);
    assert_int_equal(dla_mbq_next(bg, 3, t2), DLA_OK);
    float v1[3 * 8 * 150], v2[3 * 8 * 150];
    to_host_f32(t1[0], v1, dla_tensor_numel(t1[0]));
    to_host_f32(t2[0], v2, dla_tensor_numel(t2[0]));
    assert_int_equal(dla_tensor_numel(t1[0]), dla_tensor_numel(t2[0]));
    assert_memory_equal(v1, v2, (size_t)dla_tensor_numel(t1[0]) * sizeof *v1);
    release_all(3, t1);
    /* Freed with batches still being made: the thread stops cleanly, and a
     * batch handed out before stays valid. */
    dla_mbq_free(bg);
    to_host_f32(t2[0], v2, dla_tensor_numel(t2[0]));
    release_all(3, t2);
    dla_mbq_free(fg);
    free(a);
    free(b);
    dla_tensor_release(y);
    dla_seqlist_free(s);
}

static void test_mbq_sequence_batches_are_cbt_with_their_mask(void **state)
{
    dla_seqlist *s = three_sequences();
    const int32_t lab[3] = {5, 6, 7};
    dla_tensor *t = dla_tensor_from_host(lab, DLA_I32, "CB", DLA_DIMS(1, 3));
    dla_mbq_input in[2] = {{.sequences = s, .mask = 1}, {.tensor = t}};
    dla_mbq *q;
    dla_mbq_options o = {.mini_batch_size = 2, .sequence = {.padding_value = 9}};
    assert_int_equal(dla_mbq_create(2, in, &o, &q), DLA_OK);
    dla_tensor *b[3];
    assert_int_equal(dla_mbq_next(q, 3, b), DLA_OK);
    assert_string_equal(dla_tensor_format(b[0]), "CBT");
    assert_int_equal(dla_tensor_dim(b[0], 2), 2);
    assert_int_equal(dla_tensor_dim(b[0], 3), 3); /* longest of lengths 3 and 1 */
    float v[12], m[6];
    to_host_f32(b[0], v, 12);
    to_host_f32(b[1], m, 6);
    assert_true(at3(v, 2, 2, 0, 1, 2) == 9);
    const float want[6] = {1, 1, 1, 0, 1, 0};
    assert_memory_equal(m, want, sizeof m);
    int32_t l[2];
    assert_int_equal(dla_tensor_to_host(b[2], l, sizeof l), DLA_OK);
    assert_int_equal(l[1], 6);
    release_all(3, b);
    assert_int_equal(dla_mbq_next(q, 3, b), DLA_OK);
    assert_int_equal(dla_tensor_dim(b[0], 2), 1);
    assert_int_equal(dla_tensor_dim(b[0], 3), 4);
    release_all(3, b);
    dla_mbq_free(q);
    dla_tensor_release(t);
    dla_seqlist_free(s);
}

static dla_status scale_bytes(void *ctx, int n, dla_tensor **out)
{
    int *calls = ctx;
    (*calls)++;
    out[0] = dla_affine(out[0], 1.0 / 255, 0);
    return dla_tensor_status(out[0]);
}

static dla_status refuse(void *ctx, int n, dla_tensor **out) { return DLA_ERR_UNSUPPORTED; }

/* *ctx < 0: one dla_scope_end more than it began; > 0: a scope left open. */
static dla_status unpaired_fcn(void *ctx, int n, dla_tensor **out)
{
    (void)n;
    if (*(int *)ctx > 0)
        dla_scope_begin();
    out[0] = dla_affine(out[0], 2, 0);
    if (*(int *)ctx < 0)
        dla_scope_end();
    return DLA_OK;
}

static void test_mbq_casts_relabels_and_runs_the_mini_batch_function(void **state)
{
    uint8_t px[2 * 2 * 1 * 5];
    for (int i = 0; i < 20; i++)
        px[i] = (uint8_t)(i * 10);
    dla_tensor *x = dla_tensor_from_host(px, DLA_U8, "", DLA_DIMS(2, 2, 1, 5));
    int calls = 0;
    dla_mbq_input in[1] = {{.tensor = x, .format = "SSCB", .cast = "single"}};
    dla_mbq_options o = {.mini_batch_size = 3, .mini_batch_fcn = scale_bytes,
                         .mini_batch_ctx = &calls};
    dla_mbq *q;
    assert_int_equal(dla_mbq_create(1, in, &o, &q), DLA_OK);
    dla_tensor *b;
    assert_int_equal(dla_mbq_next(q, 1, &b), DLA_OK);
    assert_int_equal(calls, 1);
    assert_string_equal(dla_tensor_format(b), "SSCB");
    assert_int_equal(dla_tensor_dtype(b), DLA_F32);
    assert_int_equal(dla_tensor_dim(b, 4), 3);
    float v[12];
    to_host_f32(b, v, 12);
    assert_true(tu_close(v[5], 50.0 / 255, 1e-6));
    dla_tensor_release(b);
    dla_mbq_free(q);
    /* A function's failure is the batch's. */
    o.mini_batch_fcn = refuse;
    assert_int_equal(dla_mbq_create(1, in, &o, &q), DLA_OK);
    assert_int_equal(dla_mbq_next(q, 1, &b), DLA_ERR_UNSUPPORTED);
    assert_null(b);
    assert_non_null(strstr(dla_last_error(), "mini_batch_fcn"));
    dla_mbq_free(q);
    /* One dla_scope_end more than it began, or a scope left open, in the
     * foreground and on the dispatch thread: the batch's error, naming
     * it. The extra end released the batch under the queue, then closed
     * the caller's scope (foreground) or left the dispatch thread's
     * scopes one short; a scope left open piled up one a batch. */
    for (int bg = 0; bg < 2; bg++)
        for (int mode = -1; mode <= 1; mode += 2) {
            o.mini_batch_fcn = unpaired_fcn;
            o.mini_batch_ctx = &mode;
            o.dispatch_in_background = bg;
            dla_scope_begin();
            const int depth = dla_scope_depth();
            dla_tensor *mine = dla_full(4.0, DLA_F32, "", DLA_DIMS(1, 1));
            assert_int_equal(dla_mbq_create(1, in, &o, &q), DLA_OK);
            assert_int_equal(dla_mbq_next(q, 1, &b), DLA_ERR_STATE);
            assert_null(b);
            assert_non_null(strstr(dla_last_error(), "mini_batch_fcn"));
            assert_non_null(strstr(dla_last_error(), mode < 0 ? "called dla_scope_end 1 more time"
                                                              : "left 1 scope open"));
            assert_int_equal(dla_scope_depth(), depth);
            assert_true(dla_tensor_item(mine, 0) == 4.0);
            dla_mbq_free(q);
            dla_scope_end();
        }
    dla_tensor_release(x);
}

#ifdef _OPENMP
static dla_status note_threads(void *ctx, int n, dla_tensor **out)
{
    (void)n, (void)out;
    *(int *)ctx = omp_get_max_threads();
    return DLA_OK;
}
#endif

/* Batches made on the dispatch thread run their kernels on that thread
 * alone: a second OpenMP team beside the training step's would put more
 * OpenMP threads than cores on the machine, and libgomp then sleeps and
 * wakes the step's threads at every parallel region. */
static void test_mbq_dispatch_thread_starts_no_second_openmp_team(void **state)
{
#ifdef _OPENMP
    omp_set_num_threads(2); /* as on a 2-core machine, whatever this one has */
    uint8_t px[4 * 6] = {0};
    dla_tensor *x = dla_tensor_from_host(px, DLA_U8, "", DLA_DIMS(2, 2, 1, 6));
    int seen = 0;
    dla_mbq_input in[1] = {{.tensor = x, .format = "SSCB"}};
    dla_mbq_options o = {.mini_batch_size = 3, .mini_batch_fcn = note_threads,
                         .mini_batch_ctx = &seen};
    dla_mbq *q;
    /* Made in the foreground, the batch sees the caller's threads... */
    assert_int_equal(dla_mbq_create(1, in, &o, &q), DLA_OK);
    dla_tensor *b;
    assert_int_equal(dla_mbq_next(q, 1, &b), DLA_OK);
    dla_tensor_release(b);
    dla_mbq_free(q);
    assert_int_equal(seen, 2);
    /* ...made in the background, one. */
    o.dispatch_in_background = 1;
    assert_int_equal(dla_mbq_create(1, in, &o, &q), DLA_OK);
    assert_int_equal(dla_mbq_next(q, 1, &b), DLA_OK);
    dla_tensor_release(b);
    dla_mbq_free(q);
    assert_int_equal(seen, 1);
    assert_int_equal(omp_get_max_threads(), 2);
    dla_tensor_release(x);
#else
    skip(); /* built without OpenMP: there is no team to start */
#endif
}

/* A mini-batch function that draws (noise as augmentation): with background
 * dispatch it ran on the dispatch thread, whose Philox stream is seed 0
 * from its start, so every queue drew the same noise whatever dla_rng_seed
 * the caller set, and other noise than the same queue without the thread
 * (against DispatchInBackground's "the same batches"). The queue's
 * functions now draw from a stream of the queue's, seeded from the
 * creating thread's: the same batches either way, reset and shuffle
 * included, another seed other noise, and the caller's stream untouched. */
static dla_status add_noise(void *ctx, int n, dla_tensor **out)
{
    (void)ctx, (void)n;
    out[0] = dla_add(out[0], dla_randn(DLA_F32, "", DLA_DIMS(1, dla_tensor_dim(out[0], 2))));
    return dla_tensor_status(out[0]);
}

/* The first values of 7 batches over 4 passes of a queue made after
 * dla_rng_seed(seed): a reset after the first batch and a shuffle after
 * the third drop the batches made ahead. */
static void noisy_batches(uint64_t seed, int background, float *got)
{
    dla_tensor *x = dla_zeros(DLA_F32, "", DLA_DIMS(1, 12));
    dla_mbq *q;
    dla_rng_seed(seed);
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x}},
                                    &(dla_mbq_options){.mini_batch_size = 4, .prefetch = 3,
                                                       .dispatch_in_background = background,
                                                       .mini_batch_fcn = add_noise},
                                    &q),
                     DLA_OK);
    dla_tensor_release(x);
    for (int k = 0; k < 7; k++) {
        if (!dla_mbq_hasdata(q))
            dla_mbq_reset(q);
        dla_tensor *b;
        assert_int_equal(dla_mbq_next(q, 1, &b), DLA_OK);
        assert_int_equal(dla_tensor_to_host(b, got + 4 * k, 4 * sizeof(float)), DLA_OK);
        dla_tensor_release(b);
        if (k == 0)
            dla_mbq_reset(q);
        if (k == 2)
            dla_mbq_shuffle(q);
    }
    dla_mbq_free(q);
    uint64_t s, c;
    dla_rng_get(&s, &c);
    assert_true(s == seed && c == 0); /* the caller's stream did not move */
}

static void test_mbq_function_draws_are_the_same_in_the_background(void **state)
{
    float fg[28], bg[28], other[28];
    noisy_batches(1, 0, fg);
    noisy_batches(1, 1, bg);
    noisy_batches(2, 1, other);
    assert_memory_equal(bg, fg, sizeof fg);
    assert_true(memcmp(fg, other, sizeof fg) != 0);
    /* Each batch drew noise of its own. */
    assert_true(memcmp(fg, fg + 4, 4 * sizeof(float)) != 0);
}

/* Three shuffled passes of a training loop that releases nothing by hand:
 * each batch belongs to the iteration's scope. */
static void train_in_scopes(dla_tensor *x, dla_tensor *t, int background)
{
    dla_mbq_input in[2] = {{.tensor = x}, {.tensor = t}};
    dla_mbq *q;
    dla_mbq_options o = {.mini_batch_size = 8, .dispatch_in_background = background};
    assert_int_equal(dla_mbq_create(2, in, &o, &q), DLA_OK);
    for (int e = 0; e < 3; e++) {
        dla_mbq_shuffle(q);
        while (dla_mbq_hasdata(q)) {
            dla_scope_begin();
            dla_tensor *b[2];
            assert_int_equal(dla_mbq_next(q, 2, b), DLA_OK);
            dla_tensor *s = dla_sum(b[0], 0, NULL);
            assert_int_equal(dla_tensor_status(s), DLA_OK);
            dla_scope_end();
        }
    }
    dla_mbq_free(q);
}

static void test_mbq_batches_belong_to_the_open_scope(void **state)
{
    dla_tensor *x, *t;
    observations(60, &x, &t);
    for (int background = 0; background <= 1; background++) {
        train_in_scopes(x, t, background); /* warms the devices' caches */
        long live = atomic_load(&live_blocks);
        train_in_scopes(x, t, background);
        assert_int_equal(atomic_load(&live_blocks), live); /* nothing leaked */
    }
    dla_tensor_release(x);
    dla_tensor_release(t);
}

static void test_mbq_refuses_inputs_that_do_not_fit(void **state)
{
    dla_tensor *x, *t;
    observations(10, &x, &t);
    dla_tensor *t5 = dla_zeros(DLA_I32, "CB", DLA_DIMS(1, 5));
    dla_mbq *q = (dla_mbq *)1;
    assert_int_equal(dla_mbq_create(2, (dla_mbq_input[]){{.tensor = x}, {.tensor = t5}}, NULL, &q),
                     DLA_ERR_SHAPE);
    assert_null(q);
    assert_non_null(strstr(dla_last_error(), "inputs[1]: 5 observations, but inputs[0] has 10"));
    dla_seqlist *s = three_sequences();
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x, .sequences = s}}, NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "exactly one"));
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x, .format = "SSCB"}}, NULL,
                                    &q),
                     DLA_ERR_FORMAT);
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x, .cast = "half"}}, NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"half\""));
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x, .mask = 1}}, NULL, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.sequences = s, .format = "CTB"}}, NULL,
                                    &q),
                     DLA_ERR_FORMAT);
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x}},
                                    &(dla_mbq_options){.partial_mini_batch = "keep"}, &q),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"return\" or \"discard\""));
    assert_int_equal(dla_mbq_create(0, NULL, NULL, &q), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x}}, NULL, &q), DLA_OK);
    dla_tensor *b[2];
    assert_int_equal(dla_mbq_next(q, 2, b), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "the queue has 1 output"));
    assert_null(strstr(dla_last_error(), "1 outputs"));
    assert_int_equal(dla_mbq_set_mini_batch_size(q, 0), DLA_ERR_INVALID_ARGUMENT);
    assert_int_equal(dla_mbq_set_mini_batch_size(q, 3), DLA_OK);
    assert_int_equal(dla_mbq_num_batches(q), 4);
    dla_mbq_free(q);
    dla_seqlist_free(s);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_tensor_release(t5);
}

/* --------------------------------------------------------------- waveforms */

static void test_waveforms_are_numpys_reference_draws(void **state)
{
    /* make_data(1000, 0) of shared/peers/waveform_seq.py (numpy 1.24). */
    const double p[4] = {0.35, 0.30, 0.20, 0.15};
    dla_seqlist *s;
    dla_tensor *y;
    assert_int_equal(dla_waveform_generate(1000, 0,
                                           &(dla_waveform_options){.class_proportions = p}, &s,
                                           &y),
                     DLA_OK);
    assert_int_equal(dla_seqlist_count(s), 1000);
    assert_int_equal(dla_seqlist_channels(s), 3);
    static int32_t lab[1000];
    assert_int_equal(dla_tensor_to_host(y, lab, sizeof lab), DLA_OK);
    int counts[4] = {0};
    for (int i = 0; i < 1000; i++)
        counts[lab[i]]++;
    assert_int_equal(counts[0], 338);
    assert_int_equal(counts[1], 300);
    assert_int_equal(counts[2], 209);
    assert_int_equal(counts[3], 153);
    assert_int_equal(lab[0], 1);
    assert_int_equal(lab[1], 0);
    assert_int_equal(lab[2], 2);
    assert_int_equal(dla_seqlist_length(s, 0), 126);
    assert_int_equal(dla_seqlist_length(s, 1), 113);
    assert_int_equal(dla_seqlist_length(s, 2), 141);
    const float *v0 = dla_seqlist_data(s, 0), *v2 = dla_seqlist_data(s, 2);
    assert_true(v0[0] == 0x1.85e1f6p-3f);
    assert_true(v0[1] == 0x1.15b502p+0f);
    assert_true(v0[2] == 0x1.42c286p-1f);
    assert_true(v0[3 * 125 + 2] == 0x1.865af2p-1f);
    assert_true(v2[3 * 140 + 2] == -0x1.10c9bap+0f);
    dla_tensor_release(y);
    dla_seqlist_free(s);
    /* make_data(200, 1): the held-out set. */
    assert_int_equal(dla_waveform_generate(200, 1,
                                           &(dla_waveform_options){.class_proportions = p}, &s,
                                           NULL),
                     DLA_OK);
    assert_int_equal(dla_seqlist_length(s, 0), 138);
    assert_int_equal(dla_seqlist_length(s, 4), 100);
    dla_seqlist_free(s);
}

static void test_waveforms_repeat_with_the_seed_and_differ_without(void **state)
{
    dla_seqlist *a, *b, *c;
    assert_int_equal(dla_waveform_generate(20, 5, NULL, &a, NULL), DLA_OK);
    assert_int_equal(dla_waveform_generate(20, 5, NULL, &b, NULL), DLA_OK);
    assert_int_equal(dla_waveform_generate(20, 6, NULL, &c, NULL), DLA_OK);
    int same_c = 1;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(dla_seqlist_length(a, i), dla_seqlist_length(b, i));
        assert_true(dla_seqlist_length(a, i) >= 100 && dla_seqlist_length(a, i) <= 150);
        assert_memory_equal(dla_seqlist_data(a, i), dla_seqlist_data(b, i),
                            (size_t)(3 * dla_seqlist_length(a, i)) * sizeof(float));
        same_c &= dla_seqlist_length(a, i) == dla_seqlist_length(c, i);
    }
    assert_false(same_c);
    dla_seqlist_free(a);
    dla_seqlist_free(b);
    dla_seqlist_free(c);
}

static void test_waveform_class_proportions_shape_the_classes(void **state)
{
    dla_seqlist *s;
    dla_tensor *y;
    const double only_square[4] = {0, 0, 1, 0};
    dla_waveform_options o = {.class_proportions = only_square, .noise = -1, .min_length = 10,
                              .max_length = 10};
    assert_int_equal(dla_waveform_generate(30, 1, &o, &s, &y), DLA_OK);
    int32_t lab[30];
    assert_int_equal(dla_tensor_to_host(y, lab, sizeof lab), DLA_OK);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(lab[i], 2);
        /* Clean square waves: each channel holds +a and -a only. */
        const float *v = dla_seqlist_data(s, i);
        for (int t = 0; t < 10; t++)
            assert_true(fabsf(v[3 * t]) == fabsf(v[0]));
        assert_true(fabsf(v[0]) >= 0.5f && fabsf(v[0]) <= 1.5f);
    }
    dla_tensor_release(y);
    dla_seqlist_free(s);
    /* MATLAB's imbalanced example: 0.7 : 1 : 0.5 : 0.3. */
    const double matlab[4] = {0.7, 1, 0.5, 0.3};
    assert_int_equal(dla_waveform_generate(2500, 2, &(dla_waveform_options){.class_proportions = matlab},
                                           &s, &y),
                     DLA_OK);
    static int32_t l2[2500];
    assert_int_equal(dla_tensor_to_host(y, l2, sizeof l2), DLA_OK);
    int counts[4] = {0};
    for (int i = 0; i < 2500; i++)
        counts[l2[i]]++;
    assert_true(counts[1] > counts[0] && counts[0] > counts[2] && counts[2] > counts[3]);
    assert_true(abs(counts[1] - 1000) < 100 && abs(counts[3] - 300) < 60);
    dla_tensor_release(y);
    dla_seqlist_free(s);
    const double none[4] = {0, 0, 0, 0};
    assert_int_equal(dla_waveform_generate(5, 1, &(dla_waveform_options){.class_proportions = none},
                                           &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(s);
    assert_null(y);
    assert_non_null(strstr(dla_last_error(), "all 0"));
    /* Finite proportions whose sum is not: refused (every draw was the
     * last class). */
    const double huge[4] = {1e308, 1e308, 1e308, 1e308};
    assert_int_equal(dla_waveform_generate(5, 1, &(dla_waveform_options){.class_proportions = huge},
                                           &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(dla_last_error(), "class_proportions add up"));
    /* Ranges whose width overflows: refused (the frequencies drawn were
     * inf or NaN, and every value of every sequence NaN). */
    assert_int_equal(dla_waveform_generate(5, 1,
                                           &(dla_waveform_options){.min_frequency = -1e308,
                                                                   .max_frequency = 1e308},
                                           &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(dla_last_error(), "frequency"));
    assert_int_equal(dla_waveform_generate(5, 1,
                                           &(dla_waveform_options){.min_amplitude = -1e308,
                                                                   .max_amplitude = 1e308},
                                           &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_string_equal(dla_waveform_class_name(3), "triangle");
    /* Counts whose buffers' byte sizes overflow: refused, naming them. The
     * sizes wrapped to a few bytes, and the first sequence was written
     * past them (a crash). */
    assert_int_equal(dla_waveform_generate(2, 1,
                                           &(dla_waveform_options){.num_channels = (int64_t)1 << 62},
                                           &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(dla_last_error(), "channels"));
    assert_int_equal(dla_waveform_generate((int64_t)1 << 62, 1, NULL, &s, &y),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(dla_last_error(), "argument n"));
}

/* -------------------------------------------------------- refused memory */

/* One of everything, stopping at the first failure. Scoped: inside a
 * scope, which then owns every tensor returned (none is released here). */
static void drop(int scoped, dla_tensor *t)
{
    if (!scoped)
        dla_tensor_release(t);
}

static dla_status pipeline_once(int scoped)
{
    if (scoped)
        dla_scope_begin();
    dla_idx idx;
    dla_status st = dla_idx_read(tmp_path("oom.idx.gz"), &idx);
    dla_idx_free(&idx);
    dla_tensor *x = NULL, *t = NULL;
    if (st == DLA_OK)
        st = dla_fashion_mnist_load(tmpdir, "test", NULL, &x, &t);
    drop(scoped, x);
    drop(scoped, t);
    t = NULL;
    dla_seqlist *s = NULL;
    if (st == DLA_OK)
        st = dla_waveform_generate(6, 1, NULL, &s, &t);
    dla_mbq *q = NULL;
    if (st == DLA_OK)
        st = dla_mbq_create(2, (dla_mbq_input[]){{.sequences = s, .mask = 1}, {.tensor = t}},
                            &(dla_mbq_options){.mini_batch_size = 4}, &q);
    drop(scoped, t);
    if (st == DLA_OK)
        dla_mbq_shuffle(q);
    while (st == DLA_OK && dla_mbq_hasdata(q)) {
        dla_tensor *b[3];
        st = dla_mbq_next(q, 3, b);
        for (int i = 0; i < 3; i++)
            drop(scoped, b[i]);
    }
    dla_mbq *p = NULL;
    if (st == DLA_OK)
        st = dla_mbq_partition(q, 2, 1, &p);
    dla_mbq_free(p);
    dla_mbq_free(q);
    dla_tensor *px = NULL, *pm = NULL;
    if (st == DLA_OK)
        st = dla_padsequences(s, 3, NULL, NULL, &px, &pm);
    drop(scoped, px);
    drop(scoped, pm);
    dla_seqlist_free(s);
    if (scoped)
        dla_scope_end();
    return st;
}

static void test_every_refused_allocation_fails_cleanly(void **state)
{
    unsigned char buf[64];
    const uint32_t dims[2] = {3, 4};
    write_bytes(tmp_path("oom.idx.gz"), buf, idx_bytes(buf, 0x08, 2, dims, 12), 1);
    write_fake_split("t10k", 4, 4, 0);
    for (int scoped = 0; scoped <= 1; scoped++) {
        assert_int_equal(pipeline_once(scoped), DLA_OK); /* devices loaded, caches warm */
        long live = atomic_load(&live_blocks);
        int refused = 0;
        for (long n = 1; n < 5000; n++) {
            atomic_store(&alloc_calls, 0);
            atomic_store(&refuse_at, n);
            dla_status st = pipeline_once(scoped);
            long calls = atomic_load(&alloc_calls);
            atomic_store(&refuse_at, 0);
            assert_int_equal(atomic_load(&live_blocks), live); /* nothing leaked */
            if (calls < n) {
                assert_int_equal(st, DLA_OK); /* every allocation was granted */
                break;
            }
            assert_int_equal(st, DLA_ERR_OUT_OF_MEMORY);
            refused++;
        }
        assert_true(refused > 20);
    }
}

/* ------------------------------------------------------------------- group */

static int setup(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dla-test-data.XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    for (int i = 0; i < nmade; i++)
        unlink(made_files[i]);
    return rmdir(tmpdir);
}

/* A sequence of the list itself appended again: the source lies in the
 * values the append grows (it was read after the realloc had freed it). */
static void test_seqlist_appends_its_own_sequences(void **state)
{
    (void)state;
    dla_seqlist *s = dla_seqlist_create(2);
    assert_non_null(s);
    static float v[2 * 3000];
    for (int i = 0; i < 2 * 3000; i++)
        v[i] = (float)i;
    assert_int_equal(dla_seqlist_append(s, v, 3000), DLA_OK);
    atomic_store(&poison_moves, 1);
    /* The whole of sequence 0 (the values must grow), then its tail. */
    dla_status st1 = dla_seqlist_append(s, dla_seqlist_data(s, 0), 3000);
    dla_status st2 = dla_seqlist_append(s, dla_seqlist_data(s, 1) + 2 * 1000, 2000);
    atomic_store(&poison_moves, 0);
    assert_int_equal(st1, DLA_OK);
    assert_int_equal(st2, DLA_OK);
    assert_int_equal(dla_seqlist_count(s), 3);
    assert_int_equal(dla_seqlist_length(s, 2), 2000);
    assert_memory_equal(dla_seqlist_data(s, 1), v, sizeof v);
    assert_memory_equal(dla_seqlist_data(s, 2), v + 2 * 1000, 2 * 2000 * sizeof(float));
    dla_seqlist_free(s);
}

/* Every call on a freed queue is refused and named, as next and hasdata
 * were: reset and shuffle wrote its freed order, the queries read it. */
static void test_a_freed_mbq_is_refused_by_every_call(void **state)
{
    (void)state;
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 10));
    dla_mbq *q = NULL, *p = (dla_mbq *)1;
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.tensor = x}},
                                    &(dla_mbq_options){.mini_batch_size = 4}, &q),
                     DLA_OK);
    dla_tensor_release(x);
    dla_mbq_free(q);
#define REFUSED(name)                                                                              \
    do {                                                                                           \
        assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);                             \
        assert_non_null(strstr(dla_last_error(), name));                                           \
        assert_non_null(strstr(dla_last_error(), "freed already"));                                \
        dla_clear_error();                                                                         \
    } while (0)
    dla_clear_error();
    dla_mbq_reset(q);
    REFUSED("dla_mbq_reset");
    dla_mbq_shuffle(q);
    REFUSED("dla_mbq_shuffle");
    assert_int_equal(dla_mbq_set_mini_batch_size(q, 2), DLA_ERR_INVALID_ARGUMENT);
    REFUSED("dla_mbq_set_mini_batch_size");
    assert_int_equal(dla_mbq_partition(q, 2, 0, &p), DLA_ERR_INVALID_ARGUMENT);
    assert_null(p);
    REFUSED("dla_mbq_partition");
    assert_int_equal(dla_mbq_num_outputs(q), 0);
    REFUSED("dla_mbq_num_outputs");
    assert_int_equal(dla_mbq_num_observations(q), 0);
    REFUSED("dla_mbq_num_observations");
    assert_int_equal(dla_mbq_num_batches(q), 0);
    REFUSED("dla_mbq_num_batches");
    int64_t order[10];
    assert_int_equal(dla_mbq_order(q, order, 10), DLA_ERR_INVALID_ARGUMENT);
    REFUSED("dla_mbq_order");
#undef REFUSED
}

static void test_a_seqlist_freed_twice_or_used_after_is_refused(void **state)
{
    (void)state;
    dla_seqlist *s = dla_seqlist_create(2);
    float v[6] = {1, 2, 3, 4, 5, 6};
    assert_int_equal(dla_seqlist_append(s, v, 3), DLA_OK);
    dla_seqlist_free(s);
    /* Read freed memory before, and answered without a word. */
    dla_clear_error();
    assert_int_equal(dla_seqlist_count(s), 0);
    assert_non_null(strstr(dla_last_error(), "dla_seqlist_count"));
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_null(dla_seqlist_data(s, 0));
    assert_int_equal(dla_seqlist_append(s, v, 3), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_seqlist_append"));
    dla_tensor *x = NULL;
    assert_int_equal(dla_padsequences(s, 1, NULL, NULL, &x, NULL), DLA_ERR_INVALID_ARGUMENT);
    assert_null(x);
    assert_non_null(strstr(dla_last_error(), "dla_padsequences"));
    dla_clear_error();
    dla_seqlist_free(s); /* freed the list again before */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "dla_seqlist_free"));
}

int main(void)
{
    dla_set_allocator(counting_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_idx_round_trips_every_type_gzipped_and_plain),
        TU_TEST(test_idx_multibyte_elements_are_big_endian_on_disk),
        TU_TEST(test_idx_missing_file_names_the_path_and_the_reason),
        TU_TEST(test_idx_a_folder_is_not_called_a_corrupt_stream),
        TU_TEST(test_idx_truncated_data_says_how_much_is_missing),
        TU_TEST(test_idx_truncated_header_is_an_io_error),
        TU_TEST(test_idx_gzip_cut_short_is_reported_with_zlib_words),
        TU_TEST(test_idx_gzip_with_a_bad_checksum_is_corrupt),
        TU_TEST(test_idx_bad_magic_is_a_format_error),
        TU_TEST(test_idx_unknown_element_type_is_named),
        TU_TEST(test_idx_dim_counts_outside_the_supported_range_are_refused),
        TU_TEST(test_idx_bytes_after_the_data_mean_inconsistent_counts),
        TU_TEST(test_idx_huge_dims_are_refused_before_allocating),
        TU_TEST(test_idx_a_short_file_announcing_terabytes_is_truncated),
        TU_TEST(test_idx_a_gzip_file_cut_in_its_trailer_is_truncated),
        TU_TEST(test_idx_a_fifo_without_a_writer_is_refused_at_once),
        TU_TEST(test_idx_an_array_past_64_mib_reads_whole),
        TU_TEST(test_idx_write_refuses_an_inconsistent_array),
        TU_TEST(test_idx_write_that_fails_keeps_the_old_file),
        TU_TEST(test_fashion_mnist_images_are_height_first_scaled_to_one),
        TU_TEST(test_fashion_mnist_options_give_bytes_one_hot_and_a_prefix),
        TU_TEST(test_fashion_mnist_missing_files_say_which_and_what_to_install),
        TU_TEST(test_fashion_mnist_inconsistent_files_are_named),
        TU_TEST(test_fashion_mnist_images_of_uncountable_pixels_are_refused),
        TU_TEST(test_fashion_mnist_from_the_dataset_package),
        TU_TEST(test_padsequences_longest_pads_at_the_end_and_masks_the_padding),
        TU_TEST(test_padsequences_shortest_truncates_the_end_or_the_start),
        TU_TEST(test_padsequences_a_number_pads_or_truncates_to_it),
        TU_TEST(test_padsequences_refuses_unknown_options_and_indices),
        TU_TEST(test_seqlist_takes_tensors_of_its_channel_count),
        TU_TEST(test_mbq_hands_out_batches_in_order_with_the_partial_last),
        TU_TEST(test_mbq_discard_drops_the_partial_batch),
        TU_TEST(test_mbq_shuffle_follows_numpy_permutations_of_the_seed),
        TU_TEST(test_mbq_partitions_cover_every_observation_once),
        TU_TEST(test_mbq_background_dispatch_gives_the_foreground_batches),
        TU_TEST(test_mbq_dispatch_thread_starts_no_second_openmp_team),
        TU_TEST(test_mbq_function_draws_are_the_same_in_the_background),
        TU_TEST(test_mbq_sequence_batches_are_cbt_with_their_mask),
        TU_TEST(test_mbq_casts_relabels_and_runs_the_mini_batch_function),
        TU_TEST(test_mbq_batches_belong_to_the_open_scope),
        TU_TEST(test_mbq_refuses_inputs_that_do_not_fit),
        TU_TEST(test_waveforms_are_numpys_reference_draws),
        TU_TEST(test_waveforms_repeat_with_the_seed_and_differ_without),
        TU_TEST(test_waveform_class_proportions_shape_the_classes),
        TU_TEST(test_every_refused_allocation_fails_cleanly),
        TU_TEST(test_a_seqlist_freed_twice_or_used_after_is_refused),
        TU_TEST(test_seqlist_appends_its_own_sequences),
        TU_TEST(test_a_freed_mbq_is_refused_by_every_call),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

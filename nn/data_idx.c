/*
 * data_idx.c - IDX files (the MNIST family's format) read and written
 * through zlib, which reads gzip and plain files alike.
 *
 * A file is a 4-byte magic (two zero bytes, the element type, the number of
 * dims), one big-endian 32-bit count per dim, then the elements big-endian
 * in row-major order. Every way a file can disagree with its header is a
 * separate message naming the file, so a user with a damaged download
 * learns which file and what is wrong with it.
 */
#define _POSIX_C_SOURCE 200809L /* fchmod, O_CLOEXEC */
#include "nn/data_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char OP_READ[] = "dla_idx_read", OP_WRITE[] = "dla_idx_write";

DLA_API const char *dla_idx_type_name(dla_idx_type type)
{
    switch (type) {
#define NAME_CASE(name, code, str, size)                                       \
    case name:                                                                 \
        return str;
        DLA_IDX_TYPE_LIST(NAME_CASE)
#undef NAME_CASE
    }
    return "unknown";
}

DLA_API size_t dla_idx_type_size(dla_idx_type type)
{
    switch (type) {
#define SIZE_CASE(name, code, str, size)                                       \
    case name:                                                                 \
        return size;
        DLA_IDX_TYPE_LIST(SIZE_CASE)
#undef SIZE_CASE
    }
    return 0;
}

DLA_API void dla_idx_free(dla_idx *idx)
{
    if (!idx)
        return;
    dla__data_free(idx->data);
    memset(idx, 0, sizeof *idx);
}

/* ------------------------------------------------------------------ read */

/* gzread takes an unsigned length; big arrays are read in pieces. Returns
 * the bytes read (short at the end of the file), or -1 with *why set when
 * the gzip stream is corrupt. */
static int64_t read_fully(gzFile f, void *buf, int64_t bytes, const char **why)
{
    int64_t got = 0;
    while (got < bytes) {
        int64_t want = bytes - got > (1 << 30) ? (1 << 30) : bytes - got;
        int n = gzread(f, (char *)buf + got, (unsigned)want);
        if (n < 0) {
            int err;
            *why = gzerror(f, &err);
            return -1;
        }
        if (n == 0)
            break;
        got += n;
    }
    return got;
}

/* The header's bytes into *data, which grows as they arrive (from 64 MiB,
 * doubling): a short file announcing terabytes is then reported as
 * truncated, not as out of memory, and costs no more memory than it
 * holds. Returns the bytes read, -1 with *why for a failed read (stream_fail says which),
 * -2 when out of memory; *data is NULL on -2 and freed by the caller
 * otherwise. */
static int64_t read_growing(gzFile f, int64_t bytes, void **data, const char **why)
{
    int64_t cap = bytes < ((int64_t)64 << 20) ? bytes : (int64_t)64 << 20, got = 0;
    unsigned char *p = dla__data_malloc((size_t)cap);
    if (!p)
        return -2;
    for (;;) {
        int64_t n = read_fully(f, p + got, cap - got, why);
        if (n >= 0)
            got += n;
        if (n < 0 || got < cap || cap == bytes) {
            *data = p;
            return n < 0 ? -1 : got;
        }
        int64_t next = cap > bytes / 2 ? bytes : 2 * cap;
        unsigned char *q = dla__data_realloc(p, (size_t)next);
        if (!q) {
            dla__data_free(p);
            return -2;
        }
        p = q;
        cap = next;
    }
}

/* zlib's message without the name it gives the stream ("<fd:3>: ", the
 * file being opened by descriptor), which the message names already. */
static const char *zlib_text(const char *msg)
{
    const char *colon = msg && msg[0] == '<' ? strstr(msg, ">: ") : NULL;
    return colon ? colon + 3 : msg;
}

/* A failed gzread as the user should read it: zlib's Z_ERRNO is the
 * system refusing the read (a folder given as the file: "Is a
 * directory"), which was reported as a corrupt gzip stream; other codes
 * are the stream's. */
static dla_status stream_fail(const char *path, gzFile f, const char *why)
{
    int err = Z_OK;
    gzerror(f, &err);
    return dla__data_fail(DLA_ERR_IO, "%s: %s: %s: %s", OP_READ, path,
                          err == Z_ERRNO ? "cannot read it" : "corrupt gzip stream",
                          zlib_text(why));
}

/* zlib's own word on a short read of a gzip file ("unexpected end of
 * file"), or "" for a plain file that simply ended. */
static const char *short_read_reason(gzFile f)
{
    int err = Z_OK;
    const char *msg = gzerror(f, &err);
    return err == Z_OK || !msg ? "" : zlib_text(msg);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Big-endian elements to host order, in place. */
static void from_big_endian(void *data, int64_t numel, size_t size)
{
    unsigned char *p = data;
    for (int64_t i = 0; i < numel; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static dla_status read_open(const char *path, dla_idx *out, gzFile f)
{
    char dims_buf[DLA__DATA_DIMS_BUF];
    const char *why = NULL;
    unsigned char head[4 + 4 * 255];
    int64_t got = read_fully(f, head, 4, &why);
    if (got < 0)
        return stream_fail(path, f, why);
    if (got < 4)
        return dla__data_fail(DLA_ERR_IO,
                              "%s: %s: truncated: the file holds %lld bytes, an IDX header needs "
                              "at least 4%s%s",
                              OP_READ, path, (long long)got, *short_read_reason(f) ? "; zlib: " : "",
                              short_read_reason(f));
    if (head[0] != 0 || head[1] != 0)
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: bad magic number 0x%02x%02x%02x%02x: an IDX file starts "
                              "with two zero bytes, the element type and the number of dims",
                              OP_READ, path, head[0], head[1], head[2], head[3]);
    dla_idx_type type = (dla_idx_type)head[2];
    size_t esize = dla_idx_type_size(type);
    if (!esize)
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: unknown element type 0x%02x in the magic number (ubyte "
                              "0x08, byte 0x09, short 0x0B, int 0x0C, float 0x0D, double 0x0E)",
                              OP_READ, path, head[2]);
    int ndims = head[3];
    if (ndims < 1 || ndims > DLA_MAX_DIMS)
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: the magic number announces %d dims; 1..%d are supported",
                              OP_READ, path, ndims, DLA_MAX_DIMS);
    got = read_fully(f, head + 4, 4 * ndims, &why);
    if (got < 0)
        return stream_fail(path, f, why);
    if (got < 4 * ndims)
        return dla__data_fail(DLA_ERR_IO,
                              "%s: %s: truncated: %d dims need a %d-byte header, the file holds "
                              "%lld bytes",
                              OP_READ, path, ndims, 4 + 4 * ndims, (long long)(4 + got));
    int64_t numel = 1;
    int overflow = 0;
    for (int i = 0; i < ndims; i++) {
        out->dims[i] = be32(head + 4 + 4 * i);
        if (out->dims[i] && numel > (INT64_MAX / (int64_t)esize) / out->dims[i])
            overflow = 1;
        else
            numel *= out->dims[i];
    }
    dla__data_dims_str(dims_buf, ndims, out->dims);
    if (overflow)
        return dla__data_fail(DLA_ERR_FORMAT, "%s: %s: dims %s are too large to hold", OP_READ,
                              path, dims_buf);
    int64_t bytes = numel * (int64_t)esize;
    if ((uint64_t)bytes > SIZE_MAX - 1)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: %s %s needs %lld bytes", OP_READ,
                              path, dims_buf, dla_idx_type_name(type), (long long)bytes);
    void *data = NULL;
    got = read_growing(f, bytes, &data, &why);
    if (got == -2)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot hold %s %s (%lld bytes)",
                              OP_READ, path, dims_buf, dla_idx_type_name(type), (long long)bytes);
    if (got < 0) {
        dla__data_free(data);
        return stream_fail(path, f, why);
    }
    if (got < bytes) {
        const char *z = short_read_reason(f);
        dla__data_free(data);
        return dla__data_fail(DLA_ERR_IO,
                              "%s: %s: truncated: %s %s needs %lld bytes of data after the "
                              "%d-byte header, the file holds %lld%s%s",
                              OP_READ, path, dims_buf, dla_idx_type_name(type), (long long)bytes,
                              4 + 4 * ndims, (long long)got, *z ? "; zlib: " : "", z);
    }
    /* Whatever follows the data means the header's counts are not the
     * file's: count it for the message. */
    unsigned char rest[4096];
    int64_t extra = 0, n;
    while ((n = read_fully(f, rest, sizeof rest, &why)) > 0)
        extra += n;
    if (n < 0) {
        dla__data_free(data);
        return stream_fail(path, f, why);
    }
    /* A gzip file cut inside its trailer (the CRC and length after the
     * last data) ends with zlib's "unexpected end of file" and no read
     * error: every byte arrived, but unchecked, and the file is cut. */
    if (!extra && *short_read_reason(f)) {
        dla__data_free(data);
        return dla__data_fail(DLA_ERR_IO,
                              "%s: %s: truncated: the gzip stream ends before its trailer (the "
                              "checksum of the data is missing); zlib: %s",
                              OP_READ, path, short_read_reason(f));
    }
    if (extra) {
        dla__data_free(data);
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: %lld bytes follow the data: the header's dims %s (%s, "
                              "%lld bytes) do not account for the whole file",
                              OP_READ, path, (long long)extra, dims_buf, dla_idx_type_name(type),
                              (long long)bytes);
    }
    if (esize > 1 && host_is_little_endian())
        from_big_endian(data, numel, esize);
    out->type = type;
    out->ndims = ndims;
    out->numel = numel;
    out->data = data;
    return DLA_OK;
}

DLA_API dla_status dla_idx_read(const char *path, dla_idx *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", OP_READ,
                              path ? "out" : "path");
    /* O_NONBLOCK: gzopen's blocking open waited for ever on a FIFO no one
     * writes to. Opened so, such a FIFO reads as empty (truncated, at
     * once); one with a writer, or a pipe, is read as it comes, blocking
     * again once open. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return dla__data_fail(DLA_ERR_IO, "%s: %s: cannot open: %s", OP_READ, path,
                              strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        const int err = errno;
        close(fd);
        return dla__data_fail(DLA_ERR_IO, "%s: %s: cannot read it: %s", OP_READ, path,
                              strerror(err));
    }
    errno = 0;
    gzFile f = gzdopen(fd, "rb"); /* owns fd from here on */
    if (!f) {
        const int err = errno;
        close(fd);
        return dla__data_fail(err ? DLA_ERR_IO : DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot open: %s",
                              OP_READ, path, err ? strerror(err) : "out of memory");
    }
    /* Larger reads than zlib's 8 KiB default: the training images are 47 MB. */
    gzbuffer(f, 1 << 17);
    dla_status st = read_open(path, out, f);
    gzclose_r(f);
    if (st != DLA_OK)
        memset(out, 0, sizeof *out);
    return st;
}

/* ----------------------------------------------------------------- write */

static dla_status check_for_write(const dla_idx *idx, int level)
{
    if (!idx)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument idx is NULL", OP_WRITE);
    if (level < 0 || level > 9)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument level: %d is outside 0 (plain) .. 9", OP_WRITE, level);
    if (!dla_idx_type_size(idx->type))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument idx: unknown type 0x%02x",
                              OP_WRITE, (unsigned)idx->type);
    if (idx->ndims < 1 || idx->ndims > DLA_MAX_DIMS)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument idx: ndims %d is outside 1..%d", OP_WRITE, idx->ndims,
                              DLA_MAX_DIMS);
    int64_t numel = 1;
    for (int i = 0; i < idx->ndims; i++) {
        if (idx->dims[i] < 0 || idx->dims[i] > (int64_t)UINT32_MAX)
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument idx: dim %d is %lld; IDX dims are 0..2^32-1",
                                  OP_WRITE, i + 1, (long long)idx->dims[i]);
        if (idx->dims[i] && numel > INT64_MAX / 8 / idx->dims[i])
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument idx: dims too large",
                                  OP_WRITE);
        numel *= idx->dims[i];
    }
    if (numel != idx->numel)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument idx: numel %lld is not the product of the dims (%lld)",
                              OP_WRITE, (long long)idx->numel, (long long)numel);
    if (numel && !idx->data)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument idx: data is NULL",
                              OP_WRITE);
    return DLA_OK;
}

static int write_all(gzFile f, const void *buf, size_t bytes)
{
    return bytes == 0 || gzwrite(f, buf, (unsigned)bytes) == (int)bytes;
}

DLA_API dla_status dla_idx_write(const char *path, const dla_idx *idx, int level)
{
    if (!path)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument path is NULL", OP_WRITE);
    dla_status st = check_for_write(idx, level);
    if (st != DLA_OK)
        return st;
    char mode[8];
    if (level)
        snprintf(mode, sizeof mode, "wb%d", level);
    else
        snprintf(mode, sizeof mode, "wbT"); /* transparent: no gzip wrapper */
    /* Into a temporary file in the same folder, renamed over path once
     * whole (as core/trace_file.c): written in place, a failed write (a
     * full disk) destroyed the old file. A file replaced keeps its mode;
     * something not a regular file (/dev/null, a FIFO) is written in
     * place, never renamed over. */
    static unsigned long serial;
    struct stat old;
    int exists = stat(path, &old) == 0;
    int in_place = exists && !S_ISREG(old.st_mode);
    size_t plen = strlen(path) + 48;
    char *tmp = dla__data_malloc(plen);
    if (!tmp)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot name a temporary file",
                              OP_WRITE, path);
    snprintf(tmp, plen, "%s.tmp-%ld-%lu", path, (long)getpid(),
             __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
    int fd = in_place ? open(path, O_WRONLY | O_CLOEXEC)
                      : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 && exists && !in_place && fchmod(fd, old.st_mode & 0777) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        dla__data_free(tmp);
        return dla__data_fail(DLA_ERR_IO, "%s: %s: cannot give the new file the old one's mode: %s",
                              OP_WRITE, path, strerror(e));
    }
    if (fd < 0) {
        int e = errno;
        dla__data_free(tmp);
        return dla__data_fail(DLA_ERR_IO, "%s: %s: cannot create: %s", OP_WRITE, path,
                              strerror(e));
    }
    errno = 0;
    gzFile f = gzdopen(fd, mode);
    if (!f) {
        close(fd);
        if (!in_place)
            unlink(tmp);
        dla__data_free(tmp);
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot create: out of memory",
                              OP_WRITE, path);
    }
    unsigned char head[4 + 4 * DLA_MAX_DIMS] = {0, 0, (unsigned char)idx->type,
                                                (unsigned char)idx->ndims};
    for (int i = 0; i < idx->ndims; i++) {
        uint32_t d = (uint32_t)idx->dims[i];
        unsigned char *p = head + 4 + 4 * i;
        p[0] = (unsigned char)(d >> 24);
        p[1] = (unsigned char)(d >> 16);
        p[2] = (unsigned char)(d >> 8);
        p[3] = (unsigned char)d;
    }
    int ok = write_all(f, head, 4 + 4 * (size_t)idx->ndims);
    size_t esize = dla_idx_type_size(idx->type);
    const unsigned char *src = idx->data;
    unsigned char chunk[1 << 16];
    int64_t per = (int64_t)(sizeof chunk / esize), done = 0;
    while (ok && done < idx->numel) {
        int64_t k = idx->numel - done < per ? idx->numel - done : per;
        memcpy(chunk, src + done * esize, (size_t)k * esize);
        if (esize > 1 && host_is_little_endian())
            from_big_endian(chunk, k, esize); /* a byte swap is its own inverse */
        ok = write_all(f, chunk, (size_t)k * esize);
        done += k;
    }
    int err = Z_OK;
    const char *zmsg = ok ? "" : gzerror(f, &err);
    char why[256];
    snprintf(why, sizeof why, "%s", err == Z_ERRNO ? strerror(errno) : zmsg);
    int closed = gzclose_w(f);
    if (ok && closed == Z_OK && !in_place && rename(tmp, path) != 0) {
        snprintf(why, sizeof why, "cannot put it in place: %s", strerror(errno));
        ok = 0;
    } else if (ok && closed != Z_OK) {
        snprintf(why, sizeof why, "%s", closed == Z_ERRNO ? strerror(errno) : "zlib error");
        ok = 0;
    }
    if (!ok && !in_place)
        unlink(tmp);
    dla__data_free(tmp);
    if (!ok)
        return dla__data_fail(DLA_ERR_IO, "%s: %s: cannot write: %s%s", OP_WRITE, path, why,
                              in_place ? "" : " (the old file, if any, is kept)");
    return DLA_OK;
}

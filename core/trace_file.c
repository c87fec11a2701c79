/*
 * trace_file.c - dla_trace_save and dla_trace_load: a trace as a file, in
 * the format docs/trace-format.md specifies (read it first; the layout is
 * not repeated here).
 *
 * Saving builds the whole file in memory (constants copied from their
 * device), checksums it, and writes it under a temporary name that is
 * renamed over the path, so a reader never sees half a file. Loading reads
 * the whole file, checks magic, version, byte order, data layout, size and
 * checksum before it looks at any count, then parses every section with
 * bounds checks and validates the program (every id in range, every value
 * made once and before it is read) before anything is built: a corrupt,
 * truncated or foreign file is an error that names the file and the
 * problem. The checksum guards against accidents, not against a file made
 * to pass it (see the format's page).
 */
#define _GNU_SOURCE
#include "core/alloc.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "core/format.h"
#include "core/handle.h"
#include "core/tensor.h"
#include "core/file_special.h"
#include "core/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_MAJOR 1
#define FORMAT_MINOR 3 /* 1.1: the ALIA section; 1.2: an op's flags byte; 1.3: CDEV */
/* An op's flags (1.2; the byte was reserved, 0, before): the op ran off
 * the function's own tape (dla__trace_entry.off_tape). Other bits are
 * left to later minor versions and ignored. */
#define ENTRY_OFF_TAPE 1u
#define HEADER_BYTES 32
#define SECTION_HEAD 16
#define END_BYTES (SECTION_HEAD + 8)
#define BYTE_ORDER_MARK 0x01020304u
#define FLAG_DATA_DEPENDENT 1u

static const unsigned char magic[8] = {0x89, 'D', 'L', 'T', '\r', '\n', 0x1a, '\n'};

/* The data layout raw attributes depend on (docs/trace-format.md). */
static const unsigned char layout[4] = {sizeof(int), sizeof(size_t), _Alignof(int64_t),
                                        _Alignof(double)};

/* ---------------------------------------------------------------- writing */

typedef struct wbuf {
    unsigned char *p;
    size_t len, cap;
    int oom;
} wbuf;

static int reserve(wbuf *b, size_t n)
{
    if (b->oom)
        return 0;
    if (n <= b->cap - b->len)
        return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return 0;
        }
        cap *= 2;
    }
    unsigned char *p = dla__realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

static void put(wbuf *b, const void *src, size_t n)
{
    if (n && reserve(b, n)) {
        memcpy(b->p + b->len, src, n);
        b->len += n;
    }
}

static void put_u8(wbuf *b, unsigned v) { put(b, &(uint8_t){(uint8_t)v}, 1); }
static void put_u16(wbuf *b, unsigned v) { put(b, &(uint16_t){(uint16_t)v}, 2); }
static void put_u32(wbuf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(wbuf *b, uint64_t v) { put(b, &v, 8); }

static void pad8(wbuf *b)
{
    static const unsigned char zero[8];
    put(b, zero, (8 - b->len % 8) % 8);
}

/* A string of at most 65535 bytes: u16 length, the bytes (no NUL). */
static void put_str(wbuf *b, const char *s)
{
    size_t n = strlen(s);
    n = n > 0xFFFF ? 0xFFFF : n;
    put_u16(b, (unsigned)n);
    put(b, s, n);
}

/* Opens a section; section_end patches its length and pads. */
static size_t section_begin(wbuf *b, const char tag[4])
{
    put(b, tag, 4);
    put_u32(b, 0);
    size_t at = b->len;
    put_u64(b, 0);
    return at;
}

static void section_end(wbuf *b, size_t at)
{
    if (b->oom)
        return;
    uint64_t n = b->len - at - 8;
    memcpy(b->p + at, &n, 8);
    pad8(b);
}

/* The device constant j stays on in a replay (dla__trace_const_moves), or
 * NULL for one that moves to the replay's device. */
static const dla_device *own_device(const dla__trace *t, int j)
{
    const dla_device *on = t->consts[j]->storage->device;
    if (t->device)
        return on == t->device ? NULL : on;
    return t->const_pinned && t->const_pinned[j] ? on : NULL;
}

static size_t value_bytes(const dla__trace_value *v)
{
    return (size_t)dla__numel(v->ndims, v->dims) * dla_dtype_size(v->dtype);
}

/* The file's bytes for t, in b. */
static dla_status serialize(const dla__trace *t, const char *path, wbuf *b)
{
    static const char op[] = "dla_trace_save";
    dla__attrs_io io = {.recording_device = t->device};
    put(b, magic, sizeof magic);
    put_u16(b, FORMAT_MAJOR);
    put_u16(b, FORMAT_MINOR);
    put_u32(b, BYTE_ORDER_MARK);
    put(b, layout, sizeof layout);
    put_u32(b, 0);
    put_u64(b, 0); /* the file's size, patched below */

    size_t at = section_begin(b, "INFO");
    put_u32(b, (uint32_t)t->nin);
    put_u32(b, (uint32_t)t->nout);
    put_u32(b, (uint32_t)t->nvalues);
    put_u32(b, (uint32_t)t->nentries);
    put_u32(b, (uint32_t)t->nconsts);
    put_u32(b, (uint32_t)t->inner_consts);
    put_u32(b, (uint32_t)t->data_dependent);
    put_u32(b, t->data_dependent ? FLAG_DATA_DEPENDENT : 0);
    put(b, &t->record_seconds, 8);
    put_str(b, t->device ? t->device->name : "");
    put_str(b, t->data_dependent ? t->data_dependent_note : "");
    char writer[64];
    snprintf(writer, sizeof writer, "dlaccel %s", dla_version_string());
    put_str(b, writer);
    section_end(b, at);

    at = section_begin(b, "VALS");
    for (int id = 0; id < t->nvalues; id++) {
        const dla__trace_value *v = &t->values[id];
        size_t flen = strlen(v->format);
        put_u8(b, (unsigned)v->kind);
        put_u8(b, (unsigned)v->dtype);
        put_u8(b, (unsigned)v->ndims);
        put_u8(b, (unsigned)flen);
        put_u32(b, (uint32_t)v->index);
        put(b, v->dims, (size_t)v->ndims * sizeof *v->dims);
        put(b, v->format, flen);
    }
    section_end(b, at);

    at = section_begin(b, "ENTS");
    for (int k = 0; k < t->nentries && !b->oom; k++) {
        const dla__trace_entry *e = &t->entries[k];
        const dla__op_reg *reg = dla__op_registration(e->op);
        if (!reg)
            return dla__fail(DLA_ERR_UNSUPPORTED, "%s: %s: op %d (%s) is not in the op registry, so "
                             "no file could name it (DLA__OP_REGISTER after its definition)", op,
                             path, k, e->op->name);
        put_str(b, reg->name);
        put_u8(b, (unsigned)e->nin);
        put_u8(b, (unsigned)e->nout);
        put_u8(b, (unsigned)e->nsaved);
        put_u8(b, e->off_tape ? ENTRY_OFF_TAPE : 0);
        for (int i = 0; i < e->nin; i++)
            put_u32(b, (uint32_t)e->in[i]);
        for (int i = 0; i < e->nout + e->nsaved; i++)
            put_u32(b, (uint32_t)e->out[i]);
        size_t len;
        dla_status st = dla__op_encode_attrs(reg, &io, e->attrs, e->attrs_size, NULL, 0, &len);
        if (st == DLA_OK && len > UINT32_MAX)
            st = dla__fail(DLA_ERR_UNSUPPORTED, "op \"%s\": %zu bytes of attributes", reg->name, len);
        if (st != DLA_OK) {
            dla__error_prefix(path);
            dla__error_prefix(op);
            return st;
        }
        put_u32(b, (uint32_t)len);
        if (len && reserve(b, len)) {
            dla__op_encode_attrs(reg, &io, e->attrs, e->attrs_size, b->p + b->len, len, &len);
            b->len += len;
        }
    }
    section_end(b, at);

    at = section_begin(b, "OUTS");
    for (int i = 0; i < t->nout; i++)
        put_u32(b, (uint32_t)t->outputs[i]);
    section_end(b, at);

    at = section_begin(b, "CNST");
    for (int id = 0; id < t->nvalues && !b->oom; id++) {
        const dla__trace_value *v = &t->values[id];
        if (v->kind != DLA__VALUE_CONST)
            continue;
        size_t n = value_bytes(v);
        put_u64(b, n);
        if (n && reserve(b, n)) {
            dla_status st = dla_tensor_to_host(t->consts[v->index], b->p + b->len, n);
            if (st != DLA_OK) {
                dla__error_prefix("constant data");
                dla__error_prefix(path);
                dla__error_prefix(op);
                return st;
            }
            b->len += n;
        }
        pad8(b);
    }
    section_end(b, at);

    if (t->in_alias) { /* 1.1: which earlier slot each aliased input slot was */
        at = section_begin(b, "ALIA");
        for (int i = 0; i < t->nin; i++)
            put_u32(b, t->in_alias[i] < 0 ? UINT32_MAX : (uint32_t)t->in_alias[i]);
        section_end(b, at);
    }

    /* 1.3: the device of each constant a replay leaves where it is (one
     * made on another current device than the inputs'), "" for those on
     * the replay device; only when some constant has one. */
    int placed = 0;
    for (int j = 0; j < t->nconsts; j++)
        placed |= own_device(t, j) != NULL;
    if (placed) {
        at = section_begin(b, "CDEV");
        for (int j = 0; j < t->nconsts; j++) {
            const dla_device *dev = own_device(t, j);
            put_str(b, dev ? dev->name : "");
        }
        section_end(b, at);
    }

    put(b, "END", 4);
    put_u32(b, 0);
    put_u64(b, 8);
    if (b->oom || !reserve(b, 8))
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot build the file in memory", op, path);
    uint64_t size = b->len + 8;
    memcpy(b->p + 24, &size, 8);
    put_u32(b, dla__crc32c(0, b->p, b->len));
    put_u32(b, 0);
    return DLA_OK;
}

static dla_status io_fail(const char *op, const char *path, const char *what)
{
    char buf[256];
    return dla__fail(DLA_ERR_IO, "%s: %s: %s: %s", op, path, what, strerror_r(errno, buf, sizeof buf));
}

/* Writes n bytes to path through a temporary file renamed over it. */
static dla_status write_file(const char *path, const unsigned char *p, size_t n)
{
    static const char op[] = "dla_trace_save";
    static unsigned long serial;
    size_t plen = strlen(path) + 48;
    char *tmp = dla__malloc(plen);
    if (!tmp)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: cannot name a temporary file", op, path);
    snprintf(tmp, plen, "%s.tmp-%ld-%lu", path, (long)getpid(),
             __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
    dla_status st = DLA_OK;
    /* A file replaced keeps its mode; a new one gets the umask's default. */
    struct stat old;
    int keep = stat(path, &old) == 0 && S_ISREG(old.st_mode);
    /* /dev/null, a FIFO: written in place, never renamed over. */
    const int in_place = dla__path_is_special(path);
    int fd = in_place ? open(path, O_WRONLY | O_CLOEXEC)
                      : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 && keep && !in_place && fchmod(fd, old.st_mode & 0777) != 0) {
        st = io_fail(op, path, "cannot give the new file the old one's mode");
        close(fd);
        unlink(tmp);
    } else if (fd < 0) {
        st = io_fail(op, path, "cannot create it");
    } else {
        for (size_t done = 0; done < n && st == DLA_OK;) {
            ssize_t w = write(fd, p + done, n - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                st = io_fail(op, path, "cannot write it");
            else
                done += (size_t)w;
        }
        if (close(fd) != 0 && st == DLA_OK)
            st = io_fail(op, path, "cannot write it");
        if (st == DLA_OK && !in_place && rename(tmp, path) != 0)
            st = io_fail(op, path, "cannot put it in place");
        if (st != DLA_OK && !in_place)
            unlink(tmp);
    }
    dla__free(tmp);
    return st;
}

DLA_API dla_status dla_trace_save(const dla_trace *handle, const char *path)
{
    const dla__trace *t = (const dla__trace *)handle;
    if (!t || !path)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_trace_save: argument %s is NULL",
                         t ? "path" : "t");
    wbuf b = {0};
    dla_status st = serialize(t, path, &b);
    if (st == DLA_OK)
        st = write_file(path, b.p, b.len);
    dla__free(b.p);
    return st;
}

/* ---------------------------------------------------------------- reading */

typedef struct rbuf {
    const unsigned char *p;
    size_t len, pos;
    int bad; /* read past the end */
} rbuf;

static const unsigned char *take(rbuf *r, size_t n)
{
    if (r->bad || n > r->len - r->pos) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *at = r->p + r->pos;
    r->pos += n;
    return at;
}

static unsigned get_u8(rbuf *r)
{
    const unsigned char *p = take(r, 1);
    return p ? p[0] : 0;
}

static unsigned get_u16(rbuf *r)
{
    uint16_t v = 0;
    const unsigned char *p = take(r, 2);
    if (p)
        memcpy(&v, p, 2);
    return v;
}

static uint32_t get_u32(rbuf *r)
{
    uint32_t v = 0;
    const unsigned char *p = take(r, 4);
    if (p)
        memcpy(&v, p, 4);
    return v;
}

static uint64_t get_u64(rbuf *r)
{
    uint64_t v = 0;
    const unsigned char *p = take(r, 8);
    if (p)
        memcpy(&v, p, 8);
    return v;
}

/* A string into buf (size bytes with its NUL); 0 when it does not fit or
 * holds a NUL. */
static int get_str(rbuf *r, char *buf, size_t size)
{
    size_t n = get_u16(r);
    const unsigned char *p = take(r, n);
    if (!p || n >= size || memchr(p, 0, n))
        return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return 1;
}

/* What load found wrong: "dla_trace_load: FILE: what". */
static dla_status bad(dla_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static dla_status bad(dla_status st, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return dla__fail(st, "dla_trace_load: %s: %s", path, what);
}

static dla_status read_file(const char *path, unsigned char **data, size_t *size)
{
    static const char op[] = "dla_trace_load";
    *data = NULL;
    *size = 0;
    /* O_NONBLOCK: a FIFO with no writer is refused below, not waited for
     * in open (which blocked for ever); for the regular file it is turned
     * off again. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return io_fail(op, path, "cannot open it");
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        dla_status st = io_fail(op, path, "cannot read it");
        close(fd);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return bad(DLA_ERR_IO, path, "not a regular file");
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        dla_status st = io_fail(op, path, "cannot read it");
        close(fd);
        return st;
    }
    if ((uint64_t)sb.st_size > SIZE_MAX - 1) {
        close(fd);
        return bad(DLA_ERR_IO, path, "%lld bytes is too large to read", (long long)sb.st_size);
    }
    size_t n = (size_t)sb.st_size;
    /* The magic first: a file that is no trace (a 20 GB dataset, a sparse
     * file of terabytes) was read whole, or its size asked of the
     * allocator, before its first bytes were looked at. Only what was
     * read of it is then kept, for check_envelope to refuse. */
    unsigned char head[sizeof magic];
    ssize_t hn = n >= sizeof head ? pread(fd, head, sizeof head, 0) : -1;
    if (hn == (ssize_t)sizeof head && memcmp(head, magic, sizeof magic) != 0)
        n = sizeof head;
    unsigned char *p = dla__malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold its %zu bytes", n);
    }
    dla_status st = DLA_OK;
    size_t done = 0;
    while (done < n && st == DLA_OK) {
        ssize_t got = read(fd, p + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            st = io_fail(op, path, "cannot read it");
        else if (got == 0)
            n = done; /* it shrank while we read: the checks below say what is missing */
        else
            done += (size_t)got;
    }
    close(fd);
    if (st != DLA_OK) {
        dla__free(p);
        return st;
    }
    *data = p;
    *size = n;
    return DLA_OK;
}

/* The header and the checksum: the file is whole and meant for us. */
static dla_status check_envelope(const char *path, const unsigned char *p, size_t n)
{
    if (n < sizeof magic || memcmp(p, magic, sizeof magic) != 0)
        return bad(DLA_ERR_IO, path, "not a dlaccel trace file (it does not begin with the trace "
                   "magic bytes)");
    if (n < HEADER_BYTES)
        return bad(DLA_ERR_IO, path, "truncated: %zu bytes, shorter than the %d-byte header", n,
                   HEADER_BYTES);
    uint16_t major, minor;
    uint32_t bom;
    memcpy(&major, p + 8, 2);
    memcpy(&minor, p + 10, 2);
    memcpy(&bom, p + 12, 4);
    if (bom != BYTE_ORDER_MARK) {
        uint32_t swapped = __builtin_bswap32(bom);
        if (swapped == BYTE_ORDER_MARK)
            return bad(DLA_ERR_UNSUPPORTED, path, "written on a machine of the other byte order; "
                       "traces load where they were saved or on a machine like it");
        return bad(DLA_ERR_IO, path, "corrupt header (byte-order mark 0x%08x)", bom);
    }
    if (major != FORMAT_MAJOR)
        return bad(DLA_ERR_UNSUPPORTED, path, "trace format %u.%u; this library (%s) reads format "
                   "%d.x%s", major, minor, dla_version_string(), FORMAT_MAJOR,
                   major > FORMAT_MAJOR ? ": the file is newer, update dlaccel" : "");
    if (memcmp(p + 16, layout, sizeof layout) != 0)
        return bad(DLA_ERR_UNSUPPORTED, path, "written with another data layout (int %u, size_t "
                   "%u, int64 alignment %u, double alignment %u bytes; here %u, %u, %u, %u)",
                   p[16], p[17], p[18], p[19], layout[0], layout[1], layout[2], layout[3]);
    uint64_t size;
    memcpy(&size, p + 24, 8);
    if (size > n)
        return bad(DLA_ERR_IO, path, "truncated: %zu of its %llu bytes", n, (unsigned long long)size);
    if (size < n)
        return bad(DLA_ERR_IO, path, "corrupt: %zu bytes follow the end of the trace",
                   n - (size_t)size);
    if (n < HEADER_BYTES + END_BYTES || memcmp(p + n - END_BYTES, "END", 4) != 0)
        return bad(DLA_ERR_IO, path, "corrupt: it does not end with the END section");
    uint32_t stored, computed = dla__crc32c(0, p, n - 8), reserved;
    memcpy(&stored, p + n - 8, 4);
    memcpy(&reserved, p + n - 4, 4);
    uint64_t end_len;
    memcpy(&end_len, p + n - 16, 8);
    if (end_len != 8 || reserved != 0)
        return bad(DLA_ERR_IO, path, "corrupt: its END section");
    if (stored != computed)
        return bad(DLA_ERR_IO, path, "corrupt: checksum 0x%08x does not match its contents "
                   "(0x%08x)", stored, computed);
    return DLA_OK;
}

enum { SEC_INFO, SEC_VALS, SEC_ENTS, SEC_OUTS, SEC_CNST, SEC_COUNT };
static const char section_tags[SEC_COUNT][5] = {"INFO", "VALS", "ENTS", "OUTS", "CNST"};

/* Finds the sections between the header and END; unknown ones (a newer
 * minor version's) are skipped. */
static dla_status find_sections(const char *path, const unsigned char *p, size_t n,
                                rbuf sec[SEC_COUNT], rbuf *alia, rbuf *cdev)
{
    alia->p = NULL;
    cdev->p = NULL;
    size_t pos = HEADER_BYTES, end = n - END_BYTES;
    int next = 0;
    while (pos < end) {
        if (end - pos < SECTION_HEAD)
            return bad(DLA_ERR_IO, path, "corrupt: a section header at byte %zu runs into END", pos);
        char tag[5] = {0};
        memcpy(tag, p + pos, 4);
        uint64_t len;
        memcpy(&len, p + pos + 8, 8);
        size_t room = end - pos - SECTION_HEAD;
        if (len > room || (len + 7) / 8 * 8 > room)
            return bad(DLA_ERR_IO, path, "corrupt: section \"%.4s\" at byte %zu claims %llu bytes, "
                       "%zu are left", tag, pos, (unsigned long long)len, room);
        int which = -1;
        for (int s = 0; s < SEC_COUNT; s++)
            if (memcmp(tag, section_tags[s], 4) == 0)
                which = s;
        if (memcmp(tag, "ALIA", 4) == 0) {
            if (alia->p)
                return bad(DLA_ERR_IO, path, "corrupt: a second section \"ALIA\" at byte %zu",
                           pos);
            *alia = (rbuf){p + pos + SECTION_HEAD, (size_t)len, 0, 0};
        }
        if (memcmp(tag, "CDEV", 4) == 0) {
            if (cdev->p)
                return bad(DLA_ERR_IO, path, "corrupt: a second section \"CDEV\" at byte %zu",
                           pos);
            *cdev = (rbuf){p + pos + SECTION_HEAD, (size_t)len, 0, 0};
        }
        if (which >= 0) {
            if (which != next)
                return bad(DLA_ERR_IO, path, "corrupt: section \"%.4s\" at byte %zu is out of "
                           "place (expected \"%s\")", tag, pos,
                           next < SEC_COUNT ? section_tags[next] : "END");
            sec[which] = (rbuf){p + pos + SECTION_HEAD, (size_t)len, 0, 0};
            next++;
        }
        pos += SECTION_HEAD + (size_t)(len + 7) / 8 * 8;
    }
    if (next < SEC_COUNT)
        return bad(DLA_ERR_IO, path, "corrupt: section \"%s\" is missing", section_tags[next]);
    return DLA_OK;
}

/* Ends a section's parse: it must have been read exactly to its end. */
static dla_status section_done(const char *path, const rbuf *r, int s)
{
    if (r->bad)
        return bad(DLA_ERR_IO, path, "corrupt: section \"%s\" ends early (%zu bytes)",
                   section_tags[s], r->len);
    if (r->pos != r->len)
        return bad(DLA_ERR_IO, path, "corrupt: section \"%s\" has %zu bytes past its contents",
                   section_tags[s], r->len - r->pos);
    return DLA_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int format_ok(const char *f, int n)
{
    for (int i = 0; i < n; i++)
        if (!strchr("SCBTU", f[i]) || !f[i])
            return 0;
    return dla__format_is_canonical(f, n);
}

static dla_status parse_values(const char *path, rbuf *r, dla__trace *t, int **inputs, int *ninputs)
{
    unsigned char *const_seen = dla__calloc((size_t)(t->nconsts ? t->nconsts : 1), 1);
    *inputs = dla__malloc(sizeof(int) * (size_t)(t->nvalues ? t->nvalues : 1));
    *ninputs = 0;
    if (!const_seen || !*inputs) {
        dla__free(const_seen);
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold %d values", t->nvalues);
    }
    dla_status st = DLA_OK;
    int nconst_values = 0;
    for (int id = 0; id < t->nvalues && st == DLA_OK; id++) {
        dla__trace_value *v = &t->values[id];
        unsigned kind = get_u8(r), dtype = get_u8(r), ndims = get_u8(r), flen = get_u8(r);
        uint32_t index = get_u32(r);
        v->last_use = -1;
        if (r->bad)
            break;
        if (kind > DLA__VALUE_OP || dtype >= DLA_DTYPE_COUNT || ndims > DLA_MAX_DIMS ||
            (flen != 0 && flen != ndims)) {
            st = bad(DLA_ERR_IO, path, "corrupt: value %d: kind %u, dtype %u, %u dims, %u labels",
                     id, kind, dtype, ndims, flen);
            break;
        }
        v->kind = (dla__value_kind)kind;
        v->dtype = (dla_dtype)dtype;
        v->ndims = (int)ndims;
        v->index = (int)index;
        const unsigned char *d = take(r, ndims * sizeof(int64_t));
        const unsigned char *f = take(r, flen);
        if (r->bad)
            break;
        memcpy(v->dims, d, ndims * sizeof(int64_t));
        memcpy(v->format, f, flen);
        v->format[flen] = '\0';
        int64_t numel = 1;
        for (unsigned i = 0; i < ndims && st == DLA_OK; i++) {
            if (v->dims[i] < 0 || (v->dims[i] && numel > (INT64_MAX / 8) / v->dims[i]))
                st = bad(DLA_ERR_IO, path, "corrupt: value %d: dim %u is %lld", id, i + 1,
                         (long long)v->dims[i]);
            else
                numel *= v->dims[i];
        }
        if (st == DLA_OK && !format_ok(v->format, (int)flen))
            st = bad(DLA_ERR_IO, path, "corrupt: value %d: format \"%s\" is not canonical labels",
                     id, v->format);
        if (st != DLA_OK)
            break;
        int limit = kind == DLA__VALUE_INPUT ? t->nin : kind == DLA__VALUE_CONST ? t->nconsts
                                                                                  : t->nentries;
        if (index >= (uint32_t)limit)
            st = bad(DLA_ERR_IO, path, "corrupt: value %d: %s %u of %d", id,
                     kind == DLA__VALUE_INPUT ? "input" : kind == DLA__VALUE_CONST ? "constant" : "op",
                     index, limit);
        else if (kind == DLA__VALUE_CONST && const_seen[index]++)
            st = bad(DLA_ERR_IO, path, "corrupt: value %d: constant %u has two values", id, index);
        else if (kind == DLA__VALUE_INPUT)
            (*inputs)[(*ninputs)++] = (int)index;
        nconst_values += kind == DLA__VALUE_CONST;
    }
    if (st == DLA_OK)
        st = section_done(path, r, SEC_VALS);
    if (st == DLA_OK && nconst_values != t->nconsts)
        st = bad(DLA_ERR_IO, path, "corrupt: %d constants, %d constant values", t->nconsts,
                 nconst_values);
    if (st == DLA_OK) {
        qsort(*inputs, (size_t)*ninputs, sizeof **inputs, cmp_int);
        for (int i = 1; i < *ninputs && st == DLA_OK; i++)
            if ((*inputs)[i] == (*inputs)[i - 1])
                st = bad(DLA_ERR_IO, path, "corrupt: input %d has two values", (*inputs)[i] + 1);
    }
    dla__free(const_seen);
    return st;
}

static dla_status parse_entries(const char *path, rbuf *r, dla__trace *t)
{
    dla__attrs_io io = {0};
    unsigned char *made = dla__calloc((size_t)(t->nvalues ? t->nvalues : 1), 1);
    if (!made)
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot check %d values", t->nvalues);
    dla_status st = DLA_OK;
    for (int k = 0; k < t->nentries && st == DLA_OK; k++) {
        dla__trace_entry *e = &t->entries[k];
        char name[256];
        int named = get_str(r, name, sizeof name);
        unsigned nin = get_u8(r), nout = get_u8(r), nsaved = get_u8(r);
        e->off_tape = (get_u8(r) & ENTRY_OFF_TAPE) != 0;
        if (r->bad)
            break;
        const dla__op *op = named ? dla__op_find(name) : NULL;
        const dla__op_reg *reg = op ? dla__op_registration(op) : NULL;
        if (!named) {
            st = bad(DLA_ERR_IO, path, "corrupt: op %d: its name is not a string", k);
            break;
        }
        if (!reg) {
            st = bad(DLA_ERR_UNSUPPORTED, path, "op %d is \"%s\", which this library (%s) does "
                     "not have (saved by a newer dlaccel?)", k, name, dla_version_string());
            break;
        }
        if ((op->nin >= 0 ? nin != (unsigned)op->nin : nin > DLA__OP_MAX_IO) ||
            nout != (unsigned)op->nout || nsaved != (unsigned)op->nsaved) {
            st = bad(DLA_ERR_IO, path, "corrupt: op %d (%s): %u inputs, %u outputs, %u saved", k,
                     name, nin, nout, nsaved);
            break;
        }
        e->op = op;
        e->nin = (int)nin;
        e->nout = (int)nout;
        e->nsaved = (int)nsaved;
        for (unsigned i = 0; i < nin + nout + nsaved && st == DLA_OK; i++) {
            uint32_t id = get_u32(r);
            if (r->bad)
                break;
            const dla__trace_value *v = id < (uint32_t)t->nvalues ? &t->values[id] : NULL;
            if (i < nin) {
                /* Read only what exists by now: an input, a constant, or
                 * the result of an earlier op. */
                if (!v || (v->kind == DLA__VALUE_OP && !made[id]))
                    st = bad(DLA_ERR_IO, path, "corrupt: op %d (%s) reads value %u before it is "
                             "made", k, name, id);
                else
                    e->in[i] = (int)id;
            } else if (!v || v->kind != DLA__VALUE_OP || v->index != k || made[id]) {
                st = bad(DLA_ERR_IO, path, "corrupt: op %d (%s) makes value %u, which is not its "
                         "own", k, name, id);
            } else {
                made[id] = 1;
                e->out[i - nin] = (int)id;
            }
        }
        uint32_t alen = get_u32(r);
        const unsigned char *abytes = take(r, alen);
        if (r->bad || st != DLA_OK)
            break;
        e->attrs_size = reg->attrs_size;
        e->attrs = reg->attrs_size ? dla__calloc(1, reg->attrs_size) : NULL;
        if (reg->attrs_size && !e->attrs) {
            st = bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold the attributes of op %d", k);
            break;
        }
        st = dla__op_decode_attrs(reg, &io, abytes, alen, e->attrs);
        if (st != DLA_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", dla_last_error());
            st = bad(st, path, "op %d (%s): %s", k, name, why);
        } else if (op->nin < 0 && (op->takes ? !op->takes(e->attrs, (int)nin) : nin < 1)) {
            /* Its forward would read inputs it was not given. */
            st = bad(DLA_ERR_IO, path, "corrupt: op %d (%s): %u input%s, which its attributes "
                     "do not take", k, name, nin, nin == 1 ? "" : "s");
        }
        if (op->random)
            t->rng_entries++;
    }
    if (st == DLA_OK)
        st = section_done(path, r, SEC_ENTS);
    for (int id = 0; id < t->nvalues && st == DLA_OK; id++)
        if (t->values[id].kind == DLA__VALUE_OP && !made[id])
            st = bad(DLA_ERR_IO, path, "corrupt: value %d is made by no op", id);
    dla__free(made);
    return st;
}

/* The recorded shape of value id. */
static void shape_of(const dla__trace *t, int id, dla__vshape *s)
{
    const dla__trace_value *v = &t->values[id];
    memset(s, 0, sizeof *s);
    s->dtype = v->dtype;
    s->ndims = v->ndims;
    memcpy(s->dims, v->dims, (size_t)v->ndims * sizeof *v->dims);
    memcpy(s->format, v->format, sizeof s->format);
}

static int same_shape(const dla__vshape *a, const dla__vshape *b)
{
    return a->dtype == b->dtype && a->ndims == b->ndims &&
           !memcmp(a->dims, b->dims, (size_t)a->ndims * sizeof *a->dims) &&
           !strcmp(a->format, b->format);
}

/* Op k's attributes against the values it reads and makes, as recorded:
 * forward trusts its attributes, so a file whose attribute bytes were
 * changed (its checksum fixed) must fail here, once, not crash a replay
 * or compute something else than what was recorded. */
static dla_status check_entry(const char *path, const dla__trace *t, int k)
{
    const dla__trace_entry *e = &t->entries[k];
    const dla__op_reg *reg = dla__op_registration(e->op);
    if (!e->op->infer)
        return DLA_OK;
    dla__vshape in[DLA__OP_MAX_IO], out[2 * DLA__OP_MAX_IO], want;
    for (int i = 0; i < e->nin; i++)
        shape_of(t, e->in[i], &in[i]);
    for (int i = 0; i < 2 * DLA__OP_MAX_IO; i++)
        out[i] = (dla__vshape){.ndims = -1};
    dla_status st = e->op->infer(e->attrs, e->nin, in, out);
    if (st != DLA_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", dla_last_error());
        return bad(DLA_ERR_IO, path, "corrupt: op %d (%s): its attributes do not fit its inputs: "
                   "%s", k, reg->name, why);
    }
    /* The saved tensors too: a later op (a pooling's backward) reads them. */
    for (int i = 0; i < e->nout + e->nsaved; i++) {
        shape_of(t, e->out[i], &want);
        if (out[i].ndims < 0 || same_shape(&out[i], &want))
            continue;
        char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
        return bad(DLA_ERR_IO, path, "corrupt: op %d (%s): its attributes make %s %d %s %s "
                   "\"%s\"; the file records %s %s \"%s\"", k, reg->name,
                   i < e->nout ? "result" : "saved tensor", i < e->nout ? i + 1 : i - e->nout + 1,
                   dla__dims_str(a, sizeof a, out[i].ndims, out[i].dims),
                   dla_dtype_name(out[i].dtype), out[i].format,
                   dla__dims_str(b, sizeof b, want.ndims, want.dims), dla_dtype_name(want.dtype),
                   want.format);
    }
    return DLA_OK;
}

static dla_status parse_info(const char *path, rbuf *r, dla__trace *t, uint32_t counts[5])
{
    for (int i = 0; i < 5; i++)
        counts[i] = get_u32(r);
    uint32_t inner = get_u32(r), reads = get_u32(r), flags = get_u32(r);
    const unsigned char *secs = take(r, 8);
    char device[64];
    int ok = get_str(r, device, sizeof device) &&
             get_str(r, t->data_dependent_note, sizeof t->data_dependent_note);
    char writer[128];
    ok = ok && get_str(r, writer, sizeof writer);
    dla_status st = section_done(path, r, SEC_INFO);
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < 5; i++)
        if (counts[i] > INT_MAX)
            return bad(DLA_ERR_IO, path, "corrupt: a count of %u", counts[i]);
    if (!ok || inner > counts[4] || reads > INT_MAX || (flags & ~FLAG_DATA_DEPENDENT) ||
        !(flags & FLAG_DATA_DEPENDENT) != !reads)
        return bad(DLA_ERR_IO, path, "corrupt: section \"INFO\"");
    t->nin = (int)counts[0];
    t->nout = (int)counts[1];
    t->inner_consts = (int)inner;
    t->data_dependent = (int)reads;
    memcpy(&t->record_seconds, secs, 8);
    return DLA_OK;
}

/* The CDEV section (1.3; r NULL when the file has none): per constant
 * the device it stays on, or "" for the replay device. The named ones go
 * to on[] and t->const_pinned. */
static dla_status parse_const_devices(const char *path, rbuf *r, dla__trace *t, dla_device **on)
{
    if (!r)
        return DLA_OK;
    t->const_pinned = dla__calloc((size_t)(t->nconsts ? t->nconsts : 1), 1);
    if (!t->const_pinned)
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold %d constants' devices", t->nconsts);
    for (int j = 0; j < t->nconsts; j++) {
        char name[sizeof on[0]->name];
        if (!get_str(r, name, sizeof name))
            return bad(DLA_ERR_IO, path, "corrupt: section \"CDEV\": the device of constant %d",
                       j);
        if (!name[0])
            continue;
        if (!(on[j] = dla_device_get(name))) {
            char why[256];
            snprintf(why, sizeof why, "%s", dla_last_error());
            return bad(DLA_ERR_NO_DEVICE, path, "constant %d was recorded on device \"%s\", "
                       "which cannot be had here (%s)", j, name, why);
        }
        t->const_pinned[j] = 1;
    }
    if (r->pos != r->len)
        return bad(DLA_ERR_IO, path, "corrupt: section \"CDEV\" has %zu bytes past its contents",
                   r->len - r->pos);
    return DLA_OK;
}

/* Makes the constants from their saved bytes: on on[j] where the file
 * names a device, else on the current device. */
static dla_status make_consts(const char *path, rbuf *r, dla__trace *t, dla_device *const *on)
{
    dla_device *cur = dla__current_device("dla_trace_load");
    if (!cur)
        return dla_last_status();
    dla_status st = DLA_OK;
    for (int id = 0; id < t->nvalues && st == DLA_OK; id++) {
        const dla__trace_value *v = &t->values[id];
        if (v->kind != DLA__VALUE_CONST)
            continue;
        size_t n = value_bytes(v);
        uint64_t stored = get_u64(r);
        const unsigned char *data = take(r, n);
        take(r, (8 - n % 8) % 8);
        if (r->bad || stored != n) {
            st = bad(DLA_ERR_IO, path, "corrupt: constant %d has %llu bytes of data; its dims "
                     "take %zu", v->index, (unsigned long long)stored, n);
            break;
        }
        dla_device *dev = on[v->index] ? on[v->index] : cur;
        dla_tensor *c = dla__tensor_alloc("dla_trace_load", dev, v->dtype, v->format, v->ndims,
                                          v->dims);
        if (!c) {
            st = dla_last_status();
            break;
        }
        t->consts[v->index] = c;
        if (n)
            st = dev->table->copy_to_device(dev->ctx, c->storage->mem, 0, data, n);
    }
    return st == DLA_OK ? section_done(path, r, SEC_CNST) : st;
}

/* The ALIA section (1.1; r NULL when the file has none): per input slot,
 * UINT32_MAX or the earlier slot it aliases, which must be one with a
 * value; a slot has a value exactly when it aliases none. inputs: the
 * slots with a value, sorted. */
static dla_status parse_aliases(const char *path, rbuf *r, dla__trace *t, const int *inputs,
                                int ninputs)
{
    if (!r) { /* 1.0: a slot without a value aliases one the file does not name */
        t->in_alias_unknown = ninputs < t->nin;
        return DLA_OK;
    }
    t->in_alias = dla__malloc((size_t)(t->nin ? t->nin : 1) * sizeof *t->in_alias);
    if (!t->in_alias)
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold %d input slots", t->nin);
    for (int i = 0, next = 0; i < t->nin; i++) {
        uint32_t k = get_u32(r);
        if (r->bad)
            return bad(DLA_ERR_IO, path, "corrupt: section \"ALIA\" ends early (%zu bytes)",
                       r->len);
        const int valued = next < ninputs && inputs[next] == i;
        next += valued;
        int ok = valued && k == UINT32_MAX;
        for (int j = 0; !valued && k < (uint32_t)i && j < next; j++)
            ok |= inputs[j] == (int)k; /* an earlier slot with a value */
        if (!ok)
            return bad(DLA_ERR_IO, path, "corrupt: input slot %d %s", i + 1,
                       valued ? "has a value and aliases another slot"
                              : "has no value and aliases no earlier slot that has one");
        t->in_alias[i] = valued ? -1 : (int)k;
    }
    if (r->pos != r->len)
        return bad(DLA_ERR_IO, path, "corrupt: section \"ALIA\" has %zu bytes past its contents",
                   r->len - r->pos);
    return DLA_OK;
}

static dla_status parse(const char *path, const unsigned char *p, size_t n, dla__trace *t)
{
    rbuf sec[SEC_COUNT], alia = {0}, cdev = {0};
    dla_status st = find_sections(path, p, n, sec, &alia, &cdev);
    uint32_t counts[5];
    if (st == DLA_OK)
        st = parse_info(path, &sec[SEC_INFO], t, counts);
    if (st != DLA_OK)
        return st;
    /* The smallest record of each kind bounds its count by the section's
     * size before anything is allocated for it. */
    if (counts[2] > sec[SEC_VALS].len / 8 || counts[3] > sec[SEC_ENTS].len / 10 ||
        counts[1] > sec[SEC_OUTS].len / 4 || counts[4] > counts[2])
        return bad(DLA_ERR_IO, path, "corrupt: %u values, %u ops, %u outputs, %u constants do not "
                   "fit their sections", counts[2], counts[3], counts[1], counts[4]);
    t->values = dla__calloc((size_t)(counts[2] ? counts[2] : 1), sizeof *t->values);
    t->entries = dla__calloc((size_t)(counts[3] ? counts[3] : 1), sizeof *t->entries);
    t->consts = dla__calloc((size_t)(counts[4] ? counts[4] : 1), sizeof *t->consts);
    t->outputs = dla__calloc((size_t)(t->nout ? t->nout : 1), sizeof *t->outputs);
    if (!t->values || !t->entries || !t->consts || !t->outputs)
        return bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold a trace of %u values and %u ops",
                   counts[2], counts[3]);
    /* Only now: dla__trace_free walks these counts. */
    t->nvalues = (int)counts[2];
    t->nentries = (int)counts[3];
    t->nconsts = (int)counts[4];
    int *inputs = NULL, ninputs = 0;
    st = parse_values(path, &sec[SEC_VALS], t, &inputs, &ninputs);
    if (st == DLA_OK)
        st = parse_aliases(path, alia.p ? &alia : NULL, t, inputs, ninputs);
    dla__free(inputs);
    if (st == DLA_OK)
        st = parse_entries(path, &sec[SEC_ENTS], t);
    for (int i = 0; i < t->nout && st == DLA_OK; i++) {
        uint32_t id = get_u32(&sec[SEC_OUTS]);
        if (id >= (uint32_t)t->nvalues)
            st = bad(DLA_ERR_IO, path, "corrupt: output %d is value %u of %d", i + 1, id,
                     t->nvalues);
        else {
            t->outputs[i] = (int)id;
            t->values[id].is_output = 1;
        }
    }
    if (st == DLA_OK)
        st = section_done(path, &sec[SEC_OUTS], SEC_OUTS);
    /* Replay frees a value after its last reader: worked out here, never
     * taken from the file. */
    for (int k = 0; k < t->nentries && st == DLA_OK; k++)
        for (int i = 0; i < t->entries[k].nin; i++)
            t->values[t->entries[k].in[i]].last_use = k;
    for (int k = 0; k < t->nentries && st == DLA_OK; k++)
        st = check_entry(path, t, k);
    dla_device **on = NULL;
    if (st == DLA_OK && !(on = dla__calloc((size_t)(t->nconsts ? t->nconsts : 1), sizeof *on)))
        st = bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot hold %d constants' devices", t->nconsts);
    if (st == DLA_OK)
        st = parse_const_devices(path, cdev.p ? &cdev : NULL, t, on);
    if (st == DLA_OK)
        st = make_consts(path, &sec[SEC_CNST], t, on);
    dla__free(on);
    return st;
}

DLA_API dla_status dla_trace_load(const char *path, dla_trace **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_trace_load: argument %s is NULL",
                         path ? "out" : "path");
    unsigned char *p;
    size_t n;
    dla_status st = read_file(path, &p, &n);
    if (st != DLA_OK)
        return st;
    st = check_envelope(path, p, n);
    dla__trace *t = NULL;
    if (st == DLA_OK) {
        t = dla__calloc(1, sizeof *t);
        if (!t)
            st = bad(DLA_ERR_OUT_OF_MEMORY, path, "cannot allocate the trace");
    }
    if (st == DLA_OK) {
        t->refs = 1;
        t->magic = DLA__HANDLE_TRACE;
        st = parse(path, p, n, t);
    }
    dla__free(p);
    if (st != DLA_OK) {
        dla__trace_free(t);
        /* The message quotes the file (a section's or an op's name): its
         * control characters go as text, not to the terminal. */
        return dla__fail_as_text(st);
    }
    *out = (dla_trace *)t;
    return DLA_OK;
}

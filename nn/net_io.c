/*
 * net_io.c - saving and loading a network as a safetensors file: an
 * 8-byte little-endian header length, a JSON header, then the tensors'
 * raw little-endian bytes back to back. The header's "__metadata__" (text
 * values only, as safetensors wants) holds the format name, its version,
 * the architecture as JSON text and (since 1.1) the learnables' learn-rate
 * and L2 factors as JSON text, and (since 1.2) a CRC-32C checksum of the
 * architecture, the factors and the data; each other entry is a tensor,
 * "learnables/<layer>/<parameter>", with dtype, shape (MATLAB's dims
 * reversed: the row-major shape of the same bytes) and data_offsets into
 * the data. Loading trusts nothing it has not checked: the length against
 * the file, every offset against the data, the tensors' tiling, the
 * architecture field by field, and that the tensors are exactly the
 * network's parameters.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/crc32c.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/file_special.h"
#include "nn/nn.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FORMAT_NAME "dlaccel-net"
/* 1.1 added the "factors" metadata; a 1.0 file (none) loads with the
 * layers' default factors, and a 1.0 reader ignores the entry. 1.2 added
 * the "checksum" metadata, which a 1.2 file must have; 1.0 and 1.1 files
 * (none) load unchecked, and older readers ignore the entry. */
#define FORMAT_VERSION "1.2"
#define CHECKSUM_PREFIX "crc32c:"
#define MAX_HEADER ((uint64_t)100 << 20)

static int host_is_little(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* Reverses each element's bytes (a big-endian host). */
static void swap_elements(unsigned char *p, size_t n, size_t esize)
{
    for (size_t i = 0; i < n; i++, p += esize)
        for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

static const char *st_dtype(dla_dtype d) { return d == DLA_F64 ? "F64" : "F32"; }

/* "a/b/c" (c NULL: "a/b"), allocated to its length (a layer name has no
 * length limit: built in a fixed buffer, two long names sharing their
 * first few hundred bytes named the same tensor); NULL when out of memory. */
static char *joined(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + (c ? strlen(c) + 1 : 0) + 2;
    char *s = dla__nn_malloc(n);
    if (s && c)
        snprintf(s, n, "%s/%s/%s", a, b, c);
    else if (s)
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* The learnables' factors as JSON text: {"<layer>/<parameter>": [learn
 * rate, L2], ...} (NULL when out of memory). Jansson prints a double with
 * 17 digits, so the factors read back exactly. Dumped into a buffer of the
 * size it needs, as the architecture is, not with json_dumps: Jansson's
 * dump does not check the append of an object's key, and json_dumps grows
 * its buffer as it goes, so a growth refused there dropped the key's bytes
 * and the save went on with a broken text ("':' expected after an object
 * key"), a file dla_net_load then refused. */
static char *factors_text(const dla_net *net)
{
    const dla_table *t = &net->tables[DLA__LEARNABLE];
    json_t *o = json_object();
    int ok = o != NULL;
    for (int r = 0; ok && r < t->count; r++) {
        char *name = joined(t->layer[r], t->param[r], NULL);
        json_t *pair = json_pack("[ff]", t->lr_factor[r], t->l2_factor[r]);
        ok = name && pair && !json_object_set_new(o, name, pair);
        if (!name)
            json_decref(pair);
        dla__nn_free(name);
    }
    size_t n = ok ? json_dumpb(o, NULL, 0, JSON_COMPACT) : 0;
    char *text = n ? dla__nn_malloc(n + 1) : NULL;
    if (text && json_dumpb(o, text, n, JSON_COMPACT) == n) {
        text[n] = '\0';
    } else {
        dla__nn_free(text);
        text = NULL;
    }
    json_decref(o);
    return text;
}

/* The checksum of a file: CRC-32C over the architecture text, the
 * factors text and the data, each what the file holds. Without it a
 * flipped bit in a weight, or in a digit of an option or a factor,
 * loaded as a network that computes something else, in silence. The
 * tensors' entries need none: their names, dtypes, shapes and offsets are
 * checked against the architecture and each other. */
static uint32_t file_checksum(const char *arch, size_t alen, const char *factors, size_t flen,
                              uint32_t data_crc)
{
    /* The data's CRC is taken first (save computes it before the header
     * exists): the texts continue it. */
    uint32_t c = dla__crc32c(data_crc, arch, alen);
    return dla__crc32c(c, factors, flen);
}

/* ------------------------------------------------------------------ save */

/* Creates the temporary file that will be renamed over path, named into
 * tmp (size bytes): with the mode path has now, or for a new file the
 * umask's default (0666 less the umask, as any program's new file; mkstemp
 * would make it 0600, and a re-save would change the mode of the file it
 * replaces). Returns the descriptor, or -1 with errno set. */
static int create_beside(const char *path, char *tmp, size_t size)
{
    static unsigned long serial;
    struct stat old;
    int keep = stat(path, &old) == 0 && S_ISREG(old.st_mode);
    for (int tries = 0; tries < 64; tries++) {
        snprintf(tmp, size, "%s.tmp-%ld-%lu", path, (long)getpid(),
                 __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST)
            continue; /* left by an earlier process of the same id */
        if (fd >= 0 && keep && fchmod(fd, old.st_mode & 0777) != 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            errno = err;
            return -1;
        }
        return fd;
    }
    errno = EEXIST;
    return -1;
}

/* Asks the system to write the folder of path (its entry for the renamed
 * file) to the disk. Best effort: a folder that cannot be opened or
 * synced (a path of more than PATH_MAX bytes, a file system that does not
 * sync folders) leaves the save as it was before, done but not durable. */
static void sync_folder_of(const char *path)
{
    char folder[4096];
    if (!dla__nn_folder_of(path, folder, sizeof folder))
        return;
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* CRC-32C of the data a save writes, every tensor read from its device
 * in the file's order. Only for a file written in place (a FIFO), where
 * the header cannot be patched after the data: a save to a regular file
 * takes the CRC as it writes and reads each tensor once. */
static dla_status data_checksum(const char *fn, const dla_net *net, uint32_t *crc)
{
    *crc = 0;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count; r++) {
            const dla_tensor *v = net->tables[k].values[r];
            size_t esize = dla_dtype_size(dla_tensor_dtype(v));
            size_t n = (size_t)dla_tensor_numel(v), bytes = n * esize;
            unsigned char *data = dla__nn_malloc(bytes ? bytes : 1);
            if (!data)
                return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", fn, bytes);
            dla_status ts = dla_tensor_to_host(v, data, bytes);
            if (ts == DLA_OK && !host_is_little())
                swap_elements(data, n, esize);
            if (ts == DLA_OK)
                *crc = dla__crc32c(*crc, data, bytes);
            dla__nn_free(data);
            if (ts != DLA_OK)
                return ts;
        }
    return DLA_OK;
}

DLA_API dla_status dla_net_save(const dla_net *net, const char *path)
{
    static const char fn[] = "dla_net_save";
    if (!net || !path)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                            net ? "path" : "net");
    if (!net->initialized)
        return dla__nn_fail(DLA_ERR_STATE, "%s: the network is not initialized", fn);
    /* dla_net_load refuses a parameter of another dtype than the network
     * (its layers could not run it): such a file was written, and its
     * network could then never be loaded. A value replaced by hand through
     * dla_table_values is the way to get one. */
    const dla_dtype ndt = dla__net_values_dtype(net);
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count; r++) {
            dla_dtype dt = dla_tensor_dtype(net->tables[k].values[r]);
            if (dt != ndt)
                return dla__nn_fail(DLA_ERR_DTYPE, "%s: %s/%s/%s is %s in a %s network (replaced "
                                    "by hand?); dla_net_load would refuse the file", fn,
                                    dla__param_kind_names[k], net->tables[k].layer[r],
                                    net->tables[k].param[r], dla_dtype_name(dt),
                                    dla_dtype_name(ndt));
        }
    /* /dev/null, a FIFO: written in place, never renamed over. */
    const int in_place = dla__path_is_special(path);
    /* The header carries the checksum of the data after it. A regular
     * file gets a placeholder of the same length, patched once the data
     * is written (each tensor read from its device once: the reads are
     * most of a big network's save); a file written in place cannot be
     * patched, and its data is read twice. */
    uint32_t data_crc = 0;
    if (in_place) {
        dla_status cs = data_checksum(fn, net, &data_crc);
        if (cs != DLA_OK)
            return cs;
    }
    size_t alen = 0;
    char *arch = dla__net_architecture(net, 0, &alen), *factors = NULL;
    json_t *root = json_object(), *meta = json_object();
    dla_status st = arch && root && meta ? DLA_OK : dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s", fn);
    if (st == DLA_OK) {
        int ok = !json_object_set_new(meta, "format", json_string(FORMAT_NAME));
        ok = !json_object_set_new(meta, "format_version", json_string(FORMAT_VERSION)) && ok;
        ok = !json_object_set_new(meta, "architecture", json_string(arch)) && ok;
        factors = factors_text(net);
        ok = factors && !json_object_set_new(meta, "factors", json_string(factors)) && ok;
        char sum[32];
        if (factors)
            snprintf(sum, sizeof sum, CHECKSUM_PREFIX "%08x",
                     in_place ? (unsigned)file_checksum(arch, alen, factors, strlen(factors),
                                                        data_crc)
                              : 0u);
        ok = factors && !json_object_set_new(meta, "checksum", json_string(sum)) && ok;
        ok = !json_object_set_new(meta, "dims_order", json_string("shape is MATLAB's column-major "
                                                                  "dims reversed (row-major)")) && ok;
        ok = !json_object_set_new(root, "__metadata__", meta) && ok;
        meta = NULL;
        if (!ok)
            st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot write the header", fn);
    }
    uint64_t offset = 0;
    for (int k = 0; st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count; r++) {
            const dla_tensor *v = net->tables[k].values[r];
            int64_t dims[DLA_MAX_DIMS];
            int nd = dla_tensor_dims(v, dims);
            uint64_t bytes = (uint64_t)dla_tensor_numel(v) * dla_dtype_size(dla_tensor_dtype(v));
            json_t *t = json_object();
            int ok = t && !json_object_set_new(t, "dtype", json_string(st_dtype(dla_tensor_dtype(v)))) &&
                     !json_object_set_new(t, "shape", json_array()) &&
                     !json_object_set_new(t, "data_offsets", json_array());
            json_t *shape = json_object_get(t, "shape"), *offs = json_object_get(t, "data_offsets");
            for (int i = nd - 1; ok && i >= 0; i--)
                ok = !json_array_append_new(shape, json_integer(dims[i]));
            ok = ok && !json_array_append_new(offs, json_integer((json_int_t)offset));
            ok = ok && !json_array_append_new(offs, json_integer((json_int_t)(offset + bytes)));
            char *name = joined(dla__param_kind_names[k], net->tables[k].layer[r],
                                net->tables[k].param[r]);
            if (ok && name)
                ok = !json_object_set_new(root, name, t); /* takes t, even on failure */
            else {
                json_decref(t);
                ok = 0;
            }
            dla__nn_free(name);
            if (!ok) {
                st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot write the header", fn);
                break;
            }
            offset += bytes;
        }
    size_t hlen = st == DLA_OK ? json_dumpb(root, NULL, 0, JSON_COMPACT) : 0;
    size_t padded = (hlen + 7) & ~(size_t)7;
    unsigned char *head = st == DLA_OK ? dla__nn_malloc(8 + padded) : NULL;
    if (st == DLA_OK && (!hlen || !head))
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot write the header", fn);
    if (st == DLA_OK && json_dumpb(root, (char *)head + 8, hlen, JSON_COMPACT) != hlen)
        st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot write the header", fn);
    /* Where the placeholder's 8 hex digits are in the file. The key
     * occurs once unescaped: inside a JSON string (a layer name, the
     * architecture) its quotes are written \". */
    size_t sum_at = 0;
    if (st == DLA_OK) {
        memset(head + 8 + hlen, ' ', padded - hlen);
        for (int i = 0; i < 8; i++)
            head[i] = (unsigned char)((uint64_t)padded >> (8 * i));
        static const char key[] = "\"checksum\":\"" CHECKSUM_PREFIX;
        const size_t klen = sizeof key - 1;
        for (size_t i = 8; !sum_at && i + klen + 8 <= 8 + hlen; i++)
            if (!memcmp(head + i, key, klen))
                sum_at = i + klen;
        if (!sum_at) /* cannot happen: the header was made above */
            st = dla__nn_fail(DLA_ERR_STATE, "%s: no checksum in the header", fn);
    }
    json_decref(root);
    json_decref(meta);
    if (st != DLA_OK) {
        dla__nn_free(head);
        dla__nn_free(arch);
        dla__nn_free(factors);
        return st;
    }
    /* A temporary file beside path, renamed over it when whole. */
    size_t plen = strlen(path) + 48;
    char *tmp = dla__nn_malloc(plen);
    if (!tmp) {
        dla__nn_free(head);
        dla__nn_free(arch);
        dla__nn_free(factors);
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s", fn);
    }
    int fd = in_place ? open(path, O_WRONLY | O_CLOEXEC) : create_beside(path, tmp, plen);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        st = dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot %s: %s", fn, path,
                          in_place ? "open it" : "create a file beside it", strerror(errno));
        if (fd >= 0) {
            close(fd);
            if (!in_place)
                unlink(tmp);
        }
        dla__nn_free(head);
        dla__nn_free(tmp);
        dla__nn_free(arch);
        dla__nn_free(factors);
        return st;
    }
    int ok = fwrite(head, 1, 8 + padded, f) == 8 + padded;
    dla__nn_free(head);
    for (int k = 0; ok && st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; ok && st == DLA_OK && r < net->tables[k].count; r++) {
            const dla_tensor *v = net->tables[k].values[r];
            size_t esize = dla_dtype_size(dla_tensor_dtype(v));
            size_t n = (size_t)dla_tensor_numel(v), bytes = n * esize;
            unsigned char *data = dla__nn_malloc(bytes);
            if (!data) {
                st = dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", fn, bytes);
                break;
            }
            st = dla_tensor_to_host(v, data, bytes);
            if (st == DLA_OK) {
                if (!host_is_little())
                    swap_elements(data, n, esize);
                if (!in_place)
                    data_crc = dla__crc32c(data_crc, data, bytes);
                ok = fwrite(data, 1, bytes, f) == bytes;
            }
            dla__nn_free(data);
        }
    int err = errno;
    if (ok && st == DLA_OK && !in_place) {
        char hex[9];
        snprintf(hex, sizeof hex, "%08x",
                 (unsigned)file_checksum(arch, alen, factors, strlen(factors), data_crc));
        if (fflush(f) != 0 || pwrite(fileno(f), hex, 8, (off_t)sum_at) != 8) {
            ok = 0;
            err = errno;
        }
    }
    dla__nn_free(arch);
    dla__nn_free(factors);
    /* The data reaches the disk before the rename does: without it a
     * power loss soon after the rename could leave an empty or partial
     * file under path (ext4 and xfs may write the rename first), where a
     * good network, a training's last checkpoint, was before. */
    if (ok && st == DLA_OK && !in_place && fflush(f) != 0) {
        ok = 0;
        err = errno;
    }
    /* EINVAL, ENOTSUP: a file system with nothing to sync; the write
     * itself went well. EIO, ENOSPC: the data did not reach the disk. */
    if (ok && st == DLA_OK && !in_place && fsync(fileno(f)) != 0 && errno != EINVAL &&
        errno != ENOTSUP) {
        ok = 0;
        err = errno;
    }
    if (fclose(f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (st == DLA_OK && !ok)
        st = dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot write: %s", fn, path, strerror(err));
    if (st == DLA_OK && !in_place && rename(tmp, path) != 0)
        st = dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot rename the written file over it: %s", fn,
                          path, strerror(errno));
    /* ... and the rename itself, so that path holds the new file after a
     * power loss, not the old one (or none). */
    if (st == DLA_OK && !in_place)
        sync_folder_of(path);
    if (st != DLA_OK && !in_place)
        unlink(tmp);
    dla__nn_free(tmp);
    return st;
}

/* ------------------------------------------------------------------ load */

typedef struct entry {
    const char *name;
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS]; /* MATLAB order */
    uint64_t begin, end;
    int used;
} entry;

typedef struct loader {
    const char *path;
    const unsigned char *data;
    entry *entries;
    size_t n;
} loader;

static dla_status corrupt(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static dla_status corrupt(const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return dla__nn_fail(DLA_ERR_IO, "dla_net_load: %s: %s", path, msg);
}

static int cmp_begin(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static dla_tensor *lookup(void *ctxp, dla__param_kind kind, const char *layer, const char *param,
                          int ndims, const int64_t *dims)
{
    loader *ld = ctxp;
    const char *kn = dla__param_kind_names[kind];
    size_t kl = strlen(kn), ll = strlen(layer);
    for (size_t i = 0; i < ld->n; i++) {
        entry *e = &ld->entries[i];
        /* Matched in place: "<kind>/<layer>/<param>" */
        const char *name = e->name;
        if (strncmp(name, kn, kl) || name[kl] != '/' || strncmp(name + kl + 1, layer, ll) ||
            name[kl + 1 + ll] != '/' || strcmp(name + kl + ll + 2, param))
            continue;
        int n = e->ndims > ndims ? e->ndims : ndims;
        for (int d = 0; d < n; d++)
            if (!(d < ndims && dims[d] < 0) && /* any size: a batch's columns */
                (d < e->ndims ? e->dims[d] : 1) != (d < ndims ? dims[d] : 1)) {
                char a[96], b[96];
                dla__dims_text(e->ndims, e->dims, a, sizeof a);
                dla__dims_text(ndims, dims, b, sizeof b);
                corrupt(ld->path, "tensor %s is %s; the architecture makes it %s", name, a, b);
                return NULL;
            }
        e->used = 1;
        size_t esize = dla_dtype_size(e->dtype), count = (size_t)((e->end - e->begin) / esize);
        const unsigned char *src = ld->data + e->begin;
        unsigned char *copy = NULL;
        if (!host_is_little()) {
            copy = dla__nn_malloc(e->end - e->begin);
            if (!copy) {
                dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_load: %s", name);
                return NULL;
            }
            memcpy(copy, src, e->end - e->begin);
            swap_elements(copy, count, esize);
            src = copy;
        }
        dla_tensor *t = dla_tensor_from_host(src, e->dtype, "", e->ndims, e->dims);
        dla__nn_free(copy);
        return t;
    }
    corrupt(ld->path, "it has no tensor %s/%s/%s, which the architecture needs", kn, layer, param);
    return NULL;
}

/* Reads and checks the safetensors entries of the header. */
static dla_status read_entries(loader *ld, json_t *root, uint64_t datasize)
{
    size_t n = json_object_size(root) - 1;
    ld->entries = dla__nn_calloc(n ? n : 1, sizeof *ld->entries);
    if (!ld->entries)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_load: %s", ld->path);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__"))
            continue;
        entry *e = &ld->entries[ld->n++];
        e->name = key;
        const json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
        const json_t *offs = json_object_get(v, "data_offsets");
        if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) ||
            !json_is_array(offs) || json_array_size(offs) != 2 || json_object_size(v) != 3)
            return corrupt(ld->path, "tensor %s: not {dtype, shape, data_offsets}", key);
        if (!strcmp(json_string_value(dt), "F32"))
            e->dtype = DLA_F32;
        else if (!strcmp(json_string_value(dt), "F64"))
            e->dtype = DLA_F64;
        else
            return corrupt(ld->path, "tensor %s: dtype \"%s\" (a network holds F32 or F64)", key,
                           json_string_value(dt));
        size_t nd = json_array_size(shape);
        if (nd > DLA_MAX_DIMS)
            return corrupt(ld->path, "tensor %s: %zu dims (at most %d)", key, nd, DLA_MAX_DIMS);
        e->ndims = (int)nd;
        uint64_t numel = 1;
        for (size_t i = 0; i < nd; i++) {
            const json_t *d = json_array_get(shape, i);
            if (!json_is_integer(d) || json_integer_value(d) < 0 ||
                __builtin_mul_overflow(numel, (uint64_t)json_integer_value(d), &numel))
                return corrupt(ld->path, "tensor %s: shape entry %zu is not a size", key, i);
            e->dims[nd - 1 - i] = (int64_t)json_integer_value(d);
        }
        const json_t *b = json_array_get(offs, 0), *f = json_array_get(offs, 1);
        if (!json_is_integer(b) || !json_is_integer(f) || json_integer_value(b) < 0 ||
            json_integer_value(f) < json_integer_value(b) ||
            (uint64_t)json_integer_value(f) > datasize)
            return corrupt(ld->path, "tensor %s: data_offsets outside the %llu bytes of data", key,
                           (unsigned long long)datasize);
        e->begin = (uint64_t)json_integer_value(b);
        e->end = (uint64_t)json_integer_value(f);
        uint64_t bytes;
        if (__builtin_mul_overflow(numel, (uint64_t)dla_dtype_size(e->dtype), &bytes) ||
            bytes != e->end - e->begin)
            return corrupt(ld->path, "tensor %s: %llu bytes of data for a shape that needs more or "
                           "fewer", key, (unsigned long long)(e->end - e->begin));
    }
    /* The tensors tile the data: no gap, no overlap, nothing after. */
    entry *sorted = dla__nn_malloc(sizeof *sorted * (ld->n ? ld->n : 1));
    if (!sorted)
        return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_net_load: %s", ld->path);
    memcpy(sorted, ld->entries, sizeof *sorted * ld->n);
    qsort(sorted, ld->n, sizeof *sorted, cmp_begin);
    uint64_t at = 0;
    dla_status st = DLA_OK;
    for (size_t i = 0; i < ld->n && st == DLA_OK; i++) {
        if (sorted[i].begin != at)
            st = corrupt(ld->path, "tensor %s starts at byte %llu of the data, not %llu (a gap or "
                         "an overlap)", sorted[i].name, (unsigned long long)sorted[i].begin,
                         (unsigned long long)at);
        at = sorted[i].end;
    }
    if (st == DLA_OK && at != datasize)
        st = corrupt(ld->path, "the tensors cover %llu of its %llu bytes of data",
                     (unsigned long long)at, (unsigned long long)datasize);
    dla__nn_free(sorted);
    return st;
}

/* Checks the "checksum" metadata (1.2) against the file's architecture,
 * factors and data (file_checksum). A 1.0 or 1.1 file has none and is
 * taken unchecked; a later one without it lost it (a flipped bit in its
 * name) and is refused. */
static dla_status check_checksum(const char *path, const json_t *meta, const json_t *arch,
                                 const unsigned char *data, uint64_t datasize)
{
    const json_t *sum = json_object_get(meta, "checksum");
    const json_t *ver = json_object_get(meta, "format_version");
    if (!sum) {
        const char *v = json_string_value(ver); /* "1." checked by the caller */
        char *end;
        long minor = strtol(v + 2, &end, 10);
        if (end != v + 2 && !*end && minor >= 0 && minor < 2)
            return DLA_OK;
        return corrupt(path, "__metadata__ has no checksum, which a format %s file has", v);
    }
    const char *text = json_string_value(sum);
    const size_t pl = strlen(CHECKSUM_PREFIX);
    unsigned long stored = 0;
    int ok = text && json_string_length(sum) == pl + 8 && !strncmp(text, CHECKSUM_PREFIX, pl);
    for (size_t i = pl; ok && i < pl + 8; i++) {
        const char ch = text[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        ok = d >= 0;
        stored = stored << 4 | (unsigned long)(d & 15);
    }
    if (!ok)
        return corrupt(path, "__metadata__ checksum is not \"" CHECKSUM_PREFIX "\" and 8 hex "
                       "digits");
    const json_t *factors = json_object_get(meta, "factors");
    const char *ftext = json_is_string(factors) ? json_string_value(factors) : "";
    const size_t flen = json_is_string(factors) ? json_string_length(factors) : 0;
    uint32_t data_crc = dla__crc32c(0, data, (size_t)datasize);
    uint32_t computed = file_checksum(json_string_value(arch), json_string_length(arch), ftext,
                                      flen, data_crc);
    if (computed != (uint32_t)stored)
        return corrupt(path, "the checksum of its architecture, factors and data is %08x, not "
                       "the %08lx it was saved with: the file is damaged", (unsigned)computed,
                       stored);
    return DLA_OK;
}

/* Sets the learnables' factors from the "factors" metadata (1.1); a file
 * without it (1.0) keeps the layers' defaults. Every entry must name a
 * learnable and hold two factors >= 0, and every learnable must have one. */
static dla_status load_factors(const char *path, const json_t *meta, dla_net *net)
{
    const json_t *text = json_object_get(meta, "factors");
    if (!text)
        return DLA_OK;
    if (!json_is_string(text))
        return corrupt(path, "__metadata__ factors is not text");
    char why[160];
    size_t at;
    json_t *o = NULL;
    dla_status st = dla__json_read(json_string_value(text), json_string_length(text), &o, why,
                                   sizeof why, &at);
    if (st == DLA_ERR_OUT_OF_MEMORY)
        return dla__nn_fail(st, "dla_net_load: %s: out of memory reading the factors", path);
    if (st != DLA_OK || !json_is_object(o)) {
        json_decref(o);
        return corrupt(path, "__metadata__ factors is not a JSON object: %s (at byte %zu)",
                       o ? "another value" : why, o ? (size_t)0 : at);
    }
    dla_table *t = &net->tables[DLA__LEARNABLE];
    int seen = 0;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int row = -1;
        for (int r = 0; row < 0 && r < t->count; r++) {
            size_t ln = strlen(t->layer[r]);
            if (!strncmp(key, t->layer[r], ln) && key[ln] == '/' && !strcmp(key + ln + 1, t->param[r]))
                row = r;
        }
        const json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
        if (row < 0)
            st = corrupt(path, "factors for %s, which is not a learnable of the network", key);
        else if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_number(a) ||
                 !json_is_number(b) || !(json_number_value(a) >= 0) || !(json_number_value(b) >= 0))
            st = corrupt(path, "factors for %s: not [learn-rate factor, L2 factor], both >= 0", key);
        if (st != DLA_OK)
            break;
        t->lr_factor[row] = json_number_value(a);
        t->l2_factor[row] = json_number_value(b);
        seen++;
    }
    json_decref(o);
    if (st == DLA_OK && seen != t->count)
        st = corrupt(path, "factors for %d of the network's %d learnables", seen, t->count);
    return st;
}

static dla_status load_file(const char *path, dla_net **out);

DLA_API dla_status dla_net_load(const char *path, dla_net **out)
{
    /* What a failure's message quotes from the file, as text. */
    dla_status st = load_file(path, out);
    return st == DLA_OK ? st : dla__fail_as_text(st);
}

static dla_status load_file(const char *path, dla_net **out)
{
    static const char fn[] = "dla_net_load";
    if (!out || !path)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                            out ? "path" : "out");
    *out = NULL;
    /* O_NONBLOCK: a FIFO no one writes to is refused below, not waited
     * for in open (for ever, as dla_trace_load did); a regular file is
     * read blocking again. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot open: %s", fn, path, strerror(errno));
    /* A directory opens for reading on Linux, and its "size" from ftell
     * is LONG_MAX, which was then reported as an allocation refused. */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        close(fd);
        return dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot read it: it is %s, not a network file", fn,
                            path, S_ISDIR(sb.st_mode) ? "a directory" : "not a regular file");
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int err = errno;
        close(fd);
        return dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot read it: %s", fn, path, strerror(err));
    }
    unsigned char *file = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    /* The header length first: a file that is no network (a 20 GB
     * dataset, a sparse file of terabytes) was read whole, or its size
     * asked of the allocator, before its first 8 bytes were looked at. */
    unsigned char first[8];
    uint64_t hlen0 = 0;
    if (size >= 8 && fseek(f, 0, SEEK_SET) == 0 && fread(first, 1, 8, f) == 8) {
        for (int i = 0; i < 8; i++)
            hlen0 |= (uint64_t)first[i] << (8 * i);
        if (hlen0 > (uint64_t)size - 8 || hlen0 > MAX_HEADER || hlen0 < 2) {
            fclose(f);
            return corrupt(path, "the header length %llu does not fit the file (%ld bytes): not a "
                           "safetensors file, or truncated", (unsigned long long)hlen0, size);
        }
    }
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0)
        file = dla__nn_malloc((size_t)size + 1);
    int read_ok = file && fread(file, 1, (size_t)size, f) == (size_t)size;
    fclose(f);
    if (!read_ok) {
        dla__nn_free(file);
        if (size >= 0 && !file)
            return dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %s: %ld bytes", fn, path, size);
        return dla__nn_fail(DLA_ERR_IO, "%s: %s: cannot read it", fn, path);
    }
    dla_status st = DLA_OK;
    uint64_t hlen = 0;
    if (size < 8)
        st = corrupt(path, "%ld bytes is too short for a safetensors file (an 8-byte header "
                     "length first)", size);
    for (int i = 0; st == DLA_OK && i < 8; i++)
        hlen |= (uint64_t)file[i] << (8 * i);
    if (st == DLA_OK && (hlen > (uint64_t)size - 8 || hlen > MAX_HEADER || hlen < 2))
        st = corrupt(path, "the header length %llu does not fit the file (%ld bytes): not a "
                     "safetensors file, or truncated", (unsigned long long)hlen, size);
    json_t *root = NULL;
    if (st == DLA_OK) {
        char why[160];
        size_t at;
        st = dla__json_read((const char *)file + 8, (size_t)hlen, &root, why, sizeof why, &at);
        if (st == DLA_ERR_OUT_OF_MEMORY)
            dla__nn_fail(st, "%s: %s: out of memory reading the header (%llu bytes)", fn, path,
                         (unsigned long long)hlen);
        else if (st != DLA_OK || !json_is_object(root))
            st = corrupt(path, "the header is not a JSON object: %s (at byte %zu)",
                         root ? "another value" : why, root ? (size_t)0 : at);
    }
    const json_t *meta = st == DLA_OK ? json_object_get(root, "__metadata__") : NULL;
    const json_t *fmt = json_object_get(meta, "format"), *ver = json_object_get(meta, "format_version");
    const json_t *arch = json_object_get(meta, "architecture");
    if (st == DLA_OK && (!json_is_object(meta) || !json_is_string(fmt) ||
                         strcmp(json_string_value(fmt), FORMAT_NAME)))
        st = dla__nn_fail(DLA_ERR_UNSUPPORTED, "%s: %s: a safetensors file but not a dlaccel "
                          "network (its __metadata__ has no format \"%s\")", fn, path, FORMAT_NAME);
    if (st == DLA_OK && (!json_is_string(ver) || strncmp(json_string_value(ver), "1.", 2)))
        st = dla__nn_fail(DLA_ERR_UNSUPPORTED, "%s: %s: format version \"%s\"; this library reads "
                          "1.x", fn, path, json_is_string(ver) ? json_string_value(ver) : "?");
    if (st == DLA_OK && !json_is_string(arch))
        st = corrupt(path, "__metadata__ has no architecture text");
    /* The data start only once hlen is known to lie in the file: past its
     * end the pointer itself would be undefined (and can wrap). */
    loader ld = {path, st == DLA_OK ? file + 8 + hlen : NULL, NULL, 0};
    if (st == DLA_OK)
        st = read_entries(&ld, root, (uint64_t)size - 8 - hlen);
    if (st == DLA_OK)
        st = check_checksum(path, meta, arch, ld.data, (uint64_t)size - 8 - hlen);
    dla_net *net = NULL;
    if (st == DLA_OK) {
        char what[600];
        snprintf(what, sizeof what, "%s: %s", fn, path);
        dla_scope_begin();
        st = dla__net_from_architecture(json_string_value(arch), json_string_length(arch), lookup,
                                        &ld, what, &net);
        dla_scope_end();
    }
    if (st == DLA_OK)
        st = load_factors(path, meta, net);
    for (size_t i = 0; st == DLA_OK && i < ld.n; i++)
        if (!ld.entries[i].used)
            st = corrupt(path, "tensor %s is not a parameter of the network", ld.entries[i].name);
    for (int k = 0; st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; st == DLA_OK && r < net->tables[k].count; r++)
            if (dla_tensor_dtype(net->tables[k].values[r]) != net->dtype)
                st = corrupt(path, "tensor %s/%s/%s is %s in a %s network", dla__param_kind_names[k],
                             net->tables[k].layer[r], net->tables[k].param[r],
                             dla_dtype_name(dla_tensor_dtype(net->tables[k].values[r])),
                             dla_dtype_name(net->dtype));
    dla__nn_free(ld.entries);
    json_decref(root);
    dla__nn_free(file);
    if (st != DLA_OK) {
        dla_net_free(net);
        return st;
    }
    *out = net;
    return DLA_OK;
}

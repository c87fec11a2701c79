/*
 * datastore_file.c - MATLAB's fileDatastore with a ReadFcn: the files of
 * some locations found when it is made, each read by the user's function
 * when its observation is asked for.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/log.h"
#include "nn/data_util.h"
#include "nn/datastore.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_DEPTH 64

typedef struct file_ds {
    char **paths;
    int64_t count, cap;
    dla_file_read_fn fn;
    void *ctx;
} file_ds;

typedef struct scan {
    file_ds *f;
    const char *const *ext;
    const char *op;
} scan;

static dla_status push(scan *s, char *path)
{
    file_ds *f = s->f;
    if (f->count == f->cap) {
        int64_t cap = f->cap ? 2 * f->cap : 64;
        char **grown = dla__data_realloc(f->paths, (size_t)cap * sizeof *grown);
        if (!grown) {
            dla__data_free(path);
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", s->op);
        }
        f->paths = grown;
        f->cap = cap;
    }
    f->paths[f->count++] = path;
    return DLA_OK;
}

static int wanted(const scan *s, const char *name)
{
    if (!s->ext)
        return 1;
    size_t n = strlen(name);
    for (const char *const *e = s->ext; *e; e++) {
        size_t m = strlen(*e);
        if (m <= n && strcasecmp(name + n - m, *e) == 0)
            return 1;
    }
    return 0;
}

/* Adds the wanted files of the tree under dir. */
static dla_status walk(scan *s, const char *dir, int depth)
{
    if (depth > MAX_DEPTH)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: folder %s is more than %d folders deep (a link loop?)", s->op,
                              dir, MAX_DEPTH);
    DIR *d = opendir(dir);
    if (!d)
        return dla__data_fail(DLA_ERR_IO, "%s: cannot read folder %s: %s", s->op, dir,
                              strerror(errno));
    dla_status st = DLA_OK;
    struct dirent *e;
    while (st == DLA_OK && (errno = 0, e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue; /* ., .., and hidden files */
        char *path = dla__data_path_join(dir, e->d_name);
        struct stat sb, lb;
        if (!path) {
            st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", s->op);
        } else if (stat(path, &sb) != 0) {
            const int err = errno;
            /* A link to nothing (or a loop of links) whose name is not
             * wanted: left out, as other files of other names are (a stale
             * link beside the data failed the whole datastore). */
            if (wanted(s, e->d_name) || lstat(path, &lb) != 0 || !S_ISLNK(lb.st_mode))
                st = dla__data_fail(DLA_ERR_IO, "%s: cannot read %s: %s", s->op, path,
                                    strerror(err));
            else /* said, not silent: it may be a folder's link to a disk
                  * not mounted, whose files would vanish */
                dla__log(DLA_LOG_WARN, "%s: leaving out %s, a link to nothing (%s)", s->op, path,
                         strerror(err));
            dla__data_free(path);
        } else if (S_ISDIR(sb.st_mode)) {
            st = walk(s, path, depth + 1);
            dla__data_free(path);
        } else if (S_ISREG(sb.st_mode) && wanted(s, e->d_name)) {
            st = push(s, path);
        } else {
            dla__data_free(path);
        }
    }
    if (st == DLA_OK && errno)
        st = dla__data_fail(DLA_ERR_IO, "%s: cannot read folder %s: %s", s->op, dir,
                            strerror(errno));
    closedir(d);
    return st;
}

static dla_status add_location(scan *s, const char *loc, int i)
{
    struct stat sb;
    if (stat(loc, &sb) != 0)
        return dla__data_fail(DLA_ERR_IO, "%s: argument locations[%d]: cannot read %s: %s", s->op,
                              i, loc, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        size_t n = strlen(loc);
        char *p = dla__data_malloc(n + 1);
        if (!p)
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", s->op);
        memcpy(p, loc, n + 1);
        return push(s, p);
    }
    const int64_t before = s->f->count;
    dla_status st = walk(s, loc, 0);
    /* The folder's files in path order, the same on every machine. */
    if (st == DLA_OK && s->f->count - before > 1) /* (an empty list may have no array yet) */
        qsort(s->f->paths + before, (size_t)(s->f->count - before), sizeof *s->f->paths, dla__data_path_cmp);
    return st;
}

static void file_free(file_ds *f)
{
    for (int64_t i = 0; i < f->count; i++)
        dla__data_free(f->paths[i]);
    dla__data_free(f->paths);
    dla__data_free(f);
}

typedef struct read_arg {
    const file_ds *f;
    const char *path;
} read_arg;

static dla_status call_read(void *ctx, void *arg, int nout, dla_tensor **out)
{
    (void)ctx;
    const read_arg *r = arg;
    return r->f->fn(r->f->ctx, r->path, nout, out);
}

static dla_status file_read_at(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    const file_ds *f = ds->state;
    read_arg r = {f, f->paths[i]};
    char what[600];
    snprintf(what, sizeof what, "read_fn on \"%s\"", f->paths[i]);
    return dla__ds_call_user(call_read, NULL, &r, ds->nout, out, op, what);
}

static void file_destroy(dla_datastore *ds) { file_free(ds->state); }

const dla__ds_kind dla__ds_file_kind = {
    .name = "fileDatastore",
    .read_at = file_read_at,
    .destroy = file_destroy,
};

DLA_API dla_status dla_file_datastore(int nlocations, const char *const *locations,
                                      const char *const *extensions, int noutputs,
                                      dla_file_read_fn read_fn, void *ctx, dla_datastore **out)
{
    static const char op[] = "dla_file_datastore";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (nlocations < 1 || !locations)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument nlocations: %d; at least one location", op,
                              nlocations);
    for (int i = 0; i < nlocations; i++)
        if (!locations[i])
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument locations[%d] is NULL",
                                  op, i);
    if (noutputs < 1 || noutputs > DLA__DS_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument noutputs: %d; 1..%d", op,
                              noutputs, DLA__DS_MAX);
    if (!read_fn)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument read_fn is NULL", op);
    file_ds *f = dla__data_calloc(1, sizeof *f);
    if (!f)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    f->fn = read_fn;
    f->ctx = ctx;
    scan s = {f, extensions, op};
    dla_status st = DLA_OK;
    for (int i = 0; i < nlocations && st == DLA_OK; i++)
        st = add_location(&s, locations[i], i);
    if (st == DLA_OK && f->count == 0)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                            "%s: argument locations: no file%s found under %s%s", op,
                            extensions ? " with the extensions asked for" : "", locations[0],
                            nlocations > 1 ? " and the other locations" : "");
    if (st == DLA_OK && f->count > INT32_MAX)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %lld files; at most 2^31-1", op,
                            (long long)f->count);
    dla_datastore *ds = st == DLA_OK ? dla__ds_new(&dla__ds_file_kind, noutputs, f->count, f, op)
                                     : NULL;
    if (!ds) {
        file_free(f);
        return dla_last_status();
    }
    *out = ds;
    return DLA_OK;
}

const char *dla__ds_file_path(const dla_datastore *ds, int64_t i)
{
    if (ds->kind == &dla__ds_subset_kind) {
        if (i < 0 || i >= ds->count)
            return NULL;
        const int64_t *idx;
        ds = dla__ds_subset_parent(ds, &idx);
        i = idx[i];
    }
    if (ds->kind != &dla__ds_file_kind || i < 0 || i >= ds->count)
        return NULL;
    return ((const file_ds *)ds->state)->paths[i];
}

DLA_API const char *dla_file_datastore_path(const dla_datastore *ds, int64_t i)
{
    return ds && dla__ds_live(ds, "dla_file_datastore_path", "ds") ? dla__ds_file_path(ds, i)
                                                                   : NULL;
}

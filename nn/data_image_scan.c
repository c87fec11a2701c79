/*
 * data_image_scan.c - the files of an image datastore: a folder tree walked
 * once, its PNG and JPEG files sorted by path, their labels from the
 * folders that hold them, and the checks that keep a label from being
 * silently wrong (an empty folder, a class folder without images, an image
 * in the top folder itself).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "core/log.h"
#include "nn/data_image.h"
#include "nn/data_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_DEPTH 64

typedef struct scan {
    char **paths;
    int64_t n, cap;
    const char *op;
} scan;

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") ||
                   !strcasecmp(dot, ".jpeg"));
}

static dla_status push(scan *s, char *path)
{
    if (s->n == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 256;
        char **p = dla__data_realloc(s->paths, sizeof *p * (size_t)cap);
        if (!p) {
            dla__data_free(path);
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld file names", s->op,
                                  (long long)cap);
        }
        s->paths = p;
        s->cap = cap;
    }
    s->paths[s->n++] = path;
    return DLA_OK;
}

/* Adds the images under dir (depth 0: the top folder). */
static dla_status walk(scan *s, const char *dir, int depth, int recurse)
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
    int64_t images = 0, subfolders = 0;
    struct dirent *e;
    while (st == DLA_OK && (errno = 0, e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue; /* ., .., and hidden files (.DS_Store, editors' swap files) */
        char *path = dla__data_path_join(dir, e->d_name);
        if (!path) {
            st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", s->op);
            break;
        }
        struct stat sb, lb;
        if (stat(path, &sb) != 0) {
            const int err = errno;
            /* A link to nothing (or a loop of links) not named as an image:
             * nothing the datastore would read, left out as other files
             * are. A stale link beside the images (a README moved away)
             * failed the whole datastore. */
            if (is_image_name(e->d_name) || lstat(path, &lb) != 0 || !S_ISLNK(lb.st_mode))
                st = dla__data_fail(DLA_ERR_IO, "%s: cannot read %s: %s", s->op, path,
                                    strerror(err));
            else /* Said, not silent: it may be a class folder's link to a
                  * disk not mounted, whose class would vanish and renumber
                  * the classes after it. */
                dla__log(DLA_LOG_WARN, "%s: leaving out %s, a link to nothing (%s)", s->op, path,
                         strerror(err));
            dla__data_free(path);
        } else if (S_ISDIR(sb.st_mode)) {
            subfolders++;
            if (recurse)
                st = walk(s, path, depth + 1, 1);
            dla__data_free(path);
        } else if (S_ISREG(sb.st_mode) && is_image_name(e->d_name)) {
            images++;
            st = push(s, path);
        } else {
            dla__data_free(path);
        }
    }
    if (st == DLA_OK && errno)
        st = dla__data_fail(DLA_ERR_IO, "%s: cannot read folder %s: %s", s->op, dir,
                            strerror(errno));
    closedir(d);
    /* A folder with neither images nor folders is a class with no files
     * (or a copy that went wrong): it would vanish from the class list
     * without a word. The top folder is checked by the caller. */
    if (st == DLA_OK && depth > 0 && !images && !subfolders)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                            "%s: folder %s holds no PNG or JPEG file (a class with no files?)",
                            s->op, dir);
    return st;
}

/* The name of the folder holding path (the text between the last two
 * slashes), copied. */
static char *parent_name(const char *path)
{
    const char *end = strrchr(path, '/');
    const char *start = end;
    while (start > path && start[-1] != '/')
        start--;
    size_t n = (size_t)(end - start);
    char *p = dla__data_malloc(n + 1);
    if (p) {
        memcpy(p, start, n);
        p[n] = '\0';
    }
    return p;
}

/* The real name of the folder holding path when its name as written says
 * nothing ("." or "..", or "" for "/"): the top folder given so, whose
 * files (top_folder_only) would be labelled "." or "..". The last part
 * of its resolved path, copied; NULL with the error set. */
static char *real_parent_name(const char *path, const char *op)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash > path ? (size_t)(slash - path) : 1; /* "//x.png": "/" */
    char *dir = dla__data_malloc(n + 1);
    if (!dir) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        return NULL;
    }
    memcpy(dir, path, n);
    dir[n] = '\0';
    char *real = realpath(dir, NULL); /* libc's malloc: freed with free */
    if (!real) {
        dla__data_fail(DLA_ERR_IO, "%s: cannot resolve folder %s for its name: %s", op, dir,
                       strerror(errno));
        dla__data_free(dir);
        return NULL;
    }
    dla__data_free(dir);
    const char *last = strrchr(real, '/');
    last = last && last[1] ? last + 1 : real; /* "/" names itself */
    char *name = dla__data_malloc(strlen(last) + 1);
    if (name)
        strcpy(name, last);
    else
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    free(real); /* realpath made it: libc's */
    return name;
}

void dla__imds_catalog_release(dla__imds_catalog *c)
{
    if (!c || __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (int64_t i = 0; i < c->nfiles; i++)
        dla__data_free(c->paths[i]);
    for (int k = 0; k < c->nclasses; k++)
        dla__data_free(c->classes[k]);
    dla__data_free(c->paths);
    dla__data_free(c->classes);
    dla__data_free(c->labels);
    dla__data_free(c->skipped);
    dla__data_free(c);
}

/* Labels: each file's folder name, numbered in the sorted list of names. */
static dla_status label_files(dla__imds_catalog *c, const char *op)
{
    char **names = dla__data_calloc((size_t)c->nfiles, sizeof *names);
    c->labels = dla__data_malloc(sizeof *c->labels * (size_t)c->nfiles);
    c->classes = dla__data_calloc((size_t)c->nfiles, sizeof *c->classes);
    dla_status st = names && c->labels && c->classes
                        ? DLA_OK
                        : dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    /* Only the top folder can be named "." or ".." (the walk skips such
     * entries), so its real name is looked up once. */
    char *top_real = NULL;
    for (int64_t i = 0; i < c->nfiles && st == DLA_OK; i++) {
        if (!(names[i] = parent_name(c->paths[i]))) {
            st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        } else if (!strcmp(names[i], ".") || !strcmp(names[i], "..") || !names[i][0]) {
            if (!top_real && !(top_real = real_parent_name(c->paths[i], op))) {
                st = dla_last_status();
            } else {
                char *copy = dla__data_malloc(strlen(top_real) + 1);
                dla__data_free(names[i]);
                names[i] = copy;
                if (copy)
                    strcpy(copy, top_real);
                else
                    st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
            }
        }
    }
    dla__data_free(top_real);
    if (st == DLA_OK) {
        char **sorted = dla__data_malloc(sizeof *sorted * (size_t)c->nfiles);
        if (!sorted) {
            st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        } else {
            memcpy(sorted, names, sizeof *sorted * (size_t)c->nfiles);
            qsort(sorted, (size_t)c->nfiles, sizeof *sorted, dla__data_path_cmp);
            for (int64_t i = 0; i < c->nfiles; i++)
                if (!c->nclasses || strcmp(sorted[i], c->classes[c->nclasses - 1]))
                    c->classes[c->nclasses++] = sorted[i];
            dla__data_free(sorted);
            for (int64_t i = 0; i < c->nfiles; i++) {
                char **hit = bsearch(&names[i], c->classes, (size_t)c->nclasses,
                                     sizeof *c->classes, dla__data_path_cmp);
                c->labels[i] = (int32_t)(hit - c->classes);
            }
            /* The class list now owns the names it points at. */
            for (int k = 0; k < c->nclasses; k++) {
                char *own = dla__data_malloc(strlen(c->classes[k]) + 1);
                if (!own) {
                    st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
                    c->nclasses = k;
                    break;
                }
                strcpy(own, c->classes[k]);
                c->classes[k] = own;
            }
        }
    }
    if (names)
        for (int64_t i = 0; i < c->nfiles; i++)
            dla__data_free(names[i]);
    dla__data_free(names);
    return st;
}

dla_status dla__imds_scan(const char *folder, int recurse, int labels, dla__imds_catalog **out,
                          const char *op)
{
    *out = NULL;
    /* Without its trailing slashes, so that parent folders compare. */
    size_t len = strlen(folder);
    while (len > 1 && folder[len - 1] == '/')
        len--;
    char *top = dla__data_malloc(len + 1);
    if (!top)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    memcpy(top, folder, len);
    top[len] = '\0';
    scan s = {.op = op};
    dla_status st = walk(&s, top, 0, recurse);
    if (st == DLA_OK && s.n == 0)
        st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                            "%s: folder %s holds no PNG or JPEG file (.png, .jpg, .jpeg)%s", op,
                            top, recurse ? " in it or its subfolders" : "");
    if (st == DLA_OK)
        qsort(s.paths, (size_t)s.n, sizeof *s.paths, dla__data_path_cmp);
    /* An image right in the top folder would take the top folder's name as
     * its label, beside the class folders: refused (MATLAB labels it so). */
    for (int64_t i = 0; st == DLA_OK && labels && recurse && i < s.n; i++) {
        const char *slash = strrchr(s.paths[i], '/');
        if ((size_t)(slash - s.paths[i]) == len)
            st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                "%s: file %s lies in the top folder, not in a class folder, so it "
                                "has no label from a folder name (move it into its class's "
                                "folder, or use label_source \"none\")",
                                op, s.paths[i]);
    }
    dla__data_free(top);
    dla__imds_catalog *c = NULL;
    if (st == DLA_OK && !(c = dla__data_calloc(1, sizeof *c)))
        st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    if (st != DLA_OK) {
        for (int64_t i = 0; i < s.n; i++)
            dla__data_free(s.paths[i]);
        dla__data_free(s.paths);
        return st;
    }
    c->refs = 1;
    c->paths = s.paths;
    c->nfiles = s.n;
    c->skipped = dla__data_calloc((size_t)s.n, 1);
    st = c->skipped ? DLA_OK : dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    if (st == DLA_OK && labels)
        st = label_files(c, op);
    if (st != DLA_OK) {
        dla__imds_catalog_release(c);
        return st;
    }
    *out = c;
    return DLA_OK;
}

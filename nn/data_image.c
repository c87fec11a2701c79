/*
 * data_image.c - the image datastore (MATLAB's imageDatastore) and its
 * augmented form (augmentedImageDatastore): a shared catalog of files and
 * labels (data_image_scan.c), and per datastore an order of catalog
 * numbers, a read position and the options. Subsets, partitions and
 * splits are new orders over the same catalog. Reading is
 * data_image_read.c's.
 */
#include "core/handle.h" /* DLA__HANDLE_DEAD and the quarantine (docs/checks.md) */
#include "nn/data_image.h"
#include "nn/data_util.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Nonzero when ds is a live datastore; else logs why for op. */
static int live(const dla_imds *ds, const char *op)
{
    if (ds && ds->magic == DLA__IMDS_MAGIC)
        return 1;
    if (!ds)
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument ds is NULL", op);
    else
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)ds,
                    ds->magic == DLA__HANDLE_DEAD ? "an image datastore freed already"
                                                  : "not an image datastore handle");
    return 0;
}

static void augment_release(dla__imds_augment *a)
{
    if (!a || __atomic_sub_fetch(&a->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    pthread_mutex_destroy(a->lock);
    dla__data_free(a->lock);
    dla__data_free(a);
}

void dla__imds_release(dla_imds *ds)
{
    if (!ds || __atomic_sub_fetch(&ds->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    dla__imds_catalog_release(ds->cat);
    augment_release(ds->augment);
    dla__data_free(ds->idx);
    ds->magic = DLA__HANDLE_DEAD; /* parked: a stale pointer reads "dead" */
    dla__quarantine(DLA__RING_OBJECTS, ds);
}

dla_imds *dla__imds_retain(dla_imds *ds)
{
    __atomic_add_fetch(&ds->refs, 1, __ATOMIC_ACQ_REL);
    return ds;
}

DLA_API void dla_imds_free(dla_imds *ds)
{
    if (ds && live(ds, "dla_imds_free"))
        dla__imds_release(ds);
}

/* A datastore over n catalog numbers idx (copied) with src's options. */
static dla_imds *derive(const dla_imds *src, int64_t n, const int64_t *idx, const char *op)
{
    dla_imds *ds = dla__data_calloc(1, sizeof *ds);
    int64_t *copy = dla__data_malloc(sizeof *copy * (size_t)(n ? n : 1));
    if (!ds || !copy) {
        dla__data_free(ds);
        dla__data_free(copy);
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        return NULL;
    }
    if (n)
        memcpy(copy, idx, sizeof *copy * (size_t)n);
    *ds = *src;
    ds->magic = DLA__IMDS_MAGIC;
    ds->refs = 1;
    ds->idx = copy;
    ds->n = n;
    ds->pos = 0;
    __atomic_add_fetch(&ds->cat->refs, 1, __ATOMIC_ACQ_REL);
    if (ds->augment)
        __atomic_add_fetch(&ds->augment->refs, 1, __ATOMIC_ACQ_REL);
    dla__data_rng_seed(&ds->rng, ds->seed);
    return ds;
}

dla_imds *dla__imds_snapshot(dla_imds *ds, const char *op)
{
    return live(ds, op) ? derive(ds, ds->n, ds->idx, op) : NULL;
}

int64_t dla__imds_count(const dla_imds *ds) { return ds->n; }

const char *dla__imds_first_skipped(const dla_imds *ds, int64_t from, int64_t count)
{
    for (int64_t i = from < 0 ? 0 : from; i < from + count && i < ds->n; i++)
        if (__atomic_load_n(&ds->cat->skipped[ds->idx[i]], __ATOMIC_RELAXED))
            return ds->cat->paths[ds->idx[i]];
    return NULL;
}

DLA_API dla_status dla_imds_create(const char *folder, const dla_imds_options *opts, dla_imds **out)
{
    static const char op[] = "dla_imds_create";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!folder || !*folder)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument folder is %s", op,
                              folder ? "empty" : "NULL");
    dla_imds_options o = opts ? *opts : (dla_imds_options){0};
    int labels;
    if (!o.label_source || !strcmp(o.label_source, "foldernames"))
        labels = 1;
    else if (!strcmp(o.label_source, "none"))
        labels = 0;
    else
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: option label_source \"%s\"; \"foldernames\" or \"none\"", op,
                              o.label_source);
    if (o.dtype != DLA_F32 && o.dtype != DLA_F64 && o.dtype != DLA_U8)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: option dtype %s; single, double or uint8", op,
                              dla_dtype_name(o.dtype));
    if (o.read_size < 0 || o.read_threads < 0 || o.read_threads > 64)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: option %s out of range", op,
                              o.read_size < 0 ? "read_size < 0" : "read_threads (0..64)");
    dla__imds_catalog *cat;
    dla_status st = dla__imds_scan(folder, !o.top_folder_only, labels, &cat, op);
    if (st != DLA_OK)
        return st;
    /* The size of the datastore's images: the first file that decodes
     * (with skip_corrupt, corrupt ones before it are warned about later,
     * when read). */
    char err[1024] = "";
    dla__image im = {0};
    st = DLA_ERR_FORMAT;
    for (int64_t i = 0; i < cat->nfiles && st != DLA_OK; i++) {
        st = dla__image_decode(cat->paths[i], &im, err, sizeof err);
        if (st == DLA_OK) {
            cat->h = im.h;
            cat->w = im.w;
            cat->c = im.c;
            cat->size_from = i;
        }
        dla__image_free(&im);
        if (st != DLA_OK && !(st == DLA_ERR_FORMAT && o.skip_corrupt))
            break;
    }
    if (st != DLA_OK) {
        /* With skip_corrupt every file was tried: the last one's words
         * alone read as if that one file were the trouble. */
        const int all = o.skip_corrupt && st == DLA_ERR_FORMAT;
        const int64_t nfiles = cat->nfiles;
        dla__imds_catalog_release(cat);
        if (all)
            return dla__data_fail(st, "%s: none of the %lld files decodes (skip_corrupt would "
                                  "skip them all), so the datastore has no image size; the "
                                  "last: %s", op, (long long)nfiles, err);
        return dla__data_fail(st, "%s: %s", op, err);
    }
    dla_imds proto = {.cat = cat, .read_size = o.read_size ? o.read_size : 1,
                      .dtype = o.dtype, .skip_corrupt = o.skip_corrupt != 0,
                      .threads = o.read_threads ? o.read_threads : 1,
                      .top_only = o.top_folder_only != 0, .seed = o.seed};
    int64_t *all = dla__data_malloc(sizeof *all * (size_t)cat->nfiles);
    dla_imds *ds = NULL;
    if (all) {
        for (int64_t i = 0; i < cat->nfiles; i++)
            all[i] = i;
        ds = derive(&proto, cat->nfiles, all, op);
        dla__data_free(all);
    } else {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    dla__imds_catalog_release(cat); /* derive took a reference */
    if (!ds)
        return dla_last_status();
    *out = ds;
    return DLA_OK;
}

/* ---------------------------------------------------------------- queries */

DLA_API int64_t dla_imds_num_files(const dla_imds *ds)
{
    return live(ds, "dla_imds_num_files") ? ds->n : 0;
}

DLA_API const char *dla_imds_file(const dla_imds *ds, int64_t i)
{
    return live(ds, "dla_imds_file") && i >= 0 && i < ds->n ? ds->cat->paths[ds->idx[i]] : NULL;
}

DLA_API int dla_imds_label(const dla_imds *ds, int64_t i)
{
    return live(ds, "dla_imds_label") && i >= 0 && i < ds->n && ds->cat->labels
               ? ds->cat->labels[ds->idx[i]]
               : -1;
}

DLA_API int dla_imds_num_categories(const dla_imds *ds)
{
    return live(ds, "dla_imds_num_categories") ? ds->cat->nclasses : 0;
}

DLA_API const char *dla_imds_category(const dla_imds *ds, int k)
{
    return live(ds, "dla_imds_category") && k >= 0 && k < ds->cat->nclasses ? ds->cat->classes[k]
                                                                            : NULL;
}

DLA_API dla_status dla_imds_count_each_label(const dla_imds *ds, int64_t *counts)
{
    if (!live(ds, "dla_imds_count_each_label"))
        return dla_last_status();
    if (!counts)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "dla_imds_count_each_label: argument counts is NULL");
    memset(counts, 0, sizeof *counts * (size_t)ds->cat->nclasses);
    if (ds->cat->labels)
        for (int64_t i = 0; i < ds->n; i++)
            counts[ds->cat->labels[ds->idx[i]]]++;
    return DLA_OK;
}

DLA_API dla_tensor *dla_imds_labels(const dla_imds *ds)
{
    static const char op[] = "dla_imds_labels";
    if (!live(ds, op))
        return NULL;
    if (!ds->cat->labels) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the datastore has no labels (label_source "
                       "\"none\")", op);
        return NULL;
    }
    int32_t *v = dla__data_malloc(sizeof *v * (size_t)(ds->n ? ds->n : 1));
    if (!v) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        return NULL;
    }
    for (int64_t i = 0; i < ds->n; i++)
        v[i] = ds->cat->labels[ds->idx[i]];
    dla_tensor *t = dla__data_from_host(NULL, v, DLA_I32, "CB", DLA_DIMS(1, ds->n));
    dla__data_free(v);
    return dla__data_deliver(t);
}

DLA_API void dla_imds_image_size(const dla_imds *ds, int64_t size[3])
{
    int h = 0, w = 0, c = 0;
    if (size && live(ds, "dla_imds_image_size"))
        dla__imds_out_size(ds, &h, &w, &c);
    if (size) {
        size[0] = h;
        size[1] = w;
        size[2] = c;
    }
}

DLA_API int64_t dla_imds_num_skipped(const dla_imds *ds)
{
    if (!live(ds, "dla_imds_num_skipped"))
        return 0;
    int64_t n = 0;
    for (int64_t i = 0; i < ds->n; i++)
        n += __atomic_load_n(&ds->cat->skipped[ds->idx[i]], __ATOMIC_RELAXED);
    return n;
}

/* ---------------------------------------------------------------- passes */

DLA_API int dla_imds_hasdata(const dla_imds *ds)
{
    return live(ds, "dla_imds_hasdata") && ds->pos < ds->n;
}

DLA_API void dla_imds_reset(dla_imds *ds)
{
    if (live(ds, "dla_imds_reset"))
        ds->pos = 0;
}

DLA_API void dla_imds_shuffle(dla_imds *ds)
{
    if (!live(ds, "dla_imds_shuffle"))
        return;
    dla__data_rng_shuffle(&ds->rng, ds->n, ds->idx);
    ds->pos = 0;
}

DLA_API dla_status dla_imds_set_read_size(dla_imds *ds, int64_t read_size)
{
    if (!live(ds, "dla_imds_set_read_size"))
        return dla_last_status();
    if (read_size < 1)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "dla_imds_set_read_size: argument read_size %lld < 1",
                              (long long)read_size);
    ds->read_size = read_size;
    return DLA_OK;
}

/* ---------------------------------------------------------------- reads */

/* Reads positions obs[0..count-1] into held tensors on dev (NULL: the
 * current device). */
static dla_status read_obs(dla_imds *ds, const int64_t *obs, int64_t count,
                           dla__data_rng *aug_rng, dla_device *dev, dla_tensor **images, dla_tensor **labels, int64_t *kept,
                           int64_t *nkept, const char *op)
{
    *images = NULL;
    if (labels)
        *labels = NULL;
    int32_t *lab = dla__data_malloc(sizeof *lab * (size_t)(count ? count : 1));
    if (!lab)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    void *buf;
    int64_t n;
    dla_status st = dla__imds_read_host(ds, obs, count, aug_rng, &buf, lab, kept, &n, op);
    if (st == DLA_OK) {
        int h, w, c;
        dla__imds_out_size(ds, &h, &w, &c);
        *images = dla__data_from_host(dev, buf, ds->dtype, "SSCB", DLA_DIMS(h, w, c, n));
        st = dla_tensor_status(*images);
        if (st == DLA_OK && labels && ds->cat->labels) {
            *labels = dla__data_from_host(dev, lab, DLA_I32, "CB", DLA_DIMS(1, n));
            st = dla_tensor_status(*labels);
        }
        if (nkept)
            *nkept = n;
        dla__data_free(buf);
    }
    dla__data_free(lab);
    if (st != DLA_OK) {
        dla_tensor_release(*images);
        *images = NULL;
        if (labels) {
            dla_tensor_release(*labels);
            *labels = NULL;
        }
    }
    return st;
}

dla_tensor *dla__imds_batch(dla_imds *ds, const int64_t *obs, int64_t count,
                            dla__data_rng *aug_rng, dla_device *dev, int64_t *kept,
                            int64_t *nkept, const char *op)
{
    dla_tensor *x;
    return read_obs(ds, obs, count, aug_rng, dev, &x, NULL, kept, nkept, op) == DLA_OK ? x : NULL;
}

/* Reads and delivers positions obs by dlaccel.h's rules. */
static dla_status read_deliver(dla_imds *ds, const int64_t *obs, int64_t count,
                               dla_tensor **images, dla_tensor **labels, const char *op)
{
    dla_tensor *t[2] = {NULL, NULL};
    dla_status st =
        read_obs(ds, obs, count, NULL, NULL, &t[0], labels ? &t[1] : NULL, NULL, NULL, op);
    if (st == DLA_OK)
        st = dla__data_deliver_all(2, t, op);
    *images = t[0];
    if (labels)
        *labels = t[1];
    return st;
}

static dla_status read_range(dla_imds *ds, int64_t start, int64_t count, dla_tensor **images,
                             dla_tensor **labels, const char *op)
{
    int64_t *obs = dla__data_malloc(sizeof *obs * (size_t)(count ? count : 1));
    if (!obs)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int64_t i = 0; i < count; i++)
        obs[i] = start + i;
    dla_status st = read_deliver(ds, obs, count, images, labels, op);
    dla__data_free(obs);
    return st;
}

DLA_API dla_status dla_imds_read(dla_imds *ds, dla_tensor **images, dla_tensor **labels)
{
    static const char op[] = "dla_imds_read";
    if (labels)
        *labels = NULL;
    if (!images)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument images is NULL", op);
    *images = NULL;
    if (!live(ds, op))
        return dla_last_status();
    if (ds->pos >= ds->n)
        return dla__data_fail(DLA_ERR_STATE,
                              "%s: no data left in the datastore's %lld files; call "
                              "dla_imds_reset",
                              op, (long long)ds->n);
    int64_t count = ds->n - ds->pos < ds->read_size ? ds->n - ds->pos : ds->read_size;
    dla_status st = read_range(ds, ds->pos, count, images, labels, op);
    /* A failed read moves on too, as MATLAB's: the next read is the next
     * files, not the bad one again. */
    ds->pos += count;
    return st;
}

DLA_API dla_status dla_imds_readall(dla_imds *ds, dla_tensor **images, dla_tensor **labels)
{
    static const char op[] = "dla_imds_readall";
    if (labels)
        *labels = NULL;
    if (!images)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument images is NULL", op);
    *images = NULL;
    if (!live(ds, op))
        return dla_last_status();
    return read_range(ds, 0, ds->n, images, labels, op);
}

DLA_API dla_status dla_imds_read_files(dla_imds *ds, int64_t n, const int64_t *idx,
                                       dla_tensor **images, dla_tensor **labels)
{
    static const char op[] = "dla_imds_read_files";
    if (labels)
        *labels = NULL;
    if (!images || (n > 0 && !idx) || n < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s", op,
                              !images ? "images is NULL" : n < 0 ? "n < 0" : "idx is NULL");
    *images = NULL;
    if (!live(ds, op))
        return dla_last_status();
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= ds->n)
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument idx[%lld] = %lld; the datastore has files "
                                  "0..%lld",
                                  op, (long long)i, (long long)idx[i], (long long)ds->n - 1);
    return read_deliver(ds, idx, n, images, labels, op);
}

/* ---------------------------------------------------------------- subsets */

DLA_API dla_status dla_imds_subset(dla_imds *ds, int64_t n, const int64_t *idx, dla_imds **out)
{
    static const char op[] = "dla_imds_subset";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!live(ds, op))
        return dla_last_status();
    if (n < 0 || (n > 0 && !idx))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s", op,
                              n < 0 ? "n < 0" : "idx is NULL");
    int64_t *cat = dla__data_malloc(sizeof *cat * (size_t)(n ? n : 1));
    if (!cat)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    dla_status st = DLA_OK;
    for (int64_t i = 0; i < n && st == DLA_OK; i++) {
        if (idx[i] < 0 || idx[i] >= ds->n)
            st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                "%s: argument idx[%lld] = %lld; the datastore has files 0..%lld",
                                op, (long long)i, (long long)idx[i], (long long)ds->n - 1);
        else
            cat[i] = ds->idx[idx[i]];
    }
    if (st == DLA_OK && !(*out = derive(ds, n, cat, op)))
        st = dla_last_status();
    dla__data_free(cat);
    return st;
}

DLA_API dla_status dla_imds_partition(dla_imds *ds, int n, int index, dla_imds **out)
{
    static const char op[] = "dla_imds_partition";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!live(ds, op))
        return dla_last_status();
    if (n < 1 || index < 0 || index >= n)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument %s: %d; parts n >= 1, index in 0..n-1", op,
                              n < 1 ? "n" : "index", n < 1 ? n : index);
    int64_t base = ds->n / n, extra = ds->n % n;
    int64_t start = index * base + (index < extra ? index : extra);
    *out = derive(ds, base + (index < extra), ds->idx + start, op);
    return *out ? DLA_OK : dla_last_status();
}

/* How many of a class of m files p takes alone (a fraction's share
 * rounded down; the split sums fractions before rounding), or -1 when p is
 * neither a fraction in (0, 1) nor a whole count >= 1. */
static int64_t take_of(double p, int64_t m)
{
    if (p > 0 && p < 1)
        return (int64_t)(p * (double)m + 1e-9);
    if (p >= 1 && p == (double)(int64_t)p)
        return (int64_t)p;
    return -1;
}

DLA_API dla_status dla_imds_split_each_label(dla_imds *ds, int n, const double *p,
                                             const char *mode, uint64_t seed, dla_imds **out)
{
    static const char op[] = "dla_imds_split_each_label";
    if (!out || !p)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op,
                              !out ? "out" : "p");
    if (n < 1 || n > 64)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument n: %d; 1..64 splits", op, n);
    for (int s = 0; s <= n; s++)
        out[s] = NULL;
    if (!live(ds, op))
        return dla_last_status();
    int randomized = 0;
    if (mode && *mode) {
        if (strcmp(mode, "randomized"))
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument mode \"%s\"; \"randomized\" or NULL", op, mode);
        randomized = 1;
    }
    if (!ds->cat->labels)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: the datastore has no labels (label_source \"none\")", op);
    double fsum = 0;
    for (int s = 0; s < n; s++) {
        if (take_of(p[s], 1) < 0)
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument p[%d] = %g; a fraction in (0, 1) or a whole "
                                  "count >= 1",
                                  op, s, p[s]);
        if (p[s] < 1)
            fsum += p[s];
    }
    if (fsum > 1 + 1e-12)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: the fractions add up to %g > 1", op,
                              fsum);
    int k = ds->cat->nclasses;
    /* Per class: its positions in ds's order, then which split each takes. */
    int64_t *count = dla__data_calloc((size_t)k, sizeof *count);
    int64_t *start = dla__data_calloc((size_t)k + 1, sizeof *start);
    int64_t *members = dla__data_malloc(sizeof *members * (size_t)(ds->n ? ds->n : 1));
    int *which = dla__data_malloc(sizeof *which * (size_t)(ds->n ? ds->n : 1));
    int64_t *pick = dla__data_malloc(sizeof *pick * (size_t)(ds->n ? ds->n : 1));
    dla_status st = count && start && members && which && pick
                        ? DLA_OK
                        : dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    if (st == DLA_OK) {
        for (int64_t i = 0; i < ds->n; i++)
            count[ds->cat->labels[ds->idx[i]]]++;
        for (int c = 0; c < k; c++)
            start[c + 1] = start[c] + count[c];
        memset(count, 0, sizeof *count * (size_t)k);
        for (int64_t i = 0; i < ds->n; i++) {
            int c = ds->cat->labels[ds->idx[i]];
            members[start[c] + count[c]++] = i;
        }
        dla__data_rng rng;
        dla__data_rng_seed(&rng, seed);
        for (int c = 0; c < k && st == DLA_OK; c++) {
            int64_t m = count[c], *mem = members + start[c];
            if (randomized) /* which of the class's files, drawn; each split keeps ds's order */
                dla__data_rng_shuffle(&rng, m, mem);
            /* Where each split ends, as MATLAB's round(cumsum(count * p)):
             * the fractions' shares summed, then rounded (half away from
             * zero), so that 0.7 of 5 files is 4, not 3, and 0.3, 0.3 of
             * 5 end at 2 and 3. Flooring each share apart gave every split
             * of fractions fewer files than MATLAB's (3 and 1 here). */
            int64_t at = 0, counts = 0;
            double shares = 0;
            for (int s = 0; s < n && st == DLA_OK; s++) {
                if (p[s] < 1)
                    shares += (double)m * p[s];
                else
                    counts += take_of(p[s], m);
                int64_t end = (int64_t)round(shares) + counts;
                if (end > m)
                    st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                        "%s: class \"%s\" has %lld files, fewer than the %lld the "
                                        "splits up to p[%d] take",
                                        op, ds->cat->classes[c], (long long)m, (long long)end, s);
                for (int64_t j = at; j < end && st == DLA_OK; j++)
                    which[mem[j]] = s;
                at = end; /* never less: the shares and counts only grow */
            }
            for (int64_t j = at; j < m; j++)
                which[mem[j]] = n;
        }
    }
    for (int s = 0; s <= n && st == DLA_OK; s++) {
        int64_t np = 0;
        for (int64_t i = 0; i < ds->n; i++)
            if (which[i] == s)
                pick[np++] = ds->idx[i];
        if (!(out[s] = derive(ds, np, pick, op)))
            st = dla_last_status();
    }
    if (st != DLA_OK)
        for (int s = 0; s <= n; s++) {
            dla__imds_release(out[s]);
            out[s] = NULL;
        }
    dla__data_free(count);
    dla__data_free(start);
    dla__data_free(members);
    dla__data_free(which);
    dla__data_free(pick);
    return st;
}

/* ---------------------------------------------------------------- augmented */

/* A range [lo, hi] the draws can use: lo <= hi, both finite and so is hi -
 * lo (the draw is lo + (hi - lo) u). An infinite or NaN bound gave NaN
 * angles (images of NaN) or an infinite scale (images of one gray). */
static int bad_range(const double r[2])
{
    return !(r[0] <= r[1]) || !isfinite(r[0]) || !isfinite(r[1]) || !isfinite(r[1] - r[0]);
}

/* Which of names[0..n-1] str is (NULL: the first); -1 if none. */
static int choice(const char *str, const char *const *names, int n)
{
    if (!str)
        return 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(str, names[i]))
            return i;
    return -1;
}

/* A range that is set (not {0, 0}) whose lower bound is not above 0: a
 * scale that would mirror or flatten the image. */
static int bad_factor(const double r[2])
{
    return (r[0] != 0 || r[1] != 0) && !(r[0] > 0);
}

/* A shear range reaching -90 or 90 degrees, where the tangent is
 * infinite (MATLAB's range is (-90, 90)). */
static int bad_shear(const double r[2])
{
    return !(r[0] > -90 && r[1] < 90);
}

/* dla_augimds_create and _opts, their errors naming op. */
static dla_status augimds_create(const int64_t output_size[2], dla_imds *ds,
                                 const dla_image_augmenter *aug, uint64_t seed,
                                 const dla_augimds_options *opts, dla_imds **out, const char *op)
{
    static const char *const modes[] = {"resize", "centercrop", "randcrop"};
    static const char *const colors[] = {"none", "gray2rgb", "rgb2gray"};
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!live(ds, op))
        return dla_last_status();
    /* One augmentation per datastore: a second replaced the first (its
     * output size and transforms) without a word. MATLAB's
     * augmentedImageDatastore takes an image datastore too. */
    if (ds->augment)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument ds is an augmented datastore already (or a subset, "
                              "partition or split of one): a second augmentation would replace "
                              "its output size and transforms, not add to them; make one "
                              "augmented datastore from the image datastore, with all of them",
                              op);
    if (!output_size || output_size[0] < 1 || output_size[1] < 1 || output_size[0] > 65535 ||
        output_size[1] > 65535)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument output_size: 1..65535 rows and columns", op);
    dla_augimds_options o = opts ? *opts : (dla_augimds_options){0};
    const int mode = choice(o.output_size_mode, modes, 3);
    const int color = choice(o.color_preprocessing, colors, 3);
    if (mode < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: option output_size_mode \"%s\"; \"resize\", \"centercrop\" "
                              "or \"randcrop\"", op, o.output_size_mode);
    if (color < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: option color_preprocessing \"%s\"; \"none\", \"gray2rgb\" "
                              "or \"rgb2gray\"", op, o.color_preprocessing);
    dla_image_augmenter g = aug ? *aug : (dla_image_augmenter){0};
    const char *bad = bad_range(g.rand_rotation)        ? "rand_rotation"
                      : bad_range(g.rand_scale)         ? "rand_scale"
                      : bad_range(g.rand_x_translation) ? "rand_x_translation"
                      : bad_range(g.rand_y_translation) ? "rand_y_translation"
                      : bad_range(g.rand_x_scale)       ? "rand_x_scale"
                      : bad_range(g.rand_y_scale)       ? "rand_y_scale"
                      : bad_range(g.rand_x_shear)       ? "rand_x_shear"
                      : bad_range(g.rand_y_shear)       ? "rand_y_shear"
                                                        : NULL;
    if (bad)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument aug: %s is not a range [lo, hi] of finite values with lo "
                              "<= hi (and a finite hi - lo)", op, bad);
    const struct {
        const char *name;
        const double *r;
        int (*bad)(const double r[2]);
        const char *why;
    } rule[] = {
        {"rand_scale", g.rand_scale, bad_factor, "scale factors must be > 0"},
        {"rand_x_scale", g.rand_x_scale, bad_factor, "scale factors must be > 0"},
        {"rand_y_scale", g.rand_y_scale, bad_factor, "scale factors must be > 0"},
        {"rand_x_shear", g.rand_x_shear, bad_shear, "shear angles are degrees in (-90, 90)"},
        {"rand_y_shear", g.rand_y_shear, bad_shear, "shear angles are degrees in (-90, 90)"},
    };
    for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++)
        if (rule[i].bad(rule[i].r))
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument aug: %s [%g, %g]: %s",
                                  op, rule[i].name, rule[i].r[0], rule[i].r[1], rule[i].why);
    /* {r, g, b} without fill_per_channel would fill every channel with r
     * without a word. */
    if (!g.fill_per_channel && (g.fill_value[1] != 0 || g.fill_value[2] != 0))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument aug: fill_value {%g, %g, %g} without fill_per_channel: "
                              "fill_value[0] alone fills every channel; set fill_per_channel for "
                              "one per channel", op, g.fill_value[0], g.fill_value[1],
                              g.fill_value[2]);
    const int nfill = g.fill_per_channel ? 3 : 1;
    for (int k = 0; k < nfill; k++)
        if (!isfinite(g.fill_value[k]))
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument aug: fill_value[%d] = %g is not finite", op, k,
                                  g.fill_value[k]);
    const int channels = color == DLA__COLOR_GRAY2RGB   ? 3
                         : color == DLA__COLOR_RGB2GRAY ? 1
                                                        : ds->cat->c;
    if (g.fill_per_channel && channels != 3)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument aug: fill_per_channel for images of %d channel%s; a "
                              "fill value per channel needs 3 (MATLAB: a scalar FillValue for "
                              "single-channel images)", op, channels, channels == 1 ? "" : "s");
    dla__imds_augment *a = dla__data_calloc(1, sizeof *a);
    pthread_mutex_t *lock = dla__data_malloc(sizeof *lock);
    if (!a || !lock || pthread_mutex_init(lock, NULL) != 0) {
        dla__data_free(a);
        dla__data_free(lock);
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    a->refs = 1;
    a->out_h = (int)output_size[0];
    a->out_w = (int)output_size[1];
    a->size_mode = mode;
    a->color = color;
    a->aug = g;
    a->lock = lock;
    a->seed = seed;
    dla__data_rng_seed(&a->rng, seed);
    dla__imds_augment *was = ds->augment;
    ds->augment = a; /* derive copies it (and takes a reference) */
    dla_imds *d = derive(ds, ds->n, ds->idx, op);
    ds->augment = was;
    augment_release(a);
    if (!d)
        return dla_last_status();
    *out = d;
    return DLA_OK;
}

DLA_API dla_status dla_augimds_create(const int64_t output_size[2], dla_imds *ds,
                                      const dla_image_augmenter *aug, uint64_t seed,
                                      dla_imds **out)
{
    return augimds_create(output_size, ds, aug, seed, NULL, out, "dla_augimds_create");
}

DLA_API dla_status dla_augimds_create_opts(const int64_t output_size[2], dla_imds *ds,
                                           const dla_image_augmenter *aug, uint64_t seed,
                                           const dla_augimds_options *opts, dla_imds **out)
{
    return augimds_create(output_size, ds, aug, seed, opts, out, "dla_augimds_create_opts");
}

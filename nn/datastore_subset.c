/*
 * datastore_subset.c - MATLAB's subset, shuffle and partition of an
 * indexed datastore: a datastore over a list of its parent's observation
 * numbers, reading through to the parent (an array's gather too).
 */
#include "nn/data_rng.h"
#include "nn/data_util.h"
#include "nn/datastore.h"

typedef struct subset {
    dla_datastore *parent; /* held */
    int64_t *idx;          /* the parent's numbers of this one's observations */
} subset;

static dla_status subset_read_at(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    const subset *s = ds->state;
    return dla__ds_obs(s->parent, s->idx[i], out, op);
}

static dla_status subset_read_batch(dla_datastore *ds, int64_t n, const int64_t *idx,
                                    dla_tensor **out, const char *op)
{
    const subset *s = ds->state;
    int64_t *mapped = dla__data_malloc((size_t)n * sizeof *mapped);
    if (!mapped)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int64_t k = 0; k < n; k++)
        mapped[k] = s->idx[idx[k]];
    dla_status st = dla__ds_gather(s->parent, n, mapped, NULL, out, op);
    dla__data_free(mapped);
    return st;
}

static void subset_destroy(dla_datastore *ds)
{
    subset *s = ds->state;
    dla__ds_release(s->parent);
    dla__data_free(s->idx);
    dla__data_free(s);
}

const dla__ds_kind dla__ds_subset_kind = {
    .name = "datastore subset",
    .read_at = subset_read_at,
    .read_batch = subset_read_batch,
    .destroy = subset_destroy,
};

dla_datastore *dla__ds_subset_parent(const dla_datastore *ds, const int64_t **idx)
{
    const subset *s = ds->state;
    *idx = s->idx;
    return s->parent;
}

/* A subset of ds over idx (taken: freed on failure too), n of them. */
static dla_status make_subset(dla_datastore *ds, int64_t n, int64_t *idx, dla_datastore **out,
                              const char *op)
{
    subset *s = dla__data_calloc(1, sizeof *s);
    dla_datastore *r = s ? dla__ds_new(&dla__ds_subset_kind, ds->nout, n, s, op) : NULL;
    if (!r) {
        dla__data_free(idx);
        dla__data_free(s);
        return s ? dla_last_status() : dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    for (int j = 0; j < ds->nout; j++)
        r->obs_dim[j] = ds->obs_dim[j];
    r->read_size = ds->read_size;
    /* The subset of a subset reads its grandparent: one level at most. */
    if (ds->kind == &dla__ds_subset_kind) {
        const subset *p = ds->state;
        for (int64_t k = 0; k < n; k++)
            idx[k] = p->idx[idx[k]];
        ds = p->parent;
    }
    s->parent = dla__ds_retain(ds);
    s->idx = idx;
    *out = r;
    return DLA_OK;
}

/* The checks shared by subset, shuffle and partition. */
static dla_status indexed_args(dla_datastore *ds, dla_datastore **out, const char *op)
{
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!dla__ds_live(ds, op, "ds"))
        return dla_last_status();
    if (!dla__ds_indexed(ds))
        return dla__data_fail(DLA_ERR_STATE,
                              "%s: argument ds: a %s read in order cannot be shuffled, subset or "
                              "partitioned (give a custom datastore read_at and num_observations)",
                              op, ds->kind->name);
    return DLA_OK;
}

DLA_API dla_status dla_datastore_subset(dla_datastore *ds, int64_t n, const int64_t *idx,
                                        dla_datastore **out)
{
    static const char op[] = "dla_datastore_subset";
    dla_status st = indexed_args(ds, out, op);
    if (st != DLA_OK)
        return st;
    if (n < 0 || (n > 0 && !idx))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s", op,
                              n < 0 ? "n < 0" : "idx is NULL");
    for (int64_t k = 0; k < n; k++)
        if (idx[k] < 0 || idx[k] >= ds->count)
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument idx[%lld]: %lld, outside 0..%lld (the %s's "
                                  "observations)",
                                  op, (long long)k, (long long)idx[k], (long long)ds->count - 1,
                                  ds->kind->name);
    int64_t *copy = dla__data_malloc((size_t)(n ? n : 1) * sizeof *copy);
    if (!copy)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int64_t k = 0; k < n; k++)
        copy[k] = idx[k];
    return make_subset(ds, n, copy, out, op);
}

DLA_API dla_status dla_datastore_shuffle(dla_datastore *ds, uint64_t seed, dla_datastore **out)
{
    static const char op[] = "dla_datastore_shuffle";
    dla_status st = indexed_args(ds, out, op);
    if (st != DLA_OK)
        return st;
    int64_t *idx = dla__data_malloc((size_t)(ds->count ? ds->count : 1) * sizeof *idx);
    if (!idx)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int64_t k = 0; k < ds->count; k++)
        idx[k] = k;
    dla__data_rng rng;
    dla__data_rng_seed(&rng, seed);
    dla__data_rng_shuffle(&rng, ds->count, idx); /* numpy's permutation(count) */
    return make_subset(ds, ds->count, idx, out, op);
}

DLA_API dla_status dla_datastore_partition(dla_datastore *ds, int n, int index,
                                           dla_datastore **out)
{
    static const char op[] = "dla_datastore_partition";
    dla_status st = indexed_args(ds, out, op);
    if (st != DLA_OK)
        return st;
    if (n < 1 || index < 0 || index >= n)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument %s: %d; parts n >= 1, index in 0..n-1", op,
                              n < 1 ? "n" : "index", n < 1 ? n : index);
    const int64_t base = ds->count / n, extra = ds->count % n;
    const int64_t start = index * base + (index < extra ? index : extra);
    const int64_t size = base + (index < extra);
    int64_t *idx = dla__data_malloc((size_t)(size ? size : 1) * sizeof *idx);
    if (!idx)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    for (int64_t k = 0; k < size; k++)
        idx[k] = start + k;
    return make_subset(ds, size, idx, out, op);
}

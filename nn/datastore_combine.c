/*
 * datastore_combine.c - MATLAB's combine(ds1, ..., dsN): the outputs of
 * every datastore's observation i side by side, read in step.
 */
#include <stdio.h>

#include "nn/data_util.h"
#include "nn/datastore.h"

typedef struct combine_ds {
    int n;
    dla_datastore *in[DLA__DS_MAX]; /* held */
} combine_ds;

/* Each input's observation (read_at i, or the next) into its outputs. */
static dla_status combine_read(dla_datastore *ds, int64_t i, int next, dla_tensor **out,
                               const char *op)
{
    const combine_ds *c = ds->state;
    dla_status st = DLA_OK;
    char msg[1024] = "";
    int o = 0;
    /* Read in order, every input reads its next observation even after
     * one failed: each moved past it, and stopping left the later ones a
     * step behind, pairing observation i of one with i - 1 of another
     * from then on. The first failure is the read's. */
    for (int k = 0; k < c->n && (next || st == DLA_OK); k++) {
        dla_status sk = next ? dla__ds_next_obs(c->in[k], out + o, op)
                             : dla__ds_obs(c->in[k], i, out + o, op);
        if (sk != DLA_OK && st == DLA_OK) {
            st = sk;
            snprintf(msg, sizeof msg, "%s", dla_last_error());
        }
        o += c->in[k]->nout;
    }
    if (st != DLA_OK) {
        dla__ds_drop(ds->nout, out);
        dla__data_fail(st, "%s", msg);
    }
    return st;
}

static dla_status combine_read_at(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    return combine_read(ds, i, 0, out, op);
}

static dla_status combine_read_next(dla_datastore *ds, dla_tensor **out, const char *op)
{
    return combine_read(ds, 0, 1, out, op);
}

/* In step: while every input has data. */
static int combine_hasdata(dla_datastore *ds)
{
    const combine_ds *c = ds->state;
    for (int k = 0; k < c->n; k++)
        if (!dla__ds_has_next(c->in[k]))
            return 0;
    return 1;
}

static void combine_reset(dla_datastore *ds)
{
    const combine_ds *c = ds->state;
    for (int k = 0; k < c->n; k++)
        dla__ds_rewind(c->in[k]);
}

static void combine_destroy(dla_datastore *ds)
{
    combine_ds *c = ds->state;
    for (int k = 0; k < c->n; k++)
        dla__ds_release(c->in[k]);
    dla__data_free(c);
}

static int combine_inputs(const dla_datastore *ds, dla_datastore **in)
{
    const combine_ds *c = ds->state;
    for (int k = 0; k < c->n; k++)
        in[k] = c->in[k];
    return c->n;
}

static const dla__ds_kind combine_indexed = {
    .name = "combined datastore",
    .read_at = combine_read_at,
    .destroy = combine_destroy,
    .inputs = combine_inputs,
};

static const dla__ds_kind combine_in_order = {
    .name = "combined datastore",
    .read_next = combine_read_next,
    .hasdata = combine_hasdata,
    .reset = combine_reset,
    .destroy = combine_destroy,
    .inputs = combine_inputs,
};

DLA_API dla_status dla_combine(int n, dla_datastore *const *ds, dla_datastore **out)
{
    static const char op[] = "dla_combine";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (n < 1 || n > DLA__DS_MAX || !ds)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument n: %d; 1..%d datastores",
                              op, n, DLA__DS_MAX);
    int nout = 0, indexed = 1, first_known = -1;
    int64_t count = -1;
    for (int k = 0; k < n; k++) {
        char arg[16];
        snprintf(arg, sizeof arg, "ds[%d]", k);
        if (!dla__ds_live(ds[k], op, arg))
            return dla_last_status();
        nout += ds[k]->nout;
        indexed &= dla__ds_indexed(ds[k]);
        /* A count learned by reading an input through is no count of its
         * source's, which may have changed since: unknown here too. */
        if (ds[k]->count < 0 || ds[k]->count_learned)
            continue;
        if (first_known >= 0 && ds[k]->count != count)
            return dla__data_fail(DLA_ERR_SHAPE,
                                  "%s: argument ds[%d]: %lld observations, but ds[%d] has %lld; "
                                  "combined datastores are read in step",
                                  op, k, (long long)ds[k]->count, first_known, (long long)count);
        if (first_known < 0)
            first_known = k, count = ds[k]->count;
    }
    if (nout > DLA__DS_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d outputs in all; at most %d", op,
                              nout, DLA__DS_MAX);
    /* Read in order, each input is read by its position: two that move
     * one (one datastore twice, or a datastore and a transform of it)
     * would each take the other's observations, pairing observation i
     * with i + 1. */
    for (int k = 0; k < n && !indexed; k++)
        for (int j = 0; j < k; j++)
            if (dla__ds_share_position(ds[j], ds[k]))
                return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                      "%s: argument ds[%d] and ds[%d] read one datastore by its "
                                      "position (the same datastore, or one made of the other), "
                                      "read in order: it would be read twice a step, pairing "
                                      "observation i with i + 1 (a transform with both outputs "
                                      "reads it once)",
                                      op, j, k);
    /* A count is known when every input knows it. */
    for (int k = 0; k < n; k++)
        if (ds[k]->count < 0 || ds[k]->count_learned)
            count = -1;
    combine_ds *c = dla__data_calloc(1, sizeof *c);
    if (!c)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    dla_datastore *r =
        dla__ds_new(indexed ? &combine_indexed : &combine_in_order, nout, count, c, op);
    if (!r) {
        dla__data_free(c);
        return dla_last_status();
    }
    c->n = n;
    for (int k = 0, o = 0; k < n; k++) {
        c->in[k] = dla__ds_retain(ds[k]);
        for (int j = 0; j < ds[k]->nout; j++)
            r->obs_dim[o++] = ds[k]->obs_dim[j];
    }
    if (!indexed)
        combine_reset(r); /* read from the start, in step */
    *out = r;
    return DLA_OK;
}

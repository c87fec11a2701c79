/*
 * datastore_transform.c - MATLAB's transform(ds, fn): the user's function
 * applied to each observation of the underlying datastore as it is read.
 */
#include <stdio.h>

#include "nn/data_util.h"
#include "nn/datastore.h"

typedef struct transform_ds {
    dla_datastore *in; /* held */
    dla_transform_fn fn;
    void *ctx;
} transform_ds;

typedef struct call_arg {
    const transform_ds *t;
    dla_tensor **in;
} call_arg;

static dla_status call_fn(void *ctx, void *arg, int nout, dla_tensor **out)
{
    (void)ctx;
    const call_arg *c = arg;
    return c->t->fn(c->t->ctx, c->t->in->nout, c->in, nout, out);
}

/* fn on the observation in[] (held; released here). */
static dla_status apply(dla_datastore *ds, dla_tensor **in, int64_t i, dla_tensor **out,
                        const char *op)
{
    const transform_ds *t = ds->state;
    call_arg c = {t, in};
    char what[96];
    snprintf(what, sizeof what, "transform function on observation %lld", (long long)i);
    dla_status st = dla__ds_call_user(call_fn, NULL, &c, ds->nout, out, op, what);
    dla__ds_drop(t->in->nout, in);
    return st;
}

static dla_status transform_read_at(dla_datastore *ds, int64_t i, dla_tensor **out,
                                    const char *op)
{
    const transform_ds *t = ds->state;
    dla_tensor *in[DLA__DS_MAX];
    dla_status st = dla__ds_obs(t->in, i, in, op);
    return st == DLA_OK ? apply(ds, in, i, out, op) : st;
}

static dla_status transform_read_next(dla_datastore *ds, dla_tensor **out, const char *op)
{
    const transform_ds *t = ds->state;
    dla_tensor *in[DLA__DS_MAX];
    dla_status st = dla__ds_next_obs(t->in, in, op);
    return st == DLA_OK ? apply(ds, in, ds->pos++, out, op) : st;
}

static int transform_hasdata(dla_datastore *ds)
{
    return dla__ds_has_next(((transform_ds *)ds->state)->in);
}

static void transform_reset(dla_datastore *ds)
{
    ds->pos = 0; /* the observations read, for messages */
    dla__ds_rewind(((transform_ds *)ds->state)->in);
}

static void transform_destroy(dla_datastore *ds)
{
    transform_ds *t = ds->state;
    dla__ds_release(t->in);
    dla__data_free(t);
}

static int transform_inputs(const dla_datastore *ds, dla_datastore **in)
{
    in[0] = ((const transform_ds *)ds->state)->in;
    return 1;
}

static const dla__ds_kind transform_indexed = {
    .name = "transformed datastore",
    .read_at = transform_read_at,
    .destroy = transform_destroy,
    .inputs = transform_inputs,
};

static const dla__ds_kind transform_in_order = {
    .name = "transformed datastore",
    .read_next = transform_read_next,
    .hasdata = transform_hasdata,
    .reset = transform_reset,
    .destroy = transform_destroy,
    .inputs = transform_inputs,
};

DLA_API dla_status dla_transform(dla_datastore *ds, int noutputs, dla_transform_fn fn, void *ctx,
                                 dla_datastore **out)
{
    static const char op[] = "dla_transform";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!dla__ds_live(ds, op, "ds"))
        return dla_last_status();
    if (!fn)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument fn is NULL", op);
    if (noutputs < 0 || noutputs > DLA__DS_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument noutputs: %d; 0..%d", op,
                              noutputs, DLA__DS_MAX);
    transform_ds *t = dla__data_calloc(1, sizeof *t);
    if (!t)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    const dla__ds_kind *kind = dla__ds_indexed(ds) ? &transform_indexed : &transform_in_order;
    dla_datastore *r = dla__ds_new(kind, noutputs ? noutputs : ds->nout, ds->count, t, op);
    if (!r) {
        dla__data_free(t);
        return dla_last_status();
    }
    /* As many outputs: each joined as the underlying one is (an array's
     * slices along its iteration dimension stay joined along it). */
    if (r->nout == ds->nout)
        for (int j = 0; j < r->nout; j++)
            r->obs_dim[j] = ds->obs_dim[j];
    /* A count learned by reading ds through may be stale by now: the
     * transform's is learned afresh as ds's is (trainnet's rule). */
    r->count_learned = ds->count_learned;
    t->in = dla__ds_retain(ds);
    t->fn = fn;
    t->ctx = ctx;
    if (!dla__ds_indexed(ds))
        dla__ds_rewind(ds); /* read from the start */
    *out = r;
    return DLA_OK;
}

/*
 * datastore_custom.c - a datastore of the user's callbacks (MATLAB's
 * matlab.io.Datastore subclass; Shuffleable and Partitionable with
 * read_at).
 */
#include <stdio.h>

#include "nn/data_util.h"
#include "nn/datastore.h"

typedef struct custom_ds {
    dla_custom_datastore def;
    int64_t read; /* observations read in order since the reset, for messages */
} custom_ds;

static dla_status call_read_at(void *ctx, void *arg, int nout, dla_tensor **out)
{
    const dla_custom_datastore *d = ctx;
    return d->read_at(d->ctx, *(const int64_t *)arg, nout, out);
}

static dla_status call_read(void *ctx, void *arg, int nout, dla_tensor **out)
{
    (void)arg;
    const dla_custom_datastore *d = ctx;
    return d->read(d->ctx, nout, out);
}

static dla_status custom_read_at(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    custom_ds *c = ds->state;
    char what[64];
    snprintf(what, sizeof what, "read_at(%lld)", (long long)i);
    return dla__ds_call_user(call_read_at, &c->def, &i, ds->nout, out, op, what);
}

static dla_status custom_read_next(dla_datastore *ds, dla_tensor **out, const char *op)
{
    custom_ds *c = ds->state;
    char what[80];
    snprintf(what, sizeof what, "read of observation %lld", (long long)c->read);
    dla_status st = dla__ds_call_user(call_read, &c->def, NULL, ds->nout, out, op, what);
    c->read++;
    return st;
}

static int custom_hasdata(dla_datastore *ds)
{
    custom_ds *c = ds->state;
    return c->def.hasdata(c->def.ctx) != 0;
}

static void custom_reset(dla_datastore *ds)
{
    custom_ds *c = ds->state;
    c->read = 0;
    c->def.reset(c->def.ctx);
}

static void custom_destroy(dla_datastore *ds)
{
    custom_ds *c = ds->state;
    if (c->def.free)
        c->def.free(c->def.ctx);
    dla__data_free(c);
}

static const dla__ds_kind custom_indexed = {
    .name = "custom datastore",
    .read_at = custom_read_at,
    .destroy = custom_destroy,
};

static const dla__ds_kind custom_in_order = {
    .name = "custom datastore",
    .read_next = custom_read_next,
    .hasdata = custom_hasdata,
    .reset = custom_reset,
    .destroy = custom_destroy,
};

DLA_API dla_status dla_custom_datastore_create(const dla_custom_datastore *def,
                                               dla_datastore **out)
{
    static const char op[] = "dla_custom_datastore_create";
    if (!out)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out is NULL", op);
    *out = NULL;
    if (!def)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument def is NULL", op);
    if (def->num_outputs < 1 || def->num_outputs > DLA__DS_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument def: num_outputs %d; 1..%d",
                              op, def->num_outputs, DLA__DS_MAX);
    if (def->num_observations < -1 || def->num_observations > INT32_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument def: num_observations %lld; -1 (unknown) or "
                              "0..2^31-1",
                              op, (long long)def->num_observations);
    const int in_order = def->read && def->hasdata && def->reset;
    if (!def->read_at && !in_order)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument def: neither read_at nor all of read, hasdata and "
                              "reset are set",
                              op);
    if (def->read_at && def->num_observations < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument def: read_at needs num_observations (it is -1)", op);
    custom_ds *c = dla__data_calloc(1, sizeof *c);
    if (!c)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    c->def = *def;
    dla_datastore *ds = dla__ds_new(def->read_at ? &custom_indexed : &custom_in_order,
                                    def->num_outputs, def->num_observations, c, op);
    if (!ds) {
        dla__data_free(c);
        return dla_last_status();
    }
    *out = ds;
    return DLA_OK;
}

/*
 * datastore.c - the generic datastore handle (api/dlaccel/data.h,
 * "datastores"): its references, the handle checks, MATLAB's read,
 * readall, hasdata and reset over any kind, and the call of a user's
 * callback that every kind with callbacks shares.
 */
#include "core/handle.h" /* the handle checks (docs/checks.md) */
#include "core/log.h"
#include "nn/data_util.h"
#include "nn/datastore.h"

#include "core/scope.h"

#include <stdio.h>
#include <string.h>

dla_datastore *dla__ds_new(const dla__ds_kind *kind, int nout, int64_t count, void *state,
                           const char *op)
{
    dla_datastore *ds = dla__data_calloc(1, sizeof *ds);
    if (!ds) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
        return NULL;
    }
    ds->magic = DLA__HANDLE_DATASTORE;
    atomic_init(&ds->refs, 1);
    atomic_init(&ds->user_freed, 0);
    ds->kind = kind;
    ds->nout = nout;
    ds->count = count;
    ds->read_size = 1;
    ds->state = state;
    return ds;
}

dla_datastore *dla__ds_retain(dla_datastore *ds)
{
    if (ds)
        atomic_fetch_add(&ds->refs, 1);
    return ds;
}

void dla__ds_release(dla_datastore *ds)
{
    if (!ds || atomic_fetch_sub(&ds->refs, 1) != 1)
        return;
    if (ds->kind->destroy)
        ds->kind->destroy(ds);
    ds->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    dla__quarantine(DLA__RING_OBJECTS, ds);
}

int dla__ds_live(const dla_datastore *ds, const char *op, const char *arg)
{
    if (!ds) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op, arg);
        return 0;
    }
    if (ds->magic == DLA__HANDLE_DATASTORE && !atomic_load(&ds->user_freed))
        return 1;
    /* A handle the caller freed that a queue still holds is alive, but no
     * longer the caller's: using it is the same misuse as a dead one. */
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s: %p is %s", op, arg, (const void *)ds,
                ds->magic == DLA__HANDLE_DEAD || ds->magic == DLA__HANDLE_DATASTORE
                    ? "a datastore freed already (freed twice, or used after dla_datastore_free)"
                    : "not a datastore handle");
    return 0;
}

DLA_API void dla_datastore_free(dla_datastore *ds)
{
    if (!ds || !dla__ds_live(ds, "dla_datastore_free", "ds"))
        return;
    atomic_store(&ds->user_freed, 1);
    dla__ds_release(ds);
}

DLA_API int dla_datastore_num_outputs(const dla_datastore *ds)
{
    return ds && dla__ds_live(ds, "dla_datastore_num_outputs", "ds") ? ds->nout : 0;
}

DLA_API int64_t dla_datastore_num_observations(const dla_datastore *ds)
{
    return ds && dla__ds_live(ds, "dla_datastore_num_observations", "ds") ? ds->count : -1;
}

DLA_API int dla_datastore_is_indexed(const dla_datastore *ds)
{
    return ds && dla__ds_live(ds, "dla_datastore_is_indexed", "ds") && dla__ds_indexed(ds);
}

void dla__ds_drop(int n, dla_tensor **out)
{
    for (int j = 0; j < n; j++) {
        dla_tensor_release(out[j]);
        out[j] = NULL;
    }
}

/* ------------------------------------------------------ one observation */

dla_status dla__ds_obs(dla_datastore *ds, int64_t i, dla_tensor **out, const char *op)
{
    for (int j = 0; j < ds->nout; j++)
        out[j] = NULL;
    if (i < 0 || i >= ds->count)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: observation %lld of a %s of %lld observations", op,
                              (long long)i, ds->kind->name, (long long)ds->count);
    return ds->kind->read_at(ds, i, out, op);
}

int dla__ds_has_next(dla_datastore *ds)
{
    return dla__ds_indexed(ds) ? ds->pos < ds->count : ds->kind->hasdata(ds) != 0;
}

void dla__ds_rewind(dla_datastore *ds)
{
    ds->pos = 0;
    if (!dla__ds_indexed(ds))
        ds->kind->reset(ds);
}

dla_status dla__ds_next_obs(dla_datastore *ds, dla_tensor **out, const char *op)
{
    for (int j = 0; j < ds->nout; j++)
        out[j] = NULL;
    if (!dla__ds_has_next(ds))
        return dla__data_fail(DLA_ERR_STATE,
                              "%s: no observation left in the %s; call dla_datastore_reset", op,
                              ds->kind->name);
    if (!dla__ds_indexed(ds))
        return ds->kind->read_next(ds, out, op);
    /* Read in order (inside a combination or transform read in order),
     * a failed observation is passed over as a source read in order passes
     * over it: kept, the indexed one read it again beside the others'
     * next observations, out of step with them. */
    return ds->kind->read_at(ds, ds->pos++, out, op);
}

dla_status dla__ds_learn_count(dla_datastore *ds, int again, const char *op)
{
    if (ds->count >= 0 && !(again && ds->count_learned))
        return DLA_OK;
    dla__ds_rewind(ds);
    int64_t n = 0, next_warning = 1000000;
    dla_status st = DLA_OK;
    while (st == DLA_OK && dla__ds_has_next(ds)) {
        if (n == INT32_MAX) {
            st = dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                "%s: the %s, read through to count its observations, has more "
                                "than 2^31-1",
                                op, ds->kind->name);
            break;
        }
        /* One whose hasdata never ends is never counted: say so as the
         * reads pile up (at 10^6, 10^7, ...), rather than wait unseen. */
        if (n >= 1000000 && n == next_warning) {
            dla__log(DLA_LOG_WARN,
                     "%s: %lld observations of the %s read so far to count them; one whose "
                     "hasdata never ends cannot be counted: give it num_observations",
                     op, (long long)n, ds->kind->name);
            next_warning *= 10;
        }
        dla_tensor *out[DLA__DS_MAX];
        st = dla__ds_next_obs(ds, out, op);
        dla__ds_drop(ds->nout, out);
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            st = dla__data_fail(st, "%s (reading the %s through to count its observations, at "
                                "observation %lld)",
                                msg, ds->kind->name, (long long)n);
        }
        n++;
    }
    dla__ds_rewind(ds);
    if (st == DLA_OK) {
        ds->count = n;
        ds->count_learned = 1;
    }
    return st;
}

dla_status dla__ds_read_next_n(dla_datastore *ds, int64_t n, const dla__ds_how *how,
                               dla_tensor **out, int64_t *got, const char *op)
{
    *got = 0;
    for (int j = 0; j < ds->nout; j++)
        out[j] = NULL;
    if (!dla__ds_has_next(ds))
        return dla__data_fail(DLA_ERR_STATE,
                              "%s: no data left in the %s; call dla_datastore_reset", op,
                              ds->kind->name);
    /* Grown as observations come: a count read in order may be unknown. */
    int64_t cap = n < 64 ? n : 64, k = 0;
    dla_tensor **obs = dla__data_calloc((size_t)(cap * ds->nout), sizeof *obs);
    if (!obs)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    dla_status st = DLA_OK;
    int read_failed = 0;
    while (k < n && dla__ds_has_next(ds)) {
        if (k == cap) {
            int64_t more = cap * 2 < n ? cap * 2 : n;
            dla_tensor **grown = dla__data_realloc(obs, (size_t)(more * ds->nout) * sizeof *obs);
            if (!grown) {
                st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
                break;
            }
            obs = grown;
            cap = more;
        }
        st = dla__ds_next_obs(ds, obs + k * ds->nout, op);
        if (st != DLA_OK) {
            read_failed = 1;
            break; /* the failed observation holds nothing */
        }
        k++;
    }
    if (st == DLA_OK)
        st = dla__ds_join(ds, k, obs, NULL, how, out, op);
    for (int64_t i = 0; i < k * ds->nout; i++)
        dla_tensor_release(obs[i]);
    dla__data_free(obs);
    /* A read that failed moved the source past its observation too (the
     * callback's position is its own): counted, so that the next read
     * goes on after it. */
    *got = k + (st != DLA_OK && read_failed);
    return st;
}

/* Whether ds, read in order, moves leaf's position: an indexed datastore
 * or a kind read in order with no inputs moves its own; a transform or
 * combination read in order moves its inputs'. */
static int moves(const dla_datastore *ds, const dla_datastore *leaf)
{
    dla_datastore *in[DLA__DS_MAX];
    const int n = dla__ds_indexed(ds) || !ds->kind->inputs ? 0 : ds->kind->inputs(ds, in);
    if (n == 0)
        return ds == leaf;
    for (int k = 0; k < n; k++)
        if (moves(in[k], leaf))
            return 1;
    return 0;
}

int dla__ds_share_position(const dla_datastore *a, const dla_datastore *b)
{
    dla_datastore *in[DLA__DS_MAX];
    const int n = dla__ds_indexed(a) || !a->kind->inputs ? 0 : a->kind->inputs(a, in);
    if (n == 0)
        return moves(b, a);
    for (int k = 0; k < n; k++)
        if (dla__ds_share_position(in[k], b))
            return 1;
    return 0;
}

/* ------------------------------------------------------------- reading */

DLA_API int dla_datastore_hasdata(dla_datastore *ds)
{
    return ds && dla__ds_live(ds, "dla_datastore_hasdata", "ds") && dla__ds_has_next(ds);
}

DLA_API void dla_datastore_reset(dla_datastore *ds)
{
    if (ds && dla__ds_live(ds, "dla_datastore_reset", "ds"))
        dla__ds_rewind(ds);
}

DLA_API dla_status dla_datastore_set_read_size(dla_datastore *ds, int64_t size)
{
    static const char op[] = "dla_datastore_set_read_size";
    if (!dla__ds_live(ds, op, "ds"))
        return dla_last_status();
    if (size < 1)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument size: %lld; ReadSize >= 1",
                              op, (long long)size);
    ds->read_size = size;
    return DLA_OK;
}

/* The common checks of read and readall; outputs NULLed. */
static dla_status read_args(dla_datastore *ds, int n, dla_tensor **outputs, const char *op)
{
    if (outputs)
        for (int j = 0; j < n; j++)
            outputs[j] = NULL;
    if (!dla__ds_live(ds, op, "ds"))
        return dla_last_status();
    if (!outputs)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument outputs is NULL", op);
    if (n != ds->nout)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument n: %d, but the %s has %d output%s", op, n,
                              ds->kind->name, ds->nout, ds->nout == 1 ? "" : "s");
    return DLA_OK;
}

dla_status dla__ds_read_span(dla_datastore *ds, int64_t first, int64_t n, const dla__ds_how *how,
                             dla_tensor **out, const char *op)
{
    if (!dla__ds_indexed(ds)) {
        for (int j = 0; j < ds->nout; j++)
            out[j] = NULL;
        if (first == 0)
            dla__ds_rewind(ds);
        int64_t got = 0;
        dla_status st = dla__ds_read_next_n(ds, n, how, out, &got, op);
        if (st == DLA_OK && got < n) {
            dla__ds_drop(ds->nout, out);
            st = dla__data_fail(DLA_ERR_STATE,
                                "%s: the %s ran out of data after %lld observations, but its "
                                "count is %lld",
                                op, ds->kind->name, (long long)(first + got),
                                (long long)ds->count);
        }
        return st;
    }
    int64_t *idx = dla__data_malloc((size_t)n * sizeof *idx);
    if (!idx)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld indices", op,
                              (long long)n);
    for (int64_t k = 0; k < n; k++)
        idx[k] = first + k;
    dla_status st = dla__ds_gather(ds, n, idx, how, out, op);
    dla__data_free(idx);
    return st;
}

dla_status dla__ds_first_obs(dla_datastore *ds, dla_tensor **out, const char *op)
{
    if (dla__ds_indexed(ds))
        return dla__ds_obs(ds, 0, out, op);
    for (int j = 0; j < ds->nout; j++)
        out[j] = NULL;
    dla__ds_rewind(ds);
    if (!dla__ds_has_next(ds))
        return dla__data_fail(DLA_ERR_STATE, "%s: the %s holds no observation", op,
                              ds->kind->name);
    return dla__ds_next_obs(ds, out, op);
}

DLA_API dla_status dla_datastore_read(dla_datastore *ds, int n, dla_tensor **outputs)
{
    static const char op[] = "dla_datastore_read";
    dla_status st = read_args(ds, n, outputs, op);
    if (st != DLA_OK)
        return st;
    if (dla__ds_indexed(ds)) {
        if (ds->pos >= ds->count)
            return dla__data_fail(DLA_ERR_STATE,
                                  "%s: no data left in the %s of %lld observations; call "
                                  "dla_datastore_reset",
                                  op, ds->kind->name, (long long)ds->count);
        int64_t m = ds->count - ds->pos < ds->read_size ? ds->count - ds->pos : ds->read_size;
        st = dla__ds_read_span(ds, ds->pos, m, NULL, outputs, op);
        if (st == DLA_OK)
            ds->pos += m;
    } else {
        int64_t got;
        st = dla__ds_read_next_n(ds, ds->read_size, NULL, outputs, &got, op);
    }
    return st == DLA_OK ? dla__data_deliver_all(n, outputs, op) : st;
}

DLA_API dla_status dla_datastore_readall(dla_datastore *ds, int n, dla_tensor **outputs)
{
    static const char op[] = "dla_datastore_readall";
    dla_status st = read_args(ds, n, outputs, op);
    if (st != DLA_OK)
        return st;
    if (dla__ds_indexed(ds)) {
        if (ds->count == 0)
            return dla__data_fail(DLA_ERR_STATE, "%s: the %s holds no observation", op,
                                  ds->kind->name);
        st = dla__ds_read_span(ds, 0, ds->count, NULL, outputs, op);
    } else {
        int64_t got;
        ds->kind->reset(ds);
        st = dla__ds_read_next_n(ds, INT64_MAX, NULL, outputs, &got, op);
        ds->kind->reset(ds);
    }
    return st == DLA_OK ? dla__data_deliver_all(n, outputs, op) : st;
}

/* ------------------------------------------------------- user callbacks */

dla_status dla__ds_call_user(dla__ds_call fn, void *ctx, void *arg, int nout, dla_tensor **out,
                             const char *op, const char *what)
{
    dla_tensor *made[DLA__DS_MAX] = {0};
    char msg[1024];
    msg[0] = '\0';
    dla_status st;
    /* A stale message must not be taken for the callback's. */
    dla_clear_error();
    /* Guarded: one dla_scope_end too many in the callback released what it
     * had read, then closed the caller's scope (trainnet's, the mini-batch
     * queue's). */
    const int mark = dla__scope_open_guarded(NULL);
    st = fn(ctx, arg, nout, made);
    const int imbalance = dla__scope_guarded_imbalance(mark);
    if (st == DLA_OK && imbalance) {
        char why[120];
        st = DLA_ERR_STATE;
        snprintf(msg, sizeof msg, "%s: %s: %s", op, what,
                 dla__scope_imbalance_str(imbalance, why, sizeof why));
    } else if (st != DLA_OK) {
        snprintf(msg, sizeof msg, "%s: %s: %s", op, what,
                 dla_last_status() != DLA_OK ? dla_last_error() : dla_status_str(st));
    } else {
        for (int j = 0; j < nout && st == DLA_OK; j++) {
            if (!made[j]) {
                st = DLA_ERR_INVALID_ARGUMENT;
                snprintf(msg, sizeof msg, "%s: %s: output %d left NULL", op, what, j + 1);
            } else if (dla_tensor_status(made[j]) != DLA_OK) {
                st = dla_tensor_status(made[j]);
                snprintf(msg, sizeof msg, "%s: %s: output %d is an error tensor: %s", op, what,
                         j + 1, dla_tensor_error(made[j]));
            }
        }
    }
    for (int j = 0; j < nout; j++)
        out[j] = st == DLA_OK ? dla__data_hold(made[j]) : NULL;
    dla__scope_close_guarded(mark);
    return st == DLA_OK ? DLA_OK : dla__data_fail(st, "%s", msg);
}

/*
 * datastore_join.c - observations joined into a read or a mini-batch:
 * each output's observations checked against the first (dtype, format,
 * dims, 1 along the joining dim) and concatenated along its dim.
 */
#include "nn/data_util.h"
#include "nn/datastore.h"

#include <math.h>
#include <string.h>

/* The dim output j of ds is joined along, for its first observation t. */
static int join_dim(const dla_datastore *ds, int j, const dla__ds_how *how, const dla_tensor *t)
{
    if (how && how->at[j] > 0)
        return how->at[j];
    if (ds->obs_dim[j] > 0)
        return ds->obs_dim[j];
    int b = dla_tensor_find_dim(t, 'B');
    return b ? b : dla_tensor_ndims(t) + 1;
}

/* dims padded with 1s to DLA_MAX_DIMS; returns the count before padding. */
static int dims_of(const dla_tensor *t, int64_t *dims)
{
    int nd = dla_tensor_dims(t, dims);
    for (int d = nd; d < DLA_MAX_DIMS; d++)
        dims[d] = 1;
    return nd;
}

/* The steps a batch of sequences takes: the rule's over the lengths of
 * observations 0..n-1 of output j along tdim. */
static int64_t batch_steps(const dla_datastore *ds, int j, int64_t n, dla_tensor **obs, int tdim,
                           const dla__seq_rule *rule)
{
    if (rule->mode == DLA__SEQ_FIXED)
        return rule->fixed;
    int64_t steps = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t d[DLA_MAX_DIMS];
        dims_of(obs[k * ds->nout + j], d);
        const int64_t l = d[tdim - 1];
        if (k == 0 || (rule->mode == DLA__SEQ_LONGEST ? l > steps : l < steps))
            steps = l;
    }
    return steps;
}

/* Sequence t (unformatted, its steps along tdim) padded or truncated to
 * steps as the rule says: right keeps its first steps and pads after them,
 * left its last and pads before, so that sequences end together. */
static dla_tensor *fit_steps(dla_tensor *t, int tdim, int64_t steps, const dla__seq_rule *rule,
                             double padding_value, int64_t *kept)
{
    int64_t d[DLA_MAX_DIMS];
    dims_of(t, d);
    const int64_t len = d[tdim - 1], keep = len < steps ? len : steps;
    *kept = keep;
    if (keep < len) {
        const int64_t from = rule->left ? len - keep : 0;
        t = dla_slice(t, tdim, from, 1, from + keep);
    }
    if (keep == steps)
        return t;
    int64_t before[DLA_MAX_DIMS] = {0}, after[DLA_MAX_DIMS] = {0};
    if (rule->left)
        before[tdim - 1] = steps - keep;
    else
        after[tdim - 1] = steps - keep;
    return dla_pad(t, tdim, before, after, padding_value);
}

/* A padding value the padded dtype holds as it is: fill stores 0.5 as 0
 * in int32 and -1 as 0 in uint8, a value other than the one asked for,
 * which the mask would not tell apart from data (the padded steps of
 * int32 token numbers are real token 0). */
static dla_status padding_fits(double v, dla_dtype dt, const dla_datastore *ds, int j,
                               const char *op)
{
    const double lo = dt == DLA_I32 ? -2147483648.0 : 0;
    const double hi = dt == DLA_I32 ? 2147483647.0 : dt == DLA_U8 ? 255 : 1;
    if (dt == DLA_F32 || dt == DLA_F64 || (v == floor(v) && v >= lo && v <= hi))
        return DLA_OK;
    return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                          "%s: output %d of the %s: sequences of %s are padded with %g, which %s "
                          "does not hold; give a padding value it holds, or cast the output "
                          "(casts, OutputCast) to one that does",
                          op, j + 1, ds->kind->name, dla_dtype_name(dt), v, dla_dtype_name(dt));
}

/* Output j's observations obs[k * nout + j] joined into *out (held); of a
 * sequence output, padded by how's rule, with its mask when asked. */
static dla_status join_one(const dla_datastore *ds, int j, int64_t n, dla_tensor **obs,
                           const int64_t *nums, const dla__ds_how *how, dla_tensor **out,
                           const char *op)
{
    const int nout = ds->nout;
    const dla_tensor *t0 = obs[j];
    const int dim = join_dim(ds, j, how, t0);
    const int tdim = how && how->rule ? how->tdim[j] : 0;
    char b0[DLA__DATA_DIMS_BUF], b1[DLA__DATA_DIMS_BUF];
    int64_t d0[DLA_MAX_DIMS], dk[DLA_MAX_DIMS];
    const int nd0 = dims_of(t0, d0);
    if (dim > DLA_MAX_DIMS)
        return dla__data_fail(DLA_ERR_SHAPE,
                              "%s: output %d of the %s: observations of %s (%d dims) would be "
                              "joined along dim %d; at most %d dims",
                              op, j + 1, ds->kind->name, dla__data_dims_str(b0, nd0, d0), nd0, dim,
                              DLA_MAX_DIMS);
    if (d0[dim - 1] != 1)
        return dla__data_fail(DLA_ERR_SHAPE,
                              "%s: output %d of observation %lld of the %s is %s: %lld along dim "
                              "%d, which observations are joined along; an observation is 1 there",
                              op, j + 1, (long long)(nums ? nums[0] : 0), ds->kind->name,
                              dla__data_dims_str(b0, nd0, d0), (long long)d0[dim - 1], dim);
    const char *fmt0 = dla_tensor_format(t0);
    for (int64_t k = 1; k < n; k++) {
        const dla_tensor *t = obs[k * nout + j];
        const int ndk = dims_of(t, dk);
        /* Sequences may differ in their number of steps alone. */
        int same = 1;
        for (int d = 0; d < DLA_MAX_DIMS; d++)
            same &= d == tdim - 1 || dk[d] == d0[d];
        if (!same || dla_tensor_dtype(t) != dla_tensor_dtype(t0) ||
            strcmp(dla_tensor_format(t), fmt0) != 0)
            return dla__data_fail(
                DLA_ERR_SHAPE,
                "%s: output %d of observation %lld of the %s is %s %s \"%s\", but observation "
                "%lld's is %s %s \"%s\"; every observation of an output has one shape%s, dtype and "
                "format",
                op, j + 1, (long long)(nums ? nums[k] : k), ds->kind->name,
                dla__data_dims_str(b1, ndk, dk), dla_dtype_name(dla_tensor_dtype(t)),
                dla_tensor_format(t), (long long)(nums ? nums[0] : 0), dla__data_dims_str(b0, nd0, d0),
                dla_dtype_name(dla_tensor_dtype(t0)), fmt0,
                tdim ? " but for its time steps" : "");
    }
    /* Cut to the shortest, no sequence is padded: any value will do. */
    const double padding_value = !tdim              ? 0
                                 : how->nan_pad[j] ? NAN
                                                   : how->rule->padding_value;
    if (tdim && how->rule->mode != DLA__SEQ_SHORTEST) {
        const dla_dtype pt = how->pad_as[j] ? (dla_dtype)(how->pad_as[j] - 1) : dla_tensor_dtype(t0);
        dla_status st = padding_fits(padding_value, pt, ds, j, op);
        if (st != DLA_OK)
            return st;
    }
    const int64_t lo = how && how->hi ? how->lo : 0, hi = how && how->hi ? how->hi : n;
    const int64_t steps = tdim ? batch_steps(ds, j, n, obs, tdim, how->rule) : 0;
    /* Joined unformatted: a format without B has no label for the new
     * dim; one with B gets its labels back when the dim is B's. */
    const int keep_format = fmt0[0] && dla_tensor_find_dim(t0, 'B') == dim;
    char fmt[DLA_MAX_DIMS + 1];
    snprintf(fmt, sizeof fmt, "%s", keep_format ? fmt0 : "");
    dla_tensor **parts = dla__data_malloc((size_t)(hi - lo) * sizeof *parts);
    dla_tensor **mask_out = tdim ? how->masks[j] : NULL;
    unsigned char *valid = mask_out ? dla__data_calloc((size_t)((hi - lo) * steps) + 1, 1) : NULL;
    if (!parts || (mask_out && !valid)) {
        dla__data_free(parts);
        dla__data_free(valid);
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    }
    dla_device *dev = dla_device_current();
    dla_scope_begin();
    for (int64_t k = lo; k < hi; k++) {
        dla_tensor *t = obs[k * nout + j];
        if (dla_tensor_device(t) != dev)
            t = dla_tensor_to_device(t, dev);
        int64_t dt[DLA_MAX_DIMS];
        const int ndt = dims_of(t, dt);
        t = fmt0[0] ? dla_reshape(t, "", ndt, dt) : t;
        if (tdim && how->pad_as[j] && dla_tensor_dtype(t) != (dla_dtype)(how->pad_as[j] - 1))
            t = dla_cast(t, (dla_dtype)(how->pad_as[j] - 1));
        if (tdim) {
            int64_t kept;
            t = fit_steps(t, tdim, steps, how->rule, padding_value, &kept);
            /* The valid steps, laid out as the batch: 1 x b x T. */
            const int64_t first = how->rule->left ? steps - kept : 0, b = hi - lo;
            for (int64_t s = 0; valid && s < kept; s++)
                valid[(k - lo) + b * (first + s)] = 1;
        }
        parts[k - lo] = t;
    }
    dla_tensor *r = hi - lo == 1 ? parts[0] : dla_cat(dim, (int)(hi - lo), parts);
    if (keep_format && dla_tensor_status(r) == DLA_OK) {
        int64_t dr[DLA_MAX_DIMS];
        int ndr = dla_tensor_dims(r, dr);
        r = dla_reshape(r, fmt, ndr, dr);
    }
    dla_tensor *m = NULL;
    if (valid && dla_tensor_status(r) == DLA_OK)
        m = dla__data_from_host(dev, valid, DLA_BOOL, "CBT", DLA_DIMS(1, hi - lo, steps));
    dla_tensor *bad = dla_tensor_status(r) != DLA_OK ? r : m && dla_tensor_status(m) != DLA_OK ? m
                                                                                               : NULL;
    dla_status st = bad ? dla_tensor_status(bad) : DLA_OK;
    if (st != DLA_OK) {
        st = dla__data_fail(st, "%s: output %d of the %s: %s", op, j + 1, ds->kind->name,
                            dla_tensor_error(bad));
    } else {
        *out = dla__data_hold(r);
        if (mask_out)
            *mask_out = m; /* data_from_host's tensor is held already */
    }
    if (st != DLA_OK)
        dla_tensor_release(m);
    dla_scope_end();
    dla__data_free(parts);
    dla__data_free(valid);
    return st;
}

/* Each observation's sequence outputs of one number of steps (how's
 * align_steps): the first such output's, which the rest line up with. */
static dla_status aligned(const dla_datastore *ds, int64_t n, dla_tensor **obs,
                          const int64_t *nums, const dla__ds_how *how, const char *op)
{
    int first = -1;
    for (int j = 0; j < ds->nout && first < 0; j++)
        if (how->tdim[j])
            first = j;
    for (int64_t k = 0; first >= 0 && k < n; k++) {
        int64_t d0[DLA_MAX_DIMS], dj[DLA_MAX_DIMS];
        dims_of(obs[k * ds->nout + first], d0);
        for (int j = first + 1; j < ds->nout; j++) {
            if (!how->tdim[j])
                continue;
            dims_of(obs[k * ds->nout + j], dj);
            const int64_t a = d0[how->tdim[first] - 1], b = dj[how->tdim[j] - 1];
            if (a != b)
                return dla__data_fail(DLA_ERR_SHAPE,
                                      "%s: observation %lld of the %s: output %d is a sequence of "
                                      "%lld time steps, output %d of %lld; sequence-to-sequence "
                                      "targets have their predictors' steps",
                                      op, (long long)(nums ? nums[k] : k), ds->kind->name,
                                      first + 1, (long long)a, j + 1, (long long)b);
        }
    }
    return DLA_OK;
}

dla_status dla__ds_join(const dla_datastore *ds, int64_t n, dla_tensor **obs,
                        const int64_t *nums, const dla__ds_how *how, dla_tensor **out,
                        const char *op)
{
    for (int j = 0; j < ds->nout; j++) {
        out[j] = NULL;
        if (how && how->masks[j])
            *how->masks[j] = NULL;
    }
    if (n > INT32_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %lld observations in one read; at "
                              "most 2^31-1", op, (long long)n);
    dla_status st = how && how->align_steps ? aligned(ds, n, obs, nums, how, op) : DLA_OK;
    for (int j = 0; j < ds->nout && st == DLA_OK; j++)
        st = join_one(ds, j, n, obs, nums, how, &out[j], op);
    if (st != DLA_OK) {
        dla__ds_drop(ds->nout, out);
        for (int j = 0; how && j < ds->nout; j++)
            if (how->masks[j])
                dla__ds_drop(1, how->masks[j]);
    }
    return st;
}

dla_status dla__ds_gather(dla_datastore *ds, int64_t n, const int64_t *idx,
                          const dla__ds_how *how, dla_tensor **out, const char *op)
{
    for (int j = 0; j < ds->nout; j++)
        out[j] = NULL;
    /* The kind's own batch when every output is joined along its dim, all
     * of them, none padded. */
    int own = ds->kind->read_batch != NULL && (!how || (!how->rule && !how->hi));
    for (int j = 0; j < ds->nout && own && how; j++)
        own = how->at[j] <= 0 || how->at[j] == ds->obs_dim[j];
    if (own) {
        dla_device *dev = dla_device_current();
        dla_status st = ds->kind->read_batch(ds, n, idx, out, op);
        for (int j = 0; j < ds->nout && st == DLA_OK; j++) {
            if (dla_tensor_device(out[j]) == dev)
                continue;
            dla_scope_begin();
            dla_tensor *moved = dla_tensor_to_device(out[j], dev);
            st = dla_tensor_status(moved);
            if (st != DLA_OK)
                dla__data_fail(st, "%s: %s", op, dla_tensor_error(moved));
            dla_tensor_release(out[j]);
            out[j] = st == DLA_OK ? dla__data_hold(moved) : NULL;
            dla_scope_end();
        }
        if (st != DLA_OK)
            dla__ds_drop(ds->nout, out);
        return st;
    }
    dla_tensor **obs = dla__data_calloc((size_t)(n * ds->nout), sizeof *obs);
    if (!obs)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld observations", op,
                              (long long)n);
    dla_status st = DLA_OK;
    int64_t k = 0;
    for (; k < n && st == DLA_OK; k++)
        st = dla__ds_obs(ds, idx[k], obs + k * ds->nout, op);
    if (st == DLA_OK)
        st = dla__ds_join(ds, n, obs, idx, how, out, op);
    for (int64_t i = 0; i < k * ds->nout; i++)
        dla_tensor_release(obs[i]);
    dla__data_free(obs);
    return st;
}

int dla__ds_format_b_dim(const char *format)
{
    int at = 1;
    for (const char *c = format; *c; c++)
        at += *c == 'S' || *c == 'C';
    return at;
}

/*
 * spmd_state.c - MATLAB's aggregateState for batch normalization, with
 * the variance combined by the parallel-variance formula.
 *
 * Why not gplus(share * state) as the seed page does: the running mean is
 * linear in the batch mean, so its share-weighted sum is right; the
 * running variance is not. The variance of the whole batch is the
 * share-weighted mean of the workers' variances plus the share-weighted
 * mean of their means' squared distances to the whole mean; the plain
 * weighted average leaves out the second term (measured: off by 0.031 with
 * 2 workers, 0.061 with 4).
 *
 * A worker's forward gives only the updated running values,
 *   m_w = d * mu_w + (1 - d) * m_old
 *   v_w = dv * u(N_w) * s2_w + (1 - dv) * v_old,   u(N) = N / (N - 1) (1 for N = 1)
 * with N_w the elements per channel (observations times the other dims) and
 * s2_w the biased variance. Everything is recovered from them and the old
 * values the network still holds, in double:
 *   M  = sum_w share_w * m_w                                   (exact)
 *   V  = (1 - dv) * v_old
 *        + u(N) * sum_w share_w * [ (v_w - (1 - dv) * v_old) / u(N_w)
 *                                   + dv / d^2 * (m_w - M)^2 ]
 * since m_w - M = d * (mu_w - mu). Two allreduces of a few doubles per
 * channel, whatever the number of layers.
 *
 * N_w is count times the elements per channel of one observation at the
 * layer: its output's dims other than C and B as initialized, but T, the
 * sequence length, as this batch has it (the _seq form is told it; the
 * initialized T is the network's minimum length, 1 by default, which made
 * u(N_w) 4/3 for 4 sequences of 7 steps instead of 28/27). N is the sum of
 * the workers' N_w, reduced with M.
 *
 * Other state (a custom layer's) is MATLAB's gplus(share * state) where
 * every worker's row has the dims the network gave it; a row of other dims
 * on some worker stays each worker's own. The states of LSTM, BiLSTM and
 * GRU layers (a column per observation of the worker's own batch) stay
 * each worker's own whatever their dims: a worker of one observation has
 * an H x 1 state, the dims of the network's own row, and every worker got
 * the average of all the workers' states (a custom loop carrying the
 * state on to the next chunk of its sequences started from it). Whether a
 * row is combined is agreed with M.
 */
#include <dlaccel.h>

#include "nn/nn.h"
#include "nn/spmd_impl.h"

#include <stdio.h>
#include <string.h>

typedef struct bn_rows {
    int mean, var;    /* State rows */
    int64_t channels; /* elements of each row */
    int64_t space;    /* elements per channel of one observation, T aside */
    int64_t t0;       /* its T as initialized; 0: the output has no T dim */
    double d, dv;     /* MeanDecay, VarianceDecay */
    int64_t at;       /* offset in the packed buffers */
} bn_rows;

static double unbias(double n)
{
    return n > 1 ? n / (n - 1) : 1.0;
}

static dla_status read_f64(dla_tensor *t, double *dst, int64_t n)
{
    dla_scope_begin();
    dla_status st = dla_tensor_to_host(dla_cast(t, DLA_F64), dst, sizeof *dst * (size_t)n);
    dla_scope_end();
    return st;
}

static dla_status allreduce_host(double *v, int64_t n)
{
    dla_scope_begin();
    dla_tensor *t = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(n));
    /* An error tensor (no memory for it) still takes part, refused, so
     * that the others fail here with this rank instead of waiting for it. */
    dla_status st = dla_allreduce(1, &t, DLA_REDUCE_SUM);
    if (st == DLA_OK)
        st = dla_tensor_to_host(t, v, sizeof *v * (size_t)n);
    dla_scope_end();
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_spmd_combine_state: %s", msg);
    }
    return st;
}

/* A tensor like the State row `like` (dims, format, dtype, device) holding
 * the doubles v, handed to the caller as op results are. */
static dla_tensor *row_like(dla_tensor *like, const double *v)
{
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(like, dims);
    dla_scope_begin();
    dla_tensor *t = dla_tensor_from_host(v, DLA_F64, dla_tensor_format(like), nd, dims);
    if (dla_tensor_dtype(like) != DLA_F64)
        t = dla_cast(t, dla_tensor_dtype(like));
    if (dla_tensor_device(t) != dla_tensor_device(like))
        t = dla_tensor_to_device(t, dla_tensor_device(like));
    dla_keep(t);
    dla_scope_end();
    return t;
}

/* The batch normalization layers' rows; returns how many (at most cap),
 * or -1 when net's State does not have n rows. */
static int find_bn(const dla_net *net, bn_rows *bn, int cap, int64_t *total)
{
    int k = 0;
    *total = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        if (l->kind != &dla__kind_batchnorm || l->nparams < 4)
            continue;
        int mean = l->param[2].row, var = l->param[3].row;
        int64_t channels = dla_tensor_numel(net->tables[DLA__STATE].values[mean]);
        if (k < cap) {
            bn_rows *b = &bn[k];
            b->mean = mean;
            b->var = var;
            b->channels = channels;
            b->space = 1;
            b->t0 = 0;
            for (int j = 0; j < l->out.ndims; j++) {
                const char f = l->out.format[j];
                if (f == 'T')
                    b->t0 = l->out.dims[j];
                else if (f != 'C' && f != 'B')
                    b->space *= l->out.dims[j];
            }
            b->d = l->props.decay[0];
            b->dv = l->props.decay[1];
            b->at = *total;
        }
        *total += channels;
        k++;
    }
    return k;
}

/* 1 when State row `row` is a recurrent layer's hidden or cell state. */
static int recurrent_row(const dla_net *net, int row)
{
    for (int i = 0; i < net->nlayers; i++) {
        const dla_layer *l = net->layers[i];
        if (!dla__kind_is_recurrent(l->kind))
            continue;
        for (int k = 0; k < l->nparams; k++)
            if (l->param[k].kind == DLA__STATE && l->param[k].row == row)
                return 1;
    }
    return 0;
}

/* A row this worker can combine with the others': its dims and dtype (a
 * float) are those of the network's own row. */
static int combinable(const dla_tensor *row, const dla_tensor *mine)
{
    int64_t a[DLA_MAX_DIMS], b[DLA_MAX_DIMS];
    const int na = dla_tensor_dims(row, a), nb = dla_tensor_dims(mine, b);
    const dla_dtype t = dla_tensor_dtype(mine);
    return dla_tensor_status(mine) == DLA_OK && na == nb && !memcmp(a, b, sizeof *a * (size_t)na) &&
           t == dla_tensor_dtype(row) && (t == DLA_F32 || t == DLA_F64);
}

/* dla_spmd_combine of the rows x[0..n-1] without their labels, each
 * result given back the labels of lab[j] (x[j]'s dims). A row is the same
 * row on every rank by its place in the State table, and its values are
 * summed whatever it is labelled: a worker without observations passes
 * the network's own row (unformatted as initialize declared it) where the
 * others pass what their forward made (a custom layer's mean over the
 * batch of "CB" data is "CB"), and dla_spmd_combine, which compares the
 * formats it packs, failed every rank on the difference. */
static dla_status combine_rows(int n, dla_tensor *const *x, dla_tensor *const *lab, double share,
                               dla_tensor **res)
{
    dla_tensor **flat = dla_malloc(sizeof *flat * (size_t)n);
    if (!flat)
        return dla__spmd_take_part_failed(
            dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_combine_state: out of memory"), -1);
    dla_scope_begin();
    for (int j = 0; j < n; j++) {
        int64_t dims[DLA_MAX_DIMS];
        const int nd = dla_tensor_dims(x[j], dims);
        flat[j] = dla_reshape(x[j], "", nd, dims);
    }
    dla_status st = dla_spmd_combine(n, flat, share, res);
    for (int j = 0; j < n; j++) {
        int64_t dims[DLA_MAX_DIMS];
        const int nd = dla_tensor_dims(x[j], dims);
        if (st == DLA_OK) {
            res[j] = dla_reshape(res[j], dla_tensor_format(lab[j]), nd, dims);
            st = dla_tensor_status(res[j]);
        }
    }
    for (int j = 0; st == DLA_OK && j < n; j++)
        dla_keep(res[j]);
    dla_scope_end();
    dla_free(flat);
    return st;
}

DLA_API dla_status dla_spmd_combine_state(dla_net *net, int n, dla_tensor *const *state,
                                          int64_t count, int64_t global, dla_tensor **out)
{
    return dla_spmd_combine_state_seq(net, n, state, count, global, 0, out);
}

/* The combination; *met: this rank took part in the first reduction (M),
 * which every rank makes (nred is at least 1). */
static dla_status combine_state(dla_net *net, int n, dla_tensor *const *state, int64_t count,
                                int64_t global, int64_t seq_len, dla_tensor **out, int *met)
{
    *met = 0;
    if (!net || !dla_net_initialized(net))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine_state: argument net is %s",
                             net ? "not initialized" : "NULL");
    if (seq_len < 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine_state_seq: seq_len %lld is negative",
                             (long long)seq_len);
    int ns = dla_net_state_count(net);
    if (n != ns || (n > 0 && (!state || !out)))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine_state: n is %d; the network has %d State rows%s", n,
                             ns, n > 0 && (!state || !out) ? " (and state or out is NULL)" : "");
    if (global < 1 || count < 0 || count > global)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine_state: count %lld of a global mini-batch of %lld: "
                             "need 0 <= count <= global and global >= 1",
                             (long long)count, (long long)global);
    dla_table *old = dla_net_state(net);
    int64_t total;
    int nbn = find_bn(net, NULL, 0, &total);
    bn_rows *bn = dla_malloc(sizeof *bn * (size_t)(nbn ? nbn : 1));
    /* M, then what its reduction also carries (the sum of count * T, the
     * sum of the counts, the sums of global's three 14-bit parts and of
     * their squares, a flag per row), S, then per channel the old mean and
     * variance and this worker's new ones. */
    const int64_t nred = total + 8 + n;
    double *buf = dla_malloc(sizeof *buf * (size_t)(nred + 5 * total));
    dla_tensor **in = dla_malloc(sizeof *in * (size_t)(n ? n : 1) * 4);
    int *joint = dla_malloc(sizeof *joint * (size_t)(n ? n : 1) * 2);
    dla_status st = bn && buf && in && joint
                        ? DLA_OK
                        : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_combine_state: out of memory");
    if (st == DLA_OK) {
        find_bn(net, bn, nbn, &total);
        memcpy(in, state, sizeof *in * (size_t)n);
    }
    /* The statistics this worker made must fit their rows. */
    for (int k = 0; st == DLA_OK && count && k < nbn; k++)
        if ((st = dla__table_check("dla_spmd_combine_state", old, bn[k].mean, in[bn[k].mean])) ==
            DLA_OK)
            st = dla__table_check("dla_spmd_combine_state", old, bn[k].var, in[bn[k].var]);
    double *M = buf, *ct = buf + total, *cn = ct + 1, *gs = cn + 1, *flag = gs + 6,
           *S = buf + nred, *om = S + total,
           *ov = om + total, *nm = ov + total, *nv = nm + total;
    double share = (double)count / (double)global;
    for (int k = 0; st == DLA_OK && k < nbn; k++) {
        const bn_rows *b = &bn[k];
        int64_t c = b->channels, a = b->at;
        if ((st = read_f64(old->values[b->mean], om + a, c)) == DLA_OK &&
            (st = read_f64(old->values[b->var], ov + a, c)) == DLA_OK && count) {
            if ((st = read_f64(in[b->mean], nm + a, c)) == DLA_OK)
                st = read_f64(in[b->var], nv + a, c);
        }
        for (int64_t j = 0; st == DLA_OK && j < c; j++)
            M[a + j] = count ? share * nm[a + j] : 0.0;
    }
    /* Not after a failure: a refused block is NULL here (the count and
     * the flags were written through it). */
    if (st == DLA_OK) {
        *ct = (double)count * (double)seq_len;
        *cn = (double)count;
        for (int h = 0; h < 3; h++) {
            const double part = (double)((global >> (14 * h)) & 0x3fff);
            gs[2 * h] = part;
            gs[2 * h + 1] = part * part;
        }
    }
    for (int i = 0; st == DLA_OK && i < n; i++) {
        int is_bn = 0;
        for (int k = 0; k < nbn; k++)
            is_bn |= bn[k].mean == i || bn[k].var == i;
        /* A worker without observations passes rows of the network's dims. */
        flag[i] = !is_bn && !recurrent_row(net, i) &&
                  (!count || combinable(old->values[i], in[i]));
        joint[i] = -is_bn; /* -1: batch normalization's */
    }
    if (st == DLA_OK) {
        *met = 1;
        st = allreduce_host(M, nred);
    }
    /* The shares must make the whole batch: counts that add up to less
     * (each worker passing its nominal share of a smaller last batch)
     * weighted the means by shares summing to less than one, and every
     * running mean came out shrunk toward 0, DLA_OK. The verdict comes
     * from the sums alone, the same on every rank, so every rank fails
     * here together. A value is the same on every rank when size times
     * the sum of its squares is the square of its sum; for parts of 14
     * bits both sides are exact in double up to 5000 ranks (global's bits
     * past 42 are not compared: no batch is that large). */
    const int size = dla_spmd_size();
    int differ = 0;
    for (int h = 0; st == DLA_OK && h < 3; h++)
        differ |= (double)size * gs[2 * h + 1] != gs[2 * h] * gs[2 * h];
    if (st == DLA_OK && differ)
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                           "dla_spmd_combine_state: the workers passed different global "
                           "mini-batches (this rank %lld; every rank passes the batch's size)",
                           (long long)global);
    else if (st == DLA_OK && *cn != (double)global)
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                           "dla_spmd_combine_state: the workers' counts add up to %.0f, not the "
                           "global mini-batch of %lld (count is each worker's observations of "
                           "this batch, global the batch's: their sum)",
                           *cn, (long long)global);
    /* N of a layer with a T dim: its space times the sum of count * T. */
    for (int k = 0; st == DLA_OK && k < nbn; k++) {
        const bn_rows *b = &bn[k];
        const int64_t tw = b->t0 && seq_len ? seq_len : b->t0 ? b->t0 : 1;
        double uw = unbias((double)count * (double)(b->space * tw));
        for (int64_t j = b->at; j < b->at + b->channels; j++) {
            double dm = nm[j] - M[j];
            S[j] = count ? share * ((nv[j] - (1 - b->dv) * ov[j]) / uw + b->dv / (b->d * b->d) * dm * dm)
                         : 0.0;
        }
    }
    if (st == DLA_OK && total)
        st = allreduce_host(S, total);
    /* Rows each worker keeps first (out may be state), then the others'
     * share-weighted sum, then batch normalization's. */
    int ncomb = 0;
    dla_tensor **cx = in + (n ? n : 1), **cres = cx + (n ? n : 1), **clab = cres + (n ? n : 1);
    int *crow = joint + (n ? n : 1);
    for (int i = 0; st == DLA_OK && i < n; i++) {
        if (joint[i] < 0)
            continue;
        if (flag[i] == (double)size) {
            cx[ncomb] = count ? in[i] : old->values[i];
            /* The labels of the state passed, where it has the row's dims
             * (a trainnet worker whose share of the batch is empty runs its
             * forward on the batch's first observation, weighing 0, and
             * passes that state, labelled as the others'), else the row's. */
            clab[ncomb] = count || (in[i] && combinable(old->values[i], in[i])) ? in[i]
                                                                                 : old->values[i];
            crow[ncomb++] = i;
        } else {
            out[i] = dla__nn_return(dla_tensor_retain(count ? in[i] : old->values[i]));
        }
    }
    if (st == DLA_OK && ncomb)
        st = combine_rows(ncomb, cx, clab, share, cres);
    for (int j = 0; st == DLA_OK && j < ncomb; j++)
        out[crow[j]] = cres[j];
    for (int k = 0; st == DLA_OK && k < nbn; k++) {
        const bn_rows *b = &bn[k];
        const double n_all = b->t0 && seq_len ? (double)b->space * *ct
                                              : (double)global * (double)(b->space * (b->t0 ? b->t0 : 1));
        double u = unbias(n_all);
        for (int64_t j = b->at; j < b->at + b->channels; j++)
            S[j] = (1 - b->dv) * ov[j] + u * S[j];
        out[b->mean] = row_like(old->values[b->mean], M + b->at);
        out[b->var] = row_like(old->values[b->var], S + b->at);
        st = dla_tensor_status(out[b->mean]) != DLA_OK ? dla_tensor_status(out[b->mean])
                                                       : dla_tensor_status(out[b->var]);
    }
    dla_free(bn);
    dla_free(buf);
    dla_free(in);
    dla_free(joint);
    return st;
}

DLA_API dla_status dla_spmd_combine_state_seq(dla_net *net, int n, dla_tensor *const *state,
                                              int64_t count, int64_t global, int64_t seq_len,
                                              dla_tensor **out)
{
    int met;
    dla_status st = combine_state(net, n, state, count, global, seq_len, out, &met);
    /* A rank that refused its own arguments (a count past the global
     * batch, statistics that do not fit their rows) or failed reading them
     * returned before the first reduction, and the others waited in it
     * for the collective timeout: it takes part now, with its reason, and
     * every rank fails there. After that reduction nothing fails alone
     * before the next collective (dla_spmd_combine takes care of its own). */
    return st != DLA_OK && !met ? dla__spmd_take_part_failed(st, -1) : st;
}

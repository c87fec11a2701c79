/*
 * train_population.c - trainnet's BatchNormalizationStatistics
 * "population": after training, each batch normalization layer's
 * TrainedMean and TrainedVariance become the statistics of its input over
 * the whole training data. The moving estimates updated during training
 * weigh the last iterations most, but each of those saw other weights: a
 * network whose weights still moved fast at the end predicts with
 * statistics of activations it no longer makes (examples/volumes: 100% of
 * the training mini-batches right, one class for every test volume).
 *
 * The pass runs the network in training mode, as training does (each
 * layer sees inputs normalized by its batch's statistics), asking forward
 * for the inputs of the batch normalization layers. Each batch gives, per
 * channel, its count, mean and sum of squared deviations from it (M2),
 * merged into the running ones in double (Chan et al.): a sum of squares
 * less the squared mean would lose every digit of a small spread on a
 * large offset. With "parallel", every worker's figures are gathered and
 * merged in rank order, so every rank sets the same statistics. The
 * variance is the unbiased one, M2 / (n - 1), as the moving estimate's.
 */
#include "nn/nn.h"
#include "nn/data_mbq.h"
#include "nn/train_impl.h"

#include <dlaccel/data.h>
#include <dlaccel/parallel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One layer's running figures: count, then c means, then c M2s. */
static void merge(double *run, int64_t c, double n, const double *mean, const double *m2)
{
    const double total = run[0] + n;
    if (n <= 0)
        return;
    for (int64_t j = 0; j < c; j++) {
        const double delta = mean[j] - run[1 + j];
        run[1 + j] += delta * n / total;
        run[1 + c + j] += m2[j] + delta * delta * run[0] * n / total;
    }
    run[0] = total;
}

/* z's count per channel, mean and M2 per channel (host, c each). */
static dla_status batch_figures(dla_tensor *z, int64_t c, double *n, double *mean, double *m2)
{
    const int cd = dla_tensor_find_dim(z, 'C');
    int64_t red[DLA_MAX_DIMS];
    int nr = 0;
    for (int d = 1; d <= dla_tensor_ndims(z); d++)
        if (d != cd)
            red[nr++] = d;
    if (cd < 1 || dla_tensor_dim(z, cd) != c)
        return dla_set_error(DLA_ERR_STATE, "its input has no \"C\" dim of %lld channels",
                             (long long)c);
    *n = (double)(dla_tensor_numel(z) / c);
    if (*n <= 0)
        return DLA_OK;
    dla_tensor *zd = dla_cast(z, DLA_F64);
    dla_tensor *mu = dla_mean(zd, nr, red);
    dla_tensor *sq = dla_sum(dla_square(dla_sub(zd, mu)), nr, red);
    dla_status st = dla_tensor_to_host(mu, mean, sizeof *mean * (size_t)c);
    if (st == DLA_OK)
        st = dla_tensor_to_host(sq, m2, sizeof *m2 * (size_t)c);
    return st;
}

/* The statistics into the network's state rows, on the device and in the
 * dtype of the values they replace. */
static dla_status set_statistics(dla_net *net, int nbn, const dla__bn_rows *bn,
                                 const int64_t *offset, double *run)
{
    const int ns = dla_net_state_count(net);
    dla_tensor *const *values = dla_table_values(dla_net_state(net));
    dla_tensor **next = dla_malloc(sizeof *next * (size_t)(ns ? ns : 1));
    if (!next)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < ns; i++)
        next[i] = values[i];
    dla_status st = DLA_OK;
    for (int k = 0; st == DLA_OK && k < nbn; k++) {
        double *r = run + offset[k];
        const int64_t c = dla_tensor_numel(values[bn[k].mean_row]);
        if (r[0] <= 0)
            continue; /* no data reached it: keep the moving estimates */
        for (int64_t j = 0; j < c; j++)
            r[1 + c + j] = r[0] > 1 ? r[1 + c + j] / (r[0] - 1) : 0;
        const int rows[2] = {bn[k].mean_row, bn[k].var_row};
        for (int q = 0; q < 2 && st == DLA_OK; q++) {
            dla_tensor *old = values[rows[q]];
            int64_t dims[DLA_MAX_DIMS];
            const int nd = dla_tensor_dims(old, dims);
            dla_tensor *h = dla_tensor_from_host(r + 1 + q * c, DLA_F64, "", nd, dims);
            next[rows[q]] = dla_tensor_to_device(dla_cast(h, dla_tensor_dtype(old)),
                                                 dla_tensor_device(old));
            st = dla_tensor_status(next[rows[q]]);
        }
    }
    if (st == DLA_OK)
        st = dla_net_set_state(net, ns, next);
    dla_free(next);
    return st;
}

/* Every rank's running figures (total doubles each), merged in rank order
 * into run. Collective: a rank that failed (st) takes part and makes
 * every rank fail. */
static dla_status merge_ranks(dla_status st, int nbn, const int64_t *offset,
                              const int64_t *channels, double *run, int64_t total)
{
    const int size = dla_spmd_size();
    double *all = dla_malloc(sizeof *all * (size_t)(total + 1) * (size_t)size);
    double *mine = dla_malloc(sizeof *mine * (size_t)(total + 1));
    if (!all || !mine) {
        dla_free(all);
        dla_free(mine);
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
    }
    mine[0] = st != DLA_OK;
    memcpy(mine + 1, run, sizeof *run * (size_t)total);
    dla_tensor *x = dla_tensor_from_host(mine, DLA_F64, "", DLA_DIMS(total + 1)), *y = NULL;
    dla_status cst = dla_tensor_status(x);
    if (cst == DLA_OK)
        cst = dla_allgather(x, &y);
    if (cst == DLA_OK)
        cst = dla_tensor_to_host(y, all, sizeof *all * (size_t)(total + 1) * (size_t)size);
    int failed = 0;
    for (int r = 0; cst == DLA_OK && r < size; r++)
        failed |= all[(total + 1) * r] != 0;
    if (st == DLA_OK && cst == DLA_OK && failed)
        st = dla_set_error(DLA_ERR_STATE, "another worker failed");
    if (st == DLA_OK && cst == DLA_OK) {
        memset(run, 0, sizeof *run * (size_t)total);
        for (int r = 0; r < size; r++)
            for (int k = 0; k < nbn; k++) {
                const double *o = all + (total + 1) * r + 1 + offset[k];
                merge(run + offset[k], channels[k], o[0], o + 1, o + 1 + channels[k]);
            }
    }
    dla_free(all);
    dla_free(mine);
    return st != DLA_OK ? st : cst;
}

dla_status dla__train_population_statistics(dla_net *net, dla_mbq *q, int parallel,
                                            int *computed)
{
    *computed = 0;
    const int nbn = dla__net_batchnorm_rows(net, 0, NULL);
    if (nbn == 0)
        return DLA_OK;
    dla__bn_rows *bn = dla_malloc(sizeof *bn * (size_t)nbn);
    int64_t *offset = dla_malloc(sizeof *offset * (size_t)nbn);
    int64_t *channels = dla_malloc(sizeof *channels * (size_t)nbn);
    const char **names = dla_malloc(sizeof *names * (size_t)nbn);
    int *out_of = dla_malloc(sizeof *out_of * (size_t)nbn); /* -1: the batch itself */
    if (!bn || !offset || !channels || !names || !out_of) {
        dla_free(bn);
        dla_free(offset);
        dla_free(channels);
        dla_free(names);
        dla_free(out_of);
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    }
    dla__net_batchnorm_rows(net, nbn, bn);
    dla_tensor *const *values = dla_table_values(dla_net_state(net));
    int64_t total = 0, widest = 1;
    int nout = 0;
    for (int k = 0; k < nbn; k++) {
        offset[k] = total;
        channels[k] = dla_tensor_numel(values[bn[k].mean_row]);
        widest = channels[k] > widest ? channels[k] : widest;
        total += 1 + 2 * channels[k];
        out_of[k] = -1;
        if (bn[k].source) {
            out_of[k] = nout;
            names[nout++] = bn[k].source;
        }
    }
    /* Through the library's allocator, as every host allocation is
     * (dla_set_allocator): a user's hook saw none of these. */
    double *run = dla_malloc(sizeof *run * (size_t)(total ? total : 1));
    double *mean = dla_malloc(sizeof *mean * (size_t)(widest ? widest : 1));
    double *m2 = dla_malloc(sizeof *m2 * (size_t)(widest ? widest : 1));
    if (run)
        memset(run, 0, sizeof *run * (size_t)(total ? total : 1));
    dla_tensor **z = dla_malloc(sizeof *z * (size_t)(nout ? nout : 1));
    dla_status st = run && mean && m2 && z
                        ? DLA_OK
                        : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
    /* What the merge across ranks and the new statistics make belongs to
     * this scope (the network keeps its own references to the latter). */
    dla_scope_begin();
    /* Every observation: PartialMiniBatch "discard" (trainnet's default)
     * left the last n % MiniBatchSize out (36 of 100 at 64 a batch). */
    const int discard = dla__mbq_set_discard(q, 0);
    while (st == DLA_OK && dla_mbq_hasdata(q)) {
        dla_scope_begin();
        dla_tensor *batch[3]; /* x, (its padding mask,) t: x alone is read */
        st = dla_mbq_next(q, dla_mbq_num_outputs(q), batch);
        /* A worker's placeholder (trainnet "parallel", a batch of fewer
         * observations than workers) holds another worker's observation:
         * not counted, but run, so that its random draws (the whole
         * batch's) move this rank's stream on as the others'. */
        const int placeholder = st == DLA_OK && dla__mbq_last_empty(q);
        /* In parallel, the share's place in the batch: a dropout before a
         * batch normalization drops what one process would. */
        if (parallel) {
            const int b = st == DLA_OK ? dla_tensor_find_dim(batch[0], 'B') : 0;
            dla__batch_share bs = {.mine = b ? dla_tensor_dim(batch[0], b) : 0};
            dla__mbq_last_share(q, &bs.before, &bs.whole);
            dla__batch_share_set(&bs);
        }
        if (st == DLA_OK && nout)
            st = dla_net_forward(net, 1, &batch[0], nout, z, NULL,
                                 &(dla_net_forward_options){.outputs = names});
        dla__batch_share_set(NULL);
        for (int k = 0; k < nbn && st == DLA_OK && !placeholder; k++) {
            double n = 0;
            st = batch_figures(out_of[k] < 0 ? batch[0] : z[out_of[k]], channels[k], &n, mean, m2);
            if (st == DLA_OK)
                merge(run + offset[k], channels[k], n, mean, m2);
        }
        dla_scope_end();
    }
    dla__mbq_set_discard(q, discard);
    if (parallel)
        st = merge_ranks(st, nbn, offset, channels, run, total);
    if (st == DLA_OK) {
        st = set_statistics(net, nbn, bn, offset, run);
        *computed = st == DLA_OK;
    }
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_trainnet: batch normalization statistics (\"population\"): %s",
                      msg);
    }
    dla_scope_end();
    dla_free(run);
    dla_free(mean);
    dla_free(m2);
    dla_free(z);
    dla_free(bn);
    dla_free(offset);
    dla_free(channels);
    dla_free(names);
    dla_free(out_of);
    return st;
}

/*
 * batch_share.c - a worker's place in the whole mini-batch, for the random
 * draws of a layer (trainnet "parallel", docs/parallel.md).
 *
 * A worker runs the network on its share of each mini-batch. A dropout
 * mask drawn for the share alone came from the same place of the stream on
 * every worker (each process starts it alike), so every worker dropped the
 * same units of its first observation, of its second, ...: the shares'
 * masks were copies of one another, where one process draws one per
 * observation of the batch. With the share set, the mask is drawn for the
 * whole batch, as one process draws it, and the worker keeps its
 * observations' rows; the stream moves on by the whole batch's draw on
 * every worker, so the next draw is one process's too.
 */
#include <dlaccel.h>

#include "nn/nn.h"

#include <string.h>

static _Thread_local dla__batch_share current;

void dla__batch_share_set(const dla__batch_share *s)
{
    if (s)
        current = *s;
    else
        memset(&current, 0, sizeof current);
}

const dla__batch_share *dla__batch_share_get(void)
{
    return current.whole > 0 ? &current : NULL;
}

dla_tensor *dla__share_dropout(dla_tensor *x, double prob)
{
    return dla__share_dropout_along(x, prob, dla_tensor_find_dim(x, 'B'));
}

dla_tensor *dla__share_dropout_along(dla_tensor *x, double prob, int b)
{
    const dla__batch_share *s = dla__batch_share_get();
    if (!s || !b || dla_tensor_dim(x, b) != s->mine || s->before + s->mine > s->whole)
        return dla_dropout(x, prob);
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(x, dims);
    for (; nd < b; nd++) /* an unformatted x's trailing dims of 1 */
        dims[nd] = 1;
    dims[b - 1] = s->whole;
    dla_tensor *ones = dla_tensor_to_device(dla_ones(dla_tensor_dtype(x), dla_tensor_format(x), nd,
                                                     dims),
                                            dla_tensor_device(x));
    dla_tensor *mask = dla_slice(dla_dropout(ones, prob), b, s->before, 1, s->before + s->mine);
    return dla_mul(x, mask);
}

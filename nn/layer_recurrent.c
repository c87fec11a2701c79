/*
 * layer_recurrent.c - what lstmLayer and gruLayer share: the input's
 * format and the states' columns checked, the input projection of every
 * time step in one dla_mtimes, and the end of a run (the steps' hidden
 * states joined with dla_cat for OutputMode "sequence", the last for
 * "last", the states kept in training). Both are written in existing
 * differentiable ops, so their gradients are those ops'.
 */
#include "nn/nn.h"

#include <string.h>

dla_status dla__recurrent_begin(const char *type, dla__call *c, int nstates, int64_t rows,
                                dla_tensor *bias, dla__recurrent *r)
{
    dla_tensor *x = c->x[0];
    const char *f = dla_tensor_format(x);
    if (strcmp(f, "CBT") && strcmp(f, "CB")) {
        dla__nn_fail(DLA_ERR_FORMAT, "the input is \"%s\"; %s takes \"CBT\" sequences", f, type);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_FORMAT;
    }
    const int64_t ch = dla_tensor_dim(x, 1);
    /* Said in the layer's terms: the product below would say "inner dims
     * differ: a is 16x3, b is 5x6" of a reshaped input. */
    if (ch != dla_tensor_dim(c->p[0], 2)) {
        int64_t d[DLA_MAX_DIMS];
        char dims[96];
        dla__dims_text(dla_tensor_dims(x, d), d, dims, sizeof dims);
        dla__nn_fail(DLA_ERR_SHAPE, "the input has %lld channels (%s \"%s\"); the %s's "
                     "InputWeights take %lld", (long long)ch, dims, f, type,
                     (long long)dla_tensor_dim(c->p[0], 2));
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    r->nb = dla_tensor_dim(x, 2);
    r->nt = strchr(f, 'T') ? dla_tensor_dim(x, 3) : 1;
    for (int k = 0; k < nstates; k++) {
        dla_tensor *s = c->p[3 + k];
        const int64_t cols = dla_tensor_dim(s, 2);

        if (cols != 1 && cols != r->nb) {
            dla__nn_fail(DLA_ERR_SHAPE, "the %s has %lld columns, the batch %lld observations; "
                         "reset the state (dla_net_reset_state) between unrelated batches",
                         k ? "CellState" : "HiddenState", (long long)cols, (long long)r->nb);
            c->y = dla__nn_error_tensor();
            return DLA_ERR_SHAPE;
        }
    }
    r->rows = rows;
    if (rows == 0) { /* the caller projects each step itself */
        r->wx = NULL;
        r->steps = NULL;
        return DLA_OK;
    }
    /* W x + b for every step at once: rows x (nb * nt), then rows x nb x nt. */
    dla_tensor *wx = dla_mtimes(c->p[0], dla_reshape(x, "", DLA_DIMS(ch, r->nb * r->nt)));
    if (bias)
        wx = dla_add(wx, bias);
    r->wx = dla_reshape(wx, "", DLA_DIMS(rows, r->nb, r->nt));
    r->steps = NULL;
    return DLA_OK;
}

dla_tensor *dla__recurrent_state(const dla__call *c, int k)
{
    /* A state set with labels ("CB" H x N) is its numbers: the step's
     * join with the unlabelled input failed ("dla_cat: argument
     * tensors[1]: format \"CB\" differs from tensors[0]'s \"\""). */
    dla_tensor *s = c->p[3 + k];
    if (!dla_tensor_format(s)[0])
        return s;
    return dla_reshape(s, "", DLA_DIMS(dla_tensor_dim(s, 1), dla_tensor_dim(s, 2)));
}

dla_tensor *dla__recurrent_gate(dla_tensor *z, int k, int64_t h)
{
    return dla_slice(z, 1, k * h, 1, (k + 1) * h);
}

dla_tensor *dla__recurrent_input(const dla__recurrent *r, int64_t t)
{
    return dla_reshape(dla_slice(r->wx, 3, t, 1, t + 1), "", DLA_DIMS(r->rows, r->nb));
}

dla_status dla__recurrent_keep_steps(const char *type, const dla__props *p, dla__call *c,
                                     dla__recurrent *r)
{
    if (strcmp(p->mode, "sequence")) {
        if (r->nt > 0)
            return DLA_OK;
        /* No step, so no last one: the initial state (one column for a
         * batch of many) would pass for an answer. */
        dla__nn_fail(DLA_ERR_SHAPE, "%s: the input has no time steps (%lldx%lldx0 \"CBT\"); "
                     "OutputMode \"last\" needs at least one", type,
                     (long long)dla_tensor_dim(c->x[0], 1), (long long)r->nb);
        c->y = dla__nn_error_tensor();
        return DLA_ERR_SHAPE;
    }
    /* An empty sequence gives the empty sequence (dla__recurrent_end). */
    r->steps = dla__nn_malloc(sizeof *r->steps * (size_t)(r->nt ? r->nt : 1));
    if (r->steps)
        return DLA_OK;
    dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %lld time steps", type, (long long)r->nt);
    c->y = dla__nn_error_tensor();
    return DLA_ERR_OUT_OF_MEMORY;
}

dla_status dla__recurrent_end(const dla__props *p, dla__call *c, dla__recurrent *r,
                              int nstates, dla_tensor *const *states)
{
    const int64_t h = p->count;
    if (r->steps && !r->nt) {
        /* h x nb x 0 of the projection: its dtype and device. */
        dla__nn_free(r->steps);
        r->steps = NULL;
        dla_tensor *none = r->wx ? dla_slice(r->wx, 1, 0, 1, h) : dla_slice(c->p[0], 2, 0, 1, 0);
        c->y = dla_reshape(none, "CBT", DLA_DIMS(h, r->nb, 0));
    } else if (r->steps) {
        dla_tensor *y = dla_cat(3, (int)r->nt, r->steps);
        dla__nn_free(r->steps);
        r->steps = NULL;
        /* "CB" data is one step without a "T" dim, and so is its output
         * (MATLAB's CB in, CB out): an H x N x 1 "CBT" made a network of
         * a feature input, an LSTM and a fully connected layer refuse its
         * "CB" targets ("format CB differs from y's CBT"). */
        if (strchr(dla_tensor_format(c->x[0]), 'T'))
            c->y = dla_reshape(y, "CBT", DLA_DIMS(h, r->nb, r->nt));
        else
            c->y = dla_reshape(y, "CB", DLA_DIMS(h, r->nb));
    } else {
        c->y = dla_reshape(states[0], "CB", DLA_DIMS(h, r->nb));
    }
    /* In inference too: dla_net_predict_state gives the state after the
     * last step (the other calls do not ask for it). */
    for (int k = 0; k < nstates; k++) {
        dla_tensor *s = states[k];
        /* With no step, a state of one column (the initial one) comes
         * through untouched: H x B for every observation, as after a step
         * (the LSTM's cell state and the GRU's state stayed H x 1 beside
         * the LSTM's H x B hidden state). */
        if (dla_tensor_dim(s, 2) != r->nb)
            s = dla_add(s, dla_tensor_to_device(dla_zeros(dla_tensor_dtype(s), "",
                                                          DLA_DIMS(dla_tensor_dim(s, 1), r->nb)),
                                                dla_tensor_device(s)));
        c->new_state[k] = s;
    }
    return dla_tensor_status(c->y);
}

dla_tensor *dla__recurrent_initial_state(const dla__props *p, int k, dla_tensor *current)
{
    (void)k, (void)p;
    /* On the state's own device: made on the current one, a network moved
     * with dla_net_to_device got a state its weights could not multiply
     * after dla_net_reset_state. */
    dla_device *prev = dla__nn_device_use(dla_tensor_device(current));
    /* Its rows: H, or 2H for a bilstm's two directions. */
    dla_tensor *z = dla_zeros(dla_tensor_dtype(current), "", DLA_DIMS(dla_tensor_dim(current, 1), 1));
    dla__nn_device_restore(prev);
    return z;
}

int dla__kind_is_recurrent(const dla__layer_kind *kind)
{
    return kind->initial_state == dla__recurrent_initial_state;
}

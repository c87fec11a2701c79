/*
 * layer_state_ports.c - MATLAB's HasStateInputs and HasStateOutputs of
 * lstmLayer, bilstmLayer and gruLayer: the initial states as input ports
 * ("in", "hidden", "cell") and the final ones as output ports ("out",
 * "hidden", "cell"). The layer's own run is unchanged: the state inputs
 * are put where its state parameters would be, and the states it ends
 * with (the new state it gives a network) are the extra outputs, so the
 * state ports' gradients come from the same differentiable ops.
 */
#include "nn/nn.h"

#include <stdio.h>
#include <string.h>

const char *const dla__state_in_names[DLA__MAX_OUTPUTS] = {"in", "hidden", "cell"};
const char *const dla__state_out_names[DLA__MAX_OUTPUTS] = {"out", "hidden", "cell"};

int dla__kind_outputs(const dla__layer_kind *kind, const dla__props *p)
{
    return kind->state_ports && p->state_io[1] ? 1 + kind->state_ports : 1;
}

dla_status dla__state_io_check(const char *type, const dla__props *p, const char *name)
{
    static const char *const key[2] = {"HasStateInputs", "HasStateOutputs"};
    for (int k = 0; k < 2; k++)
        if (p->state_io[k] != 0 && p->state_io[k] != 1)
            return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': %s is %lld; it is 0 or 1",
                                type, name, key[k], (long long)p->state_io[k]);
    return DLA_OK;
}

dla_status dla__state_io_init(const dla_layer *l, const dla__shape *in, int64_t rows)
{
    for (int k = 1; l->props.state_io[0] && k < l->nin; k++) {
        const dla__shape *s = &in[k];
        if (!strcmp(s->format, "CB") && dla__shape_dim(s, 'C') == rows)
            continue;
        char got[160];
        dla__shape_str(s, got, sizeof got);
        return dla__nn_fail(DLA_ERR_SHAPE, "input \"%s\" is %s \"%s\"; it takes the %s state as "
                            "\"CB\" %lld x observations (%s)", dla__state_in_names[k], got,
                            s->format, dla__state_in_names[k], (long long)rows,
                            l->kind->state_ports == 2 && rows != l->props.count
                                ? "2 x NumHiddenUnits, the forward direction's then the "
                                  "backward one's"
                                : "NumHiddenUnits");
    }
    return DLA_OK;
}

/* State input k (c->x[k]) as the unlabelled rows x cols matrix the run
 * takes; NULL with the error set when it does not fit. */
static dla_tensor *state_input(const char *type, const dla__call *c, int k, int64_t rows,
                               int64_t nb)
{
    dla_tensor *s = c->x[k];
    const char *f = dla_tensor_format(s);
    const int64_t ch = dla_tensor_dim(s, 1), cols = dla_tensor_dim(s, 2);
    if (strcmp(f, "CB") || ch != rows || (cols != 1 && cols != nb) ||
        dla_tensor_ndims(s) > 2) {
        int64_t d[DLA_MAX_DIMS];
        char dims[96];
        dla__dims_text(dla_tensor_dims(s, d), d, dims, sizeof dims);
        dla__nn_fail(DLA_ERR_SHAPE, "%s: input \"%s\" is %s \"%s\"; it takes %lldx%lld \"CB\" "
                     "(the %s state of each of the input's %lld observations; or %lldx1 for "
                     "all)", type, dla__state_in_names[k], dims, f, (long long)rows,
                     (long long)nb, dla__state_in_names[k], (long long)nb, (long long)rows);
        return NULL;
    }
    if (dla_tensor_dtype(s) != dla_tensor_dtype(c->p[0])) {
        dla__nn_fail(DLA_ERR_DTYPE, "%s: input \"%s\" is %s, the layer's weights %s", type,
                     dla__state_in_names[k], dla_dtype_name(dla_tensor_dtype(s)),
                     dla_dtype_name(dla_tensor_dtype(c->p[0])));
        return NULL;
    }
    return dla_reshape(s, "", DLA_DIMS(rows, cols));
}

dla_status dla__state_io_forward(const char *type, int64_t rows, const dla__props *p, dla__call *c,
                                 dla_status (*forward)(const dla__props *p, dla__call *c))
{
    if (!p->state_io[0] && !p->state_io[1])
        return forward(p, c);
    const int nstates = c->layer ? c->layer->kind->state_ports : 0;
    dla__call run = *c;
    dla_tensor *params[3 + 2] = {NULL};
    if (p->state_io[0]) {
        /* The batch as the run reads it: "CB" data is one step. */
        const char *f = dla_tensor_format(c->x[0]);
        const int64_t nb = strcmp(f, "CBT") && strcmp(f, "CB") ? 0 : dla_tensor_dim(c->x[0], 2);
        for (int k = 0; k < 3; k++)
            params[k] = c->p[k];
        for (int k = 0; k < nstates && nb; k++)
            if (!(params[3 + k] = state_input(type, c, 1 + k, rows, nb))) {
                c->y = dla__nn_error_tensor();
                return dla_last_status();
            }
        run.p = params;
        run.nx = 1;
    }
    dla_status st = forward(p, &run);
    c->y = run.y;
    /* The network's state rows are the layer's only without state inputs
     * (a stateless layer has none). */
    for (int k = 0; k < nstates && !p->state_io[0]; k++)
        c->new_state[k] = run.new_state[k];
    if (st != DLA_OK || !p->state_io[1])
        return st;
    for (int k = 0; k < nstates; k++) {
        dla_tensor *s = run.new_state[k];
        c->y_more[k] = dla_reshape(s, "CB", DLA_DIMS(dla_tensor_dim(s, 1), dla_tensor_dim(s, 2)));
        if (dla_tensor_status(c->y_more[k]) != DLA_OK) {
            c->y = c->y_more[k];
            return dla_tensor_status(c->y);
        }
    }
    return st;
}

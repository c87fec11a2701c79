/*
 * net_accel.c - a network as the structured ctx of an accelerated function
 * (dla_accel_kind, accel.h): MATLAB's dlfeval(accfun, net, X, T), where the
 * network's learnables and state are traced inputs and its architecture is
 * part of the cache key.
 *
 * The tensors are every parameter in run_net's order (learnables, state,
 * fixed: the input layers' statistics), so a trace sees exactly the
 * handles dla_net_forward and dla_net_gradient read; the key is the
 * architecture text dla_net_key writes (layers, options, connections,
 * parameter dims and dtypes), never a value.
 */
#include "nn/nn.h"

static int net_tensors(void *value, int cap, dla_tensor **tensors)
{
    dla_net *net = value;
    if (!net || !net->initialized) {
        dla__nn_fail(!net ? DLA_ERR_INVALID_ARGUMENT : DLA_ERR_STATE, "%s",
                     !net ? "the network is NULL"
                          : "the network is not initialized (dla_net_init)");
        return -1;
    }
    int n = 0;
    for (int k = 0; k < DLA__PARAM_KIND_COUNT; k++)
        for (int r = 0; r < net->tables[k].count; r++, n++)
            if (n < cap)
                tensors[n] = net->tables[k].values[r];
    return n;
}

static const dla_accel_kind net_kind = {.name = "dla_net", .tensors = net_tensors, .key = dla_net_key};

DLA_API const dla_accel_kind *dla_net_accel_kind(void) { return &net_kind; }
